//! The runtime operations both tiers perform the same way: allocation (`new C`,
//! `new T[…]`, `new Barrier`), monitors, `wait`/`notify`, barriers, `fork`, `join`
//! and `print`. The interpreter (`crate::interp`) and the JIT's runtime functions
//! (`crate::jit::runtime_fns`) each describe their executing thread as a [`Guest`]
//! and call these, so the two tiers share every check, scheduling point, event and
//! error message of these instructions by construction.
//!
//! A failing operation records its runtime error (with the tier's CapJava stack) and
//! returns `Err(Stop)`; the tier then unwinds its own way.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use analyses::{EventKind, Loc, MethodId, ObjId, Spec as ASpec};
use lang::ir::{ClassId, FieldRef, FuncId, FuncKind, Local, PrintArg, Program, Repr, SiteId, Type};

use crate::Tid;
use crate::bridge::ref_value;
use crate::error::{ErrorKind, RuntimeError, StackFrame};
use crate::heap::{self, Arena, HeapFull};
use crate::hook::Hook;
use crate::image::{Image, const_bits};
use crate::jfmt::double_to_string;
use crate::layout::{self, Kind};
use crate::runtime::Runtime;
use crate::sched::Stop;
use crate::sync;

/// What [`Guest::enter_method`] returns for a call whose `Enter` it did not deliver
/// ([`Hook::elides_frames`]), so that [`Guest::leave_method`] delivers no `Exit` (no
/// monitor is at an odd address).
pub const ELIDED_FRAME: u64 = 1;

/// What [`Guest::enter_method`] returns for a call it recorded in the thread's lazy
/// frames instead of delivering its `Enter` ([`Hook::push_lazy_frame`]):
/// [`Guest::leave_method`] then ends it with [`Hook::pop_lazy_frame`], or delivers
/// its `Exit` if the chain has taken the frame since.
pub const LAZY_FRAME: u64 = 3;

/// The executing guest thread, as the shared operations see it.
pub struct Guest<'a> {
    pub rt: &'a Arc<Runtime>,
    pub tid: Tid,
    /// `--sched seeded`: scheduling points yield.
    pub seeded: bool,
    pub arena: &'a mut Arena,
    /// The thread's hook to the analysis chain.
    pub hook: &'a mut Hook,
    /// The CapJava stack at `site` of the innermost frame (for errors and for the
    /// deadlock report of a blocked thread).
    pub stack: &'a dyn Fn(SiteId) -> Vec<StackFrame>,
}

/// Record runtime error `kind` of thread `tid` at `site` (with its CapJava `stack`)
/// and stop the program.
pub fn fail(
    rt: &Runtime,
    tid: Tid,
    kind: ErrorKind,
    detail: String,
    site: SiteId,
    stack: Vec<StackFrame>,
) -> Stop {
    rt.sched.fail(RuntimeError {
        kind,
        detail,
        tid,
        site,
        stack,
        notes: Vec::new(),
    })
}

/// The message of a Rust panic caught at a thread's or a runtime call's boundary.
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// The frame of every guest OS thread, on either tier: wait for the scheduler to
/// start thread `tid` (forked at `site`), run `body`, and tell the scheduler the
/// thread finished. A panic in `body` (a VM bug) stops the program with the
/// `Internal` runtime error (no CapJava stack: the thread's state is not trusted any
/// more), then `on_panic` runs.
pub fn thread_main(
    rt: Arc<Runtime>,
    tid: Tid,
    site: SiteId,
    body: impl FnOnce(Arc<Runtime>),
    on_panic: impl FnOnce(),
) {
    let rt2 = rt.clone();
    let run = AssertUnwindSafe(move || {
        if rt.sched.start(tid).is_ok() {
            body(rt);
        }
    });
    if let Err(panic) = catch_unwind(run) {
        let detail = panic_message(&*panic);
        fail(&rt2, tid, ErrorKind::Internal, detail, site, Vec::new());
        on_panic();
    }
    rt2.sched.finish(tid);
}

/// The null-dereference message of reading (or writing) `field` on null.
pub fn null_field(prog: &Program, field: FieldRef, writing: bool) -> String {
    let verb = if writing { "writing" } else { "reading" };
    let name = &prog.field(field).name;
    format!("{verb} field {}.{name}", prog.class(field.class).name)
}

