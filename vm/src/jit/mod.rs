//! The Cranelift JIT tier: every IR function compiled to a native function before
//! `main` runs, with the same observable behaviour as the interpreter.
//!
//! - [`translate`]: one [`translate::Translator`] walks a function's IR, one method
//!   per construct, in the same order as `interp::Interp::run`.
//! - [`runtime_fns`]: the one table of runtime functions generated code calls.
//! - [`abi`]: the thread context generated code reads and writes, and the shadow
//!   stack that gives runtime errors the interpreter's CapJava stack.
//!
//! What is inline: arithmetic (Java semantics, identical to `ops`), null and bounds
//! checks, field/element/static loads and stores (Relaxed atomics are plain aligned
//! moves on x86-64), `length`, direct calls, the call-depth check, step counting
//! (only with `--max-steps`), the stop-flag poll at loop back-edges, and the chain's
//! inline access filter ([`HeaderFilter`]: a header test, and for a dropped access
//! one per-site counter increment in the thread context instead of the hook).
//! Everything else calls the runtime, which performs the interpreter's own runtime
//! operations (`crate::rtops`). Hooks
//! (analysis events) are emitted only when a chain is active, scheduling points only
//! under `--sched seeded`.

pub mod abi;
pub mod exclusive;
pub mod homes;
pub mod runtime_fns;
pub mod translate;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use analyses::EventKind;
use analyses::pass::InlineFilter;
use cranelift::prelude::*;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};
use lang::ir::{FuncId, PrintArg, Program, SiteId, Type};
use parking_lot::Mutex;

use crate::Tid;
use crate::error::ErrorKind;
use crate::hook::Hook;
use crate::image::Image;
use crate::layout;
use crate::runtime::Runtime;

use abi::JitThread;
use runtime_fns::Rt;

/// What the generated code must contain; fixed per run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitOptions {
    /// A chain is active: emit the event hooks.
    pub hooks: bool,
    /// Emit the hooks of plain reads and writes (with `hooks`; off when the chain
    /// checks BigFoot's placed checks instead, `Bridge::plain_accesses`).
    pub access_hooks: bool,
    /// Every call goes through the runtime's prologue and epilogue for the chain's
    /// `Enter`/`Exit` events (with `hooks`). Off when the chain takes none
    /// (`analyses::Chain::frame_events`): a call then only lowers the thread's
    /// `frames_low` mark, and the runtime hands the shadow stack to the chain when
    /// an event needs the call context (`abi::JitThread::hook`).
    pub frame_events: bool,
    /// Without `frame_events`, by function id: the functions whose calls still go
    /// through the prologue and epilogue for their `Enter`/`Exit`, because a pass
    /// asked for them (`vm::bridge::Bridge::frames_of`).
    pub frames_of: Vec<bool>,
    /// Without `frame_events`, by function id: the calls that skip the prologue and
    /// epilogue when their receiver is the thread's nested-call word
    /// (`abi::JitThread::nested_word`), as `Guest::enter_method` would skip their
    /// `Enter`/`Exit` (`vm::bridge::Bridge::elidable`, `Hook::elides_frames`).
    pub elidable: Vec<bool>,
    /// Without `frame_events`, by function id: the calls that record their frame in
    /// the thread's lazy frames (`abi::JitThread::lazy_frames`) instead of calling
    /// the prologue, and end without the epilogue if the chain has not taken it
    /// since, as `Guest::enter_method` and `Guest::leave_method` would
    /// (`vm::bridge::Bridge::lazy`, `Hook::push_lazy_frame`).
    pub lazy: Vec<bool>,
    /// By function id, among `lazy`: the methods whose calls may repeat the
    /// thread's armed call without their check (`translate::repeatable_calls`,
    /// `analyses::pass::RepeatCall`). Empty: none (tests compare runs without).
    pub repeatable: Vec<bool>,
    /// `--sched seeded:N`: emit the scheduling points.
    pub seeded: bool,
    /// `--max-steps` is set: count executed blocks.
    pub count_steps: bool,
    /// The inline filters for access hooks, in chain order: the tests of the chain's
    /// first passes (`analyses::Chain::inline_filters`), each applied to what the
    /// ones before let through (a reference write only to the first).
    pub inline_filters: Vec<HeaderFilter>,
    /// An inline same-epoch check for access hooks, offered by the chain's detector.
    pub inline_check: Option<InlineDetector>,
    /// A plain access that passed every inline filter's test (not a reference
    /// write) ends there, counted, without a call: the only pass after the filters
    /// ignores plain accesses (`analyses::Chain::accesses_end_at_filters`, `bigfoot`).
    pub accesses_end_at_filters: bool,
    /// The capsule classes of the run, by class id (`analyses::env::Env::is_capsule_class`,
    /// which `--capsules` overrides): what `HeaderFilter::capsule_fields` and
    /// `HeaderFilter::capsule_calls` test. Empty without a chain.
    pub capsules: Vec<bool>,
    /// Count what generated code decides inline (the thread's inline counters,
    /// [`abi::JitThread::inline_drops`]). Those counts feed only the statistics
    /// (`RunConfig::stats`: `--stats`, `--report`), so a run without them counts
    /// nothing: a hit of an inline test then costs no load-add-store on its site's
    /// counter. Warnings are the same either way.
    pub count_inline: bool,
}

