//! `capvm infer-capsules`: capsule detection to a fixed point (Rhodes thesis §5.2.2,
//! "capsule inference"). Start with every class a capsule, run the program with the
//! chain `capsule` alone (not `escape:capsule`: `escape` would hide the accesses to
//! thread-local objects and with them some violations), demote every class named by a
//! `capsule-violation`, and run again until a run has no violation.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use lang::ir::Program;

use crate::run::{ConfigError, ExitKind, RunConfig, run_program};

/// The chain of every inference run.
pub const INFER_TOOLS: &str = "capsule";

/// `--max-rounds` default; each round but the last demotes at least one class, so
/// a program with fewer classes always reaches its fixed point.
pub const DEFAULT_MAX_ROUNDS: u32 = 100;

/// One access of a violation: operation, source position, enclosing method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViolationSite {
    pub op: String,
    pub site: String,
}

/// The violation that demoted a class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Demotion {
    pub class: String,
    /// The round (1-based) whose run found it.
    pub round: u32,
    /// `encapsulation`, `synchronization`, … (the warning's `extra["property"]`).
    pub property: String,
    pub message: String,
    /// The earlier operation first, the violating access last.
    pub sites: Vec<ViolationSite>,
}

/// The result of an inference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inference {
    /// The capsule classes, in declaration order.
    pub capsules: Vec<String>,
    pub demoted: Vec<Demotion>,
    /// Number of runs made.
    pub rounds: u32,
}

/// Why an inference stopped without a result.
#[derive(Debug)]
pub enum InferError {
    /// The configuration cannot run (exit 64).
    Config(ConfigError),
    /// A run ended with a runtime error (its rendered text; exit 70).
    Runtime(String),
    /// No fixed point after `--max-rounds` runs (exit 66).
    NoFixedPoint { rounds: u32, remaining: Vec<String> },
}

/// Progress of the rounds on stderr: an indicatif spinner on a terminal, plain
/// lines otherwise.
struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    fn new(enabled: bool) -> Self {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} infer-capsules {msg}") {
                b.set_style(style);
            }
            b.enable_steady_tick(Duration::from_millis(100));
            b
        });
        Progress { bar }
    }

    /// A `transient` line only updates the spinner (plain output skips it).
    fn show(&self, line: String, enabled: bool, transient: bool) {
        match &self.bar {
            Some(b) => b.set_message(line),
            None if enabled && !transient => {
                super::note_write(writeln!(std::io::stderr(), "infer-capsules: {line}"))
            }
            None => {}
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The capsule-violation warnings of a run's JSON report.
fn violations(report: &serde_json::Value, round: u32) -> Vec<Demotion> {
    let Some(ws) = report["warnings"].as_array() else {
        return Vec::new();
    };
    ws.iter()
        .filter(|w| w["kind"] == "capsule-violation")
        .filter_map(|w| {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
            let sites = w["accesses"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|x| ViolationSite {
                            op: text(&x["op"]),
                            site: text(&x["site"]),
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(Demotion {
                class: w["class"].as_str()?.to_string(),
                round,
                property: text(&w["property"]),
                message: text(&w["message"]),
                sites,
            })
        })
        .collect()
}

/// Iterate capsule detection to its fixed point. `base` gives the scheduler, tier and
/// limits; its chain and capsule set are replaced. `progress` shows the rounds on
/// stderr.
pub fn infer(
    program: Arc<Program>,
    base: &RunConfig,
    max_rounds: u32,
    progress: bool,
) -> Result<Inference, InferError> {
    let mut remaining: Vec<String> = program.classes.iter().map(|c| c.name.clone()).collect();
    let mut demoted: Vec<Demotion> = Vec::new();
    let bar = Progress::new(progress);
    let mut round = 0;
    let result = loop {
        if round >= max_rounds {
            break Err(InferError::NoFixedPoint {
                rounds: round,
                remaining,
            });
        }
        round += 1;
        bar.show(
            format!(
                "round {round}: {} capsule classes, running",
                remaining.len()
            ),
            progress,
            true,
        );
        let cfg = RunConfig {
            tools: Some(INFER_TOOLS.into()),
            chain_factory: None,
            record: None,
            capture_stdout: true,
            capsules: Some(remaining.clone()),
            ..base.clone()
        };
        let out = match run_program(program.clone(), &cfg) {
            Ok(o) => o,
            Err(e) => break Err(InferError::Config(e)),
        };
        if out.exit == ExitKind::RuntimeError {
            break Err(InferError::Runtime(out.error_text.unwrap_or_default()));
        }
        // One violation per class and run (the pass reports a class once).
        let found: Vec<Demotion> = violations(&out.report, round)
            .into_iter()
            .filter(|d| remaining.contains(&d.class))
            .collect();
        bar.show(
            format!(
                "round {round}: {} capsule classes, {} violations",
                remaining.len(),
                found.len()
            ),
            progress,
            false,
        );
        if found.is_empty() {
            break Ok(Inference {
                capsules: remaining,
                demoted,
                rounds: round,
            });
        }
        remaining.retain(|c| !found.iter().any(|d| &d.class == c));
        demoted.extend(found);
    };
    bar.finish();
    result
}

/// `FILE.capsules`, beside the program.
pub fn capsules_path(program_file: &Path) -> PathBuf {
    program_file.with_extension("capsules")
}

/// The file's class names, one per line (blank lines and `#` comments skipped).
pub fn parse_capsules_file(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The report on stdout.
pub fn render(inf: &Inference) -> String {
    let mut s = String::new();
    let list = if inf.capsules.is_empty() {
        "(none)".to_string()
    } else {
        inf.capsules.join(", ")
    };
    s.push_str(&format!("capsules: {list}\n"));
    for d in &inf.demoted {
        s.push_str(&format!(
            "demoted {} (round {}): {}\n",
            d.class, d.round, d.message
        ));
        for site in &d.sites {
            s.push_str(&format!("    {} at {}\n", site.op, site.site));
        }
    }
    s.push_str(&format!("fixed point after {} runs\n", inf.rounds));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capsules_file_lines() {
        assert_eq!(
            parse_capsules_file("A\n\n  B  \n# note\n"),
            vec!["A".to_string(), "B".to_string()]
        );
        assert!(parse_capsules_file("").is_empty());
    }

    #[test]
    fn violations_from_report() {
        let r = serde_json::json!({"warnings": [
            {"kind": "race", "accesses": []},
            {"kind": "capsule-violation", "class": "Acct", "property": "encapsulation",
             "message": "encapsulation: x", "accesses": [
                {"op": "read", "site": "a.cj:3:4"}]}
        ]});
        let v = violations(&r, 2);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].class, "Acct");
        assert_eq!(v[0].round, 2);
        assert_eq!(v[0].sites[0].site, "a.cj:3:4");
        let text = render(&Inference {
            capsules: vec![],
            demoted: v,
            rounds: 3,
        });
        assert!(text.starts_with("capsules: (none)\ndemoted Acct (round 2): encapsulation: x\n"));
    }
}
