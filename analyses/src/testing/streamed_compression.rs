//! The streamed compressor (`capvm compress`, `run --record FILE.slp`) against the
//! reader and [`crate::slp::Compressor`] on the same text. The streamed path skips
//! the lines of repeated copies of a block without parsing them, so it is checked on
//! texts with many such copies ([`looped`]), valid or not.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::slp::stream::compress_std;
use crate::slp::{Compressor, write_slp};
use crate::trace::{ReadError, TraceInput, parse_std};

/// `compress_std(text)` gives the `.slp` bytes that the reader's events pushed one by
/// one into a [`Compressor`] give, or, for a malformed text, the reader's error (the
/// same line and message).
pub fn streamed_compression_agrees(text: &str) -> Result<(), String> {
    let want = parse_std(text);
    let got = compress_std(TraceInput::Bytes(text.as_bytes()));
    match (want, got) {
        (Ok(t), Ok(g)) => {
            let mut c = Compressor::new();
            for e in t.file_events() {
                c.push(e);
            }
            let want = write_slp(&c.finish(t.env.clone()));
            if write_slp(&g) != want {
                return Err(format!(
                    "streamed compression gives another grammar ({} rules, size {}) than \
                     pushing the events ({} events)",
                    g.rules.len(),
                    g.size(),
                    t.file_events().count()
                ));
            }
            let expanded = g
                .expand_all()
                .map_err(|e| format!("the streamed grammar does not expand: {e}"))?;
            if expanded != t.events {
                return Err("the streamed grammar expands to other events".into());
            }
            Ok(())
        }
        (Err(e), Err(ReadError::Trace(f))) if e.line == f.line && e.message == f.message => Ok(()),
        (want, got) => Err(format!(
            "reader: {:?}; streamed compression: {:?}",
            want.map(|t| t.events.len()),
            got.map(|g| g.events())
        )),
    }
}

/// `text` with a few blocks of its lines repeated many times in place (seeded), some
/// copies changed late in a run: a byte of one line, or a numeric location set to
/// the line number the copy's line will have.
pub fn looped(text: &str, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return String::new();
    }
    for _ in 0..rng.random_range(1..=3) {
        let p = rng.random_range(1..=8usize).min(lines.len());
        let at = rng.random_range(0..=lines.len() - p);
        let block: Vec<String> = lines[at..at + p].to_vec();
        let copies = rng.random_range(2..40usize);
        let mut ins = Vec::with_capacity(p * copies);
        for _ in 0..copies {
            ins.extend(block.iter().cloned());
        }
        let change = rng.random_range(0..4u32);
        if change > 0 && !ins.is_empty() {
            let i = rng.random_range(ins.len() / 2..ins.len());
            if change == 1 {
                // A different byte.
                let l = &mut ins[i];
                if !l.is_empty() {
                    let k = rng.random_range(0..l.len());
                    if l.is_char_boundary(k) && l.is_char_boundary(k + 1) {
                        l.replace_range(k..k + 1, if rng.random_bool(0.5) { "1" } else { "(" });
                    }
                }
            } else {
                // The copy's line number as its location (lines are 1-based; the
                // inserted lines start after line `at + p`).
                let line_no = at + p + i + 1;
                let l = &mut ins[i];
                let cols: Vec<&str> = l.splitn(3, '|').collect();
                if cols.len() >= 2 {
                    *l = format!("{}|{}|{line_no}", cols[0], cols[1]);
                }
            }
        }
        lines.splice(at + p..at + p, ins);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}
