//! Reentrant monitors with `wait`/`notify`/`notifyAll`, and cyclic barriers.
//!
//! A monitor record (see [`crate::layout`]) is acquired by CAS on its owner word
//! (fast path, no lock). A thread that fails registers as a contender, then retries
//! under the [`crate::sched::World`] lock and blocks there; a releaser that sees
//! contenders wakes one under the same lock. Contenders count (SeqCst) against the
//! owner store (SeqCst) is Dekker's handshake: either the releaser sees the contender
//! or the contender's retry sees the monitor free, so no wake-up is lost.
//!
//! Analysis events are delivered by the caller (the interpreter): `Acquire` after
//! [`acquire`] returns `true` (outermost), `Release` before [`unlock`].

use std::sync::atomic::{AtomicU64, Ordering};

use lang::ir::SiteId;

use crate::Tid;
use crate::error::StackFrame;
use crate::heap::{self, Arena, Heap};
use crate::layout;
use crate::sched::{BlockInfo, Blocked, Sched, Stop, World};

/// The current thread does not hold the monitor it releases, waits on or notifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotHeld;

/// Whether `me` holds `obj`'s monitor (an object whose monitor was never taken has
/// no record yet: nobody holds it).
pub fn holds(me: Tid, obj: u64) -> bool {
    holder_record(me, obj).is_ok()
}

/// Acquire `obj`'s monitor for `me`. `Ok(true)` for an outermost acquire.
pub fn acquire(
    heap: &Heap,
    sched: &Sched,
    arena: &mut Arena,
    me: Tid,
    obj: u64,
    site: SiteId,
    stack: &dyn Fn() -> Vec<StackFrame>,
) -> Result<bool, Stop> {
    let m = heap.monitor(arena, obj);
    let owner = heap::word(m, layout::MON_OWNER);
    let mine = me as u64 + 1;
    if owner.load(Ordering::Relaxed) == mine {
        let c = heap::word(m, layout::MON_COUNT);
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        return Ok(false);
    }
    if owner
        .compare_exchange(0, mine, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        contend(sched, m, me, obj, site, stack)?;
    }
    heap::store(m, layout::MON_COUNT, 1);
    Ok(true)
}

/// The slow path: block until the monitor is ours.
fn contend(
    sched: &Sched,
    m: u64,
    me: Tid,
    obj: u64,
    site: SiteId,
    stack: &dyn Fn() -> Vec<StackFrame>,
) -> Result<(), Stop> {
    let owner = heap::word(m, layout::MON_OWNER);
    let contenders = heap::word(m, layout::MON_CONTENDERS);
    let mine = me as u64 + 1;
    if !sched.is_seeded() && spin_for(owner, mine) {
        return Ok(());
    }
    contenders.fetch_add(1, Ordering::SeqCst);
    let mut g = sched.lock();
    loop {
        if owner
            .compare_exchange(0, mine, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            contenders.fetch_sub(1, Ordering::SeqCst);
            return Ok(());
        }
        g.entry.entry(obj).or_default().push_back(me);
        let info = BlockInfo {
            what: Blocked::Monitor { obj },
            site,
            stack: stack(),
        };
        sched.block(&mut g, me, info)?;
    }
}

/// Rounds of [`spin_for`]: round `i` spins `2^min(i, SPIN_SHIFT)` pauses, then tries
/// the monitor once. 10 rounds are 511 pauses, about 14 µs on this machine's EPYC
/// (28 ns a pause): longer than most guest critical sections with their analysis,
/// shorter than a futex sleep and wake-up with two task switches.
const SPIN_ROUNDS: u32 = 10;
const SPIN_SHIFT: u32 = 7;

/// Under the `os` scheduler, before a contender blocks: try the monitor a bounded
/// number of times while its holder runs on another core. True when it is ours.
///
/// Measured on `synclist_large` (two workers on one synchronized list; 4 rounds of
/// alternating runs, medians): bare 1.12 → 0.69 s, `fasttrack` 5.18 → 2.85 s,
/// `bigfoot` 6.28 → 4.02 s; before, most of its time was the kernel's scheduler. Not under `seeded`: one guest
/// thread runs at a time there, so the holder cannot release while we spin.
fn spin_for(owner: &AtomicU64, mine: u64) -> bool {
    for i in 0..SPIN_ROUNDS {
        for _ in 0..1u32 << i.min(SPIN_SHIFT) {
            std::hint::spin_loop();
        }
        if owner.load(Ordering::Relaxed) == 0
            && owner
                .compare_exchange(0, mine, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return true;
        }
    }
    false
}

/// Leave one level of `obj`'s monitor. `Ok(Some(record))` when this was the outermost
/// level: the caller delivers `Release` and then calls [`unlock`].
pub fn exit(me: Tid, obj: u64) -> Result<Option<u64>, NotHeld> {
    let m = holder_record(me, obj)?;
    let c = heap::load(m, layout::MON_COUNT);
    if c > 1 {
        heap::store(m, layout::MON_COUNT, c - 1);
        return Ok(None);
    }
    Ok(Some(m))
}

/// The monitor record of `obj` if `me` holds it.
fn holder_record(me: Tid, obj: u64) -> Result<u64, NotHeld> {
    let m = heap::word(obj, layout::MONITOR).load(Ordering::Acquire);
    if m == 0 || heap::word(m, layout::MON_OWNER).load(Ordering::Relaxed) != me as u64 + 1 {
        return Err(NotHeld);
    }
    Ok(m)
}

