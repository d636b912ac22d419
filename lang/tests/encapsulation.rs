//! The static encapsulation check: which field accesses are proven (`this.f` in the
//! field's own class), which warn (certainly outside a capsule's own methods on
//! `this`), and which stay dynamically checked.

mod common;

use expect_test::{Expect, expect};
use lang::ir::{Inst, SiteId};
use std::fmt::Write as _;
use std::path::Path;

/// Every field access site of the program (`line:col Class.field in Func: verdict`),
/// then the rendered warnings.
fn accesses(text: &str) -> String {
    let files = common::file("t.cj", text);
    let c = match lang::compile(files.clone()) {
        Ok(c) => c,
        Err(d) => panic!("unexpected errors:\n{}", d.render(&files, false)),
    };
    let p = &c.program;
    p.validate().expect("valid IR");
    let mut sites: Vec<(SiteId, String)> = Vec::new();
    for f in &p.funcs {
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            if let Inst::GetField { field, site, .. } | Inst::PutField { field, site, .. } = inst {
                let name = format!("{}.{}", p.class(field.class).name, p.field(*field).name);
                sites.push((*site, name));
            }
        }
    }
    sites.sort_by_key(|(s, _)| (p.site(*s).line, p.site(*s).col));
    sites.dedup_by_key(|(s, _)| *s);
    let mut out = String::new();
    for (s, name) in &sites {
        let site = p.site(*s);
        let func = site.func.map_or("?".into(), |f| p.func_name(f));
        let warned = c
            .warnings
            .iter()
            .any(|w| (w.line, w.col) == (site.line, site.col));
        let verdict = match (p.proven_capsule_access(*s), warned) {
            (true, _) => "proven",
            (false, true) => "dynamic, warning",
            (false, false) => "dynamic",
        };
        let _ = writeln!(
            out,
            "{}:{} {name} in {func}: {verdict}",
            site.line, site.col
        );
    }
    out.push_str(&c.warnings.render(&files, false));
    out
}

fn check(text: &str, expect: Expect) {
    expect.assert_eq(&accesses(text));
}

