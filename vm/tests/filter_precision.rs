//! Property 2 (`docs/architecture.md`) on the whole corpus: for every example, bug and
//! benchmark program (small size) under several `seeded` schedules, the chains
//! `escape:fasttrack`, `capsule:fasttrack` and `escape:capsule:fasttrack` are trace
//! precise. Each filtered run records its own trace; unfiltered `fasttrack` analyses
//! exactly that trace, and the filtered chain must report a race iff it does (unless
//! `capsule` reported a capsule violation) and never a location it does not
//! (`vm::testing::program_oracles::filters_trace_precise`).
//!
//! `FILTER_SEEDS=N` runs more seeds locally (default 6; programs marked `//! heavy`
//! and the benchmark kernels run 2).

use std::path::{Path, PathBuf};

use vm::testing::program_oracles::filters_trace_precise;

fn seeds() -> u64 {
    std::env::var("FILTER_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6)
}

fn programs(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cj"))
        .filter(|p| !p.to_string_lossy().ends_with("_large.cj"))
        .collect();
    v.sort();
    v
}

fn is_heavy(src: &str) -> bool {
    src.lines().take(3).any(|l| l.contains("//! heavy"))
}

fn check(dir: &str, few: bool) {
    let mut failures = Vec::new();
    let mut runs = 0;
    for p in programs(dir) {
        let src = std::fs::read_to_string(&p).unwrap();
        let n = if few || is_heavy(&src) {
            seeds().min(2)
        } else {
            seeds()
        };
        for seed in 1..=n {
            runs += 1;
            if let Err(e) = filters_trace_precise(&src, seed) {
                failures.push(format!("{}: {e}", p.display()));
            }
        }
    }
    assert!(runs > 0, "no programs in corpus/{dir}");
    assert!(
        failures.is_empty(),
        "{} of {runs} runs not trace precise:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn examples_are_trace_precise_under_filters() {
    check("examples", false);
}

#[test]
fn bugs_are_trace_precise_under_filters() {
    check("bugs", false);
}

#[test]
fn bench_kernels_are_trace_precise_under_filters() {
    check("bench", true);
}

/// The report of one seeded run without the counts of `Enter`/`Exit` events
/// (`without_frame_counts`), and how many `Enter` events the chain received.
fn report_without_frames(
    src: &str,
    tools: &str,
    tier: vm::Tier,
    seed: u64,
    elide: bool,
) -> (String, u64) {
    let prog = vm::testing::program_oracles::compile(src).unwrap_or_else(|e| panic!("{e}"));
    let cfg = vm::RunConfig {
        tools: Some(tools.into()),
        tier,
        sched: vm::SchedKind::Seeded(seed),
        elide_frames: elide,
        ..vm::RunConfig::default()
    };
    let out = vm::run_program(prog, &cfg).expect("run");
    let (report, enters) = vm::testing::program_oracles::without_frame_counts(&out.report);
    (format!("{report:#}"), enters)
}

/// A capsule call that touches the state only through a nested call: the nested
/// call is a segment of its own (its frame is the one checked, and it leaves the
/// capsule at its exit), so another thread ordered after it by a volatile may use
/// the capsule while the outer call still runs. Its `Enter`/`Exit` must not be
/// skipped: the outer frame has made no check.
const NESTED_ONLY: &str = "
capsule class K {
    int x;
    int get() { return x; }
    int outer(Flags m) {
        int v = get();
        m.go = 1;
        while (m.back == 0) { }
        return v;
    }
}
class Flags {
    volatile int go;
    volatile int back;
}
class User {
    void run(K k, Flags m) {
        while (m.go == 0) { }
        int v = k.get();
        m.back = 1;
        print(v);
    }
}
class Main {
    static void main() {
        K k = new K();
        Flags m = new Flags();
        Thread t = fork new User().run(k, m);
        print(k.outer(m));
        t.join();
    }
}";

#[test]
fn nested_capsule_calls_skip_their_frames_and_decide_alike() {
    // A call on the capsule whose checked call is the innermost frame, of a method
    // that takes and returns no reference and cannot release a monitor, delivers no
    // `Enter`/`Exit` (`Hook::elides_frames`): every warning and statistic but those
    // events' counts must be as with them, on both tiers.
    let mut elided = 0;
    let mut progs: Vec<PathBuf> = ["bench", "bugs", "examples"]
        .iter()
        .flat_map(|d| programs(d))
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|s| s.contains("capsule class")))
        .collect();
    progs.sort();
    assert!(progs.len() >= 8, "{progs:?}");
    let mut failures = Vec::new();
    for seed in 1..4 {
        for tier in [vm::Tier::Interp, vm::Tier::Jit] {
            let (report, _) =
                report_without_frames(NESTED_ONLY, "capsule:fasttrack", tier, seed, true);
            if report.contains("capsule-violation") {
                failures.push(format!("NESTED_ONLY {tier:?} seed {seed}: {report}"));
            }
        }
    }
    for p in &progs {
        let src = std::fs::read_to_string(p).unwrap();
        for tools in ["capsule:fasttrack", "escape:capsule:singletrack:fasttrack"] {
            for (tier, seed) in [(vm::Tier::Interp, 1), (vm::Tier::Jit, 2)] {
                let (with, n_with) = report_without_frames(&src, tools, tier, seed, false);
                let (without, n_without) = report_without_frames(&src, tools, tier, seed, true);
                elided += n_with - n_without;
                if with != without {
                    failures.push(format!(
                        "{} {tools} {tier:?} seed {seed}:\n{with}\n---\n{without}",
                        p.display()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Not vacuous: the kernels' capsules call their own methods (`Random.next`).
    assert!(elided > 1000, "{elided} calls elided");
}
