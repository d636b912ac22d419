//! The per-thread hook: one guest thread's connection to the analysis chain, used by
//! both tiers (the interpreter, the JIT's runtime functions and the runtime
//! operations they share, `crate::rtops`).
//!
//! A hook is *off* without a chain (`--tools none`: no event is built past the
//! check). When on, it holds the run's [`Bridge`] and the thread's own [`ThreadCx`],
//! delivers the thread's events in program order, hands a forked child its hook, and
//! performs volatile accesses atomically with their events: under the bridge's
//! striped lock, so the chain sees volatile operations in the order they take effect.
//!
//! When no pass of the chain takes every `Enter`/`Exit` event
//! (`analyses::Chain::frame_events`), the tiers deliver only those of the calls some
//! pass asked for ([`Hook::frame_events_of`]; `capsule`: methods of capsule classes),
//! and the chain learns the call context from the thread's stack instead, which the
//! hook keeps for the interpreter ([`Hook::push_frame`], [`Hook::pop_frame`]) and the
//! JIT hands over from its shadow stack ([`Hook::sync_stack`]) before it delivers an
//! event.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use analyses::ctx::pack_frame;
use analyses::pass::{InlineChecks, InlineDrops};
use analyses::thread::ThreadCx;
use analyses::{Event, EventKind, Loc, MethodId, ObjId, SiteId};

use crate::bridge::Bridge;
use crate::heap;

pub struct Hook(Option<On>);

struct On {
    bridge: Arc<Bridge>,
    cx: ThreadCx,
    stack: Stack,
    /// The address of the thread's nested-call word
    /// (`analyses::Chain::nested_call_word`), 0 if the chain has none: it lives in
    /// a pass's thread-local state in `cx`, boxed, so it stays put while `cx` does,
    /// and `elides_frames` reads it at every call without asking the passes.
    nested: usize,
    /// Some pass takes `analyses::Chain::before_sync`.
    before_sync: bool,
    /// The addresses of the thread's lazy frames and of their gate
    /// (`analyses::Chain::lazy_frames`), 0 if the chain has none; as `nested`, they
    /// stay put while `cx` and the chain do.
    lazy: usize,
    lazy_gate: usize,
}

impl On {
    fn new(bridge: Arc<Bridge>, cx: ThreadCx) -> On {
        let nested = bridge
            .chain
            .nested_call_word(&cx)
            .map_or(0, |w| w as *const AtomicU64 as usize);
        let stack = Stack::of(&bridge);
        let before_sync = bridge.chain.wants_before_sync();
        let (lazy, lazy_gate) = bridge.chain.lazy_frames(&cx).map_or((0, 0), |(f, g)| {
            (
                f as *const analyses::pass::LazyFrames as usize,
                g as *const AtomicU64 as usize,
            )
        });
        On {
            bridge,
            cx,
            stack,
            nested,
            before_sync,
            lazy,
            lazy_gate,
        }
    }
}

/// Who tells the chain the thread's call context.
enum Stack {
    /// `Enter`/`Exit` events (the chain takes them).
    Events,
    /// The hook: the stack of packed frames (`analyses::ctx::pack_frame`), of which
    /// the outermost `unchanged` are as the chain last saw them.
    Kept { frames: Vec<u64>, unchanged: usize },
    /// The tier, with [`Hook::sync_stack`] before every event.
    Tier,
}

impl Stack {
    fn of(bridge: &Bridge) -> Stack {
        if bridge.chain.frame_events() {
            Stack::Events
        } else {
            Stack::Kept {
                frames: Vec::new(),
                unchanged: 0,
            }
        }
    }
}

impl Hook {
    /// The hook of the main thread: on if the run has a chain.
    pub fn main(bridge: Option<&Arc<Bridge>>) -> Hook {
        Hook(bridge.map(|b| On::new(b.clone(), b.chain.main_thread())))
    }

