//! `fasttrack`: FastTrack with epochs and adaptive read state (Flanagan & Freund,
//! PLDI'09; the revised "FT2" rules of Rhodes, *Access Classification for Race
//! Detection Optimization*, UCSC 2019, §1.5).
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
//! Concurrency: per-location state in one direct-mapped shadow table
//! (`super::shadow::PageTable`) of 64-byte cells, one cache line each: the hot words
//! (`W` and `R` as packed epochs, or `R` as a tagged pointer to the shared read
//! clock), the shared read state, and the lock with the sites of `W` and `R`. The
//! slow path mutates a cell under its lock. The three same-epoch rules, which fire
//! on most accesses, are decided from the hot words alone without the lock
//! (RoadRunner's unlocked fast path; the JIT performs the same test inline,
//! `crate::pass::InlineCheck`): only thread `t` ever stores an epoch of `t`, so
//! seeing `W = E(t)`, `R = E(t)` or `R[t] = C_t(t)` means `t`'s own access in this
//! epoch is the latest, exactly when the locked rule would also return at once.

use crate::ctx::CtxId;
use crate::event::{Event, EventKind, Loc, Op, SiteId, Tid};
use crate::pass::{
    FASTTRACK_CELL_BYTES, FASTTRACK_R_OFF, FASTTRACK_SHARED_TAG, FASTTRACK_W_OFF, Flow,
    InlineCheck, InlineChecks, Local, Pass,
};
use crate::report::{Reporter, WarningKind};
use crate::shared::Shared;
use crate::thread::ThreadState;
use crate::vc::Epoch;

use super::shadow::{Acc, PageTable, pair_warning};
use crate::spin::SpinCell;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{
    AtomicPtr, AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

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

/// Concurrent reads: FT2's read vector clock, as atomics so that a thread can run the
/// [FT read shared same epoch] check on its own entry without the cell's lock (only
/// the lock holder stores, and only thread `u` ever stores a clock of `u` into entry
/// `u`), and the last read of each thread (used under the cell's lock only).
struct SharedReads {
    /// `[n, R[0], …, R[n-1]]`: the length first, so that the hot word `r` can point
    /// straight at the array (see [`shared_clock`]).
    clocks: Box<[AtomicU32]>,
    accs: Mutex<Vec<Option<Acc>>>,
    /// The smaller clock array this one replaced: lock-free readers may still hold
    /// it, so it lives as long as the cell.
    _retired: Option<Box<SharedReads>>,
}

impl SharedReads {
    /// Entries `(u, R[u])` with `R[u] > 0`.
    fn entries(&self) -> impl Iterator<Item = (Tid, u32)> + '_ {
        self.clocks[1..]
            .iter()
            .enumerate()
            .map(|(u, c)| (u as Tid, c.load(Relaxed)))
            .filter(|(_, c)| *c > 0)
    }
    /// `R[t]` (0 past the end).
    fn get(&self, t: Tid) -> u32 {
        self.clocks
            .get(1 + t as usize)
            .map_or(0, |c| c.load(Relaxed))
    }
    fn len(&self) -> usize {
        self.clocks.len() - 1
    }
}

/// `R[t]` of a shared read state from the cell's tagged pointer `r`, without the
/// lock: one dependent load, usually in the same cache line as the length.
#[inline]
fn shared_clock(r: u64, t: Tid) -> u32 {
    let p = (r & !SHARED_TAG) as *const AtomicU32;
    // SAFETY: a tagged `r` holds the address of the `clocks` array of a
    // `SharedReads` owned by the location's cell (current or retired), which
    // lives until the shadow tables are dropped; `[0]` is its length, and
    // `1 + t` is checked against it.
    unsafe {
        let n = (*p).load(Relaxed);
        if t < n {
            (*p.add(1 + t as usize)).load(Relaxed)
        } else {
            0
        }
    }
}

