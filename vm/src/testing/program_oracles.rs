//! Oracles that run generated CapJava programs in-process under the seeded scheduler
//! (properties 1 on recorded runs, 2 and 5).

use std::sync::Arc;

use analyses::env::Env;
use analyses::offline::analyze;
use analyses::passes::make;
use analyses::report::{Reported, WarningKind};
use analyses::{Chain, ChainOptions, Shared};
use lang::ir::{Program, SourceFile};
use parking_lot::Mutex;

use super::log::{EventLog, Logged};
use super::trace_oracles::{detectors_agree_with_hb, race_locs, renumber};
use crate::{RunConfig, RunOutcome, SchedKind, Tier, run_program};

/// Step limit of oracle runs (generated programs are small; this only bounds a bug).
pub const MAX_STEPS: u64 = 2_000_000;

/// The filter chains of property 2, each in front of `fasttrack`.
pub const FILTER_CHAINS: [&str; 3] = [
    "escape:fasttrack",
    "capsule:fasttrack",
    "escape:capsule:fasttrack",
];

/// Compile one source file; `Err` is the rendered diagnostics.
pub fn compile(src: &str) -> Result<Arc<Program>, String> {
    let files = vec![SourceFile {
        name: "gen.cj".into(),
        text: src.to_string(),
    }];
    lang::compile(files.clone())
        .map(|c| Arc::new(c.program))
        .map_err(|d| d.render(&files, false))
}

/// One run's outcome, what the event log saw and the chain's warnings.
pub struct Recorded {
    pub out: RunOutcome,
    pub log: Logged,
    pub warnings: Vec<Reported>,
}

/// Run `program` under `seeded:seed` on `tier` with the chain `[event log] + passes`.
pub fn run_recorded(
    program: &Arc<Program>,
    tier: Tier,
    seed: u64,
    passes: &[&str],
) -> Result<Recorded, String> {
    let log = Arc::new(Mutex::new(Logged::default()));
    let shared_slot: Arc<Mutex<Option<Arc<Shared>>>> = Arc::new(Mutex::new(None));
    let names: Vec<String> = passes.iter().map(|s| s.to_string()).collect();
    let (log2, slot2) = (log.clone(), shared_slot.clone());
    let cfg = RunConfig {
        tier,
        sched: SchedKind::Seeded(seed),
        max_steps: MAX_STEPS,
        chain_factory: Some(Arc::new(move |env: Arc<dyn Env>| {
            let shared = Shared::new(env.clone(), ChainOptions::default());
            let mut list: Vec<Box<dyn analyses::Pass>> =
                vec![Box::new(EventLog::new(env, log2.clone()))];
            for n in &names {
                list.push(make(n, &shared)?);
            }
            *slot2.lock() = Some(shared.clone());
            Ok(Chain::from_passes(list, shared))
        })),
        ..RunConfig::default()
    };
    let out = run_program(program.clone(), &cfg).map_err(|e| e.0)?;
    let warnings = shared_slot
        .lock()
        .as_ref()
        .map(|s| s.reporter.snapshot())
        .unwrap_or_default();
    let log = std::mem::take(&mut *log.lock());
    Ok(Recorded { out, log, warnings })
}

/// Property 1 on a run: the events of `src` under `seeded:seed` (interpreter),
/// analysed offline by every precise detector and the `hb` oracle.
pub fn detectors_agree_on_program(src: &str, seed: u64) -> Result<(), String> {
    let program = compile(src)?;
    let run = run_recorded(&program, Tier::Interp, seed, &[])?;
    let trace = renumber(&run.log.events)?;
    detectors_agree_with_hb(&trace).map_err(|e| format!("seed {seed}: {e}"))
}

