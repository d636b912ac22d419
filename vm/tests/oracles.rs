//! The oracles of `vm::testing` (`docs/architecture.md` "Precision and soundness properties")
//! on a fixed, seeded set of generated programs and traces, plus every saved fuzzer
//! regression input under `fuzz/regressions/TARGET/`. `ORACLE_PROGRAMS=N` runs more
//! programs locally.

use std::path::Path;

use analyses::testing::{GenConfig, gen_trace};
use lang::proggen::{ProgConfig, gen_program_seeded};
use vm::testing::panic_oracles::{compile_no_panic, trace_names_no_panic, trace_no_panic};
use vm::testing::program_oracles::{
    compile, detectors_agree_on_program, filters_trace_precise, interp_vs_jit, run_recorded,
};
use vm::testing::trace_oracles::{detectors_agree_with_hb, renumber, specs_agree_with_bruteforce};
use vm::{ExitKind, Tier};

fn programs() -> u64 {
    std::env::var("ORACLE_PROGRAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150)
}

fn prog_config(k: u64) -> ProgConfig {
    ProgConfig {
        classes: 1 + (k % 3) as u32,
        works: 1 + (k % 2) as u32,
        workers: 1 + (k % 3) as u32,
        stmts: 3 + (k % 4) as u32,
        depth: 1 + (k % 3) as u32,
        barrier: k % 3 == 1,
        deterministic: k.is_multiple_of(2),
        specs: k % 4 != 3,
        error_percent: (k % 3) as u32,
    }
}

fn program(k: u64) -> String {
    gen_program_seeded(k * 7919 + 17, &prog_config(k))
}

fn check_all(what: &str, f: impl Fn(u64) -> Result<(), String>) {
    let failures: Vec<String> = (0..programs())
        .filter_map(|k| f(k).err().map(|e| format!("{what} #{k}: {e}")))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn generated_programs_compile_and_mostly_run() {
    let (mut ok, mut racy) = (0, 0);
    let n = programs().max(300);
    for k in 0..n {
        let src = program(k);
        let p = compile(&src).unwrap_or_else(|e| panic!("#{k} does not compile:\n{e}\n{src}"));
        {
            let r = run_recorded(&p, Tier::Interp, k, &["fasttrack"]).expect("run");
            ok += u32::from(r.out.exit != ExitKind::RuntimeError);
            racy += u32::from(!r.warnings.is_empty());
        }
    }
    let n = n as u32;
    eprintln!("{n} programs: {ok} ran to completion, {racy} racy");
    // Most programs run to completion; races are neither absent nor universal.
    assert!(ok * 10 >= n * 7, "{ok} of {n} ran to completion");
    assert!(racy > n / 10 && racy < n * 9 / 10, "{racy} of {n} racy");
}

#[test]
fn detectors_agree_with_hb_on_generated_traces() {
    for seed in 0..300u64 {
        let cfg = GenConfig {
            threads: 2 + (seed % 4) as u32,
            steps: 20 + (seed % 60) as usize,
            methods: seed.is_multiple_of(2),
            allocs: seed.is_multiple_of(3),
            guarded_percent: (seed % 5) as u32 * 25,
            ..GenConfig::default()
        };
        let trace = renumber(&gen_trace(seed, &cfg)).expect("well-formed");
        detectors_agree_with_hb(&trace).unwrap_or_else(|e| panic!("trace seed {seed}: {e}"));
    }
}

#[test]
fn detectors_agree_with_hb_on_program_runs() {
    check_all("program", |k| detectors_agree_on_program(&program(k), k));
}

#[test]
fn filters_are_trace_precise_on_program_runs() {
    check_all("program", |k| filters_trace_precise(&program(k), k));
}

#[test]
fn specs_agree_with_bruteforce_on_generated_traces() {
    for seed in 0..300u64 {
        let cfg = GenConfig {
            threads: 2 + (seed % 3) as u32,
            steps: 10 + (seed % 30) as usize,
            vars: 1 + (seed % 3) as u32,
            transactions: true,
            deterministic: seed.is_multiple_of(2),
            access_weight: 4,
            ..GenConfig::default()
        };
        let trace = renumber(&gen_trace(seed, &cfg)).expect("well-formed");
        specs_agree_with_bruteforce(&trace).unwrap_or_else(|e| panic!("trace seed {seed}: {e}"));
    }
}

#[test]
fn interpreter_and_jit_agree_on_generated_programs() {
    check_all("program", |k| interp_vs_jit(&program(k), k));
}

/// Programs of one thread (no workers): `interp_vs_jit` then also runs each
/// inline chain on the JIT under the OS scheduler, where read-write pairs apply,
/// and compares its report with the interpreter's.
#[test]
fn interpreter_and_jit_agree_on_one_thread_programs() {
    let mut one_thread = 0;
    let failures: Vec<String> = (0..60u64)
        .filter_map(|k| {
            let cfg = ProgConfig {
                workers: 0,
                barrier: false,
                ..prog_config(k)
            };
            let src = gen_program_seeded(k * 104_729 + 3, &cfg);
            one_thread += u32::from(!src.contains("fork "));
            interp_vs_jit(&src, k)
                .err()
                .map(|e| format!("one thread #{k}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        one_thread >= 10,
        "only {one_thread} of 60 programs fork nothing"
    );
}

#[test]
fn garbage_does_not_panic() {
    // Mutated generated programs and traces: truncations and byte flips.
    for k in 0..60u64 {
        let src = program(k).into_bytes();
        for cut in [src.len() / 3, src.len() / 2, src.len() - 1] {
            compile_no_panic(&src[..cut]).unwrap_or_else(|e| panic!("#{k} cut {cut}: {e}"));
        }
        let mut flipped = src.clone();
        let i = (k as usize * 37) % flipped.len();
        flipped[i] ^= 0x5a;
        compile_no_panic(&flipped).unwrap_or_else(|e| panic!("#{k} flip {i}: {e}"));
    }
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/trace_no_panic");
    for e in std::fs::read_dir(&traces).expect("fuzz/seeds/trace_no_panic") {
        let bytes = std::fs::read(e.expect("entry").path()).expect("read");
        trace_no_panic(&bytes).expect("trace");
        let half = bytes.len() / 2;
        trace_no_panic(&bytes[..half]).expect("half trace");
    }
}

/// Arbitrary thread, variable and lock names (many shaped like the recorder's
/// `o3.int[][5]`) through every detector and both report renderings; and the names
/// that once panicked the report.
#[test]
fn arbitrary_names_do_not_panic() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for k in 0..400usize {
        let bytes: Vec<u8> = (0..16 + k % 240)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        trace_names_no_panic(&bytes).unwrap_or_else(|e| panic!("input #{k} {bytes:?}: {e}"));
    }
    for name in [
        "o1.int[]",
        "o1.int[][]",
        "o1.[]",
        "o1.int[]]",
        "o1.\u{e9}]",
        "o1.int[\u{e9}]",
    ] {
        let t = format!("# capvm-record v1\nT0|fork(T1)|1\nT1|w({name})|2\nT0|w({name})|3\n");
        trace_no_panic(t.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// Every saved fuzzer finding, replayed through its target's oracle.
#[test]
fn fuzz_regressions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    let Ok(targets) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut failures = Vec::new();
    for t in targets {
        let t = t.expect("entry").path();
        let target = t
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        for f in std::fs::read_dir(&t).expect("target dir") {
            let f = f.expect("entry").path();
            let data = std::fs::read(&f).expect("read");
            if let Err(e) = vm::testing::fuzz::replay(&target, &data) {
                failures.push(format!("{}: {e}", f.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
