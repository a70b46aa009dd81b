//! Metacognition: the model reviews a session's recent reasoning at max effort and records
//! insights (biases, patterns, improvement hypotheses) with evidence pointing at nodes.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::engines::got::{CallSettings, call_model, json_object, number};
use crate::engines::llm::{Effort, LlmError, Provider, ToolSpec};
use crate::store::{
    Insight, InsightId, Node, NodeId, NodeType, Run, RunId, RunKind, RunStatus, SessionId, Store,
    StoreError,
};

/// What the analysis should concentrate on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FocusArea {
    DecisionQuality,
    ReasoningPatterns,
    ConfidenceCalibration,
    AlternativeExploration,
    BiasDetection,
}

impl FocusArea {
    /// Every focus area.
    pub const ALL: [FocusArea; 5] = [
        FocusArea::DecisionQuality,
        FocusArea::ReasoningPatterns,
        FocusArea::ConfidenceCalibration,
        FocusArea::AlternativeExploration,
        FocusArea::BiasDetection,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FocusArea::DecisionQuality => "decision_quality",
            FocusArea::ReasoningPatterns => "reasoning_patterns",
            FocusArea::ConfidenceCalibration => "confidence_calibration",
            FocusArea::AlternativeExploration => "alternative_exploration",
            FocusArea::BiasDetection => "bias_detection",
        }
    }

    /// The instruction added to the prompt for this focus.
    fn instruction(self) -> &'static str {
        match self {
            FocusArea::DecisionQuality => {
                "Focus on decision quality: were choices at decision points well founded?"
            }
            FocusArea::ReasoningPatterns => {
                "Focus on reasoning patterns: habits that recur across the nodes."
            }
            FocusArea::ConfidenceCalibration => {
                "Focus on confidence calibration: did stated confidence match how sound the reasoning was?"
            }
            FocusArea::AlternativeExploration => {
                "Focus on alternative exploration: were other paths considered before committing?"
            }
            FocusArea::BiasDetection => {
                "Focus on biases: confirmation, anchoring, recency, availability, overconfidence."
            }
        }
    }
}

/// The three kinds of insight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InsightType {
    BiasDetection,
    Pattern,
    ImprovementHypothesis,
}

impl InsightType {
    pub fn as_str(self) -> &'static str {
        match self {
            InsightType::BiasDetection => "bias_detection",
            InsightType::Pattern => "pattern",
            InsightType::ImprovementHypothesis => "improvement_hypothesis",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s
            .trim()
            .to_ascii_lowercase()
            .replace([' ', '-'], "_")
            .as_str()
        {
            "bias_detection" | "bias" => Some(InsightType::BiasDetection),
            "pattern" => Some(InsightType::Pattern),
            "improvement_hypothesis" | "improvement" => Some(InsightType::ImprovementHypothesis),
            _ => None,
        }
    }
}

/// The model's structured answer (`record_insights`): the schema sent to the provider and the
/// local model's grammar. [`insights_schema`] narrows `nodeId` to the nodes analysed.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InsightsAnswer {
    #[schemars(length(max = 300))]
    pub summary: String,
    #[schemars(length(min = 1, max = 3))]
    pub insights: Vec<InsightAnswer>,
}

/// One insight of an [`InsightsAnswer`].
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InsightAnswer {
    pub insight_type: InsightType,
    #[schemars(length(min = 1, max = 300))]
    pub insight: String,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
    #[schemars(length(min = 1, max = 3))]
    pub evidence: Vec<EvidenceAnswer>,
}

/// The evidence of an [`InsightAnswer`]: a node shown to the model.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceAnswer {
    pub node_id: String,
    #[schemars(length(max = 200))]
    pub excerpt: String,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub relevance: f64,
}

