//! Shadow state shared by the detectors: a direct-mapped table from [`Loc::key`] to a
//! detector's per-location state (a "shadow memory" in ThreadSanitizer's sense), and
//! the compact record of one access that warnings are built from.
//!
//! Layout ([`PageTable`]): keys are byte addresses (VM objects are 8-byte aligned and
//! a slot `k` has key `object + 8k`; trace variables are slots of one pseudo object),
//! so `key / 8` indexes a three-level radix table: a fixed top level, middle tables
//! and leaves of [`LEAF`] cells, both allocated on first touch and never freed before
//! the table. A lookup is three dependent loads and no lock, no hashing. Keys the
//! table cannot index (not 8-aligned, or at or above 2^47) go to a locked hash map,
//! so any key works; the VM and the trace reader never produce them.
//!
//! Concurrency design (the same for every detector): guest threads call a pass in
//! parallel. Each location's state lives in one cell, read or written only while
//! that cell's lock is held (a one-byte [`SpinCell`]: one swap to take, a plain store
//! to release; uncontended unless two threads touch the same location at once). The thread's own clock
//! (`ThreadState::vc`) is read without locking: only its thread writes it (see
//! `crate::clocks`).

use std::sync::atomic::{AtomicPtr, Ordering};

use hashbrown::HashMap;
use parking_lot::Mutex;

use crate::ctx::CtxId;
use crate::event::{Event, Loc, Op, SiteId, Tid};
use crate::report::{AccessInfo, Warning, WarningKind};
use crate::spin::SpinCell;
use crate::thread::ThreadState;

/// Cells per leaf (words of address space).
pub const LEAF_BITS: u32 = 12;
pub const LEAF: usize = 1 << LEAF_BITS;
pub const MID_BITS: u32 = 16;
const TOP_BITS: u32 = 16;
/// Keys below `2^DIRECT_BITS` are direct-mapped: `(LEAF_BITS + MID_BITS + TOP_BITS)`
/// word-index bits, plus 3 bits of byte offset.
pub const DIRECT_BITS: u32 = LEAF_BITS + MID_BITS + TOP_BITS + 3;
const DIRECT_LIMIT: u64 = 1 << DIRECT_BITS;

type Leaf<C> = AtomicPtr<C>;

/// `key → &C`, every cell created by `C::default()` on first touch of its leaf.
pub struct PageTable<C> {
    top: Box<[AtomicPtr<Leaf<C>>]>,
    overflow: Mutex<HashMap<u64, Box<C>>>,
    /// Leaves come from zeroed allocations ([`PageTable::zeroed`]).
    zeroed: bool,
    /// ... and are cleared once when created, committing their pages
    /// ([`PageTable::zeroed_committed`]).
    commit: bool,
}

/// Cells whose all-zero bytes are a valid value equal to `Default::default()`.
///
/// # Safety
/// An implementation promises exactly that: [`PageTable::zeroed`] creates its cells
/// as zeroed memory instead of calling `default()`.
pub unsafe trait Zeroed: Default {}

// SAFETY: an atomic integer's zero bytes are the value 0, its default.
unsafe impl Zeroed for std::sync::atomic::AtomicU64 {}

impl<C: Default> Default for PageTable<C> {
    fn default() -> Self {
        PageTable {
            top: (0..1usize << TOP_BITS)
                .map(|_| AtomicPtr::default())
                .collect(),
            overflow: Mutex::new(HashMap::new()),
            zeroed: false,
            commit: false,
        }
    }
}

impl<C: Zeroed> PageTable<C> {
    /// A table whose middle tables and leaves are zeroed allocations from `calloc`
    /// ([`alloc_zeroed_array`]): large ones come straight from the kernel as zero
    /// pages, so a leaf costs no pass over its memory when it is created and only
    /// the pages whose cells are touched become resident (a leaf covers 32 KiB of
    /// heap; the objects on it rarely fill it). For tables touched sparsely or
    /// written before they are read (a thread's rule counts, BigFoot's array slots,
    /// trace lines).
    pub fn zeroed() -> Self {
        let mut table = PageTable::default();
        table.zeroed = true;
        table
    }

