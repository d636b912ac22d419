//! Lowering checked through the IR printer.

mod common;
use common::lower_funcs;
use expect_test::expect;

#[test]
fn synchronized_exits_on_every_path() {
    let out = lower_funcs(
        r#"class A {
    int n;
    int f(A o, int k) {
        while (k > 0) {
            synchronized (o) {
                if (k == 5) { break; }
                if (k == 7) { k--; continue; }
                if (k == 9) { return k; }
                n++;
            }
            k--;
        }
        return 0;
    }
    static void main() { }
}
"#,
        &["A.f"],
    );
    expect![[r#"

        method A.f(%0: A, %1: A, %2: int) -> int @t.cj:3:9
          locals %3: boolean, %4: int, %5: A, %6: boolean, %7: int, %8: boolean, %9: int, %10: int, %11: int, %12: boolean, %13: int, %14: int, %15: int, %16: int, %17: int, %18: int, %19: int
          b0:
            jump b1
          b1:
            %4 = const 0
            %3 = ICmp(Gt) %2, %4 @4:18
            branch %3 ? b2 : b4
          b2:
            %5 = %1
            monitorenter %5 @5:13
            %7 = const 5
            %6 = ICmp(Eq) %2, %7 @6:23
            branch %6 ? b3 : b5
          b3:
            monitorexit %5 @5:13
            jump b4
          b4:
            %19 = const 0
            return %19
          b5:
            %9 = const 7
            %8 = ICmp(Eq) %2, %9 @7:23
            branch %8 ? b6 : b7
          b6:
            %10 = const 1
            %11 = ISub %2, %10 @7:32
            %2 = %11
            monitorexit %5 @5:13
            jump b1
          b7:
            %13 = const 9
            %12 = ICmp(Eq) %2, %13 @8:23
            branch %12 ? b8 : b9
          b8:
            monitorexit %5 @5:13
            return %2
          b9:
            %14 = getfield %0.A.n @9:17
            %15 = const 1
            %16 = IAdd %14, %15 @9:18
            putfield %0.A.n = %16 @9:17
            monitorexit %5 @5:13
            %17 = const 1
            %18 = ISub %2, %17 @11:14
            %2 = %18
            jump b1
    "#]].assert_eq(&out);
}

#[test]
fn nested_spec_and_sync_cleanups_run_innermost_first() {
    let out = lower_funcs(
        r#"class A {
    static void g(A o) {
        for (int i = 0; i < 3; i++) {
            deterministic {
                synchronized (o) {
                    if (i == 1) { continue; }
                    return;
                }
            }
        }
    }
    synchronized deterministic atomic void h() { }
    static void main() { }
}
"#,
        &["A.g", "A.h"],
    );
    expect![[r#"

        static A.g(%0: A) -> void @t.cj:2:17
          locals %1 i: int, %2: boolean, %3: int, %4: A, %5: boolean, %6: int, %7: int, %8: int
          b0:
            %1 = const 0
            jump b1
          b1:
            %3 = const 3
            %2 = ICmp(Lt) %1, %3 @3:27
            branch %2 ? b2 : b6
          b2:
            specbegin Deterministic @4:13
            %4 = %0
            monitorenter %4 @5:17
            %6 = const 1
            %5 = ICmp(Eq) %1, %6 @6:27
            branch %5 ? b3 : b5
          b3:
            monitorexit %4 @5:17
            specend Deterministic @4:13
            jump b4
          b4:
            %7 = const 1
            %8 = IAdd %1, %7 @3:33
            %1 = %8
            jump b1
          b5:
            monitorexit %4 @5:17
            specend Deterministic @4:13
            return
          b6:
            return

        method synchronized deterministic atomic A.h(%0: A) -> void @t.cj:12:44
          b0:
            return
    "#]]
    .assert_eq(&out);
}

#[test]
fn short_circuit_and_conditional() {
    let out = lower_funcs(
        r#"class A {
    static double f(boolean a, boolean b, int x) {
        boolean c = a && b || !a;
        return c ? x : 1.5;
    }
    static void main() { }
}
"#,
        &["A.f"],
    );
    expect![[r#"

        static A.f(%0: boolean, %1: boolean, %2: int) -> double @t.cj:2:19
          locals %3 c: boolean, %4: boolean, %5: boolean, %6: double
          b0:
            %5 = %0
            branch %5 ? b1 : b2
          b1:
            %5 = %1
            jump b2
          b2:
            %4 = %5
            branch %4 ? b3 : b7
          b3:
            %3 = %4
            branch %3 ? b4 : b6
          b4:
            %6 = IntToDouble %2
            jump b5
          b5:
            return %6
          b6:
            %6 = const 1.5
            jump b5
          b7:
            %4 = Not %0
            jump b3
    "#]]
    .assert_eq(&out);
}

#[test]
fn increments_and_compound_assignments() {
    let out = lower_funcs(
        r#"class A {
    int f;
    static double s;
    void g(int[] a, int i) {
        f++;
        this.f -= 2;
        A.s++;
        s *= 2;
        a[i]--;
        a[i + 1] <<= 3;
        i++;
    }
    static void main() { }
}
"#,
        &["A.g"],
    );
    expect![[r#"

        method A.g(%0: A, %1: int[], %2: int) -> void @t.cj:4:10
          locals %3: int, %4: int, %5: int, %6: int, %7: int, %8: int, %9: double, %10: double, %11: double, %12: double, %13: double, %14: int, %15: double, %16: int, %17: int, %18: int, %19: int, %20: int, %21: int, %22: int, %23: int, %24: int, %25: int
          b0:
            %3 = getfield %0.A.f @5:9
            %4 = const 1
            %5 = IAdd %3, %4 @5:10
            putfield %0.A.f = %5 @5:9
            %6 = getfield %0.A.f @6:14
            %7 = const 2
            %8 = ISub %6, %7 @6:16
            putfield %0.A.f = %8 @6:14
            %9 = getstatic A.s @7:11
            %10 = const 1.0
            %11 = FAdd %9, %10 @7:12
            putstatic A.s = %11 @7:11
            %12 = getstatic A.s @8:9
            %14 = const 2
            %13 = IntToDouble %14
            %15 = FMul %12, %13 @8:11
            putstatic A.s = %15 @8:9
            %16 = %1[%2] @9:10
            %17 = const 1
            %18 = ISub %16, %17 @9:13
            %1[%2] = %18 @9:10
            %20 = const 1
            %19 = IAdd %2, %20 @10:13
            %21 = %1[%19] @10:10
            %22 = const 3
            %23 = Shl %21, %22 @10:18
            %1[%19] = %23 @10:10
            %24 = const 1
            %25 = IAdd %2, %24 @11:10
            %2 = %25
            return
    "#]].assert_eq(&out);
}

#[test]
fn objects_arrays_builtins() {
    let out = lower_funcs(
        r#"class P {
    double x;
    P(double x) { this.x = x; }
    static void main() {
        P p = new P(1);
        int[][] m = new int[2][3];
        double[][] r = new double[4][];
        int n = m.length + m[0].length;
        Barrier b = new Barrier(2);
        b.await();
        Thread t = fork p.run(n);
        t.join();
        synchronized (p) { p.notifyAll(); p.wait(); }
        print("n =", n, Math.abs(-2), Math.abs(-2.5), Math.min(1, 2.0), (int) 2.7, Thread.id());
        assert(n / 2 > 0);
    }
    void run(int k) { }
}
"#,
        &["P.<init>", "P.main"],
    );
    expect![[r#"

        ctor P.<init>(%0: P, %1: double) -> void @t.cj:3:5
          b0:
            putfield %0.P.x = %1 @3:24
            return

        static P.main() -> void @t.cj:4:17
          locals %0 p: P, %1 m: int[][], %2 r: double[][], %3 n: int, %4 b: Barrier, %5 t: Thread, %6: P, %7: double, %8: int, %9: int, %10: int, %11: int, %12: int, %13: int, %14: int[], %15: int, %16: int, %17: P, %18: int, %19: int, %20: double, %21: double, %22: double, %23: double, %24: int, %25: double, %26: int, %27: double, %28: int, %29: boolean, %30: int, %31: int, %32: int
          b0:
            %6 = new P @5:19
            %8 = const 1
            %7 = IntToDouble %8
            call P.<init>(%6, %7) @5:19
            %0 = %6
            %9 = const 2
            %10 = const 3
            %1 = newarray int[] [%9, %10] @6:21
            %11 = const 4
            %2 = newarray double[] [%11] @7:24
            %12 = length %1 @8:19
            %15 = const 0
            %14 = %1[%15] @8:29
            %13 = length %14 @8:33
            %3 = IAdd %12, %13 @8:26
            %16 = const 2
            %4 = newbarrier %16 @9:25
            await %4 @10:11
            %5 = fork P.run(%0, %3) @11:27
            join %5 @12:11
            %17 = %0
            monitorenter %17 @13:9
            notifyall %0 @13:30
            wait %0 @13:45
            monitorexit %17 @13:9
            %19 = const -2
            %18 = math AbsInt(%19)
            %21 = const -2.5
            %20 = math AbsDouble(%21)
            %24 = const 1
            %23 = IntToDouble %24
            %25 = const 2.0
            %22 = math MinDouble(%23, %25)
            %27 = const 2.7
            %26 = DoubleToInt %27
            %28 = threadid
            print "n =", %3:Int, %18:Int, %20:Double, %22:Double, %26:Int, %28:Int @14:9
            %31 = const 2
            %30 = IDiv %3, %31 @15:18
            %32 = const 0
            %29 = ICmp(Gt) %30, %32 @15:22
            assert %29 @15:9
            return
    "#]].assert_eq(&out);
}

#[test]
fn assignments_that_read_their_target_go_through_a_temp() {
    let out = lower_funcs(
        r#"class N {
    N next;
    N(N n) { next = n; }
    static void f(N p, boolean b, boolean c, int x, int y) {
        p = new N(p);
        b = c && b;
        x = c ? y : x;
        x = x + y;
        p = p.next;
    }
    static void main() { }
}
"#,
        &["N.f"],
    );
    expect![[r#"

        static N.f(%0: N, %1: boolean, %2: boolean, %3: int, %4: int) -> void @t.cj:4:17
          locals %5: N, %6: boolean, %7: int
          b0:
            %5 = new N @5:17
            call N.<init>(%5, %0) @5:17
            %0 = %5
            %6 = %2
            branch %6 ? b1 : b2
          b1:
            %6 = %1
            jump b2
          b2:
            %1 = %6
            branch %2 ? b3 : b5
          b3:
            %7 = %4
            jump b4
          b4:
            %3 = %7
            %3 = IAdd %3, %4 @8:15
            %0 = getfield %0.N.next @9:15
            return
          b5:
            %7 = %3
            jump b4
    "#]]
    .assert_eq(&out);
}
