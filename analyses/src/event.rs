//! The event model: every operation the analyses can see.
//!
//! Events come from a live VM (`vm::bridge`) or from a trace file (`crate::trace`);
//! this module knows nothing of either. An event is delivered by the thread that
//! performed it, in an order that is a valid trace (see `crate::chain` for the exact
//! guarantees the producer must give).
//!
//! Identities:
//! - [`Tid`]: thread number, main = 0, never reused.
//! - [`ObjId`]: a heap object, lock, barrier (never 0). From the VM it is the object's
//!   address; from a trace it is an interned name.
//! - [`Loc`]: a memory location: (object, slot). Instance field = (object, field index),
//!   array element = (array, index), static field = (the VM's statics block, static index).
//!   Trace variables are (a per-trace pseudo object, variable number).
//! - [`SiteId`]: a source position; its meaning belongs to the [`crate::env::Env`].
//! - [`MethodId`]: a method (the VM's function index).

use std::fmt;

pub type Tid = u32;

#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct SiteId(pub u32);

#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ObjId(pub u64);

#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct MethodId(pub u32);

/// A memory location.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Loc {
    pub obj: ObjId,
    pub slot: u32,
}

impl Loc {
    /// A single 64-bit key, unique per location for both producers (VM objects are
    /// at least 8-byte aligned and slots lie inside them; trace pseudo objects are
    /// spaced far apart). Used to index shadow maps.
    #[inline]
    pub fn key(self) -> u64 {
        self.obj.0.wrapping_add((self.slot as u64) << 3)
    }
}

/// `deterministic` or `atomic`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Spec {
    Deterministic,
    Atomic,
}

/// Read or write, for reports and shadow state.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Op {
    Read,
    Write,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Read => "read",
            Op::Write => "write",
        })
    }
}

/// One event. `index` is the 1-based position in a trace file (0 when the producer
/// does not number events); warnings from `capvm analyze` report it.
#[derive(Copy, Clone, Debug)]
pub struct Event<'a> {
    pub tid: Tid,
    pub site: SiteId,
    pub index: u64,
    pub kind: EventKind<'a>,
}

#[derive(Copy, Clone, Debug)]
pub enum EventKind<'a> {
    /// Plain (non-volatile) read of a field, array element or static.
    Read {
        loc: Loc,
    },
    /// Plain write; `value` is the written reference if the value is a non-null reference.
    Write {
        loc: Loc,
        value: Option<ObjId>,
    },
    /// Volatile read: a synchronization action (acquire-like).
    VolatileRead {
        loc: Loc,
    },
    /// Volatile write: a synchronization action (release-like).
    VolatileWrite {
        loc: Loc,
        value: Option<ObjId>,
    },
    /// Outermost acquire of a monitor (reentrant acquires are not events). `wait`
    /// re-acquiring its monitor is also an `Acquire`.
    Acquire {
        lock: ObjId,
    },
    /// Outermost release. `wait` releasing its monitor is also a `Release`.
    Release {
        lock: ObjId,
    },
    /// `child` is created; delivered by the parent before the child runs. `handed`
    /// lists the (non-null) objects passed to the child: receiver and reference arguments.
    Fork {
        child: Tid,
        handed: &'a [ObjId],
    },
    /// `child.join()` returned; delivered after the child's `ThreadEnd`.
    Join {
        child: Tid,
    },
    /// Arrival at `barrier.await()` for episode `generation`. All arrivals of an episode
    /// are delivered before any of its departures.
    BarrierEnter {
        barrier: ObjId,
        generation: u64,
        parties: u32,
    },
    /// Departure from `await` after episode `generation` completed.
    BarrierExit {
        barrier: ObjId,
        generation: u64,
        parties: u32,
    },
    /// A new object or array (or barrier).
    Alloc {
        obj: ObjId,
    },
    /// Method entry; `site` of the event is the call site. `receiver` is `this` for
    /// instance methods and constructors; `args` are the non-null reference arguments.
    Enter {
        method: MethodId,
        receiver: Option<ObjId>,
        args: &'a [ObjId],
    },
    /// Method exit; `ret` is the returned reference if non-null.
    Exit {
        method: MethodId,
        ret: Option<ObjId>,
    },
    /// Begin of a `deterministic`/`atomic` block or method (nesting allowed).
    Begin {
        spec: Spec,
    },
    End {
        spec: Spec,
    },
    /// First event of every thread (main included).
    ThreadStart,
    /// Last event of every thread.
    ThreadEnd,
    /// A BigFoot check (Rhodes, *Access Classification for Race Detection
    /// Optimization*, ch. 3): a read or write check of the locations `span` describes,
    /// placed by the compiler (`lang::bigfoot`) at or after the accesses it covers. Only
    /// live runs of a placed program produce it; a filter may drop it like an access.
    Check {
        loc: Loc,
        op: Op,
        span: CheckSpan,
    },
}