    /// A zeroed table whose leaves are cleared once when created, so that all their
    /// pages are resident from the start. For tables whose cells are nearly all
    /// touched and read before they are written (FastTrack's cells, also BigFoot's
    /// field groups): there a lazily committed page costs two faults, the first read
    /// mapping the kernel's zero page and the first write copying it (see
    /// `FtCells`'s `Default`).
    pub fn zeroed_committed() -> Self {
        let mut table = PageTable::zeroed();
        table.commit = true;
        table
    }
}

/// Load `slot`, installing a fresh `make()` array of `n` elements if it is null (the
/// loser of a race frees its array).
#[inline]
fn load_or_install<E>(slot: &AtomicPtr<E>, n: usize, make: impl Fn() -> E) -> *mut E {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    install(slot, n, make)
}

/// Load `slot` as [`load_or_install`] does, installing a zeroed array (a valid array
/// of `n` default elements, the caller promises) if it is null; `commit`: clear it
/// once, making its pages resident.
///
/// # Safety
/// All-zero bytes are a valid `E`.
#[inline]
unsafe fn load_or_install_zeroed<E>(slot: &AtomicPtr<E>, n: usize, commit: bool) -> *mut E {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    // SAFETY: per the contract.
    unsafe { install_zeroed(slot, n, commit) }
}

/// # Safety
/// As [`load_or_install_zeroed`].
#[cold]
unsafe fn install_zeroed<E>(slot: &AtomicPtr<E>, n: usize, commit: bool) -> *mut E {
    // SAFETY: per the contract, zero bytes are valid elements.
    let fresh = unsafe { alloc_zeroed_array::<E>(n) };
    if commit {
        // SAFETY: `fresh` is an unshared array of `n` elements; zero bytes are valid.
        unsafe { std::ptr::write_bytes(fresh, 0, n) };
    }
    // SAFETY: `fresh` came from `alloc_zeroed_array` with length `n`.
    unsafe { publish(slot, fresh, n, free_zeroed_array) }
}

/// The largest alignment for which `std::alloc::alloc_zeroed` is `calloc` (the
/// system allocator's minimum alignment on 64-bit targets). Above it the allocator
/// takes an aligned block and clears it with `memset`, which makes every page of
/// the block resident at once: FastTrack's 32-byte-aligned cells lost the point of
/// zeroed leaves that way.
const CALLOC_ALIGN: usize = 16;

/// The block [`alloc_zeroed_array`] takes for `n` elements of `E` aligned above
/// [`CALLOC_ALIGN`]: room to align the array and to keep the block's address in
/// the word before it.
fn padded_layout<E>(n: usize) -> std::alloc::Layout {
    let inner = std::alloc::Layout::array::<E>(n).expect("a table level's size fits");
    std::alloc::Layout::from_size_align(inner.size() + inner.align() + CALLOC_ALIGN, CALLOC_ALIGN)
        .expect("a table level's size fits")
}

/// A zeroed array of `n` elements, from `calloc` whatever `E`'s alignment: large
/// blocks come from the kernel as zero pages, committed only where touched. Free
/// it with [`free_zeroed_array`].
///
/// # Safety
/// All-zero bytes are a valid `E`; `n > 0` and `E` is not zero-sized.
unsafe fn alloc_zeroed_array<E>(n: usize) -> *mut E {
    let inner = std::alloc::Layout::array::<E>(n).expect("a table level's size fits");
    if inner.align() <= CALLOC_ALIGN {
        // SAFETY: nonzero size, per the contract.
        let p = unsafe { std::alloc::alloc_zeroed(inner) };
        if p.is_null() {
            std::alloc::handle_alloc_error(inner);
        }
        return p as *mut E;
    }
    let outer = padded_layout::<E>(n);
    // SAFETY: nonzero size.
    let base = unsafe { std::alloc::alloc_zeroed(outer) };
    if base.is_null() {
        std::alloc::handle_alloc_error(outer);
    }
    let p = (base as usize + CALLOC_ALIGN).next_multiple_of(inner.align()) as *mut E;
    // SAFETY: `p` is at least `CALLOC_ALIGN` bytes into the block and the array's
    // `inner.size()` bytes from it end inside it (`outer` has `inner.align()` bytes
    // more); the word before `p` is in the block and not in the array.
    unsafe { (p as *mut *mut u8).sub(1).write(base) };
    p
}

