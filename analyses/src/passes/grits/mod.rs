//! `grits`: synchronization disciplines (Wood, *Hominy Grits: Inferring
//! Synchronization Disciplines*, Williams College 2008). For every location, which
//! synchronization orders each access after the previous conflicting one; inferred as
//! a compound discipline (`thread-local T0; fork {T0}; guarded-by {this}`), or checked
//! against a spec (`--spec FILE.grits`). `docs/grits.md` has the whole design.
//!
//! - Handled events: plain reads and writes; acquire, release, volatile read/write,
//!   fork, join, barrier enter/exit and thread start/end to move device knowledge
//!   ([`know`]). Happens-before itself is the chain's (`ThreadState::vc` and the lock,
//!   volatile, barrier and final clocks of `crate::clocks`).
//! - State per location, the thesis's extended model (App. A): the last write and
//!   each thread's last read since it, as epochs; the pending logical access of the
//!   simplifier (rules 4.1/4.2); the online matcher ([`matcher::Infer`]) or the spec
//!   automaton ([`matcher::Check`]).
//! - Each access gets its OrderSet: a read from the last write, a write from the
//!   other threads' reads since the last write (from the last write if there are
//!   none). An access not ordered after them is a race: the location becomes `race`
//!   and is no longer followed (the thesis: "a variable with a race is dropped").
//! - Verdict: inference puts the generalised disciplines in the statistics
//!   (`disciplines`); checking reports a `discipline` warning at the first access of
//!   a location that leaves every alternative of its spec, then stops following it.
//!
//! Memory: a location's state is a fixed-size cell (about 100 bytes: the last write,
//! one read inline, the pending logical access) plus the number of a matcher state.
//! Matcher states, OrderSets and the matcher's transitions are interned and shared by
//! all locations (most locations of a program follow one of a few disciplines), so
//! the state grows with the live locations and the distinct disciplines, never with
//! the length of the run.
//!
//! Concurrency: per-location cells in a [`PageTable`] (one lock each); the device
//! knowledge of a thread lives in its pass-local state; the knowledge published by
//! releases, volatile writes, barrier arrivals and thread ends sits in mutex-guarded
//! maps, updated while the event takes effect (the chain's ordering guarantee). The
//! interners are behind read-write locks: a transition seen before is a read.

pub mod know;
pub mod matcher;
pub mod spec;

use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use hashbrown::HashMap;
use parking_lot::{Mutex, RwLock};

use crate::ctx::CtxId;
use crate::event::{Event, EventKind, Loc, ObjId, Op, SiteId, Tid};
use crate::pass::{Flow, Local, Pass};
use crate::report::{Warning, WarningKind};
use crate::shared::Shared;
use crate::thread::ThreadState;
use crate::vc::{Epoch, VectorClock};

use super::shadow::{Acc, PageTable, pair_warning};
use know::{Device, Knowledge, OrderSet, union_into};
use matcher::{AccOp, Check, Compound, Disc, Infer, LAcc, Namer, SDisc};
use spec::{Entry, GritsSpec};

/// A thread's device knowledge and a stamp that changes whenever it does.
struct TLocal {
    k: Arc<Knowledge>,
    stamp: u32,
    /// The last OrderSet computed: (earlier access's epoch, own stamp, set).
    /// Accesses after one write epoch of another thread (an array filled by one
    /// thread, read by another) share it.
    last: (u64, u32, u32),
    /// Accesses seen, added to the pass's total at the thread's end (no shared
    /// counter on the hot path).
    accesses: u64,
}

impl TLocal {
    fn join(&mut self, other: &Knowledge) {
        if Arc::make_mut(&mut self.k).join(other) {
            self.stamp = self.stamp.wrapping_add(1);
        }
    }
    fn add(&mut self, d: Device, vc: Option<&VectorClock>) {
        if let Some(vc) = vc
            && !self.k.entry_covers(d, vc)
        {
            Arc::make_mut(&mut self.k).add(d, vc);
            self.stamp = self.stamp.wrapping_add(1);
        }
    }
}

/// Values numbered in order of first appearance, shared by all locations.
struct Interner<T> {
    inner: RwLock<Numbered<T>>,
}

/// Value → number, and number → value.
type Numbered<T> = (HashMap<Arc<T>, u32>, Vec<Arc<T>>);

