//! Parse and type errors: exact rendered diagnostics.

mod common;
use common::errors;
use expect_test::expect;

#[test]
fn parse_errors_recover_and_report_several() {
    let out = errors(
        "class A {\n    void f() {\n        int x = ;\n        x = 3 +;\n        return\n    }\n    int g( { }\n}\n",
    );
    expect![[r#"
        error: expected an expression, found `;`
          ┌─ bad.cj:3:17
          │
        3 │         int x = ;
          │                 ^

        error: expected an expression, found `;`
          ┌─ bad.cj:4:16
          │
        4 │         x = 3 +;
          │                ^

        error: expected an expression, found `}`
          ┌─ bad.cj:6:5
          │
        6 │     }
          │     ^

        error: expected a type, found `{`
          ┌─ bad.cj:7:12
          │
        7 │     int g( { }
          │            ^

    "#]]
    .assert_eq(&out);
}

#[test]
fn type_errors() {
    let out = errors(
        r#"class A {
    int x;
    static void main() {
        int a = true;
        boolean b = 1 + 2;
        double d = 1;
        int c = d;
        print(this);
        y = 3;
        A o = new A();
        print(o);
        o.nope();
        x = 1;
    }
}
"#,
    );
    expect![[r#"
        error: mismatched types: the initialiser of `a` must be `int`, found `boolean`
          ┌─ bad.cj:4:17
          │
        4 │         int a = true;
          │                 ^^^^

        error: mismatched types: the initialiser of `b` must be `boolean`, found `int`
          ┌─ bad.cj:5:21
          │
        5 │         boolean b = 1 + 2;
          │                     ^^^^^

        error: mismatched types: the initialiser of `c` must be `int`, found `double`
          ┌─ bad.cj:7:17
          │
        7 │         int c = d;
          │                 ^

        error: `this` cannot be used in a static method
          ┌─ bad.cj:8:15
          │
        8 │         print(this);
          │               ^^^^

        error: unknown variable `y`
          ┌─ bad.cj:9:9
          │
        9 │         y = 3;
          │         ^

        error: cannot print a value of type `A` (print accepts int, double, boolean and string literals)
           ┌─ bad.cj:11:15
           │
        11 │         print(o);
           │               ^

        error: class `A` has no method `nope`
           ┌─ bad.cj:12:11
           │
        12 │         o.nope();
           │           ^^^^

        error: cannot use instance member `x` in a static method (there is no `this`)
           ┌─ bad.cj:13:9
           │
        13 │         x = 1;
           │         ^

    "#]].assert_eq(&out);
}

#[test]
fn bad_cj_position_fragment() {
    let out = errors("class A {\n  static void main() {\n    int x = true;\n  }\n}\n");
    assert!(out.contains("bad.cj:3:13"), "{out}");
}

#[test]
fn notes_and_color_rendering() {
    let text = "class A { static void main() { } }\nclass A { }\n";
    let files = common::file("dup.cj", text);
    let d = lang::compile(files.clone()).expect_err("duplicate class");
    assert_eq!(d.len(), 1);
    let diag = d.iter().next().unwrap();
    assert_eq!(
        (diag.line, diag.col, diag.severity),
        (2, 7, lang::Severity::Error)
    );
    expect![[r#"
        error: class `A` is already defined
          ┌─ dup.cj:2:7
          │
        2 │ class A { }
          │       ^
          │
          = first defined at dup.cj:1:7

    "#]]
    .assert_eq(&d.render(&files, false));
    let colored = d.render(&files, true);
    assert!(colored.contains("\u{1b}["), "{colored:?}");
    assert!(!d.render(&files, false).contains('\u{1b}'));
}

#[test]
fn io_errors_have_no_position() {
    let d = lang::compile_paths(&["/nonexistent/x.cj".into()]).expect_err("missing file");
    let out = d.render(&[], false);
    assert!(
        out.starts_with("error: cannot read /nonexistent/x.cj"),
        "{out}"
    );
}

#[test]
fn several_files_share_one_program() {
    let files = vec![
        lang::ir::SourceFile {
            name: "a.cj".into(),
            text: "class A { static int k = 3; static void main() { B.go(A.k); } }".into(),
        },
        lang::ir::SourceFile {
            name: "b.cj".into(),
            text: "class B { static void go(int x) { print(x, true); } }\n".into(),
        },
    ];
    let c = lang::compile(files).unwrap();
    c.program.validate().unwrap();
    let go = c.program.funcs.iter().position(|f| f.name == "go").unwrap();
    assert_eq!(c.program.site_string(c.program.funcs[go].site), "b.cj:1:23");
}

#[test]
fn columns_count_characters_and_match_rendering() {
    let text = "\u{feff}class A {\n\tstatic void main() {\n\t\t/* é */ int x = true;\n\t}\n}\n";
    let files = common::file("tab.cj", text);
    let d = lang::compile(files.clone()).expect_err("type error");
    let diag = d.iter().next().unwrap();
    assert_eq!((diag.line, diag.col), (3, 19));
    assert!(d.render(&files, false).contains("tab.cj:3:19"));
}
