//! `eraser` on the grammar: the lockset discipline of a compressed trace without
//! expanding it (Kini, Mathur & Viswanathan, ESEC/FSE'18 §4 and App. E), per variable
//! and with the access the `eraser` pass reports.
//!
//! 1. Every rule but the start rule gets an [`LsSum`] (`OpenAcq`, `OpenRel`,
//!    `LockSet(t, x)` with first/last access positions), bottom-up, once; runs by
//!    squaring. The summaries are kept: step 3 reads them.
//! 2. The start rule is a stream of chunks over a state that holds, for the prefix
//!    read so far, the locks each thread holds and `LockSet(t, x)` of every accessed
//!    pair: a step touches only the pairs its chunk accesses (Lemma 4.1 with the
//!    prefix as the left chunk), so an incompressible trace costs what the streaming
//!    pass costs.
//! 3. A variable whose locksets lose their common lock in a step is located exactly:
//!    a descent into that step's symbol, applying child summaries to the state before
//!    the step until one of them empties the intersection, down to the access that
//!    does. That is the access at which the `eraser` pass (RAPID's discipline) reports
//!    it; the other access is the latest access of the variable by another thread.
//!    The descent visits the copies of a run one by one, so it costs the length of
//!    the run that holds the violation (not the trace).
//!
//! Like [`super::hb`], it trusts that the expansion is a well-formed trace.

use hashbrown::HashMap;

use super::hb::{Ctx, Finding, GrammarStats, Summaries, Summary};
use super::summary::{Ls, LsSum, Map, Universe, violates};
use super::{Grammar, Sym};

impl Summary for LsSum {
    fn leaf(cx: &Ctx<'_>, t: u32) -> Self {
        LsSum::leaf(cx.u, &cx.g.terminals, t, cx.nlocks)
    }
    fn compose(cx: &Ctx<'_>, a: &Self, b: &Self) -> Self {
        LsSum::compose(a, b, cx.nlocks)
    }
    fn empty() -> Self {
        LsSum::default()
    }
}

/// Locks held per thread entity (lock → open acquires), for the prefix.
type Held = HashMap<u32, Map<u32>>;

/// Extend the prefix lockset map of one variable by chunk `s` (`per` = its map for
/// the variable; `off` = the chunk's offset).
fn extend(
    held: &Held,
    prefix: Option<&Map<Ls>>,
    per: &Map<Ls>,
    s: &LsSum,
    off: u64,
    nlocks: u32,
) -> Map<Ls> {
    let empty = Map::default();
    let prefix = prefix.unwrap_or(&empty);
    Map::merge(prefix, per, |t, p, q| {
        let open_rel = |l: u32| s.open_rel.get(t * nlocks + l).copied().unwrap_or(0);
        let held_t = held.get(&t);
        Some(match (p, q) {
            (Some(p), None) => {
                // Locks released in the chunk whose acquire is before it protect the
                // prefix's events too (empty on a well-formed trace read from its
                // start, kept for exactness).
                let mut l = p.locks.clone();
                for &(k, n) in &s.open_rel.0 {
                    if k / nlocks == t
                        && n > held_t.and_then(|h| h.get(k % nlocks)).copied().unwrap_or(0)
                    {
                        l.insert(k % nlocks);
                    }
                }
                Ls {
                    locks: l,
                    ..p.clone()
                }
            }
            (p, Some(q)) => {
                // Locks held at the chunk's start and not released in it protect
                // every event of the chunk.
                let mut m = q.locks.clone();
                if let Some(h) = held_t {
                    for &(l, n) in &h.0 {
                        if n > open_rel(l) {
                            m.insert(l);
                        }
                    }
                }
                let q = Ls {
                    locks: m,
                    read_only: q.read_only,
                    first: q.first + off,
                    last: q.last + off,
                };
                match p {
                    None => q,
                    Some(p) => {
                        let mut l = p.locks.clone();
                        l.intersect_with(&q.locks);
                        Ls {
                            locks: l,
                            read_only: p.read_only && q.read_only,
                            first: p.first,
                            last: q.last,
                        }
                    }
                }
            }
            (None, None) => unreachable!("merge gives a side"),
        })
    })
}

/// Apply `s`'s open acquires and releases to the held locks.
fn advance_held(held: &mut Held, s: &LsSum, nlocks: u32) {
    for &(k, n) in &s.open_rel.0 {
        if let Some(h) = held.get_mut(&(k / nlocks))
            && let Some(c) = h.get_mut(k % nlocks)
        {
            *c = c.saturating_sub(n);
        }
    }
    for &(k, n) in &s.open_acq.0 {
        let c = held.entry(k / nlocks).or_default().entry(k % nlocks, || 0);
        *c = c.saturating_add(n);
    }
}

/// Equal locksets and read-only flags per thread (positions aside).
fn same_locksets(a: &Map<Ls>, b: &Map<Ls>) -> bool {
    a.0.len() == b.0.len()
        && a.0
            .iter()
            .zip(&b.0)
            .all(|((t, x), (u, y))| t == u && x.locks == y.locks && x.read_only == y.read_only)
}

