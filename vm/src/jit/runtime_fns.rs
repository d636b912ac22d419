//! The one table of runtime functions that generated code calls ([`Rt`]), their
//! signatures and symbol registration, and their bodies.
//!
//! Each body mirrors the interpreter's handling of the same instruction in
//! `crate::interp` (same checks in the same order, same scheduling points, same
//! events, same error kinds, messages and sites) and reuses the same runtime pieces
//! (`sync`, `sched`, `heap`, `bridge`, `ops`), so the tiers cannot drift apart in
//! anything but the glue. Fallible functions set `JitThread::failed` when the thread
//! must unwind; generated code reads it after the call.
//!
//! A Rust panic must not unwind into generated code (it would abort the process):
//! every fallible body runs under [`guarded`], which turns a panic into the
//! `Internal` runtime error, as `interp::run_thread` does.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

use analyses::{EventKind, Loc, MethodId, ObjId, Spec as ASpec};
use lang::ir::{FuncId, FuncKind, PrintArg, Repr, SiteId, Type};

use crate::Tid;
use crate::bridge::ref_value;
use crate::error::{ErrorKind, RuntimeError};
use crate::heap::{self, HeapFull};
use crate::image::{Image, const_bits};
use crate::jfmt::double_to_string;
use crate::layout::{self, Kind};
use crate::ops;
use crate::sched::Stop;
use crate::sync;

use super::abi::JitThread;

/// Machine types of runtime-function parameters and results.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    I64,
    F64,
}

/// Every runtime function generated code may call.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Rt {
    Point,
    Error,
    New,
    NewArray,
    NewBarrier,
    Fork,
    Join,
    MonitorEnter,
    MonitorExit,
    Wait,
    Notify,
    BarrierAwait,
    Prologue,
    Epilogue,
    Print,
    Math,
    FRem,
    VolatileRead,
    VolatileWrite,
    EvRead,
    EvWrite,
    EvArrayWrite,
    EvSpec,
}

/// Codes of [`jit_error`]: the runtime errors that generated code detects inline.
pub mod err {
    pub const NULL_READ_FIELD: i64 = 0;
    pub const NULL_WRITE_FIELD: i64 = 1;
    pub const NULL_INDEX: i64 = 2;
    pub const NULL_LENGTH: i64 = 3;
    pub const NULL_CALL: i64 = 4;
    pub const BOUNDS: i64 = 5;
    pub const DIV_ZERO: i64 = 6;
    pub const ASSERT: i64 = 7;
    pub const STACK_OVERFLOW: i64 = 8;
    pub const STEP_LIMIT: i64 = 9;
    pub const UNREACHABLE: i64 = 10;
}

use Ty::{F64, I64};

impl Rt {
    pub const ALL: [Rt; 23] = [
        Rt::Point,
        Rt::Error,
        Rt::New,
        Rt::NewArray,
        Rt::NewBarrier,
        Rt::Fork,
        Rt::Join,
        Rt::MonitorEnter,
        Rt::MonitorExit,
        Rt::Wait,
        Rt::Notify,
        Rt::BarrierAwait,
        Rt::Prologue,
        Rt::Epilogue,
        Rt::Print,
        Rt::Math,
        Rt::FRem,
        Rt::VolatileRead,
        Rt::VolatileWrite,
        Rt::EvRead,
        Rt::EvWrite,
        Rt::EvArrayWrite,
        Rt::EvSpec,
    ];

