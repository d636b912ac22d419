//! Chains of passes and the event dispatch loop (the registry of passes turns
//! `--tools a:b:c` into a chain).
//!
//! # What the producer (VM or trace reader) must guarantee
//! 1. Each thread delivers its own events, in program order, with its own
//!    [`ThreadCx`] (created by [`Chain::main_thread`] or [`Chain::fork`]).
//! 2. A synchronization event is delivered *while it takes effect*: `Acquire` after
//!    the monitor is obtained, `Release` before it is given up, `Fork` before the
//!    child runs, `Join` after the child's `ThreadEnd` was delivered, `BarrierExit`
//!    only after every `BarrierEnter` of the episode, and volatile accesses atomically
//!    with their event. Hence every pass sees the events in an order that is a valid
//!    trace (a linearization of happens-before), even when threads run in parallel.
//! 3. [`Chain::deliver`] returns only after every pass has processed the event.
//!
//! A producer may also call [`Chain::before_sync`] right before a thread takes a
//! monitor (also one it holds) or arrives at a barrier, outside its own locks, so that
//! work a pass deferred to the thread's next synchronization (`bigfoot`'s footprint)
//! runs before the thread waits (the VM does; the trace reader need not: the passes
//! do that work at the event anyway).
//!
//! # What the chain does per event
//! Accesses go through the passes left to right until one drops them. Every other
//! event goes to every pass. Then the shared services are updated: the
//! happens-before clocks ([`crate::clocks`]), the held-lock set and the call
//! context — so a pass always sees the thread's state from *before* the event.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::clocks::Clocks;
use crate::ctx::CtxId;
use crate::event::{Event, EventKind, ObjId, SiteId, Tid};
use crate::pass::{Flow, Pass};
use crate::report::Reported;
use crate::shared::Shared;
use crate::stats::PassStats;
use crate::thread::{ThreadCx, ThreadState};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainError(pub String);

impl std::fmt::Display for ChainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub struct Chain {
    passes: Vec<Box<dyn Pass>>,
    stats: Vec<PassStats>,
    /// Some pass wants `Enter`/`Exit` events ([`Pass::wants_frames`]).
    frame_events: bool,
    /// The passes that take [`Chain::before_sync`] ([`Pass::wants_before_sync`]).
    sync_passes: Vec<usize>,
    pub shared: Arc<Shared>,
}

impl Chain {
    /// A chain of `passes` (left to right) over `shared`, the services they were built
    /// with. The registry (`passes::chain`) builds one from `--tools` names.
    pub fn from_passes(passes: Vec<Box<dyn Pass>>, shared: Arc<Shared>) -> Chain {
        let stats = passes.iter().map(|_| PassStats::default()).collect();
        let frame_events = passes.iter().any(|p| p.wants_frames());
        let sync_passes = (0..passes.len())
            .filter(|&i| passes[i].wants_before_sync())
            .collect();
        Chain {
            passes,
            stats,
            frame_events,
            sync_passes,
            shared,
        }
    }

    /// Whether some pass takes `Enter`/`Exit` events. When none does, the chain only
    /// follows them for the call context (they reach no pass and no counter), and a
    /// producer need not deliver them at all: it may keep the call stack itself and
    /// hand it over with [`Chain::sync_frames`] instead, which gives every event the
    /// same [`ThreadState::ctx`] the `Enter`/`Exit` events would have given an access.
    pub fn frame_events(&self) -> bool {
        self.frame_events
    }

    /// Whether the `Enter`/`Exit` of calls of `method` must be delivered: every call
    /// when a pass takes them all ([`Chain::frame_events`]), otherwise the calls some
    /// pass asks for ([`Pass::wants_frames_of`]). Those are delivered with the call
    /// context the producer's stack gives ([`Chain::sync_frames`]; an `Enter` after
    /// the callee's frame was pushed, an `Exit` before it is popped).
    pub fn wants_frames_of(&self, method: crate::event::MethodId) -> bool {
        self.frame_events || self.passes.iter().any(|p| p.wants_frames_of(method))
    }