/// # Safety
/// `p` is null or came from [`alloc_zeroed_array`] with length `n`, and is not
/// used afterwards.
unsafe fn free_zeroed_array<E>(p: *mut E, n: usize) {
    if p.is_null() {
        return;
    }
    let inner = std::alloc::Layout::array::<E>(n).expect("a table level's size fits");
    if inner.align() <= CALLOC_ALIGN {
        // SAFETY: allocated with exactly the layout a `Box<[E]>` of length `n` has.
        unsafe { free(p, n) };
        return;
    }
    // SAFETY: per the contract: the array's elements, then the block whose address
    // `alloc_zeroed_array` wrote before it, with the layout it was taken with.
    unsafe {
        std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(p, n));
        let base = (p as *mut *mut u8).sub(1).read();
        std::alloc::dealloc(base, padded_layout::<E>(n));
    }
}

#[cold]
fn install<E>(slot: &AtomicPtr<E>, n: usize, make: impl Fn() -> E) -> *mut E {
    let fresh: Box<[E]> = (0..n).map(|_| make()).collect();
    // SAFETY: `free` releases a `Box<[E]>` of length `n`.
    unsafe { publish(slot, Box::into_raw(fresh) as *mut E, n, free) }
}

/// Install `fresh` (an owned array of `n` elements) in `slot` unless another thread
/// installed one first: then `fresh` is freed with `free` and the winner's array
/// returned.
///
/// # Safety
/// `free(fresh, n)` releases `fresh` as it was allocated.
unsafe fn publish<E>(
    slot: &AtomicPtr<E>,
    fresh: *mut E,
    n: usize,
    free: unsafe fn(*mut E, usize),
) -> *mut E {
    match slot.compare_exchange(
        std::ptr::null_mut(),
        fresh,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => fresh,
        Err(existing) => {
            // SAFETY: per the contract; `fresh` was never shared.
            unsafe { free(fresh, n) };
            existing
        }
    }
}

/// # Safety
/// `p` is null or came from [`install`] with length `n`, and is not used afterwards.
unsafe fn free<E>(p: *mut E, n: usize) {
    if !p.is_null() {
        // SAFETY: per the contract.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) });
    }
}

