//! One call, driven: attempts with retries, the fallback to a non-streaming request when a
//! stream yields nothing, events held back until an attempt shows content (so a retried
//! attempt leaves no trace), the stall timeout, cancellation and the raw-byte recording.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::HeaderMap;
use tokio::sync::mpsc;

use super::retry::{Outcome, backoff, redact_error, refusal, retry_after};
use super::{Core, HttpSettings, error_chain, is_content};
use crate::engines::llm::wire::DecodeStats;
use crate::engines::llm::{
    CallCtx, ChatRequest, LlmError, RawChunk, RawSink, StopReason, StreamEvent,
};

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

/// Sends events downstream, those of one network read together. Until the first content
/// event of an attempt, raw bytes and events are held so that a retried attempt leaves no
/// trace.
struct Out {
    tx: mpsc::Sender<Vec<StreamEvent>>,
    raw: Option<RawSink>,
    core: Arc<Core>,
    sent_at: Instant,
    committed: bool,
    held_raw: Vec<RawChunk>,
    held: Vec<StreamEvent>,
    /// Events passed on and not yet sent.
    ready: Vec<StreamEvent>,
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

    fn commit(&mut self) {
        self.committed = true;
        if let Some(raw) = &self.raw {
            for chunk in self.held_raw.drain(..) {
                let _ = raw.send(chunk);
            }
        }
        self.held_raw.clear();
        let held = std::mem::take(&mut self.held);
        self.ready.extend(held);
    }

    /// Passes an event on (or holds it); it goes out with the next [`Out::send`].
    fn push(&mut self, ev: StreamEvent) {
        if !self.committed && (is_content(&ev) || is_terminal(&ev)) {
            self.commit();
        }
        if self.committed {
            // The deltas of one network read go on as one: hundreds of them arrive together
            // on a fast stream, and everything downstream works per event.
            match (self.ready.last_mut(), ev) {
                (
                    Some(StreamEvent::ThinkingDelta { text }),
                    StreamEvent::ThinkingDelta { text: more },
                )
                | (Some(StreamEvent::TextDelta { text }), StreamEvent::TextDelta { text: more }) => {
                    text.push_str(&more)
                }
                (_, ev) => self.ready.push(ev),
            }
        } else {
            self.held.push(ev);
        }
    }

    /// Passes an event on and sends what is ready.
    async fn event(&mut self, ev: StreamEvent) {
        self.push(ev);
        self.send().await;
    }

    /// Sends the events passed on so far, as one batch.
    async fn send(&mut self) {
        if self.ready.is_empty() {
            return;
        }
        let batch: Vec<StreamEvent> = self
            .ready
            .drain(..)
            .map(|ev| match ev {
                StreamEvent::Error { error } => StreamEvent::Error {
                    error: redact_error(error, &self.core.keys),
                },
                other => other,
            })
            .collect();
        // A closed channel means the consumer is gone; the driver is dropped with it.
        let _ = self.tx.send(batch).await;
    }
}

fn stall_secs(d: Duration) -> u64 {
    d.as_secs_f64().ceil().max(1.0) as u64
}

/// Runs one call to its end, sending its events to `tx`.
pub(super) async fn drive(
    core: Arc<Core>,
    mut req: ChatRequest,
    ctx: CallCtx,
    tx: mpsc::Sender<Vec<StreamEvent>>,
) {
    let mut out = Out {
        tx,
        raw: ctx.raw.clone(),
        core: core.clone(),
        sent_at: Instant::now(),
        committed: false,
        held_raw: Vec::new(),
        held: Vec::new(),
        ready: Vec::new(),
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
    let client = match core.client() {
        Ok(client) => client,
        Err(e) => return Outcome::Fail(e),
    };
    let sent_at = Instant::now();
    let send = client.post(&url).headers(headers).json(&body).send();
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
        return refusal(
            core,
            status.as_u16(),
            &body,
            wait.unwrap_or(retry_delay),
            key_index,
            attempt_no,
        );
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
            out.push(ev);
            if terminal {
                out.send().await;
                if !eof {
                    drain(&mut resp, out, settings, ctx).await;
                }
                log_stats(provider, decoder.stats());
                return Outcome::Done;
            }
        }
        out.send().await;
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
