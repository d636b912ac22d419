//! The `.slp` file format, version 1 (recognised by its first bytes, not by name).
//!
//! All integers are unsigned LEB128 varints unless noted; a string is its byte length
//! and its UTF-8 bytes; `opt X` is `0` (none) or `1` and `X`.
//!
//! ```text
//! magic   "CAPVMSLP" (8 bytes), version (1 byte, = 1)
//! flags   bit 0: the trace had the `# capvm-record` header
//! names   threads: n, n × (tid, string)      variables: n, n × string (slot order)
//!         objects: n, n × string (ObjId 1…)  methods: n, n × string
//!         site tokens: n, n × string         site table: n, n × (site, position, opt method)
//! labels  n, n × (tid, site, kind)           site: 0 = the event's line, s + 1 = site s
//! rules   n, n × (k, k × (symbol, count))    symbol: 2t = terminal t, 2r + 1 = rule r
//!                                            (r below the rule itself); count ≥ 1;
//!                                            the last rule is the start rule
//! lines   n, n × (position, line)            the line map (`Grammar::lines`)
//! events  the expanded length (a check)
//! end     "SLPEND" (6 bytes)
//! ```
//! A kind is a tag byte and its operands: 0 `r(loc)`, 1 `w(loc, opt obj)`, 2 `vr(loc)`,
//! 3 `vw(loc, opt obj)`, 4 `acq(obj)`, 5 `rel(obj)`, 6 `fork(tid, n, n × obj)`,
//! 7 `join(tid)`, 8 `bar_enter(obj, generation, parties)`, 9 `bar_exit(…)`,
//! 10 `alloc(obj)`, 11 `enter(method, opt obj, n, n × obj)`, 12 `exit(method, opt obj)`,
//! 13 `begin(spec)`, 14 `end(spec)` (spec 0 = atomic, 1 = det), 15 `tstart`, 16 `tend`,
//! 17 a BigFoot check `(loc, op 0 = read | 1 = write, span)` with span 0 (the location),
//! 1 `mask` (a field group) or 2 `hi, step, len` (an array range); a loc is (object,
//! slot). Recorded traces hold no checks (placement is redone whenever a program is
//! compiled), but the format round-trips every event kind. Any malformed input is an [`SlpError`] naming the byte
//! offset (and the rule, for rules), never a panic.

use std::sync::Arc;

use crate::env::SiteInfo;
use crate::event::{CheckSpan, Loc, MethodId, ObjId, OwnedKind, SiteId, Spec};
use crate::trace::{ExportedNames, TraceEnv};

use super::{Grammar, Item, Label, SiteCode, Sym};

pub const MAGIC: &[u8; 8] = b"CAPVMSLP";
pub const VERSION: u8 = 1;
const END: &[u8; 6] = b"SLPEND";

/// Whether `bytes` start like an `.slp` file.
pub fn is_slp(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// A malformed `.slp` file: where and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlpError {
    pub offset: usize,
    pub message: String,
}

impl std::fmt::Display for SlpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for SlpError {}

struct W(Vec<u8>);

