//! `capvm infer-disciplines` and `--spec FILE.grits` (Hominy Grits, `docs/grits.md`):
//! infer each location's synchronization discipline from one run of a program or
//! from a trace, and load a spec for the `grits` pass to check.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use analyses::ChainOptions;
use analyses::passes::grits::spec::{self, GritsSpec};
use clap::Args;

use super::{EXIT_COMPILE, EXIT_OK, EXIT_OUTPUT, EXIT_RUNTIME, EXIT_USAGE, note_write, parse_tier};
use crate::run::{ChainFactory, ExitKind, RunConfig, SchedKind, Tier, run_program};

/// The chain of an inference run.
pub const INFER_TOOLS: &str = "grits";

#[derive(Args, Debug)]
pub struct InferDisciplinesArgs {
    /// A CapJava program (`.cj`) to run once, or a trace (STD format) to read.
    pub file: PathBuf,
    /// Execution tier (programs).
    #[arg(long, value_name = "TIER", value_parser = parse_tier, default_value_t = Tier::DEFAULT)]
    pub tier: Tier,
    /// Scheduler (programs): `os` or `seeded:SEED`.
    #[arg(long, value_name = "SCHED", value_parser = super::cli::parse_sched, default_value = "os")]
    pub sched: SchedKind,
    /// Stop the run with a runtime error after N executed basic blocks in one thread.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u64>,
}

fn err(msg: std::fmt::Arguments<'_>) {
    note_write(writeln!(std::io::stderr(), "{msg}"));
}

/// Read and parse a spec file; the message (`FILE:LINE:COL: …`) and exit 65 if it
/// cannot be read or does not parse.
pub fn load_spec(path: &Path) -> Result<Arc<GritsSpec>, i32> {
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            err(format_args!("error: cannot read {}: {e}", path.display()));
            return Err(EXIT_COMPILE);
        }
    };
    spec::parse(&text).map(Arc::new).map_err(|e| {
        err(format_args!("error: {}:{e}", path.display()));
        EXIT_COMPILE
    })
}

/// `--spec` needs `grits` in the chain.
pub fn check_chain_has_grits(tools: &str) -> Result<(), i32> {
    if tools.split(':').any(|p| p.trim() == "grits") {
        Ok(())
    } else {
        err(format_args!(
            "error: --spec is checked by the `grits` pass, which `--tools {tools}` does not run (try `--tools grits`)"
        ));
        Err(EXIT_USAGE)
    }
}

/// The chain of `capvm run --tools TOOLS --spec FILE [--record FILE]`: the options
/// carry the spec (`record` first, as `run` places it).
pub fn spec_chain(
    tools: &str,
    spec: Arc<GritsSpec>,
    record: Option<PathBuf>,
    capsules: Option<Vec<String>>,
) -> ChainFactory {
    let tools = match &record {
        Some(_) => format!("record:{tools}"),
        None => tools.to_string(),
    };
    Arc::new(move |env| {
        let options = ChainOptions {
            grits_spec: Some(spec.clone()),
            record_path: record.clone(),
            capsules: capsules.clone(),
            ..ChainOptions::default()
        };
        analyses::passes::chain(&tools, env, options)
    })
}

/// The `grits` pass's disciplines in a run's statistics.
fn disciplines(stats: &serde_json::Value) -> Option<&serde_json::Value> {
    stats["passes"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == "grits")
        .map(|p| &p["details"]["disciplines"])
}

fn print(rows: &[(String, String, usize)]) -> i32 {
    let text = spec::render_rows(rows);
    let mut out = std::io::stdout().lock();
    match write!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            err(format_args!("error: cannot write to stdout: {e}"));
            EXIT_OUTPUT
        }
    }
}

/// `capvm infer-disciplines FILE.cj|TRACE`.
pub fn cmd_infer_disciplines(a: InferDisciplinesArgs) -> i32 {
    if a.file.extension().is_some_and(|e| e == "cj") {
        infer_program(&a)
    } else {
        infer_trace(&a.file)
    }
}

fn infer_program(a: &InferDisciplinesArgs) -> i32 {
    let program = match super::cli::compile(&a.file) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let cfg = RunConfig {
        tools: Some(INFER_TOOLS.into()),
        sched: a.sched,
        tier: a.tier,
        max_steps: a.max_steps.unwrap_or(u64::MAX),
        capture_stdout: true,
        ..RunConfig::default()
    };
    let out = match run_program(Arc::new(program), &cfg) {
        Ok(o) => o,
        Err(e) => {
            err(format_args!("error: {e}"));
            return EXIT_USAGE;
        }
    };
    if out.exit == ExitKind::RuntimeError {
        note_write(write!(
            std::io::stderr(),
            "{}",
            out.error_text.unwrap_or_default()
        ));
        err(format_args!(
            "error: infer-disciplines stopped: the run ended with a runtime error"
        ));
        return EXIT_RUNTIME;
    }
    for e in &out.output_errors {
        err(format_args!("error: {e}"));
    }
    if !out.output_errors.is_empty() {
        return EXIT_OUTPUT;
    }
    let rows = disciplines(&out.report["stats"])
        .map(spec::rows_of_stats)
        .unwrap_or_default();
    print(&rows)
}

fn infer_trace(path: &Path) -> i32 {
    use analyses::offline::{Mode, StreamError, analyze_stream};
    use analyses::trace::{ReadError, TraceInput};
    let options = |_: &analyses::trace::TraceEnv| ChainOptions::default();
    let run = match analyze_stream(
        TraceInput::File(path),
        INFER_TOOLS,
        &options,
        Mode::Pipelined,
    ) {
        Ok(r) => r,
        Err(StreamError::Read(ReadError::Io { line: 0, error })) => {
            err(format_args!(
                "error: cannot read {}: {error}",
                path.display()
            ));
            return EXIT_COMPILE;
        }
        Err(StreamError::Read(e)) => {
            err(format_args!("error: {}:{e}", path.display()));
            return EXIT_COMPILE;
        }
        Err(StreamError::Chain(e)) => {
            err(format_args!("error: {e}"));
            return EXIT_USAGE;
        }
    };
    let stats = run.chain.stats_json();
    let rows = disciplines(&stats)
        .map(spec::rows_of_stats)
        .unwrap_or_default();
    print(&rows)
}
