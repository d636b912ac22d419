//! Location categories of the filters (Rhodes thesis Table 5.1) and the filtered
//! fraction of locations (Table 5.2), shared by the `escape` and `capsule` passes and
//! by `capvm bench`.
//!
//! A *location* is, as in the thesis, a program location: an access site. Every
//! access a filter sees is classified at the moment it happens:
//! - `Capsule`: a field of a capsule, accessed by the capsule itself (filtered);
//! - `Local`: a capsule-local (capsule pass) or thread-local (escape pass) target
//!   that is not a capsule: capsule-protected, filtered;
//! - `Shared`: a shared target (or a static), checked, with its *owner* (the executing
//!   capsule, or the thread when no capsule method is running).
//!
//! A site's category follows from all its accesses ([`SiteRecord::category`]):
//! only `Capsule` → Capsule; only local (`Local`, possibly with `Capsule`) →
//! Capsule-Protected; only `Shared` → Single-Capsule-Access if one owner made all of
//! them, else Read-Shared if at most one of them was a write, else Other; local and
//! shared accesses both → Mixed. Capsule and Capsule-Protected are the filterable
//! categories (Table 5.2).
//!
//! Sites are also grouped by the location they access (`Class.field`, or `T[]` for
//! every array of element type `T`: a typed site always accesses one field or one
//! array type) and by class, giving the per-field and per-class views. Sites accessing
//! statics are reported apart (every static access is checked).
//!
//! Each thread fills its own [`SiteTable`] (no shared cache line on the hot path); the
//! pass merges it into the run's table when the thread ends. The pass's statistics
//! are one typed record, [`FilterStats`], which the report carries as JSON and
//! `capvm bench` reads back.

use std::collections::BTreeMap;

use hashbrown::HashMap;
use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::event::{Loc, SiteId, Tid};

/// How one access was classified by a filter.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum AccessClass {
    Capsule,
    Local,
    Shared,
}

/// What a location holds.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LocKind {
    #[serde(rename = "object")]
    Field,
    #[serde(rename = "array")]
    Array,
    #[serde(rename = "static")]
    Static,
}

impl LocKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LocKind::Field => "object",
            LocKind::Array => "array",
            LocKind::Static => "static",
        }
    }
}

/// Table 5.1's categories.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Category {
    Capsule,
    CapsuleProtected,
    SingleCapsuleAccess,
    ReadShared,
    Other,
    Mixed,
}

impl Category {
    pub const ALL: [Category; 6] = [
        Category::Capsule,
        Category::CapsuleProtected,
        Category::SingleCapsuleAccess,
        Category::ReadShared,
        Category::Other,
        Category::Mixed,
    ];
    /// Capsule and capsule-protected locations are race free and filtered (Table 5.2).
    pub fn is_filtered(self) -> bool {
        matches!(self, Category::Capsule | Category::CapsuleProtected)
    }
    /// The thesis's name (`Capsule-Protected`, …).
    pub fn name(self) -> &'static str {
        match self {
            Category::Capsule => "Capsule",
            Category::CapsuleProtected => "Capsule-Protected",
            Category::SingleCapsuleAccess => "Single-Capsule-Access",
            Category::ReadShared => "Read-Shared",
            Category::Other => "Other",
            Category::Mixed => "Mixed",
        }
    }
    /// The name for the `escape` pass, whose owners are threads.
    pub fn thread_name(self) -> &'static str {
        match self {
            Category::Capsule => "Capsule",
            Category::CapsuleProtected => "Thread-Local",
            Category::SingleCapsuleAccess => "Single-Thread-Access",
            Category::ReadShared => "Read-Shared",
            Category::Other => "Other",
            Category::Mixed => "Mixed",
        }
    }
}

/// Who performed an access: a capsule (its object) or a thread.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Owner {
    Thread(Tid),
    Capsule(u64),
}

/// Everything recorded about one site (or a group of sites).
#[derive(Clone, Debug)]
pub struct SiteRecord {
    pub kind: LocKind,
    /// One location the site accessed, to name it (`Env::loc_name`).
    pub rep: Loc,
    pub capsule: u64,
    pub local: u64,
    pub shared: u64,
    pub shared_writes: u64,
    /// The owner of the shared accesses, while there is only one.
    pub owner: Option<Owner>,
    pub many_owners: bool,
}

