//! Checking of expressions: name resolution, operator typing with Java's binary numeric
//! promotion (int → double only), fields, arrays, casts and `fork` (calls themselves
//! are in `call`).

use super::{Checker, FieldSym, array_of};
use crate::ast::{self, BinaryOp, Expr, ExprKind, UnaryOp};
use crate::ir::{
    BinOp, ClassId, Cmp, Const, Conv, FieldRef, FuncKind, Local, StaticId, Type, UnOp,
};
use crate::span::Span;
use crate::tast::{TExpr, TExprKind};

/// What a bare name in receiver position denotes when it is not a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum ClassRef {
    User(ClassId),
    Math,
    Thread,
    Barrier,
}

pub(super) fn is_numeric(t: &Type) -> bool {
    matches!(t, Type::Int | Type::Double)
}

pub(super) fn mk(kind: TExprKind, ty: Type, span: Span) -> TExpr {
    TExpr { kind, ty, span }
}

impl Checker<'_, '_> {
    /// An expression that must have a value (not `void`).
    pub(super) fn expr(&mut self, e: &Expr) -> Option<TExpr> {
        let t = self.expr_any(e)?;
        if t.ty == Type::Void {
            self.error(e.span, "this expression has no value (type `void`)");
            return None;
        }
        Some(t)
    }

    /// Convert `e` to type `to` (identity, int → double, null → any reference).
    pub(super) fn coerce(
        &mut self,
        mut e: TExpr,
        to: &Type,
        span: Span,
        what: impl FnOnce() -> String,
    ) -> Option<TExpr> {
        if &e.ty == to {
            return Some(e);
        }
        match (&e.ty, to) {
            (Type::Int, Type::Double) => Some(mk(
                TExprKind::Convert {
                    conv: Conv::IntToDouble,
                    expr: Box::new(e),
                },
                Type::Double,
                span,
            )),
            (Type::Null, t) if t.is_ref() => {
                e.ty = to.clone();
                Some(e)
            }
            _ => {
                let (found, expected) = (self.type_name(&e.ty), self.type_name(to));
                self.error(
                    span,
                    format!(
                        "mismatched types: {} must be `{expected}`, found `{found}`",
                        what()
                    ),
                );
                None
            }
        }
    }

    pub(super) fn this_expr(&mut self, span: Span, member: &str) -> Option<TExpr> {
        let st = self.cur.as_ref()?;
        if st.kind == FuncKind::Static {
            self.error(
                span,
                format!(
                    "cannot use instance member `{member}` in a static method (there is no `this`)"
                ),
            );
            return None;
        }
        Some(mk(TExprKind::Local(Local(0)), Type::Class(st.class), span))
    }

    /// `e` as a class name in receiver position (`C.f`, `C.m()`, `Math.sqrt`), if it is
    /// a bare name that is not a variable or a field of the current class.
    pub(super) fn class_ref(&self, e: &Expr) -> Option<ClassRef> {
        let ExprKind::Name(id) = &e.kind else {
            return None;
        };
        if self.lookup_local(&id.name).is_some() {
            return None;
        }
        if let Some(st) = &self.cur
            && self.infos[st.class.index()].fields.contains_key(&id.name)
        {
            return None;
        }
        match id.name.as_str() {
            "Math" => Some(ClassRef::Math),
            "Thread" => Some(ClassRef::Thread),
            "Barrier" => Some(ClassRef::Barrier),
            n => self.class_ids.get(n).map(|c| ClassRef::User(*c)),
        }
    }

    pub(super) fn class_ref_name(&self, c: ClassRef) -> String {
        match c {
            ClassRef::User(c) => self.class_name(c).to_string(),
            ClassRef::Math => "Math".into(),
            ClassRef::Thread => "Thread".into(),
            ClassRef::Barrier => "Barrier".into(),
        }
    }

    /// `C.name` as a static field.
    pub(super) fn static_field(&mut self, c: ClassRef, name: &ast::Ident) -> Option<StaticId> {
        let cname = self.class_ref_name(c);
        let ClassRef::User(c) = c else {
            self.error(name.span, format!("`{cname}` has no field `{}`", name.name));
            return None;
        };
        match self.infos[c.index()].fields.get(&name.name).copied() {
            Some(FieldSym::Static(s)) => Some(s),
            Some(FieldSym::Instance(_)) => {
                self.error(
                    name.span,
                    format!(
                        "`{}` is an instance field of `{cname}`; it needs an object, not the class",
                        name.name
                    ),
                );
                None
            }
            None => {
                self.error(
                    name.span,
                    format!("class `{cname}` has no field `{}`", name.name),
                );
                None
            }
        }
    }

