//! The streaming STD reader (format: see the module doc of [`super`]).
//!
//! [`StdReader`] scans its input once, a line at a time, out of one buffer that is
//! refilled in place: no allocation per line, every name interned once (later
//! occurrences are hash lookups of the borrowed token), numbers parsed in place. It
//! hands events out in batches and keeps nothing of them, so memory does not grow
//! with the trace: what stays is the names and the [`Normalizer`]'s per-thread state.
//!
//! # Two sides
//! Reading is two steps that can run on two threads ([`StdReader::split`]): a
//! [`StdLexer`] splits the bytes into lines and lexes the common one, `THREAD|OP(NAME)|SITE`
//! ([`super::fastline`]), into its names' bytes as integers, its operation and its
//! site, with no name table at all; a [`StdParser`] turns those into ids (interning),
//! checks well-formedness and inserts the thread starts and ends, and reads every other
//! line (handed over as its bytes) the general way. Both sides see the lines in file
//! order, so the ids, the events and the first error are the same however they run.
//!
//! # Thread numbering without a pre-pass
//! A thread named `T<n>` (n < 1024) gets tid `n`; any other name gets the smallest tid
//! that no `T<n>` of the *whole file* uses. A reader that streams cannot know the
//! names further down, so it numbers optimistically: another name takes the smallest
//! tid that is free and not used by a `T<n>` seen so far. That is exactly the
//! whole-file numbering unless a `T<n>` appears later whose `n` an earlier name took;
//! the reader then stops with [`ReadError::Renumber`] before handing out any event of
//! that line, and the caller reads the input again from the start with the tids of
//! every `T<n>` reserved ([`reserved_tids`], a scan of the thread columns only). Only
//! traces that mix `T<n>` names with other names, a `T<n>` after the name that took
//! its number, pay for the second pass; all others are read once.

use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use hashbrown::{HashMap, HashSet};

use crate::env::SiteInfo;
use crate::event::{MethodId, ObjId, OwnedEvent, OwnedKind, SiteId, Spec, Tid};

use super::env::{MAX_NUMBERED_TID, numbered_tid};
use super::fastline::{self, NameCache, NameKind, short_key};
use super::normalize::SimpleOp;
use super::{Normalizer, TOKEN_SITE_BIT, TraceEnv, TraceError};

/// Where a trace comes from: bytes in memory or a file (opened once per pass).
#[derive(Clone, Copy, Debug)]
pub enum TraceInput<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

impl<'a> TraceInput<'a> {
    /// A fresh reader over the whole input.
    pub fn open(&self) -> io::Result<Box<dyn Read + Send + 'a>> {
        Ok(match *self {
            TraceInput::Bytes(b) => Box::new(b),
            TraceInput::File(p) => Box::new(std::fs::File::open(p)?),
        })
    }
}

/// Why [`StdReader::read_batch`] stopped.
#[derive(Debug)]
pub enum ReadError {
    /// A malformed line.
    Trace(TraceError),
    /// The input could not be read; `line` is the last line read completely.
    Io { line: usize, error: io::Error },
    /// A `T<n>` name appeared after another name took tid `n` (see the module doc):
    /// read the input again with [`StdReader::with_reserved`] and [`reserved_tids`].
    Renumber,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Trace(e) => write!(f, "{e}"),
            ReadError::Io { line, error } => {
                write!(f, "{line}: read error after this line: {error}")
            }
            ReadError::Renumber => f.write_str("thread numbering needs a second pass"),
        }
    }
}

impl std::error::Error for ReadError {}

fn err(line: usize, message: impl Into<String>) -> ReadError {
    ReadError::Trace(TraceError {
        line,
        message: message.into(),
    })
}

/// Lines out of one reusable buffer.
struct Lines<R> {
    src: R,
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    eof: bool,
    line_no: usize,
    bytes: u64,
}

const BUF_SIZE: usize = 1 << 20;
/// Bytes the buffer keeps after its filled part, so that a line's first
/// [`WINDOW`] bytes can be read as two whole 16-byte words however short the line.
pub(super) const WINDOW: usize = 32;
/// The longest line the reader takes (the buffer grows to hold a line, up to this).
pub const MAX_LINE: usize = 64 << 20;

/// Why [`Lines::next_line`] failed.
enum LineError {
    Io(io::Error),
    /// The next line is longer than [`MAX_LINE`].
    TooLong,
}

impl<R: Read> Lines<R> {
    fn new(src: R) -> Self {
        Lines {
            src,
            buf: vec![0; BUF_SIZE + WINDOW],
            pos: 0,
            filled: 0,
            eof: false,
            line_no: 0,
            bytes: 0,
        }
    }

    /// Offset in the input of `buf[0]`.
    fn base(&self) -> u64 {
        self.bytes - self.filled as u64
    }

