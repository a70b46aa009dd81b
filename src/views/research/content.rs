//! What goes inside the Research panes: the plan's steps with their state, the audit, the
//! trace, a step's output or the report with its citations, and a citation's source.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{Pane, RunView, SourceView, StepState, verdict_role};
use crate::engines::research::{AuditResult, Citation, CitationKind, Stage, Status, locator};
use crate::views::ViewCx;
use crate::views::theme::{Role, Theme};
use crate::views::verify::wrap;

pub(super) use crate::views::text::{clip, one_line};

/// `text` wrapped after `prefix`, later rows indented as far as the prefix.
pub(super) fn hang(
    prefix: &str,
    text: &str,
    width: usize,
    prefix_style: Style,
    style: Style,
) -> Vec<Line<'static>> {
    let lead = prefix.chars().count();
    let rows = wrap(text, width.saturating_sub(lead).max(8));
    if rows.is_empty() {
        return vec![Line::styled(prefix.to_string(), prefix_style)];
    }
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let head = if i == 0 {
                Span::styled(prefix.to_string(), prefix_style)
            } else {
                Span::raw(" ".repeat(lead))
            };
            Line::from(vec![head, Span::styled(r, style)])
        })
        .collect()
}

fn stage_role(s: Stage) -> Role {
    match s {
        Stage::Thinker => Role::Plan,
        Stage::Auditor => Role::Audit,
        Stage::HitlGate => Role::HumanAnnotation,
        Stage::ToolExecutor => Role::ToolCall,
        Stage::Synthesizer => Role::Synthesis,
        Stage::End => Role::Dim,
    }
}

/// The streamed text of the stage in `pane`: thinking dimmed, then the answer.
fn live_lines(run: &RunView, pane: Pane, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let Some(l) = run.live_in(pane) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let thinking = if l.thinking.trim().is_empty() {
        Vec::new()
    } else {
        wrap(l.thinking.trim(), width.saturating_sub(2).max(8))
    };
    for r in thinking {
        out.push(Line::from(vec![
            Span::styled("┆ ", theme.style(Role::Dim)),
            Span::styled(r, theme.style(Role::Thinking)),
        ]));
    }
    let style = if pane == Pane::Report {
        theme.style(Role::Response)
    } else {
        theme.style(Role::Dim)
    };
    out.extend(
        wrap(l.text.trim(), width.max(8))
            .into_iter()
            .map(|r| Line::styled(r, style)),
    );
    if out.is_empty() {
        out.push(Line::styled(
            "waiting for the model…",
            theme.style(Role::Dim),
        ));
    }
    out
}

/// A step's output in one line: its first result and how many more.
fn output_summary(out: &str) -> String {
    let rows: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    match rows.len() {
        0 => "no results".to_string(),
        1 => one_line(rows[0]),
        n => format!("{} (+{} more)", one_line(rows[0]), n - 1),
    }
}

