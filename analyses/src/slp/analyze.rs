//! `capvm analyze FILE.slp`: a chain over a compressed trace. A chain made only of
//! `hb` and `eraser` runs on the grammar ([`super::hb`], [`super::lockset`]); any other
//! chain (or a mixed one such as `count:hb`, or `hb` on a trace with more than
//! [`super::hb::MAX_ENTITIES`] threads, locks, volatiles and barrier episodes) runs on
//! the streamed expansion
//! ([`super::Expander`]: bounded memory, no temporary file), exactly as on the `.std`.

use std::sync::Arc;
use std::time::Instant;

use crate::chain::{Chain, ChainError};
use crate::ctx::CtxId;
use crate::event::{Op, OwnedKind};
use crate::offline::{BATCH, Runner};
use crate::passes::shadow::{Acc, pair_warning};
use crate::report::WarningKind;
use crate::shared::{ChainOptions, Shared};
use crate::trace::TraceEnv;

use super::hb::{Finding, GrammarStats, analyze_hb};
use super::lockset::analyze_lockset;
use super::{ExpandError, Grammar};

/// The analyses that run on the grammar itself.
pub const GRAMMAR_TOOLS: &[&str] = &["hb", "eraser"];

/// Whether chain `spec` runs on the grammar (only `hb` and `eraser`, at least one).
pub fn on_grammar(spec: &str) -> bool {
    let spec = spec.trim();
    !spec.is_empty() && spec != "none" && spec.split(':').all(|n| GRAMMAR_TOOLS.contains(&n.trim()))
}

/// A finished analysis of a compressed trace.
pub struct SlpRun {
    pub chain: Chain,
    /// File events of the expansion.
    pub events: u64,
    /// Whether the chain ran on the grammar (else on the expansion).
    pub on_grammar: bool,
    pub seconds: f64,
    /// Per grammar analysis: its name and statistics.
    pub grammar_stats: Vec<(&'static str, GrammarStats)>,
}

/// Why an analysis of a compressed trace failed.
#[derive(Debug)]
pub enum SlpAnalyzeError {
    Chain(ChainError),
    /// The expansion is not a well-formed trace.
    Expand(ExpandError),
}

impl std::fmt::Display for SlpAnalyzeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SlpAnalyzeError::Chain(e) => write!(f, "{e}"),
            SlpAnalyzeError::Expand(e) => write!(f, "{e}"),
        }
    }
}

/// The access at event `p` of the expansion, as a report shows it.
fn access_at(g: &Grammar, p: u64) -> Acc {
    let ev = g.event_at(p);
    let (tid, site, index, op) = match ev {
        Some(ev) => {
            let op = match ev.kind {
                OwnedKind::Write { .. } => Op::Write,
                _ => Op::Read,
            };
            (ev.tid, ev.site, ev.index, op)
        }
        None => (0, Default::default(), 0, Op::Read),
    };
    Acc {
        tid,
        op,
        site,
        ctx: CtxId::ROOT,
        index,
    }
}

/// Run chain `spec` over `g` (see the module doc). `options` gets the trace's names.
pub fn analyze_slp(
    g: &Grammar,
    spec: &str,
    options: &dyn Fn(&TraceEnv) -> ChainOptions,
) -> Result<SlpRun, SlpAnalyzeError> {
    let start = Instant::now();
    let env: Arc<dyn crate::env::Env> = g.env.clone();
    let opts = options(&g.env);
    // Too many entities for the start-rule engine's clocks: analyse the expansion.
    let uses = |name: &str| spec.split(':').any(|n| n.trim() == name);
    let too_big =
        (uses("hb") && !super::hb::fits(g)) || (uses("eraser") && !super::lockset::fits(g));
    if on_grammar(spec) && !too_big {
        let shared = Shared::new(env, opts);
        let chain = Chain::from_passes(Vec::new(), shared);
        let mut warnings = Vec::new();
        let mut stats = Vec::new();
        let mut seen = Vec::new();
        for name in spec.split(':').map(str::trim) {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let (findings, st, kind, analysis): (Vec<Finding>, _, _, &'static str) = match name {
                "hb" => {
                    let (f, s) = analyze_hb(g);
                    (f, s, WarningKind::Race, "hb")
                }
                _ => {
                    let (f, s) = analyze_lockset(g);
                    (f, s, WarningKind::Lockset, "eraser")
                }
            };
            stats.push((analysis, st));
            for f in findings {
                let prev = access_at(g, f.prev);
                let cur = access_at(g, f.pos);
                let message = match kind {
                    WarningKind::Race => format!("{}-{} race", prev.op, cur.op),
                    _ => "no lock protects this location consistently".to_string(),
                };
                warnings.push((
                    f.pos,
                    pair_warning(kind, analysis, f.loc, &prev, &cur, message),
                ));
            }
        }
        // In trace order, as the passes report them on the expansion.
        warnings.sort_by_key(|(p, _)| *p);
        for (_, w) in warnings {
            chain.shared.reporter.report(w);
        }
        return Ok(SlpRun {
            chain,
            events: g.events(),
            on_grammar: true,
            seconds: start.elapsed().as_secs_f64(),
            grammar_stats: stats,
        });
    }
    let chain = crate::passes::chain(spec, env, opts).map_err(SlpAnalyzeError::Chain)?;
    let mut runner = Runner::default();
    let mut x = g.expander();
    let mut batch = Vec::with_capacity(BATCH + 16);
    loop {
        batch.clear();
        let more = x
            .next_batch(&mut batch, BATCH)
            .map_err(SlpAnalyzeError::Expand)?;
        runner.run(&chain, &batch);
        if !more {
            break;
        }
    }
    chain.finish();
    Ok(SlpRun {
        chain,
        events: g.events(),
        on_grammar: false,
        seconds: start.elapsed().as_secs_f64(),
        grammar_stats: Vec::new(),
    })
}
