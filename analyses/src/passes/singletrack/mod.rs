//! `singletrack`: determinism checking of `deterministic` blocks and methods (Sadowski,
//! Freund, Flanagan, *SingleTrack: A Dynamic Determinism Checker for Multithreaded Programs*,
//! ESOP'09).
//!
//! A *transaction* is a deterministic block's execution plus every operation of every
//! thread forked (transitively) inside it, even after the block's `end`. Two properties:
//! - **Conflict freedom** ([`cf`], warning `conflict`): no two conflicting operations of
//!   one transaction are unordered by its own fork/join/barrier structure. Locks do not
//!   order; a lock-protected update by two forked threads is a conflict by design
//!   (commutativity is not recognized, notes pitfall 18).
//! - **External serializability** ([`crate::txgraph`], warning `serializability`): the
//!   transactional happens-before graph (one node per transaction, forked threads share
//!   it) stays acyclic. A cycle is reported with every transaction on it, at the event
//!   whose edge closes it; that edge is then left out. Each transaction is reported at
//!   most once (on the first cycle closed into it): one warning per violated block
//!   instance, which the reporter folds further by sites.
//!
//! Design choices where the paper leaves room:
//! - **Clocks** are monotonic: `begin` ticks instead of resetting (the paper's reset
//!   misses trace C9).
//! - **Barriers**: an episode joins the clocks of all participants and ticks each
//!   (conflict freedom); in the graph every arrival's node gets an edge to every
//!   departure's node, so participants from different transactions form a cycle
//!   (a serial run would deadlock) and participants of one transaction add nothing.
//! - **Nested blocks**: a depth counter per thread; only the outermost `begin`/`end` of
//!   the thread that opened the transaction create and close it. A forked child is
//!   inside its parent's transaction; its own deterministic blocks nest in it.
//!   Warnings name the outermost block.
//! - **Outside any block**: each operation is its own unary transaction for external
//!   serializability (merged with the thread's previous node when nothing else reaches
//!   it); conflict freedom ignores accesses and lock operations outside, but fork, join
//!   and barriers always move the clocks.
//! - Volatile accesses are plain reads and writes for both properties.
//! - `atomic` blocks are ignored (that is the `atomicity` pass).
//!
//! Not implemented: the optional barrier grouping check of §2.6 (a barrier episode whose
//! participant set differs between runs), semaphores (the VM has no such events), and a
//! warning on an `end` while a lock acquired inside is still held (pitfall 10; conflict
//! freedom still checks every lock operation, see [`cf`]).
//!
//! Every access is forwarded. Concurrency (the design of `fasttrack`'s shadow memory,
//! `super::shadow`): a variable's state for both properties (its [`cf::CfCell`] and
//! its last writer's and readers' graph nodes) lives in one cell of a direct-mapped
//! shadow table with its own lock (in the location's record, [`first::Rec`]; "the
//! cell's lock" below), so accesses to different locations run in parallel.
//! Everything else — thread clocks and transactions, locks, barriers, the graph — sits
//! behind one mutex that synchronization events take. An access reads its thread's
//! clock, transaction and graph node from the pass's thread-local copy (only the
//! thread's own events change them; the copy is refreshed after each of them) and
//! decides the graph's part from the graph's lock-free liveness view
//! ([`crate::txgraph::builder::decide_access`]): only an access with a live source
//! other than its own node (one that conflicts across transactions), or an outside
//! access whose node is still open, takes the mutex (lock order: cell, then mutex).
//! A location's accesses are serialized by its cell and a thread's events reach the
//! pass in program order, after every synchronization event that happens before
//! them (the producer's guarantee, `crate::chain`): each interleaving is the
//! sequential processing of some trace consistent with the run. Memory: per location
//! a stamp and a one-word record with the lock; a location touched only by its first
//! access inside a transaction keeps that access there, with no cell ([`first`]);
//! any other has a cell (entries of finished transactions dropped at the next
//! access; 32 bytes where it holds one transaction's write and one thread's read,
//! [`packed`]); plus a word per thread where reads are shared, and a [`Sole`] entry
//! where a thread owned it; per live transaction a graph node.
//!
//! **Same epoch.** Per location a stamp (one word, in its own table) names the
//! access that left the cell as it is: `clock << 32 | tid << 1 | write` for an access
//! of thread `tid` at conflict-freedom clock `clock` inside a transaction, 0 for any
//! other. A thread inside a transaction (for both properties) has the word
//! `clock << 32 | tid << 1`, kept current after each of its events; outside, a word
//! no stamp matches. A read whose thread's word equals the stamp with its low bit
//! cleared, or a write whose word plus one equals it, changes nothing and is only
//! counted as a check: since the thread's own read (write) in this epoch nobody
//! touched the location, so the same checks pass against the same state, the
//! graph's sources are the same (an edge already added, or already left out with
//! its transaction reported), and the clock only grew (joins do not tick it). A read
//! after the thread's own write in the epoch is not recorded: every check the read
//! entry could fail, the write (checked first) fails too, and for the graph its node
//! is the write's. Such an access keeps the earlier access's site for reports, as
//! FastTrack's same-epoch rules do.
//!
//! **Read-shared.** When a thread inside a transaction reads a location whose stamp
//! is another thread's, the stamp becomes a tagged pointer to the location's
//! [`ReadWords`]: per thread, the word of its last read since the last write (the
//! previous stamp's thread gets its read word too: after its read, or its write,
//! nothing wrote). A read whose word is its thread's entry there changes nothing
//! (its read entry and its graph reader are already those of this epoch). A write, or
//! an access outside transactions, clears the words and stamps the location as
//! above; a thread that loaded the tagged stamp before finds its entry (its read is
//! then ordered before that access, whose checks already saw its earlier read) or 0
//! (it takes the lock). Words replaced by larger ones stay allocated until the pass is
//! dropped.
//!
//! **Two readers.** The read words of two threads (each below thread 128, at a clock
//! below 2^24) fit in the stamp itself, tagged [`PAIR_TAG`]: `tid << 24 | clock` in
//! each 31-bit half. A location read by two threads in every epoch (the vector of a
//! matrix product) then costs its readers no dependent load beyond the stamp. A read
//! whose word is a half changes nothing; a read by one of the two at a later epoch
//! replaces its half; a third reader moves all three words to [`ReadWords`]; a write
//! stamps the location as above. Each pair stamp is a value of its own, so a thread
//! that loaded an older one finds its word there only if its read of this epoch was
//! recorded (the argument above).
//!
//! **Sole accessor.** A location that, inside one transaction, only one thread
//! touches (each point of a grid its owner updates after every barrier) would
//! take the cell's lock at every new epoch of that thread, only to replace the
//! thread's own entries: its accesses cannot conflict with entries that are all
//! its own, and their graph sources are its own node. So when a plain access
//! (no trace line) of `t` inside a transaction leaves the cell with nothing but
//! `t`'s plain accesses of that transaction (a write and a read since, at most),
//! its node as the writer and only reader, and the stamp `t`'s own before and
//! after (so `t` came back to the location in a later epoch: most objects
//! allocated in a transaction are touched in one epoch only), `t` becomes
//! the location's sole accessor ([`Sole`], a 32-byte entry of its own table):
//! `t`'s later plain accesses in the same transaction — the stamp, which only
//! the owner moves, still `t`'s at a clock of this transaction — replace the
//! pending write (dropping the read) or read there and move the stamp, under the
//! entry's lock, without the cell. Any other access (another thread, a volatile,
//! outside the transaction, a trace line) takes the cell's lock, gives the cell
//! the pending entries — exactly what the cell would hold had `t`'s accesses gone
//! through it — and ends the ownership (lock order: cell, then entry). Counted as
//! checks like any access inside a transaction.
//!
//! **Idle.** A thread outside every transaction, while no graph node is live
//! ([`Liveness::none_live`]), skips the cell: conflict freedom ignores the access,
//! and with no live node its graph step has no source and no target (a dead node in
//! the cell is as good as none, ids are never reused). Programs without
//! `deterministic` code pay one load per access and no memory.
//!
//! The JIT applies these tests, and the sole accessor's rule, inline in front of
//! FastTrack's ([`InlineGuard::Stamp`]), so an access that both decide costs no call:
//! a grid point its owner updates after every barrier then costs two
//! compare-and-swaps (the entry's lock here, FastTrack's exclusive rule there).
//!
//! **First access inline.** A location's first access inside a transaction (stamp 0,
//! no record: an output array written once, an input array written before the
//! block) keeps the thread's [`first::Origin`] for its site and context in the
//! location's record. Within one segment of the thread (its transaction and graph
//! node, which only its own events change: inside a transaction the thread holds its
//! node, so the node stays live) that origin is a slot of the thread's origin
//! front, so generated code can do the whole rule: lock the record, store the
//! stamp, store the origin. The pass publishes the front's address in the guard
//! words ([`GuardWords::front`]) when a first access has just filled it for the
//! segment the thread is in, and withdraws it whenever the thread's word is set
//! again (after each of its synchronization events). Nothing else of the rule
//! depends on the thread: no check can fail and the graph step has no source (the
//! node is the thread's own), and a stamp of 0 means no sole accessor either (an
//! owner's stamp is its own, and every access that resets a stamp to 0 went through
//! the cell, which ends the ownership). crypt's 48 M first accesses under
//! `singletrack:fasttrack` so no longer call out.

