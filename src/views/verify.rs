//! The Verify workspace: a header with the chain score, a heat strip with one cell per
//! step, the steps with their verdict gutter (model ✓ ✗ ~ ?, human H✓ H✗ H~), issues and
//! corrections, and the patterns found across steps.
//!
//! The steps are drawn by tui-tree-widget as a chain of items, each step one item of several
//! lines; only the steps in view are handed over, cut to the lines that show. The widget's
//! highlight symbol is the `▶` gutter; the workspace keeps the selection.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Clear, Paragraph, Wrap};
use tui_tree_widget::{Tree, TreeItem, TreeState};

use super::overlay::centered;
use super::theme::{Role, Theme};
use super::think::pane;
use super::{ViewCx, hints};
use crate::engines::verify::{Issue, Pattern, Severity, Verdict};
use crate::store::{NodeId, RunId, SessionId};

/// A human checkpoint on a step's node (the newest one counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HumanMark {
    Agree,
    Questionable,
    Disagree,
}

/// One verified step as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct StepView {
    /// The stored `verify_step` node.
    pub node: NodeId,
    pub index: usize,
    pub kind: Option<String>,
    pub text: String,
    pub verdict: Verdict,
    pub confidence: f64,
    pub explanation: String,
    pub issues: Vec<Issue>,
    pub correction: Option<String>,
    pub human: Option<HumanMark>,
    /// The newest corrected branch reasoned from this step, if any.
    pub branch: Option<String>,
    /// Why the verifier's answer on this step could not be read: then the step has no
    /// verdict and is drawn as an error.
    pub unreadable: Option<String>,
}

impl StepView {
    /// The verdict's glyph and style, or `!` in the error colour when the answer was not read.
    fn mark(&self, theme: &Theme) -> (&'static str, Style) {
        match self.unreadable {
            Some(_) => ("!", theme.style(Role::Error)),
            None => (glyph(self.verdict), verdict_style(self.verdict, theme)),
        }
    }
}

/// A stored verification run as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Verification {
    pub session: SessionId,
    pub run: RunId,
    /// The thinking node whose steps were verified.
    pub source: Option<NodeId>,
    pub question: Option<String>,
    pub score: f64,
    pub valid: bool,
    pub threshold: f64,
    /// Index of the first incorrect step; −1 when none is.
    pub first_error: i64,
    pub summary: String,
    pub model: String,
    pub patterns: Vec<Pattern>,
    pub steps: Vec<StepView>,
}

impl Verification {
    /// Indexes of the incorrect steps (and steps a human disagreed with).
    pub fn failing(&self) -> Vec<usize> {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.verdict == Verdict::Incorrect || s.human == Some(HumanMark::Disagree)
            })
            .map(|(i, _)| i)
            .collect()
    }
}

/// What the workspace is busy with, as the view words it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Progress {
    #[default]
    Idle,
    /// The stored verification is being read.
    Loading,
    /// A verification of this many steps is running.
    Verifying { steps: usize },
    /// A corrected branch is being reasoned at this step.
    Forking { step: usize },
}

/// What the workspace draws.
#[derive(Clone, Copy, Debug)]
pub struct VerifyView<'a> {
    pub result: Option<&'a Verification>,
    /// The selected step.
    pub selected: usize,
    /// Whether the selected step's detail popup is open.
    pub detail: bool,
    pub progress: Progress,
    /// Why nothing is shown (no run stored, or the last error).
    pub hint: Option<&'a str>,
}

/// The gutter glyph of a model verdict.
pub fn glyph(v: Verdict) -> &'static str {
    match v {
        Verdict::Correct => "✓",
        Verdict::Incorrect => "✗",
        Verdict::Neutral => "~",
        Verdict::Uncertain => "?",
    }
}

fn verdict_style(v: Verdict, theme: &Theme) -> Style {
    theme.style(match v {
        Verdict::Correct => Role::Success,
        Verdict::Incorrect => Role::Error,
        Verdict::Neutral => Role::Dim,
        Verdict::Uncertain => Role::Warning,
    })
}

