//! The ledger's store side: thoughts as `ledger_thought` nodes with `revises` and
//! `branches_from` edges, annotations, sessions, export/import and search. Synchronous (redb
//! commits are durable fsyncs); the server runs these on the blocking pool.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::LedgerError;
use super::args::{MAX_CORRECTION_CHARS, ThoughtArgs};
use crate::engines::transcript::TranscriptError;
use crate::engines::transcript::export as transcript_export;
use crate::store::{
    Edge, EdgeType, Node, NodeId, NodeType, Session, SessionId, SessionSource, Store, StoreError,
};

type Result<T, E = LedgerError> = std::result::Result<T, E>;

/// Where a thought is written.
#[derive(Clone, Debug)]
pub enum SessionTarget {
    /// A session that must already exist.
    Existing(SessionId),
    /// This session, created with the first thought written to it (if it is absent by then);
    /// an empty title becomes the first thought's opening words.
    Create(Session),
}

impl SessionTarget {
    /// The session's id.
    pub fn id(&self) -> SessionId {
        match self {
            SessionTarget::Existing(id) => *id,
            SessionTarget::Create(s) => s.id,
        }
    }
}

/// A ledger thought as read back from its node.
#[derive(Clone, Debug, PartialEq)]
pub struct ThoughtMeta {
    pub id: NodeId,
    pub number: u32,
    pub total: u32,
    pub next_needed: bool,
    pub branch_id: Option<String>,
    pub branch_from: Option<u32>,
    pub is_revision: bool,
    pub revises: Option<u32>,
    pub thought_type: Option<String>,
}

fn meta_u32(meta: &Map<String, Value>, key: &str) -> Option<u32> {
    meta.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

fn meta_str(meta: &Map<String, Value>, key: &str) -> Option<String> {
    meta.get(key).and_then(Value::as_str).map(str::to_string)
}

impl ThoughtMeta {
    /// The ledger fields of a `ledger_thought` node; `None` for other nodes.
    pub fn from_node(n: &Node) -> Option<Self> {
        if n.kind != NodeType::LedgerThought {
            return None;
        }
        let m = &n.meta;
        let number = meta_u32(m, "thoughtNumber").unwrap_or(0);
        Some(Self {
            id: n.id,
            number,
            total: meta_u32(m, "totalThoughts").unwrap_or(number),
            next_needed: m
                .get("nextThoughtNeeded")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            branch_id: meta_str(m, "branchId"),
            branch_from: meta_u32(m, "branchFromThought"),
            is_revision: m
                .get("isRevision")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            revises: meta_u32(m, "revisesThought"),
            thought_type: meta_str(m, "thoughtType"),
        })
    }
}

/// The latest thought numbered `n`, preferring the given branch, then the main chain, then
/// any other.
fn find_revised(existing: &[ThoughtMeta], n: u32, branch: Option<&str>) -> Option<NodeId> {
    let latest = |f: &dyn Fn(&ThoughtMeta) -> bool| {
        existing
            .iter()
            .rev()
            .find(|t| t.number == n && f(t))
            .map(|t| t.id)
    };
    latest(&|t| t.branch_id.as_deref() == branch)
        .or_else(|| latest(&|t| t.branch_id.is_none()))
        .or_else(|| latest(&|_| true))
}

/// The thought numbered `n` that a thought of `branch` branches from: outside that branch,
/// the main chain first.
fn find_origin(existing: &[ThoughtMeta], n: u32, branch: Option<&str>) -> Option<NodeId> {
    let outside = |t: &ThoughtMeta| branch.is_none() || t.branch_id.as_deref() != branch;
    let latest = |f: &dyn Fn(&ThoughtMeta) -> bool| {
        existing
            .iter()
            .rev()
            .find(|t| t.number == n && outside(t) && f(t))
            .map(|t| t.id)
    };
    latest(&|t| t.branch_id.is_none()).or_else(|| latest(&|_| true))
}

/// Branch ids in order of first appearance, counting only thoughts that name both a branch
/// id and the thought they branch from (the reference server's rule).
fn branch_ids<'a>(
    thoughts: impl Iterator<Item = (&'a Option<String>, Option<u32>)>,
) -> Vec<String> {
    let mut seen = Vec::new();
    for (id, from) in thoughts {
        if let (Some(id), Some(_)) = (id, from)
            && !seen.contains(id)
        {
            seen.push(id.clone());
        }
    }
    seen
}

/// What recording a thought produced.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub node: Node,
    pub session: SessionId,
    /// `totalThoughts` after raising it to the thought number.
    pub total_thoughts: u32,
    /// Ledger thoughts in the session, this one included.
    pub history_len: usize,
    /// Branch ids of the session, in order of first appearance.
    pub branches: Vec<String>,
    /// The node this thought revises (a `revises` edge points there).
    pub revises: Option<NodeId>,
    /// The node this thought branches from (a `branches_from` edge points there).
    pub branches_from: Option<NodeId>,
    /// Why an edge the arguments asked for was not made.
    pub warnings: Vec<String>,
}

