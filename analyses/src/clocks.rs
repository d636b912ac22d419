//! The shared happens-before clock service (FastTrack's synchronization rules,
//! Flanagan & Freund, PLDI'09 Fig. 2, as restated in
//! Rhodes, *Access Classification for Race Detection Optimization*, UCSC 2019, §1.5).
//!
//! Every pass that needs Java happens-before reads `ThreadState::vc` instead of
//! keeping its own clocks. The chain calls [`Clocks::apply`] once per
//! synchronization event, after every pass has seen it:
//!
//! ```text
//! acquire(t,m):   C_t := C_t ⊔ L_m
//! release(t,m):   L_m := C_t;            C_t[t]++
//! fork(t,u):      C_u := C_t; C_u[u]++;  C_t[t]++
//! join(t,u):      C_t := C_t ⊔ C_u(final)
//! vol_write(t,v): L_v := L_v ⊔ C_t;      C_t[t]++   (join, never overwrite: G7d)
//! vol_read(t,v):  C_t := C_t ⊔ L_v
//! barrier enter:  B_g := B_g ⊔ C_t
//! barrier exit:   C_t := C_t ⊔ B_g;      C_t[t]++
//! thread end:     final C_t published for join
//! ```
//!
//! The *frontier* `F` is a clock every live thread's clock is at least, now and
//! from now on (so an access at an epoch `c@u` with `c <= F[u]` happens before every
//! access still to come): when the last party arrives at a barrier episode while the
//! parties are all the live threads (counted at fork and thread end), `F := F ⊔ B_g`.
//! The parties leave with `C_t ⊔ B_g` before they access anything, and any thread
//! forked later starts from one of theirs. BigFoot forgets array shadow state below
//! it (`passes::bigfoot::array`), in live runs, where every thread but main is forked
//! (a trace's threads need not be; a count too high only keeps the frontier back).
//!
//! Concurrency: `C_t` lives in the thread's own `ThreadState` (only that thread
//! writes it). The clocks of locks with small ids (the dense ids of traces) live in
//! a table of [`SpinCell`]s, one per lock; the clocks of other locks (a VM's
//! monitors, keyed by the object's address) in a direct-mapped table of boxed
//! [`SpinCell`]s (`BoxTable`: an acquire reads the slot, takes the clock's spin lock
//! and joins, with no shared mutex and no hashing — synclist under `fasttrack`
//! spent 11% of its time in the sharded map this replaced, most of it waiting for
//! the shard's mutex and the map's control bytes to come over from the other core);
//! volatile and barrier clocks live in sharded maps behind mutexes. The producer's
//! ordering guarantees make each update happen-before the reads that depend on it,
//! the locks make that a Rust-level guarantee too.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use hashbrown::HashMap;
use parking_lot::Mutex;

use crate::event::{Event, EventKind, Loc, ObjId, Tid};
use crate::passes::shadow::BoxTable;
use crate::spin::SpinCell;
use crate::thread::ThreadState;
use crate::vc::VectorClock;

const SHARDS: usize = 16;

fn shard_of(key: u64) -> usize {
    ((key >> 3) ^ (key >> 11)) as usize % SHARDS
}

struct BarrierEpisode {
    clock: VectorClock,
    arrived: u32,
    departed: u32,
}

/// Locks with ids below this have their clock in [`Clocks::small_locks`].
const SMALL_LOCKS: usize = 4096;

pub struct Clocks {
    /// `L_m` of lock `m < SMALL_LOCKS` (empty: never released, the same as absent).
    small_locks: Box<[SpinCell<VectorClock>]>,
    /// `L_m` of the other locks (a VM's monitors: keyed by the object's address).
    locks: BoxTable<VectorClock>,
    volatiles: [Mutex<HashMap<Loc, VectorClock>>; SHARDS],
    barriers: Mutex<HashMap<(ObjId, u64), BarrierEpisode>>,
    finished: Mutex<HashMap<Tid, VectorClock>>,
    /// Threads forked (the main thread included) and not ended.
    live: AtomicU32,
    /// The frontier (see the module documentation) and how often it advanced.
    frontier: Mutex<VectorClock>,
    frontier_advances: AtomicU64,
}

