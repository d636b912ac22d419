//! The services shared by all passes of one run, and the options some passes read.

use std::sync::Arc;

use crate::clocks::Clocks;
use crate::ctx::CtxTree;
use crate::env::Env;
use crate::report::Reporter;

/// Services shared by all passes of one run.
pub struct Shared {
    pub env: Arc<dyn Env>,
    pub reporter: Reporter,
    pub ctxs: CtxTree,
    pub clocks: Clocks,
    pub options: ChainOptions,
}

impl Shared {
    /// Fresh services (no warnings, no contexts, no clocks) over `env`.
    pub fn new(env: Arc<dyn Env>, options: ChainOptions) -> Arc<Shared> {
        Arc::new(Shared {
            env,
            reporter: if options.fold_by_location {
                Reporter::by_location()
            } else {
                Reporter::new()
            },
            ctxs: CtxTree::new(),
            clocks: Clocks::new(),
            options,
        })
    }
}

/// Options that some passes read.
#[derive(Clone, Debug, Default)]
pub struct ChainOptions {
    /// Goldilocks: treat read-read as conflicting (the TR's rules) instead of RW mode.
    pub goldilocks_tr_mode: bool,
    /// The `record` pass writes the trace here (`--record FILE.std`).
    pub record_path: Option<std::path::PathBuf>,
    /// `--capsules C1,C2` / `inferred`: overrides the source annotations (None = use them).
    pub capsules: Option<Vec<String>>,
    /// Fold warnings by location instead of by pair of sites (offline analysis,
    /// where every event has a site of its own; see [`Reporter::by_location`]).
    pub fold_by_location: bool,
    /// `grits --spec FILE.grits`: check runs against this spec instead of inferring.
    pub grits_spec: Option<Arc<crate::passes::grits::spec::GritsSpec>>,
}
