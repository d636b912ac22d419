//! CapJava front end: lexer, parser (with error recovery), name resolution, type
//! checking and lowering to the IR in [`ir`].
//!
//! Pipeline (one module each): `lexer` → `parser` (→ `ast`) → `check` (name resolution
//! and type checking, → `tast`) → `lower` (→ [`ir::Program`]) → `encapsulation` (the
//! static capsule encapsulation check: fills [`ir::Program::capsule_proven`] and warns
//! about accesses to a capsule's fields that can never be by its own methods on
//! `this`). [`print`](mod@print) renders the IR.
//!
//! Architecture invariant: no runtime, no analyses. The output is plain data.
//!
//! Warnings ([`Compiled::warnings`], severity [`Severity::Warning`]) never stop the
//! compilation; today they come from the encapsulation check only.
//!
//! Errors: lexical and syntax errors are reported for every file (the parser recovers at
//! `;`, `}` and member starts); if the tree is intact, name and type errors follow in
//! the same run. [`Program::validate`](ir::Program::validate) checks the IR invariants.
//!
//! Language decisions the language's first description left open (Java's behaviour unless noted):
//! - `new T[n][]` (partially sized arrays) is supported: inner arrays start as `null`.
//!   Array initialisers `{…}` and C-style declarators `int a[]` are rejected.
//! - Unreachable statements (after `return`, `break`, `continue`, or after a
//!   `while (true)`/`for (;;)` without `break`) are an error, as in Java; a non-void
//!   method whose end is reachable is a "missing return statement" error.
//! - Assignment, `x++`/`x--` (also `++x`) are statements only, never expressions;
//!   chained assignment is rejected. Only calls, `new` and `fork` are expression
//!   statements.
//! - A compound assignment whose result would need narrowing (`int x; x += 1.5`) is
//!   an error (Java inserts a silent cast; CapJava has only int → double implicitly).
//! - Static members are accessed through the class (`C.f`, `C.m()`, or bare inside C);
//!   accessing them through an object is an error. `wait()`/`notify()`/`notifyAll()`
//!   without a receiver mean `this.…()`. User classes cannot define those names.
//! - Locals declared without an initialiser start at the type's default value (no
//!   definite-assignment analysis); `final` locals are not supported. A final instance
//!   field that the constructor never assigns keeps its default (not diagnosed).
//! - A final instance field with an initialiser cannot be assigned at all; a final
//!   static field must have an initialiser.
//! - Field initialisers are literals, possibly negated (`-(4)` is not a literal).
//! - Integer literals: decimal up to 2^63 - 1 (2^63 only when negated), hex up to 64
//!   bits (wrapping, like Java's long literals), no `L` suffix. `.5` and `1.` are doubles.
//! - `fork` also accepts `fork m(args)` (a method of the current class); forking a
//!   built-in is an error. Classes cannot be named `Thread`, `Barrier`, `Math`,
//!   `Object` or `String`.
//! - Nesting of statements and expressions is limited (parser `MAX_DEPTH`) so that no
//!   input can exhaust the stack.
//! - An array type or array creation has at most 255 dimensions (parser
//!   `MAX_ARRAY_DIMS`, the JVM's limit); more is a compile error at the extra `[`.

pub mod bigfoot;
pub mod ir;

#[cfg(feature = "testing")]
pub mod proggen;

mod ast;
mod check;
mod diag;
mod encapsulation;
mod lexer;
mod lower;
mod parser;
pub mod print;
mod sites;
mod span;
mod tast;
mod validate;

pub use diag::{Diagnostic, Diagnostics, Severity};

/// The result of a successful compilation.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub program: ir::Program,
    pub warnings: Diagnostics,
}

/// Compile one or more source files (name, text) to the IR. Errors are collected
/// (several per file, parser recovers); warnings are returned alongside a program.
pub fn compile(files: Vec<ir::SourceFile>) -> Result<Compiled, Diagnostics> {
    let mut sink = diag::Sink::new(&files);
    let mut decls = Vec::new();
    let mut complete = true;
    for (i, f) in files.iter().enumerate() {
        let parsed = parser::parse_file(ir::FileId(i as u32), &f.text, &mut sink);
        complete &= parsed.complete;
        decls.extend(parsed.classes);
    }
    if files.is_empty() {
        sink.diags
            .push_global(Severity::Error, "no source files given");
    }
    // A tree damaged by syntax errors is not checked (its type errors would be noise).
    if !complete || files.is_empty() {
        return Err(sink.finish());
    }
    let mut sites = sites::SiteTable::new(&files);
    let Some(checked) = check::check(&files, decls, &mut sink, &mut sites) else {
        return Err(sink.finish());
    };
    let (mut program, spans) = lower::lower(checked, sites);
    encapsulation::check(&mut program, &spans, &mut sink);
    Ok(Compiled {
        program,
        warnings: sink.finish(),
    })
}

/// Convenience: read files from disk (I/O errors become diagnostics without position).
/// Non-UTF-8 bytes are replaced (lossy decoding).
pub fn compile_paths(paths: &[std::path::PathBuf]) -> Result<Compiled, Diagnostics> {
    let mut files = Vec::new();
    let mut errors = Diagnostics::new();
    for p in paths {
        match std::fs::read(p) {
            Ok(bytes) => files.push(ir::SourceFile {
                name: p.display().to_string(),
                text: String::from_utf8_lossy(&bytes).into_owned(),
            }),
            Err(e) => {
                errors.push_global(Severity::Error, format!("cannot read {}: {e}", p.display()))
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    compile(files)
}
