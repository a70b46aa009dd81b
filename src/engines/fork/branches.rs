//! A fork: the question node, one branch per style run concurrently, each stored as a
//! `fork_branch` node, then the comparison; the `fork` run that records it all.

use std::time::Instant;

use chrono::Utc;
use futures::future::join_all;
use serde_json::{Map, Value, json};

use super::json::{Shape, parse_conclusion};
use super::{
    BranchResult, Conclusion, Events, ForkEngine, ForkError, ForkEvent, ForkRequest, ForkResult,
    ForkStyle, Guidance, Lane, Outcome, Spec,
};
use crate::engines::thinkgraph::Step;
use crate::store::{
    Edge, EdgeType, Node, NodeId, NodeStatus, NodeType, Run, RunId, RunKind, RunStatus, Session,
    SessionId, SessionSource, Store,
};

impl ForkEngine {
    // ---- validation -----------------------------------------------------------------

    fn check_styles(&self, styles: &[ForkStyle]) -> Result<(), ForkError> {
        let (min, max) = (self.settings.min_branches, self.settings.max_branches);
        if styles.len() < min || styles.len() > max {
            return Err(ForkError::Invalid(format!(
                "a fork needs {min} to {max} branches, got {}",
                styles.len()
            )));
        }
        if let Some(dup) = styles
            .iter()
            .enumerate()
            .find_map(|(i, s)| styles[..i].contains(s).then_some(s))
        {
            return Err(ForkError::Invalid(format!("style {dup} is given twice")));
        }
        Ok(())
    }

    fn check_guidance(&self, guidance: &[Guidance], styles: &[ForkStyle]) -> Result<(), ForkError> {
        let max = self.settings.guidance_max_chars;
        for g in guidance {
            let n = g.guidance.chars().count();
            if n > max {
                return Err(ForkError::Invalid(format!(
                    "guidance for {} is {n} characters; the limit is {max}",
                    g.style
                )));
            }
            if !styles.contains(&g.style) {
                return Err(ForkError::Invalid(format!(
                    "guidance given for {}, which is not one of the forked styles",
                    g.style
                )));
            }
        }
        Ok(())
    }

    // ---- fork -----------------------------------------------------------------------

    /// Forks `req.query` into one branch per style, runs them concurrently, then compares
    /// them. Stores a query node, a `fork_branch` node per branch and a `fork` run.
    pub async fn fork(
        &self,
        req: ForkRequest,
        events: &Events,
    ) -> Result<Outcome<ForkResult>, ForkError> {
        let spec = self.new_query_spec(req).await?;
        self.fork_spec(spec, events).await
    }

    /// Forks from inside a thinking trace: the branches continue the reasoning of
    /// `thinking` from the start of step `step` (its `meta.steps[step].start` byte offset),
    /// restated as text, each in its style. The branches hang off the thinking node.
    pub async fn fork_from_step(
        &self,
        thinking: NodeId,
        step: usize,
        styles: Vec<ForkStyle>,
        guidance: Vec<Guidance>,
        events: &Events,
    ) -> Result<Outcome<ForkResult>, ForkError> {
        self.check_styles(&styles)?;
        self.check_guidance(&guidance, &styles)?;
        let node = self
            .store
            .run_blocking(move |store| store.node(thinking))
            .await?
            .ok_or_else(|| ForkError::NotFound(format!("node {thinking}")))?;
        let start = Step::of(&node).get(step).map(|s| s.start).ok_or_else(|| {
            ForkError::Invalid(format!("node {thinking} has no thinking step {step}"))
        })?;
        let mut cut = start.min(node.text.len());
        while !node.text.is_char_boundary(cut) {
            cut -= 1;
        }
        let anchor = node.clone();
        let query = self
            .store
            .run_blocking(move |store| preceding_query(store, &anchor))
            .await?
            .unwrap_or_default();
        let spec = Spec {
            session: node.session,
            query,
            anchor: node.id,
            styles,
            guidance,
            prefix: Some(node.text[..cut].to_string()),
            new_context: None,
        };
        self.fork_spec(spec, events).await
    }

    /// Checks a fork request and stores its question node (in a new session unless one is
    /// named).
    pub(super) async fn new_query_spec(&self, req: ForkRequest) -> Result<Spec, ForkError> {
        if req.query.trim().is_empty() {
            return Err(ForkError::Invalid("the question is empty".into()));
        }
        self.check_styles(&req.styles)?;
        self.check_guidance(&req.guidance, &req.styles)?;
        let session = self.session_for(req.session, &req.query).await?;
        let mut query = Node::new(session, NodeType::Query, req.query.clone());
        query.meta.insert("fork".into(), json!(true));
        let anchor = query.id;
        self.store.write_async(move |w| w.put_node(&query)).await?;
        Ok(Spec {
            session,
            query: req.query,
            anchor,
            styles: req.styles,
            guidance: req.guidance,
            prefix: None,
            new_context: None,
        })
    }

