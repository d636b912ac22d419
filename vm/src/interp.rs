//! The interpreter over the IR: the reference semantics of CapJava.
//!
//! One [`Interp`] per guest thread. CapJava frames live on an explicit frame stack
//! (no Rust recursion); locals are 64-bit slots in one register vector, each frame a
//! window of it. Every block entry counts one step (`--max-steps`) and polls the
//! abort flag, so a stopping program ends promptly.
//!
//! Events (only when a chain is active, see `crate::bridge`): field/static/element
//! reads and writes, volatile reads/writes (atomic with their event), allocations
//! (one per array of a multi-dimensional `new`), method enter/exit around calls (the
//! call site is the event site), acquire/release for outermost monitor levels
//! (`synchronized` methods: acquire, enter, begin, …, end, exit, release), wait as
//! release + acquire, fork/join, barrier enter/exit, spec begin/end, thread
//! start/end.

use std::sync::Arc;

use analyses::thread::ThreadCx;
use analyses::{EventKind, Loc, MethodId, ObjId, Spec as ASpec};
use lang::ir::{
    FuncId, FuncKind, Function, Inst, Local, PrintArg, Program, Repr, SiteId, Spec, Terminator,
    Type,
};

use crate::Tid;
use crate::bridge::ref_value;
use crate::error::{ErrorKind, RuntimeError, StackFrame};
use crate::heap::{self, Arena, HeapFull};
use crate::image::{Image, const_bits};
use crate::jfmt::double_to_string;
use crate::layout::{self, Kind};
use crate::ops;
use crate::runtime::Runtime;
use crate::sched::Stop;
use crate::sync;

#[derive(Clone, Copy, Debug)]
struct Frame {
    func: FuncId,
    /// Where to resume (saved at calls).
    block: u32,
    ip: u32,
    /// First register of this frame.
    base: usize,
    /// Caller's local receiving the return value.
    ret: Option<Local>,
    /// The call (or fork) site that created this frame.
    call_site: SiteId,
    /// The monitor a `synchronized` method holds (0 = none).
    lock: u64,
}

pub struct Interp {
    rt: Arc<Runtime>,
    tid: Tid,
    seeded: bool,
    frames: Vec<Frame>,
    regs: Vec<u64>,
    arena: Arena,
    steps: u64,
    cx: Option<ThreadCx>,
}

fn spec_of(s: Spec) -> ASpec {
    match s {
        Spec::Deterministic => ASpec::Deterministic,
        Spec::Atomic => ASpec::Atomic,
    }
}

/// The first site in block `bi` of `func` (for errors raised at a block boundary).
fn block_site(func: &Function, bi: usize) -> SiteId {
    func.blocks
        .get(bi)
        .and_then(|b| b.insts.iter().find_map(inst_site))
        .unwrap_or(func.site)
}

fn inst_site(i: &Inst) -> Option<SiteId> {
    match i {
        Inst::Binary { site, .. }
        | Inst::GetField { site, .. }
        | Inst::PutField { site, .. }
        | Inst::GetStatic { site, .. }
        | Inst::PutStatic { site, .. }
        | Inst::ArrayLoad { site, .. }
        | Inst::ArrayStore { site, .. }
        | Inst::ArrayLength { site, .. }
        | Inst::New { site, .. }
        | Inst::NewArray { site, .. }
        | Inst::Call { site, .. }
        | Inst::Fork { site, .. }
        | Inst::Join { site, .. }
        | Inst::MonitorEnter { site, .. }
        | Inst::MonitorExit { site, .. }
        | Inst::Wait { site, .. }
        | Inst::Notify { site, .. }
        | Inst::NewBarrier { site, .. }
        | Inst::BarrierAwait { site, .. }
        | Inst::SpecBegin { site, .. }
        | Inst::SpecEnd { site, .. }
        | Inst::Print { site, .. }
        | Inst::Assert { site, .. } => Some(*site),
        _ => None,
    }
}

