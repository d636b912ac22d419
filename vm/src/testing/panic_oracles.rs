//! Property 6: no input panics. The functions return normally on every input (errors
//! are values); a panic is the failure the fuzzer looks for.

use analyses::ChainOptions;
use analyses::chain::Chain;
use analyses::offline::{Balance, Mode, StreamError, analyze, analyze_stream, with_balance};
use analyses::report::{render_text, warning_json};
use analyses::trace::{ReadError, Trace, TraceEnv, TraceError, TraceInput, parse_std};
use arbitrary::{Arbitrary, Unstructured};
use lang::ir::SourceFile;

/// Every chain `trace_no_panic` runs: each analysis alone, and the filter chains.
pub const CHAINS: [&str; 16] = [
    "count",
    "hb",
    "fasttrack",
    "djit",
    "goldilocks",
    "eraser",
    "singletrack",
    "atomicity",
    "escape:fasttrack",
    "capsule:fasttrack",
    "escape:capsule:fasttrack",
    "escape:capsule:singletrack:fasttrack",
    "escape:capsule:atomicity:djit",
    "escape:goldilocks:eraser",
    "grits",
    "grits:fasttrack",
];

/// Bytes as CapJava source: what `capvm check` does (compile, render diagnostics and
/// warnings), then validate and print the IR of a program that compiles.
pub fn compile_no_panic(data: &[u8]) -> Result<(), String> {
    let files = vec![SourceFile {
        name: "fuzz.cj".into(),
        text: String::from_utf8_lossy(data).into_owned(),
    }];
    match lang::compile(files.clone()) {
        Ok(c) => {
            let _ = c.warnings.render(&files, false);
            c.program
                .validate()
                .map_err(|e| format!("compiled program fails IR validation: {e}"))?;
            let _ = lang::print::print(&c.program);
            Ok(())
        }
        Err(d) => {
            if d.is_empty() {
                return Err("compilation failed without a diagnostic".into());
            }
            let _ = d.render(&files, false);
            Ok(())
        }
    }
}

/// Bytes as an STD trace: parse, then every chain of [`CHAINS`] (Goldilocks in both
/// modes), printing every warning and the statistics as `capvm analyze` does (text
/// and JSON report).
pub fn trace_no_panic(data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    // The same bytes as a Grits spec: parsing never panics, and a spec that parses
    // is checked against the trace.
    let spec = analyses::passes::grits::spec::parse(&text);
    let parsed = parse_std(&text);
    streams_agree(data, &parsed)?;
    let Ok(trace) = parsed else {
        return Ok(());
    };
    if let Ok(spec) = spec {
        let options = ChainOptions {
            grits_spec: Some(std::sync::Arc::new(spec)),
            ..ChainOptions::default()
        };
        let chain = analyze(&trace, "grits", options).map_err(|e| e.0)?;
        print_reports(&trace, &chain)?;
    }
    analyze_and_print(&trace)
}

/// The streaming reader (`capvm analyze`), on one thread and pipelined with every
/// split of the parsing between its two threads in batches of a few lines, reads
/// `data` as the in-memory reader did (`parsed`): the same first error, or the same
/// warnings and statistics.
fn streams_agree(data: &[u8], parsed: &Result<Trace, TraceError>) -> Result<(), String> {
    const SPEC: &str = "fasttrack:eraser";
    let shown = |chain: &Chain, env: &TraceEnv| {
        let mut out: Vec<String> = chain
            .warnings()
            .iter()
            .map(|w| render_text(w, env, &chain.shared.ctxs))
            .collect();
        out.push(chain.stats_json().to_string());
        out
    };
    let want = match parsed {
        Ok(trace) => {
            let chain = analyze(trace, SPEC, ChainOptions::default()).map_err(|e| e.0)?;
            Ok(shown(&chain, &trace.env))
        }
        Err(e) => Err(e.clone()),
    };
    let runs = [
        (Mode::Single, Balance::Behind(1), 4),
        (Mode::Pipelined, Balance::Behind(1), 2),
        (Mode::Pipelined, Balance::Alternate, 1),
        (Mode::Pipelined, Balance::Alternate, 3),
        (Mode::Pipelined, Balance::Behind(usize::MAX), 2),
    ];
    for (mode, balance, lines) in runs {
        let options = |_: &TraceEnv| ChainOptions::default();
        let got = with_balance(balance, lines, || {
            analyze_stream(TraceInput::Bytes(data), SPEC, &options, mode)
        });
        let got = match got {
            Ok(s) => Ok(shown(&s.chain, &s.env)),
            Err(StreamError::Read(ReadError::Trace(e))) => Err(e),
            Err(e) => return Err(format!("{mode:?} {balance:?} {lines}: {e}")),
        };
        if got != want {
            return Err(format!(
                "{mode:?} {balance:?} by {lines} lines: streamed {got:?}, in memory {want:?}"
            ));
        }
    }
    Ok(())
}

