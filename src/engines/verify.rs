//! Process reward model: judges a reasoning chain step by step, scores the chain, finds
//! patterns across steps, and exports step labels (PRM800K, ProcessBench).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::engines::got::{CallSettings, call_model, json_object, number};
use crate::engines::llm::{Effort, LlmError, Provider};
use crate::store::{
    Edge, EdgeType, Node, NodeId, NodeType, Run, RunId, RunKind, RunStatus, Session, SessionId,
    SessionSource, Store, StoreError,
};

/// The judgement on one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Correct,
    Incorrect,
    Neutral,
    Uncertain,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Correct => "correct",
            Verdict::Incorrect => "incorrect",
            Verdict::Neutral => "neutral",
            Verdict::Uncertain => "uncertain",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "correct" => Some(Verdict::Correct),
            "incorrect" | "wrong" => Some(Verdict::Incorrect),
            "neutral" => Some(Verdict::Neutral),
            "uncertain" => Some(Verdict::Uncertain),
            _ => None,
        }
    }

    /// PRM800K rating: correct 1, incorrect −1, otherwise 0.
    pub fn rating(self) -> i64 {
        match self {
            Verdict::Correct => 1,
            Verdict::Incorrect => -1,
            Verdict::Neutral | Verdict::Uncertain => 0,
        }
    }
}

/// What is wrong with a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueKind {
    LogicalError,
    FactualError,
    MissingContext,
    UnsupportedClaim,
    CircularReasoning,
    NonSequitur,
    Overgeneralization,
    FalseDichotomy,
}

impl IssueKind {
    pub const ALL: [IssueKind; 8] = [
        IssueKind::LogicalError,
        IssueKind::FactualError,
        IssueKind::MissingContext,
        IssueKind::UnsupportedClaim,
        IssueKind::CircularReasoning,
        IssueKind::NonSequitur,
        IssueKind::Overgeneralization,
        IssueKind::FalseDichotomy,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IssueKind::LogicalError => "logical_error",
            IssueKind::FactualError => "factual_error",
            IssueKind::MissingContext => "missing_context",
            IssueKind::UnsupportedClaim => "unsupported_claim",
            IssueKind::CircularReasoning => "circular_reasoning",
            IssueKind::NonSequitur => "non_sequitur",
            IssueKind::Overgeneralization => "overgeneralization",
            IssueKind::FalseDichotomy => "false_dichotomy",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase().replace([' ', '-'], "_");
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// How bad an issue is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Critical,
    Major,
    Minor,
}

/// One problem found in a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Issue {
    #[serde(rename = "type")]
    pub kind: IssueKind,
    pub description: String,
    pub severity: Severity,
}

/// A step to verify (the `--steps-file` entries).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepInput {
    pub content: String,
    /// analysis, hypothesis, evaluation, conclusion or consideration.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// The verification of one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepVerification {
    pub step_index: usize,
    pub verdict: Verdict,
    pub confidence: f64,
    pub explanation: String,
    pub issues: Vec<Issue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_correction: Option<String>,
}

/// A pattern across steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pattern {
    pub name: String,
    pub description: String,
    pub affected_steps: Vec<usize>,
}

/// How the verification ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyMetadata {
    pub verification_model: String,
    pub duration_ms: u64,
    pub verified_at: DateTime<Utc>,
}

/// A verified chain (`data` of the `/api/verify` response).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainVerification {
    pub overall_score: f64,
    pub is_valid: bool,
    /// Index of the first incorrect step; −1 when none is.
    pub first_error_at: i64,
    pub summary: String,
    pub steps: Vec<StepVerification>,
    pub patterns: Vec<Pattern>,
    pub metadata: VerifyMetadata,
}

/// `[verify]`: step verification (PRM) chain scoring and pattern thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyParams {
    /// A chain is valid when its score reaches this (seed 000 PRM: correctnessThreshold 0.7).
    pub correctness_threshold: f64,
    /// An incorrect step multiplies by `(1 − confidence) ·` this (seed 000 PRM: 0.3).
    pub incorrect_factor: f64,
    /// Seed 000 PRM: a neutral step multiplies by 0.9.
    pub neutral_factor: f64,
    /// Seed 000 PRM: an uncertain step multiplies by 0.7.
    pub uncertain_factor: f64,
    /// `declining_confidence` needs a fall larger than this (seed 000 PRM: spread > 0.2).
    pub declining_spread: f64,
    /// …over at least this many steps.
    pub declining_min_steps: usize,
    /// `recurring_{issue}`: the same issue in at least this many steps (seed 000 PRM: 2+).
    pub recurring_min_steps: usize,
    /// `overconfidence_before_error`: a correct step at least this confident, then an
    /// incorrect one.
    pub high_confidence: f64,
    /// Most steps one verification accepts (seed 000 /api/verify: 1–50 steps).
    pub max_steps: usize,
    /// Seed 000 /api/verify: effort `high`.
    pub effort: Effort,
    /// Answer-token cap of each step's call.
    pub max_tokens: u32,
}

