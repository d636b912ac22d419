//! Compiler diagnostics: errors and warnings with a file position, rendered rustc-style.

use crate::ir::{FileId, SourceFile};
use crate::span::{LineIndex, Span};
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::{self, Files};
use codespan_reporting::term;
use std::fmt::Write as _;
use std::ops::Range;

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
    /// A source line longer than [`SNIPPET_WIDTH`] characters is cut to a window
    /// around the span, marked with `…`.
    pub fn render(&self, files: &[SourceFile], color: bool) -> String {
        let config = term::Config::default();
        let mut out = String::new();
        for d in &self.items {
            let (snippet, cd) = to_codespan(d, files);
            let rendered = if color {
                let mut buf = term::termcolor::Buffer::ansi();
                term::emit_to_write_style(&mut buf, &config, &snippet, &cd)
                    .map(|()| String::from_utf8_lossy(buf.as_slice()).into_owned())
            } else {
                term::emit_into_string(&config, &snippet, &cd)
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

/// Source lines longer than this many characters are cut in snippets.
pub const SNIPPET_WIDTH: usize = 160;

/// The source line of one diagnostic, possibly cut to a window: what codespan renders
/// (the rest of the file is never needed, so rendering costs no more than the line).
struct Snippet<'a> {
    name: &'a str,
    /// The shown part of the line, with `…` where it was cut.
    text: String,
    /// 1-based line number, and the 1-based column of `text[label_start]`.
    line: usize,
    col: usize,
    label_start: usize,
}

impl<'a> Files<'a> for Snippet<'a> {
    type FileId = ();
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, (): ()) -> Result<&'a str, files::Error> {
        Ok(self.name)
    }
    fn source(&'a self, (): ()) -> Result<&'a str, files::Error> {
        Ok(&self.text)
    }
    fn line_index(&'a self, (): (), _byte: usize) -> Result<usize, files::Error> {
        Ok(0)
    }
    fn line_number(&'a self, (): (), _line_index: usize) -> Result<usize, files::Error> {
        Ok(self.line)
    }
    fn column_number(
        &'a self,
        (): (),
        _line_index: usize,
        byte: usize,
    ) -> Result<usize, files::Error> {
        let chars = |a: usize, b: usize| self.text.get(a..b).map_or(0, |t| t.chars().count());
        Ok(if byte >= self.label_start {
            self.col + chars(self.label_start, byte)
        } else {
            self.col.saturating_sub(chars(byte, self.label_start))
        })
    }
    fn line_range(&'a self, (): (), _line_index: usize) -> Result<Range<usize>, files::Error> {
        Ok(0..self.text.len())
    }
}

fn to_codespan<'a>(d: &Diagnostic, files: &'a [SourceFile]) -> (Snippet<'a>, cs::Diagnostic<()>) {
    let severity = match d.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
    };
    let mut cd = cs::Diagnostic::new(severity)
        .with_message(&d.message)
        .with_notes(d.notes.clone());
    let mut snippet = Snippet {
        name: "",
        text: String::new(),
        line: d.line as usize,
        col: d.col as usize,
        label_start: 0,
    };
    if let (true, Some(f)) = (d.has_position(), files.get(d.file.index())) {
        let text = f.text.as_str();
        let start = floor_boundary(text, d.start);
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let end = floor_boundary(text, d.end.clamp(start, line_end));
        // The window: the whole line if short, else up to a third of the width before
        // the span and the rest after its start.
        let mut from = line_start;
        let mut to = line_end;
        if text[line_start..line_end]
            .chars()
            .nth(SNIPPET_WIDTH)
            .is_some()
        {
            from = text[line_start..start]
                .char_indices()
                .rev()
                .nth(SNIPPET_WIDTH / 3 - 1)
                .map_or(line_start, |(i, _)| line_start + i);
            to = text[from..line_end]
                .char_indices()
                .nth(SNIPPET_WIDTH)
                .map_or(line_end, |(i, _)| from + i);
        }
        let cut_left = if from > line_start { "…" } else { "" };
        let cut_right = if to < line_end { "…" } else { "" };
        snippet.name = f.name.as_str();
        snippet.text = format!(
            "{cut_left}{}{cut_right}",
            text[from..to].trim_end_matches('\r')
        );
        snippet.label_start = cut_left.len() + start - from;
        let label_end = cut_left.len() + end.min(to) - from;
        let label_end = label_end.min(snippet.text.len() - cut_right.len());
        cd = cd.with_labels(vec![cs::Label::primary(
            (),
            snippet.label_start..label_end.max(snippet.label_start),
        )]);
    }
    (snippet, cd)
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

/// At most this many errors, and as many warnings, are kept per file (javac's default
/// `-Xmaxerrs`): past it, input with an error in every statement would cost time and
/// output in proportion to its size times its number of errors. [`Sink::finish`] says
/// how many were left out.
pub const MAX_PER_FILE: u32 = 100;

/// Collects diagnostics for one file, computing line/column from spans.
pub struct Sink<'a> {
    pub files: &'a [SourceFile],
    lines: Vec<LineIndex>,
    pub diags: Diagnostics,
    /// Per file: errors and warnings reported, kept or not.
    counts: Vec<[u32; 2]>,
}

impl<'a> Sink<'a> {
    pub fn new(files: &'a [SourceFile]) -> Sink<'a> {
        Sink {
            files,
            lines: files.iter().map(|f| LineIndex::new(&f.text)).collect(),
            diags: Diagnostics::new(),
            counts: vec![[0; 2]; files.len()],
        }
    }

    /// The diagnostics, sorted by position, followed by one position-less note per
    /// file and severity that had more than [`MAX_PER_FILE`].
    pub fn finish(self) -> Diagnostics {
        let mut d = self.diags;
        d.sort();
        for (f, counts) in self.files.iter().zip(&self.counts) {
            for (severity, n) in [(Severity::Error, counts[0]), (Severity::Warning, counts[1])] {
                if n > MAX_PER_FILE {
                    let word = severity_word(severity);
                    d.push_global(
                        severity,
                        format!(
                            "{} more {word}s in {} not shown (at most {MAX_PER_FILE} {word}s are reported per file)",
                            n - MAX_PER_FILE,
                            f.name
                        ),
                    );
                }
            }
        }
        d
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
        if let Some(c) = self.counts.get_mut(span.file.index()) {
            let n = &mut c[usize::from(severity == Severity::Warning)];
            *n += 1;
            if *n > MAX_PER_FILE {
                return;
            }
        }
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
