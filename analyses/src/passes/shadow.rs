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
    /// Keys the leaves cannot index, each with a cell and (in a table with cold
    /// words) a second one whose first half is its cold word.
    overflow: Mutex<HashMap<u64, Box<[C; 2]>>>,
    /// Leaves come from zeroed allocations ([`PageTable::zeroed`]).
    zeroed: bool,
    /// ... cleared when created, all their pages resident
    /// ([`PageTable::zeroed_committed`]).
    commit: bool,
    /// Each leaf holds a second, *cold* cell per key after its [`LEAF`] cells
    /// ([`PageTable::with_cold`], [`PageTable::pair`]).
    cold: bool,
}

/// Cells whose all-zero bytes are a valid value equal to `Default::default()`.
///
/// # Safety
/// An implementation promises exactly that: [`PageTable::zeroed`] creates its cells
/// as zeroed memory instead of calling `default()`.
pub unsafe trait Zeroed: Default {}

// SAFETY: an atomic integer's zero bytes are the value 0, its default.
unsafe impl Zeroed for std::sync::atomic::AtomicU64 {}
// SAFETY: as for `AtomicU64`.
unsafe impl Zeroed for std::sync::atomic::AtomicU32 {}

impl<C: Default> Default for PageTable<C> {
    fn default() -> Self {
        PageTable {
            top: (0..1usize << TOP_BITS)
                .map(|_| AtomicPtr::default())
                .collect(),
            overflow: Mutex::new(HashMap::new()),
            zeroed: false,
            commit: false,
            cold: false,
        }
    }
}

impl<C: Zeroed> PageTable<C> {
    /// A table whose middle tables and leaves are zeroed allocations: large ones
    /// come straight from the kernel as zero pages, so a leaf costs no pass over its
    /// memory when it is created and only the pages whose cells are touched become
    /// resident (a leaf covers 32 KiB of heap; the objects on it rarely fill it).
    /// That holds for cells aligned to at most 16 bytes: above that `alloc_zeroed`
    /// is an aligned allocation cleared in full. For cells written before they are
    /// read, or touched sparsely (a thread's rule counts, BigFoot's array slots).
    pub fn zeroed() -> Self {
        let mut table = PageTable::default();
        table.zeroed = true;
        table
    }

    /// A zeroed table whose leaves are cleared once when created, all their pages
    /// resident from the start. For cells that are nearly all touched and read before
    /// they are first written (FastTrack's, BigFoot's field groups): on a lazily
    /// committed page the first read maps the kernel's zero page and the first write
    /// copies it, two faults per page (see `FtCells`'s `Default`).
    pub fn zeroed_committed() -> Self {
        let mut table = PageTable::zeroed();
        table.commit = true;
        table
    }
}

impl<C: Zeroed> PageTable<C> {
    /// This zeroed table with a *cold* word for every key beside its (hot) cell, of
    /// half the cell's size: a leaf holds its [`LEAF`] hot cells first and then the
    /// [`LEAF`] cold words, so the cold word of the key with index `li` in a leaf
    /// is [`cold_base`]`(size) + li * size / 2` bytes from the leaf's start (an
    /// address generated code can compute from the hot cell's and the key), and the
    /// hot cells of neighbouring keys share cache lines with no cold state between
    /// them. A committed table commits only the hot half; a cold page becomes
    /// resident when a word on it is first written.
    pub fn with_cold(mut self) -> Self {
        self.zeroed = true;
        self.cold = true;
        self
    }
}

/// Bytes from the start of a [`PageTable::with_cold`] leaf of cells of `size`
/// bytes to its cold half. The cold word of the key with index `li` in the leaf is
/// `size / 2` bytes per index after it: `hot + cold_base(size) - li * size / 2`
/// from the key's hot cell. Where the hot half's stores and the cold half's fall a
/// multiple of 4 KiB apart ("4K aliasing") depends on `li`: one key in 512 for
/// 16-byte cells.
pub const fn cold_base(size: usize) -> usize {
    LEAF * size
}

