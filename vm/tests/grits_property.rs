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

#[test]
fn every_dropped_critical_section_agrees_with_the_oracle() {
    use analyses::event::OwnedKind;
    use analyses::trace::Trace;
    // "A run changed so that one hand-off loses its synchronization is reported":
    // drop each critical section of each trace in turn and check the cut trace
    // against the spec inferred from the whole one.
    let (mut cuts, mut deviating) = (0, 0);
    for seed in 0..200u64 {
        let cfg = GenConfig {
            threads: 2 + (seed % 4) as u32,
            steps: 20 + (seed % 50) as usize,
            vars: 1 + (seed % 4) as u32,
            locks: 1 + (seed % 3) as u32,
            volatiles: (seed % 3) as u32,
            guarded_percent: (seed % 5) as u32 * 25,
            ..GenConfig::default()
        };
        let trace = renumber(&gen_trace(seed, &cfg)).expect("well-formed");
        let text = infer_spec(&trace).unwrap();
        for (i, e) in trace.events.iter().enumerate() {
            let OwnedKind::Acquire { lock } = e.kind else {
                continue;
            };
            let Some(p) = trace.events[i + 1..].iter().position(|f| {
                f.tid == e.tid && matches!(f.kind, OwnedKind::Release { lock: l } if l == lock)
            }) else {
                continue;
            };
            let r = i + 1 + p;
            let events = trace
                .events
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i && *j != r)
                .map(|(_, e)| e.clone())
                .collect();
            let cut = Trace::from_events(events).expect("still well-formed");
            cuts += 1;
            let dev = check_agrees(&cut, &text)
                .unwrap_or_else(|e| panic!("seed {seed}, section at event {}: {e}", i + 1));
            deviating += usize::from(!dev.is_empty());
        }
    }
    assert!(
        deviating * 20 > cuts,
        "{deviating} of {cuts} cut traces deviate"
    );
}
