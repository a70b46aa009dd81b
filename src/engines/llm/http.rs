//! What the remote providers share: settings, redacted API keys, one HTTP client, and the call
//! driver (jittered retries, key rotation, stall timeout, cancellation, raw-byte recording).

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::Stream;
use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;

use super::wire::{DecodeStats, WireDecoder, error_message};
use super::{
    CallCtx, ChatRequest, EventStream, LlmError, RawChunk, RawSink, StopReason, StreamEvent,
};

/// An API key. Its `Debug` output is redacted and it has no `Display`, so it cannot end up
/// in logs or error messages by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key, trimming surrounding whitespace (keys pasted from files end in newlines).
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into().trim().to_string())
    }

    /// The secret itself; only for putting into a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True for an empty key (treated as absent).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Reads keys from the environment: `PREFIX`, then `PREFIX_1` … `PREFIX_64` (gaps allowed),
/// e.g. `keys_from_env("ANTHROPIC_API_KEY")`. Empty values and duplicates are skipped.
pub fn keys_from_env(prefix: &str) -> Vec<ApiKey> {
    keys_from_lookup(prefix, |name| std::env::var(name).ok())
}

/// Like [`keys_from_env`] with any variable lookup (for config files and tests).
pub fn keys_from_lookup(prefix: &str, lookup: impl Fn(&str) -> Option<String>) -> Vec<ApiKey> {
    let names =
        std::iter::once(prefix.to_string()).chain((1..=64).map(|i| format!("{prefix}_{i}")));
    let mut keys: Vec<ApiKey> = Vec::new();
    for name in names {
        if let Some(value) = lookup(&name) {
            let key = ApiKey::new(value);
            if !key.is_empty() && !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    keys
}

/// Connection, retry and key settings shared by the remote providers.
#[derive(Clone)]
pub struct HttpSettings {
    /// Base URL; empty means the provider's default (`https://api.anthropic.com`,
    /// `https://api.openai.com/v1`, `http://localhost:11434`).
    pub base_url: String,
    /// Model used when a request leaves `model` empty.
    pub model: Option<String>,
    /// API keys, rotated per request; a key that gets HTTP 429 cools down.
    pub keys: Vec<ApiKey>,
    /// Limit for establishing the TCP/TLS connection.
    pub connect_timeout: Duration,
    /// A streaming body that delivers no bytes for this long ends with `Error::Stalled`.
    pub stall_timeout: Duration,
    /// Limit for receiving the response head of one attempt.
    pub request_timeout: Duration,
    /// Retries after the first attempt (429, 5xx, 529, overloaded before any content).
    pub max_retries: u32,
    /// First retry delay; doubled per retry, jittered, capped at `backoff_max`.
    pub backoff_base: Duration,
    /// Upper bound for one retry delay, also for a server's `Retry-After`.
    pub backoff_max: Duration,
    /// How long a key that got HTTP 429 is avoided while other keys are available.
    pub key_cooldown: Duration,
    /// Extra request headers (e.g. `anthropic-beta`, OpenRouter's `HTTP-Referer`).
    pub extra_headers: Vec<(String, String)>,
    /// OpenAI-compatible and Ollama only: content starts inside `<think>` (the chat template
    /// already opened it), so text before the first `</think>` is thinking.
    pub think_open: bool,
}

impl fmt::Debug for HttpSettings {
    /// Keys are redacted and extra header values (which may hold credentials) left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.extra_headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("keys", &self.keys)
            .field("connect_timeout", &self.connect_timeout)
            .field("stall_timeout", &self.stall_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_max", &self.backoff_max)
            .field("key_cooldown", &self.key_cooldown)
            .field("extra_headers", &header_names)
            .field("think_open", &self.think_open)
            .finish()
    }
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            model: None,
            keys: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            stall_timeout: Duration::from_secs(180),
            request_timeout: Duration::from_secs(600),
            max_retries: 4,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            key_cooldown: Duration::from_secs(60),
            extra_headers: Vec::new(),
            think_open: false,
        }
    }
}

impl HttpSettings {
    /// Default settings with this base URL.
    pub fn with_base_url(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            ..Self::default()
        }
    }
}

