//! `fasttrack`: FastTrack with epochs and adaptive read state (Flanagan & Freund,
//! PLDI'09; the revised "FT2" rules of `notes/bigfoot.md` §1.5).
//!
//! - Handled events: plain reads and writes. Every synchronization rule (acquire,
//!   release, fork, join, volatile read/write, wait as release + acquire, barriers)
//!   is applied once by the chain's clock service (`crate::clocks`); the thread's
//!   clock `C_t` is `ThreadState::vc`.
//! - State per location: the last write `W` (an epoch) and the reads `R`, an epoch
//!   while reads are totally ordered and a vector clock (`READ_SHARED`) otherwise.
//! - Verdict: a race warning at every access that the rules flag; the first flagged
//!   access of a location is the first access racing with an earlier conflicting one.
//!
//! Concurrency: per-location state in a sharded map, mutated under its shard's lock
//! (`super::shadow`).

use crate::chain::Shared;
use crate::event::{Event, EventKind, Loc, Op};
use crate::pass::{Flow, Local, Pass};
use crate::report::{Reporter, WarningKind};
use crate::thread::ThreadState;
use crate::vc::{Epoch, VectorClock};

use super::shadow::{Acc, Shadow, pair_warning};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The read state of FT2.
enum Reads {
    /// Totally ordered reads: the last one (`Epoch::NONE` = no read yet).
    Epoch(Epoch, Option<Acc>),
    /// Concurrent reads: per-thread read clocks, and the last read of each thread.
    Shared(VectorClock, Vec<Option<Acc>>),
}

struct VarState {
    w: Epoch,
    w_acc: Option<Acc>,
    r: Reads,
}

impl VarState {
    fn new() -> Self {
        VarState {
            w: Epoch::NONE,
            w_acc: None,
            r: Reads::Epoch(Epoch::NONE, None),
        }
    }
}

/// The FT2 rules, for statistics (how often each fired) and tests.
#[derive(Copy, Clone, Debug)]
enum Rule {
    ReadSameEpoch,
    ReadSharedSameEpoch,
    ReadExclusive,
    ReadShare,
    ReadShared,
    WriteSameEpoch,
    WriteExclusive,
    WriteShared,
}

#[derive(Default)]
struct RuleCounts([u64; 8]);

const RULE_NAMES: [&str; 8] = [
    "read_same_epoch",
    "read_shared_same_epoch",
    "read_exclusive",
    "read_share",
    "read_shared",
    "write_same_epoch",
    "write_exclusive",
    "write_shared",
];

pub struct FastTrack {
    vars: Shadow<VarState>,
    shared: Arc<Shared>,
    rules: [AtomicU64; 8],
}

fn set_acc(v: &mut Vec<Option<Acc>>, a: Acc) {
    let i = a.tid as usize;
    if v.len() <= i {
        v.resize(i + 1, None);
    }
    v[i] = Some(a);
}

impl FastTrack {
    pub fn new(shared: &Arc<Shared>) -> Self {
        FastTrack {
            vars: Shadow::default(),
            shared: shared.clone(),
            rules: Default::default(),
        }
    }

    fn race(r: &Reporter, loc: Loc, prev: Option<Acc>, cur: &Acc, what: &str) {
        if let Some(p) = prev {
            r.report(pair_warning(
                WarningKind::Race,
                "fasttrack",
                loc,
                &p,
                cur,
                format!("{what} race"),
            ));
        }
    }

