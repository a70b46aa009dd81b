//! Value encoding: one format byte, then the body. Format 1 is JSON, which keeps unknown
//! fields readable by older code and lets migrations rewrite records field by field. Format 2
//! is the same JSON compressed with zstd: what a record longer than [`COMPRESS_ABOVE`] bytes
//! is written as (thinking, answers and tool results are most of a store, and text
//! compresses three to five times). Readers take either.

use std::cell::RefCell;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Edge, EdgeType, NodeId, StoreError};

/// The format byte of JSON-encoded values.
pub const FORMAT_JSON: u8 = 1;
/// The format byte of zstd-compressed JSON values.
pub const FORMAT_ZSTD_JSON: u8 = 2;
/// JSON bodies up to this many bytes are stored as they are: compressing them saves little.
const COMPRESS_ABOVE: usize = 200;
/// zstd's fastest level: importing is bound by the encoding thread, and higher levels gain
/// little on short records.
const ZSTD_LEVEL: i32 = 1;

thread_local! {
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
}

pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    let mut out = vec![FORMAT_JSON];
    serde_json::to_writer(&mut out, value).map_err(|e| StoreError::Encode(e.to_string()))?;
    Ok(compressed(&out).unwrap_or(out))
}

/// The compressed form of a format-1 value, when it has one worth keeping.
pub fn compressed(plain: &[u8]) -> Option<Vec<u8>> {
    let (&FORMAT_JSON, json) = plain.split_first()? else {
        return None;
    };
    if json.len() <= COMPRESS_ABOVE {
        return None;
    }
    let body = COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = Some(zstd::bulk::Compressor::new(ZSTD_LEVEL)?);
        }
        match c.as_mut() {
            Some(c) => c.compress(json),
            None => Err(std::io::Error::other("no zstd compressor")),
        }
    });
    match body {
        Ok(body) if body.len() < json.len() => {
            let mut v = Vec::with_capacity(body.len() + 1);
            v.push(FORMAT_ZSTD_JSON);
            v.extend_from_slice(&body);
            Some(v)
        }
        // Incompressible (or the compressor failed): the plain form is just as valid.
        _ => None,
    }
}

pub fn decode<T: DeserializeOwned>(table: &str, bytes: &[u8]) -> Result<T, StoreError> {
    let undecodable =
        |e: &dyn std::fmt::Display| StoreError::Corrupt(format!("{table}: undecodable value: {e}"));
    match bytes.split_first() {
        Some((&FORMAT_JSON, body)) => serde_json::from_slice(body).map_err(|e| undecodable(&e)),
        Some((&FORMAT_ZSTD_JSON, body)) => {
            let json = zstd::stream::decode_all(body).map_err(|e| undecodable(&e))?;
            serde_json::from_slice(&json).map_err(|e| undecodable(&e))
        }
        Some((other, _)) => Err(StoreError::Corrupt(format!(
            "{table}: unknown value format byte {other}"
        ))),
        None => Err(StoreError::Corrupt(format!("{table}: empty value"))),
    }
}

/// The JSON length of an encoded value (its size before compression).
pub fn plain_len(bytes: &[u8]) -> usize {
    match bytes.split_first() {
        Some((&FORMAT_ZSTD_JSON, body)) => zstd::zstd_safe::get_frame_content_size(body)
            .ok()
            .flatten()
            .map_or(bytes.len(), |n| n as usize + 1),
        _ => bytes.len(),
    }
}

/// Whether `e` carries nothing its `edges_out` key does not: the default weight and no meta.
pub fn is_plain_edge(e: &Edge) -> bool {
    e.weight == 1.0 && e.meta.is_empty()
}

/// An `edges_out` value: empty for a plain edge (schema v12 on; see [`is_plain_edge`]), else
/// the edge as any other record.
pub fn encode_edge(e: &Edge) -> Result<Vec<u8>, StoreError> {
    if is_plain_edge(e) {
        Ok(Vec::new())
    } else {
        encode(e)
    }
}

/// The edge stored under `key` (`src ‖ type ‖ dst`, see `tables::EDGES_OUT`) as `value`.
pub fn decode_edge(key: [u8; 33], value: &[u8]) -> Result<Edge, StoreError> {
    if !value.is_empty() {
        return decode("edges_out", value);
    }
    let (src, code, dst) = super::tables::split33(key);
    let kind = EdgeType::from_code(code)
        .ok_or_else(|| StoreError::Corrupt(format!("edges_out: unknown edge type {code}")))?;
    Ok(Edge::new(
        NodeId::from_bytes(src),
        kind,
        NodeId::from_bytes(dst),
    ))
}