    /// `o.name` as an instance field of `o`'s class.
    pub(super) fn instance_field(&mut self, o: &TExpr, name: &ast::Ident) -> Option<FieldRef> {
        let Type::Class(c) = o.ty else {
            let t = self.type_name(&o.ty);
            self.error(
                name.span,
                format!("type `{t}` has no field `{}`", name.name),
            );
            return None;
        };
        match self.infos[c.index()].fields.get(&name.name).copied() {
            Some(FieldSym::Instance(f)) => Some(f),
            Some(FieldSym::Static(_)) => {
                let cname = self.class_name(c).to_string();
                self.error(
                    name.span,
                    format!("`{0}` is a static field; write `{cname}.{0}`", name.name),
                );
                None
            }
            None => {
                let cname = self.class_name(c).to_string();
                self.error(
                    name.span,
                    format!("class `{cname}` has no field `{}`", name.name),
                );
                None
            }
        }
    }

    /// `arr[index]`: returns the checked array, index and the element type.
    pub(super) fn index(&mut self, arr: &Expr, index: &Expr) -> Option<(TExpr, TExpr, Type)> {
        let a = self.expr(arr);
        let i = self.expr(index);
        let (a, i) = (a?, i?);
        let Type::Array(elem) = a.ty.clone() else {
            let t = self.type_name(&a.ty);
            self.error(
                arr.span,
                format!("cannot index a value of type `{t}` (not an array)"),
            );
            return None;
        };
        let i = self.int_operand(i, index.span, "an array index")?;
        Some((a, i, *elem))
    }

    pub(super) fn int_operand(&mut self, e: TExpr, span: Span, what: &str) -> Option<TExpr> {
        if e.ty != Type::Int {
            let t = self.type_name(&e.ty);
            self.error(span, format!("{what} must be `int`, found `{t}`"));
            return None;
        }
        Some(e)
    }

    /// Typing of arithmetic, bitwise and shift operators: the IR operator, the operand
    /// type both sides are converted to, and the result type.
    pub(super) fn arith_op(
        &mut self,
        op: BinaryOp,
        l: &Type,
        r: &Type,
        span: Span,
    ) -> Option<(BinOp, Type, Type)> {
        use BinaryOp as B;
        let both_int = *l == Type::Int && *r == Type::Int;
        let numeric = is_numeric(l) && is_numeric(r);
        let both_bool = *l == Type::Boolean && *r == Type::Boolean;
        let r = match op {
            B::Add | B::Sub | B::Mul | B::Div | B::Rem if numeric => {
                let (i, f) = match op {
                    B::Add => (BinOp::IAdd, BinOp::FAdd),
                    B::Sub => (BinOp::ISub, BinOp::FSub),
                    B::Mul => (BinOp::IMul, BinOp::FMul),
                    B::Div => (BinOp::IDiv, BinOp::FDiv),
                    _ => (BinOp::IRem, BinOp::FRem),
                };
                if both_int {
                    (i, Type::Int, Type::Int)
                } else {
                    (f, Type::Double, Type::Double)
                }
            }
            B::And | B::Or | B::Xor if both_int => (
                match op {
                    B::And => BinOp::IAnd,
                    B::Or => BinOp::IOr,
                    _ => BinOp::IXor,
                },
                Type::Int,
                Type::Int,
            ),
            B::And | B::Or | B::Xor if both_bool => (
                match op {
                    B::And => BinOp::BAnd,
                    B::Or => BinOp::BOr,
                    _ => BinOp::BXor,
                },
                Type::Boolean,
                Type::Boolean,
            ),
            B::Shl | B::Shr | B::UShr if both_int => (
                match op {
                    B::Shl => BinOp::Shl,
                    B::Shr => BinOp::Shr,
                    _ => BinOp::UShr,
                },
                Type::Int,
                Type::Int,
            ),
            _ => {
                let (lt, rt) = (self.type_name(l), self.type_name(r));
                self.error(
                    span,
                    format!(
                        "operator `{}` cannot be applied to `{lt}` and `{rt}`",
                        op.symbol()
                    ),
                );
                return None;
            }
        };
        Some(r)
    }

