//! Programs whose compilation used to cost time and memory quadratic in their size, run
//! through the `capvm` binary in a child process with an address-space limit
//! (`ulimit -v`), so a regression fails (allocation failure, exit 134) instead of
//! exhausting the machine. No timing is asserted.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The address-space limit of the child, in KiB. Every program below ran in far less
/// (under 250 MB resident) once fixed, and needed well over it before.
const LIMIT_KB: u64 = 1 << 20;

fn write(name: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("capvm-big-{}-{name}", std::process::id()));
    std::fs::write(&p, text).expect("write program");
    p
}

fn capvm_limited(args: &[&str]) -> Output {
    let mut cmd = format!("ulimit -v {LIMIT_KB}; exec \"$0\"");
    for i in 0..args.len() {
        cmd.push_str(&format!(" \"${}\"", i + 1));
    }
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .arg(env!("CARGO_BIN_EXE_capvm"))
        .args(args)
        .output()
        .expect("run capvm")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(path: &Path, tier: &str) -> Output {
    let p = path.to_str().expect("utf-8 path");
    capvm_limited(&["run", p, "--tier", tier, "--tools", "none"])
}

/// `new int[1]…[1]` with 20,000 dimensions in a method that is never called: `check`
/// and `run` (both tiers) agree that it does not compile, with the position of the
/// first dimension past the limit; 255 dimensions compile and run.
#[test]
fn many_array_dimensions_are_a_compile_error_everywhere() {
    let big = write(
        "dims.cj",
        &format!(
            "class Main {{\n  void never() {{ var a = new int{}; }}\n  static void main() {{ print(1); }}\n}}\n",
            "[1]".repeat(20_000)
        ),
    );
    let p = big.to_str().expect("utf-8 path");
    let col = "  void never() { var a = new int".len() + 255 * 3 + 1;
    let want = format!("dims.cj:2:{col}");
    for out in [
        capvm_limited(&["check", p]),
        run(&big, "interp"),
        run(&big, "jit"),
    ] {
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(65), "{err}");
        assert!(
            err.contains("too many array dimensions (limit 255)"),
            "{err}"
        );
        assert!(err.contains(&want), "{want} in {err}");
    }
    let ok = write(
        "dims255.cj",
        &format!(
            "class Main {{\n  static void main() {{ var a = new int{}; print(a.length, a[0].length); }}\n}}\n",
            "[1]".repeat(255)
        ),
    );
    for tier in ["interp", "jit"] {
        let out = run(&ok, tier);
        assert_eq!(out.status.code(), Some(0), "{tier}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "1 1\n", "{tier}");
    }
    let _ = std::fs::remove_file(big);
    let _ = std::fs::remove_file(ok);
}

/// A method of 10,000 `if (x == i) { return …; }`: the JIT needed 1.2 GB for it (its
/// temporaries were SSA variables, each costing memory proportional to the block
/// number). Both tiers run it in the limit and agree.
#[test]
fn jit_compiles_a_method_of_10000_branches() {
    let n = 10_000;
    let body: String = (0..n)
        .map(|i| format!("    if (x == {i}) {{ return {i} * 3 + 1; }}\n"))
        .collect();
    let prog = write(
        "branches.cj",
        &format!(
            "class Main {{\n  static int f(int x) {{\n{body}    return -1;\n  }}\n  static void main() {{ print(f(0), f(4321), f({}), f({n})); }}\n}}\n",
            n - 1
        ),
    );
    for tier in ["interp", "jit"] {
        let out = run(&prog, tier);
        assert_eq!(out.status.code(), Some(0), "{tier}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            format!("1 12964 {} -1\n", (n - 1) * 3 + 1),
            "{tier}"
        );
    }
    let _ = std::fs::remove_file(prog);
}

/// 10,000 locals declared up front, each read in its own branch of a 10,000-branch
/// method: too many variables × blocks for SSA construction, so the JIT keeps the
/// method's locals in stack slots (`jit::homes`). Same results as the interpreter,
/// also for locals assigned in one branch and read in a later one, and doubles.
#[test]
fn jit_keeps_the_locals_of_a_huge_method_in_stack_slots() {
    let n = 10_000;
    let decls: String = (0..n)
        .map(|i| format!("    int a{i} = {i} * 7;\n"))
        .collect();
    let body: String = (0..n)
        .map(|i| {
            format!(
                "    if (x == {i}) {{ a{} = a{i} + 1; return a{i} + a{}; }}\n",
                (i + 1) % n,
                (i + 1) % n
            )
        })
        .collect();
    let prog = write(
        "locals.cj",
        &format!(
            "class Main {{\n  static int f(int x) {{\n    double d = 0.5;\n{decls}    if (x < 0) {{ d = d * 3.0; a0 = 5; }}\n{body}    return (int) d + a0;\n  }}\n  static void main() {{ print(f(0), f(17), f({}), f(-1)); }}\n}}\n",
            n - 1
        ),
    );
    let mut outs = Vec::new();
    for tier in ["interp", "jit"] {
        let out = run(&prog, tier);
        assert_eq!(out.status.code(), Some(0), "{tier}: {}", text(&out.stderr));
        outs.push(text(&out.stdout));
    }
    // f(i) = a_i + (a_i + 1) = 14i + 1 (a_{i+1} is assigned first); f(-1): no branch
    // taken, (int) 1.5 + 5.
    let want = format!("1 239 {} 6\n", 14 * (n - 1) + 1);
    assert_eq!(outs[0], want);
    assert_eq!(outs[1], want);
    let _ = std::fs::remove_file(prog);
}

/// One 400 KB line of 50,000 syntax errors: 100 are shown, each with a cut snippet,
/// then the count of the others.
#[test]
fn check_caps_the_errors_of_one_long_line() {
    let prog = write(
        "errors.cj",
        &format!(
            "class Main {{\n  static void main() {{ {}}}\n}}\n",
            "int = ; ".repeat(50_000)
        ),
    );
    let out = capvm_limited(&["check", prog.to_str().expect("utf-8 path")]);
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(65),
        "{}",
        &err[..err.len().min(2000)]
    );
    assert_eq!(err.lines().filter(|l| l.starts_with("error:")).count(), 101);
    assert!(
        err.contains("49900 more errors in"),
        "{}",
        &err[err.len().saturating_sub(500)..]
    );
    assert!(err.len() < 100_000, "{} bytes", err.len());
    let _ = std::fs::remove_file(prog);
}