    /// Move the unread bytes to the front of the buffer.
    fn compact(&mut self) {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.pos = 0;
        }
    }

    /// One `read` of more input into the free part of the buffer (at its end: `eof`).
    fn read_more(&mut self) -> io::Result<()> {
        let cap = self.buf.len() - WINDOW;
        match self.src.read(&mut self.buf[self.filled..cap]) {
            Ok(0) => self.eof = true,
            Ok(n) => {
                self.filled += n;
                self.bytes += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Make at least `n` bytes after `pos` available (reading more input, moving the
    /// unread bytes to the front). `false`: the input ends before (or `n` is more than
    /// the buffer holds without growing).
    fn fill_to(&mut self, n: usize) -> io::Result<bool> {
        while self.filled - self.pos < n {
            if self.eof || n > self.buf.len() - WINDOW {
                return Ok(false);
            }
            self.compact();
            self.read_more()?;
        }
        Ok(true)
    }

    /// The next line (without its `\n`), its 1-based number and the [`WINDOW`] bytes
    /// from its start (past its end they are other lines' bytes, or stale).
    #[allow(clippy::type_complexity)]
    #[inline(always)]
    fn next_line(&mut self) -> Result<Option<(usize, &[u8], &[u8; WINDOW])>, LineError> {
        // The common case: the line ends inside the window that starts it.
        let avail = self.filled - self.pos;
        if avail > 0 {
            let start = self.pos;
            // `pos < filled <= buf.len() - WINDOW`: the window is in the buffer.
            let window = |buf: &[u8]| -> [u8; WINDOW] {
                buf[start..start + WINDOW].try_into().expect("WINDOW bytes")
            };
            if let Some(i) = fastline::newline_in_window(&window(&self.buf), avail.min(WINDOW)) {
                self.pos = start + i + 1;
                self.line_no += 1;
                let w = self.buf[start..start + WINDOW]
                    .try_into()
                    .expect("WINDOW bytes");
                return Ok(Some((self.line_no, &self.buf[start..start + i], w)));
            }
        }
        let mut scanned = 0;
        let (start, end) = loop {
            let rest = &self.buf[self.pos + scanned..self.filled];
            if let Some(i) = find_newline(rest) {
                let start = self.pos;
                let end = start + scanned + i;
                self.pos = end + 1;
                break (start, end);
            }
            if self.eof {
                if self.pos == self.filled {
                    return Ok(None);
                }
                let start = self.pos;
                self.pos = self.filled;
                break (start, self.filled);
            }
            scanned = self.filled - self.pos;
            self.compact();
            let cap = self.buf.len() - WINDOW;
            if self.filled == cap {
                if cap >= MAX_LINE {
                    return Err(LineError::TooLong);
                }
                self.buf.resize((cap * 2).min(MAX_LINE) + WINDOW, 0);
            }
            self.read_more().map_err(LineError::Io)?;
        };
        self.line_no += 1;
        // `start <= filled <= buf.len() - WINDOW`: the window is in the buffer.
        let window = self.buf[start..start + WINDOW]
            .try_into()
            .expect("WINDOW bytes");
        Ok(Some((self.line_no, &self.buf[start..end], window)))
    }
}

/// Position of the first `\n`, a word at a time.
fn find_newline(s: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = LO * b'\n' as u64;
    let mut i = 0;
    while i + 8 <= s.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        let x = u64::from_le_bytes(w) ^ NL;
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    s[i..].iter().position(|&b| b == b'\n').map(|p| i + p)
}

/// Names seen so far, on the reader's side ([`TraceEnv`] gets a copy of each new one).
#[derive(Default)]
struct Interner {
    vars: HashMap<String, u32>,
    objs: HashMap<String, ObjId>,
    methods: HashMap<String, MethodId>,
    site_tokens: HashMap<String, SiteId>,
    threads: HashMap<String, Tid>,
    /// Thread names by tid (`None`: free).
    thread_names: Vec<Option<String>>,
    /// Tids of every `T<n>` of the input, when it was scanned for them.
    reserved: Option<HashSet<Tid>>,
}

impl Interner {
    fn var(&mut self, env: &TraceEnv, name: &str) -> crate::event::Loc {
        let slot = match self.vars.get(name) {
            Some(&s) => s,
            None => {
                let s = self.vars.len() as u32;
                self.vars.insert(name.to_string(), s);
                env.add_var(s, name);
                s
            }
        };
        crate::event::Loc {
            obj: super::VARS,
            slot,
        }
    }
    fn obj(&mut self, env: &TraceEnv, name: &str) -> ObjId {
        if let Some(&o) = self.objs.get(name) {
            return o;
        }
        let o = ObjId(self.objs.len() as u64 + 1);
        self.objs.insert(name.to_string(), o);
        env.add_obj(name);
        o
    }
    fn opt_obj(&mut self, env: &TraceEnv, s: Option<&str>) -> Option<ObjId> {
        match s {
            None | Some("-") => None,
            Some(n) => Some(self.obj(env, n)),
        }
    }
    fn method(&mut self, env: &TraceEnv, name: &str) -> MethodId {
        if let Some(&m) = self.methods.get(name) {
            return m;
        }
        let m = MethodId(self.methods.len() as u32);
        self.methods.insert(name.to_string(), m);
        env.add_method(name);
        m
    }
    fn site_token(&mut self, env: &TraceEnv, tok: &str) -> SiteId {
        if let Some(&s) = self.site_tokens.get(tok) {
            return s;
        }
        let s = SiteId(TOKEN_SITE_BIT | self.site_tokens.len() as u32);
        self.site_tokens.insert(tok.to_string(), s);
        env.add_site_token(tok);
        s
    }
    fn is_free(&self, t: usize) -> bool {
        self.thread_names.get(t).is_none_or(Option::is_none)
    }
    /// The tid of thread `name`, numbering it if it is new (see the module doc).
    fn thread(&mut self, env: &TraceEnv, name: &str) -> Result<Tid, ReadError> {
        if let Some(&t) = self.threads.get(name) {
            return Ok(t);
        }
        let t = match numbered_tid(name) {
            Some(n) if self.is_free(n) => n,
            // Another name took `n`: only a scan of the whole input avoids that.
            Some(_) if self.reserved.is_none() => return Err(ReadError::Renumber),
            _ => (0..)
                .find(|&i| {
                    self.is_free(i)
                        && !self
                            .reserved
                            .as_ref()
                            .is_some_and(|r| r.contains(&(i as Tid)))
                })
                .unwrap_or(self.thread_names.len()),
        };
        if self.thread_names.len() <= t {
            self.thread_names.resize(t + 1, None);
        }
        self.thread_names[t] = Some(name.to_string());
        self.threads.insert(name.to_string(), t as Tid);
        env.add_thread(t as Tid, name);
        Ok(t as Tid)
    }
    fn thread_name(&self, t: Tid) -> String {
        match self.thread_names.get(t as usize) {
            Some(Some(n)) => n.clone(),
            _ => format!("T{t}"),
        }
    }
}

pub(super) fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && !s.bytes().any(|b| {
            matches!(
                b,
                b'|' | b'(' | b')' | b',' | b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'
            )
        })
        && (s.is_ascii() || !s.chars().any(char::is_whitespace))
}

/// The arguments of an operation, split on demand (no allocation).
#[derive(Clone, Copy)]
struct Args<'a> {
    inner: Option<&'a str>,
    len: usize,
}

impl<'a> Args<'a> {
    fn get(&self, i: usize) -> Option<&'a str> {
        self.inner?.split(',').nth(i).map(str::trim)
    }
    fn iter(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.inner
            .into_iter()
            .flat_map(|s| s.split(','))
            .map(str::trim)
    }
}

