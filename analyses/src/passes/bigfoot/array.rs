//! Adaptive array shadows (DYNAMICBF, Rhodes §3.4 and §3.5.2, after SlimState): an
//! array starts with one shadow cell for all its elements and is refined when a
//! committed footprint does not fit its cells.
//!
//! Representations:
//! - *Intervals*: cells are the intervals between sorted breakpoints (one cell at
//!   first: "coarse"). A footprint range splits the cells at its bounds, so every cell
//!   it touches lies inside it; blocks and the triangular patterns of LU factorization
//!   (the `lufact` pathology of Rhodes, §3.6) cost one cell per distinct bound,
//!   not one per element. A strided range splits its elements into one-element
//!   cells, as long as the intervals stay few.
//! - *Stride(k)*: cell `r` holds the elements `≡ r (mod k)`, entered from the single
//!   coarse cell when a footprint is made of whole residue classes (even/odd halves).
//! - *Fine*: one cell per element, FastTrack's own cell of the element's location
//!   (`super::super::fasttrack::FtCells`, the pass's table for field groups too), so
//!   the fallback costs what FastTrack costs and its same-epoch checks can be decided
//!   inline. Entered when a footprint does not fit the strides, or when the intervals
//!   would become too many to be cheaper than one cell per element ([`dense_limit`]):
//!   every element's cell is then installed as a copy of the cell that held it.
//!   Terminal: a fine shadow is never refined again, so a thread that saw it fine
//!   ([`ArrayShadow::is_fine`]) checks elements at once, without the array's lock and
//!   without a footprint.
//!
//! Refinement is lossless: a new cell starts as a copy of the cell that held its
//! elements. A cell is only checked when the footprint covers all of it, and covers it
//! uniformly (all written, or all accessed and none written): a check of a partly
//! covered cell would be illegitimate (false alarms), one of a partly written cell would
//! not cover the writes (missed races). A fine cell is checked once per range that
//! touches it, writes first (a read check of an element this thread write-checked in
//! the same epoch returns at once, [`Cell::read`]).

use std::collections::BTreeMap;

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
    /// The contiguous elements of a range of stride 1 or of one element.
    fn span(&self) -> (u32, u32) {
        if self.count() == 1 {
            (self.lo, self.lo + 1)
        } else {
            (self.lo, self.hi)
        }
    }
}

/// The cell boundaries a range needs: its bounds, or those of each of its elements
/// when it is strided.
fn bounds(r: &Range, mut f: impl FnMut(u32) -> bool) -> bool {
    if r.step == 1 || r.count() == 1 {
        let (lo, hi) = r.span();
        return f(lo) && f(hi);
    }
    let mut e = r.lo;
    while e < r.hi {
        if !(f(e) && f(e + 1)) {
            return false;
        }
        e = e.saturating_add(r.step);
    }
    true
}