impl Default for VerifyParams {
    fn default() -> Self {
        Self {
            correctness_threshold: 0.7,
            incorrect_factor: 0.3,
            neutral_factor: 0.9,
            uncertain_factor: 0.7,
            declining_spread: 0.2,
            declining_min_steps: 3,
            recurring_min_steps: 2,
            high_confidence: 0.8,
            max_steps: 50,
            effort: Effort::High,
            max_tokens: 1024,
        }
    }
}

/// Product of the per-step factors, then its geometric mean over the steps: a correct
/// step multiplies by its confidence, an incorrect one by `(1 − confidence) ·
/// incorrect_factor`, a neutral one by `neutral_factor`, an uncertain one by
/// `uncertain_factor`. An empty chain scores 0.
pub fn chain_score(steps: &[StepVerification], cfg: &VerifyParams) -> f64 {
    if steps.is_empty() {
        return 0.0;
    }
    let product: f64 = steps
        .iter()
        .map(|s| match s.verdict {
            Verdict::Correct => s.confidence,
            Verdict::Incorrect => (1.0 - s.confidence) * cfg.incorrect_factor,
            Verdict::Neutral => cfg.neutral_factor,
            Verdict::Uncertain => cfg.uncertain_factor,
        })
        .product();
    product.powf(1.0 / steps.len() as f64)
}

/// Index of the first incorrect step, −1 when none is.
pub fn first_error(steps: &[StepVerification]) -> i64 {
    steps
        .iter()
        .position(|s| s.verdict == Verdict::Incorrect)
        .map_or(-1, |i| i as i64)
}

/// `declining_confidence`, `recurring_{issue}` and `overconfidence_before_error`.
pub fn detect_patterns(steps: &[StepVerification], cfg: &VerifyParams) -> Vec<Pattern> {
    let mut out = Vec::new();
    let conf: Vec<f64> = steps.iter().map(|s| s.confidence).collect();
    if conf.len() >= cfg.declining_min_steps.max(2)
        && conf.windows(2).all(|w| w[1] <= w[0])
        && conf[0] - conf[conf.len() - 1] > cfg.declining_spread
    {
        out.push(Pattern {
            name: "declining_confidence".into(),
            description: format!(
                "Confidence falls step after step, from {:.2} to {:.2}",
                conf[0],
                conf[conf.len() - 1]
            ),
            affected_steps: (0..conf.len()).collect(),
        });
    }
    let mut by_issue: BTreeMap<IssueKind, Vec<usize>> = BTreeMap::new();
    for s in steps {
        for i in &s.issues {
            let list = by_issue.entry(i.kind).or_default();
            if !list.contains(&s.step_index) {
                list.push(s.step_index);
            }
        }
    }
    for (kind, affected) in by_issue {
        if affected.len() >= cfg.recurring_min_steps {
            out.push(Pattern {
                name: format!("recurring_{}", kind.as_str()),
                description: format!(
                    "{} appears in {} steps",
                    kind.as_str().replace('_', " "),
                    affected.len()
                ),
                affected_steps: affected,
            });
        }
    }
    for w in steps.windows(2) {
        if w[0].verdict == Verdict::Correct
            && w[0].confidence >= cfg.high_confidence
            && w[1].verdict == Verdict::Incorrect
        {
            out.push(Pattern {
                name: "overconfidence_before_error".into(),
                description: format!(
                    "Step {} was judged correct with confidence {:.2}, then step {} was wrong",
                    w[0].step_index, w[0].confidence, w[1].step_index
                ),
                affected_steps: vec![w[0].step_index, w[1].step_index],
            });
        }
    }
    out
}