/// Split `op(a,b)` into `("op", [a, b])`; `op` alone has no arguments.
fn split_op(s: &str) -> Result<(&str, Args<'_>), String> {
    match s.find('(') {
        None => {
            if s.contains(')') {
                return Err(format!("malformed operation '{s}'"));
            }
            Ok((
                s,
                Args {
                    inner: None,
                    len: 0,
                },
            ))
        }
        Some(open) => {
            let Some(inner) = s[open + 1..].strip_suffix(')') else {
                return Err(format!("malformed operation '{s}' (missing ')')"));
            };
            if inner.contains('(') || inner.contains(')') {
                return Err(format!("malformed operation '{s}'"));
            }
            let mut len = 0;
            for a in inner.split(',') {
                if !valid_name(a.trim()) {
                    return Err(format!("empty or malformed argument in '{s}'"));
                }
                len += 1;
            }
            Ok((
                s[..open].trim(),
                Args {
                    inner: Some(inner),
                    len,
                },
            ))
        }
    }
}

fn arity(op: &str, args: Args<'_>, min: usize, max: usize) -> Result<(), String> {
    if args.len < min || args.len > max {
        let want = if min == max {
            format!("{min}")
        } else if max == usize::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(format!(
            "operation '{op}' expects {want} argument{}, got {}",
            if want == "1" { "" } else { "s" },
            args.len
        ));
    }
    Ok(())
}

fn number<T: std::str::FromStr>(what: &str, s: &str) -> Result<T, String> {
    s.parse::<T>()
        .map_err(|_| format!("{what} must be a number, got '{s}'"))
}

fn spec_of(op: &str, args: Args<'_>) -> Result<Spec, String> {
    arity(op, args, 0, 1)?;
    match args.get(0) {
        None | Some("atomic") => Ok(Spec::Atomic),
        Some("det") | Some("deterministic") => Ok(Spec::Deterministic),
        Some(other) => Err(format!(
            "unknown specification '{other}' (expected 'atomic' or 'det')"
        )),
    }
}

/// A decimal `u32` without sign or leading `+` (as the location column takes it).
fn parse_u32(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok();
    }
    let mut n: u64 = 0;
    for b in s.bytes() {
        n = n * 10 + (b - b'0') as u64;
    }
    u32::try_from(n).ok()
}

/// Everything but the lines: names, well-formedness, counters.
struct Parser {
    env: Arc<TraceEnv>,
    names: Interner,
    short: ShortNames,
    norm: Normalizer,
    /// Events read from the input (not counting the inserted ones).
    events: u64,
    finished: bool,
}