pub mod cf;
mod first;
mod packed;
mod small;

use std::sync::Arc;
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use parking_lot::Mutex;

use crate::event::{Event, EventKind, Loc, Tid};
use crate::pass::{
    Flow, GUARD_FRONT_OFF, GUARD_IDLE_OFF, GUARD_OUTSIDE, GUARD_TX_LO_OFF, InlineChecks,
    InlineGuard, Local, Pass, SOLE_CELL_BYTES, SOLE_CLOCKS_OFF, SOLE_OWNER_OFF, SOLE_R_SITE_OFF,
    SOLE_W_SITE_OFF,
};
use crate::report::{AccessInfo, Warning, WarningKind};
use crate::shared::Shared;
use crate::thread::ThreadState;
use crate::txgraph::builder::decide_access;
use crate::txgraph::graph::Liveness;
use crate::txgraph::report::cycle_warning;
use crate::txgraph::{NodeId, TxHb, TxMode, Violation};

use super::shadow::PageTable;
use cf::{Cf, CfAccess, CfCell, CfConflict, CfView, Finished, Own, Target};
use small::Small;

pub const NAME: &str = "singletrack";

/// Synchronization state, behind the pass's one mutex.
struct State {
    cf: Cf,
    xs: TxHb,
}

/// A variable's state for both properties (stored as a [`packed::Packed`]).
#[derive(Default, Debug)]
struct Cell {
    cf: CfCell,
    /// The node of the last write (⊥: none, or it can never be on a cycle).
    writer: Option<NodeId>,
    /// Per thread, the node of its last read since that write.
    readers: Small<(Tid, NodeId)>,
}

/// A location's read words once its stamp was shared (see [`ReadWords`]), kept for
/// reuse; null before. Written under the location's cell lock.
#[derive(Default)]
struct ReadSlot(std::sync::atomic::AtomicPtr<ReadWords>);

impl ReadSlot {
    fn get(&self) -> Option<&ReadWords> {
        // SAFETY: a non-null pointer came from `Box::into_raw` in `set` and is freed
        // only when the slot is dropped.
        unsafe { self.0.load(Relaxed).as_ref() }
    }

    /// Install `r`; returns the words it replaces (still readable through old
    /// stamps: the caller keeps them alive).
    fn set(&self, r: Box<ReadWords>) -> Option<Box<ReadWords>> {
        let old = self.0.swap(Box::into_raw(r), Relaxed);
        // SAFETY: as in `get`; the slot no longer holds `old`.
        (!old.is_null()).then(|| unsafe { Box::from_raw(old) })
    }
}

