//! Reconciliation, out of band (after ingestion, or `memory reconcile`): decay archives the
//! learnings whose score has faded; pairs of concurrent learnings on overlapping concepts get
//! an NLI judgement from the configured model (cached per unordered pair); a sure
//! contradiction penalises both with paired `LearningContradicted` events.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::extract::LearnError;
use super::{LearnParams, concept_jaccard, decayed};
use crate::engines::got::{CallSettings, json_object};
use crate::engines::llm::{Provider, ToolSpec};
use crate::store::learning::{
    EventSource, Learning, LearningEvent, LearningEventType, NliResult, clock_compare,
    idempotency_key,
};
use crate::store::{MemoryId, Store};

/// An NLI label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NliLabel {
    Entailment,
    Neutral,
    Contradiction,
}

impl NliLabel {
    pub fn as_str(self) -> &'static str {
        match self {
            NliLabel::Entailment => "entailment",
            NliLabel::Neutral => "neutral",
            NliLabel::Contradiction => "contradiction",
        }
    }
}

/// The NLI judge's structured answer (`record_nli`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NliAnswer {
    pub label: NliLabel,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
}

impl NliAnswer {
    pub fn schema() -> ToolSpec {
        ToolSpec::of::<Self>("record_nli", "Record the judgement.")
    }
}

/// What a reconcile did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReconcileReport {
    /// Live learnings looked at.
    pub learnings: u64,
    /// Pairs of concurrent learnings on overlapping concepts.
    pub candidate_pairs: u64,
    /// Pairs skipped because one learning causally follows the other.
    pub sequential_pairs: u64,
    /// NLI judgements asked of the model now, and taken from the cache.
    pub judged: u64,
    pub cached: u64,
    /// Pairs left for the next reconcile (over `nli_max_pairs`).
    pub deferred: u64,
    pub contradictions: u64,
    pub archived: u64,
    pub events_appended: u64,
    pub failures: Vec<String>,
}

/// Runs reconciliation with one model.
pub struct Reconciler {
    pub store: Store,
    pub provider: Arc<dyn Provider>,
    pub call: CallSettings,
    /// The `memory/nli` prompt.
    pub prompt: String,
    pub params: LearnParams,
}

/// The candidate pairs (lower id first) of live learnings whose concepts overlap at least
/// `threshold`.
pub fn candidate_pairs(live: &[Learning], threshold: f64) -> Vec<(usize, usize)> {
    let mut by_concept: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, l) in live.iter().enumerate() {
        for c in &l.concepts {
            by_concept.entry(c.as_str()).or_default().push(i);
        }
    }
    let mut pairs = BTreeSet::new();
    for members in by_concept.values() {
        for (x, &i) in members.iter().enumerate() {
            for &j in &members[x + 1..] {
                let (a, b) = if live[i].id < live[j].id {
                    (i, j)
                } else {
                    (j, i)
                };
                pairs.insert((a, b));
            }
        }
    }
    pairs
        .into_iter()
        .filter(|(a, b)| concept_jaccard(&live[*a].concepts, &live[*b].concepts) >= threshold)
        .collect()
}

