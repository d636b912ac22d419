//! Generators for property tests and fuzzing (feature `testing`).

mod eager_goldilocks;
mod gen_cli;
mod generate;
mod long_trace;
mod loop_trace;
pub mod oracle_atomicity;
pub mod oracle_singletrack;
mod streamed_compression;

pub use eager_goldilocks::eager_goldilocks;
pub use gen_cli::{gen_args, gen_to_stdout};
pub use generate::{GenConfig, gen_from_bytes, gen_trace};
pub use long_trace::{LongTraceConfig, write_long_trace};
pub use loop_trace::{LoopTraceConfig, write_loop_trace};
pub use streamed_compression::{looped, streamed_compression_agrees};

use std::collections::{BTreeMap, BTreeSet};

use crate::chain::Chain;
use crate::report::Warning;
use crate::trace::Trace;

/// `singletrack` on `trace` as it is and with every trace line cleared: without
/// lines (as online) the pass may keep a location's state with its sole accessor,
/// so the two runs must report the same warnings but for the lines. Returns the
/// first difference.
pub fn singletrack_lineless_agrees(trace: &Trace) -> Result<(), String> {
    let run = |t: &Trace| -> Result<Vec<String>, String> {
        let chain =
            crate::offline::analyze(t, "singletrack", Default::default()).map_err(|e| e.0)?;
        Ok(chain
            .warnings()
            .iter()
            .map(|r| sans_lines(&r.warning))
            .collect())
    };
    let mut lineless = trace.clone();
    for ev in &mut lineless.events {
        ev.index = 0;
    }
    let (with, without) = (run(trace)?, run(&lineless)?);
    if with.len() != without.len() {
        return Err(format!(
            "singletrack: {} warnings with trace lines, {} without",
            with.len(),
            without.len()
        ));
    }
    match with.iter().zip(&without).find(|(a, b)| a != b) {
        Some((a, b)) => Err(format!("singletrack with trace lines:\n{a}\nwithout:\n{b}")),
        None => Ok(()),
    }
}

/// A warning without its trace lines (what a run without lines reports), printed.
fn sans_lines(w: &Warning) -> String {
    let mut w = w.clone();
    w.event = None;
    for a in &mut w.accesses {
        a.event = None;
    }
    w.extra.values_mut().for_each(strip_events);
    format!("{w:?}")
}

/// Remove every `event` key (trace lines exist only offline) from a warning's JSON,
/// at any depth.
pub fn strip_events(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            o.remove("event");
            o.values_mut().for_each(strip_events);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_events),
        _ => {}
    }
}

/// The trace events (`Warning::event`) each location was flagged at by `analysis`,
/// keyed by the location's name (collected from the chain's reporter; warnings are
/// folded by sites, so this is exact when every event has its own site, as in
/// generated traces and RAPID's reference traces in `analyses/tests/data/rapid`).
pub fn flagged(chain: &Chain, analysis: &str) -> BTreeMap<String, BTreeSet<u64>> {
    let env = chain.shared.env.clone();
    let mut out: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for r in chain.warnings() {
        let w = &r.warning;
        if w.analysis != analysis {
            continue;
        }
        if let (Some(loc), Some(ev)) = (w.loc, w.event) {
            out.entry(env.loc_name(loc).to_string())
                .or_default()
                .insert(ev);
        }
    }
    out
}

/// The first flagged event per location.
pub fn first_flagged(chain: &Chain, analysis: &str) -> BTreeMap<String, u64> {
    flagged(chain, analysis)
        .into_iter()
        .filter_map(|(k, v)| v.first().map(|e| (k, *e)))
        .collect()
}

/// `events` as STD text (names from an empty [`crate::trace::TraceEnv`], as generated
/// traces use them).
pub fn std_text(events: &[crate::event::OwnedEvent]) -> String {
    let env = crate::trace::TraceEnv::default();
    let mut w = crate::trace::StdWriter::new(Vec::new()).expect("writing to memory");
    for e in events {
        w.write_event(&env, &e.as_event())
            .expect("writing to memory");
    }
    String::from_utf8(w.into_inner()).expect("STD text is UTF-8")
}