/// The opening words of `text` on one line, at most `max` characters.
pub fn excerpt(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > max {
        let mut s: String = line.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    } else {
        line
    }
}

/// The ledger thoughts of a session, in creation order.
pub fn session_thoughts(store: &Store, session: SessionId) -> Result<Vec<(Node, ThoughtMeta)>> {
    Ok(store
        .session_nodes(session)?
        .into_iter()
        .filter_map(|n| ThoughtMeta::from_node(&n).map(|m| (n, m)))
        .collect())
}

/// Writes one thought (its node, its edges and the session's new `updated_at`) in one commit.
/// `tool` names the tool it came through; `id` is the new node's id, chosen by the caller so
/// that running this again after a commit whose answer was lost stores nothing twice.
pub fn record_thought(
    store: &Store,
    target: &SessionTarget,
    args: &ThoughtArgs,
    tool: &str,
    id: NodeId,
) -> Result<Recorded> {
    let sid = target.id();
    let earlier = |session: SessionId| -> Result<Vec<ThoughtMeta>> {
        Ok(session_thoughts(store, session)?
            .into_iter()
            .filter(|(n, _)| n.id != id)
            .map(|(_, m)| m)
            .collect())
    };
    let existing: Vec<ThoughtMeta> = match target {
        SessionTarget::Existing(id) => {
            if store.session(*id)?.is_none() {
                return Err(StoreError::NotFound(format!("session {id}")).into());
            }
            earlier(*id)?
        }
        SessionTarget::Create(s) => match store.session(s.id)? {
            Some(_) => earlier(s.id)?,
            None => Vec::new(),
        },
    };
    let total = args.total_thoughts.max(args.thought_number);
    let mut warnings = Vec::new();
    let branch = args.branch_id.as_deref();
    let revises = args.revises().and_then(|n| {
        let found = find_revised(&existing, n, branch);
        if found.is_none() {
            warnings.push(format!(
                "revisesThought {n} matches no thought in this session, so no revises edge was made"
            ));
        }
        found
    });
    let branches_from = args.branch_from_thought.and_then(|n| {
        let found = find_origin(&existing, n, branch);
        if found.is_none() {
            warnings.push(format!(
                "branchFromThought {n} matches no thought in this session, so no branches_from edge was made"
            ));
        }
        found
    });

    let mut node = Node::new(sid, NodeType::LedgerThought, args.thought.clone());
    node.id = id;
    let opt_num = |n: Option<u32>| n.map_or(Value::Null, |n| json!(n));
    let m = &mut node.meta;
    m.insert("thoughtNumber".into(), json!(args.thought_number));
    m.insert("totalThoughts".into(), json!(total));
    m.insert("nextThoughtNeeded".into(), json!(args.next_thought_needed));
    m.insert(
        "branchId".into(),
        args.branch_id.clone().map_or(Value::Null, Value::String),
    );
    m.insert(
        "isRevision".into(),
        json!(args.is_revision.unwrap_or(false)),
    );
    m.insert("revisesThought".into(), opt_num(args.revises_thought));
    m.insert(
        "branchFromThought".into(),
        opt_num(args.branch_from_thought),
    );
    if let Some(b) = args.needs_more_thoughts {
        m.insert("needsMoreThoughts".into(), json!(b));
    }
    if let Some(t) = &args.thought_type {
        m.insert("thoughtType".into(), json!(t));
    }
    if total != args.total_thoughts {
        m.insert("requestedTotalThoughts".into(), json!(args.total_thoughts));
    }
    m.insert("tool".into(), json!(tool));

    store.write(|w| {
        if w.node(node.id)?.is_some() {
            return Ok(());
        }
        let now = Utc::now();
        let session = match (target, w.session(sid)?) {
            (_, Some(mut s)) => {
                s.updated_at = now;
                s
            }
            (SessionTarget::Create(template), None) => {
                let mut s = template.clone();
                if s.title.trim().is_empty() {
                    s.title = excerpt(&args.thought, 60);
                }
                s.updated_at = now;
                s
            }
            (SessionTarget::Existing(_), None) => {
                return Err(StoreError::NotFound(format!("session {sid}")));
            }
        };
        w.put_session(&session)?;
        w.put_node(&node)?;
        if let Some(dst) = revises {
            w.put_edge(&Edge::new(node.id, EdgeType::Revises, dst))?;
        }
        if let Some(dst) = branches_from {
            w.put_edge(&Edge::new(node.id, EdgeType::BranchesFrom, dst))?;
        }
        Ok(())
    })?;

    let branches = branch_ids(
        existing
            .iter()
            .map(|t| (&t.branch_id, t.branch_from))
            .chain(std::iter::once((&args.branch_id, args.branch_from_thought))),
    );
    Ok(Recorded {
        node,
        session: sid,
        total_thoughts: total,
        history_len: existing.len() + 1,
        branches,
        revises,
        branches_from,
        warnings,
    })
}