/// The detector's same-epoch test performed by generated code before an access hook
/// (`analyses::pass::InlineCheck`, `analyses::Chain::inline_check`): a hit skips
/// the call and adds one to the site's counter of the rule that decided it
/// ([`abi::JitThread::inline_drops`], parts `INLINE_FAST` and `INLINE_FAST_SHARED`);
/// the counts reach the chain (`Chain::add_inline_checks`) just before the thread's
/// `ThreadEnd`, so the per-pass counters and the detector's rule counts are those of
/// a run without it. Only on x86-64, where generated code's plain loads of the
/// shadow cells have the acquire ordering the unlocked check needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineDetector {
    /// `InlineCheck::FastTrack::top`: the hot shadow table's top level.
    pub top: u64,
    /// The check sits behind the first pass's header filter: only accesses the
    /// filter lets through, and no reference writes, are checked inline. (With
    /// `field_checks`: passes stand in front of the detector, and the check follows
    /// their tests for checks, `check_masks`.)
    pub behind_filter: bool,
    /// The test decides BigFoot's field checks (`InlineCheck::FieldChecks`), not
    /// plain accesses.
    pub field_checks: bool,
    /// With `field_checks` behind filters, by pass before the detector: the header
    /// bits whose absence makes that pass drop a check of an object or array
    /// (`analyses::pass::InlineCheckFlow::NotShared`: the escaped bit), 0 for a pass
    /// that forwards every check. A check dropped there counts for the pass in part
    /// `abi::inline_count(pass)` of its entry; statics are never dropped.
    pub check_masks: [u64; analyses::Chain::MAX_INLINE_FILTERS],
    /// `InlineGuard::Stamp` (`analyses::Chain::inline_guard`): a checker before the
    /// detector (`singletrack`) whose test must hold too, on the thread's word
    /// `abi::JitThread::guard`; its sole-accessor rule applies with `exclusive`.
    pub guard: Option<analyses::pass::InlineGuard>,
    /// Also apply FastTrack's exclusive rules inline, on the thread's own earlier
    /// epochs, under the cell's lock (`InlineCheck::FastTrack`), only when the chain
    /// takes the call context from the shadow stack (the packed site stores it,
    /// `abi::JitThread::ctx_word`): to plain accesses, or to BigFoot's field and
    /// static checks and to its element checks of arrays in the thread's table of
    /// fine arrays (`abi::JitThread::fine`).
    pub exclusive: bool,
}

/// A test on an object's header word that decides, without a call, that the first
/// pass of the chain would drop an access: the hook is skipped when
/// `header & mask == 0`. Valid only for the chain's *first* pass, and only for
/// objects and arrays (statics are never filtered inline). A skipped access adds one
/// to its site's counter in the thread context ([`abi::JitThread::inline_drops`]);
/// the counts reach the chain (`Chain::add_inline_drops`) just before the thread's
/// `ThreadEnd`, so the per-pass counters and the pass's statistics are the
/// interpreter's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderFilter {
    /// Reads and writes of non-reference values.
    pub mask: u64,
    /// Writes of reference-typed values.
    pub ref_write_mask: u64,
    /// Never skip an access to a field of a capsule class (`JitOptions::capsules`):
    /// a later pass checks them even on thread-local objects
    /// ([`analyses::Chain::checks_local`]), or the filter is `capsule`'s.
    pub capsule_fields: bool,
    /// The test holds as it is only while the thread runs no call of an instance
    /// method of a capsule class (`abi::JitThread::capsule_calls` is zero); inside
    /// one, `capsule`'s executor decides, as the thread's filter word says
    /// (`abi::JitThread::capsule_word`) while the pass's gate is open.
    pub capsule_calls: bool,
    /// With `capsule_calls`: the address of the pass's gate
    /// (`analyses::Chain::inline_filter_gate`); while the word there is 0, the
    /// thread's filter word (`abi::JitThread::capsule_word`) decides accesses inside
    /// capsule calls. `None`: they are delivered.
    pub gate: Option<u64>,
}

