//! Chooses and builds the provider from the merged config and the keys at hand, plans a
//! turn's thinking settings for that provider, and sets up the engines that take their
//! model-call settings from the config (the orchestrator, ThinkFork).

use std::sync::Arc;

use super::{ApiKeys, Config, Ctx, ProviderKind, ThinkingStyle};
use crate::engines::fork::ForkSettings;
use crate::engines::llm::http::{self, ApiKey, HttpSettings};
use crate::engines::llm::{
    Effort, LlmError, Provider, ThinkingMode, TurnPlan, anthropic, ollama, openai,
};
use crate::engines::orchestrator::Orchestrator;
use crate::store::Store;

/// The provider chosen for this run.
pub struct Built {
    pub provider: Arc<dyn Provider>,
    pub kind: ProviderKind,
    /// Model name (for local: the GGUF file name).
    pub model: String,
}

/// The concrete provider `auto` resolves to, given the keys present.
pub fn resolve_kind(ctx: &Ctx) -> ProviderKind {
    ctx.loaded
        .config
        .resolve_provider(ApiKeys::from_env(&ctx.env))
}

/// Whether a key is configured (env or key_command); `None` where no key is needed.
pub fn key_configured(ctx: &Ctx, kind: ProviderKind) -> Option<bool> {
    let keys = ApiKeys::from_env(&ctx.env);
    let cfg = &ctx.loaded.config;
    match kind {
        ProviderKind::Anthropic => {
            Some(keys.anthropic || !cfg.providers.anthropic.key_command.trim().is_empty())
        }
        ProviderKind::OpenAi => {
            Some(keys.openai || !cfg.providers.openai.key_command.trim().is_empty())
        }
        _ => None,
    }
}