    /// Symbol name, parameters (the context pointer first, for every function but
    /// `Math` and `FRem`) and result.
    pub fn sig(self) -> (&'static str, &'static [Ty], Option<Ty>) {
        match self {
            Rt::Point => ("capvm_jit_point", &[I64], None),
            Rt::Error => ("capvm_jit_error", &[I64, I64, I64, I64, I64], None),
            Rt::New => ("capvm_jit_new", &[I64, I64, I64], Some(I64)),
            Rt::NewArray => ("capvm_jit_new_array", &[I64, I64, I64, I64, I64], Some(I64)),
            Rt::NewBarrier => ("capvm_jit_new_barrier", &[I64, I64, I64], Some(I64)),
            Rt::Fork => ("capvm_jit_fork", &[I64, I64, I64, I64, I64], Some(I64)),
            Rt::Join => ("capvm_jit_join", &[I64, I64, I64], None),
            Rt::MonitorEnter => ("capvm_jit_monitor_enter", &[I64, I64, I64], None),
            Rt::MonitorExit => ("capvm_jit_monitor_exit", &[I64, I64, I64], None),
            Rt::Wait => ("capvm_jit_wait", &[I64, I64, I64], None),
            Rt::Notify => ("capvm_jit_notify", &[I64, I64, I64, I64], None),
            Rt::BarrierAwait => ("capvm_jit_barrier_await", &[I64, I64, I64], None),
            Rt::Prologue => ("capvm_jit_prologue", &[I64, I64, I64], Some(I64)),
            Rt::Epilogue => ("capvm_jit_epilogue", &[I64, I64, I64, I64], None),
            Rt::Print => ("capvm_jit_print", &[I64, I64, I64], None),
            Rt::Math => ("capvm_jit_math", &[I64, I64, I64], Some(I64)),
            Rt::FRem => ("capvm_jit_frem", &[F64, F64], Some(F64)),
            Rt::VolatileRead => (
                "capvm_jit_volatile_read",
                &[I64, I64, I64, I64, I64],
                Some(I64),
            ),
            Rt::VolatileWrite => (
                "capvm_jit_volatile_write",
                &[I64, I64, I64, I64, I64, I64, I64],
                None,
            ),
            Rt::EvRead => ("capvm_jit_ev_read", &[I64, I64, I64, I64], None),
            Rt::EvWrite => ("capvm_jit_ev_write", &[I64, I64, I64, I64, I64, I64], None),
            Rt::EvArrayWrite => ("capvm_jit_ev_array_write", &[I64, I64, I64, I64, I64], None),
            Rt::EvSpec => ("capvm_jit_ev_spec", &[I64, I64, I64], None),
        }
    }

    /// Address of the function (registered with the JIT builder under `sig().0`).
    pub fn addr(self) -> *const u8 {
        type C = *mut JitThread;
        match self {
            Rt::Point => jit_point as extern "C" fn(C) as *const u8,
            Rt::Error => jit_error as extern "C" fn(C, i64, u64, i64, i64) as *const u8,
            Rt::New => jit_new as extern "C" fn(C, u64, u64) -> u64 as *const u8,
            Rt::NewArray => {
                jit_new_array as extern "C" fn(C, u64, *const i64, u64, u64) -> u64 as *const u8
            }
            Rt::NewBarrier => jit_new_barrier as extern "C" fn(C, i64, u64) -> u64 as *const u8,
            Rt::Fork => jit_fork as extern "C" fn(C, u64, *const u64, u64, u64) -> u64 as *const u8,
            Rt::Join => jit_join as extern "C" fn(C, u64, u64) as *const u8,
            Rt::MonitorEnter => jit_monitor_enter as extern "C" fn(C, u64, u64) as *const u8,
            Rt::MonitorExit => jit_monitor_exit as extern "C" fn(C, u64, u64) as *const u8,
            Rt::Wait => jit_wait as extern "C" fn(C, u64, u64) as *const u8,
            Rt::Notify => jit_notify as extern "C" fn(C, u64, u64, u64) as *const u8,
            Rt::BarrierAwait => jit_barrier_await as extern "C" fn(C, u64, u64) as *const u8,
            Rt::Prologue => jit_prologue as extern "C" fn(C, u64, *const u64) -> u64 as *const u8,
            Rt::Epilogue => jit_epilogue as extern "C" fn(C, u64, u64, u64) as *const u8,
            Rt::Print => jit_print as extern "C" fn(C, u64, *const u64) as *const u8,
            Rt::Math => jit_math as extern "C" fn(u64, u64, u64) -> u64 as *const u8,
            Rt::FRem => jit_frem as extern "C" fn(f64, f64) -> f64 as *const u8,
            Rt::VolatileRead => {
                jit_volatile_read as extern "C" fn(C, u64, u64, u64, u64) -> u64 as *const u8
            }
            Rt::VolatileWrite => {
                jit_volatile_write as extern "C" fn(C, u64, u64, u64, u64, u64, u64) as *const u8
            }
            Rt::EvRead => jit_ev_read as extern "C" fn(C, u64, u64, u64) as *const u8,
            Rt::EvWrite => jit_ev_write as extern "C" fn(C, u64, u64, u64, u64, u64) as *const u8,
            Rt::EvArrayWrite => {
                jit_ev_array_write as extern "C" fn(C, u64, u64, u64, u64) as *const u8
            }
            Rt::EvSpec => jit_ev_spec as extern "C" fn(C, u64, u64) as *const u8,
        }
    }

