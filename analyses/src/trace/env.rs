//! [`TraceEnv`]: names of a trace's variables, objects, threads, methods and sites, as
//! the trace itself spells them.

use hashbrown::HashMap;
use parking_lot::RwLock;

use crate::env::{Env, LocName, SiteInfo};
use crate::event::{Loc, MethodId, ObjId, SiteId, Tid};

use super::{VARS, is_token_site};

/// Threads named `T<n>` with `n` below this keep `n` as their tid.
pub(crate) const MAX_NUMBERED_TID: usize = 1024;

/// Names of a trace's ids, as the trace spells them. The reader
/// ([`super::StdReader`]) interns names on its own side and adds each new one here,
/// before it hands over the first event that uses it; the analyses read them (through
/// [`Env`]) while the trace is still being read, possibly from another thread, so
/// the names sit behind a lock that is taken once per name added and once per lookup.
/// Unnamed ids (events built in memory) fall back to `V<slot>`, `o<id>`, `T<tid>`,
/// `m<id>` and the site number.
#[derive(Debug, Default)]
pub struct TraceEnv {
    names: RwLock<Names>,
}

#[derive(Clone, Debug, Default)]
struct Names {
    vars: Vec<String>,
    var_index: HashMap<String, u32>,
    /// `ObjId(k + 1)` is `objs[k]` (locks, barriers, objects share one namespace).
    objs: Vec<String>,
    /// Thread names by tid (`None`: tid unused).
    threads: Vec<Option<String>>,
    thread_index: HashMap<String, Tid>,
    methods: Vec<String>,
    /// Non-numeric location tokens: site `TOKEN_SITE_BIT | k` is `site_tokens[k]`.
    site_tokens: Vec<String>,
    /// `# site N POSITION [METHOD]` headers.
    site_table: HashMap<u32, SiteInfo>,
    /// `# capvm-record v1`: variable names carry the VM's `object.Class.field`.
    recorded: bool,
}

impl Clone for TraceEnv {
    fn clone(&self) -> Self {
        TraceEnv {
            names: RwLock::new(self.names.read().clone()),
        }
    }
}

impl TraceEnv {
    /// Name variable slot `slot` (the reader numbers them densely from 0).
    pub(crate) fn add_var(&self, slot: u32, name: &str) {
        let mut n = self.names.write();
        debug_assert_eq!(n.vars.len(), slot as usize);
        n.vars.push(name.to_string());
        n.var_index.insert(name.to_string(), slot);
    }
    /// Name object `ObjId(k + 1)` (dense from 1).
    pub(crate) fn add_obj(&self, name: &str) {
        self.names.write().objs.push(name.to_string());
    }
    pub(crate) fn add_method(&self, name: &str) {
        self.names.write().methods.push(name.to_string());
    }
    pub(crate) fn add_site_token(&self, tok: &str) {
        self.names.write().site_tokens.push(tok.to_string());
    }
    pub(crate) fn add_thread(&self, tid: Tid, name: &str) {
        let mut n = self.names.write();
        let t = tid as usize;
        if n.threads.len() <= t {
            n.threads.resize(t + 1, None);
        }
        n.threads[t] = Some(name.to_string());
        n.thread_index.insert(name.to_string(), tid);
    }
    pub(crate) fn add_site(&self, site: u32, info: SiteInfo) {
        self.names.write().site_table.insert(site, info);
    }
    pub(crate) fn set_recorded(&self) {
        self.names.write().recorded = true;
    }

    /// Every name, for the `.slp` writer (`crate::slp`).
    pub(crate) fn export(&self) -> ExportedNames {
        let n = self.names.read();
        let mut site_table: Vec<(u32, SiteInfo)> =
            n.site_table.iter().map(|(k, v)| (*k, v.clone())).collect();
        site_table.sort_by_key(|(k, _)| *k);
        ExportedNames {
            threads: n
                .threads
                .iter()
                .enumerate()
                .filter_map(|(t, s)| s.clone().map(|s| (t as Tid, s)))
                .collect(),
            vars: n.vars.clone(),
            objs: n.objs.clone(),
            methods: n.methods.clone(),
            site_tokens: n.site_tokens.clone(),
            site_table,
            recorded: n.recorded,
        }
    }

    /// An env holding exactly `names` (the `.slp` reader).
    pub(crate) fn from_names(e: ExportedNames) -> TraceEnv {
        let mut n = Names {
            var_index: e
                .vars
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), i as u32))
                .collect(),
            vars: e.vars,
            objs: e.objs,
            methods: e.methods,
            site_tokens: e.site_tokens,
            site_table: e.site_table.into_iter().collect(),
            recorded: e.recorded,
            ..Names::default()
        };
        for (t, name) in e.threads {
            let i = t as usize;
            if n.threads.len() <= i {
                n.threads.resize(i + 1, None);
            }
            n.threads[i] = Some(name.clone());
            n.thread_index.insert(name, t);
        }
        TraceEnv {
            names: RwLock::new(n),
        }
    }

    /// The tid of the thread the trace calls `name`, if it has one.
    pub fn known_thread(&self, name: &str) -> Option<Tid> {
        self.names.read().thread_index.get(name).copied()
    }

    /// The trace's name of thread `tid` (`T0`, …).
    pub fn thread_name(&self, tid: Tid) -> String {
        self.names
            .read()
            .threads
            .get(tid as usize)
            .cloned()
            .flatten()
            .unwrap_or_else(|| format!("T{tid}"))
    }

    /// The trace's own name of a location (`V3`, `o17.Node.next`).
    pub fn var_name(&self, loc: Loc) -> String {
        if loc.obj == VARS
            && let Some(n) = self.names.read().vars.get(loc.slot as usize)
        {
            return n.clone();
        }
        if loc.obj == VARS {
            format!("V{}", loc.slot)
        } else {
            format!("o{}.{}", loc.obj.0, loc.slot)
        }
    }

    /// Look up a variable by its trace name.
    pub fn lookup_var(&self, name: &str) -> Option<Loc> {
        self.names
            .read()
            .var_index
            .get(name)
            .map(|&slot| Loc { obj: VARS, slot })
    }

    /// Whether the trace carries the `# capvm-record` header.
    pub fn is_recorded(&self) -> bool {
        self.names.read().recorded
    }
}

