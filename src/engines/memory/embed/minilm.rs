//! all-MiniLM-L6-v2 on the CPU through candle: a six-layer BERT whose token states are
//! averaged over the attention mask and scaled to unit length (the sentence-transformers
//! recipe for this model), giving 384-dimensional vectors.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use candle_core::{D, DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::Tokenizer;

use super::{EmbedError, Embedder, EmbeddingParams, normalize};
use crate::engines::llm::wire::one_line;

/// The vector size of all-MiniLM-L6-v2.
const DIM: usize = 384;

/// The value of [`Embedder::id`] for this model.
const ID: &str = "all-MiniLM-L6-v2/384";

/// Vectors [`Embedder::embed_ahead`] made and an `embed` has not taken yet, at most this many
/// (the oldest goes first): one turn's answer needs one.
const AHEAD: usize = 4;

/// The local sentence embedder. Loading reads about 90 MB of weights. Embedding blocks the
/// calling thread; candle spreads matrix products, softmax and layer norms over rayon's
/// global pool (one thread per core unless `RAYON_NUM_THREADS` says otherwise), which on
/// two cores brings a ten-word query to roughly 7 ms. Safe to call from several threads.
pub struct MiniLm {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    /// Texts per forward pass.
    batch_size: usize,
    /// Longest input in model tokens; the rest of a text is cut.
    max_tokens: usize,
    /// The vectors of text heads embedded ahead ([`Embedder::embed_ahead`]), oldest first.
    ahead: Mutex<Vec<(String, Vec<f32>)>>,
    /// Forward passes run, for tests to see that a vector came from `ahead`.
    passes: AtomicUsize,
}

/// The start of `text` that holds its first `words` whitespace-separated words. Each such
/// word is at least one token (the tokenizer splits on the same whitespace, then further),
/// so a text cut here still has every token the model reads: the tokenizer need not walk
/// the whole of a long text only to truncate it.
fn first_words(text: &str, words: usize) -> &str {
    let mut seen = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word {
                seen += 1;
                if seen == words {
                    return &text[..i];
                }
            }
            in_word = false;
        } else {
            in_word = true;
        }
    }
    text
}

/// Splits indices sorted by length into batches of at most `size` whose longest text is at
/// most twice the shortest (plus a few tokens), so short texts are not padded to long ones.
fn length_batches(order: &[usize], len: impl Fn(usize) -> usize, size: usize) -> Vec<&[usize]> {
    let mut out = Vec::new();
    let mut start = 0;
    for end in 1..=order.len() {
        let full = end - start == size;
        let last = end == order.len();
        if full || last || len(order[end]) > 2 * len(order[start]) + 8 {
            out.push(&order[start..end]);
            start = end;
        }
    }
    out
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm")
            .field("id", &ID)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

/// One line naming the file and what is wrong with it.
fn unavailable(path: &Path, what: impl std::fmt::Display) -> EmbedError {
    EmbedError::Unavailable(one_line(&format!("{}: {what}", path.display()), usize::MAX))
}

fn failed(what: &str, e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Failed(one_line(&format!("{what}: {e}"), usize::MAX))
}

/// Reads a whole file, or says which one could not be read.
fn read(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|e| unavailable(path, e))
}

impl MiniLm {
    /// Loads `model.safetensors`, `tokenizer.json` and `config.json` from `dir`. A missing or
    /// damaged file gives [`EmbedError::Unavailable`] naming it.
    pub fn load(dir: &Path, params: &EmbeddingParams) -> Result<Self, EmbedError> {
        let config_path = dir.join("config.json");
        let tokenizer_path = dir.join("tokenizer.json");
        let weights_path = dir.join("model.safetensors");

        let config: Config = serde_json::from_slice(&read(&config_path)?)
            .map_err(|e| unavailable(&config_path, format!("not a BERT config: {e}")))?;
        if config.hidden_size != DIM {
            return Err(unavailable(
                &config_path,
                format!(
                    "hidden size {} where all-MiniLM-L6-v2 has {DIM}",
                    config.hidden_size
                ),
            ));
        }

        let mut tokenizer = Tokenizer::from_bytes(read(&tokenizer_path)?)
            .map_err(|e| unavailable(&tokenizer_path, format!("not a tokenizer: {e}")))?;
        // The shipped tokenizer pads every input to 128 tokens; padding is done here instead,
        // to the longest text of each batch, so a short query costs a short forward pass.
        tokenizer.with_padding(None);
        let max_tokens = params
            .max_tokens
            .clamp(2, config.max_position_embeddings.max(2));
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| unavailable(&tokenizer_path, format!("cannot set truncation: {e}")))?;

