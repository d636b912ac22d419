//! The pass interface (RoadRunner's `Tool`, Flanagan & Freund PASTE'10).
//!
//! A pass sees each event in trace order. It handles only what it cares about; the
//! defaults forward everything. Only plain data accesses can be dropped (filters):
//! [`Pass::access`] returns a [`Flow`], every other event goes to [`Pass::event`],
//! which cannot drop it. Synchronization events therefore always reach every pass.
//!
//! Concurrency: a pass is shared by all guest threads (`&self`), which call it in
//! parallel under `--sched os`. Per-thread state lives in the value returned by
//! [`Pass::thread_local`] and is handed back, exclusively, on every call from that
//! thread. Shared state must be synchronized by the pass itself; the producer
//! guarantees that each thread's events arrive in program order and that a
//! synchronization event is fully processed by the whole chain before any event it
//! happens-before (see `crate::chain`).

use std::any::Any;
use std::sync::atomic::AtomicU64;

use crate::event::{Event, Loc, SiteId};
use crate::thread::ThreadState;

/// What a pass does with an access.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Flow {
    Forward,
    Drop,
    /// Dropped as a thread-local access: hidden from the rest of the chain like
    /// [`Flow::Drop`], except that the later passes that check the discipline of
    /// thread-local accesses ([`Pass::checks_local`], `capsule`) still receive it
    /// through [`Pass::local_access`]. Counted as dropped by the pass returning it.
    Local,
}

/// An access test a pass asks the producer to perform inline, in place of calling
/// [`Pass::access`], when the pass is the first of its chain, or every pass before it
/// has an inline test and forwards what that test lets through
/// ([`Pass::forwards_inline`]; an earlier pass could otherwise miss accesses): the
/// chain's inline filters ([`crate::Chain::inline_filters`]), which the producer
/// applies in order, each to what the ones before let through (a reference write
/// only to the first). The producer drops the access itself when the test says
/// so, and reports the dropped accesses later with [`Pass::inline_dropped`] (through
/// [`crate::Chain::add_inline_drops`]), so every statistic is as if the pass had seen
/// them. A producer may always call [`Pass::access`] instead: the test must be exactly
/// a case in which `access` returns [`Flow::Drop`] with no effect other than what
/// `inline_dropped` reproduces.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum InlineFilter {
    /// Drop a `Read`/`Write` of an object or array (never of the statics block) for
    /// which [`crate::env::HeapView::is_shared`] is false, except a `Write` of a
    /// non-null reference into a target whose
    /// [`crate::env::HeapView::is_capsule_shared`] is true (`escape`, Rhodes Fig. 4.4).
    ///
    /// The producer must also call out for an access to a field of an object of a
    /// capsule class ([`crate::env::Env::is_capsule_class`]) when
    /// [`crate::Chain::checks_local`] is true: `escape` answers [`Flow::Local`] for it
    /// (with no later checker the chain treats that as [`Flow::Drop`]).
    NotShared,
    /// Drop a `Read`/`Write` of an object or array (never of the statics block) for
    /// which [`crate::env::HeapView::is_capsule_shared`] is false, when the object is
    /// not of a capsule class ([`crate::env::Env::is_capsule_class`]) and the thread
    /// is running no call of an instance method of a capsule class, except a `Write`
    /// of a non-null reference into a target whose [`crate::env::HeapView::is_shared`]
    /// is true (`capsule`, Rhodes Fig. 5.6: a capsule-protected access with no
    /// executor).
    ///
    /// Inside such a call, while the pass's gate ([`Pass::inline_filter_gate`]) is
    /// 0, the thread's word ([`Pass::inline_filter_word`]) decides instead: the same
    /// access is dropped when it has [`CAPSULE_WORD_DROP`] (the executor's call has
    /// made its synchronization check, or there is no executor), and an access the
    /// header test lets through (the object is capsule-shared) counts as forwarded
    /// only when it has [`CAPSULE_WORD_FORWARD`] (no executor: the owner is the
    /// thread). Otherwise the producer delivers the access.
    ///
    /// Behind the same gate, when this pass is the chain's first or follows
    /// [`InlineFilter::NotShared`], the word's [`CAPSULE_WORD_OWN`] also decides a
    /// plain access, other than a reference write, at a site the compiler proved to
    /// be `this.f` inside `f`'s own capsule class
    /// ([`crate::env::Env::capsule_access_proven`]): with the bit it is a capsule
    /// access with nothing left to check. This pass drops it, reported with
    /// [`InlineDrops::capsule`] set; behind `escape`, an unescaped object's access is
    /// instead `escape`'s drop as [`Flow::Local`], reported as `escape`'s drop with
    /// the flag set ([`Pass::inline_local_checked`]).
    CapsuleProtected,
}

/// Bit of a thread's filter word for [`InlineFilter::CapsuleProtected`]: a
/// capsule-protected access may be dropped inline (no executor, or the executor's
/// call has been checked).
pub const CAPSULE_WORD_DROP: u64 = 1;
/// Bit of a thread's filter word for [`InlineFilter::CapsuleProtected`]: the thread
/// has no executor, so an access to a capsule-shared object is forwarded with the
/// thread as its owner.
pub const CAPSULE_WORD_FORWARD: u64 = 2;
/// Bit of a thread's filter word for [`InlineFilter::CapsuleProtected`]: the running
/// method's call is a call on a live capsule that has made its synchronization check,
/// so a proven `this.f` in it is a capsule access with nothing left to check.
pub const CAPSULE_WORD_OWN: u64 = 4;

/// How many calls a thread's [`LazyFrames`] hold at most.
pub const LAZY_FRAMES: usize = 8;

/// A thread's *lazy frames* ([`Pass::lazy_frames`]): calls whose `Enter` a producer
/// recorded here instead of delivering it, with the pass's two thread words next to
/// them, at fixed offsets for generated code ([`LAZY_WORD`] and the constants after
/// it). Only the thread writes it: its producer pushes and pops calls (with the
/// pass's gate, [`Pass::inline_filter_gate`], at 0), and the pass turns the recorded
/// calls into frames of its own at the start of every event it receives
/// ([`LazyFrames::take`]).
///
/// `frames[..len]` are the recorded calls that are still running, outermost first:
/// `frames[..taken]` the ones the pass has taken (it has frames for them), the rest
/// not yet. A push ([`LazyFrames::push`]) saves both words in the call's entry and
/// sets them to 0 (nothing inline: the producer delivers every access a word would
/// decide). A pop ([`LazyFrames::pop`]) of an entry whose `poppable` is set ends the
/// call without an `Exit`: it restores the words saved in the entry, and counts the
/// entry in `popped` if the pass had taken it, so that the pass ends the call's frame
/// at its next event, as the `Exit` would have ([`LazyFrames::take_popped`]). An
/// entry the pass has not taken is always poppable, and its saved words are those
/// before the push: nothing reached the pass in between, so its frames and words are
/// those before the call. For an entry it has taken, the pass keeps the saved words
/// at what its `Exit` would leave ([`LazyFrames::set_exit`]) and clears `poppable`
/// when the `Exit` must reach it; then the producer delivers the `Exit`, and the pass
/// drops the entry ([`LazyFrames::drop_taken`]).
#[repr(C)]
pub struct LazyFrames {
    /// The pass's word for its inline filter ([`Pass::inline_filter_word`]).
    pub word: AtomicU64,
    /// The pass's nested-call word ([`Pass::nested_call_word`]).
    pub nested: AtomicU64,
    /// Calls recorded and still running, in `frames[..len]`.
    pub len: AtomicU64,
    /// How many of them, from the outermost, the pass has taken.
    pub taken: AtomicU64,
    /// Taken calls the producer has ended since the pass last looked.
    pub popped: AtomicU64,
    pub frames: [LazyFrame; LAZY_FRAMES],
    /// The *repeatable call* ([`LazyFrames::arm_repeat`]): a recorded call whose
    /// check made it the holder of its capsule, which a producer may repeat
    /// without telling the pass. 0 when there is none.
    pub repeat: RepeatCall,
}