impl W {
    fn u(&mut self, mut x: u64) {
        loop {
            let b = (x & 0x7f) as u8;
            x >>= 7;
            if x == 0 {
                self.0.push(b);
                return;
            }
            self.0.push(b | 0x80);
        }
    }
    fn s(&mut self, s: &str) {
        self.u(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt_obj(&mut self, o: Option<ObjId>) {
        match o {
            None => self.u(0),
            Some(o) => {
                self.u(1);
                self.u(o.0);
            }
        }
    }
    fn loc(&mut self, l: Loc) {
        self.u(l.obj.0);
        self.u(l.slot as u64);
    }
    fn objs(&mut self, v: &[ObjId]) {
        self.u(v.len() as u64);
        for o in v {
            self.u(o.0);
        }
    }
    fn kind(&mut self, k: &OwnedKind) {
        use OwnedKind as K;
        let spec = |s: &Spec| match s {
            Spec::Atomic => 0,
            Spec::Deterministic => 1,
        };
        match k {
            K::Read { loc } => {
                self.u(0);
                self.loc(*loc);
            }
            K::Write { loc, value } => {
                self.u(1);
                self.loc(*loc);
                self.opt_obj(*value);
            }
            K::VolatileRead { loc } => {
                self.u(2);
                self.loc(*loc);
            }
            K::VolatileWrite { loc, value } => {
                self.u(3);
                self.loc(*loc);
                self.opt_obj(*value);
            }
            K::Acquire { lock } => {
                self.u(4);
                self.u(lock.0);
            }
            K::Release { lock } => {
                self.u(5);
                self.u(lock.0);
            }
            K::Fork { child, handed } => {
                self.u(6);
                self.u(*child as u64);
                self.objs(handed);
            }
            K::Join { child } => {
                self.u(7);
                self.u(*child as u64);
            }
            K::BarrierEnter {
                barrier,
                generation,
                parties,
            } => {
                self.u(8);
                self.u(barrier.0);
                self.u(*generation);
                self.u(*parties as u64);
            }
            K::BarrierExit {
                barrier,
                generation,
                parties,
            } => {
                self.u(9);
                self.u(barrier.0);
                self.u(*generation);
                self.u(*parties as u64);
            }
            K::Alloc { obj } => {
                self.u(10);
                self.u(obj.0);
            }
            K::Enter {
                method,
                receiver,
                args,
            } => {
                self.u(11);
                self.u(method.0 as u64);
                self.opt_obj(*receiver);
                self.objs(args);
            }
            K::Exit { method, ret } => {
                self.u(12);
                self.u(method.0 as u64);
                self.opt_obj(*ret);
            }
            K::Begin { spec: s } => {
                self.u(13);
                self.u(spec(s));
            }
            K::End { spec: s } => {
                self.u(14);
                self.u(spec(s));
            }
            K::ThreadStart => self.u(15),
            K::ThreadEnd => self.u(16),
            K::Check { loc, op, span } => {
                self.u(17);
                self.loc(*loc);
                self.u(matches!(op, crate::event::Op::Write) as u64);
                match *span {
                    CheckSpan::One => self.u(0),
                    CheckSpan::Fields(mask) => {
                        self.u(1);
                        self.u(mask);
                    }
                    CheckSpan::Range { hi, step, len } => {
                        self.u(2);
                        self.u(hi as u64);
                        self.u(step as u64);
                        self.u(len as u64);
                    }
                    CheckSpan::Element { len } => {
                        self.u(3);
                        self.u(len as u64);
                    }
                }
            }
        }
    }
}

/// The `.slp` bytes of `g`.
pub fn write_slp(g: &Grammar) -> Vec<u8> {
    let mut w = W(Vec::new());
    w.0.extend_from_slice(MAGIC);
    w.0.push(VERSION);
    let n = g.env.export();
    w.u(u64::from(n.recorded));
    w.u(n.threads.len() as u64);
    for (t, name) in &n.threads {
        w.u(*t as u64);
        w.s(name);
    }
    for list in [&n.vars, &n.objs, &n.methods, &n.site_tokens] {
        w.u(list.len() as u64);
        for s in list {
            w.s(s);
        }
    }
    w.u(n.site_table.len() as u64);
    for (site, info) in &n.site_table {
        w.u(*site as u64);
        w.s(&info.position);
        match &info.method {
            None => w.u(0),
            Some(m) => {
                w.u(1);
                w.s(m);
            }
        }
    }
    w.u(g.terminals.len() as u64);
    for l in &g.terminals {
        w.u(l.tid as u64);
        match l.site {
            SiteCode::Line => w.u(0),
            SiteCode::Site(s) => w.u(s.0 as u64 + 1),
        }
        w.kind(&l.kind);
    }
    w.u(g.rules.len() as u64);
    for rhs in &g.rules {
        w.u(rhs.len() as u64);
        for it in rhs {
            w.u(match it.sym {
                Sym::T(t) => 2 * t as u64,
                Sym::R(r) => 2 * r as u64 + 1,
            });
            w.u(it.count);
        }
    }
    w.u(g.lines.len() as u64);
    for &(p, l) in &g.lines {
        w.u(p);
        w.u(l);
    }
    w.u(g.events());
    w.0.extend_from_slice(END);
    w.0
}

struct R<'a> {
    b: &'a [u8],
    pos: usize,
}

type Res<T> = Result<T, SlpError>;

impl R<'_> {
    fn err<T>(&self, at: usize, message: impl Into<String>) -> Res<T> {
        Err(SlpError {
            offset: at,
            message: message.into(),
        })
    }
    fn u(&mut self) -> Res<u64> {
        let start = self.pos;
        let mut x: u64 = 0;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.b.get(self.pos) else {
                return self.err(start, "unexpected end of file");
            };
            self.pos += 1;
            let v = (b & 0x7f) as u64;
            if shift == 63 && v > 1 {
                return self.err(start, "number too large");
            }
            x |= v << shift;
            if b & 0x80 == 0 {
                return Ok(x);
            }
        }
        self.err(start, "number too large")
    }
    fn u32(&mut self, what: &str) -> Res<u32> {
        let at = self.pos;
        let x = self.u()?;
        u32::try_from(x).or_else(|_| self.err(at, format!("{what} {x} out of range")))
    }
    /// A count of elements that take at least one byte each.
    fn count(&mut self, what: &str) -> Res<usize> {
        let at = self.pos;
        let n = self.u()?;
        if n > (self.b.len() - self.pos) as u64 {
            return self.err(at, format!("{n} {what} cannot fit in the rest of the file"));
        }
        Ok(n as usize)
    }
    fn s(&mut self) -> Res<String> {
        let at = self.pos;
        let n = self.count("bytes of a string")?;
        let bytes = &self.b[self.pos..self.pos + n];
        self.pos += n;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => self.err(at, "a name that is not UTF-8"),
        }
    }
    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Res<T>) -> Res<Option<T>> {
        let at = self.pos;
        match self.u()? {
            0 => Ok(None),
            1 => f(self).map(Some),
            x => self.err(at, format!("expected 0 or 1, found {x}")),
        }
    }
    fn obj(&mut self) -> Res<ObjId> {
        self.u().map(ObjId)
    }
    fn loc(&mut self) -> Res<Loc> {
        let obj = self.obj()?;
        let slot = self.u32("slot")?;
        Ok(Loc { obj, slot })
    }
    fn objs(&mut self) -> Res<Vec<ObjId>> {
        let n = self.count("objects")?;
        (0..n).map(|_| self.obj()).collect()
    }
    fn spec(&mut self) -> Res<Spec> {
        let at = self.pos;
        match self.u()? {
            0 => Ok(Spec::Atomic),
            1 => Ok(Spec::Deterministic),
            x => self.err(at, format!("unknown specification {x}")),
        }
    }
    fn kind(&mut self) -> Res<OwnedKind> {
        use OwnedKind as K;
        let at = self.pos;
        Ok(match self.u()? {
            0 => K::Read { loc: self.loc()? },
            1 => K::Write {
                loc: self.loc()?,
                value: self.opt(Self::obj)?,
            },
            2 => K::VolatileRead { loc: self.loc()? },
            3 => K::VolatileWrite {
                loc: self.loc()?,
                value: self.opt(Self::obj)?,
            },
            4 => K::Acquire { lock: self.obj()? },
            5 => K::Release { lock: self.obj()? },
            6 => K::Fork {
                child: self.u32("thread")?,
                handed: self.objs()?,
            },
            7 => K::Join {
                child: self.u32("thread")?,
            },
            t @ (8 | 9) => {
                let barrier = self.obj()?;
                let generation = self.u()?;
                let parties = self.u32("parties")?;
                if t == 8 {
                    K::BarrierEnter {
                        barrier,
                        generation,
                        parties,
                    }
                } else {
                    K::BarrierExit {
                        barrier,
                        generation,
                        parties,
                    }
                }
            }
            10 => K::Alloc { obj: self.obj()? },
            11 => K::Enter {
                method: MethodId(self.u32("method")?),
                receiver: self.opt(Self::obj)?,
                args: self.objs()?,
            },
            12 => K::Exit {
                method: MethodId(self.u32("method")?),
                ret: self.opt(Self::obj)?,
            },
            13 => K::Begin { spec: self.spec()? },
            14 => K::End { spec: self.spec()? },
            15 => K::ThreadStart,
            16 => K::ThreadEnd,
            17 => {
                let loc = self.loc()?;
                let op_at = self.pos;
                let op = match self.u()? {
                    0 => crate::event::Op::Read,
                    1 => crate::event::Op::Write,
                    x => return self.err(op_at, format!("unknown check operation {x}")),
                };
                let span_at = self.pos;
                let span = match self.u()? {
                    0 => CheckSpan::One,
                    1 => CheckSpan::Fields(self.u()?),
                    2 => CheckSpan::Range {
                        hi: self.u32("range end")?,
                        step: self.u32("range step")?,
                        len: self.u32("array length")?,
                    },
                    3 => CheckSpan::Element {
                        len: self.u32("array length")?,
                    },
                    x => return self.err(span_at, format!("unknown check span {x}")),
                };
                K::Check { loc, op, span }
            }
            x => return self.err(at, format!("unknown event kind {x}")),
        })
    }
}

