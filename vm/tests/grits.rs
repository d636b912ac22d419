//! `capvm infer-disciplines` and `--tools grits --spec` end to end: the thesis
//! programs of `corpus/grits/` (Wood, *Hominy Grits*, Ch. 5 and Fig. 2.1) give their
//! expected disciplines (`NAME.grits`: each listed location's inferred line must be
//! one of its lines there) on both tiers under several seeds, each run satisfies the
//! spec inferred from it, an edited spec is left with a `discipline` warning, and bad
//! specs and command lines get their exit codes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn capvm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capvm"))
        .args(args)
        .output()
        .expect("capvm runs")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capvm-grits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// `LOCATION → [DISCIPLINE…]` of a spec text.
fn lines(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (loc, d) = l.split_once(": ").expect("LOCATION: DISCIPLINE");
        m.entry(loc.to_string()).or_default().push(d.to_string());
    }
    m
}

fn infer(file: &Path, seed: u64, tier: &str) -> String {
    let sched = format!("seeded:{seed}");
    let out = capvm(&[
        "infer-disciplines",
        file.to_str().unwrap(),
        "--sched",
        &sched,
        "--tier",
        tier,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn check(file: &Path, spec: &Path, seed: u64, tier: &str, tools: &str) -> Output {
    let sched = format!("seeded:{seed}");
    capvm(&[
        "run",
        file.to_str().unwrap(),
        "--tools",
        tools,
        "--spec",
        spec.to_str().unwrap(),
        "--sched",
        &sched,
        "--tier",
        tier,
    ])
}

#[test]
fn thesis_programs_give_their_expected_specs_and_satisfy_them() {
    let dir = root().join("corpus/grits");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "cj") {
            continue;
        }
        let expected_path = path.with_extension("grits");
        let expected = lines(&std::fs::read_to_string(&expected_path).unwrap());
        assert!(!expected.is_empty(), "{}", expected_path.display());
        n += 1;
        for tier in ["interp", "jit"] {
            for seed in [1, 2, 3, 7] {
                let text = infer(&path, seed, tier);
                let got = lines(&text);
                for (loc, alts) in &expected {
                    let g = got.get(loc).unwrap_or_else(|| {
                        panic!(
                            "{}: no line for {loc} (seed {seed}, {tier}):\n{text}",
                            path.display()
                        )
                    });
                    assert_eq!(g.len(), 1, "{loc}: {g:?}");
                    assert!(
                        alts.contains(&g[0]),
                        "{} seed {seed} {tier}: {loc}: {}\nexpected one of {alts:?}",
                        path.display(),
                        g[0]
                    );
                }
                // Property 8: the run satisfies the spec inferred from it (same seed),
                // with `grits` alone and with FastTrack after it; and the expected spec.
                let spec = tmp(&format!(
                    "{}-{seed}-{tier}.grits",
                    path.file_stem().unwrap().to_str().unwrap()
                ));
                std::fs::write(&spec, &text).unwrap();
                let racy = expected.values().any(|v| v.iter().any(|d| d == "race"));
                let out = check(&path, &spec, seed, tier, "grits");
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let out = check(&path, &expected_path, seed, tier, "grits:fasttrack");
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(!stderr.contains("discipline"), "{stderr}");
                assert_eq!(
                    out.status.code(),
                    Some(if racy { 66 } else { 0 }),
                    "{stderr}"
                );
            }
        }
    }
    assert_eq!(n, 5, "five thesis programs");
}

#[test]
fn an_edited_spec_is_left_with_a_discipline_warning() {
    let prog = root().join("corpus/grits/forklock.cj");
    // The workers hand `field` over through `ForkLock.lock`; claim a lock it never uses.
    let spec = tmp("forklock-edited.grits");
    std::fs::write(
        &spec,
        "ForkLock.field: thread-local T0; fork {T0}; guarded-by {Other.lock}\n",
    )
    .unwrap();
    let report = tmp("forklock-edited.json");
    let out = capvm(&[
        "run",
        prog.to_str().unwrap(),
        "--tools",
        "grits",
        "--spec",
        spec.to_str().unwrap(),
        "--sched",
        "seeded:3",
        "--report",
        report.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(66), "{stderr}");
    assert!(
        stderr.contains("synchronization discipline deviation on ForkLock.field"),
        "{stderr}"
    );
    assert!(
        stderr.contains("ordered only by lock ForkLock.lock"),
        "{stderr}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let ws = json["warnings"].as_array().unwrap();
    assert_eq!(
        ws.len(),
        1,
        "one warning: the first access that leaves the spec"
    );
    assert_eq!(ws[0]["kind"], "discipline");
    assert_eq!(ws[0]["analysis"], "grits");
    assert_eq!(ws[0]["location"], "ForkLock.field");
    assert_eq!(ws[0]["accesses"].as_array().unwrap().len(), 2);
    assert!(
        ws[0]["accesses"][1]["stack"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
}

#[test]
fn traces_infer_and_check_offline() {
    let trace = tmp("handoff.std");
    std::fs::write(
        &trace,
        "T0|w(x)\nT0|fork(T1)\nT1|acq(m)\nT1|r(x)\nT1|w(x)\nT1|rel(m)\nT0|acq(m)\nT0|r(x)\nT0|rel(m)\n",
    )
    .unwrap();
    let out = capvm(&["infer-disciplines", trace.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "x: thread-local T0; fork {T0}; guarded-by {m}\n"
    );
    let spec = tmp("handoff.grits");
    std::fs::write(&spec, "x: thread-local T0; fork {T0}; vol {v}\n").unwrap();
    let out = capvm(&[
        "analyze",
        trace.to_str().unwrap(),
        "--tools",
        "grits",
        "--spec",
        spec.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(66), "{stderr}");
    assert!(stderr.contains("[event 8]"), "{stderr}");
}

#[test]
fn bad_specs_and_command_lines() {
    let prog = root().join("corpus/grits/readshared.cj");
    let p = prog.to_str().unwrap();
    let spec = tmp("bad.grits");
    std::fs::write(
        &spec,
        "# ok\nReadShared.constant: thread-local T0; guarded {m}\n",
    )
    .unwrap();
    let out = capvm(&[
        "run",
        p,
        "--tools",
        "grits",
        "--spec",
        spec.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(65), "{stderr}");
    assert!(
        stderr.contains("bad.grits:2:39: unknown discipline `guarded`"),
        "{stderr}"
    );
    // Missing file: 65 too, with the path.
    let out = capvm(&[
        "run",
        p,
        "--tools",
        "grits",
        "--spec",
        "/nonexistent/x.grits",
    ]);
    assert_eq!(out.status.code(), Some(65));
    // --spec without grits in the chain.
    std::fs::write(&spec, "ReadShared.constant: read-shared\n").unwrap();
    let out = capvm(&[
        "run",
        p,
        "--tools",
        "fasttrack",
        "--spec",
        spec.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(64));
    // A trace that does not parse.
    let trace = tmp("bad.std");
    std::fs::write(&trace, "T0|w(x)\nT0|frob(y)\n").unwrap();
    let out = capvm(&["infer-disciplines", trace.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(65));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.std:2"));
    // A run that ends with a runtime error: 70, no spec.
    let out = capvm(&[
        "infer-disciplines",
        root().join("corpus/errors/div_zero.cj").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(70));
    assert!(out.stdout.is_empty());
    // A program that does not compile.
    let bad = tmp("bad.cj");
    std::fs::write(&bad, "class Main { static void main() { x = 1; } }\n").unwrap();
    let out = capvm(&["infer-disciplines", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(65));
}

#[test]
fn behind_the_escape_filter_the_hidden_thread_local_prefix_is_allowed() {
    // `escape` drops the accesses made before an object escapes: the first access
    // grits sees may already be past the thread-local segment.
    let prog = root().join("corpus/grits/syncobject.cj");
    let spec = root().join("corpus/grits/syncobject.grits");
    for tier in ["interp", "jit"] {
        let out = check(&prog, &spec, 2, tier, "escape:grits");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn locks_and_barriers_are_named_by_the_source() {
    // A barrier by the receiver of `bar.await()`; the receiver of a synchronized method
    // called as `m.put(…)` by the variable `m`; `this` for the location's own object.
    let cases = [
        ("corpus/bugs/barrier_phased.cj", "int[]", "guarded-by {bar}"),
        (
            "corpus/bugs/waitnotify_handoff.cj",
            "Item.a",
            "guarded-by {m}",
        ),
        (
            "corpus/bugs/waitnotify_handoff.cj",
            "Mailbox.slot",
            "guarded-by {this}",
        ),
        (
            "corpus/bugs/locked_counter.cj",
            "Counter.count",
            "guarded-by {this}",
        ),
    ];
    for (file, loc, part) in cases {
        for tier in ["interp", "jit"] {
            let text = infer(&root().join(file), 5, tier);
            let got = lines(&text);
            let d = &got
                .get(loc)
                .unwrap_or_else(|| panic!("{file}: no {loc} in\n{text}"))[0];
            assert!(d.contains(part), "{file} {tier}: {loc}: {d}");
        }
    }
}

/// A spec line with the names inside braces erased (a recorded trace names locks by
/// object, `o5`, where the live run names them by the source).
fn shape(d: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for ch in d.chars() {
        match ch {
            '{' => {
                depth += 1;
                out.push('{');
            }
            '}' => {
                depth -= 1;
                out.push('}');
            }
            _ if depth > 0 => {}
            _ => out.push(ch),
        }
    }
    out
}

#[test]
fn a_recorded_run_gives_the_disciplines_of_the_live_run() {
    for name in [
        "forklock",
        "changelocks",
        "readshared",
        "bank",
        "syncobject",
    ] {
        let prog = root().join(format!("corpus/grits/{name}.cj"));
        let trace = tmp(&format!("{name}.std"));
        let out = capvm(&[
            "run",
            prog.to_str().unwrap(),
            "--tools",
            "count",
            "--sched",
            "seeded:3",
            "--record",
            trace.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0));
        let live = lines(&infer(&prog, 3, "jit"));
        let out = capvm(&["infer-disciplines", trace.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0));
        let offline = lines(&String::from_utf8(out.stdout).unwrap());
        let shapes = |m: &BTreeMap<String, Vec<String>>| -> BTreeMap<String, Vec<String>> {
            m.iter()
                .map(|(k, v)| (k.clone(), v.iter().map(|d| shape(d)).collect()))
                .collect()
        };
        assert_eq!(shapes(&live), shapes(&offline), "{name}");
    }
}

#[test]
fn parallel_runs_infer_and_check() {
    // Under the OS scheduler the threads run in parallel: no determinism, but every
    // run completes and satisfies its expected spec.
    for name in ["forklock", "readshared", "syncobject", "bank"] {
        let prog = root().join(format!("corpus/grits/{name}.cj"));
        let spec = prog.with_extension("grits");
        let out = capvm(&["infer-disciplines", prog.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{name}");
        // (The bank's race is on `Bank.transactions`, whose spec `race` is not checked.)
        let out = capvm(&[
            "run",
            prog.to_str().unwrap(),
            "--tools",
            "grits",
            "--spec",
            spec.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
