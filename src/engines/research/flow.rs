//! The driver: one node at a time along the graph, the state saved after each, every node
//! leaving its store node linked after the one before.

use chrono::Utc;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::answers::{AuditAnswer, PlanDraft, plan_schema};
use super::params::StageSettings;
use super::policy::Policy;
use super::render::{audit_markdown, cite, draft_of, plan_markdown};
use super::state::{
    AuditResult, Citation, Plan, ResearchState, Stage, Status, Step, Tool, Verdict, Violation,
    route_after_audit, route_after_gate, route_after_tool, transition,
};
use super::tools::locator;
use super::{ResearchEngine, ResearchError, ResearchEvent, ResearchRequest, STATE, load_state};
use crate::engines::llm::{ChatRequest, LlmError, Message, ThinkingMode, ToolSpec};
use crate::engines::memory::learn::queue::{worker_gone, worker_id};
use crate::engines::orchestrator::title_from;
use crate::engines::structured::{Artifact, read};
use crate::store::{
    Edge, EdgeType, Node, NodeStatus, NodeType, Run, RunId, RunKind, RunStatus, Session,
    SessionSource,
};

/// Keys of a research node's `meta`.
const RUN: &str = "run";
const STAGE: &str = "stage";
/// Key of a run's summary naming the process driving it (`pid:<n>`).
const WORKER: &str = "worker";

mod gate;

/// A run being driven.
pub(super) struct Running<'a> {
    e: &'a ResearchEngine,
    run: Run,
    st: ResearchState,
    policy: Policy,
    /// Approved in advance: the gate lets the tools run as soon as the audit passes.
    approve: bool,
    events: mpsc::UnboundedSender<ResearchEvent>,
    cancel: CancellationToken,
}

impl<'a> Running<'a> {
    /// A new run: its session (new or continued), query node and `runs` row.
    pub(super) async fn create(
        e: &'a ResearchEngine,
        req: &ResearchRequest,
        events: mpsc::UnboundedSender<ResearchEvent>,
        cancel: CancellationToken,
    ) -> Result<Self, ResearchError> {
        let session = match req.session {
            Some(s) => s,
            None => {
                let mut s = Session::new(title_from(&req.question), SessionSource::Glassbox);
                s.provider = Some(e.provider.name().to_string());
                s.model = Some(e.model.clone());
                let id = s.id;
                e.store.write_async(move |w| w.put_session(&s)).await?;
                id
            }
        };
        let run_id = RunId::new();
        let mut query = Node::new(session, NodeType::Query, req.question.clone());
        query.meta.insert(RUN.into(), json!(run_id.to_string()));
        query.meta.insert(STAGE.into(), json!("query"));
        let st = ResearchState::new(
            run_id,
            session,
            req.question.clone(),
            e.params.max_plan_revisions,
            query.id,
        );
        let run = Run {
            id: run_id,
            session,
            kind: RunKind::Research,
            params: json!({
                "question": req.question,
                "policy": req.policy.text,
                "policy_source": req.policy.source,
                "approve": req.approve,
                "allow_network": e.params.allow_network,
                "query": query.id,
                "model": e.model,
                "provider": e.provider.name(),
            }),
            summary: json!({}),
            status: RunStatus::Running,
            created_at: Utc::now(),
            finished_at: None,
        };
        let q = query.clone();
        e.store.write_async(move |w| w.put_node(&q)).await?;
        let mut r = Self {
            e,
            run,
            st,
            policy: req.policy.clone(),
            approve: req.approve,
            events,
            cancel,
        };
        r.emit_start(false);
        r.save().await?;
        r.emit(Stage::Thinker, "_start");
        Ok(r)
    }

