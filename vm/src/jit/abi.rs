//! The contract between generated code and the runtime: the per-thread context
//! [`JitThread`] (its leading words are read and written by generated code at the
//! offsets below) and the CapJava shadow stack.
//!
//! Calling convention of every compiled CapJava function (host C ABI):
//! `fn(ctx: *mut JitThread, params…) -> ret`, ints/booleans/references as i64,
//! doubles as f64, no return value for `void`. A function that fails (a runtime error
//! was recorded, or the program is stopping) sets `ctx.failed` and returns a dummy
//! value; every caller checks `failed` after the call and returns at once.
//!
//! Shadow stack: at a call site, the caller stores `(callee << 32) | call_site` at
//! `frames[depth]` and increments `depth` (one store and one add per call). Runtime
//! functions thus build the exact CapJava stack of the interpreter
//! (`interp::stack_of`) at any moment — needed eagerly, because a thread that blocks
//! records its stack for the deadlock report.

use std::collections::BTreeMap;
use std::mem::offset_of;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use analyses::pass::{InlineChecks, InlineDrops};
use analyses::{Loc, ObjId};
use lang::ir::{FuncId, SiteId};

use crate::Tid;
use crate::error::StackFrame;
use crate::heap::Arena;
use crate::hook::Hook;
use crate::runtime::Runtime;

use super::JitCode;

/// One guest thread's state as generated code and the runtime functions see it.
///
/// `max_depth`, `max_steps`, `frames`, `abort`, `tid`, `inline_drops`, `epoch`,
/// `guard`, `fine`, `capsule_word` and `nested_word` are set by [`JitThread::new`] and
/// never written again: generated code loads them as pure values
/// (`translate::thread_field_mem`, readonly and movable), once per function. A field
/// that changes while the thread runs must not be added to that list.
#[repr(C)]
pub struct JitThread {
    /// Non-zero once this thread must unwind (error recorded or program stopping).
    pub failed: u64,
    /// Number of CapJava frames (entries of `frames`).
    pub depth: u64,
    /// The interpreter's call-depth limit (`Limits::max_call_depth`).
    pub max_depth: u64,
    /// Executed basic blocks (counted only when `--max-steps` is set).
    pub steps: u64,
    pub max_steps: u64,
    /// The shadow stack: `max_depth + 1` words.
    pub frames: *mut u64,
    /// Without `JitOptions::frame_events`: every frame below this depth is as the
    /// chain last saw it ([`JitThread::sync_stack`]); a call lowers it to its depth.
    pub frames_low: u64,
    /// The run's stop flag, polled at loop back-edges.
    pub abort: *const AtomicBool,
    pub tid: u64,
    /// Accesses dropped inline by the chain's first pass (`JitOptions::inline_filter`):
    /// two words per entry of `JitCode::inline_sites`, the count and the last object
    /// accessed (`inline_buf`).
    pub inline_drops: *mut u64,
    /// The thread's packed FastTrack epoch, kept current by the chain
    /// (`analyses::thread::ThreadCx::epoch_word`), for the inline same-epoch check
    /// (`JitOptions::inline_check`); null without a chain.
    pub epoch: *const u64,
    /// The thread's word for the chain's inline guard
    /// (`analyses::Chain::inline_guard_word`, `InlineDetector::guard`); null without one.
    pub guard: *const u64,
    /// The thread's table of fine arrays (`analyses::Chain::inline_fine_arrays`,
    /// `analyses::pass::BIGFOOT_FINE_SLOTS` words), for the inline exclusive rules on
    /// BigFoot's element checks; without one, [`NO_FINE_ARRAYS`] (never null).
    pub fine: *const u64,
    /// The result of the thread's latest call of a runtime function through its
    /// stub that keeps every register (`Rt::keeps_registers`), which can return
    /// none itself.
    pub answer: u64,
    /// Calls of instance methods of capsule classes running on this thread, kept by
    /// generated code when the inline filter depends on it
    /// (`HeaderFilter::capsule_calls`).
    pub capsule_calls: u64,
    /// The thread's word for `capsule`'s inline test (`analyses::Chain::inline_filter_word`,
    /// bits `analyses::pass::CAPSULE_WORD_DROP` and `CAPSULE_WORD_FORWARD`), read by
    /// `HeaderFilter::capsule_calls` tests; without one, [`NO_CAPSULE_WORD`] (never
    /// null: every such access is delivered).
    pub capsule_word: *const u64,
    /// The thread's nested-call word (`analyses::Chain::nested_call_word`): a call of
    /// an elidable function (`JitOptions::elidable`) on this receiver skips its
    /// prologue and epilogue; without one, [`NO_NESTED_WORD`] (never null, 0: no
    /// receiver).
    pub nested_word: *const u64,
    /// The thread's lazy frames (`analyses::pass::LazyFrames`,
    /// `analyses::Chain::lazy_frames`) and their gate: a call of a function with
    /// `JitOptions::lazy` records its frame there instead of calling the prologue
    /// while the gate is 0 and there is room; without them, [`NO_LAZY_FRAMES`] and
    /// [`CLOSED_GATE`] (never null, never written: the gate stays closed).
    pub lazy_frames: *const u64,
    pub lazy_gate: *const u64,
    /// The chain's call context of the stack's outermost `ctx_depth` frames, shifted
    /// left by 32 (a packed site's high half), as of the last
    /// [`JitThread::sync_stack`]; it is the context of the current stack while
    /// `depth == ctx_depth == frames_low` (no call from below `depth` since). The
    /// inline exclusive rules store it with the access's site: SingleTrack's
    /// sole-accessor rule as `site | ctx_word`, FastTrack's as its compact form
    /// `site | ctx_sid` (`analyses::pass::fasttrack_sid`; `ctx_sid` is the context
    /// shifted left by `analyses::pass::FASTTRACK_SID_CTX_SHIFT`). `ctx_depth` is
    /// `u64::MAX` when the chain does not take the context from the shadow stack, or
    /// when the context has no compact form (`fasttrack_sid` gives none: a program
    /// with 2^15 contexts or more): the inline rules then leave the access to the
    /// passes.
    pub ctx_word: u64,
    pub ctx_depth: u64,
    pub ctx_sid: u64,
    /// Set by generated code right before an access hook's call when the chain's
    /// first `past_filters` passes (its inline filters) are known to forward the
    /// access (their header tests held); the runtime function takes it and delivers
    /// the access past them (`Hook::emit_from`). 0 otherwise.
    pub past_filters: u64,
    // ---- Rust-only fields (never touched by generated code) ----
    pub rt: Arc<Runtime>,
    pub code: Arc<JitCode>,
    pub arena: Arena,
    pub hook: Hook,
    pub seeded: bool,
    frames_buf: Vec<u64>,
    inline_buf: Vec<u64>,
    /// The read checks of `INLINE_MEMO` that [`JitThread::take_inline_checks`]
    /// counted as same-epoch reads since [`JitThread::take_memo_reads`].
    memo_reads: u64,
}

