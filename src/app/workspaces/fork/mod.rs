//! The Fork workspace: branch columns streaming side by side, the comparison, debate and
//! steering. Also the checkpoint menu (verified / questionable / disagree + correction) on
//! any node, and forking from a node or thinking step selected in the Think graph: those two
//! work from any pane.
//!
//! `update.rs` applies what the engine tasks report; `tasks.rs` runs them and reads a
//! session's newest fork back from the store. The view model (columns, steering entries) is
//! the view's own, in `views/fork.rs`.

mod actions;
mod tasks;
mod update;

pub use self::actions::question_form;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Cx, Job, Outbox, Spec, Workspace, WorkspaceId};
use crate::app::action::Action;
use crate::app::form::Answer;
use crate::app::runtime::Services;
use crate::app::state::{Level, State};
use crate::engines::fork::{
    BranchResult, CheckpointResult, Comparison, DebateResult, ForkEvent, ForkRequest, ForkResult,
    ForkStyle, SteerAction, SteerResult, Verdict,
};
use crate::store::{NodeId, RunId, SessionId};
use crate::views::ViewCx;
pub use crate::views::fork::{ColStatus, Column, Consensus, SteerView};
use crate::views::fork::{ForkView, render};

pub const ID: WorkspaceId = "fork";

crate::workspace_actions! { ForkAction for ID => {
    ForkHere => ("fork_here", "Fork the selected node or step", Anywhere),
    Checkpoint => ("checkpoint", "Checkpoint: verified, questionable, disagree", Anywhere),
    NewFork => ("new_fork", "Fork a new question", Own),
    Debate => ("debate", "Debate the branches", Own),
    ExpandBranch => ("expand_branch", "Expand the branch at max effort", Own),
    ToggleMark => ("toggle_mark", "Mark or unmark the branch", Own),
    MergeBranches => ("merge_branches", "Merge the marked branches", Own),
    ChallengeBranch => ("challenge_branch", "Challenge the branch", Own),
    Refork => ("refork", "Fork all branches again with new context", Own),
    NextColumn => ("next_column", "Next branch column", Own),
    PrevColumn => ("prev_column", "Previous branch column", Own),
} }

const SPEC: &Spec = &Spec {
    id: ID,
    title: "Fork",
    help_title: "Fork workspace",
    go: "Go to the Fork workspace",
    section: true,
    actions: ForkAction::SPECS,
};

/// What the running job is, so streamed lanes land in the right place.
#[derive(Clone, Debug, PartialEq)]
pub enum JobKind {
    Fork,
    Debate,
    Refork,
    /// Expand, challenge or merge: output goes to the newest steer entry.
    Steer,
    Checkpoint,
}

impl JobKind {
    /// How the status bar names the job.
    fn label(&self) -> &'static str {
        match self {
            JobKind::Fork => "fork",
            JobKind::Debate => "debate",
            JobKind::Refork => "refork",
            JobKind::Steer => "steering",
            JobKind::Checkpoint => "checkpoint",
        }
    }
}

/// The job in progress: its number (news of older jobs is dropped) and the job itself.
#[derive(Clone, Debug)]
pub struct Busy {
    pub id: u64,
    pub job: Job<JobKind>,
}

/// What the workspace shows and remembers.
#[derive(Debug, Default)]
pub struct Fork {
    /// The run steering acts on.
    pub run: Option<RunId>,
    pub session: Option<SessionId>,
    pub question: String,
    /// "fork", "debate", "refork", "fork from step".
    pub kind: String,
    pub columns: Vec<Column>,
    pub focus: usize,
    /// First column drawn (horizontal scroll).
    pub first: usize,
    pub comparison: Option<Comparison>,
    pub comparison_live: String,
    pub rounds: u32,
    pub consensus: Option<Consensus>,
    pub steers: Vec<SteerView>,
    pub busy: Option<Busy>,
    pub loading: bool,
    /// Whether a load of the open session's newest fork was already asked for.
    pub looked: Option<SessionId>,
    /// Lines scrolled in the comparison panel.
    pub panel_scroll: u16,
}

/// A finished job's result.
#[derive(Debug)]
pub enum Finished {
    Fork {
        run: RunId,
        session: SessionId,
        result: ForkResult,
    },
    Debate {
        run: RunId,
        session: SessionId,
        result: DebateResult,
    },
    Steer {
        run: RunId,
        session: SessionId,
        result: SteerResult,
    },
    Checkpoint(CheckpointResult),
}

/// A fork run read back from the store, with the steering done on it.
#[derive(Debug)]
pub struct Loaded {
    pub run: RunId,
    pub session: SessionId,
    pub question: String,
    pub kind: String,
    pub result: Option<ForkResult>,
    pub debate: Option<DebateResult>,
    pub branches: Vec<BranchResult>,
    pub steers: Vec<SteerView>,
}

/// News for the workspace from its tasks.
#[derive(Debug)]
pub enum ForkMsg {
    Event {
        job: u64,
        event: ForkEvent,
    },
    Finished {
        job: u64,
        result: Result<Finished, String>,
    },
    /// The newest fork run of a session (`None`: there is none).
    Loaded(Result<Option<Box<Loaded>>, String>),
    /// A verdict recorded without the model.
    Verdict(Result<CheckpointResult, String>),
}

/// What an engine job does.
#[derive(Clone, Debug)]
pub enum Work {
    Fork(ForkRequest),
    FromStep {
        thinking: NodeId,
        step: usize,
        styles: Vec<ForkStyle>,
    },
    Debate(ForkRequest),
    Steer(RunId, SteerAction),
    Checkpoint {
        node: NodeId,
        verdict: Verdict,
        correction: Option<String>,
    },
}

