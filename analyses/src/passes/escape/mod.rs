//! `escape`: dynamic partial thread-escape filtering (Rhodes thesis ch. 4, Fig. 4.4).
//!
//! # Algorithm
//! The set G of *escaped* objects (reachable by more than one thread) is one header
//! bit per object ([`HeapView::mark_shared`], the VM's bit 40). G is closed under
//! reachability. Per event of thread t:
//! - `Read`/`Write` of `p.f`: p ∉ G → dropped (no race check); p ∈ G → forwarded, and
//!   a write of a reference v leaks v: G := G ∪ reachable(v).
//! - statics are shared by every thread: every static access is forwarded and a
//!   reference written to a static leaks ([`HeapView::is_statics`]).
//! - `VolatileWrite` of a reference into an escaped object or a static leaks it too.
//! - `Fork{handed}` leaks everything reachable from the handed objects (receiver and
//!   arguments of the new thread).
//! - acquire, release, fork, join, barriers, volatiles: never dropped (the pass
//!   interface cannot drop them; Fig. 4.1 shows why partial lock elision is unsound)
//!   and they never need their object to be escaped.
//!
//! Leaking marks each object once (the walk stops at marked objects), so all walks of
//! a run together cost time linear in the heap; see [`leak`].
//!
//! # Why "mark before the store becomes visible" is correct under parallel threads
//! The producer delivers a `Write` event *before* it performs the store (both tiers),
//! and a `VolatileWrite` atomically with it (under the location's volatile lock, which
//! volatile reads of the location take too). So when the reference v becomes
//! readable through the shared object, everything reachable from v is already marked,
//! and the invariant "an object that another thread can obtain is in G" holds at every
//! instant, not just between events.
//! A thread that obtains v through a race-free path (a monitor, a volatile read, a
//! join, a barrier) is ordered after the marking by that very synchronization, so
//! it sees the bit (the mark itself may be a relaxed atomic: the release/acquire of
//! the publishing synchronization orders it before the reader's test). This
//! matters for volatile publication, where the store itself is the synchronization:
//! with store-then-mark, a reader could acquire v, find it unmarked and have its
//! accesses dropped while the writer's later accesses are checked — a missed race
//! that may be the first one. A thread that obtains v through a *racy* read of the
//! shared field can see v unmarked, but that read is itself checked (the field's
//! object is in G) and races with the publishing write, so the trace's first race is
//! reported anyway. The unmarked part of a graph being walked is, by the invariant,
//! reachable only by the walking thread, so nobody mutates it during the walk; two
//! threads leaking overlapping graphs race only on the atomic mark, which each object
//! wins once.
//!
//! # Precision
//! Trace precise, not address precise (thesis §4.4–4.5, Thm 4.5.3): the chain reports
//! a race iff the unfiltered detector does, because the first race of a trace is never
//! filtered; a later race on an object whose earlier accesses were filtered before it
//! escaped through a racy publication can be missed (Fig. 4.2: the race on `p.o` is
//! reported, the one on `r1.f` is not).
//!
//! # Chaining with `capsule`
//! The two filters keep different sets (reachability vs accessibility) and each needs
//! to account for every reference write into a member of its own set. `escape`
//! therefore forwards a reference write into a thread-local target whose
//! capsule-shared bit is set (only the `capsule` pass ever sets it), and `capsule`
//! leaks in this pass's bit the references it drops (see its module doc).
//!
//! `capsule` also checks the capsule discipline (encapsulation, synchronization) on
//! accesses to the fields of capsule objects, thread-local ones included: a violation
//! is a violation whether or not the object has escaped yet. `escape` drops such an
//! access as [`Flow::Local`]: the detectors after it still never see it (trace
//! precision and the statistics of both filters are unchanged), but a `capsule` pass
//! after it checks it ([`Pass::local_access`]). The other thread-local accesses need
//! no capsule check: objects that only one thread can reach cannot take part in an
//! unsynchronized capsule call.
//!
//! # Inline test
//! As first pass of a chain, `escape` requests [`InlineFilter::NotShared`]: the JIT
//! drops an access without a call iff `header & (1 << 40) == 0` (reads, and writes of
//! non-reference values) or `header & (3 << 40) == 0` (reference writes); static
//! accesses always call out, and so do accesses to fields of capsule classes when a
//! later pass checks thread-local accesses ([`crate::Chain::checks_local`]). That is exactly the `Flow::Drop` case of
//! [`Pass::access`], whose only other effect — the `Local` record of the access's
//! site in the thread's table — is repeated from the JIT's per-site counts by
//! [`Pass::inline_dropped`] before the thread ends, so the statistics are the
//! interpreter's. (Only valid while `escape` is the first pass: no pass before it
//! may miss the access.)
//!
//! Without a live heap (offline traces) the pass forwards every access.

