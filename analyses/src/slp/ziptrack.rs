//! Exchange with ZipTrack (Kini, Mathur & Viswanathan, ESEC/FSE'18 §5; its README,
//! "Compressing traces" and "Run ZipTrack"): a directory with
//!
//! - `map.shared.txt`: one line per terminal, `INDEX|THREAD,TYPE,TARGET` with TYPE
//!   `R` (read), `W` (write), `L` (acquire), `U` (release), `F` (fork), `J` (join);
//! - `slp.txt`: the grammar as Sequitur prints it, `N -> s1 s2 … ` per rule (every
//!   symbol followed by a space), `&k` terminal `k`, a bare number a rule, rule `0`
//!   the start rule.
//!
//! ZipTrack runs on it with `ZipHB -m DIR/map.shared.txt -t DIR/slp.txt` (and
//! `ZipLockSet`). [`write_dir`] writes capvm's grammar in that form: runs `X^k` become
//! doubling rules (`P1 → X X`, `P2 → P1 P1`, … and the binary digits of `k`), events
//! that are neither accesses nor lock, fork or join operations are left out (they
//! have no happens-before or lockset effect), and traces with volatile accesses or
//! barriers are refused (ZipTrack has no such events). [`read_dir`] reads such a
//! directory back (any rule numbering; no line map: every event is its own line).

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::sync::Arc;

use hashbrown::HashMap;

use crate::env::Env;
use crate::event::{Loc, ObjId, OwnedKind, Tid};
use crate::trace::{ExportedNames, TraceEnv, VARS};

use super::{Grammar, Item, Label, SiteCode, Sym};

pub const MAP_FILE: &str = "map.shared.txt";
pub const SLP_FILE: &str = "slp.txt";

/// Write `g` into `dir` (created if needed) as ZipTrack's input.
pub fn write_dir(g: &Grammar, dir: &Path) -> io::Result<()> {
    let env = &g.env;
    // Terminals: ZipTrack's index, or None (left out).
    let mut map = String::new();
    let mut kept: Vec<Option<u32>> = Vec::with_capacity(g.terminals.len());
    let mut next = 0u32;
    for l in &g.terminals {
        let (ty, target) = match &l.kind {
            OwnedKind::Read { loc } => ("R", env.var_name(*loc)),
            OwnedKind::Write { loc, .. } => ("W", env.var_name(*loc)),
            OwnedKind::Acquire { lock } => ("L", env.obj_label(*lock)),
            OwnedKind::Release { lock } => ("U", env.obj_label(*lock)),
            OwnedKind::Fork { child, .. } => ("F", env.thread_name(*child)),
            OwnedKind::Join { child } => ("J", env.thread_name(*child)),
            OwnedKind::VolatileRead { .. }
            | OwnedKind::VolatileWrite { .. }
            | OwnedKind::BarrierEnter { .. }
            | OwnedKind::BarrierExit { .. } => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "ZipTrack has no volatile accesses or barriers; this trace has some",
                ));
            }
            _ => {
                kept.push(None);
                continue;
            }
        };
        let _ = writeln!(map, "{next}|{},{ty},{target}", env.thread_name(l.tid));
        kept.push(Some(next));
        next += 1;
    }
    // Rules: ZipTrack numbers the start rule 0; ours is last. Empty rules (all their
    // events left out) are dropped from their parents.
    let n = g.rules.len();
    let mut empty = vec![false; n];
    let mut text_rules: Vec<Vec<String>> = Vec::new();
    // Our rule → its ZipTrack symbols (as text, one entry per symbol).
    let root = n - 1;
    let mut zip_index = vec![0usize; n];
    // Doubling rules of runs are appended after the numbered rules.
    let mut extra: Vec<Vec<String>> = Vec::new();
    let base = n; // numbers >= base name doubling rules (renumbered below)
    let mut powers: HashMap<(String, u32), usize> = HashMap::new();
    for (i, rhs) in g.rules.iter().enumerate() {
        let mut syms = Vec::new();
        for it in rhs {
            let s = match it.sym {
                Sym::T(t) => match kept[t as usize] {
                    Some(k) => format!("&{k}"),
                    None => continue,
                },
                Sym::R(r) if empty[r as usize] => continue,
                Sym::R(r) => format!("#{r}"),
            };
            // `count` copies: binary digits over doubling rules.
            let mut k = it.count;
            let mut level = 0u32;
            let mut cur = s.clone();
            while k > 0 {
                if k & 1 == 1 {
                    syms.push(cur.clone());
                }
                k >>= 1;
                if k > 0 {
                    let key = (s.clone(), level);
                    let idx = *powers.entry(key).or_insert_with(|| {
                        extra.push(vec![cur.clone(), cur.clone()]);
                        extra.len() - 1
                    });
                    cur = format!("#{}", base + idx);
                    level += 1;
                }
            }
        }
        if syms.is_empty() && i != root {
            empty[i] = true;
        }
        text_rules.push(syms);
    }
    // Numbering: the start rule 0, then every other rule in order.
    let mut number = 1;
    for (i, z) in zip_index.iter_mut().enumerate() {
        if i == root {
            *z = 0;
        } else {
            *z = number;
            number += 1;
        }
    }
    let extra_base = number;
    let resolve = |s: &str| -> String {
        match s.strip_prefix('#') {
            Some(r) => {
                let r: usize = r.parse().unwrap_or(0);
                if r >= base {
                    (extra_base + r - base).to_string()
                } else {
                    zip_index[r].to_string()
                }
            }
            None => s.to_string(),
        }
    };
    let mut lines: Vec<(usize, String)> = Vec::new();
    for (i, syms) in text_rules.iter().enumerate() {
        if empty[i] {
            continue;
        }
        let mut line = format!("{} -> ", zip_index[i]);
        for s in syms {
            line.push_str(&resolve(s));
            line.push(' ');
        }
        lines.push((zip_index[i], line));
    }
    for (j, syms) in extra.iter().enumerate() {
        let mut line = format!("{} -> ", extra_base + j);
        for s in syms {
            line.push_str(&resolve(s));
            line.push(' ');
        }
        lines.push((extra_base + j, line));
    }
    lines.sort_by_key(|l| l.0);
    let mut slp = String::new();
    for (_, l) in lines {
        slp.push_str(&l);
        slp.push('\n');
    }
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(MAP_FILE), map)?;
    std::fs::write(dir.join(SLP_FILE), slp)
}

