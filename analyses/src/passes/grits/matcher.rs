//! Ordered accesses, their simplification, the streaming matcher that infers a
//! compound discipline, and the automaton that checks one.
//!
//! Wood, *Hominy Grits* (Williams College 2008): ordered accesses `M ▷ op_t` (§4.4),
//! the simplification rules 4.1/4.2 (Fig. 4.6), greedy longest-prefix matching with
//! tie precedence and a fork/join preference (Algs. 4.1/4.2), and the discipline
//! patterns (Table 4.1, read-shared from App. A). The matcher is the variant of
//! `docs/grits.md` ("The matcher"): fork and join are single-access transitions taken
//! whenever the access carries a forking/joined thread not already named by the
//! previous transition, and a `thread-local` segment never starts at a hand-off
//! between threads (validity rule of thesis §3.3). It runs online: the candidates of
//! the current segment advance in parallel and the segment ends when the last one
//! dies, so a location keeps O(candidates) state and no trace.

use std::sync::Arc;

use super::know::{Device, OrderSet};
use crate::event::{Loc, ObjId, Tid};

/// The operation of a logical access (`Rd ⊔ Rd = Rd`, `Wr ⊔ Wr = Wr`, otherwise `Acc`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum AccOp {
    Rd,
    Wr,
    Acc,
}

impl AccOp {
    pub fn merge(self, o: AccOp) -> AccOp {
        if self == o { self } else { AccOp::Acc }
    }
}

/// A logical (simplified) ordered access `M ▷ op_t`. `held` is the set of locks held
/// at the location's very first access (the thesis's SyncObject refinement), empty
/// for every other access.
#[derive(Clone, Debug)]
pub struct LAcc {
    pub m: OrderSet,
    pub op: AccOp,
    pub tid: Tid,
    pub held: Vec<ObjId>,
}

fn locks(m: &[Device]) -> impl Iterator<Item = ObjId> + '_ {
    m.iter().filter_map(|d| match d {
        Device::Lock(o) => Some(*o),
        _ => None,
    })
}
fn vols(m: &[Device]) -> impl Iterator<Item = Loc> + '_ {
    m.iter().filter_map(|d| match d {
        Device::Vol(l) => Some(*l),
        _ => None,
    })
}
fn forkers(m: &[Device]) -> Vec<Tid> {
    m.iter()
        .filter_map(|d| match d {
            Device::Forker(t) => Some(*t),
            _ => None,
        })
        .collect()
}
fn joined(m: &[Device]) -> Vec<Tid> {
    m.iter()
        .filter_map(|d| match d {
            Device::Joined(t) => Some(*t),
            _ => None,
        })
        .collect()
}

/// An inferred simple discipline with its parameters (device identities).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Disc {
    ThreadLocal(Tid),
    Fork(Vec<Tid>),
    Join(Vec<Tid>),
    GuardedBy(Vec<ObjId>),
    Vol(Vec<Loc>),
    ReadShared,
}

/// The kind of a simple discipline, as a spec names it.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Kind {
    ThreadLocal,
    Fork,
    Join,
    GuardedBy,
    Vol,
    ReadShared,
}

impl Kind {
    pub fn keyword(self) -> &'static str {
        match self {
            Kind::ThreadLocal => "thread-local",
            Kind::Fork => "fork",
            Kind::Join => "join",
            Kind::GuardedBy => "guarded-by",
            Kind::Vol => "vol",
            Kind::ReadShared => "read-shared",
        }
    }
    pub fn from_keyword(s: &str) -> Option<Kind> {
        Some(match s {
            "thread-local" => Kind::ThreadLocal,
            "fork" => Kind::Fork,
            "join" => Kind::Join,
            "guarded-by" => Kind::GuardedBy,
            "vol" => Kind::Vol,
            "read-shared" => Kind::ReadShared,
            _ => return None,
        })
    }
}

impl Disc {
    pub fn kind(&self) -> Kind {
        match self {
            Disc::ThreadLocal(_) => Kind::ThreadLocal,
            Disc::Fork(_) => Kind::Fork,
            Disc::Join(_) => Kind::Join,
            Disc::GuardedBy(_) => Kind::GuardedBy,
            Disc::Vol(_) => Kind::Vol,
            Disc::ReadShared => Kind::ReadShared,
        }
    }
}

