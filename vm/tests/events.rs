//! The event stream the VM delivers to the analysis chain (`docs/architecture.md` "Events").

mod common;

use std::sync::Arc;

use analyses::env::Env;
use analyses::pass::{Local as PassLocal, Pass};
use analyses::thread::ThreadState;
use analyses::{Event, EventKind, Flow};
use common::*;
use parking_lot::Mutex;
use vm::{ExitKind, RunConfig, SchedKind, Tier};

fn events(src: &str, sched: SchedKind) -> std::sync::Arc<EventLog> {
    let (cfg, log) = logging(sched);
    let out = run_src(src, &cfg);
    assert_eq!(out.exit, ExitKind::Ok, "{:?}", out.error_text);
    log
}

#[test]
fn sequential_operations_map_to_events() {
    let src = r#"
class C {
    int x; volatile int v; C next;
    synchronized deterministic void inc() { x = x + 1; }
    static synchronized void s() { }
    C self() { return this; }
}
class Main {
    static int g;
    static void main() {
        C c = new C();
        c.inc();
        C.s();
        c.v = 3;
        int y = c.v;
        c.next = c;
        C d = c.self();
        synchronized (c) { synchronized (d) { g = y; } }
        int[][] grid = new int[2][3];
        int n = grid[1].length;
        Barrier b = new Barrier(1);
        b.await();
        atomic { c.x = n; }
    }
}"#;
    let log = events(src, SchedKind::Os);
    let want = [
        "start",
        "enter Main.main",
        "alloc o1",
        "enter C.inc o1",
        "acq o1",
        "begin Deterministic",
        "r o1.0",
        "w o1.0",
        "end Deterministic",
        "rel o1",
        "exit C.inc",
        "enter C.s",
        "acq C.class",
        "rel C.class",
        "exit C.s",
        "vw o1.1",
        "vr o1.1",
        "w o1.2 o1",
        "enter C.self o1",
        "exit C.self o1",
        "acq o1",
        "w statics.0",
        "rel o1",
        "alloc o2",
        "alloc o3",
        "alloc o4",
        "r o2.1",
        "alloc o5",
        "bar_enter o5 0 1",
        "bar_exit o5 0 1",
        "begin Atomic",
        "w o1.0",
        "end Atomic",
        "exit Main.main",
        "end",
    ];
    assert_eq!(log.of(0), want);
}

#[test]
fn fork_join_wait_and_barrier_events() {
    let src = r#"
class M {
    boolean go;
    synchronized void release() { go = true; notifyAll(); }
}
class W {
    M m; Barrier b;
    W(M m, Barrier b) { this.m = m; this.b = b; }
    void run() { b.await(); m.release(); }
}
class Main {
    static void main() {
        M m = new M();
        Barrier b = new Barrier(2);
        W w = new W(m, b);
        Thread t = fork w.run();
        b.await();
        synchronized (m) { while (!m.go) { m.wait(); } }
        t.join();
    }
}"#;
    for sched in [SchedKind::Os, SchedKind::Seeded(1), SchedKind::Seeded(2)] {
        let log = events(src, sched);
        let main = log.of(0);
        let child = log.of(1);
        assert_eq!(&child[..2], ["start", "enter W.run o3"], "{child:?}");
        assert_eq!(child.last().map(String::as_str), Some("end"));
        assert!(main.contains(&"fork T1 o3".to_string()), "{main:?}");
        assert!(main.contains(&"bar_enter o2 0 2".to_string()), "{main:?}");
        assert!(child.contains(&"bar_exit o2 0 2".to_string()), "{child:?}");
        let all = log.events.lock().clone();
        // Every arrival of the episode precedes every departure.
        let last_enter = all.iter().rposition(|e| e.contains("bar_enter")).unwrap();
        let first_exit = all.iter().position(|e| e.contains("bar_exit")).unwrap();
        assert!(last_enter < first_exit, "{all:?}");
        // Fork precedes the child's start; the child's end precedes the join.
        let fork = all.iter().position(|e| e == "T0 fork T1 o3").unwrap();
        let start = all.iter().position(|e| e == "T1 start").unwrap();
        let end = all.iter().position(|e| e == "T1 end").unwrap();
        let join = all.iter().position(|e| e == "T0 join T1").unwrap();
        assert!(fork < start && end < join, "{all:?}");
        // Acquires and releases of each thread are balanced; wait shows as rel + acq.
        for t in [&main, &child] {
            let acq = t.iter().filter(|e| e.starts_with("acq")).count();
            let rel = t.iter().filter(|e| e.starts_with("rel")).count();
            assert_eq!(acq, rel, "{t:?}");
        }
        // The monitor is held by one thread at a time in the delivered order.
        let mut holder: Option<&str> = None;
        for e in &all {
            let (tid, what) = e.split_once(' ').unwrap();
            if what == "acq o1" {
                assert_eq!(holder, None, "{all:?}");
                holder = Some(tid);
            } else if what == "rel o1" {
                assert_eq!(holder, Some(tid), "{all:?}");
                holder = None;
            }
        }
    }
}