impl<T: Hash + Eq> Interner<T> {
    /// An interner whose number 0 is `first`.
    fn with_first(first: T) -> Self {
        let i = Interner {
            inner: RwLock::new((HashMap::new(), Vec::new())),
        };
        i.id(first);
        i
    }
    fn id(&self, v: T) -> u32 {
        if let Some(&i) = self.inner.read().0.get(&v) {
            return i;
        }
        let mut w = self.inner.write();
        if let Some(&i) = w.0.get(&v) {
            return i;
        }
        let i = w.1.len() as u32;
        let v = Arc::new(v);
        w.0.insert(v.clone(), i);
        w.1.push(v);
        i
    }
    fn get(&self, i: u32) -> Arc<T> {
        self.inner.read().1[i as usize].clone()
    }
    fn len(&self) -> usize {
        self.inner.read().1.len()
    }
}

/// The per-location automaton: inference or checking.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Machine {
    Infer(Infer),
    Check(Check),
}

/// One step of an automaton, memoised: the state, the logical access (its OrderSet,
/// held locks, thread, operation), and what the step depends on besides.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
struct Step {
    state: u32,
    m: u32,
    held: u32,
    tid: Tid,
    /// Thread of the previous logical access (`u32::MAX`: none); checking only.
    prev: Tid,
    op: u8,
    kind: StepKind,
    /// Which of the access's locks (devices of `m`, then `held`) are the object the
    /// location belongs to (`this`); checking only, at most 16 locks.
    owner_mask: u16,
}

#[derive(Copy, Clone, PartialEq, Eq, Hash)]
enum StepKind {
    /// Infer: feed the (now final) pending logical access.
    Feed,
    /// Check: a new logical access.
    Check,
    /// Check: the pending logical access changed its operation.
    Recheck,
}

const NO_TID: Tid = u32::MAX;

fn op_code(op: AccOp) -> u8 {
    match op {
        AccOp::Rd => 0,
        AccOp::Wr => 1,
        AccOp::Acc => 2,
    }
}

fn op_of(c: u8) -> AccOp {
    match c {
        0 => AccOp::Rd,
        1 => AccOp::Wr,
        _ => AccOp::Acc,
    }
}

/// A read since the last write: its epoch (0: none), its thread's stamp, its
/// OrderSet (reused while the thread learns nothing new) and where it was.
#[derive(Copy, Clone, Default)]
struct ReadE {
    e: u64,
    stamp: u32,
    m: u32,
    site: SiteId,
    ctx: CtxId,
}

const LIVE: u8 = 1;
const RACY: u8 = 2;
const DONE: u8 = 4;
const PENDING: u8 = 8;
const SKIP: u8 = 16;

/// The state of one location (all zero: not seen yet).
#[derive(Default)]
struct Cell {
    obj: u64,
    slot: u32,
    flags: u8,
    p_op: u8,
    /// The automaton's state.
    state: u32,
    /// The pending logical access: thread, OrderSet, held locks (first access only),
    /// and the thread of the logical access before it.
    p_tid: Tid,
    p_m: u32,
    p_held: u32,
    p_before: Tid,
    /// The last write (epoch 0: none), its thread's stamp and where it was.
    wr: u64,
    wr_stamp: u32,
    wr_site: SiteId,
    wr_ctx: CtxId,
    /// The reads since the last write: one inline, more in `more`.
    rd: ReadE,
    /// Boxed: one word in every cell instead of a `Vec`'s three, for the few
    /// locations read by several threads between writes.
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<ReadE>>>,
}

impl Cell {
    fn loc(&self) -> Loc {
        Loc {
            obj: ObjId(self.obj),
            slot: self.slot,
        }
    }
    fn reads(&self) -> impl Iterator<Item = &ReadE> {
        std::iter::once(&self.rd)
            .filter(|r| r.e != 0)
            .chain(self.more.iter().flat_map(|v| v.iter()))
    }
    fn read_of(&mut self, t: Tid) -> Option<&mut ReadE> {
        if self.rd.e != 0 && Epoch::unpack(self.rd.e).tid == t {
            return Some(&mut self.rd);
        }
        self.more
            .as_mut()
            .and_then(|v| v.iter_mut().find(|r| Epoch::unpack(r.e).tid == t))
    }
    fn add_read(&mut self, r: ReadE) {
        if self.rd.e == 0 {
            self.rd = r;
        } else {
            self.more.get_or_insert_with(Default::default).push(r);
        }
    }
    fn clear_reads(&mut self) {
        self.rd = ReadE::default();
        self.more = None;
    }
}