/// The locations a [`EventKind::Check`] covers, from its `loc`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CheckSpan {
    /// `loc` alone (a field or a static).
    One,
    /// A shadow group of fields of `loc.obj`: `loc.slot` is its representative and
    /// the mask has a bit per slot of the group.
    Fields(u64),
    /// Array elements `lo..hi:step` of the array `loc.obj`, `lo = loc.slot`, of an
    /// array of `len` elements (half-open; `lo < hi <= len`).
    Range { hi: u32, step: u32, len: u32 },
    /// Element `loc.slot` of the array `loc.obj` of `len` elements (`loc.slot < len`):
    /// the check of one access at an index the compiler cannot put into a range,
    /// which a producer may decide inline (`crate::pass::InlineCheck::FieldChecks`).
    Element { len: u32 },
}

impl CheckSpan {
    /// Whether slot `slot` of `loc.obj` is among the covered locations.
    pub fn contains(&self, loc: Loc, slot: u32) -> bool {
        match *self {
            CheckSpan::One | CheckSpan::Element { .. } => slot == loc.slot,
            CheckSpan::Fields(m) => slot == loc.slot || (slot < 64 && m & (1u64 << slot) != 0),
            CheckSpan::Range { hi, step, .. } => {
                slot >= loc.slot && slot < hi && (slot - loc.slot).is_multiple_of(step.max(1))
            }
        }
    }
}

impl EventKind<'_> {
    /// Plain data accesses: the only events a filter may drop.
    pub fn is_access(&self) -> bool {
        matches!(self, EventKind::Read { .. } | EventKind::Write { .. })
    }
    /// A plain access as (location, read or write, the reference a write stores);
    /// `None` for every other event. The one place passes take accesses apart.
    #[inline]
    pub fn plain_access(&self) -> Option<(Loc, Op, Option<ObjId>)> {
        match *self {
            EventKind::Read { loc } => Some((loc, Op::Read, None)),
            EventKind::Write { loc, value } => Some((loc, Op::Write, value)),
            _ => None,
        }
    }
    /// A short lowercase name for statistics (`count`) and debugging.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Read { .. } => "read",
            EventKind::Write { .. } => "write",
            EventKind::VolatileRead { .. } => "volatile_read",
            EventKind::VolatileWrite { .. } => "volatile_write",
            EventKind::Acquire { .. } => "acquire",
            EventKind::Release { .. } => "release",
            EventKind::Fork { .. } => "fork",
            EventKind::Join { .. } => "join",
            EventKind::BarrierEnter { .. } => "barrier_enter",
            EventKind::BarrierExit { .. } => "barrier_exit",
            EventKind::Alloc { .. } => "alloc",
            EventKind::Enter { .. } => "enter",
            EventKind::Exit { .. } => "exit",
            EventKind::Begin { .. } => "begin",
            EventKind::End { .. } => "end",
            EventKind::ThreadStart => "thread_start",
            EventKind::ThreadEnd => "thread_end",
            EventKind::Check { .. } => "check",
        }
    }
    /// All event kind names, in a fixed order (for statistics tables).
    pub const NAMES: [&'static str; 18] = [
        "read",
        "write",
        "volatile_read",
        "volatile_write",
        "acquire",
        "release",
        "fork",
        "join",
        "barrier_enter",
        "barrier_exit",
        "alloc",
        "enter",
        "exit",
        "begin",
        "end",
        "thread_start",
        "thread_end",
        "check",
    ];
    /// Position of `self.name()` in [`Self::NAMES`].
    pub fn ordinal(&self) -> usize {
        match self {
            EventKind::Read { .. } => 0,
            EventKind::Write { .. } => 1,
            EventKind::VolatileRead { .. } => 2,
            EventKind::VolatileWrite { .. } => 3,
            EventKind::Acquire { .. } => 4,
            EventKind::Release { .. } => 5,
            EventKind::Fork { .. } => 6,
            EventKind::Join { .. } => 7,
            EventKind::BarrierEnter { .. } => 8,
            EventKind::BarrierExit { .. } => 9,
            EventKind::Alloc { .. } => 10,
            EventKind::Enter { .. } => 11,
            EventKind::Exit { .. } => 12,
            EventKind::Begin { .. } => 13,
            EventKind::End { .. } => 14,
            EventKind::ThreadStart => 15,
            EventKind::ThreadEnd => 16,
            EventKind::Check { .. } => 17,
        }
    }
}

