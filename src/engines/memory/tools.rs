//! The memory operations as tools the model can call during a think turn (seed 000's
//! "LLM function call handlers"): one input type per operation, whose JSON Schema is what
//! the provider is sent, and the handler that runs a call and answers in compact JSON.
//!
//! A call never panics: bad input, an unknown id or a store failure comes back as a short
//! message for the model.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::index::SearchMode;
use super::{Hit, Memory, NewMemory};
use crate::engines::json_extract::extract_object;
use crate::engines::llm::ToolSpec;
use crate::store::{CoreSection, MemoryId, MemoryTier, NodeId, Provenance, SessionId};

pub const ARCHIVAL_INSERT: &str = "archival_insert";
pub const ARCHIVAL_SEARCH: &str = "archival_search";
pub const RECALL_SEARCH: &str = "recall_search";
pub const CORE_MEMORY_APPEND: &str = "core_memory_append";
pub const CORE_MEMORY_REPLACE: &str = "core_memory_replace";
pub const EVICT_TO_ARCHIVAL: &str = "evict_to_archival";
pub const PROMOTE_TO_WORKING: &str = "promote_to_working";

/// Every memory tool, in the order they are offered.
pub const TOOL_NAMES: [&str; 7] = [
    ARCHIVAL_INSERT,
    ARCHIVAL_SEARCH,
    RECALL_SEARCH,
    CORE_MEMORY_APPEND,
    CORE_MEMORY_REPLACE,
    EVICT_TO_ARCHIVAL,
    PROMOTE_TO_WORKING,
];

/// Search results when the model gives no limit, and the most it may ask for.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;
/// Ids one evict or promote call may name.
const MAX_IDS: usize = 20;
/// Characters of an entry's text shown in a search result (an entry longer than a chunk is
/// cut, with "…").
const RESULT_CHARS: usize = 2_000;

/// `archival_insert`: keep something in long-term memory.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ArchivalInsert {
    /// The text to keep: one self-contained fact, note or summary, written so that it makes
    /// sense when found later without this conversation.
    #[schemars(length(min = 1))]
    pub content: String,
    /// A few short labels to find it by.
    #[serde(default)]
    #[schemars(length(max = 10), inner(length(min = 1, max = 50)))]
    pub tags: Vec<String>,
    /// How much it matters, from 0 (trivia) to 1 (essential); 0.5 when left out.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub importance: Option<f32>,
}

/// `archival_search` / `recall_search`: look something up.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemorySearch {
    /// What to look for: keywords or a question. Dates it names (2024-05-01, "last week")
    /// favour entries from then.
    #[schemars(length(min = 1))]
    pub query: String,
    /// Most results, 1 to 20 (5 when left out).
    #[serde(default)]
    #[schemars(range(min = 1, max = 20))]
    pub limit: Option<usize>,
}

/// A section of core memory.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    Human,
    Agent,
}

impl From<Section> for CoreSection {
    fn from(s: Section) -> Self {
        match s {
            Section::Human => CoreSection::Human,
            Section::Agent => CoreSection::Agent,
        }
    }
}

/// `core_memory_append`: add a fact to core memory.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CoreAppend {
    /// `human`: about the person you are talking with; `agent`: about yourself.
    pub section: Section,
    /// The fact, in one short sentence.
    #[schemars(length(min = 1, max = 500))]
    pub content: String,
}

/// `core_memory_replace`: change a fact of core memory.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CoreReplace {
    /// The section the fact is in: `human` or `agent`.
    pub section: Section,
    /// The fact to replace: its id, or text that appears in it and in no other fact of the
    /// section.
    #[schemars(length(min = 1))]
    pub old: String,
    /// The new text of the fact.
    #[schemars(length(min = 1, max = 500))]
    pub new: String,
}

/// `evict_to_archival` / `promote_to_working`: move entries between tiers.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemoryIds {
    /// Ids of the entries, as search results and the memory shown to you give them.
    #[schemars(length(min = 1, max = 20), inner(length(min = 4)))]
    pub ids: Vec<String>,
}

