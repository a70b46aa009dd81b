//! Reading a JSON export. The document is read as a stream: its nodes are handed on one at a
//! time, everything else (small next to the nodes) is kept. A file is read twice: once to
//! check all of it ([`check_file`]), keeping of the nodes only their ids, and once more to
//! store the nodes in batches ([`import_checked`]), so nothing is written for a bad file
//! and a session of any size costs the memory of a few batches.
//!
//! Errors name the input and, for a document that does not fit the export's shape, the
//! line and column (`file:line:col: reason`). Which error a bad document gets is decided as
//! if it were read whole: an empty file, then bytes that are not UTF-8, then anything that
//! is not JSON, then the `format` and `version` fields, then the shape, then the
//! cross-references.

use std::cell::Cell;
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine as _;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess};
use serde_json::Value;
use serde_json::de::IoRead;

use super::{BASE64, FORMAT, FORMAT_VERSION, SessionExport, StreamExport};
use crate::engines::transcript::TranscriptError;
use crate::store::dict::DictFeed;
use crate::store::{
    DecisionPoint, Edge, Insight, Node, NodeId, PreparedNode, Run, Session, SessionId, Store,
};

/// Bytes of the file's node JSON stored per write transaction by [`import_checked`].
const BATCH_BYTES: u64 = 16 << 20;
/// At most this many nodes per write transaction.
pub(super) const BATCH_NODES: usize = 10_000;
/// Bytes read at a time when checking a file's encoding.
const READ_CHUNK: usize = 1 << 20;

/// An export file whose every part has been checked, its nodes not kept (see
/// [`import_checked`]).
#[derive(Debug)]
pub struct Checked {
    path: PathBuf,
    source: String,
    /// Everything but the nodes.
    rest: SessionExport,
    nodes: NodeFacts,
}

impl Checked {
    pub fn session(&self) -> &Session {
        &self.rest.session
    }
}

/// What [`import_checked`] stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    pub session: Session,
    pub nodes: usize,
    pub edges: usize,
    pub decision_points: usize,
    pub insights: usize,
    pub runs: usize,
    pub raw_streams: usize,
    /// It replaced what an earlier, unfinished import of the session had stored.
    pub replaced_unfinished: bool,
}

/// Parses a JSON export held in memory, checking that everything in it belongs to its
/// session. `source` names the input in error messages.
pub fn parse_json(text: &str, source: &str) -> Result<SessionExport, TranscriptError> {
    let mut nodes = Vec::new();
    let mut facts = NodeFacts::default();
    let mut keep = |n: Node| {
        facts.add(&n);
        nodes.push(n);
        Ok(())
    };
    // Read as the file reader reads, so both name the same line and column.
    let rest = match read_doc(IoRead::new(text.as_bytes()), true, &mut keep) {
        Ok(rest) => rest,
        Err(Failure::Node(e)) => return Err(e),
        Err(Failure::Json(e)) => {
            return Err(explain(source, &e, || probe(IoRead::new(text.as_bytes()))));
        }
    };
    let mut export = check(source, rest, &facts)?;
    export.nodes = nodes;
    Ok(export)
}

/// Reads the export file at `path` through once, checking everything in it as
/// [`parse_json`] does but keeping of its nodes only their ids.
pub fn check_file(path: &Path) -> Result<Checked, TranscriptError> {
    let source = path.display().to_string();
    let mut facts = NodeFacts::default();
    let mut note = |n: Node| {
        facts.add(&n);
        Ok(())
    };
    let (reader, _) = open(path, &source)?;
    let rest = match read_doc(IoRead::new(reader), true, &mut note) {
        Ok(rest) => rest,
        Err(Failure::Node(e)) => return Err(e),
        Err(Failure::Json(e)) => {
            if let Some(problem) = encoding_problem(path, &source)? {
                return Err(problem);
            }
            return Err(explain(&source, &e, || {
                let (reader, _) = open(path, &source).map_err(de::Error::custom)?;
                probe(IoRead::new(reader))
            }));
        }
    };
    let rest = check(&source, rest, &facts)?;
    Ok(Checked {
        path: path.to_path_buf(),
        source,
        rest,
        nodes: facts,
    })
}

