//! Unit tests of loading, layering, checks and suggestions.

use super::check::{closest, edit_distance};
use super::load::coerce;
use super::read::normalize_ollama_host;
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
    assert_eq!(c.r#loop, LoopParams::default());
    assert_eq!(c.memory, crate::engines::memory::MemoryParams::default());
    assert_eq!(
        c.embeddings,
        crate::engines::memory::EmbeddingParams::default()
    );
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

/// Values are type-checked together when the config is read, yet the error names the first
/// value that does not fit, where it was set, as if each had been checked when it was set:
/// a bad value ahead of good ones, of an unknown key, and of another bad one.
#[test]
fn the_first_value_that_does_not_fit_is_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(CONFIG_FILE_NAME);
    let first_bad = |body: &str| {
        std::fs::write(&path, body).unwrap();
        load(&sources(dir.path())).unwrap_err().to_string()
    };
    let at = |line: u32, key: &str| format!("{}:{line}: invalid value for '{key}'", path.display());
    let err = first_bad("[generation]\ntemperature = \"hot\"\ntop_p = 0.5\n");
    assert!(err.starts_with(&at(2, "generation.temperature")), "{err}");
    let err = first_bad("[generation]\ntemperature = \"hot\"\nbogus = 1\n");
    assert!(err.starts_with(&at(2, "generation.temperature")), "{err}");
    let err = first_bad("[generation]\ntop_p = 0.5\ntemperature = \"hot\"\nseed = \"x\"\n");
    assert!(err.starts_with(&at(3, "generation.temperature")), "{err}");
    // A flag that does not fit, after a file and an environment that do.
    std::fs::write(&path, "[generation]\ntop_p = 0.5\n").unwrap();
    let mut src = sources(dir.path());
    src.env = env(&[("GLASSBOX_GENERATION__TEMPERATURE", "0.3")]);
    src.flags = vec![FlagOverride {
        key: "generation.seed".into(),
        value: toml::Value::String("x".into()),
        flag: "--seed".into(),
    }];
    let err = load(&src).unwrap_err().to_string();
    assert!(err.contains("'generation.seed'"), "{err}");
    assert!(
        !err.contains("temperature") && !err.contains("top_p"),
        "{err}"
    );
}

