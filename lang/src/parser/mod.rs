//! Recursive-descent parser with precedence climbing (Java precedence) and error
//! recovery: after an error the parser synchronizes on `;`, `}` and the start of the
//! next member or statement, so several errors are reported per file. It never panics
//! and always terminates (every loop consumes a token or stops).

mod decl;
mod expr;
mod stmt;
#[cfg(test)]
mod tests;

use crate::ast::{ClassDecl, Ident};
use crate::diag::Sink;
use crate::ir::FileId;
use crate::lexer::{Tok, Token, describe, lex};
use crate::span::Span;

/// Maximum nesting of statements and expressions (keeps later recursive passes within
/// a small stack on adversarial input).
const MAX_DEPTH: u32 = 256;

/// Maximum number of dimensions of an array type or array creation, the JVM's limit
/// (Lindholm et al., "The Java Virtual Machine Specification", §4.3.2): deeper array
/// types are refused with a position instead of costing time and memory quadratic in
/// their depth in every pass that builds or compares them.
pub(crate) const MAX_ARRAY_DIMS: u32 = 255;

/// The result of parsing one file.
pub struct Parsed {
    pub classes: Vec<ClassDecl>,
    /// False if a lexical error or a syntax error that needed recovery was reported:
    /// the tree may then be incomplete and must not be checked. Errors that leave the
    /// tree intact (a repeated modifier, an access modifier, a literal out of range)
    /// keep it true, so that type errors can be reported in the same run.
    pub complete: bool,
}

/// Parse one file. Errors go to `sink`.
pub fn parse_file(file: FileId, text: &str, sink: &mut Sink<'_>) -> Parsed {
    let before = sink.diags.len();
    let tokens = lex(file, text, sink);
    let lex_ok = sink.diags.len() == before;
    let mut p = Parser {
        tokens,
        pos: 0,
        sink,
        panicking: false,
        fatal: false,
        depth: 0,
        depth_reported: false,
    };
    let classes = p.file();
    Parsed {
        classes,
        complete: lex_ok && !p.fatal,
    }
}

struct Parser<'s, 'd> {
    tokens: Vec<Token>,
    pos: usize,
    sink: &'s mut Sink<'d>,
    /// Set after an error, cleared when the parser resynchronizes: suppresses cascades.
    panicking: bool,
    /// An error that needed recovery was reported.
    fatal: bool,
    depth: u32,
    depth_reported: bool,
}

type PResult<T> = Result<T, ()>;

fn is_stmt_keyword(t: &Tok) -> bool {
    matches!(
        t,
        Tok::If
            | Tok::While
            | Tok::For
            | Tok::Return
            | Tok::Break
            | Tok::Continue
            | Tok::Print
            | Tok::Assert
            | Tok::Synchronized
            | Tok::Deterministic
            | Tok::Atomic
    )
}

impl Parser<'_, '_> {
    // ---- token helpers -------------------------------------------------------------

