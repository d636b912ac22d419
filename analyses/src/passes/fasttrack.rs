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
//! (`super::shadow::PageTable`) of 16-byte hot cells, four to a cache line: `W` with
//! the cell's lock bit, and `R` as a packed epoch or, once reads are shared, a tag
//! with a cache of two readers' epochs (see [`Cell`]). Each hot cell has a cold word
//! in the second half of its leaf: the compact sites of `W` and `R`, or the pointer
//! to the shared read clock, which then owns `W`'s and its readers' sites (see
//! [`Cold`]); the trace
//! lines of offline events live in a side table that stays empty online. The slow
//! path mutates a cell under its lock. The three same-epoch rules, which fire on
//! most accesses, are decided from the hot words alone without the lock (RoadRunner's unlocked fast path; the JIT performs
//! the same test inline, `crate::pass::InlineCheck`): only thread `t` ever stores an
//! epoch of `t`, so seeing `W = E(t)`, `R = E(t)` or `R[t] = C_t(t)` means `t`'s own
//! access in this epoch is the latest, exactly when the locked rule would also
//! return at once. A held lock sets a bit no epoch has, so the write check never
//! hits while another thread is changing the cell.

use crate::ctx::CtxId;
use crate::event::{Event, EventKind, Loc, ObjId, Op, SiteId, Tid};
use crate::pass::{
    FASTTRACK_CELL_BYTES, FASTTRACK_COLD_BASE, FASTTRACK_LOCKED, FASTTRACK_R_OFF,
    FASTTRACK_R_SID_OFF, FASTTRACK_READ_SLOT, FASTTRACK_SHARED_TAG, FASTTRACK_W_OFF,
    FASTTRACK_W_SID_OFF, Flow, InlineCheck, InlineChecks, Local, Pass, fasttrack_read_key,
    fasttrack_sid,
};
use crate::report::{Reporter, WarningKind};
use crate::shared::Shared;
use crate::thread::ThreadState;
use crate::vc::Epoch;

use super::shadow::{Acc, PageTable, Zeroed, cold_base, pair_warning};
use hashbrown::HashMap;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// Where and in which context an access happened, as one `u32` (a *compact site*):
/// [`fasttrack_sid`] where the site and the context are small enough, as they are
/// in every program of the corpus (the form generated code stores); otherwise a
/// number this table gives the pair, with bit 31 set. The thread is the one of the
/// epoch stored beside it, the operation follows from the field, and the trace line
/// (offline only) lives in [`Lines`].
#[derive(Default)]
struct Sids(Mutex<(HashMap<u64, u32>, Vec<u64>)>);

/// Bit 31 of a compact site: a number of [`Sids`], not [`fasttrack_sid`]'s form.
const NUMBERED: u32 = 1 << 31;

impl Sids {
    /// The compact site of `cur`.
    #[inline]
    fn of(&self, cur: &Acc) -> u32 {
        fasttrack_sid(cur.site.0, cur.ctx.0).unwrap_or_else(|| self.number(cur))
    }

    #[cold]
    fn number(&self, cur: &Acc) -> u32 {
        let pair = u64::from(cur.site.0) | u64::from(cur.ctx.0) << 32;
        let mut g = self.0.lock();
        let (map, all) = &mut *g;
        *map.entry(pair).or_insert_with(|| {
            // 2^31 pairs would take 48 GiB here before the numbers ran out.
            let n = u32::try_from(all.len()).expect("fewer than 2^31 sites in contexts");
            all.push(pair);
            NUMBERED | n
        })
    }

    /// The site and context of a compact site.
    fn get(&self, sid: u32) -> (SiteId, CtxId) {
        use crate::pass::FASTTRACK_SID_CTX_SHIFT as SHIFT;
        if sid & NUMBERED == 0 {
            return (SiteId(sid & ((1 << SHIFT) - 1)), CtxId(sid >> SHIFT));
        }
        let pair = self.0.lock().1[(sid & !NUMBERED) as usize];
        (SiteId(pair as u32), CtxId((pair >> 32) as u32))
    }

    /// The access an epoch `e` and its compact site stand for.
    fn acc(&self, sid: u32, index: u64, e: Epoch, op: Op) -> Acc {
        let (site, ctx) = self.get(sid);
        Acc {
            tid: e.tid,
            op,
            site,
            ctx,
            index,
        }
    }
}

/// Concurrent reads, in one allocation of `u32` words (most shared locations are read
/// by two or three threads, and a program may have a million of them: lufact):
/// `[lines, w, n, R[0..n], site[0..n], ctx[0..n]]`, where `w` is the compact site of
/// the cell's `W` (which the cold word, now this array's pointer, no longer holds),
/// and when `lines` is 1 (events with
/// trace lines, offline) `line_lo[0..n], line_hi[0..n]` after them. `R` is FT2's
/// read vector clock, as atomics so that a thread can run the [FT read shared same
/// epoch] check on its own entry without the cell's lock (only the lock holder
/// stores, and only thread `u` ever stores a clock of `u` into entry `u`); the cell's
/// tagged `r` points straight at `n` ([`shared_clock`]). The rest is the last read of
/// each thread `u` with `R[u] > 0`, used under the cell's lock only.
#[derive(Copy, Clone)]
struct SharedReads<'a>(&'a [AtomicU32]);

/// Words of a [`SharedReads`] before its length: `lines` and `w`.
const HEAD: usize = 2;

/// Words of a [`SharedReads`] for `n` threads.
const fn shared_words(n: usize, lines: bool) -> usize {
    HEAD + 1 + n * if lines { 5 } else { 3 }
}

/// Every [`SharedReads`] the cells of one table have had, current or replaced by a
/// larger one, freed together when the table is dropped: a replaced clock array
/// stays readable for lock-free readers that may still hold it, and a cell needs no
/// drop of its own, so the shadow of a large heap is unmapped at the end without
/// reading every cell again (crypt: 36 M cells, 1.15 GB).
#[derive(Default)]
struct ReadsPool(Mutex<Vec<KeptReads>>);

/// The first word of a `Box<[AtomicU32]>` of [`shared_words`] words (from its own
/// first two words), owned by its [`ReadsPool`].
struct KeptReads(*mut AtomicU32);

// SAFETY: atomics only; the pointer is turned back into its box only when the pool
// is dropped.
unsafe impl Send for KeptReads {}

