//! The library entry point: run a compiled program in-process (tests, fuzzing,
//! benchmarks and the `capvm` binary all go through [`run_program`]). Never exits the
//! process; the guest's stdout can be captured.

use std::path::PathBuf;
use std::sync::Arc;

use analyses::env::Env;
use analyses::report::{Reported, render_text, warning_json};
use analyses::{Chain, ChainError, ChainOptions};
use lang::ir::Program;

use crate::bridge::Bridge;
use crate::env::{CapsuleOverride, VmEnv};
use crate::error::{ErrorKind, RuntimeError};
use crate::hook::Hook;
use crate::image::Image;
use crate::interp::run_thread;
use crate::output::Output;
use crate::runtime::{Limits, MAX_CALL_DEPTH, Runtime};

/// The chain `capvm run` uses without `--tools` (`docs/architecture.md`).
pub const DEFAULT_TOOLS: &str = "escape:capsule:singletrack:fasttrack";

/// Default `--max-heap`: 4 GiB.
pub const DEFAULT_MAX_HEAP: u64 = 4 << 30;

/// Default `--max-threads`.
pub const DEFAULT_MAX_THREADS: u64 = 10_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedKind {
    Os,
    Seeded(u64),
}

/// Execution tier. The switch lives here, in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Interp,
    Jit,
}

impl Tier {
    /// The tier `capvm run` uses without `--tier`.
    pub const DEFAULT: Tier = Tier::Jit;
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Tier::Interp => "interp",
            Tier::Jit => "jit",
        })
    }
}

/// Builds the chain for a run (tests use it to insert their own passes).
pub type ChainFactory = Arc<dyn Fn(Arc<dyn Env>) -> Result<Chain, ChainError> + Send + Sync>;

#[derive(Clone)]
pub struct RunConfig {
    /// `--tools`; `None` = the default chain ([`DEFAULT_TOOLS`]).
    pub tools: Option<String>,
    /// Overrides `tools` when set.
    pub chain_factory: Option<ChainFactory>,
    pub sched: SchedKind,
    pub tier: Tier,
    /// `--record FILE.std`: prepend the `record` pass.
    pub record: Option<PathBuf>,
    pub max_steps: u64,
    pub max_threads: u64,
    pub max_heap: u64,
    /// Keep the guest's stdout in [`RunOutcome::stdout`] instead of writing it.
    pub capture_stdout: bool,
    /// `--capsules C1,C2`: exactly these classes are capsules, whatever the source
    /// says (`None` = the source's `capsule` annotations). An unknown name is a
    /// [`ConfigError`].
    pub capsules: Option<Vec<String>>,
    /// JIT tier: let generated code drop accesses inline when the chain's first pass
    /// requests it (`Chain::inline_filter`, e.g. `escape`). Off only for measurement
    /// (hidden `capvm run --no-inline-filter`); results are the same either way.
    pub inline_filter: bool,
    /// JIT tier: let generated code decide accesses with the chain's detector's
    /// same-epoch check when it offers one (`Chain::inline_check`, `fasttrack` alone
    /// or behind `escape`). Off only for measurement and tests (`capvm run
    /// --no-inline-detector`); results and statistics are the same either way.
    pub inline_detector: bool,
    /// Both tiers: skip the `Enter`/`Exit` of calls the chain would end as it starts
    /// them (`Hook::elides_frames`: nested calls on the running capsule), and record
    /// the frames of capsule calls in memory the pass reads when it next receives an
    /// event (`Hook::push_lazy_frame`) instead of delivering their `Enter`. Off only for
    /// measurement and tests (`capvm run --no-elide-frames`); warnings and every
    /// statistic but the count of those events are the same either way.
    pub elide_frames: bool,
    /// The process exits right after the run (`capvm run`): the runtime — guest heap,
    /// analysis state, shadow tables of gigabytes on the large kernels — is left to
    /// the kernel instead of being freed cell by cell (crypt under
    /// `singletrack:fasttrack`: 0.25 s of dropping 36 M cells). Nothing waits for the
    /// drop: a `--record` trace is flushed when the run's output errors are
    /// collected, a failed run's too (`Pass::output_error`).
    pub exit_after: bool,
    /// Take the passes' statistics (the report's `stats`, [`RunOutcome::stats_text`]).
    /// Some walk their whole shadow state (FastTrack's census
    /// of its cells), so `capvm run` asks for them only with `--stats` or `--report`,
    /// as `capvm analyze` does; without, they are empty.
    pub stats: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            tools: Some("none".into()),
            chain_factory: None,
            sched: SchedKind::Os,
            tier: Tier::DEFAULT,
            record: None,
            max_steps: u64::MAX,
            max_threads: DEFAULT_MAX_THREADS,
            max_heap: DEFAULT_MAX_HEAP,
            capture_stdout: true,
            capsules: None,
            inline_filter: true,
            inline_detector: true,
            elide_frames: true,
            exit_after: false,
            stats: true,
        }
    }
}

