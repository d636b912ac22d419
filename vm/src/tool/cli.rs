//! The `capvm` command line (`docs/architecture.md` "Command line"). Exit codes: 0 ok,
//! 66 warnings, 64 bad command line, 65 compile/parse error, 70 guest runtime error,
//! 74 an output could not be written (stdout, stderr, a report, trace or capsules
//! file; the message goes to stderr when stderr itself still works).

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use analyses::ChainOptions;
use analyses::report::render_text;
use clap::{Args, Parser, Subcommand};

use super::{
    EXIT_COMPILE, EXIT_OK, EXIT_OUTPUT, EXIT_RUNTIME, EXIT_USAGE, EXIT_WARNINGS, lost_output,
    note_write, parse_size, parse_tier, reset_lost_output,
};
use crate::run::{DEFAULT_MAX_HEAP, DEFAULT_MAX_THREADS, RunConfig, SchedKind, Tier, run_program};
use crate::tool::infer::{
    DEFAULT_MAX_ROUNDS, InferError, capsules_path, infer, parse_capsules_file, render,
};
/// `eprint!` without the panic: a failed write is remembered for the exit code.
macro_rules! say {
    ($($arg:tt)*) => {
        note_write(std::io::Write::write_fmt(&mut std::io::stderr(), format_args!($($arg)*)))
    };
}

/// `eprintln!` without the panic (see [`say!`]).
macro_rules! sayln {
    ($($arg:tt)*) => {
        say!("{}\n", format_args!($($arg)*))
    };
}

/// The chain `capvm analyze` uses without `--tools`.
const DEFAULT_ANALYZE_TOOLS: &str = "fasttrack";

#[derive(Parser, Debug)]
#[command(
    name = "capvm",
    version,
    about = "Run CapJava programs on a multithreaded VM with race detectors and specification checkers"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Compile and run a program, feeding its events to an analysis chain.
    Run(RunArgs),
    /// Parse and type-check only (warnings printed; exit 0 or 65).
    Check {
        /// The CapJava source file.
        file: PathBuf,
    },
    /// Analyse a recorded trace offline.
    Analyze(AnalyzeArgs),
    /// Compress a trace into a grammar (SLP): `capvm analyze` reads the `.slp`.
    Compress(crate::tool::slp::CompressArgs),
    /// Infer the capsule classes: capsule detection to a fixed point; writes FILE.capsules.
    InferCapsules(InferArgs),
    /// Infer each location's synchronization discipline (Hominy Grits) from one run
    /// of a program or from a trace: `LOCATION: DISCIPLINE` lines on stdout.
    InferDisciplines(crate::tool::grits::InferDisciplinesArgs),
    /// Overhead and filter-effectiveness tables: the kernels of corpus/bench bare and
    /// under analysis chains.
    Bench(crate::tool::bench::BenchArgs),
}

#[derive(Args, Debug)]
struct InferArgs {
    /// The CapJava source file.
    file: PathBuf,
    /// Execution tier.
    #[arg(long, value_name = "TIER", value_parser = parse_tier, default_value_t = Tier::DEFAULT)]
    tier: Tier,
    /// Scheduler of every run: `os` or `seeded:SEED`.
    #[arg(long, value_name = "SCHED", value_parser = parse_sched, default_value = "os")]
    sched: SchedKind,
    /// Give up after N runs (N >= 1).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_ROUNDS,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_rounds: u32,
    /// Stop a run with a runtime error after N executed basic blocks in one thread.
    #[arg(long, value_name = "N")]
    max_steps: Option<u64>,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The CapJava source file.
    file: PathBuf,
    /// Analysis chain, e.g. `escape:capsule:singletrack:fasttrack`, `count`, `none`
    /// [default: escape:capsule:singletrack:fasttrack].
    #[arg(long, value_name = "CHAIN")]
    tools: Option<String>,
    /// Execution tier.
    #[arg(long, value_name = "TIER", value_parser = parse_tier, default_value_t = Tier::DEFAULT)]
    tier: Tier,
    /// Scheduler: `os` (parallel threads) or `seeded:SEED` (one thread at a time,
    /// reproducible).
    #[arg(long, value_name = "SCHED", value_parser = parse_sched, default_value = "os")]
    sched: SchedKind,
    /// Write the warnings and statistics as JSON to this file.
    #[arg(long, value_name = "FILE.json")]
    report: Option<PathBuf>,
    /// Print per-pass statistics on stderr.
    #[arg(long)]
    stats: bool,
    /// Record the event trace to this file: STD format, or compressed (SLP) if the
    /// name ends in `.slp`.
    #[arg(long, value_name = "FILE.std|FILE.slp")]
    record: Option<PathBuf>,
    /// Stop with a runtime error after N executed basic blocks in one thread.
    #[arg(long, value_name = "N")]
    max_steps: Option<u64>,
    /// Maximum number of threads ever created, main included.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_THREADS)]
    max_threads: u64,
    /// Maximum guest heap, in bytes; suffixes K, M, G [default: 4G].
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_heap: Option<u64>,
    /// Exactly these classes are capsules (comma-separated), overriding the source's
    /// `capsule` annotations; `inferred` reads FILE.capsules (see `infer-capsules`).
    #[arg(long, value_name = "C1,C2|inferred")]
    capsules: Option<String>,
    /// Check the `grits` pass's locations against this spec (`LOCATION: DISCIPLINE`
    /// lines, as `infer-disciplines` prints them) instead of inferring.
    #[arg(long, value_name = "FILE.grits")]
    spec: Option<PathBuf>,
    /// JIT: call the first pass for every access instead of its inline test
    /// (measurement only).
    #[arg(long, hide = true)]
    no_inline_filter: bool,
    /// JIT: deliver every access that reaches the detector instead of deciding
    /// FastTrack's same-epoch cases inline (measurement and tests only).
    #[arg(long, hide = true)]
    no_inline_detector: bool,
    /// Deliver the `Enter`/`Exit` of every call a pass asked for, also of nested calls
    /// on the running capsule (measurement and tests only).
    #[arg(long, hide = true)]
    no_elide_frames: bool,
}

