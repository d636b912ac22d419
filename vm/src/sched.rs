//! Threads' run states, blocking and waking, deadlock detection, and the two
//! schedulers.
//!
//! All blocking goes through one bookkeeping lock (the [`World`]): a thread that
//! blocks records why under the lock and sleeps on its own condition variable; a
//! waker marks the wakee runnable under the same lock *before* signalling it. So the
//! count of blocked threads is exact, and "every live thread is blocked" is a real
//! deadlock, detected at the moment the last thread blocks (no timeouts).
//!
//! Schedulers:
//! - `os`: every guest thread runs in parallel; [`Sched::point`] is a no-op.
//! - `seeded:SEED`: one guest thread runs at a time (it holds the *baton*,
//!   `Baton::current`). Scheduling points — where a seeded RNG may hand the baton to
//!   another runnable thread — are, in every tier: before each heap access (field,
//!   static, array element; not `length`), each allocation (`new` object, array,
//!   barrier), each call, fork, join, monitor enter/exit, wait, notify and barrier
//!   await. A thread that blocks hands the baton on; deadlock = no runnable thread.
//!   Same program + seed ⇒ same interleaving, same output, same events.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hashbrown::HashMap;
use lang::ir::SiteId;
use parking_lot::{Condvar, Mutex, MutexGuard};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::Tid;
use crate::error::{ErrorKind, RuntimeError, StackFrame, render_stack};
use crate::heap;
use crate::image::Image;
use crate::layout;

/// The program is stopping (an error was recorded with [`Sched::fail`], or another
/// thread failed): unwind the current thread without further events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop;

/// Under `seeded`, the chance of switching threads at a scheduling point is 1 in this.
const SWITCH_ONE_IN: u32 = 4;

/// What a blocked thread waits for.
#[derive(Clone, Debug)]
pub enum Blocked {
    Monitor { obj: u64 },
    Wait { obj: u64 },
    Join { child: Tid },
    Barrier { obj: u64, generation: u64 },
}

#[derive(Clone, Debug)]
pub struct BlockInfo {
    pub what: Blocked,
    pub site: SiteId,
    pub stack: Vec<StackFrame>,
}

enum State {
    Runnable,
    Blocked(BlockInfo),
    Finished,
}

struct Slot {
    state: State,
    cv: Arc<Condvar>,
    joiners: Vec<Tid>,
}

struct Baton {
    rng: ChaCha8Rng,
    current: Tid,
}

/// Everything about blocking, under one lock.
pub struct World {
    threads: Vec<Slot>,
    live: usize,
    blocked: usize,
    /// Threads blocked entering a monitor, by object.
    pub entry: HashMap<u64, VecDeque<Tid>>,
    /// Threads in `wait()`, by object.
    pub waitsets: HashMap<u64, VecDeque<Tid>>,
    /// Threads waiting for a barrier episode to complete, by barrier.
    pub barrier_waiters: HashMap<u64, Vec<Tid>>,
    baton: Option<Baton>,
}

impl World {
    /// Mark `t` runnable (it was blocked) and signal it.
    pub fn wake(&mut self, t: Tid) {
        let s = &mut self.threads[t as usize];
        if let State::Blocked(_) = s.state {
            s.state = State::Runnable;
            self.blocked -= 1;
            s.cv.notify_one();
        }
    }

    fn runnable(&self) -> Vec<Tid> {
        (0..self.threads.len())
            .filter(|&i| matches!(self.threads[i].state, State::Runnable))
            .map(|i| i as Tid)
            .collect()
    }

    /// Seeded: hand the baton to a random runnable thread; false if there is none.
    fn pass_baton(&mut self) -> bool {
        let r = self.runnable();
        let Some(b) = self.baton.as_mut() else {
            return true;
        };
        if r.is_empty() {
            return false;
        }
        let next = r[b.rng.random_range(0..r.len())];
        b.current = next;
        self.threads[next as usize].cv.notify_one();
        true
    }
}