/// The candidates of the current segment, alive while they match. All started at
/// the segment's first access, so a candidate that dies later is longer: the best is
/// the one that died last (ties within one access to the earlier in precedence
/// order), and no lengths need be kept (equal states are shared).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Seg {
    gb: Option<Vec<ObjId>>,
    vol: Option<Vec<Loc>>,
    tl: Option<Tid>,
    rs: bool,
    best: Option<Disc>,
}

impl Seg {
    fn alive(&self) -> bool {
        self.gb.is_some() || self.vol.is_some() || self.tl.is_some() || self.rs
    }
    /// The winner among the candidates still alive (all longer than every dead one),
    /// by precedence: guarded-by, vol, thread-local, read-shared.
    fn alive_winner(&self) -> Option<Disc> {
        if let Some(l) = &self.gb {
            return Some(Disc::GuardedBy(l.clone()));
        }
        if let Some(v) = &self.vol {
            return Some(Disc::Vol(v.clone()));
        }
        if let Some(t) = self.tl {
            return Some(Disc::ThreadLocal(t));
        }
        self.rs.then_some(Disc::ReadShared)
    }
}

/// Online inference for one location: logical accesses in, a compound discipline out.
/// Locations share equal states (the pass interns them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Infer {
    pub out: Vec<Disc>,
    seg: Option<Seg>,
    /// Thread of the previous logical access (the hand-off rule).
    last_tid: Option<Tid>,
}

impl Infer {
    /// Feed the next logical access.
    pub fn feed(&mut self, k: &LAcc) {
        loop {
            let Some(seg) = &mut self.seg else {
                self.start(k);
                break;
            };
            // The first candidate (in precedence order) to die at this access.
            let mut died: Option<Disc> = None;
            if let Some(l) = &mut seg.gb {
                let keep: Vec<ObjId> = locks(&k.m).filter(|o| l.contains(o)).collect();
                if keep.is_empty() {
                    died = died.or(seg.gb.take().map(Disc::GuardedBy));
                } else {
                    *l = keep;
                }
            }
            if let Some(v) = &mut seg.vol {
                let keep: Vec<Loc> = vols(&k.m).filter(|o| v.contains(o)).collect();
                if keep.is_empty() {
                    died = died.or(seg.vol.take().map(Disc::Vol));
                } else {
                    *v = keep;
                }
            }
            if let Some(t) = seg.tl
                && t != k.tid
            {
                seg.tl = None;
                died = died.or(Some(Disc::ThreadLocal(t)));
            }
            if seg.rs && k.op != AccOp::Rd {
                seg.rs = false;
                died = died.or(Some(Disc::ReadShared));
            }
            if died.is_some() {
                seg.best = died;
            }
            if seg.alive() {
                break;
            }
            let d = seg.best.take().expect("a segment has a first access");
            self.out.push(d);
            self.seg = None;
            // `k` starts the next segment.
        }
        self.last_tid = Some(k.tid);
    }

    fn start(&mut self, k: &LAcc) {
        let f = forkers(&k.m);
        if !f.is_empty() {
            let d = Disc::Fork(f);
            if self.out.last() != Some(&d) {
                self.out.push(d);
                return;
            }
        }
        let j = joined(&k.m);
        if !j.is_empty() {
            let d = Disc::Join(j);
            if self.out.last() != Some(&d) {
                self.out.push(d);
                return;
            }
        }
        let first = self.last_tid.is_none();
        let tl_ok = first || self.last_tid == Some(k.tid) || k.m.is_empty();
        let mut l: Vec<ObjId> = locks(&k.m).collect();
        if first {
            for h in &k.held {
                if !l.contains(h) {
                    l.push(*h);
                }
            }
        }
        l.sort();
        let v: Vec<Loc> = vols(&k.m).collect();
        let seg = Seg {
            gb: (!l.is_empty()).then_some(l),
            vol: (!v.is_empty()).then_some(v),
            tl: tl_ok.then_some(k.tid),
            rs: k.op == AccOp::Rd,
            best: None,
        };
        if seg.alive() {
            self.seg = Some(seg);
        } else {
            // Nothing describes this access alone (no lock, volatile or new thread
            // device, a hand-off, not a read): the thesis's fallback.
            self.out.push(Disc::ThreadLocal(k.tid));
        }
    }

