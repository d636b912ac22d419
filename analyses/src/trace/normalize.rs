//! Well-formedness of a trace (what the analyses rely on) and the thread start/end
//! events the chain needs. Shared by the STD reader and [`super::Trace::from_events`].

use hashbrown::HashMap;

use crate::event::{MethodId, ObjId, OwnedEvent, OwnedKind, SiteId, Spec, Tid};
use crate::tidmap::TidMap;

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Life {
    /// Forked, no event yet.
    Forked,
    Running,
    Ended,
    Joined,
}

#[derive(Debug)]
struct ThreadInfo {
    life: Life,
    specs: Vec<Spec>,
    methods: Vec<MethodId>,
    /// The barrier episode the thread is inside (entered, not yet departed).
    barrier: Option<(ObjId, u64)>,
}

/// The operations of [`Normalizer::push_simple`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimpleOp {
    Read,
    Write,
    Acquire,
    Release,
}

impl SimpleOp {
    /// The event kind on variable slot or lock `id`.
    #[inline]
    pub fn kind(self, id: u64) -> OwnedKind {
        let loc = crate::event::Loc {
            obj: super::VARS,
            slot: id as u32,
        };
        match self {
            SimpleOp::Read => OwnedKind::Read { loc },
            SimpleOp::Write => OwnedKind::Write { loc, value: None },
            SimpleOp::Acquire => OwnedKind::Acquire { lock: ObjId(id) },
            SimpleOp::Release => OwnedKind::Release { lock: ObjId(id) },
        }
    }
}

/// The holder of each held lock: a vector for the small, dense object ids of traces,
/// a map for larger ones.
#[derive(Default, Debug)]
struct Held {
    small: Vec<Option<Tid>>,
    large: HashMap<ObjId, Tid>,
}

const SMALL_OBJS: u64 = 1 << 16;

impl Held {
    fn get(&self, o: &ObjId) -> Option<&Tid> {
        if o.0 < SMALL_OBJS {
            self.small.get(o.0 as usize).and_then(Option::as_ref)
        } else {
            self.large.get(o)
        }
    }
    fn insert(&mut self, o: ObjId, t: Tid) {
        if o.0 < SMALL_OBJS {
            let i = o.0 as usize;
            if self.small.len() <= i {
                self.small.resize(i + 1, None);
            }
            self.small[i] = Some(t);
        } else {
            self.large.insert(o, t);
        }
    }
    fn remove(&mut self, o: &ObjId) {
        if o.0 < SMALL_OBJS {
            if let Some(h) = self.small.get_mut(o.0 as usize) {
                *h = None;
            }
        } else {
            self.large.remove(o);
        }
    }
    fn holds_any(&self, t: Tid) -> bool {
        self.small.contains(&Some(t)) || self.large.values().any(|&h| h == t)
    }
}

#[derive(Debug)]
struct Episode {
    parties: u32,
    entered: u32,
    exited: u32,
}

/// Validates events one at a time and emits them (plus inserted thread start/end
/// events) to an output vector. Errors are messages; the caller adds the line.
#[derive(Default, Debug)]
pub struct Normalizer {
    threads: TidMap<ThreadInfo>,
    /// Threads in order of first appearance (for the final thread ends).
    order: Vec<Tid>,
    held: Held,
    episodes: HashMap<(ObjId, u64), Episode>,
}

fn inserted(tid: Tid, kind: OwnedKind) -> OwnedEvent {
    OwnedEvent {
        tid,
        site: SiteId(0),
        index: 0,
        kind,
    }
}

impl Normalizer {
    pub fn new() -> Self {
        Self::default()
    }

    fn add(&mut self, tid: Tid, life: Life) {
        self.threads.insert(
            tid,
            ThreadInfo {
                life,
                specs: Vec::new(),
                methods: Vec::new(),
                barrier: None,
            },
        );
        self.order.push(tid);
    }

