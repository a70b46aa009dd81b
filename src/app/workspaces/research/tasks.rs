//! The workspace's background work: a research run started or resumed with its events
//! forwarded, and a session's last research run read back from the store off the executor.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::app::runtime::Services;
use crate::app::workspaces::Outbox;
use crate::config::providers as factory;
use crate::engines::knowledge::Knowledge;
use crate::engines::research::{
    self, Decision, Policy, ResearchEngine, ResearchError, ResearchEvent, ResearchRequest,
    ResearchState, Status,
};
use crate::store::{RunId, RunKind, RunStatus, SessionId, Store, StoreError};
use crate::views::research::{Phase, RunView};

pub use crate::app::workspaces::Failure;

/// News for the workspace from its tasks.
#[derive(Debug)]
pub enum ResearchMsg {
    /// The last research run of `session`, or none.
    Loaded {
        session: SessionId,
        run: Option<Box<RunView>>,
    },
    LoadFailed(String),
    /// An event of run `seq` (older runs' events are dropped).
    Event {
        seq: u64,
        event: ResearchEvent,
    },
    /// Run `seq` stopped: at the gate or at the end (the state), or with an error.
    Done {
        seq: u64,
        outcome: Result<Box<ResearchState>, Failure>,
    },
}

/// Work for the runtime, carried out by `run`.
#[derive(Debug)]
pub enum ResearchEffect {
    /// Read `session`'s last research run.
    Load(SessionId),
    /// Plan and audit `question` in `session` (a new session when none), up to the gate.
    Start {
        seq: u64,
        question: String,
        session: Option<SessionId>,
        cancel: CancellationToken,
    },
    /// Continue `run` with a decision at the gate (an empty one continues a stopped run).
    Resume {
        seq: u64,
        run: RunId,
        decision: Decision,
        cancel: CancellationToken,
    },
}

/// Carries out an effect; what comes of it returns as [`ResearchMsg`] through `out`.
pub(super) fn run(e: ResearchEffect, svc: &Services, out: Outbox<ResearchMsg>) {
    match e {
        ResearchEffect::Load(session) => {
            let store = svc.store.clone();
            out.blocking(move || match load_last(&store, session) {
                Ok(run) => ResearchMsg::Loaded {
                    session,
                    run: run.map(Box::new),
                },
                Err(e) => ResearchMsg::LoadFailed(e.to_string()),
            });
        }
        ResearchEffect::Start {
            seq,
            question,
            session,
            cancel,
        } => {
            let req = ResearchRequest {
                question,
                policy: Policy::builtin(&svc.cfg.research),
                session,
                approve: false,
            };
            spawn(svc, seq, Work::New(req), cancel, out);
        }
        ResearchEffect::Resume {
            seq,
            run,
            decision,
            cancel,
        } => spawn(svc, seq, Work::Resume(run, decision), cancel, out),
    }
}

enum Work {
    New(ResearchRequest),
    Resume(RunId, Decision),
}

/// The engine over the configured model, as `glassbox research` builds it: the knowledge
/// base and memory share the memory's embedder (keyword search without one).
fn engine(svc: &Services) -> Result<ResearchEngine, String> {
    let m = svc.model.as_ref().map_err(Clone::clone)?;
    let memory = svc.memory.as_ref().ok().cloned();
    let embedder = memory.as_ref().and_then(|m| m.embedder().cloned());
    let knowledge = Knowledge::new(svc.store.clone(), embedder, svc.cfg.knowledge.clone())
        .with_batch_size(svc.cfg.embeddings.batch_size);
    Ok(factory::research_engine(
        &svc.cfg,
        &svc.prompts,
        m.provider.clone(),
        m.model.clone(),
        svc.store.clone(),
        Some(knowledge),
        memory,
    ))
}

fn spawn(
    svc: &Services,
    seq: u64,
    work: Work,
    cancel: CancellationToken,
    out: Outbox<ResearchMsg>,
) {
    let engine = match engine(svc) {
        Ok(e) => e,
        Err(error) => {
            let run = match work {
                Work::Resume(run, _) => Some(run),
                Work::New(_) => None,
            };
            return out.send(ResearchMsg::Done {
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
        let forward = out.forward(rx, move |event| ResearchMsg::Event { seq, event });
        let (result, run) = match work {
            Work::New(req) => (engine.start(req, events, cancel).await, None),
            Work::Resume(run, d) => (engine.resume(run, d, events, cancel).await, Some(run)),
        };
        // Every event lands before the end.
        let _ = forward.await;
        let outcome = result.map(Box::new).map_err(|e| Failure {
            cancelled: matches!(e, ResearchError::Cancelled(_)),
            run: e.resumable().or(run),
            error: e.to_string(),
        });
        out.send(ResearchMsg::Done { seq, outcome });
    });
}

/// The phase a stored run is shown in.
pub fn stored_phase(status: &RunStatus, st: &ResearchState) -> Phase {
    match status {
        RunStatus::Done => Phase::Done,
        RunStatus::Interrupted => Phase::Interrupted,
        RunStatus::Failed { error } => Phase::Failed(error.clone()),
        // Waiting at the gate is stored as running: nothing runs, a person decides.
        RunStatus::Running if st.status == Status::AwaitingApproval => Phase::Interrupted,
        RunStatus::Running if st.status.finished() => Phase::Done,
        RunStatus::Running => Phase::Elsewhere,
    }
}

/// The last research run of `session` as shown, its state from the run's summary.
pub fn load_last(store: &Store, session: SessionId) -> Result<Option<RunView>, StoreError> {
    let Some(run) = store.pick_run(session, RunKind::Research, None)? else {
        return Ok(None);
    };
    let question = run
        .params
        .get("question")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let (state, phase) = match research::run_state(&run) {
        Ok(st) => {
            let phase = stored_phase(&run.status, &st);
            (Some(st), phase)
        }
        Err(why) => (None, Phase::Failed(why)),
    };
    Ok(Some(RunView {
        run: Some(run.id),
        session: Some(session),
        question,
        phase,
        state,
        live: None,
    }))
}
