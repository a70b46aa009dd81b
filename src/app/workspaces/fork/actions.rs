//! The Fork workspace's side of the keyboard: its actions (forking from the Think graph,
//! the checkpoint menu, steering the branches, moving between columns) and the forms they
//! open, with what a submitted form starts.

use super::{
    Column, Ctx, Fork, ForkAction, ForkEffect, FormPurpose, ID, JobKind, SteerView, Work, update,
};
use crate::app::action::Action;
use crate::app::form::{Answer, Form};
use crate::app::graph::RowKey;
use crate::app::state::{Level, Overlay};
use crate::engines::fork::{BranchResult, ForkRequest, ForkStyle, SteerAction, Verdict};
use crate::engines::thinkgraph::Step;
use crate::store::{NodeId, RunId, SessionId};

/// The checkpoint menu's verdicts, in the order offered.
const VERDICTS: [Verdict; 3] = [Verdict::Verified, Verdict::Questionable, Verdict::Disagree];

fn style_names() -> Vec<String> {
    ForkStyle::ALL
        .iter()
        .map(|s| s.as_str().to_string())
        .collect()
}

/// A pick of 2–4 styles, all ticked.
fn styles_form(title: &str, purpose: FormPurpose) -> Form {
    Form::pick_many(
        title,
        Ctx::purpose(purpose),
        style_names(),
        vec![true; ForkStyle::ALL.len()],
        2,
    )
}

fn optional_text(title: String, purpose: FormPurpose, label: &str) -> Form {
    Form::choose(title, Ctx::purpose(purpose), Vec::new()).with_text(label, false, 2_000)
}

/// The styles form (titled `title`) that forks `question` in `session`; submitted, the fork
/// starts in this workspace. Diff's `fork_step` opens it on a step's text.
pub fn question_form(title: &str, question: String, session: Option<SessionId>) -> Form {
    styles_form(title, FormPurpose::ForkQuestion { question, session })
}

/// The question (prefilled with `question`) and the styles of a new fork or debate.
fn new_fork_form(debate: bool, question: &str) -> Form {
    let title = if debate {
        "Debate: question and styles"
    } else {
        "New fork: question and styles"
    };
    let mut f = styles_form(title, FormPurpose::NewFork { debate })
        .with_text("question", true, 2_000)
        .with_initial_text(question);
    f.on_text = true;
    f
}

fn picked_styles(answer: &Answer) -> Vec<ForkStyle> {
    answer
        .checked
        .iter()
        .filter_map(|i| ForkStyle::ALL.get(*i).copied())
        .collect()
}

fn text(answer: &Answer) -> Option<String> {
    Some(answer.text.clone()).filter(|t| !t.is_empty())
}

/// Moves a scroll offset by `d` lines, within `u16`.
fn scrolled(value: u16, d: i32) -> u16 {
    (i32::from(value) + d).clamp(0, i32::from(u16::MAX)) as u16
}

impl Fork {
    /// The node a checkpoint applies to: the focused branch here, else the graph's selection.
    fn checkpoint_target(&self, cx: &Ctx<'_>) -> Option<NodeId> {
        if cx.shown() {
            self.focused().and_then(Column::node)
        } else {
            cx.state.graph.selected_node()
        }
    }

    /// Opens the checkpoint menu on the selected node.
    pub(super) fn open_checkpoint(&self, cx: &mut Ctx<'_>) {
        let Some(node) = self.checkpoint_target(cx) else {
            let msg = if cx.shown() {
                "no finished branch in focus to checkpoint"
            } else {
                "select a node in the graph first"
            };
            cx.notice(msg, Level::Info);
            return;
        };
        let form = Form::choose(
            "Checkpoint: your verdict on this node",
            Ctx::purpose(FormPurpose::Checkpoint(node)),
            VERDICTS
                .iter()
                .map(|v| match v {
                    Verdict::Verified => "verified".to_string(),
                    Verdict::Questionable => "questionable".to_string(),
                    Verdict::Disagree => "disagree (a correction reasons a new branch)".to_string(),
                })
                .collect(),
        )
        .with_text("correction", false, 5_000);
        cx.open_form(form);
    }

