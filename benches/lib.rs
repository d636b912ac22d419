//! Criterion benchmarks of capvm live in `benches/`; this library is empty.
