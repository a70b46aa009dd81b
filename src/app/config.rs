//! Typed configuration: embedded defaults < config file < environment < profile < flags,
//! with the origin of every value kept so `glassbox config show` can say where it came from.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engines::fork::ForkParams;
use crate::engines::got::GotTuning;
use crate::engines::llm::Effort;
use crate::engines::mcp::McpParams;
use crate::engines::metacog::MetacogParams;
use crate::engines::orchestrator::{BudgetParams, RoutingParams};
use crate::engines::verify::VerifyParams;

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
];

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

/// Default port of an Ollama server, added to an `OLLAMA_HOST` without one.
const OLLAMA_DEFAULT_PORT: u16 = 11434;

// ---------------------------------------------------------------------------------------
// Typed configuration
// ---------------------------------------------------------------------------------------

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
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalConfig {
    /// GGUF file; empty for the SmolLM2 file in the models dir.
    pub model_path: PathBuf,
    pub context_size: u32,
    /// Inference threads; 0 for all cores.
    pub threads: u32,
    /// Give models without native thinking an explicit reasoning pass first.
    pub thinking_pass: bool,
}

impl LocalConfig {
    /// The GGUF file to load: `model_path` (with a leading `~/` expanded), or the default
    /// SmolLM2 file in `models_dir` when it is empty.
    pub fn resolved_model_path(&self, models_dir: &Path) -> PathBuf {
        if self.model_path.as_os_str().is_empty() {
            return crate::models::smollm2_path(models_dir);
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
        let table = parse_defaults()?;
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

// ---------------------------------------------------------------------------------------
// Sources, origins, errors
// ---------------------------------------------------------------------------------------

/// Everything the loader reads, gathered up front so loading is a pure function.
#[derive(Clone, Debug, Default)]
pub struct ConfigSources {
    /// `--config FILE`; it must exist. When `None`, `<config_dir>/config.toml` is read if
    /// present.
    pub explicit_file: Option<PathBuf>,
    pub config_dir: PathBuf,
    /// Environment snapshot (name, value).
    pub env: Vec<(String, String)>,
    /// Command-line overrides, in the order given.
    pub flags: Vec<FlagOverride>,
    /// `--profile NAME`.
    pub profile: Option<String>,
}

impl ConfigSources {
    /// Sources with a snapshot of the process environment: the `GLASSBOX_*` variables, the
    /// well-known base-URL variables, and the API-key variables recorded as present only
    /// (their values never enter the config).
    pub fn from_process_env(
        explicit_file: Option<PathBuf>,
        config_dir: PathBuf,
        flags: Vec<FlagOverride>,
        profile: Option<String>,
    ) -> Self {
        let mut env = Vec::new();
        for (name, value) in std::env::vars_os() {
            let Ok(name) = name.into_string() else {
                continue;
            };
            if API_KEY_ENV_VARS.iter().any(|(var, _)| *var == name) {
                if !value.is_empty() {
                    env.push((name, "(set)".to_string()));
                }
            } else if name.starts_with(ENV_PREFIX)
                || BASE_URL_ENV_VARS.iter().any(|(var, _)| *var == name)
            {
                env.push((name, value.to_string_lossy().into_owned()));
            }
        }
        env.sort();
        Self {
            explicit_file,
            config_dir,
            env,
            flags,
            profile,
        }
    }
}

/// One command-line override of a config key.
#[derive(Clone, Debug, PartialEq)]
pub struct FlagOverride {
    /// Dotted key (e.g. `general.provider`), or [`MODEL_KEY`] / [`BASE_URL_KEY`] for the
    /// selected provider's model or base URL.
    pub key: String,
    pub value: toml::Value,
    /// The flag as typed, e.g. `--provider`.
    pub flag: String,
}

impl FlagOverride {
    /// Builds an override.
    pub fn new(
        key: impl Into<String>,
        value: impl Into<toml::Value>,
        flag: impl Into<String>,
    ) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
            flag: flag.into(),
        }
    }
}

/// Where a config value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Default,
    File { path: PathBuf, line: usize },
    Env { var: String },
    Flag { flag: String },
    Profile { name: String },
}

impl Origin {
    /// Prefix for an error about a value from here: `PATH:LINE`, `env VAR`, `flag --x`, ….
    pub fn location(&self) -> String {
        match self {
            Origin::Default => "built-in defaults".to_string(),
            Origin::File { path, line } => format!("{}:{line}", path.display()),
            Origin::Env { var } => format!("env {var}"),
            Origin::Flag { flag } => format!("flag {flag}"),
            Origin::Profile { name } => format!("profile '{name}'"),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File { path, line } => write!(f, "file:{}:{line}", path.display()),
            Origin::Env { var } => write!(f, "env:{var}"),
            Origin::Flag { flag } => write!(f, "flag:{flag}"),
            Origin::Profile { name } => write!(f, "profile:{name}"),
        }
    }
}

/// Why the configuration could not be loaded. Messages are one line and say where.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {} does not exist", path.display())]
    MissingFile { path: PathBuf },
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: invalid TOML: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{at}: unknown key '{key}' {place}{hint}")]
    UnknownKey {
        at: String,
        key: String,
        place: String,
        hint: String,
    },
    #[error("{at}: '{key}' is a table; set the keys inside it instead")]
    NotAValue { at: String, key: String },
    #[error("{at}: '{key}' is a single value, not a table")]
    NotATable { at: String, key: String },
    #[error("{at}: invalid value for '{key}': {message}")]
    InvalidValue {
        at: String,
        key: String,
        message: String,
    },
    #[error("unknown environment variable {var}: {reason}")]
    UnknownEnvVar { var: String, reason: String },
    #[error("unknown profile '{name}' (selected by {by}); {}", defined_profiles(.defined))]
    UnknownProfile {
        name: String,
        by: String,
        defined: Vec<String>,
    },
    #[error("built-in defaults are invalid: {message}")]
    Defaults { message: String },
}

