//! Step labels of a session's stored verifications, with human checkpoints overruling the
//! model: PRM800K and ProcessBench records.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::Verdict;
use crate::store::{Node, NodeId, NodeType, Run, RunId, RunKind, SessionId, Store, StoreError};

/// One verified chain of a session as stored: the question, the steps with the model's
/// rating and any human rating.
struct LabelledChain {
    run: RunId,
    created_at: DateTime<Utc>,
    problem: String,
    /// The model that wrote the steps, when they came from a stored node.
    generator: Option<String>,
    /// The verifier's chain score.
    score: Option<f64>,
    duration_ms: Option<u64>,
    steps: Vec<LabelledStep>,
}

struct LabelledStep {
    text: String,
    /// The verifier's rating (−1 / 0 / 1).
    model: Option<i64>,
    /// The newest human checkpoint's rating.
    human: Option<i64>,
    /// The newest human checkpoint's correction.
    correction: Option<String>,
}

impl LabelledStep {
    /// The label a step carries: a human's rating wins over the model's.
    fn rating(&self) -> Option<i64> {
        self.human.or(self.model)
    }
}

/// Rating of a human checkpoint verdict: verified/correct 1, disagree/incorrect −1,
/// questionable/neutral/uncertain 0.
fn human_rating(verdict: &str) -> Option<i64> {
    match verdict.trim().to_ascii_lowercase().as_str() {
        "verified" | "correct" | "agree" => Some(1),
        "disagree" | "incorrect" | "wrong" => Some(-1),
        "questionable" | "neutral" | "uncertain" => Some(0),
        _ => None,
    }
}

/// The newest human checkpoint on `step` (its rating and correction), if any.
fn human_label(
    store: &Store,
    by_id: &BTreeMap<NodeId, &Node>,
    step: NodeId,
) -> Result<Option<(i64, Option<String>)>, StoreError> {
    let mut newest: Option<(&Node, i64)> = None;
    for e in store.edges_to(step, None)? {
        let Some(a) = by_id.get(&e.src) else { continue };
        if a.kind != NodeType::HumanAnnotation {
            continue;
        }
        let Some(r) = a
            .meta
            .get("verdict")
            .and_then(Value::as_str)
            .and_then(human_rating)
        else {
            continue;
        };
        // The edge index is ordered by edge type, not time: a later checkpoint overrules
        // an earlier one whatever its verdict.
        if newest.is_none_or(|(n, _)| (a.created_at, a.id) > (n.created_at, n.id)) {
            newest = Some((a, r));
        }
    }
    Ok(newest.map(|(a, r)| {
        let correction = a
            .meta
            .get("correction")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
            .map(str::to_string);
        (r, correction)
    }))
}