impl Parser {
    /// Parse one `OP` column into an event kind.
    fn kind(&mut self, op_col: &str) -> Result<OwnedKind, ReadError> {
        let (op, args) = split_op(op_col).map_err(Msg)?;
        let env = &*self.env;
        let n = &mut self.names;
        let a0 = || args.get(0).unwrap_or("");
        let kind = match op {
            "r" => {
                arity(op, args, 1, 1).map_err(Msg)?;
                OwnedKind::Read {
                    loc: n.var(env, a0()),
                }
            }
            "w" => {
                arity(op, args, 1, 2).map_err(Msg)?;
                OwnedKind::Write {
                    loc: n.var(env, a0()),
                    value: n.opt_obj(env, args.get(1)),
                }
            }
            "vr" => {
                arity(op, args, 1, 1).map_err(Msg)?;
                OwnedKind::VolatileRead {
                    loc: n.var(env, a0()),
                }
            }
            "vw" => {
                arity(op, args, 1, 2).map_err(Msg)?;
                OwnedKind::VolatileWrite {
                    loc: n.var(env, a0()),
                    value: n.opt_obj(env, args.get(1)),
                }
            }
            "acq" => {
                arity(op, args, 1, 1).map_err(Msg)?;
                OwnedKind::Acquire {
                    lock: n.obj(env, a0()),
                }
            }
            "rel" => {
                arity(op, args, 1, 1).map_err(Msg)?;
                OwnedKind::Release {
                    lock: n.obj(env, a0()),
                }
            }
            "fork" => {
                arity(op, args, 1, usize::MAX).map_err(Msg)?;
                let child = n.thread(env, a0())?;
                OwnedKind::Fork {
                    child,
                    handed: args.iter().skip(1).map(|a| n.obj(env, a)).collect(),
                }
            }
            "join" => {
                arity(op, args, 1, 1).map_err(Msg)?;
                match n.threads.get(a0()) {
                    Some(&child) => OwnedKind::Join { child },
                    None => return Err(Msg(format!("join of unknown thread {}", a0())).into()),
                }
            }
            "begin" => OwnedKind::Begin {
                spec: spec_of(op, args).map_err(Msg)?,
            },
            "end" => OwnedKind::End {
                spec: spec_of(op, args).map_err(Msg)?,
            },
            "bar_enter" | "bar_exit" => {
                arity(op, args, 3, 3).map_err(Msg)?;
                let barrier = n.obj(env, a0());
                let generation =
                    number::<u64>("barrier generation", args.get(1).unwrap_or("")).map_err(Msg)?;
                let parties =
                    number::<u32>("barrier parties", args.get(2).unwrap_or("")).map_err(Msg)?;
                if op == "bar_enter" {
                    OwnedKind::BarrierEnter {
                        barrier,
                        generation,
                        parties,
                    }
                } else {
                    OwnedKind::BarrierExit {
                        barrier,
                        generation,
                        parties,
                    }
                }
            }
            "enter" => {
                arity(op, args, 1, usize::MAX).map_err(Msg)?;
                OwnedKind::Enter {
                    method: n.method(env, a0()),
                    receiver: n.opt_obj(env, args.get(1)),
                    args: args.iter().skip(2).map(|a| n.obj(env, a)).collect(),
                }
            }
            "exit" => {
                arity(op, args, 1, 2).map_err(Msg)?;
                OwnedKind::Exit {
                    method: n.method(env, a0()),
                    ret: n.opt_obj(env, args.get(1)),
                }
            }
            "alloc" => {
                arity(op, args, 1, 1).map_err(Msg)?;
                OwnedKind::Alloc {
                    obj: n.obj(env, a0()),
                }
            }
            "tstart" => {
                arity(op, args, 0, 0).map_err(Msg)?;
                OwnedKind::ThreadStart
            }
            "tend" => {
                arity(op, args, 0, 0).map_err(Msg)?;
                OwnedKind::ThreadEnd
            }
            "" => return Err(Msg("missing operation".to_string()).into()),
            other => return Err(Msg(format!("unknown operation '{other}'")).into()),
        };
        Ok(kind)
    }

    /// `# site N POSITION [METHOD]` and `# capvm-record …` headers; other comments are
    /// ignored.
    fn comment(&mut self, line_no: usize, text: &str) -> Result<(), ReadError> {
        let body = text.trim_start_matches('#').trim();
        let mut words = body.split_whitespace();
        match words.next() {
            Some("capvm-record") => {
                // The header decides how warnings fold, before the first event is
                // analysed.
                if self.events > 0 {
                    return Err(err(
                        line_no,
                        "'# capvm-record' header after the first event (it must come before every event)",
                    ));
                }
                self.env.set_recorded();
            }
            Some("site") => {
                let n = words
                    .next()
                    .ok_or_else(|| err(line_no, "site header without a number"))?;
                let n: u32 = number("site number", n).map_err(|m| err(line_no, m))?;
                let position = words
                    .next()
                    .ok_or_else(|| err(line_no, "site header without a position"))?
                    .to_string();
                let method = words.next().map(str::to_string);
                self.env.add_site(n, SiteInfo { position, method });
            }
            _ => {}
        }
        Ok(())
    }