/// What only the slow path reads, under the cell's lock.
#[derive(Default)]
struct Slow {
    /// The access of `W` (meaningful when `W` is not `Epoch::NONE`).
    w_site: Site,
    /// The access of the read epoch (meaningful when it is not `Epoch::NONE`).
    r_site: Site,
}

/// One location's state, one cache line: first what the same-epoch checks read
/// (the last write `W` and the read epoch `R` as packed epochs; while the reads are
/// a vector clock, `r` is that clock's address tagged with [`SHARED_TAG`]), then
/// what only the slow path needs: the shared read clocks (null until the reads
/// become concurrent; FT2 never returns to an epoch) and, behind the cell's lock,
/// who made `W` and `R`. `w`, `r` and `shared` are written only under the lock.
/// The slow path thus touches the line the same-epoch check already loaded, and
/// its lock is one swap to take and a plain store to release.
#[repr(C, align(64))]
#[derive(Default)]
struct Cell {
    w: AtomicU64,
    r: AtomicU64,
    shared: AtomicPtr<SharedReads>,
    slow: SpinCell<Slow>,
}

impl Cell {
    /// The shared read clocks, if the reads are shared.
    #[inline]
    fn shared(&self) -> Option<&SharedReads> {
        let p = self.shared.load(Acquire);
        // SAFETY: a non-null `shared` came from `Box::into_raw` in `set_shared` and
        // is freed only by `drop` (which has `&mut self`); an array it replaced lives
        // on in `retired`. So it outlives this borrow of `self`.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// `R[t] := c` on the shared read clocks (under the lock), growing them if `t`
    /// has no entry yet, and point `r` at them; `acc` becomes `t`'s last read.
    fn set_shared(&self, t: Tid, c: u32, acc: Acc) {
        let cur = self.shared();
        if cur.is_none_or(|sh| (t as usize) >= sh.len()) {
            let old = self.shared.load(Acquire);
            let n = (t as usize + 1).max(cur.map_or(0, |sh| 2 * sh.len()));
            let clocks: Box<[AtomicU32]> = std::iter::once(n as u32)
                .chain((0..n).map(|u| cur.map_or(0, |sh| sh.get(u as Tid))))
                .map(AtomicU32::new)
                .collect();
            let accs = cur
                .map(|sh| std::mem::take(&mut *sh.accs.lock()))
                .unwrap_or_default();
            // SAFETY: `old` is null or the live array from a previous `set_shared`;
            // its ownership moves into `retired`, so it is not freed while readers
            // may hold it.
            let retired = (!old.is_null()).then(|| unsafe { Box::from_raw(old) });
            let fresh = Box::new(SharedReads {
                clocks,
                accs: Mutex::new(accs),
                _retired: retired,
            });
            let addr = fresh.clocks.as_ptr() as u64;
            debug_assert_eq!(addr & SHARED_TAG, 0);
            self.shared.store(Box::into_raw(fresh), Release);
            self.r.store(addr | SHARED_TAG, Release);
        }
        let sh = self.shared().expect("installed above");
        sh.clocks[1 + t as usize].store(c, Relaxed);
        set_acc(&mut sh.accs.lock(), acc);
    }
}

impl Drop for Cell {
    fn drop(&mut self) {
        let p = *self.shared.get_mut();
        if !p.is_null() {
            // SAFETY: from `Box::into_raw` in `set_shared`; no reader is left.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// The tag of `Cell::r` while the reads are shared (an epoch's packing never has it:
/// thread ids stay below 2^31).
const SHARED_TAG: u64 = 1 << 63;

// The layout `InlineCheck::FastTrack` promises producers.
const _: () = {
    assert!(SHARED_TAG == FASTTRACK_SHARED_TAG);
    assert!(std::mem::size_of::<Cell>() == FASTTRACK_CELL_BYTES as usize);
    assert!(std::mem::offset_of!(Cell, w) == FASTTRACK_W_OFF as usize);
    assert!(std::mem::offset_of!(Cell, r) == FASTTRACK_R_OFF as usize);
};

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
/// Aligned to two cache lines so that threads never share one (false sharing on
/// every access otherwise; adjacent-line prefetch pairs lines).
#[repr(align(128))]
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
    /// Per location, its cell.
    cells: PageTable<Cell>,
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
            cells: PageTable::default(),
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
    fn read(&self, t: &ThreadState, c: &Cell, loc: Loc, cur: Acc) -> Rule {
        let e = t.epoch();
        let rep = &self.shared.reporter;
        let mut slow = c.slow.lock();
        let (w, r) = (Epoch::unpack(c.w.load(Relaxed)), c.r.load(Relaxed));
        // [FT read same epoch] (again: another thread may have changed R meanwhile)
        if r == Epoch::pack(e) {
            return Rule::ReadSameEpoch;
        }
        if let Some(sh) = c.shared()
            && sh.get(t.tid) == e.clock
        {
            // [FT read shared same epoch]
            return Rule::ReadSharedSameEpoch;
        }
        // [FT write-read race]
        if w.tid != t.tid && !w.leq(&t.vc) {
            Self::race(rep, loc, slow.w_site.acc(w, Op::Write), &cur, "write-read");
        }
        if c.shared().is_some() {
            // [FT read shared]
            c.set_shared(t.tid, e.clock, cur);
            return Rule::ReadShared;
        }
        let r = Epoch::unpack(r);
        if r.tid == t.tid || r.leq(&t.vc) {
            // [FT read exclusive]
            c.r.store(Epoch::pack(e), Relaxed);
            slow.r_site = Site::of(&cur);
            Rule::ReadExclusive
        } else {
            // [FT read share]
            c.set_shared(r.tid, r.clock, slow.r_site.acc(r, Op::Read));
            c.set_shared(t.tid, e.clock, cur);
            Rule::ReadShare
        }
    }

    /// FT2 `write(t,x)` past the unlocked same-epoch check; returns the rule that
    /// applied.
    fn write(&self, t: &ThreadState, c: &Cell, loc: Loc, cur: Acc) -> Rule {
        let e = t.epoch();
        let rep = &self.shared.reporter;
        let mut slow = c.slow.lock();
        let (w, r) = (Epoch::unpack(c.w.load(Relaxed)), c.r.load(Relaxed));
        // [FT write same epoch]
        if w == e {
            return Rule::WriteSameEpoch;
        }
        // [FT write-write race]
        if w.tid != t.tid && !w.leq(&t.vc) {
            Self::race(rep, loc, slow.w_site.acc(w, Op::Write), &cur, "write-write");
        }
        match c.shared() {
            // [FT read-write race]
            None => {
                let r = Epoch::unpack(r);
                if r.tid != t.tid && !r.leq(&t.vc) {
                    Self::race(rep, loc, slow.r_site.acc(r, Op::Read), &cur, "read-write");
                }
            }
            // [FT shared-read-write race], one warning per unordered reader
            Some(sh) => {
                let accs = sh.accs.lock();
                for (u, c) in sh.entries() {
                    if c > t.vc.get(u)
                        && let Some(prev) = accs.get(u as usize).copied().flatten()
                    {
                        Self::race(rep, loc, prev, &cur, "read-write");
                    }
                }
            }
        }
        // [FT write exclusive / write shared]: FT2 keeps a shared read state.
        c.w.store(Epoch::pack(e), Relaxed);
        slow.w_site = Site::of(&cur);
        match c.shared() {
            None => Rule::WriteExclusive,
            Some(_) => Rule::WriteShared,
        }
    }

    /// Number of locations with shadow state, and of those whose reads are shared
    /// (statistics).
    fn census(&self) -> (usize, usize) {
        let (mut n, mut shared) = (0, 0);
        self.cells.for_each_cell(|c| {
            if c.w.load(Relaxed) != 0 || c.r.load(Relaxed) != 0 {
                n += 1;
                shared += usize::from(c.r.load(Relaxed) & SHARED_TAG != 0);
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
                let key = loc.key();
                let h = self.cells.get(key);
                let e = t.epoch();
                let r = h.r.load(Acquire);
                if r == Epoch::pack(e) {
                    Rule::ReadSameEpoch
                } else if r & SHARED_TAG != 0 && shared_clock(r, t.tid) == e.clock {
                    Rule::ReadSharedSameEpoch
                } else {
                    let cur = Acc::of(t, ev, Op::Read);
                    self.read(t, h, loc, cur)
                }
            }
            EventKind::Write { loc, .. } => {
                let key = loc.key();
                let h = self.cells.get(key);
                if h.w.load(Relaxed) == Epoch::pack(t.epoch()) {
                    Rule::WriteSameEpoch
                } else {
                    let cur = Acc::of(t, ev, Op::Write);
                    self.write(t, h, loc, cur)
                }
            }
            _ => return Flow::Forward,
        };
        self.rules.get(u64::from(t.tid) << 3).bump(rule);
        Flow::Forward
    }
    fn inline_check(&self) -> Option<InlineCheck> {
        Some(InlineCheck::FastTrack {
            top: self.cells.top_addr(),
        })
    }
    fn inline_checked(&self, t: &ThreadState, _local: &mut Local, checks: &[InlineChecks]) {
        let c = self.rules.get(u64::from(t.tid) << 3);
        for (rule, n) in [
            (
                Rule::ReadSameEpoch,
                checks.iter().map(|c| c.reads_same).sum(),
            ),
            (
                Rule::ReadSharedSameEpoch,
                checks.iter().map(|c| c.reads_shared_same).sum(),
            ),
            (
                Rule::WriteSameEpoch,
                checks.iter().map(|c| c.writes_same).sum::<u64>(),
            ),
        ] {
            let a = &c.0[rule as usize];
            a.store(a.load(Relaxed) + n, Relaxed);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(tid: Tid) -> Acc {
        Acc {
            tid,
            op: Op::Read,
            site: SiteId(tid + 1),
            ctx: CtxId::ROOT,
            index: 0,
        }
    }

    #[test]
    fn shared_read_clocks_grow_and_stay_readable_through_the_hot_half() {
        let c = Cell::default();
        let h = &c;
        c.set_shared(1, 4, acc(1));
        let r1 = h.r.load(Relaxed);
        assert_ne!(r1 & SHARED_TAG, 0);
        assert_eq!(shared_clock(r1, 1), 4);
        assert_eq!(shared_clock(r1, 0), 0);
        assert_eq!(shared_clock(r1, 7), 0, "past the end");
        // Growing moves the clocks to a new array; the old one stays valid.
        c.set_shared(9, 2, acc(9));
        let r2 = h.r.load(Relaxed);
        assert_ne!(r1, r2);
        assert_eq!(shared_clock(r2, 1), 4);
        assert_eq!(shared_clock(r2, 9), 2);
        assert_eq!(shared_clock(r1, 1), 4, "retired array still readable");
        let sh = c.shared().unwrap();
        assert_eq!(sh.entries().collect::<Vec<_>>(), vec![(1, 4), (9, 2)]);
        let accs = sh.accs.lock();
        assert_eq!(accs[1].map(|a| a.site), Some(SiteId(2)));
        assert_eq!(accs[9].map(|a| a.site), Some(SiteId(10)));
    }

    #[test]
    fn epochs_pack_and_unpack() {
        for e in [Epoch::NONE, Epoch::new(0, 1), Epoch::new(3, u32::MAX)] {
            assert_eq!(Epoch::unpack(Epoch::pack(e)), e);
            assert_eq!(Epoch::pack(e) & SHARED_TAG, 0);
        }
    }
}
