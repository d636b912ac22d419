//! Other grammars for the same trace, for tests and fuzzing: property 3 must hold
//! whatever the grammar, so the analyses are also run on the trivial left chain
//! (`A[1,i] → A[1,i-1] e_i`, the trivial SLP of Kini, Mathur & Viswanathan, §2) and on random
//! bracketings with shared subtrees.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::event::OwnedEvent;
use crate::trace::TraceEnv;

use super::compress::{label_of, line_map};
use super::{Grammar, Item, Label, Sym};

fn terminals(events: &[OwnedEvent]) -> (Vec<Label>, Vec<u32>) {
    let mut map: HashMap<Label, u32> = HashMap::new();
    let mut labels = Vec::new();
    let ids = events
        .iter()
        .map(|e| {
            let l = label_of(e);
            *map.entry(l.clone()).or_insert_with(|| {
                labels.push(l);
                (labels.len() - 1) as u32
            })
        })
        .collect();
    (labels, ids)
}

fn file_events(events: &[OwnedEvent]) -> Vec<OwnedEvent> {
    events.iter().filter(|e| e.index != 0).cloned().collect()
}

/// The left chain over the file events of `events` (inserted events, index 0, are
/// skipped).
pub fn left_chain(events: &[OwnedEvent], env: Arc<TraceEnv>) -> Grammar {
    let evs = file_events(events);
    let (labels, ids) = terminals(&evs);
    let mut rules: Vec<Vec<Item>> = Vec::new();
    for (i, &t) in ids.iter().enumerate() {
        let term = Item {
            sym: Sym::T(t),
            count: 1,
        };
        rules.push(if i == 0 {
            vec![term]
        } else {
            vec![
                Item {
                    sym: Sym::R(i as u32 - 1),
                    count: 1,
                },
                term,
            ]
        });
    }
    if rules.is_empty() {
        rules.push(Vec::new());
    }
    Grammar::new(env, labels, rules, line_map(&evs)).expect("a left chain is well numbered")
}

/// A random bracketing of the file events of `events` into binary rules (seeded);
/// equal subtrees share one rule, and adjacent equal halves become runs.
pub fn bracketed(events: &[OwnedEvent], env: Arc<TraceEnv>, seed: u64) -> Grammar {
    shaped(events, env, seed, false)
}

/// As [`bracketed`], but the start rule is a list of random segments (1 to 8 events),
/// each bracketed: the start rule then has many multi-event items, as a compressed
/// trace that does not repeat has.
pub fn segmented(events: &[OwnedEvent], env: Arc<TraceEnv>, seed: u64) -> Grammar {
    shaped(events, env, seed, true)
}

fn shaped(events: &[OwnedEvent], env: Arc<TraceEnv>, seed: u64, segments: bool) -> Grammar {
    let evs = file_events(events);
    let (labels, ids) = terminals(&evs);
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut rules: Vec<Vec<Item>> = Vec::new();
    let mut shared: HashMap<Vec<Item>, u32> = HashMap::new();
    let mut root = Vec::new();
    let mut lo = 0;
    while lo < ids.len() {
        let hi = if segments {
            (lo + 1 + next(8)).min(ids.len())
        } else {
            ids.len()
        };
        root.push(tree(&ids[lo..hi], &mut next, &mut rules, &mut shared));
        lo = hi;
    }
    rules.push(root);
    Grammar::new(env, labels, rules, line_map(&evs)).expect("a bracketing is well numbered")
}

/// A random binary tree over `ids` (not empty), its rules added to `rules`.
fn tree(
    ids: &[u32],
    next: &mut dyn FnMut(usize) -> usize,
    rules: &mut Vec<Vec<Item>>,
    shared: &mut HashMap<Vec<Item>, u32>,
) -> Item {
    // Post-order over an explicit stack.
    enum Frame {
        Enter(usize, usize),
        Exit,
    }
    let mut stack = vec![Frame::Enter(0, ids.len())];
    let mut done: Vec<Item> = Vec::new();
    while let Some(f) = stack.pop() {
        match f {
            Frame::Enter(lo, hi) => {
                if hi - lo <= 1 {
                    done.push(Item {
                        sym: Sym::T(ids[lo]),
                        count: 1,
                    });
                    continue;
                }
                let mid = lo + 1 + next(hi - lo - 1);
                stack.push(Frame::Exit);
                stack.push(Frame::Enter(mid, hi));
                stack.push(Frame::Enter(lo, mid));
            }
            Frame::Exit => {
                let right = done.pop().expect("two children");
                let left = done.pop().expect("two children");
                let rhs = if left == right {
                    vec![Item {
                        sym: left.sym,
                        count: left.count * 2,
                    }]
                } else {
                    vec![left, right]
                };
                let r = *shared.entry(rhs.clone()).or_insert_with(|| {
                    rules.push(rhs);
                    (rules.len() - 1) as u32
                });
                done.push(Item {
                    sym: Sym::R(r),
                    count: 1,
                });
            }
        }
    }
    done.pop().expect("a tree")
}
