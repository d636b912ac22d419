//! A location's [`Cell`] in 32 bytes (against 128 unpacked; its lock is in
//! [`super::first::Rec`]).
//!
//! Most locations a transaction touches hold the state of that one transaction: a
//! write, a read since, and the transaction's graph node as the writer and the
//! reader. [`Packed`] keeps exactly that inline: per access its thread, flags and
//! clock in one word, and its [`Origin`] — the transaction, the graph node (writer's
//! or reader's), the site and the call context — as the address of an interned
//! value, which all the locations a thread touches at one site in one transaction
//! share ([`Origins::intern`]). Any other state (two transactions' entries, reads of
//! two threads, a trace line to report, a thread id at or above 2^24) moves to a
//! boxed [`Cell`] and stays there, so a location whose state alternates does not
//! allocate at every change. A cell is worked on unpacked ([`Packed::with`]): the
//! rules of [`super::cf`] and of the graph see the same [`Cell`] either way.
//!
//! Until 2026-12-02 the site, context, transaction and node were inline (48 bytes):
//! crypt's intermediate array (12 M cells, each a write of one thread and a read of
//! another) cost 187 MiB more under the default chain.

use std::num::NonZeroU32;

use super::Cell;
use super::cf::{CfAccess, CfCell, CfSlim, Slim, Xid};
use super::first::{Origin, OriginStore, Origins, Seg};
use super::small::Small;
use crate::ctx::CtxId;
use crate::event::{SiteId, Tid};
use crate::txgraph::NodeId;

/// Bits of an access's thread word (the low half of `w`, `r`) above the thread id.
const PRESENT: u32 = 1 << 31;
const VOLATILE: u32 = 1 << 30;
/// `w`: the cell holds a transaction's entries (its id is in the origins).
const TX: u32 = 1 << 29;
/// `w`: a conflict was reported in the transaction.
const REPORTED: u32 = 1 << 28;
/// `r`: `ro` is a `Box<Cell>`, everything else unused.
const BOXED: u32 = 1 << 29;
const TID_LIMIT: Tid = 1 << 24;

#[repr(C)]
#[derive(Default)]
pub(super) struct Packed {
    /// The write: its thread word (thread id, [`PRESENT`], [`VOLATILE`], and the
    /// cell's [`TX`] and [`REPORTED`]) in the low half, its clock in the high half.
    w: u64,
    /// The address of the write side's [`Origin`]: the transaction, the writer's
    /// node, the write's site and context (0: no write, no writer, or no state).
    wo: u64,
    /// The read: as `w` (the reader's thread id even without a read, for a
    /// reader's node; [`BOXED`]).
    r: u64,
    /// The read side's [`Origin`]: the transaction, the reader's node, the read's
    /// site and context (0: no read and no reader); or the address of the boxed
    /// cell ([`BOXED`]).
    ro: u64,
}

fn thread_word(a: Option<Slim>) -> u64 {
    a.map_or(0, |a| {
        let vol = if a.volatile { VOLATILE } else { 0 };
        u64::from(a.tid | PRESENT | vol) | u64::from(a.clock.get()) << 32
    })
}

/// The access of the thread word `word`, with its origin's site and context.
fn unpack_access(word: u64, origin: Option<Origin>) -> Option<Slim> {
    let f = word as u32;
    (f & PRESENT != 0).then(|| {
        let o = origin.expect("a stored access has an origin");
        Slim {
            tid: f & (TID_LIMIT - 1),
            clock: NonZeroU32::new((word >> 32) as u32).expect("a stored clock is not 0"),
            site: o.site,
            ctx: o.ctx,
            volatile: f & VOLATILE != 0,
        }
    })
}

/// The origin at `addr` (0: none).
fn origin_at(addr: u64) -> Option<Origin> {
    // SAFETY: a cell's origins come from `Origins`, which keeps them as long as the
    // pass (`OriginStore`); they are never changed.
    (addr != 0).then(|| unsafe { *(addr as *const Origin) })
}

/// Whether the inline layout holds `s` with these graph entries: thread ids below
/// [`TID_LIMIT`], the reader's thread the read's.
fn fits(s: &CfSlim, reader: Option<(Tid, NodeId)>) -> bool {
    let tids = [
        s.write.map(|a| a.tid),
        s.read.map(|a| a.tid),
        reader.map(|r| r.0),
    ];
    tids.iter().flatten().all(|&t| t < TID_LIMIT)
        && match (s.read, reader) {
            (Some(a), Some((u, _))) => a.tid == u,
            _ => true,
        }
}