#[derive(Args, Debug)]
struct AnalyzeArgs {
    /// The trace (RAPID STD format with capvm's extension, or a compressed `.slp`,
    /// recognised by content, or a ZipTrack directory).
    trace: PathBuf,
    /// Analysis chain [default: fasttrack].
    #[arg(long, value_name = "CHAIN")]
    tools: Option<String>,
    /// Write the warnings and statistics as JSON to this file.
    #[arg(long, value_name = "FILE.json")]
    report: Option<PathBuf>,
    /// Print per-pass statistics and the throughput on stderr.
    #[arg(long)]
    stats: bool,
    /// Read and analyse on one thread (default: the reader runs on a thread of its
    /// own, handing batches of events to the analysis).
    #[arg(long)]
    single_thread: bool,
    /// Check the `grits` pass's locations against this spec instead of inferring.
    #[arg(long, value_name = "FILE.grits")]
    spec: Option<PathBuf>,
}

/// `os` or `seeded:SEED`.
pub fn parse_sched(s: &str) -> Result<SchedKind, String> {
    if s == "os" {
        return Ok(SchedKind::Os);
    }
    match s.strip_prefix("seeded:").map(str::parse::<u64>) {
        Some(Ok(n)) => Ok(SchedKind::Seeded(n)),
        _ => Err(format!(
            "expected `os` or `seeded:SEED` (SEED a non-negative integer), found `{s}`"
        )),
    }
}

/// Run the command line; returns the exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> i32 {
    reset_lost_output();
    let code = run_cli(args);
    if lost_output() { EXIT_OUTPUT } else { code }
}

fn run_cli(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind as K;
            note_write(e.print());
            return match e.kind() {
                K::DisplayHelp | K::DisplayVersion => EXIT_OK,
                _ => {
                    if !e.to_string().contains("Usage:") {
                        sayln!("\n{}", usage(&args));
                    }
                    EXIT_USAGE
                }
            };
        }
    };
    match cli.cmd {
        Cmd::Run(a) => cmd_run(a),
        Cmd::Check { file } => match compile(&file) {
            Ok(_) => EXIT_OK,
            Err(code) => code,
        },
        Cmd::Analyze(a) => cmd_analyze(a),
        Cmd::Compress(a) => crate::tool::slp::cmd_compress(a),
        Cmd::InferCapsules(a) => cmd_infer(a),
        Cmd::InferDisciplines(a) => crate::tool::grits::cmd_infer_disciplines(a),
        Cmd::Bench(a) => crate::tool::bench::cmd_bench(a),
    }
}

/// The usage line of the subcommand named in `args` (or of `capvm`).
fn usage(args: &[OsString]) -> String {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let sub = args.get(1).and_then(|a| a.to_str()).unwrap_or("");
    match cmd.find_subcommand_mut(sub) {
        Some(sc) => sc
            .clone()
            .bin_name(format!("capvm {sub}"))
            .render_usage()
            .to_string(),
        None => cmd.render_usage().to_string(),
    }
}

fn color() -> bool {
    std::io::stderr().is_terminal()
}

