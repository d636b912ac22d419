//! The tables `capvm bench` prints: slowdown, peak memory and check ratio (rows
//! configurations, columns kernels and the geometric mean), then, for each chain with
//! the `capsule` filter, its location categories (Rhodes thesis Table 5.1) and filtered
//! fractions (Table 5.2). A cell whose run hit a limit shows it (`>60s`, `OOM`); a
//! geometric mean says when it is a lower bound (`>`) or covers fewer kernels
//! (`(9/10)`).

use analyses::filterstats::{Category, KindCategories};

use super::measure::Limits;
use super::summary::{BARE, CapsuleStats, CellSummary, Mean, Summary};
use super::table::Table;

/// `3.21x`, `12.3x`; `-` when absent.
pub fn ratio(x: Option<f64>) -> String {
    match x {
        Some(v) if v < 9.995 => format!("{v:.2}x"),
        Some(v) => format!("{v:.1}x"),
        None => "-".into(),
    }
}

/// `42.1%`; `-` when absent.
pub fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{:.1}%", v * 100.0))
}

/// A geometric mean: `>` before it when it counts lower bounds, `(k/N)` after it when it
/// covers k of the N kernels; `-` when absent.
pub fn mean_text(m: &Mean, kernels: usize, fmt: fn(Option<f64>) -> String) -> String {
    if m.value.is_none() {
        return "-".into();
    }
    let mut t = fmt(m.value);
    if m.lower_bounds > 0 {
        t.insert(0, '>');
    }
    if m.kernels < kernels {
        t.push_str(&format!(" ({}/{kernels})", m.kernels));
    }
    t
}

/// Formats one cell of a matrix.
type CellFmt = fn(&CellSummary) -> String;

/// A configuration × kernel matrix of one metric, with a column of its mean, headed
/// `mean_name`. A cell whose run hit a limit shows the limit.
#[allow(clippy::too_many_arguments)]
fn matrix(
    s: &Summary,
    limits: &Limits,
    configs: &[&str],
    bare_label: Option<(&str, CellFmt)>,
    cell: CellFmt,
    mean: fn(&super::summary::ChainMean) -> &Mean,
    mean_name: &str,
    fmt: fn(Option<f64>) -> String,
) -> String {
    let mut header = vec!["chain".to_string()];
    header.extend(s.kernels.iter().map(|k| k.kernel.clone()));
    header.push(mean_name.into());
    let mut t = Table::new(header);
    for &c in configs {
        let bare = c == BARE;
        let (label, f) = match (bare, bare_label) {
            (true, Some((label, f))) => (label.to_string(), f),
            (true, None) => continue,
            (false, _) => (c.to_string(), cell),
        };
        let mut row = vec![label];
        row.extend(s.kernels.iter().map(|k| {
            s.cell(&k.kernel, c).map_or_else(
                || "-".into(),
                |x| x.status.mark(limits).unwrap_or_else(|| f(x)),
            )
        }));
        row.push(if bare {
            String::new()
        } else {
            s.mean(c)
                .map_or_else(|| "-".into(), |m| mean_text(mean(m), s.kernels.len(), fmt))
        });
        t.row(row);
    }
    t.render()
}

/// `4 GiB`, `512 MiB`, `1536 KiB`: a size as given to `--mem-limit`.
pub fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// Percent without decimals for the category columns.
fn whole_pct(x: f64) -> String {
    format!("{:.0}", x * 100.0)
}

fn kind_cells(k: &KindCategories) -> Vec<String> {
    let mut v = vec![k.total.to_string()];
    if k.total == 0 {
        v.extend(std::iter::repeat_n(
            "-".to_string(),
            Category::ALL.len() + 1,
        ));
        return v;
    }
    for c in Category::ALL {
        v.push(whole_pct(
            k.categories.get(c.name()).copied().unwrap_or(0.0),
        ));
    }
    v.push(whole_pct(k.filtered));
    v
}

