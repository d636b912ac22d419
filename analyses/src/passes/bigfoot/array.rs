//! Adaptive array shadows (DYNAMICBF, Rhodes §3.4 and §3.5.2, after SlimState): an
//! array starts with one shadow cell for all its elements and is refined when a
//! committed footprint does not fit its cells.
//!
//! Representations:
//! - *Classes(k)*: the elements are split into the `k` residue classes modulo `k`
//!   (`k = 1`: one class), and each class into intervals between sorted breakpoints
//!   (one cell at first: "coarse"; `k = 1` with more: "intervals"; `k > 1`:
//!   "stride"). A footprint range splits the cells of the classes it touches at its
//!   bounds, so every cell it touches lies inside it: blocks and the triangular
//!   patterns of LU factorization (the `lufact` pathology of Rhodes, §3.6) cost one cell
//!   per distinct bound, not one per element; a range of stride `s` is contiguous in
//!   each class when `s` divides `k`, and in one class when `k` divides `s` (SOR's
//!   red-black rows: `k = 2`, a few cells per row). A range that fits neither makes
//!   the classes finer (`k` becomes the least common multiple, every cell split into
//!   copies per new class); a stride that is a multiple of `k` but not `k` itself
//!   splits its elements into one-element cells, as long as the cells stay few.
//! - *Fine*: one cell per element, FastTrack's own cell of the element's location
//!   (`super::super::fasttrack::FtCells`, the pass's table for field groups too), so
//!   the fallback costs what FastTrack costs and its same-epoch checks can be decided
//!   inline. Entered when no number of classes up to 64 fits a footprint, or when the
//!   cells would become too many to be cheaper than one cell per element
//!   ([`dense_limit`]): every element's cell is then installed as a copy of the cell
//!   that held it. Terminal: a fine shadow is never refined again, so a thread that
//!   saw it fine ([`ArrayShadow::is_fine`]) checks elements at once, without the
//!   array's lock and without a footprint.
//!
//! Cells also merge: after a commit's checks, neighbours of one class that hold the
//! same state; and once per advance of the frontier (`crate::clocks`), cells whose
//! every epoch is below it become empty ([`ArrayShadow::forget`]), and empty
//! neighbours merge. Both are lossless for every later verdict.
//!
//! Refinement is lossless: a new cell starts as a copy of the cell that held its
//! elements. A cell is only checked when the footprint covers all of it, and covers it
//! uniformly (all written, or all accessed and none written): a check of a partly
//! covered cell would be illegitimate (false alarms), one of a partly written cell would
//! not cover the writes (missed races). A fine cell is checked once per range that
//! touches it, writes first (a read check of an element this thread write-checked in
//! the same epoch returns at once, [`Cell::read`]).

use std::collections::BTreeMap;

use smallvec::SmallVec;

use super::cell::Cell;

/// One footprint range of a thread on one array: `lo..hi:step`, read or write.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Range {
    pub lo: u32,
    pub hi: u32,
    pub step: u32,
    pub write: bool,
}

impl Range {
    /// Number of elements.
    pub fn count(&self) -> u32 {
        (self.hi - self.lo).div_ceil(self.step)
    }
}

/// An array's footprint ranges in one commit: a few, on the stack (a commit per
/// synchronization event, such as a work queue's, allocates nothing for them).
pub type Ranges = SmallVec<[Range; 4]>;

/// The representation in force (for statistics and reports).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One cell for the whole array.
    Coarse,
    /// Intervals between breakpoints.
    Intervals,
    Stride(u32),
    /// One cell per element.
    Fine,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Coarse => "coarse",
            Mode::Intervals => "intervals",
            Mode::Stride(_) => "stride",
            Mode::Fine => "fine",
        }
    }
}

enum Rep {
    /// One cell for every element, kept in the shadow itself: the representation
    /// every array starts in, so that the many small arrays a program allocates and
    /// only ever checks whole (a task's data, a vector) cost no allocation beyond the
    /// shadow's box. The same cell as `Classes(1, [{0: cell}])`, which it becomes at
    /// the first footprint that does not cover the array whole; a shadow whose cells
    /// merge into one again keeps that form (returning would allocate the map again at
    /// every commit of an array whose footprints alternate, such as LU's columns).
    Coarse(Cell),
    /// Per residue class `c` modulo `k` (`k = 1`: one class, plain intervals), the
    /// cells of the class's elements `c + q·k`, keyed by the first `q` each holds: a
    /// cell ends where the next of its class starts (or at the class's end).
    Classes(u32, Vec<BTreeMap<u32, Cell>>),
    /// One cell per element, outside the shadow (terminal).
    Fine,
}

/// Strides past which an array goes fine rather than to more residue classes.
const MAX_CLASSES: u32 = 64;

/// Single elements in one commit past which an array goes fine.
const SCATTERED: usize = 64;

/// Cells past which intervals are converted to one cell per element: when the
/// average interval would hold fewer than 32 elements (a commit then costs about as
/// much per element as with fine cells, plus the ordered map's overhead).
pub fn dense_limit(len: u32) -> usize {
    (len as usize / 32).max(32)
}

