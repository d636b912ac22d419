//! `capvm bench`: overhead and filter-effectiveness tables (`docs/architecture.md`
//! "Measuring"). Every kernel of `corpus/bench` runs bare and under each chain as a child
//! process of this executable, interleaved (rep → kernel → configuration) so machine
//! drift cancels; each run's checksum is compared with the bare run's. Prints medians,
//! ratios to bare and geometric means over kernels.
//!
//! Every run has a wall-time limit (`--time-limit`, default 60 s) and a memory limit on
//! its resident set (`--mem-limit`, default 4 GiB): a run past one is killed, its cell
//! shows `>60s` or `OOM`, the (kernel, configuration) is not run again in later
//! repetitions, and the tables go on; geometric means count such cells as lower bounds
//! and say how many kernels they cover. Any other failed run (wrong checksum, wrong
//! exit code, a crash) is an error: bench exits 70 after printing the tables.
//!
//! - [`measure`]: one child run under the limits (wall time, CPU time, peak RSS via
//!   `wait4`);
//! - [`summary`]: report counters, medians, geometric means;
//! - [`render`] and [`table`]: the text tables; [`plot`]: the SVG bar chart.

pub mod measure;
pub mod plot;
pub mod render;
pub mod summary;
pub mod table;

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::{
    EXIT_COMPILE, EXIT_OK, EXIT_OUTPUT, EXIT_RUNTIME, EXIT_USAGE, EXIT_WARNINGS, note_write,
    parse_size, parse_tier,
};
use crate::run::{DEFAULT_TOOLS, Tier};
use measure::{Limits, Scratch, Status, run_child};
use summary::{BARE, ReportNumbers, Sample, Summary, summarize};

/// `eprintln!` without the panic: a failed write makes the exit code 74.
fn say(line: &str) {
    note_write(writeln!(std::io::stderr(), "{line}"));
}

/// The chains compared with the bare run by default.
pub const DEFAULT_CHAINS: &[&str] = &[
    "djit",
    "fasttrack",
    "grits",
    "goldilocks",
    "eraser",
    "escape:fasttrack",
    "capsule:fasttrack",
    "escape:capsule:fasttrack",
    "singletrack:fasttrack",
    DEFAULT_TOOLS,
    "bigfoot",
    "escape:capsule:bigfoot",
];

/// Repetitions without `--quick` and with it.
const FULL_REPS: u32 = 5;
const QUICK_REPS: u32 = 3;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The small kernel sizes and fewer repetitions (a few minutes) instead of the
    /// `*_large` kernels.
    #[arg(long)]
    quick: bool,
    /// Kernels to run: names in corpus/bench, comma-separated [default: all].
    #[arg(long, value_name = "K1,K2", value_delimiter = ',')]
    kernels: Option<Vec<String>>,
    /// Chains to compare with the bare run (`none`), comma-separated [default: djit,
    /// fasttrack, grits, goldilocks, eraser, escape:fasttrack, capsule:fasttrack,
    /// escape:capsule:fasttrack, singletrack:fasttrack, escape:capsule:singletrack:fasttrack,
    /// bigfoot, escape:capsule:bigfoot].
    #[arg(long, value_name = "C1,C2", value_delimiter = ',')]
    chains: Option<Vec<String>>,
    /// Execution tier of every run (bare included).
    #[arg(long, value_name = "TIER", value_parser = parse_tier, default_value_t = Tier::Jit)]
    tier: Tier,
    /// Repetitions of every (kernel, configuration); the median is reported
    /// [default: 5, with --quick 3].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    reps: Option<u32>,
    /// Write every run's numbers and the summary as JSON to this file.
    #[arg(long, value_name = "FILE.json")]
    json: Option<PathBuf>,
    /// Draw the slowdowns as a grouped bar chart (SVG).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// The kernel directory [default: corpus/bench, searched from the current directory
    /// and the executable upwards].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Wall-time limit of each run (`90`, `90s`, `1.5s`, `500ms`, `10m`): a run past it
    /// is killed and its cell shows `>LIMIT`.
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "60s")]
    time_limit: Duration,
    /// Memory limit of each run, on its resident set (`4G`, `512M`): a run past it is
    /// killed and its cell shows `OOM`.
    #[arg(long, value_name = "SIZE", value_parser = parse_mem_limit, default_value = "4G")]
    mem_limit: u64,
}

