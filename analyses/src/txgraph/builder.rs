//! The rules that turn events into transactions and edges (SingleTrack's external
//! serializability analysis, Sadowski et al. ESOP'09 Fig. 5; Velodrome, Flanagan et al.
//! PLDI'08, is the same rules with a thread-local notion of transaction).
//!
//! State per thread `t`: `last[t]`, the node of the transaction that ran t's last
//! operation, and whether t is inside a transaction. Per location: the node of the last
//! write and, per thread, of the last read since it; per lock: the node of the last
//! release; per barrier episode: the nodes of the arrivals.
//!
//! Every operation of t with "sources" S (earlier conflicting operations' nodes) does:
//! - inside a transaction: an edge `s → last[t]` for each s ∈ S;
//! - outside (a *unary* transaction, `[XS OUTSIDE]`): a fresh node n with
//!   `last[t] → n` (program order) and `s → n`, then `last[t] = n`. If S has no live node
//!   besides `last[t]`, the operation is merged into `last[t]` instead (every path through
//!   n would pass through `last[t]` anyway; SingleTrack, ESOP'09 §4) — unless
//!   `last[t]` is still open (another thread runs in it), which could hide a cycle.
//!
//! | event | sources | afterwards |
//! |---|---|---|
//! | read x (also volatile) | last writer of x | `reader[x][t]` = target |
//! | write x (also volatile) | last writer, every reader since | `writer[x]` = target, readers cleared |
//! | acquire m | last release of m | |
//! | release m | | `unlock[m]` = target |
//! | fork(t,u) | | `last[u]` = target; with [`TxMode::children_join`] and t inside: u joins t's transaction |
//! | join(t,u) | `last[u]` | |
//! | barrier arrival | | the episode remembers target |
//! | barrier departure | every arrival of the episode | |
//! | begin (outermost) | `last[t]` → fresh block node | t inside |
//! | end (outermost, of the thread that began) | | t outside; the node may close |
//! | thread end | | a thread inside stops holding its node |
//!
//! A joined thread's state is dropped (thread ids are never reused). Shadow entries that
//! name only collected nodes are swept when the maps have doubled since the last sweep.
//!
//! Clearing the readers after a write is sound: they reach every later writer through
//! the new writer's node. Lock edges from the last release suffice because lock operations
//! alternate and the holder's program order links them.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::ctx::CtxId;
use crate::event::{Event, EventKind, Loc, ObjId, SiteId, Spec, Tid};
use crate::txgraph::graph::{Cycle, EdgeOutcome, GraphStats, Liveness, NodeId, TxGraph};

/// Which blocks are transactions and what forked threads do.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TxMode {
    /// `Begin`/`End` events with this spec delimit transactions; others are ignored.
    pub spec: Spec,
    /// SingleTrack: a thread forked inside a transaction belongs to it (shares its node,
    /// forever). Velodrome: it does not (its operations are unary transactions).
    pub children_join: bool,
}

impl TxMode {
    pub const SINGLETRACK: TxMode = TxMode {
        spec: Spec::Deterministic,
        children_join: true,
    };
    pub const VELODROME: TxMode = TxMode {
        spec: Spec::Atomic,
        children_join: false,
    };
}

/// A transaction, as shown in reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxInfo {
    /// The thread that began it (or performed the unary operation).
    pub tid: Tid,
    /// A block (begin … end) or a single operation outside every block.
    pub block: bool,
    /// `begin` for blocks, else the operation.
    pub op: &'static str,
    pub site: SiteId,
    pub ctx: CtxId,
    /// 1-based trace line of the begin (or the operation); 0 if unnumbered.
    pub event: u64,
}

/// Why an edge exists.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    ProgramOrder,
    Communication(Loc),
    Lock(ObjId),
    ForkJoin(Tid),
    Barrier(ObjId),
}

