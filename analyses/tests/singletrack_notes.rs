//! Test traces for SingleTrack's two properties (Sadowski, Freund & Flanagan, ESOP'09
//! §2), each with its stated verdict for
//! conflict freedom (CF) and external serializability (XS), checked on the
//! `singletrack` pass and on the brute-force oracles.
//!
//! Notation of the notes → STD: `B0`/`E0` = `T0|begin(det)`/`T0|end(det)`, `F(0,1)` =
//! `T0|fork(T1)`, `J(0,1)` = `T0|join(T1)`, `S1` = `T1|tend`, `wr0x` = `T0|w(x)`,
//! `acq0m` = `T0|acq(m)`. Event numbers are line numbers.

use analyses::offline::analyze;
use analyses::report::{Reported, WarningKind};
use analyses::testing::oracle_singletrack::{conflicts, serializability_first_violation};
use analyses::trace::parse_std;

#[derive(Debug, PartialEq, Eq)]
enum Cf {
    Ok,
    /// A conflict detected at this line.
    Err(u64),
}

/// The trace with each line's number as its location (so sites differ, as in RAPID's
/// traces, and the reporter does not fold distinct warnings).
fn lines(trace: &[&str]) -> String {
    trace
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{l}|{}\n", i + 1))
        .collect()
}

fn warnings(text: &str, tools: &str) -> Vec<Reported> {
    let trace = parse_std(text).expect("a well-formed trace");
    analyze(&trace, tools, Default::default())
        .expect("a known chain")
        .warnings()
}

/// Check the pass and the oracles; return the pass's warnings.
fn check(trace: &[&str], cf: Cf, xs: bool) -> Vec<Reported> {
    let text = lines(trace);
    let ws = warnings(&text, "singletrack");
    let conflict_lines: Vec<u64> = ws
        .iter()
        .filter(|r| r.warning.kind == WarningKind::Conflict)
        .filter_map(|r| r.warning.event)
        .collect();
    let cycles: Vec<&Reported> = ws
        .iter()
        .filter(|r| r.warning.kind == WarningKind::Serializability)
        .collect();
    match cf {
        Cf::Ok => assert!(conflict_lines.is_empty(), "unexpected conflicts: {ws:#?}"),
        Cf::Err(line) => assert_eq!(conflict_lines.first(), Some(&line), "{ws:#?}"),
    }
    assert_eq!(!cycles.is_empty(), xs, "{ws:#?}");
    // The oracles, from the definitions.
    let events = parse_std(&text).unwrap().events;
    assert_eq!(conflicts(&events).is_empty(), cf == Cf::Ok, "CF oracle");
    let first = serializability_first_violation(&events);
    assert_eq!(first.is_some(), xs, "XS oracle");
    assert_eq!(
        first,
        cycles.first().and_then(|r| r.warning.event),
        "first cycle event"
    );
    ws
}

#[test]
fn c1_fork_join_ordering() {
    check(
        &[
            "T0|begin(det)",
            "T0|w(x)",
            "T0|fork(T1)",
            "T1|r(x)",
            "T1|w(y)",
            "T1|tend",
            "T0|join(T1)",
            "T0|r(y)",
            "T0|w(x)",
            "T0|end(det)",
        ],
        Cf::Ok,
        false,
    );
}

#[test]
fn c2_parent_writes_after_fork() {
    let ws = check(
        &["T0|begin(det)", "T0|fork(T1)", "T0|w(x)", "T1|w(x)"],
        Cf::Err(4),
        false,
    );
    let w = &ws[0].warning;
    assert_eq!(w.accesses.len(), 2);
    assert_eq!(
        (w.accesses[0].op.as_str(), w.accesses[0].event),
        ("write", Some(3))
    );
    assert_eq!(
        (w.accesses[1].op.as_str(), w.accesses[1].event),
        ("write", Some(4))
    );
    assert!(w.loc.is_some());
}

#[test]
fn c3_read_then_concurrent_write() {
    check(
        &["T0|begin(det)", "T0|fork(T1)", "T1|r(x)", "T0|w(x)"],
        Cf::Err(4),
        false,
    );
}

#[test]
fn c4_write_then_concurrent_read() {
    check(
        &["T0|begin(det)", "T0|fork(T1)", "T1|w(x)", "T0|r(x)"],
        Cf::Err(4),
        false,
    );
}

