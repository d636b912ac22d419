//! Programs built directly in the IR (no front end): the interpreter's contract with
//! `lang::ir`, independent of how the front end lowers source.

mod common;

use common::*;
use lang::ir::*;
use vm::{ErrorKind, ExitKind, SchedKind};

/// `static int sq(int x) { return x * x; }` and a main printing `sq(7)`, `7 / 2` and a
/// double, then dividing by zero at line 9.
fn program_with_call() -> Program {
    let mut sq = FnB::new(0, "sq", FuncKind::Static, &[Type::Int], Type::Int);
    let r = sq.bin(BinOp::IMul, Local(0), Local(0), Type::Int, 2);
    sq.term(Terminator::Return(Some(r)));

    let mut m = FnB::new(0, "main", FuncKind::Static, &[], Type::Void);
    let seven = m.int(7);
    let two = m.int(2);
    let res = m.local(Type::Int);
    m.push(Inst::Call {
        dst: Some(res),
        func: FuncId(0),
        args: vec![seven],
        site: SiteId(5),
    });
    let q = m.bin(BinOp::IDiv, seven, two, Type::Int, 6);
    let d = m.dbl(0.5);
    let b = m.bin(BinOp::ICmp(Cmp::Lt), two, seven, Type::Boolean, 7);
    m.push(Inst::Print {
        args: vec![
            PrintArg::Str("sq".into()),
            PrintArg::Value(res, Repr::Int),
            PrintArg::Value(q, Repr::Int),
            PrintArg::Value(d, Repr::Double),
            PrintArg::Value(b, Repr::Bool),
        ],
        site: SiteId(8),
    });
    let zero = m.int(0);
    m.bin(BinOp::IRem, seven, zero, Type::Int, 9);
    m.term(Terminator::Return(None));
    let cls = class("Main", vec![], vec![0, 1]);
    program(vec![cls], vec![sq.f, m.f], vec![], 1)
}

#[test]
fn hand_built_program_runs_and_fails_at_the_right_site() {
    for s in [SchedKind::Os, SchedKind::Seeded(4)] {
        let out = run_ir(program_with_call(), &captured(s));
        assert_eq!(out.stdout_string(), "sq 49 3 0.5 true\n");
        assert_eq!(out.exit, ExitKind::RuntimeError);
        assert_eq!(
            out.error_text.as_deref(),
            Some(
                "runtime error: division by zero\n  in thread T0 at t.cj:9:1\n    at Main.main (t.cj:9:1)\n"
            )
        );
    }
}

#[test]
fn an_unfinished_block_is_an_internal_error_not_a_panic() {
    let m = FnB::new(0, "main", FuncKind::Static, &[], Type::Void);
    let p = program(vec![class("Main", vec![], vec![0])], vec![m.f], vec![], 0);
    let out = run_ir(p, &captured(SchedKind::Os));
    assert_eq!(out.exit, ExitKind::RuntimeError);
    assert_eq!(out.error.unwrap().kind, ErrorKind::Internal);
}

#[test]
fn record_writes_a_trace_that_analyze_reads() {
    let dir = std::env::temp_dir().join(format!("capvm-ir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.std");
    let cfg = vm::RunConfig {
        tools: Some("count".into()),
        record: Some(path.clone()),
        ..captured(SchedKind::Seeded(1))
    };
    let out = run_src(
        r#"class C { int n; }
class W { C c; W(C c) { this.c = c; } void run() { synchronized (c) { c.n++; } } }
class Main { static void main() {
    C c = new C(); Thread t = fork new W(c).run(); synchronized (c) { c.n++; } t.join(); print(c.n); } }"#,
        &cfg,
    );
    assert_eq!(out.exit, ExitKind::Ok, "{:?}", out.error_text);
    assert_eq!(out.passes, ["record", "count"]);
    let text = std::fs::read_to_string(&path).unwrap();
    let trace = analyses::trace::parse_std(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(trace.file_events().count() > 10, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
