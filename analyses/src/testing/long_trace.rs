//! A generator of long STD traces for throughput measurements (`capvm analyze` on
//! millions of events; the figures in README's "Measured results"): `threads`
//! long-lived threads forked by `T0` at the start and joined at the end, each step one
//! access of a random thread to a random variable, guarded by the variable's own lock
//! (`acq`, access, `rel`) except for a fraction of unguarded accesses. The guarded
//! accesses are ordered by their lock; the unguarded ones race with the accesses of
//! other threads that are not ordered with them. Seeded and independent of the rest
//! of capvm, so the traces can be written anywhere and read back by `capvm analyze`
//! or by RAPID (every line is plain STD: `T3|acq(L5)|17`).

use std::io::{self, Write};

/// Shape of a [`write_long_trace`] trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LongTraceConfig {
    /// Events to write (at least; the last step and the joins may add a few).
    pub events: u64,
    /// Worker threads `T1…`, forked by `T0` (at least 1).
    pub threads: u32,
    /// Variables `V0…`.
    pub vars: u32,
    /// Locks `L0…`; variable `k` is guarded by lock `k % locks` (at least 1).
    pub locks: u32,
    /// Unguarded accesses per 10,000 (100 = 1%).
    pub unguarded_per_10k: u32,
    pub seed: u64,
}

impl Default for LongTraceConfig {
    /// The trace of README's figures: 2,000,000 events, 8 workers, 2,000 variables,
    /// 16 locks, 1% of accesses unguarded.
    fn default() -> Self {
        LongTraceConfig {
            events: 2_000_000,
            threads: 8,
            vars: 2_000,
            locks: 16,
            unguarded_per_10k: 100,
            seed: 1,
        }
    }
}

/// xorshift64*: small, fast and good enough for a workload.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }
}

/// Write the trace `cfg` to `out` (one `THREAD|OP|LINE` line per event, the location
/// being the line number); returns the number of events written.
pub fn write_long_trace(cfg: &LongTraceConfig, out: &mut dyn Write) -> io::Result<u64> {
    let threads = cfg.threads.max(1) as u64;
    let locks = cfg.locks.max(1) as u64;
    let vars = cfg.vars.max(1) as u64;
    let mut rng = Rng(cfg.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut line: u64 = 0;
    let mut ev = |out: &mut dyn Write, t: u64, op: std::fmt::Arguments<'_>| {
        line += 1;
        writeln!(out, "T{t}|{op}|{line}")
    };
    for t in 1..=threads {
        ev(out, 0, format_args!("fork(T{t})"))?;
    }
    let body = cfg.events.saturating_sub(2 * threads);
    let mut written = 0;
    while written < body {
        let t = 1 + rng.below(threads);
        let v = rng.below(vars);
        let op = if rng.below(2) == 0 { "r" } else { "w" };
        if rng.below(10_000) < cfg.unguarded_per_10k as u64 {
            ev(out, t, format_args!("{op}(V{v})"))?;
            written += 1;
        } else {
            let l = v % locks;
            ev(out, t, format_args!("acq(L{l})"))?;
            ev(out, t, format_args!("{op}(V{v})"))?;
            ev(out, t, format_args!("rel(L{l})"))?;
            written += 3;
        }
    }
    for t in 1..=threads {
        ev(out, 0, format_args!("join(T{t})"))?;
    }
    out.flush()?;
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::analyze;
    use crate::shared::ChainOptions;
    use crate::trace::parse_std;

    fn small() -> LongTraceConfig {
        LongTraceConfig {
            events: 20_000,
            threads: 4,
            vars: 50,
            locks: 4,
            unguarded_per_10k: 100,
            seed: 7,
        }
    }

    fn warnings(text: &str, tools: &str) -> usize {
        let trace = parse_std(text).unwrap();
        analyze(&trace, tools, ChainOptions::default())
            .unwrap()
            .warnings()
            .len()
    }

    #[test]
    fn traces_are_well_formed_seeded_and_race_only_when_unguarded() {
        let mut a = Vec::new();
        let n = write_long_trace(&small(), &mut a).unwrap();
        let mut b = Vec::new();
        write_long_trace(&small(), &mut b).unwrap();
        assert_eq!(a, b, "same seed, same trace");
        assert!((20_000..20_003).contains(&n), "{n}");
        let text = String::from_utf8(a).unwrap();
        let trace = parse_std(&text).unwrap();
        assert_eq!(trace.file_events().count() as u64, n);
        assert!(
            text.starts_with("T0|fork(T1)|1\n") && text.ends_with(&format!("T0|join(T4)|{n}\n"))
        );
        for tools in ["fasttrack", "eraser"] {
            assert!(
                warnings(&text, tools) > 0,
                "{tools}: 1% unguarded on 50 variables"
            );
        }
        let guarded = LongTraceConfig {
            unguarded_per_10k: 0,
            ..small()
        };
        let mut g = Vec::new();
        write_long_trace(&guarded, &mut g).unwrap();
        let g = String::from_utf8(g).unwrap();
        for tools in ["fasttrack", "eraser", "hb"] {
            assert_eq!(warnings(&g, tools), 0, "{tools}: every access guarded");
        }
    }
}