#[test]
fn c5_mutual_exclusion_is_still_a_conflict() {
    let ws = check(
        &[
            "T0|begin(det)",
            "T0|fork(T1)",
            "T1|acq(m)",
            "T1|w(c)",
            "T1|rel(m)",
            "T0|acq(m)",
            "T0|r(c)",
            "T0|rel(m)",
        ],
        Cf::Err(6),
        false,
    );
    // The lock conflict at acq0m, then the write→read on c.
    let lines: Vec<Option<u64>> = ws.iter().map(|r| r.warning.event).collect();
    assert_eq!(lines, vec![Some(6), Some(7)]);
    assert!(ws[0].warning.loc.is_none() && ws[0].warning.message.contains("lock"));
}

#[test]
fn c6_concurrent_reads_are_fine() {
    check(
        &[
            "T0|begin(det)",
            "T0|fork(T1)",
            "T0|r(x)",
            "T1|r(x)",
            "T1|tend",
            "T0|join(T1)",
            "T0|end(det)",
        ],
        Cf::Ok,
        false,
    );
}

#[test]
fn c7_disjoint_array_cells() {
    check(
        &[
            "T0|begin(det)",
            "T0|fork(T1)",
            "T0|fork(T2)",
            "T1|w(a0)",
            "T2|w(a1)",
            "T1|tend",
            "T2|tend",
            "T0|join(T1)",
            "T0|join(T2)",
            "T0|r(a0)",
            "T0|r(a1)",
            "T0|end(det)",
        ],
        Cf::Ok,
        false,
    );
}

#[test]
fn c8_sibling_conflict() {
    check(
        &[
            "T0|begin(det)",
            "T0|fork(T1)",
            "T0|fork(T2)",
            "T1|w(a0)",
            "T2|w(a0)",
        ],
        Cf::Err(5),
        false,
    );
}

/// The trace the paper's clock reset at `begin` misses: with `vc[0] := {0:1}` at B0, the
/// child T3 inherits `{0:1}`, T0's write is at `{0:2}`, and J(3,2) hands T3 the stale
/// `{0:2}` that T2 got when it was forked before the block — so T3's write looks
/// ordered after T0's. Monotonic clocks (`begin` ticks) keep them unordered.
#[test]
fn c9_paper_reset_misses_this() {
    check(
        &[
            "T0|fork(T1)",
            "T0|fork(T2)",
            "T1|tend",
            "T2|tend",
            "T0|begin(det)",
            "T0|fork(T3)",
            "T0|w(x)",
            "T3|join(T2)",
            "T3|w(x)",
        ],
        Cf::Err(9),
        false,
    );
}

#[test]
fn c10_lock_shared_between_transactions() {
    check(
        &[
            "T0|fork(T1)",
            "T0|begin(det)",
            "T0|acq(m)",
            "T0|rel(m)",
            "T0|end(det)",
            "T1|begin(det)",
            "T1|acq(m)",
            "T1|rel(m)",
            "T1|end(det)",
        ],
        Cf::Ok,
        false,
    );
}

#[test]
fn x1_classic_atomicity_violation() {
    let ws = check(
        &[
            "T0|fork(T1)",
            "T0|begin(det)",
            "T0|r(x)",
            "T1|w(x)",
            "T0|w(x)",
            "T0|end(det)",
        ],
        Cf::Ok,
        true,
    );
    let w = &ws[0].warning;
    assert_eq!(w.event, Some(5));
    let txs = w.extra["transactions"].as_array().unwrap();
    assert_eq!(txs.len(), 2);
    assert!(txs.iter().any(|t| t["block"] == true && t["event"] == 2));
    assert!(txs.iter().any(|t| t["block"] == false && t["event"] == 4));
}

#[test]
fn x2_fork_inside_is_part_of_the_transaction() {
    check(
        &[
            "T9|fork(T0)",
            "T0|begin(det)",
            "T0|fork(T1)",
            "T1|w(a)",
            "T1|tend",
            "T0|join(T1)",
            "T0|end(det)",
            "T9|r(a)",
        ],
        Cf::Ok,
        false,
    );
    // Velodrome's view (the child is outside the atomic block) has a cycle.
    let atomic = lines(&[
        "T9|fork(T0)",
        "T0|begin",
        "T0|fork(T1)",
        "T1|w(a)",
        "T1|tend",
        "T0|join(T1)",
        "T0|end",
        "T9|r(a)",
    ]);
    let ws = warnings(&atomic, "atomicity");
    assert_eq!(ws.len(), 1);
    assert_eq!(ws[0].warning.kind, WarningKind::Atomicity);
    assert_eq!(ws[0].warning.event, Some(6));
}

