//! The modes (seed 003 §5): the cortex and the search, then instant, deep (with its
//! self-escalation) or ultra-deep, and the final answer. The flow is the same on a resume:
//! finished layers replay from their nodes, so every decision (the mode, escalation,
//! re-synthesis) is taken again from the same stored answers.

use std::collections::{HashMap, HashSet};

use chrono::Utc;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::artifacts::{
    Artifact, Classification, ConfidenceResult, CriticReport, MetaCriticReport, ProblemMap,
    Recommended, SkepticReport, VerificationReport,
};
use super::grounding::{self, Source};
use super::layer::{self, LayerOut, Link, Shared};
use super::{
    Final, Layer, Mode, PipelineEngine, PipelineError, PipelineEvent, PipelineOutcome,
    PipelineRequest,
};
use crate::engines::llm::Message;
use crate::engines::memory::learn::queue::{worker_gone, worker_id};
use crate::engines::orchestrator::{session_history, title_from};
use crate::store::{
    Edge, EdgeType, Node, NodeId, NodeType, Run, RunId, RunKind, RunStatus, Session, SessionSource,
};

/// Key of the final answer node's `meta` naming its run (also on the query node).
const RUN: &str = layer::RUN;
/// Key of a run's `summary` naming the process running it (`pid:<n>`).
const WORKER: &str = "worker";

/// A run about to be driven: new, or loaded to resume.
pub(crate) struct RunState {
    run: Run,
    question: String,
    mode: Mode,
    escalate: bool,
    query: NodeId,
    history: Vec<Message>,
    prior: HashMap<Layer, Node>,
    /// The answer node of an earlier attempt that stopped just before finishing.
    response: Option<NodeId>,
    resumed: bool,
}

/// The conversation before `until` (all of it when none), capped at the seed's turns and
/// characters per turn.
fn history(nodes: &[Node], until: Option<NodeId>, turns: usize, chars: usize) -> Vec<Message> {
    let upto = match until.and_then(|u| nodes.iter().position(|n| n.id == u)) {
        Some(i) => &nodes[..i],
        None => nodes,
    };
    let mut msgs = session_history(upto, &HashSet::new());
    let keep = turns.saturating_mul(2);
    if msgs.len() > keep {
        msgs.drain(..msgs.len() - keep);
    }
    for m in &mut msgs {
        if m.content.chars().count() > chars {
            m.content = m.content.chars().take(chars).collect::<String>() + "…";
        }
    }
    msgs
}

impl RunState {
    /// A new run: its session (new or continued), query node and `runs` row.
    pub(crate) async fn create(
        e: &PipelineEngine,
        req: &PipelineRequest,
    ) -> Result<Self, PipelineError> {
        let (session, nodes) = match req.session {
            Some(s) => (s, e.store.session_nodes(s)?),
            None => {
                let mut s = Session::new(title_from(&req.question), SessionSource::Glassbox);
                s.provider = Some(e.provider.name().to_string());
                s.model = Some(e.model.clone());
                let id = s.id;
                e.store.write_async(move |w| w.put_session(&s)).await?;
                (id, Vec::new())
            }
        };
        let history = history(&nodes, None, e.params.history_turns, e.params.history_chars);
        let prev = nodes
            .iter()
            .rev()
            .find(|n| n.kind == NodeType::Response)
            .map(|n| n.id);
        let run_id = RunId::new();
        let mut query = Node::new(session, NodeType::Query, req.question.clone());
        query.meta.insert(RUN.into(), json!(run_id.to_string()));
        query.meta.insert("mode".into(), json!(req.mode));
        let run = Run {
            id: run_id,
            session,
            kind: RunKind::Pipeline,
            params: json!({
                "question": req.question,
                "mode": req.mode,
                "escalate": req.escalate,
                "query": query.id,
                "model": e.model,
                "provider": e.provider.name(),
            }),
            summary: json!({}),
            status: RunStatus::Running,
            created_at: Utc::now(),
            finished_at: None,
        };
        let (q, r) = (query.clone(), run.clone());
        e.store
            .write_async(move |w| {
                w.put_node(&q)?;
                if let Some(p) = prev {
                    w.put_edge(&Edge::new(p, EdgeType::Influences, q.id))?;
                }
                w.put_run(&r)
            })
            .await?;
        tracing::debug!(node = %query.id, bytes = query.text.len(), "node committed");
        Ok(Self {
            run,
            question: req.question.clone(),
            mode: req.mode,
            escalate: req.escalate,
            query: query.id,
            history,
            prior: HashMap::new(),
            response: None,
            resumed: false,
        })
    }