impl HeaderFilter {
    /// The `escape` pass (Rhodes ch. 4): an access to an object without the SHARED
    /// bit is thread-local; a reference write must also be seen when the target has
    /// the capsule bit (see `analyses::passes::escape`, "Chaining with capsule").
    pub const ESCAPE: HeaderFilter = HeaderFilter {
        mask: layout::SHARED_BIT,
        ref_write_mask: layout::SHARED_BIT | layout::CAPSULE_BIT,
        capsule_fields: false,
        capsule_calls: false,
        gate: None,
    };

    /// The `capsule` pass (Rhodes ch. 5): outside every capsule call, an access to an
    /// object without the capsule-shared bit is capsule-protected with the thread as
    /// owner; a reference write must also be seen when the target has escaped (the
    /// pass leaks it in `escape`'s bit, see `analyses::passes::capsule`).
    pub const CAPSULE: HeaderFilter = HeaderFilter {
        mask: layout::CAPSULE_BIT,
        ref_write_mask: layout::CAPSULE_BIT | layout::SHARED_BIT,
        capsule_fields: true,
        capsule_calls: true,
        gate: None,
    };

    /// The header test implementing a pass's [`InlineFilter`] request.
    pub fn of(f: InlineFilter) -> HeaderFilter {
        match f {
            InlineFilter::NotShared => HeaderFilter::ESCAPE,
            InlineFilter::CapsuleProtected => HeaderFilter::CAPSULE,
        }
    }
}

impl JitOptions {
    /// The options of a run of `rt`; the inline filter is the one the chain's first
    /// passes request ([`Chain::inline_filters`](analyses::Chain::inline_filters)).
    pub fn for_runtime(rt: &Runtime) -> JitOptions {
        JitOptions {
            hooks: rt.bridge.is_some(),
            access_hooks: rt.bridge.as_ref().is_some_and(|b| b.plain_accesses),
            frame_events: rt.bridge.as_ref().is_some_and(|b| b.chain.frame_events()),
            frames_of: rt
                .bridge
                .as_ref()
                .map_or_else(Vec::new, |b| b.frames_of.clone()),
            elidable: rt
                .bridge
                .as_ref()
                .map_or_else(Vec::new, |b| b.elidable.clone()),
            lazy: rt.bridge.as_ref().map_or_else(Vec::new, |b| b.lazy.clone()),
            repeatable: rt.bridge.as_ref().map_or_else(Vec::new, |b| {
                let r = translate::repeatable_calls(&rt.image.program, &b.elidable);
                r.iter().zip(&b.lazy).map(|(r, l)| *r && *l).collect()
            }),
            seeded: rt.seeded,
            count_steps: rt.limits.max_steps != u64::MAX,
            inline_filters: rt.bridge.as_ref().map_or_else(Vec::new, |b| {
                let checks_local = b.chain.checks_local();
                let filters = b.chain.inline_filters().into_iter().map(HeaderFilter::of);
                filters
                    .enumerate()
                    .map(|(i, f)| HeaderFilter {
                        capsule_fields: f.capsule_fields || checks_local,
                        gate: b.chain.inline_filter_gate(i).map(|g| g.as_ptr() as u64),
                        ..f
                    })
                    .collect()
            }),
            inline_check: rt
                .bridge
                .as_ref()
                .filter(|_| cfg!(target_arch = "x86_64"))
                .and_then(|b| {
                    use analyses::pass::InlineCheck;
                    let (check, behind_filter) = b.chain.inline_check()?;
                    let (top, field_checks) = match check {
                        InlineCheck::FastTrack { top } if b.plain_accesses => (top, false),
                        InlineCheck::FieldChecks { top } => (top, true),
                        _ => return None,
                    };
                    let mut check_masks = [0; analyses::Chain::MAX_INLINE_FILTERS];
                    if field_checks {
                        use analyses::pass::InlineCheckFlow;
                        let flows = b.chain.inline_check_flows()?;
                        for (m, f) in check_masks.iter_mut().zip(flows) {
                            *m = match f {
                                InlineCheckFlow::Forward => 0,
                                InlineCheckFlow::NotShared => layout::SHARED_BIT,
                            };
                        }
                    }
                    let guard = match b.chain.inline_guard() {
                        Some(g @ analyses::pass::InlineGuard::Stamp { .. }) if !field_checks => {
                            Some(g)
                        }
                        Some(_) => return None,
                        None => None,
                    };
                    Some(InlineDetector {
                        top,
                        behind_filter,
                        field_checks,
                        check_masks,
                        guard,
                        exclusive: !b.chain.frame_events(),
                    })
                }),
            accesses_end_at_filters: rt
                .bridge
                .as_ref()
                .is_some_and(|b| b.plain_accesses && b.chain.accesses_end_at_filters()),
            capsules: rt.bridge.as_ref().map_or_else(Vec::new, |b| {
                let env = b.chain.shared.env.as_ref();
                (0..rt.image.program.classes.len())
                    .map(|c| env.is_capsule_class(c as u32))
                    .collect()
            }),
            count_inline: true,
        }
    }