fn capsule_row(label: &str, c: &CapsuleStats) -> Vec<String> {
    let mut row = vec![label.to_string()];
    row.extend(kind_cells(&c.object));
    row.extend(kind_cells(&c.array));
    let acc = (c.accesses_in > 0).then(|| c.dropped as f64 / c.accesses_in as f64);
    row.push(pct(acc));
    row
}

/// The capsule filter of `chain`: per kernel (a kernel whose run hit a limit: the limit)
/// and pooled.
fn capsule_table(s: &Summary, chain: &str, limits: &Limits) -> String {
    let abbrev = ["C", "CP", "SCA", "RS", "O", "M"];
    let mut header = vec!["kernel".to_string()];
    for kind in ["obj", "arr"] {
        header.push(format!("{kind} n"));
        header.extend(abbrev.iter().map(|a| a.to_string()));
        header.push(format!("{kind} filt"));
    }
    header.push("acc filt".into());
    let mut t = Table::new(header);
    for k in &s.kernels {
        let Some(cell) = s.cell(&k.kernel, chain) else {
            continue;
        };
        if let Some(c) = &cell.capsule {
            t.row(capsule_row(&k.kernel, c));
        } else if let Some(mark) = cell.status.mark(limits) {
            t.row(vec![k.kernel.clone(), mark]);
        }
    }
    if let Some(p) = s.mean(chain).and_then(|m| m.capsule_pooled.as_ref()) {
        t.rule();
        t.row(capsule_row("all (pooled)", p));
    }
    t.render()
}

