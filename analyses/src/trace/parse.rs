//! The STD reader (format: see the module doc of [`super`]).

use std::sync::Arc;

use crate::env::SiteInfo;
use crate::event::{ObjId, OwnedEvent, OwnedKind, SiteId, Spec};

use super::{Normalizer, TOKEN_SITE_BIT, Trace, TraceEnv, TraceError};

fn err(line: usize, message: impl Into<String>) -> TraceError {
    TraceError {
        line,
        message: message.into(),
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && !s
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '|' | '(' | ')' | ','))
}

/// Split `op(a,b)` into `("op", ["a","b"])`; `op` alone has no arguments.
fn split_op(s: &str) -> Result<(&str, Vec<&str>), String> {
    match s.find('(') {
        None => {
            if s.contains(')') {
                return Err(format!("malformed operation '{s}'"));
            }
            Ok((s, Vec::new()))
        }
        Some(open) => {
            let Some(inner) = s[open + 1..].strip_suffix(')') else {
                return Err(format!("malformed operation '{s}' (missing ')')"));
            };
            if inner.contains('(') || inner.contains(')') {
                return Err(format!("malformed operation '{s}'"));
            }
            let args: Vec<&str> = inner.split(',').map(str::trim).collect();
            for a in &args {
                if !valid_name(a) {
                    return Err(format!("empty or malformed argument in '{s}'"));
                }
            }
            Ok((s[..open].trim(), args))
        }
    }
}

fn arity(op: &str, args: &[&str], min: usize, max: usize) -> Result<(), String> {
    if args.len() < min || args.len() > max {
        let want = if min == max {
            format!("{min}")
        } else if max == usize::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(format!(
            "operation '{op}' expects {want} argument{}, got {}",
            if want == "1" { "" } else { "s" },
            args.len()
        ));
    }
    Ok(())
}

fn number<T: std::str::FromStr>(what: &str, s: &str) -> Result<T, String> {
    s.parse::<T>()
        .map_err(|_| format!("{what} must be a number, got '{s}'"))
}

fn spec_of(op: &str, args: &[&str]) -> Result<Spec, String> {
    arity(op, args, 0, 1)?;
    match args.first().copied() {
        None | Some("atomic") => Ok(Spec::Atomic),
        Some("det") | Some("deterministic") => Ok(Spec::Deterministic),
        Some(other) => Err(format!(
            "unknown specification '{other}' (expected 'atomic' or 'det')"
        )),
    }
}

fn opt_obj(env: &mut TraceEnv, s: Option<&&str>) -> Option<ObjId> {
    match s {
        None | Some(&"-") => None,
        Some(n) => Some(env.obj(n)),
    }
}

