//! A generator of well-typed, always-terminating CapJava programs for differential
//! testing and fuzzing (feature `testing`), driven by [`arbitrary::Unstructured`].
//!
//! Shape: `classes` classes `C0…` with int/double/boolean/volatile/final/static fields,
//! an `int[8]` array and a same-class `peer` reference; each has a constructor, `work`
//! methods (void, one int parameter) and a `get` method (int). `Main` has static
//! fields (one volatile), `workers` static worker methods taking one object of every
//! class, and `main`, which builds the objects, optionally a `Barrier` for all the
//! workers (and main, when the workers await twice), forks every worker (some through `fork o.work(…)`), joins every thread,
//! optionally inside a `deterministic` block, and prints.
//!
//! Well-typed by construction: expressions are generated per type, every local is
//! declared at the top of its method, loop variables have unique names. Terminating
//! by construction: loops are `for` loops with constant trip counts, methods of the
//! classes call nothing, workers call only class methods, `main` calls nothing but
//! workers and class methods. Synchronized blocks nest in increasing object order and
//! calls happen only while no monitor is held, so lock-order deadlocks cannot happen;
//! every worker awaits the barrier the same number of times, outside any monitor.
//! Runtime errors stay possible (rarely: unguarded division, out-of-bounds index,
//! `null` peer).

use arbitrary::{Result, Unstructured};
use std::fmt::Write as _;

/// Sizes of generated programs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgConfig {
    pub classes: u32,
    pub works: u32,
    pub workers: u32,
    /// Statements per method body (top level).
    pub stmts: u32,
    /// Nesting depth of statements.
    pub depth: u32,
    pub barrier: bool,
    pub deterministic: bool,
    /// Allow `capsule` classes and `atomic` methods/blocks.
    pub specs: bool,
    /// Percent chance of an operation that can fail at run time, where one is possible.
    pub error_percent: u32,
}

impl Default for ProgConfig {
    fn default() -> Self {
        ProgConfig {
            classes: 2,
            works: 2,
            workers: 2,
            stmts: 5,
            depth: 2,
            barrier: true,
            deterministic: true,
            specs: true,
            error_percent: 2,
        }
    }
}

impl<'a> arbitrary::Arbitrary<'a> for ProgConfig {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(ProgConfig {
            classes: u.int_in_range(1..=3)?,
            works: u.int_in_range(1..=3)?,
            workers: u.int_in_range(0..=3)?,
            stmts: u.int_in_range(1..=7)?,
            depth: u.int_in_range(0..=3)?,
            barrier: u.arbitrary()?,
            deterministic: u.arbitrary()?,
            specs: u.arbitrary()?,
            error_percent: u.int_in_range(0..=5)?,
        })
    }
}

/// A program (one source file's text) from fuzzer bytes: the configuration, then the
/// program's choices, are read from `data` (exhausted data reads as zeros, so every
/// input gives a program).
pub fn gen_program_from_bytes(data: &[u8]) -> String {
    let mut u = Unstructured::new(data);
    let cfg: ProgConfig = u.arbitrary().unwrap_or_default();
    gen_program(&mut u, &cfg)
}