/// A call that a producer may repeat without its events ([`LazyFrames::arm_repeat`]):
/// the capsule, the call's packed frame (`crate::ctx::pack_frame`: its method and
/// call site) and the stack's depth with that frame on top.
///
/// The pass arms it when its check of a recorded call on `receiver` made the call
/// the capsule's holder (the thread owns the capsule's epoch, so the check held
/// without looking at another thread), at the call's first state access, with the
/// call at the top of the stack (so its `Exit` site and context are known). A later
/// call of the same method from the same site on the same capsule, with the same
/// frames below it, whose first state access is at the same site (the producer
/// repeats only methods whose first state access has one site, and that make no
/// other event: see `vm::jit`), would then leave the pass exactly as this one did:
/// the same frames pushed and popped, the same entry and exit marks and exit epoch
/// in the capsule's record (the thread has published nothing since: that would
/// have disarmed it), the same words. So a producer may run it with the words the
/// check would set (`CAPSULE_WORD_DROP | CAPSULE_WORD_OWN`, nested-call word
/// `receiver`), as a recorded call the pass never takes.
///
/// Disarmed (receiver 0) by the pass at every event that changes what such a call
/// would do: any other check or exit on the same capsule by this thread, and every
/// publication of the thread's clock (which gives up the capsule's epoch); and by
/// the producer when it hands over a stack whose frames below `depth - 1` changed
/// ([`LazyFrames::frames_moved`]). A demotion closes the gate instead.
#[repr(C)]
#[derive(Default)]
pub struct RepeatCall {
    pub receiver: AtomicU64,
    pub frame: AtomicU64,
    pub depth: AtomicU64,
}

/// One recorded call: its receiver and method, the thread's two words to restore
/// when it ends, and whether the producer may end it without its `Exit`.
#[repr(C)]
pub struct LazyFrame {
    pub receiver: AtomicU64,
    pub method: AtomicU64,
    pub word: AtomicU64,
    pub nested: AtomicU64,
    pub poppable: AtomicU64,
}

/// Byte offsets in [`LazyFrames`] and [`LazyFrame`], for generated code.
pub const LAZY_WORD: i32 = std::mem::offset_of!(LazyFrames, word) as i32;
pub const LAZY_NESTED: i32 = std::mem::offset_of!(LazyFrames, nested) as i32;
pub const LAZY_LEN: i32 = std::mem::offset_of!(LazyFrames, len) as i32;
pub const LAZY_TAKEN: i32 = std::mem::offset_of!(LazyFrames, taken) as i32;
pub const LAZY_POPPED: i32 = std::mem::offset_of!(LazyFrames, popped) as i32;
pub const LAZY_FRAME0: i32 = std::mem::offset_of!(LazyFrames, frames) as i32;
pub const LAZY_FRAME_BYTES: i32 = std::mem::size_of::<LazyFrame>() as i32;
pub const LAZY_RECEIVER: i32 = std::mem::offset_of!(LazyFrame, receiver) as i32;
pub const LAZY_METHOD: i32 = std::mem::offset_of!(LazyFrame, method) as i32;
pub const LAZY_SAVED_WORD: i32 = std::mem::offset_of!(LazyFrame, word) as i32;
pub const LAZY_SAVED_NESTED: i32 = std::mem::offset_of!(LazyFrame, nested) as i32;
pub const LAZY_POPPABLE: i32 = std::mem::offset_of!(LazyFrame, poppable) as i32;
pub const LAZY_REPEAT_RECEIVER: i32 =
    (std::mem::offset_of!(LazyFrames, repeat) + std::mem::offset_of!(RepeatCall, receiver)) as i32;
pub const LAZY_REPEAT_FRAME: i32 =
    (std::mem::offset_of!(LazyFrames, repeat) + std::mem::offset_of!(RepeatCall, frame)) as i32;
pub const LAZY_REPEAT_DEPTH: i32 =
    (std::mem::offset_of!(LazyFrames, repeat) + std::mem::offset_of!(RepeatCall, depth)) as i32;

impl LazyFrames {
    /// No calls; both words 0.
    pub const fn new() -> LazyFrames {
        LazyFrames {
            word: AtomicU64::new(0),
            nested: AtomicU64::new(0),
            len: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            popped: AtomicU64::new(0),
            frames: [const {
                LazyFrame {
                    receiver: AtomicU64::new(0),
                    method: AtomicU64::new(0),
                    word: AtomicU64::new(0),
                    nested: AtomicU64::new(0),
                    poppable: AtomicU64::new(0),
                }
            }; LAZY_FRAMES],
            repeat: RepeatCall {
                receiver: AtomicU64::new(0),
                frame: AtomicU64::new(0),
                depth: AtomicU64::new(0),
            },
        }
    }

    /// Arm the repeatable call ([`RepeatCall`]): on capsule `receiver`, frame
    /// `frame` on top of a stack of `depth` frames.
    pub fn arm_repeat(&self, receiver: u64, frame: u64, depth: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        self.repeat.frame.store(frame, Relaxed);
        self.repeat.depth.store(depth as u64, Relaxed);
        self.repeat.receiver.store(receiver, Relaxed);
    }

    /// Disarm the repeatable call if it is on capsule `receiver`.
    pub fn disarm_repeat_of(&self, receiver: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.repeat.receiver.load(Relaxed) == receiver {
            self.repeat.receiver.store(0, Relaxed);
        }
    }

    /// Disarm the repeatable call.
    pub fn disarm_repeat(&self) {
        self.repeat
            .receiver
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }

    /// The producer hands over a stack whose outermost `unchanged` frames are as at
    /// the previous hand-over: the repeatable call needs the frames below its own
    /// unchanged since it was armed.
    #[inline]
    pub fn frames_moved(&self, unchanged: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.repeat.receiver.load(Relaxed) != 0
            && (unchanged as u64).saturating_add(1) < self.repeat.depth.load(Relaxed)
        {
            self.repeat.receiver.store(0, Relaxed);
        }
    }

    /// Record a call of `method` on `receiver` (false: no room, deliver its `Enter`).
    /// The caller has found the pass's gate at 0.
    pub fn push(&self, receiver: u64, method: u32) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let n = self.len.load(Relaxed) as usize;
        let Some(f) = self.frames.get(n) else {
            return false;
        };
        f.receiver.store(receiver, Relaxed);
        f.method.store(method as u64, Relaxed);
        f.word.store(self.word.load(Relaxed), Relaxed);
        f.nested.store(self.nested.load(Relaxed), Relaxed);
        f.poppable.store(1, Relaxed);
        self.word.store(0, Relaxed);
        self.nested.store(0, Relaxed);
        self.len.store(n as u64 + 1, Relaxed);
        true
    }

    /// End the innermost recorded call, which is the running one if any is left,
    /// without its `Exit` (false: none is left, or the pass needs the `Exit`; deliver
    /// it). The caller has found the pass's gate at 0 (otherwise the pass must
    /// recompute its words: deliver).
    pub fn pop(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let n = self.len.load(Relaxed);
        if n == 0 {
            return false;
        }
        let f = &self.frames[n as usize - 1];
        if f.poppable.load(Relaxed) == 0 {
            return false;
        }
        self.word.store(f.word.load(Relaxed), Relaxed);
        self.nested.store(f.nested.load(Relaxed), Relaxed);
        self.len.store(n - 1, Relaxed);
        if n <= self.taken.load(Relaxed) {
            self.taken.store(n - 1, Relaxed);
            self.popped.store(self.popped.load(Relaxed) + 1, Relaxed);
        }
        true
    }

    /// The calls recorded since the pass last took them, outermost first, as
    /// `(entry, receiver, method)`; they are taken now.
    pub fn take(&self) -> impl Iterator<Item = (usize, u64, u32)> + '_ {
        use std::sync::atomic::Ordering::Relaxed;
        let n = self.len.load(Relaxed) as usize;
        // Only this thread writes `taken`: a load and a store, not a swap (which
        // compiles to a locked `xchg`, a full barrier on every capsule call's
        // first event).
        let from = self.taken.load(Relaxed) as usize;
        self.taken.store(n as u64, Relaxed);
        self.frames[from..n].iter().enumerate().map(move |(i, f)| {
            (
                from + i,
                f.receiver.load(Relaxed),
                f.method.load(Relaxed) as u32,
            )
        })
    }

    /// Whether calls are recorded that the pass has not taken.
    pub fn pending(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.len.load(Relaxed) > self.taken.load(Relaxed)
    }

    /// How many taken calls the producer has ended since the last call (innermost
    /// first, each without its `Exit`); none from now.
    pub fn take_popped(&self) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        let n = self.popped.load(Relaxed);
        if n != 0 {
            self.popped.store(0, Relaxed);
        }
        n
    }

    /// Whether the producer has ended taken calls the pass has not looked at.
    pub fn has_popped(&self) -> bool {
        self.popped.load(std::sync::atomic::Ordering::Relaxed) != 0
    }

    /// For the taken call at `entry`: the words its `Exit` would leave, and whether
    /// the producer may end it without that `Exit`.
    pub fn set_exit(&self, entry: usize, word: u64, nested: u64, poppable: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        let f = &self.frames[entry];
        f.word.store(word, Relaxed);
        f.nested.store(nested, Relaxed);
        self.set_poppable(entry, poppable);
    }

    /// Whether the producer may end the taken call at `entry` without its `Exit`.
    pub fn set_poppable(&self, entry: usize, poppable: bool) {
        self.frames[entry]
            .poppable
            .store(u64::from(poppable), std::sync::atomic::Ordering::Relaxed);
    }

    /// Forget the taken call at `entry`, the innermost recorded one, whose `Exit`
    /// the pass received.
    pub fn drop_taken(&self, entry: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        debug_assert_eq!(self.len.load(Relaxed), entry as u64 + 1);
        debug_assert_eq!(self.taken.load(Relaxed), entry as u64 + 1);
        self.len.store(entry as u64, Relaxed);
        self.taken.store(entry as u64, Relaxed);
    }
}

