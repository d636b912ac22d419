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