    /// Forks what is selected in the Think graph: a thinking step (or decision) forks inside
    /// the trace, anything else forks its turn's question. Here, a new fork of the question.
    pub(super) fn fork_here(&self, cx: &mut Ctx<'_>) {
        if cx.shown() {
            cx.open_form(new_fork_form(false, &self.question));
            return;
        }
        let state = &*cx.state;
        let rows = state.graph.rows();
        let step = match state.graph.selected_key() {
            Some(RowKey::Step(node, index)) => Some((node, index)),
            Some(RowKey::Decision(node, _)) => rows[..state.graph.selected.min(rows.len())]
                .iter()
                .rev()
                .find_map(|r| match r.key {
                    RowKey::Step(n, i) if n == node => Some((n, i)),
                    _ => None,
                }),
            _ => None,
        };
        if let Some((thinking, index)) = step {
            // The step's position among the node's steps (fork_from_step indexes meta.steps).
            let pos = state
                .loaded
                .node(thinking)
                .and_then(|n| Step::of(n).iter().position(|s| s.index == index))
                .unwrap_or(index as usize);
            let form = styles_form(
                &format!("Fork from step {}: styles", pos + 1),
                FormPurpose::ForkStep {
                    thinking,
                    step: pos,
                },
            );
            cx.open_form(form);
            return;
        }
        let question = state.shown.question.trim().to_string();
        if question.is_empty() {
            cx.open_form(new_fork_form(false, ""));
            return;
        }
        let session = state.loaded.id();
        let form = styles_form(
            "Fork this question: styles",
            FormPurpose::ForkQuestion { question, session },
        );
        cx.open_form(form);
    }

    fn marked_styles(&self) -> Vec<ForkStyle> {
        self.columns
            .iter()
            .filter(|c| c.marked)
            .map(|c| c.style)
            .collect()
    }

    /// The run to steer, or a notice why there is none.
    fn steerable(&self, cx: &mut Ctx<'_>) -> Option<RunId> {
        if self.busy.is_some() {
            cx.notice(
                "wait for the running job (or Esc to cancel it)",
                Level::Warn,
            );
            return None;
        }
        if self.run.is_none() {
            cx.notice(
                "no finished fork to steer — N forks a question",
                Level::Info,
            );
        }
        self.run
    }

    /// The focused branch's style when it has a result to steer.
    fn focused_ok_style(&self, cx: &mut Ctx<'_>) -> Option<ForkStyle> {
        match self.focused() {
            Some(c) if c.result.as_ref().is_some_and(BranchResult::ok) => Some(c.style),
            Some(c) => {
                cx.notice(
                    format!("the {} branch has no result to steer", c.style),
                    Level::Info,
                );
                None
            }
            None => None,
        }
    }

