//! The Verify workspace: a chain of steps with a verdict gutter, issues and patterns.
//!
//! `V` (from any workspace) verifies the thinking node selected in the Think graph step by
//! step; the result is read back from the store, so a fresh verification and the last one
//! stored for the session look the same. `f` starts a corrected branch at a step (default:
//! the first failing one): a human `disagree` checkpoint on the step with its suggested
//! correction, which reasons the step again.
//!
//! The state and the update logic live here; the engine tasks and the store reads in
//! `tasks`; what is drawn in `crate::views::verify`.

mod tasks;

use ratatui::Frame;
use ratatui::layout::Rect;

use tokio_util::sync::CancellationToken;

use super::{Cx, Job, Outbox, Spec, Workspace, WorkspaceId, failed};
use crate::app::action::Action;
use crate::app::form::{Answer, Form};
use crate::app::runtime::Services;
use crate::app::state::{Level, Slot, State};
use crate::app::update::Effect;
use crate::store::{NodeId, NodeType, RunId, SessionId};
use crate::views::ViewCx;
use crate::views::verify::{Progress, VerifyView};

pub use crate::views::verify::{HumanMark, StepView, Verification};
pub use tasks::{call_settings, load_run};

/// The workspace's id: its keymap section (`[verify]`) and `workspace_verify`.
pub const ID: WorkspaceId = "verify";

crate::workspace_actions! { VerifyAction for ID => {
    VerifyNode => ("verify_node", "Verify the selected thinking step by step", Anywhere),
    ForkAtError => ("fork_at_error", "Fork a corrected branch at this step", Own),
    NextError => ("next_error", "Jump to the next failing step", Own),
    PrevError => ("prev_error", "Jump to the previous failing step", Own),
} }

/// The background work the workspace can have under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// A verification of `steps` steps of the thinking node `node`.
    Verify { node: NodeId, steps: usize },
    /// A corrected branch reasoned at step `step`.
    Fork { step: usize },
}

/// What the workspace shows and remembers.
#[derive(Debug, Default)]
pub struct Verify {
    pub result: Option<Verification>,
    /// The selected step.
    pub selected: usize,
    /// Whether the selected step's detail popup is open.
    pub detail: bool,
    /// The verification or corrected branch under way.
    pub job: Option<Job<JobKind>>,
    /// Whether a stored verification is being read.
    pub loading: bool,
    /// Why nothing is shown (no run stored, or the last error).
    pub hint: Option<String>,
    /// The session whose last run was looked up, so entering again does not reload it.
    looked_up: Option<SessionId>,
}

/// News for the workspace from its tasks.
#[derive(Clone, Debug)]
pub enum VerifyMsg {
    /// A verification run read from the store (`None`: the session has none).
    Loaded {
        session: SessionId,
        result: Option<Box<Verification>>,
        /// Read right after a verification finished: select the first failing step and
        /// say how it went.
        fresh: bool,
    },
    /// Reading a stored verification failed.
    LoadFailed(String),
    /// The verification under way failed (or was cancelled).
    Failed(String),
    /// A corrected branch was stored for `step`.
    Forked {
        step: usize,
        branch: NodeId,
        session: SessionId,
        run: RunId,
    },
    ForkFailed(String),
}

/// Work for the runtime, carried out by `tasks::run`.
#[derive(Clone, Debug)]
pub enum VerifyEffect {
    /// Read a run of the session (`None`: the newest verification).
    Load {
        session: SessionId,
        run: Option<RunId>,
        fresh: bool,
    },
    Verify {
        node: NodeId,
        cancel: CancellationToken,
    },
    /// A `disagree` checkpoint with `correction` on the step node, reasoning a corrected
    /// branch.
    Fork {
        session: SessionId,
        run: RunId,
        step: usize,
        node: NodeId,
        correction: String,
    },
}

/// What a form this workspace opened is for.
#[derive(Clone, Debug, PartialEq)]
pub enum FormPurpose {
    /// The correction for a step without a suggested one.
    Correction { step: usize },
}

