//! `hb` on the grammar: happens-before races of a compressed trace without expanding
//! it (Kini, Mathur & Viswanathan, ESEC/FSE'18 §3), per variable and with witnesses.
//!
//! 1. Every rule but the start rule gets an [`HbSum`], bottom-up (rules are numbered
//!    children first), once: the fold of [`HbSum::compose`] over its items, a run
//!    `X^k` by repeated squaring (O(log k) compositions). A child's summary is freed
//!    after its last use.
//! 2. The start rule is long when the trace does not repeat (Sequitur leaves one item
//!    per top-level repeat), and folding the set summaries over it would re-extend the
//!    After sets of every variable seen so far at every step: quadratic. So the start
//!    rule is evaluated as a *stream of chunks* by [`Engine`], vector clocks whose
//!    unit is the chunk: for entity `v`, `K[w][v]` is the latest step with an event
//!    entering `v` that happens before `w`'s latest leaving event. The last access `a`
//!    of step `i` happens before a first access `b` of step `k > i` iff some `v` in
//!    `After_i(a)` has an entering event in a step `j > i` before `b`, i.e. `v` is in
//!    `Before_k(b)` or `K[w][v] > i` for some `w` in `Before_k(b)`. A step costs its
//!    summary's size times the number of entities, like a vector-clock detector.
//!
//! Verdict: every variable with a race (two conflicting accesses, one a write, of
//! different threads, not ordered), with a witness: the first racy access in trace
//! order and the latest earlier conflicting access not ordered before it — the pair
//! the `hb` pass reports on the expanded trace. Lemma 3.2 makes the first racy access
//! computable: with no race before it, it is the first write or some thread's first
//! read of the later chunk, checked against the last write and last reads of the
//! earlier one.
//!
//! The analysis trusts that the expansion is a well-formed trace (every `.slp` that
//! capvm writes is: it compresses what the STD reader validated).

use std::rc::Rc;

use crate::event::Loc;

use super::summary::{Access, HbSum, Map, Set, Universe, VarHb};
use super::{Grammar, Sym};

/// A race found on the grammar: positions are 1-based in the expanded trace (file
/// events; [`Grammar::line_of`] gives the lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finding {
    pub loc: Loc,
    /// The first racy access of `loc`.
    pub pos: u64,
    /// The earlier access it races with.
    pub prev: u64,
}

/// Statistics of a grammar analysis.
#[derive(Clone, Copy, Debug, Default)]
pub struct GrammarStats {
    pub rules: usize,
    pub compositions: u64,
    pub steps: u64,
}

/// The summaries of a grammar's rules, computed bottom-up on demand.
pub(crate) struct Summaries<'g, S> {
    pub g: &'g Grammar,
    pub leaves: Vec<Option<Rc<S>>>,
    pub rules: Vec<Option<Rc<S>>>,
    /// Remaining uses per rule (the summary is dropped at 0) or `None` to keep all.
    uses: Option<Vec<u64>>,
    pub compositions: u64,
}

pub(crate) trait Summary: Clone {
    fn leaf(cx: &Ctx<'_>, t: u32) -> Self;
    fn compose(cx: &Ctx<'_>, a: &Self, b: &Self) -> Self;
    fn empty() -> Self;
}

/// What the summaries need besides the grammar.
pub(crate) struct Ctx<'a> {
    pub u: &'a Universe,
    pub g: &'a Grammar,
    pub nlocks: u32,
}

impl<'g, S: Summary> Summaries<'g, S> {
    pub fn new(g: &'g Grammar, keep_all: bool) -> Self {
        let n = g.rules.len();
        let uses = (!keep_all).then(|| {
            let mut uses = vec![0u64; n];
            for rhs in &g.rules {
                for it in rhs {
                    if let Sym::R(r) = it.sym {
                        uses[r as usize] += 1;
                    }
                }
            }
            uses
        });
        Summaries {
            g,
            leaves: vec![None; g.terminals.len()],
            rules: vec![None; n],
            uses,
            compositions: 0,
        }
    }