pub mod leak;
pub mod mem;

use std::sync::Arc;

use parking_lot::Mutex;

use crate::env::HeapView;
use crate::event::{Event, EventKind, Loc, ObjId, Op};
use crate::filterstats::{AccessClass, LocKind, Owner, SiteTable};
use crate::pass::{Flow, InlineCheckFlow, InlineChecks, InlineDrops, InlineFilter, Local, Pass};
use crate::shared::Shared;
use crate::thread::ThreadState;

use leak::Bit;

/// Per-thread state: the walk's worklist and this thread's location records.
#[derive(Default)]
struct EscapeLocal {
    work: Vec<ObjId>,
    sites: SiteTable,
}

pub struct Escape {
    shared: Arc<Shared>,
    sites: Mutex<SiteTable>,
}

impl Escape {
    /// The heap and the thread's state, for an event that changes something.
    fn state<'a>(
        &'a self,
        local: &'a mut Local,
    ) -> Option<(&'a dyn HeapView, &'a mut EscapeLocal)> {
        Some((self.shared.env.heap()?, local_of(local)?))
    }

    pub fn new(shared: &Arc<Shared>) -> Self {
        Escape {
            shared: shared.clone(),
            sites: Mutex::new(SiteTable::new()),
        }
    }

    /// Per-site records of the threads that have ended.
    pub fn site_table(&self) -> SiteTable {
        self.sites.lock().clone()
    }

    /// G := G ∪ reachable(roots) (also used by `capsule`, see its module doc).
    pub(crate) fn leak(heap: &dyn HeapView, roots: &[ObjId], work: &mut Vec<ObjId>) {
        leak::leak(
            heap,
            Bit::Escaped,
            roots,
            &|o: ObjId| heap.is_statics(o),
            work,
        );
    }

    #[inline]
    fn is_escaped(heap: &dyn HeapView, obj: ObjId) -> bool {
        heap.is_shared(obj) || heap.is_statics(obj)
    }
}

fn local_of(local: &mut Local) -> Option<&mut EscapeLocal> {
    local.downcast_mut::<EscapeLocal>()
}

/// The location kind of an access target.
pub(crate) fn loc_kind(heap: &dyn HeapView, loc: Loc) -> LocKind {
    if heap.is_statics(loc.obj) {
        LocKind::Static
    } else if heap.class_of(loc.obj).is_some() {
        LocKind::Field
    } else {
        LocKind::Array
    }
}

