//! A location's [`Cell`] in 48 bytes (against 128 unpacked; its lock is in
//! [`super::first::Rec`]).
//!
//! Most locations a transaction touches hold the state of that one transaction: a
//! write, a read since, and the transaction's graph node as the writer and the
//! reader. [`Packed`] keeps exactly that inline; any other state (two transactions'
//! entries, reads of two threads, writer and reader in different nodes, a trace
//! line to report, a thread id at or above 2^24) moves to a boxed
//! [`Cell`] and stays there, so a location whose state alternates does not allocate
//! at every change. A cell is worked on unpacked ([`Packed::with`]): the rules of
//! [`super::cf`] and of the graph see the same [`Cell`] either way.

use super::Cell;
use super::cf::{CfAccess, CfCell, CfSlim, Slim, Xid};
use super::small::Small;
use crate::event::Tid;
use crate::txgraph::NodeId;

/// Bits of an access's thread word (`w[0]`, `r[0]`) above the thread id.
const PRESENT: u32 = 1 << 31;
const VOLATILE: u32 = 1 << 30;
/// `r[0]`: the graph's reader (whose thread is the read's, in `node`) is present.
const READER: u32 = 1 << 29;
/// `w[0]`: a conflict was reported in the transaction; the writer (in `node`) is
/// present.
const REPORTED: u32 = 1 << 29;
const WRITER: u32 = 1 << 28;
/// `r[0]`: `word` is a `Box<Cell>`, everything else unused.
const BOXED: u32 = 1 << 28;
const TID_LIMIT: Tid = 1 << 24;

#[repr(C)]
#[derive(Default)]
pub(super) struct Packed {
    /// The transaction's id plus one (0: no state of a transaction), or the address
    /// of the boxed cell ([`BOXED`]).
    word: u64,
    /// The write and the read: thread word, clock, site, call context.
    w: [u32; 4],
    r: [u32; 4],
    /// [`NodeId::to_bits`] of the writer, the reader, or both.
    node: u64,
}

fn pack_access(a: Option<Slim>) -> [u32; 4] {
    a.map_or([0; 4], |a| {
        let vol = if a.volatile { VOLATILE } else { 0 };
        [a.tid | PRESENT | vol, a.clock.get(), a.site.0, a.ctx.0]
    })
}

fn unpack_access(w: [u32; 4]) -> Option<Slim> {
    (w[0] & PRESENT != 0).then(|| Slim {
        tid: w[0] & (TID_LIMIT - 1),
        clock: std::num::NonZeroU32::new(w[1]).expect("a stored clock is not 0"),
        site: crate::event::SiteId(w[2]),
        ctx: crate::ctx::CtxId(w[3]),
        volatile: w[0] & VOLATILE != 0,
    })
}

/// Whether the inline layout holds `s` with these graph entries: thread ids below
/// [`TID_LIMIT`], the reader's thread the read's, one node for writer and reader.
fn fits(s: &CfSlim, writer: Option<NodeId>, reader: Option<(Tid, NodeId)>) -> bool {
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
        && match (writer, reader) {
            (Some(n), Some((_, m))) => n == m,
            _ => true,
        }
}

/// A location's first access, as [`Packed::set_first`] stores it: a plain access
/// (no trace line) of a thread below [`TID_LIMIT`] inside transaction `tx`.
pub(super) struct First {
    access: [u32; 4],
    write: bool,
    tx: Xid,
}

impl First {
    pub(super) fn new(a: &CfAccess, write: bool, tx: Xid) -> Option<First> {
        (a.tid < TID_LIMIT && a.event == 0).then(|| First {
            access: pack_access(Some(Slim {
                tid: a.tid,
                // As `CfCell::access` stores it.
                clock: std::num::NonZeroU32::new(a.clock).unwrap_or(std::num::NonZeroU32::MIN),
                site: a.site,
                ctx: a.ctx,
                volatile: false,
            })),
            write,
            tx,
        })
    }
}

