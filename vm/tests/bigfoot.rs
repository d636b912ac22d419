//! BigFoot (Rhodes, *Access Classification for Race Detection Optimization*, ch. 3):
//! the placement examples of the thesis (Figs. 3.1, 3.3, the R/W cases of §3.5), the
//! precise-checks oracle and property 7 (`bigfoot` vs `fasttrack` on the same run) over
//! the corpus under 6 seeds and over generated programs, and the adaptive array
//! shadows on the dynamic examples.

use std::path::PathBuf;
use std::sync::Arc;

use lang::bigfoot::Scope;
use lang::ir::{CheckTarget, Inst, Program};
use lang::proggen::{ProgConfig, gen_program_seeded};
use vm::Tier;
use vm::testing::bigfoot::{bigfoot_agrees_on, run_bigfoot};
use vm::testing::program_oracles::compile;

/// `src` placed with the thesis's rules alone: every method checks its own accesses
/// (the placement tests of one method's rules; what callers check for their callees
/// has its own tests below).
fn placed(src: &str) -> Program {
    placed_in(src, Scope::Method)
}

fn placed_in(src: &str, scope: Scope) -> Program {
    let p = compile(src).unwrap_or_else(|e| panic!("{e}"));
    let (placed, _) = lang::bigfoot::place_in(&p, scope);
    placed.validate().expect("placed program is valid");
    placed
}

/// The function `Class.method` of `p`.
fn func<'p>(p: &'p Program, name: &str) -> &'p lang::ir::Function {
    p.funcs
        .iter()
        .enumerate()
        .find(|(i, _)| p.func_name(lang::ir::FuncId(*i as u32)) == name)
        .map(|(_, f)| f)
        .unwrap_or_else(|| panic!("no {name}"))
}

/// The checks of `Class.method` in block order: (kind, target), kind `R` or `W`.
fn checks_of(p: &Program, name: &str) -> Vec<(char, String)> {
    let f = func(p, name);
    let mut out = Vec::new();
    for b in &f.blocks {
        for i in &b.insts {
            if let Inst::Check { target, write, .. } = i {
                let k = if *write { 'W' } else { 'R' };
                let t = match target {
                    CheckTarget::Fields { class, groups, .. } => {
                        let c = p.class(*class);
                        let names: Vec<String> = groups
                            .iter()
                            .flat_map(|(r, m)| {
                                let mut v: Vec<String> = (0..64)
                                    .filter(|s| m & (1u64 << s) != 0)
                                    .map(|s| c.fields[s as usize].name.clone())
                                    .collect();
                                if v.is_empty() {
                                    v.push(c.fields[*r as usize].name.clone());
                                }
                                v
                            })
                            .collect();
                        names.join("/")
                    }
                    CheckTarget::Static { field } => p.static_field(*field).name.clone(),
                    CheckTarget::Range { .. } => "range".into(),
                    CheckTarget::Elem { .. } => "elem".into(),
                };
                out.push((k, t));
            }
        }
    }
    out
}

/// Whether a check of `Class.method` comes before the first instruction matching `at`
/// in the same block.
fn check_before(p: &Program, name: &str, at: impl Fn(&Inst) -> bool) -> bool {
    let f = func(p, name);
    f.blocks.iter().any(|b| {
        b.insts
            .iter()
            .position(&at)
            .is_some_and(|k| k > 0 && matches!(b.insts[k - 1], Inst::Check { .. }))
    })
}

const POINT: &str = "
class Point {
    int x; int y; int z;
    void move(int dx, int dy, int dz) {
        x = x + dx; y = y + dy; z = z + dz;
    }
}
class Main {
    static void movePts(Point[] a, int lo, int hi) {
        for (int i = lo; i < hi; i++) { a[i].move(1, 1, 1); }
    }
    static void main() {
        Point[] a = new Point[4];
        for (int i = 0; i < 4; i++) { a[i] = new Point(); }
        movePts(a, 0, 4);
    }
}";

#[test]
fn fig_3_1_point_move_is_one_write_check_of_one_field_group() {
    // Fig. 3.1: the three read-modify-writes need one write check of x/y/z, which all share
    // one shadow group (they are only ever checked together).
    let p = placed(POINT);
    assert_eq!(checks_of(&p, "Point.move"), vec![('W', "x/y/z".into())]);
    // movePts: `move` has no synchronization, so nothing forces a check before the
    // call, and the element read of every iteration is one read check of the range
    // a[lo..i] after the loop (Fig. 3.1).
    assert_eq!(checks_of(&p, "Main.movePts"), vec![('R', "range".into())]);
}

#[test]
fn read_modify_write_and_write_then_read_need_one_write_check() {
    // §3.5: a write check covers the reads; read-only sequences need one read check.
    let p = placed(
        "class O { int f; }
         class Main {
             static void rmw(O o) { int t = o.f; o.f = t + 1; }
             static void wr(O o) { o.f = 1; int t = o.f; print(t); }
             static void reads(O o) { int a = o.f; int b = o.f; print(a + b); }
             static void main() { O o = new O(); rmw(o); wr(o); reads(o); }
         }",
    );
    assert_eq!(checks_of(&p, "Main.rmw"), vec![('W', "f".into())]);
    assert_eq!(checks_of(&p, "Main.wr"), vec![('W', "f".into())]);
    assert_eq!(checks_of(&p, "Main.reads"), vec![('R', "f".into())]);
}

#[test]
fn acquire_forces_the_check_and_release_defers_to_a_later_write() {
    // Fig. 3.7, ACQ: a pending write is checked before an acquire.
    let p = placed(
        "class O { int f; }
         class Main {
             static void e7(O o, O l) { o.f = 1; synchronized (l) { print(1); } }
             static void e8(O o, O l) { synchronized (l) { o.f = 1; } int t = o.f; print(t); }
             static void e8b(O o, O l) { synchronized (l) { int t = o.f; print(t); } o.f = 1; }
             static void e9(O o, O l) { synchronized (l) { o.f = 1; } }
             static void main() { O o = new O(); O l = new O();
                 e7(o, l); e8(o, l); e8b(o, l); e9(o, l); }
         }",
    );
    assert_eq!(checks_of(&p, "Main.e7"), vec![('W', "f".into())]);
    assert!(check_before(&p, "Main.e7", |i| matches!(
        i,
        Inst::MonitorEnter { .. }
    )));
    // REL with §3.5's kinds: the anticipated read cannot discharge the pending write: W before the
    // release, then R at the end.
    assert_eq!(
        checks_of(&p, "Main.e8"),
        vec![('W', "f".into()), ('R', "f".into())]
    );
    // The other way round: the anticipated write covers the pending read: one W at the end.
    assert_eq!(checks_of(&p, "Main.e8b"), vec![('W', "f".into())]);
    assert!(!check_before(&p, "Main.e8b", |i| matches!(
        i,
        Inst::MonitorExit { .. }
    )));
    // A write in a critical section with no later access: checked before the release.
    assert_eq!(checks_of(&p, "Main.e9"), vec![('W', "f".into())]);
    assert!(check_before(&p, "Main.e9", |i| matches!(
        i,
        Inst::MonitorExit { .. }
    )));
}