    /// Whether the tier delivers `Enter` and `Exit` of the calls of `func`: every
    /// call when the chain takes them all, otherwise those some pass asked for
    /// (`Bridge::frames_of`).
    #[inline]
    pub fn frame_events_of(&self, func: lang::ir::FuncId) -> bool {
        match &self.0 {
            None => false,
            Some(On {
                stack: Stack::Events,
                ..
            }) => true,
            Some(on) => on
                .bridge
                .frames_of
                .get(func.0 as usize)
                .copied()
                .unwrap_or(false),
        }
    }

    /// Whether a call of `func` on `receiver`, whose `Enter`/`Exit` the tier would
    /// deliver ([`Hook::frame_events_of`]), may deliver neither: `func` is elidable
    /// (`Bridge::elidable`) and `receiver` is the thread's nested-call word
    /// (`analyses::Chain::nested_call_word`).
    pub fn elides_frames(&self, func: lang::ir::FuncId, receiver: u64) -> bool {
        let Some(on) = &self.0 else {
            return false;
        };
        receiver != 0
            && on.nested != 0
            && on.bridge.elidable.get(func.0 as usize) == Some(&true)
            // SAFETY: `on.nested` is the address of a word in `on.cx` (see `On`),
            // which lives as long as `on`.
            && unsafe { &*(on.nested as *const AtomicU64) }
                .load(std::sync::atomic::Ordering::Relaxed)
                == receiver
    }

    /// The thread's lazy frames, while their gate is open (0).
    fn open_lazy_frames(&self) -> Option<&analyses::pass::LazyFrames> {
        let on = self.0.as_ref()?;
        if on.lazy == 0 {
            return None;
        }
        // SAFETY: `on.lazy_gate` is the address of a word in the chain, which
        // `on.bridge` keeps alive, and `on.lazy` that of the lazy frames in `on.cx`,
        // which lives as long as `on` (see `On`).
        let gate = unsafe { &*(on.lazy_gate as *const AtomicU64) };
        (gate.load(std::sync::atomic::Ordering::Relaxed) == 0)
            .then(|| unsafe { &*(on.lazy as *const analyses::pass::LazyFrames) })
    }

    /// Record a call of `func` on `receiver`, whose `Enter` the tier would deliver
    /// ([`Hook::frame_events_of`]) and did not elide, in the thread's lazy frames
    /// instead (`analyses::Chain::lazy_frames`): `func` may be recorded
    /// (`Bridge::lazy`), their gate is open and there is room. True: deliver no
    /// `Enter`, and end the call with [`Hook::pop_lazy_frame`].
    pub fn push_lazy_frame(&self, func: lang::ir::FuncId, receiver: u64) -> bool {
        let Some(on) = &self.0 else {
            return false;
        };
        on.bridge.lazy.get(func.0 as usize) == Some(&true)
            && self
                .open_lazy_frames()
                .is_some_and(|f| f.push(receiver, func.0))
    }

    /// End the running call, recorded by [`Hook::push_lazy_frame`], without an
    /// `Exit`: true if the gate is still open and the chain has not taken the call
    /// since, or has and lets the producer end it (`analyses::pass::LazyFrames::pop`);
    /// otherwise the tier delivers its `Exit`.
    pub fn pop_lazy_frame(&self) -> bool {
        self.open_lazy_frames().is_some_and(|f| f.pop())
    }

    /// Before another thread may run under a seeded schedule: let the chain end the
    /// recorded calls that ended without their `Exit` (`analyses::Chain::flush_lazy`),
    /// so that other threads see what those `Exit` events would have left.
    #[inline]
    pub fn flush_lazy(&mut self) {
        let Some(on) = &mut self.0 else {
            return;
        };
        if on.lazy == 0 {
            return;
        }
        // SAFETY: as in `open_lazy_frames`.
        let f = unsafe { &*(on.lazy as *const analyses::pass::LazyFrames) };
        if f.has_popped() {
            on.bridge.chain.flush_lazy(&mut on.cx);
        }
    }