fn human_glyph(h: Option<HumanMark>, theme: &Theme) -> Span<'static> {
    match h {
        Some(HumanMark::Agree) => Span::styled("H✓", theme.style(Role::Success)),
        Some(HumanMark::Questionable) => Span::styled("H~", theme.style(Role::Warning)),
        Some(HumanMark::Disagree) => Span::styled("H✗", theme.style(Role::Error)),
        None => Span::raw("  "),
    }
}

/// Word-wraps `text` to `width` columns (hard-breaking words longer than a line).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut out = Vec::new();
    for para in text.lines() {
        let mut line = String::new();
        let mut len = 0usize;
        for word in para.split_whitespace() {
            let mut w: Vec<char> = word.chars().collect();
            while w.len() > width {
                if len > 0 {
                    out.push(std::mem::take(&mut line));
                    len = 0;
                }
                out.push(w.drain(..width).collect());
            }
            let wl = w.len();
            if len > 0 && len + 1 + wl > width {
                out.push(std::mem::take(&mut line));
                len = 0;
            }
            if len > 0 {
                line.push(' ');
                len += 1;
            }
            line.extend(w);
            len += wl;
        }
        if len > 0 || out.is_empty() {
            out.push(line);
        }
    }
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

fn first_line(text: &str, max: usize) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > max {
        let mut s: String = one.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    } else {
        one
    }
}

/// Draws the workspace into `area`.
pub fn render(f: &mut Frame, area: Rect, ws: &VerifyView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let Some(r) = ws.result else {
        let status = match ws.progress {
            Progress::Verifying { steps } => {
                format!(
                    "⟳ verifying {steps} steps — one judge call per step, results arrive when all are judged… (esc cancels)"
                )
            }
            Progress::Loading => "⟳ reading the last verification…".into(),
            _ => ws.hint.unwrap_or_default().to_string(),
        };
        super::think::empty_workspace(
            f,
            area,
            "Verify",
            status,
            &[
                &format!(
                    "{} verifies the thinking node selected in the Think graph (or its turn's thinking) step by step.",
                    hints::keys(v.keys, &["verify_node"]).unwrap_or_default()
                ),
                &format!(
                    "Here: {}",
                    hints::line(
                        v.keys,
                        &[
                            (&["move_down", "move_up"], "move between steps"),
                            (&["next_error", "prev_error"], "next/previous failing step"),
                            (&["select"], "step detail"),
                            (&["fork_at_error"], "corrected branch at the step"),
                        ]
                    )
                ),
            ],
            theme,
        );
        return;
    };
    let pattern_h = if r.patterns.is_empty() {
        3
    } else {
        (r.patterns.len() as u16 + 2).min(8)
    };
    let [head, body, pats] = Layout::vertical([
        Constraint::Length(6),
        Constraint::Min(3),
        Constraint::Length(pattern_h),
    ])
    .areas(area);
    header(f, head, ws, r, v);
    steps(f, body, r, ws.selected, theme);
    patterns(f, pats, r, theme);
    if ws.detail
        && let Some(s) = r.steps.get(ws.selected)
    {
        detail(f, area, s, theme);
    }
}

