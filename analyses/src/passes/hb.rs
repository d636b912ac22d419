//! `hb`: an obviously correct happens-before oracle for tests and fuzzing.
//!
//! - Handled events: all of them, in arrival order, which the producer guarantees is
//!   a valid trace.
//! - Happens-before is the transitive closure of these edges (a → b with a before b in
//!   the trace): program order; every release of a lock → every later acquire of it;
//!   every volatile write of a variable → every later volatile read of it; a fork →
//!   the child's first event; a thread's last event → its join; every arrival of a
//!   barrier episode → every departure from it. Thread start/end events are events of
//!   their thread, so an empty child still orders fork → join (goldilocks G24).
//! - The pass computes it with its own vector clocks, kept apart from the chain's
//!   clock service and `crate::vc` (it is their oracle): every event of thread `t`
//!   ticks `C_t[t]`, so event `a` of `u` happens before the current event of `t` iff
//!   `a`'s tick is at most `C_t[u]`. Sources are joined in per edge above: each lock,
//!   volatile variable and barrier episode keeps the join of the clocks of all its
//!   releases, writes or arrivals so far; a fork keeps the parent's clock for the
//!   child; a join takes the child's last clock.
//! - Verdict: every plain access that has an earlier conflicting access (same
//!   location, another thread, at least one write) not ordered before it is reported,
//!   against the latest such access. Per location and thread, the last read and the
//!   last write suffice: a thread's earlier accesses happen before its later ones, so
//!   if its last one is ordered before the current access all of them are, and
//!   otherwise its last one is its latest unordered one.
//! - Cost: a clock per thread, lock, volatile variable and pending barrier episode,
//!   and two access records per location and thread; nothing grows with the length
//!   of the trace. [`races`] is the same relation computed offline as explicit sets
//!   of events (for tests: memory quadratic in the trace).
//!
//! Concurrency: one mutex around all the state.

use std::sync::Arc;

use hashbrown::HashMap;
use parking_lot::Mutex;

use crate::event::{Event, EventKind, Loc, ObjId, Op, OwnedEvent, OwnedKind, Tid};
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

/// A vector clock as a plain vector indexed by thread (missing entries are 0).
#[derive(Clone, Default)]
struct Clock(Vec<u64>);

impl Clock {
    fn get(&self, t: Tid) -> u64 {
        self.0.get(t as usize).copied().unwrap_or(0)
    }
    fn tick(&mut self, t: Tid) {
        let i = t as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        self.0[i] += 1;
    }
    fn join(&mut self, other: &Clock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a = (*a).max(*b);
        }
    }
}

/// A thread's last read or write of a location: its tick, its position among all
/// accesses (to find the latest) and the access for reports.
#[derive(Clone, Copy)]
struct Last {
    tick: u64,
    seq: u64,
    acc: Acc,
}

#[derive(Default)]
struct State {
    threads: HashMap<Tid, Clock>,
    forked: HashMap<Tid, Clock>,
    released: HashMap<ObjId, Clock>,
    vol_written: HashMap<Loc, Clock>,
    /// Per barrier episode: the join of its arrivals and the departures still to come.
    arrived: HashMap<(ObjId, u64), (Clock, u32)>,
    /// Per location, per thread: the last read (`[0]`) and last write (`[1]`).
    accesses: HashMap<Loc, Vec<[Option<Last>; 2]>>,
    seq: u64,
}

impl State {
    /// The clock of `t` at its next event (ticked), starting after its fork if any.
    fn tick(&mut self, t: Tid) -> &mut Clock {
        let forked = &mut self.forked;
        let c = self
            .threads
            .entry(t)
            .or_insert_with(|| forked.remove(&t).unwrap_or_default());
        c.tick(t);
        c
    }

    fn event(&mut self, t: Tid, ev: &Event<'_>) {
        self.tick(t);
        let mut c = self.threads.remove(&t).unwrap_or_default();
        match ev.kind {
            EventKind::Acquire { lock } => {
                if let Some(s) = self.released.get(&lock) {
                    c.join(s);
                }
            }
            EventKind::VolatileRead { loc } => {
                if let Some(s) = self.vol_written.get(&loc) {
                    c.join(s);
                }
            }
            EventKind::Join { child } => {
                // The child's last event (or its fork, if it never ran).
                if let Some(s) = self.threads.get(&child).or_else(|| self.forked.get(&child)) {
                    c.join(s);
                }
            }
            EventKind::BarrierExit {
                barrier,
                generation,
                ..
            } => {
                if let Some((s, left)) = self.arrived.get_mut(&(barrier, generation)) {
                    c.join(s);
                    *left = left.saturating_sub(1);
                    if *left == 0 {
                        self.arrived.remove(&(barrier, generation));
                    }
                }
            }
            EventKind::Release { lock } => self.released.entry(lock).or_default().join(&c),
            EventKind::VolatileWrite { loc, .. } => {
                self.vol_written.entry(loc).or_default().join(&c)
            }
            EventKind::BarrierEnter {
                barrier,
                generation,
                parties,
            } => {
                let e = self
                    .arrived
                    .entry((barrier, generation))
                    .or_insert_with(|| {
                        (
                            Clock::default(),
                            if parties == 0 { u32::MAX } else { parties },
                        )
                    });
                e.0.join(&c);
            }
            EventKind::Fork { child, .. } => {
                self.forked.insert(child, c.clone());
            }
            _ => {}
        }
        self.threads.insert(t, c);
    }

    /// A plain access of `t`: the latest earlier conflicting access not ordered
    /// before it, if any; then the access becomes `t`'s last one of its kind.
    fn access(&mut self, t: Tid, loc: Loc, cur: Acc) -> Option<Acc> {
        let tick = self.tick(t).get(t);
        let c = &self.threads[&t];
        self.seq += 1;
        let per_thread = self.accesses.entry(loc).or_default();
        let mut prev: Option<Last> = None;
        for (u, pair) in per_thread.iter().enumerate() {
            if u == t as usize {
                continue;
            }
            let kinds: &[Option<Last>] = match cur.op {
                Op::Read => &pair[1..],
                Op::Write => &pair[..],
            };
            for l in kinds.iter().flatten() {
                if l.tick > c.get(u as Tid) && prev.is_none_or(|p| l.seq > p.seq) {
                    prev = Some(*l);
                }
            }
        }
        let i = t as usize;
        if per_thread.len() <= i {
            per_thread.resize(i + 1, [None, None]);
        }
        per_thread[i][usize::from(cur.op == Op::Write)] = Some(Last {
            tick,
            seq: self.seq,
            acc: cur,
        });
        prev.map(|p| p.acc)
    }
}

pub struct Hb {
    state: Mutex<State>,
    shared: Arc<Shared>,
}

impl Hb {
    pub fn new(shared: &Arc<Shared>) -> Self {
        Hb {
            state: Mutex::new(State::default()),
            shared: shared.clone(),
        }
    }
}

impl Pass for Hb {
    fn name(&self) -> &'static str {
        "hb"
    }
    fn access(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) -> Flow {
        let Some((loc, op, _)) = ev.kind.plain_access() else {
            self.state.lock().event(t.tid, ev);
            return Flow::Forward;
        };
        let cur = Acc::of(t, ev, op);
        let prev = self.state.lock().access(t.tid, loc, cur);
        if let Some(prev) = prev {
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
        Flow::Forward
    }
    fn event(&self, t: &ThreadState, _local: &mut Local, ev: &Event<'_>) {
        // A fork's child context is created by the chain; only the clocks change here.
        self.state.lock().event(t.tid, ev);
    }
    fn stats(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "locations": self.state.lock().accesses.len() }))
    }
}
