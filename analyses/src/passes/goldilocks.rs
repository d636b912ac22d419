//! `goldilocks`: the lazy lockset algorithm of Elmas, Qadeer & Tasiran (MSR-TR-2006-163,
//! §3 Fig. 3, *Goldilocks: Efficiently Computing the Happens-Before Relation Using
//! Locksets*), a precise happens-before detector that uses no
//! vector clocks.
//!
//! - Handled events: plain reads and writes (checks), and every synchronization event,
//!   appended as a cell to one global update list (§3): release, volatile write, fork
//!   and barrier arrival are *sync sources* (`if Thread(t) ∈ LS then LS += s`);
//!   acquire, volatile read, join and barrier departure are *sync sinks*
//!   (`if s ∈ LS then LS += Thread(t)`). A barrier episode is a token written by every
//!   arrival and read by every departure. Wait is a release then an acquire.
//! - State per location, read/write extension (notes §4, the default "RW mode"): a
//!   record of the last write and, per thread, of its last read since that write. A
//!   record is `{tid, pos, alock}`: the accessor, the update-list position at the
//!   access, and a lock it held then. TR mode (`ChainOptions::goldilocks_tr_mode`)
//!   keeps one record of the last access and treats read-read as a conflict, exactly
//!   the TR's Fig. 1.
//! - Check `ordered(rec, t)`: short-circuit 1 (`rec.tid == t`), short-circuit 2 (`t`
//!   holds `rec.alock`), else the lazy walk: start from `{Thread(rec.tid)}`, apply the
//!   cells from `rec.pos` to the tail with each cell's own thread, stop as soon as
//!   `Thread(t)` is in the set (Theorem 1: that is `rec →hb now`).
//! - Fig. 3 `alock` bug (notes §3.2): Fig. 3 keeps `alock` when short-circuit 1
//!   succeeds, so it can name a lock the last accessor did not hold (G13). Here every
//!   access makes a fresh record whose `alock` is a lock the accessor holds at that
//!   access (its most recently acquired one), so "alock was held by the last accessor
//!   during its access" always holds and short-circuit 2 never changes a verdict.
//! - Update-list GC (notes §3.3): cells before the smallest `pos` of any record are
//!   dropped by a periodic sweep. A location never accessed again pins the list.
//!
//! Concurrency: records live in a sharded map (`super::shadow`), one shard lock per
//! check. The update list is behind one mutex: sync events append under it (the
//! producer delivers a sync event before anything it happens-before, so the list is
//! in a valid trace order), walks read under it, and the tail index is also
//! published in an atomic for records. Lock order: shard, then list; the sweep reads
//! the shards without holding the list lock.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::event::{Event, EventKind, Loc, ObjId, Op, Tid};
use crate::pass::{Flow, Local, Pass};
use crate::report::WarningKind;
use crate::shared::Shared;
use crate::thread::ThreadState;

use super::shadow::{Acc, Shadow, pair_warning};

/// Lockset elements: threads, locks, volatile variables, barrier episodes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Token {
    Thread(Tid),
    Lock(ObjId),
    Vol(u64),
    Barrier(ObjId, u64),
}

#[derive(Copy, Clone, Debug)]
enum Action {
    /// `if Thread(cell.tid) ∈ LS then LS += token`.
    Source(Token),
    /// `if token ∈ LS then LS += Thread(cell.tid)`.
    Sink(Token),
}

#[derive(Copy, Clone, Debug)]
struct Cell {
    tid: Tid,
    action: Action,
}

/// The update list: `cells[0]` has absolute index `base`; the tail is `base + len`.
#[derive(Default)]
struct UpdateList {
    cells: VecDeque<Cell>,
    base: u64,
}

/// One earlier access.
#[derive(Copy, Clone, Debug)]
struct Rec {
    pos: u64,
    alock: Option<ObjId>,
    acc: Acc,
}

#[derive(Default)]
struct VarState {
    /// RW mode: the last write. TR mode: the last access.
    w: Option<Rec>,
    /// RW mode: each thread's last read since the last write.
    r: Vec<Rec>,
}

/// Per-thread counts of the hot path, added to [`Counters`] when the thread ends.
#[derive(Default)]
struct LocalCounts {
    checks: u64,
    short_circuit_thread: u64,
    short_circuit_lock: u64,
}

#[derive(Default)]
struct Counters {
    checks: AtomicU64,
    short_circuit_thread: AtomicU64,
    short_circuit_lock: AtomicU64,
    walks: AtomicU64,
    cells_walked: AtomicU64,
    cells_collected: AtomicU64,
}