    /// A stored run, to continue.
    pub(super) async fn load(
        e: &'a ResearchEngine,
        id: RunId,
        events: mpsc::UnboundedSender<ResearchEvent>,
        cancel: CancellationToken,
    ) -> Result<Self, ResearchError> {
        let st = load_state(&e.store, id)?;
        let run = e.store.run(id)?.ok_or(ResearchError::NoRun(id))?;
        if st.status.finished() {
            return Err(ResearchError::Finished {
                run: id,
                status: st.status.as_str(),
            });
        }
        let worker = run.summary.get(WORKER).and_then(Value::as_str);
        if run.status == RunStatus::Running
            && st.status != Status::AwaitingApproval
            && worker.is_some_and(|w| w != worker_id() && !worker_gone(Some(w)))
        {
            return Err(ResearchError::Busy {
                run: id,
                worker: worker.unwrap_or_default().to_string(),
            });
        }
        let policy = Policy {
            text: super::run_policy(&run).unwrap_or_default().to_string(),
            source: run.params["policy_source"]
                .as_str()
                .unwrap_or("stored")
                .to_string(),
        };
        let approve = run.params["approve"].as_bool().unwrap_or(false);
        // A node an earlier attempt left streaming (killed, or cancelled mid-write) is marked
        // interrupted; this attempt makes its own.
        let mine = id.to_string();
        let stale: Vec<Node> = e
            .store
            .session_nodes(st.session_id)?
            .into_iter()
            .filter(|n| n.status == NodeStatus::Streaming)
            .filter(|n| n.meta.get(RUN).and_then(Value::as_str) == Some(mine.as_str()))
            .map(|mut n| {
                n.status = NodeStatus::Interrupted;
                n
            })
            .collect();
        if !stale.is_empty() {
            e.store
                .write_async(move |w| stale.iter().try_for_each(|n| w.put_node(n)))
                .await?;
        }
        let r = Self {
            e,
            run,
            st,
            policy,
            approve,
            events,
            cancel,
        };
        r.emit_start(true);
        Ok(r)
    }

    /// Runs node after node until the gate waits, or the run ends.
    pub(super) async fn drive(mut self) -> Result<ResearchState, ResearchError> {
        self.run.status = RunStatus::Running;
        self.run.finished_at = None;
        loop {
            if self.cancel.is_cancelled() {
                return Err(self.interrupted().await?);
            }
            let from = self.st.next;
            let to = match from {
                Stage::Thinker => self.think().await?,
                Stage::Auditor => {
                    self.audit().await?;
                    route_after_audit(&self.st)
                }
                Stage::HitlGate => {
                    if self.approve && !self.st.human_approved {
                        self.st.human_approved = true;
                        let cap = self.e.params.reasoning_entries;
                        self.st
                            .reason(Stage::HitlGate, "approved in advance (--approve)", cap);
                        self.annotate("approved in advance (--approve)").await?;
                    }
                    match route_after_gate(&self.st) {
                        Some(to) => to,
                        None => {
                            self.st.status = Status::AwaitingApproval;
                            self.save().await?;
                            self.emit(Stage::HitlGate, "hitl_gate");
                            return Ok(self.st);
                        }
                    }
                }
                Stage::ToolExecutor => {
                    self.execute().await?;
                    route_after_tool(&self.st)
                }
                Stage::Synthesizer => {
                    self.synthesize().await?;
                    Stage::End
                }
                Stage::End => {
                    self.finish().await?;
                    return Ok(self.st);
                }
            };
            if to == Stage::End && from == Stage::Auditor {
                self.end_rejected();
            }
            self.st.next = transition(from, to)?;
            self.save().await?;
        }
    }

