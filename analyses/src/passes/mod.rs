//! The registry of passes: `--tools` names to constructors.
//!
//! Every analysis is one module of the same shape (RAPID's `engine/` layout): the events
//! it handles, its state, its verdict. Adding an analysis is adding a module and a
//! line here.

use std::sync::Arc;

use crate::chain::{ChainError, Shared};
use crate::pass::Pass;

pub mod atomicity;
pub mod capsule;
pub mod count;
pub mod djit;
pub mod eraser;
pub mod escape;
pub mod fasttrack;
pub mod goldilocks;
pub mod hb;
pub mod record;
pub mod shadow;
pub mod singletrack;

/// Every name `--tools` accepts, in the order of ARCHITECTURE.md.
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
];

pub fn make(name: &str, shared: &Arc<Shared>) -> Result<Box<dyn Pass>, ChainError> {
    let _ = shared;
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
        other if NAMES.contains(&other) => Err(ChainError(format!(
            "analysis `{other}` is not available in this build of capvm"
        ))),
        other => Err(ChainError(format!(
            "unknown analysis `{other}` (known: {})",
            NAMES.join(", ")
        ))),
    }
}