    /// Whether the first parameter is the thread context.
    pub fn takes_ctx(self) -> bool {
        !matches!(self, Rt::Math | Rt::FRem)
    }
}

/// Deliver an event if a chain is active (the interpreter's `emit!`).
macro_rules! emit {
    ($t:expr, $site:expr, $kind:expr) => {
        if let (Some(b), Some(cx)) = ($t.rt.bridge.as_ref(), $t.cx.as_mut()) {
            b.emit(cx, $site, $kind);
        }
    };
}

impl JitThread {
    /// Record a runtime error at `site` of the innermost frame and stop (the
    /// interpreter's `Interp::fail`).
    pub fn fail(&mut self, kind: ErrorKind, detail: String, site: SiteId) -> Stop {
        let err = RuntimeError {
            kind,
            detail,
            tid: self.tid as Tid,
            site,
            stack: self.stack(site),
            notes: Vec::new(),
        };
        let stop = self.rt.sched.fail(err);
        self.stop();
        stop
    }

    /// This thread unwinds; every other thread stops at its next poll.
    pub fn stop(&mut self) {
        self.failed = 1;
        self.code.abort.store(true, Ordering::Relaxed);
    }

    fn heap_full(&mut self, site: SiteId) -> Stop {
        let used = self.rt.image.heap.used();
        self.fail(ErrorKind::HeapLimit, format!("{used} bytes in use"), site)
    }

    fn null(&mut self, what: &str, site: SiteId) -> Stop {
        self.fail(ErrorKind::NullDereference, what.to_string(), site)
    }

    #[inline]
    fn point(&self) -> Result<(), Stop> {
        self.rt.sched.point(self.tid as Tid, self.seeded)
    }

    fn monitor_enter(&mut self, obj: u64, site: SiteId) -> Result<(), Stop> {
        let rt = self.rt.clone();
        let tid = self.tid as Tid;
        let view = self.stack_view();
        let outer = sync::acquire(
            &rt.image.heap,
            &rt.sched,
            &mut self.arena,
            tid,
            obj,
            site,
            &|| view.stack(site),
        )?;
        if outer {
            emit!(self, site, EventKind::Acquire { lock: ObjId(obj) });
        }
        Ok(())
    }

    fn monitor_exit(&mut self, obj: u64, site: SiteId) -> Result<(), Stop> {
        let rt = self.rt.clone();
        match sync::exit(self.tid as Tid, obj) {
            Err(sync::NotHeld) => Err(self.fail(
                ErrorKind::IllegalMonitorState,
                format!(
                    "releasing the monitor of {} without holding it",
                    crate::env::obj_label(&rt.image, obj)
                ),
                site,
            )),
            Ok(None) => Ok(()),
            Ok(Some(m)) => {
                emit!(self, site, EventKind::Release { lock: ObjId(obj) });
                sync::unlock(&rt.sched, m, obj);
                Ok(())
            }
        }
    }

    /// `new T[d0][d1]…` (the interpreter's `Interp::new_array`).
    fn new_array(
        &mut self,
        img: &Image,
        elem: &Type,
        dims: &[i64],
        site: SiteId,
    ) -> Result<u64, Stop> {
        let t = Type::Array(Box::new(elem.clone()));
        let id = img.array_type_id(&t);
        let len = dims[0] as u64;
        let words = usize::try_from(len)
            .ok()
            .and_then(|n| n.checked_add(layout::ARRAY_DATA));
        let a = match words {
            Some(w) => img.heap.alloc(&mut self.arena, w, Kind::Array, id, true),
            None => Err(HeapFull),
        };
        let a = match a {
            Ok(a) => a,
            Err(_) => return Err(self.heap_full(site)),
        };
        heap::store(a, layout::ARRAY_LEN, len);
        emit!(self, site, EventKind::Alloc { obj: ObjId(a) });
        if dims.len() > 1
            && let Type::Array(inner) = elem
        {
            for i in 0..len as usize {
                let sub = self.new_array(img, inner, &dims[1..], site)?;
                heap::store(a, layout::ARRAY_DATA + i, sub);
            }
        }
        Ok(a)
    }
}

