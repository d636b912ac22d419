//! A small lock: one byte taken with a single `swap` and released with a plain
//! store. The per-location locks of SingleTrack and the per-lock clocks of
//! [`crate::clocks`] are held for a few dozen instructions and almost never
//! contended, so the `parking_lot` mutex's locked compare-and-swap on release is
//! pure cost there; a waiter spins briefly and then yields its time slice (the
//! holder may have been preempted).

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
pub struct SpinCell<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a guard, and at most one guard exists at a
// time (`lock`); handing `T` between threads that way needs exactly `T: Send`.
unsafe impl<T: Send> Sync for SpinCell<T> {}
unsafe impl<T: Send> Send for SpinCell<T> {}

pub struct SpinGuard<'a, T> {
    cell: &'a SpinCell<T>,
}

impl<T> SpinCell<T> {
    pub const fn new(value: T) -> Self {
        SpinCell {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        if self.locked.swap(true, Ordering::Acquire) {
            self.lock_slow();
        }
        SpinGuard { cell: self }
    }

    #[cold]
    fn lock_slow(&self) {
        let mut spins = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                if spins < 64 {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if !self.locked.swap(true, Ordering::Acquire) {
                return;
            }
        }
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock.
        unsafe { &*self.cell.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard holds the lock, and `&mut self` makes the borrow unique.
        unsafe { &mut *self.cell.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.cell.locked.store(false, Ordering::Release);
    }
}

/// Set `bit` in `word` once no other thread holds it (spinning briefly, then
/// yielding: the holder may have been preempted); returns the word as it was, without
/// `bit`. The slow path of the lock bits kept in a word of other state (FastTrack's
/// cells, SingleTrack's locations and sole accessors).
#[cold]
pub fn lock_bit(word: &std::sync::atomic::AtomicU64, bit: u64) -> u64 {
    let mut spins = 0u32;
    loop {
        let w = word.load(Ordering::Relaxed);
        if w & bit == 0 {
            if word
                .compare_exchange_weak(w, w | bit, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return w;
            }
        } else if spins < 64 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SpinCell;

    #[test]
    fn excludes_parallel_updates() {
        let c: SpinCell<u64> = SpinCell::default();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50_000 {
                        *c.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*c.lock(), 200_000);
    }
}