    /// One line (already trimmed, not empty, not a comment) into `out`.
    fn event(
        &mut self,
        line_no: usize,
        line: &str,
        out: &mut Vec<OwnedEvent>,
    ) -> Result<(), ReadError> {
        let at = |e: ReadError| match e {
            ReadError::Trace(t) if t.line == 0 => err(line_no, t.message),
            e => e,
        };
        let mut cols = line.split('|');
        let thread = cols.next().unwrap_or("").trim();
        let (Some(op), loc, None) = (cols.next(), cols.next(), cols.next()) else {
            return Err(err(
                line_no,
                format!("expected 'THREAD|OP|LOCATION', got '{line}'"),
            ));
        };
        if !valid_name(thread) {
            return Err(err(line_no, format!("malformed thread name '{thread}'")));
        }
        let tid = self.names.thread(&self.env, thread)?;
        let kind = self.kind(op.trim()).map_err(at)?;
        let site = match loc.map(str::trim) {
            // No location: the line number (so every event has a site of its own).
            None | Some("") => SiteId(line_no as u32 & !TOKEN_SITE_BIT),
            Some(tok) => match parse_u32(tok) {
                Some(n) if n & TOKEN_SITE_BIT == 0 => SiteId(n),
                _ if valid_name(tok) => self.names.site_token(&self.env, tok),
                _ => return Err(err(line_no, format!("malformed location '{tok}'"))),
            },
        };
        let ev = OwnedEvent {
            tid,
            site,
            index: line_no as u64,
            kind,
        };
        self.events += 1;
        let names = &self.names;
        self.norm
            .push_named(ev, &|t| names.thread_name(t), out)
            .map_err(|m| err(line_no, m))
    }
}

/// The interned ids of short names (a cache in front of [`Interner`]): the
/// direct-mapped [`NameCache`], then maps by [`short_key`].
#[derive(Default)]
struct ShortNames {
    cache: NameCache,
    threads: HashMap<u128, Tid>,
    vars: HashMap<u128, u32>,
    objs: HashMap<u128, ObjId>,
}

/// One line the reading side recognised as a fast line (`THREAD|OP(NAME)|SITE`, see
/// [`super::fastline`]): its names as [`short_key`]s, not yet ids.
#[derive(Clone, Copy, Debug)]
struct FastLine {
    thread: u128,
    name: u128,
    line_no: usize,
    site: fastline::SiteDigits,
    op: SimpleOp,
}

/// The common lines, `THREAD|OP(NAME)|SITE` with `OP` one of `r`, `w`, `acq`, `rel`,
/// names of printable ASCII of at most 15 bytes and a decimal site, lexed straight from
/// the bytes; `None` for any other line, which the general path reads. Accepts only
/// lines the general path reads the same way.
#[inline(always)]
fn lex_fast(line_no: usize, b: &[u8], window: &[u8; WINDOW]) -> Option<FastLine> {
    let short = b.len() <= WINDOW;
    let s = if short {
        fastline::shape_window(b.len(), window)?
    } else {
        fastline::shape_scalar(b)?
    };
    let key = |from: usize, to: usize| {
        if short {
            fastline::name_key(window, from, to - from)
        } else {
            short_key(&b[from..to])
        }
    };
    let op = match &b[s.p1 + 1..s.open] {
        b"r" => SimpleOp::Read,
        b"w" => SimpleOp::Write,
        b"acq" => SimpleOp::Acquire,
        _ => SimpleOp::Release,
    };
    Some(FastLine {
        thread: key(0, s.p1)?,
        name: key(s.open + 1, s.close)?,
        line_no,
        site: s.site,
        op,
    })
}

/// The bytes of a name from its [`short_key`].
fn key_bytes(k: u128) -> ([u8; 16], usize) {
    (k.to_le_bytes(), ((k >> 120) & 0xf) as usize)
}

impl Parser {
    /// A fast line's event into `out`: names to ids (the [`NameCache`] first), then
    /// the normalizer's short path.
    fn fast(&mut self, f: &FastLine, out: &mut Vec<OwnedEvent>) -> Result<(), ReadError> {
        let tid = match self.short.cache.get(NameKind::Thread, f.thread) {
            Some(t) => t as Tid,
            None => self.short_thread(f.thread)?,
        };
        let id = match f.op {
            SimpleOp::Read | SimpleOp::Write => self.short_var(f.name) as u64,
            SimpleOp::Acquire | SimpleOp::Release => self.short_obj(f.name).0,
        };
        self.events += 1;
        let (site, index) = (SiteId(f.site.value()), f.line_no as u64);
        if self.norm.push_simple(tid, site, index, f.op, id, out) {
            return Ok(());
        }
        let ev = OwnedEvent {
            tid,
            site,
            index,
            kind: f.op.kind(id),
        };
        let names = &self.names;
        self.norm
            .push_named(ev, &|t| names.thread_name(t), out)
            .map_err(|m| err(f.line_no, m))
    }

