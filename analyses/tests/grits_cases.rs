//! The synchronization-discipline cases of Wood's *Hominy Grits* (Williams College
//! 2008: Ch. 3–4, App. A and §6.2's EventSet imprecision), as STD traces run through
//! the `grits` pass offline: the inferred discipline of each variable, and the same
//! trace checked against its own spec (nothing to report) and against a spec it
//! leaves (a `discipline` warning at the right event).
//!
//! Threads `t, u, w, v` of the thesis are `T0, T1, T2, T3`.

use std::collections::BTreeMap;
use std::sync::Arc;

use analyses::ChainOptions;
use analyses::env::Env;
use analyses::offline::analyze;
use analyses::passes::grits::spec;
use analyses::report::WarningKind;
use analyses::trace::parse_std;

/// `LOCATION → DISCIPLINE` (alternatives joined with ` | `) inferred from `trace`.
fn infer(trace: &str) -> BTreeMap<String, String> {
    let t = parse_std(trace).expect("trace parses");
    let chain = analyze(&t, "grits", ChainOptions::default()).unwrap();
    let stats = chain.stats_json();
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for d in stats["passes"][0]["details"]["disciplines"]
        .as_array()
        .unwrap()
    {
        let loc = d["location"].as_str().unwrap().to_string();
        let disc = d["discipline"].as_str().unwrap().to_string();
        out.entry(loc)
            .and_modify(|s| {
                s.push_str(" | ");
                s.push_str(&disc)
            })
            .or_insert(disc);
    }
    out
}

/// The `discipline` warnings (location, 1-based event) of `trace` checked against
/// `spec_text`.
fn check(trace: &str, spec_text: &str) -> Vec<(String, u64)> {
    let t = parse_std(trace).expect("trace parses");
    let spec = spec::parse(spec_text).expect("spec parses");
    let options = ChainOptions {
        grits_spec: Some(Arc::new(spec)),
        ..ChainOptions::default()
    };
    let chain = analyze(&t, "grits", options).unwrap();
    chain
        .warnings()
        .iter()
        .filter(|r| r.warning.kind == WarningKind::Discipline)
        .map(|r| {
            let name = t.env.loc_name(r.warning.loc.unwrap()).name;
            (name, r.warning.event.unwrap_or(0))
        })
        .collect()
}