/// Everything `capvm bench` prints on stdout after the runs.
pub fn render(s: &Summary, configs: &[String], head: &str, reps: u32, limits: &Limits) -> String {
    let configs: Vec<&str> = configs.iter().map(String::as_str).collect();
    let chains: Vec<&str> = configs.iter().copied().filter(|c| *c != BARE).collect();
    let mut out = format!("{head}\n\n");
    let limited = s
        .kernels
        .iter()
        .flat_map(|k| &k.configs)
        .any(|c| c.status.limited());
    if limited {
        out.push_str(&format!(
            "Runs that hit a limit: `{}` the time limit, `OOM` the memory limit ({}); such a\n\
             (kernel, chain) is not run again. A geometric mean with `>` counts them at the\n\
             limit (a lower bound); `(k/N)`: over k of the N kernels (none where bare hit a limit).\n\n",
            super::measure::Status::TimeLimit
                .mark(limits)
                .unwrap_or_default(),
            size_text(limits.mem_bytes),
        ));
    }
    out.push_str(&format!(
        "Slowdown vs bare, wall-clock time (median of {reps}; row `none`: bare seconds)\n"
    ));
    out.push_str(&matrix(
        s,
        limits,
        &configs,
        Some(("none (s)", |c| format!("{:.3}", c.wall_s))),
        |c| ratio(c.slowdown),
        |m| &m.slowdown,
        "geomean",
        ratio,
    ));
    out.push_str(&format!(
        "\nPeak memory (max RSS) vs bare (median of {reps}; row `none`: bare MiB)\n"
    ));
    out.push_str(&matrix(
        s,
        limits,
        &configs,
        Some(("none (MiB)", |c| format!("{:.1}", c.max_rss_kib / 1024.0))),
        |c| ratio(c.mem_ratio),
        |m| &m.mem_ratio,
        "geomean",
        ratio,
    ));
    out.push_str(
        "\nCheck ratio: accesses checked by the last pass (in - dropped) / all accesses (into pass 0); \
         `bigfoot`: checks of shadow locations / heap accesses (Table 3.1); mean: arithmetic\n",
    );
    out.push_str(&matrix(
        s,
        limits,
        &chains,
        None,
        |c| pct(c.check_ratio),
        |m| &m.check_ratio,
        "mean",
        pct,
    ));
    let capsule_chains: Vec<&str> = chains
        .iter()
        .copied()
        .filter(|c| c.split(':').any(|p| p.trim() == "capsule"))
        .collect();
    for c in capsule_chains {
        out.push_str(&format!(
            "\nCapsule filter in `{c}`: % of object (obj) and array (arr) locations by category\n\
             (C Capsule, CP Capsule-Protected, SCA Single-Capsule-Access, RS Read-Shared, O Other,\n\
             M Mixed; filt = C + CP, filtered; acc filt = accesses the capsule pass dropped)\n"
        ));
        out.push_str(&capsule_table(s, c, limits));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::measure::Status;
    use super::super::summary::{ReportNumbers, Sample, summarize};
    use super::*;

    const LIMITS: Limits = Limits {
        time: std::time::Duration::from_secs(60),
        mem_bytes: 4 << 30,
    };

    fn sample(kernel: &str, chain: &str, wall: f64, report: serde_json::Value) -> Sample {
        Sample {
            rep: 0,
            kernel: kernel.into(),
            chain: chain.into(),
            wall_s: wall,
            cpu_s: wall,
            max_rss_kib: 2048,
            exit: Some(0),
            status: Status::Finished,
            stats: false,
            report: ReportNumbers::from_report(&report),
        }
    }

    #[test]
    fn formats() {
        assert_eq!(ratio(Some(3.214)), "3.21x");
        assert_eq!(ratio(Some(12.34)), "12.3x");
        assert_eq!(ratio(None), "-");
        assert_eq!(pct(Some(0.4214)), "42.1%");
    }

    #[test]
    fn tables_have_a_row_per_configuration_and_a_geomean_column() {
        let cap = serde_json::json!({"stats": {"passes": [
            {"name": "capsule", "accesses_in": 10, "dropped": 5, "details": {"locations": {
                "object": {"total": 4, "filtered": 0.5, "categories": {"Capsule": 0.5, "Other": 0.5}},
                "array": {"total": 0, "filtered": 0.0, "categories": {}}}}},
            {"name": "fasttrack", "accesses_in": 5, "dropped": 0}]}});
        let samples = vec![
            sample("sor", BARE, 0.5, serde_json::json!({})),
            sample("sor", "capsule:fasttrack", 1.5, cap),
        ];
        let configs = vec![BARE.to_string(), "capsule:fasttrack".to_string()];
        let s = summarize(&samples, &["sor".to_string()], &configs);
        let text = render(&s, &configs, "head", 1, &LIMITS);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "head");
        let slow = lines
            .iter()
            .position(|l| l.starts_with("Slowdown"))
            .unwrap();
        assert_eq!(
            lines[slow + 1].split_whitespace().collect::<Vec<_>>(),
            ["chain", "sor", "geomean"]
        );
        assert_eq!(
            lines[slow + 3].split_whitespace().collect::<Vec<_>>(),
            ["none", "(s)", "0.500"]
        );
        assert_eq!(
            lines[slow + 4].split_whitespace().collect::<Vec<_>>(),
            ["capsule:fasttrack", "3.00x", "3.00x"]
        );
        let check = lines
            .iter()
            .position(|l| l.starts_with("Check ratio"))
            .unwrap();
        assert_eq!(
            lines[check + 1].split_whitespace().collect::<Vec<_>>(),
            ["chain", "sor", "mean"]
        );
        assert_eq!(
            lines[check + 3].split_whitespace().collect::<Vec<_>>(),
            ["capsule:fasttrack", "50.0%", "50.0%"]
        );
        let caps = lines
            .iter()
            .position(|l| l.starts_with("Capsule filter"))
            .unwrap();
        let row: Vec<&str> = lines[caps + 5].split_whitespace().collect();
        assert_eq!(
            row,
            [
                "sor", "4", "50", "0", "0", "0", "50", "0", "50", "0", "-", "-", "-", "-", "-",
                "-", "-", "50.0%"
            ]
        );
        assert!(lines.iter().any(|l| l.starts_with("all (pooled)")));
    }

    #[test]
    fn limited_cells_show_the_limit_and_means_say_what_they_cover() {
        let cap = serde_json::json!({"stats": {"passes": [
            {"name": "fasttrack", "accesses_in": 5, "dropped": 0}]}});
        let mut samples = vec![
            sample("a", BARE, 1.0, serde_json::json!({})),
            sample("a", "fasttrack", 2.0, cap.clone()),
            sample("b", BARE, 1.0, serde_json::json!({})),
            sample("b", "fasttrack", 60.0, cap.clone()),
            sample("c", BARE, 60.0, serde_json::json!({})),
            sample("c", "fasttrack", 2.0, cap),
        ];
        samples[3].status = Status::Oom;
        samples[4].status = Status::TimeLimit;
        let configs = vec![BARE.to_string(), "fasttrack".to_string()];
        let kernels: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let s = summarize(&samples, &kernels, &configs);
        let text = render(&s, &configs, "head", 1, &LIMITS);
        let lines: Vec<&str> = text.lines().collect();
        assert!(text.contains("`>60s` the time limit, `OOM` the memory limit (4 GiB)"));
        let row = |title: &str, at: usize| {
            let t = lines.iter().position(|l| l.starts_with(title)).unwrap();
            lines[t + at].split_whitespace().collect::<Vec<_>>()
        };
        assert_eq!(
            row("Slowdown", 3),
            ["none", "(s)", "1.000", "1.000", ">60s"]
        );
        // b is a lower bound (60x), c has no bare time: the mean covers a and b.
        assert_eq!(
            row("Slowdown", 4),
            ["fasttrack", "2.00x", "OOM", "-", ">11.0x", "(2/3)"]
        );
        assert_eq!(row("Peak memory", 4)[2], "OOM");
        assert_eq!(
            row("Check ratio", 3),
            ["fasttrack", "100.0%", "OOM", "100.0%", "100.0%", "(2/3)"]
        );
        let finished = summarize(&samples[..2], &kernels[..1], &configs);
        assert!(!render(&finished, &configs, "head", 1, &LIMITS).contains("hit a limit"));
    }

    #[test]
    fn sizes() {
        assert_eq!(size_text(4 << 30), "4 GiB");
        assert_eq!(size_text(1536 << 20), "1536 MiB");
        assert_eq!(size_text(3 << 10), "3 KiB");
        assert_eq!(size_text(1000), "1000 bytes");
    }

    #[test]
    fn a_limited_kernel_shows_its_limit_in_the_capsule_table() {
        let cap = serde_json::json!({"stats": {"passes": [
            {"name": "capsule", "accesses_in": 10, "dropped": 5, "details": {"locations": {
                "object": {"total": 4, "filtered": 0.5, "categories": {"Capsule": 0.5, "Other": 0.5}},
                "array": {"total": 0, "filtered": 0.0, "categories": {}}}}},
            {"name": "fasttrack", "accesses_in": 5, "dropped": 0}]}});
        let mut samples = vec![
            sample("a", BARE, 1.0, serde_json::json!({})),
            sample("a", "capsule:fasttrack", 2.0, cap.clone()),
            sample("b", BARE, 1.0, serde_json::json!({})),
            sample("b", "capsule:fasttrack", 9.0, cap),
        ];
        samples[3].status = Status::Oom;
        let configs = vec![BARE.to_string(), "capsule:fasttrack".to_string()];
        let kernels: Vec<String> = ["a", "b"].map(String::from).to_vec();
        let text = render(
            &summarize(&samples, &kernels, &configs),
            &configs,
            "head",
            1,
            &LIMITS,
        );
        let rows: Vec<Vec<&str>> = text
            .lines()
            .skip_while(|l| !l.starts_with("Capsule filter"))
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert!(rows.iter().any(|r| r.len() == 18 && r[0] == "a"), "{text}");
        assert!(rows.iter().any(|r| r[..] == ["b", "OOM"]), "{text}");
    }
}