/// A configuration this build cannot run (exit 64).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitKind {
    Ok,
    Warnings,
    RuntimeError,
    /// An output (the program's stdout, the recorded trace, a note) could not be
    /// written; [`RunOutcome::output_errors`] says which.
    OutputError,
}

impl ExitKind {
    /// The process exit code (`docs/architecture.md` "Exit codes").
    pub fn code(self) -> i32 {
        match self {
            ExitKind::Ok => 0,
            ExitKind::Warnings => 66,
            ExitKind::RuntimeError => 70,
            ExitKind::OutputError => 74,
        }
    }
}

pub struct RunOutcome {
    pub exit: ExitKind,
    /// The guest's output (empty unless captured).
    pub stdout: Vec<u8>,
    pub error: Option<RuntimeError>,
    /// The rendered runtime error (for stderr).
    pub error_text: Option<String>,
    pub warnings: Vec<Reported>,
    /// One ThreadSanitizer-style block per warning.
    pub warnings_text: Vec<String>,
    /// `{"warnings":[…], "stats":{…}}`.
    pub report: serde_json::Value,
    /// `chain.stats_text()` (empty without a chain).
    pub stats_text: String,
    /// Passes that ran.
    pub passes: Vec<&'static str>,
    /// Outputs of the run that could not be written (exit 74).
    pub output_errors: Vec<String>,
}

