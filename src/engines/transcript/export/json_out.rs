//! The JSON export written as the store is read. The document is put through the same
//! serializer and pretty formatter as [`super::to_json`], its lists fed from the store one
//! record at a time, so the bytes are the same and the memory is that of one node (and of
//! the session's edges, which are sorted as a whole).

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::ops::ControlFlow;

use base64::Engine as _;
use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use super::{BASE64, ChunkExport, ExportError, FORMAT, FORMAT_VERSION, Written};
use crate::engines::transcript::TranscriptError;
use crate::store::{NodeId, RawStream, Session, SessionId, Store, StoreError};

/// Writes the JSON export of session `id` to `out` as it reads the store: the same bytes as
/// [`super::to_json`] of [`super::collect`].
pub fn write_json(store: &Store, id: SessionId, out: impl Write) -> Result<Written, ExportError> {
    let doc = Doc {
        store,
        session: super::session_of(store, id)?,
        failed: RefCell::new(None),
        node_ids: RefCell::new(Vec::new()),
        edges: Cell::new(0),
    };
    let mut ser = serde_json::Serializer::pretty(out);
    let result = doc.serialize(&mut ser);
    if let Some(e) = doc.failed.take() {
        return Err(e.into());
    }
    result.map_err(|e| match e.io_error_kind() {
        Some(kind) => ExportError::Write(std::io::Error::new(kind, e)),
        None => ExportError::Read(TranscriptError::Invalid(e.to_string())),
    })?;
    let mut out = ser.into_inner();
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(Written {
        nodes: doc.node_ids.borrow().len(),
        edges: doc.edges.get(),
    })
}

/// The document: what [`super::SessionExport`] holds, read as it is written. A store error
/// inside a list is kept in `failed` (the serializer carries only a message).
struct Doc<'a> {
    store: &'a Store,
    session: Session,
    failed: RefCell<Option<TranscriptError>>,
    /// The node ids in the order written, for the decision points.
    node_ids: RefCell<Vec<NodeId>>,
    edges: Cell<usize>,
}

impl Doc<'_> {
    /// Keeps `e` and turns it into the serializer's error, which stops the document.
    fn fail<E: serde::ser::Error>(&self, e: impl Into<TranscriptError>) -> E {
        let e = e.into();
        let message = e.to_string();
        *self.failed.borrow_mut() = Some(e);
        E::custom(message)
    }
}

impl Serialize for Doc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("SessionExport", 9)?;
        st.serialize_field("format", FORMAT)?;
        st.serialize_field("version", &FORMAT_VERSION)?;
        st.serialize_field("session", &self.session)?;
        st.serialize_field("nodes", &Part(self, List::Nodes))?;
        st.serialize_field("edges", &Part(self, List::Edges))?;
        st.serialize_field("decision_points", &Part(self, List::DecisionPoints))?;
        st.serialize_field("insights", &Part(self, List::Insights))?;
        st.serialize_field("runs", &Part(self, List::Runs))?;
        st.serialize_field("raw_streams", &Part(self, List::RawStreams))?;
        st.end()
    }
}

/// The lists of the document.
#[derive(Clone, Copy)]
enum List {
    Nodes,
    Edges,
    DecisionPoints,
    Insights,
    Runs,
    RawStreams,
}

/// One list of the document, read from the store as it is serialized.
struct Part<'d, 'a>(&'d Doc<'a>, List);

impl Serialize for Part<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let doc = self.0;
        let store = doc.store;
        let sid = doc.session.id;
        match self.1 {
            List::Nodes => {
                let mut seq = s.serialize_seq(None)?;
                let mut ids = doc.node_ids.borrow_mut();
                let mut err = None;
                let walked = store.for_each_session_node(sid, |n| {
                    // The store walks a session's index, which is in id order; the export
                    // promises that order.
                    if ids.last().is_some_and(|last| *last >= n.id) {
                        return Err(StoreError::Corrupt(format!(
                            "session {sid}: nodes listed out of id order at {}",
                            n.id
                        )));
                    }
                    ids.push(n.id);
                    match seq.serialize_element(&n) {
                        Ok(()) => Ok(ControlFlow::Continue(())),
                        Err(e) => {
                            err = Some(e);
                            Ok(ControlFlow::Break(()))
                        }
                    }
                });
                if let Some(e) = err {
                    return Err(e);
                }
                walked.map_err(|e| doc.fail(e))?;
                seq.end()
            }
            List::Edges => {
                let mut edges = store.session_edges(sid).map_err(|e| doc.fail(e))?;
                edges.sort_by_key(|e| (e.src, e.kind.code(), e.dst));
                doc.edges.set(edges.len());
                edges.serialize(s)
            }
            List::DecisionPoints => {
                let mut seq = s.serialize_seq(None)?;
                for id in doc.node_ids.borrow().iter() {
                    let mut ds = store.decision_points(*id).map_err(|e| doc.fail(e))?;
                    ds.sort_by_key(|d| d.id);
                    for d in &ds {
                        seq.serialize_element(d)?;
                    }
                }
                seq.end()
            }
            List::Insights => {
                let mut insights = store.insights(sid).map_err(|e| doc.fail(e))?;
                insights.sort_by_key(|i| i.id);
                insights.serialize(s)
            }
            List::Runs => {
                let mut runs = store.session_runs(sid).map_err(|e| doc.fail(e))?;
                runs.sort_by_key(|r| r.id);
                runs.serialize(s)
            }
            List::RawStreams => {
                let mut headers = store.session_streams(sid).map_err(|e| doc.fail(e))?;
                headers.sort_by_key(|h| h.id);
                let mut seq = s.serialize_seq(Some(headers.len()))?;
                for header in &headers {
                    seq.serialize_element(&Stream { doc, header })?;
                }
                seq.end()
            }
        }
    }
}

/// A recorded stream as [`super::StreamExport`] writes it, its chunks read when written.
struct Stream<'d, 'a> {
    doc: &'d Doc<'a>,
    header: &'d RawStream,
}

impl Serialize for Stream<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("StreamExport", 2)?;
        st.serialize_field("header", self.header)?;
        st.serialize_field("chunks", &Chunks(self))?;
        st.end()
    }
}

struct Chunks<'s, 'd, 'a>(&'s Stream<'d, 'a>);

impl Serialize for Chunks<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Stream { doc, header } = self.0;
        let chunks = doc.store.raw_chunks(header.id).map_err(|e| doc.fail(e))?;
        let mut seq = s.serialize_seq(Some(chunks.len()))?;
        for c in chunks {
            seq.serialize_element(&ChunkExport {
                offset_us: c.offset_us,
                bytes_base64: BASE64.encode(&c.bytes),
            })?;
        }
        seq.end()
    }
}
