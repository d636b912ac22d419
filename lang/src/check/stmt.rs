//! Checking of function bodies and statements, including scopes, loop context,
//! the `final` rule and reachability (Java's "can complete normally", simplified).

use super::{Checker, FieldSym, FnState, Scopes};
use crate::ast::{self, Block, ExprKind, Stmt, StmtKind};
use crate::ir::{FuncId, FuncKind, Local, LocalDecl, Type};
use crate::lexer::AssignOp;
use crate::span::Span;
use crate::tast::{Place, TBody, TExpr, TExprKind, TPrintArg, TStmt};

impl Checker<'_, '_> {
    pub(super) fn check_body(&mut self, func: FuncId) -> TBody {
        let f = &self.program.funcs[func.index()];
        let decl = self.funcs[func.index()].decl.clone();
        let mut scopes = Scopes::default();
        scopes.push();
        for (i, l) in f.locals.iter().enumerate() {
            if let Some(n) = &l.name {
                scopes.declare(n, Local(i as u32));
            }
        }
        self.cur = Some(FnState {
            class: f.class,
            kind: f.kind,
            ret: f.ret.clone(),
            locals: f.locals.clone(),
            scopes,
            loops: Vec::new(),
        });
        let (stmts, completes) = self.block(&decl.body);
        let end = Span {
            file: decl.body.span.file,
            start: decl.body.span.end.saturating_sub(1),
            end: decl.body.span.end,
        };
        let st = self.cur.take().expect("function state is set above");
        if completes && st.ret != Type::Void {
            self.error(
                end,
                format!("missing return statement in method `{}`", decl.name.name),
            );
        }
        self.program.funcs[func.index()].locals = st.locals;
        TBody { stmts }
    }

    pub(super) fn st(&mut self) -> &mut FnState {
        self.cur
            .as_mut()
            .expect("checking happens inside a function")
    }

    pub(super) fn lookup_local(&self, name: &str) -> Option<Local> {
        let st = self.cur.as_ref()?;
        st.scopes.lookup(name)
    }

    pub(super) fn local_type(&self, l: Local) -> Type {
        self.cur
            .as_ref()
            .map_or(Type::Void, |st| st.locals[l.index()].ty.clone())
    }

    fn declare_local(&mut self, name: &ast::Ident, ty: Type) -> Local {
        if self.lookup_local(&name.name).is_some() {
            self.error(
                name.span,
                format!("variable `{}` is already defined in this method", name.name),
            );
        }
        let st = self.st();
        let l = Local(st.locals.len() as u32);
        st.locals.push(LocalDecl {
            name: Some(name.name.clone()),
            ty,
        });
        st.scopes.declare(&name.name, l);
        l
    }

    /// A block in a new scope. Returns the statements and whether the block can
    /// complete normally.
    fn block(&mut self, b: &Block) -> (Vec<TStmt>, bool) {
        self.st().scopes.push();
        let r = self.stmts(&b.stmts);
        self.st().scopes.pop();
        r
    }

    fn stmts(&mut self, stmts: &[Stmt]) -> (Vec<TStmt>, bool) {
        let mut out = Vec::new();
        let mut completes = true;
        let mut reported = false;
        for s in stmts {
            if !completes && !reported && !matches!(s.kind, StmtKind::Empty) {
                self.error(s.span, "unreachable statement");
                reported = true;
            }
            let (t, c) = self.stmt(s);
            out.extend(t);
            completes &= c;
        }
        (out, completes)
    }

    /// A statement as the body of `if`/`while`/`for`: its own scope.
    fn sub_stmt(&mut self, s: &Stmt) -> (Vec<TStmt>, bool) {
        self.st().scopes.push();
        let r = self.stmt(s);
        self.st().scopes.pop();
        r
    }

    fn cond(&mut self, e: &ast::Expr, what: &str) -> Option<TExpr> {
        let t = self.expr(e)?;
        if t.ty != Type::Boolean {
            let found = self.type_name(&t.ty);
            self.error(
                e.span,
                format!("the condition of `{what}` must be `boolean`, found `{found}`"),
            );
            return None;
        }
        Some(t)
    }