/// The memory tools, with the schema of each one's input.
pub fn memory_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::of::<ArchivalInsert>(
            ARCHIVAL_INSERT,
            "Store something in long-term (archival) memory so that it can be found in later conversations: facts, decisions, preferences, results worth keeping.",
        ),
        ToolSpec::of::<MemorySearch>(
            ARCHIVAL_SEARCH,
            "Search long-term (archival) memory by meaning and keywords. Returns the best entries with their ids, dates and text.",
        ),
        ToolSpec::of::<MemorySearch>(
            RECALL_SEARCH,
            "Search recall memory: the recent questions and answers of past conversations.",
        ),
        ToolSpec::of::<CoreAppend>(
            CORE_MEMORY_APPEND,
            "Add a fact to core memory, which is shown to you at the start of every conversation: about the person (section human) or about yourself (section agent). Keep it to what matters every time.",
        ),
        ToolSpec::of::<CoreReplace>(
            CORE_MEMORY_REPLACE,
            "Replace a fact in core memory when it has changed or was wrong.",
        ),
        ToolSpec::of::<MemoryIds>(
            EVICT_TO_ARCHIVAL,
            "Move entries out of working memory into archival memory, to free the context for what matters now.",
        ),
        ToolSpec::of::<MemoryIds>(
            PROMOTE_TO_WORKING,
            "Bring archival or recall entries into working memory, which is shown to you on every turn.",
        ),
    ]
}

/// The call's input as an object: a JSON object as given, text the provider could not parse
/// read leniently, nothing as no fields.
fn input_object(name: &str, input: &Value) -> Result<Value, String> {
    match input {
        Value::Object(_) => Ok(input.clone()),
        Value::Null => Ok(Value::Object(Map::new())),
        Value::String(text) => extract_object(text)
            .map(Value::Object)
            .map_err(|e| format!("{name}: unreadable input: {e}")),
        other => Err(format!(
            "{name}: the input must be a JSON object, not {other}"
        )),
    }
}

fn parse<T: for<'de> Deserialize<'de>>(name: &str, input: &Value) -> Result<T, String> {
    serde_json::from_value(input_object(name, input)?)
        .map_err(|e| format!("{name}: bad input: {e}"))
}

fn short_ids(ids: &[MemoryId]) -> Vec<String> {
    ids.iter().map(MemoryId::short).collect()
}

/// `text` cut to `max` characters, with "…" when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

fn hit_json(h: &Hit) -> Value {
    let e = &h.entry;
    let mut v = json!({
        "id": e.id.short(),
        "date": e.created_at.format("%Y-%m-%d").to_string(),
        "content": cut(&e.content, RESULT_CHARS),
        "importance": (f64::from(e.importance) * 100.0).round() / 100.0,
        "score": (f64::from(h.score) * 100.0).round() / 100.0,
    });
    if !e.tags.is_empty() {
        v["tags"] = json!(e.tags);
    }
    v
}

