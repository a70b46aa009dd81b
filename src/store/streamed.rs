//! A long node's record written as its text streams in: the text is escaped and compressed
//! piece by piece, and the node's other fields close the record when it ends, so the turn's
//! last write does not encode megabytes of text at once.
//!
//! The record is the one [`codec::encode_node`] writes — the node's JSON, zstd-compressed,
//! with the store's dictionary when it has one (format 4, else 2) — except that its frame
//! does not say its size (it was not known when the frame began). Readers take such a frame
//! as a stream.

use std::io::Write;

use super::codec::{FORMAT_DICT_JSON, FORMAT_ZSTD_JSON};
use super::dict::RecordDict;
use super::write::EncodedNode;
use super::{Node, ZSTD_LEVEL};

/// What sits between a node's JSON before its text and the text: the text is the fourth
/// field, after `id`, `session` and `kind`, none of which can hold this.
const TEXT_FIELD: &[u8] = br#","text":""#;

/// The JSON of `n` with its text left out (an empty string), which [`RecordStream`] takes
/// the node's other fields from. Takes the text out of `n` for the moment, rather than
/// copying the node.
pub fn json_without_text(n: &mut Node) -> Option<Vec<u8>> {
    let text = std::mem::take(&mut n.text);
    let json = serde_json::to_vec(&*n).ok();
    n.text = text;
    json
}

/// Where the text of a node's JSON written by [`json_without_text`] starts.
fn text_at(json: &[u8]) -> Option<usize> {
    memchr::memmem::find(json, TEXT_FIELD).map(|at| at + TEXT_FIELD.len())
}

/// A node's record being compressed as its text arrives (see the module doc).
pub struct RecordStream<'d> {
    encoder: zstd::stream::write::Encoder<'d, Vec<u8>>,
    /// The node's JSON up to its text, to check the end against.
    head: Vec<u8>,
    /// Bytes of text taken so far.
    taken: usize,
    /// The JSON of the piece being taken.
    escaped: Vec<u8>,
    /// A write failed: the record is given up ([`RecordStream::finish`] returns `None`).
    failed: bool,
}

impl<'d> RecordStream<'d> {
    /// Starts the record of the node whose JSON without its text is `json`
    /// ([`json_without_text`]), compressed with `dict` when given.
    pub fn new(json: &[u8], dict: Option<&'d RecordDict>) -> Option<Self> {
        let head = json.get(..text_at(json)?)?.to_vec();
        let encoder = match dict {
            Some(d) => zstd::stream::write::Encoder::with_prepared_dictionary(
                vec![FORMAT_DICT_JSON],
                d.encoder(),
            ),
            None => zstd::stream::write::Encoder::new(vec![FORMAT_ZSTD_JSON], ZSTD_LEVEL),
        }
        .ok()?;
        let mut stream = Self {
            encoder,
            head,
            taken: 0,
            escaped: Vec::new(),
            failed: false,
        };
        stream.failed = stream.encoder.write_all(&stream.head).is_err();
        Some(stream)
    }

    /// Takes the next piece of the node's text.
    pub fn push(&mut self, text: &str) {
        if self.failed || text.is_empty() {
            return;
        }
        self.escaped.clear();
        // The piece as a JSON string, less its quotes: escaping goes character by
        // character, so the pieces escaped one by one join into the whole text escaped.
        json_escape_simd::escape_into(text, &mut self.escaped);
        let ok = self
            .escaped
            .get(1..self.escaped.len().saturating_sub(1))
            .is_some_and(|inner| self.encoder.write_all(inner).is_ok());
        self.failed = !ok;
        self.taken += text.len();
    }

