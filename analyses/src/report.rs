//! Warnings and the report: one model, two renderings (ThreadSanitizer-style text on
//! stderr, and the JSON document of `docs/architecture.md` "Reports").

use std::collections::BTreeMap;

use parking_lot::Mutex;

use crate::ctx::{CtxId, CtxTree};
use crate::env::{Env, LocName};
use crate::event::{Loc, Op, SiteId, Tid};

/// `kind` of `docs/architecture.md` "Reports".
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum WarningKind {
    Race,
    Lockset,
    CapsuleViolation,
    Conflict,
    Serializability,
    Atomicity,
    /// Grits: an access left its location's synchronization discipline.
    Discipline,
}

impl WarningKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WarningKind::Race => "race",
            WarningKind::Lockset => "lockset",
            WarningKind::CapsuleViolation => "capsule-violation",
            WarningKind::Conflict => "conflict",
            WarningKind::Serializability => "serializability",
            WarningKind::Atomicity => "atomicity",
            WarningKind::Discipline => "discipline",
        }
    }
}

/// One access (or operation) involved in a warning.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessInfo {
    pub tid: Tid,
    /// `read`, `write`, `volatile read`, `acquire`, `begin`, … (free text for non-accesses).
    pub op: String,
    pub site: SiteId,
    /// Call stack at the time of the operation.
    pub ctx: CtxId,
    /// 1-based trace line, for offline analysis.
    pub event: Option<u64>,
}

