//! The embedded local model: a GGUF file run in-process through llama.cpp.
//!
//! Generation runs on its own thread and streams pieces through a channel. Models without
//! native thinking get an explicit first pass that reasons about the question (streamed as
//! thinking), then the answer is generated conditioned on that reasoning.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::replay::TokenRecord;
use super::{
    CallCtx, ChatRequest, EventStream, LlmError, Provider, RawChunk, Role, StopReason, StreamEvent,
    ThinkingMode, Usage,
};
use bytes::Bytes;
use futures::StreamExt;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;

/// Settings of the local provider.
#[derive(Clone, Debug)]
pub struct LocalSettings {
    pub model_path: PathBuf,
    pub context_size: u32,
    /// Threads for generation; 0 uses every core.
    pub threads: u32,
    /// Give models without native thinking an explicit thinking pass.
    pub thinking_pass: bool,
    /// Instruction for the thinking pass.
    pub thinking_prompt: String,
    /// Instruction that introduces the reasoning in the answer pass.
    pub answer_prompt: String,
}

fn backend() -> Result<&'static LlamaBackend, LlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // llama.cpp logs to stderr by default; route it to our log file instead.
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlmError::Local {
            message: format!("cannot start llama.cpp: {e}"),
        })
}

/// Loaded models, shared by every call (loading is the slow part).
fn load_model(path: &Path) -> Result<Arc<LlamaModel>, LlmError> {
    static MODELS: OnceLock<Mutex<HashMap<PathBuf, Arc<LlamaModel>>>> = OnceLock::new();
    let cache = MODELS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut cache = cache.lock().map_err(|_| LlmError::Local {
        message: "model cache poisoned".into(),
    })?;
    if let Some(m) = cache.get(path) {
        return Ok(m.clone());
    }
    if !path.is_file() {
        return Err(LlmError::Local {
            message: format!(
                "model file {} not found; run scripts/setup.sh to fetch it, or pass --model PATH",
                path.display()
            ),
        });
    }
    let model = LlamaModel::load_from_file(backend()?, path, &LlamaModelParams::default())
        .map_err(|e| LlmError::Local {
            message: format!("cannot load {}: {e}", path.display()),
        })?;
    let model = Arc::new(model);
    cache.insert(path.to_path_buf(), model.clone());
    Ok(model)
}

/// The in-process GGUF provider.
#[derive(Clone, Debug)]
pub struct LocalProvider {
    settings: Arc<LocalSettings>,
}

impl LocalProvider {
    pub fn new(settings: LocalSettings) -> Self {
        Self {
            settings: Arc::new(settings),
        }
    }

    pub fn model_path(&self) -> &Path {
        &self.settings.model_path
    }
}

impl Provider for LocalProvider {
    fn name(&self) -> &str {
        "local"
    }

    fn stream(&self, req: ChatRequest, ctx: CallCtx) -> EventStream {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let settings = self.settings.clone();
        let spawned = std::thread::Builder::new()
            .name("glassbox-local".into())
            .spawn({
                let tx = tx.clone();
                move || {
                    let mut out = Emitter {
                        tx,
                        raw: ctx.raw.clone(),
                        started: Instant::now(),
                    };
                    if let Err(e) = generate(&settings, &req, &ctx, &mut out) {
                        out.event(StreamEvent::Error { error: e });
                    }
                }
            });
        if let Err(e) = spawned {
            let _ = tx.unbounded_send(StreamEvent::Error {
                error: LlmError::Local {
                    message: format!("cannot start generation thread: {e}"),
                },
            });
        }
        rx.boxed()
    }
}

/// Sends events to the consumer and raw records to the recorder.
struct Emitter {
    tx: futures::channel::mpsc::UnboundedSender<StreamEvent>,
    raw: Option<super::RawSink>,
    started: Instant,
}

impl Emitter {
    fn event(&mut self, ev: StreamEvent) {
        let _ = self.tx.unbounded_send(ev);
    }

    fn record(&mut self, rec: &TokenRecord) {
        if let Some(raw) = &self.raw
            && let Ok(mut line) = serde_json::to_vec(rec)
        {
            line.push(b'\n');
            let _ = raw.send(RawChunk {
                offset: self.started.elapsed(),
                bytes: Bytes::from(line),
            });
        }
    }