impl First {
    /// The first access of thread `tid` at `clock`, kept without a cell
    /// ([`super::first`]): the [`First`] that [`First::new`] made of it.
    pub(super) fn of(
        tid: Tid,
        clock: std::num::NonZeroU32,
        site: crate::event::SiteId,
        ctx: crate::ctx::CtxId,
        write: bool,
        tx: Xid,
    ) -> First {
        debug_assert!(tid < TID_LIMIT);
        First {
            access: pack_access(Some(Slim {
                tid,
                clock,
                site,
                ctx,
                volatile: false,
            })),
            write,
            tx,
        }
    }
}

/// A location's [`Packed`] cell in the shadow table, reached only while the
/// location's lock ([`super::first::Rec`]) is held.
#[derive(Default)]
pub(super) struct Slot(std::cell::UnsafeCell<Packed>);

// SAFETY: the cell is only reached through `Slot::get`, whose callers hold the
// location's lock: one thread at a time, and `Packed` (plain words, or a `Box<Cell>`
// it owns) may move between threads.
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

impl Packed {
    fn boxed(&self) -> bool {
        self.r[0] & BOXED != 0
    }

    /// No state at all: no transaction's entries, no graph nodes.
    pub(super) fn is_empty(&self) -> bool {
        self.word == 0 && self.w == [0; 4] && self.r == [0; 4] && self.node == 0
    }

    /// On an empty cell ([`Packed::is_empty`]): the state its first access `f`
    /// leaves, running in graph node `node` (⊥: none). Exactly what
    /// [`Packed::with`] leaves after the rules of `CfCell::access` and the graph's
    /// step on the unpacked cell (the transaction's entry with the one access, the
    /// node as the writer or as the thread's read), without unpacking.
    pub(super) fn set_first(&mut self, f: First, node: Option<NodeId>) {
        debug_assert!(self.is_empty());
        let tid = f.access[0] & (TID_LIMIT - 1);
        let slim = unpack_access(f.access);
        let s = CfSlim {
            tx: Some(f.tx),
            reported: false,
            write: slim.filter(|_| f.write),
            read: slim.filter(|_| !f.write),
        };
        let (writer, reader) = match node {
            Some(n) if f.write => (Some(n), None),
            Some(n) => (None, Some((tid, n))),
            None => (None, None),
        };
        self.put_inline(s, writer, reader);
    }

    /// Run `f` on the cell.
    #[inline]
    pub(super) fn with<R>(&mut self, f: impl FnOnce(&mut Cell) -> R) -> R {
        if self.boxed() {
            // SAFETY: a boxed `Packed` owns the `Box<Cell>` at `word` (see `put`).
            return f(unsafe { &mut *(self.word as *mut Cell) });
        }
        let mut c = self.take();
        let out = f(&mut c);
        self.put(c);
        out
    }

    /// The inline cell, moved out (`self` is left empty).
    fn take(&mut self) -> Cell {
        let p = std::mem::take(self);
        let wf = p.w[0];
        let tx: Option<Xid> = p.word.checked_sub(1);
        let read = unpack_access(p.r);
        let cf = CfCell::from_slim(CfSlim {
            reported: tx.is_some() && wf & REPORTED != 0,
            tx,
            write: unpack_access(p.w),
            read,
        });
        let reader =
            (p.r[0] & READER != 0).then(|| (p.r[0] & (TID_LIMIT - 1), NodeId::from_bits(p.node)));
        let writer = (wf & WRITER != 0).then(|| NodeId::from_bits(p.node));
        Cell {
            cf,
            writer,
            readers: Small::of(reader),
        }
    }

