//! Debate: rounds in which every branch answers the others' latest positions, then a
//! consensus synthesis when all held their ground confidently enough.

use std::collections::BTreeMap;

use futures::future::join_all;
use serde_json::{Map, Value, json};

use super::json::{
    DebateAnswer, Shape, UNSTATED_CONFIDENCE, bool_of, confidence_of, field, list_of,
    parse_conclusion, text_of,
};
use super::{
    Conclusion, DebateEntry, DebateResult, DebateRound, Events, ForkEngine, ForkError, ForkEvent,
    ForkRequest, ForkStyle, Lane, MAX_DEBATE_ROUNDS, MIN_BRANCHES, Outcome, Position, Spec, Stance,
};
use crate::store::{Edge, EdgeType, Node, NodeId, NodeStatus, NodeType, RunId, RunKind};

impl ForkEngine {
    /// A fork followed by `rounds` debate rounds (branches concurrently, rounds in order),
    /// then a consensus synthesis when every branch held its position in the last round
    /// with confidence at or above the threshold. Stored as a `debate` run.
    pub async fn debate(
        &self,
        req: ForkRequest,
        rounds: u32,
        events: &Events,
    ) -> Result<Outcome<DebateResult>, ForkError> {
        if rounds == 0 || rounds > MAX_DEBATE_ROUNDS {
            return Err(ForkError::Invalid(format!(
                "a debate needs 1 to {MAX_DEBATE_ROUNDS} rounds, got {rounds}"
            )));
        }
        let spec = self.new_query_spec(req).await?;
        let run = self
            .start_run(&spec, RunKind::Debate, json!({"rounds": rounds}))
            .await?;
        let _ = events.send(ForkEvent::Started {
            session: spec.session,
            run: run.id,
            anchor: spec.anchor,
        });
        let initial = self.branches_and_compare(&spec, run.id, events).await?;
        let mut nodes = vec![spec.anchor];
        nodes.extend(initial.branches.iter().filter_map(|b| b.node_id));
        let mut total_tokens: u64 = initial.branches.iter().map(|b| b.output_tokens_used).sum();

        // Latest position per debating style: (text, confidence, insights, node).
        let mut latest: BTreeMap<ForkStyle, Stance> = initial
            .branches
            .iter()
            .filter(|b| b.ok())
            .map(|b| {
                (
                    b.style,
                    (
                        b.body.conclusion.clone(),
                        b.body.confidence,
                        b.body.key_insights.clone(),
                        b.node_id,
                    ),
                )
            })
            .collect();
        let mut all_rounds = Vec::new();
        if latest.len() >= MIN_BRANCHES {
            for round in 1..=rounds {
                let snapshot = latest.clone();
                let calls = snapshot.keys().map(|&style| {
                    self.debate_entry(&spec, &snapshot, style, round, rounds, run.id, events)
                });
                let entries = join_all(calls)
                    .await
                    .into_iter()
                    .collect::<Result<Vec<_>, _>>()?;
                for (e, tokens) in &entries {
                    total_tokens += tokens;
                    if let (None, Some(pos)) = (&e.error, latest.get_mut(&e.style)) {
                        pos.0 = e.response.clone();
                        pos.1 = e.confidence;
                        pos.3 = e.node_id;
                    }
                    nodes.extend(e.node_id);
                }
                all_rounds.push(DebateRound {
                    round,
                    entries: entries.into_iter().map(|(e, _)| e).collect(),
                });
                if self.cancel.is_cancelled() {
                    break;
                }
            }
        }
        let final_positions: Vec<Position> = latest
            .iter()
            .map(|(&style, (position, confidence, ..))| Position {
                style,
                position: position.clone(),
                confidence: *confidence,
            })
            .collect();
        let consensus_reached = all_rounds.len() == rounds as usize
            && all_rounds.last().is_some_and(|r| {
                !r.entries.is_empty()
                    && r.entries.iter().all(|e| {
                        e.error.is_none()
                            && !e.position_changed
                            && e.confidence >= self.settings.consensus_threshold
                    })
            });
        let mut result = DebateResult {
            initial_fork: initial,
            rounds: all_rounds,
            final_positions,
            consensus_reached,
            consensus: None,
            consensus_confidence: None,
            consensus_node_id: None,
            consensus_error: None,
            total_rounds: 0,
            total_tokens_used: 0,
        };
        result.total_rounds = result.rounds.len() as u32;
        if consensus_reached {
            let sources: Vec<NodeId> = latest.values().filter_map(|p| p.3).collect();
            let mut user = format!(
                "Question: {}\n\nAfter debate, every branch holds its position with high confidence. Synthesise their consensus.\n\nFinal positions:\n",
                spec.query
            );
            for p in &result.final_positions {
                user.push_str(&format!(
                    "- {} (confidence {:.2}): {}\n",
                    p.style, p.confidence, p.position
                ));
            }
            match self
                .synthesis(&spec, &user, &sources, run.id, "consensus", events)
                .await?
            {
                Ok((c, node, tokens)) => {
                    total_tokens += tokens;
                    result.consensus = Some(c.conclusion);
                    result.consensus_confidence = Some(c.confidence);
                    result.consensus_node_id = Some(node);
                    nodes.push(node);
                }
                Err((e, tokens)) => {
                    total_tokens += tokens;
                    result.consensus_error = Some(e);
                }
            }
        }
        result.total_tokens_used = total_tokens;
        let _ = events.send(ForkEvent::DebateDone {
            consensus_reached,
            consensus: result.consensus.clone(),
        });
        self.finish(run, spec.session, nodes, result).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn debate_entry(
        &self,
        spec: &Spec,
        positions: &BTreeMap<ForkStyle, Stance>,
        style: ForkStyle,
        round: u32,
        rounds: u32,
        run: RunId,
        events: &Events,
    ) -> Result<(DebateEntry, u64), ForkError> {
        let mut user = format!("Question: {}\n\n", spec.query);
        if let Some((text, conf, _, _)) = positions.get(&style) {
            user.push_str(&format!(
                "Your current position ({style}, confidence {conf:.2}):\n{text}\n\n"
            ));
        }
        user.push_str("The other branches' latest positions:\n");
        for (other, (text, conf, insights, _)) in positions.iter().filter(|(s, _)| **s != style) {
            user.push_str(&format!("- {other} (confidence {conf:.2}): {text}\n"));
            if !insights.is_empty() {
                user.push_str(&format!("  key insights: {}\n", insights.join("; ")));
            }
        }
        user.push_str(&format!("\nDebate round {round} of {rounds}."));
        let system = format!(
            "{}\n\n{}",
            self.system_for(style),
            self.prompts.get("debate")
        );
        let lane = Lane::Branch(style);
        let _ = events.send(ForkEvent::LaneStarted { lane, round });
        let out = self
            .structured(
                lane,
                system,
                user,
                Shape::Debate,
                self.settings.plan,
                events,
            )
            .await;
        let previous_conf = positions.get(&style).map(|p| p.1).unwrap_or(0.0);
        let (mut entry, tokens) = match out.and_then(|(m, t)| {
            parse_debate(&m, style, round)
                .map(|e| (e, t))
                .map_err(|e| (e, t))
        }) {
            Ok((e, t)) => (e, t),
            Err((error, t)) => (
                DebateEntry {
                    style,
                    round,
                    response: String::new(),
                    confidence: previous_conf,
                    position_changed: false,
                    counterpoints: Vec::new(),
                    concessions: Vec::new(),
                    error: Some(error),
                    node_id: None,
                },
                t,
            ),
        };
        let mut node = Node::new(
            spec.session,
            NodeType::ForkBranch,
            entry
                .error
                .clone()
                .unwrap_or_else(|| entry.response.clone()),
        );
        node.model = Some(self.settings.model.clone());
        node.confidence = Some(entry.confidence);
        if let Some(e) = &entry.error {
            node.status = NodeStatus::Failed { error: e.clone() };
        }
        node.meta.insert("round".into(), json!(round));
        node.meta.insert("style".into(), json!(style));
        node.meta.insert("run".into(), json!(run));
        node.meta
            .insert("positionChanged".into(), json!(entry.position_changed));
        node.meta
            .insert("counterpoints".into(), json!(entry.counterpoints));
        node.meta
            .insert("concessions".into(), json!(entry.concessions));
        let prev = positions.get(&style).and_then(|p| p.3);
        entry.node_id = Some(node.id);
        self.store
            .write_async(move |w| {
                w.put_node(&node)?;
                if let Some(prev) = prev {
                    w.put_edge(&Edge::new(node.id, EdgeType::Refines, prev))?;
                }
                Ok(())
            })
            .await?;
        let _ = events.send(ForkEvent::DebateEntryDone(entry.clone()));
        Ok((entry, tokens))
    }

    /// A structured synthesis stored as a `synthesis` node that `aggregates` `sources`.
    /// Outer error: store; inner: the model's failure with the tokens spent.
    pub(super) async fn synthesis(
        &self,
        spec: &Spec,
        user: &str,
        sources: &[NodeId],
        run: RunId,
        purpose: &str,
        events: &Events,
    ) -> Result<Result<(Conclusion, NodeId, u64), (String, u64)>, ForkError> {
        let lane = Lane::Synthesis;
        let _ = events.send(ForkEvent::LaneStarted { lane, round: 0 });
        let out = self
            .structured(
                lane,
                self.prompts.get("merge").to_string(),
                user.to_string(),
                Shape::Conclusion,
                self.settings.plan,
                events,
            )
            .await;
        let (c, tokens) =
            match out.and_then(|(m, t)| parse_conclusion(&m).map(|c| (c, t)).map_err(|e| (e, t))) {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
        let mut node = Node::new(spec.session, NodeType::Synthesis, c.conclusion.clone());
        node.model = Some(self.settings.model.clone());
        node.confidence = Some(c.confidence);
        node.meta.insert("purpose".into(), json!(purpose));
        node.meta.insert("run".into(), json!(run));
        node.meta
            .insert("keyInsights".into(), json!(c.key_insights));
        node.meta.insert("risks".into(), json!(c.risks));
        node.meta
            .insert("opportunities".into(), json!(c.opportunities));
        node.meta.insert("assumptions".into(), json!(c.assumptions));
        let id = node.id;
        let sources = sources.to_vec();
        self.store
            .write_async(move |w| {
                w.put_node(&node)?;
                for s in sources {
                    w.put_edge(&Edge::new(node.id, EdgeType::Aggregates, s))?;
                }
                Ok(())
            })
            .await?;
        Ok(Ok((c, id, tokens)))
    }
}

pub(super) fn parse_debate(
    m: &Map<String, Value>,
    style: ForkStyle,
    round: u32,
) -> Result<DebateEntry, String> {
    let a = read_debate(m)?;
    Ok(DebateEntry {
        style,
        round,
        response: a.response,
        confidence: a.confidence,
        position_changed: a.position_changed,
        counterpoints: a.counterpoints,
        concessions: a.concessions,
        error: None,
        node_id: None,
    })
}

/// A [`DebateAnswer`] from the object a model sent, tolerant of the names and forms models
/// use instead of the schema's.
fn read_debate(m: &Map<String, Value>) -> Result<DebateAnswer, String> {
    let response = text_of(field(m, &["response", "position", "conclusion"]));
    if response.is_empty() {
        return Err("the model's debate answer has no response".into());
    }
    Ok(DebateAnswer {
        response,
        confidence: confidence_of(field(m, &["confidence"])).unwrap_or(UNSTATED_CONFIDENCE),
        position_changed: bool_of(field(m, &["positionChanged", "position_changed"])),
        counterpoints: list_of(field(
            m,
            &["counterpoints", "keyCounterpoints", "key_counterpoints"],
        )),
        concessions: list_of(field(m, &["concessions"])),
    })
}