    /// Any other line (not yet trimmed) into `out`.
    fn other(
        &mut self,
        line_no: usize,
        bytes: &[u8],
        lossy: &mut String,
        out: &mut Vec<OwnedEvent>,
    ) -> Result<(), ReadError> {
        let raw = match std::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(_) => {
                *lossy = String::from_utf8_lossy(bytes).into_owned();
                lossy
            }
        };
        let line = raw.trim();
        if line.is_empty() {
            return Ok(());
        }
        if line.starts_with('#') {
            return self.comment(line_no, line);
        }
        self.event(line_no, line, out)
    }

    /// The events of `lexed` into `out`, in line order. Returns whether more may
    /// follow: `false` once the trace has ended (its final thread ends are then in
    /// `out`); the error of the first bad line, or the read error that ended the input.
    fn parse(
        &mut self,
        lexed: &mut Lexed,
        lossy: &mut String,
        out: &mut Vec<OwnedEvent>,
    ) -> Result<bool, ReadError> {
        if self.finished {
            return Ok(false);
        }
        let mut others = lexed.other.iter();
        let mut next = others.next();
        for (i, f) in lexed.fast.iter().enumerate() {
            while let Some((at, line_no, range)) = next
                && *at == i
            {
                self.other(*line_no, &lexed.text[range.clone()], lossy, out)?;
                next = others.next();
            }
            self.fast(f, out)?;
        }
        while let Some((_, line_no, range)) = next {
            self.other(*line_no, &lexed.text[range.clone()], lossy, out)?;
            next = others.next();
        }
        match lexed.end.take() {
            None => Ok(true),
            Some(Ok(())) => {
                self.norm.finish(out);
                self.finished = true;
                Ok(false)
            }
            Some(Err(e)) => Err(e),
        }
    }

    fn short_thread(&mut self, k: u128) -> Result<Tid, ReadError> {
        let t = match self.short.threads.get(&k) {
            Some(&t) => t,
            None => {
                let (b, n) = key_bytes(k);
                let t = self.names.thread(&self.env, ascii(&b[..n]))?;
                self.short.threads.insert(k, t);
                t
            }
        };
        self.short.cache.put(NameKind::Thread, k, t as u64);
        Ok(t)
    }

    /// The slot of the variable named by key `k`.
    #[inline]
    fn short_var(&mut self, k: u128) -> u32 {
        if let Some(s) = self.short.cache.get(NameKind::Var, k) {
            return s as u32;
        }
        let slot = match self.short.vars.get(&k) {
            Some(&s) => s,
            None => {
                let (b, n) = key_bytes(k);
                let slot = self.names.var(&self.env, ascii(&b[..n])).slot;
                self.short.vars.insert(k, slot);
                slot
            }
        };
        self.short.cache.put(NameKind::Var, k, slot as u64);
        slot
    }

    /// The object (lock) named by key `k`.
    #[inline]
    fn short_obj(&mut self, k: u128) -> ObjId {
        if let Some(o) = self.short.cache.get(NameKind::Obj, k) {
            return ObjId(o);
        }
        let o = match self.short.objs.get(&k) {
            Some(&o) => o,
            None => {
                let (b, n) = key_bytes(k);
                let o = self.names.obj(&self.env, ascii(&b[..n]));
                self.short.objs.insert(k, o);
                o
            }
        };
        self.short.cache.put(NameKind::Obj, k, o.0);
        o
    }
}

/// A name of a fast line: printable ASCII, so the conversion cannot fail.
fn ascii(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or_default()
}

/// A message without its line yet (filled in by [`Parser::event`]).
struct Msg(String);

impl From<Msg> for ReadError {
    fn from(m: Msg) -> Self {
        err(0, m.0)
    }
}

/// Lines as the reading side hands them to the parsing side, in file order: the fast
/// lines lexed ([`FastLine`]), every other line as its bytes.
#[derive(Default)]
pub struct Lexed {
    fast: Vec<FastLine>,
    /// Another line: how many fast lines precede it, its number, its bytes in `text`.
    other: Vec<(usize, usize, std::ops::Range<usize>)>,
    text: Vec<u8>,
    /// How the input ended after these lines, if it did: at its end, or with an error.
    end: Option<Result<(), ReadError>>,
}

impl Lexed {
    fn clear(&mut self) {
        self.fast.clear();
        self.other.clear();
        self.text.clear();
        self.end = None;
    }
}

/// Lines per [`Lexed`] batch when [`StdReader::read_batch`] lexes and parses in turn.
const LEX_LINES: usize = 4096;

/// The reading side of a [`StdReader`]: the input's lines, split and lexed, into
/// [`Lexed`] batches. It knows no names, so it can run on a thread of its own while
/// a [`StdParser`] turns the previous batch into events.
pub struct StdLexer<R> {
    lines: Lines<R>,
    /// The input ended (`Some(true)`: with an error).
    ended: Option<bool>,
}