/// A cell's state as [`Cell::state`] gives it.
pub type CellState = (
    Option<(crate::vc::Epoch, crate::passes::shadow::Acc)>,
    Vec<(crate::vc::Epoch, crate::passes::shadow::Acc)>,
    bool,
);

/// Where a shadow going fine puts each element's cell: `install(e, cell)` gives
/// element `e` a copy of `cell` (called only for cells with state).
pub type Install<'a> = &'a mut dyn FnMut(u32, &Cell);

/// The element checks of fine cells for the footprint `ranges`: once per range that
/// touches an element, the write ranges first (so a read check of an element this
/// thread write-checked in the same epoch finds it write-checked).
pub fn fine_touches(ranges: &[Range]) -> impl Iterator<Item = Touched> + '_ {
    [true, false].into_iter().flat_map(move |write| {
        ranges
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.write == write)
            .flat_map(move |(i, r)| {
                (r.lo..r.hi).step_by(r.step as usize).map(move |e| Touched {
                    lo: e,
                    hi: e + 1,
                    step: 1,
                    write,
                    range: i,
                })
            })
    })
}

pub struct ArrayShadow {
    len: u32,
    rep: Rep,
    /// The frontier advance the cells were last compacted at ([`ArrayShadow::forget`]).
    compacted: u64,
}

/// A touched cell: its elements `lo..hi:step`, whether it is written, and the index of
/// a footprint range deciding that.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Touched {
    pub lo: u32,
    pub hi: u32,
    pub step: u32,
    pub write: bool,
    pub range: usize,
}

impl ArrayShadow {
    pub fn new(len: u32) -> Self {
        ArrayShadow {
            len,
            rep: Rep::Coarse(Cell::default()),
            compacted: 0,
        }
    }

    /// Forget the state below the frontier `f` (advance number `advance`, see
    /// `crate::clocks`): dead cells ([`Cell::is_dead`]) become empty, and neighbours
    /// of one class that are both empty become one cell. Lossless for every later
    /// verdict: a dead cell decides every later check as an empty one does. Keeps a
    /// shadow whose old bounds no longer matter coarse (LU factorization's columns:
    /// the rows above the pivot, each last written in its own earlier phase).
    /// Once per frontier advance.
    pub fn forget(&mut self, advance: u64, f: &crate::vc::VectorClock) {
        if advance <= self.compacted {
            return;
        }
        self.compacted = advance;
        let maps = match &mut self.rep {
            Rep::Coarse(c) => {
                if !c.is_empty() && c.is_dead(f) {
                    *c = Cell::default();
                }
                return;
            }
            Rep::Classes(_, maps) => maps,
            Rep::Fine => return,
        };
        for m in maps.iter_mut() {
            if m.len() == 1 && m.values().all(Cell::is_empty) {
                continue;
            }
            let mut prev_empty = false;
            m.retain(|_, c| {
                if !c.is_empty() && c.is_dead(f) {
                    *c = Cell::default();
                }
                let keep = !(prev_empty && c.is_empty());
                prev_empty = c.is_empty();
                keep
            });
        }
    }

    pub fn mode(&self) -> Mode {
        match &self.rep {
            Rep::Coarse(_) => Mode::Coarse,
            Rep::Classes(1, m) if m[0].len() == 1 => Mode::Coarse,
            Rep::Classes(1, _) => Mode::Intervals,
            Rep::Classes(k, _) => Mode::Stride(*k),
            Rep::Fine => Mode::Fine,
        }
    }

    /// Number of cells (for a fine shadow, one per element, kept outside).
    pub fn cells(&self) -> usize {
        match &self.rep {
            Rep::Coarse(_) => 1,
            Rep::Classes(_, maps) => maps.iter().map(BTreeMap::len).sum(),
            Rep::Fine => self.len as usize,
        }
    }

    /// Whether the shadow is fine: its cells are the elements' own, outside, and it
    /// never changes again.
    pub fn is_fine(&self) -> bool {
        matches!(self.rep, Rep::Fine)
    }

    /// Convert to fine cells (each element's a copy of the cell that held it).
    fn go_fine(&mut self, install: Install<'_>) {
        if let Rep::Coarse(cell) = &self.rep {
            if !cell.is_empty() {
                (0..self.len).for_each(|e| install(e, cell));
            }
            self.rep = Rep::Fine;
        }
        if let Rep::Classes(k, maps) = &self.rep {
            let k = *k;
            for (c, m) in maps.iter().enumerate() {
                let c = c as u32;
                let n = class_len(c, k, self.len);
                let starts: Vec<(u32, &Cell)> = m.iter().map(|(s, cell)| (*s, cell)).collect();
                for (i, (s, cell)) in starts.iter().enumerate() {
                    let end = starts.get(i + 1).map_or(n, |x| x.0);
                    if !cell.is_empty() {
                        (*s..end).for_each(|q| install(c + q * k, cell));
                    }
                }
            }
            self.rep = Rep::Fine;
        }
    }

