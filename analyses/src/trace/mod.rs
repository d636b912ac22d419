//! Trace formats: RAPID's STD format plus capvm's extension, read ([`parse_std`]) and
//! written ([`StdWriter`], used by the `record` pass). Offline analysis of a trace is
//! [`crate::offline`].
//!
//! # The format
//! One event per line, `THREAD|OP|LOCATION` (RAPID's STD, e.g. `T0|w(V1)|12`). Blank
//! lines and lines starting with `#` are ignored (except the headers below). Names of
//! threads, variables, locks and objects are arbitrary tokens without `|`, `(`, `)`,
//! `,` or whitespace. The location column is optional (missing: the line number); a
//! number is the [`SiteId`], any other token is interned as a site of its own. An event's `index` is its 1-based line
//! number in the file (comment lines count), which is what `capvm analyze` reports.
//!
//! RAPID's operations:
//!
//! | op | event |
//! |---|---|
//! | `r(X)`, `w(X)` | plain read / write of variable `X` |
//! | `acq(L)`, `rel(L)` | outermost acquire / release of lock `L` (not reentrant) |
//! | `fork(T)`, `join(T)` | fork / join of thread `T` |
//! | `begin`, `end` | begin / end of an `atomic` transaction |
//!
//! capvm's extension (for what STD cannot carry):
//!
//! | op | event |
//! |---|---|
//! | `w(X,O)` | plain write of the reference `O` to `X` |
//! | `vr(X)`, `vw(X)`, `vw(X,O)` | volatile read / write |
//! | `fork(T,O1,O2,…)` | fork handing objects `O1…` to the child |
//! | `bar_enter(B,GEN,PARTIES)`, `bar_exit(B,GEN,PARTIES)` | arrival at / departure from episode `GEN` of barrier `B` |
//! | `enter(M)`, `enter(M,R,A1,…)` | method entry; `R` is the receiver or `-`, `A…` reference arguments |
//! | `exit(M)`, `exit(M,O)` | method exit, returning `O` |
//! | `alloc(O)` | allocation of object `O` |
//! | `begin(atomic)`, `begin(det)`, `end(atomic)`, `end(det)` | `atomic` / `deterministic` blocks (plain `begin`/`end` = `atomic`) |
//! | `tstart`, `tend` | thread start / end |
//!
//! `wait` needs no operation: it is recorded as the `rel(L)` and `acq(L)` of its
//! monitor (`docs/architecture.md` "Events"); `notify` is no event.
//!
//! Headers (comment lines with meaning):
//! - `# capvm-record v1`: the trace was written by `capvm run --record`; variable
//!   names `o17.Node.next`, `o5.int[][3]`, `Main.count` are then shown in reports as
//!   the VM shows them (`Node.next` of `o17`, `int[3]` of `o5`, `Main.count`).
//! - `# site N POSITION [METHOD]`: site number `N` is `POSITION` (`a.cj:3:5`) in
//!   `METHOD`; the recorder writes one before the first event that uses site `N`.
//!
//! # Well-formedness (RAPID's semantics, checked by the reader)
//! Locks are not reentrant and are released by their holder; a thread acts between its
//! fork and its join; a thread that is never forked starts implicitly (unordered with
//! the others, as in RAPID). Threads named `T<n>` (n < 1024) get tid `n`, other names
//! the smallest free tid in order of appearance (so the first thread of a trace
//! without `T<n>` names is tid 0);
//! `end` closes the innermost open `begin`; `exit(M)` closes the innermost `enter(M)`;
//! all arrivals of a barrier episode precede its departures. The reader inserts the
//! `ThreadStart`/`ThreadEnd` events the chain's clocks need (index 0: not in the file)
//! where the file has no `tstart`/`tend`: a start before a thread's first event, an end
//! before a join of a thread that has not ended, and an end for every live thread at
//! the end of the trace.

mod env;
mod fastline;
mod normalize;
mod parse;
mod read;
mod write;

use std::sync::Arc;

pub(crate) use env::ExportedNames;
pub use env::TraceEnv;
pub use normalize::Normalizer;
pub use parse::parse_std;
pub use read::{
    Lexed, MAX_LINE, ReadError, StdLexer, StdParser, StdReader, TraceInput, read_renumbering,
    reserved_tids,
};
pub use write::{StdWriter, op_text};

use crate::event::{ObjId, OwnedEvent, SiteId};

/// The pseudo object of trace variables: variable `k` is `Loc { obj: VARS, slot: k }`.
pub const VARS: ObjId = ObjId(1 << 40);

/// A malformed trace: the 1-based line and what is wrong. `Display` gives
/// `LINE: MESSAGE`, so `format!("{path}:{err}")` reads `t.std:7: unknown operation 'foo'`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.line, self.message)
    }
}

impl std::error::Error for TraceError {}

/// A parsed, validated trace. `events[i].index` is the event's 1-based line number
/// (0 for the thread start/end events the reader inserted).
#[derive(Clone, Debug)]
pub struct Trace {
    pub events: Vec<OwnedEvent>,
    pub env: Arc<TraceEnv>,
}

impl Trace {
    /// A trace from events built in memory (generator, tests). Validates them like the
    /// reader does and inserts missing thread start/end events; names come from
    /// [`TraceEnv`]'s defaults (`V<slot>`, `o<id>`, `T<tid>`). `line` of an error is the
    /// 1-based position in `events`.
    pub fn from_events(events: Vec<OwnedEvent>) -> Result<Trace, TraceError> {
        let mut norm = Normalizer::new();
        let mut out = Vec::with_capacity(events.len() + 8);
        for (i, ev) in events.into_iter().enumerate() {
            norm.push(ev, &mut out).map_err(|message| TraceError {
                line: i + 1,
                message,
            })?;
        }
        norm.finish(&mut out);
        Ok(Trace {
            events: out,
            env: Arc::new(TraceEnv::default()),
        })
    }

    /// The trace without the reader's inserted events (those with index 0).
    pub fn file_events(&self) -> impl Iterator<Item = &OwnedEvent> {
        self.events.iter().filter(|e| e.index != 0)
    }
}

/// A site number for a location token of a trace: numbers are used as they are, other
/// tokens are interned above this bit.
pub(crate) const TOKEN_SITE_BIT: u32 = 1 << 31;

pub(crate) fn is_token_site(s: SiteId) -> bool {
    s.0 & TOKEN_SITE_BIT != 0
}