/// Work for the runtime, carried out by [`Workspace::run`].
#[derive(Debug)]
pub enum ForkEffect {
    Start {
        job: u64,
        work: Work,
        cancel: tokio_util::sync::CancellationToken,
    },
    /// Load the newest fork run of this session.
    LoadLatest(SessionId),
    /// Record a verdict that needs no model.
    Verdict {
        node: NodeId,
        verdict: Verdict,
        correction: Option<String>,
    },
}

/// What a form this workspace opened is for.
#[derive(Clone, Debug, PartialEq)]
pub enum FormPurpose {
    /// Question text + styles.
    NewFork {
        debate: bool,
    },
    /// Styles for a fork of a known question.
    ForkQuestion {
        question: String,
        session: Option<SessionId>,
    },
    /// Styles for a fork inside a thinking trace.
    ForkStep {
        thinking: NodeId,
        step: usize,
    },
    Expand(ForkStyle),
    /// Optional focus text; styles known.
    Merge(Vec<ForkStyle>),
    /// Styles + optional focus text.
    MergePick,
    Challenge(ForkStyle),
    Refork,
    Checkpoint(NodeId),
}

type Ctx<'a> = Cx<'a, Fork>;

fn next_job() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Fork {
    pub fn focused(&self) -> Option<&Column> {
        self.columns.get(self.focus)
    }

    /// Starts `work` unless a job is running; `kind` says where its output goes.
    fn start(&mut self, kind: JobKind, what: String, work: Work, cx: &mut Ctx<'_>) -> bool {
        if let Some(b) = &self.busy {
            cx.notice(
                format!("{} is running; Esc cancels it", b.job.what),
                Level::Warn,
            );
            return false;
        }
        let id = next_job();
        let job = Job::new(kind, what.clone());
        let cancel = job.cancel.clone();
        self.busy = Some(Busy { id, job });
        cx.notice(format!("{what}…"), Level::Info);
        cx.run(ForkEffect::Start {
            job: id,
            work,
            cancel,
        });
        true
    }

    /// Forks (or debates) `req` and shows its columns here.
    fn begin_fork(&mut self, req: ForkRequest, debate: bool, cx: &mut Ctx<'_>) {
        let (kind, label, what) = if debate {
            (JobKind::Debate, "debate", "debating")
        } else {
            (JobKind::Fork, "fork", "forking")
        };
        let what = format!("{what} {} ways", req.styles.len());
        let question = req.query.clone();
        let styles = req.styles.clone();
        let session = req.session;
        let work = if debate {
            Work::Debate(req)
        } else {
            Work::Fork(req)
        };
        if self.start(kind, what, work, cx) {
            self.reset(question, label, &styles);
            self.session = session;
            cx.state.workspace = ID;
        }
    }

    fn view(&self) -> ForkView<'_> {
        ForkView {
            question: &self.question,
            kind: &self.kind,
            columns: &self.columns,
            focus: self.focus,
            first: self.first,
            comparison: self.comparison.as_ref(),
            comparison_live: &self.comparison_live,
            rounds: self.rounds,
            consensus: self.consensus.as_ref(),
            steers: &self.steers,
            busy: self.busy.as_ref().map(|b| b.job.what.as_str()),
            loading: self.loading,
            panel_scroll: self.panel_scroll,
        }
    }
}

impl Workspace for Fork {
    const SPEC: &'static Spec = SPEC;
    type Msg = ForkMsg;
    type Effect = ForkEffect;
    type Form = FormPurpose;

    /// Shows the open session's newest fork when nothing is shown yet.
    fn on_enter(&mut self, cx: &mut Ctx<'_>) {
        if self.busy.is_some() || !self.columns.is_empty() || self.loading {
            return;
        }
        if let Some(s) = cx.state.loaded.id()
            && self.looked != Some(s)
        {
            self.looked = Some(s);
            self.loading = true;
            cx.run(ForkEffect::LoadLatest(s));
        }
    }

    fn on_action(&mut self, a: &Action, cx: &mut Ctx<'_>) -> bool {
        let own = ForkAction::of(a);
        match own {
            Some(ForkAction::ForkHere) => {
                self.fork_here(cx);
                return true;
            }
            Some(ForkAction::Checkpoint) => {
                self.open_checkpoint(cx);
                return true;
            }
            _ => {}
        }
        if !cx.shown() {
            return false;
        }
        match own {
            Some(a) => {
                self.own_action(a, cx);
                true
            }
            None => self.shared_action(a, cx),
        }
    }

    fn on_msg(&mut self, m: ForkMsg, cx: &mut Ctx<'_>) {
        self.apply_msg(m, cx);
    }

    fn on_form(&mut self, p: FormPurpose, answer: Answer, cx: &mut Ctx<'_>) {
        self.submit(p, answer, cx);
    }

    fn run(e: ForkEffect, svc: &Services, out: Outbox<ForkMsg>) {
        tasks::run(e, svc, out);
    }

    /// The focused branch's node, once the branch has finished.
    fn selected_node(&self, _state: &State) -> Option<crate::views::Picked> {
        let c = self.focused()?;
        Some(crate::views::Picked {
            node: c.node()?,
            kind: crate::store::NodeType::ForkBranch,
            what: Some(c.style.to_string()),
        })
    }

    fn job(&self) -> Option<String> {
        self.busy
            .as_ref()
            .map(|b| format!("{} running…", b.job.kind.label()))
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, _state: &mut State, v: &ViewCx<'_>) {
        render(f, area, &self.view(), v);
    }
}

#[cfg(test)]
mod tests;