/// Give the monitor up (after an outermost [`exit`]).
pub fn unlock(sched: &Sched, m: u64, obj: u64) {
    heap::store(m, layout::MON_COUNT, 0);
    heap::word(m, layout::MON_OWNER).store(0, Ordering::SeqCst);
    if heap::word(m, layout::MON_CONTENDERS).load(Ordering::SeqCst) > 0 {
        let mut g = sched.lock();
        wake_contender(&mut g, obj);
    }
}

fn wake_contender(g: &mut World, obj: u64) {
    if let Some(q) = g.entry.get_mut(&obj)
        && let Some(t) = q.pop_front()
    {
        g.wake(t);
    }
}

/// Check that `me` may wait on `obj`; returns the monitor record.
pub fn check_held(me: Tid, obj: u64) -> Result<u64, NotHeld> {
    holder_record(me, obj)
}

/// `obj.wait()` after [`check_held`] and after the caller delivered `Release`:
/// release completely, sleep until notified, re-acquire with the same recursion
/// count. The caller then delivers `Acquire`.
pub fn wait(
    sched: &Sched,
    m: u64,
    me: Tid,
    obj: u64,
    site: SiteId,
    stack: &dyn Fn() -> Vec<StackFrame>,
) -> Result<(), Stop> {
    let saved = heap::load(m, layout::MON_COUNT);
    {
        let mut g = sched.lock();
        g.waitsets.entry(obj).or_default().push_back(me);
        heap::store(m, layout::MON_COUNT, 0);
        heap::word(m, layout::MON_OWNER).store(0, Ordering::SeqCst);
        if heap::word(m, layout::MON_CONTENDERS).load(Ordering::SeqCst) > 0 {
            wake_contender(&mut g, obj);
        }
        let info = BlockInfo {
            what: Blocked::Wait { obj },
            site,
            stack: stack(),
        };
        sched.block(&mut g, me, info)?;
    }
    let owner = heap::word(m, layout::MON_OWNER);
    if owner
        .compare_exchange(0, me as u64 + 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        contend(sched, m, me, obj, site, stack)?;
    }
    heap::store(m, layout::MON_COUNT, saved);
    Ok(())
}

/// `obj.notify()` / `notifyAll()`, after [`check_held`].
pub fn notify(sched: &Sched, obj: u64, all: bool) {
    let mut g = sched.lock();
    let woken: Vec<Tid> = match g.waitsets.get_mut(&obj) {
        Some(q) if all => q.drain(..).collect(),
        Some(q) => q.pop_front().into_iter().collect(),
        None => Vec::new(),
    };
    for t in woken {
        g.wake(t);
    }
}

/// `b.await()`: `enter(generation, parties)` is called (under the scheduler lock, so
/// atomically with the arrival) before arriving; returns the episode's generation
/// and parties once it has tripped.
pub fn barrier_await(
    sched: &Sched,
    me: Tid,
    b: u64,
    site: SiteId,
    stack: &dyn Fn() -> Vec<StackFrame>,
    enter: &mut dyn FnMut(u64, u32),
) -> Result<(u64, u32), Stop> {
    let mut g = sched.lock();
    let generation = heap::load(b, layout::BARRIER_GENERATION);
    let parties = heap::load(b, layout::BARRIER_PARTIES);
    enter(generation, parties as u32);
    let arrived = heap::load(b, layout::BARRIER_ARRIVED) + 1;
    if arrived >= parties {
        heap::store(b, layout::BARRIER_ARRIVED, 0);
        heap::store(b, layout::BARRIER_GENERATION, generation + 1);
        for t in g.barrier_waiters.remove(&b).unwrap_or_default() {
            g.wake(t);
        }
    } else {
        heap::store(b, layout::BARRIER_ARRIVED, arrived);
        g.barrier_waiters.entry(b).or_default().push(me);
        let info = BlockInfo {
            what: Blocked::Barrier { obj: b, generation },
            site,
            stack: stack(),
        };
        sched.block(&mut g, me, info)?;
    }
    Ok((generation, parties as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinning_takes_a_free_monitor_and_gives_up_on_a_held_one() {
        let free = AtomicU64::new(0);
        assert!(spin_for(&free, 3));
        assert_eq!(free.load(Ordering::Relaxed), 3);

        let held = AtomicU64::new(7);
        assert!(
            !spin_for(&held, 3),
            "a monitor nobody releases is not taken"
        );
        assert_eq!(held.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn spinning_takes_a_monitor_released_meanwhile() {
        let owner = std::sync::Arc::new(AtomicU64::new(7));
        let o = owner.clone();
        let releaser = std::thread::spawn(move || {
            // Release once the spinner is likely spinning; either way the outcome
            // below is one owner, never two.
            std::thread::sleep(std::time::Duration::from_micros(2));
            o.compare_exchange(7, 0, Ordering::Release, Ordering::Relaxed)
                .unwrap();
        });
        let took = spin_for(&owner, 3);
        releaser.join().unwrap();
        let now = owner.load(Ordering::Relaxed);
        assert_eq!(now, if took { 3 } else { 0 });
    }
}