    fn stmt(&mut self, s: &Stmt) -> (Vec<TStmt>, bool) {
        let one = |t: Option<TStmt>| (t.into_iter().collect::<Vec<_>>(), true);
        match &s.kind {
            StmtKind::Empty => (Vec::new(), true),
            StmtKind::Local { ty, vars } => (self.local_decl(ty.as_ref(), vars), true),
            StmtKind::Expr(e) => one(self.expr_stmt(e)),
            StmtKind::Assign {
                target,
                op,
                value,
                op_span,
            } => one(self.assign(target, *op, value, *op_span)),
            StmtKind::IncDec {
                target,
                inc,
                op_span,
            } => one(self.inc_dec(target, *inc, *op_span)),
            StmtKind::If { cond, then, els } => {
                let c = self.cond(cond, "if");
                let (t, tc) = self.sub_stmt(then);
                let (e, ec) = match els {
                    Some(e) => self.sub_stmt(e),
                    None => (Vec::new(), true),
                };
                let st = c.map(|cond| TStmt::If {
                    cond,
                    then: t,
                    els: e,
                });
                (st.into_iter().collect(), tc || ec)
            }
            StmtKind::While { cond, body } => {
                let forever = matches!(cond.kind, ExprKind::Bool(true));
                let c = self.cond(cond, "while");
                let (b, has_break) = self.loop_body(body);
                let st = c.map(|c| TStmt::Loop {
                    cond: if forever { None } else { Some(c) },
                    body: b,
                    update: Vec::new(),
                });
                (st.into_iter().collect(), !forever || has_break)
            }
            StmtKind::For {
                init,
                cond,
                update,
                body,
            } => {
                self.st().scopes.push();
                let mut out = Vec::new();
                for i in init {
                    out.extend(self.stmt(i).0);
                }
                let forever = cond
                    .as_ref()
                    .is_none_or(|c| matches!(c.kind, ExprKind::Bool(true)));
                let c = match cond {
                    Some(c) if !forever => self.cond(c, "for").map(Some),
                    Some(c) => self.cond(c, "for").map(|_| None),
                    None => Some(None),
                };
                let (b, has_break) = self.loop_body(body);
                let mut u = Vec::new();
                for s in update {
                    u.extend(self.stmt(s).0);
                }
                self.st().scopes.pop();
                if let Some(cond) = c {
                    out.push(TStmt::Loop {
                        cond,
                        body: b,
                        update: u,
                    });
                }
                (vec![TStmt::Block(out)], !forever || has_break)
            }
            StmtKind::Break | StmtKind::Continue => {
                let is_break = matches!(s.kind, StmtKind::Break);
                match self.st().loops.last_mut() {
                    Some(has_break) => {
                        if is_break {
                            *has_break = true;
                        }
                        (
                            vec![if is_break {
                                TStmt::Break
                            } else {
                                TStmt::Continue
                            }],
                            false,
                        )
                    }
                    None => {
                        let kw = if is_break { "break" } else { "continue" };
                        self.error(s.span, format!("`{kw}` outside of a loop"));
                        (Vec::new(), false)
                    }
                }
            }
            StmtKind::Return(e) => (self.ret(s.span, e.as_ref()).into_iter().collect(), false),
            StmtKind::Block(b) => {
                let (t, c) = self.block(b);
                (vec![TStmt::Block(t)], c)
            }
            StmtKind::Print { args } => one(self.print(s.span, args)),
            StmtKind::Assert(e) => {
                let c = self.cond(e, "assert");
                one(c.map(|cond| TStmt::Assert { cond, span: s.span }))
            }
            StmtKind::Synchronized { lock, body } => {
                let l = self.expr(lock);
                if let Some(l) = &l
                    && (!l.ty.is_ref() || l.ty == Type::Null)
                {
                    let found = self.type_name(&l.ty);
                    self.error(
                        lock.span,
                        format!("`synchronized` needs an object, found `{found}`"),
                    );
                }
                let (b, c) = self.block(body);
                let st = l
                    .filter(|l| l.ty.is_ref() && l.ty != Type::Null)
                    .map(|lock| TStmt::Synchronized {
                        lock,
                        body: b,
                        span: s.span,
                    });
                (st.into_iter().collect(), c)
            }
            StmtKind::Spec { spec, body } => {
                let (b, c) = self.block(body);
                (
                    vec![TStmt::Spec {
                        spec: *spec,
                        body: b,
                        span: s.span,
                    }],
                    c,
                )
            }
        }
    }

    /// Returns the body and whether a `break` targets this loop.
    fn loop_body(&mut self, body: &Stmt) -> (Vec<TStmt>, bool) {
        self.st().loops.push(false);
        let (b, _) = self.sub_stmt(body);
        let has_break = self.st().loops.pop().unwrap_or(false);
        (b, has_break)
    }

