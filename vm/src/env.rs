//! The running program as the analyses see it ([`analyses::env::Env`]): names of
//! sites, methods, locations and objects, and the live heap for the filters.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use analyses::env::{Env, HeapView, LocName, SiteInfo};
use analyses::{Loc, MethodId, ObjId, SiteId};

use crate::heap;
use crate::image::Image;
use crate::layout::{self, Kind};

/// `o<serial>` for guest objects, `Class.class` for class monitors, `statics` for
/// the statics block.
pub fn obj_label(image: &Image, addr: u64) -> String {
    if addr == 0 {
        return "null".into();
    }
    match heap::kind(addr) {
        Kind::ClassMonitor => {
            let c = heap::type_id(addr) as usize;
            match image.program.classes.get(c) {
                Some(cl) => format!("{}.class", cl.name),
                None => "?.class".into(),
            }
        }
        Kind::Statics => "statics".into(),
        _ => format!("o{}", heap::serial(addr)),
    }
}

pub struct VmEnv {
    pub image: Arc<Image>,
}

impl Env for VmEnv {
    fn site(&self, site: SiteId) -> SiteInfo {
        let p = &self.image.program;
        let method = p
            .sites
            .get(site.0 as usize)
            .filter(|_| site.0 != 0)
            .and_then(|s| s.func)
            .map(|f| p.func_name(f));
        SiteInfo {
            position: p.site_string(lang::ir::SiteId(site.0)),
            method,
        }
    }

    fn method_name(&self, method: MethodId) -> String {
        let p = &self.image.program;
        if (method.0 as usize) < p.funcs.len() {
            p.func_name(lang::ir::FuncId(method.0))
        } else {
            format!("m{}", method.0)
        }
    }

    fn loc_name(&self, loc: Loc) -> LocName {
        let p = &self.image.program;
        let addr = loc.obj.0;
        let slot = loc.slot as usize;
        match heap::kind(addr) {
            Kind::Statics => {
                let name = match p.statics.get(slot) {
                    Some(s) => format!("{}.{}", p.class(s.class).name, s.name),
                    None => format!("statics.{slot}"),
                };
                LocName {
                    name,
                    index: None,
                    object: None,
                }
            }
            Kind::Array => LocName {
                name: self.image.array_type_name(heap::type_id(addr)),
                index: Some(loc.slot as u64),
                object: Some(obj_label(&self.image, addr)),
            },
            Kind::Object => {
                let c = heap::type_id(addr) as usize;
                let name = match p.classes.get(c).and_then(|cl| {
                    cl.fields
                        .get(slot)
                        .map(|f| format!("{}.{}", cl.name, f.name))
                }) {
                    Some(n) => n,
                    None => format!("{}.{slot}", obj_label(&self.image, addr)),
                };
                LocName {
                    name,
                    index: None,
                    object: Some(obj_label(&self.image, addr)),
                }
            }
            // Threads, barriers and class monitors have no guest-visible slots.
            _ => LocName {
                name: format!("{}.{slot}", obj_label(&self.image, addr)),
                index: None,
                object: Some(obj_label(&self.image, addr)),
            },
        }
    }

    fn obj_label(&self, obj: ObjId) -> String {
        obj_label(&self.image, obj.0)
    }

    fn lock_name(&self, lock: ObjId, site: SiteId) -> String {
        lock_name(&self.image, lock.0, site)
    }

    fn heap(&self) -> Option<&dyn HeapView> {
        Some(self)
    }

    fn is_capsule_class(&self, class: u32) -> bool {
        self.image
            .program
            .classes
            .get(class as usize)
            .is_some_and(|c| c.is_capsule)
    }

    fn capsule_access_proven(&self, site: SiteId) -> bool {
        self.image
            .program
            .proven_capsule_access(lang::ir::SiteId(site.0))
    }

    fn class_name(&self, class: u32) -> String {
        match self.image.program.classes.get(class as usize) {
            Some(c) => c.name.clone(),
            None => format!("class#{class}"),
        }
    }
}

