//! One run of a program: the loaded image, the scheduler, the analysis bridge, the
//! output, the limits, and the OS threads of the guest.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use parking_lot::Mutex;

use crate::Tid;
use crate::bridge::Bridge;
use crate::image::Image;
use crate::output::Output;
use crate::sched::Sched;

/// Stack of every guest OS thread: the interpreter keeps CapJava frames on the heap,
/// but the JIT will run guest calls on the native stack.
pub const THREAD_STACK_BYTES: usize = 64 << 20;

/// CapJava call-depth limit: deeper recursion is the runtime error "stack overflow".
pub const MAX_CALL_DEPTH: usize = 10_000;

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Executed basic blocks per thread.
    pub max_steps: u64,
    /// Threads ever created, main included.
    pub max_threads: u64,
    pub max_call_depth: usize,
}

pub struct Runtime {
    pub image: Arc<Image>,
    pub sched: Sched,
    pub seeded: bool,
    pub bridge: Option<Arc<Bridge>>,
    pub out: Output,
    pub limits: Limits,
    threads_created: AtomicU64,
    handles: Mutex<Vec<JoinHandle<()>>>,
    /// A reaped guest OS thread panicked (a VM bug).
    panicked: AtomicBool,
}

impl Runtime {
    pub fn new(
        image: Arc<Image>,
        seed: Option<u64>,
        bridge: Option<Arc<Bridge>>,
        out: Output,
        limits: Limits,
    ) -> Runtime {
        Runtime {
            sched: Sched::new(image.clone(), seed),
            image,
            seeded: seed.is_some(),
            bridge,
            out,
            limits,
            threads_created: AtomicU64::new(1),
            handles: Mutex::new(Vec::new()),
            panicked: AtomicBool::new(false),
        }
    }

    /// Count one more thread; false if that exceeds `--max-threads`.
    pub fn admit_thread(&self) -> bool {
        self.threads_created.fetch_add(1, Ordering::Relaxed) < self.limits.max_threads
    }

    /// Start an OS thread for guest thread `tid`.
    pub fn spawn(&self, tid: Tid, body: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let h = std::thread::Builder::new()
            .name(format!("T{tid}"))
            .stack_size(THREAD_STACK_BYTES)
            .spawn(body)?;
        let mut hs = self.handles.lock();
        // Reap threads that already ended, so fork-heavy programs do not keep every
        // finished thread's stack until the end of the run.
        if hs.len() >= 64 {
            let (done, live): (Vec<_>, Vec<_>) = hs.drain(..).partition(|h| h.is_finished());
            *hs = live;
            for d in done {
                if d.join().is_err() {
                    self.panicked.store(true, Ordering::Relaxed);
                }
            }
        }
        hs.push(h);
        Ok(())
    }

    /// Wait for every guest OS thread (also those started while waiting). Returns
    /// false if one of them panicked (a VM bug).
    pub fn join_all(&self) -> bool {
        let mut ok = !self.panicked.load(Ordering::Relaxed);
        loop {
            let h = self.handles.lock().pop();
            match h {
                Some(h) => ok &= h.join().is_ok(),
                None => return ok,
            }
        }
    }
}
