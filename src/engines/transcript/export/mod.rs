//! Session export (JSON, Markdown; the graph drawings are in `drawing.rs`) and JSON import.
//! The JSON form holds everything a session owns, sorted, so export → import → export is
//! byte-identical.
//!
//! Both directions work on a whole session in memory ([`collect`], [`to_json`],
//! [`to_markdown`], [`parse_json`], [`import`]) for small documents, and as streams for the
//! command line: [`write_json`] and [`write_markdown`] write as they read the store, and
//! [`check_file`] then [`import_checked`] read an export file twice (once to check it, once
//! to store its nodes in batches), so a session of any size costs the memory of one batch.

mod json_in;
mod json_out;
mod markdown;
#[cfg(test)]
mod tests;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

use super::TranscriptError;
use crate::store::{
    DecisionPoint, Edge, Insight, Node, RawStream, Run, Session, SessionId, Store, StoreError,
    StoredChunk,
};
pub use json_in::{Checked, Imported, check_file, import_checked, parse_json};
pub use json_out::write_json;
pub(super) use markdown::excerpt;
pub use markdown::{to_markdown, write_markdown};

/// What a streamed export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub nodes: usize,
    pub edges: usize,
}

/// Why a streamed export stopped: reading the store, or writing the output.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Read(#[from] TranscriptError),
    #[error(transparent)]
    Write(#[from] std::io::Error),
}

impl From<StoreError> for ExportError {
    fn from(e: StoreError) -> Self {
        Self::Read(e.into())
    }
}

/// The `format` tag of a JSON export.
pub const FORMAT: &str = "glassbox-session";
/// The version of the JSON export layout.
pub const FORMAT_VERSION: u32 = 1;

/// A whole session as one JSON document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionExport {
    pub format: String,
    pub version: u32,
    pub session: Session,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub decision_points: Vec<DecisionPoint>,
    pub insights: Vec<Insight>,
    pub runs: Vec<Run>,
    pub raw_streams: Vec<StreamExport>,
}

/// A recorded provider stream with its chunks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamExport {
    pub header: RawStream,
    pub chunks: Vec<ChunkExport>,
}

/// One recorded chunk: arrival offset and the bytes, base64.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkExport {
    pub offset_us: u64,
    pub bytes_base64: String,
}

/// The record of session `id`, or an error naming it.
fn session_of(store: &Store, id: SessionId) -> Result<Session, TranscriptError> {
    store
        .session(id)?
        .ok_or_else(|| TranscriptError::Invalid(format!("session {id} not found")))
}

/// Everything `session` owns, sorted by id (edges by source, type, destination).
pub fn collect(store: &Store, id: SessionId) -> Result<SessionExport, TranscriptError> {
    let session = session_of(store, id)?;
    let mut nodes = store.session_nodes(id)?;
    nodes.sort_by_key(|n| n.id);
    let mut edges = store.session_edges(id)?;
    edges.sort_by_key(|e| (e.src, e.kind.code(), e.dst));
    let mut decision_points = Vec::new();
    for n in &nodes {
        decision_points.extend(store.decision_points(n.id)?);
    }
    decision_points.sort_by_key(|d| (d.node, d.id));
    let mut insights = store.insights(id)?;
    insights.sort_by_key(|i| i.id);
    let mut runs = store.session_runs(id)?;
    runs.sort_by_key(|r| r.id);
    let mut headers = store.session_streams(id)?;
    headers.sort_by_key(|s| s.id);
    let mut raw_streams = Vec::with_capacity(headers.len());
    for header in headers {
        let chunks = store
            .raw_chunks(header.id)?
            .into_iter()
            .map(|c| ChunkExport {
                offset_us: c.offset_us,
                bytes_base64: BASE64.encode(&c.bytes),
            })
            .collect();
        raw_streams.push(StreamExport { header, chunks });
    }
    Ok(SessionExport {
        format: FORMAT.into(),
        version: FORMAT_VERSION,
        session,
        nodes,
        edges,
        decision_points,
        insights,
        runs,
        raw_streams,
    })
}

