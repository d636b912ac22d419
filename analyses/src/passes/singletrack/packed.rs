//! A location's [`Cell`] in 48 bytes (56 with its lock, against 128 unpacked).
//!
//! Most locations a transaction touches hold the state of that one transaction: a
//! write, a read since, and the transaction's graph node as the writer and the
//! reader. [`Packed`] keeps exactly that inline; any other state (two transactions'
//! entries, reads of two threads, writer and reader in different nodes, a trace
//! line to report, a thread id at or above 2^24) moves to a boxed
//! [`Cell`] and stays there, so a location whose state alternates does not allocate
//! at every change. A cell is worked on unpacked ([`Packed::with`]): the rules of
//! [`super::cf`] and of the graph see the same [`Cell`] either way.

use std::sync::Arc;

use super::Cell;
use super::cf::{CfCell, CfSlim, CfTx, Slim};
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
/// `r[0]`: `ptr` is a `Box<Cell>`, everything else unused.
const BOXED: u32 = 1 << 28;
const TID_LIMIT: Tid = 1 << 24;

#[repr(C)]
pub(super) struct Packed {
    /// The transaction's `Arc<CfTx>` (null: no state of a transaction), or the
    /// boxed cell ([`BOXED`]).
    ptr: *mut (),
    /// The write and the read: thread word, clock, site, call context.
    w: [u32; 4],
    r: [u32; 4],
    /// [`NodeId::to_bits`] of the writer, the reader, or both.
    node: u64,
}

// SAFETY: `Packed` owns what `ptr` points to (an `Arc<CfTx>` or a `Box<Cell>`,
// both `Send + Sync`), as the `Cell` it stands for would.
unsafe impl Send for Packed {}
unsafe impl Sync for Packed {}

impl Default for Packed {
    fn default() -> Self {
        Packed {
            ptr: std::ptr::null_mut(),
            w: [0; 4],
            r: [0; 4],
            node: 0,
        }
    }
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

impl Packed {
    fn boxed(&self) -> bool {
        self.r[0] & BOXED != 0
    }

    /// Run `f` on the cell.
    #[inline]
    pub(super) fn with<R>(&mut self, f: impl FnOnce(&mut Cell) -> R) -> R {
        if self.boxed() {
            // SAFETY: a boxed `Packed` owns the `Box<Cell>` at `ptr` (see `put`).
            return f(unsafe { &mut *self.ptr.cast::<Cell>() });
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
        let tx = (!p.ptr.is_null()).then(|| {
            // SAFETY: a non-null inline `ptr` came from `Arc::into_raw` in `put`;
            // `p` is forgotten below, so the count moves to the returned cell.
            unsafe { Arc::from_raw(p.ptr.cast::<CfTx>().cast_const()) }
        });
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
        std::mem::forget(p);
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
        self.ptr = s.tx.map_or(std::ptr::null_mut(), |tx| {
            Arc::into_raw(tx).cast_mut().cast()
        });
    }

    fn put_boxed(&mut self, c: Cell) {
        self.ptr = Box::into_raw(Box::new(c)).cast();
        self.r[0] = BOXED;
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        if self.boxed() {
            // SAFETY: as in `with`; dropped once.
            drop(unsafe { Box::from_raw(self.ptr.cast::<Cell>()) });
        } else if !self.ptr.is_null() {
            drop(self.take());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Loc, ObjId, SiteId};
    use crate::passes::singletrack::cf::{Cf, CfAccess};
    use crate::spin::SpinCell;

    /// A cell, packed and unpacked, is the cell it was; the common states stay
    /// inline.
    #[test]
    fn cells_round_trip_and_common_states_stay_inline() {
        assert_eq!(std::mem::size_of::<SpinCell<Packed>>(), 56);
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
                c.cf.access(&view, loc, write, a);
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
                    tx: view.tx.clone(),
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
