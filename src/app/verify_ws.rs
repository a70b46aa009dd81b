//! The Verify workspace: a chain of steps with a verdict gutter, issues and patterns.
//!
//! `V` (from any workspace) verifies the thinking node selected in the Think graph step by
//! step; the result is read back from the store, so a fresh verification and the last one
//! stored for the session look the same. `f` starts a corrected branch at a step (default:
//! the first failing one): a human `disagree` checkpoint on the step with its suggested
//! correction, which reasons the step again.

use std::collections::HashMap;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::action::Action;
use super::config::ProviderKind;
use super::form::{Answer, Form, Purpose};
use super::runtime::Services;
use super::state::{Level, Overlay, State, Workspace};
use super::update::{Effect, Msg};
use crate::config::providers as factory;
use crate::engines::fork::{ForkEngine, ForkPrompts, ForkSettings, Verdict as HumanVerdict};
use crate::engines::got::CallSettings;
use crate::engines::llm::Effort;
use crate::engines::verify::{Issue, Pattern, Verdict, Verifier, VerifyRequest, node_steps};
use crate::store::{EdgeType, Node, NodeId, NodeType, RunId, RunKind, SessionId, Store};

/// A human checkpoint on a step's node (the newest one counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HumanMark {
    Agree,
    Questionable,
    Disagree,
}

impl HumanMark {
    fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "verified" | "correct" | "agree" => Some(HumanMark::Agree),
            "questionable" | "neutral" | "uncertain" => Some(HumanMark::Questionable),
            "disagree" | "incorrect" | "wrong" => Some(HumanMark::Disagree),
            _ => None,
        }
    }
}

/// One verified step as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct StepView {
    /// The stored `verify_step` node.
    pub node: NodeId,
    pub index: usize,
    pub kind: Option<String>,
    pub text: String,
    pub verdict: Verdict,
    pub confidence: f64,
    pub explanation: String,
    pub issues: Vec<Issue>,
    pub correction: Option<String>,
    pub human: Option<HumanMark>,
    /// The newest corrected branch reasoned from this step, if any.
    pub branch: Option<String>,
}

/// A stored verification run as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Verification {
    pub session: SessionId,
    pub run: RunId,
    /// The thinking node whose steps were verified.
    pub source: Option<NodeId>,
    pub question: Option<String>,
    pub score: f64,
    pub valid: bool,
    pub threshold: f64,
    /// Index of the first incorrect step; −1 when none is.
    pub first_error: i64,
    pub summary: String,
    pub model: String,
    pub patterns: Vec<Pattern>,
    pub steps: Vec<StepView>,
}

impl Verification {
    /// Indexes of the incorrect steps (and steps a human disagreed with).
    pub fn failing(&self) -> Vec<usize> {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.verdict == Verdict::Incorrect || s.human == Some(HumanMark::Disagree)
            })
            .map(|(i, _)| i)
            .collect()
    }
}

/// What the workspace is doing.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Status {
    #[default]
    Idle,
    Loading,
    /// A verification of `steps` steps of `node` is running.
    Verifying {
        node: NodeId,
        steps: usize,
    },
    /// A corrected branch is being reasoned at step `step`.
    Forking {
        step: usize,
    },
}

/// What the workspace shows and remembers.
#[derive(Debug, Default)]
pub struct VerifyWs {
    pub result: Option<Verification>,
    /// The selected step.
    pub selected: usize,
    /// Whether the selected step's detail popup is open.
    pub detail: bool,
    pub status: Status,
    /// Why nothing is shown (no run stored, or the last error).
    pub hint: Option<String>,
    /// The session whose last run was looked up, so entering again does not reload it.
    looked_up: Option<SessionId>,
    cancel: Option<CancellationToken>,
}

/// News for the workspace from its engine tasks.
#[derive(Clone, Debug)]
pub enum VerifyMsg {
    /// A verification run read from the store (`None`: the session has none).
    Loaded {
        session: SessionId,
        result: Option<Box<Verification>>,
        /// Select the first failing step.
        fresh: bool,
    },
    Failed(String),
    /// A corrected branch was stored for `step`.
    Forked {
        step: usize,
        branch: NodeId,
        session: SessionId,
        run: RunId,
    },
    ForkFailed(String),
}