    /// Set `cx`'s call context to the stack `frames`, outermost first, each frame
    /// packed by [`crate::ctx::pack_frame`] (the method and the site it was called
    /// from), when the chain takes no `Enter`/`Exit` ([`Chain::frame_events`]).
    /// `unchanged`: how many outermost frames are the same as at the previous call
    /// (a producer that does not track this passes 0; the stack is then interned
    /// again from the bottom).
    ///
    /// Frames above `unchanged` that equal those last handed over at the same depth
    /// (a call that returned and was made again from the same site) keep their
    /// contexts without interning them again.
    #[inline]
    pub fn sync_frames(&self, cx: &mut ThreadCx, frames: &[u64], unchanged: usize) {
        // The common case (the JIT syncs before every event): nothing moved since the
        // previous call, so the context is already the stack's.
        let t = &cx.state;
        if t.stack_synced && unchanged >= frames.len() && t.frame_depth == frames.len() {
            return;
        }
        self.sync_frames_moved(cx, frames, unchanged);
    }

    fn sync_frames_moved(&self, cx: &mut ThreadCx, frames: &[u64], unchanged: usize) {
        let t = &mut cx.state;
        t.stack_synced = true;
        // `frame_words`/`frame_ctxs` may hold more than the last stack: the frames
        // of calls that returned since, kept so that the same call made again (a
        // method called in a loop) finds its context without interning. Entry `i`
        // is valid while entries `0..i` match the stack; the first mismatch cuts
        // the rest off.
        let mut keep = unchanged.min(frames.len()).min(t.frame_depth);
        while keep < frames.len()
            && keep < t.frame_words.len()
            && t.frame_words[keep] == frames[keep]
        {
            keep += 1;
        }
        if keep < frames.len() {
            t.frame_ctxs.truncate(keep);
            t.frame_words.truncate(keep);
            let mut ctx = t.frame_ctxs.last().copied().unwrap_or(CtxId::ROOT);
            for &w in &frames[keep..] {
                let (method, site) = crate::ctx::unpack_frame(w);
                ctx = self
                    .shared
                    .ctxs
                    .child_cached(&mut t.ctx_cache, ctx, method, site);
                t.frame_ctxs.push(ctx);
                t.frame_words.push(w);
            }
        }
        t.frame_depth = frames.len();
        t.ctx = match frames.len() {
            0 => CtxId::ROOT,
            n => t.frame_ctxs[n - 1],
        };
        t.method = frames.last().map(|&w| crate::ctx::unpack_frame(w).0);
    }

    pub fn is_empty(&self) -> bool {
        self.passes.is_empty()
    }