impl Default for LazyFrames {
    fn default() -> Self {
        LazyFrames::new()
    }
}

/// What a pass in front of BigFoot's detector does with its `Check` events
/// (`EventKind::Check`), so that a producer may decide them inline behind the pass
/// ([`InlineCheck::FieldChecks`] behind filters, [`crate::Chain::inline_check_flows`]).
/// A producer may always deliver the check instead: each case must be exactly what
/// [`Pass::access`] does with a check, with no effect but the pass's counters.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum InlineCheckFlow {
    /// Every check is forwarded (`capsule`: a check is not an access its categories
    /// or its discipline are about).
    Forward,
    /// A check of an object or array for which [`crate::env::HeapView::is_shared`]
    /// is false is dropped, every other check forwarded; checks of statics are never
    /// dropped (`escape`: a check comes at or after the accesses it covers, and an
    /// escaped object stays escaped).
    NotShared,
}

/// Accesses at one site that the producer dropped inline ([`InlineFilter`]) during
/// one thread: how many reads and writes, and one location the site accessed.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct InlineDrops {
    pub site: SiteId,
    pub rep: Loc,
    pub reads: u64,
    pub writes: u64,
    /// The site is a proven `this.f` of a capsule class: the drops are capsule
    /// accesses (see [`InlineFilter::CapsuleProtected`]).
    pub capsule: bool,
}

/// The same-epoch test of a race detector, which a producer may perform inline, in
/// place of delivering a plain access to the chain, when the detector is the last
/// pass and every pass before it is a filter whose inline test passed and which
/// forwards such an access unchanged ([`Pass::forwards_inline`]). The producer
/// counts the accesses the test decided per site and hands them to
/// [`crate::Chain::add_inline_checks`] before the thread's `ThreadEnd`, so every
/// statistic is as if the chain had seen them. A producer may always deliver the
/// access instead: the test must be exactly a case in which the detector's
/// [`Pass::access`] forwards with no effect other than what [`Pass::inline_checked`]
/// reproduces.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum InlineCheck {
    /// FastTrack's three same-epoch rules on its hot shadow half (Flanagan & Freund,
    /// PLDI'09, Fig. 2; see `crate::passes::fasttrack`). For a location with key
    /// `k = Loc::key()`, `k & 7 == 0` and `k < 2^DIRECT_BITS` (otherwise deliver the
    /// access), the word index `w = k >> 3` finds the hot cell by three loads:
    /// `mid = top[w >> (LEAF_BITS + MID_BITS)]`, `leaf = mid[(w >> LEAF_BITS) & (2^MID_BITS - 1)]`,
    /// `cell = leaf + (w & (2^LEAF_BITS - 1)) * CELL_BYTES` (null `mid` or `leaf`:
    /// deliver the access). With `e` the thread's packed epoch
    /// ([`crate::thread::ThreadCx::epoch_word`]):
    /// - a write is decided when the word at `cell + W_OFF` equals `e` (while the
    ///   pass holds the cell's lock that word has a bit no epoch has);
    /// - a read is decided when the word `r` at `cell + R_OFF` equals `e`, or when
    ///   `r` has [`FASTTRACK_SHARED_TAG`] and either `r & mask == key`, with `mask`
    ///   and `key` the words at [`FASTTRACK_READ_MASK_OFF`] and
    ///   [`FASTTRACK_READ_KEY_OFF`] after the thread's epoch word (the cell's cache
    ///   of recent readers, [`fasttrack_read_key`]), or the cell's cold word (at
    ///   `cell + FASTTRACK_COLD_BASE - (k & FASTTRACK_COLD_INDEX)`, in the second
    ///   half of the leaf), with its tag cleared, points to a `u32` length `n`,
    ///   `tid(e) < n` and the `u32` at `p + 4 + 4 * tid(e)` equals `clock(e)`
    ///   (read-shared same epoch).
    ///
    /// The cells are written only under their lock, with atomic stores; the
    /// producer's loads must be at least `Acquire` on a tagged `r` and the pointer.
    ///
    /// The producer may also apply FT2's [read exclusive] and [write exclusive]
    /// rules in the case where they cannot find a race: with `w` and `r` the words
    /// it loaded, `r` untagged and each of `w`, `r` either 0, an epoch of the
    /// thread (`w >> 32 == tid(e)`) or an epoch `c@u` ordered before the thread
    /// (`u` below the length at [`THREAD_VC_LEN_OFF`] after the thread's epoch
    /// word and `c` at most the `u32` entry `u` of the array whose address is at
    /// [`THREAD_VC_PTR_OFF`]: its vector clock; a locked `w` or a tagged `r` is
    /// none of these), it takes the cell's lock by a compare-and-swap of `w` with
    /// `w | FASTTRACK_LOCKED` (failure:
    /// deliver the access), checks that `r` is unchanged (otherwise stores `w` back
    /// and delivers), and then, for a read, stores `e` at `R_OFF`, the compact site
    /// ([`fasttrack_sid`] of the site and the thread's current call context, when
    /// it has one; otherwise deliver the access) as a `u32` at
    /// [`FASTTRACK_R_SID_OFF`] in the cold word, and `w` back; for a write, the
    /// compact site at [`FASTTRACK_W_SID_OFF`] and `e` at `W_OFF` (which releases
    /// the lock). Such accesses are counted apart
    /// ([`InlineChecks::reads_excl`], [`InlineChecks::writes_excl`]).
    FastTrack {
        /// The address of the top level (`2^TOP_BITS` pointers).
        top: u64,
    },
    /// The same test, on the same layout, for the field checks of a BigFoot-placed
    /// program instead of plain accesses (`crate::passes::bigfoot`): a
    /// `Check` of a field group of a non-null object or of a static (`CheckSpan::One`
    /// or `CheckSpan::Fields`) at location `loc` (the group's representative field,
    /// or the static), or of one element (`CheckSpan::Element`, `loc.slot` inside the
    /// array), is decided by the test on the cell of `loc.key()`, a read check as a
    /// read and a write check as a write. Counted like accesses ([`InlineChecks`]); the chain
    /// accounts them as `Check` events.
    ///
    /// The producer may also apply the exclusive rules as for
    /// [`InlineCheck::FastTrack`] (same conditions, same stores, counted apart): to
    /// a field-group or static check, and to an element check when the array `a` is
    /// in the thread's table of fine arrays ([`crate::Chain::inline_fine_arrays`]:
    /// [`BIGFOOT_FINE_SLOTS`] words, `a` at [`bigfoot_fine_slot`]`(a)`), whose
    /// elements have cells of their own, written at the check.
    ///
    /// After the table, at [`BIGFOOT_COVER_OFF`], the thread's *covered ranges*: for
    /// reads, then for writes, four words `[a, lo, hi, len]` (a read check at 0, a
    /// write check at [`BIGFOOT_COVER_WORDS`]` / 2` words further): elements `lo..hi`
    /// of the array `a` are inside a range of that kind in the thread's footprint, so
    /// an element check of that kind on them, which the same-epoch test did not
    /// decide, or a range check of that kind whose elements (clamped to the array)
    /// lie inside `lo..hi`, changes nothing and the producer may drop it (counted as
    /// [`InlineChecks::reads_covered`], [`InlineChecks::writes_covered`]). A check
    /// that names no element (a null array, an index outside it, a range empty
    /// inside it) the runtime drops without an event, and so may the producer. Where `len`
    /// is not 0 (the array's length), `lo..hi` is exactly a step-1 range of the
    /// footprint, which the thread itself may *extend*: a check `l..h` of that kind
    /// (step 1, or one element) with `0 <= l`, `h <= len` that overlaps or abuts it
    /// sets `lo, hi` to `min(lo, l), max(hi, h)` and counts as covered (the pass
    /// copies the words back into its footprint before it next reads it; see
    /// [`bigfoot_cover_check`]). The pass keeps `a` out of the table of fine arrays
    /// (an element check on a fine array applies a rule) and clears the words
    /// whenever its footprint is committed.
    ///
    /// Then, at [`BIGFOOT_SITE_GEN_OFF`], the footprint's generation `g` (changed at
    /// every commit), and at [`BIGFOOT_SITES_OFF`] [`BIGFOOT_SITE_SLOTS`] entries of
    /// four words per check site `s` below `2^31` and kind `w` (1 for writes; entry
    /// [`bigfoot_site_entry`]`(s, w)`): `[s | w << 31 | g << 32, a, lo | hi << 32,
    /// step]`, a range `lo..hi:step` of `a` that a check of that kind at `s` put into
    /// the footprint of generation `g`. A range check `a[l..h:k]` (an element check:
    /// `a[i..i + 1:1]`) of that kind at `s` with `lo <= l < h <= hi` and either
    /// `step == 1` or `k == step && l == lo` is inside the footprint: the producer
    /// may drop it as above.
    ///
    /// Last, at [`BIGFOOT_ARRAY_COVER_OFF`], more covered ranges of the same four
    /// words and meaning, per array (direct-mapped: [`bigfoot_array_cover`]`(a, w)`):
    /// the latest footprint range of step 1 of the array and kind, for a loop that
    /// walks many arrays in turn (a matrix across its rows' arrays). Only
    /// [`bigfoot_cover_check`] reads them, not inline code; it extends the covered
    /// range of the kind together with the array's own, and a check that the
    /// array's own covered range decides makes it the covered range of the kind.
    ///
    /// And at [`BIGFOOT_MEMO_OFF`], the thread's *read memos*, [`BIGFOOT_MEMO_SLOTS`]
    /// entries of [`BIGFOOT_MEMO_WORDS`] words per fine array (direct-mapped:
    /// [`bigfoot_memo_slot`]`(a)`): `[a, g, bits, _]`, where `g` is the footprint's
    /// generation and `bits` the address of one bit per element of `a` (`u64` words,
    /// element `i` at bit `i % 64` of word `i / 64`). An entry of the current
    /// generation says that each element whose bit is set had a read check of this
    /// thread since its last synchronization. Another read check of such an element
    /// is decided by FastTrack's same-epoch rules on its cell, whatever other threads
    /// did meanwhile (see `ReadMemo` in `passes::bigfoot`), so generated code may count
    /// it as one (`INLINE_MEMO`, a same-epoch read) without reading the cell: one bit of the memo stands
    /// for the 16 bytes of the cell, and a random walk over a read-only vector (a
    /// sparse product's `x[col[i]]`) stays in the first-level cache. The pass takes
    /// up an entry (zeroes its bits, sets `a` and `g`) when an element read check of
    /// a fine array of at most [`BIGFOOT_MEMO_MAX_LEN`] elements reaches it and sets
    /// the element's bit; generated code sets the bit of each read check it decides
    /// on an array whose entry is current; the fourth word is unused.
    /// Only the thread reads or writes its memos.
    FieldChecks {
        /// The address of the top level (`2^TOP_BITS` pointers).
        top: u64,
    },
}