/// Run a fallible body: `Err(Stop)` and panics set `failed` (a panic also records the
/// `Internal` error, like `interp::run_thread`).
fn guarded(t: *mut JitThread, f: impl FnOnce(&mut JitThread) -> Result<u64, Stop>) -> u64 {
    // SAFETY: generated code passes the context of the thread it runs on, which is
    // alive for the whole call and not otherwise borrowed meanwhile.
    let t = unsafe { &mut *t };
    let r = catch_unwind(AssertUnwindSafe(|| f(&mut *t)));
    match r {
        Ok(Ok(v)) => v,
        Ok(Err(Stop)) => {
            t.stop();
            0
        }
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let (_, site) = t.top();
            t.fail(ErrorKind::Internal, detail, site);
            0
        }
    }
}

/// Infallible bodies (event hooks): a panic in a pass is still not allowed to unwind
/// into generated code.
fn hook(t: *mut JitThread, f: impl FnOnce(&mut JitThread)) {
    guarded(t, |t| {
        f(t);
        Ok(0)
    });
}

fn site(s: u64) -> SiteId {
    SiteId(s as u32)
}

/// A scheduling point (emitted only under `--sched seeded`).
extern "C" fn jit_point(t: *mut JitThread) {
    guarded(t, |t| t.point().map(|_| 0));
}

/// The runtime errors detected inline (see [`err`]); `a`/`b` are details.
extern "C" fn jit_error(t: *mut JitThread, code: i64, s: u64, a: i64, b: i64) {
    guarded(t, |t| {
        let s = site(s);
        let rt = t.rt.clone();
        let prog = &rt.image.program;
        let field = |a: i64, b: i64| {
            let c = lang::ir::ClassId(a as u32);
            let fd = prog.field(lang::ir::FieldRef {
                class: c,
                index: b as u32,
            });
            format!("{}.{}", prog.class(c).name, fd.name)
        };
        Err(match code {
            err::NULL_READ_FIELD => t.null(&format!("reading field {}", field(a, b)), s),
            err::NULL_WRITE_FIELD => t.null(&format!("writing field {}", field(a, b)), s),
            err::NULL_INDEX => t.null("indexing a null array", s),
            err::NULL_LENGTH => t.null("reading the length of an array", s),
            err::NULL_CALL => t.null(
                &format!("calling {} on null", prog.func_name(FuncId(a as u32))),
                s,
            ),
            err::BOUNDS => t.fail(
                ErrorKind::IndexOutOfBounds,
                format!("index {a}, length {}", b as u64),
                s,
            ),
            err::DIV_ZERO => t.fail(ErrorKind::DivisionByZero, String::new(), s),
            err::ASSERT => t.fail(ErrorKind::AssertionFailed, String::new(), s),
            err::STACK_OVERFLOW => t.fail(
                ErrorKind::StackOverflow,
                format!("more than {} nested calls", rt.limits.max_call_depth),
                s,
            ),
            err::STEP_LIMIT if rt.sched.aborted() => Stop,
            err::STEP_LIMIT => t.fail(
                ErrorKind::StepLimit,
                format!(
                    "more than {} basic blocks in this thread",
                    rt.limits.max_steps
                ),
                s,
            ),
            _ => t.fail(ErrorKind::Internal, "reached an unfinished block".into(), s),
        })
    });
}

/// `new C` (Inst::New).
extern "C" fn jit_new(t: *mut JitThread, class: u64, s: u64) -> u64 {
    guarded(t, |t| {
        let s = site(s);
        t.point()?;
        let rt = t.rt.clone();
        let img = &rt.image;
        let c = img.program.class(lang::ir::ClassId(class as u32));
        let o = img.heap.alloc(
            &mut t.arena,
            layout::FIELD0 + c.fields.len(),
            Kind::Object,
            class as u32,
            true,
        );
        let o = match o {
            Ok(o) => o,
            Err(_) => return Err(t.heap_full(s)),
        };
        for (i, f) in c.fields.iter().enumerate() {
            if let Some(k) = f.init {
                heap::store(o, layout::FIELD0 + i, const_bits(k));
            }
        }
        emit!(t, s, EventKind::Alloc { obj: ObjId(o) });
        Ok(o)
    })
}

