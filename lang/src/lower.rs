//! Lowering of the typed tree to the IR control-flow graph.
//!
//! Short-circuit operators and `?:` become blocks; loops get header/body/update/exit
//! blocks; `synchronized` and `deterministic`/`atomic` blocks push a *cleanup* so that
//! the matching `MonitorExit`/`SpecEnd` is emitted on every exit path (normal end,
//! `return`, and `break`/`continue` leaving the block). Code after a terminator goes to
//! a fresh block without predecessors; unreachable blocks are pruned at the end.

use crate::check::Checked;
use crate::ir::{
    BinOp, Block, BlockId, Const, FuncId, Function, Inst, Local, LocalDecl, PrintArg, Program,
    SiteId, Spec, Terminator, Type,
};
use crate::sites::SiteTable;
use crate::span::Span;
use crate::tast::{Place, TBody, TExpr, TExprKind, TPrintArg, TStmt};

/// Lower every function body and finish the program's site table. Also returns the
/// span of every site (parallel to `Program::sites`).
pub fn lower(checked: Checked, mut sites: SiteTable<'_>) -> (Program, Vec<Span>) {
    let Checked {
        mut program,
        bodies,
    } = checked;
    for (i, body) in bodies.into_iter().enumerate() {
        let func = &mut program.funcs[i];
        lower_function(FuncId(i as u32), func, body, &mut sites);
    }
    let (table, spans) = sites.into_parts();
    program.sites = table;
    (program, spans)
}

#[derive(Clone, Copy)]
enum Cleanup {
    Monitor(Local, SiteId),
    Spec(Spec, SiteId),
}

struct LoopCtx {
    break_to: BlockId,
    continue_to: BlockId,
    /// Number of cleanups active outside the loop.
    cleanup_depth: usize,
}

struct FnLower<'a, 's> {
    func: FuncId,
    locals: Vec<LocalDecl>,
    blocks: Vec<Block>,
    cur: BlockId,
    loops: Vec<LoopCtx>,
    cleanups: Vec<Cleanup>,
    sites: &'a mut SiteTable<'s>,
}

fn lower_function(id: FuncId, func: &mut Function, body: TBody, sites: &mut SiteTable<'_>) {
    let mut l = FnLower {
        func: id,
        locals: std::mem::take(&mut func.locals),
        blocks: vec![Block::default()],
        cur: BlockId(0),
        loops: Vec::new(),
        cleanups: Vec::new(),
        sites,
    };
    l.stmts(&body.stmts);
    if matches!(l.block().term, Terminator::Unreachable) {
        // Falling off the end: only possible for void functions (the checker rejects a
        // missing return); a dead block here is pruned below.
        l.terminate(Terminator::Return(None));
    }
    let ret = func.ret.clone();
    func.blocks = prune(l.blocks, &ret, &mut l.locals);
    func.locals = l.locals;
}

/// Thread jumps through empty blocks, drop blocks unreachable from the entry and
/// renumber the rest (in depth-first order from the entry).
fn prune(blocks: Vec<Block>, ret: &Type, locals: &mut Vec<LocalDecl>) -> Vec<Block> {
    let n = blocks.len();
    // Final target of a jump to `b`, skipping empty blocks that only jump on.
    let thread = |mut b: BlockId| {
        for _ in 0..n {
            match &blocks[b.index()] {
                Block {
                    insts,
                    term: Terminator::Jump(t),
                } if insts.is_empty() && *t != b => b = *t,
                _ => break,
            }
        }
        b
    };
    let succs = |b: &Block| -> Vec<BlockId> {
        match &b.term {
            Terminator::Jump(t) => vec![thread(*t)],
            Terminator::Branch {
                then_to, else_to, ..
            } => vec![thread(*then_to), thread(*else_to)],
            Terminator::Return(_) | Terminator::Unreachable => Vec::new(),
        }
    };
    let mut map: Vec<Option<BlockId>> = vec![None; n];
    let mut order = Vec::new();
    let mut stack = vec![BlockId(0)];
    while let Some(b) = stack.pop() {
        if map[b.index()].is_some() {
            continue;
        }
        map[b.index()] = Some(BlockId(order.len() as u32));
        order.push(b);
        stack.extend(succs(&blocks[b.index()]).into_iter().rev());
    }
    let remap = |b: BlockId| map[thread(b).index()].unwrap_or(BlockId(0));
    let mut out = Vec::with_capacity(order.len());
    for b in order {
        let mut block = blocks[b.index()].clone();
        block.term = match block.term {
            Terminator::Jump(t) => Terminator::Jump(remap(t)),
            Terminator::Branch {
                cond,
                then_to,
                else_to,
            } => Terminator::Branch {
                cond,
                then_to: remap(then_to),
                else_to: remap(else_to),
            },
            Terminator::Return(v) => Terminator::Return(v),
            Terminator::Unreachable => {
                // Defensive: never produce an unterminated block.
                if *ret == Type::Void {
                    Terminator::Return(None)
                } else {
                    let t = Local(locals.len() as u32);
                    locals.push(LocalDecl {
                        name: None,
                        ty: ret.clone(),
                    });
                    block.insts.push(Inst::Const {
                        dst: t,
                        value: default_value(ret),
                    });
                    Terminator::Return(Some(t))
                }
            }
        };
        out.push(block);
    }
    out
}