#[test]
fn calls_synchronize_only_as_their_kill_sets_say() {
    // A callee that may acquire forces the check before the call; one without
    // synchronization lets it move past the call.
    let p = placed(
        "class O { int f; synchronized void s() { print(1); } void n() { print(2); } }
         class Main {
             static void viaSync(O o) { o.f = 1; o.s(); }
             static void viaPlain(O o) { o.f = 1; o.n(); }
             static void main() { O o = new O(); viaSync(o); viaPlain(o); }
         }",
    );
    assert!(check_before(&p, "Main.viaSync", |i| matches!(
        i,
        Inst::Call { .. }
    )));
    assert!(!check_before(&p, "Main.viaPlain", |i| matches!(
        i,
        Inst::Call { .. }
    )));
    assert_eq!(checks_of(&p, "Main.viaPlain"), vec![('W', "f".into())]);
}

#[test]
fn fig_3_3_one_check_serves_accesses_on_both_sides_of_the_locks() {
    // Fig. 3.3: acq; x=b.f; rel; y=b.f; CHECK; acq; z=b.f; rel — one read check, before the
    // second acquire; it survives the acquire and covers z=b.f.
    let p = placed(
        "class B { int f; }
         class Main {
             static void e1(B b, B l) {
                 synchronized (l) { int x = b.f; print(x); }
                 int y = b.f; print(y);
                 synchronized (l) { int z = b.f; print(z); }
             }
             static void main() { e1(new B(), new B()); }
         }",
    );
    assert_eq!(checks_of(&p, "Main.e1"), vec![('R', "f".into())]);
}

#[test]
fn strided_and_offset_loops_become_range_checks() {
    // a[lo..hi:2] after the loop (§3.4's strided ranges); the offsets 0 and 1 of a loop with
    // step 2 make one contiguous range.
    let p = placed(
        "class Main {
             static void e11(int[] a, int lo, int hi) { for (int i = lo; i < hi; i = i + 2) { a[i] = 0; } }
             static void pairs(int[] a, int n) { for (int i = 0; i < n; i = i + 2) { a[i] = 1; a[i + 1] = 2; } }
             static void main() { int[] a = new int[8]; e11(a, 0, 8); pairs(a, 8); }
         }",
    );
    assert_eq!(checks_of(&p, "Main.e11"), vec![('W', "range".into())]);
    assert_eq!(checks_of(&p, "Main.pairs"), vec![('W', "range".into())]);
    let steps: Vec<u32> = p
        .funcs
        .iter()
        .flat_map(|f| f.blocks.iter().flat_map(|b| b.insts.iter()))
        .filter_map(|i| match i {
            Inst::Check {
                target: CheckTarget::Range { step, .. },
                ..
            } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, vec![2, 1]);
}

#[test]
fn arrays_from_fields_second_induction_variables_and_conditional_accesses_become_ranges() {
    let p = placed(
        "class Main {
             int[] a;
             int[] b;
             void copy(int n) { for (int i = 0; i < n; i++) { a[i] = b[i]; } }
             static void two(int[] a, int n) {
                 int j = 0;
                 for (int i = 0; i < n; i++) { a[j] = a[j + 1]; j = j + 2; }
             }
             static int cond(int[] a, int n) {
                 int s = 0;
                 for (int i = 0; i < n; i++) { s = s + a[i]; if (s > 3) { s = s + a[i]; } }
                 return s;
             }
             static void main() {
                 Main m = new Main(); m.a = new int[8]; m.b = new int[8]; m.copy(8);
                 two(new int[9], 4); print(cond(new int[4], 4));
             }
         }",
    );
    // One range per array after the loop (the fields are read once, before it).
    let copy = checks_of(&p, "Main.copy");
    assert!(!copy.iter().any(|c| c.1 == "elem"), "{copy:?}");
    assert_eq!(
        copy.iter().filter(|c| c == &&('W', "range".into())).count(),
        1
    );
    assert_eq!(
        copy.iter().filter(|c| c == &&('R', "range".into())).count(),
        1
    );
    // `j` is an induction variable too (step 2): a write range and a read range.
    assert_eq!(
        checks_of(&p, "Main.two"),
        vec![('W', "range".into()), ('R', "range".into())]
    );
    // The conditional a[i] is the unconditional one's element.
    assert_eq!(checks_of(&p, "Main.cond"), vec![('R', "range".into())]);
}

#[test]
fn conditional_accesses_alone_become_runs() {
    // `a[i + 1]` runs in some iterations only, and no access of every iteration
    // touches its element: a run, checked in the loop when its index jumps and on the
    // exit edge, never per element.
    let src = "
class W {
    void gaps(int[] a, int lo, int hi) {
        for (int i = lo; i < hi; i++) { if (i % 5 != 4) { a[i + 1] = a[i + 1] + i; } }
    }
    int mixed(int[] a, int[] b, int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s = s + a[i];
            if (i % 3 != 0) { b[i + 1] = s; s = s + a[i]; }
        }
        return s;
    }
    int cutoff(int[] a, int[] b, int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            if (a[i] > 3) { b[i] = s; }
        }
        return s;
    }
}
class Main {
    static void main() {
        int[] a = new int[64];
        W w = new W();
        Thread t1 = fork w.gaps(a, 0, 30);
        Thread t2 = fork w.gaps(a, 30, 62);
        t1.join(); t2.join();
        print(a[1] + a[30] + a[31] + w.mixed(a, new int[65], 64) + w.cutoff(a, new int[64], 64));
    }
}";
    let p = placed(src);
    // A run of one element is checked as an element (inline in generated code).
    let run = [('W', "elem".into()), ('W', "range".into())];
    assert_eq!(checks_of(&p, "W.gaps"), [run.clone(), run.clone()].concat());
    // A run's check splits its block: the accesses after it keep their ranges.
    assert_eq!(
        checks_of(&p, "W.mixed"),
        [vec![('R', "range".into())], run.to_vec(), run.to_vec()].concat()
    );
    // A block behind a test of loaded data keeps its element check.
    assert_eq!(
        checks_of(&p, "W.cutoff"),
        vec![('W', "elem".into()), ('R', "range".into())]
    );
    // t1 writes a[1..=29] but a[5], a[10], …, t2 a[31..=62] but a[35], a[40], …:
    // no element in common (the oracles also compare with fasttrack on every seed).
    for seed in 1..7 {
        let (stats, races) = bigfoot_stats(src, seed);
        assert_eq!(races, 0, "{stats}");
    }
    // t1 up to i = 30 writes a[31] too, as t2 does at i = 30: a race on element 31.
    let racy = src.replace("gaps(a, 0, 30)", "gaps(a, 0, 31)");
    for seed in 1..7 {
        let (stats, races) = bigfoot_stats(&racy, seed);
        assert!(races > 0, "{stats}");
    }
}

