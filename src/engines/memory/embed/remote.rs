//! Embeddings from an OpenAI-compatible server: `POST {base_url}/embeddings` with
//! `{"model": …, "input": [texts]}`, answered by `{"data": [{"embedding": […], "index": N}]}`.
//!
//! This client is synchronous (`reqwest::blocking`, which runs its own small runtime on a
//! thread of its own). Call [`Embedder::embed`] from a plain thread or from tokio's blocking
//! pool (`spawn_blocking`), never directly from an async task: it parks the calling thread
//! for the whole round trip. [`RemoteEmbedder::new`] does no I/O and is safe anywhere; the
//! HTTP client is built on the first call to `embed`. Dropping the embedder stops the
//! client's thread (a short join), which is fine anywhere.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::blocking::Client;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::Deserialize;

use super::{EmbedError, Embedder, EmbeddingParams, normalize};
use crate::engines::llm::wire::one_line;

/// How much of an error body goes into a message.
const BODY_EXCERPT_CHARS: usize = 200;

/// An embedder backed by an OpenAI-compatible `/embeddings` endpoint.
pub struct RemoteEmbedder {
    /// `{base_url}/embeddings`.
    url: String,
    model: String,
    /// `{model}/{dim}`.
    id: String,
    dim: usize,
    batch_size: usize,
    timeout: Duration,
    /// `Bearer <key>`, marked sensitive; never printed.
    auth: Option<HeaderValue>,
    /// Built on first use, so that constructing the embedder never blocks.
    client: OnceLock<Result<Client, EmbedError>>,
}

impl std::fmt::Debug for RemoteEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEmbedder")
            .field("url", &self.url)
            .field("id", &self.id)
            .field("batch_size", &self.batch_size)
            .field("timeout", &self.timeout)
            .field("has_key", &self.auth.is_some())
            .finish_non_exhaustive()
    }
}

/// One entry of the response's `data` list.
#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    index: usize,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

/// An error and its sources joined with `: `, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    one_line(&crate::engines::llm::http::error_chain(e), usize::MAX)
}

impl RemoteEmbedder {
    /// Reads the API key from the environment variable `params.api_key_env` names (when that
    /// name is set and the variable is non-empty; local servers need none). Does no I/O.
    pub fn new(params: &EmbeddingParams) -> Result<Self, EmbedError> {
        let key = Some(params.api_key_env.trim())
            .filter(|name| !name.is_empty())
            .and_then(|name| std::env::var(name).ok())
            .filter(|k| !k.trim().is_empty());
        Self::with_api_key(params, key.as_deref())
    }

    /// As [`RemoteEmbedder::new`], with the key given directly.
    fn with_api_key(params: &EmbeddingParams, key: Option<&str>) -> Result<Self, EmbedError> {
        let base = params.base_url.trim().trim_end_matches('/');
        if base.is_empty() {
            return Err(EmbedError::Failed(
                "no base_url set for the embeddings server".into(),
            ));
        }
        if params.model.trim().is_empty() {
            return Err(EmbedError::Failed(
                "no model set for the embeddings server".into(),
            ));
        }
        if params.dim == 0 {
            return Err(EmbedError::Failed(
                "the embedding dimension (dim) must be above 0".into(),
            ));
        }
        let auth = match key {
            Some(k) => {
                let mut v =
                    HeaderValue::from_str(&format!("Bearer {}", k.trim())).map_err(|_| {
                        EmbedError::Failed(format!(
                            "the API key in ${} contains characters not allowed in an HTTP header",
                            params.api_key_env
                        ))
                    })?;
                v.set_sensitive(true);
                Some(v)
            }
            None => None,
        };
        Ok(Self {
            url: format!("{base}/embeddings"),
            model: params.model.trim().to_string(),
            id: format!("{}/{}", params.model.trim(), params.dim),
            dim: params.dim,
            batch_size: params.batch_size.max(1),
            timeout: Duration::from_secs(params.timeout_secs.max(1)),
            auth,
            client: OnceLock::new(),
        })
    }

