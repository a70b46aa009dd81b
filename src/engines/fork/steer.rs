//! Steering a finished fork: expand a branch, merge several, challenge one, or refork all
//! with new context; and reading a stored fork back for it.

use std::time::Instant;

use serde_json::{Map, json};

use super::branches::describe_branch;
use super::json::Shape;
use super::{
    BranchResult, Events, ForkEngine, ForkError, ForkEvent, ForkStyle, Guidance, Lane, Outcome,
    Spec, SteerAction, SteerResult,
};
use crate::engines::diff::{DiffError, Judge, MergeRequest, Merger};
use crate::engines::got::CallSettings;
use crate::engines::llm::TurnPlan;
use crate::store::{EdgeType, NodeId, RunId, RunKind, RunStatus, SessionId, Store};

impl ForkEngine {
    /// Steers a finished fork, debate or refork run. Stores a `steer` run; the result
    /// node `refines` (expand, challenge), `aggregates` (merge) or `branches_from` (refork)
    /// what it came from.
    pub async fn steer(
        &self,
        source: RunId,
        action: SteerAction,
        events: &Events,
    ) -> Result<Outcome<SteerResult>, ForkError> {
        let record = self
            .store
            .run_blocking(move |store| load_fork_record(store, source))
            .await?;
        let spec = Spec {
            session: record.session,
            query: record.query.clone(),
            anchor: record.query_node,
            styles: record.styles.clone(),
            guidance: record.guidance.clone(),
            prefix: None,
            new_context: None,
        };
        let max = self.settings.guidance_max_chars;
        let text_len = match &action {
            SteerAction::Expand { direction, .. } => {
                direction.as_deref().map_or(0, |t| t.chars().count())
            }
            SteerAction::Merge { focus_area, .. } => {
                focus_area.as_deref().map_or(0, |t| t.chars().count())
            }
            SteerAction::Challenge { challenge, .. } => challenge.chars().count(),
            SteerAction::Refork { new_context } => new_context.chars().count(),
        };
        if text_len > max {
            return Err(ForkError::Invalid(format!(
                "the steering text is {text_len} characters; the limit is {max}"
            )));
        }
        let run = self
            .start_run(
                &spec,
                RunKind::Steer,
                json!({"sourceRun": source, "steer": action}),
            )
            .await?;
        let _ = events.send(ForkEvent::Started {
            session: spec.session,
            run: run.id,
            anchor: spec.anchor,
        });
        let find = |style: ForkStyle| -> Result<&BranchResult, ForkError> {
            record
                .branches
                .iter()
                .find(|b| b.style == style && b.ok())
                .ok_or_else(|| {
                    ForkError::Invalid(format!("run {source} has no successful {style} branch"))
                })
        };
        let (result, nodes) = match action {
            SteerAction::Expand { style, direction } => {
                let b = find(style)?;
                let mut user = format!(
                    "Question: {}\n\nThe branch to expand:\n{}",
                    spec.query,
                    describe_branch(b)
                );
                if let Some(d) = direction.filter(|d| !d.trim().is_empty()) {
                    user.push_str(&format!("\nDirection from the human: {d}\n"));
                }
                let system = format!(
                    "{}\n\n{}",
                    self.system_for(style),
                    self.prompts.get("expand")
                );
                let branch = self
                    .steered_branch(
                        &spec,
                        style,
                        system,
                        user,
                        self.settings.max_plan,
                        b,
                        "expand",
                        run.id,
                        events,
                    )
                    .await?;
                let nodes = branch.node_id.into_iter().collect();
                (SteerResult::Expand { branch }, nodes)
            }
            SteerAction::Challenge { style, challenge } => {
                if challenge.trim().is_empty() {
                    return Err(ForkError::Invalid(
                        "a challenge needs a counter-argument".into(),
                    ));
                }
                let b = find(style)?;
                let user = format!(
                    "Question: {}\n\nThe branch's conclusion:\n{}\nThe human's counter-argument: {challenge}\n",
                    spec.query,
                    describe_branch(b)
                );
                let system = format!(
                    "{}\n\n{}",
                    self.system_for(style),
                    self.prompts.get("challenge")
                );
                let branch = self
                    .steered_branch(
                        &spec,
                        style,
                        system,
                        user,
                        self.settings.plan,
                        b,
                        "challenge",
                        run.id,
                        events,
                    )
                    .await?;
                let nodes = branch.node_id.into_iter().collect();
                (SteerResult::Challenge { challenge, branch }, nodes)
            }
            SteerAction::Merge { styles, focus_area } => {
                let mut unique: Vec<ForkStyle> = Vec::new();
                for s in styles {
                    if !unique.contains(&s) {
                        unique.push(s);
                    }
                }
                if unique.len() < 2 {
                    return Err(ForkError::Invalid(
                        "merge needs two or more different branches".into(),
                    ));
                }
                let picked = unique
                    .iter()
                    .map(|s| find(*s))
                    .collect::<Result<Vec<_>, _>>()?;
                let nodes: Vec<NodeId> = picked.iter().filter_map(|b| b.node_id).collect();
                let mut meta = Map::new();
                meta.insert("run".into(), json!(run.id));
                meta.insert("styles".into(), json!(unique));
                let _ = events.send(ForkEvent::LaneStarted {
                    lane: Lane::Synthesis,
                    round: 0,
                });
                let req = MergeRequest {
                    nodes,
                    focus: focus_area,
                    meta,
                };
                match self.merger().merge(req, &self.cancel).await {
                    Ok(merged) => {
                        let node = merged.node;
                        (
                            SteerResult::Merge {
                                styles: unique,
                                merged,
                                node_id: node,
                            },
                            vec![node],
                        )
                    }
                    Err(e) => {
                        let err = match e {
                            DiffError::Store(e) => ForkError::Store(e),
                            DiffError::Cancelled
                            | DiffError::Model(crate::engines::llm::LlmError::Cancelled) => {
                                ForkError::Cancelled
                            }
                            e => ForkError::Model(format!("merge failed: {e}")),
                        };
                        self.fail_run(run, &err).await?;
                        return Err(err);
                    }
                }
            }
            SteerAction::Refork { new_context } => {
                if new_context.trim().is_empty() {
                    return Err(ForkError::Invalid("refork needs new context".into()));
                }
                let spec = Spec {
                    new_context: Some(new_context.clone()),
                    ..spec.clone()
                };
                let result = self.branches_and_compare(&spec, run.id, events).await?;
                let nodes = result.branches.iter().filter_map(|b| b.node_id).collect();
                (
                    SteerResult::Refork {
                        new_context,
                        result,
                    },
                    nodes,
                )
            }
        };
        self.finish(run, spec.session, nodes, result).await
    }

