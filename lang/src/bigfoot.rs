//! STATICBF: BigFoot's static check placement over the IR (Rhodes, *Access
//! Classification for Race Detection Optimization*, UCSC 2019, ch. 3 — the PLDI 2017
//! paper with Flanagan and Freund: Fig. 3.7 with the R/W extension of §3.5, shadow
//! proxies of §3.4).
//!
//! [`place`] rewrites a program so that its plain heap accesses need no per-access
//! race check: it inserts [`Inst::Check`] instructions where deferred checks must
//! run, and a run under the `bigfoot` analysis feeds FastTrack's rules with those
//! checks instead of the accesses. Both tiers execute the placed program.
//!
//! # Facts (per program point, per function)
//! A *path* names a location through locals: `obj.f`, `C.s` (static), `arr[i]`.
//! Paths mention locals, so a fact about a path dies when one of its locals is
//! assigned (the thesis's freshness condition, §3.3: we check before the
//! reassignment instead of renaming; an access whose result overwrites its own
//! object or index local gets a fresh copy of it first, [`rename_self_accesses`]).
//! - *pending* (`acc(p,k)` of the thesis, forward, must): `p` was accessed with kind
//!   `k` (read < write), no check since, no release since. Meet: the paths pending on
//!   every incoming edge with the same kind.
//! - *checked* (`chk(p,k)`, forward): `p` was checked with kind `k` since the last
//!   release. Kept inside a block only (a sound under-approximation of the thesis's
//!   cross-block facts: it only costs redundant checks).
//! - *anticipated* (`ant(p,k)`, backward, must): every path from here accesses `p`
//!   with kind ≥ `k` before any acquire. Meet: intersection with the smaller kind.
//!
//! # Rules (Fig. 3.7; "checks" are emitted just before the instruction)
//! - acquire-like (monitor enter, join, volatile read; calls that may acquire): check
//!   every pending path (an acquire ends the covering range of earlier accesses).
//! - release-like (monitor exit, fork, volatile write; calls that may only release):
//!   check the pending paths not anticipated after it with a kind that covers them
//!   (the later access's check covers them; a release ends their legitimate range),
//!   then forget pending and checked facts.
//! - both (wait, barrier await, calls that may do both): check everything pending.
//! - an assignment to a local: check the pending paths that mention it.
//! - a plain access of `p` with kind `k`: nothing if `p` is checked with a kind ≥ `k`
//!   in this block, else `p` becomes pending with the larger of the two kinds (a
//!   write check covers reads; a read check is legitimate for both, so the emitted
//!   check has the largest pending kind, §3.5).
//! - a control-flow edge: check what is pending at its end but neither pending at the
//!   target on every incoming edge nor anticipated there (critical edges are split to
//!   give these checks a home); method exit: check everything pending.
//!
//! Calls are potential synchronization through kill sets ([`sync_summaries`]): a
//! callee that may (transitively) acquire ends anticipation and forces pending checks;
//! one that may only release kills pending and checked facts; one that does neither is
//! transparent, so checks are deferred across it (Fig. 3.1, `movePts`).
//!
//! # Loops
//! Every back edge to a loop test is rotated (the thesis rewrites `while (c) s` to
//! `if (c) do s while (c)`, §3.5): the latch jumps to a copy of the test block, so the
//! body is entered after at least one iteration through an edge where the body's own
//! accesses are anticipated. A loop-carried access then has no check inside the loop
//! and one check on the exit edge (Fig. 3.6b), provided no acquire intervenes.
//!
//! # Checks left to callers
//! [`place`] places functions callees first. A function that only calls enter and
//! that cannot synchronize leaves the checks of its parameters' fields that every
//! path through it makes to its callers ([`Export`]), where a call counts as those
//! accesses of the arguments' fields: a method called in a loop on the same object,
//! or several calls on one object, then need one check in the caller, not one per
//! call. [`place_in`] with [`Scope::Method`] keeps every check in its method, as
//! the thesis does.
//!
//! # Reused field loads
//! Before placement, a block's second load of a non-volatile `o.f` with nothing
//! between that may change what the thread may read there becomes a copy of the
//! first ([`reuse_field_loads`]), so a field read in every statement (`this.a[i]`,
//! `this.a[i + 1]`, …; `p.x`, `p.y` with `p` a field) names one object through one
//! local and its accesses coalesce.
//!
//! # Coalescing and shadow proxies (§3.4)
//! The paths checked at one point are coalesced: the fields of one object local with
//! one kind become one check. Per class, fields that appear in exactly the same
//! checks (same check instructions, same kinds) form one *shadow group*: every check
//! of one checks all, so the group needs a single shadow location and the proxy
//! relation is symmetric, which keeps the detector address precise (§3.4).
//!
//! Loop range checks ([`coalesce_loops`]) cover the element accesses `a[i + c]` of
//! synchronization-free loops with one exit test, counting up or down, those of
//! conditional blocks and of the blocks before a later exit test too (as *runs*:
//! ranges that the loop tracks in two locals and checks when their index jumps,
//! [`place_runs`]). Not done (see `docs/architecture.md`, "BigFoot"):
//! other induction-variable facts of §3.5 (any other array access in a loop is a
//! one-element check per iteration, which the runtime's footprints coalesce into
//! ranges, DYNAMICBF) and alias facts.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::ir::*;

mod hoist;

/// A location named through locals.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
enum Path {
    Field(Local, ClassId, u32),
    Static(StaticId),
    Elem(Local, Local),
}

impl Path {
    fn mentions(self, x: Local) -> bool {
        match self {
            Path::Field(o, _, _) => o == x,
            Path::Static(_) => false,
            Path::Elem(a, i) => a == x || i == x,
        }
    }
}

/// Kinds: `false` = read, `true` = write (read < write).
type Facts = BTreeMap<Path, bool>;

/// How an instruction synchronizes (anything unknown counts as both, which is always safe).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Sync {
    None,
    Acquire,
    Release,
    Both,
}

impl Sync {
    fn of(acq: bool, rel: bool) -> Sync {
        match (acq, rel) {
            (false, false) => Sync::None,
            (true, false) => Sync::Acquire,
            (false, true) => Sync::Release,
            (true, true) => Sync::Both,
        }
    }
    fn acquires(self) -> bool {
        matches!(self, Sync::Acquire | Sync::Both)
    }
    fn releases(self) -> bool {
        matches!(self, Sync::Release | Sync::Both)
    }
}

/// What placement did, for statistics and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// Plain heap accesses in the program text.
    pub accesses: usize,
    /// Check instructions inserted.
    pub checks: usize,
    /// Paths those checks cover (before coalescing into field groups).
    pub checked_paths: usize,
    /// Loop tests copied to rotate loops.
    pub rotated_loops: usize,
    /// Accesses in loops covered by a range check after the loop.
    pub loop_covered: usize,
    /// Range checks placed after loops.
    pub loop_ranges: usize,
    /// Field loads replaced by a copy of an earlier load's value ([`reuse_field_loads`]).
    pub reused_loads: usize,
    /// Loads of `this`'s fields read once before their loop instead of in every
    /// iteration ([`hoist::hoist_loop_loads`]).
    pub hoisted_loads: usize,
    /// Field paths of parameters whose checks functions leave to their callers
    /// ([`Export`]).
    pub exported_paths: usize,
}

/// Per function: may it (transitively) acquire, may it release (the kill sets of
/// Fig. 3.7's CALL rule; a `synchronized` method does both).
pub fn sync_summaries(prog: &Program) -> Vec<(bool, bool)> {
    let s: Vec<(bool, bool)> = prog
        .funcs
        .iter()
        .map(|f| {
            let mut acq = f.is_synchronized;
            let mut rel = f.is_synchronized;
            for b in &f.blocks {
                for i in &b.insts {
                    match own_sync(prog, i) {
                        Sync::None => {}
                        k => {
                            acq |= k.acquires();
                            rel |= k.releases();
                        }
                    }
                }
            }
            (acq, rel)
        })
        .collect();
    through_calls(prog, s, |a, b| (a.0 | b.0, a.1 | b.1))
}

/// Per-function facts `own` (what each function's own instructions do) joined with
/// those of every function it calls, transitively: a fixed point over the call graph
/// (explicit: CapJava has no virtual dispatch).
fn through_calls<T: Clone + PartialEq>(
    prog: &Program,
    mut s: Vec<T>,
    join: impl Fn(&T, &T) -> T,
) -> Vec<T> {
    let mut changed = true;
    while changed {
        changed = false;
        for (fi, f) in prog.funcs.iter().enumerate() {
            let mut cur = s[fi].clone();
            for i in f.blocks.iter().flat_map(|b| &b.insts) {
                if let Inst::Call { func, .. } = i {
                    cur = join(&cur, &s[func.index()]);
                }
            }
            if cur != s[fi] {
                s[fi] = cur;
                changed = true;
            }
        }
    }
    s
}

/// The synchronization an instruction itself performs (calls excluded).
fn own_sync(prog: &Program, inst: &Inst) -> Sync {
    match inst {
        Inst::MonitorEnter { .. } | Inst::Join { .. } => Sync::Acquire,
        Inst::MonitorExit { .. } | Inst::Fork { .. } => Sync::Release,
        Inst::Wait { .. } | Inst::BarrierAwait { .. } => Sync::Both,
        Inst::GetField { field, .. } if prog.field(*field).is_volatile => Sync::Acquire,
        Inst::PutField { field, .. } if prog.field(*field).is_volatile => Sync::Release,
        Inst::GetStatic { field, .. } if prog.static_field(*field).is_volatile => Sync::Acquire,
        Inst::PutStatic { field, .. } if prog.static_field(*field).is_volatile => Sync::Release,
        _ => Sync::None,
    }
}

struct Ctx<'p> {
    prog: &'p Program,
    kills: &'p [(bool, bool)],
    /// Per function, the checks its callers make for it ([`Export`]; empty for a
    /// function not placed yet).
    exports: &'p [Vec<Export>],
    /// Accesses of this function that a loop's range check covers
    /// ([`coalesce_loops`]): (block, instruction).
    covered: HashSet<(usize, usize)>,
    /// This function's exported paths and kinds: its callers check them, so its own
    /// accesses of them with a kind up to that need no check here.
    exported: HashMap<Path, bool>,
}