/// The JSON export of a session (pretty, newline-terminated).
pub fn to_json(export: &SessionExport) -> Result<String, TranscriptError> {
    let mut s = serde_json::to_string_pretty(export)
        .map_err(|e| TranscriptError::Invalid(e.to_string()))?;
    s.push('\n');
    Ok(s)
}

/// Session meta key of a session whose `import json` has not finished: its record goes in
/// first, marked so, and its nodes after it, batch by batch; the mark is taken off in the
/// last transaction. A session that still has it is what a killed import left, and the next
/// import of it replaces it without being asked to.
pub const UNFINISHED_IMPORT: &str = "import_unfinished";

/// Whether `s` is what a killed import left partway ([`UNFINISHED_IMPORT`]): some of its
/// nodes are missing until the file is imported again.
pub fn is_unfinished(s: &Session) -> bool {
    s.meta.contains_key(UNFINISHED_IMPORT)
}

/// What lists put before the title of a session whose import was killed partway.
pub const UNFINISHED_MARK: &str = "[unfinished import] ";

/// A session's title as lists show it: marked when its import was killed partway.
pub fn listed_title(s: &Session) -> String {
    if is_unfinished(s) {
        format!("{UNFINISHED_MARK}{}", s.title)
    } else {
        s.title.clone()
    }
}

/// Writes an export into the store in one transaction. An existing session with the same id
/// is an error unless `replace`, which deletes it first (in the same transaction), or it is
/// an unfinished import's.
pub fn import(store: &Store, export: &SessionExport, replace: bool) -> Result<(), TranscriptError> {
    let sid = export.session.id;
    let unfinished = refuse_existing(store, sid, replace)?;
    let decoded = decode_streams(&export.raw_streams)?;
    store.write(|w| {
        if replace || unfinished {
            w.delete_session(sid)?;
        }
        w.put_session(&export.session)?;
        for n in &export.nodes {
            w.put_node(n)?;
        }
        put_owned(w, export, &decoded)
    })?;
    Ok(())
}

/// The error for a session already in the store, unless it is to be replaced; true when the
/// stored one is what an unfinished import left ([`UNFINISHED_IMPORT`]), to be replaced too.
fn refuse_existing(store: &Store, sid: SessionId, replace: bool) -> Result<bool, TranscriptError> {
    match store.session(sid)? {
        Some(s) if is_unfinished(&s) => Ok(true),
        Some(_) if !replace => Err(TranscriptError::Invalid(format!(
            "session {sid} is already in the store; delete it first or pass --replace"
        ))),
        _ => Ok(false),
    }
}

/// The recorded streams' chunks, decoded from base64.
fn decode_streams(
    streams: &[StreamExport],
) -> Result<Vec<(&RawStream, Vec<StoredChunk>)>, TranscriptError> {
    let mut decoded = Vec::with_capacity(streams.len());
    for s in streams {
        let mut chunks = Vec::with_capacity(s.chunks.len());
        for c in &s.chunks {
            let bytes = BASE64.decode(&c.bytes_base64).map_err(|e| {
                TranscriptError::Invalid(format!("raw stream {}: bad base64: {e}", s.header.id))
            })?;
            chunks.push(StoredChunk {
                offset_us: c.offset_us,
                bytes,
            });
        }
        decoded.push((&s.header, chunks));
    }
    Ok(decoded)
}

/// Puts what a session owns besides its record and its nodes: edges, decision points,
/// insights, runs and recorded streams (`decoded`, from [`decode_streams`]).
fn put_owned(
    w: &mut crate::store::Writer<'_>,
    export: &SessionExport,
    decoded: &[(&RawStream, Vec<StoredChunk>)],
) -> Result<(), StoreError> {
    w.put_edges(&export.edges)?;
    for d in &export.decision_points {
        w.put_decision_point(d)?;
    }
    for i in &export.insights {
        w.put_insight(i)?;
    }
    for r in &export.runs {
        w.put_run(r)?;
    }
    for (header, chunks) in decoded {
        w.put_raw_stream(header)?;
        for (i, c) in chunks.iter().enumerate() {
            w.put_raw_chunk(header.id, i as u32, c)?;
        }
    }
    Ok(())
}