fn acc_of(e: u64, op: Op, site: SiteId, ctx: CtxId) -> Acc {
    Acc {
        tid: Epoch::unpack(e).tid,
        op,
        site,
        ctx,
        index: 0,
    }
}

pub struct Grits {
    shared: Arc<Shared>,
    cells: PageTable<Mutex<Cell>>,
    spec: Option<Arc<GritsSpec>>,
    sets: Interner<OrderSet>,
    states: Interner<Machine>,
    steps: RwLock<HashMap<Step, u32>>,
    /// The initial automaton state of each spec entry (checking).
    starts: Mutex<HashMap<String, Option<u32>>>,
    locks: Mutex<HashMap<ObjId, Arc<Knowledge>>>,
    vols: Mutex<HashMap<Loc, Knowledge>>,
    forks: Mutex<HashMap<Tid, Arc<Knowledge>>>,
    finished: Mutex<HashMap<Tid, Arc<Knowledge>>>,
    barriers: Mutex<HashMap<(ObjId, u64), (Knowledge, u32)>>,
    /// Site of the first acquire (or barrier departure) of each lock: its name.
    lock_sites: Mutex<HashMap<ObjId, SiteId>>,
    names: Mutex<HashMap<ObjId, Arc<str>>>,
    vol_names: Mutex<HashMap<Loc, Arc<str>>>,
    n_accesses: AtomicU64,
    n_order_sets: AtomicU64,
    n_races: AtomicU64,
    n_deviations: AtomicU64,
    max_devices: AtomicU64,
    /// The statistics, computed once at the end of the run (the generalisation
    /// visits every location).
    summary: Mutex<Option<serde_json::Value>>,
}

/// Names devices relative to the location's object `owner`.
struct LocNamer<'a> {
    g: &'a Grits,
    owner: ObjId,
}

impl Namer for LocNamer<'_> {
    fn lock(&self, o: ObjId) -> Arc<str> {
        if o == self.owner {
            return Arc::from("this");
        }
        self.g.lock_name(o)
    }
    fn vol(&self, l: Loc) -> Arc<str> {
        self.g.vol_name(l)
    }
}

/// A raw access as the simplifier sees it.
struct Raw {
    m: u32,
    op: AccOp,
    from: Option<Acc>,
    cur: Acc,
}

impl Grits {
    pub fn new(shared: &Arc<Shared>) -> Self {
        Grits {
            shared: shared.clone(),
            cells: PageTable::default(),
            spec: shared.options.grits_spec.clone(),
            sets: Interner::with_first(OrderSet::new()),
            states: Interner::with_first(Machine::Infer(Infer::default())),
            steps: RwLock::new(HashMap::new()),
            starts: Mutex::default(),
            locks: Mutex::default(),
            vols: Mutex::default(),
            forks: Mutex::default(),
            finished: Mutex::default(),
            barriers: Mutex::default(),
            lock_sites: Mutex::default(),
            names: Mutex::default(),
            vol_names: Mutex::default(),
            n_accesses: AtomicU64::new(0),
            n_order_sets: AtomicU64::new(0),
            n_races: AtomicU64::new(0),
            n_deviations: AtomicU64::new(0),
            max_devices: AtomicU64::new(0),
            summary: Mutex::new(None),
        }
    }

    fn lock_name(&self, o: ObjId) -> Arc<str> {
        if let Some(n) = self.names.lock().get(&o) {
            return n.clone();
        }
        let site = self.lock_sites.lock().get(&o).copied().unwrap_or_default();
        let n: Arc<str> = Arc::from(self.shared.env.lock_name(o, site));
        self.names.lock().insert(o, n.clone());
        n
    }

    fn vol_name(&self, l: Loc) -> Arc<str> {
        if let Some(n) = self.vol_names.lock().get(&l) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(self.shared.env.loc_name(l).name);
        self.vol_names.lock().insert(l, n.clone());
        n
    }

