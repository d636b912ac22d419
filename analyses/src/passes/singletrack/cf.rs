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
//! - State of a transaction is dropped when its last member thread leaves it.

use hashbrown::{HashMap, HashSet};

use crate::ctx::CtxId;
use crate::event::{Event, EventKind, Loc, ObjId, SiteId, Spec, Tid};
use crate::vc::{Clock, VectorClock};

/// A transaction (deterministic computation) id.
pub type Xid = u64;

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

#[derive(Debug)]
struct CfThread {
    vc: VectorClock,
    xid: Option<Xid>,
    depth: u32,
    owner: bool,
}

#[derive(Default)]
struct VarState {
    write: Option<CfAccess>,
    reads: Vec<CfAccess>,
}

struct XidState {
    members: u32,
    begin: CfAccess,
    vars: Vec<Loc>,
    locks: Vec<ObjId>,
}

#[derive(Default)]
pub struct Cf {
    threads: HashMap<Tid, CfThread>,
    vars: HashMap<(Loc, Xid), VarState>,
    locks: HashMap<(ObjId, Xid), CfAccess>,
    xids: HashMap<Xid, XidState>,
    barriers: HashMap<(ObjId, u64), (VectorClock, u32)>,
    reported: HashSet<(Target, Xid)>,
    next_xid: Xid,
    checks: u64,
}

fn thread(threads: &mut HashMap<Tid, CfThread>, t: Tid) -> &mut CfThread {
    threads.entry(t).or_insert_with(|| {
        let mut vc = VectorClock::new();
        vc.set(t, 1);
        CfThread {
            vc,
            xid: None,
            depth: 0,
            owner: false,
        }
    })
}

fn ordered(prev: &CfAccess, vc: &VectorClock) -> bool {
    prev.clock <= vc.get(prev.tid)
}

impl Cf {
    pub fn new() -> Self {
        Self::default()
    }

    /// Accesses checked so far (statistics).
    pub fn checks(&self) -> u64 {
        self.checks
    }

    /// Transactions whose state is still kept.
    pub fn live_transactions(&self) -> usize {
        self.xids.len()
    }

    /// The transaction `t` is in, if any.
    pub fn xid_of(&self, t: Tid) -> Option<Xid> {
        self.threads.get(&t).and_then(|th| th.xid)
    }

    fn leave(&mut self, xid: Xid) {
        let Some(x) = self.xids.get_mut(&xid) else {
            return;
        };
        x.members -= 1;
        if x.members == 0 {
            let x = self.xids.remove(&xid).expect("present");
            for loc in x.vars {
                self.vars.remove(&(loc, xid));
            }
            for lock in x.locks {
                self.locks.remove(&(lock, xid));
            }
            self.reported.retain(|(_, w)| *w != xid);
        }
    }

