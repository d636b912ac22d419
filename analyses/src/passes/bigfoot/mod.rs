//! `bigfoot`: DYNAMICBF, the run-time half of BigFoot (Rhodes, *Access
//! Classification for Race Detection Optimization*, UCSC 2019, ch. 3; Rhodes,
//! Flanagan & Freund, *BigFoot: Static Check Placement for Dynamic Race Detection*,
//! PLDI 2017).
//!
//! - Handled events: the checks ([`EventKind::Check`]) that the compiler's placement
//!   (`lang::bigfoot`) leaves in the program. Plain accesses are not checked: each
//!   has a covering check (they pass on to later passes untouched). Every
//!   synchronization event first commits the thread's array footprint.
//! - State: per field group and per static one of FastTrack's own cells
//!   ([`super::fasttrack::FtCells`]: last write epoch, read epoch or read-shared
//!   clock), checked at once, whose same-epoch rules the JIT decides inline like
//!   FastTrack's ([`crate::pass::InlineCheck::FieldChecks`]); per array an
//!   adaptive shadow ([`array::ArrayShadow`]) whose cells are checked when a thread
//!   commits its footprint: the element ranges it checked since its last
//!   synchronization, merged as they arrive. The commit runs before the event's
//!   clock update (the chain applies clocks after the passes), so all of the
//!   thread's checks of one synchronization-free region see the same epoch.
//! - Verdict: a `race` warning at every check the FastTrack rules flag, on the field
//!   group (`extra.group`) or the element range of the array cell (`extra.range`)
//!   that holds the racing location.
//!
//! Precision: with symmetric field groups and lossless array refinement the checks
//! race iff the accesses do, on the same locations (Theorem 3.9.1 of the thesis,
//! given precise checks; the `bigfoot` oracle in `vm::testing` verifies those).
//!
//! Live runs only: the checks exist only in a placed program, so `capvm analyze`
//! refuses this pass.

pub mod array;
pub mod cell;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::event::{CheckSpan, Event, EventKind, Loc, ObjId, Op};
use crate::pass::{Flow, InlineCheck, InlineChecks, Local, Pass};
use crate::report::WarningKind;
use crate::shared::Shared;
use crate::thread::ThreadState;

use super::fasttrack::FtCells;
use super::shadow::{Acc, BoxTable, pair_warning};
use array::{ArrayShadow, Mode, Range, Touched};
use cell::{Cell, Race};

/// A footprint entry: one range of one array, with the check that started it.
#[derive(Copy, Clone, Debug)]
struct Entry {
    arr: ObjId,
    len: u32,
    range: Range,
    acc: Acc,
}

/// Per-thread state: the footprint since the last synchronization and counters.
#[derive(Default)]
struct BfLocal {
    footprint: Vec<Entry>,
    /// Per array and kind (`true`: write), the footprint's latest entry of them: the
    /// one a new range of that array and kind may merge into ([`BigFoot::add_range`]).
    /// Empty while the footprint has at most [`MERGE_SCAN`] entries.
    latest: hashbrown::HashMap<(ObjId, bool), usize>,
    counts: Counts,
    /// Arrays this thread knows to have fine shadows (see [`FineCache`]).
    fine: FineCache,
    /// Read ranges this thread checked on fine shadows since its last synchronization.
    reads: ReadMemo,
    /// The frontier (`crate::clocks`) as of its advance number, taken at a commit.
    frontier: (u64, crate::vc::VectorClock),
}

/// The latest read ranges a thread checked on fine shadows in its current epoch.
///
/// A read check of elements that this thread read-checked earlier in the same epoch
/// is decided by FastTrack's same-epoch rules on every element, whatever other
/// threads did meanwhile: the element's read state then holds this epoch (`R = e`),
/// or a shared read clock with `R[t] = e` once another thread's read shared it, and
/// FT2 never leaves that state before `t`'s next read in a later epoch (a write keeps
/// the read state). So the check changes nothing and finds no race, and is skipped:
/// `lufact`'s pivot column, read by a range check once per column a thread updates.
/// Cleared at every synchronization event of the thread (its epoch may change).
#[derive(Default)]
struct ReadMemo {
    /// `(array, lo, hi, step)`, oldest first.
    ranges: Vec<(ObjId, u32, u32, u32)>,
}

/// Read ranges a thread remembers between synchronization events.
const READ_MEMO: usize = 32;

impl ReadMemo {
    /// The elements of `r` (a read range of `arr`, normalized: a single element has
    /// step 1) that no earlier range holds: `r` itself, `r` without the part an
    /// earlier range of the same stride and residue holds at its start or end, or
    /// nothing. The memo then holds them too.
    fn unchecked(&mut self, arr: ObjId, r: (u32, u32, u32)) -> Option<(u32, u32, u32)> {
        let (lo, hi, step) = r;
        let last = lo + (hi - 1 - lo) / step * step;
        for e in self.ranges.iter_mut().rev() {
            let (a, l, h, s) = *e;
            if a != arr {
                continue;
            }
            let holds = |x: u32| x >= l && x < h && (x - l).is_multiple_of(s);
            if holds(lo) && holds(last) && (lo == last || step.is_multiple_of(s)) {
                return None;
            }
            if s != step || !(lo.abs_diff(l)).is_multiple_of(s) {
                continue;
            }
            // Same stride and residue: `r` overlaps or abuts the range at one end.
            let end = l + (h - 1 - l) / s * s + s;
            if lo >= l && lo <= end && last >= end {
                e.2 = hi.max(h);
                return Some((end, hi, step));
            }
            if lo < l && last + s >= l && last < end {
                e.1 = lo;
                return Some((lo, l, step));
            }
        }
        if self.ranges.len() == READ_MEMO {
            self.ranges.remove(0);
        }
        self.ranges.push((arr, lo, hi, step));
        Some(r)
    }
    fn clear(&mut self) {
        self.ranges.clear();
    }
}

/// The arrays a thread has seen with a fine shadow (direct-mapped), so an element
/// check on such an array goes straight to the element's cell, with no footprint and
/// no array lock, like FastTrack's per-element shadow. A fine shadow is terminal
/// ([`array::ArrayShadow::is_fine`]), so an entry never goes stale. Generated code
/// of the same thread reads the table too, to apply FastTrack's exclusive rules to
/// an element check inline ([`InlineCheck::FieldChecks`]); only the thread writes it.
///
/// After the table, the thread's *covered ranges*: per kind (read, write) the latest
/// step-1 footprint range a check of that kind extended or fell into, `[arr, lo, hi,
/// len]`, which is the array's latest footprint entry of that kind (footprint ranges
/// only grow until the commit, so it stays covered; an array whose latest entry is
/// strided has none). A check of that kind inside it adds nothing:
/// [`BigFoot::check_range`] drops it, and so does generated code for an element or
/// range check. A step-1 check that overlaps or abuts it extends it in place, in
/// generated code too, with no call into the pass
/// ([`crate::pass::bigfoot_cover_check`]): the entry takes the words back before the
/// footprint is next read ([`BigFoot::sync_covers`]), so it ends as
/// [`BigFoot::add_range`]'s own merge would leave it. Insertion sort's ranges, each one
/// element longer than the last, then cost no call. The covered ranges name no array
/// of the table (an array is recorded fine only by a commit, which clears them first)
/// and are cleared at every commit.
///
/// Then per check site (direct-mapped) the range it last put into the footprint, of
/// the footprint's generation, which every commit changes: a check inside its own
/// earlier range (a loop's range check in every iteration of an outer loop, an
/// element checked again) adds nothing either.
///
/// Last, per array (direct-mapped) and kind, a covered range like the kind's: the
/// array's latest footprint entry of the kind, when it is of step 1. A loop that
/// walks many arrays in turn (`lufact`'s `matgen`, `a[j][i]` with `j` inner) finds
/// each array's range there and extends it with no call into the pass, where the
/// kind's covered range holds only the last array. These are read and extended only
/// in [`crate::pass::bigfoot_cover_check`] (generated code calls it after its inline
/// tests), which then leaves the kind's covered range and the site's entry as the
/// pass would have (so that what the footprint becomes does not depend on which
/// arrays share a slot, that is on their addresses); an extension of the kind's
/// covered range extends the array's own too. The pass gives each entry the
/// extension back before it next reads it ([`BigFoot::sync_own`]) and clears them
/// at every commit.
struct FineCache {
    arrays: Box<[AtomicU64]>,
    generation: u64,
    /// Per array covered range (by its slot), the footprint entry it mirrors plus 1
    /// (0: none).
    own_at: Box<[u32]>,
    /// The per-array covered ranges given since the last commit (word indexes).
    own: Vec<usize>,
    /// The bits of the read memos, by slot (the table's entries point into them;
    /// see [`crate::pass::InlineCheck::FieldChecks`]).
    memo: Vec<Box<[AtomicU64]>>,
}

