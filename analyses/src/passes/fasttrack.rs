//! `fasttrack`: FastTrack with epochs and adaptive read state (Flanagan & Freund,
//! PLDI'09; the revised "FT2" rules of `notes/bigfoot.md` §1.5).
//!
//! - Handled events: plain reads and writes. Every synchronization rule (acquire,
//!   release, fork, join, volatile read/write, wait as release + acquire, barriers)
//!   is applied once by the chain's clock service (`crate::clocks`); the thread's
//!   clock `C_t` is `ThreadState::vc`.
//! - State per location: the last write `W` (an epoch) and the reads `R`, an epoch
//!   while reads are totally ordered and a vector clock (`READ_SHARED`) otherwise.
//! - Verdict: a race warning at every access that the rules flag; the first flagged
//!   access of a location is the first access racing with an earlier conflicting one.
//!
//! Concurrency: per-location state in a direct-mapped shadow table
//! (`super::shadow::PageTable`), mutated under the location's own lock. The two
//! same-epoch rules, which fire on most accesses, are decided without the lock: the
//! cell mirrors `W` and the read epoch in two atomic words (RoadRunner's unlocked
//! fast path). Only thread `t` ever stores an epoch of `t`, so seeing `W = E(t)` (or
//! `R = E(t)`) means `t`'s own earlier access in this epoch is the latest, which is
//! exactly when the locked rule would also return at once.

use crate::chain::Shared;
use crate::ctx::CtxId;
use crate::event::{Event, EventKind, Loc, Op, SiteId, Tid};
use crate::pass::{Flow, Local, Pass};
use crate::report::{Reporter, WarningKind};
use crate::thread::ThreadState;
use crate::vc::{Epoch, VectorClock};

use super::shadow::{Acc, PageTable, pair_warning};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Where and in which context an access happened; the thread is the one of the epoch
/// stored beside it and the operation follows from the field, so 16 bytes suffice.
#[derive(Copy, Clone, Default)]
struct Site {
    site: SiteId,
    ctx: CtxId,
    index: u64,
}

impl Site {
    fn of(cur: &Acc) -> Site {
        Site {
            site: cur.site,
            ctx: cur.ctx,
            index: cur.index,
        }
    }
    fn acc(self, e: Epoch, op: Op) -> Acc {
        Acc {
            tid: e.tid,
            op,
            site: self.site,
            ctx: self.ctx,
            index: self.index,
        }
    }
}

/// Concurrent reads (FT2's read vector clock) and the last read of each thread.
struct SharedReads {
    vc: VectorClock,
    accs: Vec<Option<Acc>>,
}

/// What only the slow path reads, under the cell's lock.
#[derive(Default)]
struct Slow {
    /// The access of `W` (meaningful when `W` is not `Epoch::NONE`).
    w_site: Site,
    /// The access of the read epoch (meaningful when it is not `Epoch::NONE`).
    r_site: Site,
    /// `Some` exactly when the read state is shared (`r == READ_SHARED`).
    shared: Option<Box<SharedReads>>,
}

/// One location, in one cache line: the last write `W` and the read epoch `R` as
/// packed epochs ([`READ_SHARED`] while the reads are a vector clock), and behind the
/// lock who made them. `w` and `r` are written only under the lock and read without
/// it by the same-epoch checks.
#[repr(C, align(64))]
#[derive(Default)]
struct Cell {
    w: AtomicU64,
    r: AtomicU64,
    slow: Mutex<Slow>,
}

/// The read mirror of a location whose reads are shared (never an epoch's packing).
const READ_SHARED: u64 = u64::MAX;

#[inline]
fn pack(e: Epoch) -> u64 {
    ((e.tid as u64) << 32) | e.clock as u64
}

#[inline]
fn unpack(x: u64) -> Epoch {
    Epoch::new((x >> 32) as Tid, x as u32)
}

