//! capvm's runtime: heap, threads, monitors, schedulers, the interpreter (the reference
//! semantics), the Cranelift JIT, and the bridge from execution to the analysis chain.
//!
//! Code map:
//! - [`layout`]: the heap block layout (the JIT relies on it); [`heap`]: arenas and
//!   slot accessors; [`image`]: a program loaded into a heap.
//! - [`sched`]: run states, blocking, deadlock detection, `os`/`seeded` schedulers;
//!   [`sync`]: monitors, wait/notify, barriers; [`runtime`]: one run's shared state;
//!   [`rtops`]: the runtime operations both tiers share (allocation, monitors,
//!   wait/notify, barriers, fork/join, method prologue/epilogue, print).
//! - [`interp`]: the interpreter; [`ops`]: value operations; [`jfmt`]: Java's
//!   `Double.toString`; [`output`]: the guest's stdout.
//! - [`hook`]: each thread's events to the analysis chain (both tiers); [`bridge`]:
//!   the run's side of it; [`env`]: names for reports.
//! - [`run`]: [`run_program`], the in-process entry point.
//! - [`tool`], on top of the runtime: the `capvm` command line, `capvm infer-capsules`
//!   and `capvm bench`.
//!
//! Architecture invariants: the interpreter is the reference semantics; a guest error
//! never panics the VM; with no analysis chain no event is built.

pub mod bridge;
pub mod env;
pub mod error;
pub mod heap;
pub mod hook;
pub mod image;
pub mod interp;
pub mod jfmt;
pub mod jit;
pub mod layout;
pub mod ops;
pub mod output;
pub mod rtops;
pub mod run;
pub mod runtime;
pub mod sched;
pub mod sync;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tool;

/// Guest thread number (main = 0), as in `analyses`.
pub type Tid = u32;

pub use error::{ErrorKind, RuntimeError};
pub use run::{
    ChainFactory, ConfigError, DEFAULT_TOOLS, ExitKind, RunConfig, RunOutcome, SchedKind, Tier,
    run_program,
};
