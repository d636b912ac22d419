//! The runtime on CapJava snippets: semantics, errors, threads, schedulers, limits.

mod common;

use common::*;
use vm::{ErrorKind, ExitKind, RunConfig, SchedKind};

const SEEDS: [u64; 3] = [1, 7, 42];

fn ok(src: &str, sched: SchedKind) -> String {
    let out = run_src(src, &captured(sched));
    assert_eq!(out.exit, ExitKind::Ok, "{:?}", out.error_text);
    out.stdout_string()
}

fn err(src: &str, cfg: &RunConfig) -> (ErrorKind, String) {
    let out = run_src(src, cfg);
    assert_eq!(
        out.exit,
        ExitKind::RuntimeError,
        "stdout: {}",
        out.stdout_string()
    );
    (out.error.unwrap().kind, out.error_text.unwrap())
}

#[test]
fn arithmetic_and_printing() {
    let src = r#"
class Main {
    static void main() {
        int min = -9223372036854775807 - 1;
        print(7 / 2, -7 / 2, -7 % 3, min / -1, min % -1, 1 << 65, -8 >> 1, -1 >>> 60);
        print(1.0, 0.1, 1e10, 1e-5, 0.0 / 0.0, 1.0 / 0.0, -0.0, 1.0 / 3.0);
        print((int) 2.9, (int) -2.9, (int) (0.0 / 0.0), (int) 1e300, (double) 3);
        print(true, !true, 3 < 4 && 4 < 3, "s", 5.5 % 2.0);
        print(Math.sqrt(16.0), Math.abs(-3), Math.max(2, 9), Math.pow(2.0, 10.0), Math.floor(-1.5));
        print(Thread.id(), ~5, 6 & 3, 6 | 3, 6 ^ 3);
    }
}"#;
    let want = "3 -3 -1 -9223372036854775808 0 2 -4 15\n\
                1.0 0.1 1.0E10 1.0E-5 NaN Infinity -0.0 0.3333333333333333\n\
                2 -2 0 9223372036854775807 3.0\n\
                true false false s 1.5\n\
                4.0 3 9 1024.0 -2.0\n\
                0 -6 2 7 5\n";
    assert_eq!(ok(src, SchedKind::Os), want);
}

#[test]
fn objects_arrays_statics_and_recursion() {
    let src = r#"
class Node {
    int v = 5;
    Node next;
    Node(int v, Node next) { this.v = v; this.next = next; }
    int sum() { if (next == null) { return v; } return v + next.sum(); }
}
class Main {
    static int count = 3;
    static double[][] grid;
    static int fib(int n) { if (n < 2) { return n; } return fib(n - 1) + fib(n - 2); }
    static void main() {
        Node l = new Node(1, new Node(2, new Node(3, null)));
        grid = new double[2][3];
        grid[1][2] = 2.5;
        int[] a = new int[4];
        for (int i = 0; i < a.length; i++) { a[i] = i * i; }
        count += a[3];
        print(l.sum(), grid[1][2], grid[0].length, a[2], count, fib(20));
    }
}"#;
    assert_eq!(ok(src, SchedKind::Os), "6 2.5 3 4 12 6765\n");
}

