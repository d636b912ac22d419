//! Per-thread state kept by the chain and shown to every pass.

use crate::ctx::CtxId;
use crate::event::{ObjId, Tid};
use crate::vc::{Epoch, VectorClock};

/// What the chain's shared services know about one thread. Passes read it; only the
/// chain writes it (after all passes have seen the event, so a pass sees the state
/// *before* the event it is handling).
#[derive(Debug)]
pub struct ThreadState {
    pub tid: Tid,
    /// Java happens-before clock: program order, monitors, volatiles, fork/join,
    /// barriers, wait (as release + acquire).
    pub vc: VectorClock,
    /// Monitors held (outermost acquisitions), oldest first.
    pub held: Vec<ObjId>,
    /// The current call stack, interned (see [`crate::ctx::CtxTree`]).
    pub ctx: CtxId,
    /// Stack of contexts for method exit.
    pub(crate) ctx_stack: Vec<CtxId>,
}

impl ThreadState {
    pub fn new(tid: Tid, vc: VectorClock) -> Self {
        ThreadState {
            tid,
            vc,
            held: Vec::new(),
            ctx: CtxId::ROOT,
            ctx_stack: Vec::new(),
        }
    }
    /// The thread's current epoch `C_t[t]@t`.
    #[inline]
    pub fn epoch(&self) -> Epoch {
        self.vc.epoch(self.tid)
    }
    pub fn holds(&self, lock: ObjId) -> bool {
        self.held.contains(&lock)
    }
}

/// Everything the chain keeps for one thread: the shared view plus one slot per pass.
/// The producer owns it and passes it `&mut` on every event of that thread.
pub struct ThreadCx {
    pub state: ThreadState,
    pub(crate) locals: Vec<Box<crate::pass::Local>>,
    /// Per-pass event counters of this thread, added to the chain's shared
    /// [`crate::stats::PassStats`] when the thread ends (the hot path touches no shared
    /// cache line).
    pub(crate) counts: Vec<crate::stats::LocalCounts>,
}

impl ThreadCx {
    pub fn tid(&self) -> Tid {
        self.state.tid
    }
}
