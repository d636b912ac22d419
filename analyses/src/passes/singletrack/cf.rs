//! Conflict freedom (SingleTrack, Sadowski et al. ESOP'09 §2.2 / Fig. 4), with the
//! monotonic-clock fix: clocks tick at `begin` instead of resetting (the paper's reset
//! misses a conflict between consecutive transactions of one thread).
//!
//! Clocks order only by the computation's own deterministic synchronization: fork, join
//! and barriers. Locks do *not* order inside a transaction: acquire neither joins nor
//! ticks. Per (location, transaction) we keep the last write and each thread's last read;
//! per (lock, transaction) the last lock operation. Two conflicting operations of the same
//! transaction must be ordered: `prev ⪯ vc[t]`.
//!
//! Deviations from Fig. 4, all deliberate:
//! - `begin` ticks instead of resetting the clock to `{t:1}`. The paper's reset lets a
//!   thread forked in the transaction look ordered after the opener's writes through a
//!   stale clock it joins from outside (trace C9, `tests/singletrack_notes.rs`).
//! - Accesses are kept as epochs `c@u` instead of full clocks: every clock value a thread
//!   exports (fork, join after stop, barrier) is followed by a tick of its own entry, so
//!   `vc_a ⊑ vc` iff `vc_a[u] ≤ vc[u]` for an access `a` by `u`.
//! - Lock operations are all checked (acquire *and* release) against the last lock
//!   operation of the transaction: all lock operations conflict, and this also catches a
//!   lock acquired inside and released after `end` (pitfall 10).
//! - Volatile accesses are plain reads and writes here (races on volatiles inside a
//!   transaction are errors, §2.6).
//! - After a write the reads are dropped: they are ordered before it or were reported,
//!   and later writes must be ordered after it.
//! - A check that fails is reported and the state is updated anyway (pitfall 7); the pass
//!   reports one conflict per (location or lock, transaction).
//! - State of a transaction is dropped when its last member thread leaves it: its lock
//!   entries at once, its per-location entries ([`CfCell`]) by the next access to the
//!   location (they name the transaction through a shared [`CfTx`] marked dead).
//!
//! Storage: synchronization events (and lock operations) update [`Cf`], which the pass
//! keeps behind one lock. A variable's state lives in its own [`CfCell`], which the
//! pass keeps in a direct-mapped shadow table, one lock per location; an access reads
//! only that cell and the accessing thread's [`CfView`], a copy of its clock and
//! transaction taken after its last synchronization event (only the thread's own
//! events change them).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hashbrown::{HashMap, HashSet};

use crate::ctx::CtxId;
use crate::event::{Event, EventKind, Loc, ObjId, SiteId, Spec, Tid};
use crate::vc::{Clock, VectorClock};

use super::small::Small;
use crate::passes::shadow::PageTable;

/// A transaction (deterministic computation) id.
pub type Xid = u64;

/// The transactions whose last member left, by id: per-location entries naming one
/// are garbage, dropped at the location's next access. One bit per transaction id,
/// set and read without a lock (leaves of a [`PageTable`] allocated on first
/// touch), so that entries name their transaction by id: a cell's entry costs no
/// reference count, which every new location of a transaction would otherwise
/// increment on one cache line that all the transaction's threads share.
#[derive(Default)]
pub struct Finished(PageTable<AtomicU64>);

impl Finished {
    /// The word of `xid` and its bit: words are keyed as 8-byte slots.
    fn at(xid: Xid) -> (u64, u64) {
        ((xid / 64) * 8, 1 << (xid % 64))
    }

    pub fn insert(&self, xid: Xid) {
        let (key, bit) = Self::at(xid);
        self.0.get(key).fetch_or(bit, Ordering::Release);
    }

    pub fn contains(&self, xid: Xid) -> bool {
        let (key, bit) = Self::at(xid);
        self.0
            .peek(key)
            .is_some_and(|w| w.load(Ordering::Acquire) & bit != 0)
    }
}

