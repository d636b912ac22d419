//! Feeding the analysis chain from the running program: the run's side (the chain,
//! the names for reports, the striped locks of volatile accesses); each thread's side
//! is its [`crate::hook::Hook`].
//!
//! Exists only when a chain is active (`--tools none` ⇒ no bridge, no events, no
//! bookkeeping). Both tiers build events and deliver them through the thread's hook;
//! the event mapping is documented on each call site in `interp.rs`.

use std::sync::Arc;

use analyses::{Chain, Loc, ObjId};
use parking_lot::{Mutex, MutexGuard};

use crate::env::VmEnv;

const STRIPES: usize = 64;

pub struct Bridge {
    pub chain: Chain,
    pub env: Arc<VmEnv>,
    /// Whether plain reads and writes are delivered: false only when every pass of
    /// the chain is `bigfoot`, which checks the placed checks instead (the program
    /// then runs with no access hooks at all).
    pub plain_accesses: bool,
    /// By function id: whether its calls deliver `Enter`/`Exit`
    /// (`analyses::Chain::wants_frames_of`).
    pub frames_of: Vec<bool>,
    /// By function id: whether a call of it may skip both when its receiver is the
    /// thread's nested-call word (`analyses::Chain::nested_call_word`): an instance
    /// method, not synchronized, with no reference argument besides the receiver and
    /// no reference result, that neither acquires nor releases a monitor, also
    /// through its calls (`lang::bigfoot::sync_summaries`).
    pub elidable: Vec<bool>,
    /// By function id: whether a call of it may record its frame in the thread's
    /// lazy frames instead of delivering `Enter`/`Exit`
    /// (`analyses::Chain::lazy_frames_of`): an instance method, not synchronized,
    /// `deterministic` or `atomic`, with no reference argument besides the receiver
    /// and no reference result, whose events only the pass with the lazy frames
    /// takes.
    pub lazy: Vec<bool>,
    stripes: Vec<Mutex<()>>,
}

impl Bridge {
    pub fn new(chain: Chain, env: Arc<VmEnv>) -> Bridge {
        let prog = &env.image.program;
        let funcs = prog.funcs.len();
        let sync = lang::bigfoot::sync_summaries(prog);
        // An instance method, not synchronized, whose `Enter`/`Exit` carry no
        // reference: no argument besides the receiver, no result.
        let plain_call = |f: &lang::ir::Function| {
            f.kind != lang::ir::FuncKind::Static
                && !f.is_synchronized
                && !f.ret.is_ref()
                && (1..f.num_params as usize).all(|p| !f.locals[p].ty.is_ref())
        };
        let elidable = prog
            .funcs
            .iter()
            .zip(&sync)
            .map(|(f, s)| plain_call(f) && *s == (false, false))
            .collect();
        let lazy = prog
            .funcs
            .iter()
            .enumerate()
            .map(|(id, f)| {
                plain_call(f)
                    && !f.is_deterministic
                    && !f.is_atomic
                    && chain.lazy_frames_of(analyses::MethodId(id as u32))
            })
            .collect();
        Bridge {
            elidable,
            lazy,
            plain_accesses: chain.pass_names().iter().any(|n| *n != "bigfoot"),
            frames_of: (0..funcs)
                .map(|f| chain.wants_frames_of(analyses::MethodId(f as u32)))
                .collect(),
            chain,
            env,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    /// The lock that makes a volatile access atomic with its event
    /// ([`crate::hook::Hook::load_volatile`], [`crate::hook::Hook::store_volatile`]).
    #[inline]
    pub(crate) fn volatile_lock(&self, loc: Loc) -> MutexGuard<'_, ()> {
        let k = loc.key();
        let i = ((k >> 3) ^ (k >> 11)) as usize % STRIPES;
        self.stripes[i].lock()
    }
}

/// `Some(obj)` for a non-null reference stored in a reference-typed slot.
#[inline]
pub fn ref_value(is_ref: bool, v: u64) -> Option<ObjId> {
    if is_ref && v != 0 {
        Some(ObjId(v))
    } else {
        None
    }
}