#[test]
fn this_accesses_are_proven() {
    check(
        r#"capsule class C {
    int f;
    int[] a;
    C() { f = 1; this.a = new int[2]; }
    synchronized void inc() {
        f += 1;
        this.f++;
        a[0] = f;
        C self = this;
        self.f = self.f + 1;
        C either = f > 0 ? this : self;
        either.f = 0;
    }
}
class Main { static void main() { C c = new C(); c.inc(); } }
"#,
        expect![[r#"
            4:11 C.f in C.<init>: proven
            4:23 C.a in C.<init>: proven
            6:9 C.f in C.inc: proven
            7:14 C.f in C.inc: proven
            8:9 C.a in C.inc: proven
            8:16 C.f in C.inc: proven
            10:14 C.f in C.inc: proven
            10:23 C.f in C.inc: proven
            11:20 C.f in C.inc: proven
            12:16 C.f in C.inc: proven
        "#]],
    );
}

#[test]
fn other_objects_of_the_class_stay_dynamic() {
    // `other` may be `this` (`docs/language.md`: allowed when other == this); so may a field
    // read of another object, a call's result, a local that is sometimes `this`, and a
    // parameter of a static helper (the running capsule may have passed itself).
    check(
        r#"capsule class C {
    int f;
    C next;
    void copy(C other) { f = other.f; }
    void chain() { next.f = 2; this.next.next.f = 3; }
    C me() { return this; }
    void viaCall() { me().f = 4; }
    void mixed(C other) {
        C x = this;
        if (f > 0) { x = other; }
        x.f = 5;
    }
    static int peek(C c) { return c.f; }
}
class Main { static void main() { C c = new C(); c.copy(c); } }
"#,
        expect![[r#"
            4:26 C.f in C.copy: proven
            4:36 C.f in C.copy: dynamic
            5:20 C.next in C.chain: proven
            5:25 C.f in C.chain: dynamic
            5:37 C.next in C.chain: proven
            5:42 C.next in C.chain: dynamic
            5:47 C.f in C.chain: dynamic
            7:27 C.f in C.viaCall: dynamic
            10:13 C.f in C.mixed: proven
            11:11 C.f in C.mixed: dynamic
            13:37 C.f in C.peek: dynamic
        "#]],
    );
}

#[test]
fn fresh_objects_inside_the_class_warn() {
    // An object allocated by the running call is never `this`, nor the capsule whose
    // call is running; `null` on some path does not make it unknown.
    check(
        r#"capsule class C {
    int f;
    C() { C d = new C(); d.f = 2; }
    void m() {
        int v = new C().f;
        C x;
        if (f > 0) { x = new C(); } else { x = null; }
        x.f += 1;
        C y = x;
        y.f = v;
    }
    static void main() {
        C c = new C();
        c.f = 1;
        c.m();
    }
}
"#,
        expect![[r#"
            3:28 C.f in C.<init>: dynamic, warning
            5:25 C.f in C.m: dynamic, warning
            7:13 C.f in C.m: proven
            8:11 C.f in C.m: dynamic, warning
            10:11 C.f in C.m: dynamic, warning
            14:11 C.f in C.main: dynamic, warning
            warning: access to field `f` of capsule class `C` from outside its own methods on `this`
              ┌─ t.cj:3:28
              │
            3 │     C() { C d = new C(); d.f = 2; }
              │                            ^
              │
              = the object is allocated by `C.<init>` itself, so it is never `this` (nor the `C` whose method is running)
              = when it runs, this access breaks `C`'s encapsulation (a `capsule-violation` of the `capsule` analysis)

            warning: access to field `f` of capsule class `C` from outside its own methods on `this`
              ┌─ t.cj:5:25
              │
            5 │         int v = new C().f;
              │                         ^
              │
              = the object is allocated by `C.m` itself, so it is never `this` (nor the `C` whose method is running)
              = when it runs, this access breaks `C`'s encapsulation (a `capsule-violation` of the `capsule` analysis)

            warning: access to field `f` of capsule class `C` from outside its own methods on `this`
              ┌─ t.cj:8:11
              │
            8 │         x.f += 1;
              │           ^
              │
              = the object is allocated by `C.m` itself, so it is never `this` (nor the `C` whose method is running)
              = when it runs, this access breaks `C`'s encapsulation (a `capsule-violation` of the `capsule` analysis)

            warning: access to field `f` of capsule class `C` from outside its own methods on `this`
               ┌─ t.cj:10:11
               │
            10 │         y.f = v;
               │           ^
               │
               = the object is allocated by `C.m` itself, so it is never `this` (nor the `C` whose method is running)
               = when it runs, this access breaks `C`'s encapsulation (a `capsule-violation` of the `capsule` analysis)

            warning: access to field `f` of capsule class `C` from outside its own methods on `this`
               ┌─ t.cj:14:11
               │
            14 │         c.f = 1;
               │           ^
               │
               = the object is allocated by `C.main` itself, so it is never `this` (nor the `C` whose method is running)
               = when it runs, this access breaks `C`'s encapsulation (a `capsule-violation` of the `capsule` analysis)

        "#]],
    );
}

#[test]
fn other_classes_warn_only_for_capsules() {
    // Static fields are not capsule fields; a non-capsule class's fields never warn.
    check(
        r#"capsule class C {
    int f;
    static int count;
    void m() { f = count; }
}
class D {
    int g;
    void use(C c) {
        c.f = c.f + 1;
        C.count++;
        g = 1;
    }
}
class Main {
    static void main() {
        D d = new D();
        d.g = 2;
        d.use(new C());
    }
}
"#,
        expect![[r#"
            4:16 C.f in C.m: proven
            9:11 C.f in D.use: dynamic, warning
            9:17 C.f in D.use: dynamic, warning
            11:9 D.g in D.use: proven
            17:11 D.g in Main.main: dynamic
            warning: access to field `f` of capsule class `C` from outside its own methods on `this`
              ┌─ t.cj:9:11
              │
            9 │         c.f = c.f + 1;
              │           ^
              │
              = `D.use` is not a method of `C`: only `C`'s own methods may access its fields, on `this`
              = when it runs, this access breaks `C`'s encapsulation (a `capsule-violation` of the `capsule` analysis)

            warning: access to field `f` of capsule class `C` from outside its own methods on `this`
              ┌─ t.cj:9:17
              │
            9 │         c.f = c.f + 1;
              │                 ^
              │
              = `D.use` is not a method of `C`: only `C`'s own methods may access its fields, on `this`
              = when it runs, this access breaks `C`'s encapsulation (a `capsule-violation` of the `capsule` analysis)

        "#]],
    );
}

/// For each corpus program in `dir` with a capsule class: how many of the sites that
/// access a capsule's fields are proven; then every warning (`file:line:col message`).
fn corpus_warnings(dir: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(dir);
    let mut paths: Vec<_> = std::fs::read_dir(&root)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.retain(|p: &std::path::PathBuf| p.extension().is_some_and(|x| x == "cj"));
    paths.sort();
    assert!(!paths.is_empty(), "no programs in {}", root.display());
    let mut out = String::new();
    for path in paths {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        match lang::compile_paths(std::slice::from_ref(&path)) {
            Ok(c) => {
                let p = &c.program;
                p.validate().expect("valid IR");
                let mut capsule_sites: Vec<SiteId> = p
                    .funcs
                    .iter()
                    .flat_map(|f| f.blocks.iter().flat_map(|b| &b.insts))
                    .filter_map(|i| match i {
                        Inst::GetField { field, site, .. } | Inst::PutField { field, site, .. }
                            if p.class(field.class).is_capsule =>
                        {
                            Some(*site)
                        }
                        _ => None,
                    })
                    .collect();
                capsule_sites.sort();
                capsule_sites.dedup();
                if p.classes.iter().any(|c| c.is_capsule) {
                    let proven = capsule_sites
                        .iter()
                        .filter(|s| p.proven_capsule_access(**s))
                        .count();
                    let _ = writeln!(
                        out,
                        "{name}: {proven} of {} capsule field sites proven",
                        capsule_sites.len()
                    );
                }
                for w in c.warnings.iter() {
                    let _ = writeln!(out, "{name}:{}:{} {}", w.line, w.col, w.message);
                }
            }
            Err(_) => {
                let _ = writeln!(out, "{name}: does not compile");
            }
        }
    }
    out
}

#[test]
fn corpus_warnings_examples() {
    expect![[r#"
        language_example.cj: 2 of 2 capsule field sites proven
        rhodes_fig5_1.cj: 4 of 4 capsule field sites proven
        rhodes_fig5_2.cj: 8 of 8 capsule field sites proven
        rhodes_fig5_3.cj: 12 of 12 capsule field sites proven
    "#]]
    .assert_eq(&corpus_warnings("examples"));
}

#[test]
fn corpus_warnings_bugs() {
    expect![[r#"
        capsule_outside_access.cj: 1 of 2 capsule field sites proven
        capsule_outside_access.cj:23:21 access to field `balance` of capsule class `Account` from outside its own methods on `this`
        capsule_unsync_calls.cj: 1 of 1 capsule field sites proven
        rhodes_fig5_1.cj: 4 of 4 capsule field sites proven
        rhodes_fig5_2.cj: 8 of 8 capsule field sites proven
        rhodes_fig5_3.cj: 12 of 12 capsule field sites proven
    "#]].assert_eq(&corpus_warnings("bugs"));
}
