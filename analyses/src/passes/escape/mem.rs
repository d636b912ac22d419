//! An in-memory heap and environment for driving the `escape` and `capsule` filters
//! without a VM: unit and property tests, fuzz drivers that generate event streams.
//!
//! [`MemHeap`] implements [`HeapView`] over a small object graph with both filter
//! bits and counts the marking work; [`MemEnv`] declares classes (capsule or not),
//! fields and methods and names them in reports. Like the VM, a driver must deliver a
//! `Write` event *before* it performs the store ([`MemHeap::store`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hashbrown::HashMap;
use parking_lot::RwLock;

use crate::env::{Env, HeapView, LocName, SiteInfo};
use crate::event::{Loc, MethodId, ObjId, SiteId};

struct MemObj {
    class: Option<u32>,
    slots: Vec<Option<ObjId>>,
    shared: AtomicBool,
    capsule_shared: AtomicBool,
}

/// A heap of objects (class `Some`) and arrays (class `None`) whose slots hold
/// references or nothing. Object ids are multiples of 8, as VM addresses are.
pub struct MemHeap {
    objs: RwLock<HashMap<ObjId, MemObj>>,
    next: AtomicU64,
    statics: ObjId,
    capsule_bit: bool,
    methods: RwLock<HashMap<MethodId, u32>>,
    /// Calls of `mark_shared` + `mark_capsule_shared`.
    pub mark_calls: AtomicU64,
    /// Calls of `for_each_ref` (objects scanned by leak walks).
    pub scans: AtomicU64,
}

impl MemHeap {
    /// `capsule_bit`: whether to keep the capsule filter's bit (like the VM's bit 41).
    pub fn new(capsule_bit: bool) -> Self {
        let h = MemHeap {
            objs: RwLock::new(HashMap::new()),
            next: AtomicU64::new(0x1000),
            statics: ObjId(0x800),
            capsule_bit,
            methods: RwLock::new(HashMap::new()),
            mark_calls: AtomicU64::new(0),
            scans: AtomicU64::new(0),
        };
        h.insert(h.statics, None, 64);
        h
    }

    fn insert(&self, id: ObjId, class: Option<u32>, slots: usize) {
        self.objs.write().insert(
            id,
            MemObj {
                class,
                slots: vec![None; slots],
                shared: AtomicBool::new(false),
                capsule_shared: AtomicBool::new(false),
            },
        );
    }

    /// A new object of `class` (or an array when `None`) with `slots` slots.
    pub fn alloc(&self, class: Option<u32>, slots: usize) -> ObjId {
        let id = ObjId(self.next.fetch_add(0x100, Ordering::Relaxed));
        self.insert(id, class, slots);
        id
    }

    /// The statics block (64 static slots).
    pub fn statics(&self) -> ObjId {
        self.statics
    }

    /// Perform a store (after its `Write` event was delivered). Out-of-range slots grow
    /// the object; unknown objects are ignored.
    pub fn store(&self, loc: Loc, value: Option<ObjId>) {
        let mut objs = self.objs.write();
        if let Some(o) = objs.get_mut(&loc.obj) {
            let i = loc.slot as usize;
            if i >= o.slots.len() {
                o.slots.resize(i + 1, None);
            }
            o.slots[i] = value;
        }
    }

    pub fn load(&self, loc: Loc) -> Option<ObjId> {
        let objs = self.objs.read();
        objs.get(&loc.obj)
            .and_then(|o| o.slots.get(loc.slot as usize).copied().flatten())
    }

    pub fn set_method_class(&self, method: MethodId, class: u32) {
        self.methods.write().insert(method, class);
    }

    pub fn reset_counters(&self) {
        self.mark_calls.store(0, Ordering::Relaxed);
        self.scans.store(0, Ordering::Relaxed);
    }

    fn flag(&self, obj: ObjId, f: impl Fn(&MemObj) -> &AtomicBool) -> bool {
        self.objs
            .read()
            .get(&obj)
            .is_some_and(|o| f(o).load(Ordering::Acquire))
    }

    fn set_flag(&self, obj: ObjId, f: impl Fn(&MemObj) -> &AtomicBool) -> bool {
        self.mark_calls.fetch_add(1, Ordering::Relaxed);
        self.objs
            .read()
            .get(&obj)
            .is_some_and(|o| !f(o).swap(true, Ordering::AcqRel))
    }
}

