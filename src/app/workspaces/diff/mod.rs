//! The Diff workspace: where two lines of reasoning part, step by step. `=` (`diff_mark`)
//! marks the node selected wherever the user is — a branch in Fork, a layer in Pipeline, a
//! node in the Think graph — as A; marking a second node as B opens the workspace and starts
//! the diff. Rows are aligned pairs labelled same / differs / contradicts / only A / only B;
//! `n`/`N` jump between differences, `f` forks the selected step through the Fork
//! workspace, `m` merges A and B into claims that name their source steps, which light up
//! in both columns as the claims are moved through.
//!
//! `mod.rs` holds the workspace and what its keys do; `tasks.rs` runs the engine.

mod tasks;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Cx, Job, Outbox, Spec, Workspace, WorkspaceId};
use crate::app::action::Action;
use crate::app::runtime::Services;
use crate::app::state::{Level, State};
use crate::engines::diff::{Diff, Merged};
use crate::views::diff::{DiffView, step_text};
use crate::views::{JobPhase, ViewCx};

pub use self::tasks::{DiffEffect, DiffMsg};
pub use crate::views::Picked;
pub use crate::views::diff::{Column, Focus};

/// The workspace's id: its keymap section `[diff]` and its `workspace_diff` action.
pub const ID: WorkspaceId = "diff";

crate::workspace_actions! { DiffAction for ID => {
    Mark => ("diff_mark", "Mark the selected node to diff (A, then B)", Anywhere),
    NextDifference => ("next_difference", "Next row that differs", Own),
    PrevDifference => ("prev_difference", "Previous row that differs", Own),
    Merge => ("merge_diff", "Merge A and B into claims naming their steps", Own),
    ForkStep => ("fork_step", "Fork from the selected step's text", Own),
} }

/// What the job under way is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    Diff,
    Merge,
}

/// The Diff workspace.
#[derive(Debug, Default)]
pub struct DiffWs {
    /// A node marked as A, waiting for a second.
    pub marked: Option<Picked>,
    /// The two nodes diffed.
    pub pair: Option<(Picked, Picked)>,
    pub diff: Option<Diff>,
    pub phase: JobPhase,
    /// The model labels pair `done + 1` of `total`.
    pub progress: Option<(usize, usize)>,
    /// The selected row, and the column whose step `fork_step` takes.
    pub row: usize,
    pub column: Column,
    /// The first row drawn, as last drawn.
    pub top: usize,
    pub focus: Focus,
    pub merge: JobPhase,
    pub merged: Option<Merged>,
    /// The selected claim.
    pub claim: usize,
    /// Which diff the messages belong to; older ones' are dropped.
    seq: u64,
    job: Option<Job<JobKind>>,
}

type Ctx<'a> = Cx<'a, DiffWs>;

impl Workspace for DiffWs {
    const SPEC: &'static Spec = &Spec {
        id: ID,
        title: "Diff",
        help_title: "Diff workspace",
        go: "Go to the Diff workspace",
        section: true,
        actions: DiffAction::SPECS,
    };
    type Msg = DiffMsg;
    type Effect = DiffEffect;
    type Form = ();

    fn on_action(&mut self, a: &Action, cx: &mut Ctx<'_>) -> bool {
        let own = DiffAction::of(a);
        if own == Some(DiffAction::Mark) {
            self.mark(cx);
            return true;
        }
        cx.takes(own.is_some()) && self.action(a, own, cx)
    }

    fn on_msg(&mut self, m: DiffMsg, cx: &mut Ctx<'_>) {
        self.apply(m, cx);
    }

    fn run(effect: DiffEffect, svc: &Services, out: Outbox<DiffMsg>) {
        tasks::run(effect, svc, out);
    }

    fn job(&self) -> Option<String> {
        self.job.as_ref().map(|j| match (j.kind, self.progress) {
            (JobKind::Diff, Some((done, total))) => {
                format!("diff: labelling {} of {total}…", done + 1)
            }
            (JobKind::Diff, None) => "diff: aligning…".into(),
            (JobKind::Merge, _) => "merge running…".into(),
        })
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, _state: &mut State, v: &ViewCx<'_>) {
        self.top = crate::views::diff::first_row(&self.view_model(), area);
        crate::views::diff::render(f, area, &self.view_model(), v);
    }
}

impl DiffWs {
    /// Whether a diff or merge is going on.
    pub fn running(&self) -> bool {
        self.job.is_some()
    }

