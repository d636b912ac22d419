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
//! 3. The engine reads the start rule's summaries *frozen* ([`Frozen`]): each one
//!    contiguous words in one array, written when the rule's summary is made (then
//!    dropped at once if only the start rule uses the rule), so a step reads one
//!    short run of memory instead of chasing the summary's maps (on a trace that
//!    does not repeat, the start rule visits summaries in no particular order, and
//!    the time went into those cache misses and into freeing the maps).
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

use super::summary::{HbSum, Set, Universe, VarHb};
use super::{Grammar, Item, Sym};

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

/// The findings of a grammar analysis, in the order of their first racy event: for
/// each variable (in `u`'s order) its first flagged event and the earlier one, if any.
pub(super) fn findings(
    u: &Universe,
    per_var: impl Iterator<Item = Option<(u64, u64)>>,
) -> Vec<Finding> {
    let mut out: Vec<Finding> = per_var
        .enumerate()
        .filter_map(|(x, f)| {
            f.map(|(pos, prev)| Finding {
                loc: u.var_locs[x],
                pos,
                prev,
            })
        })
        .collect();
    out.sort_by_key(|f| f.pos);
    out
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
    /// The same per terminal.
    leaf_uses: Option<Vec<u64>>,
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
        let (uses, leaf_uses) = if keep_all {
            (None, None)
        } else {
            let mut uses = vec![0u64; n];
            let mut leaf_uses = vec![0u64; g.terminals.len()];
            for rhs in &g.rules {
                for it in rhs {
                    match it.sym {
                        Sym::R(r) => uses[r as usize] += 1,
                        Sym::T(t) => leaf_uses[t as usize] += 1,
                    }
                }
            }
            (Some(uses), Some(leaf_uses))
        };
        Summaries {
            g,
            leaves: vec![None; g.terminals.len()],
            rules: vec![None; n],
            uses,
            leaf_uses,
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

    /// A use of `sym` is done (drop its summary after the last one).
    pub fn used(&mut self, sym: Sym) {
        match sym {
            Sym::R(r) => {
                if let Some(uses) = &mut self.uses {
                    uses[r as usize] -= 1;
                    if uses[r as usize] == 0 {
                        self.rules[r as usize] = None;
                    }
                }
            }
            Sym::T(t) => {
                if let Some(uses) = &mut self.leaf_uses {
                    uses[t as usize] -= 1;
                    if uses[t as usize] == 0 {
                        self.leaves[t as usize] = None;
                    }
                }
            }
        }
    }

    /// Uses of rule `r` not done yet (when they are counted).
    fn remaining(&self, r: usize) -> Option<u64> {
        Some(self.uses.as_ref()?[r])
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
        self.compute_rules_then(cx, |_, _| {});
    }

    /// [`Self::compute_rules`], calling `done(self, r)` right after rule `r`'s
    /// summary is made (while it is still in the cache).
    pub fn compute_rules_then(&mut self, cx: &Ctx<'_>, mut done: impl FnMut(&mut Self, usize)) {
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
            done(self, r);
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

/// The summaries the start rule uses, frozen for [`Engine`]: each one contiguous
/// `u64` words, in the order the rules are made (children first, which is about the
/// order the start rule first visits them; terminals on their first visit), so that
/// a step reads one short run of memory instead of following a summary's pointers.
/// A set is `set_words` words.
///
/// Layout of one summary: `len, bl count, var count`; per `bl` entry `entity,
/// set`; per variable `x | race << 32 | lw << 33 | fw << 34`, `lr count | fr count
/// << 32`, then `pos, prev` if race, an access if `lw`, an access if `fw`, the
/// keyed accesses of `lr` and of `fr`. An access is `pos, tid, set`; a keyed
/// access `key | tid << 32, pos, set`.
struct Frozen {
    words: Vec<u64>,
    set_words: usize,
}

const RACE: u64 = 1 << 32;
const LW: u64 = 1 << 33;
const FW: u64 = 1 << 34;

impl Frozen {
    fn push_set(&mut self, s: &Set) {
        let at = self.words.len();
        self.words.resize(at + self.set_words, 0);
        for e in s.iter() {
            self.words[at + e as usize / 64] |= 1 << (e % 64);
        }
    }

    /// Append `s`; returns its offset.
    fn freeze(&mut self, s: &HbSum) -> usize {
        let at = self.words.len();
        self.words
            .extend([s.len, s.bl.0.len() as u64, s.vars.0.len() as u64]);
        for (w, set) in &s.bl.0 {
            self.words.push(*w as u64);
            self.push_set(set);
        }
        for (x, v) in &s.vars.0 {
            let flags = *x as u64
                | if v.race.is_some() { RACE } else { 0 }
                | if v.lw.is_some() { LW } else { 0 }
                | if v.fw.is_some() { FW } else { 0 };
            self.words
                .extend([flags, v.lr.0.len() as u64 | (v.fr.0.len() as u64) << 32]);
            if let Some((p, q)) = v.race {
                self.words.extend([p, q]);
            }
            for a in v.lw.iter().chain(&v.fw) {
                self.words.extend([a.pos, a.tid as u64]);
                self.push_set(&a.set);
            }
            for (k, a) in v.lr.0.iter().chain(&v.fr.0) {
                self.words.extend([*k as u64 | (a.tid as u64) << 32, a.pos]);
                self.push_set(&a.set);
            }
        }
        at
    }
}

/// An access the engine keeps: its After set (an offset into [`Frozen::words`], and
/// its first word, which is the whole set for up to 64 entities: the engine then does
/// not go back to the summary the access came from), its global position, its thread
/// and the step it is from.
#[derive(Clone, Copy)]
struct EAccess {
    set: usize,
    w0: u64,
    pos: u64,
    tid: u32,
    step: u32,
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
    /// Last write.
    lw: Option<EAccess>,
    /// Last read per reader's thread entity (sorted by it).
    lr: Vec<(u32, EAccess)>,
}

/// The entities of a frozen set.
fn set_iter(words: &[u64]) -> impl Iterator<Item = u32> + '_ {
    super::summary::set_bits(words.iter().copied())
}

fn sets_intersect(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).any(|(x, y)| x & y != 0)
}

/// `out = ⊔_{w ∈ set} clocks[w]`.
fn join_into(out: &mut [u32], clocks: &[u32], entities: usize, set: &[u64]) {
    out.fill(0);
    for w in set_iter(set) {
        let c = &clocks[w as usize * entities..][..entities];
        for (a, b) in out.iter_mut().zip(c) {
            *a = (*a).max(*b);
        }
    }
}

/// A frozen access at `at` (`keyed`: with its key first): (key, access in the
/// chunk, the next offset).
#[inline]
fn read_access(words: &[u64], at: usize, sw: usize, keyed: bool) -> (u32, EAccess, usize) {
    let (key, pos, tid) = if keyed {
        let kt = words[at];
        (kt as u32, words[at + 1], (kt >> 32) as u32)
    } else {
        (0, words[at], words[at + 1] as u32)
    };
    let a = EAccess {
        set: at + 2,
        w0: words[at + 2],
        pos,
        tid,
        step: 0,
    };
    (key, a, at + 2 + sw)
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

    /// One step: the frozen summary at `at`.
    fn apply(&mut self, fz: &Frozen, at: usize) {
        let words = &fz.words[..];
        let sw = fz.set_words;
        let set = |o: usize| &words[o..o + sw];
        fn aset<'a>(words: &'a [u64], sw: usize, a: &'a EAccess) -> &'a [u64] {
            if sw == 1 {
                std::slice::from_ref(&a.w0)
            } else {
                &words[a.set..a.set + sw]
            }
        }
        let k = self.step + 1;
        let entities = self.entities;
        let (len, nbl, nvars) = (words[at], words[at + 1] as usize, words[at + 2] as usize);
        let bl_at = at + 3;
        let mut p = bl_at + nbl * (1 + sw);
        for _ in 0..nvars {
            let flags = words[p];
            let counts = words[p + 1];
            let (nlr, nfr) = ((counts as u32) as usize, (counts >> 32) as usize);
            p += 2;
            let race = (flags & RACE != 0).then(|| {
                p += 2;
                (words[p - 2], words[p - 1])
            });
            let lw = (flags & LW != 0).then(|| {
                let (_, a, next) = read_access(words, p, sw, false);
                p = next;
                a
            });
            let fw = (flags & FW != 0).then(|| {
                let (_, a, next) = read_access(words, p, sw, false);
                p = next;
                a
            });
            let lr_at = p;
            p += nlr * (2 + sw);
            let fr_at = p;
            p += nfr * (2 + sw);
            let ev = &mut self.vars[(flags as u32) as usize];
            if ev.race.is_none() {
                let limit = race.map_or(u64::MAX, |r| r.0);
                let mut best: Option<(u64, u64)> = None;
                let clocks = &self.clocks;
                let vc = &mut self.vc;
                let mut check = |cand: &EAccess, partners: &mut dyn Iterator<Item = &EAccess>| {
                    if cand.pos >= limit || best.is_some_and(|b| b.0 <= cand.pos) {
                        return;
                    }
                    let cset = set(cand.set);
                    let mut joined = false;
                    let mut latest = None;
                    for a in partners {
                        let aset = aset(words, sw, a);
                        if a.tid == cand.tid || sets_intersect(aset, cset) {
                            continue;
                        }
                        if !joined {
                            join_into(vc, clocks, entities, cset);
                            joined = true;
                        }
                        let ordered = set_iter(aset).any(|e| vc[e as usize] > a.step);
                        if !ordered {
                            latest = latest.max(Some(a.pos));
                        }
                    }
                    if let Some(p) = latest {
                        best = Some((cand.pos, p));
                    }
                };
                if let Some(fw) = &fw {
                    check(fw, &mut ev.lw.iter().chain(ev.lr.iter().map(|(_, a)| a)));
                }
                let mut q = fr_at;
                for _ in 0..nfr {
                    let (_, fr, next) = read_access(words, q, sw, true);
                    q = next;
                    check(&fr, &mut ev.lw.iter());
                }
                ev.race = best
                    .map(|(p, q)| (p + self.off, q))
                    .or(race.map(|(p, q)| (p + self.off, q + self.off)));
            }
            let global = |a: EAccess| EAccess {
                pos: a.pos + self.off,
                step: k,
                ..a
            };
            if let Some(a) = lw {
                ev.lw = Some(global(a));
            }
            let mut q = lr_at;
            for _ in 0..nlr {
                let (t, a, next) = read_access(words, q, sw, true);
                q = next;
                let a = global(a);
                match ev.lr.binary_search_by_key(&t, |e| e.0) {
                    Ok(i) => ev.lr[i].1 = a,
                    Err(i) => ev.lr.insert(i, (t, a)),
                }
            }
        }
        // Clocks of the entities the step leaves, from the clocks at its start.
        self.updates.resize(nbl * entities, 0);
        for j in 0..nbl {
            let e = bl_at + j * (1 + sw);
            let (w, bset) = (words[e] as usize, set(e + 1));
            let out = &mut self.updates[j * entities..][..entities];
            join_into(out, &self.clocks, entities, bset);
            let old = &self.clocks[w * entities..][..entities];
            for (a, b) in out.iter_mut().zip(old) {
                *a = (*a).max(*b);
            }
            for v in set_iter(bset) {
                out[v as usize] = k;
            }
        }
        for j in 0..nbl {
            let w = words[bl_at + j * (1 + sw)] as usize;
            self.clocks[w * entities..][..entities]
                .copy_from_slice(&self.updates[j * entities..][..entities]);
        }
        self.step = k;
        self.off += len;
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
    let root = g.root() as usize;
    let items = &g.rules[root];
    // The start rule's summaries are frozen (see [`Frozen`]): a rule's as soon as it
    // is made, and then dropped if only the start rule uses it (once per use); a
    // terminal's on its first visit; a run `X^k` (k > 1) of the start rule once per
    // distinct `(X, k)`.
    let mut fz = Frozen {
        words: Vec::new(),
        set_words: (u.entities as usize).div_ceil(64).max(1),
    };
    const NONE: usize = usize::MAX;
    let mut leaf_at = vec![NONE; g.terminals.len()];
    let mut rule_at = vec![NONE; g.rules.len()];
    let mut run_at: hashbrown::HashMap<(Sym, u64), usize> = hashbrown::HashMap::new();
    let mut root_uses = vec![0u64; g.rules.len()];
    let mut root_runs = vec![false; g.rules.len()];
    for it in items {
        if let Sym::R(r) = it.sym {
            if it.count == 1 {
                root_uses[r as usize] += 1;
            } else {
                root_runs[r as usize] = true;
            }
        }
    }
    let mut sums: Summaries<'_, HbSum> = Summaries::new(g, false);
    sums.compute_rules_then(&cx, |sums, r| {
        if root_uses[r] == 0 {
            return;
        }
        if let Some(Some(s)) = sums.rules.get(r) {
            rule_at[r] = fz.freeze(s);
        }
        if !root_runs[r] && sums.remaining(r) == Some(root_uses[r]) {
            sums.rules[r] = None;
        }
    });
    // Terminals and runs of the start rule, frozen before the engine starts.
    for it in items {
        match (it.sym, it.count) {
            (Sym::T(t), 1) => {
                if leaf_at[t as usize] == NONE {
                    let s = sums.of(&cx, it.sym);
                    leaf_at[t as usize] = fz.freeze(&s);
                }
            }
            (Sym::R(_), 1) => continue,
            (sym, count) => {
                if !run_at.contains_key(&(sym, count)) {
                    let s = sums.of(&cx, sym);
                    let s = sums.power(&cx, s, count);
                    run_at.insert((sym, count), fz.freeze(&s));
                }
            }
        }
        // A rule's summary is either dropped already or kept for a run of the start
        // rule (dropped with `sums` below); a terminal's goes after its last use.
        if let Sym::T(_) = it.sym {
            sums.used(it.sym);
        }
    }
    let compositions = sums.compositions;
    drop(sums);
    let at = |it: &super::Item| match (it.sym, it.count) {
        (Sym::T(t), 1) => leaf_at[t as usize],
        (Sym::R(r), 1) => rule_at[r as usize],
        (sym, count) => run_at.get(&(sym, count)).copied().unwrap_or(NONE),
    };
    let mut engine = Engine::new(&u);
    let mut steps = 0;
    for (i, it) in items.iter().enumerate() {
        // The start rule visits the summaries in no particular order: fetch ahead
        // the offset of item `i + 16` and the summary of item `i + 8`.
        if let Some(Item {
            sym: Sym::R(r),
            count: 1,
        }) = items.get(i + 16)
        {
            prefetch(rule_at[*r as usize..].as_ptr());
        }
        if let Some(ahead) = items.get(i + 8).map(at)
            && let Some(w) = fz.words.get(ahead..)
        {
            prefetch(w.as_ptr());
            prefetch(w.as_ptr().wrapping_add(8));
        }
        engine.apply(&fz, at(it));
        steps += 1;
    }
    let out = findings(&u, engine.vars.iter().map(|v| v.race));
    let stats = GrammarStats {
        rules: g.rules.len(),
        compositions,
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