/// A check a function leaves to its callers: field `class.idx` of parameter `param`,
/// accessed with kind ≥ `write` on every path through the function. A call then
/// counts as that access of the argument's field, at the call ([`Ctx::accesses_at`]),
/// and the caller's placement checks it with its own accesses: deferred past the
/// call, merged with the caller's accesses of the same object and with other calls'
/// (raytracer's `Vec.dot(v, v)` three times on one `v` in `Sphere.intersect` is one
/// check there, none in `dot`). `site` is the access the check reports.
///
/// Only a function that every run enters through a call can export ([`exporters`]):
/// not `main` or a fork target, no recursion, no synchronization and no
/// `deterministic` or `atomic` bound in it or its callees. Then the whole call is in
/// the caller's synchronization-free span at the call, so a check there covers the
/// callee's accesses as one at the callee's exit would, and is legitimate because
/// every path through the callee made the access (a run that stops inside the callee
/// at a runtime error makes neither check, as with checks deferred within a method).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Export {
    pub param: u32,
    pub class: ClassId,
    pub idx: u32,
    pub write: bool,
    pub site: SiteId,
}

impl Ctx<'_> {
    fn sync(&self, inst: &Inst) -> Sync {
        match inst {
            Inst::Call { func, .. } => {
                let (a, r) = self.kills[func.index()];
                Sync::of(a, r)
            }
            _ => own_sync(self.prog, inst),
        }
    }

    /// The accesses instruction `i` of block `b` performs that placement must check,
    /// with their kinds: a plain access's own (none when a loop's range check covers
    /// it), or a call's exported ones ([`Export`]); none of those this function
    /// exports itself.
    fn accesses_at(&self, b: usize, i: usize, inst: &Inst, mut each: impl FnMut(Path, bool)) {
        let mut keep = |p: Path, k: bool| {
            // An exported write covers reads and writes, an exported read reads.
            let covered = self.exported.get(&p).is_some_and(|&w| w || !k);
            if !covered {
                each(p, k);
            }
        };
        if let Inst::Call {
            func, args, dst, ..
        } = inst
        {
            for e in &self.exports[func.index()] {
                let obj = args[e.param as usize];
                if *dst != Some(obj) {
                    keep(Path::Field(obj, e.class, e.idx), e.write);
                }
            }
            return;
        }
        if self.covered.contains(&(b, i)) {
            return;
        }
        if let Some((p, k)) = self.access(inst) {
            keep(p, k);
        }
    }

    /// The plain access an instruction performs: its path and kind.
    fn access(&self, inst: &Inst) -> Option<(Path, bool)> {
        let prog = self.prog;
        match inst {
            Inst::GetField { obj, field, .. } if !prog.field(*field).is_volatile => {
                Some((Path::Field(*obj, field.class, field.index), false))
            }
            Inst::PutField { obj, field, .. } if !prog.field(*field).is_volatile => {
                Some((Path::Field(*obj, field.class, field.index), true))
            }
            Inst::GetStatic { field, .. } if !prog.static_field(*field).is_volatile => {
                Some((Path::Static(*field), false))
            }
            Inst::PutStatic { field, .. } if !prog.static_field(*field).is_volatile => {
                Some((Path::Static(*field), true))
            }
            Inst::ArrayLoad { arr, index, .. } => Some((Path::Elem(*arr, *index), false)),
            Inst::ArrayStore { arr, index, .. } => Some((Path::Elem(*arr, *index), true)),
            _ => None,
        }
    }
}

fn successors(t: &Terminator) -> Vec<BlockId> {
    match t {
        Terminator::Jump(b) => vec![*b],
        Terminator::Branch {
            then_to, else_to, ..
        } => {
            if then_to == else_to {
                vec![*then_to]
            } else {
                vec![*then_to, *else_to]
            }
        }
        Terminator::Return(_) | Terminator::Unreachable => Vec::new(),
    }
}

/// Where placement may put the check of an access.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// In the access's own method (the thesis's placement).
    Method,
    /// Also in the callers of a method that leaves checks to them ([`Export`]).
    Program,
}

/// Place BigFoot checks in every function of `prog` ([`Scope::Program`]); returns
/// the placed program and what placement did.
pub fn place(prog: &Program) -> (Program, Placement) {
    place_in(prog, Scope::Program)
}

/// [`place`] with the given scope.
pub fn place_in(prog: &Program, scope: Scope) -> (Program, Placement) {
    let kills = sync_summaries(prog);
    let writes = field_writes(prog, &kills);
    let calls = CallOrder::of(prog);
    let can_export = match scope {
        Scope::Method => vec![false; prog.funcs.len()],
        Scope::Program => exporters(prog, &kills, &calls.recursive),
    };
    let mut out = prog.clone();
    let mut stats = Placement::default();
    let mut raw: Vec<Vec<RawCheck>> = vec![Vec::new(); prog.funcs.len()];
    let mut exports: Vec<Vec<Export>> = vec![Vec::new(); prog.funcs.len()];
    let mut gone = Vec::new();
    // Callees first, so that a call's exported checks are known where it is placed.
    for &fi in &calls.order {
        let f = &mut out.funcs[fi];
        let before = gone.len();
        reuse_field_loads(prog, &writes, f, &mut gone);
        stats.reused_loads += gone.len() - before;
        stats.hoisted_loads += hoist::hoist_loop_loads(prog, &writes, f);
        rename_self_accesses(f);
        let mut cx = Ctx {
            prog,
            kills: &kills,
            exports: &exports,
            covered: HashSet::new(),
            exported: HashMap::new(),
        };
        cx.covered = coalesce_loops(&cx, f, &mut stats);
        stats.rotated_loops += rotate_loops(f);
        let own = if can_export[fi] {
            exports_of(&cx, f)
        } else {
            Vec::new()
        };
        cx.exported = own
            .iter()
            .map(|e| (Path::Field(Local(e.param), e.class, e.idx), e.write))
            .collect();
        raw[fi] = place_function(&cx, f, &mut stats);
        stats.exported_paths += own.len();
        exports[fi] = own;
    }
    // A reused load's site accesses nothing any more.
    for site in gone {
        if let Some(p) = out.capsule_proven.get_mut(site.0 as usize) {
            *p = false;
        }
    }
    let groups = shadow_groups(prog, &raw);
    for (f, checks) in out.funcs.iter_mut().zip(raw) {
        emit(f, checks, &groups, &exports, &mut stats);
    }
    (out, stats)
}

/// Per function: whether it may leave checks to its callers ([`Export`]): it is not
/// a thread's entry (`main`, a fork target), not recursive, and neither it nor a
/// function it calls synchronizes, waits, notifies or opens a `deterministic` or
/// `atomic` bound.
fn exporters(prog: &Program, kills: &[(bool, bool)], recursive: &[bool]) -> Vec<bool> {
    let own_bound: Vec<bool> = prog
        .funcs
        .iter()
        .map(|f| {
            f.is_deterministic
                || f.is_atomic
                || f.blocks.iter().flat_map(|b| &b.insts).any(|i| {
                    matches!(
                        i,
                        Inst::SpecBegin { .. } | Inst::SpecEnd { .. } | Inst::Notify { .. }
                    )
                })
        })
        .collect();
    let bound = through_calls(prog, own_bound, |a, b| *a | *b);
    let entries = prog.thread_entries();
    (0..prog.funcs.len())
        .map(|fi| kills[fi] == (false, false) && !bound[fi] && !entries[fi] && !recursive[fi])
        .collect()
}

/// Per function, the functions it calls.
fn call_graph(prog: &Program) -> Vec<Vec<usize>> {
    prog.funcs
        .iter()
        .map(|f| {
            let mut cs: Vec<usize> = f
                .blocks
                .iter()
                .flat_map(|b| &b.insts)
                .filter_map(|i| match i {
                    Inst::Call { func, .. } => Some(func.index()),
                    _ => None,
                })
                .collect();
            cs.sort_unstable();
            cs.dedup();
            cs
        })
        .collect()
}

/// The call graph's strongly connected components, found once (Tarjan's algorithm,
/// iterative).
struct CallOrder {
    /// Every function, each after the functions it calls except those that
    /// (transitively) call it back: the components in the order they complete.
    order: Vec<usize>,
    /// Per function, whether it (transitively) calls itself.
    recursive: Vec<bool>,
}

impl CallOrder {
    fn of(prog: &Program) -> CallOrder {
        let callees = call_graph(prog);
        let n = callees.len();
        const NONE: usize = usize::MAX;
        let (mut index, mut low) = (vec![NONE; n], vec![0; n]);
        let (mut on_stack, mut stack) = (vec![false; n], Vec::new());
        let mut out = CallOrder {
            order: Vec::with_capacity(n),
            recursive: vec![false; n],
        };
        let mut next = 0;
        for root in 0..n {
            if index[root] != NONE {
                continue;
            }
            let mut dfs = vec![(root, 0)];
            (index[root], low[root]) = (next, next);
            next += 1;
            stack.push(root);
            on_stack[root] = true;
            while let Some(&mut (f, ref mut at)) = dfs.last_mut() {
                if let Some(&g) = callees[f].get(*at) {
                    *at += 1;
                    if index[g] == NONE {
                        (index[g], low[g]) = (next, next);
                        next += 1;
                        stack.push(g);
                        on_stack[g] = true;
                        dfs.push((g, 0));
                    } else if on_stack[g] {
                        low[f] = low[f].min(index[g]);
                    }
                    continue;
                }
                dfs.pop();
                if let Some(&(parent, _)) = dfs.last() {
                    low[parent] = low[parent].min(low[f]);
                }
                if low[f] == index[f] {
                    let from = stack.iter().rposition(|&g| g == f).unwrap_or(0);
                    let component: Vec<usize> = stack.drain(from..).collect();
                    let cycle = component.len() > 1 || callees[f].contains(&f);
                    for &g in &component {
                        on_stack[g] = false;
                        out.recursive[g] = cycle;
                    }
                    out.order.extend(component);
                }
            }
        }
        out
    }
}

/// Per function, what a call of it may change of what the thread may read of a
/// field, for [`reuse_field_loads`] and the hoisting of loads: `None` when it may
/// (transitively) synchronize (acquire or release: `kills`), else the fields it
/// (transitively) writes.
type FieldWrites = Vec<Option<HashSet<FieldRef>>>;