    /// Whether a discipline inferred so far (or a candidate of the open segment)
    /// names lock `o`.
    pub fn mentions_lock(&self, o: ObjId) -> bool {
        self.out
            .iter()
            .any(|d| matches!(d, Disc::GuardedBy(l) if l.contains(&o)))
            || self
                .seg
                .as_ref()
                .is_some_and(|s| s.gb.as_ref().is_some_and(|l| l.contains(&o)))
    }

    /// End of the accesses: close the current segment.
    pub fn finish(&mut self) {
        if let Some(seg) = self.seg.take()
            && let Some(d) = seg.alive_winner()
        {
            self.out.push(d);
        }
    }

    /// The discipline as it stands (the current segment closed provisionally).
    pub fn current(&self) -> Vec<Disc> {
        let mut c = self.clone();
        c.finish();
        c.out
    }
}

/// A simple discipline of a spec: its kind and parameter names (thread names are kept
/// for reading but not checked: they depend on the schedule).
#[derive(Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct SDisc {
    pub kind: Kind,
    pub params: Vec<String>,
}

impl std::fmt::Display for SDisc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind.keyword())?;
        match self.kind {
            Kind::ReadShared => Ok(()),
            Kind::ThreadLocal => match self.params.first() {
                Some(t) => write!(f, " {t}"),
                None => Ok(()),
            },
            _ if self.params.is_empty() => Ok(()),
            _ => write!(f, " {{{}}}", self.params.join(",")),
        }
    }
}

/// A compound discipline (`None`: the location has a race).
pub type Compound = Vec<SDisc>;

/// Names devices for comparison with a spec (relative to the checked location).
pub trait Namer {
    fn lock(&self, o: ObjId) -> Arc<str>;
    fn vol(&self, l: Loc) -> Arc<str>;
}

/// A position in one alternative of a spec: inside segment `idx`, which a
/// thread-local segment owns by `tl`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
struct St {
    alt: u16,
    idx: u16,
    tl: Tid,
}

/// The automaton checking one location against the alternatives of its spec
/// (thesis §4.4's pattern language, each discipline `+`-repeated except the
/// single-access `fork` and `join`). It reads logical accesses; a raw access that
/// merges into the pending logical access re-steps that access from the states
/// before it, so a deviation is found at the raw access that causes it. Equality
/// and hashing take the spec by identity (the pass interns states).
#[derive(Clone, Debug)]
pub struct Check {
    alts: Arc<Vec<Compound>>,
    states: Vec<St>,
    before: Vec<St>,
    /// Thread of the logical access before the pending one, and whether the pending
    /// one is the location's first.
    before_tid: Option<Tid>,
    started: bool,
    first_pending: bool,
}

fn hits(names: &[String], found: impl Iterator<Item = Arc<str>>) -> bool {
    found.into_iter().any(|n| names.iter().any(|p| **p == *n))
}

impl PartialEq for Check {
    fn eq(&self, o: &Check) -> bool {
        Arc::ptr_eq(&self.alts, &o.alts)
            && self.states == o.states
            && self.before == o.before
            && self.before_tid == o.before_tid
            && self.started == o.started
            && self.first_pending == o.first_pending
    }
}

impl Eq for Check {}

impl std::hash::Hash for Check {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        Arc::as_ptr(&self.alts).hash(h);
        self.states.hash(h);
        self.before.hash(h);
        self.before_tid.hash(h);
        self.started.hash(h);
        self.first_pending.hash(h);
    }
}

impl Check {
    /// Whether the last access left the spec.
    pub fn failed(&self) -> bool {
        self.started && self.states.is_empty()
    }