/// A location's first access, as [`Packed::set_first`] stores it: a plain access
/// (no trace line) of a thread below [`TID_LIMIT`] inside a transaction.
pub(super) struct First {
    word: u64,
    write: bool,
}

impl First {
    /// `a`, if it has this form.
    pub(super) fn new(a: &CfAccess, write: bool) -> Option<First> {
        // As `CfCell::access` stores the clock.
        let clock = NonZeroU32::new(a.clock).unwrap_or(NonZeroU32::MIN);
        (a.tid < TID_LIMIT && a.event == 0).then(|| First::of(a.tid, clock, write))
    }

    /// The first access of thread `tid` at `clock`, kept without a cell
    /// ([`super::first`]): the [`First`] that [`First::new`] made of it.
    pub(super) fn of(tid: Tid, clock: NonZeroU32, write: bool) -> First {
        debug_assert!(tid < TID_LIMIT);
        First {
            word: u64::from(tid | PRESENT) | u64::from(clock.get()) << 32,
            write,
        }
    }
}

/// A location's [`Packed`] cell in the shadow table, reached only while the
/// location's lock ([`super::first::Rec`]) is held.
#[derive(Default)]
pub(super) struct Slot(std::cell::UnsafeCell<Packed>);

// SAFETY: the cell is only reached through `Slot::get`, whose callers hold the
// location's lock: one thread at a time, and `Packed` (plain words, addresses of
// immutable origins, or a `Box<Cell>` it owns) may move between threads.
unsafe impl Sync for Slot {}

impl Slot {
    /// The cell.
    ///
    /// # Safety
    /// The caller holds the location's lock ([`super::first::Rec::lock`]) for as
    /// long as it uses the reference, and takes no other reference to this cell.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn get(&self) -> &mut Packed {
        // SAFETY: per the contract.
        unsafe { &mut *self.0.get() }
    }
}

/// What holds the working thread's [`Origins`], which [`Packed::with`] interns the
/// changed cell's origins in after the closure that changed it (which gets the
/// holder too, so that the two need not borrow it at once).
pub(super) trait HasOrigins {
    fn origins(&mut self) -> &mut Origins;
}

impl HasOrigins for Origins {
    fn origins(&mut self) -> &mut Origins {
        self
    }
}

impl Packed {
    fn boxed(&self) -> bool {
        self.r as u32 & BOXED != 0
    }

    /// No state at all: no transaction's entries, no graph nodes.
    pub(super) fn is_empty(&self) -> bool {
        self.w == 0 && self.wo == 0 && self.r == 0 && self.ro == 0
    }

    /// On an empty cell ([`Packed::is_empty`]): the state its first access `f`
    /// leaves, running in the transaction and graph node (⊥: none) of `origin`, at
    /// its site and context. Exactly what [`Packed::with`] leaves after the rules of
    /// `CfCell::access` and the graph's step on the unpacked cell (the transaction's
    /// entry with the one access, the node as the writer or as the thread's read),
    /// without unpacking.
    ///
    /// `origin` is the address of an [`Origin`] from [`Origins`].
    pub(super) fn set_first(&mut self, f: First, origin: *const Origin) {
        debug_assert!(self.is_empty() && !origin.is_null());
        if f.write {
            self.w = f.word | u64::from(TX);
            self.wo = origin as u64;
        } else {
            self.w = u64::from(TX);
            self.r = f.word;
            self.ro = origin as u64;
        }
    }

    /// Run `f` on the cell and `cx`; the origins of what it changed are then
    /// interned in `cx`'s [`Origins`] (new ones kept in `store`).
    #[inline]
    pub(super) fn with<T: HasOrigins, R>(
        &mut self,
        cx: &mut T,
        store: &OriginStore,
        f: impl FnOnce(&mut Cell, &mut T) -> R,
    ) -> R {
        if self.boxed() {
            // SAFETY: a boxed `Packed` owns the `Box<Cell>` at `ro` (see `put`).
            return f(unsafe { &mut *(self.ro as *mut Cell) }, cx);
        }
        let old = [self.wo, self.ro];
        let mut c = self.take();
        let out = f(&mut c, cx);
        self.put(c, old, cx.origins(), store);
        out
    }

