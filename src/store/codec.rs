//! Value encoding: one format byte, then the body. Format 1 is JSON, which keeps unknown
//! fields readable by older code and lets migrations rewrite records field by field. Format 2
//! is the same JSON compressed with zstd: what a record longer than `COMPRESS_ABOVE` (200)
//! bytes is written as (thinking, answers and tool results are most of a store, and text
//! compresses three to five times). Format 4 (node records, schema v14 on) is the JSON
//! compressed with one of the store's dictionaries, whose id the zstd frame carries
//! (`store/dict.rs`). Readers take any.

use std::cell::RefCell;
use std::io::Read;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::dict::{self, RecordDict};
use super::{COMPRESS_ABOVE, Edge, EdgeType, Node, NodeId, StoreError, StoredChunk, ZSTD_LEVEL};

/// The format byte of JSON-encoded values.
pub const FORMAT_JSON: u8 = 1;
/// The format byte of zstd-compressed JSON values.
pub const FORMAT_ZSTD_JSON: u8 = 2;
/// The format byte of JSON values compressed with a dictionary ([`RecordDict`]).
pub const FORMAT_DICT_JSON: u8 = 4;

/// A buffer kept for a thread's next encode, unless it grew past this many bytes (one huge
/// record should not pin its size for the thread's lifetime).
const KEEP_BUFFER_BYTES: usize = 4 << 20;

thread_local! {
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    /// A context for compressing with a dictionary (the dictionary comes with each call).
    static DICT_COMPRESSOR: RefCell<Option<zstd::zstd_safe::CCtx<'static>>> = const { RefCell::new(None) };
    /// The JSON of the value being encoded and its compressed form: reused, so encoding a
    /// record allocates only the bytes it returns.
    static BUFFERS: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    encode_with_dict(value, None)
}

/// [`encode`], compressing with `dict` when one is given (format 4).
pub fn encode_with_dict<T: Serialize>(
    value: &T,
    dict: Option<&RecordDict>,
) -> Result<Vec<u8>, StoreError> {
    encode_sized(value, dict, 0)
}

/// A node's record ([`encode_with_dict`]), its JSON buffer made room for the node's text up
/// front: a long trace's megabytes would otherwise grow it by doubling, copying and faulting
/// in twice its size, in the turn's last write.
pub fn encode_node(n: &Node, dict: Option<&RecordDict>) -> Result<Vec<u8>, StoreError> {
    let meta: usize = n.meta.iter().map(|(k, v)| k.len() + json_len_hint(v)).sum();
    encode_sized(n, dict, n.text.len() + n.text.len() / 16 + meta + 1024)
}

/// About how many bytes of JSON `v` takes (a little more for plain text): a long trace's
/// steps are hundreds of kilobytes of meta, which the text's share alone left out, so its
/// buffer was grown (copied and faulted in again) near its end.
fn json_len_hint(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => s.len() + s.len() / 16 + 2,
        Value::Array(a) => 2 + a.iter().map(|v| json_len_hint(v) + 1).sum::<usize>(),
        Value::Object(o) => {
            2 + o
                .iter()
                .map(|(k, v)| k.len() + 4 + json_len_hint(v))
                .sum::<usize>()
        }
    }
}

/// [`encode_with_dict`] with room for `json_bytes` of JSON made first.
fn encode_sized<T: Serialize>(
    value: &T,
    dict: Option<&RecordDict>,
    json_bytes: usize,
) -> Result<Vec<u8>, StoreError> {
    BUFFERS.with(|b| {
        let Ok(mut b) = b.try_borrow_mut() else {
            // Encoding from inside an encode (nothing does): no shared buffers then.
            let mut plain = Vec::with_capacity(json_bytes + 1);
            return encode_with(value, dict, &mut plain, &mut Vec::new());
        };
        let (plain, packed) = &mut *b;
        plain.clear();
        plain.reserve(json_bytes + 1);
        let out = encode_with(value, dict, plain, packed);
        for buf in [plain, packed] {
            if buf.capacity() > KEEP_BUFFER_BYTES {
                *buf = Vec::new();
            }
        }
        out
    })
}