    /// Start following `loc`: its initial automaton state, or `None` if it is not
    /// checked (absent from the spec, or `race`).
    fn start(&self, loc: Loc) -> Option<u32> {
        let Some(spec) = &self.spec else {
            return Some(0);
        };
        let name = self.shared.env.loc_name(loc).name;
        if let Some(s) = self.starts.lock().get(&name) {
            return *s;
        }
        let s = match spec.locations.get(&name) {
            Some(Entry::Alts(a)) => Some(self.states.id(Machine::Check(Check::new(a.clone())))),
            Some(Entry::Race) | None => None,
        };
        self.starts.lock().insert(name, s);
        s
    }

    /// The OrderSet (interned) of an access by `t` after the access at epoch `e` whose
    /// thread had knowledge stamp `stamp`.
    fn order_set(&self, t: &ThreadState, tl: &mut TLocal, e: u64, stamp: u32) -> u32 {
        let ep = Epoch::unpack(e);
        if ep.tid == t.tid && stamp == tl.stamp {
            return 0; // nothing learnt since this thread's own access
        }
        if tl.last.0 == e && tl.last.1 == tl.stamp {
            return tl.last.2;
        }
        self.n_order_sets.fetch_add(1, Relaxed);
        let mut m = OrderSet::new();
        tl.k.order_set(ep, &mut m);
        let id = if m.is_empty() { 0 } else { self.sets.id(m) };
        tl.last = (e, tl.stamp, id);
        id
    }

    fn access_cell(
        &self,
        t: &ThreadState,
        tl: &mut TLocal,
        c: &mut Cell,
        loc: Loc,
        op: Op,
        cur: Acc,
    ) {
        if c.flags & LIVE == 0 {
            c.obj = loc.obj.0;
            c.slot = loc.slot;
            c.flags = LIVE;
            match self.start(loc) {
                Some(s) => c.state = s,
                None => c.flags |= SKIP,
            }
        }
        if c.flags & (RACY | DONE | SKIP) != 0 {
            return;
        }
        let e = Epoch::pack(t.epoch());
        let ordered = |x: u64| {
            let x = Epoch::unpack(x);
            x.tid == t.tid || x.leq(&t.vc)
        };
        let wr_acc = |c: &Cell| acc_of(c.wr, Op::Write, c.wr_site, c.wr_ctx);
        let (m, from) = match op {
            Op::Read => {
                let cached = c
                    .read_of(t.tid)
                    .filter(|r| r.stamp == tl.stamp)
                    .map(|r| r.m);
                let (m, from) = match cached {
                    Some(m) => (m, (c.wr != 0).then(|| wr_acc(c))),
                    None if c.wr != 0 => {
                        if !ordered(c.wr) {
                            return self.race(c, wr_acc(c), cur);
                        }
                        (self.order_set(t, tl, c.wr, c.wr_stamp), Some(wr_acc(c)))
                    }
                    None => (0, None),
                };
                let me = ReadE {
                    e,
                    stamp: tl.stamp,
                    m,
                    site: cur.site,
                    ctx: cur.ctx,
                };
                match c.read_of(t.tid) {
                    Some(r) => *r = me,
                    None => c.add_read(me),
                }
                (m, from)
            }
            Op::Write => {
                if c.wr != 0 && !ordered(c.wr) {
                    return self.race(c, wr_acc(c), cur);
                }
                let unordered = c
                    .reads()
                    .find(|r| !ordered(r.e))
                    .map(|r| acc_of(r.e, Op::Read, r.site, r.ctx));
                if let Some(prev) = unordered {
                    return self.race(c, prev, cur);
                }
                let mut m = 0;
                let mut from = None;
                let mut union: Option<OrderSet> = None;
                for r in c.reads().filter(|r| Epoch::unpack(r.e).tid != t.tid) {
                    let mr = self.order_set(t, tl, r.e, r.stamp);
                    from = Some(acc_of(r.e, Op::Read, r.site, r.ctx));
                    let u = union.get_or_insert_with(OrderSet::new);
                    union_into(u, &self.sets.get(mr));
                }
                match union {
                    Some(u) => m = if u.is_empty() { 0 } else { self.sets.id(u) },
                    None if c.wr != 0 => {
                        m = self.order_set(t, tl, c.wr, c.wr_stamp);
                        from = Some(wr_acc(c));
                    }
                    None => {}
                }
                c.wr = e;
                c.wr_stamp = tl.stamp;
                c.wr_site = cur.site;
                c.wr_ctx = cur.ctx;
                c.clear_reads();
                (m, from)
            }
        };
        let aop = match op {
            Op::Read => AccOp::Rd,
            Op::Write => AccOp::Wr,
        };
        self.push(
            t,
            c,
            Raw {
                m,
                op: aop,
                from,
                cur,
            },
        );
    }