/// The CapJava stack for an error at `site` in the innermost frame.
fn stack_of(frames: &[Frame], site: SiteId) -> Vec<StackFrame> {
    let mut out = Vec::with_capacity(frames.len());
    let mut s = site;
    for f in frames.iter().rev() {
        out.push(StackFrame {
            func: f.func,
            site: s,
        });
        s = f.call_site;
    }
    out
}

/// Deliver an event if a chain is active.
macro_rules! emit {
    ($self:ident, $rt:expr, $site:expr, $kind:expr) => {
        if let (Some(b), Some(cx)) = ($rt.bridge.as_ref(), $self.cx.as_mut()) {
            b.emit(cx, $site, $kind);
        }
    };
}

/// Run guest thread `tid` from `func(args)` to its end; `site` is the fork site (the
/// declaration of `main` for the main thread).
pub fn run_thread(
    rt: Arc<Runtime>,
    tid: Tid,
    func: FuncId,
    args: Vec<u64>,
    site: SiteId,
    cx: Option<ThreadCx>,
) {
    let rt2 = rt.clone();
    let body = std::panic::AssertUnwindSafe(move || {
        let mut it = Interp {
            seeded: rt.seeded,
            rt,
            tid,
            frames: Vec::new(),
            regs: Vec::new(),
            arena: Arena::default(),
            steps: 0,
            cx,
        };
        if it.rt.sched.start(tid).is_ok() {
            let _ = it.run_entry(func, &args, site);
        }
    });
    if let Err(panic) = std::panic::catch_unwind(body) {
        let msg = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        rt2.sched.fail(RuntimeError {
            kind: ErrorKind::Internal,
            detail: msg,
            tid,
            site,
            stack: Vec::new(),
            notes: Vec::new(),
        });
    }
    rt2.sched.finish(tid);
}

impl Interp {
    /// Record a runtime error at `site` of the innermost frame and stop.
    fn fail(&self, kind: ErrorKind, detail: String, site: SiteId) -> Stop {
        self.rt.sched.fail(RuntimeError {
            kind,
            detail,
            tid: self.tid,
            site,
            stack: stack_of(&self.frames, site),
            notes: Vec::new(),
        })
    }

    /// The heap limit was hit allocating `words` words.
    fn heap_full(&self, site: SiteId, words: Option<usize>) -> Stop {
        let h = &self.rt.image.heap;
        let what = match words.and_then(|w| w.checked_mul(layout::WORD)) {
            Some(b) => format!("cannot allocate {b} bytes"),
            None => "cannot allocate an array that large".to_string(),
        };
        let detail = format!("{what} ({} of {} bytes in use)", h.used(), h.limit());
        self.fail(ErrorKind::HeapLimit, detail, site)
    }

    #[inline]
    fn point(&self) -> Result<(), Stop> {
        self.rt.sched.point(self.tid, self.seeded)
    }

    fn run_entry(&mut self, func: FuncId, args: &[u64], site: SiteId) -> Result<(), Stop> {
        let rt = self.rt.clone();
        emit!(self, rt, site, EventKind::ThreadStart);
        let f = rt.image.program.func(func);
        self.regs.resize(f.locals.len().max(args.len()), 0);
        self.regs[..args.len()].copy_from_slice(args);
        self.frames.push(Frame {
            func,
            block: 0,
            ip: 0,
            base: 0,
            ret: None,
            call_site: site,
            lock: 0,
        });
        self.steps += 1;
        self.enter_frame(site)?;
        self.run()?;
        emit!(self, rt, site, EventKind::ThreadEnd);
        Ok(())
    }