    /// An existing run, with the layers its earlier attempts left.
    pub(crate) async fn load(e: &PipelineEngine, id: RunId) -> Result<Self, PipelineError> {
        let run = e.store.run(id)?.ok_or(PipelineError::NoRun(id))?;
        if run.kind != RunKind::Pipeline {
            return Err(PipelineError::NotPipeline(id));
        }
        if run.status == RunStatus::Done {
            return Err(PipelineError::Finished(id));
        }
        // A run marked running is resumed only when the process running it is gone (killed
        // or crashed): two processes must not run its layers at once.
        let worker = run.summary.get(WORKER).and_then(Value::as_str);
        if run.status == RunStatus::Running
            && worker.is_some_and(|w| w != worker_id() && !worker_gone(Some(w)))
        {
            return Err(PipelineError::Busy {
                run: id,
                worker: worker.unwrap_or_default().to_string(),
            });
        }
        let unreadable = |why: &str| PipelineError::Unreadable {
            run: id,
            why: why.to_string(),
        };
        let p = &run.params;
        let question = p["question"]
            .as_str()
            .ok_or_else(|| unreadable("its question is missing"))?
            .to_string();
        let mode: Mode = serde_json::from_value(p["mode"].clone())
            .map_err(|_| unreadable("its mode is missing"))?;
        let query: NodeId = serde_json::from_value(p["query"].clone())
            .map_err(|_| unreadable("its query node is missing"))?;
        let escalate = p["escalate"].as_bool().unwrap_or(true);
        let nodes = e.store.session_nodes(run.session)?;
        let history = history(
            &nodes,
            Some(query),
            e.params.history_turns,
            e.params.history_chars,
        );
        let prior = layer::layer_nodes(&nodes, id).into_iter().collect();
        let id_text = id.to_string();
        let response = nodes
            .iter()
            .find(|n| {
                n.kind == NodeType::Response
                    && n.meta.get(RUN).and_then(Value::as_str) == Some(id_text.as_str())
            })
            .map(|n| n.id);
        Ok(Self {
            run,
            question,
            mode,
            escalate,
            query,
            history,
            prior,
            response,
            resumed: true,
        })
    }
}

/// Runs (or resumes) `state` to the end, keeping the `runs` row current after every layer.
pub(crate) async fn drive(
    e: &PipelineEngine,
    mut st: RunState,
    events: mpsc::UnboundedSender<PipelineEvent>,
    cancel: CancellationToken,
) -> Result<PipelineOutcome, PipelineError> {
    st.run.status = RunStatus::Running;
    st.run.finished_at = None;
    if let Value::Object(m) = &mut st.run.summary {
        m.insert(WORKER.into(), json!(worker_id()));
    }
    let marked = st.run.clone();
    e.store.write_async(move |w| w.put_run(&marked)).await?;
    let _ = events.send(PipelineEvent::Start {
        run: st.run.id,
        session: st.run.session,
        mode: st.mode,
        resumed: st.resumed,
    });
    let sh = Shared {
        engine: e,
        run: st.run.id,
        session: st.run.session,
        question: st.question.clone(),
        history: std::mem::take(&mut st.history),
        prior: std::mem::take(&mut st.prior),
        events,
        cancel,
    };
    let mut flow = Flow {
        sh: &sh,
        run: st.run.clone(),
        escalate: st.escalate,
        fin: Final::default(),
        context: String::new(),
        layers: Vec::new(),
    };
    let outcome = flow.run(st.mode, st.query, st.response).await;
    let mut run = flow.run;
    run.finished_at = Some(Utc::now());
    run.status = match &outcome {
        Ok(_) => RunStatus::Done,
        Err(PipelineError::Cancelled(_)) => RunStatus::Interrupted,
        Err(err) => RunStatus::Failed {
            error: err.to_string(),
        },
    };
    e.store.write_async(move |w| w.put_run(&run)).await?;
    outcome
}

/// One run's flow through its layers.
struct Flow<'a, 'b> {
    sh: &'a Shared<'b>,
    run: Run,
    escalate: bool,
    fin: Final,
    /// The search context every layer after the search sees.
    context: String,
    layers: Vec<(Layer, NodeId)>,
}