/// `new T[d0]…` (Inst::NewArray); `elem` indexes `JitCode::new_arrays`.
extern "C" fn jit_new_array(t: *mut JitThread, elem: u64, dims: *const i64, n: u64, s: u64) -> u64 {
    guarded(t, |t| {
        let s = site(s);
        // SAFETY: generated code passes a stack buffer of `n` dimensions.
        let ds: Vec<i64> = unsafe { std::slice::from_raw_parts(dims, n as usize) }.to_vec();
        if let Some(neg) = ds.iter().find(|d| **d < 0) {
            return Err(t.fail(ErrorKind::NegativeArraySize, neg.to_string(), s));
        }
        t.point()?;
        let rt = t.rt.clone();
        let code = t.code.clone();
        t.new_array(&rt.image, &code.new_arrays[elem as usize], &ds, s)
    })
}

/// `new Barrier(n)`.
extern "C" fn jit_new_barrier(t: *mut JitThread, n: i64, s: u64) -> u64 {
    guarded(t, |t| {
        let s = site(s);
        if n < 1 || n > u32::MAX as i64 {
            return Err(t.fail(ErrorKind::IllegalBarrierSize, format!("{n} parties"), s));
        }
        t.point()?;
        let rt = t.rt.clone();
        let b = rt
            .image
            .heap
            .alloc(&mut t.arena, layout::BARRIER_WORDS, Kind::Barrier, 0, true);
        let b = match b {
            Ok(b) => b,
            Err(_) => return Err(t.heap_full(s)),
        };
        heap::store(b, layout::BARRIER_PARTIES, n as u64);
        emit!(t, s, EventKind::Alloc { obj: ObjId(b) });
        Ok(b)
    })
}

/// `fork f(args)` (the interpreter's `Interp::fork`); the child runs compiled code.
extern "C" fn jit_fork(t: *mut JitThread, f: u64, args: *const u64, n: u64, s: u64) -> u64 {
    guarded(t, |t| {
        let s = site(s);
        let f = FuncId(f as u32);
        // SAFETY: generated code passes a stack buffer of `n` argument slots.
        let vals: Vec<u64> = unsafe { std::slice::from_raw_parts(args, n as usize) }.to_vec();
        let rt = t.rt.clone();
        let prog = &rt.image.program;
        let callee = prog.func(f);
        let is_method = callee.kind != FuncKind::Static;
        if is_method && vals.first().copied().unwrap_or(0) == 0 {
            return Err(t.null(&format!("forking {} on null", prog.func_name(f)), s));
        }
        t.point()?;
        if !rt.admit_thread() {
            return Err(t.fail(
                ErrorKind::ThreadLimit,
                format!("more than {} threads", rt.limits.max_threads),
                s,
            ));
        }
        let th = rt
            .image
            .heap
            .alloc(&mut t.arena, layout::THREAD_WORDS, Kind::Thread, 0, true);
        let th = match th {
            Ok(th) => th,
            Err(_) => return Err(t.heap_full(s)),
        };
        let child = rt.sched.register();
        heap::store(th, layout::THREAD_TID, child as u64);
        let child_cx = match (rt.bridge.as_ref(), t.cx.as_mut()) {
            (Some(b), Some(cx)) => {
                let handed: Vec<ObjId> = vals
                    .iter()
                    .enumerate()
                    .filter(|(i, v)| **v != 0 && callee.locals[*i].ty.is_ref())
                    .map(|(_, v)| ObjId(*v))
                    .collect();
                Some(b.fork(cx, child, s, &handed))
            }
            _ => None,
        };
        let rt2 = rt.clone();
        let code = t.code.clone();
        let spawned = rt.spawn(child, move || {
            super::run_thread(rt2, code, child, f, vals, s, child_cx)
        });
        if let Err(e) = spawned {
            rt.sched.finish(child);
            return Err(t.fail(
                ErrorKind::ThreadLimit,
                format!("the OS refused a new thread: {e}"),
                s,
            ));
        }
        Ok(th)
    })
}

