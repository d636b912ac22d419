//! The streaming reader (`offline::analyze_stream`): reading and analysing on one
//! thread, pipelined over a channel, and the in-memory path (`parse_std` then
//! `offline::analyze`) give the same warnings, texts, statistics, names and errors on
//! every reference trace, on generated traces, and on malformed input.

use analyses::ChainOptions;
use analyses::offline::{
    Balance, Mode, StreamError, Streamed, analyze, analyze_stream, with_balance,
};
use analyses::report::{render_text, warning_json};
use analyses::testing::{GenConfig, LongTraceConfig, gen_trace, write_long_trace};
use analyses::trace::{ReadError, TraceEnv, TraceInput, parse_std};

const TRACES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rapid");
/// One thread; pipelined as it balances itself, with the reading thread parsing
/// every batch, with the analysis thread parsing every batch, and taking turns (in
/// batches of 3 and 100 lines, so that short traces have many).
const MODES: [(Mode, Balance, usize); 6] = [
    (Mode::Single, Balance::Behind(1), 8192),
    (Mode::Pipelined, Balance::Behind(1), 8192),
    (Mode::Pipelined, Balance::Behind(0), 100),
    (Mode::Pipelined, Balance::Behind(usize::MAX), 100),
    (Mode::Pipelined, Balance::Alternate, 3),
    (Mode::Pipelined, Balance::Alternate, 100),
];
const CHAINS: [&str; 3] = [
    "fasttrack:djit:goldilocks:eraser:hb",
    "atomicity:count",
    "none",
];

/// Everything a report shows: rendered texts, JSON, statistics.
fn outcome(chain: &analyses::chain::Chain, env: &TraceEnv) -> String {
    let mut out = String::new();
    for w in chain.warnings() {
        out.push_str(&render_text(&w, env, &chain.shared.ctxs));
        out.push_str(&warning_json(&w, env, &chain.shared.ctxs).to_string());
        out.push('\n');
    }
    out.push_str(&chain.stats_json().to_string());
    out
}

fn stream(text: &str, spec: &str, fold: bool, mode: Mode) -> Result<Streamed, StreamError> {
    let options = move |_: &TraceEnv| ChainOptions {
        fold_by_location: fold,
        ..ChainOptions::default()
    };
    analyze_stream(TraceInput::Bytes(text.as_bytes()), spec, &options, mode)
}

/// The three paths agree on `text`; returns the number of warnings.
fn same_everywhere(name: &str, text: &str) -> usize {
    let trace = parse_std(text).unwrap_or_else(|e| panic!("{name}:{e}"));
    let mut warnings = 0;
    for spec in CHAINS {
        for fold in [false, true] {
            let options = ChainOptions {
                fold_by_location: fold,
                ..ChainOptions::default()
            };
            let held = analyze(&trace, spec, options).unwrap();
            let want = outcome(&held, &trace.env);
            warnings += held.warnings().len();
            for (mode, behind, lines) in MODES {
                let s = with_balance(behind, lines, || stream(text, spec, fold, mode))
                    .unwrap_or_else(|e| panic!("{name} {spec} {mode:?} {behind:?}: {e}"));
                assert_eq!(
                    outcome(&s.chain, &s.env),
                    want,
                    "{name} {spec} fold {fold} {mode:?}"
                );
                assert_eq!(
                    s.events as usize,
                    trace.file_events().count(),
                    "{name} {mode:?}"
                );
                assert_eq!(s.bytes as usize, text.len(), "{name} {mode:?}");
            }
        }
    }
    warnings
}

#[test]
fn reference_traces_give_the_same_reports_on_every_path() {
    let mut n = 0;
    let mut warnings = 0;
    for entry in std::fs::read_dir(TRACES).expect("tests/data/rapid") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "std") {
            let text = std::fs::read_to_string(&path).unwrap();
            warnings += same_everywhere(&path.display().to_string(), &text);
            n += 1;
        }
    }
    assert!(n >= 40, "only {n} traces in {TRACES}");
    assert!(warnings > 0, "the reference traces have races");
}

#[test]
fn generated_traces_give_the_same_reports_on_every_path() {
    let mut warnings = 0;
    for seed in 0..40 {
        let cfg = GenConfig {
            threads: 2 + (seed % 5) as u32,
            steps: 300,
            methods: seed % 2 == 0,
            allocs: seed % 3 == 0,
            deterministic: seed % 4 == 0,
            ..GenConfig::default()
        };
        let text = analyses::testing::std_text(&gen_trace(seed, &cfg));
        warnings += same_everywhere(&format!("seed {seed}"), &text);
    }
    assert!(warnings > 0);
    // Longer than several batches, so the pipeline hands over many of them.
    let mut long = Vec::new();
    write_long_trace(
        &LongTraceConfig {
            events: 60_000,
            threads: 5,
            vars: 300,
            locks: 7,
            unguarded_per_10k: 50,
            seed: 3,
        },
        &mut long,
    )
    .unwrap();
    let long = String::from_utf8(long).unwrap();
    assert!(same_everywhere("long", &long) > 0);
}