/// Work for the runtime, carried out by [`run`].
#[derive(Clone, Debug)]
pub enum VerifyEffect {
    /// Read a run of the session (`None`: the newest verification).
    Load {
        session: SessionId,
        run: Option<RunId>,
        fresh: bool,
    },
    Verify {
        node: NodeId,
        cancel: CancellationToken,
    },
    /// A `disagree` checkpoint with `correction` on the step node, reasoning a corrected
    /// branch.
    Fork {
        session: SessionId,
        run: RunId,
        step: usize,
        node: NodeId,
        correction: String,
    },
}

/// What a form this workspace opened is for.
#[derive(Clone, Debug, PartialEq)]
pub enum FormPurpose {
    /// The correction for a step without a suggested one.
    Correction { step: usize },
}

/// The thinking node `V` verifies: the selected node if it is a thinking node, else the
/// thinking node (with steps) of the selected node's turn, else the session's last one.
pub fn target_node(state: &State) -> Option<NodeId> {
    let nodes = &state.loaded.nodes;
    let has_steps = |n: &Node| {
        n.kind == NodeType::Thinking
            && n.meta
                .get("steps")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
    };
    let anchor = state
        .graph
        .selected_node()
        .and_then(|id| state.loaded.index.get(&id).copied());
    let Some(anchor) = anchor.filter(|&a| a < nodes.len()) else {
        return nodes.iter().rev().find(|n| has_steps(n)).map(|n| n.id);
    };
    if nodes[anchor].kind == NodeType::Thinking {
        return Some(nodes[anchor].id);
    }
    let start = nodes[..=anchor]
        .iter()
        .rposition(|n| n.kind == NodeType::Query)
        .unwrap_or(0);
    let end = nodes[start + 1..]
        .iter()
        .position(|n| n.kind == NodeType::Query)
        .map_or(nodes.len(), |p| start + 1 + p);
    nodes[start..end]
        .iter()
        .rev()
        .find(|n| has_steps(n))
        .or_else(|| {
            nodes[start..end]
                .iter()
                .rev()
                .find(|n| n.kind == NodeType::Thinking)
        })
        .map(|n| n.id)
}

fn notice(state: &mut State, text: impl Into<String>, level: Level) {
    state.notice = Some((text.into(), level));
}

