//! Data-driven tests over `corpus/` (formats: `corpus/README.md`). Each test runs the
//! `capvm` binary on every file of one corpus directory, several files in parallel, and
//! fails with the list of every file (and run) that went wrong.
//!
//! - `examples`: stdout equals `NAME.out` and the exit code is 0, under `--sched os` and
//!   several `--sched seeded:N`, with `--tools none` and once with `--tools count`; seeded
//!   runs are repeatable (same stdout, same `--stats`, same `--record` trace); and once the
//!   JIT tier exists, it gives the same output and the same trace as the interpreter.
//! - `errors`: the exit code (65 or 70) and every `error:` fragment on stderr, with the
//!   extra flags of an `args:` line, on both tiers; no panic.
//! - `bugs`: for every `expect CHAIN: VERDICT` line, the set of (kind, location) pairs of
//!   the `--report` JSON under several seeds and under `--sched os` (and one seed on the
//!   JIT tier), and offline: `capvm analyze` of a recorded trace, for the chains without
//!   the filters `escape` and `capsule` (which need the live heap) and without
//!   `bigfoot` (which `analyze` refuses: exit 64).
//!

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const CAPVM: &str = env!("CARGO_BIN_EXE_capvm");
/// A run that takes longer than this is a hang (the slowest corpus program takes a few
/// seconds in a debug build).
const TIMEOUT: Duration = Duration::from_secs(180);
/// Seeds for the seeded scheduler.
const SEEDS: [u64; 4] = [1, 2, 3, 42];
/// Seeds for the `bugs` verdicts (each chain runs once per seed, plus once under `os`).
const BUG_SEEDS: [u64; 3] = [1, 2, 3];

const EXIT_OK: i32 = 0;
const EXIT_WARNINGS: i32 = 66;

fn corpus_dir(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("corpus")
        .join(sub)
}

/// The `.cj` files of a corpus directory, sorted.
fn cj_files(sub: &str) -> Vec<PathBuf> {
    let dir = corpus_dir(sub);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "cj"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no .cj files in {}", dir.display());
    v
}

fn name(p: &Path) -> String {
    let dir = p
        .parent()
        .and_then(|d| d.file_name())
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        "{dir}/{}",
        p.file_name().unwrap_or_default().to_string_lossy()
    )
}

// ---- running capvm -----------------------------------------------------------------------

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn scratch_path(tag: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("capvm-corpus-{}-{n}-{tag}", std::process::id()))
}

