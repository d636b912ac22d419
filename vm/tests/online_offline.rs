//! Online and offline analysis agree: for every corpus program (examples and
//! bugs) under the seeded scheduler, `capvm run --record t.std --report a.json` followed
//! by `capvm analyze t.std --report b.json` gives the same warnings — same kind,
//! analysis, location, object, accesses (thread, op, site, call stack) and fold count.
//! Only `event` (the trace line, which the online run does not have) is ignored.
//! `capvm analyze --single-thread` (reader and analysis on one thread) gives the very
//! same output and report as the default pipelined reader.
//!
//! Every detector and checker that does not need the live heap runs in one chain; the
//! filters `escape` and `capsule` walk the heap and are checked online only (the corpus
//! and fuzz tests cover them).

use analyses::testing::strip_events;
use std::path::{Path, PathBuf};
use std::process::Command;

const CAPVM: &str = env!("CARGO_BIN_EXE_capvm");
const CHAIN: &str = "fasttrack:djit:goldilocks:eraser:hb:singletrack:atomicity";
const SEEDS: [u64; 2] = [1, 7];

fn corpus_files(sub: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(sub);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "cj"))
        .collect();
    v.sort();
    v
}

/// The warnings of a report, with the offline-only `event` fields removed, sorted.
fn normalized(report: &Path) -> Result<Vec<serde_json::Value>, String> {
    let text = std::fs::read_to_string(report).map_err(|e| format!("{}: {e}", report.display()))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", report.display()))?;
    let mut ws: Vec<serde_json::Value> = doc["warnings"]
        .as_array()
        .ok_or("report has no warnings array")?
        .iter()
        .cloned()
        .map(|mut w| {
            strip_events(&mut w);
            w
        })
        .collect();
    ws.sort_by_key(|w| w.to_string());
    Ok(ws)
}

fn check(file: &Path, seed: u64) -> Result<usize, String> {
    let tmp = std::env::temp_dir().join(format!(
        "capvm-onoff-{}-{}-{seed}",
        std::process::id(),
        file.file_stem().unwrap().to_string_lossy()
    ));
    let trace = tmp.with_extension("std");
    let online = tmp.with_extension("online.json");
    let offline = tmp.with_extension("offline.json");
    let sched = format!("seeded:{seed}");
    let run = Command::new(CAPVM)
        .args(["run"])
        .arg(file)
        .args([
            "--tier", "interp", "--sched", &sched, "--tools", CHAIN, "--record",
        ])
        .arg(&trace)
        .arg("--report")
        .arg(&online)
        .output()
        .map_err(|e| e.to_string())?;
    let code = run.status.code().unwrap_or(-1);
    if code != 0 && code != 66 {
        return Err(format!(
            "run exited {code}: {}",
            String::from_utf8_lossy(&run.stderr)
        ));
    }
    let an = Command::new(CAPVM)
        .arg("analyze")
        .arg(&trace)
        .args(["--tools", CHAIN, "--report"])
        .arg(&offline)
        .output()
        .map_err(|e| e.to_string())?;
    let acode = an.status.code().unwrap_or(-1);
    if acode != code {
        return Err(format!(
            "run exited {code} but analyze exited {acode}: {}",
            String::from_utf8_lossy(&an.stderr)
        ));
    }
    // The reader on the analysis thread gives the very same report and output.
    let single = tmp.with_extension("single.json");
    let one = Command::new(CAPVM)
        .arg("analyze")
        .arg(&trace)
        .args(["--tools", CHAIN, "--single-thread", "--report"])
        .arg(&single)
        .output()
        .map_err(|e| e.to_string())?;
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    if one.status.code() != an.status.code()
        || one.stderr != an.stderr
        || read(&single)? != read(&offline)?
    {
        return Err(format!(
            "pipelined and single-threaded analyze differ:\n{}\n---\n{}",
            String::from_utf8_lossy(&an.stderr),
            String::from_utf8_lossy(&one.stderr)
        ));
    }
    let a = normalized(&online)?;
    let b = normalized(&offline)?;
    for p in [&trace, &online, &offline, &single] {
        let _ = std::fs::remove_file(p);
    }
    if a != b {
        return Err(format!(
            "online and offline warnings differ\nonline:  {}\noffline: {}",
            serde_json::to_string_pretty(&a).unwrap(),
            serde_json::to_string_pretty(&b).unwrap()
        ));
    }
    Ok(a.len())
}

#[test]
fn recorded_traces_give_the_online_warnings() {
    let files: Vec<PathBuf> = corpus_files("examples")
        .into_iter()
        .chain(corpus_files("bugs"))
        .collect();
    assert!(files.len() > 30, "corpus missing");
    let jobs: Vec<(PathBuf, u64)> = files
        .iter()
        .flat_map(|f| SEEDS.map(|s| (f.clone(), s)))
        .collect();
    let results: Vec<(PathBuf, u64, Result<usize, String>)> = std::thread::scope(|s| {
        let chunks: Vec<_> = jobs.chunks(jobs.len().div_ceil(3)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|(f, seed)| (f.clone(), *seed, check(f, *seed)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut failures = Vec::new();
    let mut with_warnings = 0;
    for (f, seed, r) in &results {
        match r {
            Ok(n) => with_warnings += usize::from(*n > 0),
            Err(e) => failures.push(format!("{} seeded:{seed}: {e}", f.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The comparison means something only if some runs do warn.
    assert!(
        with_warnings >= 10,
        "only {with_warnings} runs produced warnings"
    );
}