impl Drop for ReadSlot {
    fn drop(&mut self) {
        let p = *self.0.get_mut();
        if !p.is_null() {
            // SAFETY: as in `get`; dropped once.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// The reads of a location since its last write while more than one thread read it
/// ("Read-shared" in the module doc): `words[0]` is the number of entries `n`,
/// `words[1 + t]` thread `t`'s word of its last read since the write (0: none). The
/// stamp points at `words[0]`, tagged with [`SHARED_TAG`], as
/// [`InlineGuard::Stamp`] documents. Kept per location in a [`ReadSlot`].
struct ReadWords {
    words: Box<[AtomicU64]>,
}

impl ReadWords {
    fn new(n: usize) -> ReadWords {
        let words: Box<[AtomicU64]> = (0..=n).map(|_| AtomicU64::new(0)).collect();
        words[0].store(n as u64, Relaxed);
        ReadWords { words }
    }

    fn len(&self) -> usize {
        self.words.len() - 1
    }

    fn entry(&self, t: Tid) -> Option<&AtomicU64> {
        self.words.get(1 + t as usize)
    }

    fn clear(&self) {
        for w in &self.words[1..] {
            w.store(0, Relaxed);
        }
    }

    fn tagged(&self) -> u64 {
        self.words.as_ptr() as u64 | SHARED_TAG
    }
}

/// The tag of a stamp that points at a location's [`ReadWords`] (a stamp's clock
/// stays below 2^30, see [`inside_word`]; user-space addresses below 2^62).
const SHARED_TAG: u64 = crate::pass::GUARD_SHARED_TAG;

/// The tag of a stamp that holds two threads' read words itself ("Two readers" in
/// the module doc; a plain stamp's clock stays below 2^30).
const PAIR_TAG: u64 = crate::pass::GUARD_PAIR_TAG;

/// The low 31 bits: one half of a two-reader stamp.
const HALF: u64 = (1 << 31) - 1;

/// Whether `word` is the read word of a thread inside a transaction.
fn is_stamp(word: u64) -> bool {
    word & (SHARED_TAG | PAIR_TAG) == 0
}

/// Whether `stamp` holds two threads' read words.
fn is_pair(stamp: u64) -> bool {
    stamp & (SHARED_TAG | PAIR_TAG) == PAIR_TAG
}

/// A read word's half in a two-reader stamp, `tid << 24 | clock`, when it has one
/// (thread below 128, clock below 2^24; a clock is never 0, so neither is a half).
fn pair_half(word: u64) -> Option<u64> {
    let (t, c) = (u64::from(stamp_tid(word)), word >> 32);
    (t < 128 && c > 0 && c < 1 << 24).then_some(t << 24 | c)
}

/// The read word a half of a two-reader stamp stands for.
fn half_word(half: u64) -> u64 {
    (half & ((1 << 24) - 1)) << 32 | (half >> 24) << 1
}

/// The two-reader stamp of the read words `a` and `b` (of two threads), if both fit.
fn pair_of(a: u64, b: u64) -> Option<u64> {
    Some(PAIR_TAG | pair_half(a)? << 31 | pair_half(b)?)
}

/// The two read words of a two-reader stamp.
fn pair_words(stamp: u64) -> [u64; 2] {
    [half_word(stamp >> 31 & HALF), half_word(stamp & HALF)]
}

/// Whether the two-reader stamp `stamp` holds the read word `word`.
fn pair_same(stamp: u64, word: u64) -> bool {
    pair_half(word).is_some_and(|h| stamp & HALF == h || stamp >> 31 & HALF == h)
}

/// The thread of a stamp.
fn stamp_tid(stamp: u64) -> Tid {
    ((stamp & u64::from(u32::MAX)) >> 1) as Tid
}

/// Whether the read words at `stamp` (tagged) hold `word` for its thread.
fn shared_same(stamp: u64, word: u64) -> bool {
    let p = (stamp & !SHARED_TAG) as *const AtomicU64;
    let t = stamp_tid(word) as u64;
    // SAFETY: a tagged stamp points at the words of a `ReadWords` that lives as long
    // as the pass (kept by its location's `ReadSlot`, or retired when replaced; see
    // `SingleTrack::retired`): `words[0]` is their number, and entry `t` is read
    // only below it.
    unsafe { t < (*p).load(Relaxed) && (*p.add(1 + t as usize)).load(Relaxed) == word }
}

/// A thread's copy of what its accesses need (see the module doc).
struct ThreadCopy {
    synced: bool,
    cf: CfView,
    inside: bool,
    last: Option<NodeId>,
    /// The origins of the thread's cell-less first accesses and of the cells it
    /// packs.
    origins: first::Origins,
    /// Read by generated code ([`InlineGuard::Stamp`]).
    guard: GuardWords,
}

/// A thread's word for the stamp test and the count of accesses generated code
/// decided with the idle test, in the layout [`InlineGuard::Stamp`] promises.
#[repr(C)]
struct GuardWords {
    /// The thread's stamp for reads while it runs in a transaction (see
    /// [`stamp_word`]), [`GUARD_OUTSIDE`] outside every transaction, [`MIXED`]
    /// otherwise.
    word: AtomicU64,
    /// Accesses outside transactions decided by generated code (no check), since
    /// the last [`Pass::inline_forwarded`].
    idle: AtomicU64,
    /// The thread's conflict-freedom clock when it entered its current transaction
    /// (clocks only grow, and `begin` ticks: a stamp of the thread at this clock or
    /// later was made in this transaction). Only the thread writes it.
    tx_lo: AtomicU64,
    /// The address of the thread's origin front ([`first::Origins::front_addr`])
    /// while its origins are those of the segment a first access would run in now,
    /// else 0 ("First access inline" in the module doc). Only the thread writes it.
    front: AtomicU64,
}

const _: () = {
    assert!(std::mem::offset_of!(GuardWords, idle) == GUARD_IDLE_OFF as usize);
    assert!(std::mem::offset_of!(GuardWords, tx_lo) == GUARD_TX_LO_OFF as usize);
    assert!(std::mem::offset_of!(GuardWords, front) == GUARD_FRONT_OFF as usize);
};

impl Default for ThreadCopy {
    fn default() -> Self {
        ThreadCopy {
            synced: false,
            cf: CfView::default(),
            inside: false,
            last: None,
            origins: first::Origins::default(),
            guard: GuardWords {
                word: AtomicU64::new(GUARD_OUTSIDE),
                idle: AtomicU64::new(0),
                tx_lo: AtomicU64::new(0),
                front: AtomicU64::new(0),
            },
        }
    }
}

impl packed::HasOrigins for ThreadCopy {
    fn origins(&mut self) -> &mut first::Origins {
        &mut self.origins
    }
}

/// The word of a thread inside a transaction for one property but not the other
/// (a stamp's thread id stays below 2^30, so no stamp equals it, it plus one, or
/// [`GUARD_OUTSIDE`] and its plus one).
const MIXED: u64 = !3;

/// The stamp of a read by `tid` at conflict-freedom clock `clock` inside a
/// transaction; the stamp of a write is one more.
fn stamp_word(tid: Tid, clock: crate::vc::Clock) -> u64 {
    (u64::from(clock) << 32) | (u64::from(tid) << 1)
}

/// A thread's read word inside a transaction, if it has one ([`MIXED`] past the
/// clocks a stamp can hold).
fn inside_word(tid: Tid, clock: crate::vc::Clock) -> u64 {
    if clock < 1 << 30 && tid < 1 << 30 {
        stamp_word(tid, clock)
    } else {
        MIXED
    }
}

/// Accesses checked for conflict freedom by one thread (only that thread writes it);
/// two cache lines, so that threads never share one.
#[repr(align(128))]
#[derive(Default)]
struct Checks(AtomicU64);

/// A location that one thread owns inside its transaction ("Sole accessor" in the
/// module doc): that thread's last plain write and its last plain read since, which
/// the location's [`Cell`] does not show yet. One line holds two. Generated code
/// applies the owner's rule too, on this layout ([`InlineGuard::Stamp`]).
#[repr(C, align(32))]
#[derive(Default)]
struct Sole {
    /// 0, or the owner `(tid + 1) << 1`, with [`SOLE_LOCK`] while a thread changes
    /// the other words.
    owner: AtomicU64,
    /// The clocks of the write and of the read: `write << 32 | read` (0: none).
    clocks: AtomicU64,
    /// Their sites and call contexts, `site | ctx << 32`.
    w_site: AtomicU64,
    r_site: AtomicU64,
}

use crate::pass::SOLE_LOCK;

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<Sole>() == SOLE_CELL_BYTES as usize);
    assert!(offset_of!(Sole, owner) == SOLE_OWNER_OFF as usize);
    assert!(offset_of!(Sole, clocks) == SOLE_CLOCKS_OFF as usize);
    assert!(offset_of!(Sole, w_site) == SOLE_W_SITE_OFF as usize);
    assert!(offset_of!(Sole, r_site) == SOLE_R_SITE_OFF as usize);
};

fn sole_owner(t: Tid) -> u64 {
    (u64::from(t) + 1) << 1
}

fn pack_own(o: Option<Own>) -> (u64, u64) {
    o.map_or((0, 0), |o| {
        (
            u64::from(o.clock.get()),
            u64::from(o.site.0) | u64::from(o.ctx.0) << 32,
        )
    })
}

fn unpack_own(clock: u64, site: u64) -> Option<Own> {
    Some(Own {
        clock: std::num::NonZeroU32::new(clock as u32)?,
        site: crate::event::SiteId(site as u32),
        ctx: crate::ctx::CtxId((site >> 32) as u32),
    })
}

impl Sole {
    /// Take the lock whoever owns the location (the caller holds its cell's lock,
    /// so the owner cannot change but by this thread); returns the owner's word.
    fn lock(&self) -> u64 {
        crate::spin::lock_bit(&self.owner, SOLE_LOCK)
    }
}

pub struct SingleTrack {
    shared: Arc<Shared>,
    state: Mutex<State>,
    /// The finished transactions ([`Cf::finished`]), read without the mutex.
    finished: Arc<Finished>,
    /// Per location, its lock, and its first access where it has no cell yet
    /// ([`first`]).
    recs: PageTable<first::Rec>,
    /// Per location with more than a first access, its cell (reached under the
    /// location's lock in `recs`).
    cells: PageTable<packed::Slot>,
    /// The origins cell-less first accesses and packed cells point at
    /// ([`first::Origins`]).
    origins: first::OriginStore,
    /// Per location, the stamp of the last access (see "Same epoch" in the module
    /// doc); 0 before any stamped access.
    stamps: PageTable<AtomicU64>,
    live: Arc<Liveness>,
    checks: PageTable<Checks>,
    /// Per location, its read words once shared (a leaf only where some location
    /// was read by two threads of a transaction in a row).
    reads: PageTable<ReadSlot>,
    /// Per location, its sole accessor's pending state (a leaf only where some
    /// location had one).
    sole: PageTable<Sole>,
    /// Read words replaced by larger ones: a thread may still read them through a
    /// stamp it loaded before, so they live as long as the pass.
    retired: Mutex<Vec<ReadWords>>,
}

fn access_info(a: &CfAccess) -> AccessInfo {
    AccessInfo {
        tid: a.tid,
        op: a.op.to_string(),
        site: a.site,
        ctx: a.ctx,
        event: (a.event > 0).then_some(a.event),
    }
}

fn copy_of(local: &mut Local) -> &mut ThreadCopy {
    local
        .downcast_mut::<ThreadCopy>()
        .expect("singletrack's thread-local state")
}

impl SingleTrack {
    pub fn new(shared: &Arc<Shared>) -> Self {
        let xs = TxHb::new(TxMode::SINGLETRACK);
        let live = xs.liveness();
        let cf = Cf::new();
        SingleTrack {
            shared: shared.clone(),
            finished: cf.finished(),
            state: Mutex::new(State { cf, xs }),
            // Leaves built eagerly, not as lazily committed zeroed allocations
            // (`PageTable::zeroed`): crypt, whose 36 M locations then all got a cell, a
            // stamp and FastTrack's cell, took 5.2–5.3 s with SingleTrack's leaves
            // zeroed against 4.4–4.6 s, 1 s more system time in page faults (a cell
            // read before it is written costs two faults per page).
            cells: PageTable::default(),
            // Touched (locked) by every access that reaches the cell's rules, so its
            // pages are made resident once per leaf.
            recs: PageTable::zeroed_committed(),
            origins: first::OriginStore::default(),
            stamps: PageTable::default(),
            live,
            checks: PageTable::default(),
            reads: PageTable::default(),
            sole: PageTable::default(),
            retired: Mutex::new(Vec::new()),
        }
    }

