//! The `capvm` binary on unwritable outputs (`/dev/full`), on traces with unusual
//! names, and on usage errors: a documented exit code and a clear message, never a
//! panic (101) and never 0 when an output was lost.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

const CAPVM: &str = env!("CARGO_BIN_EXE_capvm");
const EXIT_OK: i32 = 0;
const EXIT_USAGE: i32 = 64;
const EXIT_WARNINGS: i32 = 66;
const EXIT_OUTPUT: i32 = 74;

const RACY: &str = "class S { static int n = 0; static void hit() { S.n += 1; } }
class Main { static void main() {
    Thread a = fork S.hit(); Thread b = fork S.hit(); a.join(); b.join(); print(7); } }";
const CLEAN: &str = "class Main { static void main() { print(42); } }";
const BAD: &str = "class Main { static void main() { int x = ; } }";
const CRASH: &str = "class Main { static void main() { int z = 0; print(1 / z); } }";

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("capvm-outputs-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).expect("write test file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn full() -> Stdio {
    Stdio::from(
        File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full"),
    )
}

#[derive(Clone, Copy)]
enum Sink {
    Pipe,
    Full,
}

fn stdio(s: Sink) -> Stdio {
    match s {
        Sink::Pipe => Stdio::piped(),
        Sink::Full => full(),
    }
}

fn capvm(args: &[&str], stdout: Sink, stderr: Sink) -> Output {
    Command::new(CAPVM)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdio(stdout))
        .stderr(stdio(stderr))
        .output()
        .expect("run capvm")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code (not a signal)")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn unwritable_stderr_is_exit_74() {
    let d = TempDir::new();
    let bad = d.file("bad.cj", BAD);
    let crash = d.file("crash.cj", CRASH);
    let racy = d.file("racy.cj", RACY);
    let clean = d.file("clean.cj", CLEAN);
    let trace = d.file("t.std", "T0|fork(T1)|1\nT1|w(V1)|2\nT0|w(V1)|3\n");
    let cases: Vec<Vec<&str>> = vec![
        // diagnostics of a compile error
        vec!["check", s(&bad)],
        // a runtime error
        vec!["run", "--tier", "interp", s(&crash)],
        // race reports
        vec![
            "run",
            "--tier",
            "interp",
            "--sched",
            "seeded:1",
            "--tools",
            "fasttrack",
            s(&racy),
        ],
        // statistics
        vec![
            "run",
            "--tier",
            "interp",
            "--tools",
            "count",
            "--stats",
            s(&clean),
        ],
        // offline warnings
        vec!["analyze", s(&trace)],
        vec!["analyze", "--tools", "count", "--stats", s(&trace)],
    ];
    for args in cases {
        let o = capvm(&args, Sink::Pipe, Sink::Full);
        assert_eq!(code(&o), EXIT_OUTPUT, "capvm {args:?} 2>/dev/full");
    }
}