/// The thinking node `V` verifies: the selected node if it is a thinking node, else the
/// thinking node (with steps) of the selected node's turn, else the session's last one.
pub fn target_node(state: &State) -> Option<NodeId> {
    let slots = &state.loaded.slots;
    let has_steps = |n: &&Slot| n.kind == NodeType::Thinking && n.steps > 0;
    let anchor = state
        .graph
        .selected_node()
        .and_then(|id| state.loaded.index.get(&id).copied());
    let Some(anchor) = anchor.filter(|&a| a < slots.len()) else {
        return slots.iter().rev().find(has_steps).map(|n| n.id);
    };
    if slots[anchor].kind == NodeType::Thinking {
        return Some(slots[anchor].id);
    }
    let turn = &slots[state.loaded.turn_of(anchor)];
    turn.iter()
        .rev()
        .find(has_steps)
        .or_else(|| turn.iter().rev().find(|n| n.kind == NodeType::Thinking))
        .map(|n| n.id)
}

impl Verify {
    fn verifying(&self) -> bool {
        matches!(
            self.job,
            Some(Job {
                kind: JobKind::Verify { .. },
                ..
            })
        )
    }

    fn forking(&self) -> bool {
        matches!(
            self.job,
            Some(Job {
                kind: JobKind::Fork { .. },
                ..
            })
        )
    }

    /// Ends the job of the kind `done` says, leaving one of another kind running.
    fn finish(&mut self, done: fn(&JobKind) -> bool) {
        if self.job.as_ref().is_some_and(|j| done(&j.kind)) {
            self.job = None;
        }
    }

    /// What the view says the workspace is busy with.
    fn progress(&self) -> Progress {
        match self.job.as_ref().map(|j| j.kind) {
            Some(JobKind::Verify { steps, .. }) => Progress::Verifying { steps },
            Some(JobKind::Fork { step }) => Progress::Forking { step },
            None if self.loading => Progress::Loading,
            None => Progress::Idle,
        }
    }

    fn steps(&self) -> usize {
        self.result.as_ref().map_or(0, |r| r.steps.len())
    }

    fn move_to(&mut self, i: usize) {
        self.selected = i.min(self.steps().saturating_sub(1));
    }

    /// Starts verifying the thinking node picked by [`target_node`] and shows the workspace.
    fn verify_node(&mut self, cx: &mut Cx<'_, Self>) {
        if self.verifying() {
            cx.notice("a verification is already running", Level::Warn);
            return;
        }
        let Some(node) = target_node(cx.state) else {
            cx.notice(
                "no thinking node to verify: select one in the Think graph",
                Level::Info,
            );
            return;
        };
        let steps = cx
            .state
            .loaded
            .index
            .get(&node)
            .map_or(0, |&i| cx.state.loaded.slots[i].steps as usize);
        if steps == 0 {
            cx.notice(
                format!(
                    "thinking node {} has no ThinkGraph steps to verify",
                    node.short()
                ),
                Level::Warn,
            );
            return;
        }
        let job = Job::new(JobKind::Verify { node, steps }, "verification");
        let cancel = job.cancel.clone();
        self.job = Some(job);
        self.detail = false;
        self.looked_up = cx.state.loaded.id();
        cx.notice(
            format!("verifying {steps} steps — one judge call per step"),
            Level::Info,
        );
        cx.show(ID);
        cx.run(VerifyEffect::Verify { node, cancel });
    }

    /// Starts a corrected branch at the selected step (the first failing one when no step
    /// was chosen yet).
    fn fork_at_error(&mut self, cx: &mut Cx<'_, Self>) {
        if self.forking() {
            cx.notice("a corrected branch is already being written", Level::Warn);
            return;
        }
        let Some(r) = &self.result else {
            cx.notice("verify a thinking node first (V)", Level::Info);
            return;
        };
        let i = self.selected;
        let Some(step) = r.steps.get(i) else {
            return;
        };
        match step.correction.clone() {
            Some(correction) => {
                let (session, run, node) = (r.session, r.run, step.node);
                self.start_fork(cx, session, run, i, node, correction);
            }
            None => cx.open_form(Form::text(
                format!("Corrected branch at step {i}"),
                Cx::<Self>::purpose(FormPurpose::Correction { step: i }),
                "What should this step say instead?",
            )),
        }
    }