fn header(f: &mut Frame, area: Rect, ws: &VerifyView<'_>, r: &Verification, v: &ViewCx<'_>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let count = |v: Verdict| r.steps.iter().filter(|s| s.verdict == v).count();
    let mut lines = Vec::new();
    let question = r.question.as_deref().map_or_else(
        || "a reasoning chain".to_string(),
        |q| format!("the thinking on “{}”", first_line(q, 90)),
    );
    lines.push(Line::from(vec![
        Span::styled("Verified ", dim),
        Span::styled(question, theme.style(Role::Thinking)),
        Span::styled(format!(" · {} steps", r.steps.len()), dim),
        Span::styled(
            if r.model.is_empty() {
                String::new()
            } else {
                format!(" · judged by {}", r.model)
            },
            dim,
        ),
    ]));
    lines.push(Line::from(vec![
        Span::styled("score ", dim),
        Span::styled(format!("{:.2}", r.score), theme.confidence_style(r.score)),
        Span::raw("  "),
        if r.valid {
            Span::styled(
                format!("✓ valid (≥ {:.2})", r.threshold),
                theme.style(Role::Success),
            )
        } else {
            Span::styled(
                format!("✗ not valid (< {:.2})", r.threshold),
                theme.style(Role::Error),
            )
        },
        Span::raw("  "),
        if r.first_error >= 0 {
            Span::styled(
                format!("first error at step {}", r.first_error),
                theme.style(Role::Error).add_modifier(Modifier::BOLD),
            )
        } else {
            Span::styled("no incorrect step", theme.style(Role::Success))
        },
        Span::styled(
            format!(
                "   {} ✓  {} ✗  {} ~  {} ?",
                count(Verdict::Correct),
                count(Verdict::Incorrect),
                count(Verdict::Neutral),
                count(Verdict::Uncertain)
            ),
            dim,
        ),
    ]));
    // The heat strip: one cell per step, coloured by verdict, shaded by confidence.
    let mut strip = vec![Span::styled("steps ", dim)];
    let cell_w = ((area.width.saturating_sub(10) as usize) / r.steps.len().max(1)).clamp(1, 6);
    for (i, s) in r.steps.iter().enumerate() {
        let shade = match s.confidence {
            c if c >= 0.75 => '█',
            c if c >= 0.5 => '▓',
            c if c >= 0.25 => '▒',
            _ => '░',
        };
        let mut st = s.mark(theme).1;
        if i == ws.selected {
            st = st.add_modifier(Modifier::REVERSED);
        }
        let cell: String = std::iter::repeat_n(shade, cell_w).collect();
        strip.push(Span::styled(cell, st));
    }
    lines.push(Line::from(strip));
    let status = match ws.progress {
        Progress::Verifying { steps } => Some(format!(
            "⟳ verifying {steps} steps — one judge call per step…"
        )),
        Progress::Forking { step } => {
            Some(format!("⟳ writing a corrected branch from step {step}…"))
        }
        Progress::Loading => Some("⟳ reading…".into()),
        Progress::Idle => None,
    };
    lines.push(match status {
        Some(s) => Line::styled(s, theme.style(Role::Accent)),
        None => Line::styled(
            hints::line(
                v.keys,
                &[
                    (&["move_down", "move_up"], "step"),
                    (&["next_error", "prev_error"], "failing step"),
                    (&["select"], "detail"),
                    (&["fork_at_error"], "corrected branch here"),
                    (&["verify_node"], "verify again"),
                ],
            ),
            dim,
        ),
    });
    f.render_widget(
        Paragraph::new(lines).block(pane(" Verify ", true, theme)),
        area,
    );
}

/// Columns of the gutter the tree widget draws before every step: `▶ ` on the selected one.
const GUTTER: usize = 2;

