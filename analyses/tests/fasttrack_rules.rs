//! FastTrack's FT2 rules (Rhodes's thesis §1.5), one small trace per rule: which
//! rule fired (the pass's statistics) and the verdict (checked against `hb` too). The
//! synchronization rules are the chain's clock service: each has a trace here.

use analyses::ChainOptions;
use analyses::offline::analyze;
use analyses::testing::flagged;
use analyses::trace::parse_std;

/// Run `fasttrack:hb` on `src` (one `THREAD|OP` per line; the location column is the
/// line number). Returns the FastTrack statistics and its flagged events of `x`.
fn run(src: &str) -> (serde_json::Value, Vec<u64>) {
    let text: String = src
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(i, l)| format!("{l}|{}\n", i + 1))
        .collect();
    let trace = parse_std(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let chain = analyze(&trace, "fasttrack:hb", ChainOptions::default()).unwrap();
    let ft = flagged(&chain, "fasttrack");
    let hb = flagged(&chain, "hb");
    // First race per location agrees with the oracle.
    let first = |m: &std::collections::BTreeMap<String, std::collections::BTreeSet<u64>>| {
        m.iter()
            .map(|(k, v)| (k.clone(), *v.first().unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(first(&ft), first(&hb), "{text}");
    let stats = chain.stats_json();
    let d = stats["passes"][0]["details"].clone();
    let x = ft
        .get("x")
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default();
    (d, x)
}

fn fired(d: &serde_json::Value, rule: &str) -> u64 {
    d[rule]
        .as_u64()
        .unwrap_or_else(|| panic!("no rule {rule} in {d}"))
}

#[test]
fn read_same_epoch() {
    let (d, races) = run("M|r(x)\nM|r(x)");
    assert_eq!(
        (fired(&d, "read_exclusive"), fired(&d, "read_same_epoch")),
        (1, 1)
    );
    assert!(races.is_empty());
}

#[test]
fn read_exclusive_when_ordered() {
    let (d, races) = run("M|r(x)\nM|fork(T1)\nT1|r(x)");
    assert_eq!(fired(&d, "read_exclusive"), 2);
    assert_eq!(fired(&d, "read_share"), 0);
    assert!(races.is_empty());
}

#[test]
fn read_share_and_read_shared() {
    let (d, races) = run("M|fork(T1)\nM|fork(T2)\nM|r(x)\nT1|r(x)\nT2|r(x)");
    assert_eq!(fired(&d, "read_share"), 1);
    assert_eq!(fired(&d, "read_shared"), 1);
    assert_eq!(d["read_shared_locations"], 1);
    assert!(races.is_empty(), "read-read is no race");
}

#[test]
fn read_shared_same_epoch() {
    let (d, _) = run("M|fork(T1)\nM|r(x)\nT1|r(x)\nT1|r(x)");
    assert_eq!(fired(&d, "read_shared_same_epoch"), 1);
}

#[test]
fn write_same_epoch_and_exclusive() {
    let (d, races) = run("M|w(x)\nM|w(x)\nM|fork(T1)\nT1|w(x)");
    assert_eq!(fired(&d, "write_same_epoch"), 1);
    assert_eq!(fired(&d, "write_exclusive"), 2);
    assert!(races.is_empty());
}

#[test]
fn write_shared_keeps_the_read_vector() {
    // FT2: a write after READ_SHARED reads keeps the vector (FT1 would reset it).
    let (d, races) = run("M|fork(T1)\nM|r(x)\nT1|r(x)\nM|join(T1)\nM|w(x)");
    assert_eq!(fired(&d, "write_shared"), 1);
    assert_eq!(d["read_shared_locations"], 1);
    assert!(races.is_empty());
}

#[test]
fn write_read_race() {
    let (_, races) = run("M|fork(T1)\nM|w(x)\nT1|r(x)");
    assert_eq!(races, vec![3]);
}

#[test]
fn write_write_race() {
    let (_, races) = run("M|fork(T1)\nT1|w(x)\nM|w(x)");
    assert_eq!(races, vec![3]);
}

#[test]
fn read_write_race_on_an_epoch() {
    let (_, races) = run("M|fork(T1)\nT1|r(x)\nM|w(x)");
    assert_eq!(races, vec![3]);
}

#[test]
fn shared_read_write_race_names_every_unordered_reader() {
    let text = "M|fork(T1)\nM|fork(T2)\nM|r(x)\nT1|r(x)\nT2|w(x)|5\n";
    let numbered: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if l.matches('|').count() == 2 {
                format!("{l}\n")
            } else {
                format!("{l}|{}\n", i + 1)
            }
        })
        .collect();
    let chain = analyze(
        &parse_std(&numbered).unwrap(),
        "fasttrack",
        ChainOptions::default(),
    )
    .unwrap();
    let w = chain.warnings();
    assert_eq!(w.len(), 2, "one warning per concurrent reader");
    let prev: Vec<u64> = w
        .iter()
        .map(|r| r.warning.accesses[0].event.unwrap())
        .collect();
    assert_eq!(prev, vec![3, 4]);
    assert!(w.iter().all(|r| r.warning.event == Some(5)));
}

// The synchronization rules, applied by the clock service.

#[test]
fn acquire_release() {
    let (_, ok) = run("M|fork(T1)\nM|acq(L)\nM|w(x)\nM|rel(L)\nT1|acq(L)\nT1|w(x)\nT1|rel(L)");
    assert!(ok.is_empty());
    let (_, racy) = run("M|fork(T1)\nM|acq(L)\nM|w(x)\nM|rel(L)\nT1|acq(K)\nT1|w(x)\nT1|rel(K)");
    assert_eq!(racy, vec![6]);
}

#[test]
fn fork_and_join() {
    let (_, ok) = run("M|w(x)\nM|fork(T1)\nT1|w(x)\nM|join(T1)\nM|w(x)");
    assert!(ok.is_empty());
    let (_, racy) = run("M|fork(T1)\nT1|w(x)\nM|w(x)\nM|join(T1)");
    assert_eq!(racy, vec![3]);
}

#[test]
fn volatile_write_then_read() {
    let (_, ok) = run("M|fork(T1)\nM|w(x)\nM|vw(f)\nT1|vr(f)\nT1|r(x)");
    assert!(ok.is_empty());
    // A volatile write → write gives no edge.
    let (_, racy) = run("M|fork(T1)\nM|w(x)\nM|vw(f)\nT1|vw(f)\nT1|r(x)");
    assert_eq!(racy, vec![5]);
    // A later write of the volatile does not hide the earlier one (G7d).
    let (_, ok) = run("M|fork(T1)\nM|fork(T2)\nM|w(x)\nM|vw(f)\nT2|vw(f)\nT1|vr(f)\nT1|r(x)");
    assert!(ok.is_empty());
}

#[test]
fn wait_is_release_then_acquire() {
    // T1 waits on m (rel, later acq); M writes under m and notifies.
    let (_, ok) = run(
        "M|fork(T1)\nT1|acq(m)\nT1|rel(m)\nM|acq(m)\nM|w(x)\nM|rel(m)\nT1|acq(m)\nT1|r(x)\nT1|rel(m)",
    );
    assert!(ok.is_empty());
}

#[test]
fn barrier_orders_phases() {
    let (_, ok) = run(
        "M|fork(T1)\nM|w(x)\nM|bar_enter(B,0,2)\nT1|bar_enter(B,0,2)\nT1|bar_exit(B,0,2)\n\
         T1|r(x)\nM|bar_exit(B,0,2)",
    );
    assert!(ok.is_empty());
    // After the barrier both threads are concurrent again.
    let (_, racy) = run(
        "M|fork(T1)\nM|bar_enter(B,0,2)\nT1|bar_enter(B,0,2)\nT1|bar_exit(B,0,2)\n\
         T1|w(x)\nM|bar_exit(B,0,2)\nM|w(x)",
    );
    assert_eq!(racy, vec![7]);
    // Episodes are separate: arriving at episode 1 does not order episode 0's writes
    // of a thread that has not arrived yet.
    let (_, racy) = run(
        "M|fork(T1)\nM|fork(T2)\nM|bar_enter(B,0,2)\nT1|bar_enter(B,0,2)\nT1|bar_exit(B,0,2)\n\
         M|bar_exit(B,0,2)\nT2|w(x)\nM|bar_enter(B,1,2)\nT1|bar_enter(B,1,2)\n\
         T1|bar_exit(B,1,2)\nT1|r(x)\nM|bar_exit(B,1,2)",
    );
    assert_eq!(racy, vec![11]);
}