pub const OFF_FAILED: i32 = offset_of!(JitThread, failed) as i32;
pub const OFF_DEPTH: i32 = offset_of!(JitThread, depth) as i32;
pub const OFF_MAX_DEPTH: i32 = offset_of!(JitThread, max_depth) as i32;
pub const OFF_STEPS: i32 = offset_of!(JitThread, steps) as i32;
pub const OFF_MAX_STEPS: i32 = offset_of!(JitThread, max_steps) as i32;
pub const OFF_FRAMES: i32 = offset_of!(JitThread, frames) as i32;
pub const OFF_FRAMES_LOW: i32 = offset_of!(JitThread, frames_low) as i32;
pub const OFF_ABORT: i32 = offset_of!(JitThread, abort) as i32;
pub const OFF_TID: i32 = offset_of!(JitThread, tid) as i32;
pub const OFF_INLINE_DROPS: i32 = offset_of!(JitThread, inline_drops) as i32;
pub const OFF_EPOCH: i32 = offset_of!(JitThread, epoch) as i32;
pub const OFF_GUARD: i32 = offset_of!(JitThread, guard) as i32;
pub const OFF_FINE: i32 = offset_of!(JitThread, fine) as i32;
pub const OFF_ANSWER: i32 = offset_of!(JitThread, answer) as i32;

/// The table of fine arrays of a thread whose chain has none (`JitThread::fine`):
/// no array address is 0, so generated code finds no array in it.
/// Its covered ranges (after the table) name no array either. Atomic words, as a
/// pass's table (`capvm_jit_covered` reads them so).
static NO_FINE_ARRAYS: [AtomicU64; analyses::pass::BIGFOOT_TABLE_WORDS] =
    [const { AtomicU64::new(0) }; analyses::pass::BIGFOOT_TABLE_WORDS];
pub const OFF_CAPSULE_CALLS: i32 = offset_of!(JitThread, capsule_calls) as i32;
pub const OFF_CAPSULE_WORD: i32 = offset_of!(JitThread, capsule_word) as i32;