/// The operation that created an edge (performed by `tid`, in the edge's target).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeInfo {
    pub tid: Tid,
    pub op: &'static str,
    pub reason: Reason,
    pub site: SiteId,
    pub ctx: CtxId,
    pub event: u64,
}

/// A cycle found while processing one event (at most one per transaction: the first
/// cycle closed by an edge into it).
#[derive(Clone, Debug)]
pub struct Violation {
    pub cycle: Cycle<TxInfo, EdgeInfo>,
    /// The event's trace line (0 if unnumbered).
    pub event: u64,
}

#[derive(Default, Debug)]
struct ThreadTx {
    last: Option<NodeId>,
    inside: bool,
    /// Nesting depth of this thread's own begins.
    depth: u32,
    /// This thread began the transaction it is in (only then does its `end` close it).
    owner: bool,
}

struct Episode {
    arrivals: Vec<NodeId>,
    departed: u32,
}

/// The transactional happens-before graph of one run, fed event by event.
pub struct TxHb {
    mode: TxMode,
    graph: TxGraph<TxInfo, EdgeInfo>,
    threads: HashMap<Tid, ThreadTx>,
    writer: HashMap<Loc, NodeId>,
    readers: HashMap<Loc, Vec<(Tid, NodeId)>>,
    unlock: HashMap<ObjId, NodeId>,
    episodes: HashMap<(ObjId, u64), Episode>,
    /// Shadow entries at the last sweep (entries naming only ⊥ are swept when the maps
    /// have doubled since).
    swept_at: usize,
    /// Transactions already reported on a cycle.
    violated: hashbrown::HashSet<NodeId>,
    /// Reused buffers (no allocation per access).
    scratch_src: Vec<Option<NodeId>>,
    scratch_live: Vec<NodeId>,
}

