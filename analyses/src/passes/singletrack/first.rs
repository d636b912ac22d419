//! A location's lock, and its first access inside a transaction kept without a cell.
//!
//! Most locations a transaction touches are touched by one thread in one epoch (a
//! fresh object, an output array written once): their whole state is that first
//! access. Its thread, clock and kind are already in the location's stamp
//! (`clock << 32 | tid << 1 | write`, which only a later access changes, under this
//! lock); what the stamp lacks — the site, the call context, the transaction and its
//! graph node — is named by the one-word [`Rec`] that holds the lock. The location's [`Cell`]
//! (32 bytes) is built from both at its second access that changes anything, exactly
//! as [`Packed::set_first`] would have built it at the first; locations nobody
//! touches again never get one.
//!
//! The transaction, the node, the site and the call context are shared by every
//! first access a thread makes at one site in one transaction: a record is one word,
//! the lock's bits and the address of the thread's [`Origin`] for them (one per
//! change of its transaction or node and site), kept as long as the pass. A 16-byte
//! record with the site inline cost crypt 288 MB more under `singletrack:fasttrack`
//! (36 M locations, 16 origins).
//!
//! [`Cell`]: super::Cell

use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Release},
};

use super::cf::Xid;
use super::packed::{First, Packed};
use crate::ctx::CtxId;
use crate::event::{SiteId, Tid};
use crate::passes::shadow::Zeroed;
use crate::txgraph::NodeId;

/// `Rec::head`: the location's lock.
const LOCK: u64 = 1;
/// `Rec::head`: the location has a cell (which holds its state from then on).
const CELL: u64 = 2;
/// `Rec::head` above the flags: the [`Origin`] of the first access kept here (0:
/// none).
const ORIGIN: u64 = !7;

/// The transaction and the graph node a thread's first accesses ran in.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct Seg {
    pub xid: Xid,
    pub node: Option<NodeId>,
}

/// What a cell-less first access keeps beside its stamp: its transaction and node,
/// site and call context. Shared by a thread's first accesses with the same four,
/// and by the cells whose write or read has them ([`super::packed`]).
#[repr(align(8))]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct Origin {
    pub seg: Seg,
    pub site: SiteId,
    pub ctx: CtxId,
}

/// Per location: its lock, whether it has a cell, and the [`Origin`] of a cell-less
/// first access (the part its stamp does not hold; see the module doc).
#[derive(Default)]
pub(super) struct Rec {
    /// [`LOCK`] | [`CELL`] | the address of an [`Origin`] ([`ORIGIN`]).
    head: AtomicU64,
}

// SAFETY: all-zero bytes are `Rec::default()` (an atomic zero).
unsafe impl Zeroed for Rec {}

/// The location's lock, held: its cell and its record may be read and changed.
pub(super) struct Held<'a> {
    rec: &'a Rec,
    head: u64,
}

impl Rec {
    /// Take the location's lock (spinning briefly, then yielding: the holder runs a
    /// few dozen instructions, but may have been preempted).
    #[inline]
    pub(super) fn lock(&self) -> Held<'_> {
        let head = self.head.fetch_or(LOCK, Acquire);
        if head & LOCK != 0 {
            return self.lock_slow();
        }
        Held { rec: self, head }
    }

    #[cold]
    fn lock_slow(&self) -> Held<'_> {
        let head = crate::spin::lock_bit(&self.head, LOCK);
        Held { rec: self, head }
    }
}

impl Held<'_> {
    /// Whether the location's state is in its cell.
    pub(super) fn has_cell(&self) -> bool {
        self.head & CELL != 0
    }

    /// Whether the location has neither a cell nor a first access kept here.
    pub(super) fn is_new(&self) -> bool {
        self.head & !LOCK == 0
    }

    /// Keep the location's first access here: `origin` (an [`Origin`] that outlives
    /// the pass's locations, from [`Origins::get`]).
    pub(super) fn set_first(&mut self, origin: *const Origin) {
        debug_assert!(self.is_new() && origin as u64 & !ORIGIN == 0 && !origin.is_null());
        self.head = origin as u64;
    }

    /// From now on the location's state is in `cell` (the location's cell, empty
    /// before): if a first access is kept here, `cell` gets it, as
    /// [`Packed::set_first`] would have left it. `stamp` is the location's stamp,
    /// which names that access (no access changed it since: any would have come
    /// here first).
    pub(super) fn move_to_cell(&mut self, cell: &mut Packed, stamp: u64) {
        if self.has_cell() {
            return;
        }
        let origin = (self.head & ORIGIN) as *const Origin;
        if !origin.is_null() {
            // SAFETY: a record's origin lives as long as the pass (`set_first`).
            let tid = ((stamp & u64::from(u32::MAX)) >> 1) as Tid;
            let clock = std::num::NonZeroU32::new((stamp >> 32) as u32)
                .expect("a kept first access's stamp has a clock");
            cell.set_first(First::of(tid, clock, stamp & 1 != 0), origin);
        }
        self.head = CELL;
    }
}

impl Drop for Held<'_> {
    #[inline]
    fn drop(&mut self) {
        self.rec.head.store(self.head & !LOCK, Release);
    }
}

/// Every [`Origin`] made, kept as long as the pass (records point at them).
#[derive(Default)]
// Boxed one by one: an origin's address must not change as the vector grows.
#[allow(clippy::vec_box)]
pub(super) struct OriginStore(parking_lot::Mutex<Vec<Box<Origin>>>);

