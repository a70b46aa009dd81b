//! A real HTTP server on 127.0.0.1:0 that plays scripted responses (status, headers, body
//! chunks with delays, then close / cut / stall) and records every request it receives.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::{self, BoxStream};

pub mod bin;
pub mod pg;
pub mod store;
pub mod tui;
pub mod wire;

/// How a scripted response body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Finish the body normally.
    Close,
    /// Abort the connection mid-body (the client sees an incomplete body).
    Cut,
    /// Keep the connection open and send nothing more, forever.
    Stall,
}

/// How to split a body into chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkBy {
    Whole,
    /// One chunk per line (terminator included).
    Lines,
    /// One chunk per blank-line separated SSE frame.
    Frames,
    /// Fixed-size byte chunks (may split UTF-8 characters and lines anywhere).
    Bytes(usize),
}

/// One body chunk, sent after `delay`.
#[derive(Clone, Debug)]
pub struct Chunk {
    pub delay: Duration,
    pub bytes: Bytes,
}

/// One scripted response.
#[derive(Clone, Debug)]
pub struct Step {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Chunk>,
    pub end: End,
}

impl Step {
    /// An empty response with this status.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            chunks: Vec::new(),
            end: End::Close,
        }
    }

    /// 200 `text/event-stream` with `body` split into SSE frames.
    pub fn sse(body: impl AsRef<[u8]>) -> Self {
        Self::status(200)
            .header("content-type", "text/event-stream")
            .split(body, ChunkBy::Frames)
    }

    /// 200 `application/x-ndjson` with `body` split into lines.
    pub fn ndjson(body: impl AsRef<[u8]>) -> Self {
        Self::status(200)
            .header("content-type", "application/x-ndjson")
            .split(body, ChunkBy::Lines)
    }

    /// A JSON body in one chunk.
    pub fn json(status: u16, body: impl AsRef<[u8]>) -> Self {
        Self::status(status)
            .header("content-type", "application/json")
            .split(body, ChunkBy::Whole)
    }

    /// A fixture file served by its extension (`.sse` frames, `.ndjson` lines, otherwise whole).
    pub fn fixture(path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let body = std::fs::read(path)
            .unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()));
        let name = path.to_string_lossy();
        if name.ends_with(".sse") {
            Self::sse(body)
        } else if name.ends_with(".ndjson") {
            Self::ndjson(body)
        } else if name.ends_with(".json") {
            Self::json(200, body)
        } else {
            Self::status(200)
                .header("content-type", "application/octet-stream")
                .split(body, ChunkBy::Whole)
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Appends one chunk sent right away.
    pub fn chunk(self, bytes: impl AsRef<[u8]>) -> Self {
        self.chunk_after(Duration::ZERO, bytes)
    }

    /// Appends one chunk sent after `delay`.
    pub fn chunk_after(mut self, delay: Duration, bytes: impl AsRef<[u8]>) -> Self {
        self.chunks.push(Chunk {
            delay,
            bytes: Bytes::copy_from_slice(bytes.as_ref()),
        });
        self
    }

    /// Replaces the chunks with `body` split as asked.
    pub fn split(mut self, body: impl AsRef<[u8]>, by: ChunkBy) -> Self {
        self.chunks = split(body.as_ref(), by)
            .into_iter()
            .map(|b| Chunk {
                delay: Duration::ZERO,
                bytes: Bytes::from(b),
            })
            .collect();
        self
    }

    /// Re-splits the current body.
    pub fn rechunk(self, by: ChunkBy) -> Self {
        let body = self.body();
        self.split(body, by)
    }

    /// Sets the same delay before every chunk.
    pub fn delay_each(mut self, delay: Duration) -> Self {
        for c in &mut self.chunks {
            c.delay = delay;
        }
        self
    }

    /// Keeps only the first `n` body bytes (re-chunked the same way up to there).
    pub fn truncate(mut self, n: usize) -> Self {
        let mut left = n;
        let mut kept = Vec::new();
        for c in self.chunks {
            if left == 0 {
                break;
            }
            let take = c.bytes.len().min(left);
            left -= take;
            kept.push(Chunk {
                delay: c.delay,
                bytes: c.bytes.slice(..take),
            });
        }
        self.chunks = kept;
        self
    }

    /// How the body ends.
    pub fn end(mut self, end: End) -> Self {
        self.end = end;
        self
    }

    /// The whole body this step sends.
    pub fn body(&self) -> Vec<u8> {
        self.chunks
            .iter()
            .flat_map(|c| c.bytes.iter().copied())
            .collect()
    }
}