fn op_name(kind: &EventKind<'_>) -> &'static str {
    match kind {
        EventKind::VolatileRead { .. } => "volatile read",
        EventKind::VolatileWrite { .. } => "volatile write",
        EventKind::BarrierEnter { .. } => "barrier arrival",
        EventKind::BarrierExit { .. } => "barrier departure",
        other => other.name(),
    }
}

impl TxHb {
    pub fn new(mode: TxMode) -> Self {
        TxHb {
            mode,
            graph: TxGraph::new(),
            threads: HashMap::new(),
            writer: HashMap::new(),
            readers: HashMap::new(),
            unlock: HashMap::new(),
            episodes: HashMap::new(),
            swept_at: 1024,
            violated: hashbrown::HashSet::new(),
            scratch_src: Vec::new(),
            scratch_live: Vec::new(),
        }
    }

    pub fn stats(&self) -> GraphStats {
        self.graph.stats()
    }

    pub fn live_nodes(&self) -> usize {
        self.graph.live_nodes()
    }

    /// Whether `t` is currently inside a transaction.
    pub fn inside(&self, t: Tid) -> bool {
        self.threads.get(&t).is_some_and(|th| th.inside)
    }

    /// Whether [`TxHb::event`] leaves the graph as it is for events of this kind:
    /// calls and allocations (its sweep only follows a change of its maps). A pass
    /// that shares the graph behind a lock skips them before taking it (a chain with
    /// `capsule` delivers every capsule method's `Enter` and `Exit`).
    pub fn ignores(kind: &EventKind<'_>) -> bool {
        matches!(
            kind,
            EventKind::Enter { .. } | EventKind::Exit { .. } | EventKind::Alloc { .. }
        )
    }

    /// Process one event of thread `ev.tid` whose call context is `ctx`; returns the
    /// cycles it closed (their edges are not inserted).
    pub fn event(&mut self, ev: &Event<'_>, ctx: CtxId) -> Vec<Violation> {
        let mut found = Vec::new();
        let t = ev.tid;
        match ev.kind {
            EventKind::Read { loc } | EventKind::VolatileRead { loc } => {
                let src = [self.writer.get(&loc).copied()];
                let target = self.op(ev, ctx, &src, Reason::Communication(loc), &mut found);
                if let Some(n) = target {
                    let rs = self.readers.entry(loc).or_default();
                    match rs.iter_mut().find(|(u, _)| *u == t) {
                        Some(e) => e.1 = n,
                        None => rs.push((t, n)),
                    }
                }
            }
            EventKind::Write { loc, .. } | EventKind::VolatileWrite { loc, .. } => {
                let mut src = std::mem::take(&mut self.scratch_src);
                src.clear();
                src.push(self.writer.get(&loc).copied());
                if let Some(rs) = self.readers.get(&loc) {
                    src.extend(rs.iter().map(|(_, n)| Some(*n)));
                }
                let target = self.op(ev, ctx, &src, Reason::Communication(loc), &mut found);
                self.scratch_src = src;
                match target {
                    Some(n) => self.writer.insert(loc, n),
                    None => self.writer.remove(&loc),
                };
                self.readers.remove(&loc);
            }
            EventKind::Acquire { lock } => {
                let src = [self.unlock.get(&lock).copied()];
                self.op(ev, ctx, &src, Reason::Lock(lock), &mut found);
            }
            EventKind::Release { lock } => {
                match self.op(ev, ctx, &[], Reason::Lock(lock), &mut found) {
                    Some(n) => self.unlock.insert(lock, n),
                    None => self.unlock.remove(&lock),
                };
            }
            EventKind::Fork { child, .. } => {
                let parent_inside = self.inside(t);
                if self.mode.children_join && parent_inside {
                    // [XS FORK IN]: the child runs in the same transaction, no edge.
                    let last = self.threads.get(&t).and_then(|th| th.last);
                    if let Some(n) = last {
                        self.graph.hold(n);
                    }
                    let c = self.threads.entry(child).or_default();
                    c.last = last;
                    c.inside = last.is_some();
                    c.depth = 0;
                    c.owner = false;
                } else {
                    let target = self.op(ev, ctx, &[], Reason::ForkJoin(child), &mut found);
                    self.threads.entry(child).or_default().last = target;
                }
            }
            EventKind::Join { child } => {
                let src = [self.threads.get(&child).and_then(|c| c.last)];
                self.op(ev, ctx, &src, Reason::ForkJoin(child), &mut found);
                // A joined thread never acts again (thread ids are never reused).
                self.threads.remove(&child);
            }
            EventKind::BarrierEnter {
                barrier,
                generation,
                ..
            } => {
                let target = self.op(ev, ctx, &[], Reason::Barrier(barrier), &mut found);
                let ep = self
                    .episodes
                    .entry((barrier, generation))
                    .or_insert_with(|| Episode {
                        arrivals: Vec::new(),
                        departed: 0,
                    });
                ep.arrivals.extend(target);
            }
            EventKind::BarrierExit {
                barrier,
                generation,
                parties,
            } => {
                let src: Vec<Option<NodeId>> = self
                    .episodes
                    .get(&(barrier, generation))
                    .map(|ep| ep.arrivals.iter().map(|n| Some(*n)).collect())
                    .unwrap_or_default();
                self.op(ev, ctx, &src, Reason::Barrier(barrier), &mut found);
                if let Some(ep) = self.episodes.get_mut(&(barrier, generation)) {
                    ep.departed += 1;
                    if ep.departed >= parties {
                        self.episodes.remove(&(barrier, generation));
                    }
                }
            }
            EventKind::Begin { spec } if spec == self.mode.spec => {
                self.begin(ev, ctx, &mut found);
            }
            EventKind::End { spec } if spec == self.mode.spec => {
                let th = self.threads.entry(t).or_default();
                if th.depth > 0 {
                    th.depth -= 1;
                    if th.depth == 0 && th.owner {
                        th.inside = false;
                        th.owner = false;
                        if let Some(n) = th.last {
                            self.graph.release(n);
                        }
                    }
                }
            }
            EventKind::ThreadEnd => {
                // [XS STOP]: a thread that stops no longer executes in its transaction.
                let th = self.threads.entry(t).or_default();
                if th.inside {
                    th.inside = false;
                    th.owner = false;
                    th.depth = 0;
                    if let Some(n) = th.last {
                        self.graph.release(n);
                    }
                }
            }
            _ => {}
        }
        self.maybe_sweep();
        found
    }

    /// `(inside, last[t])`: what [`decide_access`] needs of thread `t`. Only `t`'s own
    /// events change it (a fork sets the child's before the child acts).
    pub fn thread_view(&self, t: Tid) -> (bool, Option<NodeId>) {
        self.threads
            .get(&t)
            .map_or((false, None), |th| (th.inside, th.last))
    }

    /// The graph's lock-free liveness view (see [`decide_access`]).
    pub fn liveness(&self) -> Arc<Liveness> {
        self.graph.liveness()
    }

    /// A read or write of `loc` (also volatile) whose per-location state the caller
    /// keeps: `sources` are the last writer's and, for a write, the readers' nodes.
    /// Returns the node the access ran in (the caller stores it as described in the
    /// module doc) and the cycles it closed. Equivalent to [`TxHb::event`] on the same
    /// access with the same per-location state.
    pub fn access(
        &mut self,
        ev: &Event<'_>,
        ctx: CtxId,
        loc: Loc,
        sources: &[Option<NodeId>],
    ) -> (Option<NodeId>, Vec<Violation>) {
        let mut found = Vec::new();
        let n = self.op(ev, ctx, sources, Reason::Communication(loc), &mut found);
        (n, found)
    }

    /// [XS BEGIN] for the outermost begin; nested begins only count depth.
    fn begin(&mut self, ev: &Event<'_>, ctx: CtxId, found: &mut Vec<Violation>) {
        let t = ev.tid;
        let th = self.threads.entry(t).or_default();
        if th.inside {
            th.depth += 1;
            return;
        }
        let prev = th.last;
        let n = self.graph.add_node(TxInfo {
            tid: t,
            block: true,
            op: "begin",
            site: ev.site,
            ctx,
            event: ev.index,
        });
        let th = self.threads.get_mut(&t).expect("inserted above");
        th.last = Some(n);
        th.inside = true;
        th.owner = true;
        th.depth = 1;
        if let Some(p) = prev {
            let tag = self.tag(ev, ctx, Reason::ProgramOrder);
            self.add(p, n, tag, ev, found);
        }
    }

    fn tag(&self, ev: &Event<'_>, ctx: CtxId, reason: Reason) -> EdgeInfo {
        EdgeInfo {
            tid: ev.tid,
            op: op_name(&ev.kind),
            reason,
            site: ev.site,
            ctx,
            event: ev.index,
        }
    }

    fn add(
        &mut self,
        from: NodeId,
        to: NodeId,
        tag: EdgeInfo,
        ev: &Event<'_>,
        found: &mut Vec<Violation>,
    ) {
        // One report per transaction: later cycles closed into a transaction already
        // reported are refused silently (they would restate the same violation).
        if let EdgeOutcome::Cycle(cycle) = self.graph.add_edge(from, to, tag)
            && self.violated.insert(to)
        {
            found.push(Violation {
                cycle,
                event: ev.index,
            });
        }
    }

    /// One operation of `ev.tid` with the given sources; returns the node it ran in
    /// (⊥ if it can never be on a cycle).
    fn op(
        &mut self,
        ev: &Event<'_>,
        ctx: CtxId,
        sources: &[Option<NodeId>],
        reason: Reason,
        found: &mut Vec<Violation>,
    ) -> Option<NodeId> {
        let th = self.threads.entry(ev.tid).or_default();
        let (inside, last) = (th.inside, th.last);
        let last = self.graph.resolve(last);
        if inside {
            let target = last?;
            for s in sources.iter().flatten() {
                let tag = self.tag(ev, ctx, reason);
                self.add(*s, target, tag, ev, found);
            }
            return Some(target);
        }
        // [XS OUTSIDE]: a unary transaction, merged into last[t] when nothing else
        // reaches it.
        let mut live = std::mem::take(&mut self.scratch_live);
        live.clear();
        for s in sources.iter().flatten() {
            if Some(*s) != last && self.graph.is_live(*s) && !live.contains(s) {
                live.push(*s);
            }
        }
        // Merging into an open `last[t]` (a transaction another thread still runs in,
        // e.g. the parent's block after a fork) would turn a cycle through it into a
        // self-edge; a closed one never gains incoming edges, so nothing is lost.
        if live.is_empty() && !last.is_some_and(|l| self.graph.is_open(l)) {
            self.scratch_live = live;
            return last;
        }
        let n = self.graph.add_node(TxInfo {
            tid: ev.tid,
            block: false,
            op: op_name(&ev.kind),
            site: ev.site,
            ctx,
            event: ev.index,
        });
        if let Some(p) = last {
            let tag = self.tag(ev, ctx, Reason::ProgramOrder);
            self.add(p, n, tag, ev, found);
        }
        for &s in &live {
            let tag = self.tag(ev, ctx, reason);
            self.add(s, n, tag, ev, found);
        }
        self.scratch_live = live;
        self.threads.get_mut(&ev.tid).expect("inserted above").last = Some(n);
        self.graph.release(n);
        self.graph.resolve(Some(n))
    }

    /// Drop shadow entries that name only collected nodes, when the maps have doubled
    /// since the last sweep (amortized O(1) per event; keeps memory proportional to the
    /// live graph on long runs).
    fn maybe_sweep(&mut self) {
        let size = self.writer.len() + self.readers.len() + self.unlock.len() + self.violated.len();
        if size < 2 * self.swept_at {
            return;
        }
        let g = &self.graph;
        self.violated.retain(|n| g.is_live(*n));
        self.writer.retain(|_, n| g.is_live(*n));
        self.unlock.retain(|_, n| g.is_live(*n));
        self.readers.retain(|_, rs| {
            rs.retain(|(_, n)| g.is_live(*n));
            !rs.is_empty()
        });
        let size = self.writer.len() + self.readers.len() + self.unlock.len() + self.violated.len();
        self.swept_at = size.max(1024);
    }

    /// The graph's invariants (tests): see [`TxGraph::check_invariants`].
    pub fn check_graph(&self) -> Result<(), String> {
        self.graph.check_invariants()
    }

    /// Shadow entries currently held (tests: memory stays bounded).
    pub fn shadow_entries(&self) -> usize {
        self.writer.len() + self.readers.len() + self.unlock.len() + self.episodes.len()
    }
}

/// Decide an access of a thread with `(inside, last)` ([`TxHb::thread_view`]) from the
/// lock-free [`Liveness`] view alone, when it needs neither an edge nor a node: every
/// live source is the node it runs in. Returns that node (⊥ if none), or `None` when
/// the graph must decide ([`TxHb::access`]). Exactly [`TxHb::access`]'s answer in
/// that case: inside, edges from ⊥ or from the target itself are ignored; outside,
/// the operation merges into `last[t]` when no other live source reaches it and
/// `last[t]` is closed. Both facts only ever become true for good (see [`Liveness`]),
/// so the answer holds whenever the graph's owner looks next.
#[inline]
pub fn decide_access(
    live: &Liveness,
    inside: bool,
    last: Option<NodeId>,
    sources: impl IntoIterator<Item = NodeId>,
) -> Option<Option<NodeId>> {
    let last = last.filter(|l| live.is_live(*l));
    if inside && last.is_none() {
        return Some(None);
    }
    for s in sources {
        if Some(s) != last && live.is_live(s) {
            return None;
        }
    }
    if !inside && last.is_some_and(|l| live.is_open(l)) {
        return None;
    }
    Some(last)
}
