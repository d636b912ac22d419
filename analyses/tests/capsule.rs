//! The `capsule` filter and capsule detection (Rhodes ch. 5) on hand-written event
//! sequences over an in-memory heap: Figures 5.1–5.3, the two kinds of violation,
//! location categories, and chaining with `escape` in both orders.

mod escape_harness;

use std::sync::Arc;

use analyses::env::HeapView;
use analyses::event::{MethodId, ObjId};
use analyses::filterstats::{FilterStats, LocKind};
use analyses::passes::escape::mem::MemEnv;
use analyses::report::WarningKind;
use escape_harness::{Sim, loc};

/// Run `body` on fresh heaps under each chain and return the sims.
fn each<F: Fn(&mut Sim)>(capsule_bit: bool, chains: &[&[&str]], setup: F) -> Vec<Sim> {
    chains
        .iter()
        .map(|filters| {
            let env = Arc::new(MemEnv::new(capsule_bit));
            let mut s = Sim::new(env, filters);
            setup(&mut s);
            s
        })
        .collect()
}

fn violations(s: &Sim) -> Vec<(String, String)> {
    s.warnings_of(WarningKind::CapsuleViolation)
        .iter()
        .map(|w| {
            (
                w.warning.extra["class"].as_str().unwrap_or("").to_string(),
                w.warning.extra["property"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

/// A call `recv.m(args)` that runs `body` and returns `ret`.
fn call(
    s: &mut Sim,
    tid: u32,
    m: MethodId,
    recv: ObjId,
    args: &[ObjId],
    body: impl FnOnce(&mut Sim) -> Option<ObjId>,
) -> Option<ObjId> {
    s.enter(tid, m, Some(recv), args);
    let r = body(s);
    s.exit(tid, m, r);
    r
}

/// Figure 5.1: `c.o` is reachable by the parent thread but not accessible.
fn figure_5_1(s: &mut Sim) {
    let env = s.env.clone();
    let parent = env.class("Parent", true, &["p"]);
    let child = env.class("Child", true, &["o"]);
    let obj = env.class("Obj", false, &["x"]);
    let p_init = env.method(parent, "<init>");
    let p_run = env.method(parent, "run");
    let c_init = env.method(child, "<init>");
    let c_run = env.method(child, "run");
    let par = s.alloc(0, parent);
    call(s, 0, p_init, par, &[], |s| {
        let o = s.alloc(0, obj);
        s.write(0, loc(par, 0), Some(o), 1);
        None
    });
    s.fork(0, 1, &[par]);
    call(s, 1, p_run, par, &[], |s| {
        let c = s.alloc(1, child);
        call(s, 1, c_init, c, &[], |s| {
            let o = s.alloc(1, obj);
            s.write(1, loc(c, 0), Some(o), 2);
            None
        });
        s.fork(1, 2, &[c]);
        let x = s.read(1, loc(par, 0), 3).expect("p");
        s.write(1, loc(x, 0), None, 4);
        call(s, 2, c_run, c, &[], |s| {
            let m = s.alloc(2, obj);
            s.write(2, loc(m, 0), None, 5);
            let o = s.read(2, loc(c, 0), 6).expect("o");
            s.write(2, loc(o, 0), None, 7);
            None
        });
        None
    });
    s.end(2);
    s.end(1);
    s.end(0);
}

#[test]
fn figure_5_1_filters_everything() {
    let sims = each(true, &[&[], &["escape"], &["capsule"]], figure_5_1);
    let [full, esc, cap] = &sims[..] else {
        unreachable!()
    };
    assert!(full.races().is_empty());
    // par and c are handed to new threads: their fields are reachable by two threads.
    assert_eq!(esc.seen_sites(), [3, 4, 6, 7].into());
    assert!(
        cap.seen().is_empty(),
        "but accessible only by the Child capsule"
    );
    assert!(cap.warnings().is_empty());
    let d = &cap.stats()["passes"][0]["details"]["location_category"];
    assert_eq!(d["Parent.p"]["category"], "Capsule");
    assert_eq!(d["Child.o"]["category"], "Capsule");
    assert_eq!(d["Obj.x"]["category"], "Capsule-Protected");
}

/// Figure 5.2: `getO` returns and `leak` passes a capsule's private object.
fn figure_5_2(s: &mut Sim) -> (ObjId, ObjId, ObjId, ObjId) {
    let env = s.env.clone();
    let th1 = env.class("Thread1", true, &[]);
    let th2 = env.class("Thread2", true, &["o", "t1"]);
    let obj = env.class("Obj", false, &["x"]);
    let run1 = env.method(th1, "run");
    let use1 = env.method(th1, "use");
    let init2 = env.method(th2, "<init>");
    let get_o = env.method(th2, "getO");
    let leak = env.method(th2, "leak");
    let t1 = s.alloc(0, th1);
    s.fork(0, 1, &[t1]);
    let mut out = (t1, t1, t1, t1);
    s.enter(1, run1, Some(t1), &[]);
    let new_t2 = |s: &mut Sim| {
        let t2 = s.alloc(1, th2);
        call(s, 1, init2, t2, &[t1], |s| {
            let o = s.alloc(1, obj);
            s.write(1, loc(t2, 0), Some(o), 1);
            s.write(1, loc(t2, 1), Some(t1), 2);
            s.write(1, loc(o, 0), None, 3);
            None
        });
        t2
    };
    let t2 = new_t2(s);
    let o = call(s, 1, get_o, t2, &[], |s| s.read(1, loc(t2, 0), 4)).expect("o");
    s.write(1, loc(o, 0), None, 5);
    let t2b = new_t2(s);
    let o2 = s.env.heap.load(loc(t2b, 0)).expect("o2");
    call(s, 1, leak, t2b, &[], |s| {
        let o = s.read(1, loc(t2b, 0), 6).expect("o");
        let t = s.read(1, loc(t2b, 1), 7).expect("t1");
        call(s, 1, use1, t, &[o], |s| {
            s.write(1, loc(o, 0), None, 8);
            None
        });
        None
    });
    s.exit(1, run1, None);
    s.end(1);
    out.0 = t2;
    out.1 = o;
    out.2 = t2b;
    out.3 = o2;
    out
}

#[test]
fn figure_5_2_return_values_and_arguments_leak() {
    let env = Arc::new(MemEnv::new(true));
    let mut s = Sim::new(env.clone(), &["capsule"]);
    let (t2, o, t2b, o2) = figure_5_2(&mut s);
    assert!(s.warnings().is_empty());
    let h = &env.heap;
    assert!(h.is_capsule_shared(o), "getO's return value leaks");
    assert!(h.is_capsule_shared(o2), "leak's argument to t1.use leaks");
    assert!(
        !h.is_capsule_shared(t2) && !h.is_capsule_shared(t2b),
        "capsules never"
    );
    // Only the accesses to the leaked objects after they leaked are checked.
    assert_eq!(s.seen_sites(), [5, 8].into());
}

/// Figure 5.3: a `Counter` capsule used by two threads, synchronized by the class
/// (`set`) and by the caller (`unsynchSet` under `synchronized (c)`); `set0` touches
/// no state and is not synchronized. `concurrent_helper`: both threads are inside
/// `set0` at once.
fn figure_5_3(s: &mut Sim, concurrent_helper: bool) {
    let env = s.env.clone();
    let counter = env.class("Counter", true, &["a"]);
    let th1 = env.class("Thread1", true, &[]);
    let th2 = env.class("Thread2", true, &["c"]);
    let c_init = env.method(counter, "<init>");
    let set = env.method(counter, "set");
    let unsynch = env.method(counter, "unsynchSet");
    let set0 = env.method(counter, "set0");
    let run1 = env.method(th1, "run");
    let init2 = env.method(th2, "<init>");
    let run2 = env.method(th2, "run");
    let t1 = s.alloc(0, th1);
    s.fork(0, 1, &[t1]);
    s.enter(1, run1, Some(t1), &[]);
    let c = s.alloc(1, counter);
    call(s, 1, c_init, c, &[], |s| {
        let a = s.alloc_array(1, 10);
        s.write(1, loc(c, 0), Some(a), 1);
        None
    });
    let t2 = s.alloc(1, th2);
    call(s, 1, init2, t2, &[c], |s| {
        s.write(1, loc(t2, 0), Some(c), 2);
        None
    });
    s.fork(1, 2, &[t2]);
    // synchronized set(i, v) { a[i] = v; }
    let sync_set = |s: &mut Sim, tid: u32, i: u32| {
        s.acquire(tid, c);
        call(s, tid, set, c, &[], |s| {
            let a = s.read(tid, loc(c, 0), 3).expect("a");
            s.write(tid, loc(a, i), None, 4);
            None
        });
        s.release(tid, c);
    };
    sync_set(s, 1, 1);
    s.enter(2, run2, Some(t2), &[]);
    let c2 = s.read(2, loc(t2, 0), 5).expect("c");
    if concurrent_helper {
        s.enter(1, set0, Some(c), &[]);
        s.enter(2, set0, Some(c2), &[]);
        sync_set(s, 1, 0);
        sync_set(s, 2, 0);
        s.exit(2, set0, None);
        s.exit(1, set0, None);
    } else {
        // synchronized (c) { c.unsynchSet(2, 3); }
        s.acquire(2, c2);
        call(s, 2, unsynch, c2, &[], |s| {
            let a = s.read(2, loc(c2, 0), 6).expect("a");
            s.write(2, loc(a, 2), None, 7);
            None
        });
        s.release(2, c2);
        s.enter(1, set0, Some(c), &[]);
        sync_set(s, 1, 0);
        s.exit(1, set0, None);
    }
    s.exit(2, run2, None);
    s.exit(1, run1, None);
    s.end(2);
    s.end(1);
}

#[test]
fn figure_5_3_counter_is_a_capsule() {
    for helper in [false, true] {
        let sims = each(
            true,
            &[
                &[],
                &["capsule"],
                &["escape", "capsule"],
                &["capsule", "escape"],
            ],
            |s| figure_5_3(s, helper),
        );
        assert!(sims[0].races().is_empty());
        assert!(!sims[0].seen().is_empty());
        for s in &sims[1..] {
            assert!(s.warnings().is_empty(), "{:?}", violations(s));
            assert!(s.seen().is_empty(), "all capsule and capsule-protected");
        }
        for s in &sims {
            let ft = s.fasttrack_races();
            assert!(ft.is_empty());
        }
    }
}

#[test]
fn without_a_capsule_bit_only_capsule_accesses_are_filtered() {
    let env = Arc::new(MemEnv::new(false));
    let mut s = Sim::new(env, &["capsule"]);
    figure_5_3(&mut s, false);
    assert!(s.warnings().is_empty());
    // Field accesses of the capsules are filtered; the array is checked.
    assert_eq!(s.seen_sites(), [4, 7].into());
    assert!(s.races().is_empty());
}

#[test]
fn outside_field_access_is_an_encapsulation_violation() {
    let env = Arc::new(MemEnv::new(true));
    let counter = env.class("Counter", true, &["a"]);
    let main_c = env.class("Main", false, &[]);
    let c_init = env.method(counter, "<init>");
    let main_m = env.method(main_c, "main");
    let mut s = Sim::new(env.clone(), &["capsule"]);
    s.enter(0, main_m, None, &[]);
    let c = s.alloc(0, counter);
    let mut arr = c;
    call(&mut s, 0, c_init, c, &[], |s| {
        arr = s.alloc_array(0, 4);
        s.write(0, loc(c, 0), Some(arr), 1);
        None
    });
    let a = s.read(0, loc(c, 0), 2).expect("a"); // Main reads c.a: violation
    s.write(0, loc(a, 0), None, 3);
    s.read(0, loc(c, 0), 4); // the class is demoted: checked, no second report
    s.exit(0, main_m, None);
    s.end(0);
    assert_eq!(
        violations(&s),
        vec![("Counter".to_string(), "encapsulation".to_string())]
    );
    let w = &s.warnings_of(WarningKind::CapsuleViolation)[0].warning;
    assert!(w.message.starts_with("encapsulation:"), "{}", w.message);
    assert!(w.message.contains("Main.main"), "{}", w.message);
    // Both sites: where the capsule was last inside (its constructor), and the access.
    let sites: Vec<u32> = w.accesses.iter().map(|a| a.site.0).collect();
    assert_eq!(sites, vec![1, 2]);
    // The violating access and everything after it on the demoted object is checked.
    assert_eq!(s.seen_sites(), [2, 3, 4].into());
    assert!(env.heap.is_capsule_shared(c) && env.heap.is_capsule_shared(arr));
    let st = s.stats();
    assert_eq!(
        st["passes"][0]["details"]["violations"][0]["class"],
        "Counter"
    );
}

/// A capsule that never leaves its thread, read from outside its class (the corpus's
/// `capsule_outside_access`): `escape` drops every access (the object is thread-local)
/// but still hands the accesses to the capsule's fields to `capsule`, so the default
/// order finds the violation; the detectors after the filters see none of them.
#[test]
fn thread_local_capsule_is_checked_behind_escape() {
    let chains: &[&[&str]] = &[&["capsule"], &["escape", "capsule"], &["escape"]];
    let sims = each(true, chains, |s| {
        let env = s.env.clone();
        let account = env.class("Account", true, &["balance"]);
        let auditor = env.class("Auditor", false, &[]);
        let deposit = env.method(account, "deposit");
        let check = env.method(auditor, "check");
        let a = s.alloc(0, account);
        let au = s.alloc(0, auditor);
        call(s, 0, deposit, a, &[], |s| {
            s.read(0, loc(a, 0), 1);
            s.write(0, loc(a, 0), None, 2);
            None
        });
        call(s, 0, check, au, &[a], |s| {
            s.read(0, loc(a, 0), 3); // acct.balance from Auditor: violation
            None
        });
        s.end(0);
    });
    let want = vec![("Account".to_string(), "encapsulation".to_string())];
    assert_eq!(violations(&sims[0]), want, "capsule alone");
    assert_eq!(violations(&sims[1]), want, "escape:capsule");
    assert!(
        violations(&sims[2]).is_empty(),
        "escape alone checks nothing"
    );
    // capsule alone forwards the violating access; behind escape nothing gets through.
    assert_eq!(sims[0].seen_sites(), [3].into());
    assert!(sims[1].seen_sites().is_empty());
    assert!(sims[2].seen_sites().is_empty());
    // escape's statistics are the same with or without capsule behind it (all three
    // accesses dropped), capsule's filtered stream is empty, and it says how many
    // thread-local accesses it checked.
    let (st, alone) = (sims[1].stats(), sims[2].stats());
    for key in ["accesses_in", "dropped"] {
        assert_eq!(st["passes"][0][key], 3, "{key}: {st}");
        assert_eq!(alone["passes"][0][key], st["passes"][0][key], "{key}");
        assert_eq!(st["passes"][1][key], 0, "{key}: {st}");
    }
    assert_eq!(st["passes"][0]["details"], alone["passes"][0]["details"]);
    assert_eq!(st["passes"][1]["details"]["local_checked"], 3, "{st}");
}

#[test]
fn another_capsules_field_is_an_encapsulation_violation() {
    let env = Arc::new(MemEnv::new(true));
    let counter = env.class("Counter", true, &["a"]);
    let peek = env.method(counter, "peek");
    let mut s = Sim::new(env, &["capsule"]);
    let c1 = s.alloc(0, counter);
    let c2 = s.alloc(0, counter);
    call(&mut s, 0, peek, c1, &[c2], |s| {
        s.read(0, loc(c1, 0), 1); // this.a: fine
        s.read(0, loc(c2, 0), 2); // other.a with other != this: violation
        None
    });
    assert_eq!(
        violations(&s),
        vec![("Counter".to_string(), "encapsulation".to_string())]
    );
    assert_eq!(s.seen_sites(), [2].into());
}

/// Two threads call `unsynchSet` with no synchronization; `overlap`: both inside at
/// once, else one after the other but unordered by happens-before.
fn unsynchronized(s: &mut Sim, overlap: bool) {
    let env = s.env.clone();
    let counter = env.class("Counter", true, &["a"]);
    let c_init = env.method(counter, "<init>");
    let unsynch = env.method(counter, "unsynchSet");
    let c = s.alloc(0, counter);
    call(s, 0, c_init, c, &[], |s| {
        let a = s.alloc_array(0, 4);
        s.write(0, loc(c, 0), Some(a), 1);
        None
    });
    s.fork(0, 1, &[c]);
    s.fork(0, 2, &[c]);
    let body = |s: &mut Sim, tid: u32, site: u32| {
        let a = s.read(tid, loc(c, 0), site).expect("a");
        s.write(tid, loc(a, 0), None, site + 1);
    };
    s.enter(1, unsynch, Some(c), &[]);
    body(s, 1, 10);
    if overlap {
        s.enter(2, unsynch, Some(c), &[]);
        body(s, 2, 20);
        s.exit(2, unsynch, None);
        s.exit(1, unsynch, None);
    } else {
        s.exit(1, unsynch, None);
        s.enter(2, unsynch, Some(c), &[]);
        body(s, 2, 20);
        s.exit(2, unsynch, None);
    }
    s.end(1);
    s.end(2);
}

#[test]
fn unsynchronized_calls_are_a_synchronization_violation() {
    for overlap in [true, false] {
        let sims = each(true, &[&[], &["capsule"], &["escape", "capsule"]], |s| {
            unsynchronized(s, overlap)
        });
        assert_eq!(sims[0].races().len(), 1, "a[0] races");
        for s in &sims[1..] {
            assert_eq!(
                violations(s),
                vec![("Counter".to_string(), "synchronization".to_string())]
            );
            let w = &s.warnings_of(WarningKind::CapsuleViolation)[0].warning;
            let want = if overlap { "inside" } else { "exit" };
            assert_eq!(w.accesses.len(), 2);
            assert_eq!(w.accesses[0].op, want);
            assert_eq!(w.accesses[0].tid, 1);
            assert_eq!(w.accesses[1].tid, 2);
            assert_eq!(w.accesses[1].site.0, 20);
            // The violating access goes on unfiltered.
            assert!(s.seen_sites().contains(&20));
        }
    }
}

#[test]
fn a_helper_touching_no_state_needs_no_synchronization() {
    let env = Arc::new(MemEnv::new(true));
    let mut s = Sim::new(env, &["capsule"]);
    figure_5_3(&mut s, true);
    assert!(s.warnings().is_empty());
}

/// Chaining: a reference written into a capsule-shared but thread-local object must
/// reach `capsule` even though `escape` would drop it (`escape:capsule`).
fn capsule_shared_thread_local(s: &mut Sim) {
    let env = s.env.clone();
    let k = env.class("K", true, &["keep"]);
    let obj = env.class("Obj", false, &["f", "g"]);
    let put = env.method(k, "put");
    let kobj = s.alloc(0, k);
    let o = s.alloc(0, obj);
    call(s, 0, put, kobj, &[o], |_| None); // o is capsule-shared, thread-local
    let v = s.alloc(0, obj);
    s.write(0, loc(o, 1), Some(v), 1); // o.g = v
    let shared = s.alloc(0, obj);
    let m = s.alloc(0, obj);
    s.fork(0, 1, &[shared, m]);
    s.acquire(0, m);
    s.write(0, loc(shared, 0), Some(o), 2);
    s.release(0, m);
    s.acquire(1, m);
    let o1 = s.read(1, loc(shared, 0), 3).expect("o");
    let v1 = s.read(1, loc(o1, 1), 4).expect("v");
    s.release(1, m);
    s.write(1, loc(v1, 0), None, 5);
    s.write(0, loc(v, 0), None, 6); // races with site 5
    s.end(1);
}

/// Chaining: a reference written into an escaped capsule by the capsule itself must
/// reach `escape` even though `capsule` would drop it (`capsule:escape`).
fn escaped_capsule_field(s: &mut Sim) {
    let env = s.env.clone();
    let k = env.class("K", true, &["f"]);
    let obj = env.class("Obj", false, &["x"]);
    let set = env.method(k, "set");
    let get = env.method(k, "get");
    let kobj = s.alloc(0, k);
    s.fork(0, 1, &[kobj]);
    let v = s.alloc(0, obj);
    s.acquire(0, kobj);
    call(s, 0, set, kobj, &[v], |s| {
        s.write(0, loc(kobj, 0), Some(v), 1);
        None
    });
    s.release(0, kobj);
    s.acquire(1, kobj);
    let got = call(s, 1, get, kobj, &[], |s| s.read(1, loc(kobj, 0), 2)).expect("v");
    s.release(1, kobj);
    s.write(1, loc(got, 0), None, 3);
    s.write(0, loc(v, 0), None, 4); // races with site 3
    s.end(1);
}

#[test]
fn filters_compose_in_either_order() {
    let chains: &[&[&str]] = &[
        &[],
        &["escape"],
        &["capsule"],
        &["escape", "capsule"],
        &["capsule", "escape"],
    ];
    for scenario in [capsule_shared_thread_local, escaped_capsule_field] {
        let sims = each(true, chains, scenario);
        let want = sims[0].races();
        assert_eq!(want.len(), 1);
        for (s, c) in sims.iter().zip(chains) {
            assert!(s.warnings_of(WarningKind::CapsuleViolation).is_empty());
            assert_eq!(s.races(), want, "chain {c:?}");
            let ft = s.fasttrack_races();
            assert_eq!(ft, want, "fasttrack behind {c:?}");
        }
    }
}

#[test]
fn figure_4_2_through_both_filters() {
    let sims = each(true, &[&[], &["escape", "capsule"]], |s| {
        let env = s.env.clone();
        let holder = env.class("Holder", false, &["o"]);
        let refc = env.class("Ref", false, &["f"]);
        let p = s.alloc(0, holder);
        s.fork(0, 1, &[p]);
        s.fork(0, 2, &[p]);
        let r1 = s.alloc(1, refc);
        s.write(1, loc(r1, 0), None, 10);
        s.write(1, loc(p, 0), Some(r1), 11);
        let r = s.read(2, loc(p, 0), 20).expect("r1");
        s.write(2, loc(r, 0), None, 21);
    });
    assert_eq!(sims[0].races().len(), 2);
    assert_eq!(sims[1].races().len(), 1);
    assert!(sims[1].races().is_subset(&sims[0].races()));
}

#[test]
fn location_categories_on_a_small_scenario() {
    let env = Arc::new(MemEnv::new(true));
    let counter = env.class("Counter", true, &["a"]);
    let single = env.class("S", false, &["x"]);
    let read_shared = env.class("R", false, &["x"]);
    let other = env.class("O", false, &["x"]);
    let mixed = env.class("M", false, &["x"]);
    let c_init = env.method(counter, "<init>");
    let mut s = Sim::new(env.clone(), &["capsule"]);
    let st = env.heap.statics();
    let c = s.alloc(0, counter);
    call(&mut s, 0, c_init, c, &[], |s| {
        let a = s.alloc_array(0, 4);
        s.write(0, loc(c, 0), Some(a), 1); // Capsule
        s.write(0, loc(a, 0), None, 2); // Capsule-Protected
        None
    });
    let so = s.alloc(0, single);
    let ro = s.alloc(0, read_shared);
    let oo = s.alloc(0, other);
    let mo = s.alloc(0, mixed);
    let mix = |s: &mut Sim| s.write(0, loc(mo, 0), None, 7);
    mix(&mut s); // local
    for (i, o) in [so, ro, oo, mo].into_iter().enumerate() {
        s.write(0, loc(st, i as u32), Some(o), 9);
    }
    mix(&mut s); // now shared: Mixed
    s.fork(0, 1, &[]);
    s.write(0, loc(so, 0), None, 3); // Single-Capsule-Access (only T0)
    s.write(0, loc(so, 0), None, 3);
    s.write(0, loc(ro, 0), None, 4); // written once…
    let r = s.read(1, loc(st, 1), 10).expect("ro");
    s.read(1, loc(r, 0), 4); // …read by T1 at the same site: Read-Shared
    let o = s.read(1, loc(st, 2), 10).expect("oo");
    s.write(0, loc(oo, 0), None, 5);
    s.write(1, loc(o, 0), None, 5); // Other
    s.end(1);
    s.end(0);
    let d = &s.stats()["passes"][0]["details"];
    let cat = |l: &str| d["location_category"][l]["category"].clone();
    assert_eq!(cat("Counter.a"), "Capsule");
    assert_eq!(cat("Object[]"), "Capsule-Protected");
    assert_eq!(cat("S.x"), "Single-Capsule-Access");
    assert_eq!(cat("R.x"), "Read-Shared");
    assert_eq!(cat("O.x"), "Other");
    assert_eq!(cat("M.x"), "Mixed");
    // Table 5.2: 1 of 5 object sites and the 1 array site are filtered.
    assert_eq!(d["sites"]["object"]["total"], 5);
    assert_eq!(d["sites"]["object"]["filtered"], 0.2);
    assert_eq!(d["sites"]["array"]["filtered"], 1.0);
    assert_eq!(d["classes"]["category"]["Counter"], "Capsule");
    assert_eq!(d["classes"]["total"], 5);
    // The same details read back as the typed record `capvm bench` uses.
    let typed: FilterStats = serde_json::from_value(d.clone()).expect("typed details");
    assert_eq!(typed.sites[&LocKind::Field].total, 5);
    assert_eq!(typed.sites[&LocKind::Field].filtered, 0.2);
    assert_eq!(typed.sites[&LocKind::Array].filtered, 1.0);
    assert_eq!(typed.location_category["R.x"].category, "Read-Shared");
    assert_eq!(typed.location_category["R.x"].kind, LocKind::Field);
    assert_eq!(typed.classes.category["Counter"], "Capsule");
    let mut back = serde_json::to_value(&typed).expect("serialize");
    back["violations"] = d["violations"].clone();
    back["mode"] = d["mode"].clone();
    back["local_checked"] = d["local_checked"].clone();
    assert_eq!(&back, d);
}

/// A synchronized capsule method that waits (a one-slot buffer): the consumer is
/// inside `get` while the producer runs `put`, ordered through the monitor.
fn waiting_buffer(s: &mut Sim, producer_locks: bool) {
    let env = s.env.clone();
    let buf = env.class("Buffer", true, &["item"]);
    let obj = env.class("Obj", false, &["x"]);
    let get = env.method(buf, "get");
    let put = env.method(buf, "put");
    let b = s.alloc(0, buf);
    s.fork(0, 1, &[b]);
    s.fork(0, 2, &[b]);
    // T1: synchronized get() { while (item == null) wait(); … }
    s.acquire(1, b);
    s.enter(1, get, Some(b), &[]);
    assert!(s.read(1, loc(b, 0), 1).is_none());
    s.release(1, b); // wait()
    // T2: synchronized put(o) { item = o; notify(); }
    let o = s.alloc(2, obj);
    s.write(2, loc(o, 0), None, 2);
    if producer_locks {
        s.acquire(2, b);
    }
    s.enter(2, put, Some(b), &[o]);
    s.write(2, loc(b, 0), Some(o), 3);
    s.exit(2, put, None);
    if producer_locks {
        s.release(2, b);
    }
    // T1 wakes up.
    s.acquire(1, b);
    let got = s.read(1, loc(b, 0), 4);
    s.write(1, loc(b, 0), None, 5);
    s.exit(1, get, got);
    s.release(1, b);
    s.end(1);
    s.end(2);
}

#[test]
fn waiting_inside_a_synchronized_capsule_method_is_fine() {
    let sims = each(true, &[&[], &["capsule"], &["escape", "capsule"]], |s| {
        waiting_buffer(s, true)
    });
    assert!(sims[0].races().is_empty());
    for s in &sims[1..] {
        assert!(s.warnings().is_empty(), "{:?}", violations(s));
        assert!(s.seen().is_empty(), "{:?}", s.seen_sites());
    }
    // A producer that does not take the monitor is still caught.
    let sims = each(true, &[&[], &["capsule"]], |s| waiting_buffer(s, false));
    assert!(!sims[0].races().is_empty());
    assert_eq!(
        violations(&sims[1]),
        vec![("Buffer".to_string(), "synchronization".to_string())]
    );
}
