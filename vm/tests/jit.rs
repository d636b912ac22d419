//! Differential tests of the JIT tier against the interpreter (the reference
//! semantics), in-process through `vm::run_program`:
//! - every corpus program (examples, bugs, errors) under several `--sched seeded:N`:
//!   stdout, exit code, rendered runtime error, the full event sequence (recorded by a
//!   test pass, objects named by their deterministic labels) and the default chain's
//!   report must be equal; examples also under `--sched os` with no chain;
//! - targeted programs for every arithmetic edge case and every runtime error, with
//!   the expected error kind checked on both tiers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use analyses::Chain;
use analyses::env::Env;
use analyses::{ChainOptions, Shared};
use lang::ir::{Program, SourceFile};
use parking_lot::Mutex;
use vm::testing::log::{EventLog, Logged};
use vm::testing::program_oracles::tier_diff;
use vm::{ErrorKind, ExitKind, RunConfig, RunOutcome, SchedKind, Tier, run_program};

const SEEDS: [u64; 3] = [1, 2, 3];

fn compile_src(name: &str, text: &str) -> Option<Arc<Program>> {
    let files = vec![SourceFile {
        name: name.to_string(),
        text: text.to_string(),
    }];
    lang::compile(files).ok().map(|c| Arc::new(c.program))
}

fn compile_file(p: &Path) -> Option<Arc<Program>> {
    let text = std::fs::read_to_string(p).expect("read corpus file");
    let name = p
        .file_name()
        .expect("file name")
        .to_string_lossy()
        .to_string();
    compile_src(&name, &text)
}

struct Run {
    out: RunOutcome,
    events: Vec<String>,
}

/// Resource limits of a run (a corpus file's `//! args:` line).
#[derive(Clone, Copy)]
struct Limits {
    max_steps: u64,
    max_threads: u64,
    max_heap: u64,
}

impl Limits {
    fn steps(max_steps: u64) -> Limits {
        let d = RunConfig::default();
        Limits {
            max_steps,
            max_threads: d.max_threads,
            max_heap: d.max_heap,
        }
    }

    /// `--max-steps N`, `--max-threads N`, `--max-heap N` from `//! args:` lines.
    fn of_file(p: &Path) -> Limits {
        let mut l = Limits::steps(u64::MAX);
        let text = std::fs::read_to_string(p).unwrap_or_default();
        for line in text.lines().filter_map(|l| l.strip_prefix("//! args:")) {
            let words: Vec<&str> = line.split_whitespace().collect();
            for w in words.windows(2) {
                let n = w[1]
                    .parse::<u64>()
                    .unwrap_or_else(|_| panic!("{}: {line}", p.display()));
                match w[0] {
                    "--max-steps" => l.max_steps = n,
                    "--max-threads" => l.max_threads = n,
                    "--max-heap" => l.max_heap = n,
                    _ => {}
                }
            }
        }
        l
    }
}

fn run(prog: &Arc<Program>, tier: Tier, sched: SchedKind, record: bool, limits: Limits) -> Run {
    let log = Arc::new(Mutex::new(Logged::default()));
    let mut cfg = RunConfig {
        tier,
        sched,
        max_steps: limits.max_steps,
        max_threads: limits.max_threads,
        max_heap: limits.max_heap,
        ..RunConfig::default()
    };
    if record {
        let log2 = log.clone();
        cfg.chain_factory = Some(Arc::new(move |env: Arc<dyn Env>| {
            let shared = Shared::new(env.clone(), ChainOptions::default());
            let rec = EventLog::new(env, log2.clone());
            Ok(Chain::from_passes(vec![Box::new(rec)], shared))
        }));
    }
    let out = run_program(prog.clone(), &cfg).expect("run configuration");
    let events = std::mem::take(&mut log.lock().lines);
    Run { out, events }
}

fn run_tools(prog: &Arc<Program>, tier: Tier, seed: u64, limits: Limits) -> RunOutcome {
    let cfg = RunConfig {
        tier,
        sched: SchedKind::Seeded(seed),
        tools: None,
        max_steps: limits.max_steps,
        max_threads: limits.max_threads,
        max_heap: limits.max_heap,
        ..RunConfig::default()
    };
    run_program(prog.clone(), &cfg).expect("run configuration")
}

/// Differences between the two tiers' runs (empty = equal).
fn diff(what: &str, a: &Run, b: &Run, events: bool) -> Vec<String> {
    let none: &[String] = &[];
    let (ea, eb) = if events {
        (&a.events[..], &b.events[..])
    } else {
        (none, none)
    };
    tier_diff(&a.out, &b.out, ea, eb)
        .into_iter()
        .map(|d| format!("{what}: {d}"))
        .collect()
}

fn corpus(sub: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("corpus")
        .join(sub);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "cj"))
        .collect();
    v.sort();
    v
}

fn is_heavy(p: &Path) -> bool {
    std::fs::read_to_string(p)
        .map(|t| t.lines().take(3).any(|l| l.contains("//! heavy")))
        .unwrap_or(false)
}