impl Reconciler {
    /// Decay, then contradictions.
    pub async fn reconcile(
        &self,
        cancel: &CancellationToken,
    ) -> Result<ReconcileReport, LearnError> {
        let mut report = ReconcileReport::default();
        let store = self.store.clone();
        let p = self.params.clone();
        let (archived, live) = self
            .store
            .run_blocking(move |_| -> Result<_, LearnError> {
                let now = Utc::now();
                let mut archived = 0;
                let mut live = Vec::new();
                for l in store.learnings()?.into_iter().filter(Learning::is_live) {
                    if decayed(&l, now, p.decay_half_life_days) < p.archive_below {
                        let key = format!("decay:{}:{}", l.id, l.last_event_id);
                        archived +=
                            u64::from(store.write(|w| w.archive_learning(l.id, "decayed", &key))?);
                    } else {
                        live.push(l);
                    }
                }
                Ok((archived, live))
            })
            .await?;
        report.archived = archived;
        report.events_appended += archived;
        report.learnings = live.len() as u64;
        for (a, b) in candidate_pairs(&live, self.params.contradiction_concepts) {
            let (la, lb) = (&live[a], &live[b]);
            if matches!(
                clock_compare(&la.vector_clock, &lb.vector_clock),
                Some(std::cmp::Ordering::Less | std::cmp::Ordering::Greater)
            ) {
                report.sequential_pairs += 1;
                continue;
            }
            report.candidate_pairs += 1;
            if la.contradicted_with.contains(&lb.id) {
                report.cached += 1;
                continue;
            }
            // A judgement by another model is asked again of this one.
            let cached = self
                .store
                .nli(la.id, lb.id)?
                .filter(|r| r.model_version == self.call.model);
            let judged = match cached {
                Some(r) => {
                    report.cached += 1;
                    r
                }
                None if report.judged as usize >= self.params.nli_max_pairs => {
                    report.deferred += 1;
                    continue;
                }
                None => match self.judge(la, lb, cancel).await {
                    Ok(r) => {
                        report.judged += 1;
                        let (x, y, rr) = (la.id, lb.id, r.clone());
                        self.store.write(|w| w.put_nli(x, y, &rr))?;
                        r
                    }
                    Err(LearnError::Model(crate::engines::llm::LlmError::Cancelled)) => {
                        break;
                    }
                    Err(e) => {
                        report
                            .failures
                            .push(format!("{} / {}: {e}", la.id.short(), lb.id.short()));
                        continue;
                    }
                },
            };
            if judged.label == NliLabel::Contradiction.as_str()
                && judged.confidence >= self.params.contradiction_confidence
            {
                let n = self.contradict(la, lb, &judged)?;
                report.contradictions += 1;
                report.events_appended += n;
            }
        }
        Ok(report)
    }

    async fn judge(
        &self,
        a: &Learning,
        b: &Learning,
        cancel: &CancellationToken,
    ) -> Result<NliResult, LearnError> {
        let user = format!(
            "Statement 1: {}\nStatement 2: {}",
            a.content.trim(),
            b.content.trim()
        );
        let model = self.call.model.clone();
        super::call_twice(
            self.provider.as_ref(),
            &self.call,
            &self.prompt,
            &user,
            &NliAnswer::schema(),
            cancel,
            |raw| {
                let ans = json_object(raw)
                    .and_then(|o| serde_json::from_value::<NliAnswer>(Value::Object(o)).ok())
                    .ok_or_else(|| "the NLI answer could not be read".to_string())?;
                Ok(NliResult {
                    label: ans.label.as_str().to_string(),
                    confidence: ans.confidence.clamp(0.0, 1.0),
                    model_version: model.clone(),
                    updated_at: Utc::now(),
                })
            },
        )
        .await
    }

    /// The paired events; returns how many were new.
    fn contradict(&self, a: &Learning, b: &Learning, r: &NliResult) -> Result<u64, LearnError> {
        let (lo, hi) = if a.id < b.id { (a, b) } else { (b, a) };
        let pair = format!("{}:{}", lo.id, hi.id);
        let mut n = 0;
        let events: Vec<LearningEvent> = [(lo, hi.id), (hi, lo.id)]
            .into_iter()
            .map(|(l, other): (&Learning, MemoryId)| {
                let mut payload = Map::new();
                payload.insert("contradicted_with".into(), json!(other));
                payload.insert(
                    "contradiction_multiplier".into(),
                    json!(self.params.contradiction_multiplier),
                );
                payload.insert("nli_label".into(), json!(r.label));
                payload.insert("confidence".into(), json!(r.confidence));
                payload.insert("model_version".into(), json!(r.model_version));
                LearningEvent::new(
                    LearningEventType::LearningContradicted,
                    l.id,
                    idempotency_key(
                        &l.project_id,
                        "reconcile",
                        &format!("{pair}>{}", l.id),
                        "nli",
                    ),
                    "reconcile",
                    &l.project_id,
                    EventSource::FsReconcile,
                    payload,
                )
            })
            .collect();
        self.store.write(|w| {
            for ev in events {
                n += u64::from(w.append_learning_event(ev)?.new);
            }
            Ok(())
        })?;
        Ok(n)
    }
}
