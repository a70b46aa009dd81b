//! The Insights workspace's tasks: reading stored insights runs and running the
//! metacognition engine.

use serde_json::Value;

use super::{InsightsEffect, InsightsMsg};
use crate::app::runtime::Services;
use crate::app::workspaces::Outbox;
use crate::engines::metacog::Metacog;
use crate::store::{NodeId, RunId, RunKind, SessionId, Store, StoreError};
use crate::views::insights::{EvidenceView, InsightRow, InsightsRun};

/// Carries out an effect: store reads off the executor, the engine as a task; results come
/// back as [`InsightsMsg`].
pub(super) fn run(e: InsightsEffect, svc: &Services, out: Outbox<InsightsMsg>) {
    match e {
        InsightsEffect::Load { session } => {
            let store = svc.store.clone();
            out.blocking(move || match load_run(&store, session, None) {
                Ok(r) => InsightsMsg::Loaded {
                    session,
                    result: r.map(Box::new),
                    fresh: false,
                },
                Err(e) => InsightsMsg::Failed(format!("cannot read insights: {e}")),
            });
        }
        InsightsEffect::Open { session, node } => {
            let store = svc.store.clone();
            tokio::task::spawn_blocking(move || {
                // The reload lands first, so the selection is made in the fresh graph.
                out.send_shared(crate::app::runtime::load_session(&store, session));
                out.send(InsightsMsg::SelectNode(node));
            });
        }
        InsightsEffect::Analyze {
            session,
            focus,
            cancel,
        } => {
            let m = match &svc.model {
                Ok(m) => m.clone(),
                Err(e) => return out.send(InsightsMsg::Failed(e.clone())),
            };
            let cfg = &svc.cfg;
            let engine = Metacog {
                store: svc.store.clone(),
                provider: m.provider.clone(),
                call: svc.call_settings(
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
                out.send(msg);
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
) -> Result<Option<InsightsRun>, StoreError> {
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
