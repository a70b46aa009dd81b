//! Replay of recorded provider responses: the stored raw bytes are fed, at their recorded
//! pace × speed, through the same wire decoder that read them live, so a replay yields the
//! same events and the same bytes as the original call.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::anthropic::AnthropicDecoder;
use super::ollama::OllamaDecoder;
use super::openai::OpenAiDecoder;
use super::wire::{DecodeStats, WireDecoder};
use super::{
    CallCtx, ChatRequest, EventStream, LlmError, Provider, RawChunk, StopReason, StreamEvent, Usage,
};
use crate::store::{RawStream, Store, StoreError, StoredChunk, StreamId};

/// One line of a local-model recording: which pass produced the piece (`t` thinking, `a`
/// answer), the token id and its text; `u` lines carry usage and `s` lines the stop reason.
/// A local call's raw stream is these records as NDJSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenRecord {
    pub p: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub s: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopReason>,
}

impl TokenRecord {
    /// The stream event a recorded line stands for.
    pub fn to_event(&self) -> Option<StreamEvent> {
        match self.p.as_str() {
            "t" => Some(StreamEvent::ThinkingDelta {
                text: self.s.clone(),
            }),
            "a" => Some(StreamEvent::TextDelta {
                text: self.s.clone(),
            }),
            "u" => self.usage.map(|usage| StreamEvent::Usage { usage }),
            "s" => self.stop.clone().map(|reason| StreamEvent::Stop { reason }),
            _ => None,
        }
    }
}

/// Decodes a local-model recording (NDJSON [`TokenRecord`]s).
#[derive(Debug, Default)]
pub struct LocalRecordDecoder {
    buf: Vec<u8>,
    stats: DecodeStats,
    done: bool,
    seen_any: bool,
}

impl LocalRecordDecoder {
    fn line(&mut self, line: &[u8], out: &mut Vec<StreamEvent>) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        self.seen_any = true;
        match serde_json::from_slice::<TokenRecord>(line) {
            Ok(rec) => {
                self.stats.frames += 1;
                match rec.to_event() {
                    Some(ev) => {
                        self.done |= matches!(ev, StreamEvent::Stop { .. });
                        out.push(ev);
                    }
                    None => self.stats.unknown += 1,
                }
            }
            Err(_) => self.stats.malformed += 1,
        }
    }
}

impl WireDecoder for LocalRecordDecoder {
    fn feed(&mut self, bytes: &[u8]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.done {
            return out;
        }
        self.buf.extend_from_slice(bytes);
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=pos).collect();
            self.line(&line, &mut out);
            if self.done {
                break;
            }
        }
        out
    }

    fn flush(&mut self) -> Vec<StreamEvent> {
        Vec::new()
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if !self.done {
            let rest = std::mem::take(&mut self.buf);
            self.line(&rest, &mut out);
        }
        if !self.done {
            self.done = true;
            out.push(StreamEvent::Error {
                error: LlmError::Truncated {
                    provider: "local".into(),
                    detail: "the recording ends before the stop record".into(),
                },
            });
        }
        out
    }

    fn is_blank(&self) -> bool {
        !self.seen_any
    }

    fn stats(&self) -> DecodeStats {
        self.stats
    }
}

/// A fresh live decoder of an HTTP provider's body (`anthropic`, `openai`, `ollama`): the
/// decoder that provider hands the HTTP driver, here for replaying its recorded bytes;
/// `think_open` as in [`super::http::HttpSettings::think_open`].
pub fn wire_decoder(provider: &str, think_open: bool) -> Option<Box<dyn WireDecoder>> {
    match provider {
        "anthropic" => Some(Box::new(AnthropicDecoder::new())),
        "openai" => Some(Box::new(OpenAiDecoder::new(think_open))),
        "ollama" => Some(Box::new(OllamaDecoder::new(think_open))),
        _ => None,
    }
}

/// The decoder that reads a recording made by `provider`: the live decoders for HTTP
/// providers, the token-record decoder for the local model.
pub fn decoder_for(provider: &str) -> Result<Box<dyn WireDecoder>, LlmError> {
    if provider == "local" {
        return Ok(Box::new(LocalRecordDecoder::default()));
    }
    wire_decoder(provider, false).ok_or_else(|| LlmError::Config {
        message: format!("cannot replay a recording of provider '{provider}'"),
    })
}

/// Plays one recorded stream back.
#[derive(Clone)]
pub struct ReplayProvider {
    header: Arc<RawStream>,
    chunks: Arc<Vec<StoredChunk>>,
    /// Pace multiplier: 1 is as recorded, 2 twice as fast; 0 or less plays without waiting.
    speed: f64,
}