/// The insights answer's schema, its evidence limited to the `known` nodes: a model that
/// honours the schema (the local one always does) cannot cite a node it was not shown.
pub fn insights_schema(known: &[NodeId]) -> ToolSpec {
    let mut tool = ToolSpec::of::<InsightsAnswer>("record_insights", "Record your insights.");
    if let Some(id) = tool
        .input_schema
        .pointer_mut("/properties/insights/items/properties/evidence/items/properties/nodeId")
    {
        id["enum"] = known.iter().map(|n| Value::from(n.to_string())).collect();
    }
    tool
}

/// A node an insight points at, with the quoted excerpt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub node_id: NodeId,
    pub excerpt: String,
    pub relevance: f64,
}

/// One insight as the `/api/insights` response shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InsightView {
    pub id: InsightId,
    pub insight_type: InsightType,
    pub insight: String,
    pub confidence: f64,
    pub evidence: Vec<Evidence>,
    pub created_at: DateTime<Utc>,
}

impl InsightView {
    /// The stored form.
    pub fn to_insight(&self, session: SessionId, analysed: &[NodeId]) -> Insight {
        Insight {
            id: self.id,
            session,
            kind: self.insight_type.as_str().to_string(),
            text: self.insight.clone(),
            confidence: self.confidence,
            evidence: self
                .evidence
                .iter()
                .map(|e| json!({"nodeId": e.node_id, "excerpt": e.excerpt, "relevance": e.relevance}))
                .collect(),
            nodes_analyzed: analysed.to_vec(),
            created_at: self.created_at,
        }
    }
}

/// The insights read from a model answer and what had to be dropped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParsedInsights {
    pub insights: Vec<InsightView>,
    pub summary: Option<String>,
    /// Evidence node ids that name no analysed node (possible hallucinations).
    pub invalid_node_refs: Vec<String>,
    /// Insights dropped because they did not fit the schema.
    pub validation_errors: Vec<String>,
}

/// Reads `{"summary", "insights": [{insightType, insight, confidence, evidence}]}`;
/// evidence pointing at a node outside `known` is dropped and counted, confidence and
/// relevance are clamped to [0, 1].
pub fn parse_insights(text: &str, known: &HashSet<NodeId>) -> ParsedInsights {
    let mut out = ParsedInsights::default();
    let Some(obj) = json_object(text) else {
        out.validation_errors
            .push("the model's answer holds no JSON object".into());
        return out;
    };
    out.summary = obj
        .get("summary")
        .and_then(Value::as_str)
        .map(str::to_string);
    let items = match obj.get("insights") {
        Some(Value::Array(a)) => a.clone(),
        _ if obj.contains_key("insight") => vec![Value::Object(obj.clone())],
        _ => Vec::new(),
    };
    for (i, item) in items.iter().enumerate() {
        let kind = ["insightType", "insight_type", "type"]
            .iter()
            .find_map(|k| item.get(*k).and_then(Value::as_str));
        let Some(kind) = kind.and_then(InsightType::parse) else {
            out.validation_errors
                .push(format!("insight {i}: missing or unknown insightType"));
            continue;
        };
        let text = item
            .get("insight")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default();
        if text.is_empty() {
            out.validation_errors
                .push(format!("insight {i}: empty insight text"));
            continue;
        }
        let clamp = |v: Option<f64>| {
            v.filter(|c| c.is_finite())
                .map_or(0.0, |c| c.clamp(0.0, 1.0))
        };
        let mut evidence = Vec::new();
        for e in item
            .get("evidence")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let raw = ["nodeId", "node_id", "node"]
                .iter()
                .find_map(|k| e.get(*k).and_then(Value::as_str))
                .unwrap_or_default();
            match raw.trim().parse::<NodeId>() {
                Ok(id) if known.contains(&id) => evidence.push(Evidence {
                    node_id: id,
                    excerpt: e
                        .get("excerpt")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    relevance: clamp(number(e.get("relevance"))),
                }),
                _ => out.invalid_node_refs.push(raw.to_string()),
            }
        }
        out.insights.push(InsightView {
            id: InsightId::new(),
            insight_type: kind,
            insight: text.to_string(),
            confidence: clamp(number(item.get("confidence"))),
            evidence,
            created_at: Utc::now(),
        });
    }
    out
}