    /// FT2 `read(t,x)`; returns the rule that applied.
    fn read(&self, t: &ThreadState, x: &mut VarState, loc: Loc, cur: Acc) -> Rule {
        let e = t.epoch();
        let rep = &self.shared.reporter;
        match &x.r {
            // [FT read same epoch]
            Reads::Epoch(r, _) if *r == e => return Rule::ReadSameEpoch,
            // [FT read shared same epoch]
            Reads::Shared(vc, _) if vc.get(t.tid) == e.clock => return Rule::ReadSharedSameEpoch,
            _ => {}
        }
        // [FT write-read race]
        if x.w.tid != t.tid && !x.w.leq(&t.vc) {
            Self::race(rep, loc, x.w_acc, &cur, "write-read");
        }
        match &mut x.r {
            Reads::Epoch(r, racc) => {
                if r.tid == t.tid || r.leq(&t.vc) {
                    // [FT read exclusive]
                    *r = e;
                    *racc = Some(cur);
                    Rule::ReadExclusive
                } else {
                    // [FT read share]
                    let mut vc = VectorClock::new();
                    vc.set(r.tid, r.clock);
                    vc.set(t.tid, e.clock);
                    let mut accs = Vec::new();
                    if let Some(a) = racc {
                        set_acc(&mut accs, *a);
                    }
                    set_acc(&mut accs, cur);
                    x.r = Reads::Shared(vc, accs);
                    Rule::ReadShare
                }
            }
            // [FT read shared]
            Reads::Shared(vc, accs) => {
                vc.set(t.tid, e.clock);
                set_acc(accs, cur);
                Rule::ReadShared
            }
        }
    }

    /// FT2 `write(t,x)`; returns the rule that applied.
    fn write(&self, t: &ThreadState, x: &mut VarState, loc: Loc, cur: Acc) -> Rule {
        let e = t.epoch();
        let rep = &self.shared.reporter;
        // [FT write same epoch]
        if x.w == e {
            return Rule::WriteSameEpoch;
        }
        // [FT write-write race]
        if x.w.tid != t.tid && !x.w.leq(&t.vc) {
            Self::race(rep, loc, x.w_acc, &cur, "write-write");
        }
        match &x.r {
            // [FT read-write race]
            Reads::Epoch(r, racc) => {
                if r.tid != t.tid && !r.leq(&t.vc) {
                    Self::race(rep, loc, *racc, &cur, "read-write");
                }
            }
            // [FT shared-read-write race], one warning per unordered reader
            Reads::Shared(vc, accs) => {
                for (u, c) in vc.entries() {
                    if c > t.vc.get(u) {
                        let prev = accs.get(u as usize).copied().flatten();
                        Self::race(rep, loc, prev, &cur, "read-write");
                    }
                }
            }
        }
        // [FT write exclusive / write shared]: FT2 keeps a shared read state.
        x.w = e;
        x.w_acc = Some(cur);
        match x.r {
            Reads::Epoch(..) => Rule::WriteExclusive,
            Reads::Shared(..) => Rule::WriteShared,
        }
    }

    /// Number of locations with shadow state (statistics).
    pub fn locations(&self) -> usize {
        self.vars.len()
    }
}

impl Pass for FastTrack {
    fn name(&self) -> &'static str {
        "fasttrack"
    }
    fn thread_local(&self) -> Box<Local> {
        Box::new(RuleCounts::default())
    }
    fn access(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) -> Flow {
        let rule = match ev.kind {
            EventKind::Read { loc } => {
                let cur = Acc::of(t, ev, Op::Read);
                self.vars
                    .with(loc, VarState::new, |x| self.read(t, x, loc, cur))
            }
            EventKind::Write { loc, .. } => {
                let cur = Acc::of(t, ev, Op::Write);
                self.vars
                    .with(loc, VarState::new, |x| self.write(t, x, loc, cur))
            }
            _ => return Flow::Forward,
        };
        if let Some(c) = local.downcast_mut::<RuleCounts>() {
            c.0[rule as usize] += 1;
        }
        Flow::Forward
    }
    fn event(&self, _t: &ThreadState, local: &mut Local, ev: &Event<'_>) {
        // Per-thread rule counts join the totals when the thread ends, so the hot
        // path touches no shared counter.
        if let EventKind::ThreadEnd = ev.kind
            && let Some(c) = local.downcast_mut::<RuleCounts>()
        {
            for (i, n) in c.0.iter_mut().enumerate() {
                self.rules[i].fetch_add(std::mem::take(n), Relaxed);
            }
        }
    }
    fn stats(&self) -> Option<serde_json::Value> {
        let mut shared = 0u64;
        self.vars.for_each(|v| {
            if matches!(v.r, Reads::Shared(..)) {
                shared += 1;
            }
        });
        let mut v = serde_json::json!({
            "locations": self.locations(),
            "read_shared_locations": shared,
        });
        for (i, name) in RULE_NAMES.iter().enumerate() {
            v[*name] = self.rules[i].load(Relaxed).into();
        }
        Some(v)
    }
}
