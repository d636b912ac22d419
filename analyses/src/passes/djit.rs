//! `djit`: DJIT+ with full vector clocks per location (Pozniansky & Schuster, PPoPP'03; the
//! rules as Rhodes's thesis restates them, §1.5).
//!
//! - Handled events: plain reads and writes; synchronization is the chain's clock
//!   service (`crate::clocks`), `C_t` is `ThreadState::vc`.
//! - State per location: `W_x[u]` = clock of u's last write, `R_x[u]` = clock of u's
//!   last read, with the access behind each entry for reports.
//! - Verdict: every access such that some earlier conflicting access does not
//!   happen before it (no same-epoch shortcut, so the flagged events are exactly the
//!   racy events of the trace: RAPID's `hb_racy_events`). A read checks `W_x ⊑ C_t`, a
//!   write checks `W_x ⊑ C_t` and `R_x ⊑ C_t`; one warning per flagged access, against
//!   the most recent unordered earlier access.
//!
//! Concurrency: per-location state in a sharded map, mutated under its shard's lock
//! (`super::shadow`).

use std::sync::Arc;

use crate::event::{Event, Loc, Op};
use crate::pass::{Flow, Local, Pass};
use crate::report::WarningKind;
use crate::shared::Shared;
use crate::thread::ThreadState;
use crate::vc::VectorClock;

use super::shadow::{Acc, Shadow, pair_warning};

/// A vector clock of accesses, with the last access of each thread and its sequence
/// number among the location's accesses.
#[derive(Default)]
struct Clocked {
    vc: VectorClock,
    last: Vec<Option<(u64, Acc)>>,
}

impl Clocked {
    fn set(&mut self, t: &ThreadState, a: Acc, seq: u64) {
        self.vc.set(t.tid, t.vc.get(t.tid));
        let i = t.tid as usize;
        if self.last.len() <= i {
            self.last.resize(i + 1, None);
        }
        self.last[i] = Some((seq, a));
    }
    /// The most recent earlier access not ordered before `C_t`.
    fn unordered(&self, t: &ThreadState) -> Option<(u64, Acc)> {
        self.vc
            .entries()
            .filter(|&(u, c)| u != t.tid && c > t.vc.get(u))
            .filter_map(|(u, _)| self.last.get(u as usize).copied().flatten())
            .max_by_key(|(seq, _)| *seq)
    }
}

#[derive(Default)]
struct VarState {
    w: Clocked,
    r: Clocked,
    /// Accesses so far (orders the reports' "previous" access deterministically).
    seq: u64,
}

pub struct Djit {
    vars: Shadow<VarState>,
    shared: Arc<Shared>,
}

impl Djit {
    pub fn new(shared: &Arc<Shared>) -> Self {
        Djit {
            vars: Shadow::default(),
            shared: shared.clone(),
        }
    }

    fn report(&self, loc: Loc, prev: &Acc, cur: &Acc) {
        let what = match (prev.op, cur.op) {
            (Op::Write, Op::Read) => "write-read",
            (Op::Write, Op::Write) => "write-write",
            _ => "read-write",
        };
        self.shared.reporter.report(pair_warning(
            WarningKind::Race,
            "djit",
            loc,
            prev,
            cur,
            format!("{what} race"),
        ));
    }
}

impl Pass for Djit {
    fn name(&self) -> &'static str {
        "djit"
    }
    fn wants_frames(&self) -> bool {
        false
    }
    fn access(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) -> Flow {
        let Some((loc, op, _)) = ev.kind.plain_access() else {
            return Flow::Forward;
        };
        let cur = Acc::of(t, ev, op);
        self.vars.with(loc, VarState::default, |x| {
            // DJIT+ read: W_x ⊑ C_t. Write: W_x ⊑ C_t and R_x ⊑ C_t.
            let mut prev = x.w.unordered(t);
            if op == Op::Write
                && let Some(r) = x.r.unordered(t)
                && prev.is_none_or(|w| r.0 > w.0)
            {
                prev = Some(r);
            }
            if let Some((_, p)) = prev {
                self.report(loc, &p, &cur);
            }
            x.seq += 1;
            match op {
                Op::Read => x.r.set(t, cur, x.seq),
                Op::Write => x.w.set(t, cur, x.seq),
            }
        });
        Flow::Forward
    }
    fn stats(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "locations": self.vars.len() }))
    }
}