pub struct Goldilocks {
    vars: Shadow<VarState>,
    list: Mutex<UpdateList>,
    tail: AtomicU64,
    /// The tail at the last sweep, and the appends after it that trigger the next.
    swept_at: AtomicU64,
    sweep_at: AtomicU64,
    sweeping: Mutex<()>,
    tr_mode: bool,
    /// Off only in tests: every check walks (verdicts must not change).
    short_circuits: bool,
    shared: Arc<Shared>,
    n: Counters,
}

const MIN_SWEEP: u64 = 4096;

impl Goldilocks {
    pub fn new(shared: &Arc<Shared>) -> Self {
        Goldilocks {
            vars: Shadow::default(),
            list: Mutex::new(UpdateList::default()),
            tail: AtomicU64::new(0),
            swept_at: AtomicU64::new(0),
            sweep_at: AtomicU64::new(MIN_SWEEP),
            sweeping: Mutex::new(()),
            tr_mode: shared.options.goldilocks_tr_mode,
            short_circuits: true,
            shared: shared.clone(),
            n: Counters::default(),
        }
    }

    /// The lazy algorithm without its short-circuit checks (for differential tests:
    /// short-circuits may only save work, never change a report).
    pub fn without_short_circuits(shared: &Arc<Shared>) -> Self {
        Goldilocks {
            short_circuits: false,
            ..Self::new(shared)
        }
    }

    /// §3 Fig. 3 lines 1–6: append a cell.
    fn append(&self, tid: Tid, action: Action) {
        let tail = {
            let mut list = self.list.lock();
            list.cells.push_back(Cell { tid, action });
            let tail = list.base + list.cells.len() as u64;
            self.tail.store(tail, Ordering::Release);
            tail
        };
        // Appends since the last sweep, from the tail (no counter of its own: each
        // shared counter would be one more locked instruction per synchronization).
        let since = tail.saturating_sub(self.swept_at.load(Ordering::Relaxed));
        if since >= self.sweep_at.load(Ordering::Relaxed) {
            self.sweep();
        }
    }

    /// Update-list GC: drop the cells before every record's `pos`.
    fn sweep(&self) {
        let Some(_guard) = self.sweeping.try_lock() else {
            return;
        };
        let mut min = self.tail.load(Ordering::Acquire);
        self.swept_at.store(min, Ordering::Relaxed);
        self.vars.for_each(|v| {
            for r in v.w.iter().chain(v.r.iter()) {
                min = min.min(r.pos);
            }
        });
        let mut list = self.list.lock();
        let mut dropped = 0;
        while list.base < min && list.cells.pop_front().is_some() {
            list.base += 1;
            dropped += 1;
        }
        self.n.cells_collected.fetch_add(dropped, Ordering::Relaxed);
        // Sweep again after as many appends as there are live cells (amortized O(1)).
        self.sweep_at
            .store((list.cells.len() as u64).max(MIN_SWEEP), Ordering::Relaxed);
    }

    /// The lazy lockset walk (`Apply-Lockset-Rules`, §3): does `Thread(t)` enter the
    /// lockset of the access `rec` by the current tail?
    fn walk(&self, rec: &Rec, t: Tid) -> bool {
        if rec.acc.tid == t {
            // Program order (what short-circuit 1 decides without the walk).
            return true;
        }
        self.n.walks.fetch_add(1, Ordering::Relaxed);
        let list = self.list.lock();
        let mut ls: Vec<Token> = vec![Token::Thread(rec.acc.tid)];
        // The sweep never drops a cell at or after a live record's `pos`.
        debug_assert!(rec.pos >= list.base, "update list collected too far");
        let start = rec.pos.saturating_sub(list.base) as usize;
        let mut walked = 0u64;
        let mut found = false;
        for c in list.cells.iter().skip(start) {
            walked += 1;
            let added = match c.action {
                Action::Source(tok) => {
                    (ls.contains(&Token::Thread(c.tid)) && !ls.contains(&tok)).then_some(tok)
                }
                Action::Sink(tok) => {
                    let me = Token::Thread(c.tid);
                    (ls.contains(&tok) && !ls.contains(&me)).then_some(me)
                }
            };
            if let Some(tok) = added {
                ls.push(tok);
                if tok == Token::Thread(t) {
                    found = true;
                    break;
                }
            }
        }
        self.n.cells_walked.fetch_add(walked, Ordering::Relaxed);
        found
    }

    /// `rec →hb` the current access of `t`, with the two short-circuits first.
    fn ordered(&self, rec: &Rec, t: &ThreadState, n: &mut LocalCounts) -> bool {
        n.checks += 1;
        if !self.short_circuits {
            return self.walk(rec, t.tid);
        }
        if rec.acc.tid == t.tid {
            n.short_circuit_thread += 1;
            return true;
        }
        if rec.alock.is_some_and(|l| t.holds(l)) {
            n.short_circuit_lock += 1;
            return true;
        }
        self.walk(rec, t.tid)
    }

