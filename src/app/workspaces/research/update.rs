//! What the news of the workspace's tasks does: a run read back from the store, the events
//! of a run going on here, and where it stopped.

use super::{Failure, Pane, Phase, Research, ResearchMsg, RunView};
use crate::app::state::Level;
use crate::app::workspaces::Cx;
use crate::engines::research::{ResearchEvent, ResearchState, Status};
use crate::store::SessionId;
use crate::views::research::Live;

impl Research {
    /// Applies one message from a task.
    pub(super) fn apply(&mut self, m: ResearchMsg, cx: &mut Cx<'_, Self>) {
        match m {
            ResearchMsg::Loaded { session, run } => self.loaded(session, run.map(|r| *r), cx),
            ResearchMsg::LoadFailed(e) => {
                self.loading = false;
                if self.view.phase == Phase::Loading {
                    self.view.phase = Phase::Empty;
                }
                cx.notice(
                    format!("cannot read the last research run: {e}"),
                    Level::Error,
                );
            }
            ResearchMsg::Event { seq, event } => {
                if seq == self.seq && self.running() {
                    self.event(event);
                }
            }
            ResearchMsg::Done { seq, outcome } => {
                if seq == self.seq && self.running() {
                    self.finished(outcome.map(|s| *s), cx);
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
        if self.running() || self.modal.is_some() || self.looked_up != Some(session) {
            return;
        }
        match run {
            Some(r) => {
                if r.run != self.view.run {
                    self.step = 0;
                    self.citation = 0;
                    self.scroll = 0;
                    self.source = None;
                }
                self.view = r;
                self.hint = None;
                if self.view.awaiting() {
                    cx.notice(
                        "this research run waits for your approval — A reviews the plan",
                        Level::Info,
                    );
                }
            }
            None => {
                self.view = RunView {
                    session: Some(session),
                    ..RunView::default()
                };
                self.step = 0;
                self.citation = 0;
                self.hint = Some("no research run in this session yet".into());
            }
        }
    }

    /// One event of the run going on here.
    fn event(&mut self, event: ResearchEvent) {
        let v = &mut self.view;
        match event {
            ResearchEvent::Start { run, session, .. } => {
                v.run = Some(run);
                v.session = Some(session);
                v.phase = Phase::Running;
            }
            ResearchEvent::Research { state, .. } => {
                // The stage that streamed has ended.
                v.live = None;
                v.question = state.user_query.clone();
                v.state = Some(*state);
                let steps = v.steps().len();
                if self.follow {
                    if let Some(i) = v.state.as_ref().and_then(ResearchState::pending_step) {
                        self.step = i;
                    } else if steps > 0 {
                        self.step = self.step.min(steps - 1);
                    }
                } else {
                    self.step = self.step.min(steps.saturating_sub(1));
                }
            }
            ResearchEvent::Delta {
                node,
                text,
                thinking,
            } => {
                let live = match &mut v.live {
                    Some(l) if l.node == node => l,
                    slot => slot.insert(Live {
                        node: node.to_string(),
                        ..Live::default()
                    }),
                };
                if thinking {
                    live.thinking.push_str(&text);
                } else {
                    live.text.push_str(&text);
                }
            }
        }
    }

    /// The run going on here stopped: at the gate (the modal opens), at its end, or with an
    /// error. The sessions are read again (a new one may have been made).
    fn finished(&mut self, outcome: Result<ResearchState, Failure>, cx: &mut Cx<'_, Self>) {
        self.job = None;
        let v = &mut self.view;
        v.live = None;
        let session = match outcome {
            Ok(st) => {
                v.run = Some(st.thread_id);
                v.session = Some(st.session_id);
                let session = st.session_id;
                v.phase = match st.status {
                    Status::AwaitingApproval => Phase::Interrupted,
                    Status::Failed => Phase::Failed(
                        st.error_message
                            .clone()
                            .or(st.end_reason.clone())
                            .unwrap_or_else(|| "the run failed".into()),
                    ),
                    _ => Phase::Done,
                };
                let status = st.status;
                let cited = st.citations.iter().filter(|c| c.cited).count();
                let total = st.citations.len();
                let why = st.end_reason.clone().unwrap_or_default();
                v.state = Some(st);
                match status {
                    Status::AwaitingApproval => {
                        self.open_modal();
                        cx.notice(
                            "the plan passed the audit and waits for you: a approves, r rejects, e edits",
                            Level::Info,
                        );
                    }
                    Status::Complete => {
                        self.focus = Pane::Report;
                        self.scroll = 0;
                        self.citation = 0;
                        cx.notice(
                            format!("research complete — {cited} of {total} source(s) cited"),
                            Level::Info,
                        );
                    }
                    _ => cx.notice(format!("research ended: {why}"), Level::Warn),
                }
                Some(session)
            }
            Err(f) => {
                if f.run.is_some() {
                    v.run = f.run;
                }
                v.phase = cx.run_failed("research", &f, v.run.is_some());
                v.session
            }
        };
        self.looked_up = session.or(self.looked_up);
        cx.run_ended(session);
    }
}
