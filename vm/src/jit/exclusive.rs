//! FT2's [read exclusive] and [write exclusive] rules in generated code
//! (`analyses::pass::InlineCheck::FastTrack`), in the case where they cannot find a
//! race: the location's `W` and `R` are each 0, an epoch of this thread or one
//! ordered before it by its vector clock, `R` not shared, and the thread's call
//! context is the one of its current stack. Then, under the cell's lock (a
//! compare-and-swap of `W`, with `R` checked again under it), the thread's epoch and
//! the packed site are stored as the pass's rule would.
//!
//! The rule is long (two ownership tests, the vector-clock compare, the lock and
//! the stores): a copy at a site about doubles its code, and the compile, which a
//! run pays before the program starts, grows with the code. A site reaches it only
//! where its same-epoch test misses. So BigFoot's checks, which miss rarely, call
//! one of two functions compiled once per program ([`rule`], for a read and for a
//! write) instead: a `preserve_all` call clobbers none of the caller's registers,
//! and the rule itself saves only the few it uses. `sparsematmult` and `moldyn`
//! under `bigfoot` ran 6–9% faster for it, `MdRunner.run` (moldyn) compiled to 28%
//! less code (`docs/performance-log.md`).
//!
//! A plain access keeps its copy: under `fasttrack` the rule is hot where a loop
//! streams over locations once per synchronization (sor, crypt: about one access
//! in two), and there the call cost more (sor 8%, crypt 6%) than the smaller code
//! saved elsewhere (and a read that pairs with its write, `translate::Pair`,
//! applies the write's rule in its copy too). Both are built from the same parts
//! here: [`lock_cell`], then the stores.

use cranelift::codegen::ir::{self, FuncRef, MemFlagsData};
use cranelift::prelude::*;
use cranelift_jit::JITModule;
use cranelift_module::Module;

use analyses::pass::{
    FASTTRACK_COLD_BASE, FASTTRACK_COLD_INDEX, FASTTRACK_LOCKED, FASTTRACK_R_OFF,
    FASTTRACK_R_SID_OFF, FASTTRACK_W_OFF, FASTTRACK_W_SID_OFF,
};

use super::abi::{OFF_ANSWER, OFF_CTX_DEPTH, OFF_CTX_SID, OFF_DEPTH, OFF_EPOCH, OFF_FRAMES_LOW};
use super::translate::thread_field_mem;

const I64: ir::Type = types::I64;

/// Nonzero where the thread's call context is not the one of its current stack: a
/// call from below the current depth since the runtime last handed the stack to
/// the chain (`JitThread::ctx_word`).
pub fn ctx_moved(b: &mut FunctionBuilder, ctx: Value) -> Value {
    let m = MemFlagsData::trusted();
    let depth = b.ins().load(I64, m, ctx, OFF_DEPTH);
    let low = b.ins().load(I64, m, ctx, OFF_FRAMES_LOW);
    let synced = b.ins().load(I64, m, ctx, OFF_CTX_DEPTH);
    let x = b.ins().bxor(depth, low);
    let y = b.ins().bxor(depth, synced);
    b.ins().bor(x, y)
}

/// The cold word of FastTrack's hot cell at `cell` for the key `key`
/// (`analyses::pass::FASTTRACK_COLD_BASE`), as an address and the offset from it
/// (for the loads' and stores' immediate).
pub fn cold_word(b: &mut FunctionBuilder, cell: Value, key: Value) -> (Value, i32) {
    let back = b.ins().band_imm_s(key, FASTTRACK_COLD_INDEX as i64);
    (b.ins().isub(cell, back), FASTTRACK_COLD_BASE)
}

/// The compact site `site | ctx << 16` (`analyses::pass::fasttrack_sid`) as the
/// `u32` the cold word holds, from the thread's `ctx_sid` and the site.
pub fn packed_site(b: &mut FunctionBuilder, ctx_sid: Value, site: Value) -> Value {
    let packed = b.ins().bor(ctx_sid, site);
    b.ins().ireduce(types::I32, packed)
}