/// `[metacog]`: how much of a session metacognition reads, and at what effort.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetacogParams {
    /// Seed 000 Metacognition: 10–20 recent thinking nodes (the least).
    pub min_nodes: usize,
    /// Seed 000 Metacognition: 10–20 recent thinking nodes (the most).
    pub max_nodes: usize,
    /// Seed 000 Metacognition: each node's reasoning capped at 5k chars.
    pub node_chars: usize,
    /// Seed 000 Metacognition: up to 100k chars of context in all.
    pub total_chars: usize,
    /// Seed 000 Metacognition: effort `max`.
    pub effort: Effort,
    /// Answer-token cap of the analysis call.
    pub max_tokens: u32,
}

impl Default for MetacogParams {
    fn default() -> Self {
        Self {
            min_nodes: 10,
            max_nodes: 20,
            node_chars: 5000,
            total_chars: 100_000,
            effort: Effort::Max,
            max_tokens: 4096,
        }
    }
}

/// The nodes to analyse: the last `max_nodes` thinking nodes, topped up to `min_nodes`
/// with the newest other nodes, in session order.
pub fn gather(nodes: &[Node], cfg: &MetacogParams) -> Vec<Node> {
    let mut picked: Vec<usize> = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == NodeType::Thinking)
        .map(|(i, _)| i)
        .collect();
    picked = picked.split_off(picked.len().saturating_sub(cfg.max_nodes));
    if picked.len() < cfg.min_nodes {
        let want = cfg.min_nodes.min(cfg.max_nodes) - picked.len().min(cfg.min_nodes);
        let extra: Vec<usize> = (0..nodes.len())
            .rev()
            .filter(|i| !picked.contains(i) && !nodes[*i].text.trim().is_empty())
            .take(want)
            .collect();
        picked.extend(extra);
        picked.sort_unstable();
    }
    picked.into_iter().map(|i| nodes[i].clone()).collect()
}

/// The analysis context: per node its id, kind, question, confidence, decision count,
/// time and text (capped at `node_chars`), `total_chars` in all.
pub fn format_context(
    store: &Store,
    all: &[Node],
    picked: &[Node],
    cfg: &MetacogParams,
) -> Result<String, StoreError> {
    let mut out = String::new();
    for n in picked {
        let query = all
            .iter()
            .take_while(|m| m.id != n.id)
            .filter(|m| m.kind == NodeType::Query)
            .last()
            .map(|q| q.text.chars().take(QUERY_CHARS).collect::<String>())
            .unwrap_or_default();
        let decisions = store.decision_points(n.id)?.len();
        let text: String = n.text.chars().take(cfg.node_chars).collect();
        let block = format!(
            "--- node {}\nkind: {}\nquery: {}\nconfidence: {}\ndecisions: {}\ntime: {}\n{}\n\n",
            n.id,
            n.kind.as_str(),
            query,
            n.confidence
                .map_or("unknown".to_string(), |c| format!("{:.0}%", c * 100.0)),
            decisions,
            n.created_at.to_rfc3339(),
            text
        );
        let room = cfg.total_chars.saturating_sub(out.chars().count());
        if room == 0 {
            break;
        }
        out.extend(block.chars().take(room));
    }
    Ok(out)
}

/// How much of the question a node answered the analysis context shows (glassbox's own
/// cut; seed 000 Metacognition lists the input query among each node's fields).
const QUERY_CHARS: usize = 300;

/// Failures of an analysis.
#[derive(Debug, thiserror::Error)]
pub enum MetacogError {
    #[error("session {0} has no nodes to analyse")]
    Empty(SessionId),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("model call failed: {0}")]
    Model(#[from] LlmError),
}

