//! Helpers shared by the integration tests.
#![allow(dead_code)]

use lang::ir::SourceFile;

pub fn file(name: &str, text: &str) -> Vec<SourceFile> {
    vec![SourceFile {
        name: name.to_string(),
        text: text.to_string(),
    }]
}

/// Compile one file; the IR text on success or the rendered diagnostics on failure.
pub fn compile_text(name: &str, text: &str) -> String {
    let files = file(name, text);
    match lang::compile(files.clone()) {
        Ok(c) => lang::print::print(&c.program),
        Err(d) => d.render(&files, false),
    }
}

/// Compile one file that must fail; the rendered diagnostics.
pub fn errors(text: &str) -> String {
    let files = file("bad.cj", text);
    match lang::compile(files.clone()) {
        Ok(c) => panic!(
            "expected errors, got a program:\n{}",
            lang::print::print(&c.program)
        ),
        Err(d) => d.render(&files, false),
    }
}

/// Compile one file that must succeed; the IR of the named function(s) only.
pub fn lower_funcs(text: &str, names: &[&str]) -> String {
    let files = file("t.cj", text);
    let c = match lang::compile(files.clone()) {
        Ok(c) => c,
        Err(d) => panic!("unexpected errors:\n{}", d.render(&files, false)),
    };
    let p = &c.program;
    let mut out = String::new();
    for i in 0..p.funcs.len() {
        let id = lang::ir::FuncId(i as u32);
        if names.contains(&p.func_name(id).as_str()) {
            out.push_str(&p.func_text(id));
        }
    }
    out
}
