//! The Research workspace: a DeepTrust run (seed 001) drawn as a glass box.
//!
//! A header holds the question line and the run's state. Below it four panes: the **Plan**
//! (objective and numbered steps, each pending, running, done or failed), the **Audit**
//! (verdict, violations with the rule they break, suggestions, notes), the **Trace** (the
//! reasoning entries, newest at the bottom) and **Tools / Report** (the selected step's
//! output while the tools run, the report with its `[n]` citations and the citation list at
//! the end). A model stage's streamed text shows in the pane it belongs to. At the gate a
//! modal shows the plan and the audit with the keys that approve, reject or edit it; a
//! citation opens in an overlay.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use self::content::{audit_lines, clip, one_line, plan_lines, report_lines, trace_lines};
use super::input::InputBox;
use super::theme::{Role, Theme};
use super::think::pane;
use super::{ViewCx, hints};
use crate::engines::research::{Citation, ResearchState, Stage, Status, Step, Tool, Verdict};
use crate::store::{RunId, SessionId};

/// Where the shown run is (running here, read from the store, …).
pub use super::JobPhase as Phase;

/// The four panes, in focus order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Pane {
    #[default]
    Plan,
    Audit,
    Trace,
    Report,
}

impl Pane {
    pub const ALL: [Pane; 4] = [Pane::Plan, Pane::Audit, Pane::Trace, Pane::Report];

    /// The next pane (`forward`) or the one before, wrapping.
    pub fn cycle(self, forward: bool) -> Pane {
        let i = Pane::ALL.iter().position(|p| *p == self).unwrap_or(0);
        let n = Pane::ALL.len();
        Pane::ALL[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }

    /// The pane a model stage's streamed text shows in.
    pub fn of_stage(node: &str) -> Pane {
        match node {
            "thinker" => Pane::Plan,
            "auditor" => Pane::Audit,
            _ => Pane::Report,
        }
    }
}

/// The text a model stage is streaming now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Live {
    /// The stage's node name (`thinker`, `auditor`, `synthesizer`).
    pub node: String,
    pub text: String,
    pub thinking: String,
}

/// One research run as shown: followed as it runs here, or read from the store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunView {
    pub run: Option<RunId>,
    pub session: Option<SessionId>,
    pub question: String,
    pub phase: Phase,
    /// The state after the last node (none before the first event).
    pub state: Option<ResearchState>,
    /// The model stage streaming now.
    pub live: Option<Live>,
}

/// How far one plan step has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepState {
    Pending,
    Running,
    Done,
    Failed,
}

impl StepState {
    pub fn marker(self) -> &'static str {
        match self {
            StepState::Pending => "○",
            StepState::Running => "⟳",
            StepState::Done => "✓",
            StepState::Failed => "✗",
        }
    }

    pub fn role(self) -> Role {
        match self {
            StepState::Pending => Role::Dim,
            StepState::Running => Role::Accent,
            StepState::Done => Role::Success,
            StepState::Failed => Role::Error,
        }
    }
}

impl RunView {
    /// The steps of the current plan.
    pub fn steps(&self) -> &[Step] {
        self.state
            .as_ref()
            .and_then(|s| s.plan.as_ref())
            .map_or(&[], |p| p.steps.as_slice())
    }

    pub fn citations(&self) -> &[Citation] {
        self.state.as_ref().map_or(&[], |s| s.citations.as_slice())
    }

    /// The step whose tool runs now: the first pending one, while an approved run goes on
    /// here and no model stage streams.
    pub fn running_step(&self) -> Option<usize> {
        let s = self.state.as_ref()?;
        let going = self.phase == Phase::Running
            && s.human_approved
            && self.live.is_none()
            && matches!(s.status, Status::Executing | Status::AwaitingApproval);
        going.then(|| s.pending_step()).flatten()
    }

    pub fn step_state(&self, i: usize) -> StepState {
        let Some(step) = self.steps().get(i) else {
            return StepState::Pending;
        };
        if step.error.is_some() {
            StepState::Failed
        } else if step.output.is_some() {
            StepState::Done
        } else if self.running_step() == Some(i) {
            StepState::Running
        } else {
            StepState::Pending
        }
    }

    /// The run waits at the gate for a person (and nothing runs here).
    pub fn awaiting(&self) -> bool {
        self.phase != Phase::Running
            && self
                .state
                .as_ref()
                .is_some_and(|s| s.status == Status::AwaitingApproval)
    }

    /// The streamed text when it belongs in `pane`.
    pub fn live_in(&self, pane: Pane) -> Option<&Live> {
        self.live
            .as_ref()
            .filter(|l| Pane::of_stage(&l.node) == pane)
    }
}