/// The rule's tests and lock on the cell at `cell`, for the thread (context `ctx`,
/// packed epoch `e`) whose same-epoch test loaded `first` (`W` for a write, `R` for
/// a read): every case where the rule does not apply jumps to `call`, with the cell
/// as it was. Otherwise it leaves the builder where the cell's `W` is locked and `R`
/// is as it was read, and returns `W` as read: the caller stores the rule's
/// words, the store of `W` last (it releases the lock). `ordered` is the stub of
/// `Rt::Ordered` that keeps every register (`translate::keeper`): its answer comes
/// back in the thread's `answer`.
#[allow(clippy::too_many_arguments)]
pub fn lock_cell(
    b: &mut FunctionBuilder,
    ctx: Value,
    ordered: FuncRef,
    cell: Value,
    e: Value,
    first: Value,
    is_write: bool,
    call: ir::Block,
) -> Value {
    let m = MemFlagsData::trusted();
    // The context must be the stack's (and so have a compact form: the runtime
    // sets no depth for one that has none, `JitThread::ctx_sid`).
    let moved = ctx_moved(b, ctx);
    let ctx_ok = b.create_block();
    b.ins().brif(moved, call, &[], ctx_ok, &[]);
    b.switch_to_block(ctx_ok);
    let (wv, rv) = if is_write {
        (first, b.ins().load(I64, m, cell, FASTTRACK_R_OFF))
    } else {
        (b.ins().load(I64, m, cell, FASTTRACK_W_OFF), first)
    };
    let tid = b.ins().ushr_imm_u(e, 32);
    let mut own = |v: Value| {
        let t = b.ins().ushr_imm_u(v, 32);
        let mine = b.ins().icmp(IntCC::Equal, t, tid);
        let none = b.ins().icmp_imm_s(IntCC::Equal, v, 0);
        b.ins().bor(mine, none)
    };
    let (w_own, r_own) = (own(wv), own(rv));
    let both = b.ins().band(w_own, r_own);
    let lock = b.create_block();
    let ordered_b = b.create_block();
    b.set_cold_block(ordered_b);
    b.ins().brif(both, lock, &[], ordered_b, &[]);
    // Else each of `W`, `R` own, none, or ordered before the thread by its vector
    // clock, decided by a small runtime function (no chain, no lock).
    b.switch_to_block(ordered_b);
    // The epoch word's address is a field no one writes after the thread starts.
    let ep = b.ins().load(I64, thread_field_mem(), ctx, OFF_EPOCH);
    b.ins().call(ordered, &[ctx, ep, wv, rv]);
    let ok = b.ins().load(I64, m, ctx, OFF_ANSWER);
    b.ins().brif(ok, lock, &[], call, &[]);
    b.switch_to_block(lock);
    let locked = b.ins().bor_imm_s(wv, FASTTRACK_LOCKED as i64);
    let w_addr = b.ins().iadd_imm_s(cell, i64::from(FASTTRACK_W_OFF));
    let old = b.ins().atomic_cas(m, w_addr, wv, locked);
    let got = b.ins().icmp(IntCC::Equal, old, wv);
    let held = b.create_block();
    b.ins().brif(got, held, &[], call, &[]);
    b.switch_to_block(held);
    let r_addr = b.ins().iadd_imm_s(cell, i64::from(FASTTRACK_R_OFF));
    let rv2 = b.ins().atomic_load(I64, m, r_addr);
    let same = b.ins().icmp(IntCC::Equal, rv2, rv);
    let (apply, unlock) = (b.create_block(), b.create_block());
    b.ins().brif(same, apply, &[], unlock, &[]);
    b.switch_to_block(unlock);
    b.ins().store(m, wv, cell, FASTTRACK_W_OFF);
    b.ins().jump(call, &[]);
    b.switch_to_block(apply);
    wv
}

/// The rule's stores for one access (no pair), after [`lock_cell`]: plain stores in
/// program order (x86-64 keeps it), the site and `R` before the store of `W` that
/// releases the lock, as `Locked`'s drop does. `wv` is the `W` [`lock_cell`]
/// returned; `sid` the access's [`packed_site`].
#[allow(clippy::too_many_arguments)]
pub fn store_rule(
    b: &mut FunctionBuilder,
    cell: Value,
    key: Value,
    e: Value,
    wv: Value,
    sid: Value,
    is_write: bool,
) {
    let m = MemFlagsData::trusted();
    let (cold, base) = cold_word(b, cell, key);
    if is_write {
        b.ins().store(m, sid, cold, base + FASTTRACK_W_SID_OFF);
        b.ins().store(m, e, cell, FASTTRACK_W_OFF);
    } else {
        b.ins().store(m, sid, cold, base + FASTTRACK_R_SID_OFF);
        b.ins().store(m, e, cell, FASTTRACK_R_OFF);
        b.ins().store(m, wv, cell, FASTTRACK_W_OFF);
    }
}

/// The signature of [`rule`]: `(ctx, cell, key, e, first, site)`, no result,
/// `preserve_all`.
pub fn rule_signature(module: &JITModule) -> ir::Signature {
    let mut sig = module.make_signature();
    sig.call_conv = isa::CallConv::PreserveAll;
    for _ in 0..6 {
        sig.params.push(AbiParam::new(I64));
    }
    sig
}

/// The rule for a read or a write (`is_write`) as a function of its own, called
/// where a site's same-epoch test misses: `(ctx, cell, key, e, first, site)` as
/// [`lock_cell`] and [`store_rule`] take them (`site` the access's site, unpacked).
/// It leaves 1 in the thread's `answer` where the rule applied (the cell holds the
/// access), 0 where the caller must deliver the access. A `preserve_all` function:
/// its call clobbers no register of its caller, and it saves only those it uses
/// (`ordered` keeps every register too).
pub fn rule(
    module: &mut JITModule,
    func: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
    is_write: bool,
    ordered: cranelift_module::FuncId,
) {
    func.signature = rule_signature(module);
    func.name = ir::UserFuncName::user(3, is_write as u32);
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let p = b.block_params(entry).to_vec();
    let (ctx, cell, key, e, first, site) = (p[0], p[1], p[2], p[3], p[4], p[5]);
    let ordered = module.declare_func_in_func(ordered, b.func);
    let m = MemFlagsData::trusted();
    let miss = b.create_block();
    let wv = lock_cell(&mut b, ctx, ordered, cell, e, first, is_write, miss);
    let ctx_sid = b.ins().load(I64, m, ctx, OFF_CTX_SID);
    let sid = packed_site(&mut b, ctx_sid, site);
    store_rule(&mut b, cell, key, e, wv, sid, is_write);
    let answer = |b: &mut FunctionBuilder, v: i64| {
        let v = b.ins().iconst(I64, v);
        b.ins().store(m, v, ctx, OFF_ANSWER);
        b.ins().return_(&[]);
    };
    answer(&mut b, 1);
    b.switch_to_block(miss);
    answer(&mut b, 0);
    b.seal_all_blocks();
    b.finalize(module.target_config());
}