impl Flow<'_, '_> {
    /// Records a finished layer and stores the run's progress.
    async fn done(&mut self, out: &LayerOut) -> Result<(), PipelineError> {
        self.layers.push((out.layer, out.node));
        if out.failed.is_some() && !self.fin.failed_layers.contains(&out.layer) {
            self.fin.failed_layers.push(out.layer);
        }
        self.run.summary = json!({
            "stage": out.layer,
            "mode": self.fin.mode,
            "was_escalated": self.fin.was_escalated,
            "escalation": self.fin.escalation,
            "failed_layers": self.fin.failed_layers,
            "layers": self.layers.len(),
            WORKER: worker_id(),
        });
        let run = self.run.clone();
        self.sh
            .engine
            .store
            .write_async(move |w| w.put_run(&run))
            .await?;
        Ok(())
    }

    /// A layer's input: the question, the search context, then each earlier part, cut to
    /// `[pipeline] input_chars`.
    fn input(&self, parts: &[(&str, &str)]) -> String {
        let cap = self.sh.engine.params.input_chars;
        let mut s = format!("Question:\n{}\n", self.sh.question.trim());
        if !self.context.is_empty() {
            s.push_str(&format!("\nSources:\n{}\n", self.context));
        }
        for (title, text) in parts {
            let text = text.trim();
            let cut: String = text.chars().take(cap).collect();
            let more = if cut.len() < text.len() { "…" } else { "" };
            s.push_str(&format!("\n{title}:\n{cut}{more}\n"));
        }
        s
    }

    fn note(&mut self, text: &str) {
        self.fin.notes.push(text.to_string());
    }

    async fn run(
        &mut self,
        requested: Mode,
        query: NodeId,
        response: Option<NodeId>,
    ) -> Result<PipelineOutcome, PipelineError> {
        let sh = self.sh;
        let (out, cls) = self
            .structured::<Classification>(
                Layer::Cortex,
                &[Link::After(query)],
                &[],
                "no classification: the defaults were used",
            )
            .await?;
        let cls = cls.unwrap_or_default();
        let _ = sh.events.send(PipelineEvent::Classification {
            metadata: cls.clone(),
        });
        let mode = match requested {
            Mode::Auto => match cls.recommended_mode {
                Recommended::Instant => Mode::Instant,
                Recommended::Deep => Mode::Deep,
                Recommended::UltraDeep => Mode::UltraDeep,
            },
            m => m,
        };
        self.fin.mode = Some(mode);
        let _ = sh.events.send(PipelineEvent::ModeSelected { mode });
        let mut prev = out.node;
        if grounding::should_search(&sh.question, &cls) {
            let out = self.search(&cls, prev).await?;
            prev = out.node;
        }
        let (answer, last) = match mode {
            Mode::Instant | Mode::Auto => {
                let out = self.text(Layer::Instant, &[Link::After(prev)], &[]).await?;
                self.fin.confidence = Some(sh.engine.params.instant_confidence);
                (out.text, out.node)
            }
            Mode::Deep => self.deep(prev).await?,
            Mode::UltraDeep => self.ultra(prev, None).await?,
        };
        self.finish(query, answer, last, response).await
    }

    /// Searches for sources and records them as the `web_search` layer (replayed, not
    /// searched again, on a resume).
    async fn search(
        &mut self,
        cls: &Classification,
        prev: NodeId,
    ) -> Result<LayerOut, PipelineError> {
        let sh = self.sh;
        let out = match sh
            .prior
            .get(&Layer::WebSearch)
            .filter(|n| layer::finished(n))
        {
            Some(_) => {
                sh.record(Layer::WebSearch, &[], String::new(), Value::Null)
                    .await?
            }
            None => {
                let queries = grounding::queries(&sh.question, cls, &sh.engine.grounder.params);
                let found = sh.engine.grounder.search(&queries, Some(sh.session)).await;
                for why in &found.failures {
                    self.note(why);
                }
                let text = grounding::context(&found.sources);
                let artifact = json!({"queries": queries, "sources": found.sources});
                sh.record(Layer::WebSearch, &[Link::After(prev)], text, artifact)
                    .await?
            }
        };
        self.fin.sources = out
            .artifact
            .as_ref()
            .and_then(|a| serde_json::from_value::<Vec<Source>>(a["sources"].clone()).ok())
            .unwrap_or_default();
        self.context = out.text.clone();
        self.done(&out).await?;
        Ok(out)
    }

    /// A free-text layer, recorded.
    async fn text(
        &mut self,
        layer: Layer,
        links: &[Link],
        parts: &[(&str, &str)],
    ) -> Result<LayerOut, PipelineError> {
        let out = self.sh.text(layer, links, self.input(parts)).await?;
        self.done(&out).await?;
        Ok(out)
    }

