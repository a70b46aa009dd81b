//! The embedded local model: a GGUF file run in-process through llama.cpp.
//!
//! Generation runs on its own thread and streams pieces through a channel. Models without
//! native thinking get an explicit first pass that reasons about the question (streamed as
//! thinking), then the answer is generated conditioned on that reasoning.
//!
//! Tokens are picked by the sampler chain of [`LocalDecoding`] (`Picker`): repetition
//! penalty and DRY, then greedy or seeded sampling. A request with a [`ChatRequest::schema`] has its answer
//! pass sampled under the GBNF grammar llama.cpp compiles from that JSON Schema: the model
//! can only write text the schema accepts, so the answer always parses, and the pass has
//! its own token cap (`structured_tokens`).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::decoding::{DRY_BREAKERS, LocalDecoding};
use super::replay::TokenRecord;
use super::{
    CallCtx, ChatRequest, EventStream, LlmError, Provider, RawChunk, Role, StopReason, StreamEvent,
    ThinkingMode, Usage,
};
use bytes::Bytes;
use futures::StreamExt;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

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
    /// Sampling and per-role token caps.
    pub decoding: LocalDecoding,
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
                "model file {} not found; run {} to fetch it, or pass --model PATH",
                path.display(),
                crate::models::setup_command_for_path(path)
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
    let template = chat_template(&model)?;
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
        }
        .min(settings.decoding.thinking_tokens);
        let mut msgs = history.clone();
        msgs.insert(0, ("system".into(), settings.thinking_prompt.clone()));
        let prompt = render(&model, &template, &msgs)?;
        let pass = run_pass(&model, settings, req, ctx, &prompt, budget, None, "t", out)?;
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
    let grammar = req.schema.as_ref().map(grammar_of).transpose()?;
    let cap = if grammar.is_some() {
        settings.decoding.structured_tokens
    } else {
        req.max_tokens
    };
    let pass = run_pass(
        &model,
        settings,
        req,
        ctx,
        &prompt,
        cap,
        grammar.as_deref(),
        "a",
        out,
    )?;
    usage.input_tokens += pass.prompt_tokens;
    usage.output_tokens += pass.output_tokens;
    if let (Some(schema), StopReason::MaxTokens) = (&req.schema, &pass.stop) {
        // The grammar was not finished: what was written is kept by whoever read the deltas.
        finish_usage(out, usage);
        return Err(LlmError::Local {
            message: format!(
                "the structured answer ({}) was cut at {} tokens before it was complete; raise providers.local.decoding.structured_tokens",
                schema.name, pass.output_tokens
            ),
        });
    }
    finish(out, usage, pass.stop);
    Ok(())
}

/// The GBNF grammar of an answer schema.
fn grammar_of(schema: &super::ToolSpec) -> Result<String, LlmError> {
    llama_cpp_2::json_schema_to_grammar(&schema.input_schema.to_string()).map_err(|e| {
        LlmError::Local {
            message: format!(
                "cannot compile the grammar of the structured answer {}: {e}",
                schema.name
            ),
        }
    })
}

/// Picks each token: the sampler chain of [`LocalDecoding`] (repetition penalty and DRY,
/// then greedy at temperature 0, else top-p, min-p, temperature and a seeded draw), under the
/// answer's grammar when there is one.
///
/// Checking the grammar against the whole vocabulary at every step is what makes
/// constrained decoding slow, so (as llama.cpp's own sampler does) the token is picked
/// without it first and only checked; the grammar is applied to every candidate only when
/// that token breaks it.
/// How many of the likeliest tokens are checked against the grammar before the whole
/// vocabulary is.
const GRAMMAR_SHORTLIST: usize = 64;

struct Picker {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
}

impl Picker {
    fn new(
        model: &LlamaModel,
        decoding: &LocalDecoding,
        req: &ChatRequest,
        grammar: Option<&str>,
    ) -> Result<Self, LlmError> {
        let grammar = grammar
            .map(|g| {
                LlamaSampler::grammar(model, g, "root")
                    .map_err(|e| local_err("the structured answer's grammar does not load", e))
            })
            .transpose()?;
        let mut chain = vec![LlamaSampler::penalties(
            model.n_vocab(),
            decoding.repeat_last_n,
            decoding.repeat_penalty as f32,
            0.0,
            0.0,
        )];
        if decoding.dry_multiplier > 0.0 {
            chain.push(LlamaSampler::dry(
                model,
                decoding.dry_multiplier as f32,
                decoding.dry_base as f32,
                decoding.dry_allowed_length,
                decoding.dry_last_n,
                DRY_BREAKERS,
            ));
        }
        let temperature = req.temperature.unwrap_or(decoding.temperature as f32);
        if temperature > 0.0 {
            let seed = req.seed.map_or(decoding.seed, |s| s as u32);
            chain.extend([
                LlamaSampler::top_p(req.top_p.unwrap_or(decoding.top_p as f32), 1),
                LlamaSampler::min_p(decoding.min_p as f32, 1),
                LlamaSampler::temp(temperature),
                LlamaSampler::dist(seed),
            ]);
        } else {
            chain.push(LlamaSampler::greedy());
        }
        Ok(Self {
            chain: LlamaSampler::chain_simple(chain),
            grammar,
        })
    }