/// A long trace with lines of every kind the fast path does not take spread over
/// many batches (the lexing side hands them over as text, between its fast lines):
/// comments, blank lines, CRLF, spaces, names longer than 15 bytes, lines longer than
/// 32 bytes, sites that are tokens or missing, volatile and method events.
#[test]
fn other_lines_between_fast_ones_read_the_same_on_every_path() {
    let mut long = Vec::new();
    write_long_trace(
        &LongTraceConfig {
            events: 40_000,
            threads: 4,
            vars: 200,
            locks: 5,
            unguarded_per_10k: 80,
            seed: 11,
        },
        &mut long,
    )
    .unwrap();
    let long = String::from_utf8(long).unwrap();
    let lines: Vec<&str> = long.lines().collect();
    let others = [
        "# a comment",
        "",
        "T1|w(V1)|77\r",
        " T2 | r( V2 ) | 78 ",
        "T3|w(a_variable_name_longer_than_fifteen)|79",
        "T1|r(a_variable_name_longer_than_fifteen)|80",
        "T2|w(V3)|123456789012345678901234567890",
        "T3|acq(a_lock_with_a_long_name)|81",
        "T3|rel(a_lock_with_a_long_name)|82",
        "T1|vw(flag)|here",
        "T2|vr(flag)",
        "T3|enter(Main.run)|83",
        "T3|exit(Main.run)|84",
    ];
    let mut text = String::new();
    let (first, last) = (50, lines.len() - 50);
    for (i, l) in lines.iter().enumerate() {
        text.push_str(l);
        text.push('\n');
        if (first..last).contains(&i) && i % 331 == 0 {
            text.push_str(others[(i / 331) % others.len()]);
            text.push('\n');
        }
    }
    assert!(text.lines().count() > lines.len() + 100);
    assert!(same_everywhere("long with other lines", &text) > 0);
}

/// Names in every form the format allows: numbered and other thread names in any
/// order (the numbering that needs a second pass), tokens as locations, no location,
/// comments, CRLF, non-UTF-8 bytes, extension operations.
#[test]
fn unusual_lines_read_the_same_on_every_path() {
    let texts = [
        "foo|w(V1)|1\nT0|w(V2)|2\nT1|w(V1)|3\nbar|fork(T2)|4\nT2|r(V1)\n",
        "a|w(x)|here\nb|w(x)|there\n# comment\n\n  c | r( x ) | 9 \r\nT0|r(x)|1\n",
        "T3|fork(T1,o1,o2)|5\nT1|enter(m,o1,o2)|6\nT1|w(V1,o2)|7\nT1|exit(m,o1)|8\nT3|vw(v,o1)\nT1|vr(v)\nT3|join(T1)\nT5|begin(det)\nT5|end(det)\n",
        "T0|fork(T1)|1\nT0|bar_enter(B,0,2)|2\nT1|bar_enter(B,0,2)|3\nT1|bar_exit(B,0,2)|4\nT0|bar_exit(B,0,2)|5\nT1|w(\u{e9}t\u{e9})|6\nT0|w(\u{e9}t\u{e9})|7\n",
        "# capvm-record v1\n# site 3 a.cj:1:2 Main.run\nT0|fork(T1)|3\nT1|w(o5.Node.next)|3\nT0|w(o5.Node.next)|3\n",
        "x|acq(L)|1\nx|w(V)|2\nx|rel(L)|3\ny|w(V)|4\nT0|w(V)|5\nT1|w(V)|2147483648\n",
    ];
    for (i, t) in texts.iter().enumerate() {
        same_everywhere(&format!("text {i}"), t);
    }
    let mut bytes = b"T0|w(V\xff1)|1\nT1|w(V\xfe1)|2\n".to_vec();
    bytes.extend_from_slice(b"T1|w(V\xff1)|3\n");
    let lossy = String::from_utf8_lossy(&bytes).into_owned();
    let options = |_: &TraceEnv| ChainOptions::default();
    for mode in [Mode::Single, Mode::Pipelined] {
        let s = analyze_stream(TraceInput::Bytes(&bytes), "fasttrack", &options, mode).unwrap();
        let trace = parse_std(&lossy).unwrap();
        let held = analyze(&trace, "fasttrack", ChainOptions::default()).unwrap();
        assert_eq!(outcome(&s.chain, &s.env), outcome(&held, &trace.env));
        // `V\xff1` and `V\xfe1` both read as `V\u{fffd}1`: one variable, one race.
        assert_eq!(s.chain.warnings().len(), 1, "{mode:?}");
        assert_eq!(s.env.known_thread("T1"), Some(1));
        assert!(s.env.lookup_var("V\u{fffd}1").is_some());
    }
}