impl ReadsPool {
    /// A new, empty shared read state for threads `0..n`, kept until the pool is
    /// dropped.
    fn alloc(&self, n: usize, lines: bool) -> SharedReads<'_> {
        let len = shared_words(n, lines);
        let words: Box<[AtomicU32]> = (0..len).map(|_| AtomicU32::new(0)).collect();
        words[0].store(u32::from(lines), Relaxed);
        words[HEAD].store(n as u32, Relaxed);
        let p = Box::into_raw(words) as *mut AtomicU32;
        self.0.lock().push(KeptReads(p));
        // SAFETY: `len` words from `Box::into_raw`, freed only when the pool is.
        SharedReads(unsafe { std::slice::from_raw_parts(p, len) })
    }
}

impl Drop for ReadsPool {
    fn drop(&mut self) {
        for KeptReads(p) in self.0.get_mut().drain(..) {
            // SAFETY: from `Box::into_raw` in `alloc`, whose first two words still
            // give its length; freed once, here; the cells that point at it are
            // being dropped with the pool's table.
            unsafe {
                let n = (*p.add(HEAD)).load(Relaxed) as usize;
                let len = shared_words(n, (*p).load(Relaxed) != 0);
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, len)));
            }
        }
    }
}

impl<'a> SharedReads<'a> {
    /// The shared reads a tagged `r` points at.
    ///
    /// # Safety
    /// `r` must be a cell's tagged `r` word (or one it had), whose [`ReadsPool`]
    /// outlives `'a`.
    unsafe fn of(r: u64) -> SharedReads<'a> {
        let p = (r & !SHARED_TAG) as *const AtomicU32;
        // SAFETY: `p` points at the length of a kept allocation (caller), `HEAD`
        // words into it; the lines flag and the length give its size.
        unsafe {
            let start = p.sub(HEAD);
            let n = (*p).load(Relaxed) as usize;
            let len = shared_words(n, (*start).load(Relaxed) != 0);
            SharedReads(std::slice::from_raw_parts(start, len))
        }
    }

    fn len(self) -> usize {
        self.0[HEAD].load(Relaxed) as usize
    }

    fn has_lines(self) -> bool {
        self.0[0].load(Relaxed) != 0
    }

    /// The compact site of the cell's `W`, kept here while the reads are shared.
    fn w_sid(self) -> &'a AtomicU32 {
        &self.0[1]
    }

    /// Word `u` of part `part` (0: `R`, 1: sites, 2: contexts, 3, 4: lines).
    fn word(self, part: usize, u: Tid) -> &'a AtomicU32 {
        &self.0[HEAD + 1 + part * self.len() + u as usize]
    }

    /// Entries `(u, R[u])` with `R[u] > 0`.
    fn entries(self) -> impl Iterator<Item = (Tid, u32)> + 'a {
        let n = self.len();
        self.0[HEAD + 1..HEAD + 1 + n]
            .iter()
            .enumerate()
            .map(|(u, c)| (u as Tid, c.load(Relaxed)))
            .filter(|(_, c)| *c > 0)
    }

    /// `R[t]` (0 past the end).
    fn get(self, t: Tid) -> u32 {
        if (t as usize) < self.len() {
            self.word(0, t).load(Relaxed)
        } else {
            0
        }
    }

    /// Thread `u`'s last read (an entry of [`SharedReads::entries`]).
    fn acc(self, u: Tid) -> Acc {
        let w = |part| self.word(part, u).load(Relaxed);
        let index = if self.has_lines() {
            u64::from(w(3)) | u64::from(w(4)) << 32
        } else {
            0
        };
        Acc {
            tid: u,
            op: Op::Read,
            site: SiteId(w(1)),
            ctx: CtxId(w(2)),
            index,
        }
    }

    /// `R[u] := c`, with `a` as `u`'s last read (`u` below the length, a line only
    /// with lines; by the lock holder).
    fn set(self, u: Tid, c: u32, a: &Acc) {
        debug_assert!(a.index == 0 || self.has_lines());
        self.word(1, u).store(a.site.0, Relaxed);
        self.word(2, u).store(a.ctx.0, Relaxed);
        if self.has_lines() {
            self.word(3, u).store(a.index as u32, Relaxed);
            self.word(4, u).store((a.index >> 32) as u32, Relaxed);
        }
        self.word(0, u).store(c, Relaxed);
    }

    /// The address a tagged `r` holds: that of the length.
    fn addr(self) -> u64 {
        self.0[HEAD..].as_ptr() as u64
    }
}

/// Whether the read-shared cell whose tagged `r` word (its cache of recent readers,
/// [`fasttrack_read_key`]) is `cache` holds `t`'s read in epoch `e`.
#[inline]
fn cached_read(cache: u64, e: Epoch) -> bool {
    let (mask, key) = fasttrack_read_key(e.tid, e.clock);
    cache & mask == key
}

/// `R[t]` of a shared read state from the tagged pointer `r` to it (a cell's cold
/// word while the reads are shared), without the lock: one dependent load,
/// usually in the same cache line as the length.
#[inline]
fn shared_clock(r: u64, t: Tid) -> u32 {
    let p = (r & !SHARED_TAG) as *const AtomicU32;
    // SAFETY: a tagged pointer holds the address of the length of a
    // `SharedReads` (the cell's current one or one it replaced) owned by the
    // table's `ReadsPool`, which lives until the shadow tables are dropped; `[0]`
    // is its length, and `1 + t` is checked against it.
    unsafe {
        let n = (*p).load(Relaxed);
        if t < n {
            (*p.add(1 + t as usize)).load(Relaxed)
        } else {
            0
        }
    }
}

/// The lock bit of a cell, in its `w` word (a packed epoch never has it: thread ids
/// stay below 2^30).
const LOCKED: u64 = 1 << 62;

/// One location's hot state in 16 bytes, four cells to a cache line (the words
/// every check reads; the rest is in its [`Cold`] twin):
/// - `w`: the last write `W` as a packed epoch, and the cell's lock ([`LOCKED`]);
/// - `r`: the read epoch `R` as a packed epoch or, once reads are concurrent (FT2
///   never returns to an epoch), [`SHARED_TAG`] with a cache of two recent readers'
///   epochs in the other bits ([`fasttrack_read_key`]: the thread's slot holds
///   `(t, R[t])` when it was set), so that a read-shared same-epoch read is
///   usually decided from this word alone, without the loads of the cold word's
///   pointer and of the clock array (a cache miss each when the shared locations
///   are many, as the vector JavaGrande's sparse product reads at random).
///
/// Everything but the lock-free same-epoch checks runs under the lock, which is
/// taken by a compare-and-swap that sets [`LOCKED`] on `w` and released by storing
/// the (possibly new) `W`. A held lock makes `w` differ from every epoch, so the
/// unlocked write check (here and in generated code) falls through to the locked
/// path and waits; the read checks look only at `r` (and, shared, the pointer in
/// the cold word), which the lock holder stores with release order after what
/// they lead to is complete.
#[repr(C, align(16))]
#[derive(Default)]
struct Cell {
    w: AtomicU64,
    r: AtomicU64,
}