#[test]
fn runtime_errors_have_exact_messages() {
    let cfg = captured(SchedKind::Os);
    let (k, t) = err(
        "class Main { static void main() {\n  int[] a = new int[3];\n  a[3] = 1;\n} }",
        &cfg,
    );
    assert_eq!(k, ErrorKind::IndexOutOfBounds);
    assert_eq!(
        t,
        "runtime error: array index out of bounds: index 3, length 3\n  in thread T0 at t.cj:3:4\n    at Main.main (t.cj:3:4)\n"
    );
    let (k, t) = err(
        "class N { int f; }\nclass Main {\n static int get(N n) { return n.f; }\n static void main() { print(get(null)); } }",
        &cfg,
    );
    assert_eq!(k, ErrorKind::NullDereference);
    assert!(
        t.starts_with(
            "runtime error: null dereference: reading field N.f\n  in thread T0 at t.cj:3:"
        ),
        "{t}"
    );
    assert!(t.contains("    at Main.get (t.cj:3:"), "{t}");
    assert!(t.contains("    at Main.main (t.cj:4:"), "{t}");
    let (k, t) = err(
        "class Main { static void main() { int z = 0; print(1 / z); } }",
        &cfg,
    );
    assert_eq!(k, ErrorKind::DivisionByZero);
    assert!(
        t.starts_with("runtime error: division by zero\n  in thread T0 at t.cj:1:"),
        "{t}"
    );
    let (k, t) = err(
        "class Main { static void main() { int n = -2; int[] a = new int[n]; } }",
        &cfg,
    );
    assert_eq!(k, ErrorKind::NegativeArraySize);
    assert!(
        t.starts_with("runtime error: negative array size: -2\n"),
        "{t}"
    );
    let (k, _) = err("class Main { static void main() { assert(1 > 2); } }", &cfg);
    assert_eq!(k, ErrorKind::AssertionFailed);
    let (k, t) = err(
        "class Main { static void main() { Main m = new Main(); m.notify(); } }",
        &cfg,
    );
    assert_eq!(k, ErrorKind::IllegalMonitorState);
    assert!(
        t.contains("notify() on o1 without holding its monitor"),
        "{t}"
    );
    let (k, _) = err(
        "class Main { static void main() { Main m = new Main(); m.wait(); } }",
        &cfg,
    );
    assert_eq!(k, ErrorKind::IllegalMonitorState);
}

#[test]
fn output_before_an_error_is_kept() {
    let out = run_src(
        "class Main { static void main() { print(\"before\"); int z = 0; print(z / z); } }",
        &captured(SchedKind::Os),
    );
    assert_eq!(out.stdout_string(), "before\n");
    assert_eq!(out.exit.code(), 70);
}

#[test]
fn stack_overflow_is_an_error_not_a_crash() {
    let src = "class Main { static int down(int n) { return down(n + 1) + 1; }\n static void main() { print(down(0)); } }";
    for s in [SchedKind::Os, SchedKind::Seeded(3)] {
        let (k, t) = err(src, &captured(s));
        assert_eq!(k, ErrorKind::StackOverflow);
        assert!(t.contains("more identical frames"), "{t}");
        assert!(t.lines().count() < 50, "{t}");
    }
}

const PRODUCER_CONSUMER: &str = r#"
class Box {
    int value; boolean full;
    synchronized void put(int v) { while (full) { wait(); } value = v; full = true; notifyAll(); }
    synchronized int take() { while (!full) { wait(); } full = false; notifyAll(); return value; }
}
class P { Box b; P(Box b) { this.b = b; } void run() { for (int i = 1; i <= 200; i++) { b.put(i); } } }
class Main {
    static void main() {
        Box b = new Box();
        Thread t = fork new P(b).run();
        int sum = 0;
        for (int i = 0; i < 200; i++) { sum += b.take(); }
        t.join();
        print(sum);
    }
}"#;

#[test]
fn producer_consumer_with_wait_notify() {
    assert_eq!(ok(PRODUCER_CONSUMER, SchedKind::Os), "20100\n");
    for s in SEEDS {
        assert_eq!(ok(PRODUCER_CONSUMER, SchedKind::Seeded(s)), "20100\n");
    }
}

const BARRIER: &str = r#"
class W {
    int[] cells; Barrier bar; int id;
    W(int[] cells, Barrier bar, int id) { this.cells = cells; this.bar = bar; this.id = id; }
    void run() {
        for (int round = 0; round < 5; round++) {
            cells[id] = cells[id] + 1;
            bar.await();
            int s = 0;
            for (int i = 0; i < cells.length; i++) { s += cells[i]; }
            assert(s == 4 * (round + 1));
            bar.await();
        }
    }
}
class Main {
    static void main() {
        int[] cells = new int[4];
        Barrier bar = new Barrier(4);
        Thread[] ts = new Thread[4];
        for (int i = 0; i < 4; i++) { ts[i] = fork new W(cells, bar, i).run(); }
        for (int i = 0; i < 4; i++) { ts[i].join(); }
        print(cells[0], cells[3]);
    }
}"#;

#[test]
fn barrier_and_join() {
    assert_eq!(ok(BARRIER, SchedKind::Os), "5 5\n");
    for s in SEEDS {
        assert_eq!(ok(BARRIER, SchedKind::Seeded(s)), "5 5\n");
    }
}

