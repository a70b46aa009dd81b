//! The Fork workspace: branch columns streaming side by side, the comparison, debate and steering.
//! Also the checkpoint menu (verified / questionable / disagree + correction) on any node and
//! forking from a node or thinking step selected in the Think graph.

use tokio_util::sync::CancellationToken;

use super::action::Action;
use super::form::{Answer, Form, Purpose};
use super::graph::RowKey;
use super::runtime::Services;
use super::state::{Level, Overlay, State, Workspace};
use super::update::{Effect, Msg};
use crate::engines::fork::{
    BranchResult, CheckpointResult, Comparison, DebateEntry, DebateResult, ForkEngine, ForkEvent,
    ForkPrompts, ForkRequest, ForkResult, ForkSettings, ForkStyle, Lane, SteerAction, SteerResult,
    Verdict, load_fork_record, record_verdict,
};

use crate::store::{NodeId, Run, RunId, RunKind, RunStatus, SessionId, Store};

/// Where a branch column is.
#[derive(Clone, Debug, PartialEq)]
pub enum ColStatus {
    Waiting,
    Running,
    /// Debating in this round.
    Debating(u32),
    Repairing,
    Done,
    Failed(String),
}

impl ColStatus {
    pub fn label(&self) -> String {
        match self {
            ColStatus::Waiting => "waiting".into(),
            ColStatus::Running => "running…".into(),
            ColStatus::Debating(r) => format!("debating, round {r}…"),
            ColStatus::Repairing => "repairing JSON…".into(),
            ColStatus::Done => "done".into(),
            ColStatus::Failed(_) => "failed".into(),
        }
    }
}

/// One branch, shown as a column.
#[derive(Clone, Debug)]
pub struct Column {
    pub style: ForkStyle,
    pub status: ColStatus,
    /// Streamed answer text of the call in progress.
    pub live: String,
    /// Streamed thinking of the call in progress.
    pub thinking: String,
    pub result: Option<BranchResult>,
    pub debate: Vec<DebateEntry>,
    pub marked: bool,
    /// Lines scrolled down from the top.
    pub scroll: u16,
}

impl Column {
    fn new(style: ForkStyle) -> Self {
        Self {
            style,
            status: ColStatus::Waiting,
            live: String::new(),
            thinking: String::new(),
            result: None,
            debate: Vec::new(),
            marked: false,
            scroll: 0,
        }
    }

    fn from_result(b: &BranchResult) -> Self {
        let mut c = Self::new(b.style);
        c.status = match &b.error {
            Some(e) => ColStatus::Failed(e.clone()),
            None => ColStatus::Done,
        };
        c.result = Some(b.clone());
        c
    }

    pub fn node(&self) -> Option<NodeId> {
        self.result.as_ref().and_then(|r| r.node_id)
    }
}

/// A steering action or checkpoint and what it produced.
#[derive(Clone, Debug, Default)]
pub struct SteerView {
    pub label: String,
    pub running: bool,
    pub live: String,
    /// What it concluded, one paragraph per entry.
    pub lines: Vec<String>,
    pub confidence: Option<f64>,
    pub error: Option<String>,
    pub node: Option<NodeId>,
}

/// The debate's end.
#[derive(Clone, Debug, Default)]
pub struct Consensus {
    pub reached: bool,
    pub text: Option<String>,
    pub live: String,
}

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

/// The job in progress.
#[derive(Clone, Debug)]
pub struct Busy {
    pub job: u64,
    pub kind: JobKind,
    pub what: String,
    pub cancel: CancellationToken,
}

/// What the workspace shows and remembers.
#[derive(Debug, Default)]
pub struct ForkWs {
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

impl ForkWs {
    pub fn focused(&self) -> Option<&Column> {
        self.columns.get(self.focus)
    }

    fn column_mut(&mut self, style: ForkStyle) -> Option<&mut Column> {
        self.columns.iter_mut().find(|c| c.style == style)
    }