    pub(super) fn tok(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    pub(super) fn nth(&self, k: usize) -> &Tok {
        let i = (self.pos + k).min(self.tokens.len() - 1);
        &self.tokens[i].tok
    }

    pub(super) fn span(&self) -> Span {
        self.tokens[self.pos].span
    }

    pub(super) fn prev_span(&self) -> Span {
        if self.pos == 0 {
            self.span()
        } else {
            self.tokens[self.pos - 1].span
        }
    }

    pub(super) fn at(&self, t: &Tok) -> bool {
        self.tok() == t
    }

    /// The identifier at the cursor, if it is one of `words`.
    pub(super) fn at_word(&self, words: &[&str]) -> Option<String> {
        match self.tok() {
            Tok::Ident(n) if words.contains(&n.as_str()) => Some(n.clone()),
            _ => None,
        }
    }

    pub(super) fn at_eof(&self) -> bool {
        matches!(self.tok(), Tok::Eof)
    }

    pub(super) fn bump(&mut self) -> Span {
        let s = self.span();
        if !self.at_eof() {
            self.pos += 1;
        }
        s
    }

    pub(super) fn eat(&mut self, t: &Tok) -> bool {
        if self.at(t) {
            self.bump();
            true
        } else {
            false
        }
    }

    pub(super) fn error_at(&mut self, span: Span, msg: impl Into<String>) {
        self.fatal = true;
        if !self.panicking {
            self.sink.error(span, msg);
        }
        self.panicking = true;
    }

    /// Report an error that does not interrupt parsing (no recovery needed).
    pub(super) fn report(&mut self, span: Span, msg: impl Into<String>) {
        self.sink.error(span, msg);
    }

    pub(super) fn error_here(&mut self, expected: &str) {
        let found = describe(self.tok());
        let span = self.span();
        self.error_at(span, format!("expected {expected}, found {found}"));
    }

    pub(super) fn expect(&mut self, t: &Tok) -> PResult<Span> {
        if self.at(t) {
            Ok(self.bump())
        } else {
            let what = describe(t);
            self.error_here(&what);
            Err(())
        }
    }

    /// Expect `;`. When it is missing but the next token starts a new line or closes a
    /// block, report it and carry on as if it were there (no resynchronization needed).
    pub(super) fn expect_semi(&mut self) -> PResult<()> {
        if self.eat(&Tok::Semi) {
            return Ok(());
        }
        let t = &self.tokens[self.pos];
        let recoverable = t.after_newline || matches!(t.tok, Tok::RBrace | Tok::Eof);
        self.error_here("`;`");
        if recoverable {
            self.panicking = false;
            Ok(())
        } else {
            Err(())
        }
    }

    pub(super) fn ident(&mut self, what: &str) -> PResult<Ident> {
        if let Tok::Ident(name) = self.tok() {
            let name = name.clone();
            let span = self.bump();
            Ok(Ident { name, span })
        } else {
            self.error_here(what);
            Err(())
        }
    }

    /// The error for the `[` that would open dimension `MAX_ARRAY_DIMS + 1`.
    pub(super) fn too_many_dims(&mut self, at: Span) {
        self.error_at(
            at,
            format!("too many array dimensions (limit {MAX_ARRAY_DIMS})"),
        );
    }

    pub(super) fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            if !self.depth_reported {
                self.depth_reported = true;
                let span = self.span();
                self.panicking = false;
                self.error_at(span, format!("nesting is too deep (limit {MAX_DEPTH})"));
            }
            return Err(());
        }
        Ok(())
    }

    pub(super) fn leave(&mut self) {
        self.depth -= 1;
    }

    // ---- recovery ------------------------------------------------------------------

    /// Skip a balanced `{ … }` starting at the current `{`.
    pub(super) fn skip_braces(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.tok() {
                Tok::Eof => return,
                Tok::LBrace => depth += 1,
                Tok::RBrace => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.bump();
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Statement-level recovery: stop after `;`, before `}` or a statement keyword,
    /// or after a skipped `{ … }` block.
    pub(super) fn sync_stmt(&mut self) {
        let start = self.pos;
        loop {
            match self.tok() {
                Tok::Eof | Tok::RBrace => break,
                Tok::Semi => {
                    self.bump();
                    break;
                }
                Tok::LBrace => {
                    self.skip_braces();
                    break;
                }
                t if is_stmt_keyword(t) && self.pos > start => break,
                _ => {
                    self.bump();
                }
            }
        }
        self.panicking = false;
    }

    /// Member-level recovery inside a class body: stop after `;` or a skipped body,
    /// or before `}`.
    pub(super) fn sync_member(&mut self) {
        loop {
            match self.tok() {
                Tok::Eof | Tok::RBrace => break,
                Tok::Semi => {
                    self.bump();
                    break;
                }
                Tok::LBrace => {
                    self.skip_braces();
                    break;
                }
                Tok::Class | Tok::Capsule => break,
                _ => {
                    self.bump();
                }
            }
        }
        self.panicking = false;
    }
}