fn default_value(ty: &Type) -> Const {
    match ty {
        Type::Int => Const::Int(0),
        Type::Double => Const::Double(0.0),
        Type::Boolean => Const::Bool(false),
        _ => Const::Null,
    }
}

impl FnLower<'_, '_> {
    fn site(&mut self, span: Span) -> SiteId {
        self.sites.intern(span, Some(self.func))
    }

    fn temp(&mut self, ty: Type) -> Local {
        let l = Local(self.locals.len() as u32);
        self.locals.push(LocalDecl { name: None, ty });
        l
    }

    fn block(&mut self) -> &mut Block {
        &mut self.blocks[self.cur.index()]
    }

    fn new_block(&mut self) -> BlockId {
        self.blocks.push(Block::default());
        BlockId(self.blocks.len() as u32 - 1)
    }

    fn emit(&mut self, inst: Inst) {
        self.block().insts.push(inst);
    }

    /// Terminate the current block and continue in a fresh (so far unreachable) one.
    fn terminate(&mut self, term: Terminator) {
        self.block().term = term;
        self.cur = self.new_block();
    }

    fn switch_to(&mut self, b: BlockId) {
        self.cur = b;
    }

    fn jump(&mut self, to: BlockId) {
        self.block().term = Terminator::Jump(to);
    }

    fn branch(&mut self, cond: Local, then_to: BlockId, else_to: BlockId) {
        self.block().term = Terminator::Branch {
            cond,
            then_to,
            else_to,
        };
    }

    // ---- statements ----------------------------------------------------------------

