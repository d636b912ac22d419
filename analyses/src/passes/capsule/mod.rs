//! `capsule`: capsule filtering by accessibility and capsule detection (Rhodes thesis
//! ch. 5, Figs. 5.6–5.9).
//!
//! # Filtering (Fig. 5.6)
//! G = the *capsule-shared* objects, accessible by more than one owner (a capsule or
//! a thread); one header bit per object ([`HeapView::mark_capsule_shared`], the VM's
//! bit 41). Accessibility is reachability that stops at capsules (Fig. 5.7's `leak`).
//! - `Read`/`Write` of a field of a capsule k by k itself (the executor, i.e. the
//!   innermost capsule call of the thread, has receiver k, and the running method is
//!   of k's class): a *capsule access*, filtered.
//! - `Read`/`Write` of a non-capsule p ∉ G: *capsule-protected*, filtered.
//! - p ∈ G, or a static: forwarded; a written reference leaks (accessible(v) joins G).
//! - `Enter` of a capsule method leaks the arguments, its `Exit` the return value,
//!   `Fork` the handed objects, a volatile write into p ∈ G or a static its value.
//! - synchronization events are never dropped.
//!
//! # Detection (§5.2.2, Figs. 5.8, 5.9)
//! - Encapsulation: an access (plain or volatile) to a field of a capsule k that is not
//!   a capsule access is a violation. Sites the compiler proved to be `this.f` inside
//!   the field's own class ([`crate::env::Env::capsule_access_proven`]) are capsule
//!   accesses without this check.
//! - Synchronization, checked lazily at the first access in a capsule call that relies
//!   on the capsule (a capsule access, or a capsule-protected access while k is the
//!   executor), so helper methods that touch no state may be unsynchronized: the
//!   capsule's single epoch must be "free" (no other thread inside) and its last exit
//!   `c@u` must happen before the thread's Java happens-before clock
//!   (`ThreadState::vc`, `c <= C_t[u]`). Then the thread is inside until that call
//!   exits, which records `C_t[t]@t`. Calls that accessed no state record nothing.
//!
//! # Calls that release a monitor
//! A thread that releases a monitor while inside a capsule call (typically `wait` in a
//! synchronized capsule method, a bounded buffer's `get`) leaves the capsule at that
//! point as if the call had exited — the release records `C_t[t]@t` as the last exit —
//! and the next state access of the call checks again. The property checked is the one
//! the filter relies on: the capsule's state accesses are totally ordered by
//! happens-before, segment after segment. The thesis's occupancy rule ("no other thread
//! inside") would report the waiting thread; splitting calls at releases never reports
//! more than it does, only the interleavings that are ordered through the monitor.
//!
//! A violation is a `capsule-violation` warning naming the class (`extra["class"]`),
//! the property (`extra["property"]`, and the message), the access and the earlier
//! operation it conflicts with. The violating access is forwarded unfiltered.
//!
//! # After a violation
//! A run with a violation is inconclusive (thesis §5.2.2): accesses filtered before it
//! on the strength of the broken property are gone and cannot be re-checked, so a race
//! with them may be missed. To keep the rest of the run as precise as possible the
//! class is demoted for the remainder of the run: its objects are no longer capsules
//! (their fields are checked, walks go through them), and each object of the class is
//! leaked when it is next accessed (it and what is accessible from it become
//! capsule-shared), because a demoted object and the objects it protected were never
//! in G. Filtering never invents a race: every race reported is real.
//! `capvm infer-capsules` demotes the class for the next run, which is then precise.
//!
//! # Concurrency
//! Per-thread: the frame stack ([`frames`]) and this thread's location records.
//! Shared: the G bit in the object header (atomic, marked before the store becomes
//! visible, as for `escape`), the class table (atomics; demotion is one store),
//! and per-capsule epochs ([`epochs`]), touched once per capsule call that accesses
//! state and once at its exit. Each has an owner, the thread inside it or the last
//! one inside until that thread publishes its clock: the owner's calls use plain
//! stores, another thread takes a free epoch with one compare-and-swap, and every
//! verdict is the thesis's (the module doc of [`epochs`] says why). A nested call on a
//! capsule that an outer call of the same thread holds does not touch them: the
//! thread is inside, which is all the check would find. The thread gives up the
//! epochs it owns at `Release`, `Fork`, volatile writes, `BarrierEnter` and
//! `ThreadEnd`, before the chain publishes its clock.
//!
//! # Inline decisions inside capsule calls
//! Generated code drops a capsule-protected access outside capsule calls by a
//! header test ([`InlineFilter::CapsuleProtected`]). Inside one, each thread's word
//! ([`Pass::inline_filter_word`]) says what the executor lets through, refreshed at
//! every `Enter`, `Exit`, release and successful check of this thread:
//! [`CAPSULE_WORD_DROP`] (no executor, or its call has been checked: a
//! capsule-protected access has nothing left to check), [`CAPSULE_WORD_FORWARD`] (no
//! executor: a capsule-shared access is forwarded with the thread as owner) and
//! [`CAPSULE_WORD_OWN`] (the innermost call is the checked executor: a proven
//! `this.f` is a capsule access). A demotion changes the executors of every thread,
//! so the pass's gate ([`Pass::inline_filter_gate`], the count of demotions, open
//! while 0) closes at the first one: from then on generated code delivers every
//! access made inside a capsule call. Only this thread's own events write its word.
//!
//! # Nested calls
//! A call on a capsule that an outer call of the thread holds is checked at its
//! `Enter` (its first state access would find the thread inside and change nothing
//! else), so its accesses are decided inline from the start. And when the innermost
//! frame is a checked call on capsule `k`, a call on `k` of a method that takes and
//! returns no reference and cannot acquire or release a monitor would push a frame
//! that changes no decision and pop it with no effect: the thread's nested-call word
//! ([`Pass::nested_call_word`]) holds `k`, and the producer skips both events of
//! such a call (`Random.next` inside `Random.nextGaussian`).
//!
//! # Recorded calls
//! A call on a capsule of a method that takes and returns no reference and is not
//! synchronized, `deterministic` or `atomic` need not reach the pass at its `Enter`:
//! the producer may record it in the thread's [`LazyFrames`] instead (receiver and
//! method; generated code does it inline), while no class has been demoted (the
//! gate, [`Pass::inline_filter_gate`], is 0). The record sets the thread's words to
//! 0, so generated code decides nothing inline in the call and delivers its
//! accesses; at the first event the pass receives, it pushes the recorded calls'
//! frames ([`Capsule::take_lazy`]), as their `Enter` would have: nothing reached it
//! in between, so the frames below are as they were at each call. A call that ends
//! before that (an outer `Random.nextDouble`, whose state accesses are in its
//! nested `next` calls) is popped by the producer, which restores the words saved
//! in its entry: a push and a pop with nothing between them leave the pass's state
//! as it was.
//!
//! A call the pass has taken may end without its `Exit` too. For each, the pass
//! keeps in its entry the words its `Exit` would leave (those of the frames below,
//! which change only at a `Release` while the call runs: the executor is the
//! innermost capsule call), and whether the producer may end it: always, unless the
//! call holds its capsule and the site and context of its `Exit` are unknown. They
//! are known when the check that made it the occupant ran in the call's own method
//! at the top of the stack: the `Exit` comes at the call's site, in that context.
//! The producer then restores the words and counts the call as ended;
//! [`Capsule::end_popped`] pops its frame at the pass's next event and records the
//! exit of a call that held its capsule, with the thread's clock, which only the
//! chain's services change, after an event. So the exit is recorded later than the
//! `Exit` would have recorded it, with nothing of this thread between. Until then
//! another thread sees the capsule occupied rather than exited; either way the
//! owner has published nothing since, so that thread's check fails as it would have
//! at a moment when the call was still running, and it reports the call's entry
//! instead of its exit. Under a seeded schedule, where that moment would differ
//! from a run with every `Exit`, the producer lets the pass end such calls before
//! another thread may run ([`Pass::flush_lazy`]). Every decision, warning and
//! statistic is that of delivered `Enter`/`Exit` events, but for those events'
//! counts; a debug build checks the `Exit` site and context the check predicted
//! against each delivered `Exit`.
//!
//! # Repeated calls
//! A thread that calls one capsule over and over between synchronizations (a
//! `Random` filling an array, `nextGaussian` in a Monte Carlo loop) would deliver
//! the first state access of every call for its check, which finds the thread the
//! owner of the capsule's epoch and changes nothing but the record's marks, to the
//! same values each time. So the check of a recorded call that made it the holder,
//! at the top of the stack, arms the thread's *repeatable call*
//! ([`crate::pass::RepeatCall`]: capsule, method and call site, depth), and a
//! producer may run a later call that repeats it — same capsule, same frame at the
//! same depth, no frame below it changed, of a method that makes no event but its
//! proven `this.f` accesses and whose first one has a single site — with the words
//! the check would set, as a recorded call the pass never takes. The pass state
//! after it is the one the check and the lazy end would leave: the same frames
//! pushed and popped, the same entry and exit marks, the same exit epoch (the
//! thread has published nothing since). What differs is only what another thread
//! may see during the call: the capsule exited rather than occupied, a violation
//! either way, reported with the exit instead of the entry (so producers repeat
//! nothing under a seeded schedule), and the events' counts (so producers that
//! count inline decisions for statistics repeat nothing either). The pass disarms
//! it at every other check or exit on that capsule by this thread and whenever the
//! thread publishes its clock; the producer disarms it when it hands over a stack
//! whose frames below the call's changed ([`crate::pass::LazyFrames::frames_moved`]).
//!
//! # Chaining with `escape`
//! Each filter must account for every reference write into a member of its own set.
//! `escape` forwards a reference write into a thread-local but capsule-shared target
//! (see its module doc); `capsule`, when it drops a reference write into an escaped
//! target (a capsule access, or a capsule-protected object reachable by several
//! threads), leaks the value in `escape`'s bit itself before dropping it — a no-op in
//! the default order `escape:capsule`, and what keeps `capsule:escape` precise. When
//! `capsule` runs after `escape`, the thread-local accesses `escape` drops do not reach
//! its filter, except the accesses to fields of capsule objects: `escape` drops them
//! as [`Flow::Local`] and this pass checks them in [`Pass::local_access`]
//! (encapsulation, and the synchronization check that opens the capsule call's
//! epoch), without counting them in its filter statistics; `local_checked` in its
//! statistics says how many there were. Other thread-local accesses cannot break the
//! capsule discipline: no other thread can reach those objects.
//!
//! Without a live heap (offline traces) the pass forwards every access; with a heap
//! that has no capsule bit it treats every non-capsule object as capsule-shared.