/// One operation as remembered for checks and reports: its epoch `clock@tid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfAccess {
    pub tid: Tid,
    pub clock: Clock,
    pub op: &'static str,
    pub site: SiteId,
    pub ctx: CtxId,
    pub event: u64,
}

/// What two conflicting operations touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    Var(Loc),
    Lock(ObjId),
}

/// Two conflicting operations of one transaction that deterministic synchronization
/// does not order.
#[derive(Clone, Debug)]
pub struct CfConflict {
    pub target: Target,
    pub xid: Xid,
    /// The `begin` that opened the transaction.
    pub begin: CfAccess,
    pub prev: CfAccess,
    pub cur: CfAccess,
}

/// A transaction, as its threads hold it (per-location entries name it by `xid`;
/// [`Finished`] says when its last member left).
#[derive(Debug)]
pub struct CfTx {
    pub xid: Xid,
    /// The `begin` that opened it.
    pub begin: CfAccess,
}

#[derive(Debug)]
struct CfThread {
    vc: VectorClock,
    tx: Option<Arc<CfTx>>,
    depth: u32,
    owner: bool,
}

/// What an access needs of its thread: its clock and its transaction.
#[derive(Clone, Debug, Default)]
pub struct CfView {
    pub vc: VectorClock,
    pub tx: Option<Arc<CfTx>>,
}

/// The operations a variable's state remembers, for [`Stored`].
const VAR_OPS: [&str; 4] = ["read", "write", "volatile read", "volatile write"];

/// A [`CfAccess`] to a variable as a cell keeps it: 24 bytes instead of 40, and a
/// niche for `Option` (a clock is never 0: every thread's own entry starts at 1).
#[derive(Clone, Copy, Debug)]
struct Stored {
    tid: Tid,
    clock: NonZeroU32,
    site: SiteId,
    ctx: CtxId,
    /// The trace line shifted left by 2, the index in [`VAR_OPS`] in the low bits.
    event_op: u64,
}

impl Stored {
    fn of(a: &CfAccess) -> Stored {
        debug_assert!(a.clock > 0 && a.event < 1 << 62, "{a:?}");
        debug_assert!(VAR_OPS.contains(&a.op), "{a:?}");
        // The four names have four lengths: no string comparison per access.
        let op = match a.op.len() {
            5 => 1,
            13 => 2,
            14 => 3,
            _ => 0,
        };
        debug_assert_eq!(VAR_OPS[op], a.op);
        let op = op as u64;
        Stored {
            tid: a.tid,
            clock: NonZeroU32::new(a.clock).unwrap_or(NonZeroU32::MIN),
            site: a.site,
            ctx: a.ctx,
            event_op: (a.event << 2) | op,
        }
    }

    fn access(self) -> CfAccess {
        CfAccess {
            tid: self.tid,
            clock: self.clock.get(),
            op: VAR_OPS[(self.event_op & 3) as usize],
            site: self.site,
            ctx: self.ctx,
            event: self.event_op >> 2,
        }
    }

    #[inline]
    fn ordered(&self, vc: &VectorClock) -> bool {
        self.clock.get() <= vc.get(self.tid)
    }
}

#[derive(Debug)]
struct VarState {
    tx: Xid,
    /// A conflict on this variable was reported in this transaction.
    reported: bool,
    write: Option<Stored>,
    reads: Small<Stored>,
}

/// The state of one variable: per live transaction that touched it, the last write
/// and each thread's last read since.
#[derive(Default, Debug)]
pub struct CfCell {
    vars: Small<VarState>,
}

/// One access without a trace line, as a compact cell keeps it ([`CfSlim`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slim {
    pub tid: Tid,
    pub clock: NonZeroU32,
    pub site: SiteId,
    pub ctx: CtxId,
    pub volatile: bool,
}