/// Property 2: under `seeded:seed`, each chain of [`FILTER_CHAINS`] reports a race iff
/// `fasttrack` alone does on the same run (for chains with `capsule`: only when no
/// capsule violation is reported), and never a location `fasttrack` does not flag.
/// `fasttrack` alone runs offline on the recorded events (every event its own site,
/// so its locations are exact); the filters need the live heap, so they run in the VM.
pub fn filters_trace_precise(src: &str, seed: u64) -> Result<(), String> {
    let program = compile(src)?;
    for spec in FILTER_CHAINS {
        let passes: Vec<&str> = spec.split(':').collect();
        let run = run_recorded(&program, Tier::Interp, seed, &passes)?;
        let trace = renumber(&run.log.events)?;
        let plain = analyze(&trace, "fasttrack", ChainOptions::default()).map_err(|e| e.0)?;
        let want = race_locs(&plain.warnings(), "fasttrack");
        let got = race_locs(&run.warnings, "fasttrack");
        let extra: Vec<_> = got.difference(&want).collect();
        if !extra.is_empty() {
            return Err(format!(
                "{spec}, seed {seed}: reports locations fasttrack does not: {extra:?} (fasttrack: {want:?})"
            ));
        }
        let violation = run
            .warnings
            .iter()
            .any(|r| r.warning.kind == WarningKind::CapsuleViolation);
        if !(spec.contains("capsule") && violation) && got.is_empty() != want.is_empty() {
            return Err(format!(
                "{spec}, seed {seed}: races {got:?} but fasttrack alone {want:?}"
            ));
        }
    }
    Ok(())
}

/// Property 5: interpreter and JIT under `seeded:seed` give the same stdout, exit
/// status, runtime error and event sequence (objects by their deterministic labels),
/// and under each of [`INLINE_CHAINS`] the same report (warnings and statistics),
/// the JIT with its inline same-epoch check on and off (and the same warnings with
/// no statistics taken, nothing counted inline), and (chains with `capsule`)
/// the interpreter with every `Enter`/`Exit` delivered but for their counts. A
/// program that forks no thread also runs on the JIT under the OS scheduler, where
/// its read-write pairs apply (`jit::translate`'s `Pair`, never under a seed): the
/// same report, since one thread's run does not depend on the scheduler.
pub fn interp_vs_jit(src: &str, seed: u64) -> Result<(), String> {
    let program = compile(src)?;
    let forks = program.funcs.iter().any(|f| {
        f.blocks.iter().any(|b| {
            b.insts
                .iter()
                .any(|i| matches!(i, lang::ir::Inst::Fork { .. }))
        })
    });
    let a = run_recorded(&program, Tier::Interp, seed, &[])?;
    let b = run_recorded(&program, Tier::Jit, seed, &[])?;
    let mut d = tier_diff(&a.out, &b.out, &a.log.lines, &b.log.lines);
    // The JIT's inline filters (escape's and capsule's tests, first in the chain)
    // and inline same-epoch check (fasttrack alone or behind them, bigfoot's
    // checks): the full
    // report, warnings and every pass's statistics, equals the interpreter's.
    for chain in INLINE_CHAINS {
        // A run of the chain on `tier` under `seeded:seed`, with `set` applied.
        let run = |tier, set: &dyn Fn(&mut RunConfig)| {
            let mut cfg = RunConfig {
                tier,
                sched: SchedKind::Seeded(seed),
                max_steps: MAX_STEPS,
                tools: Some(chain.to_string()),
                capture_stdout: true,
                ..RunConfig::default()
            };
            set(&mut cfg);
            run_program(program.clone(), &cfg).map_err(|e| e.0)
        };
        let fa = run(Tier::Interp, &|_| {})?;
        // Nested calls on the running capsule skip their `Enter`/`Exit`
        // (`Hook::elides_frames`): with all of them delivered, the report is the
        // same but for those events' counts.
        if chain.contains("capsule") {
            let all = run(Tier::Interp, &|c| c.elide_frames = false)?;
            let (a, _) = without_frame_counts(&fa.report);
            let (b, _) = without_frame_counts(&all.report);
            if a != b {
                d.push(format!(
                    "{chain} report with every Enter/Exit delivered
--- elided
{a}
--- all
{b}"
                ));
            }
        }
        for inline_detector in [true, false] {
            let fb = run(Tier::Jit, &|c| c.inline_detector = inline_detector)?;
            if fa.report != fb.report || fa.stdout != fb.stdout {
                d.push(format!(
                    "{chain} report (inline same-epoch check {})\n--- interp\n{}\n--- jit\n{}",
                    if inline_detector { "on" } else { "off" },
                    fa.report,
                    fb.report
                ));
            }
        }
        // Without statistics the JIT's inline tests count nothing
        // (`JitOptions::count_inline`): the same warnings and output.
        let fc = run(Tier::Jit, &|c| c.stats = false)?;
        if fa.report["warnings"] != fc.report["warnings"] || fa.stdout != fc.stdout {
            d.push(format!(
                "{chain} warnings (no statistics, nothing counted inline)\n--- interp\n{}\n--- jit\n{}",
                fa.report["warnings"], fc.report["warnings"]
            ));
        }
        if !forks {
            let fo = run(Tier::Jit, &|c| c.sched = SchedKind::Os)?;
            if fa.report != fo.report || fa.stdout != fo.stdout {
                d.push(format!(
                    "{chain} report (one thread, OS scheduler)\n--- interp\n{}\n--- jit\n{}",
                    fa.report, fo.report
                ));
            }
            // Without statistics and under the OS scheduler, a capsule call that
            // repeats the thread's armed call skips its check
            // (`analyses::pass::RepeatCall`): the same warnings and output.
            let fr = run(Tier::Jit, &|c| {
                c.sched = SchedKind::Os;
                c.stats = false;
            })?;
            if fa.report["warnings"] != fr.report["warnings"] || fa.stdout != fr.stdout {
                d.push(format!(
                    "{chain} warnings (one thread, OS scheduler, no statistics)\n--- interp\n{}\n--- jit\n{}",
                    fa.report["warnings"], fr.report["warnings"]
                ));
            }
        }
    }
    if d.is_empty() {
        Ok(())
    } else {
        Err(format!("seed {seed}: {}", d.join("\n")))
    }
}

