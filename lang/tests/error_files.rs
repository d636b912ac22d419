//! Data-driven error tests: every `tests/data/errors/NAME.cj` must fail to compile with
//! exactly the diagnostics in `NAME.err` (regenerate with `UPDATE_EXPECT=1`).

use lang::ir::SourceFile;
use std::path::Path;

#[test]
fn error_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/errors");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/data/errors exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cj"))
        .collect();
    names.sort();
    assert!(names.len() >= 10);
    for path in names {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let files = vec![SourceFile {
            name: name.clone(),
            text,
        }];
        let out = match lang::compile(files.clone()) {
            Ok(_) => panic!("{name} compiled but must fail"),
            Err(d) => d.render(&files, false),
        };
        let expected = path.with_extension("err");
        expect_test::expect_file![expected].assert_eq(&out);
    }
}
