//! The Fork workspace's tasks: the fork engine's jobs (fork, fork from a step, debate,
//! steering, a checkpoint with a correction), verdicts recorded without the model, and
//! reading a session's newest fork back from the store.

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use super::update::{steer_label, steer_view};
use super::{Finished, ForkEffect, ForkMsg, Loaded, Work};
use crate::app::runtime::Services;
use crate::app::workspaces::Outbox;
use crate::engines::fork::{
    DebateResult, ForkEngine, ForkError, ForkEvent, ForkPrompts, ForkResult, ForkSettings,
    SteerAction, SteerResult, load_fork_record, record_verdict,
};
use crate::store::{Run, RunKind, RunStatus, SessionId, Store};

/// Carries out an effect: the engine as a task whose events and result come back as
/// [`ForkMsg`]; store reads and writes off the executor.
pub(super) fn run(e: ForkEffect, svc: &Services, out: Outbox<ForkMsg>) {
    match e {
        ForkEffect::Start { job, work, cancel } => {
            let engine = match engine(svc, cancel) {
                Ok(en) => en,
                Err(err) => {
                    return out.send(ForkMsg::Finished {
                        job,
                        result: Err(err),
                    });
                }
            };
            tokio::spawn(async move {
                let (events, rx) = unbounded_channel();
                let forward = out.forward(rx, move |event| ForkMsg::Event { job, event });
                let result = run_job(engine, work, &events).await;
                drop(events);
                // Every event is in before the result.
                let _ = forward.await;
                out.send(ForkMsg::Finished { job, result });
            });
        }
        ForkEffect::LoadLatest(session) => {
            let store = svc.store.clone();
            out.blocking(move || ForkMsg::Loaded(latest(&store, session).map(|o| o.map(Box::new))));
        }
        ForkEffect::Verdict {
            node,
            verdict,
            correction,
        } => {
            let store = svc.store.clone();
            let max = ForkSettings::new("").correction_max_chars;
            let learn = svc.cfg.memory.learn.clone();
            out.blocking(move || {
                ForkMsg::Verdict(
                    record_verdict(&store, node, verdict, correction, max, &learn)
                        .map(|(c, _)| c)
                        .map_err(|e| e.to_string()),
                )
            });
        }
    }
}

/// The engine for the configured model, mirroring `glassbox fork`'s settings.
fn engine(svc: &Services, cancel: CancellationToken) -> Result<ForkEngine, String> {
    let m = svc.model.as_ref().map_err(Clone::clone)?;
    let settings = ForkSettings::from_config(&svc.cfg, m.kind, m.model.clone(), None, None);
    Ok(ForkEngine::new(
        svc.store.clone(),
        m.provider.clone(),
        ForkPrompts::from_prompts(&svc.prompts),
        settings,
    )
    .with_cancel(cancel))
}

async fn run_job(
    engine: ForkEngine,
    work: Work,
    events: &UnboundedSender<ForkEvent>,
) -> Result<Finished, String> {
    let e = |e: ForkError| e.to_string();
    Ok(match work {
        Work::Fork(req) => {
            let o = engine.fork(req, events).await.map_err(e)?;
            Finished::Fork {
                run: o.run,
                session: o.session,
                result: o.data,
            }
        }
        Work::FromStep {
            thinking,
            step,
            styles,
        } => {
            let o = engine
                .fork_from_step(thinking, step, styles, Vec::new(), events)
                .await
                .map_err(e)?;
            Finished::Fork {
                run: o.run,
                session: o.session,
                result: o.data,
            }
        }
        Work::Debate(req) => {
            let rounds = engine.settings().debate_rounds;
            let o = engine.debate(req, rounds, events).await.map_err(e)?;
            Finished::Debate {
                run: o.run,
                session: o.session,
                result: o.data,
            }
        }
        Work::Steer(run, action) => {
            let o = engine.steer(run, action, events).await.map_err(e)?;
            Finished::Steer {
                run: o.run,
                session: o.session,
                result: o.data,
            }
        }
        Work::Checkpoint {
            node,
            verdict,
            correction,
        } => Finished::Checkpoint(
            engine
                .checkpoint(node, verdict, correction, events)
                .await
                .map_err(e)?,
        ),
    })
}

/// The newest finished fork, debate or refork run of `session`, with its steering.
pub(super) fn latest(store: &Store, session: SessionId) -> Result<Option<Loaded>, String> {
    let mut runs: Vec<Run> = store
        .session_runs(session)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|r| r.status != RunStatus::Running)
        .collect();
    runs.sort_by_key(|r| r.created_at);
    for r in runs.iter().rev() {
        if !matches!(r.kind, RunKind::Fork | RunKind::Debate | RunKind::Steer) {
            continue;
        }
        let Ok(record) = load_fork_record(store, r.id) else {
            continue;
        };
        let (kind, result, debate) = match r.kind {
            RunKind::Debate => (
                "debate",
                None,
                serde_json::from_value::<DebateResult>(r.summary.clone()).ok(),
            ),
            RunKind::Steer => (
                "refork",
                serde_json::from_value::<ForkResult>(r.summary["result"].clone()).ok(),
                None,
            ),
            _ => (
                "fork",
                serde_json::from_value::<ForkResult>(r.summary.clone()).ok(),
                None,
            ),
        };
        let id = r.id.to_string();
        let steers = runs
            .iter()
            .filter(|s| s.kind == RunKind::Steer && s.params["sourceRun"].as_str() == Some(&id))
            .filter_map(|s| {
                let action: SteerAction = serde_json::from_value(s.params["steer"].clone()).ok()?;
                let result: SteerResult = serde_json::from_value(s.summary.clone()).ok()?;
                Some(steer_view(steer_label(&action), &result))
            })
            .collect();
        return Ok(Some(Loaded {
            run: r.id,
            session,
            question: record.query,
            kind: kind.to_string(),
            result,
            debate,
            branches: record.branches,
            steers,
        }));
    }
    Ok(None)
}