    /// The simplifier (rules 4.1/4.2) in front of the matcher or the checker.
    fn push(&self, t: &ThreadState, c: &mut Cell, r: Raw) {
        if c.flags & PENDING != 0 && c.p_tid == t.tid && (r.m == 0 || r.m == c.p_m) {
            let merged = op_of(c.p_op).merge(r.op);
            if op_code(merged) != c.p_op {
                c.p_op = op_code(merged);
                if self.checking() {
                    let prev = c.p_before;
                    c.state = self.step(c, StepKind::Recheck, prev);
                    self.deviated(c, &r);
                }
            }
            return;
        }
        let first = c.flags & PENDING == 0;
        let before = if first { NO_TID } else { c.p_tid };
        if !self.checking() && !first {
            // The pending logical access is final: feed it.
            c.state = self.step(c, StepKind::Feed, NO_TID);
        }
        c.flags |= PENDING;
        c.p_tid = t.tid;
        c.p_m = r.m;
        c.p_op = op_code(r.op);
        c.p_before = before;
        c.p_held = if first && !t.held.is_empty() {
            self.sets
                .id(t.held.iter().map(|o| Device::Lock(*o)).collect())
        } else {
            0
        };
        if self.checking() {
            c.state = self.step(c, StepKind::Check, before);
            self.deviated(c, &r);
        }
    }

    fn checking(&self) -> bool {
        self.spec.is_some()
    }

    /// Report a deviation if the checking automaton has no state left.
    fn deviated(&self, c: &mut Cell, r: &Raw) {
        if let Machine::Check(ch) = &*self.states.get(c.state)
            && ch.failed()
        {
            self.deviation(c, r);
        }
    }

    /// The pending logical access.
    fn pending(&self, c: &Cell) -> LAcc {
        LAcc {
            m: self.sets.get(c.p_m).to_vec(),
            op: op_of(c.p_op),
            tid: c.p_tid,
            held: self
                .sets
                .get(c.p_held)
                .iter()
                .filter_map(|d| match d {
                    Device::Lock(o) => Some(*o),
                    _ => None,
                })
                .collect(),
        }
    }

    /// Run one step of the location's automaton on its pending logical access
    /// (memoised across locations).
    fn step(&self, c: &Cell, kind: StepKind, prev: Tid) -> u32 {
        let owner = ObjId(c.obj);
        let owner_mask = if kind == StepKind::Feed {
            0
        } else {
            let m = self.sets.get(c.p_m);
            let h = self.sets.get(c.p_held);
            m.iter()
                .chain(h.iter())
                .filter_map(|d| match d {
                    Device::Lock(o) => Some(*o == owner),
                    _ => None,
                })
                .take(16)
                .enumerate()
                .fold(0u16, |acc, (i, is)| acc | (u16::from(is) << i))
        };
        let key = Step {
            state: c.state,
            m: c.p_m,
            held: c.p_held,
            tid: c.p_tid,
            prev,
            op: c.p_op,
            kind,
            owner_mask,
        };
        if let Some(&s) = self.steps.read().get(&key) {
            return s;
        }
        let k = self.pending(c);
        let namer = LocNamer { g: self, owner };
        let mut mach = (*self.states.get(c.state)).clone();
        match (&mut mach, kind) {
            (Machine::Infer(inf), StepKind::Feed) => inf.feed(&k),
            (Machine::Check(ch), StepKind::Check) => {
                let prev = (prev != NO_TID).then_some(prev);
                ch.feed(&k, prev, &namer);
            }
            (Machine::Check(ch), StepKind::Recheck) => {
                ch.refeed(&k, &namer);
            }
            _ => {}
        }
        let s = self.states.id(mach);
        self.steps.write().insert(key, s);
        s
    }

