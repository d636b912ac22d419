//! Test traces G1–G24 for the rules of Goldilocks (Elmas, Qadeer & Tasiran,
//! MSR-TR-2006-163 §3–4) and the Fig. 3 fix, run through every precise
//! detector and the `hb` oracle (RW mode) and through Goldilocks in TR mode.
//!
//! Notation: one `THREAD|OP` per line (the location column is added: the line number).
//! A line starting with `!` is the first race on its variable in RW mode (every
//! precise detector and `hb`), `%` the first race in TR mode (Goldilocks,
//! `goldilocks_tr_mode`); `!%` both.

use std::collections::BTreeMap;

use analyses::ChainOptions;
use analyses::offline::analyze;
use analyses::testing::{first_flagged, flagged};
use analyses::trace::{Trace, parse_std};

struct Case {
    name: &'static str,
    text: String,
    rw: BTreeMap<String, u64>,
    tr: BTreeMap<String, u64>,
}

fn var_of(op: &str) -> String {
    let inner = &op[op.find('(').unwrap() + 1..op.rfind(')').unwrap()];
    inner.split(',').next().unwrap().to_string()
}

fn case(name: &'static str, src: &str) -> Case {
    let mut text = String::new();
    let mut rw = BTreeMap::new();
    let mut tr = BTreeMap::new();
    for (i, raw) in src
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        let n = i as u64 + 1;
        let mut line = raw;
        let (mut in_rw, mut in_tr) = (false, false);
        while let Some(c) = line.chars().next().filter(|c| *c == '!' || *c == '%') {
            if c == '!' {
                in_rw = true;
            } else {
                in_tr = true;
            }
            line = &line[1..];
        }
        if in_rw {
            rw.insert(var_of(line), n);
        }
        if in_tr {
            tr.insert(var_of(line), n);
        }
        text.push_str(&format!("{line}|{n}\n"));
    }
    Case { name, text, rw, tr }
}

fn repeat(line: &str, n: usize) -> String {
    (0..n).map(|_| format!("{line}\n")).collect()
}