impl<R: Read> StdLexer<R> {
    /// Up to `max` more lines into `out` (cleared first). Returns whether more may
    /// follow: `false` once `out.end` says how the input ended.
    pub fn lex(&mut self, out: &mut Lexed, max: usize) -> bool {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("bmi1")
            && std::is_x86_feature_detected!("bmi2")
            && std::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU has the features `lex_modern` is compiled for.
            return unsafe { self.lex_modern(out, max) };
        }
        self.lex_lines(out, max)
    }

    /// [`Self::lex`] compiled for the CPUs of the last decade: the same code, with
    /// flag-free shifts (the names' 128-bit keys), bit counts and VEX encodings.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
    fn lex_modern(&mut self, out: &mut Lexed, max: usize) -> bool {
        self.lex_lines(out, max)
    }

    #[inline(always)]
    fn lex_lines(&mut self, out: &mut Lexed, max: usize) -> bool {
        out.clear();
        if let Some(failed) = self.ended {
            out.end = Some(if failed {
                Err(ReadError::Io {
                    line: self.lines.line_no,
                    error: io::Error::other("read past a failed read"),
                })
            } else {
                Ok(())
            });
            return false;
        }
        for _ in 0..max {
            let line_no = self.lines.line_no;
            match self.lines.next_line() {
                Ok(Some((line_no, bytes, window))) => match lex_fast(line_no, bytes, window) {
                    Some(f) => out.fast.push(f),
                    None => {
                        let from = out.text.len();
                        out.text.extend_from_slice(bytes);
                        out.other
                            .push((out.fast.len(), line_no, from..out.text.len()));
                    }
                },
                Ok(None) => {
                    self.ended = Some(false);
                    out.end = Some(Ok(()));
                    return false;
                }
                Err(e) => {
                    self.ended = Some(true);
                    out.end = Some(Err(match e {
                        LineError::Io(error) => ReadError::Io {
                            line: line_no,
                            error,
                        },
                        LineError::TooLong => err(
                            line_no + 1,
                            format!("line longer than {} MiB", MAX_LINE >> 20),
                        ),
                    }));
                    return false;
                }
            }
        }
        true
    }

    /// Bytes read from the input so far.
    pub fn bytes(&self) -> u64 {
        self.lines.bytes
    }
}

/// The parsing side of a [`StdReader`]: names, well-formedness and the inserted
/// thread starts and ends, [`Lexed`] batches into events.
pub struct StdParser {
    p: Parser,
    /// A line that is not UTF-8, with its invalid bytes replaced (as
    /// `String::from_utf8_lossy` does for the whole file).
    lossy: String,
}

impl StdParser {
    /// The events of `lexed`'s lines, appended to `out` in line order. Returns whether
    /// more may follow: `false` once the trace has ended (its final thread ends are
    /// then in `out`). Stops at the first bad line, or with the read error that ended
    /// the input after the batch's lines.
    pub fn parse(
        &mut self,
        lexed: &mut Lexed,
        out: &mut Vec<OwnedEvent>,
    ) -> Result<bool, ReadError> {
        self.p.parse(lexed, &mut self.lossy, out)
    }

    /// Events read from the input so far (not counting inserted ones).
    pub fn events(&self) -> u64 {
        self.p.events
    }
}

/// The streaming reader: events in batches, names into a shared [`TraceEnv`]. A
/// [`StdLexer`] and a [`StdParser`] in turn on one thread; [`StdReader::split`] hands
/// the two sides to two threads.
pub struct StdReader<R> {
    lexer: StdLexer<R>,
    parser: StdParser,
    pending: Lexed,
}

impl<R: Read> StdReader<R> {
    /// A reader of `src` that names ids in `env` (a fresh [`TraceEnv`]), numbering
    /// threads as it goes (it may stop with [`ReadError::Renumber`]).
    pub fn new(src: R, env: Arc<TraceEnv>) -> Self {
        StdReader {
            lexer: StdLexer {
                lines: Lines::new(src),
                ended: None,
            },
            parser: StdParser {
                p: Parser {
                    env,
                    names: Interner::default(),
                    short: ShortNames::default(),
                    norm: Normalizer::new(),
                    events: 0,
                    finished: false,
                },
                lossy: String::new(),
            },
            pending: Lexed::default(),
        }
    }

    /// A reader that knows the tids of every `T<n>` of its input ([`reserved_tids`]):
    /// it never stops with [`ReadError::Renumber`].
    pub fn with_reserved(src: R, env: Arc<TraceEnv>, reserved: HashSet<Tid>) -> Self {
        let mut r = Self::new(src, env);
        r.parser.p.names.reserved = Some(reserved);
        r
    }

    /// The two sides, for a pipeline: lexing on one thread, parsing on another.
    pub fn split(self) -> (StdLexer<R>, StdParser) {
        (self.lexer, self.parser)
    }

    /// Append the events of the next lines to `out` until it holds at least `max`
    /// events or the input ends (the reader's inserted thread starts and ends
    /// included; it may hold up to a few thousand more). Returns whether more may
    /// follow: `false` once the trace has ended (its final thread ends are then in
    /// `out`).
    pub fn read_batch(&mut self, out: &mut Vec<OwnedEvent>, max: usize) -> Result<bool, ReadError> {
        if self.parser.p.finished {
            return Ok(false);
        }
        loop {
            let want = max.saturating_sub(out.len()).clamp(1, LEX_LINES);
            self.lexer.lex(&mut self.pending, want);
            if !self.parser.parse(&mut self.pending, out)? {
                return Ok(false);
            }
            if out.len() >= max {
                return Ok(true);
            }
        }
    }

    /// Events read from the input so far (not counting inserted ones).
    pub fn events(&self) -> u64 {
        self.parser.events()
    }

