//! Turning a cycle of the transactional happens-before graph into a warning.

use crate::env::Env;
use crate::event::Tid;
use crate::report::{AccessInfo, Warning, WarningKind};
use crate::txgraph::builder::{EdgeInfo, Reason, TxInfo, Violation};

fn some_event(e: u64) -> Option<u64> {
    (e > 0).then_some(e)
}

fn tx_text(env: &dyn Env, tx: &TxInfo, block_name: &str) -> String {
    // Positions, not trace lines, so online and offline reports read the same; the
    // JSON keeps the trace line in `event`.
    let at = env.site(tx.site).position;
    if tx.block {
        format!("{block_name} block of T{} begun at {at}", tx.tid)
    } else {
        format!("{} by T{} at {at}", tx.op, tx.tid)
    }
}

fn reason_text(env: &dyn Env, r: &Reason) -> String {
    match r {
        Reason::ProgramOrder => "program order".into(),
        Reason::Communication(loc) => env.loc_name(*loc).to_string(),
        Reason::Lock(m) => format!("lock {}", env.obj_label(*m)),
        Reason::ForkJoin(u) => format!("thread T{u}"),
        Reason::Barrier(b) => format!("barrier {}", env.obj_label(*b)),
    }
}

fn edge_text(env: &dyn Env, e: &EdgeInfo) -> String {
    let at = env.site(e.site).position;
    format!(
        "{} ({} by T{} at {at})",
        reason_text(env, &e.reason),
        e.op,
        e.tid
    )
}

fn tx_json(env: &dyn Env, tx: &TxInfo) -> serde_json::Value {
    let mut o = serde_json::json!({
        "thread": tx.tid,
        "block": tx.block,
        "op": tx.op,
        "site": env.site(tx.site).position,
    });
    if let Some(e) = some_event(tx.event) {
        o["event"] = e.into();
    }
    o
}

fn edge_json(env: &dyn Env, e: &EdgeInfo) -> serde_json::Value {
    let mut o = serde_json::json!({
        "thread": e.tid,
        "op": e.op,
        "via": reason_text(env, &e.reason),
        "site": env.site(e.site).position,
    });
    if let Some(ev) = some_event(e.event) {
        o["event"] = ev.into();
    }
    o
}

/// A warning for one cycle, listed from the transaction that received the closing
/// edge (the one whose serializability broke at this event): `transactions[i]` reaches
/// `transactions[i+1]` through `edges[i]`, and the last edge (the closing one) leads back
/// to `transactions[0]`. `accesses` are the transactions (their begin, or the single
/// operation of a unary transaction) followed by the operation that closed the cycle;
/// `message` spells the cycle out.
pub fn cycle_warning(
    kind: WarningKind,
    analysis: &'static str,
    block_name: &str,
    v: &Violation,
    env: &dyn Env,
) -> Warning {
    let cy = &v.cycle;
    // The engine lists the cycle from the closing edge's source; rotate by one.
    let n = cy.nodes.len();
    let nodes: Vec<&TxInfo> = (0..n).map(|i| &cy.nodes[(i + 1) % n]).collect();
    let edges: Vec<&EdgeInfo> = (0..n).map(|i| &cy.edges[(i + 1) % n]).collect();
    let mut w = Warning::new(kind, analysis);
    w.event = some_event(v.event);
    let access = |tid: Tid, op: String, site, ctx, event| AccessInfo {
        tid,
        op,
        site,
        ctx,
        event: some_event(event),
    };
    for tx in &nodes {
        let op = if tx.block {
            format!("begin {block_name}")
        } else {
            tx.op.to_string()
        };
        w.accesses
            .push(access(tx.tid, op, tx.site, tx.ctx, tx.event));
    }
    let closing = &cy.edges[0];
    w.accesses.push(access(
        closing.tid,
        closing.op.to_string(),
        closing.site,
        closing.ctx,
        closing.event,
    ));
    let mut msg = String::from("cycle in the transactional happens-before graph: ");
    for (tx, e) in nodes.iter().zip(&edges) {
        msg.push_str(&tx_text(env, tx, block_name));
        msg.push_str(" -> [");
        msg.push_str(&edge_text(env, e));
        msg.push_str("] -> ");
    }
    msg.push_str(&tx_text(env, nodes[0], block_name));
    w.message = msg;
    w.extra.insert(
        "transactions".into(),
        nodes
            .iter()
            .map(|t| tx_json(env, t))
            .collect::<Vec<_>>()
            .into(),
    );
    w.extra.insert(
        "edges".into(),
        edges
            .iter()
            .map(|e| edge_json(env, e))
            .collect::<Vec<_>>()
            .into(),
    );
    w
}
