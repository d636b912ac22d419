//! Declarations: classes, fields, constructors, methods, types.

use super::{MAX_ARRAY_DIMS, PResult, Parser};
use crate::ast::*;
use crate::lexer::Tok;
use crate::span::Span;

impl Parser<'_, '_> {
    /// Java access modifiers are not CapJava: report and skip them.
    pub(super) fn skip_access_modifiers(&mut self) {
        while let Some(n) = self.at_word(&["public", "private", "protected", "abstract"]) {
            let msg =
                format!("`{n}` is not part of CapJava (there are no access modifiers); remove it");
            let span = self.bump();
            self.report(span, msg);
        }
    }

    pub(super) fn file(&mut self) -> Vec<ClassDecl> {
        let mut classes = Vec::new();
        while !self.at_eof() {
            self.skip_access_modifiers();
            let before = self.pos;
            if matches!(self.tok(), Tok::Class | Tok::Capsule) {
                if let Ok(c) = self.class_decl() {
                    classes.push(c);
                }
            } else if let Some(kw) = self.at_word(&["import", "package"]) {
                let msg = format!("`{kw}` declarations are not part of CapJava");
                let span = self.span();
                self.error_at(span, msg);
                while !self.at_eof() && !self.eat(&Tok::Semi) {
                    self.bump();
                }
                self.panicking = false;
            } else {
                self.error_here("`class` or `capsule class`");
                while !self.at_eof() && !matches!(self.tok(), Tok::Class | Tok::Capsule) {
                    self.bump();
                }
                self.panicking = false;
            }
            if self.pos == before {
                self.bump();
            }
        }
        classes
    }

    pub(super) fn class_decl(&mut self) -> PResult<ClassDecl> {
        let is_capsule = self.eat(&Tok::Capsule);
        if self.expect(&Tok::Class).is_err() {
            self.sync_member();
            return Err(());
        }
        let name = match self.ident("a class name") {
            Ok(n) => n,
            Err(()) => {
                self.sync_member();
                return Err(());
            }
        };
        if let Some(kw) = self.at_word(&["extends", "implements"]) {
            let msg = format!("`{kw}`: CapJava has no inheritance or interfaces");
            let span = self.span();
            self.error_at(span, msg);
            while !self.at_eof() && !self.at(&Tok::LBrace) {
                self.bump();
            }
        }
        if self.expect(&Tok::LBrace).is_err() {
            self.sync_member();
            return Err(());
        }
        let mut members = Vec::new();
        while !self.at(&Tok::RBrace) && !self.at_eof() {
            if matches!(self.tok(), Tok::Class | Tok::Capsule) {
                self.error_here(
                    "a field, constructor or method (nested classes are not supported)",
                );
                break;
            }
            let before = self.pos;
            self.panicking = false;
            if self.member(&name.name, &mut members).is_err() {
                self.sync_member();
            }
            if self.pos == before {
                self.bump();
            }
        }
        self.expect(&Tok::RBrace).ok();
        self.panicking = false;
        Ok(ClassDecl {
            is_capsule,
            name,
            members,
        })
    }

    pub(super) fn modifiers(&mut self) -> Modifiers {
        let mut mods = Modifiers::default();
        loop {
            let m = match self.tok() {
                Tok::Static => Modifier::Static,
                Tok::Final => Modifier::Final,
                Tok::Volatile => Modifier::Volatile,
                Tok::Synchronized => Modifier::Synchronized,
                Tok::Deterministic => Modifier::Deterministic,
                Tok::Atomic => Modifier::Atomic,
                _ => break,
            };
            let span = self.bump();
            if mods.has(m) {
                self.report(span, format!("repeated modifier `{}`", m.name()));
            }
            mods.list.push((m, span));
        }
        mods
    }

    pub(super) fn member(&mut self, class_name: &str, out: &mut Vec<Member>) -> PResult<()> {
        self.skip_access_modifiers();
        let mods = self.modifiers();
        self.skip_access_modifiers();
        if self.at(&Tok::LBrace) {
            let span = self.span();
            self.error_at(
                span,
                "initialiser blocks are not supported (use constant field initialisers, the constructor or `main`)",
            );
            return Err(());
        }
        // Constructor: `Name(`.
        if let (Tok::Ident(n), Tok::LParen) = (self.tok(), self.nth(1)) {
            let n = n.clone();
            let name = self.ident("a name")?;
            let ret = TypeExpr {
                base: BaseType::Void,
                dims: 0,
                span: name.span,
            };
            if n != class_name {
                self.report(
                    name.span,
                    format!("method `{n}` needs a return type (a constructor must be named `{class_name}`)"),
                );
            }
            let params = self.params()?;
            let body = self.block()?;
            out.push(Member::Ctor(MethodDecl {
                mods,
                ret,
                name,
                params,
                body,
            }));
            return Ok(());
        }
        let ty = self.type_expr()?;
        let name = self.ident("a member name")?;
        if self.at(&Tok::LParen) {
            let params = self.params()?;
            let body = self.block()?;
            out.push(Member::Method(MethodDecl {
                mods,
                ret: ty,
                name,
                params,
                body,
            }));
            return Ok(());
        }
        let mut name = name;
        loop {
            let init = if self.eat(&Tok::Assign(None)) {
                Some(self.expr()?)
            } else {
                None
            };
            out.push(Member::Field(FieldDecl {
                mods: mods.clone(),
                ty: ty.clone(),
                name,
                init,
            }));
            if self.eat(&Tok::Comma) {
                name = self.ident("a field name")?;
            } else {
                break;
            }
        }
        self.expect_semi()?;
        Ok(())
    }

    pub(super) fn params(&mut self) -> PResult<Vec<Param>> {
        self.expect(&Tok::LParen)?;
        let mut params = Vec::new();
        if !self.at(&Tok::RParen) {
            loop {
                let ty = self.type_expr()?;
                let name = self.ident("a parameter name")?;
                params.push(Param { ty, name });
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(&Tok::RParen)?;
        Ok(params)
    }

    pub(super) fn base_type(&mut self) -> PResult<(BaseType, Span)> {
        let base = match self.tok() {
            Tok::KwInt => BaseType::Int,
            Tok::KwDouble => BaseType::Double,
            Tok::Boolean => BaseType::Boolean,
            Tok::Void => BaseType::Void,
            Tok::Ident(n) => BaseType::Named(n.clone()),
            _ => {
                self.error_here("a type");
                return Err(());
            }
        };
        Ok((base, self.bump()))
    }

    pub(super) fn type_expr(&mut self) -> PResult<TypeExpr> {
        let (base, mut span) = self.base_type()?;
        let mut dims = 0;
        while self.at(&Tok::LBracket) && self.nth(1) == &Tok::RBracket {
            if dims == MAX_ARRAY_DIMS {
                let at = self.span();
                self.too_many_dims(at);
                return Err(());
            }
            self.bump();
            span = span.to(self.bump());
            dims += 1;
        }
        Ok(TypeExpr { base, dims, span })
    }
}