/// The filter word of a thread whose chain has none (`JitThread::capsule_word`): no
/// bit set, so generated code delivers the accesses its test would decide.
static NO_CAPSULE_WORD: AtomicU64 = AtomicU64::new(0);
pub const OFF_NESTED_WORD: i32 = offset_of!(JitThread, nested_word) as i32;

/// The nested-call word of a thread whose chain has none (`JitThread::nested_word`).
static NO_NESTED_WORD: AtomicU64 = AtomicU64::new(0);
pub const OFF_LAZY_FRAMES: i32 = offset_of!(JitThread, lazy_frames) as i32;
pub const OFF_LAZY_GATE: i32 = offset_of!(JitThread, lazy_gate) as i32;

/// The lazy frames of a thread whose chain has none (`JitThread::lazy_frames`),
/// behind a gate that is never open.
static NO_LAZY_FRAMES: analyses::pass::LazyFrames = analyses::pass::LazyFrames::new();
static CLOSED_GATE: AtomicU64 = AtomicU64::new(1);
pub const OFF_CTX_WORD: i32 = offset_of!(JitThread, ctx_word) as i32;
pub const OFF_CTX_DEPTH: i32 = offset_of!(JitThread, ctx_depth) as i32;
pub const OFF_CTX_SID: i32 = offset_of!(JitThread, ctx_sid) as i32;
pub const OFF_PAST_FILTERS: i32 = offset_of!(JitThread, past_filters) as i32;

/// Words per entry of [`JitThread::inline_drops`] and the offset of each part: the
/// accesses the first header filter dropped, the last object accessed inline, the
/// accesses the inline same-epoch check decided (a read site counts read-same-epoch
/// in `INLINE_FAST` and read-shared-same-epoch in `INLINE_FAST_SHARED`; a write site
/// write-same-epoch in `INLINE_FAST`), and the accesses the second header filter
/// dropped ([`inline_count`]).
pub const INLINE_WORDS: usize = 9;
pub const INLINE_COUNT: usize = 0;
pub const INLINE_OBJ: usize = 1;
pub const INLINE_FAST: usize = 2;
pub const INLINE_FAST_SHARED: usize = 3;
/// The accesses decided by the inline exclusive rules (read exclusive at a read
/// site, write exclusive at a write site).
pub const INLINE_EXCL: usize = 5;
/// The accesses delivered past the chain's inline filters after all their tests held
/// and the detector's inline check did not decide them (`JitThread::past_filters`).
pub const INLINE_PAST: usize = 6;
/// BigFoot's element checks dropped because the thread's footprint covers them
/// (`analyses::pass::InlineCheck::FieldChecks`, covered ranges).
pub const INLINE_COVERED: usize = 7;
/// BigFoot's element read checks decided by the thread's read memo of the array
/// (`analyses::pass::InlineCheck::FieldChecks`): same-epoch reads, as the cell
/// would have said, counted apart only to show that the memo decides.
pub const INLINE_MEMO: usize = 8;

/// The part of an entry counting the accesses header filter `filter` dropped
/// (`JitOptions::inline_filters`; at most `analyses::Chain::MAX_INLINE_FILTERS`).
pub const fn inline_count(filter: usize) -> usize {
    match filter {
        0 => INLINE_COUNT,
        _ => INLINE_FAST_SHARED + filter,
    }
}

const _: () = assert!(inline_count(analyses::Chain::MAX_INLINE_FILTERS - 1) < INLINE_EXCL);

/// A shadow-stack entry: the chain's packed frame (`analyses::ctx::pack_frame`).
#[inline]
pub fn pack_frame(func: FuncId, call_site: SiteId) -> u64 {
    analyses::ctx::pack_frame(analyses::MethodId(func.0), analyses::SiteId(call_site.0))
}