    /// Whether class `class` is a capsule class of the run.
    pub fn is_capsule(&self, class: u32) -> bool {
        self.capsules.get(class as usize).copied().unwrap_or(false)
    }

    /// Without the header filter there is no inline check behind it.
    pub fn without_inline_filter(self) -> JitOptions {
        JitOptions {
            inline_filters: Vec::new(),
            inline_check: self.inline_check.filter(|c| !c.behind_filter),
            accesses_end_at_filters: false,
            ..self
        }
    }
}

/// An access site with an inline filter test: its counter is entry `i` of
/// [`abi::JitThread::inline_drops`] for `JitCode::inline_sites[i]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineSite {
    pub site: SiteId,
    pub is_write: bool,
    /// A BigFoot check (`InlineDetector::field_checks`), not a plain access.
    pub check: bool,
    /// A BigFoot element check (`InlineDetector::field_checks`), not a field.
    pub elements: bool,
    /// The field's slot (0 for an element: the name of an array location does not
    /// depend on the index).
    pub slot: u32,
    /// A proven `this.f` of a capsule class (`Filtering::CapsuleOwn`): its drops
    /// are capsule accesses (`InlineDrops::capsule`).
    pub capsule_own: bool,
    /// The write of a read-write pair (`translate::Pair`) as the read's exclusive
    /// rule applies it (the write's own check has an entry of its own).
    pub paired: bool,
}

/// A program's compiled code, shared by all guest threads of the run.
pub struct JitCode {
    /// Owner of the machine code (JITModule is Send but not Sync).
    module: Mutex<Option<JITModule>>,
    /// Per function: address of its entry trampoline `fn(ctx, args: *const u64)`
    /// (0 for functions that never start a thread).
    entries: Vec<usize>,
    /// Per function: address of the compiled function itself.
    pub funcs: Vec<usize>,
    /// `print` argument lists; value arguments are renumbered 0..k.
    pub prints: Vec<Vec<PrintArg>>,
    /// Element types of the `new T[…]` instructions.
    pub new_arrays: Vec<Type>,
    /// The access sites with an inline filter test, in counter order.
    pub inline_sites: Vec<InlineSite>,
    /// Accesses dropped inline by all threads that have ended (diagnostics, tests).
    pub inline_dropped: AtomicU64,
    /// Accesses decided by the inline same-epoch check in all threads that have
    /// ended (diagnostics, tests).
    pub inline_checked: AtomicU64,
    /// Of those, the accesses decided by the inline exclusive rules
    /// (`InlineDetector::exclusive`).
    pub inline_exclusive: AtomicU64,
    /// Of those, the writes whose exclusive rule their read applied (read-write
    /// pairs).
    pub inline_paired: AtomicU64,
    /// Of those, BigFoot's element checks dropped inline as covered by the
    /// thread's footprint (`analyses::pass::InlineCheck::FieldChecks`).
    pub inline_covered: AtomicU64,
    /// Of the checks decided inline, BigFoot's element reads its read memos decided
    /// (`abi::INLINE_MEMO`).
    pub inline_memo: AtomicU64,
    /// BigFoot checks a pass in front of the detector dropped inline in all threads
    /// that have ended (`InlineDetector::check_masks`; diagnostics, tests).
    pub inline_check_dropped: AtomicU64,
    /// Set when the program stops (any thread failed); polled at back-edges.
    pub abort: AtomicBool,
    pub options: JitOptions,
}

impl Drop for JitCode {
    fn drop(&mut self) {
        if let Some(m) = self.module.get_mut().take() {
            // SAFETY: the last reference is gone, so no thread runs this code.
            unsafe { m.free_memory() };
        }
    }
}

/// The JIT could not compile the program (a VM bug, reported as a config error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitError(pub String);

impl std::fmt::Display for JitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JIT compilation failed: {}", self.0)
    }
}

fn jerr(e: impl std::fmt::Display) -> JitError {
    JitError(e.to_string())
}

