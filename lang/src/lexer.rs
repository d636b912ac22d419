//! Lexer: source text → tokens with spans (`docs/language.md` "Lexical structure").
//!
//! Never fails: malformed input produces an error diagnostic and lexing continues.

use crate::diag::Sink;
use crate::ir::FileId;
use crate::span::Span;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    /// Integer literal (decimal or hex); its magnitude, checked by the parser.
    Int {
        value: u64,
        hex: bool,
    },
    Double(f64),
    Str(String),
    // keywords
    Class,
    Capsule,
    Static,
    Final,
    Volatile,
    Synchronized,
    Deterministic,
    Atomic,
    Void,
    KwInt,
    KwDouble,
    Boolean,
    If,
    Else,
    While,
    For,
    Return,
    Break,
    Continue,
    New,
    This,
    Null,
    True,
    False,
    Fork,
    Print,
    Assert,
    // punctuation
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Semi,
    Comma,
    Dot,
    Question,
    Colon,
    /// `=` and the compound assignments; `None` for plain `=`.
    Assign(Option<AssignOp>),
    PlusPlus,
    MinusMinus,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Amp,
    Pipe,
    Caret,
    Tilde,
    Bang,
    AmpAmp,
    PipePipe,
    Shl,
    Shr,
    UShr,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    Eof,
}

/// The operator of a compound assignment `op=`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AssignOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    UShr,
}

impl AssignOp {
    pub fn symbol(self) -> &'static str {
        match self {
            AssignOp::Add => "+=",
            AssignOp::Sub => "-=",
            AssignOp::Mul => "*=",
            AssignOp::Div => "/=",
            AssignOp::Rem => "%=",
            AssignOp::And => "&=",
            AssignOp::Or => "|=",
            AssignOp::Xor => "^=",
            AssignOp::Shl => "<<=",
            AssignOp::Shr => ">>=",
            AssignOp::UShr => ">>>=",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
    /// A line break separates this token from the previous one.
    pub after_newline: bool,
}

fn keyword(s: &str) -> Option<Tok> {
    Some(match s {
        "class" => Tok::Class,
        "capsule" => Tok::Capsule,
        "static" => Tok::Static,
        "final" => Tok::Final,
        "volatile" => Tok::Volatile,
        "synchronized" => Tok::Synchronized,
        "deterministic" => Tok::Deterministic,
        "atomic" => Tok::Atomic,
        "void" => Tok::Void,
        "int" => Tok::KwInt,
        "double" => Tok::KwDouble,
        "boolean" => Tok::Boolean,
        "if" => Tok::If,
        "else" => Tok::Else,
        "while" => Tok::While,
        "for" => Tok::For,
        "return" => Tok::Return,
        "break" => Tok::Break,
        "continue" => Tok::Continue,
        "new" => Tok::New,
        "this" => Tok::This,
        "null" => Tok::Null,
        "true" => Tok::True,
        "false" => Tok::False,
        "fork" => Tok::Fork,
        "print" => Tok::Print,
        "assert" => Tok::Assert,
        _ => return None,
    })
}

/// Human-readable token description for error messages.
pub fn describe(t: &Tok) -> String {
    let s = match t {
        Tok::Ident(s) => return format!("identifier `{s}`"),
        Tok::Int { .. } => "integer literal",
        Tok::Double(_) => "double literal",
        Tok::Str(_) => "string literal",
        Tok::Eof => "end of file",
        Tok::Assign(None) => "`=`",
        Tok::Assign(Some(op)) => return format!("`{}`", op.symbol()),
        other => return format!("`{}`", spelling(other)),
    };
    s.to_string()
}

/// The source spelling of a keyword or punctuation token.
pub fn spelling(t: &Tok) -> &'static str {
    match t {
        Tok::Class => "class",
        Tok::Capsule => "capsule",
        Tok::Static => "static",
        Tok::Final => "final",
        Tok::Volatile => "volatile",
        Tok::Synchronized => "synchronized",
        Tok::Deterministic => "deterministic",
        Tok::Atomic => "atomic",
        Tok::Void => "void",
        Tok::KwInt => "int",
        Tok::KwDouble => "double",
        Tok::Boolean => "boolean",
        Tok::If => "if",
        Tok::Else => "else",
        Tok::While => "while",
        Tok::For => "for",
        Tok::Return => "return",
        Tok::Break => "break",
        Tok::Continue => "continue",
        Tok::New => "new",
        Tok::This => "this",
        Tok::Null => "null",
        Tok::True => "true",
        Tok::False => "false",
        Tok::Fork => "fork",
        Tok::Print => "print",
        Tok::Assert => "assert",
        Tok::LParen => "(",
        Tok::RParen => ")",
        Tok::LBrace => "{",
        Tok::RBrace => "}",
        Tok::LBracket => "[",
        Tok::RBracket => "]",
        Tok::Semi => ";",
        Tok::Comma => ",",
        Tok::Dot => ".",
        Tok::Question => "?",
        Tok::Colon => ":",
        Tok::Assign(None) => "=",
        Tok::Assign(Some(op)) => op.symbol(),
        Tok::PlusPlus => "++",
        Tok::MinusMinus => "--",
        Tok::Plus => "+",
        Tok::Minus => "-",
        Tok::Star => "*",
        Tok::Slash => "/",
        Tok::Percent => "%",
        Tok::Amp => "&",
        Tok::Pipe => "|",
        Tok::Caret => "^",
        Tok::Tilde => "~",
        Tok::Bang => "!",
        Tok::AmpAmp => "&&",
        Tok::PipePipe => "||",
        Tok::Shl => "<<",
        Tok::Shr => ">>",
        Tok::UShr => ">>>",
        Tok::EqEq => "==",
        Tok::NotEq => "!=",
        Tok::Lt => "<",
        Tok::Le => "<=",
        Tok::Gt => ">",
        Tok::Ge => ">=",
        Tok::Ident(_) | Tok::Int { .. } | Tok::Double(_) | Tok::Str(_) | Tok::Eof => "",
    }
}