/// Words of a thread's table of fine arrays ([`InlineCheck::FieldChecks`]).
pub const BIGFOOT_FINE_SLOTS: usize = 4096;

/// Byte offset of a thread's covered ranges after its table of fine arrays, and
/// their words ([`InlineCheck::FieldChecks`]).
pub const BIGFOOT_COVER_OFF: usize = BIGFOOT_FINE_SLOTS * 8;
pub const BIGFOOT_COVER_WORDS: usize = 8;
/// Byte offsets of the generation word and of the per-site entries
/// ([`InlineCheck::FieldChecks`]), their number and words.
pub const BIGFOOT_SITE_GEN_OFF: usize = BIGFOOT_COVER_OFF + 8 * BIGFOOT_COVER_WORDS;
pub const BIGFOOT_SITES_OFF: usize = BIGFOOT_SITE_GEN_OFF + 16;
pub const BIGFOOT_SITE_SLOTS: usize = 256;
pub const BIGFOOT_SITE_WORDS: usize = 4;
/// Byte offset of the per-array covered ranges ([`InlineCheck::FieldChecks`]), and
/// their number per kind (of [`BIGFOOT_COVER_WORDS`]` / 2` words each).
pub const BIGFOOT_ARRAY_COVER_OFF: usize =
    BIGFOOT_SITES_OFF + 8 * BIGFOOT_SITE_SLOTS * BIGFOOT_SITE_WORDS;
pub const BIGFOOT_ARRAY_COVER_SLOTS: usize = 4096;
/// Byte offset of the read memos ([`InlineCheck::FieldChecks`]), their number and
/// words.
pub const BIGFOOT_MEMO_OFF: usize =
    BIGFOOT_ARRAY_COVER_OFF + 8 * 2 * BIGFOOT_ARRAY_COVER_SLOTS * BIGFOOT_COVER_WORDS / 2;
pub const BIGFOOT_MEMO_SLOTS: usize = 64;
pub const BIGFOOT_MEMO_WORDS: usize = 4;
/// Arrays longer than this have no read memo ([`InlineCheck::FieldChecks`]): a memo
/// is cleared whenever it is taken up in a new generation, so its size bounds that
/// cost (2^17 elements: 16 KiB of bits).
pub const BIGFOOT_MEMO_MAX_LEN: u32 = 1 << 17;
/// Words of a thread's whole table ([`InlineCheck::FieldChecks`]).
pub const BIGFOOT_TABLE_WORDS: usize =
    BIGFOOT_MEMO_OFF / 8 + BIGFOOT_MEMO_SLOTS * BIGFOOT_MEMO_WORDS;

/// The slot of array `a` among a thread's read memos ([`InlineCheck::FieldChecks`]):
/// its slot among the fine arrays, cut to the memos' number.
#[inline]
pub const fn bigfoot_memo_slot(a: u64) -> usize {
    bigfoot_fine_slot(a) & (BIGFOOT_MEMO_SLOTS - 1)
}
const _: () =
    assert!(BIGFOOT_MEMO_SLOTS.is_power_of_two() && BIGFOOT_MEMO_SLOTS <= BIGFOOT_FINE_SLOTS);

/// The word index in a thread's table of the per-array covered range of kind `write`
/// that may hold ranges of array `a` ([`InlineCheck::FieldChecks`]).
#[inline]
pub const fn bigfoot_array_cover(a: u64, write: bool) -> usize {
    // A full mix of the address (the finalizer of splitmix64): arrays a power of
    // two apart, or any fixed distance apart (a matrix's rows), spread over the slots
    // as random ones would (a multiplicative hash alone put a third of `lufact`'s
    // rows into shared slots).
    const BITS: u32 = BIGFOOT_ARRAY_COVER_SLOTS.trailing_zeros();
    let mut x = a;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    let slot = ((x ^ (x >> 31)) >> (64 - BITS)) as usize;
    BIGFOOT_ARRAY_COVER_OFF / 8
        + (write as usize * BIGFOOT_ARRAY_COVER_SLOTS + slot) * (BIGFOOT_COVER_WORDS / 2)
}

/// Whether a thread's covered ranges (in its `table`, [`BIGFOOT_TABLE_WORDS`] words
/// laid out as [`InlineCheck::FieldChecks`] documents) hold the non-empty range check
/// `lo..hi:step` of the array `arr`, of kind `write`, at `site`: the test that drops
/// a check the footprint already covers, made by the pass and by generated code (one
/// call, off the hot path of the cell's tests).
pub fn bigfoot_covered(
    table: &[AtomicU64],
    arr: u64,
    (lo, hi, step): (i64, i64, u64),
    site: u32,
    write: bool,
) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    let w = |at: usize| table[at / 8].load(Relaxed);
    let inside = |e_lo: u64, e_hi: u64| e_lo as i64 <= lo && lo < hi && hi <= e_hi as i64;
    let kind = BIGFOOT_COVER_OFF + 8 * (BIGFOOT_COVER_WORDS / 2) * write as usize;
    if w(kind) == arr && inside(w(kind + 8), w(kind + 16)) {
        return true;
    }
    let Some((slot, tag)) = bigfoot_site_entry(site, write) else {
        return false;
    };
    let at = BIGFOOT_SITES_OFF + 8 * BIGFOOT_SITE_WORDS * slot;
    if w(at) != tag | w(BIGFOOT_SITE_GEN_OFF) << 32 || w(at + 8) != arr {
        return false;
    }
    let (span, e_step) = (w(at + 16), w(at + 24));
    let (e_lo, e_hi) = (span & u64::from(u32::MAX), span >> 32);
    inside(e_lo, e_hi) && (e_step == 1 || (step == e_step && lo == e_lo as i64))
}