/// The model a provider would use.
pub fn model_name(ctx: &Ctx, kind: ProviderKind) -> String {
    let cfg = &ctx.loaded.config;
    match kind {
        ProviderKind::Anthropic => cfg.providers.anthropic.model.clone(),
        ProviderKind::OpenAi => cfg.providers.openai.model.clone(),
        ProviderKind::Ollama => cfg.providers.ollama.model.clone(),
        ProviderKind::Local | ProviderKind::Auto => cfg
            .providers
            .local
            .resolved_model_path(&ctx.paths.models_dir)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// A provider's base URL (none for local).
pub fn base_url(cfg: &Config, kind: ProviderKind) -> Option<String> {
    match kind {
        ProviderKind::Anthropic => Some(cfg.providers.anthropic.base_url.clone()),
        ProviderKind::OpenAi => Some(cfg.providers.openai.base_url.clone()),
        ProviderKind::Ollama => Some(cfg.providers.ollama.base_url.clone()),
        _ => None,
    }
}

/// Runs a `key_command` and returns its trimmed stdout.
fn run_key_command(cmd: &str) -> Result<String, LlmError> {
    let out = std::process::Command::new("sh")
        .args(["-c", cmd])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| LlmError::Config {
            message: format!("cannot run key_command: {e}"),
        })?;
    if !out.status.success() {
        return Err(LlmError::Config {
            message: format!("key_command exited with {}", out.status),
        });
    }
    let key = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if key.is_empty() {
        return Err(LlmError::Config {
            message: "key_command printed nothing".into(),
        });
    }
    Ok(key)
}

fn keys_for(env_prefix: &str, key_command: &str, provider: &str) -> Result<Vec<ApiKey>, LlmError> {
    let mut keys = http::keys_from_env(env_prefix);
    if keys.is_empty() && !key_command.trim().is_empty() {
        keys.push(ApiKey::new(run_key_command(key_command)?));
    }
    if keys.is_empty() {
        return Err(LlmError::Config {
            message: format!(
                "no API key for {provider}: set {env_prefix} (or {env_prefix}_1, _2 … to rotate) or key_command in [providers.{provider}]"
            ),
        });
    }
    Ok(keys)
}

fn http_settings(cfg: &Config, base_url: &str, model: &str, keys: Vec<ApiKey>) -> HttpSettings {
    let n = &cfg.network;
    HttpSettings {
        base_url: base_url.trim_end_matches('/').to_string(),
        model: Some(model.to_string()),
        keys,
        connect_timeout: n.connect_timeout(),
        stall_timeout: n.stall_timeout(),
        request_timeout: n.request_timeout(),
        max_retries: n.max_retries,
        backoff_base: n.backoff_base(),
        backoff_max: n.backoff_max(),
        key_cooldown: n.key_cooldown(),
        ..Default::default()
    }
}

/// Builds the provider the config selects.
pub fn build(ctx: &Ctx) -> Result<Built, LlmError> {
    let cfg = &ctx.loaded.config;
    let kind = resolve_kind(ctx);
    let model = model_name(ctx, kind);
    let provider: Arc<dyn Provider> = match kind {
        ProviderKind::Anthropic => {
            let p = &cfg.providers.anthropic;
            let keys = keys_for("ANTHROPIC_API_KEY", &p.key_command, "anthropic")?;
            Arc::new(anthropic::AnthropicProvider::with_compaction(
                http_settings(cfg, &p.base_url, &p.model, keys),
                p.compaction,
            )?)
        }
        ProviderKind::OpenAi => {
            let p = &cfg.providers.openai;
            let keys = keys_for("OPENAI_API_KEY", &p.key_command, "openai")?;
            Arc::new(openai::OpenAiProvider::new(http_settings(
                cfg,
                &p.base_url,
                &p.model,
                keys,
            ))?)
        }
        ProviderKind::Ollama => {
            let p = &cfg.providers.ollama;
            Arc::new(ollama::OllamaProvider::new(http_settings(
                cfg,
                &p.base_url,
                &p.model,
                Vec::new(),
            ))?)
        }
        ProviderKind::Local | ProviderKind::Auto => build_local(ctx)?,
    };
    Ok(Built {
        provider,
        kind,
        model,
    })
}

#[cfg(feature = "local")]
fn build_local(ctx: &Ctx) -> Result<Arc<dyn Provider>, LlmError> {
    let cfg = &ctx.loaded.config.providers.local;
    let prompts = ctx.prompts();
    Ok(Arc::new(crate::engines::llm::local::LocalProvider::new(
        crate::engines::llm::local::LocalSettings {
            model_path: cfg.resolved_model_path(&ctx.paths.models_dir),
            context_size: cfg.context_size,
            threads: cfg.threads,
            thinking_pass: cfg.thinking_pass,
            thinking_prompt: prompts.get("local/thinking").to_string(),
            answer_prompt: prompts.get("local/answer").to_string(),
            decoding: cfg.decoding.clone(),
        },
    )))
}

#[cfg(not(feature = "local"))]
fn build_local(_ctx: &Ctx) -> Result<Arc<dyn Provider>, LlmError> {
    Err(LlmError::Config {
        message: "this glassbox was built without the `local` feature; set an API key or choose --provider anthropic|openai|ollama".into(),
    })
}

/// Maps an effort (or none, for no thinking) onto the provider's thinking settings.
/// Anthropic counts thinking inside `max_tokens`, so its budget is added on top.
pub fn plan_turn(
    cfg: &Config,
    kind: ProviderKind,
    effort: Option<Effort>,
    max_tokens: Option<u32>,
) -> TurnPlan {
    let answer_tokens = max_tokens.unwrap_or(cfg.generation.max_tokens);
    let Some(effort) = effort else {
        return TurnPlan {
            thinking: ThinkingMode::Off,
            effort: None,
            max_tokens: answer_tokens,
        };
    };
    let budget = cfg.effort_budget(effort);
    match kind {
        ProviderKind::Anthropic if cfg.providers.anthropic.thinking == ThinkingStyle::Adaptive => {
            TurnPlan {
                thinking: ThinkingMode::Adaptive,
                effort: Some(effort),
                max_tokens: answer_tokens.saturating_add(budget),
            }
        }
        ProviderKind::Anthropic => TurnPlan {
            thinking: ThinkingMode::Budget { tokens: budget },
            effort: Some(effort),
            max_tokens: answer_tokens.saturating_add(budget),
        },
        _ => TurnPlan {
            thinking: ThinkingMode::Budget { tokens: budget },
            effort: Some(effort),
            max_tokens: answer_tokens,
        },
    }
}

/// The context window assumed for compaction: `[budget] context_tokens`, else the local
/// model's context size, else 200,000.
pub fn context_tokens(cfg: &Config, kind: ProviderKind) -> u32 {
    match (cfg.budget.context_tokens, kind) {
        (0, ProviderKind::Local | ProviderKind::Auto) => cfg.providers.local.context_size,
        (0, _) => crate::engines::orchestrator::DEFAULT_CONTEXT_TOKENS,
        (n, _) => n,
    }
}

/// An orchestrator for the built provider with the config's budget, prompts, loop
/// detection (`[loop] action_local` for the embedded model, `action_remote` for the others)
/// and memory of the working directory's default scope as its knowledge.
pub fn orchestrator(ctx: &Ctx, built: &Built, store: Store) -> Orchestrator {
    let cfg = &ctx.loaded.config;
    let mut o = Orchestrator::new(store, built.provider.clone(), built.model.clone());
    o.budget = cfg.budget.clone();
    o.context_tokens = context_tokens(cfg, built.kind);
    o.compaction_prompt = ctx.prompts().get("orchestrator/compaction").to_string();
    o.loops = cfg.r#loop.clone();
    let local = matches!(built.kind, ProviderKind::Local | ProviderKind::Auto);
    o.loop_action = cfg.r#loop.action(local);
    match ctx.memory(o.store.clone(), None, None) {
        Ok(m) => o.knowledge = Some(std::sync::Arc::new(m)),
        Err(e) => tracing::warn!("memory is off for this run: {e}"),
    }
    o
}

impl ForkSettings {
    /// Settings for `model` of provider `kind` from the config: `[fork]` effort (or
    /// `effort` when given), debate rounds and consensus threshold, the `[generation]`
    /// temperature and seed. Tools carry the structured output where the provider has
    /// them. The embedded model answers directly: a thinking pass first is slow there and
    /// does not help a small model write JSON.
    pub fn from_config(
        cfg: &Config,
        kind: ProviderKind,
        model: impl Into<String>,
        effort: Option<Effort>,
        max_tokens: Option<u32>,
    ) -> Self {
        let local = matches!(kind, ProviderKind::Local | ProviderKind::Auto);
        let at = |e: Effort| (!local).then_some(e);
        let mut s = Self::new(model);
        s.use_tools = matches!(kind, ProviderKind::Anthropic | ProviderKind::OpenAi);
        s.plan = plan_turn(cfg, kind, at(effort.unwrap_or(cfg.fork.effort)), max_tokens);
        s.max_plan = plan_turn(cfg, kind, at(Effort::Max), max_tokens);
        s.correction_plan = plan_turn(cfg, kind, at(Effort::Medium), max_tokens);
        s.temperature = Some(cfg.generation.temperature as f32);
        s.seed = Some(cfg.generation.seed);
        s.debate_rounds = cfg.fork.debate_rounds;
        s.consensus_threshold = cfg.fork.consensus_threshold;
        s.memory_feedback = cfg.memory.learn.clone();
        s.diff = cfg.diff.clone();
        s
    }
}

/// A DeepEx pipeline engine for a built provider: `[pipeline]` and `[search]` from the
/// config, the `pipeline/*` prompts, sources from the store and `memory`. The embedded model
/// thinks only in free-text layers (within its thinking cap); Anthropic counts thinking
/// inside the token cap.
pub fn pipeline_engine(
    cfg: &Config,
    prompts: &crate::engines::prompts::Prompts,
    kind: ProviderKind,
    provider: Arc<dyn crate::engines::llm::Provider>,
    model: String,
    store: Store,
    memory: Option<crate::engines::memory::Memory>,
) -> crate::engines::pipeline::PipelineEngine {
    use crate::engines::pipeline::{Grounder, LayerThinking, PipelineEngine, PipelinePrompts};
    let local = matches!(kind, ProviderKind::Local | ProviderKind::Auto);
    PipelineEngine {
        grounder: Grounder::new(store.clone(), memory.map(Arc::new), cfg.search.clone()),
        store,
        provider,
        model,
        params: cfg.pipeline.clone(),
        prompts: PipelinePrompts::from(prompts),
        thinking: LayerThinking {
            inside_max_tokens: kind == ProviderKind::Anthropic,
            for_structured: !local,
            for_text: true,
        },
        seed: Some(cfg.generation.seed),
    }
}

/// A DeepTrust research engine for a built provider: `[research]` from the config, the
/// `research/*` prompts, and the tools over the store, the knowledge base, `memory` and
/// (when allowed) SearXNG and the web.
pub fn research_engine(
    cfg: &Config,
    prompts: &crate::engines::prompts::Prompts,
    provider: Arc<dyn crate::engines::llm::Provider>,
    model: String,
    store: Store,
    knowledge: Option<crate::engines::knowledge::Knowledge>,
    memory: Option<crate::engines::memory::Memory>,
) -> crate::engines::research::ResearchEngine {
    use crate::engines::research::{ResearchEngine, ResearchPrompts, Tools};
    let tools = Tools::new(
        store.clone(),
        knowledge.map(Arc::new),
        cfg.knowledge.top_k,
        memory.map(Arc::new),
        cfg.search.clone(),
        &cfg.research,
    );
    ResearchEngine {
        store,
        provider,
        model,
        params: cfg.research.clone(),
        prompts: ResearchPrompts::from(prompts),
        tools,
        seed: Some(cfg.generation.seed),
    }
}

/// The model side of a diff or merge: the built provider and model, one `[diff]` call's
/// settings, the `[generation]` seed and the named prompt.
pub fn diff_model(
    cfg: &Config,
    prompts: &crate::engines::prompts::Prompts,
    built: &Built,
    call: crate::engines::diff::CallParams,
    prompt: &str,
) -> crate::engines::diff::Judge {
    let mut settings = crate::engines::got::CallSettings::new(built.model.clone(), call.max_tokens);
    settings.temperature = Some(call.temperature);
    settings.seed = Some(cfg.generation.seed);
    crate::engines::diff::Judge {
        provider: built.provider.clone(),
        call: settings,
        prompt: prompts.get(prompt).to_string(),
    }
}

/// A diff engine: `[diff]`, the judge model when one is given (else labels come from
/// similarity alone) and the embedder when it loads.
pub fn diff_engine(
    cfg: &Config,
    prompts: &crate::engines::prompts::Prompts,
    built: Option<&Built>,
    store: Store,
    embedder: Option<Arc<dyn crate::engines::memory::embed::Embedder>>,
) -> crate::engines::diff::DiffEngine {
    crate::engines::diff::DiffEngine {
        store,
        judge: built.map(|b| diff_model(cfg, prompts, b, cfg.diff.judge, "diff/judge")),
        embedder,
        params: cfg.diff.clone(),
    }
}

/// The merge engine of `glassbox merge` (and, through the fork engine, `steer --merge`).
pub fn merger(
    cfg: &Config,
    prompts: &crate::engines::prompts::Prompts,
    built: &Built,
    store: Store,
) -> crate::engines::diff::Merger {
    crate::engines::diff::Merger {
        store,
        model: diff_model(cfg, prompts, built, cfg.diff.merge, "diff/merge"),
        step_chars: cfg.diff.step_chars,
        max_claims: cfg.diff.max_claims,
    }
}
