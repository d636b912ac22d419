//! IR → Cranelift: one [`Translator`] per function, one method per IR construct, in
//! the order of the interpreter's main loop (`interp::Interp::run`), so the two tiers
//! stay structurally parallel: same checks in the same order, same scheduling points,
//! same events (see `runtime_fns` for the runtime side).
//!
//! Locals live where `homes` puts them: temporaries confined to one IR block are plain
//! Cranelift values, the others `Variable`s (i64, or f64 for doubles) from which
//! `cranelift-frontend` builds SSA, or stack slots in a method too big for that. Each IR block is one Cranelift block (two with `--max-steps`: a head
//! that counts the step, then the body). Guest heap words are read and written with
//! plain aligned 8-byte loads and stores: that is exactly what Rust's `Relaxed`
//! atomic loads/stores compile to on x86-64, so a racy guest stays defined behaviour
//! and generated code agrees with `heap::load`/`heap::store`.

use cranelift::codegen::ir::{self, FuncRef, MemFlagsData, StackSlotData, StackSlotKind};
use cranelift::prelude::*;
use cranelift_jit::JITModule;
use cranelift_module::Module;
use hashbrown::HashMap;
use lang::ir::{
    BinOp, Block as IrBlock, BlockId, CheckTarget, Cmp, Const, Conv, FieldRef, FuncId, FuncKind,
    Function, Inst, Local, MathFn, PrintArg, Program, Repr, SiteId, Spec, StaticId, Terminator,
    Type as IrType, UnOp,
};

use analyses::pass::{CAPSULE_WORD_DROP, CAPSULE_WORD_FORWARD, CAPSULE_WORD_OWN};

use crate::image::{Image, const_bits};
use crate::interp::block_site;
use crate::layout;

use super::abi::{
    INLINE_COVERED, INLINE_EXCL, INLINE_FAST, INLINE_FAST_SHARED, INLINE_MEMO, INLINE_OBJ,
    INLINE_PAST, INLINE_WORDS, OFF_ABORT, OFF_ANSWER, OFF_CAPSULE_CALLS, OFF_CAPSULE_WORD,
    OFF_CTX_SID, OFF_CTX_WORD, OFF_DEPTH, OFF_EPOCH, OFF_FAILED, OFF_FINE, OFF_FRAMES,
    OFF_FRAMES_LOW, OFF_GUARD, OFF_INLINE_DROPS, OFF_LAZY_FRAMES, OFF_LAZY_GATE, OFF_MAX_DEPTH,
    OFF_MAX_STEPS, OFF_NESTED_WORD, OFF_PAST_FILTERS, OFF_STEPS, OFF_TID, inline_count, pack_frame,
};
use super::exclusive;
use super::homes::{self, Home};
use super::runtime_fns::{Rt, Ty, err};
use super::{InlineDetector, InlineSite, JitOptions};

/// Which of the chain's inline filter tests an access gets ([`Translator::access_hook`]).
#[derive(Copy, Clone, PartialEq, Eq)]
enum Filtering {
    /// The header tests of the inline filters (objects and arrays).
    Header,
    /// None: the filters see every such access (capsule classes' fields when the
    /// chain checks those on thread-local objects too).
    Never,
    /// None, and it passes them (statics: shared by every thread).
    Static,
    /// A proven `this.f` of a capsule class, with `capsule`'s test the chain's first
    /// filter or right behind `escape`'s: dropped while the thread's word has
    /// `CAPSULE_WORD_OWN` (`analyses::pass::InlineFilter::CapsuleProtected`).
    CapsuleOwn,
}

/// Where [`Translator::exclusive_rule`] works: the location's FastTrack cell, the
/// thread's packed epoch, the access's site and inline-counter entry (with the
/// object it remembers), the guard's counters, and the blocks to deliver the access
/// or go on.
struct ExclusiveAt {
    cell: Value,
    /// The cell's key (its cold word's place follows from it, `cold_word`).
    key: Value,
    e: Value,
    site: SiteId,
    entry: usize,
    obj: Value,
    /// The access's index (element) or slot (field), as the cell's key has it.
    index: Value,
    /// A BigFoot element check of this array: the rules apply only if the array is
    /// in the thread's table of fine arrays (`JitThread::fine`).
    fine: Option<Value>,
    guard: Option<(Value, Value)>,
    /// Behind the checker's guard, for a read that pairs: nonzero (`I8`) if the
    /// write, right after the read, would pass the guard (the read's idle test, the
    /// thread's write stamp, or the sole-accessor rule that applied the write too).
    write_ok: Option<Value>,
    /// A read whose write follows ([`Pair`]): the exclusive rule applies the write's
    /// rule too, under the same lock.
    pair: Option<Pair>,
    call: ir::Block,
    cont: ir::Block,
}

/// A read of `a[i]` whose write `a[i] = …` follows in the same IR block with nothing
/// between the read's event and the store that touches the heap, synchronizes,
/// calls or can fault ([`plan_pair`]; the store's array and index may be other
/// locals, holding the same values): when the read's inline exclusive rule applies and the
/// location's `W` is not the thread's current epoch, the write's exclusive rule
/// applies as well, under the one lock (FastTrack's `W := E(t)` right after
/// `R := E(t)`, with the write's site), and `done` is set so that the write skips its
/// own check. The two events are those the out-of-line path would deliver, in the
/// same order, with no other thread's event between them; the write's counts go to
/// an inline entry of its own, `entry` (the write's check has another).
#[derive(Clone, Copy)]
struct Pair {
    /// Index of the store in its IR block.
    store: usize,
    site: SiteId,
    entry: usize,
    done: Variable,
    /// The store's array and index, when they are other locals than the load's (a
    /// field read again for the store, `this.a[i] = this.a[i] + 1`): the exclusive
    /// rule compares them with the load's before it applies the write.
    other: Option<(Value, Value)>,
}

/// The store an array load may pair with ([`Pair`]): its index in the block, site,
/// array and index locals, and the index of the instruction before which the load
/// is emitted: its own, or a later one when array loads stand between it and the
/// store ([`plan_pair`]).
#[derive(Clone, Copy)]
struct Pairable {
    store: usize,
    site: SiteId,
    arr: Local,
    /// The element's index; none for a field (the store's field is the load's).
    index: Option<Local>,
    at: usize,
}

/// The local an instruction defines if it touches no heap, calls nothing and cannot
/// fault (division and remainder can).
fn pure_def(inst: &Inst) -> Option<Local> {
    match inst {
        Inst::Const { dst, .. }
        | Inst::Copy { dst, .. }
        | Inst::Unary { dst, .. }
        | Inst::Convert { dst, .. }
        | Inst::Math { dst, .. } => Some(*dst),
        Inst::Binary { dst, op, .. } if !matches!(op, BinOp::IDiv | BinOp::IRem) => Some(*dst),
        _ => None,
    }
}

/// For the array load `d = A[I]` at `insts[k]`: the first store that follows it, if
/// it stores no reference and nothing between them touches the heap but array
/// loads, synchronizes, calls or can fault but those loads, and none of them
/// redefines `A`, `I`, `d` or the store's array or index (so the store's hold at
/// the load what they hold at the store). Array loads may stand only before the
/// first use of `d`; the load is then emitted right before that use (after its
/// null and bounds checks in place, so a fault happens where it did, and its event
/// delivered before a fault of the loads between, `Translator::error_if`): two
/// loads of one thread with no synchronization between them, in the other order,
/// which is what the hardware may do too, and no instruction between the load and
/// its store that can fault. The JIT does this only where no scheduler point may switch
/// threads (not seeded), so both tiers' traces under a seed stay the same.
fn plan_pair(func: &Function, insts: &[Inst], k: usize) -> Option<Pairable> {
    let Inst::ArrayLoad {
        dst: d, arr, index, ..
    } = &insts[k]
    else {
        return None;
    };
    let refs = |l: &Local| matches!(&func.locals[l.index()].ty, IrType::Array(e) if e.is_ref());
    if refs(arr) {
        return None;
    }
    let mut defined = Vec::new();
    let mut first_use = None;
    let mut loads_before_use = false;
    for (m, inst) in insts.iter().enumerate().skip(k + 1) {
        if first_use.is_none() {
            homes::locals_of(inst, &mut |l, def| {
                if !def && l == *d {
                    first_use = Some(m);
                }
            });
        }
        let dst = match inst {
            Inst::ArrayStore {
                arr: a,
                index: i,
                site,
                ..
            } => {
                let kept = !defined.iter().any(|x| x == a || x == i);
                let at = if loads_before_use {
                    first_use.unwrap_or(m)
                } else {
                    k
                };
                return (kept && !refs(a)).then_some(Pairable {
                    store: m,
                    site: *site,
                    arr: *a,
                    index: Some(*i),
                    at,
                });
            }
            Inst::ArrayLoad { dst, .. } if first_use.is_none() => {
                loads_before_use = true;
                *dst
            }
            _ => pure_def(inst)?,
        };
        if dst == *arr || dst == *index || dst == *d {
            return None;
        }
        defined.push(dst);
    }
    None
}

/// For the field read `d = O.f` at `insts[k]`: the write `O'.f = …` of the same
/// plain, non-reference field that follows it with only pure, non-faulting
/// instructions between, none of them redefining `O` or `O'` (`O'` is compared with
/// `O` at run time when it is another local). No loads between: a field read has no
/// checks of its own to leave in place.
fn plan_field_pair(prog: &Program, insts: &[Inst], k: usize) -> Option<Pairable> {
    let Inst::GetField { obj, field, .. } = &insts[k] else {
        return None;
    };
    let fd = prog.field(*field);
    if fd.is_volatile || fd.ty.is_ref() {
        return None;
    }
    let mut defined = Vec::new();
    for (m, inst) in insts.iter().enumerate().skip(k + 1) {
        let dst = match inst {
            Inst::PutField {
                obj: o,
                field: f,
                site,
                ..
            } if f == field => {
                return (!defined.contains(o)).then_some(Pairable {
                    store: m,
                    site: *site,
                    arr: *o,
                    index: None,
                    at: k,
                });
            }
            _ => pure_def(inst)?,
        };
        if dst == *obj {
            return None;
        }
        defined.push(dst);
    }
    None
}

/// An array load whose load and event [`plan_pair`] moved to a later instruction
/// (`at`): the element's address after its checks, the array and index, the
/// destination and the site.
#[derive(Clone, Copy)]
struct Deferred {
    at: usize,
    plan: Pairable,
    p: Value,
    a: Value,
    i: Value,
    dst: Local,
    site: SiteId,
}

/// What a BigFoot check names, for the inline test of its site's entry
/// (`Translator::covered_inline`): an element `a[i]`, or a range `a[l..h:k]`.
#[derive(Copy, Clone)]
enum SiteSpan {
    Element(Value),
    Range(Value, Value, u32),
}

/// Where [`Translator::sole_rule`] works: the sole-accessor table's top level, the
/// location's word index, the thread's guard word (and its address), and the
/// location's stamp (and its address).
struct SoleAt {
    top: u64,
    w: Value,
    gp: Value,
    word: Value,
    stamp: Value,
    s: Value,
}

/// `Math.*` functions computed by the runtime (`runtime_fns::jit_math`), by index.
pub const MATH_FNS: [MathFn; 13] = [
    MathFn::Sqrt,
    MathFn::AbsInt,
    MathFn::AbsDouble,
    MathFn::Sin,
    MathFn::Cos,
    MathFn::Exp,
    MathFn::Log,
    MathFn::Pow,
    MathFn::Floor,
    MathFn::MinInt,
    MathFn::MaxInt,
    MathFn::MinDouble,
    MathFn::MaxDouble,
];

const I64: types::Type = types::I64;
const F64: types::Type = types::F64;

pub fn ty_of(t: Ty) -> types::Type {
    match t {
        Ty::I64 => I64,
        Ty::F64 => F64,
    }
}

/// The machine type of a CapJava type (None for void).
fn cl_type(t: &IrType) -> Option<types::Type> {
    match t.repr() {
        Repr::Void => None,
        Repr::Double => Some(F64),
        _ => Some(I64),
    }
}

/// Whether the inline exclusive rules may store `site`'s compact form (with a
/// context that has one, tested at run time): `analyses::pass::fasttrack_sid`.
fn has_sid(site: SiteId) -> bool {
    analyses::pass::fasttrack_sid(site.0, 0).is_some()
}

/// The flags of a load of a `JitThread` field that no one writes after the thread
/// starts (its pointers, its id and its limits; the list is on `JitThread`): such a
/// load is pure, so Cranelift loads the field once per function and hoists it out of
/// loops.
pub(super) fn thread_field_mem() -> MemFlagsData {
    MemFlagsData::trusted().with_readonly().with_can_move()
}

/// Guest heap words: aligned and, after the inline null/bounds checks, non-trapping.
/// Relaxed atomic semantics (see the module doc).
fn heap_mem() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// The `(ctx, params…) -> ret` signature of a compiled CapJava function.
pub fn signature(module: &JITModule, f: &Function) -> Signature {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(I64));
    for l in &f.locals[..f.num_params as usize] {
        sig.params
            .push(AbiParam::new(cl_type(&l.ty).unwrap_or(I64)));
    }
    if let Some(t) = cl_type(&f.ret) {
        sig.returns.push(AbiParam::new(t));
    }
    sig
}

/// Per-program tables the runtime functions index.
#[derive(Default)]
pub struct Tables {
    pub prints: Vec<Vec<PrintArg>>,
    pub new_arrays: Vec<IrType>,
    pub inline_sites: Vec<InlineSite>,
}

/// What every translator reads.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub prog: &'a Program,
    pub image: &'a Image,
    pub options: &'a JitOptions,
    pub rt_ids: &'a [cranelift_module::FuncId],
    /// The stubs of `keeper`, by runtime function (`Rt::keeps_registers`).
    pub keep_ids: &'a [Option<cranelift_module::FuncId>],
    /// The program's functions of the exclusive rule for a read and for a write
    /// (`exclusive::rule`), where BigFoot's inline checks apply the rule.
    pub rule_ids: [Option<cranelift_module::FuncId>; 2],
    pub fn_ids: &'a [cranelift_module::FuncId],
    /// Per function: whether it may run while a capsule call is on its thread's stack
    /// ([`in_capsule_calls`]).
    pub in_capsule_calls: &'a [bool],
}

/// Per function of `prog`: whether it may run while a counted capsule call
/// (`Translator::counts_capsule_call`: an instance method of a class that
/// `is_capsule`, by class index) is on
/// its thread's stack, i.e. it is such a method or one calls it, transitively
/// (CapJava's call graph is explicit: no virtual dispatch). Elsewhere the thread's
/// count of running capsule calls is 0 (a thread starts with 0, and a call
/// returns it to its value at entry: there are no exceptions), so the inline
/// filter's test of the count is decided statically.
pub fn in_capsule_calls(prog: &Program, is_capsule: impl Fn(u32) -> bool) -> Vec<bool> {
    let mut inside: Vec<bool> = prog
        .funcs
        .iter()
        .map(|f| f.kind != FuncKind::Static && is_capsule(f.class.0))
        .collect();
    let mut work: Vec<usize> = (0..inside.len()).filter(|&i| inside[i]).collect();
    while let Some(fi) = work.pop() {
        for b in &prog.funcs[fi].blocks {
            for i in &b.insts {
                if let Inst::Call { func, .. } = i
                    && !inside[func.index()]
                {
                    inside[func.index()] = true;
                    work.push(func.index());
                }
            }
        }
    }
    inside
}

/// By function: the methods whose calls may repeat the thread's armed call
/// without their check (`analyses::pass::RepeatCall`, `Translator::repeat_call`).
/// Such a call must make no event the pass would receive, and its first state
/// access must always be at one site (the check's):
/// - an instance method of a capsule class whose instructions are local
///   computations, `Math`, `assert`, and proven `this.f` reads and writes of its own
///   class's non-volatile fields (no reference written), decided inline by the
///   `capsule` filter's words;
/// - calls only on `this`, of `elidable` methods of its class that make no event by
///   the same rules (the words a repeat sets skip their `Enter`/`Exit`; their first
///   access may be anywhere);
/// - `this` never reassigned;
/// - its entry block reaches a `this.f` access before any call or branch.
pub fn repeatable_calls(prog: &Program, elidable: &[bool]) -> Vec<bool> {
    let this = Local(0);
    let own = |f: &Function, field: FieldRef, site: SiteId| {
        field.class == f.class && !prog.field(field).is_volatile && prog.proven_capsule_access(site)
    };
    // Every instruction is one of those above, calls aside.
    let mut ok: Vec<bool> = prog
        .funcs
        .iter()
        .map(|f| {
            f.kind == FuncKind::Method
                && f.blocks.iter().flat_map(|b| &b.insts).all(|i| {
                    i.dst() != Some(this)
                        && match i {
                            Inst::Const { .. }
                            | Inst::Copy { .. }
                            | Inst::Unary { .. }
                            | Inst::Binary { .. }
                            | Inst::Convert { .. }
                            | Inst::Math { .. }
                            | Inst::Assert { .. } => true,
                            Inst::GetField {
                                obj, field, site, ..
                            } => *obj == this && own(f, *field, *site),
                            Inst::PutField {
                                obj, field, site, ..
                            } => {
                                *obj == this
                                    && own(f, *field, *site)
                                    && !prog.field(*field).ty.is_ref()
                            }
                            Inst::Call { func, args, .. } => {
                                args.first() == Some(&this)
                                    && prog.func(*func).class == f.class
                                    && prog.func(*func).kind == FuncKind::Method
                                    && elidable.get(func.index()) == Some(&true)
                            }
                            _ => false,
                        }
                })
        })
        .collect();
    // Calls only of methods that make no event either: the greatest such set.
    let mut changed = true;
    while changed {
        changed = false;
        for (fi, f) in prog.funcs.iter().enumerate() {
            let bad = ok[fi]
                && f.blocks
                    .iter()
                    .flat_map(|b| &b.insts)
                    .any(|i| matches!(i, Inst::Call { func, .. } if !ok[func.index()]));
            if bad {
                ok[fi] = false;
                changed = true;
            }
        }
    }
    // Of those, the ones whose first access has one site repeat.
    for (fi, f) in prog.funcs.iter().enumerate() {
        let first = f.blocks.first().and_then(|b| {
            b.insts.iter().find_map(|i| match i {
                Inst::GetField { .. } | Inst::PutField { .. } => Some(true),
                Inst::Call { .. } => Some(false),
                _ => None,
            })
        });
        ok[fi] &= first == Some(true);
    }
    ok
}

