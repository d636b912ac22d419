//! The `capvm` tool on top of the runtime: the command line ([`cli`]),
//! `capvm infer-capsules` ([`infer`]) and `capvm bench` ([`bench`]). Runtime modules
//! never import it.

pub mod bench;
pub mod cli;
pub mod infer;