/// True for events that carry model output (as opposed to usage, stop and errors).
pub fn is_content(ev: &StreamEvent) -> bool {
    matches!(
        ev,
        StreamEvent::ThinkingDelta { .. }
            | StreamEvent::ThinkingSignature { .. }
            | StreamEvent::RedactedThinking { .. }
            | StreamEvent::TextDelta { .. }
            | StreamEvent::ToolUse { .. }
    )
}

fn is_retryable_in_stream(e: &LlmError) -> bool {
    match e {
        LlmError::Overloaded { .. } | LlmError::Truncated { .. } => true,
        LlmError::Api { kind, .. } => kind == "api_error",
        _ => false,
    }
}

fn is_terminal(ev: &StreamEvent) -> bool {
    matches!(ev, StreamEvent::Stop { .. } | StreamEvent::Error { .. })
}

/// A provider's wire format: how to build a request and decode its response.
pub(crate) trait Wire: Send + Sync + 'static {
    /// Provider name used in errors and logs.
    fn name(&self) -> &'static str;
    /// Base URL used when the settings leave it empty.
    fn default_base_url(&self) -> &'static str;
    /// Environment variable named in the "no key" error, when a key is required.
    fn required_key_env(&self) -> Option<&'static str>;
    /// Full URL of the chat endpoint.
    fn endpoint(&self, base_url: &str) -> String;
    /// JSON request body.
    fn body(&self, req: &ChatRequest, stream: bool) -> serde_json::Value;
    /// Authentication headers for a key.
    fn auth_headers(&self, key: &ApiKey) -> Result<Vec<(HeaderName, HeaderValue)>, LlmError>;
    /// Fixed headers sent with every request.
    fn fixed_headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        Vec::new()
    }
    /// A fresh decoder for one response body.
    fn decoder(&self, settings: &HttpSettings) -> Box<dyn WireDecoder>;
}

/// A header value holding a secret: marked sensitive; errors never quote it.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, LlmError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| LlmError::Config {
        message: "an API key contains characters not allowed in an HTTP header".to_string(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

struct KeyRing {
    keys: Vec<ApiKey>,
    cooling_until: Mutex<Vec<Option<Instant>>>,
    next: AtomicUsize,
}

impl KeyRing {
    fn new(keys: Vec<ApiKey>) -> Self {
        let n = keys.len();
        Self {
            keys,
            cooling_until: Mutex::new(vec![None; n]),
            next: AtomicUsize::new(0),
        }
    }

    fn until(&self) -> std::sync::MutexGuard<'_, Vec<Option<Instant>>> {
        self.cooling_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Next key in rotation that is not cooling down; if all are, the one free soonest.
    fn pick(&self) -> Option<usize> {
        let n = self.keys.len();
        if n == 0 {
            return None;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let now = Instant::now();
        let until = self.until();
        (0..n)
            .map(|off| (start + off) % n)
            .find(|&i| until[i].is_none_or(|t| t <= now))
            .or_else(|| (0..n).min_by_key(|&i| until[i]))
    }

    fn cool(&self, index: usize, for_: Duration) {
        if let Some(slot) = self.until().get_mut(index) {
            *slot = Some(Instant::now() + for_);
        }
    }

    fn any_ready(&self) -> bool {
        let now = Instant::now();
        self.until().iter().any(|u| u.is_none_or(|t| t <= now))
    }

    fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for key in &self.keys {
            if key.expose().len() >= 4 && out.contains(key.expose()) {
                out = out.replace(key.expose(), "[redacted]");
            }
        }
        out
    }
}

fn install_crypto_provider() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // An error only means another provider is already installed, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The reqwest client glassbox uses for model calls (rustls with the ring provider).
pub fn build_client(settings: &HttpSettings) -> Result<reqwest::Client, LlmError> {
    install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(settings.connect_timeout)
        .tcp_nodelay(true)
        .user_agent(concat!("glassbox/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::Config {
            message: format!("cannot build the HTTP client: {}", error_chain(&e)),
        })
}

/// `e` and its sources joined with `: `.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        src = s.source();
    }
    parts.join(": ")
}