impl SiteRecord {
    pub fn new(kind: LocKind, rep: Loc) -> Self {
        SiteRecord {
            kind,
            rep,
            capsule: 0,
            local: 0,
            shared: 0,
            shared_writes: 0,
            owner: None,
            many_owners: false,
        }
    }

    #[inline]
    pub fn record(&mut self, class: AccessClass, owner: Owner, is_write: bool) {
        match class {
            AccessClass::Capsule => self.capsule += 1,
            AccessClass::Local => self.local += 1,
            AccessClass::Shared => {
                self.shared += 1;
                self.shared_writes += is_write as u64;
                self.add_owner(owner);
            }
        }
    }

    /// `reads` shared reads and `writes` shared writes by `owner` at once (what
    /// `reads + writes` calls of [`SiteRecord::record`] with `AccessClass::Shared`
    /// would record).
    pub fn record_shared(&mut self, owner: Owner, reads: u64, writes: u64) {
        if reads + writes > 0 {
            self.shared += reads + writes;
            self.shared_writes += writes;
            self.add_owner(owner);
        }
    }

    fn add_owner(&mut self, owner: Owner) {
        match self.owner {
            None if !self.many_owners => self.owner = Some(owner),
            Some(o) if o != owner => {
                self.owner = None;
                self.many_owners = true;
            }
            _ => {}
        }
    }

    pub fn merge(&mut self, other: &SiteRecord) {
        self.capsule += other.capsule;
        self.local += other.local;
        self.shared += other.shared;
        self.shared_writes += other.shared_writes;
        if other.many_owners {
            self.owner = None;
            self.many_owners = true;
        } else if let Some(o) = other.owner {
            self.add_owner(o);
        }
    }

    pub fn accesses(&self) -> u64 {
        self.capsule + self.local + self.shared
    }

    /// Table 5.1 (see the module doc for the precedence).
    pub fn category(&self) -> Category {
        let local = self.capsule + self.local;
        match (local > 0, self.shared > 0) {
            (true, true) => Category::Mixed,
            (true, false) if self.local == 0 => Category::Capsule,
            (true, false) => Category::CapsuleProtected,
            _ if !self.many_owners => Category::SingleCapsuleAccess,
            _ if self.shared_writes <= 1 => Category::ReadShared,
            _ => Category::Other,
        }
    }
}

/// Sites below this index are kept in a vector indexed by site (the VM's sites are
/// dense from 0), others in a map; a filter records a site on every access it sees.
const DENSE_SITES: u32 = 1 << 16;

/// Per-site records of one thread or of the whole run.
#[derive(Default, Clone, Debug)]
pub struct SiteTable {
    dense: Vec<Option<SiteRecord>>,
    sparse: HashMap<SiteId, SiteRecord>,
}