    /// Refine for the footprint `ranges` (non-empty, normalized, inside the array) and
    /// apply `check` to every cell it touches, once, in class and index order. Returns
    /// false when the shadow is (now) fine instead: its cells were handed to
    /// `install`, and the caller checks the elements ([`fine_touches`]).
    pub fn commit(
        &mut self,
        ranges: &[Range],
        install: Install<'_>,
        mut check: impl FnMut(Touched, &mut Cell),
    ) -> bool {
        let len = self.len;
        if let Rep::Coarse(cell) = &mut self.rep {
            // Ranges that each cover the whole array keep its one cell, which they
            // cover uniformly; any other footprint works on the general form.
            if !ranges.is_empty()
                && ranges
                    .iter()
                    .all(|r| r.lo == 0 && r.hi == len && r.step == 1)
            {
                let write = ranges.iter().position(|r| r.write);
                let t = Touched {
                    lo: 0,
                    hi: len,
                    step: 1,
                    write: write.is_some(),
                    range: write.unwrap_or(0),
                };
                check(t, cell);
                return true;
            }
            let cell = std::mem::take(cell);
            self.rep = Rep::Classes(1, vec![std::iter::once((0, cell)).collect()]);
        }
        // A few elements far apart (a footprint merges two single elements into a
        // range of their distance: LU's row swaps) are single elements here, which fit
        // any classes; each keeps the index of its range.
        let k0 = match &self.rep {
            Rep::Classes(k, _) => *k,
            Rep::Coarse(_) | Rep::Fine => 1,
        };
        let tiny = |r: &Range| r.count() > 1 && r.count() <= 4 && !k0.is_multiple_of(r.step);
        // (The expanded ranges, and the index of the footprint range of each.)
        let (ranges, origin): (std::borrow::Cow<'_, [Range]>, Option<Vec<usize>>) =
            if ranges.iter().any(tiny) {
                let expanded: Vec<(Range, usize)> = ranges
                    .iter()
                    .enumerate()
                    .flat_map(|(i, r)| {
                        let n = if tiny(r) { r.count() } else { 1 };
                        (0..n).map(move |j| {
                            let x = if n > 1 {
                                let e = r.lo + j * r.step;
                                Range {
                                    lo: e,
                                    hi: e + 1,
                                    step: 1,
                                    write: r.write,
                                }
                            } else {
                                *r
                            };
                            (x, i)
                        })
                    })
                    .collect();
                (
                    expanded.iter().map(|p| p.0).collect(),
                    Some(expanded.iter().map(|p| p.1).collect()),
                )
            } else {
                (ranges.into(), None)
            };
        let ranges = &ranges[..];
        if let Rep::Classes(k, maps) = &mut self.rep {
            // More residue classes when a strided range does not fit the current ones
            // (every element keeps its cell's state: lossless).
            match classes_for(*k, ranges, len) {
                Some(k2) if k2 != *k => {
                    *maps = reclass(maps, *k, k2, len);
                    *k = k2;
                }
                Some(_) => {}
                None => self.go_fine(install),
            }
        }
        // Cells that would split too finely, or a footprint of many scattered
        // elements (element checks, which generated code decides on fine cells
        // inline, and which the shadow would split and merge again at every commit):
        // fine cells instead.
        let scattered = ranges.iter().filter(|r| r.count() == 1).count() > SCATTERED;
        if let Rep::Classes(k, maps) = &self.rep
            && (scattered || too_fine(maps, *k, ranges, len))
        {
            self.go_fine(install);
        }
        let Rep::Classes(k, maps) = &mut self.rep else {
            return false;
        };
        let k = *k;
        for r in ranges {
            for sp in spans(r, k) {
                let n = class_len(sp.class, k, len);
                bounds(&sp, |p| {
                    split(&mut maps[sp.class as usize], p, n);
                    true
                });
            }
        }
        // One range of step 1 over intervals (LU's columns, `[k + 1, n)` at each
        // step; most footprints of one array): its cells in order, as below without
        // the map of kinds.
        if let ([r], 1, None) = (ranges, k, &origin)
            && r.step == 1
        {
            let m = &mut maps[0];
            let (mut first, mut last) = (None, 0);
            let mut at = m.range_mut(r.lo..r.hi).peekable();
            while let Some((&s, cell)) = at.next() {
                let end = match at.peek() {
                    Some((n, _)) => **n,
                    None => r.hi,
                };
                first.get_or_insert(s);
                last = s;
                let t = Touched {
                    lo: s,
                    hi: end,
                    step: 1,
                    write: r.write,
                    range: 0,
                };
                check(t, cell);
            }
            if let Some(first) = first {
                merge_equal(m, first, last);
            }
            return true;
        }
        // Touched cells, by (class, first q): written if any range touching it writes.
        let mut kinds: BTreeMap<(u32, u32), (bool, usize)> = BTreeMap::new();
        for (j, r) in ranges.iter().enumerate() {
            let i = origin.as_ref().map_or(j, |o| o[j]);
            for sp in spans(r, k) {
                let m = &maps[sp.class as usize];
                if sp.step == 1 {
                    for (s, _) in m.range(sp.lo..sp.hi) {
                        mark(&mut kinds, (sp.class, *s), r.write, i);
                    }
                } else {
                    let mut q = sp.lo;
                    while q < sp.hi {
                        mark(&mut kinds, (sp.class, q), r.write, i);
                        q = q.saturating_add(sp.step);
                    }
                }
            }
        }
        // The span of touched cells per class, to merge equal neighbours in after.
        let mut spans_touched: SmallVec<[(u32, (u32, u32)); 2]> = SmallVec::new();
        for &(c, s) in kinds.keys() {
            match spans_touched.last_mut() {
                Some((lc, e)) if *lc == c => e.1 = s,
                _ => spans_touched.push((c, (s, s))),
            }
        }
        for ((c, s), (write, i)) in kinds {
            let m = &mut maps[c as usize];
            let end = m
                .range(s + 1..)
                .next()
                .map_or(class_len(c, k, len), |(n, _)| *n);
            let t = Touched {
                lo: c + s * k,
                hi: c + (end - 1) * k + 1,
                step: k,
                write,
                range: i,
            };
            if let Some(cell) = m.get_mut(&s) {
                check(t, cell);
            }
        }
        // Neighbours that hold the same state are one cell (a row-major loop over a
        // matrix's columns commits a few elements of each at a time, all written at
        // one epoch by one site).
        for (c, (lo, hi)) in spans_touched {
            merge_equal(&mut maps[c as usize], lo, hi);
        }
        true
    }
}

#[cfg(test)]
impl ArrayShadow {
    /// The cell holding element `e` (none once fine).
    fn cell_of(&self, e: u32) -> Option<&Cell> {
        let (k, maps) = match &self.rep {
            Rep::Coarse(c) => return Some(c),
            Rep::Classes(k, maps) => (k, maps),
            Rep::Fine => return None,
        };
        maps[(e % k) as usize]
            .range(..=e / k)
            .next_back()
            .map(|(_, c)| c)
    }
}

/// The elements of residue class `c` modulo `k` below `len`.
fn class_len(c: u32, k: u32, len: u32) -> u32 {
    if c >= len { 0 } else { (len - c).div_ceil(k) }
}

/// A range's elements in one residue class: `q` in `lo..hi:step` (element `c + q·k`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Span {
    class: u32,
    lo: u32,
    hi: u32,
    step: u32,
}

