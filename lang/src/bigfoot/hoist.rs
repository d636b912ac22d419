//! Loop-invariant loads of `this`'s fields, read once before the loop.
//!
//! A loop that reads `this.key` in every iteration names the array through a local
//! the loop assigns, so placement must treat each iteration's `key` as a new array:
//! crypt's IDEA rounds check their ranges once per round, and sparsematmult checks
//! `highsum[id]` in every iteration and tests in each one whether `row`, `col` and
//! `val` are still the arrays its ranges run over. When nothing in the loop can
//! change what the thread may read there, one read before the loop gives every
//! iteration the same value, and placement sees one array.
//!
//! ```text
//! pre: … jump H            pre: … jump G
//! H: test; branch c ? B : E     G: copy of test; branch c ? P : E
//! B: x = this.f; … uses x  ⇒   P: t = this.f; jump H
//!    … jump H                   H: test; branch c ? B : E
//!                               B: x = t; … uses t … jump H
//! ```
//!
//! `P` runs only when the test passed, so the loop runs (the copy `G` of the header
//! test decides, as a rotated loop's guard does), and the read it makes is one the
//! first iteration makes too, earlier in the same epoch: no acquire or release, no
//! write of `f` and no `deterministic`/`atomic` bound anywhere in the loop. A write by
//! another thread races with it iff it races with the reads it replaces; the value
//! every iteration sees is one a Java compiler may give them. Two caveats, both
//! confined to runs that already went wrong before the hoisted read mattered:
//! - a run whose first iteration stops on a runtime error before its read of `f`
//!   made the read anyway (BigFoot's precision covers error-free runs; the thesis
//!   assumes the same, and a read of `this` itself cannot fail);
//! - if the test reads racy data, `H` may see another value than `G` did a moment
//!   before; that needs a write racing with the test's read, so the run has a race
//!   at or before the hoisted read.
//!
//! `x` keeps its own assignment (`x = t` where the load was), so code after the loop
//! sees exactly the value it saw before; uses of `x` inside the loop read `t`
//! directly, which only the hoisted load assigns.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::{
    FieldWrites, Sync, back_edges, fresh_local, natural_loop, own_sync, predecessors, successors,
};
use crate::ir::*;

/// Header tests that may be copied into the guard.
const MAX_GUARD_TEST: usize = 16;

/// Hoist the loop-invariant loads of `this`'s fields out of every loop of `f` that
/// qualifies (see the module comment), innermost loops first. `writes[g]`: the fields
/// a call of `g` may write, `None` if it may synchronize. Returns how many loads
/// were hoisted.
pub(super) fn hoist_loop_loads(prog: &Program, writes: &FieldWrites, f: &mut Function) -> usize {
    if f.kind == FuncKind::Static || f.locals.is_empty() {
        return 0;
    }
    let this = Local(0);
    let assigns_this = f
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .any(|i| i.dst() == Some(this));
    if assigns_this {
        return 0;
    }
    let mut by_header: BTreeMap<BlockId, Vec<BlockId>> = BTreeMap::new();
    for (from, to) in back_edges(f) {
        by_header.entry(to).or_default().push(from);
    }
    let mut loops: Vec<(usize, usize)> = by_header
        .into_iter()
        .filter_map(|(h, latches)| match latches[..] {
            // (A loop at the entry has nowhere to put its guard.)
            [l] if l != h && h.index() != 0 => Some((h.index(), l.index())),
            _ => None,
        })
        .collect();
    // Inner loops first: their guard and landing blocks then lie in the outer
    // loop's body, computed after them.
    loops.sort_by_key(|&(h, l)| natural_loop(&predecessors(f), h, l).len());
    let mut hoisted = 0;
    for (h, l) in loops {
        let body = natural_loop(&predecessors(f), h, l);
        hoisted += hoist_from(prog, writes, f, h, l, &body);
    }
    hoisted
}

/// Whether an instruction may be copied into the guard: it reads, computes or fails,
/// and does nothing else (no call, store, allocation, output or synchronization).
fn copyable(prog: &Program, inst: &Inst) -> bool {
    match inst {
        Inst::Const { .. }
        | Inst::Copy { .. }
        | Inst::Unary { .. }
        | Inst::Binary { .. }
        | Inst::Convert { .. }
        | Inst::ArrayLoad { .. }
        | Inst::ArrayLength { .. }
        | Inst::Math { .. } => true,
        Inst::GetField { field, .. } => !prog.field(*field).is_volatile,
        _ => false,
    }
}

/// Whether `d` dominates `u` in one iteration of the loop: every path from `h` to `u`
/// inside the body (not through `h` again) passes `d`.
fn dominates(f: &Function, body: &BTreeSet<usize>, h: usize, d: usize, u: usize) -> bool {
    if d == h || d == u {
        return true;
    }
    if u == h {
        return false;
    }
    let mut seen: HashSet<usize> = [h, d].into_iter().collect();
    let mut work = vec![h];
    while let Some(b) = work.pop() {
        for s in successors(&f.blocks[b].term) {
            let s = s.index();
            if s == u {
                return false;
            }
            if body.contains(&s) && seen.insert(s) {
                work.push(s);
            }
        }
    }
    true
}

/// A load to hoist: its block, position, destination, field and site.
struct Candidate {
    block: usize,
    at: usize,
    dst: Local,
    field: FieldRef,
    site: SiteId,
}