fn cases() -> Vec<Case> {
    let pairs = repeat("T3|acq(K)\nT3|rel(K)", 1000);
    vec![
        case("G1", "M|fork(T1)\nM|fork(T2)\nT1|w(x)\n!%T2|w(x)"),
        case(
            "G2",
            "M|fork(T1)\nM|fork(T2)\nT1|acq(L)\nT1|w(x)\nT1|rel(L)\nT2|acq(L)\nT2|w(x)\nT2|rel(L)",
        ),
        case(
            "G3",
            "M|fork(T1)\nM|fork(T2)\nT1|acq(L)\nT1|w(x)\nT1|rel(L)\nT2|acq(L2)\n!%T2|w(x)\nT2|rel(L2)",
        ),
        case(
            "G4",
            "M|fork(T1)\nM|fork(T2)\nT2|acq(L)\nT2|rel(L)\nT1|acq(L)\nT1|w(x)\nT1|rel(L)\n!%T2|w(x)",
        ),
        case("G5", "M|w(x)\nM|fork(T1)\nT1|w(x)"),
        case("G5b", "M|fork(T1)\nM|w(x)\n!%T1|w(x)"),
        case("G5c", "M|fork(T1)\nT1|w(x)\n!%M|w(x)"),
        case("G6", "M|fork(T1)\nT1|w(x)\nM|join(T1)\nM|r(x)"),
        case(
            "G6b",
            "M|fork(T1)\nM|fork(T2)\nT1|w(x)\nM|join(T2)\n!%M|r(x)",
        ),
        case(
            "G6c",
            "M|fork(T1)\nT1|w(x)\nM|join(T1)\nM|fork(T3)\nT3|w(x)",
        ),
        case(
            "G7",
            "M|fork(T1)\nM|fork(T2)\nT1|w(x)\nT1|vw(f)\nT2|vr(f)\nT2|r(x)",
        ),
        case(
            "G7b",
            "M|fork(T1)\nM|fork(T2)\nT2|vr(f)\nT1|w(x)\nT1|vw(f)\n!%T2|r(x)",
        ),
        case(
            "G7c",
            "M|fork(T1)\nM|fork(T2)\nT1|w(x)\nT1|vw(f)\nT2|vw(f)\n!%T2|w(x)",
        ),
        case(
            "G7d",
            "M|fork(T1)\nM|fork(T2)\nM|fork(T3)\nT1|w(x)\nT1|vw(f)\nT3|vw(f)\nT2|vr(f)\nT2|r(x)",
        ),
        case(
            "G8",
            "M|fork(T1)\nM|fork(T2)\nM|fork(T3)\nT1|acq(L)\nT1|w(x)\nT1|rel(L)\nT2|acq(L)\n\
             T2|vw(f)\nT2|rel(L)\nT3|vr(f)\nT3|w(x)",
        ),
        case(
            "G9",
            "M|fork(T1)\nM|fork(T2)\nM|fork(T3)\nT1|w(x)\nT2|acq(L)\nT2|rel(L)\nT3|acq(L)\n!%T3|w(x)",
        ),
        case(
            "G10",
            "M|fork(T1)\nM|fork(T2)\nT1|w(x)\nT1|acq(L)\nT1|w(y)\nT1|rel(L)\nT2|acq(L)\nT2|r(y)\n\
             T2|rel(L)\nT2|w(x)",
        ),
        case(
            "G11",
            "M|alloc(o1)\nM|alloc(o2)\nM|w(a,o1)\nM|w(b,o2)\nM|fork(T1)\nM|fork(T2)\nM|fork(T3)\n\
             T1|acq(L1)\nT1|r(a)\nT1|r(o1.x)\nT1|w(o1.x)\nT1|rel(L1)\n\
             T2|acq(L1)\nT2|acq(L2)\nT2|r(a)\nT2|r(b)\nT2|w(a,o2)\nT2|w(b,o1)\nT2|rel(L1)\nT2|rel(L2)\n\
             T3|acq(L2)\nT3|r(b)\nT3|r(o1.x)\nT3|w(o1.x)\nT3|rel(L2)",
        ),
        case(
            "G12",
            "M|fork(T1)\nM|fork(T2)\nT1|alloc(task)\nT1|w(task.subTasks)\nT1|w(task.out)\n\
             T1|acq(Q)\nT1|w(tq)\nT1|rel(Q)\nT2|acq(Q)\nT2|r(tq)\nT2|rel(Q)\nT2|fork(S0)\n\
             T2|fork(S1)\nS0|r(task.subTasks)\nS0|acq(TL)\nS0|r(task.out)\nS0|w(task.out)\n\
             S0|rel(TL)\n%S1|r(task.subTasks)\nS1|acq(TL)\nS1|r(task.out)\nS1|w(task.out)\n\
             S1|rel(TL)\nT2|join(S0)\nT2|join(S1)\nT2|r(task.out)",
        ),
        case(
            "G13",
            "M|fork(T1)\nM|fork(T2)\nT1|acq(L)\nT1|w(x)\nT1|rel(L)\nT1|w(x)\nT2|acq(L)\n!%T2|w(x)\nT2|rel(L)",
        ),
        case("G14", "M|fork(T1)\nT1|w(x)\nT1|r(x)\nT1|w(x)"),
        case("G15", "M|w(x)\nM|fork(T1)\nM|fork(T2)\nT1|r(x)\n%T2|r(x)"),
        case(
            "G15b",
            "M|w(x)\nM|fork(T1)\nM|fork(T2)\nT1|r(x)\n%T2|r(x)\nM|join(T1)\nM|join(T2)\nM|w(x)",
        ),
        case(
            "G15c",
            "M|w(x)\nM|fork(T1)\nM|fork(T2)\nT1|r(x)\n%T2|r(x)\nM|join(T1)\n!M|w(x)",
        ),
        case(
            "G16",
            "M|fork(T1)\nT1|w(x)\nT1|fork(T2)\nT2|fork(T3)\nT3|w(x)",
        ),
        case(
            "G17",
            "M|fork(T2)\nM|w(x)\nM|fork(T1)\nT1|acq(L)\nT1|rel(L)\nT2|acq(L)\nT2|r(x)",
        ),
        case(
            "G18",
            "M|fork(T1)\nM|fork(T2)\nT2|acq(m)\nT2|rel(m)\nT1|acq(m)\nT1|w(x)\nT1|rel(m)\n\
             T2|acq(m)\nT2|r(x)\nT2|rel(m)",
        ),
        // G19 (reentrant): the event model carries outermost acquires only, so the
        // trace is the outer pair.
        case(
            "G19",
            "M|fork(T1)\nM|fork(T2)\nT1|acq(L)\nT1|w(x)\nT1|rel(L)\nT2|acq(L)\nT2|w(x)",
        ),
        case(
            "G20",
            "M|alloc(o)\nM|w(g,o)\nM|fork(T1)\nM|fork(T2)\nT1|r(g)\nT1|w(o.f)\n%T2|r(g)\n!%T2|w(o.f)",
        ),
        case(
            "G21",
            "M|fork(T1)\nM|fork(T2)\nT1|w(x)\nM|join(T2)\n!%M|w(x)",
        ),
        case(
            "G22",
            &format!(
                "M|fork(T1)\nM|fork(T2)\nM|fork(T3)\nT1|acq(L)\nT1|w(x)\n{pairs}T1|rel(L)\n\
                 T2|acq(L)\nT2|rel(L)\n{pairs}T2|r(x)"
            ),
        ),
        case(
            "G23",
            "M|fork(T1)\nM|fork(T2)\nM|fork(T3)\nT1|w(x)\n!%T2|w(x)\nT2|acq(L)\nT2|rel(L)\n\
             T3|acq(L)\nT3|w(x)",
        ),
        case(
            "G24",
            "M|fork(T3)\nM|w(y)\nM|fork(T4)\nT3|join(T4)\nT3|w(y)",
        ),
    ]
}

