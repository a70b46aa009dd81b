//! Running a verification: one model call per step with the steps before it as context,
//! then the chain's score, and the `verify_step` nodes and `verify` run that store it.

use std::time::Instant;

use chrono::Utc;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::scoring::{chain_score, detect_patterns, first_error, parse_step};
use super::{
    ChainVerification, StepInput, StepJudgement, Verdict, Verifier, VerifyError, VerifyMetadata,
    VerifyOutcome, VerifyRequest,
};
use crate::engines::got::call_model;
use crate::store::{
    Edge, EdgeType, Node, NodeId, NodeType, Run, RunId, RunKind, RunStatus, Session, SessionSource,
    Store,
};

/// The steps of a thinking node (its ThinkGraph steps), as a chain to verify.
pub fn node_steps(store: &Store, node: NodeId) -> Result<(Node, Vec<StepInput>), VerifyError> {
    let n = store.node(node)?.ok_or(VerifyError::NoNode(node))?;
    let steps: Vec<StepInput> = crate::engines::thinkgraph::Step::of(&n)
        .into_iter()
        .filter(|s| !s.text.trim().is_empty())
        .map(|s| StepInput {
            content: s.text.trim().to_string(),
            kind: Some(s.kind.as_str().to_string()),
        })
        .collect();
    if steps.is_empty() {
        return Err(VerifyError::NoNodeSteps(node));
    }
    Ok((n, steps))
}

