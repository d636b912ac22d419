#![no_main]
// Body: `vm::testing::fuzz::bigfoot_vs_fasttrack` (a failure is a disagreement or a panic).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = vm::testing::fuzz::replay("bigfoot_vs_fasttrack", data) {
        panic!("{e}");
    }
});
