//! What the analyses may ask of the world that produced the events.
//!
//! Architecture invariant: `analyses` knows nothing of the VM. The VM (or a trace
//! reader) implements [`Env`] to name sites, methods and locations for reports, and
//! optionally [`HeapView`] for the filters that must walk the live heap (escape,
//! capsule). Offline analyses run without a heap.

use crate::event::{Loc, MethodId, ObjId, SiteId};

/// How a location is shown in reports: `Class.field` for instance and static fields,
/// `T[]` plus an index for array elements, the trace's own name for trace variables.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocName {
    /// `Class.field`, `int[]`, or a trace variable name.
    pub name: String,
    /// Array index, for array elements.
    pub index: Option<u64>,
    /// A short object identity (`o17`) for instance fields and arrays, if known.
    pub object: Option<String>,
}

impl std::fmt::Display for LocName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}[{}]", self.name.trim_end_matches("[]"), i),
            None => f.write_str(&self.name),
        }
    }
}

/// A resolved source position.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SiteInfo {
    /// `file:line:col`, or the trace's location token.
    pub position: String,
    /// The enclosing method (`Class.method`), if known.
    pub method: Option<String>,
}

pub trait Env: Send + Sync {
    fn site(&self, site: SiteId) -> SiteInfo;
    fn method_name(&self, method: MethodId) -> String;
    fn loc_name(&self, loc: Loc) -> LocName;
    /// How reports name thread `tid` (`T3`; a trace's own name for its threads).
    fn thread_name(&self, tid: crate::event::Tid) -> String {
        format!("T{tid}")
    }
    /// A short, deterministic label for an object, lock or barrier (`o17`): the VM's
    /// allocation serial number, or the trace's own name. Used in reports and when
    /// writing traces, so seeded runs produce identical traces.
    fn obj_label(&self, obj: ObjId) -> String {
        format!("o{}", obj.0)
    }
    /// How disciplines name a lock (a monitor, or a barrier) that the program reached
    /// at `site` (its first acquire or barrier departure): the field or variable it
    /// was reached through, or its class for a class monitor. The default is
    /// [`Env::obj_label`] (a trace's own name for the lock).
    fn lock_name(&self, lock: ObjId, _site: SiteId) -> String {
        self.obj_label(lock)
    }
    /// The live heap, if there is one (not for offline traces).
    fn heap(&self) -> Option<&dyn HeapView> {
        None
    }
    /// Capsule classes in force for this run (`capsule` pass), by class index.
    fn is_capsule_class(&self, _class: u32) -> bool {
        false
    }
    /// Whether every field access at `site` is proven at compile time to satisfy the
    /// capsule encapsulation property (it is on `this` inside a method of the field's own
    /// class: `lang`'s `Program::proven_capsule_access`). The `capsule` pass then skips
    /// its dynamic encapsulation check there (synchronization is still checked). The
    /// default, "not proven", keeps the dynamic check on.
    fn capsule_access_proven(&self, _site: SiteId) -> bool {
        false
    }
    /// The source name of a class (capsule violations name it in `extra["class"]`).
    fn class_name(&self, class: u32) -> String {
        format!("class#{class}")
    }
}

/// The live heap as the escape and capsule filters see it.
pub trait HeapView: Send + Sync {
    /// The class index of an object (None for arrays, threads, barriers).
    fn class_of(&self, obj: ObjId) -> Option<u32>;
    /// The class index that declares `method`.
    fn method_class(&self, method: MethodId) -> u32;
    /// Call `f` on every non-null reference stored in `obj` (fields or elements).
    fn for_each_ref(&self, obj: ObjId, f: &mut dyn FnMut(ObjId));
    /// Atomically set the object's "shared" header bit; true if it was not set before.
    fn mark_shared(&self, obj: ObjId) -> bool;
    fn is_shared(&self, obj: ObjId) -> bool;
    /// Whether `obj` is the block of static fields (`Loc::obj` of every static).
    /// Statics are shared by every thread: the `escape` and `capsule` filters check
    /// every static access and leak every reference written to one. Every heap with
    /// statics must implement this: with the default (`false`) static accesses would
    /// be filtered as thread-local.
    fn is_statics(&self, _obj: ObjId) -> bool {
        false
    }
    /// Whether the heap keeps the `capsule` filter's own "capsule-shared" header bit
    /// (the VM: bit 41). Without it the `capsule` filter treats every non-capsule
    /// object as capsule-shared (it still filters capsule accesses).
    fn has_capsule_bit(&self) -> bool {
        false
    }
    /// Atomically set the "capsule-shared" bit; true if it was not set before.
    fn mark_capsule_shared(&self, _obj: ObjId) -> bool {
        false
    }
    fn is_capsule_shared(&self, _obj: ObjId) -> bool {
        false
    }
}

/// An [`Env`] that knows nothing (for unit tests): sites print as `#N`, locations as
/// `o<obj>.<slot>`.
pub struct NullEnv;

impl Env for NullEnv {
    fn site(&self, site: SiteId) -> SiteInfo {
        SiteInfo {
            position: format!("#{}", site.0),
            method: None,
        }
    }
    fn method_name(&self, method: MethodId) -> String {
        format!("m{}", method.0)
    }
    fn loc_name(&self, loc: Loc) -> LocName {
        LocName {
            name: format!("o{}.{}", loc.obj.0, loc.slot),
            index: None,
            object: None,
        }
    }
}
