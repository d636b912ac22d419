//! Compiler diagnostics: errors and warnings with a file position, rendered rustc-style.

use crate::ir::{FileId, SourceFile};
use crate::span::{LineIndex, Span};
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term;
use std::fmt::Write as _;

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Severity {
    Error,
    Warning,
}

/// One message. `start..end` are byte offsets into the file; `line`/`col` are 1-based
/// (col in characters). A diagnostic without a position (an I/O error, a missing `main`)
/// has `line == 0`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub file: FileId,
    pub start: usize,
    pub end: usize,
    pub line: u32,
    pub col: u32,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn has_position(&self) -> bool {
        self.line > 0
    }
}

/// An ordered collection of diagnostics.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new() -> Diagnostics {
        Diagnostics::default()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }
    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }
    /// Sort by file and position (position-less diagnostics last), keeping the
    /// emission order of diagnostics at the same position.
    pub fn sort(&mut self) {
        self.items
            .sort_by_key(|d| (!d.has_position(), d.file, d.start, d.end));
    }
    /// A diagnostic without a source position.
    pub fn push_global(&mut self, severity: Severity, message: impl Into<String>) {
        self.items.push(Diagnostic {
            severity,
            message: message.into(),
            file: FileId(0),
            start: 0,
            end: 0,
            line: 0,
            col: 0,
            notes: Vec::new(),
        });
    }

    /// Render every diagnostic rustc-style: severity and message, `file:line:col`, the
    /// source line and a caret under the span. No escape codes when `color` is false.
    pub fn render(&self, files: &[SourceFile], color: bool) -> String {
        let mut db = SimpleFiles::new();
        for f in files {
            db.add(f.name.as_str(), f.text.as_str());
        }
        let config = term::Config::default();
        let mut out = String::new();
        for d in &self.items {
            let cd = to_codespan(d, files);
            let rendered = if color {
                let mut buf = term::termcolor::Buffer::ansi();
                term::emit_to_write_style(&mut buf, &config, &db, &cd)
                    .map(|()| String::from_utf8_lossy(buf.as_slice()).into_owned())
            } else {
                term::emit_into_string(&config, &db, &cd)
            };
            match rendered {
                Ok(s) => out.push_str(&s),
                Err(_) => out.push_str(&render_plain(d, files)),
            }
        }
        out
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn to_codespan(d: &Diagnostic, files: &[SourceFile]) -> cs::Diagnostic<usize> {
    let severity = match d.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
    };
    let mut cd = cs::Diagnostic::new(severity)
        .with_message(&d.message)
        .with_notes(d.notes.clone());
    if d.has_position() && d.file.index() < files.len() {
        let text = &files[d.file.index()].text;
        let start = floor_boundary(text, d.start);
        let end = floor_boundary(text, d.end.max(start));
        cd = cd.with_labels(vec![cs::Label::primary(d.file.index(), start..end)]);
    }
    cd
}

fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut o = offset.min(text.len());
    while !text.is_char_boundary(o) {
        o -= 1;
    }
    o
}

/// Fallback rendering when the file table does not match the diagnostic.
fn render_plain(d: &Diagnostic, files: &[SourceFile]) -> String {
    let mut s = format!("{}: {}\n", severity_word(d.severity), d.message);
    if d.has_position() {
        let name = files
            .get(d.file.index())
            .map_or("<unknown>", |f| f.name.as_str());
        let _ = writeln!(s, "  --> {}:{}:{}", name, d.line, d.col);
    }
    for n in &d.notes {
        let _ = writeln!(s, "  = note: {n}");
    }
    s
}

/// Collects diagnostics for one file, computing line/column from spans.
pub struct Sink<'a> {
    pub files: &'a [SourceFile],
    lines: Vec<LineIndex>,
    pub diags: Diagnostics,
}

impl<'a> Sink<'a> {
    pub fn new(files: &'a [SourceFile]) -> Sink<'a> {
        Sink {
            files,
            lines: files.iter().map(|f| LineIndex::new(&f.text)).collect(),
            diags: Diagnostics::new(),
        }
    }

    pub fn line_col(&self, file: FileId, offset: usize) -> (u32, u32) {
        match (self.lines.get(file.index()), self.files.get(file.index())) {
            (Some(idx), Some(f)) => idx.line_col(&f.text, offset),
            _ => (1, 1),
        }
    }

    pub fn report(&mut self, severity: Severity, span: Span, message: impl Into<String>) {
        self.report_with_notes(severity, span, message, Vec::new());
    }

    pub fn report_with_notes(
        &mut self,
        severity: Severity,
        span: Span,
        message: impl Into<String>,
        notes: Vec<String>,
    ) {
        let (line, col) = self.line_col(span.file, span.start as usize);
        let start = span.start as usize;
        let mut end = (span.end as usize).max(start);
        // Underline only the first line of a multi-line construct.
        if let Some(f) = self.files.get(span.file.index())
            && let Some(nl) = f.text.get(start..end).and_then(|t| t.find('\n'))
        {
            end = start + nl;
        }
        self.diags.push(Diagnostic {
            severity,
            message: message.into(),
            file: span.file,
            start,
            end,
            line,
            col,
            notes,
        });
    }

    pub fn error(&mut self, span: Span, message: impl Into<String>) {
        self.report(Severity::Error, span, message);
    }

    pub fn has_errors(&self) -> bool {
        self.diags.has_errors()
    }
}
