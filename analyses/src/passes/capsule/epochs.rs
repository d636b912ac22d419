//! The capsule's shadow state: the single epoch of the thesis (§5.5.1, Fig. 5.9), the
//! last exit `(tid, C_t[t])` or "occupied by t", plus the sites needed to report a
//! violation.
//!
//! # Ownership instead of a lock per call
//! Each capsule has one [`Rec`], found through the thread's small cache of records
//! ([`ThreadEpochs`]) and, on a miss, the table's sharded map. A record has an
//! *owner*: the thread that is inside the capsule, or the thread that was last
//! inside and has not published its clock since (no `Release`, `Fork`, volatile
//! write, `BarrierEnter` or `ThreadEnd` of that thread since its exit). Only the
//! owner writes the record's other words; a thread takes ownership with one
//! compare-and-swap from "no owner", and gives it up with a plain store at its next
//! publishing event ([`EpochTable::publish`]), before that event's clock is
//! published.
//!
//! That keeps every verdict of the thesis's rule, and makes the calls of a thread
//! that calls one capsule over and over between synchronizations (a `Random` filling
//! an array) touch no shared line with an atomic read-modify-write:
//! - the owner re-entering needs no check: the last exit is its own, and nobody else
//!   can have been inside (they would have needed ownership);
//! - another thread finding an owner that is not inside would have failed the
//!   thesis's check anyway: the owner's last exit can happen before another thread's
//!   clock only through a publishing event of the owner after that exit (clocks tick
//!   at every publication, [`crate::clocks`]), and that event gave up ownership
//!   first. So it reports `Unordered`, with the owner's exit, as the thesis's rule
//!   does; an owner that is inside is `Occupied`, as before.
//!
//! The words another thread reads for a report (is the owner inside, its entry, its
//! last exit) are under a sequence lock that only the owner writes.
//!
//! # Concurrency
//! The owner word is the only word two threads write: a compare-and-swap from 0 by
//! any thread (Acquire: it reads what the previous owner wrote before its Release
//! store of 0), a store of 0 by the owner. A record lives as long as the table
//! (boxed in its map, never removed), so threads keep plain pointers to it.

use std::ptr::NonNull;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU64, fence};

use hashbrown::HashMap;
use parking_lot::Mutex;

use crate::ctx::CtxId;
use crate::event::{ObjId, SiteId, Tid};
use crate::thread::ThreadState;
use crate::vc::Epoch;

const SHARDS: usize = 16;

/// A thread's operation on a capsule, for reports.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub tid: Tid,
    pub site: SiteId,
    pub ctx: CtxId,
    pub event: u64,
}

/// Why the synchronization property failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SyncError {
    /// Another thread is inside the capsule.
    Occupied(Mark),
    /// The last exit does not happen before this entry.
    Unordered(Mark),
}

/// A [`Mark`] in three words (0, 0, 0: none; a mark's `tid | site` word is never 0
/// because the tid is stored plus one).
#[derive(Default)]
struct MarkWords([AtomicU64; 3]);

impl MarkWords {
    fn store(&self, m: Mark) {
        let w = [
            (u64::from(m.tid) + 1) << 32 | u64::from(m.site.0),
            u64::from(m.ctx.0),
            m.event,
        ];
        for (a, v) in self.0.iter().zip(w) {
            a.store(v, Relaxed);
        }
    }

    fn clear(&self) {
        for a in &self.0 {
            a.store(0, Relaxed);
        }
    }

    fn load(&self) -> Option<Mark> {
        let [a, b, c] = [0, 1, 2].map(|i| self.0[i].load(Relaxed));
        (a != 0).then(|| Mark {
            tid: ((a >> 32) - 1) as Tid,
            site: SiteId(a as u32),
            ctx: CtxId(b as u32),
            event: c,
        })
    }
}

/// One capsule's state (see the module doc).
#[derive(Default)]
struct Rec {
    /// 0, or the owning thread's id plus one ([`PENDING`] too while it checks).
    owner: AtomicU64,
    /// Sequence lock over the words below: odd while the owner writes them.
    seq: AtomicU64,
    /// 1 while the owner is inside (from its first state access until its exit).
    inside: AtomicU64,
    /// Where the last thread that was inside got inside.
    entry: MarkWords,
    /// The last exit of a call that accessed state: `tid << 32 | clock`, valid with
    /// `exit`.
    exit_epoch: AtomicU64,
    exit: MarkWords,
}

