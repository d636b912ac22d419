//! Property 8 (`docs/architecture.md`) on generated traces: `grits` infers a spec the
//! trace satisfies, and `grits --spec` agrees with a brute-force oracle
//! (`vm::testing::grits_oracle`) on which locations leave a spec, after one
//! critical section is dropped from the trace or one discipline of the spec is
//! changed. Also on the recorded runs of the thesis programs.

use analyses::testing::{GenConfig, gen_trace};
use vm::testing::grits_oracle::{check_agrees, grits_property, infer_spec};
use vm::testing::trace_oracles::renumber;

#[test]
fn inferred_specs_hold_and_deviations_agree_with_the_oracle() {
    let mut deviating = 0;
    for seed in 0..400u64 {
        let cfg = GenConfig {
            threads: 2 + (seed % 4) as u32,
            steps: 20 + (seed % 50) as usize,
            vars: 1 + (seed % 4) as u32,
            locks: 1 + (seed % 3) as u32,
            volatiles: (seed % 3) as u32,
            barriers: (seed % 4 == 3) as u32,
            guarded_percent: (seed % 5) as u32 * 25,
            ..GenConfig::default()
        };
        let trace = renumber(&gen_trace(seed, &cfg)).expect("well-formed");
        let bytes = [
            (seed % 251) as u8,
            (seed / 7) as u8,
            (seed / 3) as u8,
            seed as u8,
        ];
        grits_property(&trace, &bytes).unwrap_or_else(|e| panic!("trace seed {seed}: {e}"));
        // Count the traces whose inferred spec a changed spec catches (the oracle
        // must not be vacuous).
        let text = infer_spec(&trace).unwrap();
        let changed: String = text
            .lines()
            .map(|l| match l.split_once(": ") {
                Some((loc, d)) if d != "race" => format!("{loc}: vol {{V9}}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        deviating += usize::from(!check_agrees(&trace, &changed).unwrap().is_empty());
    }
    assert!(
        deviating > 200,
        "only {deviating} traces leave a changed spec"
    );
}
