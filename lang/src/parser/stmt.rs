//! Statements and blocks.

use super::{PResult, Parser};
use crate::ast::*;
use crate::ir::Spec;
use crate::lexer::Tok;

impl Parser<'_, '_> {
    pub(super) fn block(&mut self) -> PResult<Block> {
        let open = self.expect(&Tok::LBrace)?;
        self.enter()?;
        let mut stmts = Vec::new();
        while !self.at(&Tok::RBrace) && !self.at_eof() {
            let before = self.pos;
            self.panicking = false;
            match self.stmt() {
                Ok(s) => stmts.push(s),
                Err(()) => self.sync_stmt(),
            }
            if self.pos == before {
                self.bump();
            }
        }
        self.leave();
        let close = self.expect(&Tok::RBrace)?;
        Ok(Block {
            stmts,
            span: open.to(close),
        })
    }

    /// True if the tokens at the cursor start a local variable declaration.
    pub(super) fn at_local_decl(&self) -> bool {
        match self.tok() {
            Tok::KwInt | Tok::KwDouble | Tok::Boolean | Tok::Void | Tok::Final => true,
            Tok::Ident(_) => matches!(
                (self.nth(1), self.nth(2)),
                (Tok::Ident(_), _) | (Tok::LBracket, Tok::RBracket)
            ),
            _ => false,
        }
    }

    pub(super) fn stmt(&mut self) -> PResult<Stmt> {
        self.enter()?;
        let r = self.stmt_inner();
        self.leave();
        r
    }

    pub(super) fn stmt_inner(&mut self) -> PResult<Stmt> {
        let start = self.span();
        let kind = match self.tok() {
            Tok::LBrace => StmtKind::Block(self.block()?),
            Tok::Semi => {
                self.bump();
                StmtKind::Empty
            }
            Tok::If => {
                self.bump();
                let cond = self.paren_expr()?;
                let then = Box::new(self.stmt()?);
                let els = if self.eat(&Tok::Else) {
                    Some(Box::new(self.stmt()?))
                } else {
                    None
                };
                StmtKind::If { cond, then, els }
            }
            Tok::While => {
                self.bump();
                let cond = self.paren_expr()?;
                let body = Box::new(self.stmt()?);
                StmtKind::While { cond, body }
            }
            Tok::For => self.for_stmt()?,
            Tok::Return => {
                self.bump();
                let e = if self.at(&Tok::Semi) {
                    None
                } else {
                    Some(self.expr()?)
                };
                self.expect_semi()?;
                StmtKind::Return(e)
            }
            Tok::Break | Tok::Continue => {
                let is_break = self.at(&Tok::Break);
                self.bump();
                if let Tok::Ident(_) = self.tok() {
                    let span = self.span();
                    self.error_at(span, "labelled break/continue is not supported");
                    return Err(());
                }
                self.expect_semi()?;
                if is_break {
                    StmtKind::Break
                } else {
                    StmtKind::Continue
                }
            }
            Tok::Print => {
                self.bump();
                self.expect(&Tok::LParen)?;
                let args = self.args_after_paren()?;
                self.expect_semi()?;
                StmtKind::Print { args }
            }
            Tok::Assert => {
                self.bump();
                let e = self.expr()?;
                if self.at(&Tok::Colon) {
                    let span = self.span();
                    self.error_at(
                        span,
                        "`assert e : message` is not supported; use `assert(e);`",
                    );
                    return Err(());
                }
                self.expect_semi()?;
                StmtKind::Assert(e)
            }
            Tok::Synchronized => {
                self.bump();
                let lock = self.paren_expr()?;
                let body = self.block()?;
                StmtKind::Synchronized { lock, body }
            }
            Tok::Deterministic | Tok::Atomic => {
                let spec = if self.at(&Tok::Atomic) {
                    Spec::Atomic
                } else {
                    Spec::Deterministic
                };
                self.bump();
                let body = self.block()?;
                StmtKind::Spec { spec, body }
            }
            Tok::Else => {
                let span = self.span();
                self.error_at(span, "`else` without a matching `if`");
                return Err(());
            }
            Tok::Class | Tok::Capsule | Tok::Static | Tok::Volatile => {
                let span = self.span();
                self.error_at(span, "expected a statement (declarations of this kind are only allowed in a class body)");
                return Err(());
            }
            _ => {
                let k = self.simple_stmt()?;
                self.expect_semi()?;
                k
            }
        };
        let end = self.prev_span();
        Ok(Stmt {
            kind,
            span: start.to(end),
        })
    }