/// Compile every function of `image`'s program.
pub fn compile(image: &Image, options: JitOptions) -> Result<JitCode, JitError> {
    let prog: &Program = &image.program;
    // Cranelift's IR verifier runs in debug builds (every test) and not in release
    // ones, where it took about a quarter of the compile time, which a run pays before the
    // program starts.
    let verify = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    let mut jb = JITBuilder::with_flags(
        &[("opt_level", "speed"), ("enable_verifier", verify)],
        default_libcall_names(),
    )
    .map_err(jerr)?;
    for rt in Rt::ALL {
        jb.symbol(rt.sig().0, rt.addr());
    }
    let mut module = JITModule::new(jb);
    let ptr = module.target_config().pointer_type();
    // Runtime functions: declared once, imported per function on first use.
    let mut rt_ids = Vec::with_capacity(Rt::ALL.len());
    for rt in Rt::ALL {
        let (name, params, ret) = rt.sig();
        let mut sig = module.make_signature();
        for p in params {
            sig.params.push(AbiParam::new(translate::ty_of(*p)));
        }
        if let Some(r) = ret {
            sig.returns.push(AbiParam::new(translate::ty_of(r)));
        }
        rt_ids.push(
            module
                .declare_function(name, Linkage::Import, &sig)
                .map_err(jerr)?,
        );
    }
    // The stubs that keep every register (`Rt::keeps_registers`), by runtime function.
    let mut keep_ids = Vec::with_capacity(Rt::ALL.len());
    for (rt, &id) in Rt::ALL.iter().zip(&rt_ids) {
        let stub = match rt.keeps_registers() {
            true => Some((
                module
                    .declare_function(
                        &format!("keep_{}", rt.sig().0),
                        Linkage::Local,
                        &translate::keeper_signature(&module, *rt),
                    )
                    .map_err(jerr)?,
                id,
                *rt,
            )),
            false => None,
        };
        keep_ids.push(stub);
    }
    // Declare every CapJava function first, so calls can be direct.
    let mut fn_ids = Vec::with_capacity(prog.funcs.len());
    for (i, f) in prog.funcs.iter().enumerate() {
        let sig = translate::signature(&module, f);
        fn_ids.push(
            module
                .declare_function(&format!("f{i}"), Linkage::Local, &sig)
                .map_err(jerr)?,
        );
    }
    let entries = prog.thread_entries();
    let mut tramp_ids = vec![None; prog.funcs.len()];
    for (i, e) in entries.iter().enumerate() {
        if *e {
            let mut sig = module.make_signature();
            sig.params.push(AbiParam::new(ptr));
            sig.params.push(AbiParam::new(ptr));
            tramp_ids[i] = Some(
                module
                    .declare_function(&format!("entry{i}"), Linkage::Local, &sig)
                    .map_err(jerr)?,
            );
        }
    }
    let mut tables = translate::Tables::default();
    let mut fctx = FunctionBuilderContext::new();
    let in_capsule_calls = translate::in_capsule_calls(prog, |c| options.is_capsule(c));
    // Translate every function (and thread entry's trampoline) here, compile them
    // on every core (`compile_all`), then define them in the module in order.
    let mut jobs: Vec<Job> = Vec::with_capacity(prog.funcs.len() + entries.len());
    for &(stub, target, rt) in keep_ids.iter().flatten() {
        let mut func = cranelift::codegen::ir::Function::new();
        translate::keeper(&mut module, &mut func, &mut fctx, rt, target);
        jobs.push(Job {
            id: stub,
            func,
            of: None,
        });
    }
    let keep_ids: Vec<Option<cranelift_module::FuncId>> =
        keep_ids.iter().map(|k| k.map(|(stub, ..)| stub)).collect();
    // The exclusive rule's functions (`exclusive::rule`), where BigFoot's inline
    // checks apply the rule.
    let mut rule_ids = [None; 2];
    if options
        .inline_check
        .is_some_and(|c| c.exclusive && c.field_checks)
    {
        let ordered = keep_ids[Rt::Ordered.index()];
        let ordered = ordered.expect("Rt::Ordered keeps every register");
        for (is_write, id) in rule_ids.iter_mut().enumerate() {
            let name = ["exclusive_read", "exclusive_write"][is_write];
            let rule = module
                .declare_function(name, Linkage::Local, &exclusive::rule_signature(&module))
                .map_err(jerr)?;
            let mut func = cranelift::codegen::ir::Function::new();
            exclusive::rule(&mut module, &mut func, &mut fctx, is_write == 1, ordered);
            jobs.push(Job {
                id: rule,
                func,
                of: None,
            });
            *id = Some(rule);
        }
    }
    for (i, f) in prog.funcs.iter().enumerate() {
        let mut func = cranelift::codegen::ir::Function::new();
        func.signature = translate::signature(&module, f);
        let env = translate::Env {
            prog,
            image,
            options: &options,
            rt_ids: &rt_ids,
            keep_ids: &keep_ids,
            rule_ids,
            fn_ids: &fn_ids,
            in_capsule_calls: &in_capsule_calls,
        };
        translate::Translator::run(
            env,
            &mut module,
            &mut tables,
            &mut func,
            &mut fctx,
            FuncId(i as u32),
        );
        jobs.push(Job {
            id: fn_ids[i],
            func,
            of: Some(i),
        });
        if let Some(t) = tramp_ids[i] {
            let mut func = cranelift::codegen::ir::Function::new();
            translate::trampoline(&mut module, &mut func, &mut fctx, f, fn_ids[i]);
            jobs.push(Job {
                id: t,
                func,
                of: None,
            });
        }
    }
    let mut sizes = vec![0usize; prog.funcs.len()];
    // The trampolines', stubs' and rules' ids and sizes (for `write_perf_map`).
    let mut others = Vec::new();
    let ids: Vec<(cranelift_module::FuncId, Option<usize>)> =
        jobs.iter().map(|j| (j.id, j.of)).collect();
    let times = std::env::var_os("CAPVM_JIT_TIMES").map(|_| std::time::Instant::now());
    let compiled = compile_all(module.isa(), jobs);
    if let Some(start) = times {
        print_jit_times(prog, &ids, &compiled, start.elapsed());
    }
    for (&(id, of), code) in ids.iter().zip(compiled) {
        let code = code.map_err(|e| match of {
            Some(i) => JitError(format!("{}: {e}", prog.func_name(FuncId(i as u32)))),
            None => JitError(e),
        })?;
        match of {
            Some(i) => sizes[i] = code.bytes.len(),
            None => others.push((id, code.bytes.len())),
        }
        module
            .define_function_bytes(id, code.align, &code.bytes, &code.relocs)
            .map_err(jerr)?;
    }
    module.finalize_definitions().map_err(jerr)?;
    let funcs = fn_ids
        .iter()
        .map(|id| module.get_finalized_function(*id) as usize)
        .collect::<Vec<_>>();
    if std::env::var_os("CAPVM_PERF_MAP").is_some() {
        let mut named: Vec<(String, usize, usize)> = funcs
            .iter()
            .zip(&sizes)
            .enumerate()
            .map(|(i, (&start, &size))| (prog.func_name(FuncId(i as u32)), start, size))
            .collect();
        for &(id, size) in &others {
            let decl = module.declarations().get_function_decl(id);
            let name = decl
                .name
                .clone()
                .unwrap_or_else(|| format!("stub{}", id.as_u32()));
            named.push((name, module.get_finalized_function(id) as usize, size));
        }
        write_perf_map(&named);
    }
    let entries = tramp_ids
        .iter()
        .map(|t| t.map_or(0, |id| module.get_finalized_function(id) as usize))
        .collect();
    Ok(JitCode {
        module: Mutex::new(Some(module)),
        entries,
        funcs,
        prints: tables.prints,
        new_arrays: tables.new_arrays,
        inline_sites: tables.inline_sites,
        inline_dropped: AtomicU64::new(0),
        inline_checked: AtomicU64::new(0),
        inline_exclusive: AtomicU64::new(0),
        inline_paired: AtomicU64::new(0),
        inline_covered: AtomicU64::new(0),
        inline_memo: AtomicU64::new(0),
        inline_check_dropped: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        options,
    })
}