/// Read and compile one file; diagnostics (and warnings) go to stderr.
pub(crate) fn compile(path: &Path) -> Result<lang::ir::Program, i32> {
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            sayln!("error: cannot read {}: {e}", path.display());
            return Err(EXIT_COMPILE);
        }
    };
    let files = vec![lang::ir::SourceFile {
        name: path.display().to_string(),
        text,
    }];
    match lang::compile(files.clone()) {
        Ok(c) => {
            if !c.warnings.is_empty() {
                say!("{}", c.warnings.render(&files, color()));
            }
            Ok(c.program)
        }
        Err(d) => {
            say!("{}", d.render(&files, color()));
            Err(EXIT_COMPILE)
        }
    }
}

fn write_report(path: &Path, report: &serde_json::Value) -> Result<(), i32> {
    let text = serde_json::to_string_pretty(report).unwrap_or_default();
    std::fs::write(path, text + "\n").map_err(|e| {
        sayln!("error: cannot write {}: {e}", path.display());
        EXIT_OUTPUT
    })
}

fn cmd_run(a: RunArgs) -> i32 {
    let capsules = match &a.capsules {
        None => None,
        Some(spec) => match capsule_names(spec, &a.file) {
            Ok(c) => Some(c),
            Err(code) => return code,
        },
    };
    let grits = match &a.spec {
        None => None,
        Some(path) => {
            let tools = a.tools.as_deref().unwrap_or(crate::run::DEFAULT_TOOLS);
            if let Err(code) = crate::tool::grits::check_chain_has_grits(tools) {
                return code;
            }
            match crate::tool::grits::load_spec(path) {
                Ok(s) => Some(crate::tool::grits::spec_chain(
                    tools,
                    s,
                    a.record.clone(),
                    capsules.clone(),
                )),
                Err(code) => return code,
            }
        }
    };
    let program = match compile(&a.file) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let cfg = RunConfig {
        capsules,
        tools: a.tools,
        chain_factory: grits,
        sched: a.sched,
        tier: a.tier,
        record: a.record,
        max_steps: a.max_steps.unwrap_or(u64::MAX),
        max_threads: a.max_threads,
        max_heap: a.max_heap.unwrap_or(DEFAULT_MAX_HEAP),
        capture_stdout: false,
        inline_filter: !a.no_inline_filter,
        inline_detector: !a.no_inline_detector,
        elide_frames: !a.no_elide_frames,
        exit_after: true,
        stats: a.stats || a.report.is_some(),
    };
    let out = match run_program(Arc::new(program), &cfg) {
        Ok(o) => o,
        Err(e) => {
            sayln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    for w in &out.warnings_text {
        say!("{w}");
    }
    if let Some(t) = &out.error_text {
        say!("{t}");
    }
    if a.stats {
        say!("{}", out.stats_text);
    }
    if let Some(p) = &a.report
        && let Err(code) = write_report(p, &out.report)
    {
        return code;
    }
    for e in &out.output_errors {
        sayln!("error: {e}");
    }
    out.exit.code()
}

/// `--capsules C1,C2` or `--capsules inferred` (FILE.capsules).
fn capsule_names(spec: &str, file: &Path) -> Result<Vec<String>, i32> {
    if spec.trim() != "inferred" {
        return Ok(spec
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect());
    }
    let path = capsules_path(file);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(parse_capsules_file(&text)),
        Err(e) => {
            sayln!(
                "error: --capsules inferred: cannot read {}: {e}\n\
                 run `capvm infer-capsules {}` first",
                path.display(),
                file.display()
            );
            Err(EXIT_USAGE)
        }
    }
}

fn cmd_infer(a: InferArgs) -> i32 {
    let program = match compile(&a.file) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let base = RunConfig {
        sched: a.sched,
        tier: a.tier,
        max_steps: a.max_steps.unwrap_or(u64::MAX),
        ..RunConfig::default()
    };
    let inf = match infer(Arc::new(program), &base, a.max_rounds, true) {
        Ok(i) => i,
        Err(InferError::Config(e)) => {
            sayln!("error: {e}");
            return EXIT_USAGE;
        }
        Err(InferError::Runtime(text)) => {
            say!("{text}");
            sayln!("error: infer-capsules stopped: a run ended with a runtime error");
            return EXIT_RUNTIME;
        }
        Err(InferError::NoFixedPoint { rounds, remaining }) => {
            sayln!(
                "error: no fixed point after {rounds} runs (still capsules: {}); raise --max-rounds",
                remaining.join(", ")
            );
            return EXIT_WARNINGS;
        }
    };
    let shown = {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        write!(out, "{}", render(&inf)).and_then(|()| out.flush())
    };
    let path = capsules_path(&a.file);
    let text: String = inf.capsules.iter().map(|c| format!("{c}\n")).collect();
    if let Err(e) = std::fs::write(&path, text) {
        sayln!("error: cannot write {}: {e}", path.display());
        return EXIT_OUTPUT;
    }
    if let Err(e) = shown {
        sayln!("error: cannot write to stdout: {e}");
        return EXIT_OUTPUT;
    }
    EXIT_OK
}

fn cmd_analyze(a: AnalyzeArgs) -> i32 {
    use analyses::offline::{Mode, StreamError, analyze_stream};
    use analyses::trace::{ReadError, TraceInput};
    let spec = a.tools.as_deref().unwrap_or(DEFAULT_ANALYZE_TOOLS);
    if crate::tool::slp::is_slp_file(&a.trace) || a.trace.is_dir() {
        return crate::tool::slp::cmd_analyze_slp(&a.trace, spec, a.report.as_deref(), a.stats);
    }
    // A recorded trace carries the program's sites: fold by sites, as the run that
    // wrote it did (same warnings and counts). Any other trace gives every event a
    // site of its own (its line), so folding by sites would keep one warning per racy
    // event: fold by location instead, one warning per analysis and location.
    let grits_spec = match &a.spec {
        None => None,
        Some(path) => {
            if let Err(code) = crate::tool::grits::check_chain_has_grits(spec) {
                return code;
            }
            match crate::tool::grits::load_spec(path) {
                Ok(s) => Some(s),
                Err(code) => return code,
            }
        }
    };
    let options = |env: &analyses::trace::TraceEnv| ChainOptions {
        fold_by_location: !env.is_recorded(),
        grits_spec: grits_spec.clone(),
        ..ChainOptions::default()
    };
    let mode = if a.single_thread {
        Mode::Single
    } else {
        Mode::Pipelined
    };
    let run = match analyze_stream(TraceInput::File(&a.trace), spec, &options, mode) {
        Ok(r) => r,
        Err(StreamError::Read(ReadError::Io { line: 0, error })) => {
            sayln!("error: cannot read {}: {error}", a.trace.display());
            return EXIT_COMPILE;
        }
        Err(StreamError::Read(e)) => {
            sayln!("error: {}:{e}", a.trace.display());
            return EXIT_COMPILE;
        }
        Err(StreamError::Chain(e)) => {
            sayln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let chain = run.chain;
    let warnings = chain.warnings();
    let env = run.env.clone();
    let mut json = Vec::new();
    for w in &warnings {
        say!("{}", render_text(w, &*env, &chain.shared.ctxs));
        json.push(analyses::report::warning_json(w, &*env, &chain.shared.ctxs));
    }
    // Taken once: a pass's statistics may walk its whole shadow state.
    let stats = (a.stats || a.report.is_some()).then(|| chain.stats_json());
    if let Some(st) = stats.as_ref().filter(|_| a.stats) {
        say!("{}", analyses::Chain::stats_text_of(st));
        let mb = run.bytes as f64 / 1e6;
        let rate = run.events as f64 / run.seconds.max(1e-9);
        sayln!(
            "throughput: {} events, {mb:.1} MB in {:.3} s: {:.1} M events/s, {:.0} MB/s",
            run.events,
            run.seconds,
            rate / 1e6,
            mb / run.seconds.max(1e-9)
        );
    }
    if let Some(p) = &a.report {
        let report = serde_json::json!({ "warnings": json, "stats": stats });
        if let Err(code) = write_report(p, &report) {
            return code;
        }
    }
    if warnings.is_empty() {
        EXIT_OK
    } else {
        EXIT_WARNINGS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("3MB"), Ok(3 << 20));
        assert!(parse_size("x").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999T").is_err());
    }

    #[test]
    fn scheds() {
        assert_eq!(parse_sched("os"), Ok(SchedKind::Os));
        assert_eq!(parse_sched("seeded:42"), Ok(SchedKind::Seeded(42)));
        assert!(parse_sched("seeded:").is_err());
        assert!(parse_sched("fair").is_err());
    }

    #[test]
    fn bad_flags_exit_64_and_help_exits_0() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(main(args(&["capvm", "run", "x.cj", "--bogus"])), EXIT_USAGE);
        assert_eq!(
            main(args(&["capvm", "run", "x.cj", "--sched", "x"])),
            EXIT_USAGE
        );
        assert_eq!(main(args(&["capvm"])), EXIT_USAGE);
        assert_eq!(main(args(&["capvm", "--help"])), EXIT_OK);
        assert_eq!(main(args(&["capvm", "--version"])), EXIT_OK);
        assert_eq!(
            main(args(&["capvm", "run", "x.cj", "--tier", "fast"])),
            EXIT_USAGE
        );
    }
}