/// [`encode_with_dict`] with the buffers to use.
fn encode_with<T: Serialize>(
    value: &T,
    dict: Option<&RecordDict>,
    plain: &mut Vec<u8>,
    packed: &mut Vec<u8>,
) -> Result<Vec<u8>, StoreError> {
    plain.clear();
    plain.push(FORMAT_JSON);
    serde_json::to_writer(&mut *plain, value).map_err(|e| StoreError::Encode(e.to_string()))?;
    let compressed = match dict {
        Some(d) => compress_with_dict(plain, d, packed),
        None => compress_into(plain, packed),
    };
    Ok(compressed.unwrap_or_else(|| plain.clone()))
}

/// A format-1 value compressed with `dict` (format 4), when that is worth keeping.
fn compress_with_dict(plain: &[u8], dict: &RecordDict, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let (&FORMAT_JSON, json) = plain.split_first()? else {
        return None;
    };
    if json.len() <= COMPRESS_ABOVE {
        return None;
    }
    buf.clear();
    buf.reserve(zstd::zstd_safe::compress_bound(json.len()));
    let written = DICT_COMPRESSOR.with(|c| {
        let mut c = c.try_borrow_mut().ok()?;
        let ctx = c.get_or_insert_with(zstd::zstd_safe::CCtx::create);
        ctx.compress_using_cdict(&mut *buf, json, dict.encoder().as_cdict())
            .ok()
    })?;
    if written >= json.len() {
        return None;
    }
    let mut v = Vec::with_capacity(written + 1);
    v.push(FORMAT_DICT_JSON);
    v.extend_from_slice(buf.get(..written)?);
    Some(v)
}

/// The compressed form of a format-1 value, when it has one worth keeping.
pub fn compressed(plain: &[u8]) -> Option<Vec<u8>> {
    compress_into(plain, &mut Vec::new())
}

/// [`compressed`], compressing into `buf` first.
fn compress_into(plain: &[u8], buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let (&FORMAT_JSON, json) = plain.split_first()? else {
        return None;
    };
    if json.len() <= COMPRESS_ABOVE {
        return None;
    }
    let body = zstd_into(json, buf)?;
    let mut v = Vec::with_capacity(body.len() + 1);
    v.push(FORMAT_ZSTD_JSON);
    v.extend_from_slice(body);
    Some(v)
}

/// `data` compressed into `buf` with the thread's compressor; `None` when that saves nothing
/// (or the compressor failed: the plain form is just as valid).
fn zstd_into<'b>(data: &[u8], buf: &'b mut Vec<u8>) -> Option<&'b [u8]> {
    buf.clear();
    buf.reserve(zstd::zstd_safe::compress_bound(data.len()));
    let written = COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = Some(zstd::bulk::Compressor::new(ZSTD_LEVEL)?);
        }
        match c.as_mut() {
            Some(c) => c.compress_to_buffer(data, &mut *buf),
            None => Err(std::io::Error::other("no zstd compressor")),
        }
    });
    match written {
        Ok(n) if n < data.len() => buf.get(..n),
        _ => None,
    }
}

/// The bit of a raw chunk's offset header that says its bytes are a zstd frame (schema v13
/// on; no offset in microseconds comes near it). Chunks without it hold their bytes as
/// received.
const CHUNK_PACKED: u64 = 1 << 63;

