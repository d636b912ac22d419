//! Per-pass counters: events in, accesses dropped.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::event::EventKind;

/// Counters the chain keeps for each pass. Relaxed atomics: statistics only.
#[derive(Default, Debug)]
pub struct PassStats {
    /// Events delivered to the pass, by kind (`EventKind::NAMES` order).
    pub events_in: [AtomicU64; 18],
    /// Accesses the pass dropped.
    pub dropped: AtomicU64,
}

/// One thread's counters for one pass: events in by kind, then accesses dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalCounts {
    pub events_in: [u64; 18],
    pub dropped: u64,
}

impl LocalCounts {
    #[inline]
    pub fn saw(&mut self, kind: &EventKind<'_>) {
        self.events_in[kind.ordinal()] += 1;
    }

    /// `reads` reads and `writes` writes that came in and were dropped (accesses the
    /// producer filtered inline for this pass, see `crate::pass::InlineFilter`).
    pub fn saw_dropped(&mut self, reads: u64, writes: u64) {
        self.events_in[0] += reads;
        self.events_in[1] += writes;
        self.dropped += reads + writes;
    }
}

impl PassStats {
    /// Add (and reset) one thread's counters.
    pub fn merge(&self, local: &mut LocalCounts) {
        for (total, n) in self.events_in.iter().zip(local.events_in.iter()) {
            if *n > 0 {
                total.fetch_add(*n, Relaxed);
            }
        }
        self.dropped.fetch_add(local.dropped, Relaxed);
        *local = LocalCounts::default();
    }
    pub fn total_in(&self) -> u64 {
        self.events_in.iter().map(|c| c.load(Relaxed)).sum()
    }
    pub fn accesses_in(&self) -> u64 {
        self.events_in[0].load(Relaxed) + self.events_in[1].load(Relaxed)
    }
    pub fn to_json(&self) -> serde_json::Value {
        let mut by_kind = serde_json::Map::new();
        for (i, name) in EventKind::NAMES.iter().enumerate() {
            let n = self.events_in[i].load(Relaxed);
            if n > 0 {
                by_kind.insert((*name).to_string(), n.into());
            }
        }
        serde_json::json!({
            "events_in": self.total_in(),
            "accesses_in": self.accesses_in(),
            "dropped": self.dropped.load(Relaxed),
            "by_kind": by_kind,
        })
    }
}