/// Stores a checked export file: its session record first, marked [`UNFINISHED_IMPORT`]
/// (deleting a stored session with the same id when `replace` or when it is an unfinished
/// import's, in the same transaction), then its nodes read from the file again and stored in
/// batches as they are read, then everything else with the record unmarked. If this stops
/// partway (the file changed since it was checked, the store failed, or `stop` was set:
/// [`TranscriptError::Interrupted`]), the session is deleted again; if it is killed, the
/// next import of the file replaces what it left.
///
/// [`UNFINISHED_IMPORT`]: super::UNFINISHED_IMPORT
pub fn import_checked(
    store: &Store,
    checked: &Checked,
    replace: bool,
    stop: Option<&AtomicBool>,
) -> Result<Imported, TranscriptError> {
    let rest = &checked.rest;
    let sid = rest.session.id;
    let unfinished = super::refuse_existing(store, sid, replace)?;
    let decoded = super::decode_streams(&rest.raw_streams)?;
    let mut marked = rest.session.clone();
    marked
        .meta
        .insert(super::UNFINISHED_IMPORT.into(), Value::Bool(true));
    store.write(|w| {
        if replace || unfinished {
            w.delete_session(sid)?;
        }
        w.put_session(&marked)
    })?;
    let stored = store_nodes(store, checked, stop).and_then(|()| {
        Ok(store.write(|w| {
            super::put_owned(w, rest, &decoded)?;
            w.put_session(&rest.session)
        })?)
    });
    if let Err(e) = stored {
        let undone = store.write(|w| w.delete_session(sid));
        if matches!(e, TranscriptError::Interrupted) && undone.is_ok() {
            return Err(e);
        }
        let undone = match undone {
            Ok(_) if replace => "the session is not in the store (the one it replaced is gone)",
            Ok(_) => "the session is not in the store",
            Err(_) => {
                "what was stored of it is still there, and importing the file again replaces it"
            }
        };
        return Err(TranscriptError::Invalid(format!(
            "{}: the import stopped: {e}; {undone}",
            checked.source
        )));
    }
    Ok(Imported {
        session: rest.session.clone(),
        nodes: checked.nodes.count,
        edges: rest.edges.len(),
        decision_points: rest.decision_points.len(),
        insights: rest.insights.len(),
        runs: rest.runs.len(),
        raw_streams: rest.raw_streams.len(),
        replaced_unfinished: unfinished,
    })
}

/// Reads the checked file's nodes again and stores them, a batch per transaction: this
/// thread parses while another encodes, indexes and commits the batch before.
fn store_nodes(
    store: &Store,
    checked: &Checked,
    stop: Option<&AtomicBool>,
) -> Result<(), TranscriptError> {
    let sid = checked.rest.session.id;
    let source = &checked.source;
    let changed = || TranscriptError::Invalid(format!("{source} changed since it was checked"));
    let (reader, read) = open(&checked.path, source)?;
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Node>>(1);
        let writer = scope.spawn(move || -> Result<(), TranscriptError> {
            // A store without a compression dictionary gets one trained on the first
            // batch, which is then compressed with it too.
            let mut feed = DictFeed::new(store);
            for batch in rx {
                feed.observe(&batch);
                feed.wait();
                let dict = feed.dict();
                let prepared = batch
                    .iter()
                    .map(|n| PreparedNode::new(n, dict))
                    .collect::<Result<Vec<_>, _>>()?;
                drop(batch);
                let new = feed.take_new();
                store.write(|w| {
                    if let Some(d) = &new {
                        w.put_record_dict(d)?;
                    }
                    w.put_prepared_nodes(&prepared)
                })?;
            }
            Ok(())
        });
        let mut batch = Vec::new();
        let mut seen = 0;
        let mut mark = 0;
        let mut put = |n: Node| {
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return Err(TranscriptError::Interrupted);
            }
            if n.session != sid || !checked.nodes.ids.contains(&n.id) {
                return Err(changed());
            }
            seen += 1;
            batch.push(n);
            if read.get() - mark >= BATCH_BYTES || batch.len() >= BATCH_NODES {
                mark = read.get();
                tx.send(std::mem::take(&mut batch))
                    .map_err(|_| TranscriptError::Invalid("the store writer stopped".into()))?;
            }
            Ok(())
        };
        let parsed = read_doc(IoRead::new(reader), false, &mut put);
        let last = if batch.is_empty() {
            Ok(())
        } else {
            tx.send(batch)
                .map_err(|_| TranscriptError::Invalid("the store writer stopped".into()))
        };
        drop(tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(TranscriptError::Invalid("the store writer failed".into())));
        // The writer's own error says more than the send that found it gone.
        written?;
        match parsed {
            Ok(_) => {}
            Err(Failure::Node(e)) => return Err(e),
            Err(Failure::Json(_)) => return Err(changed()),
        }
        last?;
        if seen != checked.nodes.count {
            return Err(changed());
        }
        Ok(())
    })
}

