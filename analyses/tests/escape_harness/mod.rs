//! Shared driver for the `escape` and `capsule` tests: runs hand-written event
//! sequences over a `MemEnv` heap through a chain `filters : recorder [: fasttrack]`,
//! performing each store after its `Write` event like the VM, and checks the accesses
//! that got through with a brute-force happens-before race oracle.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use analyses::env::Env;
use analyses::event::{Event, EventKind, Loc, MethodId, ObjId, SiteId, Tid};
use analyses::pass::{Flow, Local, Pass};
use analyses::passes::escape::mem::MemEnv;
use analyses::report::{Reported, WarningKind};
use analyses::thread::{ThreadCx, ThreadState};
use analyses::vc::VectorClock;
use analyses::{Chain, ChainOptions, Shared};
use parking_lot::Mutex;

/// One access that reached the recorder.
#[derive(Clone, Debug)]
pub struct Seen {
    pub tid: Tid,
    pub loc: Loc,
    pub write: bool,
    pub site: SiteId,
    pub index: u64,
    pub vc: VectorClock,
}

/// Records every access it sees; forwards everything.
struct Recorder(Arc<Mutex<Vec<Seen>>>);

impl Pass for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn access(&self, t: &ThreadState, _l: &mut Local, ev: &Event<'_>) -> Flow {
        let (loc, write) = match ev.kind {
            EventKind::Read { loc } => (loc, false),
            EventKind::Write { loc, .. } => (loc, true),
            _ => return Flow::Forward,
        };
        self.0.lock().push(Seen {
            tid: t.tid,
            loc,
            write,
            site: ev.site,
            index: ev.index,
            vc: t.vc.clone(),
        });
        Flow::Forward
    }
}

/// Locations with two conflicting accesses unordered by happens-before (`a` earlier
/// in the trace happens before `b` iff `C_a[tid a] <= C_b[tid a]`).
pub fn races(log: &[Seen]) -> BTreeSet<Loc> {
    let mut out = BTreeSet::new();
    for (j, b) in log.iter().enumerate() {
        for a in &log[..j] {
            if a.loc == b.loc
                && (a.write || b.write)
                && a.tid != b.tid
                && a.vc.get(a.tid) > b.vc.get(a.tid)
            {
                out.insert(a.loc);
            }
        }
    }
    out
}

/// The event index of the first access that races with an earlier one.
pub fn first_race(log: &[Seen]) -> Option<u64> {
    log.iter().enumerate().find_map(|(j, b)| {
        log[..j]
            .iter()
            .any(|a| {
                a.loc == b.loc
                    && (a.write || b.write)
                    && a.tid != b.tid
                    && a.vc.get(a.tid) > b.vc.get(a.tid)
            })
            .then_some(b.index)
    })
}

pub struct Sim {
    pub env: Arc<MemEnv>,
    pub chain: Chain,
    pub log: Arc<Mutex<Vec<Seen>>>,
    cxs: BTreeMap<Tid, ThreadCx>,
    index: u64,
}

impl Sim {
    /// `filters` (e.g. `["escape", "capsule"]`), then the recorder, then `fasttrack`.
    pub fn new(env: Arc<MemEnv>, filters: &[&str]) -> Sim {
        let shared = Shared::new(env.clone() as Arc<dyn Env>, ChainOptions::default());
        let mut passes: Vec<Box<dyn Pass>> = filters
            .iter()
            .map(|f| analyses::passes::make(f, &shared).expect("filter exists"))
            .collect();
        let log = Arc::new(Mutex::new(Vec::new()));
        passes.push(Box::new(Recorder(log.clone())));
        passes.push(analyses::passes::make("fasttrack", &shared).expect("fasttrack exists"));
        let chain = Chain::from_passes(passes, shared);
        let mut sim = Sim {
            env,
            chain,
            log,
            cxs: BTreeMap::new(),
            index: 0,
        };
        let cx = sim.chain.main_thread();
        sim.cxs.insert(0, cx);
        sim.deliver(0, 0, EventKind::ThreadStart);
        sim
    }

    fn deliver(&mut self, tid: Tid, site: u32, kind: EventKind<'_>) {
        self.index += 1;
        let ev = Event {
            tid,
            site: SiteId(site),
            index: self.index,
            kind,
        };
        let cx = self.cxs.get_mut(&tid).expect("thread started");
        self.chain.deliver(cx, &ev);
    }