/// What another thread reads of a record, under its sequence lock.
struct Snapshot {
    inside: bool,
    entry: Option<Mark>,
    exit: Option<(Epoch, Mark)>,
}

impl Rec {
    /// The owner's writes, under the sequence lock.
    fn write(&self, f: impl FnOnce(&Rec)) {
        let s = self.seq.load(Relaxed);
        self.seq.store(s + 1, Relaxed);
        fence(Release);
        f(self);
        self.seq.store(s + 2, Release);
    }

    /// The last exit (read by the owner, or by a thread that just took ownership:
    /// no sequence lock needed).
    fn last_exit(&self) -> Option<(Epoch, Mark)> {
        let m = self.exit.load()?;
        let e = self.exit_epoch.load(Relaxed);
        Some((Epoch::new((e >> 32) as Tid, e as u32), m))
    }

    fn snapshot(&self) -> Snapshot {
        let mut spins = 0u32;
        loop {
            let s1 = self.seq.load(Acquire);
            if s1 & 1 == 0 {
                let snap = Snapshot {
                    inside: self.inside.load(Relaxed) != 0,
                    entry: self.entry.load(),
                    exit: self.last_exit(),
                };
                fence(Acquire);
                if self.seq.load(Relaxed) == s1 {
                    return snap;
                }
            }
            // The owner writes a few words and never blocks in between.
            backoff(&mut spins);
        }
    }
}

fn owner_word(t: Tid) -> u64 {
    u64::from(t) + 1
}

/// The owner word of a thread that took the record and is still checking it.
const PENDING: u64 = 1 << 63;

