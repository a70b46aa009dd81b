//! The workspace's background work: the search engine run, and the last search of a
//! session rebuilt from the store (off the executor).

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Outcome;
use crate::app::runtime::Services;
use crate::app::workspaces::Outbox;
use crate::config::ProviderKind;
use crate::config::providers as factory;
use crate::engines::got::{
    CallSettings, GotControl, GotEngine, GotEvent, GotParams, GotPrompts, GotRequest, GotResult,
    Strategy, Thought, ThoughtState,
};
use crate::store::{
    EdgeType, NodeId, NodeType, RunId, RunKind, RunStatus, SessionId, Store, StoreError,
};

/// Config values the workspace needs but cannot read itself.
#[derive(Clone, Debug, PartialEq)]
pub struct Defaults {
    pub params: GotParams,
    pub boost_step: f64,
}

/// A finished search read back from the store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stored {
    pub session: Option<SessionId>,
    pub run: Option<RunId>,
    pub problem: String,
    pub params: Option<GotParams>,
    pub thoughts: Vec<Thought>,
    pub expanded: Vec<NodeId>,
    pub best: Option<NodeId>,
    pub status: Option<RunStatus>,
    pub outcome: Option<Outcome>,
}

/// News for the workspace from its tasks.
#[derive(Debug)]
pub enum GotMsg {
    /// The config's `[got]` defaults.
    Defaults(Defaults),
    /// The last search of a session, or none.
    Loaded(Box<Stored>),
    LoadFailed(String),
    Event {
        search: u64,
        event: GotEvent,
    },
    Finished {
        search: u64,
        outcome: Result<Box<GotResult>, String>,
    },
}

/// Work for the runtime, carried out by `run`.
#[derive(Debug)]
pub enum GotEffect {
    /// Read the config defaults, and the last GoT run of the session (if any).
    Load(Option<SessionId>),
    /// Run a search; `search` tags its messages, `controls` steers it.
    Start {
        search: u64,
        problem: String,
        strategy: Strategy,
        budget: Option<u64>,
        session: Option<SessionId>,
        controls: mpsc::UnboundedReceiver<GotControl>,
        cancel: CancellationToken,
    },
}

/// Call settings of the search's model calls, as `glassbox got` makes them.
fn call_settings(svc: &Services, kind: ProviderKind, model: &str) -> CallSettings {
    let cfg = &svc.cfg;
    let effort = (kind != ProviderKind::Local).then_some(cfg.got.effort);
    let plan = factory::plan_turn(cfg, kind, effort, Some(cfg.got.max_tokens));
    CallSettings {
        model: model.to_string(),
        thinking: plan.thinking,
        effort: plan.effort,
        max_tokens: plan.max_tokens,
        temperature: Some(cfg.generation.temperature as f32),
        seed: Some(cfg.generation.seed),
    }
}

/// Carries out an effect: the store read on a blocking thread, the engine run as a task;
/// what they find comes back as [`GotMsg`] through `out`.
pub(super) fn run(e: GotEffect, svc: &Services, out: Outbox<GotMsg>) {
    match e {
        GotEffect::Load(session) => {
            out.send(GotMsg::Defaults(Defaults {
                params: GotParams::from_config(&svc.cfg.got),
                boost_step: svc.cfg.got.boost_step,
            }));
            let Some(session) = session else {
                return;
            };
            let store = svc.store.clone();
            out.blocking(move || match load_last(&store, session) {
                Ok(s) => GotMsg::Loaded(Box::new(s)),
                Err(e) => GotMsg::LoadFailed(e.to_string()),
            });
        }
        GotEffect::Start {
            search,
            problem,
            strategy,
            budget,
            session,
            controls,
            cancel,
        } => {
            let model = match &svc.model {
                Ok(m) => m.clone(),
                Err(e) => {
                    return out.send(GotMsg::Finished {
                        search,
                        outcome: Err(e.clone()),
                    });
                }
            };
            let mut params = GotParams::from_config(&svc.cfg.got);
            params.strategy = strategy;
            params.token_budget = budget;
            let engine = GotEngine {
                store: svc.store.clone(),
                provider: model.provider.clone(),
                call: call_settings(svc, model.kind, &model.model),
                prompts: GotPrompts::from(&svc.prompts),
                config: svc.cfg.got.clone(),
            };
            let req = GotRequest {
                problem,
                session,
                params,
                start_paused: false,
            };
            tokio::spawn(async move {
                let (events, rx) = mpsc::unbounded_channel();
                let forward = out.forward(rx, move |event| GotMsg::Event { search, event });
                let outcome = engine
                    .run(req, events, controls, cancel)
                    .await
                    .map(Box::new)
                    .map_err(|e| e.to_string());
                // Every event before the end.
                let _ = forward.await;
                out.send(GotMsg::Finished { search, outcome });
            });
        }
    }
}

