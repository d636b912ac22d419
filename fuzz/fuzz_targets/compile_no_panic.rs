#![no_main]
// Body: `vm::testing::fuzz::compile_no_panic` (a failure is a disagreement or a panic).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = vm::testing::fuzz::replay("compile_no_panic", data) {
        panic!("{e}");
    }
});
