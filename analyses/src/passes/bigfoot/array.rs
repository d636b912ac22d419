//! Adaptive array shadows (DYNAMICBF, Rhodes §3.4 and §3.5.2, after SlimState): an
//! array starts with one shadow cell for all its elements and is refined, when a
//! committed footprint does not fit its cells, to blocks, to strides, and at worst to
//! one cell per element.
//!
//! Refinement is lossless: the cells of each representation are kept as a *level*,
//! and a cell of the newest level that was never checked starts as a copy of the
//! cell of the older level that contains it (each level refines the one before, so
//! that cell is unique), frozen when the new level was made. A cell is only checked
//! when the footprint covers all of it uniformly (every element written, or every
//! element accessed and none written): a check of a partly covered cell would be
//! illegitimate (false alarms), one of a partly written cell would not cover the
//! writes (missed races); the digest's pitfall P13.

use std::collections::BTreeMap;

use hashbrown::HashMap;

use super::cell::Cell;

/// How the elements of an array map to shadow cells.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One cell.
    Coarse,
    /// Cell `c` holds elements `c*b .. (c+1)*b`.
    Block(u32),
    /// Cell `r` holds the elements `≡ r (mod k)`.
    Stride(u32),
    /// One cell per element.
    Fine,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Coarse => "coarse",
            Mode::Block(_) => "block",
            Mode::Stride(_) => "stride",
            Mode::Fine => "fine",
        }
    }
    fn cell_of(self, i: u32) -> u32 {
        match self {
            Mode::Coarse => 0,
            Mode::Block(b) => i / b,
            Mode::Stride(k) => i % k,
            Mode::Fine => i,
        }
    }
    /// The elements of cell `c` as `lo..hi:step`.
    pub fn cell_range(self, c: u32, len: u32) -> (u32, u32, u32) {
        match self {
            Mode::Coarse => (0, len, 1),
            Mode::Block(b) => (c * b, (c.saturating_add(1)).saturating_mul(b).min(len), 1),
            Mode::Stride(k) => (c, len, k),
            Mode::Fine => (c, c + 1, 1),
        }
    }
    /// Whether `self` is a refinement of `old` (every cell of `self` lies in one cell
    /// of `old`).
    fn refines(self, old: Mode) -> bool {
        match (old, self) {
            (_, Mode::Fine) | (Mode::Coarse, _) => true,
            (Mode::Block(a), Mode::Block(b)) => a % b == 0,
            (Mode::Stride(a), Mode::Stride(b)) => b % a == 0,
            _ => false,
        }
    }
}

/// One footprint range of a thread on one array: `lo..hi:step`, read or write.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Range {
    pub lo: u32,
    pub hi: u32,
    pub step: u32,
    pub write: bool,
}

struct Level {
    mode: Mode,
    cells: HashMap<u32, Cell>,
}

pub struct ArrayShadow {
    len: u32,
    levels: Vec<Level>,
}

impl ArrayShadow {
    pub fn new(len: u32) -> Self {
        ArrayShadow {
            len,
            levels: vec![Level {
                mode: Mode::Coarse,
                cells: HashMap::new(),
            }],
        }
    }

    pub fn mode(&self) -> Mode {
        self.levels.last().expect("a level").mode
    }

    /// Number of cells with state (all levels).
    pub fn cells(&self) -> usize {
        self.levels.iter().map(|l| l.cells.len()).sum()
    }

    /// The cells the footprint `ranges` touches, each with whether it is written and
    /// the index of the range that decided it, refining the shadow first if the
    /// current cells do not fit. `ranges` is non-empty, each range within the array.
    pub fn touched(&mut self, ranges: &[Range]) -> BTreeMap<u32, (bool, usize)> {
        let mode = self.mode();
        if !fits(mode, ranges, self.len) {
            let next = refinement(mode, ranges, self.len);
            self.levels.push(Level {
                mode: next,
                cells: HashMap::new(),
            });
        }
        touched_cells(self.mode(), ranges, self.len)
    }

