//! The graph engine: nodes are transactions, edges are happens-before between them.
//!
//! - Incremental cycle detection by dynamic topological order (Pearce & Kelly,
//!   "A dynamic topological sort algorithm for directed acyclic graphs", JEA 2006): every
//!   node carries a position `ord` in a topological order of the current DAG; an edge
//!   `x → y` with `ord[x] < ord[y]` needs no search at all, otherwise a forward search
//!   from `y` bounded by `ord[x]` finds either `x` (a cycle) or the set to reorder.
//! - An edge that would close a cycle is reported and *not inserted*, so the graph stays
//!   a DAG (later cycles that need that edge are not reported: only the first cycle
//!   through it is).
//! - Garbage collection (SingleTrack, ESOP'09 §4): a node is *open* while some thread
//!   still executes in its transaction (`holders > 0`); callers only ever add edges *into*
//!   open nodes. A closed node without incoming edges can never gain one, so it can never
//!   lie on a cycle: it is deleted with its out-edges, which may make its successors
//!   collectable in turn. Handles carry a generation, so a handle to a deleted node reads
//!   back as ⊥ and edges from or to it are ignored — sound by the same argument.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hashbrown::HashMap;

use crate::passes::shadow::PageTable;

/// A generation-checked handle to a node.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct NodeId {
    idx: u32,
    generation: u32,
}

impl NodeId {
    /// The handle as one word (for compact storage; [`NodeId::from_bits`] gives it back).
    pub fn to_bits(self) -> u64 {
        u64::from(self.idx) | u64::from(self.generation) << 32
    }

    pub fn from_bits(bits: u64) -> NodeId {
        NodeId {
            idx: bits as u32,
            generation: (bits >> 32) as u32,
        }
    }
}

/// A cycle: `edges[i]` leads from `nodes[i]` to `nodes[(i + 1) % len]`. `edges[0]` is the
/// edge whose insertion was refused.
#[derive(Clone, Debug)]
pub struct Cycle<N, E> {
    pub nodes: Vec<N>,
    pub edges: Vec<E>,
}

/// What [`TxGraph::add_edge`] did.
#[derive(Debug)]
pub enum EdgeOutcome<N, E> {
    /// An endpoint was ⊥ (collected) or both were the same node.
    Ignored,
    /// The edge was already present.
    Existing,
    Added,
    /// The edge would close this cycle; it was not inserted.
    Cycle(Cycle<N, E>),
}

/// Counters for `--stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GraphStats {
    pub nodes_created: u64,
    pub nodes_collected: u64,
    pub live_nodes: u64,
    pub max_live_nodes: u64,
    pub edges_added: u64,
    pub live_edges: u64,
    /// Edge insertions that needed a bounded search (`ord[x] > ord[y]`).
    pub searches: u64,
    pub cycles: u64,
}

struct Node<N> {
    label: N,
    /// Position in the maintained topological order (unique among live nodes).
    ord: u64,
    /// Threads currently executing in this transaction.
    holders: u32,
    outs: Vec<u32>,
    ins: Vec<u32>,
}

struct Slot<N> {
    generation: u32,
    /// Search stamp and BFS parent (valid while `mark == TxGraph::stamp`).
    mark: u64,
    parent: u32,
    node: Option<Node<N>>,
}

/// A lock-free view of which nodes are live and which are open, for callers that decide
/// an operation without the graph (an access whose sources are all ⊥ or its own node
/// needs no edge). Per slot one word: `generation << 2 | live << 1 | open`, written by the graph's
/// owner, readable by anyone at any time. Both facts are monotonic for a handle (a
/// collected node never comes back; a closed node never reopens: only an open node gains
/// holders), so an answer read without the graph's lock stays true afterwards.
#[derive(Default)]
pub struct Liveness {
    words: PageTable<AtomicU64>,
    /// How many nodes are live (only the graph's owner writes it).
    count: LiveCount,
}

/// Read by every access of a thread outside transactions, written only when a node
/// is created or collected: a line of its own.
#[repr(align(128))]
#[derive(Default)]
struct LiveCount(AtomicU64);

