//! `singletrack`: determinism checking of `deterministic` blocks and methods (Sadowski,
//! Freund, Flanagan, *SingleTrack: A Dynamic Determinism Checker for Multithreaded Programs*,
//! ESOP'09).
//!
//! A *transaction* is a deterministic block's execution plus every operation of every
//! thread forked (transitively) inside it, even after the block's `end`. Two properties:
//! - **Conflict freedom** ([`cf`], warning `conflict`): no two conflicting operations of
//!   one transaction are unordered by its own fork/join/barrier structure. Locks do not
//!   order; a lock-protected update by two forked threads is a conflict by design
//!   (commutativity is not recognized, notes pitfall 18).
//! - **External serializability** ([`crate::txgraph`], warning `serializability`): the
//!   transactional happens-before graph (one node per transaction, forked threads share
//!   it) stays acyclic. A cycle is reported with every transaction on it, at the event
//!   whose edge closes it; that edge is then left out. Each transaction is reported at
//!   most once (on the first cycle closed into it): one warning per violated block
//!   instance, which the reporter folds further by sites.
//!
//! Design choices where the paper leaves room:
//! - **Clocks** are monotonic: `begin` ticks instead of resetting (the paper's reset
//!   misses trace C9).
//! - **Barriers**: an episode joins the clocks of all participants and ticks each
//!   (conflict freedom); in the graph every arrival's node gets an edge to every
//!   departure's node, so participants from different transactions form a cycle
//!   (a serial run would deadlock) and participants of one transaction add nothing.
//! - **Nested blocks**: a depth counter per thread; only the outermost `begin`/`end` of
//!   the thread that opened the transaction create and close it. A forked child is
//!   inside its parent's transaction; its own deterministic blocks nest in it.
//!   Warnings name the outermost block.
//! - **Outside any block**: each operation is its own unary transaction for external
//!   serializability (merged with the thread's previous node when nothing else reaches
//!   it); conflict freedom ignores accesses and lock operations outside, but fork, join
//!   and barriers always move the clocks.
//! - Volatile accesses are plain reads and writes for both properties.
//! - `atomic` blocks are ignored (that is the `atomicity` pass).
//!
//! Not implemented: the optional barrier grouping check of §2.6 (a barrier episode whose
//! participant set differs between runs), semaphores (the VM has no such events), and a
//! warning on an `end` while a lock acquired inside is still held (pitfall 10; conflict
//! freedom still checks every lock operation, see [`cf`]).
//!
//! Every access is forwarded. Concurrency: all state sits behind one mutex; each event
//! is handled atomically, which the producer's ordering guarantees make equivalent to
//! processing the trace sequentially.

pub mod cf;

use std::sync::Arc;

use parking_lot::Mutex;

use crate::event::Event;
use crate::pass::{Flow, Local, Pass};
use crate::report::{AccessInfo, Warning, WarningKind};
use crate::shared::Shared;
use crate::thread::ThreadState;
use crate::txgraph::report::cycle_warning;
use crate::txgraph::{TxHb, TxMode};

use cf::{Cf, CfAccess, CfConflict, Target};

pub const NAME: &str = "singletrack";

struct State {
    cf: Cf,
    xs: TxHb,
}

pub struct SingleTrack {
    shared: Arc<Shared>,
    state: Mutex<State>,
}

fn access_info(a: &CfAccess) -> AccessInfo {
    AccessInfo {
        tid: a.tid,
        op: a.op.to_string(),
        site: a.site,
        ctx: a.ctx,
        event: (a.event > 0).then_some(a.event),
    }
}

impl SingleTrack {
    pub fn new(shared: &Arc<Shared>) -> Self {
        SingleTrack {
            shared: shared.clone(),
            state: Mutex::new(State {
                cf: Cf::new(),
                xs: TxHb::new(TxMode::SINGLETRACK),
            }),
        }
    }

    fn conflict_warning(&self, c: &CfConflict) -> Warning {
        let env = self.shared.env.as_ref();
        let mut w = Warning::new(WarningKind::Conflict, NAME);
        let what = match c.target {
            Target::Var(loc) => {
                w.loc = Some(loc);
                env.loc_name(loc).to_string()
            }
            Target::Lock(m) => format!("lock {}", env.obj_label(m)),
        };
        w.event = (c.cur.event > 0).then_some(c.cur.event);
        w.accesses = vec![access_info(&c.prev), access_info(&c.cur)];
        // A position, not a trace line, so online and offline reports read the same
        // (the JSON keeps the trace line in `transaction.event`).
        let begun = env.site(c.begin.site).position;
        w.message = format!(
            "{} by T{} and {} by T{} on {what} in the deterministic computation begun by T{} at {begun} are not ordered by fork, join or barrier",
            c.prev.op, c.prev.tid, c.cur.op, c.cur.tid, c.begin.tid
        );
        let mut tx = serde_json::json!({
            "thread": c.begin.tid,
            "site": env.site(c.begin.site).position,
        });
        if c.begin.event > 0 {
            tx["event"] = c.begin.event.into();
        }
        w.extra.insert("transaction".into(), tx);
        w
    }

    fn handle(&self, t: &ThreadState, ev: &Event<'_>) {
        let (conflicts, cycles) = {
            let mut st = self.state.lock();
            let conflicts = st.cf.event(ev, t.ctx);
            let cycles = st.xs.event(ev, t.ctx);
            (conflicts, cycles)
        };
        for c in &conflicts {
            self.shared.reporter.report(self.conflict_warning(c));
        }
        for v in &cycles {
            let w = cycle_warning(
                WarningKind::Serializability,
                NAME,
                "deterministic",
                v,
                self.shared.env.as_ref(),
            );
            self.shared.reporter.report(w);
        }
    }
}

impl Pass for SingleTrack {
    fn name(&self) -> &'static str {
        NAME
    }

    fn access(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) -> Flow {
        self.handle(t, ev);
        Flow::Forward
    }

    fn event(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) {
        self.handle(t, ev);
    }

    fn stats(&self) -> Option<serde_json::Value> {
        let st = self.state.lock();
        let g = st.xs.stats();
        Some(serde_json::json!({
            "cf_checks": st.cf.checks(),
            "cf_live_transactions": st.cf.live_transactions(),
            "xs_nodes_created": g.nodes_created,
            "xs_nodes_collected": g.nodes_collected,
            "xs_live_nodes": g.live_nodes,
            "xs_max_live_nodes": g.max_live_nodes,
            "xs_edges_added": g.edges_added,
            "xs_searches": g.searches,
            "xs_cycles": g.cycles,
        }))
    }
}
