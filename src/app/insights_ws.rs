//! The Insights workspace: metacognitive insights on a session, with evidence links.
//!
//! `I` asks for a focus (or none) and runs the metacognition engine on the open session;
//! entering the workspace shows the session's last insights run. Each insight lists its
//! evidence; Enter on an evidence line jumps to its node in the Think graph.

use serde_json::Value;

use super::action::Action;
use super::form::{Answer, Form, Purpose};
use super::graph::RowKey;
use super::runtime::Services;
use super::state::{Focus, Level, Overlay, State, Workspace};
use super::tree::TreeCursor;
use super::update::{Effect, Msg};
use crate::engines::metacog::{FocusArea, Metacog};
use crate::store::{NodeId, NodeType, RunId, RunKind, SessionId, Store};

/// The focus areas offered by `I`, after "no particular focus".
pub const FOCUS_AREAS: [FocusArea; 5] = [
    FocusArea::DecisionQuality,
    FocusArea::ReasoningPatterns,
    FocusArea::ConfidenceCalibration,
    FocusArea::AlternativeExploration,
    FocusArea::BiasDetection,
];

/// One piece of evidence as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct EvidenceView {
    pub node: NodeId,
    /// The node's type, when it is still stored.
    pub kind: Option<NodeType>,
    pub excerpt: String,
    pub relevance: f64,
}

/// One insight as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct InsightRow {
    pub kind: String,
    pub text: String,
    pub confidence: f64,
    pub evidence: Vec<EvidenceView>,
}

/// A stored insights run as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct InsightsRun {
    pub session: SessionId,
    pub run: RunId,
    pub focus: Option<String>,
    pub nodes_analyzed: usize,
    /// Evidence references to nodes that were not analysed (possible hallucinations).
    pub hallucinated: usize,
    pub validation_errors: usize,
    pub summary: Option<String>,
    pub insights: Vec<InsightRow>,
}

/// A selectable line: an insight, or one of its evidence entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    Insight(usize),
    Evidence(usize, usize),
}

impl InsightsRun {
    /// Every selectable line in display order.
    pub fn lines(&self) -> Vec<Line> {
        let mut out = Vec::new();
        for (i, ins) in self.insights.iter().enumerate() {
            out.push(Line::Insight(i));
            out.extend((0..ins.evidence.len()).map(|j| Line::Evidence(i, j)));
        }
        out
    }
}

/// What the workspace shows and remembers.
#[derive(Debug, Default)]
pub struct InsightsWs {
    pub result: Option<InsightsRun>,
    /// Index into [`InsightsRun::lines`].
    pub selected: usize,
    /// An analysis is running (with this focus, if any).
    pub running: Option<Option<FocusArea>>,
    pub loading: bool,
    pub hint: Option<String>,
    looked_up: Option<SessionId>,
    cancel: Option<tokio_util::sync::CancellationToken>,
}

/// News for the workspace from its engine tasks.
#[derive(Clone, Debug)]
pub enum InsightsMsg {
    Loaded {
        session: SessionId,
        result: Option<Box<InsightsRun>>,
        fresh: bool,
    },
    Failed(String),
    /// The session was reloaded for an evidence jump: select this node.
    SelectNode(NodeId),
}

/// Work for the runtime, carried out by [`run`].
#[derive(Clone, Debug)]
pub enum InsightsEffect {
    Load {
        session: SessionId,
    },
    Analyze {
        session: SessionId,
        focus: Option<FocusArea>,
        cancel: tokio_util::sync::CancellationToken,
    },
    /// Reload the session, then select `node` in the graph.
    Open {
        session: SessionId,
        node: NodeId,
    },
}

/// What a form this workspace opened is for.
#[derive(Clone, Debug, PartialEq)]
pub enum FormPurpose {
    Focus,
}

/// Selects `node` in the Think graph, opening its turn if it is folded. True when found.
pub fn select_in_graph(state: &mut State, node: NodeId) -> bool {
    let find = |state: &State| {
        state
            .graph
            .rows()
            .iter()
            .position(|r| r.key == RowKey::Node(node))
    };
    if let Some(i) = find(state) {
        state.graph.selected = i;
        state.refresh_shown();
        return true;
    }
    // Folded away: open the turn's query row, then look again.
    let Some(&pos) = state.loaded.index.get(&node) else {
        return false;
    };
    let Some(query) = state.loaded.nodes[..=pos]
        .iter()
        .rev()
        .find(|n| n.kind == NodeType::Query)
        .map(|n| n.id)
    else {
        return false;
    };
    let Some(q) = state
        .graph
        .rows()
        .iter()
        .position(|r| r.key == RowKey::Node(query))
    else {
        return false;
    };
    state.graph.selected = q;
    state.graph.expand();
    match find(state) {
        Some(i) => {
            state.graph.selected = i;
            state.refresh_shown();
            true
        }
        None => false,
    }
}

fn notice(state: &mut State, text: impl Into<String>, level: Level) {
    state.notice = Some((text.into(), level));
}