/// [`bigfoot_covered`], or else the thread's covered range of kind `write` extended
/// by the check, where the layout of [`InlineCheck::FieldChecks`] allows it (an
/// extensible range of `arr`, a step-1 or one-element check inside the array that
/// overlaps or abuts it), or else, for a read, the covered write range holding it:
/// true if the check is covered now, and then it adds nothing more to the
/// footprint. Only the thread that owns `table` calls it (the pass, or
/// the thread's generated code), so plain loads and stores suffice.
pub fn bigfoot_cover_check(
    table: &[AtomicU64],
    arr: u64,
    (lo, hi, step): (i64, i64, u64),
    site: u32,
    write: bool,
) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    if bigfoot_covered(table, arr, (lo, hi, step), site, write) {
        return true;
    }
    let kind = (BIGFOOT_COVER_OFF + 8 * (BIGFOOT_COVER_WORDS / 2) * write as usize) / 8;
    let own = bigfoot_array_cover(arr, write);
    let w = |at: usize| table[at].load(Relaxed);
    // Whether the check extends the covered range at word `at` (of `arr`, exactly
    // a footprint range), and its new bounds.
    let extends = |at: usize| {
        let (len, c_lo, c_hi) = (w(at + 3), w(at + 1) as i64, w(at + 2) as i64);
        let ok = w(at) == arr
            && len != 0
            && 0 <= lo
            && lo < hi
            && hi <= len as i64
            && (step == 1 || hi - lo == 1)
            && lo <= c_hi
            && c_lo <= hi;
        ok.then(|| (c_lo.min(lo) as u64, c_hi.max(hi) as u64))
    };
    let set = |at: usize, (l, h): (u64, u64)| {
        table[at + 1].store(l, Relaxed);
        table[at + 2].store(h, Relaxed);
    };
    if let Some(span) = extends(kind) {
        // The array's own covered range holds the same footprint range and
        // takes the extension too (so the kind's may be given to another array).
        set(kind, span);
        if w(own) == arr {
            set(own, (w(own + 1).min(span.0), w(own + 2).max(span.1)));
        }
        return true;
    }
    // A read inside the covered write range: the footprint's write check of those
    // elements covers it (a write check is legitimate and covering for reads, §3.5;
    // the commit checks a cell written by any range as a write, whatever read ranges
    // touch it). Tested after the read range's own extension, so that a loop's reads
    // stay one range where they run into its writes (insertion sort).
    let writes = (BIGFOOT_COVER_OFF + 8 * (BIGFOOT_COVER_WORDS / 2)) / 8;
    if !write
        && w(writes) == arr
        && w(writes + 1) as i64 <= lo
        && lo < hi
        && hi <= w(writes + 2) as i64
    {
        return true;
    }
    // Last, the array's own covered range, which is its latest footprint entry of
    // the kind: a check inside it, or one that extends it, changes the footprint as
    // the pass would (nothing, or the entry's merge with the check), and it leaves
    // the covered range of the kind and the site's entry as the pass leaves them
    // (that range, extended). Whether an array keeps its own covered range depends
    // on its address (a shared slot), so nothing but speed may depend on it.
    let inside = w(own) == arr && w(own + 1) as i64 <= lo && lo < hi && hi <= w(own + 2) as i64;
    let span = if inside {
        (w(own + 1), w(own + 2))
    } else if let Some(span) = extends(own) {
        set(own, span);
        span
    } else {
        return false;
    };
    for (i, v) in [arr, span.0, span.1, w(own + 3)].into_iter().enumerate() {
        table[kind + i].store(v, Relaxed);
    }
    bigfoot_note_site(table, site, arr, (span.0 as u32, span.1 as u32, 1), write);
    true
}

/// Record in a thread's per-site entries that a check of kind `write` at `site`
/// put `lo..hi:step` of `arr` into the footprint of the table's generation
/// ([`InlineCheck::FieldChecks`]).
pub fn bigfoot_note_site(
    table: &[AtomicU64],
    site: u32,
    arr: u64,
    (lo, hi, step): (u32, u32, u32),
    write: bool,
) {
    use std::sync::atomic::Ordering::Relaxed;
    let Some((slot, tag)) = bigfoot_site_entry(site, write) else {
        return;
    };
    let at = (BIGFOOT_SITES_OFF + 8 * BIGFOOT_SITE_WORDS * slot) / 8;
    let generation = table[BIGFOOT_SITE_GEN_OFF / 8].load(Relaxed);
    table[at].store(tag | generation << 32, Relaxed);
    table[at + 1].store(arr, Relaxed);
    table[at + 2].store(u64::from(lo) | u64::from(hi) << 32, Relaxed);
    table[at + 3].store(step.into(), Relaxed);
}

/// The entry of the checks of kind `write` at site `s` among a thread's per-site
/// ranges ([`InlineCheck::FieldChecks`]), and its tag without the generation
/// (`None`: a site from `2^31` on has no entry).
#[inline]
pub const fn bigfoot_site_entry(s: u32, write: bool) -> Option<(usize, u64)> {
    if s >= 1 << 31 {
        return None;
    }
    let slot = ((s as usize) << 1 | write as usize) & (BIGFOOT_SITE_SLOTS - 1);
    Some((slot, s as u64 | (write as u64) << 31))
}

/// The slot of array `a` (its address) in a thread's table of fine arrays
/// ([`InlineCheck::FieldChecks`]).
#[inline]
pub const fn bigfoot_fine_slot(a: u64) -> usize {
    ((a >> 3) ^ (a >> 15)) as usize & (BIGFOOT_FINE_SLOTS - 1)
}

/// A test of a checker that sees every access and drops none, placed between the
/// chain's inline filters and its detector (`singletrack` before `fasttrack`): when it
/// holds, [`Pass::access`] forwards with no effect other than what
/// [`Pass::inline_forwarded`] reproduces. A producer that decides an access with the
/// detector's [`InlineCheck`] must, with such a pass in the chain
/// ([`crate::Chain::inline_guard`]), also find this test true, or deliver the access.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum InlineGuard {
    /// SingleTrack's same-epoch test (see `crate::passes::singletrack`), with `w` the
    /// thread's guard word ([`crate::Chain::inline_guard_word`]): the location's
    /// stamp `s`, in a table with the layout of [`InlineCheck::FastTrack`]'s but cells
    /// of [`GUARD_CELL_BYTES`] (the stamp is the cell's one word), satisfies
    /// `s & !1 == w` for a read or `s == w + 1` for a write (only the thread stores
    /// stamps that match its word; no stamp matches [`GUARD_OUTSIDE`]), or, for a
    /// read, `s` has [`GUARD_SHARED_TAG`], `p = s & !TAG` points to a `u64` `n`,
    /// `t = (w & 0xffff_ffff) >> 1` is below `n` and the `u64` at `p + 8 + 8 * t`
    /// equals `w` (read-shared same epoch), or `s` has [`GUARD_PAIR_TAG`] but not
    /// [`GUARD_SHARED_TAG`] and one of its halves `s & (2^31 - 1)`, `(s >> 31) &
    /// (2^31 - 1)` equals `(w & 0xffff_ffff) >> 1 << 24 | w >> 32` where the thread
    /// (`(w & 0xffff_ffff) >> 1`) is below 128 and the clock (`w >> 32`) below 2^24
    /// (two readers in the stamp). Or the thread is outside every
    /// transaction (`w == GUARD_OUTSIDE`) and the `u64` at `idle` is 0 (no
    /// transaction is live): an access decided that way (with the detector's test)
    /// adds one to the `u64` [`GUARD_IDLE_OFF`] bytes after the guard word, so that
    /// [`Pass::inline_forwarded`] can tell the two kinds apart.
    ///
    /// Where the stamp test fails, the producer may apply the checker's *sole
    /// accessor* rule instead (only where it also keeps the thread's call context in
    /// the shadow stack, as [`InlineCheck::FastTrack`]'s exclusive rules do): if `w`
    /// is an inside word (`w < 2^63`), the stamp is the thread's own earlier one in its
    /// transaction (`s != 0`, `s < 2^62`, `(s ^ w) & 0xffff_fffe == 0`, `s >> 32` at least the
    /// `u64` [`GUARD_TX_LO_OFF`] bytes after the guard word), and the location's
    /// entry in the table at `sole` (the stamp table's layout, cells of
    /// [`SOLE_CELL_BYTES`]) has the owner word `o = (w & 0xffff_ffff) + 2`, which a
    /// compare-and-swap to `o | SOLE_LOCK` locks: store the packed site
    /// `site | ctx << 32` at [`SOLE_W_SITE_OFF`] for a write ([`SOLE_R_SITE_OFF`] for a
    /// read) and the clock `w >> 32` in the high half of the clocks word at
    /// [`SOLE_CLOCKS_OFF`] for a write (its other half 0), in its low half for a read
    /// (the high half kept); then the stamp `w + write`, then `o` (unlocked). The
    /// access then counts as one the stamp test decided.
    ///
    /// Where the stamp is 0 instead, the producer may apply the checker's *first
    /// access* rule (under the same condition on the call context): if `w` is an
    /// inside word whose clock `w >> 32` is not 0 and whose thread
    /// `(w & 0xffff_ffff) >> 1` is below 2^24, the `u64` `f` [`GUARD_FRONT_OFF`]
    /// bytes after the guard word is not 0, and the slot of the packed site
    /// `p = site | ctx << 32` in the thread's *origin front* at `f`
    /// ([`guard_front_slot`]: [`GUARD_FRONT_SLOT_BYTES`] bytes, `p` as its first
    /// `u64` and an origin `o` as its second) holds `p` and an `o` that is not 0,
    /// then the location's record in the table at `recs` (the stamp table's layout,
    /// cells of [`GUARD_CELL_BYTES`]) is taken by a compare-and-swap from 0 to 1;
    /// if the stamp is still 0, the stamp `w + write` is stored, then `o` in the
    /// record (unlocked); otherwise 0 is stored back in the record and the access
    /// delivered. The access then counts as one the stamp test decided. (A read
    /// decided so never passes the guard for a write paired with it.)
    Stamp {
        /// The address of the stamp table's top level (`2^TOP_BITS` pointers).
        top: u64,
        /// The address of the count of live transactions.
        idle: u64,
        /// The address of the sole-accessor table's top level.
        sole: u64,
        /// The address of the location records' table's top level.
        recs: u64,
    },
}

