//! Retries and keys: the key ring (rotation, cool-down after 429, parking a refused key),
//! the jittered backoff, `Retry-After`, what an error status means for the call, and keeping
//! key text out of every error.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;

use super::{ApiKey, Core, HttpSettings};
use crate::engines::llm::LlmError;
use crate::engines::llm::wire::error_message;

/// The call's API keys: which one is next, and which are cooling down until when.
pub(super) struct KeyRing {
    pub(super) keys: Vec<ApiKey>,
    cooling_until: Mutex<Vec<Option<Instant>>>,
    next: AtomicUsize,
}

impl KeyRing {
    pub(super) fn new(keys: Vec<ApiKey>) -> Self {
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
    pub(super) fn pick(&self) -> Option<usize> {
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

    pub(super) fn cool(&self, index: usize, for_: Duration) {
        if let Some(slot) = self.until().get_mut(index) {
            *slot = Some(Instant::now() + for_);
        }
    }

    pub(super) fn any_ready(&self) -> bool {
        let now = Instant::now();
        self.until().iter().any(|u| u.is_none_or(|t| t <= now))
    }

    pub(super) fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for key in &self.keys {
            if key.expose().len() >= 4 && out.contains(key.expose()) {
                out = out.replace(key.expose(), "[redacted]");
            }
        }
        out
    }
}

/// `e` with every key's text replaced.
pub(super) fn redact_error(e: LlmError, keys: &KeyRing) -> LlmError {
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

/// How one attempt ended, and so what the driver does next.
pub(super) enum Outcome {
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

/// The delay before retry number `retry` (from 0): doubled each time, capped, jittered
/// down by up to half.
pub(super) fn backoff(settings: &HttpSettings, retry: u32) -> Duration {
    let exp = settings.backoff_base.saturating_mul(1u32 << retry.min(20));
    let d = exp.min(settings.backoff_max);
    d.mul_f64(0.5 + fastrand::f64() * 0.5)
}

/// `Retry-After` in seconds (or OpenAI's `retry-after-ms`), if the server sent one.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
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

/// What an error status means for the call: a retry (at once with another key, or after
/// `delay`), or a failure. A key that got 429 cools down; one refused with 401/403 is
/// parked when there are others. `body` is the start of the error response.
pub(super) fn refusal(
    core: &Core,
    code: u16,
    body: &[u8],
    delay: Duration,
    key_index: Option<usize>,
    attempt_no: u32,
) -> Outcome {
    let provider = core.wire.name();
    let settings = &core.settings;
    let (kind, message) = error_message(code, body);
    let message = core.keys.redact(&message);
    let http = LlmError::Http {
        provider: provider.into(),
        status: code,
        message: message.clone(),
    };
    match code {
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
    }
}