/// `--time-limit`: seconds (`60`, `60s`, `1.5s`), milliseconds (`500ms`) or minutes
/// (`10m`); positive.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|x| x * unit)
        .filter(|x| x.is_finite() && *x > 0.0)
        .and_then(|x| Duration::try_from_secs_f64(x).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("expected a positive time like 60, 90s, 500ms or 10m, found `{s}`"))
}

/// `--mem-limit`: a size as [`parse_size`] reads it, not zero.
fn parse_mem_limit(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        0 => Err(format!(
            "expected a positive size like 512M or 4G, found `{s}`"
        )),
        n => Ok(n),
    }
}

/// A (kernel, configuration) not run again in a repetition: it hit a limit before.
#[derive(Clone, Debug, serde::Serialize)]
struct Skipped {
    rep: u32,
    kernel: String,
    chain: String,
    /// The limit it hit, and in which repetition.
    status: Status,
    hit_in_rep: u32,
}

/// A failed run: wrong checksum or unexpected exit.
#[derive(Clone, Debug, serde::Serialize)]
struct Failure {
    rep: u32,
    kernel: String,
    chain: String,
    message: String,
}

/// Progress on stderr: a bar on a terminal, plain lines otherwise.
enum Progress {
    Bar(ProgressBar),
    Lines { total: u64, done: u64 },
}

impl Progress {
    fn new(total: u64) -> Progress {
        if std::io::stderr().is_terminal() {
            let pb = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "bench {elapsed_precise} [{bar:30}] {pos}/{len} (eta {eta}) {msg}",
            ) {
                pb.set_style(style.progress_chars("=> "));
            }
            Progress::Bar(pb)
        } else {
            Progress::Lines { total, done: 0 }
        }
    }
    fn start(&self, what: &str) {
        if let Progress::Bar(pb) = self {
            pb.set_message(what.to_string());
        }
    }
    fn done(&mut self, what: &str, result: &str) {
        match self {
            Progress::Bar(pb) => pb.inc(1),
            Progress::Lines { total, done } => {
                *done += 1;
                say(&format!("bench [{done}/{total}] {what}: {result}"));
            }
        }
    }
    fn say(&self, line: &str) {
        match self {
            Progress::Bar(pb) => pb.println(line),
            Progress::Lines { .. } => say(line),
        }
    }
    fn finish(&self) {
        if let Progress::Bar(pb) = self {
            pb.finish_and_clear();
        }
    }
}

/// `corpus/bench` under the current directory or the executable's, or one of their
/// ancestors; last, the source tree this binary was built from.
fn find_dir() -> Option<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        roots.extend(cwd.ancestors().map(Path::to_path_buf));
    }
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    roots
        .into_iter()
        .map(|r| r.join("corpus").join("bench"))
        .find(|d| d.is_dir())
}

