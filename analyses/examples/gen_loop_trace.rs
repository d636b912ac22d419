//! Write a loop-shaped STD trace (README, "Compressed traces"):
//!
//! ```text
//! cargo run --release -p analyses --features testing --example gen_loop_trace -- \
//!     [EVENTS] [THREADS] [ITERS_PER_TURN] > loop.std
//! ```
//!
//! Defaults: 12000000 8 1000 (`LoopTraceConfig::default()`).

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use analyses::testing::{LoopTraceConfig, write_loop_trace};

fn main() -> ExitCode {
    let mut cfg = LoopTraceConfig::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() > 3 || args.iter().any(|a| a.starts_with('-')) {
        eprintln!("usage: gen_loop_trace [EVENTS] [THREADS] [ITERS_PER_TURN]");
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
        match i {
            0 => cfg.events = n,
            1 => cfg.threads = u32::try_from(n).unwrap_or(u32::MAX),
            _ => cfg.iters = n,
        }
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    match write_loop_trace(&cfg, &mut out).and_then(|n| out.flush().map(|()| n)) {
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