#[test]
fn unwritable_stdout_is_exit_74_with_a_message() {
    let d = TempDir::new();
    let clean = d.file("clean.cj", CLEAN);
    for tier in ["interp", "jit"] {
        let o = capvm(&["run", "--tier", tier, s(&clean)], Sink::Full, Sink::Pipe);
        assert_eq!(code(&o), EXIT_OUTPUT, "{tier}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(err.contains("error:") && err.contains("stdout"), "{err}");
    }
}

#[test]
fn unwritable_record_and_report_files_are_exit_74() {
    let d = TempDir::new();
    let clean = d.file("clean.cj", CLEAN);
    let trace = d.file("t.std", "T0|w(V1)|1\n");
    for args in [
        vec![
            "run",
            "--tier",
            "interp",
            "--record",
            "/dev/full",
            s(&clean),
        ],
        vec![
            "run",
            "--tier",
            "interp",
            "--report",
            "/dev/full",
            s(&clean),
        ],
        vec!["analyze", "--report", "/dev/full", s(&trace)],
    ] {
        let o = capvm(&args, Sink::Pipe, Sink::Pipe);
        let err = text(&o.stderr);
        assert_eq!(code(&o), EXIT_OUTPUT, "capvm {args:?}: {err}");
        assert!(err.contains("error:") && err.contains("/dev/full"), "{err}");
    }
    // The program's own output still arrived.
    let o = capvm(
        &[
            "run",
            "--tier",
            "interp",
            "--record",
            "/dev/full",
            s(&clean),
        ],
        Sink::Pipe,
        Sink::Pipe,
    );
    assert_eq!(text(&o.stdout), "42\n");
}

/// Names shaped like the recorder's array names, but malformed, are printed as they
/// are (they once panicked the report).
#[test]
fn malformed_recorded_names_are_reported_as_written() {
    let d = TempDir::new();
    for name in [
        "o1.int[]",
        "o1.int[][]",
        "o1.[]",
        "o1.int[]]",
        "o1.int[\u{e9}]",
        "o1.\u{e9}]",
        "o1.int[][x]",
    ] {
        let t = d.file(
            "p.std",
            &format!("# capvm-record v1\nT0|fork(T1)|1\nT1|w({name})|2\nT0|w({name})|3\n"),
        );
        for tools in ["fasttrack", "djit", "hb", "goldilocks", "eraser"] {
            let report = d.0.join("r.json");
            let o = capvm(
                &["analyze", "--tools", tools, "--report", s(&report), s(&t)],
                Sink::Pipe,
                Sink::Pipe,
            );
            let err = text(&o.stderr);
            assert_eq!(code(&o), EXIT_WARNINGS, "{name} {tools}: {err}");
            let rest = name.strip_prefix("o1.").expect("o1. prefix");
            assert!(err.contains(rest), "{name} {tools}: {err}");
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&report).expect("report"))
                    .expect("JSON report");
            assert_eq!(json["warnings"][0]["location"], rest, "{name} {tools}");
        }
    }
}

/// `T<n>` keeps its name; other thread names are reported as written.
#[test]
fn thread_names_are_kept_in_reports() {
    let d = TempDir::new();
    let t = d.file("t.std", "foo|w(V1)|1\nT0|w(V2)|2\nT1|w(V1)|3\n");
    let report = d.0.join("r.json");
    let o = capvm(
        &["analyze", "--report", s(&report), s(&t)],
        Sink::Pipe,
        Sink::Pipe,
    );
    let err = text(&o.stderr);
    assert_eq!(code(&o), EXIT_WARNINGS, "{err}");
    assert!(
        err.contains("by thread foo") && err.contains("by thread T1"),
        "{err}"
    );
    assert!(
        !err.contains("T2") && !err.contains("by thread T0"),
        "{err}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    let threads: Vec<&serde_json::Value> = json["warnings"][0]["accesses"]
        .as_array()
        .expect("accesses")
        .iter()
        .map(|a| &a["thread_name"])
        .collect();
    assert_eq!(threads, ["foo", "T1"], "{json}");
    assert_eq!(json["warnings"][0]["accesses"][1]["thread"], 1, "{json}");
}

#[test]
fn infer_capsules_max_rounds_zero_is_a_usage_error() {
    let d = TempDir::new();
    let clean = d.file("clean.cj", CLEAN);
    let o = capvm(
        &["infer-capsules", "--max-rounds", "0", s(&clean)],
        Sink::Pipe,
        Sink::Pipe,
    );
    assert_eq!(code(&o), EXIT_USAGE, "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--max-rounds"));
    let o = capvm(
        &["infer-capsules", "--max-rounds", "1", s(&clean)],
        Sink::Pipe,
        Sink::Pipe,
    );
    assert_eq!(code(&o), EXIT_OK, "{}", text(&o.stderr));
}

