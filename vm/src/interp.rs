//! The interpreter over the IR: the reference semantics of CapJava.
//!
//! One [`Interp`] per guest thread. CapJava frames live on an explicit frame stack
//! (no Rust recursion); locals are 64-bit slots in one register vector, each frame a
//! window of it. Every block entry counts one step (`--max-steps`) and polls the
//! abort flag, so a stopping program ends promptly.
//!
//! Events (only when a chain is active, see `crate::hook`): field/static/element
//! reads and writes, volatile reads/writes (atomic with their event), allocations
//! (one per array of a multi-dimensional `new`), method enter/exit around calls (the
//! call site is the event site), acquire/release for outermost monitor levels
//! (`synchronized` methods: enter, acquire, begin, …, end, release, exit), wait as
//! release + acquire, fork/join, barrier enter/exit, spec begin/end, thread
//! start/end.

use std::sync::Arc;

use analyses::{EventKind, Loc, ObjId, Spec as ASpec};
use lang::ir::{
    FieldRef, FuncId, FuncKind, Function, Inst, Local, Program, SiteId, Spec, Terminator,
};

use crate::Tid;
use crate::bridge::ref_value;
use crate::error::{ErrorKind, StackFrame};
use crate::heap::{self, Arena};
use crate::hook::Hook;
use crate::image::{Image, const_bits};
use crate::layout;
use crate::ops;
use crate::rtops::{self, Guest};
use crate::runtime::Runtime;
use crate::sched::Stop;

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
    hook: Hook,
}

fn spec_of(s: Spec) -> ASpec {
    match s {
        Spec::Deterministic => ASpec::Deterministic,
        Spec::Atomic => ASpec::Atomic,
    }
}

