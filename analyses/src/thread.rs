//! Per-thread state kept by the chain and shown to every pass.

use crate::ctx::{CtxCache, CtxId};
use crate::event::{MethodId, ObjId, Tid};
use crate::vc::{Epoch, VectorClock};
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// Stack of contexts and running methods for method exit.
    pub(crate) ctx_stack: Vec<(CtxId, Option<MethodId>)>,
    /// The contexts this thread has interned (no shared lock per call).
    pub(crate) ctx_cache: CtxCache,
    /// With [`crate::Chain::sync_frames`]: the context of each prefix of the stack
    /// last handed over (entry `i`: the outermost `i + 1` frames), followed by those
    /// of the frames above it that returned since (kept for the next call).
    pub(crate) frame_ctxs: Vec<CtxId>,
    /// With [`crate::Chain::sync_frames`]: the packed frames of `frame_ctxs`.
    pub(crate) frame_words: Vec<u64>,
    /// With [`crate::Chain::sync_frames`]: how many frames the last stack had.
    pub(crate) frame_depth: usize,
    /// The producer keeps the stack and hands it over ([`crate::Chain::sync_frames`]),
    /// so `Enter`/`Exit` events, if any, do not move the context.
    pub(crate) stack_synced: bool,
    /// The running method (innermost frame), if any.
    pub method: Option<MethodId>,
}

impl ThreadState {
    pub fn new(tid: Tid, vc: VectorClock) -> Self {
        ThreadState {
            tid,
            vc,
            held: Vec::new(),
            ctx: CtxId::ROOT,
            ctx_stack: Vec::new(),
            ctx_cache: CtxCache::default(),
            frame_ctxs: Vec::new(),
            frame_words: Vec::new(),
            frame_depth: 0,
            stack_synced: false,
            method: None,
        }
    }
    /// The thread's current epoch `C_t[t]@t`.
    #[inline]
    pub fn epoch(&self) -> Epoch {
        self.vc.epoch(self.tid)
    }
    /// How many frames the stack last handed to [`crate::Chain::sync_frames`] had.
    pub fn frame_depth(&self) -> usize {
        self.frame_depth
    }
    /// The method and call site of the innermost frame of the stack last handed to
    /// [`crate::Chain::sync_frames`] (none without one, or on an empty stack): its
    /// call's `Exit` comes at that site, in context [`ThreadState::ctx`].
    pub fn top_frame(&self) -> Option<(MethodId, crate::event::SiteId)> {
        if !self.stack_synced || self.frame_depth == 0 {
            return None;
        }
        let w = *self.frame_words.get(self.frame_depth - 1)?;
        Some(crate::ctx::unpack_frame(w))
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
    /// `Epoch::pack(state.epoch())`, kept current by the chain after every event that
    /// can change the thread's clock, at an address that stays put while the context
    /// moves: a producer's generated code reads it for the inline same-epoch check
    /// ([`crate::pass::InlineCheck`]). Only this thread's events write it.
    pub(crate) epoch_word: Box<EpochWords>,
}

/// A thread's packed epoch and, after it, the epoch's mask and key in the caches
/// of recent readers of FastTrack's read-shared cells
/// ([`crate::pass::fasttrack_read_key`], at [`crate::pass::FASTTRACK_READ_MASK_OFF`]
/// and [`crate::pass::FASTTRACK_READ_KEY_OFF`]), and where its vector clock's
/// entries are ([`crate::pass::THREAD_VC_PTR_OFF`], [`crate::pass::THREAD_VC_LEN_OFF`]).
#[repr(C)]
#[derive(Default)]
pub(crate) struct EpochWords {
    epoch: AtomicU64,
    read_mask: AtomicU64,
    read_key: AtomicU64,
    /// The address and length of the thread's vector clock's entries (`u32` each),
    /// valid until the clock next changes, which only this thread's events do.
    vc_ptr: AtomicU64,
    vc_len: AtomicU64,
}

const _: () = {
    assert!(
        std::mem::offset_of!(EpochWords, read_mask)
            == crate::pass::FASTTRACK_READ_MASK_OFF as usize
    );
    assert!(
        std::mem::offset_of!(EpochWords, read_key) == crate::pass::FASTTRACK_READ_KEY_OFF as usize
    );
    assert!(std::mem::offset_of!(EpochWords, vc_ptr) == crate::pass::THREAD_VC_PTR_OFF as usize);
    assert!(std::mem::offset_of!(EpochWords, vc_len) == crate::pass::THREAD_VC_LEN_OFF as usize);
};

/// Whether the shadow words `w` and `r` (FastTrack's `W` and `R`,
/// [`crate::pass::InlineCheck::FastTrack`]) are each 0, an epoch of the thread whose
/// epoch word is at `epoch_word`, or an epoch ordered before it by its vector clock
/// ([`Epoch::leq`] on the clock the chain last stored beside the word): the case in
/// which FT2's exclusive rules find no race. A locked `W` or a tagged `R` has a
/// thread id past every clock's length, so it is none of these. For producers that
/// apply the rules in generated code and test this case out of line.
///
/// # Safety
/// `epoch_word` is the address [`ThreadCx::epoch_word`] gives, of the calling
/// thread's own context, which lives; the clock's entries stay in place until that
/// thread's next synchronization event, which cannot happen during the call.
pub unsafe fn ordered_before_thread(epoch_word: *const u64, w: u64, r: u64) -> bool {
    // SAFETY: `ThreadCx::epoch_word` is the first field of a live `EpochWords`
    // (`repr(C)`), whose clock address and length the chain keeps current
    // (`ThreadCx::refresh_epoch`; caller).
    let (e, vc) = unsafe {
        let words = &*(epoch_word as *const EpochWords);
        let vc = std::slice::from_raw_parts(
            words.vc_ptr.load(Ordering::Relaxed) as *const crate::vc::Clock,
            words.vc_len.load(Ordering::Relaxed) as usize,
        );
        (Epoch::unpack(words.epoch.load(Ordering::Relaxed)), vc)
    };
    let ok = |v: u64| {
        let x = Epoch::unpack(v);
        v == 0 || x.tid == e.tid || vc.get(x.tid as usize).is_some_and(|&c| x.clock <= c)
    };
    ok(w) && ok(r)
}

impl ThreadCx {
    pub fn tid(&self) -> Tid {
        self.state.tid
    }

