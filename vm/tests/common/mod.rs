//! Helpers for the VM tests: a tiny IR builder (tests that must not depend on the
//! front end), compiling CapJava snippets, running with captured output, and an
//! event-log pass for determinism tests.
#![allow(dead_code)]

use std::sync::Arc;

use analyses::env::Env;
use analyses::event::OwnedKind;
use analyses::pass::{Local as PassLocal, Pass};
use analyses::thread::ThreadState;
use analyses::{Chain, ChainOptions, Event, Flow, ObjId, Shared};
use lang::ir::*;
use parking_lot::Mutex;
use vm::{RunConfig, RunOutcome, SchedKind, run_program};

/// Builds one function's blocks.
pub struct FnB {
    pub f: Function,
    pub cur: usize,
}

impl FnB {
    pub fn new(class: u32, name: &str, kind: FuncKind, params: &[Type], ret: Type) -> FnB {
        let locals = params
            .iter()
            .map(|t| LocalDecl {
                name: None,
                ty: t.clone(),
            })
            .collect();
        FnB {
            f: Function {
                class: ClassId(class),
                name: name.into(),
                kind,
                is_synchronized: false,
                is_deterministic: false,
                is_atomic: false,
                num_params: params.len() as u32,
                locals,
                ret,
                blocks: vec![Block::default()],
                site: SiteId(1),
            },
            cur: 0,
        }
    }
    pub fn local(&mut self, ty: Type) -> Local {
        self.f.locals.push(LocalDecl { name: None, ty });
        Local(self.f.locals.len() as u32 - 1)
    }
    pub fn block(&mut self) -> BlockId {
        self.f.blocks.push(Block::default());
        BlockId(self.f.blocks.len() as u32 - 1)
    }
    pub fn switch(&mut self, b: BlockId) {
        self.cur = b.index();
    }
    pub fn push(&mut self, i: Inst) {
        self.f.blocks[self.cur].insts.push(i);
    }
    pub fn term(&mut self, t: Terminator) {
        self.f.blocks[self.cur].term = t;
    }
    pub fn int(&mut self, v: i64) -> Local {
        let l = self.local(Type::Int);
        self.push(Inst::Const {
            dst: l,
            value: Const::Int(v),
        });
        l
    }
    pub fn dbl(&mut self, v: f64) -> Local {
        let l = self.local(Type::Double);
        self.push(Inst::Const {
            dst: l,
            value: Const::Double(v),
        });
        l
    }
    pub fn bin(&mut self, op: BinOp, a: Local, b: Local, ty: Type, site: u32) -> Local {
        let l = self.local(ty);
        self.push(Inst::Binary {
            dst: l,
            op,
            lhs: a,
            rhs: b,
            site: SiteId(site),
        });
        l
    }
}

/// A program with one file `t.cj`; `sites[k]` is line k, column 1.
pub fn program(
    classes: Vec<Class>,
    funcs: Vec<Function>,
    statics: Vec<StaticField>,
    main: u32,
) -> Program {
    let sites = (0..64)
        .map(|k| Site {
            file: FileId(0),
            line: k,
            col: 1,
            func: Some(FuncId(main)),
        })
        .collect();
    Program {
        files: vec![SourceFile {
            name: "t.cj".into(),
            text: String::new(),
        }],
        classes,
        funcs,
        statics,
        sites,
        main: FuncId(main),
        capsule_proven: Vec::new(),
    }
}

pub fn class(name: &str, fields: Vec<(&str, Type)>, methods: Vec<u32>) -> Class {
    Class {
        name: name.into(),
        is_capsule: false,
        fields: fields
            .into_iter()
            .map(|(n, ty)| Field {
                name: n.into(),
                ty,
                is_final: false,
                is_volatile: false,
                init: None,
                site: SiteId(0),
            })
            .collect(),
        ctor: None,
        methods: methods.into_iter().map(FuncId).collect(),
        site: SiteId(0),
    }
}

pub fn captured(sched: SchedKind) -> RunConfig {
    RunConfig {
        sched,
        ..RunConfig::default()
    }
}

pub fn run_ir(p: Program, cfg: &RunConfig) -> RunOutcome {
    run_program(Arc::new(p), cfg).expect("config")
}

/// Compile a CapJava snippet (panics with the rendered diagnostics on error).
pub fn compile(src: &str) -> Program {
    let files = vec![SourceFile {
        name: "t.cj".into(),
        text: src.into(),
    }];
    match lang::compile(files.clone()) {
        Ok(c) => c.program,
        Err(d) => panic!("compile error:\n{}", d.render(&files, false)),
    }
}

pub fn run_src(src: &str, cfg: &RunConfig) -> RunOutcome {
    run_ir(compile(src), cfg)
}

/// `Env::loc_name` of an access: (name, index, object).
pub type NamedLoc = (String, Option<u64>, Option<String>);

