//! Loading in layers: each source's values are applied key by key over the embedded
//! defaults, type-checked against the schema as they land, with the origin of every value
//! kept for `glassbox config show`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::check::{check_values, unknown_key};
use super::read::{env_entries, file_entries};
use super::{
    API_KEY_ENV_VARS, ApiKeys, BASE_URL_ENV_VARS, BASE_URL_KEY, CONFIG_FILE_NAME, Config,
    ConfigError, DEFAULT_TOML, ENV_PREFIX, LoadedConfig, MODEL_KEY, Origin, PROFILE_KEYS,
    ProviderKind, resolve_auto,
};

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
    let mut warnings = Vec::new();
    for (path, value, origin) in env_entries(&src.env, &mut warnings)? {
        if path.len() == 1 && path[0] == MODEL_KEY {
            deferred_model.push((value, origin));
            continue;
        }
        match merger.apply(&path, value, origin.clone(), true) {
            // A variable naming no setting is someone else's, or a typo: said, not fatal.
            Err(ConfigError::UnknownKey {
                key, place, hint, ..
            }) => warnings.push(format!(
                "ignoring {}: no setting '{key}' {place}{hint}",
                origin.location()
            )),
            other => other?,
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
        warnings,
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

pub(super) fn split_key(key: &str) -> Vec<String> {
    key.split('.').map(str::to_string).collect()
}

pub(super) fn parse_defaults() -> Result<toml::Table, ConfigError> {
    DEFAULT_TOML
        .parse::<toml::Table>()
        .map_err(|e| ConfigError::Defaults {
            message: e.message().to_string(),
        })
}

/// What a dotted path is in the schema.
enum Slot {
    Table,
    /// A value; the default value gives the expected TOML type when there is one.
    Value(Option<toml::Value>),
}

/// The layered table being built, validated against the typed config. Values are checked
/// together when the config is read (or an error is about to be returned); only when that
/// fails are they checked one by one, in the order they were set, to name the first at
/// fault: the same error as checking each as it is set, for a fraction of the conversions
/// (each one clones the whole table and deserialises all of it).
struct Merger {
    defaults: toml::Table,
    merged: toml::Table,
    origins: BTreeMap<String, Origin>,
    /// `merged` as last found valid, and the values set since: path, value, where it came
    /// from, and its key (empty for a table made to hold values, which is not checked alone).
    checked: toml::Table,
    unchecked: Vec<(Vec<String>, toml::Value, String, String)>,
}

/// The typed config of a layered table.
fn typed(table: &toml::Table) -> Result<Config, toml::de::Error> {
    toml::Value::Table(table.clone()).try_into::<Config>()
}

impl Merger {
    fn new(defaults: toml::Table) -> Result<Self, ConfigError> {
        typed(&defaults).map_err(|e| ConfigError::Defaults {
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
            checked: defaults.clone(),
            defaults,
            origins,
            unchecked: Vec::new(),
        })
    }

    /// The typed config of everything set so far, or the error of the first value set that
    /// does not fit.
    fn config(&mut self) -> Result<Config, ConfigError> {
        match typed(&self.merged) {
            Ok(config) => {
                if !self.unchecked.is_empty() {
                    self.checked = self.merged.clone();
                    self.unchecked.clear();
                }
                Ok(config)
            }
            Err(whole) => {
                let mut table = self.checked.clone();
                for (path, value, at, key) in self.unchecked.drain(..) {
                    set_path(&mut table, &path, value);
                    if key.is_empty() {
                        continue;
                    }
                    if let Err(e) = typed(&table) {
                        return Err(ConfigError::InvalidValue {
                            at,
                            key,
                            message: e.message().to_string(),
                        });
                    }
                }
                Err(ConfigError::InvalidValue {
                    at: "merged configuration".to_string(),
                    key: "*".to_string(),
                    message: whole.message().to_string(),
                })
            }
        }
    }

    /// `err`, unless a value set before it does not fit: that error came first.
    fn after_checking(&mut self, err: ConfigError) -> ConfigError {
        match self.config() {
            Ok(_) => err,
            Err(earlier) => earlier,
        }
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
                    let table = toml::Value::Table(toml::Table::new());
                    set_path(&mut self.merged, path, table.clone());
                    // Replayed with the values, but not checked alone (it never was).
                    self.unchecked
                        .push((path.to_vec(), table, at.to_string(), String::new()));
                }
                Ok(())
            }
            Slot::Value(_) => Err(ConfigError::NotATable {
                at: at.to_string(),
                key: path.join("."),
            }),
        }
    }

    /// Sets one value, after checking the key exists; whether the value fits its type is
    /// checked with the others set since ([`Merger::config`]). `from_text` values (env,
    /// flags) that are strings are parsed as TOML scalars when the key expects a non-string.
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
            return Err(self.after_checking(ConfigError::UnknownKey {
                at,
                key,
                place: "(empty key part)".into(),
                hint: String::new(),
            }));
        }
        if let toml::Value::Table(table) = value {
            if let Err(e) = self.ensure_table(path, &at) {
                return Err(self.after_checking(e));
            }
            for (k, v) in table {
                let mut sub = path.to_vec();
                sub.push(k);
                self.apply(&sub, v, origin.clone(), from_text)?;
            }
            return Ok(());
        }
        let target = match self.slot(path, &at) {
            Ok(Slot::Value(target)) => target,
            Ok(Slot::Table) => return Err(self.after_checking(ConfigError::NotAValue { at, key })),
            Err(e) => return Err(self.after_checking(e)),
        };
        let value = coerce(value, target.as_ref(), from_text);
        set_path(&mut self.merged, path, value.clone());
        self.unchecked.push((path.to_vec(), value, at, key.clone()));
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

/// Integer → float where a float is expected; strings from env/flags parsed as TOML
/// scalars where the expected type is not a string and the parse fits.
pub(super) fn coerce(
    value: toml::Value,
    target: Option<&toml::Value>,
    from_text: bool,
) -> toml::Value {
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

pub(super) fn get_path<'a>(table: &'a toml::Table, path: &[String]) -> Option<&'a toml::Value> {
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

pub(super) fn flatten(
    prefix: &mut Vec<String>,
    value: &toml::Value,
    out: &mut BTreeMap<String, toml::Value>,
) {
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