    /// Bytes read from the input so far.
    pub fn bytes(&self) -> u64 {
        self.lexer.bytes()
    }

    /// The number of the last line read (0 before the first).
    pub fn line(&self) -> u64 {
        self.lexer.lines.line_no as u64
    }

    /// Offset in the input of the first byte of the next line (after
    /// [`Self::read_batch`] with `max` 1, the end of the line of its event).
    pub fn next_line_start(&self) -> u64 {
        self.lexer.lines.base() + self.lexer.lines.pos as u64
    }

    /// The input's bytes from offset `from` up to where the next line starts, if they
    /// are still in the buffer.
    pub fn recent(&self, from: u64) -> Option<&[u8]> {
        let lines = &self.lexer.lines;
        let from = usize::try_from(from.checked_sub(lines.base())?).ok()?;
        lines.buf.get(from..lines.pos)
    }

    /// Skip the copies of `text` that follow, at most `max`, as if they had been read:
    /// `text` must be `lines` whole lines (each ending in `\n`) that were just read, whose
    /// events are accesses, acquires and releases of running threads that leave every
    /// lock they touch with the holder it had before them (so a copy read right after
    /// them is well-formed and leaves the reader's state as it was), and
    /// `site_lines[i] = n` says that line `i` of `text` has the numeric location `n`
    /// (a copy is skipped only where `n` is not its line number, as events compare
    /// sites with lines: only then does it mean what it meant in `text`). Identical bytes are identical events, so a skipped
    /// copy gives the events `text` gave, at line numbers `lines` further on. Returns
    /// the number of copies skipped; the next line is the one after them.
    pub fn skip_copies(
        &mut self,
        text: &[u8],
        lines: u64,
        site_lines: &[(u64, u32)],
        max: u64,
    ) -> Result<u64, ReadError> {
        debug_assert!(text.ends_with(b"\n") && lines > 0);
        let mut n = 0;
        while n < max {
            let line_no = self.lexer.lines.line_no;
            match self.lexer.lines.fill_to(text.len()) {
                Ok(true) => {}
                Ok(false) => break,
                Err(error) => {
                    return Err(ReadError::Io {
                        line: line_no,
                        error,
                    });
                }
            }
            let at = self.lexer.lines.pos;
            if self.lexer.lines.buf[at..at + text.len()] != *text
                || site_lines
                    .iter()
                    .any(|&(i, s)| (line_no as u64 + 1 + i) as u32 & !TOKEN_SITE_BIT == s)
            {
                break;
            }
            self.lexer.lines.pos += text.len();
            self.lexer.lines.line_no += lines as usize;
            self.parser.p.events += lines;
            n += 1;
        }
        Ok(n)
    }
}

/// Run `read` over a fresh [`StdReader`] of the input `open` gives, and once more with
/// every `T<n>` reserved ([`reserved_tids`]) if it stops with [`ReadError::Renumber`]
/// (see the module doc): only traces whose numbering needs it are read twice.
/// `is_renumber` finds that error in `read`'s error type; `io` wraps a failure to open
/// or scan the input.
pub fn read_renumbering<R: Read, T, E>(
    mut open: impl FnMut() -> io::Result<R>,
    io: impl Fn(io::Error) -> E,
    is_renumber: impl Fn(&E) -> bool,
    mut read: impl FnMut(StdReader<R>, Arc<TraceEnv>) -> Result<T, E>,
) -> Result<T, E> {
    let env = Arc::new(TraceEnv::default());
    match read(StdReader::new(open().map_err(&io)?, env.clone()), env) {
        Err(e) if is_renumber(&e) => {
            let reserved = reserved_tids(open().map_err(&io)?).map_err(&io)?;
            let env = Arc::new(TraceEnv::default());
            // A reader with every `T<n>` reserved never stops with `Renumber`.
            read(
                StdReader::with_reserved(open().map_err(&io)?, env.clone(), reserved),
                env,
            )
        }
        r => r,
    }
}

/// The tids of every `T<n>` thread name of the input (event threads and `fork`/`join`
/// arguments): the reservation [`StdReader::with_reserved`] needs. Reads the thread
/// and operation columns only; malformed lines are left to the reader proper.
pub fn reserved_tids<R: Read>(src: R) -> io::Result<HashSet<Tid>> {
    let mut lines = Lines::new(src);
    let mut out = HashSet::new();
    let mut reserve = |name: &str| {
        if let Some(n) = numbered_tid(name) {
            debug_assert!(n < MAX_NUMBERED_TID);
            out.insert(n as Tid);
        }
    };
    loop {
        let (_, bytes, _) = match lines.next_line() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(LineError::Io(e)) => return Err(e),
            // The reader proper reports it.
            Err(LineError::TooLong) => break,
        };
        let text = String::from_utf8_lossy(bytes);
        let line = text.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut cols = line.split('|').map(str::trim);
        if let Some(t) = cols.next() {
            reserve(t);
        }
        if let Some(op) = cols.next()
            && let Some(args) = op
                .strip_prefix("fork(")
                .or_else(|| op.strip_prefix("join("))
        {
            reserve(args.split([',', ')']).next().unwrap_or("").trim());
        }
    }
    Ok(out)
}
