//! `capvm bench` through the binary: the table's shape (never its times), the JSON and
//! SVG outputs, bad names (exit 64), a wrong checksum (exit 70, naming the kernel and
//! chain), runs past `--time-limit` / `--mem-limit` (`>2s` / `OOM` cells, statuses in the
//! JSON, not failures) and unwritable outputs (exit 74).

use std::path::PathBuf;
use std::process::{Command, Output};

const CAPVM: &str = env!("CARGO_BIN_EXE_capvm");

fn bench(args: &[&str]) -> Output {
    Command::new(CAPVM)
        .arg("bench")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run capvm bench")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("capvm-bench-cmd-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[test]
fn quick_sor_fasttrack_prints_the_tables() {
    let dir = scratch("ok");
    let json = dir.join("b.json");
    let svg = dir.join("b.svg");
    let out = bench(&[
        "--quick",
        "--kernels",
        "sor",
        "--chains",
        "fasttrack",
        "--reps",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("capvm bench: 1 kernels (small sizes"),
        "{stdout}"
    );
    for title in ["Slowdown vs bare", "Peak memory", "Check ratio"] {
        let at = lines
            .iter()
            .position(|l| l.starts_with(title))
            .unwrap_or_else(|| panic!("no `{title}` table in:\n{stdout}"));
        // The check ratio's mean is arithmetic (Table 3.1's), the others geometric.
        let mean = if title == "Check ratio" {
            "mean"
        } else {
            "geomean"
        };
        assert_eq!(words(lines[at + 1]), ["chain", "sor", mean], "{stdout}");
        assert!(lines[at + 2].chars().all(|c| c == '-'), "{stdout}");
        let ft = if title == "Check ratio" {
            at + 3
        } else {
            at + 4
        };
        let row = words(lines[ft]);
        assert_eq!(row[0], "fasttrack", "{stdout}");
        assert_eq!(row.len(), 3, "{stdout}");
        if title == "Check ratio" {
            // fasttrack alone: every access that reaches it is checked.
            assert!(row[1].ends_with('%') && row[1] == row[2], "{stdout}");
        } else {
            assert!(row[1].ends_with('x') && row[1] == row[2], "{stdout}");
            assert!(words(lines[at + 3])[0] == "none", "{stdout}");
        }
    }
    // No capsule chain, no capsule table.
    assert!(!stdout.contains("Capsule filter"), "{stdout}");
    // The timed run, then its statistics run (`--report`), which times nothing.
    assert!(
        stderr.contains("bench [2/3] rep 1/1 sor fasttrack")
            && stderr.contains("bench [3/3] statistics sor fasttrack"),
        "{stderr}"
    );

    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json written")).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let stats: Vec<bool> = runs.iter().map(|r| r["stats"].as_bool().unwrap()).collect();
    assert_eq!(stats, [false, false, true]);
    // Only the statistics run's report has the passes' counts.
    assert!(runs[1]["report"]["passes"].as_array().unwrap().is_empty());
    assert!(!runs[2]["report"]["passes"].as_array().unwrap().is_empty());
    assert!(runs.iter().all(|r| r["max_rss_kib"].as_u64().unwrap() > 0));
    let ft = &doc["summary"]["kernels"][0]["configs"][1];
    assert_eq!(ft["chain"], "fasttrack");
    assert!(ft["slowdown"].as_f64().unwrap() > 0.0);
    let svg = std::fs::read_to_string(&svg).expect("svg written");
    assert!(
        svg.starts_with("<svg") && svg.contains(">sor</text>") && svg.contains(">geomean</text>")
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn capsule_chains_get_the_category_table() {
    let out = bench(&[
        "--quick",
        "--kernels",
        "synclist",
        "--chains",
        "capsule:fasttrack",
        "--reps",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("Capsule filter in `capsule:fasttrack`"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let header = words(lines[at + 3]);
    assert_eq!(header[0], "kernel");
    // kernel, then per kind `obj n`, six categories, `obj filt`; then `acc filt`.
    assert_eq!(header.len(), 1 + 2 * (2 + 6 + 2) + 2, "{stdout}");
    let row = words(lines[at + 5]);
    assert_eq!(row[0], "synclist");
    // The synchronized list is a capsule: some object locations are filtered.
    assert_eq!(row.len(), 1 + 2 * 8 + 1, "{stdout}");
    assert!(row[8].parse::<u32>().unwrap() > 0, "{stdout}");
    assert!(lines.iter().any(|l| l.starts_with("all (pooled)")));
}

#[test]
fn unknown_names_exit_64() {
    let out = bench(&["--quick", "--kernels", "nosuch", "--reps", "1"]);
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown kernel `nosuch`") && err.contains("sor"),
        "{err}"
    );
    let out = bench(&["--quick", "--kernels", "sor", "--chains", "fasttrack:bogus"]);
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown analysis `bogus`"), "{err}");
    let out = bench(&["--quick", "--reps", "0"]);
    assert_eq!(out.status.code(), Some(64));
}

#[test]
fn a_wrong_checksum_exits_70_naming_kernel_and_chain() {
    let dir = scratch("bad");
    std::fs::write(
        dir.join("tiny.cj"),
        "class Main {\n    static void main() {\n        print(\"checksum\", 42);\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(dir.join("tiny.out"), "checksum 41\n").unwrap();
    let out = bench(&[
        "--quick",
        "--dir",
        dir.to_str().unwrap(),
        "--chains",
        "fasttrack",
        "--reps",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(70), "{stderr}");
    assert!(
        stderr.contains("MISMATCH kernel tiny, chain none")
            && stderr.contains("differs from tiny.out"),
        "{stderr}"
    );
    // The table is still printed.
    assert!(String::from_utf8_lossy(&out.stdout).contains("Slowdown vs bare"));
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs past `--time-limit` or `--mem-limit` are killed and shown as `>2s` / `OOM`,
/// not run again, and not failures; the tables, JSON and chart go on. Another failed
/// run (a guest runtime error) is still an error (exit 70).
#[test]
fn runs_past_the_limits_show_in_their_cells_and_the_bench_goes_on() {
    let dir = scratch("limits");
    let kernel = |name: &str, body: &str| {
        let src = format!("class Main {{\n    static void main() {{\n{body}    }}\n}}\n");
        std::fs::write(dir.join(format!("{name}.cj")), src).unwrap();
    };
    // Never ends: the time limit.
    kernel(
        "spin",
        "        int i = 0;\n        while (i >= 0) {\n            i = (i + 1) % 1000;\n        }\n        print(\"checksum\", i);\n",
    );
    // 16M ints (128 MiB) written: past a 64 MiB memory limit, whatever the chain.
    kernel(
        "hog",
        "        int[] a = new int[16000000];\n        for (int i = 0; i < a.length; i++) {\n            a[i] = i;\n        }\n        print(\"checksum\", a[7]);\n",
    );
    kernel("tiny", "        print(\"checksum\", 42);\n");
    std::fs::write(dir.join("tiny.out"), "checksum 42\n").unwrap();
    kernel(
        "crash",
        "        int z = 0;\n        print(\"checksum\", 1 / z);\n",
    );
    let json = dir.join("b.json");
    let svg = dir.join("b.svg");
    let out = bench(&[
        "--quick",
        "--dir",
        dir.to_str().unwrap(),
        "--chains",
        "fasttrack",
        "--reps",
        "2",
        "--time-limit",
        "2s",
        "--mem-limit",
        "64M",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let both = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(out.status.code(), Some(70), "{both}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].contains("limits per run: 2 s wall, 64 MiB RSS"),
        "{both}"
    );
    assert!(stdout.contains("`>2s` the time limit, `OOM` the memory limit (64 MiB)"));
    let table = |title: &str| {
        let at = lines
            .iter()
            .position(|l| l.starts_with(title))
            .unwrap_or_else(|| panic!("no `{title}` table in:\n{both}"));
        let mean = if title == "Check ratio" {
            "mean"
        } else {
            "geomean"
        };
        assert_eq!(
            words(lines[at + 1]),
            ["chain", "crash", "hog", "spin", "tiny", mean],
            "{both}"
        );
        at
    };
    let slow = table("Slowdown vs bare");
    let bare = words(lines[slow + 3]);
    assert_eq!(bare[..2], ["none", "(s)"], "{both}");
    assert_eq!(bare[3..5], ["OOM", ">2s"], "{both}");
    assert!(
        bare[2].parse::<f64>().is_ok() && bare[5].parse::<f64>().is_ok(),
        "{both}"
    );
    let ft = words(lines[slow + 4]);
    assert_eq!(ft[0], "fasttrack", "{both}");
    // hog and spin show their limits; crash (a failed run, but within the limits) and
    // tiny have ratios, and the mean covers those two.
    assert_eq!(ft[2..4], ["OOM", ">2s"], "{both}");
    assert!(ft[4].ends_with('x') && ft[1].ends_with('x'), "{both}");
    assert_eq!(ft[6], "(2/4)", "{both}");
    let mem = table("Peak memory");
    assert_eq!(words(lines[mem + 4])[2..4], ["OOM", ">2s"], "{both}");
    let check = table("Check ratio");
    assert_eq!(words(lines[check + 3])[2..4], ["OOM", ">2s"], "{both}");
    // Limited cells are skipped in repetition 2; only the crash is a failure.
    assert!(
        stderr.contains("hog none: skipped (OOM in rep 1)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("spin fasttrack: skipped (>2s in rep 1)"),
        "{stderr}"
    );
    assert!(stderr.contains("4 FAILED RUNS"), "{stderr}");
    assert!(
        !stderr.contains("kernel hog chain") && !stderr.contains("kernel spin chain"),
        "{stderr}"
    );

    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json written")).unwrap();
    assert_eq!(doc["time_limit_s"], 2.0);
    assert_eq!(doc["mem_limit_bytes"], 64 << 20);
    let runs = doc["runs"].as_array().unwrap();
    let status = |kernel: &str| -> Vec<&str> {
        runs.iter()
            .filter(|r| r["kernel"] == kernel)
            .map(|r| r["status"].as_str().unwrap())
            .collect()
    };
    assert_eq!(status("hog"), ["oom", "oom"], "{both}");
    assert_eq!(status("spin"), ["time_limit", "time_limit"], "{both}");
    // tiny's chain also runs once for its statistics; crash's does not (its timed run
    // failed), nor those of the limited cells.
    assert_eq!(status("tiny"), ["finished"; 5], "{both}");
    assert_eq!(status("crash"), ["finished"; 4], "{both}");
    assert_eq!(doc["skipped"].as_array().unwrap().len(), 4);
    assert_eq!(doc["failures"].as_array().unwrap().len(), 4);
    let cell = |k: usize, c: usize| &doc["summary"]["kernels"][k]["configs"][c];
    assert_eq!(cell(1, 1)["status"], "oom");
    assert_eq!(cell(2, 0)["status"], "time_limit");
    assert_eq!(cell(3, 1)["status"], "finished");
    let mean = &doc["summary"]["geomean"][1]["slowdown"];
    assert_eq!(
        (mean["kernels"].as_u64(), mean["lower_bounds"].as_u64()),
        (Some(2), Some(0))
    );
    let svg = std::fs::read_to_string(&svg).expect("svg written");
    assert!(
        svg.contains(">hog (bare OOM)</text>") && svg.contains(">spin (bare &gt;2s)</text>"),
        "{svg}"
    );
    assert!(svg.contains(">2/4 kernels</text>"), "{svg}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unwritable_outputs_exit_74() {
    let dir = scratch("io");
    std::fs::write(
        dir.join("tiny.cj"),
        "class Main {\n    static void main() {\n        print(\"checksum\", 42);\n    }\n}\n",
    )
    .unwrap();
    let args = |extra: &[&str]| {
        let mut v = vec!["--quick", "--chains", "fasttrack", "--reps", "1"];
        v.extend_from_slice(extra);
        v.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let json = dir.join("no such dir").join("b.json");
    let mut a = args(&["--json", json.to_str().unwrap()]);
    a.extend(["--dir".to_string(), dir.to_str().unwrap().to_string()]);
    let out = Command::new(CAPVM).arg("bench").args(&a).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{stderr}");
    assert!(
        stderr.contains("cannot write") && stderr.contains("b.json"),
        "{stderr}"
    );
    // The tables to a full stdout.
    if let Ok(full) = std::fs::File::create("/dev/full") {
        let mut a = args(&[]);
        a.extend(["--dir".to_string(), dir.to_str().unwrap().to_string()]);
        let out = Command::new(CAPVM)
            .arg("bench")
            .args(&a)
            .stdout(full)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(74), "{stderr}");
        assert!(stderr.contains("cannot write the tables"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