    fn conflict_warning(&self, c: &CfConflict) -> Warning {
        let env = self.shared.env.as_ref();
        let mut w = Warning::new(WarningKind::Conflict, NAME);
        let what = match c.target {
            Target::Var(loc) => {
                w.loc = Some(loc);
                env.loc_name(loc).to_string()
            }
            Target::Lock(m) => format!("lock {}", env.obj_label(m)),
        };
        w.event = (c.cur.event > 0).then_some(c.cur.event);
        w.accesses = vec![access_info(&c.prev), access_info(&c.cur)];
        // A position, not a trace line, so online and offline reports read the same
        // (the JSON keeps the trace line in `transaction.event`).
        let begun = env.site(c.begin.site).position;
        w.message = format!(
            "{} by T{} and {} by T{} on {what} in the deterministic computation begun by T{} at {begun} are not ordered by fork, join or barrier",
            c.prev.op, c.prev.tid, c.cur.op, c.cur.tid, c.begin.tid
        );
        let mut tx = serde_json::json!({
            "thread": c.begin.tid,
            "site": env.site(c.begin.site).position,
        });
        if c.begin.event > 0 {
            tx["event"] = c.begin.event.into();
        }
        w.extra.insert("transaction".into(), tx);
        w
    }

    fn report<'a>(
        &self,
        conflicts: impl IntoIterator<Item = &'a CfConflict>,
        cycles: &[Violation],
    ) {
        for c in conflicts {
            self.shared.reporter.report(self.conflict_warning(c));
        }
        for v in cycles {
            let w = cycle_warning(
                WarningKind::Serializability,
                NAME,
                "deterministic",
                v,
                self.shared.env.as_ref(),
            );
            self.shared.reporter.report(w);
        }
    }

    /// Refresh `t`'s copy from the shared state (the caller holds the mutex).
    fn refresh(st: &mut State, t: Tid, copy: &mut ThreadCopy) {
        let before = copy.cf.tx.as_ref().map(Arc::as_ptr);
        copy.cf = st.cf.view(t);
        if copy.cf.tx.as_ref().map(Arc::as_ptr) != before {
            let lo = copy.cf.vc.get(t);
            copy.guard.tx_lo.store(u64::from(lo), Relaxed);
        }
        (copy.inside, copy.last) = st.xs.thread_view(t);
        copy.synced = true;
        Self::set_word(t, copy);
    }

    /// Keep the thread's guard word current (see [`GuardWords::word`]). Its
    /// transaction or node may have changed: the origin front waits for the next
    /// first access to be published again.
    fn set_word(t: Tid, copy: &ThreadCopy) {
        let w = match (copy.cf.tx.is_some(), copy.inside) {
            (true, true) => inside_word(t, copy.cf.vc.get(t)),
            (false, false) => GUARD_OUTSIDE,
            _ => MIXED,
        };
        copy.guard.word.store(w, Relaxed);
        copy.guard.front.store(0, Relaxed);
    }

    /// Count one conflict-freedom check of thread `t` (only `t` writes its counter).
    fn count_checks(&self, t: Tid, n: u64) {
        let c = &self.checks.get(u64::from(t) << 3).0;
        c.store(c.load(Relaxed) + n, Relaxed);
    }