/// `t.join()`.
extern "C" fn jit_join(t: *mut JitThread, th: u64, s: u64) {
    guarded(t, |t| {
        let s = site(s);
        if th == 0 {
            return Err(t.null("joining a null thread", s));
        }
        t.point()?;
        let child = heap::load(th, layout::THREAD_TID) as Tid;
        let rt = t.rt.clone();
        let view = t.stack_view();
        rt.sched.join(t.tid as Tid, child, s, &|| view.stack(s))?;
        emit!(t, s, EventKind::Join { child });
        Ok(0)
    });
}

extern "C" fn jit_monitor_enter(t: *mut JitThread, o: u64, s: u64) {
    guarded(t, |t| {
        let s = site(s);
        if o == 0 {
            return Err(t.null("synchronizing on null", s));
        }
        t.point()?;
        t.monitor_enter(o, s).map(|_| 0)
    });
}

extern "C" fn jit_monitor_exit(t: *mut JitThread, o: u64, s: u64) {
    guarded(t, |t| {
        let s = site(s);
        if o == 0 {
            return Err(t.null("synchronizing on null", s));
        }
        t.point()?;
        t.monitor_exit(o, s).map(|_| 0)
    });
}

/// `o.wait()` (the interpreter's `Interp::wait`).
extern "C" fn jit_wait(t: *mut JitThread, o: u64, s: u64) {
    guarded(t, |t| {
        let s = site(s);
        let rt = t.rt.clone();
        if o == 0 {
            return Err(t.null("wait on null", s));
        }
        t.point()?;
        let m = match sync::check_held(t.tid as Tid, o) {
            Ok(m) => m,
            Err(_) => {
                return Err(t.fail(
                    ErrorKind::IllegalMonitorState,
                    format!(
                        "wait() on {} without holding its monitor",
                        crate::env::obj_label(&rt.image, o)
                    ),
                    s,
                ));
            }
        };
        emit!(t, s, EventKind::Release { lock: ObjId(o) });
        let view = t.stack_view();
        sync::wait(&rt.sched, m, t.tid as Tid, o, s, &|| view.stack(s))?;
        emit!(t, s, EventKind::Acquire { lock: ObjId(o) });
        Ok(0)
    });
}

/// `o.notify()` / `o.notifyAll()`.
extern "C" fn jit_notify(t: *mut JitThread, o: u64, all: u64, s: u64) {
    guarded(t, |t| {
        let s = site(s);
        if o == 0 {
            return Err(t.null("notify on null", s));
        }
        t.point()?;
        let rt = t.rt.clone();
        if sync::check_held(t.tid as Tid, o).is_err() {
            let what = if all != 0 { "notifyAll" } else { "notify" };
            return Err(t.fail(
                ErrorKind::IllegalMonitorState,
                format!(
                    "{what}() on {} without holding its monitor",
                    crate::env::obj_label(&rt.image, o)
                ),
                s,
            ));
        }
        sync::notify(&rt.sched, o, all != 0);
        Ok(0)
    });
}

/// `b.await()` (the interpreter's `Interp::barrier_await`).
extern "C" fn jit_barrier_await(t: *mut JitThread, b: u64, s: u64) {
    guarded(t, |t| {
        let s = site(s);
        if b == 0 {
            return Err(t.null("await on a null barrier", s));
        }
        t.point()?;
        let rt = t.rt.clone();
        let tid = t.tid as Tid;
        let view = t.stack_view();
        let bridge = rt.bridge.as_ref();
        let cx = &mut t.cx;
        let mut enter = |generation: u64, parties: u32| {
            if let (Some(br), Some(cx)) = (bridge, cx.as_mut()) {
                br.emit(
                    cx,
                    s,
                    EventKind::BarrierEnter {
                        barrier: ObjId(b),
                        generation,
                        parties,
                    },
                );
            }
        };
        let (generation, parties) =
            sync::barrier_await(&rt.sched, tid, b, s, &|| view.stack(s), &mut enter)?;
        emit!(
            t,
            s,
            EventKind::BarrierExit {
                barrier: ObjId(b),
                generation,
                parties,
            }
        );
        Ok(0)
    });
}

