//! Brute-force oracles for SingleTrack's two properties (ESOP'09 §1.4), straight from the
//! definitions and independent of the pass:
//! - conflict freedom: build the deterministic-synchronization happens-before relation
//!   explicitly (program order, fork → the child's events, the child's events → join,
//!   barrier arrivals → departures of the same episode; *not* locks or volatiles), then
//!   check every conflicting pair of operations of one transaction (same variable and a
//!   write, or the same lock) is ordered by it;
//! - external serializability: [`super::oracle_atomicity`] with transactions that
//!   include the threads forked inside them.

use std::collections::BTreeSet;

use hashbrown::HashMap;

use crate::event::{OwnedEvent, OwnedKind, Tid};
use crate::passes::singletrack::cf::{Target, Xid};
use crate::testing::oracle_atomicity::{TxRule, assign, first_violation};

/// The first event at which the trace stops being externally serializable.
pub fn serializability_first_violation(events: &[OwnedEvent]) -> Option<u64> {
    first_violation(events, TxRule::SingleTrack)
}

/// `before[j]`: the events that happen before event `j` by deterministic
/// synchronization, as a bit set over event positions.
fn happens_before(events: &[OwnedEvent]) -> Vec<Vec<u64>> {
    let words = events.len().div_ceil(64);
    let mut before: Vec<Vec<u64>> = Vec::with_capacity(events.len());
    let mut last_of: HashMap<Tid, usize> = HashMap::new();
    let mut fork_of: HashMap<Tid, usize> = HashMap::new();
    let mut arrivals: HashMap<(crate::event::ObjId, u64), Vec<usize>> = HashMap::new();
    for (j, ev) in events.iter().enumerate() {
        let mut preds: Vec<usize> = Vec::new();
        match last_of.get(&ev.tid) {
            Some(&p) => preds.push(p),
            None => preds.extend(fork_of.get(&ev.tid).copied()),
        }
        match &ev.kind {
            OwnedKind::Join { child } => preds.extend(last_of.get(child).copied()),
            OwnedKind::BarrierExit {
                barrier,
                generation,
                ..
            } => preds.extend(
                arrivals
                    .get(&(*barrier, *generation))
                    .into_iter()
                    .flatten()
                    .copied(),
            ),
            OwnedKind::BarrierEnter {
                barrier,
                generation,
                ..
            } => arrivals.entry((*barrier, *generation)).or_default().push(j),
            OwnedKind::Fork { child, .. } => {
                fork_of.insert(*child, j);
            }
            _ => {}
        }
        let mut set = vec![0u64; words];
        for p in preds {
            for (w, b) in set.iter_mut().zip(&before[p]) {
                *w |= *b;
            }
            set[p / 64] |= 1 << (p % 64);
        }
        before.push(set);
        last_of.insert(ev.tid, j);
    }
    before
}

/// What a conflicting operation touches, if it can conflict for conflict freedom.
fn target(k: &OwnedKind) -> Option<(Target, bool)> {
    match k {
        OwnedKind::Read { loc } | OwnedKind::VolatileRead { loc } => {
            Some((Target::Var(*loc), false))
        }
        OwnedKind::Write { loc, .. } | OwnedKind::VolatileWrite { loc, .. } => {
            Some((Target::Var(*loc), true))
        }
        OwnedKind::Acquire { lock } | OwnedKind::Release { lock } => {
            Some((Target::Lock(*lock), true))
        }
        _ => None,
    }
}

/// Every (target, transaction) with two conflicting operations of that transaction that
/// deterministic synchronization leaves unordered. Transactions are numbered by the order
/// of their outermost `begin`, as `singletrack` numbers them.
pub fn conflicts(events: &[OwnedEvent]) -> BTreeSet<(Target, Xid)> {
    let a = assign(events, TxRule::SingleTrack);
    let xid_of_txn: HashMap<usize, Xid> = a
        .blocks
        .iter()
        .enumerate()
        .map(|(k, &t)| (t, k as Xid))
        .collect();
    let before = happens_before(events);
    let mut out = BTreeSet::new();
    for j in 0..events.len() {
        let Some(xj) = a.txn_of[j].and_then(|t| xid_of_txn.get(&t)) else {
            continue;
        };
        let Some((tj, wj)) = target(&events[j].kind) else {
            continue;
        };
        for i in 0..j {
            if a.txn_of[i].and_then(|t| xid_of_txn.get(&t)) != Some(xj) {
                continue;
            }
            let Some((ti, wi)) = target(&events[i].kind) else {
                continue;
            };
            if ti == tj && (wi || wj) && before[j][i / 64] & (1 << (i % 64)) == 0 {
                out.insert((tj, *xj));
            }
        }
    }
    out
}