    /// Method prologue of the frame just pushed: acquire (synchronized), enter, begin.
    fn enter_frame(&mut self, site: SiteId) -> Result<(), Stop> {
        let rt = self.rt.clone();
        let fr = *self.frames.last().expect("frame");
        let f = rt.image.program.func(fr.func);
        if f.is_synchronized {
            let obj = if f.kind == FuncKind::Static {
                rt.image.class_monitor(f.class)
            } else {
                self.regs[fr.base]
            };
            self.point()?;
            self.monitor_enter(obj, site)?;
            if let Some(top) = self.frames.last_mut() {
                top.lock = obj;
            }
        }
        if let (Some(b), Some(cx)) = (rt.bridge.as_ref(), self.cx.as_mut()) {
            let first = if f.kind == FuncKind::Static { 0 } else { 1 };
            let receiver = (first == 1).then(|| ObjId(self.regs[fr.base]));
            let args: Vec<ObjId> = (first..f.num_params as usize)
                .filter(|&i| f.locals[i].ty.is_ref() && self.regs[fr.base + i] != 0)
                .map(|i| ObjId(self.regs[fr.base + i]))
                .collect();
            b.emit(
                cx,
                site,
                EventKind::Enter {
                    method: MethodId(fr.func.0),
                    receiver,
                    args: &args,
                },
            );
            if f.is_deterministic {
                b.emit(
                    cx,
                    site,
                    EventKind::Begin {
                        spec: ASpec::Deterministic,
                    },
                );
            }
            if f.is_atomic {
                b.emit(
                    cx,
                    site,
                    EventKind::Begin {
                        spec: ASpec::Atomic,
                    },
                );
            }
        }
        Ok(())
    }

    /// Method epilogue (end, exit, release) and pop.
    fn leave_frame(&mut self, val: u64) -> Result<Frame, Stop> {
        let rt = self.rt.clone();
        let fr = *self.frames.last().expect("frame");
        let f = rt.image.program.func(fr.func);
        if let (Some(b), Some(cx)) = (rt.bridge.as_ref(), self.cx.as_mut()) {
            let site = fr.call_site;
            if f.is_atomic {
                b.emit(
                    cx,
                    site,
                    EventKind::End {
                        spec: ASpec::Atomic,
                    },
                );
            }
            if f.is_deterministic {
                b.emit(
                    cx,
                    site,
                    EventKind::End {
                        spec: ASpec::Deterministic,
                    },
                );
            }
            b.emit(
                cx,
                site,
                EventKind::Exit {
                    method: MethodId(fr.func.0),
                    ret: ref_value(f.ret.is_ref(), val),
                },
            );
        }
        if fr.lock != 0 {
            self.point()?;
            self.monitor_exit(fr.lock, fr.call_site)?;
        }
        self.frames.pop();
        Ok(fr)
    }

    fn monitor_enter(&mut self, obj: u64, site: SiteId) -> Result<(), Stop> {
        let rt = self.rt.clone();
        let frames = &self.frames;
        let outer = sync::acquire(
            &rt.image.heap,
            &rt.sched,
            &mut self.arena,
            self.tid,
            obj,
            site,
            &|| stack_of(frames, site),
        )?;
        if outer {
            emit!(self, rt, site, EventKind::Acquire { lock: ObjId(obj) });
        }
        Ok(())
    }