const FINE_CACHE: usize = crate::pass::BIGFOOT_FINE_SLOTS;
const COVER: usize = crate::pass::BIGFOOT_COVER_OFF / 8;
const GEN: usize = crate::pass::BIGFOOT_SITE_GEN_OFF / 8;
const SITES: usize = crate::pass::BIGFOOT_SITES_OFF / 8;
const OWN: usize = crate::pass::BIGFOOT_ARRAY_COVER_OFF / 8;
const MEMO: usize = crate::pass::BIGFOOT_MEMO_OFF / 8;
// A wrapped generation clears the memos with the sites' entries.
const _: () = assert!(MEMO > SITES && crate::pass::BIGFOOT_MEMO_WORDS == 4);
const _: () = assert!(COVER == FINE_CACHE && crate::pass::BIGFOOT_COVER_WORDS == 8);
const _: () = assert!(crate::pass::BIGFOOT_SITE_WORDS == 4 && GEN < SITES);

impl Default for FineCache {
    fn default() -> Self {
        let arrays: Box<[AtomicU64]> = (0..crate::pass::BIGFOOT_TABLE_WORDS)
            .map(|_| AtomicU64::new(0))
            .collect();
        // Generation 1: an entry never written (all zero) is of generation 0.
        arrays[GEN].store(1, Relaxed);
        FineCache {
            arrays,
            generation: 1,
            own_at: vec![0; 2 * crate::pass::BIGFOOT_ARRAY_COVER_SLOTS].into_boxed_slice(),
            own: Vec::new(),
            memo: (0..crate::pass::BIGFOOT_MEMO_SLOTS)
                .map(|_| Box::default())
                .collect(),
        }
    }
}

impl FineCache {
    fn slot(arr: ObjId) -> usize {
        crate::pass::bigfoot_fine_slot(arr.0)
    }
    fn contains(&self, arr: ObjId) -> bool {
        self.arrays[Self::slot(arr)].load(Relaxed) == arr.0
    }
    fn record(&mut self, arr: ObjId) {
        self.arrays[Self::slot(arr)].store(arr.0, Relaxed);
    }
    /// The covered range of checks of kind `write`: elements `lo..hi` of `arr`,
    /// extensible up to `len` elements (0: not extensible).
    fn cover(&mut self, write: bool, arr: ObjId, lo: u32, hi: u32, len: u32) {
        let at = COVER + 4 * write as usize;
        self.arrays[at].store(arr.0, Relaxed);
        self.arrays[at + 1].store(lo.into(), Relaxed);
        self.arrays[at + 2].store(hi.into(), Relaxed);
        self.arrays[at + 3].store(len.into(), Relaxed);
    }
    /// The elements `lo..hi` of the covered range at word `at`.
    fn span_at(&self, at: usize) -> (u32, u32) {
        let w = |i: usize| self.arrays[at + i].load(Relaxed) as u32;
        (w(1), w(2))
    }
    /// The slot (in [`FineCache::own_at`]) of the per-array covered range at word
    /// `at`.
    fn own_slot(at: usize) -> usize {
        (at - OWN) / 4
    }
    /// The per-array covered range of `arr` and kind `write`: the word index of its
    /// slot, and the footprint entry it mirrors, if it holds `arr`'s.
    fn own_of(&self, arr: ObjId, write: bool) -> (usize, Option<usize>) {
        let at = crate::pass::bigfoot_array_cover(arr.0, write);
        let entry = self.own_at[Self::own_slot(at)];
        let mirrors = entry != 0 && self.arrays[at].load(Relaxed) == arr.0;
        (at, mirrors.then(|| entry as usize - 1))
    }
    /// Make `lo..hi` of `arr`, the step-1 footprint entry `entry`, the per-array
    /// covered range of kind `write` (the slot's earlier range given back first:
    /// [`BigFoot::sync_own`]).
    fn cover_own(&mut self, write: bool, arr: ObjId, (lo, hi, len): (u32, u32, u32), entry: usize) {
        let at = crate::pass::bigfoot_array_cover(arr.0, write);
        if self.arrays[at].load(Relaxed) == 0 {
            self.own.push(at);
        }
        self.arrays[at].store(arr.0, Relaxed);
        self.arrays[at + 1].store(lo.into(), Relaxed);
        self.arrays[at + 2].store(hi.into(), Relaxed);
        self.arrays[at + 3].store(len.into(), Relaxed);
        self.own_at[Self::own_slot(at)] = u32::try_from(entry + 1).unwrap_or(0);
    }
    /// Forget the covered ranges of kind `write` that name `arr`.
    fn uncover_array(&mut self, arr: ObjId, write: bool) {
        let own = crate::pass::bigfoot_array_cover(arr.0, write);
        for at in [COVER + 4 * write as usize, own] {
            if self.arrays[at].load(Relaxed) == arr.0 {
                for w in &self.arrays[at..at + 4] {
                    w.store(0, Relaxed);
                }
            }
        }
        if self.arrays[own].load(Relaxed) == 0 {
            self.own_at[Self::own_slot(own)] = 0;
        }
    }
    /// Whether the covered ranges hold the range check `lo..hi:step` of `arr`, of
    /// kind `write`, at `site`, as generated code sees it (before
    /// [`BigFoot::check_range`] normalizes it): [`crate::pass::bigfoot_covered`].
    #[cfg(test)]
    fn covers(&self, arr: ObjId, (lo, hi, step): (u32, u32, u32), site: u32, write: bool) -> bool {
        let r = (i64::from(lo), i64::from(hi), u64::from(step));
        crate::pass::bigfoot_covered(&self.arrays, arr.0, r, site, write)
    }
    /// [`FineCache::covers`], or else the covered range extended by the check where
    /// it may be, or else for a read the covered write range holding it: what
    /// generated code does ([`crate::pass::bigfoot_cover_check`]).
    fn cover_check(
        &self,
        arr: ObjId,
        (lo, hi, step): (u32, u32, u32),
        write: bool,
        site: u32,
    ) -> bool {
        let r = (i64::from(lo), i64::from(hi), u64::from(step));
        crate::pass::bigfoot_cover_check(&self.arrays, arr.0, r, site, write)
    }
    /// Element `e` of the fine array `arr` of `len` elements had a read check of
    /// this thread: its bit in the array's read memo, which is taken up first if it
    /// is not of this generation (its bits zeroed). Arrays longer than
    /// [`crate::pass::BIGFOOT_MEMO_MAX_LEN`] have none. Only speed depends on it:
    /// generated code reads the memos, the pass does not.
    fn memo_read(&mut self, arr: ObjId, e: u32, len: u32) {
        if len > crate::pass::BIGFOOT_MEMO_MAX_LEN || e >= len {
            return;
        }
        let (slot, at, current) = self.memo_of(arr);
        let bits = &mut self.memo[slot];
        if !current {
            let words = (len as usize).div_ceil(64);
            if bits.len() < words {
                *bits = (0..words).map(|_| AtomicU64::new(0)).collect();
            } else {
                for w in &bits[..words] {
                    w.store(0, Relaxed);
                }
            }
            self.arrays[at].store(arr.0, Relaxed);
            self.arrays[at + 1].store(self.generation, Relaxed);
            self.arrays[at + 2].store(bits.as_ptr() as u64, Relaxed);
        }
        bits[e as usize / 64].fetch_or(1 << (e % 64), Relaxed);
    }
    /// The slot of `arr`'s read memo, the word index of its entry, and whether the
    /// entry is `arr`'s of this generation.
    fn memo_of(&self, arr: ObjId) -> (usize, usize, bool) {
        let slot = crate::pass::bigfoot_memo_slot(arr.0);
        let at = MEMO + slot * crate::pass::BIGFOOT_MEMO_WORDS;
        let current = self.arrays[at].load(Relaxed) == arr.0
            && self.arrays[at + 1].load(Relaxed) == self.generation;
        (slot, at, current)
    }
    /// Whether element `e` of `arr` is in this generation's read memo.
    #[cfg(test)]
    fn memo_holds(&self, arr: ObjId, e: u32) -> bool {
        let (slot, _, current) = self.memo_of(arr);
        current && self.memo[slot][e as usize / 64].load(Relaxed) >> (e % 64) & 1 == 1
    }
    /// `site` put `r` of `arr` into this footprint.
    fn note_site(&mut self, site: u32, arr: ObjId, r: &Range) {
        crate::pass::bigfoot_note_site(&self.arrays, site, arr.0, (r.lo, r.hi, r.step), r.write);
    }
    /// Forget every covered range (a commit).
    fn uncover(&mut self) {
        for w in &self.arrays[COVER..COVER + crate::pass::BIGFOOT_COVER_WORDS] {
            w.store(0, Relaxed);
        }
        for at in std::mem::take(&mut self.own) {
            for w in &self.arrays[at..at + 4] {
                w.store(0, Relaxed);
            }
            self.own_at[Self::own_slot(at)] = 0;
        }
        self.generation = (self.generation + 1) & u64::from(u32::MAX);
        if self.generation == 0 {
            // Wrapped: entries of an old generation 1 could match again.
            for w in &self.arrays[SITES..] {
                w.store(0, Relaxed);
            }
            self.generation = 1;
        }
        self.arrays[GEN].store(self.generation, Relaxed);
    }
}