    /// The inline cell, moved out (`self` is left empty).
    fn take(&mut self) -> Cell {
        let p = std::mem::take(self);
        let (wf, rf) = (p.w as u32, p.r as u32);
        let (wo, ro) = (origin_at(p.wo), origin_at(p.ro));
        let tx: Option<Xid> = (wf & TX != 0).then(|| {
            wo.or(ro)
                .expect("a transaction's entries have an origin")
                .seg
                .xid
        });
        let cf = CfCell::from_slim(CfSlim {
            reported: tx.is_some() && wf & REPORTED != 0,
            tx,
            write: unpack_access(p.w, wo),
            read: unpack_access(p.r, ro),
        });
        let reader = ro
            .and_then(|o| o.seg.node)
            .map(|n| (rf & (TID_LIMIT - 1), n));
        Cell {
            cf,
            writer: wo.and_then(|o| o.seg.node),
            readers: Small::of(reader),
        }
    }

    /// Store `c` inline if it fits, boxed otherwise (`self` is empty). `old` are the
    /// origins the cell had, reused where they still hold.
    fn put(&mut self, c: Cell, old: [u64; 2], origins: &mut Origins, store: &OriginStore) {
        let Cell {
            cf,
            writer,
            readers,
        } = c;
        let reader = match readers.into_single() {
            Ok(r) => r,
            Err(readers) => {
                return self.put_boxed(Cell {
                    cf,
                    writer,
                    readers,
                });
            }
        };
        let cf = match cf.into_slim() {
            Ok(s) if fits(&s, reader) => {
                return self.put_inline(s, writer, reader, old, origins, store);
            }
            Ok(s) => CfCell::from_slim(s),
            Err(cf) => cf,
        };
        self.put_boxed(Cell {
            cf,
            writer,
            readers: Small::of(reader),
        });
    }

    fn put_inline(
        &mut self,
        s: CfSlim,
        writer: Option<NodeId>,
        reader: Option<(Tid, NodeId)>,
        old: [u64; 2],
        origins: &mut Origins,
        store: &OriginStore,
    ) {
        let xid = s.tx.unwrap_or(0);
        let origin = |node, a: Option<Slim>| Origin {
            seg: Seg { xid, node },
            site: a.map_or(SiteId(0), |a| a.site),
            ctx: a.map_or(CtxId(0), |a| a.ctx),
        };
        // The write side holds the transaction's id when nothing else does.
        let lone_tx = s.tx.is_some() && s.read.is_none() && reader.is_none();
        let w_side = s.write.is_some() || writer.is_some() || lone_tx;
        let r_side = s.read.is_some() || reader.is_some();
        self.wo = if w_side {
            origins.intern(origin(writer, s.write), old[0], store) as u64
        } else {
            0
        };
        self.ro = if r_side {
            origins.intern(origin(reader.map(|r| r.1), s.read), old[1], store) as u64
        } else {
            0
        };
        let mut wf = thread_word(s.write);
        if s.tx.is_some() {
            wf |= u64::from(TX);
            if s.reported {
                wf |= u64::from(REPORTED);
            }
        }
        self.w = wf;
        self.r = thread_word(s.read) | reader.map_or(0, |(u, _)| u64::from(u));
    }

