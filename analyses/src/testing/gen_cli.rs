//! The command line the trace generators share (`examples/gen_long_trace.rs`,
//! `examples/gen_loop_trace.rs`): positional non-negative integers, then the trace on
//! standard output.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

/// Up to `names.len()` positional non-negative integers (`names` are their names, for
/// the usage line of `tool`); `Err(64)` after a message for anything else.
pub fn gen_args(tool: &str, names: &[&str]) -> Result<Vec<u64>, ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() > names.len() || args.iter().any(|a| a.starts_with('-')) {
        let usage: Vec<String> = names.iter().map(|n| format!("[{n}]")).collect();
        eprintln!("usage: {tool} {}", usage.join(" "));
        return Err(ExitCode::from(64));
    }
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            a.parse::<u64>().map_err(|_| {
                eprintln!(
                    "error: argument {} must be a non-negative integer, got '{a}'",
                    i + 1
                );
                ExitCode::from(64)
            })
        })
        .collect()
}

/// Run `write` on buffered standard output and report how many events it wrote; 74
/// after a message if the trace could not be written.
pub fn gen_to_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<u64>) -> ExitCode {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    match write(&mut out).and_then(|n| out.flush().map(|()| n)) {
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