/// Lines `THREAD|OP` separated by `;` or newlines.
fn trace(src: &str) -> String {
    src.split([';', '\n'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Infer `x`'s discipline, compare it, and check the trace against what was inferred
/// (property 8: a run satisfies the spec inferred from it).
fn case(src: &str, expected: &str) {
    let tr = trace(src);
    let got = infer(&tr);
    assert_eq!(
        got.get("x").map(String::as_str),
        Some(expected),
        "trace:\n{tr}"
    );
    let text: String = got
        .iter()
        .map(|(l, d)| format!("{l}: {}\n", d.replace(" | ", &format!("\n{l}: "))))
        .collect();
    assert_eq!(check(&tr, &text), vec![], "own spec:\n{text}");
}

#[test]
fn c01_thread_local() {
    case(
        "T0|w(x); T0|r(x); T0|acq(m); T0|r(x); T0|rel(m); T1|acq(m); T1|rel(m)",
        "thread-local T0",
    );
}

#[test]
fn c02_guarded_by_with_the_lock_held_at_the_first_access() {
    case(
        "T0|acq(m); T0|r(x); T0|w(x); T0|rel(m);
         T1|acq(m); T1|r(x); T1|rel(m);
         T2|acq(m); T2|r(x); T2|rel(m)",
        "guarded-by {m}",
    );
}

#[test]
fn c03_volatile_hand_off() {
    case(
        "T0|w(x); T0|vw(y); T1|vr(y); T1|r(x); T1|vw(y); T2|vr(y); T2|r(x)",
        "thread-local T0; vol {y}",
    );
}

#[test]
fn c04_fork() {
    case(
        "T0|w(x); T0|fork(T1); T1|r(x)",
        "thread-local T0; fork {T0}",
    );
}

#[test]
fn c05_fig_4_1() {
    case(
        "T0|w(x); T0|fork(T1);
         T1|acq(m); T1|r(x); T1|w(x); T1|rel(m);
         T0|acq(m); T0|r(x); T0|w(x); T0|rel(m)",
        "thread-local T0; fork {T0}; guarded-by {m}",
    );
}

#[test]
fn c06_section_4_7() {
    case(
        "T0|w(x); T0|fork(T1);
         T1|acq(m); T1|r(x); T1|rel(m);
         T0|acq(m); T0|w(x); T0|rel(m);
         T1|acq(m); T1|r(x); T1|rel(m)",
        "thread-local T0; fork {T0}; guarded-by {m}",
    );
}

#[test]
fn c07_masking_by_a_longer_thread_local_run() {
    case(
        "T0|w(x); T0|fork(T1);
         T1|acq(m); T1|r(x); T1|w(x); T1|rel(m);
         T1|acq(m); T1|r(x); T1|w(x); T1|rel(m);
         T1|acq(m); T1|r(x); T1|w(x); T1|rel(m);
         T1|acq(m); T1|r(x); T1|w(x); T1|rel(m)",
        "thread-local T0; fork {T0}; guarded-by {m}",
    );
}

#[test]
fn c08_fig_3_3_compound() {
    case(
        "T0|w(x); T0|fork(T1);
         T1|acq(m); T1|r(x); T1|rel(m);
         T0|acq(m); T0|w(x); T0|rel(m);
         T1|acq(m); T1|r(x); T1|rel(m);
         T0|join(T1); T0|r(x); T0|w(x)",
        "thread-local T0; fork {T0}; guarded-by {m}; join {T1}",
    );
}

#[test]
fn c09_forklock() {
    // main writes; two workers each do field++ twice under lock; main joins, reads.
    let mut s = String::from("T0|w(x); T0|fork(T1); T0|fork(T2);");
    for t in ["T1", "T2", "T1", "T2"] {
        s += &format!("{t}|acq(lock); {t}|r(x); {t}|w(x); {t}|rel(lock);");
    }
    s += "T0|join(T1); T0|join(T2); T0|r(x)";
    case(
        &s,
        "thread-local T0; fork {T0}; guarded-by {lock}; join {T2}",
    );
}

#[test]
fn c10_changelocks() {
    // x++ under m, barrier-- on a volatile, spin until 0, x++ under n.
    let mut s = String::from("T0|w(x); T0|vw(barrier); T0|fork(T1); T0|fork(T2); T0|fork(T3);");
    for t in ["T1", "T2", "T3"] {
        s += &format!(
            "{t}|acq(m); {t}|r(x); {t}|w(x); {t}|rel(m); {t}|vr(barrier); {t}|vw(barrier);"
        );
    }
    for t in ["T2", "T1", "T3"] {
        s += &format!("{t}|vr(barrier); {t}|acq(n); {t}|r(x); {t}|w(x); {t}|rel(n);");
    }
    case(
        &s,
        "thread-local T0; fork {T0}; guarded-by {m}; vol {barrier}; guarded-by {n}",
    );
}

#[test]
fn c11_syncobject() {
    // five threads call a synchronized f() on one object: x++ under the object's lock.
    let mut s = String::from("T0|w(x);");
    for i in 1..=5 {
        s += &format!("T0|fork(T{i});");
    }
    for i in [3, 1, 5, 2, 4] {
        s += &format!("T{i}|acq(so); T{i}|r(x); T{i}|w(x); T{i}|rel(so);");
    }
    case(&s, "thread-local T0; fork {T0}; guarded-by {so}");
}

#[test]
fn c12_readshared_serial_and_shuffled() {
    let head = "T0|w(x); T0|fork(T1); T0|fork(T2); T0|fork(T3);";
    let tail = "T0|join(T1); T0|join(T2); T0|join(T3); T0|r(x); T0|w(x); T0|r(x)";
    let serial: String = ["T1", "T2", "T3"]
        .iter()
        .flat_map(|t| (0..3).map(move |_| format!("{t}|r(x);")))
        .collect();
    let shuffled: String = ["T2", "T1", "T3", "T1", "T3", "T2", "T3", "T2", "T1"]
        .iter()
        .map(|t| format!("{t}|r(x);"))
        .collect();
    for reads in [serial, shuffled] {
        case(
            &format!("{head}{reads}{tail}"),
            "thread-local T0; fork {T0}; read-shared; join {T1,T2,T3}",
        );
    }
}

#[test]
fn c13_bank_fig_2_1_as_a_trace() {
    // transactions: read-modify-write by two threads, no synchronization;
    // checking: set up by T1, handed off through the volatile setupBarrier;
    // savings: every access under the lock `account`.
    let tr = trace(
        "T1|w(checking); T1|vw(setupBarrier);
         T1|acq(account); T1|r(savings); T1|w(savings); T1|rel(account);
         T1|r(transactions); T1|w(transactions);
         T2|vr(setupBarrier); T2|r(checking); T2|w(checking);
         T2|acq(account); T2|r(savings); T2|w(savings); T2|rel(account);
         T2|r(transactions); T2|w(transactions)",
    );
    let got = infer(&tr);
    assert_eq!(got["transactions"], "race");
    assert_eq!(got["checking"], "thread-local T1; vol {setupBarrier}");
    assert_eq!(got["savings"], "guarded-by {account}");
}

#[test]
fn c14_exact_order_sets_not_event_sets() {
    case(
        "T0|w(x); T0|acq(m); T0|rel(m);
         T1|acq(m); T1|rel(m);
         T0|fork(T2);
         T2|acq(m); T2|rel(m);
         T1|r(x)",
        "thread-local T0; guarded-by {m}",
    );
}

#[test]
fn c15_hand_off_rule() {
    case(
        "T1|w(x); T1|vw(flag);
         T2|vr(flag); T2|r(x);
         T2|acq(k); T2|r(x); T2|w(x); T2|rel(k);
         T2|acq(k); T2|r(x); T2|w(x); T2|rel(k)",
        "thread-local T1; vol {flag}; guarded-by {k}",
    );
}

#[test]
fn c16_one_thread_under_a_lock() {
    case(
        "T0|acq(m); T0|w(x); T0|rel(m); T0|acq(m); T0|r(x); T0|rel(m)",
        "guarded-by {m}",
    );
    case(
        "T0|w(x); T0|acq(m); T0|w(x); T0|rel(m); T0|acq(m); T0|r(x); T0|rel(m)",
        "thread-local T0",
    );
}

#[test]
fn c17_race_gets_no_discipline() {
    let tr = trace("T0|w(x); T1|w(x); T0|w(x); T1|r(x)");
    assert_eq!(infer(&tr)["x"], "race");
    // A spec that calls it `race` is not checked; any other spec is left at once.
    assert_eq!(check(&tr, "x: race\n"), vec![]);
    assert_eq!(
        check(&tr, "x: thread-local T0\n"),
        vec![("x".to_string(), 2)]
    );
}

#[test]
fn deviations_are_reported_at_the_access_that_leaves_the_spec() {
    // guarded-by m, but the third hand-off goes through lock n: no race, still a
    // deviation (a race waiting for another schedule).
    let tr = trace(
        "T0|acq(m); T0|w(x); T0|rel(m);
         T1|acq(m); T1|r(x); T1|rel(m);
         T1|acq(n); T1|w(x); T1|rel(n);
         T2|acq(n); T2|r(x); T2|rel(n)",
    );
    assert_eq!(
        check(&tr, "x: guarded-by {m}\n"),
        vec![("x".to_string(), 11)]
    );
    assert_eq!(check(&tr, "x: guarded-by {m}; guarded-by {n}\n"), vec![]);
    // The first access counts the locks held at it: under m, not n.
    assert_eq!(
        check(&tr, "x: guarded-by {n}\ny: guarded-by {n}\n"),
        vec![("x".to_string(), 2)]
    );
    // A thread-local segment may not start at a hand-off through a lock.
    assert_eq!(
        check(&tr, "x: thread-local T0; thread-local T1; guarded-by {n}\n"),
        vec![("x".to_string(), 5)]
    );
    // read-shared rejects the write that turns the read into read-modify-write.
    let rs = trace("T0|w(x); T0|fork(T1); T0|fork(T2); T1|r(x); T2|r(x); T2|w(x)");
    assert_eq!(
        check(&rs, "x: thread-local T0; fork {T0}; read-shared\n"),
        vec![("x".to_string(), 6)]
    );
}