fn defined_profiles(defined: &[String]) -> String {
    if defined.is_empty() {
        "no profiles are defined (add a [profiles.NAME] table to config.toml)".to_string()
    } else {
        format!("defined profiles: {}", defined.join(", "))
    }
}

/// The merged configuration with the origin of every leaf value.
#[derive(Clone, Debug)]
pub struct LoadedConfig {
    pub config: Config,
    /// Dotted key → where its value came from.
    pub origins: BTreeMap<String, Origin>,
    /// Config files that were read, lowest precedence first.
    pub files: Vec<PathBuf>,
    /// The concrete provider (`general.provider` with `auto` resolved).
    pub provider: ProviderKind,
}

impl LoadedConfig {
    /// Every leaf as (dotted key, value, origin), sorted by key.
    pub fn entries(&self) -> Vec<(String, toml::Value, Origin)> {
        let mut leaves = BTreeMap::new();
        if let Ok(value) = toml::Value::try_from(&self.config) {
            flatten(&mut Vec::new(), &value, &mut leaves);
        }
        leaves
            .into_iter()
            .map(|(key, value)| {
                let origin = self.origins.get(&key).cloned().unwrap_or(Origin::Default);
                (key, value, origin)
            })
            .collect()
    }

    /// `glassbox config show`: one `key = value  # origin` line per leaf.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        if self.files.is_empty() {
            out.push_str("# config files: none\n");
        } else {
            let files: Vec<String> = self.files.iter().map(|p| p.display().to_string()).collect();
            out.push_str(&format!("# config files: {}\n", files.join(", ")));
        }
        out.push_str(&format!(
            "# selected provider: {} (general.provider = {})\n",
            self.provider, self.config.general.provider
        ));
        let lines: Vec<(String, Origin)> = self
            .entries()
            .into_iter()
            .map(|(key, value, origin)| (format!("{key} = {value}"), origin))
            .collect();
        let width = lines
            .iter()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0);
        for (line, origin) in lines {
            out.push_str(&format!("{line:<width$}  # {origin}\n"));
        }
        out
    }

    /// `glassbox config show --json`: `{files, provider, keys: {KEY: {value, origin}}}`.
    pub fn to_json(&self) -> serde_json::Value {
        let keys: serde_json::Map<String, serde_json::Value> = self
            .entries()
            .into_iter()
            .map(|(key, value, origin)| {
                let value = serde_json::to_value(&value).unwrap_or(serde_json::Value::Null);
                (
                    key,
                    serde_json::json!({ "value": value, "origin": origin.to_string() }),
                )
            })
            .collect();
        serde_json::json!({
            "files": self.files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "provider": self.provider.as_str(),
            "keys": keys,
        })
    }
}

// ---------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------

