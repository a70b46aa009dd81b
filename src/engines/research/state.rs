//! The research state (seed 001 `ResearchState`) and its routers. The routers are pure
//! functions of the state; the driver moves only along [`Stage::may_go_to`], so an illegal
//! transition is an error, never a silent end.

use std::fmt;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::store::{NodeId, RunId, SessionId};

/// A tool a plan step may call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    /// The local knowledge base (`glassbox knowledge add`).
    #[default]
    KnowledgeSearch,
    /// Full-text search over stored sessions.
    SessionSearch,
    /// Memory (what glassbox learned from earlier sessions).
    MemorySearch,
    /// A SearXNG instance's JSON API; needs `[research] allow_network`.
    WebSearch,
    /// One web page's text; needs `[research] allow_network`.
    FetchUrl,
}

impl Tool {
    pub const ALL: [Tool; 5] = [
        Tool::KnowledgeSearch,
        Tool::SessionSearch,
        Tool::MemorySearch,
        Tool::WebSearch,
        Tool::FetchUrl,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Tool::KnowledgeSearch => "knowledge_search",
            Tool::SessionSearch => "session_search",
            Tool::MemorySearch => "memory_search",
            Tool::WebSearch => "web_search",
            Tool::FetchUrl => "fetch_url",
        }
    }

    /// Whether the tool reaches the network.
    pub fn network(self) -> bool {
        matches!(self, Tool::WebSearch | Tool::FetchUrl)
    }

    /// What the tool does, as the thinker is told.
    pub fn describe(self) -> &'static str {
        match self {
            Tool::KnowledgeSearch => {
                "searches the user's local knowledge base (documents and notes); input: a search query"
            }
            Tool::SessionSearch => {
                "full-text search over the user's stored reasoning sessions; input: keywords"
            }
            Tool::MemorySearch => {
                "searches what glassbox learned from earlier sessions; input: a search query"
            }
            Tool::WebSearch => "searches the web through SearXNG; input: a search query",
            Tool::FetchUrl => "fetches one web page's text; input: an http(s) URL",
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Tool {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tool::ALL
            .into_iter()
            .find(|t| t.as_str() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Tool::ALL.iter().map(|t| t.as_str()).collect();
                format!("unknown tool {s:?} (one of {})", names.join(", "))
            })
    }
}

/// One plan step (seed 001 `ResearchStep`); `output` is set when its tool has run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub id: String,
    pub tool: Tool,
    pub input: String,
    pub rationale: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Why the tool failed; the synthesizer is told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The step's `tool_call` node, once it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeId>,
}

impl Step {
    pub fn done(&self) -> bool {
        self.output.is_some() || self.error.is_some()
    }
}

/// The plan (seed 001 `ResearchPlan`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub objective: String,
    pub steps: Vec<Step>,
    pub estimated_token_budget: u64,
    /// 1 for the first plan, one more for each revision.
    pub revision: u32,
}

/// The auditor's verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    #[default]
    Approved,
    Rejected,
}

/// One policy violation: the rule, quoted from the policy, and what breaks it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub rule: String,
    pub problem: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (policy: \"{}\")", self.problem, self.rule)
    }
}

/// The audit (seed 001 `AuditResult`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditResult {
    pub verdict: Verdict,
    pub policy_violations: Vec<Violation>,
    pub suggestions: Vec<String>,
    /// What the auditor said that the policy does not back (a rejection without a quoted
    /// rule), kept for the reader.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A node of the graph (seed 001's node names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Thinker,
    Auditor,
    HitlGate,
    ToolExecutor,
    Synthesizer,
    End,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Thinker => "thinker",
            Stage::Auditor => "auditor",
            Stage::HitlGate => "hitl_gate",
            Stage::ToolExecutor => "tool_executor",
            Stage::Synthesizer => "synthesizer",
            Stage::End => "end",
        }
    }

    /// The graph's edges: where each node may lead.
    pub fn may_go_to(self, to: Stage) -> bool {
        use Stage::*;
        matches!(
            (self, to),
            (Thinker, Auditor | End)
                | (Auditor, Thinker | HitlGate | End)
                | (HitlGate, ToolExecutor | Thinker | Auditor | End)
                | (ToolExecutor, ToolExecutor | Synthesizer)
                | (Synthesizer, End)
        )
    }
}

