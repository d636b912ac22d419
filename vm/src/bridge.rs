//! Feeding the analysis chain from the running program.
//!
//! Exists only when a chain is active (`--tools none` ⇒ no bridge, no events, no
//! bookkeeping). The interpreter (and later the JIT's runtime calls) build events and
//! deliver them here with the thread's own [`ThreadCx`]; the event mapping is
//! documented on each call site in `interp.rs`. Volatile accesses are performed
//! while holding a striped lock together with the delivery of their event, so the
//! chain sees volatile operations in the order they take effect.

use std::sync::Arc;

use analyses::thread::ThreadCx;
use analyses::{Chain, Event, EventKind, Loc, ObjId, SiteId};
use parking_lot::{Mutex, MutexGuard};

use crate::env::VmEnv;

const STRIPES: usize = 64;

pub struct Bridge {
    pub chain: Chain,
    pub env: Arc<VmEnv>,
    stripes: Vec<Mutex<()>>,
}

impl Bridge {
    pub fn new(chain: Chain, env: Arc<VmEnv>) -> Bridge {
        Bridge {
            chain,
            env,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    /// Deliver one event of `cx`'s thread.
    #[inline]
    pub fn emit(&self, cx: &mut ThreadCx, site: lang::ir::SiteId, kind: EventKind<'_>) {
        let ev = Event {
            tid: cx.tid(),
            site: SiteId(site.0),
            index: 0,
            kind,
        };
        self.chain.deliver(cx, &ev);
    }

    /// Deliver `Fork` and return the child's context.
    pub fn fork(
        &self,
        parent: &mut ThreadCx,
        child: u32,
        site: lang::ir::SiteId,
        handed: &[ObjId],
    ) -> ThreadCx {
        self.chain.fork(parent, child, SiteId(site.0), 0, handed)
    }

    /// The lock that makes a volatile access atomic with its event.
    #[inline]
    pub fn volatile_lock(&self, loc: Loc) -> MutexGuard<'_, ()> {
        let k = loc.key();
        let i = ((k >> 3) ^ (k >> 11)) as usize % STRIPES;
        self.stripes[i].lock()
    }
}

/// `Some(obj)` for a non-null reference stored in a reference-typed slot.
#[inline]
pub fn ref_value(is_ref: bool, v: u64) -> Option<ObjId> {
    if is_ref && v != 0 {
        Some(ObjId(v))
    } else {
        None
    }
}