impl Verifier {
    /// Judges each step with the question and all preceding steps as context, one call
    /// per step, then scores the chain and stores a `verify_step` node per step.
    pub async fn verify(
        &self,
        req: VerifyRequest,
        cancel: &CancellationToken,
    ) -> Result<VerifyOutcome, VerifyError> {
        if req.steps.is_empty() {
            return Err(VerifyError::NoSteps);
        }
        if req.steps.len() > self.config.max_steps {
            return Err(VerifyError::TooManySteps(
                req.steps.len(),
                self.config.max_steps,
            ));
        }
        let threshold = req.threshold.unwrap_or(self.config.correctness_threshold);
        if !(0.0..=1.0).contains(&threshold) {
            return Err(VerifyError::Threshold(threshold));
        }
        let started = Instant::now();
        let mut judged = Vec::new();
        for (i, step) in req.steps.iter().enumerate() {
            let mut user = String::new();
            if let Some(q) = &req.original_query {
                user.push_str(&format!("Question:\n{q}\n\n"));
            }
            if i == 0 {
                user.push_str("Preceding steps: none.\n\n");
            } else {
                user.push_str("Preceding steps:\n");
                for (j, s) in req.steps[..i].iter().enumerate() {
                    user.push_str(&format!("Step {}: {}\n", j + 1, s.content));
                }
                user.push('\n');
            }
            user.push_str(&format!(
                "Step to verify (step {}{}):\n{}",
                i + 1,
                step.kind
                    .as_deref()
                    .map(|k| format!(", {k}"))
                    .unwrap_or_default(),
                step.content
            ));
            let reply = call_model(
                &*self.provider,
                &self.call,
                &self.prompt,
                user,
                StepJudgement::schema(),
                cancel,
            )
            .await?;
            judged.push(parse_step(i, &reply.text));
        }
        let overall = chain_score(&judged, &self.config);
        let first = first_error(&judged);
        let patterns = detect_patterns(&judged, &self.config);
        let unreadable: Vec<usize> = judged
            .iter()
            .filter(|s| s.unreadable.is_some())
            .map(|s| s.step_index + 1)
            .collect();
        // A step whose answer could not be read is no judgement: the chain is not valid.
        let is_valid = overall >= threshold && unreadable.is_empty();
        let counts = |v: Verdict| {
            judged
                .iter()
                .filter(|s| s.verdict == v && s.unreadable.is_none())
                .count()
        };
        let unread = if unreadable.is_empty() {
            String::new()
        } else {
            format!(
                "not valid: the verifier's answer on step(s) {} could not be read; ",
                unreadable
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let summary = format!(
            "{unread}{} of {} steps correct, {} incorrect, {} neutral, {} uncertain; score {:.3} {} threshold {:.2}{}{}",
            counts(Verdict::Correct),
            judged.len(),
            counts(Verdict::Incorrect),
            counts(Verdict::Neutral),
            counts(Verdict::Uncertain),
            overall,
            if is_valid { "≥" } else { "<" },
            threshold,
            if first >= 0 {
                format!("; first error at step {first}")
            } else {
                String::new()
            },
            if patterns.is_empty() {
                String::new()
            } else {
                format!(
                    "; patterns: {}",
                    patterns
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        );
        let chain = ChainVerification {
            overall_score: overall,
            is_valid,
            first_error_at: first,
            summary,
            steps: judged,
            patterns,
            metadata: VerifyMetadata {
                verification_model: self.call.model.clone(),
                duration_ms: started.elapsed().as_millis() as u64,
                verified_at: Utc::now(),
            },
        };
        self.persist(req, threshold, chain).await
    }

    /// Stores a `verify_step` node per step (in the request's session, else the source
    /// node's, else a new one) and the `verify` run, in one commit.
    async fn persist(
        &self,
        req: VerifyRequest,
        threshold: f64,
        chain: ChainVerification,
    ) -> Result<VerifyOutcome, VerifyError> {
        let run_id = RunId::new();
        let provider = self.provider.name().to_string();
        let model = self.call.model.clone();
        let stored = chain.clone();
        let (session, nodes) = self
            .store
            .write_async(move |w| {
                let chain = stored;
                let source_session = match req.source {
                    Some(n) => w.node(n)?.map(|n| n.session),
                    None => None,
                };
                let mut nodes = Vec::new();
                let session = match req.session.or(source_session) {
                    Some(s) => s,
                    None => {
                        let title = req.original_query.as_deref().unwrap_or("step verification");
                        let mut s = Session::new(
                            crate::engines::orchestrator::title_from(title),
                            SessionSource::Glassbox,
                        );
                        s.provider = Some(provider);
                        s.model = Some(model.clone());
                        w.put_session(&s)?;
                        s.id
                    }
                };
                for (input, v) in req.steps.iter().zip(&chain.steps) {
                    let mut node = Node::new(session, NodeType::VerifyStep, input.content.clone());
                    node.confidence = Some(v.confidence);
                    node.model = Some(model.clone());
                    let meta = [
                        ("run", json!(run_id)),
                        ("stepIndex", json!(v.step_index)),
                        ("stepType", json!(input.kind)),
                        ("verdict", json!(v.verdict)),
                        ("confidence", json!(v.confidence)),
                        ("explanation", json!(v.explanation)),
                        ("issues", json!(v.issues)),
                        ("suggestedCorrection", json!(v.suggested_correction)),
                        ("unreadable", json!(v.unreadable)),
                        ("source", json!(req.source)),
                    ];
                    node.meta = meta.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                    w.put_node(&node)?;
                    if let Some(src) = req.source {
                        w.put_edge(&Edge::new(node.id, EdgeType::Refines, src))?;
                    }
                    if let Some(&prev) = nodes.last() {
                        w.put_edge(&Edge::new(node.id, EdgeType::Influences, prev))?;
                    }
                    nodes.push(node.id);
                }
                w.put_run(&Run {
                    id: run_id,
                    session,
                    kind: RunKind::Verify,
                    params: json!({
                        "steps": req.steps,
                        "thinkingNodeId": req.source,
                        "originalQuery": req.original_query,
                        "correctnessThreshold": threshold,
                    }),
                    summary: json!({
                        "overallScore": chain.overall_score,
                        "isValid": chain.is_valid,
                        "firstErrorAt": chain.first_error_at,
                        "summary": chain.summary,
                        "patterns": chain.patterns,
                        "metadata": chain.metadata,
                        "nodeIds": nodes,
                    }),
                    status: RunStatus::Done,
                    created_at: chain.metadata.verified_at,
                    finished_at: Some(Utc::now()),
                })?;
                Ok((session, nodes))
            })
            .await?;
        Ok(VerifyOutcome {
            chain,
            session,
            run: run_id,
            nodes,
        })
    }
}