/// A human verdict on a thought.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Verified,
    Questionable,
    Disagree,
}

impl Verdict {
    /// Parses `verified`, `questionable` or `disagree` (any case).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "verified" => Some(Verdict::Verified),
            "questionable" => Some(Verdict::Questionable),
            "disagree" => Some(Verdict::Disagree),
            _ => None,
        }
    }

    /// The verdict's name, as stored in the annotation's meta.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Verified => "verified",
            Verdict::Questionable => "questionable",
            Verdict::Disagree => "disagree",
        }
    }

    /// The edge from the annotation to the thought: supports, refines or contradicts.
    pub fn edge(self) -> EdgeType {
        match self {
            Verdict::Verified => EdgeType::Supports,
            Verdict::Questionable => EdgeType::Refines,
            Verdict::Disagree => EdgeType::Contradicts,
        }
    }
}

/// Writes an annotation node about `target` (in the target's session) and its edge, in one
/// commit.
/// Stores `text` as the annotation `id` on `target`, once: when `id` is already stored (an
/// earlier try committed), nothing is written again.
fn annotate(
    store: &Store,
    target: NodeId,
    id: NodeId,
    text: String,
    edge: EdgeType,
    meta: Map<String, Value>,
    model: Option<&str>,
) -> Result<Node> {
    let Some(thought) = store.node(target)? else {
        return Err(StoreError::NotFound(format!("node {target}")).into());
    };
    let mut node = Node::new(thought.session, NodeType::HumanAnnotation, text);
    node.id = id;
    node.model = model.map(str::to_string);
    node.meta = meta;
    node.meta.insert("target".into(), json!(target));
    store.write(|w| {
        if w.node(node.id)?.is_some() {
            return Ok(());
        }
        if let Some(mut s) = w.session(thought.session)? {
            s.updated_at = Utc::now();
            w.put_session(&s)?;
        }
        w.put_node(&node)?;
        w.put_edge(&Edge::new(node.id, edge, target))
    })?;
    Ok(node)
}