/// Loads the configuration: embedded defaults < config file < environment < the selected
/// profile < command-line flags. Every value is type-checked as its layer is applied, so an
/// error names the file line, variable or flag it came from.
pub fn load(src: &ConfigSources) -> Result<LoadedConfig, ConfigError> {
    let defaults = parse_defaults()?;
    let mut merger = Merger::new(defaults)?;

    // Config file.
    let mut files = Vec::new();
    let file = match &src.explicit_file {
        Some(path) => {
            if !path.is_file() {
                return Err(ConfigError::MissingFile { path: path.clone() });
            }
            Some(path.clone())
        }
        None => Some(src.config_dir.join(CONFIG_FILE_NAME)).filter(|p| p.is_file()),
    };
    if let Some(path) = file {
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        for entry in file_entries(&path, &text)? {
            merger.apply(&entry.path, entry.value, entry.origin, false)?;
        }
        files.push(path);
    }

    // Environment.
    let mut deferred_model: Vec<(toml::Value, Origin)> = Vec::new();
    for (path, value, origin) in env_entries(&src.env)? {
        if path.len() == 1 && path[0] == MODEL_KEY {
            deferred_model.push((value, origin));
        } else {
            merger.apply(&path, value, origin, true)?;
        }
    }

    // Flags (the profile is applied below, but never over a flag).
    let mut deferred_flags: Vec<(&str, toml::Value, Origin)> = Vec::new();
    if let Some(name) = &src.profile {
        let origin = Origin::Flag {
            flag: "--profile".to_string(),
        };
        merger.apply(
            &split_key("general.profile"),
            toml::Value::String(name.clone()),
            origin,
            true,
        )?;
    }
    for flag in &src.flags {
        let origin = Origin::Flag {
            flag: flag.flag.clone(),
        };
        if flag.key == MODEL_KEY || flag.key == BASE_URL_KEY {
            deferred_flags.push((flag.key.as_str(), flag.value.clone(), origin));
        } else {
            merger.apply(&split_key(&flag.key), flag.value.clone(), origin, true)?;
        }
    }

    // Profile overlay.
    let keys = ApiKeys::from_env(&src.env);
    let config = merger.config()?;
    let profile_name = config.general.profile.trim().to_string();
    let profile = if profile_name.is_empty() {
        None
    } else {
        match config.profiles.get(&profile_name) {
            Some(p) => Some(p.clone()),
            None => {
                let by = merger.origin_of("general.profile").location();
                return Err(ConfigError::UnknownProfile {
                    name: profile_name,
                    by,
                    defined: config.profiles.keys().cloned().collect(),
                });
            }
        }
    };
    let profile_origin = Origin::Profile {
        name: profile_name.clone(),
    };
    if let Some(p) = &profile {
        if let Some(kind) = p.provider {
            merger.apply_unless_flag(
                "general.provider",
                toml::Value::String(kind.as_str().into()),
                &profile_origin,
            )?;
        }
        if let Some(effort) = p.effort {
            merger.apply_unless_flag(
                "effort.default",
                toml::Value::String(effort.as_str().into()),
                &profile_origin,
            )?;
        }
    }

    // Model and base URL of the selected provider: env < profile < flag.
    let config = merger.config()?;
    let selected = config.resolve_provider(keys);
    for (value, origin) in deferred_model {
        let key = model_key(selected);
        merger.apply(&split_key(&key), value, origin, true)?;
    }
    if let Some(p) = &profile {
        let target = p
            .provider
            .map_or(selected, |kind| resolve_auto(kind, &config, keys));
        if let Some(model) = &p.model {
            merger.apply_unless_flag(
                &model_key(target),
                toml::Value::String(model.clone()),
                &profile_origin,
            )?;
        }
        if let Some(url) = &p.base_url {
            let key = base_url_key(target).ok_or_else(|| ConfigError::InvalidValue {
                at: profile_origin.location(),
                key: format!("profiles.{profile_name}.base_url"),
                message: format!("the {target} provider has no base_url"),
            })?;
            merger.apply_unless_flag(&key, toml::Value::String(url.clone()), &profile_origin)?;
        }
    }
    for (pseudo, value, origin) in deferred_flags {
        let key = if pseudo == MODEL_KEY {
            model_key(selected)
        } else {
            base_url_key(selected).ok_or_else(|| ConfigError::InvalidValue {
                at: origin.location(),
                key: BASE_URL_KEY.to_string(),
                message: format!("the {selected} provider has no base_url"),
            })?
        };
        merger.apply(&split_key(&key), value, origin, true)?;
    }

    let config = merger.config()?;
    if let Some((key, message)) = check_values(&config).into_iter().next() {
        return Err(ConfigError::InvalidValue {
            at: merger.origin_of(&key).location(),
            key,
            message,
        });
    }
    let provider = config.resolve_provider(keys);
    Ok(LoadedConfig {
        config,
        origins: merger.origins,
        files,
        provider,
    })
}

/// The key a model override sets for a provider; callers pass a resolved provider, and
/// `auto` is treated as local.
fn model_key(kind: ProviderKind) -> String {
    match kind {
        ProviderKind::Local | ProviderKind::Auto => "providers.local.model_path".to_string(),
        other => format!("providers.{}.model", other.as_str()),
    }
}

fn base_url_key(kind: ProviderKind) -> Option<String> {
    match kind {
        ProviderKind::Local | ProviderKind::Auto => None,
        other => Some(format!("providers.{}.base_url", other.as_str())),
    }
}

fn split_key(key: &str) -> Vec<String> {
    key.split('.').map(str::to_string).collect()
}

fn parse_defaults() -> Result<toml::Table, ConfigError> {
    DEFAULT_TOML
        .parse::<toml::Table>()
        .map_err(|e| ConfigError::Defaults {
            message: e.message().to_string(),
        })
}

/// Semantic checks the types cannot express, as (key, message).
fn check_values(config: &Config) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    let mut check = |ok: bool, key: &str, message: String| {
        if !ok {
            problems.push((key.to_string(), message));
        }
    };
    let g = &config.generation;
    check(
        g.max_tokens > 0,
        "generation.max_tokens",
        "must be at least 1".into(),
    );
    check(
        g.temperature.is_finite() && g.temperature >= 0.0,
        "generation.temperature",
        format!("must be 0 or more, got {}", g.temperature),
    );
    check(
        g.top_p > 0.0 && g.top_p <= 1.0,
        "generation.top_p",
        format!("must be in (0, 1], got {}", g.top_p),
    );
    let fork = &config.fork;
    check(
        (1..=10).contains(&fork.debate_rounds),
        "fork.debate_rounds",
        format!("must be 1 to 10, got {}", fork.debate_rounds),
    );
    check(
        (0.0..=1.0).contains(&fork.consensus_threshold),
        "fork.consensus_threshold",
        format!("must be in [0, 1], got {}", fork.consensus_threshold),
    );
    let mcp = &config.mcp;
    check(
        mcp.critique_max_tokens > 0,
        "mcp.critique_max_tokens",
        "must be at least 1".into(),
    );
    check(
        mcp.critique_context > 0,
        "mcp.critique_context",
        "must be at least 1".into(),
    );
    check(
        mcp.sampling_timeout_secs > 0,
        "mcp.sampling_timeout_secs",
        "must be at least 1".into(),
    );
    let local = &config.providers.local;
    check(
        local.context_size > 0,
        "providers.local.context_size",
        "must be at least 1".into(),
    );
    let n = &config.network;
    check(
        n.connect_timeout_secs > 0,
        "network.connect_timeout_secs",
        "must be at least 1".into(),
    );
    check(
        n.stall_timeout_secs > 0,
        "network.stall_timeout_secs",
        "must be at least 1".into(),
    );
    check(
        n.request_timeout_secs > 0,
        "network.request_timeout_secs",
        "must be at least 1".into(),
    );
    check(
        n.backoff_base_ms <= n.backoff_max_ms,
        "network.backoff_max_ms",
        format!(
            "must be at least network.backoff_base_ms ({})",
            n.backoff_base_ms
        ),
    );
    check(
        !config.general.theme.trim().is_empty(),
        "general.theme",
        "must not be empty".into(),
    );
    let p = &config.providers;
    for (key, url) in [
        ("providers.anthropic.base_url", &p.anthropic.base_url),
        ("providers.openai.base_url", &p.openai.base_url),
        ("providers.ollama.base_url", &p.ollama.base_url),
    ] {
        let ok = url.starts_with("http://") || url.starts_with("https://");
        check(
            ok,
            key,
            format!("must start with http:// or https://, got '{url}'"),
        );
    }
    for (name, profile) in &config.profiles {
        if let Some(url) = &profile.base_url {
            let ok = url.starts_with("http://") || url.starts_with("https://");
            check(
                ok,
                &format!("profiles.{name}.base_url"),
                format!("must start with http:// or https://, got '{url}'"),
            );
        }
    }
    problems
}