impl SiteTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The record of `site`, created by `make` if it has none.
    #[inline]
    pub fn get_or_insert_with(
        &mut self,
        site: SiteId,
        make: impl FnOnce() -> SiteRecord,
    ) -> &mut SiteRecord {
        if site.0 < DENSE_SITES {
            let i = site.0 as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            self.dense[i].get_or_insert_with(make)
        } else {
            self.sparse.entry(site).or_insert_with(make)
        }
    }

    /// Every site with its record, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (SiteId, &SiteRecord)> {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().map(|r| (SiteId(i as u32), r)));
        dense.chain(self.sparse.iter().map(|(s, r)| (*s, r)))
    }

    /// Record one access at `site` to `loc`; `kind` is asked only for a new site.
    #[inline]
    pub fn record(
        &mut self,
        site: SiteId,
        loc: Loc,
        kind: impl FnOnce() -> LocKind,
        class: AccessClass,
        owner: Owner,
        is_write: bool,
    ) {
        self.get_or_insert_with(site, || SiteRecord::new(kind(), loc))
            .record(class, owner, is_write);
    }

    /// Accesses a producer dropped inline for a filter ([`crate::pass::InlineDrops`]),
    /// recorded as that filter's `access` records each of them: [`AccessClass::Local`],
    /// or [`AccessClass::Capsule`] for capsule accesses (`InlineDrops::capsule`) when
    /// `capsule_accesses` (the filter is `capsule`; the owner and the read/write
    /// split only count for shared accesses). `kind` is asked only for a new site.
    pub fn record_inline_drops(
        &mut self,
        drops: &[crate::pass::InlineDrops],
        kind: impl Fn(Loc) -> LocKind,
        capsule_accesses: bool,
    ) {
        for d in drops {
            let r = self.get_or_insert_with(d.site, || SiteRecord::new(kind(d.rep), d.rep));
            match d.capsule && capsule_accesses {
                true => r.capsule += d.reads + d.writes,
                false => r.local += d.reads + d.writes,
            }
        }
    }

    /// Accesses a filter's inline test let through and a later detector decided
    /// inline ([`crate::pass::InlineChecks`]), all by `owner`: recorded as that
    /// filter's `access` records a forwarded one ([`AccessClass::Shared`]).
    pub fn record_inline_forwarded(
        &mut self,
        checks: &[crate::pass::InlineChecks],
        owner: Owner,
        kind: impl Fn(Loc) -> LocKind,
    ) {
        for c in checks {
            self.get_or_insert_with(c.site, || SiteRecord::new(kind(c.rep), c.rep))
                .record_shared(owner, c.reads(), c.writes());
        }
    }

    /// Move everything of `other` into `self`.
    pub fn absorb(&mut self, other: &mut SiteTable) {
        let other = std::mem::take(other);
        for (site, rec) in other.iter() {
            let mut fresh = false;
            let r = self.get_or_insert_with(site, || {
                fresh = true;
                rec.clone()
            });
            if !fresh {
                r.merge(rec);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// Category of every site.
    pub fn site_categories(&self) -> Vec<(SiteId, LocKind, Category)> {
        let mut v: Vec<_> = self
            .iter()
            .map(|(s, r)| (s, r.kind, r.category()))
            .collect();
        v.sort_by_key(|(s, _, _)| *s);
        v
    }

    /// Sites grouped by the location they access (`Class.field`, `T[]`, a static's
    /// name), by name.
    pub fn by_location(&self, env: &dyn Env) -> BTreeMap<String, SiteRecord> {
        let mut out: BTreeMap<String, SiteRecord> = BTreeMap::new();
        for (_, rec) in self.iter() {
            let name = env.loc_name(rec.rep).name;
            match out.get_mut(&name) {
                Some(r) => r.merge(rec),
                None => {
                    out.insert(name, rec.clone());
                }
            }
        }
        out
    }

    /// The statistics of a filter pass: per kind, the fraction of sites in each
    /// category (Table 5.1) and the filtered fraction (Table 5.2), the same for
    /// locations (`Class.field` / `T[]`) and for classes, and the category of every
    /// location. `thread_owned` selects the `escape` pass's names.
    pub fn stats(&self, env: &dyn Env, thread_owned: bool) -> FilterStats {
        let name = |c: Category| {
            if thread_owned {
                c.thread_name()
            } else {
                c.name()
            }
        };
        let site_cats = self.site_categories();
        let sites = summary(site_cats.iter().map(|(_, k, c)| (*k, *c)), &name);

        let locs = self.by_location(env);
        let loc_cats = locs.values().map(|r| (r.kind, r.category()));
        let locations = summary(loc_cats, &name);

        // Classes: the fields of one class together (arrays and statics excluded).
        let mut classes: BTreeMap<String, SiteRecord> = BTreeMap::new();
        for (lname, rec) in &locs {
            if rec.kind != LocKind::Field {
                continue;
            }
            let class = lname.split('.').next().unwrap_or(lname).to_string();
            match classes.get_mut(&class) {
                Some(r) => r.merge(rec),
                None => {
                    classes.insert(class, rec.clone());
                }
            }
        }
        let mut class_category = BTreeMap::new();
        let mut class_filtered = 0u64;
        for (c, r) in &classes {
            let cat = r.category();
            class_filtered += cat.is_filtered() as u64;
            class_category.insert(c.clone(), name(cat).to_string());
        }
        let class_total = classes.len() as u64;

        let location_category = locs
            .iter()
            .map(|(l, r)| {
                let rec = LocationCategory {
                    kind: r.kind,
                    category: name(r.category()).to_string(),
                    accesses: r.accesses(),
                };
                (l.clone(), rec)
            })
            .collect();
        FilterStats {
            sites,
            locations,
            classes: ClassCategories {
                total: class_total,
                filtered: fraction(class_filtered, class_total),
                category: class_category,
            },
            location_category,
        }
    }
}

/// The statistics of a filter pass (`escape`, `capsule`): the `details` of its entry
/// in the report's `stats.passes`. Category names are [`Category::name`] (`capsule`)
/// or [`Category::thread_name`] (`escape`); fractions are rounded to 0.001. Absent
/// fields read as empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FilterStats {
    /// Access sites, per kind of location they access.
    pub sites: BTreeMap<LocKind, KindCategories>,
    /// Locations (`Class.field`, `T[]`, statics), per kind.
    pub locations: BTreeMap<LocKind, KindCategories>,
    /// Classes (their fields together).
    pub classes: ClassCategories,
    /// Every location's category, by name.
    pub location_category: BTreeMap<String, LocationCategory>,
}

/// Sites or locations of one kind: how many, the filtered fraction, and the fraction
/// in each category.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KindCategories {
    pub total: u64,
    pub filtered: f64,
    pub categories: BTreeMap<String, f64>,
}