    async fn session_for(
        &self,
        id: Option<SessionId>,
        query: &str,
    ) -> Result<SessionId, ForkError> {
        if let Some(id) = id {
            return self
                .store
                .run_blocking(move |store| store.session(id))
                .await?
                .map(|s| s.id)
                .ok_or_else(|| ForkError::NotFound(format!("session {id}")));
        }
        let mut s = Session::new(
            crate::engines::orchestrator::title_from(query),
            SessionSource::Glassbox,
        );
        s.provider = Some(self.provider.name().to_string());
        s.model = Some(self.settings.model.clone());
        let id = s.id;
        self.store.write_async(move |w| w.put_session(&s)).await?;
        Ok(id)
    }

    /// Stores the `Running` run of a fork, debate or steer; `extra` joins its params.
    pub(super) async fn start_run(
        &self,
        spec: &Spec,
        kind: RunKind,
        extra: Value,
    ) -> Result<Run, ForkError> {
        let mut params = json!({
            "query": spec.query,
            "queryNode": spec.anchor,
            "styles": spec.styles,
            "guidance": spec.guidance,
        });
        if let (Some(p), Value::Object(extra)) = (params.as_object_mut(), extra) {
            p.extend(extra);
            if let Some(prefix) = &spec.prefix {
                p.insert("prefixChars".into(), json!(prefix.chars().count()));
            }
        }
        let run = Run {
            id: RunId::new(),
            session: spec.session,
            kind,
            params,
            summary: Value::Null,
            status: RunStatus::Running,
            created_at: Utc::now(),
            finished_at: None,
        };
        let stored = run.clone();
        self.store.write_async(move |w| w.put_run(&stored)).await?;
        Ok(run)
    }

    /// Stores a run as done (or interrupted, when cancelled) with its summary.
    /// Records the run as done (or interrupted) with `result` as its summary, and hands the
    /// result back as the call's outcome.
    pub(super) async fn finish<T: serde::Serialize>(
        &self,
        run: Run,
        session: SessionId,
        nodes: Vec<NodeId>,
        result: T,
    ) -> Result<Outcome<T>, ForkError> {
        let id = run.id;
        self.finish_run(run, serde_json::to_value(&result).unwrap_or_default())
            .await?;
        Ok(Outcome {
            session,
            run: id,
            nodes,
            data: result,
        })
    }

    async fn finish_run(&self, mut run: Run, summary: Value) -> Result<(), ForkError> {
        run.summary = summary;
        run.status = if self.cancel.is_cancelled() {
            RunStatus::Interrupted
        } else {
            RunStatus::Done
        };
        run.finished_at = Some(Utc::now());
        self.store.write_async(move |w| w.put_run(&run)).await?;
        Ok(())
    }

    async fn fork_spec(
        &self,
        spec: Spec,
        events: &Events,
    ) -> Result<Outcome<ForkResult>, ForkError> {
        let run = self.start_run(&spec, RunKind::Fork, json!({})).await?;
        let _ = events.send(ForkEvent::Started {
            session: spec.session,
            run: run.id,
            anchor: spec.anchor,
        });
        let result = self.branches_and_compare(&spec, run.id, events).await?;
        let mut nodes = vec![spec.anchor];
        nodes.extend(result.branches.iter().filter_map(|b| b.node_id));
        self.finish(run, spec.session, nodes, result).await
    }

    /// Runs one branch per style concurrently, then compares them.
    pub(super) async fn branches_and_compare(
        &self,
        spec: &Spec,
        run: RunId,
        events: &Events,
    ) -> Result<ForkResult, ForkError> {
        let runs = spec
            .styles
            .iter()
            .map(|&style| self.branch(spec, style, run, events));
        let branches = join_all(runs)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let comparison = self.compare(&spec.query, &branches, events).await;
        let _ = events.send(ForkEvent::ComparisonDone(comparison.clone()));
        Ok(ForkResult {
            branches,
            comparison,
            applied_guidance: spec.guidance.clone(),
        })
    }

    /// The system prompt of a style.
    pub(super) fn system_for(&self, style: ForkStyle) -> String {
        self.prompts.get(style.as_str()).to_string()
    }

    /// One branch: a structured conclusion, stored as a `fork_branch` node. Model and
    /// parse failures become a failed branch; only store failures are errors.
    async fn branch(
        &self,
        spec: &Spec,
        style: ForkStyle,
        run: RunId,
        events: &Events,
    ) -> Result<BranchResult, ForkError> {
        let mut user = String::new();
        if let Some(g) = spec.guidance.iter().find(|g| g.style == style) {
            user.push_str(&format!(
                "Human guidance for this branch: {}\n\n",
                g.guidance
            ));
        }
        user.push_str(&format!("Question: {}\n", spec.query));
        if let Some(prefix) = &spec.prefix {
            user.push_str(&format!(
                "\nThe reasoning so far (continue it from where it stops, in your own style):\n{prefix}\n"
            ));
        }
        if let Some(ctx) = &spec.new_context {
            user.push_str(&format!("\nNew context from the human: {ctx}\n"));
        }
        let lane = Lane::Branch(style);
        let _ = events.send(ForkEvent::LaneStarted { lane, round: 0 });
        let started = Instant::now();
        let out = self
            .structured(
                lane,
                self.system_for(style),
                user,
                Shape::Conclusion,
                self.settings.plan,
                events,
            )
            .await;
        let result = self.branch_result(style, out, started);
        let mut meta = Map::new();
        meta.insert("style".into(), json!(style));
        meta.insert("run".into(), json!(run));
        if spec.new_context.is_some() {
            meta.insert("action".into(), json!("refork"));
        }
        let node = self
            .store_branch(
                spec.session,
                &result,
                meta,
                vec![(EdgeType::BranchesFrom, spec.anchor)],
            )
            .await?;
        let result = BranchResult {
            node_id: Some(node),
            ..result
        };
        let _ = events.send(ForkEvent::BranchDone(result.clone()));
        Ok(result)
    }

