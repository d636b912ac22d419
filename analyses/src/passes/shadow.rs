//! Shadow state shared by the detectors: a sharded concurrent map from
//! [`Loc::key`] to a detector's per-location state, and the compact record of one
//! access that warnings are built from.
//!
//! Concurrency design (the same for every detector): guest threads call a pass in
//! parallel. Each location's state lives in exactly one shard and is only read or
//! written while that shard's mutex is held, so two threads accessing the same
//! location are serialized, and threads accessing different shards run in parallel.
//! The thread's own clock (`ThreadState::vc`) is read without locking: only its thread
//! writes it (see `crate::clocks`).

use hashbrown::HashMap;
use parking_lot::Mutex;

use crate::ctx::CtxId;
use crate::event::{Event, Loc, Op, SiteId, Tid};
use crate::report::{AccessInfo, Warning, WarningKind};
use crate::thread::ThreadState;

const SHARDS: usize = 64;

/// `Loc::key() → T`, sharded.
pub struct Shadow<T> {
    shards: Box<[Mutex<HashMap<u64, T>>]>,
}

impl<T> Default for Shadow<T> {
    fn default() -> Self {
        Shadow {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

#[inline]
fn shard_of(key: u64) -> usize {
    let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 58) as usize % SHARDS
}

impl<T> Shadow<T> {
    /// Run `f` on the state of `loc` (created by `init` on first use) under its
    /// shard's lock.
    #[inline]
    pub fn with<R>(&self, loc: Loc, init: impl FnOnce() -> T, f: impl FnOnce(&mut T) -> R) -> R {
        let key = loc.key();
        let mut shard = self.shards[shard_of(key)].lock();
        f(shard.entry(key).or_insert_with(init))
    }

    /// Visit every state (one shard locked at a time).
    pub fn for_each(&self, mut f: impl FnMut(&T)) {
        for s in self.shards.iter() {
            for v in s.lock().values() {
                f(v);
            }
        }
    }

    /// Number of locations with state.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Who accessed, where, in which call context, at which trace line.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Acc {
    pub tid: Tid,
    pub op: Op,
    pub site: SiteId,
    pub ctx: CtxId,
    /// 1-based trace line (0 = not from a trace file).
    pub index: u64,
}

impl Acc {
    pub fn of(t: &ThreadState, ev: &Event<'_>, op: Op) -> Acc {
        Acc {
            tid: t.tid,
            op,
            site: ev.site,
            ctx: t.ctx,
            index: ev.index,
        }
    }

    pub fn info(&self) -> AccessInfo {
        let mut a = AccessInfo::access(self.tid, self.op, self.site, self.ctx);
        a.event = (self.index != 0).then_some(self.index);
        a
    }
}

/// A warning about `loc`: `prev` (earlier) and `cur` (the access at which it was
/// found); `event` is `cur`'s trace line.
pub fn pair_warning(
    kind: WarningKind,
    analysis: &'static str,
    loc: Loc,
    prev: &Acc,
    cur: &Acc,
    message: String,
) -> Warning {
    let mut w = Warning::new(kind, analysis);
    w.loc = Some(loc);
    w.accesses = vec![prev.info(), cur.info()];
    w.event = (cur.index != 0).then_some(cur.index);
    w.message = message;
    w
}
