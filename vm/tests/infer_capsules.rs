//! `capvm infer-capsules` and `capvm run --capsules`, through the binary, on copies of
//! the corpus programs in a temporary directory (nothing is written into the tree).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

const MAX_ROUNDS: u32 = 50;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("capvm-infer-{}-{tag}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }

    /// Copy a corpus program (relative to the repository root) into the directory.
    fn copy(&self, rel: &str) -> PathBuf {
        let src = root().join(rel);
        let dst = self.0.join(src.file_name().expect("file name"));
        std::fs::copy(&src, &dst).expect("copy");
        dst
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn capvm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capvm"))
        .args(args)
        .output()
        .expect("run capvm")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn corpus_programs() -> Vec<String> {
    let mut v = Vec::new();
    for dir in ["corpus/examples", "corpus/bugs"] {
        for e in std::fs::read_dir(root().join(dir)).expect("corpus dir") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "cj") {
                v.push(format!(
                    "{dir}/{}",
                    p.file_name().expect("name").to_string_lossy()
                ));
            }
        }
    }
    v.sort();
    v
}

/// The number of runs from the `fixed point after N runs` line.
fn rounds(stdout: &str) -> Option<u32> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("fixed point after "))
        .and_then(|r| r.strip_suffix(" runs"))
        .and_then(|n| n.parse().ok())
}

/// Infer, then run with the inferred capsules: no capsule violation.
fn check_fixed_point(rel: &str) {
    let dir = TempDir::new("fp");
    let file = dir.copy(rel);
    let f = file.to_str().expect("utf-8 path");
    let max = MAX_ROUNDS.to_string();
    let inf = capvm(&[
        "infer-capsules",
        f,
        "--sched",
        "seeded:1",
        "--max-rounds",
        &max,
    ]);
    let out = text(&inf.stdout);
    assert_eq!(
        inf.status.code(),
        Some(0),
        "{rel}: infer-capsules\n{out}\n{}",
        text(&inf.stderr)
    );
    let n = rounds(&out).unwrap_or_else(|| panic!("{rel}: no round count in\n{out}"));
    assert!((1..=MAX_ROUNDS).contains(&n), "{rel}: {n} rounds");
    assert!(out.starts_with("capsules: "), "{rel}: {out}");
    assert!(
        file.with_extension("capsules").exists(),
        "{rel}: no .capsules file"
    );
    let report = dir.0.join("report.json");
    let run = capvm(&[
        "run",
        f,
        "--capsules",
        "inferred",
        "--tools",
        "capsule",
        "--sched",
        "seeded:1",
        "--report",
        report.to_str().expect("utf-8 path"),
    ]);
    assert_ne!(run.status.code(), Some(64), "{rel}: {}", text(&run.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    let violations: Vec<_> = json["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter(|w| w["kind"] == "capsule-violation")
        .collect();
    assert!(
        violations.is_empty(),
        "{rel}: inferred capsules {out} still violate: {violations:?}"
    );
}

#[test]
fn fixed_point_on_every_corpus_program() {
    let programs = corpus_programs();
    assert!(programs.len() > 30, "{programs:?}");
    // Two workers: the CI box has two cores.
    let (a, b): (Vec<_>, Vec<_>) = programs.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    std::thread::scope(|s| {
        for half in [a, b] {
            s.spawn(move || {
                for (_, rel) in half {
                    check_fixed_point(rel);
                }
            });
        }
    });
}

#[test]
fn outside_field_access_demotes_the_class() {
    let dir = TempDir::new("outside");
    let file = dir.copy("corpus/bugs/capsule_outside_access.cj");
    let f = file.to_str().expect("utf-8 path");
    let inf = capvm(&["infer-capsules", f, "--sched", "seeded:1"]);
    let out = text(&inf.stdout);
    assert_eq!(inf.status.code(), Some(0), "{out}{}", text(&inf.stderr));
    let first = out.lines().next().unwrap_or("");
    assert!(first.starts_with("capsules: "), "{out}");
    assert!(!first.contains("Account"), "{out}");
    assert!(
        out.contains("demoted Account (round 1): encapsulation"),
        "{out}"
    );
    // Both sites of the violation are named.
    assert!(out.contains("capsule_outside_access.cj:23:"), "{out}");
    let saved = std::fs::read_to_string(file.with_extension("capsules")).expect("capsules file");
    assert!(!saved.lines().any(|l| l == "Account"), "{saved}");
    assert!(saved.lines().any(|l| l == "Main"), "{saved}");
}

#[test]
fn capsules_flag_overrides_the_source() {
    let dir = TempDir::new("flag");
    let file = dir.copy("corpus/bugs/capsule_outside_access.cj");
    let f = file.to_str().expect("utf-8 path");
    let run = |caps: &str| {
        capvm(&[
            "run",
            f,
            "--tools",
            "capsule",
            "--sched",
            "seeded:1",
            "--capsules",
            caps,
        ])
    };
    // The source's capsule: a violation (exit 66).
    let annotated = capvm(&["run", f, "--tools", "capsule", "--sched", "seeded:1"]);
    assert_eq!(annotated.status.code(), Some(66));
    // Account not a capsule: clean; Auditor a capsule: nothing touches its fields.
    let other = run("Auditor,Main");
    assert_eq!(other.status.code(), Some(0), "{}", text(&other.stderr));
    let same = run("Account");
    assert_eq!(same.status.code(), Some(66), "{}", text(&same.stderr));
    assert!(text(&same.stderr).contains("Account"));

    let unknown = run("Account,Nope");
    assert_eq!(unknown.status.code(), Some(64));
    assert!(
        text(&unknown.stderr).contains("`Nope`"),
        "{}",
        text(&unknown.stderr)
    );

    let missing = run("inferred");
    assert_eq!(missing.status.code(), Some(64));
    assert!(
        text(&missing.stderr).contains("infer-capsules"),
        "{}",
        text(&missing.stderr)
    );
}