    /// Make `tid` running, inserting its `ThreadStart` if needed.
    fn ensure_running(
        &mut self,
        tid: Tid,
        name: &dyn Fn(Tid) -> String,
        out: &mut Vec<OwnedEvent>,
    ) -> Result<(), String> {
        match self.threads.get(&tid).map(|t| t.life) {
            None => {
                self.add(tid, Life::Running);
                out.push(inserted(tid, OwnedKind::ThreadStart));
            }
            Some(Life::Forked) => {
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.life = Life::Running;
                }
                out.push(inserted(tid, OwnedKind::ThreadStart));
            }
            Some(Life::Running) => {}
            Some(Life::Ended) => return Err(format!("thread {} acts after its end", name(tid))),
            Some(Life::Joined) => {
                return Err(format!("thread {} acts after it was joined", name(tid)));
            }
        }
        Ok(())
    }

    /// The common case of [`Normalizer::push_named`], done in place: an access to
    /// variable slot `id`, or an acquire of free lock `id` or a release of lock `id`
    /// that the thread holds, by a running thread. Returns `false` (nothing done) for
    /// anything else, which [`Normalizer::push_named`] then handles from the same
    /// state.
    #[inline]
    pub fn push_simple(
        &mut self,
        tid: Tid,
        site: SiteId,
        index: u64,
        op: SimpleOp,
        id: u64,
        out: &mut Vec<OwnedEvent>,
    ) -> bool {
        // A full vector goes the slow way: with room known, the pushes below cannot
        // grow it, and the compiler can write each event straight into place instead
        // of building it on the stack and copying it (a store-forwarding stall).
        if out.len() == out.capacity()
            || !self
                .threads
                .get(&tid)
                .is_some_and(|i| i.life == Life::Running)
        {
            return false;
        }
        let lock = ObjId(id);
        match op {
            SimpleOp::Read | SimpleOp::Write => {}
            SimpleOp::Acquire if self.held.get(&lock).is_none() => self.held.insert(lock, tid),
            SimpleOp::Release if self.held.get(&lock) == Some(&tid) => self.held.remove(&lock),
            _ => return false,
        }
        // One push per kind, each of a value known whole at the push.
        let loc = crate::event::Loc {
            obj: super::VARS,
            slot: id as u32,
        };
        let ev = |kind| OwnedEvent {
            tid,
            site,
            index,
            kind,
        };
        match op {
            SimpleOp::Read => out.push(ev(OwnedKind::Read { loc })),
            SimpleOp::Write => out.push(ev(OwnedKind::Write { loc, value: None })),
            SimpleOp::Acquire => out.push(ev(OwnedKind::Acquire { lock })),
            SimpleOp::Release => out.push(ev(OwnedKind::Release { lock })),
        }
        true
    }

    /// Validate `ev` and append it (and any inserted events) to `out`.
    pub fn push(&mut self, ev: OwnedEvent, out: &mut Vec<OwnedEvent>) -> Result<(), String> {
        self.push_named(ev, &|t| format!("T{t}"), out)
    }

    /// As [`Self::push`], naming threads with `name` in messages.
    pub fn push_named(
        &mut self,
        ev: OwnedEvent,
        name: &dyn Fn(Tid) -> String,
        out: &mut Vec<OwnedEvent>,
    ) -> Result<(), String> {
        let t = ev.tid;
        if let OwnedKind::ThreadStart = ev.kind {
            match self.threads.get(&t).map(|i| i.life) {
                None => self.add(t, Life::Running),
                Some(Life::Forked) => {
                    if let Some(i) = self.threads.get_mut(&t) {
                        i.life = Life::Running;
                    }
                }
                Some(_) => return Err(format!("thread {} started twice", name(t))),
            }
            out.push(ev);
            return Ok(());
        }
        self.ensure_running(t, name, out)?;
        match &ev.kind {
            OwnedKind::Acquire { lock } => {
                if let Some(&h) = self.held.get(lock) {
                    return Err(if h == t {
                        format!(
                            "thread {} acquires a lock it already holds (locks are not reentrant)",
                            name(t)
                        )
                    } else {
                        format!("acquire of a lock held by thread {}", name(h))
                    });
                }
                self.held.insert(*lock, t);
            }
            OwnedKind::Release { lock } => match self.held.get(lock) {
                Some(&h) if h == t => {
                    self.held.remove(lock);
                }
                Some(&h) => return Err(format!("release of a lock held by thread {}", name(h))),
                None => return Err("release of a lock that is not held".to_string()),
            },
            OwnedKind::Fork { child, .. } => {
                if *child == t {
                    return Err(format!("thread {} forks itself", name(t)));
                }
                if self.threads.contains_key(child) {
                    return Err(format!(
                        "fork of thread {} which already exists",
                        name(*child)
                    ));
                }
                self.add(*child, Life::Forked);
            }
            OwnedKind::Join { child } => {
                if *child == t {
                    return Err(format!("thread {} joins itself", name(t)));
                }
                match self.threads.get(child).map(|i| i.life) {
                    None => return Err(format!("join of unknown thread {}", name(*child))),
                    Some(Life::Joined) => {
                        return Err(format!("thread {} joined twice", name(*child)));
                    }
                    Some(life) => {
                        if life == Life::Forked {
                            out.push(inserted(*child, OwnedKind::ThreadStart));
                        }
                        if life != Life::Ended {
                            self.end_checks(*child, name)?;
                            out.push(inserted(*child, OwnedKind::ThreadEnd));
                        }
                        if let Some(i) = self.threads.get_mut(child) {
                            i.life = Life::Joined;
                        }
                    }
                }
            }
            OwnedKind::BarrierEnter {
                barrier,
                generation,
                parties,
            } => {
                if *parties == 0 {
                    return Err("barrier with 0 parties".to_string());
                }
                if let Some(i) = self.threads.get(&t)
                    && i.barrier.is_some()
                {
                    return Err(format!(
                        "thread {} enters a barrier while inside one",
                        name(t)
                    ));
                }
                let ep = self
                    .episodes
                    .entry((*barrier, *generation))
                    .or_insert(Episode {
                        parties: *parties,
                        entered: 0,
                        exited: 0,
                    });
                if ep.parties != *parties {
                    return Err(format!(
                        "barrier episode has {} parties, not {parties}",
                        ep.parties
                    ));
                }
                if ep.entered >= ep.parties || ep.exited > 0 {
                    return Err("arrival at a barrier episode that is already complete".to_string());
                }
                ep.entered += 1;
                if let Some(i) = self.threads.get_mut(&t) {
                    i.barrier = Some((*barrier, *generation));
                }
            }
            OwnedKind::BarrierExit {
                barrier,
                generation,
                parties,
            } => {
                let key = (*barrier, *generation);
                if self.threads.get(&t).and_then(|i| i.barrier) != Some(key) {
                    return Err(format!(
                        "thread {} leaves a barrier episode it did not enter",
                        name(t)
                    ));
                }
                let Some(ep) = self.episodes.get_mut(&key) else {
                    return Err("departure from an unknown barrier episode".to_string());
                };
                if ep.parties != *parties {
                    return Err(format!(
                        "barrier episode has {} parties, not {parties}",
                        ep.parties
                    ));
                }
                if ep.entered < ep.parties {
                    return Err(format!(
                        "departure before all parties arrived ({} of {})",
                        ep.entered, ep.parties
                    ));
                }
                ep.exited += 1;
                if let Some(i) = self.threads.get_mut(&t) {
                    i.barrier = None;
                }
            }
            OwnedKind::Enter { method, .. } => {
                if let Some(i) = self.threads.get_mut(&t) {
                    i.methods.push(*method);
                }
            }
            OwnedKind::Exit { method, .. } => {
                if let Some(i) = self.threads.get_mut(&t)
                    && i.methods.pop() != Some(*method)
                {
                    return Err("method exit does not match the innermost method entry".to_string());
                }
            }
            OwnedKind::Begin { spec } => {
                if let Some(i) = self.threads.get_mut(&t) {
                    i.specs.push(*spec);
                }
            }
            OwnedKind::End { spec } => {
                if let Some(i) = self.threads.get_mut(&t) {
                    match i.specs.pop() {
                        Some(s) if s == *spec => {}
                        Some(_) => return Err("end does not match the innermost begin".to_string()),
                        None => return Err("end without a matching begin".to_string()),
                    }
                }
            }
            OwnedKind::ThreadEnd => {
                self.end_checks(t, name)?;
                if let Some(i) = self.threads.get_mut(&t) {
                    i.life = Life::Ended;
                }
            }
            OwnedKind::Read { .. }
            | OwnedKind::Check { .. }
            | OwnedKind::Write { .. }
            | OwnedKind::VolatileRead { .. }
            | OwnedKind::VolatileWrite { .. }
            | OwnedKind::Alloc { .. }
            | OwnedKind::ThreadStart => {}
        }
        out.push(ev);
        Ok(())
    }

    /// A thread may not end (or be joined) while it holds a lock or waits at a barrier.
    fn end_checks(&self, t: Tid, name: &dyn Fn(Tid) -> String) -> Result<(), String> {
        if self.held.holds_any(t) {
            return Err(format!("thread {} ends while holding a lock", name(t)));
        }
        if self.threads.get(&t).is_some_and(|i| i.barrier.is_some()) {
            return Err(format!("thread {} ends inside a barrier", name(t)));
        }
        Ok(())
    }

    /// End of the trace: a `ThreadEnd` for every thread that has not ended (forked
    /// threads that never ran get a start first).
    pub fn finish(&mut self, out: &mut Vec<OwnedEvent>) {
        for &tid in &self.order {
            let Some(i) = self.threads.get_mut(&tid) else {
                continue;
            };
            match i.life {
                Life::Forked => {
                    out.push(inserted(tid, OwnedKind::ThreadStart));
                    out.push(inserted(tid, OwnedKind::ThreadEnd));
                }
                Life::Running => out.push(inserted(tid, OwnedKind::ThreadEnd)),
                Life::Ended | Life::Joined => continue,
            }
            i.life = Life::Ended;
        }
    }
}