/// The outcome of one analysis.
#[derive(Clone, Debug, PartialEq)]
pub struct MetacogResult {
    pub insights: Vec<InsightView>,
    pub nodes_analyzed: Vec<NodeId>,
    pub summary: Option<String>,
    pub invalid_node_refs: Vec<String>,
    pub validation_errors: Vec<String>,
    pub run: RunId,
}

/// Runs metacognitive analyses with one provider and stores the insights.
pub struct Metacog {
    pub store: Store,
    pub provider: Arc<dyn Provider>,
    pub call: CallSettings,
    /// The `metacog/analyze` prompt.
    pub prompt: String,
    pub config: MetacogParams,
}

impl Metacog {
    /// Analyses the session's recent nodes and stores each insight.
    pub async fn analyze(
        &self,
        session: SessionId,
        focus: Option<FocusArea>,
        cancel: &CancellationToken,
    ) -> Result<MetacogResult, MetacogError> {
        let config = self.config.clone();
        let (picked, context) = self
            .store
            .run_blocking(move |store| {
                let all = store.session_nodes(session)?;
                let picked = gather(&all, &config);
                if picked.is_empty() {
                    return Err(MetacogError::Empty(session));
                }
                let context = format_context(store, &all, &picked, &config)?;
                Ok((picked, context))
            })
            .await?;
        let mut system = self.prompt.clone();
        if let Some(f) = focus {
            system.push_str("\n\n");
            system.push_str(f.instruction());
        }
        let user = format!("Nodes of the session:\n\n{context}\nRecord your insights.");
        let analysed: Vec<NodeId> = picked.iter().map(|n| n.id).collect();
        let reply = call_model(
            &*self.provider,
            &self.call,
            &system,
            user,
            insights_schema(&analysed),
            cancel,
        )
        .await?;
        let known: HashSet<NodeId> = picked.iter().map(|n| n.id).collect();
        let parsed = parse_insights(&reply.text, &known);
        let run = RunId::new();
        let insights: Vec<Insight> = parsed
            .insights
            .iter()
            .map(|i| i.to_insight(session, &analysed))
            .collect();
        let record = Run {
            id: run,
            session,
            kind: RunKind::Insights,
            params: json!({"focus": focus.map(FocusArea::as_str)}),
            summary: json!({
                "insights": parsed.insights.iter().map(|i| i.id).collect::<Vec<_>>(),
                "nodesAnalyzed": analysed,
                "summary": parsed.summary,
                "invalidNodeRefs": parsed.invalid_node_refs,
                "validationErrors": parsed.validation_errors,
                "tokens": reply.tokens,
            }),
            status: RunStatus::Done,
            created_at: Utc::now(),
            finished_at: Some(Utc::now()),
        };
        self.store
            .write_async(move |w| {
                for i in &insights {
                    w.put_insight(i)?;
                }
                w.put_run(&record)
            })
            .await?;
        Ok(MetacogResult {
            insights: parsed.insights,
            nodes_analyzed: analysed,
            summary: parsed.summary,
            invalid_node_refs: parsed.invalid_node_refs,
            validation_errors: parsed.validation_errors,
            run,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_to_unknown_nodes_is_dropped_and_counted() {
        let a = NodeId::new();
        let b = NodeId::new();
        let stranger = NodeId::new();
        let known: HashSet<NodeId> = [a, b].into_iter().collect();
        let text = json!({
            "summary": "s",
            "insights": [
                {"insightType": "bias_detection", "insight": "anchoring on the first idea", "confidence": 1.7,
                 "evidence": [
                    {"nodeId": a.to_string(), "excerpt": "first", "relevance": 0.9},
                    {"nodeId": stranger.to_string(), "excerpt": "made up", "relevance": 0.5},
                    {"nodeId": "not-a-uuid", "excerpt": "?", "relevance": 0.5}
                 ]},
                {"insightType": "pattern", "insight": "checks units", "confidence": -0.2,
                 "evidence": [{"nodeId": b.to_string(), "excerpt": "units", "relevance": 3}]},
                {"insightType": "mood", "insight": "x", "confidence": 0.5, "evidence": []}
            ]
        })
        .to_string();
        let p = parse_insights(&format!("Here you go:\n{text}"), &known);
        assert_eq!(p.insights.len(), 2);
        assert_eq!(p.insights[0].insight_type, InsightType::BiasDetection);
        assert_eq!(p.insights[0].evidence.len(), 1);
        assert_eq!(p.insights[0].evidence[0].node_id, a);
        assert_eq!(p.insights[0].confidence, 1.0);
        assert_eq!(p.insights[1].confidence, 0.0);
        assert_eq!(p.insights[1].evidence[0].relevance, 1.0);
        assert_eq!(
            p.invalid_node_refs,
            vec![stranger.to_string(), "not-a-uuid".to_string()]
        );
        assert_eq!(p.validation_errors.len(), 1);
        assert_eq!(p.summary.as_deref(), Some("s"));
    }

    #[test]
    fn gather_prefers_thinking_nodes_and_tops_up_to_the_minimum() {
        let s = SessionId::new();
        let cfg = MetacogParams {
            min_nodes: 3,
            max_nodes: 4,
            node_chars: 10,
            total_chars: 100,
            effort: crate::engines::llm::Effort::Max,
            max_tokens: 100,
        };
        let mk = |k, t: &str| Node::new(s, k, t);
        let nodes = vec![
            mk(NodeType::Query, "q1"),
            mk(NodeType::Thinking, "t1"),
            mk(NodeType::Response, "r1"),
            mk(NodeType::Query, "q2"),
            mk(NodeType::Thinking, "t2"),
            mk(NodeType::Response, "r2"),
        ];
        let texts: Vec<String> = gather(&nodes, &cfg).into_iter().map(|n| n.text).collect();
        assert_eq!(texts, vec!["t1", "t2", "r2"]);
        let many: Vec<Node> = (0..6)
            .map(|i| mk(NodeType::Thinking, &format!("t{i}")))
            .collect();
        let texts: Vec<String> = gather(&many, &cfg).into_iter().map(|n| n.text).collect();
        assert_eq!(texts, vec!["t2", "t3", "t4", "t5"]);
    }

    #[test]
    fn an_analysis_reads_and_commits_off_the_runtime_thread() {
        use crate::engines::testing::{PATIENCE, ScriptedProvider, commits_during_polls};
        use crate::store::{Session, SessionSource};

        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
        let session = Session::new("metacog", SessionSource::Glassbox);
        let thinking = Node::new(session.id, NodeType::Thinking, "I am sure it is the cache.");
        store
            .write(|w| {
                w.put_session(&session)?;
                w.put_node(&Node::new(session.id, NodeType::Query, "Why is it slow?"))?;
                w.put_node(&thinking)
            })
            .unwrap();
        let answer = json!({
            "summary": "anchored early",
            "insights": [{"insightType": "bias_detection", "insight": "anchoring on the cache",
                "confidence": 0.8,
                "evidence": [{"nodeId": thinking.id.to_string(), "excerpt": "sure", "relevance": 0.9}]}]
        })
        .to_string();
        let metacog = Metacog {
            store: store.clone(),
            provider: ScriptedProvider::always(&answer),
            call: CallSettings::new("scripted", 256),
            prompt: String::new(),
            config: MetacogParams::default(),
        };
        let cancel = CancellationToken::new();
        let (out, stalls) = commits_during_polls(
            &store,
            PATIENCE,
            metacog.analyze(session.id, Some(FocusArea::BiasDetection), &cancel),
        );
        assert_eq!(stalls, 0, "a commit ran on the runtime thread");
        let result = out.unwrap();
        assert_eq!(result.insights.len(), 1);
        assert!(result.nodes_analyzed.contains(&thinking.id));
        assert_eq!(store.insights(session.id).unwrap().len(), 1);
        assert!(store.run(result.run).unwrap().is_some());
    }
}
