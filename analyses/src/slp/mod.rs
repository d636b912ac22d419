//! SLP-compressed traces: a trace as a straight-line program (a grammar that
//! generates exactly one string), compressed online ([`Compressor`]), stored in the
//! `.slp` format ([`write_slp`], [`read_slp`]), expanded as a stream with bounded
//! memory ([`Expander`]), and analysed on the grammar itself by `hb` and `eraser`
//! ([`hb::analyze_hb`], [`lockset::analyze_lockset`]) after Kini, Mathur &
//! Viswanathan, *Data Race Detection on Compressed Traces* (ESEC/FSE'18, §3–§4).
//! The format and what is analysed where are described in `docs/architecture.md`
//! ("Compressed traces").
//!
//! # The grammar
//! Terminals are the distinct event *labels* of the trace: thread, operation and
//! operands, and the site (a site equal to the event's line number, which is what the
//! reader gives a line without a location column, is stored as "the line", so such
//! traces still repeat). Rules are numbered so that a rule uses only terminals and
//! lower-numbered rules; the last rule is the start rule. A right-hand side is a list
//! of items `(symbol, count)`, `count ≥ 1` copies of the symbol in a row: a run-length
//! SLP (a run `X^k` is what a loop leaves, and both its storage and its analysis cost
//! O(log k) rather than k). The file events are the expansion; line numbers come from
//! a piecewise map (comment and header lines shift them), and the reader's inserted
//! thread start/end events are inserted again on expansion by the same
//! [`crate::trace::Normalizer`], so the expansion is exactly the event stream the STD
//! reader gives for the original file.

pub mod analyze;
mod compress;
mod format;
pub mod hb;
pub mod lockset;
pub mod sequitur;
pub mod shapes;
pub mod stream;
mod summary;
pub mod ziptrack;

use std::sync::Arc;

use crate::event::{OwnedEvent, OwnedKind, SiteId, Tid};
use crate::trace::{Normalizer, TraceEnv};

pub use compress::{Compressor, MAX_PERIOD};
pub use format::{MAGIC, SlpError, VERSION, is_slp, read_slp, write_slp};

/// How a terminal's site is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SiteCode {
    /// The event's own line number (as the reader numbers a line without location).
    Line,
    Site(SiteId),
}

/// A terminal: one distinct event label.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    pub tid: Tid,
    pub site: SiteCode,
    pub kind: OwnedKind,
}

/// A symbol on a right-hand side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sym {
    /// Terminal number.
    T(u32),
    /// Rule number.
    R(u32),
}

/// `count` copies of `sym` in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Item {
    pub sym: Sym,
    pub count: u64,
}

/// A compressed trace.
#[derive(Clone, Debug)]
pub struct Grammar {
    /// The trace's names (threads, variables, locks, methods, sites).
    pub env: Arc<TraceEnv>,
    pub terminals: Vec<Label>,
    /// Rule `i` uses terminals and rules below `i`; the last rule is the start rule.
    pub rules: Vec<Vec<Item>>,
    /// Line map: `(position, line)` pieces, positions 1-based and increasing; event
    /// `p` has line `line + (p - position)` of the last piece with `position ≤ p`;
    /// empty: event `p` is line `p`.
    pub lines: Vec<(u64, u64)>,
    /// Expanded length of each rule (events).
    lens: Vec<u64>,
    /// Offsets of the start rule's items (for [`Grammar::terminal_at`]).
    root_offsets: Vec<u64>,
}