/// Where a local lives during translation (see [`homes`]).
#[derive(Clone, Copy)]
enum Slot {
    Var(Variable),
    /// The value last defined in the current IR block.
    Block(Option<Value>),
    Stack(ir::StackSlot),
}

pub struct Translator<'a, 'b> {
    env: Env<'a>,
    module: &'a mut JITModule,
    tables: &'a mut Tables,
    b: FunctionBuilder<'b>,
    fid: FuncId,
    func: &'a Function,
    vars: Vec<Slot>,
    ctx: Value,
    abort_ptr: Value,
    /// Per IR block: where edges go (step count with `--max-steps`) and the body.
    heads: Vec<Block>,
    bodies: Vec<Block>,
    /// Returns a dummy value: the thread is unwinding (`ctx.failed` is set).
    fail: Block,
    /// Sets `ctx.failed` and unwinds: the program is stopping.
    stop: Block,
    imported: HashMap<cranelift_module::FuncId, FuncRef>,
    /// The monitor a `synchronized` method holds (from the prologue).
    lock: Option<Value>,
    /// The IR block being translated.
    cur: usize,
    /// Back-edge poll blocks to fill after the current terminator: (poll, target).
    polls: Vec<(Block, Block)>,
    /// Index of the instruction being translated in its IR block.
    at: usize,
    /// The store the array load being translated may pair with ([`Pair`]).
    pairable: Option<Pairable>,
    /// An array load to emit before a later instruction of the block.
    deferred: Option<Deferred>,
    /// The pair a read set up, until its store.
    pair: Option<Pair>,
    /// The pair the next same-epoch check's exclusive rule applies.
    excl_pair: Option<Pair>,
}

impl<'a, 'b> Translator<'a, 'b> {
    /// Translate function `fid` into `func`.
    pub fn run(
        env: Env<'a>,
        module: &'a mut JITModule,
        tables: &'a mut Tables,
        func: &'b mut ir::Function,
        fctx: &'b mut FunctionBuilderContext,
        fid: FuncId,
    ) {
        func.name = ir::UserFuncName::user(0, fid.0);
        let mut b = FunctionBuilder::new(func, fctx);
        let fail = b.create_block();
        let stop = b.create_block();
        let f = env.prog.func(fid);
        let t = Translator {
            env,
            module,
            tables,
            b,
            fid,
            func: f,
            vars: Vec::new(),
            ctx: Value::from_u32(0),
            abort_ptr: Value::from_u32(0),
            heads: Vec::new(),
            bodies: Vec::new(),
            fail,
            stop,
            imported: HashMap::new(),
            lock: None,
            cur: 0,
            polls: Vec::new(),
            at: 0,
            pairable: None,
            deferred: None,
            pair: None,
            excl_pair: None,
        };
        t.function();
    }

    fn opts(&self) -> &JitOptions {
        self.env.options
    }

