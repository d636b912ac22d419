//! Interned call stacks ("contexts"), so shadow state can remember where an earlier
//! access came from with one integer and reports can print its whole CapJava stack.
//!
//! A context is a node of a tree: (parent, method, call site). The chain maintains
//! each thread's current context from `Enter`/`Exit` events, or from the stack the
//! producer hands over ([`crate::Chain::sync_frames`]).

use hashbrown::HashMap;
use parking_lot::{Mutex, RwLock};

use crate::event::{MethodId, SiteId};

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default, PartialOrd, Ord)]
pub struct CtxId(pub u32);

impl CtxId {
    /// The empty stack (thread entry).
    pub const ROOT: CtxId = CtxId(0);
}

/// One frame of a call stack in one word, as a producer keeps it for
/// [`crate::Chain::sync_frames`]: the method in the high half, the site it was called
/// from in the low half.
#[inline]
pub const fn pack_frame(method: MethodId, call_site: SiteId) -> u64 {
    ((method.0 as u64) << 32) | call_site.0 as u64
}

/// The inverse of [`pack_frame`].
#[inline]
pub const fn unpack_frame(w: u64) -> (MethodId, SiteId) {
    (MethodId((w >> 32) as u32), SiteId(w as u32))
}

#[derive(Copy, Clone, Debug)]
struct Node {
    parent: CtxId,
    method: MethodId,
    call_site: SiteId,
}

/// One frame of a resolved stack, innermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub method: MethodId,
    /// Where this method was called from.
    pub call_site: SiteId,
}

/// One thread's contexts interned so far, by (parent, packed frame): see
/// [`CtxTree::child_cached`]. An open-addressing table with linear probing that
/// holds every pair the thread has interned: one hash and, as a rule, one cache
/// line.
///
/// A recursive program's contexts are thousands: raytracer's threads intern about
/// 4,200 each, and look up a million and a half, nearly all with another parent
/// than their previous lookup at the same depth (the stack alternates between
/// subtrees of the recursion). A small direct-mapped table of recent pairs in front
/// of a general hash map, as this was, missed 99% of the time there, and each miss
/// then paid the map's probe too: 11% of raytracer's time under `bigfoot`, now 6.5%
/// (one probe, mostly a cache miss on a line the program's own data evicted).
#[derive(Debug)]
pub struct CtxCache {
    slots: Box<[CacheSlot]>,
    len: usize,
}

/// A pair of [`CtxCache`]: `child` is [`EMPTY`] in a free slot.
#[derive(Copy, Clone, Debug)]
struct CacheSlot {
    frame: u64,
    parent: CtxId,
    child: CtxId,
}

/// The `child` of a free slot (no tree has 2^32 − 1 contexts).
const EMPTY: CtxId = CtxId(u32::MAX);

/// Slots of a fresh [`CtxCache`] (most threads intern a few dozen contexts).
const INITIAL_SLOTS: usize = 64;

impl Default for CtxCache {
    fn default() -> Self {
        CtxCache::with_slots(INITIAL_SLOTS)
    }
}

impl CtxCache {
    fn with_slots(n: usize) -> Self {
        let free = CacheSlot {
            frame: 0,
            parent: CtxId::ROOT,
            child: EMPTY,
        };
        CtxCache {
            slots: vec![free; n].into_boxed_slice(),
            len: 0,
        }
    }

    /// The first slot to probe for `(parent, frame)`.
    #[inline]
    fn home(&self, parent: CtxId, frame: u64) -> usize {
        let h = (frame ^ u64::from(parent.0).rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    /// The child of `(parent, frame)`, if this thread interned it.
    #[inline]
    fn get(&self, parent: CtxId, frame: u64) -> Option<CtxId> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(parent, frame);
        loop {
            let s = self.slots[i];
            if s.child == EMPTY {
                return None;
            }
            if s.frame == frame && s.parent == parent {
                return Some(s.child);
            }
            i = (i + 1) & mask;
        }
    }

    /// Remember `(parent, frame) -> child` (not yet held), growing the table to keep
    /// it at most three quarters full.
    fn insert(&mut self, parent: CtxId, frame: u64, child: CtxId) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            let mut bigger = CtxCache::with_slots(self.slots.len() * 2);
            for s in self.slots.iter().filter(|s| s.child != EMPTY) {
                bigger.insert(s.parent, s.frame, s.child);
            }
            *self = bigger;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(parent, frame);
        while self.slots[i].child != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = CacheSlot {
            frame,
            parent,
            child,
        };
        self.len += 1;
    }
}

