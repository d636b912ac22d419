//! Write a long STD trace for throughput measurements (README, "Measured results"):
//!
//! ```text
//! cargo run --release -p analyses --features testing --example gen_long_trace -- \
//!     [EVENTS] [THREADS] [VARS] [LOCKS] [UNGUARDED_PER_10K] [SEED] > trace.std
//! ```
//!
//! Defaults: 2000000 8 2000 16 100 1 (`LongTraceConfig::default()`).

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use analyses::testing::{LongTraceConfig, write_long_trace};

fn main() -> ExitCode {
    let mut cfg = LongTraceConfig::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() > 6 || args.iter().any(|a| a.starts_with('-')) {
        eprintln!(
            "usage: gen_long_trace [EVENTS] [THREADS] [VARS] [LOCKS] [UNGUARDED_PER_10K] [SEED]"
        );
        return ExitCode::from(64);
    }
    for (i, a) in args.iter().enumerate() {
        let Ok(n) = a.parse::<u64>() else {
            eprintln!(
                "error: argument {} must be a non-negative integer, got '{a}'",
                i + 1
            );
            return ExitCode::from(64);
        };
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
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    match write_long_trace(&cfg, &mut out).and_then(|n| out.flush().map(|()| n)) {
        Ok(n) => {
            eprintln!("{n} events");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write the trace: {e}");
            ExitCode::from(74)
        }
    }
}