    pub fn new(alts: Arc<Vec<Compound>>) -> Check {
        Check {
            alts,
            states: Vec::new(),
            before: Vec::new(),
            before_tid: None,
            started: false,
            first_pending: false,
        }
    }

    fn enters(&self, d: &SDisc, k: &LAcc, prev: Option<Tid>, namer: &dyn Namer) -> bool {
        let first = prev.is_none();
        match d.kind {
            Kind::ThreadLocal => {
                first
                    || prev == Some(k.tid)
                    || (locks(&k.m).next().is_none() && vols(&k.m).next().is_none())
            }
            Kind::Fork => !forkers(&k.m).is_empty(),
            Kind::Join => !joined(&k.m).is_empty(),
            Kind::GuardedBy => {
                let held = if first { &k.held[..] } else { &[] };
                hits(
                    &d.params,
                    locks(&k.m)
                        .chain(held.iter().copied())
                        .map(|o| namer.lock(o)),
                )
            }
            Kind::Vol => hits(&d.params, vols(&k.m).map(|l| namer.vol(l))),
            Kind::ReadShared => k.op == AccOp::Rd,
        }
    }

    fn continues(&self, d: &SDisc, s: St, k: &LAcc, namer: &dyn Namer) -> bool {
        match d.kind {
            Kind::ThreadLocal => k.tid == s.tl,
            Kind::Fork | Kind::Join => false,
            Kind::GuardedBy => hits(&d.params, locks(&k.m).map(|o| namer.lock(o))),
            Kind::Vol => hits(&d.params, vols(&k.m).map(|l| namer.vol(l))),
            Kind::ReadShared => k.op == AccOp::Rd,
        }
    }

    fn step(
        &self,
        from: &[St],
        first: bool,
        k: &LAcc,
        prev: Option<Tid>,
        namer: &dyn Namer,
    ) -> Vec<St> {
        let mut out: Vec<St> = Vec::new();
        let mut push = |s: St| {
            if !out.contains(&s) {
                out.push(s);
            }
        };
        if first {
            // The first access has no previous access: nothing orders it, so the
            // device a fork, join or vol segment needs cannot be asked of it (its
            // M is empty), and it may start after leading thread-local and fork
            // segments that are empty. Both matter behind a filter (`escape`),
            // which hides the accesses made before an object escaped: the first
            // access grits sees is then not the location's first.
            for (a, alt) in self.alts.iter().enumerate() {
                for (j, d) in alt.iter().enumerate() {
                    let ok = match d.kind {
                        Kind::Fork | Kind::Join | Kind::Vol => true,
                        _ => self.enters(d, k, None, namer),
                    };
                    if ok {
                        push(St {
                            alt: a as u16,
                            idx: j as u16,
                            tl: k.tid,
                        });
                    }
                    if !matches!(d.kind, Kind::ThreadLocal | Kind::Fork) {
                        break;
                    }
                }
            }
            return out;
        }
        for &s in from {
            let alt = &self.alts[s.alt as usize];
            if self.continues(&alt[s.idx as usize], s, k, namer) {
                push(s);
            }
            if let Some(d) = alt.get(s.idx as usize + 1)
                && self.enters(d, k, prev, namer)
            {
                push(St {
                    alt: s.alt,
                    idx: s.idx + 1,
                    tl: k.tid,
                });
            }
        }
        out
    }

    /// A new logical access; false if it leaves the spec.
    pub fn feed(&mut self, k: &LAcc, prev_tid: Option<Tid>, namer: &dyn Namer) -> bool {
        self.before = std::mem::take(&mut self.states);
        self.before_tid = prev_tid;
        let first = !self.started;
        self.started = true;
        self.states = self.step(&self.before, first, k, prev_tid, namer);
        self.first_pending = first;
        !self.states.is_empty()
    }

    /// The pending logical access changed (a raw access merged into it); false if it
    /// now leaves the spec.
    pub fn refeed(&mut self, k: &LAcc, namer: &dyn Namer) -> bool {
        self.states = self.step(&self.before, self.first_pending, k, self.before_tid, namer);
        !self.states.is_empty()
    }
}