/// Run `capvm ARGS` in the corpus directory `dir` (so file positions in messages read
/// `NAME.cj:LINE:COL`), with a timeout; stdout and stderr go to scratch files (no pipe can
/// fill up and block the child).
fn capvm(dir: &Path, args: &[&str]) -> Output {
    let out_path = scratch_path("stdout");
    let err_path = scratch_path("stderr");
    let out_file = std::fs::File::create(&out_path).expect("create scratch file");
    let err_file = std::fs::File::create(&err_path).expect("create scratch file");
    let mut child = Command::new(CAPVM)
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out_file)
        .stderr(err_file)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {CAPVM}: {e}"));
    let start = Instant::now();
    let status = loop {
        match child.try_wait().expect("wait for capvm") {
            Some(s) => break Some(s),
            None if start.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let mut stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    let code = match status {
        Some(s) => s.code().unwrap_or(-1),
        None => {
            stderr.push_str(&format!("\n[corpus test: killed after {TIMEOUT:?}]\n"));
            -2
        }
    };
    Output {
        code,
        stdout,
        stderr,
    }
}

fn describe(args: &[&str], o: &Output) -> String {
    let tail: String = {
        let lines: Vec<&str> = o.stderr.lines().collect();
        let from = lines.len().saturating_sub(25);
        lines[from..].join("\n")
    };
    format!(
        "`capvm {}` exited {}; stderr (last lines):\n{}",
        args.join(" "),
        o.code,
        tail
    )
}

fn no_panic(args: &[&str], o: &Output) -> Result<(), String> {
    if o.stderr.contains("panicked at") || o.code == 101 {
        return Err(format!("capvm panicked: {}", describe(args, o)));
    }
    if o.code == -2 {
        return Err(format!("capvm hung: {}", describe(args, o)));
    }
    Ok(())
}

/// The directory and the file name of a corpus file: capvm runs in the directory.
fn dir_and_file(path: &Path) -> (PathBuf, String) {
    let dir = path
        .parent()
        .expect("corpus file has a directory")
        .to_path_buf();
    let file = path
        .file_name()
        .expect("corpus file has a name")
        .to_string_lossy()
        .into_owned();
    (dir, file)
}

/// Run `job` on every file, a few at a time; fail with every error, each naming its file.
fn for_each_parallel(files: &[PathBuf], job: impl Fn(&Path) -> Vec<String> + Sync) {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 4);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(f) = files.get(i) else { break };
                    for e in job(f) {
                        failures.lock().unwrap().push(format!("{}: {e}", name(f)));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} corpus failure(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// ---- headers ----------------------------------------------------------------------------

/// The `//! key: value` lines at the top of a corpus file.
fn header(text: &str) -> Vec<(String, String)> {
    text.lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| {
            let body = l.trim_start_matches("//!").trim();
            match body.split_once(':') {
                // `expect CHAIN: VERDICT`: the chain itself contains `:`, the verdict does not.
                _ if body.starts_with("expect ") => match body.rsplit_once(": ") {
                    Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
                    None => (body.to_string(), String::new()),
                },
                Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
                None => (body.to_string(), String::new()),
            }
        })
        .collect()
}

// ---- examples -----------------------------------------------------------------------------

fn run_args<'a>(file: &'a str, sched: &'a str, tools: &'a str, tier: &'a str) -> Vec<&'a str> {
    vec![
        "run", file, "--tier", tier, "--sched", sched, "--tools", tools,
    ]
}

fn check_example(path: &Path) -> Vec<String> {
    let mut errs = Vec::new();
    let text = std::fs::read_to_string(path).expect("read example");
    let mut heavy = false;
    for (k, _) in header(&text) {
        match k.as_str() {
            "heavy" => heavy = true,
            other => errs.push(format!("unknown header key `{other}`")),
        }
    }
    let expected = match std::fs::read_to_string(path.with_extension("out")) {
        Ok(s) => s,
        Err(e) => {
            errs.push(format!(
                "missing expected output {}: {e}",
                name(&path.with_extension("out"))
            ));
            return errs;
        }
    };
    let (dir, file) = dir_and_file(path);
    let seeds: Vec<String> = if heavy {
        vec!["seeded:1".into()]
    } else {
        SEEDS.iter().map(|s| format!("seeded:{s}")).collect()
    };
    let mut runs: Vec<(String, &str)> = vec![("os".to_string(), "none")];
    runs.extend(seeds.iter().map(|s| (s.clone(), "none")));
    runs.push(("seeded:7".to_string(), "count"));
    if !heavy {
        runs.push(("os".to_string(), "count"));
    }
    for (sched, tools) in &runs {
        let args = run_args(&file, sched, tools, "interp");
        let o = capvm(&dir, &args);
        if let Err(e) = no_panic(&args, &o) {
            errs.push(e);
            continue;
        }
        if o.code != EXIT_OK {
            errs.push(describe(&args, &o));
        } else if o.stdout != expected {
            errs.push(format!(
                "`capvm {}`: stdout differs from the .out file\n--- expected\n{expected}--- got\n{}",
                args.join(" "),
                o.stdout
            ));
        }
    }

    // Seeded repeatability: same seed ⇒ same stdout, same statistics, same trace.
    let mut args = run_args(&file, "seeded:5", "count", "interp");
    args.push("--stats");
    let a = capvm(&dir, &args);
    let b = capvm(&dir, &args);
    if a.code != EXIT_OK || b.code != EXIT_OK {
        errs.push(describe(&args, if a.code != EXIT_OK { &a } else { &b }));
    } else if a.stdout != b.stdout || a.stderr != b.stderr {
        errs.push(format!(
            "`capvm {}` is not repeatable:\n--- run 1 stderr\n{}--- run 2 stderr\n{}",
            args.join(" "),
            a.stderr,
            b.stderr
        ));
    }
    let t1 = scratch_path("r1.std");
    let t2 = scratch_path("r2.std");
    let (s1, s2) = (t1.display().to_string(), t2.display().to_string());
    let mut traces = Vec::new();
    for t in [&s1, &s2] {
        let mut args = run_args(&file, "seeded:9", "none", "interp");
        args.extend(["--record", t.as_str()]);
        let o = capvm(&dir, &args);
        if o.code != EXIT_OK {
            errs.push(describe(&args, &o));
        }
        traces.push(std::fs::read(t).unwrap_or_default());
    }
    if traces[0] != traces[1] {
        errs.push("two `--sched seeded:9 --record` runs wrote different traces".into());
    } else if traces[0].is_empty() {
        errs.push("`--record` wrote an empty trace".into());
    }
    let _ = std::fs::remove_file(&t1);
    let _ = std::fs::remove_file(&t2);

    // The JIT tier: same output under os and one seed, and the same trace as the
    // interpreter under the same seed (`docs/architecture.md`, property 5).
    let mut traces = Vec::new();
    for tier in ["interp", "jit"] {
        let t = scratch_path(&format!("{tier}.std"));
        let ts = t.display().to_string();
        let mut args = run_args(&file, "seeded:3", "none", tier);
        args.extend(["--record", ts.as_str()]);
        let o = capvm(&dir, &args);
        if o.code != EXIT_OK {
            errs.push(describe(&args, &o));
        }
        traces.push(std::fs::read_to_string(&t).unwrap_or_default());
        let _ = std::fs::remove_file(&t);
    }
    if traces[0] != traces[1] {
        errs.push(format!(
            "`--sched seeded:3 --record`: the JIT's trace differs from the interpreter's{}",
            first_difference(&traces[0], &traces[1])
        ));
    }
    for sched in ["os", "seeded:1"] {
        let args = run_args(&file, sched, "none", "jit");
        let o = capvm(&dir, &args);
        if o.code != EXIT_OK || o.stdout != expected {
            errs.push(format!(
                "JIT tier: {}\n--- got stdout\n{}",
                describe(&args, &o),
                o.stdout
            ));
        }
    }
    errs
}

/// `: line N: interp `…`, jit `…`` for the first differing line of two texts.
fn first_difference(a: &str, b: &str) -> String {
    let (mut la, mut lb) = (a.lines(), b.lines());
    let mut n = 0;
    loop {
        n += 1;
        match (la.next(), lb.next()) {
            (None, None) => return String::new(),
            (x, y) if x == y => continue,
            (x, y) => {
                return format!(
                    ": line {n}: interp `{}`, jit `{}`",
                    x.unwrap_or("<end>"),
                    y.unwrap_or("<end>")
                );
            }
        }
    }
}

#[test]
fn examples() {
    let files = cj_files("examples");
    assert!(
        files.len() >= 15,
        "corpus/examples needs at least 15 programs"
    );
    for_each_parallel(&files, check_example);
}

// ---- errors -------------------------------------------------------------------------------

fn check_error(path: &Path) -> Vec<String> {
    let mut errs = Vec::new();
    let text = std::fs::read_to_string(path).expect("read error program");
    let mut exit = None;
    let mut fragments = Vec::new();
    let mut extra = String::new();
    for (k, v) in header(&text) {
        match k.as_str() {
            "exit" => exit = v.parse::<i32>().ok(),
            "error" => fragments.push(v),
            "args" => extra = v,
            other => errs.push(format!("unknown header key `{other}`")),
        }
    }
    let Some(exit) = exit.filter(|c| *c == 65 || *c == 70) else {
        errs.push("header needs `//! exit: 65` or `//! exit: 70`".into());
        return errs;
    };
    if fragments.is_empty() {
        errs.push("header needs at least one `//! error:` fragment".into());
    }
    let (dir, file) = dir_and_file(path);
    let mut runs = vec![
        run_args(&file, "seeded:1", "none", "interp"),
        run_args(&file, "os", "none", "interp"),
    ];
    if exit == 70 {
        runs.push(run_args(&file, "seeded:2", "count", "interp"));
        runs.push(run_args(&file, "seeded:1", "none", "jit"));
    }
    for r in &mut runs {
        r.extend(extra.split_whitespace());
    }
    if exit == 65 {
        runs.push(vec!["check", &file]);
    }
    for args in &runs {
        let o = capvm(&dir, args);
        if let Err(e) = no_panic(args, &o) {
            errs.push(e);
            continue;
        }
        if o.code != exit {
            errs.push(format!("expected exit {exit}: {}", describe(args, &o)));
            continue;
        }
        for f in &fragments {
            if !o.stderr.contains(f.as_str()) {
                errs.push(format!(
                    "`capvm {}`: stderr lacks `{f}`; stderr:\n{}",
                    args.join(" "),
                    o.stderr
                ));
            }
        }
    }
    if exit == 70 {
        // A program that fails at run time compiles.
        let args = ["check", file.as_str()];
        let o = capvm(&dir, &args);
        if o.code != EXIT_OK {
            errs.push(format!("expected `check` to pass: {}", describe(&args, &o)));
        }
    }
    errs
}

#[test]
fn errors() {
    let files = cj_files("errors");
    for_each_parallel(&files, check_error);
}

// ---- bugs ---------------------------------------------------------------------------------

type Verdict = BTreeSet<(String, String)>;

/// `none` or `kind location, kind location, …`.
fn parse_verdict(v: &str) -> Result<Verdict, String> {
    if v == "none" {
        return Ok(Verdict::new());
    }
    v.split(',')
        .map(|pair| {
            let mut it = pair.split_whitespace();
            match (it.next(), it.next(), it.next()) {
                (Some(k), Some(l), None) => Ok((k.to_string(), l.to_string())),
                _ => Err(format!(
                    "bad verdict `{pair}` (want `kind location` or `none`)"
                )),
            }
        })
        .collect()
}

/// The (kind, location) pairs of a `--report` document. A capsule violation is located
/// at its class (the `class` field, else the part of `location` before the first `.`); a
/// warning without a location (e.g. an atomicity cycle) is located at `-`.
fn report_verdict(json: &str) -> Result<Verdict, String> {
    let doc: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("report is not JSON: {e}"))?;
    let ws = doc
        .get("warnings")
        .and_then(|w| w.as_array())
        .ok_or("report has no `warnings` array")?;
    let mut v = Verdict::new();
    for w in ws {
        let kind = w
            .get("kind")
            .and_then(|k| k.as_str())
            .ok_or("warning without `kind`")?
            .to_string();
        let loc = w.get("location").and_then(|l| l.as_str());
        let loc = if kind == "capsule-violation" {
            w.get("class")
                .and_then(|c| c.as_str())
                .or_else(|| loc.map(|l| l.split('.').next().unwrap_or(l)))
                .unwrap_or("-")
                .to_string()
        } else {
            loc.unwrap_or("-").to_string()
        };
        v.insert((kind, loc));
    }
    Ok(v)
}