#[derive(Default)]
pub struct CtxTree {
    nodes: RwLock<Vec<Node>>,
    index: Mutex<HashMap<(CtxId, MethodId, SiteId), CtxId>>,
}

impl CtxTree {
    pub fn new() -> Self {
        let t = CtxTree::default();
        t.nodes.write().push(Node {
            parent: CtxId::ROOT,
            method: MethodId(u32::MAX),
            call_site: SiteId(0),
        });
        t
    }

    /// The context for calling `method` from `call_site` within `parent`.
    pub fn child(&self, parent: CtxId, method: MethodId, call_site: SiteId) -> CtxId {
        let mut index = self.index.lock();
        if let Some(id) = index.get(&(parent, method, call_site)) {
            return *id;
        }
        let mut nodes = self.nodes.write();
        let id = CtxId(nodes.len() as u32);
        nodes.push(Node {
            parent,
            method,
            call_site,
        });
        index.insert((parent, method, call_site), id);
        id
    }

    /// [`CtxTree::child`] through a thread's own cache of the contexts it has
    /// interned: a context never changes once interned, so a thread that calls the
    /// same method from the same site in the same context again (every call in a
    /// loop) finds it without the tree's lock, which threads would contend for.
    #[inline]
    pub fn child_cached(
        &self,
        cache: &mut CtxCache,
        parent: CtxId,
        method: MethodId,
        call_site: SiteId,
    ) -> CtxId {
        let frame = pack_frame(method, call_site);
        if let Some(c) = cache.get(parent, frame) {
            return c;
        }
        let c = self.child(parent, method, call_site);
        cache.insert(parent, frame, c);
        c
    }

    /// The frames of a context, innermost first.
    pub fn frames(&self, mut ctx: CtxId) -> Vec<Frame> {
        let nodes = self.nodes.read();
        let mut out = Vec::new();
        while ctx != CtxId::ROOT && (ctx.0 as usize) < nodes.len() {
            let n = nodes[ctx.0 as usize];
            out.push(Frame {
                method: n.method,
                call_site: n.call_site,
            });
            ctx = n.parent;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_cache_keeps_every_context_it_interned_through_growth() {
        let tree = CtxTree::new();
        let mut cache = CtxCache::default();
        // A recursive pattern: 40 levels, 3 callees per level, each called from 2
        // sites (240 pairs: the table grows three times), walked twice.
        let mut seen = Vec::new();
        for round in 0..2 {
            let mut parent = CtxId::ROOT;
            let mut i = 0;
            for depth in 0..40u32 {
                for m in 0..3u32 {
                    for site in 0..2u32 {
                        let (method, call_site) = (MethodId(m), SiteId(depth * 10 + site));
                        let c = tree.child_cached(&mut cache, parent, method, call_site);
                        assert_eq!(c, tree.child(parent, method, call_site));
                        let frame = pack_frame(method, call_site);
                        assert_eq!(cache.get(parent, frame), Some(c));
                        if round == 0 {
                            seen.push((parent, frame, c));
                        } else {
                            assert_eq!(seen[i], (parent, frame, c), "interned again");
                        }
                        i += 1;
                    }
                }
                parent = tree.child_cached(&mut cache, parent, MethodId(0), SiteId(depth * 10));
            }
        }
        assert_eq!(cache.len, 40 * 6);
        assert!(cache.slots.len() * 3 >= cache.len * 4);
        for &(parent, frame, c) in &seen {
            assert_eq!(cache.get(parent, frame), Some(c));
        }
        // A frame of method 0 at site 0 is an ordinary key.
        assert_eq!(cache.get(CtxId::ROOT, 0), seen.first().map(|s| s.2));
        assert_eq!(cache.get(CtxId(123_456), 0), None);
    }
}