/// Parse one `OP` column into an event kind (thread names resolved by `env`).
fn parse_kind(env: &mut TraceEnv, op_col: &str) -> Result<OwnedKind, String> {
    let (op, args) = split_op(op_col)?;
    let kind = match op {
        "r" => {
            arity(op, &args, 1, 1)?;
            OwnedKind::Read {
                loc: env.var(args[0]),
            }
        }
        "w" => {
            arity(op, &args, 1, 2)?;
            OwnedKind::Write {
                loc: env.var(args[0]),
                value: opt_obj(env, args.get(1)),
            }
        }
        "vr" => {
            arity(op, &args, 1, 1)?;
            OwnedKind::VolatileRead {
                loc: env.var(args[0]),
            }
        }
        "vw" => {
            arity(op, &args, 1, 2)?;
            OwnedKind::VolatileWrite {
                loc: env.var(args[0]),
                value: opt_obj(env, args.get(1)),
            }
        }
        "acq" => {
            arity(op, &args, 1, 1)?;
            OwnedKind::Acquire {
                lock: env.obj(args[0]),
            }
        }
        "rel" => {
            arity(op, &args, 1, 1)?;
            OwnedKind::Release {
                lock: env.obj(args[0]),
            }
        }
        "fork" => {
            arity(op, &args, 1, usize::MAX)?;
            OwnedKind::Fork {
                child: env.thread(args[0]),
                handed: args[1..].iter().map(|a| env.obj(a)).collect(),
            }
        }
        "join" => {
            arity(op, &args, 1, 1)?;
            match env.known_thread(args[0]) {
                Some(child) => OwnedKind::Join { child },
                None => return Err(format!("join of unknown thread {}", args[0])),
            }
        }
        "begin" => OwnedKind::Begin {
            spec: spec_of(op, &args)?,
        },
        "end" => OwnedKind::End {
            spec: spec_of(op, &args)?,
        },
        "bar_enter" | "bar_exit" => {
            arity(op, &args, 3, 3)?;
            let barrier = env.obj(args[0]);
            let generation = number::<u64>("barrier generation", args[1])?;
            let parties = number::<u32>("barrier parties", args[2])?;
            if op == "bar_enter" {
                OwnedKind::BarrierEnter {
                    barrier,
                    generation,
                    parties,
                }
            } else {
                OwnedKind::BarrierExit {
                    barrier,
                    generation,
                    parties,
                }
            }
        }
        "enter" => {
            arity(op, &args, 1, usize::MAX)?;
            OwnedKind::Enter {
                method: env.method(args[0]),
                receiver: opt_obj(env, args.get(1)),
                args: args.iter().skip(2).map(|a| env.obj(a)).collect(),
            }
        }
        "exit" => {
            arity(op, &args, 1, 2)?;
            OwnedKind::Exit {
                method: env.method(args[0]),
                ret: opt_obj(env, args.get(1)),
            }
        }
        "alloc" => {
            arity(op, &args, 1, 1)?;
            OwnedKind::Alloc {
                obj: env.obj(args[0]),
            }
        }
        "tstart" => {
            arity(op, &args, 0, 0)?;
            OwnedKind::ThreadStart
        }
        "tend" => {
            arity(op, &args, 0, 0)?;
            OwnedKind::ThreadEnd
        }
        "" => return Err("missing operation".to_string()),
        other => return Err(format!("unknown operation '{other}'")),
    };
    Ok(kind)
}

/// `# site N POSITION [METHOD]` and `# capvm-record …` headers; other comments are
/// ignored.
fn parse_comment(env: &mut TraceEnv, line_no: usize, text: &str) -> Result<(), TraceError> {
    let body = text.trim_start_matches('#').trim();
    let mut words = body.split_whitespace();
    match words.next() {
        Some("capvm-record") => env.recorded = true,
        Some("site") => {
            let n = words
                .next()
                .ok_or_else(|| err(line_no, "site header without a number"))?;
            let n: u32 = number("site number", n).map_err(|m| err(line_no, m))?;
            let position = words
                .next()
                .ok_or_else(|| err(line_no, "site header without a position"))?
                .to_string();
            let method = words.next().map(str::to_string);
            env.site_table.insert(n, SiteInfo { position, method });
        }
        _ => {}
    }
    Ok(())
}

/// Reserve the tids of every `T<n>` thread name of the file (event threads and
/// `fork`/`join` arguments), so that names read earlier do not take them. Lines that
/// are malformed are left to the reader proper.
fn reserve_numbered_threads(env: &mut TraceEnv, text: &str) {
    for line in text.split('\n').map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut cols = line.split('|').map(str::trim);
        if let Some(t) = cols.next() {
            env.reserve_numbered(t);
        }
        if let Some(op) = cols.next()
            && let Some(args) = op
                .strip_prefix("fork(")
                .or_else(|| op.strip_prefix("join("))
        {
            let child = args.split([',', ')']).next().unwrap_or("");
            env.reserve_numbered(child.trim());
        }
    }
}