#[derive(Default, Clone, Copy)]
struct Counts {
    /// Check events received.
    checks: u64,
    /// Array checks (element ranges) received.
    array_checks: u64,
    /// FastTrack rule applications on shadow cells.
    shadow_checks: u64,
    /// Footprint commits (synchronization events with a non-empty footprint).
    commits: u64,
    /// Field, static and fine-element checks decided by FastTrack's same-epoch rules
    /// on the cell's hot words (no shadow update), here or inline in generated code.
    same_epoch: u64,
    /// Elements of read range checks on fine shadows skipped because the thread
    /// read-checked them earlier in the same epoch ([`ReadMemo`]).
    memo_reads: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.checks += o.checks;
        self.array_checks += o.array_checks;
        self.shadow_checks += o.shadow_checks;
        self.commits += o.commits;
        self.same_epoch += o.same_epoch;
        self.memo_reads += o.memo_reads;
    }
}

/// How many of the footprint's latest entries [`BigFoot::latest_entry`] scans before
/// it looks in [`BfLocal::latest`].
const MERGE_SCAN: usize = 16;

/// Footprint entries past which a thread commits without waiting for its next
/// synchronization event.
const FOOTPRINT_LIMIT: usize = 4096;

pub struct BigFoot {
    shared: Arc<Shared>,
    /// Per field group (keyed by its representative field) and per static:
    /// FastTrack's cells, whose same-epoch rules a producer may decide inline
    /// ([`Pass::inline_check`]).
    fields: FtCells,
    /// One boxed shadow per array, from a pointer per heap word (`BoxTable`).
    arrays: BoxTable<ArrayShadow>,
    totals: Mutex<Counts>,
}

impl BigFoot {
    pub fn new(shared: &Arc<Shared>) -> Self {
        BigFoot {
            shared: shared.clone(),
            fields: FtCells::default(),
            arrays: BoxTable::default(),
            totals: Mutex::new(Counts::default()),
        }
    }

    fn report(
        &self,
        loc: Loc,
        races: &[Race],
        cur: &Acc,
        extra: impl Fn() -> (String, serde_json::Value),
    ) {
        for r in races {
            let (what, v) = extra();
            let mut w = pair_warning(
                WarningKind::Race,
                "bigfoot",
                loc,
                &r.prev,
                cur,
                format!("{} race on {what}", r.what),
            );
            let key = if v.is_array() { "group" } else { "range" };
            w.extra.insert(key.into(), v);
            self.shared.reporter.report(w);
        }
    }

    /// A field-group or static check: FastTrack's rule on the group's cell, now.
    fn check_fields(&self, t: &ThreadState, l: &mut BfLocal, loc: Loc, mask: u64, cur: Acc) {
        let races = self.rule(t, &mut l.counts, loc, cur);
        if races.is_empty() {
            return;
        }
        let env = &self.shared.env;
        self.report(loc, &races, &cur, || {
            let slots: Vec<u32> = if mask == 0 {
                vec![loc.slot]
            } else {
                (0..64).filter(|s| mask & (1u64 << s) != 0).collect()
            };
            let names: Vec<serde_json::Value> = slots
                .iter()
                .map(|s| {
                    env.loc_name(Loc {
                        obj: loc.obj,
                        slot: *s,
                    })
                    .name
                    .into()
                })
                .collect();
            let shown: Vec<String> = names
                .iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect();
            (
                format!("field group {}", shown.join("/")),
                serde_json::Value::Array(names),
            )
        });
    }

    /// Races found on the array cell holding the elements `lo..hi:step` of `arr`.
    #[allow(clippy::too_many_arguments)]
    fn report_elements(
        &self,
        arr: ObjId,
        lo: u32,
        hi: u32,
        step: u32,
        mode: Mode,
        races: &[Race],
        cur: &Acc,
    ) {
        let loc = Loc { obj: arr, slot: lo };
        self.report(loc, races, cur, || {
            (
                format!("elements {lo}..{hi}:{step} ({} shadow)", mode.name()),
                serde_json::json!({"lo": lo, "hi": hi, "step": step, "mode": mode.name()}),
            )
        });
    }

    /// FastTrack's rule for the check `cur` on the cell of `loc` (a field group, a
    /// static or a fine element), counted as same-epoch or as a shadow check; the
    /// races it found.
    fn rule(&self, t: &ThreadState, counts: &mut Counts, loc: Loc, cur: Acc) -> Vec<Race> {
        let mut races = Vec::new();
        let mut race = |prev, what| races.push(Race { prev, what });
        let rule = match cur.op {
            Op::Read => self.fields.read(t, loc, &cur, &mut race),
            Op::Write => self.fields.write(t, loc, &cur, &mut race),
        };
        if rule.same_epoch() {
            counts.same_epoch += 1;
        } else {
            counts.shadow_checks += 1;
        }
        races
    }

    /// FastTrack's rule on the fine cell of element `e` of `arr` (a check `cur`),
    /// now, counted; races are reported on the element.
    fn check_element(&self, t: &ThreadState, counts: &mut Counts, arr: ObjId, e: u32, cur: Acc) {
        let races = self.rule(t, counts, Loc { obj: arr, slot: e }, cur);
        if !races.is_empty() {
            self.report_elements(arr, e, e + 1, 1, Mode::Fine, &races, &cur);
        }
    }