/// One function to compile: its id in the module, its IR, and the program's
/// function it is (none: a thread entry's trampoline).
struct Job {
    id: cranelift_module::FuncId,
    func: cranelift::codegen::ir::Function,
    of: Option<usize>,
}

/// A compiled function, ready for `Module::define_function_bytes`.
struct Compiled {
    align: u64,
    bytes: Vec<u8>,
    relocs: Vec<cranelift_module::ModuleReloc>,
    /// How long Cranelift took (`CAPVM_JIT_TIMES`).
    took: std::time::Duration,
}

/// Below this many IR instructions in all, one thread compiles everything (threads
/// cost more than they save on small programs: the tests and the fuzzers').
const PARALLEL_INSTS: usize = 2_000;

/// Compile `jobs` on up to every core (a large program's compile time is paid
/// before it starts: moldyn's 120 ms under `bigfoot`, most of it in one function),
/// largest first; the results in the order of `jobs`.
fn compile_all(
    isa: &dyn cranelift::codegen::isa::TargetIsa,
    jobs: Vec<Job>,
) -> Vec<Result<Compiled, String>> {
    use std::sync::atomic::AtomicUsize;
    let size = |j: &Job| j.func.dfg.num_insts();
    let total: usize = jobs.iter().map(size).sum();
    let workers = if total < PARALLEL_INSTS {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(jobs.len())
    };
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(size(&jobs[k])));
    let n = jobs.len();
    // Each job is taken once, by the worker that draws its turn.
    let jobs: Vec<Mutex<Option<Job>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        while let Some(&k) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            let job = jobs[k].lock().take().expect("each job is drawn once");
            done.push((k, compile_one(isa, job)));
        }
        done
    };
    let mut results: Vec<Option<Result<Compiled, String>>> = (0..n).map(|_| None).collect();
    std::thread::scope(|s| {
        // A worker the system cannot start (a thread or memory limit) is one fewer:
        // the calling thread compiles whatever the others do not draw. (A worker's
        // stack is the main thread's usual 8 MiB, reserved, not committed.)
        let others: Vec<_> = (1..workers)
            .map_while(|_| {
                std::thread::Builder::new()
                    .name("jit".into())
                    .stack_size(8 << 20)
                    .spawn_scoped(s, work)
                    .ok()
            })
            .collect();
        let mut all = work();
        for h in others {
            // A panic in Cranelift is a VM bug: let it reach the caller as one.
            all.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        for (k, r) in all {
            results[k] = Some(r);
        }
    });
    results
        .into_iter()
        .map(|r| r.expect("every job compiled"))
        .collect()
}