    /// The stamp after an access with guard word `word` (a write if `write`) to
    /// `loc`, whose stamp was `prev` (the location's cell lock is held).
    fn next_stamp(&self, loc: Loc, prev: u64, word: u64, write: bool) -> u64 {
        let inside = word < MIXED;
        if write || !inside {
            // Leaving the shared state: forget the reads (a thread that still reads
            // the words through an old stamp finds its entry or 0, either a valid
            // answer: see the module doc).
            if prev & SHARED_TAG != 0
                && let Some(r) = self.reads.peek(loc.key()).and_then(ReadSlot::get)
            {
                r.clear();
            }
            return if inside { word + u64::from(write) } else { 0 };
        }
        let t = stamp_tid(word);
        let mut others = [0u64; 2];
        if is_stamp(prev) {
            // A read after a stamped access of another thread shares the stamp; after
            // the thread's own (in any epoch) the read words would hold only its
            // word, which is what the plain stamp says.
            if prev == 0 || stamp_tid(prev) == t {
                return word;
            }
            // Two readers: both words in the stamp, when they fit.
            if let Some(p) = pair_of(prev & !1, word) {
                return p;
            }
            others[0] = prev & !1;
        } else if is_pair(prev) {
            // The thread's own half is replaced; a third thread needs read words.
            let [a, b] = pair_words(prev);
            let other = match (stamp_tid(a) == t, stamp_tid(b) == t) {
                (true, _) => Some(b),
                (_, true) => Some(a),
                _ => None,
            };
            match other {
                Some(o) => match pair_of(o, word) {
                    Some(p) => return p,
                    None => others[0] = o,
                },
                None => others = [a, b],
            }
        }
        let others = others.into_iter().filter(|&o| o != 0);
        let need = others.clone().map(stamp_tid).fold(t, Tid::max) as usize + 1;
        let slot = self.reads.get(loc.key());
        if slot.get().is_none_or(|r| r.len() < need) {
            let bigger = Box::new(ReadWords::new(need.next_power_of_two().max(4)));
            if prev & SHARED_TAG != 0
                && let Some(old) = slot.get()
            {
                for (u, w) in old.words[1..].iter().enumerate() {
                    bigger.words[1 + u].store(w.load(Relaxed), Relaxed);
                }
            }
            if let Some(old) = slot.set(bigger) {
                self.retired.lock().push(*old);
            }
        }
        let r = slot.get().expect("installed above");
        for o in others {
            r.entry(stamp_tid(o))
                .expect("sized above")
                .store(o, Relaxed);
        }
        r.entry(t).expect("sized above").store(word, Relaxed);
        r.tagged()
    }

    /// Whether `stamp` is an access of `t` itself in its current transaction.
    fn own_earlier(stamp: u64, t: Tid, copy: &ThreadCopy) -> bool {
        is_stamp(stamp)
            && stamp != 0
            && stamp_tid(stamp) == t
            && stamp >> 32 >= copy.guard.tx_lo.load(Relaxed)
    }

    /// A plain access of the location's sole accessor `t` (see the module doc),
    /// whose guard word is `word`: replaces its pending write, or its read, and
    /// moves the stamp as [`SingleTrack::next_stamp`] would. False if `t` does not
    /// own the location (any more).
    fn sole_access(
        sole: &Sole,
        t: &ThreadState,
        word: u64,
        write: bool,
        site: crate::event::SiteId,
        stamp: &AtomicU64,
    ) -> bool {
        let own = sole_owner(t.tid);
        if sole.owner.load(Relaxed) != own
            || sole
                .owner
                .compare_exchange(own, own | SOLE_LOCK, Acquire, Relaxed)
                .is_err()
        {
            return false;
        }
        let clock = word >> 32;
        let packed = u64::from(site.0) | u64::from(t.ctx.0) << 32;
        if write {
            // A write drops the reads before it.
            sole.w_site.store(packed, Relaxed);
            sole.clocks.store(clock << 32, Relaxed);
        } else {
            sole.r_site.store(packed, Relaxed);
            let w = sole.clocks.load(Relaxed) & !u64::from(u32::MAX);
            sole.clocks.store(w | clock, Relaxed);
        }
        stamp.store(word + u64::from(write), Release);
        sole.owner.store(own, Release);
        true
    }

    /// Give the cell its sole accessor's pending state and end the ownership (the
    /// caller holds the cell's lock).
    fn fold_sole(c: &mut Cell, sole: &Sole) {
        if sole.owner.load(Relaxed) == 0 {
            return;
        }
        let o = sole.lock();
        let t = ((o >> 1) - 1) as Tid;
        let clocks = sole.clocks.load(Relaxed);
        let write = unpack_own(clocks >> 32, sole.w_site.load(Relaxed));
        let read = unpack_own(clocks & u64::from(u32::MAX), sole.r_site.load(Relaxed));
        c.cf.set_sole(t, write, read);
        // The writer stays the transaction's node; a read since the write is its
        // thread's, in that node too.
        c.readers.clear();
        if read.is_some() {
            let n = c.writer.expect("a sole accessor's location has a writer");
            c.readers.push((t, n));
        }
        sole.owner.store(0, Release);
    }

    /// After a plain access of `t` inside its transaction, which left the stamp
    /// `t`'s own and ran in node `target`: make `t` the location's sole accessor if
    /// the cell holds nothing but `t`'s accesses in that transaction, and its node
    /// is the location's writer and only reader (the caller holds the cell's lock).
    fn claim_sole(&self, c: &Cell, loc: Loc, t: Tid, copy: &ThreadCopy, target: Option<NodeId>) {
        let Some(tx) = &copy.cf.tx else { return };
        if target.is_none()
            || target != copy.last
            || c.writer != target
            || c.readers.iter().any(|&(u, n)| u != t || Some(n) != target)
        {
            return;
        }
        let Some((write, read)) = c.cf.sole(tx.xid, t) else {
            return;
        };
        if read.is_some() == c.readers.iter().next().is_none() {
            return;
        }
        let sole = self.sole.get(loc.key());
        let ((wc, ws), (rc, rs)) = (pack_own(write), pack_own(read));
        sole.w_site.store(ws, Relaxed);
        sole.r_site.store(rs, Relaxed);
        sole.clocks.store(wc << 32 | rc, Relaxed);
        sole.owner.store(sole_owner(t), Release);
    }

    /// The graph's part of an access to `loc` whose cell names `writer` as the last
    /// write's node and, for a write, `readers` as the nodes of the reads since: the
    /// node the access runs in (⊥: none that can be on a cycle) and the cycles it
    /// closes. Decided from the liveness view when it can be; otherwise under the
    /// pass's mutex (the caller holds the cell's lock: lock order cell, then mutex).
    fn graph_step(
        &self,
        t: &ThreadState,
        copy: &mut ThreadCopy,
        ev: &Event<'_>,
        loc: Loc,
        writer: Option<NodeId>,
        readers: &[NodeId],
    ) -> (Option<NodeId>, Vec<Violation>) {
        let sources = writer.into_iter().chain(readers.iter().copied());
        if let Some(n) = decide_access(&self.live, copy.inside, copy.last, sources) {
            return (n, Vec::new());
        }
        let src: Vec<Option<NodeId>> = std::iter::once(writer)
            .chain(readers.iter().map(|&r| Some(r)))
            .collect();
        let mut st = self.state.lock();
        let (n, found) = st.xs.access(ev, t.ctx, loc, &src);
        (copy.inside, copy.last) = st.xs.thread_view(t.tid);
        Self::set_word(t.tid, copy);
        (n, found)
    }