    fn start_fork(
        &mut self,
        cx: &mut Cx<'_, Self>,
        session: SessionId,
        run: RunId,
        step: usize,
        node: NodeId,
        correction: String,
    ) {
        self.job = Some(Job::new(JobKind::Fork { step }, "corrected branch"));
        cx.notice(
            format!("writing a corrected branch from step {step}…"),
            Level::Info,
        );
        cx.run(VerifyEffect::Fork {
            session,
            run,
            step,
            node,
            correction,
        });
    }

    /// Moves to the next (or previous) failing step, or says there is none that way.
    fn jump_to_failing(&mut self, forward: bool, cx: &mut Cx<'_, Self>) {
        let sel = self.selected;
        let failing = self
            .result
            .as_ref()
            .map(Verification::failing)
            .unwrap_or_default();
        let target = if forward {
            failing.iter().copied().find(|&i| i > sel)
        } else {
            failing.iter().rev().copied().find(|&i| i < sel)
        };
        match target {
            Some(i) => self.move_to(i),
            None if failing.is_empty() => cx.notice("no failing steps", Level::Info),
            None => cx.notice("no more failing steps that way", Level::Info),
        }
    }

    fn loaded(
        &mut self,
        session: SessionId,
        result: Option<Box<Verification>>,
        fresh: bool,
        cx: &mut Cx<'_, Self>,
    ) {
        self.loading = false;
        if fresh {
            self.finish(|k| matches!(k, JobKind::Verify { .. }));
        }
        let Some(r) = result else {
            // Another session's verification no longer applies.
            if self.result.as_ref().is_some_and(|r| r.session != session) {
                self.result = None;
            }
            if self.result.is_none() {
                self.hint = Some("no verification stored for this session".into());
            }
            return;
        };
        let keep = self.result.as_ref().is_some_and(|old| old.run == r.run);
        if fresh {
            let first = r.first_error;
            let verdict = if first >= 0 {
                format!("first error at step {first} — f forks a corrected branch there")
            } else {
                "no incorrect step".to_string()
            };
            cx.notice(
                format!("verified: score {:.2}, {verdict}", r.score),
                if r.valid { Level::Info } else { Level::Warn },
            );
        }
        if !keep {
            self.selected = usize::try_from(r.first_error)
                .unwrap_or(0)
                .min(r.steps.len());
            self.detail = false;
        }
        self.result = Some(*r);
        self.hint = None;
        self.move_to(self.selected);
        if fresh && cx.state.loaded.id() == Some(session) {
            cx.effect(Effect::LoadSession(session));
        }
    }
}

