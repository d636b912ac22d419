//! Offline analysis: a chain run over a parsed trace ([`crate::trace`]) instead of a
//! live VM, as `capvm analyze` does.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::chain::{Chain, ChainError};
use crate::event::{OwnedEvent, OwnedKind, Tid};
use crate::shared::ChainOptions;
use crate::thread::ThreadCx;
use crate::trace::Trace;

/// Run the chain `chain_spec` over `trace`: one [`ThreadCx`] per thread, forks through
/// [`Chain::fork`], every event in trace order, then [`Chain::finish`]. The returned
/// chain holds the warnings ([`Chain::warnings`]) and statistics. With
/// [`ChainOptions::fold_by_location`] (as `capvm analyze` runs it) the warnings are one
/// per analysis and location, the first in trace order, with the number of times it
/// was found; without it they fold by pair of sites, so a trace whose events all have
/// sites of their own keeps every flagged event (what the oracles compare).
pub fn analyze(
    trace: &Trace,
    chain_spec: &str,
    options: ChainOptions,
) -> Result<Chain, ChainError> {
    let env: Arc<dyn crate::env::Env> = trace.env.clone();
    let chain = crate::passes::chain(chain_spec, env, options)?;
    run_events(&chain, &trace.events);
    chain.finish();
    Ok(chain)
}

/// Deliver well-formed `events` (as produced by [`crate::trace::Normalizer`]) to `chain`, in order,
/// without calling `finish`. Threads that start without a fork get a root context.
pub fn run_events(chain: &Chain, events: &[OwnedEvent]) {
    let mut cxs: HashMap<Tid, ThreadCx> = HashMap::new();
    for ev in events {
        match &ev.kind {
            OwnedKind::Fork { child, handed } => {
                if let Some(parent) = cxs.get_mut(&ev.tid) {
                    let cx = chain.fork(parent, *child, ev.site, ev.index, handed);
                    cxs.insert(*child, cx);
                }
            }
            kind => {
                if matches!(kind, OwnedKind::ThreadStart) && !cxs.contains_key(&ev.tid) {
                    let cx = if ev.tid == 0 {
                        chain.main_thread()
                    } else {
                        chain.root_thread(ev.tid)
                    };
                    cxs.insert(ev.tid, cx);
                }
                if let Some(cx) = cxs.get_mut(&ev.tid) {
                    chain.deliver(cx, &ev.as_event());
                }
            }
        }
    }
}
