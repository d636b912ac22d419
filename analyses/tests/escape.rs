//! The `escape` filter (Rhodes Fig. 4.4) on hand-written event sequences over an
//! in-memory heap, checked against a brute-force race oracle (and `fasttrack` when
//! this build has it).

mod escape_harness;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use analyses::env::HeapView;
use analyses::passes::escape::mem::MemEnv;
use escape_harness::{Sim, loc};

/// Thesis Fig. 4.2: `T1: r1 = new Ref(); r1.f = 11; p.o = r1;  T2: r1 = p.o; r1.f = 12;`
/// with `p` shared. Two races (`Holder.o`, `Ref.f`); `escape` keeps only the first.
fn figure_4_2(filters: &[&str]) -> Sim {
    let env = Arc::new(MemEnv::new(true));
    let holder = env.class("Holder", false, &["o"]);
    let refc = env.class("Ref", false, &["f"]);
    let mut s = Sim::new(env, filters);
    let p = s.alloc(0, holder);
    s.fork(0, 1, &[p]);
    s.fork(0, 2, &[p]);
    let r1 = s.alloc(1, refc);
    s.write(1, loc(r1, 0), None, 10); // r1.f = 11
    s.write(1, loc(p, 0), Some(r1), 11); // p.o = r1
    let r = s.read(2, loc(p, 0), 20).expect("T2 reads the Ref"); // r1 = p.o
    s.write(2, loc(r, 0), None, 21); // r1.f = 12
    s.end(1);
    s.end(2);
    s
}

#[test]
fn figure_4_2_loses_address_precision_only() {
    let full = figure_4_2(&[]);
    let filt = figure_4_2(&["escape"]);
    let names = |s: &Sim| -> Vec<String> {
        let mut v: Vec<String> = s
            .races()
            .iter()
            .map(|l| analyses::env::Env::loc_name(s.env.as_ref(), *l).name)
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&full), vec!["Holder.o", "Ref.f"]);
    assert_eq!(names(&filt), vec!["Holder.o"]);
    // r1.f = 11 happened before r1 escaped: filtered.
    assert!(!filt.seen_sites().contains(&10));
    assert!(filt.seen_sites().contains(&21));
    for s in [&full, &filt] {
        let ft = s.fasttrack_races();
        assert_eq!(ft, s.races(), "fasttrack agrees with the oracle");
    }
    let st = filt.stats();
    let esc = &st["passes"][0];
    assert_eq!(esc["name"], "escape");
    assert_eq!(esc["dropped"], 1);
}

#[test]
fn marking_is_linear_in_the_heap() {
    let env = Arc::new(MemEnv::new(true));
    let node = env.class("Node", false, &["next"]);
    let holder = env.class("Holder", false, &["head", "other"]);
    let mut s = Sim::new(env.clone(), &["escape"]);
    let h = s.alloc(0, holder);
    s.fork(0, 1, &[h]);
    const N: usize = 50_000;
    let first = s.alloc(0, node);
    let mut cur = first;
    for _ in 1..N {
        let n = s.alloc(0, node);
        s.write(0, loc(cur, 0), Some(n), 1);
        cur = n;
    }
    // A cycle back to the head must not loop.
    s.write(0, loc(cur, 0), Some(first), 1);
    assert!(s.seen().is_empty(), "building a local list is all filtered");
    env.heap.reset_counters();
    s.write(0, loc(h, 0), Some(first), 2);
    assert_eq!(env.heap.mark_calls.load(Ordering::Relaxed), N as u64);
    assert_eq!(env.heap.scans.load(Ordering::Relaxed), N as u64);
    assert!(env.heap.is_shared(cur));
    // Publishing it again costs nothing: the walk stops at the marked head.
    env.heap.reset_counters();
    s.write(0, loc(h, 1), Some(first), 3);
    assert_eq!(env.heap.mark_calls.load(Ordering::Relaxed), 0);
    assert_eq!(env.heap.scans.load(Ordering::Relaxed), 0);
}

#[test]
fn fork_leaks_the_handed_objects_and_what_they_reach() {
    let env = Arc::new(MemEnv::new(true));
    let boxc = env.class("Box", false, &["x", "next"]);
    let mut s = Sim::new(env.clone(), &["escape"]);
    let a = s.alloc(0, boxc);
    let b = s.alloc(0, boxc);
    let c = s.alloc(0, boxc);
    s.write(0, loc(a, 1), Some(b), 1);
    s.write(0, loc(c, 0), None, 2);
    assert!(!env.heap.is_shared(a));
    s.fork(0, 1, &[a]);
    assert!(env.heap.is_shared(a) && env.heap.is_shared(b));
    assert!(!env.heap.is_shared(c));
    s.write(1, loc(b, 0), None, 3);
    s.write(0, loc(b, 0), None, 4);
    s.write(0, loc(c, 0), None, 5);
    assert_eq!(s.seen_sites(), [3, 4].into());
    assert_eq!(s.races(), [loc(b, 0)].into());
}