/// Every event, with objects replaced by their labels (addresses differ between runs).
#[derive(Default)]
pub struct EventLog {
    pub events: Mutex<Vec<String>>,
    /// `Env::loc_name` of every access: (name, index, object).
    pub locs: Mutex<Vec<NamedLoc>>,
    env: Mutex<Option<Arc<dyn Env>>>,
}

impl EventLog {
    fn log(&self, ev: &Event<'_>) {
        let o = ev.to_owned();
        let env = self.env.lock().clone();
        if let (Some(e), OwnedKind::Read { loc } | OwnedKind::Write { loc, .. }) = (&env, &o.kind) {
            let n = e.loc_name(*loc);
            self.locs.lock().push((n.name, n.index, n.object));
        }
        let l = |x: ObjId| match &env {
            Some(e) => e.obj_label(x),
            None => format!("{x:?}"),
        };
        let m = |x: analyses::MethodId| match &env {
            Some(e) => e.method_name(x),
            None => format!("m{}", x.0),
        };
        let v = |x: &Option<ObjId>| x.map(|x| format!(" {}", l(x))).unwrap_or_default();
        let text = match &o.kind {
            OwnedKind::Read { loc } => format!("r {}.{}", l(loc.obj), loc.slot),
            OwnedKind::Write { loc, value } => format!("w {}.{}{}", l(loc.obj), loc.slot, v(value)),
            OwnedKind::VolatileRead { loc } => format!("vr {}.{}", l(loc.obj), loc.slot),
            OwnedKind::VolatileWrite { loc, value } => {
                format!("vw {}.{}{}", l(loc.obj), loc.slot, v(value))
            }
            OwnedKind::Acquire { lock } => format!("acq {}", l(*lock)),
            OwnedKind::Release { lock } => format!("rel {}", l(*lock)),
            OwnedKind::Fork { child, handed } => format!(
                "fork T{child}{}",
                handed
                    .iter()
                    .map(|h| format!(" {}", l(*h)))
                    .collect::<String>()
            ),
            OwnedKind::Join { child } => format!("join T{child}"),
            OwnedKind::BarrierEnter {
                barrier,
                generation,
                parties,
            } => format!("bar_enter {} {generation} {parties}", l(*barrier)),
            OwnedKind::BarrierExit {
                barrier,
                generation,
                parties,
            } => format!("bar_exit {} {generation} {parties}", l(*barrier)),
            OwnedKind::Alloc { obj } => format!("alloc {}", l(*obj)),
            OwnedKind::Enter {
                method,
                receiver,
                args,
            } => format!(
                "enter {}{}{}",
                m(*method),
                v(receiver),
                args.iter()
                    .map(|h| format!(" {}", l(*h)))
                    .collect::<String>()
            ),
            OwnedKind::Exit { method, ret } => format!("exit {}{}", m(*method), v(ret)),
            OwnedKind::Begin { spec } => format!("begin {spec:?}"),
            OwnedKind::End { spec } => format!("end {spec:?}"),
            OwnedKind::ThreadStart => "start".into(),
            OwnedKind::ThreadEnd => "end".into(),
            OwnedKind::Check { loc, op, span } => {
                format!("check {op} {}.{} {span:?}", l(loc.obj), loc.slot)
            }
        };
        self.events.lock().push(format!("T{} {}", o.tid, text));
    }

    /// The events of thread `tid`, without the `T<tid> ` prefix.
    pub fn of(&self, tid: u32) -> Vec<String> {
        let p = format!("T{tid} ");
        self.events
            .lock()
            .iter()
            .filter_map(|e| e.strip_prefix(&p).map(str::to_string))
            .collect()
    }
}

struct LogPass(Arc<EventLog>);

impl Pass for LogPass {
    fn name(&self) -> &'static str {
        "log"
    }
    fn access(&self, _t: &ThreadState, _l: &mut PassLocal, ev: &Event<'_>) -> Flow {
        self.0.log(ev);
        Flow::Forward
    }
    fn event(&self, _t: &ThreadState, _l: &mut PassLocal, ev: &Event<'_>) {
        self.0.log(ev);
    }
}

/// A config whose chain is the one pass `make` builds for the run's environment.
pub fn one_pass(make: impl Fn(Arc<dyn Env>) -> Box<dyn Pass> + Send + Sync + 'static) -> RunConfig {
    RunConfig {
        chain_factory: Some(Arc::new(move |env: Arc<dyn Env>| {
            let pass = make(env.clone());
            let shared = Shared::new(env, ChainOptions::default());
            Ok(Chain::from_passes(vec![pass], shared))
        })),
        ..RunConfig::default()
    }
}

/// A config whose chain is one pass logging every event into the returned log.
pub fn logging(sched: SchedKind) -> (RunConfig, Arc<EventLog>) {
    let log = Arc::new(EventLog::default());
    let l2 = log.clone();
    let cfg = RunConfig {
        sched,
        ..one_pass(move |env| {
            *l2.env.lock() = Some(env);
            Box::new(LogPass(l2.clone()))
        })
    };
    (cfg, log)
}