impl RunOutcome {
    pub fn stdout_string(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

fn with_record(spec: &str, record: bool) -> String {
    let spec = spec.trim();
    match (record, spec.is_empty() || spec == "none") {
        (false, _) => spec.to_string(),
        (true, true) => "record".into(),
        (true, false) => format!("record:{spec}"),
    }
}

/// Build the chain of `cfg`.
fn build_chain(cfg: &RunConfig, env: Arc<dyn Env>) -> Result<Chain, ConfigError> {
    if let Some(f) = &cfg.chain_factory {
        return f(env).map_err(|e| ConfigError(e.0));
    }
    let options = ChainOptions {
        record_path: cfg.record.clone(),
        capsules: cfg.capsules.clone(),
        ..ChainOptions::default()
    };
    let spec = cfg.tools.as_deref().unwrap_or(DEFAULT_TOOLS);
    analyses::passes::chain(&with_record(spec, cfg.record.is_some()), env, options)
        .map_err(|e| ConfigError(e.0))
}

/// The capsule flags by class id for `--capsules`: exactly the named classes.
pub fn capsule_set(program: &Program, names: &[String]) -> Result<Vec<bool>, ConfigError> {
    let mut set = vec![false; program.classes.len()];
    for name in names {
        match program.classes.iter().position(|c| &c.name == name) {
            Some(i) => set[i] = true,
            None => {
                return Err(ConfigError(format!(
                    "--capsules: the program has no class `{name}`"
                )));
            }
        }
    }
    Ok(set)
}

/// Whether the chain of `cfg` (given by `--tools`, not by a factory) has `bigfoot`.
pub fn uses_bigfoot(cfg: &RunConfig) -> bool {
    cfg.chain_factory.is_none()
        && cfg
            .tools
            .as_deref()
            .unwrap_or(DEFAULT_TOOLS)
            .split(':')
            .any(|n| n.trim() == "bigfoot")
}

/// `program` with BigFoot's checks placed (`lang::bigfoot::place`), unless it has
/// checks already (a caller with its own chain factory places them itself).
pub fn placed(program: &Arc<Program>) -> Arc<Program> {
    let has_checks = program.funcs.iter().any(|f| {
        f.blocks.iter().any(|b| {
            b.insts
                .iter()
                .any(|i| matches!(i, lang::ir::Inst::Check { .. }))
        })
    });
    if has_checks {
        program.clone()
    } else {
        Arc::new(lang::bigfoot::place(program).0)
    }
}

/// Run `program` to completion under `cfg`. A chain with `bigfoot` runs the program
/// with BigFoot's checks placed ([`placed`]).
pub fn run_program(program: Arc<Program>, cfg: &RunConfig) -> Result<RunOutcome, ConfigError> {
    let program = if uses_bigfoot(cfg) {
        placed(&program)
    } else {
        program
    };
    let main = program.main;
    let main_site = program.func(main).site;
    let out = Output::new(cfg.capture_stdout);
    let image = match Image::load(program.clone(), cfg.max_heap) {
        Ok(i) => Arc::new(i),
        Err(_) => {
            let err = RuntimeError {
                kind: ErrorKind::HeapLimit,
                detail: "the static fields do not fit".into(),
                tid: 0,
                site: main_site,
                stack: Vec::new(),
                notes: Vec::new(),
            };
            return Ok(error_outcome(&program, err));
        }
    };
    let vm_env = Arc::new(VmEnv {
        image: image.clone(),
    });
    let env: Arc<dyn Env> = match &cfg.capsules {
        Some(names) => Arc::new(CapsuleOverride {
            inner: vm_env.clone(),
            capsules: capsule_set(&program, names)?,
        }),
        None => vm_env.clone(),
    };
    let chain = build_chain(cfg, env.clone())?;
    let mut output_errors = Vec::new();
    let passes = chain.pass_names();
    let bridge = (!chain.is_empty()).then(|| {
        let mut b = Bridge::new(chain, vm_env.clone());
        if !cfg.elide_frames {
            b.elidable.fill(false);
            b.lazy.fill(false);
        }
        Arc::new(b)
    });
    let limits = Limits {
        max_steps: cfg.max_steps,
        max_threads: cfg.max_threads.max(1),
        max_call_depth: MAX_CALL_DEPTH,
    };
    let seed = match cfg.sched {
        SchedKind::Os => None,
        SchedKind::Seeded(s) => Some(s),
    };
    let rt = Arc::new(Runtime::new(image.clone(), seed, bridge, out, limits));
    let main_hook = Hook::main(rt.bridge.as_ref());
    let rt2 = rt.clone();
    // The main thread has no call site: its start and `main`'s enter carry site 0.
    let entry = lang::ir::SiteId(0);
    // The tier switch: which engine runs the guest threads (forks stay on the tier).
    let spawned = match cfg.tier {
        Tier::Interp => rt.spawn(0, move || {
            run_thread(rt2, 0, main, Vec::new(), entry, main_hook)
        }),
        Tier::Jit => {
            // The chain's inline request becomes a header test (`HeaderFilter::of`).
            let mut options = crate::jit::JitOptions::for_runtime(&rt);
            if !cfg.inline_filter {
                options = options.without_inline_filter();
            }
            if !cfg.inline_detector {
                options.inline_check = None;
            }
            options.count_inline = cfg.stats;
            let code = match crate::jit::compile(&image, options) {
                Ok(c) => Arc::new(c),
                Err(e) => {
                    let err = RuntimeError {
                        kind: ErrorKind::Internal,
                        detail: format!("JIT compilation failed: {e}"),
                        tid: 0,
                        site: main_site,
                        stack: Vec::new(),
                        notes: Vec::new(),
                    };
                    return Ok(error_outcome(&program, err));
                }
            };
            rt.spawn(0, move || {
                crate::jit::run_thread(rt2, code, 0, main, Vec::new(), entry, main_hook)
            })
        }
    };
    if let Err(e) = spawned {
        return Err(ConfigError(format!("cannot start the main thread: {e}")));
    }
    let clean = rt.join_all();
    let mut error = rt.sched.take_error();
    if !clean && error.is_none() {
        error = Some(RuntimeError {
            kind: ErrorKind::Internal,
            detail: "a guest thread panicked".into(),
            tid: 0,
            site: main_site,
            stack: Vec::new(),
            notes: Vec::new(),
        });
    }
    rt.out.flush();
    let stdout = rt.out.take();
    let mut warnings = Vec::new();
    let mut warnings_text = Vec::new();
    let mut warnings_json = Vec::new();
    let mut stats_text = String::new();
    let mut stats = serde_json::json!({});
    if let Some(b) = rt.bridge.as_ref() {
        if error.is_none() {
            b.chain.finish();
        }
        warnings = b.chain.warnings();
        for w in &warnings {
            warnings_text.push(render_text(w, &*env, &b.chain.shared.ctxs));
            warnings_json.push(warning_json(w, &*env, &b.chain.shared.ctxs));
        }
        if cfg.stats {
            stats = b.chain.stats_json();
            stats_text = analyses::Chain::stats_text_of(&stats);
        }
        output_errors.extend(b.chain.output_errors());
    }
    output_errors.extend(rt.out.error());
    let exit = if !output_errors.is_empty() {
        ExitKind::OutputError
    } else if error.is_some() {
        ExitKind::RuntimeError
    } else if !warnings.is_empty() {
        ExitKind::Warnings
    } else {
        ExitKind::Ok
    };
    let error_text = error.as_ref().map(|e| e.render(&program));
    if cfg.exit_after {
        // The runtime is never dropped: the kernel takes its memory at exit.
        std::mem::forget(Arc::clone(&rt));
    }
    Ok(RunOutcome {
        exit,
        stdout,
        error,
        error_text,
        warnings,
        warnings_text,
        report: serde_json::json!({ "warnings": warnings_json, "stats": stats }),
        stats_text,
        passes,
        output_errors,
    })
}

fn error_outcome(program: &Program, err: RuntimeError) -> RunOutcome {
    RunOutcome {
        exit: ExitKind::RuntimeError,
        stdout: Vec::new(),
        error_text: Some(err.render(program)),
        error: Some(err),
        warnings: Vec::new(),
        warnings_text: Vec::new(),
        report: serde_json::json!({ "warnings": [], "stats": {} }),
        stats_text: String::new(),
        passes: Vec::new(),
        output_errors: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(src: &str) -> Program {
        let files = vec![lang::ir::SourceFile {
            name: "t.cj".into(),
            text: src.into(),
        }];
        match lang::compile(files) {
            Ok(c) => c.program,
            Err(_) => panic!("does not compile: {src}"),
        }
    }

    #[test]
    fn capsule_set_names_exactly_the_listed_classes() {
        let p =
            program("capsule class A { int x; } class B { } class Main { static void main() { } }");
        let id = |n: &str| p.classes.iter().position(|c| c.name == n).expect(n);
        let set = capsule_set(&p, &["B".into()]).expect("known class");
        assert!(set[id("B")] && !set[id("A")] && !set[id("Main")]);
        assert!(capsule_set(&p, &[]).expect("empty").iter().all(|c| !c));
        let err = capsule_set(&p, &["A".into(), "Z".into()]).expect_err("unknown class");
        assert!(err.0.contains("`Z`"), "{err}");
    }

    #[test]
    fn the_override_replaces_the_annotations_in_a_run() {
        let src = "capsule class A { int x; int get() { return x; } }
            class Main { static void main() { A a = new A(); a.x = 1; print(a.get()); } }";
        let p = Arc::new(program(src));
        let cfg = |caps: Option<Vec<String>>| RunConfig {
            tools: Some("capsule".into()),
            sched: SchedKind::Seeded(1),
            capsules: caps,
            ..RunConfig::default()
        };
        let annotated = run_program(p.clone(), &cfg(None)).expect("runs");
        assert_eq!(annotated.exit, ExitKind::Warnings);
        let none = run_program(p.clone(), &cfg(Some(vec![]))).expect("runs");
        assert_eq!(none.exit, ExitKind::Ok, "{:?}", none.warnings_text);
        assert_eq!(none.stdout_string(), "1\n");
        assert!(run_program(p, &cfg(Some(vec!["Nope".into()]))).is_err());
    }
}