#[test]
fn the_runs_of_one_block_share_one_test() {
    // SOR's conditional update: three runs in one block over `j` (`a[j + 1]`, `b[j]`,
    // `b[j + 4]`) move together, so they share one pair of locals and one test, and
    // each is checked, shifted, when the index jumps and on the exit edge.
    let src = "
class W {
    void relax(int[] a, int[] b, int lo, int hi, int n) {
        for (int j = lo; j < hi; j += 2) {
            if (j + 1 != n) { a[j + 1] = b[j] + b[j + 4] + a[j + 1]; }
        }
    }
}
class Main {
    static void main() {
        int[] a = new int[48];
        int[] b = new int[48];
        W w = new W();
        Thread t1 = fork w.relax(a, b, 0, 20, 15);
        Thread t2 = fork w.relax(b, a, 23, 41, 0);
        t1.join(); t2.join();
        print(a[1] + b[24]);
    }
}";
    let p = placed(src);
    let tests = func(&p, "W.relax")
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter(|i| {
            matches!(
                i,
                Inst::Binary {
                    op: lang::ir::BinOp::ICmp(lang::ir::Cmp::Ne),
                    ..
                }
            )
        })
        .count();
    // The source's `j + 1 != n`, the run's jump test, and its two "anything left"
    // tests (at a jump and on the exit edge); three tests per run if each had its own.
    assert_eq!(tests, 4);
    let run = [('W', "elem".into()), ('W', "range".into())];
    let read = [('R', "elem".into()), ('R', "range".into())];
    let each: Vec<(char, String)> = [run.clone(), read.clone(), read.clone()].concat();
    let mut sorted = checks_of(&p, "W.relax");
    sorted.sort();
    let mut want = [each.clone(), each].concat();
    want.sort();
    assert_eq!(sorted, want);
    // t1 writes a[1..=19] but a[15] and reads b[0..=22], even; t2 writes b[24..=40],
    // even, and reads a[23..=43], odd: nothing in common.
    let prog = compile(src).unwrap_or_else(|e| panic!("{e}"));
    for (seed, run) in runs_under_6_seeds(&prog) {
        assert!(run.warnings.is_empty(), "seed {seed}: {:?}", run.warnings);
    }
    // From j = 19, t2 writes b[20] and b[22], which t1 reads as b[j + 4] at j = 16
    // and 18, and reads a[19], which t1 writes as a[j + 1] at j = 18: races through
    // shifted runs, which the oracles compare with fasttrack's element by element.
    let racy = src.replace("relax(b, a, 23, 41, 0)", "relax(b, a, 19, 41, 0)");
    let prog = compile(&racy).unwrap_or_else(|e| panic!("{e}"));
    for (seed, run) in runs_under_6_seeds(&prog) {
        assert!(!run.warnings.is_empty(), "seed {seed}");
    }
}

#[test]
fn loops_with_a_later_exit_test_or_counting_down_become_ranges_and_runs() {
    // Insertion sort's inner loop counts down and tests `j >= lo && a[j] > v` in two
    // blocks: the reads of the test run in the iteration that leaves the loop too (a
    // run), the body's accesses only in the others (ranges counting down). `find`
    // counts up with the same shape; `down` counts down by two.
    let src = "
class W {
    void sort(int[] a, int lo, int hi) {
        for (int i = lo + 1; i < hi; i++) {
            int v = a[i];
            int j = i - 1;
            while (j >= lo && a[j] > v) { a[j + 1] = a[j]; j--; }
            a[j + 1] = v;
        }
    }
    int find(int[] a, int from, int n) {
        int i = from;
        while (i < n && a[i] != 0) { i++; }
        return i;
    }
    void down(int[] a, int n) { for (int i = n - 1; i >= 0; i = i - 2) { a[i] = a[i] + 1; } }
}
class Main {
    static void main() {
        int[] a = new int[64];
        for (int i = 0; i < 64; i++) { a[i] = (i * 37) % 64 + 1; }
        a[50] = 0;
        W w = new W();
        Thread t1 = fork w.sort(a, 0, 32);
        Thread t2 = fork w.sort(a, 32, 48);
        Thread t3 = fork w.find(a, 48, 64);
        t1.join(); t2.join(); t3.join();
        w.down(a, 64);
        for (int i = 1; i < 32; i++) { assert(a[i - 1] <= a[i]); }
        print(w.find(a, 0, 64));
    }
}";
    let p = placed(src);
    let sort = checks_of(&p, "W.sort");
    // Element checks: the run's one-element checks (when its index jumps, and on the
    // exit edge), and `a[j + 1] = v` (its index is no induction variable) on both
    // exit edges of the rotated outer loop. Ranges: the outer loop's `a[i]`, the inner
    // loop's reads and writes, the run's.
    let elems = [('R', "elem".into()), ('R', "elem".into())];
    let ranges = sort.iter().filter(|c| c.1 == "range").count();
    assert_eq!(ranges, 5, "{sort:?}");
    assert_eq!(
        sort.iter()
            .filter(|c| c.1 == "elem")
            .cloned()
            .collect::<Vec<_>>(),
        [elems.to_vec(), vec![('W', "elem".into()); 2]].concat(),
        "{sort:?}"
    );
    // `find`: a run of the test's reads (an element or a range, when its index jumps
    // and on the exit edge).
    let run = [('R', "elem".into()), ('R', "range".into())];
    assert_eq!(checks_of(&p, "W.find"), [run.clone(), run].concat());
    assert_eq!(checks_of(&p, "W.down"), vec![('W', "range".into())]);
    for seed in 1..7 {
        let (stats, races) = bigfoot_stats(src, seed);
        assert_eq!(races, 0, "{stats}");
    }
    // Sorting overlapping slices races on a[31]; searching while another thread
    // sorts races on what both touch.
    for racy in [
        src.replace("sort(a, 32, 48)", "sort(a, 31, 48)"),
        src.replace("find(a, 48, 64)", "find(a, 40, 64)"),
    ] {
        for seed in 1..7 {
            let (stats, races) = bigfoot_stats(&racy, seed);
            assert!(races > 0, "{stats}");
        }
    }
}

#[test]
fn extreme_constants_in_loops_are_no_induction_steps() {
    // `i - MIN` and offsets of MIN: placement must not overflow negating them (debug
    // builds panic), and leaves such accesses their element checks.
    let p = placed(
        "class Main {
             static void main() {
                 int[] a = new int[4];
                 int n = 0;
                 for (int i = 0; n < 2; i = i - 0x8000000000000000) { a[i & 3] = 1; n++; }
                 for (int i = 0; n < 4; i = i - 0x8000000000000000) { a[0] = a[i - 0x8000000000000000 + 0x8000000000000000]; n++; }
                 for (int i = 0; i < 4; i++) { a[i & 3] = a[(i - 0x8000000000000000) & 3]; }
                 for (int i = 0; i < n - 4; i++) { a[i - 0x8000000000000000] = a[i + 0x8000000000000000]; }
                 print(a[0]);
             }
         }",
    );
    let main = checks_of(&p, "Main.main");
    assert!(!main.is_empty());
}