        let device = Device::Cpu;
        let not_weights = |e: &dyn std::fmt::Display| {
            unavailable(&weights_path, format!("not a safetensors file: {e}"))
        };
        // Each tensor read straight into its own memory (`weights.rs`); a file with tensors
        // of a type that reader does not know is read whole into memory and converted
        // (mapping it would need `unsafe`).
        let vb = match super::weights::read_tensors(&weights_path, &device)
            .map_err(|e| not_weights(&e))?
        {
            Some(tensors) => VarBuilder::from_tensors(tensors, DType::F32, &device),
            None => {
                VarBuilder::from_buffered_safetensors(read(&weights_path)?, DType::F32, &device)
                    .map_err(|e| not_weights(&e))?
            }
        };
        let model = BertModel::load(vb, &config)
            .map_err(|e| unavailable(&weights_path, format!("weights do not fit: {e}")))?;

        Ok(Self {
            model,
            tokenizer,
            device,
            batch_size: params.batch_size.max(1),
            max_tokens,
            ahead: Mutex::new(Vec::new()),
            passes: AtomicUsize::new(0),
        })
    }

    /// The vector embedded ahead for exactly `head`, taken out of the list.
    fn take_ahead(&self, head: &str) -> Option<Vec<f32>> {
        let mut ahead = self.ahead.lock().ok()?;
        let at = ahead.iter().position(|(h, _)| h == head)?;
        Some(ahead.remove(at).1)
    }

    /// Runs one forward pass over texts already tokenised, returning unit vectors.
    fn forward(&self, encodings: &[&tokenizers::Encoding]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.passes.fetch_add(1, Ordering::Relaxed);
        let batch = encodings.len();
        let len = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        if batch == 0 || len == 0 {
            return Ok(vec![vec![0.0; DIM]; batch]);
        }
        let padded = encodings.iter().any(|e| e.len() != len);

        // Row-major ids and mask, padded on the right with id 0 ([PAD]) and mask 0.
        let mut ids = vec![0u32; batch * len];
        let mut mask = vec![0f32; batch * len];
        for (row, enc) in encodings.iter().enumerate() {
            let start = row * len;
            ids[start..start + enc.len()].copy_from_slice(enc.get_ids());
            for (m, &a) in mask[start..start + enc.len()]
                .iter_mut()
                .zip(enc.get_attention_mask())
            {
                *m = a as f32;
            }
        }

        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let ids = Tensor::from_vec(ids, (batch, len), &self.device)?;
            let token_types = ids.zeros_like()?;
            let mask = Tensor::from_vec(mask, (batch, len), &self.device)?;
            // (batch, len, 384)
            let states = self
                .model
                .forward(&ids, &token_types, padded.then_some(&mask))?;
            let pooled = if padded {
                // Mean over the real tokens only: zero the padding, sum, divide by the count.
                let summed = states.broadcast_mul(&mask.unsqueeze(D::Minus1)?)?.sum(1)?;
                let counts = mask.sum_keepdim(1)?;
                summed.broadcast_div(&counts)?
            } else {
                states.mean(1)?
            };
            pooled.to_vec2::<f32>()
        };
        let mut vectors = run().map_err(|e| failed("MiniLM forward pass", e))?;
        vectors.iter_mut().for_each(|v| normalize(v));
        Ok(vectors)
    }
}

