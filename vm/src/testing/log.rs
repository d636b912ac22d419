//! An in-process event recorder: a pass that keeps every event it sees (owned) and a
//! line per event with objects named by [`Env::obj_label`] (deterministic across
//! tiers and runs under the same seed), then forwards everything.

use std::sync::Arc;

use analyses::env::Env;
use analyses::event::OwnedEvent;
use analyses::pass::Local;
use analyses::thread::ThreadState;
use analyses::{Event, EventKind, Flow, ObjId, Pass};
use parking_lot::Mutex;

/// What an [`EventLog`] collected.
#[derive(Default)]
pub struct Logged {
    pub events: Vec<OwnedEvent>,
    pub lines: Vec<String>,
}

pub struct EventLog {
    env: Arc<dyn Env>,
    out: Arc<Mutex<Logged>>,
}

impl EventLog {
    pub fn new(env: Arc<dyn Env>, out: Arc<Mutex<Logged>>) -> Self {
        EventLog { env, out }
    }

    fn push(&self, ev: &Event<'_>) {
        let line = self.line(ev);
        let mut out = self.out.lock();
        out.events.push(ev.to_owned());
        out.lines.push(line);
    }

    fn line(&self, ev: &Event<'_>) -> String {
        let o = |x: ObjId| self.env.obj_label(x);
        let oo = |x: Option<ObjId>| x.map_or("-".to_string(), o);
        let list = |xs: &[ObjId]| xs.iter().map(|x| o(*x)).collect::<Vec<_>>().join(",");
        let k = match ev.kind {
            EventKind::Read { loc } => format!("read {}.{}", o(loc.obj), loc.slot),
            EventKind::Write { loc, value } => {
                format!("write {}.{} {}", o(loc.obj), loc.slot, oo(value))
            }
            EventKind::VolatileRead { loc } => format!("vread {}.{}", o(loc.obj), loc.slot),
            EventKind::VolatileWrite { loc, value } => {
                format!("vwrite {}.{} {}", o(loc.obj), loc.slot, oo(value))
            }
            EventKind::Acquire { lock } => format!("acq {}", o(lock)),
            EventKind::Release { lock } => format!("rel {}", o(lock)),
            EventKind::Fork { child, handed } => format!("fork T{child} [{}]", list(handed)),
            EventKind::Join { child } => format!("join T{child}"),
            EventKind::BarrierEnter {
                barrier,
                generation,
                parties,
            } => format!("benter {} {generation} {parties}", o(barrier)),
            EventKind::BarrierExit {
                barrier,
                generation,
                parties,
            } => format!("bexit {} {generation} {parties}", o(barrier)),
            EventKind::Alloc { obj } => format!("alloc {}", o(obj)),
            EventKind::Enter {
                method,
                receiver,
                args,
            } => format!("enter m{} {} [{}]", method.0, oo(receiver), list(args)),
            EventKind::Exit { method, ret } => format!("exit m{} {}", method.0, oo(ret)),
            EventKind::Begin { spec } => format!("begin {spec:?}"),
            EventKind::End { spec } => format!("end {spec:?}"),
            EventKind::ThreadStart => "start".into(),
            EventKind::ThreadEnd => "end-thread".into(),
            EventKind::Check { loc, op, span } => {
                format!("check {op} {}.{} {span:?}", o(loc.obj), loc.slot)
            }
        };
        format!("T{} s{} {k}", ev.tid, ev.site.0)
    }
}

impl Pass for EventLog {
    fn name(&self) -> &'static str {
        "event-log"
    }
    fn access(&self, _t: &ThreadState, _l: &mut Local, ev: &Event<'_>) -> Flow {
        self.push(ev);
        Flow::Forward
    }
    fn event(&self, _t: &ThreadState, _l: &mut Local, ev: &Event<'_>) {
        self.push(ev);
    }
}