/// What the approval modal is doing.
#[derive(Clone, Debug, PartialEq)]
pub enum ModalMode {
    /// Showing the plan and the audit, waiting for a key.
    Review,
    /// Typing the note that goes with a rejection.
    Reject,
    /// Editing the selected step: its input in the line, its tool here.
    Edit { tool: Tool },
}

/// The approval modal as drawn.
pub struct ModalView<'a> {
    pub mode: &'a ModalMode,
    /// The note or the step's input being typed.
    pub input: &'a InputBox,
    /// The selected step.
    pub step: usize,
    /// Rows scrolled down.
    pub scroll: usize,
}

/// A citation's source, opened in an overlay.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceView {
    pub title: String,
    /// Label → value rows (document, path, span, …).
    pub rows: Vec<(String, String)>,
    pub text: String,
    pub scroll: usize,
}

/// What the workspace draws.
pub struct ResearchView<'a> {
    pub run: &'a RunView,
    /// The question line.
    pub input: &'a InputBox,
    /// Keys go to the question line.
    pub typing: bool,
    pub focus: Pane,
    /// The selected plan step.
    pub step: usize,
    /// The selected citation.
    pub citation: usize,
    /// Rows the focused pane is scrolled (the Trace counts up from its newest row).
    pub scroll: usize,
    /// Why there is nothing to show, when there is not.
    pub hint: Option<&'a str>,
    pub modal: Option<ModalView<'a>>,
    pub source: Option<&'a SourceView>,
}

/// Draws the workspace into `area`.
pub fn render(f: &mut Frame, area: Rect, ws: &ResearchView<'_>, v: &ViewCx<'_>) {
    let [head, body] = Layout::vertical([Constraint::Length(5), Constraint::Min(1)]).areas(area);
    header(f, head, ws, v);
    if ws.run.state.is_none() && ws.run.live.is_none() {
        empty(f, body, ws, v);
    } else {
        panes(f, body, ws, v);
    }
    if let Some(m) = &ws.modal
        && let Some(st) = &ws.run.state
    {
        modal::modal(f, area, st, m, v);
    }
    if let Some(s) = ws.source {
        modal::source(f, area, s, v.theme);
    }
}

/// The rows of each pane's content at the pane sizes `area` gives: how far the focused pane
/// can scroll.
pub fn focused_rows(ws: &ResearchView<'_>, area: Rect, v: &ViewCx<'_>) -> usize {
    let [_, body] = Layout::vertical([Constraint::Length(5), Constraint::Min(1)]).areas(area);
    let rects = pane_rects(body, ws.run);
    let i = Pane::ALL.iter().position(|p| *p == ws.focus).unwrap_or(0);
    let r = rects[i];
    let (lines, _) = pane_lines(ws, ws.focus, r.width.saturating_sub(2) as usize, v);
    lines
        .len()
        .saturating_sub(r.height.saturating_sub(2) as usize)
}

fn header(f: &mut Frame, area: Rect, ws: &ResearchView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let block = pane(" Research ", ws.typing, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [ask, state, keys] = Layout::vertical([Constraint::Length(1); 3]).areas(inner);

    let tag = "[research] ";
    let lead = tag.chars().count() + 1;
    let room = (ask.width as usize).saturating_sub(lead + 1);
    let mut spans = vec![
        Span::styled(tag, theme.style(Role::Accent).add_modifier(Modifier::BOLD)),
        Span::styled(
            "▏",
            if ws.typing {
                theme.style(Role::Accent)
            } else {
                dim
            },
        ),
    ];
    let text = ws.input.text().replace('\n', " ");
    let (_, col) = ws.input.cursor_position();
    let start = col.saturating_sub(room);
    if text.is_empty() && !ws.typing {
        spans.push(Span::styled(
            hints::line(v.keys, &[(&["ask_research"], "asks a research question")]),
            dim,
        ));
    } else {
        let shown: String = text.chars().skip(start).take(room).collect();
        let used = shown.chars().count();
        spans.push(Span::styled(shown, theme.style(Role::Query)));
        if ws.typing && used + 30 < room {
            spans.push(Span::styled("   enter plans it · esc leaves", dim));
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), ask);
    if ws.typing {
        let x = ask.x + (lead + col - start).min(ask.width.saturating_sub(1) as usize) as u16;
        f.set_cursor_position((x, ask.y));
    }
    f.render_widget(Paragraph::new(status_line(ws.run, theme)), state);

    let run = ws.run;
    let done =
        run.state.as_ref().is_some_and(|s| s.final_report.is_some()) && !run.citations().is_empty();
    let hint: Vec<hints::Hint<'_>> = if run.phase == Phase::Running {
        vec![
            (&["cancel_run"], "cancels"),
            (&["focus_next"], "next pane"),
            (&["move_down", "move_up"], "move"),
        ]
    } else if run.awaiting() {
        vec![
            (&["review_plan"], "reviews the plan"),
            (&["focus_next"], "next pane"),
            (&["move_down", "move_up"], "move"),
        ]
    } else if matches!(run.phase, Phase::Interrupted | Phase::Failed(_)) {
        vec![
            (&["resume_research"], "resumes"),
            (&["focus_next"], "next pane"),
            (&["move_down", "move_up"], "move"),
        ]
    } else if done {
        vec![
            (&["focus_next"], "next pane"),
            (&["move_down", "move_up"], "move"),
            (&["select"], "opens a citation"),
        ]
    } else if run.state.is_some() {
        vec![
            (&["focus_next"], "next pane"),
            (&["move_down", "move_up"], "move"),
        ]
    } else {
        Vec::new()
    };
    f.render_widget(
        Paragraph::new(Span::styled(
            clip(&hints::line(v.keys, &hint), keys.width as usize),
            dim,
        )),
        keys,
    );
}