/// A grammar that breaks the rules above (the reader's and the builders' check).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrammarError {
    /// Rule number (or `None` for the grammar as a whole).
    pub rule: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for GrammarError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.rule {
            Some(r) => write!(f, "rule {r}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// The longest expansion accepted (events).
pub const MAX_EVENTS: u64 = 1 << 62;

impl Grammar {
    /// Check the numbering, the counts and the line map, and compute the lengths.
    pub fn new(
        env: Arc<TraceEnv>,
        terminals: Vec<Label>,
        rules: Vec<Vec<Item>>,
        lines: Vec<(u64, u64)>,
    ) -> Result<Grammar, GrammarError> {
        let gerr = |rule, message: String| GrammarError { rule, message };
        if rules.is_empty() {
            return Err(gerr(None, "no start rule".into()));
        }
        let mut lens = Vec::with_capacity(rules.len());
        for (i, rhs) in rules.iter().enumerate() {
            let mut len: u64 = 0;
            for it in rhs {
                if it.count == 0 {
                    return Err(gerr(Some(i), "an item with count 0".into()));
                }
                let l = match it.sym {
                    Sym::T(t) if (t as usize) < terminals.len() => 1u64,
                    Sym::T(t) => {
                        return Err(gerr(
                            Some(i),
                            format!(
                                "terminal {t} does not exist ({} terminals)",
                                terminals.len()
                            ),
                        ));
                    }
                    Sym::R(r) if (r as usize) < i => lens[r as usize],
                    Sym::R(r) => {
                        return Err(gerr(
                            Some(i),
                            format!("uses rule {r}, which is not below it"),
                        ));
                    }
                };
                len = l
                    .checked_mul(it.count)
                    .and_then(|x| len.checked_add(x))
                    .filter(|&x| x <= MAX_EVENTS)
                    .ok_or_else(|| {
                        gerr(Some(i), format!("expands to more than {MAX_EVENTS} events"))
                    })?;
            }
            lens.push(len);
        }
        let total = *lens.last().unwrap_or(&0);
        let mut last: Option<(u64, u64)> = None;
        for (k, &(p, line)) in lines.iter().enumerate() {
            // Lines increase at least as fast as events (every event is a line).
            let ordered = match last {
                None => true,
                Some((q, lq)) => p > q && line - lq.min(line) >= p - q && line > lq,
            };
            if !ordered || p == 0 || p > total || line < p {
                return Err(gerr(
                    None,
                    format!("line map entry {k} ({p}, {line}) is out of order or out of range"),
                ));
            }
            last = Some((p, line));
        }
        // An empty map: every event is its own line.
        if !lines.is_empty() && lines.first().map(|l| l.0) != Some(1) {
            return Err(gerr(None, "the line map does not start at event 1".into()));
        }
        // The last line must fit in u64.
        if let Some(&(p, line)) = lines.last()
            && line.checked_add(total - p.min(total)).is_none()
        {
            return Err(gerr(None, "line numbers overflow".into()));
        }
        let mut root_offsets = Vec::new();
        let mut off = 0u64;
        for it in rules.last().into_iter().flatten() {
            root_offsets.push(off);
            off += it.count
                * match it.sym {
                    Sym::T(_) => 1,
                    Sym::R(r) => lens[r as usize],
                };
        }
        Ok(Grammar {
            env,
            terminals,
            rules,
            lines,
            lens,
            root_offsets,
        })
    }

    /// Events of the expansion (the file's events, not the inserted ones).
    pub fn events(&self) -> u64 {
        *self.lens.last().unwrap_or(&0)
    }

    pub fn len_of(&self, sym: Sym) -> u64 {
        match sym {
            Sym::T(_) => 1,
            Sym::R(r) => self.lens[r as usize],
        }
    }

    pub fn root(&self) -> u32 {
        (self.rules.len() - 1) as u32
    }

    /// Grammar size: items on all right-hand sides, a run (count > 1) counting as two
    /// (symbol and count). Comparable with Sequitur's symbols on right-hand sides.
    pub fn size(&self) -> u64 {
        self.rules
            .iter()
            .flatten()
            .map(|it| if it.count > 1 { 2 } else { 1 })
            .sum()
    }

    /// The line number of event `p` (1-based).
    pub fn line_of(&self, p: u64) -> u64 {
        let k = self.lines.partition_point(|&(q, _)| q <= p);
        match k.checked_sub(1).map(|k| self.lines[k]) {
            Some((q, line)) => line + (p - q),
            None => p,
        }
    }

    /// The terminal at event `p` (1-based), by a descent from the start rule.
    pub fn terminal_at(&self, p: u64) -> Option<u32> {
        if p == 0 || p > self.events() {
            return None;
        }
        let mut off = p - 1;
        // The start rule can be long: find its item by binary search.
        let k = self.root_offsets.partition_point(|&o| o <= off) - 1;
        let it = self.rules[self.root() as usize][k];
        off = (off - self.root_offsets[k]) % self.len_of(it.sym);
        let mut rule = match it.sym {
            Sym::T(t) => return Some(t),
            Sym::R(r) => r,
        };
        loop {
            let mut next = None;
            for it in &self.rules[rule as usize] {
                let l = self.len_of(it.sym);
                let span = l * it.count;
                if off < span {
                    off %= l;
                    next = Some(it.sym);
                    break;
                }
                off -= span;
            }
            match next? {
                Sym::T(t) => return Some(t),
                Sym::R(r) => rule = r,
            }
        }
    }

    /// The file event at position `p` (1-based) as the reader gives it.
    pub fn event_at(&self, p: u64) -> Option<OwnedEvent> {
        self.terminal_at(p).map(|t| self.event(t, p))
    }

    /// Terminal `t` as the event at position `p`.
    pub fn event(&self, t: u32, p: u64) -> OwnedEvent {
        let l = &self.terminals[t as usize];
        let index = self.line_of(p);
        OwnedEvent {
            tid: l.tid,
            site: match l.site {
                SiteCode::Line => SiteId(index as u32 & !crate::trace::TOKEN_SITE_BIT),
                SiteCode::Site(s) => s,
            },
            index,
            kind: l.kind.clone(),
        }
    }

    /// The terminals of the expansion in order (no validation, no inserted events).
    pub fn terminal_stream(&self) -> impl Iterator<Item = u32> + '_ {
        let mut x = Expander::new(self);
        std::iter::from_fn(move || x.next_terminal())
    }

    /// The grammar size of a classic Sequitur run over the same terminals (the
    /// baseline the README compares with; time and memory of Sequitur itself).
    pub fn sequitur_size(&self) -> u64 {
        let mut q = sequitur::Sequitur::new();
        for t in self.terminal_stream() {
            q.push(t as u64);
        }
        q.finish().size()
    }

    /// A streaming expansion.
    pub fn expander(&self) -> Expander<'_> {
        Expander::new(self)
    }

    /// The whole expansion as the reader's events (tests, small traces).
    pub fn expand_all(&self) -> Result<Vec<OwnedEvent>, ExpandError> {
        let mut out = Vec::new();
        let mut x = self.expander();
        while x.next_batch(&mut out, usize::MAX)? {}
        Ok(out)
    }
}