    /// Ends the record of the node whose JSON without its text is now `json`, and whose
    /// text is `text_len` bytes long. `None` (the node is then encoded whole) when the
    /// text taken is not as long, the node's fields before its text changed, or a write
    /// failed.
    pub fn finish(mut self, json: &[u8], text_len: usize) -> Option<EncodedNode> {
        let at = text_at(json)?;
        if self.failed || self.taken != text_len || json.get(..at)? != self.head.as_slice() {
            return None;
        }
        // The rest of the JSON starts with the text's closing quote.
        self.encoder.write_all(json.get(at..)?).ok()?;
        let bytes = self.encoder.finish().ok()?;
        Some(EncodedNode::streamed(bytes))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::store::{NodeStatus, NodeType, SessionId, codec};

    fn long_node() -> Node {
        let mut n = Node::new(SessionId::new(), NodeType::Thinking, "");
        n.status = NodeStatus::Streaming;
        n.model = Some("m".into());
        n
    }

    fn pieces() -> Vec<String> {
        (0..16000)
            .map(|i| {
                format!(
                    "step {i} weighs \"the\" option\\ against ☃\n\t{}",
                    "x".repeat(i % 7)
                )
            })
            .collect()
    }

    #[test]
    fn a_streamed_record_reads_back_as_the_node_encoded_whole() {
        let _alone = crate::store::dict::tests::forgetting();
        let dict = crate::store::dict::tests::trained();
        for dict in [None, Some(dict.as_ref())] {
            let mut n = long_node();
            let mut stream = RecordStream::new(&json_without_text(&mut n).unwrap(), dict).unwrap();
            for p in pieces() {
                n.text.push_str(&p);
                stream.push(&p);
            }
            // Fields after the text change by the end.
            n.status = NodeStatus::Complete;
            n.confidence = Some(0.5);
            n.meta.insert("steps".into(), serde_json::json!([{"i": 1}]));
            let json = json_without_text(&mut n).unwrap();
            let record = stream.finish(&json, n.text.len()).unwrap().into_bytes();
            let want = if dict.is_some() { 4 } else { 2 };
            assert_eq!(record[0], want);
            let back: Node = codec::decode("nodes", &record).unwrap();
            // Its size before compression, which the frame does not say, is read through.
            assert_eq!(
                codec::plain_len(&record),
                serde_json::to_vec(&n).unwrap().len() + 1
            );
            assert_eq!(
                serde_json::to_value(&back).unwrap(),
                serde_json::to_value(&n).unwrap()
            );
            // About as small as the record encoded in one go (a frame begun without its size
            // takes parameters for any size).
            let whole = codec::encode_node(&n, dict).unwrap();
            assert!(
                record.len() < whole.len() * 5 / 4,
                "{} vs {} ({})",
                record.len(),
                whole.len(),
                dict.is_some()
            );
        }
    }

    /// Pieces are escaped as `serde_json` escapes the node whole, byte for byte: every
    /// control character, quotes, backslashes, `/`, DEL and characters outside the BMP.
    #[test]
    fn pieces_escape_as_the_node_serialises() {
        let every: String = (0u32..0x80).filter_map(char::from_u32).collect();
        // Long enough for any vector width, each character at every offset.
        let long: String = (0..70)
            .map(|i| format!("{}{every}", "x".repeat(i)))
            .collect();
        for text in [every.as_str(), &long, "\"\\/ ☃ 𝄞 \u{2028}\u{feff}", ""] {
            let mut ours = Vec::new();
            json_escape_simd::escape_into(text, &mut ours);
            assert_eq!(ours, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_piece_escapes_as_serde_json_escapes_it(text in ".{0,200}") {
            let mut ours = Vec::new();
            json_escape_simd::escape_into(&text, &mut ours);
            proptest::prop_assert_eq!(ours, serde_json::to_vec(&text).unwrap());
        }
    }

    #[test]
    fn a_streamed_record_that_does_not_match_its_node_is_given_up() {
        let mut n = long_node();
        let json = json_without_text(&mut n).unwrap();
        let start = || RecordStream::new(&json, None).unwrap();
        // Text missing.
        let mut s = start();
        s.push("abc");
        assert!(s.finish(&json, 4).is_none());
        // A field before the text changed.
        let mut s = start();
        s.push("abc");
        let mut other = n.clone();
        other.kind = NodeType::Response;
        assert!(
            s.finish(&json_without_text(&mut other).unwrap(), 3)
                .is_none()
        );
        // Matching: kept, and it reads back as the node.
        let mut s = start();
        s.push("abc");
        let record = s.finish(&json, 3).unwrap().into_bytes();
        let back: Node = codec::decode("nodes", &record).unwrap();
        assert_eq!(back.text, "abc");
        assert_eq!(back.id, n.id);
    }
}