impl JitThread {
    pub fn new(rt: Arc<Runtime>, code: Arc<JitCode>, tid: Tid, hook: Hook) -> JitThread {
        let max_depth = rt.limits.max_call_depth as u64;
        let mut frames_buf = vec![0u64; rt.limits.max_call_depth + 1];
        // At least one entry, so the pointer is never dangling.
        let mut inline_buf = vec![0u64; INLINE_WORDS * code.inline_sites.len().max(1)];
        let mut hook = hook;
        hook.stack_kept_by_tier();
        JitThread {
            failed: 0,
            depth: 0,
            max_depth,
            steps: 0,
            max_steps: rt.limits.max_steps,
            frames: frames_buf.as_mut_ptr(),
            frames_low: 0,
            abort: &code.abort as *const AtomicBool,
            tid: tid as u64,
            inline_drops: inline_buf.as_mut_ptr(),
            epoch: hook.epoch_word_ptr(),
            guard: hook.inline_guard_word_ptr(),
            fine: hook
                .inline_fine_arrays_ptr()
                .unwrap_or(NO_FINE_ARRAYS.as_ptr() as *const u64),
            answer: 0,
            capsule_calls: 0,
            capsule_word: hook
                .inline_filter_word_ptr()
                .unwrap_or(NO_CAPSULE_WORD.as_ptr() as *const u64),
            nested_word: hook
                .nested_call_word_ptr()
                .unwrap_or(NO_NESTED_WORD.as_ptr() as *const u64),
            lazy_frames: hook.lazy_frames_ptrs().map_or(
                &NO_LAZY_FRAMES as *const analyses::pass::LazyFrames as *const u64,
                |(f, _)| f,
            ),
            lazy_gate: hook
                .lazy_frames_ptrs()
                .map_or(CLOSED_GATE.as_ptr() as *const u64, |(_, g)| g),
            ctx_word: 0,
            ctx_depth: u64::MAX,
            ctx_sid: 0,
            past_filters: 0,
            seeded: rt.seeded,
            rt,
            code,
            arena: Arena::default(),
            hook,
            frames_buf,
            inline_buf,
            memo_reads: 0,
        }
    }

    /// The accesses this thread's code dropped inline so far, per header filter and
    /// site (sorted), with the last object each site accessed; the counters are reset.
    pub fn take_inline_drops(&mut self) -> Vec<Vec<InlineDrops>> {
        (0..analyses::Chain::MAX_INLINE_FILTERS)
            .map(|filter| self.take_inline_counts(inline_count(filter), false))
            .collect()
    }

    /// BigFoot's checks this thread's code dropped inline so far, per pass in front
    /// of the detector (`InlineDetector::check_masks`); the counters are reset.
    pub fn take_inline_check_drops(&mut self) -> Vec<u64> {
        (0..analyses::Chain::MAX_INLINE_FILTERS)
            .map(|pass| {
                self.take_inline_counts(inline_count(pass), true)
                    .iter()
                    .map(|d| d.reads + d.writes)
                    .sum()
            })
            .collect()
    }

    /// The accesses this thread's code delivered past the chain's inline filters
    /// after all their tests held (`INLINE_PAST`), per site (sorted), with the last
    /// object each site accessed; the counters are reset.
    pub fn take_inline_past(&mut self) -> Vec<InlineDrops> {
        self.take_inline_counts(INLINE_PAST, false)
    }

    /// Part `part` of the inline counters of every plain access site (`checks`
    /// false) or every BigFoot check site (true), per site (sorted), as reads and
    /// writes with the last object each site accessed; the counters are reset.
    fn take_inline_counts(&mut self, part: usize, checks: bool) -> Vec<InlineDrops> {
        let mut by_site: BTreeMap<u32, InlineDrops> = BTreeMap::new();
        for (i, s) in self.code.inline_sites.iter().enumerate() {
            if s.check != checks {
                continue;
            }
            let w = &mut self.inline_buf[i * INLINE_WORDS..(i + 1) * INLINE_WORDS];
            let n = std::mem::take(&mut w[part]);
            if n == 0 {
                continue;
            }
            let d = by_site.entry(s.site.0).or_insert(InlineDrops {
                site: analyses::SiteId(s.site.0),
                rep: Loc {
                    obj: ObjId(w[INLINE_OBJ]),
                    slot: s.slot,
                },
                reads: 0,
                writes: 0,
                capsule: s.capsule_own,
            });
            if s.is_write {
                d.writes += n;
            } else {
                d.reads += n;
            }
        }
        by_site.into_values().collect()
    }

    /// The writes of read-write pairs whose exclusive rule the read applied so far
    /// (part of [`JitThread::take_inline_checks`]'s counts, which reset them).
    pub fn paired_writes(&self) -> u64 {
        let entries = self.code.inline_sites.iter().enumerate();
        entries
            .filter(|(_, s)| s.paired)
            .map(|(i, _)| self.inline_buf[i * INLINE_WORDS + INLINE_EXCL])
            .sum()
    }

