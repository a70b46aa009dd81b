//! How the Fork workspace takes the news of its tasks: streamed lanes into the columns, the
//! comparison, the debate or the newest steering entry; finished jobs; a fork read back from
//! the store; recorded checkpoints.

use super::{
    Busy, ColStatus, Column, Consensus, Ctx, Finished, Fork, ForkMsg, JobKind, Loaded, SteerView,
};
use crate::app::state::Level;
use crate::app::update::Effect;
use crate::engines::fork::{
    BranchResult, CheckpointResult, DebateResult, ForkEvent, ForkResult, ForkStyle, Lane,
    SteerAction, SteerResult,
};

impl Fork {
    fn column_mut(&mut self, style: ForkStyle) -> Option<&mut Column> {
        self.columns.iter_mut().find(|c| c.style == style)
    }

    /// Empties the view for a new job on `question` with a waiting column per style
    /// (steering entries stay).
    pub(super) fn reset(&mut self, question: String, kind: &str, styles: &[ForkStyle]) {
        self.run = None;
        self.question = question;
        self.kind = kind.to_string();
        self.columns = styles.iter().map(|s| Column::new(*s)).collect();
        self.focus = 0;
        self.first = 0;
        self.comparison = None;
        self.comparison_live.clear();
        self.rounds = 0;
        self.consensus = None;
        self.panel_scroll = 0;
    }

    fn apply_fork_result(&mut self, r: &ForkResult) {
        for b in &r.branches {
            match self.column_mut(b.style) {
                Some(c) => c.finish(b.clone()),
                None => self.columns.push(Column::from_result(b)),
            }
        }
        self.comparison = Some(r.comparison.clone());
    }

    fn apply_debate(&mut self, d: &DebateResult) {
        self.apply_fork_result(&d.initial_fork);
        for c in &mut self.columns {
            c.debate = d
                .rounds
                .iter()
                .flat_map(|r| r.entries.iter().filter(|e| e.style == c.style).cloned())
                .collect();
            if matches!(c.status, ColStatus::Debating(_)) {
                c.status = ColStatus::Done;
            }
        }
        self.rounds = d.total_rounds;
        self.consensus = Some(Consensus {
            reached: d.consensus_reached,
            text: d.consensus.clone().or(d.consensus_error.clone()),
            live: String::new(),
        });
    }

    /// The kind of the running job, and whether its output goes to the steering entries.
    fn job_kind(&self) -> (Option<JobKind>, bool) {
        let kind = self.busy.as_ref().map(|b| b.job.kind.clone());
        let steer = matches!(kind, Some(JobKind::Steer) | Some(JobKind::Checkpoint));
        (kind, steer)
    }

    fn lane_text(&mut self, lane: Lane, text: &str, thinking: bool) {
        let (kind, steer) = self.job_kind();
        match lane {
            Lane::Branch(style) if !steer => {
                if let Some(c) = self.column_mut(style) {
                    if thinking {
                        c.thinking.push_str(text);
                    } else {
                        c.live.push_str(text);
                    }
                }
            }
            Lane::Comparison => {
                if !thinking {
                    self.comparison_live.push_str(text);
                }
            }
            Lane::Synthesis if kind == Some(JobKind::Debate) => {
                if let Some(c) = self.consensus.as_mut()
                    && !thinking
                {
                    c.live.push_str(text);
                }
            }
            _ => {
                // Thinking shows too: a steer's answer may come only after long reasoning.
                if let Some(s) = self.steers.last_mut().filter(|s| s.running) {
                    s.live.push_str(text);
                }
            }
        }
    }

