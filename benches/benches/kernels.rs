//! Criterion: each small kernel of `corpus/bench` bare and under each chain of
//! `capvm bench`, in-process on the JIT tier (`vm::run_program`, stdout captured). The
//! checksum of every configuration is checked once before it is timed.
//!
//! `cargo bench -p capvm-benches` (a few minutes on an idle machine; `-- sor` to select, `-- --test` to run
//! each configuration once). Process-level numbers with peak memory: `capvm bench`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use lang::ir::{Program, SourceFile};
use vm::{RunConfig, SchedKind, Tier, run_program};

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/bench")
}

/// `(name, program, expected stdout)` of every small kernel.
fn kernels() -> Vec<(String, Arc<Program>, String)> {
    let dir = bench_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| {
            let p = e.ok()?.path();
            let stem = p.file_stem()?.to_string_lossy().into_owned();
            (p.extension()? == "cj" && !stem.ends_with("_large")).then_some(stem)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let path = dir.join(format!("{name}.cj"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let files = vec![SourceFile {
                name: path.display().to_string(),
                text,
            }];
            let program = match lang::compile(files) {
                Ok(c) => c.program,
                Err(_) => panic!("{} does not compile", path.display()),
            };
            let expected =
                std::fs::read_to_string(dir.join(format!("{name}.out"))).unwrap_or_default();
            (name, Arc::new(program), expected)
        })
        .collect()
}

fn config(chain: &str) -> RunConfig {
    RunConfig {
        tools: Some(chain.to_string()),
        tier: Tier::Jit,
        sched: SchedKind::Os,
        capture_stdout: true,
        ..RunConfig::default()
    }
}

fn bench_kernels(c: &mut Criterion) {
    let configs: Vec<&str> = std::iter::once("none")
        .chain(vm::tool::bench::DEFAULT_CHAINS.iter().copied())
        .collect();
    for (name, program, expected) in kernels() {
        let mut group = c.benchmark_group(&name);
        // Flat sampling: 10 samples of equal iteration counts (at least 10 runs in all,
        // not the 55 of linear sampling), so the slow chains stay within seconds.
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_millis(100))
            .measurement_time(Duration::from_millis(500));
        for chain in &configs {
            let cfg = config(chain);
            let out = run_program(program.clone(), &cfg)
                .unwrap_or_else(|e| panic!("{name} under {chain}: {e}"));
            assert_eq!(
                out.stdout_string(),
                expected,
                "{name} under {chain}: wrong checksum"
            );
            group.bench_function(BenchmarkId::from_parameter(chain), |b| {
                b.iter(|| run_program(program.clone(), &cfg).map(|o| o.exit))
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    // No plots: plotting 100 benchmarks costs more than measuring them.
    config = Criterion::default().without_plots();
    targets = bench_kernels
}
criterion_main!(benches);
