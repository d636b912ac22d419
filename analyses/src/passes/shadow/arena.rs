//! Where a [`super::PageTable`]'s leaves live once the table is large: chunks mapped
//! straight from the kernel, aligned to 2 MiB and marked for transparent huge pages
//! (`madvise(MADV_HUGEPAGE)`), carved into leaves by a bump pointer and unmapped
//! only with the table.
//!
//! Why: FastTrack's and SingleTrack's leaves are nearly all touched, and with 4 KiB
//! pages each page costs a fault on first touch and a TLB entry on every access
//! after. crypt under `singletrack:fasttrack` builds 3.7 GB of shadow: about 970,000
//! page faults, a quarter of its CPU time in the kernel, and the JIT's inline tests
//! miss the TLB on nearly every new location. A huge page is one fault and one TLB
//! entry for 512 small ones.
//!
//! Small tables keep the global allocator: the first [`SMALL_BYTES`] of leaves of a
//! table come from it, so a short run's resident memory does not grow by a 2 MiB
//! page per table. So does every table where the kernel's transparent huge pages are
//! off (`[never]` in `/sys/kernel/mm/transparent_hugepage/enabled`): chunks in small
//! pages would only lose the clear that committed tables make when a leaf is created
//! (see `PageTable::zeroed_committed`). Where the advice is taken but no huge page is
//! free, the chunks are ordinary anonymous memory: still zeroed, committed page by
//! page on first touch.

use std::ptr::NonNull;

use parking_lot::Mutex;

/// Bytes of leaves a table takes from the global allocator before it uses chunks.
pub const SMALL_BYTES: usize = 8 << 20;
/// A chunk's size and alignment.
const CHUNK: usize = 32 << 20;
const HUGE: usize = 2 << 20;

/// Chunks of zeroed memory, carved into blocks that live as long as the arena.
#[derive(Default)]
pub struct Arena {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Bytes handed out by the global allocator so far ([`Arena::small`]).
    small: usize,
    /// Every chunk mapped: its start and length.
    chunks: Vec<(usize, usize)>,
    /// The free part of the last chunk.
    next: usize,
    end: usize,
}

// SAFETY: the arena hands out raw blocks and unmaps its chunks only when dropped;
// its own state is behind the mutex.
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}

impl Arena {
    /// True if a block of `size` bytes should still come from the global allocator
    /// (the table is small); counts it if so.
    pub fn small(&self, size: usize) -> bool {
        if !huge_pages() {
            return true;
        }
        let mut g = self.inner.lock();
        if g.small + size <= SMALL_BYTES {
            g.small += size;
            true
        } else {
            false
        }
    }

    /// True if `addr` lies in one of the arena's chunks.
    pub fn owns(&self, addr: usize) -> bool {
        let g = self.inner.lock();
        g.chunks
            .iter()
            .any(|&(base, len)| (base..base + len).contains(&addr))
    }

    /// A zeroed block of `size` bytes aligned to `align` (at most 2 MiB), valid until
    /// the arena is dropped; `None` if the kernel refuses the memory.
    pub fn alloc(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        debug_assert!(align.is_power_of_two() && align <= HUGE);
        let mut g = self.inner.lock();
        let start = g.next.next_multiple_of(align);
        if g.next == 0 || start + size > g.end {
            let len = size.next_multiple_of(HUGE).max(CHUNK);
            let base = map_aligned(len)?;
            g.chunks.push((base, len));
            g.next = base;
            g.end = base + len;
        }
        let start = g.next.next_multiple_of(align);
        g.next = start + size;
        NonNull::new(start as *mut u8)
    }
}

/// Whether the kernel may back `MADV_HUGEPAGE` memory with huge pages (read once).
pub fn huge_pages() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|s| s.contains("[always]") || s.contains("[madvise]"))
    })
}

/// `len` bytes (a multiple of 2 MiB) of zeroed anonymous memory aligned to 2 MiB,
/// advised for huge pages.
fn map_aligned(len: usize) -> Option<usize> {
    let over = len + HUGE;
    // SAFETY: an anonymous private mapping with no address hint; checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            over,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let raw = p as usize;
    let base = raw.next_multiple_of(HUGE);
    // SAFETY: both ranges lie inside the mapping just made, which nothing else uses;
    // trimming them leaves exactly `[base, base + len)`.
    unsafe {
        if base > raw {
            libc::munmap(raw as *mut libc::c_void, base - raw);
        }
        let tail = raw + over - (base + len);
        if tail > 0 {
            libc::munmap((base + len) as *mut libc::c_void, tail);
        }
        // Advice only: without it the memory is the same, in small pages.
        libc::madvise(base as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    Some(base)
}

impl Drop for Arena {
    fn drop(&mut self) {
        for &(base, len) in &self.inner.get_mut().chunks {
            // SAFETY: a mapping of exactly this range made by `map_aligned`, unmapped
            // once; the owner dropped every block in it before dropping the arena.
            unsafe { libc::munmap(base as *mut libc::c_void, len) };
        }
    }
}