/// The classes: how many, the filtered fraction, and each class's category.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClassCategories {
    pub total: u64,
    pub filtered: f64,
    pub category: BTreeMap<String, String>,
}

/// One location: its kind, its category and how many accesses it had.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocationCategory {
    pub kind: LocKind,
    pub category: String,
    pub accesses: u64,
}

fn fraction(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        ((n as f64 / total as f64) * 1000.0).round() / 1000.0
    }
}

/// Per kind: total, filtered fraction, and the fraction in each category.
fn summary(
    cats: impl Iterator<Item = (LocKind, Category)>,
    name: &dyn Fn(Category) -> &'static str,
) -> BTreeMap<LocKind, KindCategories> {
    let mut counts: BTreeMap<LocKind, [u64; 6]> = BTreeMap::new();
    for (k, c) in cats {
        let i = Category::ALL.iter().position(|x| *x == c).unwrap_or(0);
        counts.entry(k).or_default()[i] += 1;
    }
    let mut out = BTreeMap::new();
    for (k, row) in counts {
        let total: u64 = row.iter().sum();
        let filtered: u64 = Category::ALL
            .iter()
            .zip(row.iter())
            .filter(|(c, _)| c.is_filtered())
            .map(|(_, n)| *n)
            .sum();
        let categories = Category::ALL
            .iter()
            .zip(row.iter())
            .map(|(c, n)| (name(*c).to_string(), fraction(*n, total)))
            .collect();
        out.insert(
            k,
            KindCategories {
                total,
                filtered: fraction(filtered, total),
                categories,
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::ObjId;

    fn rec(events: &[(AccessClass, Owner, bool)]) -> Category {
        let mut r = SiteRecord::new(
            LocKind::Field,
            Loc {
                obj: ObjId(8),
                slot: 0,
            },
        );
        for (c, o, w) in events {
            r.record(*c, *o, *w);
        }
        r.category()
    }

    #[test]
    fn categories_follow_table_5_1() {
        use AccessClass::*;
        let t0 = Owner::Thread(0);
        let t1 = Owner::Thread(1);
        let k = Owner::Capsule(64);
        assert_eq!(rec(&[(Capsule, k, true)]), Category::Capsule);
        assert_eq!(
            rec(&[(Local, t0, true), (Capsule, k, false)]),
            Category::CapsuleProtected
        );
        assert_eq!(
            rec(&[(Shared, k, true), (Shared, k, true)]),
            Category::SingleCapsuleAccess
        );
        assert_eq!(
            rec(&[(Shared, t0, true), (Shared, t1, false), (Shared, k, false)]),
            Category::ReadShared
        );
        assert_eq!(
            rec(&[(Shared, t0, true), (Shared, t1, true)]),
            Category::Other
        );
        assert_eq!(
            rec(&[(Local, t0, true), (Shared, t0, false)]),
            Category::Mixed
        );
    }

    #[test]
    fn merge_keeps_owner_distinctness() {
        let loc = Loc {
            obj: ObjId(8),
            slot: 0,
        };
        let mut a = SiteRecord::new(LocKind::Field, loc);
        a.record(AccessClass::Shared, Owner::Thread(0), true);
        let mut b = SiteRecord::new(LocKind::Field, loc);
        b.record(AccessClass::Shared, Owner::Thread(0), true);
        let mut c = a.clone();
        c.merge(&b);
        assert_eq!(c.category(), Category::SingleCapsuleAccess);
        let mut d = SiteRecord::new(LocKind::Field, loc);
        d.record(AccessClass::Shared, Owner::Thread(2), true);
        c.merge(&d);
        assert_eq!(c.category(), Category::Other);
    }
}
