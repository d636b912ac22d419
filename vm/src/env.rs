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