/// What a node-by-node reading learns of the nodes for the checks.
#[derive(Debug, Default)]
struct NodeFacts {
    count: usize,
    /// The first node's id and session.
    first: Option<(NodeId, SessionId)>,
    /// The first node whose session is not the first node's.
    stray: Option<NodeId>,
    ids: HashSet<NodeId>,
}

impl NodeFacts {
    fn add(&mut self, n: &Node) {
        self.count += 1;
        match self.first {
            None => self.first = Some((n.id, n.session)),
            Some((_, s)) if s != n.session && self.stray.is_none() => self.stray = Some(n.id),
            Some(_) => {}
        }
        self.ids.insert(n.id);
    }

    /// The first node (in the file's order) that is not of session `sid`.
    fn foreign(&self, sid: SessionId) -> Option<NodeId> {
        match self.first {
            Some((id, s)) if s != sid => Some(id),
            _ => self.stray,
        }
    }
}

/// The cross-reference checks, in the order a reader of the whole document made them.
/// Returns the export without its nodes.
fn check(source: &str, rest: Rest, nodes: &NodeFacts) -> Result<SessionExport, TranscriptError> {
    let (Some(format), Some(version), Some(session)) = (rest.format, rest.version, rest.session)
    else {
        return Err(TranscriptError::Invalid(format!(
            "{source}: invalid session export"
        )));
    };
    if let Some(e) = header_error(source, Some(&format), Some(u64::from(version))) {
        return Err(e);
    }
    let export = SessionExport {
        format,
        version,
        session,
        nodes: Vec::new(),
        edges: rest.edges.unwrap_or_default(),
        decision_points: rest.decision_points.unwrap_or_default(),
        insights: rest.insights.unwrap_or_default(),
        runs: rest.runs.unwrap_or_default(),
        raw_streams: rest.raw_streams.unwrap_or_default(),
    };
    let sid = export.session.id;
    let foreign = |what: &str, id: &dyn std::fmt::Display| {
        TranscriptError::Invalid(format!(
            "{source}: {what} {id} belongs to another session than {sid}"
        ))
    };
    if let Some(id) = nodes.foreign(sid) {
        return Err(foreign("node", &id));
    }
    for e in &export.edges {
        if !nodes.ids.contains(&e.src) {
            return Err(TranscriptError::Invalid(format!(
                "{source}: edge {} -> {} starts at a node that is not in the file",
                e.src, e.dst
            )));
        }
    }
    for d in &export.decision_points {
        if !nodes.ids.contains(&d.node) {
            return Err(TranscriptError::Invalid(format!(
                "{source}: decision point {} refers to node {} which is not in the file",
                d.id, d.node
            )));
        }
    }
    for i in &export.insights {
        if i.session != sid {
            return Err(foreign("insight", &i.id));
        }
    }
    for r in &export.runs {
        if r.session != sid {
            return Err(foreign("run", &r.id));
        }
    }
    for s in &export.raw_streams {
        if s.header.session != sid {
            return Err(foreign("raw stream", &s.header.id));
        }
        for (i, c) in s.chunks.iter().enumerate() {
            BASE64.decode(&c.bytes_base64).map_err(|e| {
                TranscriptError::Invalid(format!(
                    "{source}: raw stream {} chunk {i}: bad base64: {e}",
                    s.header.id
                ))
            })?;
        }
    }
    Ok(export)
}

/// The error for a document whose `format` (`None` when missing or not a string) or
/// `version` (`None` when missing or not a whole number) this glassbox does not read.
fn header_error(
    source: &str,
    format: Option<&str>,
    version: Option<u64>,
) -> Option<TranscriptError> {
    let reason = match format {
        Some(FORMAT) => match version {
            Some(v) if v > u64::from(FORMAT_VERSION) => {
                format!("export version {v} is newer than this glassbox reads ({FORMAT_VERSION})")
            }
            _ => return None,
        },
        Some(other) => format!("format is '{other}', expected '{FORMAT}'"),
        None => format!("not a glassbox session export (no \"format\": \"{FORMAT}\")"),
    };
    Some(TranscriptError::Invalid(format!("{source}: {reason}")))
}

/// The error for a document that did not read as an export (`typed`): if it is not JSON at
/// all, where it stops being JSON; else a wrong `format` or `version`; else where it
/// leaves the export's shape. `probe` reads the document again as plain JSON.
fn explain(
    source: &str,
    typed: &serde_json::Error,
    probe: impl FnOnce() -> Result<Probe, serde_json::Error>,
) -> TranscriptError {
    let head = match probe() {
        Ok(head) => head,
        Err(e) => return at(source, &e, "not JSON"),
    };
    let format = head.format.as_ref().and_then(Value::as_str);
    let version = head.version.as_ref().and_then(Value::as_u64);
    header_error(source, format, version)
        .unwrap_or_else(|| at(source, typed, "invalid session export"))
}

