//! Property test: on thousands of generated well-formed traces, every precise detector
//! agrees with the `hb` oracle on the racy locations and on the first racy event per
//! location, and DJIT+ flags exactly the oracle's racy events.

use std::collections::BTreeMap;

use analyses::Chain;
use analyses::ChainOptions;
use analyses::event::Loc;
use analyses::offline::analyze;
use analyses::passes::hb::races_in_mode;
use analyses::testing::{GenConfig, eager_goldilocks, first_flagged, flagged, gen_trace};
use analyses::trace::Trace;

fn configs() -> Vec<GenConfig> {
    let base = GenConfig::default();
    vec![
        base.clone(),
        // Few variables, many threads: lots of races and hand-offs.
        GenConfig {
            threads: 6,
            vars: 2,
            steps: 60,
            ..base.clone()
        },
        // Lock-heavy, nested.
        GenConfig {
            locks: 3,
            max_held: 3,
            access_weight: 2,
            barriers: 0,
            volatiles: 0,
            ..base.clone()
        },
        // Volatile- and barrier-heavy.
        GenConfig {
            volatiles: 2,
            barriers: 2,
            locks: 1,
            access_weight: 3,
            ..base.clone()
        },
        // Mostly lock-disciplined accesses: race-free traces are common.
        GenConfig {
            guarded_percent: 97,
            locks: 2,
            max_held: 2,
            barriers: 1,
            ..base.clone()
        },
        GenConfig {
            guarded_percent: 90,
            threads: 3,
            locks: 3,
            vars: 3,
            steps: 80,
            ..base.clone()
        },
        // Long traces.
        GenConfig {
            steps: 150,
            vars: 4,
            methods: true,
            allocs: true,
            ..base
        },
    ]
}

#[test]
fn precise_detectors_agree_with_the_oracle() {
    let mut traces = 0;
    let mut racy = 0;
    for (k, cfg) in configs().iter().enumerate() {
        for seed in 0..700u64 {
            let events = gen_trace(seed * 7919 + k as u64, cfg);
            let trace = Trace::from_events(events).expect("generated traces are well formed");
            let chain = analyze(
                &trace,
                "fasttrack:djit:goldilocks:hb",
                ChainOptions::default(),
            )
            .expect("chain");
            let oracle = first_flagged(&chain, "hb");
            for tool in ["fasttrack", "djit", "goldilocks"] {
                assert_eq!(
                    first_flagged(&chain, tool),
                    oracle,
                    "{tool}, config {k}, seed {seed}"
                );
            }
            assert_eq!(
                flagged(&chain, "djit"),
                flagged(&chain, "hb"),
                "djit racy events, config {k}, seed {seed}"
            );
            // Goldilocks, lazy, RW mode: the eager rules' report stream, exactly.
            assert_eq!(
                report_stream(&chain, "goldilocks"),
                eager_goldilocks(&trace.events, false),
                "goldilocks RW stream, config {k}, seed {seed}"
            );
            // TR mode (read-read conflicts): the eager stream, and the oracle's first
            // races with read-read conflicts.
            let tr = ChainOptions {
                goldilocks_tr_mode: true,
                ..ChainOptions::default()
            };
            let chain = analyze(&trace, "goldilocks", tr).expect("chain");
            assert_eq!(
                report_stream(&chain, "goldilocks"),
                eager_goldilocks(&trace.events, true),
                "goldilocks TR stream, config {k}, seed {seed}"
            );
            let mut first_tr: BTreeMap<Loc, u64> = BTreeMap::new();
            for r in races_in_mode(&trace.events, true) {
                let e = &trace.events[r.pos];
                if let analyses::event::OwnedKind::Read { loc }
                | analyses::event::OwnedKind::Write { loc, .. } = e.kind
                {
                    first_tr.entry(loc).or_insert(e.index);
                }
            }
            assert_eq!(
                first_by_loc(&chain, "goldilocks"),
                first_tr,
                "goldilocks TR first races, config {k}, seed {seed}"
            );
            traces += 1;
            racy += usize::from(!oracle.is_empty());
        }
    }
    // Both verdicts occur often enough for the agreement to mean something.
    assert!(
        racy > traces / 5 && racy < traces * 4 / 5,
        "{racy} of {traces} racy"
    );
}

/// `(racy event, earlier event)` of every warning of `analysis`, in report order.
fn report_stream(chain: &Chain, analysis: &str) -> Vec<(u64, u64)> {
    chain
        .warnings()
        .iter()
        .filter(|r| r.warning.analysis == analysis)
        .map(|r| {
            let w = &r.warning;
            (w.event.unwrap(), w.accesses[0].event.unwrap())
        })
        .collect()
}

fn first_by_loc(chain: &Chain, analysis: &str) -> BTreeMap<Loc, u64> {
    let mut m = BTreeMap::new();
    for r in chain.warnings() {
        if r.warning.analysis == analysis {
            let e = m.entry(r.warning.loc.unwrap()).or_insert(u64::MAX);
            *e = (*e).min(r.warning.event.unwrap());
        }
    }
    m
}
