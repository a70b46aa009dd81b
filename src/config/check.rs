//! The checks the types cannot express (ranges, URLs, non-empty names), and the
//! "did you mean" suggestion for an unknown key.

use super::{Config, ConfigError};

/// Semantic checks the types cannot express, as (key, message).
pub(super) fn check_values(config: &Config) -> Vec<(String, String)> {
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
    let pl = &config.pipeline;
    check(
        pl.escalation_confidence <= 100,
        "pipeline.escalation_confidence",
        format!("must be 0 to 100, got {}", pl.escalation_confidence),
    );
    check(
        pl.instant_confidence <= 100,
        "pipeline.instant_confidence",
        format!("must be 0 to 100, got {}", pl.instant_confidence),
    );
    check(
        pl.repair_retries <= 5,
        "pipeline.repair_retries",
        format!("must be 0 to 5, got {}", pl.repair_retries),
    );
    check(
        pl.input_chars > 0,
        "pipeline.input_chars",
        "must be at least 1".into(),
    );
    for layer in crate::engines::pipeline::Layer::ALL {
        let s = pl.layers.get(layer);
        let key = format!("pipeline.layers.{}", layer.as_str());
        check(
            s.temperature.is_finite() && (0.0..=2.0).contains(&s.temperature),
            &format!("{key}.temperature"),
            format!("must be in [0, 2], got {}", s.temperature),
        );
        check(
            s.max_tokens > 0,
            &format!("{key}.max_tokens"),
            "must be at least 1".into(),
        );
    }
    let search = &config.search;
    check(
        (1..=2).contains(&search.max_queries),
        "search.max_queries",
        format!("must be 1 or 2, got {}", search.max_queries),
    );
    check(
        (1..=20).contains(&search.max_results),
        "search.max_results",
        format!("must be 1 to 20, got {}", search.max_results),
    );
    check(
        search.searxng_url.is_empty()
            || search.searxng_url.starts_with("http://")
            || search.searxng_url.starts_with("https://"),
        "search.searxng_url",
        format!(
            "must start with http:// or https://, got {:?}",
            search.searxng_url
        ),
    );
    let kb = &config.knowledge;
    check(
        kb.chunk_chars >= 50,
        "knowledge.chunk_chars",
        format!("must be at least 50, got {}", kb.chunk_chars),
    );
    check(
        kb.overlap_chars < kb.chunk_chars,
        "knowledge.overlap_chars",
        format!(
            "must be less than knowledge.chunk_chars ({}), got {}",
            kb.chunk_chars, kb.overlap_chars
        ),
    );
    check(
        (1..=50).contains(&kb.top_k),
        "knowledge.top_k",
        format!("must be 1 to 50, got {}", kb.top_k),
    );
    check(
        kb.max_file_bytes > 0,
        "knowledge.max_file_bytes",
        "must be at least 1".into(),
    );
    let r = &config.research;
    check(
        (1..=20).contains(&r.max_plan_revisions),
        "research.max_plan_revisions",
        format!("must be 1 to 20, got {}", r.max_plan_revisions),
    );
    check(
        r.reasoning_entries >= 1,
        "research.reasoning_entries",
        "must be at least 1".into(),
    );
    check(
        (1..=50).contains(&r.max_steps),
        "research.max_steps",
        format!("must be 1 to 50, got {}", r.max_steps),
    );
    check(
        (1..=50).contains(&r.max_results),
        "research.max_results",
        format!("must be 1 to 50, got {}", r.max_results),
    );
    check(
        r.tool_output_chars >= 100,
        "research.tool_output_chars",
        format!("must be at least 100, got {}", r.tool_output_chars),
    );
    check(
        r.fetch_timeout_ms > 0,
        "research.fetch_timeout_ms",
        "must be at least 1".into(),
    );
    let d = &config.diff;
    for (name, v) in [
        ("min_similarity", d.min_similarity),
        ("min_overlap", d.min_overlap),
        ("same_similarity", d.same_similarity),
    ] {
        check(
            (0.0..=1.0).contains(&v),
            &format!("diff.{name}"),
            format!("must be 0 to 1, got {v}"),
        );
    }
    check(
        d.gap_penalty.is_finite() && d.gap_penalty >= 0.0,
        "diff.gap_penalty",
        format!("must be 0 or more, got {}", d.gap_penalty),
    );
    check(
        d.step_chars >= 20,
        "diff.step_chars",
        format!("must be at least 20, got {}", d.step_chars),
    );
    check(
        (1..=8).contains(&d.max_claims),
        "diff.max_claims",
        format!("must be 1 to 8, got {}", d.max_claims),
    );
    // Every model stage of research and diff: (its key, temperature, max_tokens).
    for (stage, temperature, max_tokens) in [
        (
            "research.thinker",
            r.thinker.temperature,
            r.thinker.max_tokens,
        ),
        (
            "research.auditor",
            r.auditor.temperature,
            r.auditor.max_tokens,
        ),
        (
            "research.synthesizer",
            r.synthesizer.temperature,
            r.synthesizer.max_tokens,
        ),
        (
            "diff.judge",
            f64::from(d.judge.temperature),
            d.judge.max_tokens,
        ),
        (
            "diff.merge",
            f64::from(d.merge.temperature),
            d.merge.max_tokens,
        ),
    ] {
        check(
            (0.0..=2.0).contains(&temperature),
            &format!("{stage}.temperature"),
            format!("must be 0 to 2, got {temperature}"),
        );
        check(
            max_tokens > 0,
            &format!("{stage}.max_tokens"),
            "must be at least 1".into(),
        );
    }
    let nous = &config.memory.nous;
    let w = &nous.weights;
    for (name, v) in [
        ("text", w.text),
        ("concept", w.concept),
        ("vector", w.vector),
        ("graph", w.graph),
        ("reinforcement", w.reinforcement),
        ("temporal", w.temporal),
        ("recency", w.recency),
    ] {
        check(
            v.is_finite() && v >= 0.0,
            &format!("memory.nous.weights.{name}"),
            format!("must be 0 or more, got {v}"),
        );
    }
    check(
        nous.recency_half_life_days > 0.0,
        "memory.nous.recency_half_life_days",
        format!("must be more than 0, got {}", nous.recency_half_life_days),
    );
    let learn = &config.memory.learn;
    for (name, v) in [
        ("archive_below", learn.archive_below),
        ("duplicate_jaccard", learn.duplicate_jaccard),
        ("paraphrase_cosine", learn.paraphrase_cosine),
        ("relearning_jaccard", learn.relearning_jaccard),
        ("contradiction_concepts", learn.contradiction_concepts),
        ("contradiction_confidence", learn.contradiction_confidence),
        ("contradiction_multiplier", learn.contradiction_multiplier),
    ] {
        check(
            (0.0..=1.0).contains(&v),
            &format!("memory.learn.{name}"),
            format!("must be in [0, 1], got {v}"),
        );
    }
    check(
        learn.min_concepts >= 1 && learn.min_concepts <= learn.max_concepts,
        "memory.learn.min_concepts",
        format!(
            "must be at least 1 and at most max_concepts ({}), got {}",
            learn.max_concepts, learn.min_concepts
        ),
    );
    check(
        learn.max_attempts >= 1,
        "memory.learn.max_attempts",
        "must be at least 1".into(),
    );
    check(
        learn.hook_timeout_ms >= 1,
        "memory.learn.hook_timeout_ms",
        "must be at least 1".into(),
    );
    let lp = &config.r#loop;
    check(
        (2..=100).contains(&lp.min_repeats),
        "loop.min_repeats",
        format!("must be 2 to 100, got {}", lp.min_repeats),
    );
    check(
        (1..=100).contains(&lp.max_period_lines),
        "loop.max_period_lines",
        format!("must be 1 to 100, got {}", lp.max_period_lines),
    );
    check(
        (1..=1000).contains(&lp.max_period_words),
        "loop.max_period_words",
        format!("must be 1 to 1000, got {}", lp.max_period_words),
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

pub(super) fn unknown_key(at: &str, path: &[String], known: Vec<String>) -> ConfigError {
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
pub(super) fn closest(key: &str, known: &[String]) -> Option<String> {
    known
        .iter()
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, k)| *d <= (k.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.clone())
}

/// Edit distance counting insertions, deletions, substitutions and adjacent swaps.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
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