impl<C: Default> PageTable<C> {
    /// The cell of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> &C {
        if key & 7 != 0 || key >= DIRECT_LIMIT {
            return self.get_overflow(key);
        }
        let w = key >> 3;
        let ti = (w >> (LEAF_BITS + MID_BITS)) as usize;
        let mi = ((w >> LEAF_BITS) & ((1 << MID_BITS) - 1)) as usize;
        let li = (w & (LEAF as u64 - 1)) as usize;
        let (mid, leaf);
        if self.zeroed {
            // SAFETY: a null pointer is zero bytes; `self.zeroed` only for `C: Zeroed`.
            mid = unsafe { load_or_install_zeroed(&self.top[ti], 1 << MID_BITS, false) };
            // SAFETY: as below.
            let leaf_slot = unsafe { &*mid.add(mi) };
            // SAFETY: as above.
            leaf = unsafe { load_or_install_zeroed(leaf_slot, LEAF, self.commit) };
        } else {
            mid = load_or_install(&self.top[ti], 1 << MID_BITS, AtomicPtr::default);
            // SAFETY: `mid` points to an array of `1 << MID_BITS` slots that lives as
            // long as `self` (installed once, freed only in `drop`); `mi` is in range.
            let leaf_slot = unsafe { &*mid.add(mi) };
            leaf = load_or_install(leaf_slot, LEAF, C::default);
        }
        // SAFETY: as above, for a leaf of `LEAF` cells; `li < LEAF`.
        unsafe { &*leaf.add(li) }
    }

    /// The cells of `key`, `key + 8`, … up to the end of its leaf (one cell for a
    /// key [`PageTable::get`] keeps in the overflow map): `get` of each, in order,
    /// with one walk.
    #[inline]
    pub fn run(&self, key: u64) -> &[C] {
        if key & 7 != 0 || key >= DIRECT_LIMIT {
            return std::slice::from_ref(self.get_overflow(key));
        }
        let li = ((key >> 3) & (LEAF as u64 - 1)) as usize;
        let first: *const C = self.get(key);
        // SAFETY: `first` is cell `li` of a leaf of `LEAF` cells (see `get`), so the
        // `LEAF - li` cells from it are that leaf's, alive as long as `self`.
        unsafe { std::slice::from_raw_parts(first, LEAF - li) }
    }

    /// The cell of `key` if its leaf exists (never creates one).
    #[inline]
    pub fn peek(&self, key: u64) -> Option<&C> {
        if key & 7 != 0 || key >= DIRECT_LIMIT {
            let map = self.overflow.lock();
            let cell: *const C = &**map.get(&key)?;
            // SAFETY: as in `get_overflow`.
            return Some(unsafe { &*cell });
        }
        let w = key >> 3;
        let ti = (w >> (LEAF_BITS + MID_BITS)) as usize;
        let mi = ((w >> LEAF_BITS) & ((1 << MID_BITS) - 1)) as usize;
        let li = (w & (LEAF as u64 - 1)) as usize;
        let mid = self.top[ti].load(Ordering::Acquire);
        if mid.is_null() {
            return None;
        }
        // SAFETY: as in `get`.
        let leaf = unsafe { &*mid.add(mi) }.load(Ordering::Acquire);
        if leaf.is_null() {
            return None;
        }
        // SAFETY: as in `get`.
        Some(unsafe { &*leaf.add(li) })
    }

    #[cold]
    fn get_overflow(&self, key: u64) -> &C {
        let mut map = self.overflow.lock();
        let cell: *const C = &**map.entry(key).or_insert_with(|| Box::new(C::default()));
        // SAFETY: the box is never removed or replaced before `self` is dropped, and
        // its contents do not move when the map grows.
        unsafe { &*cell }
    }

    /// The address of the top level: `2^TOP_BITS` pointers to middle tables of
    /// `2^MID_BITS` pointers to leaves of [`LEAF`] cells (null until installed), as
    /// `get` walks them; stable for the table's lifetime (see
    /// `crate::pass::InlineCheck`).
    pub fn top_addr(&self) -> u64 {
        self.top.as_ptr() as u64
    }

    /// Visit every cell of every allocated leaf, and the overflow cells. In a table
    /// whose leaves are committed lazily ([`PageTable::zeroed`]) the cells on pages
    /// never touched are skipped: they are zero bytes, `C::default()`, and reading
    /// them would fault every page of every leaf in (half the page faults of a
    /// `bigfoot` run on montecarlo were this walk). Every caller sums or collects
    /// what differs from the default.
    pub fn for_each_cell(&self, mut f: impl FnMut(&C)) {
        let lazy = self.zeroed && !self.commit;
        let mut pages = Vec::new();
        for t in self.top.iter() {
            let mid = t.load(Ordering::Acquire);
            if mid.is_null() {
                continue;
            }
            for mi in 0..1usize << MID_BITS {
                // SAFETY: see `get`.
                let leaf = unsafe { &*mid.add(mi) }.load(Ordering::Acquire);
                if leaf.is_null() {
                    continue;
                }
                // SAFETY: see `get`: a leaf of `LEAF` cells, alive as long as `self`.
                let cells = unsafe { std::slice::from_raw_parts(leaf as *const C, LEAF) };
                if !lazy || !resident_pages(cells, &mut pages) {
                    cells.iter().for_each(&mut f);
                    continue;
                }
                let base = page_start(cells.as_ptr() as usize);
                for c in cells {
                    let a = c as *const C as usize;
                    let first = (a - base) / PAGE;
                    let last = (a + std::mem::size_of::<C>() - 1 - base) / PAGE;
                    if pages[first..=last].iter().any(|&p| p & 1 != 0) {
                        f(c);
                    }
                }
            }
        }
        for c in self.overflow.lock().values() {
            f(c);
        }
    }
}