/// Starts verifying the thinking node picked by [`target_node`] and shows the workspace.
fn verify_node(state: &mut State, fx: &mut Vec<Effect>) {
    if matches!(state.verify.status, Status::Verifying { .. }) {
        notice(state, "a verification is already running", Level::Warn);
        return;
    }
    let Some(node) = target_node(state) else {
        notice(
            state,
            "no thinking node to verify: select one in the Think graph",
            Level::Info,
        );
        return;
    };
    let steps = state
        .loaded
        .node(node)
        .and_then(|n| n.meta.get("steps"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if steps == 0 {
        notice(
            state,
            format!(
                "thinking node {} has no ThinkGraph steps to verify",
                node.short()
            ),
            Level::Warn,
        );
        return;
    }
    let cancel = CancellationToken::new();
    state.verify.cancel = Some(cancel.clone());
    state.verify.status = Status::Verifying { node, steps };
    state.verify.detail = false;
    state.verify.looked_up = state.loaded.id();
    state.workspace = Workspace::Verify;
    notice(
        state,
        format!("verifying {steps} steps — one judge call per step"),
        Level::Info,
    );
    fx.push(Effect::Verify(VerifyEffect::Verify { node, cancel }));
}

fn move_to(state: &mut State, i: usize) {
    let n = state.verify.result.as_ref().map_or(0, |r| r.steps.len());
    state.verify.selected = i.min(n.saturating_sub(1));
}

/// Starts a corrected branch at the selected step (the first failing one when no step
/// was chosen yet).
fn fork_at_error(state: &mut State, fx: &mut Vec<Effect>) {
    if matches!(state.verify.status, Status::Forking { .. }) {
        notice(
            state,
            "a corrected branch is already being written",
            Level::Warn,
        );
        return;
    }
    let Some(r) = &state.verify.result else {
        notice(state, "verify a thinking node first (V)", Level::Info);
        return;
    };
    let Some(step) = r.steps.get(state.verify.selected) else {
        return;
    };
    match step.correction.clone() {
        Some(correction) => {
            let (session, run, node, i) = (r.session, r.run, step.node, state.verify.selected);
            start_fork(state, session, run, i, node, correction, fx);
        }
        None => {
            let i = state.verify.selected;
            let form = Form::text(
                format!("Corrected branch at step {i}"),
                Purpose::Verify(FormPurpose::Correction { step: i }),
                "What should this step say instead?",
            );
            state.overlay = Some(Overlay::Form(form));
        }
    }
}

fn start_fork(
    state: &mut State,
    session: SessionId,
    run: RunId,
    step: usize,
    node: NodeId,
    correction: String,
    fx: &mut Vec<Effect>,
) {
    state.verify.status = Status::Forking { step };
    notice(
        state,
        format!("writing a corrected branch from step {step}…"),
        Level::Info,
    );
    fx.push(Effect::Verify(VerifyEffect::Fork {
        session,
        run,
        step,
        node,
        correction,
    }));
}

/// Offers a bound action to the workspace; true when it was handled here.
pub fn action(state: &mut State, a: &Action, fx: &mut Vec<Effect>) -> bool {
    if *a == Action::VerifyNode {
        verify_node(state, fx);
        return true;
    }
    if state.workspace != Workspace::Verify {
        return false;
    }
    let n = state.verify.result.as_ref().map_or(0, |r| r.steps.len());
    let sel = state.verify.selected;
    match a {
        Action::MoveDown => move_to(state, sel + 1),
        Action::MoveUp => move_to(state, sel.saturating_sub(1)),
        Action::PageDown => move_to(state, sel + 5),
        Action::PageUp => move_to(state, sel.saturating_sub(5)),
        Action::Top => move_to(state, 0),
        Action::Bottom => move_to(state, n.saturating_sub(1)),
        Action::Select => state.verify.detail = !state.verify.detail && n > 0,
        Action::CancelRun if state.verify.detail => state.verify.detail = false,
        Action::CancelRun if matches!(state.verify.status, Status::Verifying { .. }) => {
            if let Some(c) = &state.verify.cancel {
                c.cancel();
            }
            notice(state, "cancelling the verification", Level::Info);
        }
        Action::NextError | Action::PrevError => {
            let failing = state
                .verify
                .result
                .as_ref()
                .map(Verification::failing)
                .unwrap_or_default();
            let target = if *a == Action::NextError {
                failing.iter().copied().find(|&i| i > sel)
            } else {
                failing.iter().rev().copied().find(|&i| i < sel)
            };
            match target {
                Some(i) => move_to(state, i),
                None if failing.is_empty() => notice(state, "no failing steps", Level::Info),
                None => notice(state, "no more failing steps that way", Level::Info),
            }
        }
        Action::ForkAtError => fork_at_error(state, fx),
        _ => return false,
    }
    true
}

/// Called when the workspace becomes the visible one.
pub fn on_enter(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(session) = state.loaded.id() else {
        if state.verify.result.is_none() {
            state.verify.hint = Some("no session open".into());
        }
        return;
    };
    let showing = state.verify.result.as_ref().map(|r| r.session);
    if showing == Some(session)
        || state.verify.looked_up == Some(session)
        || state.verify.status != Status::Idle
    {
        return;
    }
    state.verify.looked_up = Some(session);
    state.verify.status = Status::Loading;
    fx.push(Effect::Verify(VerifyEffect::Load {
        session,
        run: None,
        fresh: false,
    }));
}

/// Applies news from an engine task.
pub fn on_msg(state: &mut State, m: VerifyMsg, fx: &mut Vec<Effect>) {
    match m {
        VerifyMsg::Loaded {
            session,
            result,
            fresh,
        } => {
            state.verify.status = Status::Idle;
            state.verify.cancel = None;
            match result {
                Some(r) => {
                    let keep = state
                        .verify
                        .result
                        .as_ref()
                        .is_some_and(|old| old.run == r.run);
                    if fresh {
                        let score = r.score;
                        let first = r.first_error;
                        notice(
                            state,
                            format!(
                                "verified: score {score:.2}, {}",
                                if first >= 0 {
                                    format!(
                                        "first error at step {first} — f forks a corrected branch there"
                                    )
                                } else {
                                    "no incorrect step".to_string()
                                }
                            ),
                            if r.valid { Level::Info } else { Level::Warn },
                        );
                    }
                    if !keep {
                        state.verify.selected = usize::try_from(r.first_error)
                            .unwrap_or(0)
                            .min(r.steps.len());
                        state.verify.detail = false;
                    }
                    state.verify.result = Some(*r);
                    state.verify.hint = None;
                    move_to(state, state.verify.selected);
                    if fresh && state.loaded.id() == Some(session) {
                        fx.push(Effect::LoadSession(session));
                    }
                }
                None => {
                    // Another session's verification no longer applies.
                    if state
                        .verify
                        .result
                        .as_ref()
                        .is_some_and(|r| r.session != session)
                    {
                        state.verify.result = None;
                    }
                    if state.verify.result.is_none() {
                        state.verify.hint = Some("no verification stored for this session".into());
                    }
                }
            }
        }
        VerifyMsg::Failed(e) => {
            state.verify.status = Status::Idle;
            state.verify.cancel = None;
            notice(state, format!("verification failed: {e}"), Level::Error);
        }
        VerifyMsg::Forked {
            step,
            branch,
            session,
            run,
        } => {
            state.verify.status = Status::Idle;
            notice(
                state,
                format!(
                    "corrected branch from step {step} stored as node {} (refines the step; 1 shows it in Think)",
                    branch.short()
                ),
                Level::Info,
            );
            fx.push(Effect::Verify(VerifyEffect::Load {
                session,
                run: Some(run),
                fresh: false,
            }));
            if state.loaded.id() == Some(session) {
                fx.push(Effect::LoadSession(session));
            }
        }
        VerifyMsg::ForkFailed(e) => {
            state.verify.status = Status::Idle;
            notice(state, format!("corrected branch failed: {e}"), Level::Error);
        }
    }
}

/// Applies a submitted form.
pub fn submit(state: &mut State, p: FormPurpose, answer: Answer, fx: &mut Vec<Effect>) {
    match p {
        FormPurpose::Correction { step } => {
            let Some(r) = &state.verify.result else {
                return;
            };
            let Some(s) = r.steps.get(step) else {
                return;
            };
            if answer.text.trim().is_empty() {
                return;
            }
            let (session, run, node) = (r.session, r.run, s.node);
            start_fork(state, session, run, step, node, answer.text, fx);
        }
    }
}

/// Call settings for an engine's structured calls from the TUI's services (the embedded
/// model gets no thinking pass, as in the headless commands).
pub(crate) fn call_settings(
    svc: &Services,
    kind: ProviderKind,
    model: &str,
    effort: Effort,
    max_tokens: u32,
) -> CallSettings {
    let effort = (!matches!(kind, ProviderKind::Local | ProviderKind::Auto)).then_some(effort);
    let plan = factory::plan_turn(&svc.cfg, kind, effort, Some(max_tokens));
    CallSettings {
        model: model.to_string(),
        thinking: plan.thinking,
        effort: plan.effort,
        max_tokens: plan.max_tokens,
        temperature: Some(svc.cfg.generation.temperature as f32),
        seed: Some(svc.cfg.generation.seed),
    }
}

/// The fork engine for corrected branches, set up as the headless commands do.
fn fork_engine(svc: &Services) -> Result<ForkEngine, String> {
    let m = svc.model.as_ref().map_err(Clone::clone)?;
    let cfg = &svc.cfg;
    let local = matches!(m.kind, ProviderKind::Local | ProviderKind::Auto);
    let mut settings = ForkSettings::new(m.model.clone());
    settings.use_tools = matches!(m.kind, ProviderKind::Anthropic | ProviderKind::OpenAi);
    let effort = (!local).then_some(cfg.effort.default);
    settings.plan = factory::plan_turn(cfg, m.kind, effort, None);
    settings.max_plan = factory::plan_turn(cfg, m.kind, Some(Effort::Max), None);
    settings.correction_plan = factory::plan_turn(cfg, m.kind, Some(Effort::Medium), None);
    settings.temperature = Some(cfg.generation.temperature as f32);
    settings.seed = Some(cfg.generation.seed);
    Ok(ForkEngine::new(
        svc.store.clone(),
        m.provider.clone(),
        ForkPrompts::from_prompts(&svc.prompts),
        settings,
    ))
}

/// Carries out an effect: store reads and writes, engine tasks (spawned; results come back
/// as [`VerifyMsg`] through `svc.tx`).
pub fn run(e: VerifyEffect, svc: &Services) {
    let tx = svc.tx.clone();
    let send = move |m: VerifyMsg| {
        let _ = tx.send(Msg::Verify(m));
    };
    match e {
        VerifyEffect::Load {
            session,
            run,
            fresh,
        } => {
            let store = svc.store.clone();
            tokio::task::spawn_blocking(move || {
                send(match load_run(&store, session, run) {
                    Ok(r) => VerifyMsg::Loaded {
                        session,
                        result: r.map(Box::new),
                        fresh,
                    },
                    Err(e) => VerifyMsg::Failed(format!("cannot read the verification: {e}")),
                });
            });
        }
        VerifyEffect::Verify { node, cancel } => {
            let m = match &svc.model {
                Ok(m) => m.clone(),
                Err(e) => return send(VerifyMsg::Failed(e.clone())),
            };
            let cfg = &svc.cfg;
            let verifier = Verifier {
                store: svc.store.clone(),
                provider: m.provider.clone(),
                call: call_settings(
                    svc,
                    m.kind,
                    &m.model,
                    cfg.verify.effort,
                    cfg.verify.max_tokens,
                ),
                prompt: svc.prompts.get("verify/step").to_string(),
                config: cfg.verify.clone(),
            };
            tokio::spawn(async move {
                let store = verifier.store.clone();
                let prepared = tokio::task::spawn_blocking(move || {
                    let (n, steps) = node_steps(&store, node).map_err(|e| e.to_string())?;
                    let question = store
                        .session_nodes(n.session)
                        .map_err(|e| e.to_string())?
                        .iter()
                        .take_while(|m| m.id != n.id)
                        .filter(|m| m.kind == NodeType::Query)
                        .last()
                        .map(|q| q.text.clone());
                    Ok::<_, String>((steps, question))
                })
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r);
                let (steps, question) = match prepared {
                    Ok(p) => p,
                    Err(e) => return send(VerifyMsg::Failed(e)),
                };
                let req = VerifyRequest {
                    steps,
                    source: Some(node),
                    original_query: question,
                    threshold: None,
                    session: None,
                };
                match verifier.verify(req, &cancel).await {
                    Ok(out) => {
                        let store = verifier.store.clone();
                        let read = tokio::task::spawn_blocking(move || {
                            load_run(&store, out.session, Some(out.run)).map(|r| (out.session, r))
                        })
                        .await;
                        send(match read {
                            Ok(Ok((session, r))) => VerifyMsg::Loaded {
                                session,
                                result: r.map(Box::new),
                                fresh: true,
                            },
                            Ok(Err(e)) => VerifyMsg::Failed(e.to_string()),
                            Err(e) => VerifyMsg::Failed(e.to_string()),
                        });
                    }
                    Err(e) => send(VerifyMsg::Failed(e.to_string())),
                }
            });
        }
        VerifyEffect::Fork {
            session,
            run,
            step,
            node,
            correction,
        } => {
            let engine = match fork_engine(svc) {
                Ok(e) => e,
                Err(e) => return send(VerifyMsg::ForkFailed(e)),
            };
            tokio::spawn(async move {
                let (events, _rx) = tokio::sync::mpsc::unbounded_channel();
                let out = engine
                    .checkpoint(node, HumanVerdict::Disagree, Some(correction), &events)
                    .await;
                send(match out {
                    Ok(r) => match r.alternative_branch {
                        Some(b) => VerifyMsg::Forked {
                            step,
                            branch: b.node_id,
                            session,
                            run,
                        },
                        None => VerifyMsg::ForkFailed("no branch was written".into()),
                    },
                    Err(e) => VerifyMsg::ForkFailed(e.to_string()),
                });
            });
        }
    }
}

/// Reads a verification run of `session` (the newest when `run` is `None`) with its step
/// nodes, the human checkpoints on them and any corrected branches.
pub fn load_run(
    store: &Store,
    session: SessionId,
    run: Option<RunId>,
) -> Result<Option<Verification>, crate::store::StoreError> {
    let Some(run) = store.pick_run(session, RunKind::Verify, run)? else {
        return Ok(None);
    };
    let nodes = store.session_nodes(session)?;
    let by_id: HashMap<NodeId, &Node> = nodes.iter().map(|n| (n.id, n)).collect();
    let ids: Vec<NodeId> = run.summary["nodeIds"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
        .unwrap_or_default();
    let mut steps = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let Some(n) = by_id.get(id) else { continue };
        let meta = |k: &str| n.meta.get(k).cloned().unwrap_or(Value::Null);
        let mut human: Option<(&Node, HumanMark)> = None;
        let mut branch: Option<&Node> = None;
        for e in store.edges_to(*id, None)? {
            let Some(src) = by_id.get(&e.src) else {
                continue;
            };
            match src.kind {
                NodeType::HumanAnnotation => {
                    if let Some(mark) = src
                        .meta
                        .get("verdict")
                        .and_then(Value::as_str)
                        .and_then(HumanMark::parse)
                        && human
                            .is_none_or(|(h, _)| (src.created_at, src.id) > (h.created_at, h.id))
                    {
                        human = Some((src, mark));
                    }
                }
                NodeType::ForkBranch
                    if e.kind == EdgeType::Refines
                        && branch
                            .is_none_or(|b| (src.created_at, src.id) > (b.created_at, b.id)) =>
                {
                    branch = Some(src);
                }
                _ => {}
            }
        }
        steps.push(StepView {
            node: *id,
            index: meta("stepIndex").as_u64().map_or(i, |x| x as usize),
            kind: meta("stepType").as_str().map(str::to_string),
            text: n.text.clone(),
            verdict: serde_json::from_value(meta("verdict")).unwrap_or(Verdict::Uncertain),
            confidence: meta("confidence").as_f64().or(n.confidence).unwrap_or(0.0),
            explanation: meta("explanation").as_str().unwrap_or_default().to_string(),
            issues: serde_json::from_value(meta("issues")).unwrap_or_default(),
            correction: meta("suggestedCorrection")
                .as_str()
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string),
            human: human.map(|(_, m)| m),
            branch: branch.map(|b| b.text.clone()),
        });
    }
    let s = &run.summary;
    let p = &run.params;
    Ok(Some(Verification {
        session,
        run: run.id,
        source: p["thinkingNodeId"].as_str().and_then(|v| v.parse().ok()),
        question: p["originalQuery"].as_str().map(str::to_string),
        score: s["overallScore"].as_f64().unwrap_or(0.0),
        valid: s["isValid"].as_bool().unwrap_or(false),
        threshold: p["correctnessThreshold"].as_f64().unwrap_or(0.7),
        first_error: s["firstErrorAt"].as_i64().unwrap_or(-1),
        summary: s["summary"].as_str().unwrap_or_default().to_string(),
        model: s["metadata"]["verificationModel"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        patterns: serde_json::from_value(s["patterns"].clone()).unwrap_or_default(),
        steps,
    }))
}
