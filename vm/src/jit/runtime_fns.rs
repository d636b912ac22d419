//! The one table of runtime functions that generated code calls ([`Rt`]), their
//! signatures and symbol registration, and their bodies.
//!
//! Allocation, monitors, `wait`/`notify`, barriers, `fork`/`join`, method
//! prologue/epilogue and `print` call the very operations the interpreter performs
//! (`crate::rtops`, through [`JitThread`]'s `guest`); the other bodies mirror the
//! interpreter's handling of the same instruction in `crate::interp` (same checks in
//! the same order, same scheduling points, same events, same error kinds, messages
//! and sites) over the same runtime pieces (`sync`, `sched`, `heap`, `hook`,
//! `ops`), so the tiers cannot drift apart in anything but the glue. Fallible functions set `JitThread::failed` when the thread
//! must unwind; generated code reads it after the call.
//!
//! A Rust panic must not unwind into generated code (it would abort the process):
//! every fallible body runs under [`guarded`], which turns a panic into the
//! `Internal` runtime error, as `interp::run_thread` does.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

use analyses::{EventKind, Loc, ObjId, Spec as ASpec};
use lang::ir::{FuncId, SiteId};

use crate::Tid;
use crate::bridge::ref_value;
use crate::error::ErrorKind;
use crate::ops;
use crate::sched::Stop;

use crate::rtops::{self, Guest};

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
    Check,
    Ordered,
    Covered,
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
    pub const ALL: [Rt; 26] = [
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
        Rt::Check,
        Rt::Ordered,
        Rt::Covered,
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
            Rt::Check => (
                "capvm_jit_check",
                &[I64, I64, I64, I64, I64, I64, I64],
                None,
            ),
            Rt::Ordered => ("capvm_jit_ordered", &[I64, I64, I64], Some(I64)),
            Rt::Covered => (
                "capvm_jit_covered",
                &[I64, I64, I64, I64, I64, I64],
                Some(I64),
            ),
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
            Rt::Ordered => jit_ordered as extern "C" fn(u64, u64, u64) -> u64 as *const u8,
            Rt::Covered => {
                jit_covered as extern "C" fn(u64, u64, i64, i64, u64, u64) -> u64 as *const u8
            }
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
            Rt::Check => jit_check as extern "C" fn(C, u64, u64, u64, u64, u64, u64) as *const u8,
        }
    }

    /// Whether generated code calls it through a stub that keeps every register
    /// (`translate::keeper`): the functions that FastTrack's inline paths call
    /// where their tests miss and then go on (the access events, and
    /// `capvm_jit_ordered` from the exclusive rules), so that the values a hot loop
    /// keeps in registers (its `double`s, which the native convention would all
    /// clobber) stay there across the cold call instead of living on the stack for
    /// the whole loop. BigFoot's `Check` and `Covered` keep the native convention:
    /// through stubs, `bigfoot` measured no faster anywhere and sor a third slower.
    pub fn keeps_registers(self) -> bool {
        matches!(
            self,
            Rt::Ordered | Rt::EvRead | Rt::EvWrite | Rt::EvArrayWrite
        )
    }

    /// Its place in [`Rt::ALL`] (and in the tables indexed like it: the module's
    /// declarations, the stubs of `Rt::keeps_registers`).
    pub fn index(self) -> usize {
        Rt::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }

    /// Whether the first parameter is the thread context.
    pub fn takes_ctx(self) -> bool {
        !matches!(self, Rt::Math | Rt::FRem | Rt::Ordered | Rt::Covered)
    }
}

impl JitThread {
    /// Record a runtime error at `site` of the innermost frame and stop (the
    /// interpreter's `Interp::fail`).
    pub fn fail(&mut self, kind: ErrorKind, detail: String, site: SiteId) -> Stop {
        let stack = self.stack(site);
        let stop = rtops::fail(&self.rt, self.tid as Tid, kind, detail, site, stack);
        self.stop();
        stop
    }

