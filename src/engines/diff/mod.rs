//! Branch diff and provenance-tracked merge. Two lines of reasoning (thinking nodes, fork
//! branches, pipeline layers, imported assistant turns) are cut into steps (`steps`),
//! aligned in order by similarity — embedding cosine when an embedder is loaded, word
//! overlap otherwise — with Needleman–Wunsch (`align`), and every aligned pair is labelled
//! `same`, `differs` or `contradicts` by the model, cached per pair (`judge`). A merge
//! (`merge`) turns two or more lines into claims that each name the steps they came from.

mod align;
mod judge;
mod merge;
mod steps;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::engines::llm::LlmError;
use crate::engines::memory::embed::Embedder;
use crate::store::{Node, NodeId, NodeType, SessionId, Store, StoreError};

pub use align::{Aligned, align, lexical_similarity, normalized, vector_similarity};
pub use judge::{Judge, PairAnswer, PairVerdict, cache_key};
pub use merge::{
    Claim, ClaimDraft, MergeAnswer, MergeRequest, MergeSource, Merged, Merger, NEW, Provenance,
    claims_of, merge_schema, refs_of,
};
pub use steps::{DiffStep, steps_of};

/// The key of a merge node's meta under which its claims are stored.
pub const CLAIMS_KEY: &str = "claims";

/// Sampling and length of one model call.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallParams {
    pub temperature: f32,
    pub max_tokens: u32,
}

/// `[diff]`: how steps pair up and how the model is asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiffParams {
    /// Embedding cosine below which two steps are never paired.
    pub min_similarity: f64,
    /// Word-overlap cosine below which two steps are never paired (no embedder).
    pub min_overlap: f64,
    /// At or above this similarity a pair is `same` without asking the model.
    pub same_similarity: f64,
    /// What leaving a step unpaired costs the alignment (0: pair whatever clears the floor).
    pub gap_penalty: f64,
    /// Pairs the model judges per diff at most; the rest are labelled by similarity.
    pub max_judged: usize,
    /// Longest step text given to the model or the embedder, in characters.
    pub step_chars: usize,
    /// Claims a merge keeps at most.
    pub max_claims: usize,
    pub judge: CallParams,
    pub merge: CallParams,
}

impl Default for DiffParams {
    fn default() -> Self {
        Self {
            min_similarity: 0.45,
            min_overlap: 0.2,
            same_similarity: 0.95,
            gap_penalty: 0.0,
            max_judged: 24,
            step_chars: 600,
            max_claims: 8,
            judge: CallParams {
                temperature: 0.0,
                max_tokens: 128,
            },
            merge: CallParams {
                temperature: 0.0,
                max_tokens: 768,
            },
        }
    }
}

/// Diff and merge failures, each fit for one line.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("node {0} not found")]
    NotFound(String),
    #[error("node {0} holds no text to compare")]
    Empty(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the model call failed: {0}")]
    Model(LlmError),
    #[error("the model's answer could not be read: {0}")]
    Malformed(String),
    #[error("cancelled")]
    Cancelled,
}

/// How an aligned row is labelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Same,
    Differs,
    Contradicts,
    OnlyA,
    OnlyB,
}

impl Label {
    pub fn as_str(self) -> &'static str {
        match self {
            Label::Same => "same",
            Label::Differs => "differs",
            Label::Contradicts => "contradicts",
            Label::OnlyA => "only_a",
            Label::OnlyB => "only_b",
        }
    }

    /// Whether the row is a difference (everything but `same`).
    pub fn is_difference(self) -> bool {
        self != Label::Same
    }

    fn parse(s: &str) -> Option<Label> {
        [Label::Same, Label::Differs, Label::Contradicts]
            .into_iter()
            .find(|l| l.as_str() == s)
    }
}

/// Who gave a row its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelSource {
    /// The texts are the same once whitespace and case are set aside.
    Identical,
    /// The similarity decided (at or above `same_similarity`, or no model was asked).
    Similarity,
    /// The model, just now.
    Model,
    /// The model, earlier (the store's cache).
    Cache,
    /// The alignment left the step unpaired.
    Alignment,
}

/// One row of a diff: a pair of steps, or one side's step alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub label: Label,
    /// Step indices (from 0) on each side.
    pub a: Option<u32>,
    pub b: Option<u32>,
    /// Similarity of a pair, rounded to 3 places.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    pub by: LabelSource,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One side of a diff.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub node: NodeId,
    pub session: SessionId,
    pub kind: NodeType,
    pub steps: Vec<DiffStep>,
}

/// A whole diff.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    pub a: Side,
    pub b: Side,
    /// `lexical`, or the embedder's id (`all-MiniLM-L6-v2/384`).
    pub measure: String,
    /// The model that judged pairs, when one was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    pub pairs: Vec<Pair>,
}

impl Diff {
    /// Rows per label, in [`Label`] order.
    pub fn counts(&self) -> Vec<(Label, usize)> {
        [
            Label::Same,
            Label::Differs,
            Label::Contradicts,
            Label::OnlyA,
            Label::OnlyB,
        ]
        .into_iter()
        .map(|l| (l, self.pairs.iter().filter(|p| p.label == l).count()))
        .collect()
    }

    /// The non-zero counts, as `3 same · 1 only_b`.
    pub fn summary(&self) -> String {
        self.counts()
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(l, n)| format!("{n} {}", l.as_str()))
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// Progress of a diff, for a spinner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffProgress {
    /// The model is judging pair `done + 1` of `total`.
    Judging { done: usize, total: usize },
}

/// The diff engine.
#[derive(Clone)]
pub struct DiffEngine {
    pub store: Store,
    /// The model that labels pairs; `None` labels by similarity alone.
    pub judge: Option<Judge>,
    pub embedder: Option<Arc<dyn Embedder>>,
    pub params: DiffParams,
}

