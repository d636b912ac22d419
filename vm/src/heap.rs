//! Guest memory: per-thread bump arenas carved from chunks of a global allocator.
//!
//! No GC: every block lives until the [`Heap`] is dropped (after every guest thread
//! ended). `--max-heap` bounds the bytes handed to the guest with one global counter.
//! Every slot is an `AtomicU64`; see [`crate::layout`] for the block layout.

use std::alloc::Layout;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::layout::{self, Kind};

/// Bytes of one arena chunk. Blocks larger than a quarter of it get their own chunk.
const CHUNK_BYTES: usize = 256 * 1024;

/// Every byte of the guest heap lies below this address, the end of the shadow
/// tables' direct range (`analyses::pass::FASTTRACK_DIRECT_BITS`): generated code
/// indexes those tables with a location's key (its address) without testing it
/// (`jit::translate`, `same_epoch_check`). x86-64 Linux hands out user addresses
/// below 2^47 unless a program asks for more; memory past it counts as refused.
pub const KEY_LIMIT: u64 = 1 << analyses::pass::FASTTRACK_DIRECT_BITS;

/// The allocation would exceed `--max-heap` (or the host refused the memory, or
/// placed it past [`KEY_LIMIT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapFull;

pub struct Heap {
    limit: u64,
    used: AtomicU64,
    serial: AtomicU64,
    chunks: Mutex<Vec<(usize, Layout)>>,
}

/// A thread's bump regions: one for arrays, one for every other block (objects,
/// monitor records, ...), each inside its current chunk.
///
/// Arrays live apart so that the shadow tables indexed by address that only
/// objects' fields use (BigFoot's field groups, whose leaves are committed when
/// first touched, 32 KiB of heap each) do not commit leaves for the elements of
/// the arrays allocated between the objects (montecarlo's paths).
#[derive(Default)]
pub struct Arena {
    blocks: Region,
    arrays: Region,
}

/// A bump region inside a chunk.
#[derive(Default)]
struct Region {
    next: usize,
    end: usize,
}

impl Heap {
    /// A heap that hands at most `limit` bytes to the guest.
    pub fn new(limit: u64) -> Heap {
        Heap {
            limit,
            used: AtomicU64::new(0),
            serial: AtomicU64::new(1),
            chunks: Mutex::new(Vec::new()),
        }
    }

    /// The `--max-heap` limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes handed to the guest so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    fn chunk(&self, bytes: usize) -> Result<usize, HeapFull> {
        let layout = Layout::from_size_align(bytes, 16).map_err(|_| HeapFull)?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) } as usize;
        if p == 0 {
            return Err(HeapFull);
        }
        if p as u64 + bytes as u64 > KEY_LIMIT {
            // SAFETY: `p` was allocated just above with `layout`.
            unsafe { std::alloc::dealloc(p as *mut u8, layout) };
            return Err(HeapFull);
        }
        self.chunks.lock().push((p, layout));
        Ok(p)
    }

    /// Zeroed words from `region`, not counted against the limit (VM-internal
    /// records, or a block [`Heap::alloc`] counted).
    fn raw(&self, region: &mut Region, words: usize) -> Result<u64, HeapFull> {
        let bytes = words.checked_mul(layout::WORD).ok_or(HeapFull)?;
        if bytes > CHUNK_BYTES / 4 {
            return self.chunk(bytes).map(|p| p as u64);
        }
        if region.end - region.next < bytes {
            let p = self.chunk(CHUNK_BYTES)?;
            region.next = p;
            region.end = p + CHUNK_BYTES;
        }
        let p = region.next;
        region.next += bytes;
        Ok(p as u64)
    }

    /// A new guest block of `words` words (header included) with the given header.
    /// Counts against the limit and takes the next serial number (`serial = true`).
    pub fn alloc(
        &self,
        arena: &mut Arena,
        words: usize,
        kind: Kind,
        id: u32,
        serial: bool,
    ) -> Result<u64, HeapFull> {
        let bytes = (words as u64)
            .checked_mul(layout::WORD as u64)
            .ok_or(HeapFull)?;
        let before = self.used.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) > self.limit {
            self.used.fetch_sub(bytes, Ordering::Relaxed);
            return Err(HeapFull);
        }
        let region = match kind {
            Kind::Array => &mut arena.arrays,
            _ => &mut arena.blocks,
        };
        let a = match self.raw(region, words) {
            Ok(a) => a,
            Err(e) => {
                self.used.fetch_sub(bytes, Ordering::Relaxed);
                return Err(e);
            }
        };
        store(a, layout::HEADER, layout::header(kind, id));
        if serial {
            let s = self.serial.fetch_add(1, Ordering::Relaxed);
            store(a, layout::SERIAL, s);
        }
        Ok(a)
    }

    /// The monitor record of `obj`, created on first use (CAS into header word 1).
    pub fn monitor(&self, arena: &mut Arena, obj: u64) -> u64 {
        let w = word(obj, layout::MONITOR);
        let m = w.load(Ordering::Acquire);
        if m != 0 {
            return m;
        }
        // A monitor record is 24 bytes; failing to get them means the host is out of
        // memory, which no guest error can describe better than an abort.
        let fresh = self
            .raw(&mut arena.blocks, layout::MONITOR_WORDS)
            .expect("out of host memory for a monitor record");
        match w.compare_exchange(0, fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => fresh,
            Err(winner) => winner,
        }
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        for (p, layout) in self.chunks.get_mut().drain(..) {
            // SAFETY: allocated by `chunk` with this layout, freed once.
            unsafe { std::alloc::dealloc(p as *mut u8, layout) };
        }
    }
}