    fn race(&self, c: &mut Cell, prev: Acc, cur: Acc) {
        self.n_races.fetch_add(1, Relaxed);
        c.flags |= RACY;
        if self.checking() {
            self.report(
                c,
                Some(prev),
                cur,
                "is not ordered after the previous conflicting access (a race)".into(),
            );
            c.flags |= DONE;
        }
    }

    fn deviation(&self, c: &mut Cell, r: &Raw) {
        let namer = LocNamer {
            g: self,
            owner: ObjId(c.obj),
        };
        let by: Vec<String> = self
            .sets
            .get(c.p_m)
            .iter()
            .map(|d| match *d {
                Device::Lock(o) => format!("lock {}", namer.lock(o)),
                Device::Vol(l) => format!("volatile {}", namer.vol(l)),
                Device::Forker(t) => format!("fork by {}", self.shared.env.thread_name(t)),
                Device::Joined(t) => format!("join of {}", self.shared.env.thread_name(t)),
            })
            .collect();
        let op = op_word(op_of(c.p_op));
        let what = if r.from.is_none() {
            let held: Vec<String> = self
                .sets
                .get(c.p_held)
                .iter()
                .filter_map(|d| match *d {
                    Device::Lock(o) => Some(namer.lock(o).to_string()),
                    _ => None,
                })
                .collect();
            if held.is_empty() {
                format!("is the location's first access, made holding no lock ({op})")
            } else {
                format!(
                    "is the location's first access, made holding {} ({op})",
                    held.join(", ")
                )
            }
        } else if by.is_empty() {
            format!("is ordered by program order only ({op})")
        } else {
            format!("is ordered only by {} ({op})", by.join(", "))
        };
        self.report(c, r.from, r.cur, what);
        c.flags |= DONE;
    }

    /// A `discipline` warning at `cur`, after `prev` (none: the location's first
    /// access).
    fn report(&self, c: &Cell, prev: Option<Acc>, cur: Acc, what: String) {
        self.n_deviations.fetch_add(1, Relaxed);
        let loc = c.loc();
        let name = self.shared.env.loc_name(loc).name;
        let specs: Vec<String> = match self.spec.as_ref().and_then(|s| s.locations.get(&name)) {
            Some(Entry::Alts(a)) => a.iter().map(|x| spec::render(&Some(x.clone()))).collect(),
            _ => Vec::new(),
        };
        let message = format!(
            "the access leaves the spec `{}`: it {what}",
            specs.join("` | `")
        );
        let mut w = match prev {
            Some(prev) => pair_warning(WarningKind::Discipline, "grits", loc, &prev, &cur, message),
            None => {
                let mut w = Warning::new(WarningKind::Discipline, "grits");
                w.loc = Some(loc);
                w.accesses = vec![cur.info()];
                w.event = (cur.index != 0).then_some(cur.index);
                w.message = message;
                w
            }
        };
        w.extra.insert("spec".into(), specs.join(" | ").into());
        self.shared.reporter.report(w);
    }