/// A program from a seed (deterministic): `cfg` and 4 KiB of splitmix64 bytes.
pub fn gen_program_seeded(seed: u64, cfg: &ProgConfig) -> String {
    let mut state = seed;
    let mut bytes = Vec::with_capacity(4096);
    while bytes.len() < 4096 {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        bytes.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    gen_program(&mut Unstructured::new(&bytes), cfg)
}

/// A program from `u` under `cfg` (never fails: exhausted input gives defaults).
pub fn gen_program(u: &mut Unstructured<'_>, cfg: &ProgConfig) -> String {
    let mut g = Gen {
        u,
        cfg: cfg.clone(),
        out: String::new(),
        loops: 0,
    };
    g.program();
    g.out
}

/// What the current method can see.
#[derive(Clone)]
struct Scope {
    /// Object references: (expression, class index).
    objs: Vec<(String, u32)>,
    /// Int loop variables in scope.
    ints: Vec<String>,
    /// Calls to class methods allowed (workers and `main`, while no monitor is held).
    calls: bool,
    /// Index of the highest object whose monitor is held (lock order), if any.
    held: Option<usize>,
    /// Inside the class `Ci` (for its static `s`).
    class: Option<u32>,
}

struct Gen<'u, 'a> {
    u: &'u mut Unstructured<'a>,
    cfg: ProgConfig,
    out: String,
    loops: u32,
}

impl Gen<'_, '_> {
    fn pick(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        self.u.choose_index(n).unwrap_or(0)
    }
    fn chance(&mut self, percent: u32) -> bool {
        self.u.ratio(percent.min(100), 100).unwrap_or(false)
    }
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        self.u.int_in_range(lo..=hi).unwrap_or(lo)
    }
    fn risky(&mut self) -> bool {
        let p = self.cfg.error_percent;
        p > 0 && self.chance(p)
    }

    fn program(&mut self) {
        let k = self.cfg.classes.max(1);
        for c in 0..k {
            self.class(c);
        }
        self.main_class();
    }

    fn class(&mut self, c: u32) {
        let capsule = self.cfg.specs && self.chance(25);
        let vol = if self.chance(50) { "volatile " } else { "" };
        let s0 = self.range(0, 9);
        let _ = writeln!(
            self.out,
            "{}class C{c} {{\n    int a;\n    double d;\n    boolean b;\n    {vol}int v;\n    final int k;\n    int[] arr;\n    C{c} peer;\n    static int s = {};\n",
            if capsule { "capsule " } else { "" },
            s0
        );
        let _ = writeln!(
            self.out,
            "    C{c}(int x) {{\n        k = x;\n        a = x * 2;\n        d = 0.5;\n        arr = new int[8];\n    }}\n"
        );
        let scope = Scope {
            objs: vec![("this".into(), c)],
            ints: vec!["p".into()],
            calls: false,
            held: None,
            class: Some(c),
        };
        for w in 0..self.cfg.works.max(1) {
            let mut mods = String::new();
            if self.chance(30) {
                mods.push_str("synchronized ");
            }
            if self.cfg.specs && self.chance(15) {
                mods.push_str("atomic ");
            }
            let _ = writeln!(self.out, "    {mods}void work{w}(int p) {{");
            self.body(&scope, 2);
            // A call on `this` (inside a capsule's call: a nested call on it).
            if self.chance(40) {
                self.out.push_str("        a = a + get(p);\n");
            }
            self.out.push_str("    }\n\n");
        }
        let sync = if self.chance(30) { "synchronized " } else { "" };
        let _ = writeln!(self.out, "    {sync}int get(int p) {{");
        self.body(&scope, 2);
        let e = self.int_expr(&scope, 2);
        let _ = writeln!(self.out, "        return {e};\n    }}\n}}\n");
    }

    fn main_class(&mut self) {
        let k = self.cfg.classes.max(1);
        let workers = self.cfg.workers;
        let barrier = self.cfg.barrier && workers > 0;
        let awaits = if barrier { self.range(1, 2) } else { 0 };
        self.out
            .push_str("class Main {\n    static int g;\n    static volatile int flag;\n    static double h;\n    static Barrier bar;\n\n");
        let params: Vec<String> = (0..k).map(|c| format!("C{c} o{c}")).collect();
        let worker_scope = Scope {
            objs: (0..k).map(|c| (format!("o{c}"), c)).collect(),
            ints: vec!["id".into()],
            calls: true,
            held: None,
            class: None,
        };
        for w in 0..workers {
            let _ = writeln!(
                self.out,
                "    static void worker{w}({}, int id) {{",
                params.join(", ")
            );
            self.locals(2);
            for i in 0..=awaits {
                if i > 0 {
                    self.out.push_str("        Main.bar.await();\n");
                }
                let n = self.range(1, self.cfg.stmts.max(1));
                for _ in 0..n {
                    self.stmt(&worker_scope, 2, self.cfg.depth);
                }
            }
            self.out.push_str("    }\n\n");
        }
        self.out.push_str("    static void main() {\n");
        self.locals(2);
        for c in 0..k {
            let v = self.range(0, 20);
            let _ = writeln!(self.out, "        C{c} o{c} = new C{c}({v});");
        }
        // With two awaits per worker, main is a party too (then the parties are all
        // the live threads: BigFoot's frontier advances at every episode).
        let main_party = barrier && awaits == 2;
        if barrier {
            let parties = workers + u32::from(main_party);
            let _ = writeln!(self.out, "        Main.bar = new Barrier({parties});");
        }
        let mut main_scope = worker_scope.clone();
        main_scope.ints = vec!["x0".into()];
        let n = self.range(0, self.cfg.stmts);
        for _ in 0..n {
            self.stmt(&main_scope, 2, self.cfg.depth);
        }
        // Extra threads running class methods (never with a barrier: they do not await).
        let extra = if barrier { 0 } else { self.range(0, 2) };
        let det = self.cfg.deterministic && self.chance(50);
        let ind = if det { "            " } else { "        " };
        if det {
            self.out.push_str("        deterministic {\n");
        }
        let args: Vec<String> = (0..k).map(|c| format!("o{c}")).collect();
        for w in 0..workers {
            let _ = writeln!(
                self.out,
                "{ind}Thread t{w} = fork Main.worker{w}({}, {w});",
                args.join(", ")
            );
        }
        for e in 0..extra {
            let c = self.range(0, k - 1);
            let m = self.range(0, self.cfg.works.max(1) - 1);
            let _ = writeln!(self.out, "{ind}Thread u{e} = fork o{c}.work{m}({e});");
        }
        if !det && self.chance(50) {
            // Main races with the workers.
            for _ in 0..self.range(1, 3) {
                self.stmt(&main_scope, 2, 1);
            }
        }
        if main_party {
            for _ in 0..awaits {
                let _ = writeln!(self.out, "{ind}Main.bar.await();");
            }
        }
        for w in 0..workers {
            let _ = writeln!(self.out, "{ind}t{w}.join();");
        }
        for e in 0..extra {
            let _ = writeln!(self.out, "{ind}u{e}.join();");
        }
        if det {
            self.out.push_str("        }\n");
        }
        for _ in 0..self.range(0, 3) {
            self.stmt(&main_scope, 2, self.cfg.depth.min(1));
        }
        let mut out = vec!["\"end\"".to_string(), "x0".into(), "y0".into(), "z0".into()];
        for c in 0..k {
            out.push(format!("o{c}.a"));
            out.push(format!("o{c}.arr[3]"));
        }
        out.push("Main.g".into());
        let _ = writeln!(self.out, "        print({});\n    }}\n}}", out.join(", "));
    }

    fn locals(&mut self, ind: usize) {
        let pad = "    ".repeat(ind);
        let x = self.range(0, 9);
        let _ = writeln!(
            self.out,
            "{pad}int x0 = {x};\n{pad}double y0 = 1.5;\n{pad}boolean z0 = false;"
        );
    }

    fn body(&mut self, scope: &Scope, ind: usize) {
        self.locals(ind);
        let n = self.range(1, self.cfg.stmts.max(1));
        for _ in 0..n {
            self.stmt(scope, ind, self.cfg.depth);
        }
    }

    fn obj(&mut self, scope: &Scope) -> (String, u32, usize) {
        let i = self.pick(scope.objs.len());
        let (e, c) = scope.objs[i].clone();
        (e, c, i)
    }

    fn stmt(&mut self, scope: &Scope, ind: usize, depth: u32) {
        let pad = "    ".repeat(ind);
        let choice = self.pick(if depth > 0 { 17 } else { 12 });
        let line = match choice {
            0 => format!("x0 = {};", self.int_expr(scope, 2)),
            1 => format!("y0 = {};", self.dbl_expr(scope, 2)),
            2 => format!("z0 = {};", self.bool_expr(scope, 2)),
            3 => {
                let (o, _, _) = self.obj(scope);
                let f = ["a", "v"][self.pick(2)];
                let op = ["=", "+=", "-=", "^="][self.pick(4)];
                format!("{o}.{f} {op} {};", self.int_expr(scope, 2))
            }
            4 => {
                let (o, _, _) = self.obj(scope);
                format!("{o}.d = {};", self.dbl_expr(scope, 1))
            }
            5 => {
                let (o, _, _) = self.obj(scope);
                format!("{o}.b = {};", self.bool_expr(scope, 1))
            }
            6 => {
                let (o, _, _) = self.obj(scope);
                let idx = self.index(scope, 1);
                // Compound assignments read the element first (read-write pairs).
                let op = ["=", "+=", "^="][self.pick(3)];
                format!("{o}.arr[{idx}] {op} {};", self.int_expr(scope, 1))
            }
            7 => {
                let target = match scope.class {
                    Some(c) if self.chance(50) => format!("C{c}.s"),
                    _ => ["Main.g", "Main.flag"][self.pick(2)].to_string(),
                };
                format!("{target} = {};", self.int_expr(scope, 1))
            }
            8 => {
                let (o, _, _) = self.obj(scope);
                match self.pick(3) {
                    0 => format!("{o}.peer = {o};"),
                    1 => format!("{o}.peer = null;"),
                    _ => format!("{o}.arr = new int[8];"),
                }
            }
            9 => {
                let e1 = self.int_expr(scope, 1);
                let e2 = self.dbl_expr(scope, 1);
                let e3 = self.bool_expr(scope, 1);
                format!("print(\"p\", {e1}, {e2}, {e3});")
            }
            10 => ["x0++;", "x0--;", "Main.h = Main.h + y0;"][self.pick(3)].to_string(),
            11 if scope.calls && scope.held.is_none() => {
                let (o, _, _) = self.obj(scope);
                let w = self.range(0, self.cfg.works.max(1) - 1);
                if self.chance(30) {
                    format!("x0 = x0 + {o}.get({});", self.int_expr(scope, 1))
                } else {
                    format!("{o}.work{w}({});", self.int_expr(scope, 1))
                }
            }
            11 => format!("assert({} || true);", self.bool_expr(scope, 1)),
            12 => {
                let c = self.bool_expr(scope, 2);
                let _ = writeln!(self.out, "{pad}if ({c}) {{");
                self.block(scope, ind + 1, depth - 1);
                if self.chance(50) {
                    let _ = writeln!(self.out, "{pad}}} else {{");
                    self.block(scope, ind + 1, depth - 1);
                }
                "}".into()
            }
            13 => {
                let i = format!("i{}", self.loops);
                self.loops += 1;
                let n = self.range(0, 4);
                let mut inner = scope.clone();
                inner.ints.push(i.clone());
                // Three shapes: counting up; counting down, with an access at the
                // index; a second exit test that reads at the index (both exit tests
                // in the iteration that leaves, as insertion sort's inner loop).
                match self.pick(3) {
                    0 => {
                        let _ = writeln!(self.out, "{pad}for (int {i} = 0; {i} < {n}; {i}++) {{");
                        self.block(&inner, ind + 1, depth - 1);
                        "}".into()
                    }
                    1 => {
                        let (o, _, _) = self.obj(scope);
                        let _ = writeln!(
                            self.out,
                            "{pad}for (int {i} = {n} - 1; {i} >= 0; {i}--) {{\n{pad}    {o}.arr[{i} + 1] = {o}.arr[{i}] + 1;"
                        );
                        self.block(&inner, ind + 1, depth - 1);
                        "}".into()
                    }
                    _ => {
                        let (o, _, _) = self.obj(scope);
                        let c = self.range(0, 3);
                        let _ = writeln!(
                            self.out,
                            "{pad}{{ int {i} = 0;\n{pad}while ({i} < {n} && {o}.arr[{i}] != {c}) {{"
                        );
                        self.block(&inner, ind + 1, depth - 1);
                        let _ = writeln!(
                            self.out,
                            "{pad}    {o}.arr[{i} + 1] = {i};\n{pad}    {i}++;"
                        );
                        "} }".into()
                    }
                }
            }
            14 => {
                // Lock order: only objects after the highest one held.
                let start = scope.held.map_or(0, |h| h + 1);
                if start >= scope.objs.len() {
                    return self.stmt(scope, ind, 0);
                }
                let i = start + self.pick(scope.objs.len() - start);
                let o = scope.objs[i].0.clone();
                let _ = writeln!(self.out, "{pad}synchronized ({o}) {{");
                let mut inner = scope.clone();
                inner.held = Some(i);
                inner.calls = false;
                self.block(&inner, ind + 1, depth - 1);
                if self.chance(20) {
                    let _ = writeln!(self.out, "{pad}    {o}.notifyAll();");
                }
                "}".into()
            }
            15 if self.cfg.specs => {
                let _ = writeln!(self.out, "{pad}atomic {{");
                self.block(scope, ind + 1, depth - 1);
                "}".into()
            }
            _ => {
                let (o, _, _) = self.obj(scope);
                format!("Main.flag = {o}.k;")
            }
        };
        let _ = writeln!(self.out, "{pad}{line}");
    }

    fn block(&mut self, scope: &Scope, ind: usize, depth: u32) {
        let n = self.range(1, 3);
        for _ in 0..n {
            self.stmt(scope, ind, depth);
        }
    }

    /// An array index of an expression of `depth`: guarded (`e & 7`) unless a risky
    /// one is drawn.
    fn index(&mut self, scope: &Scope, depth: u32) -> String {
        let e = self.int_expr(scope, depth);
        if self.risky() {
            e
        } else {
            format!("({e}) & 7")
        }
    }

    fn int_expr(&mut self, scope: &Scope, depth: u32) -> String {
        let n = if depth == 0 { 6 } else { 16 };
        match self.pick(n) {
            0 => format!("{}", self.range(0, 100)),
            1 => "x0".into(),
            2 => {
                let i = self.pick(scope.ints.len());
                scope.ints[i].clone()
            }
            3 => {
                let (o, _, _) = self.obj(scope);
                let f = ["a", "v", "k"][self.pick(3)];
                format!("{o}.{f}")
            }
            4 => match scope.class {
                Some(c) => format!("C{c}.s"),
                None => ["Main.g", "Main.flag"][self.pick(2)].into(),
            },
            5 => {
                let (o, _, _) = self.obj(scope);
                if self.chance(20) {
                    format!("{o}.arr.length")
                } else {
                    format!("{o}.arr[{}]", self.range(0, 7))
                }
            }
            6 => {
                let (o, _, _) = self.obj(scope);
                let idx = self.index(scope, depth - 1);
                format!("{o}.arr[{idx}]")
            }
            7..=9 => {
                let op = ["+", "-", "*", "&", "|", "^", "<<", ">>", ">>>"][self.pick(9)];
                let a = self.int_expr(scope, depth - 1);
                let b = self.int_expr(scope, depth - 1);
                format!("({a} {op} {b})")
            }
            10 => {
                let op = ["/", "%"][self.pick(2)];
                let a = self.int_expr(scope, depth - 1);
                let b = self.int_expr(scope, depth - 1);
                if self.risky() {
                    format!("({a} {op} {b})")
                } else {
                    format!("({a} {op} (({b}) | 1))")
                }
            }
            11 => format!("((int) {})", self.dbl_expr(scope, depth - 1)),
            12 => {
                let c = self.bool_expr(scope, depth - 1);
                let a = self.int_expr(scope, depth - 1);
                let b = self.int_expr(scope, depth - 1);
                format!("({c} ? {a} : {b})")
            }
            13 => {
                let (o, _, _) = self.obj(scope);
                if self.risky() {
                    format!("{o}.peer.a")
                } else {
                    format!("({o}.peer == null ? 0 : {o}.peer.a)")
                }
            }
            14 => format!("Math.max({}, Thread.id())", self.int_expr(scope, depth - 1)),
            _ => format!("(-({}))", self.int_expr(scope, depth - 1)),
        }
    }

    fn dbl_expr(&mut self, scope: &Scope, depth: u32) -> String {
        let n = if depth == 0 { 4 } else { 8 };
        match self.pick(n) {
            0 => format!("{}.25", self.range(0, 9)),
            1 => "y0".into(),
            2 => {
                let (o, _, _) = self.obj(scope);
                format!("{o}.d")
            }
            3 => "Main.h".into(),
            4 | 5 => {
                let op = ["+", "-", "*", "/"][self.pick(4)];
                let a = self.dbl_expr(scope, depth - 1);
                let b = self.dbl_expr(scope, depth - 1);
                format!("({a} {op} {b})")
            }
            6 => format!("((double) {})", self.int_expr(scope, depth - 1)),
            _ => {
                let f = ["sqrt", "abs", "floor"][self.pick(3)];
                format!("Math.{f}({})", self.dbl_expr(scope, depth - 1))
            }
        }
    }

    fn bool_expr(&mut self, scope: &Scope, depth: u32) -> String {
        let n = if depth == 0 { 3 } else { 8 };
        match self.pick(n) {
            0 => ["true", "false"][self.pick(2)].into(),
            1 => "z0".into(),
            2 => {
                let (o, _, _) = self.obj(scope);
                format!("{o}.b")
            }
            3 | 4 => {
                let op = ["<", "<=", "==", "!=", ">", ">="][self.pick(6)];
                let a = self.int_expr(scope, depth - 1);
                let b = self.int_expr(scope, depth - 1);
                format!("({a} {op} {b})")
            }
            5 => {
                let a = self.dbl_expr(scope, depth - 1);
                let b = self.dbl_expr(scope, depth - 1);
                format!("({a} < {b})")
            }
            6 => format!("!{}", self.bool_expr(scope, depth - 1)),
            _ => {
                let op = ["&&", "||"][self.pick(2)];
                let a = self.bool_expr(scope, depth - 1);
                let b = self.bool_expr(scope, depth - 1);
                format!("({a} {op} {b})")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::SourceFile;

    fn compiles(src: &str) -> std::result::Result<(), String> {
        crate::compile(vec![SourceFile {
            name: "gen.cj".into(),
            text: src.to_string(),
        }])
        .map(|_| ())
        .map_err(|d| format!("{d:?}\n{src}"))
    }

    #[test]
    fn seeded_programs_compile() {
        let cfgs = [
            ProgConfig::default(),
            ProgConfig {
                classes: 3,
                workers: 3,
                depth: 3,
                stmts: 7,
                ..ProgConfig::default()
            },
            ProgConfig {
                classes: 1,
                workers: 0,
                barrier: false,
                specs: false,
                ..ProgConfig::default()
            },
        ];
        for (k, cfg) in cfgs.iter().enumerate() {
            for seed in 0..150 {
                let src = gen_program_seeded(seed * 31 + k as u64, cfg);
                if let Err(e) = compiles(&src) {
                    panic!("config {k} seed {seed}: {e}");
                }
            }
        }
    }

    #[test]
    fn programs_from_bytes_compile() {
        for n in 0..200u32 {
            let bytes: Vec<u8> = (0..n * 7).map(|i| (i * 131 + n) as u8).collect();
            let src = gen_program_from_bytes(&bytes);
            if let Err(e) = compiles(&src) {
                panic!("input {n}: {e}");
            }
        }
    }
}