    /// Emits a record as both raw bytes and the event it stands for.
    fn emit(&mut self, rec: TokenRecord) {
        self.record(&rec);
        if let Some(ev) = rec.to_event() {
            self.event(ev);
        }
    }
}

/// Turns token bytes into text without splitting a UTF-8 sequence across pieces.
#[derive(Default)]
struct Utf8Joiner {
    pending: Vec<u8>,
}

impl Utf8Joiner {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        match std::str::from_utf8(&self.pending) {
            Ok(s) => {
                let out = s.to_string();
                self.pending.clear();
                out
            }
            Err(e) if e.error_len().is_none() => {
                // An incomplete sequence at the end: keep it for the next piece.
                let valid = e.valid_up_to();
                let out = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
                self.pending.drain(..valid);
                out
            }
            Err(_) => {
                let out = String::from_utf8_lossy(&self.pending).into_owned();
                self.pending.clear();
                out
            }
        }
    }
}

fn local_err(what: &str, e: impl std::fmt::Display) -> LlmError {
    LlmError::Local {
        message: format!("{what}: {e}"),
    }
}

/// Result of one generation pass.
struct Pass {
    text: String,
    prompt_tokens: u64,
    output_tokens: u64,
    stop: StopReason,
}

fn generate(
    settings: &LocalSettings,
    req: &ChatRequest,
    ctx: &CallCtx,
    out: &mut Emitter,
) -> Result<(), LlmError> {
    let model = load_model(&settings.model_path)?;
    let template = model
        .chat_template(None)
        .map_err(|e| local_err("the model has no chat template", e))?;
    let native_thinking = template
        .to_str()
        .map(|t| t.contains("<think>"))
        .unwrap_or(false);
    let want_thinking = !matches!(req.thinking, ThinkingMode::Off);

    let mut history: Vec<(String, String)> = Vec::new();
    if let Some(system) = &req.system {
        history.push(("system".into(), system.clone()));
    }
    for m in &req.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        history.push((role.into(), m.plain_text().into_owned()));
    }

    let mut usage = Usage::default();
    let mut thinking_text = String::new();
    if want_thinking && settings.thinking_pass && !native_thinking {
        let budget = match req.thinking {
            ThinkingMode::Budget { tokens } => tokens.min(req.max_tokens),
            _ => req.max_tokens,
        };
        let mut msgs = history.clone();
        msgs.insert(0, ("system".into(), settings.thinking_prompt.clone()));
        let prompt = render(&model, &template, &msgs)?;
        let pass = run_pass(&model, settings, req, ctx, &prompt, budget, "t", out)?;
        usage.input_tokens += pass.prompt_tokens;
        usage.output_tokens += pass.output_tokens;
        usage.thinking_tokens = Some(pass.output_tokens);
        thinking_text = pass.text;
        if pass.stop == StopReason::Cancelled {
            finish(out, usage, StopReason::Cancelled);
            return Ok(());
        }
    }

    let mut msgs = history;
    if !thinking_text.trim().is_empty()
        && let Some(last) = msgs.iter_mut().rev().find(|(r, _)| r == "user")
    {
        last.1 = format!(
            "{}\n\n{}\n{}",
            last.1,
            settings.answer_prompt.trim(),
            thinking_text.trim()
        );
    }
    let prompt = render(&model, &template, &msgs)?;
    let pass = run_pass(
        &model,
        settings,
        req,
        ctx,
        &prompt,
        req.max_tokens,
        "a",
        out,
    )?;
    usage.input_tokens += pass.prompt_tokens;
    usage.output_tokens += pass.output_tokens;
    finish(out, usage, pass.stop);
    Ok(())
}

fn finish(out: &mut Emitter, usage: Usage, stop: StopReason) {
    out.emit(TokenRecord {
        p: "u".into(),
        id: None,
        s: String::new(),
        usage: Some(usage),
        stop: None,
    });
    out.emit(TokenRecord {
        p: "s".into(),
        id: None,
        s: String::new(),
        usage: None,
        stop: Some(stop),
    });
}

