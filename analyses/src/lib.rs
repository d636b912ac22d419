//! capvm's analyses: the event model, the pass interface and chains, every analysis,
//! reports, trace formats, and offline analysis of traces.
//!
//! Architecture invariants:
//! - `analyses` knows nothing of the VM: it runs on events from a live VM and from a
//!   trace file alike (the VM implements [`env::Env`]).
//! - Synchronization events are never filtered: only [`pass::Pass::access`] can drop.
//! - Happens-before clocks for synchronization live once, in [`clocks`]; passes read
//!   them from [`thread::ThreadState`].

pub mod chain;
pub mod clocks;
pub mod ctx;
pub mod env;
pub mod event;
pub mod filterstats;
pub mod offline;
pub mod pass;
pub mod passes;
pub mod report;
pub mod shared;
pub mod slp;
pub mod spin;
pub mod stats;
#[cfg(feature = "testing")]
pub mod testing;
pub mod thread;
pub mod tidmap;
pub mod trace;
pub mod txgraph;
pub mod vc;

/// Xorshift64: the unit tests' reproducible random numbers.
#[cfg(test)]
pub(crate) fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

pub use chain::{Chain, ChainError};
pub use event::{Event, EventKind, Loc, MethodId, ObjId, Op, SiteId, Spec, Tid};
pub use pass::{Flow, Pass};
pub use shared::{ChainOptions, Shared};
