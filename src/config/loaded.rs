//! What loading gives: the merged config with the origin of every value (and how
//! `glassbox config show` prints it), or an error that says where the bad value came from.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use super::load::flatten;
use super::{Config, ProviderKind};

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
    /// What was ignored while loading (unknown `GLASSBOX_*` variables), one line each.
    pub warnings: Vec<String>,
}

impl LoadedConfig {
    /// Every leaf as (dotted key, value, origin), sorted by key; `store.url` without its
    /// password.
    pub fn entries(&self) -> Vec<(String, toml::Value, Origin)> {
        let mut leaves = BTreeMap::new();
        if let Ok(value) = toml::Value::try_from(&self.config) {
            flatten(&mut Vec::new(), &value, &mut leaves);
        }
        leaves
            .into_iter()
            .map(|(key, value)| {
                let origin = self.origins.get(&key).cloned().unwrap_or(Origin::Default);
                // The store's URL is shown without its password.
                let value = match value {
                    toml::Value::String(url) if key == super::STORE_URL_KEY => {
                        toml::Value::String(super::store_target::redact(&url))
                    }
                    other => other,
                };
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
