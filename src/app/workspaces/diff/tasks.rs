//! The workspace's background work: a diff of two nodes with the model's progress
//! forwarded, and a merge of the two into claims.

use tokio_util::sync::CancellationToken;

use crate::app::runtime::Services;
use crate::app::workspaces::{Failure, Outbox};
use crate::config::providers::{self as factory, Built};
use crate::engines::diff::{Diff, DiffError, DiffProgress, MergeRequest, Merged};
use crate::engines::llm::LlmError;
use crate::store::NodeId;

/// News for the workspace from its tasks.
#[derive(Debug)]
pub enum DiffMsg {
    /// Diff `seq`: the model labels pair `done + 1` of `total`.
    Progress { seq: u64, done: usize, total: usize },
    /// Diff `seq` ended.
    Diffed {
        seq: u64,
        result: Result<Box<Diff>, Failure>,
    },
    /// The merge of diff `seq` ended.
    Merged {
        seq: u64,
        result: Result<Box<Merged>, Failure>,
    },
}

/// Work for the runtime, carried out by `run`.
#[derive(Debug)]
pub enum DiffEffect {
    /// Align and label the steps of `a` and `b`.
    Diff {
        seq: u64,
        a: NodeId,
        b: NodeId,
        cancel: CancellationToken,
    },
    /// Merge `a` and `b` into claims with their sources.
    Merge {
        seq: u64,
        a: NodeId,
        b: NodeId,
        cancel: CancellationToken,
    },
}

fn failure(e: DiffError) -> Failure {
    Failure {
        cancelled: matches!(
            e,
            DiffError::Cancelled | DiffError::Model(LlmError::Cancelled)
        ),
        run: None,
        error: e.to_string(),
    }
}

/// The configured model as the provider factory takes it, or why there is none.
fn built(svc: &Services) -> Result<Built, String> {
    let m = svc.model.as_ref().map_err(Clone::clone)?;
    Ok(Built {
        provider: m.provider.clone(),
        kind: m.kind,
        model: m.model.clone(),
    })
}

/// Carries out an effect; what comes of it returns as [`DiffMsg`] through `out`.
pub(super) fn run(e: DiffEffect, svc: &Services, out: Outbox<DiffMsg>) {
    match e {
        DiffEffect::Diff { seq, a, b, cancel } => {
            // Without a model the labels come from similarity alone, as `diff --no-model`.
            let model = built(svc).ok();
            let embedder = svc.memory.as_ref().ok().and_then(|m| m.embedder().cloned());
            let engine = factory::diff_engine(
                &svc.cfg,
                &svc.prompts,
                model.as_ref(),
                svc.store.clone(),
                embedder,
            );
            tokio::spawn(async move {
                let progress = {
                    let out = out.clone();
                    move |p: DiffProgress| {
                        let DiffProgress::Judging { done, total } = p;
                        out.send(DiffMsg::Progress { seq, done, total });
                    }
                };
                let result = engine
                    .diff(a, b, &progress, &cancel)
                    .await
                    .map(Box::new)
                    .map_err(failure);
                out.send(DiffMsg::Diffed { seq, result });
            });
        }
        DiffEffect::Merge { seq, a, b, cancel } => {
            let model = match built(svc) {
                Ok(m) => m,
                Err(error) => {
                    return out.send(DiffMsg::Merged {
                        seq,
                        result: Err(Failure {
                            error: format!("a merge needs a model: {error}"),
                            run: None,
                            cancelled: false,
                        }),
                    });
                }
            };
            let merger = factory::merger(&svc.cfg, &svc.prompts, &model, svc.store.clone());
            tokio::spawn(async move {
                let req = MergeRequest {
                    nodes: vec![a, b],
                    focus: None,
                    meta: Default::default(),
                };
                let result = merger
                    .merge(req, &cancel)
                    .await
                    .map(Box::new)
                    .map_err(failure);
                out.send(DiffMsg::Merged { seq, result });
            });
        }
    }
}
