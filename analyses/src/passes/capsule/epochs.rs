//! The capsule's shadow state: the single epoch of the thesis (§5.5.1, Fig. 5.9), the
//! last exit `(tid, C_t[t])` or "occupied by t", plus the sites needed to report a
//! violation.
//!
//! Concurrency: the states live in sharded maps behind mutexes; a check-and-occupy
//! and an exit are each one critical section on the capsule's shard, like the
//! thesis's `synchronized(capsuleTimer)`. They are touched once per capsule method
//! call that accesses state (the lazy check) and once at its exit, never per access.

use hashbrown::HashMap;
use parking_lot::Mutex;

use crate::ctx::CtxId;
use crate::event::{ObjId, SiteId, Tid};
use crate::thread::ThreadState;
use crate::vc::Epoch;

const SHARDS: usize = 16;

/// A thread's operation on a capsule, for reports.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub tid: Tid,
    pub site: SiteId,
    pub ctx: CtxId,
    pub event: u64,
}

#[derive(Default, Clone, Copy, Debug)]
struct CapEpoch {
    /// The last exit of a call that accessed state: its epoch and where.
    last_exit: Option<(Epoch, Mark)>,
    /// The thread inside (from its first state access until its exit), and where it
    /// got inside.
    occupant: Option<Mark>,
    /// Where the last thread that was inside got inside.
    last_entry: Option<Mark>,
}

/// Why the synchronization property failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SyncError {
    /// Another thread is inside the capsule.
    Occupied(Mark),
    /// The last exit does not happen before this entry.
    Unordered(Mark),
}

/// One shard, on cache lines of its own: threads calling different capsules take
/// different shards, and must not contend for a line they share by accident.
#[repr(align(128))]
#[derive(Default)]
struct Shard(Mutex<HashMap<ObjId, CapEpoch>>);

#[derive(Default)]
pub struct EpochTable {
    shards: [Shard; SHARDS],
}

fn shard(k: ObjId) -> usize {
    ((k.0 >> 3) ^ (k.0 >> 13)) as usize % SHARDS
}

impl EpochTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The lazy synchronization check at the first state access of a call of `k`
    /// (Fig. 5.9 `enterCap`): fails if another thread is inside or the last exit does
    /// not happen before `t`'s clock; otherwise `t` is inside. `Ok(true)` if this call
    /// now holds the capsule, `Ok(false)` if `t` was already inside (an outer call).
    pub fn enter(&self, k: ObjId, t: &ThreadState, at: Mark) -> Result<bool, SyncError> {
        let mut s = self.shards[shard(k)].0.lock();
        let e = s.entry(k).or_default();
        if let Some(o) = e.occupant {
            return if o.tid == t.tid {
                Ok(false)
            } else {
                Err(SyncError::Occupied(o))
            };
        }
        if let Some((ep, m)) = e.last_exit
            && !ep.leq(&t.vc)
        {
            return Err(SyncError::Unordered(m));
        }
        e.occupant = Some(at);
        e.last_entry = Some(at);
        Ok(true)
    }

    /// Exit of the call that holds `k` (`exitCap`): record `C_t[t]@t`.
    pub fn exit(&self, k: ObjId, t: &ThreadState, at: Mark) {
        let mut s = self.shards[shard(k)].0.lock();
        let e = s.entry(k).or_default();
        e.occupant = None;
        e.last_exit = Some((t.epoch(), at));
    }

    /// Where a thread last got inside the capsule (for encapsulation reports).
    pub fn last_entry(&self, k: ObjId) -> Option<Mark> {
        self.shards[shard(k)].0.lock().get(&k)?.last_entry
    }

    /// A new object at `k` (address reuse): forget the old state.
    pub fn reset(&self, k: ObjId) {
        self.shards[shard(k)].0.lock().remove(&k);
    }
}