/// The lines of one step after the gutter, for a body `width` wide (gutter included).
fn step_lines(
    s: &StepView,
    selected: bool,
    first_error: bool,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let dim = theme.style(Role::Dim);
    let kind = s.kind.clone().unwrap_or_else(|| "step".into());
    // "▶ ✓ H✗  12 consideration  0.90  "
    let lead = format!("{:>3} {:<13} ", s.index, first_line(&kind, 13));
    let conf = format!("{:.2}  ", s.confidence);
    let indent = GUTTER + 1 + 1 + 2 + 1 + lead.chars().count() + conf.chars().count();
    let text_w = width.saturating_sub(indent).max(10);
    let mut out = Vec::new();
    let sel = |st: Style| {
        if selected {
            st.patch(theme.style(Role::Selection))
        } else {
            st
        }
    };
    let text = wrap(&s.text, text_w);
    for (i, t) in text.iter().enumerate() {
        let mut spans = Vec::new();
        if i == 0 {
            spans.push(Span::styled(
                s.mark(theme).0,
                s.mark(theme).1.add_modifier(Modifier::BOLD),
            ));
            spans.push(Span::raw(" "));
            spans.push(human_glyph(s.human, theme));
            spans.push(Span::raw(" "));
            spans.push(Span::styled(lead.clone(), sel(theme.step_style(&kind))));
            spans.push(Span::styled(
                conf.clone(),
                sel(theme.confidence_style(s.confidence)),
            ));
        } else {
            spans.push(Span::raw(" ".repeat(indent - GUTTER)));
        }
        spans.push(Span::styled(t.clone(), sel(theme.style(Role::Fg))));
        if i == 0 && first_error {
            spans.push(Span::styled("  ← first error", theme.style(Role::Error)));
        }
        out.push(Line::from(spans));
    }
    let pad = " ".repeat(indent - GUTTER);
    let sub_w = text_w.saturating_sub(2).max(10);
    for issue in &s.issues {
        let (sev, role) = match issue.severity {
            Severity::Critical => ("critical", Role::Error),
            Severity::Major => ("major", Role::Warning),
            Severity::Minor => ("minor", Role::Dim),
        };
        let head = format!("! {sev} {}: ", issue.kind.as_str());
        let body = wrap(
            &issue.description,
            sub_w.saturating_sub(head.chars().count()).max(10),
        );
        for (i, b) in body.iter().enumerate() {
            out.push(Line::from(vec![
                Span::raw(pad.clone()),
                if i == 0 {
                    Span::styled(head.clone(), theme.style(role))
                } else {
                    Span::raw(" ".repeat(head.chars().count()))
                },
                Span::raw(b.clone()),
            ]));
        }
    }
    if let Some(c) = &s.correction {
        let head = "→ suggested: ";
        for (i, b) in wrap(c, sub_w.saturating_sub(head.len()).max(10))
            .iter()
            .enumerate()
        {
            out.push(Line::from(vec![
                Span::raw(pad.clone()),
                Span::styled(
                    if i == 0 {
                        head.to_string()
                    } else {
                        " ".repeat(head.chars().count())
                    },
                    theme.style(Role::Success),
                ),
                Span::styled(b.clone(), dim),
            ]));
        }
    }
    if let Some(b) = &s.branch {
        out.push(Line::from(vec![
            Span::raw(pad.clone()),
            Span::styled("⑂ corrected branch: ", theme.style(Role::ForkBranch)),
            Span::styled(first_line(b, sub_w.saturating_sub(21).max(10)), dim),
        ]));
    }
    out
}

