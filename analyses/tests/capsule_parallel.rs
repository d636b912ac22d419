//! `escape:capsule` with guest threads running in parallel on OS threads (as under
//! `--sched os`): monitors are real mutexes, each event is delivered while it takes
//! effect (acquire after locking, release before unlocking, a write before its
//! store), and the shared state of both passes (header bits, capsule epochs, class
//! table, statistics) is exercised concurrently.

use std::sync::Arc;

use analyses::env::{Env, HeapView};
use analyses::event::{Event, EventKind, Loc, MethodId, ObjId, SiteId, Tid};
use analyses::passes::escape::mem::MemEnv;
use analyses::report::WarningKind;
use analyses::thread::ThreadCx;
use analyses::{Chain, ChainOptions};
use parking_lot::Mutex;

const THREADS: u32 = 4;
const ROUNDS: u32 = 300;

struct Guest<'a> {
    chain: &'a Chain,
    env: &'a MemEnv,
    cx: ThreadCx,
}

impl Guest<'_> {
    fn ev(&mut self, site: u32, kind: EventKind<'_>) {
        let ev = Event {
            tid: self.cx.tid(),
            site: SiteId(site),
            index: 0,
            kind,
        };
        self.chain.deliver(&mut self.cx, &ev);
    }
    fn write(&mut self, loc: Loc, value: Option<ObjId>, site: u32) {
        self.ev(site, EventKind::Write { loc, value });
        self.env.heap.store(loc, value);
    }
    fn read(&mut self, loc: Loc, site: u32) -> Option<ObjId> {
        self.ev(site, EventKind::Read { loc });
        self.env.heap.load(loc)
    }
    fn alloc(&mut self, class: u32) -> ObjId {
        let o = self.env.new_object(class);
        self.ev(0, EventKind::Alloc { obj: o });
        o
    }
    /// `synchronized (lock) { body }` with a real mutex as the monitor.
    fn locked(&mut self, lock: ObjId, monitor: &Mutex<()>, body: impl FnOnce(&mut Self)) {
        let g = monitor.lock();
        self.ev(0, EventKind::Acquire { lock });
        body(self);
        self.ev(0, EventKind::Release { lock });
        drop(g);
    }
    fn call(&mut self, m: MethodId, recv: ObjId, body: impl FnOnce(&mut Self)) {
        self.ev(
            0,
            EventKind::Enter {
                method: m,
                receiver: Some(recv),
                args: &[],
            },
        );
        body(self);
        self.ev(
            0,
            EventKind::Exit {
                method: m,
                ret: None,
            },
        );
    }
}