impl Slim {
    fn of(s: &Stored) -> Option<Slim> {
        (s.event_op >> 2 == 0).then_some(Slim {
            tid: s.tid,
            clock: s.clock,
            site: s.site,
            ctx: s.ctx,
            volatile: s.event_op & 2 != 0,
        })
    }

    /// As a [`Stored`] entry of the write slot (`write`) or of the reads.
    fn stored(self, write: bool) -> Stored {
        Stored {
            tid: self.tid,
            clock: self.clock,
            site: self.site,
            ctx: self.ctx,
            // The index in `VAR_OPS`: volatile in bit 1, write in bit 0.
            event_op: u64::from(self.volatile) << 1 | u64::from(write),
        }
    }
}

/// What most variables hold ([`CfCell::into_slim`]): the state of at most one
/// transaction, with at most one read and no trace lines.
#[derive(Debug, Default)]
pub struct CfSlim {
    pub tx: Option<Xid>,
    /// Meaningful with `tx` only, as are the accesses.
    pub reported: bool,
    pub write: Option<Slim>,
    pub read: Option<Slim>,
}

impl CfCell {
    /// The cell as a [`CfSlim`], or the cell back if it holds more.
    pub fn into_slim(self) -> Result<CfSlim, CfCell> {
        let v = match self.vars.into_single() {
            Ok(None) => return Ok(CfSlim::default()),
            Ok(Some(v)) => v,
            Err(vars) => return Err(CfCell { vars }),
        };
        let write = v.write.as_ref().map(Slim::of);
        let read = v.reads.iter().next().map(Slim::of);
        if v.reads.iter().nth(1).is_some() || write == Some(None) || read == Some(None) {
            return Err(CfCell {
                vars: Small::of(Some(v)),
            });
        }
        Ok(CfSlim {
            tx: Some(v.tx),
            reported: v.reported,
            write: write.flatten(),
            read: read.flatten(),
        })
    }

    /// The cell [`CfCell::into_slim`] made `s` of.
    pub fn from_slim(s: CfSlim) -> CfCell {
        let vars = s.tx.map(|tx| VarState {
            tx,
            reported: s.reported,
            write: s.write.map(|w| w.stored(true)),
            reads: Small::of(s.read.map(|r| r.stored(false))),
        });
        CfCell {
            vars: Small::of(vars),
        }
    }
}

struct XidState {
    members: u32,
    locks: Vec<ObjId>,
}

#[derive(Default)]
pub struct Cf {
    threads: HashMap<Tid, CfThread>,
    locks: HashMap<(ObjId, Xid), CfAccess>,
    xids: HashMap<Xid, XidState>,
    barriers: HashMap<(ObjId, u64), (VectorClock, u32)>,
    /// Locks already reported per transaction.
    reported: HashSet<(ObjId, Xid)>,
    /// Variables, when accesses come through [`Cf::event`] (sequential use; the pass
    /// keeps its cells in a shadow table instead).
    vars: HashMap<Loc, CfCell>,
    /// Shared with the cells' owner ([`Cf::finished`]).
    finished: Arc<Finished>,
    next_xid: Xid,
    /// Lock operations and the accesses given to [`Cf::event`] checked.
    checks: u64,
}

fn thread(threads: &mut HashMap<Tid, CfThread>, t: Tid) -> &mut CfThread {
    threads.entry(t).or_insert_with(|| {
        let mut vc = VectorClock::new();
        vc.set(t, 1);
        CfThread {
            vc,
            tx: None,
            depth: 0,
            owner: false,
        }
    })
}

fn ordered(prev: &CfAccess, vc: &VectorClock) -> bool {
    prev.clock <= vc.get(prev.tid)
}