    /// A branch's result from its structured answer (or the failure to get one).
    pub(super) fn branch_result(
        &self,
        style: ForkStyle,
        out: Result<(Map<String, Value>, u64), (String, u64)>,
        started: Instant,
    ) -> BranchResult {
        let duration_ms = started.elapsed().as_millis() as u64;
        match out.and_then(|(m, tokens)| {
            parse_conclusion(&m)
                .map(|c| (c, tokens))
                .map_err(|e| (e, tokens))
        }) {
            Ok((body, tokens)) => BranchResult {
                style,
                body,
                output_tokens_used: tokens,
                duration_ms,
                error: None,
                node_id: None,
            },
            Err((error, tokens)) => BranchResult {
                style,
                body: Conclusion::default(),
                output_tokens_used: tokens,
                duration_ms,
                error: Some(error),
                node_id: None,
            },
        }
    }

    /// Stores a branch as a `fork_branch` node with edges from it to `links`.
    pub(super) async fn store_branch(
        &self,
        session: SessionId,
        b: &BranchResult,
        mut meta: Map<String, Value>,
        links: Vec<(EdgeType, NodeId)>,
    ) -> Result<NodeId, ForkError> {
        let mut node = Node::new(
            session,
            NodeType::ForkBranch,
            b.error.clone().unwrap_or_else(|| b.body.conclusion.clone()),
        );
        node.model = Some(self.settings.model.clone());
        node.confidence = Some(b.body.confidence);
        if let Some(e) = &b.error {
            node.status = NodeStatus::Failed { error: e.clone() };
        }
        meta.insert("keyInsights".into(), json!(b.body.key_insights));
        meta.insert("risks".into(), json!(b.body.risks));
        meta.insert("opportunities".into(), json!(b.body.opportunities));
        meta.insert("assumptions".into(), json!(b.body.assumptions));
        meta.insert("outputTokens".into(), json!(b.output_tokens_used));
        meta.insert("durationMs".into(), json!(b.duration_ms));
        node.meta = meta;
        let id = node.id;
        self.store
            .write_async(move |w| {
                w.put_node(&node)?;
                for (kind, dst) in links {
                    w.put_edge(&Edge::new(node.id, kind, dst))?;
                }
                Ok(())
            })
            .await?;
        Ok(id)
    }

    /// Stores a run as failed with `err`.
    pub(super) async fn fail_run(&self, mut run: Run, err: &ForkError) -> Result<(), ForkError> {
        run.status = RunStatus::Failed {
            error: err.to_string(),
        };
        run.finished_at = Some(Utc::now());
        self.store.write_async(move |w| w.put_run(&run)).await?;
        Ok(())
    }
}

/// A branch as other calls see it: style, confidence, conclusion and its lists.
pub(super) fn describe_branch(b: &BranchResult) -> String {
    let mut s = format!(
        "- {} (confidence {:.2}): {}\n",
        b.style, b.body.confidence, b.body.conclusion
    );
    for (name, list) in [
        ("key insights", &b.body.key_insights),
        ("risks", &b.body.risks),
        ("opportunities", &b.body.opportunities),
        ("assumptions", &b.body.assumptions),
    ] {
        if !list.is_empty() {
            s.push_str(&format!("  {name}: {}\n", list.join("; ")));
        }
    }
    s
}

/// The nearest query node at or before `node` in its session.
fn preceding_query(store: &Store, node: &Node) -> Result<Option<String>, ForkError> {
    if node.kind == NodeType::Query {
        return Ok(Some(node.text.clone()));
    }
    Ok(query_before(&store.session_nodes(node.session)?, node))
}

/// The text of `node` when it is a query, else of the last query before it in `nodes` (its
/// session's nodes in order; all of them when `node` is not among them).
pub(super) fn query_before(nodes: &[Node], node: &Node) -> Option<String> {
    if node.kind == NodeType::Query {
        return Some(node.text.clone());
    }
    let pos = nodes
        .iter()
        .position(|n| n.id == node.id)
        .unwrap_or(nodes.len());
    nodes[..pos]
        .iter()
        .rev()
        .find(|n| n.kind == NodeType::Query)
        .map(|n| n.text.clone())
}