    fn client(&self) -> Result<&Client, EmbedError> {
        self.client
            .get_or_init(|| {
                crate::engines::llm::http::install_crypto_provider();
                Client::builder()
                    .timeout(self.timeout)
                    .connect_timeout(self.timeout.min(Duration::from_secs(10)))
                    .tcp_nodelay(true)
                    .user_agent(concat!("glassbox/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| {
                        EmbedError::Failed(format!(
                            "cannot build the HTTP client: {}",
                            error_chain(&e)
                        ))
                    })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// One request for one batch; the vectors come back in input order, normalised.
    fn request(&self, client: &Client, batch: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let url = &self.url;
        let body = serde_json::json!({ "model": self.model, "input": batch });
        let mut req = client.post(url).json(&body);
        if let Some(auth) = &self.auth {
            req = req.header(AUTHORIZATION, auth.clone());
        }
        let resp = req.send().map_err(|e| {
            if e.is_timeout() {
                EmbedError::Failed(format!(
                    "POST {url}: no answer within {} s",
                    self.timeout.as_secs()
                ))
            } else {
                EmbedError::Failed(format!("POST {url}: {}", error_chain(&e)))
            }
        })?;
        let status = resp.status();
        let text = resp.text().map_err(|e| {
            EmbedError::Failed(format!(
                "POST {url}: HTTP {status}, body unreadable: {}",
                error_chain(&e)
            ))
        })?;
        if !status.is_success() {
            return Err(EmbedError::Failed(format!(
                "POST {url}: HTTP {status}: {}",
                one_line(&text, BODY_EXCERPT_CHARS)
            )));
        }
        let parsed: Response = serde_json::from_str(&text).map_err(|e| {
            EmbedError::Failed(format!(
                "POST {url}: unexpected response ({e}): {}",
                one_line(&text, BODY_EXCERPT_CHARS)
            ))
        })?;
        if parsed.data.len() != batch.len() {
            return Err(EmbedError::Failed(format!(
                "POST {url}: sent {} texts, got {} embeddings",
                batch.len(),
                parsed.data.len()
            )));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; batch.len()];
        for item in parsed.data {
            if item.embedding.len() != self.dim {
                return Err(EmbedError::Failed(format!(
                    "{}: expected {} dimensions, got {}",
                    self.model,
                    self.dim,
                    item.embedding.len()
                )));
            }
            let slot = out.get_mut(item.index).ok_or_else(|| {
                EmbedError::Failed(format!(
                    "POST {url}: embedding index {} out of range for {} texts",
                    item.index,
                    batch.len()
                ))
            })?;
            if slot.is_some() {
                return Err(EmbedError::Failed(format!(
                    "POST {url}: embedding index {} given twice",
                    item.index
                )));
            }
            let mut v = item.embedding;
            normalize(&mut v);
            *slot = Some(v);
        }
        // Every slot is filled: as many items as texts, each index in range and distinct.
        Ok(out.into_iter().flatten().collect())
    }
}

impl Embedder for RemoteEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    /// Blocks for the HTTP round trips: call it from `spawn_blocking` or a plain thread.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let client = self.client()?;
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            out.extend(self.request(client, batch)?);
        }
        Ok(out)
    }
}

