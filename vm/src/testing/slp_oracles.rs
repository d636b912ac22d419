//! Property 3: SLP-compressed analyses give the same verdicts as the uncompressed
//! ones. For a trace, several grammars (capvm's compressor through the `.slp` file
//! format, the trivial left chain, random bracketings with shared subtrees, and a
//! start rule of random segments) must each expand to exactly the trace's events, and
//! `hb` and `eraser` on the grammar must report what the passes report on the trace:
//! the same locations, the same racy event and the same other event; a chain that
//! is not analysed on the grammar (`fasttrack`) runs on the expansion with the same
//! report. The streamed compressor of `capvm compress` must give the grammar that
//! pushing every event gives, also where it skips repeated lines unparsed.

use std::collections::BTreeMap;

use analyses::ChainOptions;
use analyses::chain::Chain;
use analyses::event::Loc;
use analyses::offline::analyze;
use analyses::slp::analyze::analyze_slp;
use analyses::slp::shapes::{bracketed, left_chain, segmented};
use analyses::slp::{Compressor, Grammar, read_slp, write_slp};
use analyses::testing::{looped, std_text, streamed_compression_agrees};
use analyses::trace::Trace;

fn options() -> ChainOptions {
    ChainOptions {
        fold_by_location: true,
        ..ChainOptions::default()
    }
}

/// Per location: (event, other event), of `analysis`'s warnings.
fn verdict(chain: &Chain, analysis: &str) -> BTreeMap<Loc, (Option<u64>, Option<u64>)> {
    chain
        .warnings()
        .iter()
        .filter(|r| r.warning.analysis == analysis)
        .filter_map(|r| {
            let w = &r.warning;
            Some((w.loc?, (w.event, w.accesses.first().and_then(|a| a.event))))
        })
        .collect()
}

/// The grammars property 3 is checked on (`seed` shapes the random ones).
pub fn grammars(trace: &Trace, seed: u64) -> Result<Vec<(&'static str, Grammar)>, String> {
    let mut c = Compressor::new();
    for e in trace.file_events() {
        c.push(e);
    }
    let compressed = read_slp(&write_slp(&c.finish(trace.env.clone())))
        .map_err(|e| format!("the .slp file of the trace does not read back: {e}"))?;
    Ok(vec![
        ("compressed", compressed),
        ("left chain", left_chain(&trace.events, trace.env.clone())),
        (
            "bracketed",
            bracketed(&trace.events, trace.env.clone(), seed),
        ),
        (
            "segmented",
            segmented(&trace.events, trace.env.clone(), seed),
        ),
    ])
}

/// Property 3 on `trace` (well-formed, as [`super::trace_oracles::renumber`] makes it),
/// and the streamed compressor (which skips repeated copies unparsed) on its text and
/// on a looped variant of it.
pub fn slp_agrees(trace: &Trace, seed: u64) -> Result<(), String> {
    let text = std_text(&trace.file_events().cloned().collect::<Vec<_>>());
    streamed_compression_agrees(&text).map_err(|e| format!("streamed: {e}"))?;
    streamed_compression_agrees(&looped(&text, seed))
        .map_err(|e| format!("streamed, looped: {e}"))?;
    let want: Vec<(&str, _)> = ["hb", "eraser", "fasttrack"]
        .into_iter()
        .map(|tool| {
            analyze(trace, tool, options())
                .map(|c| (tool, verdict(&c, tool)))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    for (shape, g) in grammars(trace, seed)? {
        let expanded = g
            .expand_all()
            .map_err(|e| format!("{shape}: the expansion is not well-formed: {e}"))?;
        if expanded != trace.events {
            return Err(format!("{shape}: the expansion differs from the trace"));
        }
        for (tool, want) in &want {
            let run = analyze_slp(&g, tool, &|_| options()).map_err(|e| e.to_string())?;
            let got = verdict(&run.chain, tool);
            if &got != want {
                return Err(format!(
                    "{shape}, {tool}: on the grammar {got:?}, on the trace {want:?}"
                ));
            }
        }
    }
    Ok(())
}
