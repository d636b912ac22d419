//! The STD reader and writer: reference traces parse, generated traces round-trip,
//! malformed input gives an error naming the line and never a panic.

use analyses::ChainOptions;
use analyses::event::{OwnedEvent, OwnedKind};
use analyses::offline::analyze;
use analyses::testing::{GenConfig, gen_trace};
use analyses::trace::{StdWriter, Trace, TraceEnv, parse_std};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const TRACES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rapid");

/// Events without ids: (thread, kind with names) for comparisons modulo ids.
fn shape(t: &Trace) -> Vec<String> {
    let env: &TraceEnv = &t.env;
    t.events
        .iter()
        .map(|e| {
            format!(
                "{}|{}",
                env.thread_name(e.tid),
                analyses::trace::op_text(env, &e.as_event())
            )
        })
        .collect()
}

#[test]
fn every_reference_trace_parses() {
    let mut n = 0;
    for entry in std::fs::read_dir(TRACES).expect("tests/data/rapid") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "std") {
            let text = std::fs::read_to_string(&path).unwrap();
            let t = parse_std(&text).unwrap_or_else(|e| panic!("{}:{e}", path.display()));
            let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
            assert_eq!(t.file_events().count(), lines, "{}", path.display());
            // The event index is the line number.
            for e in t.file_events() {
                let line = text.lines().nth(e.index as usize - 1).unwrap();
                assert!(line.starts_with(&t.env.thread_name(e.tid)));
            }
            n += 1;
        }
    }
    assert!(n >= 40, "only {n} traces found in {TRACES}");
}

#[test]
fn generated_traces_round_trip_through_std() {
    let cfg = GenConfig {
        methods: true,
        allocs: true,
        deterministic: true,
        ..GenConfig::default()
    };
    for seed in 0..300 {
        let events = gen_trace(seed, &cfg);
        let direct = Trace::from_events(events.clone()).unwrap();
        let text = analyses::testing::std_text(&events);
        let parsed = parse_std(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        assert_eq!(parsed.events.len(), events.len(), "seed {seed}");
        assert!(
            parsed.events.iter().all(|e| e.index != 0),
            "nothing inserted"
        );
        assert_eq!(shape(&parsed), shape(&direct), "seed {seed}");
        // Writing the parsed trace again gives the same text (names are stable).
        let again: Vec<OwnedEvent> = parsed.events.clone();
        let mut w = StdWriter::new(Vec::new()).unwrap();
        for e in &again {
            w.write_event(parsed.env.as_ref(), &e.as_event()).unwrap();
        }
        let text2 = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(
            text.lines().filter(|l| !l.starts_with('#')).count(),
            text2.lines().filter(|l| !l.starts_with('#')).count()
        );
    }
}

#[test]
fn extension_ops_parse() {
    let text = "\
# a comment
T0|tstart|1
T0|alloc(o1)|2
T0|w(x,o1)|3
T0|vw(f)|4
T0|fork(T1,o1)|5
T1|vr(f)|6
T1|enter(Main.run,o1,o1)|7
T1|begin(det)|8
T1|end(det)|9
T1|exit(Main.run,o1)|10
T1|bar_enter(B,0,2)|11
T0|bar_enter(B,0,2)|12
T0|bar_exit(B,0,2)|13
T1|bar_exit(B,0,2)|14
T1|tend|15
T0|join(T1)|16
T0|tend|17
";
    let t = parse_std(text).unwrap();
    // T1 has no `tstart`: the reader inserts one after the fork.
    assert_eq!(t.events.len(), 18);
    assert_eq!(t.events[5].kind, OwnedKind::ThreadStart);
    assert_eq!(t.events[5].index, 0);
    assert!(matches!(
        t.events[11].kind,
        OwnedKind::BarrierEnter { parties: 2, .. }
    ));
    assert_eq!(t.events[11].index, 12, "line numbers count the comment");
    assert_eq!(shape(&t)[7], "T1|enter(Main.run,o1,o1)");
}

#[test]
fn garbage_never_panics() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let alphabet: &[u8] = b"T01|()rwacqelfoknjbgd,#\n V_xyz-";
    for _ in 0..3000 {
        let len = rng.random_range(0..120);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.random_bool(0.1) {
                    rng.random()
                } else {
                    alphabet[rng.random_range(0..alphabet.len())]
                }
            })
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = parse_std(&text) {
            assert!(e.line >= 1 && e.line <= text.split('\n').count(), "{e}");
            assert!(!e.message.is_empty());
        }
    }
    // Mutations of a valid trace: swap, drop and duplicate lines.
    let base = analyses::testing::std_text(&gen_trace(1, &GenConfig::default()));
    let lines: Vec<&str> = base.lines().collect();
    for _ in 0..2000 {
        let mut l = lines.clone();
        let i = rng.random_range(0..l.len());
        let j = rng.random_range(0..l.len());
        match rng.random_range(0..3) {
            0 => l.swap(i, j),
            1 => {
                l.remove(i);
            }
            _ => l.insert(i, lines[j]),
        }
        let text = l.join("\n");
        match parse_std(&text) {
            Err(e) => assert!(e.line >= 1 && e.line <= l.len(), "{e}"),
            // Whatever parses is well formed enough for every detector.
            Ok(t) => {
                analyze(
                    &t,
                    "fasttrack:djit:goldilocks:eraser:hb",
                    ChainOptions::default(),
                )
                .unwrap();
            }
        }
    }
}
