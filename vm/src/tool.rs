//! The `capvm` tool on top of the runtime: the command line ([`cli`]),
//! `capvm infer-capsules` ([`infer`]) and `capvm bench` ([`bench`]). Runtime modules
//! never import it; `cli` dispatches to `bench` and `infer`, which import only the
//! exit codes and argument parsers shared here.

pub mod bench;
pub mod cli;
pub mod infer;

use crate::run::Tier;

pub const EXIT_OK: i32 = 0;
pub const EXIT_USAGE: i32 = 64;
pub const EXIT_COMPILE: i32 = 65;
pub const EXIT_WARNINGS: i32 = 66;
pub const EXIT_RUNTIME: i32 = 70;

/// `--tier`: `jit` or `interp`.
pub fn parse_tier(s: &str) -> Result<Tier, String> {
    match s {
        "interp" => Ok(Tier::Interp),
        "jit" => Ok(Tier::Jit),
        _ => Err(format!("expected `jit` or `interp`, found `{s}`")),
    }
}