impl Liveness {
    /// Whether no node is live (a lock-free view, as the per-node answers).
    #[inline]
    pub fn none_live(&self) -> bool {
        self.count.0.load(Ordering::Acquire) == 0
    }

    /// The address of the count of live nodes (a `u64`), for generated code that tests
    /// it as [`Liveness::none_live`] does.
    pub fn count_addr(&self) -> u64 {
        self.count.0.as_ptr() as u64
    }

    #[inline]
    fn word(&self, id: NodeId) -> u64 {
        self.words
            .get(u64::from(id.idx) << 3)
            .load(Ordering::Acquire)
    }

    fn set(&self, idx: u32, generation: u32, live: bool, open: bool) {
        let w = (u64::from(generation) << 2) | (u64::from(live) << 1) | u64::from(open);
        let slot = self.words.get(u64::from(idx) << 3);
        let was_live = slot.load(Ordering::Relaxed) & 2 != 0;
        if live != was_live {
            // Only the graph's owner sets: a load and a store are enough. A node comes
            // alive before a handle to it exists and is counted out after it is dead.
            let c = &self.count.0;
            let n = c.load(Ordering::Relaxed);
            c.store(if live { n + 1 } else { n - 1 }, Ordering::Release);
        }
        slot.store(w, Ordering::Release);
    }

    /// Whether the handle still names a node.
    #[inline]
    pub fn is_live(&self, id: NodeId) -> bool {
        self.word(id) >> 1 == (u64::from(id.generation) << 1) | 1
    }

    /// Whether the handle names a live node some thread still executes in.
    #[inline]
    pub fn is_open(&self, id: NodeId) -> bool {
        self.word(id) == (u64::from(id.generation) << 2) | 3
    }
}

pub struct TxGraph<N, E> {
    slots: Vec<Slot<N>>,
    live: Arc<Liveness>,
    free: Vec<u32>,
    edges: HashMap<(u32, u32), E>,
    next_ord: u64,
    stamp: u64,
    stats: GraphStats,
}

impl<N: Clone, E: Clone> Default for TxGraph<N, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<N: Clone, E: Clone> TxGraph<N, E> {
    pub fn new() -> Self {
        TxGraph {
            slots: Vec::new(),
            live: Arc::default(),
            free: Vec::new(),
            edges: HashMap::new(),
            next_ord: 0,
            stamp: 0,
            stats: GraphStats::default(),
        }
    }

    /// A new, open node (one holder: the thread that starts the transaction). It comes
    /// last in the topological order.
    pub fn add_node(&mut self, label: N) -> NodeId {
        let node = Node {
            label,
            ord: self.next_ord,
            holders: 1,
            outs: Vec::new(),
            ins: Vec::new(),
        };
        self.next_ord += 1;
        self.stats.nodes_created += 1;
        self.stats.live_nodes += 1;
        self.stats.max_live_nodes = self.stats.max_live_nodes.max(self.stats.live_nodes);
        let id = if let Some(idx) = self.free.pop() {
            let slot = &mut self.slots[idx as usize];
            slot.node = Some(node);
            NodeId {
                idx,
                generation: slot.generation,
            }
        } else {
            let idx = self.slots.len() as u32;
            self.slots.push(Slot {
                generation: 0,
                mark: 0,
                parent: u32::MAX,
                node: Some(node),
            });
            NodeId { idx, generation: 0 }
        };
        self.live.set(id.idx, id.generation, true, true);
        id
    }

    /// The lock-free liveness view of this graph (shared, kept up to date).
    pub fn liveness(&self) -> Arc<Liveness> {
        self.live.clone()
    }

