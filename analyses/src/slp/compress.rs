//! The online compressor: labels → run detector → Sequitur → run-length SLP.
//!
//! 1. Every file event becomes its label's terminal number (labels interned once).
//! 2. A *run detector* looks at the last `2p` terminals for every period
//!    `p ≤ MAX_PERIOD`: when they are two copies of one block (a square), it
//!    swallows the following copies of the block and emits one token "block × count"
//!    when the repetition ends. Per event it does `MAX_PERIOD` comparisons of
//!    counters kept incrementally (for each `p`, how many of the last terminals equal
//!    the one `p` before), so it is linear. A loop's iterations become one token.
//! 3. [`Sequitur`] compresses the token stream (a token is a terminal or a run).
//!    The first two steps are the [`Front`]; `capvm compress` runs it on the reading
//!    thread and Sequitur on another (`slp/stream.rs`), and skips the lines of a
//!    run's further copies without parsing them where their bytes repeat the copy
//!    just read ([`Front::at_copy_boundary`], [`Front::push_copies`]).
//! 4. [`Compressor::finish`] turns Sequitur's grammar into an SLP whose runs are
//!    items `(block, count)`, merges adjacent runs of one symbol, sees through rules
//!    that are a single run, and inlines rules left with one use.
//!
//! Memory: the labels, the blocks and runs seen (distinct ones), Sequitur's grammar,
//! and at most `2 · MAX_PERIOD` pending terminals: proportional to the grammar.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::event::OwnedEvent;
use crate::trace::{TOKEN_SITE_BIT, TraceEnv};

use super::sequitur::{SeqGrammar, SeqSym, Sequitur};
use super::{Grammar, Item, Label, SiteCode, Sym};

/// The longest block the run detector finds.
pub const MAX_PERIOD: usize = 16;

enum State {
    Idle,
    Run {
        block: Vec<u32>,
        count: u64,
        phase: usize,
    },
}

/// The terminal of a file event.
pub(crate) fn label_of(ev: &OwnedEvent) -> Label {
    let site = if ev.site.0 == (ev.index as u32 & !TOKEN_SITE_BIT) {
        SiteCode::Line
    } else {
        SiteCode::Site(ev.site)
    };
    Label {
        tid: ev.tid,
        site,
        kind: ev.kind.clone(),
    }
}

/// The line map of file events in order (see [`Grammar::lines`]).
pub(crate) fn line_map(events: &[OwnedEvent]) -> Vec<(u64, u64)> {
    let mut lines = Vec::new();
    let mut last = 0;
    for (i, e) in events.iter().enumerate() {
        if lines.is_empty() || e.index != last + 1 {
            lines.push((i as u64 + 1, e.index));
        }
        last = e.index;
    }
    lines
}

/// The first half of the compressor: labels, line map and run detector. It turns
/// file events into tokens for [`Sequitur`] (terminal `t` = `2t`, run `j` = `2j + 1`),
/// appended to a caller's vector, so that Sequitur can run on another thread.
pub(crate) struct Front {
    labels: HashMap<Label, u32>,
    terminals: Vec<Label>,
    lines: Vec<(u64, u64)>,
    events: u64,
    last_line: u64,
    // Run detector.
    pending: std::collections::VecDeque<u32>,
    matches: [usize; MAX_PERIOD + 1],
    state: State,
    /// Runs started so far (tells one run from the next).
    runs_started: u64,
    blocks: HashMap<Vec<u32>, u32>,
    block_list: Vec<Vec<u32>>,
    runs: HashMap<(u32, u64), u32>,
    run_list: Vec<(u32, u64)>,
}

impl Front {
    pub(crate) fn new() -> Self {
        Front {
            labels: HashMap::new(),
            terminals: Vec::new(),
            lines: Vec::new(),
            events: 0,
            last_line: 0,
            pending: Default::default(),
            matches: [0; MAX_PERIOD + 1],
            state: State::Idle,
            runs_started: 0,
            blocks: HashMap::new(),
            block_list: Vec::new(),
            runs: HashMap::new(),
            run_list: Vec::new(),
        }
    }