    /// Typing of comparisons: the IR operator and the operand type.
    fn compare_op(
        &mut self,
        op: BinaryOp,
        l: &Type,
        r: &Type,
        span: Span,
    ) -> Option<(BinOp, Option<Type>)> {
        use BinaryOp as B;
        let cmp = match op {
            B::Eq => Cmp::Eq,
            B::Ne => Cmp::Ne,
            B::Lt => Cmp::Lt,
            B::Le => Cmp::Le,
            B::Gt => Cmp::Gt,
            _ => Cmp::Ge,
        };
        let eq = matches!(op, B::Eq | B::Ne);
        if *l == Type::Int && *r == Type::Int {
            return Some((BinOp::ICmp(cmp), Some(Type::Int)));
        }
        if is_numeric(l) && is_numeric(r) {
            return Some((BinOp::FCmp(cmp), Some(Type::Double)));
        }
        if eq && *l == Type::Boolean && *r == Type::Boolean {
            let op = if op == B::Eq { BinOp::BEq } else { BinOp::BNe };
            return Some((op, Some(Type::Boolean)));
        }
        if eq && l.is_ref() && r.is_ref() && (l == r || *l == Type::Null || *r == Type::Null) {
            let op = if op == B::Eq {
                BinOp::RefEq
            } else {
                BinOp::RefNe
            };
            return Some((op, None));
        }
        let (lt, rt) = (self.type_name(l), self.type_name(r));
        let msg = if eq && l.is_ref() && r.is_ref() {
            format!(
                "cannot compare `{lt}` and `{rt}` with `{}` (unrelated types)",
                op.symbol()
            )
        } else {
            format!(
                "operator `{}` cannot be applied to `{lt}` and `{rt}`",
                op.symbol()
            )
        };
        self.error(span, msg);
        None
    }