    /// One event of the running job's engine.
    pub(super) fn on_event(&mut self, event: ForkEvent) {
        let (kind, steer) = self.job_kind();
        match event {
            ForkEvent::Started { session, .. } => {
                if !steer {
                    self.session = Some(session);
                }
            }
            ForkEvent::LaneStarted { lane, round } => match lane {
                Lane::Branch(style) if !steer => {
                    if let Some(c) = self.column_mut(style) {
                        c.live.clear();
                        c.thinking.clear();
                        c.status = if round > 0 {
                            ColStatus::Debating(round)
                        } else {
                            ColStatus::Running
                        };
                    }
                    if round > 0 {
                        self.rounds = self.rounds.max(round);
                    }
                }
                Lane::Synthesis if kind == Some(JobKind::Debate) => {
                    self.consensus.get_or_insert_with(Default::default);
                }
                _ => {}
            },
            ForkEvent::Delta {
                lane,
                text,
                thinking,
            } => self.lane_text(lane, &text, thinking),
            ForkEvent::Repairing { lane } => {
                if let Lane::Branch(style) = lane
                    && !steer
                    && let Some(c) = self.column_mut(style)
                {
                    c.status = ColStatus::Repairing;
                    c.live.clear();
                    c.thinking.clear();
                }
            }
            ForkEvent::BranchDone(b) => {
                if !steer && let Some(c) = self.column_mut(b.style) {
                    c.live.clear();
                    c.finish(b);
                }
            }
            ForkEvent::ComparisonDone(c) => {
                self.comparison = Some(c);
                self.comparison_live.clear();
            }
            ForkEvent::DebateEntryDone(e) => {
                if let Some(c) = self.column_mut(e.style) {
                    c.live.clear();
                    c.status = ColStatus::Done;
                    c.debate.push(e);
                }
            }
            ForkEvent::DebateDone {
                consensus_reached,
                consensus,
            } => {
                let c = self.consensus.get_or_insert_with(Default::default);
                c.reached = consensus_reached;
                c.text = consensus;
                c.live.clear();
            }
        }
    }

    /// Applies news from a task; news of a job that is no longer the running one is dropped.
    pub(super) fn apply_msg(&mut self, m: ForkMsg, cx: &mut Ctx<'_>) {
        match m {
            ForkMsg::Event { job, event } => {
                if self.busy.as_ref().is_some_and(|b| b.id == job) {
                    self.on_event(event);
                }
            }
            ForkMsg::Finished { job, result } => {
                let Some(busy) = self.busy.take_if(|b| b.id == job) else {
                    return;
                };
                match result {
                    Ok(f) => self.finished(busy, f, cx),
                    Err(e) => {
                        for c in &mut self.columns {
                            if !matches!(c.status, ColStatus::Done | ColStatus::Failed(_)) {
                                c.status = ColStatus::Failed(e.clone());
                            }
                        }
                        if let Some(s) = self.steers.last_mut().filter(|s| s.running) {
                            s.running = false;
                            s.error = Some(e.clone());
                        }
                        super::super::failed(cx, &busy.job.what, e);
                    }
                }
            }
            ForkMsg::Loaded(r) => {
                self.loading = false;
                match r {
                    Ok(Some(l)) => {
                        if self.busy.is_none() && self.columns.is_empty() {
                            self.load(*l);
                        }
                    }
                    Ok(None) => {}
                    Err(e) => cx.notice(format!("cannot load the fork: {e}"), Level::Error),
                }
            }
            ForkMsg::Verdict(r) => match r {
                Ok(c) => self.checkpoint_done(c, cx),
                Err(e) => super::super::failed(cx, "checkpoint", e),
            },
        }
    }

    /// Shows a fork read back from the store.
    fn load(&mut self, l: Loaded) {
        let styles: Vec<ForkStyle> = l.branches.iter().map(|b| b.style).collect();
        self.reset(l.question, &l.kind, &styles);
        self.run = Some(l.run);
        self.session = Some(l.session);
        match (&l.debate, &l.result) {
            (Some(d), _) => self.apply_debate(d),
            (None, Some(r)) => self.apply_fork_result(r),
            (None, None) => {
                self.columns = l.branches.iter().map(Column::from_result).collect();
            }
        }
        self.steers = l.steers;
    }

    fn checkpoint_done(&mut self, c: CheckpointResult, cx: &mut Ctx<'_>) {
        let verdict = c.annotation.verdict.as_str();
        let mut msg = format!("checkpoint recorded: {verdict}");
        if !c.disputed_nodes.is_empty() {
            msg.push_str(&format!(
                "; {} downstream node(s) now rest on a disputed step",
                c.disputed_nodes.len()
            ));
        }
        if !c.cleared_nodes.is_empty() {
            msg.push_str(&format!(
                "; {} node(s) no longer disputed",
                c.cleared_nodes.len()
            ));
        }
        let view = self
            .steers
            .last_mut()
            .filter(|s| s.running && s.label.starts_with("checkpoint"));
        match (&c.alternative_branch, view) {
            (Some(alt), Some(s)) => {
                s.running = false;
                s.live.clear();
                s.lines = vec![alt.reasoning.clone()];
                s.confidence = Some(alt.confidence);
                s.node = Some(alt.node_id);
                msg.push_str(&format!(
                    "; corrected branch added ({:.0}%)",
                    alt.confidence * 100.0
                ));
            }
            (None, Some(s)) => {
                s.running = false;
                s.lines = vec![format!("verdict {verdict}")];
            }
            (Some(alt), None) => self.steers.push(SteerView {
                label: format!("checkpoint {verdict} → corrected branch"),
                lines: vec![alt.reasoning.clone()],
                confidence: Some(alt.confidence),
                node: Some(alt.node_id),
                ..Default::default()
            }),
            (None, None) => self.steers.push(SteerView {
                label: format!("checkpoint {verdict}"),
                ..Default::default()
            }),
        }
        cx.notice(msg, Level::Info);
        // The graph shows the annotation, the corrected branch and the disputed marks.
        let session = cx.state.loaded.id().unwrap_or(c.session_id);
        cx.effect(Effect::LoadSession(session));
    }