/// Punctuation, longest first so that maximal munch works by trying in order.
const PUNCT: &[(&str, Tok)] = &[
    (">>>=", Tok::Assign(Some(AssignOp::UShr))),
    (">>>", Tok::UShr),
    ("<<=", Tok::Assign(Some(AssignOp::Shl))),
    (">>=", Tok::Assign(Some(AssignOp::Shr))),
    ("+=", Tok::Assign(Some(AssignOp::Add))),
    ("-=", Tok::Assign(Some(AssignOp::Sub))),
    ("*=", Tok::Assign(Some(AssignOp::Mul))),
    ("/=", Tok::Assign(Some(AssignOp::Div))),
    ("%=", Tok::Assign(Some(AssignOp::Rem))),
    ("&=", Tok::Assign(Some(AssignOp::And))),
    ("|=", Tok::Assign(Some(AssignOp::Or))),
    ("^=", Tok::Assign(Some(AssignOp::Xor))),
    ("++", Tok::PlusPlus),
    ("--", Tok::MinusMinus),
    ("&&", Tok::AmpAmp),
    ("||", Tok::PipePipe),
    ("<<", Tok::Shl),
    (">>", Tok::Shr),
    ("==", Tok::EqEq),
    ("!=", Tok::NotEq),
    ("<=", Tok::Le),
    (">=", Tok::Ge),
    ("(", Tok::LParen),
    (")", Tok::RParen),
    ("{", Tok::LBrace),
    ("}", Tok::RBrace),
    ("[", Tok::LBracket),
    ("]", Tok::RBracket),
    (";", Tok::Semi),
    (",", Tok::Comma),
    (".", Tok::Dot),
    ("?", Tok::Question),
    (":", Tok::Colon),
    ("=", Tok::Assign(None)),
    ("+", Tok::Plus),
    ("-", Tok::Minus),
    ("*", Tok::Star),
    ("/", Tok::Slash),
    ("%", Tok::Percent),
    ("&", Tok::Amp),
    ("|", Tok::Pipe),
    ("^", Tok::Caret),
    ("~", Tok::Tilde),
    ("!", Tok::Bang),
    ("<", Tok::Lt),
    (">", Tok::Gt),
];