    /// The thinker: a plan for the question (and the feedback on the last one).
    async fn think(&mut self) -> Result<Stage, ResearchError> {
        self.st.status = Status::Thinking;
        self.save().await?;
        let allowed: Vec<Tool> = Tool::ALL
            .into_iter()
            .filter(|t| self.e.params.allow_network || !t.network())
            .collect();
        let tools: Vec<String> = allowed
            .iter()
            .map(|t| format!("- {t}: {}", t.describe()))
            .collect();
        let mut input = format!(
            "Policy:\n{}\n\nTools:\n{}\n\nQuestion: {}",
            self.policy.text.trim(),
            tools.join("\n"),
            self.st.user_query
        );
        if let Some(p) = &self.st.plan {
            input.push_str(&format!(
                "\n\nYour previous plan:\n{}",
                serde_json::to_string(&draft_of(p)).unwrap_or_default()
            ));
        }
        if !self.st.feedback.is_empty() {
            input.push_str("\n\nFeedback on it that the new plan must address:\n");
            for f in &self.st.feedback {
                input.push_str(&format!("- {f}\n"));
            }
        }
        let revision = self.st.revision + 1;
        let mut node = self.open(NodeType::Plan, Stage::Thinker).await?;
        node.meta.insert("revision".into(), json!(revision));
        let system = self.e.prompts.thinker.clone();
        let read = self
            .structured::<PlanDraft>(
                Stage::Thinker,
                &mut node,
                &system,
                input,
                plan_schema(&allowed),
                self.e.params.thinker,
            )
            .await?;
        let cap = self.e.params.reasoning_entries;
        let draft = match read {
            Ok(d) => d,
            Err(why) => {
                let msg = format!("the plan could not be read: {why}");
                self.close(node, None, Some(msg.clone())).await?;
                self.st.status = Status::Failed;
                self.st.error_message = Some(msg.clone());
                self.st.end_reason = Some(msg.clone());
                self.st.reason(Stage::Thinker, format!("Error: {msg}"), cap);
                return Ok(Stage::End);
            }
        };
        let mut plan = Plan {
            objective: draft.objective.trim().to_string(),
            steps: Vec::new(),
            estimated_token_budget: draft.estimated_token_budget,
            revision,
        };
        let mut filled = 0;
        for s in draft.steps {
            let mut input = s.input.trim().to_string();
            if input.is_empty() && s.tool != Tool::FetchUrl {
                input = self.st.user_query.trim().to_string();
                filled += 1;
            }
            plan.steps.push(Step {
                id: uuid::Uuid::now_v7().to_string(),
                tool: s.tool,
                input,
                rationale: s.rationale.trim().to_string(),
                output: None,
                error: None,
                node: None,
            });
        }
        if plan.objective.is_empty() {
            plan.objective = self.st.user_query.trim().to_string();
        }
        node.text = plan_markdown(&plan);
        node.meta.insert("plan".into(), json!(plan));
        let mut summary = format!(
            "plan revision {revision}: {} step(s) — {}",
            plan.steps.len(),
            plan.objective
        );
        if filled > 0 {
            summary.push_str(&format!(
                " ({filled} step(s) without input search the question itself)"
            ));
        }
        self.close(node, Some(json!(plan)), None).await?;
        self.st.plan = Some(plan);
        self.st.audit_result = None;
        self.st.human_approved = false;
        self.st.reason(Stage::Thinker, summary, cap);
        self.emit(Stage::Thinker, "thinker");
        Ok(Stage::Auditor)
    }

