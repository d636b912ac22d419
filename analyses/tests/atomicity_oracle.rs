//! `atomicity` against the brute-force serial-order oracle on thousands of small
//! generated traces: same verdict and the same first violating event.

use analyses::offline::analyze;
use analyses::report::WarningKind;
use analyses::testing::oracle_atomicity::atomicity_first_violation;
use analyses::testing::{GenConfig, gen_trace};
use analyses::trace::Trace;

fn config(k: u64) -> GenConfig {
    GenConfig {
        threads: 2 + (k % 4) as u32,
        steps: 10 + (k % 41) as usize,
        vars: 1 + (k % 3) as u32,
        locks: (k % 3) as u32,
        max_held: 2,
        volatiles: (k % 2) as u32,
        barriers: k.is_multiple_of(4) as u32,
        transactions: true,
        deterministic: k.is_multiple_of(5),
        methods: false,
        allocs: false,
        access_weight: 4,
        ..GenConfig::default()
    }
}

fn first_reported(trace: &Trace) -> Option<u64> {
    analyze(trace, "atomicity", Default::default())
        .expect("chain")
        .warnings()
        .iter()
        .filter(|r| r.warning.kind == WarningKind::Atomicity)
        .filter_map(|r| r.warning.event)
        .min()
}

/// Generated traces per run: 5000, or `ORACLE_SEEDS` for longer local runs.
fn seeds() -> u64 {
    std::env::var("ORACLE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000)
}

#[test]
fn agrees_with_the_oracle_on_generated_traces() {
    let (mut violations, mut total) = (0, 0);
    for seed in 0..seeds() {
        let events = gen_trace(seed, &config(seed));
        let trace = Trace::from_events(events).expect("generated traces are well-formed");
        let oracle = atomicity_first_violation(&trace.events);
        let ours = first_reported(&trace);
        assert_eq!(ours, oracle, "seed {seed}: {:#?}", trace.events);
        violations += oracle.is_some() as u32;
        total += 1;
    }
    eprintln!("{total} traces: {violations} not atomic");
    // The generator must exercise both verdicts.
    assert!(
        violations > total / 10 && violations < total * 9 / 10,
        "{violations} of {total}"
    );
}