    pub fn pass_names(&self) -> Vec<&'static str> {
        self.passes.iter().map(|p| p.name()).collect()
    }

    fn new_cx(&self, tid: Tid, vc: crate::vc::VectorClock) -> ThreadCx {
        let cx = ThreadCx {
            state: ThreadState::new(tid, vc),
            locals: self.passes.iter().map(|p| p.thread_local()).collect(),
            counts: vec![Default::default(); self.passes.len()],
            epoch_word: Box::default(),
        };
        cx.refresh_epoch();
        cx
    }

    /// The context of the main thread (tid 0). The producer then delivers its
    /// `ThreadStart`.
    pub fn main_thread(&self) -> ThreadCx {
        self.new_cx(0, Clocks::initial(0))
    }

    /// The context of a thread that starts without a `Fork` (a trace thread that is
    /// never forked: RAPID starts such threads implicitly, unordered with the others).
    /// The producer then delivers its `ThreadStart`.
    pub fn root_thread(&self, tid: Tid) -> ThreadCx {
        self.new_cx(tid, Clocks::initial(tid))
    }

    /// Deliver `Fork` for `parent` and return the child's context, which the producer
    /// hands to the child thread (the child then delivers its own `ThreadStart`).
    pub fn fork(
        &self,
        parent: &mut ThreadCx,
        child: Tid,
        site: SiteId,
        index: u64,
        handed: &[ObjId],
    ) -> ThreadCx {
        let ev = Event {
            tid: parent.tid(),
            site,
            index,
            kind: EventKind::Fork { child, handed },
        };
        self.dispatch(parent, &ev);
        let vc = self.shared.clocks.fork(&mut parent.state, child);
        parent.refresh_epoch();
        self.new_cx(child, vc)
    }

    /// Deliver one event of `cx`'s thread. `Fork` must go through [`Chain::fork`].
    #[inline]
    pub fn deliver(&self, cx: &mut ThreadCx, ev: &Event<'_>) {
        self.deliver_from(cx, ev, 0);
    }

    /// [`Chain::deliver`] of a plain access that the chain's first `from` passes, all
    /// inline filters ([`Chain::inline_filters`]) that forward what their test lets
    /// through ([`Pass::forwards_inline`]), are known to forward: the producer
    /// performed their tests and they held. The access goes to the passes after
    /// them; the producer accounts the skipped passes' share with
    /// [`Chain::add_inline_forwards`].
    pub fn deliver_from(&self, cx: &mut ThreadCx, ev: &Event<'_>, from: usize) {
        debug_assert_eq!(cx.tid(), ev.tid);
        debug_assert!(
            from == 0
                || (matches!(ev.kind, EventKind::Read { .. } | EventKind::Write { .. })
                    && from <= self.inline_filters().len()),
            "only plain accesses skip the inline filters"
        );
        debug_assert!(
            !matches!(ev.kind, EventKind::Fork { .. }),
            "use Chain::fork"
        );
        let ord = match ev.kind {
            EventKind::Read { .. } => 0,
            EventKind::Write { .. } => 1,
            EventKind::Check { .. } => 17,
            // Without a pass that takes every call: from a producer that keeps the
            // stack, these are the calls some pass asked for
            // ([`Chain::wants_frames_of`]): they go to the passes and leave the
            // context as the stack set it. From one that does not (a trace), they
            // move the context, and reach the passes only if some pass asked.
            EventKind::Enter { method, .. } | EventKind::Exit { method, .. }
                if !self.frame_events =>
            {
                if cx.state.stack_synced {
                    self.dispatch(cx, ev);
                } else {
                    if self.wants_frames_of(method) {
                        self.dispatch(cx, ev);
                    }
                    self.update_services(cx, ev);
                }
                return;
            }
            _ => {
                self.dispatch(cx, ev);
                self.update_services(cx, ev);
                cx.refresh_epoch();
                return;
            }
        };
        // A plain access (the hot path): no shared service changes.
        let ThreadCx {
            state,
            locals,
            counts,
            ..
        } = cx;
        for (i, p) in self.passes.iter().enumerate().skip(from) {
            counts[i].events_in[ord] += 1;
            match p.access(state, locals[i].as_mut(), ev) {
                Flow::Forward => {}
                Flow::Drop => {
                    counts[i].dropped += 1;
                    return;
                }
                Flow::Local => {
                    counts[i].dropped += 1;
                    for (q, local) in self.passes.iter().zip(locals.iter_mut()).skip(i + 1) {
                        if q.checks_local() {
                            q.local_access(state, local.as_mut(), ev);
                        }
                    }
                    return;
                }
            }
        }
    }

    /// True if a pass after the first checks thread-local accesses
    /// ([`Pass::checks_local`]): the producer's inline test must then call out for
    /// accesses to fields of capsule objects (see [`crate::pass::InlineFilter`]).
    pub fn checks_local(&self) -> bool {
        self.passes.iter().skip(1).any(|p| p.checks_local())
    }

    /// Every event but plain accesses goes to every pass.
    fn dispatch(&self, cx: &mut ThreadCx, ev: &Event<'_>) {
        let ThreadCx {
            state,
            locals,
            counts,
            ..
        } = cx;
        for (i, p) in self.passes.iter().enumerate() {
            counts[i].saw(&ev.kind);
            p.event(state, locals[i].as_mut(), ev);
        }
        if let EventKind::ThreadEnd = ev.kind {
            for (total, local) in self.stats.iter().zip(counts.iter_mut()) {
                total.merge(local);
            }
        }
    }

    fn update_services(&self, cx: &mut ThreadCx, ev: &Event<'_>) {
        // No pass reads the services of an empty chain (`--tools none`).
        if self.passes.is_empty() {
            return;
        }
        let t = &mut cx.state;
        match ev.kind {
            EventKind::Read { .. } | EventKind::Write { .. } | EventKind::Check { .. } => {}
            EventKind::Acquire { lock } => {
                self.shared.clocks.apply(t, ev);
                t.held.push(lock);
            }
            EventKind::Release { lock } => {
                self.shared.clocks.apply(t, ev);
                if let Some(i) = t.held.iter().rposition(|l| *l == lock) {
                    t.held.remove(i);
                }
            }
            EventKind::Enter { method, .. } => {
                t.ctx_stack.push((t.ctx, t.method));
                t.ctx = self
                    .shared
                    .ctxs
                    .child_cached(&mut t.ctx_cache, t.ctx, method, ev.site);
                t.method = Some(method);
            }
            EventKind::Exit { .. } => {
                (t.ctx, t.method) = t.ctx_stack.pop().unwrap_or_default();
            }
            _ => self.shared.clocks.apply(t, ev),
        }
    }

    /// `cx`'s thread is about to synchronize; the synchronization's event, if any, is
    /// its next one ([`Pass::before_sync`]). Nothing is delivered and no counter moves.
    pub fn before_sync(&self, cx: &mut ThreadCx) {
        let ThreadCx { state, locals, .. } = cx;
        for &i in &self.sync_passes {
            self.passes[i].before_sync(state, locals[i].as_mut());
        }
    }

    /// Whether some pass does anything in [`Chain::before_sync`]
    /// ([`Pass::wants_before_sync`]).
    pub fn wants_before_sync(&self) -> bool {
        !self.sync_passes.is_empty()
    }

    /// End of the run: lets passes report deferred results.
    pub fn finish(&self) {
        for p in &self.passes {
            p.finish();
        }
    }

    /// The passes' failed outputs ([`Pass::output_error`]), after [`Chain::finish`].
    pub fn output_errors(&self) -> Vec<String> {
        self.passes
            .iter()
            .filter_map(|p| p.output_error())
            .collect()
    }

    pub fn warnings(&self) -> Vec<Reported> {
        self.shared.reporter.snapshot()
    }

    /// `{"passes": [{"name":…, "events_in":…, "dropped":…, …}]}`. Each thread's counters
    /// are added when it delivers `ThreadEnd`, so the figures are complete once every
    /// thread has ended.
    pub fn stats_json(&self) -> serde_json::Value {
        let passes: Vec<serde_json::Value> = self
            .passes
            .iter()
            .zip(&self.stats)
            .map(|(p, s)| {
                let mut v = s.to_json();
                v["name"] = p.name().into();
                if let Some(extra) = p.stats() {
                    v["details"] = extra;
                }
                v
            })
            .collect();
        serde_json::json!({ "passes": passes })
    }

    /// Human-readable statistics for `--stats`.
    pub fn stats_text(&self) -> String {
        Self::stats_text_of(&self.stats_json())
    }

    /// [`Chain::stats_text`] of statistics already taken with [`Chain::stats_json`]
    /// (a pass's statistics may walk its whole shadow state: take them once).
    pub fn stats_text_of(stats: &serde_json::Value) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let passes = stats["passes"].as_array().map_or(&[][..], |v| v);
        for p in passes {
            let n = |k: &str| p[k].as_u64().unwrap_or(0);
            let _ = writeln!(
                s,
                "pass {:<12} events in {:>12}  accesses in {:>12}  dropped {:>12}",
                p["name"].as_str().unwrap_or(""),
                n("events_in"),
                n("accesses_in"),
                n("dropped")
            );
            if let Some(obj) = p["details"].as_object() {
                for (k, v) in obj {
                    let _ = writeln!(s, "  {k:<24} {v}");
                }
            }
        }
        s
    }

    /// The inline tests the producer may apply, in order ([`Pass::inline_filter`]):
    /// the first pass's, then the next pass's while every pass before it has one and
    /// forwards what its test lets through ([`Pass::forwards_inline`]). At most
    /// [`Chain::MAX_INLINE_FILTERS`].
    pub fn inline_filters(&self) -> Vec<crate::pass::InlineFilter> {
        let mut v = Vec::new();
        for p in &self.passes {
            let Some(f) = p.inline_filter() else { break };
            v.push(f);
            if !p.forwards_inline() || v.len() == Self::MAX_INLINE_FILTERS {
                break;
            }
        }
        v
    }

    /// `cx`'s thread's word for the inline test of pass `filter`
    /// ([`Chain::inline_filters`], [`Pass::inline_filter_word`]), at an address stable
    /// for the context's lifetime; `None` if its test needs none.
    pub fn inline_filter_word<'a>(&self, cx: &'a ThreadCx, filter: usize) -> Option<&'a AtomicU64> {
        self.passes
            .get(filter)?
            .inline_filter_word(cx.locals.get(filter)?.as_ref())
    }

    /// `cx`'s thread's nested-call word ([`Pass::nested_call_word`]), when the chain
    /// delivers only the `Enter`/`Exit` some pass asked for ([`Chain::frame_events`]
    /// false) and exactly one pass has such a word: no other pass then takes these
    /// events. `None`: every asked-for call delivers both.
    pub fn nested_call_word<'a>(&self, cx: &'a ThreadCx) -> Option<&'a AtomicU64> {
        if self.frame_events {
            return None;
        }
        let mut words = self
            .passes
            .iter()
            .zip(&cx.locals)
            .filter_map(|(p, l)| p.nested_call_word(l.as_ref()));
        let w = words.next()?;
        words.next().is_none().then_some(w)
    }

    /// `cx`'s thread's lazy frames ([`Pass::lazy_frames`]) and the run-wide gate
    /// they are used behind ([`Pass::inline_filter_gate`]), when the chain delivers
    /// only the `Enter`/`Exit` some pass asked for ([`Chain::frame_events`] false)
    /// and exactly one pass has them. A producer may record there a call of a method
    /// for which [`Chain::lazy_frames_of`] holds.
    pub fn lazy_frames<'a>(
        &'a self,
        cx: &'a ThreadCx,
    ) -> Option<(&'a crate::pass::LazyFrames, &'a AtomicU64)> {
        if self.frame_events {
            return None;
        }
        let mut all = self
            .passes
            .iter()
            .zip(&cx.locals)
            .filter_map(|(p, l)| Some((p.lazy_frames(l.as_ref())?, p.inline_filter_gate()?)));
        let f = all.next()?;
        all.next().is_none().then_some(f)
    }

    /// Let the pass with `cx`'s lazy frames end the recorded calls its producer ended
    /// without their `Exit` ([`Pass::flush_lazy`]), with no event.
    pub fn flush_lazy(&self, cx: &mut ThreadCx) {
        let ThreadCx { state, locals, .. } = cx;
        for (p, l) in self.passes.iter().zip(locals.iter_mut()) {
            p.flush_lazy(state, l.as_mut());
        }
    }

    /// Whether calls of `method` (an instance method, not synchronized,
    /// `deterministic` or `atomic`, with no reference argument besides the receiver
    /// and no reference result) may be recorded in the thread's lazy frames
    /// ([`Chain::lazy_frames`]) instead of delivering their `Enter`/`Exit`: the one
    /// pass that asks for these events ([`Pass::wants_frames_of`]) says so
    /// ([`Pass::lazy_frames_of`]), and no other pass takes them.
    pub fn lazy_frames_of(&self, method: crate::event::MethodId) -> bool {
        if self.frame_events {
            return false;
        }
        let mut asking = self.passes.iter().filter(|p| p.wants_frames_of(method));
        match (asking.next(), asking.next()) {
            (Some(p), None) => p.lazy_frames_of(method),
            _ => false,
        }
    }

    /// The run-wide gate of the inline test of pass `filter`
    /// ([`Pass::inline_filter_gate`]), at an address stable for the chain's lifetime.
    pub fn inline_filter_gate(&self, filter: usize) -> Option<&AtomicU64> {
        self.passes.get(filter)?.inline_filter_gate()
    }

    /// How many passes may have inline tests in front of the chain.
    pub const MAX_INLINE_FILTERS: usize = 2;

    /// The first pass's inline test ([`Chain::inline_filters`]).
    pub fn inline_filter(&self) -> Option<crate::pass::InlineFilter> {
        self.inline_filters().first().copied()
    }

    /// Account for the accesses of `cx`'s thread that the producer dropped inline with
    /// the test of pass `filter` ([`Chain::inline_filters`]): the passes before it
    /// saw and forwarded them ([`Pass::inline_forwarded`]), it saw and dropped them
    /// (its counters, and its own statistics through [`Pass::inline_dropped`]). Must
    /// be called before the thread's `ThreadEnd`, which merges the thread's counters.
    pub fn add_inline_drops(
        &self,
        cx: &mut ThreadCx,
        filter: usize,
        drops: &[crate::pass::InlineDrops],
    ) {
        let Some(p) = self.passes.get(filter) else {
            return;
        };
        if drops.is_empty() {
            return;
        }
        let (reads, writes) = drops
            .iter()
            .fold((0, 0), |(r, w), d| (r + d.reads, w + d.writes));
        self.add_inline_forwards(cx, filter, drops);
        cx.counts[filter].saw_dropped(reads, writes);
        p.inline_dropped(&cx.state, cx.locals[filter].as_mut(), drops);
        // Capsule accesses are `capsule`'s own drops when it made them (it is the
        // pass that checks local accesses); any other filter dropped them as
        // `Flow::Local`, which the passes after it that check those still see.
        let own: Vec<_> = drops.iter().filter(|d| d.capsule).copied().collect();
        if own.is_empty() || p.checks_local() {
            return;
        }
        for (q, local) in self
            .passes
            .iter()
            .zip(cx.locals.iter_mut())
            .skip(filter + 1)
        {
            if q.checks_local() {
                q.inline_local_checked(&cx.state, local.as_mut(), &own);
            }
        }
    }

    /// Account for accesses of `cx`'s thread that the chain's first `upto` passes
    /// saw and forwarded without being called: their tests held inline
    /// ([`Pass::forwards_inline`]) before a later pass's test dropped the access
    /// ([`Chain::add_inline_drops`]) or before the access was delivered past them
    /// ([`Chain::deliver_from`]). Each of them counts the accesses in and records
    /// them through [`Pass::inline_forwarded`]. Must be called before the thread's
    /// `ThreadEnd`.
    pub fn add_inline_forwards(
        &self,
        cx: &mut ThreadCx,
        upto: usize,
        accesses: &[crate::pass::InlineDrops],
    ) {
        let upto = upto.min(self.passes.len());
        if upto == 0 || accesses.is_empty() {
            return;
        }
        let (reads, writes) = accesses
            .iter()
            .fold((0, 0), |(r, w), d| (r + d.reads, w + d.writes));
        let forwarded: Vec<crate::pass::InlineChecks> = accesses
            .iter()
            .map(|d| crate::pass::InlineChecks {
                site: d.site,
                rep: d.rep,
                elements: false,
                reads_same: d.reads,
                reads_shared_same: 0,
                writes_same: d.writes,
                reads_excl: 0,
                writes_excl: 0,
                reads_covered: 0,
                writes_covered: 0,
            })
            .collect();
        for (i, q) in self.passes[..upto].iter().enumerate() {
            cx.counts[i].events_in[0] += reads;
            cx.counts[i].events_in[1] += writes;
            q.inline_forwarded(&cx.state, cx.locals[i].as_mut(), &forwarded);
        }
    }

    /// The same-epoch test the producer may perform inline ([`Pass::inline_check`])
    /// and whether it sits behind the first pass's inline filter: the chain's last
    /// pass must offer it, and it is usable only if it is the only pass, or the
    /// passes before it are the chain's inline filters ([`Chain::inline_filters`])
    /// and each forwards what its test lets through ([`Pass::forwards_inline`]).
    /// Behind filters the producer may decide inline only accesses every filter's
    /// test lets through, not reference writes.
    ///
    /// With a guard ([`Chain::inline_guard`]) the pass before the detector is the
    /// guard's, and the passes before it are what the rules above apply to.
    ///
    /// BigFoot's checks ([`crate::pass::InlineCheck::FieldChecks`]) are no plain
    /// accesses: behind passes, the test is usable when each says what it does with
    /// a check ([`Chain::inline_check_flows`]).
    pub fn inline_check(&self) -> Option<(crate::pass::InlineCheck, bool)> {
        let (det, mut before) = self.passes.split_last()?;
        let check = det.inline_check()?;
        if let crate::pass::InlineCheck::FieldChecks { .. } = check {
            // Checks meet no plain access's filter: the passes before say what they
            // do with a check ([`Chain::inline_check_flows`]).
            return self
                .inline_check_flows()
                .map(|_| (check, !before.is_empty()));
        }
        if self.inline_guard().is_some() {
            before = &before[..before.len() - 1];
        }
        if before.is_empty() {
            return Some((check, false));
        }
        let usable = self.inline_filters().len() == before.len()
            && before.iter().all(|f| f.forwards_inline());
        usable.then_some((check, true))
    }

    /// With BigFoot's checks decided inline ([`crate::pass::InlineCheck::FieldChecks`]):
    /// what each pass before the detector does with a check, in chain order
    /// ([`Pass::inline_check_flow`]), when every one of them says and there are at
    /// most [`Chain::MAX_INLINE_FILTERS`]. The producer tests a check against them in
    /// order and counts one that a pass drops with [`Chain::add_inline_check_drops`].
    pub fn inline_check_flows(&self) -> Option<Vec<crate::pass::InlineCheckFlow>> {
        let (_, before) = self.passes.split_last()?;
        if before.len() > Self::MAX_INLINE_FILTERS {
            return None;
        }
        before.iter().map(|p| p.inline_check_flow()).collect()
    }

    /// True if the producer may end a plain access without a call once it passed
    /// every inline filter's test ([`Chain::inline_filters`]): the filters are all
    /// the passes but the last, each forwards what its test lets through
    /// ([`Pass::forwards_inline`]), and the last ignores plain accesses
    /// ([`Pass::ignores_accesses`], `bigfoot`). Such accesses are accounted with
    /// [`Chain::add_inline_forwards`] over every pass.
    pub fn accesses_end_at_filters(&self) -> bool {
        let Some((det, before)) = self.passes.split_last() else {
            return false;
        };
        det.ignores_accesses()
            && !before.is_empty()
            && self.inline_filters().len() == before.len()
            && before.iter().all(|p| p.forwards_inline())
    }

    /// Account for `n` BigFoot checks of `cx`'s thread that the producer dropped
    /// inline at pass `pass` ([`Chain::inline_check_flows`]): the passes up to it saw
    /// them, it dropped them; a check has no other effect on a filter. Must be called
    /// before the thread's `ThreadEnd`.
    pub fn add_inline_check_drops(&self, cx: &mut ThreadCx, pass: usize, n: u64) {
        if n == 0 || pass >= self.passes.len() {
            return;
        }
        for c in &mut cx.counts[..=pass] {
            c.events_in[17] += n;
        }
        cx.counts[pass].dropped += n;
    }

    /// The test of the pass right before the detector that the producer must also
    /// find true to decide an access inline ([`Pass::inline_guard`]): offered only
    /// in front of FastTrack's same-epoch check on plain accesses.
    pub fn inline_guard(&self) -> Option<crate::pass::InlineGuard> {
        let [.., guard, det] = &self.passes[..] else {
            return None;
        };
        if !matches!(
            det.inline_check(),
            Some(crate::pass::InlineCheck::FastTrack { .. })
        ) {
            return None;
        }
        guard.inline_guard()
    }

    /// `cx`'s thread's word for [`Chain::inline_guard`], at an address stable for the
    /// context's lifetime.
    pub fn inline_guard_word<'a>(&self, cx: &'a ThreadCx) -> Option<&'a AtomicU64> {
        self.inline_guard()?;
        let i = self.passes.len() - 2;
        self.passes[i].inline_guard_word(cx.locals[i].as_ref())
    }

    /// `cx`'s thread's table of fine arrays, when the detector's inline test is
    /// [`crate::pass::InlineCheck::FieldChecks`] (BigFoot's).
    pub fn inline_fine_arrays<'a>(&self, cx: &'a ThreadCx) -> Option<&'a [AtomicU64]> {
        let i = self.passes.len().checked_sub(1)?;
        self.passes[i].inline_fine_arrays(cx.locals[i].as_ref())
    }

    /// Account for the accesses of `cx`'s thread that the producer decided inline
    /// with [`Chain::inline_check`]: every pass's counters (events in, none dropped),
    /// the filters' statistics ([`Pass::inline_forwarded`]) and the detector's
    /// ([`Pass::inline_checked`]). Must be called before the thread's `ThreadEnd`.
    pub fn add_inline_checks(&self, cx: &mut ThreadCx, checks: &[crate::pass::InlineChecks]) {
        if checks.is_empty() || self.passes.is_empty() {
            return;
        }
        let (reads, writes) = checks
            .iter()
            .fold((0, 0), |(r, w), c| (r + c.reads(), w + c.writes()));
        let last = self.passes.len() - 1;
        let field_checks = matches!(
            self.passes[last].inline_check(),
            Some(crate::pass::InlineCheck::FieldChecks { .. })
        );
        for (i, p) in self.passes.iter().enumerate() {
            if field_checks {
                cx.counts[i].events_in[17] += reads + writes;
            } else {
                cx.counts[i].events_in[0] += reads;
                cx.counts[i].events_in[1] += writes;
            }
            if i == last {
                p.inline_checked(&cx.state, cx.locals[i].as_mut(), checks);
            } else if !field_checks {
                // A filter forwards a check with no effect (`Pass::inline_check_flow`).
                p.inline_forwarded(&cx.state, cx.locals[i].as_mut(), checks);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::pack_frame;
    use crate::env::NullEnv;
    use crate::event::{MethodId, SiteId};
    use crate::shared::ChainOptions;

    /// Whatever stacks a producer hands over, and however little it says is
    /// unchanged, the context is the stack's as interned from the bottom: frames kept
    /// from calls that returned are reused only below the first mismatch.
    #[test]
    fn sync_frames_gives_each_stack_its_own_context() {
        let shared = Shared::new(Arc::new(NullEnv), ChainOptions::default());
        let chain = Chain::from_passes(Vec::new(), shared.clone());
        let mut cx = chain.main_thread();
        let fresh = |stack: &[u64]| {
            stack.iter().fold(CtxId::ROOT, |c, &w| {
                let (m, s) = crate::ctx::unpack_frame(w);
                shared.ctxs.child(c, m, s)
            })
        };
        // Three methods called from two sites each: returns and calls again from
        // another site at the same depth, as in a loop calling alternately.
        let frames: Vec<u64> = (0..6)
            .map(|i| pack_frame(MethodId(i / 2), SiteId(i % 2 + 1)))
            .collect();
        let mut stack: Vec<u64> = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for step in 0..5000 {
            crate::xorshift(&mut seed);
            let before = stack.clone();
            match seed % 4 {
                0 | 1 if stack.len() < 6 => stack.push(frames[(seed >> 8) as usize % 6]),
                2 => {
                    stack.pop();
                }
                _ => {
                    stack.pop();
                    stack.push(frames[(seed >> 8) as usize % 6]);
                }
            }
            let common = before
                .iter()
                .zip(&stack)
                .take_while(|(a, b)| a == b)
                .count();
            // A producer may say less than it knows (0: nothing).
            let unchanged = if seed >> 20 & 1 == 0 {
                common
            } else {
                common / 2
            };
            chain.sync_frames(&mut cx, &stack, unchanged);
            assert_eq!(cx.state.ctx, fresh(&stack), "step {step}: {stack:?}");
            assert_eq!(cx.state.frame_depth(), stack.len());
            assert_eq!(
                cx.state.method,
                stack.last().map(|&w| crate::ctx::unpack_frame(w).0)
            );
        }
    }
}