/// The latest access of the variable by a thread other than `t` in `m`.
fn latest_other(m: &Map<Ls>, t: u32) -> u64 {
    m.0.iter()
        .filter(|(u, _)| *u != t)
        .map(|(_, l)| l.last)
        .max()
        .unwrap_or(0)
}

/// The state before a chunk, for one variable: its locksets and the held locks.
struct Before {
    prefix: Map<Ls>,
    held: Held,
    off: u64,
}

/// Find the access at which variable `x`'s locksets lose their common lock inside
/// `count` copies of `sym`, given the state before them.
fn locate(
    cx: &Ctx<'_>,
    sums: &mut Summaries<'_, LsSum>,
    x: u32,
    before: Before,
    mut sym: Sym,
    mut count: u64,
) -> Option<(u64, u64)> {
    let Before {
        mut prefix,
        mut held,
        mut off,
    } = before;
    'descend: loop {
        // Items to walk: `count` copies of `sym` (one level at a time).
        let items: Vec<(Sym, u64)> = match sym {
            Sym::T(t) => {
                let th = cx.u.roles[t as usize].0;
                return Some((off + 1, latest_other(&prefix, th)));
            }
            Sym::R(r) if count == 1 => cx.g.rules[r as usize]
                .iter()
                .map(|it| (it.sym, it.count))
                .collect(),
            s => vec![(s, count)],
        };
        for (s, c) in items {
            let sum = sums.of(cx, s);
            for copy in 0..c {
                let before = (copy > 0).then(|| (prefix.clone(), held.clone()));
                let per = sum.vars.get(x);
                if let Some(per) = per {
                    let next = extend(&held, Some(&prefix), per, &sum, off, cx.nlocks);
                    if violates(&next) {
                        sym = s;
                        count = 1;
                        continue 'descend;
                    }
                    prefix = next;
                }
                advance_held(&mut held, &sum, cx.nlocks);
                off += sum.len;
                // A copy that changed nothing but positions: the later copies cannot
                // either (the step is a function of the state); skip them.
                let rest = c - copy - 1;
                if rest > 0
                    && let Some((p, h)) = before
                    && h == held
                    && same_locksets(&p, &prefix)
                {
                    // The last copy's accesses are the latest ones.
                    let last_off = off + sum.len * (rest - 1);
                    for (t, l) in sum.vars.get(x).map(|m| m.0.as_slice()).unwrap_or(&[]) {
                        if let Some(e) = prefix.get_mut(*t) {
                            e.last = l.last + last_off;
                        }
                    }
                    off += sum.len * rest;
                    break;
                }
            }
        }
        return None;
    }
}

/// Whether `eraser` can run on `g`'s grammar: its summaries key a thread and a lock by
/// one `u32` (entities × locks must fit).
pub fn fits(g: &Grammar) -> bool {
    let u = Universe::new(g);
    u.entities as u64 * (u.lockset_locks.len() as u64).max(1) <= u32::MAX as u64
}

/// The lockset violations of a compressed trace, sorted by position. Needs [`fits`].
pub fn analyze_lockset(g: &Grammar) -> (Vec<Finding>, GrammarStats) {
    let u = Universe::new(g);
    let nlocks = (u.lockset_locks.len() as u32).max(1);
    let cx = Ctx { u: &u, g, nlocks };
    let mut sums: Summaries<'_, LsSum> = Summaries::new(g, true);
    sums.compute_rules(&cx);
    let mut held: Held = HashMap::new();
    let mut vars: Vec<Option<Map<Ls>>> = vec![None; u.var_locs.len()];
    let mut found: Vec<Option<(u64, u64)>> = vec![None; u.var_locs.len()];
    let mut off = 0;
    let mut steps = 0;
    for it in &g.rules[g.root() as usize] {
        let s = sums.of(&cx, it.sym);
        let s = sums.power(&cx, s, it.count);
        steps += 1;
        let mut newly = Vec::new();
        let mut updates = Vec::new();
        for (x, per) in &s.vars.0 {
            let xi = *x as usize;
            if found[xi].is_some() {
                continue;
            }
            let next = extend(&held, vars[xi].as_ref(), per, &s, off, nlocks);
            if violates(&next) {
                newly.push(*x);
            }
            updates.push((xi, next));
        }
        if !newly.is_empty() {
            for &x in &newly {
                let before = vars[x as usize].clone().unwrap_or_default();
                let before = Before {
                    prefix: before,
                    held: held.clone(),
                    off,
                };
                found[x as usize] = locate(&cx, &mut sums, x, before, it.sym, it.count);
            }
        }
        for (xi, next) in updates {
            vars[xi] = Some(next);
        }
        advance_held(&mut held, &s, nlocks);
        off += s.len;
    }
    let out = super::hb::findings(&u, found.iter().copied());
    let stats = GrammarStats {
        rules: g.rules.len(),
        compositions: sums.compositions,
        steps,
    };
    (out, stats)
}
