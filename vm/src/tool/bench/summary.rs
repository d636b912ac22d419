//! What one measured run yields (read from its `--report` JSON) and the summary over
//! repetitions and kernels: medians per (kernel, configuration), ratios to the bare run
//! of the same tier, geometric means over kernels (`docs/architecture.md` "Measuring").
//!
//! A run that hit a limit (`--time-limit`, `--mem-limit`) was killed, so its wall time
//! and peak RSS are lower bounds of what a complete run would take. A cell with such a
//! run keeps the medians (the median is monotone in each run, so it is a lower bound
//! too) and the limit as its status; its ratios are lower bounds, and a geometric mean
//! over them is one. A kernel whose bare run hit a limit has no ratios at all.

use analyses::filterstats::{FilterStats, KindCategories, LocKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::measure::Status;

/// The configuration without analysis.
pub const BARE: &str = "none";

/// One pass's counters in a run's report (`stats.passes[i]`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PassCounts {
    pub name: String,
    pub events_in: u64,
    pub accesses_in: u64,
    pub dropped: u64,
}

/// The `capsule` pass of a run: accesses in and dropped, the categories of its
/// locations of kind `object` and `array` (Table 5.1's categories as fractions of the
/// locations, and the filtered fraction).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CapsuleStats {
    pub accesses_in: u64,
    pub dropped: u64,
    pub object: KindCategories,
    pub array: KindCategories,
}

/// The numbers of one run's report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReportNumbers {
    pub passes: Vec<PassCounts>,
    pub capsule: Option<CapsuleStats>,
    pub warnings: usize,
    /// The `bigfoot` pass's checks of its shadow locations, if the chain has it: Table
    /// 3.1's checks, every time a check examines a shadow location, whether the
    /// same-epoch test decides it (`same_epoch_checks`, inline or not) or a FastTrack
    /// rule is applied (`shadow_checks`). FastTrack examines one per access, by
    /// construction. A check the footprint covers examines none.
    pub location_checks: Option<u64>,
}

impl ReportNumbers {
    /// Read `{"warnings":[…], "stats":{"passes":[…]}}`; absent fields count as zero.
    pub fn from_report(v: &Value) -> ReportNumbers {
        let u = |p: &Value, k: &str| p.get(k).and_then(Value::as_u64).unwrap_or(0);
        let passes_json: &[Value] = v
            .pointer("/stats/passes")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let passes = passes_json
            .iter()
            .map(|p| PassCounts {
                name: p.get("name").and_then(Value::as_str).unwrap_or("?").into(),
                events_in: u(p, "events_in"),
                accesses_in: u(p, "accesses_in"),
                dropped: u(p, "dropped"),
            })
            .collect();
        let capsule = passes_json
            .iter()
            .find(|p| p.get("name").and_then(Value::as_str) == Some("capsule"))
            .map(|p| {
                let details = p
                    .get("details")
                    .and_then(|d| FilterStats::deserialize(d).ok())
                    .unwrap_or_default();
                let kind = |k| details.locations.get(&k).cloned().unwrap_or_default();
                CapsuleStats {
                    accesses_in: u(p, "accesses_in"),
                    dropped: u(p, "dropped"),
                    object: kind(LocKind::Field),
                    array: kind(LocKind::Array),
                }
            });
        let location_checks = passes_json
            .iter()
            .find(|p| p.get("name").and_then(Value::as_str) == Some("bigfoot"))
            .map(|p| {
                let d = |k: &str| {
                    p.pointer(&format!("/details/{k}"))
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                };
                d("shadow_checks") + d("same_epoch_checks")
            });
        ReportNumbers {
            location_checks,
            passes,
            capsule,
            warnings: v
                .get("warnings")
                .and_then(Value::as_array)
                .map_or(0, Vec::len),
        }
    }

    /// The seeds' check ratio: accesses checked by the last pass of the chain (those
    /// reaching it and not dropped by it) over all accesses (those into the first pass,
    /// which counts the ones the JIT filtered inline for it as in and dropped). A
    /// one-pass chain with an inline filter thus checks less than 100%. `None` without
    /// a pass or without accesses.
    pub fn check_ratio(&self) -> Option<f64> {
        if self.location_checks.is_some() {
            return None;
        }
        let first = self.passes.first()?.accesses_in;
        let last = self.passes.last()?;
        let checked = last.accesses_in.saturating_sub(last.dropped);
        (first > 0).then(|| checked as f64 / first as f64)
    }
}