#[test]
fn no_chain_means_no_events_and_tools_none_runs_bare() {
    let cfg = vm::RunConfig {
        tools: Some("none".into()),
        ..captured(SchedKind::Os)
    };
    let out = run_src("class Main { static void main() { print(1); } }", &cfg);
    assert_eq!(out.exit, ExitKind::Ok);
    assert!(out.passes.is_empty());
    assert_eq!(out.report["warnings"], serde_json::json!([]));
}

#[test]
fn locations_and_sites_are_named_like_the_source() {
    let src = r#"
class Node { int v; Node next; }
class Main {
    static int count;
    static void main() {
        Node n = new Node();
        n.next = n;
        count = 1;
        double[][] g = new double[2][2];
        g[1][0] = 1.5;
        Node[] ns = new Node[3];
        ns[2] = n;
    }
}"#;
    let log = events(src, SchedKind::Os);
    let locs = log.locs.lock().clone();
    let s = |n: &str, i: Option<u64>, o: Option<&str>| (n.to_string(), i, o.map(str::to_string));
    assert_eq!(
        locs,
        [
            s("Node.next", None, Some("o1")),
            s("Main.count", None, None),
            s("double[][]", Some(1), Some("o2")),
            s("double[]", Some(0), Some("o4")),
            s("Node[]", Some(2), Some("o5")),
        ]
    );
}

/// A pass that asks the heap, at every `Write` of a reference, whether the reference
/// is already in one of the target's fields or elements (stored before the event).
struct StoreOrder {
    env: Arc<dyn Env>,
    /// (already in place?, the written reference's label) per reference write.
    seen: Arc<Mutex<Vec<(bool, String)>>>,
}

impl Pass for StoreOrder {
    fn name(&self) -> &'static str {
        "store-order"
    }
    fn access(&self, _t: &ThreadState, _l: &mut PassLocal, ev: &Event<'_>) -> Flow {
        if let EventKind::Write {
            loc,
            value: Some(v),
        } = ev.kind
        {
            let heap = self.env.heap().expect("a live heap");
            let mut there = false;
            heap.for_each_ref(loc.obj, &mut |r| there |= r == v);
            self.seen.lock().push((there, self.env.obj_label(v)));
        }
        Flow::Forward
    }
}

/// The producer delivers a plain `Write` before it performs the store (the `escape`
/// and `capsule` filters mark what a written reference makes reachable before another
/// thread can read it there), on both tiers, for fields, array elements and statics.
#[test]
fn a_reference_write_is_delivered_before_its_store() {
    let src = r#"
class N { N next; }
class Main {
    static N s;
    static void main() {
        N x = new N();
        N y = new N();
        N z = new N();
        x.next = y;
        x.next = z;
        N[] a = new N[2];
        a[0] = y;
        a[1] = z;
        s = y;
    }
}"#;
    for tier in [Tier::Interp, Tier::Jit] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let cfg = RunConfig {
            tier,
            ..one_pass(move |env| {
                Box::new(StoreOrder {
                    env,
                    seen: s2.clone(),
                })
            })
        };
        let out = run_src(src, &cfg);
        assert_eq!(out.exit, ExitKind::Ok, "{:?}", out.error_text);
        let seen = seen.lock().clone();
        assert_eq!(seen.len(), 5, "{tier:?}: {seen:?}");
        assert!(
            seen.iter().all(|(there, _)| !there),
            "{tier:?}: a written reference was in place at its Write: {seen:?}"
        );
    }
}