    /// [`BigFoot::check_element`] of each of the elements `lo..hi:step` of `arr`, in
    /// order, with one walk of the cell table per leaf.
    fn check_elements(
        &self,
        t: &ThreadState,
        counts: &mut Counts,
        arr: ObjId,
        range: (u32, u32, u32),
        cur: Acc,
    ) {
        let mut races: Vec<(u32, Race)> = Vec::new();
        let count = |_, rule: super::fasttrack::Rule| {
            if rule.same_epoch() {
                counts.same_epoch += 1;
            } else {
                counts.shadow_checks += 1;
            }
        };
        let mut race = |e, prev, what| races.push((e, Race { prev, what }));
        self.fields.range(t, arr, range, &cur, count, &mut race);
        let mut races = races.into_iter().peekable();
        while let Some((e, first)) = races.next() {
            let mut found = vec![first];
            while let Some((_, r)) = races.next_if(|(x, _)| *x == e) {
                found.push(r);
            }
            self.report_elements(arr, e, e + 1, 1, Mode::Fine, &found, &cur);
        }
    }

    /// A check of the elements `loc.slot..hi:step` of the array `loc.obj` of `len`
    /// elements: at once on a fine shadow the thread knows, else into the footprint.
    #[allow(clippy::too_many_arguments)]
    fn check_range(
        &self,
        t: &ThreadState,
        l: &mut BfLocal,
        loc: Loc,
        op: Op,
        hi: u32,
        step: u32,
        len: u32,
        cur: Acc,
    ) {
        let hi = hi.min(len);
        if loc.slot >= hi {
            return;
        }
        let site = cur.site.0;
        let checked = (loc.slot, hi, step);
        let step = step.max(1);
        // A one-element range is the element, of step 1 (footprints merge on that).
        // Its `hi` may be the loop's last index plus the step, past the element: a
        // step-1 range up to it would check elements never accessed.
        let (hi, step) = if hi - loc.slot <= step {
            (loc.slot + 1, 1)
        } else {
            (hi, step)
        };
        let r = Range {
            lo: loc.slot,
            hi,
            step,
            write: op == Op::Write,
        };
        if l.fine.contains(loc.obj) {
            // A fine shadow: check the elements at once (the check is legitimate and
            // covering where the compiler placed it), unless they are reads this
            // thread checked already in this epoch.
            // (Not a one-element check: generated code decides those on the cell,
            // and both tiers must count alike.)
            let mut range = (r.lo, r.hi, r.step);
            if !r.write && r.count() > 1 {
                let Some(left) = l.reads.unchecked(loc.obj, range) else {
                    l.counts.memo_reads += u64::from(r.count());
                    return;
                };
                let n = Range {
                    lo: left.0,
                    hi: left.1,
                    step: left.2,
                    write: false,
                };
                l.counts.memo_reads += u64::from(r.count() - n.count());
                range = left;
            }
            self.check_elements(t, &mut l.counts, loc.obj, range, cur);
            if !r.write && r.count() == 1 {
                l.fine.memo_read(loc.obj, r.lo, len);
            }
            return;
        }
        // Inside the latest step-1 range of its kind that this footprint took, or
        // extending it (the test generated code makes): nothing to add.
        if l.fine.cover_check(loc.obj, checked, r.write, site) {
            return;
        }
        // The entry `add_range` may change takes its covered ranges' extensions
        // (the array's own holds those of the kind's too).
        let (own, _) = l.fine.own_of(loc.obj, r.write);
        Self::sync_own(l, own);
        let (p, at) = Self::add_range(l, loc.obj, len, r, cur);
        if p.step == 1 {
            l.fine.cover(p.write, loc.obj, p.lo, p.hi, len);
            l.fine.cover_own(p.write, loc.obj, (p.lo, p.hi, len), at);
        } else {
            // The array's latest entry of the kind is strided: no covered range
            // holds it, and none may stand for an earlier one.
            l.fine.uncover_array(loc.obj, p.write);
        }
        // The site's entry: the merged step-1 range where it holds the check as
        // it will come again, else the check itself (its elements are `r`'s), so
        // that a one-element range `lo..hi:k` and a range clamped to the array
        // (which generated code clamps too) find their entry the next time.
        let again = Range {
            lo: checked.0,
            hi: checked.1,
            step: checked.2.max(1),
            write: r.write,
        };
        let noted = if p.step == 1 && again.hi <= p.hi {
            &p
        } else {
            &again
        };
        l.fine.note_site(site, loc.obj, noted);
        // A footprint that stops merging (irregular indexes in a long
        // synchronization-free region) is committed early: checking earlier in the
        // same region is as legitimate and as covering (no acquire or release since
        // the accesses), and keeps the footprint bounded.
        if l.footprint.len() >= FOOTPRINT_LIMIT {
            self.commit(t, l);
        }
    }

    /// Give the footprint entries the covered ranges' extensions made since the
    /// pass last read them (by [`FineCache::cover_check`], here or in generated
    /// code): before anything reads the footprint.
    /// The covered range of a kind is inside its array's own (it takes its
    /// extensions too), so the arrays' own suffice.
    fn sync_covers(l: &mut BfLocal) {
        for i in 0..l.fine.own.len() {
            Self::sync_own(l, l.fine.own[i]);
        }
    }

    /// [`BigFoot::sync_covers`] for the per-array covered range at word `at`.
    fn sync_own(l: &mut BfLocal, at: usize) {
        if let Some(entry) = l.fine.own_at[FineCache::own_slot(at)].checked_sub(1) {
            let write = at >= crate::pass::bigfoot_array_cover(0, true);
            let span = l.fine.span_at(at);
            Self::widen(&mut l.footprint[entry as usize].range, write, span);
        }
    }

    /// A step-1 footprint range and a covered range that mirrors it: both hold the
    /// entry's range as it was given, and each may have been extended since (by
    /// checks that overlap or abut it), so their union is one range, every element
    /// of which was checked.
    fn widen(r: &mut Range, write: bool, (lo, hi): (u32, u32)) {
        debug_assert!(r.step == 1 && r.write == write && lo <= r.hi && r.lo <= hi);
        (r.lo, r.hi) = (r.lo.min(lo), r.hi.max(hi));
    }

    /// The footprint's latest entry of `arr` and kind `write`: found among the last
    /// [`MERGE_SCAN`] entries, or else in [`BfLocal::latest`], which a footprint
    /// keeps only once it is longer than that (most are shorter, and workqueue commits
    /// 400 k of them: those pay no map).
    fn latest_entry(l: &BfLocal, arr: ObjId, write: bool) -> Option<usize> {
        let n = l.footprint.len();
        let from = n.saturating_sub(MERGE_SCAN);
        let near = l.footprint[from..]
            .iter()
            .rposition(|e| e.arr == arr && e.range.write == write);
        match near {
            Some(k) => Some(from + k),
            None if n > MERGE_SCAN => l.latest.get(&(arr, write)).copied(),
            None => None,
        }
    }

