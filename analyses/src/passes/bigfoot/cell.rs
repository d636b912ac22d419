//! One BigFoot shadow location: FastTrack's state (Flanagan & Freund, PLDI'09, with
//! the revised "FT2" rules: Rhodes, *Access Classification for Race Detection
//! Optimization*, §1.5) for a cell of an array shadow (field groups and statics use
//! FastTrack's own cells, `super::super::fasttrack::FtCells`).
//! Plain data, so a cell can be copied when an array shadow is refined (losslessly).

use crate::ctx::CtxId;
use crate::event::{Op, SiteId};
use crate::passes::shadow::Acc;
use crate::thread::ThreadState;
use crate::vc::Epoch;

/// Where a check was made (the thread is its epoch's, the operation the field's):
/// 8 bytes instead of a whole [`Acc`], so a cell stays small.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Who {
    site: SiteId,
    ctx: CtxId,
}

impl Who {
    fn of(a: &Acc) -> Who {
        Who {
            site: a.site,
            ctx: a.ctx,
        }
    }
    fn acc(self, e: Epoch, op: Op) -> Acc {
        Acc {
            tid: e.tid,
            op,
            site: self.site,
            ctx: self.ctx,
            index: 0,
        }
    }
}

/// The reads of a cell: one epoch while they are totally ordered, else the read
/// clock of every reader (FT2 never returns to an epoch).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Reads {
    #[default]
    None,
    Epoch(Epoch, Who),
    Shared(Box<[Option<(u32, Who)>]>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    w: Option<(Epoch, Who)>,
    r: Reads,
}

/// A race found by a check: the earlier conflicting access and what kind of race.
pub struct Race {
    pub prev: Acc,
    pub what: &'static str,
}

impl Cell {
    /// No check reached the cell yet.
    pub fn is_empty(&self) -> bool {
        self.w.is_none() && matches!(self.r, Reads::None)
    }

    /// Whether every access the cell remembers happens before every access still to
    /// come (its epochs are all below the frontier `f`, `crate::clocks`): then no
    /// later check can race with them or apply a same-epoch rule to them, and the
    /// cell decides every later check as an empty cell would.
    pub fn is_dead(&self, f: &crate::vc::VectorClock) -> bool {
        let below = |e: &crate::vc::Epoch| e.clock <= f.get(e.tid);
        self.w.is_none_or(|(e, _)| below(&e))
            && match &self.r {
                Reads::None => true,
                Reads::Epoch(e, _) => below(e),
                Reads::Shared(v) => v
                    .iter()
                    .enumerate()
                    .all(|(u, x)| x.is_none_or(|(c, _)| c <= f.get(u as u32))),
            }
    }

    /// The cell's state: the last write, the reads (an epoch per reader) and whether
    /// the reads are shared (FT2 never returns from a shared read state to an epoch).
    pub fn state(&self) -> super::array::CellState {
        let w = self.w.map(|(e, who)| (e, who.acc(e, Op::Write)));
        match &self.r {
            Reads::None => (w, Vec::new(), false),
            Reads::Epoch(e, who) => (w, vec![(*e, who.acc(*e, Op::Read))], false),
            Reads::Shared(v) => {
                let reads = v
                    .iter()
                    .enumerate()
                    .filter_map(|(u, x)| {
                        x.map(|(c, who)| {
                            let e = Epoch::new(u as u32, c);
                            (e, who.acc(e, Op::Read))
                        })
                    })
                    .collect();
                (w, reads, true)
            }
        }
    }

    /// FT2 `read(t, x)` for a read check by `t` (`cur`); the races it finds.
    pub fn read(&mut self, t: &ThreadState, cur: Acc, races: &mut Vec<Race>) {
        let e = t.epoch();
        // This thread write-checked the cell in this epoch: that check covers the
        // read (no release since, so a check before the read covers it; one after it
        // with an acquire between would mean this read check ran before it), and a
        // read that races also races with that write, which the write check decided.
        if self.w.is_some_and(|(w, _)| w == e) {
            return;
        }
        match &self.r {
            // [FT read same epoch]
            Reads::Epoch(r, _) if *r == e => return,
            // [FT read shared same epoch]
            Reads::Shared(v)
                if v.get(t.tid as usize).copied().flatten().map(|x| x.0) == Some(e.clock) =>
            {
                return;
            }
            _ => {}
        }
        // [FT write-read race]
        if let Some((w, who)) = self.w
            && w.tid != t.tid
            && !w.leq(&t.vc)
        {
            races.push(Race {
                prev: who.acc(w, Op::Write),
                what: "write-read",
            });
        }
        let me = Who::of(&cur);
        match &mut self.r {
            Reads::None => self.r = Reads::Epoch(e, me),
            Reads::Epoch(r, rwho) => {
                if r.tid == t.tid || r.leq(&t.vc) {
                    // [FT read exclusive]
                    self.r = Reads::Epoch(e, me);
                } else {
                    // [FT read share]
                    let (r, rwho) = (*r, *rwho);
                    let mut v: Box<[Option<(u32, Who)>]> = Box::default();
                    set(&mut v, r.tid, r.clock, rwho);
                    set(&mut v, t.tid, e.clock, me);
                    self.r = Reads::Shared(v);
                }
            }
            // [FT read shared]
            Reads::Shared(v) => set(v, t.tid, e.clock, me),
        }
    }

    /// FT2 `write(t, x)` for a write check by `t` (`cur`); the races it finds.
    pub fn write(&mut self, t: &ThreadState, cur: Acc, races: &mut Vec<Race>) {
        let e = t.epoch();
        if let Some((w, who)) = self.w {
            // [FT write same epoch]
            if w == e {
                return;
            }
            // [FT write-write race]
            if w.tid != t.tid && !w.leq(&t.vc) {
                races.push(Race {
                    prev: who.acc(w, Op::Write),
                    what: "write-write",
                });
            }
        }
        match &self.r {
            Reads::None => {}
            // [FT read-write race]
            Reads::Epoch(r, who) => {
                if r.tid != t.tid && !r.leq(&t.vc) {
                    races.push(Race {
                        prev: who.acc(*r, Op::Read),
                        what: "read-write",
                    });
                }
            }
            // [FT shared-read-write race], one per unordered reader
            Reads::Shared(v) => {
                for (u, x) in v.iter().enumerate() {
                    if let Some((c, who)) = x
                        && *c > t.vc.get(u as u32)
                    {
                        races.push(Race {
                            prev: who.acc(crate::vc::Epoch::new(u as u32, *c), Op::Read),
                            what: "read-write",
                        });
                    }
                }
            }
        }
        // [FT write exclusive / write shared]: FT2 keeps a shared read state.
        self.w = Some((e, Who::of(&cur)));
    }
}

/// `R[tid] := clock` (by `who`), growing the clock (a boxed slice: one word smaller
/// than a `Vec`, which keeps every cell small).
fn set(v: &mut Box<[Option<(u32, Who)>]>, tid: u32, clock: u32, who: Who) {
    let i = tid as usize;
    if v.len() <= i {
        let mut grown = std::mem::take(v).into_vec();
        grown.resize(i + 1, None);
        *v = grown.into_boxed_slice();
    }
    v[i] = Some((clock, who));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_small() {
        assert!(
            std::mem::size_of::<Cell>() <= 48,
            "{}",
            std::mem::size_of::<Cell>()
        );
    }
}