/// What `JITModule::define_function` does before it stores the code.
fn compile_one(isa: &dyn cranelift::codegen::isa::TargetIsa, job: Job) -> Result<Compiled, String> {
    let start = std::time::Instant::now();
    let mut ctx = cranelift::codegen::Context::for_function(job.func);
    let mut plane = cranelift::codegen::control::ControlPlane::default();
    let align = ctx
        .compile(isa, &mut plane)
        .map_err(|e| format!("{:?}", e.inner))?
        .buffer
        .alignment as u64;
    let code = ctx.compiled_code().expect("compiled");
    let relocs = code
        .buffer
        .relocs()
        .iter()
        .map(|r| cranelift_module::ModuleReloc::from_mach_reloc(r, &ctx.func, job.id))
        .collect();
    Ok(Compiled {
        align,
        bytes: code.code_buffer().to_vec(),
        relocs,
        took: start.elapsed(),
    })
}

/// Profiling aid (`CAPVM_JIT_TIMES` set): on stderr, the compile's wall time, and
/// the functions that took longest, with their machine code's size.
fn print_jit_times(
    prog: &Program,
    ids: &[(cranelift_module::FuncId, Option<usize>)],
    compiled: &[Result<Compiled, String>],
    wall: std::time::Duration,
) {
    let mut each: Vec<(std::time::Duration, usize, String)> = ids
        .iter()
        .zip(compiled)
        .filter_map(|((_, of), c)| {
            let c = c.as_ref().ok()?;
            let name = of.map_or_else(
                || "(entry, stub or rule)".to_string(),
                |i| prog.func_name(FuncId(i as u32)),
            );
            Some((c.took, c.bytes.len(), name))
        })
        .collect();
    let cpu: std::time::Duration = each.iter().map(|e| e.0).sum();
    let bytes: usize = each.iter().map(|e| e.1).sum();
    eprintln!(
        "jit: {} functions, {bytes} bytes, compiled in {:.1} ms ({:.1} ms of threads)",
        each.len(),
        wall.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3
    );
    each.sort_by_key(|e| std::cmp::Reverse(e.0));
    for (took, n, name) in each.iter().take(8) {
        eprintln!("  {:8.2} ms {n:8} bytes  {name}", took.as_secs_f64() * 1e3);
    }
}