/// Method prologue (the interpreter's `Interp::enter_frame`), run by the callee after
/// the caller pushed its shadow frame: acquire (synchronized), enter, begin.
/// Returns the monitor held for the epilogue (0 = none).
extern "C" fn jit_prologue(t: *mut JitThread, f: u64, params: *const u64) -> u64 {
    guarded(t, |t| {
        let rt = t.rt.clone();
        let fid = FuncId(f as u32);
        let func = rt.image.program.func(fid);
        let (_, s) = t.top();
        // SAFETY: generated code passes a buffer holding every parameter.
        let regs = unsafe { std::slice::from_raw_parts(params, func.num_params as usize) };
        let mut lock = 0;
        if func.is_synchronized {
            let obj = if func.kind == FuncKind::Static {
                rt.image.class_monitor(func.class)
            } else {
                regs[0]
            };
            t.point()?;
            t.monitor_enter(obj, s)?;
            lock = obj;
        }
        if let (Some(b), Some(cx)) = (rt.bridge.as_ref(), t.cx.as_mut()) {
            let first = if func.kind == FuncKind::Static { 0 } else { 1 };
            let receiver = (first == 1).then(|| ObjId(regs[0]));
            let args: Vec<ObjId> = (first..func.num_params as usize)
                .filter(|&i| func.locals[i].ty.is_ref() && regs[i] != 0)
                .map(|i| ObjId(regs[i]))
                .collect();
            b.emit(
                cx,
                s,
                EventKind::Enter {
                    method: MethodId(fid.0),
                    receiver,
                    args: &args,
                },
            );
            if func.is_deterministic {
                b.emit(
                    cx,
                    s,
                    EventKind::Begin {
                        spec: ASpec::Deterministic,
                    },
                );
            }
            if func.is_atomic {
                b.emit(
                    cx,
                    s,
                    EventKind::Begin {
                        spec: ASpec::Atomic,
                    },
                );
            }
        }
        Ok(lock)
    })
}

/// Method epilogue (the interpreter's `Interp::leave_frame`): end, exit, release.
extern "C" fn jit_epilogue(t: *mut JitThread, f: u64, ret: u64, lock: u64) {
    guarded(t, |t| {
        let rt = t.rt.clone();
        let fid = FuncId(f as u32);
        let func = rt.image.program.func(fid);
        let (_, s) = t.top();
        if let (Some(b), Some(cx)) = (rt.bridge.as_ref(), t.cx.as_mut()) {
            if func.is_atomic {
                b.emit(
                    cx,
                    s,
                    EventKind::End {
                        spec: ASpec::Atomic,
                    },
                );
            }
            if func.is_deterministic {
                b.emit(
                    cx,
                    s,
                    EventKind::End {
                        spec: ASpec::Deterministic,
                    },
                );
            }
            b.emit(
                cx,
                s,
                EventKind::Exit {
                    method: MethodId(fid.0),
                    ret: ref_value(func.ret.is_ref(), ret),
                },
            );
        }
        if lock != 0 {
            t.point()?;
            t.monitor_exit(lock, s)?;
        }
        Ok(0)
    });
}

/// `print(…)`: `id` indexes `JitCode::prints`, whose value arguments are numbered
/// positions in `vals` (the interpreter's `Interp::print`).
extern "C" fn jit_print(t: *mut JitThread, id: u64, vals: *const u64) {
    hook(t, |t| {
        let code = t.code.clone();
        let args = &code.prints[id as usize];
        let mut s = String::new();
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            match a {
                PrintArg::Str(x) => s.push_str(x),
                PrintArg::Value(l, repr) => {
                    // SAFETY: generated code stores one slot per value argument.
                    let v = unsafe { *vals.add(l.index()) };
                    match repr {
                        Repr::Int => s.push_str(&(v as i64).to_string()),
                        Repr::Double => s.push_str(&double_to_string(f64::from_bits(v))),
                        Repr::Bool => s.push_str(if v != 0 { "true" } else { "false" }),
                        Repr::Ref => s.push_str(&crate::env::obj_label(&t.rt.image, v)),
                        Repr::Void => {}
                    }
                }
            }
        }
        s.push('\n');
        t.rt.out.line(&s);
    });
}