/// A copy of a [`TraceEnv`]'s names ([`TraceEnv::export`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExportedNames {
    pub threads: Vec<(Tid, String)>,
    pub vars: Vec<String>,
    pub objs: Vec<String>,
    pub methods: Vec<String>,
    pub site_tokens: Vec<String>,
    pub site_table: Vec<(u32, SiteInfo)>,
    pub recorded: bool,
}

/// `n` of a thread name `T<n>` (at most four digits, below [`MAX_NUMBERED_TID`]).
pub(crate) fn numbered_tid(name: &str) -> Option<usize> {
    name.strip_prefix('T')
        .filter(|d| !d.is_empty() && d.len() <= 4 && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse::<usize>().ok())
        .filter(|&n| n < MAX_NUMBERED_TID)
}

/// Split a recorded name `o17.Node.next` / `o5.int[][3]` / `Main.count` into the VM's
/// [`LocName`] parts.
fn split_recorded(name: &str) -> LocName {
    let (object, rest) = match name.split_once('.') {
        Some((o, rest))
            if o.len() > 1 && o.starts_with('o') && o[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            (Some(o.to_string()), rest)
        }
        _ => (None, name),
    };
    // `ARRAY[][INDEX]`: split at the last `[`; anything else (`int[]`, `int[]]`,
    // `[]`, `x[][-1]`) is a plain name. Only `str` splitting, so any text is safe.
    if let Some(body) = rest.strip_suffix(']')
        && let Some((array, index)) = body.rsplit_once('[')
        && array.len() > 2
        && array.ends_with("[]")
        && !index.is_empty()
        && index.bytes().all(|b| b.is_ascii_digit())
        && let Ok(i) = index.parse::<u64>()
    {
        return LocName {
            name: array.to_string(),
            index: Some(i),
            object,
        };
    }
    LocName {
        name: rest.to_string(),
        index: None,
        object,
    }
}

impl Env for TraceEnv {
    fn site(&self, site: SiteId) -> SiteInfo {
        let n = self.names.read();
        if let Some(info) = n.site_table.get(&site.0) {
            return info.clone();
        }
        let position = if is_token_site(site) {
            n.site_tokens
                .get((site.0 & !super::TOKEN_SITE_BIT) as usize)
                .cloned()
                .unwrap_or_else(|| site.0.to_string())
        } else {
            site.0.to_string()
        };
        SiteInfo {
            position,
            method: None,
        }
    }
    fn method_name(&self, method: MethodId) -> String {
        self.names
            .read()
            .methods
            .get(method.0 as usize)
            .cloned()
            .unwrap_or_else(|| format!("m{}", method.0))
    }
    fn thread_name(&self, tid: Tid) -> String {
        TraceEnv::thread_name(self, tid)
    }
    fn loc_name(&self, loc: Loc) -> LocName {
        let name = self.var_name(loc);
        if self.is_recorded() {
            split_recorded(&name)
        } else {
            LocName {
                name,
                index: None,
                object: None,
            }
        }
    }
    fn obj_label(&self, obj: ObjId) -> String {
        match obj
            .0
            .checked_sub(1)
            .and_then(|k| self.names.read().objs.get(k as usize).cloned())
        {
            Some(n) => n,
            None => format!("o{}", obj.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_names_split_like_the_vm() {
        let l = split_recorded("o17.Node.next");
        assert_eq!(l.name, "Node.next");
        assert_eq!(l.object.as_deref(), Some("o17"));
        let a = split_recorded("o5.int[][3]");
        assert_eq!((a.name.as_str(), a.index), ("int[]", Some(3)));
        let s = split_recorded("Main.count");
        assert_eq!((s.name.as_str(), s.object), ("Main.count", None));
    }

    #[test]
    fn malformed_recorded_names_are_plain_names() {
        for name in [
            "o1.int[]",
            "o1.int[][]",
            "o1.[]",
            "o1.int[]]",
            "o1.int[é]",
            "o1.é]",
            "o1.[][1]",
            "o1.int[][-1]",
            "o1.int[][99999999999999999999999]",
            "]",
            "o1.",
        ] {
            let l = split_recorded(name);
            assert_eq!(l.index, None, "{name}");
            let rest = name.strip_prefix("o1.").unwrap_or(name);
            assert_eq!(l.name, rest, "{name}");
        }
    }
}
