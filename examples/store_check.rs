//! Reopens a store after a crash and reports what scripts/crash-rounds.sh checks: redb's
//! integrity check, the table counts, each session's nodes by kind and status and its runs,
//! and which of the nodes a killed process reported as committed are missing or shorter
//! than reported.
//!
//! `cargo run --release --example store_check -- STORE [EXPECTED]`
//!
//! EXPECTED holds one `NODE_ID BYTES` per line: the node must exist and its text must hold at
//! least BYTES bytes. Prints one JSON object; exits 0 when the integrity check passed and no
//! expected node is missing or short, 1 otherwise, 2 when the store cannot be opened.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::str::FromStr;

use glassbox::store::{NodeId, NodeStatus, Store};
use serde_json::json;

fn status_name(s: &NodeStatus) -> &'static str {
    match s {
        NodeStatus::Complete => "complete",
        NodeStatus::Streaming => "streaming",
        NodeStatus::Interrupted => "interrupted",
        NodeStatus::Failed { .. } => "failed",
    }
}

/// The `NODE_ID BYTES` lines of `path`, the largest BYTES per node.
fn expected(path: &str) -> Result<BTreeMap<NodeId, usize>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let mut parts = line.split_whitespace();
        let (Some(id), Some(bytes)) = (parts.next(), parts.next()) else {
            continue;
        };
        let id = NodeId::from_str(id).map_err(|e| format!("{path}:{}: {e}", i + 1))?;
        let bytes: usize = bytes
            .parse()
            .map_err(|e| format!("{path}:{}: {e}", i + 1))?;
        let slot = out.entry(id).or_insert(0);
        *slot = (*slot).max(bytes);
    }
    Ok(out)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: store_check STORE [EXPECTED]");
        return ExitCode::from(2);
    };
    let want = match args.get(1).map(|p| expected(p)).transpose() {
        Ok(w) => w.unwrap_or_default(),
        Err(e) => {
            eprintln!("store_check: {e}");
            return ExitCode::from(2);
        }
    };
    let mut store = match Store::open(std::path::Path::new(path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("store_check: cannot open {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let integrity = match store.check_integrity() {
        Ok(ok) => json!(ok),
        Err(e) => json!(e.to_string()),
    };
    let report = match gather(&store, &want) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("store_check: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let clean = integrity == json!(true)
        && report["missing"].as_array().is_some_and(Vec::is_empty)
        && report["short"].as_array().is_some_and(Vec::is_empty);
    let mut out = report;
    out["integrity"] = integrity;
    println!("{out}");
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn gather(
    store: &Store,
    want: &BTreeMap<NodeId, usize>,
) -> glassbox::store::Result<serde_json::Value> {
    let mut missing = Vec::new();
    let mut short = Vec::new();
    for (id, bytes) in want {
        match store.node(*id)? {
            None => missing.push(json!(id.to_string())),
            Some(n) if n.text.len() < *bytes => short.push(json!({
                "node": id.to_string(),
                "reported": bytes,
                "found": n.text.len(),
            })),
            Some(_) => {}
        }
    }
    let mut sessions = Vec::new();
    for s in store.sessions()? {
        let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
        let mut statuses: BTreeMap<&str, u64> = BTreeMap::new();
        let nodes = store.session_nodes(s.id)?;
        for n in &nodes {
            *kinds.entry(n.kind.as_str().to_string()).or_default() += 1;
            *statuses.entry(status_name(&n.status)).or_default() += 1;
        }
        let runs: Vec<_> = store
            .session_runs(s.id)?
            .iter()
            .map(|r| json!({"id": r.id.to_string(), "status": r.status}))
            .collect();
        sessions.push(json!({
            "id": s.id.to_string(),
            "nodes": nodes.len(),
            "kinds": kinds,
            "statuses": statuses,
            "runs": runs,
        }));
    }
    Ok(json!({
        "counts": store.counts()?,
        "expected": want.len(),
        "missing": missing,
        "short": short,
        "sessions": sessions,
    }))
}