#[test]
fn statics_are_always_checked_and_leak_their_values() {
    let env = Arc::new(MemEnv::new(true));
    let boxc = env.class("Box", false, &["x"]);
    let mut s = Sim::new(env.clone(), &["escape"]);
    let st = env.heap.statics();
    let o = s.alloc(0, boxc);
    s.write(0, loc(o, 0), None, 1); // local: filtered
    s.read(0, loc(st, 3), 2);
    s.write(0, loc(st, 3), Some(o), 3); // leaks o
    assert!(env.heap.is_shared(o));
    s.write(0, loc(o, 0), None, 4);
    s.fork(0, 1, &[]);
    let got = s.read(1, loc(st, 3), 5).expect("T1 reads the static");
    s.write(1, loc(got, 0), None, 6);
    assert_eq!(s.seen_sites(), [2, 3, 4, 5, 6].into());
    // The static itself is never marked: it is shared by definition.
    assert!(!env.heap.is_shared(st));
}

/// Volatile publication (the store is the synchronization): the reader's accesses
/// must be checked, so a race with the writer's later access is found.
fn volatile_publication(filters: &[&str]) -> Sim {
    let env = Arc::new(MemEnv::new(true));
    let holder = env.class("Holder", false, &["v"]);
    let data = env.class("Data", false, &["f"]);
    let mut s = Sim::new(env, filters);
    let h = s.alloc(0, holder);
    s.fork(0, 1, &[h]);
    let o = s.alloc(0, data);
    s.write(0, loc(o, 0), None, 1);
    s.vwrite(0, loc(h, 0), Some(o), 2);
    let got = s.vread(1, loc(h, 0), 3).expect("published");
    s.write(1, loc(got, 0), None, 4); // ordered after site 1
    s.write(0, loc(o, 0), None, 5); // races with site 4
    s
}

#[test]
fn volatile_writes_into_shared_objects_leak() {
    let full = volatile_publication(&[]);
    let filt = volatile_publication(&["escape"]);
    assert_eq!(full.races(), filt.races());
    assert_eq!(filt.races().len(), 1);
    assert!(!filt.seen_sites().contains(&1));
    assert!(filt.seen_sites().is_superset(&[4, 5].into()));
    let ft = filt.fasttrack_races();
    assert_eq!(ft, filt.races());
}

#[test]
fn volatile_write_into_a_local_object_does_not_leak() {
    let env = Arc::new(MemEnv::new(true));
    let holder = env.class("Holder", false, &["v"]);
    let mut s = Sim::new(env.clone(), &["escape"]);
    let h = s.alloc(0, holder);
    let o = s.alloc(0, holder);
    s.vwrite(0, loc(h, 0), Some(o), 1);
    assert!(!env.heap.is_shared(o));
}

/// Lock-protected publication: race free, with and without the filter; the lock
/// events on a not yet escaped lock are never dropped (the chain cannot drop them),
/// so happens-before is intact.
fn locked_publication(filters: &[&str]) -> Sim {
    let env = Arc::new(MemEnv::new(true));
    let holder = env.class("Holder", false, &["o"]);
    let refc = env.class("Ref", false, &["f"]);
    let mut s = Sim::new(env, filters);
    let p = s.alloc(0, holder);
    let m = s.alloc(0, holder);
    s.fork(0, 1, &[p, m]);
    s.fork(0, 2, &[p, m]);
    s.acquire(1, m);
    let r = s.alloc(1, refc);
    s.write(1, loc(r, 0), None, 1);
    s.write(1, loc(p, 0), Some(r), 2);
    s.release(1, m);
    s.acquire(2, m);
    let got = s.read(2, loc(p, 0), 3).expect("published");
    s.write(2, loc(got, 0), None, 4);
    s.release(2, m);
    s
}

#[test]
fn lock_protected_publication_is_race_free() {
    let full = locked_publication(&[]);
    let filt = locked_publication(&["escape"]);
    assert!(full.races().is_empty());
    assert!(filt.races().is_empty());
    assert_eq!(filt.seen_sites(), [2, 3, 4].into());
    for s in [&full, &filt] {
        let ft = s.fasttrack_races();
        assert!(ft.is_empty());
    }
}

#[test]
fn without_a_heap_everything_is_forwarded() {
    use analyses::ChainOptions;
    use analyses::env::NullEnv;
    use analyses::event::{Event, EventKind, Loc, ObjId, SiteId};
    let chain =
        analyses::passes::chain("escape:capsule", Arc::new(NullEnv), ChainOptions::default())
            .expect("chain");
    let mut cx = chain.main_thread();
    let ev = Event {
        tid: 0,
        site: SiteId(1),
        index: 0,
        kind: EventKind::Write {
            loc: Loc {
                obj: ObjId(8),
                slot: 0,
            },
            value: None,
        },
    };
    chain.deliver(&mut cx, &ev);
    // Counters are per thread until the thread ends.
    let end = Event {
        kind: EventKind::ThreadEnd,
        ..ev
    };
    chain.deliver(&mut cx, &end);
    let st = chain.stats_json();
    assert_eq!(st["passes"][0]["dropped"], 0);
    assert_eq!(st["passes"][1]["dropped"], 0);
    assert_eq!(st["passes"][1]["accesses_in"], 1);
}
