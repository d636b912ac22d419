//! Compressed traces end to end: property 3 on seeded generated traces (the oracle
//! the `slp_vs_uncompressed` fuzz target runs), and the `capvm` binary on `.slp`
//! files: `compress`, `analyze` on the grammar and on the expansion, `run --record
//! FILE.slp`, ZipTrack directories, and malformed input (exit 65 with a position).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use analyses::testing::{GenConfig, gen_trace};
use vm::testing::slp_oracles::slp_agrees;
use vm::testing::trace_oracles::renumber;

const CAPVM: &str = env!("CARGO_BIN_EXE_capvm");

#[test]
fn property_3_on_generated_traces() {
    for seed in 0..200u64 {
        let cfg = GenConfig {
            threads: 2 + (seed % 4) as u32,
            steps: 20 + (seed % 80) as usize,
            methods: seed.is_multiple_of(2),
            allocs: seed.is_multiple_of(3),
            guarded_percent: (seed % 5) as u32 * 25,
            ..GenConfig::default()
        };
        let trace = renumber(&gen_trace(seed, &cfg)).expect("well-formed");
        slp_agrees(&trace, seed).unwrap_or_else(|e| panic!("trace seed {seed}: {e}"));
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("capvm-slp-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn capvm(args: &[&str]) -> Output {
    Command::new(CAPVM).args(args).output().expect("run capvm")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The warnings of a JSON report as (kind, analysis, location, event).
fn report(path: &PathBuf) -> Vec<(String, String, String, u64)> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("report")).expect("json");
    let mut out: Vec<_> = v["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| {
            (
                w["kind"].as_str().unwrap_or("").to_string(),
                w["analysis"].as_str().unwrap_or("").to_string(),
                w["location"].as_str().unwrap_or("").to_string(),
                w["event"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    out.sort();
    out
}

const SIGMA1: &str = "T1|w(x)|1\nT1|fork(T2)|2\nT2|r(x)|3\nT2|acq(l)|4\nT2|w(y)|5\nT2|rel(l)|6\n\
T1|r(x)|7\nT1|acq(l)|8\nT1|rel(l)|9\nT1|w(y)|10\nT2|r(x)|3\nT2|acq(l)|4\nT2|w(y)|5\n\
T2|rel(l)|6\nT1|join(T2)|15\nT1|w(y)|16\n";

#[test]
fn compress_then_analyze_reports_what_the_std_gives() {
    let d = TempDir::new();
    let std = d.path("s.std");
    std::fs::write(&std, SIGMA1).unwrap();
    let o = capvm(&["compress", std.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // By content, whatever the name.
    let slp = d.path("s.slp");
    let renamed = d.path("s.trace");
    std::fs::copy(&slp, &renamed).unwrap();
    for tools in ["hb", "eraser", "hb:eraser", "fasttrack", "count:hb", "djit"] {
        let (a, b) = (d.path("a.json"), d.path("b.json"));
        let oa = capvm(&[
            "analyze",
            std.to_str().unwrap(),
            "--tools",
            tools,
            "--report",
            a.to_str().unwrap(),
        ]);
        let ob = capvm(&[
            "analyze",
            renamed.to_str().unwrap(),
            "--tools",
            tools,
            "--report",
            b.to_str().unwrap(),
        ]);
        assert_eq!(code(&oa), 66, "{tools}: {}", stderr(&oa));
        assert_eq!(code(&ob), 66, "{tools}: {}", stderr(&ob));
        assert_eq!(report(&a), report(&b), "{tools}");
    }
    // A ZipTrack directory of the same grammar reads back with the same verdicts.
    let zt = d.path("zt");
    let o = capvm(&[
        "compress",
        std.to_str().unwrap(),
        "-o",
        d.path("z.slp").to_str().unwrap(),
        "--ziptrack",
        zt.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = capvm(&["analyze", zt.to_str().unwrap(), "--tools", "hb"]);
    assert_eq!(code(&o), 66, "{}", stderr(&o));
    assert!(stderr(&o).contains("data race on y"), "{}", stderr(&o));
}

#[test]
fn record_compressed_while_running() {
    let d = TempDir::new();
    let src = d.path("p.cj");
    std::fs::write(
        &src,
        "class S { static int n = 0; static void hit() { for (int i = 0; i < 200; i = i + 1) { S.n += 1; } } }
class Main { static void main() {
    Thread a = fork S.hit(); Thread b = fork S.hit(); a.join(); b.join(); print(S.n > 0); } }",
    )
    .unwrap();
    let (std, slp) = (d.path("p.std"), d.path("p.slp"));
    for rec in [&std, &slp] {
        let o = capvm(&[
            "run",
            src.to_str().unwrap(),
            "--tools",
            "none",
            "--sched",
            "seeded:7",
            "--record",
            rec.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    assert!(std::fs::metadata(&slp).unwrap().len() * 4 < std::fs::metadata(&std).unwrap().len());
    for tools in ["hb", "eraser", "count", "fasttrack"] {
        let (a, b) = (d.path("a.json"), d.path("b.json"));
        let oa = capvm(&[
            "analyze",
            std.to_str().unwrap(),
            "--tools",
            tools,
            "--report",
            a.to_str().unwrap(),
        ]);
        let ob = capvm(&[
            "analyze",
            slp.to_str().unwrap(),
            "--tools",
            tools,
            "--report",
            b.to_str().unwrap(),
        ]);
        assert_eq!(
            code(&oa),
            code(&ob),
            "{tools}: {} / {}",
            stderr(&oa),
            stderr(&ob)
        );
        // A recorded trace folds by sites on the .std; the grammar analyses keep the
        // first warning per location: compare the locations.
        let locs = |r: Vec<(String, String, String, u64)>| {
            let mut v: Vec<_> = r.into_iter().map(|w| (w.0, w.1, w.2)).collect();
            v.dedup();
            v
        };
        assert_eq!(locs(report(&a)), locs(report(&b)), "{tools}");
        if tools == "count" {
            let stats = |p: &PathBuf| -> serde_json::Value {
                serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(p).unwrap())
                    .unwrap()["stats"]
                    .clone()
            };
            assert_eq!(stats(&a), stats(&b));
        }
    }
}

#[test]
fn malformed_input_exits_65_with_a_position() {
    let d = TempDir::new();
    let std = d.path("s.std");
    std::fs::write(&std, SIGMA1).unwrap();
    assert_eq!(code(&capvm(&["compress", std.to_str().unwrap()])), 0);
    let bytes = std::fs::read(d.path("s.slp")).unwrap();
    let bad = d.path("bad.slp");
    std::fs::write(&bad, &bytes[..bytes.len() - 3]).unwrap();
    let o = capvm(&["analyze", bad.to_str().unwrap(), "--tools", "hb"]);
    assert_eq!(code(&o), 65);
    assert!(stderr(&o).contains("byte "), "{}", stderr(&o));
    // A structurally valid grammar whose expansion is not a well-formed trace: the
    // expanded chains check it (event position and line).
    let bad_std = d.path("bad.std");
    std::fs::write(&bad_std, "T0|acq(l)|1\nT0|acq(l)|2\n").unwrap();
    let o = capvm(&["compress", bad_std.to_str().unwrap()]);
    assert_eq!(code(&o), 65);
    assert!(stderr(&o).contains(":2: "), "{}", stderr(&o));
    let o = capvm(&["analyze", bad.to_str().unwrap(), "--tools", "nonsense"]);
    assert_eq!(code(&o), 65, "the file is read first");
    let o = capvm(&[
        "analyze",
        d.path("s.slp").to_str().unwrap(),
        "--tools",
        "nonsense",
    ]);
    assert_eq!(code(&o), 64, "{}", stderr(&o));
    let o = capvm(&["compress", d.path("s.slp").to_str().unwrap()]);
    assert_eq!(code(&o), 64, "{}", stderr(&o));
    let o = capvm(&[
        "compress",
        std.to_str().unwrap(),
        "-o",
        "/nonexistent-dir/x.slp",
    ]);
    assert_eq!(code(&o), 74, "{}", stderr(&o));
}