    /// One of the workspace's own actions, while it is shown.
    pub(super) fn own_action(&mut self, a: ForkAction, cx: &mut Ctx<'_>) {
        let n = self.columns.len();
        match a {
            // Taken wherever the user is, before this is called.
            ForkAction::ForkHere | ForkAction::Checkpoint => {}
            ForkAction::NewFork => cx.open_form(new_fork_form(false, &self.question)),
            ForkAction::Debate => {
                if self.question.is_empty() || n < 2 {
                    cx.open_form(new_fork_form(true, ""));
                } else {
                    let req = ForkRequest {
                        session: self.session,
                        query: self.question.clone(),
                        styles: self.columns.iter().map(|c| c.style).collect(),
                        guidance: Vec::new(),
                    };
                    self.begin_fork(req, true, cx);
                }
            }
            ForkAction::ExpandBranch => {
                if self.steerable(cx).is_some()
                    && let Some(style) = self.focused_ok_style(cx)
                {
                    cx.open_form(optional_text(
                        format!("Expand the {style} branch"),
                        FormPurpose::Expand(style),
                        "direction",
                    ));
                }
            }
            ForkAction::ToggleMark => {
                if let Some(c) = self.columns.get_mut(self.focus) {
                    c.marked = !c.marked;
                }
            }
            ForkAction::MergeBranches => {
                if self.steerable(cx).is_some() {
                    let marked = self.marked_styles();
                    let form = if marked.len() >= 2 {
                        let names: Vec<&str> = marked.iter().map(|s| s.as_str()).collect();
                        optional_text(
                            format!("Merge {}", names.join(" + ")),
                            FormPurpose::Merge(marked),
                            "focus area",
                        )
                    } else {
                        let names: Vec<String> =
                            self.columns.iter().map(|c| c.style.to_string()).collect();
                        let k = names.len();
                        Form::pick_many(
                            "Merge: mark two or more branches",
                            Ctx::purpose(FormPurpose::MergePick),
                            names,
                            vec![false; k],
                            2,
                        )
                        .with_text("focus area", false, 2_000)
                    };
                    cx.open_form(form);
                }
            }
            ForkAction::ChallengeBranch => {
                if self.steerable(cx).is_some()
                    && let Some(style) = self.focused_ok_style(cx)
                {
                    cx.open_form(Form::text(
                        format!("Challenge the {style} branch"),
                        Ctx::purpose(FormPurpose::Challenge(style)),
                        "counter-argument",
                    ));
                }
            }
            ForkAction::Refork => {
                if self.steerable(cx).is_some() {
                    cx.open_form(Form::text(
                        "Refork every branch with new context",
                        Ctx::purpose(FormPurpose::Refork),
                        "new context",
                    ));
                }
            }
            ForkAction::NextColumn => self.next_column(),
            ForkAction::PrevColumn => self.focus = self.focus.saturating_sub(1),
        }
    }

    fn next_column(&mut self) {
        if !self.columns.is_empty() {
            self.focus = (self.focus + 1).min(self.columns.len() - 1);
        }
    }

    /// A shared action while the workspace is shown; true when it was taken here.
    pub(super) fn shared_action(&mut self, a: &Action, cx: &mut Ctx<'_>) -> bool {
        match a {
            Action::CancelRun if self.busy.is_some() && cx.state.overlay.is_none() => {
                if let Some(b) = &self.busy {
                    b.job.cancel.cancel();
                }
                cx.notice("cancelling — what arrived is kept", Level::Info);
            }
            Action::Expand => self.next_column(),
            Action::Collapse => self.focus = self.focus.saturating_sub(1),
            Action::MoveUp | Action::MoveDown | Action::PageUp | Action::PageDown => {
                let d: i32 = match a {
                    Action::MoveUp => -1,
                    Action::MoveDown => 1,
                    Action::PageUp => -10,
                    _ => 10,
                };
                match self.columns.get_mut(self.focus) {
                    Some(c) => c.scroll = scrolled(c.scroll, d),
                    None => self.panel_scroll = scrolled(self.panel_scroll, d),
                }
            }
            Action::Top => {
                if let Some(c) = self.columns.get_mut(self.focus) {
                    c.scroll = 0;
                }
            }
            Action::Bottom => {
                if let Some(c) = self.columns.get_mut(self.focus) {
                    c.scroll = u16::MAX / 2;
                }
            }
            Action::Select => match self.focused().and_then(Column::node) {
                Some(node) if cx.state.loaded.node(node).is_some() => {
                    cx.state.overlay = Some(Overlay::NodeDetail { node, scroll: 0 });
                }
                Some(_) => cx.notice("the branch's session is loading", Level::Info),
                None => cx.notice("no finished branch in focus", Level::Info),
            },
            _ => return false,
        }
        true
    }

