//! What the news of the workspace's tasks does: a run read back from the store, the events
//! of a run going on here, and its end.

use super::{LayerStatus, Phase, Pipeline, PipelineMsg, plan};
use crate::app::state::Level;
use crate::app::workspaces::Cx;
use crate::engines::pipeline::{Layer, LayerState, PipelineEvent};
use crate::store::SessionId;
use crate::views::pipeline::{RunView, Unit};

use super::tasks::{Failure, Finished};

/// The unit a layer's pane sits in.
fn unit_of(layer: Layer) -> Unit {
    if layer.parallel_group().is_some() {
        Unit::Solvers
    } else {
        Unit::Layer(layer)
    }
}

impl Pipeline {
    /// Applies one message from a task.
    pub(super) fn apply(&mut self, m: PipelineMsg, cx: &mut Cx<'_, Self>) {
        match m {
            PipelineMsg::Defaults(mode) => {
                if let Some(mode) = mode.filter(|_| !self.mode_chosen) {
                    self.mode = mode;
                }
            }
            PipelineMsg::Loaded { session, run } => self.loaded(session, run.map(|r| *r), cx),
            PipelineMsg::LoadFailed(e) => {
                self.loading = false;
                if self.view.phase == Phase::Loading {
                    self.view.phase = Phase::Empty;
                }
                cx.notice(
                    format!("cannot read the last pipeline run: {e}"),
                    Level::Error,
                );
            }
            PipelineMsg::Event { seq, event } => {
                if seq == self.seq && self.running() {
                    self.event(event, cx);
                }
            }
            PipelineMsg::Done { seq, outcome } => {
                if seq == self.seq && self.running() {
                    self.finished(outcome, cx);
                }
            }
        }
    }

    /// A session's last run, read from the store: shown unless a run goes on here.
    fn loaded(&mut self, session: SessionId, run: Option<RunView>, cx: &mut Cx<'_, Self>) {
        self.loading = false;
        if self.reload {
            self.reload = false;
            if let Some(open) = cx.state.loaded.id() {
                self.load(open, cx);
            }
        }
        if self.running() || self.looked_up != Some(session) {
            return;
        }
        match run {
            Some(r) => {
                if r.run != self.view.run {
                    self.focus = None;
                    self.toggled.clear();
                    self.scroll = 0;
                }
                self.view = r;
                self.hint = None;
            }
            None => {
                // Another session's run no longer applies.
                self.view = RunView {
                    session: Some(session),
                    ..RunView::default()
                };
                self.focus = None;
                self.toggled.clear();
                self.hint = Some("no pipeline run in this session yet".into());
            }
        }
    }

    /// One event of the run going on here.
    fn event(&mut self, event: PipelineEvent, cx: &mut Cx<'_, Self>) {
        let v = &mut self.view;
        match event {
            PipelineEvent::Start {
                run,
                session,
                mode,
                resumed,
            } => {
                v.run = Some(run);
                v.session = Some(session);
                if !resumed {
                    v.requested = Some(mode);
                }
                v.phase = Phase::Running;
            }
            PipelineEvent::Classification { .. } => {}
            PipelineEvent::ModeSelected { mode } => {
                v.mode = Some(mode);
                plan(v, mode);
            }
            PipelineEvent::LayerStart { layer, node, .. } => {
                let p = v.pane_mut(layer);
                p.node = Some(node);
                p.status = LayerStatus::Running;
                p.error = None;
                p.duration_ms = None;
                if self.follow {
                    self.focus = Some(unit_of(layer));
                    self.scroll = 0;
                }
            }
            PipelineEvent::LayerChunk {
                layer,
                content,
                thinking,
                ..
            } => {
                let p = v.pane_mut(layer);
                // A layer a resume runs again starts over.
                if self.stale.remove(&layer) {
                    p.text.clear();
                    p.thinking.clear();
                    p.artifact = None;
                }
                if thinking {
                    p.thinking.push_str(&content);
                } else {
                    p.text.push_str(&content);
                }
            }
            PipelineEvent::LayerArtifact { layer, artifact } => {
                v.pane_mut(layer).artifact = Some(artifact);
            }
            PipelineEvent::LayerComplete {
                layer,
                state,
                error,
                resumed,
                duration_ms,
                ..
            } => {
                self.stale.remove(&layer);
                let p = v.pane_mut(layer);
                p.status = match state {
                    LayerState::Complete => LayerStatus::Done,
                    LayerState::Failed => LayerStatus::Failed,
                };
                p.error = error;
                p.resumed = resumed;
                p.duration_ms = Some(duration_ms);
            }
            PipelineEvent::Escalation { content } => {
                cx.notice(format!("escalating to ultra-deep: {content}"), Level::Warn);
                v.escalation = Some(content);
            }
            PipelineEvent::ParallelStart { .. } => {
                for l in Layer::SOLVERS {
                    v.pane_mut(l);
                }
            }
            PipelineEvent::FinalChunk { content } => {
                v.answer.get_or_insert_with(String::new).push_str(&content);
            }
            PipelineEvent::FinalComplete(fin) => {
                if let Some(m) = fin.mode {
                    v.mode = Some(m);
                }
                v.fin = Some(fin);
                if self.follow {
                    self.focus = Some(Unit::Final);
                    self.scroll = 0;
                }
            }
        }
    }

    /// The run going on here ended: show how, and reload the sessions (a new one may have
    /// been made).
    fn finished(&mut self, outcome: Result<Finished, Failure>, cx: &mut Cx<'_, Self>) {
        self.job = None;
        self.stale.clear();
        let v = &mut self.view;
        let session = match outcome {
            Ok(done) => {
                v.run = Some(done.run);
                v.session = Some(done.session);
                v.phase = Phase::Done;
                let conf = v
                    .fin
                    .as_ref()
                    .and_then(|f| f.confidence)
                    .map_or("unknown".to_string(), |c| format!("{c}%"));
                let escalated = if v.escalated() { " (escalated)" } else { "" };
                cx.notice(
                    format!("pipeline done{escalated} — confidence {conf}"),
                    Level::Info,
                );
                Some(done.session)
            }
            Err(f) => {
                if f.run.is_some() {
                    v.run = f.run;
                }
                for p in &mut v.layers {
                    if p.status == LayerStatus::Running {
                        if f.cancelled {
                            p.status = LayerStatus::Interrupted;
                        } else {
                            p.status = LayerStatus::Failed;
                            p.error = Some(f.error.clone());
                        }
                    }
                }
                v.phase = cx.run_failed("pipeline", &f, v.run.is_some());
                v.session
            }
        };
        self.looked_up = session.or(self.looked_up);
        cx.run_ended(session);
    }
}