/// Read an `.slp` file (see the module doc). Every malformed input is an error with
/// its byte offset.
pub fn read_slp(bytes: &[u8]) -> Result<Grammar, SlpError> {
    let mut r = R { b: bytes, pos: 0 };
    if !is_slp(bytes) {
        return r.err(0, "not an .slp file (no CAPVMSLP magic)");
    }
    r.pos = MAGIC.len();
    match bytes.get(r.pos) {
        Some(&VERSION) => r.pos += 1,
        Some(&v) => return r.err(r.pos, format!("unsupported .slp version {v} (this is 1)")),
        None => return r.err(r.pos, "unexpected end of file"),
    }
    let mut names = ExportedNames::default();
    let at = r.pos;
    names.recorded = match r.u()? {
        0 => false,
        1 => true,
        x => return r.err(at, format!("unknown flags {x}")),
    };
    let n = r.count("threads")?;
    for _ in 0..n {
        let at = r.pos;
        let t = r.u32("thread")?;
        if t as usize >= 1 << 24 {
            return r.err(at, format!("thread number {t} too large"));
        }
        names.threads.push((t, r.s()?));
    }
    for list in [
        &mut names.vars,
        &mut names.objs,
        &mut names.methods,
        &mut names.site_tokens,
    ] {
        let n = r.count("names")?;
        for _ in 0..n {
            list.push(r.s()?);
        }
    }
    let n = r.count("sites")?;
    for _ in 0..n {
        let site = r.u32("site")?;
        let position = r.s()?;
        let method = r.opt(R::s)?;
        names.site_table.push((site, SiteInfo { position, method }));
    }
    let n = r.count("labels")?;
    let mut terminals = Vec::with_capacity(n);
    for _ in 0..n {
        let at = r.pos;
        let tid = r.u32("thread")?;
        if tid as usize >= 1 << 24 {
            return r.err(at, format!("thread number {tid} too large"));
        }
        let at = r.pos;
        let site = match r.u()? {
            0 => SiteCode::Line,
            s if s <= u32::MAX as u64 + 1 => SiteCode::Site(SiteId((s - 1) as u32)),
            s => return r.err(at, format!("site {s} out of range")),
        };
        let kind = r.kind()?;
        terminals.push(Label { tid, site, kind });
    }
    let n = r.count("rules")?;
    let mut rules = Vec::with_capacity(n);
    for i in 0..n {
        let k = r.count("items")?;
        let mut rhs = Vec::with_capacity(k);
        for _ in 0..k {
            let at = r.pos;
            let s = r.u()?;
            let sym = if s & 1 == 0 {
                let t = s >> 1;
                if t >= terminals.len() as u64 {
                    return r.err(
                        at,
                        format!(
                            "rule {i}: terminal {t} does not exist ({} labels)",
                            terminals.len()
                        ),
                    );
                }
                Sym::T(t as u32)
            } else {
                let x = s >> 1;
                if x >= i as u64 {
                    return r.err(
                        at,
                        format!("rule {i}: uses rule {x}, which is not below it"),
                    );
                }
                Sym::R(x as u32)
            };
            let at = r.pos;
            let count = r.u()?;
            if count == 0 {
                return r.err(at, format!("rule {i}: an item with count 0"));
            }
            rhs.push(Item { sym, count });
        }
        rules.push(rhs);
    }
    let n = r.count("line map entries")?;
    let mut lines = Vec::with_capacity(n);
    for _ in 0..n {
        let p = r.u()?;
        let l = r.u()?;
        lines.push((p, l));
    }
    let at_events = r.pos;
    let events = r.u()?;
    if bytes.get(r.pos..) != Some(&END[..]) {
        return r.err(
            r.pos,
            "missing end marker SLPEND (truncated or trailing bytes)",
        );
    }
    let env = Arc::new(TraceEnv::from_names(names));
    let g =
        Grammar::new(env, terminals, rules, lines).or_else(|e| r.err(at_events, e.to_string()))?;
    if g.events() != events {
        return r.err(
            at_events,
            format!(
                "the rules expand to {} events, the header says {events}",
                g.events()
            ),
        );
    }
    Ok(g)
}