fn backoff(spins: &mut u32) {
    if *spins < 64 {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// One shard, on cache lines of its own.
#[repr(align(128))]
#[derive(Default)]
struct Shard(Mutex<HashMap<ObjId, Box<Rec>>>);

#[derive(Default)]
pub struct EpochTable {
    shards: [Shard; SHARDS],
}

fn shard(k: ObjId) -> usize {
    ((k.0 >> 3) ^ (k.0 >> 13)) as usize % SHARDS
}

/// Entries of a thread's record cache (direct-mapped).
const CACHE: usize = 64;

/// A thread's side of the table: its cache of records and the records it owns.
pub struct ThreadEpochs {
    cache: Box<[(u64, Option<NonNull<Rec>>); CACHE]>,
    owned: Vec<NonNull<Rec>>,
}

// SAFETY: the pointers are to records that live as long as the table (see the module
// doc), whose words are atomics; a thread's `ThreadEpochs` moves with its pass-local
// state.
unsafe impl Send for ThreadEpochs {}

impl Default for ThreadEpochs {
    fn default() -> Self {
        ThreadEpochs {
            cache: Box::new([(0, None); CACHE]),
            owned: Vec::new(),
        }
    }
}

impl EpochTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// `k`'s record, created on first use.
    fn rec<'a>(&'a self, mine: &mut ThreadEpochs, k: ObjId) -> &'a Rec {
        let slot = &mut mine.cache[((k.0 >> 3) ^ (k.0 >> 9)) as usize % CACHE];
        let p = match *slot {
            (key, Some(p)) if key == k.0 => p,
            _ => {
                let mut s = self.shards[shard(k)].0.lock();
                let p = NonNull::from(&**s.entry(k).or_default());
                *slot = (k.0, Some(p));
                p
            }
        };
        // SAFETY: records are boxed in the map and never removed or moved out while
        // the table lives; the table outlives the threads' `ThreadEpochs` (the pass
        // owns both) and `'a` borrows the table.
        unsafe { p.as_ref() }
    }

    /// The lazy synchronization check at the first state access of a call of `k`
    /// (Fig. 5.9 `enterCap`): fails if another thread is inside or the last exit does
    /// not happen before `t`'s clock; otherwise `t` is inside. `Ok(true)` if this call
    /// now holds the capsule, `Ok(false)` if `t` was already inside (an outer call).
    pub fn enter(
        &self,
        mine: &mut ThreadEpochs,
        k: ObjId,
        t: &ThreadState,
        at: Mark,
    ) -> Result<bool, SyncError> {
        let r = self.rec(mine, k);
        let me = owner_word(t.tid);
        let mut spins = 0u32;
        loop {
            let o = r.owner.load(Acquire);
            if o == me {
                if r.inside.load(Relaxed) != 0 {
                    return Ok(false);
                }
                // Its own last exit, and nobody inside since: the check holds.
                break;
            }
            if o == 0 {
                if r.owner
                    .compare_exchange(0, me | PENDING, Acquire, Relaxed)
                    .is_err()
                {
                    continue;
                }
                if let Some((ep, m)) = r.last_exit()
                    && !ep.leq(&t.vc)
                {
                    r.owner.store(0, Release);
                    return Err(SyncError::Unordered(m));
                }
                r.write(|r| {
                    r.inside.store(1, Relaxed);
                    r.entry.store(at);
                });
                r.owner.store(me, Release);
                mine.owned.push(NonNull::from(r));
                return Ok(true);
            }
            if o & PENDING == 0 {
                return Err(Self::conflict(r, t));
            }
            // Another thread is taking the record: a few instructions, never blocking.
            backoff(&mut spins);
        }
        r.write(|r| {
            r.inside.store(1, Relaxed);
            r.entry.store(at);
        });
        Ok(true)
    }

    /// Another thread owns the record: inside (`Occupied`), or exited without
    /// publishing its clock since (`Unordered`, see the module doc).
    #[cold]
    fn conflict(r: &Rec, t: &ThreadState) -> SyncError {
        let s = r.snapshot();
        match (s.inside, s.entry, s.exit) {
            (true, Some(m), _) => SyncError::Occupied(m),
            (_, _, Some((ep, m))) => {
                debug_assert!(
                    !ep.leq(&t.vc),
                    "an owner's exit happens before another thread only after it published"
                );
                SyncError::Unordered(m)
            }
            // An owner that took the record got inside before it stored itself; one
            // that is not inside has an exit. Only a reset record (never, see
            // `reset`) has neither.
            (_, entry, None) => SyncError::Occupied(entry.unwrap_or(Mark {
                tid: (r.owner.load(Relaxed).max(1) - 1) as Tid,
                site: SiteId(0),
                ctx: CtxId(0),
                event: 0,
            })),
        }
    }

    /// Exit of the call that holds `k` (`exitCap`): record `C_t[t]@t`. The thread
    /// stays the owner until it publishes its clock.
    pub fn exit(&self, mine: &mut ThreadEpochs, k: ObjId, t: &ThreadState, at: Mark) {
        let r = self.rec(mine, k);
        debug_assert_eq!(r.owner.load(Relaxed), owner_word(t.tid));
        let e = t.epoch();
        r.write(|r| {
            r.inside.store(0, Relaxed);
            r.exit_epoch
                .store(u64::from(e.tid) << 32 | u64::from(e.clock), Relaxed);
            r.exit.store(at);
        });
    }

    /// The thread is about to publish its clock (`Release`, `Fork`, volatile write,
    /// `BarrierEnter`, `ThreadEnd`): give up every record it owns and is not inside.
    pub fn publish(&self, mine: &mut ThreadEpochs, t: &ThreadState) {
        let me = owner_word(t.tid);
        mine.owned.retain(|p| {
            // SAFETY: as in `rec`.
            let r = unsafe { p.as_ref() };
            if r.owner.load(Relaxed) != me {
                return false;
            }
            if r.inside.load(Relaxed) != 0 {
                return true;
            }
            r.owner.store(0, Release);
            false
        });
    }

    /// Where a thread last got inside the capsule (for encapsulation reports).
    pub fn last_entry(&self, mine: &mut ThreadEpochs, k: ObjId) -> Option<Mark> {
        self.rec(mine, k).snapshot().entry
    }

    /// A new object at `k`: forget the old state. Neither heap reuses an address
    /// (blocks live until the run ends), so this only clears a record nobody uses.
    pub fn reset(&self, mine: &mut ThreadEpochs, k: ObjId) {
        let r = self.rec(mine, k);
        r.write(|r| {
            r.inside.store(0, Relaxed);
            r.entry.clear();
            r.exit_epoch.store(0, Relaxed);
            r.exit.clear();
        });
        r.owner.store(0, Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vc::VectorClock;

    fn thread(tid: Tid, clocks: &[(Tid, u32)]) -> ThreadState {
        let mut vc = VectorClock::default();
        for &(u, c) in clocks {
            vc.set(u, c);
        }
        ThreadState::new(tid, vc)
    }

    fn mark(tid: Tid, event: u64) -> Mark {
        Mark {
            tid,
            site: SiteId(7),
            ctx: CtxId(3),
            event,
        }
    }

    const K: ObjId = ObjId(0x1000);

    #[test]
    fn an_owner_reenters_without_a_check_and_others_see_it_inside_or_unordered() {
        let tab = EpochTable::new();
        let (mut m1, mut m2) = (ThreadEpochs::default(), ThreadEpochs::default());
        let t1 = thread(1, &[(1, 5)]);
        let t2 = thread(2, &[(2, 1)]);
        assert_eq!(tab.enter(&mut m1, K, &t1, mark(1, 10)), Ok(true));
        assert_eq!(tab.enter(&mut m1, K, &t1, mark(1, 11)), Ok(false));
        assert_eq!(
            tab.enter(&mut m2, K, &t2, mark(2, 12)),
            Err(SyncError::Occupied(mark(1, 10)))
        );
        tab.exit(&mut m1, K, &t1, mark(1, 13));
        // Exited, not published: t2 cannot be ordered after that exit.
        assert_eq!(
            tab.enter(&mut m2, K, &t2, mark(2, 14)),
            Err(SyncError::Unordered(mark(1, 13)))
        );
        // t1 again: no check, still the owner.
        assert_eq!(tab.enter(&mut m1, K, &t1, mark(1, 15)), Ok(true));
        assert_eq!(tab.last_entry(&mut m2, K), Some(mark(1, 15)));
        tab.exit(&mut m1, K, &t1, mark(1, 16));
        tab.publish(&mut m1, &t1);
        assert!(m1.owned.is_empty());
        // Published: a thread whose clock holds t1's exit gets in; one whose clock
        // does not is told of that exit, and the record stays free.
        let late = thread(2, &[(2, 1), (1, 4)]);
        assert_eq!(
            tab.enter(&mut m2, K, &late, mark(2, 17)),
            Err(SyncError::Unordered(mark(1, 16)))
        );
        let t2 = thread(2, &[(2, 1), (1, 5)]);
        assert_eq!(tab.enter(&mut m2, K, &t2, mark(2, 18)), Ok(true));
        assert_eq!(
            tab.enter(&mut m1, K, &t1, mark(1, 19)),
            Err(SyncError::Occupied(mark(2, 18)))
        );
    }

    #[test]
    fn publishing_keeps_the_records_the_thread_is_inside() {
        let tab = EpochTable::new();
        let (mut m1, mut m2) = (ThreadEpochs::default(), ThreadEpochs::default());
        let t1 = thread(1, &[(1, 5)]);
        let t2 = thread(2, &[(2, 1), (1, 9)]);
        let k2 = ObjId(0x2000);
        assert_eq!(tab.enter(&mut m1, K, &t1, mark(1, 1)), Ok(true));
        assert_eq!(tab.enter(&mut m1, k2, &t1, mark(1, 2)), Ok(true));
        tab.exit(&mut m1, k2, &t1, mark(1, 3));
        tab.publish(&mut m1, &t1);
        assert_eq!(m1.owned.len(), 1);
        assert_eq!(
            tab.enter(&mut m2, K, &t2, mark(2, 4)),
            Err(SyncError::Occupied(mark(1, 1)))
        );
        assert_eq!(tab.enter(&mut m2, k2, &t2, mark(2, 5)), Ok(true));
    }

    #[test]
    fn the_record_cache_tells_colliding_capsules_apart() {
        let tab = EpochTable::new();
        let mut m1 = ThreadEpochs::default();
        let t1 = thread(1, &[(1, 5)]);
        // Keys that share a cache slot.
        let ks: Vec<ObjId> = (0..4)
            .map(|i| ObjId(0x1000 + i * 8 * CACHE as u64 * 64))
            .collect();
        for (i, &k) in ks.iter().enumerate() {
            assert_eq!(tab.enter(&mut m1, k, &t1, mark(1, i as u64)), Ok(true));
        }
        for (i, &k) in ks.iter().enumerate() {
            assert_eq!(tab.last_entry(&mut m1, k), Some(mark(1, i as u64)));
        }
    }
}