    /// Append one event of the file (see [`Compressor::push`]); tokens go to `out`.
    pub(crate) fn push(&mut self, ev: &OwnedEvent, out: &mut Vec<u64>) {
        debug_assert!(ev.index != 0);
        self.events += 1;
        if ev.index != self.last_line + 1 || self.lines.is_empty() {
            self.lines.push((self.events, ev.index));
        }
        self.last_line = ev.index;
        let label = label_of(ev);
        let t = match self.labels.get(&label) {
            Some(&t) => t,
            None => {
                let t = self.terminals.len() as u32;
                self.terminals.push(label.clone());
                self.labels.insert(label, t);
                t
            }
        };
        self.push_terminal(t, out);
    }

    /// The label of terminal `t`.
    pub(crate) fn label(&self, t: u32) -> &Label {
        &self.terminals[t as usize]
    }

    /// When the run detector is inside a run and the last terminals pushed are a
    /// whole copy of its block: the run's number (one per run) and the block.
    pub(crate) fn at_copy_boundary(&self) -> Option<(u64, &[u32])> {
        match &self.state {
            State::Run {
                block, phase: 0, ..
            } => Some((self.runs_started, block)),
            _ => None,
        }
    }

    /// Push `n` more copies of the current run's block, which follow on the next
    /// lines (only at a copy boundary, see [`Front::at_copy_boundary`]): what `n`
    /// times pushing the block's events, line after line, does.
    pub(crate) fn push_copies(&mut self, n: u64) {
        if let State::Run {
            block,
            count,
            phase: 0,
        } = &mut self.state
        {
            let k = n * block.len() as u64;
            *count += n;
            self.events += k;
            self.last_line += k;
        } else {
            debug_assert!(n == 0, "copies pushed outside a run");
        }
    }

    fn push_terminal(&mut self, s: u32, out: &mut Vec<u64>) {
        if let State::Run {
            block,
            count,
            phase,
        } = &mut self.state
        {
            if block[*phase] == s {
                *phase += 1;
                if *phase == block.len() {
                    *phase = 0;
                    *count += 1;
                }
                return;
            }
            // The run ends: emit it; the partial copy and `s` start over.
            let (block, count, phase) = (std::mem::take(block), *count, *phase);
            self.state = State::Idle;
            self.emit_run(&block, count, out);
            self.matches = [0; MAX_PERIOD + 1];
            for &x in block[..phase].iter().chain([&s]) {
                // A square in the partial copy may start a run again.
                self.push_terminal(x, out);
            }
            return;
        }
        self.push_idle(s, out);
    }

    fn push_idle(&mut self, s: u32, out: &mut Vec<u64>) {
        let n = self.pending.len();
        let mut found = None;
        for p in 1..=MAX_PERIOD {
            if n >= p && self.pending[n - p] == s {
                self.matches[p] += 1;
                if self.matches[p] >= p && found.is_none() {
                    found = Some(p);
                }
            } else {
                self.matches[p] = 0;
            }
        }
        self.pending.push_back(s);
        if let Some(p) = found {
            while self.pending.len() > 2 * p {
                let x = self.pending.pop_front().unwrap_or_default();
                out.push(2 * x as u64);
            }
            let block: Vec<u32> = self.pending.iter().skip(p).copied().collect();
            self.pending.clear();
            self.matches = [0; MAX_PERIOD + 1];
            self.runs_started += 1;
            self.state = State::Run {
                block,
                count: 2,
                phase: 0,
            };
            return;
        }
        if self.pending.len() > 2 * MAX_PERIOD {
            let x = self.pending.pop_front().unwrap_or_default();
            out.push(2 * x as u64);
        }
    }

    fn emit_run(&mut self, block: &[u32], count: u64, out: &mut Vec<u64>) {
        let b = match self.blocks.get(block) {
            Some(&b) => b,
            None => {
                let b = self.block_list.len() as u32;
                self.block_list.push(block.to_vec());
                self.blocks.insert(block.to_vec(), b);
                b
            }
        };
        let j = *self.runs.entry((b, count)).or_insert_with(|| {
            self.run_list.push((b, count));
            (self.run_list.len() - 1) as u32
        });
        out.push(2 * j as u64 + 1);
    }

    /// The end of the input: the last tokens.
    pub(crate) fn flush(&mut self, out: &mut Vec<u64>) {
        if let State::Run { block, count, .. } = std::mem::replace(&mut self.state, State::Idle) {
            self.emit_run(&block, count, out);
        }
        while let Some(x) = self.pending.pop_front() {
            out.push(2 * x as u64);
        }
    }