fn steps(f: &mut Frame, area: Rect, r: &Verification, selected: usize, theme: &Theme) {
    let block = pane(" Steps · model verdict │ human checkpoint ", false, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let width = inner.width as usize;
    let height = inner.height as usize;
    // Every step's lines, a blank line closing all but the last: the heights place the
    // window, and only the steps inside it are handed to the widget.
    let mut texts: Vec<Vec<Line>> = Vec::with_capacity(r.steps.len());
    let mut span_of = (0, 0);
    let mut total = 0;
    for (i, s) in r.steps.iter().enumerate() {
        let mut lines = step_lines(
            s,
            i == selected,
            i64::try_from(i).is_ok_and(|i| i == r.first_error),
            width,
            theme,
        );
        if i == selected {
            span_of = (total, total + lines.len());
        }
        if i + 1 < r.steps.len() {
            lines.push(Line::raw(""));
        }
        total += lines.len();
        texts.push(lines);
    }
    // Keep the selected step in view, its top first.
    let (start, end) = span_of;
    let offset = if end <= height {
        0
    } else if end - start >= height {
        start
    } else {
        end - height
    };
    // The steps that meet the window, cut to the lines inside it, and the rows their first
    // lines are drawn on.
    let mut items = Vec::new();
    let mut heads = Vec::new();
    let mut top = 0;
    for (i, lines) in texts.into_iter().enumerate() {
        let bottom = top + lines.len();
        let (from, to) = (top.max(offset), bottom.min(offset + height));
        if from < to {
            if from == top {
                heads.push(inner.y + (top - offset) as u16);
            }
            let shown: Vec<Line> = lines.into_iter().skip(from - top).take(to - from).collect();
            items.push(TreeItem::new_leaf(i, Text::from(shown)));
        }
        top = bottom;
        if top >= offset + height {
            break;
        }
    }
    let Ok(tree) = Tree::new(&items) else {
        return;
    };
    let tree = tree
        .highlight_symbol("▶ ")
        .node_open_symbol("")
        .node_closed_symbol("")
        .node_no_children_symbol("");
    let mut state = TreeState::default();
    // With a selection the widget keeps the gutter on every step, blank but for the
    // selected one; an identifier no step has keeps it when the selection is out of range.
    let shown = items.iter().any(|item| *item.identifier() == selected);
    state.select(vec![if shown { selected } else { usize::MAX }]);
    f.render_stateful_widget(tree, inner, &mut state);
    // The gutter in the accent colour on each step's first line (the widget draws it in the
    // step's base style, which would colour the whole step).
    let gutter = (GUTTER as u16).min(inner.width);
    for y in heads {
        f.buffer_mut()
            .set_style(Rect::new(inner.x, y, gutter, 1), theme.style(Role::Accent));
    }
}

fn patterns(f: &mut Frame, area: Rect, r: &Verification, theme: &Theme) {
    let block = pane(" Patterns ", false, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let lines: Vec<Line> = if r.patterns.is_empty() {
        vec![Line::styled(
            "no patterns across steps",
            theme.style(Role::Dim),
        )]
    } else {
        r.patterns
            .iter()
            .map(|p| {
                let steps: Vec<String> = p.affected_steps.iter().map(|s| s.to_string()).collect();
                Line::from(vec![
                    Span::styled(format!("{:<28} ", p.name), theme.style(Role::Warning)),
                    Span::raw(p.description.clone()),
                    Span::styled(
                        format!("  (steps {})", steps.join(", ")),
                        theme.style(Role::Dim),
                    ),
                ])
            })
            .collect()
    };
    f.render_widget(Paragraph::new(lines), inner);
}

fn detail(f: &mut Frame, area: Rect, s: &StepView, theme: &Theme) {
    let rect = centered(
        area,
        area.width.saturating_sub(16).max(40),
        area.height.saturating_sub(6).max(10),
    );
    f.render_widget(Clear, rect);
    let block = pane(
        format!(" Step {} · enter or esc closes ", s.index),
        true,
        theme,
    );
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let dim = theme.style(Role::Dim);
    let mut lines = vec![
        Line::from(vec![
            Span::styled(s.mark(theme).0, s.mark(theme).1),
            Span::raw(match &s.unreadable {
                Some(why) => format!(" no verdict: {why} "),
                None => format!(" {} ", s.verdict.as_str()),
            }),
            Span::styled(
                format!("confidence {:.2}", s.confidence),
                theme.confidence_style(s.confidence),
            ),
            Span::styled(
                format!("  type {}", s.kind.as_deref().unwrap_or("step")),
                dim,
            ),
            Span::styled(
                match s.human {
                    Some(HumanMark::Agree) => "  human: verified",
                    Some(HumanMark::Questionable) => "  human: questionable",
                    Some(HumanMark::Disagree) => "  human: disagree",
                    None => "",
                },
                theme.style(Role::HumanAnnotation),
            ),
        ]),
        Line::raw(""),
    ];
    lines.extend(s.text.lines().map(|l| Line::raw(l.to_string())));
    if !s.explanation.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::styled("Why", theme.style(Role::Title)));
        lines.push(Line::raw(s.explanation.clone()));
    }
    if !s.issues.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::styled("Issues", theme.style(Role::Title)));
        for i in &s.issues {
            lines.push(Line::raw(format!(
                "- {:?} {}: {}",
                i.severity,
                i.kind.as_str(),
                i.description
            )));
        }
    }
    if let Some(c) = &s.correction {
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            "Suggested correction",
            theme.style(Role::Title),
        ));
        lines.push(Line::raw(c.clone()));
    }
    if let Some(b) = &s.branch {
        lines.push(Line::raw(""));
        lines.push(Line::styled("Corrected branch", theme.style(Role::Title)));
        lines.extend(b.lines().map(|l| Line::raw(l.to_string())));
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::views::theme::ColorDepth;

    fn step(index: usize, words: usize) -> StepView {
        StepView {
            node: NodeId::new(),
            index,
            kind: None,
            text: "word ".repeat(words),
            verdict: Verdict::Correct,
            confidence: 0.9,
            explanation: String::new(),
            issues: vec![],
            correction: None,
            human: None,
            branch: None,
            unreadable: None,
        }
    }

    fn draw(list: Vec<StepView>, selected: usize) -> Vec<String> {
        let r = Verification {
            session: SessionId::new(),
            run: RunId::new(),
            source: None,
            question: None,
            score: 1.0,
            valid: true,
            threshold: 0.5,
            first_error: -1,
            summary: String::new(),
            model: String::new(),
            patterns: vec![],
            steps: list,
        };
        let theme = Theme::builtin("dark", ColorDepth::TrueColor)
            .unwrap_or_else(|| panic!("no dark theme"));
        let mut term = Terminal::new(TestBackend::new(60, 10)).unwrap_or_else(|e| panic!("{e}"));
        term.draw(|f| steps(f, f.area(), &r, selected, &theme))
            .unwrap_or_else(|e| panic!("{e}"));
        let buf = term.backend().buffer();
        (1..9)
            .map(|y| {
                (1..59)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn an_unread_step_is_marked_as_an_error_not_a_verdict() {
        let mut unread = step(2, 2);
        unread.unreadable = Some("the verifier's answer was not readable".into());
        let rows = draw(vec![step(1, 2), unread], 0);
        let row = |n: &str| {
            rows.iter()
                .find(|r| r.contains(&format!(" {n} ")))
                .cloned()
                .unwrap_or_else(|| panic!("no row for step {n}: {rows:#?}"))
        };
        assert!(row("1").contains('✓'), "{}", row("1"));
        assert!(
            row("2").contains('!') && !row("2").contains('✓'),
            "{}",
            row("2")
        );
    }

    #[test]
    fn the_window_cuts_steps_at_its_edges_and_marks_the_selection() {
        // Text wraps at 27 columns, five words a line: steps of 3, 4 and 4 lines with blank
        // lines between, 13 in all. Selecting the last brings it fully into the 8 rows,
        // which cuts the middle step's first line off the top.
        let cont = format!("{}word word word word word", " ".repeat(31));
        let shown = draw(vec![step(0, 15), step(1, 20), step(2, 20)], 2);
        assert_eq!(
            shown,
            [
                cont.as_str(),
                &cont,
                &cont,
                "",
                "▶ ✓      2 step          0.90  word word word word word",
                &cont,
                &cont,
                &cont,
            ]
        );
        // Selecting the first keeps the window at the top; the third step is cut at the
        // bottom, and its gutter is blank.
        let shown = draw(vec![step(0, 15), step(1, 20), step(2, 20)], 0);
        assert_eq!(
            shown[0],
            "▶ ✓      0 step          0.90  word word word word word"
        );
        assert_eq!(
            shown[4],
            "  ✓      1 step          0.90  word word word word word"
        );
        assert_eq!(shown[7], cont);
    }
}