/// A raw chunk as its `raw_chunks` value: its offset (µs, u64 big-endian) and its bytes,
/// zstd-compressed when that makes them smaller. A provider's stream is JSON repeated
/// thousands of times and shrinks ten times or more, so a long turn's record is mostly not
/// written at all (and compressing it is cheaper than writing it).
pub fn encode_raw_chunk(offset_us: u64, bytes: &[u8]) -> Vec<u8> {
    let offset_us = offset_us & !CHUNK_PACKED;
    let mut buf = Vec::new();
    let (head, body) = match (bytes.len() > COMPRESS_ABOVE)
        .then(|| zstd_into(bytes, &mut buf))
        .flatten()
    {
        Some(packed) => (offset_us | CHUNK_PACKED, packed),
        None => (offset_us, bytes),
    };
    let mut v = Vec::with_capacity(8 + body.len());
    v.extend_from_slice(&head.to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// The compressed form of a `raw_chunks` value written before chunks were compressed;
/// `None` for one that is compressed already, or that compressing would not shrink.
pub fn packed_raw_chunk(v: &[u8]) -> Option<Vec<u8>> {
    let (head, body) = v.split_first_chunk::<8>()?;
    let offset_us = u64::from_be_bytes(*head);
    if offset_us & CHUNK_PACKED != 0 {
        return None;
    }
    let packed = encode_raw_chunk(offset_us, body);
    (packed.len() < v.len()).then_some(packed)
}

/// Bytes a `raw_chunks` value would take with its bytes as received (its own size for one
/// that is not compressed, or whose frame does not record its size).
pub fn raw_chunk_plain_len(v: &[u8]) -> usize {
    match v.split_first_chunk::<8>() {
        Some((head, body)) if u64::from_be_bytes(*head) & CHUNK_PACKED != 0 => {
            zstd::zstd_safe::get_frame_content_size(body)
                .ok()
                .flatten()
                .and_then(|n| usize::try_from(n).ok())
                .map_or(v.len(), |n| 8 + n)
        }
        _ => v.len(),
    }
}

/// Reads a `raw_chunks` value written by [`encode_raw_chunk`] or before it (bytes as they
/// came).
pub fn decode_raw_chunk(v: &[u8]) -> Result<StoredChunk, StoreError> {
    let corrupt = |why: &str| StoreError::Corrupt(format!("raw_chunks: {why}"));
    let (head, body) = v
        .split_first_chunk::<8>()
        .ok_or_else(|| corrupt("value shorter than its header"))?;
    let head = u64::from_be_bytes(*head);
    if head & CHUNK_PACKED == 0 {
        return Ok(StoredChunk {
            offset_us: head,
            bytes: body.to_vec(),
        });
    }
    let mut bytes = Vec::new();
    DECODING
        .with(|d| match d.try_borrow_mut() {
            Ok(mut d) => decompress_into(&mut d.0, body, &mut bytes),
            Err(_) => decompress_into(&mut None, body, &mut bytes),
        })
        .map_err(|e| corrupt(&format!("a compressed chunk does not decompress: {e}")))?;
    Ok(StoredChunk {
        offset_us: head & !CHUNK_PACKED,
        bytes,
    })
}

/// Largest decompressed size taken from a frame's header and reserved up front.
const RESERVE_UP_TO: usize = 256 << 20;

thread_local! {
    /// A thread's zstd decompression context and the buffer it decompresses into. A context
    /// is large to set up (its allocation showed as a fifth of the time to open a store of
    /// thousands of sessions), so each thread makes one.
    static DECODING: RefCell<(Option<zstd::bulk::Decompressor<'static>>, Vec<u8>)> =
        const { RefCell::new((None, Vec::new())) };
}

/// Decompresses the zstd frame `body` into `out` with the thread's context.
fn decompress_into(
    ctx: &mut Option<zstd::bulk::Decompressor<'static>>,
    body: &[u8],
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    out.clear();
    let Some(size) = zstd::zstd_safe::get_frame_content_size(body)
        .ok()
        .flatten()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= RESERVE_UP_TO)
    else {
        // Every frame glassbox writes records its size; another one (or one claiming more
        // than a record holds) is read as a stream, which grows only with what it finds.
        *out = zstd::stream::decode_all(body)?;
        return Ok(());
    };
    out.reserve(size);
    if ctx.is_none() {
        *ctx = Some(zstd::bulk::Decompressor::new()?);
    }
    match ctx.as_mut() {
        Some(d) => d.decompress_to_buffer(body, out).map(|_| ()),
        None => Err(std::io::Error::other("no zstd decompressor")),
    }
}

pub fn decode<T: DeserializeOwned>(table: &str, bytes: &[u8]) -> Result<T, StoreError> {
    let undecodable =
        |e: &dyn std::fmt::Display| StoreError::Corrupt(format!("{table}: undecodable value: {e}"));
    match bytes.split_first() {
        Some((&FORMAT_JSON, body)) => serde_json::from_slice(body).map_err(|e| undecodable(&e)),
        Some((&FORMAT_ZSTD_JSON, body)) => DECODING.with(|d| {
            let Ok(mut d) = d.try_borrow_mut() else {
                let json = zstd::stream::decode_all(body).map_err(|e| undecodable(&e))?;
                return serde_json::from_slice(&json).map_err(|e| undecodable(&e));
            };
            let (ctx, json) = &mut *d;
            decompress_into(ctx, body, json).map_err(|e| undecodable(&e))?;
            let value = serde_json::from_slice(json).map_err(|e| undecodable(&e));
            if json.capacity() > KEEP_BUFFER_BYTES {
                *json = Vec::new();
            }
            value
        }),
        Some((&FORMAT_DICT_JSON, body)) => {
            let json = decompress_with_dict(body).map_err(|e| undecodable(&e))?;
            serde_json::from_slice(&json).map_err(|e| undecodable(&e))
        }
        Some((other, _)) => Err(StoreError::Corrupt(format!(
            "{table}: unknown value format byte {other}"
        ))),
        None => Err(StoreError::Corrupt(format!("{table}: empty value"))),
    }
}

thread_local! {
    /// A thread's context for decompressing with a dictionary.
    static DICT_DECODING: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
}

/// The JSON of a format-4 body: its frame names the dictionary it needs.
fn decompress_with_dict(body: &[u8]) -> std::io::Result<Vec<u8>> {
    let id = zstd::zstd_safe::get_dict_id_from_frame(body)
        .ok_or_else(|| std::io::Error::other("the frame names no dictionary"))?
        .get();
    let dict = dict::find(id).ok_or_else(|| {
        std::io::Error::other(format!(
            "needs compression dictionary {id}, which this process has not loaded (if another \
             glassbox just added it, the next read takes it in)"
        ))
    })?;
    let Some(size) = zstd::zstd_safe::get_frame_content_size(body)
        .ok()
        .flatten()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= RESERVE_UP_TO)
    else {
        // A record written as its text streamed in (`store/streamed.rs`) does not say its
        // size: it is read as a stream, which grows only with what it finds.
        let mut out = Vec::new();
        zstd::stream::read::Decoder::with_prepared_dictionary(body, dict.decoder())?
            .read_to_end(&mut out)?;
        return Ok(out);
    };
    let mut out = Vec::with_capacity(size);
    DICT_DECODING.with(|d| {
        let mut fresh = None;
        let mut held = d.try_borrow_mut().ok();
        let ctx = match held.as_deref_mut() {
            Some(slot) => slot.get_or_insert_with(zstd::zstd_safe::DCtx::create),
            None => fresh.get_or_insert_with(zstd::zstd_safe::DCtx::create),
        };
        ctx.decompress_using_ddict(&mut out, body, dict.decoder().as_ddict())
            .map_err(|code| std::io::Error::other(zstd::zstd_safe::get_error_name(code)))
    })?;
    Ok(out)
}

/// The first `limit` bytes of a record's JSON, for a record stored plain or compressed
/// without a dictionary; `None` for one compressed with a dictionary or that does not
/// decompress. Reads no more of the frame than that.
pub fn record_json_start(bytes: &[u8], limit: usize) -> Option<std::borrow::Cow<'_, [u8]>> {
    match bytes.split_first()? {
        (&FORMAT_JSON, body) => Some(std::borrow::Cow::Borrowed(&body[..body.len().min(limit)])),
        (&FORMAT_ZSTD_JSON, body) => {
            let mut json = Vec::new();
            zstd::stream::read::Decoder::new(body)
                .ok()?
                .take(limit as u64)
                .read_to_end(&mut json)
                .ok()?;
            Some(std::borrow::Cow::Owned(json))
        }
        _ => None,
    }
}