pub struct Sched {
    world: Mutex<World>,
    /// `seeded`: fixed at construction (the baton lives in the world).
    seeded: bool,
    abort: AtomicBool,
    error: Mutex<Option<RuntimeError>>,
    image: Arc<Image>,
}

impl Sched {
    /// A scheduler with the main thread (tid 0) registered and running.
    pub fn new(image: Arc<Image>, seed: Option<u64>) -> Sched {
        let world = World {
            threads: vec![Slot {
                state: State::Runnable,
                cv: Arc::new(Condvar::new()),
                joiners: Vec::new(),
            }],
            live: 1,
            blocked: 0,
            entry: HashMap::new(),
            waitsets: HashMap::new(),
            barrier_waiters: HashMap::new(),
            baton: seed.map(|s| Baton {
                rng: ChaCha8Rng::seed_from_u64(s),
                current: 0,
            }),
        };
        Sched {
            seeded: seed.is_some(),
            world: Mutex::new(world),
            abort: AtomicBool::new(false),
            error: Mutex::new(None),
            image,
        }
    }

    pub fn is_seeded(&self) -> bool {
        self.seeded
    }

    pub fn lock(&self) -> MutexGuard<'_, World> {
        self.world.lock()
    }

    /// True once the program is stopping.
    #[inline]
    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    /// Record `err` (the first error wins) and stop every thread.
    pub fn fail(&self, err: RuntimeError) -> Stop {
        {
            let mut e = self.error.lock();
            if e.is_none() && !self.aborted() {
                *e = Some(err);
            }
        }
        let g = self.world.lock();
        self.abort_locked(&g);
        Stop
    }

    fn abort_locked(&self, g: &World) {
        self.abort.store(true, Ordering::SeqCst);
        for s in &g.threads {
            s.cv.notify_all();
        }
    }

    pub fn take_error(&self) -> Option<RuntimeError> {
        self.error.lock().take()
    }

    /// Number of threads registered so far (main included).
    pub fn thread_count(&self) -> usize {
        self.world.lock().threads.len()
    }

    /// Register a new runnable thread (before its OS thread starts).
    pub fn register(&self) -> Tid {
        let mut g = self.world.lock();
        let tid = g.threads.len() as Tid;
        g.threads.push(Slot {
            state: State::Runnable,
            cv: Arc::new(Condvar::new()),
            joiners: Vec::new(),
        });
        g.live += 1;
        tid
    }

    /// Sleep until `me` is runnable (and, seeded, holds the baton), or the program stops.
    fn wait_turn(&self, g: &mut MutexGuard<'_, World>, me: Tid) -> Result<(), Stop> {
        let cv = g.threads[me as usize].cv.clone();
        loop {
            if self.aborted() {
                return Err(Stop);
            }
            let mine = g.baton.as_ref().is_none_or(|b| b.current == me);
            if mine && matches!(g.threads[me as usize].state, State::Runnable) {
                return Ok(());
            }
            cv.wait(g);
        }
    }

    /// First action of a forked thread: seeded, wait for the baton.
    pub fn start(&self, me: Tid) -> Result<(), Stop> {
        let mut g = self.world.lock();
        self.wait_turn(&mut g, me)
    }

    /// A scheduling point (see the module doc). No-op under `os`.
    #[inline]
    pub fn point(&self, me: Tid, seeded: bool) -> Result<(), Stop> {
        if !seeded {
            return Ok(());
        }
        self.switch_point(me)
    }

    fn switch_point(&self, me: Tid) -> Result<(), Stop> {
        let mut g = self.world.lock();
        if self.aborted() {
            return Err(Stop);
        }
        let switch = match g.baton.as_mut() {
            Some(b) => b.rng.random_ratio(1, SWITCH_ONE_IN),
            None => false,
        };
        if switch {
            g.pass_baton();
            self.wait_turn(&mut g, me)?;
        }
        Ok(())
    }

    /// Block `me` for `info` (the caller registered it wherever its waker will find
    /// it, under this same lock). Returns when a waker made it runnable again.
    pub fn block(
        &self,
        g: &mut MutexGuard<'_, World>,
        me: Tid,
        info: BlockInfo,
    ) -> Result<(), Stop> {
        if self.aborted() {
            return Err(Stop);
        }
        g.threads[me as usize].state = State::Blocked(info);
        g.blocked += 1;
        let deadlock = if g.baton.is_some() {
            !g.pass_baton()
        } else {
            g.blocked == g.live
        };
        if deadlock {
            self.deadlock(g, Some(me));
            return Err(Stop);
        }
        self.wait_turn(g, me)
    }

    /// `me` ended: wake its joiners; seeded, pass the baton on.
    pub fn finish(&self, me: Tid) {
        let mut g = self.world.lock();
        g.threads[me as usize].state = State::Finished;
        g.live -= 1;
        let joiners = std::mem::take(&mut g.threads[me as usize].joiners);
        for j in joiners {
            g.wake(j);
        }
        if self.aborted() || g.live == 0 {
            return;
        }
        let deadlock = if g.baton.is_some() {
            !g.pass_baton()
        } else {
            g.blocked == g.live
        };
        if deadlock {
            self.deadlock(&g, None);
        }
    }

    /// `me` joins `child`: returns once `child` has ended.
    pub fn join(
        &self,
        me: Tid,
        child: Tid,
        site: SiteId,
        stack: &dyn Fn() -> Vec<StackFrame>,
    ) -> Result<(), Stop> {
        let mut g = self.world.lock();
        if matches!(g.threads[child as usize].state, State::Finished) {
            return Ok(());
        }
        g.threads[child as usize].joiners.push(me);
        let info = BlockInfo {
            what: Blocked::Join { child },
            site,
            stack: stack(),
        };
        self.block(&mut g, me, info)
    }

    /// Every live thread is blocked: record the deadlock error and stop.
    fn deadlock(&self, g: &World, me: Option<Tid>) {
        let program = &self.image.program;
        let mut notes = vec!["every live thread is blocked:".to_string()];
        let mut first: Option<(Tid, &BlockInfo)> = None;
        for (i, s) in g.threads.iter().enumerate() {
            if let State::Blocked(info) = &s.state {
                let tid = i as Tid;
                if first.is_none() || Some(tid) == me {
                    first = Some((tid, info));
                }
                notes.push(format!(
                    "T{tid} {} at {}",
                    self.describe(&info.what),
                    program.site_string(info.site)
                ));
                let st = render_stack(program, &info.stack, "    ");
                notes.extend(st.lines().map(str::to_string));
            }
        }
        let (tid, site, stack) = match first {
            Some((t, info)) => (t, info.site, info.stack.clone()),
            None => (me.unwrap_or(0), SiteId(0), Vec::new()),
        };
        let err = RuntimeError {
            kind: ErrorKind::Deadlock,
            detail: String::new(),
            tid,
            site,
            stack,
            notes,
        };
        {
            let mut e = self.error.lock();
            if e.is_none() {
                *e = Some(err);
            }
        }
        self.abort_locked(g);
    }

    fn describe(&self, b: &Blocked) -> String {
        let label = |o: u64| crate::env::obj_label(&self.image, o);
        match b {
            Blocked::Monitor { obj } => {
                let m = heap::load(*obj, layout::MONITOR);
                let owner = if m == 0 {
                    0
                } else {
                    heap::load(m, layout::MON_OWNER)
                };
                if owner == 0 {
                    format!("waits to acquire the monitor of {}", label(*obj))
                } else {
                    format!(
                        "waits to acquire the monitor of {} (held by T{})",
                        label(*obj),
                        owner - 1
                    )
                }
            }
            Blocked::Wait { obj } => format!("waits in wait() on {}", label(*obj)),
            Blocked::Join { child } => format!("waits to join T{child}"),
            Blocked::Barrier { obj, generation } => format!(
                "waits at barrier {} (episode {generation}, {} of {} arrived)",
                label(*obj),
                heap::load(*obj, layout::BARRIER_ARRIVED),
                heap::load(*obj, layout::BARRIER_PARTIES)
            ),
        }
    }
}
