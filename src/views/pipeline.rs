//! The Pipeline workspace: a DeepEx run drawn as a glass box.
//!
//! A header holds the question line (the mode for the next run in front of it), the shown
//! run's state and a confidence gauge. Below it every layer is a pane in one vertical
//! stack: open while it runs (its thinking dimmed, then its text, the newest rows kept in
//! view), a table once a structured layer has its answer, a single line once it is done
//! unless it has the focus. The three ultra-deep solvers share one row of three columns;
//! the final answer closes the stack with the run's notes.

use std::collections::HashMap;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{LineGauge, Paragraph};
use serde_json::Value;

use self::content::{clip, final_lines, layer_lines, millis, one_line, summary};
use super::input::InputBox;
use super::theme::{Role, Theme};
use super::think::pane;
use super::{ViewCx, hints};
use crate::engines::pipeline::{Final, Layer, Mode};
use crate::store::{NodeId, RunId, SessionId};

/// How far one layer has got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LayerStatus {
    /// Expected by the mode, not started.
    #[default]
    Pending,
    Running,
    Done,
    /// Its answer could not be read, or the model call failed.
    Failed,
    /// Stopped before it finished (cancelled, or the process ended).
    Interrupted,
}

impl LayerStatus {
    pub fn marker(self) -> &'static str {
        match self {
            LayerStatus::Pending => "○",
            LayerStatus::Running => "⟳",
            LayerStatus::Done => "✓",
            LayerStatus::Failed => "✗",
            LayerStatus::Interrupted => "⏸",
        }
    }

    fn role(self) -> Role {
        match self {
            LayerStatus::Pending => Role::Dim,
            LayerStatus::Running => Role::Accent,
            LayerStatus::Done => Role::Success,
            LayerStatus::Failed => Role::Error,
            LayerStatus::Interrupted => Role::Warning,
        }
    }
}

/// One layer as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerPane {
    pub layer: Layer,
    /// Its `pipeline_layer` node, once the layer has started.
    pub node: Option<NodeId>,
    pub status: LayerStatus,
    /// Its answer (raw JSON for a structured layer).
    pub text: String,
    pub thinking: String,
    /// A structured layer's answer, once read.
    pub artifact: Option<Value>,
    pub error: Option<String>,
    pub duration_ms: Option<u64>,
    /// Finished by an earlier attempt of the run and taken over by a resume.
    pub resumed: bool,
}

impl LayerPane {
    pub fn pending(layer: Layer) -> Self {
        Self {
            layer,
            node: None,
            status: LayerStatus::Pending,
            text: String::new(),
            thinking: String::new(),
            artifact: None,
            error: None,
            duration_ms: None,
            resumed: false,
        }
    }
}

/// Where the shown run is.
pub use super::JobPhase as Phase;

/// A stack of panes: a layer, the three solvers together, or the final answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    Layer(Layer),
    Solvers,
    Final,
}

/// One pipeline run as shown: read from the store, or followed as it runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunView {
    pub run: Option<RunId>,
    pub session: Option<SessionId>,
    pub question: String,
    /// The mode asked for.
    pub requested: Option<Mode>,
    /// The mode that ran (the cortex's choice for `auto`, ultra-deep after an escalation).
    pub mode: Option<Mode>,
    pub phase: Phase,
    /// In layer order.
    pub layers: Vec<LayerPane>,
    /// Why deep escalated, when it did.
    pub escalation: Option<String>,
    pub answer: Option<String>,
    pub fin: Option<Final>,
}

impl RunView {
    pub fn pane(&self, layer: Layer) -> Option<&LayerPane> {
        self.layers.iter().find(|p| p.layer == layer)
    }

    /// The pane of `layer`, added as pending in its place when there is none yet.
    pub fn pane_mut(&mut self, layer: Layer) -> &mut LayerPane {
        let at = match self.layers.iter().position(|p| p.layer == layer) {
            Some(i) => i,
            None => {
                let i = self
                    .layers
                    .iter()
                    .position(|p| p.layer.order() > layer.order())
                    .unwrap_or(self.layers.len());
                self.layers.insert(i, LayerPane::pending(layer));
                i
            }
        };
        &mut self.layers[at]
    }