impl Memory {
    /// The memory tools, when `[memory] tools` is on; none otherwise.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        if self.params.tools {
            memory_tools()
        } else {
            Vec::new()
        }
    }

    /// A tool call made by the model in `session`, recorded as `node`: `None` when it is not
    /// a memory tool or memory tools are off.
    pub fn knowledge_tool_call(
        &self,
        name: &str,
        input: &Value,
        session: SessionId,
        node: NodeId,
    ) -> Option<Result<String, String>> {
        if !self.params.tools || !TOOL_NAMES.contains(&name) {
            return None;
        }
        let provenance = Provenance {
            origin: "tool".into(),
            session: Some(session),
            node: Some(node),
            ..Default::default()
        };
        Some(self.call_tool(name, input, provenance))
    }

    /// Runs the memory operation `name` with the model's `input`; entries it creates carry
    /// `provenance`. The answer is compact JSON for the model; a failure is one short line.
    pub fn call_tool(
        &self,
        name: &str,
        input: &Value,
        provenance: Provenance,
    ) -> Result<String, String> {
        let fail = |e: super::MemoryError| format!("{name}: {e}");
        let answer = match name {
            ARCHIVAL_INSERT => {
                let a: ArchivalInsert = parse(name, input)?;
                let tags = a
                    .tags
                    .iter()
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
                    .collect();
                let done = self
                    .insert(NewMemory {
                        content: a.content,
                        tags,
                        importance: a.importance,
                        tier: MemoryTier::Archival,
                        provenance,
                        created_at: None,
                    })
                    .map_err(fail)?;
                json!({"inserted": short_ids(&done.ids)})
            }
            ARCHIVAL_SEARCH | RECALL_SEARCH => {
                let s: MemorySearch = parse(name, input)?;
                if s.query.trim().is_empty() {
                    return Err(format!("{name}: the query is empty"));
                }
                let tier = if name == ARCHIVAL_SEARCH {
                    MemoryTier::Archival
                } else {
                    MemoryTier::Recall
                };
                let limit = s.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
                let hits = self
                    .search(
                        &s.query,
                        &[tier],
                        limit,
                        SearchMode::Hybrid,
                        Default::default(),
                    )
                    .map_err(fail)?;
                json!({"results": hits.iter().map(hit_json).collect::<Vec<_>>()})
            }
            CORE_MEMORY_APPEND => {
                let c: CoreAppend = parse(name, input)?;
                let section = CoreSection::from(c.section);
                let done = self
                    .core_append(section, &c.content, provenance)
                    .map_err(fail)?;
                let mut v = json!({"appended": short_ids(&done.ids), "section": section.as_str()});
                if !done.evicted.is_empty() {
                    v["evicted_from_working"] = json!(short_ids(&done.evicted));
                }
                v
            }
            CORE_MEMORY_REPLACE => {
                let c: CoreReplace = parse(name, input)?;
                let section = CoreSection::from(c.section);
                let id = self
                    .core_replace(section, c.old.trim(), &c.new)
                    .map_err(fail)?;
                json!({"replaced": id.short(), "section": section.as_str()})
            }
            EVICT_TO_ARCHIVAL | PROMOTE_TO_WORKING => {
                let m: MemoryIds = parse(name, input)?;
                if m.ids.is_empty() {
                    return Err(format!("{name}: give at least one id"));
                }
                if m.ids.len() > MAX_IDS {
                    return Err(format!("{name}: at most {MAX_IDS} ids per call"));
                }
                let mut ids = Vec::with_capacity(m.ids.len());
                for text in &m.ids {
                    let id = self
                        .store
                        .resolve_memory(text.trim())
                        .map_err(|e| format!("{name}: {e}"))?;
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                if name == EVICT_TO_ARCHIVAL {
                    let moved = self.evict(&ids).map_err(fail)?;
                    json!({"evicted": short_ids(&moved)})
                } else {
                    let done = self.promote(&ids).map_err(fail)?;
                    let mut v = json!({"promoted": short_ids(&done.ids)});
                    if !done.evicted.is_empty() {
                        v["evicted_from_working"] = json!(short_ids(&done.evicted));
                    }
                    v
                }
            }
            other => return Err(format!("unknown tool '{other}'")),
        };
        Ok(answer.to_string())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::engines::memory::MemoryParams;
    use crate::engines::orchestrator::KnowledgeContext;
    use crate::store::MemoryScope;

    fn memory(params: MemoryParams) -> (tempfile::TempDir, Memory) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::testing::open_at(&dir.path().join("m.redb"));
        let m = Memory::new(store, params, None, MemoryScope::Global, vec![]);
        (dir, m)
    }

    fn by_model() -> (SessionId, NodeId, Provenance) {
        let (session, node) = (SessionId::new(), NodeId::new());
        let p = Provenance {
            origin: "tool".into(),
            session: Some(session),
            node: Some(node),
            ..Default::default()
        };
        (session, node, p)
    }

    fn call(m: &Memory, name: &str, input: Value) -> Result<Value, String> {
        let (_, _, p) = by_model();
        m.call_tool(name, &input, p)
            .map(|s| serde_json::from_str(&s).unwrap())
    }

    /// The full id of an entry the tools answered with (their short form).
    fn full(m: &Memory, short: &Value) -> MemoryId {
        m.store().resolve_memory(short.as_str().unwrap()).unwrap()
    }

    #[test]
    fn the_tools_have_schemas_with_their_limits() {
        let tools = memory_tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, TOOL_NAMES);
        let insert = &tools[0].input_schema;
        assert_eq!(insert["type"], "object");
        assert_eq!(insert["required"], json!(["content"]));
        let importance = insert["properties"]["importance"].to_string();
        assert!(
            importance.contains("\"minimum\":0.0") && importance.contains("\"maximum\":1.0"),
            "{importance}"
        );
        let limit = tools[1].input_schema["properties"]["limit"].to_string();
        assert!(
            limit.contains("\"minimum\":1") && limit.contains("\"maximum\":20"),
            "{limit}"
        );
        let section = tools[3].input_schema["properties"]["section"].to_string();
        assert!(
            section.contains("human") && section.contains("agent"),
            "{section}"
        );
        for t in &tools {
            assert!(!t.input_schema.to_string().contains("$ref"), "{}", t.name);
        }
    }

    #[test]
    fn archival_insert_keeps_the_text_with_the_calls_provenance_then_search_finds_it() {
        let (_d, m) = memory(MemoryParams::default());
        let (_, node, p) = by_model();
        let out = m
            .call_tool(
                ARCHIVAL_INSERT,
                &json!({"content": "The ferry to Vashon leaves at 7:40", "tags": ["travel", " "], "importance": 0.8}),
                p.clone(),
            )
            .unwrap();
        let out: Value = serde_json::from_str(&out).unwrap();
        let id = full(&m, &out["inserted"][0]);
        let e = m.store().memory(id).unwrap().unwrap();
        assert_eq!(e.tier, MemoryTier::Archival);
        assert_eq!(e.provenance, p);
        assert_eq!(e.provenance.node, Some(node));
        assert_eq!(e.tags, ["travel"]);
        assert!((e.importance - 0.8).abs() < 1e-6);

        let found = call(
            &m,
            ARCHIVAL_SEARCH,
            json!({"query": "ferry Vashon", "limit": 3}),
        )
        .unwrap();
        assert_eq!(found["results"][0]["id"], out["inserted"][0]);
        assert!(
            found["results"][0]["content"]
                .as_str()
                .unwrap()
                .contains("7:40")
        );
        // Recall holds nothing yet; the search is counted either way.
        let recall = call(&m, RECALL_SEARCH, json!({"query": "ferry"})).unwrap();
        assert_eq!(recall["results"], json!([]));
        assert_eq!(m.stats().unwrap().total_searches, 2);
    }

    #[test]
    fn recall_search_reads_recall_only() {
        let (_d, m) = memory(MemoryParams::default());
        m.insert(NewMemory {
            tier: MemoryTier::Recall,
            ..NewMemory::archival("We talked about the harbour crane", "think")
        })
        .unwrap();
        m.insert(NewMemory::archival("The harbour crane is red", "cli"))
            .unwrap();
        let r = call(
            &m,
            RECALL_SEARCH,
            json!({"query": "harbour crane", "limit": 50}),
        )
        .unwrap();
        let results = r["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "{r}");
        assert!(results[0]["content"].as_str().unwrap().contains("talked"));
    }

    #[test]
    fn core_append_and_replace_change_the_facts() {
        let (_d, m) = memory(MemoryParams::default());
        let (_, node, p) = by_model();
        let a = m
            .call_tool(
                CORE_MEMORY_APPEND,
                &json!({"section": "human", "content": "Prefers metric units"}),
                p,
            )
            .unwrap();
        let a: Value = serde_json::from_str(&a).unwrap();
        assert_eq!(a["section"], "human");
        let id = full(&m, &a["appended"][0]);
        let e = m.store().memory(id).unwrap().unwrap();
        assert_eq!(
            (e.tier, e.section),
            (MemoryTier::Core, Some(CoreSection::Human))
        );
        assert_eq!(e.provenance.node, Some(node));

        let r = call(
            &m,
            CORE_MEMORY_REPLACE,
            json!({"section": "human", "old": "metric", "new": "Prefers imperial units"}),
        )
        .unwrap();
        assert_eq!(r["replaced"], a["appended"][0]);
        assert_eq!(
            m.store().memory(id).unwrap().unwrap().content,
            "Prefers imperial units"
        );
        // Nothing in the agent section matches.
        let err = call(
            &m,
            CORE_MEMORY_REPLACE,
            json!({"section": "agent", "old": "imperial", "new": "x"}),
        )
        .unwrap_err();
        assert!(
            err.starts_with("core_memory_replace: no agent fact"),
            "{err}"
        );
        let err = call(
            &m,
            CORE_MEMORY_APPEND,
            json!({"section": "persona", "content": "x"}),
        )
        .unwrap_err();
        assert!(
            err.contains("bad input") && err.contains("persona"),
            "{err}"
        );
    }

    #[test]
    fn promote_then_evict_move_entries_between_tiers() {
        let (_d, m) = memory(MemoryParams::default());
        let id = m
            .insert(NewMemory::archival("Deploys happen on Tuesdays", "cli"))
            .unwrap()
            .ids[0];
        let p = call(&m, PROMOTE_TO_WORKING, json!({"ids": [id.short()]})).unwrap();
        assert_eq!(p["promoted"], json!([id.short()]));
        assert_eq!(
            m.store().memory(id).unwrap().unwrap().tier,
            MemoryTier::Working
        );
        // The full id works too.
        let e = call(&m, EVICT_TO_ARCHIVAL, json!({"ids": [id.to_string()]})).unwrap();
        assert_eq!(e["evicted"], json!([id.short()]));
        assert_eq!(
            m.store().memory(id).unwrap().unwrap().tier,
            MemoryTier::Archival
        );
        // Evicting it again is an error naming the tier, not a panic.
        let err = call(&m, EVICT_TO_ARCHIVAL, json!({"ids": [id.short()]})).unwrap_err();
        assert!(err.contains("archival, not working memory"), "{err}");
        let err = call(&m, PROMOTE_TO_WORKING, json!({"ids": ["ffffffff"]})).unwrap_err();
        assert!(err.starts_with("promote_to_working: "), "{err}");
        let err = call(&m, PROMOTE_TO_WORKING, json!({"ids": []})).unwrap_err();
        assert!(err.contains("at least one id"), "{err}");
    }

    #[test]
    fn bad_input_and_unknown_tools_are_short_errors() {
        let (_d, m) = memory(MemoryParams::default());
        let err = call(
            &m,
            ARCHIVAL_INSERT,
            json!({"content": "x", "importance": 1.5}),
        )
        .unwrap_err();
        assert!(err.contains("outside 0–1"), "{err}");
        let err = call(&m, ARCHIVAL_INSERT, json!({"content": "   "})).unwrap_err();
        assert!(err.contains("empty"), "{err}");
        let err = call(&m, ARCHIVAL_INSERT, json!({"tags": ["a"]})).unwrap_err();
        assert!(err.contains("missing field `content`"), "{err}");
        let err = call(&m, ARCHIVAL_SEARCH, json!([1, 2])).unwrap_err();
        assert!(err.contains("must be a JSON object"), "{err}");
        let err = call(&m, "delete_everything", json!({})).unwrap_err();
        assert_eq!(err, "unknown tool 'delete_everything'");
        // Arguments the provider could not parse are read leniently.
        let ok = call(
            &m,
            ARCHIVAL_INSERT,
            Value::String("{'content': 'Lenient input works',}".into()),
        )
        .unwrap();
        assert_eq!(ok["inserted"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn as_knowledge_the_tools_follow_the_config() {
        let (_d, m) = memory(MemoryParams::default());
        let k: &dyn KnowledgeContext = &m;
        assert_eq!(k.tools().len(), TOOL_NAMES.len());
        assert_eq!(k.max_tool_rounds(), 4);
        let (session, node) = (SessionId::new(), NodeId::new());
        assert!(
            k.call_tool("web_search", &json!({}), session, node)
                .is_none()
        );
        let out = k
            .call_tool(
                ARCHIVAL_INSERT,
                &json!({"content": "Saved by the model"}),
                session,
                node,
            )
            .unwrap()
            .unwrap();
        let out: Value = serde_json::from_str(&out).unwrap();
        let e = m
            .store()
            .memory(full(&m, &out["inserted"][0]))
            .unwrap()
            .unwrap();
        assert_eq!(e.provenance.origin, "tool");
        assert_eq!(
            (e.provenance.session, e.provenance.node),
            (Some(session), Some(node))
        );

        let (_d2, off) = memory(MemoryParams {
            tools: false,
            max_tool_rounds: 2,
            ..Default::default()
        });
        let k: &dyn KnowledgeContext = &off;
        assert!(k.tools().is_empty());
        assert_eq!(k.max_tool_rounds(), 2);
        assert!(
            k.call_tool(ARCHIVAL_INSERT, &json!({"content": "x"}), session, node)
                .is_none()
        );
    }
}