    /// Add `lo..hi:step` of `arr` to the footprint, merged with the latest entry of
    /// the same array and kind when it extends it (a loop's element checks become one
    /// range, also where the loop visits many arrays in turn: a matrix walked across
    /// its rows' arrays); the footprint's range that now covers it, and its entry.
    fn add_range(l: &mut BfLocal, arr: ObjId, len: u32, r: Range, acc: Acc) -> (Range, usize) {
        let n = l.footprint.len();
        if let Some(at) = Self::latest_entry(l, arr, r.write) {
            let p = &mut l.footprint[at].range;
            let single = r.hi - r.lo == 1;
            // Already covered (a repeated element or range).
            if r.lo >= p.lo
                && r.hi <= p.hi
                && (r.lo - p.lo).is_multiple_of(p.step)
                && (single || r.step.is_multiple_of(p.step))
            {
                return (*p, at);
            }
            // Extends the range by its next element or range.
            let last = p.lo + (p.hi - 1 - p.lo) / p.step * p.step;
            if single && r.lo > last {
                let d = r.lo - last;
                if p.hi - p.lo == 1 || d == p.step {
                    p.step = d;
                    p.hi = r.lo + 1;
                    return (*p, at);
                }
            }
            // Extends it downwards by the element before its first (a loop counting
            // down, as insertion sort's inner loop does).
            if single && r.lo < p.lo {
                let d = p.lo - r.lo;
                if p.hi - p.lo == 1 || d == p.step {
                    p.step = d;
                    p.lo = r.lo;
                    return (*p, at);
                }
            }
            // Overlaps or abuts it with the same stride and residue (a loop's range
            // checks in every iteration of an outer loop, counting up or down).
            let r_last = r.lo + (r.hi - 1 - r.lo) / r.step * r.step;
            if !single
                && p.step == r.step
                && r.lo.abs_diff(p.lo).is_multiple_of(p.step)
                && r.lo <= last + p.step
                && p.lo <= r_last + p.step
            {
                p.lo = p.lo.min(r.lo);
                p.hi = last.max(r_last) + 1;
                return (*p, at);
            }
        }
        l.footprint.push(Entry {
            arr,
            len,
            range: r,
            acc,
        });
        if n + 1 > MERGE_SCAN {
            if l.latest.is_empty() {
                for (at, e) in l.footprint.iter().enumerate() {
                    l.latest.insert((e.arr, e.range.write), at);
                }
            } else {
                l.latest.insert((arr, r.write), n);
            }
        }
        (r, n)
    }

    /// Check the footprint's cells (before a synchronization event of `t`).
    fn commit(&self, t: &ThreadState, l: &mut BfLocal) {
        if l.footprint.is_empty() {
            return;
        }
        Self::sync_covers(l);
        l.fine.uncover();
        l.counts.commits += 1;
        let advance = self.shared.clocks.frontier_advances();
        if advance != l.frontier.0 {
            l.frontier = (advance, self.shared.clocks.frontier());
        }
        let mut fp = std::mem::take(&mut l.footprint);
        if !l.latest.is_empty() {
            l.latest.clear();
        }
        fp.sort_by_key(|e| e.arr);
        let mut i = 0;
        while i < fp.len() {
            let arr = fp[i].arr;
            let j = fp[i..]
                .iter()
                .position(|e| e.arr != arr)
                .map_or(fp.len(), |k| i + k);
            let group = &fp[i..j];
            let mut ranges: array::Ranges = group.iter().map(|e| e.range).collect();
            array::normalize(&mut ranges);
            let key = Loc { obj: arr, slot: 0 };
            let len = group[0].len;
            let mut found: Vec<(Touched, Mode, Vec<Race>, Acc)> = Vec::new();
            let mut is_fine = false;
            // Per normalized range, the check that put it into the footprint (one of
            // its kind overlapping it).
            let accs: SmallVec<[Acc; 4]> = ranges
                .iter()
                .map(|r| {
                    group
                        .iter()
                        .find(|e| {
                            e.range.write == r.write && e.range.lo < r.hi && r.lo < e.range.hi
                        })
                        .unwrap_or(&group[0])
                        .acc
                })
                .collect();
            let counts = &mut l.counts;
            let frontier = &l.frontier;
            // A cell going fine: its state, computed once for the elements it held.
            let mut last: Option<(*const Cell, array::CellState)> = None;
            let mut install = |e: u32, cell: &Cell| {
                let p = cell as *const Cell;
                if last.as_ref().is_none_or(|(q, _)| *q != p) {
                    last = Some((p, cell.state()));
                }
                if let Some((_, (w, reads, shared))) = &last {
                    self.fields
                        .install(Loc { obj: arr, slot: e }, *w, reads, *shared);
                }
            };
            self.arrays.with(
                key,
                || ArrayShadow::new(len),
                |a| {
                    a.forget(frontier.0, &frontier.1);
                    is_fine = !a.commit(&ranges, &mut install, |tc, cell| {
                        let cur = Acc {
                            op: if tc.write { Op::Write } else { Op::Read },
                            ..accs[tc.range]
                        };
                        let mut races = Vec::new();
                        if tc.write {
                            cell.write(t, cur, &mut races);
                        } else {
                            cell.read(t, cur, &mut races);
                        }
                        counts.shadow_checks += 1;
                        if !races.is_empty() {
                            found.push((tc, Mode::Coarse, races, cur));
                        }
                    });
                    let mode = a.mode();
                    for f in &mut found {
                        f.1 = mode;
                    }
                },
            );
            for (tc, mode, races, cur) in found {
                self.report_elements(arr, tc.lo, tc.hi, tc.step, mode, &races, &cur);
            }
            if is_fine {
                // The elements' own cells (never changed again: no lock needed).
                l.fine.record(arr);
                for tc in array::fine_touches(&ranges) {
                    let op = if tc.write { Op::Write } else { Op::Read };
                    let cur = Acc {
                        op,
                        ..accs[tc.range]
                    };
                    self.check_element(t, &mut l.counts, arr, tc.lo, cur);
                }
            }
            i = j;
        }
        // Keep the allocation for the next region.
        fp.clear();
        l.footprint = fp;
    }

    /// Arrays by their current representation, and shadow cells in use (statistics).
    fn census(&self) -> serde_json::Value {
        let mut modes: std::collections::BTreeMap<&str, u64> = Default::default();
        let mut cells = 0usize;
        self.arrays.for_each(|a| {
            *modes.entry(a.mode().name()).or_default() += 1;
            cells += a.cells();
        });
        serde_json::json!({ "arrays": modes, "array_cells": cells, "field_cells": self.fields.census().0 })
    }
}

fn local_of(local: &mut Local) -> Option<&mut BfLocal> {
    local.downcast_mut::<BfLocal>()
}

/// Synchronization events: the footprint must be committed before them (a check after
/// an acquire would not cover, one after a release would not be legitimate: §3.2).
fn is_sync(kind: &EventKind<'_>) -> bool {
    matches!(
        kind,
        EventKind::Acquire { .. }
            | EventKind::Release { .. }
            | EventKind::Fork { .. }
            | EventKind::Join { .. }
            | EventKind::VolatileRead { .. }
            | EventKind::VolatileWrite { .. }
            | EventKind::BarrierEnter { .. }
            | EventKind::BarrierExit { .. }
            | EventKind::ThreadEnd
    )
}