/// `source:line:column: what: reason`, the reason without serde's own position.
fn at(source: &str, e: &serde_json::Error, what: &str) -> TranscriptError {
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let full = e.to_string();
    let reason = full.strip_suffix(&suffix).unwrap_or(&full);
    TranscriptError::Invalid(format!(
        "{source}:{}:{}: {what}: {reason}",
        e.line(),
        e.column()
    ))
}

/// The file at `path`, buffered, and a count of the bytes read from it so far.
fn open(path: &Path, source: &str) -> Result<(BufReader<Counted>, Rc<Cell<u64>>), TranscriptError> {
    let file = File::open(path)
        .map_err(|e| TranscriptError::Invalid(format!("cannot read {source}: {e}")))?;
    let read = Rc::new(Cell::new(0));
    let counted = Counted {
        file,
        read: read.clone(),
    };
    Ok((BufReader::with_capacity(1 << 16, counted), read))
}

/// A file that counts the bytes read from it.
struct Counted {
    file: File,
    read: Rc<Cell<u64>>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// The error for a file that is empty (or only whitespace) or not UTF-8, naming the line
/// and the column of the first bad byte.
fn encoding_problem(path: &Path, source: &str) -> Result<Option<TranscriptError>, TranscriptError> {
    let mut file = File::open(path)
        .map_err(|e| TranscriptError::Invalid(format!("cannot read {source}: {e}")))?;
    let mut buf = vec![0u8; READ_CHUNK];
    // Bytes of a character cut by the end of the previous read, moved to the front of buf.
    let mut carried = 0;
    // Offset in the file of buf[0], newlines before it, offset just past the last newline.
    let mut base = 0u64;
    let mut lines = 0u64;
    let mut line_start = 0u64;
    let mut blank = true;
    loop {
        let n = file
            .read(&mut buf[carried..])
            .map_err(|e| TranscriptError::Invalid(format!("cannot read {source}: {e}")))?;
        let end = carried + n;
        let chunk = &buf[..end];
        let (good, bad) = match std::str::from_utf8(chunk) {
            Ok(_) => (end, false),
            // A character cut by the end of this read: read on, unless the file ended.
            Err(e) if e.error_len().is_none() && n > 0 => (e.valid_up_to(), false),
            Err(e) => (e.valid_up_to(), true),
        };
        let valid = &chunk[..good];
        blank &= valid.iter().all(u8::is_ascii_whitespace);
        for (i, b) in valid.iter().enumerate() {
            if *b == b'\n' {
                lines += 1;
                line_start = base + i as u64 + 1;
            }
        }
        if bad {
            let offset = base + good as u64;
            return Ok(Some(TranscriptError::Invalid(format!(
                "{source}:{}: not UTF-8 (invalid byte at column {}); is this a session export?",
                lines + 1,
                offset - line_start + 1
            ))));
        }
        if n == 0 {
            break;
        }
        buf.copy_within(good..end, 0);
        carried = end - good;
        base += good as u64;
    }
    Ok(blank.then(|| {
        TranscriptError::Invalid(format!(
            "{source}: empty file, not a session export (expected the JSON of `glassbox export --format json`)"
        ))
    }))
}

/// Why a reading stopped: the document, or what was done with a node.
enum Failure {
    Json(serde_json::Error),
    Node(TranscriptError),
}

/// What is done with each node as it is read.
type OnNode<'a> = &'a mut dyn FnMut(Node) -> Result<(), TranscriptError>;

/// Reads a whole document, handing each node to `on_node`. With `keep`, the other fields
/// are read and kept, and unknown fields are read as JSON; without, they are skipped.
fn read_doc<'de, R: serde_json::de::Read<'de>>(
    read: R,
    keep: bool,
    on_node: OnNode<'_>,
) -> Result<Rest, Failure> {
    let mut failed = None;
    let mut de = serde_json::Deserializer::new(read);
    let doc = (&mut de)
        .deserialize_map(DocVisitor {
            keep,
            on_node,
            failed: &mut failed,
        })
        .and_then(|rest| de.end().map(|()| rest));
    match (doc, failed) {
        (_, Some(e)) => Err(Failure::Node(e)),
        (Ok(rest), None) => Ok(rest),
        (Err(e), None) => Err(Failure::Json(e)),
    }
}

/// The fields of an export besides its nodes, as read.
#[derive(Debug, Default)]
struct Rest {
    format: Option<String>,
    version: Option<u32>,
    session: Option<Session>,
    nodes: bool,
    edges: Option<Vec<Edge>>,
    decision_points: Option<Vec<DecisionPoint>>,
    insights: Option<Vec<Insight>>,
    runs: Option<Vec<Run>>,
    raw_streams: Option<Vec<StreamExport>>,
}

#[derive(Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    Format,
    Version,
    Session,
    Nodes,
    Edges,
    DecisionPoints,
    Insights,
    Runs,
    RawStreams,
    #[serde(other)]
    Other,
}