/// Records a checkpoint: a `human_annotation` node holding the verdict (and the correction,
/// if any) with a supports / refines / contradicts edge to the thought. `id` is the
/// annotation's id: a second call with it stores nothing more.
pub fn checkpoint(
    store: &Store,
    thought: NodeId,
    id: NodeId,
    verdict: Verdict,
    correction: Option<&str>,
) -> Result<Node> {
    if let Some(c) = correction
        && c.chars().count() > MAX_CORRECTION_CHARS
    {
        return Err(LedgerError::invalid(format!(
            "correction is longer than {MAX_CORRECTION_CHARS} characters"
        )));
    }
    let text = match correction {
        Some(c) if !c.trim().is_empty() => c.to_string(),
        _ => format!("checkpoint: {}", verdict.as_str()),
    };
    let mut meta = Map::new();
    meta.insert("verdict".into(), json!(verdict.as_str()));
    meta.insert("source".into(), json!("checkpoint"));
    meta.insert("via".into(), json!("mcp"));
    meta.insert(
        "correction".into(),
        json!(correction.is_some_and(|c| !c.trim().is_empty())),
    );
    annotate(store, thought, id, text, verdict.edge(), meta, None)
}

/// Stores a critique the client's model wrote through sampling, linked `refines` to the
/// thought, as the annotation `id` (stored once).
pub fn store_critique(
    store: &Store,
    thought: NodeId,
    id: NodeId,
    text: &str,
    model: Option<&str>,
    stop_reason: Option<&str>,
) -> Result<Node> {
    let mut meta = Map::new();
    meta.insert("source".into(), json!("sampling"));
    if let Some(r) = stop_reason {
        meta.insert("stopReason".into(), json!(r));
    }
    annotate(
        store,
        thought,
        id,
        text.to_string(),
        EdgeType::Refines,
        meta,
        model,
    )
}

/// The text a critique is asked about: the last `n` thoughts of the session, oldest first.
pub fn critique_context(
    store: &Store,
    session: SessionId,
    latest: NodeId,
    n: usize,
) -> Result<String> {
    let thoughts = session_thoughts(store, session)?;
    let start = thoughts.len().saturating_sub(n.max(1));
    let mut out = String::from("Recent thoughts of a reasoning session, oldest first:\n");
    let mut latest_number = None;
    for (node, m) in &thoughts[start..] {
        out.push_str(&format!("\nThought {}/{}", m.number, m.total));
        if let Some(r) = m.revises.filter(|_| m.is_revision) {
            out.push_str(&format!(" (revises thought {r})"));
        }
        if let (Some(b), Some(from)) = (&m.branch_id, m.branch_from) {
            out.push_str(&format!(" (branch \"{b}\" from thought {from})"));
        }
        out.push_str(":\n");
        out.push_str(node.text.trim());
        out.push('\n');
        if node.id == latest {
            latest_number = Some(m.number);
        }
    }
    match latest_number {
        Some(n) => out.push_str(&format!(
            "\nCritique thought {n}, the latest, in the light of the ones before it."
        )),
        None => out.push_str("\nCritique the latest thought in the light of the ones before it."),
    }
    Ok(out)
}

/// One row of `session_list`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: SessionId,
    pub title: String,
    pub source: &'static str,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
    pub nodes: u64,
}

/// Sessions, most recently updated first: MCP sessions only unless `all`.
pub fn list_sessions(store: &Store, all: bool, limit: usize) -> Result<Vec<SessionSummary>> {
    let mut out = Vec::new();
    for s in store.sessions()? {
        if out.len() >= limit {
            break;
        }
        if !all && s.source != SessionSource::Mcp {
            continue;
        }
        out.push(SessionSummary {
            id: s.id,
            title: s.title.clone(),
            source: s.source.as_str(),
            created: s.created_at,
            updated: s.updated_at,
            nodes: store.session_node_count(s.id)?,
        });
    }
    Ok(out)
}