fn show(v: &Verdict) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.iter()
            .map(|(k, l)| format!("{k} {l}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn check_bug(path: &Path) -> Vec<String> {
    let mut errs = Vec::new();
    let text = std::fs::read_to_string(path).expect("read bug program");
    let mut expects = Vec::new();
    for (k, v) in header(&text) {
        match k.strip_prefix("expect ") {
            Some(chain) => match parse_verdict(&v) {
                Ok(verdict) => expects.push((chain.trim().to_string(), verdict)),
                Err(e) => errs.push(e),
            },
            None => errs.push(format!("unknown header key `{k}`")),
        }
    }
    if expects.is_empty() {
        errs.push("header has no `//! expect CHAIN: VERDICT` line".into());
    }
    let (dir, file) = dir_and_file(path);
    // Offline analysis (`capvm analyze` of a `--record`ed trace) of the chains whose
    // passes need nothing but the trace: the filters (`escape`, `capsule`) need the heap.
    let trace = scratch_path("bug.std");
    let trace_s = trace.display().to_string();
    let offline = {
        let args = [
            "run", &file, "--tier", "interp", "--sched", "seeded:1", "--tools", "none", "--record",
            &trace_s,
        ];
        let o = capvm(&dir, &args);
        if o.code == EXIT_OK {
            true
        } else {
            errs.push(format!(
                "recording the trace failed: {}",
                describe(&args, &o)
            ));
            false
        }
    };
    for (chain, expected) in &expects {
        let mut runs: Vec<(String, &str)> = BUG_SEEDS
            .iter()
            .map(|s| (format!("seeded:{s}"), "interp"))
            .collect();
        runs.push(("os".into(), "interp"));
        runs.push(("seeded:1".into(), "jit"));
        for (sched, tier) in &runs {
            let report = scratch_path("report.json");
            let rs = report.display().to_string();
            let mut args = run_args(&file, sched, chain, tier);
            args.extend(["--report", rs.as_str()]);
            let o = capvm(&dir, &args);
            let json = std::fs::read_to_string(&report).unwrap_or_default();
            let _ = std::fs::remove_file(&report);
            check_verdict(&args, &o, &json, expected, &mut errs);
        }
        // `bigfoot` checks the checks placed in the program; a trace has none, and
        // `capvm analyze` refuses it (exit 64).
        if offline && chain.split(':').any(|p| p == "bigfoot") {
            let args = ["analyze", trace_s.as_str(), "--tools", chain.as_str()];
            let o = capvm(&dir, &args);
            if o.code != 64 {
                errs.push(format!("expected exit 64: {}", describe(&args, &o)));
            }
            continue;
        }
        if offline && !chain.split(':').any(|p| p == "escape" || p == "capsule") {
            let report = scratch_path("offline.json");
            let rs = report.display().to_string();
            let args = [
                "analyze",
                trace_s.as_str(),
                "--tools",
                chain.as_str(),
                "--report",
                rs.as_str(),
            ];
            let o = capvm(&dir, &args);
            let json = std::fs::read_to_string(&report).unwrap_or_default();
            let _ = std::fs::remove_file(&report);
            check_verdict(&args, &o, &json, expected, &mut errs);
        }
    }
    let _ = std::fs::remove_file(&trace);
    errs
}

/// Compare the exit code and the report of one run with the expected verdict.
fn check_verdict(
    args: &[&str],
    o: &Output,
    json: &str,
    expected: &Verdict,
    errs: &mut Vec<String>,
) {
    if let Err(e) = no_panic(args, o) {
        errs.push(e);
        return;
    }
    let want_code = if expected.is_empty() {
        EXIT_OK
    } else {
        EXIT_WARNINGS
    };
    if o.code != want_code {
        errs.push(format!(
            "expected exit {want_code} (verdict `{}`): {}",
            show(expected),
            describe(args, o)
        ));
        return;
    }
    match report_verdict(json) {
        Ok(got) if &got == expected => {}
        Ok(got) => errs.push(format!(
            "`capvm {}`: expected `{}`, got `{}`",
            args.join(" "),
            show(expected),
            show(&got)
        )),
        Err(e) => errs.push(format!("`capvm {}`: {e}", args.join(" "))),
    }
}

#[test]
fn bugs() {
    let files = cj_files("bugs");
    assert!(files.len() >= 12, "corpus/bugs needs at least 12 programs");
    for_each_parallel(&files, check_bug);
}

#[test]
fn header_parsing() {
    let h = header(
        "//! exit: 70\n//! error: a: b\n//! expect escape:fasttrack: race A.b, race int[]\n// x\n//! not: header\n",
    );
    assert_eq!(
        h,
        vec![
            ("exit".to_string(), "70".to_string()),
            ("error".to_string(), "a: b".to_string()),
            (
                "expect escape:fasttrack".to_string(),
                "race A.b, race int[]".to_string()
            ),
        ]
    );
    let v = parse_verdict("race A.b, lockset int[]").unwrap();
    assert_eq!(v.len(), 2);
    assert!(parse_verdict("race").is_err());
    assert!(parse_verdict("none").unwrap().is_empty());
    let r = report_verdict(
        r#"{"warnings":[{"kind":"race","location":"int[]","index":3},
            {"kind":"capsule-violation","location":"Tally.n"},
            {"kind":"atomicity"}],"stats":{}}"#,
    )
    .unwrap();
    assert_eq!(show(&r), "atomicity -, capsule-violation Tally, race int[]");
}