#[test]
fn a_field_array_replaced_during_the_loop_keeps_both_arrays_checked() {
    // The worker's loop reads `arr[i]` while main writes both arrays and replaces the
    // field: the worker reads `arr` once, before the loop (nothing in the loop may
    // change it), so it reads one of the arrays throughout, and bigfoot reports the
    // same elements as fasttrack (the oracles run on every seed).
    let src = "
class W {
    int[] arr;
    void run(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) { s = s + arr[i]; }
        print(s);
    }
}
class Main {
    static void main() {
        W w = new W();
        int[] a = new int[48];
        int[] b = new int[48];
        w.arr = a;
        Thread t = fork w.run(48);
        for (int i = 0; i < 48; i++) { a[i] = 1; }
        w.arr = b;
        for (int i = 0; i < 48; i++) { b[i] = 2; }
        t.join();
    }
}";
    for seed in 1..7 {
        let (stats, races) = bigfoot_stats(src, seed);
        assert!(races > 0, "{stats}");
    }
    // The worker replaces the field itself halfway: the loop reads `arr` in every
    // iteration (no hoisting past its own store), its ranges over `a` and over `b` are
    // each checked, and main's writes to the halves the worker does not read race
    // with nothing. (A hoisting that ignored the store would read `a` throughout:
    // another sum, and races on `a`'s second half.)
    let src = "
class W {
    int[] arr;
    int[] other;
    void run(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) { s = s + arr[i]; if (i == 23) { arr = other; } }
        print(s);
    }
}
class Main {
    static void main() {
        W w = new W();
        int[] a = new int[48];
        int[] b = new int[48];
        for (int i = 0; i < 48; i++) { a[i] = 1; b[i] = 2; }
        w.arr = a;
        w.other = b;
        Thread t = fork w.run(48);
        for (int i = 0; i < 24; i++) { a[i + 24] = 5; b[i] = 5; }
        t.join();
    }
}";
    let prog = compile(src).unwrap_or_else(|e| panic!("{e}"));
    for (seed, run) in runs_under_6_seeds(&prog) {
        assert_eq!(run.out.stdout, b"72\n", "seed {seed}");
        assert!(run.warnings.is_empty(), "seed {seed}: {:?}", run.warnings);
    }
}

/// Runs of the placed `prog` under `bigfoot` (with `fasttrack` beside it) under 6
/// seeds, alternating the tiers; each run's oracles (precise checks, property 7)
/// must hold.
fn runs_under_6_seeds(prog: &Arc<Program>) -> Vec<(u64, vm::testing::bigfoot::BigFootRun)> {
    (1..7)
        .map(|seed| {
            let tier = if seed % 2 == 0 {
                Tier::Jit
            } else {
                Tier::Interp
            };
            bigfoot_agrees_on(prog, seed, tier).expect("oracles");
            (seed, run_bigfoot(prog, tier, seed).expect("run"))
        })
        .collect()
}

#[test]
fn a_loop_with_a_lock_keeps_per_iteration_checks() {
    // A loop with synchronization is not coalesced: its accesses keep their own
    // checks, placed before the release.
    let p = placed(
        "class Main {
             static void f(int[] a, Main l, int n) { for (int i = 0; i < n; i++) { synchronized (l) { a[i] = 1; } } }
             static void main() { f(new int[4], new Main(), 4); }
         }",
    );
    assert_eq!(checks_of(&p, "Main.f"), vec![('W', "elem".into())]);
    assert!(check_before(&p, "Main.f", |i| matches!(
        i,
        Inst::MonitorExit { .. }
    )));
}

#[test]
fn a_loop_carried_field_access_is_checked_once_after_the_loop() {
    // Fig. 3.6(b) for a field: the read in every iteration is anticipated on the
    // (rotated) back edge, so the loop body has no check.
    let p = placed(
        "class B { int f; }
         class Main {
             static int sum(B b, int n) { int s = 0; for (int i = 0; i < n; i++) { s = s + b.f; } return s; }
             static void main() { print(sum(new B(), 3)); }
         }",
    );
    assert_eq!(checks_of(&p, "Main.sum"), vec![('R', "f".into())]);
    // And it runs: precise checks and the same races as fasttrack.
}

/// How many loads of the field `Class.field` the function `name` of `p` makes.
fn loads_of(p: &Program, name: &str, class: &str, field: &str) -> usize {
    let f = func(p, name);
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter(|i| {
            matches!(i, Inst::GetField { field: r, .. }
                if p.class(r.class).name == class
                    && p.class(r.class).fields[r.index as usize].name == field)
        })
        .count()
}

#[test]
fn a_field_read_again_in_a_block_is_read_once_so_its_accesses_coalesce() {
    // raytracer's `Ray.point`: `p.x`, `p.y`, `p.z` read `this.p` three times. Read
    // once, the three fields are accessed through one local, so they are checked
    // together everywhere and share one shadow group.
    let p = placed(
        "class Vec { double x; double y; double z;
             Vec(double a, double b, double c) { x = a; y = b; z = c; } }
         class Ray { Vec p; Vec d;
             Vec point(double t) { return new Vec(p.x + d.x * t, p.y + d.y * t, p.z + d.z * t); } }
         class Main { static void main() {
             Ray r = new Ray(); r.p = new Vec(1.0, 2.0, 3.0); r.d = new Vec(0.0, 1.0, 0.0);
             Vec v = r.point(2.0); print(v.x + v.y + v.z); } }",
    );
    assert_eq!(loads_of(&p, "Ray.point", "Ray", "p"), 1);
    assert_eq!(loads_of(&p, "Ray.point", "Ray", "d"), 1);
    assert_eq!(
        checks_of(&p, "Ray.point"),
        vec![
            ('R', "p/d".into()),
            ('R', "x/y/z".into()),
            ('R', "x/y/z".into())
        ]
    );
    // crypt's IDEA loop: `text[i]` … `text[i + 3]` with `text` a field are one range
    // check on the loop's exit, not one per load of the field in every iteration (the
    // loop reads `text` once, before it; see the hoisting tests below).
    let p = placed(
        "class B { int[] text; int sum;
             void run(int n) {
                 int s = 0;
                 for (int i = 0; i < n; i = i + 4) { s = s + text[i] + text[i + 1] + text[i + 2] + text[i + 3]; }
                 sum = s;
             } }
         class Main { static void main() { B b = new B(); b.text = new int[16]; b.run(16); print(b.sum); } }",
    );
    assert_eq!(
        checks_of(&p, "B.run"),
        vec![
            ('W', "sum".into()),
            ('R', "range".into()),
            ('R', "text".into())
        ]
    );
}