/// Whether committing `ranges` onto the intervals `m` would make more intervals than
/// [`dense_limit`] (then fine cells are cheaper).
fn too_fine(m: &BTreeMap<u32, Cell>, ranges: &[Range], len: u32) -> bool {
    let limit = dense_limit(len);
    let mut new: std::collections::BTreeSet<u32> = Default::default();
    for r in ranges {
        let fits = bounds(r, |p| {
            if p < len && !m.contains_key(&p) {
                new.insert(p);
            }
            m.len() + new.len() <= limit
        });
        if !fits {
            return true;
        }
    }
    false
}

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
    /// Cell start → cell; a cell ends where the next starts (or at the length).
    Intervals(BTreeMap<u32, Cell>),
    Stride(u32, Vec<Cell>),
    /// One cell per element, outside the shadow (terminal).
    Fine,
}

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
            rep: Rep::Intervals(std::iter::once((0, Cell::default())).collect()),
        }
    }

    pub fn mode(&self) -> Mode {
        match &self.rep {
            Rep::Intervals(m) if m.len() == 1 => Mode::Coarse,
            Rep::Intervals(_) => Mode::Intervals,
            Rep::Stride(k, _) => Mode::Stride(*k),
            Rep::Fine => Mode::Fine,
        }
    }

    /// Number of cells (for a fine shadow, one per element, kept outside).
    pub fn cells(&self) -> usize {
        match &self.rep {
            Rep::Intervals(m) => m.len(),
            Rep::Stride(_, v) => v.len(),
            Rep::Fine => self.len as usize,
        }
    }

    /// Whether the shadow is fine: its cells are the elements' own, outside, and it
    /// never changes again.
    pub fn is_fine(&self) -> bool {
        matches!(self.rep, Rep::Fine)
    }

    /// Convert intervals to fine cells (each a copy of its interval's cell).
    fn intervals_to_fine(&mut self, install: Install<'_>) {
        if let Rep::Intervals(m) = &self.rep {
            let starts: Vec<(u32, &Cell)> = m.iter().map(|(s, c)| (*s, c)).collect();
            for (i, (s, c)) in starts.iter().enumerate() {
                let end = starts.get(i + 1).map_or(self.len, |n| n.0);
                if !c.is_empty() {
                    (*s..end).for_each(|e| install(e, c));
                }
            }
            self.rep = Rep::Fine;
        }
    }

    /// Refine for the footprint `ranges` (non-empty, normalized, inside the array) and
    /// apply `check` to every cell it touches, once, in index order. Returns false
    /// when the shadow is (now) fine instead: its cells were handed to `install`, and
    /// the caller checks the elements ([`fine_touches`]).
    pub fn commit(
        &mut self,
        ranges: &[Range],
        install: Install<'_>,
        mut check: impl FnMut(Touched, &mut Cell),
    ) -> bool {
        let len = self.len;
        // Whole residue classes of one stride, on a never-refined array: strides.
        if let Rep::Intervals(m) = &self.rep
            && m.len() == 1
            && let Some(k) = whole_classes(ranges, len)
        {
            let base = m.values().next().cloned().unwrap_or_default();
            self.rep = Rep::Stride(k, vec![base; k.min(len) as usize]);
        }
        if let Rep::Stride(k, cells) = &mut self.rep {
            let k = *k;
            if ranges.iter().all(|r| fits_stride(r, k, len)) {
                let mut kinds: BTreeMap<u32, (bool, usize)> = BTreeMap::new();
                for (i, r) in ranges.iter().enumerate() {
                    let classes = if r.step == k {
                        r.lo..r.lo + 1
                    } else {
                        0..k.min(len)
                    };
                    for c in classes {
                        mark(&mut kinds, c, r.write, i);
                    }
                }
                for (c, (write, i)) in kinds {
                    let t = Touched {
                        lo: c,
                        hi: len,
                        step: k,
                        write,
                        range: i,
                    };
                    check(t, &mut cells[c as usize]);
                }
                return true;
            }
            let parent = std::mem::take(cells);
            for e in 0..len {
                let c = &parent[(e % k) as usize];
                if !c.is_empty() {
                    install(e, c);
                }
            }
            self.rep = Rep::Fine;
        }
        // Intervals that would split too finely: fine cells instead.
        if let Rep::Intervals(m) = &self.rep
            && too_fine(m, ranges, len)
        {
            self.intervals_to_fine(install);
        }
        match &mut self.rep {
            Rep::Intervals(m) => {
                // A strided range splits its elements into one-element cells (few:
                // `too_fine` bounds the cells).
                for r in ranges {
                    bounds(r, |p| {
                        split(m, p, len);
                        true
                    });
                }
                let mut kinds: BTreeMap<u32, (bool, usize)> = BTreeMap::new();
                for (i, r) in ranges.iter().enumerate() {
                    if r.step == 1 || r.count() == 1 {
                        let (lo, hi) = r.span();
                        for (s, _) in m.range(lo..hi) {
                            mark(&mut kinds, *s, r.write, i);
                        }
                    } else {
                        let mut e = r.lo;
                        while e < r.hi {
                            mark(&mut kinds, e, r.write, i);
                            e = e.saturating_add(r.step);
                        }
                    }
                }
                let ends: Vec<u32> = kinds
                    .keys()
                    .map(|s| m.range(s + 1..).next().map_or(len, |(n, _)| *n))
                    .collect();
                for ((s, (write, i)), hi) in kinds.into_iter().zip(ends) {
                    let t = Touched {
                        lo: s,
                        hi,
                        step: 1,
                        write,
                        range: i,
                    };
                    if let Some(c) = m.get_mut(&s) {
                        check(t, c);
                    }
                }
            }
            Rep::Fine => return false,
            Rep::Stride(..) => {}
        }
        true
    }
}

/// A cell touched by range `i`: written if any range touching it writes.
fn mark(kinds: &mut BTreeMap<u32, (bool, usize)>, c: u32, write: bool, i: usize) {
    let e = kinds.entry(c).or_insert((write, i));
    if write && !e.0 {
        *e = (true, i);
    }
}