/// Reads `ids` from the store, in order; a missing one is [`DiffError::NotFound`].
pub(crate) async fn load_nodes(store: &Store, ids: Vec<NodeId>) -> Result<Vec<Node>, DiffError> {
    store
        .run_blocking(move |s| {
            ids.iter()
                .map(|id| {
                    s.node(*id)
                        .map_err(DiffError::from)?
                        .ok_or_else(|| DiffError::NotFound(id.to_string()))
                })
                .collect::<Result<Vec<_>, DiffError>>()
        })
        .await
}

impl DiffEngine {
    /// Aligns the steps of `a` and `b` and labels every row.
    pub async fn diff(
        &self,
        a: NodeId,
        b: NodeId,
        progress: &(dyn Fn(DiffProgress) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Diff, DiffError> {
        if a == b {
            return Err(DiffError::Invalid(
                "a diff needs two different nodes".into(),
            ));
        }
        let nodes = load_nodes(&self.store, vec![a, b]).await?;
        let side = |n: &Node| -> Result<Side, DiffError> {
            let steps = steps_of(n);
            if steps.is_empty() {
                return Err(DiffError::Empty(n.id.to_string()));
            }
            Ok(Side {
                node: n.id,
                session: n.session,
                kind: n.kind,
                steps,
            })
        };
        let (sa, sb) = (side(&nodes[0])?, side(&nodes[1])?);
        let (sim, measure) = self.similarity(&sa.steps, &sb.steps).await;
        let floor = if measure == LEXICAL {
            self.params.min_overlap
        } else {
            self.params.min_similarity
        };
        let rows = align(&sim, floor, self.params.gap_penalty);
        let mut pairs = Vec::with_capacity(rows.len());
        let mut to_judge = Vec::new();
        for (i, j) in rows {
            let row = match (i, j) {
                (Some(i), Some(j)) => {
                    let s = sim[i][j];
                    let (label, by) =
                        if normalized(&sa.steps[i].text) == normalized(&sb.steps[j].text) {
                            (Label::Same, LabelSource::Identical)
                        } else if s >= self.params.same_similarity {
                            (Label::Same, LabelSource::Similarity)
                        } else {
                            if self.judge.is_some() && to_judge.len() < self.params.max_judged {
                                to_judge.push(pairs.len());
                            }
                            (Label::Differs, LabelSource::Similarity)
                        };
                    Pair {
                        label,
                        a: Some(sa.steps[i].index),
                        b: Some(sb.steps[j].index),
                        similarity: Some((s * 1000.0).round() / 1000.0),
                        by,
                        reason: None,
                    }
                }
                (i, j) => Pair {
                    label: if i.is_some() {
                        Label::OnlyA
                    } else {
                        Label::OnlyB
                    },
                    a: i.map(|i| sa.steps[i].index),
                    b: j.map(|j| sb.steps[j].index),
                    similarity: None,
                    by: LabelSource::Alignment,
                    reason: None,
                },
            };
            pairs.push(row);
        }
        if let Some(judge) = &self.judge {
            let total = to_judge.len();
            for (done, &k) in to_judge.iter().enumerate() {
                if cancel.is_cancelled() {
                    return Err(DiffError::Cancelled);
                }
                progress(DiffProgress::Judging { done, total });
                let p = &pairs[k];
                let (ta, tb) = (
                    clip(
                        &sa.steps[p.a.unwrap_or(0) as usize].text,
                        self.params.step_chars,
                    ),
                    clip(
                        &sb.steps[p.b.unwrap_or(0) as usize].text,
                        self.params.step_chars,
                    ),
                );
                let (j, cached) = match judge.judge(&self.store, &ta, &tb, cancel).await {
                    Err(DiffError::Model(LlmError::Cancelled)) => return Err(DiffError::Cancelled),
                    other => other?,
                };
                let p = &mut pairs[k];
                p.label = Label::parse(&j.label).unwrap_or(Label::Differs);
                p.by = if cached {
                    LabelSource::Cache
                } else {
                    LabelSource::Model
                };
                p.reason = (!j.reason.is_empty()).then_some(j.reason);
            }
        }
        Ok(Diff {
            a: sa,
            b: sb,
            measure,
            judge: self.judge.as_ref().map(|j| j.call.model.clone()),
            pairs,
        })
    }

    /// The similarity matrix of the two step lists and what measured it: the embedder's
    /// cosine, or word overlap when there is no embedder or it fails.
    async fn similarity(&self, a: &[DiffStep], b: &[DiffStep]) -> (Vec<Vec<f64>>, String) {
        if let Some(e) = self.embedder.clone() {
            let chars = self.params.step_chars;
            let texts: Vec<String> = a.iter().chain(b).map(|s| clip(&s.text, chars)).collect();
            let id = e.id().to_string();
            let out = tokio::task::spawn_blocking(move || {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                e.embed(&refs)
            })
            .await;
            if let Ok(Ok(v)) = out
                && v.len() == a.len() + b.len()
            {
                let (va, vb) = v.split_at(a.len());
                let m = va
                    .iter()
                    .map(|x| vb.iter().map(|y| vector_similarity(x, y)).collect())
                    .collect();
                return (m, id);
            }
        }
        let m = a
            .iter()
            .map(|x| {
                b.iter()
                    .map(|y| lexical_similarity(&x.text, &y.text))
                    .collect()
            })
            .collect();
        (m, LEXICAL.to_string())
    }
}

/// The measure named when steps were compared by word overlap.
pub const LEXICAL: &str = "lexical";

fn clip(t: &str, chars: usize) -> String {
    t.chars().take(chars).collect()
}
