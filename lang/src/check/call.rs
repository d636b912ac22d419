//! Checking of calls: user methods (static and instance), `wait`/`notify`/`notifyAll`,
//! `join`, `await`, `Thread.id()`, `Math.*` overloads and `new`.

use super::expr::{ClassRef, is_numeric, mk};
use super::{Checker, OBJECT_METHODS};
use crate::ast::{self, Expr};
use crate::ir::{FuncId, FuncKind, MathFn, Type};
use crate::span::Span;
use crate::tast::{TExpr, TExprKind};

impl Checker<'_, '_> {
    /// Check arguments against parameter types (arity first).
    pub(super) fn args(
        &mut self,
        callee: &str,
        params: &[Type],
        args: &[Expr],
        span: Span,
    ) -> Option<Vec<TExpr>> {
        if params.len() != args.len() {
            let s = if params.len() == 1 { "" } else { "s" };
            let were = if args.len() == 1 { "was" } else { "were" };
            self.error(
                span,
                format!(
                    "`{callee}` takes {} argument{s} but {} {were} given",
                    params.len(),
                    args.len()
                ),
            );
            for a in args {
                self.expr_any(a);
            }
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for (i, (a, p)) in args.iter().zip(params).enumerate() {
            match self.expr(a) {
                Some(t) => match self
                    .coerce(t, p, a.span, || format!("argument {} of `{callee}`", i + 1))
                {
                    Some(t) => out.push(t),
                    None => ok = false,
                },
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    pub(super) fn user_call(
        &mut self,
        func: FuncId,
        recv: Option<TExpr>,
        args: &[Expr],
        span: Span,
    ) -> Option<TExpr> {
        let callee = self.program.func_name(func);
        let params = self.funcs[func.index()].params.clone();
        let mut targs: Vec<TExpr> = recv.into_iter().collect();
        targs.extend(self.args(&callee, &params, args, span)?);
        let ret = self.program.funcs[func.index()].ret.clone();
        Some(mk(TExprKind::Call { func, args: targs }, ret, span))
    }

    pub(super) fn call(
        &mut self,
        recv: Option<&Expr>,
        name: &ast::Ident,
        args: &[Expr],
    ) -> Option<TExpr> {
        let span = name.span;
        let Some(recv) = recv else {
            // `m(args)`: a method of the current class, or `wait()`/`notify()`/
            // `notifyAll()` on `this`.
            let class = self.cur.as_ref()?.class;
            if OBJECT_METHODS.contains(&name.name.as_str()) {
                let this = self.this_expr(span, &name.name)?;
                return self.object_method(this, name, args);
            }
            let Some(func) = self.infos[class.index()].methods.get(&name.name).copied() else {
                let cname = self.class_name(class).to_string();
                self.error(
                    span,
                    format!("class `{cname}` has no method `{}`", name.name),
                );
                return None;
            };
            let this = if self.program.funcs[func.index()].kind == FuncKind::Method {
                Some(self.this_expr(span, &name.name)?)
            } else {
                None
            };
            return self.user_call(func, this, args, span);
        };
        if let Some(c) = self.class_ref(recv) {
            return self.static_call(c, name, args);
        }
        let r = self.expr(recv)?;
        let m = name.name.as_str();
        if OBJECT_METHODS.contains(&m) && r.ty.is_ref() && r.ty != Type::Null {
            return self.object_method(r, name, args);
        }
        match &r.ty {
            Type::Thread if m == "join" => {
                self.args("join", &[], args, span)?;
                Some(mk(TExprKind::Join(Box::new(r)), Type::Void, span))
            }
            Type::Barrier if m == "await" => {
                self.args("await", &[], args, span)?;
                Some(mk(TExprKind::Await(Box::new(r)), Type::Void, span))
            }
            Type::Class(c) => {
                let c = *c;
                let cname = self.class_name(c).to_string();
                let Some(func) = self.infos[c.index()].methods.get(m).copied() else {
                    self.error(span, format!("class `{cname}` has no method `{m}`"));
                    return None;
                };
                if self.program.funcs[func.index()].kind == FuncKind::Static {
                    self.error(
                        span,
                        format!("`{m}` is a static method; call it as `{cname}.{m}(…)`"),
                    );
                    return None;
                }
                self.user_call(func, Some(r), args, span)
            }
            t => {
                let tn = self.type_name(t);
                self.error(span, format!("type `{tn}` has no method `{m}`"));
                None
            }
        }
    }

    /// `o.wait()`, `o.notify()`, `o.notifyAll()` (any object).
    pub(super) fn object_method(
        &mut self,
        obj: TExpr,
        name: &ast::Ident,
        args: &[Expr],
    ) -> Option<TExpr> {
        self.args(&name.name, &[], args, name.span)?;
        let obj = Box::new(obj);
        let kind = match name.name.as_str() {
            "wait" => TExprKind::Wait(obj),
            "notify" => TExprKind::Notify { obj, all: false },
            _ => TExprKind::Notify { obj, all: true },
        };
        Some(mk(kind, Type::Void, name.span))
    }

    pub(super) fn static_call(
        &mut self,
        c: ClassRef,
        name: &ast::Ident,
        args: &[Expr],
    ) -> Option<TExpr> {
        let span = name.span;
        let m = name.name.as_str();
        match c {
            ClassRef::Math => self.math(name, args),
            ClassRef::Thread if m == "id" => {
                self.args("Thread.id", &[], args, span)?;
                Some(mk(TExprKind::ThreadId, Type::Int, span))
            }
            ClassRef::Thread | ClassRef::Barrier => {
                let cname = self.class_ref_name(c);
                self.error(span, format!("`{cname}` has no static method `{m}`"));
                None
            }
            ClassRef::User(c) => {
                let cname = self.class_name(c).to_string();
                let Some(func) = self.infos[c.index()].methods.get(m).copied() else {
                    self.error(span, format!("class `{cname}` has no method `{m}`"));
                    return None;
                };
                if self.program.funcs[func.index()].kind != FuncKind::Static {
                    self.error(
                        span,
                        format!("`{m}` is an instance method of `{cname}`; call it on an object"),
                    );
                    return None;
                }
                self.user_call(func, None, args, span)
            }
        }
    }

    /// `Math.f(args)`; `abs`, `min`, `max` are overloaded on int/double.
    pub(super) fn math(&mut self, name: &ast::Ident, args: &[Expr]) -> Option<TExpr> {
        let span = name.span;
        let (arity, f) = match name.name.as_str() {
            "sqrt" => (1, MathFn::Sqrt),
            "abs" => (1, MathFn::AbsDouble),
            "sin" => (1, MathFn::Sin),
            "cos" => (1, MathFn::Cos),
            "exp" => (1, MathFn::Exp),
            "log" => (1, MathFn::Log),
            "floor" => (1, MathFn::Floor),
            "pow" => (2, MathFn::Pow),
            "min" => (2, MathFn::MinDouble),
            "max" => (2, MathFn::MaxDouble),
            m => {
                self.error(
                    span,
                    format!("`Math.{m}` does not exist (available: sqrt abs sin cos exp log pow floor min max)"),
                );
                return None;
            }
        };
        let callee = format!("Math.{}", name.name);
        if args.len() != arity {
            let params = vec![Type::Double; arity];
            return self.args(&callee, &params, args, span).and(None);
        }
        let mut targs = Vec::new();
        for a in args {
            let t = self.expr(a)?;
            if !is_numeric(&t.ty) {
                let tn = self.type_name(&t.ty);
                self.error(a.span, format!("`{callee}` needs a number, found `{tn}`"));
                return None;
            }
            targs.push(t);
        }
        let all_int = targs.iter().all(|t| t.ty == Type::Int);
        let (f, ty) = match f {
            MathFn::AbsDouble if all_int => (MathFn::AbsInt, Type::Int),
            MathFn::MinDouble if all_int => (MathFn::MinInt, Type::Int),
            MathFn::MaxDouble if all_int => (MathFn::MaxInt, Type::Int),
            f => (f, Type::Double),
        };
        let targs = if ty == Type::Double {
            let mut out = Vec::new();
            for (t, a) in targs.into_iter().zip(args) {
                out.push(self.coerce(t, &Type::Double, a.span, || "the argument".into())?);
            }
            out
        } else {
            targs
        };
        Some(mk(
            TExprKind::Math {
                func: f,
                args: targs,
            },
            ty,
            span,
        ))
    }

    pub(super) fn new_object(&mut self, class: &ast::Ident, args: &[Expr]) -> Option<TExpr> {
        let span = class.span;
        match class.name.as_str() {
            "Barrier" => {
                let a = self.args("Barrier", &[Type::Int], args, span)?;
                let n = a.into_iter().next()?;
                return Some(mk(TExprKind::NewBarrier(Box::new(n)), Type::Barrier, span));
            }
            "Thread" => {
                self.error(
                    span,
                    "threads cannot be created with `new`; use `fork e.m(…)`",
                );
                return None;
            }
            _ => {}
        }
        let Some(c) = self.class_ids.get(&class.name).copied() else {
            self.error(span, format!("unknown class `{}`", class.name));
            return None;
        };
        let ctor = self.program.classes[c.index()].ctor;
        let targs = match ctor {
            Some(f) => {
                let params = self.funcs[f.index()].params.clone();
                self.args(&class.name, &params, args, span)?
            }
            None if !args.is_empty() => {
                self.error(
                    span,
                    format!(
                        "class `{}` has no constructor, so `new {}()` takes no arguments",
                        class.name, class.name
                    ),
                );
                return None;
            }
            None => Vec::new(),
        };
        Some(mk(
            TExprKind::New {
                class: c,
                ctor,
                args: targs,
            },
            Type::Class(c),
            span,
        ))
    }
}
