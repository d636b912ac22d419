//! The `capsule` pass with compile-time encapsulation proofs
//! (`Env::capsule_access_proven`, filled by `lang` for `this.f` in the field's own
//! class): a proven site skips the dynamic encapsulation check, an unproven one is still
//! checked, and the synchronization check and the filtering happen either way.

mod escape_harness;

use std::sync::Arc;

use analyses::event::{MethodId, ObjId};
use analyses::passes::escape::mem::MemEnv;
use analyses::report::WarningKind;
use escape_harness::{Sim, loc};

/// (class, property, sites of the earlier operation if any and of the violating access).
fn violations(s: &Sim) -> Vec<(String, String, Vec<u32>)> {
    s.warnings_of(WarningKind::CapsuleViolation)
        .iter()
        .map(|w| {
            let extra = |k: &str| w.warning.extra[k].as_str().unwrap_or("").to_string();
            let sites = w.warning.accesses.iter().map(|a| a.site.0).collect();
            (extra("class"), extra("property"), sites)
        })
        .collect()
}

fn call(s: &mut Sim, m: MethodId, recv: ObjId, args: &[ObjId], body: impl FnOnce(&mut Sim)) {
    s.enter(0, m, Some(recv), args);
    body(s);
    s.exit(0, m, None);
}

/// `c.m()` calls `helper.peek(c)`, which reads `c.a` at site 7 (plain), then site 8
/// (volatile), then site 9 (plain). The reads are by code of another class, so the
/// dynamic check rejects each of them; `proven` sites are not checked.
fn outside_reads(proven: &[u32]) -> Sim {
    let env = Arc::new(MemEnv::new(true));
    let counter = env.class("Counter", true, &["a"]);
    let helper = env.class("Helper", false, &[]);
    let m = env.method(counter, "m");
    let peek = env.method(helper, "peek");
    for site in proven {
        env.prove_site(*site);
    }
    let mut s = Sim::new(env, &["capsule"]);
    let c = s.alloc(0, counter);
    let h = s.alloc(0, helper);
    call(&mut s, m, c, &[], |s| {
        call(s, peek, h, &[c], |s| {
            s.read(0, loc(c, 0), 7);
            s.vread(0, loc(c, 0), 8);
            s.read(0, loc(c, 0), 9);
        });
    });
    s.end(0);
    s
}

#[test]
fn proven_sites_skip_the_encapsulation_check() {
    // Nothing proven: the first outside read is a violation (then the class is demoted
    // and every later access goes on unfiltered).
    let s = outside_reads(&[]);
    assert_eq!(
        violations(&s),
        vec![("Counter".into(), "encapsulation".into(), vec![7])]
    );
    assert_eq!(s.seen_sites(), [7, 9].into());

    // Site 7 proven: it is taken as a capsule access of the running call (filtered, no
    // violation; the call is now inside the capsule); the volatile read at 8 is still
    // checked and breaks encapsulation.
    let s = outside_reads(&[7]);
    assert_eq!(
        violations(&s),
        vec![("Counter".into(), "encapsulation".into(), vec![7, 8])]
    );
    assert_eq!(s.seen_sites(), [9].into());

    // Sites 7 and 8 proven: the unproven plain read at 9 is still checked.
    let s = outside_reads(&[7, 8]);
    assert_eq!(
        violations(&s),
        vec![("Counter".into(), "encapsulation".into(), vec![7, 9])]
    );
    assert_eq!(s.seen_sites(), [9].into());

    // Everything proven: no check at all, every plain read filtered.
    let s = outside_reads(&[7, 8, 9]);
    assert_eq!(violations(&s), vec![]);
    assert!(s.seen_sites().is_empty());
}

/// Two threads call `c.set()` (which writes `this.a` at a proven site), ordered by a
/// lock or not.
fn two_setters(synchronized: bool) -> Sim {
    let env = Arc::new(MemEnv::new(true));
    let counter = env.class("Counter", true, &["a"]);
    let lock_c = env.class("Lock", false, &[]);
    let set = env.method(counter, "set");
    env.prove_site(10);
    env.prove_site(20);
    let mut s = Sim::new(env, &["capsule"]);
    let c = s.alloc(0, counter);
    let lock = s.alloc(0, lock_c);
    s.fork(0, 1, &[c, lock]);
    s.fork(0, 2, &[c, lock]);
    for (tid, site) in [(1, 10), (2, 20)] {
        if synchronized {
            s.acquire(tid, lock);
        }
        s.enter(tid, set, Some(c), &[]);
        s.write(tid, loc(c, 0), None, site);
        s.exit(tid, set, None);
        if synchronized {
            s.release(tid, lock);
        }
    }
    s.end(1);
    s.end(2);
    s
}

#[test]
fn proven_sites_are_still_synchronization_checked_and_filtered() {
    let s = two_setters(true);
    assert_eq!(violations(&s), vec![]);
    assert!(s.seen_sites().is_empty(), "capsule accesses are filtered");

    let s = two_setters(false);
    assert_eq!(
        violations(&s),
        vec![("Counter".into(), "synchronization".into(), vec![0, 20])]
    );
    // The earlier operation is thread 1's exit (site 0 in this harness); the violating
    // access goes on unfiltered.
    assert_eq!(s.seen_sites(), [20].into());
}