struct Lexer<'s, 'd> {
    text: &'s str,
    bytes: &'s [u8],
    pos: usize,
    file: FileId,
    sink: &'s mut Sink<'d>,
    out: Vec<Token>,
}

/// Tokenize one file. The result always ends with [`Tok::Eof`].
pub fn lex(file: FileId, text: &str, sink: &mut Sink<'_>) -> Vec<Token> {
    let mut lx = Lexer {
        text,
        bytes: text.as_bytes(),
        // A byte-order mark at the start of a file is not a token.
        pos: if text.starts_with('\u{feff}') { 3 } else { 0 },
        file,
        sink,
        out: Vec::new(),
    };
    lx.run();
    lx.push(Tok::Eof, text.len());
    lx.out
}

impl Lexer<'_, '_> {
    fn peek(&self, k: usize) -> u8 {
        self.bytes.get(self.pos + k).copied().unwrap_or(0)
    }

    fn span(&self, start: usize) -> Span {
        Span::new(self.file, start, self.pos)
    }

    fn push(&mut self, tok: Tok, start: usize) {
        let span = self.span(start);
        let prev_end = self.out.last().map_or(0, |t| t.span.end as usize);
        let after_newline = self.bytes[prev_end.min(start)..start].contains(&b'\n');
        self.out.push(Token {
            tok,
            span,
            after_newline,
        });
    }

    fn error(&mut self, start: usize, msg: impl Into<String>) {
        let span = self.span(start);
        self.sink.error(span, msg);
    }

    fn run(&mut self) {
        while self.pos < self.bytes.len() {
            let start = self.pos;
            let c = self.bytes[self.pos];
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0c => self.pos += 1,
                b'/' if self.peek(1) == b'/' => {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'/' if self.peek(1) == b'*' => self.block_comment(),
                b'A'..=b'Z' | b'a'..=b'z' | b'_' => self.ident(),
                b'0'..=b'9' => self.number(),
                b'.' if self.peek(1).is_ascii_digit() => self.number(),
                b'"' => self.string(),
                b'\'' => {
                    self.pos += 1;
                    while self.pos < self.bytes.len()
                        && !matches!(self.bytes[self.pos], b'\'' | b'\n')
                    {
                        self.pos += 1;
                    }
                    if self.peek(0) == b'\'' {
                        self.pos += 1;
                    }
                    self.error(start, "character literals are not supported in CapJava");
                    // A stand-in token keeps the parser from reporting a second error.
                    self.push(
                        Tok::Int {
                            value: 0,
                            hex: false,
                        },
                        start,
                    );
                }
                _ => {
                    if let Some((s, t)) = PUNCT
                        .iter()
                        .find(|(s, _)| self.bytes[self.pos..].starts_with(s.as_bytes()))
                    {
                        self.pos += s.len();
                        self.push(t.clone(), start);
                    } else {
                        let ch = self.text[self.pos..].chars().next().unwrap_or('\u{fffd}');
                        self.pos += ch.len_utf8();
                        self.error(
                            start,
                            format!("unexpected character `{}`", ch.escape_debug()),
                        );
                    }
                }
            }
        }
    }

    fn block_comment(&mut self) {
        let start = self.pos;
        self.pos += 2;
        loop {
            if self.pos >= self.bytes.len() {
                self.error(start, "unterminated block comment");
                return;
            }
            if self.bytes[self.pos] == b'*' && self.peek(1) == b'/' {
                self.pos += 2;
                return;
            }
            self.pos += 1;
        }
    }