    fn monitor_exit(&mut self, obj: u64, site: SiteId) -> Result<(), Stop> {
        let rt = self.rt.clone();
        match sync::exit(self.tid, obj) {
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
                emit!(self, rt, site, EventKind::Release { lock: ObjId(obj) });
                sync::unlock(&rt.sched, m, obj);
                Ok(())
            }
        }
    }

    fn null(&self, what: &str, site: SiteId) -> Stop {
        self.fail(ErrorKind::NullDereference, what.to_string(), site)
    }

    /// Allocate `new T[d0][d1]…` (`elem` = element type of the outermost array).
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
        let a = a.map_err(|_| self.heap_full(site, words))?;
        heap::store(a, layout::ARRAY_LEN, len);
        let rt = self.rt.clone();
        emit!(self, rt, site, EventKind::Alloc { obj: ObjId(a) });
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

    fn print(&self, prog: &Program, args: &[PrintArg], base: usize) {
        let mut s = String::new();
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            match a {
                PrintArg::Str(x) => s.push_str(x),
                PrintArg::Value(l, repr) => {
                    let v = self.regs[base + l.index()];
                    match repr {
                        Repr::Int => s.push_str(&(v as i64).to_string()),
                        Repr::Double => s.push_str(&double_to_string(f64::from_bits(v))),
                        Repr::Bool => s.push_str(if v != 0 { "true" } else { "false" }),
                        Repr::Ref => s.push_str(&crate::env::obj_label(&self.rt.image, v)),
                        Repr::Void => {}
                    }
                }
            }
        }
        let _ = prog;
        s.push('\n');
        self.rt.out.line(&s);
    }

    /// The main loop: runs until the thread's entry frame returns.
    fn run(&mut self) -> Result<(), Stop> {
        let rt = self.rt.clone();
        let img: &Image = &rt.image;
        let prog: &Program = &img.program;
        let max_steps = rt.limits.max_steps;
        'frames: loop {
            let fr = *self.frames.last().expect("frame");
            let func = prog.func(fr.func);
            let base = fr.base;
            let mut bi = fr.block as usize;
            let mut ip = fr.ip as usize;
            macro_rules! r {
                ($l:expr) => {
                    self.regs[base + ($l).index()]
                };
            }
            loop {
                let block = &func.blocks[bi];
                while ip < block.insts.len() {
                    let inst = &block.insts[ip];
                    ip += 1;
                    match inst {
                        Inst::Const { dst, value } => r!(dst) = const_bits(*value),
                        Inst::Copy { dst, src } => r!(dst) = r!(src),
                        Inst::Unary { dst, op, src } => r!(dst) = ops::unary(*op, r!(src)),
                        Inst::Binary {
                            dst,
                            op,
                            lhs,
                            rhs,
                            site,
                        } => match ops::binary(*op, r!(lhs), r!(rhs)) {
                            Ok(v) => r!(dst) = v,
                            Err(ops::DivByZero) => {
                                return Err(self.fail(
                                    ErrorKind::DivisionByZero,
                                    String::new(),
                                    *site,
                                ));
                            }
                        },
                        Inst::Convert { dst, conv, src } => r!(dst) = ops::convert(*conv, r!(src)),
                        Inst::GetField {
                            dst,
                            obj,
                            field,
                            site,
                        } => {
                            let o = r!(obj);
                            if o == 0 {
                                let fd = prog.field(*field);
                                let cn = &prog.class(field.class).name;
                                return Err(
                                    self.null(&format!("reading field {cn}.{}", fd.name), *site)
                                );
                            }
                            self.point()?;
                            let slot = layout::FIELD0 + field.index as usize;
                            let loc = Loc {
                                obj: ObjId(o),
                                slot: field.index,
                            };
                            r!(dst) =
                                self.read(o, slot, loc, prog.field(*field).is_volatile, *site);
                        }
                        Inst::PutField {
                            obj,
                            field,
                            src,
                            site,
                        } => {
                            let o = r!(obj);
                            if o == 0 {
                                let fd = prog.field(*field);
                                let cn = &prog.class(field.class).name;
                                return Err(
                                    self.null(&format!("writing field {cn}.{}", fd.name), *site)
                                );
                            }
                            self.point()?;
                            let fd = prog.field(*field);
                            let slot = layout::FIELD0 + field.index as usize;
                            let loc = Loc {
                                obj: ObjId(o),
                                slot: field.index,
                            };
                            let v = r!(src);
                            self.write(o, slot, loc, v, fd.ty.is_ref(), fd.is_volatile, *site);
                        }
                        Inst::GetStatic { dst, field, site } => {
                            self.point()?;
                            let sf = prog.static_field(*field);
                            let loc = Loc {
                                obj: ObjId(img.statics),
                                slot: field.0,
                            };
                            r!(dst) = self.read(
                                img.statics,
                                layout::FIELD0 + field.index(),
                                loc,
                                sf.is_volatile,
                                *site,
                            );
                        }
                        Inst::PutStatic { field, src, site } => {
                            self.point()?;
                            let sf = prog.static_field(*field);
                            let loc = Loc {
                                obj: ObjId(img.statics),
                                slot: field.0,
                            };
                            let v = r!(src);
                            self.write(
                                img.statics,
                                layout::FIELD0 + field.index(),
                                loc,
                                v,
                                sf.ty.is_ref(),
                                sf.is_volatile,
                                *site,
                            );
                        }
                        Inst::ArrayLoad {
                            dst,
                            arr,
                            index,
                            site,
                        } => {
                            let a = r!(arr);
                            let i = r!(index) as i64;
                            let slot = self.element(a, i, *site)?;
                            self.point()?;
                            let v = heap::load(a, slot);
                            r!(dst) = v;
                            let loc = Loc {
                                obj: ObjId(a),
                                slot: i as u32,
                            };
                            emit!(self, rt, *site, EventKind::Read { loc });
                        }
                        Inst::ArrayStore {
                            arr,
                            index,
                            src,
                            site,
                        } => {
                            let a = r!(arr);
                            let i = r!(index) as i64;
                            let slot = self.element(a, i, *site)?;
                            self.point()?;
                            let v = r!(src);
                            heap::store(a, slot, v);
                            if rt.bridge.is_some() {
                                let is_ref = img
                                    .elem_is_ref
                                    .get(heap::type_id(a) as usize)
                                    .copied()
                                    .unwrap_or(false);
                                let loc = Loc {
                                    obj: ObjId(a),
                                    slot: i as u32,
                                };
                                emit!(
                                    self,
                                    rt,
                                    *site,
                                    EventKind::Write {
                                        loc,
                                        value: ref_value(is_ref, v),
                                    }
                                );
                            }
                        }
                        Inst::ArrayLength { dst, arr, site } => {
                            let a = r!(arr);
                            if a == 0 {
                                return Err(self.null("reading the length of an array", *site));
                            }
                            r!(dst) = heap::array_len(a);
                        }
                        Inst::New { dst, class, site } => {
                            self.point()?;
                            let c = prog.class(*class);
                            let o = img
                                .heap
                                .alloc(
                                    &mut self.arena,
                                    layout::FIELD0 + c.fields.len(),
                                    Kind::Object,
                                    class.0,
                                    true,
                                )
                                .map_err(|_| {
                                    self.heap_full(*site, Some(layout::FIELD0 + c.fields.len()))
                                })?;
                            for (i, f) in c.fields.iter().enumerate() {
                                if let Some(k) = f.init {
                                    heap::store(o, layout::FIELD0 + i, const_bits(k));
                                }
                            }
                            r!(dst) = o;
                            emit!(self, rt, *site, EventKind::Alloc { obj: ObjId(o) });
                        }
                        Inst::NewArray {
                            dst,
                            elem,
                            dims,
                            site,
                        } => {
                            let ds: Vec<i64> = dims.iter().map(|l| r!(l) as i64).collect();
                            if let Some(n) = ds.iter().find(|n| **n < 0) {
                                return Err(self.fail(
                                    ErrorKind::NegativeArraySize,
                                    n.to_string(),
                                    *site,
                                ));
                            }
                            self.point()?;
                            r!(dst) = self.new_array(img, elem, &ds, *site)?;
                        }
                        Inst::NewBarrier { dst, parties, site } => {
                            let n = r!(parties) as i64;
                            if n < 1 || n > u32::MAX as i64 {
                                return Err(self.fail(
                                    ErrorKind::IllegalBarrierSize,
                                    format!("{n} parties"),
                                    *site,
                                ));
                            }
                            self.point()?;
                            let b = img
                                .heap
                                .alloc(
                                    &mut self.arena,
                                    layout::BARRIER_WORDS,
                                    Kind::Barrier,
                                    0,
                                    true,
                                )
                                .map_err(|_| self.heap_full(*site, Some(layout::BARRIER_WORDS)))?;
                            heap::store(b, layout::BARRIER_PARTIES, n as u64);
                            r!(dst) = b;
                            emit!(self, rt, *site, EventKind::Alloc { obj: ObjId(b) });
                        }
                        Inst::Call {
                            dst,
                            func: f,
                            args,
                            site,
                        } => {
                            let callee = prog.func(*f);
                            if callee.kind != FuncKind::Static && r!(args[0]) == 0 {
                                return Err(self.null(
                                    &format!("calling {} on null", prog.func_name(*f)),
                                    *site,
                                ));
                            }
                            if self.frames.len() >= rt.limits.max_call_depth {
                                return Err(self.fail(
                                    ErrorKind::StackOverflow,
                                    format!("more than {} nested calls", rt.limits.max_call_depth),
                                    *site,
                                ));
                            }
                            self.point()?;
                            if let Some(top) = self.frames.last_mut() {
                                top.block = bi as u32;
                                top.ip = ip as u32;
                            }
                            let nb = base + func.locals.len();
                            let need = nb + callee.locals.len().max(args.len());
                            if self.regs.len() < need {
                                self.regs.resize(need, 0);
                            }
                            self.regs[nb..need].fill(0);
                            for (i, a) in args.iter().enumerate() {
                                self.regs[nb + i] = self.regs[base + a.index()];
                            }
                            self.frames.push(Frame {
                                func: *f,
                                block: 0,
                                ip: 0,
                                base: nb,
                                ret: *dst,
                                call_site: *site,
                                lock: 0,
                            });
                            self.step(max_steps, *site)?;
                            self.enter_frame(*site)?;
                            continue 'frames;
                        }
                        Inst::Fork {
                            dst,
                            func: f,
                            args,
                            site,
                        } => {
                            let vals: Vec<u64> = args.iter().map(|a| r!(a)).collect();
                            r!(dst) = self.fork(prog, *f, vals, *site)?;
                        }
                        Inst::Join { thread, site } => {
                            let t = r!(thread);
                            if t == 0 {
                                return Err(self.null("joining a null thread", *site));
                            }
                            self.point()?;
                            let child = heap::load(t, layout::THREAD_TID) as Tid;
                            let frames = &self.frames;
                            rt.sched
                                .join(self.tid, child, *site, &|| stack_of(frames, *site))?;
                            emit!(self, rt, *site, EventKind::Join { child });
                        }
                        Inst::ThreadId { dst } => r!(dst) = self.tid as u64,
                        Inst::MonitorEnter { obj, site } => {
                            let o = r!(obj);
                            if o == 0 {
                                return Err(self.null("synchronizing on null", *site));
                            }
                            self.point()?;
                            self.monitor_enter(o, *site)?;
                        }
                        Inst::MonitorExit { obj, site } => {
                            let o = r!(obj);
                            if o == 0 {
                                return Err(self.null("synchronizing on null", *site));
                            }
                            self.point()?;
                            self.monitor_exit(o, *site)?;
                        }
                        Inst::Wait { obj, site } => {
                            let o = r!(obj);
                            self.wait(o, *site)?;
                        }
                        Inst::Notify { obj, all, site } => {
                            let o = r!(obj);
                            if o == 0 {
                                return Err(self.null("notify on null", *site));
                            }
                            self.point()?;
                            if sync::check_held(self.tid, o).is_err() {
                                let what = if *all { "notifyAll" } else { "notify" };
                                return Err(self.fail(
                                    ErrorKind::IllegalMonitorState,
                                    format!(
                                        "{what}() on {} without holding its monitor",
                                        crate::env::obj_label(img, o)
                                    ),
                                    *site,
                                ));
                            }
                            sync::notify(&rt.sched, o, *all);
                        }
                        Inst::BarrierAwait { barrier, site } => {
                            let b = r!(barrier);
                            self.barrier_await(b, *site)?;
                        }
                        Inst::SpecBegin { spec, site } => {
                            emit!(
                                self,
                                rt,
                                *site,
                                EventKind::Begin {
                                    spec: spec_of(*spec)
                                }
                            );
                        }
                        Inst::SpecEnd { spec, site } => {
                            emit!(
                                self,
                                rt,
                                *site,
                                EventKind::End {
                                    spec: spec_of(*spec)
                                }
                            );
                        }
                        Inst::Math { dst, func: m, args } => {
                            let mut a = [0u64; 2];
                            for (k, l) in args.iter().take(2).enumerate() {
                                a[k] = r!(l);
                            }
                            r!(dst) = ops::math(*m, &a[..args.len().min(2)]);
                        }
                        Inst::Print { args, .. } => self.print(prog, args, base),
                        Inst::Assert { cond, site } => {
                            if r!(cond) == 0 {
                                return Err(self.fail(
                                    ErrorKind::AssertionFailed,
                                    String::new(),
                                    *site,
                                ));
                            }
                        }
                    }
                }
                match &block.term {
                    Terminator::Jump(b) => bi = b.index(),
                    Terminator::Branch {
                        cond,
                        then_to,
                        else_to,
                    } => {
                        bi = if r!(cond) != 0 {
                            then_to.index()
                        } else {
                            else_to.index()
                        }
                    }
                    Terminator::Return(v) => {
                        let val = v.map_or(0, |l| r!(l));
                        let done = self.leave_frame(val)?;
                        match self.frames.last() {
                            None => return Ok(()),
                            Some(caller) => {
                                if let Some(d) = done.ret {
                                    let cb = caller.base;
                                    self.regs[cb + d.index()] = val;
                                }
                            }
                        }
                        continue 'frames;
                    }
                    Terminator::Unreachable => {
                        let site = block_site(func, bi);
                        return Err(self.fail(
                            ErrorKind::Internal,
                            "reached an unfinished block".into(),
                            site,
                        ));
                    }
                }
                ip = 0;
                if self.steps >= max_steps || rt.sched.aborted() {
                    self.step(max_steps, block_site(func, bi))?;
                }
                self.steps += 1;
            }
        }
    }

    /// Count a step; fail on the step limit; stop if the program is stopping.
    #[inline]
    fn step(&mut self, max_steps: u64, site: SiteId) -> Result<(), Stop> {
        if self.rt.sched.aborted() {
            return Err(Stop);
        }
        if self.steps >= max_steps {
            return Err(self.fail(
                ErrorKind::StepLimit,
                format!("more than {max_steps} basic blocks in this thread"),
                site,
            ));
        }
        self.steps += 1;
        Ok(())
    }

    /// Null and bounds checks of `a[i]`; returns the element's word index.
    #[inline]
    fn element(&self, a: u64, i: i64, site: SiteId) -> Result<usize, Stop> {
        if a == 0 {
            return Err(self.null("indexing a null array", site));
        }
        let len = heap::array_len(a);
        if i < 0 || i as u64 >= len {
            return Err(self.fail(
                ErrorKind::IndexOutOfBounds,
                format!("index {i}, length {len}"),
                site,
            ));
        }
        Ok(layout::ARRAY_DATA + i as usize)
    }

    /// A field or static read (volatile: atomic with its event).
    #[inline]
    fn read(&mut self, o: u64, slot: usize, loc: Loc, volatile: bool, site: SiteId) -> u64 {
        let rt = &self.rt;
        match (rt.bridge.as_ref(), self.cx.as_mut()) {
            (Some(b), Some(cx)) => {
                if volatile {
                    let _g = b.volatile_lock(loc);
                    let v = heap::load_volatile(o, slot);
                    b.emit(cx, site, EventKind::VolatileRead { loc });
                    v
                } else {
                    let v = heap::load(o, slot);
                    b.emit(cx, site, EventKind::Read { loc });
                    v
                }
            }
            _ if volatile => heap::load_volatile(o, slot),
            _ => heap::load(o, slot),
        }
    }

    /// A field or static write (volatile: atomic with its event).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn write(
        &mut self,
        o: u64,
        slot: usize,
        loc: Loc,
        v: u64,
        is_ref: bool,
        volatile: bool,
        site: SiteId,
    ) {
        let rt = &self.rt;
        match (rt.bridge.as_ref(), self.cx.as_mut()) {
            (Some(b), Some(cx)) => {
                let value = ref_value(is_ref, v);
                if volatile {
                    let _g = b.volatile_lock(loc);
                    heap::store_volatile(o, slot, v);
                    b.emit(cx, site, EventKind::VolatileWrite { loc, value });
                } else {
                    heap::store(o, slot, v);
                    b.emit(cx, site, EventKind::Write { loc, value });
                }
            }
            _ if volatile => heap::store_volatile(o, slot, v),
            _ => heap::store(o, slot, v),
        }
    }

    /// `fork f(vals)`: a new guest thread; returns its `Thread` object.
    fn fork(
        &mut self,
        prog: &Program,
        f: FuncId,
        vals: Vec<u64>,
        site: SiteId,
    ) -> Result<u64, Stop> {
        let rt = self.rt.clone();
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
            .alloc(&mut self.arena, layout::THREAD_WORDS, Kind::Thread, 0, true)
            .map_err(|_| self.heap_full(site, Some(layout::THREAD_WORDS)))?;
        let child = rt.sched.register();
        heap::store(t, layout::THREAD_TID, child as u64);
        let child_cx = match (rt.bridge.as_ref(), self.cx.as_mut()) {
            (Some(b), Some(cx)) => {
                let handed: Vec<ObjId> = vals
                    .iter()
                    .enumerate()
                    .filter(|(i, v)| **v != 0 && callee.locals[*i].ty.is_ref())
                    .map(|(_, v)| ObjId(*v))
                    .collect();
                Some(b.fork(cx, child, site, &handed))
            }
            _ => None,
        };
        let rt2 = rt.clone();
        if let Err(e) = rt.spawn(child, move || {
            run_thread(rt2, child, f, vals, site, child_cx)
        }) {
            rt.sched.finish(child);
            return Err(self.fail(
                ErrorKind::ThreadLimit,
                format!("the OS refused a new thread: {e}"),
                site,
            ));
        }
        Ok(t)
    }

    /// `o.wait()`: release (event) while holding, sleep, re-acquire, acquire (event).
    fn wait(&mut self, o: u64, site: SiteId) -> Result<(), Stop> {
        let rt = self.rt.clone();
        if o == 0 {
            return Err(self.null("wait on null", site));
        }
        self.point()?;
        let m = match sync::check_held(self.tid, o) {
            Ok(m) => m,
            Err(_) => {
                return Err(self.fail(
                    ErrorKind::IllegalMonitorState,
                    format!(
                        "wait() on {} without holding its monitor",
                        crate::env::obj_label(&rt.image, o)
                    ),
                    site,
                ));
            }
        };
        emit!(self, rt, site, EventKind::Release { lock: ObjId(o) });
        let frames = &self.frames;
        sync::wait(&rt.sched, m, self.tid, o, site, &|| stack_of(frames, site))?;
        emit!(self, rt, site, EventKind::Acquire { lock: ObjId(o) });
        Ok(())
    }

    /// `b.await()`: barrier enter (atomically with the arrival), sleep until the
    /// episode trips, barrier exit.
    fn barrier_await(&mut self, b: u64, site: SiteId) -> Result<(), Stop> {
        let rt = self.rt.clone();
        if b == 0 {
            return Err(self.null("await on a null barrier", site));
        }
        self.point()?;
        let frames = &self.frames;
        let cx = &mut self.cx;
        let bridge = rt.bridge.as_ref();
        let mut enter = |generation: u64, parties: u32| {
            if let (Some(br), Some(cx)) = (bridge, cx.as_mut()) {
                br.emit(
                    cx,
                    site,
                    EventKind::BarrierEnter {
                        barrier: ObjId(b),
                        generation,
                        parties,
                    },
                );
            }
        };
        let (generation, parties) = sync::barrier_await(
            &rt.sched,
            self.tid,
            b,
            site,
            &|| stack_of(frames, site),
            &mut enter,
        )?;
        emit!(
            self,
            rt,
            site,
            EventKind::BarrierExit {
                barrier: ObjId(b),
                generation,
                parties,
            }
        );
        Ok(())
    }
}