    /// The grammar of everything pushed ([`Front::flush`] first), given Sequitur's
    /// grammar of the tokens, with the trace's names `env`.
    pub(crate) fn build(self, sg: &SeqGrammar, env: Arc<TraceEnv>) -> Grammar {
        // Rules: the blocks (of two or more terminals) first, then Sequitur's rules in
        // post-order from its start rule (children first), the start rule last.
        let mut rules: Vec<Vec<Item>> = Vec::new();
        let mut block_sym = Vec::with_capacity(self.block_list.len());
        for b in &self.block_list {
            if b.len() == 1 {
                block_sym.push(Sym::T(b[0]));
            } else {
                block_sym.push(Sym::R(rules.len() as u32));
                rules.push(
                    b.iter()
                        .map(|&t| Item {
                            sym: Sym::T(t),
                            count: 1,
                        })
                        .collect(),
                );
            }
        }
        let token = |v: u64| {
            let i = (v >> 1) as usize;
            if v & 1 == 0 {
                Item {
                    sym: Sym::T(i as u32),
                    count: 1,
                }
            } else {
                let (b, count) = self.run_list[i];
                Item {
                    sym: block_sym[b as usize],
                    count,
                }
            }
        };
        let mut index = vec![u32::MAX; sg.rules.len()];
        // Iterative post-order.
        let mut stack: Vec<(u32, usize)> = vec![(0, 0)];
        let mut visiting = vec![false; sg.rules.len()];
        visiting[0] = true;
        while let Some((r, i)) = stack.pop() {
            let rhs = &sg.rules[r as usize];
            if i < rhs.len() {
                stack.push((r, i + 1));
                if let SeqSym::R(x) = rhs[i]
                    && !visiting[x as usize]
                {
                    visiting[x as usize] = true;
                    stack.push((x, 0));
                }
                continue;
            }
            index[r as usize] = rules.len() as u32;
            rules.push(
                rhs.iter()
                    .map(|s| match *s {
                        SeqSym::T(v) => token(v),
                        SeqSym::R(x) => Item {
                            sym: Sym::R(index[x as usize]),
                            count: 1,
                        },
                    })
                    .collect(),
            );
        }
        let rules = simplify(rules);
        let events = self.events;
        Grammar::new(env, self.terminals, rules, self.lines).unwrap_or_else(|e| {
            // The construction above only makes well-numbered rules; a failure here
            // is a bug in this module, not bad input.
            unreachable!("compressor built a bad grammar ({e}) for {events} events")
        })
    }
}

/// Builds a [`Grammar`] from file events pushed in order.
pub struct Compressor {
    front: Front,
    tokens: Vec<u64>,
    seq: Sequitur,
}

impl Default for Compressor {
    fn default() -> Self {
        Self::new()
    }
}

impl Compressor {
    pub fn new() -> Self {
        Compressor {
            front: Front::new(),
            tokens: Vec::new(),
            seq: Sequitur::new(),
        }
    }

    /// Events pushed so far.
    pub fn events(&self) -> u64 {
        self.front.events
    }

    /// Distinct labels so far.
    pub fn labels(&self) -> usize {
        self.front.terminals.len()
    }

    /// Append one event of the file (`index` = its line; the reader's inserted
    /// events, index 0, must not be pushed: expansion inserts them again).
    pub fn push(&mut self, ev: &OwnedEvent) {
        self.front.push(ev, &mut self.tokens);
        for t in self.tokens.drain(..) {
            self.seq.push(t);
        }
    }

    /// The grammar of everything pushed, with the trace's names `env`.
    pub fn finish(mut self, env: Arc<TraceEnv>) -> Grammar {
        self.front.flush(&mut self.tokens);
        for t in self.tokens.drain(..) {
            self.seq.push(t);
        }
        self.front.build(&self.seq.finish(), env)
    }
}