/// The elements of `[a, b)` in class `c` modulo `k`, as a `q` interval.
fn class_interval(a: u32, b: u32, c: u32, k: u32) -> (u32, u32) {
    let q = |e: u32| e.max(c).saturating_sub(c).div_ceil(k);
    (q(a), q(b))
}

/// Whether the range fits `k` residue classes: one element, a stride that is a
/// multiple of `k` (one class; strided in it unless it is `k`), or one that divides
/// it (contiguous in each class).
fn fits(r: &Range, k: u32) -> bool {
    r.count() == 1 || r.step.is_multiple_of(k) || k.is_multiple_of(r.step)
}

/// Whether the range is contiguous in each residue class modulo `k` it touches.
fn fits_contiguously(r: &Range, k: u32) -> bool {
    r.count() == 1 || k.is_multiple_of(r.step)
}

/// The range's elements per residue class modulo `k` (it [`fits`]).
fn spans(r: &Range, k: u32) -> SmallVec<[Span; 2]> {
    if r.count() == 1 || r.step.is_multiple_of(k) {
        let last = r.lo + (r.count() - 1) * r.step;
        return smallvec::smallvec![Span {
            class: r.lo % k,
            lo: r.lo / k,
            hi: last / k + 1,
            step: (r.step / k).max(1),
        }];
    }
    (0..k)
        .filter(|c| c % r.step == r.lo % r.step)
        .filter_map(|c| {
            let (lo, hi) = class_interval(r.lo, r.hi, c, k);
            (lo < hi).then_some(Span {
                class: c,
                lo,
                hi,
                step: 1,
            })
        })
        .collect()
}

/// The residue classes a footprint needs: the least multiple of the current `k`
/// in which every range is contiguous in each class (at most [`MAX_CLASSES`]), else
/// `k` if every range fits it (a stride that is a multiple of `k`: one-element cells,
/// as long as they stay few), else `None`.
fn classes_for(k: u32, ranges: &[Range], len: u32) -> Option<u32> {
    let mut k2 = k;
    for r in ranges {
        if !fits_contiguously(r, k2) {
            k2 = lcm(k2, r.step);
            if k2 > MAX_CLASSES || k2 > len {
                break;
            }
        }
    }
    if k2 <= MAX_CLASSES && k2 <= len && ranges.iter().all(|r| fits_contiguously(r, k2)) {
        return Some(k2);
    }
    ranges.iter().all(|r| fits(r, k)).then_some(k)
}