impl ReplayProvider {
    pub fn new(header: RawStream, chunks: Vec<StoredChunk>, speed: f64) -> Self {
        Self {
            header: Arc::new(header),
            chunks: Arc::new(chunks),
            speed,
        }
    }

    /// Loads recording `id` from the store.
    pub fn from_store(store: &Store, id: StreamId, speed: f64) -> Result<Self, StoreError> {
        let header = store
            .raw_stream(id)?
            .ok_or_else(|| StoreError::NotFound(format!("raw stream {id}")))?;
        Ok(Self::new(header, store.raw_chunks(id)?, speed))
    }

    /// The recorded provider's name.
    pub fn recorded_provider(&self) -> &str {
        &self.header.provider
    }

    fn delay(&self, offset_us: u64) -> Duration {
        if self.speed <= 0.0 || !self.speed.is_finite() {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(offset_us as f64 / 1e6 / self.speed)
    }
}

/// Where a replay is: which chunk comes next and the events not yet handed out.
struct Cursor {
    provider: ReplayProvider,
    decoder: Box<dyn WireDecoder>,
    next: usize,
    started: Instant,
    pending: VecDeque<StreamEvent>,
    ctx: CallCtx,
    finished: bool,
}

impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        "replay"
    }

    /// Replays the recording; the request is ignored (the recording already answers it).
    fn stream(&self, _req: ChatRequest, ctx: CallCtx) -> EventStream {
        let decoder = match decoder_for(&self.header.provider) {
            Ok(d) => d,
            Err(error) => return futures::stream::iter([StreamEvent::Error { error }]).boxed(),
        };
        let cursor = Cursor {
            provider: self.clone(),
            decoder,
            next: 0,
            started: Instant::now(),
            pending: VecDeque::new(),
            ctx,
            finished: false,
        };
        futures::stream::unfold(cursor, |mut c| async move {
            loop {
                if let Some(ev) = c.pending.pop_front() {
                    return Some((ev, c));
                }
                if c.finished {
                    return None;
                }
                let Some(chunk) = c.provider.chunks.get(c.next).cloned() else {
                    c.finished = true;
                    c.pending.extend(c.decoder.finish());
                    continue;
                };
                c.next += 1;
                let due = c.started + c.provider.delay(chunk.offset_us);
                tokio::select! {
                    _ = tokio::time::sleep_until(due) => {}
                    _ = c.ctx.cancel.cancelled() => {
                        c.finished = true;
                        c.pending.extend(c.decoder.flush());
                        c.pending.push_back(StreamEvent::Stop { reason: StopReason::Cancelled });
                        continue;
                    }
                }
                if let Some(raw) = &c.ctx.raw {
                    let _ = raw.send(RawChunk {
                        offset: c.started.elapsed(),
                        bytes: Bytes::from(chunk.bytes.clone()),
                    });
                }
                c.pending.extend(c.decoder.feed(&chunk.bytes));
                if c.pending
                    .iter()
                    .any(|e| matches!(e, StreamEvent::Stop { .. } | StreamEvent::Error { .. }))
                {
                    c.finished = true;
                }
            }
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_records_decode_in_any_chunking() {
        let lines = concat!(
            "{\"p\":\"t\",\"id\":1,\"s\":\"Hm\"}\n",
            "{\"p\":\"a\",\"id\":2,\"s\":\"Yes\"}\n",
            "{\"p\":\"u\",\"usage\":{\"input_tokens\":3,\"output_tokens\":2}}\n",
            "{\"p\":\"s\",\"stop\":\"end_turn\"}\n"
        );
        let whole = {
            let mut d = LocalRecordDecoder::default();
            let mut v = d.feed(lines.as_bytes());
            v.extend(d.finish());
            v
        };
        assert_eq!(whole.len(), 4);
        assert_eq!(whole[0], StreamEvent::ThinkingDelta { text: "Hm".into() });
        assert_eq!(
            whole[3],
            StreamEvent::Stop {
                reason: StopReason::EndTurn
            }
        );
        for split in 1..lines.len() {
            let mut d = LocalRecordDecoder::default();
            let mut v = d.feed(&lines.as_bytes()[..split]);
            v.extend(d.feed(&lines.as_bytes()[split..]));
            v.extend(d.finish());
            assert_eq!(v, whole, "split at {split}");
        }
    }

    #[test]
    fn a_recording_without_a_stop_ends_with_an_error() {
        let mut d = LocalRecordDecoder::default();
        let mut v = d.feed(b"{\"p\":\"a\",\"s\":\"x\"}\n{\"p\":");
        v.extend(d.finish());
        assert!(matches!(v.last(), Some(StreamEvent::Error { .. })));
        assert_eq!(d.stats().malformed, 1);
    }
}
