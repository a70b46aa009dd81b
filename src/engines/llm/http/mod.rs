//! What the remote providers share: settings, redacted API keys, one HTTP client, and the call
//! driver (jittered retries, key rotation, stall timeout, cancellation, raw-byte recording).
//!
//! This file holds the settings, the keys and the provider handle; `retry.rs` the key ring,
//! backoff and what a refused request means; `drive.rs` one call from the first attempt to
//! the last event, the fallback to a non-streaming request included.

mod drive;
mod retry;
#[cfg(test)]
mod tests;

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use futures::future::BoxFuture;
use reqwest::header::{HeaderName, HeaderValue};
use tokio::sync::mpsc;

use super::wire::WireDecoder;
use super::{CallCtx, ChatRequest, EventStream, LlmError, StreamEvent};
use retry::KeyRing;

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

/// The crate builds reqwest with `rustls-no-provider`, so a process-wide rustls crypto
/// provider has to be installed before any client (async or blocking) is built.
pub(crate) fn install_crypto_provider() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // An error only means another provider is already installed, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The reqwest client glassbox uses for model calls (rustls with the ring provider). For a
/// plain `http://` base URL (a local server) the system's root certificates are not loaded:
/// reading and parsing them takes tens of milliseconds, and nothing is verified with them.
pub fn build_client(settings: &HttpSettings) -> Result<reqwest::Client, LlmError> {
    install_crypto_provider();
    let plain = settings
        .base_url
        .trim()
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    let mut builder = reqwest::Client::builder()
        .connect_timeout(settings.connect_timeout)
        .tcp_nodelay(true)
        .user_agent(concat!("glassbox/", env!("CARGO_PKG_VERSION")));
    if plain {
        builder = builder.tls_certs_only(Vec::new());
    }
    builder.build().map_err(|e| LlmError::Config {
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
    /// Built on the provider's first call: loading the system's root certificates takes
    /// tens of milliseconds (far more when they are not in the page cache), and a provider
    /// built at start-up (the TUI's) may never be called, or only once the first frame is on
    /// screen. An error building it is that call's error.
    client: OnceLock<Result<reqwest::Client, LlmError>>,
    settings: HttpSettings,
    base_url: String,
    keys: KeyRing,
    extra: Vec<(HeaderName, HeaderValue)>,
    wire: Box<dyn Wire>,
}

impl Core {
    /// The HTTP client, built on the first call.
    fn client(&self) -> Result<&reqwest::Client, LlmError> {
        self.client
            .get_or_init(|| build_client(&self.settings))
            .as_ref()
            .map_err(Clone::clone)
    }
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
        Ok(Self {
            core: Arc::new(Core {
                client: OnceLock::new(),
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
        let (tx, rx) = mpsc::channel(64);
        let fut: BoxFuture<'static, ()> = Box::pin(drive::drive(self.core.clone(), req, ctx, tx));
        // Under a runtime the call starts now: the request is on its way while the caller
        // gets ready for the answer (a turn commits its question meanwhile).
        let (fut, task) = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => (None, Some(runtime.spawn(fut).abort_handle())),
            Err(_) => (Some(fut), None),
        };
        Box::pin(Pump {
            fut,
            task,
            rx,
            ready: Vec::new().into_iter(),
        })
    }
}

/// Runs the driver as its own task (so decoding goes on beside whatever consumes the
/// events) and yields what it sends: the events of one network read come as one batch,
/// handed out one by one. Dropping the stream aborts the call.
struct Pump {
    /// The driver, when the stream was made outside a runtime: the first poll spawns it.
    fut: Option<BoxFuture<'static, ()>>,
    task: Option<tokio::task::AbortHandle>,
    rx: mpsc::Receiver<Vec<StreamEvent>>,
    ready: std::vec::IntoIter<StreamEvent>,
}

impl Drop for Pump {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl Stream for Pump {
    type Item = StreamEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<StreamEvent>> {
        if let Some(ev) = self.ready.next() {
            return Poll::Ready(Some(ev));
        }
        if let Some(fut) = self.fut.take() {
            self.task = Some(tokio::spawn(fut).abort_handle());
        }
        loop {
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(batch)) => {
                    self.ready = batch.into_iter();
                    if let Some(ev) = self.ready.next() {
                        return Poll::Ready(Some(ev));
                    }
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
