//! `atomicity`: conflict serializability of `atomic` blocks and methods by transactional
//! happens-before cycle detection (Velodrome, Flanagan, Freund, Yi, PLDI'08), on the
//! graph engine shared with `singletrack` ([`crate::txgraph`]).
//!
//! - A transaction is the outermost `atomic` block of one thread (nested blocks only
//!   count depth). Unlike `deterministic`, threads forked inside it are *not* part of it.
//! - Every operation outside an atomic block is its own unary transaction (merged with
//!   the thread's previous node when nothing else reaches it, which changes no
//!   reachability). So verdicts are comparable with RAPID's Velodrome; offline, STD
//!   `begin`/`end` are atomic blocks.
//! - Edges: communication on a variable (volatile accesses included), lock release →
//!   acquire, fork and join, barrier arrivals → departures, and program order between a
//!   thread's transactions.
//! - Verdict: warning `atomicity` at the first event whose edge would close a cycle
//!   (`event` = its 1-based trace line), listing the transactions on the cycle; the edge
//!   is left out so the graph stays a DAG and is garbage-collected. One warning per
//!   violated atomic block instance (the first cycle closed into it).
//!
//! Every access is forwarded. Concurrency: the graph sits behind one mutex; each event is
//! handled atomically.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::event::Event;
use crate::pass::{Flow, Local, Pass};
use crate::report::WarningKind;
use crate::shared::Shared;
use crate::thread::ThreadState;
use crate::txgraph::report::cycle_warning;
use crate::txgraph::{TxHb, TxMode};

pub const NAME: &str = "atomicity";

pub struct Atomicity {
    shared: Arc<Shared>,
    graph: Mutex<TxHb>,
}

impl Atomicity {
    pub fn new(shared: &Arc<Shared>) -> Self {
        Atomicity {
            shared: shared.clone(),
            graph: Mutex::new(TxHb::new(TxMode::VELODROME)),
        }
    }

    fn handle(&self, t: &ThreadState, ev: &Event<'_>) {
        if TxHb::ignores(&ev.kind) {
            return;
        }
        let cycles = self.graph.lock().event(ev, t.ctx);
        for v in &cycles {
            let w = cycle_warning(
                WarningKind::Atomicity,
                NAME,
                "atomic",
                v,
                self.shared.env.as_ref(),
            );
            self.shared.reporter.report(w);
        }
    }
}

impl Pass for Atomicity {
    fn name(&self) -> &'static str {
        NAME
    }
    /// Calls matter only through the call context of reports (`ThreadState::ctx`),
    /// which the chain keeps without `Enter`/`Exit`.
    fn wants_frames(&self) -> bool {
        false
    }

    fn access(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) -> Flow {
        self.handle(t, ev);
        Flow::Forward
    }

    fn event(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) {
        self.handle(t, ev);
    }

    fn stats(&self) -> Option<serde_json::Value> {
        let g = self.graph.lock().stats();
        Some(serde_json::json!({
            "nodes_created": g.nodes_created,
            "nodes_collected": g.nodes_collected,
            "live_nodes": g.live_nodes,
            "max_live_nodes": g.max_live_nodes,
            "edges_added": g.edges_added,
            "searches": g.searches,
            "cycles": g.cycles,
        }))
    }
}
