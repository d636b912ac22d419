//! `eraser`: Eraser's lockset discipline (Savage et al., TOCS'97; Rhodes's
//! thesis §1.4), in the form RAPID's lockset engine checks (Kini, Mathur & Viswanathan,
//! *Data Race Detection on Compressed Traces*, ESEC/FSE'18 §2), so
//! that it flags exactly the variables of RAPID's `lockset_first_violation_per_variable`.
//!
//! - Handled events: plain reads and writes; the locks held are `ThreadState::held`.
//! - State per location: the candidate set `C(x)` (initially "all locks") over the
//!   program's locks plus Pozniansky–Schuster *dummy locks*: `Λ_t` per thread, and
//!   `Λ` for reads. An access by `t` intersects `C(x)` with
//!   `held(t) ∪ {Λ_t}` (write) or `held(t) ∪ {Λ_t, Λ}` (read).
//! - Eraser's state machine is read off the candidate set: Virgin (no access yet),
//!   Exclusive (`Λ_t ∈ C`: only `t` accessed x), Shared (`Λ ∈ C`: read-only by several
//!   threads), Shared-Modified (neither). A warning (`kind: "lockset"`) is raised once
//!   per location, at the first access that leaves `C(x)` empty, i.e. in
//!   Shared-Modified with no common lock.
//!
//! Why not the classic machine: classic Eraser starts refining `C(x)` only when a
//! second thread arrives (the Exclusive phase is not checked), so it accepts
//! `T0: w(x)` · `fork T1` · `T1: acq L; w(x)` (the write under L opens Shared-Modified
//! with `C = {L}`), while RAPID's discipline intersects the first thread's unlocked
//! accesses too and reports at T1's write. On the reference trace t1000 this moves
//! V0's first violation from line 14 (RAPID) to line 26 (classic); [`Eraser::classic`]
//! is the classic machine, and `tests/rapid_traces.rs` shows the difference. With
//! the dummy locks both agree on what the Exclusive and Shared states are meant to
//! forgive (thread-local and read-only data). Like the classic machine it ignores
//! fork/join, so ownership handed over by fork/join alone is a (known) false alarm.
//!
//! Concurrency: per-location state in a sharded map, mutated under its shard's lock
//! (`super::shadow`).

use std::sync::Arc;

use crate::event::{Event, Loc, ObjId, Op, Tid};
use crate::pass::{Flow, Local, Pass};
use crate::report::WarningKind;
use crate::shared::Shared;
use crate::thread::ThreadState;

use super::shadow::{Acc, Shadow, pair_warning};

/// Eraser's states, derived from the candidate set.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum EraserState {
    Virgin,
    Exclusive(Tid),
    Shared,
    SharedModified,
}

struct VarState {
    /// `None` = Virgin (⊤). Otherwise the candidate program locks.
    locks: Option<Vec<ObjId>>,
    /// `Λ_t ∈ C`: the only accessor so far.
    exclusive: Option<Tid>,
    /// `Λ ∈ C`: no write so far.
    read_only: bool,
    /// The last access of each thread with its sequence number (for reports).
    last: Vec<(Tid, u64, Acc)>,
    seq: u64,
    reported: bool,
}

impl VarState {
    fn new() -> Self {
        VarState {
            locks: None,
            exclusive: None,
            read_only: true,
            last: Vec::new(),
            seq: 0,
            reported: false,
        }
    }

    fn state(&self) -> EraserState {
        match (&self.locks, self.exclusive, self.read_only) {
            (None, _, _) => EraserState::Virgin,
            (_, Some(t), _) => EraserState::Exclusive(t),
            (_, None, true) => EraserState::Shared,
            (_, None, false) => EraserState::SharedModified,
        }
    }

    /// Intersect with the access's lockset; true if `C(x)` became empty now.
    /// `classic`: the first thread's (Exclusive) accesses do not constrain `C(x)`;
    /// it starts from the locks of the first access by a second thread.
    fn refine(&mut self, t: &ThreadState, op: Op, classic: bool) -> bool {
        let was_empty = self.is_empty();
        match &mut self.locks {
            None => {
                self.locks = Some(t.held.clone());
                self.exclusive = Some(t.tid);
            }
            Some(c) => {
                if classic && self.exclusive.is_some_and(|e| e != t.tid) {
                    c.clone_from(&t.held);
                } else {
                    c.retain(|l| t.holds(*l));
                }
                if self.exclusive != Some(t.tid) {
                    self.exclusive = None;
                }
            }
        }
        if op == Op::Write {
            self.read_only = false;
        }
        !was_empty && self.is_empty()
    }

    fn is_empty(&self) -> bool {
        self.state() == EraserState::SharedModified
            && self.locks.as_ref().is_some_and(|c| c.is_empty())
    }
}

pub struct Eraser {
    vars: Shadow<VarState>,
    shared: Arc<Shared>,
    classic: bool,
}

impl Eraser {
    pub fn new(shared: &Arc<Shared>) -> Self {
        Eraser {
            vars: Shadow::default(),
            shared: shared.clone(),
            classic: false,
        }
    }

    /// The classic state machine (Savage et al. §2.2): no refinement while Exclusive.
    /// Not RAPID's discipline (see the module doc); kept to show the difference.
    pub fn classic(shared: &Arc<Shared>) -> Self {
        Eraser {
            classic: true,
            ..Self::new(shared)
        }
    }

    fn access_var(&self, t: &ThreadState, x: &mut VarState, loc: Loc, cur: Acc) {
        if x.refine(t, cur.op, self.classic) && !x.reported {
            x.reported = true;
            // The other side: the latest access by another thread.
            let prev = x
                .last
                .iter()
                .filter(|(u, _, _)| *u != t.tid)
                .max_by_key(|(_, seq, _)| *seq)
                .map(|(_, _, a)| *a);
            if let Some(prev) = prev {
                self.shared.reporter.report(pair_warning(
                    WarningKind::Lockset,
                    "eraser",
                    loc,
                    &prev,
                    &cur,
                    "no lock protects this location consistently".to_string(),
                ));
            }
        }
        x.seq += 1;
        match x.last.iter_mut().find(|(u, _, _)| *u == t.tid) {
            Some(e) => (e.1, e.2) = (x.seq, cur),
            None => x.last.push((t.tid, x.seq, cur)),
        }
    }
}

impl Pass for Eraser {
    fn name(&self) -> &'static str {
        "eraser"
    }
    fn wants_frames(&self) -> bool {
        false
    }
    fn access(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) -> Flow {
        let Some((loc, op, _)) = ev.kind.plain_access() else {
            return Flow::Forward;
        };
        let cur = Acc::of(t, ev, op);
        self.vars
            .with(loc, VarState::new, |x| self.access_var(t, x, loc, cur));
        Flow::Forward
    }
    fn stats(&self) -> Option<serde_json::Value> {
        let mut counts = [0u64; 4];
        self.vars.for_each(|v| {
            let i = match v.state() {
                EraserState::Virgin => 0,
                EraserState::Exclusive(_) => 1,
                EraserState::Shared => 2,
                EraserState::SharedModified => 3,
            };
            counts[i] += 1;
        });
        Some(serde_json::json!({
            "exclusive": counts[1],
            "shared": counts[2],
            "shared_modified": counts[3],
        }))
    }
}
