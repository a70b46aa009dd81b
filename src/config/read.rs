//! Reading the sources of one layer: a config file's values, each with the line of its
//! key, and the environment's variables as dotted keys.

use std::path::Path;

use super::load::{get_path, split_key};
use super::{BASE_URL_ENV_VARS, ConfigError, ENV_PREFIX, Origin, PATH_ENV_VARS, SHORT_ENV_VARS};

/// Default port of an Ollama server, added to an `OLLAMA_HOST` without one.
const OLLAMA_DEFAULT_PORT: u16 = 11434;

/// One value or table from a source, with its path and origin.
pub(super) struct Entry {
    pub(super) path: Vec<String>,
    pub(super) value: toml::Value,
    pub(super) origin: Origin,
}

/// The leaves (and tables, so empty ones still count) of a config file, in file order,
/// each with the line of its key.
pub(super) fn file_entries(path: &Path, text: &str) -> Result<Vec<Entry>, ConfigError> {
    let syntax = |e: toml::de::Error| ConfigError::Syntax {
        path: path.to_path_buf(),
        line: e
            .span()
            .map_or(1, |s| crate::toml_text::line_of(text, s.start)),
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
            line: crate::toml_text::line_of(text, offset),
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

/// The environment as (path, value, origin): well-known base-URL variables first, then
/// the short `GLASSBOX_*` names, then `GLASSBOX_<SECTION>__<KEY>`.
pub(super) fn env_entries(
    env: &[(String, String)],
    warnings: &mut Vec<String>,
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
            // Shells and wrappers set variables under our prefix too: a warning, not an error.
            let known: Vec<String> = SHORT_ENV_VARS
                .iter()
                .map(|(v, _)| *v)
                .chain(PATH_ENV_VARS.iter().copied())
                .map(str::to_string)
                .collect();
            let hint = super::check::closest(var, &known)
                .map(|k| format!("did you mean {k}? "))
                .unwrap_or_default();
            warnings.push(format!(
                "ignoring unknown environment variable {var}: {hint}(settings are GLASSBOX_<SECTION>__<KEY>, e.g. GLASSBOX_NETWORK__MAX_RETRIES)"
            ));
            continue;
        }
        let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
        generic.push((path, toml::Value::String(value.clone()), origin));
    }
    Ok(well_known.into_iter().chain(short).chain(generic).collect())
}

/// `OLLAMA_HOST` as Ollama reads it: `http://` when no scheme is given, and port 11434
/// when neither scheme nor port is.
pub(super) fn normalize_ollama_host(host: &str) -> String {
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