    /// The accesses this thread's code decided with the inline same-epoch check so
    /// far, per site (sorted), with the last object each site accessed; the counters
    /// are reset.
    pub fn take_inline_checks(&mut self) -> Vec<InlineChecks> {
        let mut by_site: BTreeMap<(u32, bool), InlineChecks> = BTreeMap::new();
        for (i, s) in self.code.inline_sites.iter().enumerate() {
            let w = &mut self.inline_buf[i * INLINE_WORDS..(i + 1) * INLINE_WORDS];
            let fast = std::mem::take(&mut w[INLINE_FAST]);
            let shared = std::mem::take(&mut w[INLINE_FAST_SHARED]);
            let excl = std::mem::take(&mut w[INLINE_EXCL]);
            let covered = std::mem::take(&mut w[INLINE_COVERED]);
            let memo = std::mem::take(&mut w[INLINE_MEMO]);
            self.memo_reads += memo;
            let fast = fast + memo;
            if fast + shared + excl + covered == 0 {
                continue;
            }
            let c = by_site
                .entry((s.site.0, s.elements))
                .or_insert(InlineChecks {
                    site: analyses::SiteId(s.site.0),
                    rep: Loc {
                        obj: ObjId(w[INLINE_OBJ]),
                        slot: s.slot,
                    },
                    elements: s.elements,
                    reads_same: 0,
                    reads_shared_same: 0,
                    writes_same: 0,
                    reads_excl: 0,
                    writes_excl: 0,
                    reads_covered: 0,
                    writes_covered: 0,
                });
            if s.is_write {
                c.writes_same += fast;
                c.writes_excl += excl;
                c.writes_covered += covered;
            } else {
                c.reads_same += fast;
                c.reads_shared_same += shared;
                c.reads_excl += excl;
                c.reads_covered += covered;
            }
        }
        by_site.into_values().collect()
    }

    /// The element read checks the read memos decided, of those that
    /// [`JitThread::take_inline_checks`] took so far; reset.
    pub fn take_memo_reads(&mut self) -> u64 {
        std::mem::take(&mut self.memo_reads)
    }

    /// Push the entry frame of the thread (`site` = fork site or `main`'s declaration).
    pub fn push_entry(&mut self, func: FuncId, site: SiteId) {
        // SAFETY: `frames` points to `frames_buf`, which has at least one word.
        unsafe { *self.frames = pack_frame(func, site) };
        self.depth = 1;
        self.frames_low = 0;
    }

    /// Hand the shadow stack to the chain for its call context when the chain takes
    /// no `Enter`/`Exit` (`Hook::sync_stack`): run before every runtime function, so
    /// before every event. Only the frames at or above `frames_low` are interned
    /// again.
    #[inline]
    pub fn sync_stack(&mut self) {
        let depth = (self.depth as usize).min(self.frames_buf.len());
        self.hook
            .sync_stack(&self.frames_buf[..depth], self.frames_low as usize);
        self.frames_low = depth as u64;
        if let Some(ctx) = self.hook.tier_ctx() {
            self.ctx_word = u64::from(ctx) << 32;
            match analyses::pass::fasttrack_sid(0, ctx) {
                Some(sid) => {
                    self.ctx_sid = u64::from(sid);
                    self.ctx_depth = depth as u64;
                }
                None => {
                    self.ctx_sid = 0;
                    self.ctx_depth = u64::MAX;
                }
            }
        }
    }

    /// The CapJava stack for an error at `site` in the innermost frame, innermost
    /// first (the interpreter's `stack_of`).
    pub fn stack(&self, site: SiteId) -> Vec<StackFrame> {
        self.stack_view().stack(site)
    }

    /// A copy of the shadow stack's pointer and depth (usable while the thread's
    /// arena is borrowed).
    pub fn stack_view(&self) -> StackView {
        StackView {
            frames: self.frames,
            depth: (self.depth as usize).min(self.frames_buf.len()),
        }
    }

    /// The innermost frame's function and call site.
    pub fn top(&self) -> (FuncId, SiteId) {
        let v = self.stack_view();
        let w = v.frame(v.depth.saturating_sub(1));
        (FuncId((w >> 32) as u32), SiteId(w as u32))
    }
}

/// The shadow stack of one thread at one moment.
#[derive(Clone, Copy)]
pub struct StackView {
    frames: *const u64,
    depth: usize,
}

impl StackView {
    fn frame(&self, i: usize) -> u64 {
        // SAFETY: `i < depth <= max_depth + 1`, the buffer's length; the buffer lives
        // as long as its thread's context, which outlives every use of the view.
        unsafe { *self.frames.add(i) }
    }

    /// Innermost first: each frame's function with the site executing in it.
    pub fn stack(&self, site: SiteId) -> Vec<StackFrame> {
        let mut out = Vec::with_capacity(self.depth);
        let mut s = site;
        for i in (0..self.depth).rev() {
            let w = self.frame(i);
            out.push(StackFrame {
                func: FuncId((w >> 32) as u32),
                site: s,
            });
            s = SiteId(w as u32);
        }
        out
    }
}