fn lcm(a: u32, b: u32) -> u32 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a / x * b
}

/// The cells of `k` classes as cells of `k2` classes (`k` divides `k2`): class `c2`
/// takes its elements' part of each cell of class `c2 mod k`, a copy of it.
fn reclass(maps: &[BTreeMap<u32, Cell>], k: u32, k2: u32, len: u32) -> Vec<BTreeMap<u32, Cell>> {
    (0..k2.min(len))
        .map(|c2| {
            let c = c2 % k;
            let parent = &maps[c as usize];
            let n = class_len(c, k, len);
            let starts: Vec<(u32, &Cell)> = parent.iter().map(|(s, cell)| (*s, cell)).collect();
            let mut m = BTreeMap::new();
            for (i, (s, cell)) in starts.iter().enumerate() {
                let end = starts.get(i + 1).map_or(n, |x| x.0);
                let (lo, hi) = class_interval(c + s * k, c + end * k, c2, k2);
                if lo < hi {
                    m.insert(lo, (*cell).clone());
                }
            }
            m
        })
        .collect()
}

/// The cell boundaries a span needs (in its class): its bounds, or those of each of
/// its elements when it is strided within the class.
fn bounds(sp: &Span, mut f: impl FnMut(u32) -> bool) -> bool {
    if sp.step == 1 {
        return f(sp.lo) && f(sp.hi);
    }
    let mut q = sp.lo;
    while q < sp.hi {
        if !(f(q) && f(q + 1)) {
            return false;
        }
        q = q.saturating_add(sp.step);
    }
    true
}

/// Whether committing `ranges` onto the `k` classes `maps` would make more cells than
/// [`dense_limit`] (then fine cells are cheaper).
fn too_fine(maps: &[BTreeMap<u32, Cell>], k: u32, ranges: &[Range], len: u32) -> bool {
    let limit = dense_limit(len);
    let mut cells: usize = maps.iter().map(BTreeMap::len).sum();
    if cells > limit {
        return true;
    }
    // At most two new bounds per class a contiguous range touches.
    let most: usize = ranges
        .iter()
        .map(|r| {
            if fits_contiguously(r, k) {
                2 * k.min(r.count()) as usize
            } else {
                usize::MAX / 2 / ranges.len().max(1)
            }
        })
        .sum();
    if cells + most <= limit {
        return false;
    }
    let mut new: std::collections::BTreeSet<(u32, u32)> = Default::default();
    for r in ranges {
        for sp in spans(r, k) {
            let m = &maps[sp.class as usize];
            let n = class_len(sp.class, k, len);
            let fits = bounds(&sp, |p| {
                if p < n && !m.contains_key(&p) && new.insert((sp.class, p)) {
                    cells += 1;
                }
                cells <= limit
            });
            if !fits {
                return true;
            }
        }
    }
    false
}

/// A cell touched by range `i`: written if any range touching it writes.
fn mark(kinds: &mut BTreeMap<(u32, u32), (bool, usize)>, c: (u32, u32), write: bool, i: usize) {
    let e = kinds.entry(c).or_insert((write, i));
    if write && !e.0 {
        *e = (true, i);
    }
}

/// Merge the cells from the one before `lo` to the one after `hi` into their
/// predecessors where they hold the same state (the same epochs and the same
/// accesses: lossless, reports included).
fn merge_equal(m: &mut BTreeMap<u32, Cell>, lo: u32, hi: u32) {
    let from = m.range(..lo).next_back().map_or(lo, |(s, _)| *s);
    let to = m.range(hi + 1..).next().map_or(hi, |(s, _)| *s);
    let mut equal: SmallVec<[u32; 8]> = SmallVec::new();
    let mut prev: Option<&Cell> = None;
    for (s, c) in m.range(from..=to) {
        if prev == Some(c) {
            equal.push(*s);
        }
        prev = Some(c);
    }
    for s in equal {
        m.remove(&s);
    }
}

/// Make `p` a cell boundary of a class of `n` elements (a new cell starts as a copy
/// of the one it splits).
fn split(m: &mut BTreeMap<u32, Cell>, p: u32, n: u32) {
    if p >= n || m.contains_key(&p) {
        return;
    }
    let Some((_, c)) = m.range(..p).next_back() else {
        return;
    };
    let c = c.clone();
    m.insert(p, c);
}