fn open_evidence(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(r) = &state.insights.result else {
        return;
    };
    let line = r.lines().get(state.insights.selected).copied();
    let ev = match line {
        Some(Line::Evidence(i, j)) => r.insights[i].evidence.get(j),
        Some(Line::Insight(i)) => r.insights[i].evidence.first(),
        None => None,
    };
    let Some(ev) = ev else {
        notice(state, "this insight cites no evidence", Level::Info);
        return;
    };
    let (node, session) = (ev.node, r.session);
    if ev.kind.is_none() {
        notice(
            state,
            format!("node {} is no longer stored", node.short()),
            Level::Warn,
        );
        return;
    }
    state.workspace = Workspace::Think;
    state.focus = Focus::Graph;
    if state.loaded.id() == Some(session) {
        select_in_graph(state, node);
    }
    fx.push(Effect::Insights(InsightsEffect::Open { session, node }));
}

/// Offers a bound action to the workspace; true when it was handled here.
pub fn action(state: &mut State, a: &Action, fx: &mut Vec<Effect>) -> bool {
    if *a == Action::RunInsights {
        if state.insights.running.is_some() {
            notice(state, "an analysis is already running", Level::Warn);
        } else if state.loaded.id().is_none() {
            notice(state, "open a session first", Level::Info);
        } else {
            let mut choices = vec!["no particular focus".to_string()];
            choices.extend(FOCUS_AREAS.iter().map(|f| f.as_str().replace('_', " ")));
            state.overlay = Some(Overlay::Form(Form::choose(
                "Insights on this session: focus",
                Purpose::Insights(FormPurpose::Focus),
                choices,
            )));
        }
        return true;
    }
    if state.workspace != Workspace::Insights {
        return false;
    }
    let n = state
        .insights
        .result
        .as_ref()
        .map_or(0, |r| r.lines().len());
    let sel = state.insights.selected;
    let set = |state: &mut State, i: usize| state.insights.selected = i.min(n.saturating_sub(1));
    match a {
        Action::MoveDown => set(state, sel + 1),
        Action::MoveUp => set(state, sel.saturating_sub(1)),
        Action::PageDown => set(state, sel + 10),
        Action::PageUp => set(state, sel.saturating_sub(10)),
        Action::Top => set(state, 0),
        Action::Bottom => set(state, n.saturating_sub(1)),
        Action::OpenEvidence | Action::Select => open_evidence(state, fx),
        Action::CancelRun if state.insights.running.is_some() => {
            if let Some(c) = &state.insights.cancel {
                c.cancel();
            }
            notice(state, "cancelling the analysis", Level::Info);
        }
        _ => return false,
    }
    true
}

/// Called when the workspace becomes the visible one.
pub fn on_enter(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(session) = state.loaded.id() else {
        if state.insights.result.is_none() {
            state.insights.hint = Some("no session open".into());
        }
        return;
    };
    let showing = state.insights.result.as_ref().map(|r| r.session);
    if showing == Some(session)
        || state.insights.looked_up == Some(session)
        || state.insights.running.is_some()
    {
        return;
    }
    state.insights.looked_up = Some(session);
    state.insights.loading = true;
    fx.push(Effect::Insights(InsightsEffect::Load { session }));
}

/// Applies news from an engine task.
pub fn on_msg(state: &mut State, m: InsightsMsg, _fx: &mut Vec<Effect>) {
    match m {
        InsightsMsg::Loaded {
            session,
            result,
            fresh,
        } => {
            state.insights.loading = false;
            state.insights.running = None;
            match result {
                Some(r) => {
                    if fresh {
                        let n = r.insights.len();
                        let bad = r.hallucinated;
                        notice(
                            state,
                            format!(
                                "{n} insights from {} nodes{}",
                                r.nodes_analyzed,
                                if bad > 0 {
                                    format!("; {bad} references to unknown nodes dropped")
                                } else {
                                    String::new()
                                }
                            ),
                            if bad > 0 { Level::Warn } else { Level::Info },
                        );
                    }
                    if state.insights.result.as_ref().map(|o| o.run) != Some(r.run) {
                        state.insights.selected = 0;
                    }
                    state.insights.result = Some(*r);
                    state.insights.hint = None;
                }
                None => {
                    // Another session's insights no longer apply.
                    if state
                        .insights
                        .result
                        .as_ref()
                        .is_some_and(|r| r.session != session)
                    {
                        state.insights.result = None;
                    }
                    if state.insights.result.is_none() {
                        state.insights.hint = Some("no insights stored for this session".into());
                    }
                }
            }
        }
        InsightsMsg::Failed(e) => {
            state.insights.loading = false;
            state.insights.running = None;
            notice(state, format!("insights failed: {e}"), Level::Error);
        }
        InsightsMsg::SelectNode(node) => {
            if !select_in_graph(state, node) {
                notice(
                    state,
                    format!("node {} is not in the graph", node.short()),
                    Level::Warn,
                );
            }
        }
    }
}