/// The Plan pane: objective, then each step with its state; the planner's streamed text
/// below while it writes. The second value is the selected step's first row.
pub(super) fn plan_lines(
    run: &RunView,
    selected: Option<usize>,
    width: usize,
    theme: &Theme,
) -> (Vec<Line<'static>>, Option<usize>) {
    let dim = theme.style(Role::Dim);
    let mut out = Vec::new();
    let mut anchor = None;
    let plan = run.state.as_ref().and_then(|s| s.plan.as_ref());
    match plan {
        Some(p) => {
            out.extend(hang(
                "◎ ",
                &p.objective,
                width,
                theme.style(Role::Accent),
                theme.style(Role::Title),
            ));
            out.push(Line::styled(
                format!(
                    "  {} step(s) · estimated budget {} tokens",
                    p.steps.len(),
                    p.estimated_token_budget
                ),
                dim,
            ));
            for (i, s) in p.steps.iter().enumerate() {
                let state = run.step_state(i);
                let sel = selected == Some(i);
                if sel {
                    anchor = Some(out.len());
                }
                let mark = if sel { "▶" } else { " " };
                let lead = format!("{mark}{} {}. ", state.marker(), i + 1);
                let tool = format!("{} ", s.tool);
                let room = width.saturating_sub(lead.chars().count() + tool.chars().count());
                let mut head = Line::from(vec![
                    Span::styled(lead, theme.style(state.role())),
                    Span::styled(
                        tool,
                        theme.style(Role::ToolCall).add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(
                        clip(&format!("{:?}", s.input), room),
                        theme.style(Role::Query),
                    ),
                ]);
                if sel {
                    head = head.patch_style(theme.style(Role::Selection));
                }
                out.push(head);
                if !s.rationale.is_empty() {
                    out.extend(hang("      ", &s.rationale, width, dim, dim));
                }
                let (text, role) = match state {
                    StepState::Pending => (String::new(), Role::Dim),
                    StepState::Running => ("running…".to_string(), Role::Accent),
                    StepState::Done => (
                        format!("→ {}", output_summary(s.output.as_deref().unwrap_or(""))),
                        Role::Success,
                    ),
                    StepState::Failed => (
                        format!("✗ {}", one_line(s.error.as_deref().unwrap_or(""))),
                        Role::Error,
                    ),
                };
                if !text.is_empty() {
                    out.push(Line::styled(
                        clip(&format!("      {text}"), width),
                        theme.style(role),
                    ));
                }
            }
        }
        None if run.live_in(Pane::Plan).is_none() => {
            out.push(Line::styled("no plan yet", dim));
        }
        None => {}
    }
    let live = live_lines(run, Pane::Plan, width, theme);
    if !live.is_empty() {
        if !out.is_empty() {
            out.push(Line::raw(""));
        }
        out.push(Line::styled("planning…", theme.style(Role::Accent)));
        out.extend(live);
    }
    (out, anchor)
}

/// The audit as read: verdict, violations with their rules, suggestions, notes.
pub(super) fn audit_body(a: &AuditResult, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let dim = theme.style(Role::Dim);
    let mut out = vec![Line::from(vec![
        Span::styled("Audit  ", theme.style(Role::Title)),
        Span::styled(
            match a.verdict {
                crate::engines::research::Verdict::Approved => " APPROVED ",
                crate::engines::research::Verdict::Rejected => " REJECTED ",
            },
            theme
                .style(verdict_role(a.verdict))
                .add_modifier(Modifier::BOLD | Modifier::REVERSED),
        ),
    ])];
    for v in &a.policy_violations {
        out.extend(hang(
            "✗ ",
            &v.problem,
            width,
            theme.style(Role::Error),
            theme.style(Role::Fg),
        ));
        out.extend(hang(
            "  rule: ",
            &format!("“{}”", v.rule),
            width,
            dim,
            theme.style(Role::Warning).add_modifier(Modifier::ITALIC),
        ));
    }
    if a.policy_violations.is_empty() {
        out.push(Line::styled("no policy violations", dim));
    }
    if !a.suggestions.is_empty() {
        out.push(Line::styled("Suggestions", theme.style(Role::Title)));
        for s in &a.suggestions {
            out.extend(hang(
                "• ",
                s,
                width,
                theme.style(Role::Accent),
                theme.style(Role::Fg),
            ));
        }
    }
    if !a.notes.is_empty() {
        out.push(Line::styled("Notes", theme.style(Role::Title)));
        for n in &a.notes {
            out.extend(hang("• ", n, width, dim, dim));
        }
    }
    out
}

/// The Audit pane: the audit of the current plan, and the auditor's text as it streams.
pub(super) fn audit_lines(run: &RunView, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let st = run.state.as_ref();
    let mut out = match st.and_then(|s| s.audit_result.as_ref()) {
        Some(a) => audit_body(a, width, theme),
        None if run.live_in(Pane::Audit).is_some() => Vec::new(),
        None if st.is_some_and(|s| s.plan.is_some() && s.status == Status::Auditing) => {
            vec![Line::styled("auditing…", theme.style(Role::Accent))]
        }
        None => vec![Line::styled(
            "the plan is audited once it is written",
            theme.style(Role::Dim),
        )],
    };
    let live = live_lines(run, Pane::Audit, width, theme);
    if !live.is_empty() {
        if !out.is_empty() {
            out.push(Line::raw(""));
        }
        out.push(Line::styled("auditing…", theme.style(Role::Accent)));
        out.extend(live);
    }
    out
}

/// The Trace pane: the reasoning entries, oldest first.
pub(super) fn trace_lines(run: &RunView, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let entries = run
        .state
        .as_ref()
        .map_or(&[][..], |s| s.reasoning.as_slice());
    if entries.is_empty() {
        return vec![Line::styled("nothing yet", theme.style(Role::Dim))];
    }
    let mut out = Vec::new();
    for e in entries {
        // Narrow panes leave the time out.
        let time = if width >= 60 {
            e.timestamp.format("%H:%M:%S ").to_string()
        } else {
            String::new()
        };
        let node = format!("{:<13} ", e.node.as_str());
        let lead = time.chars().count() + node.chars().count();
        let rows = wrap(&e.summary, width.saturating_sub(lead).max(8));
        for (i, r) in rows.into_iter().enumerate() {
            let head = if i == 0 {
                vec![
                    Span::styled(time.clone(), theme.style(Role::Dim)),
                    Span::styled(node.clone(), theme.style(stage_role(e.node))),
                ]
            } else {
                vec![Span::raw(" ".repeat(lead))]
            };
            let mut spans = head;
            spans.push(Span::styled(r, theme.style(Role::Fg)));
            out.push(Line::from(spans));
        }
    }
    out
}

/// `report` without the source list the engine appends (the pane lists the citations
/// itself, to pick from).
fn without_sources(report: &str) -> &str {
    report
        .rfind("\n\n## Sources\n")
        .map_or(report, |i| &report[..i])
}

/// Styles the `[n]` citations in a rendered line.
fn mark_citations(line: Line<'static>, style: Style) -> Line<'static> {
    let mut spans = Vec::new();
    for s in line.spans {
        let text = s.content.to_string();
        let mut rest = text.as_str();
        while let Some(open) = rest.find('[') {
            let after = &rest[open + 1..];
            let close = after.find(']');
            let is_cite = close.is_some_and(|c| {
                c > 0
                    && after[..c]
                        .chars()
                        .all(|ch| ch.is_ascii_digit() || ch == ',' || ch == ' ')
                    && after[..c].chars().any(|ch| ch.is_ascii_digit())
            });
            match close {
                Some(c) if is_cite => {
                    if open > 0 {
                        spans.push(Span::styled(rest[..open].to_string(), s.style));
                    }
                    spans.push(Span::styled(
                        rest[open..open + c + 2].to_string(),
                        s.style.patch(style),
                    ));
                    rest = &rest[open + c + 2..];
                }
                _ => {
                    spans.push(Span::styled(rest[..open + 1].to_string(), s.style));
                    rest = &rest[open + 1..];
                }
            }
        }
        if !rest.is_empty() {
            spans.push(Span::styled(rest.to_string(), s.style));
        }
    }
    Line::from(spans).style(line.style)
}

/// A styled line wrapped at `width` columns between words, keeping the span styles.
fn wrap_spans(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(8);
    let mut out = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut used = 0usize;
    for s in &line.spans {
        let mut piece = String::new();
        for ch in s.content.chars() {
            piece.push(ch);
            if ch == ' ' {
                push_word(&mut out, &mut cur, &mut used, &piece, s.style, width, &line);
                piece.clear();
            }
        }
        if !piece.is_empty() {
            push_word(&mut out, &mut cur, &mut used, &piece, s.style, width, &line);
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(Line::from(cur).style(line.style));
    }
    out
}

fn push_word(
    out: &mut Vec<Line<'static>>,
    cur: &mut Vec<Span<'static>>,
    used: &mut usize,
    word: &str,
    style: Style,
    width: usize,
    line: &Line<'static>,
) {
    let w = Span::raw(word.trim_end()).width();
    if *used > 0 && *used + w > width {
        out.push(Line::from(std::mem::take(cur)).style(line.style));
        *used = 0;
    }
    let mut word = word.to_string();
    // A word longer than the line is cut.
    while Span::raw(word.as_str()).width() > width {
        let head: String = word.chars().take(width).collect();
        word = word.chars().skip(width).collect();
        cur.push(Span::styled(head, style));
        out.push(Line::from(std::mem::take(cur)).style(line.style));
        *used = 0;
    }
    if *used == 0 {
        word = word.trim_start().to_string();
    }
    *used += Span::raw(word.as_str()).width();
    if !word.is_empty() {
        cur.push(Span::styled(word, style));
    }
}

fn kind_name(k: CitationKind) -> &'static str {
    match k {
        CitationKind::Knowledge => "knowledge",
        CitationKind::Session => "session",
        CitationKind::Memory => "memory",
        CitationKind::Url => "web",
    }
}

fn citation_line(c: &Citation, sel: bool, width: usize, theme: &Theme) -> Line<'static> {
    let mark = if sel { "▶" } else { " " };
    let head = format!("{mark}[{}] ", c.n);
    let note = if c.cited { "" } else { " (not cited)" };
    let tail = format!(" · {} · {}", kind_name(c.kind), locator(c));
    let room = width.saturating_sub(head.chars().count() + note.chars().count());
    let label = clip(
        &c.label,
        room.saturating_sub(tail.chars().count()).max(12).min(room),
    );
    let tail = clip(&tail, room.saturating_sub(label.chars().count()));
    let mut line = Line::from(vec![
        Span::styled(head, theme.style(Role::Link)),
        Span::styled(label, theme.style(Role::Title)),
        Span::styled(tail, theme.style(Role::Dim)),
        Span::styled(note, theme.style(Role::Warning)),
    ]);
    if sel {
        line = line.patch_style(theme.style(Role::Selection));
    }
    line
}

/// The Tools / Report pane: the report and its citations once written (the second value is
/// the selected citation's row), the synthesizer's text while it writes, before that the
/// running or selected step's output.
pub(super) fn report_lines(
    run: &RunView,
    step: usize,
    citation: Option<usize>,
    width: usize,
    v: &ViewCx<'_>,
) -> (Vec<Line<'static>>, Option<usize>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let st = run.state.as_ref();
    if let Some(report) = st.and_then(|s| s.final_report.as_deref()) {
        let styles = crate::views::think::markdown_styles(theme);
        let rendered =
            crate::views::markdown::render(without_sources(report).trim(), &styles, v.highlights);
        let link = theme.style(Role::Link).add_modifier(Modifier::BOLD);
        let mut out: Vec<Line<'static>> = rendered
            .lines
            .into_iter()
            .flat_map(|l| wrap_spans(mark_citations(l, link), width))
            .collect();
        let cites = run.citations();
        let mut anchor = None;
        if !cites.is_empty() {
            out.push(Line::raw(""));
            out.push(Line::styled(
                format!("Sources ({})", cites.len()),
                theme.style(Role::Title).add_modifier(Modifier::BOLD),
            ));
            for (i, c) in cites.iter().enumerate() {
                let sel = citation == Some(i);
                if sel {
                    anchor = Some(out.len());
                }
                out.push(citation_line(c, sel, width, theme));
            }
        }
        return (out, anchor);
    }
    if run.live_in(Pane::Report).is_some() {
        let mut out = vec![Line::styled(
            "writing the report…",
            theme.style(Role::Accent),
        )];
        out.extend(live_lines(run, Pane::Report, width, theme));
        return (out, None);
    }
    let steps = run.steps();
    if steps.is_empty() {
        let why = match st.map(|s| s.status) {
            Some(Status::Rejected | Status::Failed) => st
                .and_then(|s| s.end_reason.clone().or(s.error_message.clone()))
                .unwrap_or_else(|| "the run ended".into()),
            _ => "the tools run once you approve the plan".into(),
        };
        return (
            wrap(&why, width)
                .into_iter()
                .map(|r| Line::styled(r, dim))
                .collect(),
            None,
        );
    }
    let i = run.running_step().unwrap_or(step).min(steps.len() - 1);
    let s = &steps[i];
    let state = run.step_state(i);
    let mut out = vec![Line::from(vec![
        Span::styled(
            format!("{} {}. ", state.marker(), i + 1),
            theme.style(state.role()),
        ),
        Span::styled(
            format!("{} ", s.tool),
            theme.style(Role::ToolCall).add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            clip(&format!("{:?}", s.input), width.saturating_sub(22)),
            theme.style(Role::Query),
        ),
    ])];
    match state {
        StepState::Done => {
            for r in s.output.as_deref().unwrap_or("").lines() {
                out.extend(
                    wrap(r, width)
                        .into_iter()
                        .map(|w| Line::styled(w, theme.style(Role::Fg))),
                );
            }
        }
        StepState::Failed => out.extend(hang(
            "✗ ",
            s.error.as_deref().unwrap_or(""),
            width,
            theme.style(Role::Error),
            theme.style(Role::Error),
        )),
        StepState::Running => out.push(Line::styled("running…", theme.style(Role::Accent))),
        StepState::Pending => {
            let when = if st.is_some_and(|s| s.human_approved) {
                "waits for the steps before it"
            } else {
                "runs once you approve the plan"
            };
            out.push(Line::styled(when, dim));
        }
    }
    if let Some(e) = st.and_then(|s| s.end_reason.as_ref())
        && st.is_some_and(|s| s.status.finished())
    {
        out.push(Line::raw(""));
        out.extend(hang("ended: ", e, width, theme.style(Role::Error), dim));
    }
    (out, None)
}

/// The source overlay's rows: label → value, then the text.
pub(super) fn source_lines(s: &SourceView, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (k, v) in &s.rows {
        out.extend(hang(
            &format!("{k:<10}"),
            v,
            width,
            theme.style(Role::Dim),
            theme.style(Role::Fg),
        ));
    }
    out.push(Line::raw(""));
    for r in s.text.lines() {
        if r.trim().is_empty() {
            out.push(Line::raw(""));
            continue;
        }
        out.extend(
            wrap(r, width)
                .into_iter()
                .map(|w| Line::styled(w, theme.style(Role::Response))),
        );
    }
    out
}
