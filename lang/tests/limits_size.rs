//! Inputs whose cost used to grow with the square of their size: array types with
//! thousands of dimensions, thousands of errors on one long line, thousands of
//! positions on one line. Each is now refused or capped (no timing is asserted: the
//! counts and sizes of the output are).

fn compile(name: &str, text: String) -> Result<lang::Compiled, String> {
    let files = vec![lang::ir::SourceFile {
        name: name.into(),
        text,
    }];
    lang::compile(files.clone()).map_err(|d| d.render(&files, false))
}

#[test]
fn array_dimensions_up_to_255() {
    let ok = format!(
        "class D {{ int{} f; static void main() {{ var a = new int{}; int{} b = new int[1]{}; }} }}",
        "[]".repeat(255),
        "[1]".repeat(255),
        "[]".repeat(255),
        "[]".repeat(254),
    );
    let c = compile("ok.cj", ok).expect("255 dimensions compile");
    c.program.validate().unwrap();
    for (what, text) in [
        (
            "type",
            format!(
                "class D {{ int{} f; static void main() {{ }} }}",
                "[]".repeat(256)
            ),
        ),
        (
            "new",
            format!(
                "class D {{ static void main() {{ var a = new int{}; }} }}",
                "[1]".repeat(256)
            ),
        ),
        (
            "new with []",
            format!(
                "class D {{ static void main() {{ var a = new int[1]{}; }} }}",
                "[]".repeat(255)
            ),
        ),
        (
            "20000",
            format!(
                "class D {{ void never() {{ var a = new int{}; }} static void main() {{ }} }}",
                "[1]".repeat(20_000)
            ),
        ),
    ] {
        let err = compile("dims.cj", text).expect_err(what);
        assert!(
            err.contains("too many array dimensions (limit 255)"),
            "{what}: {err}"
        );
        assert_eq!(err.matches("error:").count(), 1, "{what}: {err}");
        assert!(err.contains("dims.cj:1:"), "{what}: {err}");
    }
}

/// One 400 KB line with an error in each of its 50,000 statements: the first 100
/// errors are reported, then one line counting the rest; every snippet is cut to a
/// window of the line around the error, with its true line and column.
#[test]
fn errors_are_capped_per_file_and_long_lines_cut() {
    let n = 50_000;
    let text = format!(
        "class Main {{\n  static void main() {{ {}}}\n}}\n",
        "int = ; ".repeat(n)
    );
    let err = compile("long.cj", text).expect_err("syntax errors");
    let errors = err.lines().filter(|l| l.starts_with("error:")).count();
    assert_eq!(errors, 101, "{}", &err[..2000.min(err.len())]);
    assert!(
        err.contains("error: 49900 more errors in long.cj not shown (at most 100 errors are reported per file)"),
        "{}",
        &err[err.len().saturating_sub(2000)..]
    );
    let longest = err.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(longest < 200, "a snippet line of {longest} characters");
    assert!(err.len() < 100_000, "{} bytes of diagnostics", err.len());
    // The 100th error is the `=` of statement 100: column 28 + 99 * 8.
    assert!(err.contains(&format!("long.cj:2:{}", 28 + 99 * 8)), "{err}");
    // The snippet shows the text around the caret, cut on both sides.
    assert!(err.contains("2 │ … int = ; int = ;"), "{}", &err[..3000]);
}

/// Warnings are capped the same way (javac's `-Xmaxwarns`): each outside access to a
/// capsule's field is a compile-time warning.
#[test]
fn warnings_are_capped_per_file() {
    let n = 300;
    let text = format!(
        "capsule class K {{ int v; }}\nclass Main {{ static void main() {{ K k = new K(); int s = 0; {} print(s); }} }}\n",
        "s += k.v; ".repeat(n)
    );
    let c = compile("warn.cj", text).expect("warnings only");
    let rendered = c.warnings.render(&[], false);
    let warnings = rendered
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .count();
    assert_eq!(warnings, 101, "{rendered}");
    assert!(
        rendered.contains("200 more warnings in warn.cj not shown"),
        "{rendered}"
    );
}