    pub fn fork(&mut self, parent: Tid, child: Tid, handed: &[ObjId]) {
        self.index += 1;
        let index = self.index;
        let cx = self.cxs.get_mut(&parent).expect("parent started");
        let ccx = self.chain.fork(cx, child, SiteId(0), index, handed);
        self.cxs.insert(child, ccx);
        self.deliver(child, 0, EventKind::ThreadStart);
    }

    pub fn end(&mut self, tid: Tid) {
        self.deliver(tid, 0, EventKind::ThreadEnd);
    }

    pub fn join(&mut self, tid: Tid, child: Tid) {
        self.deliver(tid, 0, EventKind::Join { child });
    }

    pub fn alloc(&mut self, tid: Tid, class: u32) -> ObjId {
        let o = self.env.new_object(class);
        self.deliver(tid, 0, EventKind::Alloc { obj: o });
        o
    }

    pub fn alloc_array(&mut self, tid: Tid, len: usize) -> ObjId {
        let o = self.env.heap.alloc(None, len);
        self.deliver(tid, 0, EventKind::Alloc { obj: o });
        o
    }

    pub fn read(&mut self, tid: Tid, loc: Loc, site: u32) -> Option<ObjId> {
        self.deliver(tid, site, EventKind::Read { loc });
        self.env.heap.load(loc)
    }

    /// Deliver the event, then store (the VM's order).
    pub fn write(&mut self, tid: Tid, loc: Loc, value: Option<ObjId>, site: u32) {
        self.deliver(tid, site, EventKind::Write { loc, value });
        self.env.heap.store(loc, value);
    }

    pub fn vwrite(&mut self, tid: Tid, loc: Loc, value: Option<ObjId>, site: u32) {
        self.deliver(tid, site, EventKind::VolatileWrite { loc, value });
        self.env.heap.store(loc, value);
    }

    pub fn vread(&mut self, tid: Tid, loc: Loc, site: u32) -> Option<ObjId> {
        self.deliver(tid, site, EventKind::VolatileRead { loc });
        self.env.heap.load(loc)
    }

    pub fn acquire(&mut self, tid: Tid, lock: ObjId) {
        self.deliver(tid, 0, EventKind::Acquire { lock });
    }

    pub fn release(&mut self, tid: Tid, lock: ObjId) {
        self.deliver(tid, 0, EventKind::Release { lock });
    }

    pub fn enter(&mut self, tid: Tid, method: MethodId, receiver: Option<ObjId>, args: &[ObjId]) {
        self.deliver(
            tid,
            0,
            EventKind::Enter {
                method,
                receiver,
                args,
            },
        );
    }

    pub fn exit(&mut self, tid: Tid, method: MethodId, ret: Option<ObjId>) {
        self.deliver(tid, 0, EventKind::Exit { method, ret });
    }

    /// The first racing access that reached the recorder (its event index).
    pub fn first_race(&self) -> Option<u64> {
        first_race(&self.log.lock())
    }

    /// Accesses that reached the recorder.
    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().clone()
    }

    pub fn seen_sites(&self) -> BTreeSet<u32> {
        self.log.lock().iter().map(|s| s.site.0).collect()
    }

    /// Racy locations among the accesses that got through the filters.
    pub fn races(&self) -> BTreeSet<Loc> {
        races(&self.log.lock())
    }

    pub fn warnings(&self) -> Vec<Reported> {
        self.chain.warnings()
    }

    pub fn warnings_of(&self, kind: WarningKind) -> Vec<Reported> {
        self.warnings()
            .into_iter()
            .filter(|w| w.warning.kind == kind)
            .collect()
    }

    /// Locations `fasttrack` reported.
    pub fn fasttrack_races(&self) -> BTreeSet<Loc> {
        self.warnings_of(WarningKind::Race)
            .iter()
            .filter(|w| w.warning.analysis == "fasttrack")
            .filter_map(|w| w.warning.loc)
            .collect()
    }

    pub fn stats(&self) -> serde_json::Value {
        self.chain.stats_json()
    }
}

pub fn loc(obj: ObjId, slot: u32) -> Loc {
    Loc { obj, slot }
}