/// How many loads placement read once before their loop ([`lang::bigfoot`]'s
/// hoisting), in a program whose class `C` has `members`.
fn hoisted(members: &str) -> usize {
    let src = format!(
        "class C {{ int[] a; int f; volatile int v; C o; {members} }}
         class Main {{ static void main() {{ C c = new C(); c.a = new int[4]; c.o = c; print(c.a[0]); }} }}"
    );
    let p = compile(&src).unwrap_or_else(|e| panic!("{e}"));
    let (placed, stats) = lang::bigfoot::place(&p);
    placed.validate().expect("placed program is valid");
    stats.hoisted_loads
}

#[test]
fn a_loop_reads_this_fields_once_before_it_when_nothing_in_it_may_change_them() {
    const LOOP: &str = "int s = 0; for (int i = 0; i < n; i++)";
    for (members, n) in [
        // `a` and `f` in every iteration; `n`'s test runs in the guard first.
        (
            format!("int m(int n) {{ {LOOP} {{ s = s + a[i] + f; }} return s; }}"),
            2,
        ),
        // Read in the test itself.
        (
            "int m() { int s = 0; for (int i = 0; i < f; i++) { s = s + i; } return s; }".into(),
            1,
        ),
        // A quiet call; a store to another field (`a` and `o` are read once).
        (
            format!(
                "static int q(int x) {{ return x * 2; }} int m(int n) {{ {LOOP} {{ s = s + q(a[i]); }} return s; }}"
            ),
            1,
        ),
        (
            format!("int m(int n) {{ {LOOP} {{ s = s + a[i]; o.f = i; }} return s; }}"),
            2,
        ),
        // Read in some iterations only: not every iteration would have read it.
        (
            format!("int m(int n) {{ {LOOP} {{ if (i > 2) {{ s = s + f; }} }} return s; }}"),
            0,
        ),
        // A lock, a volatile field, a store to the field (of any object), a call that
        // writes the field or locks, a transaction bound, an early return.
        (
            format!(
                "int m(int n) {{ {LOOP} {{ synchronized (this) {{ s = s + a[i]; }} }} return s; }}"
            ),
            0,
        ),
        (
            format!("int m(int n) {{ {LOOP} {{ s = s + v; }} return s; }}"),
            0,
        ),
        (
            format!("int m(int n) {{ {LOOP} {{ s = s + a[i]; int w = v; }} return s; }}"),
            0,
        ),
        (
            format!("int m(int n) {{ {LOOP} {{ s = s + f; o.f = s; }} return s; }}"),
            1,
        ),
        // A call that writes the field (only `o` is read once); one that writes
        // another field only (`a` and `o` are).
        (
            format!(
                "static void w(C c) {{ c.a = null; }} int m(int n) {{ {LOOP} {{ s = s + a[i]; w(o); }} return s; }}"
            ),
            1,
        ),
        (
            format!(
                "static void w(C c) {{ c.f = 1; }} int m(int n) {{ {LOOP} {{ s = s + a[i]; w(o); }} return s; }}"
            ),
            2,
        ),
        (
            format!(
                "static void l(C c) {{ synchronized (c) {{ }} }} int m(int n) {{ {LOOP} {{ s = s + a[i]; l(this); }} return s; }}"
            ),
            0,
        ),
        (
            format!("int m(int n) {{ {LOOP} {{ deterministic {{ s = s + a[i]; }} }} return s; }}"),
            0,
        ),
        (
            format!(
                "int m(int n) {{ {LOOP} {{ if (s > 5) {{ return s; }} s = s + a[i]; }} return s; }}"
            ),
            0,
        ),
        // Only `this`: another object may be null, and its load would fail early.
        (
            format!("static int m(C c, int n) {{ {LOOP} {{ s = s + c.a[i]; }} return s; }}"),
            0,
        ),
    ] {
        assert_eq!(hoisted(&members), n, "{members}");
    }
}

#[test]
fn a_loop_that_does_not_run_reads_no_field() {
    // The worker's loop runs `n` times; main replaces `o.a` while it runs. With
    // `n == 0` the worker never reads `a` (the guard's copy of the test keeps the
    // hoisted read out), so there is no race; with `n == 4` it reads `a` in every
    // iteration, and the race is reported, on `a`, in every schedule.
    for (n, racy) in [(0, false), (4, true)] {
        let src = format!(
            "class O {{ int[] a; int n; int s;
                 void r() {{ int t = 0; for (int i = 0; i < n; i++) {{ t = t + a[i]; }} s = t; }} }}
             class Main {{ static void main() {{
                 O o = new O(); o.a = new int[4]; o.n = {n};
                 Thread t = fork o.r();
                 o.a = new int[8];
                 t.join(); print(o.s); }} }}"
        );
        let prog = compile(&src).unwrap_or_else(|e| panic!("{e}"));
        // `n` (the test's) and `a`.
        assert_eq!(lang::bigfoot::place(&prog).1.hoisted_loads, 2);
        for (seed, run) in runs_under_6_seeds(&prog) {
            assert_eq!(run.out.stdout, b"0\n", "n = {n}, seed {seed}");
            let on_a = run
                .warnings
                .iter()
                .filter(|r| r.warning.analysis == "bigfoot")
                .count();
            assert_eq!(on_a > 0, racy, "n = {n}, seed {seed}: {:?}", run.warnings);
        }
    }
}

#[test]
fn a_field_is_read_again_after_anything_that_may_change_what_it_reads() {
    let p = placed(
        "class C { int f; int g; volatile int v;
             static int quiet(int x) { return x * 2; }
             static void writes(C o) { o.g = 1; }
             static void writesF(C o) { o.f = 1; }
             static void locks(C o) { synchronized (o) { } }
             int lock(C o) { int x = o.f; synchronized (o) { } int y = o.f; return x + y; }
             int store(C o, C q) { int x = o.f; q.f = 3; int y = o.f; return x + y; }
             int volatileRead(C o) { int x = o.f; int w = o.v; int y = o.f; return x + y + w; }
             int volatileTwice(C o) { int x = o.v; int y = o.v; return x + y; }
             int reassigned(C o, C q) { int x = o.f; o = q; int y = o.f; return x + y; }
             int writer(C o) { int x = o.f; writesF(o); int y = o.f; return x + y; }
             int otherWriter(C o) { int x = o.f; writes(o); int y = o.f; return x + y; }
             int locker(C o) { int x = o.f; locks(o); int y = o.f; return x + y; }
             int otherField(C o) { int x = o.f; o.g = 1; int y = o.f; return x + y; }
             int quietCall(C o) { int x = o.f; int q = quiet(x); int y = o.f; return x + y + q; }
             int bound(C o) { int x = o.f; deterministic { int y = o.f; x = x + y; } return x; }
         }
         class Main { static void main() { C c = new C(); print(c.lock(c) + c.store(c, c)); } }",
    );
    for (name, field, loads) in [
        ("C.lock", "f", 2),
        ("C.store", "f", 2),
        ("C.volatileRead", "f", 2),
        ("C.volatileTwice", "v", 2),
        ("C.reassigned", "f", 2),
        ("C.writer", "f", 2),
        ("C.otherWriter", "f", 1),
        ("C.locker", "f", 2),
        ("C.otherField", "f", 1),
        ("C.quietCall", "f", 1),
        ("C.bound", "f", 2),
    ] {
        assert_eq!(loads_of(&p, name, "C", field), loads, "{name}");
    }
    // And the placed program runs as written: main reads `o.f` again after joining
    // the thread that set it (property 7 alone would not notice a reuse across the
    // join: both detectors see the same run).
    let src = "