    /// The stack, top to bottom.
    pub fn units(&self) -> Vec<Unit> {
        let mut out = Vec::new();
        for p in &self.layers {
            let u = if p.layer.parallel_group().is_some() {
                Unit::Solvers
            } else {
                Unit::Layer(p.layer)
            };
            if !out.contains(&u) {
                out.push(u);
            }
        }
        if self.answer.is_some() || self.fin.is_some() || self.phase == Phase::Running {
            out.push(Unit::Final);
        }
        out
    }

    /// The status of a unit: the solvers' together, the final answer's own.
    pub fn status(&self, unit: Unit) -> LayerStatus {
        match unit {
            Unit::Layer(l) => self.pane(l).map_or(LayerStatus::Pending, |p| p.status),
            Unit::Solvers => {
                let all: Vec<LayerStatus> = self
                    .layers
                    .iter()
                    .filter(|p| p.layer.parallel_group().is_some())
                    .map(|p| p.status)
                    .collect();
                let any = |s: LayerStatus| all.contains(&s);
                if any(LayerStatus::Running) {
                    LayerStatus::Running
                } else if any(LayerStatus::Failed) {
                    LayerStatus::Failed
                } else if any(LayerStatus::Interrupted) {
                    LayerStatus::Interrupted
                } else if !all.is_empty() && all.iter().all(|s| *s == LayerStatus::Done) {
                    LayerStatus::Done
                } else {
                    LayerStatus::Pending
                }
            }
            Unit::Final => {
                if self.fin.is_some() || self.answer.is_some() {
                    LayerStatus::Done
                } else {
                    LayerStatus::Pending
                }
            }
        }
    }

    pub fn escalated(&self) -> bool {
        self.escalation.is_some() || self.fin.as_ref().is_some_and(|f| f.was_escalated)
    }
}

/// Whether `unit` is drawn open: as `toggled` says when the user folded it, else open while
/// it runs, when it has the focus, and always for the final answer.
pub fn is_open(
    run: &RunView,
    unit: Unit,
    focus: Option<Unit>,
    toggled: &HashMap<Unit, bool>,
) -> bool {
    if let Some(open) = toggled.get(&unit) {
        return *open;
    }
    unit == Unit::Final || Some(unit) == focus || run.status(unit) == LayerStatus::Running
}

/// What the workspace draws.
pub struct PipelineView<'a> {
    pub run: &'a RunView,
    /// The question line.
    pub input: &'a InputBox,
    /// The mode the next run asks for.
    pub mode: Mode,
    /// Keys go to the question line.
    pub typing: bool,
    pub focus: Option<Unit>,
    /// Units the user opened (`true`) or closed (`false`).
    pub toggled: &'a HashMap<Unit, bool>,
    /// Rows the focused pane is scrolled down.
    pub scroll: usize,
    /// Why there is nothing to show, when there is not.
    pub hint: Option<&'a str>,
}

/// The confidence's style by seed 003's bands: green from 90, yellow from 70, red below.
pub fn confidence_role(c: u32) -> Role {
    if c >= 90 {
        Role::ConfidenceHigh
    } else if c >= 70 {
        Role::ConfidenceMid
    } else {
        Role::ConfidenceLow
    }
}

/// Draws the workspace into `area`.
pub fn render(f: &mut Frame, area: Rect, ws: &PipelineView<'_>, v: &ViewCx<'_>) {
    let [head, body] = Layout::vertical([Constraint::Length(5), Constraint::Min(1)]).areas(area);
    header(f, head, ws, v);
    if ws.run.layers.is_empty() && ws.run.answer.is_none() {
        empty(f, body, ws, v);
    } else {
        stack(f, body, ws, v.theme);
    }
}

/// The rows of the focused pane's content at `width`: how far it can scroll.
pub fn focused_rows(ws: &PipelineView<'_>, width: u16, theme: &Theme) -> usize {
    let Some(focus) = focus_of(ws) else {
        return 0;
    };
    item(ws, focus, width as usize, theme)
        .cols
        .iter()
        .map(|c| c.lines.len())
        .max()
        .unwrap_or(0)
}