#[test]
fn numbered_threads_keep_their_number_when_they_come_late() {
    let text = "foo|w(V1)|1\nT0|w(V2)|2\nT1|w(V1)|3\nbar|fork(T2)|4\n";
    for mode in [Mode::Single, Mode::Pipelined] {
        let s = stream(text, "fasttrack", true, mode).unwrap();
        let tid = |n: &str| s.env.known_thread(n).unwrap();
        assert_eq!((tid("T0"), tid("T1"), tid("T2")), (0, 1, 2), "{mode:?}");
        assert_eq!((tid("foo"), tid("bar")), (3, 4), "{mode:?}");
    }
    // Without a late `T<n>`, one pass numbers other names from 0.
    let s = stream(
        "a|w(x)|1\nb|w(x)|2\nT5|w(x)|3\n",
        "none",
        true,
        Mode::Pipelined,
    )
    .unwrap();
    let tid = |n: &str| s.env.known_thread(n).unwrap();
    assert_eq!((tid("a"), tid("b"), tid("T5")), (0, 1, 5));
}

#[test]
fn malformed_traces_give_the_same_first_error_with_its_line() {
    // Errors after many batches, so the pipelined reader runs ahead of the analysis.
    let mut prefix = String::new();
    for i in 0..20_000 {
        prefix.push_str(&format!("T{}|w(V{})|{i}\n", i % 3, i % 7));
    }
    let cases = [
        ("T0|foo(x)|1", "unknown operation 'foo'"),
        ("T0|rel(L)|2", "release of a lock that is not held"),
        ("T0|join(T9)|1", "join of unknown thread T9"),
        ("T0|w(V1,a,b)|1", "expects 1 to 2 arguments"),
        ("T0|w(V1", "missing ')'"),
        ("T0", "expected 'THREAD|OP|LOCATION'"),
        ("T0|end|1", "end without a matching begin"),
        ("T0|w(V1)|a b", "malformed location 'a b'"),
        ("T0|bar_enter(B,x,2)|1", "generation must be a number"),
        ("# capvm-record v1", "header after the first event"),
        ("# site x a.cj:1:1", "site number must be a number"),
    ];
    for (bad, msg) in cases {
        for pre in ["", prefix.as_str()] {
            if pre.is_empty() && bad.starts_with("# capvm-record") {
                continue;
            }
            let text = format!("{pre}{bad}\nT0|w(V1)|5\n");
            let line = pre.lines().count() + 1;
            let held = parse_std(&text).expect_err(bad);
            assert_eq!(held.line, line, "{bad}");
            assert!(held.message.contains(msg), "{bad}: {held}");
            for (mode, behind, lines) in MODES {
                match with_balance(behind, lines, || stream(&text, "fasttrack", true, mode)) {
                    Err(StreamError::Read(ReadError::Trace(e))) => {
                        assert_eq!(e, held, "{mode:?} {behind:?}")
                    }
                    Err(e) => panic!("{bad} {mode:?}: {e}"),
                    Ok(_) => panic!("{bad} {mode:?}: read"),
                }
            }
        }
    }
    for mode in [Mode::Single, Mode::Pipelined] {
        match stream("T0|w(x)|1\n", "fasttrack:nosuch", true, mode) {
            Err(StreamError::Chain(e)) => assert!(e.0.contains("nosuch"), "{e}"),
            other => panic!("{mode:?}: {:?}", other.err()),
        }
    }
}

#[test]
fn an_overlong_line_is_an_error_with_its_line() {
    let mut text = String::from("T0|w(x)|1\n\nT0|w(");
    text.push_str(&"v".repeat(analyses::trace::MAX_LINE));
    text.push_str(")|3\n");
    for mode in [Mode::Single, Mode::Pipelined] {
        match stream(&text, "fasttrack", true, mode) {
            Err(StreamError::Read(ReadError::Trace(e))) => {
                assert_eq!(e.line, 3, "{mode:?}");
                assert!(e.message.contains("longer than 64 MiB"), "{e}");
            }
            Err(e) => panic!("{mode:?}: {e}"),
            Ok(_) => panic!("{mode:?}: read"),
        }
    }
}