/// `⟳ auditing · plan 2 · 1/3 rejected · 2/3 steps · “question”`.
fn status_line(run: &RunView, theme: &Theme) -> Line<'static> {
    let dim = theme.style(Role::Dim);
    let st = run.state.as_ref();
    let (text, role) = match (&run.phase, st.map(|s| s.status)) {
        (Phase::Loading, _) => ("⟳ reading the last run…".to_string(), Role::Accent),
        (Phase::Running, _) => {
            let what = match (&run.live, run.running_step()) {
                (Some(l), _) => match l.node.as_str() {
                    "thinker" => "planning".to_string(),
                    "auditor" => "auditing".to_string(),
                    "synthesizer" => "writing the report".to_string(),
                    other => other.to_string(),
                },
                (None, Some(i)) => format!("running step {}", i + 1),
                (None, None) => st.map_or("starting", |s| s.status.as_str()).to_string(),
            };
            (format!("⟳ {what}…"), Role::Accent)
        }
        (_, Some(Status::AwaitingApproval)) => {
            ("⏸ awaiting your approval".to_string(), Role::Warning)
        }
        (_, Some(Status::Complete)) => ("✓ complete".to_string(), Role::Success),
        (_, Some(Status::Rejected)) => ("✗ plan rejected".to_string(), Role::Error),
        (Phase::Failed(e), _) => (format!("✗ failed: {}", clip(&one_line(e), 48)), Role::Error),
        (_, Some(Status::Failed)) => {
            let why = st
                .and_then(|s| s.error_message.clone().or(s.end_reason.clone()))
                .unwrap_or_default();
            (
                format!("✗ failed: {}", clip(&one_line(&why), 48)),
                Role::Error,
            )
        }
        (Phase::Interrupted, _) => ("⏸ interrupted".to_string(), Role::Warning),
        (Phase::Elsewhere, _) => ("◌ running elsewhere".to_string(), Role::Warning),
        _ => ("no run yet".to_string(), Role::Dim),
    };
    let mut spans = vec![Span::styled(text, theme.style(role))];
    if let Some(s) = st {
        if let Some(p) = &s.plan {
            let done = p.steps.iter().filter(|s| s.done()).count();
            spans.push(Span::styled(
                format!(
                    " · plan {} · {done}/{} steps · {}/{} rejections",
                    p.revision,
                    p.steps.len(),
                    s.revision,
                    s.max_plan_revisions
                ),
                dim,
            ));
        }
        if !s.citations.is_empty() {
            let cited = s.citations.iter().filter(|c| c.cited).count();
            spans.push(Span::styled(
                format!(" · {cited}/{} sources cited", s.citations.len()),
                dim,
            ));
        }
    }
    let q = st.map_or(run.question.as_str(), |s| s.user_query.as_str());
    if !q.is_empty() {
        spans.push(Span::styled(
            format!(" · “{}”", clip(&one_line(q), 60)),
            theme.style(Role::Query),
        ));
    }
    Line::from(spans)
}

fn empty(f: &mut Frame, area: Rect, ws: &ResearchView<'_>, v: &ViewCx<'_>) {
    let status = match (&ws.run.phase, ws.hint) {
        (Phase::Loading, _) => "⟳ reading the session's last research run…".to_string(),
        (Phase::Running, _) => "⟳ starting…".to_string(),
        (_, Some(h)) => h.to_string(),
        _ => "no research run in this session yet".to_string(),
    };
    let keys = |a: &[&str]| hints::keys(v.keys, a).unwrap_or_default();
    super::think::empty_workspace(
        f,
        area,
        "Research",
        status,
        &[
            "A research run plans, has the plan audited against a written policy, and waits for you before any tool runs. Approved, the tools run one step at a time and the report cites what they found.",
            &format!(
                "{} types a question · enter plans it in the open session (a new one when none is open) · {} reviews a plan waiting for approval.",
                keys(&["ask_research"]),
                keys(&["review_plan"]),
            ),
            "A run made by `glassbox research` shows up here when its session is open.",
        ],
        v.theme,
    );
}

