//! One BigFoot shadow location: FastTrack's state (Flanagan & Freund, PLDI'09, with
//! the revised "FT2" rules: Rhodes, *Access Classification for Race Detection
//! Optimization*, §1.5) for a field group, a static or a cell of an array shadow.
//! Plain data, so a cell can be copied when an array shadow is refined (losslessly).

use crate::passes::shadow::Acc;
use crate::thread::ThreadState;
use crate::vc::Epoch;

/// The reads of a cell: one epoch while they are totally ordered, else the read
/// clock of every reader (FT2 never returns to an epoch).
#[derive(Clone, Debug, Default)]
enum Reads {
    #[default]
    None,
    Epoch(Epoch, Acc),
    Shared(Vec<Option<(u32, Acc)>>),
}

#[derive(Clone, Debug, Default)]
pub struct Cell {
    w: Option<(Epoch, Acc)>,
    r: Reads,
}

/// A race found by a check: the earlier conflicting access and what kind of race.
pub struct Race {
    pub prev: Acc,
    pub what: &'static str,
}

impl Cell {
    /// FT2 `read(t, x)` for a read check by `t` (`cur`); the races it finds.
    pub fn read(&mut self, t: &ThreadState, cur: Acc, races: &mut Vec<Race>) {
        let e = t.epoch();
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
        if let Some((w, acc)) = self.w
            && w.tid != t.tid
            && !w.leq(&t.vc)
        {
            races.push(Race {
                prev: acc,
                what: "write-read",
            });
        }
        match &mut self.r {
            Reads::None => self.r = Reads::Epoch(e, cur),
            Reads::Epoch(r, racc) => {
                if r.tid == t.tid || r.leq(&t.vc) {
                    // [FT read exclusive]
                    self.r = Reads::Epoch(e, cur);
                } else {
                    // [FT read share]
                    let (r, racc) = (*r, *racc);
                    let mut v = Vec::new();
                    set(&mut v, r.tid, r.clock, racc);
                    set(&mut v, t.tid, e.clock, cur);
                    self.r = Reads::Shared(v);
                }
            }
            // [FT read shared]
            Reads::Shared(v) => set(v, t.tid, e.clock, cur),
        }
    }

    /// FT2 `write(t, x)` for a write check by `t` (`cur`); the races it finds.
    pub fn write(&mut self, t: &ThreadState, cur: Acc, races: &mut Vec<Race>) {
        let e = t.epoch();
        if let Some((w, acc)) = self.w {
            // [FT write same epoch]
            if w == e {
                return;
            }
            // [FT write-write race]
            if w.tid != t.tid && !w.leq(&t.vc) {
                races.push(Race {
                    prev: acc,
                    what: "write-write",
                });
            }
        }
        match &self.r {
            Reads::None => {}
            // [FT read-write race]
            Reads::Epoch(r, acc) => {
                if r.tid != t.tid && !r.leq(&t.vc) {
                    races.push(Race {
                        prev: *acc,
                        what: "read-write",
                    });
                }
            }
            // [FT shared-read-write race], one per unordered reader
            Reads::Shared(v) => {
                for (u, x) in v.iter().enumerate() {
                    if let Some((c, acc)) = x
                        && *c > t.vc.get(u as u32)
                    {
                        races.push(Race {
                            prev: *acc,
                            what: "read-write",
                        });
                    }
                }
            }
        }
        // [FT write exclusive / write shared]: FT2 keeps a shared read state.
        self.w = Some((e, cur));
    }
}

fn set(v: &mut Vec<Option<(u32, Acc)>>, tid: u32, clock: u32, acc: Acc) {
    let i = tid as usize;
    if v.len() <= i {
        v.resize(i + 1, None);
    }
    v[i] = Some((clock, acc));
}
