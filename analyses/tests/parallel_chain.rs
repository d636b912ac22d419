//! The detectors called by real OS threads in parallel (as under `--sched os`): the
//! producer keeps the chain's guarantees with a real mutex (acquire delivered after
//! obtaining it, release before giving it up), fork before the child runs, join
//! after the child's end. No lost events, no false or missed races.

use std::sync::Arc;

use analyses::env::NullEnv;
use analyses::event::{Event, EventKind, Loc, ObjId, SiteId, Tid};
use analyses::thread::ThreadCx;
use analyses::{Chain, ChainOptions};

const CHILDREN: Tid = 4;
const ROUNDS: u32 = 1000;

fn ev(tid: Tid, site: u32, kind: EventKind<'_>) -> Event<'_> {
    Event {
        tid,
        site: SiteId(site),
        index: 0,
        kind,
    }
}

fn loc(obj: u64, slot: u32) -> Loc {
    Loc {
        obj: ObjId(obj),
        slot,
    }
}

/// Runs the workload; `racy` adds one unprotected write per round to a shared field.
fn run(racy: bool) -> Chain {
    let chain = Arc::new(
        analyses::passes::chain(
            "fasttrack:djit:goldilocks:eraser:hb",
            Arc::new(NullEnv),
            ChainOptions::default(),
        )
        .unwrap(),
    );
    let lock = ObjId(0x1000);
    let shared = loc(0x2000, 0);
    let unprotected = loc(0x2000, 1);
    let monitor = Arc::new(parking_lot::Mutex::new(()));
    let mut main = chain.main_thread();
    chain.deliver(&mut main, &ev(0, 1, EventKind::ThreadStart));
    chain.deliver(
        &mut main,
        &ev(
            0,
            2,
            EventKind::Write {
                loc: shared,
                value: None,
            },
        ),
    );
    let mut handles = Vec::new();
    for child in 1..=CHILDREN {
        let mut cx: ThreadCx = chain.fork(&mut main, child, SiteId(3), 0, &[]);
        let chain = chain.clone();
        let monitor = monitor.clone();
        handles.push((
            child,
            std::thread::spawn(move || {
                let t = child;
                chain.deliver(&mut cx, &ev(t, 10, EventKind::ThreadStart));
                let own = loc(0x3000 + 0x100 * t as u64, 0);
                for _ in 0..ROUNDS {
                    {
                        let _g = monitor.lock();
                        chain.deliver(&mut cx, &ev(t, 11, EventKind::Acquire { lock }));
                        chain.deliver(&mut cx, &ev(t, 12, EventKind::Read { loc: shared }));
                        let w = EventKind::Write {
                            loc: shared,
                            value: None,
                        };
                        chain.deliver(&mut cx, &ev(t, 13, w));
                        chain.deliver(&mut cx, &ev(t, 14, EventKind::Release { lock }));
                    }
                    let w = EventKind::Write {
                        loc: own,
                        value: None,
                    };
                    chain.deliver(&mut cx, &ev(t, 15, w));
                    chain.deliver(&mut cx, &ev(t, 16, EventKind::Read { loc: own }));
                    if racy {
                        let w = EventKind::Write {
                            loc: unprotected,
                            value: None,
                        };
                        chain.deliver(&mut cx, &ev(t, 17, w));
                    }
                }
                chain.deliver(&mut cx, &ev(t, 18, EventKind::ThreadEnd));
            }),
        ));
    }
    for (child, h) in handles {
        h.join().unwrap();
        chain.deliver(&mut main, &ev(0, 4, EventKind::Join { child }));
    }
    // Ordered by the joins: no race, but Eraser's fork/join false alarm.
    chain.deliver(&mut main, &ev(0, 5, EventKind::Read { loc: shared }));
    chain.deliver(&mut main, &ev(0, 6, EventKind::ThreadEnd));
    chain.finish();
    Arc::try_unwrap(chain).ok().expect("threads are done")
}

fn racy_locations(chain: &Chain, analysis: &str) -> Vec<Loc> {
    let mut v: Vec<Loc> = chain
        .warnings()
        .iter()
        .filter(|r| r.warning.analysis == analysis)
        .filter_map(|r| r.warning.loc)
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn parallel_threads_race_free() {
    let chain = run(false);
    for tool in ["fasttrack", "djit", "goldilocks", "hb"] {
        assert!(racy_locations(&chain, tool).is_empty(), "{tool}");
    }
    assert_eq!(racy_locations(&chain, "eraser"), vec![loc(0x2000, 0)]);
    let stats = chain.stats_json();
    // Goldilocks' update list was collected while the threads ran.
    let gl = stats["passes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "goldilocks")
        .unwrap();
    assert!(
        gl["details"]["cells_collected"].as_u64().unwrap() > 0,
        "{gl}"
    );
    let events = CHILDREN as u64 * (ROUNDS as u64 * 6 + 2) + CHILDREN as u64 * 2 + 4;
    for p in stats["passes"].as_array().unwrap() {
        assert_eq!(p["events_in"].as_u64().unwrap(), events, "{}", p["name"]);
    }
}

#[test]
fn parallel_threads_racy() {
    let chain = run(true);
    for tool in ["fasttrack", "djit", "goldilocks", "hb"] {
        assert_eq!(racy_locations(&chain, tool), vec![loc(0x2000, 1)], "{tool}");
    }
}