impl AccessInfo {
    pub fn access(tid: Tid, op: Op, site: SiteId, ctx: CtxId) -> Self {
        AccessInfo {
            tid,
            op: op.to_string(),
            site,
            ctx,
            event: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Warning {
    pub kind: WarningKind,
    /// The pass that found it (`fasttrack`, …).
    pub analysis: &'static str,
    pub loc: Option<Loc>,
    /// Earlier access(es) first, the access that triggered detection last.
    pub accesses: Vec<AccessInfo>,
    /// 1-based trace line of the event at which it was detected (offline analysis).
    pub event: Option<u64>,
    /// One line of explanation (e.g. which capsule property broke, the cycle).
    pub message: String,
    /// Extra JSON fields (e.g. `class`, `transactions`).
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl Warning {
    pub fn new(kind: WarningKind, analysis: &'static str) -> Self {
        Warning {
            kind,
            analysis,
            loc: None,
            accesses: Vec::new(),
            event: None,
            message: String::new(),
            extra: BTreeMap::new(),
        }
    }
    /// Folding key: same kind, analysis and pair of sites ⇒ one report; with
    /// `by_location`, same kind, analysis and location ⇒ one report.
    fn fold_key(&self, by_location: bool) -> FoldKey {
        if by_location && let Some(loc) = self.loc {
            let extent = ["range", "group"]
                .iter()
                .find_map(|k| self.extra.get(*k))
                .map(|v| v.to_string())
                .unwrap_or_default();
            return FoldKey::Location(self.kind, self.analysis, loc, extent);
        }
        let loc = if self.accesses.is_empty() {
            self.message.clone()
        } else {
            String::new()
        };
        FoldKey::Sites(
            self.kind,
            self.analysis,
            self.accesses.iter().map(|a| a.site).collect(),
            loc,
        )
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum FoldKey {
    Sites(WarningKind, &'static str, Vec<SiteId>, String),
    /// With the extent a warning names besides its location (`bigfoot`'s element
    /// range or field group, as JSON), if any.
    Location(WarningKind, &'static str, Loc, String),
}

/// A warning as reported, with how many times it was folded.
#[derive(Clone, Debug)]
pub struct Reported {
    pub warning: Warning,
    pub count: u64,
    /// Folded by location (offline analysis) rather than by pair of sites.
    pub by_location: bool,
}

/// Collects warnings from all passes and threads; folds duplicates (keeping the first
/// occurrence, in arrival order, and counting the others). Two warnings are
/// duplicates when they have the same kind, analysis and pair of sites, or, for a
/// reporter made by [`Reporter::by_location`], the same kind, analysis and location
/// and the same extent beside it (`bigfoot`'s element range or field group: a race
/// on elements `1..3` reported after one on element 1 alone names element 2 too, and
/// its location is element 1 all the same); warnings without a location still fold
/// by sites. Folding by location bounds the list by the number of locations (and
/// extents), whatever the sites: a trace file gives every event a site of its own.
#[derive(Default)]
pub struct Reporter {
    inner: Mutex<ReporterInner>,
    by_location: bool,
}

#[derive(Default)]
struct ReporterInner {
    list: Vec<Reported>,
    index: hashbrown::HashMap<FoldKey, usize>,
}

impl Reporter {
    pub fn new() -> Self {
        Self::default()
    }
    /// A reporter that keeps one warning per kind, analysis and location.
    pub fn by_location() -> Self {
        Reporter {
            by_location: true,
            ..Self::default()
        }
    }
    pub fn report(&self, w: Warning) {
        let mut inner = self.inner.lock();
        let key = w.fold_key(self.by_location);
        let by_location = matches!(key, FoldKey::Location(..));
        if let Some(&i) = inner.index.get(&key) {
            inner.list[i].count += 1;
            return;
        }
        let i = inner.list.len();
        inner.index.insert(key, i);
        inner.list.push(Reported {
            warning: w,
            count: 1,
            by_location,
        });
    }
    pub fn is_empty(&self) -> bool {
        self.inner.lock().list.is_empty()
    }
    pub fn snapshot(&self) -> Vec<Reported> {
        self.inner.lock().list.clone()
    }
}

fn stack_lines(env: &dyn Env, ctxs: &CtxTree, site: SiteId, ctx: CtxId) -> Vec<String> {
    let mut out = Vec::new();
    let s = env.site(site);
    out.push(format!(
        "{} ({})",
        s.method.unwrap_or_else(|| "?".into()),
        s.position
    ));
    for f in ctxs.frames(ctx) {
        let cs = env.site(f.call_site);
        if let Some(m) = cs.method {
            out.push(format!("{} ({})", m, cs.position));
        } else if f.call_site.0 != 0 {
            out.push(format!("? ({})", cs.position));
        }
    }
    out
}

/// ThreadSanitizer-style text for one warning.
pub fn render_text(r: &Reported, env: &dyn Env, ctxs: &CtxTree) -> String {
    use std::fmt::Write;
    let w = &r.warning;
    let mut s = String::new();
    let _ = writeln!(s, "==================");
    let what = match w.kind {
        WarningKind::Race => "data race",
        WarningKind::Lockset => "lockset discipline violation",
        WarningKind::CapsuleViolation => "capsule violation",
        WarningKind::Conflict => "determinism conflict",
        WarningKind::Serializability => "external serializability violation",
        WarningKind::Atomicity => "atomicity violation",
        WarningKind::Discipline => "synchronization discipline deviation",
    };
    let loc = w.loc.map(|l| env.loc_name(l));
    match &loc {
        Some(l) => {
            let _ = writeln!(s, "WARNING: {what} on {} (found by {})", l, w.analysis);
        }
        None => {
            let _ = writeln!(s, "WARNING: {what} (found by {})", w.analysis);
        }
    }
    if !w.message.is_empty() {
        let _ = writeln!(s, "  {}", w.message);
    }
    let n = w.accesses.len();
    for (i, a) in w.accesses.iter().enumerate() {
        let role = if n == 2 && i == 0 {
            "Previous"
        } else if n == 2 {
            "Current"
        } else {
            ""
        };
        let ev = a.event.map(|e| format!(" [event {e}]")).unwrap_or_default();
        let _ = writeln!(
            s,
            "  {role}{}{} by thread {}{}:",
            if role.is_empty() { "" } else { " " },
            a.op,
            env.thread_name(a.tid),
            ev
        );
        for (j, line) in stack_lines(env, ctxs, a.site, a.ctx).iter().enumerate() {
            let _ = writeln!(s, "    #{j} {line}");
        }
    }
    if r.count > 1 {
        let at = if r.by_location {
            "on this location"
        } else {
            "at these sites"
        };
        let _ = writeln!(s, "  (reported {} times {at})", r.count);
    }
    s
}

fn loc_json(l: &LocName) -> Vec<(String, serde_json::Value)> {
    let mut v = vec![(
        "location".to_string(),
        serde_json::Value::String(l.name.clone()),
    )];
    if let Some(i) = l.index {
        v.push(("index".into(), i.into()));
    }
    if let Some(o) = &l.object {
        v.push(("object".into(), o.clone().into()));
    }
    v
}

/// The JSON object for one warning.
pub fn warning_json(r: &Reported, env: &dyn Env, ctxs: &CtxTree) -> serde_json::Value {
    let w = &r.warning;
    let mut m = serde_json::Map::new();
    m.insert("kind".into(), w.kind.as_str().into());
    m.insert("analysis".into(), w.analysis.into());
    if let Some(l) = w.loc {
        for (k, v) in loc_json(&env.loc_name(l)) {
            m.insert(k, v);
        }
    }
    if let Some(e) = w.event {
        m.insert("event".into(), e.into());
    }
    if !w.message.is_empty() {
        m.insert("message".into(), w.message.clone().into());
    }
    let accesses: Vec<serde_json::Value> = w
        .accesses
        .iter()
        .map(|a| {
            let site = env.site(a.site);
            let mut o = serde_json::json!({
                "thread": a.tid,
                "thread_name": env.thread_name(a.tid),
                "op": a.op,
                "site": site.position,
                "stack": stack_lines(env, ctxs, a.site, a.ctx),
            });
            if let Some(e) = a.event {
                o["event"] = e.into();
            }
            o
        })
        .collect();
    m.insert("accesses".into(), accesses.into());
    m.insert("count".into(), r.count.into());
    for (k, v) in &w.extra {
        m.insert(k.clone(), v.clone());
    }
    serde_json::Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::CtxId;
    use crate::event::ObjId;

    fn race(slot: u32, sites: (u32, u32)) -> Warning {
        let mut w = Warning::new(WarningKind::Race, "djit");
        w.loc = Some(Loc {
            obj: ObjId(1),
            slot,
        });
        w.accesses = vec![
            AccessInfo::access(0, Op::Write, SiteId(sites.0), CtxId::ROOT),
            AccessInfo::access(1, Op::Write, SiteId(sites.1), CtxId::ROOT),
        ];
        w
    }

    #[test]
    fn folding_by_sites_or_by_location() {
        let warnings = [race(0, (1, 2)), race(0, (3, 4)), race(1, (1, 2))];
        let by_sites = Reporter::new();
        let by_loc = Reporter::by_location();
        for w in &warnings {
            by_sites.report(w.clone());
            by_loc.report(w.clone());
        }
        let counts = |r: &Reporter| -> Vec<(u32, u64)> {
            r.snapshot()
                .iter()
                .map(|r| (r.warning.accesses[0].site.0, r.count))
                .collect()
        };
        assert_eq!(counts(&by_sites), [(1, 2), (3, 1)]);
        assert_eq!(counts(&by_loc), [(1, 2), (1, 1)]);
        let slots: Vec<u32> = by_loc
            .snapshot()
            .iter()
            .filter_map(|r| r.warning.loc.map(|l| l.slot))
            .collect();
        assert_eq!(slots, [0, 1]);
    }

    /// A range warning that starts where an earlier, narrower one does is kept by
    /// location (it names other elements); the same range again folds.
    #[test]
    fn folding_by_location_keeps_wider_ranges() {
        let ranged = |sites: (u32, u32), hi: u32| {
            let mut w = race(1, sites);
            w.extra
                .insert("range".into(), serde_json::json!({"lo": 1, "hi": hi}));
            w
        };
        let by_loc = Reporter::by_location();
        for w in [ranged((1, 2), 2), ranged((3, 4), 3), ranged((5, 6), 3)] {
            by_loc.report(w);
        }
        let kept: Vec<(u32, u64)> = by_loc
            .snapshot()
            .iter()
            .map(|r| (r.warning.accesses[0].site.0, r.count))
            .collect();
        assert_eq!(kept, [(1, 1), (3, 2)]);
    }
}
