//! The `capvm` tool on top of the runtime: the command line ([`cli`]),
//! `capvm infer-capsules` ([`infer`]) and `capvm bench` ([`bench`]). Runtime modules
//! never import it; `cli` dispatches to `bench` and `infer`, which import only the
//! exit codes, the write helpers and the argument parsers shared here.

pub mod bench;
pub mod cli;
pub mod grits;
pub mod infer;
pub mod slp;

use std::cell::Cell;

use crate::run::Tier;

pub const EXIT_OK: i32 = 0;
pub const EXIT_USAGE: i32 = 64;
pub const EXIT_COMPILE: i32 = 65;
pub const EXIT_WARNINGS: i32 = 66;
pub const EXIT_RUNTIME: i32 = 70;
/// An output (stdout, stderr, `--record`, `--report`, a `.capsules` file) could not be
/// written (sysexits' `EX_IOERR`).
pub const EXIT_OUTPUT: i32 = 74;

thread_local! {
    /// A write to stderr (or clap's help to stdout) failed during this [`cli::main`]: its
    /// exit code becomes 74.
    static LOST_OUTPUT: Cell<bool> = const { Cell::new(false) };
}

/// Remember a failed write of this thread's [`cli::main`] (exit 74).
pub fn note_write(r: std::io::Result<()>) {
    if r.is_err() {
        LOST_OUTPUT.set(true);
    }
}

/// Start a [`cli::main`]: no write has failed yet.
pub fn reset_lost_output() {
    LOST_OUTPUT.set(false);
}

/// Whether a write of this thread's [`cli::main`] failed.
pub fn lost_output() -> bool {
    LOST_OUTPUT.get()
}

/// `--tier`: `jit` or `interp`.
pub fn parse_tier(s: &str) -> Result<Tier, String> {
    match s {
        "interp" => Ok(Tier::Interp),
        "jit" => Ok(Tier::Jit),
        _ => Err(format!("expected `jit` or `interp`, found `{s}`")),
    }
}

/// Bytes with an optional binary suffix: `4096`, `512K`, `64M`, `2G` (also `KB`/`KiB`).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let upper = t.to_ascii_uppercase();
    let body = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (digits, mult) = match body.chars().last() {
        Some('K') => (&body[..body.len() - 1], 1u64 << 10),
        Some('M') => (&body[..body.len() - 1], 1 << 20),
        Some('G') => (&body[..body.len() - 1], 1 << 30),
        Some('T') => (&body[..body.len() - 1], 1 << 40),
        _ => (body, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("expected a size like 4096, 512K, 64M or 2G, found `{s}`"))
}