/// Whether `key` is direct-mapped (8-aligned, below [`DIRECT_LIMIT`]); any other key
/// lives in the overflow map.
#[inline]
fn direct(key: u64) -> bool {
    key & 7 == 0 && key < DIRECT_LIMIT
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
/// of `n` default elements, the caller promises) if it is null; its first `commit`
/// elements written once per page, so that their pages are resident.
///
/// # Safety
/// All-zero bytes are a valid `E`.
#[inline]
unsafe fn load_or_install_zeroed<E>(slot: &AtomicPtr<E>, n: usize, commit: usize) -> *mut E {
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
unsafe fn install_zeroed<E>(slot: &AtomicPtr<E>, n: usize, commit: usize) -> *mut E {
    let layout = std::alloc::Layout::array::<E>(n).expect("a table level's size fits");
    // SAFETY: `layout` has a nonzero size (every level has cells of nonzero size).
    let fresh = unsafe {
        let p = std::alloc::alloc_zeroed(layout);
        if commit > 0 && !p.is_null() {
            // One write per page makes it resident (a fresh page from the kernel,
            // one fault). Clearing with `write_bytes` after `alloc` is not enough:
            // the compiler folds the pair into `alloc_zeroed` (calloc), which leaves
            // fresh pages untouched, and a cell read before it is written then costs
            // a fault on the zero page, a second one to copy it, and a TLB shootdown
            // to every CPU the process runs on.
            for off in (0..(commit * std::mem::size_of::<E>()).min(layout.size())).step_by(4096) {
                std::ptr::write_volatile(p.add(off), 0u8);
            }
        }
        p
    } as *mut E;
    if fresh.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // The allocation is exactly the one `Box<[E]>` of length `n` makes (same layout,
    // global allocator), so `free` releases it as such.
    publish(slot, fresh, n)
}

#[cold]
fn install<E>(slot: &AtomicPtr<E>, n: usize, make: impl Fn() -> E) -> *mut E {
    let fresh: Box<[E]> = (0..n).map(|_| make()).collect();
    publish(slot, Box::into_raw(fresh) as *mut E, n)
}

/// Install `fresh` (an owned array of `n` elements, as `Box<[E]>` allocates it) in
/// `slot` unless another thread installed one first: then `fresh` is freed and the
/// winner's array returned.
fn publish<E>(slot: &AtomicPtr<E>, fresh: *mut E, n: usize) -> *mut E {
    match slot.compare_exchange(
        std::ptr::null_mut(),
        fresh,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => fresh,
        Err(existing) => {
            // SAFETY: `fresh` is an owned array of length `n` allocated as
            // `Box<[E]>` does (the callers) and was never shared.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(fresh, n)) });
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

impl<C> PageTable<C> {
    /// Cells per leaf, the cold half (half a cell per key) included.
    fn leaf_len(&self) -> usize {
        if self.cold { LEAF + LEAF / 2 } else { LEAF }
    }
}

impl<C: Default> PageTable<C> {
    /// The cell of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> &C {
        if !direct(key) {
            return &self.get_overflow(key)[0];
        }
        let (leaf, li) = self.leaf(key);
        // SAFETY: `leaf` has at least `LEAF` cells and `li < LEAF` (`leaf`).
        unsafe { &*leaf.add(li) }
    }

    /// The leaf of a direct-mapped `key` (created on first touch) and the index of
    /// its cell there.
    #[inline]
    fn leaf(&self, key: u64) -> (*mut C, usize) {
        let w = key >> 3;
        let ti = (w >> (LEAF_BITS + MID_BITS)) as usize;
        let mi = ((w >> LEAF_BITS) & ((1 << MID_BITS) - 1)) as usize;
        let li = (w & (LEAF as u64 - 1)) as usize;
        let leaf = if self.zeroed {
            // SAFETY: a null pointer is zero bytes; `self.zeroed` only for `C: Zeroed`.
            let mid = unsafe { load_or_install_zeroed(&self.top[ti], 1 << MID_BITS, 0) };
            // SAFETY: as below.
            let leaf_slot = unsafe { &*mid.add(mi) };
            let commit = if self.commit { LEAF } else { 0 };
            // SAFETY: as above.
            unsafe { load_or_install_zeroed(leaf_slot, self.leaf_len(), commit) }
        } else {
            let mid = load_or_install(&self.top[ti], 1 << MID_BITS, AtomicPtr::default);
            // SAFETY: `mid` points to an array of `1 << MID_BITS` slots that lives as
            // long as `self` (installed once, freed only in `drop`); `mi` is in range.
            let leaf_slot = unsafe { &*mid.add(mi) };
            load_or_install(leaf_slot, self.leaf_len(), C::default)
        };
        // A leaf of `leaf_len()` cells, alive as long as `self`.
        (leaf, li)
    }

    /// The cell of `key` and its cold word, read as a `K` of half the cell's size
    /// ([`PageTable::with_cold`], [`cold_base`]).
    #[inline]
    pub fn pair<K: Zeroed>(&self, key: u64) -> (&C, &K) {
        const { Self::assert_cold::<K>() };
        debug_assert!(self.cold, "a table without cold cells");
        if !direct(key) {
            let [hot, cold] = self.get_overflow(key);
            // SAFETY: `cold` is a zeroed-default `C` no one else reads as a `C`, and
            // its first `size_of::<K>()` bytes, suitably aligned (`assert_cold`), are
            // the key's cold word; all-zero bytes are a valid `K` (`Zeroed`), and
            // both hold only atomics.
            return (hot, unsafe { &*(cold as *const C as *const K) });
        }
        let (leaf, li) = self.leaf(key);
        // SAFETY: a leaf of a table with cold cells has `LEAF + LEAF / 2` cells
        // (`leaf_len`), its cold half `LEAF` words of `size_of::<C>() / 2` bytes
        // from `cold_base`, zeroed (`with_cold`), and `li < LEAF`.
        unsafe { (&*leaf.add(li), &*Self::cold_at(leaf, li)) }
    }

    /// The `li`th cold word of a leaf of a table with cold cells.
    #[inline]
    fn cold_at<K>(leaf: *mut C, li: usize) -> *const K {
        let base = cold_base(std::mem::size_of::<C>());
        // Inside the leaf's allocation (`pair`'s safety argument).
        leaf.cast::<u8>()
            .wrapping_add(base + li * std::mem::size_of::<K>())
            .cast::<K>()
    }

    /// A cold word `K` is half a cell and no more aligned than its size, so that the
    /// cold half of a leaf (and an overflow key's second cell) holds one per key.
    const fn assert_cold<K>() {
        assert!(2 * std::mem::size_of::<K>() == std::mem::size_of::<C>());
        assert!(std::mem::align_of::<K>() <= std::mem::size_of::<K>());
        assert!(std::mem::align_of::<K>() <= std::mem::align_of::<C>());
    }

    /// The cells of `key`, `key + 8`, … up to the end of its leaf (one cell for a
    /// key [`PageTable::get`] keeps in the overflow map): `get` of each, in order,
    /// with one walk.
    #[inline]
    pub fn run(&self, key: u64) -> &[C] {
        if !direct(key) {
            return std::slice::from_ref(&self.get_overflow(key)[0]);
        }
        let (leaf, li) = self.leaf(key);
        // SAFETY: the `LEAF - li` cells from `li` are the leaf's hot ones (`leaf`),
        // alive as long as `self`.
        unsafe { std::slice::from_raw_parts(leaf.add(li), LEAF - li) }
    }

    /// [`PageTable::run`] with the cold words ([`PageTable::pair`]), as two slices
    /// of equal length.
    #[inline]
    pub fn run_pair<K: Zeroed>(&self, key: u64) -> (&[C], &[K]) {
        const { Self::assert_cold::<K>() };
        debug_assert!(self.cold, "a table without cold cells");
        if !direct(key) {
            let (hot, cold) = self.pair::<K>(key);
            return (std::slice::from_ref(hot), std::slice::from_ref(cold));
        }
        let (leaf, li) = self.leaf(key);
        // SAFETY: as in `run`, and `LEAF - li` cold words from `li` in the cold half
        // (`pair`).
        unsafe {
            (
                std::slice::from_raw_parts(leaf.add(li), LEAF - li),
                std::slice::from_raw_parts(Self::cold_at(leaf, li), LEAF - li),
            )
        }
    }

    /// The cell of `key` if its leaf exists (never creates one).
    #[inline]
    pub fn peek(&self, key: u64) -> Option<&C> {
        if !direct(key) {
            let map = self.overflow.lock();
            let cell: *const C = &map.get(&key)?[0];
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
    fn get_overflow(&self, key: u64) -> &[C; 2] {
        let mut map = self.overflow.lock();
        let cell: *const [C; 2] = &**map
            .entry(key)
            .or_insert_with(|| Box::new([C::default(), C::default()]));
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

    /// Every allocated leaf, in key order (its hot cells only).
    fn leaves(&self) -> impl Iterator<Item = &[C]> {
        self.top.iter().flat_map(|t| {
            let mid = t.load(Ordering::Acquire);
            (0..if mid.is_null() { 0 } else { 1usize << MID_BITS }).filter_map(move |mi| {
                // SAFETY: see `get`.
                let leaf = unsafe { &*mid.add(mi) }.load(Ordering::Acquire);
                // SAFETY: installed with at least LEAF cells, freed only with the table.
                (!leaf.is_null()).then(|| unsafe { std::slice::from_raw_parts(leaf, LEAF) })
            })
        })
    }

    /// Visit every (hot) cell of every allocated leaf, and the overflow cells.
    pub fn for_each_cell(&self, mut f: impl FnMut(&C)) {
        self.leaves().flatten().for_each(&mut f);
        for c in self.overflow.lock().values() {
            f(&c[0]);
        }
    }

    /// The sums of `f` over every cell, its leaves walked on up to `threads` threads
    /// (statistics at the end of a run, when the guest's threads are gone: a walk of
    /// every cell of a large table is a pass over gigabytes that one core cannot
    /// saturate the memory for).
    pub fn sum_cells<const N: usize>(
        &self,
        threads: usize,
        f: impl Fn(&C) -> [usize; N] + Sync,
    ) -> [usize; N]
    where
        C: Sync,
    {
        let add =
            |a: &mut [usize; N], b: [usize; N]| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        let leaves: Vec<&[C]> = self.leaves().collect();
        let sum_of = |ls: &[&[C]]| {
            let mut sum = [0; N];
            for c in ls.iter().flat_map(|l| l.iter()) {
                add(&mut sum, f(c));
            }
            sum
        };
        let threads = threads.clamp(1, leaves.len().div_ceil(64).max(1));
        let mut total = if threads == 1 {
            sum_of(&leaves)
        } else {
            let chunk = leaves.len().div_ceil(threads);
            std::thread::scope(|s| {
                let parts: Vec<_> = leaves
                    .chunks(chunk)
                    .map(|ls| s.spawn(|| sum_of(ls)))
                    .collect();
                let mut total = [0; N];
                for p in parts {
                    add(&mut total, p.join().expect("a census thread panicked"));
                }
                total
            })
        };
        for c in self.overflow.lock().values() {
            add(&mut total, f(&c[0]));
        }
        total
    }
}

impl<C> Drop for PageTable<C> {
    fn drop(&mut self) {
        for t in self.top.iter() {
            let mid = t.load(Ordering::Acquire);
            if mid.is_null() {
                continue;
            }
            let n = self.leaf_len();
            for mi in 0..1usize << MID_BITS {
                // SAFETY: installed by `install` with length `n`; dropped once here.
                unsafe { free((*mid.add(mi)).load(Ordering::Acquire), n) };
            }
            // SAFETY: installed by `install` with length `1 << MID_BITS`.
            unsafe { free(mid, 1 << MID_BITS) };
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
        // Read by a compare-and-swap that stores what it finds, not by a load: the
        // slots are sparse, so a slot's page is often fresh, and a load would map the
        // kernel's zero page there, the store that installs the state then copy it
        // (a second fault, and a TLB shootdown to every CPU the process runs on).
        // A locked instruction needs write access, so the page is created writable
        // by one fault. (montecarlo under `bigfoot`, 15 k arrays: 3% of its time was
        // those shootdowns.)
        f(&mut self.install(slot, init).lock())
    }

    /// The state in `slot`, installed from `init` if the slot is empty, reading the
    /// slot by a compare-and-swap that stores what it finds.
    fn install(&self, slot: &AtomicPtr<SpinCell<T>>, init: impl FnOnce() -> T) -> &SpinCell<T> {
        let mut p = match slot.compare_exchange(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            Ordering::Acquire,
            Ordering::Acquire,
        ) {
            Ok(null) => null,
            Err(theirs) => theirs,
        };
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
        unsafe { &*p }
    }

    /// The state of `key` (created by `init` on first use), for states read far
    /// more often than created, by threads on several cores (a lock's clock, read at
    /// every acquire): a plain load of the slot first, so that the slot's cache line
    /// stays shared between the cores; only an empty slot takes the
    /// compare-and-swap of [`BoxTable::with`]. (A load of a fresh page of slots maps
    /// the zero page, so that page's first install faults twice: once per 512
    /// keys, not once per state as `with`'s sparse arrays would.)
    pub fn cell(&self, key: u64, init: impl FnOnce() -> T) -> &SpinCell<T> {
        let slot = self.slots.get(key);
        let p = slot.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: as in `install`.
            return unsafe { &*p };
        }
        self.install(slot, init)
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

    /// Each key of a table with cold cells has a hot cell and a cold word of half its
    /// size of its own, for a direct key at `cold_base - li * 4` bytes from the hot
    /// one (what generated code computes); `run_pair` gives the pairs `pair` gives;
    /// the walks see the hot cells only.
    #[test]
    fn cold_words_are_each_keys_own_at_the_offset_generated_code_computes() {
        use std::sync::atomic::AtomicU32;
        for t in [
            PageTable::<AtomicU64>::default().with_cold(),
            PageTable::zeroed().with_cold(),
            PageTable::zeroed_committed().with_cold(),
        ] {
            let mut keys: Vec<u64> = (0..3 * LEAF as u64).step_by(89).map(|w| w * 8).collect();
            keys.extend([1 << 40, 1_000_001, DIRECT_LIMIT, u64::MAX]);
            for (i, &k) in keys.iter().enumerate() {
                let (hot, cold) = t.pair::<AtomicU32>(k);
                assert!(std::ptr::eq(hot, t.get(k)), "key {k}");
                if direct(k) {
                    let li = (k >> 3) as usize & (LEAF - 1);
                    let at = hot as *const AtomicU64 as usize + cold_base(8) - li * 4;
                    assert_eq!(cold as *const AtomicU32 as usize, at, "key {k}");
                }
                assert_eq!(cold.load(Ordering::Relaxed), 0, "key {k}: zeroed");
                hot.store(i as u64 + 1, Ordering::Relaxed);
                cold.store(!(i as u32), Ordering::Relaxed);
            }
            for (i, &k) in keys.iter().enumerate() {
                let (hot, cold) = t.pair::<AtomicU32>(k);
                assert_eq!(hot.load(Ordering::Relaxed), i as u64 + 1, "key {k}");
                assert_eq!(cold.load(Ordering::Relaxed), !(i as u32), "key {k}");
                let (hots, colds) = t.run_pair::<AtomicU32>(k);
                assert_eq!(hots.len(), colds.len());
                assert!(std::ptr::eq(&hots[0], hot) && std::ptr::eq(&colds[0], cold));
                if direct(k) && hots.len() > 1 {
                    let next = t.pair::<AtomicU32>(k + 8).1;
                    assert!(std::ptr::eq(&colds[1], next), "key {k}");
                }
            }
            let mut seen = 0;
            t.for_each_cell(|c| seen += usize::from(c.load(Ordering::Relaxed) != 0));
            assert_eq!(seen, keys.len(), "only the hot cells are walked");
        }
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

    /// The parallel walk sums what the sequential one visits, over leaves spread
    /// across middle tables and the overflow map, on any number of threads.
    #[test]
    fn sum_cells_on_threads_agrees_with_the_sequential_walk() {
        let t: PageTable<AtomicU64> = PageTable::zeroed();
        let mut keys: Vec<u64> = (0..300u64)
            .map(|i| i * 8 * LEAF as u64 + 8 * (i % 7))
            .collect();
        keys.extend([
            1 << 40,
            (1 << 40) + 8 * LEAF as u64 * 3,
            DIRECT_LIMIT,
            u64::MAX,
        ]);
        for (i, &k) in keys.iter().enumerate() {
            t.get(k).store(i as u64 % 5, Ordering::Relaxed);
        }
        let (mut nonzero, mut sum) = (0, 0);
        t.for_each_cell(|c| {
            let v = c.load(Ordering::Relaxed) as usize;
            nonzero += usize::from(v != 0);
            sum += v;
        });
        assert_eq!(
            nonzero,
            keys.iter().enumerate().filter(|(i, _)| i % 5 != 0).count()
        );
        for threads in [0, 1, 2, 3, 8, 1000] {
            let got = t.sum_cells(threads, |c| {
                let v = c.load(Ordering::Relaxed) as usize;
                [usize::from(v != 0), v]
            });
            assert_eq!(got, [nonzero, sum], "{threads} threads");
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