/// Reads a step judgement from a model answer; an unreadable one is `uncertain` with
/// confidence 0.
pub fn parse_step(index: usize, text: &str) -> StepVerification {
    let Some(obj) = json_object(text) else {
        return StepVerification {
            step_index: index,
            verdict: Verdict::Uncertain,
            confidence: 0.0,
            explanation: format!(
                "the verifier's answer was not readable: {}",
                text.trim().chars().take(200).collect::<String>()
            ),
            issues: Vec::new(),
            suggested_correction: None,
        };
    };
    let verdict = obj
        .get("verdict")
        .and_then(Value::as_str)
        .and_then(Verdict::parse)
        .unwrap_or(Verdict::Uncertain);
    let confidence = number(obj.get("confidence"))
        .filter(|c| c.is_finite())
        .map_or(0.0, |c| if c > 1.0 { c / 100.0 } else { c }.clamp(0.0, 1.0));
    let issues = obj
        .get("issues")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|i| {
                    let kind = IssueKind::parse(i.get("type")?.as_str()?)?;
                    let severity = match i.get("severity").and_then(Value::as_str) {
                        Some(s) if s.eq_ignore_ascii_case("critical") => Severity::Critical,
                        Some(s) if s.eq_ignore_ascii_case("major") => Severity::Major,
                        _ => Severity::Minor,
                    };
                    Some(Issue {
                        kind,
                        description: i
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        severity,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let correction = ["suggestedCorrection", "suggested_correction"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    StepVerification {
        step_index: index,
        verdict,
        confidence,
        explanation: obj
            .get("explanation")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        issues,
        suggested_correction: correction,
    }
}

/// Failures of a verification.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("no steps to verify")]
    NoSteps,
    #[error("{0} steps is more than the {1} one verification accepts")]
    TooManySteps(usize, usize),
    #[error("threshold {0} is outside 0–1")]
    Threshold(f64),
    #[error("node {0} has no ThinkGraph steps")]
    NoNodeSteps(NodeId),
    #[error("node {0} not found")]
    NoNode(NodeId),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("model call failed: {0}")]
    Model(#[from] LlmError),
}

/// The steps of a thinking node (its ThinkGraph steps), as a chain to verify.
pub fn node_steps(store: &Store, node: NodeId) -> Result<(Node, Vec<StepInput>), VerifyError> {
    let n = store.node(node)?.ok_or(VerifyError::NoNode(node))?;
    let steps: Vec<StepInput> = crate::engines::thinkgraph::Step::of(&n)
        .into_iter()
        .filter(|s| !s.text.trim().is_empty())
        .map(|s| StepInput {
            content: s.text.trim().to_string(),
            kind: Some(s.kind.as_str().to_string()),
        })
        .collect();
    if steps.is_empty() {
        return Err(VerifyError::NoNodeSteps(node));
    }
    Ok((n, steps))
}

/// One chain to verify.
#[derive(Clone, Debug, Default)]
pub struct VerifyRequest {
    pub steps: Vec<StepInput>,
    /// The node the steps came from; the step nodes link to it.
    pub source: Option<NodeId>,
    pub original_query: Option<String>,
    /// Defaults to `[verify] correctness_threshold`.
    pub threshold: Option<f64>,
    /// Store in this session (the source node's, else a new one).
    pub session: Option<SessionId>,
}

/// A stored verification.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyOutcome {
    pub chain: ChainVerification,
    pub session: SessionId,
    pub run: RunId,
    /// The `verify_step` nodes, one per step.
    pub nodes: Vec<NodeId>,
}

/// Verifies chains with one provider and stores the results.
pub struct Verifier {
    pub store: Store,
    pub provider: Arc<dyn Provider>,
    pub call: CallSettings,
    /// The `verify/step` prompt.
    pub prompt: String,
    pub config: VerifyParams,
}

impl Verifier {
    /// Judges each step with the question and all preceding steps as context, one call
    /// per step, then scores the chain and stores a `verify_step` node per step.
    pub async fn verify(
        &self,
        req: VerifyRequest,
        cancel: &CancellationToken,
    ) -> Result<VerifyOutcome, VerifyError> {
        if req.steps.is_empty() {
            return Err(VerifyError::NoSteps);
        }
        if req.steps.len() > self.config.max_steps {
            return Err(VerifyError::TooManySteps(
                req.steps.len(),
                self.config.max_steps,
            ));
        }
        let threshold = req.threshold.unwrap_or(self.config.correctness_threshold);
        if !(0.0..=1.0).contains(&threshold) {
            return Err(VerifyError::Threshold(threshold));
        }
        let started = Instant::now();
        let mut judged = Vec::new();
        for (i, step) in req.steps.iter().enumerate() {
            let mut user = String::new();
            if let Some(q) = &req.original_query {
                user.push_str(&format!("Question:\n{q}\n\n"));
            }
            if i == 0 {
                user.push_str("Preceding steps: none.\n\n");
            } else {
                user.push_str("Preceding steps:\n");
                for (j, s) in req.steps[..i].iter().enumerate() {
                    user.push_str(&format!("Step {}: {}\n", j + 1, s.content));
                }
                user.push('\n');
            }
            user.push_str(&format!(
                "Step to verify (step {}{}):\n{}",
                i + 1,
                step.kind
                    .as_deref()
                    .map(|k| format!(", {k}"))
                    .unwrap_or_default(),
                step.content
            ));
            let reply = call_model(&*self.provider, &self.call, &self.prompt, user, cancel).await?;
            judged.push(parse_step(i, &reply.text));
        }
        let overall = chain_score(&judged, &self.config);
        let first = first_error(&judged);
        let patterns = detect_patterns(&judged, &self.config);
        let is_valid = overall >= threshold;
        let counts = |v: Verdict| judged.iter().filter(|s| s.verdict == v).count();
        let summary = format!(
            "{} of {} steps correct, {} incorrect, {} neutral, {} uncertain; score {:.3} {} threshold {:.2}{}{}",
            counts(Verdict::Correct),
            judged.len(),
            counts(Verdict::Incorrect),
            counts(Verdict::Neutral),
            counts(Verdict::Uncertain),
            overall,
            if is_valid { "≥" } else { "<" },
            threshold,
            if first >= 0 {
                format!("; first error at step {first}")
            } else {
                String::new()
            },
            if patterns.is_empty() {
                String::new()
            } else {
                format!(
                    "; patterns: {}",
                    patterns
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        );
        let chain = ChainVerification {
            overall_score: overall,
            is_valid,
            first_error_at: first,
            summary,
            steps: judged,
            patterns,
            metadata: VerifyMetadata {
                verification_model: self.call.model.clone(),
                duration_ms: started.elapsed().as_millis() as u64,
                verified_at: Utc::now(),
            },
        };
        self.persist(req, threshold, chain)
    }

    fn persist(
        &self,
        req: VerifyRequest,
        threshold: f64,
        chain: ChainVerification,
    ) -> Result<VerifyOutcome, VerifyError> {
        let source_session = match req.source {
            Some(n) => self.store.node(n)?.map(|n| n.session),
            None => None,
        };
        let session = req.session.or(source_session);
        let run_id = RunId::new();
        let mut nodes = Vec::new();
        let session = self.store.write(|w| {
            let session = match session {
                Some(s) => s,
                None => {
                    let title = req.original_query.as_deref().unwrap_or("step verification");
                    let mut s = Session::new(
                        crate::engines::orchestrator::title_from(title),
                        SessionSource::Glassbox,
                    );
                    s.provider = Some(self.provider.name().to_string());
                    s.model = Some(self.call.model.clone());
                    w.put_session(&s)?;
                    s.id
                }
            };
            for (input, v) in req.steps.iter().zip(&chain.steps) {
                let mut node = Node::new(session, NodeType::VerifyStep, input.content.clone());
                node.confidence = Some(v.confidence);
                node.model = Some(self.call.model.clone());
                let meta = [
                    ("run", json!(run_id)),
                    ("stepIndex", json!(v.step_index)),
                    ("stepType", json!(input.kind)),
                    ("verdict", json!(v.verdict)),
                    ("confidence", json!(v.confidence)),
                    ("explanation", json!(v.explanation)),
                    ("issues", json!(v.issues)),
                    ("suggestedCorrection", json!(v.suggested_correction)),
                    ("source", json!(req.source)),
                ];
                node.meta = meta.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                w.put_node(&node)?;
                if let Some(src) = req.source {
                    w.put_edge(&Edge::new(node.id, EdgeType::Refines, src))?;
                }
                if let Some(&prev) = nodes.last() {
                    w.put_edge(&Edge::new(node.id, EdgeType::Influences, prev))?;
                }
                nodes.push(node.id);
            }
            w.put_run(&Run {
                id: run_id,
                session,
                kind: RunKind::Verify,
                params: json!({
                    "steps": req.steps,
                    "thinkingNodeId": req.source,
                    "originalQuery": req.original_query,
                    "correctnessThreshold": threshold,
                }),
                summary: json!({
                    "overallScore": chain.overall_score,
                    "isValid": chain.is_valid,
                    "firstErrorAt": chain.first_error_at,
                    "summary": chain.summary,
                    "patterns": chain.patterns,
                    "metadata": chain.metadata,
                    "nodeIds": nodes,
                }),
                status: RunStatus::Done,
                created_at: chain.metadata.verified_at,
                finished_at: Some(Utc::now()),
            })?;
            Ok(session)
        })?;
        Ok(VerifyOutcome {
            chain,
            session,
            run: run_id,
            nodes,
        })
    }
}

/// One verified chain of a session as stored: the question, the steps with the model's
/// rating and any human rating.
struct LabelledChain {
    run: RunId,
    created_at: DateTime<Utc>,
    problem: String,
    /// The model that wrote the steps, when they came from a stored node.
    generator: Option<String>,
    /// The verifier's chain score.
    score: Option<f64>,
    duration_ms: Option<u64>,
    steps: Vec<LabelledStep>,
}

struct LabelledStep {
    text: String,
    /// The verifier's rating (−1 / 0 / 1).
    model: Option<i64>,
    /// The newest human checkpoint's rating.
    human: Option<i64>,
    /// The newest human checkpoint's correction.
    correction: Option<String>,
}

impl LabelledStep {
    /// The label a step carries: a human's rating wins over the model's.
    fn rating(&self) -> Option<i64> {
        self.human.or(self.model)
    }
}

/// Rating of a human checkpoint verdict: verified/correct 1, disagree/incorrect −1,
/// questionable/neutral/uncertain 0.
fn human_rating(verdict: &str) -> Option<i64> {
    match verdict.trim().to_ascii_lowercase().as_str() {
        "verified" | "correct" | "agree" => Some(1),
        "disagree" | "incorrect" | "wrong" => Some(-1),
        "questionable" | "neutral" | "uncertain" => Some(0),
        _ => None,
    }
}

/// The newest human checkpoint on `step` (its rating and correction), if any.
fn human_label(
    store: &Store,
    by_id: &BTreeMap<NodeId, &Node>,
    step: NodeId,
) -> Result<Option<(i64, Option<String>)>, StoreError> {
    let mut newest: Option<(&Node, i64)> = None;
    for e in store.edges_to(step, None)? {
        let Some(a) = by_id.get(&e.src) else { continue };
        if a.kind != NodeType::HumanAnnotation {
            continue;
        }
        let Some(r) = a
            .meta
            .get("verdict")
            .and_then(Value::as_str)
            .and_then(human_rating)
        else {
            continue;
        };
        // The edge index is ordered by edge type, not time: a later checkpoint overrules
        // an earlier one whatever its verdict.
        if newest.is_none_or(|(n, _)| (a.created_at, a.id) > (n.created_at, n.id)) {
            newest = Some((a, r));
        }
    }
    Ok(newest.map(|(a, r)| {
        let correction = a
            .meta
            .get("correction")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
            .map(str::to_string);
        (r, correction)
    }))
}

/// Every verification run of a session with at least one stored step, oldest first.
fn labelled_chains(store: &Store, session: SessionId) -> Result<Vec<LabelledChain>, StoreError> {
    let nodes = store.session_nodes(session)?;
    let by_id: BTreeMap<NodeId, &Node> = nodes.iter().map(|n| (n.id, n)).collect();
    let mut runs: Vec<Run> = store
        .session_runs(session)?
        .into_iter()
        .filter(|r| r.kind == RunKind::Verify)
        .collect();
    runs.sort_by_key(|r| (r.created_at, r.id));
    let mut out = Vec::new();
    for run in runs {
        let ids: Vec<NodeId> = run.summary["nodeIds"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
            .unwrap_or_default();
        let mut steps = Vec::new();
        for id in ids {
            let Some(n) = by_id.get(&id) else { continue };
            let model = n
                .meta
                .get("verdict")
                .and_then(Value::as_str)
                .and_then(Verdict::parse)
                .map(Verdict::rating);
            let (human, correction) = match human_label(store, &by_id, id)? {
                Some((r, c)) => (Some(r), c),
                None => (None, None),
            };
            steps.push(LabelledStep {
                text: n.text.clone(),
                model,
                human,
                correction,
            });
        }
        if steps.is_empty() {
            continue;
        }
        let source: Option<NodeId> = run.params["thinkingNodeId"]
            .as_str()
            .and_then(|s| s.parse().ok());
        let source_node = match source {
            Some(id) => match by_id.get(&id) {
                Some(n) => Some((*n).clone()),
                None => store.node(id)?,
            },
            None => None,
        };
        let problem = run.params["originalQuery"]
            .as_str()
            .map(str::to_string)
            .or_else(|| {
                let src = source?;
                // The question a thinking node answered: the query it was made for.
                let query = store
                    .edges_from(src, None)
                    .ok()?
                    .into_iter()
                    .find_map(|e| by_id.get(&e.dst).filter(|n| n.kind == NodeType::Query))
                    .map(|n| n.text.clone());
                query.or_else(|| {
                    nodes
                        .iter()
                        .take_while(|n| n.id != src)
                        .filter(|n| n.kind == NodeType::Query)
                        .last()
                        .map(|n| n.text.clone())
                })
            })
            .unwrap_or_default();
        out.push(LabelledChain {
            run: run.id,
            created_at: run.created_at,
            problem,
            generator: source_node.and_then(|n| n.model),
            score: run.summary["overallScore"].as_f64(),
            duration_ms: run.summary["metadata"]["durationMs"].as_u64(),
            steps,
        });
    }
    Ok(out)
}

/// PRM800K-style step labels of a session's verifications, one record per verified chain
/// (the PRM800K files hold one such record per line). Per step: `completions` holds the
/// step with its `rating` −1 / 0 / 1 — the newest human checkpoint's verdict where there
/// is one (verified 1, questionable 0, disagree −1), else the model's (correct 1,
/// incorrect −1, neutral and uncertain 0) — with `source` saying whose it is and
/// `modelRating` / `humanRating` keeping both; `human_completion` is the human's correction
/// of a step they rated −1; `chosen_completion` is 0, or null where the step was rated −1
/// or replaced by the human completion. `finish_reason` is `found_error` when any step is
/// rated −1, else `solution`.
pub fn prm800k(store: &Store, session: SessionId) -> Result<Value, StoreError> {
    let chains = labelled_chains(store, session)?;
    let records: Vec<Value> = chains
        .into_iter()
        .map(|c| {
            let steps: Vec<Value> = c
                .steps
                .iter()
                .map(|s| {
                    let rating = s.rating();
                    let human_completion = match (&s.correction, s.human) {
                        (Some(text), Some(-1)) => json!({
                            "text": text,
                            "rating": null,
                            "source": "human",
                            "flagged": false,
                            "corrected_rating": null,
                        }),
                        _ => Value::Null,
                    };
                    let chosen = if rating == Some(-1) || !human_completion.is_null() {
                        Value::Null
                    } else {
                        json!(0)
                    };
                    json!({
                        "completions": [{
                            "text": s.text,
                            "rating": rating,
                            "flagged": false,
                            "source": if s.human.is_some() { "human" } else { "model" },
                            "modelRating": s.model,
                            "humanRating": s.human,
                        }],
                        "human_completion": human_completion,
                        "chosen_completion": chosen,
                    })
                })
                .collect();
            let finish = if c.steps.iter().any(|s| s.rating() == Some(-1)) {
                "found_error"
            } else {
                "solution"
            };
            json!({
                "labeler": "glassbox",
                "timestamp": c.created_at.format("%Y-%m-%dT%H:%M:%S%.6f").to_string(),
                "generation": null,
                "is_quality_control_question": false,
                "is_initial_screening_question": false,
                "question": {
                    "problem": c.problem,
                    "pre_generated_steps": c.steps.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(),
                    "pre_generated_verifier_score": c.score,
                },
                "label": {
                    "steps": steps,
                    "total_time": c.duration_ms,
                    "finish_reason": finish,
                },
                "run": c.run,
            })
        })
        .collect();
    Ok(Value::Array(records))
}

/// ProcessBench-style labels of a session's verifications, one record per verified chain:
/// `{id, generator, problem, steps, label}` with `label` the index of the first step rated
/// wrong (a human checkpoint's verdict wins over the model's, as in [`prm800k`]), −1 if
/// none. `id` is the verification run, `generator` the model that wrote the steps when
/// they came from a stored node (else null).
pub fn processbench(store: &Store, session: SessionId) -> Result<Value, StoreError> {
    let chains = labelled_chains(store, session)?;
    let records: Vec<Value> = chains
        .into_iter()
        .map(|c| {
            let label = c
                .steps
                .iter()
                .position(|s| s.rating() == Some(-1))
                .map_or(-1, |i| i as i64);
            json!({
                "id": c.run,
                "generator": c.generator,
                "problem": c.problem,
                "steps": c.steps.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(),
                "label": label,
            })
        })
        .collect();
    Ok(Value::Array(records))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> VerifyParams {
        VerifyParams {
            correctness_threshold: 0.7,
            incorrect_factor: 0.3,
            neutral_factor: 0.9,
            uncertain_factor: 0.7,
            declining_spread: 0.2,
            declining_min_steps: 3,
            recurring_min_steps: 2,
            high_confidence: 0.8,
            max_steps: 50,
            effort: crate::engines::llm::Effort::High,
            max_tokens: 1024,
        }
    }

    fn step(i: usize, verdict: Verdict, confidence: f64, issues: &[IssueKind]) -> StepVerification {
        StepVerification {
            step_index: i,
            verdict,
            confidence,
            explanation: String::new(),
            issues: issues
                .iter()
                .map(|&kind| Issue {
                    kind,
                    description: String::new(),
                    severity: Severity::Minor,
                })
                .collect(),
            suggested_correction: None,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn the_defaults_hold_the_seed_values() {
        assert_eq!(VerifyParams::default(), cfg());
    }

    #[test]
    fn chain_score_is_the_geometric_mean_of_the_step_factors() {
        use Verdict::*;
        // (verdicts with confidences, product by hand, steps, expected score by hand)
        let table: &[(&[(Verdict, f64)], f64)] = &[
            // 0.9 · 0.8 = 0.72; √0.72
            (&[(Correct, 0.9), (Correct, 0.8)], 0.848_528_137_423_857),
            // 0.9 → 0.9
            (&[(Correct, 0.9)], 0.9),
            // (1 − 0.6) · 0.3 = 0.12
            (&[(Incorrect, 0.6)], 0.12),
            // 0.9 · 0.7 = 0.63; √0.63
            (&[(Neutral, 0.2), (Uncertain, 0.5)], 0.793_725_393_319_377),
            // 1.0 · (1 − 0.8)·0.3 = 0.06 · 0.9 = 0.054; ∛0.054
            (
                &[(Correct, 1.0), (Incorrect, 0.8), (Neutral, 0.5)],
                0.377_976_314_968_462,
            ),
            // an incorrect step judged with full confidence zeroes the chain
            (&[(Correct, 0.9), (Incorrect, 1.0)], 0.0),
            // 0.5⁴ = 0.0625; fourth root 0.5
            (
                &[
                    (Correct, 0.5),
                    (Correct, 0.5),
                    (Correct, 0.5),
                    (Correct, 0.5),
                ],
                0.5,
            ),
        ];
        for (steps, want) in table {
            let s: Vec<_> = steps
                .iter()
                .enumerate()
                .map(|(i, &(v, c))| step(i, v, c, &[]))
                .collect();
            let got = chain_score(&s, &cfg());
            assert!(close(got, *want), "{steps:?}: got {got}, want {want}");
        }
        assert_eq!(chain_score(&[], &cfg()), 0.0);
    }

    #[test]
    fn validity_and_first_error_follow_the_score() {
        use Verdict::*;
        let s = vec![step(0, Correct, 0.9, &[]), step(1, Correct, 0.8, &[])];
        assert!(chain_score(&s, &cfg()) >= 0.7);
        assert_eq!(first_error(&s), -1);
        let s = vec![
            step(0, Correct, 0.9, &[]),
            step(1, Neutral, 0.5, &[]),
            step(2, Incorrect, 0.7, &[]),
            step(3, Incorrect, 0.7, &[]),
        ];
        // 0.9 · 0.9 · 0.09 · 0.09 = 0.006561; fourth root = 0.284604989…
        assert!(close(chain_score(&s, &cfg()), 0.006_561_f64.powf(0.25)));
        assert!(chain_score(&s, &cfg()) < 0.7);
        assert_eq!(first_error(&s), 2);
    }

    fn names(p: &[Pattern]) -> Vec<String> {
        p.iter().map(|p| p.name.clone()).collect()
    }

    #[test]
    fn patterns_fire_exactly_on_their_triggers() {
        use IssueKind::*;
        use Verdict::*;
        let table: Vec<(Vec<StepVerification>, Vec<&str>)> = vec![
            // 0.9 ≥ 0.8 ≥ 0.6, spread 0.3 > 0.2
            (
                vec![
                    step(0, Correct, 0.9, &[]),
                    step(1, Correct, 0.8, &[]),
                    step(2, Correct, 0.6, &[]),
                ],
                vec!["declining_confidence"],
            ),
            // spread exactly 0.2 is not more than 0.2 (0.75 − 0.55 = 0.2 in binary too)
            (
                vec![
                    step(0, Correct, 0.75, &[]),
                    step(1, Correct, 0.7, &[]),
                    step(2, Correct, 0.55, &[]),
                ],
                vec![],
            ),
            // a rise breaks the monotone decline
            (
                vec![
                    step(0, Correct, 0.9, &[]),
                    step(1, Correct, 0.95, &[]),
                    step(2, Correct, 0.5, &[]),
                ],
                vec![],
            ),
            // two steps are too few for a decline
            (
                vec![step(0, Correct, 0.9, &[]), step(1, Neutral, 0.4, &[])],
                vec![],
            ),
            // the same issue in two steps; a different one in one step only
            (
                vec![
                    step(0, Neutral, 0.5, &[UnsupportedClaim]),
                    step(1, Neutral, 0.5, &[UnsupportedClaim, FactualError]),
                    step(2, Neutral, 0.5, &[]),
                ],
                vec!["recurring_unsupported_claim"],
            ),
            // an issue listed twice in one step is one step
            (
                vec![step(0, Neutral, 0.5, &[NonSequitur, NonSequitur])],
                vec![],
            ),
            // confident correct step right before an incorrect one
            (
                vec![step(0, Correct, 0.8, &[]), step(1, Incorrect, 0.9, &[])],
                vec!["overconfidence_before_error"],
            ),
            // not confident enough
            (
                vec![step(0, Correct, 0.79, &[]), step(1, Incorrect, 0.9, &[])],
                vec![],
            ),
            // not immediately followed
            (
                vec![
                    step(0, Correct, 0.9, &[]),
                    step(1, Neutral, 0.9, &[]),
                    step(2, Incorrect, 0.9, &[]),
                ],
                vec![],
            ),
        ];
        for (steps, want) in table {
            assert_eq!(names(&detect_patterns(&steps, &cfg())), want, "{steps:?}");
        }
        let p = detect_patterns(
            &[
                step(0, Correct, 0.95, &[LogicalError]),
                step(1, Incorrect, 0.7, &[LogicalError]),
                step(2, Incorrect, 0.6, &[]),
            ],
            &cfg(),
        );
        assert_eq!(
            names(&p),
            vec![
                "declining_confidence",
                "recurring_logical_error",
                "overconfidence_before_error"
            ]
        );
        assert_eq!(p[1].affected_steps, vec![0, 1]);
        assert_eq!(p[2].affected_steps, vec![0, 1]);
    }

    #[test]
    fn step_answers_are_read_tolerantly() {
        let s = parse_step(
            2,
            "Here: {\"verdict\": \"Incorrect\", \"confidence\": 0.8, \"explanation\": \"x\", \"issues\": [{\"type\": \"factual error\", \"description\": \"d\", \"severity\": \"major\"}, {\"type\": \"vibes\"}], \"suggestedCorrection\": \"fix\"}",
        );
        assert_eq!(s.step_index, 2);
        assert_eq!(s.verdict, Verdict::Incorrect);
        assert_eq!(s.confidence, 0.8);
        assert_eq!(s.issues.len(), 1);
        assert_eq!(s.issues[0].kind, IssueKind::FactualError);
        assert_eq!(s.issues[0].severity, Severity::Major);
        assert_eq!(s.suggested_correction.as_deref(), Some("fix"));
        let s = parse_step(0, "I think it is fine");
        assert_eq!((s.verdict, s.confidence), (Verdict::Uncertain, 0.0));
    }

    /// A session with one stored verification of three steps (model verdicts correct,
    /// incorrect, neutral) and the step node ids.
    fn labelled_session(store: &Store) -> (SessionId, Vec<NodeId>) {
        let session = Session::new("labels", SessionSource::Glassbox);
        let run = RunId::new();
        let verdicts = ["correct", "incorrect", "neutral"];
        let nodes: Vec<Node> = verdicts
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut n = Node::new(session.id, NodeType::VerifyStep, format!("step {i}"));
                n.meta.insert("verdict".into(), json!(v));
                n
            })
            .collect();
        let ids: Vec<NodeId> = nodes.iter().map(|n| n.id).collect();
        let created = Utc::now();
        store
            .write(|w| {
                w.put_session(&session)?;
                for n in &nodes {
                    w.put_node(n)?;
                }
                w.put_run(&Run {
                    id: run,
                    session: session.id,
                    kind: RunKind::Verify,
                    params: json!({"originalQuery": "Is 91 prime?"}),
                    summary: json!({
                        "overallScore": 0.25,
                        "metadata": {"durationMs": 42},
                        "nodeIds": ids,
                    }),
                    status: RunStatus::Done,
                    created_at: created,
                    finished_at: Some(created),
                })
            })
            .unwrap();
        (session.id, ids)
    }

    /// A human checkpoint on `target`, made `age_s` seconds ago.
    fn checkpoint(
        store: &Store,
        session: SessionId,
        target: NodeId,
        verdict: &str,
        correction: Option<&str>,
        age_s: i64,
    ) {
        let mut a = Node::new(session, NodeType::HumanAnnotation, "checkpoint");
        a.created_at = Utc::now() - chrono::Duration::seconds(age_s);
        a.meta.insert("verdict".into(), json!(verdict));
        a.meta.insert("correction".into(), json!(correction));
        let edge = match verdict {
            "verified" => EdgeType::Supports,
            "disagree" => EdgeType::Contradicts,
            _ => EdgeType::Refines,
        };
        store
            .write(|w| {
                w.put_node(&a)?;
                w.put_edge(&Edge::new(a.id, edge, target))
            })
            .unwrap();
    }

    fn ratings(prm: &Value) -> Vec<Value> {
        prm[0]["label"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["completions"][0]["rating"].clone())
            .collect()
    }

    #[test]
    fn model_verdicts_become_prm800k_and_processbench_labels() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        let (sid, _) = labelled_session(&store);
        let prm = prm800k(&store, sid).unwrap();
        assert_eq!(prm.as_array().unwrap().len(), 1);
        assert_eq!(ratings(&prm), vec![json!(1), json!(-1), json!(0)]);
        let steps = &prm[0]["label"]["steps"];
        assert_eq!(steps[0]["chosen_completion"], 0);
        assert_eq!(steps[1]["chosen_completion"], Value::Null);
        assert_eq!(steps[1]["human_completion"], Value::Null);
        assert_eq!(steps[1]["completions"][0]["source"], "model");
        assert_eq!(steps[1]["completions"][0]["flagged"], false);
        assert_eq!(prm[0]["label"]["finish_reason"], "found_error");
        assert_eq!(prm[0]["label"]["total_time"], 42);
        assert_eq!(prm[0]["question"]["problem"], "Is 91 prime?");
        assert_eq!(
            prm[0]["question"]["pre_generated_steps"],
            json!(["step 0", "step 1", "step 2"])
        );
        assert_eq!(prm[0]["question"]["pre_generated_verifier_score"], 0.25);
        let pb = processbench(&store, sid).unwrap();
        assert_eq!(pb[0]["label"], 1);
        assert_eq!(pb[0]["steps"], json!(["step 0", "step 1", "step 2"]));
        assert_eq!(pb[0]["generator"], Value::Null);
    }

    #[test]
    fn the_newest_human_checkpoint_overrules_the_model_and_older_checkpoints() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        let (sid, ids) = labelled_session(&store);
        // Step 1: disagreed with long ago, then verified: the newer verdict holds even
        // though a `contradicts` edge sorts after a `supports` one.
        checkpoint(&store, sid, ids[1], "disagree", Some("old"), 60);
        checkpoint(&store, sid, ids[1], "verified", None, 10);
        // Step 2: verified, then disagreed with a correction.
        checkpoint(&store, sid, ids[2], "verified", None, 50);
        checkpoint(&store, sid, ids[2], "disagree", Some("91 = 7 × 13"), 5);
        let prm = prm800k(&store, sid).unwrap();
        assert_eq!(ratings(&prm), vec![json!(1), json!(1), json!(-1)]);
        let steps = &prm[0]["label"]["steps"];
        assert_eq!(steps[1]["completions"][0]["source"], "human");
        assert_eq!(steps[1]["completions"][0]["modelRating"], -1);
        assert_eq!(steps[1]["completions"][0]["humanRating"], 1);
        assert_eq!(steps[1]["human_completion"], Value::Null);
        assert_eq!(steps[1]["chosen_completion"], 0);
        assert_eq!(
            steps[2]["human_completion"],
            json!({"text": "91 = 7 × 13", "rating": null, "source": "human",
                   "flagged": false, "corrected_rating": null})
        );
        assert_eq!(steps[2]["chosen_completion"], Value::Null);
        assert_eq!(steps[2]["completions"][0]["modelRating"], 0);
        assert_eq!(processbench(&store, sid).unwrap()[0]["label"], 2);

        // A questionable checkpoint rates the step 0 and leaves no wrong step.
        checkpoint(&store, sid, ids[2], "questionable", Some("not sure"), 1);
        let prm = prm800k(&store, sid).unwrap();
        assert_eq!(ratings(&prm), vec![json!(1), json!(1), json!(0)]);
        assert_eq!(prm[0]["label"]["steps"][2]["human_completion"], Value::Null);
        assert_eq!(prm[0]["label"]["finish_reason"], "solution");
        assert_eq!(processbench(&store, sid).unwrap()[0]["label"], -1);
    }

    #[test]
    fn a_session_without_verifications_has_no_labels() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        let s = Session::new("plain", SessionSource::Glassbox);
        store
            .write(|w| {
                w.put_session(&s)?;
                w.put_node(&Node::new(s.id, NodeType::Query, "q"))
            })
            .unwrap();
        assert_eq!(prm800k(&store, s.id).unwrap(), json!([]));
        assert_eq!(processbench(&store, s.id).unwrap(), json!([]));
    }
}
