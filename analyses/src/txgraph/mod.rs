//! The transactional happens-before graph shared by `singletrack` (external
//! serializability) and `atomicity` (Velodrome's conflict serializability).
//!
//! - [`graph`]: the engine — nodes, edges, incremental cycle detection, garbage
//!   collection. Knows nothing of events.
//! - [`builder`]: the rules that map events to transactions and edges
//!   (SingleTrack ESOP'09 Fig. 5; Velodrome PLDI'08).
//! - [`report`]: a cycle as a warning.
//!
//! A trace is serializable iff the graph stays acyclic (SingleTrack Lemma 2); the first
//! event whose edge would close a cycle is where the violation is reported.

pub mod builder;
pub mod graph;
pub mod report;

pub use builder::{EdgeInfo, Reason, TxHb, TxInfo, TxMode, Violation};
pub use graph::{Cycle, EdgeOutcome, GraphStats, NodeId, TxGraph};
