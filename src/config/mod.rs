//! Configuration shared by the TUI and the command line: the typed schema of
//! `configs/default.toml`, loading it in layers with the origin of every value, the checks
//! the types cannot express, building the selected provider, and the [`Ctx`] both front
//! ends run with.
//!
//! Layers, lowest first: embedded defaults < config file < environment < profile < flags.
//! The engine sections deserialize straight into the engines' own parameter structs, so
//! this module depends on the engines and never the reverse.

mod check;
mod ctx;
mod load;
mod loaded;
pub mod providers;
mod read;
pub mod store_target;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engines::diff::DiffParams;
use crate::engines::fork::ForkParams;
use crate::engines::got::GotTuning;
use crate::engines::knowledge::KnowledgeParams;
use crate::engines::llm::Effort;
use crate::engines::llm::decoding::LocalDecoding;
use crate::engines::llm::loops::LoopParams;
use crate::engines::mcp::McpParams;
use crate::engines::memory::{EmbeddingParams, MemoryParams};
use crate::engines::metacog::MetacogParams;
use crate::engines::orchestrator::{BudgetParams, RoutingParams};
use crate::engines::pipeline::{PipelineParams, SearchParams};
use crate::engines::research::ResearchParams;
use crate::engines::verify::VerifyParams;

pub use ctx::Ctx;
pub use load::{ConfigSources, FlagOverride, load};
pub use loaded::{ConfigError, LoadedConfig, Origin};
pub use store_target::StoreTarget;

/// The built-in defaults, embedded from `configs/default.toml`.
pub const DEFAULT_TOML: &str = include_str!("../../configs/default.toml");

/// Name of the user config file inside the config dir.
pub const CONFIG_FILE_NAME: &str = "config.toml";

/// Prefix of glassbox's own environment variables.
pub const ENV_PREFIX: &str = "GLASSBOX_";

/// `GLASSBOX_*` variables that hold paths; they are resolved by [`crate::paths`], and the
/// config loader skips them.
pub const PATH_ENV_VARS: &[&str] = &[
    "GLASSBOX_DATA_DIR",
    "GLASSBOX_CONFIG_DIR",
    "GLASSBOX_MODELS_DIR",
];

/// Short environment variables and the key each one sets (`model` is resolved against the
/// selected provider).
pub const SHORT_ENV_VARS: &[(&str, &str)] = &[
    ("GLASSBOX_PROVIDER", "general.provider"),
    ("GLASSBOX_MODEL", MODEL_KEY),
    ("GLASSBOX_EFFORT", "effort.default"),
    ("GLASSBOX_THEME", "general.theme"),
    ("GLASSBOX_PROFILE", "general.profile"),
    ("GLASSBOX_STORE_URL", STORE_URL_KEY),
];

/// The key of the store's URL (`--store`, `GLASSBOX_STORE_URL`, `GLASSBOX_STORE__URL`).
pub const STORE_URL_KEY: &str = "store.url";

/// Well-known environment variables of other tools that set a base URL.
pub const BASE_URL_ENV_VARS: &[(&str, &str)] = &[
    ("ANTHROPIC_BASE_URL", "providers.anthropic.base_url"),
    ("OPENAI_BASE_URL", "providers.openai.base_url"),
    ("OLLAMA_HOST", "providers.ollama.base_url"),
];

/// Environment variables holding API keys. Only their presence is ever recorded here.
pub const API_KEY_ENV_VARS: &[(&str, ProviderKind)] = &[
    ("ANTHROPIC_API_KEY", ProviderKind::Anthropic),
    ("OPENAI_API_KEY", ProviderKind::OpenAi),
];

/// Pseudo-key for a flag or env override that sets the model of the selected provider
/// (for `local`, the GGUF path).
pub const MODEL_KEY: &str = "model";

/// Pseudo-key for a flag override that sets the base URL of the selected provider.
pub const BASE_URL_KEY: &str = "base_url";

/// The keys a profile may set, all optional.
pub const PROFILE_KEYS: &[&str] = &["provider", "model", "base_url", "effort"];

/// Which model backend answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Anthropic if an Anthropic key is configured, else OpenAI if an OpenAI key is, else local.
    Auto,
    /// Anthropic Messages API.
    Anthropic,
    /// Any OpenAI-compatible chat completions endpoint.
    OpenAi,
    /// Ollama's native `/api/chat`.
    Ollama,
    /// The embedded GGUF model.
    Local,
}

