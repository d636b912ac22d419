//! Write a loop-shaped STD trace (README, "Compressed traces"):
//!
//! ```text
//! cargo run --release -p analyses --features testing --example gen_loop_trace -- \
//!     [EVENTS] [THREADS] [ITERS_PER_TURN] > loop.std
//! ```
//!
//! Defaults: 12000000 8 1000 (`LoopTraceConfig::default()`).

use std::process::ExitCode;

use analyses::testing::{LoopTraceConfig, gen_args, gen_to_stdout, write_loop_trace};

fn main() -> ExitCode {
    let mut cfg = LoopTraceConfig::default();
    let names = ["EVENTS", "THREADS", "ITERS_PER_TURN"];
    let args = match gen_args("gen_loop_trace", &names) {
        Ok(a) => a,
        Err(code) => return code,
    };
    for (i, n) in args.into_iter().enumerate() {
        match i {
            0 => cfg.events = n,
            1 => cfg.threads = u32::try_from(n).unwrap_or(u32::MAX),
            _ => cfg.iters = n,
        }
    }
    gen_to_stdout(|out| write_loop_trace(&cfg, out))
}