/// The kernel names in `dir`: `NAME.cj` (not `*_large.cj`), and for the large sizes
/// only those with a `NAME_large.cj`.
fn list_kernels(dir: &Path, quick: bool) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let (Some(stem), Some(ext)) = (p.file_stem(), p.extension()) else {
            continue;
        };
        let stem = stem.to_string_lossy();
        if ext != "cj" || stem.ends_with("_large") {
            continue;
        }
        if quick || dir.join(format!("{stem}_large.cj")).is_file() {
            names.push(stem.into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// A chain `--chains` accepts: known pass names (no `record`, which needs a file).
fn check_chain(chain: &str) -> Result<(), String> {
    if chain.trim().is_empty() {
        return Err("an empty chain (use `none` for the bare run, which always runs)".into());
    }
    for p in chain.split(':').map(str::trim) {
        if p == "record" || !analyses::passes::NAMES.contains(&p) {
            return Err(format!(
                "unknown analysis `{p}` in chain `{chain}` (known: {})",
                analyses::passes::NAMES
                    .iter()
                    .filter(|n| **n != "record")
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(())
}

/// The settings of one `capvm bench` after validation.
struct Plan {
    dir: PathBuf,
    kernels: Vec<String>,
    /// `none` first, then the chains.
    configs: Vec<String>,
    reps: u32,
    tier: Tier,
    quick: bool,
    limits: Limits,
}

impl Plan {
    fn new(a: &BenchArgs) -> Result<Plan, String> {
        let dir = match &a.dir {
            Some(d) => d.clone(),
            None => find_dir().ok_or(
                "cannot find corpus/bench from the current directory or the executable; pass --dir DIR",
            )?,
        };
        let dir = dir.canonicalize().unwrap_or(dir);
        let available = list_kernels(&dir, a.quick)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if available.is_empty() {
            return Err(format!("no kernels in {}", dir.display()));
        }
        let kernels = match &a.kernels {
            None => available.clone(),
            Some(ks) => {
                let mut v: Vec<String> = Vec::new();
                for k in ks.iter().map(|k| k.trim()) {
                    if !available.iter().any(|x| x == k) {
                        return Err(format!(
                            "unknown kernel `{k}` in {} (available: {})",
                            dir.display(),
                            available.join(", ")
                        ));
                    }
                    if !v.iter().any(|x| x == k) {
                        v.push(k.to_string());
                    }
                }
                v
            }
        };
        let chains: Vec<String> = match &a.chains {
            None => DEFAULT_CHAINS.iter().map(|c| c.to_string()).collect(),
            Some(cs) => cs.iter().map(|c| c.trim().to_string()).collect(),
        };
        let mut configs = vec![BARE.to_string()];
        for c in chains {
            if c == BARE {
                continue;
            }
            check_chain(&c)?;
            if !configs.contains(&c) {
                configs.push(c);
            }
        }
        Ok(Plan {
            dir,
            kernels,
            configs,
            reps: a
                .reps
                .unwrap_or(if a.quick { QUICK_REPS } else { FULL_REPS }),
            tier: a.tier,
            quick: a.quick,
            limits: Limits {
                time: a.time_limit,
                mem_bytes: a.mem_limit,
            },
        })
    }

    fn file(&self, kernel: &str) -> PathBuf {
        if self.quick {
            self.dir.join(format!("{kernel}.cj"))
        } else {
            self.dir.join(format!("{kernel}_large.cj"))
        }
    }

    /// The expected stdout of the small size, when `NAME.out` exists.
    fn expected(&self, kernel: &str) -> Option<String> {
        if !self.quick {
            return None;
        }
        std::fs::read_to_string(self.dir.join(format!("{kernel}.out"))).ok()
    }

    /// The order of the configurations in round `rep`: bare first (the checksum
    /// reference), then the chains rotated by `rep` so no chain always follows another.
    fn order(&self, rep: u32) -> Vec<&str> {
        let chains = &self.configs[1..];
        let mut v = vec![self.configs[0].as_str()];
        if !chains.is_empty() {
            let r = rep as usize % chains.len();
            v.extend(chains[r..].iter().chain(&chains[..r]).map(String::as_str));
        }
        v
    }

    fn head(&self) -> String {
        format!(
            "capvm bench: {} kernels ({} sizes{}), {} chains + bare, tier {}, {} rep{}, interleaved; \
             checksum verified in every run; limits per run: {} s wall, {} RSS",
            self.kernels.len(),
            if self.quick { "small" } else { "large" },
            if self.quick { ", --quick" } else { "" },
            self.configs.len() - 1,
            self.tier,
            self.reps,
            if self.reps == 1 { "" } else { "s" },
            self.limits.time.as_secs_f64(),
            render::size_text(self.limits.mem_bytes),
        )
    }
}

/// `capvm bench …`; returns the exit code (70 if a checksum or an exit code was wrong,
/// 74 if `--json` or `--plot` could not be written; a failed write to stdout or stderr
/// makes [`super::cli::main`] return 74).
pub fn cmd_bench(a: BenchArgs) -> i32 {
    let plan = match Plan::new(&a) {
        Ok(p) => p,
        Err(e) => {
            say(&format!("error: {e}"));
            return EXIT_USAGE;
        }
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            say(&format!("error: cannot locate the capvm executable: {e}"));
            return EXIT_RUNTIME;
        }
    };
    let scratch = match Scratch::new() {
        Ok(s) => s,
        Err(e) => {
            say(&format!("error: cannot create a scratch directory: {e}"));
            return EXIT_RUNTIME;
        }
    };
    let Measured {
        samples,
        skipped,
        failures,
    } = match measure_all(&plan, &exe, &scratch) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let summary = summarize(&samples, &plan.kernels, &plan.configs);
    let text = render::render(
        &summary,
        &plan.configs,
        &plan.head(),
        plan.reps,
        &plan.limits,
    );
    let shown = {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    };
    if let Err(e) = shown {
        note_write(Err(e));
        say("error: cannot write the tables to stdout");
    }
    let mut code = EXIT_OK;
    if let Some(p) = &a.json
        && let Err(e) = write_json(p, &plan, &samples, &skipped, &summary, &failures)
    {
        say(&format!("error: cannot write {}: {e}", p.display()));
        code = EXIT_OUTPUT;
    }
    if let Some(p) = &a.plot
        && let Err(e) = std::fs::write(p, svg(&plan, &summary))
    {
        say(&format!("error: cannot write {}: {e}", p.display()));
        code = EXIT_OUTPUT;
    }
    if !failures.is_empty() {
        say(&format!(
            "\nbench: {} FAILED RUN{} (the numbers above include them):",
            failures.len(),
            if failures.len() == 1 { "" } else { "S" }
        ));
        for f in &failures {
            say(&format!(
                "  rep {} kernel {} chain {}: {}",
                f.rep + 1,
                f.kernel,
                f.chain,
                f.message
            ));
        }
        return EXIT_RUNTIME;
    }
    code
}

/// Everything the runs yield.
struct Measured {
    samples: Vec<Sample>,
    skipped: Vec<Skipped>,
    failures: Vec<Failure>,
}

/// Run the whole plan. `Err(code)` aborts: the child could not run, or it rejected the
/// command line (64) or the kernel (65).
fn measure_all(plan: &Plan, exe: &Path, scratch: &Scratch) -> Result<Measured, i32> {
    // Every configuration's runs, and one statistics run per chain and kernel.
    let chains = plan.configs.len().saturating_sub(1) as u64;
    let total = u64::from(plan.reps) * plan.kernels.len() as u64 * plan.configs.len() as u64
        + plan.kernels.len() as u64 * chains;
    let mut progress = Progress::new(total);
    let mut samples = Vec::new();
    let mut skipped = Vec::new();
    let mut failures = Vec::new();
    let expected: Vec<Option<String>> = plan.kernels.iter().map(|k| plan.expected(k)).collect();
    let mut first_bare: Vec<Option<String>> = vec![None; plan.kernels.len()];
    // (kernel index, configuration) → (repetition, limit) of its first limited run.
    let mut hit: HashMap<(usize, &str), (u32, Status)> = HashMap::new();
    for rep in 0..plan.reps {
        for (ki, kernel) in plan.kernels.iter().enumerate() {
            let file = plan.file(kernel);
            // The checksum the chains must print: this round's bare output, or when the
            // bare run hit a limit, an earlier bare run's or `NAME.out`.
            let mut reference: Option<String> =
                first_bare[ki].clone().or_else(|| expected[ki].clone());
            // Each chain's timed run, then in the first repetition its statistics run
            // (`--report`), whose numbers give the cell's check ratio, warnings and
            // capsule categories; a timed run takes no statistics, so it pays for no
            // counting (`RunConfig::stats`) and no census at the end, as `capvm run`
            // without `--stats` or `--report`.
            let runs = plan.order(rep).into_iter().flat_map(|c| {
                let stats = rep == 0 && c != BARE;
                std::iter::once((c, false)).chain(stats.then_some((c, true)))
            });
            // Whether the last timed run finished with no limit hit and no failure:
            // only then does its statistics run follow.
            let mut timed_ok = false;
            for (chain, stats) in runs {
                let what = match stats {
                    false => format!("rep {}/{} {kernel} {chain}", rep + 1, plan.reps),
                    true => format!("statistics {kernel} {chain}"),
                };
                if stats && !timed_ok {
                    progress.done(&what, "not run: the timed run did not finish cleanly");
                    continue;
                }
                timed_ok = false;
                if let Some(&(first, status)) = hit.get(&(ki, chain)) {
                    let mark = status.mark(&plan.limits).unwrap_or_default();
                    progress.done(&what, &format!("skipped ({mark} in rep {})", first + 1));
                    skipped.push(Skipped {
                        rep,
                        kernel: kernel.clone(),
                        chain: chain.to_string(),
                        status,
                        hit_in_rep: first,
                    });
                    continue;
                }
                progress.start(&what);
                let run =
                    match run_child(exe, &file, chain, plan.tier, &plan.limits, scratch, stats) {
                        Ok(r) => r,
                        Err(e) => {
                            progress.finish();
                            say(&format!("error: cannot run {}: {e}", exe.display()));
                            return Err(EXIT_RUNTIME);
                        }
                    };
                let sample = Sample {
                    rep,
                    kernel: kernel.clone(),
                    chain: chain.to_string(),
                    wall_s: run.wall_s,
                    cpu_s: run.cpu_s,
                    max_rss_kib: run.max_rss_kib,
                    exit: run.exit,
                    status: run.status,
                    stats,
                    report: run
                        .report
                        .as_ref()
                        .map(ReportNumbers::from_report)
                        .unwrap_or_default(),
                };
                if let Some(mark) = run.status.mark(&plan.limits) {
                    // Killed: its output is partial and its exit code ours. (A limited
                    // statistics run leaves the cell without statistics; its timed
                    // runs go on.)
                    if !stats {
                        hit.insert((ki, chain), (rep, run.status));
                    }
                    progress.done(
                        &what,
                        &format!(
                            "{mark} (killed after {:.3} s at {:.1} MiB)",
                            run.wall_s,
                            run.max_rss_kib as f64 / 1024.0
                        ),
                    );
                    samples.push(sample);
                    continue;
                }
                if let Some(code @ (EXIT_USAGE | EXIT_COMPILE)) = run.exit {
                    progress.finish();
                    note_write(write!(std::io::stderr(), "{}", run.stderr));
                    say(&format!(
                        "error: `capvm run {} --tools {chain} --tier {}` exited with {code}",
                        file.display(),
                        plan.tier
                    ));
                    return Err(code);
                }
                let mut problems = Vec::new();
                let ok_exit = if chain == BARE {
                    run.exit == Some(EXIT_OK)
                } else {
                    matches!(run.exit, Some(EXIT_OK | EXIT_WARNINGS))
                };
                if !ok_exit {
                    let how = match (run.exit, run.signal) {
                        (Some(c), _) => format!("exit code {c}"),
                        (None, Some(s)) => format!("killed by signal {s}"),
                        (None, None) => "ended abnormally".into(),
                    };
                    let tail: String = run
                        .stderr
                        .lines()
                        .rev()
                        .take(5)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect::<Vec<_>>()
                        .join("\n    ");
                    problems.push(format!("{how}; stderr ends:\n    {tail}"));
                }
                if chain == BARE {
                    if let Some(want) = &expected[ki]
                        && &run.stdout != want
                    {
                        problems.push(format!(
                            "stdout {:?} differs from {kernel}.out {want:?}",
                            run.stdout
                        ));
                    }
                    match &first_bare[ki] {
                        Some(first) if first != &run.stdout => problems.push(format!(
                            "bare stdout {:?} differs from the first bare run's {first:?}",
                            run.stdout
                        )),
                        Some(_) => {}
                        None => first_bare[ki] = Some(run.stdout.clone()),
                    }
                    reference = Some(run.stdout.clone());
                } else if let Some(r) = &reference
                    && &run.stdout != r
                {
                    problems.push(format!(
                        "stdout {:?} differs from the bare run's {r:?}",
                        run.stdout
                    ));
                }
                timed_ok = !stats && problems.is_empty();
                for mut message in problems {
                    if stats {
                        message = format!("statistics run (--report): {message}");
                    }
                    progress.say(&format!(
                        "bench: MISMATCH kernel {kernel}, chain {chain}, rep {}: {message}",
                        rep + 1
                    ));
                    failures.push(Failure {
                        rep,
                        kernel: kernel.clone(),
                        chain: chain.to_string(),
                        message,
                    });
                }
                progress.done(
                    &what,
                    &format!(
                        "{:.3} s, {:.1} MiB, exit {}",
                        run.wall_s,
                        run.max_rss_kib as f64 / 1024.0,
                        run.exit.map_or_else(|| "-".into(), |c| c.to_string())
                    ),
                );
                samples.push(sample);
            }
        }
    }
    progress.finish();
    Ok(Measured {
        samples,
        skipped,
        failures,
    })
}

fn write_json(
    path: &Path,
    plan: &Plan,
    samples: &[Sample],
    skipped: &[Skipped],
    summary: &Summary,
    failures: &[Failure],
) -> std::io::Result<()> {
    let doc = serde_json::json!({
        "tier": plan.tier.to_string(),
        "quick": plan.quick,
        "reps": plan.reps,
        "time_limit_s": plan.limits.time.as_secs_f64(),
        "mem_limit_bytes": plan.limits.mem_bytes,
        "dir": plan.dir.display().to_string(),
        "kernels": plan.kernels,
        "configs": plan.configs,
        "runs": samples,
        "skipped": skipped,
        "summary": summary,
        "failures": failures,
    });
    let text = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)?;
    std::fs::write(path, text + "\n")
}

/// The slowdowns as a grouped bar chart: kernels and the geometric mean × chains. A
/// cell that hit a limit is a marked lower bound; a kernel whose bare run hit one has
/// no bars and says so under its name.
fn svg(plan: &Plan, s: &Summary) -> String {
    let chains: Vec<String> = plan.configs[1..].to_vec();
    let mut groups: Vec<String> = Vec::new();
    let mut values: Vec<Vec<plot::Bar>> = Vec::new();
    for k in &plan.kernels {
        let bare = s.cell(k, BARE).and_then(|b| b.status.mark(&plan.limits));
        groups.push(match &bare {
            Some(m) => format!("{k} (bare {m})"),
            None => k.clone(),
        });
        values.push(
            chains
                .iter()
                .map(|c| match s.cell(k, c) {
                    None => plot::Bar::default(),
                    Some(x) => plot::Bar {
                        value: x.slowdown,
                        lower_bound: x.status.limited(),
                        mark: x.status.mark(&plan.limits).filter(|_| bare.is_none()),
                    },
                })
                .collect(),
        );
    }
    groups.push("geomean".into());
    values.push(
        chains
            .iter()
            .map(|c| match s.mean(c) {
                None => plot::Bar::default(),
                Some(m) => {
                    let m = &m.slowdown;
                    let mut notes = Vec::new();
                    if m.lower_bounds > 0 {
                        notes.push(format!("{} at a limit", m.lower_bounds));
                    }
                    if m.kernels < plan.kernels.len() {
                        notes.push(format!("{}/{} kernels", m.kernels, plan.kernels.len()));
                    }
                    plot::Bar {
                        value: m.value,
                        lower_bound: m.lower_bounds > 0,
                        mark: (!notes.is_empty()).then(|| notes.join(", ")),
                    }
                }
            })
            .collect(),
    );
    let title = format!(
        "capvm slowdown vs bare ({} tier, {} sizes, median of {}, limits {} s / {})",
        plan.tier,
        if plan.quick { "small" } else { "large" },
        plan.reps,
        plan.limits.time.as_secs_f64(),
        render::size_text(plan.limits.mem_bytes),
    );
    plot::bar_chart(&title, "slowdown (x bare)", &groups, &chains, &values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_are_checked() {
        assert!(check_chain("escape:capsule:fasttrack").is_ok());
        assert!(
            check_chain("fasttrack:bogus")
                .unwrap_err()
                .contains("`bogus`")
        );
        assert!(check_chain("record:fasttrack").is_err());
        assert!(check_chain(" ").is_err());
        for c in DEFAULT_CHAINS {
            assert!(check_chain(c).is_ok(), "{c}");
        }
    }

    #[test]
    fn rounds_put_bare_first_and_rotate_the_chains() {
        let plan = Plan {
            dir: PathBuf::new(),
            kernels: vec![],
            configs: ["none", "a", "b", "c"].map(String::from).to_vec(),
            reps: 3,
            tier: Tier::Jit,
            quick: true,
            limits: Limits {
                time: Duration::from_secs(1),
                mem_bytes: 1 << 30,
            },
        };
        assert_eq!(plan.order(0), ["none", "a", "b", "c"]);
        assert_eq!(plan.order(1), ["none", "b", "c", "a"]);
        assert_eq!(plan.order(3), ["none", "a", "b", "c"]);
    }

    #[test]
    fn limits_parse() {
        assert_eq!(parse_duration("60"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        for bad in ["0", "-1s", "x", "", "1h", "nan", "inf", "1e300"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_mem_limit("4G"), Ok(4 << 30));
        assert!(parse_mem_limit("0").is_err() && parse_mem_limit("lots").is_err());
    }
}