/// The cold state of a location, one word in the second half of its cell's leaf
/// ([`PageTable::with_cold`]; generated code finds it from the hot cell and the
/// key, [`FASTTRACK_COLD_BASE`]), read only by the rules past the same-epoch checks
/// and by reports, written under the cell's lock:
/// - while `R` is an epoch, the compact sites ([`Sids`]) of `W` (low half,
///   [`FASTTRACK_W_SID_OFF`]) and of `R` (high half, [`FASTTRACK_R_SID_OFF`]);
/// - while the reads are shared, the address of the shared read clock tagged with
///   [`SHARED_TAG`] (the `SharedReads` the cell owns, with `W`'s compact site and
///   its readers' clocks and sites: [`SharedReads::of`]).
#[repr(transparent)]
#[derive(Default)]
struct Cold(AtomicU64);

/// A location's hot cell and its cold word.
#[derive(Copy, Clone)]
struct Slot<'a> {
    hot: &'a Cell,
    cold: &'a Cold,
}

/// The held lock of a [`Cell`]: `w` is the unlocked `W`, stored back on drop.
struct Locked<'a> {
    cell: Slot<'a>,
    w: u64,
}

impl<'a> Slot<'a> {
    /// The pair a table with cold words holds for a key.
    #[inline]
    fn of((hot, cold): (&'a Cell, &'a Cold)) -> Self {
        Slot { hot, cold }
    }

    #[inline]
    fn lock(self) -> Locked<'a> {
        let w = self.hot.w.load(Relaxed);
        if w & LOCKED == 0
            && self
                .hot
                .w
                .compare_exchange(w, w | LOCKED, Acquire, Relaxed)
                .is_ok()
        {
            return Locked { cell: self, w };
        }
        self.lock_slow()
    }

    #[cold]
    fn lock_slow(self) -> Locked<'a> {
        let w = crate::spin::lock_bit(&self.hot.w, LOCKED);
        Locked { cell: self, w }
    }
}

impl Locked<'_> {
    /// The shared reads, if the reads are shared.
    #[inline]
    fn shared(&self) -> Option<SharedReads<'_>> {
        let r = self.cell.hot.r.load(Relaxed);
        // SAFETY: while `r` is tagged, the cold word is a tagged pointer at a
        // `SharedReads` that `set_shared` took from the table's `ReadsPool`, which
        // outlives the cells.
        (r & SHARED_TAG != 0).then(|| unsafe { SharedReads::of(self.cell.cold.0.load(Relaxed)) })
    }

    /// The compact site of `W`.
    fn w_sid(&self) -> u32 {
        match self.shared() {
            Some(sh) => sh.w_sid().load(Relaxed),
            None => self.cell.cold.0.load(Relaxed) as u32,
        }
    }

    /// Make `sid` the compact site of `W` (before `W` itself changes).
    ///
    /// The cold word's halves are written only together with `W` and `R`, which
    /// never return to 0: while `R` is 0 the other half is 0 too, and the word is
    /// stored without being read. A location's first access so writes its cold page
    /// without reading it first: a read would map the kernel's zero page, and the
    /// store then copy it, two faults and a TLB shootdown per fresh cold page
    /// (montecarlo, whose objects are touched first out of line: 6% slower with the
    /// read).
    fn set_w_sid(&self, sid: u32) {
        match self.shared() {
            Some(sh) => sh.w_sid().store(sid, Relaxed),
            None => {
                let cold = &self.cell.cold.0;
                let r = if self.cell.hot.r.load(Relaxed) == 0 {
                    0
                } else {
                    cold.load(Relaxed) & !u64::from(u32::MAX)
                };
                cold.store(r | u64::from(sid), Relaxed);
            }
        }
    }

    /// The compact site of `R` while it is an epoch.
    fn r_sid(&self) -> u32 {
        debug_assert!(self.shared().is_none());
        (self.cell.cold.0.load(Relaxed) >> 32) as u32
    }

    /// Make `sid` the compact site of `R`, an epoch (before `R` itself changes; the
    /// other half is 0 while `W` is, as in [`Locked::set_w_sid`]).
    fn set_r_sid(&self, sid: u32) {
        debug_assert!(self.shared().is_none());
        let cold = &self.cell.cold.0;
        let w = if self.w == 0 {
            0
        } else {
            cold.load(Relaxed) & u64::from(u32::MAX)
        };
        cold.store(w | u64::from(sid) << 32, Relaxed);
    }

    /// `R[u] := c` on the shared reads, with `a` as `u`'s last read, for each
    /// `(u, c, a)` of `reads` in order. When some `u` has no entry yet (or a read has
    /// a trace line and the reads keep none), the reads move to a larger copy from
    /// `pool` first (with `W`'s compact site), and the cold word points at it.
    fn set_shared(&self, pool: &ReadsPool, reads: &[(Tid, u32, Acc)]) {
        let cell = self.cell;
        let cur = self.shared();
        let need = reads.iter().map(|r| r.0 as usize + 1).max().unwrap_or(0);
        let lines = reads.iter().any(|r| r.2.index != 0);
        let sh = match cur {
            Some(sh) if need <= sh.len() && (sh.has_lines() || !lines) => sh,
            _ => {
                // Exactly the readers there are at first (most shared locations
                // stay read by two or three threads); twice as many on growth.
                let grown = cur.map_or(0, |sh| {
                    if need > sh.len() {
                        2 * sh.len()
                    } else {
                        sh.len()
                    }
                });
                let lines = lines || cur.is_some_and(|sh| sh.has_lines());
                let fresh = pool.alloc(need.max(grown), lines);
                fresh.w_sid().store(self.w_sid(), Relaxed);
                if let Some(sh) = cur {
                    for (u, c) in sh.entries() {
                        fresh.set(u, c, &sh.acc(u));
                    }
                }
                debug_assert_eq!(fresh.addr() & SHARED_TAG, 0);
                cell.cold.0.store(fresh.addr() | SHARED_TAG, Release);
                if cur.is_none() {
                    // Tagged, with an empty cache of readers, after the pointer: a
                    // reader who sees the tag finds the clock array.
                    cell.hot.r.store(SHARED_TAG, Release);
                }
                fresh
            }
        };
        for &(t, c, ref a) in reads {
            sh.set(t, c, a);
            // `t`'s slot of the cache: `(t, c)`, or empty for an epoch with no slot
            // form; the tag stays.
            let slot = FASTTRACK_READ_SLOT << (32 * (t & 1));
            let (mask, key) = fasttrack_read_key(t, c);
            let kept = cell.hot.r.load(Relaxed) & !slot;
            cell.hot.r.store(kept | (key & mask), Release);
        }
    }
}

