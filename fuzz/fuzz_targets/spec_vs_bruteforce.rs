#![no_main]
// Body: `vm::testing::fuzz::spec_vs_bruteforce` (a failure is a disagreement or a panic).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = vm::testing::fuzz::replay("spec_vs_bruteforce", data) {
        panic!("{e}");
    }
});