    /// Process one event; returns the conflicts it exposes (already deduplicated per
    /// target and transaction).
    pub fn event(&mut self, ev: &Event<'_>, ctx: CtxId) -> Vec<CfConflict> {
        let t = ev.tid;
        let mut out = Vec::new();
        match ev.kind {
            EventKind::Begin {
                spec: Spec::Deterministic,
            } => {
                let th = thread(&mut self.threads, t);
                if th.xid.is_some() {
                    th.depth += 1;
                    return out;
                }
                // [CF BEGIN] with monotonic clocks: tick, never reset.
                th.vc.tick(t);
                let xid = self.next_xid;
                self.next_xid += 1;
                th.xid = Some(xid);
                th.depth = 1;
                th.owner = true;
                let begin = CfAccess {
                    tid: t,
                    clock: th.vc.get(t),
                    op: "begin",
                    site: ev.site,
                    ctx,
                    event: ev.index,
                };
                self.xids.insert(
                    xid,
                    XidState {
                        members: 1,
                        begin,
                        vars: Vec::new(),
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
                    if let Some(xid) = th.xid.take() {
                        self.leave(xid);
                    }
                }
            }
            EventKind::Fork { child, .. } => {
                // [CF FORK]: both new clocks from the parent's old clock; the child
                // inherits the transaction (even ⊥).
                let th = thread(&mut self.threads, t);
                let mut cvc = th.vc.clone();
                th.vc.tick(t);
                let xid = th.xid;
                cvc.tick(child);
                self.threads.insert(
                    child,
                    CfThread {
                        vc: cvc,
                        xid,
                        depth: 0,
                        owner: false,
                    },
                );
                if let Some(x) = xid.and_then(|x| self.xids.get_mut(&x)) {
                    x.members += 1;
                }
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
                if let Some(xid) = th.xid.take() {
                    self.leave(xid);
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
            EventKind::Read { loc } | EventKind::VolatileRead { loc } => {
                self.access(ev, ctx, Target::Var(loc), false, &mut out);
            }
            EventKind::Write { loc, .. } | EventKind::VolatileWrite { loc, .. } => {
                self.access(ev, ctx, Target::Var(loc), true, &mut out);
            }
            EventKind::Acquire { lock } | EventKind::Release { lock } => {
                self.access(ev, ctx, Target::Lock(lock), true, &mut out);
            }
            _ => {}
        }
        out
    }

    /// [CF READ], [CF WRITE], [CF ACQ]/[CF REL]; ignored outside transactions.
    fn access(
        &mut self,
        ev: &Event<'_>,
        ctx: CtxId,
        target: Target,
        write: bool,
        out: &mut Vec<CfConflict>,
    ) {
        let t = ev.tid;
        let th = thread(&mut self.threads, t);
        let Some(xid) = th.xid else { return };
        self.checks += 1;
        let cur = CfAccess {
            tid: t,
            clock: th.vc.get(t),
            op: match ev.kind {
                EventKind::VolatileRead { .. } => "volatile read",
                EventKind::VolatileWrite { .. } => "volatile write",
                other => other.name(),
            },
            site: ev.site,
            ctx,
            event: ev.index,
        };
        let vc = &th.vc;
        let mut conflict: Option<CfAccess> = None;
        match target {
            Target::Var(loc) => {
                let st = match self.vars.entry((loc, xid)) {
                    hashbrown::hash_map::Entry::Occupied(e) => e.into_mut(),
                    hashbrown::hash_map::Entry::Vacant(e) => {
                        if let Some(x) = self.xids.get_mut(&xid) {
                            x.vars.push(loc);
                        }
                        e.insert(VarState::default())
                    }
                };
                if let Some(w) = st.write.filter(|w| !ordered(w, vc)) {
                    conflict = Some(w);
                }
                if write {
                    if conflict.is_none() {
                        conflict = st.reads.iter().find(|r| !ordered(r, vc)).copied();
                    }
                    st.write = Some(cur);
                    st.reads.clear();
                } else {
                    match st.reads.iter_mut().find(|r| r.tid == t) {
                        Some(r) => *r = cur,
                        None => st.reads.push(cur),
                    }
                }
            }
            Target::Lock(lock) => {
                let prev = match self.locks.entry((lock, xid)) {
                    hashbrown::hash_map::Entry::Occupied(e) => {
                        Some(std::mem::replace(e.into_mut(), cur))
                    }
                    hashbrown::hash_map::Entry::Vacant(e) => {
                        if let Some(x) = self.xids.get_mut(&xid) {
                            x.locks.push(lock);
                        }
                        e.insert(cur);
                        None
                    }
                };
                conflict = prev.filter(|p| !ordered(p, vc));
            }
        }
        if let Some(prev) = conflict
            && self.reported.insert((target, xid))
            && let Some(x) = self.xids.get(&xid)
        {
            out.push(CfConflict {
                target,
                xid,
                begin: x.begin,
                prev,
                cur,
            });
        }
    }
}
