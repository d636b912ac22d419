//! `capvm bench` through the binary: the table's shape (never its times), the JSON and
//! SVG outputs, bad names (exit 64) and a wrong checksum (exit 70, naming the kernel and
//! chain).

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
        assert_eq!(
            words(lines[at + 1]),
            ["chain", "sor", "geomean"],
            "{stdout}"
        );
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
    assert!(
        stderr.contains("bench [2/2] rep 1/1 sor fasttrack"),
        "{stderr}"
    );

    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json written")).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
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