    /// A structured layer, recorded; when its answer could not be read, `missing` says what
    /// the pipeline does without it.
    async fn structured<T: Artifact>(
        &mut self,
        layer: Layer,
        links: &[Link],
        parts: &[(&str, &str)],
        missing: &str,
    ) -> Result<(LayerOut, Option<T>), PipelineError> {
        let (out, value) = self
            .sh
            .structured::<T>(layer, links, self.input(parts))
            .await?;
        self.done(&out).await?;
        if value.is_none() {
            self.note(missing);
        }
        Ok((out, value))
    }

    /// Deep mode (seed 003 §5.3), escalating to ultra-deep per §5.5.
    async fn deep(&mut self, prev: NodeId) -> Result<(String, NodeId), PipelineError> {
        let (dec, _) = self
            .structured::<ProblemMap>(
                Layer::Decomposition,
                &[Link::After(prev)],
                &[],
                "no decomposition: the solver worked from the question alone",
            )
            .await?;
        let map = artifact_text(
            &dec,
            "No problem map is available; solve from the question.",
        );
        let solver = self
            .text(
                Layer::PrimarySolver,
                &[Link::After(dec.node)],
                &[("Problem map", &map)],
            )
            .await?;
        let (critic, report) = self
            .structured::<CriticReport>(
                Layer::FastCritic,
                &[Link::After(solver.node)],
                &[("Problem map", &map), ("Solution", &solver.text)],
                "no critique: the refiner ran without one",
            )
            .await?;
        let critique = artifact_text(
            &critic,
            "No critique is available; check the solution yourself.",
        );
        let refiner = self
            .text(
                Layer::Refiner,
                &[Link::After(critic.node)],
                &[("Solution", &solver.text), ("Critique", &critique)],
            )
            .await?;
        let (gate, conf) = self
            .structured::<ConfidenceResult>(
                Layer::ConfidenceGate,
                &[Link::After(refiner.node)],
                &[("Answer", &refiner.text)],
                "no confidence: the gate's answer could not be read",
            )
            .await?;
        let threshold = self.sh.engine.params.escalation_confidence;
        let mut reasons = Vec::new();
        if let Some(c) = &conf
            && c.score < threshold
        {
            reasons.push(format!("confidence {} is below {threshold}", c.score));
        }
        if let Some(r) = report.as_ref().filter(|r| !r.missing_angles.is_empty()) {
            reasons.push(format!(
                "the critic found missing angles: {}",
                r.missing_angles.join("; ")
            ));
        }
        if self.escalate && !reasons.is_empty() {
            let events = &self.sh.events;
            let reason = reasons.join("; ");
            let _ = events.send(PipelineEvent::Escalation {
                content: reason.clone(),
            });
            self.fin.escalation = Some(reason);
            let _ = events.send(PipelineEvent::ModeSelected {
                mode: Mode::UltraDeep,
            });
            self.fin.was_escalated = true;
            self.fin.mode = Some(Mode::UltraDeep);
            return self.ultra(gate.node, Some(&refiner.text)).await;
        }
        self.take_confidence(conf);
        Ok((refiner.text, gate.node))
    }

    fn take_confidence(&mut self, conf: Option<ConfidenceResult>) {
        if let Some(c) = conf {
            self.fin.confidence = Some(c.score);
            self.fin.assumptions = c.assumptions;
            self.fin.uncertainty_notes = c.uncertainty_notes;
        }
    }