struct Core {
    client: reqwest::Client,
    settings: HttpSettings,
    base_url: String,
    keys: KeyRing,
    extra: Vec<(HeaderName, HeaderValue)>,
    wire: Box<dyn Wire>,
}

/// A remote provider: settings, client and wire format behind one `Arc`.
#[derive(Clone)]
pub(crate) struct Remote {
    core: Arc<Core>,
}

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Remote")
            .field("provider", &self.core.wire.name())
            .field("base_url", &self.core.base_url)
            .field("settings", &self.core.settings)
            .finish()
    }
}

impl Remote {
    pub(crate) fn new(settings: HttpSettings, wire: impl Wire) -> Result<Self, LlmError> {
        let keys: Vec<ApiKey> = settings
            .keys
            .iter()
            .filter(|k| !k.is_empty())
            .cloned()
            .collect();
        if let (true, Some(env)) = (keys.is_empty(), wire.required_key_env()) {
            return Err(LlmError::Config {
                message: format!(
                    "no API key for {}: set {env} (or {env}_1, {env}_2, …)",
                    wire.name()
                ),
            });
        }
        for key in &keys {
            wire.auth_headers(key)?;
        }
        let keyring = KeyRing::new(keys);
        let mut base_url = settings.base_url.trim().trim_end_matches('/').to_string();
        if base_url.is_empty() {
            base_url = wire.default_base_url().to_string();
        }
        if let Err(e) = reqwest::Url::parse(&base_url) {
            return Err(LlmError::Config {
                message: keyring.redact(&format!(
                    "invalid base URL `{base_url}` for {}: {e}",
                    wire.name()
                )),
            });
        }
        let mut extra = Vec::new();
        for (name, value) in &settings.extra_headers {
            let n =
                HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| LlmError::Config {
                    message: format!("invalid extra header name `{}`", name.trim()),
                })?;
            let v = secret_header(value.trim()).map_err(|_| LlmError::Config {
                message: format!("invalid value for extra header `{}`", name.trim()),
            })?;
            extra.push((n, v));
        }
        let client = build_client(&settings)?;
        Ok(Self {
            core: Arc::new(Core {
                client,
                settings,
                base_url,
                keys: keyring,
                extra,
                wire: Box::new(wire),
            }),
        })
    }

    pub(crate) fn name(&self) -> &'static str {
        self.core.wire.name()
    }

    /// Starts one call; see [`super::Provider::stream`].
    pub(crate) fn stream(&self, req: ChatRequest, ctx: CallCtx) -> EventStream {
        let (tx, rx) = mpsc::channel(256);
        let fut = drive(self.core.clone(), req, ctx, tx);
        Box::pin(Pump {
            fut: Some(Box::pin(fut)),
            rx,
        })
    }
}

/// Polls the driver future in place (no spawned task, so dropping the stream aborts the
/// call) and yields what it sends.
struct Pump {
    fut: Option<BoxFuture<'static, ()>>,
    rx: mpsc::Receiver<StreamEvent>,
}

impl Stream for Pump {
    type Item = StreamEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<StreamEvent>> {
        if let Some(fut) = self.fut.as_mut()
            && fut.as_mut().poll(cx).is_ready()
        {
            self.fut = None;
        }
        self.rx.poll_recv(cx)
    }
}

/// Sends events downstream. Until the first content event of an attempt, raw bytes and
/// events are held so that a retried attempt leaves no trace.
struct Out {
    tx: mpsc::Sender<StreamEvent>,
    raw: Option<RawSink>,
    core: Arc<Core>,
    sent_at: Instant,
    committed: bool,
    held_raw: Vec<RawChunk>,
    held: Vec<StreamEvent>,
}

impl Out {
    fn begin_attempt(&mut self, sent_at: Instant) {
        self.sent_at = sent_at;
        self.held_raw.clear();
        self.held.clear();
    }

    fn raw(&mut self, bytes: &Bytes) {
        let chunk = RawChunk {
            offset: self.sent_at.elapsed(),
            bytes: bytes.clone(),
        };
        if self.committed {
            if let Some(raw) = &self.raw {
                let _ = raw.send(chunk);
            }
        } else {
            self.held_raw.push(chunk);
        }
    }

