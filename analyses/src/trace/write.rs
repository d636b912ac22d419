//! The STD writer (format: see the module doc of [`super`]). Names are deterministic:
//! threads `T<tid>`, locations from [`Env::loc_name`], objects and locks from
//! [`Env::obj_label`], methods from [`Env::method_name`], and the location column is
//! the site number, explained by a `# site` header line before its first use.

use std::io::{self, Write};

use hashbrown::HashSet;

use crate::env::Env;
use crate::event::{Event, EventKind, Loc, ObjId, SiteId, Spec};

use super::is_token_site;

/// Replace characters the format reserves, so every name stays one token.
fn token(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_whitespace() || matches!(c, '|' | '(' | ')' | ',' | '#') {
                '_'
            } else {
                c
            }
        })
        .collect();
    if t.is_empty() { "_".to_string() } else { t }
}

fn loc_text(env: &dyn Env, loc: Loc) -> String {
    let n = env.loc_name(loc);
    let mut s = String::new();
    if let Some(o) = &n.object {
        s.push_str(o);
        s.push('.');
    }
    s.push_str(&n.name);
    if let Some(i) = n.index {
        s.push_str(&format!("[{i}]"));
    }
    token(&s)
}

fn obj_text(env: &dyn Env, o: ObjId) -> String {
    token(&env.obj_label(o))
}

fn opt_obj_text(env: &dyn Env, o: Option<ObjId>) -> String {
    o.map(|o| obj_text(env, o)).unwrap_or_else(|| "-".into())
}

/// The `OP` column of one event.
pub fn op_text(env: &dyn Env, ev: &Event<'_>) -> String {
    use EventKind as K;
    match ev.kind {
        K::Read { loc } => format!("r({})", loc_text(env, loc)),
        K::Write { loc, value: None } => format!("w({})", loc_text(env, loc)),
        K::Write {
            loc,
            value: Some(v),
        } => format!("w({},{})", loc_text(env, loc), obj_text(env, v)),
        K::VolatileRead { loc } => format!("vr({})", loc_text(env, loc)),
        K::VolatileWrite { loc, value: None } => format!("vw({})", loc_text(env, loc)),
        K::VolatileWrite {
            loc,
            value: Some(v),
        } => format!("vw({},{})", loc_text(env, loc), obj_text(env, v)),
        K::Acquire { lock } => format!("acq({})", obj_text(env, lock)),
        K::Release { lock } => format!("rel({})", obj_text(env, lock)),
        K::Fork { child, handed } => {
            let mut s = format!("fork(T{child}");
            for o in handed {
                s.push(',');
                s.push_str(&obj_text(env, *o));
            }
            s.push(')');
            s
        }
        K::Join { child } => format!("join(T{child})"),
        K::BarrierEnter {
            barrier,
            generation,
            parties,
        } => format!(
            "bar_enter({},{generation},{parties})",
            obj_text(env, barrier)
        ),
        K::BarrierExit {
            barrier,
            generation,
            parties,
        } => format!(
            "bar_exit({},{generation},{parties})",
            obj_text(env, barrier)
        ),
        K::Alloc { obj } => format!("alloc({})", obj_text(env, obj)),
        K::Enter {
            method,
            receiver,
            args,
        } => {
            let mut s = format!("enter({}", token(&env.method_name(method)));
            if receiver.is_some() || !args.is_empty() {
                s.push(',');
                s.push_str(&opt_obj_text(env, receiver));
                for a in args {
                    s.push(',');
                    s.push_str(&obj_text(env, *a));
                }
            }
            s.push(')');
            s
        }
        K::Exit { method, ret } => match ret {
            None => format!("exit({})", token(&env.method_name(method))),
            Some(r) => format!(
                "exit({},{})",
                token(&env.method_name(method)),
                obj_text(env, r)
            ),
        },
        K::Begin { spec: Spec::Atomic } => "begin".into(),
        K::Begin {
            spec: Spec::Deterministic,
        } => "begin(det)".into(),
        K::End { spec: Spec::Atomic } => "end".into(),
        K::End {
            spec: Spec::Deterministic,
        } => "end(det)".into(),
        K::ThreadStart => "tstart".into(),
        K::ThreadEnd => "tend".into(),
        // Never written (`TraceWriter::write_event` skips checks); a comment if asked.
        K::Check { loc, op, .. } => format!("# check {op} {}", loc_text(env, loc)),
    }
}

/// Writes events as STD lines (plus `# site` headers) to `out`. Not synchronized: the
/// `record` pass keeps it behind a mutex.
pub struct StdWriter<W: Write> {
    out: W,
    sites_written: HashSet<SiteId>,
    /// Lines written so far (the next line's number is `lines + 1`).
    lines: u64,
}

impl<W: Write> StdWriter<W> {
    /// Starts with the `# capvm-record v1` header.
    pub fn new(mut out: W) -> io::Result<Self> {
        writeln!(out, "# capvm-record v1")?;
        Ok(StdWriter {
            out,
            sites_written: HashSet::new(),
            lines: 1,
        })
    }

    /// Write one event (preceded by its site's header the first time); returns the
    /// event's line number.
    pub fn write_event(&mut self, env: &dyn Env, ev: &Event<'_>) -> io::Result<u64> {
        if matches!(ev.kind, EventKind::Check { .. }) {
            // BigFoot checks are not part of the trace: the trace has the accesses
            // (placement is redone whenever the program is compiled).
            return Ok(self.lines);
        }
        let site_col = if is_token_site(ev.site) {
            token(&env.site(ev.site).position)
        } else {
            if ev.site.0 != 0 && self.sites_written.insert(ev.site) {
                let info = env.site(ev.site);
                if info.position != ev.site.0.to_string() || info.method.is_some() {
                    write!(self.out, "# site {} {}", ev.site.0, token(&info.position))?;
                    if let Some(m) = &info.method {
                        write!(self.out, " {}", token(m))?;
                    }
                    writeln!(self.out)?;
                    self.lines += 1;
                }
            }
            ev.site.0.to_string()
        };
        writeln!(self.out, "T{}|{}|{}", ev.tid, op_text(env, ev), site_col)?;
        self.lines += 1;
        Ok(self.lines)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}