/// The operation's name in reports.
pub fn op_name(kind: &EventKind<'_>) -> &'static str {
    match kind {
        EventKind::VolatileRead { .. } => "volatile read",
        EventKind::VolatileWrite { .. } => "volatile write",
        other => other.name(),
    }
}

impl CfCell {
    /// [CF READ] / [CF WRITE] of the variable `loc` by `cur.tid`, whose thread is `th`
    /// (ignored outside transactions; returns whether it was checked and the conflict
    /// it exposes, at most one per variable and transaction).
    pub fn access(
        &mut self,
        th: &CfView,
        finished: &Finished,
        loc: Loc,
        write: bool,
        cur: CfAccess,
    ) -> (bool, Option<Box<CfConflict>>) {
        let Some(tx) = &th.tx else {
            return (false, None);
        };
        let t = cur.tid;
        let vc = &th.vc;
        if !self.vars.iter().any(|v| v.tx == tx.xid) {
            // Entries of finished transactions are dropped here, lazily.
            self.vars.retain(|v| !finished.contains(v.tx));
            self.vars.push(VarState {
                tx: tx.xid,
                reported: false,
                write: None,
                reads: Small::default(),
            });
        }
        let st = self
            .vars
            .iter_mut()
            .find(|v| v.tx == tx.xid)
            .expect("present");
        let stored = Stored::of(&cur);
        let mut conflict = st.write.filter(|w| !w.ordered(vc));
        if write {
            if conflict.is_none() {
                conflict = st.reads.iter().find(|r| !r.ordered(vc)).copied();
            }
            st.write = Some(stored);
            st.reads.clear();
        } else {
            st.reads.replace_or_push(|r| r.tid == t, stored);
        }
        let found = match conflict {
            Some(prev) if !st.reported => {
                st.reported = true;
                Some(Box::new(CfConflict {
                    target: Target::Var(loc),
                    xid: tx.xid,
                    begin: tx.begin,
                    prev: prev.access(),
                    cur,
                }))
            }
            _ => None,
        };
        (true, found)
    }
}

/// One plain access of a location's sole accessor, as [`CfCell::sole`] hands it
/// out and [`CfCell::set_sole`] takes it back: its clock, site and call context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Own {
    pub clock: NonZeroU32,
    pub site: SiteId,
    pub ctx: CtxId,
}

impl Own {
    fn of(s: &Stored, op: u64) -> Option<Own> {
        (s.event_op == op).then_some(Own {
            clock: s.clock,
            site: s.site,
            ctx: s.ctx,
        })
    }

    fn stored(self, tid: Tid, op: u64) -> Stored {
        Stored {
            tid,
            clock: self.clock,
            site: self.site,
            ctx: self.ctx,
            event_op: op,
        }
    }
}

/// [`Stored::event_op`] of a plain read and a plain write without a trace line.
const PLAIN_READ: u64 = 0;
const PLAIN_WRITE: u64 = 1;

impl CfCell {
    /// If the cell holds state of `tx` only, and all of it is plain accesses of `t`
    /// without a trace line: `t`'s last write and its last read since (the state a
    /// sole accessor's later accesses only replace, see [`CfCell::set_sole`]).
    pub fn sole(&self, tx: Xid, t: Tid) -> Option<(Option<Own>, Option<Own>)> {
        let mut vars = self.vars.iter();
        let st = vars.next().filter(|v| v.tx == tx)?;
        if vars.next().is_some() {
            return None;
        }
        let write = match st.write {
            Some(w) if w.tid == t => Some(Own::of(&w, PLAIN_WRITE)?),
            Some(_) => return None,
            None => None,
        };
        let mut reads = st.reads.iter();
        let read = match reads.next() {
            Some(r) if r.tid == t => Some(Own::of(r, PLAIN_READ)?),
            Some(_) => return None,
            None => None,
        };
        if reads.next().is_some() {
            return None;
        }
        Some((write, read))
    }

