//! Chunk summaries and their composition (Kini, Mathur & Viswanathan, ESEC/FSE'18:
//! HB §3 and App. D, lockset §4 and App. E), extended per variable and with positions
//! so that each racy variable gets a witness.
//!
//! Sets are bit sets over the trace's *entities* ([`Universe`]): threads, locks,
//! volatile variables and barrier episodes. Every map is sparse: a summary holds
//! entries only for the entities and variables that occur in its chunk.

use hashbrown::HashMap;

use crate::event::{Loc, ObjId, OwnedKind, Tid};

use super::{Grammar, Label};

/// The entities of a set given as its 64-bit words, lowest word first.
pub(super) fn set_bits(words: impl Iterator<Item = u64>) -> impl Iterator<Item = u32> {
    words.enumerate().flat_map(|(w, mut x)| {
        std::iter::from_fn(move || {
            if x == 0 {
                return None;
            }
            let b = x.trailing_zeros();
            x &= x - 1;
            Some(w as u32 * 64 + b)
        })
    })
}

/// A bit set over entity numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    w0: u64,
    rest: Vec<u64>,
}

impl Set {
    pub fn one(i: u32) -> Set {
        let mut s = Set::default();
        s.insert(i);
        s
    }
    pub fn insert(&mut self, i: u32) {
        let (w, b) = ((i / 64) as usize, i % 64);
        if w == 0 {
            self.w0 |= 1 << b;
        } else {
            if self.rest.len() < w {
                self.rest.resize(w, 0);
            }
            self.rest[w - 1] |= 1 << b;
        }
    }
    pub fn union_with(&mut self, o: &Set) {
        self.w0 |= o.w0;
        if self.rest.len() < o.rest.len() {
            self.rest.resize(o.rest.len(), 0);
        }
        for (a, b) in self.rest.iter_mut().zip(&o.rest) {
            *a |= *b;
        }
    }
    pub fn intersects(&self, o: &Set) -> bool {
        self.w0 & o.w0 != 0 || self.rest.iter().zip(&o.rest).any(|(a, b)| a & b != 0)
    }
    pub fn intersect_with(&mut self, o: &Set) {
        self.w0 &= o.w0;
        for (i, a) in self.rest.iter_mut().enumerate() {
            *a &= o.rest.get(i).copied().unwrap_or(0);
        }
    }
    pub fn is_empty(&self) -> bool {
        self.w0 == 0 && self.rest.iter().all(|&x| x == 0)
    }
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        set_bits(std::iter::once(self.w0).chain(self.rest.iter().copied()))
    }
}

/// A sorted sparse map `u32 → V`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Map<V>(pub Vec<(u32, V)>);

impl<V> Default for Map<V> {
    fn default() -> Self {
        Map(Vec::new())
    }
}

impl<V> Map<V> {
    pub fn get(&self, k: u32) -> Option<&V> {
        self.0
            .binary_search_by_key(&k, |e| e.0)
            .ok()
            .map(|i| &self.0[i].1)
    }
    pub fn get_mut(&mut self, k: u32) -> Option<&mut V> {
        match self.0.binary_search_by_key(&k, |e| e.0) {
            Ok(i) => Some(&mut self.0[i].1),
            Err(_) => None,
        }
    }
    pub fn entry(&mut self, k: u32, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.0.binary_search_by_key(&k, |e| e.0) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (k, make()));
                i
            }
        };
        &mut self.0[i].1
    }
    /// Merge two maps by key: `f(key, Option<&a>, Option<&b>)`.
    pub fn merge<W>(
        a: &Map<V>,
        b: &Map<V>,
        mut f: impl FnMut(u32, Option<&V>, Option<&V>) -> Option<W>,
    ) -> Map<W> {
        let mut out = Vec::with_capacity(a.0.len().max(b.0.len()));
        let (mut i, mut j) = (0, 0);
        while i < a.0.len() || j < b.0.len() {
            let ka = a.0.get(i).map(|e| e.0);
            let kb = b.0.get(j).map(|e| e.0);
            let (k, x, y) = match (ka, kb) {
                (Some(x), Some(y)) if x == y => {
                    i += 1;
                    j += 1;
                    (x, Some(&a.0[i - 1].1), Some(&b.0[j - 1].1))
                }
                (Some(x), Some(y)) if x < y => {
                    i += 1;
                    (x, Some(&a.0[i - 1].1), None)
                }
                (Some(x), None) => {
                    i += 1;
                    (x, Some(&a.0[i - 1].1), None)
                }
                (_, Some(y)) => {
                    j += 1;
                    (y, None, Some(&b.0[j - 1].1))
                }
                (None, None) => break,
            };
            if let Some(w) = f(k, x, y) {
                out.push((k, w));
            }
        }
        Map(out)
    }
}

