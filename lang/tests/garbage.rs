//! Robustness: arbitrary bytes, random token soup and mutated programs never panic the
//! front end; every error has a position inside its file; every program that does
//! compile passes IR validation.

use lang::ir::SourceFile;

/// xorshift64*: a small deterministic generator (seeded; no dependency needed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Number of cases per test: the default, or `LANG_FUZZ_CASES` for longer local runs.
fn cases(default: usize) -> usize {
    std::env::var("LANG_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Returns true if the text compiled.
fn run(text: String) -> bool {
    let files = vec![SourceFile {
        name: "fuzz.cj".into(),
        text,
    }];
    match lang::compile(files.clone()) {
        Ok(c) => {
            if let Err(e) = c.program.validate() {
                panic!("invalid IR: {e}\nsource:\n{}", files[0].text);
            }
            true
        }
        Err(d) => {
            assert!(!d.is_empty());
            for diag in d.iter() {
                assert!(diag.end <= files[0].text.len() && diag.start <= diag.end);
            }
            let rendered = d.render(&files, false);
            assert!(rendered.contains("error"));
            false
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..cases(2000) {
        let len = rng.below(300);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        assert!(!run(String::from_utf8_lossy(&bytes).into_owned()));
    }
}

const VOCAB: &[&str] = &[
    "class",
    "capsule",
    "static",
    "final",
    "volatile",
    "synchronized",
    "deterministic",
    "atomic",
    "void",
    "int",
    "double",
    "boolean",
    "if",
    "else",
    "while",
    "for",
    "return",
    "break",
    "continue",
    "new",
    "this",
    "null",
    "true",
    "false",
    "fork",
    "print",
    "assert",
    "var",
    "A",
    "B",
    "main",
    "x",
    "y",
    "f",
    "Thread",
    "Barrier",
    "Math",
    "length",
    "join",
    "wait",
    "notify",
    "sqrt",
    "0",
    "1",
    "0x7f",
    "1.5",
    "1e3",
    "9223372036854775808",
    "\"s\"",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ";",
    ",",
    ".",
    "?",
    ":",
    "=",
    "+=",
    ">>>=",
    "++",
    "--",
    "+",
    "-",
    "*",
    "/",
    "%",
    "&",
    "|",
    "^",
    "~",
    "!",
    "&&",
    "||",
    "<<",
    ">>",
    ">>>",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "/*",
    "*/",
    "//",
    "\n",
];

#[test]
fn random_tokens_never_panic() {
    let mut rng = Rng(42);
    for _ in 0..cases(2000) {
        let len = rng.below(80);
        let mut s = String::from(if rng.below(2) == 0 { "class A { " } else { "" });
        for _ in 0..len {
            s.push_str(VOCAB[rng.below(VOCAB.len())]);
            s.push(' ');
        }
        run(s);
    }
}

const SEED_PROGRAM: &str = r#"
capsule class Counter {
    int[] a; static volatile int n = -1; final double d;
    Counter() { a = new int[10]; d = 2.0; }
    synchronized void set(int i, int v) { a[i] += v; n++; }
    int get(int i) { if (i < 0 || i >= a.length) { return -1; } return a[i]; }
}
class Main {
    static void main() {
        Counter c = new Counter();
        Thread t = fork c.set(1, 2);
        int[][] m = new int[3][4];
        for (int i = 0; i < 3; i++) { m[i][i] = i * 2; if (i == 1) continue; }
        synchronized (c) { while (true) { break; } }
        deterministic { print("x", c.get(1), 1.5 / 2, true && false); }
        double r = Math.sqrt(2) + Math.max(1, 2);
        boolean b = c == null ? false : !(r > 1);
        t.join();
        assert(b || true);
    }
}
"#;

#[test]
fn mutated_programs_never_panic() {
    // The unmutated seed compiles.
    let files = vec![SourceFile {
        name: "seed.cj".into(),
        text: SEED_PROGRAM.into(),
    }];
    let c = lang::compile(files).unwrap_or_else(|d| panic!("seed does not compile: {d:?}"));
    c.program.validate().unwrap();

    let n = cases(1500);
    let compiled = mutate(SEED_PROGRAM, n, 7);
    assert!(
        compiled >= n / 15,
        "only {compiled} of {n} mutants compiled"
    );
}

/// Apply `n` random small edits (1–3 word deletions, insertions, swaps or replacements)
/// to `seed` and compile each result; returns how many compiled.
fn mutate(seed: &str, n: usize, rng_seed: u64) -> usize {
    let words: Vec<&str> = seed
        .split_inclusive(|c: char| !c.is_alphanumeric())
        .collect();
    let mut rng = Rng(rng_seed);
    let mut compiled = 0;
    for _ in 0..n {
        let mut w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(w.len());
            match rng.below(4) {
                0 => {
                    w.remove(i);
                }
                1 => w.insert(i, VOCAB[rng.below(VOCAB.len())].to_string()),
                2 => {
                    let j = rng.below(w.len());
                    w.swap(i, j);
                }
                _ => w[i] = VOCAB[rng.below(VOCAB.len())].to_string(),
            }
        }
        if run(w.concat()) {
            compiled += 1;
        }
    }
    compiled
}

#[test]
fn mutated_corpus_examples_never_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/examples");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut paths: Vec<_> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cj"))
        .collect();
    paths.sort();
    for (i, p) in paths.iter().enumerate() {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        mutate(&text, cases(1500) / 15, i as u64 + 1);
    }
}