    /// A read or write of `loc` (plain or volatile) by `t`.
    fn var_access(&self, t: &ThreadState, copy: &mut ThreadCopy, ev: &Event<'_>, loc: Loc) {
        let write = matches!(
            ev.kind,
            EventKind::Write { .. } | EventKind::VolatileWrite { .. }
        );
        if !copy.synced {
            Self::refresh(&mut self.state.lock(), t.tid, copy);
        }
        // Same epoch: the thread's own access of this kind (or a write) in this
        // epoch of its transaction is the location's last one. Nothing changes.
        let word = copy.guard.word.load(Relaxed);
        if word == GUARD_OUTSIDE && self.live.none_live() {
            // Idle: outside every transaction, with none live. Conflict freedom
            // ignores the access and no graph node can be its source or target
            // (the cell's nodes, if any, are dead: as good as none).
            return;
        }
        let stamp = self.stamps.get(loc.key());
        let s = stamp.load(Acquire);
        let same = if write {
            s == word + 1
        } else if is_stamp(s) {
            s & !1 == word
        } else if is_pair(s) {
            word < MIXED && pair_same(s, word)
        } else {
            word < MIXED && shared_same(s, word)
        };
        if same {
            self.count_checks(t.tid, 1);
            return;
        }
        // Sole accessor: the location's pending state is this thread's, from this
        // transaction (its stamp, which only the owner moves, is the thread's own
        // at a clock of this transaction).
        let plain = matches!(ev.kind, EventKind::Read { .. } | EventKind::Write { .. });
        if plain
            && ev.index == 0
            && word < MIXED
            && Self::own_earlier(s, t.tid, copy)
            && let Some(sole) = self.sole.peek(loc.key())
            && Self::sole_access(sole, t, word, write, ev.site, stamp)
        {
            self.count_checks(t.tid, 1);
            return;
        }
        let cur = CfAccess {
            tid: t.tid,
            clock: copy.cf.vc.get(t.tid),
            op: cf::op_name(&ev.kind),
            site: ev.site,
            ctx: t.ctx,
            event: ev.index,
        };
        let mut held = self.recs.get(loc.key()).lock();
        let prev = stamp.load(Relaxed);
        // Generated code applies the first-access rule below without looking at the
        // entry: a stamp of 0 has no sole accessor ("First access inline").
        debug_assert!(
            prev != 0
                || self
                    .sole
                    .peek(loc.key())
                    .is_none_or(|s| s.owner.load(Relaxed) == 0)
        );
        // A location's first access, inside a transaction: nothing to check against.
        // Kept without a cell when the stamp it leaves names it ([`first`]), else
        // written to the cell directly (what `Packed::with` would leave).
        if plain
            && ev.index == 0
            && prev == 0
            && held.is_new()
            && let Some(tx) = &copy.cf.tx
            && self
                .sole
                .peek(loc.key())
                .is_none_or(|s| s.owner.load(Relaxed) == 0)
            && let Some(first) = packed::First::new(&cur, write)
        {
            let xid = tx.xid;
            self.count_checks(t.tid, 1);
            let (target, cycles) = self.graph_step(t, copy, ev, loc, None, &[]);
            let word = copy.guard.word.load(Relaxed);
            let s = self.next_stamp(loc, prev, word, write);
            let seg = first::Seg { xid, node: target };
            let origin = copy.origins.get(seg, ev.site, t.ctx, &self.origins);
            // The segment is the one every first access of the thread runs in until
            // its next event (see "First access inline").
            if word < MIXED && decide_access(&self.live, copy.inside, copy.last, []) == Some(target)
            {
                copy.guard.front.store(copy.origins.front_addr(), Relaxed);
            }
            if cur.clock != 0 && s == stamp_word(t.tid, cur.clock) + u64::from(write) {
                held.set_first(origin);
            } else {
                // SAFETY: under the location's lock (`held`).
                let cell = unsafe { self.cells.get(loc.key()).get() };
                held.move_to_cell(cell, prev);
                cell.set_first(first, origin);
            }
            stamp.store(s, Release);
            drop(held);
            if !cycles.is_empty() {
                self.report(None, &cycles);
            }
            return;
        }
        // SAFETY: under the location's lock (`held`), which outlives `cell`.
        let cell = unsafe { self.cells.get(loc.key()).get() };
        let had_cell = held.has_cell();
        held.move_to_cell(cell, prev);
        let (conflict, cycles) = {
            cell.with(copy, &self.origins, |c, copy| {
                if let Some(sole) = self.sole.peek(loc.key()) {
                    Self::fold_sole(c, sole);
                }
                let (checked, conflict) = c.cf.access(&copy.cf, &self.finished, loc, write, cur);
                if checked {
                    self.count_checks(t.tid, 1);
                }
                let readers: smallvec::SmallVec<[NodeId; 2]> = if write {
                    c.readers.iter().map(|r| r.1).collect()
                } else {
                    smallvec::SmallVec::new()
                };
                let (target, cycles) = self.graph_step(t, copy, ev, loc, c.writer, &readers);
                if write {
                    c.writer = target;
                    c.readers.clear();
                } else if let Some(n) = target {
                    c.readers.replace_or_push(|(u, _)| *u == t.tid, (t.tid, n));
                }
                // Under the cell's lock, so the stamp names the access that left the
                // cell as it is (0 when no same-epoch rule may follow it).
                let word = copy.guard.word.load(Relaxed);
                let s = self.next_stamp(loc, prev, word, write);
                // Claimed at the thread's second epoch on the location in a row, not at
                // its first access: most objects allocated in a transaction are touched
                // in one epoch only, and an entry for them would cost for nothing. Nor
                // while the location's state was a first access alone (no cell before
                // this access): a location written in one phase and read in the next
                // (crypt's intermediate array, 12 M locations) is mostly done then, and
                // the entry cost 32 bytes each for nothing; one that goes on (a grid
                // point read and written in every phase) is claimed at its next epoch.
                if plain
                    && ev.index == 0
                    && word < MIXED
                    && had_cell
                    && s & !1 == word
                    && Self::own_earlier(prev, t.tid, copy)
                    && prev >> 32 < word >> 32
                {
                    self.claim_sole(c, loc, t.tid, copy, target);
                }
                stamp.store(s, Release);
                (conflict, cycles)
            })
        };
        drop(held);
        if conflict.is_some() || !cycles.is_empty() {
            self.report(conflict.as_deref(), &cycles);
        }
    }
}