#[test]
fn parallel_threads_publish_and_share_a_synchronized_capsule() {
    let env = Arc::new(MemEnv::new(true));
    let node = env.class("Node", false, &["next", "val"]);
    let board = env.class("Board", false, &["slot0", "slot1", "slot2", "slot3"]);
    let counter = env.class("Counter", true, &["a", "n"]);
    let c_init = env.method(counter, "<init>");
    let inc = env.method(counter, "inc");
    let chain = analyses::passes::chain(
        "escape:capsule",
        env.clone() as Arc<dyn Env>,
        ChainOptions::default(),
    )
    .expect("chain");
    let monitors: Vec<Mutex<()>> = (0..2).map(|_| Mutex::new(())).collect();

    let mut main = Guest {
        chain: &chain,
        env: &env,
        cx: chain.main_thread(),
    };
    main.ev(0, EventKind::ThreadStart);
    let b = main.alloc(board);
    let c = main.alloc(counter);
    main.call(c_init, c, |g| {
        let arr = g.env.heap.alloc(None, 8);
        g.ev(0, EventKind::Alloc { obj: arr });
        g.write(Loc { obj: c, slot: 0 }, Some(arr), 1);
    });
    let mut children = Vec::new();
    for t in 1..=THREADS {
        let cx = chain.fork(&mut main.cx, t as Tid, SiteId(0), 0, &[b, c]);
        children.push(cx);
    }
    std::thread::scope(|scope| {
        for cx in children {
            let (chain, env, monitors) = (&chain, &*env, &monitors);
            scope.spawn(move || {
                let mut g = Guest { chain, env, cx };
                let tid = g.cx.tid();
                g.ev(0, EventKind::ThreadStart);
                for _ in 0..ROUNDS {
                    // A thread-local list, then published on the board under a lock.
                    let head = g.alloc(node);
                    let tail = g.alloc(node);
                    g.write(Loc { obj: head, slot: 0 }, Some(tail), 2);
                    g.write(Loc { obj: tail, slot: 1 }, None, 3);
                    let slot = Loc {
                        obj: b,
                        slot: tid - 1,
                    };
                    g.locked(b, &monitors[0], |g| g.write(slot, Some(head), 40 + tid));
                    assert!(g.env.heap.is_shared(tail), "published lists escape");
                    // c.inc(), synchronized by the class.
                    g.locked(c, &monitors[1], |g| {
                        g.call(inc, c, |g| {
                            let a = g.read(Loc { obj: c, slot: 0 }, 5).expect("a");
                            g.write(Loc { obj: a, slot: tid }, None, 6);
                            g.write(Loc { obj: c, slot: 1 }, None, 7);
                        });
                    });
                }
                g.ev(0, EventKind::ThreadEnd);
            });
        }
    });
    main.ev(0, EventKind::ThreadEnd);

    assert!(
        chain.warnings().is_empty(),
        "{:?}",
        chain
            .warnings()
            .iter()
            .filter(|w| w.warning.kind == WarningKind::CapsuleViolation)
            .map(|w| w.warning.message.clone())
            .collect::<Vec<_>>()
    );
    let st = chain.stats_json();
    let per_thread = u64::from(ROUNDS) * u64::from(THREADS);
    // escape drops the two local writes per round (and the constructor's write while
    // the counter was main's alone); capsule drops the three accesses of the capsule
    // and its array; only the board writes reach the end.
    assert_eq!(st["passes"][0]["dropped"], 2 * per_thread + 1);
    assert_eq!(st["passes"][1]["dropped"], 3 * per_thread);
    assert_eq!(st["passes"][1]["accesses_in"], 4 * per_thread);
    let cat = &st["passes"][1]["details"]["location_category"];
    assert_eq!(cat["Counter.n"]["category"], "Capsule");
    assert_eq!(cat["Object[]"]["category"], "Capsule-Protected");
    assert_eq!(cat["Board.slot0"]["category"], "Single-Capsule-Access");
}

#[test]
fn parallel_unsynchronized_calls_are_a_violation() {
    let env = Arc::new(MemEnv::new(true));
    let counter = env.class("Counter", true, &["n"]);
    let inc = env.method(counter, "inc");
    let chain = analyses::passes::chain(
        "escape:capsule",
        env.clone() as Arc<dyn Env>,
        ChainOptions::default(),
    )
    .expect("chain");
    let mut main = Guest {
        chain: &chain,
        env: &env,
        cx: chain.main_thread(),
    };
    main.ev(0, EventKind::ThreadStart);
    let c = main.alloc(counter);
    let children: Vec<ThreadCx> = (1..=THREADS)
        .map(|t| chain.fork(&mut main.cx, t as Tid, SiteId(0), 0, &[c]))
        .collect();
    std::thread::scope(|scope| {
        for cx in children {
            let (chain, env) = (&chain, &*env);
            scope.spawn(move || {
                let mut g = Guest { chain, env, cx };
                g.ev(0, EventKind::ThreadStart);
                for _ in 0..ROUNDS {
                    g.call(inc, c, |g| g.write(Loc { obj: c, slot: 0 }, None, 1));
                }
                g.ev(0, EventKind::ThreadEnd);
            });
        }
    });
    // Whatever the interleaving, the second thread inside finds the first one inside
    // or its exit unordered: exactly one report, the class is demoted.
    let v: Vec<_> = chain
        .warnings()
        .into_iter()
        .filter(|w| w.warning.kind == WarningKind::CapsuleViolation)
        .collect();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].warning.extra["class"], "Counter");
    assert_eq!(v[0].warning.extra["property"], "synchronization");
}