fn focus_of(ws: &PipelineView<'_>) -> Option<Unit> {
    let units = ws.run.units();
    ws.focus
        .filter(|u| units.contains(u))
        .or(units.last().copied())
}

fn header(f: &mut Frame, area: Rect, ws: &PipelineView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let block = pane(" Pipeline ", ws.typing, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [ask, state, meter] = Layout::vertical([Constraint::Length(1); 3]).areas(inner);

    // The question line: `[deep] ▏question…`.
    let tag = format!("[{}] ", ws.mode.as_str());
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
            hints::line(
                v.keys,
                &[
                    (&["ask_pipeline"], "asks a question"),
                    (&["pipeline_mode"], "changes the mode"),
                ],
            ),
            dim,
        ));
    } else {
        let shown: String = text.chars().skip(start).take(room).collect();
        let used = shown.chars().count();
        spans.push(Span::styled(shown, theme.style(Role::Query)));
        if ws.typing && used + 40 < room {
            spans.push(Span::styled(
                "   enter runs · tab changes the mode · esc leaves",
                dim,
            ));
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), ask);
    if ws.typing {
        let x = ask.x + (lead + col - start).min(ask.width.saturating_sub(1) as usize) as u16;
        f.set_cursor_position((x, ask.y));
    }

    f.render_widget(Paragraph::new(status_line(ws.run, theme)), state);

    // Confidence gauge, then the keys that matter now.
    let run = ws.run;
    let gauge_w = if run.fin.is_some() {
        (meter.width / 2).clamp(20, 44)
    } else {
        0
    };
    let [gauge, keys] =
        Layout::horizontal([Constraint::Length(gauge_w), Constraint::Min(1)]).areas(meter);
    if let Some(fin) = &run.fin {
        match fin.confidence {
            Some(c) => {
                let style = theme.style(confidence_role(c));
                f.render_widget(
                    LineGauge::default()
                        .ratio(f64::from(c.min(100)) / 100.0)
                        .label(Span::styled(format!("confidence {c:>3}% "), style))
                        .filled_symbol("█")
                        .unfilled_symbol("░")
                        .filled_style(style)
                        .unfilled_style(dim),
                    gauge,
                );
            }
            None => f.render_widget(
                Paragraph::new(Span::styled(
                    "confidence unknown",
                    theme.style(Role::Warning),
                )),
                gauge,
            ),
        }
    }
    let hint: &[hints::Hint<'_>] = match run.phase {
        Phase::Running => &[
            (&["cancel_run"], "cancels"),
            (&["move_down", "move_up"], "move"),
            (&["toggle_layer"], "folds"),
        ],
        Phase::Interrupted | Phase::Failed(_) => &[
            (&["resume_pipeline"], "resumes"),
            (&["move_down", "move_up"], "move"),
            (&["toggle_layer"], "folds"),
            (&["page_down", "page_up"], "scroll"),
        ],
        _ => &[
            (&["move_down", "move_up"], "move"),
            (&["toggle_layer"], "folds"),
            (&["page_down", "page_up"], "scroll"),
        ],
    };
    let hint: &[hints::Hint<'_>] = if run.layers.is_empty() { &[] } else { hint };
    let pad = if gauge_w > 0 { "  " } else { "" };
    f.render_widget(
        Paragraph::new(Span::styled(
            clip(
                &format!("{pad}{}", hints::line(v.keys, hint)),
                keys.width as usize,
            ),
            dim,
        )),
        keys,
    );
}

