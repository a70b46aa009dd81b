//! The Insights workspace: a header with what was analysed, then each insight (type,
//! confidence, description) with its evidence lines, which Enter follows to the node.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::hints;
use super::think::pane;
use super::verify::wrap;
use crate::app::action::{Action, Section};
use crate::app::insights_ws::{InsightsRun, Line as Row};
use crate::app::keymap::{Keymap, Mode};
use crate::app::state::State;
use crate::app::theme::{Role, Theme};

fn type_style(kind: &str, theme: &Theme) -> Style {
    theme.style(match kind {
        "bias_detection" => Role::Warning,
        "pattern" => Role::Decision,
        "improvement_hypothesis" => Role::Success,
        _ => Role::Fg,
    })
}

/// Draws the workspace into `area`.
pub fn render(f: &mut Frame, area: Rect, state: &State, theme: &Theme, keymap: &Keymap) {
    let mode = Mode::Workspace(Section::Insights);
    let ws = &state.insights;
    let running = ws.running.map(|focus| {
        format!(
            "⟳ analysing the session's recent reasoning{}… (esc cancels)",
            focus.map_or(String::new(), |f| format!(" (focus: {})", f.as_str()))
        )
    });
    let Some(r) = &ws.result else {
        let status = running
            .or_else(|| {
                ws.loading
                    .then(|| "⟳ reading the last insights…".to_string())
            })
            .or_else(|| ws.hint.clone())
            .unwrap_or_default();
        super::think::empty_workspace(
            f,
            area,
            "Insights",
            status,
            &[
                &format!(
                    "{} runs metacognition on the open session: biases, patterns and improvement hypotheses, each with evidence.",
                    hints::keys(keymap, mode, &[Action::RunInsights]).unwrap_or_default()
                ),
                &format!(
                    "Here: {}",
                    hints::line(
                        keymap,
                        mode,
                        &[
                            (
                                &[Action::MoveDown, Action::MoveUp],
                                "move between insights and evidence"
                            ),
                            (
                                &[Action::OpenEvidence],
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
    header(f, head, r, running, theme, keymap);
    list(f, body, r, ws.selected, theme);
}

fn header(
    f: &mut Frame,
    area: Rect,
    r: &InsightsRun,
    running: Option<String>,
    theme: &Theme,
    keymap: &Keymap,
) {
    let mode = Mode::Workspace(Section::Insights);
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
                keymap,
                mode,
                &[
                    (&[Action::MoveDown, Action::MoveUp], "move"),
                    (&[Action::OpenEvidence], "jumps to the evidence's node"),
                    (&[Action::RunInsights], "analyse again (with a focus)"),
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