impl ProviderKind {
    /// Every choice, `auto` first.
    pub const ALL: [ProviderKind; 5] = [
        ProviderKind::Auto,
        ProviderKind::Anthropic,
        ProviderKind::OpenAi,
        ProviderKind::Ollama,
        ProviderKind::Local,
    ];

    /// The name used in config files, flags and the status bar.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Auto => "auto",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Local => "local",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How Anthropic extended thinking is requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingStyle {
    /// A fixed thinking-token budget taken from `[effort]`.
    Budget,
    /// The model decides how much to think.
    Adaptive,
}

/// The whole configuration, one field per section of `configs/default.toml`. The engine
/// sections deserialize straight into the engines' own parameter types.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub general: GeneralConfig,
    pub providers: ProvidersConfig,
    pub effort: EffortConfig,
    pub generation: GenerationConfig,
    pub routing: RoutingParams,
    pub budget: BudgetParams,
    pub network: NetworkConfig,
    pub fork: ForkParams,
    pub got: GotTuning,
    pub verify: VerifyParams,
    pub metacog: MetacogParams,
    pub mcp: McpParams,
    /// `[memory]`: tiers, scopes, retrieval weights (seed 000).
    pub memory: MemoryParams,
    /// `[embeddings]`: the embedder memory search uses.
    pub embeddings: EmbeddingParams,
    /// `[pipeline]`: the DeepEx modes (seed 003).
    pub pipeline: PipelineParams,
    /// `[search]`: where a pipeline's sources come from (seed 003 §5.6).
    pub search: SearchParams,
    /// `[knowledge]`: the local knowledge base research cites (seed 001).
    pub knowledge: KnowledgeParams,
    /// `[research]`: the DeepTrust plan → audit → approval → tools → report loop (seed 001).
    pub research: ResearchParams,
    /// `[diff]`: aligning two lines of reasoning, labelling pairs, merging with provenance.
    pub diff: DiffParams,
    /// `[loop]`: spotting a model that repeats itself, and what to do then.
    #[serde(rename = "loop")]
    pub r#loop: LoopParams,
    /// `[store]`: where sessions are kept (the data dir's redb file, or PostgreSQL).
    pub store: StoreConfig,
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
}

/// `[store]`: where the store lives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Empty: the redb file in the data dir. `postgres://…` or `postgresql://…`: that
    /// PostgreSQL database, which several instances may share. Shown only without its
    /// password ([`store_target::redact`]).
    pub url: String,
}

/// `[general]`: provider choice, profile, theme, logging.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneralConfig {
    pub provider: ProviderKind,
    /// Name of the applied profile; empty for none.
    pub profile: String,
    pub theme: String,
    /// tracing filter for the log file.
    pub log_level: String,
}

/// `[providers.*]`: per-backend settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvidersConfig {
    pub anthropic: AnthropicConfig,
    pub openai: OpenAiConfig,
    pub ollama: OllamaConfig,
    pub local: LocalConfig,
}

/// `[providers.anthropic]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnthropicConfig {
    pub base_url: String,
    pub model: String,
    /// Command whose stdout is the API key; empty for none.
    pub key_command: String,
    pub thinking: ThinkingStyle,
    /// Ask the API to compact long conversations server-side (`compact-2026-01-12` beta).
    pub compaction: bool,
}

/// `[providers.openai]`: any OpenAI-compatible endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    pub base_url: String,
    pub model: String,
    /// Command whose stdout is the API key; empty for none.
    pub key_command: String,
}

/// `[providers.ollama]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OllamaConfig {
    pub base_url: String,
    pub model: String,
}

/// `[providers.local]`: the in-process GGUF model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalConfig {
    /// GGUF file; empty for the SmolLM2 file in the models dir.
    pub model_path: PathBuf,
    pub context_size: u32,
    /// Inference threads; 0 for all cores.
    pub threads: u32,
    /// Give models without native thinking an explicit reasoning pass first.
    pub thinking_pass: bool,
    /// `[providers.local.decoding]`: sampling and per-role token caps.
    pub decoding: LocalDecoding,
}