fn status_line(run: &RunView, theme: &Theme) -> Line<'static> {
    let dim = theme.style(Role::Dim);
    let (text, role) = match &run.phase {
        Phase::Empty => ("no run yet".to_string(), Role::Dim),
        Phase::Loading => ("⟳ reading the last run…".to_string(), Role::Accent),
        Phase::Running => ("⟳ running".to_string(), Role::Accent),
        Phase::Done => ("✓ done".to_string(), Role::Success),
        Phase::Interrupted => ("⏸ interrupted".to_string(), Role::Warning),
        Phase::Failed(e) => (format!("✗ failed: {}", clip(&one_line(e), 48)), Role::Error),
        Phase::Elsewhere => ("◌ running elsewhere".to_string(), Role::Warning),
    };
    let mut spans = vec![Span::styled(text, theme.style(role))];
    let mode = match (run.requested, run.mode) {
        (Some(r), Some(m)) if r != m && !(r == Mode::Deep && run.escalated()) => {
            format!("{} → {}", r.as_str(), m.as_str())
        }
        (_, Some(m)) => m.as_str().to_string(),
        (Some(r), None) => r.as_str().to_string(),
        (None, None) => String::new(),
    };
    if !mode.is_empty() {
        spans.push(Span::styled(" · ", dim));
        spans.push(Span::styled(mode, theme.style(Role::Title)));
    }
    if run.escalated() {
        spans.push(Span::raw(" "));
        spans.push(Span::styled(
            " ▲ ESCALATED ",
            theme
                .style(Role::Warning)
                .add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ));
    }
    if !run.layers.is_empty() {
        let done = run
            .layers
            .iter()
            .filter(|p| matches!(p.status, LayerStatus::Done | LayerStatus::Failed))
            .count();
        let total: u64 = run.layers.iter().filter_map(|p| p.duration_ms).sum();
        spans.push(Span::styled(
            format!(
                " · {done}/{} layers · Σ {}",
                run.layers.len(),
                millis(total)
            ),
            dim,
        ));
        let failed = run
            .layers
            .iter()
            .filter(|p| p.status == LayerStatus::Failed)
            .count();
        if failed > 0 {
            spans.push(Span::styled(
                format!(" · {failed} failed"),
                theme.style(Role::Error),
            ));
        }
    }
    if !run.question.is_empty() {
        spans.push(Span::styled(
            format!(" · “{}”", clip(&one_line(&run.question), 60)),
            theme.style(Role::Query),
        ));
    }
    Line::from(spans)
}

fn empty(f: &mut Frame, area: Rect, ws: &PipelineView<'_>, v: &ViewCx<'_>) {
    let status = match (&ws.run.phase, ws.hint) {
        (Phase::Loading, _) => "⟳ reading the session's last pipeline run…".to_string(),
        (_, Some(h)) => h.to_string(),
        _ => "no pipeline run in this session yet".to_string(),
    };
    let keys = |a: &[&str]| hints::keys(v.keys, a).unwrap_or_default();
    super::think::empty_workspace(
        f,
        area,
        "Layers",
        status,
        &[
            "Every layer of a DeepEx run shows up here as it runs: the classification, then the decomposition, solver, critic, refiner and confidence gate of deep mode; ultra-deep puts three solvers side by side before the skeptic, verifier and synthesis.",
            &format!(
                "{} types a question · {} cycles auto → instant → deep → ultra_deep · enter runs it in the open session (a new one when none is open).",
                keys(&["ask_pipeline"]),
                keys(&["pipeline_mode"]),
            ),
            "A run made by `glassbox ask --mode deep` shows up here when its session is open.",
        ],
        v.theme,
    );
}

/// One column of an open unit: its pane title and content.
struct Col {
    title: String,
    status: LayerStatus,
    lines: Vec<Line<'static>>,
    /// Keep the newest rows in view (it is still streaming).
    tail: bool,
}

/// A unit ready to draw: one line when closed, columns when open.
struct Item {
    unit: Unit,
    open: bool,
    line: Line<'static>,
    cols: Vec<Col>,
}

impl Item {
    /// Rows it wants, borders included.
    fn full(&self) -> usize {
        if self.open {
            self.cols
                .iter()
                .map(|c| c.lines.len())
                .max()
                .unwrap_or(0)
                .max(1)
                + 2
        } else {
            1
        }
    }
}