    /// Ultra-deep mode (seed 003 §5.4); `earlier` is the escalated deep answer, if any.
    async fn ultra(
        &mut self,
        prev: NodeId,
        earlier: Option<&str>,
    ) -> Result<(String, NodeId), PipelineError> {
        let sh = self.sh;
        let mut parts: Vec<(&str, &str)> = Vec::new();
        if let Some(a) = earlier {
            parts.push(("An earlier answer that was not confident enough", a));
        }
        let (dec, _) = self
            .structured::<ProblemMap>(
                Layer::DeepDecomposition,
                &[Link::After(prev)],
                &parts,
                "no deep decomposition: the solvers worked from the question alone",
            )
            .await?;
        let map = artifact_text(
            &dec,
            "No problem map is available; solve from the question.",
        );
        let input = self.input(&[("Problem map", &map)]);
        let _ = sh.events.send(PipelineEvent::ParallelStart {
            parallel_group: super::SOLVER_GROUP,
        });
        let links = [Link::BranchesFrom(dec.node)];
        let (a, b, c) = tokio::join!(
            sh.text(Layer::SolverA, &links, input.clone()),
            sh.text(Layer::SolverB, &links, input.clone()),
            sh.text(Layer::SolverC, &links, input),
        );
        let solvers = [a?, b?, c?];
        for s in &solvers {
            self.done(s).await?;
        }
        let [a, b, c] = &solvers;
        let mut parts = vec![
            ("Solution A (mainstream)", a.text.as_str()),
            ("Solution B (failure modes)", b.text.as_str()),
            ("Solution C (contrarian)", c.text.as_str()),
        ];
        let after_solvers: Vec<Link> = solvers.iter().map(|s| Link::After(s.node)).collect();
        let (skeptic, _) = self
            .structured::<SkepticReport>(
                Layer::Skeptic,
                &after_solvers,
                &parts,
                "no skeptic's report: the synthesis went on without it",
            )
            .await?;
        let skeptic_text = artifact_text(&skeptic, "No skeptic's report is available.");
        parts.push(("Skeptic's report", &skeptic_text));
        let (verifier, _) = self
            .structured::<VerificationReport>(
                Layer::Verifier,
                &[Link::After(skeptic.node)],
                &parts,
                "no verification: the synthesis went on without it",
            )
            .await?;
        let verifier_text = artifact_text(&verifier, "No verification is available.");
        parts.push(("Verification", &verifier_text));
        let mut links = vec![Link::After(verifier.node)];
        links.extend(solvers.iter().map(|s| Link::Aggregates(s.node)));
        let synth = self.text(Layer::Synthesizer, &links, &parts).await?;
        let (meta, report) = self
            .structured::<MetaCriticReport>(
                Layer::MetaCritic,
                &[Link::After(synth.node)],
                &[("Answer", &synth.text)],
                "no meta-critique: the synthesis stands as it is",
            )
            .await?;
        let (answer, last) = match report.filter(|r| !r.missing_elements.is_empty()) {
            Some(r) => {
                let gaps = format!("- {}", r.missing_elements.join("\n- "));
                let re = self
                    .text(
                        Layer::ReSynthesis,
                        &[Link::After(meta.node)],
                        &[("Answer", &synth.text), ("Gaps", &gaps)],
                    )
                    .await?;
                (re.text, re.node)
            }
            None => (synth.text, meta.node),
        };
        let (fc, conf) = self
            .structured::<ConfidenceResult>(
                Layer::FinalConfidence,
                &[Link::After(last)],
                &[("Answer", &answer)],
                "no confidence: the final gate's answer could not be read",
            )
            .await?;
        self.take_confidence(conf);
        Ok((answer, fc.node))
    }

    /// The answer node (its run's `response`), the final events and the outcome.
    async fn finish(
        &mut self,
        query: NodeId,
        answer: String,
        last: NodeId,
        earlier: Option<NodeId>,
    ) -> Result<PipelineOutcome, PipelineError> {
        let sh = self.sh;
        let mut node = Node::new(sh.session, NodeType::Response, answer.clone());
        if let Some(id) = earlier {
            node.id = id;
        }
        node.model = Some(sh.engine.model.clone());
        node.confidence = self.fin.confidence.map(|c| f64::from(c) / 100.0);
        node.meta.insert(RUN.into(), json!(self.run.id.to_string()));
        node.meta.insert("mode".into(), json!(self.fin.mode));
        let stored = node.clone();
        let session = sh.session;
        sh.engine
            .store
            .write_async(move |w| {
                w.put_node(&stored)?;
                w.put_edge(&Edge::new(last, EdgeType::Influences, stored.id))?;
                w.put_edge(&Edge::new(stored.id, EdgeType::Answers, query))?;
                if let Some(mut s) = w.session(session)? {
                    s.updated_at = Utc::now();
                    w.put_session(&s)?;
                }
                Ok(())
            })
            .await?;
        tracing::debug!(node = %node.id, bytes = node.text.len(), "node committed");
        self.run.summary = json!({
            "stage": "final",
            "answer": answer,
            "response": node.id,
            "final": self.fin,
            "layers": self.layers.len(),
        });
        let _ = sh.events.send(PipelineEvent::FinalChunk {
            content: answer.clone(),
        });
        let _ = sh
            .events
            .send(PipelineEvent::FinalComplete(self.fin.clone()));
        Ok(PipelineOutcome {
            run: self.run.id,
            session: sh.session,
            query,
            response: node.id,
            answer,
            fin: self.fin.clone(),
            layers: self.layers.clone(),
        })
    }
}

/// A structured layer's artifact as pretty JSON for a later prompt, or `missing`.
fn artifact_text(out: &LayerOut, missing: &str) -> String {
    out.artifact
        .as_ref()
        .and_then(|a| serde_json::to_string_pretty(a).ok())
        .unwrap_or_else(|| missing.to_string())
}