/// The word `i` of the block at `addr`.
///
/// Contract (upheld by the VM, not checked here): `addr` is a block handed out by a
/// live [`Heap`] (or a monitor record) and `i` lies inside it — field indices come from
/// the type-checked IR, array indices are bounds-checked by the caller.
#[inline(always)]
pub fn word<'a>(addr: u64, i: usize) -> &'a AtomicU64 {
    debug_assert!(addr != 0 && addr.is_multiple_of(8));
    // SAFETY: see the contract above; the heap outlives every guest thread.
    unsafe { &*((addr as usize + i * layout::WORD) as *const AtomicU64) }
}

/// Plain (Relaxed) load of a guest slot.
#[inline(always)]
pub fn load(addr: u64, i: usize) -> u64 {
    word(addr, i).load(Ordering::Relaxed)
}

/// Plain (Relaxed) store to a guest slot.
#[inline(always)]
pub fn store(addr: u64, i: usize, v: u64) {
    word(addr, i).store(v, Ordering::Relaxed)
}

/// Volatile load (Java volatile: sequentially consistent).
#[inline]
pub fn load_volatile(addr: u64, i: usize) -> u64 {
    word(addr, i).load(Ordering::SeqCst)
}

/// Volatile store.
#[inline]
pub fn store_volatile(addr: u64, i: usize, v: u64) {
    word(addr, i).store(v, Ordering::SeqCst)
}

#[inline]
pub fn header(addr: u64) -> u64 {
    word(addr, layout::HEADER).load(Ordering::Relaxed)
}

#[inline]
pub fn kind(addr: u64) -> Kind {
    Kind::from_byte((header(addr) >> layout::KIND_SHIFT) as u8)
}

/// Class id (objects, class monitors) or array-type id (arrays).
#[inline]
pub fn type_id(addr: u64) -> u32 {
    (header(addr) & layout::ID_MASK) as u32
}

#[inline]
pub fn serial(addr: u64) -> u64 {
    load(addr, layout::SERIAL)
}

#[inline]
pub fn array_len(addr: u64) -> u64 {
    load(addr, layout::ARRAY_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_zeroed_with_header_and_serials() {
        let h = Heap::new(1 << 20);
        let mut a = Arena::default();
        let o = h.alloc(&mut a, 5, Kind::Object, 7, true).unwrap();
        let p = h.alloc(&mut a, 4, Kind::Array, 2, true).unwrap();
        assert_eq!(kind(o), Kind::Object);
        assert_eq!(type_id(o), 7);
        assert_eq!(kind(p), Kind::Array);
        assert_eq!((serial(o), serial(p)), (1, 2));
        assert_eq!(load(o, 3), 0);
        store(o, 4, 42);
        assert_eq!(load(o, 4), 42);
    }

    #[test]
    fn arrays_and_other_blocks_fill_separate_chunks() {
        let h = Heap::new(1 << 20);
        let mut a = Arena::default();
        let o1 = h.alloc(&mut a, 5, Kind::Object, 0, true).unwrap();
        let arr = h.alloc(&mut a, 24, Kind::Array, 0, true).unwrap();
        let o2 = h.alloc(&mut a, 5, Kind::Object, 0, true).unwrap();
        let arr2 = h.alloc(&mut a, 24, Kind::Array, 0, true).unwrap();
        // Each kind bumps through its own region: objects and arrays stay contiguous
        // among themselves, whatever was allocated between them.
        assert_eq!(o2, o1 + 5 * layout::WORD as u64);
        assert_eq!(arr2, arr + 24 * layout::WORD as u64);
        assert!(!(o1..=o2).contains(&arr));
    }

    #[test]
    fn limit_is_enforced() {
        let h = Heap::new(100);
        let mut a = Arena::default();
        assert!(h.alloc(&mut a, 10, Kind::Object, 0, true).is_ok());
        assert_eq!(h.alloc(&mut a, 10, Kind::Object, 0, true), Err(HeapFull));
        assert_eq!(h.used(), 80);
    }

    #[test]
    fn big_blocks_get_their_own_chunk_and_monitors_are_shared() {
        let h = Heap::new(u64::MAX);
        let mut a = Arena::default();
        let big = h.alloc(&mut a, 100_000, Kind::Array, 0, true).unwrap();
        assert_eq!(load(big, 99_999), 0);
        let m1 = h.monitor(&mut a, big);
        let m2 = h.monitor(&mut a, big);
        assert_eq!(m1, m2);
    }
}
