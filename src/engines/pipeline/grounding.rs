//! Grounding (seed 003 §5.6): when the cortex asks for a search, or the question looks like
//! it needs current facts, 1–2 queries go to glassbox's own full-text search and memory (and
//! to a SearXNG instance when `[search] searxng_url` names one); the results, deduplicated
//! by URL, become a context block for the later layers and the run's `sources`. Nothing else
//! touches the network.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::artifacts::Classification;
use crate::engines::memory::{Filter, Memory, SearchMode};
use crate::store::{SessionId, Store};

/// `[search]`: where sources come from and how many.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// A SearXNG instance's base URL (its JSON API at `/search?format=json`); empty for none.
    pub searxng_url: String,
    /// Seed 003 §5.6: 1–2 search queries.
    pub max_queries: usize,
    /// Seed 003 §5.6: at most 4 results per query (from each source).
    pub max_results: usize,
    /// How long a SearXNG request may take.
    pub timeout_ms: u64,
}

impl Default for SearchParams {
    fn default() -> Self {
        Self {
            searxng_url: String::new(),
            max_queries: 2,
            max_results: 4,
            timeout_ms: 10_000,
        }
    }
}

/// One source a pipeline's answer may lean on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub title: String,
    /// A web URL, or `glassbox:session/<id>#<node>` / `glassbox:memory/<id>` for glassbox's
    /// own.
    pub url: String,
    pub snippet: String,
    /// `sessions`, `memory` or `searxng`.
    pub origin: String,
}

/// Seed 003 §5.6 `shouldSearch()`: temporal, factual, verification and entity patterns.
static SEARCH_PATTERNS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(latest|recent|current|today|2024|2025|2026|who is|what is|price of|cost of|is it true|fact check|verify|company|stock|weather|election)\b",
    )
    .unwrap_or_else(|e| panic!("search pattern: {e}"))
});

/// Whether a question gets a search: the cortex asked for one, or the heuristic matches
/// outside the no-search domains.
pub fn should_search(question: &str, c: &Classification) -> bool {
    c.needs_web_search || (c.domain.searches() && SEARCH_PATTERNS.is_match(question))
}

/// The queries to run: the cortex's, else the question's first line; at most
/// `max_queries`, each once.
pub fn queries(question: &str, c: &Classification, p: &SearchParams) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out: Vec<String> = c
        .search_queries
        .iter()
        .map(|q| q.trim().to_string())
        .filter(|q| !q.is_empty() && seen.insert(q.to_lowercase()))
        .take(p.max_queries.max(1))
        .collect();
    if out.is_empty() {
        let line = question
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        out.push(line.trim().chars().take(200).collect());
    }
    out
}

