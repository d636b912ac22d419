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
    let report = seeded_report(src, tools, tier, seed, elide);
    let (report, enters) = vm::testing::program_oracles::without_frame_counts(&report);
    (format!("{report:#}"), enters)
}

/// The report of one seeded run, with every `Enter`/`Exit` delivered (`elide`
/// false) or not.
fn seeded_report(
    src: &str,
    tools: &str,
    tier: vm::Tier,
    seed: u64,
    elide: bool,
) -> serde_json::Value {
    let prog = vm::testing::program_oracles::compile(src).unwrap_or_else(|e| panic!("{e}"));
    let cfg = vm::RunConfig {
        tools: Some(tools.into()),
        tier,
        sched: vm::SchedKind::Seeded(seed),
        elide_frames: elide,
        ..vm::RunConfig::default()
    };
    vm::run_program(prog, &cfg).expect("run").report
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

/// Capsule calls whose frames the producer records in memory instead of delivering
/// their `Enter` (`Hook::push_lazy_frame`): a synchronization violation found inside
/// a recorded call (the other thread runs `inc` with no ordering), the demotion it
/// brings while the other thread's calls are recorded (the gate closes: their exits
/// are delivered), a release inside a recorded call (`L.tick` is synchronized), a
/// recorded call that ends before the pass sees an event (`pure`, after which the
/// thread's words must be the outer call's again: its access to the array it
/// protects, after the release, needs a new check, whose call's exit the violation
/// found by `W` names), and an encapsulation violation by `Main`.
const LAZY_CALLS: &str = "
capsule class K {
    int x;
    int[] a;
    K() { a = new int[4]; }
    int pure(int v) { return v * 2; }
    int tickedArr() {
        int[] arr = a;
        L.tick();
        int p = pure(1);
        arr[0] = arr[0] + p;
        return arr[0];
    }
    int get() { return x; }
    void inc() { x = x + 1; }
    int twice() { inc(); inc(); return get(); }
    int ticked() { L.tick(); inc(); return get(); }
}
class L {
    static int n;
    static synchronized void tick() { n = n + 1; }
}
class W {
    void run(K k) {
        for (int i = 0; i < 40; i = i + 1) {
            k.inc();
            k.ticked();
            k.tickedArr();
        }
    }
}
class Main {
    static void main() {
        K k = new K();
        K own = new K();
        int s = 0;
        for (int i = 0; i < 20; i = i + 1) {
            s = s + own.twice() + own.ticked();
        }
        Thread t = fork new W().run(k);
        for (int i = 0; i < 40; i = i + 1) {
            s = s + k.tickedArr();
        }
        t.join();
        s = s + own.x;
        print(s + k.get());
    }
}";

#[test]
fn recorded_capsule_calls_decide_as_delivered_ones() {
    // With the frames recorded, every warning and statistic but the `Enter`/`Exit`
    // counts is that of a run that delivers both events of every capsule call, on
    // both tiers; and the two tiers agree exactly.
    let mut failures = Vec::new();
    let mut recorded = 0;
    let mut violations = 0;
    for tools in ["capsule:fasttrack", "escape:capsule:singletrack:fasttrack"] {
        for seed in 1..7 {
            let mut reports = Vec::new();
            for tier in [vm::Tier::Interp, vm::Tier::Jit] {
                let (with, n_with) = report_without_frames(LAZY_CALLS, tools, tier, seed, false);
                let (without, n_without) =
                    report_without_frames(LAZY_CALLS, tools, tier, seed, true);
                recorded += n_with - n_without;
                violations += with.matches("capsule-violation").count();
                if with != without {
                    failures.push(format!(
                        "{tools} {tier:?} seed {seed}:\n{with}\n---\n{without}"
                    ));
                }
                reports.push(without);
            }
            if reports[0] != reports[1] {
                failures.push(format!(
                    "{tools} seed {seed}: interp\n{}\n--- jit\n{}",
                    reports[0], reports[1]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Not vacuous: calls were recorded, and the runs found violations.
    assert!(recorded > 100, "{recorded} calls recorded");
    assert!(violations > 0);
}

/// Capsule calls the chain has taken (their first state access reached it) and whose
/// exit the producer makes without an `Exit` (`analyses::pass::LazyFrames::pop`):
/// `Main`'s `bump` calls, whose exits `capsule` records at its next event, the last
/// one at the `Fork` that hands the capsule over (a missing or late exit would make
/// `User`'s calls a violation), and `viaHelper`, whose first state access runs in a
/// helper of another class, so that its `Exit` cannot be predicted and is delivered.
const TAKEN_CALLS: &str = "
capsule class C {
    int x;
    int bump() { x = x + 1; return x; }
    int viaHelper() { return H.work(); }
    int twice() { return bump() + bump(); }
}
class Obj { int v; }
class H {
    static int work() { Obj o = new Obj(); o.v = 2; return o.v; }
}
class User {
    void run(C c) {
        int s = 0;
        for (int i = 0; i < 30; i = i + 1) { s = s + c.bump() + c.twice(); }
        print(s);
    }
}
class Main {
    static void main() {
        C c = new C();
        int s = 0;
        for (int i = 0; i < 30; i = i + 1) { s = s + c.bump() + c.viaHelper(); }
        Thread t = fork new User().run(c);
        t.join();
        s = s + c.twice();
        print(s);
    }
}";

#[test]
fn taken_capsule_calls_end_without_their_exit_and_decide_alike() {
    // The `Exit` events `capsule` received.
    let exits = |report: &serde_json::Value| -> u64 {
        report["stats"]["passes"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == "capsule"))
            .and_then(|p| p["by_kind"]["exit"].as_u64())
            .unwrap_or(0)
    };
    let mut failures = Vec::new();
    for tools in ["capsule:fasttrack", "escape:capsule:fasttrack"] {
        for seed in 1..5 {
            let mut reports = Vec::new();
            for tier in [vm::Tier::Interp, vm::Tier::Jit] {
                let run = |elide| seeded_report(TAKEN_CALLS, tools, tier, seed, elide);
                let (all, recorded) = (run(false), run(true));
                // Without recording every call delivers its `Exit` (183); with it,
                // only the 30 `viaHelper` calls do: `bump` and `twice` (taken at its
                // first nested `bump`) end in the producer.
                let (n_all, n_recorded) = (exits(&all), exits(&recorded));
                if n_all < 150 || n_recorded > 40 {
                    failures.push(format!(
                        "{tools} {tier:?} seed {seed}: {n_all} exits delivered, {n_recorded} with recording"
                    ));
                }
                let (a, _) = vm::testing::program_oracles::without_frame_counts(&all);
                let (b, _) = vm::testing::program_oracles::without_frame_counts(&recorded);
                if a != b || a.to_string().contains("capsule-violation") {
                    failures.push(format!("{tools} {tier:?} seed {seed}:\n{a:#}\n---\n{b:#}"));
                }
                reports.push(b);
            }
            if reports[0] != reports[1] {
                failures.push(format!("{tools} seed {seed}: the tiers differ"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
