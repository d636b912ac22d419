//! Parser unit tests: precedence and associativity.

use super::Parser;
use crate::ast::{Expr, ExprKind};
use crate::diag::Sink;
use crate::ir::FileId;
use crate::ir::SourceFile;
use crate::lexer::lex;

/// Fully parenthesized rendering of an expression.
fn sexpr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Double(v) => format!("{v:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Null => "null".into(),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Name(n) => n.name.clone(),
        ExprKind::This => "this".into(),
        ExprKind::Field { obj, name } => format!("{}.{}", sexpr(obj), name.name),
        ExprKind::Index { arr, index, .. } => format!("{}[{}]", sexpr(arr), sexpr(index)),
        ExprKind::Call { recv, name, args } => {
            let a: Vec<String> = args.iter().map(sexpr).collect();
            match recv {
                Some(r) => format!("{}.{}({})", sexpr(r), name.name, a.join(", ")),
                None => format!("{}({})", name.name, a.join(", ")),
            }
        }
        ExprKind::New { class, args } => {
            let a: Vec<String> = args.iter().map(sexpr).collect();
            format!("new {}({})", class.name, a.join(", "))
        }
        ExprKind::NewArray { dims, extra, .. } => {
            let d: Vec<String> = dims.iter().map(|d| format!("[{}]", sexpr(d))).collect();
            format!("new T{}{}", d.concat(), "[]".repeat(*extra as usize))
        }
        ExprKind::Unary { op, expr, .. } => format!("({op:?} {})", sexpr(expr)),
        ExprKind::Binary { op, lhs, rhs, .. } => {
            format!("({} {} {})", sexpr(lhs), op.symbol(), sexpr(rhs))
        }
        ExprKind::Cond { cond, then, els } => {
            format!("({} ? {} : {})", sexpr(cond), sexpr(then), sexpr(els))
        }
        ExprKind::Cast { ty, expr } => format!("(({:?}) {})", ty.base, sexpr(expr)),
        ExprKind::Fork { call } => format!("(fork {})", sexpr(call)),
    }
}

fn parse_expr(src: &str) -> String {
    let files = vec![SourceFile {
        name: "e.cj".into(),
        text: src.into(),
    }];
    let mut sink = Sink::new(&files);
    let tokens = lex(FileId(0), src, &mut sink);
    let mut p = Parser {
        tokens,
        pos: 0,
        sink: &mut sink,
        panicking: false,
        fatal: false,
        depth: 0,
        depth_reported: false,
    };
    let e = p.expr().map(|e| sexpr(&e));
    assert!(p.at_eof(), "trailing input in {src}");
    assert!(sink.diags.is_empty(), "{:?}", sink.diags);
    e.unwrap_or_default()
}

#[test]
fn java_precedence_and_associativity() {
    let cases = [
        ("a + b * c - d", "((a + (b * c)) - d)"),
        ("a << 1 + 2 < b == c", "(((a << (1 + 2)) < b) == c)"),
        (
            "a & b ^ c | d && e || f",
            "(((((a & b) ^ c) | d) && e) || f)",
        ),
        ("a | b ^ c & d", "(a | (b ^ (c & d)))"),
        ("c ? x : d ? y : z", "(c ? x : (d ? y : z))"),
        (
            "-a.b[i].m(1, 2) * ~x",
            "((Neg a.b[i].m(1, 2)) * (BitNot x))",
        ),
        ("(int) x / 2", "(((Int) x) / 2)"),
        ("!a == b", "((Not a) == b)"),
        ("fork new W(c).run() ", "(fork new W(c).run())"),
        ("new int[n][m][] ", "new T[n][m][]"),
        ("-9223372036854775808 - 1", "(-9223372036854775808 - 1)"),
        ("-1.5e3", "-1500.0"),
        ("a >>> 2 >> 1", "((a >>> 2) >> 1)"),
    ];
    for (src, want) in cases {
        assert_eq!(parse_expr(src), want, "{src}");
    }
}
