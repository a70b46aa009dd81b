//! Config loading through the public API: layering, provenance, profiles and the errors a
//! user sees for bad files, env vars and flags.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use glassbox::config::{
    ConfigError, ConfigSources, FlagOverride, Origin, ProviderKind, ThinkingStyle, load,
};
use glassbox::engines::llm::Effort;

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

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn unknown_key_in_file_names_file_line_and_section() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(
        dir.path(),
        "# my settings\n[general]\ntheme = \"light\"\n\n[network]\nconnect_timeout_secs = 5\nmax_retires = 3\n",
    );
    let err = load(&sources(dir.path())).unwrap_err();
    assert!(matches!(err, ConfigError::UnknownKey { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:7: unknown key 'max_retires' in [network]; did you mean 'max_retries'?",
            path.display()
        )
    );
}

#[test]
fn unknown_key_in_a_profile_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(
        dir.path(),
        "[profiles.fast]\nprovider = \"openai\"\nmodle = \"x\"\n",
    );
    let err = load(&sources(dir.path())).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}:3: unknown key 'modle' in [profiles.fast]; did you mean 'model'?",
            path.display()
        )
    );
}

#[test]
fn wrong_type_in_file_names_key_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), "[network]\nmax_retries = \"seven\"\n");
    let err = load(&sources(dir.path())).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, ConfigError::InvalidValue { ref key, .. } if key == "network.max_retries")
    );
    assert!(
        msg.starts_with(&format!(
            "{}:2: invalid value for 'network.max_retries': ",
            path.display()
        )),
        "{msg}"
    );
    assert!(msg.contains("seven"), "{msg}");

    let path = write_config(dir.path(), "[general]\n\nprovider = \"gemini\"\n");
    let msg = load(&sources(dir.path())).unwrap_err().to_string();
    assert!(
        msg.starts_with(&format!(
            "{}:3: invalid value for 'general.provider': ",
            path.display()
        )),
        "{msg}"
    );
    assert!(msg.contains("gemini") && msg.contains("anthropic"), "{msg}");
}

#[test]
fn a_float_key_accepts_an_integer() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "[generation]\ntemperature = 1\n");
    let loaded = load(&sources(dir.path())).unwrap();
    assert_eq!(loaded.config.generation.temperature, 1.0);
}

#[test]
fn precedence_is_default_then_file_then_env_then_flag() {
    let dir = tempfile::tempdir().unwrap();
    let key = "network.max_retries";

    // Default only.
    let loaded = load(&sources(dir.path())).unwrap();
    assert_eq!(loaded.config.network.max_retries, 4);
    assert_eq!(loaded.origins[key], Origin::Default);
    assert_eq!(loaded.origins[key].to_string(), "default");

    // File over default.
    let path = write_config(dir.path(), "[network]\n# retries\nmax_retries = 5\n");
    let mut src = sources(dir.path());
    let loaded = load(&src).unwrap();
    assert_eq!(loaded.config.network.max_retries, 5);
    assert_eq!(
        loaded.origins[key],
        Origin::File {
            path: path.clone(),
            line: 3
        }
    );
    assert_eq!(
        loaded.origins[key].to_string(),
        format!("file:{}:3", path.display())
    );
    assert_eq!(loaded.files, vec![path.clone()]);
    // Keys the file does not mention keep their default origin.
    assert_eq!(loaded.origins["network.backoff_base_ms"], Origin::Default);

    // Env over file.
    src.env = env(&[("GLASSBOX_NETWORK__MAX_RETRIES", "6")]);
    let loaded = load(&src).unwrap();
    assert_eq!(loaded.config.network.max_retries, 6);
    assert_eq!(
        loaded.origins[key].to_string(),
        "env:GLASSBOX_NETWORK__MAX_RETRIES"
    );

    // Flag over env.
    src.flags = vec![FlagOverride::new(key, 7, "--max-retries")];
    let loaded = load(&src).unwrap();
    assert_eq!(loaded.config.network.max_retries, 7);
    assert_eq!(loaded.origins[key].to_string(), "flag:--max-retries");
    let text = loaded.render_text();
    assert!(
        text.contains(&format!("# config files: {}", path.display())),
        "{text}"
    );
    let json = loaded.to_json();
    assert_eq!(json["keys"][key]["value"], 7);
    assert_eq!(json["keys"][key]["origin"], "flag:--max-retries");
}