/// What an event does to the happens-before entities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncRole {
    /// Release-like (`rel`, `vw`, barrier arrival): every later acquire of the entity
    /// is ordered after it.
    Release(u32),
    /// Acquire-like (`acq`, `vr`, barrier departure).
    Acquire(u32),
    Fork(u32),
    Join(u32),
    None,
}

/// What a terminal does: (thread entity, role, access as (variable, is a write)).
pub type Role = (u32, SyncRole, Option<(u32, bool)>);

/// The entities and variables of one grammar, numbered densely.
#[derive(Default)]
pub struct Universe {
    /// Entity of a thread.
    pub threads: HashMap<Tid, u32>,
    locks: HashMap<ObjId, u32>,
    vols: HashMap<Loc, u32>,
    episodes: HashMap<(ObjId, u64), u32>,
    pub entities: u32,
    /// Variables (plain accesses).
    pub vars: HashMap<Loc, u32>,
    pub var_locs: Vec<Loc>,
    /// Program locks for the lockset analysis (`acq`/`rel` only), numbered apart.
    pub lockset_locks: HashMap<ObjId, u32>,
    /// Per terminal: its thread entity, role and access.
    pub roles: Vec<Role>,
}

impl Universe {
    pub fn new(g: &Grammar) -> Universe {
        let mut u = Universe::default();
        for l in &g.terminals {
            let r = u.role(l);
            u.roles.push(r);
        }
        u
    }

    fn entity<K: std::hash::Hash + Eq>(map: &mut HashMap<K, u32>, next: &mut u32, k: K) -> u32 {
        *map.entry(k).or_insert_with(|| {
            *next += 1;
            *next - 1
        })
    }

    pub fn thread(&mut self, t: Tid) -> u32 {
        Self::entity(&mut self.threads, &mut self.entities, t)
    }

    fn var(&mut self, loc: Loc) -> u32 {
        let n = self.var_locs.len() as u32;
        *self.vars.entry(loc).or_insert_with(|| {
            self.var_locs.push(loc);
            n
        })
    }

    fn role(&mut self, l: &Label) -> Role {
        use OwnedKind as K;
        let t = self.thread(l.tid);
        let e = &mut self.entities;
        let role = match &l.kind {
            K::Acquire { lock } => {
                let n = self.lockset_locks.len() as u32;
                self.lockset_locks.entry(*lock).or_insert(n);
                SyncRole::Acquire(Self::entity(&mut self.locks, e, *lock))
            }
            K::Release { lock } => {
                let n = self.lockset_locks.len() as u32;
                self.lockset_locks.entry(*lock).or_insert(n);
                SyncRole::Release(Self::entity(&mut self.locks, e, *lock))
            }
            K::VolatileRead { loc } => SyncRole::Acquire(Self::entity(&mut self.vols, e, *loc)),
            K::VolatileWrite { loc, .. } => {
                SyncRole::Release(Self::entity(&mut self.vols, e, *loc))
            }
            K::BarrierEnter {
                barrier,
                generation,
                ..
            } => SyncRole::Release(Self::entity(&mut self.episodes, e, (*barrier, *generation))),
            K::BarrierExit {
                barrier,
                generation,
                ..
            } => SyncRole::Acquire(Self::entity(&mut self.episodes, e, (*barrier, *generation))),
            K::Fork { child, .. } => SyncRole::Fork(self.thread(*child)),
            K::Join { child } => SyncRole::Join(self.thread(*child)),
            _ => SyncRole::None,
        };
        let access = match &l.kind {
            K::Read { loc } => Some((self.var(*loc), false)),
            K::Write { loc, .. } => Some((self.var(*loc), true)),
            _ => None,
        };
        (t, role, access)
    }
}

// ---------------------------------------------------------------------------------
// Happens-before summaries.

/// One boundary access: its After (for a last access) or Before (for a first access)
/// set within the chunk, its 1-based position in the chunk, and its thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub set: Set,
    pub pos: u64,
    pub tid: u32,
}