class O { int f; }
class W { O o; W(O o) { this.o = o; } void run() { o.f = 5; } }
class Main { static void main() {
    O o = new O(); int a = o.f;
    Thread t = fork new W(o).run(); t.join();
    int b = o.f; print(a + b); } }";
    let prog = compile(src).unwrap_or_else(|e| panic!("{e}"));
    for tier in [Tier::Interp, Tier::Jit] {
        let run = run_bigfoot(&prog, tier, 1).expect("run");
        assert_eq!(run.out.stdout, b"5\n", "{tier}");
        assert!(run.warnings.is_empty(), "{tier}");
    }
}

#[test]
fn a_race_on_a_field_read_once_is_still_reported() {
    // The worker reads `o.f` twice with nothing between, main writes it unordered:
    // the placed program reads it once, and both detectors still flag `f` (the write
    // races with the one read as it raced with either).
    let src = "
class O { int f; int[] a;
    void r() { int t = f; int u = f + 1; a[0] = t + u; } }
class Main { static void main() {
    O o = new O(); o.a = new int[1];
    Thread t = fork o.r();
    o.f = 7;
    t.join(); print(o.a[0]); } }";
    assert_eq!(loads_of(&placed(src), "O.r", "O", "f"), 1);
    for seed in 1..7 {
        let (stats, races) = bigfoot_stats(src, seed);
        assert!(races > 0, "seed {seed}: {stats}");
    }
}

/// Every corpus program (examples and bugs) that is not heavy.
fn corpus() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut v = Vec::new();
    for dir in ["examples", "bugs"] {
        for e in std::fs::read_dir(root.join(dir)).expect("corpus") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "cj") {
                let text = std::fs::read_to_string(&p).expect("read");
                if !text.lines().any(|l| l.trim() == "//! heavy") {
                    v.push(p);
                }
            }
        }
    }
    v.sort();
    v
}

