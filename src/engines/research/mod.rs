//! DeepTrust research (seed 001): the model plans, an auditor checks the plan against a
//! written policy, a person approves before any tool runs, the tools run one plan step at a
//! time, and the report cites its sources.
//!
//! The state ([`ResearchState`]) is the run's summary in the store, rewritten after every
//! node; each node leaves a store node (query → plan → audit → … → tool calls → report,
//! linked in order), so a run paused at the gate, cancelled or killed continues with
//! [`ResearchEngine::resume`].

mod answers;
mod flow;
mod params;
mod policy;
mod render;
mod state;
mod tools;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[cfg(all(test, feature = "local"))]
pub(crate) use answers::all_schemas;
pub use answers::{AuditAnswer, PlanDraft, StepDraft, ViolationDraft, plan_schema};
pub use params::{ResearchParams, StageSettings};
pub use policy::Policy;
pub use state::{
    AuditResult, Citation, CitationKind, IllegalTransition, Plan, ReasoningEntry, ResearchState,
    Stage, Status, Step, Tool, Verdict, Violation, route_after_audit, route_after_gate,
    route_after_tool, transition,
};
pub use tools::{Found, Tools, locator};

use crate::engines::llm::{LlmError, Provider};
use crate::store::{Run, RunId, RunKind, SessionId, Store, StoreError};

/// The prompts of the three model stages.
#[derive(Clone, Debug, Default)]
pub struct ResearchPrompts {
    pub thinker: String,
    pub auditor: String,
    pub synthesizer: String,
    pub repair: String,
}

impl ResearchPrompts {
    pub fn from(p: &crate::engines::prompts::Prompts) -> Self {
        Self {
            thinker: p.get("research/thinker").to_string(),
            auditor: p.get("research/auditor").to_string(),
            synthesizer: p.get("research/synthesizer").to_string(),
            repair: p.get("research/repair").to_string(),
        }
    }
}

/// Progress of a run, one per line with `--json` (seed 001's event names: `start`, then a
/// `research` event after every node carrying the whole state; `delta` events carry the
/// streamed text of the model stages).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResearchEvent {
    Start {
        #[serde(rename = "runId")]
        run: RunId,
        #[serde(rename = "sessionId")]
        session: SessionId,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        resumed: bool,
    },
    Research {
        node: &'static str,
        state: Box<ResearchState>,
    },
    Delta {
        node: &'static str,
        text: String,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        thinking: bool,
    },
}

/// One research question to start.
#[derive(Clone, Debug)]
pub struct ResearchRequest {
    pub question: String,
    pub policy: Policy,
    /// Continue this session; a new one otherwise.
    pub session: Option<SessionId>,
    /// Approved in advance: the tools run as soon as the audit passes.
    pub approve: bool,
}

/// A change to one plan step at the gate (1-based `step`).
#[derive(Clone, Debug, PartialEq)]
pub struct StepEdit {
    pub step: usize,
    pub tool: Option<Tool>,
    pub input: Option<String>,
}

/// What a person decided at the gate (or nothing, to continue an interrupted run).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decision {
    pub approve: bool,
    /// Reject the plan; the note becomes the thinker's feedback.
    pub reject: Option<String>,
    /// Step changes; the edited plan is audited again.
    pub edits: Vec<StepEdit>,
}

impl Decision {
    pub fn is_empty(&self) -> bool {
        !self.approve && self.reject.is_none() && self.edits.is_empty()
    }
}

/// Failures of a research run.
#[derive(Debug, thiserror::Error)]
pub enum ResearchError {
    #[error("the question is empty")]
    EmptyQuestion,
    #[error("run {0} not found")]
    NoRun(RunId),
    #[error("run {0} is not a research run")]
    NotResearch(RunId),
    #[error("run {run} already ended ({status})")]
    Finished { run: RunId, status: &'static str },
    #[error("run {run} is still running ({worker}); stop that process first")]
    Busy { run: RunId, worker: String },
    #[error("run {run}: {why}")]
    Unreadable { run: RunId, why: String },
    #[error("run {run} {why}")]
    Decision { run: RunId, why: String },
    #[error("{stage}: {error} (resume with: glassbox research --resume {run})")]
    Model {
        stage: &'static str,
        run: RunId,
        error: LlmError,
    },
    #[error("cancelled (resume with: glassbox research --resume {0})")]
    Cancelled(RunId),
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ResearchError {
    /// The run to resume, when the failure left one.
    pub fn resumable(&self) -> Option<RunId> {
        match self {
            ResearchError::Model { run, .. } | ResearchError::Cancelled(run) => Some(*run),
            _ => None,
        }
    }
}

/// Runs research against one provider, persisting every node as it goes.
pub struct ResearchEngine {
    pub store: Store,
    pub provider: Arc<dyn Provider>,
    pub model: String,
    pub params: ResearchParams,
    pub prompts: ResearchPrompts,
    pub tools: Tools,
    pub seed: Option<u64>,
}

impl ResearchEngine {
    /// Starts a run: plans and audits until the plan passes (then waits at the gate, or
    /// goes on when approved in advance) or the revisions run out. Returns the state where
    /// it stopped.
    pub async fn start(
        &self,
        req: ResearchRequest,
        events: mpsc::UnboundedSender<ResearchEvent>,
        cancel: CancellationToken,
    ) -> Result<ResearchState, ResearchError> {
        if req.question.trim().is_empty() {
            return Err(ResearchError::EmptyQuestion);
        }
        let run = flow::Running::create(self, &req, events, cancel).await?;
        run.drive().await
    }

    /// Continues `run` with a person's decision at the gate, or (with an empty decision) an
    /// interrupted run from the node it stopped at.
    pub async fn resume(
        &self,
        run: RunId,
        decision: Decision,
        events: mpsc::UnboundedSender<ResearchEvent>,
        cancel: CancellationToken,
    ) -> Result<ResearchState, ResearchError> {
        let mut r = flow::Running::load(self, run, events, cancel).await?;
        r.decide(decision).await?;
        r.drive().await
    }
}

/// Key of a research run's summary holding its state.
const STATE: &str = "state";

/// The state a research run's summary holds.
pub fn run_state(run: &Run) -> Result<ResearchState, String> {
    if run.kind != RunKind::Research {
        return Err("not a research run".into());
    }
    let v = run
        .summary
        .get(STATE)
        .cloned()
        .ok_or("the run has no research state")?;
    serde_json::from_value(v).map_err(|e| format!("its state cannot be read: {e}"))
}

/// The state of research run `id` in `store`.
pub fn load_state(store: &Store, id: RunId) -> Result<ResearchState, ResearchError> {
    let run = store.run(id)?.ok_or(ResearchError::NoRun(id))?;
    if run.kind != RunKind::Research {
        return Err(ResearchError::NotResearch(id));
    }
    run_state(&run).map_err(|why| ResearchError::Unreadable { run: id, why })
}

/// The research policy text a run was audited against.
pub fn run_policy(run: &Run) -> Option<&str> {
    run.params.get("policy").and_then(Value::as_str)
}