impl Drop for Locked<'_> {
    #[inline]
    fn drop(&mut self) {
        debug_assert_eq!(self.w & LOCKED, 0);
        self.cell.hot.w.store(self.w, Release);
    }
}

/// The trace lines of a location's `W` and `R` (offline analysis: events from a
/// trace file carry their line, [`Acc::index`]). Online every line is 0 and this
/// table stays empty, so the cells keep only what online reports need.
#[derive(Default)]
struct Lines {
    w: AtomicU64,
    r: AtomicU64,
}

/// The tag of `Cell::r` while the reads are shared (an epoch's packing never has it:
/// thread ids stay below 2^30).
const SHARED_TAG: u64 = 1 << 63;

// The layout `InlineCheck::FastTrack` promises producers.
const _: () = {
    assert!(SHARED_TAG == FASTTRACK_SHARED_TAG);
    assert!(std::mem::size_of::<Cell>() == FASTTRACK_CELL_BYTES as usize);
    assert!(std::mem::offset_of!(Cell, w) == FASTTRACK_W_OFF as usize);
    assert!(std::mem::offset_of!(Cell, r) == FASTTRACK_R_OFF as usize);
    assert!(cold_base(std::mem::size_of::<Cell>()) == FASTTRACK_COLD_BASE as usize);
    assert!(2 * std::mem::size_of::<Cold>() == std::mem::size_of::<Cell>());
    // The compact sites' halves of the cold word (little-endian).
    assert!(FASTTRACK_W_SID_OFF == 0 && FASTTRACK_R_SID_OFF == 4);
    assert!(LOCKED == FASTTRACK_LOCKED);
};

/// The FT2 rules, for statistics (how often each fired) and tests.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
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

impl Rule {
    /// One of the three same-epoch rules: the access changed nothing.
    pub(crate) fn same_epoch(self) -> bool {
        matches!(
            self,
            Rule::ReadSameEpoch | Rule::ReadSharedSameEpoch | Rule::WriteSameEpoch
        )
    }
}

/// FastTrack's shadow state of a set of locations and its rules, which report the
/// races they find to a callback: the `fasttrack` pass's state, and `bigfoot`'s for
/// field groups and statics, so that both have the same cells and the same inline
/// same-epoch check ([`InlineCheck::FastTrack`] on [`FtCells::top_addr`]).
pub(crate) struct FtCells {
    /// Per location, its hot cell, and its cold word in the second half of the leaf.
    cells: PageTable<Cell>,
    /// The compact sites of accesses that have no [`fasttrack_sid`].
    sids: Sids,
    /// The shared read states of the cells.
    reads: ReadsPool,
    /// Per location, the trace lines of `W` and `R`, once an event with a line
    /// arrived (`lines_used`); written and read under the location's cell lock.
    lines: PageTable<Lines>,
    lines_used: AtomicBool,
}

impl Default for FtCells {
    /// Leaves committed when created ([`PageTable::zeroed_committed`]): a cell is
    /// read before it is first written (the same-epoch test), so on a lazily
    /// committed page the first read maps the kernel's zero page and the first write
    /// copies it — two faults per page. Measured with lazy leaves: `fasttrack` on
    /// montecarlo 0.72 → 1.5 s, `bigfoot`'s field groups on raytracer 0.84 → 1.36 s;
    /// they saved memory only on montecarlo (`bigfoot` 741 → 301 MB).
    fn default() -> Self {
        FtCells {
            cells: PageTable::zeroed_committed().with_cold(),
            reads: ReadsPool::default(),
            sids: Sids::default(),
            lines: PageTable::zeroed(),
            lines_used: AtomicBool::new(false),
        }
    }
}

// SAFETY: words of atomic integers only; zero is each one's default.
unsafe impl Zeroed for Cell {}
// SAFETY: as for `Cell`.
unsafe impl Zeroed for Cold {}
// SAFETY: as for `Cell`.
unsafe impl Zeroed for Lines {}
// SAFETY: as for `Cell`.
unsafe impl Zeroed for RuleCounts {}