    /// The thread's packed epoch (see the field); its address is stable for the
    /// context's lifetime.
    pub fn epoch_word(&self) -> &AtomicU64 {
        &self.epoch_word.epoch
    }

    /// Store the current epoch into [`ThreadCx::epoch_word`], and after it its
    /// read-cache mask and key and the place of the vector clock's entries.
    #[inline]
    pub(crate) fn refresh_epoch(&self) {
        let e = self.state.epoch();
        let (mask, key) = crate::pass::fasttrack_read_key(e.tid, e.clock);
        let w = &self.epoch_word;
        w.epoch.store(Epoch::pack(e), Ordering::Relaxed);
        w.read_mask.store(mask, Ordering::Relaxed);
        w.read_key.store(key, Ordering::Relaxed);
        let vc = self.state.vc.as_slice();
        w.vc_ptr.store(vc.as_ptr() as u64, Ordering::Relaxed);
        w.vc_len.store(vc.len() as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::{FASTTRACK_LOCKED, FASTTRACK_SHARED_TAG};

    #[test]
    fn ordered_before_thread_follows_the_clock_and_rejects_tagged_words() {
        let mut vc = VectorClock::new();
        vc.set(0, 5);
        vc.set(2, 7);
        let cx = ThreadCx {
            state: ThreadState::new(2, vc),
            locals: Vec::new(),
            counts: Vec::new(),
            epoch_word: Box::default(),
        };
        cx.refresh_epoch();
        let ep = cx.epoch_word().as_ptr() as *const u64;
        let at = |t: Tid, c: u32| Epoch::pack(Epoch::new(t, c));
        // SAFETY: `cx` is alive and this thread's; nothing changes its clock here.
        let ok = |w, r| unsafe { ordered_before_thread(ep, w, r) };
        assert!(ok(0, 0));
        assert!(ok(at(2, 7), at(2, 3)), "own epochs");
        assert!(ok(at(0, 5), 0), "ordered: 5 <= C[0]");
        assert!(!ok(at(0, 6), 0), "concurrent: 6 > C[0]");
        assert!(!ok(0, at(1, 1)), "no entry for thread 1");
        assert!(!ok(at(0, 1) | FASTTRACK_LOCKED, 0), "a locked W");
        assert!(!ok(0, at(0, 1) | FASTTRACK_SHARED_TAG), "a tagged R");
    }
}
