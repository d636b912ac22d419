//! The per-thread hook: one guest thread's connection to the analysis chain, used by
//! both tiers (the interpreter, the JIT's runtime functions and the runtime
//! operations they share, `crate::rtops`).
//!
//! A hook is *off* without a chain (`--tools none`: no event is built past the
//! check). When on, it holds the run's [`Bridge`] and the thread's own [`ThreadCx`],
//! delivers the thread's events in program order, hands a forked child its hook, and
//! performs volatile accesses atomically with their events: under the bridge's
//! striped lock, so the chain sees volatile operations in the order they take effect.

use std::sync::Arc;

use analyses::pass::{InlineChecks, InlineDrops};
use analyses::thread::ThreadCx;
use analyses::{Event, EventKind, Loc, ObjId, SiteId};

use crate::bridge::Bridge;
use crate::heap;

pub struct Hook(Option<On>);

struct On {
    bridge: Arc<Bridge>,
    cx: ThreadCx,
}

impl Hook {
    /// The hook of the main thread: on if the run has a chain.
    pub fn main(bridge: Option<&Arc<Bridge>>) -> Hook {
        Hook(bridge.map(|b| On {
            bridge: b.clone(),
            cx: b.chain.main_thread(),
        }))
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
        if let Some(on) = &mut self.0 {
            if !on.bridge.plain_accesses
                && matches!(kind, EventKind::Read { .. } | EventKind::Write { .. })
            {
                return;
            }
            deliver(&on.bridge, &mut on.cx, site, kind);
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
            let cx = on
                .bridge
                .chain
                .fork(&mut on.cx, child, SiteId(site.0), 0, &handed());
            On {
                bridge: on.bridge.clone(),
                cx,
            }
        }))
    }

    /// The address of the thread's packed epoch (`ThreadCx::epoch_word`), for the
    /// JIT's inline same-epoch check; null when off.
    pub fn epoch_word_ptr(&self) -> *const u64 {
        self.0.as_ref().map_or(std::ptr::null(), |on| {
            on.cx.epoch_word().as_ptr() as *const u64
        })
    }

    /// Account for the accesses the JIT decided inline with the chain's same-epoch
    /// check (before the thread's `ThreadEnd`; see `analyses::Chain::add_inline_checks`).
    pub fn add_inline_checks(&mut self, checks: &[InlineChecks]) {
        if let Some(on) = &mut self.0 {
            on.bridge.chain.add_inline_checks(&mut on.cx, checks);
        }
    }

    /// Account for the accesses the JIT dropped inline (before the thread's
    /// `ThreadEnd`; see `analyses::Chain::add_inline_drops`).
    pub fn add_inline_drops(&mut self, drops: &[InlineDrops]) {
        if let Some(on) = &mut self.0 {
            on.bridge.chain.add_inline_drops(&mut on.cx, drops);
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
                let _g = on.bridge.volatile_lock(loc);
                let v = heap::load_volatile(obj, word);
                deliver(
                    &on.bridge,
                    &mut on.cx,
                    site,
                    EventKind::VolatileRead { loc },
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
                let _g = on.bridge.volatile_lock(loc);
                heap::store_volatile(obj, word, v);
                let kind = EventKind::VolatileWrite { loc, value };
                deliver(&on.bridge, &mut on.cx, site, kind);
            }
            None => heap::store_volatile(obj, word, v),
        }
    }
}

/// Deliver one event of `cx`'s thread to the bridge's chain.
#[inline]
fn deliver(bridge: &Bridge, cx: &mut ThreadCx, site: lang::ir::SiteId, kind: EventKind<'_>) {
    let ev = Event {
        tid: cx.tid(),
        site: SiteId(site.0),
        index: 0,
        kind,
    };
    bridge.chain.deliver(cx, &ev);
}