/// The offset from the guard word of the thread's first conflict-freedom clock in
/// its current transaction ([`InlineGuard::Stamp`]'s sole-accessor rule).
pub const GUARD_TX_LO_OFF: i32 = 16;
/// The offset from the guard word of the address of the thread's origin front
/// ([`InlineGuard::Stamp`]'s first-access rule; 0: none usable).
pub const GUARD_FRONT_OFF: i32 = 24;
/// Slots of a thread's origin front ([`InlineGuard::Stamp`]), and bytes per slot.
pub const GUARD_FRONT_SLOTS: usize = 64;
pub const GUARD_FRONT_SLOT_BYTES: u32 = 16;

/// The slot of `site` in call context `ctx` in a thread's origin front
/// ([`InlineGuard::Stamp`]).
#[inline]
pub const fn guard_front_slot(site: u32, ctx: u32) -> usize {
    (site as usize ^ (ctx as usize).wrapping_mul(31)) & (GUARD_FRONT_SLOTS - 1)
}
/// Bytes per cell of the sole-accessor table, and the offsets of its words
/// ([`InlineGuard::Stamp`]).
pub const SOLE_CELL_BYTES: u32 = 32;
pub const SOLE_OWNER_OFF: i32 = 0;
pub const SOLE_CLOCKS_OFF: i32 = 8;
pub const SOLE_W_SITE_OFF: i32 = 16;
pub const SOLE_R_SITE_OFF: i32 = 24;
/// The lock bit of a sole-accessor entry's owner word.
pub const SOLE_LOCK: u64 = 1;

/// Bytes per cell of [`InlineGuard::Stamp`]'s table.
pub const GUARD_CELL_BYTES: u32 = 8;
/// The tag of a stamp that points at per-thread read words ([`InlineGuard::Stamp`]).
pub const GUARD_SHARED_TAG: u64 = 1 << 63;
/// The tag of a stamp that holds two threads' read words ([`InlineGuard::Stamp`]).
pub const GUARD_PAIR_TAG: u64 = 1 << 62;
/// The guard word of a thread outside every transaction ([`InlineGuard::Stamp`]).
pub const GUARD_OUTSIDE: u64 = !1;
/// The offset from the guard word of the count of accesses the producer decided
/// with the idle test ([`InlineGuard::Stamp`]).
pub const GUARD_IDLE_OFF: i32 = 8;

/// Layout constants of [`InlineCheck::FastTrack`].
pub const FASTTRACK_LEAF_BITS: u32 = crate::passes::shadow::LEAF_BITS;
pub const FASTTRACK_MID_BITS: u32 = crate::passes::shadow::MID_BITS;
pub const FASTTRACK_DIRECT_BITS: u32 = crate::passes::shadow::DIRECT_BITS;
pub const FASTTRACK_CELL_BYTES: u32 = 16;
pub const FASTTRACK_W_OFF: i32 = 0;
pub const FASTTRACK_R_OFF: i32 = 8;
pub const FASTTRACK_SHARED_TAG: u64 = 1 << 63;
/// The cold word of a hot cell at `cell` for the key `k`, in the second half of the
/// leaf, is at `cell + FASTTRACK_COLD_BASE - (k & FASTTRACK_COLD_INDEX)` (the cell's
/// index in its leaf times 8: `crate::passes::shadow::cold_base`).
pub const FASTTRACK_COLD_BASE: i32 =
    crate::passes::shadow::cold_base(FASTTRACK_CELL_BYTES as usize) as i32;
pub const FASTTRACK_COLD_INDEX: u64 = ((1 << FASTTRACK_LEAF_BITS) - 1) << 3;
/// Offsets in the cold word of the `u32` compact sites of `W` and `R` (while `R` is
/// an epoch; [`fasttrack_sid`]).
pub const FASTTRACK_W_SID_OFF: i32 = 0;
pub const FASTTRACK_R_SID_OFF: i32 = 4;
/// A compact site ([`fasttrack_sid`]) holds the call context from this bit.
pub const FASTTRACK_SID_CTX_SHIFT: u32 = 16;

/// The compact site of an access at `site` in call context `ctx`, as a FastTrack
/// cell's cold word keeps it (`u32`, [`InlineCheck::FastTrack`]): `site | ctx << 16`
/// for a site below 2^16 and a context below 2^15. Any other pair has no compact
/// form; the pass numbers those itself, with bit 31 set.
pub const fn fasttrack_sid(site: u32, ctx: u32) -> Option<u32> {
    if site < 1 << FASTTRACK_SID_CTX_SHIFT && ctx < 1 << (31 - FASTTRACK_SID_CTX_SHIFT) {
        Some(site | ctx << FASTTRACK_SID_CTX_SHIFT)
    } else {
        None
    }
}
/// The lock bit of a cell's `W` word ([`InlineCheck::FastTrack`]).
pub const FASTTRACK_LOCKED: u64 = 1 << 62;
/// Offsets from a thread's epoch word ([`crate::thread::ThreadCx::epoch_word`]) of
/// the mask and the key of its current epoch in a read-shared cell's cache of
/// recent readers ([`fasttrack_read_key`]).
pub const FASTTRACK_READ_MASK_OFF: i32 = 8;
pub const FASTTRACK_READ_KEY_OFF: i32 = 16;
/// Offsets from a thread's epoch word of the address of its vector clock's entries
/// (`u32` each) and of their number ([`InlineCheck::FastTrack`]'s exclusive rules).
pub const THREAD_VC_PTR_OFF: i32 = 24;
pub const THREAD_VC_LEN_OFF: i32 = 32;

/// One slot of a read-shared cell's cache of recent readers ([`fasttrack_read_key`]),
/// at bit 0 or 32 of the tagged `R` word: 31 bits, so that the tag (bit 63) is no
/// slot's.
pub const FASTTRACK_READ_SLOT: u64 = (1 << 31) - 1;

/// The `(mask, key)` of epoch `clock@tid` in the cache of recent readers that a
/// read-shared FastTrack cell keeps in its tagged `R` word ([`InlineCheck::FastTrack`]):
/// two 31-bit slots ([`FASTTRACK_READ_SLOT`]), thread `t` in slot `t & 1` as
/// `(t >> 1) << 24 | clock`. A word `x` holds the epoch iff `x & mask == key`. An
/// epoch that has no slot form (thread 256 or more, clock 0 or 2^24 or more) gets a
/// mask and key that no word matches.
#[inline]
pub const fn fasttrack_read_key(tid: u32, clock: u32) -> (u64, u64) {
    if tid >= 256 || clock == 0 || clock >= 1 << 24 {
        return (0, 1);
    }
    let shift = 32 * (tid & 1);
    let entry = ((tid >> 1) << 24 | clock) as u64;
    (FASTTRACK_READ_SLOT << shift, entry << shift)
}