/// The page size `mincore` works in (4 KiB on x86-64; a larger real page size
/// only makes [`resident_pages`] answer for each of its 4 KiB parts alike).
const PAGE: usize = 4096;

fn page_start(a: usize) -> usize {
    a & !(PAGE - 1)
}

/// Which pages of `cells`' memory are resident (bit 0 of `pages[i]` for the `i`-th
/// page from the one holding the first byte), by `mincore`; false if the kernel
/// cannot say (then the caller reads every cell).
fn resident_pages<C>(cells: &[C], pages: &mut Vec<u8>) -> bool {
    let start = page_start(cells.as_ptr() as usize);
    let end = cells.as_ptr() as usize + std::mem::size_of_val(cells);
    let n = (end - start).div_ceil(PAGE);
    pages.clear();
    pages.resize(n, 0);
    // SAFETY: `start..start + n * PAGE` covers mapped memory only where the cells
    // are (a range with unmapped pages makes the call fail, and that answer is
    // not used); `pages` has one byte per page, as `mincore` writes.
    let rc = unsafe {
        libc::mincore(
            start as *mut libc::c_void,
            n * PAGE,
            pages.as_mut_ptr() as *mut libc::c_uchar,
        )
    };
    rc == 0
}

impl<C> Drop for PageTable<C> {
    fn drop(&mut self) {
        for t in self.top.iter() {
            let mid = t.load(Ordering::Acquire);
            if mid.is_null() {
                continue;
            }
            for mi in 0..1usize << MID_BITS {
                // SAFETY: installed by `install` (or `install_zeroed`, in a zeroed
                // table) with length LEAF; dropped once here.
                let leaf = unsafe { (*mid.add(mi)).load(Ordering::Acquire) };
                if self.zeroed {
                    // SAFETY: as above.
                    unsafe { free_zeroed_array(leaf, LEAF) };
                } else {
                    // SAFETY: as above.
                    unsafe { free(leaf, LEAF) };
                }
            }
            // SAFETY: installed with length `1 << MID_BITS`, as above.
            unsafe {
                if self.zeroed {
                    free_zeroed_array(mid, 1 << MID_BITS);
                } else {
                    free(mid, 1 << MID_BITS);
                }
            }
        }
    }
}

// SAFETY: the table hands out `&C` to any thread and moves cells between threads only
// when it is dropped; that is sound exactly when `C` is `Send + Sync`.
unsafe impl<C: Send + Sync> Send for PageTable<C> {}
unsafe impl<C: Send + Sync> Sync for PageTable<C> {}

/// `Loc::key() → T`: one mutex-protected, lazily created state per location.
pub struct Shadow<T> {
    cells: PageTable<SpinCell<Option<T>>>,
}

impl<T> Default for Shadow<T> {
    fn default() -> Self {
        Shadow {
            cells: PageTable::default(),
        }
    }
}

impl<T> Shadow<T> {
    /// Run `f` on the state of `loc` (created by `init` on first use) under its
    /// cell's lock.
    #[inline]
    pub fn with<R>(&self, loc: Loc, init: impl FnOnce() -> T, f: impl FnOnce(&mut T) -> R) -> R {
        let mut cell = self.cells.get(loc.key()).lock();
        f(cell.get_or_insert_with(init))
    }