fn meta_f64(meta: &serde_json::Map<String, Value>, key: &str) -> Option<f64> {
    meta.get(key).and_then(Value::as_f64)
}

/// The last GoT run of `session` with its thoughts, rebuilt from nodes, edges and the run.
pub fn load_last(store: &Store, session: SessionId) -> Result<Stored, StoreError> {
    let Some(run) = store.pick_run(session, RunKind::Got, None)? else {
        return Ok(Stored {
            session: Some(session),
            ..Default::default()
        });
    };
    let run_text = serde_json::to_value(run.id)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| run.id.to_string());
    let nodes: Vec<_> = store
        .session_nodes(session)?
        .into_iter()
        .filter(|n| n.kind == NodeType::GotThought)
        .filter(|n| n.meta.get("run").and_then(Value::as_str) == Some(run_text.as_str()))
        .collect();
    let ids: HashSet<NodeId> = nodes.iter().map(|n| n.id).collect();
    let mut parent: HashMap<NodeId, NodeId> = HashMap::new();
    let mut sources: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    for e in store.session_edges(session)? {
        if !ids.contains(&e.src) {
            continue;
        }
        match e.kind {
            EdgeType::BranchesFrom => {
                parent.insert(e.src, e.dst);
            }
            EdgeType::Aggregates => sources.entry(e.src).or_default().push(e.dst),
            _ => {}
        }
    }
    let state_of = |s: Option<&str>| match s {
        Some("evaluated") => ThoughtState::Evaluated,
        Some("verified") => ThoughtState::Verified,
        Some("rejected") => ThoughtState::Rejected,
        Some("aggregated") => ThoughtState::Aggregated,
        _ => ThoughtState::Generated,
    };
    let thoughts: Vec<Thought> = nodes
        .into_iter()
        .map(|n| Thought {
            id: n.id,
            parent: parent.get(&n.id).copied(),
            sources: sources.remove(&n.id).unwrap_or_default(),
            score: meta_f64(&n.meta, "score").or(n.confidence),
            state: state_of(n.meta.get("state").and_then(Value::as_str)),
            depth: n.meta.get("depth").and_then(Value::as_u64).unwrap_or(0) as u32,
            pinned: n
                .meta
                .get("pinned")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            boost: meta_f64(&n.meta, "boost").unwrap_or(0.0),
            reasoning: n
                .meta
                .get("reasoning")
                .and_then(Value::as_str)
                .map(str::to_string),
            content: n.text,
        })
        .collect();
    let summary = &run.summary;
    let id_list =
        |v: &Value| -> Vec<NodeId> { serde_json::from_value(v.clone()).unwrap_or_default() };
    let outcome = summary.get("answer").map(|a| Outcome {
        answer: a.as_str().unwrap_or_default().to_string(),
        confidence: summary
            .get("confidence")
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
        summary: summary
            .get("reasoningSummary")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        stats: summary
            .get("stats")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default(),
    });
    Ok(Stored {
        session: Some(session),
        run: Some(run.id),
        problem: run
            .params
            .get("problem")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        params: run
            .params
            .get("params")
            .and_then(|p| serde_json::from_value(p.clone()).ok()),
        expanded: summary.get("expanded").map(id_list).unwrap_or_default(),
        best: summary
            .get("best")
            .and_then(|b| serde_json::from_value(b.clone()).ok()),
        status: Some(run.status),
        outcome,
        thoughts,
    })
}
