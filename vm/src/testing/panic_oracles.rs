//! Property 6: no input panics. The functions return normally on every input (errors
//! are values); a panic is the failure the fuzzer looks for.

use analyses::ChainOptions;
use analyses::offline::analyze;
use analyses::trace::parse_std;
use lang::ir::SourceFile;

/// Every chain `trace_no_panic` runs: each analysis alone, and the filter chains.
pub const CHAINS: [&str; 14] = [
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
/// modes).
pub fn trace_no_panic(data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let Ok(trace) = parse_std(&text) else {
        return Ok(());
    };
    for spec in CHAINS {
        let chain = analyze(&trace, spec, ChainOptions::default()).map_err(|e| e.0)?;
        let _ = chain.warnings();
        let _ = chain.stats_text();
    }
    let tr = ChainOptions {
        goldilocks_tr_mode: true,
        ..ChainOptions::default()
    };
    analyze(&trace, "goldilocks", tr).map_err(|e| e.0)?;
    Ok(())
}
