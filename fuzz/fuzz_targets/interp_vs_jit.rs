#![no_main]
// Body: `vm::testing::fuzz::interp_vs_jit` (a failure is a disagreement or a panic).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = vm::testing::fuzz::replay("interp_vs_jit", data) {
        panic!("{e}");
    }
});