/// Whether a record is one a dictionary could compress that was written without one:
/// compressed on its own, or plain JSON long enough to compress. Reads its first byte only.
pub fn wants_dict(bytes: &[u8]) -> bool {
    match bytes.first() {
        Some(&FORMAT_ZSTD_JSON) => true,
        Some(&FORMAT_JSON) => bytes.len() > COMPRESS_ABOVE + 1,
        _ => false,
    }
}

/// A record stored before its store had a dictionary (plain JSON, or compressed without
/// one) compressed with `dict`: `None` for any other record, one too short to compress, one
/// that does not decompress, and one it would not make smaller.
pub fn recompressed_with_dict(bytes: &[u8], dict: &RecordDict) -> Option<Vec<u8>> {
    let plain = match bytes.split_first()? {
        (&FORMAT_JSON, _) => std::borrow::Cow::Borrowed(bytes),
        (&FORMAT_ZSTD_JSON, body) => {
            let mut plain = vec![FORMAT_JSON];
            plain.extend(zstd::stream::decode_all(body).ok()?);
            std::borrow::Cow::Owned(plain)
        }
        _ => return None,
    };
    compress_with_dict(&plain, dict, &mut Vec::new()).filter(|packed| packed.len() < bytes.len())
}

/// The JSON length of an encoded value (its size before compression).
pub fn plain_len(bytes: &[u8]) -> usize {
    match bytes.split_first() {
        Some((&format @ (FORMAT_ZSTD_JSON | FORMAT_DICT_JSON), body)) => {
            match zstd::zstd_safe::get_frame_content_size(body) {
                Ok(Some(n)) => n as usize + 1,
                // A frame that does not say its size (a record written as it streamed) is
                // read to count it.
                _ => read_len(format, body).map_or(bytes.len(), |n| n + 1),
            }
        }
        _ => bytes.len(),
    }
}