    /// The auditor: the engine's own checks, and the model's reading of the policy; a
    /// model's violation counts only when it quotes a rule the policy has.
    async fn audit(&mut self) -> Result<(), ResearchError> {
        self.st.status = Status::Auditing;
        self.save().await?;
        let plan = self.st.plan.clone().unwrap_or_default();
        let input = format!(
            "Policy:\n{}\n\nNetwork: {}\n\nPlan:\n{}",
            self.policy.text.trim(),
            if self.e.params.allow_network {
                "allowed"
            } else {
                "off (web_search and fetch_url cannot run)"
            },
            serde_json::to_string_pretty(&draft_of(&plan)).unwrap_or_default()
        );
        let mut node = self.open(NodeType::Audit, Stage::Auditor).await?;
        let system = self.e.prompts.auditor.clone();
        let answer = self
            .structured::<AuditAnswer>(
                Stage::Auditor,
                &mut node,
                &system,
                input,
                AuditAnswer::schema(),
                self.e.params.auditor,
            )
            .await?;
        let mut result = AuditResult {
            verdict: Verdict::Approved,
            policy_violations: self.policy.check(&plan, &self.e.params),
            suggestions: Vec::new(),
            notes: Vec::new(),
        };
        let own = !result.policy_violations.is_empty();
        match &answer {
            Ok(a) => {
                result.suggestions = a
                    .suggestions
                    .iter()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                let mut quoted = 0;
                let said = a
                    .policy_violations
                    .iter()
                    .filter(|v| !(v.rule.trim().is_empty() && v.problem.trim().is_empty()));
                for v in said {
                    match self.policy.quote(&v.rule) {
                        Some(rule) if a.verdict == Verdict::Rejected => {
                            quoted += 1;
                            result.policy_violations.push(Violation {
                                rule,
                                problem: v.problem.trim().to_string(),
                            });
                        }
                        Some(rule) => result.notes.push(
                            format!(
                                "listed with an approval, not counted: \"{rule}\" {}",
                                v.problem.trim()
                            )
                            .trim_end()
                            .to_string(),
                        ),
                        None => result.notes.push(
                            format!(
                                "not a rule of the policy, not counted: \"{}\" {}",
                                v.rule.trim(),
                                v.problem.trim()
                            )
                            .trim_end()
                            .to_string(),
                        ),
                    }
                }
                if a.verdict == Verdict::Rejected && quoted == 0 && !own {
                    result.notes.push(
                        "the auditor rejected the plan without quoting a rule of the policy"
                            .into(),
                    );
                }
            }
            Err(why) => result.notes.push(format!(
                "the auditor's answer could not be read ({why}); the plan was checked against the policy's budgets and tools only"
            )),
        }
        if own && result.suggestions.is_empty() {
            result.suggestions.push(format!(
                "Use only the allowed tools ({}), keep to the budgets, and give every step an input.",
                Tool::ALL
                    .iter()
                    .filter(|t| self.e.params.allow_network || !t.network())
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !result.policy_violations.is_empty() {
            result.verdict = Verdict::Rejected;
        }
        node.text = audit_markdown(&result);
        let cap = self.e.params.reasoning_entries;
        let summary = match result.verdict {
            Verdict::Approved => format!("approved plan revision {}", plan.revision),
            Verdict::Rejected => {
                self.st.revision += 1;
                format!(
                    "rejected plan revision {} ({} of {}): {}",
                    plan.revision,
                    self.st.revision,
                    self.st.max_plan_revisions,
                    result
                        .policy_violations
                        .iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            }
        };
        self.st.feedback = result
            .policy_violations
            .iter()
            .map(|v| v.to_string())
            .chain(result.suggestions.iter().cloned())
            .collect();
        self.close(node, Some(json!(result)), None).await?;
        self.st.audit_result = Some(result);
        self.st.reason(Stage::Auditor, summary, cap);
        self.emit(Stage::Auditor, "auditor");
        Ok(())
    }

    /// The tool executor: the next step whose tool has not run.
    async fn execute(&mut self) -> Result<(), ResearchError> {
        self.st.status = Status::Executing;
        let Some(i) = self.st.pending_step() else {
            return Ok(());
        };
        let step = self
            .st
            .plan
            .as_ref()
            .map(|p| p.steps[i].clone())
            .unwrap_or_else(|| unreachable!("pending_step found a step"));
        let mut node = self.open(NodeType::ToolCall, Stage::ToolExecutor).await?;
        node.text = step.input.clone();
        node.meta.insert("tool".into(), json!(step.tool.as_str()));
        node.meta.insert("input".into(), json!(step.input));
        node.meta.insert("step".into(), json!(i + 1));
        node.meta.insert("step_id".into(), json!(step.id));
        self.put(&node).await?;
        let result = tokio::select! {
            r = self.e.tools.run(step.tool, &step.input, &self.e.params, self.st.session_id) => r,
            () = self.cancel.cancelled() => {
                node.status = NodeStatus::Interrupted;
                self.put(&node).await?;
                return Err(self.interrupted().await?);
            }
        };
        let cap = self.e.params.reasoning_entries;
        let node_id = node.id;
        let (summary, failed) = match result {
            Ok(found) => {
                node.meta.insert("result".into(), json!(found.text));
                let mut sources = found.sources;
                sources.iter_mut().for_each(|s| s.step = Some(node_id));
                node.meta.insert("sources".into(), json!(sources));
                let summary = format!(
                    "step {} {} {:?}: {} source(s)",
                    i + 1,
                    step.tool,
                    step.input,
                    sources.len()
                );
                if let Some(p) = self.st.plan.as_mut() {
                    p.steps[i].output = Some(found.text);
                }
                (summary, None)
            }
            Err(why) => {
                node.meta.insert("result".into(), json!(why));
                node.meta.insert("is_error".into(), json!(true));
                if let Some(p) = self.st.plan.as_mut() {
                    p.steps[i].error = Some(why.clone());
                }
                (
                    format!("step {} {} failed: {why}", i + 1, step.tool),
                    Some(why),
                )
            }
        };
        if let Some(p) = self.st.plan.as_mut() {
            p.steps[i].node = Some(node_id);
        }
        self.close(node, None, failed).await?;
        self.st.reason(Stage::ToolExecutor, summary, cap);
        self.emit(Stage::ToolExecutor, "tool_executor");
        Ok(())
    }

    /// The synthesizer: the report from the numbered sources, with its citations.
    async fn synthesize(&mut self) -> Result<(), ResearchError> {
        self.st.status = Status::Synthesizing;
        self.save().await?;
        let plan = self.st.plan.clone().unwrap_or_default();
        let sources = self.sources(&plan).await?;
        let mut input = format!(
            "Question: {}\n\nObjective: {}\n\n",
            self.st.user_query, plan.objective
        );
        if sources.is_empty() {
            input.push_str("Sources: none were found.\n");
        } else {
            input.push_str("Sources:\n");
            for c in &sources {
                input.push_str(&format!(
                    "[{}] {} ({})\n{}\n\n",
                    c.n,
                    c.label,
                    locator(c),
                    c.text.trim()
                ));
            }
        }
        for (i, s) in plan.steps.iter().enumerate() {
            if let Some(err) = &s.error {
                input.push_str(&format!(
                    "Step {} ({} {:?}) failed: {err}\n",
                    i + 1,
                    s.tool,
                    s.input
                ));
            }
        }
        let mut node = self.open(NodeType::Synthesis, Stage::Synthesizer).await?;
        let system = self.e.prompts.synthesizer.clone();
        let text = self
            .call(
                Stage::Synthesizer,
                &mut node,
                &system,
                input,
                None,
                self.e.params.synthesizer,
            )
            .await?;
        let (report, citations) = cite(text.trim(), sources);
        node.text = report.clone();
        node.meta.insert("citations".into(), json!(citations));
        let cited = citations.iter().filter(|c| c.cited).count();
        let id = node.id;
        self.close(node, None, None).await?;
        let cap = self.e.params.reasoning_entries;
        self.st.reason(
            Stage::Synthesizer,
            format!(
                "report of {} characters citing {cited} of {} source(s)",
                report.chars().count(),
                citations.len()
            ),
            cap,
        );
        self.st.final_report = Some(report);
        self.st.citations = citations;
        self.st.report_node = Some(id);
        self.st.status = Status::Complete;
        self.emit(Stage::Synthesizer, "synthesizer");
        Ok(())
    }

    /// Every step's sources, numbered once each in the order found.
    async fn sources(&self, plan: &Plan) -> Result<Vec<Citation>, ResearchError> {
        let mut out: Vec<Citation> = Vec::new();
        for s in &plan.steps {
            let Some(id) = s.node else { continue };
            let Some(n) = self.e.store.node(id)? else {
                continue;
            };
            let found: Vec<Citation> = n
                .meta
                .get("sources")
                .cloned()
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default();
            for mut c in found {
                let dup = out
                    .iter()
                    .any(|o| o.kind == c.kind && o.source == c.source && o.span == c.span);
                if !dup {
                    c.n = out.len() + 1;
                    out.push(c);
                }
            }
        }
        Ok(out)
    }

    /// The run ended with its plan rejected `max_plan_revisions` times.
    fn end_rejected(&mut self) {
        let last = self
            .st
            .audit_result
            .as_ref()
            .map(|a| {
                a.policy_violations
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "rejected at the gate".into());
        let why = format!(
            "the plan was rejected {} times (max_plan_revisions = {}); last: {last}",
            self.st.revision, self.st.max_plan_revisions
        );
        self.st.status = Status::Rejected;
        self.st.end_reason = Some(why.clone());
        let cap = self.e.params.reasoning_entries;
        self.st.reason(Stage::Auditor, why, cap);
    }

    /// The end: the run's row says how it ended.
    async fn finish(&mut self) -> Result<(), ResearchError> {
        self.run.finished_at = Some(Utc::now());
        self.run.status = match self.st.status {
            Status::Complete => RunStatus::Done,
            _ => RunStatus::Failed {
                error: self
                    .st
                    .end_reason
                    .clone()
                    .unwrap_or_else(|| "ended without a report".into()),
            },
        };
        self.save().await?;
        self.emit(Stage::End, "end");
        Ok(())
    }

    /// A cancelled run: its row marked interrupted, resumable from the node it was in.
    async fn interrupted(&mut self) -> Result<ResearchError, ResearchError> {
        self.run.status = RunStatus::Interrupted;
        self.save().await?;
        Ok(ResearchError::Cancelled(self.run.id))
    }

    /// A structured stage: its answer read as `T`, asked again `repair_retries` times; the
    /// inner `Err` says why it still could not be read.
    async fn structured<T: Artifact>(
        &mut self,
        stage: Stage,
        node: &mut Node,
        system: &str,
        input: String,
        schema: ToolSpec,
        settings: StageSettings,
    ) -> Result<Result<T, String>, ResearchError> {
        let mut user = input.clone();
        let mut reason = String::new();
        for attempt in 0..=self.e.params.repair_retries {
            if attempt > 0 {
                let _ = self.events.send(ResearchEvent::Delta {
                    node: stage.as_str(),
                    text: format!("\n[repair: {reason}]\n"),
                    thinking: true,
                });
            }
            let raw = self
                .call(
                    stage,
                    node,
                    system,
                    user.clone(),
                    Some(schema.clone()),
                    settings,
                )
                .await?;
            match read::<T>(&raw) {
                Ok(v) => return Ok(Ok(v)),
                Err(why) => {
                    reason = why;
                    node.meta.insert("raw".into(), json!(raw));
                    user = format!(
                        "{input}\n\nYour previous answer was:\n{raw}\n\nIt could not be read: {reason}.\n{}",
                        self.e.prompts.repair
                    );
                }
            }
        }
        Ok(Err(reason))
    }

    /// One streamed model call into `node`: its answer text.
    async fn call(
        &mut self,
        stage: Stage,
        node: &mut Node,
        system: &str,
        input: String,
        schema: Option<ToolSpec>,
        settings: StageSettings,
    ) -> Result<String, ResearchError> {
        let mut req = ChatRequest::new(self.e.model.clone(), vec![Message::user(input)]);
        req.system = (!system.is_empty()).then(|| system.to_string());
        req.temperature = Some(settings.temperature as f32);
        req.max_tokens = settings.max_tokens;
        req.seed = self.e.seed;
        req.thinking = ThinkingMode::Off;
        req.json_mode = schema.is_some();
        req.schema = schema;
        let events = self.events.clone();
        let name = stage.as_str();
        let outcome = crate::engines::streamed::into_node(
            &self.e.store,
            self.e.provider.as_ref(),
            req,
            &self.cancel,
            node,
            move |text, thinking| {
                let _ = events.send(ResearchEvent::Delta {
                    node: name,
                    text,
                    thinking,
                });
            },
        )
        .await?;
        match outcome {
            Ok(text) => Ok(text),
            Err(LlmError::Cancelled) => {
                node.status = NodeStatus::Interrupted;
                self.put(node).await?;
                Err(self.interrupted().await?)
            }
            Err(error) => {
                node.status = NodeStatus::Failed {
                    error: error.to_string(),
                };
                self.put(node).await?;
                self.run.status = RunStatus::Failed {
                    error: error.to_string(),
                };
                self.save().await?;
                Err(ResearchError::Model {
                    stage: name,
                    run: self.run.id,
                    error,
                })
            }
        }
    }

    /// A new node of `kind` for `stage`, linked after the run's last node.
    async fn open(&mut self, kind: NodeType, stage: Stage) -> Result<Node, ResearchError> {
        let mut node = Node::new(self.st.session_id, kind, "");
        node.model = (kind != NodeType::ToolCall).then(|| self.e.model.clone());
        node.status = NodeStatus::Streaming;
        node.meta.insert(RUN.into(), json!(self.run.id.to_string()));
        node.meta.insert(STAGE.into(), json!(stage.as_str()));
        let edge = Edge::new(self.st.last_node, EdgeType::Influences, node.id);
        let n = node.clone();
        self.e
            .store
            .write_async(move |w| {
                w.put_node(&n)?;
                w.put_edge(&edge)
            })
            .await?;
        self.st.last_node = node.id;
        Ok(node)
    }

    /// A person's word at the gate, as a node in the chain.
    async fn annotate(&mut self, said: &str) -> Result<(), ResearchError> {
        let mut node = self
            .open(NodeType::HumanAnnotation, Stage::HitlGate)
            .await?;
        node.text = said.to_string();
        self.close(node, None, None).await
    }

    /// Ends a node: its artifact, complete or failed.
    async fn close(
        &mut self,
        mut node: Node,
        artifact: Option<Value>,
        failed: Option<String>,
    ) -> Result<(), ResearchError> {
        if let Some(a) = artifact {
            node.meta.insert("artifact".into(), a);
        }
        node.status = match failed {
            Some(error) => NodeStatus::Failed { error },
            None => NodeStatus::Complete,
        };
        self.put(&node).await
    }

    async fn put(&self, node: &Node) -> Result<(), ResearchError> {
        let n = node.clone();
        self.e.store.write_async(move |w| w.put_node(&n)).await?;
        Ok(())
    }

    /// Writes the state into the run's row.
    async fn save(&mut self) -> Result<(), ResearchError> {
        self.run.summary = json!({
            STATE: self.st,
            "status": self.st.status.as_str(),
            "revision": self.st.revision,
            WORKER: worker_id(),
        });
        let run = self.run.clone();
        self.e.store.write_async(move |w| w.put_run(&run)).await?;
        Ok(())
    }

    fn emit_start(&self, resumed: bool) {
        let _ = self.events.send(ResearchEvent::Start {
            run: self.run.id,
            session: self.st.session_id,
            resumed,
        });
    }

    /// The state after `stage`, as seed 001's `research` event (`name` is the node name the
    /// event carries: `_start`, a stage, or `end`).
    fn emit(&self, _stage: Stage, name: &'static str) {
        let _ = self.events.send(ResearchEvent::Research {
            node: name,
            state: Box::new(self.st.clone()),
        });
    }
}