    /// Visit every state (one cell locked at a time).
    pub fn for_each(&self, mut f: impl FnMut(&T)) {
        self.cells.for_each_cell(|c| {
            if let Some(v) = &*c.lock() {
                f(v)
            }
        });
    }

    /// Number of locations with state.
    pub fn len(&self) -> usize {
        let mut n = 0;
        self.for_each(|_| n += 1);
        n
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `Loc::key() → T` for few, large states (BigFoot's array shadows, one per array):
/// a table of pointers (8 bytes per heap word, zeroed leaves: only the pages whose
/// keys have a state become resident) to boxed, locked states, which the table also
/// keeps in a list — so visiting them ([`BoxTable::for_each`]) and dropping them cost
/// time in the number of states, not in the heap's size (a [`Shadow`] walks every
/// cell of every leaf: 16 M on a 128 MB heap).
pub struct BoxTable<T> {
    slots: PageTable<AtomicPtr<SpinCell<T>>>,
    all: Mutex<Vec<Box<SpinCell<T>>>>,
}

// SAFETY: a null pointer is zero bytes, an `AtomicPtr`'s default.
unsafe impl<T> Zeroed for AtomicPtr<T> {}

impl<T> Default for BoxTable<T> {
    fn default() -> Self {
        BoxTable {
            slots: PageTable::zeroed(),
            all: Mutex::new(Vec::new()),
        }
    }
}

impl<T> BoxTable<T> {
    /// Run `f` on the state of `loc` (created by `init` on first use) under its lock.
    pub fn with<R>(&self, loc: Loc, init: impl FnOnce() -> T, f: impl FnOnce(&mut T) -> R) -> R {
        let slot = self.slots.get(loc.key());
        let mut p = slot.load(Ordering::Acquire);
        if p.is_null() {
            let fresh = Box::new(SpinCell::new(init()));
            let raw = &*fresh as *const SpinCell<T> as *mut SpinCell<T>;
            match slot.compare_exchange(p, raw, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    // The box's contents do not move when it moves into the list.
                    self.all.lock().push(fresh);
                    p = raw;
                }
                // Another thread installed one first: `fresh` is dropped.
                Err(theirs) => p = theirs,
            }
        }
        // SAFETY: a non-null slot points into a box in `self.all`, which keeps it
        // until `self` is dropped.
        let cell = unsafe { &*p };
        f(&mut cell.lock())
    }

    /// Visit every state (one locked at a time).
    pub fn for_each(&self, mut f: impl FnMut(&T)) {
        for c in self.all.lock().iter() {
            f(&c.lock());
        }
    }
}

/// Who accessed, where, in which call context, at which trace line.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Acc {
    pub tid: Tid,
    pub op: Op,
    pub site: SiteId,
    pub ctx: CtxId,
    /// 1-based trace line (0 = not from a trace file).
    pub index: u64,
}

impl Acc {
    pub fn of(t: &ThreadState, ev: &Event<'_>, op: Op) -> Acc {
        Acc {
            tid: t.tid,
            op,
            site: ev.site,
            ctx: t.ctx,
            index: ev.index,
        }
    }