impl Workspace for Verify {
    const SPEC: &'static Spec = &Spec {
        id: ID,
        title: "Verify",
        help_title: "Verify workspace",
        go: "Go to the Verify workspace",
        section: true,
        actions: VerifyAction::SPECS,
    };
    type Msg = VerifyMsg;
    type Effect = VerifyEffect;
    type Form = FormPurpose;

    fn on_enter(&mut self, cx: &mut Cx<'_, Self>) {
        let Some(session) = cx.state.loaded.id() else {
            if self.result.is_none() {
                self.hint = Some("no session open".into());
            }
            return;
        };
        let showing = self.result.as_ref().map(|r| r.session);
        if showing == Some(session)
            || self.looked_up == Some(session)
            || self.loading
            || self.job.is_some()
        {
            return;
        }
        self.looked_up = Some(session);
        self.loading = true;
        cx.run(VerifyEffect::Load {
            session,
            run: None,
            fresh: false,
        });
    }

    fn on_action(&mut self, a: &Action, cx: &mut Cx<'_, Self>) -> bool {
        let own = VerifyAction::of(a);
        if own == Some(VerifyAction::VerifyNode) {
            self.verify_node(cx);
            return true;
        }
        if !cx.shown() {
            return false;
        }
        let n = self.steps();
        let sel = self.selected;
        match (a, own) {
            (_, Some(VerifyAction::NextError)) => self.jump_to_failing(true, cx),
            (_, Some(VerifyAction::PrevError)) => self.jump_to_failing(false, cx),
            (_, Some(VerifyAction::ForkAtError)) => self.fork_at_error(cx),
            (Action::MoveDown, _) => self.move_to(sel + 1),
            (Action::MoveUp, _) => self.move_to(sel.saturating_sub(1)),
            (Action::PageDown, _) => self.move_to(sel + 5),
            (Action::PageUp, _) => self.move_to(sel.saturating_sub(5)),
            (Action::Top, _) => self.move_to(0),
            (Action::Bottom, _) => self.move_to(n.saturating_sub(1)),
            (Action::Select, _) => self.detail = !self.detail && n > 0,
            (Action::CancelRun, _) if self.detail => self.detail = false,
            (Action::CancelRun, _) if self.verifying() => {
                if let Some(job) = &self.job {
                    job.cancel.cancel();
                    let what = format!("cancelling the {}", job.what);
                    cx.notice(what, Level::Info);
                }
            }
            _ => return false,
        }
        true
    }

    fn on_msg(&mut self, m: VerifyMsg, cx: &mut Cx<'_, Self>) {
        match m {
            VerifyMsg::Loaded {
                session,
                result,
                fresh,
            } => self.loaded(session, result, fresh, cx),
            VerifyMsg::LoadFailed(e) => {
                self.loading = false;
                failed(cx, "verification", e);
            }
            VerifyMsg::Failed(e) => {
                self.finish(|k| matches!(k, JobKind::Verify { .. }));
                failed(cx, "verification", e);
            }
            VerifyMsg::Forked {
                step,
                branch,
                session,
                run,
            } => {
                self.finish(|k| matches!(k, JobKind::Fork { .. }));
                cx.notice(
                    format!(
                        "corrected branch from step {step} stored as node {} (refines the step; 1 shows it in Think)",
                        branch.short()
                    ),
                    Level::Info,
                );
                cx.run(VerifyEffect::Load {
                    session,
                    run: Some(run),
                    fresh: false,
                });
                if cx.state.loaded.id() == Some(session) {
                    cx.effect(Effect::LoadSession(session));
                }
            }
            VerifyMsg::ForkFailed(e) => {
                self.finish(|k| matches!(k, JobKind::Fork { .. }));
                failed(cx, "corrected branch", e);
            }
        }
    }

    fn on_form(&mut self, form: FormPurpose, answer: Answer, cx: &mut Cx<'_, Self>) {
        match form {
            FormPurpose::Correction { step } => {
                let Some(r) = &self.result else {
                    return;
                };
                let Some(s) = r.steps.get(step) else {
                    return;
                };
                if answer.text.trim().is_empty() {
                    return;
                }
                let (session, run, node) = (r.session, r.run, s.node);
                self.start_fork(cx, session, run, step, node, answer.text);
            }
        }
    }

    fn run(effect: VerifyEffect, svc: &Services, out: Outbox<VerifyMsg>) {
        tasks::run(effect, svc, out);
    }

    fn job(&self) -> Option<String> {
        self.job.as_ref().map(|j| match j.kind {
            JobKind::Verify { .. } => "verifying…".to_string(),
            JobKind::Fork { .. } => "corrected branch running…".to_string(),
        })
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, _state: &mut State, v: &ViewCx<'_>) {
        let view = VerifyView {
            result: self.result.as_ref(),
            selected: self.selected,
            detail: self.detail,
            progress: self.progress(),
            hint: self.hint.as_deref(),
        };
        crate::views::verify::render(f, area, &view, v);
    }
}

#[cfg(test)]
mod tests;