    fn ident(&mut self) {
        let start = self.pos;
        while self.pos < self.bytes.len()
            && (self.bytes[self.pos].is_ascii_alphanumeric() || self.bytes[self.pos] == b'_')
        {
            self.pos += 1;
        }
        let s = &self.text[start..self.pos];
        let tok = keyword(s).unwrap_or_else(|| Tok::Ident(s.to_string()));
        self.push(tok, start);
    }

    fn eat_digits(&mut self, pred: fn(u8) -> bool) -> String {
        let mut s = String::new();
        while self.pos < self.bytes.len() {
            let c = self.bytes[self.pos];
            if pred(c) {
                s.push(c as char);
            } else if c != b'_' {
                break;
            }
            self.pos += 1;
        }
        s
    }

    fn number(&mut self) {
        let start = self.pos;
        if self.peek(0) == b'0' && matches!(self.peek(1), b'x' | b'X') {
            self.pos += 2;
            let digits = self.eat_digits(|c| c.is_ascii_hexdigit());
            self.check_suffix(start);
            if digits.is_empty() {
                self.error(start, "hexadecimal literal has no digits");
                self.push(
                    Tok::Int {
                        value: 0,
                        hex: true,
                    },
                    start,
                );
                return;
            }
            let value = u64::from_str_radix(&digits, 16).unwrap_or_else(|_| {
                self.error(start, "integer literal does not fit in 64 bits");
                0
            });
            self.push(Tok::Int { value, hex: true }, start);
            return;
        }
        let int_part = self.eat_digits(|c| c.is_ascii_digit());
        let mut is_double = false;
        let mut text = int_part.clone();
        if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
            is_double = true;
            self.pos += 1;
            text.push('.');
            text.push_str(&self.eat_digits(|c| c.is_ascii_digit()));
        } else if self.peek(0) == b'.'
            && !int_part.is_empty()
            && !self.peek(1).is_ascii_alphabetic()
        {
            // `1.` is a double in Java.
            is_double = true;
            self.pos += 1;
        }
        if matches!(self.peek(0), b'e' | b'E') {
            let save = self.pos;
            self.pos += 1;
            let mut exp = String::from("e");
            if matches!(self.peek(0), b'+' | b'-') {
                exp.push(self.peek(0) as char);
                self.pos += 1;
            }
            let digits = self.eat_digits(|c| c.is_ascii_digit());
            if digits.is_empty() {
                self.pos = save + 1;
                self.error(start, "malformed exponent in floating-point literal");
            } else {
                is_double = true;
                text.push_str(&exp);
                text.push_str(&digits);
            }
        }
        self.check_suffix(start);
        if is_double {
            let v = text.parse::<f64>().unwrap_or(0.0);
            if v.is_infinite() {
                self.error(start, "floating-point literal is too large");
            }
            self.push(Tok::Double(v), start);
        } else {
            let value = int_part.parse::<u64>().unwrap_or_else(|_| {
                self.error(start, "integer literal does not fit in 64 bits");
                0
            });
            self.push(Tok::Int { value, hex: false }, start);
        }
    }

    /// Reject identifier characters glued to a number (`12abc`, `1L`, `2.0f`).
    fn check_suffix(&mut self, start: usize) {
        if self.peek(0).is_ascii_alphanumeric() || self.peek(0) == b'_' {
            while self.peek(0).is_ascii_alphanumeric() || self.peek(0) == b'_' {
                self.pos += 1;
            }
            self.error(
                start,
                "malformed number literal (suffixes are not supported)",
            );
        }
    }

    fn string(&mut self) {
        let start = self.pos;
        self.pos += 1;
        let mut s = String::new();
        loop {
            if self.pos >= self.bytes.len() || self.bytes[self.pos] == b'\n' {
                self.error(start, "unterminated string literal");
                break;
            }
            let ch = self.text[self.pos..].chars().next().unwrap_or('\u{fffd}');
            match ch {
                '"' => {
                    self.pos += 1;
                    break;
                }
                '\\' => {
                    let esc_start = self.pos;
                    self.pos += 1;
                    let e = self.text[self.pos..].chars().next().unwrap_or('\0');
                    if e != '\n' && self.pos < self.bytes.len() {
                        self.pos += e.len_utf8();
                    }
                    match e {
                        'n' => s.push('\n'),
                        't' => s.push('\t'),
                        'r' => s.push('\r'),
                        'b' => s.push('\u{8}'),
                        'f' => s.push('\u{c}'),
                        '0' => s.push('\0'),
                        '"' => s.push('"'),
                        '\'' => s.push('\''),
                        '\\' => s.push('\\'),
                        'u' => {
                            let hex: String = self.text[self.pos..].chars().take(4).collect();
                            let code = (hex.len() == 4
                                && hex.chars().all(|c| c.is_ascii_hexdigit()))
                            .then(|| u32::from_str_radix(&hex, 16).ok())
                            .flatten()
                            .and_then(char::from_u32);
                            match code {
                                Some(c) => {
                                    self.pos += 4;
                                    s.push(c);
                                }
                                None => self
                                    .error(esc_start, "invalid unicode escape (expected \\uXXXX)"),
                            }
                        }
                        _ => self.error(esc_start, "invalid escape sequence in string literal"),
                    }
                }
                c => {
                    s.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
        self.push(Tok::Str(s), start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::SourceFile;

    fn toks(src: &str) -> (Vec<Tok>, Vec<String>) {
        let files = vec![SourceFile {
            name: "t.cj".into(),
            text: src.into(),
        }];
        let mut sink = Sink::new(&files);
        let t = lex(FileId(0), src, &mut sink);
        (
            t.into_iter().map(|t| t.tok).collect(),
            sink.diags.iter().map(|d| d.message.clone()).collect(),
        )
    }

    #[test]
    fn numbers() {
        let (t, e) = toks("1_000 0xff 1.5 1e-3 2.0e10 .5 3.");
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(
            t,
            vec![
                Tok::Int {
                    value: 1000,
                    hex: false
                },
                Tok::Int {
                    value: 255,
                    hex: true
                },
                Tok::Double(1.5),
                Tok::Double(1e-3),
                Tok::Double(2.0e10),
                Tok::Double(0.5),
                Tok::Double(3.0),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn overflow_and_bad_literals() {
        let (_, e) = toks("99999999999999999999 0x1_0000_0000_0000_0000 12ab 0x 'c' \"abc");
        assert_eq!(
            e,
            vec![
                "integer literal does not fit in 64 bits",
                "integer literal does not fit in 64 bits",
                "malformed number literal (suffixes are not supported)",
                "hexadecimal literal has no digits",
                "character literals are not supported in CapJava",
                "unterminated string literal",
            ]
        );
    }

    #[test]
    fn operators_and_comments() {
        let (t, e) = toks("a >>>= b >>> c /* x */ // y\n ++ -- && || <= != !");
        assert!(e.is_empty());
        assert_eq!(
            t,
            vec![
                Tok::Ident("a".into()),
                Tok::Assign(Some(AssignOp::UShr)),
                Tok::Ident("b".into()),
                Tok::UShr,
                Tok::Ident("c".into()),
                Tok::PlusPlus,
                Tok::MinusMinus,
                Tok::AmpAmp,
                Tok::PipePipe,
                Tok::Le,
                Tok::NotEq,
                Tok::Bang,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn string_escapes() {
        let (t, e) = toks(r#""a\n\t\"\\\u0041" "\q""#);
        assert_eq!(t[0], Tok::Str("a\n\t\"\\A".into()));
        assert_eq!(e, vec!["invalid escape sequence in string literal"]);
    }
}
