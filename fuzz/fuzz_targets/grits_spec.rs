#![no_main]
// Body: `vm::testing::fuzz::grits_spec` (property 8: a trace satisfies the spec
// inferred from it; `grits --spec` and a brute-force oracle agree on deviations).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = vm::testing::fuzz::replay("grits_spec", data) {
        panic!("{e}");
    }
});