fn compile_file(p: &PathBuf) -> Arc<Program> {
    compile(&std::fs::read_to_string(p).expect("read")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn corpus_has_precise_checks_and_bigfoot_agrees_with_fasttrack_under_6_seeds() {
    let mut failures = Vec::new();
    for p in corpus() {
        let prog = compile_file(&p);
        for seed in [1, 2, 3, 4, 5, 42] {
            if let Err(e) = bigfoot_agrees_on(&prog, seed, Tier::Interp) {
                failures.push(format!("{}: {e}", p.display()));
            }
        }
        if let Err(e) = bigfoot_agrees_on(&prog, 7, Tier::Jit) {
            failures.push(format!("{}: {e}", p.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn generated_programs_have_precise_checks_and_agree_with_fasttrack() {
    let n: u64 = std::env::var("ORACLE_PROGRAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let mut failures = Vec::new();
    for k in 0..n {
        let cfg = ProgConfig {
            classes: 1 + (k % 3) as u32,
            works: 1 + (k % 2) as u32,
            workers: 1 + (k % 3) as u32,
            stmts: 3 + (k % 4) as u32,
            depth: 1 + (k % 3) as u32,
            barrier: k % 3 == 1,
            deterministic: k.is_multiple_of(2),
            specs: k % 4 != 3,
            error_percent: (k % 3) as u32,
        };
        let src = gen_program_seeded(k * 7919 + 17, &cfg);
        let prog = compile(&src).unwrap_or_else(|e| panic!("{e}"));
        let tier = if k % 4 == 0 { Tier::Jit } else { Tier::Interp };
        if let Err(e) = bigfoot_agrees_on(&prog, k, tier) {
            failures.push(format!("#{k}: {e}\n{src}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The statistics of the `bigfoot` pass of one run.
fn bigfoot_stats(src: &str, seed: u64) -> (serde_json::Value, usize) {
    let prog = compile(src).unwrap_or_else(|e| panic!("{e}"));
    bigfoot_agrees_on(&prog, seed, Tier::Interp).expect("oracles");
    let run = run_bigfoot(&prog, Tier::Interp, seed).expect("run");
    let stats = run.out.report["stats"]["passes"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "bigfoot"))
        .map(|p| p["details"].clone())
        .expect("bigfoot stats");
    let races = run
        .warnings
        .iter()
        .filter(|r| r.warning.analysis == "bigfoot")
        .count();
    (stats, races)
}

const SLICES: &str = "
class W {
    void fill(int[] a, int lo, int hi, int step) {
        for (int i = lo; i < hi; i = i + step) { a[i] = i; }
    }
}
class Main {
    static void main() {
        int[] a = new int[64];
        W w = new W();
        Thread t1 = fork w.fill(a, LO1, HI1, STEP);
        Thread t2 = fork w.fill(a, LO2, HI2, STEP);
        t1.join(); t2.join();
        int s = 0;
        for (int i = 0; i < 64; i++) { s = s + a[i]; }
        print(s);
    }
}";

fn slices(lo1: u32, hi1: u32, lo2: u32, hi2: u32, step: u32) -> String {
    SLICES
        .replace("LO1", &lo1.to_string())
        .replace("HI1", &hi1.to_string())
        .replace("LO2", &lo2.to_string())
        .replace("HI2", &hi2.to_string())
        .replace("STEP", &step.to_string())
}

#[test]
fn whole_array_writes_race_on_the_coarse_cell() {
    let (stats, races) = bigfoot_stats(&slices(0, 64, 0, 64, 1), 1);
    assert!(races > 0);
    assert_eq!(stats["arrays"]["coarse"], 1, "{stats}");
}

#[test]
fn halves_refine_to_intervals_without_a_race() {
    let (stats, races) = bigfoot_stats(&slices(0, 32, 32, 64, 1), 1);
    assert_eq!(races, 0);
    assert_eq!(stats["arrays"]["intervals"], 1, "{stats}");
}

#[test]
fn even_and_odd_refine_to_strides_without_a_race() {
    let (stats, races) = bigfoot_stats(&slices(0, 64, 1, 64, 2), 1);
    assert_eq!(races, 0);
    assert_eq!(stats["arrays"]["stride"], 1, "{stats}");
}

#[test]
fn partial_residue_classes_stay_strided_without_a_race() {
    // Odd elements 1..59 and even 2..62: strides that are not whole residue classes
    // split their classes at their bounds (two cells each), not into elements.
    let (stats, races) = bigfoot_stats(&slices(1, 60, 2, 64, 2), 1);
    assert_eq!(races, 0);
    assert_eq!(stats["arrays"]["stride"], 1, "{stats}");
    assert_eq!(stats["array_cells"], 4, "{stats}");
}

/// A strided loop that runs once checks `a[lo..lo + step:step]`, one element: the
/// runtime once made it the step-1 range `lo..lo + step`, which checked elements
/// never accessed and reported a race on `a[1]` here that `fasttrack` does not.
#[test]
fn a_strided_range_of_one_element_checks_only_that_element() {
    let src = "
class W {
    int[] a;
    int n;
    W(int[] a, int n) { this.a = a; this.n = n; }
    void run() {
        for (int i = 0; i < n; i += 2) { a[i] = 1; }
    }
}
class Main {
    static void main() {
        int[] a = new int[4];
        Thread t = fork new W(a, 2).run();
        a[1] = 5;
        t.join();
        print(a[0] + a[1]);
    }
}";
    let p = placed(src);
    assert!(
        checks_of(&p, "W.run").iter().any(|(_, c)| c == "range"),
        "a range check: {:?}",
        checks_of(&p, "W.run")
    );
    let prog = compile(src).unwrap_or_else(|e| panic!("{e}"));
    for seed in 1..4 {
        for tier in [Tier::Interp, Tier::Jit] {
            bigfoot_agrees_on(&prog, seed, tier).unwrap_or_else(|e| panic!("{tier:?}: {e}"));
        }
        let (stats, races) = bigfoot_stats(src, seed);
        assert_eq!(races, 0, "{stats}");
    }
}

#[test]
fn partial_residue_classes_race_where_they_overlap() {
    for seed in 1..4 {
        let (stats, races) = bigfoot_stats(&slices(1, 40, 3, 64, 2), seed);
        assert!(races > 0, "{stats}");
    }
}

const TWICE: &str = "
class W {
    void fill(int[] a, int lo, int hi, int step) {
        for (int i = lo; i < hi; i = i + step) { a[i] = i; }
    }
    void twice(int[] a, int lo, int hi, int lo2, int hi2) {
        fill(a, lo, hi, 2);
        synchronized (this) { int z = a.length; }
        // Scattered elements of the parity of `lo2` (21 is odd and prime to 64).
        for (int i = lo2; i < hi2; i = i + 2) { a[(i * 21) % 64] = i; }
    }
}
class Main {
    static void main() {
        int[] a = new int[64];
        W w1 = new W();
        W w2 = new W();
        Thread t1 = fork w1.twice(a, 1, 60, 1, 60);
        Thread t2 = fork w2.twice(a, 2, 62, LO, HI);
        t1.join(); t2.join();
        print(a[5] + a[6]);
    }
}";

#[test]
fn element_checks_on_a_fine_shadow_go_straight_to_the_cells() {
    // Scattered elements split the array's cells until one cell per element is
    // cheaper; after that commit each thread checks the fine array's elements at once.
    let (stats, races) = bigfoot_stats(&TWICE.replace("LO", "2").replace("HI", "62"), 1);
    assert_eq!(races, 0, "{stats}");
    assert_eq!(stats["arrays"]["fine"], 1, "{stats}");
    for seed in 1..4 {
        let src = TWICE.replace("LO", "3").replace("HI", "30");
        let (stats, races) = bigfoot_stats(&src, seed);
        assert!(races > 0, "{stats}");
    }
}

#[test]
fn a_barrier_of_some_threads_forgets_nothing_another_thread_may_race_with() {
    // Two workers meet at barriers while main, which is not a party, writes the
    // element worker 0 wrote before them: the barriers must not make worker 0's write
    // dead (only a barrier of every live thread advances the frontier), so bigfoot
    // reports the race as fasttrack does, whenever main's check comes.
    let src = "
class W {
    int[] a;
    Barrier b;
    int id;
    W(int[] a, Barrier b, int id) { this.a = a; this.b = b; this.id = id; }
    void run() {
        for (int i = id * 8; i < id * 8 + 8; i++) { a[i] = 1; }
        for (int k = 0; k < 4; k++) { b.await(); }
    }
}
class Main {
    static void main() {
        int[] a = new int[16];
        Barrier b = new Barrier(2);
        Thread t0 = fork new W(a, b, 0).run();
        Thread t1 = fork new W(a, b, 1).run();
        int s = 0;
        for (int k = 0; k < 50; k++) { s = s + k; }
        a[3] = s;
        t0.join(); t1.join();
        print(a[3]);
    }
}";
    for seed in 1..9 {
        let (stats, races) = bigfoot_stats(src, seed);
        assert!(races > 0, "{stats}");
    }
}

#[test]
fn overlapping_ranges_race_and_agree_with_fasttrack() {
    for seed in 1..4 {
        let (_, races) = bigfoot_stats(&slices(0, 40, 30, 64, 1), seed);
        assert!(races > 0);
    }
}

#[test]
fn checks_and_footprints_are_committed_before_a_fork() {
    // o.f = 1 / a[..] = … then fork: no race; fork first: race.
    let ordered = "
class O { int f; int[] a; void r() { int t = f; int u = a[0]; print(t + u); } }
class Main { static void main() {
    O o = new O(); o.a = new int[4];
    o.f = 1; for (int i = 0; i < 4; i++) { o.a[i] = i; }
    Thread t = fork o.r(); t.join(); } }";
    assert_eq!(bigfoot_stats(ordered, 1).1, 0);
    let racy = "
class O { int f; int[] a; void r() { int t = f; int u = a[0]; print(t + u); } }
class Main { static void main() {
    O o = new O(); int[] a = new int[4]; o.a = a;
    Thread t = fork o.r();
    o.f = 1; for (int i = 0; i < 4; i++) { a[i] = i; }
    t.join(); } }";
    for seed in 1..4 {
        assert!(bigfoot_stats(racy, seed).1 > 0);
    }
}

#[test]
fn a_triangular_pattern_stays_correct() {
    let src = "
class W { void tri(int[] a, int n, int me) {
    for (int i = me; i < n; i = i + 2) { for (int j = 0; j < i; j++) { a[i * n + j] = j; } }
} }
class Main { static void main() {
    int[] a = new int[64]; W w = new W();
    Thread t1 = fork w.tri(a, 8, 0); Thread t2 = fork w.tri(a, 8, 1);
    t1.join(); t2.join(); print(a[63]); } }";
    let (_, races) = bigfoot_stats(src, 1);
    assert_eq!(races, 0);
}

#[test]
fn offline_analysis_refuses_bigfoot() {
    let events = analyses::testing::gen_trace(1, &analyses::testing::GenConfig::default());
    let t = vm::testing::trace_oracles::renumber(&events).expect("trace");
    let e = analyses::offline::analyze(&t, "bigfoot", Default::default()).err();
    assert!(e.is_some_and(|e| e.0.contains("capvm run --tools bigfoot")));
}

#[test]
fn a_footprint_is_committed_before_its_thread_waits_for_a_monitor() {
    // The worker's writes of `a` are one range check, deferred to its next
    // synchronization: taking `l`, which main holds until the end, so the worker
    // never gets it (the run ends in a deadlock). The footprint is committed before
    // the worker waits, as it would be at the `Acquire`, so bigfoot sees the race
    // with main's write of `a[3]` that fasttrack reports; committed only once the
    // worker held `l`, it would never be checked.
    let src = "
class Lock { }
class W {
    int[] a;
    Lock l;
    W(int[] a, Lock l) { this.a = a; this.l = l; }
    void run() {
        for (int i = 0; i < 8; i++) { a[i] = i; }
        synchronized (l) { print(0); }
    }
}
class Main {
    static void main() {
        int[] a = new int[8];
        Lock l = new Lock();
        Lock m = new Lock();
        synchronized (l) {
            Thread t = fork new W(a, l).run();
            for (int k = 0; k < 40; k++) { a[3] = k; synchronized (m) { } }
            t.join();
        }
    }
}";
    let prog = compile(src).unwrap_or_else(|e| panic!("{e}"));
    for (tier, seed) in [(Tier::Interp, 1), (Tier::Interp, 2), (Tier::Jit, 3)] {
        let run = run_bigfoot(&prog, tier, seed).expect("run");
        let err = run.out.error.as_ref().expect("a deadlock");
        assert!(format!("{err:?}").contains("eadlock"), "{err:?}");
        let by = |analysis: &str| {
            run.warnings
                .iter()
                .filter(|r| r.warning.analysis == analysis)
                .count()
        };
        assert!(
            by("fasttrack") > 0,
            "{tier} seed {seed}: fasttrack reports the race"
        );
        assert!(
            by("bigfoot") > 0,
            "{tier} seed {seed}: bigfoot reports it too"
        );
    }
}

const EXPORTS: &str = "
class Vec { double x; double y; double z;
    static double dot(Vec a, Vec b) { return a.x * b.x + a.y * b.y + a.z * b.z; } }
class O { int f; int g; O q;
    static int some(O o, boolean c) { if (c) { return o.f; } return 0; }
    static int reassigns(O o, O p) { if (p.g > 0) { o = p; } return o.f; }
    static int down(O o, int n) { if (n == 0) { return o.f; } return down(o, n - 1) + o.f; }
    static int ping(O o, int n) { int t = o.g; if (n == 0) { return t; } return pong(o, n - 1); }
    static int pong(O o, int n) { return ping(o, n) + o.g; }
    static int locked(O o) { synchronized (o) { return o.f; } }
    static void bump(O o, boolean c) { int t = o.g; if (c) { o.g = t + 1; } }
    void run() { f = 1; } }
class S { Vec v;
    double len2(Vec d) { Vec w = v; return Vec.dot(w, d) + Vec.dot(w, w) + Vec.dot(w, w); } }
class Main { static void main() {
    S s = new S(); s.v = new Vec(); Vec d = new Vec();
    print(s.len2(d));
    O o = new O(); O p = new O();
    print(O.some(o, true) + O.reassigns(o, p) + O.down(o, 2) + O.locked(o) + O.pong(o, 3));
    O.bump(o, true);
    Thread t = fork o.run(); t.join(); } }";

#[test]
fn a_callee_with_no_synchronization_leaves_the_checks_of_its_arguments_to_the_caller() {
    let p = placed_in(EXPORTS, Scope::Program);
    let own = placed_in(EXPORTS, Scope::Method);
    // `dot` reads `a`'s and `b`'s fields on its one path: its callers check them,
    // and `len2`'s three calls on `w` (one object local) need one check of `w`.
    // `len2` leaves `this.v` and `d`'s fields to `main` in turn (whose write of
    // `s.v` covers the read).
    assert_eq!(checks_of(&p, "Vec.dot"), vec![]);
    assert_eq!(checks_of(&p, "S.len2"), vec![('R', "x/y/z".into())]);
    let main = checks_of(&p, "Main.main");
    for c in [('W', "v".into()), ('R', "x/y/z".into())] {
        assert!(main.contains(&c), "{main:?}");
    }
    // Kept where they are: a read on one path only, a parameter assigned, a
    // recursive function (also through another), a synchronized one, a thread's
    // entry (fork, main).
    assert_eq!(checks_of(&p, "O.some"), vec![('R', "f".into())]);
    // (`p.g`, read on every path, is left to `main`.)
    assert_eq!(checks_of(&p, "O.reassigns"), vec![('R', "f".into())]);
    assert!(checks_of(&own, "O.reassigns").contains(&('R', "g".into())));
    for f in ["O.down", "O.ping", "O.pong"] {
        assert_eq!(checks_of(&p, f), checks_of(&own, f), "{f}");
        assert!(!checks_of(&p, f).is_empty(), "{f}");
    }
    assert_eq!(checks_of(&p, "O.locked"), vec![('R', "f".into())]);
    assert_eq!(checks_of(&p, "O.run"), vec![('W', "f".into())]);
    // `bump` reads `g` on every path (left to `main`) and writes it on one (its own
    // write check).
    assert_eq!(checks_of(&p, "O.bump"), vec![('W', "g".into())]);
    let (_, stats) = lang::bigfoot::place(&compile(EXPORTS).expect("compiles"));
    // dot: a.x/y/z, b.x/y/z; len2: this.v and d.x/y/z; reassigns: p.g; bump: o.g.
    assert_eq!(stats.exported_paths, 6 + 4 + 1 + 1);
    // The thesis's placement leaves every check in its method.
    assert_eq!(
        checks_of(&own, "Vec.dot"),
        vec![('R', "x/y/z".into()), ('R', "x/y/z".into())]
    );
}

#[test]
fn a_race_in_a_callee_is_reported_where_the_callee_accessed_the_field() {
    // `add` leaves its read and write of `c.n` to its callers, `run` and `main`, which
    // race on it: reported on `C.n`, at `add`'s line, in every schedule, as
    // `fasttrack` reports it (`runs_under_6_seeds` runs both oracles).
    let src = "
class C { int n;
    static void add(C c, int k) { c.n = c.n + k; } }
class W { C c; W(C c) { this.c = c; } void run() { C.add(c, 1); } }
class Main { static void main() {
    C c = new C(); Thread t = fork new W(c).run(); C.add(c, 2); t.join(); print(c.n > 0); } }";
    let prog = Arc::new(compile(src).unwrap_or_else(|e| panic!("{e}")));
    assert!(checks_of(&placed_in(src, Scope::Program), "C.add").is_empty());
    for (seed, run) in runs_under_6_seeds(&prog) {
        let races: Vec<_> = run
            .warnings
            .iter()
            .filter(|r| r.warning.analysis == "bigfoot")
            .collect();
        assert!(!races.is_empty(), "seed {seed}");
        for r in races {
            let lines: Vec<u32> = r
                .warning
                .accesses
                .iter()
                .map(|a| prog.sites[a.site.0 as usize].line)
                .collect();
            assert_eq!(lines, vec![3, 3], "seed {seed}: {:?}", r.warning);
        }
    }
}