/// Merge a footprint's ranges where that keeps the same index set and kinds: `k`
/// ranges of stride `k` over consecutive residues with the same element count are
/// one contiguous range (a loop reading `a[i]`, …, `a[i + k - 1]` with `i += k`), and
/// contiguous or overlapping ranges of stride 1 and one kind are one range.
pub fn normalize(ranges: &mut Ranges) {
    ranges.sort_by_key(|r| (r.write, r.step, r.lo, r.hi));
    ranges.dedup();
    let mut out = Ranges::new();
    let mut i = 0;
    while i < ranges.len() {
        let r = ranges[i];
        let k = r.step as usize;
        if k > 1 && i + k <= ranges.len() {
            let run = &ranges[i..i + k];
            let n = r.count();
            if run.iter().enumerate().all(|(j, x)| {
                x.write == r.write && x.step == r.step && x.lo == r.lo + j as u32 && x.count() == n
            }) {
                out.push(Range {
                    lo: r.lo,
                    hi: r.lo + n * r.step,
                    step: 1,
                    write: r.write,
                });
                i += k;
                continue;
            }
        }
        out.push(r);
        i += 1;
    }
    out.sort_by_key(|r| (r.write, r.step, r.lo));
    let mut merged = Ranges::new();
    for r in out {
        if let Some(p) = merged.last_mut()
            && p.step == 1
            && r.step == 1
            && p.write == r.write
            && r.lo <= p.hi
        {
            p.hi = p.hi.max(r.hi);
            continue;
        }
        merged.push(r);
    }
    *ranges = merged;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(lo: u32, hi: u32, step: u32, write: bool) -> Range {
        Range {
            lo,
            hi,
            step,
            write,
        }
    }

    /// A check by thread 0 at the default site.
    fn acc(op: crate::event::Op) -> crate::passes::shadow::Acc {
        crate::passes::shadow::Acc {
            tid: 0,
            op,
            site: Default::default(),
            ctx: Default::default(),
            index: 0,
        }
    }

    /// The cells a commit checks (a fine shadow's: its element checks), and the
    /// number of cells installed when it went fine.
    fn touched_installed(
        a: &mut ArrayShadow,
        ranges: &[Range],
    ) -> (Vec<(u32, u32, u32, bool)>, usize) {
        let mut v = Vec::new();
        let mut installed = 0;
        // Checks by thread 0, so that checked cells have state.
        let t0 = crate::thread::ThreadState::new(0, crate::clocks::Clocks::initial(0));
        let acc = acc(crate::event::Op::Read);
        let checked = a.commit(ranges, &mut |_, _| installed += 1, |t, c| {
            let mut races = Vec::new();
            if t.write {
                c.write(&t0, acc, &mut races);
            } else {
                c.read(&t0, acc, &mut races);
            }
            v.push((t.lo, t.hi, t.step, t.write))
        });
        if !checked {
            v.extend(fine_touches(ranges).map(|t| (t.lo, t.hi, t.step, t.write)));
        }
        (v, installed)
    }

    fn touched(a: &mut ArrayShadow, ranges: &[Range]) -> Vec<(u32, u32, u32, bool)> {
        touched_installed(a, ranges).0
    }

    #[test]
    fn a_whole_array_footprint_keeps_one_cell() {
        let mut a = ArrayShadow::new(100);
        assert_eq!(
            touched(&mut a, &[r(0, 100, 1, true)]),
            vec![(0, 100, 1, true)]
        );
        assert_eq!(a.mode(), Mode::Coarse);
    }

    #[test]
    fn bounds_split_cells_and_strides_make_strides() {
        let mut a = ArrayShadow::new(100);
        assert_eq!(
            touched(&mut a, &[r(0, 50, 1, true)]),
            vec![(0, 50, 1, true)]
        );
        assert_eq!(a.mode(), Mode::Intervals);
        // A triangular sequence of footprints: split at each bound, one check per
        // cell; here every check is in one epoch (the reads of the written half leave
        // it as it was), so the cells merge again into the written and the read half.
        for k in 1..10 {
            assert_eq!(
                touched(&mut a, &[r(k, 100, 1, false)]).len(),
                if k < 50 { 2 } else { 1 }
            );
        }
        assert_eq!(a.cells(), 2);
        let mut b = ArrayShadow::new(100);
        assert_eq!(
            touched(&mut b, &[r(1, 100, 2, true)]),
            vec![(1, 100, 2, true)]
        );
        assert_eq!(b.mode(), Mode::Stride(2));
        // A contiguous footprint splits each class at its bounds (the odd element,
        // written in this epoch, keeps its state and merges back).
        assert_eq!(
            touched(&mut b, &[r(4, 6, 1, false)]),
            vec![(4, 5, 2, false), (5, 6, 2, false)]
        );
        assert_eq!(b.mode(), Mode::Stride(2));
        assert_eq!(b.cells(), 4);
        // A few elements far apart are single elements: they fit any classes.
        assert_eq!(touched(&mut b, &[r(0, 100, 97, false)]).len(), 2);
        assert_eq!(b.mode(), Mode::Stride(2));
        // A stride whose classes (38) would be more cells than the limit: one cell per
        // element, each a copy of its class's cell.
        assert_eq!(touched(&mut b, &[r(0, 100, 19, false)]).len(), 6);
        assert_eq!(b.mode(), Mode::Fine);
    }

    #[test]
    fn partial_residue_classes_stay_strided_and_scattered_elements_go_fine() {
        // A strided range that is not a whole residue class, after intervals: the
        // intervals are split per class, and the range splits its class at its end.
        let mut a = ArrayShadow::new(1000);
        assert_eq!(touched(&mut a, &[r(0, 500, 1, true)]).len(), 1);
        let (t, installed) = touched_installed(&mut a, &[r(1, 997, 2, false)]);
        assert_eq!(t, vec![(1, 500, 2, false), (501, 996, 2, false)]);
        assert_eq!(installed, 0);
        assert_eq!(a.mode(), Mode::Stride(2));
        assert_eq!(a.cells(), 5);
        // A stride of 4 makes four classes, each a copy of its half of the cells.
        let t = touched(&mut a, &[r(3, 1000, 4, true)]);
        assert_eq!(
            t,
            vec![(3, 500, 4, true), (503, 996, 4, true), (999, 1000, 4, true)]
        );
        assert_eq!(a.mode(), Mode::Stride(4));
        assert_eq!(a.cells(), 10);
        // SOR's rows: red writes and black reads, then the other way round, with the
        // border elements outside: a handful of cells for good.
        let mut g = ArrayShadow::new(1000);
        for _ in 0..4 {
            for (w, rd) in [((1, 998, 2), (0, 999, 2)), ((2, 999, 2), (1, 1000, 2))] {
                touched(
                    &mut g,
                    &[r(w.0, w.1, w.2, true), r(rd.0, rd.1, rd.2, false)],
                );
            }
        }
        assert_eq!(g.mode(), Mode::Stride(2));
        assert!(g.cells() <= 6, "{}", g.cells());
        assert!(!g.is_fine());
        // Scattered single elements: intervals up to the limit, then fine.
        let mut b = ArrayShadow::new(10_000);
        let mut e = 7;
        let mut commits = 0;
        while b.mode() != Mode::Fine {
            assert_eq!(touched(&mut b, &[r(e, e + 1, 1, true)]).len(), 1);
            e = (e * 31 + 17) % 10_000;
            commits += 1;
            assert!(
                b.mode() == Mode::Fine || b.cells() <= dense_limit(10_000) + 2,
                "{}",
                b.cells()
            );
        }
        assert!(commits > dense_limit(10_000) / 4, "{commits}");
        // Fine cells are checked once per range, writes first.
        let t = touched(&mut b, &[r(3, 6, 1, false), r(4, 5, 1, true)]);
        assert_eq!(
            t,
            vec![
                (4, 5, 1, true),
                (3, 4, 1, false),
                (4, 5, 1, false),
                (5, 6, 1, false)
            ]
        );
    }

    /// Random footprints of one thread, one epoch per commit, on arrays of a few
    /// lengths: every touched cell lies inside the footprint (legitimate), with a
    /// write range over all of it when it is checked as a write; every element of the
    /// footprint is in a touched cell of a covering kind; and after each commit every
    /// element's cell holds the state one cell per element would hold (lossless),
    /// including the states installed when the shadow goes fine.
    #[test]
    fn refinement_is_lossless_legitimate_and_covering() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u32| (crate::xorshift(&mut seed) % u64::from(n)) as u32;
        let acc = acc(crate::event::Op::Read);
        let mut modes = std::collections::BTreeSet::new();
        for _ in 0..400 {
            let len = [7, 24, 40, 100][next(4) as usize];
            let mut a = ArrayShadow::new(len);
            let mut t = crate::thread::ThreadState::new(0, crate::clocks::Clocks::initial(0));
            // Per element: the clocks of its last write and last read-only check.
            let mut model: Vec<(u32, u32)> = vec![(0, 0); len as usize];
            // The frontier: below it, state is forgotten (and so is the model's).
            let (mut advance, mut frontier) = (0u64, crate::vc::VectorClock::new());
            for _ in 0..30 {
                t.vc.tick(0);
                let now = t.epoch().clock;
                if next(4) == 0 {
                    let f = now - 1 - next(3).min(now - 1);
                    if f > frontier.get(0) {
                        frontier.set(0, f);
                        advance += 1;
                        a.forget(advance, &frontier);
                        for m in &mut model {
                            if m.0 <= f && m.1 <= f {
                                *m = (0, 0);
                            }
                        }
                    }
                }
                let mut ranges: Ranges = (0..1 + next(3))
                    .map(|_| {
                        // Whole-array ranges often (the coarse form's own path).
                        if next(4) == 0 {
                            return r(0, len, 1, next(2) == 0);
                        }
                        let lo = next(len);
                        let hi = lo + 1 + next(len - lo);
                        let step = [1, 1, 2, 3, 4, 6][next(6) as usize];
                        let step = if hi - lo <= step { 1 } else { step };
                        r(lo, hi, step, next(2) == 0)
                    })
                    .collect();
                normalize(&mut ranges);
                let in_ranges = |e: u32, write: bool| {
                    ranges.iter().any(|x| {
                        (!write || x.write)
                            && e >= x.lo
                            && e < x.hi
                            && (e - x.lo).is_multiple_of(x.step)
                    })
                };
                let mut seen: Vec<Option<bool>> = vec![None; len as usize];
                let mut installed: Vec<(u32, Option<u32>, Option<u32>)> = Vec::new();
                let checked = a.commit(
                    &ranges,
                    &mut |e, c| {
                        let (w, reads, _) = c.state();
                        let rd = reads.first().map(|x| x.0.clock);
                        installed.push((e, w.map(|x| x.0.clock), rd));
                    },
                    |tc, c| {
                        let mut races = Vec::new();
                        let cur = crate::passes::shadow::Acc {
                            op: if tc.write {
                                crate::event::Op::Write
                            } else {
                                crate::event::Op::Read
                            },
                            ..acc
                        };
                        if tc.write {
                            c.write(&t, cur, &mut races);
                        } else {
                            c.read(&t, cur, &mut races);
                        }
                        let mut e = tc.lo;
                        while e < tc.hi {
                            assert!(in_ranges(e, tc.write), "{tc:?} not inside {ranges:?}");
                            seen[e as usize] = Some(tc.write);
                            e += tc.step;
                        }
                    },
                );
                // Installed states are the model's before this commit.
                for (e, w, rd) in installed {
                    let (mw, mr) = model[e as usize];
                    assert_eq!(w, (mw > 0).then_some(mw), "element {e} installed");
                    assert_eq!(rd, (mr > 0).then_some(mr), "element {e} installed");
                }
                for e in 0..len {
                    if in_ranges(e, true) {
                        model[e as usize].0 = now;
                    } else if in_ranges(e, false) && model[e as usize].0 != now {
                        model[e as usize].1 = now;
                    }
                }
                modes.insert(a.mode().name());
                if !checked {
                    break;
                }
                for e in 0..len {
                    if in_ranges(e, false) {
                        assert!(
                            seen[e as usize].is_some_and(|w| w || !in_ranges(e, true)),
                            "element {e} of {ranges:?} not covered"
                        );
                    }
                    let (w, reads, _) = a.cell_of(e).expect("a cell").state();
                    let (mw, mr) = model[e as usize];
                    assert_eq!(w.map(|x| x.0.clock), (mw > 0).then_some(mw), "element {e}");
                    let rd = reads.first().map(|x| x.0.clock);
                    assert_eq!(rd, (mr > 0).then_some(mr), "element {e}");
                }
            }
        }
        assert_eq!(modes.len(), 4, "{modes:?}");
    }

    #[test]
    fn forgetting_dead_state_and_merging_equal_cells_keeps_columns_coarse() {
        let mut t = crate::thread::ThreadState::new(0, crate::clocks::Clocks::initial(0));
        let acc = acc(crate::event::Op::Write);
        // Writes of `lo..hi` by thread 0 now; whether the shadow is still not fine.
        let write = |a: &mut ArrayShadow, t: &crate::thread::ThreadState, lo: u32, hi: u32| {
            a.commit(&[r(lo, hi, 1, true)], &mut |_, _| {}, |_, c| {
                c.write(t, acc, &mut Vec::new());
            })
        };
        // LU's column: in phase k the thread writes k..len, the phases separated by
        // barriers that advance the frontier to the previous phase.
        let mut a = ArrayShadow::new(100);
        let mut frontier = crate::vc::VectorClock::new();
        for k in 0..60u32 {
            t.vc.tick(0);
            a.forget(u64::from(k) + 1, &frontier);
            assert!(write(&mut a, &t, k, 100));
            assert!(a.cells() <= 3, "phase {k}: {} cells", a.cells());
            frontier.set(0, t.epoch().clock);
        }
        // Without the frontier the cells pile up until the shadow goes fine.
        let mut b = ArrayShadow::new(100);
        for k in 0..60u32 {
            t.vc.tick(0);
            write(&mut b, &t, k, 100);
        }
        assert!(b.is_fine());
        // Elements written a few at a time at one epoch by one site: one cell.
        let mut c = ArrayShadow::new(1000);
        t.vc.tick(0);
        for i in 0..250 {
            write(&mut c, &t, 4 * i, 4 * i + 4);
        }
        assert_eq!(c.mode(), Mode::Coarse);
    }

    #[test]
    fn a_partly_written_range_splits_into_uniform_cells() {
        let mut a = ArrayShadow::new(8);
        let t = touched(&mut a, &[r(0, 8, 1, false), r(0, 4, 1, true)]);
        assert_eq!(t, vec![(0, 4, 1, true), (4, 8, 1, false)]);
    }

    #[test]
    fn strided_ranges_over_consecutive_residues_normalize_to_one_range() {
        let mut v: Ranges =
            smallvec::smallvec![r(1, 9, 2, false), r(0, 8, 2, false), r(8, 12, 1, false)];
        normalize(&mut v);
        assert_eq!(v.as_slice(), [r(0, 12, 1, false)]);
        // Different counts or kinds stay apart.
        let mut w: Ranges =
            smallvec::smallvec![r(0, 8, 2, false), r(1, 7, 2, false), r(0, 4, 1, true)];
        normalize(&mut w);
        assert_eq!(w.len(), 3);
    }
}