fn field_writes(prog: &Program, kills: &[(bool, bool)]) -> FieldWrites {
    let own: Vec<HashSet<FieldRef>> = prog
        .funcs
        .iter()
        .map(|f| {
            f.blocks
                .iter()
                .flat_map(|b| &b.insts)
                .filter_map(|i| match i {
                    Inst::PutField { field, .. } => Some(*field),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let writes = through_calls(prog, own, |a, b| a.union(b).copied().collect());
    kills
        .iter()
        .zip(writes)
        .map(|(&(acq, rel), w)| (!acq && !rel).then_some(w))
        .collect()
}

/// Redundant field loads within a block: `y = o.f` after `x = o.f` becomes `y = x`
/// when nothing between can have changed what the thread may read there: no
/// assignment of `o` or `x`, no store to field `f` of any object, no synchronization
/// (an acquire, a release, or a call that may do either), no call that may write
/// `f` ([`field_writes`]), no `deterministic` or `atomic` bound. Volatile fields are
/// never reused. A call's arguments that copy another local become that local, as
/// the object operands of accesses do, so that the checks a callee leaves to its
/// caller ([`Export`]) name the object as the caller's own accesses do. The sites
/// of the loads replaced go to `gone`.
///
/// A Java compiler may do the same (the second read has no happens-before edge the
/// first lacks, so it may see the same write), and it matters to placement: a field
/// read again in every statement (`text1[i1]`, `text1[i1 + 1]`, … with `text1` a
/// field, crypt's IDEA loop; `p.x`, `p.y`, `p.z` with `p` a field, raytracer's
/// `Ray.point`) names one object through one local, so its accesses coalesce into
/// one range or one field group instead of one per load. A run of the placed program
/// simply makes fewer reads of `o.f`; the races it can have are the same: the removed
/// read is in the epoch of the read it reuses, so a write races with one iff it races
/// with the other, and `bigfoot` and every pass beside it see the same run.
fn reuse_field_loads(
    prog: &Program,
    writes: &FieldWrites,
    f: &mut Function,
    gone: &mut Vec<SiteId>,
) {
    for b in &mut f.blocks {
        // (object local, field) -> the local that holds the value read.
        let mut avail: HashMap<(Local, FieldRef), Local> = HashMap::new();
        // A local assigned by a copy (a reused load's, or the program's own) -> the
        // local it copies, while neither is assigned again: later accesses name the
        // object through the first local.
        let mut same: HashMap<Local, Local> = HashMap::new();
        for inst in &mut b.insts {
            if let Some(o) = object_operand(inst)
                && let Some(&first) = same.get(o)
            {
                *o = first;
            }
            if let Inst::Call { args, .. } = inst {
                for a in args.iter_mut() {
                    if let Some(&first) = same.get(a) {
                        *a = first;
                    }
                }
            }
            if let Inst::GetField {
                dst,
                obj,
                field,
                site,
            } = *inst
                && !prog.field(field).is_volatile
                && let Some(&held) = avail.get(&(obj, field))
            {
                *inst = Inst::Copy { dst, src: held };
                gone.push(site);
            }
            let kills_all = match &*inst {
                Inst::Call { func, .. } => match &writes[func.index()] {
                    None => true,
                    Some(w) => {
                        avail.retain(|&(_, g), _| !w.contains(&g));
                        false
                    }
                },
                Inst::PutField { field, .. } => prog.field(*field).is_volatile,
                Inst::GetField { field, .. } => prog.field(*field).is_volatile,
                // (And at a transaction's bounds, so that a chain with SingleTrack or
                // `atomicity` sees the reads on the side where the program makes them.)
                i => {
                    own_sync(prog, i) != Sync::None
                        || matches!(
                            i,
                            Inst::Notify { .. } | Inst::SpecBegin { .. } | Inst::SpecEnd { .. }
                        )
                }
            };
            if kills_all {
                avail.clear();
            }
            if let Inst::PutField { field, .. } = *inst {
                avail.retain(|&(_, g), _| g != field);
            }
            if let Some(d) = inst.dst() {
                avail.retain(|&(o, _), &mut h| o != d && h != d);
                same.retain(|&c, &mut s| c != d && s != d);
            }
            match *inst {
                Inst::GetField {
                    dst, obj, field, ..
                } if dst != obj && !prog.field(field).is_volatile => {
                    avail.insert((obj, field), dst);
                }
                Inst::Copy { dst, src } if dst != src => {
                    same.insert(dst, same.get(&src).copied().unwrap_or(src));
                }
                _ => {}
            }
        }
    }
}

/// The object (or array) local a heap access or array length names.
fn object_operand(inst: &mut Inst) -> Option<&mut Local> {
    match inst {
        Inst::GetField { obj, .. } | Inst::PutField { obj, .. } => Some(obj),
        Inst::ArrayLoad { arr, .. }
        | Inst::ArrayStore { arr, .. }
        | Inst::ArrayLength { arr, .. } => Some(arr),
        _ => None,
    }
}

/// `x = x.f` / `x = x[i]` / `i = a[i]`: read the object (index) through a fresh copy,
/// so the access's path survives the assignment of its result.
fn rename_self_accesses(f: &mut Function) {
    for bi in 0..f.blocks.len() {
        let insts = std::mem::take(&mut f.blocks[bi].insts);
        let mut out = Vec::with_capacity(insts.len());
        for mut inst in insts {
            match &mut inst {
                Inst::GetField { dst, obj, .. } if dst == obj => {
                    let fresh = fresh_local(f, *obj);
                    out.push(Inst::Copy {
                        dst: fresh,
                        src: *obj,
                    });
                    *obj = fresh;
                }
                Inst::ArrayLoad {
                    dst, arr, index, ..
                } if dst == arr || dst == index => {
                    for l in [arr, index] {
                        if *l == *dst {
                            let fresh = fresh_local(f, *l);
                            out.push(Inst::Copy {
                                dst: fresh,
                                src: *l,
                            });
                            *l = fresh;
                        }
                    }
                }
                _ => {}
            }
            out.push(inst);
        }
        f.blocks[bi].insts = out;
    }
}

fn fresh_local(f: &mut Function, like: Local) -> Local {
    let ty = f.locals[like.index()].ty.clone();
    f.locals.push(LocalDecl { name: None, ty });
    Local(f.locals.len() as u32 - 1)
}

/// Loop tests that may be copied (larger ones are left alone: correct, more checks).
const MAX_ROTATED_TEST: usize = 16;

/// Rotate every loop whose back edge is a plain jump to a conditional test block:
/// the latch jumps to a copy of the test. Returns how many tests were copied.
fn rotate_loops(f: &mut Function) -> usize {
    let back = back_edges(f);
    let mut copies: HashMap<BlockId, BlockId> = HashMap::new();
    let mut n = 0;
    for (from, to) in back {
        let header = &f.blocks[to.index()];
        let is_test = matches!(header.term, Terminator::Branch { .. });
        let plain_jump = matches!(f.blocks[from.index()].term, Terminator::Jump(t) if t == to);
        if !is_test || !plain_jump || header.insts.len() > MAX_ROTATED_TEST || from == to {
            continue;
        }
        let copy = *copies.entry(to).or_insert_with(|| {
            n += 1;
            f.blocks.push(f.blocks[to.index()].clone());
            BlockId(f.blocks.len() as u32 - 1)
        });
        f.blocks[from.index()].term = Terminator::Jump(copy);
    }
    n
}

/// Retreating edges of a depth-first search from the entry (the back edges of the
/// lowering's structured loops).
fn back_edges(f: &Function) -> Vec<(BlockId, BlockId)> {
    let n = f.blocks.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on stack, 2 done
    let mut out = Vec::new();
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    state[0] = 1;
    while let Some(&mut (b, ref mut next)) = stack.last_mut() {
        let succ = successors(&f.blocks[b].term);
        if *next < succ.len() {
            let s = succ[*next].index();
            *next += 1;
            match state[s] {
                0 => {
                    state[s] = 1;
                    stack.push((s, 0));
                }
                1 => out.push((BlockId(b as u32), BlockId(s as u32))),
                _ => {}
            }
        } else {
            state[b] = 2;
            stack.pop();
        }
    }
    out
}

/// A check to insert: before instruction `at` of `block` (`at == insts.len()`: at the
/// end of the block), or on the edge `block → to` (split).
#[derive(Clone, Debug)]
struct RawCheck {
    block: usize,
    at: usize,
    edge_to: Option<BlockId>,
    paths: Vec<(Path, bool)>,
    site: SiteId,
}

/// Whether `ant` discharges a pending `(p, k)`: a later access of kind ≥ `k`.
fn discharged(ant: &Facts, p: &Path, k: bool) -> bool {
    ant.get(p).is_some_and(|a| *a >= k)
}

/// Must-meet of pending facts: present on every side with the same kind.
fn meet_same(a: &Facts, b: &Facts) -> Facts {
    a.iter()
        .filter(|(p, k)| b.get(p) == Some(k))
        .map(|(p, k)| (*p, *k))
        .collect()
}

/// Must-meet of anticipated facts: present on every side, the smaller kind.
fn meet_min(a: &Facts, b: &Facts) -> Facts {
    a.iter()
        .filter_map(|(p, k)| b.get(p).map(|k2| (*p, *k && *k2)))
        .collect()
}

fn remove_mentions(f: &mut Facts, x: Local) {
    f.retain(|p, _| !p.mentions(x));
}

/// The site a check reports: the first access of its paths in the block, else `fallback`.
fn place_function(cx: &Ctx<'_>, f: &Function, stats: &mut Placement) -> Vec<RawCheck> {
    let n = f.blocks.len();
    let succs: Vec<Vec<BlockId>> = f.blocks.iter().map(|b| successors(&b.term)).collect();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (b, ss) in succs.iter().enumerate() {
        for s in ss {
            preds[s.index()].push(b);
        }
    }
    let order = reverse_postorder(&succs);
    let reachable: BTreeSet<usize> = order.iter().copied().collect();
    let ant_in = anticipated(cx, f, &succs, &order);

    // Forward: pending facts at each block entry and exit.
    let mut pend_in: Vec<Option<Facts>> = vec![None; n];
    let mut pend_out: Vec<Option<Facts>> = vec![None; n];
    let mut changed = true;
    while changed {
        changed = false;
        for &b in &order {
            let inn = if b == 0 {
                Facts::new()
            } else {
                let mut acc: Option<Facts> = None;
                for &p in &preds[b] {
                    if let Some(o) = &pend_out[p] {
                        acc = Some(match acc {
                            None => o.clone(),
                            Some(a) => meet_same(&a, o),
                        });
                    }
                }
                acc.unwrap_or_default()
            };
            let (out, _) = forward_block(cx, f, b, &inn, &succs, &ant_in, None);
            if pend_in[b].as_ref() != Some(&inn) || pend_out[b].as_ref() != Some(&out) {
                pend_in[b] = Some(inn);
                pend_out[b] = Some(out);
                changed = true;
            }
        }
    }

    // Emission: the checks inside each block, then on its outgoing edges.
    let mut checks = Vec::new();
    for &b in &order {
        let inn = pend_in[b].clone().unwrap_or_default();
        let (out, inner) = forward_block(cx, f, b, &inn, &succs, &ant_in, Some(stats));
        checks.extend(inner);
        let block = &f.blocks[b];
        let fallback = block_site(block).unwrap_or(f.site);
        if succs[b].is_empty() {
            // Method exit: everything pending.
            if !out.is_empty() {
                checks.push(RawCheck {
                    block: b,
                    at: block.insts.len(),
                    edge_to: None,
                    paths: out.into_iter().collect(),
                    site: fallback,
                });
            }
            continue;
        }
        for s in &succs[b] {
            if !reachable.contains(&s.index()) {
                continue;
            }
            let target_in = pend_in[s.index()].clone().unwrap_or_default();
            let target_ant = ant_in[s.index()].clone().unwrap_or_default();
            let paths: Vec<(Path, bool)> = out
                .iter()
                .filter(|(p, k)| target_in.get(p) != Some(k) && !discharged(&target_ant, p, **k))
                .map(|(p, k)| (*p, *k))
                .collect();
            if paths.is_empty() {
                continue;
            }
            let edge_to = (succs[b].len() > 1).then_some(*s);
            checks.push(RawCheck {
                block: b,
                at: block.insts.len(),
                edge_to,
                paths,
                site: fallback,
            });
        }
    }
    checks
}

/// Backward: the anticipated facts at each block entry (None: unreachable).
fn anticipated(
    cx: &Ctx<'_>,
    f: &Function,
    succs: &[Vec<BlockId>],
    order: &[usize],
) -> Vec<Option<Facts>> {
    let mut ant_in: Vec<Option<Facts>> = vec![None; f.blocks.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().rev() {
            let mut a = ant_out(&succs[b], &ant_in, &f.blocks[b].term);
            for (i, inst) in f.blocks[b].insts.iter().enumerate().rev() {
                ant_step(cx, b, i, inst, &mut a);
            }
            if ant_in[b].as_ref() != Some(&a) {
                ant_in[b] = Some(a);
                changed = true;
            }
        }
    }
    ant_in
}

/// The checks `f` (placed by `cx`, which exports nothing of it yet) leaves to its
/// callers ([`Export`]): the field paths of parameters that it never assigns and that
/// every path through it accesses, anticipated at its entry.
fn exports_of(cx: &Ctx<'_>, f: &Function) -> Vec<Export> {
    debug_assert!(cx.exported.is_empty());
    let assigned: HashSet<Local> = f
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(Inst::dst)
        .collect();
    let succs: Vec<Vec<BlockId>> = f.blocks.iter().map(|b| successors(&b.term)).collect();
    let order = reverse_postorder(&succs);
    let Some(at_entry) = anticipated(cx, f, &succs, &order).swap_remove(0) else {
        return Vec::new();
    };
    let sites = path_sites(cx.exports, f);
    at_entry
        .into_iter()
        .filter_map(|(p, write)| match p {
            Path::Field(o, class, idx) if o.0 < f.num_params && !assigned.contains(&o) => {
                Some(Export {
                    param: o.0,
                    class,
                    idx,
                    write,
                    site: sites.get(&p).copied().unwrap_or(f.site),
                })
            }
            _ => None,
        })
        .collect()
}

/// The site of each path's first access in `f`: its first access instruction's, or
/// the exported access's of the first call that makes it.
fn path_sites(exports: &[Vec<Export>], f: &Function) -> HashMap<Path, SiteId> {
    let mut sites: HashMap<Path, SiteId> = HashMap::new();
    for i in f.blocks.iter().flat_map(|b| &b.insts) {
        if let Inst::Call { func, args, .. } = i {
            for e in &exports[func.index()] {
                let p = Path::Field(args[e.param as usize], e.class, e.idx);
                sites.entry(p).or_insert(e.site);
            }
        } else if let Some((p, site)) = raw_path(i) {
            sites.entry(p).or_insert(site);
        }
    }
    sites
}

fn block_site(b: &Block) -> Option<SiteId> {
    b.insts.iter().rev().find_map(|i| match i {
        Inst::GetField { site, .. }
        | Inst::PutField { site, .. }
        | Inst::GetStatic { site, .. }
        | Inst::PutStatic { site, .. }
        | Inst::ArrayLoad { site, .. }
        | Inst::ArrayStore { site, .. } => Some(*site),
        _ => None,
    })
}

fn reverse_postorder(succs: &[Vec<BlockId>]) -> Vec<usize> {
    let n = succs.len();
    let mut seen = vec![false; n];
    let mut post = Vec::with_capacity(n);
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    seen[0] = true;
    while let Some(&mut (b, ref mut next)) = stack.last_mut() {
        if *next < succs[b].len() {
            let s = succs[b][*next].index();
            *next += 1;
            if !seen[s] {
                seen[s] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(b);
            stack.pop();
        }
    }
    post.reverse();
    post
}

/// Anticipated facts at the end of a block: the meet over its successors' entries
/// (a return anticipates nothing).
fn ant_out(succs: &[BlockId], ant_in: &[Option<Facts>], term: &Terminator) -> Facts {
    if matches!(term, Terminator::Return(_) | Terminator::Unreachable) {
        return Facts::new();
    }
    let mut acc: Option<Facts> = None;
    for s in succs {
        // An uncomputed successor is top: it constrains nothing yet.
        if let Some(a) = &ant_in[s.index()] {
            acc = Some(match acc {
                None => a.clone(),
                Some(x) => meet_min(&x, a),
            });
        }
    }
    acc.unwrap_or_default()
}

/// One instruction, backward: anticipated before it from anticipated after it.
fn ant_step(cx: &Ctx<'_>, b: usize, i: usize, inst: &Inst, a: &mut Facts) {
    let sync = cx.sync(inst);
    if sync.acquires() {
        a.clear();
        return;
    }
    if let Some(x) = inst.dst() {
        remove_mentions(a, x);
    }
    cx.accesses_at(b, i, inst, |p, k| {
        let e = a.entry(p).or_insert(k);
        *e |= k;
    });
}

/// One block, forward, from the pending facts at its entry: the pending facts at its
/// end and the checks inside it. With `stats`, count accesses and redundant ones.
fn forward_block(
    cx: &Ctx<'_>,
    f: &Function,
    b: usize,
    inn: &Facts,
    succs: &[Vec<BlockId>],
    ant_in: &[Option<Facts>],
    mut stats: Option<&mut Placement>,
) -> (Facts, Vec<RawCheck>) {
    let block = &f.blocks[b];
    // Anticipated after each instruction, from the block's end backward.
    let mut after: Vec<Facts> = vec![Facts::new(); block.insts.len()];
    let mut a = ant_out(&succs[b], ant_in, &block.term);
    for (i, inst) in block.insts.iter().enumerate().rev() {
        after[i] = a.clone();
        ant_step(cx, b, i, inst, &mut a);
    }
    let mut pending = inn.clone();
    let mut checked = Facts::new();
    // This block's own accesses since the last kill: only they become checked facts,
    // so the block's result is monotone in its entry facts (the fixpoint terminates).
    let mut local = Facts::new();
    let mut out = Vec::new();
    for (i, inst) in block.insts.iter().enumerate() {
        let sync = cx.sync(inst);
        let dst = inst.dst();
        let mut here: Vec<(Path, bool)> = Vec::new();
        match sync {
            Sync::None => {}
            Sync::Acquire | Sync::Both => here.extend(pending.iter().map(|(p, k)| (*p, *k))),
            Sync::Release => {
                // Anticipation across the release, for paths that keep their meaning.
                let mut ant = after[i].clone();
                if let Some(x) = dst {
                    remove_mentions(&mut ant, x);
                }
                here.extend(
                    pending
                        .iter()
                        .filter(|(p, k)| !discharged(&ant, p, **k))
                        .map(|(p, k)| (*p, *k)),
                );
            }
        }
        if let Some(x) = dst {
            for (p, k) in &pending {
                if p.mentions(x) && !here.iter().any(|(q, _)| q == p) {
                    here.push((*p, *k));
                }
            }
        }
        for (p, _) in &here {
            pending.remove(p);
            if let Some(k) = local.get(p) {
                let e = checked.entry(*p).or_insert(*k);
                *e |= *k;
            }
        }
        if !here.is_empty() {
            out.push(RawCheck {
                block: b,
                at: i,
                edge_to: None,
                site: inst.site().unwrap_or(f.site),
                paths: here,
            });
        }
        match sync {
            Sync::None => {}
            Sync::Acquire => {
                pending.clear();
                local.clear();
            }
            Sync::Release | Sync::Both => {
                pending.clear();
                checked.clear();
                local.clear();
            }
        }
        if let Some(x) = dst {
            remove_mentions(&mut pending, x);
            remove_mentions(&mut checked, x);
            remove_mentions(&mut local, x);
        }
        if let Some(s) = stats.as_deref_mut()
            && cx.access(inst).is_some()
        {
            s.accesses += 1;
        }
        cx.accesses_at(b, i, inst, |p, k| {
            if checked.get(&p).is_some_and(|c| *c >= k) {
                return;
            }
            let e = pending.entry(p).or_insert(k);
            *e |= k;
            let e = local.entry(p).or_insert(k);
            *e |= k;
        });
    }
    (pending, out)
}

/// Where a field is checked: (function, check, object local, kind).
type Appearance = (usize, usize, u32, bool);

/// Per class, each field's shadow group: fields that appear in exactly the same
/// coalesced checks with the same kinds share one group (symmetric proxies, §3.4).
/// Returns, per class, the representative slot of each field.
fn shadow_groups(prog: &Program, raw: &[Vec<RawCheck>]) -> Vec<Vec<u32>> {
    // signature[class][field] = the (function, check, object local, kind) it appears in.
    let mut sig: Vec<Vec<Vec<Appearance>>> = prog
        .classes
        .iter()
        .map(|c| vec![Vec::new(); c.fields.len()])
        .collect();
    for (fi, checks) in raw.iter().enumerate() {
        for (ci, c) in checks.iter().enumerate() {
            for (p, k) in &c.paths {
                if let Path::Field(o, class, idx) = p {
                    sig[class.index()][*idx as usize].push((fi, ci, o.0, *k));
                }
            }
        }
    }
    sig.into_iter()
        .map(|fields| {
            let mut rep: Vec<u32> = (0..fields.len() as u32).collect();
            let mut first: HashMap<&Vec<Appearance>, u32> = HashMap::new();
            for (i, s) in fields.iter().enumerate() {
                if s.is_empty() || i >= 64 {
                    continue;
                }
                let r = *first.entry(s).or_insert(i as u32);
                rep[i] = r;
            }
            rep
        })
        .collect()
}

/// Insert the checks of one function (splitting edges as needed), coalesced.
fn emit(
    f: &mut Function,
    checks: Vec<RawCheck>,
    groups: &[Vec<u32>],
    exports: &[Vec<Export>],
    stats: &mut Placement,
) {
    // Each path's check reports the site of its first access (so warnings on
    // different locations have different sites and are not folded together).
    let sites = path_sites(exports, f);
    // Edge checks get a block of their own on the edge.
    let mut inside: BTreeMap<(usize, usize), Vec<RawCheck>> = BTreeMap::new();
    for c in checks {
        match c.edge_to {
            None => inside.entry((c.block, c.at)).or_default().push(c),
            Some(to) => {
                let split = BlockId(f.blocks.len() as u32);
                let insts = coalesce(&c.paths, c.site, groups, &sites, stats);
                f.blocks.push(Block {
                    insts,
                    term: Terminator::Jump(to),
                });
                if let Terminator::Branch {
                    then_to, else_to, ..
                } = &mut f.blocks[c.block].term
                {
                    if *then_to == to {
                        *then_to = split;
                    } else if *else_to == to {
                        *else_to = split;
                    }
                }
            }
        }
    }
    // Insert from the back of each block so earlier positions stay valid.
    for ((b, at), cs) in inside.into_iter().rev() {
        let mut insts = Vec::new();
        for c in cs {
            insts.extend(coalesce(&c.paths, c.site, groups, &sites, stats));
        }
        let block = &mut f.blocks[b];
        block.insts.splice(at..at, insts);
    }
}

/// The path and site of an access instruction (volatile ones included: only used to
/// find the sites of paths that are checked, which are never volatile).
fn raw_path(inst: &Inst) -> Option<(Path, SiteId)> {
    match *inst {
        Inst::GetField {
            obj, field, site, ..
        }
        | Inst::PutField {
            obj, field, site, ..
        } => Some((Path::Field(obj, field.class, field.index), site)),
        Inst::GetStatic { field, site, .. } | Inst::PutStatic { field, site, .. } => {
            Some((Path::Static(field), site))
        }
        Inst::ArrayLoad {
            arr, index, site, ..
        }
        | Inst::ArrayStore {
            arr, index, site, ..
        } => Some((Path::Elem(arr, index), site)),
        _ => None,
    }
}

/// One check instruction per object local, kind and shadow group (reporting the
/// site of the group's first path), per static and per element.
fn coalesce(
    paths: &[(Path, bool)],
    fallback: SiteId,
    groups: &[Vec<u32>],
    sites: &HashMap<Path, SiteId>,
    stats: &mut Placement,
) -> Vec<Inst> {
    stats.checked_paths += paths.len();
    let site_of = |p: &Path| sites.get(p).copied().unwrap_or(fallback);
    let mut fields: BTreeMap<(Local, ClassId, bool, u32), (u64, SiteId)> = BTreeMap::new();
    let mut out = Vec::new();
    for (p, k) in paths {
        let site = site_of(p);
        match *p {
            Path::Field(o, class, idx) => {
                let rep = groups[class.index()][idx as usize];
                let bit = if idx < 64 { 1u64 << idx } else { 0 };
                fields.entry((o, class, *k, rep)).or_insert((0, site)).0 |= bit;
            }
            Path::Static(field) => out.push(Inst::Check {
                target: CheckTarget::Static { field },
                write: *k,
                site,
            }),
            Path::Elem(arr, index) => out.push(Inst::Check {
                target: CheckTarget::Elem { arr, index },
                write: *k,
                site,
            }),
        }
    }
    for ((obj, class, write, rep), (mask, site)) in fields {
        out.push(Inst::Check {
            target: CheckTarget::Fields {
                obj,
                class,
                groups: vec![(rep, mask)],
            },
            write,
            site,
        });
    }
    stats.checks += out.len();
    out
}

/// The loop range checks of §3.5 for simple induction patterns (Fig. 3.6b): in a
/// loop with no synchronization at all and one exit test `x` (the header's test, or a
/// later one that runs once in every iteration), an element access `a[i + c]` after
/// `x` (`c` a constant or a local the loop does not assign; `i` an induction variable
/// of the loop: assigned only by `i = i + k`, a constant `k != 0`, in a block after `x`
/// that runs exactly once per iteration) that runs in every iteration before the
/// increment touches exactly `a[i0 + c .. i + c : k]` (counting down:
/// `a[i - k + c .. i0 + c + 1 : -k]`) when the loop exits, `i0` being `i` on entry:
/// the iteration that leaves at `x` runs no block after it. Such accesses get no
/// per-iteration check: one range check per array and offset (one step-1 range when
/// the offsets are `c0 .. c0 + |k| - 1` with one kind) on the exit edge, and `i0` is
/// copied at the end of the preheader. An access after `x` that runs only in some
/// iterations, to an element such an access of the same iteration touches with a
/// covering kind, needs no check of its own either; the other such accesses to an
/// array the loop does not assign become runs ([`place_runs`]) when only tests of
/// induction variables and loop-invariant values lead to their block. So do the
/// accesses of the blocks between the header and a later exit test, whose array may
/// also be loaded in the loop (they run in the iteration that leaves the loop too).
///
/// The array is a local the loop does not assign, or a *field source*: a local the
/// loop assigns once, from a plain field `o.f` (`o` not assigned in the loop) earlier
/// in the access's block — `this.a[i]` in a loop. Its value may change between
/// iterations only through another thread's store, and the ranges must name the array
/// that was accessed: after each load the loop compares the array with the previous
/// iteration's (null at first); on a change it checks the ranges accessed through the
/// previous array so far and restarts them at the current `i`. The exit edge checks
/// the last array's ranges. Returns the covered accesses.
///
/// Precise: no acquire lies between the accesses and the check (the loop has no
/// synchronization), which covers them; every index of the range was accessed with
/// a kind at least the check's, with no release between, which makes it legitimate.
fn coalesce_loops(
    cx: &Ctx<'_>,
    f: &mut Function,
    stats: &mut Placement,
) -> HashSet<(usize, usize)> {
    let mut covered = HashSet::new();
    let headers: Vec<(BlockId, Vec<BlockId>)> = {
        let mut by_header: BTreeMap<BlockId, Vec<BlockId>> = BTreeMap::new();
        for (from, to) in back_edges(f) {
            by_header.entry(to).or_default().push(from);
        }
        by_header.into_iter().collect()
    };
    for (h, latches) in headers {
        if let [l] = latches[..] {
            coalesce_loop(cx, f, h.index(), l.index(), &mut covered, stats);
        }
    }
    covered
}

/// Each block's predecessors.
fn predecessors(f: &Function) -> Vec<Vec<usize>> {
    let mut preds = vec![Vec::new(); f.blocks.len()];
    for (b, block) in f.blocks.iter().enumerate() {
        for s in successors(&block.term) {
            preds[s.index()].push(b);
        }
    }
    preds
}

/// The natural loop of the back edge `l → h`: `h` and every block that reaches `l`
/// without passing through `h`.
fn natural_loop(preds: &[Vec<usize>], h: usize, l: usize) -> BTreeSet<usize> {
    let mut body: BTreeSet<usize> = [h, l].into_iter().collect();
    let mut work = vec![l];
    while let Some(b) = work.pop() {
        if b == h {
            continue;
        }
        for &p in &preds[b] {
            if body.insert(p) {
                work.push(p);
            }
        }
    }
    body
}

/// Definitions of each local: (block, instruction) positions.
fn defs_in(
    f: &Function,
    blocks: impl Iterator<Item = usize>,
) -> HashMap<Local, Vec<(usize, usize)>> {
    let mut d: HashMap<Local, Vec<(usize, usize)>> = HashMap::new();
    for b in blocks {
        for (i, inst) in f.blocks[b].insts.iter().enumerate() {
            if let Some(x) = inst.dst() {
                d.entry(x).or_default().push((b, i));
            }
        }
    }
    d
}

/// The value of `c` if its only definition in the function is an int constant.
fn const_of(all: &HashMap<Local, Vec<(usize, usize)>>, f: &Function, c: Local) -> Option<i64> {
    match all.get(&c).map(Vec::as_slice) {
        Some([(b, i)]) => match f.blocks[*b].insts[*i] {
            Inst::Const {
                value: Const::Int(v),
                ..
            } => Some(v),
            _ => None,
        },
        _ => None,
    }
}

fn coalesce_loop(
    cx: &Ctx<'_>,
    f: &mut Function,
    h: usize,
    l: usize,
    covered: &mut HashSet<(usize, usize)>,
    stats: &mut Placement,
) {
    let n = f.blocks.len();
    let succs: Vec<Vec<BlockId>> = f.blocks.iter().map(|b| successors(&b.term)).collect();
    let preds = predecessors(f);
    let body = natural_loop(&preds, h, l);
    if !matches!(f.blocks[l].term, Terminator::Jump(t) if t.index() == h) || l == h {
        return;
    }
    // One exit: a test `x` (the header's, or a later one's: `while (j >= 0 &&
    // a[j] > v)` tests in two blocks that meet in a third), no synchronization
    // anywhere in the loop.
    let exiting: Vec<usize> = body
        .iter()
        .copied()
        .filter(|b| succs[*b].iter().any(|s| !body.contains(&s.index())))
        .collect();
    let [x] = exiting[..] else {
        return;
    };
    let Terminator::Branch {
        then_to, else_to, ..
    } = f.blocks[x].term
    else {
        return;
    };
    let exit = match (
        body.contains(&then_to.index()),
        body.contains(&else_to.index()),
    ) {
        (true, false) => else_to,
        (false, true) => then_to,
        _ => return,
    };
    for &b in &body {
        if matches!(
            f.blocks[b].term,
            Terminator::Return(_) | Terminator::Unreachable
        ) {
            return;
        }
        if f.blocks[b].insts.iter().any(|i| cx.sync(i) != Sync::None) {
            return;
        }
    }
    let outside: Vec<usize> = preds[h]
        .iter()
        .copied()
        .filter(|p| !body.contains(p))
        .collect();
    let [pre] = outside[..] else {
        return;
    };
    if !matches!(f.blocks[pre].term, Terminator::Jump(t) if t.index() == h) {
        return;
    }
    let all_defs = defs_in(f, 0..n);
    let loop_defs = defs_in(f, body.iter().copied());
    // Paths inside one iteration: from `a` to `b` without passing the loop test.
    let reaches = |a: usize, b: usize| -> bool {
        let mut seen: HashSet<usize> = HashSet::new();
        let mut work: Vec<usize> = succs[a].iter().map(|s| s.index()).collect();
        while let Some(x) = work.pop() {
            if x == h || !body.contains(&x) || !seen.insert(x) {
                continue;
            }
            if x == b {
                return true;
            }
            work.extend(succs[x].iter().map(|s| s.index()));
        }
        false
    };
    // Blocks that run in every iteration before the latch: they dominate it inside
    // the loop (removing them disconnects the body's entry from the latch).
    let dominates_latch = |d: usize| -> bool {
        if d == l || d == h {
            return true;
        }
        let mut seen: HashSet<usize> = [d, h].into_iter().collect();
        let mut work: Vec<usize> = succs[h]
            .iter()
            .map(|s| s.index())
            .filter(|s| body.contains(s) && seen.insert(*s))
            .collect();
        while let Some(b) = work.pop() {
            if b == l {
                return false;
            }
            for s in &succs[b] {
                let s = s.index();
                if body.contains(&s) && seen.insert(s) {
                    work.push(s);
                }
            }
        }
        true
    };
    // The blocks of an iteration up to its exit test: the exit test, the header and
    // what runs between them. An iteration that leaves the loop ran some of them
    // (and no later block), every other iteration all it reached of the loop. A later
    // exit test must run once in every iteration.
    let before_exit = |b: usize| b == h || b == x || reaches(b, x);
    if x != h && (!dominates_latch(x) || reaches(x, x)) {
        return;
    }
    // The induction variables: assigned once in the loop, by `i = t` with `t = i + k`
    // or `t = i - k` before it in its block (`i++` and `i--` lower so) or by
    // `i = i + k`, `k` a non-zero constant, in a block after the exit test that runs
    // exactly once per iteration (it dominates the latch and lies on no cycle inside
    // the loop). Each: its increment's block, position, step (negative: counting
    // down).
    let mut ivs: BTreeMap<Local, (usize, usize, i64)> = BTreeMap::new();
    for &b in &body {
        if before_exit(b) || !dominates_latch(b) || reaches(b, b) {
            continue;
        }
        for (i, inst) in f.blocks[b].insts.iter().enumerate() {
            let (dst, ti) = match *inst {
                Inst::Copy { dst, src } => match loop_defs.get(&src).map(Vec::as_slice) {
                    Some([(tb, ti)]) if *tb == b && *ti < i => (dst, *ti),
                    _ => continue,
                },
                Inst::Binary { dst, .. } => (dst, i),
                _ => continue,
            };
            if loop_defs.get(&dst).map(Vec::len) != Some(1) {
                continue;
            }
            let (c, sign) = match f.blocks[b].insts[ti] {
                Inst::Binary {
                    op: BinOp::IAdd,
                    lhs,
                    rhs,
                    ..
                } if lhs == dst => (rhs, 1),
                Inst::Binary {
                    op: BinOp::IAdd,
                    lhs,
                    rhs,
                    ..
                } if rhs == dst => (lhs, 1),
                Inst::Binary {
                    op: BinOp::ISub,
                    lhs,
                    rhs,
                    ..
                } if lhs == dst => (rhs, -1),
                _ => continue,
            };
            // (Bounded before the sign: `i - MIN` must not overflow.)
            if let Some(k) = const_of(&all_defs, f, c)
                .filter(|k| *k != 0 && k.unsigned_abs() <= 1 << 20)
                .map(|k| k * sign)
            {
                ivs.insert(dst, (b, i, k));
            }
        }
    }
    if ivs.is_empty() {
        return;
    }
    // Whether an access at `(b, i)` runs before `iv`'s increment in its iteration.
    let before_increment = |iv: Local, b: usize, i: usize| -> bool {
        let (ib, ii, _) = ivs[&iv];
        if b == ib {
            i < ii
        } else {
            reaches(b, ib) && !reaches(ib, b)
        }
    };
    // The array of an access: a local the loop does not assign, or one the loop
    // assigns once, from a plain field of an object local it does not assign, earlier
    // in the access's block (a *field source*: its value may change between
    // iterations only through a store the loop does not make, i.e. another thread's;
    // each iteration compares it with the previous one, and a change checks the
    // range accessed through the previous array so far and starts a new one).
    let field_source = |arr: Local, b: usize, i: usize| -> Option<usize> {
        match loop_defs.get(&arr).map(Vec::as_slice) {
            Some([(db, di)]) if *db == b && *di < i => match f.blocks[b].insts[*di] {
                Inst::GetField { obj, field, .. }
                    if !cx.prog.field(field).is_volatile && !loop_defs.contains_key(&obj) =>
                {
                    Some(*di)
                }
                _ => None,
            },
            _ => None,
        }
    };
    // The induction variable, base and offset of an index: `i`, or `i + c` / `c + i` /
    // `i - c` defined earlier in the access's block, `c` a constant or a local the
    // loop does not assign.
    let index_of = |index: Local, b: usize, i: usize| -> Option<(Local, Option<Local>, i64)> {
        if ivs.contains_key(&index) {
            return Some((index, None, 0));
        }
        let Some([(db, di)]) = loop_defs.get(&index).map(Vec::as_slice) else {
            return None;
        };
        if *db != b || *di >= i {
            return None;
        }
        let Inst::Binary { op, lhs, rhs, .. } = f.blocks[b].insts[*di] else {
            return None;
        };
        let off = |x: Local| match const_of(&all_defs, f, x) {
            Some(v) if v.unsigned_abs() <= 1 << 20 => Some((None, v)),
            Some(_) => None,
            None if !loop_defs.contains_key(&x) => Some((Some(x), 0)),
            None => None,
        };
        let (iv, o) = match op {
            BinOp::IAdd if ivs.contains_key(&lhs) => (lhs, off(rhs)?),
            BinOp::IAdd if ivs.contains_key(&rhs) => (rhs, off(lhs)?),
            BinOp::ISub if ivs.contains_key(&lhs) => (
                lhs,
                const_of(&all_defs, f, rhs)
                    .filter(|v| v.unsigned_abs() <= 1 << 20)
                    .map(|v| (None, -v))?,
            ),
            _ => return None,
        };
        Some((iv, o.0, o.1))
    };
    // Candidate accesses: (array, induction variable, base, offset) → (write?,
    // positions, site); field sources by array local → position of their load.
    type Key = (Local, Local, Option<Local>, i64);
    type Ranges = BTreeMap<Key, (bool, Vec<(usize, usize)>, SiteId)>;
    type Runs = BTreeMap<(usize, Key), Run>;
    let mut ranges: Ranges = BTreeMap::new();
    let mut sources: BTreeMap<Local, (usize, usize, SiteId)> = BTreeMap::new();
    let access = |inst: &Inst| match *inst {
        Inst::ArrayLoad {
            arr, index, site, ..
        } => Some((arr, index, false, site)),
        Inst::ArrayStore {
            arr, index, site, ..
        } => Some((arr, index, true, site)),
        _ => None,
    };
    let key_of = |b: usize, i: usize, arr: Local, index: Local| -> Option<(Key, Option<usize>)> {
        let (iv, base, off) = index_of(index, b, i)?;
        if !before_increment(iv, b, i) {
            return None;
        }
        let src = if loop_defs.contains_key(&arr) {
            Some(field_source(arr, b, i)?)
        } else {
            None
        };
        Some(((arr, iv, base, off), src))
    };
    let conditional: Vec<usize> = body
        .iter()
        .copied()
        .filter(|b| !before_exit(*b) && !dominates_latch(*b))
        .collect();
    for &b in &body {
        if before_exit(b) || conditional.contains(&b) {
            continue;
        }
        for (i, inst) in f.blocks[b].insts.iter().enumerate() {
            let Some((arr, index, write, site)) = access(inst) else {
                continue;
            };
            let Some((key, src)) = key_of(b, i, arr, index) else {
                continue;
            };
            if let Some(di) = src {
                let load_site = f.blocks[b].insts[di].site().unwrap_or(site);
                sources.insert(arr, (b, di, load_site));
            }
            let e = ranges.entry(key).or_insert((write, Vec::new(), site));
            e.0 |= write;
            e.1.push((b, i));
        }
    }
    // Accesses that run only in some iterations, to an element that an access of the
    // same iteration with a covering kind also touches, are covered by that access's
    // range check too (it follows them with no acquire between).
    // Other such accesses, to an array the loop does not assign, are gathered per
    // block into *runs* (below), when every branch that leads to the block in an
    // iteration tests only the induction variables and values the loop does not
    // assign (SOR's `j + 1 != n - 1`): such a block runs in long stretches of
    // iterations, where a test of loaded data (`moldyn`'s cutoff) may make every run
    // one element long, each costing more than the element check it replaces.
    let index_only = |x: Local| -> bool {
        let mut work = vec![x];
        let mut seen: HashSet<Local> = HashSet::new();
        while let Some(x) = work.pop() {
            if ivs.contains_key(&x) || !loop_defs.contains_key(&x) || !seen.insert(x) {
                continue;
            }
            let Some([(db, di)]) = loop_defs.get(&x).map(Vec::as_slice) else {
                return false;
            };
            match f.blocks[*db].insts[*di] {
                Inst::Const { .. } => {}
                Inst::Copy { src, .. } => work.push(src),
                Inst::Binary { lhs, rhs, .. } => work.extend([lhs, rhs]),
                _ => return false,
            }
            if seen.len() > 64 {
                return false;
            }
        }
        true
    };
    let exit_test = x;
    let steady = |b: usize| -> bool {
        let mut work = vec![b];
        let mut seen: HashSet<usize> = HashSet::new();
        while let Some(x) = work.pop() {
            if !seen.insert(x) {
                continue;
            }
            for &p in &preds[x] {
                // (The exit test's branch does not choose between blocks of the
                // iteration.)
                if p == h || p == exit_test || !body.contains(&p) {
                    continue;
                }
                if let Terminator::Branch { cond, .. } = f.blocks[p].term
                    && !index_only(cond)
                {
                    return false;
                }
                work.push(p);
            }
        }
        true
    };
    // The accesses of blocks before a later exit test (not the header's: it has
    // none) run in the iteration that leaves the loop too, which no range holds: they
    // become runs, whose bounds each access moves.
    let mut runs: Runs = BTreeMap::new();
    let before: Vec<usize> = body
        .iter()
        .copied()
        .filter(|b| *b != h && before_exit(*b))
        .collect();
    for &b in conditional.iter().chain(&before) {
        for (i, inst) in f.blocks[b].insts.iter().enumerate() {
            let Some((arr, index, write, site)) = access(inst) else {
                continue;
            };
            let Some((key, src)) = key_of(b, i, arr, index) else {
                continue;
            };
            let in_range = !before.contains(&b);
            if in_range
                && let Some(e) = ranges.get_mut(&key)
                && e.0 >= write
            {
                e.1.push((b, i));
            } else if (src.is_none() || !in_range) && steady(b) {
                let e = runs.entry((b, key)).or_insert(Run {
                    write,
                    pos: Vec::new(),
                    site,
                    index,
                    array_changes: src.is_some(),
                    in_range,
                });
                e.write |= write;
                e.pos.push((b, i));
                e.index = index;
            }
        }
    }
    // A conditional access whose key has a range after all is that range's.
    runs.retain(|(_, key), r| !r.in_range || !ranges.contains_key(key));
    if ranges.is_empty() && runs.is_empty() {
        return;
    }
    // Range starts: `i0 = i` at the end of the preheader, per induction variable (and
    // per field source, whose ranges restart when its array changes); a field
    // source's previous array starts as null.
    let mut starts: BTreeMap<(Option<Local>, Local), Local> = BTreeMap::new();
    let mut prev: BTreeMap<Local, Local> = BTreeMap::new();
    for (arr, iv, _, _) in ranges.keys() {
        let s = sources.contains_key(arr).then_some(*arr);
        if let std::collections::btree_map::Entry::Vacant(v) = starts.entry((s, *iv)) {
            let i0 = fresh_local(f, *iv);
            f.blocks[pre].insts.push(Inst::Copy { dst: i0, src: *iv });
            v.insert(i0);
        }
        if s.is_some() && !prev.contains_key(arr) {
            let p = fresh_local(f, *arr);
            f.blocks[pre].insts.push(Inst::Const {
                dst: p,
                value: Const::Null,
            });
            prev.insert(*arr, p);
        }
    }
    // Per checked array: (induction variable, base) → offsets.
    type Groups = BTreeMap<(Local, Local, Option<Local>), Vec<(i64, bool, SiteId)>>;
    let mut groups: Groups = BTreeMap::new();
    for ((arr, iv, base, off), (write, pos, site)) in &ranges {
        groups
            .entry((*arr, *iv, *base))
            .or_default()
            .push((*off, *write, *site));
        covered.extend(pos.iter().copied());
        stats.loop_covered += pos.len();
    }
    // The exit edge gets a block of its own (before any split moves the exit test's
    // branch to another block).
    let split = BlockId(f.blocks.len() as u32);
    f.blocks.push(Block {
        insts: Vec::new(),
        term: Terminator::Jump(exit),
    });
    if let Terminator::Branch {
        then_to, else_to, ..
    } = &mut f.blocks[x].term
    {
        if *then_to == exit {
            *then_to = split;
        } else if *else_to == exit {
            *else_to = split;
        }
    }
    // (After the ranges' positions are in `covered`: splitting blocks moves them.)
    let runs_at_exit = place_runs(f, pre, &runs, &ivs, covered, &mut sources, stats);
    // The range checks of `arr`'s groups over the array in `checked`.
    let checks_of = |f: &mut Function, arr: Local, checked: Local, stats: &mut Placement| {
        let mut insts = Vec::new();
        for ((a, iv, base), offs) in &groups {
            if *a != arr {
                continue;
            }
            let step = ivs[iv].2;
            let s = sources.contains_key(a).then_some(*a);
            let i0 = starts[&(s, *iv)];
            insts.extend(range_checks(f, checked, i0, *iv, *base, offs, step, stats));
        }
        insts
    };
    // On the exit edge: every range (over a field source's last array).
    let mut insts = Vec::new();
    let arrays: BTreeSet<Local> = groups.keys().map(|k| k.0).collect();
    for arr in &arrays {
        let checked = prev.get(arr).copied().unwrap_or(*arr);
        insts.extend(checks_of(f, *arr, checked, stats));
    }
    f.blocks[split.index()].insts = insts;
    // Then each run's last range, when it holds an element.
    let mut from = split.index();
    for run in runs_at_exit {
        let next = BlockId(f.blocks.len() as u32);
        f.blocks.push(Block {
            insts: Vec::new(),
            term: Terminator::Jump(exit),
        });
        check_run_if_any(f, from, &run, next);
        from = next.index();
    }
    // After each field source's load: if the array changed, check the ranges of the
    // previous one, restart them, and remember the new array. Later loads first, so
    // the earlier positions of a block stay valid.
    let mut loads: Vec<(usize, usize, Local, SiteId)> = sources
        .iter()
        .map(|(arr, (b, di, site))| (*b, *di, *arr, *site))
        .collect();
    loads.sort_by_key(|x| std::cmp::Reverse((x.0, x.1)));
    for (b, di, arr, site) in loads {
        let p = prev[&arr];
        let mut flush = checks_of(f, arr, p, stats);
        for ((s, iv), i0) in &starts {
            if *s == Some(arr) {
                flush.push(Inst::Copy { dst: *i0, src: *iv });
            }
        }
        flush.push(Inst::Copy { dst: p, src: arr });
        let changed = fresh_local(f, arr);
        f.locals[changed.index()].ty = Type::Boolean;
        let tail: Vec<Inst> = f.blocks[b].insts.split_off(di + 1);
        let cont = BlockId(f.blocks.len() as u32);
        let flush_b = BlockId(f.blocks.len() as u32 + 1);
        let term = branch_at_end(f, b, changed, flush_b, cont);
        f.blocks[b].insts.push(Inst::Binary {
            dst: changed,
            op: BinOp::RefNe,
            lhs: arr,
            rhs: p,
            site,
        });
        f.blocks.push(Block { insts: tail, term });
        f.blocks.push(Block {
            insts: flush,
            term: Terminator::Jump(cont),
        });
        // Positions after the load moved to the continuation block.
        let moved: Vec<(usize, usize)> = covered
            .iter()
            .copied()
            .filter(|(cb, ci)| *cb == b && *ci > di)
            .collect();
        for (cb, ci) in moved {
            covered.remove(&(cb, ci));
            covered.insert((cont.index(), ci - di - 1));
        }
    }
}

/// The checks of runs that share `lo..hi` (see [`place_runs`]), made when `lo != hi`.
#[derive(Clone)]
struct RunExit {
    lo: Local,
    hi: Local,
    checks: Vec<RunCheck>,
}

/// One run's check: `arr[lo + shift..hi + shift:step]` with its kind and site.
#[derive(Clone, Copy)]
struct RunCheck {
    arr: Local,
    shift: i64,
    step: u32,
    write: bool,
    site: SiteId,
}

/// The accesses of one block that form a run (see [`place_runs`]).
struct Run {
    /// Whether one of them writes.
    write: bool,
    /// Their positions.
    pos: Vec<(usize, usize)>,
    site: SiteId,
    /// The index local of the block's last access of the run.
    index: Local,
    /// The array local is loaded in the loop (a field source's): the run tracks the
    /// array it holds.
    array_changes: bool,
    /// The block comes after the loop's exit test: the accesses may belong to a
    /// range of their key instead.
    in_range: bool,
}

/// Runs (§3.5's range checks for accesses that do not run in every iteration, or
/// that run before a later exit test): the accesses of one block to `a[i + c]` (`i` an
/// induction variable of step `k`) touch an index that moves by `k` in the
/// iterations that run the block. Two locals per run, `lo` and `hi` (0 in the
/// preheader), hold the elements `lo..hi:|k|` accessed since the run's last check;
/// after the block's last access of the run, at index `x`, counting up:
/// `if x != hi { if lo != hi { check a[lo..hi:k] } lo = x } hi = x + k`, and counting
/// down: `if x + |k| != lo { if lo != hi { check a[lo..hi:|k|] } hi = x + |k| } lo = x`.
/// When the loop loads `a` (from a field), a third local `ra` holds the run's array
/// (null in the preheader): a different array also ends the run (`a != ra`), and
/// restarting sets `ra = a`; checks are of `ra`. The exit edge checks what is left
/// (the caller, with the returned checks).
///
/// The runs of one block over one induction variable and base whose arrays the loop
/// does not load move together: the block moves every one of them by `k` when it
/// runs, so the run of `a[i + c]` is always the run of `i + c0` (the block's first
/// such key) shifted by `c - c0`. They share one pair of locals and one test, and
/// a jump checks each of them (SOR's `if (j + 1 != nm1)` block: five runs, one test).
///
/// Precise as the ranges are: the loop has no synchronization, so each check follows
/// the accesses it covers with no acquire between, and a run holds only indexes its
/// accesses touched (with the kind of the check, or a write: the block's accesses run
/// together), with no release since.
#[allow(clippy::type_complexity)]
fn place_runs(
    f: &mut Function,
    pre: usize,
    runs: &BTreeMap<(usize, (Local, Local, Option<Local>, i64)), Run>,
    ivs: &BTreeMap<Local, (usize, usize, i64)>,
    covered: &mut HashSet<(usize, usize)>,
    sources: &mut BTreeMap<Local, (usize, usize, SiteId)>,
    stats: &mut Placement,
) -> Vec<RunExit> {
    struct Point {
        b: usize,
        at: usize,
        arr: Local,
        tracked: Option<Local>,
        x: Local,
        step: i64,
        run: RunExit,
    }
    let mut exits = Vec::new();
    // The runs that share their locals: by block, induction variable and base (none
    // over an array the loop loads), each with its offset; the first is the group's.
    let mut groups: BTreeMap<(usize, Local, Option<Local>), Vec<(i64, Local, &Run)>> =
        BTreeMap::new();
    let mut alone: Vec<(usize, Local, Local, &Run)> = Vec::new();
    for (&(b, (arr, iv, base, off)), run) in runs {
        if run.array_changes {
            alone.push((b, arr, iv, run));
        } else {
            groups
                .entry((b, iv, base))
                .or_default()
                .push((off, arr, run));
        }
    }
    // Split points: after each group's (or run's) last access; later ones first, so
    // the earlier positions of a block stay valid.
    let mut points: Vec<Point> = Vec::new();
    let mut add = |f: &mut Function, b: usize, iv: Local, members: &[(i64, Local, &Run)]| {
        let step = ivs[&iv].2;
        let (lo, hi) = (fresh_local(f, iv), fresh_local(f, iv));
        for x in [lo, hi] {
            f.blocks[pre].insts.push(Inst::Const {
                dst: x,
                value: Const::Int(0),
            });
        }
        let (off0, arr0, run0) = members[0];
        let tracked = run0.array_changes.then(|| {
            let ra = fresh_local(f, arr0);
            f.blocks[pre].insts.push(Inst::Const {
                dst: ra,
                value: Const::Null,
            });
            ra
        });
        let at = members
            .iter()
            .flat_map(|m| m.2.pos.iter().map(|p| p.1))
            .max()
            .unwrap_or(0);
        let mut checks = Vec::new();
        for &(off, arr, run) in members {
            covered.extend(run.pos.iter().copied());
            stats.loop_covered += run.pos.len();
            stats.loop_ranges += 1;
            stats.checks += 2;
            checks.push(RunCheck {
                arr: tracked.unwrap_or(arr),
                shift: off - off0,
                step: step.unsigned_abs() as u32,
                write: run.write,
                site: run.site,
            });
        }
        stats.checks += 2;
        let run = RunExit { lo, hi, checks };
        points.push(Point {
            b,
            at,
            arr: arr0,
            tracked,
            x: run0.index,
            step,
            run: run.clone(),
        });
        exits.push(run);
    };
    for ((b, iv, _), members) in &groups {
        add(f, *b, *iv, members);
    }
    for (b, arr, iv, run) in alone {
        add(f, b, iv, &[(0, arr, run)]);
    }
    points.sort_by_key(|p| std::cmp::Reverse((p.b, p.at)));
    for p in points {
        let Point {
            b,
            at,
            arr,
            tracked,
            x,
            step,
            run,
        } = p;
        let (lo, hi, site) = (run.lo, run.hi, run.checks[0].site);
        let m = step.abs();
        let tail: Vec<Inst> = f.blocks[b].insts.split_off(at + 1);
        let first = f.blocks.len() as u32;
        let (cont, gap, restart) = (BlockId(first), BlockId(first + 1), BlockId(first + 2));
        let (k, xk) = (fresh_local(f, x), fresh_local(f, x));
        let mut jumped = fresh_local(f, x);
        f.locals[jumped.index()].ty = Type::Boolean;
        // xk = x + |k|; jumped = x != hi (up) or xk != lo (down).
        let (lhs, rhs) = if step > 0 { (x, hi) } else { (xk, lo) };
        f.blocks[b].insts.extend([
            Inst::Const {
                dst: k,
                value: Const::Int(m),
            },
            Inst::Binary {
                dst: xk,
                op: BinOp::IAdd,
                lhs: x,
                rhs: k,
                site,
            },
            Inst::Binary {
                dst: jumped,
                op: BinOp::ICmp(Cmp::Ne),
                lhs,
                rhs,
                site,
            },
        ]);
        if let Some(ra) = tracked {
            let (changed, either) = (fresh_local(f, jumped), fresh_local(f, jumped));
            f.blocks[b].insts.extend([
                Inst::Binary {
                    dst: changed,
                    op: BinOp::RefNe,
                    lhs: arr,
                    rhs: ra,
                    site,
                },
                Inst::Binary {
                    dst: either,
                    op: BinOp::BOr,
                    lhs: jumped,
                    rhs: changed,
                    site,
                },
            ]);
            jumped = either;
        }
        let term = branch_at_end(f, b, jumped, gap, cont);
        // Then hi = xk (up) or lo = x (down).
        let (moved_end, to) = if step > 0 { (hi, xk) } else { (lo, x) };
        let mut cont_insts = vec![Inst::Copy {
            dst: moved_end,
            src: to,
        }];
        let shift = cont_insts.len();
        cont_insts.extend(tail);
        f.blocks.push(Block {
            insts: cont_insts,
            term,
        });
        f.blocks.push(Block {
            insts: Vec::new(),
            term: Terminator::Jump(restart),
        });
        // Restarting: lo = x (up) or hi = xk (down), and the run's array.
        let mut restart_insts = vec![if step > 0 {
            Inst::Copy { dst: lo, src: x }
        } else {
            Inst::Copy { dst: hi, src: xk }
        }];
        if let Some(ra) = tracked {
            restart_insts.push(Inst::Copy { dst: ra, src: arr });
        }
        f.blocks.push(Block {
            insts: restart_insts,
            term: Terminator::Jump(cont),
        });
        check_run_if_any(f, gap.index(), &run, restart);
        // Positions after the split moved to the continuation block.
        let moved = |(pb, pi): (usize, usize)| {
            if pb == b && pi > at {
                (cont.index(), pi - at - 1 + shift)
            } else {
                (pb, pi)
            }
        };
        *covered = covered.iter().map(|p| moved(*p)).collect();
        for v in sources.values_mut() {
            (v.0, v.1) = moved((v.0, v.1));
        }
    }
    exits
}

/// End block `b` with a branch on `cond`; returns its terminator before.
fn branch_at_end(
    f: &mut Function,
    b: usize,
    cond: Local,
    then: BlockId,
    other: BlockId,
) -> Terminator {
    std::mem::replace(
        &mut f.blocks[b].term,
        Terminator::Branch {
            cond,
            then_to: then,
            else_to: other,
        },
    )
}

/// End block `from` with: if the runs `lo..hi` hold an element, check each; then go
/// on to `then`.
fn check_run_if_any(f: &mut Function, from: usize, run: &RunExit, then: BlockId) {
    let any = fresh_local(f, run.lo);
    f.locals[any.index()].ty = Type::Boolean;
    let check = BlockId(f.blocks.len() as u32);
    f.blocks[from].insts.push(Inst::Binary {
        dst: any,
        op: BinOp::ICmp(Cmp::Ne),
        lhs: run.lo,
        rhs: run.hi,
        site: run.checks[0].site,
    });
    branch_at_end(f, from, any, check, then);
    // One block per check, in order, the last going on to `then`.
    let n = run.checks.len() as u32;
    for j in 0..n {
        let next = if j + 1 < n {
            BlockId(check.0 + j + 1)
        } else {
            then
        };
        f.blocks.push(Block {
            insts: Vec::new(),
            term: Terminator::Jump(next),
        });
    }
    for (j, c) in run.checks.iter().enumerate() {
        run_check(f, check.index() + j, (run.lo, run.hi), c);
    }
}

/// Make the empty block `b` (ending in a jump) check the non-empty run `lo..hi`
/// shifted by `c.shift`: a one-element check of its first element when it holds one
/// (a condition met only now and then, as in `moldyn`'s cutoff test: generated code
/// decides it inline like any element check), else a range check.
fn run_check(f: &mut Function, b: usize, (lo, hi): (Local, Local), c: &RunCheck) {
    let Terminator::Jump(next) = f.blocks[b].term else {
        unreachable!("a run's check block ends in a jump");
    };
    let RunCheck {
        arr,
        shift,
        step,
        write,
        site,
    } = *c;
    let mut insts = Vec::new();
    let (lo, hi) = if shift == 0 {
        (lo, hi)
    } else {
        let d = fresh_local(f, lo);
        let (l2, h2) = (fresh_local(f, lo), fresh_local(f, lo));
        insts.push(Inst::Const {
            dst: d,
            value: Const::Int(shift),
        });
        for (dst, from) in [(l2, lo), (h2, hi)] {
            insts.push(Inst::Binary {
                dst,
                op: BinOp::IAdd,
                lhs: from,
                rhs: d,
                site,
            });
        }
        (l2, h2)
    };
    let (k, l1) = (fresh_local(f, lo), fresh_local(f, lo));
    let one = fresh_local(f, lo);
    f.locals[one.index()].ty = Type::Boolean;
    let first = f.blocks.len() as u32;
    let (elem, range) = (BlockId(first), BlockId(first + 1));
    insts.extend([
        Inst::Const {
            dst: k,
            value: Const::Int(step.into()),
        },
        Inst::Binary {
            dst: l1,
            op: BinOp::IAdd,
            lhs: lo,
            rhs: k,
            site,
        },
        Inst::Binary {
            dst: one,
            op: BinOp::ICmp(Cmp::Eq),
            lhs: l1,
            rhs: hi,
            site,
        },
    ]);
    f.blocks[b].insts = insts;
    f.blocks[b].term = Terminator::Branch {
        cond: one,
        then_to: elem,
        else_to: range,
    };
    for target in [
        CheckTarget::Elem { arr, index: lo },
        CheckTarget::Range { arr, lo, hi, step },
    ] {
        f.blocks.push(Block {
            insts: vec![Inst::Check {
                target,
                write,
                site,
            }],
            term: Terminator::Jump(next),
        });
    }
}

/// The range checks over `arr` of one group of offsets `base + off` of the induction
/// variable `iv` (step `step`, negative when it counts down), from `i0`: one step-1
/// range when the offsets are `c0 … c0 + |step| - 1` with one kind, else one range of
/// stride `|step|` per offset.
#[allow(clippy::too_many_arguments)]
fn range_checks(
    f: &mut Function,
    arr: Local,
    i0: Local,
    iv: Local,
    base: Option<Local>,
    offs: &[(i64, bool, SiteId)],
    step: i64,
    stats: &mut Placement,
) -> Vec<Inst> {
    let mut insts = Vec::new();
    let first = offs[0];
    // Counting down (`step < 0`), the completed iterations ran `i0, i0 - m, …, i + m`.
    let (down, m) = (step < 0, step.abs());
    let contiguous = offs.len() as i64 == m
        && offs.iter().all(|o| o.1 == first.1)
        && offs
            .iter()
            .enumerate()
            .all(|(j, o)| o.0 == first.0 + j as i64);
    let emitted: Vec<(i64, bool, SiteId, u32)> = if contiguous {
        vec![(first.0, first.1, first.2, 1)]
    } else {
        offs.iter()
            .map(|(o, w, s)| (*o, *w, *s, m as u32))
            .collect()
    };
    for (off, write, site, st) in emitted {
        // Counting up: lo = i0 + base + off, hi = i + base + off. Counting down:
        // lo = i + base + off + m, hi = i0 + base + off + (m if contiguous, else 1).
        let (mut lo, mut hi) = if down { (iv, i0) } else { (i0, iv) };
        let mut add = |f: &mut Function, insts: &mut Vec<Inst>, x: Local| {
            let (l2, h2) = (fresh_local(f, iv), fresh_local(f, iv));
            for (d, from) in [(l2, lo), (h2, hi)] {
                insts.push(Inst::Binary {
                    dst: d,
                    op: BinOp::IAdd,
                    lhs: from,
                    rhs: x,
                    site,
                });
            }
            (lo, hi) = (l2, h2);
        };
        if let Some(x) = base {
            add(f, &mut insts, x);
        }
        if off != 0 {
            let c = fresh_local(f, iv);
            insts.push(Inst::Const {
                dst: c,
                value: Const::Int(off),
            });
            add(f, &mut insts, c);
        }
        if down {
            let hi_extra = if contiguous { m } else { 1 };
            let (c_lo, c_hi) = (fresh_local(f, iv), fresh_local(f, iv));
            let (l2, h2) = (fresh_local(f, iv), fresh_local(f, iv));
            for (c, v, d, from) in [(c_lo, m, l2, lo), (c_hi, hi_extra, h2, hi)] {
                insts.push(Inst::Const {
                    dst: c,
                    value: Const::Int(v),
                });
                insts.push(Inst::Binary {
                    dst: d,
                    op: BinOp::IAdd,
                    lhs: from,
                    rhs: c,
                    site,
                });
            }
            (lo, hi) = (l2, h2);
        }
        insts.push(Inst::Check {
            target: CheckTarget::Range {
                arr,
                lo,
                hi,
                step: st,
            },
            write,
            site,
        });
        stats.loop_ranges += 1;
        stats.checks += 1;
    }
    insts
}