    fn local_decl(
        &mut self,
        ty: Option<&ast::TypeExpr>,
        vars: &[(ast::Ident, Option<ast::Expr>)],
    ) -> Vec<TStmt> {
        let declared = match ty {
            Some(t) => match self.resolve_value_type(t, "a variable") {
                Some(t) => Some(t),
                None => {
                    // Still declare the names (as `int`) so later uses do not cascade.
                    for (name, _) in vars {
                        self.declare_local(name, Type::Int);
                    }
                    return Vec::new();
                }
            },
            None => None,
        };
        let mut out = Vec::new();
        for (name, init) in vars {
            let init = init.as_ref().map(|e| (e, self.expr(e)));
            let ty = match (&declared, &init) {
                (Some(t), _) => Some(t.clone()),
                (None, None) => {
                    self.error(
                        name.span,
                        format!("`var {}` needs an initialiser", name.name),
                    );
                    None
                }
                (None, Some((_, None))) => None,
                (None, Some((e, Some(t)))) => match t.ty {
                    Type::Null => {
                        self.error(
                            e.span,
                            format!("cannot infer the type of `{}` from `null`", name.name),
                        );
                        None
                    }
                    ref t => Some(t.clone()),
                },
            };
            // On failure the name is still declared (as `int`) to avoid cascades.
            let init = match (init, &ty) {
                (Some((e, Some(t))), Some(ty)) => self.coerce(t, ty, e.span, || {
                    format!("the initialiser of `{}`", name.name)
                }),
                _ => None,
            };
            let ty = ty.unwrap_or(Type::Int);
            let local = self.declare_local(name, ty);
            out.push(TStmt::Let { local, init });
        }
        out
    }

    fn expr_stmt(&mut self, e: &ast::Expr) -> Option<TStmt> {
        match &e.kind {
            ExprKind::Call { .. } | ExprKind::New { .. } | ExprKind::Fork { .. } => {
                let t = self.expr_any(e)?;
                Some(TStmt::Expr(t))
            }
            _ => {
                self.error(e.span, "not a statement (only calls, `new`, `fork`, assignments and `x++`/`x--` can be used as statements)");
                None
            }
        }
    }

    /// Resolve an assignment target, enforcing the `final` rule.
    fn place(&mut self, target: &ast::Expr) -> Option<(Place, Type)> {
        match &target.kind {
            ExprKind::Name(id) => {
                if let Some(l) = self.lookup_local(&id.name) {
                    return Some((Place::Local(l), self.local_type(l)));
                }
                let class = self.st().class;
                match self.infos[class.index()].fields.get(&id.name).copied() {
                    Some(FieldSym::Instance(f)) => {
                        let this = self.this_expr(id.span, &id.name)?;
                        self.check_final_instance(f, true, id.span)?;
                        let ty = self.program.field(f).ty.clone();
                        Some((
                            Place::Field {
                                obj: this,
                                field: f,
                                span: id.span,
                            },
                            ty,
                        ))
                    }
                    Some(FieldSym::Static(s)) => {
                        self.check_final_static(s, id.span)?;
                        let ty = self.program.statics[s.index()].ty.clone();
                        Some((
                            Place::Static {
                                id: s,
                                span: id.span,
                            },
                            ty,
                        ))
                    }
                    None => {
                        self.error(id.span, format!("unknown variable `{}`", id.name));
                        None
                    }
                }
            }
            ExprKind::Field { obj, name } => {
                if let Some(c) = self.class_ref(obj) {
                    let s = self.static_field(c, name)?;
                    self.check_final_static(s, name.span)?;
                    let ty = self.program.statics[s.index()].ty.clone();
                    return Some((
                        Place::Static {
                            id: s,
                            span: name.span,
                        },
                        ty,
                    ));
                }
                let o = self.expr(obj)?;
                if let Type::Array(_) = o.ty
                    && name.name == "length"
                {
                    self.error(name.span, "cannot assign to the length of an array");
                    return None;
                }
                let f = self.instance_field(&o, name)?;
                let on_this = matches!(obj.kind, ExprKind::This);
                self.check_final_instance(f, on_this, name.span)?;
                let ty = self.program.field(f).ty.clone();
                Some((
                    Place::Field {
                        obj: o,
                        field: f,
                        span: name.span,
                    },
                    ty,
                ))
            }
            ExprKind::Index {
                arr,
                index,
                bracket,
            } => {
                let (a, i, elem) = self.index(arr, index)?;
                Some((
                    Place::Array {
                        arr: a,
                        index: i,
                        span: *bracket,
                    },
                    elem,
                ))
            }
            _ => {
                self.error(target.span, "cannot assign to this expression");
                None
            }
        }
    }

    /// `final` rule for instance fields: only in the constructor of the field's class,
    /// on `this`, and only if the field has no initialiser.
    fn check_final_instance(
        &mut self,
        f: crate::ir::FieldRef,
        on_this: bool,
        span: Span,
    ) -> Option<()> {
        let field = self.program.field(f);
        if !field.is_final {
            return Some(());
        }
        let name = field.name.clone();
        let has_init = field.init.is_some();
        let class_name = self.class_name(f.class).to_string();
        let st = self.cur.as_ref()?;
        let in_ctor = st.kind == FuncKind::Constructor && st.class == f.class;
        if has_init {
            self.error(
                span,
                format!("cannot assign to final field `{name}`: it already has an initialiser"),
            );
            return None;
        }
        if !(in_ctor && on_this) {
            self.error(
                span,
                format!("cannot assign to final field `{name}` (final fields may be assigned only in the constructor of `{class_name}`, on `this`)"),
            );
            return None;
        }
        Some(())
    }