    pub fn info(&self) -> AccessInfo {
        let mut a = AccessInfo::access(self.tid, self.op, self.site, self.ctx);
        a.event = (self.index != 0).then_some(self.index);
        a
    }
}

/// A warning about `loc`: `prev` (earlier) and `cur` (the access at which it was
/// found); `event` is `cur`'s trace line.
pub fn pair_warning(
    kind: WarningKind,
    analysis: &'static str,
    loc: Loc,
    prev: &Acc,
    cur: &Acc,
    message: String,
) -> Warning {
    let mut w = Warning::new(kind, analysis);
    w.loc = Some(loc);
    w.accesses = vec![prev.info(), cur.info()];
    w.event = (cur.index != 0).then_some(cur.index);
    w.message = message;
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::ObjId;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn every_key_has_its_own_cell() {
        every_key_has_its_own_cell_in(PageTable::default());
        every_key_has_its_own_cell_in(PageTable::zeroed());
    }

    fn every_key_has_its_own_cell_in(t: PageTable<AtomicU64>) {
        // Direct keys in one leaf, across leaves and middle tables, unaligned keys and
        // keys past the direct range (overflow map).
        let keys = [
            0u64,
            8,
            16,
            8 * LEAF as u64,
            1 << 40,
            (1 << 40) + 8,
            DIRECT_LIMIT - 8,
            1_000_001,
            1_000_002,
            DIRECT_LIMIT,
            u64::MAX,
        ];
        for (i, k) in keys.iter().enumerate() {
            t.get(*k).store(i as u64 + 1, Ordering::Relaxed);
        }
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(t.get(*k).load(Ordering::Relaxed), i as u64 + 1, "key {k}");
        }
        let mut nonzero = 0;
        t.for_each_cell(|c| nonzero += usize::from(c.load(Ordering::Relaxed) != 0));
        assert_eq!(nonzero, keys.len());
    }

    /// A cell aligned above what `calloc` guarantees, as FastTrack's are.
    #[repr(align(64))]
    #[derive(Default)]
    struct Wide(AtomicU64);

    // SAFETY: zero bytes are `Wide(0)`, its default.
    unsafe impl Zeroed for Wide {}

    #[test]
    fn over_aligned_zeroed_leaves_are_aligned_and_hold_their_cells() {
        for t in [PageTable::<Wide>::zeroed(), PageTable::zeroed_committed()] {
            let keys: Vec<u64> = (0..3 * LEAF as u64).step_by(97).map(|w| w * 8).collect();
            for (i, &k) in keys.iter().enumerate() {
                let c = t.get(k);
                assert_eq!(c as *const Wide as usize % 64, 0, "key {k}");
                assert_eq!(c.0.load(Ordering::Relaxed), 0, "a new cell is zero");
                c.0.store(i as u64 + 1, Ordering::Relaxed);
            }
            for (i, &k) in keys.iter().enumerate() {
                assert_eq!(t.get(k).0.load(Ordering::Relaxed), i as u64 + 1);
            }
            // The walk skips only pages never touched: it sees every cell set.
            let (mut nonzero, mut sum) = (0, 0);
            t.for_each_cell(|c| {
                let v = c.0.load(Ordering::Relaxed);
                nonzero += usize::from(v != 0);
                sum += v;
            });
            assert_eq!(nonzero, keys.len());
            assert_eq!(sum, (1..=keys.len() as u64).sum::<u64>());
        }
    }

    #[test]
    fn box_table_creates_state_once_per_location_under_parallel_use() {
        let s: BoxTable<u64> = BoxTable::default();
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for k in 0..2_000u32 {
                        // Objects 32 KiB apart: a leaf each, pages far apart.
                        let loc = Loc {
                            obj: ObjId((1 << 32) + u64::from(k) * 8 * LEAF as u64),
                            slot: 0,
                        };
                        s.with(loc, || 0, |n| *n += 1);
                    }
                });
            }
        });
        let (mut states, mut total) = (0, 0);
        s.for_each(|n| {
            states += 1;
            total += n;
        });
        assert_eq!((states, total), (2_000, 8_000));
    }

    #[test]
    fn shadow_creates_state_once_per_location_under_parallel_use() {
        let s: Shadow<u64> = Shadow::default();
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for slot in 0..10_000u32 {
                        let loc = Loc {
                            obj: ObjId(1 << 32),
                            slot,
                        };
                        s.with(loc, || 0, |n| *n += 1);
                    }
                });
            }
        });
        assert_eq!(s.len(), 10_000);
        let mut total = 0;
        s.for_each(|n| total += n);
        assert_eq!(total, 40_000);
    }
}