/// Per variable: the first racy access in the chunk (with the latest earlier
/// conflicting access not ordered before it), and the boundary accesses
/// (`ALWr`, `BFWr`, `ALRd`, `BFRd` of the paper, keyed by the reader's thread entity).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VarHb {
    pub race: Option<(u64, u64)>,
    pub lw: Option<Access>,
    pub fw: Option<Access>,
    pub lr: Map<Access>,
    pub fr: Map<Access>,
}

/// The HB summary of a chunk. `af[u]` is the union of `After` over the chunk's events
/// that enter `u` (an event of thread `u` or `join(u)`; an acquire of `u`), `bl[u]`
/// the union of `Before` over the events that leave `u` (an event of `u` or
/// `fork(u)`; a release of `u`). The union form is exact for entities whose entering
/// events are not ordered among themselves (volatile reads, barrier departures).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HbSum {
    pub len: u64,
    pub af: Map<Set>,
    pub bl: Map<Set>,
    pub vars: Map<VarHb>,
}

fn add(map: &mut Map<Set>, k: u32, v: u32) {
    map.entry(k, Set::default).insert(v);
}

impl HbSum {
    /// The summary of one event.
    pub fn leaf(u: &Universe, t: u32) -> HbSum {
        let (th, role, access) = u.roles[t as usize];
        let mut s = HbSum {
            len: 1,
            ..Default::default()
        };
        add(&mut s.af, th, th);
        add(&mut s.bl, th, th);
        match role {
            SyncRole::Acquire(l) => {
                add(&mut s.af, l, th);
                add(&mut s.bl, th, l);
            }
            SyncRole::Release(l) => {
                add(&mut s.af, th, l);
                add(&mut s.bl, l, th);
            }
            SyncRole::Fork(c) => {
                add(&mut s.af, th, c);
                add(&mut s.bl, c, th);
            }
            SyncRole::Join(c) => {
                add(&mut s.af, c, th);
                add(&mut s.bl, th, c);
            }
            SyncRole::None => {}
        }
        if let Some((x, write)) = access {
            let a = Access {
                set: Set::one(th),
                pos: 1,
                tid: th,
            };
            let mut v = VarHb::default();
            if write {
                v.lw = Some(a.clone());
                v.fw = Some(a);
            } else {
                v.lr.0.push((th, a.clone()));
                v.fr.0.push((th, a));
            }
            s.vars.0.push((x, v));
        }
        s
    }

    /// `S ∪ ⋃_{v ∈ S} self.af[v]`: an After set from the chunk before, pushed through.
    pub fn ext_after(&self, s: &Set) -> Set {
        let mut out = s.clone();
        for v in s.iter() {
            if let Some(x) = self.af.get(v) {
                out.union_with(x);
            }
        }
        out
    }

    /// `S ∪ ⋃_{v ∈ S} self.bl[v]`: a Before set from the chunk after, pulled back.
    pub fn ext_before(&self, s: &Set) -> Set {
        let mut out = s.clone();
        for v in s.iter() {
            if let Some(x) = self.bl.get(v) {
                out.union_with(x);
            }
        }
        out
    }