/// The VM's environment with the capsule classes replaced (`capvm run --capsules`,
/// `capvm infer-capsules`): exactly the classes set in `capsules` are capsules; every
/// other question goes to the VM's environment.
pub struct CapsuleOverride {
    pub inner: Arc<VmEnv>,
    /// Indexed by class id.
    pub capsules: Vec<bool>,
}

impl Env for CapsuleOverride {
    fn site(&self, site: SiteId) -> SiteInfo {
        self.inner.site(site)
    }

    fn method_name(&self, method: MethodId) -> String {
        self.inner.method_name(method)
    }

    fn loc_name(&self, loc: Loc) -> LocName {
        self.inner.loc_name(loc)
    }

    fn obj_label(&self, obj: ObjId) -> String {
        Env::obj_label(&*self.inner, obj)
    }

    fn lock_name(&self, lock: ObjId, site: SiteId) -> String {
        Env::lock_name(&*self.inner, lock, site)
    }

    fn heap(&self) -> Option<&dyn HeapView> {
        Some(&*self.inner)
    }

    fn is_capsule_class(&self, class: u32) -> bool {
        self.capsules.get(class as usize).copied().unwrap_or(false)
    }

    fn capsule_access_proven(&self, site: SiteId) -> bool {
        self.inner.capsule_access_proven(site)
    }

    fn class_name(&self, class: u32) -> String {
        self.inner.class_name(class)
    }
}

impl HeapView for VmEnv {
    fn class_of(&self, obj: ObjId) -> Option<u32> {
        match heap::kind(obj.0) {
            Kind::Object => Some(heap::type_id(obj.0)),
            _ => None,
        }
    }

    fn method_class(&self, method: MethodId) -> u32 {
        self.image
            .program
            .funcs
            .get(method.0 as usize)
            .map_or(u32::MAX, |f| f.class.0)
    }

    fn for_each_ref(&self, obj: ObjId, f: &mut dyn FnMut(ObjId)) {
        let a = obj.0;
        let mut visit = |w: usize| {
            let v = heap::load(a, w);
            if v != 0 {
                f(ObjId(v));
            }
        };
        match heap::kind(a) {
            Kind::Object => {
                if let Some(refs) = self.image.field_is_ref.get(heap::type_id(a) as usize) {
                    for (i, r) in refs.iter().enumerate() {
                        if *r {
                            visit(layout::FIELD0 + i);
                        }
                    }
                }
            }
            Kind::Array
                if self
                    .image
                    .elem_is_ref
                    .get(heap::type_id(a) as usize)
                    .copied()
                    .unwrap_or(false) =>
            {
                for i in 0..heap::array_len(a) as usize {
                    visit(layout::ARRAY_DATA + i);
                }
            }
            Kind::Statics => {
                for (i, r) in self.image.static_is_ref.iter().enumerate() {
                    if *r {
                        visit(layout::FIELD0 + i);
                    }
                }
            }
            _ => {}
        }
    }

    fn mark_shared(&self, obj: ObjId) -> bool {
        let old = heap::word(obj.0, layout::HEADER).fetch_or(layout::SHARED_BIT, Ordering::Relaxed);
        old & layout::SHARED_BIT == 0
    }

    fn is_shared(&self, obj: ObjId) -> bool {
        heap::header(obj.0) & layout::SHARED_BIT != 0
    }

    fn is_statics(&self, obj: ObjId) -> bool {
        obj.0 == self.image.statics
    }

    fn has_capsule_bit(&self) -> bool {
        true
    }

    fn mark_capsule_shared(&self, obj: ObjId) -> bool {
        let old =
            heap::word(obj.0, layout::HEADER).fetch_or(layout::CAPSULE_BIT, Ordering::Relaxed);
        old & layout::CAPSULE_BIT == 0
    }

    fn is_capsule_shared(&self, obj: ObjId) -> bool {
        heap::header(obj.0) & layout::CAPSULE_BIT != 0
    }
}

