//! `hb`: a slow, obviously correct happens-before oracle for tests and fuzzing.
//!
//! - Handled events: all of them; they are stored (with the accessing thread's call
//!   context) in arrival order, which the producer guarantees is a valid trace.
//! - Verdict, at `finish()`: happens-before is computed explicitly as the transitive
//!   closure of these edges (a → b with a before b in the trace):
//!   program order; every release of a lock → every later acquire of it; every
//!   volatile write of a variable → every later volatile read of it; a fork → the
//!   child's first event; a thread's last event → its join; every arrival of a
//!   barrier episode → every departure from it. Thread start/end events are events
//!   of their thread, so an empty child still orders fork → join (goldilocks G24).
//!   Then every plain access that has an earlier conflicting access (same location,
//!   another thread, at least one write) not ordered before it is reported, against
//!   the latest such access.
//! - It shares nothing with the clock service or the other detectors: it is their
//!   oracle. Cost: one bit set of n bits per thread and synchronization object for
//!   n events, and O(accesses²) checks per location.
//!
//! Concurrency: one mutex around the stored trace.

use std::sync::Arc;

use hashbrown::HashMap;
use parking_lot::Mutex;

use crate::ctx::CtxId;
use crate::event::{Event, Loc, ObjId, Op, OwnedEvent, OwnedKind, Tid};
use crate::pass::{Flow, Local, Pass};
use crate::report::WarningKind;
use crate::shared::Shared;
use crate::thread::ThreadState;

use super::shadow::{Acc, pair_warning};

/// A fixed-size bit set over event positions.
#[derive(Clone, Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn with_len(n: usize) -> Self {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
    fn union(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= *b;
        }
    }
}

/// One racy access found by [`races`]: positions in the event slice.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HbRace {
    /// The racy access.
    pub pos: usize,
    /// The latest earlier conflicting access not ordered before it.
    pub prev: usize,
}

/// All racy accesses of a well-formed trace, in trace order (conflict = same
/// location, different threads, at least one write).
pub fn races(events: &[OwnedEvent]) -> Vec<HbRace> {
    races_in_mode(events, false)
}

/// As [`races`]; with `read_read`, two reads also conflict (Goldilocks' TR mode).
pub fn races_in_mode(events: &[OwnedEvent], read_read: bool) -> Vec<HbRace> {
    let n = events.len();
    // closure[t] = {events of t so far} ∪ everything that happens before them.
    let mut closure: HashMap<Tid, Bits> = HashMap::new();
    // Sources accumulated per synchronization object (every earlier release, …).
    let mut released: HashMap<ObjId, Bits> = HashMap::new();
    let mut vol_written: HashMap<Loc, Bits> = HashMap::new();
    let mut arrived: HashMap<(ObjId, u64), Bits> = HashMap::new();
    let mut forked: HashMap<Tid, Bits> = HashMap::new();
    // Earlier accesses per location: (position, thread, op).
    let mut by_loc: HashMap<Loc, Vec<(usize, Tid, Op)>> = HashMap::new();
    let mut out = Vec::new();

    for (i, ev) in events.iter().enumerate() {
        let t = ev.tid;
        let mut before = match closure.remove(&t) {
            Some(b) => b,
            // The thread's first event: after its fork, if any.
            None => forked.remove(&t).unwrap_or_else(|| Bits::with_len(n)),
        };
        let mut access = None;
        match &ev.kind {
            OwnedKind::Acquire { lock } => {
                if let Some(s) = released.get(lock) {
                    before.union(s);
                }
            }
            OwnedKind::VolatileRead { loc } => {
                if let Some(s) = vol_written.get(loc) {
                    before.union(s);
                }
            }
            OwnedKind::Join { child } => {
                // The child's last event (or its fork, if it never ran).
                if let Some(s) = closure.get(child).or_else(|| forked.get(child)) {
                    before.union(s);
                }
            }
            OwnedKind::BarrierExit {
                barrier,
                generation,
                ..
            } => {
                if let Some(s) = arrived.get(&(*barrier, *generation)) {
                    before.union(s);
                }
            }
            OwnedKind::Read { loc } => access = Some((*loc, Op::Read)),
            OwnedKind::Write { loc, .. } => access = Some((*loc, Op::Write)),
            _ => {}
        }
        if let Some((loc, op)) = access {
            // `before` is exactly the set of events that happen before event i.
            let earlier = by_loc.entry(loc).or_default();
            let prev = earlier.iter().rev().find(|&&(j, u, opj)| {
                (read_read || op == Op::Write || opj == Op::Write) && u != t && !before.contains(j)
            });
            if let Some(&(j, _, _)) = prev {
                out.push(HbRace { pos: i, prev: j });
            }
            earlier.push((i, t, op));
        }
        before.insert(i);
        match &ev.kind {
            OwnedKind::Release { lock } => released
                .entry(*lock)
                .or_insert_with(|| Bits::with_len(n))
                .union(&before),
            OwnedKind::VolatileWrite { loc, .. } => vol_written
                .entry(*loc)
                .or_insert_with(|| Bits::with_len(n))
                .union(&before),
            OwnedKind::BarrierEnter {
                barrier,
                generation,
                ..
            } => arrived
                .entry((*barrier, *generation))
                .or_insert_with(|| Bits::with_len(n))
                .union(&before),
            OwnedKind::Fork { child, .. } => {
                forked.insert(*child, before.clone());
            }
            _ => {}
        }
        closure.insert(t, before);
    }
    out
}

pub struct Hb {
    trace: Mutex<Vec<(OwnedEvent, CtxId)>>,
    shared: Arc<Shared>,
}

impl Hb {
    pub fn new(shared: &Arc<Shared>) -> Self {
        Hb {
            trace: Mutex::new(Vec::new()),
            shared: shared.clone(),
        }
    }
    fn store(&self, t: &ThreadState, ev: &Event<'_>) {
        self.trace.lock().push((ev.to_owned(), t.ctx));
    }
}

impl Pass for Hb {
    fn name(&self) -> &'static str {
        "hb"
    }
    fn access(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) -> Flow {
        self.store(t, ev);
        Flow::Forward
    }
    fn event(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) {
        // A fork's child context is created by the chain; nothing else to do here.
        self.store(t, ev);
    }
    fn finish(&self) {
        let stored = std::mem::take(&mut *self.trace.lock());
        let ctxs: Vec<CtxId> = stored.iter().map(|(_, c)| *c).collect();
        let events: Vec<OwnedEvent> = stored.into_iter().map(|(e, _)| e).collect();
        let acc = |i: usize| {
            let e = &events[i];
            let (loc, op) = match e.kind {
                OwnedKind::Read { loc } => (loc, Op::Read),
                OwnedKind::Write { loc, .. } => (loc, Op::Write),
                _ => return None,
            };
            Some((
                loc,
                Acc {
                    tid: e.tid,
                    op,
                    site: e.site,
                    ctx: ctxs[i],
                    index: e.index,
                },
            ))
        };
        for r in races(&events) {
            let (Some((loc, cur)), Some((_, prev))) = (acc(r.pos), acc(r.prev)) else {
                continue;
            };
            let what = format!("{}-{} race", prev.op, cur.op);
            self.shared.reporter.report(pair_warning(
                WarningKind::Race,
                "hb",
                loc,
                &prev,
                &cur,
                what,
            ));
        }
    }
}