/// What a dotted path is in the schema.
enum Slot {
    Table,
    /// A value; the default value gives the expected TOML type when there is one.
    Value(Option<toml::Value>),
}

/// The layered table being built, validated key by key against the typed config.
struct Merger {
    defaults: toml::Table,
    merged: toml::Table,
    origins: BTreeMap<String, Origin>,
}

impl Merger {
    fn new(defaults: toml::Table) -> Result<Self, ConfigError> {
        toml::Value::Table(defaults.clone())
            .try_into::<Config>()
            .map_err(|e| ConfigError::Defaults {
                message: e.message().to_string(),
            })?;
        let mut origins = BTreeMap::new();
        flatten(
            &mut Vec::new(),
            &toml::Value::Table(defaults.clone()),
            &mut origins,
        );
        let origins = origins.into_keys().map(|k| (k, Origin::Default)).collect();
        Ok(Self {
            merged: defaults.clone(),
            defaults,
            origins,
        })
    }

    fn config(&self) -> Result<Config, ConfigError> {
        toml::Value::Table(self.merged.clone())
            .try_into::<Config>()
            .map_err(|e| ConfigError::InvalidValue {
                at: "merged configuration".to_string(),
                key: "*".to_string(),
                message: e.message().to_string(),
            })
    }

    fn origin_of(&self, key: &str) -> Origin {
        self.origins.get(key).cloned().unwrap_or(Origin::Default)
    }

    /// Looks `path` up in the schema: the defaults, plus `profiles.NAME.{PROFILE_KEYS}`.
    fn slot(&self, path: &[String], at: &str) -> Result<Slot, ConfigError> {
        if path.first().map(String::as_str) == Some("profiles") {
            return match path.len() {
                1 | 2 => Ok(Slot::Table),
                3 if PROFILE_KEYS.contains(&path[2].as_str()) => Ok(Slot::Value(None)),
                3 => Err(unknown_key(
                    at,
                    path,
                    PROFILE_KEYS.iter().map(|k| k.to_string()).collect(),
                )),
                _ => Err(ConfigError::NotATable {
                    at: at.to_string(),
                    key: path[..3].join("."),
                }),
            };
        }
        let mut table = &self.defaults;
        for (i, part) in path.iter().enumerate() {
            let last = i + 1 == path.len();
            match table.get(part) {
                None => {
                    return Err(unknown_key(
                        at,
                        &path[..=i],
                        table.keys().cloned().collect(),
                    ));
                }
                Some(toml::Value::Table(_)) if last => return Ok(Slot::Table),
                Some(toml::Value::Table(t)) => table = t,
                Some(v) if last => return Ok(Slot::Value(Some(v.clone()))),
                Some(_) => {
                    return Err(ConfigError::NotATable {
                        at: at.to_string(),
                        key: path[..=i].join("."),
                    });
                }
            }
        }
        Ok(Slot::Table)
    }

    /// Makes sure the table at `path` exists (so an empty `[profiles.x]` still defines x).
    fn ensure_table(&mut self, path: &[String], at: &str) -> Result<(), ConfigError> {
        match self.slot(path, at)? {
            Slot::Table => {
                if path.is_empty() {
                    return Ok(());
                }
                if get_path(&self.merged, path).is_none() {
                    set_path(
                        &mut self.merged,
                        path,
                        toml::Value::Table(toml::Table::new()),
                    );
                }
                Ok(())
            }
            Slot::Value(_) => Err(ConfigError::NotATable {
                at: at.to_string(),
                key: path.join("."),
            }),
        }
    }

