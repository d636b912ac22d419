//! The registry of passes: `--tools` names to constructors.
//!
//! Every analysis is one module of the same shape (RAPID's `engine/` layout): the events
//! it handles, its state, its verdict. Adding an analysis is adding a module and a
//! line here.

use std::sync::Arc;

use crate::chain::{Chain, ChainError};
use crate::env::Env;
use crate::pass::Pass;
use crate::shared::{ChainOptions, Shared};

pub mod atomicity;
pub mod bigfoot;
pub mod capsule;
pub mod count;
pub mod djit;
pub mod eraser;
pub mod escape;
pub mod fasttrack;
pub mod goldilocks;
pub mod grits;
pub mod hb;
pub mod record;
pub mod shadow;
pub mod singletrack;

/// Every name `--tools` accepts, in the order of `docs/architecture.md`.
pub const NAMES: &[&str] = &[
    "escape",
    "capsule",
    "singletrack",
    "atomicity",
    "fasttrack",
    "djit",
    "goldilocks",
    "eraser",
    "hb",
    "count",
    "record",
    "grits",
    "bigfoot",
];

/// The passes of `a:b:c` (`none` or the empty string: no pass), built over `shared`.
pub fn parse_chain(spec: &str, shared: &Arc<Shared>) -> Result<Vec<Box<dyn Pass>>, ChainError> {
    let spec = spec.trim();
    if spec.is_empty() || spec == "none" {
        return Ok(Vec::new());
    }
    spec.split(':')
        .map(|name| make(name.trim(), shared))
        .collect()
}

/// The chain `a:b:c` over fresh services ([`Shared::new`]).
pub fn chain(spec: &str, env: Arc<dyn Env>, options: ChainOptions) -> Result<Chain, ChainError> {
    let shared = Shared::new(env, options);
    let passes = parse_chain(spec, &shared)?;
    Ok(Chain::from_passes(passes, shared))
}

/// The pass named `name` (one of [`NAMES`]), built over `shared`.
pub fn make(name: &str, shared: &Arc<Shared>) -> Result<Box<dyn Pass>, ChainError> {
    match name {
        "count" => Ok(Box::new(count::Count::new())),
        "escape" => Ok(Box::new(escape::Escape::new(shared))),
        "capsule" => Ok(Box::new(capsule::Capsule::new(shared))),
        "singletrack" => Ok(Box::new(singletrack::SingleTrack::new(shared))),
        "atomicity" => Ok(Box::new(atomicity::Atomicity::new(shared))),
        "record" => Ok(Box::new(record::Record::new(shared)?)),
        "fasttrack" => Ok(Box::new(fasttrack::FastTrack::new(shared))),
        "djit" => Ok(Box::new(djit::Djit::new(shared))),
        "goldilocks" => Ok(Box::new(goldilocks::Goldilocks::new(shared))),
        "eraser" => Ok(Box::new(eraser::Eraser::new(shared))),
        "hb" => Ok(Box::new(hb::Hb::new(shared))),
        "grits" => Ok(Box::new(grits::Grits::new(shared))),
        "bigfoot" => Ok(Box::new(bigfoot::BigFoot::new(shared))),
        other => Err(ChainError(format!(
            "unknown analysis `{other}` (known: {})",
            NAMES.join(", ")
        ))),
    }
}