fn item(ws: &PipelineView<'_>, unit: Unit, width: usize, theme: &Theme) -> Item {
    let run = ws.run;
    let focus = focus_of(ws);
    let open = is_open(run, unit, focus, ws.toggled);
    let focused = focus == Some(unit);
    let mark = if focused { "▶" } else { " " };
    let status = run.status(unit);
    let inner = width.saturating_sub(2);
    let solvers: Vec<&LayerPane> = run
        .layers
        .iter()
        .filter(|p| p.layer.parallel_group().is_some())
        .collect();
    let (label, duration, summary, cols) = match unit {
        Unit::Layer(l) => {
            let p = run.pane(l);
            let summary = p.map_or_else(String::new, summary);
            let duration = p.and_then(|p| p.duration_ms);
            let cols = match p {
                Some(p) if open => vec![layer_col(p, inner, theme)],
                _ => Vec::new(),
            };
            (l.label().to_string(), duration, summary, cols)
        }
        Unit::Solvers => {
            let summary = solvers
                .iter()
                .map(|p| {
                    let name = p.layer.label().split(" · ").next().unwrap_or("");
                    let took = p.duration_ms.map(millis).unwrap_or_default();
                    format!("{name} {} {took}", p.status.marker())
                        .trim_end()
                        .to_string()
                })
                .collect::<Vec<_>>()
                .join(" · ");
            let duration = solvers.iter().filter_map(|p| p.duration_ms).max();
            let col_w = (inner / solvers.len().max(1)).saturating_sub(2);
            let cols = if open {
                solvers.iter().map(|p| layer_col(p, col_w, theme)).collect()
            } else {
                Vec::new()
            };
            ("Solvers side by side".to_string(), duration, summary, cols)
        }
        Unit::Final => {
            let conf = run
                .fin
                .as_ref()
                .and_then(|f| f.confidence)
                .map(|c| format!("confidence {c}% · "))
                .unwrap_or_default();
            let summary = match &run.answer {
                Some(a) => format!("{conf}{}", one_line(a)),
                None => "waiting for the last layer".to_string(),
            };
            let cols = if open {
                vec![Col {
                    title: format!(" {} Final answer ", status.marker()),
                    status,
                    lines: final_lines(run, inner, theme),
                    tail: false,
                }]
            } else {
                Vec::new()
            };
            ("Final answer".to_string(), None, summary, cols)
        }
    };
    let took = duration.map(millis).unwrap_or_default();
    let head = format!("{mark}{} {label:<24} {took:>7}  ", status.marker());
    let rest = clip(&summary, width.saturating_sub(head.chars().count()));
    let mut line = Line::from(vec![
        Span::styled(head, theme.style(status.role())),
        Span::styled(rest, theme.style(Role::Dim)),
    ]);
    if focused {
        line = line.patch_style(theme.style(Role::Selection));
    }
    Item {
        unit,
        open,
        line,
        cols,
    }
}

fn layer_col(p: &LayerPane, width: usize, theme: &Theme) -> Col {
    let took = p
        .duration_ms
        .map(millis)
        .map_or(String::new(), |d| format!(" · {d}"));
    let resumed = if p.resumed { " · earlier attempt" } else { "" };
    Col {
        title: format!(" {} {}{took}{resumed} ", p.status.marker(), p.layer.label()),
        status: p.status,
        lines: layer_lines(p, width, theme),
        tail: matches!(p.status, LayerStatus::Running | LayerStatus::Interrupted),
    }
}