/// Every verification run of a session with at least one stored step, oldest first.
fn labelled_chains(store: &Store, session: SessionId) -> Result<Vec<LabelledChain>, StoreError> {
    let nodes = store.session_nodes(session)?;
    let by_id: BTreeMap<NodeId, &Node> = nodes.iter().map(|n| (n.id, n)).collect();
    let mut runs: Vec<Run> = store
        .session_runs(session)?
        .into_iter()
        .filter(|r| r.kind == RunKind::Verify)
        .collect();
    runs.sort_by_key(|r| (r.created_at, r.id));
    let mut out = Vec::new();
    for run in runs {
        let ids: Vec<NodeId> = run.summary["nodeIds"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
            .unwrap_or_default();
        let mut steps = Vec::new();
        for id in ids {
            let Some(n) = by_id.get(&id) else { continue };
            let model = n
                .meta
                .get("verdict")
                .and_then(Value::as_str)
                .and_then(Verdict::parse)
                .map(Verdict::rating);
            let (human, correction) = match human_label(store, &by_id, id)? {
                Some((r, c)) => (Some(r), c),
                None => (None, None),
            };
            steps.push(LabelledStep {
                text: n.text.clone(),
                model,
                human,
                correction,
            });
        }
        if steps.is_empty() {
            continue;
        }
        let source: Option<NodeId> = run.params["thinkingNodeId"]
            .as_str()
            .and_then(|s| s.parse().ok());
        let source_node = match source {
            Some(id) => match by_id.get(&id) {
                Some(n) => Some((*n).clone()),
                None => store.node(id)?,
            },
            None => None,
        };
        let problem = run.params["originalQuery"]
            .as_str()
            .map(str::to_string)
            .or_else(|| {
                let src = source?;
                // The question a thinking node answered: the query it was made for.
                let query = store
                    .edges_from(src, None)
                    .ok()?
                    .into_iter()
                    .find_map(|e| by_id.get(&e.dst).filter(|n| n.kind == NodeType::Query))
                    .map(|n| n.text.clone());
                query.or_else(|| {
                    nodes
                        .iter()
                        .take_while(|n| n.id != src)
                        .filter(|n| n.kind == NodeType::Query)
                        .last()
                        .map(|n| n.text.clone())
                })
            })
            .unwrap_or_default();
        out.push(LabelledChain {
            run: run.id,
            created_at: run.created_at,
            problem,
            generator: source_node.and_then(|n| n.model),
            score: run.summary["overallScore"].as_f64(),
            duration_ms: run.summary["metadata"]["durationMs"].as_u64(),
            steps,
        });
    }
    Ok(out)
}

/// PRM800K-style step labels of a session's verifications, one record per verified chain
/// (the PRM800K files hold one such record per line). Per step: `completions` holds the
/// step with its `rating` −1 / 0 / 1 — the newest human checkpoint's verdict where there
/// is one (verified 1, questionable 0, disagree −1), else the model's (correct 1,
/// incorrect −1, neutral and uncertain 0) — with `source` saying whose it is and
/// `modelRating` / `humanRating` keeping both; `human_completion` is the human's correction
/// of a step they rated −1; `chosen_completion` is 0, or null where the step was rated −1
/// or replaced by the human completion. `finish_reason` is `found_error` when any step is
/// rated −1, else `solution`.
pub fn prm800k(store: &Store, session: SessionId) -> Result<Value, StoreError> {
    let chains = labelled_chains(store, session)?;
    let records: Vec<Value> = chains
        .into_iter()
        .map(|c| {
            let steps: Vec<Value> = c
                .steps
                .iter()
                .map(|s| {
                    let rating = s.rating();
                    let human_completion = match (&s.correction, s.human) {
                        (Some(text), Some(-1)) => json!({
                            "text": text,
                            "rating": null,
                            "source": "human",
                            "flagged": false,
                            "corrected_rating": null,
                        }),
                        _ => Value::Null,
                    };
                    let chosen = if rating == Some(-1) || !human_completion.is_null() {
                        Value::Null
                    } else {
                        json!(0)
                    };
                    json!({
                        "completions": [{
                            "text": s.text,
                            "rating": rating,
                            "flagged": false,
                            "source": if s.human.is_some() { "human" } else { "model" },
                            "modelRating": s.model,
                            "humanRating": s.human,
                        }],
                        "human_completion": human_completion,
                        "chosen_completion": chosen,
                    })
                })
                .collect();
            let finish = if c.steps.iter().any(|s| s.rating() == Some(-1)) {
                "found_error"
            } else {
                "solution"
            };
            json!({
                "labeler": "glassbox",
                "timestamp": c.created_at.format("%Y-%m-%dT%H:%M:%S%.6f").to_string(),
                "generation": null,
                "is_quality_control_question": false,
                "is_initial_screening_question": false,
                "question": {
                    "problem": c.problem,
                    "pre_generated_steps": c.steps.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(),
                    "pre_generated_verifier_score": c.score,
                },
                "label": {
                    "steps": steps,
                    "total_time": c.duration_ms,
                    "finish_reason": finish,
                },
                "run": c.run,
            })
        })
        .collect();
    Ok(Value::Array(records))
}

/// ProcessBench-style labels of a session's verifications, one record per verified chain:
/// `{id, generator, problem, steps, label}` with `label` the index of the first step rated
/// wrong (a human checkpoint's verdict wins over the model's, as in [`prm800k`]), −1 if
/// none. `id` is the verification run, `generator` the model that wrote the steps when
/// they came from a stored node (else null).
pub fn processbench(store: &Store, session: SessionId) -> Result<Value, StoreError> {
    let chains = labelled_chains(store, session)?;
    let records: Vec<Value> = chains
        .into_iter()
        .map(|c| {
            let label = c
                .steps
                .iter()
                .position(|s| s.rating() == Some(-1))
                .map_or(-1, |i| i as i64);
            json!({
                "id": c.run,
                "generator": c.generator,
                "problem": c.problem,
                "steps": c.steps.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(),
                "label": label,
            })
        })
        .collect();
    Ok(Value::Array(records))
}
