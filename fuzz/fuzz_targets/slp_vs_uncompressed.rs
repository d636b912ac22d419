#![no_main]
// Body: `vm::testing::fuzz::slp_vs_uncompressed` (property 3; a failure is a
// disagreement between the grammar and the trace, or a panic).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = vm::testing::fuzz::replay("slp_vs_uncompressed", data) {
        panic!("{e}");
    }
});
