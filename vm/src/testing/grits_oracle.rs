//! Property 8 (`docs/architecture.md`, "Precision and soundness properties") on
//! traces: the spec `grits` infers from a trace is satisfied by that trace, and
//! `grits --spec` reports a `discipline` warning on exactly the locations whose
//! ordered accesses leave their spec, as a brute-force oracle decides.
//!
//! The oracle shares nothing with the pass: happens-before from per-event vector
//! clocks (every event ticks its thread), OrderSets as the set of devices of the
//! synchronizes-with edges lying between the previous access and the access (Wood,
//! *Hominy Grits*, Def. 4.2, over time-respecting paths), the simplification rules
//! 4.1/4.2, and membership in a spec's pattern language by backtracking over segment
//! boundaries (`docs/grits.md`, "Checking").

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use analyses::ChainOptions;
use analyses::env::Env;
use analyses::event::{Loc, ObjId, OwnedEvent, OwnedKind, Tid};
use analyses::offline::analyze;
use analyses::passes::grits::matcher::{Compound, Kind};
use analyses::passes::grits::spec::{self, Entry, GritsSpec};
use analyses::report::WarningKind;
use analyses::trace::Trace;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Dev {
    Lock(ObjId),
    Vol(Loc),
    Forker(Tid),
    Joined(Tid),
}

/// Vector clocks after each event (the event's own thread ticks at every event):
/// `a` happens before or is `b` iff `vc[a][tid(a)] <= vc[b][tid(a)]`.
fn clocks(events: &[OwnedEvent]) -> Vec<Vec<u32>> {
    let n = events.iter().map(|e| e.tid as usize + 1).max().unwrap_or(1);
    let n = n.max(
        events
            .iter()
            .filter_map(|e| match e.kind {
                OwnedKind::Fork { child, .. } | OwnedKind::Join { child } => {
                    Some(child as usize + 1)
                }
                _ => None,
            })
            .max()
            .unwrap_or(0),
    );
    let join = |a: &mut Vec<u32>, b: &[u32]| {
        for (x, y) in a.iter_mut().zip(b) {
            *x = (*x).max(*y);
        }
    };
    let mut th: Vec<Vec<u32>> = vec![vec![0; n]; n];
    let mut locks: HashMap<ObjId, Vec<u32>> = HashMap::new();
    let mut vols: HashMap<Loc, Vec<u32>> = HashMap::new();
    let mut forked: HashMap<Tid, Vec<u32>> = HashMap::new();
    let mut ended: HashMap<Tid, Vec<u32>> = HashMap::new();
    let mut bars: HashMap<(ObjId, u64), Vec<u32>> = HashMap::new();
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        let t = e.tid as usize;
        match &e.kind {
            OwnedKind::ThreadStart => {
                if let Some(v) = forked.remove(&e.tid) {
                    join(&mut th[t], &v);
                }
            }
            OwnedKind::Acquire { lock } => {
                if let Some(v) = locks.get(lock) {
                    let v = v.clone();
                    join(&mut th[t], &v);
                }
            }
            OwnedKind::VolatileRead { loc } => {
                if let Some(v) = vols.get(loc) {
                    let v = v.clone();
                    join(&mut th[t], &v);
                }
            }
            OwnedKind::Join { child } => {
                if let Some(v) = ended.get(child) {
                    let v = v.clone();
                    join(&mut th[t], &v);
                }
            }
            OwnedKind::BarrierExit {
                barrier,
                generation,
                ..
            } => {
                if let Some(v) = bars.get(&(*barrier, *generation)) {
                    let v = v.clone();
                    join(&mut th[t], &v);
                }
            }
            _ => {}
        }
        th[t][t] += 1;
        let now = th[t].clone();
        match &e.kind {
            OwnedKind::Release { lock } => {
                locks.insert(*lock, now.clone());
            }
            OwnedKind::VolatileWrite { loc, .. } => {
                join(vols.entry(*loc).or_insert(vec![0; n]), &now)
            }
            OwnedKind::Fork { child, .. } => {
                forked.insert(*child, now.clone());
            }
            OwnedKind::ThreadEnd => {
                ended.insert(e.tid, now.clone());
            }
            OwnedKind::BarrierEnter {
                barrier,
                generation,
                ..
            } => join(
                bars.entry((*barrier, *generation)).or_insert(vec![0; n]),
                &now,
            ),
            _ => {}
        }
        out.push(now);
    }
    out
}

