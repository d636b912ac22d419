//! Criterion: the STD trace reader alone (`analyses::trace::StdReader`, no analysis)
//! on a generated trace of 500,000 events (`analyses::testing::write_long_trace`: 8
//! long-lived threads, 2,000 variables, 16 locks, 1% of accesses unguarded) held in
//! memory, and the same trace through `offline::analyze_stream` with the chain `none`,
//! on one thread and pipelined. Throughput in bytes of trace.
//!
//! `cargo bench -p capvm-benches --bench reader`. The figures of the full 2M-event
//! trace, end to end with `capvm analyze`: README, "Measured results".

use std::sync::Arc;

use analyses::ChainOptions;
use analyses::offline::{BATCH, Mode, analyze_stream};
use analyses::testing::{LongTraceConfig, write_long_trace};
use analyses::trace::{StdReader, TraceEnv, TraceInput};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn trace() -> Vec<u8> {
    let mut out = Vec::new();
    let cfg = LongTraceConfig {
        events: 500_000,
        ..LongTraceConfig::default()
    };
    write_long_trace(&cfg, &mut out).expect("writing to memory");
    out
}

fn read_all(bytes: &[u8]) -> u64 {
    let mut reader = StdReader::new(bytes, Arc::new(TraceEnv::default()));
    let mut batch = Vec::with_capacity(BATCH + 16);
    loop {
        batch.clear();
        match reader.read_batch(&mut batch, BATCH) {
            Ok(true) => {}
            Ok(false) => return reader.events(),
            Err(e) => panic!("generated trace: {e}"),
        }
    }
}

fn reader(c: &mut Criterion) {
    let bytes = trace();
    assert_eq!(read_all(&bytes), 500_000);
    let mut g = c.benchmark_group("reader");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.sample_size(20);
    g.bench_function("read", |b| b.iter(|| read_all(&bytes)));
    let options = |_: &TraceEnv| ChainOptions::default();
    for (name, mode) in [
        ("none-single", Mode::Single),
        ("none-pipelined", Mode::Pipelined),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                analyze_stream(TraceInput::Bytes(&bytes), "none", &options, mode)
                    .expect("generated trace")
                    .events
            })
        });
    }
    g.finish();
}

criterion_group!(benches, reader);
criterion_main!(benches);
