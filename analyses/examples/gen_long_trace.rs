//! Write a long STD trace for throughput measurements (README, "Measured results"):
//!
//! ```text
//! cargo run --release -p analyses --features testing --example gen_long_trace -- \
//!     [EVENTS] [THREADS] [VARS] [LOCKS] [UNGUARDED_PER_10K] [SEED] > trace.std
//! ```
//!
//! Defaults: 2000000 8 2000 16 100 1 (`LongTraceConfig::default()`).

use std::process::ExitCode;

use analyses::testing::{LongTraceConfig, gen_args, gen_to_stdout, write_long_trace};

fn main() -> ExitCode {
    let mut cfg = LongTraceConfig::default();
    let names = [
        "EVENTS",
        "THREADS",
        "VARS",
        "LOCKS",
        "UNGUARDED_PER_10K",
        "SEED",
    ];
    let args = match gen_args("gen_long_trace", &names) {
        Ok(a) => a,
        Err(code) => return code,
    };
    for (i, n) in args.into_iter().enumerate() {
        let small = || u32::try_from(n).unwrap_or(u32::MAX);
        match i {
            0 => cfg.events = n,
            1 => cfg.threads = small(),
            2 => cfg.vars = small(),
            3 => cfg.locks = small(),
            4 => cfg.unguarded_per_10k = small(),
            _ => cfg.seed = n,
        }
    }
    gen_to_stdout(|out| write_long_trace(&cfg, out))
}
