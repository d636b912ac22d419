//! [`TraceEnv`]: names of a trace's variables, objects, threads, methods and sites, as
//! the trace itself spells them.

use hashbrown::HashMap;

use crate::env::{Env, LocName, SiteInfo};
use crate::event::{Loc, MethodId, ObjId, SiteId, Tid};

use super::{VARS, is_token_site};

/// Threads named `T<n>` with `n` below this keep `n` as their tid.
const MAX_NUMBERED_TID: usize = 1024;

/// Names interned while reading a trace. Unnamed ids (events built in memory) fall back
/// to `V<slot>`, `o<id>`, `T<tid>`, `m<id>` and the site number.
#[derive(Clone, Debug, Default)]
pub struct TraceEnv {
    pub(crate) vars: Vec<String>,
    pub(crate) var_index: HashMap<String, u32>,
    /// `ObjId(k + 1)` is `objs[k]` (locks, barriers, objects share one namespace).
    pub(crate) objs: Vec<String>,
    pub(crate) obj_index: HashMap<String, ObjId>,
    /// Thread names by tid (`None`: tid unused).
    pub(crate) threads: Vec<Option<String>>,
    pub(crate) thread_index: HashMap<String, Tid>,
    /// Tids `n` of the names `T<n>` anywhere in the file ([`TraceEnv::reserve_numbered`]):
    /// other names do not take them, so `T<n>` keeps its number even when it first
    /// appears after them.
    pub(crate) reserved: hashbrown::HashSet<Tid>,
    pub(crate) methods: Vec<String>,
    pub(crate) method_index: HashMap<String, MethodId>,
    /// Non-numeric location tokens: site `TOKEN_SITE_BIT | k` is `site_tokens[k]`.
    pub(crate) site_tokens: Vec<String>,
    pub(crate) site_token_index: HashMap<String, SiteId>,
    /// `# site N POSITION [METHOD]` headers.
    pub(crate) site_table: HashMap<u32, SiteInfo>,
    /// `# capvm-record v1`: variable names carry the VM's `object.Class.field`.
    pub(crate) recorded: bool,
}

impl TraceEnv {
    pub(crate) fn var(&mut self, name: &str) -> Loc {
        let slot = match self.var_index.get(name) {
            Some(&s) => s,
            None => {
                let s = self.vars.len() as u32;
                self.vars.push(name.to_string());
                self.var_index.insert(name.to_string(), s);
                s
            }
        };
        Loc { obj: VARS, slot }
    }
    pub(crate) fn obj(&mut self, name: &str) -> ObjId {
        if let Some(&o) = self.obj_index.get(name) {
            return o;
        }
        self.objs.push(name.to_string());
        let o = ObjId(self.objs.len() as u64);
        self.obj_index.insert(name.to_string(), o);
        o
    }
    pub(crate) fn thread(&mut self, name: &str) -> Tid {
        if let Some(&t) = self.thread_index.get(name) {
            return t;
        }
        // `T<n>` keeps its number as the tid when it is small and free, so reports
        // and re-recorded traces use the trace's own thread names; any other name
        // takes the smallest free tid.
        let numbered =
            numbered_tid(name).filter(|&n| self.threads.get(n).is_none_or(Option::is_none));
        let t = match numbered {
            Some(n) => n,
            None => (0..)
                .find(|&i| {
                    self.threads.get(i).is_none_or(Option::is_none)
                        && !self.reserved.contains(&(i as Tid))
                        && !self.thread_index.contains_key(&format!("T{i}"))
                })
                .unwrap_or(self.threads.len()),
        };
        if self.threads.len() <= t {
            self.threads.resize(t + 1, None);
        }
        self.threads[t] = Some(name.to_string());
        self.thread_index.insert(name.to_string(), t as Tid);
        t as Tid
    }
    /// Keep tid `n` free for a thread named `T<n>` that appears later in the file.
    pub(crate) fn reserve_numbered(&mut self, name: &str) {
        if let Some(n) = numbered_tid(name) {
            self.reserved.insert(n as Tid);
        }
    }
    pub(crate) fn known_thread(&self, name: &str) -> Option<Tid> {
        self.thread_index.get(name).copied()
    }
    pub(crate) fn method(&mut self, name: &str) -> MethodId {
        if let Some(&m) = self.method_index.get(name) {
            return m;
        }
        let m = MethodId(self.methods.len() as u32);
        self.methods.push(name.to_string());
        self.method_index.insert(name.to_string(), m);
        m
    }
    pub(crate) fn site_token(&mut self, tok: &str) -> SiteId {
        if let Some(&s) = self.site_token_index.get(tok) {
            return s;
        }
        let s = SiteId(super::TOKEN_SITE_BIT | self.site_tokens.len() as u32);
        self.site_tokens.push(tok.to_string());
        self.site_token_index.insert(tok.to_string(), s);
        s
    }

    /// The trace's name of thread `tid` (`T0`, …).
    pub fn thread_name(&self, tid: Tid) -> String {
        self.threads
            .get(tid as usize)
            .cloned()
            .flatten()
            .unwrap_or_else(|| format!("T{tid}"))
    }

    /// The trace's own name of a location (`V3`, `o17.Node.next`).
    pub fn var_name(&self, loc: Loc) -> String {
        if loc.obj == VARS
            && let Some(n) = self.vars.get(loc.slot as usize)
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
        self.var_index
            .get(name)
            .map(|&slot| Loc { obj: VARS, slot })
    }

    /// Whether the trace carries the `# capvm-record` header.
    pub fn is_recorded(&self) -> bool {
        self.recorded
    }
}

/// `n` of a thread name `T<n>` (at most four digits, below [`MAX_NUMBERED_TID`]).
fn numbered_tid(name: &str) -> Option<usize> {
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
        if let Some(info) = self.site_table.get(&site.0) {
            return info.clone();
        }
        let position = if is_token_site(site) {
            self.site_tokens
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
        self.methods
            .get(method.0 as usize)
            .cloned()
            .unwrap_or_else(|| format!("m{}", method.0))
    }
    fn thread_name(&self, tid: Tid) -> String {
        TraceEnv::thread_name(self, tid)
    }
    fn loc_name(&self, loc: Loc) -> LocName {
        let name = self.var_name(loc);
        if self.recorded {
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
        match obj.0.checked_sub(1).and_then(|k| self.objs.get(k as usize)) {
            Some(n) => n.clone(),
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
