//! Garbage collection of the transactional happens-before graph: on long runs the number
//! of live nodes (and of shadow entries) stays bounded by what can still lie on a cycle,
//! for `atomicity` (Velodrome transactions) and `singletrack` (transactions with forked
//! threads).

use analyses::ctx::CtxId;
use analyses::event::{Loc, ObjId, OwnedEvent, OwnedKind, SiteId, Spec, Tid};
use analyses::offline::analyze;
use analyses::trace::{Trace, VARS};
use analyses::txgraph::{TxHb, TxMode};

struct Builder(Vec<OwnedEvent>);

impl Builder {
    fn push(&mut self, tid: Tid, kind: OwnedKind) {
        let n = self.0.len() as u64 + 1;
        self.0.push(OwnedEvent {
            tid,
            site: SiteId(n as u32),
            index: n,
            kind,
        });
    }
    fn rd(&mut self, t: Tid, v: u32) {
        self.push(t, OwnedKind::Read { loc: var(v) });
    }
    fn wr(&mut self, t: Tid, v: u32) {
        self.push(
            t,
            OwnedKind::Write {
                loc: var(v),
                value: None,
            },
        );
    }
    fn acq(&mut self, t: Tid, m: u64) {
        self.push(t, OwnedKind::Acquire { lock: ObjId(m) });
    }
    fn rel(&mut self, t: Tid, m: u64) {
        self.push(t, OwnedKind::Release { lock: ObjId(m) });
    }
    fn begin(&mut self, t: Tid, spec: Spec) {
        self.push(t, OwnedKind::Begin { spec });
    }
    fn end(&mut self, t: Tid, spec: Spec) {
        self.push(t, OwnedKind::End { spec });
    }
    fn fork(&mut self, t: Tid, u: Tid) {
        self.push(
            t,
            OwnedKind::Fork {
                child: u,
                handed: Vec::new(),
            },
        );
    }
}

fn var(v: u32) -> Loc {
    Loc { obj: VARS, slot: v }
}

const WORKERS: Tid = 4;

/// Four workers whose atomic blocks overlap in every round: all begin, read their own
/// data, update a lock-protected counter one after the other, read a shared flag, and
/// end; then unary operations on their own data and the flag, which worker 1 writes
/// outside any block.
fn velodrome_workload(rounds: usize) -> Vec<OwnedEvent> {
    let mut b = Builder(Vec::new());
    b.push(0, OwnedKind::ThreadStart);
    for w in 1..=WORKERS {
        b.fork(0, w);
        b.push(w, OwnedKind::ThreadStart);
    }
    for _ in 0..rounds {
        for w in 1..=WORKERS {
            b.begin(w, Spec::Atomic);
            b.rd(w, 100 + w);
        }
        for w in 1..=WORKERS {
            b.acq(w, 1);
            b.rd(w, 0);
            b.wr(w, 0);
            b.rel(w, 1);
        }
        for w in 1..=WORKERS {
            b.rd(w, 1);
            b.end(w, Spec::Atomic);
        }
        for w in 1..=WORKERS {
            b.wr(w, 100 + w);
            b.rd(w, 1);
            if w == 1 {
                b.wr(w, 1);
            }
        }
    }
    b.0
}

/// A deterministic fork/join computation per round (two children writing disjoint
/// cells, joined, then a combining read), with an outside thread reading the result
/// between rounds.
fn singletrack_workload(rounds: usize) -> Vec<OwnedEvent> {
    let mut b = Builder(Vec::new());
    b.push(0, OwnedKind::ThreadStart);
    b.fork(0, 1);
    b.push(1, OwnedKind::ThreadStart);
    let mut next: Tid = 2;
    for _ in 0..rounds {
        let (c1, c2) = (next, next + 1);
        next += 2;
        b.begin(0, Spec::Deterministic);
        b.fork(0, c1);
        b.fork(0, c2);
        b.push(c1, OwnedKind::ThreadStart);
        b.push(c2, OwnedKind::ThreadStart);
        b.wr(c1, 10);
        b.wr(c2, 11);
        b.acq(c1, 5);
        b.rel(c1, 5);
        b.push(c1, OwnedKind::ThreadEnd);
        b.push(c2, OwnedKind::ThreadEnd);
        b.push(0, OwnedKind::Join { child: c1 });
        b.push(0, OwnedKind::Join { child: c2 });
        b.rd(0, 10);
        b.rd(0, 11);
        b.wr(0, 12);
        b.end(0, Spec::Deterministic);
        b.rd(1, 12);
        b.acq(1, 5);
        b.wr(1, 13);
        b.rel(1, 5);
    }
    b.0
}