/// Creates and commits an empty MCP session.
pub fn start_session(store: &Store, mut session: Session) -> Result<Session> {
    session.updated_at = Utc::now();
    store.write(|w| w.put_session(&session))?;
    Ok(session)
}

/// A session as glassbox's JSON export — the `glassbox-session` format that `glassbox export
/// --format json` writes and `glassbox import json` reads: everything the session owns. Both
/// the document's text, byte for byte what the command prints, and its value.
pub fn export_session(store: &Store, id: SessionId) -> Result<(String, Value)> {
    let export = transcript_export::collect(store, id).map_err(from_transcript)?;
    let text = transcript_export::to_json(&export).map_err(from_transcript)?;
    let value = serde_json::to_value(export).map_err(|e| LedgerError::invalid(e.to_string()))?;
    Ok((text, value))
}

/// What an import did.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    pub session_id: SessionId,
    pub nodes: usize,
    pub edges: usize,
    /// Whether a session with the same id was replaced.
    pub replaced: bool,
}

/// Imports a `glassbox-session` export (a JSON object, or a string holding one) in one
/// commit. A session already in the store is replaced only when `replace`.
pub fn import_session(store: &Store, data: &Value, replace: bool) -> Result<ImportReport> {
    let text = match data {
        Value::String(s) => s.clone(),
        Value::Object(_) => data.to_string(),
        _ => {
            return Err(LedgerError::invalid(
                "data must be a session export (an object, or a string of JSON)",
            ));
        }
    };
    let export = transcript_export::parse_json(&text, "data").map_err(from_transcript)?;
    let sid = export.session.id;
    let existed = store.session(sid)?.is_some();
    if existed && !replace {
        return Err(LedgerError::invalid(format!(
            "session {sid} is already in the store; pass replace: true to overwrite it"
        )));
    }
    transcript_export::import(store, &export, replace).map_err(from_transcript)?;
    Ok(ImportReport {
        session_id: sid,
        nodes: export.nodes.len(),
        edges: export.edges.len(),
        replaced: existed,
    })
}

fn from_transcript(e: TranscriptError) -> LedgerError {
    match e {
        TranscriptError::Store(e) => LedgerError::Store(e),
        other => LedgerError::Invalid(other.to_string()),
    }
}

/// One search result.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerHit {
    pub session_id: SessionId,
    pub session_title: String,
    pub node_id: NodeId,
    pub kind: &'static str,
    pub thought_number: Option<u32>,
    pub branch_id: Option<String>,
    pub snippet: String,
    pub score: f64,
}

