//! Oracles on event sequences (properties 1 and 4). Inputs are well-formed events
//! (from `analyses::testing::gen_trace` or recorded from a run); [`renumber`] gives
//! every event its own site so that warnings are never folded.

use std::collections::{BTreeMap, BTreeSet};

use analyses::ChainOptions;
use analyses::env::Env;
use analyses::event::{Loc, OwnedEvent, OwnedKind, SiteId};
use analyses::offline::analyze;
use analyses::passes::hb::races;
use analyses::report::WarningKind;
use analyses::testing::first_flagged;
use analyses::testing::oracle_atomicity::atomicity_first_violation;
use analyses::testing::oracle_singletrack::{conflicts, serializability_first_violation};
use analyses::trace::Trace;

/// The precise detectors of property 1.
pub const PRECISE: [&str; 3] = ["fasttrack", "djit", "goldilocks"];

/// `events` with `index` = `site` = 1-based position, read into a [`Trace`].
pub fn renumber(events: &[OwnedEvent]) -> Result<Trace, String> {
    let events = events
        .iter()
        .enumerate()
        .map(|(i, e)| OwnedEvent {
            index: i as u64 + 1,
            site: SiteId(i as u32 + 1),
            ..e.clone()
        })
        .collect();
    Trace::from_events(events).map_err(|e| format!("not a well-formed trace: {e:?}"))
}

/// The location of the racy event of each `hb` race, first racy event per location.
pub fn hb_first_races(trace: &Trace) -> BTreeMap<Loc, u64> {
    let mut out = BTreeMap::new();
    for r in races(&trace.events) {
        let e = &trace.events[r.pos];
        if let OwnedKind::Read { loc } | OwnedKind::Write { loc, .. } = e.kind {
            out.entry(loc).or_insert(e.index);
        }
    }
    out
}

/// Property 1: FastTrack, DJIT+ and Goldilocks report the same racy locations as the
/// `hb` oracle, each first at the same event.
pub fn detectors_agree_with_hb(trace: &Trace) -> Result<(), String> {
    let chain = analyze(
        trace,
        "fasttrack:djit:goldilocks:hb",
        ChainOptions::default(),
    )
    .map_err(|e| e.0)?;
    let oracle = first_flagged(&chain, "hb");
    // The pass and the offline oracle are the same relation, computed two ways.
    let offline: BTreeMap<String, u64> = hb_first_races(trace)
        .into_iter()
        .map(|(l, e)| (trace.env.loc_name(l).to_string(), e))
        .collect();
    if offline != oracle {
        return Err(format!(
            "hb pass {oracle:?} vs hb::races {offline:?} ({} events)",
            trace.events.len()
        ));
    }
    for tool in PRECISE {
        let got = first_flagged(&chain, tool);
        if got != oracle {
            return Err(format!(
                "{tool} first races {got:?} vs hb {oracle:?} ({} events)",
                trace.events.len()
            ));
        }
    }
    Ok(())
}

/// Property 4: `singletrack` reports a conflict iff the brute-force conflict oracle
/// finds one and its first serializability violation is the oracle's, and reports
/// the same warnings without the trace's lines (as online, where a location's sole
/// accessor keeps its state); `atomicity`'s first violation is the brute-force
/// serial-order oracle's.
pub fn specs_agree_with_bruteforce(trace: &Trace) -> Result<(), String> {
    let events = &trace.events;
    let ws = analyze(trace, "singletrack", ChainOptions::default())
        .map_err(|e| e.0)?
        .warnings();
    let has_conflict = ws.iter().any(|r| r.warning.kind == WarningKind::Conflict);
    let want_cf = conflicts(events);
    if has_conflict == want_cf.is_empty() {
        return Err(format!(
            "singletrack conflict reported: {has_conflict}, oracle conflicts: {want_cf:?}"
        ));
    }
    let first = |ws: &[analyses::report::Reported], k: WarningKind| {
        ws.iter()
            .filter(|r| r.warning.kind == k)
            .filter_map(|r| r.warning.event)
            .min()
    };
    let got = first(&ws, WarningKind::Serializability);
    let want = serializability_first_violation(events);
    if got != want {
        return Err(format!(
            "singletrack first serializability violation {got:?} vs oracle {want:?}"
        ));
    }
    analyses::testing::singletrack_lineless_agrees(trace)?;
    let ws = analyze(trace, "atomicity", ChainOptions::default())
        .map_err(|e| e.0)?
        .warnings();
    let got = first(&ws, WarningKind::Atomicity);
    let want = atomicity_first_violation(events);
    if got != want {
        return Err(format!(
            "atomicity first violation {got:?} vs oracle {want:?}"
        ));
    }
    Ok(())
}

/// The racy locations `analysis` flagged in `chain`'s warnings (raw locations).
pub fn race_locs(ws: &[analyses::report::Reported], analysis: &str) -> BTreeSet<Loc> {
    ws.iter()
        .filter(|r| r.warning.analysis == analysis && r.warning.kind == WarningKind::Race)
        .filter_map(|r| r.warning.loc)
        .collect()
}