pub mod classes;
pub mod epochs;
pub mod frames;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::env::HeapView;
use crate::event::{Event, EventKind, Loc, MethodId, ObjId, Op, SiteId};
use crate::filterstats::{AccessClass, Owner, SiteTable};
use crate::pass::{
    CAPSULE_WORD_DROP, CAPSULE_WORD_FORWARD, CAPSULE_WORD_OWN, Flow, InlineCheckFlow, InlineChecks,
    InlineDrops, InlineFilter, LazyFrames, Local, Pass,
};
use crate::passes::escape::leak::{self, Bit};
use crate::passes::escape::loc_kind;
use crate::report::{AccessInfo, Warning, WarningKind};
use crate::shared::Shared;
use crate::thread::ThreadState;

use classes::{ClassTable, Status};
use epochs::{EpochTable, Mark, SyncError, ThreadEpochs};
use frames::{Frame, Frames};

/// Which capsule property broke.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Property {
    Encapsulation,
    Synchronization,
}

impl Property {
    pub fn as_str(self) -> &'static str {
        match self {
            Property::Encapsulation => "encapsulation",
            Property::Synchronization => "synchronization",
        }
    }
}

/// A plain access: where, the reference written (if any), read or write.
#[derive(Copy, Clone)]
struct Access {
    loc: Loc,
    value: Option<ObjId>,
    is_write: bool,
}