/// Accesses at one site that the producer decided inline with the chain's
/// [`InlineCheck`] during one thread, by the rule that decided them, with one
/// location the site accessed.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct InlineChecks {
    pub site: SiteId,
    pub rep: Loc,
    /// Checks of array elements ([`InlineCheck::FieldChecks`], `CheckSpan::Element`),
    /// not of fields.
    pub elements: bool,
    /// Reads decided because the read state is this thread's current epoch.
    pub reads_same: u64,
    /// Reads decided on the shared read clock (read-shared same epoch).
    pub reads_shared_same: u64,
    /// Writes decided because the last write is this thread's current epoch.
    pub writes_same: u64,
    /// Reads decided by [read exclusive] on the thread's own earlier epochs.
    pub reads_excl: u64,
    /// Writes decided by [write exclusive] on the thread's own earlier epochs.
    pub writes_excl: u64,
    /// Element read checks dropped because the thread's footprint already covers
    /// them (BigFoot's covered ranges, [`InlineCheck::FieldChecks`]).
    pub reads_covered: u64,
    /// The same for element write checks.
    pub writes_covered: u64,
}

impl InlineChecks {
    pub fn reads(&self) -> u64 {
        self.reads_same + self.reads_shared_same + self.reads_excl + self.reads_covered
    }
    pub fn writes(&self) -> u64 {
        self.writes_same + self.writes_excl + self.writes_covered
    }
}

/// Per-thread state of one pass.
pub type Local = dyn Any + Send;

pub trait Pass: Send + Sync {
    /// The name used in `--tools` and in reports.
    fn name(&self) -> &'static str;

    /// Fresh per-thread state for a new thread.
    fn thread_local(&self) -> Box<Local> {
        Box::new(())
    }

    /// A plain read or write (`EventKind::Read`/`Write`). Return `Flow::Drop` to hide
    /// it from the rest of the chain.
    fn access(&self, _t: &ThreadState, _local: &mut Local, _ev: &Event<'_>) -> Flow {
        Flow::Forward
    }

