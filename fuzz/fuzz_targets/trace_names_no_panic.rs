#![no_main]
// Body: `vm::testing::fuzz::trace_names_no_panic` (a failure is an error or a panic).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = vm::testing::fuzz::replay("trace_names_no_panic", data) {
        panic!("{e}");
    }
});