    fn check_final_static(&mut self, s: crate::ir::StaticId, span: Span) -> Option<()> {
        let sf = &self.program.statics[s.index()];
        if sf.is_final {
            let msg = format!(
                "cannot assign to final static field `{}.{}` (it is set only by its initialiser)",
                self.class_name(sf.class),
                sf.name
            );
            self.error(span, msg);
            return None;
        }
        Some(())
    }

    fn assign(
        &mut self,
        target: &ast::Expr,
        op: Option<AssignOp>,
        value: &ast::Expr,
        op_span: Span,
    ) -> Option<TStmt> {
        let place = self.place(target);
        let v = self.expr(value);
        let (place, ty) = place?;
        let v = v?;
        match op {
            None => {
                let value = self.coerce(v, &ty, value.span, || "the assigned value".to_string())?;
                Some(TStmt::Assign {
                    place,
                    op: None,
                    value,
                    op_span,
                })
            }
            Some(op) => {
                let bop = ast::BinaryOp::from_assign(op);
                let (ir_op, operand_ty, result_ty) = self.arith_op(bop, &ty, &v.ty, op_span)?;
                if result_ty != ty || operand_ty != ty {
                    let (t, rt) = (self.type_name(&ty), self.type_name(&result_ty));
                    self.error(
                        op_span,
                        format!(
                            "`{}` would store a result of type `{rt}` into a variable of type `{t}` (use an explicit cast)",
                            op.symbol()
                        ),
                    );
                    return None;
                }
                let value =
                    self.coerce(v, &operand_ty, value.span, || "the operand".to_string())?;
                Some(TStmt::Assign {
                    place,
                    op: Some(ir_op),
                    value,
                    op_span,
                })
            }
        }
    }

    fn inc_dec(&mut self, target: &ast::Expr, inc: bool, op_span: Span) -> Option<TStmt> {
        let (place, ty) = self.place(target)?;
        let (op, one) = match (&ty, inc) {
            (Type::Int, true) => (crate::ir::BinOp::IAdd, crate::ir::Const::Int(1)),
            (Type::Int, false) => (crate::ir::BinOp::ISub, crate::ir::Const::Int(1)),
            (Type::Double, true) => (crate::ir::BinOp::FAdd, crate::ir::Const::Double(1.0)),
            (Type::Double, false) => (crate::ir::BinOp::FSub, crate::ir::Const::Double(1.0)),
            _ => {
                let t = self.type_name(&ty);
                let sym = if inc { "++" } else { "--" };
                self.error(
                    op_span,
                    format!("`{sym}` needs an `int` or `double` variable, found `{t}`"),
                );
                return None;
            }
        };
        Some(TStmt::Assign {
            place,
            op: Some(op),
            value: TExpr {
                kind: TExprKind::Const(one),
                ty,
                span: op_span,
            },
            op_span,
        })
    }

    fn ret(&mut self, span: Span, e: Option<&ast::Expr>) -> Option<TStmt> {
        let st = self.cur.as_ref()?;
        let ret = st.ret.clone();
        let is_ctor = st.kind == FuncKind::Constructor;
        match (e, ret == Type::Void) {
            (None, true) => Some(TStmt::Return(None)),
            (None, false) => {
                let t = self.type_name(&ret);
                self.error(
                    span,
                    format!("missing return value (the method returns `{t}`)"),
                );
                None
            }
            (Some(e), true) => {
                let what = if is_ctor {
                    "a constructor"
                } else {
                    "a void method"
                };
                self.error(e.span, format!("cannot return a value from {what}"));
                None
            }
            (Some(e), false) => {
                let t = self.expr(e)?;
                let t = self.coerce(t, &ret, e.span, || "the return value".to_string())?;
                Some(TStmt::Return(Some(t)))
            }
        }
    }

    fn print(&mut self, span: Span, args: &[ast::Expr]) -> Option<TStmt> {
        let mut out = Vec::new();
        let mut ok = true;
        for a in args {
            if let ExprKind::Str(s) = &a.kind {
                out.push(TPrintArg::Str(s.clone()));
                continue;
            }
            match self.expr(a) {
                Some(t) if matches!(t.ty, Type::Int | Type::Double | Type::Boolean) => {
                    out.push(TPrintArg::Value(t));
                }
                Some(t) => {
                    let ty = self.type_name(&t.ty);
                    self.error(
                        a.span,
                        format!("cannot print a value of type `{ty}` (print accepts int, double, boolean and string literals)"),
                    );
                    ok = false;
                }
                None => ok = false,
            }
        }
        ok.then_some(TStmt::Print { args: out, span })
    }
}