    /// Every other event: synchronization, allocation, method enter/exit,
    /// specification begin/end, thread start/end. Cannot be dropped.
    fn event(&self, _t: &ThreadState, _local: &mut Local, _ev: &Event<'_>) {}

    /// The thread is about to synchronize, and the synchronization's event is its
    /// next one: it takes a monitor (`Acquire`, delivered once it has the monitor,
    /// perhaps after waiting for it; a reentrant acquire has no event and leaves the
    /// thread's clock as it is, so the work is the same there) or arrives at a barrier
    /// (`BarrierEnter`, delivered under the scheduler's lock, atomically with the
    /// arrival); see [`crate::Chain::before_sync`]. A pass that defers work on the
    /// thread's earlier accesses to its next synchronization event (`bigfoot`'s
    /// footprint) may do it here: outside the VM's locks, before the thread waits,
    /// instead of where every other thread that wants the monitor, or the
    /// scheduler, waits for it. The thread's state is the one the event will see.
    fn before_sync(&self, _t: &ThreadState, _local: &mut Local) {}

    /// Whether [`Pass::before_sync`] does anything: a chain calls it only on the
    /// passes that say so, and a producer skips the call when none does
    /// ([`crate::Chain::wants_before_sync`]).
    fn wants_before_sync(&self) -> bool {
        false
    }

    /// Whether this pass needs the `Enter` and `Exit` events of method calls. When no
    /// pass of a chain does, the chain keeps the call context without delivering them
    /// ([`crate::Chain::frame_events`]), and a producer may skip building them: the
    /// call context is then all a pass can learn about calls, from
    /// [`ThreadState::ctx`] at accesses.
    fn wants_frames(&self) -> bool {
        true
    }

    /// With [`Pass::wants_frames`] false: whether this pass still needs the `Enter`
    /// and `Exit` of the calls of `method` (`capsule`: methods of capsule classes).
    /// The chain then keeps the call context from the producer's stack and delivers
    /// these calls' events only ([`crate::Chain::wants_frames_of`]); the running
    /// method is [`ThreadState::method`] either way.
    fn wants_frames_of(&self, _method: crate::event::MethodId) -> bool {
        false
    }

    /// End of the run: report anything deferred (e.g. `singletrack`'s last checks).
    fn finish(&self) {}

    /// An output this pass writes (e.g. `record`'s trace file) that could not be
    /// written: the message, for the command line to print and exit 74.
    fn output_error(&self) -> Option<String> {
        None
    }

    /// Pass-specific statistics, added to `--stats` and the JSON report.
    fn stats(&self) -> Option<serde_json::Value> {
        None
    }

    /// The test the producer may perform inline for this pass when it is first in its
    /// chain (see [`InlineFilter`]); `None`: every access calls [`Pass::access`].
    fn inline_filter(&self) -> Option<InlineFilter> {
        None
    }

    /// Accesses of thread `t` that the producer dropped inline with this pass's
    /// [`InlineFilter`], delivered before the thread's `ThreadEnd`: account for them
    /// exactly as [`Pass::access`] would have (statistics only; they were dropped).
    fn inline_dropped(&self, _t: &ThreadState, _local: &mut Local, _drops: &[InlineDrops]) {}

    /// The thread's table of fine arrays for [`InlineCheck::FieldChecks`], inside
    /// its state `local` (stable address while the thread runs; only this thread's
    /// events change it).
    fn inline_fine_arrays<'a>(&self, _local: &'a Local) -> Option<&'a [AtomicU64]> {
        None
    }

    /// What this pass does with BigFoot's checks, when a producer may decide that
    /// inline (see [`InlineCheckFlow`]); `None`: every check calls [`Pass::access`].
    fn inline_check_flow(&self) -> Option<InlineCheckFlow> {
        None
    }

    /// True if [`Pass::access`] forwards every plain `Read`/`Write` with no effect
    /// (`bigfoot`, which checks the placed checks instead): behind inline filters
    /// that forward inline ([`Pass::forwards_inline`]), a producer may then end an
    /// access that passed every filter's test without a call
    /// ([`crate::Chain::accesses_end_at_filters`]).
    fn ignores_accesses(&self) -> bool {
        false
    }

    /// The same-epoch test the producer may perform inline for this detector (see
    /// [`InlineCheck`]); `None`: every access calls [`Pass::access`].
    fn inline_check(&self) -> Option<InlineCheck> {
        None
    }

    /// Accesses of thread `t` that the producer decided inline with this pass's
    /// [`InlineCheck`], delivered before the thread's `ThreadEnd`: account for them
    /// as [`Pass::access`] would have.
    fn inline_checked(&self, _t: &ThreadState, _local: &mut Local, _checks: &[InlineChecks]) {}

    /// The test the producer must also find true before deciding an access with the
    /// detector's [`InlineCheck`], when this pass is the one right before the
    /// detector and is not an inline filter (see [`InlineGuard`]).
    fn inline_guard(&self) -> Option<InlineGuard> {
        None
    }

    /// The thread's word for [`Pass::inline_guard`], inside its state `local` (so its
    /// address is stable while the thread runs); only this thread's events change it.
    fn inline_guard_word<'a>(&self, _local: &'a Local) -> Option<&'a AtomicU64> {
        None
    }

    /// The thread's *nested-call word*, inside its state `local`: an object `r` (0:
    /// none) such that this pass would end a call on receiver `r` exactly as it
    /// started it, and decide everything in between alike without the call's
    /// `Enter`/`Exit`, if the called method is an instance method, not synchronized,
    /// with no reference argument besides the receiver and no reference result, that
    /// neither acquires nor releases a monitor, also through the calls it makes
    /// (`capsule`: a call on the capsule whose checked call is the innermost frame).
    /// A producer may then deliver neither event of such a call: deciding at the
    /// call, after the word as this thread's events left it, and skipping the `Exit`
    /// exactly when it skipped the `Enter`. Only this thread's events change it. See
    /// [`crate::Chain::nested_call_word`].
    fn nested_call_word<'a>(&self, _local: &'a Local) -> Option<&'a AtomicU64> {
        None
    }

    /// The thread's [`LazyFrames`], inside its state `local` (so its address is
    /// stable while the thread runs), when the pass takes recorded calls: while the
    /// pass's gate ([`Pass::inline_filter_gate`]) is 0, a producer may record the
    /// call of a method `m` with [`Pass::lazy_frames_of`] there instead of
    /// delivering its `Enter`, and end it without its `Exit` if the pass has not
    /// taken it since. Its `word` and `nested` are then the pass's
    /// [`Pass::inline_filter_word`] and [`Pass::nested_call_word`]. See
    /// [`crate::Chain::lazy_frames`].
    fn lazy_frames<'a>(&self, _local: &'a Local) -> Option<&'a LazyFrames> {
        None
    }

    /// Whether calls of `method` may be recorded in [`Pass::lazy_frames`]; the
    /// producer asks only for instance methods that are not synchronized,
    /// `deterministic` or `atomic`, with no reference argument besides the receiver
    /// and no reference result (the `Enter` and `Exit` carry no reference).
    fn lazy_frames_of(&self, _method: crate::event::MethodId) -> bool {
        false
    }

    /// End the recorded calls that the producer ended without their `Exit` since the
    /// pass last saw an event ([`LazyFrames::take_popped`]), as those `Exit` events
    /// would have, with no event: a producer that decides itself when threads switch
    /// (a seeded schedule) calls it before another thread may run, so that what the
    /// pass shares with other threads is what the delivered `Exit` events would have
    /// left. The pass does the same at the start of its next event.
    fn flush_lazy(&self, _t: &ThreadState, _local: &mut Local) {}

    /// The thread's word for this pass's [`InlineFilter`], when its test depends on
    /// the thread's state ([`InlineFilter::CapsuleProtected`]), inside its state
    /// `local` (so its address is stable while the thread runs). Only this thread's
    /// events change it, and the pass keeps it exact after each of them.
    fn inline_filter_word<'a>(&self, _local: &'a Local) -> Option<&'a AtomicU64> {
        None
    }

    /// A run-wide word that must be 0 for [`Pass::inline_filter_word`] to be used:
    /// the pass makes it nonzero when the words may no longer be exact (any thread's
    /// `capsule` demotion changes every thread's executors).
    fn inline_filter_gate(&self) -> Option<&AtomicU64> {
        None
    }

    /// True if this pass, when first in its chain with an [`InlineFilter`], forwards
    /// every access its inline test lets through, other than a `Write` of a
    /// reference, with no effect but what [`Pass::inline_forwarded`] reproduces; the
    /// producer may then decide such an access with the detector's [`InlineCheck`]
    /// without calling this pass. The same must hold for every access to a static
    /// (which has no header for the test) other than a `Write` of a reference, made
    /// outside capsule calls: the producer passes those through every inline filter.
    /// (`escape` takes the statics as escaped, `capsule` as capsule-shared.)
    fn forwards_inline(&self) -> bool {
        false
    }

    /// Accesses of thread `t` that passed this pass's inline test and were decided
    /// by a later detector's [`InlineCheck`] (see [`Pass::forwards_inline`]),
    /// delivered before the thread's `ThreadEnd`: account for them as
    /// [`Pass::access`] would have.
    fn inline_forwarded(&self, _t: &ThreadState, _local: &mut Local, _checks: &[InlineChecks]) {}

    /// True if this pass checks a property of thread-local accesses too, so that the
    /// accesses an earlier pass drops with [`Flow::Local`] must reach
    /// [`Pass::local_access`].
    fn checks_local(&self) -> bool {
        false
    }

    /// An access an earlier pass dropped with [`Flow::Local`] (only if
    /// [`Pass::checks_local`]): check it; it stays dropped, and it is not part of
    /// this pass's filtered stream (its counters and access statistics).
    fn local_access(&self, _t: &ThreadState, _local: &mut Local, _ev: &Event<'_>) {}

    /// Accesses to capsules' own fields ([`InlineDrops::capsule`]) that an earlier
    /// pass's inline test dropped as [`Flow::Local`] (only if
    /// [`Pass::checks_local`]): account for them as [`Pass::local_access`] would. The
    /// producer makes the test only when the checks would find nothing.
    fn inline_local_checked(&self, _t: &ThreadState, _local: &mut Local, _drops: &[InlineDrops]) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn lazy_frames_save_and_restore_the_words_of_each_recorded_call() {
        let f = LazyFrames::new();
        f.word.store(3, Relaxed);
        f.nested.store(0, Relaxed);
        assert!(f.push(0x1000, 7));
        // Nothing inline inside a recorded call.
        assert_eq!((f.word.load(Relaxed), f.nested.load(Relaxed)), (0, 0));
        // As the pass would leave them after taking the call, then another call.
        f.word.store(5, Relaxed);
        f.nested.store(0x1000, Relaxed);
        assert!(f.push(0x2000, 8));
        assert!(f.pending());
        assert!(f.pop());
        assert_eq!((f.word.load(Relaxed), f.nested.load(Relaxed)), (5, 0x1000));
        assert!(f.pop());
        assert_eq!((f.word.load(Relaxed), f.nested.load(Relaxed)), (3, 0));
        // None left: the producer delivers the `Exit`.
        assert!(!f.pop());
        assert!(!f.pending());
    }

    #[test]
    fn the_repeatable_call_is_disarmed_by_its_capsule_and_by_moved_frames() {
        let f = LazyFrames::new();
        let armed = |f: &LazyFrames| f.repeat.receiver.load(Relaxed);
        f.arm_repeat(0x1000, 0x7_0000_0005, 3);
        assert_eq!(armed(&f), 0x1000);
        // Another capsule's record changed: still armed.
        f.disarm_repeat_of(0x2000);
        assert_eq!(armed(&f), 0x1000);
        // The stack handed over again with the two frames below the call's as they
        // were (the call's own may differ): still armed; with one of them changed:
        // disarmed.
        f.frames_moved(2);
        f.frames_moved(5);
        assert_eq!(armed(&f), 0x1000);
        f.frames_moved(1);
        assert_eq!(armed(&f), 0);
        f.arm_repeat(0x1000, 0x7_0000_0005, 3);
        f.disarm_repeat_of(0x1000);
        assert_eq!(armed(&f), 0);
        f.arm_repeat(0x1000, 0x7_0000_0005, 1);
        f.frames_moved(0);
        assert_eq!(armed(&f), 0x1000, "a call at the bottom has no frame below");
        f.disarm_repeat();
        assert_eq!(armed(&f), 0);
    }

    #[test]
    fn lazy_frames_hand_their_calls_over_once_and_refuse_past_capacity() {
        let f = LazyFrames::new();
        for i in 0..LAZY_FRAMES as u64 {
            assert!(f.push(0x100 * (i + 1), i as u32));
        }
        assert!(!f.push(0xdead, 99), "no room: the `Enter` is delivered");
        let taken: Vec<_> = f.take().collect();
        assert_eq!(taken.len(), LAZY_FRAMES);
        assert_eq!(taken[0], (0, 0x100, 0));
        assert_eq!(
            taken[LAZY_FRAMES - 1],
            (LAZY_FRAMES - 1, 0x100 * LAZY_FRAMES as u64, 7)
        );
        assert_eq!(f.take().count(), 0);
        assert!(!f.pending());
    }

    #[test]
    fn taken_calls_end_as_the_pass_says_and_are_counted_for_it() {
        let f = LazyFrames::new();
        f.word.store(3, Relaxed);
        assert!(f.push(0x1000, 7));
        assert!(f.push(0x1000, 8));
        assert_eq!(f.take().count(), 2);
        // The pass's words after taking both, and what each call's `Exit` leaves:
        // the inner one must reach the pass.
        f.word.store(5, Relaxed);
        f.set_exit(0, 3, 0, true);
        f.set_exit(1, 9, 0x1000, false);
        assert!(!f.pop(), "the pass needs this `Exit`");
        assert_eq!(f.word.load(Relaxed), 5);
        f.drop_taken(1);
        // A call recorded above a taken one: ended as untaken, not counted.
        assert!(f.push(0x2000, 9));
        assert!(f.pending());
        assert!(f.pop());
        assert_eq!(f.word.load(Relaxed), 5);
        assert!(!f.has_popped());
        // The outer taken call: its `Exit`'s words, counted for the pass.
        assert!(f.pop());
        assert_eq!(f.word.load(Relaxed), 3);
        assert!(f.has_popped());
        assert_eq!(f.take_popped(), 1);
        assert_eq!(f.take_popped(), 0);
        assert!(!f.pop(), "none left");
    }

    #[test]
    fn lazy_frame_offsets_match_the_layout() {
        assert_eq!(LAZY_FRAME0 % 8, 0);
        assert_eq!(LAZY_FRAME_BYTES, 40);
        let f = LazyFrames::new();
        let base = &f as *const LazyFrames as usize;
        assert_eq!(
            &f.len as *const AtomicU64 as usize - base,
            LAZY_LEN as usize
        );
        let e = &f.frames[1].nested as *const AtomicU64 as usize - base;
        assert_eq!(
            e,
            (LAZY_FRAME0 + LAZY_FRAME_BYTES + LAZY_SAVED_NESTED) as usize
        );
    }
}