impl Pass for Escape {
    fn name(&self) -> &'static str {
        "escape"
    }
    fn wants_frames(&self) -> bool {
        false
    }

    fn thread_local(&self) -> Box<Local> {
        Box::new(EscapeLocal::default())
    }

    fn access(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) -> Flow {
        let Some(heap) = self.shared.env.heap() else {
            return Flow::Forward;
        };
        // A BigFoot check comes at or after the accesses it covers, and an escaped
        // object stays escaped: if its object is still thread-local, so it was at
        // every covered access, which this filter would have dropped.
        if let EventKind::Check { loc, .. } = ev.kind {
            return if Self::is_escaped(heap, loc.obj) {
                Flow::Forward
            } else {
                Flow::Drop
            };
        }
        let Some(l) = local_of(local) else {
            return Flow::Forward;
        };
        let Some((loc, op, value)) = ev.kind.plain_access() else {
            return Flow::Forward;
        };
        let is_write = op == Op::Write;
        let kind = || loc_kind(heap, loc);
        let owner = Owner::Thread(t.tid);
        // Fig. 4.4: p ∈ G → checked; a written reference leaks.
        if Self::is_escaped(heap, loc.obj) {
            if let Some(v) = value {
                Self::leak(heap, &[v], &mut l.work);
            }
            l.sites
                .record(ev.site, loc, kind, AccessClass::Shared, owner, is_write);
            return Flow::Forward;
        }
        l.sites
            .record(ev.site, loc, kind, AccessClass::Local, owner, is_write);
        // p ∉ G → filtered, unless a later `capsule` pass must see this reference
        // write, or check this access to a capsule (see "Chaining with `capsule`").
        if value.is_some() && heap.is_capsule_shared(loc.obj) {
            return Flow::Forward;
        }
        if heap
            .class_of(loc.obj)
            .is_some_and(|c| self.shared.env.is_capsule_class(c))
        {
            return Flow::Local;
        }
        Flow::Drop
    }

    /// Only volatile writes of references, forks and the thread's end change
    /// anything; the heap and the thread's state are looked up for those alone
    /// (most events are calls and locks).
    fn event(&self, _t: &ThreadState, local: &mut Local, ev: &Event<'_>) {
        match ev.kind {
            EventKind::VolatileWrite {
                loc,
                value: Some(v),
            } => {
                if let Some((heap, l)) = self.state(local)
                    && Self::is_escaped(heap, loc.obj)
                {
                    Self::leak(heap, &[v], &mut l.work);
                }
            }
            EventKind::Fork { handed, .. } => {
                if let Some((heap, l)) = self.state(local) {
                    Self::leak(heap, handed, &mut l.work);
                }
            }
            EventKind::ThreadEnd => {
                if let Some((_, l)) = self.state(local) {
                    self.sites.lock().absorb(&mut l.sites);
                }
            }
            _ => {}
        }
    }

    /// A check of an unescaped object is dropped, any other forwarded, as in
    /// [`Pass::access`]; without a heap every check is forwarded.
    fn inline_check_flow(&self) -> Option<InlineCheckFlow> {
        Some(match self.shared.env.heap() {
            Some(_) => InlineCheckFlow::NotShared,
            None => InlineCheckFlow::Forward,
        })
    }

    /// The drop decision of [`Pass::access`] for a non-static target, whose only
    /// other effect is the `Local` site record that [`Pass::inline_dropped`] repeats.
    fn inline_filter(&self) -> Option<InlineFilter> {
        self.shared.env.heap().map(|_| InlineFilter::NotShared)
    }

    /// An access to an escaped object other than a reference write is forwarded
    /// after recording its site as shared (Fig. 4.4, `p ∈ G`), nothing else.
    fn forwards_inline(&self) -> bool {
        true
    }

    fn inline_forwarded(&self, t: &ThreadState, local: &mut Local, checks: &[InlineChecks]) {
        let (Some(heap), Some(l)) = (self.shared.env.heap(), local_of(local)) else {
            return;
        };
        l.sites
            .record_inline_forwarded(checks, Owner::Thread(t.tid), |loc| loc_kind(heap, loc));
    }

    fn inline_dropped(&self, _t: &ThreadState, local: &mut Local, drops: &[InlineDrops]) {
        let (Some(heap), Some(l)) = (self.shared.env.heap(), local_of(local)) else {
            return;
        };
        l.sites
            .record_inline_drops(drops, |loc| loc_kind(heap, loc), false);
    }

    fn stats(&self) -> Option<serde_json::Value> {
        self.shared.env.heap()?;
        let stats = self.sites.lock().stats(self.shared.env.as_ref(), true);
        serde_json::to_value(stats).ok()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::mem::MemEnv;
    use crate::chain::Chain;
    use crate::env::HeapView;
    use crate::event::{Event, EventKind, Loc, ObjId, SiteId};
    use crate::pass::{InlineDrops, InlineFilter};
    use crate::shared::ChainOptions;
    use crate::thread::ThreadCx;

    /// A producer of one thread's accesses that, like the JIT, performs the chain's
    /// inline test itself when asked to, and reports the dropped accesses per site.
    struct Producer<'a> {
        env: &'a MemEnv,
        chain: &'a Chain,
        inline: Option<InlineFilter>,
        drops: Vec<InlineDrops>,
    }

    impl Producer<'_> {
        fn dropped_inline(&self, loc: Loc, value: Option<ObjId>) -> bool {
            let h = &self.env.heap;
            match self.inline {
                Some(InlineFilter::NotShared) => {
                    let checked = h.is_statics(loc.obj)
                        || h.is_shared(loc.obj)
                        || (value.is_some() && h.is_capsule_shared(loc.obj));
                    !checked
                }
                // Not escape's test; these tests run escape alone.
                Some(InlineFilter::CapsuleProtected) | None => false,
            }
        }

        fn access(&mut self, cx: &mut ThreadCx, site: u32, loc: Loc, write: Option<Option<ObjId>>) {
            if self.dropped_inline(loc, write.flatten()) {
                let d = match self.drops.iter_mut().find(|d| d.site.0 == site) {
                    Some(d) => d,
                    None => {
                        self.drops.push(InlineDrops {
                            site: SiteId(site),
                            rep: loc,
                            reads: 0,
                            writes: 0,
                            capsule: false,
                        });
                        self.drops.last_mut().expect("pushed")
                    }
                };
                match write {
                    Some(_) => d.writes += 1,
                    None => d.reads += 1,
                }
            } else {
                let kind = match write {
                    Some(value) => EventKind::Write { loc, value },
                    None => EventKind::Read { loc },
                };
                let ev = Event {
                    tid: cx.tid(),
                    site: SiteId(site),
                    index: 0,
                    kind,
                };
                self.chain.deliver(cx, &ev);
            }
            if let Some(v) = write {
                self.env.heap.store(loc, v);
            }
        }

        fn simple(&self, cx: &mut ThreadCx, kind: EventKind<'_>) {
            let ev = Event {
                tid: cx.tid(),
                site: SiteId(0),
                index: 0,
                kind,
            };
            self.chain.deliver(cx, &ev);
        }
    }

    fn at(obj: ObjId, slot: u32) -> Loc {
        Loc { obj, slot }
    }

    /// Local, escaping, capsule-shared and static accesses of two threads; returns the
    /// chain's statistics and the number of accesses dropped inline.
    fn scenario(tools: &str, inline: bool) -> (serde_json::Value, u64) {
        let env = Arc::new(MemEnv::new(true));
        let node = env.class("Node", false, &["v", "next"]);
        let holder = env.class("Holder", false, &["o"]);
        let chain =
            crate::passes::chain(tools, env.clone(), ChainOptions::default()).expect("chain");
        let filter = chain.inline_filter();
        assert_eq!(filter, Some(InlineFilter::NotShared));
        let mut p = Producer {
            env: &env,
            chain: &chain,
            inline: filter.filter(|_| inline),
            drops: Vec::new(),
        };
        let mut cx = chain.main_thread();
        p.simple(&mut cx, EventKind::ThreadStart);
        let h = env.new_object(holder);
        let (a, b, c) = (
            env.new_object(node),
            env.new_object(node),
            env.new_object(node),
        );
        let arr = env.heap.alloc(None, 4);
        for i in 0..4 {
            p.access(&mut cx, 1, at(a, 0), Some(None));
            p.access(&mut cx, 2, at(a, 0), None);
            p.access(&mut cx, 3, at(arr, i), Some(None));
            p.access(&mut cx, 4, at(arr, i), None);
        }
        p.access(&mut cx, 5, at(a, 1), Some(Some(b)));
        let mut child = chain.fork(&mut cx, 1, SiteId(6), 0, &[h]);
        p.simple(&mut child, EventKind::ThreadStart);
        p.access(&mut child, 7, at(h, 0), None);
        // `a` escapes through the shared holder (and `b` with it).
        p.access(&mut cx, 8, at(h, 0), Some(Some(a)));
        p.access(&mut cx, 1, at(a, 0), Some(None));
        p.access(&mut cx, 9, at(b, 0), None);
        // A capsule-shared local target: reference writes are forwarded, others not.
        env.heap.mark_capsule_shared(c);
        p.access(&mut cx, 10, at(c, 1), Some(Some(b)));
        p.access(&mut cx, 11, at(c, 0), Some(None));
        p.access(&mut cx, 12, at(env.heap.statics(), 0), Some(None));
        // The JIT hands its counts over just before each thread's `ThreadEnd`.
        p.simple(&mut child, EventKind::ThreadEnd);
        let drops = std::mem::take(&mut p.drops);
        let dropped_inline = drops.iter().map(|d| d.reads + d.writes).sum();
        chain.add_inline_drops(&mut cx, 0, &drops);
        p.simple(&mut cx, EventKind::ThreadEnd);
        (chain.stats_json(), dropped_inline)
    }

    #[test]
    fn inline_drops_give_the_statistics_of_the_pass() {
        for tools in ["escape", "escape:count"] {
            let (called, none) = scenario(tools, false);
            let (inline, dropped_inline) = scenario(tools, true);
            assert_eq!((none, dropped_inline), (0, 18));
            assert_eq!(called, inline, "{tools}");
            // 16 + 1 + 1 local accesses dropped, the rest forwarded.
            assert_eq!(called["passes"][0]["dropped"], 18, "{called}");
            assert_eq!(called["passes"][0]["accesses_in"], 24, "{called}");
        }
    }
}