/// One measured run.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    pub rep: u32,
    pub kernel: String,
    pub chain: String,
    pub wall_s: f64,
    /// User + system CPU time of the child.
    pub cpu_s: f64,
    /// Peak resident set of the child (`ru_maxrss`).
    pub max_rss_kib: u64,
    /// `None` when killed by a signal.
    pub exit: Option<i32>,
    /// Whether it ran to its end or hit a limit.
    pub status: Status,
    /// A statistics run (`--report`): its numbers give the cell's statistics, its
    /// times count in no median. A timed run takes no statistics.
    pub stats: bool,
    pub report: ReportNumbers,
}

/// The median; the mean of the two middle values for an even count. `None` if empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The geometric mean of positive ratios; 0 if one of them is 0, `None` if empty.
pub fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    if xs.iter().any(|&x| x <= 0.0) {
        return Some(0.0);
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// The summary of one (kernel, configuration).
#[derive(Clone, Debug, Serialize)]
pub struct CellSummary {
    pub chain: String,
    pub runs: usize,
    /// [`Status::Oom`] if a run hit the memory limit, else [`Status::TimeLimit`] if one
    /// hit the time limit, else [`Status::Finished`]. When limited, the medians and
    /// ratios are lower bounds and the report numbers are absent.
    pub status: Status,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub max_rss_kib: f64,
    /// Median wall time over the bare run's (`None` for bare itself, and when the bare
    /// run hit a limit).
    pub slowdown: Option<f64>,
    pub mem_ratio: Option<f64>,
    pub check_ratio: Option<f64>,
    pub warnings: usize,
    /// From the run with the (lower) median wall time.
    pub capsule: Option<CapsuleStats>,
}

#[derive(Clone, Debug, Serialize)]
pub struct KernelSummary {
    pub kernel: String,
    pub configs: Vec<CellSummary>,
}

/// A geometric mean over the kernels that have the value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Mean {
    /// `None` when no kernel has the value.
    pub value: Option<f64>,
    /// How many kernels it covers.
    pub kernels: usize,
    /// How many of them are lower bounds (a run hit a limit): if any, so is the mean.
    pub lower_bounds: usize,
}

impl Mean {
    /// The geometric mean of `(value, is_lower_bound)` pairs.
    fn of(xs: &[(f64, bool)]) -> Mean {
        Mean::with(xs, geomean)
    }