    fn function(mut self) {
        let func = self.func;
        let entry = self.b.create_block();
        self.b.append_block_params_for_function_params(entry);
        self.b.switch_to_block(entry);
        let params = self.b.block_params(entry).to_vec();
        self.ctx = params[0];
        for (i, (l, home)) in func.locals.iter().zip(homes::plan(func)).enumerate() {
            let ty = cl_type(&l.ty).unwrap_or(I64);
            if home == Home::Block {
                // Defined in its block before any use: no initial value.
                self.vars.push(Slot::Block(None));
                continue;
            }
            // Parameters, then zero (the interpreter zero-fills a new frame).
            let init = if i < func.num_params as usize {
                params[1 + i]
            } else {
                self.zero(ty)
            };
            if home == Home::Stack {
                let ss = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    8,
                    3,
                ));
                self.b.ins().stack_store(I64, init, ss, 0);
                self.vars.push(Slot::Stack(ss));
            } else {
                let v = self.b.declare_var(ty);
                self.b.def_var(v, init);
                self.vars.push(Slot::Var(v));
            }
        }
        self.abort_ptr = self.thread_field(OFF_ABORT);
        for _ in &func.blocks {
            let body = self.b.create_block();
            let head = if self.opts().count_steps {
                self.b.create_block()
            } else {
                body
            };
            self.heads.push(head);
            self.bodies.push(body);
        }
        self.prologue(&params[1..]);
        self.b.ins().jump(self.bodies[0], &[]);
        for (bi, block) in func.blocks.iter().enumerate() {
            self.cur = bi;
            if self.heads[bi] != self.bodies[bi] {
                self.b.switch_to_block(self.heads[bi]);
                self.count_step(block_site(func, bi));
                self.b.ins().jump(self.bodies[bi], &[]);
            }
            self.b.switch_to_block(self.bodies[bi]);
            self.block(block);
        }
        self.exits();
        self.b.seal_all_blocks();
        let cfg = self.module.target_config();
        self.b.finalize(cfg);
    }

    /// The shared unwinding exits.
    fn exits(&mut self) {
        self.b.switch_to_block(self.stop);
        self.b.set_cold_block(self.stop);
        let one = self.b.ins().iconst(I64, 1);
        self.b
            .ins()
            .store(MemFlagsData::trusted(), one, self.ctx, OFF_FAILED);
        self.b.ins().jump(self.fail, &[]);
        self.b.switch_to_block(self.fail);
        self.b.set_cold_block(self.fail);
        match cl_type(&self.func.ret) {
            Some(ty) => {
                let z = self.zero(ty);
                self.b.ins().return_(&[z]);
            }
            None => {
                self.b.ins().return_(&[]);
            }
        }
    }

    fn block(&mut self, block: &IrBlock) {
        self.pair = None;
        let pairs = self.pairs_enabled();
        for (k, inst) in block.insts.iter().enumerate() {
            self.at = k;
            if let Some(d) = self.deferred.take_if(|d| d.at == k) {
                self.pairable = Some(d.plan);
                self.load_element(d.p, d.a, d.i, d.dst, d.site);
            }
            // (Not while a moved load waits: only one pair at a time.)
            let free = self.deferred.is_none();
            self.pairable = match inst {
                Inst::ArrayLoad { .. } if pairs && free => plan_pair(self.func, &block.insts, k),
                Inst::GetField { .. } if pairs && free => {
                    plan_field_pair(self.env.prog, &block.insts, k)
                }
                _ => None,
            };
            self.inst(inst);
        }
        debug_assert!(self.deferred.is_none());
        self.pair = None;
        self.terminator(&block.term);
        self.fill_polls();
    }

    // ---------------------------------------------------------------- helpers

    fn zero(&mut self, ty: types::Type) -> Value {
        if ty == F64 {
            self.b.ins().f64const(0.0)
        } else {
            self.b.ins().iconst(ty, 0)
        }
    }

    fn iconst(&mut self, v: i64) -> Value {
        self.b.ins().iconst(I64, v)
    }

    fn use_(&mut self, l: Local) -> Value {
        match self.vars[l.index()] {
            Slot::Var(v) => self.b.use_var(v),
            Slot::Block(Some(v)) => v,
            // `homes::plan` puts a local here only if its block defines it first.
            Slot::Block(None) => {
                debug_assert!(false, "block-local {l:?} used before its definition");
                let ty = self.local_type(l);
                self.zero(ty)
            }
            Slot::Stack(ss) => {
                let ty = self.local_type(l);
                self.b.ins().stack_load(I64, ty, ss, 0)
            }
        }
    }

    fn def(&mut self, l: Local, v: Value) {
        let want = cl_type(&self.func.locals[l.index()].ty).unwrap_or(I64);
        let v = self.coerce(v, want);
        match &mut self.vars[l.index()] {
            Slot::Var(var) => self.b.def_var(*var, v),
            Slot::Block(val) => *val = Some(v),
            Slot::Stack(ss) => {
                let ss = *ss;
                self.b.ins().stack_store(I64, v, ss, 0);
            }
        }
    }

    /// Reinterpret the bits of `v` as `want` (i64 ↔ f64).
    fn coerce(&mut self, v: Value, want: types::Type) -> Value {
        if self.b.func.dfg.value_type(v) == want {
            v
        } else {
            self.b.ins().bitcast(want, MemFlagsData::new(), v)
        }
    }

    fn bits(&mut self, v: Value) -> Value {
        self.coerce(v, I64)
    }

    fn local_type(&self, l: Local) -> types::Type {
        cl_type(&self.func.locals[l.index()].ty).unwrap_or(I64)
    }

    fn func_ref(&mut self, id: cranelift_module::FuncId) -> FuncRef {
        if let Some(r) = self.imported.get(&id) {
            return *r;
        }
        let r = self.module.declare_func_in_func(id, self.b.func);
        self.imported.insert(id, r);
        r
    }

    /// Call runtime function `rt` (the context is prepended when it takes one), through
    /// its stub that keeps every register where it has one ([`keeper`]: the context
    /// goes first, and a result comes back in the thread's `answer`).
    fn call_rt(&mut self, rt: Rt, args: &[Value]) -> Option<Value> {
        let at = rt.index();
        let mut all = Vec::with_capacity(args.len() + 1);
        if let Some(stub) = self.env.keep_ids[at] {
            // The stub's result, if any, is in the thread's `answer`.
            let fr = self.func_ref(stub);
            all.push(self.ctx);
            all.extend_from_slice(args);
            self.b.ins().call(fr, &all);
            return rt.sig().2.map(|ty| {
                let m = MemFlagsData::trusted();
                self.b.ins().load(ty_of(ty), m, self.ctx, OFF_ANSWER)
            });
        }
        let fr = self.func_ref(self.env.rt_ids[at]);
        if rt.takes_ctx() {
            all.push(self.ctx);
        }
        all.extend_from_slice(args);
        let call = self.b.ins().call(fr, &all);
        self.b.inst_results(call).first().copied()
    }

    /// After a fallible call: unwind if the thread failed.
    fn check_failed(&mut self) {
        let f = self
            .b
            .ins()
            .load(I64, MemFlagsData::trusted(), self.ctx, OFF_FAILED);
        let cont = self.b.create_block();
        self.b.ins().brif(f, self.fail, &[], cont, &[]);
        self.b.switch_to_block(cont);
    }

    /// If `cond`, record runtime error `code` (cold path) and unwind.
    fn error_if(&mut self, cond: Value, code: i64, site: SiteId, a: Value, b: Value) {
        let cold = self.b.create_block();
        self.b.set_cold_block(cold);
        let cont = self.b.create_block();
        self.b.ins().brif(cond, cold, &[], cont, &[]);
        self.b.switch_to_block(cold);
        // A load moved past this fault (`plan_pair`) happened before it in the
        // program: its event first, out of line, as the interpreter delivers it.
        if let Some(d) = self.deferred.filter(|_| self.opts().access_hooks) {
            let s = self.iconst(d.site.0 as i64);
            self.call_rt(Rt::EvRead, &[d.a, d.i, s]);
        }
        let c = self.iconst(code);
        let s = self.iconst(site.0 as i64);
        self.call_rt(Rt::Error, &[c, s, a, b]);
        self.b.ins().jump(self.fail, &[]);
        self.b.switch_to_block(cont);
    }

    fn null_check(&mut self, v: Value, code: i64, site: SiteId, a: i64, b: i64) {
        let is_null = self.b.ins().icmp_imm_s(IntCC::Equal, v, 0);
        let a = self.iconst(a);
        let b = self.iconst(b);
        self.error_if(is_null, code, site, a, b);
    }

    /// A scheduling point (only under `--sched seeded`).
    fn point(&mut self) {
        if self.opts().seeded {
            self.call_rt(Rt::Point, &[]);
            self.check_failed();
        }
    }

    /// One step (`--max-steps`): the interpreter's `steps >= max_steps` check.
    fn count_step(&mut self, site: SiteId) {
        let m = MemFlagsData::trusted();
        let steps = self.b.ins().load(I64, m, self.ctx, OFF_STEPS);
        let max = self.thread_field(OFF_MAX_STEPS);
        let over = self
            .b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, steps, max);
        let z = self.iconst(0);
        self.error_if(over, err::STEP_LIMIT, site, z, z);
        let one = self.iconst(1);
        let next = self.b.ins().iadd(steps, one);
        self.b.ins().store(m, next, self.ctx, OFF_STEPS);
    }

    /// Spill `vals` to a stack buffer of 8-byte slots; returns its address.
    fn buffer(&mut self, vals: &[Value]) -> Value {
        let size = (vals.len().max(1) * 8) as u32;
        let ss = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            size,
            3,
        ));
        for (i, v) in vals.iter().enumerate() {
            self.b.ins().stack_store(I64, *v, ss, (i * 8) as i32);
        }
        self.b.ins().stack_addr(I64, ss, 0)
    }

    /// An access hook with the chain's inline decisions in front of the call:
    /// - with inline filters (`JitOptions::inline_filters`), in chain order: skip the
    ///   call when the object's header has none of the filter's bits (for `capsule`'s,
    ///   only outside capsule calls), and count the skipped access for that filter in
    ///   the thread's entry for this site (`JitThread::inline_drops`: one add and the
    ///   object's address, no call); a reference write gets the first filter's test
    ///   only;
    /// - with an inline same-epoch check (`JitOptions::inline_check`; behind filters
    ///   only for the accesses all their tests let through that are not reference
    ///   writes), skip the call when the detector's hot shadow cell says this
    ///   thread's own access in its current epoch is the latest, and count the access
    ///   by rule in the same entry ([`Translator::same_epoch_check`]).
    ///
    /// - a static, other than a reference write, passes every inline filter: each
    ///   forwards it with nothing but its site record, as an access to a shared
    ///   object (`escape` takes the statics as escaped, `capsule` as capsule-shared),
    ///   `capsule` only outside capsule calls (inside one its owner is the executor):
    ///   so it goes to the detector's check, or ends at the filters, as such an access
    ///   does after its header tests (`capsule`'s: with no capsule call running).
    ///
    /// `write` is the type of the written value (None: a read; Some(None): unknown,
    /// treated as a reference); `filtering` says which tests apply; `slot` names a
    /// field (0 for elements); `args[1]` is the location's slot (field index, static
    /// index or element index), so its shadow key is `obj + 8 * args[1]`.
    #[allow(clippy::too_many_arguments)]
    fn access_hook(
        &mut self,
        rt: Rt,
        obj: Value,
        args: &[Value],
        filtering: Filtering,
        write: Option<Option<&IrType>>,
        site: SiteId,
        slot: u32,
    ) {
        let ref_write = match write {
            None => false,
            Some(None) => true,
            Some(Some(t)) => t.is_ref(),
        };
        if filtering == Filtering::CapsuleOwn {
            match self.capsule_filter() {
                Some(filter) if !ref_write => {
                    self.capsule_own(rt, (obj, args), filter, write.is_some(), site, slot)
                }
                _ => {
                    self.call_rt(rt, args);
                }
            }
            return;
        }
        let n_filters = self.opts().inline_filters.len();
        let static_past = filtering == Filtering::Static && !ref_write && n_filters > 0;
        // The header tests in chain order (a reference write only the first's): its
        // mask, and whether it holds only outside capsule calls.
        let tests: Vec<(u64, bool, Option<u64>)> = if filtering == Filtering::Header {
            let filters = &self.opts().inline_filters;
            let n = if ref_write { 1 } else { filters.len() };
            filters[..n.min(filters.len())]
                .iter()
                .map(|f| {
                    let mask = if ref_write { f.ref_write_mask } else { f.mask };
                    (mask, f.capsule_calls, f.gate)
                })
                .collect()
        } else {
            Vec::new()
        };
        // How many filters the access has passed once its tests held.
        let passed = if static_past { n_filters } else { tests.len() };
        let check = self
            .opts()
            .inline_check
            .filter(|c| !c.field_checks && (!c.behind_filter || (passed > 0 && !ref_write)));
        // Past every filter's test the access ends without a call when the pass
        // after the filters ignores plain accesses (`JitOptions::accesses_end_at_filters`).
        let end_at_filters = check.is_none()
            && !ref_write
            && self.opts().accesses_end_at_filters
            && passed > 0
            && passed == n_filters;
        // Where no capsule call can be running, an access that ends at the filters
        // ends there whatever their tests find (a drop or a forward is no pass's
        // state), so a run that keeps no statistics tests nothing.
        let calls_inside = self.opts().inline_filters.iter().any(|f| f.capsule_calls)
            && self.may_run_in_capsule_call();
        if end_at_filters && !self.opts().count_inline && !calls_inside {
            return;
        }
        // (A static has no test of its own: nothing inline without a check or an end.)
        if check.is_none() && (passed == 0 || (static_past && !end_at_filters)) {
            self.call_rt(rt, args);
            return;
        }
        let entry = self.inline_site(site, write.is_some(), slot);
        // A read whose write follows: its exclusive rule may apply the write's too
        // (`Pair`), where the write would pass the same header tests (the bits are
        // only ever set) and no capsule call's word decides.
        let pairable = if write.is_none() {
            self.pairable.take()
        } else {
            None
        };
        // Both sites with a compact form (the exclusive rule stores it).
        let pair = pairable.filter(|plan| {
            check.is_some_and(|c| c.exclusive)
                && has_sid(site)
                && has_sid(plan.site)
                && !(tests.iter().any(|t| t.1) && self.may_run_in_capsule_call())
        });
        let pair = pair.map(|plan| {
            let Pairable {
                store,
                site,
                arr,
                index,
                ..
            } = plan;
            let entry = self.inline_site(site, true, slot);
            self.tables.inline_sites[entry].paired = true;
            let done = self.b.declare_var(I64);
            let zero = self.iconst(0);
            self.b.def_var(done, zero);
            let a = self.use_(arr);
            let i = index.map_or(args[1], |l| self.use_(l));
            Pair {
                store,
                site,
                entry,
                done,
                other: (a != obj || i != args[1]).then_some((a, i)),
            }
        });
        self.pair = pair;
        let call = self.b.create_block();
        let cont = self.b.create_block();
        if static_past
            && self.opts().inline_filters.iter().any(|f| f.capsule_calls)
            && self.may_run_in_capsule_call()
        {
            // Inside a capsule call `capsule` records the executor: call.
            let n = self
                .b
                .ins()
                .load(I64, MemFlagsData::trusted(), self.ctx, OFF_CAPSULE_CALLS);
            let outside = self.b.create_block();
            self.b.ins().brif(n, call, &[], outside, &[]);
            self.b.switch_to_block(outside);
        }
        let mut header = None;
        for (i, &(mask, capsule_calls, gate)) in tests.iter().enumerate() {
            let h = *header.get_or_insert_with(|| {
                self.b
                    .ins()
                    .load(I64, heap_mem(), obj, (layout::HEADER * layout::WORD) as i32)
            });
            let bits = self.b.ins().band_imm_s(h, mask as i64);
            let last = i + 1 == tests.len();
            let pass = if last && check.is_none() && !end_at_filters {
                call
            } else {
                self.b.create_block()
            };
            let skip = self.b.create_block();
            if capsule_calls && self.may_run_in_capsule_call() {
                // Inside a capsule call, the pass's word says what its executor lets
                // through inline (a drop, a forward), while its gate is open (0).
                let m = MemFlagsData::trusted();
                let n = self.b.ins().load(I64, m, self.ctx, OFF_CAPSULE_CALLS);
                let inside = self.b.create_block();
                let outside = self.b.create_block();
                self.b.ins().brif(n, inside, &[], outside, &[]);
                self.b.switch_to_block(outside);
                self.b.ins().brif(bits, pass, &[], skip, &[]);
                self.b.switch_to_block(inside);
                let word = self.capsule_word(gate, call);
                let dropping = self.b.create_block();
                let forwarding = if pass == call {
                    call
                } else {
                    self.b.create_block()
                };
                self.b.ins().brif(bits, forwarding, &[], dropping, &[]);
                self.b.switch_to_block(dropping);
                let d = self.b.ins().band_imm_s(word, CAPSULE_WORD_DROP as i64);
                self.b.ins().brif(d, skip, &[], call, &[]);
                if forwarding != call {
                    self.b.switch_to_block(forwarding);
                    let f = self.b.ins().band_imm_s(word, CAPSULE_WORD_FORWARD as i64);
                    self.b.ins().brif(f, pass, &[], call, &[]);
                }
            } else {
                self.b.ins().brif(bits, pass, &[], skip, &[]);
            }
            self.b.switch_to_block(skip);
            self.count_inline(entry, inline_count(i), obj);
            self.b.ins().jump(cont, &[]);
            if pass != call {
                self.b.switch_to_block(pass);
            }
        }
        if end_at_filters {
            // Every pass forwards it, with nothing but what `Pass::inline_forwarded`
            // records, from the count `INLINE_PAST`.
            self.count_inline(entry, INLINE_PAST, obj);
            self.b.ins().jump(cont, &[]);
        }
        // Past every filter's test, a miss of the detector's check is delivered to
        // the passes after the filters (`Chain::deliver_from`): they would forward it
        // with nothing but what `Pass::inline_forwarded` records, from the count
        // `INLINE_PAST`.
        let past = check.filter(|c| c.behind_filter).map(|_| {
            let past = self.b.create_block();
            self.b.set_cold_block(call);
            past
        });
        if let Some(c) = check {
            let miss = past.unwrap_or(call);
            let at = (obj, args[1]);
            self.excl_pair = pair;
            self.same_epoch_check(c, at, None, write.is_some(), site, entry, miss, cont);
        }
        self.b.switch_to_block(call);
        self.call_rt(rt, args);
        self.b.ins().jump(cont, &[]);
        if let Some(past) = past {
            self.b.switch_to_block(past);
            self.count_inline(entry, INLINE_PAST, obj);
            let k = self.iconst(passed as i64);
            self.b
                .ins()
                .store(MemFlagsData::trusted(), k, self.ctx, OFF_PAST_FILTERS);
            self.call_rt(rt, args);
            self.b.ins().jump(cont, &[]);
        }
        self.b.switch_to_block(cont);
    }

    /// A new entry of the inline counters for a plain access.
    fn inline_site(&mut self, site: SiteId, is_write: bool, slot: u32) -> usize {
        let entry = self.tables.inline_sites.len();
        self.tables.inline_sites.push(InlineSite {
            site,
            is_write,
            check: false,
            elements: false,
            slot,
            capsule_own: false,
            paired: false,
        });
        entry
    }

    /// Where `capsule`'s test is among the inline filters, and its gate: first, or
    /// second behind `escape`'s (which then drops a proven `this.f` of an unescaped
    /// capsule as thread-local, and forwards any other).
    fn capsule_filter(&self) -> Option<(usize, u64)> {
        let filters = &self.opts().inline_filters;
        let at = filters.iter().position(|f| f.capsule_calls)?;
        let behind_escape = at == 1 && filters[0].mask == super::HeaderFilter::ESCAPE.mask;
        if at == 0 || behind_escape {
            Some((at, filters[at].gate?))
        } else {
            None
        }
    }

    /// The thread's `capsule` word (`abi::JitThread::capsule_word`), read in a new
    /// current block when the pass's gate at `gate` is open (0); a closed gate, or
    /// none, jumps to `call`.
    fn capsule_word(&mut self, gate: Option<u64>, call: ir::Block) -> Value {
        let m = MemFlagsData::trusted();
        let open = self.b.create_block();
        match gate {
            Some(addr) => {
                let a = self.iconst(addr as i64);
                let g = self.b.ins().load(I64, m, a, 0);
                self.b.ins().brif(g, call, &[], open, &[]);
            }
            None => {
                self.b.ins().jump(call, &[]);
            }
        }
        self.b.switch_to_block(open);
        let p = self.thread_field(OFF_CAPSULE_WORD);
        self.b.ins().load(I64, m, p, 0)
    }

    /// A proven `this.f` ([`Filtering::CapsuleOwn`]), while the gate at `gate` is 0
    /// and the thread's word has `CAPSULE_WORD_OWN`: dropped, counted as `capsule`'s
    /// drop (filter `at`), or behind `escape` as `escape`'s if the object has not
    /// escaped; delivered otherwise.
    fn capsule_own(
        &mut self,
        rt: Rt,
        (obj, args): (Value, &[Value]),
        (at, gate): (usize, u64),
        is_write: bool,
        site: SiteId,
        slot: u32,
    ) {
        let entry = self.inline_site(site, is_write, slot);
        self.tables.inline_sites[entry].capsule_own = true;
        let call = self.b.create_block();
        let drop = self.b.create_block();
        let cont = self.b.create_block();
        let word = self.capsule_word(Some(gate), call);
        let own = self.b.ins().band_imm_s(word, CAPSULE_WORD_OWN as i64);
        self.b.ins().brif(own, drop, &[], call, &[]);
        self.b.switch_to_block(drop);
        if at == 1 {
            let h = self
                .b
                .ins()
                .load(I64, heap_mem(), obj, (layout::HEADER * layout::WORD) as i32);
            let escaped = self.b.ins().band_imm_s(h, layout::SHARED_BIT as i64);
            let local = self.b.create_block();
            let shared = self.b.create_block();
            self.b.ins().brif(escaped, shared, &[], local, &[]);
            self.b.switch_to_block(shared);
            self.count_inline(entry, inline_count(1), obj);
            self.b.ins().jump(cont, &[]);
            self.b.switch_to_block(local);
        }
        self.count_inline(entry, inline_count(0), obj);
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(call);
        self.call_rt(rt, args);
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(cont);
    }

    /// A field of the thread that no one writes after it starts ([`thread_field_mem`]).
    fn thread_field(&mut self, off: i32) -> Value {
        self.b.ins().load(I64, thread_field_mem(), self.ctx, off)
    }

    /// Add one to part `part` of the thread's inline counters for `entry`, and
    /// remember `obj` as the site's last object. Without `JitOptions::count_inline`
    /// (a run that takes no statistics) only the store of `obj` is left: it is what
    /// keeps Cranelift from reusing a shadow cell's load of one inline check in the
    /// next (`same_epoch_check`), and costs no load.
    fn count_inline(&mut self, entry: usize, part: usize, obj: Value) {
        let m = MemFlagsData::trusted();
        let base = self.thread_field(OFF_INLINE_DROPS);
        let off = |part: usize| ((entry * INLINE_WORDS + part) * layout::WORD) as i32;
        if self.opts().count_inline {
            let n = self.b.ins().load(I64, m, base, off(part));
            let n1 = self.b.ins().iadd_imm_s(n, 1);
            self.b.ins().store(m, n1, base, off(part));
        }
        self.b.ins().store(m, obj, base, off(INLINE_OBJ));
    }

    /// FastTrack's same-epoch rules decided from the hot shadow cell of the location
    /// `obj + 8 * index`, laid out as `analyses::pass::InlineCheck::FastTrack`
    /// documents: on a hit, count the access (`INLINE_FAST`, or `INLINE_FAST_SHARED`
    /// for a read decided on the shared read clock) and jump to `cont`; on a miss (or
    /// a key or table level the walk cannot use) jump to `call`, which delivers the
    /// access so the pass decides it under the location's lock.
    ///
    /// The loads are unlocked, as in the pass's own fast path: only this thread
    /// stores an epoch of this thread, so reading its current epoch in the cell
    /// means its own access in this epoch is the latest. They are plain loads
    /// (acquire on x86-64, the only target that enables the check). Every path from
    /// one check to the next passes through a counter store or a call, so Cranelift
    /// never reuses an earlier load of a cell.
    #[allow(clippy::too_many_arguments)]
    fn same_epoch_check(
        &mut self,
        c: InlineDetector,
        (obj, index): (Value, Value),
        fine: Option<Value>,
        is_write: bool,
        site: SiteId,
        entry: usize,
        call: ir::Block,
        cont: ir::Block,
    ) {
        use analyses::pass::{
            FASTTRACK_CELL_BYTES as CELL, FASTTRACK_R_OFF, FASTTRACK_READ_KEY_OFF,
            FASTTRACK_READ_MASK_OFF, FASTTRACK_SHARED_TAG as TAG, FASTTRACK_W_OFF,
            GUARD_CELL_BYTES, GUARD_OUTSIDE, GUARD_PAIR_TAG, GUARD_SHARED_TAG,
        };
        let m = MemFlagsData::trusted();
        self.b.set_cold_block(call);
        let off = self.b.ins().ishl_imm_u(index, 3);
        // The key is 8-aligned and inside the table's direct range with no test:
        // `obj` is a block of the guest heap, which lies below
        // `2^FASTTRACK_DIRECT_BITS` (`crate::heap::KEY_LIMIT`), and `index` is a
        // constant slot inside it or an element index its bounds check has passed
        // (`Translator::element`, or a BigFoot element check's own `i < len`).
        let key = self.b.ins().iadd(obj, off);
        let w = self.b.ins().ushr_imm_u(key, 3);
        // A read that pairs with its write (`Pair`): the guard also says whether the
        // write, right after it, would pass the guard as a check (`write_ok`, the
        // `guarded` block's second parameter).
        let pairing = !is_write && self.excl_pair.is_some();
        let mut write_ok = None;
        // The checker's test first (`InlineGuard::Stamp`): a read with
        // `stamp & !1 == word` or a shared stamp holding the word, a write with
        // `stamp == word + 1`; else, off the hot path, outside every transaction
        // with none live. `was_idle` (0 or 1) says which held: a hit of the idle
        // test adds one to the checker's count of idle accesses after the word.
        let guard = c.guard.map(
            |analyses::pass::InlineGuard::Stamp {
                 top,
                 idle,
                 sole,
                 recs,
             }| {
                let gp = self.thread_field(OFF_GUARD);
                let word = self.b.ins().load(I64, m, gp, 0);
                let guarded = self.b.create_block();
                let was_idle = self.b.append_block_param(guarded, I64);
                if pairing {
                    write_ok = Some(self.b.append_block_param(guarded, types::I8));
                }
                let other = self.b.create_block();
                self.b.set_cold_block(other);
                let zero = self.iconst(0);
                let no = self.b.ins().iconst(types::I8, 0);
                // The arguments of a jump to `guarded`.
                let to_guarded = |idle: Value, ok: Value| -> Vec<ir::BlockArg> {
                    if pairing {
                        vec![idle.into(), ok.into()]
                    } else {
                        vec![idle.into()]
                    }
                };
                let stamp = self.shadow_cell(top, w, GUARD_CELL_BYTES, other);
                let s = self.b.ins().load(I64, m, stamp, 0);
                // Where the stamp test fails on a plain stamp: the sole-accessor rule
                // when it applies here (on a thread inside a transaction).
                let miss = if c.exclusive {
                    self.b.create_block()
                } else {
                    other
                };
                if is_write {
                    let w1 = self.b.ins().iadd_imm_s(word, 1);
                    let same = self.b.ins().icmp(IntCC::Equal, s, w1);
                    self.b.ins().brif(same, guarded, &[zero.into()], miss, &[]);
                } else {
                    let s1 = self.b.ins().band_imm_s(s, !1);
                    let same = self.b.ins().icmp(IntCC::Equal, s1, word);
                    let not_own = self.b.create_block();
                    // The write passes too where the stamp is the thread's write's.
                    let ok = if pairing {
                        let w1 = self.b.ins().iadd_imm_s(word, 1);
                        self.b.ins().icmp(IntCC::Equal, s, w1)
                    } else {
                        no
                    };
                    self.b
                        .ins()
                        .brif(same, guarded, &to_guarded(zero, ok), not_own, &[]);
                    // Tagged: the read words `[n, w_0, …, w_{n-1}]` it points at must
                    // hold the word for the thread (`word & 0xffff_ffff) >> 1`).
                    self.b.switch_to_block(not_own);
                    let tagged = self.b.ins().band_imm_s(s, GUARD_SHARED_TAG as i64);
                    let (shared, untagged) = (self.b.create_block(), self.b.create_block());
                    self.b.ins().brif(tagged, shared, &[], untagged, &[]);
                    // Two readers in the stamp: a half `(s >> 31k) & (2^31 - 1)` equals
                    // `tid << 24 | clock` of the word (thread below 128, clock below 2^24).
                    self.b.switch_to_block(untagged);
                    let pair = self.b.ins().band_imm_s(s, GUARD_PAIR_TAG as i64);
                    let pair_b = self.b.create_block();
                    self.b.ins().brif(pair, pair_b, &[], miss, &[]);
                    self.b.switch_to_block(pair_b);
                    let low = self.b.ins().band_imm_s(word, u32::MAX as i64);
                    let t = self.b.ins().ushr_imm_u(low, 1);
                    let c = self.b.ins().ushr_imm_u(word, 32);
                    let t_ok = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, t, 128);
                    let c_ok = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, c, 1 << 24);
                    let fits = self.b.ins().band(t_ok, c_ok);
                    let t24 = self.b.ins().ishl_imm_u(t, 24);
                    let half = self.b.ins().bor(t24, c);
                    let mask = (1i64 << 31) - 1;
                    let h0 = self.b.ins().band_imm_s(s, mask);
                    let s31 = self.b.ins().ushr_imm_u(s, 31);
                    let h1 = self.b.ins().band_imm_s(s31, mask);
                    let e0 = self.b.ins().icmp(IntCC::Equal, h0, half);
                    let e1 = self.b.ins().icmp(IntCC::Equal, h1, half);
                    let either = self.b.ins().bor(e0, e1);
                    let hit = self.b.ins().band(either, fits);
                    self.b
                        .ins()
                        .brif(hit, guarded, &to_guarded(zero, no), other, &[]);
                    self.b.switch_to_block(shared);
                    let low = self.b.ins().band_imm_s(word, u32::MAX as i64);
                    let t = self.b.ins().ushr_imm_u(low, 1);
                    let e = self.tagged_entry(s, GUARD_SHARED_TAG, t, I64, other);
                    let same = self.b.ins().icmp(IntCC::Equal, e, word);
                    self.b
                        .ins()
                        .brif(same, guarded, &to_guarded(zero, no), other, &[]);
                }
                let outside = |b: &mut FunctionBuilder| {
                    b.ins().icmp_imm_s(IntCC::Equal, word, GUARD_OUTSIDE as i64)
                };
                if miss != other {
                    self.b.switch_to_block(miss);
                    let out = outside(&mut self.b);
                    let inside = self.b.create_block();
                    self.b.ins().brif(out, other, &[], inside, &[]);
                    self.b.switch_to_block(inside);
                    let at = SoleAt {
                        top: sole,
                        w,
                        gp,
                        word,
                        stamp,
                        s,
                    };
                    // A stamp of 0: the location's first access in a transaction.
                    let (first, earlier) = (self.b.create_block(), self.b.create_block());
                    self.b.ins().brif(s, earlier, &[], first, &[]);
                    self.b.switch_to_block(first);
                    self.first_rule(&at, recs, is_write, site, call);
                    self.b.ins().jump(guarded, &to_guarded(zero, no));
                    self.b.switch_to_block(earlier);
                    let pair = self.excl_pair.filter(|_| pairing);
                    let ok =
                        self.sole_rule(&at, is_write, site, pair.map(|p| (p, obj, index)), call);
                    let ok = ok.unwrap_or(no);
                    self.b.ins().jump(guarded, &to_guarded(zero, ok));
                }
                self.b.switch_to_block(other);
                let out = outside(&mut self.b);
                let idle_b = self.b.create_block();
                self.b.set_cold_block(idle_b);
                self.b.ins().brif(out, idle_b, &[], call, &[]);
                self.b.switch_to_block(idle_b);
                let idle = self.iconst(idle as i64);
                let live = self.b.ins().load(I64, m, idle, 0);
                let one = self.iconst(1);
                // The write, with nothing between, is idle too.
                let yes = self.b.ins().iconst(types::I8, 1);
                self.b
                    .ins()
                    .brif(live, call, &[], guarded, &to_guarded(one, yes));
                self.b.switch_to_block(guarded);
                (gp, was_idle)
            },
        );
        let cell = self.shadow_cell(c.top, w, CELL, call);
        let ep = self.thread_field(OFF_EPOCH);
        let e = self.b.ins().load(I64, m, ep, 0);
        let hit = self.b.create_block();
        // The exclusive rules store the site's compact form: only where it has one.
        let exclusive = c.exclusive && has_sid(site);
        let excl = ExclusiveAt {
            cell,
            key,
            e,
            site,
            entry,
            obj,
            index,
            fine,
            guard,
            write_ok,
            pair: self.excl_pair.take().filter(|_| !is_write),
            call,
            cont,
        };
        if is_write {
            let wv = self.b.ins().load(I64, m, cell, FASTTRACK_W_OFF);
            let same = self.b.ins().icmp(IntCC::Equal, wv, e);
            self.else_exclusive(exclusive.then_some(&excl), same, hit, call, wv, true);
        } else {
            let rv = self.b.ins().load(I64, m, cell, FASTTRACK_R_OFF);
            let same = self.b.ins().icmp(IntCC::Equal, rv, e);
            let not_same = self.b.create_block();
            self.b.ins().brif(same, hit, &[], not_same, &[]);
            // [FT read shared same epoch]: R[t] == C_t(t) on the shared read clock
            // `[n, R[0], …, R[n-1]]` (u32 each) the cold word points to, tagged.
            self.b.switch_to_block(not_same);
            let tagged = self.b.ins().band_imm_s(rv, TAG as i64);
            let shared = self.b.create_block();
            self.else_exclusive(exclusive.then_some(&excl), tagged, shared, call, rv, false);
            // First the cache of recent readers in the tagged word itself:
            // `r & mask == key` with the thread's mask and key after its epoch
            // word (at `ep`, the pure load above).
            self.b.switch_to_block(shared);
            let mask = self.b.ins().load(I64, m, ep, FASTTRACK_READ_MASK_OFF);
            let want = self.b.ins().load(I64, m, ep, FASTTRACK_READ_KEY_OFF);
            let held = self.b.ins().band(rv, mask);
            let cached = self.b.ins().icmp(IntCC::Equal, held, want);
            let hit_shared = self.b.create_block();
            let walk_clock = self.b.create_block();
            self.b.ins().brif(cached, hit_shared, &[], walk_clock, &[]);
            self.b.switch_to_block(walk_clock);
            let tid = self.b.ins().ushr_imm_u(e, 32);
            let (cold, base) = exclusive::cold_word(&mut self.b, cell, key);
            let clocks = self.b.ins().load(I64, m, cold, base);
            let r_t = self.tagged_entry(clocks, TAG, tid, types::I32, call);
            let clock = self.b.ins().band_imm_s(e, u32::MAX as i64);
            let same = self.b.ins().icmp(IntCC::Equal, r_t, clock);
            self.b.ins().brif(same, hit_shared, &[], call, &[]);
            self.b.switch_to_block(hit_shared);
            self.count_inline(entry, INLINE_FAST_SHARED, obj);
            self.count_guarded(guard);
            self.b.ins().jump(cont, &[]);
        }
        self.b.switch_to_block(hit);
        self.count_inline(entry, INLINE_FAST, obj);
        self.count_guarded(guard);
        self.b.ins().jump(cont, &[]);
    }

    /// Go on in a new block where `cond` is not 0; jump to `call` otherwise.
    fn go_on_if(b: &mut FunctionBuilder, call: ir::Block, cond: Value) {
        let ok = b.create_block();
        b.ins().brif(cond, ok, &[], call, &[]);
        b.switch_to_block(ok);
    }

    /// Go on where the guard word `word` is an inside word (below 2^63, `singletrack`'s
    /// `InlineGuard::Stamp`); jump to `call` otherwise.
    fn inside_word_or(&mut self, word: Value, call: ir::Block) {
        let inside = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, word, 0);
        Self::go_on_if(&mut self.b, call, inside);
    }

    /// SingleTrack's sole-accessor rule (`analyses::pass::InlineGuard::Stamp`) for the
    /// location of word index `at.w`, whose stamp `at.s` (at `at.stamp`) failed the
    /// stamp test of the thread's guard word `at.word` (at `at.gp`, not
    /// `GUARD_OUTSIDE`): falls through when the rule applied, jumps to `call` in any
    /// other case (the pass decides there, under the location's lock). Only where the
    /// call context is the shadow stack's (`exclusive_rule`'s test).
    fn sole_rule(
        &mut self,
        at: &SoleAt,
        is_write: bool,
        site: SiteId,
        pair: Option<(Pair, Value, Value)>,
        call: ir::Block,
    ) -> Option<Value> {
        use analyses::pass::{
            GUARD_TX_LO_OFF, SOLE_CELL_BYTES, SOLE_CLOCKS_OFF, SOLE_LOCK, SOLE_OWNER_OFF,
            SOLE_R_SITE_OFF, SOLE_W_SITE_OFF,
        };
        let m = MemFlagsData::trusted();
        // An inside word (below 2^63), and a stamp of the same thread (equal but
        // for the clock and the write bit) that is a plain one (below 2^62), not 0,
        // from this transaction (its clock at least the thread's first).
        self.inside_word_or(at.word, call);
        let x = self.b.ins().bxor(at.s, at.word);
        let x = self.b.ins().band_imm_s(x, 0xffff_fffe);
        let same_tid = self.b.ins().icmp_imm_s(IntCC::Equal, x, 0);
        Self::go_on_if(&mut self.b, call, same_tid);
        let s1 = self.b.ins().iadd_imm_s(at.s, -1);
        let plain = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, s1, (1 << 62) - 1);
        Self::go_on_if(&mut self.b, call, plain);
        let lo = self.b.ins().load(I64, m, at.gp, GUARD_TX_LO_OFF);
        let clock = self.b.ins().ushr_imm_u(at.s, 32);
        let ours = self
            .b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, clock, lo);
        Self::go_on_if(&mut self.b, call, ours);
        // The call context of the packed site is the shadow stack's.
        let moved = exclusive::ctx_moved(&mut self.b, self.ctx);
        let still = self.b.ins().icmp_imm_s(IntCC::Equal, moved, 0);
        Self::go_on_if(&mut self.b, call, still);
        // The entry, owned by the thread: lock it.
        let entry = self.shadow_cell(at.top, at.w, SOLE_CELL_BYTES, call);
        let low = self.b.ins().band_imm_s(at.word, u32::MAX as i64);
        let own = self.b.ins().iadd_imm_s(low, 2);
        let locked = self.b.ins().bor_imm_s(own, SOLE_LOCK as i64);
        let o_addr = self.b.ins().iadd_imm_s(entry, i64::from(SOLE_OWNER_OFF));
        let old = self.b.ins().atomic_cas(m, o_addr, own, locked);
        let got = self.b.ins().icmp(IntCC::Equal, old, own);
        Self::go_on_if(&mut self.b, call, got);
        // Plain stores in program order (x86-64 keeps it), the owner's last.
        let ctx = self.b.ins().load(I64, m, self.ctx, OFF_CTX_WORD);
        let packed = self.b.ins().bor_imm_s(ctx, i64::from(site.0));
        let high = self.b.ins().band_imm_s(at.word, !(u32::MAX as i64));
        if is_write {
            self.b.ins().store(m, packed, entry, SOLE_W_SITE_OFF);
            self.b.ins().store(m, high, entry, SOLE_CLOCKS_OFF);
            let w1 = self.b.ins().iadd_imm_s(at.word, 1);
            self.b.ins().store(m, w1, at.stamp, 0);
        } else {
            self.b.ins().store(m, packed, entry, SOLE_R_SITE_OFF);
            let clocks = self.b.ins().load(I64, m, entry, SOLE_CLOCKS_OFF);
            let w = self.b.ins().band_imm_s(clocks, !(u32::MAX as i64));
            let c = self.b.ins().ushr_imm_u(at.word, 32);
            let clocks = self.b.ins().bor(w, c);
            self.b.ins().store(m, clocks, entry, SOLE_CLOCKS_OFF);
            self.b.ins().store(m, at.word, at.stamp, 0);
        }
        // A read that pairs: the write's rule under the same lock (the stamp is now
        // the thread's own from this transaction, and the write drops the read),
        // where the store's location is the load's.
        let ok = pair.map(|(p, obj, index)| {
            let ok = match self.same_location(&p, obj, index) {
                Some(same) => same,
                None => self.b.ins().iconst(types::I8, 1),
            };
            let (write, release) = (self.b.create_block(), self.b.create_block());
            self.b.ins().brif(ok, write, &[], release, &[]);
            self.b.switch_to_block(write);
            let packed = self.b.ins().bor_imm_s(ctx, i64::from(p.site.0));
            self.b.ins().store(m, packed, entry, SOLE_W_SITE_OFF);
            self.b.ins().store(m, high, entry, SOLE_CLOCKS_OFF);
            let w1 = self.b.ins().iadd_imm_s(at.word, 1);
            self.b.ins().store(m, w1, at.stamp, 0);
            self.b.ins().jump(release, &[]);
            self.b.switch_to_block(release);
            ok
        });
        self.b.ins().store(m, own, entry, SOLE_OWNER_OFF);
        ok
    }

    /// SingleTrack's first-access rule (`analyses::pass::InlineGuard::Stamp`) for the
    /// location of word index `at.w`, whose stamp `at.s` (at `at.stamp`) is 0, for
    /// the thread's guard word `at.word` (not `GUARD_OUTSIDE`), with `recs` the
    /// records' table: falls through when the rule applied (the stamp and the
    /// record now name the access), jumps to `call` in any other case. Only where
    /// the call context is the shadow stack's (`exclusive_rule`'s test).
    fn first_rule(
        &mut self,
        at: &SoleAt,
        recs: u64,
        is_write: bool,
        site: SiteId,
        call: ir::Block,
    ) {
        use analyses::pass::{GUARD_CELL_BYTES, GUARD_FRONT_OFF, GUARD_FRONT_SLOTS};
        let m = MemFlagsData::trusted();
        // An inside word (below 2^63) with a clock (not 0) and a thread below 2^24
        // (its low half below 2^25).
        self.inside_word_or(at.word, call);
        let clock = self.b.ins().ushr_imm_u(at.word, 32);
        Self::go_on_if(&mut self.b, call, clock);
        let low = self.b.ins().band_imm_s(at.word, u32::MAX as i64);
        let fits = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, low, 1 << 25);
        Self::go_on_if(&mut self.b, call, fits);
        // The call context of the packed site is the shadow stack's.
        let moved = exclusive::ctx_moved(&mut self.b, self.ctx);
        let still = self.b.ins().icmp_imm_s(IntCC::Equal, moved, 0);
        Self::go_on_if(&mut self.b, call, still);
        // The site's origin in the thread's front, when it has one for its segment.
        let front = self.b.ins().load(I64, m, at.gp, GUARD_FRONT_OFF);
        Self::go_on_if(&mut self.b, call, front);
        let ctx = self.b.ins().load(I64, m, self.ctx, OFF_CTX_WORD);
        let packed = self.b.ins().bor_imm_s(ctx, i64::from(site.0));
        // `guard_front_slot(site, ctx)`, times the slot's 16 bytes.
        let c = self.b.ins().ushr_imm_u(ctx, 32);
        let c31 = self.b.ins().imul_imm_s(c, 31);
        let x = self.b.ins().bxor_imm_s(c31, i64::from(site.0));
        let x = self.b.ins().band_imm_s(x, (GUARD_FRONT_SLOTS - 1) as i64);
        let off = self.b.ins().ishl_imm_u(x, 4);
        let slot = self.b.ins().iadd(front, off);
        let key = self.b.ins().load(I64, m, slot, 0);
        let same = self.b.ins().icmp(IntCC::Equal, key, packed);
        Self::go_on_if(&mut self.b, call, same);
        let origin = self.b.ins().load(I64, m, slot, 8);
        Self::go_on_if(&mut self.b, call, origin);
        // The location's record, new: lock it, and find the stamp still 0.
        let rec = self.shadow_cell(recs, at.w, GUARD_CELL_BYTES, call);
        let zero = self.iconst(0);
        let one = self.iconst(1);
        let old = self.b.ins().atomic_cas(m, rec, zero, one);
        let got = self.b.ins().icmp_imm_s(IntCC::Equal, old, 0);
        Self::go_on_if(&mut self.b, call, got);
        let s = self.b.ins().atomic_load(I64, m, at.stamp);
        let (still_new, undo) = (self.b.create_block(), self.b.create_block());
        self.b.set_cold_block(undo);
        self.b.ins().brif(s, undo, &[], still_new, &[]);
        self.b.switch_to_block(undo);
        self.b.ins().atomic_store(m, zero, rec);
        self.b.ins().jump(call, &[]);
        // Plain stores in program order (x86-64 keeps it): the stamp, then the
        // record (unlocked).
        self.b.switch_to_block(still_new);
        let stamp = if is_write {
            self.b.ins().iadd_imm_s(at.word, 1)
        } else {
            at.word
        };
        self.b.ins().store(m, stamp, at.stamp, 0);
        self.b.ins().store(m, origin, rec, 0);
    }

    /// Where the pair's store has other locals than its load (`Pair::other`): whether
    /// they hold the load's array (or object) `obj` and index `index` (`I8`).
    fn same_location(&mut self, p: &Pair, obj: Value, index: Value) -> Option<Value> {
        let (a, i) = p.other?;
        let sa = self.b.ins().icmp(IntCC::Equal, a, obj);
        let si = self.b.ins().icmp(IntCC::Equal, i, index);
        Some(self.b.ins().band(sa, si))
    }

    /// Branch to `yes` if `cond`; otherwise to the exclusive rule on the loaded word
    /// `first` when the check applies it (`at`), or else to `call`.
    fn else_exclusive(
        &mut self,
        at: Option<&ExclusiveAt>,
        cond: Value,
        yes: ir::Block,
        call: ir::Block,
        first: Value,
        is_write: bool,
    ) {
        let Some(at) = at else {
            self.b.ins().brif(cond, yes, &[], call, &[]);
            return;
        };
        let other = self.b.create_block();
        self.b.ins().brif(cond, yes, &[], other, &[]);
        self.b.switch_to_block(other);
        self.exclusive_rule(at, first, is_write);
    }

    /// `analyses::pass::bigfoot_fine_slot(a)`'s hash cut to `slots` (a power of two):
    /// the slot of array `a` among the thread's fine arrays (`BIGFOOT_FINE_SLOTS`) or
    /// read memos (`BIGFOOT_MEMO_SLOTS`, `bigfoot_memo_slot`).
    fn fine_slot(&mut self, a: Value, slots: usize) -> Value {
        debug_assert!(slots.is_power_of_two());
        let x = self.b.ins().ushr_imm_u(a, 3);
        let y = self.b.ins().ushr_imm_u(a, 15);
        let h = self.b.ins().bxor(x, y);
        self.b.ins().band_imm_s(h, (slots - 1) as i64)
    }

    /// FT2's [read exclusive] or [write exclusive] rule on `at.cell` (the module
    /// [`exclusive`] says when it applies and what it stores): where it applies,
    /// count the access (`INLINE_EXCL`) and jump to `at.cont`; any other case, or a
    /// lock or `R` that changed meanwhile, jumps to `at.call`. `first` is the word
    /// the same-epoch test loaded (`W` for a write, `R` for a read). A BigFoot check
    /// calls the program's function of the rule ([`exclusive::rule`]); a plain
    /// access keeps its copy (a read that pairs with its write applies the write's
    /// rule in it too).
    fn exclusive_rule(&mut self, at: &ExclusiveAt, first: Value, is_write: bool) {
        use analyses::pass::{
            FASTTRACK_R_OFF, FASTTRACK_R_SID_OFF, FASTTRACK_W_OFF, FASTTRACK_W_SID_OFF,
        };
        let m = MemFlagsData::trusted();
        let call = at.call;
        if let Some(a) = at.fine {
            // `table[bigfoot_fine_slot(a)] == a`: the thread knows the array is fine
            // (else the pass puts the check into its footprint).
            // (`JitThread::fine` is never null.)
            use analyses::pass::BIGFOOT_FINE_SLOTS;
            let table = self.thread_field(OFF_FINE);
            let slot = self.fine_slot(a, BIGFOOT_FINE_SLOTS);
            let off = self.b.ins().ishl_imm_u(slot, 3);
            let p = self.b.ins().iadd(table, off);
            let known = self.b.ins().load(I64, m, p, 0);
            let fine = self.b.ins().icmp(IntCC::Equal, known, a);
            let yes = self.b.create_block();
            self.b.ins().brif(fine, yes, &[], call, &[]);
            self.b.switch_to_block(yes);
        }
        // BigFoot's checks call the rule's function (`rule_ids` holds it only for
        // them: their misses are rarer than an access's, and the copy cost more
        // compile time than it saved). Only plain accesses pair.
        let outlined = self.env.rule_ids[is_write as usize].filter(|_| at.pair.is_none());
        if let Some(rule) = outlined {
            let fr = self.func_ref(rule);
            let site = self.iconst(i64::from(at.site.0));
            let args = [self.ctx, at.cell, at.key, at.e, first, site];
            self.b.ins().call(fr, &args);
            let applied = self.b.ins().load(I64, m, self.ctx, OFF_ANSWER);
            let hit = self.b.create_block();
            self.b.ins().brif(applied, hit, &[], call, &[]);
            self.b.switch_to_block(hit);
            self.count_inline(at.entry, INLINE_EXCL, at.obj);
            self.count_guarded(at.guard);
            self.b.ins().jump(at.cont, &[]);
            return;
        }
        let ordered = self.env.keep_ids[Rt::Ordered.index()];
        let ordered = ordered.expect("Rt::Ordered keeps every register");
        let ordered = self.func_ref(ordered);
        let (ctx, b) = (self.ctx, &mut self.b);
        let wv = exclusive::lock_cell(b, ctx, ordered, at.cell, at.e, first, is_write, call);
        let ctx_sid = self.b.ins().load(I64, m, self.ctx, OFF_CTX_SID);
        let sid_of = |b: &mut FunctionBuilder, site: SiteId| {
            let site = b.ins().iconst(I64, i64::from(site.0));
            exclusive::packed_site(b, ctx_sid, site)
        };
        let sid = sid_of(&mut self.b, at.site);
        let Some(p) = at.pair else {
            let b = &mut self.b;
            exclusive::store_rule(b, at.cell, at.key, at.e, wv, sid, is_write);
            self.count_inline(at.entry, INLINE_EXCL, at.obj);
            self.count_guarded(at.guard);
            self.b.ins().jump(at.cont, &[]);
            return;
        };
        // A read that pairs: its stores, then the write's rule too, unless `W` is
        // already the thread's epoch (then its own check finds [write same
        // epoch]): `W ⪯ C_t` was tested above and `R` is now the thread's epoch.
        let (cold, base) = exclusive::cold_word(&mut self.b, at.cell, at.key);
        self.b.ins().store(m, sid, cold, base + FASTTRACK_R_SID_OFF);
        self.b.ins().store(m, at.e, at.cell, FASTTRACK_R_OFF);
        let mut apply = self.b.ins().icmp(IntCC::NotEqual, wv, at.e);
        if let Some(ok) = at.write_ok {
            apply = self.b.ins().band(apply, ok);
        }
        if let Some(same) = self.same_location(&p, at.obj, at.index) {
            apply = self.b.ins().band(apply, same);
        }
        let (alone, both) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(apply, both, &[], alone, &[]);
        self.b.switch_to_block(both);
        let sid = sid_of(&mut self.b, p.site);
        self.b.ins().store(m, sid, cold, base + FASTTRACK_W_SID_OFF);
        self.b.ins().store(m, at.e, at.cell, FASTTRACK_W_OFF);
        self.count_inline(p.entry, INLINE_EXCL, at.obj);
        let one = self.iconst(1);
        self.b.def_var(p.done, one);
        self.count_inline(at.entry, INLINE_EXCL, at.obj);
        // The read's and the write's idle tests, if the read's held.
        self.count_guarded(at.guard);
        self.count_guarded(at.guard);
        self.b.ins().jump(at.cont, &[]);
        self.b.switch_to_block(alone);
        self.b.ins().store(m, wv, at.cell, FASTTRACK_W_OFF);
        self.count_inline(at.entry, INLINE_EXCL, at.obj);
        self.count_guarded(at.guard);
        self.b.ins().jump(at.cont, &[]);
    }

    /// Entry `i` of the array `[n, e_0, …, e_{n-1}]` (each of type `ty`, `I32` or
    /// `I64`, zero-extended) at `tagged & !tag`; `i >= n` jumps to `miss`.
    fn tagged_entry(
        &mut self,
        tagged: Value,
        tag: u64,
        i: Value,
        ty: ir::Type,
        miss: ir::Block,
    ) -> Value {
        let m = MemFlagsData::trusted();
        let bytes = ty.bytes();
        let p = self.b.ins().band_imm_s(tagged, !tag as i64);
        let load = |b: &mut FunctionBuilder, at: Value, off: i32| {
            if ty == I64 {
                b.ins().load(I64, m, at, off)
            } else {
                b.ins().uload32(m, at, off)
            }
        };
        let n = load(&mut self.b, p, 0);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, i, n);
        let has_entry = self.b.create_block();
        self.b.ins().brif(inside, has_entry, &[], miss, &[]);
        self.b.switch_to_block(has_entry);
        let off = self
            .b
            .ins()
            .ishl_imm_u(i, i64::from(bytes.trailing_zeros()));
        let q = self.b.ins().iadd(p, off);
        load(&mut self.b, q, bytes as i32)
    }

    /// After a hit of the guard's idle test (`was_idle` 1), add one to the checker's
    /// count of idle accesses after its guard word at `gp`.
    fn count_guarded(&mut self, guard: Option<(Value, Value)>) {
        let Some((gp, was_idle)) = guard else { return };
        let m = MemFlagsData::trusted();
        let (count, done) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(was_idle, count, &[], done, &[]);
        self.b.switch_to_block(count);
        let off = analyses::pass::GUARD_IDLE_OFF;
        let n = self.b.ins().load(I64, m, gp, off);
        let n = self.b.ins().iadd_imm_s(n, 1);
        self.b.ins().store(m, n, gp, off);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }

    /// The address of the cell of word index `w` (a location's key over 8) in a
    /// table laid out as `analyses::pass::InlineCheck::FastTrack` documents, with
    /// cells of `cell_bytes`; a missing level jumps to `call`.
    fn shadow_cell(&mut self, top: u64, w: Value, cell_bytes: u32, call: ir::Block) -> Value {
        use analyses::pass::{FASTTRACK_LEAF_BITS as LEAF, FASTTRACK_MID_BITS as MID};
        let m = MemFlagsData::trusted();
        let ti = self.b.ins().ushr_imm_u(w, (LEAF + MID) as i64);
        let toff = self.b.ins().ishl_imm_u(ti, 3);
        let top = self.iconst(top as i64);
        let tp = self.b.ins().iadd(top, toff);
        let mid = self.b.ins().load(I64, m, tp, 0);
        let has_mid = self.b.create_block();
        self.b.ins().brif(mid, has_mid, &[], call, &[]);
        self.b.switch_to_block(has_mid);
        let mi = self.b.ins().ushr_imm_u(w, LEAF as i64);
        let mi = self.b.ins().band_imm_s(mi, ((1u64 << MID) - 1) as i64);
        let moff = self.b.ins().ishl_imm_u(mi, 3);
        let mp = self.b.ins().iadd(mid, moff);
        let leaf = self.b.ins().load(I64, m, mp, 0);
        let has_leaf = self.b.create_block();
        self.b.ins().brif(leaf, has_leaf, &[], call, &[]);
        self.b.switch_to_block(has_leaf);
        let li = self.b.ins().band_imm_s(w, ((1u64 << LEAF) - 1) as i64);
        let loff = self.b.ins().imul_imm_s(li, cell_bytes as i64);
        self.b.ins().iadd(leaf, loff)
    }

    // ------------------------------------------------------- method prologue

    /// The prologue and epilogue call the runtime: for a `synchronized` method's
    /// monitor, the chain's `Enter`/`Exit` (if it takes them for this function), and
    /// the `Begin`/`End` of a `deterministic` or `atomic` method.
    fn needs_frame_hooks(&self) -> bool {
        let f = self.func;
        let frames = self.opts().frame_events
            || self.opts().frames_of.get(self.fid.0 as usize) == Some(&true);
        f.is_synchronized || (self.opts().hooks && (frames || f.is_deterministic || f.is_atomic))
    }

    /// Whether this function is a capsule call that the inline filter must know of
    /// (`HeaderFilter::capsule_calls`): an instance method of a capsule class (CapJava
    /// has no inheritance, so its receiver is of that class).
    fn counts_capsule_call(&self) -> bool {
        self.opts().inline_filters.iter().any(|f| f.capsule_calls)
            && self.func.kind != FuncKind::Static
            && self.opts().is_capsule(self.func.class.0)
    }

    /// Whether this function may run inside a capsule call ([`in_capsule_calls`]):
    /// elsewhere the inline filters' test of the count is left out (it is 0).
    fn may_run_in_capsule_call(&self) -> bool {
        self.env
            .in_capsule_calls
            .get(self.fid.0 as usize)
            .copied()
            .unwrap_or(true)
    }

    /// Add `by` to the thread's count of running capsule calls.
    fn add_capsule_calls(&mut self, by: i64) {
        let m = MemFlagsData::trusted();
        let n = self.b.ins().load(I64, m, self.ctx, OFF_CAPSULE_CALLS);
        let n = self.b.ins().iadd_imm_s(n, by);
        self.b.ins().store(m, n, self.ctx, OFF_CAPSULE_CALLS);
    }

    /// Enter, acquire (synchronized), begin: `runtime_fns::jit_prologue`. Counts a
    /// capsule call first (`Translator::counts_capsule_call`).
    fn prologue(&mut self, params: &[Value]) {
        if self.counts_capsule_call() {
            self.add_capsule_calls(1);
        }
        if !self.needs_frame_hooks() {
            return;
        }
        let elidable = self.elidable();
        let lazy = self.lazy();
        let (call, done) = (self.b.create_block(), self.b.create_block());
        self.b.append_block_param(done, I64);
        let not_elided = if lazy { self.b.create_block() } else { call };
        if elidable {
            // `Guest::enter_method`'s elision, inline: the receiver is the thread's
            // nested-call word.
            let m = MemFlagsData::trusted();
            let p = self.thread_field(OFF_NESTED_WORD);
            let w = self.b.ins().load(I64, m, p, 0);
            let same = self.b.ins().icmp(IntCC::Equal, w, params[0]);
            let elided = self.iconst(crate::rtops::ELIDED_FRAME as i64);
            self.b
                .ins()
                .brif(same, done, &[elided.into()], not_elided, &[]);
        } else {
            self.b.ins().jump(not_elided, &[]);
        }
        if lazy {
            self.b.switch_to_block(not_elided);
            self.push_lazy_frame(params[0], call, done);
        }
        self.b.switch_to_block(call);
        let buf = self.buffer(params);
        let f = self.iconst(self.fid.0 as i64);
        let lock = self
            .call_rt(Rt::Prologue, &[f, buf])
            .expect("returns a word");
        self.check_failed();
        self.b.ins().jump(done, &[lock.into()]);
        self.b.switch_to_block(done);
        self.lock = Some(self.b.block_params(done)[0]);
    }

    /// The thread's lazy frames: their address, how many calls they hold, and
    /// whether their gate is closed (nonzero).
    fn lazy_frames_state(&mut self) -> (Value, Value, Value) {
        let m = MemFlagsData::trusted();
        let base = self.thread_field(OFF_LAZY_FRAMES);
        let gate_at = self.thread_field(OFF_LAZY_GATE);
        let gate = self.b.ins().load(I64, m, gate_at, 0);
        let len = self.b.ins().load(I64, m, base, analyses::pass::LAZY_LEN);
        let closed = self.b.ins().icmp_imm_s(IntCC::NotEqual, gate, 0);
        (base, len, closed)
    }

    /// `Hook::push_lazy_frame`, inline: with the gate open and room left, record
    /// the call on `receiver` in the thread's lazy frames (`analyses::pass::LazyFrames`:
    /// the entry saves both words, which become 0) and jump to `done` with
    /// `rtops::LAZY_FRAME`; otherwise jump to `call`.
    fn push_lazy_frame(&mut self, receiver: Value, call: ir::Block, done: ir::Block) {
        use analyses::pass::{
            LAZY_FRAME_BYTES, LAZY_FRAME0, LAZY_FRAMES, LAZY_LEN, LAZY_METHOD, LAZY_NESTED,
            LAZY_POPPABLE, LAZY_RECEIVER, LAZY_SAVED_NESTED, LAZY_SAVED_WORD, LAZY_WORD,
        };
        let m = MemFlagsData::trusted();
        let (base, len, closed) = self.lazy_frames_state();
        let full =
            self.b
                .ins()
                .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, len, LAZY_FRAMES as i64);
        let no = self.b.ins().bor(closed, full);
        let push = self.b.create_block();
        self.b.ins().brif(no, call, &[], push, &[]);
        self.b.switch_to_block(push);
        let off = self.b.ins().imul_imm_s(len, LAZY_FRAME_BYTES as i64);
        let e = self.b.ins().iadd(base, off);
        let method = self.iconst(self.fid.0 as i64);
        self.b
            .ins()
            .store(m, receiver, e, LAZY_FRAME0 + LAZY_RECEIVER);
        self.b.ins().store(m, method, e, LAZY_FRAME0 + LAZY_METHOD);
        let one = self.iconst(1);
        self.b.ins().store(m, one, e, LAZY_FRAME0 + LAZY_POPPABLE);
        let zero = self.iconst(0);
        for (word, saved) in [
            (LAZY_WORD, LAZY_SAVED_WORD),
            (LAZY_NESTED, LAZY_SAVED_NESTED),
        ] {
            let w = self.b.ins().load(I64, m, base, word);
            self.b.ins().store(m, w, e, LAZY_FRAME0 + saved);
            self.b.ins().store(m, zero, base, word);
        }
        let len1 = self.b.ins().iadd_imm_s(len, 1);
        self.b.ins().store(m, len1, base, LAZY_LEN);
        let marker = self.iconst(crate::rtops::LAZY_FRAME as i64);
        if self.repeatable() {
            self.repeat_call(base, receiver, done, marker);
        }
        self.b.ins().jump(done, &[marker.into()]);
    }

    /// After recording a call of a repeatable method (`JitOptions::repeatable`):
    /// if it repeats the thread's armed call (`analyses::pass::RepeatCall`: the same
    /// capsule, the same frame at the same depth, and no frame below it changed since
    /// the chain last saw the stack, `frames_low` at the caller's depth), set the
    /// thread's words to what the call's check would set, and jump to `done` with
    /// `marker`; otherwise go on in a new current block. The call then runs as a
    /// recorded call the pass never takes: its pop restores the words.
    fn repeat_call(&mut self, base: Value, receiver: Value, done: ir::Block, marker: Value) {
        use analyses::pass::{
            CAPSULE_WORD_DROP, CAPSULE_WORD_OWN, LAZY_NESTED, LAZY_REPEAT_DEPTH, LAZY_REPEAT_FRAME,
            LAZY_REPEAT_RECEIVER, LAZY_WORD,
        };
        let m = MemFlagsData::trusted();
        let armed = self.b.ins().load(I64, m, base, LAZY_REPEAT_RECEIVER);
        let same = self.b.ins().icmp(IntCC::Equal, armed, receiver);
        let (test, no) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(same, test, &[], no, &[]);
        self.b.switch_to_block(test);
        let depth = self.b.ins().load(I64, m, self.ctx, OFF_DEPTH);
        let at = self.b.ins().load(I64, m, base, LAZY_REPEAT_DEPTH);
        let same_depth = self.b.ins().icmp(IntCC::Equal, at, depth);
        let low = self.b.ins().load(I64, m, self.ctx, OFF_FRAMES_LOW);
        let low1 = self.b.ins().iadd_imm_s(low, 1);
        let below_kept = self.b.ins().icmp(IntCC::Equal, low1, depth);
        let frames = self.thread_field(OFF_FRAMES);
        let off = self.b.ins().ishl_imm_u(depth, 3);
        let top = self.b.ins().iadd(frames, off);
        let frame = self.b.ins().load(I64, m, top, -8);
        let want = self.b.ins().load(I64, m, base, LAZY_REPEAT_FRAME);
        let same_frame = self.b.ins().icmp(IntCC::Equal, frame, want);
        let ok = self.b.ins().band(same_depth, below_kept);
        let ok = self.b.ins().band(ok, same_frame);
        let repeat = self.b.create_block();
        self.b.ins().brif(ok, repeat, &[], no, &[]);
        self.b.switch_to_block(repeat);
        let word = self.iconst((CAPSULE_WORD_DROP | CAPSULE_WORD_OWN) as i64);
        self.b.ins().store(m, word, base, LAZY_WORD);
        self.b.ins().store(m, receiver, base, LAZY_NESTED);
        self.b.ins().jump(done, &[marker.into()]);
        self.b.switch_to_block(no);
    }

    /// Whether calls of this function that repeat the thread's armed call skip
    /// their check (`Translator::repeat_call`): a repeatable method
    /// (`JitOptions::repeatable`), recorded lazily, whose proven `this.f` accesses
    /// the `capsule` filter decides inline, in a run that neither counts inline
    /// decisions (their statistics would miss the check's) nor switches threads at
    /// scheduling points (another thread could then see the capsule's record
    /// between the call's entry and exit).
    fn repeatable(&self) -> bool {
        let o = self.opts();
        self.lazy()
            && o.repeatable.get(self.fid.0 as usize) == Some(&true)
            && !o.seeded
            && !o.count_inline
            && self.capsule_filter().is_some()
    }

    /// `Hook::pop_lazy_frame`, inline, for a call whose prologue returned
    /// `rtops::LAZY_FRAME` (`analyses::pass::LazyFrames::pop`): with the gate open
    /// and a recorded call left (the running one) that the producer may end, restore
    /// both words from its entry, drop it (counting it as `popped` if the chain had
    /// taken it) and jump to `done`; otherwise jump to `call` (the chain needs its
    /// `Exit`).
    fn pop_lazy_frame(&mut self, call: ir::Block, done: ir::Block) {
        use analyses::pass::{
            LAZY_FRAME_BYTES, LAZY_FRAME0, LAZY_LEN, LAZY_NESTED, LAZY_POPPABLE, LAZY_POPPED,
            LAZY_SAVED_NESTED, LAZY_SAVED_WORD, LAZY_TAKEN, LAZY_WORD,
        };
        let m = MemFlagsData::trusted();
        let (base, len, closed) = self.lazy_frames_state();
        let empty = self.b.ins().icmp_imm_s(IntCC::Equal, len, 0);
        let no = self.b.ins().bor(closed, empty);
        let entry = self.b.create_block();
        self.b.ins().brif(no, call, &[], entry, &[]);
        self.b.switch_to_block(entry);
        let len1 = self.b.ins().iadd_imm_s(len, -1);
        let off = self.b.ins().imul_imm_s(len1, LAZY_FRAME_BYTES as i64);
        let e = self.b.ins().iadd(base, off);
        let poppable = self.b.ins().load(I64, m, e, LAZY_FRAME0 + LAZY_POPPABLE);
        let pop = self.b.create_block();
        self.b.ins().brif(poppable, pop, &[], call, &[]);
        self.b.switch_to_block(pop);
        for (word, saved) in [
            (LAZY_WORD, LAZY_SAVED_WORD),
            (LAZY_NESTED, LAZY_SAVED_NESTED),
        ] {
            let w = self.b.ins().load(I64, m, e, LAZY_FRAME0 + saved);
            self.b.ins().store(m, w, base, word);
        }
        self.b.ins().store(m, len1, base, LAZY_LEN);
        // A call the chain has taken: it ends the call's frame at its next event.
        let taken = self.b.ins().load(I64, m, base, LAZY_TAKEN);
        let was_taken = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, len, taken);
        let taken1 = self.b.ins().select(was_taken, len1, taken);
        self.b.ins().store(m, taken1, base, LAZY_TAKEN);
        let popped = self.b.ins().load(I64, m, base, LAZY_POPPED);
        let inc = self.b.ins().uextend(I64, was_taken);
        let popped1 = self.b.ins().iadd(popped, inc);
        self.b.ins().store(m, popped1, base, LAZY_POPPED);
        self.b.ins().jump(done, &[]);
    }

    /// Whether calls of this function record their frame in the thread's lazy
    /// frames when they can (`JitOptions::lazy`; the bridge has left out static,
    /// synchronized, `deterministic` and `atomic` methods).
    fn lazy(&self) -> bool {
        !self.opts().frame_events && self.opts().lazy.get(self.fid.0 as usize) == Some(&true)
    }

    /// Whether calls of this function may skip the prologue and epilogue
    /// (`JitOptions::elidable`): only their `Enter`/`Exit` make them call.
    fn elidable(&self) -> bool {
        let f = self.func;
        !self.opts().frame_events
            && self.opts().elidable.get(self.fid.0 as usize) == Some(&true)
            && !f.is_deterministic
            && !f.is_atomic
            && !f.is_synchronized
    }

    // ----------------------------------------------------------- instructions

    fn inst(&mut self, inst: &Inst) {
        match inst {
            Inst::Const { dst, value } => self.const_(*dst, *value),
            Inst::Copy { dst, src } => {
                let v = self.use_(*src);
                self.def(*dst, v);
            }
            Inst::Unary { dst, op, src } => self.unary(*dst, *op, *src),
            Inst::Binary {
                dst,
                op,
                lhs,
                rhs,
                site,
            } => self.binary(*dst, *op, *lhs, *rhs, *site),
            Inst::Convert { dst, conv, src } => self.convert(*dst, *conv, *src),
            Inst::GetField {
                dst,
                obj,
                field,
                site,
            } => self.get_field(*dst, *obj, *field, *site),
            Inst::PutField {
                obj,
                field,
                src,
                site,
            } => self.put_field(*obj, *field, *src, *site),
            Inst::GetStatic { dst, field, site } => self.get_static(*dst, *field, *site),
            Inst::PutStatic { field, src, site } => self.put_static(*field, *src, *site),
            Inst::ArrayLoad {
                dst,
                arr,
                index,
                site,
            } => self.array_load(*dst, *arr, *index, *site),
            Inst::ArrayStore {
                arr,
                index,
                src,
                site,
            } => self.array_store(*arr, *index, *src, *site),
            Inst::ArrayLength { dst, arr, site } => self.array_length(*dst, *arr, *site),
            Inst::New { dst, class, site } => {
                let c = self.iconst(class.0 as i64);
                self.fallible(Rt::New, &[c], *site, Some(*dst));
            }
            Inst::NewArray {
                dst,
                elem,
                dims,
                site,
            } => self.new_array(*dst, elem, dims, *site),
            Inst::Call {
                dst,
                func,
                args,
                site,
            } => self.call(*dst, *func, args, *site),
            Inst::Fork {
                dst,
                func,
                args,
                site,
            } => self.fork(*dst, *func, args, *site),
            Inst::Join { thread, site } => {
                let t = self.use_(*thread);
                self.fallible(Rt::Join, &[t], *site, None);
            }
            Inst::ThreadId { dst } => {
                let v = self.thread_field(OFF_TID);
                self.def(*dst, v);
            }
            Inst::MonitorEnter { obj, site } => {
                let o = self.use_(*obj);
                self.fallible(Rt::MonitorEnter, &[o], *site, None);
            }
            Inst::MonitorExit { obj, site } => {
                let o = self.use_(*obj);
                self.fallible(Rt::MonitorExit, &[o], *site, None);
            }
            Inst::Wait { obj, site } => {
                let o = self.use_(*obj);
                self.fallible(Rt::Wait, &[o], *site, None);
            }
            Inst::Notify { obj, all, site } => {
                let o = self.use_(*obj);
                let a = self.iconst(*all as i64);
                self.fallible(Rt::Notify, &[o, a], *site, None);
            }
            Inst::NewBarrier { dst, parties, site } => {
                let p = self.use_(*parties);
                self.fallible(Rt::NewBarrier, &[p], *site, Some(*dst));
            }
            Inst::BarrierAwait { barrier, site } => {
                let b = self.use_(*barrier);
                self.fallible(Rt::BarrierAwait, &[b], *site, None);
            }
            Inst::SpecBegin { spec, site } => self.spec(*spec, false, *site),
            Inst::SpecEnd { spec, site } => self.spec(*spec, true, *site),
            Inst::Math { dst, func, args } => self.math(*dst, *func, args),
            Inst::Print { args, site } => self.print(args, *site),
            Inst::Check {
                target,
                write,
                site,
            } => self.check(target, *write, *site),
            Inst::Assert { cond, site } => {
                let c = self.use_(*cond);
                let is_false = self.b.ins().icmp_imm_s(IntCC::Equal, c, 0);
                let z = self.iconst(0);
                self.error_if(is_false, err::ASSERT, *site, z, z);
            }
        }
    }

    /// A runtime operation that may fail: `rt(ctx, args…, site)`, then the check.
    fn fallible(&mut self, rt: Rt, args: &[Value], site: SiteId, dst: Option<Local>) {
        let mut all = args.to_vec();
        all.push(self.iconst(site.0 as i64));
        let r = self.call_rt(rt, &all);
        self.check_failed();
        if let (Some(d), Some(v)) = (dst, r) {
            self.def(d, v);
        }
    }

    fn const_(&mut self, dst: Local, value: Const) {
        let bits = const_bits(value);
        let v = if self.local_type(dst) == F64 {
            self.b.ins().f64const(f64::from_bits(bits))
        } else {
            self.b.ins().iconst(I64, bits as i64)
        };
        self.def(dst, v);
    }

    fn bool_of(&mut self, c: Value) -> Value {
        self.b.ins().uextend(I64, c)
    }

    /// `ops::unary`.
    fn unary(&mut self, dst: Local, op: UnOp, src: Local) {
        let a = self.use_(src);
        let v = match op {
            UnOp::INeg => self.b.ins().ineg(a),
            UnOp::FNeg => self.b.ins().fneg(a),
            UnOp::Not => {
                let c = self.b.ins().icmp_imm_s(IntCC::Equal, a, 0);
                self.bool_of(c)
            }
            UnOp::BitNot => self.b.ins().bnot(a),
        };
        self.def(dst, v);
    }

    /// `ops::binary`: wrapping ints, shift counts masked with 63 (CLIF shifts mask
    /// by the type width), IEEE doubles; `/` and `%` check for zero and avoid the
    /// hardware trap of `i64::MIN / -1`.
    fn binary(&mut self, dst: Local, op: BinOp, lhs: Local, rhs: Local, site: SiteId) {
        let a = self.use_(lhs);
        let b = self.use_(rhs);
        let v = match op {
            BinOp::IAdd => self.b.ins().iadd(a, b),
            BinOp::ISub => self.b.ins().isub(a, b),
            BinOp::IMul => self.b.ins().imul(a, b),
            BinOp::IDiv | BinOp::IRem => {
                let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
                let z = self.iconst(0);
                self.error_if(zero, err::DIV_ZERO, site, z, z);
                let m1 = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
                let one = self.iconst(1);
                let safe = self.b.ins().select(m1, one, b);
                if op == BinOp::IDiv {
                    let q = self.b.ins().sdiv(a, safe);
                    let neg = self.b.ins().ineg(a);
                    self.b.ins().select(m1, neg, q)
                } else {
                    // x % -1 == 0 == x % 1.
                    self.b.ins().srem(a, safe)
                }
            }
            BinOp::IAnd | BinOp::BAnd => self.b.ins().band(a, b),
            BinOp::IOr | BinOp::BOr => self.b.ins().bor(a, b),
            BinOp::IXor | BinOp::BXor => self.b.ins().bxor(a, b),
            BinOp::Shl => self.b.ins().ishl(a, b),
            BinOp::Shr => self.b.ins().sshr(a, b),
            BinOp::UShr => self.b.ins().ushr(a, b),
            BinOp::FAdd => self.b.ins().fadd(a, b),
            BinOp::FSub => self.b.ins().fsub(a, b),
            BinOp::FMul => self.b.ins().fmul(a, b),
            BinOp::FDiv => self.b.ins().fdiv(a, b),
            BinOp::FRem => self.call_rt(Rt::FRem, &[a, b]).unwrap_or(a),
            BinOp::ICmp(c) => {
                let cc = match c {
                    Cmp::Eq => IntCC::Equal,
                    Cmp::Ne => IntCC::NotEqual,
                    Cmp::Lt => IntCC::SignedLessThan,
                    Cmp::Le => IntCC::SignedLessThanOrEqual,
                    Cmp::Gt => IntCC::SignedGreaterThan,
                    Cmp::Ge => IntCC::SignedGreaterThanOrEqual,
                };
                let r = self.b.ins().icmp(cc, a, b);
                self.bool_of(r)
            }
            BinOp::FCmp(c) => {
                // Ordered comparisons (false on NaN) except `!=` (true on NaN).
                let cc = match c {
                    Cmp::Eq => FloatCC::Equal,
                    Cmp::Ne => FloatCC::NotEqual,
                    Cmp::Lt => FloatCC::LessThan,
                    Cmp::Le => FloatCC::LessThanOrEqual,
                    Cmp::Gt => FloatCC::GreaterThan,
                    Cmp::Ge => FloatCC::GreaterThanOrEqual,
                };
                let r = self.b.ins().fcmp(cc, a, b);
                self.bool_of(r)
            }
            BinOp::BEq | BinOp::RefEq => {
                let r = self.b.ins().icmp(IntCC::Equal, a, b);
                self.bool_of(r)
            }
            BinOp::BNe | BinOp::RefNe => {
                let r = self.b.ins().icmp(IntCC::NotEqual, a, b);
                self.bool_of(r)
            }
        };
        self.def(dst, v);
    }

    /// `ops::convert`: `fcvt_to_sint_sat` saturates and maps NaN to 0, like Rust's `as`.
    fn convert(&mut self, dst: Local, conv: Conv, src: Local) {
        let a = self.use_(src);
        let v = match conv {
            Conv::IntToDouble => self.b.ins().fcvt_from_sint(F64, a),
            Conv::DoubleToInt => self.b.ins().fcvt_to_sint_sat(I64, a),
        };
        self.def(dst, v);
    }

    fn get_field(&mut self, dst: Local, obj: Local, field: FieldRef, site: SiteId) {
        let o = self.use_(obj);
        let (c, i) = (field.class.0 as i64, field.index as i64);
        self.null_check(o, err::NULL_READ_FIELD, site, c, i);
        self.point();
        let fd = self.env.prog.field(field);
        let ty = self.local_type(dst);
        let word = (layout::FIELD0 + field.index as usize) as i64;
        let filtering = self.field_filtering(field, site);
        self.read(
            dst,
            o,
            word,
            field.index as i64,
            fd.is_volatile,
            ty,
            site,
            filtering,
        );
    }

    /// A field or static read (the interpreter's `Interp::read`): volatile through
    /// the runtime (atomic with its event), plain inline plus the `Read` hook.
    #[allow(clippy::too_many_arguments)]
    fn read(
        &mut self,
        dst: Local,
        o: Value,
        word: i64,
        slot: i64,
        volatile: bool,
        ty: types::Type,
        site: SiteId,
        filtering: Filtering,
    ) {
        if volatile {
            let w = self.iconst(word);
            let sl = self.iconst(slot);
            let s = self.iconst(site.0 as i64);
            let v = self
                .call_rt(Rt::VolatileRead, &[o, w, sl, s])
                .expect("volatile read result");
            self.def(dst, v);
            return;
        }
        let v = self
            .b
            .ins()
            .load(ty, heap_mem(), o, (word as usize * layout::WORD) as i32);
        self.def(dst, v);
        if self.opts().access_hooks {
            let sl = self.iconst(slot);
            let s = self.iconst(site.0 as i64);
            self.access_hook(
                Rt::EvRead,
                o,
                &[o, sl, s],
                filtering,
                None,
                site,
                slot as u32,
            );
        }
    }

    /// A field or static write (the interpreter's `Interp::write`).
    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        o: Value,
        word: i64,
        slot: i64,
        v: Value,
        ty: &IrType,
        volatile: bool,
        site: SiteId,
        filtering: Filtering,
    ) {
        let is_ref = ty.is_ref() as i64;
        if volatile {
            let w = self.iconst(word);
            let sl = self.iconst(slot);
            let bits = self.bits(v);
            let r = self.iconst(is_ref);
            let s = self.iconst(site.0 as i64);
            self.call_rt(Rt::VolatileWrite, &[o, w, sl, bits, r, s]);
            return;
        }
        // The event before the store, as in the interpreter (a filter marks what a
        // written reference makes reachable before another thread can read it there).
        if self.opts().access_hooks {
            let sl = self.iconst(slot);
            let bits = self.bits(v);
            let r = self.iconst(is_ref);
            let s = self.iconst(site.0 as i64);
            let args = [o, sl, bits, r, s];
            let w = Some(Some(ty));
            let slot = slot as u32;
            self.unless_paired(|t| t.access_hook(Rt::EvWrite, o, &args, filtering, w, site, slot));
        }
        self.b
            .ins()
            .store(heap_mem(), v, o, (word as usize * layout::WORD) as i32);
    }

    fn put_field(&mut self, obj: Local, field: FieldRef, src: Local, site: SiteId) {
        let o = self.use_(obj);
        let (c, i) = (field.class.0 as i64, field.index as i64);
        self.null_check(o, err::NULL_WRITE_FIELD, site, c, i);
        self.point();
        let fd = self.env.prog.field(field);
        let v = self.use_(src);
        let word = (layout::FIELD0 + field.index as usize) as i64;
        let filtering = self.field_filtering(field, site);
        self.write(
            o,
            word,
            field.index as i64,
            v,
            &fd.ty.clone(),
            fd.is_volatile,
            site,
            filtering,
        );
    }

    /// Whether an access to `field` may be dropped by the inline test: not a capsule
    /// class's field when the chain checks those on thread-local objects too
    /// (`HeaderFilter::capsule_fields`; CapJava has no inheritance, so the field's
    /// class is the object's).
    /// A proven `this.f` behind `capsule` as the first filter has a test of its own
    /// ([`Filtering::CapsuleOwn`]).
    fn field_filtering(&self, field: FieldRef, site: SiteId) -> Filtering {
        let filters = &self.opts().inline_filters;
        let capsule_fields = filters.iter().any(|f| f.capsule_fields);
        if !(capsule_fields && self.opts().is_capsule(field.class.0)) {
            return Filtering::Header;
        }
        match self.capsule_filter().is_some() && self.env.prog.proven_capsule_access(site) {
            true => Filtering::CapsuleOwn,
            false => Filtering::Never,
        }
    }

    fn statics(&mut self) -> Value {
        self.iconst(self.env.image.statics as i64)
    }

    /// Statics are never dropped inline (every thread shares them), but pass the
    /// filters inline ([`Filtering::Static`]).
    fn get_static(&mut self, dst: Local, field: StaticId, site: SiteId) {
        self.point();
        let sf = self.env.prog.static_field(field);
        let o = self.statics();
        let ty = self.local_type(dst);
        let word = (layout::FIELD0 + field.index()) as i64;
        self.read(
            dst,
            o,
            word,
            field.0 as i64,
            sf.is_volatile,
            ty,
            site,
            Filtering::Static,
        );
    }

    fn put_static(&mut self, field: StaticId, src: Local, site: SiteId) {
        self.point();
        let sf = self.env.prog.static_field(field);
        let o = self.statics();
        let v = self.use_(src);
        let word = (layout::FIELD0 + field.index()) as i64;
        let ty = sf.ty.clone();
        let f = Filtering::Static;
        self.write(o, word, field.0 as i64, v, &ty, sf.is_volatile, site, f);
    }

    /// The length of the array `a` (not null).
    fn load_len(&mut self, a: Value) -> Value {
        self.b.ins().load(
            I64,
            heap_mem(),
            a,
            (layout::ARRAY_LEN * layout::WORD) as i32,
        )
    }

    /// Null and bounds checks of `a[i]` (the interpreter's `Interp::element`);
    /// returns the element's address minus the data offset.
    fn element(&mut self, a: Value, i: Value, site: SiteId) -> Value {
        self.null_check(a, err::NULL_INDEX, site, 0, 0);
        let len = self.load_len(a);
        // `i < 0 || i >= len` as one unsigned comparison.
        let out = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, len);
        self.error_if(out, err::BOUNDS, site, i, len);
        let off = self.b.ins().ishl_imm_u(i, 3);
        self.b.ins().iadd(a, off)
    }

    const DATA: i32 = (layout::ARRAY_DATA * layout::WORD) as i32;

    /// Whether array loads may pair with their stores ([`Pair`]): FastTrack's
    /// inline exclusive rule with nothing in front of it but header filters, and no
    /// scheduler point that may switch threads between the two events (seeded).
    fn pairs_enabled(&self) -> bool {
        let o = self.opts();
        !o.seeded
            && o.access_hooks
            && o.inline_check
                .is_some_and(|c| c.exclusive && !c.field_checks)
    }

    fn array_load(&mut self, dst: Local, arr: Local, index: Local, site: SiteId) {
        let a = self.use_(arr);
        let i = self.use_(index);
        let p = self.element(a, i, site);
        self.point();
        match self.pairable.filter(|plan| plan.at > self.at) {
            // The checks here, the load and its event later (`plan_pair`).
            Some(plan) => {
                self.pairable = None;
                self.deferred = Some(Deferred {
                    at: plan.at,
                    plan,
                    p,
                    a,
                    i,
                    dst,
                    site,
                });
            }
            None => self.load_element(p, a, i, dst, site),
        }
    }

    /// The load of the element at `p` (`a[i]`, checked) into `dst`, and its event.
    fn load_element(&mut self, p: Value, a: Value, i: Value, dst: Local, site: SiteId) {
        let ty = self.local_type(dst);
        let v = self.b.ins().load(ty, heap_mem(), p, Self::DATA);
        self.def(dst, v);
        if self.opts().access_hooks {
            let s = self.iconst(site.0 as i64);
            self.access_hook(Rt::EvRead, a, &[a, i, s], Filtering::Header, None, site, 0);
        }
    }

    fn array_store(&mut self, arr: Local, index: Local, src: Local, site: SiteId) {
        let a = self.use_(arr);
        let i = self.use_(index);
        let p = self.element(a, i, site);
        self.point();
        let v = self.use_(src);
        // The event before the store, as for fields (`write`).
        if self.opts().access_hooks {
            let bits = self.bits(v);
            let s = self.iconst(site.0 as i64);
            let elem = match &self.func.locals[arr.index()].ty {
                IrType::Array(e) => Some((**e).clone()),
                _ => None,
            };
            let args = [a, i, bits, s];
            let w = Some(elem.as_ref());
            let f = Filtering::Header;
            self.unless_paired(|t| t.access_hook(Rt::EvArrayWrite, a, &args, f, w, site, 0));
        }
        self.b.ins().store(heap_mem(), v, p, Self::DATA);
    }

    /// `hook`, the write's event, unless the write is the one of a pair (`Pair`)
    /// whose read applied its rule.
    fn unless_paired(&mut self, hook: impl FnOnce(&mut Self)) {
        match self.pair.take().filter(|p| p.store == self.at) {
            Some(p) => {
                let done = self.b.use_var(p.done);
                let (call, after) = (self.b.create_block(), self.b.create_block());
                self.b.ins().brif(done, after, &[], call, &[]);
                self.b.switch_to_block(call);
                hook(self);
                self.b.ins().jump(after, &[]);
                self.b.switch_to_block(after);
            }
            None => hook(self),
        }
    }

    fn array_length(&mut self, dst: Local, arr: Local, site: SiteId) {
        let a = self.use_(arr);
        self.null_check(a, err::NULL_LENGTH, site, 0, 0);
        let len = self.load_len(a);
        self.def(dst, len);
    }

    fn new_array(&mut self, dst: Local, elem: &IrType, dims: &[Local], site: SiteId) {
        let id = self.tables.new_arrays.len() as i64;
        self.tables.new_arrays.push(elem.clone());
        let vals: Vec<Value> = dims.iter().map(|d| self.use_(*d)).collect();
        let buf = self.buffer(&vals);
        let e = self.iconst(id);
        let n = self.iconst(vals.len() as i64);
        self.fallible(Rt::NewArray, &[e, buf, n], site, Some(dst));
    }

    /// A direct call (the interpreter's `Inst::Call`): receiver null check, depth
    /// check, scheduling point, shadow-stack push, step, call, pop, failure check.
    fn call(&mut self, dst: Option<Local>, f: FuncId, args: &[Local], site: SiteId) {
        let callee = self.env.prog.func(f);
        let mut vals = Vec::with_capacity(args.len() + 1);
        vals.push(self.ctx);
        for (i, a) in args.iter().enumerate() {
            let v = self.use_(*a);
            let want = cl_type(&callee.locals[i].ty).unwrap_or(I64);
            vals.push(self.coerce(v, want));
        }
        if callee.kind != FuncKind::Static {
            self.null_check(vals[1], err::NULL_CALL, site, f.0 as i64, 0);
        }
        let m = MemFlagsData::trusted();
        let depth = self.b.ins().load(I64, m, self.ctx, OFF_DEPTH);
        let max = self.thread_field(OFF_MAX_DEPTH);
        let over = self
            .b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, depth, max);
        let z = self.iconst(0);
        self.error_if(over, err::STACK_OVERFLOW, site, z, z);
        self.point();
        let frames = self.thread_field(OFF_FRAMES);
        let off = self.b.ins().ishl_imm_u(depth, 3);
        let slot = self.b.ins().iadd(frames, off);
        let packed = self.iconst(pack_frame(f, site) as i64);
        self.b.ins().store(m, packed, slot, 0);
        if self.opts().hooks && !self.opts().frame_events {
            // The frame at `depth` changed: the chain's call context is interned
            // again from there when the next event needs it (`JitThread::sync_stack`).
            let low = self.b.ins().load(I64, m, self.ctx, OFF_FRAMES_LOW);
            let low = self.b.ins().umin(low, depth);
            self.b.ins().store(m, low, self.ctx, OFF_FRAMES_LOW);
        }
        let one = self.iconst(1);
        let deeper = self.b.ins().iadd(depth, one);
        self.b.ins().store(m, deeper, self.ctx, OFF_DEPTH);
        if self.opts().count_steps {
            self.count_step(site);
        }
        let fr = self.func_ref(self.env.fn_ids[f.index()]);
        let call = self.b.ins().call(fr, &vals);
        let ret = self.b.inst_results(call).first().copied();
        self.b.ins().store(m, depth, self.ctx, OFF_DEPTH);
        self.check_failed();
        if let (Some(d), Some(v)) = (dst, ret) {
            self.def(d, v);
        }
    }

    fn fork(&mut self, dst: Local, f: FuncId, args: &[Local], site: SiteId) {
        let vals: Vec<Value> = args
            .iter()
            .map(|a| {
                let v = self.use_(*a);
                self.bits(v)
            })
            .collect();
        let buf = self.buffer(&vals);
        let fv = self.iconst(f.0 as i64);
        let n = self.iconst(vals.len() as i64);
        self.fallible(Rt::Fork, &[fv, buf, n], site, Some(dst));
    }

    /// A BigFoot check: one call per field group or range (`rtops::emit_check`); a
    /// field group's call behind the detector's inline same-epoch check when it
    /// offers one for field checks (`InlineDetector::field_checks`).
    fn check(&mut self, target: &CheckTarget, write: bool, site: SiteId) {
        if !self.opts().hooks {
            return;
        }
        if let Some(c) = self.opts().inline_check.filter(|c| c.field_checks) {
            // (object, representative slot, mask, kind) of each call.
            let groups: Vec<(Value, u32, u64, i64)> = match target {
                CheckTarget::Fields { obj, groups, .. } => {
                    let o = self.use_(*obj);
                    groups.iter().map(|(r, m)| (o, *r, *m, 0)).collect()
                }
                CheckTarget::Static { field } => vec![(self.statics(), field.0, 0, 2)],
                CheckTarget::Elem { arr, index } => {
                    let a = self.use_(*arr);
                    let i = self.use_(*index);
                    self.inline_element_check(c, a, i, write, site);
                    return;
                }
                CheckTarget::Range { arr, lo, hi, step } if c.guard.is_none() => {
                    let a = self.use_(*arr);
                    let (l, h) = (self.use_(*lo), self.use_(*hi));
                    self.inline_range_check(c, a, (l, h, *step), write, site);
                    return;
                }
                _ => Vec::new(),
            };
            if !groups.is_empty() {
                for (o, rep, mask, kind) in groups {
                    self.inline_field_check(c, o, rep, mask, kind, write, site);
                }
                return;
            }
        }
        let w = write as i64;
        let calls: Vec<[Value; 5]> = match target {
            CheckTarget::Fields { obj, groups, .. } => {
                let o = self.use_(*obj);
                groups
                    .iter()
                    .map(|(rep, mask)| {
                        let k = self.iconst(w);
                        let r = self.iconst(*rep as i64);
                        let m = self.iconst(*mask as i64);
                        let z = self.iconst(0);
                        [k, o, r, m, z]
                    })
                    .collect()
            }
            CheckTarget::Static { field } => {
                let k = self.iconst(2 + w);
                let z = self.iconst(0);
                let i = self.iconst(field.0 as i64);
                vec![[k, z, i, z, z]]
            }
            CheckTarget::Range { arr, lo, hi, step } => {
                let k = self.iconst(4 + w);
                let a = self.use_(*arr);
                let l = self.use_(*lo);
                let h = self.use_(*hi);
                let st = self.iconst(*step as i64);
                let s = self.iconst(site.0 as i64);
                let cont = self.b.create_block();
                let (l, h) = self.skip_vacuous_range(a, (l, h), cont);
                self.call_rt(Rt::Check, &[k, a, l, h, st, s]);
                self.b.ins().jump(cont, &[]);
                self.b.switch_to_block(cont);
                return;
            }
            CheckTarget::Elem { arr, index } => {
                let k = self.iconst(6 + w);
                let a = self.use_(*arr);
                let i = self.use_(*index);
                let z = self.iconst(0);
                vec![[k, a, i, z, z]]
            }
        };
        let s = self.iconst(site.0 as i64);
        for [k, a, x, y, z] in calls {
            self.call_rt(Rt::Check, &[k, a, x, y, z, s]);
        }
    }

    /// A BigFoot check site with an inline same-epoch test: its entry in the thread's
    /// inline counters, and the blocks of the call (a miss) and of the continuation.
    fn inline_check_site(
        &mut self,
        site: SiteId,
        write: bool,
        elements: bool,
        slot: u32,
    ) -> (usize, ir::Block, ir::Block) {
        let entry = self.tables.inline_sites.len();
        self.tables.inline_sites.push(InlineSite {
            site,
            is_write: write,
            check: true,
            elements,
            slot,
            capsule_own: false,
            paired: false,
        });
        (entry, self.b.create_block(), self.b.create_block())
    }

    /// One field-group (`kind` 0, `o` the object) or static (`kind` 2, `o` the
    /// statics object, `mask` 0) check with representative slot `rep`, behind the
    /// detector's inline same-epoch test: the call only when the test misses.
    #[allow(clippy::too_many_arguments)]
    fn inline_field_check(
        &mut self,
        c: InlineDetector,
        o: Value,
        rep: u32,
        mask: u64,
        kind: i64,
        write: bool,
        site: SiteId,
    ) {
        let (entry, call, cont) = self.inline_check_site(site, write, false, rep);
        // Defined before the tests: the call uses it, whichever test sends there.
        let r = self.iconst(rep as i64);
        if kind != 2 && c.check_masks.iter().any(|m| *m != 0) {
            // A check must never fault: a null object calls (the header test loads).
            let nonnull = self.b.create_block();
            self.b.ins().brif(o, nonnull, &[], call, &[]);
            self.b.switch_to_block(nonnull);
            self.check_filter_tests(c, o, entry, cont);
        }
        self.same_epoch_check(c, (o, r), None, write, site, entry, call, cont);
        self.b.switch_to_block(call);
        let k = self.iconst(kind + write as i64);
        let m = self.iconst(mask as i64);
        let z = self.iconst(0);
        let s = self.iconst(site.0 as i64);
        // Field group: (k, obj, rep, mask, 0); static: (k, 0, index, 0, 0).
        let x = if kind == 2 { z } else { o };
        self.call_rt(Rt::Check, &[k, x, r, m, z, s]);
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(cont);
    }

    /// An element check of `a[i]` behind the detector's inline same-epoch test on the
    /// element's cell, for an index inside the array (otherwise the runtime finds
    /// no element and delivers nothing): the call only when the test misses.
    fn inline_element_check(
        &mut self,
        c: InlineDetector,
        a: Value,
        i: Value,
        write: bool,
        site: SiteId,
    ) {
        let (entry, call, cont) = self.inline_check_site(site, write, true, 0);
        let test = self.b.create_block();
        // A placed check follows its access, so `a` is not null and `i` in bounds;
        // the test is only there because a check must never fault. A check that
        // fails it names no element: the runtime would drop it without an event
        // (`rtops::emit_check`), so it goes straight on.
        let ok = self.b.create_block();
        self.b.ins().brif(a, ok, &[], cont, &[]);
        self.b.switch_to_block(ok);
        let len = self.load_len(a);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, i, len);
        self.b.ins().brif(inside, test, &[], cont, &[]);
        self.b.switch_to_block(test);
        self.check_filter_tests(c, a, entry, cont);
        if c.guard.is_some() {
            self.same_epoch_check(c, (a, i), Some(a), write, site, entry, call, cont);
        } else {
            // A read first asks the array's read memo; the cell's tests then go on to
            // `done`, which marks the element in it.
            let (done, mark) = if write {
                (cont, None)
            } else {
                let (done, at) = self.read_memo(a, i, entry, cont);
                (done, Some(at))
            };
            // A miss of the cell's tests first tries the thread's covered range of
            // the check's kind.
            let cover = self.b.create_block();
            self.same_epoch_check(c, (a, i), Some(a), write, site, entry, cover, done);
            if let Some((word, bit)) = mark {
                // (No bit where no memo is current: nothing to store.)
                self.b.switch_to_block(done);
                let set = self.b.create_block();
                self.b.ins().brif(bit, set, &[], cont, &[]);
                self.b.switch_to_block(set);
                let m = MemFlagsData::trusted();
                let w = self.b.ins().load(I64, m, word, 0);
                let w = self.b.ins().bor(w, bit);
                self.b.ins().store(m, w, word, 0);
                self.b.ins().jump(cont, &[]);
            }
            self.b.set_cold_block(call);
            self.b.switch_to_block(cover);
            let (covered, other) = (self.b.create_block(), self.b.create_block());
            self.covered_inline(a, SiteSpan::Element(i), write, site, covered, other);
            self.b.switch_to_block(covered);
            self.count_inline(entry, INLINE_COVERED, a);
            self.b.ins().jump(cont, &[]);
            self.b.switch_to_block(other);
            let i1 = self.b.ins().iadd_imm_s(i, 1);
            self.covered_test(a, (i, i1, 1), write, site, entry, call, cont);
        }
        self.b.switch_to_block(call);
        let k = self.iconst(6 + write as i64);
        let z = self.iconst(0);
        let s = self.iconst(site.0 as i64);
        self.call_rt(Rt::Check, &[k, a, i, z, z, s]);
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(cont);
    }

    /// The test of the thread's read memo of array `a` for the element read check of
    /// `a[i]` (`i` inside the array; `analyses::pass::InlineCheck::FieldChecks`):
    /// where the memo is of the footprint's generation and holds the element, the
    /// check counts as decided by the same-epoch rule (`INLINE_MEMO`) and goes on to
    /// `cont`. Otherwise it leaves the builder where the cell's tests come next, and
    /// returns the block they go on to where they decide the check, with the memo
    /// word and bit that block must set: the element's, or where the memo is not
    /// current none (both 0).
    fn read_memo(
        &mut self,
        a: Value,
        i: Value,
        entry: usize,
        cont: ir::Block,
    ) -> (ir::Block, (Value, Value)) {
        use analyses::pass::{
            BIGFOOT_MEMO_OFF, BIGFOOT_MEMO_SLOTS, BIGFOOT_MEMO_WORDS, BIGFOOT_SITE_GEN_OFF,
        };
        let m = MemFlagsData::trusted();
        let table = self.thread_field(OFF_FINE);
        // `bigfoot_memo_slot(a)`.
        let slot = self.fine_slot(a, BIGFOOT_MEMO_SLOTS);
        let off = self
            .b
            .ins()
            .imul_imm_s(slot, (8 * BIGFOOT_MEMO_WORDS) as i64);
        let base = self.b.ins().iadd(table, off);
        let at = BIGFOOT_MEMO_OFF as i32;
        let arr = self.b.ins().load(I64, m, base, at);
        let gen_ = self.b.ins().load(I64, m, base, at + 8);
        let now = self
            .b
            .ins()
            .load(I64, m, table, BIGFOOT_SITE_GEN_OFF as i32);
        let same_arr = self.b.ins().icmp(IntCC::Equal, arr, a);
        let same_gen = self.b.ins().icmp(IntCC::Equal, gen_, now);
        let current = self.b.ins().band(same_arr, same_gen);
        let (memo, none, cells) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let word = self.b.append_block_param(cells, I64);
        let bit = self.b.append_block_param(cells, I64);
        self.b.ins().brif(current, memo, &[], none, &[]);
        self.b.switch_to_block(memo);
        let bits = self.b.ins().load(I64, m, base, at + 16);
        let wi = self.b.ins().ushr_imm_u(i, 6);
        let woff = self.b.ins().ishl_imm_u(wi, 3);
        let w_at = self.b.ins().iadd(bits, woff);
        let w = self.b.ins().load(I64, m, w_at, 0);
        let one = self.iconst(1);
        let k = self.b.ins().band_imm_s(i, 63);
        let b = self.b.ins().ishl(one, k);
        let held = self.b.ins().band(w, b);
        let hit = self.b.create_block();
        self.b
            .ins()
            .brif(held, hit, &[], cells, &[w_at.into(), b.into()]);
        self.b.switch_to_block(hit);
        self.count_inline(entry, INLINE_MEMO, a);
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(none);
        let zero = self.iconst(0);
        self.b.ins().jump(cells, &[zero.into(), zero.into()]);
        self.b.switch_to_block(cells);
        (self.b.create_block(), (word, bit))
    }

    /// `analyses::pass::bigfoot_covered` for the check of kind `write` at `site` of
    /// the element `a[i]` (`i` inside the array) or of the non-empty range
    /// `a[l..h:k]` (clamped to the array), inline: the thread's covered range of the
    /// kind holds it, or the thread's entry for the site holds the array and a range
    /// of step 1 around the element or the range, or the range's own start and step
    /// around it. It decides indirect accesses that come
    /// back to an element (a sparse product's `y[row[i]]`) and the checks an inner
    /// loop's exit repeats for each iteration of the outer one (IDEA's key
    /// schedule in crypt). Jumps to `covered` when it holds (the call's answer
    /// would be yes), else to `other`, where the call decides.
    fn covered_inline(
        &mut self,
        a: Value,
        span: SiteSpan,
        write: bool,
        site: SiteId,
        covered: ir::Block,
        other: ir::Block,
    ) {
        use analyses::pass::{
            BIGFOOT_COVER_OFF, BIGFOOT_COVER_WORDS, BIGFOOT_SITE_GEN_OFF, BIGFOOT_SITE_WORDS,
            BIGFOOT_SITES_OFF,
        };
        let m = MemFlagsData::trusted();
        let table = self.thread_field(OFF_FINE);
        // The first test: the thread's covered range of the kind, `[arr, lo, hi, _]`,
        // is of this array and holds the element or the range.
        let kind = (BIGFOOT_COVER_OFF + 8 * (BIGFOOT_COVER_WORDS / 2) * write as usize) as i32;
        let (held, entry) = (self.b.create_block(), self.b.create_block());
        let arr = self.b.ins().load(I64, m, table, kind);
        let same = self.b.ins().icmp(IntCC::Equal, arr, a);
        self.b.ins().brif(same, held, &[], entry, &[]);
        self.b.switch_to_block(held);
        let c_lo = self.b.ins().load(I64, m, table, kind + 8);
        let c_hi = self.b.ins().load(I64, m, table, kind + 16);
        let (l, h) = match span {
            SiteSpan::Element(i) => (i, self.b.ins().iadd_imm_s(i, 1)),
            SiteSpan::Range(l, h, _) => (l, h),
        };
        let from = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, c_lo, l);
        let to = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, h, c_hi);
        let inside = self.b.ins().band(from, to);
        self.b.ins().brif(inside, covered, &[], entry, &[]);
        self.b.switch_to_block(entry);
        let Some((slot, tag)) = analyses::pass::bigfoot_site_entry(site.0, write) else {
            self.b.ins().jump(other, &[]);
            return;
        };
        let at = (BIGFOOT_SITES_OFF + 8 * BIGFOOT_SITE_WORDS * slot) as i32;
        let tests = [self.b.create_block(), self.b.create_block()];
        // The entry is the site's, of this generation: `tag | gen << 32`.
        let gen_ = self
            .b
            .ins()
            .load(I64, m, table, BIGFOOT_SITE_GEN_OFF as i32);
        let g = self.b.ins().ishl_imm_u(gen_, 32);
        let want = self.b.ins().bor_imm_s(g, tag as i64);
        let got = self.b.ins().load(I64, m, table, at);
        let ok = self.b.ins().icmp(IntCC::Equal, got, want);
        self.b.ins().brif(ok, tests[0], &[], other, &[]);
        // Of this array (and, for an element, with step 1).
        self.b.switch_to_block(tests[0]);
        let arr = self.b.ins().load(I64, m, table, at + 8);
        let step = self.b.ins().load(I64, m, table, at + 24);
        let same = self.b.ins().icmp(IntCC::Equal, arr, a);
        let one = self.b.ins().icmp_imm_s(IntCC::Equal, step, 1);
        let both = match span {
            SiteSpan::Element(_) => self.b.ins().band(same, one),
            SiteSpan::Range(..) => same,
        };
        self.b.ins().brif(both, tests[1], &[], other, &[]);
        // With `lo`, `hi` the span's halves (below 2^32): `lo <= i && i + 1 <= hi`
        // for an element (`0 <= i`); `lo <= l && h <= hi` and either step 1 or the
        // range's own start and step for a range (`l < h`).
        self.b.switch_to_block(tests[1]);
        let e_span = self.b.ins().load(I64, m, table, at + 16);
        let lo = self.b.ins().band_imm_s(e_span, u32::MAX as i64);
        let hi = self.b.ins().ushr_imm_u(e_span, 32);
        let inside = match span {
            SiteSpan::Element(i) => {
                let from = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, lo, i);
                let to = self.b.ins().icmp(IntCC::UnsignedLessThan, i, hi);
                self.b.ins().band(from, to)
            }
            SiteSpan::Range(l, h, k) => {
                let from = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, lo, l);
                let to = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, h, hi);
                let within = self.b.ins().band(from, to);
                let own_step = self.b.ins().icmp_imm_s(IntCC::Equal, step, i64::from(k));
                let own_lo = self.b.ins().icmp(IntCC::Equal, l, lo);
                let own = self.b.ins().band(own_step, own_lo);
                let stepped = self.b.ins().bor(one, own);
                self.b.ins().band(within, stepped)
            }
        };
        self.b.ins().brif(inside, covered, &[], other, &[]);
    }

    /// Whether the thread's footprint already covers the non-empty range check
    /// `a[lo..hi:step]` at `site`: `analyses::pass::bigfoot_covered` on the thread's
    /// table (`Rt::Covered`, a call to a small function that takes no lock and no
    /// chain: inline, its two tests at every element and range check site made the
    /// generated code, and its compilation's peak memory, markedly larger). If so the
    /// check is counted as covered (`INLINE_COVERED`) and goes on to `cont`, otherwise
    /// to `call`.
    #[allow(clippy::too_many_arguments)]
    fn covered_test(
        &mut self,
        a: Value,
        (lo, hi, step): (Value, Value, u32),
        write: bool,
        site: SiteId,
        entry: usize,
        call: ir::Block,
        cont: ir::Block,
    ) {
        let table = self.thread_field(OFF_FINE);
        let st = self.iconst(i64::from(step.max(1)));
        let which = self.iconst(i64::from(site.0) | i64::from(write) << 32);
        let ok = self
            .call_rt(Rt::Covered, &[table, a, lo, hi, st, which])
            .expect("returns a word");
        let covered = self.b.create_block();
        self.b.ins().brif(ok, covered, &[], call, &[]);
        self.b.switch_to_block(covered);
        self.count_inline(entry, INLINE_COVERED, a);
        self.b.ins().jump(cont, &[]);
    }

    /// A range check of `a[lo..hi:step]` behind the filters' header tests and the
    /// covered-range test (`covered_test`): the call only when neither decides it
    /// (the runtime clamps the range to the array and drops an empty one).
    fn inline_range_check(
        &mut self,
        c: InlineDetector,
        a: Value,
        (lo, hi, step): (Value, Value, u32),
        write: bool,
        site: SiteId,
    ) {
        let (entry, call, cont) = self.inline_check_site(site, write, true, 0);
        self.b.set_cold_block(call);
        let (lo, hi) = self.skip_vacuous_range(a, (lo, hi), cont);
        self.check_filter_tests(c, a, entry, cont);
        let (covered, other) = (self.b.create_block(), self.b.create_block());
        let k = step.max(1);
        self.covered_inline(a, SiteSpan::Range(lo, hi, k), write, site, covered, other);
        self.b.switch_to_block(covered);
        self.count_inline(entry, INLINE_COVERED, a);
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(other);
        self.covered_test(a, (lo, hi, step), write, site, entry, call, cont);
        self.b.switch_to_block(call);
        let k = self.iconst(4 + write as i64);
        let st = self.iconst(step as i64);
        let s = self.iconst(site.0 as i64);
        self.call_rt(Rt::Check, &[k, a, lo, hi, st, s]);
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(cont);
    }

    /// Goes on to `cont` where the range check `a[lo..hi:_]` names no element (a null
    /// array, as a range register of a placed loop holds before its first access,
    /// or a range empty inside the array), which the runtime would drop without an
    /// event (`rtops::emit_check`); otherwise leaves the builder in a fresh block
    /// where `a` is not null, and returns the range clamped to the array as the
    /// runtime clamps it (not empty): what the pass sees, and what the site's
    /// entry holds.
    fn skip_vacuous_range(
        &mut self,
        a: Value,
        (lo, hi): (Value, Value),
        cont: ir::Block,
    ) -> (Value, Value) {
        let (nonnull, nonempty) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(a, nonnull, &[], cont, &[]);
        self.b.switch_to_block(nonnull);
        let len = self.load_len(a);
        let zero = self.iconst(0);
        let lo = self.b.ins().smax(lo, zero);
        let hi = self.b.ins().smin(hi, len);
        let some = self.b.ins().icmp(IntCC::SignedLessThan, lo, hi);
        self.b.ins().brif(some, nonempty, &[], cont, &[]);
        self.b.switch_to_block(nonempty);
        (lo, hi)
    }

    /// The tests of the passes in front of the detector that drop BigFoot's checks
    /// (`InlineDetector::check_masks`), in chain order, on object or array `o`: a
    /// check of an object whose header has none of a pass's bits is dropped there
    /// and counted for that pass (`inline_count(pass)` of the site's entry), and
    /// goes on to `cont`; `o` is not null (the caller tested it). Leaves the builder
    /// in the block where every test let the check through.
    fn check_filter_tests(&mut self, c: InlineDetector, o: Value, entry: usize, cont: ir::Block) {
        if c.check_masks.iter().all(|m| *m == 0) {
            return;
        }
        let h = self
            .b
            .ins()
            .load(I64, heap_mem(), o, (layout::HEADER * layout::WORD) as i32);
        for (pass, &mask) in c.check_masks.iter().enumerate() {
            if mask == 0 {
                continue;
            }
            let bits = self.b.ins().band_imm_s(h, mask as i64);
            let through = self.b.create_block();
            let dropped = self.b.create_block();
            self.b.ins().brif(bits, through, &[], dropped, &[]);
            self.b.switch_to_block(dropped);
            self.count_inline(entry, inline_count(pass), o);
            self.b.ins().jump(cont, &[]);
            self.b.switch_to_block(through);
        }
    }

    fn spec(&mut self, spec: Spec, end: bool, site: SiteId) {
        if !self.opts().hooks {
            return;
        }
        let which = (end as i64) * 2 + (spec == Spec::Atomic) as i64;
        let w = self.iconst(which);
        let s = self.iconst(site.0 as i64);
        self.call_rt(Rt::EvSpec, &[w, s]);
    }

    /// `ops::math`: exact operations inline (sqrt, fabs, floor are correctly rounded
    /// IEEE operations; integer abs/min/max), the rest through the very same Rust
    /// functions the interpreter calls.
    fn math(&mut self, dst: Local, func: MathFn, args: &[Local]) {
        let vals: Vec<Value> = args.iter().map(|a| self.use_(*a)).collect();
        let a = vals.first().copied().unwrap_or_else(|| self.iconst(0));
        let v = match func {
            MathFn::Sqrt => self.b.ins().sqrt(a),
            MathFn::AbsDouble => self.b.ins().fabs(a),
            MathFn::Floor => self.b.ins().floor(a),
            MathFn::AbsInt => {
                let neg = self.b.ins().ineg(a);
                let is_neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, a, 0);
                self.b.ins().select(is_neg, neg, a)
            }
            MathFn::MinInt => self.b.ins().smin(a, vals[1]),
            MathFn::MaxInt => self.b.ins().smax(a, vals[1]),
            _ => {
                let idx = MATH_FNS.iter().position(|m| *m == func).unwrap_or(0) as i64;
                let k = self.iconst(idx);
                let x = self.bits(a);
                let y = match vals.get(1) {
                    Some(v) => self.bits(*v),
                    None => self.iconst(0),
                };
                self.call_rt(Rt::Math, &[k, x, y]).expect("math result")
            }
        };
        self.def(dst, v);
    }

    fn print(&mut self, args: &[PrintArg], _site: SiteId) {
        let mut vals = Vec::new();
        let mut desc = Vec::with_capacity(args.len());
        for a in args {
            match a {
                PrintArg::Str(s) => desc.push(PrintArg::Str(s.clone())),
                PrintArg::Value(l, repr) => {
                    desc.push(PrintArg::Value(Local(vals.len() as u32), *repr));
                    let v = self.use_(*l);
                    vals.push(self.bits(v));
                }
            }
        }
        let id = self.tables.prints.len() as i64;
        self.tables.prints.push(desc);
        let buf = self.buffer(&vals);
        let i = self.iconst(id);
        self.call_rt(Rt::Print, &[i, buf]);
    }

    // ------------------------------------------------------------ terminators

    /// The target of an edge to IR block `to`: a back-edge (to an equal or lower
    /// index — every CFG cycle has one) first polls the stop flag.
    fn edge(&mut self, to: BlockId) -> Block {
        let head = self.heads[to.index()];
        if to.index() > self.cur {
            return head;
        }
        let poll = self.b.create_block();
        self.polls.push((poll, head));
        poll
    }

    /// Fill the poll blocks of the edges just emitted.
    fn fill_polls(&mut self) {
        for (poll, head) in std::mem::take(&mut self.polls) {
            self.b.switch_to_block(poll);
            let flag = self
                .b
                .ins()
                .load(types::I8, MemFlagsData::trusted(), self.abort_ptr, 0);
            self.b.ins().brif(flag, self.stop, &[], head, &[]);
        }
    }

    fn terminator(&mut self, term: &Terminator) {
        match term {
            Terminator::Jump(to) => {
                let t = self.edge(*to);
                self.b.ins().jump(t, &[]);
            }
            Terminator::Branch {
                cond,
                then_to,
                else_to,
            } => {
                let c = self.use_(*cond);
                let t = self.edge(*then_to);
                let e = self.edge(*else_to);
                self.b.ins().brif(c, t, &[], e, &[]);
            }
            Terminator::Return(v) => self.ret(*v),
            Terminator::Unreachable => {
                let site = block_site(self.func, self.cur);
                let c = self.iconst(err::UNREACHABLE);
                let s = self.iconst(site.0 as i64);
                let z = self.iconst(0);
                self.call_rt(Rt::Error, &[c, s, z, z]);
                self.b.ins().jump(self.fail, &[]);
            }
        }
    }

    /// End, release, exit (`runtime_fns::jit_epilogue`), the end of a counted capsule
    /// call, then return.
    fn ret(&mut self, v: Option<Local>) {
        let ret_ty = cl_type(&self.func.ret);
        let val = match (v, ret_ty) {
            (Some(l), Some(ty)) => {
                let x = self.use_(l);
                Some(self.coerce(x, ty))
            }
            (None, Some(ty)) => Some(self.zero(ty)),
            _ => None,
        };
        if self.needs_frame_hooks() {
            let f = self.iconst(self.fid.0 as i64);
            let bits = match val {
                Some(x) => self.bits(x),
                None => self.iconst(0),
            };
            let lock = match self.lock {
                Some(l) => l,
                None => self.iconst(0),
            };
            let (call, done) = (self.b.create_block(), self.b.create_block());
            let lazy = self.lazy();
            let not_elided = if lazy { self.b.create_block() } else { call };
            if self.elidable() {
                let elided =
                    self.b
                        .ins()
                        .icmp_imm_s(IntCC::Equal, lock, crate::rtops::ELIDED_FRAME as i64);
                self.b.ins().brif(elided, done, &[], not_elided, &[]);
            } else {
                self.b.ins().jump(not_elided, &[]);
            }
            if lazy {
                self.b.switch_to_block(not_elided);
                let recorded =
                    self.b
                        .ins()
                        .icmp_imm_s(IntCC::Equal, lock, crate::rtops::LAZY_FRAME as i64);
                let pop = self.b.create_block();
                self.b.ins().brif(recorded, pop, &[], call, &[]);
                self.b.switch_to_block(pop);
                self.pop_lazy_frame(call, done);
            }
            self.b.switch_to_block(call);
            self.call_rt(Rt::Epilogue, &[f, bits, lock]);
            self.check_failed();
            self.b.ins().jump(done, &[]);
            self.b.switch_to_block(done);
        }
        if self.counts_capsule_call() {
            self.add_capsule_calls(-1);
        }
        match val {
            Some(x) => self.b.ins().return_(&[x]),
            None => self.b.ins().return_(&[]),
        };
    }
}

