//! The workspace's background work: a pipeline run (new or resumed) with its events
//! forwarded, and a session's last pipeline run read back from the store off the executor.

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::app::runtime::Services;
use crate::app::workspaces::Outbox;
use crate::config::providers as factory;
use crate::engines::pipeline::{
    self, Final, Layer, Mode, PipelineEngine, PipelineError, PipelineEvent, PipelineRequest,
};
use crate::store::{NodeStatus, RunId, RunKind, RunStatus, SessionId, Store, StoreError};
use crate::views::pipeline::{LayerPane, LayerStatus, Phase, RunView};

/// How a run here ended well.
#[derive(Debug)]
pub struct Finished {
    pub run: RunId,
    pub session: SessionId,
}

pub use crate::app::workspaces::Failure;

/// News for the workspace from its tasks.
#[derive(Debug)]
pub enum PipelineMsg {
    /// The mode `[pipeline] default_mode` names, when it names one.
    Defaults(Option<Mode>),
    /// The last pipeline run of `session`, or none.
    Loaded {
        session: SessionId,
        run: Option<Box<RunView>>,
    },
    LoadFailed(String),
    /// An event of run `seq` (older runs' events are dropped).
    Event {
        seq: u64,
        event: PipelineEvent,
    },
    Done {
        seq: u64,
        outcome: Result<Finished, Failure>,
    },
}

/// Work for the runtime, carried out by `run`.
#[derive(Debug)]
pub enum PipelineEffect {
    /// Read the config's default mode and `session`'s last run.
    Load(SessionId),
    /// Read only the config's default mode.
    Defaults,
    /// Run the pipeline on `question`, continuing `session` (a new session when none).
    Start {
        seq: u64,
        question: String,
        mode: Mode,
        session: Option<SessionId>,
        cancel: CancellationToken,
    },
    /// Continue `run` from its first unfinished layer.
    Resume {
        seq: u64,
        run: RunId,
        cancel: CancellationToken,
    },
}

/// Carries out an effect; what comes of it returns as [`PipelineMsg`] through `out`.
pub(super) fn run(e: PipelineEffect, svc: &Services, out: Outbox<PipelineMsg>) {
    match e {
        PipelineEffect::Defaults => {
            out.send(PipelineMsg::Defaults(svc.cfg.pipeline.default_mode.mode()));
        }
        PipelineEffect::Load(session) => {
            out.send(PipelineMsg::Defaults(svc.cfg.pipeline.default_mode.mode()));
            let store = svc.store.clone();
            out.blocking(move || match load_last(&store, session) {
                Ok(run) => PipelineMsg::Loaded {
                    session,
                    run: run.map(Box::new),
                },
                Err(e) => PipelineMsg::LoadFailed(e.to_string()),
            });
        }
        PipelineEffect::Start {
            seq,
            question,
            mode,
            session,
            cancel,
        } => {
            let req = PipelineRequest {
                question,
                mode,
                session,
                escalate: svc.cfg.pipeline.escalate,
            };
            spawn(svc, seq, Work::New(req), cancel, out);
        }
        PipelineEffect::Resume { seq, run, cancel } => {
            spawn(svc, seq, Work::Resume(run), cancel, out);
        }
    }
}

enum Work {
    New(PipelineRequest),
    Resume(RunId),
}

/// The engine over the configured model, as `glassbox ask` builds it.
fn engine(svc: &Services) -> Result<PipelineEngine, String> {
    let m = svc.model.as_ref().map_err(Clone::clone)?;
    Ok(factory::pipeline_engine(
        &svc.cfg,
        &svc.prompts,
        m.kind,
        m.provider.clone(),
        m.model.clone(),
        svc.store.clone(),
        svc.memory.as_ref().ok().cloned(),
    ))
}

