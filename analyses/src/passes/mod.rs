//! The registry of passes: `--tools` names to constructors.
//!
//! Every analysis is one module of the same shape (RAPID's `engine/` layout): the events
//! it handles, its state, its verdict. Adding an analysis is adding a module and a
//! line here.

use std::sync::Arc;

use crate::chain::{ChainError, Shared};
use crate::pass::Pass;

pub mod count;

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
        other if NAMES.contains(&other) => Err(ChainError(format!(
            "analysis `{other}` is not available in this build of capvm"
        ))),
        other => Err(ChainError(format!(
            "unknown analysis `{other}` (known: {})",
            NAMES.join(", ")
        ))),
    }
}