/// `report` (a run's `{"warnings", "stats"}`) without the counts of `Enter`/`Exit`
/// events in its passes' statistics, and how many `Enter` events its passes received.
pub fn without_frame_counts(report: &serde_json::Value) -> (serde_json::Value, u64) {
    let mut report = report.clone();
    let mut enters = 0;
    if let Some(passes) = report["stats"]["passes"].as_array_mut() {
        for p in passes {
            let kinds = &mut p["by_kind"];
            let (enter, exit) = (kinds["enter"].as_u64(), kinds["exit"].as_u64());
            let (enter, exit) = (enter.unwrap_or(0), exit.unwrap_or(0));
            enters += enter;
            if let Some(k) = kinds.as_object_mut() {
                k.remove("enter");
                k.remove("exit");
            }
            if let Some(n) = p["events_in"].as_u64() {
                p["events_in"] = (n - enter - exit).into();
            }
        }
    }
    (report, enters)
}

/// How the interpreter's run `a` and the JIT's run `b` of one program differ (empty =
/// not at all): exit status, stdout, runtime error text, and the first event where the
/// two event logs part.
pub fn tier_diff(a: &RunOutcome, b: &RunOutcome, ea: &[String], eb: &[String]) -> Vec<String> {
    let mut d = Vec::new();
    if a.exit != b.exit {
        d.push(format!("exit {:?} vs {:?}", a.exit, b.exit));
    }
    if a.stdout != b.stdout {
        d.push(format!(
            "stdout\n--- interp\n{}--- jit\n{}",
            a.stdout_string(),
            b.stdout_string()
        ));
    }
    if a.error_text != b.error_text {
        d.push(format!(
            "error\n--- interp\n{:?}\n--- jit\n{:?}",
            a.error_text, b.error_text
        ));
    }
    if ea != eb {
        let i = ea
            .iter()
            .zip(eb)
            .position(|(p, q)| p != q)
            .unwrap_or(ea.len().min(eb.len()));
        d.push(format!(
            "events differ at #{i} (of {} vs {}): {:?} vs {:?}",
            ea.len(),
            eb.len(),
            ea.get(i),
            eb.get(i)
        ));
    }
    d
}

/// The chains under which `interp_vs_jit` also compares reports: `escape`, `capsule`
/// or both first, so the JIT tests their header bits inline, `fasttrack` alone or
/// behind them, so it decides FastTrack's same-epoch accesses inline, the same with
/// `singletrack` before it (whose stamp test it then applies too), and `bigfoot`,
/// whose field and element checks it decides inline (same-epoch and exclusive
/// rules), alone and behind both filters (`escape`'s test drops checks inline, and
/// plain accesses that pass the filters' tests end there).
const INLINE_CHAINS: [&str; 8] = [
    "escape:capsule:fasttrack",
    "capsule:fasttrack",
    "fasttrack",
    "escape:fasttrack",
    "singletrack:fasttrack",
    "escape:capsule:singletrack:fasttrack",
    "bigfoot",
    "escape:capsule:bigfoot",
];