/// all-MiniLM-L6-v2 loaded on its first use. Opening a memory or a knowledge base (the TUI
/// does both before its first frame, `ask` before its request) then costs a look at the
/// model's files rather than reading and unpacking 87 MB of weights; a missing file is still
/// said at once, and a damaged one on first use (each caller then falls back to keywords).
pub struct LazyMiniLm {
    dir: PathBuf,
    params: EmbeddingParams,
    /// Shared with the thread of [`Embedder::warm`], which may be the one that loads it.
    model: Arc<OnceLock<Result<MiniLm, EmbedError>>>,
}

impl LazyMiniLm {
    /// The model in `dir`, to be loaded when first asked for vectors; fails at once, naming
    /// it, when one of its files is missing (as [`MiniLm::load`] would).
    pub fn new(dir: &Path, params: &EmbeddingParams) -> Result<Self, EmbedError> {
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            let path = dir.join(file);
            std::fs::metadata(&path).map_err(|e| unavailable(&path, e))?;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            params: params.clone(),
            model: Arc::new(OnceLock::new()),
        })
    }

    fn model(&self) -> Result<&MiniLm, EmbedError> {
        self.model
            .get_or_init(|| MiniLm::load(&self.dir, &self.params))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl Embedder for LazyMiniLm {
    fn id(&self) -> &str {
        ID
    }

    fn dim(&self) -> usize {
        DIM
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.model()?.embed(texts)
    }

    fn embed_ahead(&self, text: &str) -> bool {
        // A model that cannot load has nothing to prepare: the later `embed` says why.
        self.model().map_or(true, |m| m.embed_ahead(text))
    }

    /// Loads the model on a thread of its own; a first `embed` meanwhile waits for it there
    /// rather than loading it again. Nothing happens when it is loaded (or failed) already,
    /// or when no thread can start (the first `embed` loads it then).
    fn warm(&self) {
        if self.model.get().is_some() {
            return;
        }
        let (model, dir, params) = (self.model.clone(), self.dir.clone(), self.params.clone());
        let spawned = std::thread::Builder::new()
            .name("glassbox-embed-load".into())
            .spawn(move || {
                model.get_or_init(|| MiniLm::load(&dir, &params));
            });
        if let Err(e) = spawned {
            tracing::debug!("the embedder loads on its first use: {e}");
        }
    }
}

impl Embedder for MiniLm {
    fn id(&self) -> &str {
        ID
    }

    fn dim(&self) -> usize {
        DIM
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = vec![Vec::new(); texts.len()];
        // Texts whose head was embedded ahead take that vector; the rest are embedded here.
        let (mut todo, mut heads) = (Vec::with_capacity(texts.len()), Vec::new());
        for (i, t) in texts.iter().enumerate() {
            let head = first_words(t, self.max_tokens);
            match self.take_ahead(head) {
                Some(v) => {
                    tracing::debug!(
                        bytes = head.len(),
                        "vector taken from a head embedded ahead"
                    );
                    out[i] = v;
                }
                None => {
                    todo.push(i);
                    heads.push(head);
                }
            }
        }
        if todo.is_empty() {
            return Ok(out);
        }
        let encodings = if heads.len() == 1 {
            vec![
                self.tokenizer
                    .encode_fast(heads[0], true)
                    .map_err(|e| failed("tokenising", e))?,
            ]
        } else {
            self.tokenizer
                .encode_batch_fast(heads, true)
                .map_err(|e| failed("tokenising", e))?
        };

        // Texts of similar length share a batch, so little of each pass is padding.
        let mut order: Vec<usize> = (0..todo.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());

        for chunk in length_batches(&order, |i| encodings[i].len(), self.batch_size) {
            let batch: Vec<&tokenizers::Encoding> = chunk.iter().map(|&i| &encodings[i]).collect();
            for (&i, v) in chunk.iter().zip(self.forward(&batch)?) {
                out[todo[i]] = v;
            }
        }
        Ok(out)
    }

    /// Embeds the head of `text` (what the model reads of it) now, once the head is fixed:
    /// once `text` holds more than the words the model can read, any text that starts with
    /// it has the same head, and its `embed` takes this vector instead of a forward pass.
    fn embed_ahead(&self, text: &str) -> bool {
        let head = first_words(text, self.max_tokens);
        if head.len() == text.len() {
            // The last word may go on, or more words fit: not fixed yet.
            return false;
        }
        if self
            .ahead
            .lock()
            .is_ok_and(|ahead| ahead.iter().any(|(h, _)| h == head))
        {
            return true;
        }
        let Ok(mut vectors) = self.embed(&[head]) else {
            return true;
        };
        if let (Some(v), Ok(mut ahead)) = (vectors.pop(), self.ahead.lock()) {
            if ahead.len() == AHEAD {
                ahead.remove(0);
            }
            ahead.push((head.to_owned(), v));
            tracing::debug!(bytes = head.len(), "a text's head embedded ahead");
        }
        true
    }
}

// The embedder is shared between threads behind an `Arc<dyn Embedder>`.
const _: fn() = || {
    fn shareable<T: Send + Sync>() {}
    shareable::<MiniLm>();
};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// The files [`MiniLm::load`] reads from `dir`.
    fn required_files(dir: &Path) -> [PathBuf; 3] {
        [
            dir.join("model.safetensors"),
            dir.join("tokenizer.json"),
            dir.join("config.json"),
        ]
    }

    /// The installed model's folder, or `None` (and a note) when its files are absent.
    fn model_dir() -> Option<PathBuf> {
        let dir = crate::paths::default_models_dir().map(|d| crate::models::minilm_dir(&d))?;
        if required_files(&dir).iter().all(|p| p.is_file()) {
            Some(dir)
        } else {
            eprintln!(
                "skipped: all-MiniLM-L6-v2 files not found in {}",
                dir.display()
            );
            None
        }
    }

    fn load() -> Option<MiniLm> {
        let dir = model_dir()?;
        Some(MiniLm::load(&dir, &EmbeddingParams::default()).unwrap())
    }

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn similar_sentences_are_close_and_unrelated_ones_far() {
        let Some(m) = load() else { return };
        assert_eq!(m.id(), "all-MiniLM-L6-v2/384");
        assert_eq!(m.dim(), 384);
        let v = m
            .embed(&[
                "The cat sits on the mat",
                "A cat is sitting on a mat",
                "Stock prices fell sharply today",
            ])
            .unwrap();
        assert_eq!(v.len(), 3);
        for x in &v {
            assert_eq!(x.len(), 384);
            assert!((dot(x, x) - 1.0).abs() < 1e-4, "not unit length");
        }
        let close = dot(&v[0], &v[1]);
        let far = dot(&v[0], &v[2]);
        eprintln!("cosine cat/cat {close:.4}, cat/stocks {far:.4}");
        assert!(close > 0.7, "similar sentences at cosine {close}");
        assert!(far < 0.3, "unrelated sentences at cosine {far}");
    }

    #[test]
    fn batching_and_padding_do_not_change_vectors() {
        let Some(m) = load() else { return };
        let texts = [
            "short",
            "a rather longer sentence about memory retrieval in a terminal workbench",
            "",
            "medium length text here",
        ];
        let together = m.embed(&texts).unwrap();
        for (t, v) in texts.iter().zip(&together) {
            let alone = m.embed(&[t]).unwrap().remove(0);
            let cos = dot(v, &alone);
            assert!(cos > 0.9999, "{t:?}: batched vs alone cosine {cos}");
        }
        // Batches of two force several passes, in length order, and the order must hold.
        let dir = model_dir().unwrap();
        let small = MiniLm::load(
            &dir,
            &EmbeddingParams {
                batch_size: 2,
                ..EmbeddingParams::default()
            },
        )
        .unwrap();
        for (a, b) in small.embed(&texts).unwrap().iter().zip(&together) {
            assert!(dot(a, b) > 0.9999);
        }
        assert!(m.embed(&[]).unwrap().is_empty());
    }

    /// A head embedded ahead is what `embed` of any text starting with it then returns,
    /// without a forward pass; a text too short to have a fixed head is not embedded.
    #[test]
    fn a_head_embedded_ahead_is_taken_by_the_embed_of_the_whole_text() {
        let Some(m) = load() else { return };
        let whole: String = (0..400)
            .map(|i| format!("entry {i} of the lighthouse log records the tide. "))
            .collect();
        let short = "the lighthouse log";
        let fresh = m.embed(&[&whole, short]).unwrap();

        let before = m.passes.load(Ordering::Relaxed);
        assert!(!m.embed_ahead(short), "a short text has no fixed head yet");
        assert_eq!(m.passes.load(Ordering::Relaxed), before);
        // The first 300 words already fix the model's 256.
        let start: String = whole.split_inclusive(' ').take(300).collect();
        assert!(m.embed_ahead(&start));
        assert!(m.embed_ahead(&start), "a second call finds it done");
        assert_eq!(m.passes.load(Ordering::Relaxed), before + 1);

        let got = m.embed(&[&whole, short]).unwrap();
        // One pass, for the short text alone.
        assert_eq!(m.passes.load(Ordering::Relaxed), before + 2);
        assert!(
            dot(&got[0], &fresh[0]) > 0.9999,
            "the head's vector is the text's"
        );
        assert!(dot(&got[1], &fresh[1]) > 0.9999);
        // Taken once: the next embed of the text runs the model again.
        m.embed(&[&whole]).unwrap();
        assert_eq!(m.passes.load(Ordering::Relaxed), before + 3);
    }

    #[test]
    fn a_long_text_is_cut_to_the_words_that_can_hold_its_tokens() {
        assert_eq!(first_words("one two  three\nfour", 2), "one two");
        assert_eq!(first_words("  one two", 1), "  one");
        assert_eq!(first_words("one two", 5), "one two");
        assert_eq!(first_words("", 3), "");
        let Some(m) = load() else { return };
        // Cutting first gives the vector the whole text gives.
        let long = "the budget weighs every option again; ".repeat(400);
        let whole = {
            let enc = m.tokenizer.encode_fast(long.as_str(), true).unwrap();
            m.forward(&[&enc]).unwrap().remove(0)
        };
        let cut = m.embed(&[&long]).unwrap().remove(0);
        assert!(dot(&whole, &cut) > 0.99999);
    }

    #[test]
    fn batches_hold_texts_of_like_length() {
        let lens = [3, 4, 10, 30, 31, 200, 256];
        let order: Vec<usize> = (0..lens.len()).collect();
        let got: Vec<Vec<usize>> = length_batches(&order, |i| lens[i], 32)
            .into_iter()
            .map(<[usize]>::to_vec)
            .collect();
        assert_eq!(got, vec![vec![0, 1, 2], vec![3, 4], vec![5, 6]]);
        let got = length_batches(&order[..2], |i| lens[i], 1);
        assert_eq!(got, vec![&[0][..], &[1][..]]);
        assert!(length_batches(&[], |i| lens[i], 4).is_empty());
    }

    #[test]
    fn long_text_is_truncated_not_rejected() {
        let Some(m) = load() else { return };
        let long = "word ".repeat(5000);
        let v = m.embed(&[&long]).unwrap();
        assert_eq!(v[0].len(), 384);
        assert!((dot(&v[0], &v[0]) - 1.0).abs() < 1e-4);
    }

    #[test]
    fn missing_or_damaged_files_are_unavailable_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = MiniLm::load(dir.path(), &EmbeddingParams::default()).unwrap_err();
        let EmbedError::Unavailable(msg) = &err else {
            panic!("expected Unavailable, got {err:?}")
        };
        assert!(msg.contains("config.json"), "{msg}");
        assert!(!err.to_string().contains('\n'));

        // A damaged config.
        std::fs::write(dir.path().join("config.json"), "{ not json").unwrap();
        let err = MiniLm::load(dir.path(), &EmbeddingParams::default()).unwrap_err();
        assert!(
            matches!(&err, EmbedError::Unavailable(m) if m.contains("config.json")),
            "{err}"
        );

        // With the real config and tokenizer (when installed) but damaged weights.
        let Some(real) = model_dir() else { return };
        std::fs::copy(real.join("config.json"), dir.path().join("config.json")).unwrap();
        std::fs::copy(
            real.join("tokenizer.json"),
            dir.path().join("tokenizer.json"),
        )
        .unwrap();
        std::fs::write(dir.path().join("model.safetensors"), b"garbage").unwrap();
        let err = MiniLm::load(dir.path(), &EmbeddingParams::default()).unwrap_err();
        assert!(
            matches!(&err, EmbedError::Unavailable(m) if m.contains("model.safetensors")),
            "{err}"
        );
        assert!(!err.to_string().contains('\n'));
    }

    /// The lazy model says a missing file at once, as the eager load does; with its files
    /// present it knows its id and size unread, reports a damaged file on first use (the
    /// same error on every use), and gives the eager model's vectors.
    #[test]
    fn the_lazy_model_checks_files_at_once_and_loads_on_first_use() {
        let params = EmbeddingParams::default();
        let dir = tempfile::tempdir().unwrap();
        let err = LazyMiniLm::new(dir.path(), &params).err().unwrap();
        let eager = MiniLm::load(dir.path(), &params).unwrap_err();
        assert_eq!(err.to_string(), eager.to_string());

        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            std::fs::write(dir.path().join(file), "{ not json").unwrap();
        }
        let lazy = LazyMiniLm::new(dir.path(), &params).unwrap();
        assert_eq!((lazy.id(), lazy.dim()), (ID, DIM));
        let first = lazy.embed(&["a text"]).unwrap_err();
        assert!(
            matches!(&first, EmbedError::Unavailable(m) if m.contains("config.json")),
            "{first}"
        );
        let again = lazy.embed(&["a text"]).unwrap_err();
        assert_eq!(first.to_string(), again.to_string());

        let Some(real) = model_dir() else { return };
        let (lazy, eager) = (
            LazyMiniLm::new(&real, &params).unwrap(),
            MiniLm::load(&real, &params).unwrap(),
        );
        let texts = ["The cat sits on the mat", "Stock prices fell sharply today"];
        assert_eq!(lazy.embed(&texts).unwrap(), eager.embed(&texts).unwrap());
    }

    #[test]
    fn warming_loads_the_model_on_another_thread_and_embeds_the_same() {
        let params = EmbeddingParams::default();
        // A damaged file: warming finds the same error the first use would.
        let dir = tempfile::tempdir().unwrap();
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            std::fs::write(dir.path().join(file), "{ not json").unwrap();
        }
        let lazy = LazyMiniLm::new(dir.path(), &params).unwrap();
        lazy.warm();
        let err = lazy.embed(&["a text"]).unwrap_err();
        assert!(matches!(&err, EmbedError::Unavailable(m) if m.contains("config.json")));

        let Some(real) = model_dir() else { return };
        let lazy = LazyMiniLm::new(&real, &params).unwrap();
        lazy.warm();
        let loaded_by_warm = (0..600).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            lazy.model.get().is_some()
        });
        assert!(loaded_by_warm, "warm did not load the model within 30 s");
        lazy.warm();
        let eager = MiniLm::load(&real, &params).unwrap();
        let texts = ["The cat sits on the mat", "Stock prices fell sharply today"];
        assert_eq!(lazy.embed(&texts).unwrap(), eager.embed(&texts).unwrap());
    }
}