/// The `Write` event of element `i` of array `a` storing `v`; whether `v` is a
/// reference comes from the array's type.
pub fn element_write(img: &Image, a: u64, i: u64, v: u64) -> EventKind<'static> {
    let is_ref = img
        .elem_is_ref
        .get(heap::type_id(a) as usize)
        .copied()
        .unwrap_or(false);
    EventKind::Write {
        loc: Loc {
            obj: ObjId(a),
            slot: i as u32,
        },
        value: ref_value(is_ref, v),
    }
}

/// What a BigFoot check instruction checks, with its operands' values (both tiers
/// build the same events from it: [`emit_check`]).
#[derive(Copy, Clone, Debug)]
pub enum CheckOf {
    /// One shadow group of the object `obj`: the representative slot and the mask.
    Group { obj: u64, rep: u32, mask: u64 },
    /// The static field with this index.
    Static { index: u32 },
    /// Element `index` of the array `arr` (none if outside it).
    Element { arr: u64, index: i64 },
    /// Elements `lo..hi:step` of the array `arr` (clamped to the array).
    Range {
        arr: u64,
        lo: i64,
        hi: i64,
        step: u32,
    },
}

/// The checks of one [`lang::ir::Inst::Check`] (one per field group), with the values
/// of its locals from `val` (the interpreter; the JIT passes its values itself).
pub fn check_targets(
    target: &lang::ir::CheckTarget,
    val: impl Fn(Local) -> u64,
    mut f: impl FnMut(CheckOf),
) {
    use lang::ir::CheckTarget as T;
    match target {
        T::Fields { obj, groups, .. } => {
            let o = val(*obj);
            for (rep, mask) in groups {
                f(CheckOf::Group {
                    obj: o,
                    rep: *rep,
                    mask: *mask,
                });
            }
        }
        T::Static { field } => f(CheckOf::Static { index: field.0 }),
        T::Range { arr, lo, hi, step } => f(CheckOf::Range {
            arr: val(*arr),
            lo: val(*lo) as i64,
            hi: val(*hi) as i64,
            step: *step,
        }),
        T::Elem { arr, index } => f(CheckOf::Element {
            arr: val(*arr),
            index: val(*index) as i64,
        }),
    }
}

/// Deliver the `Check` event of one BigFoot check (nothing for a null object or an
/// empty range: a placed check always follows a successful access, so that does not
/// happen, but a check must never fail).
pub fn emit_check(hook: &mut Hook, img: &Image, what: CheckOf, write: bool, site: SiteId) {
    use analyses::event::CheckSpan;
    let op = if write {
        analyses::Op::Write
    } else {
        analyses::Op::Read
    };
    let (loc, span) = match what {
        CheckOf::Group { obj, rep, mask } => {
            if obj == 0 {
                return;
            }
            let span = if mask.count_ones() > 1 {
                CheckSpan::Fields(mask)
            } else {
                CheckSpan::One
            };
            (
                Loc {
                    obj: ObjId(obj),
                    slot: rep,
                },
                span,
            )
        }
        CheckOf::Static { index } => (
            Loc {
                obj: ObjId(img.statics),
                slot: index,
            },
            CheckSpan::One,
        ),
        CheckOf::Element { arr, index } => {
            if arr == 0 {
                return;
            }
            let len = heap::array_len(arr).min(u32::MAX as u64) as i64;
            if !(0..len).contains(&index) {
                return;
            }
            (
                Loc {
                    obj: ObjId(arr),
                    slot: index as u32,
                },
                CheckSpan::Element { len: len as u32 },
            )
        }
        CheckOf::Range { arr, lo, hi, step } => {
            if arr == 0 {
                return;
            }
            let len = heap::array_len(arr).min(u32::MAX as u64) as i64;
            let (lo, hi) = (lo.max(0), hi.min(len));
            if lo >= hi {
                return;
            }
            (
                Loc {
                    obj: ObjId(arr),
                    slot: lo as u32,
                },
                CheckSpan::Range {
                    hi: hi as u32,
                    step: step.max(1),
                    len: len as u32,
                },
            )
        }
    };
    hook.emit(site, EventKind::Check { loc, op, span });
}