#[test]
fn path_env_vars_are_skipped_and_unknown_ones_only_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let mut src = sources(dir.path());
    src.env = env(&[
        ("GLASSBOX_DATA_DIR", "/x"),
        ("GLASSBOX_CONFIG_DIR", "/y"),
        ("GLASSBOX_MODELS_DIR", "/z"),
        ("HOME", "/root"),
    ]);
    let loaded = load(&src).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    // Shells and wrappers set variables under our prefix: each is one warning line naming
    // it, with the closest known one when there is one, and the config still loads.
    let warned = |vars: &[(&str, &str)]| {
        let mut src = sources(dir.path());
        src.env = env(vars);
        let loaded = load(&src).unwrap_or_else(|e| panic!("{vars:?}: {e}"));
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
        loaded.warnings[0].clone()
    };
    let w = warned(&[("GLASSBOX_FOO", "1")]);
    assert!(
        w.starts_with("ignoring unknown environment variable GLASSBOX_FOO: "),
        "{w}"
    );
    let w = warned(&[("GLASSBOX_PROVIDR", "local")]);
    assert!(w.contains("did you mean GLASSBOX_PROVIDER?"), "{w}");
    let w = warned(&[("GLASSBOX_GENERAL__COLOUR", "red")]);
    assert_eq!(
        w,
        "ignoring env GLASSBOX_GENERAL__COLOUR: no setting 'colour' in [general]"
    );
    let w = warned(&[("GLASSBOX_NETWORK__MAX_RETIRES", "3")]);
    assert_eq!(
        w,
        "ignoring env GLASSBOX_NETWORK__MAX_RETIRES: no setting 'max_retires' in [network]; \
         did you mean 'max_retries'?"
    );
    // A known variable with a bad value stays an error.
    src.env = env(&[("GLASSBOX_NETWORK__MAX_RETRIES", "many")]);
    assert!(load(&src).is_err());
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
fn a_known_model_name_resolves_to_its_file_in_the_models_dir() {
    let models = Path::new("/models");
    let dir = tempfile::tempdir().unwrap();
    let defaults = load(&sources(dir.path())).unwrap().config.providers.local;
    let local = |p: &str| LocalConfig {
        model_path: PathBuf::from(p),
        ..defaults.clone()
    };
    assert_eq!(
        local("").resolved_model_path(models),
        crate::models::smollm2_path(models)
    );
    assert_eq!(
        local("smollm2").resolved_model_path(models),
        crate::models::smollm2_path(models)
    );
    assert_eq!(
        local("gemma3").resolved_model_path(models),
        PathBuf::from("/models/gemma-3-270m-q4_k_m.gguf")
    );
    assert_eq!(
        local("Gemma3").resolved_model_path(models),
        crate::models::gemma3_path(models)
    );
    // Anything else is a path, taken as given.
    for p in ["./gemma3", "gemma", "/m/gemma3", "gemma-3-270m-q4_k_m.gguf"] {
        assert_eq!(
            local(p).resolved_model_path(models),
            PathBuf::from(p),
            "{p}"
        );
    }

    // --model gemma3 with the local provider sets model_path to the name.
    let mut src = sources(dir.path());
    src.flags = vec![
        FlagOverride::new("general.provider", "local", "--provider"),
        FlagOverride::new(MODEL_KEY, "gemma3", "--model"),
    ];
    let loaded = load(&src).unwrap();
    assert_eq!(loaded.provider, ProviderKind::Local);
    assert_eq!(
        loaded.config.providers.local.resolved_model_path(models),
        crate::models::gemma3_path(models)
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

#[test]
fn the_loop_section_loads_from_file_and_env_and_is_checked() {
    use crate::engines::llm::loops::LoopAction;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(CONFIG_FILE_NAME);
    std::fs::write(&path, "[loop]\naction_local = \"warn\"\nmin_repeats = 6\n").unwrap();
    let mut src = sources(dir.path());
    src.env = env(&[("GLASSBOX_LOOP__ACTION_REMOTE", "stop")]);
    let c = load(&src).unwrap().config;
    assert_eq!(c.r#loop.action_local, LoopAction::Warn);
    assert_eq!(c.r#loop.action_remote, LoopAction::Stop);
    assert_eq!(c.r#loop.min_repeats, 6);
    assert_eq!(c.r#loop.action(true), LoopAction::Warn);
    std::fs::write(&path, "[loop]\naction_local = \"halt\"\n").unwrap();
    assert!(load(&sources(dir.path())).is_err());
    std::fs::write(&path, "[loop]\nmin_repeats = 1\n").unwrap();
    let err = load(&sources(dir.path())).unwrap_err().to_string();
    assert!(
        err.contains("invalid value for 'loop.min_repeats': must be 2 to 100"),
        "{err}"
    );
}

#[test]
fn the_knowledge_section_loads_and_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(CONFIG_FILE_NAME);
    let c = load(&sources(dir.path())).unwrap().config;
    assert_eq!(
        c.knowledge,
        crate::engines::knowledge::KnowledgeParams::default()
    );
    std::fs::write(&path, "[knowledge]\nchunk_chars = 800\ntop_k = 3\n").unwrap();
    let c = load(&sources(dir.path())).unwrap().config;
    assert_eq!((c.knowledge.chunk_chars, c.knowledge.top_k), (800, 3));
    for (toml, message) in [
        (
            "chunk_chars = 20",
            "'knowledge.chunk_chars': must be at least 50",
        ),
        (
            "overlap_chars = 500",
            "'knowledge.overlap_chars': must be less than",
        ),
        ("top_k = 0", "'knowledge.top_k': must be 1 to 50"),
        ("top_k = 51", "'knowledge.top_k': must be 1 to 50"),
    ] {
        std::fs::write(&path, format!("[knowledge]\n{toml}\n")).unwrap();
        let err = load(&sources(dir.path())).unwrap_err().to_string();
        assert!(err.contains(message), "{toml}: {err}");
    }
}

#[test]
fn the_research_section_loads_and_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(CONFIG_FILE_NAME);
    let c = load(&sources(dir.path())).unwrap().config;
    assert_eq!(
        c.research,
        crate::engines::research::ResearchParams::default()
    );
    std::fs::write(
        &path,
        "[research]\nmax_plan_revisions = 5\n[research.auditor]\ntemperature = 0.2\nmax_tokens = 300\n",
    )
    .unwrap();
    let c = load(&sources(dir.path())).unwrap().config;
    assert_eq!(c.research.max_plan_revisions, 5);
    assert_eq!(c.research.auditor.max_tokens, 300);
    for (toml, message) in [
        (
            "[research]\nmax_plan_revisions = 0",
            "'research.max_plan_revisions': must be 1 to 20",
        ),
        (
            "[research]\nmax_steps = 0",
            "'research.max_steps': must be 1 to 50",
        ),
        (
            "[research.synthesizer]\ntemperature = 3.0\nmax_tokens = 10",
            "'research.synthesizer.temperature': must be 0 to 2",
        ),
        ("[research]\nmax_plan_revision = 3", "max_plan_revision"),
    ] {
        std::fs::write(&path, format!("{toml}\n")).unwrap();
        let err = load(&sources(dir.path())).unwrap_err().to_string();
        assert!(err.contains(message), "{toml}: {err}");
    }
}

#[test]
fn the_diff_section_loads_and_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(CONFIG_FILE_NAME);
    let c = load(&sources(dir.path())).unwrap().config;
    assert_eq!(c.diff, crate::engines::diff::DiffParams::default());
    std::fs::write(
        &path,
        "[diff]\nmin_overlap = 0.5\n[diff.judge]\ntemperature = 0.3\nmax_tokens = 64\n",
    )
    .unwrap();
    let c = load(&sources(dir.path())).unwrap().config;
    assert_eq!((c.diff.min_overlap, c.diff.judge.max_tokens), (0.5, 64));
    for (toml, message) in [
        (
            "[diff]\nsame_similarity = 1.5",
            "'diff.same_similarity': must be 0 to 1",
        ),
        (
            "[diff]\nmax_claims = 0",
            "'diff.max_claims': must be 1 to 8",
        ),
        (
            "[diff]\ngap_penalty = -1",
            "'diff.gap_penalty': must be 0 or more",
        ),
        (
            "[diff.merge]\ntemperature = 0\nmax_tokens = 0",
            "'diff.merge.max_tokens': must be at least 1",
        ),
        ("[diff]\nmin_similarty = 0.3", "min_similarty"),
    ] {
        std::fs::write(&path, format!("{toml}\n")).unwrap();
        let err = load(&sources(dir.path())).unwrap_err().to_string();
        assert!(err.contains(message), "{toml}: {err}");
    }
}

#[test]
fn the_store_url_goes_flag_over_env_over_file_and_is_shown_without_password() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(CONFIG_FILE_NAME);
    assert_eq!(load(&sources(dir.path())).unwrap().config.store.url, "");
    std::fs::write(
        &path,
        "[store]\nurl = \"postgres://gb:file-pw@file-host/db\"\n",
    )
    .unwrap();
    let mut src = sources(dir.path());
    assert!(load(&src).unwrap().config.store.url.contains("file-host"));
    src.env = env(&[(
        "GLASSBOX_STORE__URL",
        "postgres://gb:generic-pw@generic-host/db",
    )]);
    assert!(
        load(&src)
            .unwrap()
            .config
            .store
            .url
            .contains("generic-host")
    );
    src.env = env(&[("GLASSBOX_STORE_URL", "postgres://gb:env-pw@env-host/db")]);
    assert!(load(&src).unwrap().config.store.url.contains("env-host"));
    src.flags = vec![FlagOverride::new(
        STORE_URL_KEY,
        "postgresql://gb:flag-pw@flag-host:5433/db?sslmode=disable",
        "--store",
    )];
    let loaded = load(&src).unwrap();
    assert_eq!(
        loaded.config.store.url,
        "postgresql://gb:flag-pw@flag-host:5433/db?sslmode=disable"
    );
    let text = loaded.render_text();
    let json = loaded.to_json().to_string();
    for shown in [&text, &json] {
        assert!(!shown.contains("-pw"), "{shown}");
        assert!(
            shown.contains("postgresql://gb@flag-host:5433/db"),
            "{shown}"
        );
    }
    assert!(text.contains("flag:--store"), "{text}");
}