/// Make `p` a cell boundary (a new cell starts as a copy of the one it splits).
fn split(m: &mut BTreeMap<u32, Cell>, p: u32, len: u32) {
    if p >= len || m.contains_key(&p) {
        return;
    }
    let Some((_, c)) = m.range(..p).next_back() else {
        return;
    };
    let c = c.clone();
    m.insert(p, c);
}

/// The last element of residue class `r` modulo `k` below `len`.
fn last_of_class(r: u32, k: u32, len: u32) -> u32 {
    r + k * ((len - 1 - r) / k)
}

/// Whether `r` covers whole cells of `Stride(k)`: one residue class, or every element.
fn fits_stride(r: &Range, k: u32, len: u32) -> bool {
    (r.step == k && r.lo < k && r.hi > last_of_class(r.lo, k, len))
        || (r.step == 1 && r.lo == 0 && r.hi >= len)
}

/// The stride `k > 1` if every range is a whole residue class of it.
fn whole_classes(ranges: &[Range], len: u32) -> Option<u32> {
    let k = ranges.first()?.step;
    (k > 1 && ranges.iter().all(|r| r.step == k && fits_stride(r, k, len))).then_some(k)
}

/// Merge a footprint's ranges where that keeps the same index set and kinds: `k`
/// ranges of stride `k` over consecutive residues with the same element count are
/// one contiguous range (a loop reading `a[i]`, …, `a[i + k - 1]` with `i += k`), and
/// contiguous or overlapping ranges of stride 1 and one kind are one range.
pub fn normalize(ranges: &mut Vec<Range>) {
    ranges.sort_by_key(|r| (r.write, r.step, r.lo, r.hi));
    ranges.dedup();
    let mut out: Vec<Range> = Vec::with_capacity(ranges.len());
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
    let mut merged: Vec<Range> = Vec::with_capacity(out.len());
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
        let acc = crate::passes::shadow::Acc {
            tid: 0,
            op: crate::event::Op::Read,
            site: Default::default(),
            ctx: Default::default(),
            index: 0,
        };
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
        // A triangular sequence of footprints: one cell per bound, one check each.
        for k in 1..10 {
            assert_eq!(
                touched(&mut a, &[r(k, 100, 1, false)]).len(),
                if k < 50 { 2 } else { 1 }
            );
        }
        assert_eq!(a.cells(), 11);
        let mut b = ArrayShadow::new(100);
        assert_eq!(
            touched(&mut b, &[r(1, 100, 2, true)]),
            vec![(1, 100, 2, true)]
        );
        assert_eq!(b.mode(), Mode::Stride(2));
        // A footprint that does not fit the strides: one cell per element, each a copy
        // of its class's cell.
        assert_eq!(touched(&mut b, &[r(4, 6, 1, false)]).len(), 2);
        assert_eq!(b.mode(), Mode::Fine);
    }

    #[test]
    fn strided_or_scattered_footprints_go_fine_not_to_one_element_intervals() {
        // A strided range that is not a whole residue class.
        let mut a = ArrayShadow::new(1000);
        assert_eq!(touched(&mut a, &[r(0, 500, 1, true)]).len(), 1);
        let (t, installed) = touched_installed(&mut a, &[r(1, 997, 2, false)]);
        assert_eq!(t.len(), 498);
        assert_eq!(a.mode(), Mode::Fine);
        assert!(a.is_fine());
        assert_eq!(a.cells(), 1000);
        // The written half had state, the rest none: only the half is installed.
        assert_eq!(installed, 500);
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

    #[test]
    fn a_partly_written_range_splits_into_uniform_cells() {
        let mut a = ArrayShadow::new(8);
        let t = touched(&mut a, &[r(0, 8, 1, false), r(0, 4, 1, true)]);
        assert_eq!(t, vec![(0, 4, 1, true), (4, 8, 1, false)]);
    }

    #[test]
    fn strided_ranges_over_consecutive_residues_normalize_to_one_range() {
        let mut v = vec![r(1, 9, 2, false), r(0, 8, 2, false), r(8, 12, 1, false)];
        normalize(&mut v);
        assert_eq!(v, vec![r(0, 12, 1, false)]);
        // Different counts or kinds stay apart.
        let mut w = vec![r(0, 8, 2, false), r(1, 7, 2, false), r(0, 4, 1, true)];
        normalize(&mut w);
        assert_eq!(w.len(), 3);
    }
}
