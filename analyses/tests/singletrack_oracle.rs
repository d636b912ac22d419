//! `singletrack` against the brute-force oracles on thousands of small generated traces
//! with `deterministic` blocks (forks inside them, barriers, locks, volatiles):
//! - conflict freedom: exactly the (location or lock, transaction) pairs the oracle finds
//!   unordered, and a `conflict` warning iff there is one;
//! - external serializability: the same first violating event.

use std::collections::BTreeSet;

use analyses::ctx::CtxId;
use analyses::offline::analyze;
use analyses::passes::singletrack::cf::Cf;
use analyses::report::WarningKind;
use analyses::testing::oracle_singletrack::{conflicts, serializability_first_violation};
use analyses::testing::{GenConfig, gen_trace, singletrack_lineless_agrees};
use analyses::trace::Trace;
use analyses::txgraph::{TxHb, TxMode};

fn config(k: u64) -> GenConfig {
    GenConfig {
        threads: 2 + (k % 4) as u32,
        steps: 10 + (k % 41) as usize,
        vars: 1 + (k % 3) as u32,
        locks: (k % 3) as u32,
        max_held: 2,
        volatiles: (k % 2) as u32,
        barriers: k.is_multiple_of(3) as u32,
        transactions: true,
        deterministic: true,
        methods: false,
        allocs: false,
        access_weight: 4,
        ..GenConfig::default()
    }
}

/// Generated traces per run: 5000, or `ORACLE_SEEDS` for longer local runs.
fn seeds() -> u64 {
    std::env::var("ORACLE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000)
}

#[test]
fn agrees_with_the_oracles_on_generated_traces() {
    let (mut with_conflicts, mut with_cycles, mut total) = (0, 0, 0);
    for seed in 0..seeds() {
        let trace = Trace::from_events(gen_trace(seed, &config(seed))).expect("well-formed");
        let events = &trace.events;
        let want_cf = conflicts(events);
        let want_xs = serializability_first_violation(events);

        // Conflict freedom, pair by pair.
        let mut cf = Cf::new();
        let mut got_cf = BTreeSet::new();
        for ev in events {
            for c in cf.event(&ev.as_event(), CtxId::ROOT) {
                got_cf.insert((c.target, c.xid));
            }
        }
        assert_eq!(got_cf, want_cf, "seed {seed}: {events:#?}");

        // The graph's invariants after every event.
        let mut xs = TxHb::new(TxMode::SINGLETRACK);
        for ev in events {
            xs.event(&ev.as_event(), CtxId::ROOT);
            xs.check_graph()
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }

        // The pass in a chain.
        let ws = analyze(&trace, "singletrack", Default::default())
            .expect("chain")
            .warnings();
        let has_conflict = ws.iter().any(|r| r.warning.kind == WarningKind::Conflict);
        assert_eq!(has_conflict, !want_cf.is_empty(), "seed {seed}");
        let first_cycle = ws
            .iter()
            .filter(|r| r.warning.kind == WarningKind::Serializability)
            .filter_map(|r| r.warning.event)
            .min();
        assert_eq!(first_cycle, want_xs, "seed {seed}: {events:#?}");

        // Without trace lines (as online): the pass may keep a location's state with
        // its sole accessor; the warnings are the same but for the lines.
        singletrack_lineless_agrees(&trace).unwrap_or_else(|e| panic!("seed {seed}: {e}"));

        with_conflicts += !want_cf.is_empty() as u32;
        with_cycles += want_xs.is_some() as u32;
        total += 1;
    }
    eprintln!("{total} traces: {with_conflicts} with conflicts, {with_cycles} with cycles");
    // Both properties must be exercised both ways.
    for n in [with_conflicts, with_cycles] {
        assert!(
            n > total / 20 && n < total * 19 / 20,
            "{with_conflicts} / {with_cycles} of {total}"
        );
    }
}
