//! The Insights workspace: a header with what was analysed, then each insight (type,
//! confidence, description) with its evidence lines, which Enter follows to the node.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme::{Role, Theme};
use super::think::pane;
use super::verify::wrap;
use super::{ViewCx, hints};
use crate::store::{NodeId, NodeType, RunId, SessionId};

/// One piece of evidence as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct EvidenceView {
    pub node: NodeId,
    /// The node's type, when it is still stored.
    pub kind: Option<NodeType>,
    pub excerpt: String,
    pub relevance: f64,
}

/// One insight as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct InsightRow {
    pub kind: String,
    pub text: String,
    pub confidence: f64,
    pub evidence: Vec<EvidenceView>,
}

/// A stored insights run as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct InsightsRun {
    pub session: SessionId,
    pub run: RunId,
    pub focus: Option<String>,
    pub nodes_analyzed: usize,
    /// Evidence references to nodes that were not analysed (possible hallucinations).
    pub hallucinated: usize,
    pub validation_errors: usize,
    pub summary: Option<String>,
    pub insights: Vec<InsightRow>,
}

/// A selectable line: an insight, or one of its evidence entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsightLine {
    Insight(usize),
    Evidence(usize, usize),
}

impl InsightsRun {
    /// Every selectable line in display order.
    pub fn lines(&self) -> Vec<InsightLine> {
        let mut out = Vec::new();
        for (i, ins) in self.insights.iter().enumerate() {
            out.push(InsightLine::Insight(i));
            out.extend((0..ins.evidence.len()).map(|j| InsightLine::Evidence(i, j)));
        }
        out
    }
}

/// What the workspace draws.
pub struct InsightsView<'a> {
    pub result: Option<&'a InsightsRun>,
    /// Index into [`InsightsRun::lines`].
    pub selected: usize,
    /// What is under way, when an analysis runs ("analysing…").
    pub running: Option<String>,
    pub loading: bool,
    pub hint: Option<&'a str>,
}

type Row = InsightLine;

fn type_style(kind: &str, theme: &Theme) -> Style {
    theme.style(match kind {
        "bias_detection" => Role::Warning,
        "pattern" => Role::Decision,
        "improvement_hypothesis" => Role::Success,
        _ => Role::Fg,
    })
}

/// Draws the workspace into `area`.
pub fn render(f: &mut Frame, area: Rect, ws: &InsightsView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let running = ws.running.clone();
    let Some(r) = ws.result else {
        let status = running
            .or_else(|| {
                ws.loading
                    .then(|| "⟳ reading the last insights…".to_string())
            })
            .or_else(|| ws.hint.map(str::to_string))
            .unwrap_or_default();
        super::think::empty_workspace(
            f,
            area,
            "Insights",
            status,
            &[
                &format!(
                    "{} runs metacognition on the open session: biases, patterns and improvement hypotheses, each with evidence.",
                    hints::keys(v.keys, &["run_insights"]).unwrap_or_default()
                ),
                &format!(
                    "Here: {}",
                    hints::line(
                        v.keys,
                        &[
                            (
                                &["move_down", "move_up"],
                                "move between insights and evidence"
                            ),
                            (
                                &["open_evidence"],
                                "jumps to the evidence's node in the Think graph"
                            ),
                        ]
                    )
                ),
            ],
            theme,
        );
        return;
    };
    let summary_lines = r.summary.as_deref().map_or(0, |s| {
        wrap(s, area.width.saturating_sub(4) as usize).len().min(4)
    });
    let [head, body] = Layout::vertical([
        Constraint::Length(4 + summary_lines as u16),
        Constraint::Min(3),
    ])
    .areas(area);
    header(f, head, r, running, v);
    list(f, body, r, ws.selected, theme);
}