/// A random two-thread trace has many racy events on few locations: `analyze` gives
/// one warning per analysis and location, counting the racy events (DJIT+ and `hb`
/// flag exactly the racy events, so their counts agree).
#[test]
fn analyze_reports_one_warning_per_racy_location() {
    const VARS: u64 = 16;
    let d = TempDir::new();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut src = String::from("T0|fork(T1)|1\n");
    for i in 2..=20_000 {
        let (t, op, v) = (next() % 2, ["r", "w"][(next() % 2) as usize], next() % VARS);
        src.push_str(&format!("T{t}|{op}(V{v})|{i}\n"));
    }
    let t = d.file("random.std", &src);
    let report = d.0.join("r.json");
    let o = capvm(
        &[
            "analyze",
            "--tools",
            "fasttrack:djit:goldilocks:eraser:hb",
            "--report",
            s(&report),
            s(&t),
        ],
        Sink::Pipe,
        Sink::Pipe,
    );
    assert_eq!(code(&o), EXIT_WARNINGS, "{}", text(&o.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    let warnings = json["warnings"].as_array().expect("warnings");
    let mut total = std::collections::BTreeMap::<&str, u64>::new();
    let mut seen = std::collections::BTreeSet::new();
    for w in warnings {
        let (analysis, loc) = (
            w["analysis"].as_str().expect("analysis"),
            w["location"].as_str().expect("location"),
        );
        assert!(
            seen.insert((analysis, loc)),
            "two warnings for {analysis} {loc}"
        );
        *total.entry(analysis).or_default() += w["count"].as_u64().expect("count");
    }
    for tool in ["fasttrack", "djit", "goldilocks", "eraser", "hb"] {
        let n = seen.iter().filter(|(a, _)| *a == tool).count() as u64;
        assert!(0 < n && n <= VARS, "{tool}: {n} warnings");
    }
    assert!(total["hb"] > 1000, "{total:?}");
    assert_eq!(total["djit"], total["hb"], "racy events");
    assert!(
        text(&o.stderr).contains("times on this location"),
        "{}",
        text(&o.stderr)
    );
}

/// A run that stops on a runtime error still leaves the trace it recorded up to the
/// error, on both tiers, although the CLI never drops the runtime (so never the
/// trace's writer): the flush that collects the run's output errors writes it.
#[test]
fn a_failed_run_keeps_its_recorded_trace() {
    let d = TempDir::new();
    let src = "class Main { static int n = 0;
        static void main() { Main.n = 7; print(Main.n); int z = 0; print(1 / z); } }";
    let crash = d.file("crash_rec.cj", src);
    for tier in ["interp", "jit"] {
        let trace = d.0.join(format!("crash_{tier}.std"));
        let o = capvm(
            &["run", "--tier", tier, "--record", s(&trace), s(&crash)],
            Sink::Pipe,
            Sink::Pipe,
        );
        assert_eq!(code(&o), 70, "{tier}: {}", text(&o.stderr));
        assert_eq!(text(&o.stdout), "7\n", "{tier}");
        let t = std::fs::read_to_string(&trace).expect("the trace exists");
        assert!(
            t.lines().any(|l| l.contains("|w(")) && t.lines().any(|l| l.contains("|r(")),
            "{tier}: the write and the read before the error are in the trace:\n{t}"
        );
    }
}

/// `capvm run` takes the passes' statistics (which walk their shadow state) only
/// when `--stats` or `--report` asks for them, on both tiers, and then the same.
#[test]
fn statistics_only_when_asked_for() {
    let dir = TempDir::new();
    let src = dir.file("racy.cj", RACY);
    for tier in ["interp", "jit"] {
        let base = [
            "run",
            "--tools",
            "fasttrack",
            "--tier",
            tier,
            "--sched",
            "seeded:3",
        ];
        let plain = capvm(&[&base[..], &[s(&src)]].concat(), Sink::Pipe, Sink::Pipe);
        assert_eq!(code(&plain), EXIT_WARNINGS, "{tier}");
        assert!(!text(&plain.stdout).contains("pass fasttrack"), "{tier}");
        assert!(!text(&plain.stderr).contains("pass fasttrack"), "{tier}");
        let stats = capvm(
            &[&base[..], &["--stats", s(&src)]].concat(),
            Sink::Pipe,
            Sink::Pipe,
        );
        let all = text(&stats.stdout) + &text(&stats.stderr);
        assert!(
            all.contains("pass fasttrack") && all.contains("locations"),
            "{tier}: {all}"
        );
        let report = dir.0.join(format!("r-{tier}.json"));
        let r = capvm(
            &[&base[..], &["--report", s(&report), s(&src)]].concat(),
            Sink::Pipe,
            Sink::Pipe,
        );
        assert_eq!(code(&r), EXIT_WARNINGS, "{tier}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
        let ft = &json["stats"]["passes"][0];
        assert_eq!(ft["name"], "fasttrack", "{json}");
        assert!(
            ft["details"]["locations"].as_u64().is_some_and(|n| n > 0),
            "{json}"
        );
    }
}