    /// The arithmetic mean of `(value, is_lower_bound)` pairs: for the check ratio,
    /// as Table 3.1 takes it (a kernel whose checks all vanish, crypt's, would make a
    /// geometric mean about 0 whatever the others do).
    fn arithmetic(xs: &[(f64, bool)]) -> Mean {
        Mean::with(xs, |v| {
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
    }

    fn with(xs: &[(f64, bool)], mean: fn(&[f64]) -> Option<f64>) -> Mean {
        let v: Vec<f64> = xs.iter().map(|x| x.0).collect();
        Mean {
            value: mean(&v),
            kernels: xs.len(),
            lower_bounds: xs.iter().filter(|x| x.1).count(),
        }
    }
}

/// Means over kernels for one configuration: geometric, but for the check ratio.
#[derive(Clone, Debug, Serialize)]
pub struct ChainMean {
    pub chain: String,
    pub slowdown: Mean,
    pub mem_ratio: Mean,
    /// Arithmetic ([`Mean::arithmetic`]), over the kernels whose runs all finished.
    pub check_ratio: Mean,
    /// Capsule locations pooled over kernels (filtered fractions weighted by count).
    pub capsule_pooled: Option<CapsuleStats>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Every kernel of the plan, with the cells it has.
    pub kernels: Vec<KernelSummary>,
    pub geomean: Vec<ChainMean>,
}

impl Summary {
    pub fn cell(&self, kernel: &str, chain: &str) -> Option<&CellSummary> {
        self.kernels
            .iter()
            .find(|k| k.kernel == kernel)?
            .configs
            .iter()
            .find(|c| c.chain == chain)
    }
    pub fn mean(&self, chain: &str) -> Option<&ChainMean> {
        self.geomean.iter().find(|m| m.chain == chain)
    }
}

/// BigFoot's check ratio (Rhodes, Table 3.1): checks of shadow locations
/// ([`ReportNumbers::location_checks`]) over heap accesses. A
/// `bigfoot` run delivers no plain accesses unless a pass before it wants them, so
/// the heap accesses of the kernel are those of its other configurations (the most
/// any chain's first pass saw: the kernels are deterministic).
fn bigfoot_check_ratio(mid: &Sample, samples: &[Sample]) -> Option<f64> {
    let checks = mid.report.location_checks?;
    let accesses = samples
        .iter()
        .filter(|s| s.kernel == mid.kernel && s.status == Status::Finished)
        .filter_map(|s| s.report.passes.first().map(|p| p.accesses_in))
        .max()?;
    (accesses > 0).then(|| checks as f64 / accesses as f64)
}

/// Summarize `samples` for `kernels` × `configs` (`configs[0]` is [`BARE`]). Cells
/// without samples are left out.
pub fn summarize(samples: &[Sample], kernels: &[String], configs: &[String]) -> Summary {
    let mut out = Vec::new();
    for k in kernels {
        let mut cells: Vec<CellSummary> = Vec::new();
        for c in configs {
            let cell: Vec<&Sample> = samples
                .iter()
                .filter(|s| &s.kernel == k && &s.chain == c)
                .collect();
            let runs: Vec<&Sample> = cell.iter().copied().filter(|s| !s.stats).collect();
            if runs.is_empty() {
                continue;
            }
            let col = |f: fn(&Sample) -> f64| runs.iter().map(|s| f(s)).collect::<Vec<f64>>();
            let wall_s = median(&col(|s| s.wall_s)).unwrap_or(0.0);
            let cpu_s = median(&col(|s| s.cpu_s)).unwrap_or(0.0);
            let max_rss_kib = median(&col(|s| s.max_rss_kib as f64)).unwrap_or(0.0);
            let mut by_time = runs.clone();
            by_time.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
            // The statistics: the cell's statistics run's if it finished, else (no
            // such run) the median timed run's.
            let mid = match cell.iter().find(|s| s.stats) {
                Some(s) => (!s.status.limited()).then_some(*s),
                None => Some(by_time[(by_time.len() - 1) / 2]),
            };
            let status = if runs.iter().any(|s| s.status == Status::Oom) {
                Status::Oom
            } else if runs.iter().any(|s| s.status == Status::TimeLimit) {
                Status::TimeLimit
            } else {
                Status::Finished
            };
            let finished = !status.limited();
            let bare = cells
                .iter()
                .find(|b| b.chain == BARE)
                .filter(|b| !b.status.limited());
            let ratio = |x: f64, base: f64| (base > 0.0).then(|| x / base);
            cells.push(CellSummary {
                chain: c.clone(),
                runs: runs.len(),
                status,
                wall_s,
                cpu_s,
                max_rss_kib,
                slowdown: bare
                    .filter(|_| c != BARE)
                    .and_then(|b| ratio(wall_s, b.wall_s)),
                mem_ratio: bare
                    .filter(|_| c != BARE)
                    .and_then(|b| ratio(max_rss_kib, b.max_rss_kib)),
                check_ratio: mid
                    .and_then(|m| {
                        (m.report.check_ratio()).or_else(|| bigfoot_check_ratio(m, samples))
                    })
                    .filter(|_| finished),
                warnings: mid.filter(|_| finished).map_or(0, |m| m.report.warnings),
                capsule: mid
                    .and_then(|m| m.report.capsule.clone())
                    .filter(|_| finished),
            });
        }
        out.push(KernelSummary {
            kernel: k.clone(),
            configs: cells,
        });
    }
    let geomean = configs
        .iter()
        .map(|c| {
            let cells: Vec<&CellSummary> = out
                .iter()
                .filter_map(|k| k.configs.iter().find(|x| &x.chain == c))
                .collect();
            let over = |f: fn(&CellSummary) -> Option<f64>, mean: fn(&[(f64, bool)]) -> Mean| {
                let v: Vec<(f64, bool)> = cells
                    .iter()
                    .filter_map(|x| f(x).map(|v| (v, x.status.limited())))
                    .collect();
                mean(&v)
            };
            let g = |f| over(f, Mean::of);
            let caps: Vec<&CapsuleStats> =
                cells.iter().filter_map(|x| x.capsule.as_ref()).collect();
            ChainMean {
                chain: c.clone(),
                slowdown: g(|x| x.slowdown),
                mem_ratio: g(|x| x.mem_ratio),
                check_ratio: over(|x| x.check_ratio, Mean::arithmetic),
                capsule_pooled: (!caps.is_empty()).then(|| pool(&caps)),
            }
        })
        .collect();
    Summary {
        kernels: out,
        geomean,
    }
}

/// Pool capsule statistics: counts add up, fractions are weighted by location count.
fn pool(caps: &[&CapsuleStats]) -> CapsuleStats {
    let kind = |f: fn(&CapsuleStats) -> &KindCategories| {
        let total: u64 = caps.iter().map(|c| f(c).total).sum();
        let weighted = |x: &dyn Fn(&KindCategories) -> f64| {
            if total == 0 {
                0.0
            } else {
                caps.iter()
                    .map(|c| x(f(c)) * f(c).total as f64)
                    .sum::<f64>()
                    / total as f64
            }
        };
        let names: std::collections::BTreeSet<&String> =
            caps.iter().flat_map(|c| f(c).categories.keys()).collect();
        KindCategories {
            total,
            filtered: weighted(&|k| k.filtered),
            categories: names
                .into_iter()
                .map(|n| {
                    (
                        n.clone(),
                        weighted(&|k| k.categories.get(n).copied().unwrap_or(0.0)),
                    )
                })
                .collect(),
        }
    };
    CapsuleStats {
        accesses_in: caps.iter().map(|c| c.accesses_in).sum(),
        dropped: caps.iter().map(|c| c.dropped).sum(),
        object: kind(|c| &c.object),
        array: kind(|c| &c.array),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn geomean_of_ratios() {
        let g = geomean(&[2.0, 8.0]).unwrap();
        assert!((g - 4.0).abs() < 1e-12);
        let g = geomean(&[1.0, 10.0, 100.0]).unwrap();
        assert!((g - 10.0).abs() < 1e-9);
        assert_eq!(geomean(&[3.0, 0.0]), Some(0.0));
        assert_eq!(geomean(&[]), None);
    }

    fn report(first: u64, last: u64, obj_total: u64, obj_filtered: f64) -> Value {
        serde_json::json!({
            "warnings": [{"kind": "race"}],
            "stats": {"passes": [
                {"name": "capsule", "events_in": first + 5, "accesses_in": first, "dropped": first - last,
                 "details": {"locations": {
                    "object": {"total": obj_total, "filtered": obj_filtered,
                               "categories": {"Capsule": obj_filtered, "Other": 1.0 - obj_filtered}},
                    "array": {"total": 0, "filtered": 0.0, "categories": {}}}}},
                {"name": "fasttrack", "events_in": last + 5, "accesses_in": last, "dropped": 0}
            ]}
        })
    }

    #[test]
    fn reads_counters_check_ratio_and_capsule_categories() {
        let r = ReportNumbers::from_report(&report(200, 50, 4, 0.25));
        assert_eq!(r.passes.len(), 2);
        assert_eq!(r.passes[1].name, "fasttrack");
        assert_eq!(r.check_ratio(), Some(0.25));
        assert_eq!(r.warnings, 1);
        let c = r.capsule.unwrap();
        assert_eq!((c.accesses_in, c.dropped), (200, 150));
        assert_eq!(c.object.total, 4);
        assert_eq!(c.object.categories["Capsule"], 0.25);
        // One pass whose inline filter dropped 30 of 120 accesses.
        let one = ReportNumbers::from_report(&serde_json::json!({"stats": {"passes": [
            {"name": "escape", "accesses_in": 120, "dropped": 30}]}}));
        assert_eq!(one.check_ratio(), Some(0.75));
        let bare = ReportNumbers::from_report(&serde_json::json!({"stats": {}, "warnings": []}));
        assert_eq!(bare.check_ratio(), None);
        assert!(bare.capsule.is_none());
    }

    fn sample(kernel: &str, chain: &str, wall: f64, rss: u64, rep: &Value) -> Sample {
        Sample {
            rep: 0,
            kernel: kernel.into(),
            chain: chain.into(),
            wall_s: wall,
            cpu_s: wall,
            max_rss_kib: rss,
            exit: Some(0),
            status: Status::Finished,
            stats: false,
            report: ReportNumbers::from_report(rep),
        }
    }

    #[test]
    fn summary_medians_ratios_and_geomeans() {
        let none = serde_json::json!({});
        let mut s = Vec::new();
        for (w, r) in [(1.0, 100), (3.0, 100), (2.0, 100)] {
            s.push(sample("a", BARE, w, r, &none));
        }
        s.push(sample("b", BARE, 0.5, 200, &none));
        // a: median 8.0 (the report of that run gives check ratio 0.5).
        s.push(sample(
            "a",
            "capsule:fasttrack",
            8.0,
            300,
            &report(100, 50, 2, 0.5),
        ));
        s.push(sample(
            "a",
            "capsule:fasttrack",
            9.0,
            300,
            &report(100, 90, 2, 0.5),
        ));
        s.push(sample(
            "a",
            "capsule:fasttrack",
            7.0,
            300,
            &report(100, 10, 2, 0.5),
        ));
        s.push(sample(
            "b",
            "capsule:fasttrack",
            4.0,
            800,
            &report(100, 20, 6, 1.0),
        ));
        let kernels = vec!["a".to_string(), "b".to_string()];
        let configs = vec![BARE.to_string(), "capsule:fasttrack".to_string()];
        let sum = summarize(&s, &kernels, &configs);
        let a = sum.cell("a", "capsule:fasttrack").unwrap();
        assert_eq!(a.runs, 3);
        assert_eq!(a.slowdown, Some(4.0));
        assert_eq!(a.mem_ratio, Some(3.0));
        assert_eq!(a.check_ratio, Some(0.5));
        let b = sum.cell("b", "capsule:fasttrack").unwrap();
        assert_eq!(b.slowdown, Some(8.0));
        assert_eq!(b.mem_ratio, Some(4.0));
        assert!(sum.cell("a", BARE).unwrap().slowdown.is_none());
        let m = sum.mean("capsule:fasttrack").unwrap();
        assert!((m.slowdown.value.unwrap() - 32f64.sqrt()).abs() < 1e-12);
        assert_eq!((m.slowdown.kernels, m.slowdown.lower_bounds), (2, 0));
        assert!((m.mem_ratio.value.unwrap() - 12f64.sqrt()).abs() < 1e-12);
        // The check ratio's mean is arithmetic (Table 3.1's): (0.5 + 0.2) / 2.
        assert!((m.check_ratio.value.unwrap() - 0.35).abs() < 1e-12);
        // Pooled: (2 * 0.5 + 6 * 1.0) / 8 of the object locations are filtered.
        let pooled = m.capsule_pooled.as_ref().unwrap();
        assert_eq!(pooled.object.total, 8);
        assert!((pooled.object.filtered - 7.0 / 8.0).abs() < 1e-12);
        assert!((pooled.object.categories["Other"] - 1.0 / 8.0).abs() < 1e-12);
        assert!(sum.mean(BARE).unwrap().capsule_pooled.is_none());
    }

    #[test]
    fn bigfoot_check_ratio_counts_every_check_of_a_shadow_location() {
        // 1,000 heap accesses (the most any chain's first pass saw); `bigfoot`'s
        // checks: 300 decided by the same-epoch test, 20 rule applications, and 500
        // covered by the footprint, which examine no shadow location.
        let ft = serde_json::json!({"stats": {"passes": [
            {"name": "fasttrack", "accesses_in": 1000, "dropped": 0}]}});
        let bf = serde_json::json!({"stats": {"passes": [
            {"name": "bigfoot", "accesses_in": 0, "dropped": 0, "details": {
                "checks": 820, "same_epoch_checks": 300, "shadow_checks": 20}}]}});
        let none = serde_json::json!({});
        let s = vec![
            sample("a", BARE, 1.0, 100, &none),
            sample("a", "fasttrack", 4.0, 300, &ft),
            sample("a", "bigfoot", 2.0, 200, &bf),
        ];
        let r = ReportNumbers::from_report(&bf);
        assert_eq!((r.location_checks, r.check_ratio()), (Some(320), None));
        let configs = vec![BARE.to_string(), "fasttrack".into(), "bigfoot".into()];
        let sum = summarize(&s, &["a".to_string()], &configs);
        assert_eq!(sum.cell("a", "fasttrack").unwrap().check_ratio, Some(1.0));
        assert_eq!(sum.cell("a", "bigfoot").unwrap().check_ratio, Some(0.32));
    }

    /// A cell's statistics come from its statistics run, whose time counts in no
    /// median; a limited statistics run leaves the cell without them.
    #[test]
    fn statistics_come_from_the_statistics_run_and_times_from_the_timed_runs() {
        let none = serde_json::json!({});
        let rep = report(100, 50, 2, 0.5);
        let mut s = vec![
            sample("a", BARE, 1.0, 100, &none),
            sample("a", "fasttrack", 3.0, 200, &none),
            sample("a", "fasttrack", 5.0, 200, &none),
            sample("a", "fasttrack", 4.0, 200, &none),
            sample("a", "fasttrack", 40.0, 900, &rep),
            sample("b", BARE, 1.0, 100, &none),
            sample("b", "fasttrack", 2.0, 200, &none),
            sample("b", "fasttrack", 60.0, 300, &rep),
        ];
        s[4].stats = true;
        s[7].stats = true;
        s[7].status = Status::TimeLimit;
        let kernels: Vec<String> = ["a", "b"].map(String::from).to_vec();
        let configs = vec![BARE.to_string(), "fasttrack".to_string()];
        let sum = summarize(&s, &kernels, &configs);
        let a = sum.cell("a", "fasttrack").unwrap();
        assert_eq!((a.runs, a.slowdown, a.mem_ratio), (3, Some(4.0), Some(2.0)));
        assert_eq!((a.check_ratio, a.warnings), (Some(0.5), 1));
        assert!(a.capsule.is_some());
        let b = sum.cell("b", "fasttrack").unwrap();
        assert_eq!((b.status, b.slowdown), (Status::Finished, Some(2.0)));
        assert_eq!((b.check_ratio, b.warnings), (None, 0));
        assert!(b.capsule.is_none());
    }

    #[test]
    fn limited_runs_give_lower_bounds_and_a_limited_bare_run_no_ratios() {
        let none = serde_json::json!({});
        let rep = report(100, 50, 2, 0.5);
        let mut s = vec![
            sample("a", BARE, 1.0, 100, &none),
            sample("b", BARE, 2.0, 100, &none),
            sample("c", BARE, 60.0, 100, &none),
            sample("a", "fasttrack", 4.0, 200, &rep),
            sample("b", "fasttrack", 60.0, 300, &rep),
            sample("c", "fasttrack", 1.0, 200, &rep),
        ];
        s[2].status = Status::TimeLimit;
        s[4].status = Status::TimeLimit;
        // A second repetition of `a` hit the memory limit: the cell is OOM.
        s.push(sample("a", "fasttrack", 3.0, 900, &rep));
        s[6].status = Status::Oom;
        let kernels: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let configs = vec![BARE.to_string(), "fasttrack".to_string()];
        let sum = summarize(&s, &kernels, &configs);
        let a = sum.cell("a", "fasttrack").unwrap();
        assert_eq!(a.status, Status::Oom);
        assert_eq!(a.slowdown, Some(3.5));
        assert_eq!(a.check_ratio, None);
        assert!(a.capsule.is_none());
        let b = sum.cell("b", "fasttrack").unwrap();
        assert_eq!(b.status, Status::TimeLimit);
        assert_eq!(b.slowdown, Some(30.0));
        assert_eq!(sum.cell("c", BARE).unwrap().status, Status::TimeLimit);
        let c = sum.cell("c", "fasttrack").unwrap();
        assert_eq!(
            (c.status, c.slowdown, c.mem_ratio),
            (Status::Finished, None, None)
        );
        assert_eq!(c.check_ratio, Some(0.5));
        let m = sum.mean("fasttrack").unwrap();
        assert!((m.slowdown.value.unwrap() - 105f64.sqrt()).abs() < 1e-12);
        assert_eq!((m.slowdown.kernels, m.slowdown.lower_bounds), (2, 2));
        assert_eq!((m.check_ratio.kernels, m.check_ratio.lower_bounds), (1, 0));
    }
}