/// A broken property, as found: the class, which property, the earlier operation it
/// conflicts with (and how to name it), and the explanation.
struct Breach {
    class: u32,
    property: Property,
    earlier: Option<(Mark, &'static str)>,
    message: String,
}

/// One demotion of this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub class: u32,
    pub class_name: String,
    pub property: Property,
}

struct CapsuleLocal {
    frames: Frames,
    work: Vec<ObjId>,
    sites: SiteTable,
    /// Accesses received through [`Pass::local_access`].
    local_checked: u64,
    /// The thread's words and its recorded calls ([`Pass::lazy_frames`]; boxed:
    /// their addresses stay put). `word`, for the inline test
    /// ([`Pass::inline_filter_word`]), is what [`Capsule::ready_bits`] says of
    /// `frames`; `nested` ([`Pass::nested_call_word`]) is the capsule of the
    /// innermost frame when that is a capsule call that made its check. Both hold
    /// for `frames` and the recorded calls together: a recorded call sets them to 0.
    inline: Box<LazyFrames>,
    /// The thread's side of the capsules' epochs (its cache, what it owns).
    epochs: ThreadEpochs,
}

pub struct Capsule {
    shared: Arc<Shared>,
    classes: ClassTable,
    epochs: EpochTable,
    violations: Mutex<Vec<Violation>>,
    sites: Mutex<SiteTable>,
    /// [`CapsuleLocal::local_checked`] of the threads that have ended.
    local_checked: AtomicU64,
    /// Demotions so far ([`Pass::inline_filter_gate`]): once there is one, the
    /// threads' words no longer say what a call's executor is, and generated code
    /// delivers every access made inside a capsule call.
    demotions: AtomicU64,
}

fn local_of(local: &mut Local) -> Option<&mut CapsuleLocal> {
    local.downcast_mut::<CapsuleLocal>()
}