    /// Store `c` inline if it fits, boxed otherwise (`self` is empty).
    fn put(&mut self, c: Cell) {
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
            Ok(s) if fits(&s, writer, reader) => return self.put_inline(s, writer, reader),
            Ok(s) => CfCell::from_slim(s),
            Err(cf) => cf,
        };
        self.put_boxed(Cell {
            cf,
            writer,
            readers: Small::of(reader),
        });
    }

    fn put_inline(&mut self, s: CfSlim, writer: Option<NodeId>, reader: Option<(Tid, NodeId)>) {
        self.w = pack_access(s.write);
        if s.tx.is_some() && s.reported {
            self.w[0] |= REPORTED;
        }
        if let Some(n) = writer {
            self.w[0] |= WRITER;
            self.node = n.to_bits();
        }
        self.r = pack_access(s.read);
        if let Some((u, n)) = reader {
            self.r[0] |= u | READER;
            self.node = n.to_bits();
        }
        self.word = s.tx.map_or(0, |tx| tx + 1);
    }

    fn put_boxed(&mut self, c: Cell) {
        self.word = Box::into_raw(Box::new(c)) as u64;
        self.r[0] = BOXED;
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        if self.boxed() {
            // SAFETY: as in `with`; dropped once.
            drop(unsafe { Box::from_raw(self.word as *mut Cell) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Loc, ObjId, SiteId};
    use crate::passes::singletrack::cf::{Cf, CfAccess};

    /// A cell, packed and unpacked, is the cell it was; the common states stay
    /// inline.
    #[test]
    fn cells_round_trip_and_common_states_stay_inline() {
        assert_eq!(std::mem::size_of::<Packed>(), 48);
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
        // (accesses, reader threads, inline?)
        type Case<'a> = (&'a [(CfAccess, bool)], &'a [Tid], bool);
        let cases: [Case; 7] = [
            (&[], &[], true),
            (&[(acc(1, "write", 0), true)], &[], true),
            (
                &[(acc(1, "write", 0), true), (acc(1, "read", 0), false)],
                &[1],
                true,
            ),
            (&[(acc(1, "volatile read", 0), false)], &[1], true),
            (
                &[(acc(1, "read", 0), false), (acc(2, "read", 0), false)],
                &[1, 2],
                false,
            ),
            (&[(acc(1, "write", 4), true)], &[], false),
            (&[(acc(1, "write", 0), true)], &[7], false),
        ];
        for (accesses, readers, inline) in cases {
            let mut c = Cell::default();
            for &(a, write) in accesses {
                c.cf.access(&view, &finished, loc, write, a);
                c.writer = Some(node);
            }
            for &u in readers {
                // Thread 7 reads in another node.
                let n = if u == 7 { NodeId::from_bits(6) } else { node };
                c.readers.push((u, n));
            }
            let want = format!("{c:?}");
            let mut p = Packed::default();
            p.put(c);
            assert_eq!(!p.boxed(), inline, "{want}");
            let got = p.with(|c| format!("{c:?}"));
            assert_eq!(got, want);
            assert_eq!(p.with(|c| format!("{c:?}")), want, "stable");
        }
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
            slow.with(|c| {
                c.cf.access(&view, &finished, loc, write, a);
                match n {
                    Some(n) if write => c.writer = Some(n),
                    Some(n) => {
                        c.readers.push((1, n));
                    }
                    None => {}
                }
            });
            let mut fast = Packed::default();
            assert!(fast.is_empty());
            fast.set_first(First::new(&a, write, xid).expect("fits"), n);
            assert!(!fast.is_empty() && !fast.boxed());
            assert_eq!(
                fast.with(|c| format!("{c:?}")),
                slow.with(|c| format!("{c:?}")),
                "write {write}, node {n:?}"
            );
            // ... and so is the one rebuilt from a cell-less record's parts.
            let clock = std::num::NonZeroU32::new(a.clock).unwrap();
            let mut kept = Packed::default();
            kept.set_first(First::of(1, clock, a.site, a.ctx, write, xid), n);
            assert_eq!(
                kept.with(|c| format!("{c:?}")),
                slow.with(|c| format!("{c:?}")),
                "kept: write {write}, node {n:?}"
            );
        }
        assert!(First::new(&acc(TID_LIMIT, "read", 0), false, xid).is_none());
        assert!(First::new(&acc(1, "read", 4), false, xid).is_none());

        // The reported flag, and thread ids that do not fit.
        let slim = |tid| Slim {
            tid,
            clock: std::num::NonZeroU32::MIN,
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
            p.put(c);
            assert_eq!(!p.boxed(), inline, "{want}");
            assert_eq!(p.with(|c| format!("{c:?}")), want);
        }
    }
}
