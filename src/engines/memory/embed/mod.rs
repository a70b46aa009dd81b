//! Text → vectors for memory retrieval: the local all-MiniLM-L6-v2 model through candle, or
//! an OpenAI-compatible `/v1/embeddings` endpoint. Every vector is L2-normalised, so a dot
//! product is the cosine similarity.
//!
//! Embedding blocks its thread (model inference or an HTTP round trip): async code calls it
//! on the blocking pool.

mod minilm;
mod remote;
mod weights;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use minilm::{LazyMiniLm, MiniLm};
pub use remote::RemoteEmbedder;

/// Embedding failures, each fit for one line.
#[derive(Clone, Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model files are missing or unreadable (search falls back to keywords).
    #[error("embedding model unavailable: {0}")]
    Unavailable(String),
    #[error("embedding failed: {0}")]
    Failed(String),
}

/// Turns texts into L2-normalised vectors of [`Embedder::dim`] dimensions.
pub trait Embedder: Send + Sync {
    /// Names the model and dimension (`all-MiniLM-L6-v2/384`); stored with every vector, so
    /// vectors of another model are recognised and rebuilt.
    fn id(&self) -> &str;
    fn dim(&self) -> usize;
    /// Embeds a batch; one vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// Gets ready for a first `embed` beside the caller, for one that is sure to come (the
    /// local model reads its weights on a thread of its own), so that call need not wait
    /// as long. The default does nothing.
    fn warm(&self) {}
    /// Embeds now, beside a stream, what the model will read of any text that starts with
    /// `text`, when that is already fixed (`text` is longer than the model reads), so that a
    /// later `embed` of such a text finds its vector made. True when there is nothing more
    /// to do for texts that start with `text` (done, or it cannot be done); false when
    /// `text` is still too short to tell. The default does nothing.
    fn embed_ahead(&self, _text: &str) -> bool {
        true
    }
}

/// Which embedder `[embeddings]` selects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// all-MiniLM-L6-v2 from the models dir, on the CPU.
    #[default]
    Local,
    /// An OpenAI-compatible `/v1/embeddings` endpoint.
    OpenAi,
    /// No vectors: keyword search only.
    None,
}

/// The `[embeddings]` config section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingParams {
    pub provider: EmbedderKind,
    /// Texts per forward pass / request.
    pub batch_size: usize,
    /// Longest input in model tokens (MiniLM was trained on 256; longer text is cut).
    pub max_tokens: usize,
    /// For `openai`: the server (…/v1), the model name, the vector size it returns and the
    /// environment variable holding its API key (none needed for local servers).
    pub base_url: String,
    pub model: String,
    pub dim: usize,
    pub api_key_env: String,
    pub timeout_secs: u64,
}

impl Default for EmbeddingParams {
    fn default() -> Self {
        Self {
            provider: EmbedderKind::Local,
            batch_size: 32,
            max_tokens: 256,
            base_url: "http://127.0.0.1:8080/v1".into(),
            model: "text-embedding-3-small".into(),
            dim: 384,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_secs: 30,
        }
    }
}

/// Builds the configured embedder. `minilm_dir` is the models dir's MiniLM folder; the
/// local model is loaded on its first use ([`LazyMiniLm`]).
pub fn build(
    params: &EmbeddingParams,
    minilm_dir: PathBuf,
) -> Result<Option<std::sync::Arc<dyn Embedder>>, EmbedError> {
    Ok(match params.provider {
        EmbedderKind::None => None,
        EmbedderKind::Local => Some(std::sync::Arc::new(LazyMiniLm::new(&minilm_dir, params)?)),
        EmbedderKind::OpenAi => Some(std::sync::Arc::new(RemoteEmbedder::new(params)?)),
    })
}

/// Scales a vector to unit length (left as is when it is all zeros).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
