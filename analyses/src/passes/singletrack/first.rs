//! A location's lock, and its first access inside a transaction kept without a cell.
//!
//! Most locations a transaction touches are touched by one thread in one epoch (a
//! fresh object, an output array written once): their whole state is that first
//! access. Its thread, clock and kind are already in the location's stamp
//! (`clock << 32 | tid << 1 | write`, which only a later access changes, under this
//! lock); what the stamp lacks — the site, the call context, the transaction and its
//! graph node — fits in the 16-byte [`Rec`] beside the lock. The location's [`Cell`]
//! (48 bytes) is built from both at its second access that changes anything, exactly
//! as [`Packed::set_first`] would have built it at the first; locations nobody
//! touches again never get one.
//!
//! The transaction and the node are shared by every first access a thread makes in
//! one transaction, so a record points at a [`Seg`] of the thread (one per change of
//! its transaction or node), kept as long as the pass.
//!
//! [`Cell`]: super::Cell

use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
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
/// `Rec::head` above the flags: the [`Seg`] of the first access kept here (0: none).
const SEG: u64 = !7;

/// The transaction and the graph node a thread's first accesses ran in.
#[repr(align(8))]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Seg {
    pub xid: Xid,
    pub node: Option<NodeId>,
}

/// Per location: its lock, whether it has a cell, and the part of a cell-less first
/// access that its stamp does not hold (see the module doc).
#[repr(C, align(16))]
#[derive(Default)]
pub(super) struct Rec {
    /// [`LOCK`] | [`CELL`] | the address of a [`Seg`] ([`SEG`]).
    head: AtomicU64,
    /// The first access's `site | ctx << 32`, while `head` names a [`Seg`].
    site: AtomicU64,
}

// SAFETY: all-zero bytes are `Rec::default()` (two atomic zeros).
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

    /// Keep the location's first access here: `seg` (a [`Seg`] that outlives the
    /// pass's locations), its site and call context.
    pub(super) fn set_first(&mut self, seg: *const Seg, site: SiteId, ctx: CtxId) {
        debug_assert!(self.is_new() && seg as u64 & !SEG == 0 && !seg.is_null());
        self.rec
            .site
            .store(u64::from(site.0) | u64::from(ctx.0) << 32, Relaxed);
        self.head = seg as u64;
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
        let seg = (self.head & SEG) as *const Seg;
        if !seg.is_null() {
            // SAFETY: a record's segment lives as long as the pass (`set_first`).
            let seg = unsafe { *seg };
            let site = self.rec.site.load(Relaxed);
            let tid = ((stamp & u64::from(u32::MAX)) >> 1) as Tid;
            let clock = std::num::NonZeroU32::new((stamp >> 32) as u32)
                .expect("a kept first access's stamp has a clock");
            let first = First::of(
                tid,
                clock,
                SiteId(site as u32),
                CtxId((site >> 32) as u32),
                stamp & 1 != 0,
                seg.xid,
            );
            cell.set_first(first, seg.node);
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

/// Every [`Seg`] made, kept as long as the pass (records point at them).
#[derive(Default)]
// Boxed one by one: a segment's address must not change as the vector grows.
#[allow(clippy::vec_box)]
pub(super) struct SegStore(parking_lot::Mutex<Vec<Box<Seg>>>);

/// A thread's [`Seg`]s: the current one, made anew (and kept in the pass's
/// [`SegStore`]) when its transaction or node changes.
#[derive(Default)]
pub(super) struct Segs {
    current: Option<(Seg, *const Seg)>,
}

// SAFETY: the pointer is to a `Seg` owned by the pass (immutable once made); sending
// the cache with its thread's state is sending a shared reference to it.
unsafe impl Send for Segs {}

impl Segs {
    /// The segment `seg`, made (and kept in `all`) if it is not the current one.
    pub(super) fn get(&mut self, seg: Seg, all: &SegStore) -> *const Seg {
        match self.current {
            Some((s, p)) if s == seg => p,
            _ => {
                let b = Box::new(seg);
                let p: *const Seg = &*b;
                all.0.lock().push(b);
                self.current = Some((seg, p));
                p
            }
        }
    }
}