/// Applies a submitted form.
pub fn submit(state: &mut State, p: FormPurpose, answer: Answer, fx: &mut Vec<Effect>) {
    match p {
        FormPurpose::Focus => {
            let Some(session) = state.loaded.id() else {
                return;
            };
            let focus = answer
                .choice
                .and_then(|c| c.checked_sub(1))
                .and_then(|i| FOCUS_AREAS.get(i).copied());
            state.insights.running = Some(focus);
            state.insights.looked_up = Some(session);
            state.workspace = Workspace::Insights;
            notice(
                state,
                "analysing the session's recent reasoning (one max-effort call)…",
                Level::Info,
            );
            let cancel = tokio_util::sync::CancellationToken::new();
            state.insights.cancel = Some(cancel.clone());
            fx.push(Effect::Insights(InsightsEffect::Analyze {
                session,
                focus,
                cancel,
            }));
        }
    }
}

/// Carries out an effect: store reads and writes, engine tasks (spawned; results come back
/// as [`InsightsMsg`] through `svc.tx`).
pub fn run(e: InsightsEffect, svc: &Services) {
    let tx = svc.tx.clone();
    match e {
        InsightsEffect::Load { session } => {
            let store = svc.store.clone();
            tokio::task::spawn_blocking(move || {
                let _ = tx.send(Msg::Insights(match load_run(&store, session, None) {
                    Ok(r) => InsightsMsg::Loaded {
                        session,
                        result: r.map(Box::new),
                        fresh: false,
                    },
                    Err(e) => InsightsMsg::Failed(format!("cannot read insights: {e}")),
                }));
            });
        }
        InsightsEffect::Open { session, node } => {
            let store = svc.store.clone();
            tokio::task::spawn_blocking(move || {
                // The reload lands first, so the selection is made in the fresh graph.
                let _ = tx.send(super::runtime::load_session(&store, session));
                let _ = tx.send(Msg::Insights(InsightsMsg::SelectNode(node)));
            });
        }
        InsightsEffect::Analyze {
            session,
            focus,
            cancel,
        } => {
            let m = match &svc.model {
                Ok(m) => m.clone(),
                Err(e) => {
                    let _ = tx.send(Msg::Insights(InsightsMsg::Failed(e.clone())));
                    return;
                }
            };
            let cfg = &svc.cfg;
            let engine = Metacog {
                store: svc.store.clone(),
                provider: m.provider.clone(),
                call: super::verify_ws::call_settings(
                    svc,
                    m.kind,
                    &m.model,
                    cfg.metacog.effort,
                    cfg.metacog.max_tokens,
                ),
                prompt: svc.prompts.get("metacog/analyze").to_string(),
                config: cfg.metacog.clone(),
            };
            tokio::spawn(async move {
                let msg = match engine.analyze(session, focus, &cancel).await {
                    Ok(r) => {
                        let store = engine.store.clone();
                        match tokio::task::spawn_blocking(move || {
                            load_run(&store, session, Some(r.run))
                        })
                        .await
                        {
                            Ok(Ok(result)) => InsightsMsg::Loaded {
                                session,
                                result: result.map(Box::new),
                                fresh: true,
                            },
                            Ok(Err(e)) => InsightsMsg::Failed(e.to_string()),
                            Err(e) => InsightsMsg::Failed(e.to_string()),
                        }
                    }
                    Err(e) => InsightsMsg::Failed(e.to_string()),
                };
                let _ = tx.send(Msg::Insights(msg));
            });
        }
    }
}

/// Reads an insights run of `session` (the newest when `run` is `None`) with its insights
/// in the order the model gave them.
pub fn load_run(
    store: &Store,
    session: SessionId,
    run: Option<RunId>,
) -> Result<Option<InsightsRun>, crate::store::StoreError> {
    let Some(run) = store.pick_run(session, RunKind::Insights, run)? else {
        return Ok(None);
    };
    let stored = store.insights(session)?;
    let nodes = store.session_nodes(session)?;
    let kind_of = |id: NodeId| nodes.iter().find(|n| n.id == id).map(|n| n.kind);
    let s = &run.summary;
    let ids: Vec<String> = s["insights"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut insights = Vec::new();
    for id in &ids {
        let Some(i) = stored.iter().find(|i| i.id.to_string() == *id) else {
            continue;
        };
        let evidence = i
            .evidence
            .iter()
            .filter_map(|e| {
                let node: NodeId = e.get("nodeId")?.as_str()?.parse().ok()?;
                Some(EvidenceView {
                    node,
                    kind: kind_of(node),
                    excerpt: e
                        .get("excerpt")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    relevance: e.get("relevance").and_then(Value::as_f64).unwrap_or(0.0),
                })
            })
            .collect();
        insights.push(InsightRow {
            kind: i.kind.clone(),
            text: i.text.clone(),
            confidence: i.confidence,
            evidence,
        });
    }
    let count = |k: &str| s[k].as_array().map_or(0, Vec::len);
    Ok(Some(InsightsRun {
        session,
        run: run.id,
        focus: run.params["focus"].as_str().map(str::to_string),
        nodes_analyzed: count("nodesAnalyzed"),
        hallucinated: count("invalidNodeRefs"),
        validation_errors: count("validationErrors"),
        summary: s["summary"].as_str().map(str::to_string),
        insights,
    }))
}