    /// The summary of one copy of `sym` (rules below the start rule are computed in
    /// order by [`Self::compute_rules`] first).
    pub fn of(&mut self, cx: &Ctx<'_>, sym: Sym) -> Rc<S> {
        match sym {
            Sym::T(t) => self.leaves[t as usize]
                .get_or_insert_with(|| Rc::new(S::leaf(cx, t)))
                .clone(),
            Sym::R(r) => self.rules[r as usize]
                .clone()
                .unwrap_or_else(|| Rc::new(S::empty())),
        }
    }

    /// A use of rule `r` is done (drop its summary after the last one).
    pub fn used(&mut self, sym: Sym) {
        if let (Sym::R(r), Some(uses)) = (sym, &mut self.uses) {
            uses[r as usize] -= 1;
            if uses[r as usize] == 0 {
                self.rules[r as usize] = None;
            }
        }
    }

    /// `s^k` by squaring.
    pub fn power(&mut self, cx: &Ctx<'_>, s: Rc<S>, mut k: u64) -> Rc<S> {
        if k == 1 {
            return s;
        }
        let mut base = s;
        let mut acc: Option<Rc<S>> = None;
        loop {
            if k & 1 == 1 {
                acc = Some(match acc {
                    None => base.clone(),
                    Some(a) => {
                        self.compositions += 1;
                        Rc::new(S::compose(cx, &a, &base))
                    }
                });
            }
            k >>= 1;
            if k == 0 {
                break;
            }
            self.compositions += 1;
            base = Rc::new(S::compose(cx, &base, &base));
        }
        acc.unwrap_or_else(|| Rc::new(S::empty()))
    }

    /// Summaries of every rule but the start rule, children first.
    pub fn compute_rules(&mut self, cx: &Ctx<'_>) {
        let root = self.g.rules.len() - 1;
        for r in 0..root {
            // The children of a later rule: their summaries lie anywhere in memory.
            for it in self.g.rules.get(r + 8).into_iter().flatten().take(4) {
                if let Sym::R(c) = it.sym
                    && let Some(Some(s)) = self.rules.get(c as usize)
                {
                    prefetch(Rc::as_ptr(s));
                }
            }
            let mut acc: Option<Rc<S>> = None;
            for it in &self.g.rules[r] {
                let s = self.of(cx, it.sym);
                self.used(it.sym);
                let s = self.power(cx, s, it.count);
                acc = Some(match acc {
                    None => s,
                    Some(a) => {
                        self.compositions += 1;
                        Rc::new(S::compose(cx, &a, &s))
                    }
                });
            }
            self.rules[r] = Some(acc.unwrap_or_else(|| Rc::new(S::empty())));
        }
    }
}

impl Summary for HbSum {
    fn leaf(cx: &Ctx<'_>, t: u32) -> Self {
        HbSum::leaf(cx.u, t)
    }
    fn compose(_: &Ctx<'_>, a: &Self, b: &Self) -> Self {
        HbSum::compose(a, b)
    }
    fn empty() -> Self {
        HbSum::default()
    }
}

/// The start rule as a stream of chunks (see the module doc).
struct Engine {
    step: u32,
    off: u64,
    entities: usize,
    /// Per entity `w`: its clock, `clocks[w * entities..][..entities]` (flat).
    clocks: Vec<u32>,
    vars: Vec<EngineVar>,
    /// Scratch: a candidate's clock; the new clocks of a step's entities.
    vc: Vec<u32>,
    updates: Vec<u32>,
}

#[derive(Default, Clone)]
struct EngineVar {
    race: Option<(u64, u64)>,
    /// Last write: After set in its step, global position, thread; and its step.
    lw: Option<(Access, u32)>,
    lr: Map<(Access, u32)>,
}

/// `out = ⊔_{w ∈ set} clocks[w]`.
fn join_into(out: &mut [u32], clocks: &[u32], entities: usize, set: &Set) {
    out.fill(0);
    for w in set.iter() {
        let c = &clocks[w as usize * entities..][..entities];
        for (a, b) in out.iter_mut().zip(c) {
            *a = (*a).max(*b);
        }
    }
}

impl Engine {
    fn new(u: &Universe) -> Engine {
        let e = u.entities as usize;
        Engine {
            step: 0,
            off: 0,
            entities: e,
            clocks: vec![0; e * e],
            vars: vec![EngineVar::default(); u.var_locs.len()],
            vc: vec![0; e],
            updates: Vec::new(),
        }
    }