    /// The merge engine `steer --merge` shares with `glassbox merge`: this engine's provider
    /// and model, the `[diff]` merge settings and the `diff/merge` prompt.
    fn merger(&self) -> Merger {
        let d = &self.settings.diff;
        let mut call = CallSettings::new(self.settings.model.clone(), d.merge.max_tokens);
        call.temperature = Some(d.merge.temperature);
        call.seed = self.settings.seed;
        Merger {
            store: self.store.clone(),
            model: Judge {
                provider: self.provider.clone(),
                call,
                prompt: self.prompts.get(super::CLAIMS_MERGE).to_string(),
            },
            step_chars: d.step_chars,
            max_claims: d.max_claims,
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn steered_branch(
        &self,
        spec: &Spec,
        style: ForkStyle,
        system: String,
        user: String,
        plan: TurnPlan,
        source: &BranchResult,
        action: &str,
        run: RunId,
        events: &Events,
    ) -> Result<BranchResult, ForkError> {
        let lane = Lane::Branch(style);
        let _ = events.send(ForkEvent::LaneStarted { lane, round: 0 });
        let started = Instant::now();
        let out = self
            .structured(lane, system, user, Shape::Conclusion, plan, events)
            .await;
        let result = self.branch_result(style, out, started);
        let mut meta = Map::new();
        meta.insert("style".into(), json!(style));
        meta.insert("run".into(), json!(run));
        meta.insert("action".into(), json!(action));
        let links: Vec<(EdgeType, NodeId)> = source
            .node_id
            .map(|n| (EdgeType::Refines, n))
            .into_iter()
            .collect();
        let node = self
            .store_branch(spec.session, &result, meta, links)
            .await?;
        let result = BranchResult {
            node_id: Some(node),
            ..result
        };
        let _ = events.send(ForkEvent::BranchDone(result.clone()));
        Ok(result)
    }
}

/// A stored fork as steering sees it.
#[derive(Clone, Debug)]
pub struct ForkRecord {
    pub session: SessionId,
    pub query: String,
    pub query_node: NodeId,
    pub styles: Vec<ForkStyle>,
    pub guidance: Vec<Guidance>,
    pub branches: Vec<BranchResult>,
}

/// Reads the branches of a fork, debate (its initial fork) or steer-refork run.
pub fn load_fork_record(store: &Store, id: RunId) -> Result<ForkRecord, ForkError> {
    let run = store
        .run(id)?
        .ok_or_else(|| ForkError::NotFound(format!("run {id}")))?;
    if !matches!(run.kind, RunKind::Fork | RunKind::Debate | RunKind::Steer) {
        return Err(ForkError::Invalid(format!(
            "run {id} is not a fork, debate or steer run"
        )));
    }
    if run.status == RunStatus::Running {
        return Err(ForkError::Invalid(format!("run {id} has not finished")));
    }
    let s = &run.summary;
    let branches = [
        &s["branches"],
        &s["initialFork"]["branches"],
        &s["result"]["branches"],
    ]
    .into_iter()
    .find(|v| v.is_array())
    .cloned()
    .ok_or_else(|| ForkError::Invalid(format!("run {id} has no branches to steer")))?;
    let branches: Vec<BranchResult> = serde_json::from_value(branches)
        .map_err(|e| ForkError::Invalid(format!("run {id} has unreadable branches: {e}")))?;
    let p = &run.params;
    let query_node = p["queryNode"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ForkError::Invalid(format!("run {id} has no query node")))?;
    Ok(ForkRecord {
        session: run.session,
        query: p["query"].as_str().unwrap_or_default().to_string(),
        query_node,
        styles: serde_json::from_value(p["styles"].clone()).unwrap_or_default(),
        guidance: serde_json::from_value(p["guidance"].clone()).unwrap_or_default(),
        branches,
    })
}
