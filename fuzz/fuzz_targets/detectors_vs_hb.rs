#![no_main]
// Body: `vm::testing::fuzz::detectors_vs_hb` (a failure is a disagreement or a panic).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = vm::testing::fuzz::replay("detectors_vs_hb", data) {
        panic!("{e}");
    }
});