    /// The newest level's cell `c`, created from the cell that held its elements.
    pub fn cell(&mut self, c: u32) -> &mut Cell {
        let top = self.levels.len() - 1;
        if !self.levels[top].cells.contains_key(&c) {
            let (first, _, _) = self.levels[top].mode.cell_range(c, self.len);
            let inherited = self.levels[..top]
                .iter()
                .rev()
                .find_map(|l| l.cells.get(&l.mode.cell_of(first)))
                .cloned()
                .unwrap_or_default();
            self.levels[top].cells.insert(c, inherited);
        }
        self.levels[top].cells.get_mut(&c).expect("inserted")
    }
}

/// Merge a footprint's ranges where that keeps the same index set and kinds: `k`
/// ranges of stride `k` over consecutive residues with the same element count are
/// one contiguous range (a loop reading `a[i]`, …, `a[i + k - 1]` with `i += k`), and
/// contiguous or overlapping ranges of stride 1 and one kind are one range.
pub fn normalize(ranges: &mut Vec<Range>) {
    ranges.sort_by_key(|r| (r.write, r.step, r.lo));
    let count = |r: &Range| (r.hi - r.lo).div_ceil(r.step);
    let mut out: Vec<Range> = Vec::with_capacity(ranges.len());
    let mut i = 0;
    while i < ranges.len() {
        let r = ranges[i];
        let k = r.step as usize;
        if k > 1 && i + k <= ranges.len() {
            let run = &ranges[i..i + k];
            let n = count(&r);
            if run.iter().enumerate().all(|(j, x)| {
                x.write == r.write && x.step == r.step && x.lo == r.lo + j as u32 && count(x) == n
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

/// The last element of residue class `r` modulo `k` below `len`.
fn last_of_class(r: u32, k: u32, len: u32) -> u32 {
    r + k * ((len - 1 - r) / k)
}

/// Whether every cell of `mode` that `ranges` touches is covered uniformly.
fn fits(mode: Mode, ranges: &[Range], len: u32) -> bool {
    match mode {
        Mode::Fine => true,
        Mode::Coarse => {
            let any_write = ranges.iter().any(|r| r.write);
            covers_all(ranges.iter().filter(|r| r.write == any_write), len)
        }
        Mode::Block(b) => ranges.iter().all(|r| {
            (r.step == 1 || r.hi - r.lo == 1) && r.lo % b == 0 && (r.hi % b == 0 || r.hi == len)
        }),
        Mode::Stride(k) => {
            // Each range is one whole residue class, or the whole array.
            let whole = |r: &Range| {
                (r.step == k && r.lo < k && r.hi > last_of_class(r.lo, k, len))
                    || (r.step == 1 && r.lo == 0 && r.hi == len)
            };
            if !ranges.iter().all(whole) {
                return false;
            }
            // A class read by one range and written by none is read-uniform; a class
            // written by a range is fully written: uniform either way.
            true
        }
    }
}

/// Whether the union of `ranges` is every index `0..len`.
fn covers_all<'a>(ranges: impl Iterator<Item = &'a Range>, len: u32) -> bool {
    let mut unit: Vec<(u32, u32)> = Vec::new();
    let mut strided: BTreeMap<u32, Vec<&Range>> = BTreeMap::new();
    for r in ranges {
        if r.step == 1 || r.hi - r.lo <= 1 {
            let hi = if r.step == 1 { r.hi } else { r.lo + 1 };
            unit.push((r.lo, hi));
        } else {
            strided.entry(r.step).or_default().push(r);
        }
    }
    unit.sort_unstable();
    let mut reach = 0;
    for (lo, hi) in &unit {
        if *lo > reach {
            break;
        }
        reach = reach.max(*hi);
    }
    if reach >= len {
        return true;
    }
    // All classes of one stride, each complete (the D3 pattern, even/odd).
    strided.iter().any(|(k, rs)| {
        let mut classes: Vec<u32> = rs
            .iter()
            .filter(|r| r.lo < *k && r.hi > last_of_class(r.lo, *k, len))
            .map(|r| r.lo)
            .collect();
        classes.sort_unstable();
        classes.dedup();
        classes.len() as u32 >= (*k).min(len)
    })
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The mode to refine `mode` to so that `ranges` fit: blocks aligned to every range
/// boundary, else the ranges' common stride, else one cell per element.
fn refinement(mode: Mode, ranges: &[Range], len: u32) -> Mode {
    if ranges.iter().all(|r| r.step == 1 || r.hi - r.lo == 1) {
        let mut g = match mode {
            Mode::Block(b) => b,
            _ => 0,
        };
        for r in ranges {
            g = gcd(g, r.lo);
            if r.hi != len {
                g = gcd(g, r.hi);
            }
        }
        if g >= 2 && Mode::Block(g).refines(mode) && fits(Mode::Block(g), ranges, len) {
            return Mode::Block(g);
        }
    }
    if let Some(k) = ranges.first().map(|r| r.step)
        && k >= 2
        && ranges.iter().all(|r| r.step == k)
        && Mode::Stride(k).refines(mode)
        && fits(Mode::Stride(k), ranges, len)
    {
        return Mode::Stride(k);
    }
    Mode::Fine
}

/// The cells of `mode` that `ranges` touch: written or not, and the first range
/// deciding it (a written cell: the first write range touching it).
fn touched_cells(mode: Mode, ranges: &[Range], len: u32) -> BTreeMap<u32, (bool, usize)> {
    let mut out: BTreeMap<u32, (bool, usize)> = BTreeMap::new();
    let mut mark = |c: u32, write: bool, i: usize| {
        let e = out.entry(c).or_insert((write, i));
        if write && !e.0 {
            *e = (true, i);
        }
    };
    for (i, r) in ranges.iter().enumerate() {
        if r.lo >= r.hi {
            continue;
        }
        match mode {
            Mode::Coarse => mark(0, r.write, i),
            Mode::Block(b) => {
                for c in r.lo / b..=(r.hi - 1) / b {
                    mark(c, r.write, i);
                }
            }
            Mode::Stride(k) => {
                if r.step == k {
                    mark(r.lo % k, r.write, i);
                } else {
                    for c in 0..k.min(len) {
                        mark(c, r.write, i);
                    }
                }
            }
            Mode::Fine => {
                let mut e = r.lo;
                while e < r.hi {
                    mark(e, r.write, i);
                    e = match e.checked_add(r.step.max(1)) {
                        Some(x) => x,
                        None => break,
                    };
                }
            }
        }
    }
    out
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

    #[test]
    fn a_whole_array_footprint_keeps_one_cell() {
        let mut a = ArrayShadow::new(100);
        let t = a.touched(&[r(0, 100, 1, true)]);
        assert_eq!(a.mode(), Mode::Coarse);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn halves_refine_to_blocks_and_strides_to_strides() {
        let mut a = ArrayShadow::new(100);
        let t = a.touched(&[r(0, 50, 1, true)]);
        assert_eq!(a.mode(), Mode::Block(50));
        assert_eq!(t.keys().copied().collect::<Vec<_>>(), vec![0]);
        let mut b = ArrayShadow::new(100);
        let t = b.touched(&[r(1, 100, 2, true)]);
        assert_eq!(b.mode(), Mode::Stride(2));
        assert_eq!(t.keys().copied().collect::<Vec<_>>(), vec![1]);
        // Both classes together cover the whole array: one coarse cell.
        let mut c = ArrayShadow::new(100);
        c.touched(&[r(0, 100, 2, false), r(1, 100, 2, false)]);
        assert_eq!(c.mode(), Mode::Coarse);
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

    #[test]
    fn irregular_footprints_fall_back_to_one_cell_per_element() {
        let mut a = ArrayShadow::new(10);
        let t = a.touched(&[r(3, 4, 1, false), r(7, 8, 1, true)]);
        assert_eq!(a.mode(), Mode::Fine);
        assert_eq!(t.get(&3), Some(&(false, 0)));
        assert_eq!(t.get(&7), Some(&(true, 1)));
    }

    #[test]
    fn a_partly_written_cell_is_refined() {
        // Read all, write half: the coarse cell is neither all written nor read-only.
        let mut a = ArrayShadow::new(8);
        let t = a.touched(&[r(0, 8, 1, false), r(0, 4, 1, true)]);
        assert_eq!(a.mode(), Mode::Block(4));
        assert_eq!(t.get(&0), Some(&(true, 1)));
        assert_eq!(t.get(&1), Some(&(false, 0)));
    }
}
