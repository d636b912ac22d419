//! Expressions: precedence climbing over Java's binary operators, unary and postfix
//! forms, primaries and `new`.

use super::{MAX_ARRAY_DIMS, PResult, Parser};
use crate::ast::*;
use crate::lexer::Tok;

impl Parser<'_, '_> {
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.ternary();
        self.leave();
        r
    }

    pub(super) fn ternary(&mut self) -> PResult<Expr> {
        let cond = self.binary(0)?;
        if !self.eat(&Tok::Question) {
            return Ok(cond);
        }
        let then = self.expr()?;
        self.expect(&Tok::Colon)?;
        let els = self.expr()?;
        let span = cond.span.to(els.span);
        Ok(Expr {
            kind: ExprKind::Cond {
                cond: Box::new(cond),
                then: Box::new(then),
                els: Box::new(els),
            },
            span,
        })
    }

    pub(super) fn binop(t: &Tok) -> Option<(BinaryOp, u8)> {
        Some(match t {
            Tok::PipePipe => (BinaryOp::OrOr, 1),
            Tok::AmpAmp => (BinaryOp::AndAnd, 2),
            Tok::Pipe => (BinaryOp::Or, 3),
            Tok::Caret => (BinaryOp::Xor, 4),
            Tok::Amp => (BinaryOp::And, 5),
            Tok::EqEq => (BinaryOp::Eq, 6),
            Tok::NotEq => (BinaryOp::Ne, 6),
            Tok::Lt => (BinaryOp::Lt, 7),
            Tok::Le => (BinaryOp::Le, 7),
            Tok::Gt => (BinaryOp::Gt, 7),
            Tok::Ge => (BinaryOp::Ge, 7),
            Tok::Shl => (BinaryOp::Shl, 8),
            Tok::Shr => (BinaryOp::Shr, 8),
            Tok::UShr => (BinaryOp::UShr, 8),
            Tok::Plus => (BinaryOp::Add, 9),
            Tok::Minus => (BinaryOp::Sub, 9),
            Tok::Star => (BinaryOp::Mul, 10),
            Tok::Slash => (BinaryOp::Div, 10),
            Tok::Percent => (BinaryOp::Rem, 10),
            _ => return None,
        })
    }

    /// Precedence climbing over left-associative binary operators.
    pub(super) fn binary(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut folds = 0;
        while let Some((op, prec)) = Self::binop(self.tok()) {
            if prec < min_prec {
                break;
            }
            let op_span = self.bump();
            // Each fold deepens the tree by one level.
            if let Err(()) = self.enter() {
                self.depth -= folds;
                return Err(());
            }
            folds += 1;
            let rhs = match self.binary(prec + 1) {
                Ok(r) => r,
                Err(()) => {
                    self.depth -= folds;
                    return Err(());
                }
            };
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                    op_span,
                },
                span,
            };
        }
        self.depth -= folds;
        Ok(lhs)
    }

    pub(super) fn unary(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.unary_inner();
        self.leave();
        r
    }

    pub(super) fn unary_inner(&mut self) -> PResult<Expr> {
        let start = self.span();
        let op = match self.tok() {
            Tok::Minus => Some(UnaryOp::Neg),
            Tok::Plus => Some(UnaryOp::Plus),
            Tok::Bang => Some(UnaryOp::Not),
            Tok::Tilde => Some(UnaryOp::BitNot),
            _ => None,
        };
        if let Some(op) = op {
            let op_span = self.bump();
            // A negated literal: `-9223372036854775808` is the one place the magnitude
            // 2^63 is allowed.
            if op == UnaryOp::Neg
                && let Tok::Int { value, hex } = *self.tok()
                && !matches!(self.nth(1), Tok::Dot | Tok::LBracket)
            {
                let lit = self.bump();
                let span = start.to(lit);
                let v = if hex || value <= 1u64 << 63 {
                    (value as i64).wrapping_neg()
                } else {
                    self.report(lit, "integer literal is too large for `int` (64-bit)");
                    0
                };
                return Ok(Expr {
                    kind: ExprKind::Int(v),
                    span,
                });
            }
            if op == UnaryOp::Neg
                && let Tok::Double(v) = *self.tok()
                && !matches!(self.nth(1), Tok::Dot | Tok::LBracket)
            {
                let lit = self.bump();
                return Ok(Expr {
                    kind: ExprKind::Double(-v),
                    span: start.to(lit),
                });
            }
            let e = self.unary()?;
            let span = start.to(e.span);
            return Ok(Expr {
                kind: ExprKind::Unary {
                    op,
                    expr: Box::new(e),
                    op_span,
                },
                span,
            });
        }
        match self.tok() {
            Tok::LParen
                if matches!(self.nth(1), Tok::KwInt | Tok::KwDouble | Tok::Boolean)
                    && matches!(self.nth(2), Tok::RParen | Tok::LBracket) =>
            {
                self.bump();
                let ty = self.type_expr()?;
                self.expect(&Tok::RParen)?;
                let e = self.unary()?;
                let span = start.to(e.span);
                Ok(Expr {
                    kind: ExprKind::Cast {
                        ty,
                        expr: Box::new(e),
                    },
                    span,
                })
            }
            Tok::Fork => {
                self.bump();
                let call = self.postfix()?;
                if !matches!(call.kind, ExprKind::Call { .. }) {
                    self.error_at(call.span, "`fork` must be followed by a method call");
                    return Err(());
                }
                let span = start.to(call.span);
                Ok(Expr {
                    kind: ExprKind::Fork {
                        call: Box::new(call),
                    },
                    span,
                })
            }
            Tok::PlusPlus | Tok::MinusMinus => {
                let span = self.span();
                self.error_at(span, "`++`/`--` can only be used as a statement in CapJava");
                Err(())
            }
            _ => self.postfix(),
        }
    }

    pub(super) fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        let mut folds = 0;
        let r = loop {
            match self.tok() {
                Tok::Dot => {
                    self.bump();
                    let name = match self.ident("a field or method name") {
                        Ok(n) => n,
                        Err(()) => break Err(()),
                    };
                    if self.at(&Tok::LParen) {
                        self.bump();
                        let args = match self.args_after_paren() {
                            Ok(a) => a,
                            Err(()) => break Err(()),
                        };
                        let span = e.span.to(self.prev_span());
                        e = Expr {
                            kind: ExprKind::Call {
                                recv: Some(Box::new(e)),
                                name,
                                args,
                            },
                            span,
                        };
                    } else {
                        let span = e.span.to(name.span);
                        e = Expr {
                            kind: ExprKind::Field {
                                obj: Box::new(e),
                                name,
                            },
                            span,
                        };
                    }
                }
                Tok::LBracket => {
                    let bracket = self.bump();
                    let index = match self.expr() {
                        Ok(i) => i,
                        Err(()) => break Err(()),
                    };
                    if self.expect(&Tok::RBracket).is_err() {
                        break Err(());
                    }
                    let span = e.span.to(self.prev_span());
                    e = Expr {
                        kind: ExprKind::Index {
                            arr: Box::new(e),
                            index: Box::new(index),
                            bracket,
                        },
                        span,
                    };
                }
                _ => break Ok(()),
            }
            if self.enter().is_err() {
                break Err(());
            }
            folds += 1;
        };
        self.depth -= folds;
        r.map(|()| e)
    }

    /// Arguments after an already consumed `(`, through the closing `)`.
    pub(super) fn args_after_paren(&mut self) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if !self.at(&Tok::RParen) {
            loop {
                args.push(self.expr()?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(&Tok::RParen)?;
        Ok(args)
    }

    pub(super) fn primary(&mut self) -> PResult<Expr> {
        let span = self.span();
        let kind = match self.tok().clone() {
            Tok::Int { value, hex } => {
                self.bump();
                if hex {
                    ExprKind::Int(value as i64)
                } else if value > i64::MAX as u64 {
                    self.report(span, "integer literal is too large for `int` (64-bit)");
                    ExprKind::Int(0)
                } else {
                    ExprKind::Int(value as i64)
                }
            }
            Tok::Double(v) => {
                self.bump();
                ExprKind::Double(v)
            }
            Tok::True => {
                self.bump();
                ExprKind::Bool(true)
            }
            Tok::False => {
                self.bump();
                ExprKind::Bool(false)
            }
            Tok::Null => {
                self.bump();
                ExprKind::Null
            }
            Tok::Str(s) => {
                self.bump();
                ExprKind::Str(s)
            }
            Tok::This => {
                self.bump();
                ExprKind::This
            }
            Tok::Ident(_) => {
                let name = self.ident("a name")?;
                if self.eat(&Tok::LParen) {
                    let args = self.args_after_paren()?;
                    return Ok(Expr {
                        kind: ExprKind::Call {
                            recv: None,
                            name,
                            args,
                        },
                        span: span.to(self.prev_span()),
                    });
                }
                ExprKind::Name(name)
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(&Tok::RParen)?;
                // Keep the inner kind; the span grows to cover the parentheses.
                return Ok(Expr {
                    kind: e.kind,
                    span: span.to(self.prev_span()),
                });
            }
            Tok::New => return self.new_expr(),
            Tok::Print => {
                self.error_at(span, "`print` is a statement, not an expression");
                return Err(());
            }
            _ => {
                self.error_here("an expression");
                return Err(());
            }
        };
        Ok(Expr { kind, span })
    }

    pub(super) fn new_expr(&mut self) -> PResult<Expr> {
        let start = self.bump();
        let (base, base_span) = self.base_type()?;
        if self.at(&Tok::LParen) {
            let BaseType::Named(name) = base else {
                self.error_at(
                    base_span,
                    "only classes can be instantiated with `new T(…)`",
                );
                return Err(());
            };
            self.bump();
            let args = self.args_after_paren()?;
            return Ok(Expr {
                kind: ExprKind::New {
                    class: Ident {
                        name,
                        span: base_span,
                    },
                    args,
                },
                span: start.to(self.prev_span()),
            });
        }
        if !self.at(&Tok::LBracket) {
            self.error_here("`(` or `[` after `new T`");
            return Err(());
        }
        let mut dims = Vec::new();
        let mut extra = 0;
        while self.at(&Tok::LBracket) {
            if dims.len() as u32 + extra == MAX_ARRAY_DIMS {
                let at = self.span();
                self.too_many_dims(at);
                return Err(());
            }
            self.bump();
            if self.at(&Tok::RBracket) {
                self.bump();
                extra += 1;
                continue;
            }
            if extra > 0 {
                let span = self.span();
                self.error_at(
                    span,
                    "a sized dimension cannot follow an unsized one (`[]`)",
                );
                return Err(());
            }
            dims.push(self.expr()?);
            self.expect(&Tok::RBracket)?;
        }
        if dims.is_empty() {
            let span = self.prev_span();
            self.error_at(
                span,
                "array creation needs a size: `new T[n]` (array initialisers are not supported)",
            );
            return Err(());
        }
        Ok(Expr {
            kind: ExprKind::NewArray {
                elem: TypeExpr {
                    base,
                    dims: 0,
                    span: base_span,
                },
                dims,
                extra,
            },
            span: start.to(self.prev_span()),
        })
    }
}
