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
//! Concurrency: per-location state in [`Shadow`] cells (one lock each); the device
//! knowledge of a thread lives in its pass-local state; the knowledge published by
//! releases, volatile writes, barrier arrivals and thread ends sits in mutex-guarded
//! maps, updated while the event takes effect (the chain's ordering guarantee).

pub mod know;
pub mod matcher;
pub mod spec;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use hashbrown::HashMap;
use parking_lot::Mutex;

use crate::event::{Event, EventKind, Loc, ObjId, Op, SiteId, Tid};
use crate::pass::{Flow, Local, Pass};
use crate::report::WarningKind;
use crate::shared::Shared;
use crate::thread::ThreadState;
use crate::vc::Epoch;

use super::shadow::{Acc, Shadow, pair_warning};
use know::{Device, Knowledge, OrderSet, union_into};
use matcher::{AccOp, Check, Compound, Disc, Infer, LAcc, Namer, SDisc};
use spec::{Entry, GritsSpec};

/// A thread's device knowledge and a stamp that changes whenever it does.
struct TLocal {
    k: Arc<Knowledge>,
    stamp: u64,
}

impl TLocal {
    fn join(&mut self, other: &Knowledge) {
        if Arc::make_mut(&mut self.k).join(other) {
            self.stamp += 1;
        }
    }
    fn add(&mut self, d: Device, vc: Option<&crate::vc::VectorClock>) {
        if let Some(vc) = vc
            && !self.k.entry_covers(d, vc)
        {
            Arc::make_mut(&mut self.k).add(d, vc);
            self.stamp += 1;
        }
    }
}

/// An earlier access: its epoch, the knowledge stamp of its thread then, and where.
#[derive(Clone, Copy)]
struct Prev {
    e: Epoch,
    stamp: u64,
    acc: Acc,
}

/// A read since the last write, with its OrderSet (reused while its thread learns
/// nothing new).
#[derive(Clone)]
struct Read {
    prev: Prev,
    m: OrderSet,
}

enum Mode {
    Infer(Infer),
    Check(Check),
}

struct Cell {
    loc: Loc,
    wr: Option<Prev>,
    reads: Vec<Read>,
    pending: Option<LAcc>,
    /// Thread of the logical access before the pending one.
    before: Option<Tid>,
    mode: Mode,
    racy: bool,
    /// Checking stopped (a deviation was reported).
    done: bool,
}

enum Follow {
    /// Not checked (absent from the spec, or `race`).
    Skip,
    Cell(Box<Cell>),
}

pub struct Grits {
    shared: Arc<Shared>,
    cells: Shadow<Follow>,
    spec: Option<Arc<GritsSpec>>,
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
}

/// Names devices relative to the location `owner` belongs to.
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

