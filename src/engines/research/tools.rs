//! The tools a plan step may call. Each returns the text the step keeps and the sources it
//! found (numbered later, for the report's citations). The network tools run only when the
//! run allows the network; the auditor has rejected any plan that uses them otherwise.

use std::sync::Arc;
use std::time::Duration;

use super::params::ResearchParams;
use super::policy::is_web_url;
use super::state::{Citation, CitationKind, Tool};
use crate::engines::knowledge::Knowledge;
use crate::engines::memory::{Filter, Memory, SearchMode};
use crate::engines::pipeline::SearchParams;
use crate::store::{NodeType, SessionId, Store};

/// What one tool call found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Found {
    /// The step's output: one numbered line per result.
    pub text: String,
    pub sources: Vec<Citation>,
}

/// Everything the tools reach.
#[derive(Clone)]
pub struct Tools {
    pub store: Store,
    pub knowledge: Option<Arc<Knowledge>>,
    /// How many chunks `knowledge_search` returns (`[knowledge] top_k`).
    pub knowledge_k: usize,
    pub memory: Option<Arc<Memory>>,
    /// Where `web_search` asks (`[search] searxng_url`).
    pub search: SearchParams,
    client: reqwest::Client,
}

impl Tools {
    pub fn new(
        store: Store,
        knowledge: Option<Arc<Knowledge>>,
        knowledge_k: usize,
        memory: Option<Arc<Memory>>,
        search: SearchParams,
        params: &ResearchParams,
    ) -> Self {
        crate::engines::llm::http::install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(params.fetch_timeout_ms))
            .build()
            .unwrap_or_default();
        Self {
            store,
            knowledge,
            knowledge_k,
            memory,
            search,
            client,
        }
    }

    /// Runs `tool` with `input`. `exclude` is the research run's own session. `Err` says why
    /// the tool failed, in one line.
    pub async fn run(
        &self,
        tool: Tool,
        input: &str,
        params: &ResearchParams,
        exclude: SessionId,
    ) -> Result<Found, String> {
        if tool.network() && !params.allow_network {
            return Err(format!(
                "{tool} needs the network, and [research] allow_network is false"
            ));
        }
        let input = input.trim().to_string();
        let n = params.max_results;
        let found = match tool {
            Tool::KnowledgeSearch => {
                let k = self.knowledge.clone().ok_or(
                    "there is no knowledge base to search (add documents with `glassbox knowledge add`)",
                )?;
                let top = self.knowledge_k;
                blocking(move || knowledge(&k, &input, top)).await?
            }
            Tool::SessionSearch => {
                let store = self.store.clone();
                blocking(move || sessions(&store, &input, n, exclude)).await?
            }
            Tool::MemorySearch => {
                let m = self
                    .memory
                    .clone()
                    .ok_or("memory is not available to this run")?;
                blocking(move || memory(&m, &input, n)).await?
            }
            Tool::WebSearch => self.web_search(&input, n).await?,
            Tool::FetchUrl => self.fetch(&input).await?,
        };
        Ok(Found {
            text: cap(&found.text, params.tool_output_chars),
            sources: found.sources,
        })
    }

    async fn web_search(&self, q: &str, n: usize) -> Result<Found, String> {
        if self.search.searxng_url.trim().is_empty() {
            return Err(
                "web_search needs a SearXNG instance: set [search] searxng_url".to_string(),
            );
        }
        let mut p = self.search.clone();
        p.max_results = n;
        let list = crate::engines::pipeline::searxng(&self.client, &p, q).await?;
        let sources = list
            .into_iter()
            .map(|s| source(CitationKind::Url, s.url, None, s.title, s.snippet))
            .collect();
        Ok(listing(sources))
    }

    async fn fetch(&self, url: &str) -> Result<Found, String> {
        if !is_web_url(url) {
            return Err(format!("{url:?} is not an http(s) URL"));
        }
        let resp = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| format!("{url}: {}", crate::engines::llm::http::error_chain(&e)))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("{url}: HTTP {}", status.as_u16()));
        }
        let html = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.contains("html"));
        let body = resp
            .text()
            .await
            .map_err(|e| format!("{url}: the body could not be read ({e})"))?;
        let text = if html {
            html2text::from_read(body.as_bytes(), 100)
                .map_err(|e| format!("{url}: the page could not be read as HTML ({e})"))?
        } else {
            body
        };
        let text = text.trim().to_string();
        let title = text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or(url)
            .trim()
            .chars()
            .take(80)
            .collect();
        Ok(listing(vec![source(
            CitationKind::Url,
            url.to_string(),
            None,
            title,
            text,
        )]))
    }
}