fn parse(c: &Case) -> Trace {
    parse_std(&c.text).unwrap_or_else(|e| panic!("{}:{e}\n{}", c.name, c.text))
}

#[test]
fn rw_mode_verdicts_of_every_precise_detector() {
    for c in cases() {
        let chain = analyze(
            &parse(&c),
            "fasttrack:djit:goldilocks:hb",
            ChainOptions::default(),
        )
        .unwrap();
        for tool in ["fasttrack", "djit", "goldilocks", "hb"] {
            assert_eq!(first_flagged(&chain, tool), c.rw, "{} {tool}", c.name);
        }
    }
}

#[test]
fn tr_mode_verdicts_of_goldilocks() {
    for c in cases() {
        let options = ChainOptions {
            goldilocks_tr_mode: true,
            ..ChainOptions::default()
        };
        let chain = analyze(&parse(&c), "goldilocks", options).unwrap();
        assert_eq!(first_flagged(&chain, "goldilocks"), c.tr, "{}", c.name);
    }
}

fn details(chain: &analyses::Chain, tool: &str) -> serde_json::Value {
    let stats = chain.stats_json();
    stats["passes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == tool)
        .unwrap()["details"]
        .clone()
}

#[test]
fn g15_counts_and_g23_divergence_after_the_first_race() {
    let all = cases();
    let by_name = |n: &str| all.iter().find(|c| c.name == n).unwrap();
    // G15b, TR mode: exactly one report (T2's read); G15c, TR mode: two.
    let tr = ChainOptions {
        goldilocks_tr_mode: true,
        ..ChainOptions::default()
    };
    let chain = analyze(&parse(by_name("G15b")), "goldilocks", tr.clone()).unwrap();
    assert_eq!(chain.warnings().len(), 1);
    let chain = analyze(&parse(by_name("G15c")), "goldilocks", tr).unwrap();
    assert_eq!(flagged(&chain, "goldilocks")["x"].len(), 2);
    // G23: Goldilocks and FastTrack report once; DJIT+ and hb also flag T3's write.
    let chain = analyze(
        &parse(by_name("G23")),
        "fasttrack:djit:goldilocks:hb",
        ChainOptions::default(),
    )
    .unwrap();
    let once: Vec<u64> = vec![5];
    let twice: Vec<u64> = vec![5, 9];
    for (tool, want) in [
        ("goldilocks", &once),
        ("fasttrack", &once),
        ("djit", &twice),
        ("hb", &twice),
    ] {
        let got: Vec<u64> = flagged(&chain, tool)["x"].iter().copied().collect();
        assert_eq!(&got, want, "{tool}");
    }
}

#[test]
fn g22_walk_stops_at_the_acquire() {
    let all = cases();
    let c = all.iter().find(|c| c.name == "G22").unwrap();
    let chain = analyze(&parse(c), "goldilocks", ChainOptions::default()).unwrap();
    let d = details(&chain, "goldilocks");
    assert_eq!(d["walks"], 1);
    // 2000 cells of the first 1000 pairs, then T1's release and T2's acquire; the
    // second 1000 pairs are never visited.
    let walked = d["cells_walked"].as_u64().unwrap();
    assert_eq!(walked, 2002, "{d}");
}

#[test]
fn g13_fixed_alock_short_circuit() {
    // The literal Fig. 3 would let SC2 accept T2's write; ours reports it.
    let all = cases();
    let c = all.iter().find(|c| c.name == "G13").unwrap();
    let chain = analyze(&parse(c), "goldilocks", ChainOptions::default()).unwrap();
    assert_eq!(first_flagged(&chain, "goldilocks").get("x"), Some(&8));
    let d = details(&chain, "goldilocks");
    assert_eq!(d["short_circuit_lock"], 0, "{d}");
}

#[test]
fn update_list_is_collected() {
    // One variable handed between two threads under a lock, with many unrelated sync
    // operations in between: the list stays short.
    let mut text = String::from("M|fork(T1)\nM|fork(T2)\n");
    for i in 0..3000 {
        let t = if i % 2 == 0 { "T1" } else { "T2" };
        text.push_str(&format!(
            "{t}|acq(L)\n{t}|w(x)\n{t}|rel(L)\nM|acq(K)\nM|rel(K)\n"
        ));
    }
    let numbered: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{l}|{}\n", i + 1))
        .collect();
    let chain = analyze(
        &parse_std(&numbered).unwrap(),
        "goldilocks",
        ChainOptions::default(),
    )
    .unwrap();
    assert!(chain.warnings().is_empty());
    let d = details(&chain, "goldilocks");
    assert!(d["cells_collected"].as_u64().unwrap() > 5000, "{d}");
    assert!(d["cells_live"].as_u64().unwrap() < 9000, "{d}");
}

#[test]
fn eraser_false_alarms_g10_g11() {
    let all = cases();
    for (name, vars) in [("G10", vec!["x"]), ("G11", vec!["a", "b", "o1.x"])] {
        let c = all.iter().find(|c| c.name == name).unwrap();
        let chain = analyze(&parse(c), "eraser", ChainOptions::default()).unwrap();
        let got: Vec<String> = first_flagged(&chain, "eraser").into_keys().collect();
        assert_eq!(got, vars, "{name}");
    }
}

#[test]
fn short_circuits_never_change_a_report() {
    use analyses::passes::goldilocks::Goldilocks;
    use analyses::testing::{GenConfig, eager_goldilocks, gen_trace};
    use analyses::{Chain, Shared};

    let cfg = GenConfig {
        guarded_percent: 60,
        ..GenConfig::default()
    };
    for seed in 0..400 {
        let trace = Trace::from_events(gen_trace(seed, &cfg)).unwrap();
        let shared = Shared::new(trace.env.clone(), ChainOptions::default());
        let slow = Chain::from_passes(
            vec![Box::new(Goldilocks::without_short_circuits(&shared))],
            shared,
        );
        analyses::offline::run_events(&slow, &trace.events);
        slow.finish();
        let fast = analyze(&trace, "goldilocks", ChainOptions::default()).unwrap();
        let stream = |c: &analyses::Chain| -> Vec<(u64, u64)> {
            c.warnings()
                .iter()
                .map(|r| {
                    (
                        r.warning.event.unwrap(),
                        r.warning.accesses[0].event.unwrap(),
                    )
                })
                .collect()
        };
        assert_eq!(stream(&slow), stream(&fast), "seed {seed}");
        assert_eq!(
            stream(&fast),
            eager_goldilocks(&trace.events, false),
            "seed {seed}"
        );
    }
}