#[test]
fn profile_overlays_provider_model_base_url_and_effort() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(
        dir.path(),
        "[general]\nprofile = \"fast\"\n\n\
         [profiles.fast]\nprovider = \"openai\"\nmodel = \"gpt-fast\"\n\
         base_url = \"http://127.0.0.1:8000/v1\"\neffort = \"low\"\n\n\
         [profiles.deep]\nprovider = \"anthropic\"\neffort = \"max\"\n\n\
         [profiles.empty]\n",
    );
    let mut src = sources(dir.path());
    let loaded = load(&src).unwrap();
    let c = &loaded.config;
    assert_eq!(c.general.profile, "fast");
    assert_eq!(c.general.provider, ProviderKind::OpenAi);
    assert_eq!(loaded.provider, ProviderKind::OpenAi);
    assert_eq!(c.providers.openai.model, "gpt-fast");
    assert_eq!(c.providers.openai.base_url, "http://127.0.0.1:8000/v1");
    assert_eq!(c.effort.default, Effort::Low);
    for k in [
        "general.provider",
        "providers.openai.model",
        "providers.openai.base_url",
        "effort.default",
    ] {
        assert_eq!(loaded.origins[k].to_string(), "profile:fast", "{k}");
    }
    assert_eq!(
        loaded.origins["general.profile"],
        Origin::File {
            path: path.clone(),
            line: 2
        }
    );
    // The profile definitions themselves are config values with file origins.
    assert_eq!(
        loaded.origins["profiles.deep.effort"],
        Origin::File {
            path: path.clone(),
            line: 12
        }
    );
    assert!(loaded.config.profiles.contains_key("empty"));

    // --profile picks another one; the profile beats env, a flag beats the profile.
    src.profile = Some("deep".into());
    src.env = env(&[("GLASSBOX_EFFORT", "high"), ("GLASSBOX_PROVIDER", "ollama")]);
    src.flags = vec![FlagOverride::new("model", "claude-x", "--model")];
    let loaded = load(&src).unwrap();
    let c = &loaded.config;
    assert_eq!(c.general.profile, "deep");
    assert_eq!(
        loaded.origins["general.profile"].to_string(),
        "flag:--profile"
    );
    assert_eq!(c.general.provider, ProviderKind::Anthropic);
    assert_eq!(c.effort.default, Effort::Max);
    assert_eq!(c.providers.anthropic.model, "claude-x");
    assert_eq!(
        loaded.origins["providers.anthropic.model"].to_string(),
        "flag:--model"
    );
    assert_eq!(c.providers.openai.model, "gpt-4o-mini");

    src.flags = vec![FlagOverride::new("effort.default", "medium", "--effort")];
    let loaded = load(&src).unwrap();
    assert_eq!(loaded.config.effort.default, Effort::Medium);
    assert_eq!(
        loaded.origins["effort.default"].to_string(),
        "flag:--effort"
    );

    // An empty profile name means none.
    src.profile = Some(String::new());
    src.flags.clear();
    let loaded = load(&src).unwrap();
    assert_eq!(loaded.config.general.provider, ProviderKind::Ollama);
    assert_eq!(loaded.config.effort.default, Effort::High);
}

#[test]
fn unknown_profile_names_it_and_lists_the_defined_ones() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        "[profiles.fast]\neffort = \"low\"\n[profiles.deep]\neffort = \"max\"\n",
    );
    let mut src = sources(dir.path());
    src.profile = Some("fats".into());
    let err = load(&src).unwrap_err();
    assert!(matches!(err, ConfigError::UnknownProfile { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "unknown profile 'fats' (selected by flag --profile); defined profiles: deep, fast"
    );

    let empty = tempfile::tempdir().unwrap();
    let mut src = sources(empty.path());
    src.env = env(&[("GLASSBOX_PROFILE", "work")]);
    let err = load(&src).unwrap_err().to_string();
    assert!(
        err.starts_with("unknown profile 'work' (selected by env GLASSBOX_PROFILE); no profiles"),
        "{err}"
    );
}

#[test]
fn env_generic_and_short_names_map_to_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mut src = sources(dir.path());
    src.env = env(&[
        ("GLASSBOX_PROVIDERS__LOCAL__THREADS", "2"),
        ("GLASSBOX_PROVIDERS__LOCAL__THINKING_PASS", "false"),
        ("GLASSBOX_PROVIDERS__ANTHROPIC__THINKING", "adaptive"),
        ("GLASSBOX_PROVIDERS__OPENAI__MODEL", "4"),
        ("GLASSBOX_GENERATION__TEMPERATURE", "0.7"),
        ("GLASSBOX_GENERATION__TOP_P", "1"),
        ("GLASSBOX_GENERAL__LOG_LEVEL", "glassbox=debug"),
        ("GLASSBOX_PROFILES__ENVPROF__MODEL", "m"),
        ("GLASSBOX_PROVIDER", "ollama"),
        ("GLASSBOX_MODEL", "llama3"),
        ("GLASSBOX_EFFORT", "high"),
        ("GLASSBOX_THEME", "light"),
        ("GLASSBOX_DATA_DIR", "/somewhere"),
        ("PATH", "/usr/bin"),
    ]);
    let loaded = load(&src).unwrap();
    let c = &loaded.config;
    assert_eq!(c.providers.local.threads, 2);
    assert!(!c.providers.local.thinking_pass);
    assert_eq!(c.providers.anthropic.thinking, ThinkingStyle::Adaptive);
    assert_eq!(c.providers.openai.model, "4");
    assert_eq!(c.generation.temperature, 0.7);
    assert_eq!(c.generation.top_p, 1.0);
    assert_eq!(c.general.log_level, "glassbox=debug");
    assert_eq!(c.profiles["envprof"].model.as_deref(), Some("m"));
    assert_eq!(c.general.provider, ProviderKind::Ollama);
    assert_eq!(c.providers.ollama.model, "llama3");
    assert_eq!(c.effort.default, Effort::High);
    assert_eq!(c.general.theme, "light");
    assert_eq!(
        loaded.origins["providers.local.threads"],
        Origin::Env {
            var: "GLASSBOX_PROVIDERS__LOCAL__THREADS".into()
        }
    );
    assert_eq!(
        loaded.origins["providers.ollama.model"].to_string(),
        "env:GLASSBOX_MODEL"
    );
    assert_eq!(
        loaded.origins["effort.default"].to_string(),
        "env:GLASSBOX_EFFORT"
    );
}