/// Read a ZipTrack directory (`map.shared.txt` and `slp.txt`). Errors name the file
/// and line.
pub fn read_dir(dir: &Path) -> Result<Grammar, String> {
    let read = |f: &str| {
        std::fs::read(dir.join(f))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| format!("cannot read {}: {e}", dir.join(f).display()))
    };
    let map = read(MAP_FILE)?;
    let slp = read(SLP_FILE)?;
    let mut names = ExportedNames::default();
    let mut threads: HashMap<String, Tid> = HashMap::new();
    let mut vars: HashMap<String, u32> = HashMap::new();
    let mut locks: HashMap<String, ObjId> = HashMap::new();
    let mut used: Vec<bool> = Vec::new();
    let mut thread = |name: &str, names: &mut ExportedNames| -> Tid {
        if let Some(&t) = threads.get(name) {
            return t;
        }
        let want = name
            .strip_prefix('T')
            .and_then(|d| d.parse::<usize>().ok())
            .filter(|&n| n < 1024 && used.get(n).is_none_or(|u| !u));
        let t = want.unwrap_or_else(|| {
            (1024..)
                .find(|&i| used.get(i).is_none_or(|u| !u))
                .unwrap_or(1024)
        });
        if used.len() <= t {
            used.resize(t + 1, false);
        }
        used[t] = true;
        threads.insert(name.to_string(), t as Tid);
        names.threads.push((t as Tid, name.to_string()));
        t as Tid
    };
    let mut terminals: HashMap<String, u32> = HashMap::new();
    let mut labels: Vec<Label> = Vec::new();
    for (i, line) in map.lines().enumerate() {
        let at = |m: &str| format!("{MAP_FILE}:{}: {m}", i + 1);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (idx, rest) = line
            .split_once('|')
            .ok_or_else(|| at("expected 'INDEX|THREAD,TYPE,TARGET'"))?;
        let parts: Vec<&str> = rest.split(',').map(str::trim).collect();
        let [th, ty, target] = parts[..] else {
            return Err(at("expected 'INDEX|THREAD,TYPE,TARGET'"));
        };
        if th.is_empty() || target.is_empty() {
            return Err(at("empty thread or target"));
        }
        let tid = thread(th, &mut names);
        let mut var = |name: &str, names: &mut ExportedNames| -> Loc {
            let n = vars.len() as u32;
            let slot = *vars.entry(name.to_string()).or_insert_with(|| {
                names.vars.push(name.to_string());
                n
            });
            Loc { obj: VARS, slot }
        };
        let mut lock = |name: &str, names: &mut ExportedNames| -> ObjId {
            *locks.entry(name.to_string()).or_insert_with(|| {
                names.objs.push(name.to_string());
                ObjId(names.objs.len() as u64)
            })
        };
        let kind = match ty {
            "R" => OwnedKind::Read {
                loc: var(target, &mut names),
            },
            "W" => OwnedKind::Write {
                loc: var(target, &mut names),
                value: None,
            },
            "L" => OwnedKind::Acquire {
                lock: lock(target, &mut names),
            },
            "U" => OwnedKind::Release {
                lock: lock(target, &mut names),
            },
            "F" => OwnedKind::Fork {
                child: thread(target, &mut names),
                handed: Vec::new(),
            },
            "J" => OwnedKind::Join {
                child: thread(target, &mut names),
            },
            other => return Err(at(&format!("unknown event type '{other}'"))),
        };
        if terminals
            .insert(idx.trim().to_string(), labels.len() as u32)
            .is_some()
        {
            return Err(at(&format!("terminal {idx} defined twice")));
        }
        labels.push(Label {
            tid,
            site: SiteCode::Line,
            kind,
        });
    }
    // Rules: `N -> s1 s2 …`; other lines are ignored (as ZipTrack does).
    let mut rule_no: HashMap<String, usize> = HashMap::new();
    let mut bodies: Vec<Option<Vec<String>>> = Vec::new();
    let mut line_of: Vec<usize> = Vec::new();
    let mut id = |name: &str, bodies: &mut Vec<Option<Vec<String>>>, line_of: &mut Vec<usize>| {
        let n = rule_no.len();
        *rule_no.entry(name.to_string()).or_insert_with(|| {
            bodies.push(None);
            line_of.push(0);
            n
        })
    };
    let start = id("0", &mut bodies, &mut line_of);
    for (i, line) in slp.lines().enumerate() {
        let Some((lhs, rhs)) = line.split_once(" -> ") else {
            continue;
        };
        let lhs = lhs.trim();
        if lhs.is_empty() || !lhs.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let r = id(lhs, &mut bodies, &mut line_of);
        if bodies[r].is_some() {
            return Err(format!("{SLP_FILE}:{}: rule {lhs} defined twice", i + 1));
        }
        let syms: Vec<String> = rhs.split_whitespace().map(str::to_string).collect();
        for s in &syms {
            if let Some(t) = s.strip_prefix('&') {
                if !terminals.contains_key(t) {
                    return Err(format!("{SLP_FILE}:{}: unknown terminal &{t}", i + 1));
                }
            } else if s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() {
                id(s, &mut bodies, &mut line_of);
            } else {
                return Err(format!("{SLP_FILE}:{}: malformed symbol '{s}'", i + 1));
            }
        }
        line_of[r] = i + 1;
        bodies[r] = Some(syms);
    }
    let names_of: HashMap<usize, String> = rule_no.iter().map(|(k, v)| (*v, k.clone())).collect();
    for (r, b) in bodies.iter().enumerate() {
        if b.is_none() {
            return Err(format!(
                "{SLP_FILE}: rule {} is used but not defined",
                names_of[&r]
            ));
        }
    }
    // Children first (iterative post-order from the start rule); a cycle is an error.
    let n = bodies.len();
    let mut order = vec![usize::MAX; n];
    let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 done
    let mut rules: Vec<Vec<Item>> = Vec::new();
    let mut stack = vec![(start, 0usize)];
    state[start] = 1;
    while let Some((r, i)) = stack.pop() {
        let body = bodies[r].as_deref().unwrap_or(&[]);
        if i < body.len() {
            stack.push((r, i + 1));
            let s = &body[i];
            if s.starts_with('&') {
                continue;
            }
            let c = rule_no[s.as_str()];
            match state[c] {
                0 => {
                    state[c] = 1;
                    stack.push((c, 0));
                }
                1 => {
                    return Err(format!(
                        "{SLP_FILE}:{}: rule {} uses itself (a cycle)",
                        line_of[r], names_of[&r]
                    ));
                }
                _ => {}
            }
            continue;
        }
        state[r] = 2;
        order[r] = rules.len();
        rules.push(
            body.iter()
                .map(|s| match s.strip_prefix('&') {
                    Some(t) => Item {
                        sym: Sym::T(terminals[t]),
                        count: 1,
                    },
                    None => Item {
                        sym: Sym::R(order[rule_no[s.as_str()]] as u32),
                        count: 1,
                    },
                })
                .collect(),
        );
    }
    let env = Arc::new(TraceEnv::from_names(names));
    Grammar::new(env, labels, rules, Vec::new()).map_err(|e| format!("{SLP_FILE}: {e}"))
}