/// The first site in block `bi` of `func` (for errors raised at a block boundary;
/// the JIT uses it for its step limit too).
pub(crate) fn block_site(func: &Function, bi: usize) -> SiteId {
    func.blocks
        .get(bi)
        .and_then(|b| b.insts.iter().find_map(Inst::site))
        .unwrap_or(func.site)
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

/// Run `$body` with `$g` bound to this thread as a [`Guest`] of the shared runtime
/// operations (a macro, so `$body` may still borrow the registers).
macro_rules! guest {
    ($self:ident, $g:ident => $body:expr) => {{
        let frames = &$self.frames;
        let stack = |s: SiteId| stack_of(frames, s);
        let $g = &mut Guest {
            rt: &$self.rt,
            tid: $self.tid,
            seeded: $self.seeded,
            arena: &mut $self.arena,
            hook: &mut $self.hook,
            stack: &stack,
        };
        $body
    }};
}

/// Run guest thread `tid` from `func(args)` to its end; `site` is the fork site (the
/// declaration of `main` for the main thread).
pub fn run_thread(
    rt: Arc<Runtime>,
    tid: Tid,
    func: FuncId,
    args: Vec<u64>,
    site: SiteId,
    hook: Hook,
) {
    let body = move |rt: Arc<Runtime>| {
        let mut it = Interp {
            seeded: rt.seeded,
            rt,
            tid,
            frames: Vec::new(),
            regs: Vec::new(),
            arena: Arena::default(),
            steps: 0,
            hook,
        };
        let _ = it.run_entry(func, &args, site);
    };
    rtops::thread_main(rt, tid, site, body, || {});
}

impl Interp {
    /// Record a runtime error at `site` of the innermost frame and stop.
    fn fail(&self, kind: ErrorKind, detail: String, site: SiteId) -> Stop {
        let stack = stack_of(&self.frames, site);
        rtops::fail(&self.rt, self.tid, kind, detail, site, stack)
    }

    #[inline]
    fn point(&mut self) -> Result<(), Stop> {
        if self.seeded {
            self.hook.flush_lazy();
        }
        self.rt.sched.point(self.tid, self.seeded)
    }

    fn run_entry(&mut self, func: FuncId, args: &[u64], site: SiteId) -> Result<(), Stop> {
        let rt = self.rt.clone();
        self.hook.emit(site, EventKind::ThreadStart);
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
        self.hook.emit(site, EventKind::ThreadEnd);
        Ok(())
    }

    /// Method prologue of the frame just pushed: enter, acquire (synchronized), begin.
    fn enter_frame(&mut self, site: SiteId) -> Result<(), Stop> {
        let fr = *self.frames.last().expect("frame");
        self.hook.push_frame(fr.func, fr.call_site);
        let lock = guest!(self, g => g.enter_method(fr.func, &self.regs[fr.base..], site))?;
        if let Some(top) = self.frames.last_mut() {
            top.lock = lock;
        }
        Ok(())
    }

    /// Method epilogue (end, release, exit) and pop.
    fn leave_frame(&mut self, val: u64) -> Result<Frame, Stop> {
        let fr = *self.frames.last().expect("frame");
        guest!(self, g => g.leave_method(fr.func, val, fr.lock, fr.call_site))?;
        self.hook.pop_frame();
        self.frames.pop();
        Ok(fr)
    }

    fn null(&self, what: &str, site: SiteId) -> Stop {
        self.fail(ErrorKind::NullDereference, what.to_string(), site)
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
                            let (slot, loc) = self.field(prog, o, *field, false, *site)?;
                            let fd = prog.field(*field);
                            r!(dst) = self.read(o, slot, loc, fd.is_volatile, *site);
                        }
                        Inst::PutField {
                            obj,
                            field,
                            src,
                            site,
                        } => {
                            let o = r!(obj);
                            let (slot, loc) = self.field(prog, o, *field, true, *site)?;
                            let fd = prog.field(*field);
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
                            self.hook.emit(*site, EventKind::Read { loc });
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
                            // The event before the store, as for fields (`Interp::write`).
                            if self.hook.is_on() {
                                let ev = rtops::element_write(img, a, i as u64, v);
                                self.hook.emit(*site, ev);
                            }
                            heap::store(a, slot, v);
                        }
                        Inst::ArrayLength { dst, arr, site } => {
                            let a = r!(arr);
                            if a == 0 {
                                return Err(self.null("reading the length of an array", *site));
                            }
                            r!(dst) = heap::array_len(a);
                        }
                        Inst::New { dst, class, site } => {
                            r!(dst) = guest!(self, g => g.new_object(*class, *site))?;
                        }
                        Inst::NewArray {
                            dst,
                            elem,
                            dims,
                            site,
                        } => {
                            let ds: Vec<i64> = dims.iter().map(|l| r!(l) as i64).collect();
                            r!(dst) = guest!(self, g => g.new_array(elem, &ds, *site))?;
                        }
                        Inst::NewBarrier { dst, parties, site } => {
                            let n = r!(parties) as i64;
                            r!(dst) = guest!(self, g => g.new_barrier(n, *site))?;
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
                            let (rt2, f, site) = (rt.clone(), *f, *site);
                            let body = move |child, vals, hook| {
                                run_thread(rt2, child, f, vals, site, hook);
                            };
                            r!(dst) = guest!(self, g => g.fork(f, vals, site, body))?;
                        }
                        Inst::Join { thread, site } => {
                            let t = r!(thread);
                            guest!(self, g => g.join(t, *site))?;
                        }
                        Inst::ThreadId { dst } => r!(dst) = self.tid as u64,
                        Inst::MonitorEnter { obj, site } => {
                            let o = r!(obj);
                            guest!(self, g => g.synchronize(o, true, *site))?;
                        }
                        Inst::MonitorExit { obj, site } => {
                            let o = r!(obj);
                            guest!(self, g => g.synchronize(o, false, *site))?;
                        }
                        Inst::Wait { obj, site } => {
                            let o = r!(obj);
                            guest!(self, g => g.wait(o, *site))?;
                        }
                        Inst::Notify { obj, all, site } => {
                            let o = r!(obj);
                            guest!(self, g => g.notify(o, *all, *site))?;
                        }
                        Inst::BarrierAwait { barrier, site } => {
                            let b = r!(barrier);
                            guest!(self, g => g.barrier_await(b, *site))?;
                        }
                        Inst::SpecBegin { spec, site } => {
                            self.hook.emit(
                                *site,
                                EventKind::Begin {
                                    spec: spec_of(*spec),
                                },
                            );
                        }
                        Inst::SpecEnd { spec, site } => {
                            self.hook.emit(
                                *site,
                                EventKind::End {
                                    spec: spec_of(*spec),
                                },
                            );
                        }
                        Inst::Math { dst, func: m, args } => {
                            let mut a = [0u64; 2];
                            for (k, l) in args.iter().take(2).enumerate() {
                                a[k] = r!(l);
                            }
                            r!(dst) = ops::math(*m, &a[..args.len().min(2)]);
                        }
                        Inst::Print { args, .. } => {
                            rtops::print(&rt, args, |l| self.regs[base + l.index()]);
                        }
                        Inst::Assert { cond, site } => {
                            if r!(cond) == 0 {
                                return Err(self.fail(
                                    ErrorKind::AssertionFailed,
                                    String::new(),
                                    *site,
                                ));
                            }
                        }
                        Inst::Check {
                            target,
                            write,
                            site,
                        } => {
                            if self.hook.is_on() {
                                let regs = &self.regs;
                                rtops::check_targets(
                                    target,
                                    |l| regs[base + l.index()],
                                    |c| rtops::emit_check(&mut self.hook, img, c, *write, *site),
                                );
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

    /// Null check and scheduling point of an access to `o.field`; returns the
    /// field's word index and location.
    #[inline]
    fn field(
        &mut self,
        prog: &Program,
        o: u64,
        field: FieldRef,
        writing: bool,
        site: SiteId,
    ) -> Result<(usize, Loc), Stop> {
        if o == 0 {
            return Err(self.null(&rtops::null_field(prog, field, writing), site));
        }
        self.point()?;
        let loc = Loc {
            obj: ObjId(o),
            slot: field.index,
        };
        Ok((layout::FIELD0 + field.index as usize, loc))
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
        if volatile {
            return self.hook.load_volatile(o, slot, loc, site);
        }
        let v = heap::load(o, slot);
        self.hook.emit(site, EventKind::Read { loc });
        v
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
        let value = ref_value(is_ref, v);
        if volatile {
            self.hook.store_volatile(o, slot, v, loc, value, site);
        } else {
            // The event before the store: a filter marks what a written reference
            // makes reachable before another thread can read it there (see the
            // `escape` pass's module doc).
            self.hook.emit(site, EventKind::Write { loc, value });
            heap::store(o, slot, v);
        }
    }
}