/// The FT2 rules, for statistics (how often each fired) and tests.
#[derive(Copy, Clone, Debug)]
enum Rule {
    ReadSameEpoch,
    ReadSharedSameEpoch,
    ReadExclusive,
    ReadShare,
    ReadShared,
    WriteSameEpoch,
    WriteExclusive,
    WriteShared,
}

/// One thread's rule counts. Only that thread writes them, with a plain load and
/// store (no locked instruction); `stats` reads them after the threads ended.
#[derive(Default)]
struct RuleCounts([AtomicU64; 8]);

impl RuleCounts {
    #[inline]
    fn bump(&self, rule: Rule) {
        let c = &self.0[rule as usize];
        c.store(c.load(Relaxed) + 1, Relaxed);
    }
}

const RULE_NAMES: [&str; 8] = [
    "read_same_epoch",
    "read_shared_same_epoch",
    "read_exclusive",
    "read_share",
    "read_shared",
    "write_same_epoch",
    "write_exclusive",
    "write_shared",
];

pub struct FastTrack {
    vars: PageTable<Cell>,
    shared: Arc<Shared>,
    /// Per-thread rule counts, keyed by `tid * 8` (no downcast of the pass's
    /// thread-local state on the hot path).
    rules: PageTable<RuleCounts>,
}

fn set_acc(v: &mut Vec<Option<Acc>>, a: Acc) {
    let i = a.tid as usize;
    if v.len() <= i {
        v.resize(i + 1, None);
    }
    v[i] = Some(a);
}

impl FastTrack {
    pub fn new(shared: &Arc<Shared>) -> Self {
        FastTrack {
            vars: PageTable::default(),
            shared: shared.clone(),
            rules: PageTable::default(),
        }
    }

    fn race(r: &Reporter, loc: Loc, prev: Acc, cur: &Acc, what: &str) {
        r.report(pair_warning(
            WarningKind::Race,
            "fasttrack",
            loc,
            &prev,
            cur,
            format!("{what} race"),
        ));
    }

    /// FT2 `read(t,x)` past the unlocked same-epoch check; returns the rule that
    /// applied.
    fn read(&self, t: &ThreadState, x: &Cell, loc: Loc, cur: Acc) -> Rule {
        let e = t.epoch();
        let rep = &self.shared.reporter;
        let mut slow = x.slow.lock();
        let (w, r) = (unpack(x.w.load(Relaxed)), x.r.load(Relaxed));
        // [FT read same epoch] (again: another thread may have changed R meanwhile)
        if r == pack(e) {
            return Rule::ReadSameEpoch;
        }
        if let Some(sh) = &slow.shared
            && sh.vc.get(t.tid) == e.clock
        {
            // [FT read shared same epoch]
            return Rule::ReadSharedSameEpoch;
        }
        // [FT write-read race]
        if w.tid != t.tid && !w.leq(&t.vc) {
            Self::race(rep, loc, slow.w_site.acc(w, Op::Write), &cur, "write-read");
        }
        let slow = &mut *slow;
        match &mut slow.shared {
            None => {
                let r = unpack(r);
                if r.tid == t.tid || r.leq(&t.vc) {
                    // [FT read exclusive]
                    x.r.store(pack(e), Relaxed);
                    slow.r_site = Site::of(&cur);
                    Rule::ReadExclusive
                } else {
                    // [FT read share]
                    let mut vc = VectorClock::new();
                    vc.set(r.tid, r.clock);
                    vc.set(t.tid, e.clock);
                    let mut accs = Vec::new();
                    set_acc(&mut accs, slow.r_site.acc(r, Op::Read));
                    set_acc(&mut accs, cur);
                    slow.shared = Some(Box::new(SharedReads { vc, accs }));
                    x.r.store(READ_SHARED, Relaxed);
                    Rule::ReadShare
                }
            }
            // [FT read shared]
            Some(sh) => {
                sh.vc.set(t.tid, e.clock);
                set_acc(&mut sh.accs, cur);
                Rule::ReadShared
            }
        }
    }