    fn put_boxed(&mut self, c: Cell) {
        self.ro = Box::into_raw(Box::new(c)) as u64;
        self.r = u64::from(BOXED);
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        if self.boxed() {
            // SAFETY: as in `with`; dropped once.
            drop(unsafe { Box::from_raw(self.ro as *mut Cell) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Loc, ObjId, SiteId};
    use crate::passes::singletrack::cf::{Cf, CfAccess};

    /// A cell, packed and unpacked, is the cell it was; the common states stay
    /// inline, and cells with the same origins share them.
    #[test]
    fn cells_round_trip_and_common_states_stay_inline() {
        assert_eq!(std::mem::size_of::<Packed>(), 32);
        let store = OriginStore::default();
        let mut origins = Origins::default();
        let mut cf = Cf::new();
        let view = cf.view(1);
        assert!(view.tx.is_none());
        let begin = crate::event::Event {
            tid: 1,
            index: 0,
            site: SiteId(1),
            kind: crate::event::EventKind::Begin {
                spec: crate::event::Spec::Deterministic,
            },
        };
        cf.event(&begin, crate::ctx::CtxId(0));
        let view = cf.view(1);
        let finished = cf.finished();
        let loc = Loc {
            obj: ObjId(64),
            slot: 0,
        };
        let acc = |tid, op, event| CfAccess {
            tid,
            clock: 3,
            op,
            site: SiteId(7),
            ctx: crate::ctx::CtxId(9),
            event,
        };
        let node = NodeId::from_bits(5 << 32 | 17);
        let other = NodeId::from_bits(6);
        // (accesses, writer node, reader threads, inline?); thread 7 reads in
        // `other`.
        type Case<'a> = (&'a [(CfAccess, bool)], Option<NodeId>, &'a [Tid], bool);
        let cases: [Case; 11] = [
            (&[], None, &[], true),
            (&[], Some(node), &[], true),
            (&[], None, &[7], true),
            (&[(acc(1, "write", 0), true)], Some(node), &[], true),
            (&[(acc(1, "write", 0), true)], None, &[], true),
            (
                &[(acc(1, "write", 0), true), (acc(1, "read", 0), false)],
                Some(node),
                &[1],
                true,
            ),
            (&[(acc(1, "volatile read", 0), false)], None, &[1], true),
            (&[(acc(1, "write", 0), true)], Some(node), &[7], true),
            (
                &[(acc(1, "read", 0), false), (acc(2, "read", 0), false)],
                None,
                &[1, 2],
                false,
            ),
            (&[(acc(1, "write", 4), true)], Some(node), &[], false),
            (&[(acc(1, "read", 0), false)], None, &[7], false),
        ];
        for (accesses, writer, readers, inline) in cases {
            let cell = || {
                let mut c = Cell::default();
                for &(a, write) in accesses {
                    c.cf.access(&view, &finished, loc, write, a);
                }
                c.writer = writer;
                for &u in readers {
                    let n = if u == 7 { other } else { node };
                    c.readers.push((u, n));
                }
                c
            };
            let want = format!("{:?}", cell());
            for round in 0..2 {
                let made = store.len();
                let mut p = Packed::default();
                p.put(cell(), [0, 0], &mut origins, &store);
                assert_eq!(!p.boxed(), inline, "{want}");
                let got = p.with(&mut origins, &store, |c, _| format!("{c:?}"));
                assert_eq!(got, want);
                assert_eq!(
                    p.with(&mut origins, &store, |c, _| format!("{c:?}")),
                    want,
                    "stable"
                );
                // The same state packed again takes the origins made for it.
                if round == 1 {
                    assert_eq!(store.len(), made, "{want}");
                }
            }
        }
        assert!(store.len() > 0);

        // A first access written directly is the cell the rules leave (a write or a
        // read, in a node or in none), and a thread id that does not fit has no
        // direct form.
        let xid = view.tx.as_ref().expect("inside").xid;
        for (write, n) in [
            (true, Some(node)),
            (false, Some(node)),
            (true, None),
            (false, None),
        ] {
            let a = acc(1, if write { "write" } else { "read" }, 0);
            let mut slow = Packed::default();
            slow.with(&mut origins, &store, |c, _| {
                c.cf.access(&view, &finished, loc, write, a);
                match n {
                    Some(n) if write => c.writer = Some(n),
                    Some(n) => {
                        c.readers.push((1, n));
                    }
                    None => {}
                }
            });
            let seg = Seg { xid, node: n };
            let origin = origins.get(seg, a.site, a.ctx, &store);
            let mut fast = Packed::default();
            assert!(fast.is_empty());
            fast.set_first(First::new(&a, write).expect("fits"), origin);
            assert!(!fast.is_empty() && !fast.boxed());
            let mut show = |p: &mut Packed| p.with(&mut origins, &store, |c, _| format!("{c:?}"));
            let want = show(&mut slow);
            assert_eq!(show(&mut fast), want, "write {write}, node {n:?}");
            // ... and so is the one rebuilt from a cell-less record's parts.
            let clock = NonZeroU32::new(a.clock).unwrap();
            let mut kept = Packed::default();
            kept.set_first(First::of(1, clock, write), origin);
            assert_eq!(show(&mut kept), want, "kept: write {write}, node {n:?}");
        }
        assert!(First::new(&acc(TID_LIMIT, "read", 0), false).is_none());
        assert!(First::new(&acc(1, "read", 4), false).is_none());

        // The reported flag, and thread ids that do not fit.
        let slim = |tid| Slim {
            tid,
            clock: NonZeroU32::MIN,
            site: SiteId(2),
            ctx: crate::ctx::CtxId(3),
            volatile: false,
        };
        for (tid, inline) in [(5, true), (TID_LIMIT, false)] {
            let c = Cell {
                cf: CfCell::from_slim(CfSlim {
                    tx: view.tx.as_ref().map(|tx| tx.xid),
                    reported: true,
                    write: Some(slim(tid)),
                    read: Some(slim(tid)),
                }),
                writer: None,
                readers: Small::of(Some((tid, node))),
            };
            let want = format!("{c:?}");
            let mut p = Packed::default();
            p.put(c, [0, 0], &mut origins, &store);
            assert_eq!(!p.boxed(), inline, "{want}");
            assert_eq!(p.with(&mut origins, &store, |c, _| format!("{c:?}")), want);
        }
    }
}
