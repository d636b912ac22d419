//! Brute-force oracle for conflict serializability of transactions (Velodrome's
//! atomicity, and SingleTrack's external serializability with
//! [`TxRule::SingleTrack`]). Independent of `crate::txgraph`: it enumerates serial orders
//! of the transactions and checks conflict equivalence directly.
//!
//! Definitions (SingleTrack ESOP'09 §1.2–1.4): operations are every event except thread
//! start/end, allocation, method enter/exit, and begin/end of the *other* kind of block
//! (`begin` and `end` are operations of their transaction in the paper's model, so an
//! empty block between a fork and a join of another transaction still counts). Two operations
//! conflict if they are by the same thread, access the same variable (volatile or not)
//! and one writes, both operate on the same lock, one is `fork(t,u)` or `join(t,u)` and
//! the other is by `u` (or is the fork resp. join of the same `u`), or they are an
//! arrival at and a departure from the same barrier episode. A trace is serializable iff
//! some serial order of its transactions puts the earlier operation's transaction first
//! for every conflicting pair of operations of different transactions.

use hashbrown::HashSet;

use crate::event::{OwnedEvent, OwnedKind, Spec, Tid};

/// How operations are grouped into transactions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TxRule {
    /// Outermost `atomic` block of one thread; everything else unary.
    Velodrome,
    /// Outermost `deterministic` block plus every thread forked (transitively) inside
    /// it; everything else unary.
    SingleTrack,
}

/// The transaction of each event (`None` for events that are not operations).
#[derive(Clone, Debug)]
pub struct TxAssignment {
    pub txn_of: Vec<Option<usize>>,
    pub count: usize,
    /// The block transactions, in order of their `begin` (SingleTrack numbers
    /// transactions this way too), as indices into `txn_of`'s id space.
    pub blocks: Vec<usize>,
}

/// Whether an event is an operation other than a block's begin/end (see the module doc).
pub fn is_op(k: &OwnedKind) -> bool {
    !matches!(
        k,
        OwnedKind::Begin { .. }
            | OwnedKind::End { .. }
            | OwnedKind::ThreadStart
            | OwnedKind::ThreadEnd
            | OwnedKind::Alloc { .. }
            | OwnedKind::Enter { .. }
            | OwnedKind::Exit { .. }
    )
}

#[derive(Clone, Default)]
struct Member {
    txn: Option<usize>,
    depth: u32,
    owner: bool,
}

/// Group the operations of `events` into transactions.
pub fn assign(events: &[OwnedEvent], rule: TxRule) -> TxAssignment {
    let spec = match rule {
        TxRule::Velodrome => Spec::Atomic,
        TxRule::SingleTrack => Spec::Deterministic,
    };
    let mut threads: hashbrown::HashMap<Tid, Member> = hashbrown::HashMap::new();
    let mut txn_of = Vec::with_capacity(events.len());
    let mut count = 0;
    let mut blocks = Vec::new();
    for ev in events {
        let m = threads.entry(ev.tid).or_default();
        let mut this = None;
        match &ev.kind {
            OwnedKind::Begin { spec: s } if *s == spec => {
                if m.txn.is_none() {
                    m.txn = Some(count);
                    blocks.push(count);
                    count += 1;
                    m.owner = true;
                }
                m.depth += 1;
                this = m.txn;
            }
            OwnedKind::End { spec: s } if *s == spec => {
                this = m.txn;
                if m.depth > 0 {
                    m.depth -= 1;
                    if m.depth == 0 && m.owner {
                        m.txn = None;
                        m.owner = false;
                    }
                }
            }
            k if is_op(k) => {
                this = Some(m.txn.unwrap_or_else(|| {
                    count += 1;
                    count - 1
                }));
                if let (OwnedKind::Fork { child, .. }, TxRule::SingleTrack, Some(x)) =
                    (k, rule, m.txn)
                {
                    threads.insert(
                        *child,
                        Member {
                            txn: Some(x),
                            depth: 0,
                            owner: false,
                        },
                    );
                }
            }
            _ => {}
        }
        txn_of.push(this);
    }
    TxAssignment {
        txn_of,
        count,
        blocks,
    }
}

/// Whether `a` (earlier) and `b` (later) conflict (see the module doc).
pub fn conflict(a: &OwnedEvent, b: &OwnedEvent) -> bool {
    use OwnedKind as K;
    if a.tid == b.tid {
        return true;
    }
    let loc = |k: &K| match k {
        K::Read { loc } | K::VolatileRead { loc } => Some((*loc, false)),
        K::Write { loc, .. } | K::VolatileWrite { loc, .. } => Some((*loc, true)),
        _ => None,
    };
    if let (Some((x, wa)), Some((y, wb))) = (loc(&a.kind), loc(&b.kind)) {
        return x == y && (wa || wb);
    }
    let lock = |k: &K| match k {
        K::Acquire { lock } | K::Release { lock } => Some(*lock),
        _ => None,
    };
    if let (Some(m), Some(n)) = (lock(&a.kind), lock(&b.kind)) {
        return m == n;
    }
    match (&a.kind, &b.kind) {
        (K::Fork { child, .. }, _) if *child == b.tid => true,
        (_, K::Join { child }) if *child == a.tid => true,
        (K::Fork { child: u, .. }, K::Join { child: v }) => u == v,
        (
            K::BarrierEnter {
                barrier: x,
                generation: g,
                ..
            },
            K::BarrierExit {
                barrier: y,
                generation: h,
                ..
            },
        ) => x == y && g == h,
        _ => false,
    }
}