/// Runs a synchronous search on the blocking pool.
async fn blocking<F>(f: F) -> Result<Found, String>
where
    F: FnOnce() -> Result<Found, String> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("the tool stopped: {e}"))?
}

fn knowledge(k: &Knowledge, q: &str, top: usize) -> Result<Found, String> {
    let hits = k.search(q, top).map_err(|e| e.to_string())?;
    Ok(listing(
        hits.into_iter()
            .map(|h| {
                source(
                    CitationKind::Knowledge,
                    h.doc.source.clone(),
                    Some([h.start, h.end]),
                    h.doc.label.clone(),
                    h.text,
                )
            })
            .collect(),
    ))
}

fn sessions(store: &Store, q: &str, n: usize, exclude: SessionId) -> Result<Found, String> {
    let hits = store
        .search(q, None, n * 4)
        .map_err(|e| format!("session search failed: {e}"))?;
    // Research machinery (plans, audits, approvals) is not a source; reports and answers are.
    let machinery = |h: &crate::store::SearchHit| {
        store.node(h.node).ok().flatten().is_some_and(|n| {
            matches!(
                n.kind,
                NodeType::Plan | NodeType::Audit | NodeType::HumanAnnotation
            )
        })
    };
    let sources = hits
        .into_iter()
        .filter(|h| h.session != exclude && !machinery(h))
        .take(n)
        .map(|h| {
            let title = store
                .session(h.session)
                .ok()
                .flatten()
                .map_or_else(|| "session".to_string(), |s| s.title);
            source(
                CitationKind::Session,
                format!("session/{}#{}", h.session, h.node),
                None,
                title,
                h.snippet,
            )
        })
        .collect();
    Ok(listing(sources))
}

fn memory(m: &Memory, q: &str, n: usize) -> Result<Found, String> {
    let hits = m
        .find(q, &[], n, SearchMode::Hybrid, Filter::default())
        .map_err(|e| format!("memory search failed: {e}"))?;
    Ok(listing(
        hits.into_iter()
            .map(|h| {
                let label = h.entry.content.chars().take(60).collect();
                source(
                    CitationKind::Memory,
                    format!("memory/{}", h.entry.id),
                    None,
                    label,
                    h.entry.content,
                )
            })
            .collect(),
    ))
}

fn source(
    kind: CitationKind,
    source: String,
    span: Option<[usize; 2]>,
    label: String,
    text: String,
) -> Citation {
    Citation {
        n: 0,
        kind,
        source,
        span,
        label,
        text,
        step: None,
        cited: false,
    }
}

/// The step's output: each source on its own lines, or a line saying nothing was found.
fn listing(sources: Vec<Citation>) -> Found {
    let text = if sources.is_empty() {
        "no results".to_string()
    } else {
        sources
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {} ({})\n{}", i + 1, s.label, locator(s), s.text.trim()))
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    Found { text, sources }
}

/// Where a source is, as a person reads it: `path:start-end`, a session, a URL.
pub fn locator(c: &Citation) -> String {
    match c.span {
        Some([a, b]) => format!("{}:{a}-{b}", c.source),
        None => c.source.clone(),
    }
}

/// `text` cut to `max` characters, marked when cut.
fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        text.chars().take(max).collect::<String>() + "…"
    }
}