    async fn commit(&mut self) {
        self.committed = true;
        if let Some(raw) = &self.raw {
            for chunk in self.held_raw.drain(..) {
                let _ = raw.send(chunk);
            }
        }
        self.held_raw.clear();
        for ev in std::mem::take(&mut self.held) {
            self.send(ev).await;
        }
    }

    async fn event(&mut self, ev: StreamEvent) {
        if !self.committed && (is_content(&ev) || is_terminal(&ev)) {
            self.commit().await;
        }
        if self.committed {
            self.send(ev).await;
        } else {
            self.held.push(ev);
        }
    }

    async fn send(&self, ev: StreamEvent) {
        let ev = match ev {
            StreamEvent::Error { error } => StreamEvent::Error {
                error: redact_error(error, &self.core.keys),
            },
            other => other,
        };
        // A closed channel means the consumer is gone; the driver is dropped with it.
        let _ = self.tx.send(ev).await;
    }
}

fn redact_error(e: LlmError, keys: &KeyRing) -> LlmError {
    let r = |s: String| keys.redact(&s);
    match e {
        LlmError::Http {
            provider,
            status,
            message,
        } => LlmError::Http {
            provider,
            status,
            message: r(message),
        },
        LlmError::RateLimited {
            provider,
            attempts,
            message,
        } => LlmError::RateLimited {
            provider,
            attempts,
            message: r(message),
        },
        LlmError::Overloaded { provider, message } => LlmError::Overloaded {
            provider,
            message: r(message),
        },
        LlmError::Connect {
            provider,
            url,
            reason,
        } => LlmError::Connect {
            provider,
            url: r(url),
            reason: r(reason),
        },
        LlmError::Truncated { provider, detail } => LlmError::Truncated {
            provider,
            detail: r(detail),
        },
        LlmError::Malformed { provider, detail } => LlmError::Malformed {
            provider,
            detail: r(detail),
        },
        LlmError::Api {
            provider,
            kind,
            message,
        } => LlmError::Api {
            provider,
            kind: r(kind),
            message: r(message),
        },
        LlmError::Config { message } => LlmError::Config {
            message: r(message),
        },
        LlmError::Local { message } => LlmError::Local {
            message: r(message),
        },
        other @ (LlmError::Stalled { .. } | LlmError::Cancelled) => other,
    }
}

enum Outcome {
    Done,
    Cancelled,
    Fallback,
    Retry {
        error: LlmError,
        delay: Duration,
        immediate: bool,
    },
    Fail(LlmError),
}

fn backoff(settings: &HttpSettings, retry: u32) -> Duration {
    let exp = settings.backoff_base.saturating_mul(1u32 << retry.min(20));
    let d = exp.min(settings.backoff_max);
    d.mul_f64(0.5 + fastrand::f64() * 0.5)
}

/// `Retry-After` in seconds (or OpenAI's `retry-after-ms`), if the server sent one.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let secs = get("retry-after")?.parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

fn stall_secs(d: Duration) -> u64 {
    d.as_secs_f64().ceil().max(1.0) as u64
}