impl HeapView for MemHeap {
    fn class_of(&self, obj: ObjId) -> Option<u32> {
        self.objs.read().get(&obj).and_then(|o| o.class)
    }
    fn method_class(&self, method: MethodId) -> u32 {
        self.methods
            .read()
            .get(&method)
            .copied()
            .unwrap_or(u32::MAX)
    }
    fn for_each_ref(&self, obj: ObjId, f: &mut dyn FnMut(ObjId)) {
        self.scans.fetch_add(1, Ordering::Relaxed);
        let refs: Vec<ObjId> = match self.objs.read().get(&obj) {
            Some(o) => o.slots.iter().flatten().copied().collect(),
            None => return,
        };
        for r in refs {
            f(r);
        }
    }
    fn mark_shared(&self, obj: ObjId) -> bool {
        self.set_flag(obj, |o| &o.shared)
    }
    fn is_shared(&self, obj: ObjId) -> bool {
        self.flag(obj, |o| &o.shared)
    }
    fn is_statics(&self, obj: ObjId) -> bool {
        obj == self.statics
    }
    fn has_capsule_bit(&self) -> bool {
        self.capsule_bit
    }
    fn mark_capsule_shared(&self, obj: ObjId) -> bool {
        self.capsule_bit && self.set_flag(obj, |o| &o.capsule_shared)
    }
    fn is_capsule_shared(&self, obj: ObjId) -> bool {
        self.capsule_bit && self.flag(obj, |o| &o.capsule_shared)
    }
}

#[derive(Clone)]
struct ClassDecl {
    name: String,
    capsule: bool,
    fields: Vec<String>,
}

/// An [`Env`] over a [`MemHeap`]: classes with named fields, methods, which
/// classes are capsules, and which sites the compiler proved encapsulated.
pub struct MemEnv {
    pub heap: MemHeap,
    classes: RwLock<Vec<ClassDecl>>,
    methods: RwLock<Vec<(u32, String)>>,
    proven: RwLock<hashbrown::HashSet<u32>>,
}

impl MemEnv {
    pub fn new(capsule_bit: bool) -> Self {
        MemEnv {
            heap: MemHeap::new(capsule_bit),
            classes: RwLock::new(Vec::new()),
            methods: RwLock::new(Vec::new()),
            proven: RwLock::new(hashbrown::HashSet::new()),
        }
    }

    /// Mark `site` as statically proven encapsulated
    /// ([`Env::capsule_access_proven`]), as `lang` does for `this.f` in the field's class.
    pub fn prove_site(&self, site: u32) {
        self.proven.write().insert(site);
    }

    /// Declare a class; returns its index.
    pub fn class(&self, name: &str, capsule: bool, fields: &[&str]) -> u32 {
        let mut c = self.classes.write();
        c.push(ClassDecl {
            name: name.to_string(),
            capsule,
            fields: fields.iter().map(|f| f.to_string()).collect(),
        });
        (c.len() - 1) as u32
    }

    /// Declare a method (or constructor) of `class`.
    pub fn method(&self, class: u32, name: &str) -> MethodId {
        let mut m = self.methods.write();
        m.push((class, name.to_string()));
        let id = MethodId((m.len() - 1) as u32);
        self.heap.set_method_class(id, class);
        id
    }

    /// A new object of `class` with one slot per declared field.
    pub fn new_object(&self, class: u32) -> ObjId {
        let n = self
            .classes
            .read()
            .get(class as usize)
            .map_or(0, |c| c.fields.len());
        self.heap.alloc(Some(class), n)
    }

    /// The slot of a declared field.
    pub fn field(&self, class: u32, name: &str) -> Option<u32> {
        let classes = self.classes.read();
        let pos = classes
            .get(class as usize)?
            .fields
            .iter()
            .position(|f| f == name)?;
        Some(pos as u32)
    }
}

impl Env for MemEnv {
    fn site(&self, site: SiteId) -> SiteInfo {
        SiteInfo {
            position: format!("#{}", site.0),
            method: None,
        }
    }
    fn method_name(&self, method: MethodId) -> String {
        let m = self.methods.read();
        match m.get(method.0 as usize) {
            Some((c, n)) => format!("{}.{}", self.class_name(*c), n),
            None => format!("m{}", method.0),
        }
    }
    fn loc_name(&self, loc: Loc) -> LocName {
        if self.heap.is_statics(loc.obj) {
            return LocName {
                name: format!("static{}", loc.slot),
                index: None,
                object: None,
            };
        }
        match self.heap.class_of(loc.obj) {
            Some(c) => {
                let classes = self.classes.read();
                let decl = classes.get(c as usize);
                let field = decl
                    .and_then(|d| d.fields.get(loc.slot as usize).cloned())
                    .unwrap_or_else(|| format!("f{}", loc.slot));
                LocName {
                    name: format!("{}.{}", self.class_name(c), field),
                    index: None,
                    object: Some(self.obj_label(loc.obj)),
                }
            }
            None => LocName {
                name: "Object[]".to_string(),
                index: Some(loc.slot as u64),
                object: Some(self.obj_label(loc.obj)),
            },
        }
    }
    fn heap(&self) -> Option<&dyn HeapView> {
        Some(&self.heap)
    }
    fn is_capsule_class(&self, class: u32) -> bool {
        self.classes
            .read()
            .get(class as usize)
            .is_some_and(|c| c.capsule)
    }
    fn capsule_access_proven(&self, site: SiteId) -> bool {
        self.proven.read().contains(&site.0)
    }
    fn class_name(&self, class: u32) -> String {
        self.classes
            .read()
            .get(class as usize)
            .map_or_else(|| format!("class#{class}"), |c| c.name.clone())
    }
}
