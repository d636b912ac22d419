#![no_main]
// Body: `vm::testing::fuzz::filters_trace_precise` (a failure is a disagreement or a panic).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = vm::testing::fuzz::replay("filters_trace_precise", data) {
        panic!("{e}");
    }
});