/// Synchronizes-with edges `(source event, destination event, device)`.
fn edges(events: &[OwnedEvent]) -> Vec<(usize, usize, Dev)> {
    let mut out = Vec::new();
    for (s, e) in events.iter().enumerate() {
        for (r, f) in events.iter().enumerate().skip(s + 1) {
            let d = match (&e.kind, &f.kind) {
                (OwnedKind::Release { lock: a }, OwnedKind::Acquire { lock: b }) if a == b => {
                    Dev::Lock(*a)
                }
                (OwnedKind::VolatileWrite { loc: a, .. }, OwnedKind::VolatileRead { loc: b })
                    if a == b =>
                {
                    Dev::Vol(*a)
                }
                (OwnedKind::Fork { child, .. }, OwnedKind::ThreadStart) if *child == f.tid => {
                    Dev::Forker(e.tid)
                }
                (OwnedKind::ThreadEnd, OwnedKind::Join { child }) if *child == e.tid => {
                    Dev::Joined(e.tid)
                }
                (
                    OwnedKind::BarrierEnter {
                        barrier: a,
                        generation: g,
                        ..
                    },
                    OwnedKind::BarrierExit {
                        barrier: b,
                        generation: h,
                        ..
                    },
                ) if a == b && g == h => Dev::Lock(*a),
                _ => continue,
            };
            out.push((s, r, d));
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Rd,
    Wr,
    Acc,
}

/// A logical access: OrderSet, operation, thread, locks held (first access only).
#[derive(Clone, Debug)]
struct K {
    m: BTreeSet<Dev>,
    op: Op,
    tid: Tid,
    held: BTreeSet<ObjId>,
}

/// Per location: its logical accesses, or `None` if it has a race.
fn ordered_accesses(events: &[OwnedEvent]) -> BTreeMap<Loc, Option<Vec<K>>> {
    let vc = clocks(events);
    let es = edges(events);
    let hb = |a: usize, b: usize| {
        let t = events[a].tid as usize;
        a == b || vc[a][t] <= vc[b][t]
    };
    let order_set = |p: usize, a: usize| -> BTreeSet<Dev> {
        es.iter()
            .filter(|(s, r, _)| hb(p, *s) && hb(*r, a))
            .map(|(_, _, d)| *d)
            .collect()
    };
    let mut held: HashMap<Tid, BTreeSet<ObjId>> = HashMap::new();
    // Per location: last write, each thread's last read since it, logical accesses.
    struct St {
        wr: Option<usize>,
        reads: BTreeMap<Tid, usize>,
        ks: Option<Vec<K>>,
    }
    let mut locs: BTreeMap<Loc, St> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let (loc, op) = match e.kind {
            OwnedKind::Acquire { lock } => {
                held.entry(e.tid).or_default().insert(lock);
                continue;
            }
            OwnedKind::Release { lock } => {
                held.entry(e.tid).or_default().remove(&lock);
                continue;
            }
            OwnedKind::Read { loc } => (loc, Op::Rd),
            OwnedKind::Write { loc, .. } => (loc, Op::Wr),
            _ => continue,
        };
        let st = locs.entry(loc).or_insert(St {
            wr: None,
            reads: BTreeMap::new(),
            ks: Some(Vec::new()),
        });
        let Some(ks) = &mut st.ks else { continue };
        let first = ks.is_empty();
        let m = match op {
            Op::Rd => {
                let m = match st.wr {
                    Some(w) if !hb(w, i) => {
                        st.ks = None;
                        continue;
                    }
                    Some(w) => order_set(w, i),
                    None => BTreeSet::new(),
                };
                st.reads.insert(e.tid, i);
                m
            }
            _ => {
                if st.wr.is_some_and(|w| !hb(w, i)) || st.reads.values().any(|&r| !hb(r, i)) {
                    st.ks = None;
                    continue;
                }
                let others: Vec<usize> = st
                    .reads
                    .iter()
                    .filter(|(t, _)| **t != e.tid)
                    .map(|(_, r)| *r)
                    .collect();
                let m = if !others.is_empty() {
                    others.iter().flat_map(|&r| order_set(r, i)).collect()
                } else if let Some(w) = st.wr {
                    order_set(w, i)
                } else {
                    BTreeSet::new()
                };
                st.wr = Some(i);
                st.reads.clear();
                m
            }
        };
        // Rules 4.1/4.2.
        if let Some(p) = ks.last_mut()
            && p.tid == e.tid
            && (m.is_empty() || m == p.m)
        {
            if p.op != op {
                p.op = Op::Acc;
            }
            continue;
        }
        ks.push(K {
            m,
            op,
            tid: e.tid,
            held: if first {
                held.get(&e.tid).cloned().unwrap_or_default()
            } else {
                BTreeSet::new()
            },
        });
    }
    locs.into_iter().map(|(l, s)| (l, s.ks)).collect()
}

/// Whether `ks` is a word of (a prefix of) the pattern language of `alt`.
fn matches(alt: &Compound, ks: &[K], name: &dyn Fn(Dev) -> String) -> bool {
    let locks = |k: &K, first: bool| -> Vec<String> {
        let mut v: Vec<String> =
            k.m.iter()
                .filter(|d| matches!(d, Dev::Lock(_)))
                .map(|d| name(*d))
                .collect();
        if first {
            v.extend(k.held.iter().map(|o| name(Dev::Lock(*o))));
        }
        v
    };
    let vols = |k: &K| -> Vec<String> {
        k.m.iter()
            .filter(|d| matches!(d, Dev::Vol(_)))
            .map(|d| name(*d))
            .collect()
    };
    let hits = |params: &[String], found: Vec<String>| found.iter().any(|f| params.contains(f));
    // Can segment `seg` hold ks[i..j] (non-empty)? `prev`: thread before ks[i].
    let fits = |seg: usize, i: usize, j: usize| -> bool {
        let d = &alt[seg];
        let first_of_all = i == 0;
        (i..j).all(|x| {
            let k = &ks[x];
            let entering = x == i;
            match d.kind {
                Kind::ThreadLocal => {
                    k.tid == ks[i].tid
                        && (!entering
                            || first_of_all
                            || ks[i - 1].tid == k.tid
                            || (!k.m.iter().any(|d| matches!(d, Dev::Lock(_) | Dev::Vol(_)))))
                }
                Kind::Fork => {
                    j == i + 1 && (first_of_all || k.m.iter().any(|d| matches!(d, Dev::Forker(_))))
                }
                Kind::Join => {
                    j == i + 1 && (first_of_all || k.m.iter().any(|d| matches!(d, Dev::Joined(_))))
                }
                Kind::GuardedBy => hits(&d.params, locks(k, x == 0)),
                Kind::Vol => (first_of_all && entering) || hits(&d.params, vols(k)),
                Kind::ReadShared => k.op == Op::Rd,
            }
        })
    };
    // seg s starts at i; try every end.
    fn go(
        s: usize,
        i: usize,
        n: usize,
        alt_len: usize,
        fits: &dyn Fn(usize, usize, usize) -> bool,
    ) -> bool {
        if i == n {
            return true;
        }
        if s >= alt_len {
            return false;
        }
        (i + 1..=n).any(|j| fits(s, i, j) && go(s + 1, j, n, alt_len, fits))
    }
    if ks.is_empty() {
        return true;
    }
    // The first access may start after leading thread-local and fork segments.
    (0..alt.len())
        .take_while(|&s| s == 0 || matches!(alt[s - 1].kind, Kind::ThreadLocal | Kind::Fork))
        .any(|s| go(s, 0, ks.len(), alt.len(), &fits))
}

/// The locations (names) the oracle says leave `spec` in `trace`.
fn oracle_deviations(trace: &Trace, spec: &GritsSpec) -> BTreeSet<String> {
    let env = &trace.env;
    let name = |d: Dev| match d {
        Dev::Lock(o) => env.lock_name(o, Default::default()),
        Dev::Vol(l) => env.loc_name(l).name,
        Dev::Forker(t) | Dev::Joined(t) => env.thread_name(t),
    };
    let mut out = BTreeSet::new();
    for (loc, ks) in ordered_accesses(&trace.events) {
        let n = env.loc_name(loc).name;
        let Some(Entry::Alts(alts)) = spec.locations.get(&n) else {
            continue;
        };
        let ok = match &ks {
            None => false,
            Some(ks) => alts.iter().any(|a| matches(a, ks, &name)),
        };
        if !ok {
            out.insert(n);
        }
    }
    out
}

/// The locations `grits --spec` reports on `trace`.
fn grits_deviations(trace: &Trace, spec: &Arc<GritsSpec>) -> Result<BTreeSet<String>, String> {
    let options = ChainOptions {
        grits_spec: Some(spec.clone()),
        ..ChainOptions::default()
    };
    let chain = analyze(trace, "grits", options).map_err(|e| e.0)?;
    Ok(chain
        .warnings()
        .iter()
        .filter(|r| r.warning.kind == WarningKind::Discipline)
        .filter_map(|r| r.warning.loc.map(|l| trace.env.loc_name(l).name))
        .collect())
}

/// The spec `grits` infers from `trace`, as text.
pub fn infer_spec(trace: &Trace) -> Result<String, String> {
    let chain = analyze(trace, "grits", ChainOptions::default()).map_err(|e| e.0)?;
    let stats = chain.stats_json();
    Ok(spec::render_rows(&spec::rows_of_stats(
        &stats["passes"][0]["details"]["disciplines"],
    )))
}

/// `grits --spec` and the oracle agree on `trace` checked against `spec_text`.
pub fn check_agrees(trace: &Trace, spec_text: &str) -> Result<BTreeSet<String>, String> {
    let spec = Arc::new(spec::parse(spec_text).map_err(|e| format!("{e} in\n{spec_text}"))?);
    let got = grits_deviations(trace, &spec)?;
    let want = oracle_deviations(trace, &spec);
    if got != want {
        return Err(format!(
            "grits reports {got:?}, the oracle {want:?}\nspec:\n{spec_text}"
        ));
    }
    Ok(got)
}

/// Property 8 on one trace: the inferred spec holds (for grits and the oracle),
/// and after `mutation` (a byte choosing how to break it: drop one critical section
/// of the trace, or change one discipline of the spec) both agree on which
/// locations leave it.
pub fn grits_property(trace: &Trace, mutation: &[u8]) -> Result<(), String> {
    let text = infer_spec(trace)?;
    let dev = check_agrees(trace, &text)?;
    if !dev.is_empty() {
        return Err(format!("the trace leaves its own spec at {dev:?}\n{text}"));
    }
    let pick = |i: usize, n: usize| mutation.get(i).map_or(0, |b| *b as usize) % n.max(1);
    // Drop one critical section (its acquire and release), if there is one.
    let sections: Vec<(usize, usize)> = trace
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e.kind {
            OwnedKind::Acquire { lock } => trace.events[i + 1..]
                .iter()
                .position(|f| {
                    f.tid == e.tid && matches!(f.kind, OwnedKind::Release { lock: l } if l == lock)
                })
                .map(|p| (i, i + 1 + p)),
            _ => None,
        })
        .collect();
    if !sections.is_empty() {
        let (a, r) = sections[pick(0, sections.len())];
        let events: Vec<OwnedEvent> = trace
            .events
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != a && *i != r)
            .map(|(_, e)| e.clone())
            .collect();
        let cut = Trace::from_events(events).map_err(|e| format!("cut trace: {e}"))?;
        check_agrees(&cut, &text)?;
    }
    // Change one discipline of one line.
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    if !lines.is_empty() {
        let li = pick(1, lines.len());
        let (loc, body) = lines[li].split_once(": ").unwrap_or((lines[li], "race"));
        let mut parts: Vec<String> = body.split("; ").map(str::to_string).collect();
        let pi = pick(2, parts.len());
        let replacement = match pick(3, 4) {
            0 => "read-shared".to_string(),
            1 => "thread-local T0".to_string(),
            2 => "guarded-by {L0}".to_string(),
            _ => "vol {V9}".to_string(),
        };
        parts[pi] = replacement;
        // (Lines of a spec `infer-disciplines` printed are distinct.)
        let changed: String = text
            .lines()
            .map(|l| {
                if l == lines[li] {
                    format!("{loc}: {}\n", parts.join("; "))
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        check_agrees(trace, &changed)?;
    }
    Ok(())
}
