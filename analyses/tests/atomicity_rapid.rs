//! `atomicity` on the reference traces of `tests/data/rapid/` against RAPID's Velodrome
//! (`atomicity_first_violation_event` in `expected.json`) and the brute-force oracle:
//! same verdict and the same first violating event.

use analyses::offline::analyze;
use analyses::report::WarningKind;
use analyses::testing::oracle_atomicity::atomicity_first_violation;
use analyses::trace::parse_std;

const TRACES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rapid");

/// (trace file, RAPID's first violation event) for every trace with transactions.
fn expected() -> Vec<(String, Option<u64>)> {
    let text = std::fs::read_to_string(format!("{TRACES}/expected.json")).expect("expected.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    v.as_array()
        .expect("an array")
        .iter()
        .filter_map(|e| {
            let first = e.get("atomicity_first_violation_event")?;
            Some((e["trace"].as_str().unwrap().to_string(), first.as_u64()))
        })
        .collect()
}

/// The first event at which `atomicity` reports a cycle.
/// (first event `atomicity` reports, the oracle's first violating event).
fn first_violation(file: &str) -> (Option<u64>, Option<u64>) {
    let text = std::fs::read_to_string(format!("{TRACES}/{file}")).expect("trace file");
    let trace = parse_std(&text).expect("well-formed");
    let chain = analyze(&trace, "atomicity", Default::default()).expect("chain");
    let ours = chain
        .warnings()
        .iter()
        .filter(|r| r.warning.kind == WarningKind::Atomicity)
        .filter_map(|r| r.warning.event)
        .min();
    (ours, atomicity_first_violation(&trace.events))
}

#[test]
fn verdicts_and_first_events_match_rapid_velodrome() {
    let cases = expected();
    assert!(
        cases.len() >= 10,
        "traces with transactions: {}",
        cases.len()
    );
    let mut report = Vec::new();
    for (file, rapid) in &cases {
        let (ours, oracle) = first_violation(file);
        report.push(format!(
            "{file}: rapid {rapid:?} ours {ours:?} oracle {oracle:?}"
        ));
    }
    let text = report.join("\n");
    eprintln!("{text}");
    for (file, rapid) in &cases {
        let (ours, oracle) = first_violation(file);
        assert_eq!(ours.is_some(), rapid.is_some(), "verdict on {file}\n{text}");
        assert_eq!(ours, oracle, "first event vs the oracle on {file}\n{text}");
        assert_eq!(ours, *rapid, "first event vs RAPID on {file}\n{text}");
    }
}

/// The warning names the cycle: its transactions (with their begin lines) in `message`
/// and `extra["transactions"]`, and the event that closed it.
#[test]
fn warning_lists_the_cycle() {
    let text = std::fs::read_to_string(format!("{TRACES}/t1000.std")).expect("trace file");
    let trace = parse_std(&text).expect("well-formed");
    let chain = analyze(&trace, "atomicity", Default::default()).expect("chain");
    let ws = chain.warnings();
    let first = ws
        .iter()
        .min_by_key(|r| r.warning.event)
        .expect("a violation");
    let w = &first.warning;
    let rendered = analyses::report::warning_json(first, trace.env.as_ref(), &chain.shared.ctxs);
    eprintln!(
        "{}\n{rendered:#}",
        analyses::report::render_text(first, trace.env.as_ref(), &chain.shared.ctxs)
    );
    assert_eq!(w.event, Some(27));
    assert_eq!(rendered["kind"], "atomicity");
    let txs = w.extra["transactions"].as_array().expect("transactions");
    assert!(txs.len() >= 2);
    assert!(txs.iter().any(|t| t["block"] == true));
    assert_eq!(w.extra["edges"].as_array().map(Vec::len), Some(txs.len()));
    assert!(
        w.message
            .starts_with("cycle in the transactional happens-before graph")
    );
    // The last access is the operation that closed the cycle, at line 27.
    assert_eq!(w.accesses.last().and_then(|a| a.event), Some(27));
}