impl Default for Clocks {
    fn default() -> Self {
        Clocks {
            small_locks: (0..SMALL_LOCKS).map(|_| SpinCell::default()).collect(),
            locks: BoxTable::default(),
            volatiles: Default::default(),
            barriers: Default::default(),
            finished: Default::default(),
            live: AtomicU32::new(1),
            frontier: Default::default(),
            frontier_advances: AtomicU64::new(0),
        }
    }
}

impl Clocks {
    pub fn new() -> Self {
        Self::default()
    }

    /// The clock of the main thread at its start.
    pub fn initial(tid: Tid) -> VectorClock {
        let mut vc = VectorClock::new();
        vc.set(tid, 1);
        vc
    }

    /// Fork: returns the child's initial clock and advances the parent.
    pub fn fork(&self, parent: &mut ThreadState, child: Tid) -> VectorClock {
        self.live.fetch_add(1, Ordering::SeqCst);
        let mut c = parent.vc.clone();
        c.set(child, c.get(child).max(1));
        parent.vc.tick(parent.tid);
        c
    }

    /// Run `f` on the clock of `lock` (`L_m`: its last releaser's clock), if it was
    /// ever released. Read by passes that label happens-before edges (`grits`).
    pub fn with_lock<R>(&self, lock: ObjId, f: impl FnOnce(Option<&VectorClock>) -> R) -> R {
        if (lock.0 as usize) < SMALL_LOCKS {
            // An empty clock: never released (a release stores at least `C_t[t] >= 1`).
            let l = self.small_locks[lock.0 as usize].lock();
            return f((!l.is_empty()).then_some(&*l));
        }
        let l = self.locks.cell(lock.0, VectorClock::new).lock();
        f((!l.is_empty()).then_some(&*l))
    }

    /// Run `f` on the clock of volatile `loc` (`L_v`), if it was ever written.
    pub fn with_volatile<R>(&self, loc: Loc, f: impl FnOnce(Option<&VectorClock>) -> R) -> R {
        f(self.volatiles[shard_of(loc.key())].lock().get(&loc))
    }

    /// Run `f` on the final clock of thread `tid`, if it has ended.
    pub fn with_finished<R>(&self, tid: Tid, f: impl FnOnce(Option<&VectorClock>) -> R) -> R {
        f(self.finished.lock().get(&tid))
    }

    /// Run `f` on the clock of an open barrier episode (all arrivals so far).
    pub fn with_barrier<R>(
        &self,
        barrier: ObjId,
        generation: u64,
        f: impl FnOnce(Option<&VectorClock>) -> R,
    ) -> R {
        f(self
            .barriers
            .lock()
            .get(&(barrier, generation))
            .map(|e| &e.clock))
    }

    /// How often the frontier advanced (cheap: compare before taking it).
    pub fn frontier_advances(&self) -> u64 {
        self.frontier_advances.load(Ordering::Acquire)
    }

    /// The frontier: every live thread's clock is at least it, from now on.
    pub fn frontier(&self) -> VectorClock {
        self.frontier.lock().clone()
    }

