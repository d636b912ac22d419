//! CapJava front end: lexer, parser (with error recovery), name resolution, type
//! checking and lowering to the IR in [`ir`].
//!
//! Pipeline: [`lexer`] → [`parser`] (→ [`ast`]) → [`check`] (name resolution and type
//! checking, → [`tast`]) → [`lower`] (→ [`ir::Program`]). [`print`] renders the IR.
//!
//! Architecture invariant: no runtime, no analyses. The output is plain data.

pub mod ir;

mod diag;
mod span;

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
    let mut d = Diagnostics::new();
    let _ = files;
    d.push_global(Severity::Error, "the CapJava front end is still being written");
    Err(d)
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
            Err(e) => errors.push_global(
                Severity::Error,
                format!("cannot read {}: {e}", p.display()),
            ),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    compile(files)
}
