//! The benchmark kernels of `corpus/bench`: each small kernel prints its
//! expected checksum (`NAME.out`, cross-checked with Java) bare and under every chain of
//! `capvm bench` ([`vm::tool::bench::DEFAULT_CHAINS`]), on both tiers. The kernels are race
//! free, so every chain exits 0 except `eraser`, whose lockset discipline gives false
//! alarms on data ordered by fork/join and barriers (exit 66 allowed). Each
//! `NAME_large.cj` differs from `NAME.cj` only in the `SIZE` line.

use std::path::{Path, PathBuf};
use std::process::Command;

const CAPVM: &str = env!("CARGO_BIN_EXE_capvm");

fn kernels() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/bench");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus/bench")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "cj")
                && !p.file_stem().unwrap().to_string_lossy().ends_with("_large")
        })
        .collect();
    v.sort();
    v
}

fn check(kernel: &Path) -> Vec<String> {
    let mut errors = Vec::new();
    let name = kernel.file_stem().unwrap().to_string_lossy().into_owned();
    let expected = std::fs::read_to_string(kernel.with_extension("out")).unwrap_or_default();
    let configs = std::iter::once("none").chain(vm::tool::bench::DEFAULT_CHAINS.iter().copied());
    for (tier, tools) in configs.flat_map(|c| [("jit", c), ("interp", c)]) {
        let exits: &[i32] = if tools == "eraser" { &[0, 66] } else { &[0] };
        let out = Command::new(CAPVM)
            .arg("run")
            .arg(kernel)
            .args(["--tier", tier, "--tools", tools, "--sched", "seeded:1"])
            .output()
            .expect("run capvm");
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.code().is_some_and(|c| exits.contains(&c)) || stdout != expected {
            errors.push(format!(
                "{name} --tier {tier} --tools {tools}: exit {:?}, stdout {stdout:?}, expected {expected:?}; stderr: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let small = std::fs::read_to_string(kernel).unwrap_or_default();
    let large_path = kernel.with_file_name(format!("{name}_large.cj"));
    let large = std::fs::read_to_string(&large_path).unwrap_or_default();
    let differing: Vec<(&str, &str)> = small
        .lines()
        .zip(large.lines())
        .filter(|(a, b)| a != b)
        .collect();
    let size_only = small.lines().count() == large.lines().count()
        && differing.len() == 1
        && differing[0].0.contains("SIZE")
        && differing[0].1.contains("SIZE");
    if !size_only {
        errors.push(format!(
            "{name}: {} must differ from {name}.cj only in the SIZE line ({} differing lines)",
            large_path.display(),
            differing.len()
        ));
    }
    errors
}

#[test]
fn kernels_print_their_checksums() {
    let ks = kernels();
    assert!(
        ks.len() >= 10,
        "expected at least 10 kernels, found {}",
        ks.len()
    );
    let errors: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = ks.iter().map(|k| s.spawn(move || check(k))).collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
