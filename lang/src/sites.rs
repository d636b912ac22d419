//! Interning of source sites (`file:line:col` + enclosing function) into `Program.sites`.

use crate::ir::{FileId, FuncId, Site, SiteId, SourceFile};
use crate::span::{LineIndex, Span};
use std::collections::HashMap;

pub struct SiteTable<'a> {
    files: &'a [SourceFile],
    lines: Vec<LineIndex>,
    sites: Vec<Site>,
    /// The span each site was first interned with (parallel to `sites`), for
    /// diagnostics produced after lowering.
    spans: Vec<Span>,
    map: HashMap<(FileId, u32, Option<FuncId>), SiteId>,
}

impl<'a> SiteTable<'a> {
    pub fn new(files: &'a [SourceFile]) -> SiteTable<'a> {
        SiteTable {
            files,
            lines: files.iter().map(|f| LineIndex::new(&f.text)).collect(),
            // Site 0: "unknown".
            sites: vec![Site {
                file: FileId(0),
                line: 0,
                col: 0,
                func: None,
            }],
            spans: vec![Span::default()],
            map: HashMap::new(),
        }
    }

    /// The site at the start of `span`, inside `func` (None for declarations and
    /// static initialisers).
    pub fn intern(&mut self, span: Span, func: Option<FuncId>) -> SiteId {
        if let Some(id) = self.map.get(&(span.file, span.start, func)) {
            return *id;
        }
        let (line, col) = match (
            self.lines.get(span.file.index()),
            self.files.get(span.file.index()),
        ) {
            (Some(idx), Some(f)) => idx.line_col(&f.text, span.start as usize),
            _ => (0, 0),
        };
        let id = SiteId(self.sites.len() as u32);
        self.sites.push(Site {
            file: span.file,
            line,
            col,
            func,
        });
        self.spans.push(span);
        self.map.insert((span.file, span.start, func), id);
        id
    }

    /// `file:line:col` of an interned site.
    pub fn describe(&self, id: SiteId) -> String {
        match self.sites.get(id.index()) {
            Some(s) if id.0 != 0 => {
                let name = self
                    .files
                    .get(s.file.index())
                    .map_or("<unknown>", |f| f.name.as_str());
                format!("{name}:{}:{}", s.line, s.col)
            }
            _ => "<unknown>".to_string(),
        }
    }

    /// The site table and, parallel to it, the span of each site.
    pub fn into_parts(self) -> (Vec<Site>, Vec<Span>) {
        (self.sites, self.spans)
    }
}