// The embedder is shared between threads behind an `Arc<dyn Embedder>`.
const _: fn() = || {
    fn shareable<T: Send + Sync>() {}
    shareable::<RemoteEmbedder>();
};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::Json;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response as AxumResponse};
    use axum::routing::post;
    use serde_json::{Value, json};

    use super::*;

    /// What the fake server saw: per request, the Authorization header and the inputs.
    #[derive(Default)]
    struct Seen {
        requests: Vec<(Option<String>, String, Vec<String>)>,
    }

    type Shared = Arc<Mutex<Seen>>;

    const DIM: usize = 4;

    /// The fake server's raw (unnormalised) vector for a text.
    fn raw_vector(text: &str) -> Vec<f32> {
        vec![text.len() as f32, 1.0, 0.0, 2.0]
    }

    fn unit(mut v: Vec<f32>) -> Vec<f32> {
        normalize(&mut v);
        v
    }

    async fn embeddings(
        State(seen): State<Shared>,
        headers: HeaderMap,
        Json(body): Json<Value>,
    ) -> AxumResponse {
        let auth = headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_string());
        let model = body["model"].as_str().unwrap_or_default().to_string();
        let inputs: Vec<String> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        seen.lock()
            .unwrap()
            .requests
            .push((auth, model.clone(), inputs.clone()));
        if inputs.iter().any(|t| t == "boom") {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "model exploded\nwhile embedding",
            )
                .into_response();
        }
        if inputs.iter().any(|t| t == "slow") {
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
        // Last first, so the client has to sort by index.
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .rev()
            .map(|(i, t)| {
                let mut v = raw_vector(t);
                if t == "wide" {
                    v.push(9.0);
                }
                json!({ "object": "embedding", "embedding": v, "index": i })
            })
            .collect();
        Json(json!({ "object": "list", "data": data, "model": model })).into_response()
    }

    /// Starts the fake server; returns its `/v1` base URL and what it records.
    async fn serve() -> (String, Shared) {
        let seen = Shared::default();
        let app = axum::Router::new()
            .route("/v1/embeddings", post(embeddings))
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        (format!("http://{addr}/v1"), seen)
    }

    fn params(base_url: &str) -> EmbeddingParams {
        EmbeddingParams {
            provider: super::super::EmbedderKind::OpenAi,
            batch_size: 2,
            base_url: format!("{base_url}/"),
            model: "test-embed".into(),
            dim: DIM,
            api_key_env: String::new(),
            timeout_secs: 1,
            ..EmbeddingParams::default()
        }
    }

    /// Runs blocking embedder code the way the app does: on tokio's blocking pool.
    async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        tokio::task::spawn_blocking(f).await.unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn batches_orders_normalises_and_sends_the_key() {
        let (base, seen) = serve().await;
        let p = params(&base);
        let texts = ["a", "bb", "ccc", "dddd", "eeeee"];
        // Built in the async context (no I/O), used on the blocking pool, dropped back here.
        let e = Arc::new(RemoteEmbedder::with_api_key(&p, Some("sk-test-123")).unwrap());
        let shared = e.clone();
        let vectors = blocking(move || {
            let v = shared.embed(&texts).unwrap();
            assert!(shared.embed(&[]).unwrap().is_empty());
            v
        })
        .await;
        let (id, dim) = (e.id().to_string(), e.dim());
        drop(e);
        assert_eq!(id, "test-embed/4");
        assert_eq!(dim, DIM);
        assert_eq!(vectors.len(), texts.len());
        for (t, v) in texts.iter().zip(&vectors) {
            assert_eq!(v, &unit(raw_vector(t)), "vector for {t:?}");
            let norm: f32 = v.iter().map(|x| x * x).sum();
            assert!((norm - 1.0).abs() < 1e-5);
        }
        let seen = seen.lock().unwrap();
        // Five texts in batches of two: three requests, none for the empty call.
        assert_eq!(seen.requests.len(), 3);
        let inputs: Vec<Vec<String>> = seen.requests.iter().map(|r| r.2.clone()).collect();
        assert_eq!(
            inputs,
            vec![vec!["a", "bb"], vec!["ccc", "dddd"], vec!["eeeee"]]
        );
        for (auth, model, _) in &seen.requests {
            assert_eq!(auth.as_deref(), Some("Bearer sk-test-123"));
            assert_eq!(model, "test-embed");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn key_comes_from_the_named_environment_variable() {
        let (base, seen) = serve().await;
        // The test cannot set variables (that needs `unsafe`), so it names one that exists.
        let Some((name, value)) = ["HOME", "PATH", "USER"]
            .iter()
            .find_map(|n| std::env::var(n).ok().map(|v| (n.to_string(), v)))
            .filter(|(_, v)| HeaderValue::from_str(v).is_ok() && !v.trim().is_empty())
        else {
            eprintln!("skipped: no usable environment variable to read a key from");
            return;
        };
        let with_key = EmbeddingParams {
            api_key_env: name,
            ..params(&base)
        };
        let without = EmbeddingParams {
            api_key_env: "GLASSBOX_TEST_VARIABLE_THAT_IS_NOT_SET".into(),
            ..params(&base)
        };
        blocking(move || {
            RemoteEmbedder::new(&with_key)
                .unwrap()
                .embed(&["x"])
                .unwrap();
            RemoteEmbedder::new(&without)
                .unwrap()
                .embed(&["y"])
                .unwrap();
        })
        .await;
        let seen = seen.lock().unwrap();
        assert_eq!(seen.requests.len(), 2);
        assert_eq!(
            seen.requests[0].0.as_deref(),
            Some(format!("Bearer {}", value.trim()).as_str())
        );
        assert_eq!(seen.requests[1].0, None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn errors_are_single_lines_with_the_cause() {
        let (base, _seen) = serve().await;
        let p = params(&base);
        let (http, wide, slow, refused) = blocking(move || {
            let e = RemoteEmbedder::new(&p).unwrap();
            let http = e.embed(&["fine", "boom"]).unwrap_err();
            let wide = e.embed(&["wide"]).unwrap_err();
            let slow = e.embed(&["slow"]).unwrap_err();
            let closed = EmbeddingParams {
                base_url: "http://127.0.0.1:1/v1".into(),
                ..p.clone()
            };
            let refused = RemoteEmbedder::new(&closed)
                .unwrap()
                .embed(&["x"])
                .unwrap_err();
            (http, wide, slow, refused)
        })
        .await;
        for e in [&http, &wide, &slow, &refused] {
            assert!(matches!(e, EmbedError::Failed(_)), "{e:?}");
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        let http = http.to_string();
        assert!(http.contains("500"), "{http}");
        assert!(http.contains("model exploded while embedding"), "{http}");
        assert!(http.contains("/v1/embeddings"), "{http}");
        let wide = wide.to_string();
        assert!(
            wide.contains("expected 4") && wide.contains("got 5"),
            "{wide}"
        );
        assert!(slow.to_string().contains("no answer within 1 s"), "{slow}");
        assert!(refused.to_string().contains("127.0.0.1:1"), "{refused}");
    }

    #[test]
    fn bad_settings_are_refused_up_front() {
        let ok = params("http://127.0.0.1:9/v1");
        assert!(RemoteEmbedder::new(&ok).is_ok());
        for bad in [
            EmbeddingParams {
                base_url: " ".into(),
                ..ok.clone()
            },
            EmbeddingParams {
                model: String::new(),
                ..ok.clone()
            },
            EmbeddingParams {
                dim: 0,
                ..ok.clone()
            },
        ] {
            assert!(RemoteEmbedder::new(&bad).is_err(), "{bad:?}");
        }
        let err = RemoteEmbedder::with_api_key(&ok, Some("bad\nkey")).unwrap_err();
        assert!(!err.to_string().contains("bad"), "the key leaked: {err}");
        // The key never shows in debug output.
        let e = RemoteEmbedder::with_api_key(&ok, Some("sk-secret")).unwrap();
        assert!(!format!("{e:?}").contains("sk-secret"));
    }
}