/// The context block later layers see: one numbered entry per source.
pub fn context(sources: &[Source]) -> String {
    sources
        .iter()
        .enumerate()
        .map(|(i, s)| format!("[{}] {} ({})\n{}", i + 1, s.title, s.url, s.snippet))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a search found, and what could not be asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Found {
    pub sources: Vec<Source>,
    pub failures: Vec<String>,
}

/// Finds sources in the store, memory and (when configured) SearXNG.
#[derive(Clone)]
pub struct Grounder {
    pub store: Store,
    pub memory: Option<Arc<Memory>>,
    pub params: SearchParams,
    client: Option<reqwest::Client>,
}

impl Grounder {
    pub fn new(store: Store, memory: Option<Arc<Memory>>, params: SearchParams) -> Self {
        let client = (!params.searxng_url.trim().is_empty()).then(|| {
            crate::engines::llm::http::install_crypto_provider();
            reqwest::Client::builder()
                .timeout(Duration::from_millis(params.timeout_ms))
                .build()
                .unwrap_or_default()
        });
        Self {
            store,
            memory,
            params,
            client,
        }
    }

    /// Runs every query against every source; results deduplicated by URL, in the order
    /// found. `exclude` is the asking session (its own question would match itself).
    pub async fn search(&self, queries: &[String], exclude: Option<SessionId>) -> Found {
        let mut found = Found::default();
        let mut seen = HashSet::new();
        let mut add = |found: &mut Found, list: Vec<Source>| {
            for s in list {
                if seen.insert(s.url.clone()) {
                    found.sources.push(s);
                }
            }
        };
        for q in queries {
            let local = {
                let (store, memory, q, n) = (
                    self.store.clone(),
                    self.memory.clone(),
                    q.clone(),
                    self.params.max_results,
                );
                tokio::task::spawn_blocking(move || {
                    local_sources(&store, memory.as_deref(), &q, n, exclude)
                })
                .await
                .unwrap_or_else(|e| (Vec::new(), vec![format!("local search failed: {e}")]))
            };
            add(&mut found, local.0);
            found.failures.extend(local.1);
            if let Some(client) = &self.client {
                match searxng(client, &self.params, q).await {
                    Ok(list) => add(&mut found, list),
                    Err(why) => found.failures.push(why),
                }
            }
        }
        found
    }
}

/// Hits from the store's full-text search (other sessions' answers and thinking) and from
/// memory.
fn local_sources(
    store: &Store,
    memory: Option<&Memory>,
    q: &str,
    n: usize,
    exclude: Option<SessionId>,
) -> (Vec<Source>, Vec<String>) {
    let mut out = Vec::new();
    let mut failures = Vec::new();
    match store.search(q, None, n * 4) {
        Ok(hits) => {
            for h in hits
                .into_iter()
                .filter(|h| Some(h.session) != exclude)
                .take(n)
            {
                let title = store
                    .session(h.session)
                    .ok()
                    .flatten()
                    .map_or_else(|| "session".to_string(), |s| s.title);
                out.push(Source {
                    title,
                    url: format!("glassbox:session/{}#{}", h.session, h.node),
                    snippet: h.snippet,
                    origin: "sessions".into(),
                });
            }
        }
        Err(e) => failures.push(format!("session search failed: {e}")),
    }
    if let Some(m) = memory {
        match m.find(q, &[], n, SearchMode::Hybrid, Filter::default()) {
            Ok(hits) => out.extend(hits.into_iter().map(|h| Source {
                title: h.entry.content.chars().take(60).collect(),
                url: format!("glassbox:memory/{}", h.entry.id),
                snippet: h.entry.content.chars().take(300).collect(),
                origin: "memory".into(),
            })),
            Err(e) => failures.push(format!("memory search failed: {e}")),
        }
    }
    (out, failures)
}

/// One query against SearXNG's JSON API.
pub(crate) async fn searxng(
    client: &reqwest::Client,
    p: &SearchParams,
    q: &str,
) -> Result<Vec<Source>, String> {
    let base = p.searxng_url.trim_end_matches('/');
    let url =
        reqwest::Url::parse_with_params(&format!("{base}/search"), &[("q", q), ("format", "json")])
            .map_err(|e| format!("SearXNG at {base}: bad URL ({e})"))?;
    let resp = client.get(url).send().await.map_err(|e| {
        format!(
            "SearXNG at {base}: {}",
            crate::engines::llm::http::error_chain(&e)
        )
    })?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("SearXNG at {base}: HTTP {}", status.as_u16()));
    }
    let body: Value = resp
        .json()
        .await
        .map_err(|e| format!("SearXNG at {base}: the answer is not JSON ({e})"))?;
    let results = body["results"]
        .as_array()
        .ok_or_else(|| format!("SearXNG at {base}: the answer has no results list"))?;
    Ok(results
        .iter()
        .filter_map(|r| {
            let url = r["url"].as_str()?.to_string();
            Some(Source {
                title: r["title"].as_str().unwrap_or(&url).to_string(),
                snippet: r["content"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(300)
                    .collect(),
                url,
                origin: "searxng".into(),
            })
        })
        .take(p.max_results)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::pipeline::artifacts::Domain;

    #[test]
    fn the_heuristic_searches_for_current_facts_but_not_in_no_search_domains() {
        let general = Classification::default();
        assert!(should_search("What is the latest Rust release?", &general));
        assert!(should_search(
            "Is it true that stock prices fell?",
            &general
        ));
        assert!(!should_search("Should I rent or buy a home?", &general));
        let math = Classification {
            domain: Domain::Math,
            ..Default::default()
        };
        assert!(!should_search(
            "What is the latest bound on twin primes?",
            &math
        ));
        let asked = Classification {
            domain: Domain::Math,
            needs_web_search: true,
            ..Default::default()
        };
        assert!(should_search("anything", &asked));
    }

    #[test]
    fn queries_come_from_the_cortex_else_the_question() {
        let p = SearchParams::default();
        let c = Classification {
            search_queries: vec!["a".into(), "A".into(), " b ".into(), "c".into()],
            ..Default::default()
        };
        assert_eq!(queries("q", &c, &p), vec!["a", "b"]);
        assert_eq!(
            queries("\nfirst line\nsecond", &Classification::default(), &p),
            vec!["first line"]
        );
    }
}
