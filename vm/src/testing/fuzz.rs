//! The fuzz targets' bodies, one per target of `fuzz/fuzz_targets/` (same names):
//! bytes in, `Err(disagreement)` out. [`replay`] dispatches by target name, for the
//! regression inputs saved under `fuzz/regressions/TARGET/`.

use arbitrary::{Arbitrary, Unstructured};

use analyses::testing::{GenConfig, gen_from_bytes, gen_trace};
use lang::proggen::gen_program_from_bytes;

use super::panic_oracles;
use super::program_oracles;
use super::trace_oracles::{detectors_agree_with_hb, renumber, specs_agree_with_bruteforce};

/// Every target, by name.
pub const TARGETS: [&str; 10] = [
    "detectors_vs_hb",
    "detectors_vs_hb_run",
    "filters_trace_precise",
    "spec_vs_bruteforce",
    "interp_vs_jit",
    "compile_no_panic",
    "trace_no_panic",
    "trace_names_no_panic",
    "grits_spec",
    "bigfoot_vs_fasttrack",
];

/// Run target `name` on `data`.
pub fn replay(name: &str, data: &[u8]) -> Result<(), String> {
    match name {
        "detectors_vs_hb" => detectors_vs_hb(data),
        "detectors_vs_hb_run" => detectors_vs_hb_run(data),
        "filters_trace_precise" => filters_trace_precise(data),
        "spec_vs_bruteforce" => spec_vs_bruteforce(data),
        "interp_vs_jit" => interp_vs_jit(data),
        "slp_vs_uncompressed" => slp_vs_uncompressed(data),
        "compile_no_panic" => panic_oracles::compile_no_panic(data),
        "trace_no_panic" => panic_oracles::trace_no_panic(data),
        "trace_names_no_panic" => panic_oracles::trace_names_no_panic(data),
        "grits_spec" => grits_spec(data),
        "bigfoot_vs_fasttrack" => bigfoot_vs_fasttrack(data),
        other => Err(format!("unknown fuzz target `{other}`")),
    }
}

/// A generated program and a scheduler seed: the first byte is the seed, the rest
/// drives the generator.
fn program(data: &[u8]) -> (String, u64) {
    let seed = data.first().copied().unwrap_or(0) as u64;
    (gen_program_from_bytes(data.get(1..).unwrap_or(&[])), seed)
}

/// Property 1 on a generated trace.
pub fn detectors_vs_hb(data: &[u8]) -> Result<(), String> {
    detectors_agree_with_hb(&renumber(&gen_from_bytes(data))?)
}

/// Property 1 on the recorded run of a generated program.
pub fn detectors_vs_hb_run(data: &[u8]) -> Result<(), String> {
    let (src, seed) = program(data);
    program_oracles::detectors_agree_on_program(&src, seed).map_err(|e| format!("{e}\n{src}"))
}

/// Property 2 on a generated program.
pub fn filters_trace_precise(data: &[u8]) -> Result<(), String> {
    let (src, seed) = program(data);
    program_oracles::filters_trace_precise(&src, seed).map_err(|e| format!("{e}\n{src}"))
}

/// Property 4 on a small generated trace (the oracles are brute force: at most 4
/// threads and 40 steps, always with transactions).
pub fn spec_vs_bruteforce(data: &[u8]) -> Result<(), String> {
    let mut u = Unstructured::new(data);
    let cfg = GenConfig::arbitrary(&mut u).unwrap_or_default();
    let seed = u64::arbitrary(&mut u).unwrap_or(0);
    let cfg = GenConfig {
        threads: cfg.threads.min(4),
        steps: cfg.steps.min(40),
        transactions: true,
        ..cfg
    };
    specs_agree_with_bruteforce(&renumber(&gen_trace(seed, &cfg))?)
}

/// Property 3 on a generated trace: the first byte seeds the random grammars.
pub fn slp_vs_uncompressed(data: &[u8]) -> Result<(), String> {
    let seed = data.first().copied().unwrap_or(0) as u64;
    let trace = renumber(&gen_from_bytes(data.get(1..).unwrap_or(&[])))?;
    super::slp_oracles::slp_agrees(&trace, seed)
}

/// Property 5 on a generated program.
pub fn interp_vs_jit(data: &[u8]) -> Result<(), String> {
    let (src, seed) = program(data);
    program_oracles::interp_vs_jit(&src, seed).map_err(|e| format!("{e}\n{src}"))
}

/// Property 8 on a generated trace: the first 4 bytes choose the mutations, the rest
/// drives the generator.
pub fn grits_spec(data: &[u8]) -> Result<(), String> {
    let (mutation, rest) = data.split_at(data.len().min(4));
    let trace = renumber(&gen_from_bytes(rest))?;
    super::grits_oracle::grits_property(&trace, mutation)
}

/// Property 7 and the precise-checks oracle on a generated program (BigFoot's
/// placement, run on the interpreter; every fourth input on the JIT).
pub fn bigfoot_vs_fasttrack(data: &[u8]) -> Result<(), String> {
    let (src, seed) = program(data);
    let tier = if seed % 4 == 3 {
        crate::Tier::Jit
    } else {
        crate::Tier::Interp
    };
    super::bigfoot::bigfoot_agrees(&src, seed, tier).map_err(|e| format!("{e}\n{src}"))
}