/// What `capvm analyze` does after parsing, for every chain of [`CHAINS`] and both
/// ways of folding warnings: run it, render every warning as text and as JSON, the
/// statistics, and the JSON report.
fn analyze_and_print(trace: &Trace) -> Result<(), String> {
    for fold_by_location in [true, false] {
        let options = ChainOptions {
            fold_by_location,
            ..ChainOptions::default()
        };
        for spec in CHAINS {
            let chain = analyze(trace, spec, options.clone()).map_err(|e| e.0)?;
            print_reports(trace, &chain)?;
        }
        let tr = ChainOptions {
            goldilocks_tr_mode: true,
            ..options
        };
        let chain = analyze(trace, "goldilocks", tr).map_err(|e| e.0)?;
        print_reports(trace, &chain)?;
    }
    Ok(())
}

fn print_reports(trace: &Trace, chain: &Chain) -> Result<(), String> {
    let env = &*trace.env;
    let mut json = Vec::new();
    for w in chain.warnings() {
        let text = render_text(&w, env, &chain.shared.ctxs);
        if !text.contains("WARNING") {
            return Err(format!("warning text without a headline: {text}"));
        }
        json.push(warning_json(&w, env, &chain.shared.ctxs));
    }
    let _ = chain.stats_text();
    let report = serde_json::json!({ "warnings": json, "stats": chain.stats_json() });
    serde_json::to_string_pretty(&report).map_err(|e| format!("report: {e}"))?;
    Ok(())
}

/// One arbitrary name, often shaped like the recorder's (`o3.NAME`, `NAME[]`,
/// `o3.NAME[][N]`, `T7`) so that the report's name splitting sees it. Characters the
/// format reserves (`|`, `(`, `)`, `,`, whitespace) are dropped unless `raw`: then
/// the trace may not parse, which is fine (the reader's error is the result).
fn arbitrary_name(u: &mut Unstructured<'_>, raw: bool) -> String {
    let body = String::arbitrary(u).unwrap_or_default();
    let body: String = if raw {
        body
    } else {
        body.chars()
            .filter(|c| !matches!(c, '|' | '(' | ')' | ',' | '#') && !c.is_whitespace())
            .take(24)
            .collect()
    };
    let n = u8::arbitrary(u).unwrap_or(0);
    let name = match u8::arbitrary(u).unwrap_or(0) % 8 {
        0 => body,
        1 => format!("o{n}.{body}"),
        2 => format!("o{n}.{body}[]"),
        3 => format!("o{n}.{body}[][{n}]"),
        4 => format!("o{n}.{body}]"),
        5 => format!("{body}[]{body}]"),
        6 => format!("T{n}"),
        _ => format!("o{n}.int[{body}]"),
    };
    if name.is_empty() { "x".into() } else { name }
}

/// Bytes as names: a trace whose thread, variable and lock names are arbitrary
/// strings (see [`arbitrary_name`]), with or without the recorder's header, where
/// every detector has something to report; then everything `capvm analyze` prints
/// ([`analyze_and_print`]). The events come from the bytes too: accesses of two to
/// four threads forked by the first, some under a lock.
pub fn trace_names_no_panic(data: &[u8]) -> Result<(), String> {
    let mut u = Unstructured::new(data);
    let raw = u8::arbitrary(&mut u).unwrap_or(0) % 16 == 0;
    let recorded = bool::arbitrary(&mut u).unwrap_or(true);
    let mut threads: Vec<String> = Vec::new();
    let n_threads = 2 + usize::from(u8::arbitrary(&mut u).unwrap_or(0) % 3);
    while threads.len() < n_threads {
        let t = arbitrary_name(&mut u, raw);
        if !threads.contains(&t) {
            threads.push(t);
        } else {
            threads.push(format!("{t}_{}", threads.len()));
        }
    }
    let vars: Vec<String> = (0..3).map(|_| arbitrary_name(&mut u, raw)).collect();
    let lock = arbitrary_name(&mut u, raw);
    let mut lines = Vec::new();
    if recorded {
        lines.push("# capvm-record v1".to_string());
    }
    let main = &threads[0];
    for child in &threads[1..] {
        lines.push(format!("{main}|fork({child})"));
    }
    // A write-write race on every variable, so that every detector reports.
    for v in &vars {
        lines.push(format!("{}|w({v})", threads[1]));
        lines.push(format!("{main}|w({v})"));
    }
    let steps = u8::arbitrary(&mut u).unwrap_or(0) % 32;
    for _ in 0..steps {
        let b = u8::arbitrary(&mut u).unwrap_or(0);
        let t = &threads[usize::from(b) % threads.len()];
        let v = &vars[usize::from(b >> 2) % vars.len()];
        let op = if b & 0x40 != 0 { "w" } else { "r" };
        if b & 0x80 != 0 {
            lines.push(format!("{t}|acq({lock})"));
            lines.push(format!("{t}|{op}({v})"));
            lines.push(format!("{t}|rel({lock})"));
        } else {
            lines.push(format!("{t}|{op}({v})"));
        }
    }
    for child in &threads[1..] {
        lines.push(format!("{main}|join({child})"));
    }
    let text = lines.join("\n") + "\n";
    let trace = match parse_std(&text) {
        Ok(t) => t,
        // Only raw names may make the trace unreadable.
        Err(_) if raw => return Ok(()),
        Err(e) => return Err(format!("generated trace does not parse: {e}\n{text}")),
    };
    analyze_and_print(&trace).map_err(|e| format!("{e}\n{text}"))
}