    /// Sets one value, after checking the key exists and the value fits its type.
    /// `from_text` values (env, flags) that are strings are parsed as TOML scalars when the
    /// key expects a non-string.
    fn apply(
        &mut self,
        path: &[String],
        value: toml::Value,
        origin: Origin,
        from_text: bool,
    ) -> Result<(), ConfigError> {
        let at = origin.location();
        let key = path.join(".");
        if path.is_empty() || path.iter().any(String::is_empty) {
            return Err(ConfigError::UnknownKey {
                at,
                key,
                place: "(empty key part)".into(),
                hint: String::new(),
            });
        }
        if let toml::Value::Table(table) = value {
            self.ensure_table(path, &at)?;
            for (k, v) in table {
                let mut sub = path.to_vec();
                sub.push(k);
                self.apply(&sub, v, origin.clone(), from_text)?;
            }
            return Ok(());
        }
        let target = match self.slot(path, &at)? {
            Slot::Table => return Err(ConfigError::NotAValue { at, key }),
            Slot::Value(target) => target,
        };
        let value = coerce(value, target.as_ref(), from_text);
        let mut candidate = self.merged.clone();
        set_path(&mut candidate, path, value);
        if let Err(e) = toml::Value::Table(candidate.clone()).try_into::<Config>() {
            return Err(ConfigError::InvalidValue {
                at,
                key,
                message: e.message().to_string(),
            });
        }
        self.merged = candidate;
        self.origins.insert(key, origin);
        Ok(())
    }

    /// Profile overlay: sets `key` unless a command-line flag already set it.
    fn apply_unless_flag(
        &mut self,
        key: &str,
        value: toml::Value,
        origin: &Origin,
    ) -> Result<(), ConfigError> {
        if matches!(self.origins.get(key), Some(Origin::Flag { .. })) {
            return Ok(());
        }
        self.apply(&split_key(key), value, origin.clone(), true)
    }
}

fn unknown_key(at: &str, path: &[String], known: Vec<String>) -> ConfigError {
    let (key, parents) = match path.split_last() {
        Some((key, parents)) => (key.clone(), parents),
        None => (String::new(), path),
    };
    let place = if parents.is_empty() {
        "at the top level".to_string()
    } else {
        format!("in [{}]", parents.join("."))
    };
    let hint = closest(&key, &known)
        .map(|k| format!("; did you mean '{k}'?"))
        .unwrap_or_default();
    ConfigError::UnknownKey {
        at: at.to_string(),
        key,
        place,
        hint,
    }
}

/// The known key closest to a typo, if it is close enough to be a likely intent.
fn closest(key: &str, known: &[String]) -> Option<String> {
    known
        .iter()
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, k)| *d <= (k.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.clone())
}

/// Edit distance counting insertions, deletions, substitutions and adjacent swaps.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// Integer → float where a float is expected; strings from env/flags parsed as TOML
/// scalars where the expected type is not a string and the parse fits.
fn coerce(value: toml::Value, target: Option<&toml::Value>, from_text: bool) -> toml::Value {
    match (target, value) {
        (Some(toml::Value::Float(_)), toml::Value::Integer(i)) => toml::Value::Float(i as f64),
        (Some(t), toml::Value::String(s)) if from_text && !t.is_str() => {
            match s.trim().parse::<toml::Value>() {
                Ok(toml::Value::Integer(i)) if t.is_float() => toml::Value::Float(i as f64),
                Ok(parsed) if parsed.same_type(t) => parsed,
                _ => toml::Value::String(s),
            }
        }
        (_, v) => v,
    }
}

fn get_path<'a>(table: &'a toml::Table, path: &[String]) -> Option<&'a toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut cur = table;
    for part in parents {
        cur = cur.get(part)?.as_table()?;
    }
    cur.get(last)
}

fn set_path(table: &mut toml::Table, path: &[String], value: toml::Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = table;
    for part in parents {
        let slot = cur
            .entry(part.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !slot.is_table() {
            *slot = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(next) = slot else {
            return;
        };
        cur = next;
    }
    cur.insert(last.clone(), value);
}

fn flatten(prefix: &mut Vec<String>, value: &toml::Value, out: &mut BTreeMap<String, toml::Value>) {
    match value {
        toml::Value::Table(t) => {
            for (k, v) in t {
                prefix.push(k.clone());
                flatten(prefix, v, out);
                prefix.pop();
            }
        }
        leaf => {
            out.insert(prefix.join("."), leaf.clone());
        }
    }
}

/// One value or table from a source, with its path and origin.
struct Entry {
    path: Vec<String>,
    value: toml::Value,
    origin: Origin,
}

/// The leaves (and tables, so empty ones still count) of a config file, in file order,
/// each with the line of its key.
fn file_entries(path: &Path, text: &str) -> Result<Vec<Entry>, ConfigError> {
    let syntax = |e: toml::de::Error| ConfigError::Syntax {
        path: path.to_path_buf(),
        line: e.span().map_or(1, |s| line_of(text, s.start)),
        message: e.message().trim().to_string(),
    };
    let values: toml::Table = text.parse().map_err(syntax)?;
    let spans = toml::de::DeTable::parse(text).map_err(syntax)?;
    let mut found: Vec<(usize, Vec<String>, bool)> = Vec::new();
    collect_spans(&mut Vec::new(), spans.get_ref(), &mut found);
    found.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.len().cmp(&b.1.len())));
    let mut entries = Vec::new();
    for (offset, key_path, is_table) in found {
        let Some(value) = get_path(&values, &key_path) else {
            continue;
        };
        let value = if is_table {
            toml::Value::Table(toml::Table::new())
        } else {
            value.clone()
        };
        let origin = Origin::File {
            path: path.to_path_buf(),
            line: line_of(text, offset),
        };
        entries.push(Entry {
            path: key_path,
            value,
            origin,
        });
    }
    Ok(entries)
}