    /// This thread unwinds; every other thread stops at its next poll.
    pub fn stop(&mut self) {
        self.failed = 1;
        self.code.abort.store(true, Ordering::Relaxed);
    }

    fn null(&mut self, what: &str, site: SiteId) -> Stop {
        self.fail(ErrorKind::NullDereference, what.to_string(), site)
    }

    /// This thread as the shared runtime operations see it ([`rtops::Guest`]). Run
    /// under [`guarded`], which unwinds the compiled code when `op` fails.
    fn guest<R>(&mut self, op: impl FnOnce(&mut Guest<'_>) -> R) -> R {
        let view = self.stack_view();
        let stack = move |s: SiteId| view.stack(s);
        op(&mut Guest {
            rt: &self.rt,
            tid: self.tid as Tid,
            seeded: self.seeded,
            arena: &mut self.arena,
            hook: &mut self.hook,
            stack: &stack,
        })
    }
}

/// Run a fallible body: `Err(Stop)` and panics set `failed` (a panic also records the
/// `Internal` error, like `interp::run_thread`).
fn guarded(t: *mut JitThread, f: impl FnOnce(&mut JitThread) -> Result<u64, Stop>) -> u64 {
    // SAFETY: generated code passes the context of the thread it runs on, which is
    // alive for the whole call and not otherwise borrowed meanwhile.
    let t = unsafe { &mut *t };
    let r = catch_unwind(AssertUnwindSafe(|| {
        t.sync_stack();
        f(&mut *t)
    }));
    match r {
        Ok(Ok(v)) => v,
        Ok(Err(Stop)) => {
            t.stop();
            0
        }
        Err(panic) => {
            let detail = rtops::panic_message(&*panic);
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
    guarded(t, |t| {
        if t.seeded {
            t.hook.flush_lazy();
        }
        t.rt.sched.point(t.tid as Tid, t.seeded).map(|_| 0)
    });
}

/// The runtime errors detected inline (see [`err`]); `a`/`b` are details.
extern "C" fn jit_error(t: *mut JitThread, code: i64, s: u64, a: i64, b: i64) {
    guarded(t, |t| {
        let s = site(s);
        let rt = t.rt.clone();
        let prog = &rt.image.program;
        let field = |a: i64, b: i64, writing: bool| {
            let f = lang::ir::FieldRef {
                class: lang::ir::ClassId(a as u32),
                index: b as u32,
            };
            rtops::null_field(prog, f, writing)
        };
        Err(match code {
            err::NULL_READ_FIELD => t.null(&field(a, b, false), s),
            err::NULL_WRITE_FIELD => t.null(&field(a, b, true), s),
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
        t.guest(|g| g.new_object(lang::ir::ClassId(class as u32), site(s)))
    })
}

/// `new T[d0]…` (Inst::NewArray); `elem` indexes `JitCode::new_arrays`.
extern "C" fn jit_new_array(t: *mut JitThread, elem: u64, dims: *const i64, n: u64, s: u64) -> u64 {
    guarded(t, |t| {
        // SAFETY: generated code passes a stack buffer of `n` dimensions.
        let ds = unsafe { std::slice::from_raw_parts(dims, n as usize) };
        let code = t.code.clone();
        t.guest(|g| g.new_array(&code.new_arrays[elem as usize], ds, site(s)))
    })
}

/// `new Barrier(n)`.
extern "C" fn jit_new_barrier(t: *mut JitThread, n: i64, s: u64) -> u64 {
    guarded(t, |t| t.guest(|g| g.new_barrier(n, site(s))))
}

/// `fork f(args)`; the child runs compiled code.
extern "C" fn jit_fork(t: *mut JitThread, f: u64, args: *const u64, n: u64, s: u64) -> u64 {
    guarded(t, |t| {
        let (f, s) = (FuncId(f as u32), site(s));
        // SAFETY: generated code passes a stack buffer of `n` argument slots.
        let vals: Vec<u64> = unsafe { std::slice::from_raw_parts(args, n as usize) }.to_vec();
        let (rt, code) = (t.rt.clone(), t.code.clone());
        let body = move |child, vals, hook| super::run_thread(rt, code, child, f, vals, s, hook);
        t.guest(|g| g.fork(f, vals, s, body))
    })
}

/// `t.join()`.
extern "C" fn jit_join(t: *mut JitThread, th: u64, s: u64) {
    guarded(t, |t| t.guest(|g| g.join(th, site(s))).map(|_| 0));
}

extern "C" fn jit_monitor_enter(t: *mut JitThread, o: u64, s: u64) {
    guarded(t, |t| {
        t.guest(|g| g.synchronize(o, true, site(s))).map(|_| 0)
    });
}

extern "C" fn jit_monitor_exit(t: *mut JitThread, o: u64, s: u64) {
    guarded(t, |t| {
        t.guest(|g| g.synchronize(o, false, site(s))).map(|_| 0)
    });
}

/// `o.wait()`.
extern "C" fn jit_wait(t: *mut JitThread, o: u64, s: u64) {
    guarded(t, |t| t.guest(|g| g.wait(o, site(s))).map(|_| 0));
}

/// `o.notify()` / `o.notifyAll()`.
extern "C" fn jit_notify(t: *mut JitThread, o: u64, all: u64, s: u64) {
    guarded(t, |t| {
        t.guest(|g| g.notify(o, all != 0, site(s))).map(|_| 0)
    });
}

/// `b.await()`.
extern "C" fn jit_barrier_await(t: *mut JitThread, b: u64, s: u64) {
    guarded(t, |t| t.guest(|g| g.barrier_await(b, site(s))).map(|_| 0));
}

/// Method prologue, run by the callee after the caller pushed its shadow frame:
/// enter, acquire (synchronized), begin. Returns the monitor held for the epilogue
/// (0 = none).
extern "C" fn jit_prologue(t: *mut JitThread, f: u64, params: *const u64) -> u64 {
    guarded(t, |t| {
        let fid = FuncId(f as u32);
        let n = t.rt.image.program.func(fid).num_params as usize;
        // SAFETY: generated code passes a buffer holding every parameter.
        let regs = unsafe { std::slice::from_raw_parts(params, n) };
        let (_, s) = t.top();
        t.guest(|g| g.enter_method(fid, regs, s))
    })
}

/// Method epilogue: end, release, exit.
extern "C" fn jit_epilogue(t: *mut JitThread, f: u64, ret: u64, lock: u64) {
    guarded(t, |t| {
        let (_, s) = t.top();
        t.guest(|g| g.leave_method(FuncId(f as u32), ret, lock, s))
            .map(|_| 0)
    });
}

/// `print(…)`: `id` indexes `JitCode::prints`, whose value arguments are numbered
/// positions in `vals`.
extern "C" fn jit_print(t: *mut JitThread, id: u64, vals: *const u64) {
    hook(t, |t| {
        let code = t.code.clone();
        // SAFETY: generated code stores one slot per value argument.
        rtops::print(&t.rt, &code.prints[id as usize], |l| unsafe {
            *vals.add(l.index())
        });
    });
}

/// `Math.*` that generated code does not compute inline (bit-identical: the
/// interpreter's [`ops::math`]). `func` is the index in [`super::translate::MATH_FNS`].
extern "C" fn jit_math(func: u64, a: u64, b: u64) -> u64 {
    ops::math(super::translate::MATH_FNS[func as usize], &[a, b])
}

/// `analyses::thread::ordered_before_thread` for the inline exclusive rules
/// (`analyses::pass::InlineCheck::FastTrack`); `ep` is the thread's epoch word. Out
/// of line, off the hot path: inline at every access site its compares made the
/// generated code, and its compilation's peak memory, markedly larger.
extern "C" fn jit_ordered(ep: u64, w: u64, r: u64) -> u64 {
    // SAFETY: `ep` is the running thread's `JitThread::epoch`, the address of its
    // own `ThreadCx::epoch_word`; no synchronization event of the thread can happen
    // during this call.
    u64::from(unsafe { analyses::thread::ordered_before_thread(ep as *const u64, w, r) })
}

/// `analyses::pass::bigfoot_cover_check` for BigFoot's element and range checks
/// (`analyses::pass::InlineCheck::FieldChecks`): `table` is the running thread's
/// `JitThread::fine`, `which` the check's site and kind (`site | write << 32`).
extern "C" fn jit_covered(table: u64, a: u64, lo: i64, hi: i64, step: u64, which: u64) -> u64 {
    use analyses::pass::BIGFOOT_TABLE_WORDS;
    use std::sync::atomic::AtomicU64;
    // SAFETY: `table` is the thread's table of `BIGFOOT_TABLE_WORDS` words (its
    // pass's, alive while the thread runs, or the static empty one), read and written
    // as atomics as the pass does. The static table is never written: its covered
    // ranges name no array, which the extension needs.
    let table =
        unsafe { std::slice::from_raw_parts(table as *const AtomicU64, BIGFOOT_TABLE_WORDS) };
    let (site, write) = (which as u32, which >> 32 != 0);
    u64::from(analyses::pass::bigfoot_cover_check(
        table,
        a,
        (lo, hi, step),
        site,
        write,
    ))
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
        v = t.hook.load_volatile(o, word as usize, loc, site(s));
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
        let value = ref_value(is_ref != 0, v);
        t.hook
            .store_volatile(o, word as usize, v, loc, value, site(s));
    });
}

/// `Read` of a field, static or element (after generated code loaded it).
extern "C" fn jit_ev_read(t: *mut JitThread, o: u64, slot: u64, s: u64) {
    hook(t, |t| {
        let loc = Loc {
            obj: ObjId(o),
            slot: slot as u32,
        };
        let from = std::mem::take(&mut t.past_filters) as usize;
        t.hook.emit_from(site(s), EventKind::Read { loc }, from);
    });
}

/// A BigFoot check (`translate`'s `check`): `which` is `kind * 2 + write` with kind
/// 0 = field group (`obj`, representative `x`, mask `y`), 1 = static (index `x`),
/// 2 = elements `x..y:z` of the array `obj`, 3 = element `x` of the array `obj`.
extern "C" fn jit_check(t: *mut JitThread, which: u64, obj: u64, x: u64, y: u64, z: u64, s: u64) {
    hook(t, |t| {
        let what = match which / 2 {
            0 => rtops::CheckOf::Group {
                obj,
                rep: x as u32,
                mask: y,
            },
            1 => rtops::CheckOf::Static { index: x as u32 },
            3 => rtops::CheckOf::Element {
                arr: obj,
                index: x as i64,
            },
            _ => rtops::CheckOf::Range {
                arr: obj,
                lo: x as i64,
                hi: y as i64,
                step: z as u32,
            },
        };
        rtops::emit_check(&mut t.hook, &t.rt.image, what, which & 1 != 0, site(s));
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
        let from = std::mem::take(&mut t.past_filters) as usize;
        t.hook
            .emit_from(site(s), EventKind::Write { loc, value }, from);
    });
}

/// `Write` of an array element; whether the value is a reference comes from the
/// array's type, as in the interpreter.
extern "C" fn jit_ev_array_write(t: *mut JitThread, a: u64, i: u64, v: u64, s: u64) {
    hook(t, |t| {
        let ev = rtops::element_write(&t.rt.image, a, i, v);
        let from = std::mem::take(&mut t.past_filters) as usize;
        t.hook.emit_from(site(s), ev, from);
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
            t.hook.emit(site(s), EventKind::Begin { spec });
        } else {
            t.hook.emit(site(s), EventKind::End { spec });
        }
    });
}
