//! The leak walk shared by `escape` (reachability, Rhodes Fig. 4.4) and `capsule`
//! (accessibility, Fig. 5.7): mark every object reachable from the roots, stopping
//! at objects that are already marked and at objects `stop` excludes (capsules, the
//! statics block).
//!
//! Cost: `mark` succeeds at most once per object over the whole run and only the
//! object that was newly marked is scanned (`for_each_ref`), so the total work of
//! all walks of a run is linear in the heap (objects + references), whatever the
//! number of leaks. An explicit worklist is used: lists of millions of objects must
//! not overflow the native stack.

use crate::env::HeapView;
use crate::event::ObjId;

/// Which of the two header bits a walk sets.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Bit {
    /// `escape`'s SHARED bit: reachable by more than one thread.
    Escaped,
    /// `capsule`'s bit: accessible by more than one capsule or thread.
    CapsuleShared,
}

#[inline]
pub fn is_marked(heap: &dyn HeapView, bit: Bit, obj: ObjId) -> bool {
    match bit {
        Bit::Escaped => heap.is_shared(obj),
        Bit::CapsuleShared => heap.is_capsule_shared(obj),
    }
}

#[inline]
fn mark(heap: &dyn HeapView, bit: Bit, obj: ObjId) -> bool {
    match bit {
        Bit::Escaped => heap.mark_shared(obj),
        Bit::CapsuleShared => heap.mark_capsule_shared(obj),
    }
}

/// Mark everything reachable from `roots` (not through `stop` objects). `work` is a
/// scratch buffer (kept by the caller to avoid reallocating); it is empty on return.
/// Returns how many objects were newly marked.
pub fn leak(
    heap: &dyn HeapView,
    bit: Bit,
    roots: &[ObjId],
    stop: &dyn Fn(ObjId) -> bool,
    work: &mut Vec<ObjId>,
) -> u64 {
    let mut marked = 0;
    work.clear();
    work.extend(roots.iter().copied().filter(|r| !is_marked(heap, bit, *r)));
    while let Some(obj) = work.pop() {
        if stop(obj) || !mark(heap, bit, obj) {
            continue;
        }
        marked += 1;
        heap.for_each_ref(obj, &mut |child| {
            if !is_marked(heap, bit, child) {
                work.push(child);
            }
        });
    }
    marked
}