impl OriginStore {
    /// How many origins were made.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.lock().len()
    }

    /// A new origin `o`, kept as long as the store.
    fn make(&self, o: Origin) -> *const Origin {
        let b = Box::new(o);
        let p: *const Origin = &*b;
        self.0.lock().push(b);
        p
    }
}

/// Slots of [`Origins`]' direct-mapped front.
const FRONT: usize = crate::pass::GUARD_FRONT_SLOTS;

/// A slot of [`Origins`]' front, in the layout generated code reads
/// ([`crate::pass::InlineGuard::Stamp`]'s first-access rule): the packed site
/// `site | ctx << 32` as one `u64`, then the origin's address (0: empty).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FrontSlot {
    site: u32,
    ctx: u32,
    origin: u64,
}

const _: () =
    assert!(std::mem::size_of::<FrontSlot>() == crate::pass::GUARD_FRONT_SLOT_BYTES as usize);

/// A thread's [`Origin`]s for its current [`Seg`]: one per site and call context,
/// made (and kept in the pass's [`OriginStore`]) at the first access that needs it,
/// forgotten (not freed) when the segment changes; and the other origins its cells
/// needed ([`Origins::intern`]), kept.
pub(super) struct Origins {
    seg: Option<Seg>,
    /// Direct-mapped by site and context, in front of `all`; all empty when the
    /// segment changes. Its address is fixed ([`Origins::front_addr`]).
    front: Box<[FrontSlot; FRONT]>,
    all: hashbrown::HashMap<(SiteId, CtxId), *const Origin>,
    /// Origins of other segments, by value.
    other: hashbrown::HashMap<Origin, *const Origin>,
}

impl Default for Origins {
    fn default() -> Self {
        Origins {
            seg: None,
            front: Box::new([FrontSlot::default(); FRONT]),
            all: hashbrown::HashMap::new(),
            other: hashbrown::HashMap::new(),
        }
    }
}

// SAFETY: the pointers are to `Origin`s owned by the pass (immutable once made);
// sending the cache with its thread's state is sending shared references to them.
unsafe impl Send for Origins {}

impl Origins {
    /// The origin of a first access at `site` in context `ctx` during `seg`, made
    /// (and kept in `store`) if this thread has none yet.
    #[inline]
    pub(super) fn get(
        &mut self,
        seg: Seg,
        site: SiteId,
        ctx: CtxId,
        store: &OriginStore,
    ) -> *const Origin {
        if self.seg != Some(seg) {
            self.seg = Some(seg);
            self.front.fill(FrontSlot::default());
            self.all.clear();
        }
        let slot = &mut self.front[crate::pass::guard_front_slot(site.0, ctx.0)];
        if slot.site == site.0 && slot.ctx == ctx.0 && slot.origin != 0 {
            return slot.origin as *const Origin;
        }
        let p = *self
            .all
            .entry((site, ctx))
            .or_insert_with(|| store.make(Origin { seg, site, ctx }));
        *slot = FrontSlot {
            site: site.0,
            ctx: ctx.0,
            origin: p as u64,
        };
        p
    }

    /// The address of the front, whose non-empty slots hold this thread's origins
    /// for the segment of its last [`Origins::get`] (for generated code; only the
    /// thread reads it, between its calls into the pass).
    pub(super) fn front_addr(&self) -> u64 {
        self.front.as_ptr() as u64
    }

    /// An origin equal to `o`: `hint` (the address of an origin, or 0) if it is
    /// one, else the thread's origin for its current segment, or one of the others
    /// it made, or a new one (kept in `store`).
    #[inline]
    pub(super) fn intern(&mut self, o: Origin, hint: u64, store: &OriginStore) -> *const Origin {
        // SAFETY: a non-zero hint is the address of an origin in the store.
        if hint != 0 && unsafe { *(hint as *const Origin) } == o {
            return hint as *const Origin;
        }
        if self.seg == Some(o.seg) {
            return self.get(o.seg, o.site, o.ctx, store);
        }
        *self.other.entry(o).or_insert_with(|| store.make(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One origin per site and context in a segment, whatever the front's slots
    /// (sites that share one alternate), and new ones when the segment changes.
    #[test]
    fn origins_are_shared_within_a_segment_and_made_anew_after_it() {
        let store = OriginStore::default();
        let mut o = Origins::default();
        let seg = |xid| Seg { xid, node: None };
        let sites: Vec<SiteId> = (0..3 * FRONT as u32).map(SiteId).collect();
        let first: Vec<_> = sites
            .iter()
            .map(|&s| o.get(seg(1), s, CtxId(7), &store))
            .collect();
        for _ in 0..2 {
            for (&s, &p) in sites.iter().zip(&first) {
                assert_eq!(o.get(seg(1), s, CtxId(7), &store), p);
                // SAFETY: the store keeps every origin.
                let got = unsafe { *p };
                assert_eq!(
                    got,
                    Origin {
                        seg: seg(1),
                        site: s,
                        ctx: CtxId(7)
                    }
                );
            }
        }
        assert_eq!(store.0.lock().len(), sites.len(), "one per site");
        let other = o.get(seg(1), sites[0], CtxId(8), &store);
        assert!(!first.contains(&other), "another context");
        let later = o.get(seg(2), sites[0], CtxId(7), &store);
        assert!(!first.contains(&later) && later != other, "another segment");
        // SAFETY: as above.
        assert_eq!(unsafe { *later }.seg, seg(2));
    }
}