    /// The addresses of the thread's lazy frames and of their gate
    /// (`analyses::Chain::lazy_frames`), if the chain has them.
    pub fn lazy_frames_ptrs(&self) -> Option<(*const u64, *const u64)> {
        let on = self.0.as_ref()?;
        (on.lazy != 0).then_some((on.lazy as *const u64, on.lazy_gate as *const u64))
    }

    /// The tier keeps the stack and hands it over with [`Hook::sync_stack`] (the
    /// JIT, from its shadow stack); no effect when the chain takes `Enter`/`Exit`.
    pub fn stack_kept_by_tier(&mut self) {
        if let Some(on) = &mut self.0
            && !matches!(on.stack, Stack::Events)
        {
            on.stack = Stack::Tier;
        }
    }

    /// The thread called `func` from `call_site` (the interpreter, when the hook keeps
    /// the stack).
    #[inline]
    pub fn push_frame(&mut self, func: lang::ir::FuncId, call_site: lang::ir::SiteId) {
        if let Some(On {
            stack: Stack::Kept { frames, unchanged },
            ..
        }) = &mut self.0
        {
            *unchanged = (*unchanged).min(frames.len());
            frames.push(pack_frame(MethodId(func.0), SiteId(call_site.0)));
        }
    }

    /// The innermost call returned (the interpreter, when the hook keeps the stack).
    #[inline]
    pub fn pop_frame(&mut self) {
        if let Some(On {
            stack: Stack::Kept { frames, .. },
            ..
        }) = &mut self.0
        {
            frames.pop();
        }
    }

    /// The thread's stack is `frames` (packed, outermost first), whose outermost
    /// `unchanged` frames are as at the previous call (the JIT, when it keeps the
    /// stack: [`Hook::stack_kept_by_tier`]).
    #[inline]
    pub fn sync_stack(&mut self, frames: &[u64], unchanged: usize) {
        if let Some(On {
            bridge,
            cx,
            stack: Stack::Tier,
            lazy,
            ..
        }) = &mut self.0
        {
            // Only a stack that moved below its top can stale the repeatable call: with
            // every frame kept, a deeper call it was armed for is reached only through
            // calls that lower `unchanged` again before the next hand-over (the
            // chain's own fast path, `Chain::sync_frames`, skips the same case).
            if unchanged < frames.len() && *lazy != 0 {
                // SAFETY: as in `open_lazy_frames`.
                let f = unsafe { &*(*lazy as *const analyses::pass::LazyFrames) };
                f.frames_moved(unchanged);
            }
            bridge.chain.sync_frames(cx, frames, unchanged);
        }
    }

    /// The chain's call context of the thread when the tier keeps the stack
    /// ([`Hook::stack_kept_by_tier`]): after [`Hook::sync_stack`], the context of
    /// the stack handed over.
    #[inline]
    pub fn tier_ctx(&self) -> Option<u32> {
        match &self.0 {
            Some(On {
                cx,
                stack: Stack::Tier,
                ..
            }) => Some(cx.state.ctx.0),
            _ => None,
        }
    }

