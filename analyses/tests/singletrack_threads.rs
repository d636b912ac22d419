//! `singletrack` and `atomicity` with events delivered by real parallel threads (as under
//! `--sched os`), following the producer's guarantees of `analyses::chain`: verdicts
//! that do not depend on the schedule must come out the same on every run.

use std::sync::{Arc, Mutex};

use analyses::env::NullEnv;
use analyses::event::{Event, EventKind, Loc, ObjId, SiteId, Spec, Tid};
use analyses::report::WarningKind;
use analyses::thread::ThreadCx;
use analyses::{Chain, ChainOptions};

const WORKERS: Tid = 4;
const CELLS: ObjId = ObjId(1 << 20);
const LOCK: ObjId = ObjId(8);

fn chain(tools: &str) -> Arc<Chain> {
    Arc::new(
        analyses::passes::chain(tools, Arc::new(NullEnv), ChainOptions::default()).expect("chain"),
    )
}

/// Deliver one event of `cx`'s thread.
fn send(chain: &Chain, cx: &mut ThreadCx, site: u32, kind: EventKind<'static>) {
    let ev = Event {
        tid: cx.tid(),
        site: SiteId(site),
        index: 0,
        kind,
    };
    chain.deliver(cx, &ev);
}

fn cell(i: u32) -> Loc {
    Loc {
        obj: CELLS,
        slot: i,
    }
}

/// Main (optionally inside a deterministic block) forks the workers, each running
/// `work`, then joins them. `lock` is the real mutex behind lock `LOCK`.
fn run(
    tools: &str,
    main_block: Option<Spec>,
    work: fn(&Chain, &mut ThreadCx, &Mutex<()>),
) -> Arc<Chain> {
    let chain = chain(tools);
    let lock = Arc::new(Mutex::new(()));
    let mut main = chain.main_thread();
    send(&chain, &mut main, 1, EventKind::ThreadStart);
    if let Some(spec) = main_block {
        send(&chain, &mut main, 2, EventKind::Begin { spec });
    }
    let mut handles = Vec::new();
    for w in 1..=WORKERS {
        let mut cx = chain.fork(&mut main, w, SiteId(3), 0, &[]);
        let (chain, lock) = (chain.clone(), lock.clone());
        handles.push((
            w,
            std::thread::spawn(move || {
                send(&chain, &mut cx, 10, EventKind::ThreadStart);
                work(&chain, &mut cx, &lock);
                send(&chain, &mut cx, 11, EventKind::ThreadEnd);
            }),
        ));
    }
    for (w, h) in handles {
        h.join().expect("worker");
        send(&chain, &mut main, 4, EventKind::Join { child: w });
    }
    for i in 1..=WORKERS {
        send(&chain, &mut main, 5, EventKind::Read { loc: cell(i) });
    }
    if let Some(spec) = main_block {
        send(&chain, &mut main, 6, EventKind::End { spec });
    }
    send(&chain, &mut main, 7, EventKind::ThreadEnd);
    chain.finish();
    chain
}

/// Each worker writes and reads its own cell.
fn own_cell(chain: &Chain, cx: &mut ThreadCx, _lock: &Mutex<()>) {
    let loc = cell(cx.tid());
    for _ in 0..2000 {
        send(chain, cx, 20, EventKind::Write { loc, value: None });
        send(chain, cx, 21, EventKind::Read { loc });
    }
}

/// Each worker increments a shared counter under the lock; with `atomic` blocks
/// around each critical section.
fn locked_counter(chain: &Chain, cx: &mut ThreadCx, lock: &Mutex<()>) {
    let loc = cell(0);
    for _ in 0..500 {
        send(chain, cx, 30, EventKind::Begin { spec: Spec::Atomic });
        let guard = lock.lock().expect("lock");
        send(chain, cx, 31, EventKind::Acquire { lock: LOCK });
        send(chain, cx, 32, EventKind::Read { loc });
        send(chain, cx, 33, EventKind::Write { loc, value: None });
        send(chain, cx, 34, EventKind::Release { lock: LOCK });
        drop(guard);
        send(chain, cx, 35, EventKind::End { spec: Spec::Atomic });
    }
}

#[test]
fn fork_join_computation_is_deterministic_under_any_schedule() {
    for _ in 0..5 {
        let c = run("singletrack:atomicity", Some(Spec::Deterministic), own_cell);
        assert!(c.warnings().is_empty(), "{:#?}", c.warnings());
    }
}

#[test]
fn lock_protected_updates_in_one_computation_are_a_conflict() {
    for _ in 0..5 {
        let c = run(
            "singletrack:atomicity",
            Some(Spec::Deterministic),
            locked_counter,
        );
        let ws = c.warnings();
        assert!(
            ws.iter().any(|r| r.warning.kind == WarningKind::Conflict),
            "{ws:#?}"
        );
        assert!(
            ws.iter().all(|r| r.warning.kind == WarningKind::Conflict),
            "only conflicts: {ws:#?}"
        );
    }
}

#[test]
fn atomic_critical_sections_are_serializable_under_any_schedule() {
    for _ in 0..5 {
        let c = run("singletrack:atomicity", None, locked_counter);
        assert!(c.warnings().is_empty(), "{:#?}", c.warnings());
    }
}