impl Grits {
    pub fn new(shared: &Arc<Shared>) -> Self {
        Grits {
            shared: shared.clone(),
            cells: Shadow::default(),
            spec: shared.options.grits_spec.clone(),
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

    fn new_follow(&self, loc: Loc) -> Follow {
        let mode = match &self.spec {
            None => Mode::Infer(Infer::default()),
            Some(spec) => {
                let name = self.shared.env.loc_name(loc).name;
                match spec.locations.get(&name) {
                    Some(Entry::Alts(a)) => Mode::Check(Check::new(a.clone())),
                    Some(Entry::Race) | None => return Follow::Skip,
                }
            }
        };
        Follow::Cell(Box::new(Cell {
            loc,
            wr: None,
            reads: Vec::new(),
            pending: None,
            before: None,
            mode,
            racy: false,
            done: false,
        }))
    }

    /// The OrderSet of an access by `t` (knowledge `tl`) after `p`.
    fn order_set(&self, t: &ThreadState, tl: &TLocal, p: &Prev, out: &mut OrderSet) {
        if p.e.tid == t.tid && p.stamp == tl.stamp {
            return; // nothing learnt since this thread's own access
        }
        self.n_order_sets.fetch_add(1, Relaxed);
        tl.k.order_set(p.e, out);
    }

    fn access_cell(&self, t: &ThreadState, tl: &TLocal, c: &mut Cell, op: Op, cur: Acc) {
        if c.racy || c.done {
            return;
        }
        let e = t.epoch();
        let me = Prev {
            e,
            stamp: tl.stamp,
            acc: cur,
        };
        let mut m = OrderSet::new();
        let mut from: Option<Acc> = None;
        let ordered = |p: &Prev| p.e.tid == t.tid || p.e.leq(&t.vc);
        match op {
            Op::Read => {
                // Same thread, nothing learnt since its last read after the last
                // write: the same OrderSet again.
                if let Some(r) = c.reads.iter().find(|r| r.prev.e.tid == t.tid)
                    && r.prev.stamp == tl.stamp
                {
                    m = r.m.clone();
                    from = c.wr.map(|w| w.acc);
                } else if let Some(w) = c.wr {
                    if !ordered(&w) {
                        return self.race(c, w.acc, cur);
                    }
                    self.order_set(t, tl, &w, &mut m);
                    from = Some(w.acc);
                }
                match c.reads.iter_mut().find(|r| r.prev.e.tid == t.tid) {
                    Some(r) => {
                        r.prev = me;
                        r.m = m.clone();
                    }
                    None => c.reads.push(Read {
                        prev: me,
                        m: m.clone(),
                    }),
                }
            }
            Op::Write => {
                if let Some(w) = c.wr
                    && !ordered(&w)
                {
                    return self.race(c, w.acc, cur);
                }
                if let Some(r) = c.reads.iter().find(|r| !ordered(&r.prev)) {
                    let prev = r.prev.acc;
                    return self.race(c, prev, cur);
                }
                let mut any = false;
                for r in c.reads.iter().filter(|r| r.prev.e.tid != t.tid) {
                    let mut mr = OrderSet::new();
                    self.order_set(t, tl, &r.prev, &mut mr);
                    union_into(&mut m, &mr);
                    from = Some(r.prev.acc);
                    any = true;
                }
                if !any && let Some(w) = c.wr {
                    self.order_set(t, tl, &w, &mut m);
                    from = Some(w.acc);
                }
                c.wr = Some(me);
                c.reads.clear();
            }
        }
        let aop = match op {
            Op::Read => AccOp::Rd,
            Op::Write => AccOp::Wr,
        };
        self.push(t, c, m, aop, from, cur);
    }

    /// The simplifier (rules 4.1/4.2) in front of the matcher or the checker.
    fn push(
        &self,
        t: &ThreadState,
        c: &mut Cell,
        m: OrderSet,
        op: AccOp,
        from: Option<Acc>,
        cur: Acc,
    ) {
        let namer = LocNamer {
            g: self,
            owner: c.loc.obj,
        };
        if let Some(p) = &mut c.pending
            && p.tid == t.tid
            && (m.is_empty() || m == p.m)
        {
            let merged = p.op.merge(op);
            if merged != p.op {
                p.op = merged;
                if let Mode::Check(ch) = &mut c.mode
                    && !ch.refeed(p, &namer)
                {
                    let p = p.clone();
                    self.deviation(c, &p, from, cur);
                }
            }
            return;
        }
        let first = c.pending.is_none();
        let k = LAcc {
            held: if first { t.held.clone() } else { Vec::new() },
            m,
            op,
            tid: t.tid,
        };
        let before = c.pending.as_ref().map(|p| p.tid);
        match &mut c.mode {
            Mode::Infer(inf) => {
                if let Some(p) = c.pending.take() {
                    inf.feed(&p);
                }
            }
            Mode::Check(ch) => {
                if !ch.feed(&k, before, &namer) {
                    c.pending = Some(k.clone());
                    self.deviation(c, &k, from, cur);
                    return;
                }
            }
        }
        c.before = before;
        c.pending = Some(k);
    }

    fn race(&self, c: &mut Cell, prev: Acc, cur: Acc) {
        self.n_races.fetch_add(1, Relaxed);
        c.racy = true;
        if let Mode::Check(ch) = &c.mode {
            let _ = ch;
            self.report(
                c,
                prev,
                cur,
                "is not ordered after the previous conflicting access (a race)".into(),
            );
            c.done = true;
        }
    }

    fn deviation(&self, c: &mut Cell, k: &LAcc, from: Option<Acc>, cur: Acc) {
        let namer = LocNamer {
            g: self,
            owner: c.loc.obj,
        };
        let by: Vec<String> =
            k.m.iter()
                .map(|d| match *d {
                    Device::Lock(o) => format!("lock {}", namer.lock(o)),
                    Device::Vol(l) => format!("volatile {}", namer.vol(l)),
                    Device::Forker(t) => format!("fork by {}", self.shared.env.thread_name(t)),
                    Device::Joined(t) => format!("join of {}", self.shared.env.thread_name(t)),
                })
                .collect();
        let what = if by.is_empty() {
            format!("is ordered by program order only ({})", op_word(k.op))
        } else {
            format!("is ordered only by {} ({})", by.join(", "), op_word(k.op))
        };
        self.report(c, from.unwrap_or(cur), cur, what);
        c.done = true;
    }

    fn report(&self, c: &Cell, prev: Acc, cur: Acc, what: String) {
        self.n_deviations.fetch_add(1, Relaxed);
        let name = self.shared.env.loc_name(c.loc).name;
        let specs: Vec<String> = match self.spec.as_ref().and_then(|s| s.locations.get(&name)) {
            Some(Entry::Alts(a)) => a.iter().map(|x| spec::render(&Some(x.clone()))).collect(),
            _ => Vec::new(),
        };
        let mut w = pair_warning(
            WarningKind::Discipline,
            "grits",
            c.loc,
            &prev,
            &cur,
            format!(
                "the access leaves the spec `{}`: it {what}",
                specs.join("` | `")
            ),
        );
        w.extra.insert("spec".into(), specs.join(" | ").into());
        self.shared.reporter.report(w);
    }

    /// The inferred discipline of one location, named relative to it.
    fn compound(&self, c: &Cell) -> Option<Compound> {
        if c.racy {
            return None;
        }
        let Mode::Infer(inf) = &c.mode else {
            return None;
        };
        let mut inf = inf.clone();
        if let Some(p) = &c.pending {
            inf.feed(p);
        }
        inf.finish();
        let namer = LocNamer {
            g: self,
            owner: c.loc.obj,
        };
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
    pub fn disciplines(&self) -> Vec<spec::Line> {
        let mut inst: Vec<(Loc, String, Option<Compound>)> = Vec::new();
        self.cells.for_each(|f| {
            if let Follow::Cell(c) = f
                && matches!(c.mode, Mode::Infer(_))
            {
                inst.push((c.loc, String::new(), None));
            }
        });
        // Names and disciplines outside the cell locks (naming takes other locks).
        let mut out = Vec::with_capacity(inst.len());
        inst.sort_by_key(|(l, _, _)| *l);
        for (loc, _, _) in inst {
            let mut compound = None;
            self.cells.with(
                loc,
                || Follow::Skip,
                |f| {
                    if let Follow::Cell(c) = f {
                        compound = Some(self.compound(c));
                    }
                },
            );
            if let Some(c) = compound {
                out.push((self.shared.env.loc_name(loc).name, c));
            }
        }
        spec::generalise(out)
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

    fn thread_local(&self) -> Box<Local> {
        Box::new(TLocal {
            k: Arc::new(Knowledge::new()),
            stamp: 0,
        })
    }

    fn access(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) -> Flow {
        let Some((loc, op, _)) = ev.kind.plain_access() else {
            return Flow::Forward;
        };
        let Some(tl) = local.downcast_ref::<TLocal>() else {
            return Flow::Forward;
        };
        self.n_accesses.fetch_add(1, Relaxed);
        let cur = Acc::of(t, ev, op);
        self.cells.with(
            loc,
            || self.new_follow(loc),
            |f| {
                if let Follow::Cell(c) = f {
                    self.access_cell(t, tl, c, op, cur);
                }
            },
        );
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
                    tl.stamp += 1;
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

    fn stats(&self) -> Option<serde_json::Value> {
        let mut v = serde_json::json!({
            "mode": if self.spec.is_some() { "check" } else { "infer" },
            "accesses": self.n_accesses.load(Relaxed),
            "order_sets": self.n_order_sets.load(Relaxed),
            "races": self.n_races.load(Relaxed),
            "max_devices": self.max_devices.load(Relaxed),
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
        Some(v)
    }
}