    /// The next token from the `idx`-th logits of the last decode; the samplers' state
    /// (recent tokens, grammar position) moves past it.
    fn pick(&mut self, lctx: &LlamaContext<'_>, idx: i32) -> LlamaToken {
        let Some(grammar) = &mut self.grammar else {
            return self.chain.sample(lctx, idx);
        };
        let mut all = lctx.token_data_array_ith(idx);
        all.apply_sampler(&mut self.chain);
        let first = all.selected_token();
        let allowed = first.is_some_and(|t| {
            let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(t, 1.0, 0.0)], false);
            one.apply_sampler(grammar);
            one.data.first().is_some_and(|d| d.logit().is_finite())
        });
        let token = match first {
            Some(t) if allowed => t,
            _ => {
                // Most often a token the grammar allows is among the likeliest few: try
                // those before checking the whole vocabulary.
                let mut all = lctx.token_data_array_ith(idx);
                let n = GRAMMAR_SHORTLIST.min(all.data.len());
                if n < all.data.len() {
                    all.data
                        .select_nth_unstable_by(n, |a, b| b.logit().total_cmp(&a.logit()));
                }
                let mut few = LlamaTokenDataArray::new(all.data[..n].to_vec(), false);
                few.apply_sampler(grammar);
                if few.data.iter().any(|d| d.logit().is_finite()) {
                    few.apply_sampler(&mut self.chain);
                    few.selected_token().unwrap_or(LlamaToken(-1))
                } else {
                    all.apply_sampler(grammar);
                    all.apply_sampler(&mut self.chain);
                    // A grammar that allows nothing leaves no choice: end the pass.
                    all.selected_token().unwrap_or(LlamaToken(-1))
                }
            }
        };
        if token.0 >= 0 {
            grammar.accept(token);
            self.chain.accept(token);
        }
        token
    }
}

/// The model's own chat template, else (a pretrained model ships none) the one llama.cpp
/// knows for the model's architecture, such as `gemma`.
fn chat_template(model: &LlamaModel) -> Result<llama_cpp_2::model::LlamaChatTemplate, LlmError> {
    match model.chat_template(None) {
        Ok(t) => Ok(t),
        Err(e) => {
            let arch = model
                .meta_val_str("general.architecture")
                .unwrap_or_default();
            // llama.cpp's built-in templates by name; Gemma's pretrained files need it.
            let known = ["gemma"]
                .into_iter()
                .find(|name| arch.starts_with(name))
                .ok_or_else(|| local_err("the model has no chat template", e))?;
            llama_cpp_2::model::LlamaChatTemplate::new(known)
                .map_err(|e| local_err("chat template", e))
        }
    }
}

fn finish(out: &mut Emitter, usage: Usage, stop: StopReason) {
    finish_usage(out, usage);
    out.emit(TokenRecord {
        p: "s".into(),
        id: None,
        s: String::new(),
        usage: None,
        stop: Some(stop),
    });
}

fn finish_usage(out: &mut Emitter, usage: Usage) {
    out.emit(TokenRecord {
        p: "u".into(),
        id: None,
        s: String::new(),
        usage: Some(usage),
        stop: None,
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
    grammar: Option<&str>,
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

    let mut picker = Picker::new(model, &settings.decoding, req, grammar)?;

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
        let token = picker.pick(&lctx, batch.n_tokens() - 1);
        if token.0 < 0 || vocab.is_eog(token) {
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

    /// Every structured answer an engine asks for compiles to a grammar llama.cpp loads.
    #[test]
    fn every_engine_answer_schema_compiles_to_a_grammar() {
        use crate::engines::structured::Artifact;
        use crate::engines::{fork, got, metacog, verify};
        use crate::store::NodeId;
        let schemas = [
            fork::Shape::Conclusion.tool(),
            fork::Shape::Comparison.tool(),
            fork::Shape::Debate.tool(),
            got::proposed_schema(3),
            got::score_schema(),
            got::merged_schema(),
            verify::StepJudgement::schema(),
            metacog::insights_schema(&[NodeId::new(), NodeId::new()]),
            crate::engines::memory::learn::extract::extraction_schema(
                &Default::default(),
                &["m1".into(), "m2".into()],
            ),
            crate::engines::memory::learn::extract::extraction_schema(&Default::default(), &[]),
            crate::engines::memory::learn::reconcile::NliAnswer::schema(),
            crate::engines::diff::PairAnswer::schema(),
            crate::engines::diff::merge_schema(&["A1".into(), "B1".into(), "B2".into()]),
        ];
        let pipeline = crate::engines::pipeline::artifacts::all_schemas();
        let research = crate::engines::research::all_schemas();
        for schema in schemas.iter().chain(&pipeline).chain(&research) {
            let grammar = grammar_of(schema).unwrap_or_else(|e| panic!("{}: {e}", schema.name));
            assert!(grammar.contains("root ::="), "{}: {grammar}", schema.name);
        }
        // The insights grammar only lets the model cite the nodes it was shown.
        let id = NodeId::new();
        let grammar = grammar_of(&metacog::insights_schema(&[id])).unwrap();
        assert!(grammar.contains(&id.to_string()));
        // The merge grammar only lets the model name the steps it was shown, or "new".
        let grammar = grammar_of(&crate::engines::diff::merge_schema(&[
            "A7".into(),
            "B3".into(),
        ]))
        .unwrap();
        assert!(grammar.contains("A7") && grammar.contains("new") && !grammar.contains("A8"));
    }

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
