//! `count`: how many events of each kind ran (for `--stats`). Forwards everything.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::event::{Event, EventKind};
use crate::pass::{Flow, Local, Pass};
use crate::thread::ThreadState;

/// Per-thread counters, summed into the shared ones when the thread ends, so the hot
/// path touches no shared cache line.
#[derive(Default)]
struct Counts([u64; 18]);

#[derive(Default)]
pub struct Count {
    totals: [AtomicU64; 18],
}

impl Count {
    pub fn new() -> Self {
        Self::default()
    }
    fn bump(local: &mut Local, kind: &EventKind<'_>) {
        if let Some(c) = local.downcast_mut::<Counts>() {
            c.0[kind.ordinal()] += 1;
        }
    }
    /// Totals by kind name (only kinds that occurred).
    pub fn totals(&self) -> Vec<(&'static str, u64)> {
        EventKind::NAMES
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, self.totals[i].load(Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

impl Pass for Count {
    fn name(&self) -> &'static str {
        "count"
    }
    fn thread_local(&self) -> Box<Local> {
        Box::new(Counts::default())
    }
    fn access(&self, _t: &ThreadState, local: &mut Local, ev: &Event<'_>) -> Flow {
        Self::bump(local, &ev.kind);
        Flow::Forward
    }
    fn event(&self, _t: &ThreadState, local: &mut Local, ev: &Event<'_>) {
        Self::bump(local, &ev.kind);
        if let EventKind::ThreadEnd = ev.kind
            && let Some(c) = local.downcast_mut::<Counts>()
        {
            for (i, n) in c.0.iter_mut().enumerate() {
                self.totals[i].fetch_add(*n, Relaxed);
                *n = 0;
            }
        }
    }
    fn stats(&self) -> Option<serde_json::Value> {
        let mut m = serde_json::Map::new();
        for (name, n) in self.totals() {
            m.insert(name.to_string(), n.into());
        }
        Some(serde_json::Value::Object(m))
    }
}