/// Merge adjacent runs of one symbol, see through rules that are a single run, inline
/// rules used once with count 1, drop unused rules; keeps the numbering order.
fn simplify(rules: Vec<Vec<Item>>) -> Vec<Vec<Item>> {
    let n = rules.len();
    let mut out: Vec<Vec<Item>> = Vec::with_capacity(n);
    for rhs in rules {
        let mut merged: Vec<Item> = Vec::with_capacity(rhs.len());
        for it in rhs {
            let mut it = it;
            // A rule that is one run: use its symbol directly.
            if let Sym::R(r) = it.sym
                && let [single] = out[r as usize][..]
                && let Some(c) = single.count.checked_mul(it.count)
            {
                it = Item {
                    sym: single.sym,
                    count: c,
                };
            }
            match merged.last_mut() {
                Some(last) if last.sym == it.sym && last.count.checked_add(it.count).is_some() => {
                    last.count += it.count
                }
                _ => merged.push(it),
            }
        }
        out.push(merged);
    }
    // Uses, then inlining of rules used once (count 1), from the top down.
    let mut uses = vec![0u64; n];
    for rhs in &out {
        for it in rhs {
            if let Sym::R(r) = it.sym {
                uses[r as usize] += if it.count == 1 { 1 } else { 2 };
            }
        }
    }
    let root = n - 1;
    for i in (0..n).rev() {
        if i != root && uses[i] == 0 {
            continue;
        }
        let mut changed = true;
        while changed {
            changed = false;
            let mut rhs = Vec::with_capacity(out[i].len());
            for it in std::mem::take(&mut out[i]) {
                match it.sym {
                    Sym::R(r) if it.count == 1 && uses[r as usize] == 1 => {
                        uses[r as usize] = 0;
                        rhs.extend(std::mem::take(&mut out[r as usize]));
                        changed = true;
                    }
                    _ => rhs.push(it),
                }
            }
            out[i] = rhs;
        }
    }
    // Drop rules with no use (recursively: a dropped rule's uses go too).
    let mut live = vec![false; n];
    live[root] = true;
    for i in (0..n).rev() {
        if live[i] {
            for it in &out[i] {
                if let Sym::R(r) = it.sym {
                    live[r as usize] = true;
                }
            }
        }
    }
    let mut index = vec![u32::MAX; n];
    let mut rules = Vec::new();
    for i in 0..n {
        if live[i] {
            index[i] = rules.len() as u32;
            let rhs: Vec<Item> = std::mem::take(&mut out[i])
                .into_iter()
                .map(|it| match it.sym {
                    Sym::R(r) => Item {
                        sym: Sym::R(index[r as usize]),
                        count: it.count,
                    },
                    s => Item {
                        sym: s,
                        count: it.count,
                    },
                })
                .collect();
            rules.push(rhs);
        }
    }
    // Merging again after inlining (runs that met at a seam).
    for rhs in &mut rules {
        let mut merged: Vec<Item> = Vec::with_capacity(rhs.len());
        for it in rhs.drain(..) {
            match merged.last_mut() {
                Some(last) if last.sym == it.sym && last.count.checked_add(it.count).is_some() => {
                    last.count += it.count
                }
                _ => merged.push(it),
            }
        }
        *rhs = merged;
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Loc, ObjId, OwnedKind, SiteId};

    fn ev(i: u64, tid: u32, kind: OwnedKind) -> OwnedEvent {
        OwnedEvent {
            tid,
            site: SiteId(1 << 20),
            index: i,
            kind,
        }
    }

    #[test]
    fn a_loop_becomes_a_run_and_expands_back() {
        let mut c = Compressor::new();
        let mut evs = Vec::new();
        let mut i = 0;
        for _round in 0..3 {
            for t in 0..2u32 {
                for _ in 0..100 {
                    for k in 0..3u32 {
                        i += 1;
                        let kind = match k {
                            0 => OwnedKind::Acquire { lock: ObjId(1) },
                            1 => OwnedKind::Read {
                                loc: Loc {
                                    obj: crate::trace::VARS,
                                    slot: t,
                                },
                            },
                            _ => OwnedKind::Release { lock: ObjId(1) },
                        };
                        evs.push(ev(i, t, kind));
                    }
                }
            }
        }
        for e in &evs {
            c.push(e);
        }
        let g = c.finish(Arc::new(TraceEnv::default()));
        assert!(g.size() < 20, "size {}: {:?}", g.size(), g.rules);
        let back: Vec<OwnedEvent> = (1..=g.events()).map(|p| g.event_at(p).unwrap()).collect();
        assert_eq!(back, evs);
    }
}