/// What the access does, for reports.
fn op_name(kind: &EventKind<'_>) -> &'static str {
    match kind {
        EventKind::Read { .. } => "read",
        EventKind::Write { .. } => "write",
        EventKind::VolatileRead { .. } => "volatile read",
        EventKind::VolatileWrite { .. } => "volatile write",
        _ => "access",
    }
}

impl Capsule {
    pub fn new(shared: &Arc<Shared>) -> Self {
        Capsule {
            shared: shared.clone(),
            classes: ClassTable::new(),
            epochs: EpochTable::new(),
            violations: Mutex::new(Vec::new()),
            sites: Mutex::new(SiteTable::new()),
            local_checked: AtomicU64::new(0),
            demotions: AtomicU64::new(0),
        }
    }

    /// The classes demoted in this run, with the property that broke (first one per
    /// class). `capvm infer-capsules` iterates on this.
    pub fn violations(&self) -> Vec<Violation> {
        self.violations.lock().clone()
    }

    /// Per-site records of the threads that have ended.
    pub fn site_table(&self) -> SiteTable {
        self.sites.lock().clone()
    }

    fn status(&self, class: u32) -> Status {
        self.classes.status(self.shared.env.as_ref(), class)
    }

    /// `obj` is a capsule: an object of a (not demoted) capsule class.
    fn is_capsule(&self, heap: &dyn HeapView, obj: ObjId) -> bool {
        heap.class_of(obj)
            .is_some_and(|c| self.status(c) == Status::Capsule)
    }

    /// p ∈ G (everything is, if the heap has no capsule bit).
    fn in_g(heap: &dyn HeapView, obj: ObjId) -> bool {
        !heap.has_capsule_bit() || heap.is_capsule_shared(obj) || heap.is_statics(obj)
    }

    /// Fig. 5.7: G := G ∪ accessible(roots).
    fn leak(&self, heap: &dyn HeapView, roots: &[ObjId], work: &mut Vec<ObjId>) {
        if !heap.has_capsule_bit() || roots.is_empty() {
            return;
        }
        let stop = |o: ObjId| heap.is_statics(o) || self.is_capsule(heap, o);
        leak::leak(heap, Bit::CapsuleShared, roots, &stop, work);
    }

    /// The executor's frame index (innermost call of a live capsule).
    fn executor(&self, l: &CapsuleLocal) -> Option<usize> {
        self.executor_below(l, l.frames.len())
    }

    /// The executor with only the outermost `n` frames on the stack.
    fn executor_below(&self, l: &CapsuleLocal, n: usize) -> Option<usize> {
        // While no class was demoted, every capsule call's class is a capsule class
        // (a frame gets its capsule only then): the innermost capsule call. A
        // demotion counts itself before it changes the class's status, so a thread
        // that sees the new status sees the count too.
        if self.demotions.load(Ordering::Acquire) == 0 {
            return l.frames.innermost_capsule_call_below(n);
        }
        l.frames
            .executor_below(n, |f| self.status(f.class) == Status::Capsule)
    }

    /// The thread's two words for the outermost `n` frames: the inline test's bits
    /// ([`InlineFilter::CapsuleProtected`]) and the nested-call word.
    ///
    /// Without an executor a capsule-protected access is dropped and a
    /// capsule-shared one forwarded with the thread as owner, nothing else; with one
    /// whose call has been checked a capsule-protected access is dropped, nothing
    /// else. A proven `this.f` runs in the innermost frame (a call on `this`); when
    /// that call is the executor and has been checked, the access is a capsule access
    /// with nothing left to check: [`CAPSULE_WORD_OWN`].
    ///
    /// A call on the innermost frame's capsule, when that frame is checked, would
    /// push a frame of the same class and capsule, checked (`Frames::held`: the
    /// innermost frame's check, or an outer call's hold, is still in force) and
    /// holding nothing: the decisions within it are the same with or without that
    /// frame (the innermost checked frame on `k` is the executor, or a demoted
    /// class's frames are skipped alike), and its `Exit` would pop it and leak nothing
    /// (no reference result). A release in the call would uncheck the frames; the
    /// producer elides only calls that cannot release. So the nested-call word is
    /// that capsule.
    fn words_below(&self, l: &CapsuleLocal, n: usize) -> (u64, u64) {
        let word = match self.executor_below(l, n) {
            None => CAPSULE_WORD_DROP | CAPSULE_WORD_FORWARD,
            Some(i) if l.frames.get(i).checked => {
                let own = i + 1 == n;
                CAPSULE_WORD_DROP | if own { CAPSULE_WORD_OWN } else { 0 }
            }
            Some(_) => 0,
        };
        let nested = match n.checked_sub(1).map(|i| l.frames.get(i)) {
            Some(f) if f.checked => f.capsule.map_or(0, |k| k.0),
            _ => 0,
        };
        (word, nested)
    }

    /// Store [`Capsule::words_below`] of all frames into the thread's words (only
    /// this thread reads them, from its generated code; a demotion by another thread
    /// closes the gate instead).
    fn refresh(&self, l: &CapsuleLocal) {
        let (word, nested) = self.words_below(l, l.frames.len());
        l.inline.word.store(word, Ordering::Relaxed);
        l.inline.nested.store(nested, Ordering::Relaxed);
    }

    /// For frame `i`, if the producer recorded its call: what the call's `Exit` would
    /// leave in the thread's words (those of the frames below it), and whether the
    /// producer may end it without that `Exit` (it holds nothing, or its `Exit`'s
    /// site and context are known: [`Capsule::end_popped`] ends it as the `Exit`
    /// would).
    fn set_exit(&self, l: &CapsuleLocal, i: usize) {
        let f = *l.frames.get(i);
        if let Some(e) = f.entry {
            let (word, nested) = self.words_below(l, i);
            let poppable = !f.holds || f.exit_at.is_some();
            l.inline.set_exit(usize::from(e), word, nested, poppable);
        }
    }

    /// End the frames of the recorded calls that the producer ended without their
    /// `Exit` ([`LazyFrames::take_popped`]), innermost first, as the `Exit` would
    /// have: pop the frame, and record the exit of a call that holds its capsule.
    /// Nothing reached this pass since those calls ended (this runs first at every
    /// event), so the thread's clock is still the one of their `Exit`; the words are
    /// what the producer restored from the entries ([`Capsule::set_exit`]).
    fn end_popped(&self, t: &ThreadState, l: &mut CapsuleLocal) {
        let n = l.inline.take_popped();
        for _ in 0..n {
            let Some(f) = l.frames.pop() else {
                debug_assert!(false, "a recorded call the producer ended has a frame");
                return;
            };
            debug_assert!(f.entry.is_some(), "the producer ends only recorded calls");
            if let (true, Some(k), Some((site, ctx))) = (f.holds, f.capsule, f.exit_at) {
                if !f.armed {
                    l.inline.disarm_repeat_of(k.0);
                }
                let at = Mark {
                    tid: t.tid,
                    site,
                    ctx,
                    event: 0,
                };
                self.epochs.exit(&mut l.epochs, k, t, at);
            }
        }
        if n != 0 && !l.inline.pending() {
            debug_assert_eq!(
                self.words_below(l, l.frames.len()),
                (
                    l.inline.word.load(Ordering::Relaxed),
                    l.inline.nested.load(Ordering::Relaxed)
                ),
                "the producer restored what the `Exit` would have left"
            );
        }
    }

    /// Catch up with the producer's recorded calls ([`LazyFrames`]): end the frames
    /// of those it ended ([`Capsule::end_popped`]), then push the frames of the calls
    /// recorded since, as their `Enter` would have pushed them: each is a call on a
    /// capsule, recorded while no class had been demoted (the gate was open), so its
    /// receiver was a live capsule then, and no event reached this pass since, so the
    /// frames below are as they were at each call. Its `Enter` carried no reference
    /// argument to leak.
    fn take_lazy(&self, t: &ThreadState, heap: &dyn HeapView, l: &mut CapsuleLocal) {
        self.end_popped(t, l);
        if !l.inline.pending() {
            return;
        }
        let from = l.frames.len();
        for (entry, receiver, method) in l.inline.take() {
            let k = ObjId(receiver);
            let checked = l.frames.held(k);
            l.frames.push(Frame {
                class: heap.method_class(MethodId(method)),
                method,
                capsule: Some(k),
                checked,
                holds: false,
                entry: Some(entry as u8),
                exit_at: None,
                armed: false,
            });
        }
        for i in from..l.frames.len() {
            self.set_exit(l, i);
        }
        self.refresh(l);
    }

    fn owner(&self, t: &ThreadState, l: &CapsuleLocal) -> Owner {
        match self.executor(l) {
            Some(i) => Owner::Capsule(l.frames.get(i).capsule.map_or(0, |k| k.0)),
            None => Owner::Thread(t.tid),
        }
    }

    /// The lazy synchronization check for the capsule call at frame `i`.
    fn sync_check(
        &self,
        t: &ThreadState,
        l: &mut CapsuleLocal,
        i: usize,
        ev: &Event<'_>,
    ) -> Result<(), SyncError> {
        let f = *l.frames.get(i);
        if f.checked {
            return Ok(());
        }
        let Some(k) = f.capsule else {
            return Ok(());
        };
        l.frames.get_mut(i).checked = true;
        // A nested call of a capsule an outer call holds: `enter` would find this
        // thread inside and answer `Ok(false)`.
        if !l.frames.held_outside(i, k) {
            let at = Mark {
                tid: t.tid,
                site: ev.site,
                ctx: t.ctx,
                event: ev.index,
            };
            let holds = self.epochs.enter(&mut l.epochs, k, t, at)?;
            // Where the call's `Exit` will come, if the access runs in the call's
            // own method at the top of the stack (a method of a capsule class there
            // has a frame, so it is this one): at the call's site, in this context
            // (online events carry no index).
            let exit_at = (holds && ev.index == 0 && l.frames.is_innermost(i))
                .then(|| t.top_frame())
                .flatten()
                .filter(|&(m, _)| m.0 == f.method)
                .map(|(_, site)| (site, t.ctx));
            // A call that now holds its capsule, recorded and at the top of the
            // stack, is one the producer may repeat (`crate::pass::RepeatCall`);
            // any other change of the capsule's record makes the repeat stale.
            let armed = holds && f.entry.is_some() && exit_at.is_some();
            if let (true, Some((site, _))) = (armed, exit_at) {
                let frame = crate::ctx::pack_frame(MethodId(f.method), site);
                l.inline.arm_repeat(k.0, frame, t.frame_depth());
            } else if holds {
                l.inline.disarm_repeat_of(k.0);
            }
            let g = l.frames.get_mut(i);
            g.holds = holds;
            g.exit_at = exit_at;
            g.armed = armed;
            // The frames below are as they were: only whether the producer may end
            // the call changes.
            if let Some(e) = g.entry {
                let poppable = !holds || exit_at.is_some();
                l.inline.set_poppable(usize::from(e), poppable);
            }
        }
        self.refresh(l);
        Ok(())
    }

    /// The thread is about to publish its clock: it gives up the capsules' epochs it
    /// owns and is not inside ([`EpochTable::publish`]), so no call of it can be
    /// repeated unchecked any more.
    fn publish(&self, t: &ThreadState, l: &mut CapsuleLocal) {
        l.inline.disarm_repeat();
        self.epochs.publish(&mut l.epochs, t);
    }

    /// Report a violation (once per class) and demote the class.
    fn violation(&self, t: &ThreadState, ev: &Event<'_>, loc: Loc, b: Breach) {
        let Breach {
            class,
            property,
            earlier,
            message,
        } = b;
        // Executors change in every thread: close the inline test's gate, before the
        // class's status changes (`executor` relies on the order; a class demoted
        // twice closes it once more, which only keeps it closed).
        self.demotions.fetch_add(1, Ordering::Release);
        if !self.classes.demote(class) {
            return;
        }
        let env = self.shared.env.as_ref();
        let class_name = env.class_name(class);
        let mut w = Warning::new(WarningKind::CapsuleViolation, "capsule");
        w.loc = Some(loc);
        let event = (ev.index != 0).then_some(ev.index);
        if let Some((m, op)) = earlier {
            w.accesses.push(AccessInfo {
                tid: m.tid,
                op: op.to_string(),
                site: m.site,
                ctx: m.ctx,
                event: (m.event != 0).then_some(m.event),
            });
        }
        w.accesses.push(AccessInfo {
            tid: t.tid,
            op: op_name(&ev.kind).to_string(),
            site: ev.site,
            ctx: t.ctx,
            event,
        });
        w.event = event;
        w.message = format!("{}: {message}", property.as_str());
        w.extra.insert("class".into(), class_name.clone().into());
        w.extra.insert("property".into(), property.as_str().into());
        self.shared.reporter.report(w);
        self.violations.lock().push(Violation {
            class,
            class_name,
            property,
        });
    }

    fn sync_violation(
        &self,
        t: &ThreadState,
        ev: &Event<'_>,
        loc: Loc,
        class: u32,
        err: SyncError,
    ) {
        let name = self.shared.env.class_name(class);
        let (earlier, message) = match err {
            SyncError::Occupied(m) => (
                (m, "inside"),
                format!(
                    "thread T{} accesses the state of a `{name}` capsule while thread T{} is inside it",
                    t.tid, m.tid
                ),
            ),
            SyncError::Unordered(m) => (
                (m, "exit"),
                format!(
                    "the last exit of thread T{} from a `{name}` capsule does not happen before thread T{} enters it",
                    m.tid, t.tid
                ),
            ),
        };
        let b = Breach {
            class,
            property: Property::Synchronization,
            earlier: Some(earlier),
            message,
        };
        self.violation(t, ev, loc, b);
    }

    /// The executor's frame index if an access at `site` to a field of capsule `k` of
    /// class `c` is a capsule access. A site the compiler proved (`this.f` in a method
    /// of c, [`crate::env::Env::capsule_access_proven`]) skips the dynamic check: its
    /// executor is the running call on k.
    fn capsule_access(
        &self,
        heap: &dyn HeapView,
        t: &ThreadState,
        l: &CapsuleLocal,
        site: SiteId,
        k: ObjId,
        c: u32,
    ) -> Option<usize> {
        if self.shared.env.capsule_access_proven(site)
            && let Some(i) = self.executor(l)
        {
            return Some(i);
        }
        self.is_capsule_access(heap, t, l, k, c)
    }

    /// Encapsulation check for an access to a field of capsule `k` of class `c`: true
    /// if it is a capsule access (the executor is k, running code of class c).
    fn is_capsule_access(
        &self,
        heap: &dyn HeapView,
        t: &ThreadState,
        l: &CapsuleLocal,
        k: ObjId,
        c: u32,
    ) -> Option<usize> {
        let i = self.executor(l)?;
        let ok =
            l.frames.get(i).capsule == Some(k) && t.method.map(|m| heap.method_class(m)) == Some(c);
        ok.then_some(i)
    }

    fn encapsulation_violation(
        &self,
        t: &ThreadState,
        mine: &mut ThreadEpochs,
        ev: &Event<'_>,
        loc: Loc,
        class: u32,
    ) {
        let env = self.shared.env.as_ref();
        let name = env.class_name(class);
        let by = match t.method {
            Some(m) => format!("code of `{}`", env.method_name(m)),
            None => "code outside any method".to_string(),
        };
        let message = format!(
            "a field of a `{name}` capsule is accessed by {by}, not by a method of `{name}` running on that object"
        );
        let earlier = self.epochs.last_entry(mine, loc.obj).map(|m| (m, "inside"));
        let b = Breach {
            class,
            property: Property::Encapsulation,
            earlier,
            message,
        };
        self.violation(t, ev, loc, b);
    }

    /// Forward a shared access: a written reference leaks.
    fn shared_access(
        &self,
        heap: &dyn HeapView,
        t: &ThreadState,
        l: &mut CapsuleLocal,
        ev: &Event<'_>,
        a: Access,
    ) -> Flow {
        let Access {
            loc,
            value,
            is_write,
        } = a;
        if let Some(v) = value {
            self.leak(heap, &[v], &mut l.work);
        }
        let owner = self.owner(t, l);
        l.sites.record(
            ev.site,
            loc,
            || loc_kind(heap, loc),
            AccessClass::Shared,
            owner,
            is_write,
        );
        Flow::Forward
    }

    /// Drop a filtered access (capsule or capsule-protected). A reference written into
    /// an escaped object is first leaked in `escape`'s bit, on behalf of an `escape`
    /// pass later in the chain that will not see this write (a no-op when `escape`
    /// ran first: it already leaked it).
    fn filtered(
        heap: &dyn HeapView,
        loc: Loc,
        value: Option<ObjId>,
        work: &mut Vec<ObjId>,
    ) -> Flow {
        if let Some(v) = value
            && heap.is_shared(loc.obj)
        {
            crate::passes::escape::Escape::leak(heap, &[v], work);
        }
        Flow::Drop
    }
}

impl Pass for Capsule {
    fn name(&self) -> &'static str {
        "capsule"
    }

    fn thread_local(&self) -> Box<Local> {
        let l = CapsuleLocal {
            frames: Frames::default(),
            work: Vec::new(),
            sites: SiteTable::new(),
            local_checked: 0,
            inline: Box::new(LazyFrames::new()),
            epochs: ThreadEpochs::default(),
        };
        self.refresh(&l);
        Box::new(l)
    }

    fn inline_filter_word<'a>(&self, local: &'a Local) -> Option<&'a AtomicU64> {
        Some(&local.downcast_ref::<CapsuleLocal>()?.inline.word)
    }

    fn inline_filter_gate(&self) -> Option<&AtomicU64> {
        Some(&self.demotions)
    }

    fn nested_call_word<'a>(&self, local: &'a Local) -> Option<&'a AtomicU64> {
        Some(&local.downcast_ref::<CapsuleLocal>()?.inline.nested)
    }

    fn lazy_frames<'a>(&self, local: &'a Local) -> Option<&'a LazyFrames> {
        Some(&local.downcast_ref::<CapsuleLocal>()?.inline)
    }

    /// Every capsule method the producer offers: [`Capsule::take_lazy`] pushes its
    /// frame as its `Enter` would, at the next event this pass receives, and a call
    /// that ends before one is a push and a pop with nothing between them; one that
    /// ends after, without its `Exit`, is ended by [`Capsule::end_popped`].
    fn lazy_frames_of(&self, method: MethodId) -> bool {
        self.wants_frames_of(method)
    }

    fn flush_lazy(&self, t: &ThreadState, local: &mut Local) {
        if let Some(l) = local_of(local) {
            self.end_popped(t, l);
        }
    }

    /// Only the calls of capsule classes' methods make frames; the running method
    /// (whose class the encapsulation check compares) is `ThreadState::method`.
    fn wants_frames(&self) -> bool {
        false
    }

    fn wants_frames_of(&self, method: MethodId) -> bool {
        let env = self.shared.env.as_ref();
        env.heap()
            .is_some_and(|h| env.is_capsule_class(h.method_class(method)))
    }

    fn access(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) -> Flow {
        let Some(heap) = self.shared.env.heap() else {
            return Flow::Forward;
        };
        let Some(l) = local_of(local) else {
            return Flow::Forward;
        };
        self.take_lazy(t, heap, l);
        let Some((loc, op, value)) = ev.kind.plain_access() else {
            return Flow::Forward;
        };
        let is_write = op == Op::Write;
        let acc = Access {
            loc,
            value,
            is_write,
        };
        let obj = loc.obj;
        if heap.is_statics(obj) {
            return self.shared_access(heap, t, l, ev, acc);
        }
        if let Some(c) = heap.class_of(obj) {
            match self.status(c) {
                Status::Capsule => {
                    match self.capsule_access(heap, t, l, ev.site, obj, c) {
                        Some(i) => match self.sync_check(t, l, i, ev) {
                            Ok(()) => {
                                l.sites.record(
                                    ev.site,
                                    loc,
                                    || loc_kind(heap, loc),
                                    AccessClass::Capsule,
                                    Owner::Capsule(obj.0),
                                    is_write,
                                );
                                return Self::filtered(heap, loc, value, &mut l.work);
                            }
                            Err(e) => self.sync_violation(t, ev, loc, c, e),
                        },
                        None => self.encapsulation_violation(t, &mut l.epochs, ev, loc, c),
                    }
                    // Demoted now: the object joins G with what it protected.
                    self.leak(heap, &[obj], &mut l.work);
                    return self.shared_access(heap, t, l, ev, acc);
                }
                Status::Demoted if !Self::in_g(heap, obj) => {
                    self.leak(heap, &[obj], &mut l.work);
                }
                _ => {}
            }
        }
        if Self::in_g(heap, obj) {
            return self.shared_access(heap, t, l, ev, acc);
        }
        // Capsule-protected; the executor's call relies on its capsule's ordering.
        if let Some(i) = self.executor(l)
            && let Err(e) = self.sync_check(t, l, i, ev)
        {
            let f = *l.frames.get(i);
            if let Some(k) = f.capsule {
                self.sync_violation(t, ev, loc, f.class, e);
                self.leak(heap, &[k], &mut l.work);
                // `obj` was accessible from k or from the call: it joins G.
                self.leak(heap, &[obj], &mut l.work);
            }
            return self.shared_access(heap, t, l, ev, acc);
        }
        let owner = self.owner(t, l);
        l.sites.record(
            ev.site,
            loc,
            || loc_kind(heap, loc),
            AccessClass::Local,
            owner,
            is_write,
        );
        Self::filtered(heap, loc, value, &mut l.work)
    }

    fn event(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) {
        let Some(heap) = self.shared.env.heap() else {
            return;
        };
        let Some(l) = local_of(local) else {
            return;
        };
        self.take_lazy(t, heap, l);
        match ev.kind {
            EventKind::Enter {
                method,
                receiver,
                args,
            } => {
                let class = heap.method_class(method);
                let capsule = receiver.filter(|r| {
                    heap.class_of(*r) == Some(class) && self.status(class) == Status::Capsule
                });
                // A call on a capsule that an outer call of this thread holds has its
                // synchronization check made at once: at its first state access the
                // check would find the thread inside and change nothing else (a
                // release before then unchecks every frame, this one too). So its
                // accesses are decided inline from the start (`ready_bits`).
                let checked = capsule.is_some_and(|k| l.frames.held(k));
                l.frames.push(Frame {
                    class,
                    method: method.0,
                    capsule,
                    checked,
                    holds: false,
                    entry: None,
                    exit_at: None,
                    armed: false,
                });
                self.refresh(l);
                // [CE-ENTER]: the arguments become accessible to the capsule.
                if capsule.is_some() {
                    self.leak(heap, args, &mut l.work);
                }
            }
            EventKind::Exit { ret, .. } => {
                let f = l.frames.pop();
                if let Some(e) = f.and_then(|f| f.entry) {
                    // A recorded call the producer could not end itself.
                    l.inline.drop_taken(usize::from(e));
                }
                self.refresh(l);
                if let Some(f) = f
                    && let Some(k) = f.capsule
                {
                    if f.holds {
                        if !f.armed {
                            l.inline.disarm_repeat_of(k.0);
                        }
                        let at = Mark {
                            tid: t.tid,
                            site: ev.site,
                            ctx: t.ctx,
                            event: ev.index,
                        };
                        debug_assert!(
                            f.exit_at.is_none_or(|x| x == (at.site, at.ctx)),
                            "the `Exit` comes where its check said: {:?} against {at:?}",
                            f.exit_at
                        );
                        self.epochs.exit(&mut l.epochs, k, t, at);
                    }
                    // [CE-EXIT]: the return value leaves the capsule.
                    if let Some(r) = ret {
                        self.leak(heap, &[r], &mut l.work);
                    }
                }
            }
            // [CE-FORK]
            EventKind::Fork { handed, .. } => {
                self.publish(t, l);
                self.leak(heap, handed, &mut l.work);
            }
            // A monitor released inside a capsule call (`wait`, the end of a
            // `synchronized` block) ends a segment of the call: see "Calls that release
            // a monitor".
            EventKind::Release { .. } => {
                let at = Mark {
                    tid: t.tid,
                    site: ev.site,
                    ctx: t.ctx,
                    event: ev.index,
                };
                for f in l.frames.capsule_calls_mut() {
                    if let (true, Some(k)) = (f.holds, f.capsule) {
                        self.epochs.exit(&mut l.epochs, k, t, at);
                    }
                    f.holds = false;
                    f.checked = false;
                    f.exit_at = None;
                }
                // Every recorded call's `Exit` now leaves other words.
                for i in 0..l.frames.len() {
                    self.set_exit(l, i);
                }
                self.publish(t, l);
                self.refresh(l);
            }
            EventKind::VolatileRead { loc } | EventKind::VolatileWrite { loc, .. } => {
                if let Some(c) = heap.class_of(loc.obj)
                    && self.status(c) == Status::Capsule
                    && self
                        .capsule_access(heap, t, l, ev.site, loc.obj, c)
                        .is_none()
                {
                    self.encapsulation_violation(t, &mut l.epochs, ev, loc, c);
                    self.leak(heap, &[loc.obj], &mut l.work);
                }
                if let EventKind::VolatileWrite { value, .. } = ev.kind {
                    self.publish(t, l);
                    if let Some(v) = value
                        && Self::in_g(heap, loc.obj)
                    {
                        self.leak(heap, &[v], &mut l.work);
                    }
                }
            }
            EventKind::Alloc { obj } if self.is_capsule(heap, obj) => {
                l.inline.disarm_repeat_of(obj.0);
                self.epochs.reset(&mut l.epochs, obj)
            }
            EventKind::BarrierEnter { .. } => self.publish(t, l),
            EventKind::ThreadEnd => {
                self.publish(t, l);
                self.sites.lock().absorb(&mut l.sites);
                let n = std::mem::take(&mut l.local_checked);
                self.local_checked.fetch_add(n, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    fn checks_local(&self) -> bool {
        true
    }

    /// [`Pass::access`] forwards every check: BigFoot's checks are no accesses of
    /// the capsule discipline or of the filter's categories.
    fn inline_check_flow(&self) -> Option<InlineCheckFlow> {
        Some(InlineCheckFlow::Forward)
    }

    /// The drop decision of [`Pass::access`] for a capsule-protected access outside
    /// every capsule call: no executor, so no synchronization check and the owner is
    /// the thread; its only other effect is the `Local` site record that
    /// [`Pass::inline_dropped`] repeats. Objects of capsule classes (live or demoted)
    /// and reference writes into escaped objects are never in the test.
    fn inline_filter(&self) -> Option<InlineFilter> {
        let heap = self.shared.env.heap()?;
        heap.has_capsule_bit()
            .then_some(InlineFilter::CapsuleProtected)
    }

    fn inline_dropped(&self, _t: &ThreadState, local: &mut Local, drops: &[InlineDrops]) {
        let (Some(heap), Some(l)) = (self.shared.env.heap(), local_of(local)) else {
            return;
        };
        l.sites
            .record_inline_drops(drops, |loc| loc_kind(heap, loc), true);
    }

    /// Capsule accesses `escape` dropped inline as thread-local: [`Pass::local_access`]
    /// counts them and its checks find nothing (the producer tested that).
    fn inline_local_checked(&self, _t: &ThreadState, local: &mut Local, drops: &[InlineDrops]) {
        if let Some(l) = local_of(local) {
            l.local_checked += drops.iter().map(|d| d.reads + d.writes).sum::<u64>();
        }
    }

    /// An access to p ∈ G outside every capsule call, other than a reference write,
    /// is forwarded after recording its site as shared by the thread, nothing else.
    fn forwards_inline(&self) -> bool {
        true
    }

    fn inline_forwarded(&self, t: &ThreadState, local: &mut Local, checks: &[InlineChecks]) {
        let (Some(heap), Some(l)) = (self.shared.env.heap(), local_of(local)) else {
            return;
        };
        l.sites
            .record_inline_forwarded(checks, Owner::Thread(t.tid), |loc| loc_kind(heap, loc));
    }

    /// A thread-local access to a capsule's field, dropped by `escape`: the checks of
    /// [`Pass::access`] for a capsule's field (and the leak of a demoted object), with
    /// no filter statistics. A violating access is not forwarded (no later detector
    /// could race on a thread-local object).
    fn local_access(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) {
        let Some(heap) = self.shared.env.heap() else {
            return;
        };
        let Some(l) = local_of(local) else {
            return;
        };
        self.take_lazy(t, heap, l);
        let Some((loc, _, value)) = ev.kind.plain_access() else {
            return;
        };
        let obj = loc.obj;
        let Some(c) = heap.class_of(obj) else {
            return;
        };
        l.local_checked += 1;
        match self.status(c) {
            Status::Capsule => {
                match self.capsule_access(heap, t, l, ev.site, obj, c) {
                    Some(i) => match self.sync_check(t, l, i, ev) {
                        Ok(()) => return,
                        Err(e) => self.sync_violation(t, ev, loc, c, e),
                    },
                    None => self.encapsulation_violation(t, &mut l.epochs, ev, loc, c),
                }
                // Demoted now, as in `access`: the object joins G with what it
                // protected, and a written reference leaks.
                self.leak(heap, &[obj], &mut l.work);
                if let Some(v) = value {
                    self.leak(heap, &[v], &mut l.work);
                }
            }
            Status::Demoted => {
                // As in `access`: joins G when next accessed; a written reference
                // leaks into G with it.
                if !Self::in_g(heap, obj) {
                    self.leak(heap, &[obj], &mut l.work);
                }
                if let Some(v) = value {
                    self.leak(heap, &[v], &mut l.work);
                }
            }
            Status::Plain => {}
        }
    }

    fn stats(&self) -> Option<serde_json::Value> {
        let heap = self.shared.env.heap()?;
        let stats = self.sites.lock().stats(self.shared.env.as_ref(), false);
        let mut v = serde_json::to_value(stats).ok()?;
        let violations: Vec<serde_json::Value> = self
            .violations
            .lock()
            .iter()
            .map(|x| serde_json::json!({"class": x.class_name, "property": x.property.as_str()}))
            .collect();
        v["violations"] = violations.into();
        v["local_checked"] = self.local_checked.load(Ordering::Relaxed).into();
        v["mode"] = if heap.has_capsule_bit() {
            "accessibility"
        } else {
            "capsule accesses only (heap has no capsule bit)"
        }
        .into();
        Some(v)
    }
}