    fn view_model(&self) -> DiffView<'_> {
        DiffView {
            marked: self.marked.as_ref(),
            pair: self.pair.as_ref().map(|(a, b)| (a, b)),
            diff: self.diff.as_ref(),
            phase: &self.phase,
            progress: self.progress,
            row: self.row,
            column: self.column,
            top: self.top,
            focus: self.focus,
            merge: &self.merge,
            merged: self.merged.as_ref(),
            claim: self.claim,
        }
    }

    /// Marks the node selected in the workspace on screen: as A, or as B, which starts the
    /// diff; the same node again unmarks it.
    fn mark(&mut self, cx: &mut Ctx<'_>) {
        let Some(p) = cx.picked().cloned() else {
            cx.notice(
                "nothing to mark here: select a node in Think or Sessions, a branch in Fork or a layer in Pipeline",
                Level::Info,
            );
            return;
        };
        match self.marked.take() {
            None => {
                cx.notice(
                    format!("marked A: {} — mark another node to diff", short(&p)),
                    Level::Info,
                );
                self.marked = Some(p);
            }
            Some(a) if a.node == p.node => {
                cx.notice(format!("unmarked A: {}", short(&a)), Level::Info);
            }
            Some(a) => {
                self.start(a, p, cx);
                if !cx.shown() {
                    cx.show(ID);
                }
            }
        }
    }

    /// Diffs `a` and `b`, dropping whatever was shown (and stopping what ran).
    fn start(&mut self, a: Picked, b: Picked, cx: &mut Ctx<'_>) {
        if let Some(j) = self.job.take() {
            j.cancel.cancel();
        }
        self.seq += 1;
        let job = Job::new(JobKind::Diff, "diff");
        let cancel = job.cancel.clone();
        self.job = Some(job);
        cx.notice(
            format!("diffing A {} with B {}…", short(&a), short(&b)),
            Level::Info,
        );
        cx.run(DiffEffect::Diff {
            seq: self.seq,
            a: a.node,
            b: b.node,
            cancel,
        });
        *self = DiffWs {
            pair: Some((a, b)),
            phase: JobPhase::Running,
            seq: self.seq,
            job: self.job.take(),
            ..DiffWs::default()
        };
    }

    /// A bound action while the workspace is shown; true when it was handled here.
    fn action(&mut self, a: &Action, own: Option<DiffAction>, cx: &mut Ctx<'_>) -> bool {
        if let Some(own) = own {
            match own {
                DiffAction::Mark => self.mark(cx),
                DiffAction::NextDifference => self.jump(true, cx),
                DiffAction::PrevDifference => self.jump(false, cx),
                DiffAction::Merge => self.start_merge(cx),
                DiffAction::ForkStep => self.fork_step(cx),
            }
            return true;
        }
        let rows = self.diff.as_ref().map_or(0, |d| d.pairs.len());
        let claims = self.merged.as_ref().map_or(0, |m| m.claims.len());
        let by =
            |at: usize, d: isize, n: usize| at.saturating_add_signed(d).min(n.saturating_sub(1));
        let step = |me: &mut Self, d: isize| match me.focus {
            Focus::Rows => me.row = by(me.row, d, rows),
            Focus::Claims => me.claim = by(me.claim, d, claims),
        };
        match a {
            Action::MoveDown => step(self, 1),
            Action::MoveUp => step(self, -1),
            Action::PageDown => step(self, 10),
            Action::PageUp => step(self, -10),
            Action::Top => step(self, isize::MIN),
            Action::Bottom => step(self, isize::MAX),
            Action::Expand => self.column = Column::B,
            Action::Collapse => self.column = Column::A,
            Action::FocusNext | Action::FocusPrev => {
                if claims > 0 {
                    self.focus = match self.focus {
                        Focus::Rows => Focus::Claims,
                        Focus::Claims => Focus::Rows,
                    };
                } else {
                    cx.notice("no claims yet: merge A and B first", Level::Info);
                }
            }
            // Enter means nothing here; it must not open another workspace's selection.
            Action::Select => {}
            Action::CancelRun if cx.state.overlay.is_none() => {
                let Some(job) = &self.job else {
                    return false;
                };
                job.cancel.cancel();
                cx.notice(format!("cancelling the {}", job.what), Level::Info);
            }
            _ => return false,
        }
        true
    }

    /// Selects the next (or previous) row whose label is not `same`.
    fn jump(&mut self, forward: bool, cx: &mut Ctx<'_>) {
        let Some(d) = &self.diff else {
            cx.notice("no diff yet", Level::Info);
            return;
        };
        let differs = |i: &usize| d.pairs[*i].label.is_difference();
        let found = if forward {
            (self.row + 1..d.pairs.len()).find(differs)
        } else {
            (0..self.row.min(d.pairs.len())).rev().find(differs)
        };
        match found {
            Some(i) => {
                self.row = i;
                self.focus = Focus::Rows;
            }
            None => cx.notice(
                if forward {
                    "no more differences below"
                } else {
                    "no more differences above"
                },
                Level::Info,
            ),
        }
    }

    /// Merges A and B into claims.
    fn start_merge(&mut self, cx: &mut Ctx<'_>) {
        if let Some(j) = &self.job {
            cx.notice(
                format!("the {} is running; Esc cancels it", j.what),
                Level::Warn,
            );
            return;
        }
        let (Some(d), Some(_)) = (&self.diff, &self.pair) else {
            cx.notice("no diff to merge yet: mark two nodes first", Level::Info);
            return;
        };
        let (a, b) = (d.a.node, d.b.node);
        let job = Job::new(JobKind::Merge, "merge");
        let cancel = job.cancel.clone();
        self.job = Some(job);
        self.merge = JobPhase::Running;
        self.merged = None;
        self.claim = 0;
        cx.run(DiffEffect::Merge {
            seq: self.seq,
            a,
            b,
            cancel,
        });
        cx.notice("merging A and B into claims…", Level::Info);
    }

    /// Opens the Fork workspace's styles form on the selected step's text, asked in its
    /// node's session.
    fn fork_step(&mut self, cx: &mut Ctx<'_>) {
        let Some(d) = &self.diff else {
            cx.notice("no diff yet", Level::Info);
            return;
        };
        let Some(p) = d.pairs.get(self.row) else {
            return;
        };
        let has = |c: Column| match c {
            Column::A => p.a.is_some(),
            Column::B => p.b.is_some(),
        };
        let col = if has(self.column) {
            self.column
        } else {
            self.column.other()
        };
        let (side, i) = match col {
            Column::A => (&d.a, p.a),
            Column::B => (&d.b, p.b),
        };
        let Some(text) = step_text(side, i) else {
            return;
        };
        let title = format!(
            "Fork step {}{}: styles",
            col.letter(),
            i.map_or(0, |i| i + 1)
        );
        let form = super::fork::question_form(&title, text.to_string(), Some(side.session));
        cx.open_form(form);
    }

    /// Applies one message from a task.
    fn apply(&mut self, m: DiffMsg, cx: &mut Ctx<'_>) {
        match m {
            DiffMsg::Progress { seq, done, total } => {
                if seq == self.seq && self.phase == JobPhase::Running {
                    self.progress = Some((done, total));
                }
            }
            DiffMsg::Diffed { seq, result } => {
                if seq != self.seq || self.phase != JobPhase::Running {
                    return;
                }
                self.job = None;
                self.progress = None;
                match result {
                    Ok(d) => {
                        cx.notice(format!("diff: {}", d.summary()), Level::Info);
                        self.diff = Some(*d);
                        self.phase = JobPhase::Done;
                        self.row = 0;
                    }
                    Err(f) => self.phase = cx.run_failed("diff", &f, false),
                }
            }
            DiffMsg::Merged { seq, result } => {
                if seq != self.seq || self.merge != JobPhase::Running {
                    return;
                }
                self.job = None;
                match result {
                    Ok(m) => {
                        cx.notice(
                            format!(
                                "merged into synthesis {}: {} claims — move through them to see their steps",
                                m.node.short(),
                                m.claims.len()
                            ),
                            Level::Info,
                        );
                        let session = m.session;
                        self.merged = Some(*m);
                        self.merge = JobPhase::Done;
                        self.focus = Focus::Claims;
                        self.claim = 0;
                        cx.run_ended(Some(session));
                    }
                    Err(f) => self.merge = cx.run_failed("merge", &f, false),
                }
            }
        }
    }
}

/// `fork_branch 1a2b3c4d`: the status line has no room for more (the view shows the rest).
fn short(p: &Picked) -> String {
    format!("{} {}", p.kind.as_str(), p.node.short())
}

#[cfg(test)]
mod tests;
