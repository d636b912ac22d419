//! Exact OrderSets from vector clocks: which synchronization devices lie on
//! happens-before paths from an earlier access to now.
//!
//! Hominy (Wood, *Hominy Grits*, Williams College 2008, Ch. 4, Defs. 4.1/4.2) keeps,
//! per variable, a set of labelled sync events and updates every variable's set at
//! every synchronization action. That set forgets time (§6.2.2 of the thesis: an
//! acquire can be paired with a release made after it) and the eager update touches
//! every variable. Here each thread instead carries its *device knowledge*
//! `K_t : Device → VectorClock`, with the invariant
//!
//! ```text
//! K_t[d][w] = max { src(e)[w] | e a synchronizes-with edge through device d
//!                               whose destination happens before (or is) t's next event }
//! ```
//!
//! where `src(e)` is the happens-before clock of the edge's source (the releasing
//! thread's clock at the release, the volatile's clock at the read, the parent's clock
//! at the fork, the child's final clock at the join). An earlier access at epoch `c@w`
//! is then ordered before now *through* `d` iff `K_t[d][w] >= c`: some edge through `d`
//! has the access before its source and its destination before now. The OrderSet of
//! an access is every such `d`: the union over all time-respecting paths, exactly.
//!
//! Knowledge flows along the same edges as the clocks (`crate::clocks`): a release
//! publishes `K_t` with `[m] ⊔= C_t` as the lock's package, an acquire joins the
//! package into `K_t`; volatiles, forks, joins and barrier episodes likewise. Packages
//! are shared copy-on-write (`Arc`), and so is each entry's clock, so a join skips the
//! entries the two sides share.

use std::sync::Arc;

use crate::event::{Loc, ObjId, Tid};
use crate::vc::{Epoch, VectorClock};

/// A synchronization device (thesis Def. 4.2: locks, volatiles, forking threads,
/// joined threads). A barrier episode orders through its barrier object, which is
/// reported like a lock (the thesis: "a barrier built on a monitor b shows up as
/// guarded-by b").
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Device {
    Lock(ObjId),
    Vol(Loc),
    Forker(Tid),
    Joined(Tid),
}

/// An OrderSet: the devices ordering an access after the previous conflicting one,
/// sorted and without duplicates.
pub type OrderSet = Vec<Device>;

/// `K_t`, sorted by device.
#[derive(Clone, Default, Debug)]
pub struct Knowledge {
    entries: Vec<(Device, Arc<VectorClock>)>,
}

impl Knowledge {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `K[d] ⊔= vc`; true if something changed.
    pub fn add(&mut self, d: Device, vc: &VectorClock) -> bool {
        match self.entries.binary_search_by(|(e, _)| e.cmp(&d)) {
            Ok(i) => {
                let cur = &mut self.entries[i].1;
                if vc.leq(cur) {
                    return false;
                }
                Arc::make_mut(cur).join(vc);
                true
            }
            Err(i) => {
                self.entries.insert(i, (d, Arc::new(vc.clone())));
                true
            }
        }
    }

    /// Whether `K[d]` already covers `vc`.
    pub fn entry_covers(&self, d: Device, vc: &VectorClock) -> bool {
        match self.entries.binary_search_by(|(e, _)| e.cmp(&d)) {
            Ok(i) => vc.leq(&self.entries[i].1),
            Err(_) => false,
        }
    }

    /// `K ⊔= other`, entry by entry; true if something changed.
    pub fn join(&mut self, other: &Knowledge) -> bool {
        let mut changed = false;
        let mut i = 0;
        for (d, vc) in &other.entries {
            while i < self.entries.len() && self.entries[i].0 < *d {
                i += 1;
            }
            if i < self.entries.len() && self.entries[i].0 == *d {
                let cur = &mut self.entries[i].1;
                if !Arc::ptr_eq(cur, vc) && !vc.leq(cur) {
                    if cur.leq(vc) {
                        *cur = vc.clone();
                    } else {
                        Arc::make_mut(cur).join(vc);
                    }
                    changed = true;
                }
            } else {
                self.entries.insert(i, (*d, vc.clone()));
                changed = true;
            }
            i += 1;
        }
        changed
    }

    /// The devices through which an access at epoch `e` is ordered before now.
    pub fn order_set(&self, e: Epoch, out: &mut OrderSet) {
        for (d, vc) in &self.entries {
            if vc.get(e.tid) >= e.clock {
                out.push(*d);
            }
        }
    }
}

/// Merge `b` into the sorted, duplicate-free `a`.
pub fn union_into(a: &mut OrderSet, b: &[Device]) {
    for d in b {
        if let Err(i) = a.binary_search(d) {
            a.insert(i, *d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vc(entries: &[(Tid, u32)]) -> VectorClock {
        let mut v = VectorClock::new();
        for (t, c) in entries {
            v.set(*t, *c);
        }
        v
    }

    #[test]
    fn order_set_keeps_devices_whose_source_follows_the_access() {
        let mut k = Knowledge::new();
        k.add(Device::Lock(ObjId(8)), &vc(&[(0, 3)]));
        k.add(Device::Lock(ObjId(16)), &vc(&[(0, 1)]));
        k.add(Device::Forker(0), &vc(&[(0, 2)]));
        let mut m = Vec::new();
        k.order_set(Epoch::new(0, 2), &mut m);
        assert_eq!(m, vec![Device::Lock(ObjId(8)), Device::Forker(0)]);
        m.clear();
        k.order_set(Epoch::new(0, 4), &mut m);
        assert!(m.is_empty());
    }

    #[test]
    fn join_reports_changes_and_skips_shared_entries() {
        let mut a = Knowledge::new();
        a.add(Device::Lock(ObjId(8)), &vc(&[(1, 2)]));
        let b = a.clone();
        assert!(!a.join(&b), "same clocks: nothing new");
        let mut c = Knowledge::new();
        c.add(Device::Joined(3), &vc(&[(3, 5)]));
        c.add(Device::Lock(ObjId(8)), &vc(&[(2, 1)]));
        assert!(a.join(&c));
        let mut m = Vec::new();
        a.order_set(Epoch::new(2, 1), &mut m);
        assert_eq!(m, vec![Device::Lock(ObjId(8))]);
        m.clear();
        a.order_set(Epoch::new(3, 5), &mut m);
        assert_eq!(m, vec![Device::Joined(3)]);
        assert_eq!(a.len(), 2);
    }
}