    fn node(&self, id: NodeId) -> Option<&Node<N>> {
        let slot = self.slots.get(id.idx as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        slot.node.as_ref()
    }

    fn node_mut(&mut self, id: NodeId) -> Option<&mut Node<N>> {
        let slot = self.slots.get_mut(id.idx as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        slot.node.as_mut()
    }

    fn at(&self, idx: u32) -> &Node<N> {
        self.slots[idx as usize]
            .node
            .as_ref()
            .expect("edge endpoints are live")
    }

    fn at_mut(&mut self, idx: u32) -> &mut Node<N> {
        self.slots[idx as usize]
            .node
            .as_mut()
            .expect("edge endpoints are live")
    }

    /// Whether the handle still names a node (false: collected, i.e. ⊥).
    pub fn is_live(&self, id: NodeId) -> bool {
        self.node(id).is_some()
    }

    /// `Some(id)` if live, else ⊥.
    pub fn resolve(&self, id: Option<NodeId>) -> Option<NodeId> {
        id.filter(|i| self.is_live(*i))
    }

    pub fn label(&self, id: NodeId) -> Option<&N> {
        self.node(id).map(|n| &n.label)
    }

    pub fn is_open(&self, id: NodeId) -> bool {
        self.node(id).is_some_and(|n| n.holders > 0)
    }

    /// Another thread starts executing in the transaction (a child forked inside it).
    pub fn hold(&mut self, id: NodeId) {
        if let Some(n) = self.node_mut(id) {
            n.holders += 1;
        }
    }

    /// A thread stops executing in the transaction; the node may be collected.
    pub fn release(&mut self, id: NodeId) {
        if let Some(n) = self.node_mut(id) {
            n.holders = n.holders.saturating_sub(1);
            if n.holders == 0 {
                self.live.set(id.idx, id.generation, true, false);
            }
            self.collect_from(id.idx);
        }
    }

    /// Delete `idx` if it is closed and has no incoming edge, then its successors that
    /// become so.
    fn collect_from(&mut self, idx: u32) {
        let mut work = vec![idx];
        while let Some(i) = work.pop() {
            let collectable = self.slots[i as usize]
                .node
                .as_ref()
                .is_some_and(|n| n.holders == 0 && n.ins.is_empty());
            if !collectable {
                continue;
            }
            let slot = &mut self.slots[i as usize];
            let node = slot.node.take().expect("checked above");
            slot.generation = slot.generation.wrapping_add(1);
            self.live.set(i, slot.generation, false, false);
            self.free.push(i);
            self.stats.nodes_collected += 1;
            self.stats.live_nodes -= 1;
            for w in node.outs {
                self.edges.remove(&(i, w));
                self.stats.live_edges -= 1;
                let succ = self.at_mut(w);
                if let Some(p) = succ.ins.iter().position(|&x| x == i) {
                    succ.ins.swap_remove(p);
                }
                if succ.ins.is_empty() && succ.holders == 0 {
                    work.push(w);
                }
            }
        }
    }

    /// Insert `from → to` unless it closes a cycle (then the cycle is returned and the
    /// edge is not inserted). `to` must be open (see the module doc).
    pub fn add_edge(&mut self, from: NodeId, to: NodeId, tag: E) -> EdgeOutcome<N, E> {
        if from == to {
            return EdgeOutcome::Ignored;
        }
        let (Some(fx), Some(ty)) = (self.node(from), self.node(to)) else {
            return EdgeOutcome::Ignored;
        };
        debug_assert!(ty.holders > 0, "edge into a closed transaction");
        let (x, y) = (from.idx, to.idx);
        if self.edges.contains_key(&(x, y)) {
            return EdgeOutcome::Existing;
        }
        let (ub, lb) = (fx.ord, ty.ord);
        if lb < ub {
            self.stats.searches += 1;
            if let Some(cycle) = self.reorder_or_cycle(x, y, lb, ub, &tag) {
                self.stats.cycles += 1;
                return EdgeOutcome::Cycle(cycle);
            }
        }
        self.edges.insert((x, y), tag);
        self.at_mut(x).outs.push(y);
        self.at_mut(y).ins.push(x);
        self.stats.edges_added += 1;
        self.stats.live_edges += 1;
        EdgeOutcome::Added
    }

    fn mark(&mut self, idx: u32, parent: u32) {
        let s = &mut self.slots[idx as usize];
        s.mark = self.stamp;
        s.parent = parent;
    }

    fn marked(&self, idx: u32) -> bool {
        self.slots[idx as usize].mark == self.stamp
    }

    /// Pearce–Kelly for `x → y` with `ord[y] = lb < ub = ord[x]`: the forward region
    /// δF (reachable from y, ord < ub) and the backward region δB (reaching x,
    /// ord > lb); if x ∈ δF there is a cycle, else δB is moved before δF reusing their
    /// positions.
    fn reorder_or_cycle(
        &mut self,
        x: u32,
        y: u32,
        lb: u64,
        ub: u64,
        tag: &E,
    ) -> Option<Cycle<N, E>> {
        self.stamp += 1;
        // Forward, breadth-first so that the reported cycle is a shortest one.
        let mut delta_f = vec![y];
        self.mark(y, u32::MAX);
        let mut queue = VecDeque::from([y]);
        while let Some(n) = queue.pop_front() {
            for k in 0..self.at(n).outs.len() {
                let w = self.at(n).outs[k];
                if w == x {
                    return Some(self.cycle_through(x, n, tag));
                }
                if !self.marked(w) && self.at(w).ord < ub {
                    self.mark(w, n);
                    delta_f.push(w);
                    queue.push_back(w);
                }
            }
        }
        // Backward.
        let mut delta_b = vec![x];
        self.mark(x, u32::MAX);
        let mut stack = vec![x];
        while let Some(n) = stack.pop() {
            for k in 0..self.at(n).ins.len() {
                let w = self.at(n).ins[k];
                if !self.marked(w) && self.at(w).ord > lb {
                    self.mark(w, n);
                    delta_b.push(w);
                    stack.push(w);
                }
            }
        }
        // Reorder: δB (in its old order) then δF (in its old order) take the pooled
        // positions in increasing order.
        delta_b.sort_by_key(|&i| self.at(i).ord);
        delta_f.sort_by_key(|&i| self.at(i).ord);
        let mut pool: Vec<u64> = delta_b
            .iter()
            .chain(delta_f.iter())
            .map(|&i| self.at(i).ord)
            .collect();
        pool.sort_unstable();
        for (k, &i) in delta_b.iter().chain(delta_f.iter()).enumerate() {
            self.at_mut(i).ord = pool[k];
        }
        None
    }

    /// The cycle `x → y ⇝ n → x` found by the forward search (parents lead from `n`
    /// back to `y`).
    fn cycle_through(&self, x: u32, n: u32, tag: &E) -> Cycle<N, E> {
        let mut path = vec![n];
        let mut cur = n;
        while self.slots[cur as usize].parent != u32::MAX {
            cur = self.slots[cur as usize].parent;
            path.push(cur);
        }
        path.reverse(); // y … n
        let mut nodes = vec![self.at(x).label.clone()];
        let mut edges = vec![tag.clone()];
        let mut prev = x;
        for &p in &path {
            nodes.push(self.at(p).label.clone());
            if prev != x {
                edges.push(self.edges[&(prev, p)].clone());
            }
            prev = p;
        }
        edges.push(self.edges[&(n, x)].clone());
        Cycle { nodes, edges }
    }

    pub fn stats(&self) -> GraphStats {
        self.stats
    }

    pub fn live_nodes(&self) -> usize {
        self.stats.live_nodes as usize
    }

    pub fn live_edges(&self) -> usize {
        self.edges.len()
    }

    /// Whether `to` is reachable from `from` (tests and debugging; unbounded search).
    pub fn reaches(&self, from: NodeId, to: NodeId) -> bool {
        if !self.is_live(from) || !self.is_live(to) {
            return false;
        }
        let mut seen = hashbrown::HashSet::new();
        let mut stack = vec![from.idx];
        while let Some(n) = stack.pop() {
            if n == to.idx {
                return true;
            }
            if seen.insert(n) {
                stack.extend(self.at(n).outs.iter().copied());
            }
        }
        false
    }

    /// Check the invariants: `ord` is a topological order and edge lists agree (tests).
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut count = 0;
        for (i, s) in self.slots.iter().enumerate() {
            let id = NodeId {
                idx: i as u32,
                generation: s.generation,
            };
            let open = s.node.as_ref().is_some_and(|n| n.holders > 0);
            if self.live.is_live(id) != s.node.is_some() || self.live.is_open(id) != open {
                return Err(format!("node {i}: the lock-free liveness view disagrees"));
            }
            let Some(n) = &s.node else { continue };
            count += 1;
            for &w in &n.outs {
                let m = self.at(w);
                if m.ord <= n.ord {
                    return Err(format!("edge {i}→{w} against the order"));
                }
                if !m.ins.contains(&(i as u32)) || !self.edges.contains_key(&(i as u32, w)) {
                    return Err(format!("edge {i}→{w} missing from ins or the edge map"));
                }
            }
            if n.holders == 0 && n.ins.is_empty() {
                return Err(format!("node {i} is collectable but live"));
            }
        }
        if count != self.stats.live_nodes as usize
            || self.edges.len() != self.stats.live_edges as usize
        {
            return Err("live counters disagree".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type G = TxGraph<&'static str, u32>;

    #[test]
    fn finds_cycle_and_refuses_the_edge() {
        let mut g = G::new();
        let a = g.add_node("a");
        let b = g.add_node("b");
        let c = g.add_node("c");
        assert!(matches!(g.add_edge(a, b, 1), EdgeOutcome::Added));
        assert!(matches!(g.add_edge(b, c, 2), EdgeOutcome::Added));
        assert!(matches!(g.add_edge(a, b, 9), EdgeOutcome::Existing));
        match g.add_edge(c, a, 3) {
            EdgeOutcome::Cycle(cy) => {
                assert_eq!(cy.nodes, vec!["c", "a", "b"]);
                assert_eq!(cy.edges, vec![3, 1, 2]);
            }
            other => panic!("expected a cycle, got {other:?}"),
        }
        assert!(!g.reaches(c, a));
        g.check_invariants().unwrap();
    }

    #[test]
    fn reorders_backward_edges() {
        let mut g = G::new();
        let n: Vec<NodeId> = ["a", "b", "c", "d"].iter().map(|l| g.add_node(l)).collect();
        // d → a (against creation order), then c → d, then a → b: all acyclic.
        assert!(matches!(g.add_edge(n[3], n[0], 1), EdgeOutcome::Added));
        assert!(matches!(g.add_edge(n[2], n[3], 2), EdgeOutcome::Added));
        assert!(matches!(g.add_edge(n[0], n[1], 3), EdgeOutcome::Added));
        g.check_invariants().unwrap();
        // b → c closes c → d → a → b → c.
        assert!(matches!(g.add_edge(n[1], n[2], 4), EdgeOutcome::Cycle(_)));
        g.check_invariants().unwrap();
    }

    #[test]
    fn collects_closed_sources_and_cascades() {
        let mut g = G::new();
        let a = g.add_node("a");
        let b = g.add_node("b");
        let c = g.add_node("c");
        g.add_edge(a, b, 1);
        g.add_edge(b, c, 2);
        g.release(b); // b still has an incoming edge from the open a
        assert!(g.is_live(b));
        g.release(c);
        assert!(g.is_live(c));
        g.release(a); // a collected, then b, then c
        assert!(!g.is_live(a) && !g.is_live(b) && !g.is_live(c));
        assert_eq!(g.live_nodes(), 0);
        assert_eq!(g.live_edges(), 0);
        // A recycled slot does not revive old handles.
        let d = g.add_node("d");
        assert!(g.is_live(d) && !g.is_live(a) && !g.is_live(c));
        assert!(matches!(g.add_edge(a, d, 5), EdgeOutcome::Ignored));
        g.check_invariants().unwrap();
    }

    #[test]
    fn random_graphs_agree_with_reachability() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..300 {
            let mut g = G::new();
            let ids: Vec<NodeId> = (0..8).map(|_| g.add_node("n")).collect();
            for k in 0..20u32 {
                let (a, b) = (ids[rng.random_range(0..8)], ids[rng.random_range(0..8)]);
                let cyclic = a == b || g.reaches(b, a);
                match g.add_edge(a, b, k) {
                    EdgeOutcome::Cycle(cy) => {
                        assert!(cyclic && a != b);
                        assert_eq!(cy.nodes.len(), cy.edges.len());
                    }
                    EdgeOutcome::Ignored => assert_eq!(a, b),
                    EdgeOutcome::Added | EdgeOutcome::Existing => {
                        assert!(!cyclic && g.reaches(a, b));
                    }
                }
                g.check_invariants().unwrap();
            }
        }
    }
}