    fn report(&self, loc: Loc, prev: &Rec, cur: &Acc) {
        let what = format!("{}-{} race", prev.acc.op, cur.op);
        self.shared.reporter.report(pair_warning(
            WarningKind::Race,
            "goldilocks",
            loc,
            &prev.acc,
            cur,
            what,
        ));
    }

    fn check(&self, t: &ThreadState, x: &mut VarState, loc: Loc, cur: Acc, n: &mut LocalCounts) {
        // The fresh record: pos = the tail now; alock re-chosen at every access (the
        // fix of the Fig. 3 bug).
        let rec = Rec {
            pos: self.tail.load(Ordering::Acquire),
            alock: t.held.last().copied(),
            acc: cur,
        };
        if self.tr_mode {
            // TR Fig. 1 R1: every access conflicts with the previous one.
            if let Some(prev) = &x.w
                && !self.ordered(prev, t, n)
            {
                self.report(loc, prev, &cur);
            }
            x.w = Some(rec);
            return;
        }
        match cur.op {
            Op::Read => {
                // A read of t since the last write already checked that write, and
                // this read follows it in program order.
                let seen = x.r.iter().any(|r| r.acc.tid == t.tid);
                if !seen
                    && let Some(w) = &x.w
                    && !self.ordered(w, t, n)
                {
                    self.report(loc, w, &cur);
                }
                match x.r.iter_mut().find(|r| r.acc.tid == t.tid) {
                    Some(r) => *r = rec,
                    None => x.r.push(rec),
                }
            }
            Op::Write => {
                if let Some(w) = &x.w
                    && !self.ordered(w, t, n)
                {
                    self.report(loc, w, &cur);
                }
                for r in &x.r {
                    if !self.ordered(r, t, n) {
                        self.report(loc, r, &cur);
                    }
                }
                x.w = Some(rec);
                x.r.clear();
            }
        }
    }
}

impl Pass for Goldilocks {
    fn name(&self) -> &'static str {
        "goldilocks"
    }
    fn wants_frames(&self) -> bool {
        false
    }
    fn thread_local(&self) -> Box<Local> {
        Box::new(LocalCounts::default())
    }
    fn access(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) -> Flow {
        let Some((loc, op, _)) = ev.kind.plain_access() else {
            return Flow::Forward;
        };
        let cur = Acc::of(t, ev, op);
        let mut spare = LocalCounts::default();
        let n = local.downcast_mut::<LocalCounts>().unwrap_or(&mut spare);
        self.vars
            .with(loc, VarState::default, |x| self.check(t, x, loc, cur, n));
        Flow::Forward
    }
    fn event(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) {
        use Action::{Sink, Source};
        if let EventKind::ThreadEnd = ev.kind
            && let Some(c) = local.downcast_mut::<LocalCounts>()
        {
            let take = |v: &mut u64| std::mem::take(v);
            self.n
                .checks
                .fetch_add(take(&mut c.checks), Ordering::Relaxed);
            self.n
                .short_circuit_thread
                .fetch_add(take(&mut c.short_circuit_thread), Ordering::Relaxed);
            self.n
                .short_circuit_lock
                .fetch_add(take(&mut c.short_circuit_lock), Ordering::Relaxed);
        }
        let action = match ev.kind {
            EventKind::Release { lock } => Source(Token::Lock(lock)),
            EventKind::Acquire { lock } => Sink(Token::Lock(lock)),
            EventKind::VolatileWrite { loc, .. } => Source(Token::Vol(loc.key())),
            EventKind::VolatileRead { loc } => Sink(Token::Vol(loc.key())),
            EventKind::Fork { child, .. } => Source(Token::Thread(child)),
            EventKind::Join { child } => Sink(Token::Thread(child)),
            EventKind::BarrierEnter {
                barrier,
                generation,
                ..
            } => Source(Token::Barrier(barrier, generation)),
            EventKind::BarrierExit {
                barrier,
                generation,
                ..
            } => Sink(Token::Barrier(barrier, generation)),
            _ => return,
        };
        self.append(t.tid, action);
    }
    fn stats(&self) -> Option<serde_json::Value> {
        let n = &self.n;
        let live = self.list.lock().cells.len();
        Some(serde_json::json!({
            "mode": if self.tr_mode { "tr" } else { "rw" },
            "checks": n.checks.load(Ordering::Relaxed),
            "short_circuit_thread": n.short_circuit_thread.load(Ordering::Relaxed),
            "short_circuit_lock": n.short_circuit_lock.load(Ordering::Relaxed),
            "walks": n.walks.load(Ordering::Relaxed),
            "cells_walked": n.cells_walked.load(Ordering::Relaxed),
            // Every cell ever appended is before the tail.
            "cells_appended": self.tail.load(Ordering::Relaxed),
            "cells_collected": n.cells_collected.load(Ordering::Relaxed),
            "cells_live": live,
        }))
    }
}