    /// The inferred discipline of a location in state `state` with the pending
    /// access `pending`, named relative to `owner`.
    fn compound(&self, state: u32, pending: Option<LAcc>, owner: ObjId) -> Option<Compound> {
        let Machine::Infer(inf) = &*self.states.get(state) else {
            return None;
        };
        let mut inf = inf.clone();
        if let Some(p) = &pending {
            inf.feed(p);
        }
        inf.finish();
        let namer = LocNamer { g: self, owner };
        let env = &self.shared.env;
        let threads = |ts: &[Tid]| ts.iter().map(|t| env.thread_name(*t)).collect();
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v.dedup();
            v
        };
        Some(
            inf.out
                .iter()
                .map(|d| SDisc {
                    kind: d.kind(),
                    params: match d {
                        Disc::ThreadLocal(t) => vec![env.thread_name(*t)],
                        Disc::Fork(ts) | Disc::Join(ts) => threads(ts),
                        Disc::GuardedBy(ls) => {
                            sorted(ls.iter().map(|o| namer.lock(*o).to_string()).collect())
                        }
                        Disc::Vol(vs) => {
                            sorted(vs.iter().map(|l| namer.vol(*l).to_string()).collect())
                        }
                        Disc::ReadShared => Vec::new(),
                    },
                })
                .collect(),
        )
    }

    /// The generalised disciplines of every location followed so far (inference).
    /// Locations in the same automaton state with the same pending access share one
    /// computation, unless a lock of theirs is their own object (`this`).
    pub fn disciplines(&self) -> Vec<spec::Line> {
        type Key = (u32, u32, u32, Tid, u8, bool);
        let mut memo: HashMap<(Key, u64), Option<Compound>> = HashMap::new();
        let mut counts: HashMap<(String, Option<Compound>), usize> = HashMap::new();
        // Names of the current object's fields (all elements of an array share one).
        let mut names: HashMap<u32, String> = HashMap::new();
        let mut array = false;
        let mut last_obj = u64::MAX;
        self.cells.for_each_cell(|cell| {
            let c = cell.lock();
            if c.flags & LIVE == 0 || c.flags & SKIP != 0 {
                return;
            }
            if c.obj != last_obj {
                // Cells of one object are adjacent: name each field once per object
                // (arrays: once per array).
                names.clear();
                last_obj = c.obj;
                array = false;
            }
            let slot = if array { 0 } else { c.slot };
            let name = match names.get(&slot) {
                Some(n) => n.clone(),
                None => {
                    let n = self.shared.env.loc_name(c.loc());
                    array = n.index.is_some();
                    let slot = if array { 0 } else { c.slot };
                    names.insert(slot, n.name.clone());
                    n.name
                }
            };
            let compound = if c.flags & RACY != 0 {
                None
            } else {
                let pending = c.flags & PENDING != 0;
                let key: Key = (c.state, c.p_m, c.p_held, c.p_tid, c.p_op, pending);
                let k = pending.then(|| self.pending(&c));
                // Only a lock that is the location's own object makes the owner matter.
                let mentions_owner = self.mentions(c.state, ObjId(c.obj))
                    || k.as_ref().is_some_and(|k| {
                        k.m.contains(&Device::Lock(ObjId(c.obj))) || k.held.contains(&ObjId(c.obj))
                    });
                let owner = if mentions_owner { c.obj } else { 0 };
                memo.entry((key, owner))
                    .or_insert_with(|| self.compound(c.state, k, ObjId(c.obj)))
                    .clone()
            };
            *counts.entry((name, compound)).or_default() += 1;
        });
        let mut rows: Vec<(String, Option<Compound>, usize)> =
            counts.into_iter().map(|((n, c), k)| (n, c, k)).collect();
        rows.sort_by(|a, b| (&a.0, spec::render(&a.1)).cmp(&(&b.0, spec::render(&b.1))));
        spec::generalise(rows)
    }

    /// Whether the inferred state mentions lock `o`.
    fn mentions(&self, state: u32, o: ObjId) -> bool {
        match &*self.states.get(state) {
            Machine::Infer(inf) => inf.mentions_lock(o),
            Machine::Check(_) => false,
        }
    }

    fn summary(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "mode": if self.spec.is_some() { "check" } else { "infer" },
            "accesses": self.n_accesses.load(Relaxed),
            "order_sets": self.n_order_sets.load(Relaxed),
            "races": self.n_races.load(Relaxed),
            "max_devices": self.max_devices.load(Relaxed),
            "distinct_order_sets": self.sets.len(),
            "automaton_states": self.states.len(),
            "automaton_steps": self.steps.read().len(),
        });
        if self.spec.is_some() {
            v["deviations"] = self.n_deviations.load(Relaxed).into();
        } else {
            let lines = self.disciplines();
            v["disciplines"] = lines
                .iter()
                .map(|l| {
                    serde_json::json!({
                        "location": l.location,
                        "discipline": spec::render(&l.discipline),
                        "instances": l.instances,
                    })
                })
                .collect::<Vec<_>>()
                .into();
        }
        v
    }
}

fn op_word(op: AccOp) -> &'static str {
    match op {
        AccOp::Rd => "read",
        AccOp::Wr => "write",
        AccOp::Acc => "read and write",
    }
}

