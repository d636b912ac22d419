//! A generator of loop-shaped STD traces (the compressible shape of README's
//! "Compressed traces"): `T0` forks `threads` workers, then the workers take turns
//! in round-robin blocks; in its turn a worker runs `iters` iterations of
//! `acq(L1) r(V1) w(V1) rel(L1) r(Vt) w(Vt)` (`Vt` its own variable); at the end `T0`
//! joins them. Each operation has the site of its statement (the same in every
//! iteration and thread), as a recorded loop has. Race free: `V1` is guarded by
//! `L1`, `Vt` is thread-local.

use std::io::{self, Write};

/// Shape of a [`write_loop_trace`] trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopTraceConfig {
    /// Events to write (at least; whole turns, plus the forks and joins).
    pub events: u64,
    /// Worker threads `T1…` (at least 1).
    pub threads: u32,
    /// Iterations per turn (at least 1).
    pub iters: u64,
}

impl Default for LoopTraceConfig {
    /// 12,000,000 events, 8 workers, turns of 1,000 iterations.
    fn default() -> Self {
        LoopTraceConfig {
            events: 12_000_000,
            threads: 8,
            iters: 1_000,
        }
    }
}

/// Write the trace `cfg` to `out`; returns the number of events written.
pub fn write_loop_trace(cfg: &LoopTraceConfig, out: &mut dyn Write) -> io::Result<u64> {
    let threads = cfg.threads.max(1);
    let iters = cfg.iters.max(1);
    let mut n = 0u64;
    for t in 1..=threads {
        writeln!(out, "T0|fork(T{t})|1")?;
        n += 1;
    }
    // Whole turns while they fit, leaving room for the joins.
    let limit = cfg.events.saturating_sub(threads as u64);
    // Each turn's text is the same every round: format it once per thread.
    let turns: Vec<Vec<u8>> = (1..=threads)
        .map(|t| {
            let v = t + 1;
            let one = format!(
                "T{t}|acq(L1)|2\nT{t}|r(V1)|3\nT{t}|w(V1)|4\nT{t}|rel(L1)|5\nT{t}|r(V{v})|6\nT{t}|w(V{v})|7\n"
            );
            one.repeat(iters as usize).into_bytes()
        })
        .collect();
    let per_turn = 6 * iters;
    'rounds: loop {
        for turn in &turns {
            if n + per_turn > limit {
                break 'rounds;
            }
            out.write_all(turn)?;
            n += per_turn;
        }
    }
    for t in 1..=threads {
        writeln!(out, "T0|join(T{t})|8")?;
        n += 1;
    }
    out.flush()?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_size() {
        let cfg = LoopTraceConfig {
            events: 1_000,
            threads: 2,
            iters: 10,
        };
        let mut b = Vec::new();
        let n = write_loop_trace(&cfg, &mut b).unwrap();
        let text = String::from_utf8(b).unwrap();
        assert_eq!(text.lines().count() as u64, n);
        assert!((960..=1_004).contains(&n), "{n}");
        let t = crate::trace::parse_std(&text).unwrap();
        let chain =
            crate::offline::analyze(&t, "fasttrack", crate::ChainOptions::default()).unwrap();
        assert!(chain.warnings().is_empty());
    }
}