/// An owned copy of an event, for passes that keep the whole trace (the `hb` oracle,
/// the trace writer) and for tests.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnedEvent {
    pub tid: Tid,
    pub site: SiteId,
    pub index: u64,
    pub kind: OwnedKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OwnedKind {
    Read {
        loc: Loc,
    },
    Write {
        loc: Loc,
        value: Option<ObjId>,
    },
    VolatileRead {
        loc: Loc,
    },
    VolatileWrite {
        loc: Loc,
        value: Option<ObjId>,
    },
    Acquire {
        lock: ObjId,
    },
    Release {
        lock: ObjId,
    },
    Fork {
        child: Tid,
        handed: Vec<ObjId>,
    },
    Join {
        child: Tid,
    },
    BarrierEnter {
        barrier: ObjId,
        generation: u64,
        parties: u32,
    },
    BarrierExit {
        barrier: ObjId,
        generation: u64,
        parties: u32,
    },
    Alloc {
        obj: ObjId,
    },
    Enter {
        method: MethodId,
        receiver: Option<ObjId>,
        args: Vec<ObjId>,
    },
    Exit {
        method: MethodId,
        ret: Option<ObjId>,
    },
    Begin {
        spec: Spec,
    },
    End {
        spec: Spec,
    },
    ThreadStart,
    ThreadEnd,
    Check {
        loc: Loc,
        op: Op,
        span: CheckSpan,
    },
}

impl Event<'_> {
    pub fn to_owned(&self) -> OwnedEvent {
        use EventKind as K;
        use OwnedKind as O;
        let kind = match self.kind {
            K::Read { loc } => O::Read { loc },
            K::Write { loc, value } => O::Write { loc, value },
            K::VolatileRead { loc } => O::VolatileRead { loc },
            K::VolatileWrite { loc, value } => O::VolatileWrite { loc, value },
            K::Acquire { lock } => O::Acquire { lock },
            K::Release { lock } => O::Release { lock },
            K::Fork { child, handed } => O::Fork {
                child,
                handed: handed.to_vec(),
            },
            K::Join { child } => O::Join { child },
            K::BarrierEnter {
                barrier,
                generation,
                parties,
            } => O::BarrierEnter {
                barrier,
                generation,
                parties,
            },
            K::BarrierExit {
                barrier,
                generation,
                parties,
            } => O::BarrierExit {
                barrier,
                generation,
                parties,
            },
            K::Alloc { obj } => O::Alloc { obj },
            K::Enter {
                method,
                receiver,
                args,
            } => O::Enter {
                method,
                receiver,
                args: args.to_vec(),
            },
            K::Exit { method, ret } => O::Exit { method, ret },
            K::Begin { spec } => O::Begin { spec },
            K::End { spec } => O::End { spec },
            K::ThreadStart => O::ThreadStart,
            K::ThreadEnd => O::ThreadEnd,
            K::Check { loc, op, span } => O::Check { loc, op, span },
        };
        OwnedEvent {
            tid: self.tid,
            site: self.site,
            index: self.index,
            kind,
        }
    }
}

impl OwnedEvent {
    pub fn as_event(&self) -> Event<'_> {
        use EventKind as K;
        use OwnedKind as O;
        let kind = match &self.kind {
            O::Read { loc } => K::Read { loc: *loc },
            O::Write { loc, value } => K::Write {
                loc: *loc,
                value: *value,
            },
            O::VolatileRead { loc } => K::VolatileRead { loc: *loc },
            O::VolatileWrite { loc, value } => K::VolatileWrite {
                loc: *loc,
                value: *value,
            },
            O::Acquire { lock } => K::Acquire { lock: *lock },
            O::Release { lock } => K::Release { lock: *lock },
            O::Fork { child, handed } => K::Fork {
                child: *child,
                handed,
            },
            O::Join { child } => K::Join { child: *child },
            O::BarrierEnter {
                barrier,
                generation,
                parties,
            } => K::BarrierEnter {
                barrier: *barrier,
                generation: *generation,
                parties: *parties,
            },
            O::BarrierExit {
                barrier,
                generation,
                parties,
            } => K::BarrierExit {
                barrier: *barrier,
                generation: *generation,
                parties: *parties,
            },
            O::Alloc { obj } => K::Alloc { obj: *obj },
            O::Enter {
                method,
                receiver,
                args,
            } => K::Enter {
                method: *method,
                receiver: *receiver,
                args,
            },
            O::Exit { method, ret } => K::Exit {
                method: *method,
                ret: *ret,
            },
            O::Begin { spec } => K::Begin { spec: *spec },
            O::End { spec } => K::End { spec: *spec },
            O::ThreadStart => K::ThreadStart,
            O::ThreadEnd => K::ThreadEnd,
            O::Check { loc, op, span } => K::Check {
                loc: *loc,
                op: *op,
                span: *span,
            },
        };
        Event {
            tid: self.tid,
            site: self.site,
            index: self.index,
            kind,
        }
    }
}