    /// Replace the state [`CfCell::sole`] handed out by `t`'s last write and its last
    /// read since: what [`CfCell::access`] leaves after any sequence of `t`'s plain
    /// accesses in the same transaction (none of them can conflict, every earlier
    /// entry being `t`'s own).
    pub fn set_sole(&mut self, t: Tid, write: Option<Own>, read: Option<Own>) {
        let st = self.vars.iter_mut().next().expect("the sole transaction");
        st.write = write.map(|w| w.stored(t, PLAIN_WRITE));
        st.reads.clear();
        if let Some(r) = read {
            st.reads.push(r.stored(t, PLAIN_READ));
        }
    }
}

impl Cf {
    pub fn new() -> Self {
        Self::default()
    }

    /// Lock operations and accesses given to [`Cf::event`] checked so far (statistics).
    pub fn checks(&self) -> u64 {
        self.checks
    }

    /// The set of finished transactions, for [`CfCell::access`].
    pub fn finished(&self) -> Arc<Finished> {
        self.finished.clone()
    }

    /// Transactions whose state is still kept.
    pub fn live_transactions(&self) -> usize {
        self.xids.len()
    }

    /// The transaction `t` is in, if any.
    pub fn xid_of(&self, t: Tid) -> Option<Xid> {
        self.threads
            .get(&t)
            .and_then(|th| th.tx.as_ref().map(|x| x.xid))
    }

    /// What an access of `t` needs (creates `t`'s state if it has none yet).
    pub fn view(&mut self, t: Tid) -> CfView {
        let th = thread(&mut self.threads, t);
        CfView {
            vc: th.vc.clone(),
            tx: th.tx.clone(),
        }
    }

    fn leave(&mut self, xid: Xid) {
        let Some(x) = self.xids.get_mut(&xid) else {
            return;
        };
        x.members -= 1;
        if x.members == 0 {
            let x = self.xids.remove(&xid).expect("present");
            self.finished.insert(xid);
            for lock in x.locks {
                self.locks.remove(&(lock, xid));
            }
            self.reported.retain(|(_, w)| *w != xid);
        }
    }