    /// Whether a chain is active (events are delivered).
    #[inline]
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Deliver one event of this thread (nothing when off; plain reads and writes
    /// also nothing when the chain checks BigFoot's placed checks instead and no
    /// other pass wants them, [`Bridge::plain_accesses`]).
    #[inline]
    pub fn emit(&mut self, site: lang::ir::SiteId, kind: EventKind<'_>) {
        self.emit_from(site, kind, 0);
    }

    /// [`Hook::emit`] of a plain access to the passes after the chain's first
    /// `from`, inline filters whose tests held (`analyses::Chain::deliver_from`).
    pub fn emit_from(&mut self, site: lang::ir::SiteId, kind: EventKind<'_>, from: usize) {
        if let Some(on) = &mut self.0 {
            if !on.bridge.plain_accesses
                && matches!(kind, EventKind::Read { .. } | EventKind::Write { .. })
            {
                return;
            }
            on.deliver(site, kind, from);
        }
    }

    /// The thread is about to synchronize (`analyses::Chain::before_sync`): its next
    /// event, if any, is the synchronization's (a reentrant acquire has none, and
    /// leaves the thread's clock as it is); nothing when off or when no pass takes it.
    #[inline]
    pub fn before_sync(&mut self) {
        if let Some(on) = &mut self.0
            && on.before_sync
        {
            on.sync_kept();
            on.bridge.chain.before_sync(&mut on.cx);
        }
    }

    /// Deliver `Fork` of `child` at `site`, handing the objects `handed()` (called only
    /// when on), and return the child's hook.
    pub fn fork(
        &mut self,
        child: u32,
        site: lang::ir::SiteId,
        handed: impl FnOnce() -> Vec<ObjId>,
    ) -> Hook {
        Hook(self.0.as_mut().map(|on| {
            on.sync_kept();
            let cx = on
                .bridge
                .chain
                .fork(&mut on.cx, child, SiteId(site.0), 0, &handed());
            On::new(on.bridge.clone(), cx)
        }))
    }

    /// The address of the thread's packed epoch (`ThreadCx::epoch_word`), for the
    /// JIT's inline same-epoch check; null when off.
    pub fn epoch_word_ptr(&self) -> *const u64 {
        self.0.as_ref().map_or(std::ptr::null(), |on| {
            on.cx.epoch_word().as_ptr() as *const u64
        })
    }

    /// The address of the thread's word for the chain's inline guard
    /// (`analyses::Chain::inline_guard_word`); null when there is none.
    pub fn inline_guard_word_ptr(&self) -> *const u64 {
        self.0.as_ref().map_or(std::ptr::null(), |on| {
            on.bridge
                .chain
                .inline_guard_word(&on.cx)
                .map_or(std::ptr::null(), |w| w.as_ptr() as *const u64)
        })
    }

    /// The address of the thread's word for the first inline filter that keeps one
    /// (`analyses::Chain::inline_filter_word`: `capsule`'s), if any.
    pub fn inline_filter_word_ptr(&self) -> Option<*const u64> {
        let on = self.0.as_ref()?;
        let chain = &on.bridge.chain;
        (0..chain.inline_filters().len())
            .find_map(|i| chain.inline_filter_word(&on.cx, i))
            .map(|w| w.as_ptr() as *const u64)
    }

    /// The thread's nested-call word (`analyses::Chain::nested_call_word`), if the
    /// chain has one (see [`Hook::elides_frames`]).
    pub fn nested_call_word_ptr(&self) -> Option<*const u64> {
        let on = self.0.as_ref()?;
        let w = on.bridge.chain.nested_call_word(&on.cx)?;
        Some(w.as_ptr() as *const u64)
    }

    /// The thread's table of fine arrays for the inline exclusive rules on BigFoot's
    /// element checks (`analyses::Chain::inline_fine_arrays`), if the chain has one.
    pub fn inline_fine_arrays_ptr(&self) -> Option<*const u64> {
        let on = self.0.as_ref()?;
        let table = on.bridge.chain.inline_fine_arrays(&on.cx)?;
        Some(table.as_ptr() as *const u64)
    }

    /// Account for the accesses the JIT decided inline with the chain's same-epoch
    /// check (before the thread's `ThreadEnd`; see `analyses::Chain::add_inline_checks`).
    pub fn add_inline_checks(&mut self, checks: &[InlineChecks]) {
        if let Some(on) = &mut self.0 {
            on.bridge.chain.add_inline_checks(&mut on.cx, checks);
        }
    }

    /// Account for the accesses the JIT delivered past the chain's first `upto`
    /// passes, whose inline tests held (before the thread's `ThreadEnd`; see
    /// `analyses::Chain::add_inline_forwards`).
    pub fn add_inline_forwards(&mut self, upto: usize, accesses: &[InlineDrops]) {
        if let Some(on) = &mut self.0 {
            on.bridge
                .chain
                .add_inline_forwards(&mut on.cx, upto, accesses);
        }
    }

    /// Account for the accesses the JIT dropped inline with the test of pass
    /// `filter` (before the thread's `ThreadEnd`; see
    /// `analyses::Chain::add_inline_drops`).
    pub fn add_inline_drops(&mut self, filter: usize, drops: &[InlineDrops]) {
        if let Some(on) = &mut self.0 {
            on.bridge.chain.add_inline_drops(&mut on.cx, filter, drops);
        }
    }

    /// Account for `n` BigFoot checks the JIT dropped inline at pass `pass` (before
    /// the thread's `ThreadEnd`; see `analyses::Chain::add_inline_check_drops`).
    pub fn add_inline_check_drops(&mut self, pass: usize, n: u64) {
        if let Some(on) = &mut self.0 {
            on.bridge.chain.add_inline_check_drops(&mut on.cx, pass, n);
        }
    }

    /// A volatile load of word `word` of `obj` (location `loc`), atomic with its
    /// `VolatileRead` event.
    #[inline]
    pub fn load_volatile(
        &mut self,
        obj: u64,
        word: usize,
        loc: Loc,
        site: lang::ir::SiteId,
    ) -> u64 {
        match &mut self.0 {
            Some(on) => {
                on.sync_kept();
                let _g = on.bridge.volatile_lock(loc);
                let v = heap::load_volatile(obj, word);
                deliver(
                    &on.bridge,
                    &mut on.cx,
                    site,
                    EventKind::VolatileRead { loc },
                    0,
                );
                v
            }
            None => heap::load_volatile(obj, word),
        }
    }

    /// A volatile store of `v` (the reference `value`, if one) to word `word` of `obj`
    /// (location `loc`), atomic with its `VolatileWrite` event.
    #[inline]
    pub fn store_volatile(
        &mut self,
        obj: u64,
        word: usize,
        v: u64,
        loc: Loc,
        value: Option<ObjId>,
        site: lang::ir::SiteId,
    ) {
        match &mut self.0 {
            Some(on) => {
                on.sync_kept();
                let _g = on.bridge.volatile_lock(loc);
                heap::store_volatile(obj, word, v);
                let kind = EventKind::VolatileWrite { loc, value };
                deliver(&on.bridge, &mut on.cx, site, kind, 0);
            }
            None => heap::store_volatile(obj, word, v),
        }
    }
}

impl On {
    /// Hand the stack the hook keeps to the chain, if it changed.
    #[inline]
    fn sync_kept(&mut self) {
        if let Stack::Kept { frames, unchanged } = &mut self.stack
            && (*unchanged < frames.len() || self.cx.state.frame_depth() != frames.len())
        {
            self.bridge
                .chain
                .sync_frames(&mut self.cx, frames, *unchanged);
            *unchanged = frames.len();
        }
    }

    /// Deliver one event of the thread to the bridge's chain.
    #[inline]
    fn deliver(&mut self, site: lang::ir::SiteId, kind: EventKind<'_>, from: usize) {
        self.sync_kept();
        deliver(&self.bridge, &mut self.cx, site, kind, from);
    }
}

/// Deliver one event of `cx`'s thread to the bridge's chain (its call context
/// already current).
#[inline]
fn deliver(
    bridge: &Bridge,
    cx: &mut ThreadCx,
    site: lang::ir::SiteId,
    kind: EventKind<'_>,
    from: usize,
) {
    let ev = Event {
        tid: cx.tid(),
        site: SiteId(site.0),
        index: 0,
        kind,
    };
    bridge.chain.deliver_from(cx, &ev, from);
}