#[test]
fn x3_child_leaks_past_the_end() {
    let ws = check(
        &[
            "T0|begin(det)",
            "T0|fork(T1)",
            "T0|end(det)",
            "T0|begin(det)",
            "T0|w(x)",
            "T1|r(x)",
        ],
        Cf::Ok,
        true,
    );
    // A → B (program order) → A (T1 still runs in A): both blocks on the cycle.
    let txs = ws[0].warning.extra["transactions"].as_array().unwrap();
    let begins: Vec<u64> = txs.iter().map(|t| t["event"].as_u64().unwrap()).collect();
    assert_eq!(begins.len(), 2);
    assert!(begins.contains(&1) && begins.contains(&4));
}

#[test]
fn x4_concurrent_transactions_on_disjoint_data() {
    check(
        &[
            "T0|fork(T1)",
            "T0|begin(det)",
            "T1|begin(det)",
            "T0|w(x)",
            "T1|w(y)",
            "T0|r(x)",
            "T0|end(det)",
            "T1|end(det)",
        ],
        Cf::Ok,
        false,
    );
}

#[test]
fn x5_lock_serializes_callers() {
    check(
        &[
            "T0|fork(T1)",
            "T0|begin(det)",
            "T0|acq(a)",
            "T0|r(a0)",
            "T0|w(a0)",
            "T0|rel(a)",
            "T0|end(det)",
            "T1|begin(det)",
            "T1|acq(a)",
            "T1|r(a0)",
            "T1|w(a0)",
            "T1|rel(a)",
            "T1|end(det)",
        ],
        Cf::Ok,
        false,
    );
}

#[test]
fn x5b_interleaved_without_the_lock() {
    check(
        &[
            "T0|fork(T1)",
            "T0|begin(det)",
            "T1|begin(det)",
            "T0|w(a0)",
            "T1|r(a0)",
            "T1|w(a1)",
            "T0|r(a1)",
            "T0|end(det)",
            "T1|end(det)",
        ],
        Cf::Ok,
        true,
    );
}

#[test]
fn x6_barrier_across_transactions() {
    check(
        &[
            "T0|fork(T1)",
            "T0|begin(det)",
            "T1|begin(det)",
            "T0|bar_enter(b,0,2)",
            "T1|bar_enter(b,0,2)",
            "T0|bar_exit(b,0,2)",
            "T1|bar_exit(b,0,2)",
            "T0|w(x)",
            "T0|end(det)",
            "T1|end(det)",
        ],
        Cf::Ok,
        true,
    );
}

/// Fig. 2a: a deterministic main with a barrier-phased computation: no warning; without
/// the second barrier the next phase's reads race with the writes.
#[test]
fn barrier_phases_inside_one_transaction() {
    let mut t = vec![
        "T0|begin(det)",
        "T0|fork(T1)",
        "T0|r(a1)",
        "T1|r(a0)",
        "T0|bar_enter(b,0,2)",
        "T1|bar_enter(b,0,2)",
        "T1|bar_exit(b,0,2)",
        "T0|bar_exit(b,0,2)",
        "T0|w(a0)",
        "T1|w(a1)",
        "T1|bar_enter(b,1,2)",
        "T0|bar_enter(b,1,2)",
        "T0|bar_exit(b,1,2)",
        "T1|bar_exit(b,1,2)",
        "T0|r(a1)",
        "T1|r(a0)",
    ];
    check(&t, Cf::Ok, false);
    t.drain(10..14);
    check(&t, Cf::Err(11), false);
}

/// Nested blocks: a forked child calling a deterministic method stays in its parent's
/// transaction; the inner `end` closes nothing.
#[test]
fn nested_blocks_share_the_outer_transaction() {
    check(
        &[
            "T0|begin(det)",
            "T0|fork(T1)",
            "T1|begin(det)",
            "T1|w(x)",
            "T1|end(det)",
            "T1|tend",
            "T0|begin(det)",
            "T0|join(T1)",
            "T0|end(det)",
            "T0|w(x)",
            "T0|end(det)",
        ],
        Cf::Ok,
        false,
    );
}
