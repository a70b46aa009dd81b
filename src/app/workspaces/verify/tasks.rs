//! The Verify workspace's background work: reading a stored verification, running the
//! verifier over a thinking node, and reasoning a corrected branch at a step. Store reads
//! run off the executor; results come back as [`VerifyMsg`] through the [`Outbox`].

use std::collections::HashMap;

use serde_json::Value;

use super::{HumanMark, StepView, Verification, VerifyEffect, VerifyMsg};
use crate::app::runtime::Services;
use crate::app::workspaces::Outbox;
use crate::config::ProviderKind;
use crate::config::providers as factory;
use crate::engines::fork::{ForkEngine, ForkPrompts, ForkSettings, Verdict as HumanVerdict};
use crate::engines::got::CallSettings;
use crate::engines::llm::Effort;
use crate::engines::verify::{Verdict, Verifier, VerifyRequest, node_steps};
use crate::store::{EdgeType, Node, NodeId, NodeType, RunId, RunKind, SessionId, Store};

/// Carries out an effect: store reads off the executor, engine runs as spawned tasks.
pub(super) fn run(e: VerifyEffect, svc: &Services, out: Outbox<VerifyMsg>) {
    match e {
        VerifyEffect::Load {
            session,
            run,
            fresh,
        } => {
            let store = svc.store.clone();
            out.blocking(move || match load_run(&store, session, run) {
                Ok(r) => VerifyMsg::Loaded {
                    session,
                    result: r.map(Box::new),
                    fresh,
                },
                Err(e) => VerifyMsg::LoadFailed(format!("cannot read the verification: {e}")),
            });
        }
        VerifyEffect::Verify { node, cancel } => {
            let m = match &svc.model {
                Ok(m) => m.clone(),
                Err(e) => return out.send(VerifyMsg::Failed(e.clone())),
            };
            let cfg = &svc.cfg;
            let verifier = Verifier {
                store: svc.store.clone(),
                provider: m.provider.clone(),
                call: svc.call_settings(m.kind, &m.model, cfg.verify.effort, cfg.verify.max_tokens),
                prompt: svc.prompts.get("verify/step").to_string(),
                config: cfg.verify.clone(),
            };
            tokio::spawn(async move {
                let msg = match verify(verifier, node, cancel).await {
                    Ok((session, r)) => VerifyMsg::Loaded {
                        session,
                        result: r.map(Box::new),
                        fresh: true,
                    },
                    Err(e) => VerifyMsg::Failed(e),
                };
                out.send(msg);
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
                Err(e) => return out.send(VerifyMsg::ForkFailed(e)),
            };
            tokio::spawn(async move {
                // The checkpoint's progress events are not shown here: only its outcome.
                let (events, _rx) = tokio::sync::mpsc::unbounded_channel();
                let done = engine
                    .checkpoint(node, HumanVerdict::Disagree, Some(correction), &events)
                    .await;
                out.send(match done {
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

/// Verifies the steps of the thinking node `node` (with the question of its turn) and reads
/// the stored run back, as the workspace shows it.
async fn verify(
    verifier: Verifier,
    node: NodeId,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<(SessionId, Option<Verification>), String> {
    let store = verifier.store.clone();
    let (steps, question) = tokio::task::spawn_blocking(move || {
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
    .map_err(|e| e.to_string())??;
    let req = VerifyRequest {
        steps,
        source: Some(node),
        original_query: question,
        threshold: None,
        session: None,
    };
    let done = verifier
        .verify(req, &cancel)
        .await
        .map_err(|e| e.to_string())?;
    let store = verifier.store.clone();
    tokio::task::spawn_blocking(move || {
        load_run(&store, done.session, Some(done.run)).map(|r| (done.session, r))
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())
}

/// Call settings for an engine's structured calls from the TUI's services; the same as
/// [`Services::call_settings`], which the workspaces' tasks use.
pub fn call_settings(
    svc: &Services,
    kind: ProviderKind,
    model: &str,
    effort: Effort,
    max_tokens: u32,
) -> CallSettings {
    svc.call_settings(kind, model, effort, max_tokens)
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

/// The human checkpoint a stored verdict word stands for, if it is one.
pub(super) fn human_mark(word: &str) -> Option<HumanMark> {
    match word.trim().to_ascii_lowercase().as_str() {
        "verified" | "correct" | "agree" => Some(HumanMark::Agree),
        "questionable" | "neutral" | "uncertain" => Some(HumanMark::Questionable),
        "disagree" | "incorrect" | "wrong" => Some(HumanMark::Disagree),
        _ => None,
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
                        .and_then(human_mark)
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
            unreadable: meta("unreadable").as_str().map(str::to_string),
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