/// Feed `events` to the graph directly; returns (max live nodes, max shadow entries).
fn peak(events: &[OwnedEvent], mode: TxMode) -> (usize, usize, u64) {
    let mut g = TxHb::new(mode);
    let (mut nodes, mut shadow) = (0, 0);
    for ev in events {
        assert!(g.event(&ev.as_event(), CtxId::ROOT).is_empty());
        nodes = nodes.max(g.live_nodes());
        shadow = shadow.max(g.shadow_entries());
    }
    (nodes, shadow, g.stats().nodes_created)
}

#[test]
fn velodrome_graph_stays_small() {
    let events = velodrome_workload(20_000);
    assert!(events.len() > 200_000);
    let (nodes, shadow, created) = peak(&events, TxMode::VELODROME);
    eprintln!(
        "{} events: {created} nodes created, at most {nodes} live, {shadow} shadow entries",
        events.len()
    );
    assert!(created >= 80_000, "nodes created: {created}");
    assert!(
        nodes <= 2 * WORKERS as usize + 2,
        "live nodes peaked at {nodes}"
    );
    assert!(shadow <= 32, "shadow entries peaked at {shadow}");
}

#[test]
fn singletrack_graph_stays_small() {
    let events = singletrack_workload(15_000);
    assert!(events.len() > 200_000);
    let (nodes, shadow, created) = peak(&events, TxMode::SINGLETRACK);
    eprintln!(
        "{} events: {created} nodes created, at most {nodes} live, {shadow} shadow entries",
        events.len()
    );
    assert!(created >= 15_000, "nodes created: {created}");
    assert!(nodes <= 8, "live nodes peaked at {nodes}");
    assert!(shadow <= 32, "shadow entries peaked at {shadow}");
}

/// The same through the passes in a chain, read back from their statistics.
#[test]
fn passes_report_bounded_graphs() {
    for (events, tools) in [
        (velodrome_workload(2_000), "atomicity"),
        (singletrack_workload(2_000), "singletrack"),
    ] {
        let trace = Trace::from_events(events).expect("well-formed");
        let chain = analyze(&trace, tools, Default::default()).expect("chain");
        assert!(
            chain.warnings().is_empty(),
            "{tools}: {:#?}",
            chain.warnings()
        );
        let stats = chain.stats_json();
        let d = &stats["passes"][0]["details"];
        let max = d
            .get("max_live_nodes")
            .or_else(|| d.get("xs_max_live_nodes"))
            .and_then(|v| v.as_u64())
            .expect("graph statistics");
        assert!(max <= 16, "{tools}: {d}");
    }
}

/// Long random traces (threads fork, join and end; atomic and deterministic blocks nest;
/// cycles occur): the graph keeps only a small fraction of the nodes ever created.
#[test]
fn generated_long_trace() {
    use analyses::testing::{GenConfig, gen_trace};
    let cfg = GenConfig {
        threads: 6,
        steps: 200_000,
        deterministic: true,
        ..GenConfig::default()
    };
    for seed in 1..4 {
        let events = gen_trace(seed, &cfg);
        for mode in [TxMode::VELODROME, TxMode::SINGLETRACK] {
            let mut g = TxHb::new(mode);
            let mut nodes = 0;
            for ev in &events {
                g.event(&ev.as_event(), CtxId::ROOT);
                nodes = nodes.max(g.live_nodes());
            }
            eprintln!(
                "{} events: {} nodes created, at most {nodes} live, {} cycles",
                events.len(),
                g.stats().nodes_created,
                g.stats().cycles
            );
            let created = g.stats().nodes_created as usize;
            assert!(
                created >= 1000 && nodes * 10 < created,
                "{nodes} live of {created}"
            );
        }
    }
}