/// How many bytes a compressed body decompresses to, read as a stream; `None` when it
/// does not decompress (or needs a dictionary not known here).
fn read_len(format: u8, body: &[u8]) -> Option<usize> {
    let mut sink = std::io::sink();
    let read = if format == FORMAT_DICT_JSON {
        let dict = dict::find(zstd::zstd_safe::get_dict_id_from_frame(body)?.get())?;
        let mut decoder =
            zstd::stream::read::Decoder::with_prepared_dictionary(body, dict.decoder()).ok()?;
        std::io::copy(&mut decoder, &mut sink)
    } else {
        std::io::copy(&mut zstd::stream::read::Decoder::new(body).ok()?, &mut sink)
    };
    read.ok().and_then(|n| usize::try_from(n).ok())
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn compressed_records_decode_with_and_without_a_recorded_size() {
        let value: Vec<String> = (0..200).map(|i| format!("word {i} again")).collect();
        let bytes = encode(&value).unwrap();
        assert_eq!(bytes[0], FORMAT_ZSTD_JSON);
        // Twice on one thread: the second reuses the context and buffer.
        for _ in 0..2 {
            assert_eq!(decode::<Vec<String>>("t", &bytes).unwrap(), value);
        }
        // A frame written as a stream does not record its size.
        let json = serde_json::to_vec(&value).unwrap();
        let mut streamed = vec![FORMAT_ZSTD_JSON];
        let mut enc = zstd::stream::Encoder::new(&mut streamed, 1).unwrap();
        std::io::Write::write_all(&mut enc, &json).unwrap();
        enc.finish().unwrap();
        assert_eq!(decode::<Vec<String>>("t", &streamed).unwrap(), value);
        // A cut frame is a one-line error naming the table.
        let cut = &bytes[..bytes.len() / 2];
        let err = decode::<Vec<String>>("nodes", cut).unwrap_err().to_string();
        assert!(err.contains("nodes: undecodable value"), "{err}");
    }

    #[test]
    fn raw_chunks_are_stored_compressed_and_read_back_as_they_came() {
        let sse: Vec<u8> = (0..400)
            .flat_map(|i| {
                format!("event: content_block_delta\ndata: {{\"text\":\"step {i}\"}}\n\n")
                    .into_bytes()
            })
            .collect();
        let packed = encode_raw_chunk(1_234, &sse);
        assert!(
            packed.len() * 5 < sse.len(),
            "{} of {}",
            packed.len(),
            sse.len()
        );
        assert_eq!(packed[0] & 0x80, 0x80, "marked compressed");
        let back = decode_raw_chunk(&packed).unwrap();
        assert_eq!(
            (back.offset_us, back.bytes.as_slice()),
            (1_234, sse.as_slice())
        );
        // A short chunk, and one written before compression: offset then the bytes.
        for v in [
            encode_raw_chunk(7, b"data: {}\n\n"),
            [7u64.to_be_bytes().as_slice(), b"data: {}\n\n"].concat(),
        ] {
            assert_eq!(&v[8..], b"data: {}\n\n");
            let back = decode_raw_chunk(&v).unwrap();
            assert_eq!(
                (back.offset_us, back.bytes.as_slice()),
                (7, b"data: {}\n\n".as_slice())
            );
        }
        // A marked value that is no zstd frame is reported, not read as bytes.
        let mut broken = packed.clone();
        broken.truncate(20);
        assert!(matches!(
            decode_raw_chunk(&broken),
            Err(StoreError::Corrupt(_))
        ));
        assert!(matches!(
            decode_raw_chunk(&[1, 2, 3]),
            Err(StoreError::Corrupt(_))
        ));
    }
}