/// `Math.*` that generated code does not compute inline (bit-identical: the
/// interpreter's [`ops::math`]). `func` is the index in [`super::translate::MATH_FNS`].
extern "C" fn jit_math(func: u64, a: u64, b: u64) -> u64 {
    ops::math(super::translate::MATH_FNS[func as usize], &[a, b])
}

/// Java's `%` on doubles ([`ops::binary`]).
extern "C" fn jit_frem(a: f64, b: f64) -> f64 {
    let r = ops::binary(lang::ir::BinOp::FRem, a.to_bits(), b.to_bits());
    f64::from_bits(r.unwrap_or(0))
}

/// A volatile read of word `word` of `o`, atomic with its event (the interpreter's
/// `Interp::read` with `volatile`).
extern "C" fn jit_volatile_read(t: *mut JitThread, o: u64, word: u64, slot: u64, s: u64) -> u64 {
    let mut v = 0;
    hook(t, |t| {
        let loc = Loc {
            obj: ObjId(o),
            slot: slot as u32,
        };
        v = match (t.rt.bridge.as_ref(), t.cx.as_mut()) {
            (Some(b), Some(cx)) => {
                let _g = b.volatile_lock(loc);
                let v = heap::load_volatile(o, word as usize);
                b.emit(cx, site(s), EventKind::VolatileRead { loc });
                v
            }
            _ => heap::load_volatile(o, word as usize),
        };
    });
    v
}

/// A volatile write, atomic with its event.
extern "C" fn jit_volatile_write(
    t: *mut JitThread,
    o: u64,
    word: u64,
    slot: u64,
    v: u64,
    is_ref: u64,
    s: u64,
) {
    hook(t, |t| {
        let loc = Loc {
            obj: ObjId(o),
            slot: slot as u32,
        };
        match (t.rt.bridge.as_ref(), t.cx.as_mut()) {
            (Some(b), Some(cx)) => {
                let _g = b.volatile_lock(loc);
                heap::store_volatile(o, word as usize, v);
                b.emit(
                    cx,
                    site(s),
                    EventKind::VolatileWrite {
                        loc,
                        value: ref_value(is_ref != 0, v),
                    },
                );
            }
            _ => heap::store_volatile(o, word as usize, v),
        }
    });
}

/// `Read` of a field, static or element (after generated code loaded it).
extern "C" fn jit_ev_read(t: *mut JitThread, o: u64, slot: u64, s: u64) {
    hook(t, |t| {
        let loc = Loc {
            obj: ObjId(o),
            slot: slot as u32,
        };
        emit!(t, site(s), EventKind::Read { loc });
    });
}

/// `Write` of a field or static (after generated code stored it).
extern "C" fn jit_ev_write(t: *mut JitThread, o: u64, slot: u64, v: u64, is_ref: u64, s: u64) {
    hook(t, |t| {
        let loc = Loc {
            obj: ObjId(o),
            slot: slot as u32,
        };
        let value = ref_value(is_ref != 0, v);
        emit!(t, site(s), EventKind::Write { loc, value });
    });
}

/// `Write` of an array element; whether the value is a reference comes from the
/// array's type, as in the interpreter.
extern "C" fn jit_ev_array_write(t: *mut JitThread, a: u64, i: u64, v: u64, s: u64) {
    hook(t, |t| {
        let is_ref =
            t.rt.image
                .elem_is_ref
                .get(heap::type_id(a) as usize)
                .copied()
                .unwrap_or(false);
        let loc = Loc {
            obj: ObjId(a),
            slot: i as u32,
        };
        emit!(
            t,
            site(s),
            EventKind::Write {
                loc,
                value: ref_value(is_ref, v),
            }
        );
    });
}

/// `Begin`/`End` of a `deterministic`/`atomic` block: `which` = 2·end + atomic.
extern "C" fn jit_ev_spec(t: *mut JitThread, which: u64, s: u64) {
    hook(t, |t| {
        let spec = if which & 1 == 1 {
            ASpec::Atomic
        } else {
            ASpec::Deterministic
        };
        if which & 2 == 0 {
            emit!(t, site(s), EventKind::Begin { spec });
        } else {
            emit!(t, site(s), EventKind::End { spec });
        }
    });
}