/// The signature of `rt`'s stub that keeps every register (`Rt::keeps_registers`):
/// the thread context, then `rt`'s own parameters (less the context), no result;
/// `preserve_all`.
pub fn keeper_signature(module: &JITModule, rt: Rt) -> ir::Signature {
    let mut sig = module.make_signature();
    sig.call_conv = isa::CallConv::PreserveAll;
    sig.params.push(AbiParam::new(I64));
    let own = &rt.sig().1[rt.takes_ctx() as usize..];
    for p in own {
        sig.params.push(AbiParam::new(ty_of(*p)));
    }
    sig
}

/// The stub of `rt` (the runtime function `target`) that keeps every register:
/// a `preserve_all` function, whose call clobbers no register of its caller, that
/// saves what the native call inside it clobbers, passes its parameters on and
/// stores the result, if any, in the thread's `answer` (a `preserve_all`
/// function returns none).
pub fn keeper(
    module: &mut JITModule,
    func: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
    rt: Rt,
    target: cranelift_module::FuncId,
) {
    func.signature = keeper_signature(module, rt);
    func.name = ir::UserFuncName::user(2, target.as_u32());
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let args = if rt.takes_ctx() {
        &params[..]
    } else {
        &params[1..]
    };
    let fr = module.declare_func_in_func(target, b.func);
    let call = b.ins().call(fr, args);
    if let Some(&r) = b.inst_results(call).first() {
        b.ins()
            .store(MemFlagsData::trusted(), r, params[0], OFF_ANSWER);
    }
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(module.target_config());
}

/// The entry of a thread: `fn(ctx, args: *const u64)` loading each parameter from
/// `args` and calling the compiled function.
pub fn trampoline(
    module: &mut JITModule,
    func: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
    f: &Function,
    target: cranelift_module::FuncId,
) {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(I64));
    sig.params.push(AbiParam::new(I64));
    func.signature = sig;
    func.name = ir::UserFuncName::user(1, target.as_u32());
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let ctx = b.block_params(entry)[0];
    let args = b.block_params(entry)[1];
    let fr = module.declare_func_in_func(target, b.func);
    let mut vals = vec![ctx];
    for (i, l) in f.locals[..f.num_params as usize].iter().enumerate() {
        let ty = cl_type(&l.ty).unwrap_or(I64);
        vals.push(
            b.ins()
                .load(ty, MemFlagsData::trusted(), args, (i * 8) as i32),
        );
    }
    b.ins().call(fr, &vals);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(module.target_config());
}