/// How `grits` names a lock or barrier the program reached at `site` (its
/// `synchronized (e)` statement, the call of a `synchronized` method, or the
/// `b.await()`): a class monitor by its class; otherwise by the expression the
/// source used, with a field written `Class.field` (`this.lock`, `acct.lock` →
/// `Account.lock`), a local variable by its name, the receiver `this` by the class
/// of the object. The object label (`o17`) when the source says nothing usable.
pub fn lock_name(image: &Image, addr: u64, site: SiteId) -> String {
    let p = &image.program;
    if heap::kind(addr) == Kind::ClassMonitor {
        let c = heap::type_id(addr) as usize;
        return p
            .classes
            .get(c)
            .map_or_else(|| obj_label(image, addr), |c| c.name.clone());
    }
    let fallback = || obj_label(image, addr);
    let Some(s) = p.sites.get(site.0 as usize).filter(|_| site.0 != 0) else {
        return fallback();
    };
    let Some(file) = p.files.get(s.file.index()) else {
        return fallback();
    };
    let Some(line) = file.text.lines().nth(s.line.saturating_sub(1) as usize) else {
        return fallback();
    };
    let text: String = line
        .chars()
        .skip(s.col.saturating_sub(1) as usize)
        .collect();
    let expr = match text.strip_prefix("synchronized") {
        Some(rest) => {
            let rest = rest.trim_start();
            let Some(inner) = rest.strip_prefix('(') else {
                return fallback();
            };
            let mut depth = 1;
            let end = inner.char_indices().find_map(|(i, ch)| {
                match ch {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(i)
            });
            match end {
                Some(e) => inner[..e].trim().to_string(),
                None => return fallback(),
            }
        }
        // A call `r.m(…)` / `b.await()` whose site is the method name: the receiver
        // is the chain before the dot.
        None if line
            .chars()
            .take(s.col.saturating_sub(1) as usize)
            .collect::<String>()
            .trim_end()
            .ends_with('.') =>
        {
            let before: String = line
                .chars()
                .take(s.col.saturating_sub(1) as usize)
                .collect();
            let before = before.trim_end().trim_end_matches('.');
            let rev: String = before
                .chars()
                .rev()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            let chain: String = rev.chars().rev().collect();
            if chain.is_empty() {
                return fallback();
            }
            chain
        }
        // A call `r.m(…)` / `m(…)` whose site is its start: the receiver.
        None => {
            let chain: String = text
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.' || c.is_whitespace())
                .filter(|c| !c.is_whitespace())
                .collect();
            match chain.rfind('.') {
                Some(i) => chain[..i].to_string(),
                None if !chain.is_empty() => "this".to_string(),
                None => return fallback(),
            }
        }
    };
    let class_of_obj = || {
        (heap::kind(addr) == Kind::Object)
            .then(|| {
                p.classes
                    .get(heap::type_id(addr) as usize)
                    .map(|c| c.name.clone())
            })
            .flatten()
    };
    if expr == "this" {
        return class_of_obj().unwrap_or_else(fallback);
    }
    let parts: Vec<&str> = expr.split('.').collect();
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !parts.iter().all(|s| ident(s)) {
        return expr;
    }
    let field = *parts.last().expect("split yields one part");
    let here = s.func.map(|f| p.func(f).class);
    let declares = |c: usize| {
        p.classes[c].fields.iter().any(|f| f.name == field)
            || p.statics
                .iter()
                .any(|st| st.class.index() == c && st.name == field)
    };
    // `Class.f` (a static written with its class) stays as written.
    if parts.len() == 2 && p.classes.iter().any(|c| c.name == parts[0]) {
        return expr;
    }
    // `f` or `this.f`: a field of the enclosing class, unless `f` is a variable.
    if (parts.len() == 1 || (parts.len() == 2 && parts[0] == "this"))
        && let Some(c) = here
        && declares(c.index())
    {
        let is_local = parts.len() == 1
            && s.func.is_some_and(|f| {
                p.func(f)
                    .locals
                    .iter()
                    .any(|l| l.name.as_deref() == Some(field))
            });
        if !is_local {
            return format!("{}.{field}", p.classes[c.index()].name);
        }
    }
    if parts.len() == 1 {
        return field.to_string();
    }
    // `x.f`: the one class that declares `f`, else the expression as written.
    let owners: Vec<usize> = (0..p.classes.len()).filter(|&c| declares(c)).collect();
    match owners.as_slice() {
        [c] => format!("{}.{field}", p.classes[*c].name),
        _ => expr,
    }
}