fn spawn(
    svc: &Services,
    seq: u64,
    work: Work,
    cancel: CancellationToken,
    out: Outbox<PipelineMsg>,
) {
    let engine = match engine(svc) {
        Ok(e) => e,
        Err(error) => {
            let run = match work {
                Work::Resume(run) => Some(run),
                Work::New(_) => None,
            };
            return out.send(PipelineMsg::Done {
                seq,
                outcome: Err(Failure {
                    error,
                    run,
                    cancelled: false,
                }),
            });
        }
    };
    tokio::spawn(async move {
        let (events, rx) = mpsc::unbounded_channel();
        let forward = out.forward(rx, move |event| PipelineMsg::Event { seq, event });
        let result = match work {
            Work::New(req) => engine.run(req, events, cancel).await,
            Work::Resume(run) => engine.resume(run, events, cancel).await,
        };
        // Every event lands before the end.
        let _ = forward.await;
        let outcome = result
            .map(|o| Finished {
                run: o.run,
                session: o.session,
            })
            .map_err(|e| Failure {
                cancelled: matches!(e, PipelineError::Cancelled(_)),
                run: e.resumable(),
                error: e.to_string(),
            });
        out.send(PipelineMsg::Done { seq, outcome });
    });
}

/// The layers a mode runs, in order (ultra-deep's re-synthesis only when asked for, so it
/// is not listed).
pub fn planned(mode: Mode) -> &'static [Layer] {
    match mode {
        Mode::Auto => &[],
        Mode::Instant => &[Layer::Instant],
        Mode::Deep => &Layer::DEEP,
        Mode::UltraDeep => &Layer::ULTRA,
    }
}

/// Adds a pending pane for each layer `mode` runs that has none yet.
pub fn plan(view: &mut RunView, mode: Mode) {
    for l in planned(mode) {
        view.pane_mut(*l);
    }
}

fn parse<T: serde::de::DeserializeOwned>(v: Option<&Value>) -> Option<T> {
    v.and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// The last pipeline run of `session` as shown: its layers from their nodes, its final
/// answer and notes from the run's summary; a run that has not finished also lists the
/// layers still to come.
pub fn load_last(store: &Store, session: SessionId) -> Result<Option<RunView>, StoreError> {
    let Some(run) = store.pick_run(session, RunKind::Pipeline, None)? else {
        return Ok(None);
    };
    let live = run.status == RunStatus::Running;
    let layers: Vec<LayerPane> = pipeline::run_layers(store, run.id)?
        .iter()
        .map(|r| LayerPane {
            layer: r.layer,
            node: Some(r.node.id),
            status: match &r.node.status {
                NodeStatus::Complete => LayerStatus::Done,
                NodeStatus::Streaming if live => LayerStatus::Running,
                NodeStatus::Streaming | NodeStatus::Interrupted => LayerStatus::Interrupted,
                NodeStatus::Failed { .. } => LayerStatus::Failed,
            },
            text: r.node.text.clone(),
            thinking: r.thinking().to_string(),
            artifact: r.artifact().cloned(),
            error: match &r.node.status {
                NodeStatus::Failed { error } => Some(error.clone()),
                _ => None,
            },
            duration_ms: r.duration_ms(),
            resumed: false,
        })
        .collect();
    let s = &run.summary;
    let fin: Option<Final> = parse(s.get("final"));
    let mode: Option<Mode> = fin
        .as_ref()
        .and_then(|f| f.mode)
        .or_else(|| parse::<Option<Mode>>(s.get("mode")).flatten());
    // Why deep escalated: the final's reason, or while it runs the summary's.
    let escalation = fin
        .as_ref()
        .and_then(|f| f.escalation.clone())
        .or_else(|| parse::<Option<String>>(s.get("escalation")).flatten());
    let phase = match &run.status {
        RunStatus::Running => Phase::Elsewhere,
        RunStatus::Done => Phase::Done,
        RunStatus::Interrupted => Phase::Interrupted,
        RunStatus::Failed { error } => Phase::Failed(error.clone()),
    };
    let requested: Option<Mode> = parse(run.params.get("mode"));
    let mut view = RunView {
        run: Some(run.id),
        session: Some(session),
        question: run
            .params
            .get("question")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        requested,
        mode,
        escalation,
        layers,
        answer: s.get("answer").and_then(Value::as_str).map(str::to_string),
        fin,
        phase,
    };
    if view.phase != Phase::Done {
        view.pane_mut(Layer::Cortex);
        for m in [requested, mode].into_iter().flatten() {
            plan(&mut view, m);
        }
        if view.escalated() {
            plan(&mut view, Mode::UltraDeep);
        }
    }
    Ok(Some(view))
}
