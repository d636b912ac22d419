//! Generators' consumers: the oracles of `docs/architecture.md` "Precision and
//! soundness properties" (feature `testing`), one function per property, each returning
//! `Err(description of the disagreement)`. Fuzz targets (`fuzz/`) and the seeded tests
//! (`vm/tests/oracles.rs`) are thin wrappers over them.
//!
//! - [`trace_oracles`]: properties on event sequences (generated traces or recorded
//!   runs): (1) precise detectors vs `hb`, (4) SingleTrack/atomicity vs brute force.
//! - [`program_oracles`]: properties needing the VM: (1) on recorded runs, (2) filter
//!   chains are trace precise, (5) interpreter vs JIT.
//! - [`bigfoot`]: BigFoot's precise-checks oracle and (7) `bigfoot` vs `fasttrack`.
//! - [`panic_oracles`]: (6) no input panics the front end or the trace analyzer.
//! - [`fuzz`]: the fuzz targets' bodies (bytes in) and [`fuzz::replay`].
//! - [`log`]: the in-process event recorder the program oracles use.
//!
//! - [`slp_oracles`]: (3) analyses of SLP-compressed traces (on the grammar, or on
//!   the streamed expansion) agree with the uncompressed ones, whatever the grammar.

pub mod bigfoot;
pub mod fuzz;
pub mod grits_oracle;
pub mod log;
pub mod panic_oracles;
pub mod program_oracles;
pub mod slp_oracles;
pub mod trace_oracles;