fn collect_spans(
    prefix: &mut Vec<String>,
    table: &toml::de::DeTable<'_>,
    out: &mut Vec<(usize, Vec<String>, bool)>,
) {
    for (key, value) in table {
        prefix.push(key.get_ref().to_string());
        match value.get_ref() {
            toml::de::DeValue::Table(inner) => {
                out.push((key.span().start, prefix.clone(), true));
                collect_spans(prefix, inner, out);
            }
            _ => out.push((key.span().start, prefix.clone(), false)),
        }
        prefix.pop();
    }
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The environment as (path, value, origin): well-known base-URL variables first, then
/// the short `GLASSBOX_*` names, then `GLASSBOX_<SECTION>__<KEY>`.
fn env_entries(
    env: &[(String, String)],
) -> Result<Vec<(Vec<String>, toml::Value, Origin)>, ConfigError> {
    let mut sorted: Vec<&(String, String)> = env.iter().collect();
    sorted.sort();
    let mut well_known = Vec::new();
    let mut short = Vec::new();
    let mut generic = Vec::new();
    for (var, value) in sorted {
        let origin = Origin::Env { var: var.clone() };
        if let Some((_, key)) = BASE_URL_ENV_VARS.iter().find(|(v, _)| v == var) {
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            let value = if var == "OLLAMA_HOST" {
                normalize_ollama_host(value)
            } else {
                value.to_string()
            };
            well_known.push((split_key(key), toml::Value::String(value), origin));
            continue;
        }
        let Some(rest) = var.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        if PATH_ENV_VARS.contains(&var.as_str()) {
            continue;
        }
        if let Some((_, key)) = SHORT_ENV_VARS.iter().find(|(v, _)| v == var) {
            short.push((split_key(key), toml::Value::String(value.clone()), origin));
            continue;
        }
        if !rest.contains("__") {
            return Err(ConfigError::UnknownEnvVar {
                var: var.clone(),
                reason: format!(
                    "expected GLASSBOX_<SECTION>__<KEY> (e.g. GLASSBOX_NETWORK__MAX_RETRIES) or one of {}",
                    SHORT_ENV_VARS
                        .iter()
                        .map(|(v, _)| *v)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
        generic.push((path, toml::Value::String(value.clone()), origin));
    }
    Ok(well_known.into_iter().chain(short).chain(generic).collect())
}

/// `OLLAMA_HOST` as Ollama reads it: `http://` when no scheme is given, and port 11434
/// when neither scheme nor port is.
fn normalize_ollama_host(host: &str) -> String {
    if host.contains("://") {
        return host.trim_end_matches('/').to_string();
    }
    let (hostport, rest) = match host.find('/') {
        Some(i) => (&host[..i], &host[i..]),
        None => (host, ""),
    };
    let has_port = match hostport.rfind(']') {
        Some(bracket) => hostport[bracket..].contains(':'),
        None => hostport.contains(':'),
    };
    let hostport = if hostport.is_empty() {
        format!("127.0.0.1:{OLLAMA_DEFAULT_PORT}")
    } else if has_port {
        hostport.to_string()
    } else {
        format!("{hostport}:{OLLAMA_DEFAULT_PORT}")
    };
    format!("http://{hostport}{}", rest.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(dir: &Path) -> ConfigSources {
        ConfigSources {
            config_dir: dir.to_path_buf(),
            ..ConfigSources::default()
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_load_and_every_leaf_is_from_default() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = load(&sources(dir.path())).unwrap();
        let c = &loaded.config;
        assert_eq!(c.general.provider, ProviderKind::Auto);
        assert_eq!(c.providers.anthropic.model, "claude-opus-4-6");
        assert_eq!(c.providers.anthropic.thinking, ThinkingStyle::Budget);
        assert_eq!(c.providers.local.model_path, PathBuf::new());
        assert_eq!(c.effort.default, Effort::Medium);
        assert_eq!(c.generation.temperature, 0.0);
        assert_eq!(c.network.max_retries, 4);
        assert!(c.profiles.is_empty());
        assert!(loaded.files.is_empty());
        assert_eq!(loaded.provider, ProviderKind::Local);
        let entries = loaded.entries();
        assert!(entries.len() >= 30, "{}", entries.len());
        assert!(entries.iter().all(|(_, _, o)| *o == Origin::Default));
        assert_eq!(Config::builtin().unwrap(), loaded.config);
    }

    #[test]
    fn engine_sections_are_the_engines_defaults() {
        let c = Config::builtin().unwrap();
        assert_eq!(c.routing, RoutingParams::default());
        assert_eq!(c.budget, BudgetParams::default());
        assert_eq!(c.fork, ForkParams::default());
        assert_eq!(c.got, GotTuning::default());
        assert_eq!(c.verify, VerifyParams::default());
        assert_eq!(c.metacog, MetacogParams::default());
        assert_eq!(c.mcp, McpParams::default());
    }

    #[test]
    fn effort_budgets_follow_the_config() {
        let mut c = Config::builtin().unwrap();
        assert_eq!(c.effort_budget(Effort::Low), 5000);
        assert_eq!(c.effort_budget(Effort::Medium), 10000);
        assert_eq!(c.effort_budget(Effort::High), 20000);
        assert_eq!(c.effort_budget(Effort::Max), 50000);
        c.effort.high = 7;
        assert_eq!(c.effort_budget(Effort::High), 7);
    }

    #[test]
    fn auto_resolves_by_available_keys() {
        let mut c = Config::builtin().unwrap();
        let none = ApiKeys::default();
        assert_eq!(c.resolve_provider(none), ProviderKind::Local);
        let both = ApiKeys {
            anthropic: true,
            openai: true,
        };
        assert_eq!(c.resolve_provider(both), ProviderKind::Anthropic);
        assert_eq!(
            c.resolve_provider(ApiKeys {
                anthropic: false,
                openai: true
            }),
            ProviderKind::OpenAi
        );
        c.providers.openai.key_command = "pass show openai".into();
        assert_eq!(c.resolve_provider(none), ProviderKind::OpenAi);
        c.general.provider = ProviderKind::Ollama;
        assert_eq!(c.resolve_provider(both), ProviderKind::Ollama);
        let keys = ApiKeys::from_env(&env(&[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "")]));
        assert_eq!(
            keys,
            ApiKeys {
                anthropic: true,
                openai: false
            }
        );
    }

    #[test]
    fn profile_keys_match_the_profile_struct() {
        let full = Profile {
            provider: Some(ProviderKind::Ollama),
            model: Some("m".into()),
            base_url: Some("http://x".into()),
            effort: Some(Effort::Low),
        };
        let value = toml::Value::try_from(&full).unwrap();
        let mut keys: Vec<&str> = value
            .as_table()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        let mut expected = PROFILE_KEYS.to_vec();
        expected.sort_unstable();
        assert_eq!(keys, expected);
    }

    #[test]
    fn provider_kind_names_agree_between_serde_and_as_str() {
        for kind in ProviderKind::ALL {
            let serde_name = toml::Value::try_from(kind).unwrap();
            assert_eq!(serde_name.as_str(), Some(kind.as_str()));
        }
        assert_eq!(ProviderKind::OpenAi.as_str(), "openai");
    }

    #[test]
    fn env_strings_are_coerced_to_the_expected_type() {
        let int = toml::Value::Integer(1);
        let float = toml::Value::Float(1.0);
        let boolean = toml::Value::Boolean(true);
        let string = toml::Value::String("x".into());
        let s = |v: &str| toml::Value::String(v.into());
        assert_eq!(coerce(s("7"), Some(&int), true), toml::Value::Integer(7));
        assert_eq!(coerce(s("7"), Some(&float), true), toml::Value::Float(7.0));
        assert_eq!(
            coerce(s("0.5"), Some(&float), true),
            toml::Value::Float(0.5)
        );
        assert_eq!(
            coerce(s("false"), Some(&boolean), true),
            toml::Value::Boolean(false)
        );
        assert_eq!(coerce(s("7"), Some(&string), true), s("7"));
        assert_eq!(coerce(s("seven"), Some(&int), true), s("seven"));
        // Files are typed already: a quoted number stays a string (and is then rejected).
        assert_eq!(coerce(s("7"), Some(&int), false), s("7"));
        assert_eq!(
            coerce(toml::Value::Integer(1), Some(&float), false),
            toml::Value::Float(1.0)
        );
        assert_eq!(coerce(s("7"), None, true), s("7"));
    }

    #[test]
    fn ollama_host_gets_scheme_and_port() {
        assert_eq!(normalize_ollama_host("0.0.0.0"), "http://0.0.0.0:11434");
        assert_eq!(
            normalize_ollama_host("example.com:8080"),
            "http://example.com:8080"
        );
        assert_eq!(normalize_ollama_host("[::1]"), "http://[::1]:11434");
        assert_eq!(normalize_ollama_host("[::1]:99"), "http://[::1]:99");
        assert_eq!(
            normalize_ollama_host("https://ollama.example.com/"),
            "https://ollama.example.com"
        );
        assert_eq!(normalize_ollama_host("http://h:1"), "http://h:1");
        let dir = tempfile::tempdir().unwrap();
        let mut src = sources(dir.path());
        src.env = env(&[
            ("OLLAMA_HOST", "10.0.0.2"),
            ("ANTHROPIC_BASE_URL", "http://proxy:1"),
        ]);
        let loaded = load(&src).unwrap();
        assert_eq!(
            loaded.config.providers.ollama.base_url,
            "http://10.0.0.2:11434"
        );
        assert_eq!(loaded.config.providers.anthropic.base_url, "http://proxy:1");
        assert_eq!(
            loaded.origins["providers.ollama.base_url"],
            Origin::Env {
                var: "OLLAMA_HOST".into()
            }
        );
    }

    #[test]
    fn line_numbers_are_one_based() {
        let text = "a = 1\n\nb = 2\n";
        assert_eq!(line_of(text, 0), 1);
        assert_eq!(line_of(text, 7), 3);
        assert_eq!(line_of(text, 999), 4);
    }

    #[test]
    fn typos_get_a_suggestion() {
        let known: Vec<String> = ["max_retries", "seed"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            closest("max_retires", &known).as_deref(),
            Some("max_retries")
        );
        assert_eq!(closest("zzzzzz", &known), None);
        assert_eq!(
            closest("modle", &["model".to_string()]).as_deref(),
            Some("model")
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn file_tables_are_reported_at_their_key_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONFIG_FILE_NAME);
        std::fs::write(&path, "[general]\ntheme = \"light\"\n\n[bogus]\nx = 1\n").unwrap();
        let err = load(&sources(dir.path())).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("{}:4: unknown key 'bogus' at the top level", path.display())
        );
    }

    #[test]
    fn a_value_where_a_table_belongs_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONFIG_FILE_NAME);
        std::fs::write(&path, "network = 3\n").unwrap();
        let err = load(&sources(dir.path())).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}:1: 'network' is a table; set the keys inside it instead",
                path.display()
            )
        );
        std::fs::write(&path, "[general.provider]\nx = 1\n").unwrap();
        let err = load(&sources(dir.path())).unwrap_err().to_string();
        assert!(
            err.contains("'general.provider' is a single value, not a table"),
            "{err}"
        );
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONFIG_FILE_NAME);
        std::fs::write(&path, "[general]\ntheme = \"light\"\nprovider = \n").unwrap();
        let err = load(&sources(dir.path())).unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { line: 3, .. }), "{err}");
    }

    #[test]
    fn semantic_checks_point_at_the_origin() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONFIG_FILE_NAME);
        std::fs::write(&path, "[generation]\ntop_p = 1.5\n").unwrap();
        let err = load(&sources(dir.path())).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}:2: invalid value for 'generation.top_p': must be in (0, 1], got 1.5",
                path.display()
            )
        );
        let mut src = sources(dir.path());
        std::fs::remove_file(&path).unwrap();
        src.env = env(&[("GLASSBOX_PROVIDERS__OPENAI__BASE_URL", "api.example.com")]);
        let err = load(&src).unwrap_err().to_string();
        assert!(err.starts_with("env GLASSBOX_PROVIDERS__OPENAI__BASE_URL: invalid value for 'providers.openai.base_url'"), "{err}");
    }

    #[test]
    fn path_env_vars_are_skipped_and_unknown_ones_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = sources(dir.path());
        src.env = env(&[
            ("GLASSBOX_DATA_DIR", "/x"),
            ("GLASSBOX_CONFIG_DIR", "/y"),
            ("GLASSBOX_MODELS_DIR", "/z"),
            ("HOME", "/root"),
        ]);
        assert!(load(&src).is_ok());
        src.env = env(&[("GLASSBOX_COLOUR", "red")]);
        let err = load(&src).unwrap_err().to_string();
        assert!(
            err.starts_with("unknown environment variable GLASSBOX_COLOUR:"),
            "{err}"
        );
        src.env = env(&[("GLASSBOX_GENERAL__COLOUR", "red")]);
        let err = load(&src).unwrap_err().to_string();
        assert!(
            err.starts_with("env GLASSBOX_GENERAL__COLOUR: unknown key 'colour' in [general]"),
            "{err}"
        );
        src.env = env(&[("GLASSBOX_NETWORK__MAX_RETIRES", "3")]);
        let err = load(&src).unwrap_err().to_string();
        assert_eq!(
            err,
            "env GLASSBOX_NETWORK__MAX_RETIRES: unknown key 'max_retires' in [network]; \
             did you mean 'max_retries'?"
        );
    }

    #[test]
    fn model_pseudo_key_follows_the_selected_provider() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = sources(dir.path());
        src.env = env(&[("GLASSBOX_MODEL", "/models/other.gguf")]);
        let loaded = load(&src).unwrap();
        assert_eq!(
            loaded.config.providers.local.model_path,
            PathBuf::from("/models/other.gguf")
        );
        assert_eq!(
            loaded.origins["providers.local.model_path"],
            Origin::Env {
                var: "GLASSBOX_MODEL".into()
            }
        );
        src.env = env(&[("GLASSBOX_MODEL", "gpt-x"), ("OPENAI_API_KEY", "k")]);
        src.flags = vec![FlagOverride::new(
            BASE_URL_KEY,
            "http://localhost:8000/v1",
            "--base-url",
        )];
        let loaded = load(&src).unwrap();
        assert_eq!(loaded.provider, ProviderKind::OpenAi);
        assert_eq!(loaded.config.providers.openai.model, "gpt-x");
        assert_eq!(
            loaded.config.providers.openai.base_url,
            "http://localhost:8000/v1"
        );
        assert_eq!(
            loaded.origins["providers.openai.base_url"],
            Origin::Flag {
                flag: "--base-url".into()
            }
        );
        src.env.clear();
        let err = load(&src).unwrap_err().to_string();
        assert_eq!(
            err,
            "flag --base-url: invalid value for 'base_url': the local provider has no base_url"
        );
    }

    #[test]
    fn render_and_json_show_values_with_origins() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = sources(dir.path());
        src.flags = vec![FlagOverride::new("network.max_retries", 9, "--max-retries")];
        let loaded = load(&src).unwrap();
        let text = loaded.render_text();
        let line = text
            .lines()
            .find(|l| l.starts_with("network.max_retries = "))
            .unwrap();
        assert!(line.starts_with("network.max_retries = 9 "), "{line}");
        assert!(line.ends_with("# flag:--max-retries"), "{line}");
        let line = text
            .lines()
            .find(|l| l.starts_with("general.provider = "))
            .unwrap();
        assert!(line.starts_with("general.provider = \"auto\""), "{line}");
        assert!(line.ends_with("# default"), "{line}");
        let json = loaded.to_json();
        assert_eq!(json["keys"]["network.max_retries"]["value"], 9);
        assert_eq!(
            json["keys"]["network.max_retries"]["origin"],
            "flag:--max-retries"
        );
        assert_eq!(json["keys"]["generation.top_p"]["value"], 0.95);
        assert_eq!(json["provider"], "local");
    }
}