impl Guest<'_> {
    /// Record a runtime error at `site` of the innermost frame and stop.
    pub fn fail(&self, kind: ErrorKind, detail: String, site: SiteId) -> Stop {
        fail(self.rt, self.tid, kind, detail, site, (self.stack)(site))
    }

    pub fn null(&self, what: &str, site: SiteId) -> Stop {
        self.fail(ErrorKind::NullDereference, what.to_string(), site)
    }

    /// The heap limit was hit allocating `words` words (None: too many to count).
    pub fn heap_full(&self, site: SiteId, words: Option<usize>) -> Stop {
        let h = &self.rt.image.heap;
        let what = match words.and_then(|w| w.checked_mul(layout::WORD)) {
            Some(b) => format!("cannot allocate {b} bytes"),
            None => "cannot allocate an array that large".to_string(),
        };
        let detail = format!("{what} ({} of {} bytes in use)", h.used(), h.limit());
        self.fail(ErrorKind::HeapLimit, detail, site)
    }

    /// A scheduling point.
    #[inline]
    pub fn point(&mut self) -> Result<(), Stop> {
        if self.seeded {
            self.hook.flush_lazy();
        }
        self.rt.sched.point(self.tid, self.seeded)
    }

    /// Deliver an event if a chain is active.
    #[inline]
    pub fn emit(&mut self, site: SiteId, kind: EventKind<'_>) {
        self.hook.emit(site, kind);
    }

    /// `new C`: scheduling point, allocation, constant field initialisers, `Alloc`.
    pub fn new_object(&mut self, class: ClassId, site: SiteId) -> Result<u64, Stop> {
        self.point()?;
        let rt = self.rt;
        let c = rt.image.program.class(class);
        let words = layout::FIELD0 + c.fields.len();
        let o = rt
            .image
            .heap
            .alloc(self.arena, words, Kind::Object, class.0, true)
            .map_err(|_| self.heap_full(site, Some(words)))?;
        for (i, f) in c.fields.iter().enumerate() {
            if let Some(k) = f.init {
                heap::store(o, layout::FIELD0 + i, const_bits(k));
            }
        }
        self.emit(site, EventKind::Alloc { obj: ObjId(o) });
        Ok(o)
    }

    /// `new T[d0][d1]…` (`elem`: the element type of the outermost array): the
    /// negative-size check, a scheduling point, then every array, outermost first,
    /// each with its `Alloc`.
    pub fn new_array(&mut self, elem: &Type, dims: &[i64], site: SiteId) -> Result<u64, Stop> {
        if let Some(n) = dims.iter().find(|n| **n < 0) {
            return Err(self.fail(ErrorKind::NegativeArraySize, n.to_string(), site));
        }
        self.point()?;
        self.alloc_array(elem, dims, site)
    }

    fn alloc_array(&mut self, elem: &Type, dims: &[i64], site: SiteId) -> Result<u64, Stop> {
        let rt = self.rt;
        let img = &rt.image;
        let id = img.array_type_id(&Type::Array(Box::new(elem.clone())));
        let len = dims[0] as u64;
        let words = usize::try_from(len)
            .ok()
            .and_then(|n| n.checked_add(layout::ARRAY_DATA));
        let a = match words {
            Some(w) => img.heap.alloc(self.arena, w, Kind::Array, id, true),
            None => Err(HeapFull),
        };
        let a = a.map_err(|_| self.heap_full(site, words))?;
        heap::store(a, layout::ARRAY_LEN, len);
        self.emit(site, EventKind::Alloc { obj: ObjId(a) });
        if dims.len() > 1
            && let Type::Array(inner) = elem
        {
            for i in 0..len as usize {
                let sub = self.alloc_array(inner, &dims[1..], site)?;
                heap::store(a, layout::ARRAY_DATA + i, sub);
            }
        }
        Ok(a)
    }

    /// `new Barrier(n)`.
    pub fn new_barrier(&mut self, n: i64, site: SiteId) -> Result<u64, Stop> {
        if n < 1 || n > u32::MAX as i64 {
            return Err(self.fail(ErrorKind::IllegalBarrierSize, format!("{n} parties"), site));
        }
        self.point()?;
        let rt = self.rt;
        let b = rt
            .image
            .heap
            .alloc(self.arena, layout::BARRIER_WORDS, Kind::Barrier, 0, true)
            .map_err(|_| self.heap_full(site, Some(layout::BARRIER_WORDS)))?;
        heap::store(b, layout::BARRIER_PARTIES, n as u64);
        self.emit(site, EventKind::Alloc { obj: ObjId(b) });
        Ok(b)
    }

    /// Acquire `obj`'s monitor (blocking); `Acquire` for the outermost level only.
    pub fn monitor_enter(&mut self, obj: u64, site: SiteId) -> Result<(), Stop> {
        let rt = self.rt;
        let stack = self.stack;
        // A pass may finish deferred work first, before this thread waits for the
        // monitor rather than while it holds it. Also before a reentrant acquire,
        // which leaves the thread's clock as it is, so the work is the same there:
        // asking whether this thread holds the monitor would read the monitor's
        // line, which a contended lock's other threads are writing, only for the
        // acquire to fetch it again for writing (synclist: 6% of its samples).
        self.hook.before_sync();
        let outer = sync::acquire(
            &rt.image.heap,
            &rt.sched,
            self.arena,
            self.tid,
            obj,
            site,
            &|| stack(site),
        )?;
        if outer {
            self.emit(site, EventKind::Acquire { lock: ObjId(obj) });
        }
        Ok(())
    }

    /// Release one level of `obj`'s monitor; `Release` (before the monitor is given
    /// up) for the outermost level only.
    pub fn monitor_exit(&mut self, obj: u64, site: SiteId) -> Result<(), Stop> {
        match sync::exit(self.tid, obj) {
            Err(sync::NotHeld) => Err(self.fail(
                ErrorKind::IllegalMonitorState,
                format!(
                    "releasing the monitor of {} without holding it",
                    crate::env::obj_label(&self.rt.image, obj)
                ),
                site,
            )),
            Ok(None) => Ok(()),
            Ok(Some(m)) => {
                self.emit(site, EventKind::Release { lock: ObjId(obj) });
                sync::unlock(&self.rt.sched, m, obj);
                Ok(())
            }
        }
    }

    /// `synchronized (o)` entry and exit: the null check and the scheduling point,
    /// then [`Guest::monitor_enter`] / [`Guest::monitor_exit`].
    pub fn synchronize(&mut self, o: u64, enter: bool, site: SiteId) -> Result<(), Stop> {
        if o == 0 {
            return Err(self.null("synchronizing on null", site));
        }
        self.point()?;
        if enter {
            self.monitor_enter(o, site)
        } else {
            self.monitor_exit(o, site)
        }
    }

    /// `o.wait()`: release (event) while holding, sleep, re-acquire, acquire (event).
    pub fn wait(&mut self, o: u64, site: SiteId) -> Result<(), Stop> {
        if o == 0 {
            return Err(self.null("wait on null", site));
        }
        self.point()?;
        let m = match sync::check_held(self.tid, o) {
            Ok(m) => m,
            Err(_) => return Err(self.not_held("wait", o, site)),
        };
        self.emit(site, EventKind::Release { lock: ObjId(o) });
        let stack = self.stack;
        sync::wait(&self.rt.sched, m, self.tid, o, site, &|| stack(site))?;
        self.emit(site, EventKind::Acquire { lock: ObjId(o) });
        Ok(())
    }

    /// `o.notify()` / `o.notifyAll()`.
    pub fn notify(&mut self, o: u64, all: bool, site: SiteId) -> Result<(), Stop> {
        if o == 0 {
            return Err(self.null("notify on null", site));
        }
        self.point()?;
        if sync::check_held(self.tid, o).is_err() {
            let what = if all { "notifyAll" } else { "notify" };
            return Err(self.not_held(what, o, site));
        }
        sync::notify(&self.rt.sched, o, all);
        Ok(())
    }

    fn not_held(&self, what: &str, o: u64, site: SiteId) -> Stop {
        self.fail(
            ErrorKind::IllegalMonitorState,
            format!(
                "{what}() on {} without holding its monitor",
                crate::env::obj_label(&self.rt.image, o)
            ),
            site,
        )
    }

    /// `b.await()`: barrier enter (atomically with the arrival), sleep until the
    /// episode trips, barrier exit.
    pub fn barrier_await(&mut self, b: u64, site: SiteId) -> Result<(), Stop> {
        if b == 0 {
            return Err(self.null("await on a null barrier", site));
        }
        self.point()?;
        // Deferred work before the arrival, outside the scheduler's lock.
        self.hook.before_sync();
        let rt = self.rt;
        let stack = self.stack;
        let hook = &mut *self.hook;
        let mut enter = |generation: u64, parties: u32| {
            hook.emit(
                site,
                EventKind::BarrierEnter {
                    barrier: ObjId(b),
                    generation,
                    parties,
                },
            );
        };
        let (generation, parties) =
            sync::barrier_await(&rt.sched, self.tid, b, site, &|| stack(site), &mut enter)?;
        self.emit(
            site,
            EventKind::BarrierExit {
                barrier: ObjId(b),
                generation,
                parties,
            },
        );
        Ok(())
    }

    /// Method prologue of `f`, whose frame was just pushed by the call at `site`
    /// (`params`: its parameters): enter (if the chain takes it:
    /// `Hook::frame_events_of`), acquire (synchronized), begin. Returns the monitor held until the epilogue
    /// (0 = none).
    pub fn enter_method(&mut self, f: FuncId, params: &[u64], site: SiteId) -> Result<u64, Stop> {
        let rt = self.rt;
        let func = rt.image.program.func(f);
        // A call the chain ends as it starts it (`Hook::elides_frames`: a nested call
        // on the capsule whose call runs) delivers neither `Enter` nor `Exit`; the
        // epilogue learns it from the returned word.
        let frames = self.hook.frame_events_of(f);
        let elided =
            frames && func.kind != FuncKind::Static && self.hook.elides_frames(f, params[0]);
        // Or one whose frame the chain may take from memory, when it next receives
        // an event (`Hook::push_lazy_frame`: calls on a capsule).
        let lazy = frames
            && !elided
            && func.kind != FuncKind::Static
            && self.hook.push_lazy_frame(f, params[0]);
        // `Enter` comes before the monitor's `Acquire` (and `Exit` after its
        // `Release`): the method holds its monitor, so both events carry its frame,
        // as they do when the chain keeps the call stack without these events.
        if frames && !elided && !lazy {
            let first = if func.kind == FuncKind::Static { 0 } else { 1 };
            let receiver = (first == 1).then(|| ObjId(params[0]));
            // On the stack for up to 4 (no allocation per call).
            let args: smallvec::SmallVec<[ObjId; 4]> = (first..func.num_params as usize)
                .filter(|&i| func.locals[i].ty.is_ref() && params[i] != 0)
                .map(|i| ObjId(params[i]))
                .collect();
            self.hook.emit(
                site,
                EventKind::Enter {
                    method: MethodId(f.0),
                    receiver,
                    args: &args,
                },
            );
        }
        let mut lock = 0;
        if func.is_synchronized {
            let obj = if func.kind == FuncKind::Static {
                rt.image.class_monitor(func.class)
            } else {
                params[0]
            };
            self.point()?;
            self.monitor_enter(obj, site)?;
            lock = obj;
        }
        if self.hook.is_on() {
            for (on, spec) in [
                (func.is_deterministic, ASpec::Deterministic),
                (func.is_atomic, ASpec::Atomic),
            ] {
                if on {
                    self.hook.emit(site, EventKind::Begin { spec });
                }
            }
        }
        // (An elided or recorded call holds no monitor: its method is not
        // synchronized.)
        Ok(if elided {
            ELIDED_FRAME
        } else if lazy {
            LAZY_FRAME
        } else {
            lock
        })
    }

    /// Method epilogue of `f` returning `ret`, called at `site`: end, release of
    /// `lock` (from [`Guest::enter_method`]), exit.
    pub fn leave_method(
        &mut self,
        f: FuncId,
        ret: u64,
        lock: u64,
        site: SiteId,
    ) -> Result<(), Stop> {
        let rt = self.rt;
        let func = rt.image.program.func(f);
        if self.hook.is_on() {
            for (on, spec) in [
                (func.is_atomic, ASpec::Atomic),
                (func.is_deterministic, ASpec::Deterministic),
            ] {
                if on {
                    self.hook.emit(site, EventKind::End { spec });
                }
            }
        }
        if lock == ELIDED_FRAME || lock == LAZY_FRAME && self.hook.pop_lazy_frame() {
            return Ok(());
        }
        if lock != 0 && lock != LAZY_FRAME {
            self.point()?;
            self.monitor_exit(lock, site)?;
        }
        if self.hook.frame_events_of(f) {
            self.hook.emit(
                site,
                EventKind::Exit {
                    method: MethodId(f.0),
                    ret: ref_value(func.ret.is_ref(), ret),
                },
            );
        }
        Ok(())
    }

    /// `t.join()`.
    pub fn join(&mut self, th: u64, site: SiteId) -> Result<(), Stop> {
        if th == 0 {
            return Err(self.null("joining a null thread", site));
        }
        self.point()?;
        let child = heap::load(th, layout::THREAD_TID) as Tid;
        let stack = self.stack;
        self.rt.sched.join(self.tid, child, site, &|| stack(site))?;
        self.emit(site, EventKind::Join { child });
        Ok(())
    }

    /// `fork f(vals)`: checks, the `Thread` object, `Fork` (handing the reference
    /// arguments), then the new OS thread running `body(child, vals, child_hook)` on
    /// the caller's tier. Returns the `Thread` object.
    pub fn fork(
        &mut self,
        f: FuncId,
        vals: Vec<u64>,
        site: SiteId,
        body: impl FnOnce(Tid, Vec<u64>, Hook) + Send + 'static,
    ) -> Result<u64, Stop> {
        let rt = self.rt;
        let prog = &rt.image.program;
        let callee = prog.func(f);
        let is_method = callee.kind != FuncKind::Static;
        if is_method && vals.first().copied().unwrap_or(0) == 0 {
            return Err(self.null(&format!("forking {} on null", prog.func_name(f)), site));
        }
        self.point()?;
        if !rt.admit_thread() {
            return Err(self.fail(
                ErrorKind::ThreadLimit,
                format!("more than {} threads", rt.limits.max_threads),
                site,
            ));
        }
        let t = rt
            .image
            .heap
            .alloc(self.arena, layout::THREAD_WORDS, Kind::Thread, 0, true)
            .map_err(|_| self.heap_full(site, Some(layout::THREAD_WORDS)))?;
        let child = rt.sched.register();
        heap::store(t, layout::THREAD_TID, child as u64);
        let child_hook = self.hook.fork(child, site, || {
            vals.iter()
                .enumerate()
                .filter(|(i, v)| **v != 0 && callee.locals[*i].ty.is_ref())
                .map(|(_, v)| ObjId(*v))
                .collect()
        });
        if let Err(e) = rt.spawn(child, move || body(child, vals, child_hook)) {
            rt.sched.finish(child);
            return Err(self.fail(
                ErrorKind::ThreadLimit,
                format!("the OS refused a new thread: {e}"),
                site,
            ));
        }
        Ok(t)
    }
}

/// `print(args)`: one line on the guest's stdout; `value(l)` is the value of value
/// argument `l`.
pub fn print(rt: &Runtime, args: &[PrintArg], value: impl Fn(Local) -> u64) {
    let mut s = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        match a {
            PrintArg::Str(x) => s.push_str(x),
            PrintArg::Value(l, repr) => {
                let v = value(*l);
                match repr {
                    Repr::Int => s.push_str(&(v as i64).to_string()),
                    Repr::Double => s.push_str(&double_to_string(f64::from_bits(v))),
                    Repr::Bool => s.push_str(if v != 0 { "true" } else { "false" }),
                    Repr::Ref => s.push_str(&crate::env::obj_label(&rt.image, v)),
                    Repr::Void => {}
                }
            }
        }
    }
    s.push('\n');
    rt.out.line(&s);
}