impl Pass for Grits {
    fn name(&self) -> &'static str {
        "grits"
    }
    /// Calls matter only through the call context of reports (`ThreadState::ctx`),
    /// which the chain keeps without `Enter`/`Exit`.
    fn wants_frames(&self) -> bool {
        false
    }

    fn thread_local(&self) -> Box<Local> {
        Box::new(TLocal {
            k: Arc::new(Knowledge::new()),
            stamp: 0,
            last: (0, 0, 0),
            accesses: 0,
        })
    }

    fn access(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) -> Flow {
        let Some((loc, op, _)) = ev.kind.plain_access() else {
            return Flow::Forward;
        };
        let Some(tl) = local.downcast_mut::<TLocal>() else {
            return Flow::Forward;
        };
        tl.accesses += 1;
        let cur = Acc::of(t, ev, op);
        let mut c = self.cells.get(loc.key()).lock();
        self.access_cell(t, tl, &mut c, loc, op, cur);
        Flow::Forward
    }

    fn event(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) {
        let Some(tl) = local.downcast_mut::<TLocal>() else {
            return;
        };
        let clocks = &self.shared.clocks;
        match ev.kind {
            EventKind::ThreadStart => {
                if let Some(k) = self.forks.lock().remove(&t.tid) {
                    tl.k = k;
                    tl.stamp = tl.stamp.wrapping_add(1);
                }
            }
            EventKind::Fork { child, .. } => {
                let mut k = tl.k.clone();
                Arc::make_mut(&mut k).add(Device::Forker(t.tid), &t.vc);
                self.forks.lock().insert(child, k);
            }
            EventKind::Release { lock } => {
                self.locks.lock().insert(lock, tl.k.clone());
            }
            EventKind::Acquire { lock } => {
                self.lock_sites.lock().entry(lock).or_insert(ev.site);
                let pkg = self.locks.lock().get(&lock).cloned();
                if let Some(pkg) = pkg
                    && !Arc::ptr_eq(&pkg, &tl.k)
                {
                    tl.join(&pkg);
                }
                clocks.with_lock(lock, |vc| tl.add(Device::Lock(lock), vc));
            }
            EventKind::VolatileWrite { loc, .. } => {
                self.vols.lock().entry(loc).or_default().join(&tl.k);
            }
            EventKind::VolatileRead { loc } => {
                let pkg = self.vols.lock().get(&loc).cloned();
                if let Some(pkg) = pkg {
                    tl.join(&pkg);
                }
                clocks.with_volatile(loc, |vc| tl.add(Device::Vol(loc), vc));
            }
            EventKind::BarrierEnter {
                barrier,
                generation,
                ..
            } => {
                self.barriers
                    .lock()
                    .entry((barrier, generation))
                    .or_insert_with(|| (Knowledge::new(), 0))
                    .0
                    .join(&tl.k);
            }
            EventKind::BarrierExit {
                barrier,
                generation,
                parties,
            } => {
                self.lock_sites.lock().entry(barrier).or_insert(ev.site);
                let pkg = {
                    let mut b = self.barriers.lock();
                    let pkg = b.get(&(barrier, generation)).map(|e| e.0.clone());
                    if let Some(e) = b.get_mut(&(barrier, generation)) {
                        e.1 += 1;
                        if e.1 >= parties {
                            b.remove(&(barrier, generation));
                        }
                    }
                    pkg
                };
                if let Some(pkg) = pkg {
                    tl.join(&pkg);
                }
                clocks.with_barrier(barrier, generation, |vc| tl.add(Device::Lock(barrier), vc));
            }
            EventKind::ThreadEnd => {
                self.n_accesses
                    .fetch_add(std::mem::take(&mut tl.accesses), Relaxed);
                self.finished.lock().insert(t.tid, tl.k.clone());
                self.max_devices.fetch_max(tl.k.len() as u64, Relaxed);
            }
            EventKind::Join { child } => {
                let pkg = self.finished.lock().get(&child).cloned();
                if let Some(pkg) = pkg {
                    tl.join(&pkg);
                }
                clocks.with_finished(child, |vc| tl.add(Device::Joined(child), vc));
            }
            _ => {}
        }
    }

    fn finish(&self) {
        let v = self.summary();
        *self.summary.lock() = Some(v);
    }

    fn stats(&self) -> Option<serde_json::Value> {
        if let Some(v) = &*self.summary.lock() {
            return Some(v.clone());
        }
        Some(self.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_costs_one_small_cell() {
        // The whole per-location state: the cell and its lock (no allocation unless
        // several threads read between writes).
        let size = std::mem::size_of::<Mutex<Cell>>();
        assert!(size <= 96, "{size} bytes");
        eprintln!("cell: {size} bytes");
    }
}