    fn reset(&mut self, question: String, kind: &str, styles: &[ForkStyle]) {
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
                Some(c) => {
                    c.status = match &b.error {
                        Some(e) => ColStatus::Failed(e.clone()),
                        None => ColStatus::Done,
                    };
                    c.result = Some(b.clone());
                }
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
}

/// A finished job's result.
#[derive(Clone, Debug)]
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
#[derive(Clone, Debug)]
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

/// News for the workspace from its engine tasks.
#[derive(Clone, Debug)]
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

/// One engine job.
#[derive(Clone, Debug)]
pub enum Job {
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

/// Work for the runtime, carried out by [`run`].
#[derive(Clone, Debug)]
pub enum ForkEffect {
    Start {
        job: u64,
        work: Job,
        cancel: CancellationToken,
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

const VERDICTS: [Verdict; 3] = [Verdict::Verified, Verdict::Questionable, Verdict::Disagree];

fn style_names() -> Vec<String> {
    ForkStyle::ALL
        .iter()
        .map(|s| s.as_str().to_string())
        .collect()
}

fn next_job() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn notice(state: &mut State, text: impl Into<String>, level: Level) {
    state.notice = Some((text.into(), level));
}

fn open(state: &mut State, form: Form) {
    state.overlay = Some(Overlay::Form(form));
}

fn styles_form(title: &str, purpose: FormPurpose) -> Form {
    Form::pick_many(
        title,
        Purpose::Fork(purpose),
        style_names(),
        vec![true; ForkStyle::ALL.len()],
        2,
    )
}

fn optional_text(title: String, purpose: FormPurpose, label: &str) -> Form {
    Form::choose(title, Purpose::Fork(purpose), Vec::new()).with_text(label, false, 2_000)
}

/// Starts `work` unless a job is running; `kind` says where its output goes.
fn start(state: &mut State, kind: JobKind, what: String, work: Job, fx: &mut Vec<Effect>) -> bool {
    if let Some(b) = &state.fork.busy {
        let msg = format!("{} is running; Esc cancels it", b.what);
        notice(state, msg, Level::Warn);
        return false;
    }
    let job = next_job();
    let cancel = CancellationToken::new();
    state.fork.busy = Some(Busy {
        job,
        kind,
        what: what.clone(),
        cancel: cancel.clone(),
    });
    notice(state, format!("{what}…"), Level::Info);
    fx.push(Effect::Fork(ForkEffect::Start { job, work, cancel }));
    true
}

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

/// The node a checkpoint in the current workspace applies to.
fn checkpoint_target(state: &State) -> Option<NodeId> {
    if state.workspace == Workspace::Fork {
        state.fork.focused().and_then(Column::node)
    } else {
        state.graph.selected_node()
    }
}

/// Opens the checkpoint menu on the selected node.
fn open_checkpoint(state: &mut State) {
    let Some(node) = checkpoint_target(state) else {
        let msg = if state.workspace == Workspace::Fork {
            "no finished branch in focus to checkpoint"
        } else {
            "select a node in the graph first"
        };
        notice(state, msg, Level::Info);
        return;
    };
    let form = Form::choose(
        "Checkpoint: your verdict on this node",
        Purpose::Fork(FormPurpose::Checkpoint(node)),
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
    open(state, form);
}

/// Forks what is selected in the Think graph: a thinking step (or decision) forks inside
/// the trace, anything else forks its turn's question.
fn fork_here(state: &mut State) {
    if state.workspace == Workspace::Fork {
        let q = state.fork.question.clone();
        open(state, new_fork_form(false, &q));
        return;
    }
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
            .and_then(|n| n.meta.get("steps").and_then(|s| s.as_array()).cloned())
            .and_then(|steps| {
                steps
                    .iter()
                    .position(|s| s.get("index").and_then(|v| v.as_u64()) == Some(u64::from(index)))
            })
            .unwrap_or(index as usize);
        let form = styles_form(
            &format!("Fork from step {}: styles", pos + 1),
            FormPurpose::ForkStep {
                thinking,
                step: pos,
            },
        );
        open(state, form);
        return;
    }
    let question = state.shown.question.trim().to_string();
    if question.is_empty() {
        open(state, new_fork_form(false, ""));
        return;
    }
    let form = styles_form(
        "Fork this question: styles",
        FormPurpose::ForkQuestion {
            question,
            session: state.loaded.id(),
        },
    );
    open(state, form);
}

fn marked_styles(state: &State) -> Vec<ForkStyle> {
    state
        .fork
        .columns
        .iter()
        .filter(|c| c.marked)
        .map(|c| c.style)
        .collect()
}

/// The run to steer, or a notice why there is none.
fn steerable(state: &mut State) -> Option<RunId> {
    if state.fork.busy.is_some() {
        let msg = "wait for the running job (or Esc to cancel it)";
        notice(state, msg, Level::Warn);
        return None;
    }
    match state.fork.run {
        Some(r) => Some(r),
        None => {
            notice(
                state,
                "no finished fork to steer — N forks a question",
                Level::Info,
            );
            None
        }
    }
}

fn focused_ok_style(state: &mut State) -> Option<ForkStyle> {
    match state.fork.focused() {
        Some(c) if c.result.as_ref().is_some_and(BranchResult::ok) => Some(c.style),
        Some(c) => {
            let msg = format!("the {} branch has no result to steer", c.style);
            notice(state, msg, Level::Info);
            None
        }
        None => None,
    }
}

/// Offers a bound action to the workspace; true when it was handled here.
pub fn action(state: &mut State, a: &Action, fx: &mut Vec<Effect>) -> bool {
    match a {
        Action::ForkHere => {
            fork_here(state);
            return true;
        }
        Action::Checkpoint => {
            open_checkpoint(state);
            return true;
        }
        _ => {}
    }
    if state.workspace != Workspace::Fork {
        return false;
    }
    let ws = &mut state.fork;
    let n = ws.columns.len();
    match a {
        Action::CancelRun if ws.busy.is_some() && state.overlay.is_none() => {
            if let Some(b) = &ws.busy {
                b.cancel.cancel();
            }
            notice(state, "cancelling — what arrived is kept", Level::Info);
        }
        Action::NewFork => {
            let q = ws.question.clone();
            open(state, new_fork_form(false, &q));
        }
        Action::Debate => {
            if ws.question.is_empty() || n < 2 {
                open(state, new_fork_form(true, ""));
            } else {
                let styles: Vec<ForkStyle> = ws.columns.iter().map(|c| c.style).collect();
                let req = ForkRequest {
                    session: ws.session,
                    query: ws.question.clone(),
                    styles,
                    guidance: Vec::new(),
                };
                begin_fork(state, req, true, fx);
            }
        }
        Action::ExpandBranch => {
            if steerable(state).is_some()
                && let Some(style) = focused_ok_style(state)
            {
                let form = optional_text(
                    format!("Expand the {style} branch"),
                    FormPurpose::Expand(style),
                    "direction",
                );
                open(state, form);
            }
        }
        Action::ToggleMark => {
            if let Some(c) = ws.columns.get_mut(ws.focus) {
                c.marked = !c.marked;
            }
        }
        Action::MergeBranches => {
            if steerable(state).is_some() {
                let marked = marked_styles(state);
                let form = if marked.len() >= 2 {
                    let names: Vec<&str> = marked.iter().map(|s| s.as_str()).collect();
                    optional_text(
                        format!("Merge {}", names.join(" + ")),
                        FormPurpose::Merge(marked),
                        "focus area",
                    )
                } else {
                    let names: Vec<String> = state
                        .fork
                        .columns
                        .iter()
                        .map(|c| c.style.to_string())
                        .collect();
                    let k = names.len();
                    Form::pick_many(
                        "Merge: mark two or more branches",
                        Purpose::Fork(FormPurpose::MergePick),
                        names,
                        vec![false; k],
                        2,
                    )
                    .with_text("focus area", false, 2_000)
                };
                open(state, form);
            }
        }
        Action::ChallengeBranch => {
            if steerable(state).is_some()
                && let Some(style) = focused_ok_style(state)
            {
                let form = Form::text(
                    format!("Challenge the {style} branch"),
                    Purpose::Fork(FormPurpose::Challenge(style)),
                    "counter-argument",
                );
                open(state, form);
            }
        }
        Action::Refork => {
            if steerable(state).is_some() {
                let form = Form::text(
                    "Refork every branch with new context",
                    Purpose::Fork(FormPurpose::Refork),
                    "new context",
                );
                open(state, form);
            }
        }
        Action::NextColumn | Action::Expand => {
            if n > 0 {
                ws.focus = (ws.focus + 1).min(n - 1);
            }
        }
        Action::PrevColumn | Action::Collapse => ws.focus = ws.focus.saturating_sub(1),
        Action::MoveUp | Action::MoveDown | Action::PageUp | Action::PageDown => {
            let d: i32 = match a {
                Action::MoveUp => -1,
                Action::MoveDown => 1,
                Action::PageUp => -10,
                _ => 10,
            };
            if let Some(c) = ws.columns.get_mut(ws.focus) {
                c.scroll = (i32::from(c.scroll) + d).clamp(0, i32::from(u16::MAX)) as u16;
            } else {
                ws.panel_scroll =
                    (i32::from(ws.panel_scroll) + d).clamp(0, i32::from(u16::MAX)) as u16;
            }
        }
        Action::Top => {
            if let Some(c) = ws.columns.get_mut(ws.focus) {
                c.scroll = 0;
            }
        }
        Action::Bottom => {
            if let Some(c) = ws.columns.get_mut(ws.focus) {
                c.scroll = u16::MAX / 2;
            }
        }
        Action::Select => match ws.focused().and_then(Column::node) {
            Some(node) if state.loaded.node(node).is_some() => {
                state.overlay = Some(Overlay::NodeDetail { node, scroll: 0 });
            }
            Some(_) => notice(state, "the branch's session is loading", Level::Info),
            None => notice(state, "no finished branch in focus", Level::Info),
        },
        _ => return false,
    }
    true
}

fn begin_fork(state: &mut State, req: ForkRequest, debate: bool, fx: &mut Vec<Effect>) {
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
        Job::Debate(req)
    } else {
        Job::Fork(req)
    };
    if start(state, kind, what, work, fx) {
        state.fork.reset(question, label, &styles);
        state.fork.session = session;
        state.workspace = Workspace::Fork;
    }
}

/// Called when the workspace becomes the visible one.
pub fn on_enter(state: &mut State, fx: &mut Vec<Effect>) {
    let ws = &mut state.fork;
    if ws.busy.is_some() || !ws.columns.is_empty() || ws.loading {
        return;
    }
    if let Some(s) = state.loaded.id()
        && ws.looked != Some(s)
    {
        ws.looked = Some(s);
        ws.loading = true;
        fx.push(Effect::Fork(ForkEffect::LoadLatest(s)));
    }
}

fn lane_text(ws: &mut ForkWs, lane: Lane, text: &str, thinking: bool) {
    let kind = ws.busy.as_ref().map(|b| b.kind.clone());
    let steer = matches!(kind, Some(JobKind::Steer) | Some(JobKind::Checkpoint));
    match lane {
        Lane::Branch(style) if !steer => {
            if let Some(c) = ws.column_mut(style) {
                if thinking {
                    c.thinking.push_str(text);
                } else {
                    c.live.push_str(text);
                }
            }
        }
        Lane::Comparison => {
            if !thinking {
                ws.comparison_live.push_str(text);
            }
        }
        Lane::Synthesis if kind == Some(JobKind::Debate) => {
            if let Some(c) = ws.consensus.as_mut()
                && !thinking
            {
                c.live.push_str(text);
            }
        }
        _ => {
            // Thinking shows too: a steer's answer may come only after long reasoning.
            if let Some(s) = ws.steers.last_mut().filter(|s| s.running) {
                s.live.push_str(text);
            }
        }
    }
}

fn on_event(state: &mut State, event: ForkEvent) {
    let ws = &mut state.fork;
    let kind = ws.busy.as_ref().map(|b| b.kind.clone());
    let steer = matches!(kind, Some(JobKind::Steer) | Some(JobKind::Checkpoint));
    match event {
        ForkEvent::Started { session, .. } => {
            if !steer {
                ws.session = Some(session);
            }
        }
        ForkEvent::LaneStarted { lane, round } => match lane {
            Lane::Branch(style) if !steer => {
                if let Some(c) = ws.column_mut(style) {
                    c.live.clear();
                    c.thinking.clear();
                    c.status = if round > 0 {
                        ColStatus::Debating(round)
                    } else {
                        ColStatus::Running
                    };
                }
                if round > 0 {
                    ws.rounds = ws.rounds.max(round);
                }
            }
            Lane::Synthesis if kind == Some(JobKind::Debate) => {
                ws.consensus.get_or_insert_with(Default::default);
            }
            _ => {}
        },
        ForkEvent::Delta {
            lane,
            text,
            thinking,
        } => lane_text(ws, lane, &text, thinking),
        ForkEvent::Repairing { lane } => {
            if let Lane::Branch(style) = lane
                && !steer
                && let Some(c) = ws.column_mut(style)
            {
                c.status = ColStatus::Repairing;
                c.live.clear();
                c.thinking.clear();
            }
        }
        ForkEvent::BranchDone(b) => {
            if !steer && let Some(c) = ws.column_mut(b.style) {
                c.status = match &b.error {
                    Some(e) => ColStatus::Failed(e.clone()),
                    None => ColStatus::Done,
                };
                c.live.clear();
                c.result = Some(b);
            }
        }
        ForkEvent::ComparisonDone(c) => {
            ws.comparison = Some(c);
            ws.comparison_live.clear();
        }
        ForkEvent::DebateEntryDone(e) => {
            if let Some(c) = ws.column_mut(e.style) {
                c.live.clear();
                c.status = ColStatus::Done;
                c.debate.push(e);
            }
        }
        ForkEvent::DebateDone {
            consensus_reached,
            consensus,
        } => {
            let c = ws.consensus.get_or_insert_with(Default::default);
            c.reached = consensus_reached;
            c.text = consensus;
            c.live.clear();
        }
    }
}

fn branch_lines(b: &BranchResult) -> Vec<String> {
    let mut v = vec![b.body.conclusion.clone()];
    v.extend(b.body.key_insights.iter().map(|i| format!("• {i}")));
    v.extend(b.body.risks.iter().map(|i| format!("⚠ {i}")));
    v
}

/// Applies news from an engine task.
pub fn on_msg(state: &mut State, m: ForkMsg, fx: &mut Vec<Effect>) {
    match m {
        ForkMsg::Event { job, event } => {
            if state.fork.busy.as_ref().is_some_and(|b| b.job == job) {
                on_event(state, event);
            }
        }
        ForkMsg::Finished { job, result } => {
            let Some(busy) = state.fork.busy.take_if(|b| b.job == job) else {
                return;
            };
            match result {
                Ok(f) => finished(state, busy, f, fx),
                Err(e) => {
                    for c in &mut state.fork.columns {
                        if !matches!(c.status, ColStatus::Done | ColStatus::Failed(_)) {
                            c.status = ColStatus::Failed(e.clone());
                        }
                    }
                    if let Some(s) = state.fork.steers.last_mut().filter(|s| s.running) {
                        s.running = false;
                        s.error = Some(e.clone());
                    }
                    notice(state, format!("{} failed: {e}", busy.what), Level::Error);
                }
            }
        }
        ForkMsg::Loaded(r) => {
            state.fork.loading = false;
            match r {
                Ok(Some(l)) => {
                    if state.fork.busy.is_none() && state.fork.columns.is_empty() {
                        load(&mut state.fork, *l);
                    }
                }
                Ok(None) => {}
                Err(e) => notice(state, format!("cannot load the fork: {e}"), Level::Error),
            }
        }
        ForkMsg::Verdict(r) => match r {
            Ok(c) => checkpoint_done(state, c, fx),
            Err(e) => notice(state, format!("checkpoint failed: {e}"), Level::Error),
        },
    }
}

fn load(ws: &mut ForkWs, l: Loaded) {
    let styles: Vec<ForkStyle> = l.branches.iter().map(|b| b.style).collect();
    ws.reset(l.question, &l.kind, &styles);
    ws.run = Some(l.run);
    ws.session = Some(l.session);
    match (&l.debate, &l.result) {
        (Some(d), _) => ws.apply_debate(d),
        (None, Some(r)) => ws.apply_fork_result(r),
        (None, None) => {
            ws.columns = l.branches.iter().map(Column::from_result).collect();
        }
    }
    ws.steers = l.steers;
}

fn checkpoint_done(state: &mut State, c: CheckpointResult, fx: &mut Vec<Effect>) {
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
    let ws = &mut state.fork;
    let view = ws
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
        (Some(alt), None) => ws.steers.push(SteerView {
            label: format!("checkpoint {verdict} → corrected branch"),
            lines: vec![alt.reasoning.clone()],
            confidence: Some(alt.confidence),
            node: Some(alt.node_id),
            ..Default::default()
        }),
        (None, None) => ws.steers.push(SteerView {
            label: format!("checkpoint {verdict}"),
            ..Default::default()
        }),
    }
    state.notice = Some((msg, Level::Info));
    // The graph shows the annotation, the corrected branch and the disputed marks.
    if let Some(s) = state.loaded.id().or(Some(c.session_id)) {
        fx.push(Effect::LoadSession(s));
    }
}

fn finished(state: &mut State, busy: Busy, f: Finished, fx: &mut Vec<Effect>) {
    let ws = &mut state.fork;
    let mut reload = None;
    match f {
        Finished::Fork {
            run,
            session,
            result,
        } => {
            ws.run = Some(run);
            ws.session = Some(session);
            ws.apply_fork_result(&result);
            reload = Some(session);
            let ok = result.branches.iter().filter(|b| b.ok()).count();
            state.notice = Some((
                format!(
                    "{} done: {ok} of {} branches",
                    ws.kind,
                    result.branches.len()
                ),
                Level::Info,
            ));
        }
        Finished::Debate {
            run,
            session,
            result,
        } => {
            ws.run = Some(run);
            ws.session = Some(session);
            ws.apply_debate(&result);
            reload = Some(session);
            let c = if result.consensus_reached {
                "consensus reached"
            } else {
                "no consensus"
            };
            state.notice = Some((
                format!("debate done after {} rounds: {c}", result.total_rounds),
                Level::Info,
            ));
        }
        Finished::Steer {
            run,
            session,
            result,
        } => {
            reload = Some(session);
            if let SteerResult::Refork {
                result: r,
                new_context,
            } = &result
            {
                ws.run = Some(run);
                ws.apply_fork_result(r);
                if let Some(s) = ws.steers.last_mut().filter(|s| s.running) {
                    s.running = false;
                    s.lines = vec![format!("new context: {new_context}")];
                }
            } else if let Some(s) = ws.steers.last_mut().filter(|s| s.running) {
                *s = steer_view(s.label.clone(), &result);
            }
            state.notice = Some((format!("{} done", busy.what), Level::Info));
        }
        Finished::Checkpoint(c) => checkpoint_done(state, c, fx),
    }
    if let Some(s) = reload
        && state.run.is_none()
    {
        fx.push(Effect::LoadSession(s));
    }
}

fn steer_label(a: &SteerAction) -> String {
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

fn steer_view(label: String, r: &SteerResult) -> SteerView {
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
            let mut lines = vec![merged.conclusion.clone()];
            lines.extend(merged.key_insights.iter().map(|i| format!("• {i}")));
            SteerView {
                label,
                lines,
                confidence: Some(merged.confidence),
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

fn start_steer(state: &mut State, action: SteerAction, fx: &mut Vec<Effect>) {
    let Some(run) = steerable(state) else {
        return;
    };
    let label = steer_label(&action);
    let refork = matches!(action, SteerAction::Refork { .. });
    let kind = if refork {
        JobKind::Refork
    } else {
        JobKind::Steer
    };
    if start(state, kind, label.clone(), Job::Steer(run, action), fx) {
        let ws = &mut state.fork;
        if refork {
            let q = ws.question.clone();
            let styles: Vec<ForkStyle> = ws.columns.iter().map(|c| c.style).collect();
            let steers = std::mem::take(&mut ws.steers);
            ws.reset(q, "refork", &styles);
            ws.steers = steers;
        }
        ws.steers.push(SteerView {
            label,
            running: true,
            ..Default::default()
        });
    }
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

/// Applies a submitted form.
pub fn submit(state: &mut State, p: FormPurpose, answer: Answer, fx: &mut Vec<Effect>) {
    match p {
        FormPurpose::NewFork { debate } => {
            let req = ForkRequest {
                session: state.loaded.id(),
                query: answer.text.clone(),
                styles: picked_styles(&answer),
                guidance: Vec::new(),
            };
            begin_fork(state, req, debate, fx);
        }
        FormPurpose::ForkQuestion { question, session } => {
            let req = ForkRequest {
                session,
                query: question,
                styles: picked_styles(&answer),
                guidance: Vec::new(),
            };
            begin_fork(state, req, false, fx);
        }
        FormPurpose::ForkStep { thinking, step } => {
            let styles = picked_styles(&answer);
            let what = format!("forking from step {} {} ways", step + 1, styles.len());
            let work = Job::FromStep {
                thinking,
                step,
                styles: styles.clone(),
            };
            if start(state, JobKind::Fork, what, work, fx) {
                let question = state.shown.question.clone();
                state.fork.reset(question, "fork from step", &styles);
                state.fork.session = state.loaded.id();
                state.workspace = Workspace::Fork;
            }
        }
        FormPurpose::Expand(style) => start_steer(
            state,
            SteerAction::Expand {
                style,
                direction: text(&answer),
            },
            fx,
        ),
        purpose @ (FormPurpose::Merge(_) | FormPurpose::MergePick) => {
            let styles: Vec<ForkStyle> = match purpose {
                FormPurpose::Merge(styles) => styles,
                // The branches ticked in the form.
                _ => answer
                    .checked
                    .iter()
                    .filter_map(|i| state.fork.columns.get(*i).map(|c| c.style))
                    .collect(),
            };
            start_steer(
                state,
                SteerAction::Merge {
                    styles,
                    focus_area: text(&answer),
                },
                fx,
            );
        }
        FormPurpose::Challenge(style) => start_steer(
            state,
            SteerAction::Challenge {
                style,
                challenge: answer.text.clone(),
            },
            fx,
        ),
        FormPurpose::Refork => start_steer(
            state,
            SteerAction::Refork {
                new_context: answer.text.clone(),
            },
            fx,
        ),
        FormPurpose::Checkpoint(node) => {
            let Some(verdict) = answer.choice.and_then(|i| VERDICTS.get(i).copied()) else {
                return;
            };
            let correction = text(&answer);
            if verdict == Verdict::Disagree && correction.is_some() {
                let what = "checkpoint: reasoning the corrected branch".to_string();
                let work = Job::Checkpoint {
                    node,
                    verdict,
                    correction,
                };
                if start(state, JobKind::Checkpoint, what, work, fx) {
                    state.fork.steers.push(SteerView {
                        label: "checkpoint disagree → corrected branch".into(),
                        running: true,
                        ..Default::default()
                    });
                }
            } else {
                fx.push(Effect::Fork(ForkEffect::Verdict {
                    node,
                    verdict,
                    correction,
                }));
            }
        }
    }
}

/// The engine for the configured model, mirroring `glassbox fork`'s settings.
fn engine(svc: &Services, cancel: CancellationToken) -> Result<ForkEngine, String> {
    let m = svc.model.as_ref().map_err(Clone::clone)?;
    let cfg = &svc.cfg;
    let settings = ForkSettings::from_config(cfg, m.kind, m.model.clone(), None, None);
    Ok(ForkEngine::new(
        svc.store.clone(),
        m.provider.clone(),
        ForkPrompts::from_prompts(&svc.prompts),
        settings,
    )
    .with_cancel(cancel))
}

async fn run_job(
    engine: ForkEngine,
    work: Job,
    events: &tokio::sync::mpsc::UnboundedSender<ForkEvent>,
) -> Result<Finished, String> {
    let e = |e: crate::engines::fork::ForkError| e.to_string();
    Ok(match work {
        Job::Fork(req) => {
            let o = engine.fork(req, events).await.map_err(e)?;
            Finished::Fork {
                run: o.run,
                session: o.session,
                result: o.data,
            }
        }
        Job::FromStep {
            thinking,
            step,
            styles,
        } => {
            let o = engine
                .fork_from_step(thinking, step, styles, Vec::new(), events)
                .await
                .map_err(e)?;
            Finished::Fork {
                run: o.run,
                session: o.session,
                result: o.data,
            }
        }
        Job::Debate(req) => {
            let rounds = engine.settings().debate_rounds;
            let o = engine.debate(req, rounds, events).await.map_err(e)?;
            Finished::Debate {
                run: o.run,
                session: o.session,
                result: o.data,
            }
        }
        Job::Steer(run, action) => {
            let o = engine.steer(run, action, events).await.map_err(e)?;
            Finished::Steer {
                run: o.run,
                session: o.session,
                result: o.data,
            }
        }
        Job::Checkpoint {
            node,
            verdict,
            correction,
        } => Finished::Checkpoint(
            engine
                .checkpoint(node, verdict, correction, events)
                .await
                .map_err(e)?,
        ),
    })
}

/// Carries out an effect: store reads and writes, engine tasks (spawned; results come back
/// as [`ForkMsg`] through `svc.tx`).
pub fn run(e: ForkEffect, svc: &Services) {
    let tx = svc.tx.clone();
    match e {
        ForkEffect::Start { job, work, cancel } => {
            let engine = match engine(svc, cancel) {
                Ok(en) => en,
                Err(err) => {
                    let _ = tx.send(Msg::Fork(ForkMsg::Finished {
                        job,
                        result: Err(err),
                    }));
                    return;
                }
            };
            tokio::spawn(async move {
                let (ev_tx, mut ev_rx) = tokio::sync::mpsc::unbounded_channel();
                let forward = {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        while let Some(event) = ev_rx.recv().await {
                            let _ = tx.send(Msg::Fork(ForkMsg::Event { job, event }));
                        }
                    })
                };
                let result = run_job(engine, work, &ev_tx).await;
                drop(ev_tx);
                let _ = forward.await;
                let _ = tx.send(Msg::Fork(ForkMsg::Finished { job, result }));
            });
        }
        ForkEffect::LoadLatest(session) => {
            let store = svc.store.clone();
            tokio::task::spawn_blocking(move || {
                let r = latest(&store, session).map(|o| o.map(Box::new));
                let _ = tx.send(Msg::Fork(ForkMsg::Loaded(r)));
            });
        }
        ForkEffect::Verdict {
            node,
            verdict,
            correction,
        } => {
            let store = svc.store.clone();
            let max = ForkSettings::new("").correction_max_chars;
            tokio::task::spawn_blocking(move || {
                let r = record_verdict(&store, node, verdict, correction, max)
                    .map(|(c, _)| c)
                    .map_err(|e| e.to_string());
                let _ = tx.send(Msg::Fork(ForkMsg::Verdict(r)));
            });
        }
    }
}

/// The newest finished fork, debate or refork run of `session`, with its steering.
fn latest(store: &Store, session: SessionId) -> Result<Option<Loaded>, String> {
    let mut runs: Vec<Run> = store
        .session_runs(session)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|r| r.status != RunStatus::Running)
        .collect();
    runs.sort_by_key(|r| r.created_at);
    for r in runs.iter().rev() {
        if !matches!(r.kind, RunKind::Fork | RunKind::Debate | RunKind::Steer) {
            continue;
        }
        let Ok(record) = load_fork_record(store, r.id) else {
            continue;
        };
        let (kind, result, debate) = match r.kind {
            RunKind::Debate => (
                "debate",
                None,
                serde_json::from_value::<DebateResult>(r.summary.clone()).ok(),
            ),
            RunKind::Steer => (
                "refork",
                serde_json::from_value::<ForkResult>(r.summary["result"].clone()).ok(),
                None,
            ),
            _ => (
                "fork",
                serde_json::from_value::<ForkResult>(r.summary.clone()).ok(),
                None,
            ),
        };
        let id = r.id.to_string();
        let steers = runs
            .iter()
            .filter(|s| s.kind == RunKind::Steer && s.params["sourceRun"].as_str() == Some(&id))
            .filter_map(|s| {
                let action: SteerAction = serde_json::from_value(s.params["steer"].clone()).ok()?;
                let result: SteerResult = serde_json::from_value(s.summary.clone()).ok()?;
                Some(steer_view(steer_label(&action), &result))
            })
            .collect();
        return Ok(Some(Loaded {
            run: r.id,
            session,
            question: record.query,
            kind: kind.to_string(),
            result,
            debate,
            branches: record.branches,
            steers,
        }));
    }
    Ok(None)
}