fn render(
    model: &LlamaModel,
    template: &llama_cpp_2::model::LlamaChatTemplate,
    msgs: &[(String, String)],
) -> Result<String, LlmError> {
    let chat = msgs
        .iter()
        .map(|(r, c)| LlamaChatMessage::new(r.clone(), c.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| local_err("message contains a NUL byte", e))?;
    model
        .apply_chat_template(template, &chat, true)
        .map_err(|e| local_err("chat template failed", e))
}

#[allow(clippy::too_many_arguments)]
fn run_pass(
    model: &LlamaModel,
    settings: &LocalSettings,
    req: &ChatRequest,
    ctx: &CallCtx,
    prompt: &str,
    max_tokens: u32,
    pass: &str,
    out: &mut Emitter,
) -> Result<Pass, LlmError> {
    let threads = if settings.threads == 0 {
        std::thread::available_parallelism()
            .map(|n| n.get() as i32)
            .unwrap_or(2)
    } else {
        settings.threads as i32
    };
    let n_ctx = settings.context_size.max(256);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(512)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut lctx = model
        .new_context(backend()?, params)
        .map_err(|e| local_err("cannot create a context", e))?;
    let vocab = model.vocab();
    let tokens = vocab.tokenize(prompt.as_bytes(), vocab.should_add_bos(), true);
    let n_prompt = tokens.len();
    if n_prompt + 8 >= n_ctx as usize {
        return Err(LlmError::Local {
            message: format!(
                "prompt of {n_prompt} tokens does not fit the context of {n_ctx} tokens (raise providers.local.context_size)"
            ),
        });
    }
    let room = (n_ctx as usize).saturating_sub(n_prompt + 1);
    let max_new = (max_tokens as usize).min(room);

    let mut batch = LlamaBatch::new(512, 1);
    for (chunk_start, chunk) in tokens.chunks(512).enumerate().map(|(i, c)| (i * 512, c)) {
        batch.clear();
        for (j, t) in chunk.iter().enumerate() {
            let pos = (chunk_start + j) as i32;
            let last = chunk_start + j == n_prompt - 1;
            batch
                .add(*t, pos, &[0], last)
                .map_err(|e| local_err("batch", e))?;
        }
        lctx.decode(&mut batch)
            .map_err(|e| local_err("decode failed", e))?;
    }

    let mut sampler = match req.temperature {
        Some(t) if t > 0.0 => LlamaSampler::chain_simple([
            LlamaSampler::top_p(req.top_p.unwrap_or(0.95), 1),
            LlamaSampler::temp(t),
            LlamaSampler::dist(req.seed.unwrap_or(0) as u32),
        ]),
        _ => LlamaSampler::greedy(),
    };

    let mut text = String::new();
    let mut joiner = Utf8Joiner::default();
    let mut n_cur = n_prompt as i32;
    let mut generated = 0u64;
    let mut stop = StopReason::MaxTokens;
    while (generated as usize) < max_new {
        if ctx.cancel.is_cancelled() {
            stop = StopReason::Cancelled;
            break;
        }
        let token = sampler.sample(&lctx, batch.n_tokens() - 1);
        if vocab.is_eog(token) {
            stop = StopReason::EndTurn;
            break;
        }
        generated += 1;
        let piece = joiner.push(&vocab.token_to_piece(token, false, None));
        if !piece.is_empty() {
            text.push_str(&piece);
        }
        out.emit(TokenRecord {
            p: pass.into(),
            id: Some(token.0),
            s: piece,
            usage: None,
            stop: None,
        });
        batch.clear();
        batch
            .add(token, n_cur, &[0], true)
            .map_err(|e| local_err("batch", e))?;
        n_cur += 1;
        lctx.decode(&mut batch)
            .map_err(|e| local_err("decode failed", e))?;
    }
    Ok(Pass {
        text,
        prompt_tokens: n_prompt as u64,
        output_tokens: generated,
        stop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_joiner_holds_split_sequences() {
        let mut j = Utf8Joiner::default();
        let bytes = "é😀".as_bytes();
        assert_eq!(j.push(&bytes[..1]), "");
        assert_eq!(j.push(&bytes[1..3]), "é");
        assert_eq!(j.push(&bytes[3..]), "😀");
        assert_eq!(j.push(b"ok"), "ok");
    }
}