const CONTENDED: &str = r#"
class Counter { int n; synchronized void inc() { n++; } }
class W { Counter c; W(Counter c) { this.c = c; } void run() { for (int i = 0; i < 300; i++) { c.inc(); synchronized (c) { c.n = c.n + 1; } } } }
class Main {
    static void main() {
        Counter c = new Counter();
        Thread[] ts = new Thread[64];
        for (int i = 0; i < 64; i++) { ts[i] = fork new W(c).run(); }
        for (int i = 0; i < 64; i++) { ts[i].join(); }
        print(c.n);
    }
}"#;

#[test]
fn sixty_four_threads_contend_on_one_monitor() {
    assert_eq!(ok(CONTENDED, SchedKind::Os), "38400\n");
    assert_eq!(ok(CONTENDED, SchedKind::Seeded(5)), "38400\n");
}

const OPPOSITE_ORDER: &str = r#"
class L { }
class W {
    L a; L b;
    W(L a, L b) { this.a = a; this.b = b; }
    void run() { synchronized (a) { synchronized (b) { print("got both"); } } }
}
class Main {
    static void main() {
        L x = new L(); L y = new L();
        Thread t1 = fork new W(x, y).run();
        Thread t2 = fork new W(y, x).run();
        t1.join(); t2.join();
        print("done");
    }
}"#;

#[test]
fn seeded_scheduler_finds_the_lock_order_deadlock_and_reports_it_exactly() {
    let mut deadlocks = 0;
    let mut completions = 0;
    for seed in 0..60 {
        let out = run_src(OPPOSITE_ORDER, &captured(SchedKind::Seeded(seed)));
        match out.exit {
            ExitKind::Ok => {
                completions += 1;
                assert_eq!(out.stdout_string(), "got both\ngot both\ndone\n");
            }
            _ => {
                deadlocks += 1;
                let e = out.error.unwrap();
                assert_eq!(e.kind, ErrorKind::Deadlock);
                let t = out.error_text.unwrap();
                assert!(t.contains("T1 waits to acquire the monitor of o"), "{t}");
                assert!(t.contains("(held by T2)"), "{t}");
                assert!(t.contains("T0 waits to join T"), "{t}");
                assert!(t.contains("at W.run (t.cj:"), "{t}");
            }
        }
    }
    assert!(
        deadlocks > 0 && completions > 0,
        "{deadlocks} deadlocks, {completions} completions"
    );
}

#[test]
fn os_scheduler_never_reports_a_false_deadlock() {
    for _ in 0..20 {
        assert_eq!(ok(PRODUCER_CONSUMER, SchedKind::Os), "20100\n");
    }
}

#[test]
fn self_join_join_cycle_and_lost_wait_are_deadlocks() {
    let self_join = r#"
class Main { static Thread me;
  static void run() { while (me == null) { } me.join(); }
  static void main() { me = fork Main.run(); me.join(); } }"#;
    let cycle = r#"
class A { static Thread t1; static Thread t2;
  static void one() { while (t2 == null) { } t2.join(); }
  static void two() { t1.join(); }
  static void main() { t1 = fork A.one(); t2 = fork A.two(); print("forked"); } }"#;
    let lost = r#"
class Main { static void main() { Main m = new Main(); synchronized (m) { m.wait(); } } }"#;
    for s in [SchedKind::Os, SchedKind::Seeded(1), SchedKind::Seeded(2)] {
        for src in [self_join, cycle, lost] {
            let (k, t) = err(src, &captured(s));
            assert_eq!(k, ErrorKind::Deadlock, "{t}");
        }
    }
    let (_, t) = err(lost, &captured(SchedKind::Os));
    assert!(t.contains("T0 waits in wait() on o1"), "{t}");
}

const RACY: &str = r#"
class C { int n; }
class W { C c; int id; W(C c, int id) { this.c = c; this.id = id; }
  void run() { for (int i = 0; i < 20; i++) { c.n = c.n + 1; print(id, c.n); } } }
class Main {
    static void main() {
        C c = new C();
        Thread a = fork new W(c, 1).run();
        Thread b = fork new W(c, 2).run();
        a.join(); b.join();
        print("final", c.n);
    }
}"#;