    /// The summary of `b` followed by `c` (Eqs. 2, 5, 6, 9 in union form, per
    /// variable, with witnesses).
    pub fn compose(b: &HbSum, c: &HbSum) -> HbSum {
        let off = b.len;
        let af = Map::merge(&b.af, &c.af, |_, x, y| {
            let mut s = x.map(|x| c.ext_after(x)).unwrap_or_default();
            if let Some(y) = y {
                s.union_with(y);
            }
            Some(s)
        });
        let bl = Map::merge(&b.bl, &c.bl, |_, x, y| {
            let mut s = y.map(|y| b.ext_before(y)).unwrap_or_default();
            if let Some(x) = x {
                s.union_with(x);
            }
            Some(s)
        });
        let shift = |a: &Access| Access {
            set: b.ext_before(&a.set),
            pos: a.pos + off,
            tid: a.tid,
        };
        let push = |a: &Access| Access {
            set: c.ext_after(&a.set),
            pos: a.pos,
            tid: a.tid,
        };
        let vars = Map::merge(&b.vars, &c.vars, |_, x, y| {
            Some(match (x, y) {
                (Some(x), None) => VarHb {
                    race: x.race,
                    lw: x.lw.as_ref().map(push),
                    fw: x.fw.clone(),
                    lr: Map(x.lr.0.iter().map(|(t, a)| (*t, push(a))).collect()),
                    fr: x.fr.clone(),
                },
                (None, Some(y)) => VarHb {
                    race: y.race.map(|(p, q)| (p + off, q + off)),
                    lw: y.lw.as_ref().map(|a| Access {
                        pos: a.pos + off,
                        ..a.clone()
                    }),
                    fw: y.fw.as_ref().map(shift),
                    lr: Map(y
                        .lr
                        .0
                        .iter()
                        .map(|(t, a)| {
                            (
                                *t,
                                Access {
                                    pos: a.pos + off,
                                    ..a.clone()
                                },
                            )
                        })
                        .collect()),
                    fr: Map(y.fr.0.iter().map(|(t, a)| (*t, shift(a))).collect()),
                },
                (Some(x), Some(y)) => {
                    let race = x.race.or_else(|| {
                        cross_race(x, y, &|s, a| s.intersects(&a.set))
                            .map(|(p, q)| (p + off, q))
                            .or(y.race.map(|(p, q)| (p + off, q + off)))
                    });
                    let lw = match &y.lw {
                        Some(a) => Some(Access {
                            pos: a.pos + off,
                            ..a.clone()
                        }),
                        None => x.lw.as_ref().map(push),
                    };
                    let fw = match &x.fw {
                        Some(a) => Some(a.clone()),
                        None => y.fw.as_ref().map(shift),
                    };
                    let lr = Map::merge(&x.lr, &y.lr, |_, p, q| match q {
                        Some(a) => Some(Access {
                            pos: a.pos + off,
                            ..a.clone()
                        }),
                        None => p.map(push),
                    });
                    let fr = Map::merge(&x.fr, &y.fr, |_, p, q| match p {
                        Some(a) => Some(a.clone()),
                        None => q.map(shift),
                    });
                    VarHb {
                        race,
                        lw,
                        fw,
                        lr,
                        fr,
                    }
                }
                (None, None) => VarHb::default(),
            })
        });
        HbSum {
            len: b.len + c.len,
            af,
            bl,
            vars,
        }
    }
}

/// The first access of `y` (the later chunk) that races with an access of `x` (the
/// earlier chunk), assuming neither has a race on the variable before it (Lemma 3.2:
/// only the last accesses of `x` and the first of `y` need checking); candidates at or
/// after `y`'s own first race are ignored. `ordered(after_set, first_access)` says
/// whether the last access whose After set is given happens before the first access.
/// Returns (position in `y`, position in `x` of the latest unordered conflicting
/// access).
pub fn cross_race(
    x: &VarHb,
    y: &VarHb,
    ordered: &dyn Fn(&Set, &Access) -> bool,
) -> Option<(u64, u64)> {
    let limit = y.race.map_or(u64::MAX, |r| r.0);
    let mut best: Option<(u64, u64)> = None;
    let mut consider = |cand: &Access, partners: &mut dyn Iterator<Item = &Access>| {
        if cand.pos >= limit || best.is_some_and(|b| b.0 <= cand.pos) {
            return;
        }
        let partner = partners
            .filter(|a| a.tid != cand.tid && !ordered(&a.set, cand))
            .map(|a| a.pos)
            .max();
        if let Some(p) = partner {
            best = Some((cand.pos, p));
        }
    };
    if let Some(fw) = &y.fw {
        let mut it = x.lw.iter().chain(x.lr.0.iter().map(|(_, a)| a));
        consider(fw, &mut it);
    }
    for (_, fr) in &y.fr.0 {
        consider(fr, &mut x.lw.iter());
    }
    best
}

// ---------------------------------------------------------------------------------
// Lockset summaries.

/// `LockSet(t, x)` of an accessed pair: the program locks (by lockset number) held at
/// every access of `t` to `x` in the chunk (chunk-relative, Def C.1), and whether all
/// of them were reads (the dummy lock `Λ`); `Λ_t` is in every such set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ls {
    pub locks: Set,
    pub read_only: bool,
    /// First and last access positions of `t` to `x` in the chunk.
    pub first: u64,
    pub last: u64,
}

/// The lockset summary: `OpenAcq`/`OpenRel` per thread and lock (keyed by
/// `thread entity × locks + lock`), and `LockSet` per variable and thread entity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LsSum {
    pub len: u64,
    pub open_acq: Map<u32>,
    pub open_rel: Map<u32>,
    /// Threads with an open acquire or release: thread entity → locks.
    pub vars: Map<Map<Ls>>,
}