#[test]
fn bad_env_values_are_errors_and_unknown_names_warnings_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let mut src = sources(dir.path());
    src.env = env(&[("GLASSBOX_PROVIDERS__LOCAL__THREADS", "many")]);
    let err = load(&src).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "env GLASSBOX_PROVIDERS__LOCAL__THREADS: invalid value for 'providers.local.threads': "
        ),
        "{err}"
    );
    src.env = env(&[("GLASSBOX_EFFORT", "extreme")]);
    let err = load(&src).unwrap_err().to_string();
    assert!(
        err.starts_with("env GLASSBOX_EFFORT: invalid value for 'effort.default': "),
        "{err}"
    );
    // Unknown variables under the prefix are warned about, not fatal.
    src.env = env(&[("GLASSBOX_VERBOSE", "1")]);
    let loaded = load(&src).unwrap();
    assert!(loaded.warnings[0].contains("GLASSBOX_VERBOSE"));
    src.env = env(&[("GLASSBOX_NETWORK", "1")]);
    assert!(load(&src).unwrap().warnings[0].contains("GLASSBOX_NETWORK"));
    src.env = env(&[("GLASSBOX_NETWORK__", "1")]);
    assert!(load(&src).unwrap().warnings[0].starts_with("ignoring env GLASSBOX_NETWORK__:"));
}

#[test]
fn flags_with_unknown_keys_or_bad_values_name_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let mut src = sources(dir.path());
    src.flags = vec![FlagOverride::new("general.providr", "openai", "--providr")];
    let err = load(&src).unwrap_err().to_string();
    assert_eq!(
        err,
        "flag --providr: unknown key 'providr' in [general]; did you mean 'provider'?"
    );
    src.flags = vec![FlagOverride::new("generation.seed", "abc", "--seed")];
    let err = load(&src).unwrap_err().to_string();
    assert!(
        err.starts_with("flag --seed: invalid value for 'generation.seed': "),
        "{err}"
    );
    // A string flag value is parsed where the key expects a number.
    src.flags = vec![FlagOverride::new("generation.seed", "7", "--seed")];
    assert_eq!(load(&src).unwrap().config.generation.seed, 7);
}

#[test]
fn explicit_config_file_must_exist_and_replaces_the_default_location() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "[general]\ntheme = \"light\"\n");
    let mut src = sources(dir.path());
    let missing = dir.path().join("nope.toml");
    src.explicit_file = Some(missing.clone());
    let err = load(&src).unwrap_err();
    assert!(matches!(err, ConfigError::MissingFile { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("config file {} does not exist", missing.display())
    );

    let other = dir.path().join("other.toml");
    std::fs::write(&other, "[general]\ntheme = \"high-contrast\"\n").unwrap();
    src.explicit_file = Some(other.clone());
    let loaded = load(&src).unwrap();
    assert_eq!(loaded.config.general.theme, "high-contrast");
    assert_eq!(loaded.files, vec![other]);
}

#[test]
fn process_env_snapshot_keeps_only_relevant_variables() {
    let src = ConfigSources::from_process_env(
        None,
        PathBuf::from("/cfg"),
        vec![FlagOverride::new("general.theme", "light", "--theme")],
        Some("p".into()),
    );
    assert_eq!(src.config_dir, PathBuf::from("/cfg"));
    assert_eq!(src.profile.as_deref(), Some("p"));
    assert_eq!(src.flags.len(), 1);
    assert!(src.env.iter().all(|(k, _)| k.starts_with("GLASSBOX_")
        || k.ends_with("_BASE_URL")
        || k == "OLLAMA_HOST"
        || k.ends_with("_API_KEY")));
    assert!(
        src.env
            .iter()
            .all(|(k, v)| !k.ends_with("_API_KEY") || v == "(set)")
    );
}