/// Read a trace in RAPID's STD format plus capvm's extension. Never panics; the first
/// malformed line gives an error naming it.
pub fn parse_std(text: &str) -> Result<Trace, TraceError> {
    let mut env = TraceEnv::default();
    let mut norm = Normalizer::new();
    let mut events = Vec::new();
    reserve_numbered_threads(&mut env, text);
    for (i, raw) in text.split('\n').enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            parse_comment(&mut env, line_no, line)?;
            continue;
        }
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        if cols.len() < 2 || cols.len() > 3 {
            return Err(err(
                line_no,
                format!("expected 'THREAD|OP|LOCATION', got '{line}'"),
            ));
        }
        if !valid_name(cols[0]) {
            return Err(err(line_no, format!("malformed thread name '{}'", cols[0])));
        }
        let tid = env.thread(cols[0]);
        let kind = parse_kind(&mut env, cols[1]).map_err(|m| err(line_no, m))?;
        let site = match cols.get(2) {
            // No location: the line number (so every event has a site of its own).
            None | Some(&"") => SiteId(line_no as u32 & !TOKEN_SITE_BIT),
            Some(tok) => match tok.parse::<u32>() {
                Ok(n) if n & TOKEN_SITE_BIT == 0 => SiteId(n),
                _ if valid_name(tok) => env.site_token(tok),
                _ => return Err(err(line_no, format!("malformed location '{tok}'"))),
            },
        };
        let ev = OwnedEvent {
            tid,
            site,
            index: line_no as u64,
            kind,
        };
        let name = |t: u32| env.thread_name(t);
        norm.push_named(ev, &name, &mut events)
            .map_err(|m| err(line_no, m))?;
    }
    norm.finish(&mut events);
    Ok(Trace {
        events,
        env: Arc::new(env),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Loc;

    #[test]
    fn numbered_threads_keep_their_number_whatever_comes_first() {
        let t = parse_std("foo|w(V1)|1\nT0|w(V2)|2\nT1|w(V1)|3\nbar|fork(T2)|4\n").unwrap();
        let tid = |name: &str| t.env.known_thread(name).expect(name);
        assert_eq!((tid("T0"), tid("T1"), tid("T2")), (0, 1, 2));
        assert!(![0, 1, 2].contains(&tid("foo")) && ![0, 1, 2].contains(&tid("bar")));
        for name in ["foo", "T0", "T1", "T2", "bar"] {
            assert_eq!(t.env.thread_name(tid(name)), name);
        }
    }

    #[test]
    fn reads_rapid_lines_and_inserts_thread_events() {
        let t =
            parse_std("T0|w(V1)|12\nT0|fork(T1)|13\n\n# comment\nT1|r(V1)|14\nT0|join(T1)|15\n")
                .unwrap();
        let kinds: Vec<(u32, &str, u64)> = t
            .events
            .iter()
            .map(|e| (e.tid, e.as_event().kind.name(), e.index))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (0, "thread_start", 0),
                (0, "write", 1),
                (0, "fork", 2),
                (1, "thread_start", 0),
                (1, "read", 5),
                (1, "thread_end", 0),
                (0, "join", 6),
                (0, "thread_end", 0),
            ]
        );
        assert_eq!(t.events[1].site, SiteId(12));
        assert_eq!(
            t.events[1].kind,
            OwnedKind::Write {
                loc: Loc {
                    obj: crate::trace::VARS,
                    slot: 0
                },
                value: None
            }
        );
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("T0|foo(x)|1", 1, "unknown operation 'foo'"),
            (
                "T0|w(V1)|1\nT0|rel(L)|2",
                2,
                "release of a lock that is not held",
            ),
            ("T0|join(T9)|1", 1, "join of unknown thread T9"),
            ("T0|acq(L)|1\nT0|acq(L)|2", 2, "not reentrant"),
            ("T0|acq(L)|1\nT1|acq(L)|2", 2, "held by thread T0"),
            ("T0|w(V1,a,b)|1", 1, "expects 1 to 2 arguments"),
            ("T0|w(V1", 1, "missing ')'"),
            ("T0", 1, "expected 'THREAD|OP|LOCATION'"),
            ("T0|end|1", 1, "end without a matching begin"),
            (
                "T0|fork(T1)|1\nT1|r(x)|2\nT0|join(T1)|3\nT1|r(x)|4",
                4,
                "after it was joined",
            ),
            ("T0|r(x)|1\nT1|r(x)|2\nT0|fork(T1)|3", 3, "already exists"),
            ("T0|bar_exit(B,0,2)|1", 1, "did not enter"),
            (
                "T0|bar_enter(B,0,2)|1\nT0|bar_exit(B,0,2)|2",
                2,
                "before all parties",
            ),
            ("T0|exit(m)|1", 1, "method exit"),
            ("T0|bar_enter(B,x,2)|1", 1, "generation must be a number"),
        ];
        for (text, line, msg) in cases {
            let e = parse_std(text)
                .err()
                .unwrap_or_else(|| panic!("{text} parsed"));
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.message.contains(msg), "{text}: {e}");
        }
        let e = parse_std("T0|foo|7").unwrap_err();
        assert_eq!(format!("t.std:{e}"), "t.std:1: unknown operation 'foo'");
    }
}