    fn apply(&mut self, s: &HbSum) {
        let k = self.step + 1;
        let entities = self.entities;
        for (x, v) in &s.vars.0 {
            let ev = &mut self.vars[*x as usize];
            if ev.race.is_none() {
                let limit = v.race.map_or(u64::MAX, |r| r.0);
                let mut best: Option<(u64, u64)> = None;
                let clocks = &self.clocks;
                let vc = &mut self.vc;
                let mut check =
                    |cand: &Access, partners: &mut dyn Iterator<Item = &(Access, u32)>| {
                        if cand.pos >= limit || best.is_some_and(|b| b.0 <= cand.pos) {
                            return;
                        }
                        let mut joined = false;
                        let mut latest = None;
                        for (a, i) in partners {
                            if a.tid == cand.tid || a.set.intersects(&cand.set) {
                                continue;
                            }
                            if !joined {
                                join_into(vc, clocks, entities, &cand.set);
                                joined = true;
                            }
                            let ordered = a.set.iter().any(|e| vc[e as usize] > *i);
                            if !ordered {
                                latest = latest.max(Some(a.pos));
                            }
                        }
                        if let Some(p) = latest {
                            best = Some((cand.pos, p));
                        }
                    };
                if let Some(fw) = &v.fw {
                    check(fw, &mut ev.lw.iter().chain(ev.lr.0.iter().map(|(_, a)| a)));
                }
                for (_, fr) in &v.fr.0 {
                    check(fr, &mut ev.lw.iter());
                }
                ev.race = best
                    .map(|(p, q)| (p + self.off, q))
                    .or(v.race.map(|(p, q)| (p + self.off, q + self.off)));
            }
            let global = |a: &Access| Access {
                set: a.set.clone(),
                pos: a.pos + self.off,
                tid: a.tid,
            };
            if let Some(a) = &v.lw {
                ev.lw = Some((global(a), k));
            }
            for (t, a) in &v.lr.0 {
                *ev.lr.entry(*t, || (global(a), k)) = (global(a), k);
            }
        }
        // Clocks of the entities the step leaves, from the clocks at its start.
        self.updates.resize(s.bl.0.len() * entities, 0);
        for (j, (w, set)) in s.bl.0.iter().enumerate() {
            let out = &mut self.updates[j * entities..][..entities];
            join_into(out, &self.clocks, entities, set);
            let old = &self.clocks[*w as usize * entities..][..entities];
            for (a, b) in out.iter_mut().zip(old) {
                *a = (*a).max(*b);
            }
            for v in set.iter() {
                out[v as usize] = k;
            }
        }
        for (j, (w, _)) in s.bl.0.iter().enumerate() {
            self.clocks[*w as usize * entities..][..entities]
                .copy_from_slice(&self.updates[j * entities..][..entities]);
        }
        self.step = k;
        self.off += s.len;
    }
}

/// Software prefetch of one cache line (a hint; no effect on the result).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it does not dereference `p` architecturally
    // (any address is allowed, no fault is raised).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetch for the start rule's item `i + 16` its summary, for item `i + 8` the
/// summary's maps, and for item `i + 4` the engine's state of its variables.
fn prefetch_ahead(sums: &Summaries<'_, HbSum>, engine: &Engine, items: &[super::Item], i: usize) {
    let sum = |k: usize| -> Option<&HbSum> {
        match items.get(k)?.sym {
            Sym::T(t) => sums.leaves.get(t as usize)?.as_deref(),
            Sym::R(r) => sums.rules.get(r as usize)?.as_deref(),
        }
    };
    if let Some(it) = items.get(i + 16) {
        match it.sym {
            Sym::T(t) => {
                if let Some(Some(s)) = sums.leaves.get(t as usize) {
                    prefetch(Rc::as_ptr(s));
                }
            }
            Sym::R(r) => {
                if let Some(Some(s)) = sums.rules.get(r as usize) {
                    prefetch(Rc::as_ptr(s));
                }
            }
        }
    }
    if let Some(s) = sum(i + 8) {
        prefetch(s.vars.0.as_ptr());
        prefetch(s.bl.0.as_ptr());
    }
    if let Some(s) = sum(i + 4) {
        for (x, v) in s.vars.0.iter().take(4) {
            if let Some(e) = engine.vars.get(*x as usize) {
                prefetch(e as *const EngineVar);
            }
            if let Some(a) = &v.fw {
                prefetch(a as *const Access);
            }
        }
    }
}

/// The most entities (threads, locks, volatile variables, barrier episodes) the
/// start-rule engine takes: its clocks are an entities × entities matrix (here at
/// most 256 MiB). [`fits`] says whether a grammar is within it.
pub const MAX_ENTITIES: u32 = 8192;

/// Whether `hb` can run on `g`'s grammar (see [`MAX_ENTITIES`]).
pub fn fits(g: &Grammar) -> bool {
    // Steps of the start rule are numbered in 32 bits too.
    Universe::new(g).entities <= MAX_ENTITIES
        && g.rules[g.root() as usize].len() < u32::MAX as usize
}

/// The races of a compressed trace (see the module doc), sorted by position of the
/// racy access. Needs [`fits`]: above [`MAX_ENTITIES`] it would allocate more than the
/// bound (callers analyse the expansion instead).
pub fn analyze_hb(g: &Grammar) -> (Vec<Finding>, GrammarStats) {
    let u = Universe::new(g);
    let cx = Ctx {
        u: &u,
        g,
        nlocks: 1,
    };
    let mut sums: Summaries<'_, HbSum> = Summaries::new(g, false);
    sums.compute_rules(&cx);
    let mut engine = Engine::new(&u);
    let root = g.root() as usize;
    let mut steps = 0;
    let items = &g.rules[root];
    for (i, it) in items.iter().enumerate() {
        // On a trace that does not repeat, the start rule visits the summaries in no
        // particular order and the time goes into cache misses: fetch ahead.
        prefetch_ahead(&sums, &engine, items, i);
        let s = sums.of(&cx, it.sym);
        sums.used(it.sym);
        let s = sums.power(&cx, s, it.count);
        engine.apply(&s);
        steps += 1;
    }
    let mut out: Vec<Finding> = engine
        .vars
        .iter()
        .enumerate()
        .filter_map(|(x, v)| {
            v.race.map(|(pos, prev)| Finding {
                loc: u.var_locs[x],
                pos,
                prev,
            })
        })
        .collect();
    out.sort_by_key(|f| f.pos);
    let stats = GrammarStats {
        rules: g.rules.len(),
        compositions: sums.compositions,
        steps,
    };
    (out, stats)
}

/// The same verdict by folding set summaries over the start rule too (no engine):
/// quadratic on incompressible traces, kept as a second implementation the tests
/// compare with.
pub fn analyze_hb_folded(g: &Grammar) -> Vec<Finding> {
    let u = Universe::new(g);
    let cx = Ctx {
        u: &u,
        g,
        nlocks: 1,
    };
    let mut sums: Summaries<'_, HbSum> = Summaries::new(g, true);
    sums.compute_rules(&cx);
    let root = g.root() as usize;
    let mut acc = HbSum::default();
    for it in &g.rules[root] {
        let s = sums.of(&cx, it.sym);
        let s = sums.power(&cx, s, it.count);
        acc = HbSum::compose(&acc, &s);
    }
    let mut out: Vec<Finding> = acc
        .vars
        .0
        .iter()
        .filter_map(|(x, v): &(u32, VarHb)| {
            v.race.map(|(pos, prev)| Finding {
                loc: u.var_locs[*x as usize],
                pos,
                prev,
            })
        })
        .collect();
    out.sort_by_key(|f| f.pos);
    out
}