    /// Any expression, including `void` calls.
    pub(super) fn expr_any(&mut self, e: &Expr) -> Option<TExpr> {
        let span = e.span;
        Some(match &e.kind {
            ExprKind::Int(v) => mk(TExprKind::Const(Const::Int(*v)), Type::Int, span),
            ExprKind::Double(v) => mk(TExprKind::Const(Const::Double(*v)), Type::Double, span),
            ExprKind::Bool(b) => mk(TExprKind::Const(Const::Bool(*b)), Type::Boolean, span),
            ExprKind::Null => mk(TExprKind::Const(Const::Null), Type::Null, span),
            ExprKind::Str(_) => {
                self.error(
                    span,
                    "string literals are only allowed as arguments of `print`",
                );
                return None;
            }
            ExprKind::This => {
                let st = self.cur.as_ref()?;
                if st.kind == FuncKind::Static {
                    self.error(span, "`this` cannot be used in a static method");
                    return None;
                }
                mk(TExprKind::Local(Local(0)), Type::Class(st.class), span)
            }
            ExprKind::Name(id) => return self.name(id),
            ExprKind::Field { obj, name } => return self.field(obj, name),
            ExprKind::Index {
                arr,
                index,
                bracket,
            } => {
                let (a, i, elem) = self.index(arr, index)?;
                mk(
                    TExprKind::ArrayLoad {
                        arr: Box::new(a),
                        index: Box::new(i),
                    },
                    elem,
                    *bracket,
                )
            }
            ExprKind::Call { recv, name, args } => return self.call(recv.as_deref(), name, args),
            ExprKind::New { class, args } => return self.new_object(class, args),
            ExprKind::NewArray { elem, dims, extra } => {
                let base = self.resolve_value_type(elem, "an array element")?;
                let mut ds = Vec::new();
                for d in dims {
                    let t = self.expr(d);
                    ds.push(self.int_operand(t?, d.span, "an array size")?);
                }
                let total = dims.len() as u32 + extra;
                let elem_ty = array_of(base.clone(), total - 1);
                mk(
                    TExprKind::NewArray {
                        elem: elem_ty,
                        dims: ds,
                    },
                    array_of(base, total),
                    span,
                )
            }
            ExprKind::Unary { op, expr, op_span } => {
                let t = self.expr(expr)?;
                let (uop, ty) = match (op, &t.ty) {
                    (UnaryOp::Plus, Type::Int | Type::Double) => return Some(t),
                    (UnaryOp::Neg, Type::Int) => (UnOp::INeg, Type::Int),
                    (UnaryOp::Neg, Type::Double) => (UnOp::FNeg, Type::Double),
                    (UnaryOp::Not, Type::Boolean) => (UnOp::Not, Type::Boolean),
                    (UnaryOp::BitNot, Type::Int) => (UnOp::BitNot, Type::Int),
                    _ => {
                        let sym = match op {
                            UnaryOp::Neg => "-",
                            UnaryOp::Plus => "+",
                            UnaryOp::Not => "!",
                            UnaryOp::BitNot => "~",
                        };
                        let tn = self.type_name(&t.ty);
                        self.error(
                            *op_span,
                            format!("operator `{sym}` cannot be applied to `{tn}`"),
                        );
                        return None;
                    }
                };
                mk(
                    TExprKind::Unary {
                        op: uop,
                        expr: Box::new(t),
                    },
                    ty,
                    *op_span,
                )
            }
            ExprKind::Binary {
                op,
                lhs,
                rhs,
                op_span,
            } => return self.binary(*op, lhs, rhs, *op_span),
            ExprKind::Cond { cond, then, els } => {
                let c = self.expr(cond);
                let a = self.expr(then);
                let b = self.expr(els);
                let (c, a, b) = (c?, a?, b?);
                if c.ty != Type::Boolean {
                    let t = self.type_name(&c.ty);
                    self.error(
                        cond.span,
                        format!("the condition of `?:` must be `boolean`, found `{t}`"),
                    );
                    return None;
                }
                let ty = if a.ty == b.ty {
                    a.ty.clone()
                } else if is_numeric(&a.ty) && is_numeric(&b.ty) {
                    Type::Double
                } else if a.ty == Type::Null && b.ty.is_ref() {
                    b.ty.clone()
                } else if b.ty == Type::Null && a.ty.is_ref() {
                    a.ty.clone()
                } else {
                    let (at, bt) = (self.type_name(&a.ty), self.type_name(&b.ty));
                    self.error(
                        span,
                        format!("the branches of `?:` have incompatible types `{at}` and `{bt}`"),
                    );
                    return None;
                };
                let a = self.coerce(a, &ty, then.span, || "the branch".into())?;
                let b = self.coerce(b, &ty, els.span, || "the branch".into())?;
                mk(
                    TExprKind::Cond {
                        cond: Box::new(c),
                        then: Box::new(a),
                        els: Box::new(b),
                    },
                    ty,
                    span,
                )
            }
            ExprKind::Cast { ty, expr } => {
                let target = self.resolve_type(ty)?;
                let t = self.expr(expr)?;
                match (&t.ty, &target) {
                    (a, b) if a == b => t,
                    (Type::Int, Type::Double) => mk(
                        TExprKind::Convert {
                            conv: Conv::IntToDouble,
                            expr: Box::new(t),
                        },
                        Type::Double,
                        span,
                    ),
                    (Type::Double, Type::Int) => mk(
                        TExprKind::Convert {
                            conv: Conv::DoubleToInt,
                            expr: Box::new(t),
                        },
                        Type::Int,
                        span,
                    ),
                    _ => {
                        let (from, to) = (self.type_name(&t.ty), self.type_name(&target));
                        self.error(span, format!("cannot cast `{from}` to `{to}`"));
                        return None;
                    }
                }
            }
            ExprKind::Fork { call } => {
                let ExprKind::Call { recv, name, args } = &call.kind else {
                    self.error(span, "`fork` must be followed by a method call");
                    return None;
                };
                let t = self.call(recv.as_deref(), name, args)?;
                match t.kind {
                    TExprKind::Call { func, args } => {
                        mk(TExprKind::Fork { func, args }, Type::Thread, t.span)
                    }
                    _ => {
                        self.error(
                            name.span,
                            "only methods of CapJava classes can be forked (not built-ins)",
                        );
                        return None;
                    }
                }
            }
        })
    }