impl LocalConfig {
    /// The GGUF file to load: the default SmolLM2 file in `models_dir` when `model_path` is
    /// empty; that model's file in `models_dir` when it is a bare known model name
    /// (`smollm2`, `gemma3`; see `models::CHAT_MODELS`; write `./gemma3` for a file of that
    /// name); else `model_path` itself, with a leading `~/` expanded.
    pub fn resolved_model_path(&self, models_dir: &Path) -> PathBuf {
        if self.model_path.as_os_str().is_empty() {
            return crate::models::smollm2_path(models_dir);
        }
        if let Some(file) = self.model_path.to_str().and_then(crate::models::chat_model) {
            return models_dir.join(file.relative_path);
        }
        if let Ok(rest) = self.model_path.strip_prefix("~")
            && let Some(home) = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf())
        {
            return home.join(rest);
        }
        self.model_path.clone()
    }
}

/// `[effort]`: the default effort and the thinking-token budget of each level.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffortConfig {
    pub default: Effort,
    pub low: u32,
    pub medium: u32,
    pub high: u32,
    pub max: u32,
}

/// `[generation]`: sampling settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerationConfig {
    pub max_tokens: u32,
    /// 0 means greedy decoding.
    pub temperature: f64,
    pub top_p: f64,
    pub seed: u64,
}

/// `[network]`: timeouts, retries and key rotation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    pub connect_timeout_secs: u64,
    pub stall_timeout_secs: u64,
    pub request_timeout_secs: u64,
    pub max_retries: u32,
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    pub key_cooldown_secs: u64,
}

impl NetworkConfig {
    /// Time allowed to establish a connection.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs)
    }
    /// Silence after which a stream counts as stalled.
    pub fn stall_timeout(&self) -> Duration {
        Duration::from_secs(self.stall_timeout_secs)
    }
    /// Upper bound on one whole request.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
    }
    /// First retry delay before jitter and doubling.
    pub fn backoff_base(&self) -> Duration {
        Duration::from_millis(self.backoff_base_ms)
    }
    /// Cap on a retry delay.
    pub fn backoff_max(&self) -> Duration {
        Duration::from_millis(self.backoff_max_ms)
    }
    /// Rest time of an API key after a 429.
    pub fn key_cooldown(&self) -> Duration {
        Duration::from_secs(self.key_cooldown_secs)
    }
}

/// A named profile: a few keys applied over the merged config when selected.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderKind>,
    /// Model of the profile's provider (for `local`, the GGUF path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Base URL of the profile's provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
}

/// Which API keys are available, for resolving `provider = "auto"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApiKeys {
    pub anthropic: bool,
    pub openai: bool,
}

impl ApiKeys {
    /// Keys present (non-empty) in an environment snapshot.
    pub fn from_env(env: &[(String, String)]) -> Self {
        let set = |want: ProviderKind| {
            API_KEY_ENV_VARS.iter().any(|(var, kind)| {
                *kind == want && env.iter().any(|(k, v)| k == var && !v.is_empty())
            })
        };
        Self {
            anthropic: set(ProviderKind::Anthropic),
            openai: set(ProviderKind::OpenAi),
        }
    }
}

impl Config {
    /// The built-in defaults alone.
    pub fn builtin() -> Result<Config, ConfigError> {
        let table = load::parse_defaults()?;
        table
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Defaults {
                message: e.message().to_string(),
            })
    }

    /// Thinking-token budget of an effort level.
    pub fn effort_budget(&self, effort: Effort) -> u32 {
        match effort {
            Effort::Low => self.effort.low,
            Effort::Medium => self.effort.medium,
            Effort::High => self.effort.high,
            Effort::Max => self.effort.max,
        }
    }

    /// The concrete provider to use: `general.provider`, with `auto` resolved to Anthropic
    /// when an Anthropic key (env or key_command) is configured, else OpenAI likewise,
    /// else local.
    pub fn resolve_provider(&self, keys: ApiKeys) -> ProviderKind {
        resolve_auto(self.general.provider, self, keys)
    }
}

fn resolve_auto(kind: ProviderKind, config: &Config, keys: ApiKeys) -> ProviderKind {
    match kind {
        ProviderKind::Auto => {
            if keys.anthropic || !config.providers.anthropic.key_command.trim().is_empty() {
                ProviderKind::Anthropic
            } else if keys.openai || !config.providers.openai.key_command.trim().is_empty() {
                ProviderKind::OpenAi
            } else {
                ProviderKind::Local
            }
        }
        other => other,
    }
}