/// Where the four panes go: Plan over Audit on the left, Trace over Tools / Report on the
/// right (the report gets more room once it is there).
fn pane_rects(body: Rect, run: &RunView) -> [Rect; 4] {
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(body);
    let [plan, audit] =
        Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(left);
    let reported = run.state.as_ref().is_some_and(|s| s.final_report.is_some())
        || run.live_in(Pane::Report).is_some();
    let trace_pct = if reported { 30 } else { 45 };
    let [trace, report] = Layout::vertical([
        Constraint::Percentage(trace_pct),
        Constraint::Percentage(100 - trace_pct),
    ])
    .areas(right);
    [plan, audit, trace, report]
}

/// A pane's rows at `width`, and the row to keep in view (the selected step or citation).
fn pane_lines(
    ws: &ResearchView<'_>,
    p: Pane,
    width: usize,
    v: &ViewCx<'_>,
) -> (Vec<Line<'static>>, Option<usize>) {
    let theme = v.theme;
    let run = ws.run;
    let focused = ws.focus == p;
    match p {
        Pane::Plan => plan_lines(run, focused.then_some(ws.step), width, theme),
        Pane::Audit => (audit_lines(run, width, theme), None),
        Pane::Trace => (trace_lines(run, width, theme), None),
        Pane::Report => report_lines(run, ws.step, focused.then_some(ws.citation), width, v),
    }
}

fn pane_title(ws: &ResearchView<'_>, p: Pane) -> String {
    let run = ws.run;
    let st = run.state.as_ref();
    let live = if run.live_in(p).is_some() { " ⟳" } else { "" };
    match p {
        Pane::Plan => {
            let rev = st
                .and_then(|s| s.plan.as_ref())
                .map(|p| format!(" · revision {}", p.revision))
                .unwrap_or_default();
            format!(" Plan{rev}{live} ")
        }
        Pane::Audit => {
            let rev = st
                .map(|s| format!(" · {} of {} rejected", s.revision, s.max_plan_revisions))
                .unwrap_or_default();
            format!(" Audit{rev}{live} ")
        }
        Pane::Trace => {
            let n = st.map_or(0, |s| s.reasoning.len());
            format!(" Trace · {n} ")
        }
        Pane::Report => {
            if st.is_some_and(|s| s.final_report.is_some()) || run.live_in(p).is_some() {
                format!(" Report{live} ")
            } else {
                let i = run.running_step().unwrap_or(ws.step);
                if run.steps().is_empty() {
                    " Tools ".to_string()
                } else {
                    format!(" Tools · step {} ", i.min(run.steps().len() - 1) + 1)
                }
            }
        }
    }
}

fn panes(f: &mut Frame, body: Rect, ws: &ResearchView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let rects = pane_rects(body, ws.run);
    for (p, rect) in Pane::ALL.into_iter().zip(rects) {
        let focused = ws.focus == p;
        let block = pane(pane_title(ws, p), focused, theme);
        let inner = block.inner(rect);
        f.render_widget(block, rect);
        let (lines, anchor) = pane_lines(ws, p, inner.width as usize, v);
        let skip = skip_rows(
            lines.len(),
            inner.height as usize,
            ws.run.live_in(p).is_some() || p == Pane::Trace,
            if focused { ws.scroll } else { 0 },
            anchor,
        );
        let shown: Vec<Line> = lines
            .into_iter()
            .skip(skip)
            .take(inner.height as usize)
            .collect();
        f.render_widget(Paragraph::new(shown), inner);
    }
}

/// Rows to skip in a pane of `h` rows holding `len`: a streaming pane (and the trace) keeps
/// its newest rows in view, `scroll` rows back; another starts `scroll` rows down, moved
/// just enough to show the `anchor` row.
pub fn skip_rows(len: usize, h: usize, tail: bool, scroll: usize, anchor: Option<usize>) -> usize {
    let most = len.saturating_sub(h);
    if tail {
        return most.saturating_sub(scroll);
    }
    let mut skip = scroll.min(most);
    if let Some(a) = anchor {
        if a < skip {
            skip = a;
        } else if a >= skip + h {
            skip = a + 1 - h;
        }
    }
    skip.min(most)
}

/// The verdict's style: green approved, red rejected.
pub fn verdict_role(v: Verdict) -> Role {
    match v {
        Verdict::Approved => Role::Success,
        Verdict::Rejected => Role::Error,
    }
}

/// A trace entry's stage name as shown.
pub fn stage_name(s: Stage) -> &'static str {
    s.as_str()
}

mod content;
mod modal;
#[cfg(test)]
pub(crate) mod tests;