fn hoist_from(
    prog: &Program,
    writes: &FieldWrites,
    f: &mut Function,
    h: usize,
    l: usize,
    body: &BTreeSet<usize>,
) -> usize {
    if !matches!(f.blocks[l].term, Terminator::Jump(t) if t.index() == h) {
        return 0;
    }
    // The header is the loop's one exit test.
    let Terminator::Branch {
        cond,
        then_to,
        else_to,
    } = f.blocks[h].term
    else {
        return 0;
    };
    let (into_body, exit) = match (
        body.contains(&then_to.index()),
        body.contains(&else_to.index()),
    ) {
        (true, false) => (true, else_to),
        (false, true) => (false, then_to),
        _ => return 0,
    };
    let header = &f.blocks[h];
    if header.insts.len() > MAX_GUARD_TEST || !header.insts.iter().all(|i| copyable(prog, i)) {
        return 0;
    }
    // Nothing in the loop may change what the thread may read of a field: no
    // synchronization (own or in a callee), no transaction bound, no other exit;
    // and the fields it or a callee writes are not hoisted.
    let mut written: HashSet<FieldRef> = HashSet::new();
    for &b in body {
        let block = &f.blocks[b];
        let leaves = match block.term {
            Terminator::Return(_) | Terminator::Unreachable => true,
            ref t => b != h && successors(t).iter().any(|s| !body.contains(&s.index())),
        };
        if leaves {
            return 0;
        }
        for inst in &block.insts {
            let kills = match inst {
                Inst::Call { func, .. } => match &writes[func.index()] {
                    None => true,
                    Some(w) => {
                        written.extend(w);
                        false
                    }
                },
                Inst::Notify { .. } | Inst::SpecBegin { .. } | Inst::SpecEnd { .. } => true,
                Inst::PutField { field, .. } => {
                    written.insert(*field);
                    prog.field(*field).is_volatile
                }
                i => own_sync(prog, i) != Sync::None,
            };
            if kills {
                return 0;
            }
        }
    }
    let this = Local(0);
    let mut defs: BTreeMap<Local, usize> = BTreeMap::new();
    for &b in body {
        for inst in &f.blocks[b].insts {
            if let Some(d) = inst.dst() {
                *defs.entry(d).or_default() += 1;
            }
        }
    }
    let mut cands: Vec<Candidate> = Vec::new();
    for &b in body {
        if !dominates(f, body, h, b, l) {
            continue;
        }
        for (at, inst) in f.blocks[b].insts.iter().enumerate() {
            let Inst::GetField {
                dst,
                obj,
                field,
                site,
            } = *inst
            else {
                continue;
            };
            if obj != this
                || dst == this
                || prog.field(field).is_volatile
                || written.contains(&field)
                || defs.get(&dst) != Some(&1)
            {
                continue;
            }
            // Every use of `dst` in the loop must see this load's value of the same
            // iteration: later in its block, or in a block it dominates.
            let dominated = body.iter().all(|&u| {
                let block = &f.blocks[u];
                let used_before = |upto: usize| block.insts[..upto].iter().any(|i| reads(i, dst));
                if u == b {
                    !used_before(at + 1)
                } else if dominates(f, body, h, b, u) {
                    true
                } else {
                    !used_before(block.insts.len()) && block.term.operand() != Some(dst)
                }
            });
            if dominated {
                cands.push(Candidate {
                    block: b,
                    at,
                    dst,
                    field,
                    site,
                });
            }
        }
    }
    if cands.is_empty() {
        return 0;
    }
    // The landing block `P`, the guard `G`, and the rewrite of the loop.
    let mut landing = Vec::with_capacity(cands.len());
    let mut fresh = Vec::with_capacity(cands.len());
    for c in &cands {
        let t = fresh_local(f, c.dst);
        landing.push(Inst::GetField {
            dst: t,
            obj: this,
            field: c.field,
            site: c.site,
        });
        fresh.push((c.dst, t));
    }
    let p = BlockId(f.blocks.len() as u32);
    let g = BlockId(f.blocks.len() as u32 + 1);
    let (g_then, g_else) = if into_body { (p, exit) } else { (exit, p) };
    let guard = Block {
        insts: f.blocks[h].insts.clone(),
        term: Terminator::Branch {
            cond,
            then_to: g_then,
            else_to: g_else,
        },
    };
    for c in &cands {
        let t = fresh.iter().find(|(d, _)| *d == c.dst).unwrap().1;
        f.blocks[c.block].insts[c.at] = Inst::Copy { dst: c.dst, src: t };
    }
    for &b in body {
        let block = &mut f.blocks[b];
        for inst in &mut block.insts {
            inst.for_each_read_mut(|l| rename(l, &fresh));
        }
        if let Some(l) = block.term.operand_mut() {
            rename(l, &fresh);
        }
    }
    let preds = predecessors(f);
    for &q in &preds[h] {
        if body.contains(&q) {
            continue;
        }
        retarget(&mut f.blocks[q].term, BlockId(h as u32), g);
    }
    f.blocks.push(Block {
        insts: landing,
        term: Terminator::Jump(BlockId(h as u32)),
    });
    f.blocks.push(guard);
    cands.len()
}

fn retarget(t: &mut Terminator, from: BlockId, to: BlockId) {
    match t {
        Terminator::Jump(b) if *b == from => *b = to,
        Terminator::Branch {
            then_to, else_to, ..
        } => {
            for b in [then_to, else_to] {
                if *b == from {
                    *b = to;
                }
            }
        }
        _ => {}
    }
}

/// Whether `inst` reads `x`.
fn reads(inst: &Inst, x: Local) -> bool {
    let mut found = false;
    inst.for_each_read(|l| found |= l == x);
    found
}

/// `l`, renamed by `map` (a loaded local to the hoisted load's local).
fn rename(l: &mut Local, map: &[(Local, Local)]) {
    if let Some(&(_, t)) = map.iter().find(|(d, _)| d == l) {
        *l = t;
    }
}