struct DocVisitor<'a, 'f> {
    keep: bool,
    on_node: OnNode<'f>,
    failed: &'a mut Option<TranscriptError>,
}

impl<'de> de::Visitor<'de> for DocVisitor<'_, '_> {
    type Value = Rest;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a glassbox session export")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Rest, A::Error> {
        let DocVisitor {
            keep,
            on_node,
            failed,
        } = self;
        let mut rest = Rest::default();
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Nodes => {
                    if rest.nodes {
                        return Err(de::Error::duplicate_field("nodes"));
                    }
                    map.next_value_seed(NodesSeed {
                        on_node: &mut *on_node,
                        failed: &mut *failed,
                    })?;
                    rest.nodes = true;
                }
                _ if !keep => {
                    map.next_value::<IgnoredAny>()?;
                }
                Field::Format => put(&mut map, &mut rest.format, "format")?,
                Field::Version => put(&mut map, &mut rest.version, "version")?,
                Field::Session => put(&mut map, &mut rest.session, "session")?,
                Field::Edges => put(&mut map, &mut rest.edges, "edges")?,
                Field::DecisionPoints => {
                    put(&mut map, &mut rest.decision_points, "decision_points")?
                }
                Field::Insights => put(&mut map, &mut rest.insights, "insights")?,
                Field::Runs => put(&mut map, &mut rest.runs, "runs")?,
                Field::RawStreams => put(&mut map, &mut rest.raw_streams, "raw_streams")?,
                Field::Other => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        if keep {
            let missing = [
                ("format", rest.format.is_none()),
                ("version", rest.version.is_none()),
                ("session", rest.session.is_none()),
                ("nodes", !rest.nodes),
                ("edges", rest.edges.is_none()),
                ("decision_points", rest.decision_points.is_none()),
                ("insights", rest.insights.is_none()),
                ("runs", rest.runs.is_none()),
                ("raw_streams", rest.raw_streams.is_none()),
            ];
            if let Some((name, _)) = missing.iter().find(|(_, gone)| *gone) {
                return Err(de::Error::missing_field(name));
            }
        }
        Ok(rest)
    }
}

/// Reads the value of field `name` into `slot`, which must still be empty.
fn put<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// The `nodes` list, each node handed on as soon as it is read.
struct NodesSeed<'a, 'f> {
    on_node: OnNode<'f>,
    failed: &'a mut Option<TranscriptError>,
}

impl<'de> DeserializeSeed<'de> for NodesSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> de::Visitor<'de> for NodesSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of nodes")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(node) = seq.next_element::<Node>()? {
            if let Err(e) = (self.on_node)(node) {
                let message = e.to_string();
                *self.failed = Some(e);
                return Err(de::Error::custom(message));
            }
        }
        Ok(())
    }
}

/// The top of a document read as plain JSON: its `format` and `version` fields, if it is an
/// object (the last of each, as a JSON object keeps).
#[derive(Default)]
struct Probe {
    format: Option<Value>,
    version: Option<Value>,
}

/// Reads a whole document as plain JSON, keeping its `format` and `version`.
fn probe<'de, R: serde_json::de::Read<'de>>(read: R) -> Result<Probe, serde_json::Error> {
    let mut de = serde_json::Deserializer::new(read);
    let head = (&mut de).deserialize_any(ProbeVisitor)?;
    de.end()?;
    Ok(head)
}

struct ProbeVisitor;

impl<'de> de::Visitor<'de> for ProbeVisitor {
    type Value = Probe;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Probe, A::Error> {
        let mut head = Probe::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" => head.format = Some(map.next_value()?),
                "version" => head.version = Some(map.next_value()?),
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(head)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Probe, A::Error> {
        SkipVisitor.visit_seq(seq).map(|_| Probe::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Probe, E> {
        Ok(Probe::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Probe, E> {
        Ok(Probe::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Probe, E> {
        Ok(Probe::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Probe, E> {
        Ok(Probe::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Probe, E> {
        Ok(Probe::default())
    }

    fn visit_unit<E>(self) -> Result<Probe, E> {
        Ok(Probe::default())
    }
}

/// Any JSON value, read (as `serde_json::Value` would be, with its nesting limit) and
/// dropped.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> de::Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
}