/// The expansion is not a well-formed trace (the message of the STD reader's check).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpandError {
    /// 1-based position of the event in the expansion.
    pub position: u64,
    /// Its line number.
    pub line: u64,
    pub message: String,
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "event {} (line {}): {}",
            self.position, self.line, self.message
        )
    }
}

/// The expansion as a stream: an explicit stack over the grammar (depth at most the
/// number of rules), validated and completed with thread start/end events by the
/// STD reader's [`Normalizer`]. Memory: the stack and the normalizer's per-thread
/// state, whatever the length of the trace.
pub struct Expander<'g> {
    g: &'g Grammar,
    /// (rule, item, copies of the item still to expand after the current one).
    stack: Vec<(u32, usize, u64)>,
    pos: u64,
    norm: Normalizer,
    done: bool,
}

impl<'g> Expander<'g> {
    fn new(g: &'g Grammar) -> Self {
        Expander {
            g,
            stack: vec![(g.root(), 0, 0)],
            pos: 0,
            norm: Normalizer::new(),
            done: false,
        }
    }

    /// The next terminal of the expansion, without validation.
    fn next_terminal(&mut self) -> Option<u32> {
        loop {
            let (r, i, left) = self.stack.last_mut()?;
            let rhs = &self.g.rules[*r as usize];
            if *i >= rhs.len() {
                self.stack.pop();
                continue;
            }
            let it = rhs[*i];
            // Take one copy of item `i`.
            if *left == 0 {
                *left = it.count;
            }
            *left -= 1;
            if *left == 0 {
                *i += 1;
            }
            match it.sym {
                Sym::T(t) => return Some(t),
                Sym::R(x) => {
                    if self.g.lens[x as usize] > 0 {
                        self.stack.push((x, 0, 0));
                    }
                }
            }
        }
    }

    /// Append the next events (inserted ones included) to `out` until it holds at
    /// least `max` or the expansion ends; returns whether more may follow.
    pub fn next_batch(
        &mut self,
        out: &mut Vec<OwnedEvent>,
        max: usize,
    ) -> Result<bool, ExpandError> {
        if self.done {
            return Ok(false);
        }
        let env = self.g.env.clone();
        while out.len() < max {
            let Some(t) = self.next_terminal() else {
                self.norm.finish(out);
                self.done = true;
                return Ok(false);
            };
            self.pos += 1;
            let ev = self.g.event(t, self.pos);
            let line = ev.index;
            self.norm
                .push_named(ev, &|t| env.thread_name(t), out)
                .map_err(|message| ExpandError {
                    position: self.pos,
                    line,
                    message,
                })?;
        }
        Ok(true)
    }

    /// File events expanded so far.
    pub fn position(&self) -> u64 {
        self.pos
    }
}