    /// Starts a steering action on the run in view; a refork redraws the columns.
    fn start_steer(&mut self, action: SteerAction, cx: &mut Ctx<'_>) {
        let Some(run) = self.steerable(cx) else {
            return;
        };
        let label = update::steer_label(&action);
        let refork = matches!(action, SteerAction::Refork { .. });
        let kind = if refork {
            JobKind::Refork
        } else {
            JobKind::Steer
        };
        if self.start(kind, label.clone(), Work::Steer(run, action), cx) {
            if refork {
                let q = self.question.clone();
                let styles: Vec<ForkStyle> = self.columns.iter().map(|c| c.style).collect();
                let steers = std::mem::take(&mut self.steers);
                self.reset(q, "refork", &styles);
                self.steers = steers;
            }
            self.steers.push(SteerView {
                label,
                running: true,
                ..Default::default()
            });
        }
    }

    /// A checkpoint verdict: a disagreement with a correction reasons a new branch (a job),
    /// anything else is recorded as it is.
    fn checkpoint(&mut self, node: NodeId, answer: &Answer, cx: &mut Ctx<'_>) {
        let Some(verdict) = answer.choice.and_then(|i| VERDICTS.get(i).copied()) else {
            return;
        };
        let correction = text(answer);
        if verdict == Verdict::Disagree && correction.is_some() {
            let what = "checkpoint: reasoning the corrected branch".to_string();
            let work = Work::Checkpoint {
                node,
                verdict,
                correction,
            };
            if self.start(JobKind::Checkpoint, what, work, cx) {
                self.steers.push(SteerView {
                    label: "checkpoint disagree → corrected branch".into(),
                    running: true,
                    ..Default::default()
                });
            }
        } else {
            cx.run(ForkEffect::Verdict {
                node,
                verdict,
                correction,
            });
        }
    }

    /// Applies a submitted form.
    pub(super) fn submit(&mut self, p: FormPurpose, answer: Answer, cx: &mut Ctx<'_>) {
        match p {
            FormPurpose::NewFork { debate } => {
                let req = ForkRequest {
                    session: cx.state.loaded.id(),
                    query: answer.text.clone(),
                    styles: picked_styles(&answer),
                    guidance: Vec::new(),
                };
                self.begin_fork(req, debate, cx);
            }
            FormPurpose::ForkQuestion { question, session } => {
                let req = ForkRequest {
                    session,
                    query: question,
                    styles: picked_styles(&answer),
                    guidance: Vec::new(),
                };
                self.begin_fork(req, false, cx);
            }
            FormPurpose::ForkStep { thinking, step } => {
                let styles = picked_styles(&answer);
                let what = format!("forking from step {} {} ways", step + 1, styles.len());
                let work = Work::FromStep {
                    thinking,
                    step,
                    styles: styles.clone(),
                };
                if self.start(JobKind::Fork, what, work, cx) {
                    let question = cx.state.shown.question.clone();
                    self.reset(question, "fork from step", &styles);
                    self.session = cx.state.loaded.id();
                    cx.state.workspace = ID;
                }
            }
            FormPurpose::Expand(style) => self.start_steer(
                SteerAction::Expand {
                    style,
                    direction: text(&answer),
                },
                cx,
            ),
            FormPurpose::Merge(styles) => self.start_steer(
                SteerAction::Merge {
                    styles,
                    focus_area: text(&answer),
                },
                cx,
            ),
            FormPurpose::MergePick => {
                // The branches ticked in the form.
                let styles = answer
                    .checked
                    .iter()
                    .filter_map(|i| self.columns.get(*i).map(|c| c.style))
                    .collect();
                self.start_steer(
                    SteerAction::Merge {
                        styles,
                        focus_area: text(&answer),
                    },
                    cx,
                );
            }
            FormPurpose::Challenge(style) => self.start_steer(
                SteerAction::Challenge {
                    style,
                    challenge: answer.text.clone(),
                },
                cx,
            ),
            FormPurpose::Refork => self.start_steer(
                SteerAction::Refork {
                    new_context: answer.text.clone(),
                },
                cx,
            ),
            FormPurpose::Checkpoint(node) => self.checkpoint(node, &answer, cx),
        }
    }
}