/// Every corpus program, both tiers, several seeds: output, error and events equal.
fn differential(sub: &str) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for p in corpus(sub) {
        let Some(prog) = compile_file(&p) else {
            continue;
        };
        ran += 1;
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let lim = Limits::of_file(&p);
        if is_heavy(&p) {
            let a = run(&prog, Tier::Interp, SchedKind::Seeded(1), false, lim);
            let b = run(&prog, Tier::Jit, SchedKind::Seeded(1), false, lim);
            failures.extend(diff(&format!("{name} seeded:1"), &a, &b, false));
            continue;
        }
        for seed in SEEDS {
            let a = run(&prog, Tier::Interp, SchedKind::Seeded(seed), true, lim);
            let b = run(&prog, Tier::Jit, SchedKind::Seeded(seed), true, lim);
            failures.extend(diff(&format!("{name} seeded:{seed}"), &a, &b, true));
        }
        // The default analysis chain: identical reports.
        let a = run_tools(&prog, Tier::Interp, 1, lim);
        let b = run_tools(&prog, Tier::Jit, 1, lim);
        if a.report != b.report || a.warnings_text != b.warnings_text {
            failures.push(format!(
                "{name}: default-chain report differs\n--- interp\n{}\n--- jit\n{}",
                a.report, b.report
            ));
        }
    }
    assert!(ran > 0, "no compilable program in corpus/{sub}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn corpus_examples_equal_on_both_tiers() {
    differential("examples");
    // Also in parallel (`--sched os`), no chain: the examples are deterministic.
    let mut failures = Vec::new();
    for p in corpus("examples") {
        let Some(prog) = compile_file(&p) else {
            continue;
        };
        let lim = Limits::of_file(&p);
        let a = run(&prog, Tier::Interp, SchedKind::Os, false, lim);
        let b = run(&prog, Tier::Jit, SchedKind::Os, false, lim);
        failures.extend(diff(&format!("{} os", p.display()), &a, &b, false));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn corpus_bugs_equal_on_both_tiers() {
    differential("bugs");
}

#[test]
fn corpus_errors_equal_on_both_tiers() {
    differential("errors");
}

// ------------------------------------------------------------ targeted programs

/// Run `main`'s body on both tiers; both must agree; returns the JIT's outcome.
fn both(body: &str, max_steps: u64) -> RunOutcome {
    let src = format!(
        "class Box {{ int v; double d; int[] a; Box next; \
         int get() {{ return v; }} \
         static int deep(int n) {{ return n == 0 ? 0 : 1 + deep(n - 1); }} }}\n\
         class Main {{ static void main() {{ {body} }} }}\n"
    );
    let prog = compile_src("t.cj", &src).unwrap_or_else(|| panic!("does not compile:\n{src}"));
    let mut failures = Vec::new();
    let mut last = None;
    for sched in [SchedKind::Os, SchedKind::Seeded(7)] {
        let lim = Limits::steps(max_steps);
        let a = run(&prog, Tier::Interp, sched, sched != SchedKind::Os, lim);
        let b = run(&prog, Tier::Jit, sched, sched != SchedKind::Os, lim);
        failures.extend(diff(&format!("{sched:?}"), &a, &b, true));
        last = Some(b.out);
    }
    assert!(failures.is_empty(), "{body}\n{}", failures.join("\n"));
    last.expect("one run")
}

fn stdout_of(body: &str) -> String {
    let o = both(body, u64::MAX);
    assert_eq!(o.exit, ExitKind::Ok, "{body}: {:?}", o.error_text);
    o.stdout_string()
}

fn error_of(body: &str, max_steps: u64) -> (ErrorKind, String) {
    let o = both(body, max_steps);
    assert_eq!(o.exit, ExitKind::RuntimeError, "{body}");
    let e = o.error.expect("error");
    (e.kind, o.error_text.unwrap_or_default())
}

#[test]
fn integer_edge_cases() {
    let out = stdout_of(
        "int min = 0x7fff_ffff_ffff_ffff + 1; int m1 = -1; int z = 0; \
         print(min / m1, min % m1, 7 / m1, -7 % m1, min * m1, -min); \
         print(-7 / 2, -7 % 2, 7 % -2, min / 1, min % 1); \
         int s = 65; int n = -1; int big = 64; \
         print(1 << s, 1 << n, min >> big, min >>> s, -8 >> 1, -1 >>> 60, 1 << big); \
         print(Math.abs(min), Math.abs(-5), Math.min(min, 3), Math.max(min, 3), ~z);",
    );
    let expect = format!(
        "{} 0 -7 0 {} {}\n-3 -1 1 {} 0\n2 {} {} {} -4 15 1\n{} 5 {} 3 -1\n",
        i64::MIN,
        i64::MIN,
        i64::MIN,
        i64::MIN,
        i64::MIN,
        i64::MIN,
        (i64::MIN as u64 >> 1),
        i64::MIN,
        i64::MIN
    );
    assert_eq!(out, expect);
}

#[test]
fn double_edge_cases() {
    let out = stdout_of(
        "double zero = 0.0; double nan = zero / zero; double inf = 1.0 / zero; \
         print((int) nan, (int) inf, (int) -inf, (int) 1e300, (int) -2.7, (int) 2.7); \
         print(nan == nan, nan != nan, nan < 1.0, nan >= 1.0, -zero == zero); \
         print(5.5 % 2.0, -5.5 % 2.0, 5.5 % zero, inf % 2.0, 1.0 % inf); \
         print(Math.sqrt(2.0), Math.sqrt(-1.0), Math.floor(-2.5), Math.abs(-zero)); \
         print(Math.sin(1.0), Math.cos(1.0), Math.exp(1.0), Math.log(10.0)); \
         print(Math.pow(2.0, 0.5), Math.pow(1.0, nan), Math.pow(1.0, inf), Math.pow(nan, 0.0)); \
         print(Math.min(zero, -zero), Math.max(-zero, zero), Math.min(nan, 1.0), Math.max(1.0, 2.0)); \
         int i = 3; double d = i; print(d / 2, (double) (1 << 62), -d);",
    );
    assert!(out.starts_with(&format!("0 {} {} {} -2 2\n", i64::MAX, i64::MIN, i64::MAX)));
    assert!(out.contains("false true false false true\n"), "{out}");
    assert!(out.contains("1.5 -1.5 NaN NaN 1.0\n"), "{out}");
    assert!(out.contains("-0.0 0.0 NaN 2.0\n"), "{out}");
}

#[test]
fn heap_and_calls_compute_the_same() {
    let out = stdout_of(
        "Box b = new Box(); b.v = 41; b.d = 0.5; b.a = new int[3]; b.a[2] = b.get() + 1; \
         int[][] g = new int[2][3]; g[1][2] = 9; double[] ds = new double[2]; ds[1] = 2.5; \
         b.next = b; print(b.a[2], b.a.length, g[1][2], g[0].length, ds[1] * b.d, b.next == b); \
         print(Box.deep(500), Thread.id());",
    );
    assert_eq!(out, "42 3 9 3 1.25 true\n500 0\n");
}

#[test]
fn runtime_errors_match() {
    let cases: &[(&str, ErrorKind, u64)] = &[
        (
            "Box b = null; print(b.v);",
            ErrorKind::NullDereference,
            u64::MAX,
        ),
        (
            "Box b = null; b.d = 1.0;",
            ErrorKind::NullDereference,
            u64::MAX,
        ),
        (
            "int[] a = null; a[0] = 1;",
            ErrorKind::NullDereference,
            u64::MAX,
        ),
        (
            "int[] a = null; print(a.length);",
            ErrorKind::NullDereference,
            u64::MAX,
        ),
        (
            "Box b = null; print(b.get());",
            ErrorKind::NullDereference,
            u64::MAX,
        ),
        (
            "Box b = null; synchronized (b) { }",
            ErrorKind::NullDereference,
            u64::MAX,
        ),
        (
            "int[] a = new int[3]; print(a[3]);",
            ErrorKind::IndexOutOfBounds,
            u64::MAX,
        ),
        (
            "int[] a = new int[3]; int i = -1; a[i] = 0;",
            ErrorKind::IndexOutOfBounds,
            u64::MAX,
        ),
        (
            "int n = -2; int[][] a = new int[3][n];",
            ErrorKind::NegativeArraySize,
            u64::MAX,
        ),
        (
            "int z = 0; print(1 / z);",
            ErrorKind::DivisionByZero,
            u64::MAX,
        ),
        (
            "int z = 0; print(1 % z);",
            ErrorKind::DivisionByZero,
            u64::MAX,
        ),
        ("assert(1 > 2);", ErrorKind::AssertionFailed, u64::MAX),
        (
            "print(Box.deep(100000));",
            ErrorKind::StackOverflow,
            u64::MAX,
        ),
        (
            "Box b = new Box(); b.wait();",
            ErrorKind::IllegalMonitorState,
            u64::MAX,
        ),
        (
            "Box b = new Box(); b.notifyAll();",
            ErrorKind::IllegalMonitorState,
            u64::MAX,
        ),
        (
            "Barrier b = new Barrier(0);",
            ErrorKind::IllegalBarrierSize,
            u64::MAX,
        ),
        (
            "Box b = new Box(); synchronized (b) { b.wait(); }",
            ErrorKind::Deadlock,
            u64::MAX,
        ),
        (
            "int s = 0; while (true) { s++; }",
            ErrorKind::StepLimit,
            1000,
        ),
        ("print(Box.deep(2000));", ErrorKind::StepLimit, 1000),
    ];
    for (body, kind, steps) in cases {
        let (k, text) = error_of(body, *steps);
        assert_eq!(k, *kind, "{body}: {text}");
    }
}

/// The heap limit gives the same error (kind, message, site, stack) on both tiers.
#[test]
fn heap_limit_errors_match() {
    let bodies = [
        "int[][] keep = new int[1000][]; \
         for (int i = 0; i < 1000; i++) { keep[i] = new int[10000]; } print(keep.length);",
        "Box b = null; for (int i = 0; i < 1000000; i++) { Box n = new Box(); n.next = b; b = n; }",
        "int[] a = new int[0x7fff_ffff_ffff_fff0]; print(a.length);",
        "Barrier[] keep = new Barrier[100000]; \
         for (int i = 0; i < keep.length; i++) { keep[i] = new Barrier(1); }",
    ];
    for body in bodies {
        let src = format!(
            "class Box {{ int v; Box next; }}\n\
             class Main {{ static void main() {{ {body} }} }}\n"
        );
        let prog = compile_src("heap.cj", &src).unwrap_or_else(|| panic!("{src}"));
        let mut lim = Limits::steps(u64::MAX);
        lim.max_heap = 1 << 20;
        let a = run(&prog, Tier::Interp, SchedKind::Seeded(1), true, lim);
        let b = run(&prog, Tier::Jit, SchedKind::Seeded(1), true, lim);
        let d = diff(body, &a, &b, true);
        assert!(d.is_empty(), "{}", d.join("\n"));
        let e = b.out.error.expect("an error");
        assert_eq!(e.kind, ErrorKind::HeapLimit, "{body}");
    }
}

#[test]
fn step_limit_counts_like_the_interpreter() {
    // The exact step at which a run fails (block edges and calls) must be the same on
    // both tiers (`both` compares the error text, whose site depends on the step).
    let body = "int s = 0; for (int i = 0; i < 5; i++) { s += Box.deep(i); } print(s);";
    let mut failed_at = Vec::new();
    for steps in [1, 2, 3, 5, 8, 13, 21, 34, 55, 89] {
        if both(body, steps).exit == ExitKind::RuntimeError {
            failed_at.push(steps);
        }
    }
    assert!(failed_at.contains(&1), "{failed_at:?}");
    assert!(!failed_at.contains(&89), "{failed_at:?}");
}

// ------------------------------------------------ the inline `escape` fast path

/// What a seeded JIT run assembled from the parts of `run_program` shows: (error,
/// warnings, stdout, the chain's statistics JSON, accesses dropped inline, accesses
/// decided by the inline same-epoch check). The inline filter and check are the
/// ones `JitOptions::for_runtime` derives from the chain.
struct InlineRun {
    error: Option<String>,
    warnings: Vec<String>,
    stdout: Vec<u8>,
    stats: serde_json::Value,
    dropped_inline: u64,
    checked_inline: u64,
    /// BigFoot checks dropped inline by a filter's header test.
    check_dropped_inline: u64,
    exclusive_inline: u64,
    /// Of those, writes whose exclusive rule their read applied (read-write pairs).
    paired_inline: u64,
    /// BigFoot element checks dropped inline as covered by the footprint.
    covered_inline: u64,
    /// BigFoot element read checks decided inline by a read memo.
    memo_inline: u64,
    /// The racy locations (object serial and slot or index) of the race warnings.
    racy: std::collections::BTreeSet<(u64, u64)>,
}

/// The interpreter's run `a` against a JIT run `b` (`what`): a failure text unless
/// the error, output, warnings and statistics are the same.
fn mismatch(name: &str, a: &RunOutcome, what: &str, b: &InlineRun) -> Option<String> {
    let same = a.error_text == b.error
        && a.stdout == b.stdout
        && a.warnings_text == b.warnings
        && a.report["stats"] == b.stats;
    (!same).then(|| {
        format!(
            "{name}\n--- interp\n{:?}\n{}\n{}\n--- {what}\n{:?}\n{}\n{}",
            a.error_text,
            a.warnings_text.join("\n"),
            a.report["stats"],
            b.error,
            b.warnings.join("\n"),
            b.stats
        )
    })
}

fn run_jit_parts(prog: &Arc<Program>, tools: &str, seed: u64) -> InlineRun {
    run_jit_parts_with(prog, tools, seed, true)
}

/// [`run_jit_parts`], with the inline same-epoch check on or off.
/// `prog` in the interpreter under `tools` with the seeded scheduler.
fn run_interp_seeded(prog: &Arc<Program>, tools: &str, seed: u64) -> RunOutcome {
    let cfg = RunConfig {
        tier: Tier::Interp,
        sched: SchedKind::Seeded(seed),
        tools: Some(tools.into()),
        ..RunConfig::default()
    };
    run_program(prog.clone(), &cfg).expect("run")
}

fn run_jit_parts_with(
    prog: &Arc<Program>,
    tools: &str,
    seed: u64,
    inline_detector: bool,
) -> InlineRun {
    run_jit_parts_sched(prog, tools, Some(seed), inline_detector)
}

/// [`run_jit_parts_with`], under the seeded scheduler with `Some(seed)`, else with
/// the guest threads running in parallel.
fn run_jit_parts_sched(
    prog: &Arc<Program>,
    tools: &str,
    seed: Option<u64>,
    inline_detector: bool,
) -> InlineRun {
    run_jit_parts_tuned(prog, tools, seed, inline_detector, |_| {})
}

/// [`run_jit_parts_sched`], with the JIT's options changed by `tune` last.
fn run_jit_parts_tuned(
    prog: &Arc<Program>,
    tools: &str,
    seed: Option<u64>,
    inline_detector: bool,
    tune: impl Fn(&mut vm::jit::JitOptions),
) -> InlineRun {
    use vm::bridge::Bridge;
    use vm::env::VmEnv;
    use vm::hook::Hook;
    use vm::image::Image;
    use vm::jit::{self, JitOptions};
    use vm::output::Output;
    use vm::runtime::{Limits, MAX_CALL_DEPTH, Runtime};

    // A chain with `bigfoot` runs the placed program, as `run_program` does.
    let prog = &if tools.contains("bigfoot") {
        vm::run::placed(prog)
    } else {
        prog.clone()
    };
    let image = Arc::new(Image::load(prog.clone(), 1 << 32).expect("image"));
    let env = Arc::new(VmEnv {
        image: image.clone(),
    });
    let chain =
        analyses::passes::chain(tools, env.clone(), ChainOptions::default()).expect("chain");
    let bridge = Arc::new(Bridge::new(chain, env.clone()));
    let limits = Limits {
        max_steps: u64::MAX,
        max_threads: 10_000,
        max_call_depth: MAX_CALL_DEPTH,
    };
    let rt = Arc::new(Runtime::new(
        image.clone(),
        seed,
        Some(bridge),
        Output::new(true),
        limits,
    ));
    let mut options = JitOptions::for_runtime(&rt);
    if tools.starts_with("escape") {
        assert_eq!(
            options.inline_filters.first(),
            Some(&jit::HeaderFilter {
                capsule_fields: tools.contains("capsule"),
                ..jit::HeaderFilter::ESCAPE
            }),
            "`escape` first must request its inline test, calling out for capsule fields \
             when `capsule` follows"
        );
    }
    // `capsule` first, or right behind `escape` (which forwards what its test lets
    // through), has its inline test too.
    let capsule_at = match tools {
        t if t.starts_with("capsule") => Some(0),
        t if t.starts_with("escape:capsule") => Some(1),
        _ => None,
    };
    if let Some(i) = capsule_at {
        let f = options.inline_filters.get(i);
        assert_eq!(
            f.map(|f| jit::HeaderFilter { gate: None, ..*f }),
            Some(jit::HeaderFilter::CAPSULE),
            "`{tools}`: `capsule` must have its inline test"
        );
        assert!(
            f.is_some_and(|f| f.gate.is_some()),
            "`{tools}`: `capsule`'s test must have its gate, to decide inside capsule calls"
        );
    }
    assert_eq!(
        options
            .inline_check
            .map(|c| (c.behind_filter, c.field_checks, c.guard.is_some())),
        match tools {
            "fasttrack" => Some((false, false, false)),
            "escape:fasttrack"
            | "capsule:fasttrack"
            | "escape:capsule:fasttrack"
            | "capsule:escape:fasttrack" => Some((true, false, false)),
            "singletrack:fasttrack" => Some((false, false, true)),
            "escape:capsule:singletrack:fasttrack" => Some((true, false, true)),
            "bigfoot" => Some((false, true, false)),
            "escape:bigfoot" | "escape:capsule:bigfoot" | "capsule:escape:bigfoot" => {
                Some((true, true, false))
            }
            _ => None,
        },
        "`{tools}`: the inline same-epoch check is offered exactly for `fasttrack` \
         alone and behind `escape`, `capsule` or both (also with `singletrack`'s stamp \
         test in front of it), and for `bigfoot`'s field checks, alone or behind the \
         filters"
    );
    // Behind the filters, `bigfoot`'s checks meet `escape`'s header test (and not
    // `capsule`'s: it forwards every check), and the plain accesses that pass the
    // filters' tests end there.
    if let Some(c) = options.inline_check.filter(|c| c.field_checks) {
        let escape_at = tools.split(':').position(|p| p == "escape");
        let expected: Vec<u64> = (0..c.check_masks.len())
            .map(|i| match escape_at == Some(i) {
                true => vm::layout::SHARED_BIT,
                false => 0,
            })
            .collect();
        assert_eq!(
            c.check_masks.to_vec(),
            expected,
            "`{tools}`: the check filters"
        );
        assert_eq!(
            options.accesses_end_at_filters,
            tools != "bigfoot",
            "`{tools}`: plain accesses end at the filters"
        );
    }
    if !inline_detector {
        options.inline_check = None;
    }
    tune(&mut options);
    let code = Arc::new(jit::compile(&image, options).expect("compile"));
    let hook = Hook::main(rt.bridge.as_ref());
    let (rt2, code2) = (rt.clone(), code.clone());
    let main = prog.main;
    rt.spawn(0, move || {
        jit::run_thread(rt2, code2, 0, main, Vec::new(), lang::ir::SiteId(0), hook)
    })
    .expect("spawn");
    assert!(rt.join_all(), "a guest thread panicked");
    let error = rt.sched.take_error().map(|e| e.render(prog));
    let b = rt.bridge.as_ref().expect("bridge");
    if error.is_none() {
        b.chain.finish();
    }
    let racy = b
        .chain
        .warnings()
        .iter()
        .filter(|w| w.warning.kind == analyses::report::WarningKind::Race)
        .filter_map(|w| w.warning.loc)
        .map(|l| (vm::heap::serial(l.obj.0), u64::from(l.slot)))
        .collect();
    let warnings = b
        .chain
        .warnings()
        .iter()
        .map(|w| analyses::report::render_text(w, &*env, &b.chain.shared.ctxs))
        .collect();
    InlineRun {
        error,
        warnings,
        stdout: rt.out.take(),
        stats: b.chain.stats_json(),
        dropped_inline: code
            .inline_dropped
            .load(std::sync::atomic::Ordering::Relaxed),
        checked_inline: code
            .inline_checked
            .load(std::sync::atomic::Ordering::Relaxed),
        exclusive_inline: code
            .inline_exclusive
            .load(std::sync::atomic::Ordering::Relaxed),
        paired_inline: code
            .inline_paired
            .load(std::sync::atomic::Ordering::Relaxed),
        racy,
        covered_inline: code
            .inline_covered
            .load(std::sync::atomic::Ordering::Relaxed),
        memo_inline: code.inline_memo.load(std::sync::atomic::Ordering::Relaxed),
        check_dropped_inline: code
            .inline_check_dropped
            .load(std::sync::atomic::Ordering::Relaxed),
    }
}

/// With `fasttrack` alone or behind `escape`, `capsule` or both, the JIT decides
/// FastTrack's same-epoch accesses inline (and, for plain accesses, the exclusive
/// rules on the thread's own earlier epochs, under the cell's lock), with
/// `singletrack` before it only those
/// that also pass SingleTrack's stamp test, and with `bigfoot` its same-epoch field
/// checks and the element checks its footprint covers: warnings, output and every statistic (per-pass counters, FastTrack's rule
/// counts, SingleTrack's checks and graph counts, the filter's per-location
/// categories, BigFoot's check counts) equal those of the
/// same JIT run with the check off and of the interpreter, on every corpus program
/// under the same seeds.
#[test]
fn inline_same_epoch_check_keeps_every_warning_and_statistic() {
    let mut failures = Vec::new();
    let mut checked_inline = 0;
    let mut runs = 0;
    let small_bench = corpus("bench")
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with("_large.cj"));
    let mut checked_by = std::collections::BTreeMap::new();
    let mut exclusive_by = std::collections::BTreeMap::new();
    let mut check_dropped_by = std::collections::BTreeMap::new();
    let mut covered_by = std::collections::BTreeMap::new();
    for tools in [
        "fasttrack",
        "escape:fasttrack",
        "capsule:fasttrack",
        "escape:capsule:fasttrack",
        "singletrack:fasttrack",
        "escape:capsule:singletrack:fasttrack",
        "bigfoot",
        "escape:capsule:bigfoot",
        "capsule:escape:bigfoot",
    ] {
        for p in corpus("bugs")
            .into_iter()
            .chain(corpus("examples"))
            .chain(small_bench.clone())
        {
            let Some(prog) = compile_file(&p) else {
                continue;
            };
            let seeds: &[u64] = if is_heavy(&p) || p.to_string_lossy().contains("bench") {
                &[3]
            } else {
                &[1, 2]
            };
            for &seed in seeds {
                runs += 1;
                let cfg = RunConfig {
                    tier: Tier::Interp,
                    sched: SchedKind::Seeded(seed),
                    tools: Some(tools.into()),
                    ..RunConfig::default()
                };
                let a = run_program(prog.clone(), &cfg).expect("run");
                let on = run_jit_parts_with(&prog, tools, seed, true);
                let off = run_jit_parts_with(&prog, tools, seed, false);
                assert_eq!(off.checked_inline, 0, "the check is off");
                let name = format!("{} {tools} seeded:{seed}", p.display());
                for (what, b) in [
                    ("jit, inline check on", &on),
                    ("jit, inline check off", &off),
                ] {
                    failures.extend(mismatch(&name, &a, what, b));
                }
                checked_inline += on.checked_inline;
                *checked_by.entry(tools).or_insert(0) += on.checked_inline;
                *exclusive_by.entry(tools).or_insert(0) += on.exclusive_inline;
                *check_dropped_by.entry(tools).or_insert(0) += on.check_dropped_inline;
                *covered_by.entry(tools).or_insert(0) += on.covered_inline;
            }
        }
    }
    assert!(runs > 20, "too few corpus programs ran: {runs}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The check must actually have decided accesses (checks) inline, in every chain.
    assert!(checked_inline > 0, "no access was decided inline");
    for (tools, n) in &checked_by {
        assert!(*n > 0, "`{tools}`: nothing was decided inline");
    }
    // The exclusive rules too, for plain accesses and for BigFoot's checks.
    for (tools, n) in &exclusive_by {
        assert!(
            *n > 0,
            "`{tools}`: no access decided by the inline exclusive rules"
        );
    }
    // BigFoot's element checks that the footprint covers are dropped inline (the
    // insertion sort of bench/workqueue.cj, among others), in every BigFoot chain.
    for (tools, n) in &covered_by {
        assert_eq!(
            *n > 0,
            tools.ends_with("bigfoot"),
            "`{tools}`: {n} element checks dropped inline as covered"
        );
    }
    // `escape`'s header test drops BigFoot's checks of thread-local objects inline.
    for (tools, n) in &check_dropped_by {
        assert_eq!(
            *n > 0,
            tools.ends_with("bigfoot") && tools.contains("escape"),
            "`{tools}`: {n} checks dropped inline"
        );
    }
}

/// With `escape` first, the JIT drops thread-local accesses without a call, and with
/// `capsule` first or right behind `escape` the capsule-protected accesses outside
/// capsule calls; the run is
/// the interpreter's: warnings, output, and every statistic (the per-pass counters
/// and the filter's per-location categories count the inline drops).
#[test]
fn inline_escape_filter_keeps_every_warning_and_statistic() {
    let mut failures = Vec::new();
    let mut dropped_inline = 0;
    for tools in [
        "escape:fasttrack",
        "escape:capsule:fasttrack",
        "capsule:fasttrack",
        "capsule:escape:fasttrack",
        "escape:capsule:singletrack:fasttrack",
    ] {
        for p in corpus("bugs").into_iter().chain(corpus("examples")) {
            let Some(prog) = compile_file(&p) else {
                continue;
            };
            if is_heavy(&p) {
                continue;
            }
            for seed in [1, 2] {
                let cfg = RunConfig {
                    tier: Tier::Interp,
                    sched: SchedKind::Seeded(seed),
                    tools: Some(tools.into()),
                    ..RunConfig::default()
                };
                let a = run_program(prog.clone(), &cfg).expect("run");
                let b = run_jit_parts(&prog, tools, seed);
                let name = format!("{} {tools} seeded:{seed}", p.display());
                failures.extend(mismatch(&name, &a, "jit+inline escape", &b));
                dropped_inline += b.dropped_inline;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The fast path must actually have decided accesses inline.
    assert!(dropped_inline > 0, "no access was dropped inline");
}

/// `RunConfig::inline_filter` (`--no-inline-filter`) changes nothing observable.
#[test]
fn inline_filter_off_gives_the_same_report() {
    let src = "class Cell { int v; Cell next; }\n\
               class Worker { int sum; int[] data;\n\
                 void run() { Cell c = null; int[] a = new int[10];\n\
                   for (int i = 0; i < 50; i++) { Cell n = new Cell(); n.v = i; n.next = c;\n\
                     c = n; a[i % 10] = a[i % 10] + i; }\n\
                   int s = 0; while (c != null) { s = s + c.v; c = c.next; }\n\
                   this.data = a; this.sum = s + a[3]; } }\n\
               class Main { static void main() { Worker w = new Worker();\n\
                 Thread t = fork w.run(); Worker u = new Worker(); u.run(); t.join();\n\
                 print(w.sum, u.sum, w.data[3]); } }\n";
    let prog = compile_src("local.cj", src).expect("compiles");
    let cfg = |tier, inline_filter| RunConfig {
        tier,
        sched: SchedKind::Seeded(1),
        tools: None,
        inline_filter,
        ..RunConfig::default()
    };
    let on = run_program(prog.clone(), &cfg(Tier::Jit, true)).expect("run");
    let off = run_program(prog.clone(), &cfg(Tier::Jit, false)).expect("run");
    let interp = run_program(prog, &cfg(Tier::Interp, true)).expect("run");
    assert_eq!(on.stdout_string(), "1340 1340 115\n");
    assert!(on.report["stats"]["passes"][0]["dropped"].as_u64() > Some(300));
    assert_eq!(on.report, off.report);
    assert_eq!(on.report, interp.report);
    assert_eq!(on.stdout, off.stdout);
}

#[test]
fn a_failing_thread_stops_a_spinning_compiled_loop() {
    let src = "class Spin { void run() { int s = 0; while (true) { s++; } } }\n\
               class Main { static void main() { Thread t = fork new Spin().run(); \
               int z = 0; print(1 / z); t.join(); } }\n";
    let prog = compile_src("spin.cj", src).expect("compiles");
    for tier in [Tier::Interp, Tier::Jit] {
        let r = run(&prog, tier, SchedKind::Os, false, Limits::steps(u64::MAX));
        let e = r.out.error.expect("an error");
        assert_eq!(e.kind, ErrorKind::DivisionByZero, "{tier:?}");
    }
}

/// A chain whose passes take no `Enter`/`Exit` (`fasttrack`, `singletrack`,
/// `atomicity`), or only those of some calls (`capsule`: capsule classes' methods),
/// gets only those events: the call context comes from the stack the tier keeps (the
/// interpreter's frames, the JIT's shadow stack). Its warnings, each
/// access and synchronization operation with its whole stack, are those of the same
/// chain behind a pass that takes every event (`count`), on both tiers and every
/// corpus program: in particular a `synchronized` method's monitor operations carry
/// the method's own frame either way.
#[test]
fn call_contexts_from_the_stack_equal_those_from_enter_and_exit() {
    let mut failures = Vec::new();
    let mut deep = 0;
    let mut warned = std::collections::BTreeMap::new();
    for p in corpus("bugs").into_iter().chain(corpus("examples")) {
        let Some(prog) = compile_file(&p) else {
            continue;
        };
        if is_heavy(&p) {
            continue;
        }
        for tools in [
            "fasttrack",
            "singletrack:fasttrack",
            "atomicity",
            "capsule:fasttrack",
            "escape:capsule:fasttrack",
        ] {
            for tier in [Tier::Interp, Tier::Jit] {
                for seed in [1, 2] {
                    let run = |tools: &str| {
                        let cfg = RunConfig {
                            tier,
                            sched: SchedKind::Seeded(seed),
                            tools: Some(tools.into()),
                            ..RunConfig::default()
                        };
                        run_program(prog.clone(), &cfg).expect("run")
                    };
                    let (lazy, eager) = (run(tools), run(&format!("count:{tools}")));
                    if lazy.warnings_text != eager.warnings_text {
                        failures.push(format!(
                            "{} {tools} {tier:?} seeded:{seed}\n--- lazy\n{}\n--- with count\n{}",
                            p.display(),
                            lazy.warnings_text.join("\n"),
                            eager.warnings_text.join("\n")
                        ));
                    }
                    *warned.entry(tools).or_insert(0) += lazy.warnings_text.len();
                    // Warnings whose stacks go below the thread's entry method.
                    let stacks = lazy.report["warnings"].as_array().into_iter().flatten();
                    deep += stacks
                        .flat_map(|w| w["accesses"].as_array().into_iter().flatten())
                        .filter(|a| a["stack"].as_array().is_some_and(|s| s.len() > 1))
                        .count();
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(deep > 0, "no warning had a stack of more than one frame");
    for (tools, n) in &warned {
        assert!(*n > 0, "`{tools}` warned about nothing");
    }
}

/// `--capsules` makes a class a capsule that the source does not declare one: the
/// JIT's inline filters (`capsule`'s, and `escape`'s that must call out for capsule
/// fields) follow the run's capsule classes, not the source's, so an outside read of
/// the class's field is reported on both tiers.
#[test]
fn capsules_flag_reaches_the_inline_filters() {
    let src = "class Box { int v; void set(int x) { v = x; } }\n\
               class Main { static void main() { Box b = new Box(); b.set(1);\n\
                 int s = 0; for (int i = 0; i < 20; i++) { s = s + b.v; }\n\
                 print(s); } }\n";
    let prog = compile_src("box.cj", src).expect("compiles");
    for tools in ["capsule:fasttrack", "escape:capsule:fasttrack"] {
        let cfg = |tier| RunConfig {
            tier,
            sched: SchedKind::Seeded(1),
            tools: Some(tools.into()),
            capsules: Some(vec!["Box".into()]),
            ..RunConfig::default()
        };
        let jit = run_program(prog.clone(), &cfg(Tier::Jit)).expect("run");
        let interp = run_program(prog.clone(), &cfg(Tier::Interp)).expect("run");
        assert_eq!(jit.stdout_string(), "20\n");
        assert!(
            jit.warnings_text.iter().any(|w| w.contains("Box")),
            "{tools}: {:?}",
            jit.warnings_text
        );
        assert_eq!(jit.report, interp.report, "{tools}");
    }
}

/// `capsule` takes the `Enter`/`Exit` of capsule classes' methods only: in
/// `capsule_outside_access.cj` one call of `Account.deposit`, on both tiers, where a
/// chain with `count` takes every call; the report is the same. (The call's frame
/// is recorded in memory, `Hook::push_lazy_frame`: the pass takes it at the call's
/// first access, and the producer ends it without its `Exit`, which the pass makes
/// up for at its next event: neither event is delivered.)
#[test]
fn capsule_takes_only_the_calls_of_capsule_classes() {
    let p = corpus("bugs")
        .into_iter()
        .find(|p| p.ends_with("capsule_outside_access.cj"))
        .expect("corpus program");
    let prog = compile_file(&p).expect("compiles");
    for tier in [Tier::Interp, Tier::Jit] {
        let run = |tools: &str| {
            let cfg = RunConfig {
                tier,
                sched: SchedKind::Seeded(1),
                tools: Some(tools.into()),
                ..RunConfig::default()
            };
            run_program(prog.clone(), &cfg).expect("run")
        };
        let events = |r: &RunOutcome, pass: usize, kind: &str| {
            r.report["stats"]["passes"][pass]["by_kind"][kind]
                .as_u64()
                .unwrap_or(0)
        };
        let (some, all) = (run("capsule:fasttrack"), run("count:capsule:fasttrack"));
        assert_eq!(events(&some, 0, "enter"), 0, "{tier:?}");
        assert_eq!(events(&some, 0, "exit"), 0, "{tier:?}");
        let enters = events(&all, 1, "enter");
        assert!(enters >= 3, "{tier:?}: {enters}");
        assert_eq!(some.warnings_text, all.warnings_text, "{tier:?}");
    }
}

/// SingleTrack's sole-accessor rule inline: `main` writes `x.b` in a fresh epoch of
/// its deterministic block 100 times (a fork and join between writes); from the
/// third on, generated code applies the rule and FastTrack's exclusive rule without
/// a call. The last write, in `touch`, conflicts with `other`'s read (forked before
/// it): the report's earlier access must name `touch` called from `main`, with the
/// site and context the inline rule stored, as the interpreter says, and every
/// statistic must equal the interpreter's and the out-of-line path's. (`flag` is
/// volatile: its reads, however many, are never decided inline.)
#[test]
fn inline_sole_accessor_rule_keeps_reports_and_statistics() {
    let src = "\
class Box {
    int b;
    volatile int flag;
}

class Main {
    static void nop() {
    }

    static void touch(Box x) {
        x.b = 3;
    }

    static void other(Box x) {
        while (x.flag == 0) {
        }
        print(x.b);
    }

    static void main() {
        Box x = new Box();
        deterministic {
            for (int i = 0; i < 100; i++) {
                x.b = i;
                Thread t = fork Main.nop();
                t.join();
            }
            Thread t2 = fork Main.other(x);
            touch(x);
            x.flag = 1;
            t2.join();
        }
    }
}
";
    let prog = compile_src("sole.cj", src).expect("compiles");
    let tools = "singletrack:fasttrack";
    let a = run_interp_seeded(&prog, tools, 1);
    let conflict = a
        .warnings_text
        .iter()
        .find(|w| w.contains("Box.b") && w.contains("not ordered by fork"))
        .cloned()
        .unwrap_or_default();
    assert!(
        conflict.contains("Main.touch (sole.cj:11:11)\n    #1 Main.main (sole.cj:29:13)")
            && conflict.contains("write by T0 and read by T"),
        "the interpreter's conflict names touch's write, called from main:\n{conflict}"
    );
    let (on, off) = (
        run_jit_parts_with(&prog, tools, 1, true),
        run_jit_parts_with(&prog, tools, 1, false),
    );
    for (what, b) in [("inline check on", &on), ("inline check off", &off)] {
        if let Some(m) = mismatch("sole.cj", &a, what, b) {
            panic!("{m}");
        }
    }
    assert!(
        on.checked_inline >= 98,
        "{} accesses decided inline",
        on.checked_inline
    );
}

/// SingleTrack's first-access rule inline: inside `main`'s deterministic block, two
/// threads each fill half of a fresh array from an input array written before the
/// block, so nearly every access is its location's first in the transaction; once a
/// first access at a site and context has gone out of line in the thread's segment,
/// generated code records the next ones itself (the stamp, and the origin in the
/// location's record). `poke`, forked before `main` fills its half, writes `a[7]`
/// unordered with `main`'s write in `fill`: the conflict must name that write with
/// the site and context of its origin, as the interpreter says, and every
/// statistic must equal the interpreter's and the out-of-line path's.
#[test]
fn inline_first_access_rule_keeps_reports_and_statistics() {
    let src = "\
class Main {
    static void fill(int[] a, int[] src, int lo, int hi) {
        for (int i = lo; i < hi; i++) {
            a[i] = src[i] + 1;
        }
    }

    static void poke(int[] a) {
        a[7] = 9;
    }

    static void main() {
        int[] src = new int[400];
        for (int i = 0; i < 400; i++) {
            src[i] = i;
        }
        int[] a = new int[400];
        deterministic {
            Thread p = fork Main.poke(a);
            Thread t = fork Main.fill(a, src, 200, 400);
            fill(a, src, 0, 200);
            t.join();
            p.join();
        }
        print(a[399]);
    }
}
";
    let prog = compile_src("first.cj", src).expect("compiles");
    let tools = "singletrack:fasttrack";
    for seed in [1, 2, 3] {
        let a = run_interp_seeded(&prog, tools, seed);
        let conflict = a
            .warnings_text
            .iter()
            .find(|w| w.contains("on int[7]") && w.contains("not ordered by fork"))
            .cloned()
            .unwrap_or_default();
        assert!(
            conflict.contains("Main.fill (first.cj:4:14)\n    #1 Main.main (first.cj:21:13)")
                && conflict.contains("Main.poke (first.cj:9:10)"),
            "seed {seed}: the conflict names main's write in fill and poke's:\n{conflict}"
        );
        let (on, off) = (
            run_jit_parts_with(&prog, tools, seed, true),
            run_jit_parts_with(&prog, tools, seed, false),
        );
        for (what, b) in [("inline check on", &on), ("inline check off", &off)] {
            if let Some(m) = mismatch("first.cj", &a, what, b) {
                panic!("seed {seed}: {m}");
            }
        }
        // 400 writes of `src` before the block (the idle test), and 800 accesses of
        // `a` and `src` in it, all first accesses: all but one per site, context
        // and segment (and per leaf of the records' table) by the rule (400
        // without it).
        assert!(
            on.checked_inline >= 1150,
            "seed {seed}: {} accesses decided inline",
            on.checked_inline
        );
    }
}

/// Two writes of `Box.b` with nothing ordering them: `touch`'s (line 9, called from
/// `main` at line 22) and the forked `other`'s; `flag` is a plain field.
const TOUCH_RACE: &str = "\
class Box {
    int a;
    int b;
    int flag;
}

class Main {
    static void touch(Box x) {
        x.b = 1;
    }

    static void other(Box x) {
        while (x.flag == 0) {
        }
        x.b = 2;
    }

    static void main() {
        Box x = new Box();
        x.a = 5;
        Thread t = fork Main.other(x);
        touch(x);
        x.flag = 1;
        t.join();
        print(x.b);
    }
}
";

/// The inline exclusive rules store the thread's call context with the access's site
/// (`JitThread::ctx_word`), valid only while no call was made from below the current
/// depth since the runtime last handed the stack over. Here the main thread's write
/// of `b` in `touch` is decided inline right after a call (the shadow leaf exists
/// from the write of `a`, and no runtime call happens inside `touch` under the OS
/// scheduler), and the other thread's later write of `b` (after a spin on a plain
/// flag, so in every schedule) reports it: the earlier access's stack must name
/// `touch` called from `main`, as the interpreter and the JIT without the inline
/// check say. Seeded schedules hand the stack over at every scheduling point, which
/// would hide a stale context.
#[test]
fn inline_exclusive_rule_records_the_call_context_of_the_access() {
    let prog = compile_src("ctx.cj", TOUCH_RACE).expect("compiles");
    let run = |tier, inline_detector| {
        let cfg = RunConfig {
            tier,
            sched: SchedKind::Os,
            tools: Some("fasttrack".into()),
            inline_detector,
            ..RunConfig::default()
        };
        let out = run_program(prog.clone(), &cfg).expect("run");
        let b = out
            .warnings_text
            .iter()
            .find(|w| w.contains("Box.b"))
            .cloned()
            .unwrap_or_default();
        (b, out.report["stats"].clone())
    };
    let (interp, _) = run(Tier::Interp, true);
    assert!(
        interp.contains("Main.touch (ctx.cj:9:11)\n    #1 Main.main (ctx.cj:22:9)"),
        "the interpreter's report names touch called from main:\n{interp}"
    );
    for inline in [true, false] {
        let (jit, stats) = run(Tier::Jit, inline);
        assert_eq!(jit, interp, "jit, inline check {inline}");
        // The write of `b` in `touch` is the exclusive rule's (an earlier `W` of 0).
        let details = &stats["passes"][0]["details"];
        assert!(details["write_exclusive"].as_u64() >= Some(3), "{stats}");
    }
}

/// BigFoot's checks apply the exclusive rule through the program's function of it
/// (`vm::jit::exclusive::rule`), not a copy: it stores the check's epoch and site as
/// the copy and the pass do. So the race on `Box.b` names the write in `touch` as
/// the earlier access, on both tiers, with the inline checks on and off, under seeds
/// 1 to 3; warnings, output and every statistic are the interpreter's, and the rule
/// applied inline in some run.
#[test]
fn bigfoot_checks_apply_the_exclusive_rule_through_its_function() {
    let prog = compile_src("ctx.cj", TOUCH_RACE).expect("compiles");
    let (mut failures, mut applied) = (Vec::new(), 0);
    for seed in 1..=3 {
        let interp = run_interp_seeded(&prog, "bigfoot", seed);
        let race = interp
            .warnings_text
            .iter()
            .find(|w| w.contains("Box.b"))
            .cloned()
            .unwrap_or_default();
        assert!(
            race.contains("Previous write by thread T0:\n    #0 Main.touch (ctx.cj:9:11)"),
            "seed {seed}: the interpreter's report names the write in touch:\n{race}"
        );
        for inline in [true, false] {
            let jit = run_jit_parts_with(&prog, "bigfoot", seed, inline);
            let what = format!("jit, seed {seed}, inline checks {inline}");
            failures.extend(mismatch("ctx.cj", &interp, &what, &jit));
            applied += jit.exclusive_inline;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(applied > 0, "no check applied the exclusive rule inline");
}

/// Statics pass the inline filters (`escape` takes them as escaped, `capsule` as
/// capsule-shared, each only recording the site): behind the filters a static read
/// in a loop reaches FastTrack's inline check without a call, while inside a capsule
/// call (whose executor owns the access) it still goes to the filters. Warnings,
/// output and every statistic, per-site filter categories included, are the
/// interpreter's.
#[test]
fn statics_pass_the_inline_filters_to_the_detectors_check() {
    let src = "\
capsule class Counter {
    int n;

    int bump() {
        n = n + Main.step;
        return n;
    }
}

class Main {
    static int step = 1;
    static int total;

    static void main() {
        Counter c = new Counter();
        int s = 0;
        for (int i = 0; i < 1000; i++) {
            s = s + Main.step;
            c.bump();
        }
        total = s;
        print(total + c.bump());
    }
}
";
    let prog = compile_src("statics.cj", src).expect("compiles");
    for tools in [
        "escape:fasttrack",
        "capsule:fasttrack",
        "escape:capsule:fasttrack",
        "escape:capsule:singletrack:fasttrack",
    ] {
        let a = run_interp_seeded(&prog, tools, 1);
        let (on, off) = (
            run_jit_parts_with(&prog, tools, 1, true),
            run_jit_parts_with(&prog, tools, 1, false),
        );
        for (what, b) in [("inline check on", &on), ("inline check off", &off)] {
            if let Some(m) = mismatch(&format!("statics.cj {tools}"), &a, what, b) {
                panic!("{m}");
            }
        }
        // `Main.step` in main's loop: 1,000 reads, all but the first decided inline
        // (the reads inside `bump` run in a capsule call when `capsule` is in the
        // chain, and `escape` drops the counter's own field accesses).
        assert!(
            on.checked_inline >= 999,
            "`{tools}`: {} accesses decided inline",
            on.checked_inline
        );
    }
}

/// Inside capsule calls: `capsule`'s inline test drops a capsule-protected access
/// once the executor's call has made its synchronization check, and (with `capsule`
/// first or behind `escape`) a proven `this.f` of the running call's capsule. `Tally`
/// is a synchronized capsule whose calls touch `this.n`, `this.hist` and the array it
/// protects, on an escaped object and on each worker's own (for `escape`, a
/// thread-local capsule, whose accesses `capsule` checks without counting); `Loose`
/// is a capsule two threads call without synchronization, so a violation demotes it
/// partway through the run, typically while the other thread is inside its long
/// call (the gate closes: every access inside a capsule call is delivered from then
/// on, so that thread's next `this.v` is not dropped on the strength of its check). Warnings, output and every statistic equal the
/// interpreter's, under four seeds, and most of `Tally`'s accesses are dropped
/// inline (there are hardly any other accesses to drop).
#[test]
fn inline_capsule_test_inside_capsule_calls_keeps_every_statistic() {
    let src = "\
capsule class Tally {
    int n;
    int[] hist;
    Tally() { hist = new int[8]; }
    synchronized void add(int k) {
        n = n + k;
        int[] h = hist;
        h[k % 8] = h[k % 8] + 1;
        n = n + 1;
    }
    synchronized int get() { return n + hist[3]; }
}
capsule class Loose {
    int v;
    void spin() { for (int i = 0; i < 500; i++) { v = v + 1; } }
}
class Worker {
    Tally t;
    Loose l;
    boolean loose;
    void run() {
        Tally own = new Tally();
        for (int i = 0; i < 300; i++) {
            t.add(i);
            own.add(i);
            if (loose && i == 280) { l.spin(); }
        }
    }
}
class Main {
    static void main() {
        Tally t = new Tally();
        Loose l = new Loose();
        Worker a = new Worker();
        a.t = t; a.l = l; a.loose = true;
        Worker b = new Worker();
        b.t = t; b.l = l; b.loose = true;
        Thread x = fork a.run();
        Thread y = fork b.run();
        x.join();
        y.join();
        print(t.get());
    }
}
";
    let prog = compile_src("tally.cj", src).expect("compiles");
    let mut failures = Vec::new();
    for tools in ["capsule:fasttrack", "escape:capsule:fasttrack", "capsule"] {
        let mut dropped = 0;
        let mut violations = 0;
        for seed in [1, 2, 3, 4] {
            let a = run_interp_seeded(&prog, tools, seed);
            let b = run_jit_parts(&prog, tools, seed);
            let name = format!("tally.cj {tools} seeded:{seed}");
            failures.extend(mismatch(&name, &a, "jit+inline capsule", &b));
            assert_eq!(String::from_utf8_lossy(&b.stdout), "90376\n", "{name}");
            dropped += b.dropped_inline;
            violations += b.warnings.iter().filter(|w| w.contains("Loose")).count();
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(violations > 0, "{tools}: `Loose` was never demoted");
        // 1200 calls of `add` per run, each with 5 accesses to `this` fields (only the
        // first must be delivered: it makes the check) and 2 to the array; the 1120
        // before `spin` run with the gate open.
        let least = 4 * 5000;
        assert!(dropped >= least, "{tools}: only {dropped} dropped inline");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The JIT leaves out the inline filters' test of the thread's count of running
/// capsule calls in functions that no capsule method reaches (the count is 0 there):
/// a static helper that a capsule method calls keeps the test, one only `main`
/// calls does not; warnings and statistics stay the interpreter's, with the helper
/// running both inside and outside capsule calls and threads racing on the capsule.
#[test]
fn capsule_count_test_is_left_out_only_where_no_capsule_call_runs() {
    let src = r#"
class Helper {
    static void bump(int[] a, int i) { a[i] = a[i] + 1; }
    static int sum(int[] a) {
        int s = 0;
        for (int i = 0; i < a.length; i++) { s = s + a[i]; }
        return s;
    }
}
capsule class Acc {
    int[] data;
    Acc() { data = new int[4]; }
    void add(int i) { Helper.bump(data, i); }
    synchronized void addSync(int i) { Helper.bump(data, i); }
    void addTo(int[] a, int i) { Helper.bump(a, i); }
}
class Worker {
    Acc acc;
    int[] mine;
    Worker(Acc acc, int[] mine) { this.acc = acc; this.mine = mine; }
    void run() {
        for (int k = 0; k < 20; k++) {
            acc.addSync(k % 4);
            acc.add(k % 4);
            acc.addTo(mine, k % 4);
            Helper.bump(mine, k % 4);
        }
    }
}
class Main {
    static void main() {
        Acc acc = new Acc();
        int[] shared = new int[4];
        Thread t = fork new Worker(acc, shared).run();
        for (int k = 0; k < 20; k++) {
            acc.addSync(k % 4);
            acc.addTo(shared, k % 4);
            Helper.bump(shared, k % 4);
        }
        t.join();
        print(Helper.sum(shared));
    }
}
"#;
    let prog = compile_src("capsule_helper.cj", src).expect("compiles");
    let inside =
        vm::jit::translate::in_capsule_calls(&prog, |c| prog.classes[c as usize].is_capsule);
    let named = |name: &str| {
        (0..prog.funcs.len())
            .find(|&i| prog.func_name(lang::ir::FuncId(i as u32)) == name)
            .unwrap_or_else(|| panic!("no function {name}"))
    };
    assert!(inside[named("Acc.add")] && inside[named("Helper.bump")]);
    assert!(!inside[named("Helper.sum")] && !inside[named("Worker.run")]);
    assert!(!inside[named("Main.main")]);
    let mut failures = Vec::new();
    for tools in [
        "capsule:fasttrack",
        "escape:capsule:fasttrack",
        "escape:capsule:singletrack:fasttrack",
    ] {
        for seed in 1..=4 {
            let a = run_interp_seeded(&prog, tools, seed);
            let b = run_jit_parts(&prog, tools, seed);
            failures.extend(mismatch(&format!("{tools} seeded:{seed}"), &a, "jit", &b));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Two `Reader`s whose `run` is `RUN` (reading `x[idx[j]]`), forked by a main thread
/// that first runs `SETUP` (which makes `idx`) and then writes `x[AT]` while they run.
const TWO_READERS: &str = r#"
class Reader {
    int[] x;
    int[] idx;
    int s;
    Reader(int[] x, int[] idx) { this.x = x; this.idx = idx; }
    void run() {
RUN
    }
}
class Main {
    static void main() {
        int[] x = new int[64];
SETUP
        Reader r = new Reader(x, idx);
        Reader q = new Reader(x, idx);
        Thread t = fork r.run();
        Thread u = fork q.run();
        x[AT] = 7;
        t.join();
        u.join();
        print(r.s + q.s);
    }
}
"#;

/// [`TWO_READERS`] with `run` and `setup`, for each write `x[at]` of `ats`, under
/// `bigfoot` and `escape:capsule:bigfoot` with seeds 1 to 3: the JIT's run and the
/// JIT's without inline checks must be the interpreter's, and report a race exactly
/// when `racy(at)`. The failures, and the JIT runs with inline checks.
fn two_reader_runs(
    run: &str,
    setup: &str,
    ats: &[u32],
    racy: impl Fn(u32) -> bool,
) -> (Vec<String>, Vec<InlineRun>) {
    let (mut failures, mut runs) = (Vec::new(), Vec::new());
    for &at in ats {
        let src = TWO_READERS
            .replace("RUN", run)
            .replace("SETUP", setup)
            .replace("AT", &at.to_string());
        let prog = compile_src("readers.cj", &src).expect("ok");
        for tools in ["bigfoot", "escape:capsule:bigfoot"] {
            for seed in 1..=3 {
                let a = run_interp_seeded(&prog, tools, seed);
                let b = run_jit_parts(&prog, tools, seed);
                let c = run_jit_parts_with(&prog, tools, seed, false);
                let name = format!("x[{at}] {tools} seeded:{seed}");
                failures.extend(mismatch(&name, &a, "jit", &b));
                failures.extend(mismatch(&name, &a, "jit without inline checks", &c));
                let races = b.warnings.iter().any(|w| w.contains("race"));
                if races != racy(at) {
                    failures.push(format!("{name}: race reported: {races}"));
                }
                runs.push(b);
            }
        }
    }
    (failures, runs)
}

/// BigFoot's element checks that the site's own range in the thread's footprint
/// covers are dropped inline (indirect reads `x[idx[j]]` that come back to an
/// element, as a sparse product's `y[row[i]]`):
/// the run is the interpreter's, up to the element just past the range, which must
/// still be checked (and race, here, with the other thread's write).
#[test]
fn element_checks_inside_the_sites_range_are_dropped_inline_and_no_others() {
    let run = "int t = 0;
        for (int j = 0; j < idx.length; j++) { t = t + x[idx[j]]; }
        s = t;";
    let setup = "int[] idx = new int[80];
        for (int j = 0; j < 80; j++) { idx[j] = j / 2; }";
    // The write lands inside the reads' range, at its start, in it, and past it.
    let (failures, runs) = two_reader_runs(run, setup, &[0, 1, 20, 39, 40], |at| at < 40);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        runs.iter().any(|r| r.covered_inline > 0),
        "no element check was dropped inline as covered"
    );
}

/// Two readers walk a fine array in a scattered order, each element twice a round,
/// for four rounds with a commit after each, while the main thread writes one
/// element: the element read checks that the readers' read memos decide (after a
/// call took a memo up) give the interpreter's warnings and statistics, and those of
/// the JIT without inline checks, and a race is reported exactly when the written
/// element is one the readers read. A memo that said yes for an element not read in
/// its generation would skip a read's first check.
#[test]
fn read_memos_decide_repeated_element_reads_and_keep_every_race() {
    // A commit after each round: from the second round on, a reader knows the
    // shadow is fine and checks elements on their cells, in a new generation.
    let run = "int t = 0;
        for (int r = 0; r < 4; r++) {
            for (int j = 0; j < idx.length; j++) { t = t + x[idx[j]]; }
            synchronized (this) { s = t; }
        }";
    // Scattered writes (the commit before the forks makes the shadow fine), and 48
    // scattered elements to read, each twice in a round.
    let setup = "for (int j = 0; j < 64; j++) { x[(j * 21) % 64] = j; }
        int[] idx = new int[96];
        for (int j = 0; j < 96; j++) { idx[j] = ((j % 48) * 37 + 5) % 64; }";
    let read: std::collections::BTreeSet<u32> = (0..48).map(|j| (j * 37 + 5) % 64).collect();
    let (failures, runs) = two_reader_runs(run, setup, &[5, 42, 0, 1, 63], |at| read.contains(&at));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        runs.iter().any(|r| r.memo_inline > 0),
        "no element read was decided by a read memo"
    );
}

/// Two workers run `BODY` for their halves `i` of 40 outer iterations over a shared
/// `key` array of `LEN` elements (and write `out[i]`); the main thread writes
/// `key[k]` while they run (`Some(k)`) or before it forks them (`None`, at
/// `before`). For each such write, under `bigfoot` and `escape:capsule:bigfoot`
/// with seeds 1 to 3: the JIT's run must be the interpreter's, report a race
/// exactly when the write is concurrent, and pass `also` (given a name for the
/// run); the failures, one per line.
fn key_writer_runs(
    body: &str,
    len: u32,
    ats: &[Option<u32>],
    before: u32,
    also: impl Fn(&str, &InlineRun) -> Option<String>,
) -> Vec<String> {
    let src = r#"
class Runner {
    int[] key;
    int[] out;
    int lo;
    int hi;
    Runner(int[] key, int[] out, int lo, int hi) {
        this.key = key; this.out = out; this.lo = lo; this.hi = hi;
    }
    void run() {
        for (int i = lo; i < hi; i++) {
            int t = i;
            BODY
            out[i] = t;
        }
    }
}
class Main {
    static void main() {
        int[] key = new int[LEN];
        int[] out = new int[40];
        BEFORE
        Thread t = fork new Runner(key, out, 0, 20).run();
        Thread u = fork new Runner(key, out, 20, 40).run();
        AFTER
        t.join();
        u.join();
        int s = 0;
        for (int i = 0; i < 40; i++) { s = s + out[i]; }
        print(s);
    }
}
"#
    .replace("BODY", body)
    .replace("LEN", &len.to_string());
    let mut failures = Vec::new();
    for &at in ats {
        let write = |k: u32| format!("key[{k}] = 3;");
        let (b, a) = match at {
            Some(k) => (String::new(), write(k)),
            None => (write(before), String::new()),
        };
        let prog =
            compile_src("keys.cj", &src.replace("BEFORE", &b).replace("AFTER", &a)).expect("ok");
        for tools in ["bigfoot", "escape:capsule:bigfoot"] {
            for seed in 1..=3 {
                let interp = run_interp_seeded(&prog, tools, seed);
                let jit = run_jit_parts(&prog, tools, seed);
                let name = format!("{at:?} {tools} seeded:{seed}");
                failures.extend(mismatch(&name, &interp, "jit", &jit));
                let races = jit.warnings.iter().any(|w| w.contains("race"));
                if races != at.is_some() {
                    failures.push(format!("{name}: race reported: {races}"));
                }
                failures.extend(also(&name, &jit));
            }
        }
    }
    failures
}

/// BigFoot's range checks that an inner loop's exit repeats for every iteration of
/// the outer loop (IDEA's key schedule in bench/crypt.cj) are dropped inline by the
/// site's entry, also where the range runs past the array (clamped, as the runtime
/// clamps it) or holds one element; the range registers' flushes before their
/// first access (a null array) cost nothing. The run is the interpreter's, and a
/// write of the main thread to the key, inside a strided range, at an element the
/// loop reads after its inner loop, or before the workers start, races exactly
/// where it should.
#[test]
fn repeated_range_checks_are_dropped_inline_and_still_race() {
    // (Offsets 0 and 2 of step 3: two strided ranges. Offsets 0, 1 and 2 of one
    // array would make one contiguous range.)
    let body = "
            int ik = 0;
            for (int r = 0; r < 4; r++) {
                t = t * key[ik] - key[ik + 2];
                ik += 3;
            }
            t = t + key[ik];";
    // `key[11]` is in the range `key[2..14:3]` (clamped to `key[2..13:3]`), `key[12]`
    // the element read after the inner loop.
    let failures = key_writer_runs(
        body,
        13,
        &[Some(11), Some(12), Some(0), None],
        11,
        |name, jit| {
            // Each runner's 20 outer iterations: from the second on, its two range
            // checks (`key[0..12:3]`, `key[2..14:3]` clamped) and its element check.
            (jit.covered_inline != 2 * 19 * 3)
                .then(|| format!("{name}: {} covered inline", jit.covered_inline))
        },
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A site's entry covers a strided range check only of its own start and step, or
/// any range inside a step-1 entry: an inner loop that alternates between
/// `key[0..12:3]` and `key[1..10:3]` (inside the first's bounds, none of its
/// elements) checks both every time, so the main thread's write to `key[4]`, which
/// only the second reads, races; the run is the interpreter's.
#[test]
fn a_sites_entry_covers_a_strided_range_only_from_its_own_start() {
    let body = "
            int s0 = i % 2 == 0 ? 0 : 1;
            int e0 = i % 2 == 0 ? 12 : 10;
            for (int r = s0; r < e0; r += 3) {
                t = t * 3 + key[r];
            }";
    // `key[4]` only in the odd iterations' range, `key[3]` only in the even ones'.
    let failures = key_writer_runs(body, 12, &[Some(4), Some(3), None], 4, |_, _| None);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A read of `a[i]` right before its write `a[i] = …` (nothing between them that
/// touches the heap, synchronizes or can fault) is checked as a pair when the
/// threads run in parallel: the read's inline exclusive rule applies the write's
/// too. On a race-free phased program (every rule count fixed by the barriers) the
/// pairs fire where the rules say they can, and the warnings and every statistic
/// equal those of the same run with the inline check off and of the seeded run;
/// on a racy one (two threads update every element without synchronization) the
/// array's races are reported either way. Under the seeded scheduler, whose point
/// before the store may switch threads, nothing pairs. Behind SingleTrack's guard
/// the same holds outside and inside a `deterministic` block, and a determinism
/// conflict after a pair names the pair's write.
#[test]
fn inline_read_write_pairs_keep_every_warning_and_statistic() {
    let phased_src = r#"
class Worker {
    int id;
    int parts;
    double[] a;
    double[] c;
    Barrier br;
    Worker(int id, int parts, double[] a, double[] c, Barrier br) {
        this.id = id;
        this.parts = parts;
        this.a = a;
        this.c = c;
        this.br = br;
    }
    void run() {
        int n = a.length;
        double[] b = a;
        double[] d = c;
        int lo = id * (n / parts);
        int hi = lo + n / parts;
        double s = 0.0;
        for (int p = 0; p < 6; p++) {
            // A new epoch: each read is exclusive and pairs with its write, except
            // where the write came first (then `W` is the epoch already) or where
            // two threads have read the element (shared reads are decided out of
            // line: no pair).
            for (int i = lo; i < hi; i++) {
                if (i % 3 == 0) {
                    a[i] = 3.0;
                }
                // The array in a local, with another array's load between the
                // read and the write (the read moves after it), or read again
                // from the field for the store (the pair compares the two at run
                // time).
                if (p % 2 == 0) {
                    b[i] += d[i] * 0.5;
                } else {
                    a[i] = a[i] * 0.5 + 1.0;
                }
                a[i] = a[i] + 2.0;
            }
            br.await();
            if (p % 2 == 1) {
                for (int i = lo; i < hi; i++) {
                    s = s + a[(i + 5) % n] + a[i];
                }
            }
            br.await();
        }
        a[lo] = a[lo] + s;
    }
}
class Main {
    static void main() {
        int parts = 3;
        double[] a = new double[300];
        double[] c = new double[300];
        // Every element touched before the workers start, so that no two of them
        // race to create the shadow of `a` (the loser's access would go out of
        // line, and its pair with it).
        for (int i = 0; i < c.length; i++) {
            c[i] = i * 0.25;
            a[i] = 0.0;
        }
        Barrier br = new Barrier(parts);
        Thread[] th = new Thread[parts];
        for (int i = 1; i < parts; i++) {
            th[i] = fork new Worker(i, parts, a, c, br).run();
        }
        new Worker(0, parts, a, c, br).run();
        for (int i = 1; i < parts; i++) {
            th[i].join();
        }
        double t = 0.0;
        for (int i = 0; i < a.length; i++) {
            t = t + a[i];
        }
        print(t);
    }
}
"#;
    let racy = r#"
class Bump {
    double[] a;
    Bump(double[] a) {
        this.a = a;
    }
    void run() {
        for (int k = 0; k < 50; k++) {
            for (int i = 0; i < a.length; i++) {
                a[i] = a[i] + 1.0;
            }
        }
    }
}
class Main {
    static void main() {
        double[] a = new double[64];
        Thread t1 = fork new Bump(a).run();
        Thread t2 = fork new Bump(a).run();
        t1.join();
        t2.join();
    }
}
"#;
    // A fault between a moved read and its write is where it was: the moved read's
    // own checks stay in place, and the other load's fault comes first only where
    // it came first.
    for (body, pairs) in [
        (
            "double[] a = new double[4]; double[] b = new double[2]; \
          for (int i = 0; i < 4; i++) { a[i] += b[i] * 2.0; }",
            true,
        ),
        (
            "double[] a = null; double[] b = new double[2]; a[3] += b[5];",
            false,
        ),
        (
            "double[] a = new double[2]; double[] b = null; a[5] += b[0];",
            false,
        ),
        (
            "double[] a = new double[2]; double[] b = null; a[1] += b[0];",
            false,
        ),
    ] {
        let src = format!("class Main {{ static void main() {{ {body} }} }}");
        let prog = compile_src("fault", &src).expect("compiles");
        let interp = run_interp_seeded(&prog, "fasttrack", 1);
        let jit = run_jit_parts_sched(&prog, "fasttrack", None, true);
        assert!(jit.error.is_some(), "{body}: no error");
        assert_eq!(interp.error_text, jit.error, "{body}: the error");
        assert_eq!(interp.report["stats"], jit.stats, "{body}: statistics");
        assert_eq!(jit.paired_inline > 0, pairs, "{body}: pairs");
    }
    // A counter under a lock: each increment after an acquire reads and writes the
    // field by the exclusive rules (the other thread's write is ordered by the
    // lock), so every one pairs, whatever the interleaving.
    let counter = r#"
class Counter {
    int n;
}
class Worker {
    Counter c;
    Worker(Counter c) {
        this.c = c;
    }
    void run() {
        Counter c = this.c;
        for (int i = 0; i < 1000; i++) {
            synchronized (c) {
                c.n = c.n + 1;
            }
        }
    }
}
class Main {
    static void main() {
        Counter c = new Counter();
        // Its shadow made before the workers start (else the first of them to reach
        // it would find none, and its increment would not pair).
        c.n = 0;
        Thread t = fork new Worker(c).run();
        new Worker(c).run();
        t.join();
        print(c.n);
    }
}
"#;
    let counter = compile_src("counter", counter).expect("compiles");
    // (Behind `singletrack`, outside every transaction: both accesses pass the idle
    // test.)
    for tools in [
        "fasttrack",
        "escape:fasttrack",
        "capsule:fasttrack",
        "singletrack:fasttrack",
    ] {
        let on = run_jit_parts_sched(&counter, tools, None, true);
        let off = run_jit_parts_sched(&counter, tools, None, false);
        assert!(on.warnings.is_empty(), "{tools}: {:?}", on.warnings);
        assert_eq!(on.stdout, b"2000\n", "{tools}: output");
        assert_eq!(on.stats, off.stats, "{tools}: statistics");
        // (Behind a filter, an access may go out of line once the object is
        // shared, so a pair or two may not apply: the statistics above say the
        // result is the same.)
        let least = if tools.ends_with("capsule:fasttrack") || tools == "escape:fasttrack" {
            1990
        } else {
            2000
        };
        assert!(
            (least..=2000).contains(&on.paired_inline),
            "{tools}: {} field pairs",
            on.paired_inline
        );
    }
    let phased = compile_src("phased", phased_src).expect("compiles");
    let racy = compile_src("racy", racy).expect("compiles");
    for tools in ["fasttrack", "escape:fasttrack"] {
        let on = run_jit_parts_sched(&phased, tools, None, true);
        let off = run_jit_parts_sched(&phased, tools, None, false);
        assert!(on.error.is_none(), "{tools}: {:?}", on.error);
        assert!(on.warnings.is_empty(), "{tools}: {:?}", on.warnings);
        assert_eq!(on.stdout, off.stdout, "{tools}: output");
        assert_eq!(on.warnings, off.warnings, "{tools}: warnings");
        assert_eq!(on.stats, off.stats, "{tools}: statistics");
        assert_eq!(off.paired_inline, 0, "{tools}: the check is off");
        // 3 threads x 100 elements x 6 phases, less the third written first, and
        // less the 10 of those 200 whose reads are shared from phase 2 on (the 5
        // at the start of each slice, read by two threads in phase 1; FT2's reads
        // stay shared); the final `a[lo]` is one of them.
        assert_eq!(on.paired_inline, 1200 - 4 * 10, "{tools}: pairs");
        let seeded = run_jit_parts_sched(&phased, tools, Some(1), true);
        assert_eq!(
            seeded.paired_inline, 0,
            "{tools}: nothing pairs when seeded"
        );
        assert_eq!(seeded.stats, on.stats, "{tools}: seeded statistics");
        // Which accesses race first depends on the schedule; the races do not.
        for _ in 0..3 {
            for on in [true, false] {
                let run = run_jit_parts_sched(&racy, tools, None, on);
                assert!(!run.racy.is_empty(), "{tools}, inline {on}: no race found");
                assert!(
                    run.warnings
                        .iter()
                        .all(|w| w.contains("data race on double[")),
                    "{tools}, inline {on}: {:?}",
                    run.warnings
                );
                assert_eq!(run.paired_inline > 0, on, "{tools}, inline {on}: pairs");
            }
        }
    }
    // Behind SingleTrack's guard: the phased program inside a `deterministic` block.
    // A read whose stamp test fails applies the sole-accessor rule for its write as
    // well (the stamp becomes the thread's write stamp), and FastTrack's pair then
    // applies where the write would pass the guard. The first phase's accesses are
    // the locations' first (out of line), the second claims the sole entries.
    let deterministic = phased_src.replace(
        "        Thread[] th = new Thread[parts];",
        "        Thread[] th = new Thread[parts];\n        deterministic {",
    );
    let deterministic = deterministic.replace(
        "            th[i].join();\n        }\n",
        "            th[i].join();\n        }\n        }\n",
    );
    assert_ne!(deterministic, phased_src, "the block is in");
    let deterministic = compile_src("deterministic", &deterministic).expect("compiles");
    for tools in [
        "singletrack:fasttrack",
        "escape:capsule:singletrack:fasttrack",
    ] {
        // Outside every transaction both accesses pass the idle test (each counted
        // as such); inside, the pairs of the phases after the second.
        for (prog, pairs) in [(&phased, 1200 - 4 * 10), (&deterministic, 4 * (200 - 10))] {
            let on = run_jit_parts_sched(prog, tools, None, true);
            let off = run_jit_parts_sched(prog, tools, None, false);
            assert!(on.error.is_none(), "{tools}: {:?}", on.error);
            assert!(on.warnings.is_empty(), "{tools}: {:?}", on.warnings);
            assert_eq!(on.stdout, off.stdout, "{tools}: output");
            assert_eq!(on.stats, off.stats, "{tools}: statistics");
            assert_eq!(off.paired_inline, 0, "{tools}: the check is off");
            assert_eq!(on.paired_inline, pairs, "{tools}: pairs");
            let seeded = run_jit_parts_sched(prog, tools, Some(1), true);
            assert_eq!(seeded.paired_inline, 0, "{tools}: seeded");
            assert_eq!(seeded.stats, on.stats, "{tools}: seeded statistics");
        }
    }
    // A conflict after a pair: thread 0's pairs in its fourth epoch leave the sole
    // entry with its write (not the read before it), which thread 1's read, ordered
    // by a volatile flag for FastTrack but not for SingleTrack, conflicts with.
    let handoff = r#"
class Flag {
    volatile boolean set;
}
class Worker {
    int id;
    double[] a;
    Flag f;
    Barrier br;
    Worker(int id, double[] a, Flag f, Barrier br) {
        this.id = id;
        this.a = a;
        this.f = f;
        this.br = br;
    }
    void run() {
        for (int p = 0; p < 3; p++) {
            if (id == 0) {
                for (int i = 0; i < a.length; i++) {
                    a[i] += 1.0;
                }
            }
            br.await();
        }
        // A fourth epoch: thread 0 reads and writes each element (its sole
        // accessor's pair), then hands over by a volatile flag, which orders for
        // FastTrack but not for SingleTrack.
        if (id == 0) {
            for (int i = 0; i < a.length; i++) {
                a[i] += 1.0;
            }
            f.set = true;
        } else {
            while (!f.set) {
            }
            double s = 0.0;
            for (int i = 0; i < a.length; i++) {
                s = s + a[i];
            }
            print(s);
        }
    }
}
class Main {
    static void main() {
        double[] a = new double[8];
        Flag f = new Flag();
        Barrier br = new Barrier(2);
        deterministic {
            Thread t = fork new Worker(1, a, f, br).run();
            new Worker(0, a, f, br).run();
            t.join();
        }
    }
}
"#;
    let handoff = compile_src("handoff", handoff).expect("compiles");
    for on in [true, false] {
        let run = run_jit_parts_sched(&handoff, "singletrack:fasttrack", None, on);
        assert_eq!(run.stdout, b"32.0\n", "inline {on}: output");
        let conflict = run
            .warnings
            .iter()
            .find(|w| w.contains("determinism conflict on double[0]"))
            .unwrap_or_else(|| panic!("inline {on}: {:?}", run.warnings));
        assert!(
            conflict.contains("write by T0 and read by T1")
                && conflict
                    .contains("Previous write by thread T0:\n    #0 Worker.run (handoff:30:"),
            "inline {on}: {conflict}"
        );
        assert!(run.warnings.iter().all(|w| !w.contains("data race")));
        // Phases 2 and 3 (the first access is out of line, the second claims).
        assert_eq!(
            run.paired_inline,
            if on { 16 } else { 0 },
            "inline {on}: pairs"
        );
    }
}

/// A run that takes no statistics (`RunConfig::stats` false: no `--stats`, no
/// `--report`) compiles its inline tests without their counters
/// (`JitOptions::count_inline`): its warnings, output and errors are those of the run
/// with statistics, and its statistics are empty. Over the bugs and examples under a
/// seeded schedule, and the small bench kernels (race-free, so their reports do not
/// depend on the schedule) with the threads in parallel, where the read-write pairs
/// apply too; under the chains with inline filters, checks and rules.
#[test]
fn inline_tests_without_counters_keep_every_warning() {
    let mut failures = Vec::new();
    let mut warned = 0;
    let programs = corpus("bugs")
        .into_iter()
        .chain(corpus("examples"))
        .map(|p| (p, SchedKind::Seeded(1)))
        .chain(
            corpus("bench")
                .into_iter()
                .filter(|p| !p.to_string_lossy().ends_with("_large.cj"))
                .map(|p| (p, SchedKind::Os)),
        );
    let programs: Vec<(PathBuf, SchedKind)> = programs.collect();
    for tools in [
        "fasttrack",
        "escape:fasttrack",
        "capsule:fasttrack",
        "escape:capsule:fasttrack",
        "escape:capsule:singletrack:fasttrack",
        "bigfoot",
        "escape:bigfoot",
        "escape:capsule:bigfoot",
    ] {
        for (p, sched) in &programs {
            let Some(prog) = compile_file(p) else {
                continue;
            };
            let cfg = |stats| RunConfig {
                tier: Tier::Jit,
                sched: *sched,
                tools: Some(tools.into()),
                stats,
                ..RunConfig::default()
            };
            let with = run_program(prog.clone(), &cfg(true)).expect("run");
            let without = run_program(prog.clone(), &cfg(false)).expect("run");
            let name = format!("{} {tools} {sched:?}", p.display());
            if without.report["stats"] != serde_json::json!({}) {
                failures.push(format!("{name}: statistics without --stats"));
            }
            if with.report["warnings"] != without.report["warnings"] {
                failures.push(format!(
                    "{name}: warnings {} with statistics, {} without",
                    with.report["warnings"], without.report["warnings"]
                ));
            }
            if with.stdout != without.stdout || with.error_text != without.error_text {
                failures.push(format!("{name}: output or error differs"));
            }
            warned += with.warnings.len();
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The corpus's bugs are found: the comparison is not between two empty reports.
    assert!(warned > 50, "{warned} warnings in all");
}

/// The runtime functions that inline fast paths call where they miss and then go on
/// (`Rt::keeps_registers`) are called through stubs that keep every register, so
/// that the values of a hot loop stay in registers across them: fourteen `double`s
/// and five `int`s live across a loop whose shared reads and writes race with the
/// other thread's (every chain's inline tests miss, and both the detector's and the
/// placement's out-of-line calls run) give the interpreter's output, warnings and
/// statistics, with the inline tests and without. A stub that lost one register
/// would change the printed sums or crash the run (a stub compiled with the native
/// convention crashes it).
#[test]
fn loop_values_in_registers_survive_the_runtime_calls() {
    let src = r#"
class Shared { int f; int[] xs; Shared() { xs = new int[8]; } }
class Worker {
    Shared s;
    int k;
    double out;
    int outi;
    Worker(Shared s, int k) { this.s = s; this.k = k; }
    void run() {
        double a = 1.0; double b = 2.0; double c = 3.0; double d = 4.0;
        double e = 5.0; double f = 6.0; double g = 7.0; double h = 8.0;
        double i = 9.0; double j = 10.0; double l = 11.0; double m = 12.0;
        double n = 13.0; double o = 14.0;
        int p = 1; int q = 2; int r = 3; int t = 4; int u = 5;
        for (int it = 0; it < 40; it++) {
            a = a * 1.5 + b; b = b * 0.5 + c; c = c + d * 0.25; d = d - e * 0.125;
            int v = s.xs[(it + k) % 8];
            s.xs[(it * 3 + k) % 8] = v + it;
            e = e + f * 0.5; f = f * 0.75 + g; g = g + h; h = h * 0.5 + i;
            int w = s.f;
            s.f = w + k;
            i = i + j * 0.25; j = j * 0.5 + l; l = l + m * 0.125; m = m * 0.5 + n;
            n = n + o * 0.25; o = o * 0.5 + a * 0.001;
            p = p * 3 + q; q = q + r * 7; r = r ^ t; t = t + u * 5; u = u * 7 + 1;
        }
        out = a + b * 3.0 + c * 5.0 + d * 7.0 + e * 11.0 + f * 13.0 + g * 17.0
            + h * 19.0 + i * 23.0 + j * 29.0 + l * 31.0 + m * 37.0 + n * 41.0 + o * 43.0;
        outi = p + q * 3 + r * 5 + t * 7 + u * 11;
    }
}
class Main {
    static void main() {
        Shared s = new Shared();
        Worker x = new Worker(s, 1);
        Worker y = new Worker(s, 2);
        Thread tx = fork x.run();
        Thread ty = fork y.run();
        tx.join();
        ty.join();
        print(x.out);
        print(y.out);
        print(x.outi + y.outi);
    }
}
"#;
    let prog = compile_src("registers.cj", src).expect("ok");
    let mut failures = Vec::new();
    for tools in [
        "fasttrack",
        "escape:capsule:fasttrack",
        "escape:capsule:singletrack:fasttrack",
        "bigfoot",
        "escape:capsule:bigfoot",
    ] {
        for seed in 1..=3 {
            let a = run_interp_seeded(&prog, tools, seed);
            let name = format!("{tools} seeded:{seed}");
            for inline in [true, false] {
                let b = run_jit_parts_with(&prog, tools, seed, inline);
                let what = format!("jit (inline checks: {inline})");
                failures.extend(mismatch(&name, &a, &what, &b));
                if !b.warnings.iter().any(|w| w.contains("race")) {
                    failures.push(format!("{name}: {what}: no race reported"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A capsule whose calls the JIT may repeat without their check
/// (`analyses::pass::RepeatCall`): `next` and `gauss` touch only their own fields
/// (`gauss` through nested `next` calls), first at one site.
const REPEAT_RNG: &str = "\
capsule class Rng {
    int seed;
    double spare;
    boolean have;
    Rng(int s) { seed = s; }
    int next() {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed;
    }
    double gauss() {
        if (have) {
            have = false;
            return spare;
        }
        double a = (next() % 1000) * 0.001;
        double b = (next() % 1000) * 0.001;
        spare = b;
        have = true;
        return a;
    }
}
class Peek {
    int look(Rng r) { return r.seed; }
}
class Main {
    static volatile int seen;
    static int direct(Rng r) { return r.next(); }
    static int handed(Rng r) { int v = seen; return r.next() + v; }
    static void main() {
        Rng r = new Rng(7);
        Rng q = new Rng(8);
        int s = 0;
        double g = 0.0;
        for (int i = 0; i < 2000; i++) { s = (s + r.next()) % 1000003; }
        for (int i = 0; i < 2000; i++) { g = g + r.gauss(); }
        LAST
        print(s);
        print(g);
        print(new Peek().look(PEEK));
    }
}
";

/// Repeated calls on a capsule skip their check in generated code
/// (`Translator::repeat_call`), and every report stays the one of a run that checks
/// each call: the encapsulation violation at the end names the last capsule call's
/// entry (its first state access and call stack) whichever way the calls before it
/// ran. The last call differs from the armed one in one respect per case — its call
/// site, the frame below it (called again from another site, with or without an
/// event that hands the stack to the chain in between), its receiver — or repeats
/// it. Planted bugs each fail here: no test of the frame word, of `frames_low`, of
/// the receiver, or no disarming when the stack is handed over with changed frames.
#[test]
fn repeated_capsule_calls_skip_their_check_and_keep_every_report() {
    let cases = [
        ("repeat", "", "r"),
        ("other site", "s = s + r.next();", "r"),
        (
            "frame below from another site",
            "for (int i = 0; i < 50; i++) { s = s + direct(r); }\n        s = s + direct(r);",
            "r",
        ),
        (
            "stack handed over in between",
            "for (int i = 0; i < 50; i++) { s = s + handed(r); }\n        s = s + handed(r);",
            "r",
        ),
        (
            "other receiver",
            "for (int i = 0; i < 50; i++) { Rng x = r; if (i == 49) { x = q; } s = s + x.next(); }",
            "q",
        ),
    ];
    let tools = "escape:capsule:fasttrack";
    let mut failures = Vec::new();
    for (name, last, peek) in cases {
        let src = REPEAT_RNG.replace("LAST", last).replace("PEEK", peek);
        let prog = compile_src("rng.cj", &src).expect("compiles");
        let interp = run_program(
            prog.clone(),
            &RunConfig {
                tier: Tier::Interp,
                tools: Some(tools.into()),
                ..RunConfig::default()
            },
        )
        .expect("run");
        // No inline counters: a run that counts them never repeats a call.
        let uncounted = |o: &mut vm::jit::JitOptions| o.count_inline = false;
        let repeated = run_jit_parts_tuned(&prog, tools, None, true, uncounted);
        let checked = run_jit_parts_tuned(&prog, tools, None, true, |o| {
            uncounted(o);
            o.repeatable.clear();
        });
        assert_eq!(
            interp.warnings_text.len(),
            1,
            "{name}: {:?}",
            interp.warnings_text
        );
        assert!(
            interp.warnings_text[0].contains("Previous inside"),
            "{name}: {}",
            interp.warnings_text[0]
        );
        for (what, run) in [("repeated", &repeated), ("checked", &checked)] {
            if run.warnings != interp.warnings_text || run.stdout != interp.stdout {
                failures.push(format!(
                    "{name}, {what}:\n{}\n--- interpreter:\n{}",
                    run.warnings.join("\n"),
                    interp.warnings_text.join("\n")
                ));
            }
        }
        // The repeats happened: `capsule` received fewer of the accesses `escape`
        // drops as thread-local (each call's first is delivered unless repeated).
        // `capsule` is the chain's second pass.
        let delivered = |r: &InlineRun| {
            r.stats["passes"][1]["details"]["local_checked"]
                .as_u64()
                .unwrap_or_else(|| panic!("{name}: no `local_checked` statistic"))
        };
        assert!(
            delivered(&repeated) + 3000 < delivered(&checked),
            "{name}: {} accesses delivered with repeats, {} without",
            delivered(&repeated),
            delivered(&checked)
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
