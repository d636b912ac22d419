mod common;

#[test]
fn language_md_example_compiles() {
    let text = include_str!("data/example.cj");
    let out = common::compile_text("example.cj", text);
    expect_test::expect_file!["data/example.ir"].assert_eq(&out);
}