    /// Process one event; returns the conflicts it exposes (already deduplicated per
    /// target and transaction). Variable accesses use a [`CfCell`] per location kept
    /// here; a caller that keeps the cells itself gives them to [`CfCell::access`]
    /// instead, with the thread's [`Cf::view`].
    pub fn event(&mut self, ev: &Event<'_>, ctx: CtxId) -> Vec<CfConflict> {
        let t = ev.tid;
        let mut out = Vec::new();
        match ev.kind {
            EventKind::Begin {
                spec: Spec::Deterministic,
            } => {
                let th = thread(&mut self.threads, t);
                if th.tx.is_some() {
                    th.depth += 1;
                    return out;
                }
                // [CF BEGIN] with monotonic clocks: tick, never reset.
                th.vc.tick(t);
                let xid = self.next_xid;
                self.next_xid += 1;
                let begin = CfAccess {
                    tid: t,
                    clock: th.vc.get(t),
                    op: "begin",
                    site: ev.site,
                    ctx,
                    event: ev.index,
                };
                let tx = Arc::new(CfTx { xid, begin });
                th.tx = Some(tx);
                th.depth = 1;
                th.owner = true;
                self.xids.insert(
                    xid,
                    XidState {
                        members: 1,
                        locks: Vec::new(),
                    },
                );
            }
            EventKind::End {
                spec: Spec::Deterministic,
            } => {
                let th = thread(&mut self.threads, t);
                if th.depth == 0 {
                    return out;
                }
                th.depth -= 1;
                if th.depth == 0 && th.owner {
                    th.owner = false;
                    if let Some(tx) = th.tx.take() {
                        self.leave(tx.xid);
                    }
                }
            }
            EventKind::Fork { child, .. } => {
                // [CF FORK]: both new clocks from the parent's old clock; the child
                // inherits the transaction (even ⊥).
                let th = thread(&mut self.threads, t);
                let mut cvc = th.vc.clone();
                th.vc.tick(t);
                let tx = th.tx.clone();
                cvc.tick(child);
                if let Some(x) = tx.as_ref().and_then(|x| self.xids.get_mut(&x.xid)) {
                    x.members += 1;
                }
                self.threads.insert(
                    child,
                    CfThread {
                        vc: cvc,
                        tx,
                        depth: 0,
                        owner: false,
                    },
                );
            }
            EventKind::Join { child } => {
                // [CF JOIN]: no guard, no tick.
                // A joined thread never acts again (ids are never reused): drop it.
                let cvc = self
                    .threads
                    .remove(&child)
                    .map(|c| c.vc)
                    .unwrap_or_default();
                thread(&mut self.threads, t).vc.join(&cvc);
            }
            EventKind::ThreadEnd => {
                let th = thread(&mut self.threads, t);
                th.depth = 0;
                th.owner = false;
                if let Some(tx) = th.tx.take() {
                    self.leave(tx.xid);
                }
            }
            EventKind::BarrierEnter {
                barrier,
                generation,
                ..
            } => {
                let vc = thread(&mut self.threads, t).vc.clone();
                self.barriers
                    .entry((barrier, generation))
                    .or_insert_with(|| (VectorClock::new(), 0))
                    .0
                    .join(&vc);
            }
            EventKind::BarrierExit {
                barrier,
                generation,
                parties,
            } => {
                // Barrier (§2.6): join every participant's clock, then tick — the tick
                // keeps post-barrier operations of different threads unordered.
                let th = thread(&mut self.threads, t);
                if let Some((v, departed)) = self.barriers.get_mut(&(barrier, generation)) {
                    th.vc.join(v);
                    *departed += 1;
                    if *departed >= parties {
                        self.barriers.remove(&(barrier, generation));
                    }
                }
                th.vc.tick(t);
            }
            EventKind::Acquire { lock } | EventKind::Release { lock } => {
                self.lock_op(ev, ctx, lock, &mut out);
            }
            EventKind::Read { loc }
            | EventKind::VolatileRead { loc }
            | EventKind::Write { loc, .. }
            | EventKind::VolatileWrite { loc, .. } => {
                let write = matches!(
                    ev.kind,
                    EventKind::Write { .. } | EventKind::VolatileWrite { .. }
                );
                let view = self.view(t);
                let cur = CfAccess {
                    tid: t,
                    clock: view.vc.get(t),
                    op: op_name(&ev.kind),
                    site: ev.site,
                    ctx,
                    event: ev.index,
                };
                let cell = self.vars.entry(loc).or_default();
                let (checked, found) = cell.access(&view, &self.finished, loc, write, cur);
                self.checks += u64::from(checked);
                out.extend(found.map(|c| *c));
            }
            _ => {}
        }
        out
    }

    /// [CF ACQ]/[CF REL]; ignored outside transactions.
    fn lock_op(&mut self, ev: &Event<'_>, ctx: CtxId, lock: ObjId, out: &mut Vec<CfConflict>) {
        let t = ev.tid;
        let th = thread(&mut self.threads, t);
        let Some(tx) = th.tx.clone() else { return };
        let xid = tx.xid;
        self.checks += 1;
        let cur = CfAccess {
            tid: t,
            clock: th.vc.get(t),
            op: op_name(&ev.kind),
            site: ev.site,
            ctx,
            event: ev.index,
        };
        let vc = &th.vc;
        let prev = match self.locks.entry((lock, xid)) {
            hashbrown::hash_map::Entry::Occupied(e) => Some(std::mem::replace(e.into_mut(), cur)),
            hashbrown::hash_map::Entry::Vacant(e) => {
                if let Some(x) = self.xids.get_mut(&xid) {
                    x.locks.push(lock);
                }
                e.insert(cur);
                None
            }
        };
        if let Some(prev) = prev.filter(|p| !ordered(p, vc))
            && self.reported.insert((lock, xid))
        {
            out.push(CfConflict {
                target: Target::Lock(lock),
                xid,
                begin: tx.begin,
                prev,
                cur,
            });
        }
    }
}