/// Where a run stands (seed 001 `status`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Started,
    Thinking,
    Auditing,
    AwaitingApproval,
    Executing,
    Synthesizing,
    Complete,
    /// Ended: the plan was rejected `max_plan_revisions` times.
    Rejected,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Started => "started",
            Status::Thinking => "thinking",
            Status::Auditing => "auditing",
            Status::AwaitingApproval => "awaiting_approval",
            Status::Executing => "executing",
            Status::Synthesizing => "synthesizing",
            Status::Complete => "complete",
            Status::Rejected => "rejected",
            Status::Failed => "failed",
        }
    }

    /// Whether the run has ended for good.
    pub fn finished(self) -> bool {
        matches!(self, Status::Complete | Status::Rejected | Status::Failed)
    }
}

/// One entry of the reasoning trace (seed 001 `ReasoningEntry`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningEntry {
    pub node: Stage,
    pub timestamp: DateTime<Utc>,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_thought: Option<String>,
}

/// What a citation points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CitationKind {
    Knowledge,
    Session,
    Memory,
    Url,
}

/// One numbered source the report may cite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    pub n: usize,
    pub kind: CitationKind,
    /// A file path, `session/<id>#<node>`, `memory/<id>`, or a URL.
    pub source: String,
    /// Character span in the source document (knowledge chunks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<[usize; 2]>,
    pub label: String,
    /// The text the synthesizer was given.
    pub text: String,
    /// The step (its `tool_call` node) that found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<NodeId>,
    /// Whether the report cites it (`[n]`).
    pub cited: bool,
}

/// The whole state of one research run (seed 001 `ResearchState`); it is the run's summary
/// in the store, rewritten after every node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchState {
    /// The run id (seed 001 `threadId`).
    pub thread_id: RunId,
    pub session_id: SessionId,
    pub user_query: String,
    pub plan: Option<Plan>,
    pub audit_result: Option<AuditResult>,
    /// Rejected plans so far (seed 001 `planRevisionCount`).
    pub revision: u32,
    pub max_plan_revisions: u32,
    pub reasoning: Vec<ReasoningEntry>,
    pub status: Status,
    pub human_approved: bool,
    /// The node to run next.
    pub next: Stage,
    /// Suggestions the next plan must address (the audit's, or the person's note).
    #[serde(default)]
    pub feedback: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_report: Option<String>,
    #[serde(default)]
    pub citations: Vec<Citation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Why the run ended without a report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
    /// The last node of the run's chain (the next one links from it).
    pub last_node: NodeId,
    /// The report's node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_node: Option<NodeId>,
}

impl ResearchState {
    /// A run's state before its first node: `query` is the question's node, the chain's start.
    pub fn new(
        thread_id: RunId,
        session_id: SessionId,
        user_query: String,
        max_plan_revisions: u32,
        query: NodeId,
    ) -> Self {
        Self {
            thread_id,
            session_id,
            user_query,
            plan: None,
            audit_result: None,
            revision: 0,
            max_plan_revisions,
            reasoning: Vec::new(),
            status: Status::Started,
            human_approved: false,
            next: Stage::Thinker,
            feedback: Vec::new(),
            final_report: None,
            citations: Vec::new(),
            error_message: None,
            end_reason: None,
            last_node: query,
            report_node: None,
        }
    }

    /// Appends to the reasoning trace, keeping the last `cap` entries (seed 001's reducer).
    pub fn reason(&mut self, node: Stage, summary: impl Into<String>, cap: usize) {
        self.reasoning.push(ReasoningEntry {
            node,
            timestamp: Utc::now(),
            summary: summary.into(),
            raw_thought: None,
        });
        if self.reasoning.len() > cap {
            let drop = self.reasoning.len() - cap;
            self.reasoning.drain(..drop);
        }
    }

    /// The first plan step whose tool has not run.
    pub fn pending_step(&self) -> Option<usize> {
        self.plan.as_ref()?.steps.iter().position(|s| !s.done())
    }
}