    /// Apply the rule for one event of `t` (no-op for non-synchronization events and
    /// for `Fork`, which the chain handles through [`Clocks::fork`]).
    pub fn apply(&self, t: &mut ThreadState, ev: &Event<'_>) {
        match ev.kind {
            EventKind::Acquire { lock } if (lock.0 as usize) < SMALL_LOCKS => {
                t.vc.join(&self.small_locks[lock.0 as usize].lock());
            }
            EventKind::Release { lock } if (lock.0 as usize) < SMALL_LOCKS => {
                self.small_locks[lock.0 as usize].lock().assign(&t.vc);
                t.vc.tick(t.tid);
            }
            EventKind::Acquire { lock } => {
                t.vc.join(&self.locks.cell(lock.0, VectorClock::new).lock());
            }
            EventKind::Release { lock } => {
                self.locks
                    .cell(lock.0, VectorClock::new)
                    .lock()
                    .assign(&t.vc);
                t.vc.tick(t.tid);
            }
            EventKind::VolatileWrite { loc, .. } => {
                {
                    let mut shard = self.volatiles[shard_of(loc.key())].lock();
                    shard.entry(loc).or_default().join(&t.vc);
                }
                t.vc.tick(t.tid);
            }
            EventKind::VolatileRead { loc } => {
                let shard = self.volatiles[shard_of(loc.key())].lock();
                if let Some(l) = shard.get(&loc) {
                    t.vc.join(l);
                }
            }
            EventKind::Join { child } => {
                if let Some(c) = self.finished.lock().get(&child) {
                    t.vc.join(c);
                }
            }
            EventKind::BarrierEnter {
                barrier,
                generation,
                parties,
            } => {
                let mut b = self.barriers.lock();
                let ep = b
                    .entry((barrier, generation))
                    .or_insert_with(|| BarrierEpisode {
                        clock: VectorClock::new(),
                        arrived: 0,
                        departed: 0,
                    });
                ep.clock.join(&t.vc);
                ep.arrived += 1;
                // The last arrival: the other parties wait in the barrier (no
                // departure before every arrival is delivered), so if they are all
                // the live threads, none can fork, end or access before it leaves.
                if ep.arrived == parties && self.live.load(Ordering::SeqCst) == parties {
                    self.frontier.lock().join(&ep.clock);
                    self.frontier_advances.fetch_add(1, Ordering::Release);
                }
            }
            EventKind::BarrierExit {
                barrier,
                generation,
                parties,
            } => {
                let mut b = self.barriers.lock();
                if let Some(ep) = b.get_mut(&(barrier, generation)) {
                    t.vc.join(&ep.clock);
                    ep.departed += 1;
                    if ep.departed >= parties {
                        b.remove(&(barrier, generation));
                    }
                }
                t.vc.tick(t.tid);
            }
            EventKind::ThreadEnd => {
                self.finished.lock().insert(t.tid, t.vc.clone());
                self.live.fetch_sub(1, Ordering::SeqCst);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::SiteId;

    fn ev(tid: Tid, kind: EventKind<'static>) -> Event<'static> {
        Event {
            tid,
            site: SiteId(0),
            index: 0,
            kind,
        }
    }

    /// A VM monitor's clock (an object's address, past the small ids) is the last
    /// releaser's: an acquire joins it, one before any release joins nothing, and
    /// each lock keeps its own.
    #[test]
    fn object_lock_clocks_order_release_before_acquire() {
        let clocks = Clocks::new();
        let (m, other) = (ObjId(0x7f00_0000_1000), ObjId(0x7f00_0000_1008));
        let mut t0 = ThreadState::new(0, Clocks::initial(0));
        let mut t1 = ThreadState::new(1, Clocks::initial(1));
        clocks.apply(&mut t1, &ev(1, EventKind::Acquire { lock: m }));
        assert_eq!(t1.vc.get(0), 0, "nothing released yet");
        assert!(clocks.with_lock(m, |l| l.is_none()));

        t0.vc.set(0, 5);
        clocks.apply(&mut t0, &ev(0, EventKind::Release { lock: m }));
        assert_eq!(t0.vc.get(0), 6, "a release ticks the releaser");
        assert_eq!(clocks.with_lock(m, |l| l.map(|l| l.get(0))), Some(5));

        clocks.apply(&mut t1, &ev(1, EventKind::Acquire { lock: other }));
        assert_eq!(t1.vc.get(0), 0, "another lock's clock is its own");
        clocks.apply(&mut t1, &ev(1, EventKind::Acquire { lock: m }));
        assert_eq!(t1.vc.get(0), 5, "the acquire joins the releaser's clock");
        assert_eq!(t1.vc.get(1), 1);
    }
}