/// The stack of units under the header, keeping the focused one in view.
fn stack(f: &mut Frame, area: Rect, ws: &PipelineView<'_>, theme: &Theme) {
    let units = ws.run.units();
    let focus = focus_of(ws);
    let items: Vec<Item> = units
        .iter()
        .map(|u| item(ws, *u, area.width as usize, theme))
        .collect();
    let room = area.height as usize;
    let fi = items
        .iter()
        .position(|i| Some(i.unit) == focus)
        .unwrap_or(0);
    // Rows each unit gets: open panes but the focused one at most 10 (a streaming one 12),
    // the focused one as many as it needs.
    let mut heights: Vec<usize> = items
        .iter()
        .enumerate()
        .map(|(n, it)| {
            let full = it.full();
            if !it.open || n == fi {
                full.min(room)
            } else if ws.run.status(it.unit) == LayerStatus::Running {
                full.min(12)
            } else {
                full.min(10)
            }
        })
        .collect();
    // Too tall: open panes other than the focused one shrink to three rows of content.
    if heights.iter().sum::<usize>() > room {
        for (n, it) in items.iter().enumerate() {
            if it.open && n != fi {
                heights[n] = heights[n].min(5);
            }
        }
    }
    // Room to spare: the focused, then running, then the final pane grow back.
    let mut spare = room.saturating_sub(heights.iter().sum());
    let mut order: Vec<usize> = vec![fi];
    order.extend(
        (0..items.len())
            .filter(|n| *n != fi && ws.run.status(items[*n].unit) == LayerStatus::Running),
    );
    order.extend((0..items.len()).filter(|n| items[*n].unit == Unit::Final && *n != fi));
    for n in order {
        if !items[n].open {
            continue;
        }
        let grow = items[n].full().saturating_sub(heights[n]).min(spare);
        heights[n] += grow;
        spare -= grow;
    }
    // The units in view: the focused one with as many before it as fit, then after it; a
    // row above and below says how many are out of view.
    let mut span = window(&heights, fi, room);
    for _ in 0..3 {
        let reserve = usize::from(span.0 > 0) + usize::from(span.1 < items.len());
        let next = window(&heights, fi, room.saturating_sub(reserve));
        if next == span {
            break;
        }
        span = next;
    }
    let (first, last) = span;
    let bottom = area.y + area.height;
    let mut y = area.y;
    let more = |f: &mut Frame, y: u16, text: String| {
        let rect = Rect {
            y,
            height: 1,
            ..area
        };
        f.render_widget(
            Paragraph::new(Span::styled(text, theme.style(Role::Dim))),
            rect,
        );
    };
    if first > 0 && y < bottom {
        more(f, y, format!("  ↑ {first} more above"));
        y += 1;
    }
    for n in first..last {
        let h = (heights[n] as u16).min(bottom.saturating_sub(y));
        if h == 0 {
            break;
        }
        let rect = Rect {
            y,
            height: h,
            ..area
        };
        draw_item(f, rect, &items[n], n == fi, ws.scroll, theme);
        y += h;
    }
    if last < items.len() && y < bottom {
        more(f, y, format!("  ↓ {} more below", items.len() - last));
    }
}

/// The units `first..last` that fit in `room` rows around the focused unit `fi`: as many
/// before it as fit, then as many after it.
fn window(heights: &[usize], fi: usize, room: usize) -> (usize, usize) {
    let mut used = heights.get(fi).copied().unwrap_or(0).min(room);
    let mut first = fi;
    while first > 0 && used + heights[first - 1] <= room {
        first -= 1;
        used += heights[first];
    }
    let mut last = (fi + 1).min(heights.len());
    while last < heights.len() && used + heights[last] <= room {
        used += heights[last];
        last += 1;
    }
    (first, last)
}

fn draw_item(f: &mut Frame, area: Rect, it: &Item, focused: bool, scroll: usize, theme: &Theme) {
    if !it.open {
        f.render_widget(Paragraph::new(it.line.clone()), area);
        return;
    }
    let n = it.cols.len().max(1) as u32;
    let rects = Layout::horizontal((0..n).map(|_| Constraint::Ratio(1, n))).split(area);
    for (col, rect) in it.cols.iter().zip(rects.iter()) {
        let title = Line::from(Span::styled(
            col.title.clone(),
            theme.style(col.status.role()),
        ));
        let block = pane(title, focused, theme);
        let inner = block.inner(*rect);
        f.render_widget(block, *rect);
        let h = inner.height as usize;
        let len = col.lines.len();
        let skip = if col.tail {
            len.saturating_sub(h)
        } else if focused {
            scroll.min(len.saturating_sub(h))
        } else {
            0
        };
        let shown: Vec<Line> = col.lines.iter().skip(skip).take(h).cloned().collect();
        f.render_widget(Paragraph::new(shown), inner);
    }
}

mod content;
#[cfg(test)]
mod tests;