#[test]
fn seeded_runs_are_repeatable() {
    let mut outputs = std::collections::BTreeSet::new();
    for seed in [1, 2, 3, 4, 5, 99] {
        let (cfg1, log1) = logging(SchedKind::Seeded(seed));
        let (cfg2, log2) = logging(SchedKind::Seeded(seed));
        let o1 = run_src(RACY, &cfg1);
        let o2 = run_src(RACY, &cfg2);
        assert_eq!(o1.exit, ExitKind::Ok);
        assert_eq!(o1.stdout, o2.stdout, "seed {seed}");
        let (e1, e2) = (log1.events.lock().clone(), log2.events.lock().clone());
        assert!(e1.len() > 100);
        assert_eq!(e1, e2, "seed {seed}");
        outputs.insert(o1.stdout);
    }
    assert!(
        outputs.len() > 1,
        "the seeded scheduler never switched threads"
    );
}

#[test]
fn limits() {
    let spin = "class Main { static void main() { int i = 0; while (true) { i++; } } }";
    let cfg = RunConfig {
        max_steps: 1000,
        ..captured(SchedKind::Os)
    };
    let (k, t) = err(spin, &cfg);
    assert_eq!(k, ErrorKind::StepLimit);
    assert!(t.contains("more than 1000 basic blocks"), "{t}");

    let forks = "class Main { static void nop() { } static void main() { for (int i = 0; i < 10; i++) { Thread t = fork Main.nop(); t.join(); } } }";
    let cfg = RunConfig {
        max_threads: 5,
        ..captured(SchedKind::Os)
    };
    assert_eq!(err(forks, &cfg).0, ErrorKind::ThreadLimit);

    let big = "class Main { static void main() { int[] a = new int[1000000]; print(a.length); } }";
    let cfg = RunConfig {
        max_heap: 1 << 20,
        ..captured(SchedKind::Os)
    };
    let (k, t) = err(big, &cfg);
    assert_eq!(k, ErrorKind::HeapLimit);
    assert!(t.starts_with("runtime error: heap limit exceeded"), "{t}");
    let huge = "class Main { static void main() { int[] a = new int[9223372036854775807]; } }";
    assert_eq!(err(huge, &captured(SchedKind::Os)).0, ErrorKind::HeapLimit);
}

#[test]
fn an_error_in_one_thread_stops_the_others() {
    let src = r#"
class Spin { static volatile boolean stop; void run() { while (!stop) { } } }
class Main {
    static void main() {
        Thread t = fork new Spin().run();
        int[] a = new int[1];
        a[2] = 0;
    }
}"#;
    for s in [SchedKind::Os, SchedKind::Seeded(1)] {
        let (k, t) = err(src, &captured(s));
        assert_eq!(k, ErrorKind::IndexOutOfBounds, "{t}");
    }
}

#[test]
fn count_pass_and_default_chain() {
    let cfg = RunConfig {
        tools: Some("count".into()),
        ..captured(SchedKind::Seeded(1))
    };
    let out = run_src(PRODUCER_CONSUMER, &cfg);
    assert_eq!(out.exit, ExitKind::Ok);
    assert!(out.stats_text.contains("pass count"), "{}", out.stats_text);
    let details = &out.report["stats"]["passes"][0]["details"];
    assert_eq!(details["fork"], 1);
    assert_eq!(details["thread_start"], 2);
    assert_eq!(details["thread_end"], 2);
    assert_eq!(details["join"], 1);
    assert_eq!(details["acquire"], details["release"]);

    let cfg = RunConfig {
        tools: None,
        ..captured(SchedKind::Os)
    };
    let out = run_src(PRODUCER_CONSUMER, &cfg);
    assert_eq!(out.stdout_string(), "20100\n");
    let full = vm::DEFAULT_TOOLS.split(':').collect::<Vec<_>>();
    assert_eq!(out.passes, full);

    let bad = RunConfig {
        tools: Some("nonsense".into()),
        ..captured(SchedKind::Os)
    };
    assert!(vm::run_program(std::sync::Arc::new(compile(PRODUCER_CONSUMER)), &bad).is_err());
}

#[test]
fn thousands_of_short_lived_threads() {
    let src = r#"
class C { int n; synchronized void inc() { n++; } }
class Main {
    static void main() {
        C c = new C();
        for (int i = 0; i < 2000; i++) {
            Thread a = fork c.inc();
            Thread b = fork c.inc();
            a.join();
            b.join();
        }
        print(c.n);
    }
}"#;
    assert_eq!(ok(src, SchedKind::Os), "4000\n");
}
