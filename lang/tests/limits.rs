//! Deep but legal nesting compiles on a test thread's default stack; nesting beyond the
//! parser's limit is a clean error.

fn compile(text: String) -> Result<lang::Compiled, String> {
    let files = vec![lang::ir::SourceFile {
        name: "deep.cj".into(),
        text,
    }];
    lang::compile(files.clone()).map_err(|d| d.render(&files, false))
}

fn program(body: &str) -> String {
    format!("class D {{ static int f(int x) {{ {body} return x; }} static void main() {{ }} }}")
}

#[test]
fn deep_parentheses_binary_chains_and_else_if() {
    let n = 120;
    let parens = format!("x = {}1{};", "(".repeat(n), ")".repeat(n));
    let chain = format!("x = x{};", " + 1".repeat(n));
    let mut else_if = String::from("if (x == 0) { x = 1; }");
    for i in 0..n {
        else_if.push_str(&format!(" else if (x == {i}) {{ x = {i}; }}"));
    }
    let blocks = format!("{}x++;{}", "{ ".repeat(n), " }".repeat(n));
    for body in [parens, chain, else_if, blocks] {
        let c = compile(program(&body)).unwrap();
        c.program.validate().unwrap();
    }
}

#[test]
fn too_deep_is_an_error() {
    for body in [
        format!("x = {}1{};", "(".repeat(5000), ")".repeat(5000)),
        format!("x = x{};", " + 1".repeat(5000)),
        format!("x = {}1;", "- ".repeat(5000)),
        format!("{}x++;{}", "{ ".repeat(5000), " }".repeat(5000)),
        format!("x = x{};", "[0]".repeat(5000)),
    ] {
        let err = compile(program(&body)).expect_err("must fail");
        assert!(err.contains("nesting is too deep"), "{err}");
    }
}