/// Where a rule reports a race: the earlier access and the kind of race.
pub(crate) type OnRace<'a> = &'a mut dyn FnMut(Acc, &'static str);

pub struct FastTrack {
    cells: FtCells,
    shared: Arc<Shared>,
    /// Per-thread rule counts, keyed by `tid * 8` (no downcast of the pass's
    /// thread-local state on the hot path).
    rules: PageTable<RuleCounts>,
}

impl FtCells {
    /// The address of the cells' top level, for [`InlineCheck::FastTrack`].
    pub(crate) fn top_addr(&self) -> u64 {
        self.cells.top_addr()
    }

    /// FT2 `read(t,x)` of `loc` by the access `cur`, same-epoch rules first without
    /// the lock (the test [`InlineCheck::FastTrack`] describes).
    #[inline]
    pub(crate) fn read(&self, t: &ThreadState, loc: Loc, cur: &Acc, race: OnRace<'_>) -> Rule {
        let c = Slot::of(self.cells.pair(loc.key()));
        self.rule_at(t, t.epoch(), c, loc, Op::Read, cur, race)
    }

    /// FT2 `read(t,x)` or `write(t,x)` (`op`) on `c`, the cell of `loc`, by `t` in
    /// its current epoch `e`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn rule_at(
        &self,
        t: &ThreadState,
        e: Epoch,
        c: Slot<'_>,
        loc: Loc,
        op: Op,
        cur: &Acc,
        race: OnRace<'_>,
    ) -> Rule {
        match op {
            Op::Write if c.hot.w.load(Relaxed) == Epoch::pack(e) => Rule::WriteSameEpoch,
            Op::Write => self.write_locked(t, c, loc, cur, race),
            Op::Read => {
                let r = c.hot.r.load(Acquire);
                if r == Epoch::pack(e) {
                    Rule::ReadSameEpoch
                } else if r & SHARED_TAG != 0
                    && (cached_read(r, e) || shared_clock(c.cold.0.load(Acquire), t.tid) == e.clock)
                {
                    Rule::ReadSharedSameEpoch
                } else {
                    self.read_locked(t, c, loc, cur, race)
                }
            }
        }
    }

    /// Whether one of the same-epoch rules decides an access `op` of `t` to `loc`
    /// from the hot words alone (the test [`InlineCheck::FastTrack`] describes), with
    /// no cell created for a location that has none.
    #[inline]
    pub(crate) fn same_epoch(&self, t: &ThreadState, loc: Loc, op: Op) -> bool {
        let Some(h) = self.cells.peek(loc.key()) else {
            return false;
        };
        let e = t.epoch();
        match op {
            Op::Write => h.w.load(Relaxed) == Epoch::pack(e),
            Op::Read => {
                let r = h.r.load(Acquire);
                r == Epoch::pack(e)
                    || (r & SHARED_TAG != 0
                        && (cached_read(r, e) || {
                            // The leaf exists (`peek`): no cell is created.
                            let c = Slot::of(self.cells.pair(loc.key()));
                            shared_clock(c.cold.0.load(Acquire), t.tid) == e.clock
                        }))
            }
        }
    }

    /// FT2 `write(t,x)` of `loc` (see [`FtCells::read`]).
    #[inline]
    pub(crate) fn write(&self, t: &ThreadState, loc: Loc, cur: &Acc, race: OnRace<'_>) -> Rule {
        let c = Slot::of(self.cells.pair(loc.key()));
        self.rule_at(t, t.epoch(), c, loc, Op::Write, cur, race)
    }

    /// FT2's rule for `cur` (a read or a write) on each of the elements
    /// `lo..hi:step` of `obj` (locations `Loc { obj, slot: e }`), in order, exactly
    /// as [`FtCells::read`] or [`FtCells::write`] of each (same-epoch rules first,
    /// unlocked), walking the table once per leaf of cells: `rule(e, r)` gets each
    /// element's rule, `race(e, prev, what)` each race found.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn range(
        &self,
        t: &ThreadState,
        obj: ObjId,
        (lo, hi, step): (u32, u32, u32),
        cur: &Acc,
        mut rule: impl FnMut(u32, Rule),
        race: &mut dyn FnMut(u32, Acc, &'static str),
    ) {
        let step = step.max(1);
        let e = t.epoch();
        let mut x = lo;
        while x < hi {
            let (hot, cold) = self.cells.run_pair(Loc { obj, slot: x }.key());
            let mut i = 0;
            while x < hi && i < hot.len() {
                let loc = Loc { obj, slot: x };
                let mut on_race = |prev, what| race(x, prev, what);
                let c = Slot::of((&hot[i], &cold[i]));
                let r = self.rule_at(t, e, c, loc, cur.op, cur, &mut on_race);
                rule(x, r);
                x += step;
                i += step as usize;
            }
        }
    }

    /// Give `loc`, a location no access has reached yet, the state of a cell kept
    /// elsewhere until now (BigFoot's array shadow going fine): the last write, the
    /// reads with their accesses, and whether the reads are shared.
    pub(crate) fn install(
        &self,
        loc: Loc,
        w: Option<(Epoch, Acc)>,
        reads: &[(Epoch, Acc)],
        shared: bool,
    ) {
        let c = Slot::of(self.cells.pair(loc.key()));
        let mut lk = c.lock();
        if shared {
            let reads: smallvec::SmallVec<[_; 4]> =
                reads.iter().map(|(e, a)| (e.tid, e.clock, *a)).collect();
            lk.set_shared(&self.reads, &reads);
        } else if let Some((e, a)) = reads.first() {
            lk.set_r_sid(self.sids.of(a));
            c.hot.r.store(Epoch::pack(*e), Release);
        }
        if let Some((e, a)) = w {
            lk.set_w_sid(self.sids.of(&a));
            lk.w = Epoch::pack(e);
        }
    }

    /// The trace lines of `loc`'s `W` and `R`, if any event so far had one.
    #[inline]
    fn lines(&self, loc: Loc, cur: &Acc) -> Option<&Lines> {
        if cur.index != 0 && !self.lines_used.load(Relaxed) {
            self.lines_used.store(true, Relaxed);
        }
        self.lines_used
            .load(Relaxed)
            .then(|| self.lines.get(loc.key()))
    }

    /// FT2 `read(t,x)` past the unlocked same-epoch check; returns the rule that
    /// applied.
    fn read_locked(
        &self,
        t: &ThreadState,
        c: Slot<'_>,
        loc: Loc,
        cur: &Acc,
        race: OnRace<'_>,
    ) -> Rule {
        let e = t.epoch();
        let lk = c.lock();
        let lines = self.lines(loc, cur);
        let (w, r) = (Epoch::unpack(lk.w), c.hot.r.load(Relaxed));
        // [FT read same epoch] (again: another thread may have changed R meanwhile)
        if r == Epoch::pack(e) {
            return Rule::ReadSameEpoch;
        }
        if let Some(sh) = lk.shared()
            && sh.get(t.tid) == e.clock
        {
            // [FT read shared same epoch]
            return Rule::ReadSharedSameEpoch;
        }
        // [FT write-read race]
        if w.tid != t.tid && !w.leq(&t.vc) {
            let line = lines.map_or(0, |l| l.w.load(Relaxed));
            let prev = self.sids.acc(lk.w_sid(), line, w, Op::Write);
            race(prev, "write-read");
        }
        if lk.shared().is_some() {
            // [FT read shared]
            lk.set_shared(&self.reads, &[(t.tid, e.clock, *cur)]);
            return Rule::ReadShared;
        }
        let r = Epoch::unpack(r);
        if r.tid == t.tid || r.leq(&t.vc) {
            // [FT read exclusive]
            lk.set_r_sid(self.sids.of(cur));
            c.hot.r.store(Epoch::pack(e), Relaxed);
            if let Some(l) = lines {
                l.r.store(cur.index, Relaxed);
            }
            Rule::ReadExclusive
        } else {
            // [FT read share]
            let line = lines.map_or(0, |l| l.r.load(Relaxed));
            let prev = self.sids.acc(lk.r_sid(), line, r, Op::Read);
            lk.set_shared(
                &self.reads,
                &[(r.tid, r.clock, prev), (t.tid, e.clock, *cur)],
            );
            Rule::ReadShare
        }
    }

    /// FT2 `write(t,x)` past the unlocked same-epoch check; returns the rule that
    /// applied.
    fn write_locked(
        &self,
        t: &ThreadState,
        c: Slot<'_>,
        loc: Loc,
        cur: &Acc,
        race: OnRace<'_>,
    ) -> Rule {
        let e = t.epoch();
        let mut lk = c.lock();
        let lines = self.lines(loc, cur);
        let (w, r) = (Epoch::unpack(lk.w), c.hot.r.load(Relaxed));
        // [FT write same epoch]
        if w == e {
            return Rule::WriteSameEpoch;
        }
        // [FT write-write race]
        if w.tid != t.tid && !w.leq(&t.vc) {
            let line = lines.map_or(0, |l| l.w.load(Relaxed));
            let prev = self.sids.acc(lk.w_sid(), line, w, Op::Write);
            race(prev, "write-write");
        }
        let rule = match lk.shared() {
            // [FT read-write race]
            None => {
                let r = Epoch::unpack(r);
                if r.tid != t.tid && !r.leq(&t.vc) {
                    let line = lines.map_or(0, |l| l.r.load(Relaxed));
                    let prev = self.sids.acc(lk.r_sid(), line, r, Op::Read);
                    race(prev, "read-write");
                }
                Rule::WriteExclusive
            }
            // [FT shared-read-write race], one warning per unordered reader
            Some(sh) => {
                for (u, c) in sh.entries() {
                    if c > t.vc.get(u) {
                        race(sh.acc(u), "read-write");
                    }
                }
                Rule::WriteShared
            }
        };
        // [FT write exclusive / write shared]: FT2 keeps a shared read state.
        lk.set_w_sid(self.sids.of(cur));
        if let Some(l) = lines {
            l.w.store(cur.index, Relaxed);
        }
        lk.w = Epoch::pack(e);
        rule
    }

    /// Number of locations with shadow state, and of those whose reads are shared
    /// (statistics).
    pub(crate) fn census(&self) -> (usize, usize) {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let [n, shared] = self.cells.sum_cells(threads, |c| {
            let r = c.r.load(Relaxed);
            if c.w.load(Relaxed) & !LOCKED != 0 || r != 0 {
                [1, usize::from(r & SHARED_TAG != 0)]
            } else {
                [0, 0]
            }
        });
        (n, shared)
    }
}