/// Profiling aid (`CAPVM_PERF_MAP` set): `/tmp/perf-PID.map`, the symbol map `perf
/// report` reads for JIT code, and each function's machine code in
/// `/tmp/capvm-jit-PID/NAME@START.bin` (for `objdump -b binary -m i386:x86-64
/// --adjust-vma=0xSTART -D`). Failures to write are ignored: it is a debugging aid.
fn write_perf_map(funcs: &[(String, usize, usize)]) {
    use std::io::Write;
    let pid = std::process::id();
    let dir = format!("/tmp/capvm-jit-{pid}");
    let _ = std::fs::create_dir_all(&dir);
    let Ok(mut map) = std::fs::File::create(format!("/tmp/perf-{pid}.map")) else {
        return;
    };
    for (name, start, size) in funcs {
        let (start, size) = (*start, *size);
        let name = name.replace(' ', "_");
        let _ = writeln!(map, "{start:x} {size:x} {name}");
        // SAFETY: `start` is a finalized function of `size` bytes of code, which the
        // module keeps mapped (read and execute) for its lifetime.
        let code = unsafe { std::slice::from_raw_parts(start as *const u8, size) };
        let _ = std::fs::write(format!("{dir}/{name}@{start:x}.bin"), code);
    }
}

/// Run guest thread `tid` from compiled `func(args)` (the JIT's `interp::run_thread`).
pub fn run_thread(
    rt: Arc<Runtime>,
    code: Arc<JitCode>,
    tid: Tid,
    func: FuncId,
    args: Vec<u64>,
    site: SiteId,
    hook: Hook,
) {
    let code2 = code.clone();
    let body = move |rt: Arc<Runtime>| {
        let mut t = JitThread::new(rt, code, tid, hook);
        run_entry(&mut t, func, &args, site);
    };
    let stop_all = move || code2.abort.store(true, Ordering::Relaxed);
    crate::rtops::thread_main(rt, tid, site, body, stop_all);
}

/// Thread start, the entry frame, the compiled body, thread end (the interpreter's
/// `Interp::run_entry`).
fn run_entry(t: &mut JitThread, func: FuncId, args: &[u64], site: SiteId) {
    t.hook.emit(site, EventKind::ThreadStart);
    t.push_entry(func, site);
    t.steps += 1;
    let entry = t.code.entries[func.index()];
    if entry == 0 {
        let (_, s) = t.top();
        t.fail(ErrorKind::Internal, "no compiled entry".into(), s);
        return;
    }
    // SAFETY: `entry` is a finalized trampoline of `func` taking (ctx, args); `args`
    // holds one slot per parameter of `func` (checked by the front end).
    let f: extern "C" fn(*mut JitThread, *const u64) = unsafe { std::mem::transmute(entry) };
    f(t as *mut JitThread, args.as_ptr());
    if !t.hook.is_on() {
        return;
    }
    // The accesses decided inline by the same-epoch check, accounted even when the
    // thread failed: the detector counts its rules as it sees accesses (the
    // interpreter's failed thread counted these too), while the per-pass counters
    // only reach the chain at `ThreadEnd`, as in the interpreter.
    let paired = t.paired_writes();
    t.code.inline_paired.fetch_add(paired, Ordering::Relaxed);
    let checks = t.take_inline_checks();
    let n: u64 = checks.iter().map(|c| c.reads() + c.writes()).sum();
    t.code.inline_checked.fetch_add(n, Ordering::Relaxed);
    let excl: u64 = checks.iter().map(|c| c.reads_excl + c.writes_excl).sum();
    t.code.inline_exclusive.fetch_add(excl, Ordering::Relaxed);
    let covered: u64 = checks
        .iter()
        .map(|c| c.reads_covered + c.writes_covered)
        .sum();
    t.code.inline_covered.fetch_add(covered, Ordering::Relaxed);
    let memo = t.take_memo_reads();
    t.code.inline_memo.fetch_add(memo, Ordering::Relaxed);
    t.hook.add_inline_checks(&checks);
    // The accesses delivered past the inline filters: those filters saw and forwarded
    // them, accounted like the inline checks' share of the filters.
    // Where they end at the filters, every pass saw and forwarded them.
    let past = t.take_inline_past();
    let upto = match t.code.options.accesses_end_at_filters {
        true => usize::MAX,
        false => t.code.options.inline_filters.len(),
    };
    t.hook.add_inline_forwards(upto, &past);
    if t.failed == 0 {
        // The accesses dropped inline, accounted before `ThreadEnd` merges the counts.
        for (filter, drops) in t.take_inline_drops().into_iter().enumerate() {
            let n: u64 = drops.iter().map(|d| d.reads + d.writes).sum();
            t.code.inline_dropped.fetch_add(n, Ordering::Relaxed);
            t.hook.add_inline_drops(filter, &drops);
        }
        // BigFoot's checks a pass in front of the detector dropped inline.
        for (pass, n) in t.take_inline_check_drops().into_iter().enumerate() {
            t.code.inline_check_dropped.fetch_add(n, Ordering::Relaxed);
            t.hook.add_inline_check_drops(pass, n);
        }
        t.hook.emit(site, EventKind::ThreadEnd);
    }
}
