//! Which classes are capsules in this run: the environment's answer
//! (`Env::is_capsule_class`: source annotations or `--capsules`), minus the classes
//! demoted by a violation during the run. Read on every access, so a lock-free table
//! of per-class states (classes are dense small indices); demotion is one atomic
//! store that every thread sees from then on.

use std::sync::atomic::{AtomicU8, Ordering};

use hashbrown::HashSet;
use parking_lot::Mutex;

use crate::env::Env;

const UNKNOWN: u8 = 0;
const CAPSULE: u8 = 1;
const PLAIN: u8 = 2;
const DEMOTED: u8 = 3;

/// Classes with an index below this are cached; others ask the environment.
const CACHED: usize = 4096;

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Status {
    /// A capsule class (not demoted).
    Capsule,
    /// Not a capsule class.
    Plain,
    /// Was a capsule class until a violation in this run.
    Demoted,
}

pub struct ClassTable {
    state: Box<[AtomicU8]>,
    demoted_overflow: Mutex<HashSet<u32>>,
}

impl Default for ClassTable {
    fn default() -> Self {
        ClassTable {
            state: (0..CACHED).map(|_| AtomicU8::new(UNKNOWN)).collect(),
            demoted_overflow: Mutex::new(HashSet::new()),
        }
    }
}

impl ClassTable {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn status(&self, env: &dyn Env, class: u32) -> Status {
        let Some(slot) = self.state.get(class as usize) else {
            return if self.demoted_overflow.lock().contains(&class) {
                Status::Demoted
            } else if env.is_capsule_class(class) {
                Status::Capsule
            } else {
                Status::Plain
            };
        };
        let s = match slot.load(Ordering::Acquire) {
            UNKNOWN => {
                let fresh = if env.is_capsule_class(class) {
                    CAPSULE
                } else {
                    PLAIN
                };
                // Never overwrite a demotion that happened meanwhile.
                match slot.compare_exchange(UNKNOWN, fresh, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => fresh,
                    Err(now) => now,
                }
            }
            s => s,
        };
        match s {
            CAPSULE => Status::Capsule,
            DEMOTED => Status::Demoted,
            _ => Status::Plain,
        }
    }

    #[inline]
    pub fn is_capsule(&self, env: &dyn Env, class: u32) -> bool {
        self.status(env, class) == Status::Capsule
    }

    /// Demote a capsule class; true the first time (the caller then reports).
    pub fn demote(&self, class: u32) -> bool {
        match self.state.get(class as usize) {
            Some(slot) => slot.swap(DEMOTED, Ordering::AcqRel) != DEMOTED,
            None => self.demoted_overflow.lock().insert(class),
        }
    }
}