async fn drive(core: Arc<Core>, mut req: ChatRequest, ctx: CallCtx, tx: mpsc::Sender<StreamEvent>) {
    let mut out = Out {
        tx,
        raw: ctx.raw.clone(),
        core: core.clone(),
        sent_at: Instant::now(),
        committed: false,
        held_raw: Vec::new(),
        held: Vec::new(),
    };
    let provider = core.wire.name();
    if req.model.trim().is_empty() {
        match &core.settings.model {
            Some(m) if !m.trim().is_empty() => req.model = m.clone(),
            _ => {
                let message = format!("no model given for {provider}");
                out.event(StreamEvent::Error {
                    error: LlmError::Config { message },
                })
                .await;
                return;
            }
        }
    }
    let mut attempts: u32 = 0;
    let mut streaming = true;
    loop {
        if ctx.cancel.is_cancelled() {
            out.event(StreamEvent::Stop {
                reason: StopReason::Cancelled,
            })
            .await;
            return;
        }
        attempts += 1;
        match attempt(&core, &req, streaming, attempts, &ctx, &mut out).await {
            Outcome::Done => return,
            Outcome::Cancelled => {
                out.event(StreamEvent::Stop {
                    reason: StopReason::Cancelled,
                })
                .await;
                return;
            }
            Outcome::Fallback => {
                if streaming {
                    tracing::info!(
                        provider,
                        "stream yielded no events; retrying without streaming"
                    );
                    streaming = false;
                    attempts -= 1;
                } else {
                    let detail = "the response was empty".to_string();
                    out.event(StreamEvent::Error {
                        error: LlmError::Truncated {
                            provider: provider.into(),
                            detail,
                        },
                    })
                    .await;
                    return;
                }
            }
            Outcome::Fail(error) => {
                out.event(StreamEvent::Error { error }).await;
                return;
            }
            Outcome::Retry {
                error,
                delay,
                immediate,
            } => {
                if attempts > core.settings.max_retries {
                    let error = match error {
                        LlmError::RateLimited {
                            provider, message, ..
                        } => LlmError::RateLimited {
                            provider,
                            attempts,
                            message,
                        },
                        other => other,
                    };
                    out.event(StreamEvent::Error { error }).await;
                    return;
                }
                let delay = if immediate { Duration::ZERO } else { delay };
                tracing::warn!(
                    provider,
                    attempt = attempts,
                    delay_ms = delay.as_millis() as u64,
                    error = %redact_error(error, &core.keys),
                    "retrying model call"
                );
                if !delay.is_zero() {
                    tokio::select! {
                        _ = ctx.cancel.cancelled() => {
                            out.event(StreamEvent::Stop { reason: StopReason::Cancelled }).await;
                            return;
                        }
                        _ = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
    }
}

async fn attempt(
    core: &Arc<Core>,
    req: &ChatRequest,
    streaming: bool,
    attempt_no: u32,
    ctx: &CallCtx,
    out: &mut Out,
) -> Outcome {
    let provider = core.wire.name();
    let settings = &core.settings;
    let url = core.wire.endpoint(&core.base_url);
    let body = core.wire.body(req, streaming);
    let key_index = core.keys.pick();
    let mut headers = HeaderMap::new();
    for (n, v) in core.wire.fixed_headers() {
        headers.insert(n, v);
    }
    if let Some(i) = key_index {
        match core.wire.auth_headers(&core.keys.keys[i]) {
            Ok(hs) => {
                for (n, v) in hs {
                    headers.insert(n, v);
                }
            }
            Err(e) => return Outcome::Fail(e),
        }
    }
    for (n, v) in &core.extra {
        headers.insert(n.clone(), v.clone());
    }
    let sent_at = Instant::now();
    let send = core.client.post(&url).headers(headers).json(&body).send();
    let resp = tokio::select! {
        _ = ctx.cancel.cancelled() => return Outcome::Cancelled,
        r = tokio::time::timeout(settings.request_timeout, send) => r,
    };
    let retry_delay = backoff(settings, attempt_no.saturating_sub(1));
    let mut resp = match resp {
        Err(_) => {
            let reason = format!(
                "no response within {} s",
                settings.request_timeout.as_secs()
            );
            let error = LlmError::Connect {
                provider: provider.into(),
                url,
                reason,
            };
            return Outcome::Retry {
                error,
                delay: retry_delay,
                immediate: false,
            };
        }
        Ok(Err(e)) => {
            let reason = error_chain(&e.without_url());
            let error = LlmError::Connect {
                provider: provider.into(),
                url,
                reason,
            };
            return Outcome::Retry {
                error,
                delay: retry_delay,
                immediate: false,
            };
        }
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    if !status.is_success() {
        let wait = retry_after(resp.headers()).map(|d| d.min(settings.backoff_max));
        let body = tokio::select! {
            _ = ctx.cancel.cancelled() => return Outcome::Cancelled,
            b = read_capped(&mut resp, 64 * 1024, settings.stall_timeout) => b,
        };
        let (kind, message) = error_message(status.as_u16(), &body);
        let message = core.keys.redact(&message);
        let delay = wait.unwrap_or(retry_delay);
        let code = status.as_u16();
        let http = LlmError::Http {
            provider: provider.into(),
            status: code,
            message: message.clone(),
        };
        return match code {
            429 => {
                if let Some(i) = key_index {
                    tracing::warn!(provider, key = i + 1, "API key rate limited; cooling down");
                    core.keys.cool(i, settings.key_cooldown);
                }
                let immediate = core.keys.keys.len() > 1 && core.keys.any_ready();
                let error = LlmError::RateLimited {
                    provider: provider.into(),
                    attempts: attempt_no,
                    message,
                };
                Outcome::Retry {
                    error,
                    delay,
                    immediate,
                }
            }
            529 => Outcome::Retry {
                error: LlmError::Overloaded {
                    provider: provider.into(),
                    message,
                },
                delay,
                immediate: false,
            },
            _ if kind.as_deref() == Some("overloaded_error") => Outcome::Retry {
                error: LlmError::Overloaded {
                    provider: provider.into(),
                    message,
                },
                delay,
                immediate: false,
            },
            401 | 403 if core.keys.keys.len() > 1 => {
                // A revoked key should not fail every n-th call: park it and use the next one.
                if let Some(i) = key_index {
                    tracing::warn!(
                        provider,
                        key = i + 1,
                        status = code,
                        "API key refused; parking it"
                    );
                    core.keys.cool(i, Duration::from_secs(24 * 3600));
                }
                Outcome::Retry {
                    error: http,
                    delay,
                    immediate: core.keys.any_ready(),
                }
            }
            408 | 500..=599 => Outcome::Retry {
                error: http,
                delay,
                immediate: false,
            },
            _ => Outcome::Fail(http),
        };
    }

    out.begin_attempt(sent_at);
    let mut decoder = core.wire.decoder(settings);
    loop {
        let next = tokio::select! {
            _ = ctx.cancel.cancelled() => {
                for ev in decoder.flush() {
                    out.event(ev).await;
                }
                return Outcome::Cancelled;
            }
            r = tokio::time::timeout(settings.stall_timeout, resp.chunk()) => r,
        };
        let mut eof = false;
        let events = match next {
            Err(_) => {
                for ev in decoder.flush() {
                    out.event(ev).await;
                }
                let error = LlmError::Stalled {
                    provider: provider.into(),
                    secs: stall_secs(settings.stall_timeout),
                };
                return Outcome::Fail(error);
            }
            Ok(Err(e)) => {
                let flushed = decoder.flush();
                let detail = format!(
                    "connection broke mid-stream: {}",
                    error_chain(&e.without_url())
                );
                let error = LlmError::Truncated {
                    provider: provider.into(),
                    detail,
                };
                if !out.committed && !flushed.iter().any(is_content) {
                    return Outcome::Retry {
                        error,
                        delay: retry_delay,
                        immediate: false,
                    };
                }
                for ev in flushed {
                    out.event(ev).await;
                }
                return Outcome::Fail(error);
            }
            Ok(Ok(Some(bytes))) => {
                out.raw(&bytes);
                decoder.feed(&bytes)
            }
            Ok(Ok(None)) => {
                if streaming && decoder.is_blank() {
                    return Outcome::Fallback;
                }
                eof = true;
                decoder.finish()
            }
        };
        for ev in events {
            // Overloaded, a server-side error or a cut before any content: nothing was shown
            // yet, so try again.
            if let StreamEvent::Error { error } = &ev
                && !out.committed
                && is_retryable_in_stream(error)
            {
                return Outcome::Retry {
                    error: error.clone(),
                    delay: retry_delay,
                    immediate: false,
                };
            }
            let terminal = is_terminal(&ev);
            out.event(ev).await;
            if terminal {
                if !eof {
                    drain(&mut resp, out, settings, ctx).await;
                }
                log_stats(provider, decoder.stats());
                return Outcome::Done;
            }
        }
        if eof {
            log_stats(provider, decoder.stats());
            let detail = "the response ended without a final event".to_string();
            return Outcome::Fail(LlmError::Truncated {
                provider: provider.into(),
                detail,
            });
        }
    }
}

fn log_stats(provider: &str, stats: DecodeStats) {
    if stats.unknown > 0 || stats.malformed > 0 {
        tracing::debug!(
            provider,
            frames = stats.frames,
            comments = stats.comments,
            unknown = stats.unknown,
            malformed = stats.malformed,
            "stream had skipped parts"
        );
    }
}

/// After the final event: keep reading to the end of the body (briefly) so the raw recording
/// holds every byte the server sent.
async fn drain(
    resp: &mut reqwest::Response,
    out: &mut Out,
    settings: &HttpSettings,
    ctx: &CallCtx,
) {
    let wait = settings.stall_timeout.min(Duration::from_secs(2));
    loop {
        let next = tokio::select! {
            _ = ctx.cancel.cancelled() => return,
            r = tokio::time::timeout(wait, resp.chunk()) => r,
        };
        match next {
            Ok(Ok(Some(bytes))) => out.raw(&bytes),
            _ => return,
        }
    }
}

/// Reads at most `cap` bytes of an (error) body, giving up after `stall` without bytes.
async fn read_capped(resp: &mut reqwest::Response, cap: usize, stall: Duration) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < cap {
        match tokio::time::timeout(stall, resp.chunk()).await {
            Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(cap);
    body
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn api_key_debug_is_redacted() {
        let k = ApiKey::new("  sk-very-secret-123\n");
        assert_eq!(k.expose(), "sk-very-secret-123");
        let shown = format!(
            "{k:?} {:?}",
            HttpSettings {
                keys: vec![k.clone()],
                ..HttpSettings::default()
            }
        );
        assert!(!shown.contains("sk-very-secret-123"), "{shown}");
        assert!(shown.contains("redacted"));
        let s = HttpSettings {
            extra_headers: vec![("x-proxy-auth".into(), "proxy-secret-999".into())],
            ..HttpSettings::default()
        };
        let shown = format!("{s:?}");
        assert!(
            shown.contains("x-proxy-auth") && !shown.contains("proxy-secret-999"),
            "{shown}"
        );
    }

    #[test]
    fn keys_from_lookup_reads_prefix_and_numbered_vars() {
        let vars = [
            ("ANTHROPIC_API_KEY", "k0"),
            ("ANTHROPIC_API_KEY_1", "k1"),
            ("ANTHROPIC_API_KEY_3", " k3 "),
            ("ANTHROPIC_API_KEY_4", ""),
            ("ANTHROPIC_API_KEY_5", "k1"),
            ("OPENAI_API_KEY", "other"),
        ];
        let lookup = |n: &str| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        };
        let keys = keys_from_lookup("ANTHROPIC_API_KEY", lookup);
        let got: Vec<&str> = keys.iter().map(ApiKey::expose).collect();
        assert_eq!(got, vec!["k0", "k1", "k3"]);
        assert!(keys_from_lookup("NOPE", lookup).is_empty());
    }

    #[test]
    fn keyring_rotates_and_cools_down() {
        let ring = KeyRing::new(vec![
            ApiKey::new("aaaa1"),
            ApiKey::new("bbbb2"),
            ApiKey::new("cccc3"),
        ]);
        assert_eq!(ring.pick(), Some(0));
        assert_eq!(ring.pick(), Some(1));
        ring.cool(2, Duration::from_secs(60));
        assert_eq!(ring.pick(), Some(0)); // 2 is cooling, next ready after it
        ring.cool(0, Duration::from_secs(30));
        ring.cool(1, Duration::from_secs(90));
        assert!(!ring.any_ready());
        assert_eq!(ring.pick(), Some(0)); // all cooling: the one free soonest
        assert_eq!(
            ring.redact("key aaaa1 and bbbb2!"),
            "key [redacted] and [redacted]!"
        );
    }

    #[test]
    fn retry_after_parsing() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let s = HttpSettings {
            backoff_base: Duration::from_millis(100),
            backoff_max: Duration::from_millis(1000),
            ..HttpSettings::default()
        };
        for _ in 0..50 {
            let d0 = backoff(&s, 0);
            assert!(
                d0 >= Duration::from_millis(50) && d0 <= Duration::from_millis(100),
                "{d0:?}"
            );
            let d3 = backoff(&s, 3);
            assert!(
                d3 >= Duration::from_millis(400) && d3 <= Duration::from_millis(800),
                "{d3:?}"
            );
            assert!(backoff(&s, 30) <= Duration::from_millis(1000));
        }
    }
}