    fn name(&mut self, id: &ast::Ident) -> Option<TExpr> {
        if let Some(l) = self.lookup_local(&id.name) {
            return Some(mk(TExprKind::Local(l), self.local_type(l), id.span));
        }
        let class = self.cur.as_ref()?.class;
        match self.infos[class.index()].fields.get(&id.name).copied() {
            Some(FieldSym::Instance(f)) => {
                let this = self.this_expr(id.span, &id.name)?;
                let ty = self.program.field(f).ty.clone();
                Some(mk(
                    TExprKind::GetField {
                        obj: Box::new(this),
                        field: f,
                    },
                    ty,
                    id.span,
                ))
            }
            Some(FieldSym::Static(s)) => {
                let ty = self.program.statics[s.index()].ty.clone();
                Some(mk(TExprKind::GetStatic(s), ty, id.span))
            }
            None => {
                if self
                    .class_ref(&Expr {
                        kind: ExprKind::Name(id.clone()),
                        span: id.span,
                    })
                    .is_some()
                {
                    self.error(id.span, format!("`{}` is a class, not a value", id.name));
                } else if id.name == "System" {
                    self.error(
                        id.span,
                        "unknown variable `System` (CapJava prints with `print(e1, e2, …);`)",
                    );
                } else {
                    self.error(id.span, format!("unknown variable `{}`", id.name));
                }
                None
            }
        }
    }

    fn field(&mut self, obj: &Expr, name: &ast::Ident) -> Option<TExpr> {
        if let Some(c) = self.class_ref(obj) {
            let s = self.static_field(c, name)?;
            let ty = self.program.statics[s.index()].ty.clone();
            return Some(mk(TExprKind::GetStatic(s), ty, name.span));
        }
        let o = self.expr(obj)?;
        if let Type::Array(_) = o.ty {
            if name.name == "length" {
                return Some(mk(
                    TExprKind::ArrayLength(Box::new(o)),
                    Type::Int,
                    name.span,
                ));
            }
            self.error(
                name.span,
                format!("arrays have no field `{}` (only `length`)", name.name),
            );
            return None;
        }
        let f = self.instance_field(&o, name)?;
        let ty = self.program.field(f).ty.clone();
        Some(mk(
            TExprKind::GetField {
                obj: Box::new(o),
                field: f,
            },
            ty,
            name.span,
        ))
    }

    fn binary(&mut self, op: BinaryOp, lhs: &Expr, rhs: &Expr, span: Span) -> Option<TExpr> {
        let l = self.expr(lhs);
        let r = self.expr(rhs);
        let (l, r) = (l?, r?);
        use BinaryOp as B;
        match op {
            B::AndAnd | B::OrOr => {
                if l.ty != Type::Boolean || r.ty != Type::Boolean {
                    let (lt, rt) = (self.type_name(&l.ty), self.type_name(&r.ty));
                    self.error(
                        span,
                        format!(
                            "operator `{}` cannot be applied to `{lt}` and `{rt}`",
                            op.symbol()
                        ),
                    );
                    return None;
                }
                Some(mk(
                    TExprKind::Logic {
                        and: op == B::AndAnd,
                        lhs: Box::new(l),
                        rhs: Box::new(r),
                    },
                    Type::Boolean,
                    span,
                ))
            }
            B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge => {
                let (bop, operand) = self.compare_op(op, &l.ty, &r.ty, span)?;
                let (l, r) = match operand {
                    Some(t) => (
                        self.coerce(l, &t, lhs.span, || "the operand".into())?,
                        self.coerce(r, &t, rhs.span, || "the operand".into())?,
                    ),
                    None => (l, r),
                };
                Some(mk(
                    TExprKind::Binary {
                        op: bop,
                        lhs: Box::new(l),
                        rhs: Box::new(r),
                    },
                    Type::Boolean,
                    span,
                ))
            }
            _ => {
                let (bop, operand, result) = self.arith_op(op, &l.ty, &r.ty, span)?;
                let l = self.coerce(l, &operand, lhs.span, || "the operand".into())?;
                let r = self.coerce(r, &operand, rhs.span, || "the operand".into())?;
                Some(mk(
                    TExprKind::Binary {
                        op: bop,
                        lhs: Box::new(l),
                        rhs: Box::new(r),
                    },
                    result,
                    span,
                ))
            }
        }
    }
}