    fn stmts(&mut self, stmts: &[TStmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &TStmt) {
        match s {
            TStmt::Let { local, init } => match init {
                Some(e) => self.expr_to(e, *local),
                None => {
                    let value = default_value(&self.locals[local.index()].ty);
                    self.emit(Inst::Const { dst: *local, value });
                }
            },
            TStmt::Expr(e) => {
                self.expr_effect(e);
            }
            TStmt::Assign {
                place,
                op,
                value,
                op_span,
            } => self.assign(place, *op, value, *op_span),
            TStmt::If { cond, then, els } => {
                let c = self.expr(cond);
                let (t, e, join) = (self.new_block(), self.new_block(), self.new_block());
                self.branch(c, t, e);
                self.switch_to(t);
                self.stmts(then);
                self.jump(join);
                self.switch_to(e);
                self.stmts(els);
                self.jump(join);
                self.switch_to(join);
            }
            TStmt::Loop { cond, body, update } => {
                let header = self.new_block();
                let body_b = self.new_block();
                let update_b = if update.is_empty() {
                    header
                } else {
                    self.new_block()
                };
                let exit = self.new_block();
                self.jump(header);
                self.switch_to(header);
                match cond {
                    Some(c) => {
                        let c = self.expr(c);
                        self.branch(c, body_b, exit);
                    }
                    None => self.jump(body_b),
                }
                self.switch_to(body_b);
                self.loops.push(LoopCtx {
                    break_to: exit,
                    continue_to: update_b,
                    cleanup_depth: self.cleanups.len(),
                });
                self.stmts(body);
                self.loops.pop();
                self.jump(update_b);
                if !update.is_empty() {
                    self.switch_to(update_b);
                    self.stmts(update);
                    self.jump(header);
                }
                self.switch_to(exit);
            }
            TStmt::Break | TStmt::Continue => {
                let Some(ctx) = self.loops.last() else {
                    return; // rejected by the checker
                };
                let (to, depth) = match s {
                    TStmt::Break => (ctx.break_to, ctx.cleanup_depth),
                    _ => (ctx.continue_to, ctx.cleanup_depth),
                };
                self.run_cleanups(depth);
                self.terminate(Terminator::Jump(to));
            }
            TStmt::Return(e) => {
                let v = e.as_ref().map(|e| self.expr(e));
                self.run_cleanups(0);
                self.terminate(Terminator::Return(v));
            }
            TStmt::Block(b) => self.stmts(b),
            TStmt::Print { args, span } => {
                let mut out = Vec::new();
                for a in args {
                    out.push(match a {
                        TPrintArg::Str(s) => PrintArg::Str(s.clone()),
                        TPrintArg::Value(e) => {
                            let v = self.expr(e);
                            PrintArg::Value(v, e.ty.repr())
                        }
                    });
                }
                let site = self.site(*span);
                self.emit(Inst::Print { args: out, site });
            }
            TStmt::Assert { cond, span } => {
                let c = self.expr(cond);
                let site = self.site(*span);
                self.emit(Inst::Assert { cond: c, site });
            }
            TStmt::Synchronized { lock, body, span } => {
                let v = self.expr(lock);
                // A variable used as the lock is pinned in its own local: the body may
                // reassign the variable (other expressions already yield a fresh temp).
                let obj = if matches!(lock.kind, TExprKind::Local(_)) {
                    let obj = self.temp(lock.ty.clone());
                    self.emit(Inst::Copy { dst: obj, src: v });
                    obj
                } else {
                    v
                };
                let site = self.site(*span);
                self.emit(Inst::MonitorEnter { obj, site });
                self.cleanups.push(Cleanup::Monitor(obj, site));
                self.stmts(body);
                self.cleanups.pop();
                self.emit(Inst::MonitorExit { obj, site });
            }
            TStmt::Spec { spec, body, span } => {
                let site = self.site(*span);
                self.emit(Inst::SpecBegin { spec: *spec, site });
                self.cleanups.push(Cleanup::Spec(*spec, site));
                self.stmts(body);
                self.cleanups.pop();
                self.emit(Inst::SpecEnd { spec: *spec, site });
            }
        }
    }

    /// Emit the exits of every active cleanup above `depth`, innermost first.
    fn run_cleanups(&mut self, depth: usize) {
        for i in (depth..self.cleanups.len()).rev() {
            let inst = match self.cleanups[i] {
                Cleanup::Monitor(obj, site) => Inst::MonitorExit { obj, site },
                Cleanup::Spec(spec, site) => Inst::SpecEnd { spec, site },
            };
            self.emit(inst);
        }
    }

    fn assign(&mut self, place: &Place, op: Option<BinOp>, value: &TExpr, op_span: Span) {
        match place {
            Place::Local(l) if op.is_none() => self.expr_to(value, *l),
            Place::Local(l) => {
                let v = self.combine(op, Some(*l), value, op_span);
                self.emit(Inst::Copy { dst: *l, src: v });
            }
            Place::Field { obj, field, span } => {
                let o = self.expr(obj);
                let site = self.site(*span);
                let old = op.map(|_| {
                    let dst = self.temp(value.ty.clone());
                    self.emit(Inst::GetField {
                        dst,
                        obj: o,
                        field: *field,
                        site,
                    });
                    dst
                });
                let v = self.combine(op, old, value, op_span);
                self.emit(Inst::PutField {
                    obj: o,
                    field: *field,
                    src: v,
                    site,
                });
            }
            Place::Static { id, span } => {
                let site = self.site(*span);
                let old = op.map(|_| {
                    let dst = self.temp(value.ty.clone());
                    self.emit(Inst::GetStatic {
                        dst,
                        field: *id,
                        site,
                    });
                    dst
                });
                let v = self.combine(op, old, value, op_span);
                self.emit(Inst::PutStatic {
                    field: *id,
                    src: v,
                    site,
                });
            }
            Place::Array { arr, index, span } => {
                let a = self.expr(arr);
                let i = self.expr(index);
                let site = self.site(*span);
                let old = op.map(|_| {
                    let dst = self.temp(value.ty.clone());
                    self.emit(Inst::ArrayLoad {
                        dst,
                        arr: a,
                        index: i,
                        site,
                    });
                    dst
                });
                let v = self.combine(op, old, value, op_span);
                self.emit(Inst::ArrayStore {
                    arr: a,
                    index: i,
                    src: v,
                    site,
                });
            }
        }
    }

    /// The value to store: `value`, or `old op value` for a compound assignment (the old
    /// value was read before `value` is evaluated, as in Java).
    fn combine(
        &mut self,
        op: Option<BinOp>,
        old: Option<Local>,
        value: &TExpr,
        op_span: Span,
    ) -> Local {
        let v = self.expr(value);
        match (op, old) {
            (Some(op), Some(old)) => {
                let dst = self.temp(value.ty.clone());
                let site = self.site(op_span);
                self.emit(Inst::Binary {
                    dst,
                    op,
                    lhs: old,
                    rhs: v,
                    site,
                });
                dst
            }
            _ => v,
        }
    }

    // ---- expressions ---------------------------------------------------------------

    /// Evaluate for effect (void calls and discarded values).
    fn expr_effect(&mut self, e: &TExpr) {
        if e.ty == Type::Void {
            self.void_expr(e);
        } else {
            self.expr(e);
        }
    }

    fn args(&mut self, args: &[TExpr]) -> Vec<Local> {
        args.iter().map(|a| self.expr(a)).collect()
    }

    fn void_expr(&mut self, e: &TExpr) {
        let site = self.site(e.span);
        match &e.kind {
            TExprKind::Call { func, args } => {
                let args = self.args(args);
                self.emit(Inst::Call {
                    dst: None,
                    func: *func,
                    args,
                    site,
                });
            }
            TExprKind::Join(t) => {
                let thread = self.expr(t);
                self.emit(Inst::Join { thread, site });
            }
            TExprKind::Wait(o) => {
                let obj = self.expr(o);
                self.emit(Inst::Wait { obj, site });
            }
            TExprKind::Notify { obj, all } => {
                let obj = self.expr(obj);
                self.emit(Inst::Notify {
                    obj,
                    all: *all,
                    site,
                });
            }
            TExprKind::Await(b) => {
                let barrier = self.expr(b);
                self.emit(Inst::BarrierAwait { barrier, site });
            }
            _ => {
                self.expr(e);
            }
        }
    }

    /// Evaluate `e` and store it in the variable `dst`. Expressions whose last
    /// instruction reads every operand before writing its result are evaluated directly
    /// into `dst`; the others (`new` with a constructor, `&&`, `||`, `?:`) write their
    /// result early and could clobber a `dst` that they read, so they go through a temp.
    fn expr_to(&mut self, e: &TExpr, dst: Local) {
        match e.kind {
            TExprKind::New { .. } | TExprKind::Logic { .. } | TExprKind::Cond { .. } => {
                let v = self.expr(e);
                self.emit(Inst::Copy { dst, src: v });
            }
            _ => self.expr_into(e, dst),
        }
    }

    /// Evaluate a valued expression into a local.
    fn expr(&mut self, e: &TExpr) -> Local {
        if let TExprKind::Local(l) = e.kind {
            return l;
        }
        let dst = self.temp(e.ty.clone());
        self.expr_into(e, dst);
        dst
    }

    fn expr_into(&mut self, e: &TExpr, dst: Local) {
        match &e.kind {
            TExprKind::Const(c) => self.emit(Inst::Const { dst, value: *c }),
            TExprKind::Local(l) => self.emit(Inst::Copy { dst, src: *l }),
            TExprKind::GetField { obj, field } => {
                let o = self.expr(obj);
                let site = self.site(e.span);
                self.emit(Inst::GetField {
                    dst,
                    obj: o,
                    field: *field,
                    site,
                });
            }
            TExprKind::GetStatic(id) => {
                let site = self.site(e.span);
                self.emit(Inst::GetStatic {
                    dst,
                    field: *id,
                    site,
                });
            }
            TExprKind::ArrayLoad { arr, index } => {
                let a = self.expr(arr);
                let i = self.expr(index);
                let site = self.site(e.span);
                self.emit(Inst::ArrayLoad {
                    dst,
                    arr: a,
                    index: i,
                    site,
                });
            }
            TExprKind::ArrayLength(arr) => {
                let a = self.expr(arr);
                let site = self.site(e.span);
                self.emit(Inst::ArrayLength { dst, arr: a, site });
            }
            TExprKind::New { class, ctor, args } => {
                let site = self.site(e.span);
                self.emit(Inst::New {
                    dst,
                    class: *class,
                    site,
                });
                if let Some(ctor) = ctor {
                    let mut a = vec![dst];
                    a.extend(self.args(args));
                    self.emit(Inst::Call {
                        dst: None,
                        func: *ctor,
                        args: a,
                        site,
                    });
                }
            }
            TExprKind::NewArray { elem, dims } => {
                let dims = self.args(dims);
                let site = self.site(e.span);
                self.emit(Inst::NewArray {
                    dst,
                    elem: elem.clone(),
                    dims,
                    site,
                });
            }
            TExprKind::NewBarrier(n) => {
                let parties = self.expr(n);
                let site = self.site(e.span);
                self.emit(Inst::NewBarrier { dst, parties, site });
            }
            TExprKind::Call { func, args } => {
                let args = self.args(args);
                let site = self.site(e.span);
                self.emit(Inst::Call {
                    dst: Some(dst),
                    func: *func,
                    args,
                    site,
                });
            }
            TExprKind::Fork { func, args } => {
                let args = self.args(args);
                let site = self.site(e.span);
                self.emit(Inst::Fork {
                    dst,
                    func: *func,
                    args,
                    site,
                });
            }
            TExprKind::ThreadId => self.emit(Inst::ThreadId { dst }),
            TExprKind::Math { func, args } => {
                let args = self.args(args);
                self.emit(Inst::Math {
                    dst,
                    func: *func,
                    args,
                });
            }
            TExprKind::Unary { op, expr } => {
                let src = self.expr(expr);
                self.emit(Inst::Unary { dst, op: *op, src });
            }
            TExprKind::Binary { op, lhs, rhs } => {
                let l = self.expr(lhs);
                let r = self.expr(rhs);
                let site = self.site(e.span);
                self.emit(Inst::Binary {
                    dst,
                    op: *op,
                    lhs: l,
                    rhs: r,
                    site,
                });
            }
            TExprKind::Convert { conv, expr } => {
                let src = self.expr(expr);
                self.emit(Inst::Convert {
                    dst,
                    conv: *conv,
                    src,
                });
            }
            // `dst` is always a fresh temp here (see `expr_to`), so the operands can be
            // evaluated straight into it.
            TExprKind::Logic { and, lhs, rhs } => {
                // dst = lhs; if (and ? dst : !dst) dst = rhs;
                self.expr_to(lhs, dst);
                let (eval_rhs, join) = (self.new_block(), self.new_block());
                if *and {
                    self.branch(dst, eval_rhs, join);
                } else {
                    self.branch(dst, join, eval_rhs);
                }
                self.switch_to(eval_rhs);
                self.expr_to(rhs, dst);
                self.jump(join);
                self.switch_to(join);
            }
            TExprKind::Cond { cond, then, els } => {
                let c = self.expr(cond);
                let (t, f, join) = (self.new_block(), self.new_block(), self.new_block());
                self.branch(c, t, f);
                self.switch_to(t);
                self.expr_to(then, dst);
                self.jump(join);
                self.switch_to(f);
                self.expr_to(els, dst);
                self.jump(join);
                self.switch_to(join);
            }
            // Void-typed built-ins never reach value position (the checker rejects it).
            TExprKind::Join(_)
            | TExprKind::Wait(_)
            | TExprKind::Notify { .. }
            | TExprKind::Await(_) => {
                self.void_expr(e);
            }
        }
    }
}