/// Transactions that must precede each transaction in every equivalent serial trace of
/// the first `len` events: `must[x]` holds y when an operation of y conflicts with, and
/// comes before, an operation of x. Only transactions with operations in the prefix are
/// listed in the second result.
fn constraints(
    events: &[OwnedEvent],
    a: &TxAssignment,
    len: usize,
) -> (Vec<HashSet<usize>>, Vec<usize>) {
    let mut must: Vec<HashSet<usize>> = vec![HashSet::new(); a.count];
    let ops: Vec<usize> = (0..len).filter(|&i| a.txn_of[i].is_some()).collect();
    let mut present: Vec<usize> = Vec::new();
    for (k, &j) in ops.iter().enumerate() {
        let tj = a.txn_of[j].expect("op");
        if !present.contains(&tj) {
            present.push(tj);
        }
        for &i in &ops[..k] {
            let ti = a.txn_of[i].expect("op");
            if ti != tj && conflict(&events[i], &events[j]) {
                must[tj].insert(ti);
            }
        }
    }
    (must, present)
}

/// Transactions up to which every permutation is tried.
const ENUMERATE_UP_TO: usize = 7;

/// Whether the first `len` events are serializable: some serial order of the
/// transactions puts, for every conflicting pair, the earlier operation's transaction
/// first. Up to [`ENUMERATE_UP_TO`] transactions every permutation is tried; beyond,
/// serial orders are built front to back taking any transaction whose required
/// predecessors are all placed — complete by the exchange argument (if some order of
/// the rest works, moving such a transaction to its front keeps every constraint), so
/// nothing is lost by not backtracking. A unit test checks the two agree.
pub fn serializable_prefix(events: &[OwnedEvent], a: &TxAssignment, len: usize) -> bool {
    let (must, present) = constraints(events, a, len);
    if present.len() <= ENUMERATE_UP_TO {
        some_permutation(&must, &present)
    } else {
        front_to_back(&must, &present)
    }
}

/// Try every order of `present` (Heap's algorithm).
fn some_permutation(must: &[HashSet<usize>], present: &[usize]) -> bool {
    let mut order = present.to_vec();
    let n = order.len();
    let consistent = |order: &[usize]| {
        order
            .iter()
            .enumerate()
            .all(|(k, x)| must[*x].iter().all(|y| order[..k].contains(y)))
    };
    if consistent(&order) {
        return true;
    }
    let mut c = vec![0usize; n];
    let mut i = 0;
    while i < n {
        if c[i] < i {
            let j = if i % 2 == 0 { 0 } else { c[i] };
            order.swap(j, i);
            if consistent(&order) {
                return true;
            }
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    false
}

fn front_to_back(must: &[HashSet<usize>], present: &[usize]) -> bool {
    let mut placed: HashSet<usize> = HashSet::new();
    while placed.len() < present.len() {
        let next = present
            .iter()
            .find(|x| !placed.contains(*x) && must[**x].iter().all(|y| placed.contains(y)));
        match next {
            Some(x) => placed.insert(*x),
            None => return false,
        };
    }
    true
}

/// The `index` of the event that ends the shortest non-serializable prefix, if any
/// (serializability of prefixes is monotone, so a binary search suffices).
pub fn first_violation(events: &[OwnedEvent], rule: TxRule) -> Option<u64> {
    let a = assign(events, rule);
    if serializable_prefix(events, &a, events.len()) {
        return None;
    }
    let (mut lo, mut hi) = (0, events.len()); // prefix lo serializable, hi not
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if serializable_prefix(events, &a, mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(events[hi - 1].index)
}

/// Velodrome's verdict: the first event at which the trace stops being atomic.
pub fn atomicity_first_violation(events: &[OwnedEvent]) -> Option<u64> {
    first_violation(events, TxRule::Velodrome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The shortcut beyond [`ENUMERATE_UP_TO`] agrees with trying every permutation.
    #[test]
    fn front_to_back_agrees_with_enumeration() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut both = [0; 2];
        for _ in 0..3000 {
            let n = rng.random_range(1..=6);
            let mut must = vec![HashSet::new(); n];
            for _ in 0..rng.random_range(0..=n + 2) {
                let (x, y) = (rng.random_range(0..n), rng.random_range(0..n));
                if x != y {
                    must[x].insert(y);
                }
            }
            let present: Vec<usize> = (0..n).collect();
            let want = some_permutation(&must, &present);
            assert_eq!(front_to_back(&must, &present), want, "{must:?}");
            both[want as usize] += 1;
        }
        assert!(both[0] > 100 && both[1] > 100, "{both:?}");
    }
}
