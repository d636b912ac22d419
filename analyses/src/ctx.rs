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
/// [`CtxTree::child_cached`]. In front of the map, a small direct-mapped table of
/// recent lookups: a method called in a loop from a few sites (a capsule's methods,
/// each calling the next) then costs one compare per call instead of a hash probe.
#[derive(Debug, Default)]
pub struct CtxCache {
    recent: Recent,
    map: HashMap<(CtxId, u64), CtxId>,
}

/// Slots of [`CtxCache`]'s direct-mapped front.
const RECENT: usize = 64;

/// `(parent, frame, child)` per slot; a slot whose `frame` is 0 is empty (a packed
/// frame of method 0 at site 0 is simply looked up in the map).
#[derive(Debug)]
struct Recent(Box<[(CtxId, u64, CtxId); RECENT]>);

impl Default for Recent {
    fn default() -> Self {
        Recent(Box::new([(CtxId::ROOT, 0, CtxId::ROOT); RECENT]))
    }
}

impl CtxCache {
    fn slot(parent: CtxId, frame: u64) -> usize {
        let h = (frame ^ u64::from(parent.0).rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - RECENT.trailing_zeros())) as usize
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
        let i = CtxCache::slot(parent, frame);
        let (p, f, c) = cache.recent.0[i];
        if f == frame && p == parent && frame != 0 {
            return c;
        }
        let c = *cache
            .map
            .entry((parent, frame))
            .or_insert_with(|| self.child(parent, method, call_site));
        cache.recent.0[i] = (parent, frame, c);
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