/// Seed 001 `routeAfterAudit`: an approved plan goes to the gate; a rejected one back to
/// the thinker, until `max_plan_revisions` rejections end the run.
pub fn route_after_audit(s: &ResearchState) -> Stage {
    match s.audit_result.as_ref().map(|a| a.verdict) {
        Some(Verdict::Approved) => Stage::HitlGate,
        _ if s.revision >= s.max_plan_revisions => Stage::End,
        _ => Stage::Thinker,
    }
}

/// After the gate: tools once a person approved; `None` means wait for one.
pub fn route_after_gate(s: &ResearchState) -> Option<Stage> {
    s.human_approved.then_some(Stage::ToolExecutor)
}

/// After a tool ran: the next step, or the synthesizer once all ran.
pub fn route_after_tool(s: &ResearchState) -> Stage {
    if s.pending_step().is_some() {
        Stage::ToolExecutor
    } else {
        Stage::Synthesizer
    }
}

/// A move the graph does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("illegal research transition {} → {}", from.as_str(), to.as_str())]
pub struct IllegalTransition {
    pub from: Stage,
    pub to: Stage,
}

/// Checks a move against the graph.
pub fn transition(from: Stage, to: Stage) -> Result<Stage, IllegalTransition> {
    if from.may_go_to(to) {
        Ok(to)
    } else {
        Err(IllegalTransition { from, to })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> ResearchState {
        ResearchState::new(RunId::new(), SessionId::new(), "q".into(), 3, NodeId::new())
    }

    fn audit(verdict: Verdict) -> Option<AuditResult> {
        Some(AuditResult {
            verdict,
            ..Default::default()
        })
    }

    #[test]
    fn the_audit_router_revises_until_the_ceiling() {
        let mut s = state();
        s.audit_result = audit(Verdict::Rejected);
        s.revision = 1;
        assert_eq!(route_after_audit(&s), Stage::Thinker);
        s.revision = 3;
        assert_eq!(route_after_audit(&s), Stage::End);
        s.audit_result = audit(Verdict::Approved);
        assert_eq!(route_after_audit(&s), Stage::HitlGate);
        s.audit_result = None;
        s.revision = 0;
        assert_eq!(route_after_audit(&s), Stage::Thinker);
    }

    #[test]
    fn the_gate_waits_for_a_person_and_tools_run_in_order() {
        let mut s = state();
        assert_eq!(route_after_gate(&s), None);
        s.human_approved = true;
        assert_eq!(route_after_gate(&s), Some(Stage::ToolExecutor));
        let step = |output: Option<&str>| Step {
            id: "s".into(),
            tool: Tool::KnowledgeSearch,
            input: "x".into(),
            rationale: String::new(),
            output: output.map(str::to_string),
            error: None,
            node: None,
        };
        s.plan = Some(Plan {
            steps: vec![step(Some("done")), step(None)],
            ..Default::default()
        });
        assert_eq!(s.pending_step(), Some(1));
        assert_eq!(route_after_tool(&s), Stage::ToolExecutor);
        if let Some(p) = s.plan.as_mut() {
            p.steps[1].output = Some("y".into());
        }
        assert_eq!(route_after_tool(&s), Stage::Synthesizer);
    }

    #[test]
    fn only_the_graphs_edges_are_legal() {
        assert!(transition(Stage::Thinker, Stage::Auditor).is_ok());
        assert!(transition(Stage::Auditor, Stage::HitlGate).is_ok());
        let e = transition(Stage::Thinker, Stage::ToolExecutor).unwrap_err();
        assert_eq!(
            e.to_string(),
            "illegal research transition thinker → tool_executor"
        );
        assert!(transition(Stage::Auditor, Stage::Synthesizer).is_err());
        assert!(transition(Stage::End, Stage::Thinker).is_err());
    }

    #[test]
    fn the_trace_keeps_the_last_entries() {
        let mut s = state();
        for i in 0..25 {
            s.reason(Stage::Thinker, format!("entry {i}"), 20);
        }
        assert_eq!(s.reasoning.len(), 20);
        assert_eq!(s.reasoning[0].summary, "entry 5");
        assert_eq!(s.reasoning[19].summary, "entry 24");
    }
}