impl FastTrack {
    pub fn new(shared: &Arc<Shared>) -> Self {
        FastTrack {
            cells: FtCells::default(),
            shared: shared.clone(),
            rules: PageTable::zeroed(),
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

    /// Number of locations with shadow state (statistics).
    pub fn locations(&self) -> usize {
        self.cells.census().0
    }
}

impl Pass for FastTrack {
    fn name(&self) -> &'static str {
        "fasttrack"
    }
    fn wants_frames(&self) -> bool {
        false
    }
    fn access(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) -> Flow {
        let rep = &self.shared.reporter;
        let rule = match ev.kind {
            EventKind::Read { loc } => {
                let cur = Acc::of(t, ev, Op::Read);
                let mut race = |prev, what| Self::race(rep, loc, prev, &cur, what);
                self.cells.read(t, loc, &cur, &mut race)
            }
            EventKind::Write { loc, .. } => {
                let cur = Acc::of(t, ev, Op::Write);
                let mut race = |prev, what| Self::race(rep, loc, prev, &cur, what);
                self.cells.write(t, loc, &cur, &mut race)
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
            (
                Rule::ReadExclusive,
                checks.iter().map(|c| c.reads_excl).sum(),
            ),
            (
                Rule::WriteExclusive,
                checks.iter().map(|c| c.writes_excl).sum(),
            ),
        ] {
            let a = &c.0[rule as usize];
            a.store(a.load(Relaxed) + n, Relaxed);
        }
    }
    fn stats(&self) -> Option<serde_json::Value> {
        let (locations, shared) = self.cells.census();
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

    /// A hot cell and its cold word, outside any table.
    #[derive(Default)]
    struct Pair(Cell, Cold);

    impl Pair {
        fn slot(&self) -> Slot<'_> {
            Slot::of((&self.0, &self.1))
        }
    }

    /// The tagged pointer to a read-shared cell's clock array.
    fn clock_ptr(c: Slot<'_>) -> u64 {
        assert_ne!(c.hot.r.load(Relaxed) & SHARED_TAG, 0, "reads not shared");
        c.cold.0.load(Relaxed)
    }

    fn acc(tid: Tid) -> Acc {
        Acc {
            tid,
            op: Op::Read,
            site: SiteId(tid + 1),
            ctx: CtxId::ROOT,
            index: 0,
        }
    }

    /// `FtCells::range` applies to each element the rule `read`/`write` applies to
    /// it alone, with the same races, across a leaf of the table and with a step.
    #[test]
    fn a_range_applies_each_elements_own_rule() {
        use crate::clocks::Clocks;
        let (one, each) = (FtCells::default(), FtCells::default());
        // Elements around a leaf boundary (`LEAF` cells of 8-byte keys).
        let obj = ObjId(((super::super::shadow::LEAF as u64) << 3) * 5 - 8 * 40);
        let mut t0 = ThreadState::new(0, Clocks::initial(0));
        let t1 = ThreadState::new(1, Clocks::initial(1));
        let script: [(Tid, Op, (u32, u32, u32)); 6] = [
            (0, Op::Write, (0, 90, 1)),
            (0, Op::Read, (10, 70, 3)),
            (0, Op::Write, (20, 60, 1)),
            (1, Op::Read, (30, 80, 2)),
            (1, Op::Write, (50, 51, 1)),
            (0, Op::Read, (0, 90, 5)),
        ];
        for (i, (tid, op, (lo, hi, step))) in script.into_iter().enumerate() {
            if i == 2 {
                // A new epoch of thread 0 (its own earlier epochs: exclusive rules).
                t0.vc.tick(0);
            }
            let t = if tid == 0 { &t0 } else { &t1 };
            let cur = Acc { op, ..acc(t.tid) };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let mut race_a = |e, prev: Acc, what| a.push((e, prev.tid, what));
            let mut rules = Vec::new();
            one.range(
                t,
                obj,
                (lo, hi, step),
                &cur,
                |e, r| rules.push((e, r as u8)),
                &mut race_a,
            );
            let mut singles = Vec::new();
            for e in (lo..hi).step_by(step as usize) {
                let loc = Loc { obj, slot: e };
                let mut race_b = |prev: Acc, what| b.push((e, prev.tid, what));
                let r = match op {
                    Op::Read => each.read(t, loc, &cur, &mut race_b),
                    Op::Write => each.write(t, loc, &cur, &mut race_b),
                };
                singles.push((e, r as u8));
            }
            assert_eq!(rules, singles, "step {i}");
            assert_eq!(a, b, "step {i}");
            if i >= 3 {
                assert!(!a.is_empty(), "step {i}: thread 1 races with thread 0");
            }
        }
    }

    #[test]
    fn shared_read_clocks_grow_and_stay_readable_through_the_hot_half() {
        let pool = ReadsPool::default();
        let p = Pair::default();
        let c = p.slot();
        c.lock().set_shared(&pool, &[(1, 4, acc(1))]);
        let r1 = clock_ptr(c);
        assert_ne!(r1 & SHARED_TAG, 0);
        assert_eq!(shared_clock(r1, 1), 4);
        assert_eq!(shared_clock(r1, 0), 0);
        assert_eq!(shared_clock(r1, 7), 0, "past the end");
        // Growing moves the clocks to a new array; the old one stays valid.
        c.lock().set_shared(&pool, &[(9, 2, acc(9))]);
        let r2 = clock_ptr(c);
        assert_ne!(r1, r2);
        assert_eq!(shared_clock(r2, 1), 4);
        assert_eq!(shared_clock(r2, 9), 2);
        assert_eq!(shared_clock(r1, 1), 4, "the replaced array stays readable");
        let lk = c.lock();
        let sh = lk.shared().unwrap();
        assert_eq!(sh.entries().collect::<Vec<_>>(), vec![(1, 4), (9, 2)]);
        assert_eq!(sh.acc(1).site, SiteId(2));
        assert_eq!(sh.acc(9).site, SiteId(10));
    }

    #[test]
    fn shared_reads_keep_each_readers_access_and_take_lines_when_one_comes() {
        let pool = ReadsPool::default();
        let p = Pair::default();
        let c = p.slot();
        let at = |tid, site, ctx, index| Acc {
            tid,
            op: Op::Read,
            site: SiteId(site),
            ctx: CtxId(ctx),
            index,
        };
        // Online: no lines; one allocation sized for exactly the readers there are.
        c.lock()
            .set_shared(&pool, &[(2, 7, at(2, 20, 5, 0)), (0, 3, at(0, 10, 6, 0))]);
        let r1 = clock_ptr(c);
        {
            let lk = c.lock();
            let sh = lk.shared().unwrap();
            assert_eq!((sh.len(), sh.has_lines()), (3, false));
            assert_eq!(sh.entries().collect::<Vec<_>>(), vec![(0, 3), (2, 7)]);
            assert_eq!(sh.acc(2), at(2, 20, 5, 0));
            assert_eq!(sh.acc(0), at(0, 10, 6, 0));
        }
        // A read with a trace line moves the reads to a copy that keeps lines,
        // with the same entries, even though its thread has one already.
        let big = (1u64 << 40) + 9;
        c.lock().set_shared(&pool, &[(0, 4, at(0, 11, 1, big))]);
        let r2 = clock_ptr(c);
        assert_ne!(r1, r2);
        assert_eq!(shared_clock(r1, 2), 7, "the replaced array stays readable");
        let lk = c.lock();
        let sh = lk.shared().unwrap();
        assert_eq!((sh.len(), sh.has_lines()), (3, true));
        assert_eq!(sh.entries().collect::<Vec<_>>(), vec![(0, 4), (2, 7)]);
        assert_eq!(sh.acc(0), at(0, 11, 1, big));
        assert_eq!(sh.acc(2), at(2, 20, 5, 0));
        assert_eq!(pool.0.lock().len(), 2);
    }

    #[test]
    fn the_cache_of_readers_holds_exactly_the_latest_read_of_its_slots() {
        let pool = ReadsPool::default();
        let p = Pair::default();
        let c = p.slot();
        let cache = || c.hot.r.load(Relaxed);
        // An epoch read before (its site in the cold word) is no reader's cache.
        c.hot.r.store(Epoch::new(1, 4).pack(), Relaxed);
        c.lock().set_r_sid(Sids::default().of(&acc(1)));
        c.lock().set_shared(&pool, &[(1, 4, acc(1))]);
        assert_ne!(cache() & SHARED_TAG, 0);
        assert!(cached_read(cache(), Epoch::new(1, 4)));
        assert!(
            !cached_read(cache(), Epoch::new(1, 5)),
            "a later epoch of 1"
        );
        assert!(
            !cached_read(cache(), Epoch::new(3, 4)),
            "same slot, other thread"
        );
        c.lock().set_shared(&pool, &[(2, 9, acc(2))]);
        assert!(
            cached_read(cache(), Epoch::new(1, 4)),
            "the other slot stays"
        );
        assert!(cached_read(cache(), Epoch::new(2, 9)));
        // Thread 3 takes thread 1's slot: 1 is then decided on the clock array.
        c.lock().set_shared(&pool, &[(3, 4, acc(3))]);
        assert!(!cached_read(cache(), Epoch::new(1, 4)));
        assert!(cached_read(cache(), Epoch::new(3, 4)));
        assert_eq!(shared_clock(clock_ptr(c), 1), 4);
        // Epochs with no slot form never match, and clear the slot.
        c.lock().set_shared(&pool, &[(3, 1 << 24, acc(3))]);
        assert!(!cached_read(cache(), Epoch::new(3, 1 << 24)));
        assert!(!cached_read(cache(), Epoch::new(3, 4)));
        c.lock().set_shared(&pool, &[(600, 2, acc(600))]);
        assert!(!cached_read(cache(), Epoch::new(600, 2)));
        assert!(
            !cached_read(cache(), Epoch::new(2, 9)),
            "600's slot (0) is cleared"
        );
        assert_eq!(
            shared_clock(clock_ptr(c), 2),
            9,
            "the clock array decides it"
        );
    }

    #[test]
    fn read_keys_are_distinct_for_distinct_epochs() {
        let epochs: Vec<(Tid, u32)> = [0, 1, 2, 3, 127, 128, 254, 255]
            .into_iter()
            .flat_map(|t| [1, 2, 255, 256, (1 << 24) - 1].map(|c| (t, c)))
            .collect();
        for &(t, c) in &epochs {
            let (mask, key) = fasttrack_read_key(t, c);
            assert_eq!(key & mask, key);
            for &(u, d) in &epochs {
                let (m2, k2) = fasttrack_read_key(u, d);
                // `u`'s key stored alone in its slot matches `t`'s test only if
                // they are the same epoch.
                assert_eq!(
                    k2 & mask == key && m2 != 0,
                    (t, c) == (u, d),
                    "{t}@{c} {u}@{d}"
                );
            }
        }
        for (t, c) in [
            (0, 0),
            (1, 0),
            (256, 1),
            (257, 1),
            (1, 1 << 24),
            (7, u32::MAX),
        ] {
            let (mask, key) = fasttrack_read_key(t, c);
            assert_eq!(mask & SHARED_TAG, 0, "the tag is no slot's");
            for cache in [0, u64::MAX, 0x0100_0001_0100_0001, SHARED_TAG | 0x8000_0000] {
                assert_ne!(cache & mask, key, "{t}@{c}: no cache word matches");
            }
        }
    }

    #[test]
    fn a_held_lock_hides_w_from_the_unlocked_write_check() {
        let p = Pair::default();
        let c = p.slot();
        let e = Epoch::pack(Epoch::new(2, 7));
        {
            let mut lk = c.lock();
            assert_ne!(
                c.hot.w.load(Relaxed),
                0,
                "locked: differs from Epoch::NONE too"
            );
            lk.w = e;
        }
        assert_eq!(c.hot.w.load(Relaxed), e, "the release stores the new W");
        {
            let lk = c.lock();
            assert_eq!(lk.w, e);
            assert_ne!(c.hot.w.load(Relaxed), e, "no same-epoch hit while held");
        }
        assert_eq!(c.hot.w.load(Relaxed), e);
    }

    #[test]
    fn the_lock_excludes_other_threads() {
        let p = Arc::new(Pair::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let p = p.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let mut lk = p.slot().lock();
                        // A non-atomic read-modify-write of W under the lock.
                        lk.w += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(p.0.w.load(Relaxed), 80_000);
    }

    /// Compact sites: the small form for small sites and contexts, numbers for the
    /// rest (the same number for the same pair), each decoded to its pair.
    #[test]
    fn compact_sites_stand_for_their_site_and_context() {
        let sids = Sids::default();
        let cur = |site, ctx| Acc {
            tid: 3,
            op: Op::Write,
            site: SiteId(site),
            ctx: CtxId(ctx),
            index: 0,
        };
        let pairs = [
            (0, 0),
            (65_535, 32_767),
            (65_536, 0),
            (0, 32_768),
            (u32::MAX - 1, 77),
            (7, u32::MAX),
            (65_536, 0),
        ];
        let ids: Vec<u32> = pairs.iter().map(|&(s, c)| sids.of(&cur(s, c))).collect();
        assert_eq!(ids[0], 0);
        assert_eq!(ids[1], 65_535 | 32_767 << 16);
        assert!(ids[2..].iter().all(|i| i & NUMBERED != 0), "{ids:?}");
        assert_eq!(ids[2], ids[6], "one number per pair");
        assert_eq!(
            ids[2..6]
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len(),
            4
        );
        for (&(s, c), &id) in pairs.iter().zip(&ids) {
            let a = sids.acc(id, 12, Epoch::new(3, 9), Op::Write);
            assert_eq!(
                (a.tid, a.site, a.ctx, a.index),
                (3, SiteId(s), CtxId(c), 12)
            );
        }
    }

    /// The compact sites of `W` and `R` share the cold word while `R` is an epoch
    /// (each half set before its epoch, as the rules do: a fresh word is stored
    /// without being read); `W`'s moves with the reads when they are shared, and
    /// stays theirs.
    #[test]
    fn the_write_site_follows_the_cold_word_into_the_shared_reads() {
        let pool = ReadsPool::default();
        let p = Pair::default();
        let c = p.slot();
        {
            let mut lk = c.lock();
            lk.set_w_sid(0x1234_5678);
            lk.w = Epoch::new(1, 3).pack();
            assert_eq!((lk.w_sid(), lk.r_sid()), (0x1234_5678, 0));
        }
        {
            let mut lk = c.lock();
            lk.set_r_sid(0x0abc_def0);
            c.hot.r.store(Epoch::new(1, 3).pack(), Relaxed);
            lk.set_w_sid(0x0765_4321);
            lk.w = Epoch::new(1, 4).pack();
            assert_eq!((lk.w_sid(), lk.r_sid()), (0x0765_4321, 0x0abc_def0));
        }
        {
            // A read's site on a location only read so far, then a write's.
            let q = Pair::default();
            let mut lk = q.slot().lock();
            lk.set_r_sid(9);
            q.0.r.store(Epoch::new(1, 3).pack(), Relaxed);
            lk.set_w_sid(7);
            lk.w = Epoch::new(1, 3).pack();
            assert_eq!((lk.w_sid(), lk.r_sid()), (7, 9));
        }
        c.hot.r.store(Epoch::new(1, 4).pack(), Relaxed);
        c.lock()
            .set_shared(&pool, &[(1, 4, acc(1)), (2, 5, acc(2))]);
        let lk = c.lock();
        assert_eq!(lk.w_sid(), 0x0765_4321);
        lk.set_w_sid(42);
        assert_eq!(lk.shared().unwrap().w_sid().load(Relaxed), 42);
        drop(lk);
        // Growth (thread 6) copies it.
        c.lock().set_shared(&pool, &[(6, 1, acc(6))]);
        assert_eq!(c.lock().w_sid(), 42);
        assert_eq!(shared_clock(clock_ptr(c), 2), 5);
    }

    #[test]
    fn epochs_pack_and_unpack() {
        for e in [Epoch::NONE, Epoch::new(0, 1), Epoch::new(3, u32::MAX)] {
            assert_eq!(Epoch::unpack(Epoch::pack(e)), e);
            assert_eq!(Epoch::pack(e) & (SHARED_TAG | LOCKED), 0);
        }
    }
}
