//! Vector clocks and epochs (FastTrack, Flanagan & Freund PLDI'09, §3).

use crate::event::Tid;

/// A logical clock value.
pub type Clock = u32;

/// An epoch `c@t`: the clock `c` of thread `t`. `c@t ⪯ V` iff `c <= V[t]`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Epoch {
    pub tid: Tid,
    pub clock: Clock,
}

impl Epoch {
    pub const NONE: Epoch = Epoch { tid: 0, clock: 0 };
    #[inline]
    pub fn new(tid: Tid, clock: Clock) -> Self {
        Epoch { tid, clock }
    }
    /// The epoch as one word (thread in the high half, clock in the low), for shadow
    /// cells that keep epochs in atomics.
    #[inline]
    pub fn pack(self) -> u64 {
        // The two top bits are tags of the shadow words that hold packed epochs
        // (FastTrack's lock and shared-read tags).
        debug_assert!(self.tid < 1 << 30);
        ((self.tid as u64) << 32) | self.clock as u64
    }
    /// The inverse of [`Epoch::pack`].
    #[inline]
    pub fn unpack(x: u64) -> Epoch {
        Epoch::new((x >> 32) as Tid, x as u32)
    }
    /// `self ⪯ v`: the event at this epoch happens before (or is) the state `v`.
    #[inline]
    pub fn leq(self, v: &VectorClock) -> bool {
        self.clock <= v.get(self.tid)
    }
}

/// A vector clock `Tid → Clock`; entries past the end are 0.
#[derive(Clone, PartialEq, Eq, Debug, Default, Hash)]
pub struct VectorClock {
    c: Vec<Clock>,
}

impl VectorClock {
    pub fn new() -> Self {
        VectorClock { c: Vec::new() }
    }
    #[inline]
    pub fn get(&self, t: Tid) -> Clock {
        self.c.get(t as usize).copied().unwrap_or(0)
    }
    #[inline]
    pub fn set(&mut self, t: Tid, v: Clock) {
        let i = t as usize;
        if i >= self.c.len() {
            self.c.resize(i + 1, 0);
        }
        self.c[i] = v;
    }
    /// `self[t] += 1`.
    #[inline]
    pub fn tick(&mut self, t: Tid) {
        let v = self.get(t) + 1;
        self.set(t, v);
    }
    /// The epoch `self[t]@t`.
    #[inline]
    pub fn epoch(&self, t: Tid) -> Epoch {
        Epoch::new(t, self.get(t))
    }
    /// `self := self ⊔ other` (pointwise max).
    pub fn join(&mut self, other: &VectorClock) {
        if other.c.len() > self.c.len() {
            self.c.resize(other.c.len(), 0);
        }
        for (a, b) in self.c.iter_mut().zip(other.c.iter()) {
            if *b > *a {
                *a = *b;
            }
        }
    }
    /// `self ⊑ other` (pointwise ≤).
    pub fn leq(&self, other: &VectorClock) -> bool {
        self.c
            .iter()
            .enumerate()
            .all(|(i, &v)| v <= other.get(i as Tid))
    }
    /// Copy `other` into `self`, reusing the allocation.
    pub fn assign(&mut self, other: &VectorClock) {
        self.c.clear();
        self.c.extend_from_slice(&other.c);
    }
    /// Entries `(t, c)` with `c > 0`.
    pub fn entries(&self) -> impl Iterator<Item = (Tid, Clock)> + '_ {
        self.c
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(t, c)| (t as Tid, *c))
    }
    /// The entries `[C[0], C[1], …]` (the vector's own buffer).
    pub(crate) fn as_slice(&self) -> &[Clock] {
        &self.c
    }
    /// Number of slots allocated (for memory statistics).
    pub fn len(&self) -> usize {
        self.c.len()
    }
    pub fn is_empty(&self) -> bool {
        self.c.iter().all(|c| *c == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_and_leq() {
        let mut a = VectorClock::new();
        a.set(0, 3);
        let mut b = VectorClock::new();
        b.set(2, 5);
        assert!(!a.leq(&b));
        b.join(&a);
        assert!(a.leq(&b));
        assert_eq!(b.get(0), 3);
        assert_eq!(b.get(1), 0);
        assert_eq!(b.get(2), 5);
        assert!(Epoch::new(2, 5).leq(&b));
        assert!(!Epoch::new(2, 6).leq(&b));
    }
}