fn header(f: &mut Frame, area: Rect, r: &InsightsRun, running: Option<String>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("{} insights", r.insights.len()),
            theme.style(Role::Title),
        ),
        Span::styled(format!(" · {} nodes analysed", r.nodes_analyzed), dim),
        Span::styled(" · ", dim),
        Span::styled(
            format!("{} hallucinated references dropped", r.hallucinated),
            if r.hallucinated > 0 {
                theme.style(Role::Warning)
            } else {
                dim
            },
        ),
        Span::styled(
            if r.validation_errors > 0 {
                format!(" · {} malformed insights dropped", r.validation_errors)
            } else {
                String::new()
            },
            theme.style(Role::Warning),
        ),
        Span::styled(
            format!(" · focus: {}", r.focus.as_deref().unwrap_or("none")),
            dim,
        ),
    ])];
    if let Some(s) = &r.summary {
        for l in wrap(s, area.width.saturating_sub(4) as usize)
            .into_iter()
            .take(4)
        {
            lines.push(Line::raw(l));
        }
    }
    lines.push(match running {
        Some(s) => Line::styled(s, theme.style(Role::Accent)),
        None => Line::styled(
            hints::line(
                v.keys,
                &[
                    (&["move_down", "move_up"], "move"),
                    (&["open_evidence"], "jumps to the evidence's node"),
                    (&["run_insights"], "analyse again (with a focus)"),
                ],
            ),
            dim,
        ),
    });
    f.render_widget(
        Paragraph::new(lines).block(pane(" Insights ", true, theme)),
        area,
    );
}

fn list(f: &mut Frame, area: Rect, r: &InsightsRun, selected: usize, theme: &Theme) {
    let block = pane(" Insights and evidence ", false, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let width = inner.width as usize;
    let height = inner.height as usize;
    let dim = theme.style(Role::Dim);
    let sel_style = theme.style(Role::Selection);
    let mut lines: Vec<Line> = Vec::new();
    let mut sel_span = (0, 0);
    for (n, row) in r.lines().into_iter().enumerate() {
        let is_sel = n == selected;
        let mark = Span::styled(if is_sel { "▶ " } else { "  " }, theme.style(Role::Accent));
        let patch = |st: Style| if is_sel { st.patch(sel_style) } else { st };
        let start = lines.len();
        match row {
            Row::Insight(i) => {
                let ins = &r.insights[i];
                if i > 0 {
                    lines.push(Line::raw(""));
                }
                let head = format!("{:<23}", ins.kind);
                let conf = format!("{:.2}  ", ins.confidence);
                let indent = 2 + head.chars().count() + conf.chars().count();
                for (k, t) in wrap(&ins.text, width.saturating_sub(indent))
                    .into_iter()
                    .enumerate()
                {
                    lines.push(if k == 0 {
                        Line::from(vec![
                            mark.clone(),
                            Span::styled(head.clone(), patch(type_style(&ins.kind, theme))),
                            Span::styled(
                                conf.clone(),
                                patch(theme.confidence_style(ins.confidence)),
                            ),
                            Span::styled(t, patch(theme.style(Role::Fg))),
                        ])
                    } else {
                        Line::from(vec![
                            Span::raw(" ".repeat(indent)),
                            Span::styled(t, patch(theme.style(Role::Fg))),
                        ])
                    });
                }
                if ins.evidence.is_empty() {
                    lines.push(Line::styled(
                        format!("{}(no evidence cited)", " ".repeat(indent)),
                        dim,
                    ));
                }
            }
            Row::Evidence(i, j) => {
                let e = &r.insights[i].evidence[j];
                let kind = e.kind.map_or("missing", |k| k.as_str());
                let lead = format!("    → {:<10} {}  ", kind, e.node.short());
                let rel = format!("relevance {:.2}  ", e.relevance);
                let indent = 2 + lead.chars().count() + rel.chars().count();
                let quoted = format!("“{}”", e.excerpt.trim());
                for (k, t) in wrap(&quoted, width.saturating_sub(indent))
                    .into_iter()
                    .enumerate()
                {
                    lines.push(if k == 0 {
                        Line::from(vec![
                            mark.clone(),
                            Span::styled(lead.clone(), patch(theme.node_style(kind))),
                            Span::styled(rel.clone(), patch(theme.confidence_style(e.relevance))),
                            Span::styled(t, patch(dim)),
                        ])
                    } else {
                        Line::from(vec![Span::raw(" ".repeat(indent)), Span::styled(t, dim)])
                    });
                }
            }
        }
        if is_sel {
            sel_span = (start, lines.len());
        }
    }
    let (start, end) = sel_span;
    let offset = if end <= height {
        0
    } else if end - start >= height {
        start
    } else {
        end - height
    };
    let visible: Vec<Line> = lines.into_iter().skip(offset).take(height).collect();
    f.render_widget(Paragraph::new(visible), inner);
}