impl Pass for BigFoot {
    fn name(&self) -> &'static str {
        "bigfoot"
    }
    fn wants_frames(&self) -> bool {
        false
    }

    fn thread_local(&self) -> Box<Local> {
        Box::new(BfLocal::default())
    }

    fn access(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) -> Flow {
        let EventKind::Check { loc, op, span } = ev.kind else {
            return Flow::Forward;
        };
        let Some(l) = local_of(local) else {
            return Flow::Forward;
        };
        l.counts.checks += 1;
        let cur = Acc::of(t, ev, op);
        match span {
            CheckSpan::One => self.check_fields(t, l, loc, 0, cur),
            CheckSpan::Fields(mask) => self.check_fields(t, l, loc, mask, cur),
            CheckSpan::Element { len } => {
                l.counts.array_checks += 1;
                // The element's own cell decides a same-epoch check at once, as a
                // producer does inline (only a fine shadow's cells have state).
                if self.fields.same_epoch(t, loc, op) {
                    l.counts.same_epoch += 1;
                    return Flow::Forward;
                }
                let hi = loc.slot.saturating_add(1);
                self.check_range(t, l, loc, op, hi, 1, len, cur);
            }
            CheckSpan::Range { hi, step, len } => {
                l.counts.array_checks += 1;
                self.check_range(t, l, loc, op, hi, step, len, cur);
            }
        }
        Flow::Forward
    }

    fn event(&self, t: &ThreadState, local: &mut Local, ev: &Event<'_>) {
        if !is_sync(&ev.kind) {
            return;
        }
        let Some(l) = local_of(local) else {
            return;
        };
        l.reads.clear();
        self.commit(t, l);
        if let EventKind::ThreadEnd = ev.kind {
            self.totals.lock().add(&l.counts);
            l.counts = Counts::default();
        }
    }

    /// The footprint is committed before the thread takes a monitor or arrives at a
    /// barrier, not once it holds the monitor or under the scheduler's lock: the
    /// checks are those the event would make, with the same clock (the event has
    /// not changed it yet), and no other thread waits for that lock while they run
    /// (workqueue's workers commit a task's arrays before they take the queue's
    /// lock for the next). The event then finds the footprint empty.
    fn before_sync(&self, t: &ThreadState, local: &mut Local) {
        if let Some(l) = local_of(local) {
            self.commit(t, l);
        }
    }

    fn wants_before_sync(&self) -> bool {
        true
    }

    /// FastTrack's same-epoch test on the field cells, for a producer to decide
    /// field checks inline ([`InlineCheck::FieldChecks`]).
    /// Plain accesses are not checked: the placed checks are (see [`Pass::access`]).
    fn ignores_accesses(&self) -> bool {
        true
    }

    fn inline_check(&self) -> Option<InlineCheck> {
        Some(InlineCheck::FieldChecks {
            top: self.fields.top_addr(),
        })
    }

    /// Field and element checks decided inline: by the same-epoch rules, by the
    /// exclusive rules (shadow checks, as [`BigFoot::rule`] counts them), or as
    /// element checks the footprint covers (counted as checks only, as
    /// [`BigFoot::add_range`]'s covered case is).
    fn inline_checked(&self, _t: &ThreadState, local: &mut Local, checks: &[InlineChecks]) {
        let Some(l) = local_of(local) else {
            return;
        };
        for c in checks {
            let n = c.reads() + c.writes();
            let excl = c.reads_excl + c.writes_excl;
            let covered = c.reads_covered + c.writes_covered;
            l.counts.checks += n;
            l.counts.same_epoch += n - excl - covered;
            l.counts.shadow_checks += excl;
            if c.elements {
                l.counts.array_checks += n;
            }
        }
    }

    /// The thread's table of fine arrays ([`InlineCheck::FieldChecks`]).
    fn inline_fine_arrays<'a>(&self, local: &'a Local) -> Option<&'a [AtomicU64]> {
        let l = local.downcast_ref::<BfLocal>()?;
        Some(&l.fine.arrays)
    }

    fn stats(&self) -> Option<serde_json::Value> {
        let c = *self.totals.lock();
        let mut v = serde_json::json!({
            "checks": c.checks,
            "array_checks": c.array_checks,
            "shadow_checks": c.shadow_checks,
            "commits": c.commits,
            "same_epoch_checks": c.same_epoch,
            "memo_read_elements": c.memo_reads,
        });
        if let (Some(o), serde_json::Value::Object(m)) = (v.as_object_mut(), self.census()) {
            o.extend(m);
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn single(l: &mut BfLocal, e: u32, write: bool) {
        let acc = default_acc(if write { Op::Write } else { Op::Read });
        let r = Range {
            lo: e,
            hi: e + 1,
            step: 1,
            write,
        };
        BigFoot::add_range(l, ObjId(64), 100, r, acc);
    }

    /// The read memo skips only elements checked before (against a set of the
    /// elements actually checked, over random ranges of a few arrays), and skips
    /// the repeated and overlapping ranges it is there for.
    /// A read memo holds the elements read-checked since the last commit, is zeroed
    /// when taken up again, gives way to another array of its slot, and is not kept
    /// for an array longer than the limit.
    #[test]
    fn read_memos_hold_the_reads_of_one_generation() {
        let mut f = FineCache::default();
        let a = ObjId(0x1_0000);
        f.memo_read(a, 3, 100);
        f.memo_read(a, 99, 100);
        f.memo_read(a, 100, 100);
        assert!(f.memo_holds(a, 3) && f.memo_holds(a, 99));
        assert!(!f.memo_holds(a, 4) && !f.memo_holds(a, 64));
        f.uncover();
        assert!(!f.memo_holds(a, 3), "a commit ends the generation");
        f.memo_read(a, 4, 100);
        assert!(f.memo_holds(a, 4) && !f.memo_holds(a, 3), "taken up zeroed");
        let c = (1..1 << 20)
            .map(|k| ObjId(a.0 + 8 * k))
            .find(|c| crate::pass::bigfoot_memo_slot(c.0) == crate::pass::bigfoot_memo_slot(a.0))
            .expect("an address in the same slot");
        f.memo_read(c, 7, 10);
        assert!(
            f.memo_holds(c, 7) && !f.memo_holds(a, 4),
            "one array per slot"
        );
        let long = ObjId(0x9_0000);
        f.memo_read(long, 1, crate::pass::BIGFOOT_MEMO_MAX_LEN + 1);
        assert!(!f.memo_holds(long, 1));
    }

    #[test]
    fn read_memo_skips_only_checked_elements() {
        let elems = |(lo, hi, step): (u32, u32, u32)| (lo..hi).step_by(step as usize);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u32| (crate::xorshift(&mut seed) % u64::from(n)) as u32;
        let mut skipped = 0usize;
        for _ in 0..200 {
            let mut memo = ReadMemo::default();
            let mut checked: HashSet<(u64, u32)> = HashSet::new();
            for _ in 0..60 {
                let arr = ObjId(64 + 64 * u64::from(next(2)));
                let step = [1, 1, 2, 3][next(4) as usize];
                let lo = next(40);
                let hi = lo + 1 + next(30);
                let step = if hi - lo <= step { 1 } else { step };
                let r = (lo, hi, step);
                let left = memo.unchecked(arr, r);
                if let Some(x) = left {
                    assert!(
                        elems(x).all(|e| elems(r).any(|f| f == e)),
                        "{x:?} outside {r:?}"
                    );
                    checked.extend(elems(x).map(|e| (arr.0, e)));
                }
                for e in elems(r) {
                    assert!(
                        checked.contains(&(arr.0, e)),
                        "{e} of {r:?} skipped unchecked"
                    );
                }
                skipped += elems(r).count() - left.map_or(0, |x| elems(x).count());
                for &(a, l, h, s) in &memo.ranges {
                    assert!(elems((l, h, s)).all(|e| checked.contains(&(a.0, e))));
                }
            }
        }
        assert!(skipped > 0);
        // The cases it is for: a repeated range, and `a[j - 1]`, `a[j + 1]` of a loop
        // with step 2 (the second range extends the first by one element).
        let mut m = ReadMemo::default();
        assert_eq!(m.unchecked(ObjId(64), (5, 900, 1)), Some((5, 900, 1)));
        assert_eq!(m.unchecked(ObjId(64), (5, 900, 1)), None);
        assert_eq!(m.unchecked(ObjId(64), (0, 997, 2)), Some((0, 997, 2)));
        assert_eq!(m.unchecked(ObjId(64), (2, 999, 2)), Some((998, 999, 2)));
        assert_eq!(m.unchecked(ObjId(64), (6, 20, 1)), None);
    }

    #[test]
    fn footprints_merge_elements_counting_up_or_down() {
        let mut l = BfLocal::default();
        // Insertion sort's inner loop: a[j + 1] = a[j] for j = 9, 8, …, 3.
        for j in (3..10).rev() {
            single(&mut l, j, false);
            single(&mut l, j + 1, true);
        }
        let ranges: Vec<(u32, u32, u32, bool)> = l
            .footprint
            .iter()
            .map(|e| (e.range.lo, e.range.hi, e.range.step, e.range.write))
            .collect();
        assert_eq!(ranges, vec![(3, 10, 1, false), (4, 11, 1, true)]);
        // Counting up by 2, then repeating elements: one strided range.
        let mut u = BfLocal::default();
        for e in [20, 22, 24, 26, 22, 24] {
            single(&mut u, e, false);
        }
        assert_eq!(u.footprint.len(), 1);
        let r = u.footprint[0].range;
        assert_eq!((r.lo, r.hi, r.step), (20, 27, 2));
    }

    /// A matrix walked across its rows' arrays (`a[j][i]` with `j` inner, Linpack's
    /// `matgen`): each row's checks extend that row's entry, however many rows come
    /// between, so the footprint holds one range per row and kind.
    #[test]
    fn footprints_merge_elements_across_many_arrays() {
        let (bf, t, mut l) = fresh();
        let rows = 300u64;
        for i in 0..10u32 {
            for j in 0..rows {
                for op in [Op::Write, Op::Read] {
                    let loc = Loc {
                        obj: ObjId((j + 1) << 20),
                        slot: i,
                    };
                    bf.check_range(&t, &mut l, loc, op, i + 1, 1, 10, default_acc(op));
                }
            }
        }
        BigFoot::sync_covers(&mut l);
        assert_eq!(
            l.footprint.len(),
            rows as usize,
            "the reads fall in the writes"
        );
        for e in &l.footprint {
            let r = e.range;
            assert_eq!((r.lo, r.hi, r.step, r.write), (0, 10, 1, true));
        }
    }

    /// The same walk as generated code makes it (the covered-range call first, the
    /// pass only when it says no): after the first column, each array's own
    /// covered range takes its elements with no call into the pass, and the
    /// footprint ends the same.
    #[test]
    fn a_walk_across_many_arrays_extends_their_own_covered_ranges() {
        let (bf, t, mut l) = fresh();
        let rows = 300u64;
        // Rows 8 KiB apart, skipping any that would share a covered range with an
        // earlier one (those take turns, each through the pass).
        let mut slots = std::collections::HashSet::new();
        let arrs: Vec<ObjId> = (1..)
            .map(|k| ObjId(k << 13))
            .filter(|a| slots.insert(crate::pass::bigfoot_array_cover(a.0, true)))
            .take(rows as usize)
            .collect();
        let mut passed = 0;
        for i in 0..10u32 {
            for &arr in &arrs {
                for op in [Op::Write, Op::Read] {
                    if l.fine.cover_check(arr, (i, i + 1, 1), op == Op::Write, 7) {
                        continue;
                    }
                    passed += 1;
                    let loc = Loc { obj: arr, slot: i };
                    bf.check_range(&t, &mut l, loc, op, i + 1, 1, 10, default_acc(op));
                }
            }
        }
        assert_eq!(
            passed, rows,
            "only the first column's writes reach the pass"
        );
        BigFoot::sync_covers(&mut l);
        assert_eq!(l.footprint.len(), rows as usize);
        for e in &l.footprint {
            let r = e.range;
            assert_eq!((r.lo, r.hi, r.step, r.write), (0, 10, 1, true));
        }
    }

    /// The same random checks on six arrays, at addresses that each have a slot of
    /// their own for their covered ranges and at addresses that all share one: the
    /// footprint after every check is the same (both tiers, and two runs of one,
    /// place their arrays at other addresses, and report the same statistics).
    #[test]
    fn what_the_footprint_becomes_does_not_depend_on_array_addresses() {
        let apart = |g: u64, k: usize| ObjId((g * 8 + k as u64 + 1) << 20);
        let sharing = |g: u64, k: usize| {
            let first = ObjId((g + 1) << 24);
            let slot = crate::pass::bigfoot_array_cover(first.0, false);
            let a = (0..)
                .map(|i| ObjId(first.0 + (i << 3)))
                .filter(|a| crate::pass::bigfoot_array_cover(a.0, false) == slot)
                .nth(k);
            a.expect("an address of the slot")
        };
        let run = |addr: &dyn Fn(u64, usize) -> ObjId| {
            let (bf, t, mut l) = fresh();
            let mut next = below(0x2545_f491_4f6c_dd1d);
            let (mut g, len, mut last) = (0, 32u32, 0u32);
            let mut seen = Vec::new();
            for round in 0..6_000 {
                if next(80) == 0 {
                    bf.commit(&t, &mut l);
                    g += 1;
                    continue;
                }
                let k = next(6) as usize;
                let arr = addr(g, k);
                let write = next(3) == 0;
                let lo = match next(3) {
                    0 => last.min(len - 1),
                    _ => next(u64::from(len)) as u32,
                };
                let (hi, step) = match next(4) {
                    0 | 1 => (lo + 1, 1),
                    2 => (lo + 1 + next(5) as u32, 1),
                    _ => (lo + 1 + next(9) as u32, 2),
                };
                let hi = hi.min(len);
                last = hi;
                let site = next(4) as u32;
                if round % 3 == 0 || !l.fine.cover_check(arr, (lo, hi, step), write, site) {
                    let op = if write { Op::Write } else { Op::Read };
                    let loc = Loc { obj: arr, slot: lo };
                    let acc = Acc {
                        site: crate::event::SiteId(site),
                        ..default_acc(op)
                    };
                    bf.check_range(&t, &mut l, loc, op, hi, step, len, acc);
                }
                BigFoot::sync_covers(&mut l);
                let fp = l.footprint.iter().map(|e| {
                    let k = (0..6).position(|k| addr(g, k) == e.arr);
                    (k, e.range)
                });
                seen.push(format!("{round}: {:?}", fp.collect::<Vec<_>>()));
            }
            seen
        };
        let (a, b) = (run(&apart), run(&sharing));
        assert!(a.len() > 1000);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x, y);
        }
    }

    /// The crate's xorshift from `seed` as a generator: `next(n)` is below `n`.
    fn below(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| crate::xorshift(&mut seed) % n
    }

    /// An access `op` of thread 0 at the default site and context.
    fn default_acc(op: Op) -> Acc {
        Acc {
            tid: 0,
            op,
            site: Default::default(),
            ctx: Default::default(),
            index: 0,
        }
    }

    /// A pass without a heap, a thread and its state.
    fn fresh() -> (BigFoot, ThreadState, BfLocal) {
        let shared = Shared::new(
            Arc::new(crate::env::NullEnv),
            crate::shared::ChainOptions::default(),
        );
        let t = ThreadState::new(0, crate::vc::VectorClock::new());
        (BigFoot::new(&shared), t, BfLocal::default())
    }

    /// The covered ranges generated code tests: the latest step-1 range of each
    /// kind, only ever inside the footprint, dropped checks leave the footprint as
    /// it was, and a commit clears them.
    #[test]
    fn covered_ranges_follow_the_footprint_and_clear_at_commit() {
        let (bf, t, mut l) = fresh();
        let arr = ObjId(1 << 20);
        let check = |l: &mut BfLocal, e: u32, op: Op| {
            let loc = Loc { obj: arr, slot: e };
            bf.check_range(&t, l, loc, op, e + 1, 1, 24, default_acc(op));
        };
        // Insertion sort's inner loop, as in the test above.
        for j in (3..10).rev() {
            check(&mut l, j, Op::Read);
            check(&mut l, j + 1, Op::Write);
        }
        assert!(l.fine.covers(arr, (3, 10, 1), u32::MAX, false));
        assert!(l.fine.covers(arr, (4, 11, 1), u32::MAX, true));
        assert!(!l.fine.covers(arr, (10, 11, 1), u32::MAX, false));
        assert!(!l.fine.covers(arr, (3, 4, 1), u32::MAX, true));
        assert!(!l.fine.covers(ObjId(2 << 20), (5, 6, 1), u32::MAX, false));
        // Checks inside change nothing; the footprint is the test above's.
        let before: Vec<Range> = l.footprint.iter().map(|e| e.range).collect();
        for e in [9, 3, 5] {
            check(&mut l, e, Op::Read);
        }
        check(&mut l, 10, Op::Write);
        let after: Vec<Range> = l.footprint.iter().map(|e| e.range).collect();
        assert_eq!(format!("{before:?}"), format!("{after:?}"));
        assert_eq!(l.footprint.len(), 2);
        // An element the range does not extend starts an entry, which takes over;
        // extended by a stride it is the array's latest entry of reads, and of
        // step 2: no covered range of reads names the array any more.
        check(&mut l, 12, Op::Read);
        assert!(l.fine.covers(arr, (12, 13, 1), u32::MAX, false));
        assert!(!l.fine.covers(arr, (3, 10, 1), u32::MAX, false));
        check(&mut l, 14, Op::Read);
        assert_eq!(l.footprint.len(), 3);
        assert!(!l.fine.covers(arr, (12, 13, 1), u32::MAX, false));
        assert!(!l.fine.covers(arr, (14, 15, 1), u32::MAX, false));
        assert!(
            l.fine.covers(arr, (4, 11, 1), u32::MAX, true),
            "the writes' stays"
        );
        bf.commit(&t, &mut l);
        assert!(l.footprint.is_empty());
        assert!(!l.fine.covers(arr, (3, 4, 1), u32::MAX, false));
        assert!(!l.fine.covers(arr, (5, 6, 1), u32::MAX, true));
    }

    /// A site's own range: a strided range check repeated in an outer loop, or an
    /// element checked again, is inside the range the site put into the footprint
    /// (same array, generation, and for a stride the same step and start); a commit
    /// starts a new generation.
    #[test]
    fn a_sites_own_range_covers_its_repeated_checks_until_the_commit() {
        let (bf, t, mut l) = fresh();
        let (arr, other) = (ObjId(1 << 20), ObjId(2 << 20));
        let check = |l: &mut BfLocal, site: u32, arr: ObjId, (lo, hi, step)| {
            let acc = Acc {
                tid: 0,
                op: Op::Read,
                site: crate::event::SiteId(site),
                ctx: Default::default(),
                index: 0,
            };
            let loc = Loc { obj: arr, slot: lo };
            bf.check_range(&t, l, loc, Op::Read, hi, step, 52, acc);
        };
        // Six strided ranges, one per offset (crypt's key schedule), twice.
        for _ in 0..2 {
            for c in 0..6 {
                check(&mut l, 10 + c, arr, (c, 48 + c, 6));
            }
        }
        assert_eq!(l.footprint.len(), 6, "the repeated ranges added nothing");
        assert!(l.fine.covers(arr, (0, 48, 6), 10, false));
        assert!(l.fine.covers(arr, (0, 30, 6), 10, false), "a prefix");
        assert!(!l.fine.covers(arr, (6, 48, 6), 10, false), "another start");
        assert!(!l.fine.covers(arr, (0, 48, 3), 10, false), "another step");
        assert!(
            !l.fine.covers(arr, (0, 48, 6), 11, false),
            "another site's range"
        );
        assert!(!l.fine.covers(arr, (0, 48, 6), 10, true), "a write");
        assert!(
            !l.fine.covers(other, (0, 48, 6), 10, false),
            "another array"
        );
        assert!(!l.fine.covers(arr, (0, 0, 6), 10, false), "empty");
        // An element, checked again at its site.
        check(&mut l, 20, arr, (50, 51, 1));
        assert!(l.fine.covers(arr, (50, 51, 1), 20, false));
        assert!(!l.fine.covers(arr, (51, 52, 1), 20, false));
        let n = l.footprint.len();
        check(&mut l, 20, arr, (50, 51, 1));
        assert_eq!(l.footprint.len(), n);
        bf.commit(&t, &mut l);
        assert!(!l.fine.covers(arr, (0, 48, 6), 10, false));
        assert!(!l.fine.covers(arr, (50, 51, 1), 20, false));
    }
    /// Extending a covered range (generated code's test, and the pass's own) leaves
    /// the footprint covering exactly the elements checked since the last commit, of
    /// each array and kind: none missing (the checks still cover their accesses; a
    /// read may be covered by a write of its element) and none added (every
    /// element's check stays legitimate). Random element, step-1
    /// and strided range checks of two arrays, some made as generated code makes
    /// them (the cover test first, the pass only on a miss), with commits between.
    #[test]
    fn extended_covered_ranges_keep_the_footprint_exact() {
        use std::collections::BTreeSet;
        let (bf, t, mut l) = fresh();
        // Fresh arrays after each commit: a commit may make an array fine, whose
        // checks are then made at once (covered ranges never name one). Four, and
        // two more that share the per-array covered ranges of the first two.
        let arrays = |base: u64| {
            let a: Vec<ObjId> = (0..4).map(|k| ObjId(base + (k << 20))).collect();
            let mate = |x: ObjId| {
                let slot = crate::pass::bigfoot_array_cover(x.0, false);
                (1..)
                    .map(|k| ObjId(x.0 + (k << 3)))
                    .find(|y| crate::pass::bigfoot_array_cover(y.0, false) == slot)
                    .expect("a colliding address")
            };
            [a[0], a[1], a[2], a[3], mate(a[0]), mate(a[1])]
        };
        let mut base = 1 << 20;
        let mut arrs = arrays(base);
        let len = 40u32;
        let mut next = below(0x9e37_79b9_7f4a_7c15);
        let mut want: BTreeSet<(u64, bool, u32)> = BTreeSet::new();
        let (mut extended, mut last) = (0, 0);
        for round in 0..20_000 {
            if next(60) == 0 {
                bf.commit(&t, &mut l);
                want.clear();
                assert!(l.footprint.is_empty());
                base += 8 << 20;
                arrs = arrays(base);
                continue;
            }
            let arr = arrs[next(arrs.len() as u64) as usize];
            let write = next(2) == 0;
            // Half the checks go on from the last one (a loop), the rest anywhere.
            let lo = match next(4) {
                0 => last.min(len - 1),
                1 => last.saturating_sub(2),
                _ => next(u64::from(len)) as u32,
            };
            let (hi, step) = match next(4) {
                0 | 1 => (lo + 1, 1),
                2 => (lo + 1 + next(6) as u32, 1),
                _ => (lo + 1 + next(12) as u32, 2 + next(2) as u32),
            };
            let hi = hi.min(len);
            last = hi;
            let site = next(5) as u32;
            let op = if write { Op::Write } else { Op::Read };
            for e in (lo..hi).step_by(step as usize) {
                want.insert((arr.0, write, e));
            }
            let generated = round % 3 != 0;
            let before = l.fine.covers(arr, (lo, hi, step), site, write);
            if generated && l.fine.cover_check(arr, (lo, hi, step), write, site) {
                extended += u32::from(!before);
                continue;
            }
            let acc = Acc {
                tid: 0,
                op,
                site: crate::event::SiteId(site),
                ctx: Default::default(),
                index: 0,
            };
            bf.check_range(
                &t,
                &mut l,
                Loc { obj: arr, slot: lo },
                op,
                hi,
                step,
                len,
                acc,
            );
            if l.fine.contains(arr) {
                // A fine shadow (since a commit): its checks are made at once.
                want.retain(|w| w.0 != arr.0);
            }
            BigFoot::sync_covers(&mut l);
            let mut have: BTreeSet<(u64, bool, u32)> = BTreeSet::new();
            for e in &l.footprint {
                let r = e.range;
                for x in (r.lo..r.hi).step_by(r.step as usize) {
                    have.insert((e.arr.0, r.write, x));
                }
            }
            // Every element checked is in the footprint with its kind, or as a
            // write for a read (a write range covers the reads inside it), and the
            // footprint holds nothing else.
            let missing: Vec<_> = want
                .iter()
                .filter(|&&(a, w, x)| {
                    !have.contains(&(a, w, x)) && (w || !have.contains(&(a, true, x)))
                })
                .collect();
            assert!(missing.is_empty(), "round {round}: missing {missing:?}");
            assert!(
                have.is_subset(&want),
                "round {round}: added {:?}",
                have.difference(&want).collect::<Vec<_>>()
            );
        }
        assert!(extended > 500, "the test extends ranges ({extended} times)");
    }
}