    pub(super) fn paren_expr(&mut self) -> PResult<Expr> {
        self.expect(&Tok::LParen)?;
        let e = self.expr()?;
        self.expect(&Tok::RParen)?;
        Ok(e)
    }

    pub(super) fn for_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        self.expect(&Tok::LParen)?;
        let mut init = Vec::new();
        if !self.at(&Tok::Semi) {
            if self.at_local_decl() {
                init.push(self.simple_stmt_spanned()?);
            } else {
                loop {
                    init.push(self.simple_stmt_spanned()?);
                    if !self.eat(&Tok::Comma) {
                        break;
                    }
                }
            }
        }
        self.expect_semi()?;
        let cond = if self.at(&Tok::Semi) {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect_semi()?;
        let mut update = Vec::new();
        if !self.at(&Tok::RParen) {
            loop {
                if self.at_local_decl() {
                    let span = self.span();
                    self.error_at(
                        span,
                        "a declaration is not allowed in the update of a `for`",
                    );
                    return Err(());
                }
                update.push(self.simple_stmt_spanned()?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(&Tok::RParen)?;
        let body = Box::new(self.stmt()?);
        Ok(StmtKind::For {
            init,
            cond,
            update,
            body,
        })
    }

    pub(super) fn simple_stmt_spanned(&mut self) -> PResult<Stmt> {
        let start = self.span();
        let kind = self.simple_stmt()?;
        let end = self.prev_span();
        Ok(Stmt {
            kind,
            span: start.to(end),
        })
    }

    /// A local declaration, assignment, `x++`/`++x` or expression, without the `;`.
    pub(super) fn simple_stmt(&mut self) -> PResult<StmtKind> {
        if self.at_local_decl() {
            return self.local_decl();
        }
        if matches!(self.tok(), Tok::PlusPlus | Tok::MinusMinus) {
            let inc = self.at(&Tok::PlusPlus);
            let op_span = self.bump();
            let target = self.unary()?;
            return Ok(StmtKind::IncDec {
                target,
                inc,
                op_span,
            });
        }
        let e = self.expr()?;
        match self.tok().clone() {
            Tok::Assign(op) => {
                let op_span = self.bump();
                let value = self.expr()?;
                if let Tok::Assign(_) = self.tok() {
                    let span = self.span();
                    self.error_at(span, "chained assignment is not supported in CapJava");
                    return Err(());
                }
                Ok(StmtKind::Assign {
                    target: e,
                    op,
                    value,
                    op_span,
                })
            }
            Tok::PlusPlus | Tok::MinusMinus => {
                let inc = self.at(&Tok::PlusPlus);
                let op_span = self.bump();
                Ok(StmtKind::IncDec {
                    target: e,
                    inc,
                    op_span,
                })
            }
            _ => Ok(StmtKind::Expr(e)),
        }
    }

    pub(super) fn local_decl(&mut self) -> PResult<StmtKind> {
        if self.eat(&Tok::Final) {
            let span = self.prev_span();
            self.error_at(span, "`final` local variables are not supported in CapJava");
            return Err(());
        }
        let ty = if matches!(self.tok(), Tok::Ident(n) if n == "var")
            && matches!(self.nth(1), Tok::Ident(_))
        {
            self.bump();
            None
        } else {
            Some(self.type_expr()?)
        };
        let mut vars = Vec::new();
        loop {
            let name = self.ident("a variable name")?;
            if self.at(&Tok::LBracket) {
                let span = self.span();
                self.error_at(
                    span,
                    "C-style array declarators are not supported; write `T[] name`",
                );
                return Err(());
            }
            let init = if self.eat(&Tok::Assign(None)) {
                Some(self.expr()?)
            } else {
                None
            };
            vars.push((name, init));
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        Ok(StmtKind::Local { ty, vars })
    }
}