impl Pass for SingleTrack {
    fn name(&self) -> &'static str {
        NAME
    }
    /// Calls matter only through the call context of reports (`ThreadState::ctx`),
    /// which the chain keeps without `Enter`/`Exit`.
    fn wants_frames(&self) -> bool {
        false
    }

    fn thread_local(&self) -> Box<Local> {
        Box::new(ThreadCopy::default())
    }

    fn inline_guard(&self) -> Option<InlineGuard> {
        Some(InlineGuard::Stamp {
            top: self.stamps.top_addr(),
            idle: self.live.count_addr(),
            sole: self.sole.top_addr(),
            recs: self.recs.top_addr(),
        })
    }

    fn inline_guard_word<'a>(&self, local: &'a Local) -> Option<&'a AtomicU64> {
        local.downcast_ref::<ThreadCopy>().map(|c| &c.guard.word)
    }

    /// Accesses the producer decided with the guard (and the detector's test): those
    /// of the stamp test were conflict-freedom checks that changed nothing, those of
    /// the idle test (counted apart by the producer) no check.
    fn inline_forwarded(&self, t: &ThreadState, local: &mut Local, checks: &[InlineChecks]) {
        let idle = copy_of(local).guard.idle.swap(0, Relaxed);
        let n: u64 = checks.iter().map(|c| c.reads() + c.writes()).sum();
        self.count_checks(t.tid, n.saturating_sub(idle));
    }

    fn access(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) -> Flow {
        if let EventKind::Read { loc } | EventKind::Write { loc, .. } = ev.kind {
            self.var_access(t, copy_of(local), ev, loc);
        }
        Flow::Forward
    }

    fn event(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) {
        let copy = copy_of(local);
        match ev.kind {
            EventKind::Read { loc }
            | EventKind::Write { loc, .. }
            | EventKind::VolatileRead { loc }
            | EventKind::VolatileWrite { loc, .. } => self.var_access(t, copy, ev, loc),
            // Neither property looks at calls or allocations (conflict freedom reads
            // only accesses, locks, forks, joins, barriers and blocks): no lock,
            // nothing to refresh.
            ref k if TxHb::ignores(k) => {}
            _ => {
                let (conflicts, cycles) = {
                    let mut st = self.state.lock();
                    let conflicts = st.cf.event(ev, t.ctx);
                    let cycles = st.xs.event(ev, t.ctx);
                    Self::refresh(&mut st, t.tid, copy);
                    (conflicts, cycles)
                };
                self.report(&conflicts, &cycles);
            }
        }
    }

    fn stats(&self) -> Option<serde_json::Value> {
        let mut checks = 0;
        self.checks.for_each_cell(|c| checks += c.0.load(Relaxed));
        let st = self.state.lock();
        let g = st.xs.stats();
        Some(serde_json::json!({
            "cf_checks": st.cf.checks() + checks,
            "cf_live_transactions": st.cf.live_transactions(),
            "xs_nodes_created": g.nodes_created,
            "xs_nodes_collected": g.nodes_collected,
            "xs_live_nodes": g.live_nodes,
            "xs_max_live_nodes": g.max_live_nodes,
            "xs_edges_added": g.edges_added,
            "xs_searches": g.searches,
            "xs_cycles": g.cycles,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ObjId, SiteId, Spec};

    fn send(st: &SingleTrack, t: &ThreadState, local: &mut Local, kind: EventKind<'static>) {
        send_at(st, t, local, 1, kind);
    }

    /// `kind` from `t` at site `site`.
    fn send_at(
        st: &SingleTrack,
        t: &ThreadState,
        local: &mut Local,
        site: u32,
        kind: EventKind<'static>,
    ) {
        let ev = Event {
            tid: t.tid,
            site: SiteId(site),
            index: 0,
            kind,
        };
        match kind {
            EventKind::Read { .. } | EventKind::Write { .. } => {
                st.access(t, local, &ev);
            }
            _ => st.event(t, local, &ev),
        }
    }

    /// `n` threads and their thread-local states of `st`.
    fn threads(st: &SingleTrack, n: Tid) -> (Vec<ThreadState>, Vec<Box<Local>>) {
        let threads = (0..n)
            .map(|t| ThreadState::new(t, crate::vc::VectorClock::new()))
            .collect();
        let locals = (0..n).map(|_| st.thread_local()).collect();
        (threads, locals)
    }

    /// A pass with no environment (locations are bare keys).
    fn fresh() -> SingleTrack {
        let shared = Shared::new(
            Arc::new(crate::env::NullEnv),
            crate::shared::ChainOptions::default(),
        );
        SingleTrack::new(&shared)
    }

    /// A thread that reads a location again in a later epoch of its transaction
    /// (every sweep after a barrier) keeps a plain stamp: read words exist only
    /// where two threads read in a row, and the read is still a same-epoch hit
    /// when repeated.
    #[test]
    fn a_threads_own_location_keeps_a_plain_stamp_across_epochs() {
        let st = fresh();
        let t = ThreadState::new(0, crate::vc::VectorClock::new());
        let mut local = st.thread_local();
        let loc = Loc {
            obj: ObjId(1 << 20),
            slot: 3,
        };
        let spec = Spec::Deterministic;
        send(&st, &t, &mut *local, EventKind::Begin { spec });
        let (barrier, parties) = (ObjId(1 << 21), 1);
        for generation in 0..3 {
            send(&st, &t, &mut *local, EventKind::Read { loc });
            let s = st.stamps.get(loc.key()).load(Relaxed);
            assert!(is_stamp(s) && s != 0, "generation {generation}: {s:#x}");
            assert!(st.reads.peek(loc.key()).is_none_or(|r| r.get().is_none()));
            let checks = |st: &SingleTrack| st.stats().unwrap()["cf_checks"].as_u64();
            let before = checks(&st);
            send(&st, &t, &mut *local, EventKind::Read { loc });
            assert_eq!(st.stamps.get(loc.key()).load(Relaxed), s, "same epoch");
            assert_eq!(checks(&st), before.map(|n| n + 1));
            let b = EventKind::BarrierEnter {
                barrier,
                generation,
                parties,
            };
            send(&st, &t, &mut *local, b);
            let b = EventKind::BarrierExit {
                barrier,
                generation,
                parties,
            };
            send(&st, &t, &mut *local, b);
        }
    }

    /// A location its thread writes in one epoch and reads in the next (crypt's
    /// intermediate array) gets a cell at the read but no sole-accessor entry; one
    /// the thread comes back to once more is claimed then. A second location, read
    /// first and written in the same epoch, then read again in the next (a grid
    /// point), is claimed at that read, its second epoch, as before.
    #[test]
    fn the_sole_accessor_is_claimed_only_once_the_location_has_a_cell() {
        let st = fresh();
        let t = ThreadState::new(0, crate::vc::VectorClock::new());
        let mut local = st.thread_local();
        let (phase, grid) = (
            Loc {
                obj: ObjId(1 << 20),
                slot: 0,
            },
            Loc {
                obj: ObjId(1 << 20),
                slot: 1,
            },
        );
        let owned = |l: Loc| {
            st.sole
                .peek(l.key())
                .is_some_and(|s| s.owner.load(Relaxed) != 0)
        };
        let spec = Spec::Deterministic;
        send(&st, &t, &mut *local, EventKind::Begin { spec });
        let (barrier, parties) = (ObjId(1 << 21), 1);
        let mut generation = 0;
        let mut next_epoch = |local: &mut Local| {
            for b in [
                EventKind::BarrierEnter {
                    barrier,
                    generation,
                    parties,
                },
                EventKind::BarrierExit {
                    barrier,
                    generation,
                    parties,
                },
            ] {
                send(&st, &t, local, b);
            }
            generation += 1;
        };
        let write = |loc| EventKind::Write { loc, value: None };
        send(&st, &t, &mut *local, write(phase));
        send(&st, &t, &mut *local, EventKind::Read { loc: grid });
        send(&st, &t, &mut *local, write(grid));
        next_epoch(&mut *local);
        send(&st, &t, &mut *local, EventKind::Read { loc: phase });
        send(&st, &t, &mut *local, EventKind::Read { loc: grid });
        assert!(
            st.recs.get(phase.key()).lock().has_cell(),
            "the read's cell"
        );
        assert!(
            !owned(phase),
            "no entry for a location done after two phases"
        );
        assert!(owned(grid), "a grid point's second epoch claims it");
        next_epoch(&mut *local);
        send(&st, &t, &mut *local, write(phase));
        assert!(owned(phase), "claimed at its third epoch");
    }

    /// A location's first access inside a transaction leaves no cell, only its
    /// record ([`first`]); the thread's access to it in a later epoch builds the
    /// cell, and so does another thread's, which checks against the first access
    /// and names it in a conflict.
    #[test]
    fn a_first_access_keeps_no_cell_until_the_location_is_touched_again() {
        let st = fresh();
        let (threads, mut locals) = threads(&st, 2);
        let mut at = |t: usize, site, kind| send_at(&st, &threads[t], &mut *locals[t], site, kind);
        let loc = Loc {
            obj: ObjId(1 << 20),
            slot: 2,
        };
        let other = Loc {
            obj: ObjId(1 << 22),
            slot: 0,
        };
        let spec = Spec::Deterministic;
        at(0, 1, EventKind::Begin { spec });
        at(0, 2, EventKind::Read { loc: other });
        let fork = EventKind::Fork {
            child: 1,
            handed: &[],
        };
        at(0, 3, fork);
        at(1, 4, EventKind::ThreadStart);
        at(0, 5, EventKind::Write { loc, value: None });
        for l in [loc, other] {
            assert!(st.cells.peek(l.key()).is_none(), "no cell: no leaf");
            let held = st.recs.get(l.key()).lock();
            assert!(!held.is_new() && !held.has_cell(), "a record");
        }
        // T0's read of `other` after the fork, in a later epoch: the cell.
        at(0, 6, EventKind::Read { loc: other });
        assert!(st.recs.get(other.key()).lock().has_cell());
        assert!(st.cells.peek(loc.key()).is_none());
        // T1 reads `loc`, unordered with T0's write: a conflict naming that write.
        assert!(st.shared.reporter.is_empty());
        at(1, 7, EventKind::Read { loc });
        assert!(st.recs.get(loc.key()).lock().has_cell());
        let reports = st.shared.reporter.snapshot();
        assert_eq!(reports.len(), 1, "{reports:?}");
        let w = &reports[0].warning;
        assert_eq!((w.kind, w.loc), (WarningKind::Conflict, Some(loc)));
        let sites: Vec<_> = w.accesses.iter().map(|a| (a.tid, a.site)).collect();
        assert_eq!(sites, [(0, SiteId(5)), (1, SiteId(7))]);
    }

    /// Two threads' reads of a location share its stamp ("Two readers"): a read of
    /// either in the same epoch changes nothing, a later epoch's read replaces the
    /// thread's own half, a third reader moves all three words to read words, and a
    /// write stamps the location plainly again.
    #[test]
    fn two_readers_share_the_stamp_and_a_third_takes_read_words() {
        let st = fresh();
        let (threads, mut locals) = threads(&st, 3);
        let loc = Loc {
            obj: ObjId(1 << 20),
            slot: 1,
        };
        let checks = |st: &SingleTrack| st.stats().unwrap()["cf_checks"].as_u64().unwrap();
        let stamp = |st: &SingleTrack| st.stamps.get(loc.key()).load(Relaxed);
        let word = |l: &mut Box<Local>| copy_of(l.as_mut()).guard.word.load(Relaxed);
        let spec = Spec::Deterministic;
        send(&st, &threads[0], &mut *locals[0], EventKind::Begin { spec });
        let v = Some(ObjId(7));
        send(
            &st,
            &threads[0],
            &mut *locals[0],
            EventKind::Write { loc, value: v },
        );
        assert!(is_stamp(stamp(&st)));
        for child in [1, 2] {
            let fork = EventKind::Fork { child, handed: &[] };
            send(&st, &threads[0], &mut *locals[0], fork);
            let (t, l) = (&threads[child as usize], &mut *locals[child as usize]);
            send(&st, t, l, EventKind::ThreadStart);
        }
        // T1 reads after T0's write: both words in the stamp.
        send(&st, &threads[1], &mut *locals[1], EventKind::Read { loc });
        let s = stamp(&st);
        assert!(is_pair(s), "{s:#x}");
        let w1 = word(&mut locals[1]);
        assert!(pair_same(s, w1) && pair_words(s).contains(&w1));
        let before = checks(&st);
        send(&st, &threads[1], &mut *locals[1], EventKind::Read { loc });
        assert_eq!((stamp(&st), checks(&st)), (s, before + 1), "same epoch");
        // T0 reads in a later epoch (it forked since its write): its half moves on.
        let w0 = word(&mut locals[0]);
        assert!(!pair_same(s, w0));
        send(&st, &threads[0], &mut *locals[0], EventKind::Read { loc });
        let s = stamp(&st);
        assert!(is_pair(s) && pair_same(s, w0) && pair_same(s, w1), "{s:#x}");
        // A third reader: every word in the read words.
        send(&st, &threads[2], &mut *locals[2], EventKind::Read { loc });
        let s = stamp(&st);
        assert!(s & SHARED_TAG != 0, "{s:#x}");
        for (t, l) in locals.iter_mut().enumerate() {
            assert!(shared_same(s, word(l)), "T{t}");
        }
        // A write: a plain stamp, the read words cleared.
        send(
            &st,
            &threads[1],
            &mut *locals[1],
            EventKind::Write { loc, value: v },
        );
        let s = stamp(&st);
        assert_eq!(s, w1 + 1);
        let r = st.reads.peek(loc.key()).and_then(ReadSlot::get).unwrap();
        assert!(r.words[1..].iter().all(|w| w.load(Relaxed) == 0));
    }
}