/// Full-text search over ledger thoughts and annotations through the store's index (BM25:
/// nodes holding more of the query's words, more often, rank higher), in one session or all.
pub fn search(
    store: &Store,
    query: &str,
    session: Option<SessionId>,
    limit: usize,
) -> Result<Vec<LedgerHit>> {
    if crate::store::search::tokenize(query).next().is_none() {
        return Err(LedgerError::invalid(
            "query must contain a word (two or more letters or digits)",
        ));
    }
    if let Some(id) = session
        && store.session(id)?.is_none()
    {
        return Err(StoreError::NotFound(format!("session {id}")).into());
    }
    // The index ranks every kind of node; ask for more and keep the ledger's.
    let wanted = limit.saturating_mul(10).max(200);
    let mut titles: HashMap<SessionId, String> = HashMap::new();
    let mut out = Vec::new();
    for hit in store.search(query, session, wanted)? {
        if !matches!(
            hit.kind,
            NodeType::LedgerThought | NodeType::HumanAnnotation
        ) {
            continue;
        }
        let meta = match store.node(hit.node)? {
            Some(n) => ThoughtMeta::from_node(&n),
            None => continue,
        };
        let title = match titles.get(&hit.session) {
            Some(t) => t.clone(),
            None => {
                let t = store
                    .session(hit.session)?
                    .map(|s| s.title)
                    .unwrap_or_default();
                titles.insert(hit.session, t.clone());
                t
            }
        };
        out.push(LedgerHit {
            session_id: hit.session,
            session_title: title,
            node_id: hit.node,
            kind: hit.kind.as_str(),
            thought_number: meta.as_ref().map(|m| m.number),
            branch_id: meta.and_then(|m| m.branch_id),
            snippet: hit.snippet,
            score: hit.score,
        });
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

/// The latest ledger thought numbered `number` in a session.
pub fn thought_by_number(store: &Store, session: SessionId, number: u32) -> Result<NodeId> {
    session_thoughts(store, session)?
        .iter()
        .rev()
        .find(|(_, m)| m.number == number)
        .map(|(n, _)| n.id)
        .ok_or_else(|| {
            StoreError::NotFound(format!("thought {number} in session {session}")).into()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
        (dir, store)
    }

    fn thought(n: u32, total: u32) -> ThoughtArgs {
        ThoughtArgs {
            thought: format!("thought number {n}"),
            next_thought_needed: true,
            thought_number: n,
            total_thoughts: total,
            ..Default::default()
        }
    }

    #[test]
    fn revisions_and_branches_link_the_right_nodes() {
        let (_d, store) = store();
        let target = SessionTarget::Create(Session::new("", SessionSource::Mcp));
        let mut ids = Vec::new();
        for n in 1..=4 {
            ids.push(
                record_thought(
                    &store,
                    &target,
                    &thought(n, 3),
                    "sequentialthinking",
                    NodeId::new(),
                )
                .unwrap(),
            );
        }
        assert_eq!(ids[3].total_thoughts, 4);
        assert_eq!(ids[3].history_len, 4);
        let mut rev = thought(5, 5);
        rev.is_revision = Some(true);
        rev.revises_thought = Some(2);
        let r = record_thought(&store, &target, &rev, "sequentialthinking", NodeId::new()).unwrap();
        assert_eq!(r.revises, Some(ids[1].node.id));
        let mut br = thought(3, 5);
        br.branch_from_thought = Some(2);
        br.branch_id = Some("alt".into());
        let b1 = record_thought(&store, &target, &br, "sequentialthinking", NodeId::new()).unwrap();
        assert_eq!(b1.branches_from, Some(ids[1].node.id));
        assert_eq!(b1.branches, vec!["alt".to_string()]);
        // A revision inside the branch revises the branch's own thought 3.
        let mut in_branch = thought(4, 5);
        in_branch.branch_id = Some("alt".into());
        in_branch.branch_from_thought = Some(2);
        in_branch.is_revision = Some(true);
        in_branch.revises_thought = Some(3);
        let b2 = record_thought(
            &store,
            &target,
            &in_branch,
            "sequentialthinking",
            NodeId::new(),
        )
        .unwrap();
        assert_eq!(b2.revises, Some(b1.node.id));
        assert_eq!(b2.branches_from, Some(ids[1].node.id));
        let mut missing = thought(8, 8);
        missing.revises_thought = Some(42);
        let m = record_thought(
            &store,
            &target,
            &missing,
            "sequentialthinking",
            NodeId::new(),
        )
        .unwrap();
        assert_eq!(m.revises, None);
        assert_eq!(m.warnings.len(), 1);

        let session = store.session(target.id()).unwrap().unwrap();
        assert_eq!(session.title, "thought number 1");
        assert_eq!(session.source, SessionSource::Mcp);
        let edges = store.session_edges(target.id()).unwrap();
        assert_eq!(
            edges.iter().filter(|e| e.kind == EdgeType::Revises).count(),
            2
        );
        assert_eq!(
            edges
                .iter()
                .filter(|e| e.kind == EdgeType::BranchesFrom)
                .count(),
            2
        );
    }

    #[test]
    fn a_thought_or_checkpoint_written_again_with_its_id_is_stored_once() {
        let (_d, store) = store();
        let target = SessionTarget::Create(Session::new("", SessionSource::Mcp));
        let first =
            record_thought(&store, &target, &thought(1, 2), "thought", NodeId::new()).unwrap();
        // The second thought's commit landed but its answer was lost: the try again stores
        // nothing more and answers as the first try would have.
        let id = NodeId::new();
        let mut rev = thought(2, 2);
        rev.revises_thought = Some(1);
        let once = record_thought(&store, &target, &rev, "thought", id).unwrap();
        let again = record_thought(&store, &target, &rev, "thought", id).unwrap();
        assert_eq!((once.node.id, again.node.id), (id, id));
        assert_eq!((once.history_len, again.history_len), (2, 2));
        assert_eq!(again.revises, Some(first.node.id));
        let (check, critique) = (NodeId::new(), NodeId::new());
        for _ in 0..2 {
            checkpoint(&store, id, check, Verdict::Verified, None).unwrap();
            store_critique(&store, id, critique, "a critique", None, None).unwrap();
        }
        assert_eq!(store.session_nodes(target.id()).unwrap().len(), 4);
        assert_eq!(store.session_edges(target.id()).unwrap().len(), 3);
    }

    #[test]
    fn an_existing_session_must_exist() {
        let (_d, store) = store();
        let err = record_thought(
            &store,
            &SessionTarget::Existing(SessionId::new()),
            &thought(1, 1),
            "thought",
            NodeId::new(),
        );
        assert!(matches!(
            err,
            Err(LedgerError::Store(StoreError::NotFound(_)))
        ));
    }

    #[test]
    fn export_import_round_trips_and_replaces_only_when_asked() {
        let (_d, store) = store();
        let target = SessionTarget::Create(Session::new("t", SessionSource::Mcp));
        let a = record_thought(&store, &target, &thought(1, 2), "thought", NodeId::new()).unwrap();
        let mut rev = thought(2, 2);
        rev.revises_thought = Some(1);
        record_thought(&store, &target, &rev, "thought", NodeId::new()).unwrap();
        checkpoint(
            &store,
            a.node.id,
            NodeId::new(),
            Verdict::Disagree,
            Some("no, because"),
        )
        .unwrap();
        let (text, export) = export_session(&store, target.id()).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), export);
        assert_eq!(export["format"], json!("glassbox-session"));
        assert_eq!(export["nodes"].as_array().unwrap().len(), 3);
        let err = import_session(&store, &export, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("already in the store"), "{err}");
        let report = import_session(&store, &json!(export.to_string()), true).unwrap();
        assert_eq!(
            (
                report.session_id,
                report.nodes,
                report.edges,
                report.replaced
            ),
            (target.id(), 3, 2, true)
        );
        assert_eq!(
            export_session(&store, target.id()).unwrap().0,
            text,
            "byte-identical"
        );
        // Into an empty store.
        let (_d2, other) = super::tests::store();
        assert!(!import_session(&other, &export, false).unwrap().replaced);
        assert!(import_session(&other, &json!({"format": "other"}), false).is_err());
        assert!(import_session(&other, &json!("not json"), false).is_err());
        assert!(import_session(&other, &json!(3), false).is_err());
    }

    #[test]
    fn search_finds_ledger_nodes_only() {
        let (_d, store) = store();
        let target = SessionTarget::Create(Session::new("t", SessionSource::Mcp));
        let mut t = thought(1, 2);
        t.thought = "The CACHE is cold; warm the cache first.".into();
        record_thought(&store, &target, &t, "thought", NodeId::new()).unwrap();
        t.thought = "Something else entirely.".into();
        t.thought_number = 2;
        record_thought(&store, &target, &t, "thought", NodeId::new()).unwrap();
        let other = Node::new(
            target.id(),
            NodeType::Thinking,
            "cache thinking that is not ledger",
        );
        store.write(|w| w.put_node(&other)).unwrap();
        let hits = search(&store, "cache", None, 10).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].thought_number, Some(1));
        assert_eq!(hits[0].session_title, "t");
        assert!(hits[0].snippet.contains("CACHE"));
        assert!(search(&store, "  ", None, 10).is_err());
        assert!(search(&store, "cache", Some(SessionId::new()), 10).is_err());
    }
}