/// Splits `body` into chunks.
pub fn split(body: &[u8], by: ChunkBy) -> Vec<Vec<u8>> {
    match by {
        ChunkBy::Whole => vec![body.to_vec()],
        ChunkBy::Bytes(n) => body.chunks(n.max(1)).map(<[u8]>::to_vec).collect(),
        ChunkBy::Lines => body
            .split_inclusive(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect(),
        ChunkBy::Frames => {
            let mut out = Vec::new();
            let mut cur = Vec::new();
            for line in body.split_inclusive(|&b| b == b'\n') {
                cur.extend_from_slice(line);
                if line == b"\n" || line == b"\r\n" {
                    out.push(std::mem::take(&mut cur));
                }
            }
            if !cur.is_empty() {
                out.push(cur);
            }
            out
        }
    }
}

/// Responses in request order. When they run out, the last one repeats if `repeat_last`,
/// otherwise the server answers 599 "script exhausted".
#[derive(Clone, Debug, Default)]
pub struct Script {
    pub steps: Vec<Step>,
    pub repeat_last: bool,
}

impl Script {
    pub fn new(steps: Vec<Step>) -> Self {
        Self {
            steps,
            repeat_last: false,
        }
    }

    /// The same response for every request.
    pub fn forever(step: Step) -> Self {
        Self {
            steps: vec![step],
            repeat_last: true,
        }
    }

    /// Loads a script file (`*.script.json`) or serves a plain fixture file forever.
    ///
    /// Script format: `{"repeat_last": bool, "steps": [{"status", "headers": {name: value},
    /// "body" | "body_file" (relative to the script), "content_type", "chunk": "whole" |
    /// "lines" | "frames" | <bytes>, "delay_ms", "truncate_at", "end": "close" | "cut" | "stall"}]}`.
    pub fn load(path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        if !path.to_string_lossy().ends_with(".script.json") {
            return Self::forever(Step::fixture(path));
        }
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let v: serde_json::Value = serde_json::from_str(&text).expect("script is not JSON");
        let dir = path.parent().unwrap_or(Path::new("."));
        let steps = v["steps"]
            .as_array()
            .expect("script needs steps")
            .iter()
            .map(|s| step_from_json(s, dir))
            .collect();
        Self {
            steps,
            repeat_last: v["repeat_last"].as_bool().unwrap_or(false),
        }
    }
}

fn step_from_json(s: &serde_json::Value, dir: &Path) -> Step {
    let status = s["status"].as_u64().unwrap_or(200) as u16;
    let mut step = match (s["body_file"].as_str(), s["body"].as_str()) {
        (Some(file), _) => {
            let mut st = Step::fixture(dir.join(file));
            st.status = status;
            st
        }
        (None, Some(body)) => Step::status(status).split(body.as_bytes(), ChunkBy::Whole),
        (None, None) => Step::status(status),
    };
    if let Some(ct) = s["content_type"].as_str() {
        step.headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
        step = step.header("content-type", ct);
    }
    if let Some(headers) = s["headers"].as_object() {
        for (name, value) in headers {
            step.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            step = step.header(name, value.as_str().unwrap_or_default());
        }
    }
    match &s["chunk"] {
        serde_json::Value::String(by) => {
            let by = match by.as_str() {
                "lines" => ChunkBy::Lines,
                "frames" => ChunkBy::Frames,
                _ => ChunkBy::Whole,
            };
            step = step.rechunk(by);
        }
        serde_json::Value::Number(n) => {
            step = step.rechunk(ChunkBy::Bytes(n.as_u64().unwrap_or(1) as usize))
        }
        _ => {}
    }
    if let Some(n) = s["truncate_at"].as_u64() {
        step = step.truncate(n as usize);
    }
    if let Some(ms) = s["delay_ms"].as_u64() {
        step = step.delay_each(Duration::from_millis(ms));
    }
    step.end = match s["end"].as_str() {
        Some("cut") => End::Cut,
        Some("stall") => End::Stall,
        _ => End::Close,
    };
    step
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: HashMap<String, String>,
    /// The body parsed as JSON (`Null` if it was not JSON).
    pub json: serde_json::Value,
    pub body: Bytes,
    /// When the request arrived.
    pub at: std::time::Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

struct Shared {
    script: Script,
    next: Mutex<usize>,
    requests: Mutex<Vec<Recorded>>,
}

/// The running server; stops when dropped.
pub struct ScriptedServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedServer {
    /// Binds 127.0.0.1:0 and serves `script` on any path.
    pub async fn start(script: Script) -> Self {
        Self::start_on("127.0.0.1:0", script).await
    }

    /// Binds `addr` and serves `script` on any path.
    pub async fn start_on(addr: &str, script: Script) -> Self {
        let shared = Arc::new(Shared {
            script,
            next: Mutex::new(0),
            requests: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared, task }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let headers = req
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    shared.requests.lock().unwrap().push(Recorded {
        method,
        path,
        headers,
        json,
        body,
        at: std::time::Instant::now(),
    });

    let step = {
        let mut next = shared.next.lock().unwrap();
        let i = *next;
        *next += 1;
        let steps = &shared.script.steps;
        match steps.get(i) {
            Some(s) => Some(s.clone()),
            None if shared.script.repeat_last => steps.last().cloned(),
            None => None,
        }
    };
    let Some(step) = step else {
        return Response::builder()
            .status(599)
            .body(Body::from("{\"error\":{\"message\":\"script exhausted\"}}"))
            .unwrap();
    };
    let mut builder = Response::builder().status(StatusCode::from_u16(step.status).unwrap());
    for (n, v) in &step.headers {
        builder = builder.header(
            HeaderName::from_bytes(n.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    builder
        .body(Body::from_stream(body_stream(step.chunks, step.end)))
        .unwrap()
}

fn body_stream(chunks: Vec<Chunk>, end: End) -> BoxStream<'static, Result<Bytes, std::io::Error>> {
    let chunks = stream::iter(chunks).then(|c| async move {
        if !c.delay.is_zero() {
            tokio::time::sleep(c.delay).await;
        }
        Ok(c.bytes)
    });
    match end {
        End::Close => chunks.boxed(),
        End::Cut => chunks
            .chain(stream::once(async {
                // Give the client time to read what was sent before the connection breaks.
                tokio::time::sleep(Duration::from_millis(20)).await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "scripted cut",
                ))
            }))
            .boxed(),
        End::Stall => chunks.chain(stream::pending()).boxed(),
    }
}

/// The fixtures directory.
pub fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/streams")
}

/// Reads a fixture file.
pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(name))
        .unwrap_or_else(|e| panic!("cannot read fixture {name}: {e}"))
}

/// Copies the folder `src` into `dst` (created), files and subfolders.
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}