    /// FT2 `write(t,x)` past the unlocked same-epoch check; returns the rule that
    /// applied.
    fn write(&self, t: &ThreadState, x: &Cell, loc: Loc, cur: Acc) -> Rule {
        let e = t.epoch();
        let rep = &self.shared.reporter;
        let mut slow = x.slow.lock();
        let (w, r) = (unpack(x.w.load(Relaxed)), x.r.load(Relaxed));
        // [FT write same epoch]
        if w == e {
            return Rule::WriteSameEpoch;
        }
        // [FT write-write race]
        if w.tid != t.tid && !w.leq(&t.vc) {
            Self::race(rep, loc, slow.w_site.acc(w, Op::Write), &cur, "write-write");
        }
        match &slow.shared {
            // [FT read-write race]
            None => {
                let r = unpack(r);
                if r.tid != t.tid && !r.leq(&t.vc) {
                    Self::race(rep, loc, slow.r_site.acc(r, Op::Read), &cur, "read-write");
                }
            }
            // [FT shared-read-write race], one warning per unordered reader
            Some(sh) => {
                for (u, c) in sh.vc.entries() {
                    if c > t.vc.get(u)
                        && let Some(prev) = sh.accs.get(u as usize).copied().flatten()
                    {
                        Self::race(rep, loc, prev, &cur, "read-write");
                    }
                }
            }
        }
        // [FT write exclusive / write shared]: FT2 keeps a shared read state.
        x.w.store(pack(e), Relaxed);
        slow.w_site = Site::of(&cur);
        match slow.shared {
            None => Rule::WriteExclusive,
            Some(_) => Rule::WriteShared,
        }
    }

    /// Number of locations with shadow state, and of those whose reads are shared
    /// (statistics).
    fn census(&self) -> (usize, usize) {
        let (mut n, mut shared) = (0, 0);
        self.vars.for_each_cell(|c| {
            if c.w.load(Relaxed) != 0 || c.r.load(Relaxed) != 0 {
                n += 1;
                shared += usize::from(c.r.load(Relaxed) == READ_SHARED);
            }
        });
        (n, shared)
    }

    /// Number of locations with shadow state (statistics).
    pub fn locations(&self) -> usize {
        self.census().0
    }
}

impl Pass for FastTrack {
    fn name(&self) -> &'static str {
        "fasttrack"
    }
    fn access(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) -> Flow {
        let rule = match ev.kind {
            EventKind::Read { loc } => {
                let cell = self.vars.get(loc.key());
                if cell.r.load(Relaxed) == pack(t.epoch()) {
                    Rule::ReadSameEpoch
                } else {
                    let cur = Acc::of(t, ev, Op::Read);
                    self.read(t, cell, loc, cur)
                }
            }
            EventKind::Write { loc, .. } => {
                let cell = self.vars.get(loc.key());
                if cell.w.load(Relaxed) == pack(t.epoch()) {
                    Rule::WriteSameEpoch
                } else {
                    let cur = Acc::of(t, ev, Op::Write);
                    self.write(t, cell, loc, cur)
                }
            }
            _ => return Flow::Forward,
        };
        self.rules.get(u64::from(t.tid) << 3).bump(rule);
        Flow::Forward
    }
    fn stats(&self) -> Option<serde_json::Value> {
        let (locations, shared) = self.census();
        let mut v = serde_json::json!({
            "locations": locations,
            "read_shared_locations": shared,
        });
        let mut totals = [0u64; 8];
        self.rules.for_each_cell(|c| {
            for (t, n) in totals.iter_mut().zip(&c.0) {
                *t += n.load(Relaxed);
            }
        });
        for (name, n) in RULE_NAMES.iter().zip(totals) {
            v[*name] = n.into();
        }
        Some(v)
    }
}
