//! SSE framing: the same body — 100,000 `content_block_delta` frames of an Anthropic thinking
//! stream, cut into 1,400-byte chunks as a network would deliver them — through four parsers:
//!
//! - `hand_written`: the incremental decoder `engines::llm::sse` held first (kept here,
//!   unchanged in what it does, so the comparison can be run again);
//! - `eventsource_stream`: the `eventsource-stream` crate on its own, as a stream of byte
//!   chunks (glassbox framed with it, behind its line scanner, until the scanner below);
//! - `shipped_decoder`: `engines::llm::sse::SseDecoder::push`, frames returned as owned
//!   strings (what tests and tools use);
//! - `shipped_batch`: `SseDecoder::push_into` into one reused `Frames` batch, lines read where
//!   they lie: the path the Anthropic and OpenAI-compatible decoders take.
//!
//! All four produce the same frames (checked before timing); reported as frames per second.

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use glassbox::engines::llm::sse::{Frames, SseDecoder};

const FRAMES: usize = 100_000;
const CHUNK: usize = 1_400;

/// (event name, data, last id) of each frame.
type Owned = Vec<(Option<String>, String, Option<String>)>;

fn body() -> Vec<u8> {
    let mut out = String::new();
    for i in 0..FRAMES {
        let data = serde_json::json!({
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": format!("step {i} weighs a detail; ")}
        });
        out.push_str(&format!("event: content_block_delta\ndata: {data}\n\n"));
    }
    out.into_bytes()
}

fn chunks(body: &[u8]) -> Vec<Bytes> {
    body.chunks(CHUNK).map(Bytes::copy_from_slice).collect()
}

/// The decoder glassbox used before it switched to the crate: lines split on CR, LF and CRLF
/// (also across chunks), each decoded lossily, fields assembled into frames by hand, and
/// comments, unknown lines and frames without data counted.
#[derive(Default)]
struct HandWritten {
    line: Vec<u8>,
    skip_lf: bool,
    first_line_done: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
    first_junk: Option<String>,
    comments: u64,
    junk_lines: u64,
    empty_frames: u64,
}

impl HandWritten {
    fn push(&mut self, bytes: &[u8], frames: &mut Owned) {
        let mut rest = bytes;
        if self.skip_lf && !bytes.is_empty() {
            self.skip_lf = false;
            if let Some((&b'\n', tail)) = rest.split_first() {
                rest = tail;
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..pos]);
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, frames);
            let terminator = rest[pos];
            rest = &rest[pos + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
        }
        self.line.extend_from_slice(rest);
    }

    fn finish(&mut self, frames: &mut Owned) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, frames);
        }
        self.dispatch(frames);
    }

    fn line_done(&mut self, raw: &[u8], frames: &mut Owned) {
        let mut raw = raw;
        if !self.first_line_done {
            self.first_line_done = true;
            if let Some(tail) = raw.strip_prefix(b"\xEF\xBB\xBF") {
                raw = tail;
            }
        }
        if raw.is_empty() {
            self.dispatch(frames);
            return;
        }
        let line = String::from_utf8_lossy(raw);
        if line.starts_with(':') {
            self.comments += 1;
            return;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line.as_ref(), ""),
        };
        match field.trim() {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.trim().to_string()),
            "id" => self.id = Some(value.trim().to_string()),
            "retry" => {}
            "" if line.trim().is_empty() => self.dispatch(frames),
            _ => {
                self.junk_lines += 1;
                if self.first_junk.is_none() {
                    self.first_junk = Some(line.chars().take(120).collect());
                }
            }
        }
    }

    fn dispatch(&mut self, frames: &mut Owned) {
        if self.has_data {
            let data = std::mem::take(&mut self.data);
            frames.push((self.event.take(), data, self.id.clone()));
            self.has_data = false;
        } else if self.event.take().is_some() {
            self.empty_frames += 1;
        }
    }
}

fn hand_written(chunks: &[Bytes]) -> Owned {
    let mut decoder = HandWritten::default();
    let mut out = Vec::with_capacity(FRAMES);
    for c in chunks {
        decoder.push(c, &mut out);
    }
    decoder.finish(&mut out);
    out
}

fn crate_alone(chunks: &[Bytes]) -> Owned {
    use eventsource_stream::Eventsource;
    let stream = futures::stream::iter(chunks.iter().cloned().map(Ok::<_, std::io::Error>));
    futures::executor::block_on(
        stream
            .eventsource()
            .filter_map(|e| async move { e.ok() })
            .map(|e| {
                let event = (e.event != "message").then_some(e.event);
                (event, e.data, (!e.id.is_empty()).then_some(e.id))
            })
            .collect(),
    )
}

fn shipped(chunks: &[Bytes]) -> Owned {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::with_capacity(FRAMES);
    for c in chunks {
        out.extend(decoder.push(c).into_iter().map(|f| (f.event, f.data, f.id)));
    }
    out.extend(
        decoder
            .finish()
            .into_iter()
            .map(|f| (f.event, f.data, f.id)),
    );
    out
}

/// Frames through one reused batch; returns how many, with the frames themselves when
/// `keep` (for the check before timing).
fn shipped_batch(chunks: &[Bytes], keep: bool) -> (usize, Owned) {
    let mut decoder = SseDecoder::new();
    let mut batch = Frames::default();
    let mut kept = Vec::new();
    let mut n = 0;
    let take = |batch: &Frames, kept: &mut Owned| {
        if keep {
            kept.extend(batch.iter().map(|f| {
                (
                    f.event.map(str::to_string),
                    f.data.to_string(),
                    f.id.map(str::to_string),
                )
            }));
        }
    };
    for c in chunks {
        batch.clear();
        decoder.push_into(c, &mut batch);
        n += batch.len();
        take(&batch, &mut kept);
    }
    batch.clear();
    decoder.finish_into(&mut batch);
    n += batch.len();
    take(&batch, &mut kept);
    (n, kept)
}

fn bench(c: &mut Criterion) {
    let body = body();
    let chunks = chunks(&body);
    let reference = hand_written(&chunks);
    assert_eq!(reference.len(), FRAMES);
    assert_eq!(
        reference,
        crate_alone(&chunks),
        "the crate must frame alike"
    );
    assert_eq!(
        reference,
        shipped(&chunks),
        "the shipped decoder must frame alike"
    );
    let (n, batched) = shipped_batch(&chunks, true);
    assert_eq!(n, FRAMES);
    assert_eq!(reference, batched, "the batch path must frame alike");

    let mut group = c.benchmark_group("sse_framing");
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.sample_size(10);
    group.bench_function("hand_written", |b| b.iter(|| hand_written(&chunks).len()));
    group.bench_function("eventsource_stream", |b| {
        b.iter(|| crate_alone(&chunks).len())
    });
    group.bench_function("shipped_decoder", |b| b.iter(|| shipped(&chunks).len()));
    group.bench_function("shipped_batch", |b| {
        b.iter(|| shipped_batch(&chunks, false).0)
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