    fn finished(&mut self, busy: Busy, f: Finished, cx: &mut Ctx<'_>) {
        let reload = match f {
            Finished::Fork {
                run,
                session,
                result,
            } => {
                self.run = Some(run);
                self.session = Some(session);
                self.apply_fork_result(&result);
                let ok = result.branches.iter().filter(|b| b.ok()).count();
                cx.notice(
                    format!(
                        "{} done: {ok} of {} branches",
                        self.kind,
                        result.branches.len()
                    ),
                    Level::Info,
                );
                session
            }
            Finished::Debate {
                run,
                session,
                result,
            } => {
                self.run = Some(run);
                self.session = Some(session);
                self.apply_debate(&result);
                let c = if result.consensus_reached {
                    "consensus reached"
                } else {
                    "no consensus"
                };
                cx.notice(
                    format!("debate done after {} rounds: {c}", result.total_rounds),
                    Level::Info,
                );
                session
            }
            Finished::Steer {
                run,
                session,
                result,
            } => {
                if let SteerResult::Refork {
                    result: r,
                    new_context,
                } = &result
                {
                    self.run = Some(run);
                    self.apply_fork_result(r);
                    if let Some(s) = self.steers.last_mut().filter(|s| s.running) {
                        s.running = false;
                        s.lines = vec![format!("new context: {new_context}")];
                    }
                } else if let Some(s) = self.steers.last_mut().filter(|s| s.running) {
                    *s = steer_view(s.label.clone(), &result);
                }
                cx.notice(format!("{} done", busy.job.what), Level::Info);
                session
            }
            Finished::Checkpoint(c) => return self.checkpoint_done(c, cx),
        };
        // The graph gets the new nodes, unless a Think run is drawing it.
        if cx.state.run.is_none() {
            cx.effect(Effect::LoadSession(reload));
        }
    }
}

/// How a steering action is labelled in the panel and the tree.
pub(super) fn steer_label(a: &SteerAction) -> String {
    match a {
        SteerAction::Expand { style, .. } => format!("expand {style}"),
        SteerAction::Merge { styles, .. } => {
            let n: Vec<&str> = styles.iter().map(|s| s.as_str()).collect();
            format!("merge {}", n.join(" + "))
        }
        SteerAction::Challenge { style, .. } => format!("challenge {style}"),
        SteerAction::Refork { .. } => "refork".into(),
    }
}

fn branch_lines(b: &BranchResult) -> Vec<String> {
    let mut v = vec![b.body.conclusion.clone()];
    v.extend(b.body.key_insights.iter().map(|i| format!("• {i}")));
    v.extend(b.body.risks.iter().map(|i| format!("⚠ {i}")));
    v
}

/// A finished steering action as an entry of the panel.
pub(super) fn steer_view(label: String, r: &SteerResult) -> SteerView {
    match r {
        SteerResult::Expand { branch } | SteerResult::Challenge { branch, .. } => SteerView {
            label,
            lines: branch_lines(branch),
            confidence: branch.ok().then_some(branch.body.confidence),
            error: branch.error.clone(),
            node: branch.node_id,
            ..Default::default()
        },
        SteerResult::Merge {
            merged, node_id, ..
        } => {
            let lines = merged
                .claims
                .iter()
                .map(|c| format!("• {}  [{}]", c.text, merged.refs(c)))
                .collect();
            SteerView {
                label,
                lines,
                confidence: None,
                node: Some(*node_id),
                ..Default::default()
            }
        }
        SteerResult::Refork {
            new_context,
            result,
        } => SteerView {
            label,
            lines: vec![
                format!("new context: {new_context}"),
                format!("{} branches", result.branches.len()),
            ],
            ..Default::default()
        },
    }
}