impl LsSum {
    pub fn leaf(u: &Universe, labels: &[Label], t: u32, nlocks: u32) -> LsSum {
        let (th, _, access) = u.roles[t as usize];
        let mut s = LsSum {
            len: 1,
            ..Default::default()
        };
        match &labels[t as usize].kind {
            OwnedKind::Acquire { lock } => {
                s.open_acq.0.push((th * nlocks + u.lockset_locks[lock], 1));
            }
            OwnedKind::Release { lock } => {
                s.open_rel.0.push((th * nlocks + u.lockset_locks[lock], 1));
            }
            _ => {}
        }
        if let Some((x, write)) = access {
            s.vars.0.push((
                x,
                Map(vec![(
                    th,
                    Ls {
                        locks: Set::default(),
                        read_only: !write,
                        first: 1,
                        last: 1,
                    },
                )]),
            ));
        }
        s
    }

    /// Locks `l` with `other(t, l) > self_open(t, l)`, per thread entity.
    fn extra(more: &Map<u32>, less: &Map<u32>, nlocks: u32) -> Map<Set> {
        let mut out: Map<Set> = Map::default();
        for &(k, n) in &more.0 {
            if n > less.get(k).copied().unwrap_or(0) {
                out.entry(k / nlocks, Set::default).insert(k % nlocks);
            }
        }
        out
    }

    /// Eqs. 12–14 (with the typo `t'` read as `t`).
    pub fn compose(b: &LsSum, c: &LsSum, nlocks: u32) -> LsSum {
        let off = b.len;
        let open_acq = Map::merge(&b.open_acq, &c.open_acq, |k, x, y| {
            let n = y.copied().unwrap_or(0).saturating_add(
                x.copied()
                    .unwrap_or(0)
                    .saturating_sub(c.open_rel.get(k).copied().unwrap_or(0)),
            );
            (n > 0).then_some(n)
        });
        let open_rel = Map::merge(&b.open_rel, &c.open_rel, |k, x, y| {
            let n = x.copied().unwrap_or(0).saturating_add(
                y.copied()
                    .unwrap_or(0)
                    .saturating_sub(b.open_acq.get(k).copied().unwrap_or(0)),
            );
            (n > 0).then_some(n)
        });
        // Locks that protect B's events (released in C, acquired before A) and C's
        // events (acquired in B, still held through C).
        let extra_b = Self::extra(&c.open_rel, &b.open_acq, nlocks);
        let extra_c = Self::extra(&b.open_acq, &c.open_rel, nlocks);
        let vars = Map::merge(&b.vars, &c.vars, |_, x, y| {
            let empty = Map::default();
            let (x, y) = (x.unwrap_or(&empty), y.unwrap_or(&empty));
            Some(Map::merge(x, y, |t, p, q| {
                let p = p.map(|p| {
                    let mut l = p.locks.clone();
                    if let Some(e) = extra_b.get(t) {
                        l.union_with(e);
                    }
                    (l, p)
                });
                let q = q.map(|q| {
                    let mut l = q.locks.clone();
                    if let Some(e) = extra_c.get(t) {
                        l.union_with(e);
                    }
                    (l, q)
                });
                Some(match (p, q) {
                    (Some((mut l, p)), Some((m, q))) => {
                        l.intersect_with(&m);
                        Ls {
                            locks: l,
                            read_only: p.read_only && q.read_only,
                            first: p.first,
                            last: q.last + off,
                        }
                    }
                    (Some((l, p)), None) => Ls {
                        locks: l,
                        ..p.clone()
                    },
                    (None, Some((m, q))) => Ls {
                        locks: m,
                        read_only: q.read_only,
                        first: q.first + off,
                        last: q.last + off,
                    },
                    (None, None) => unreachable!("merge gives a side"),
                })
            }))
        });
        LsSum {
            len: b.len + c.len,
            open_acq,
            open_rel,
            vars,
        }
    }
}

/// Whether the per-thread locksets of one variable have an empty intersection (a
/// lockset violation: `⋂_t LockSet(t, x) = ∅` with the dummy locks).
pub fn violates(per_thread: &Map<Ls>) -> bool {
    if per_thread.0.len() < 2 {
        return false; // Λ_t is common
    }
    if per_thread.0.iter().all(|(_, l)| l.read_only) {
        return false; // Λ is common
    }
    let mut it = per_thread.0.iter();
    let mut common = it.next().map(|(_, l)| l.locks.clone()).unwrap_or_default();
    for (_, l) in it {
        common.intersect_with(&l.locks);
    }
    common.is_empty()
}
