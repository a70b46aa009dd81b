//! The Diff workspace: two lines of reasoning side by side, step by step.
//!
//! Three header lines name both nodes (kind, short id, steps), how the steps were compared
//! and who labelled them with the count of each label, and a status line: the model's
//! progress, an error, or the selected row's label and reason. Below, the **Steps** pane
//! has one row per aligned pair: a gutter with the label's marker, A's step on the left and
//! B's on the right, both wrapped to the row's height and coloured by the label. After a
//! merge the **Merge** pane lists the claims; the selected claim's source steps are
//! highlighted in both columns.

mod claims;
mod rows;

use std::collections::HashSet;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::text::clip;
use super::theme::{Role, Theme};
use super::think::empty_workspace;
use super::{JobPhase, Picked, ViewCx, hints};
use crate::engines::diff::{Diff, Label, Merged, Pair, Side};

pub use self::rows::first_row;

/// A row shows at most this many lines unless it is the selected one.
pub const ROW_LINES: usize = 4;
/// Columns of the gutter: the selection mark, the label's marker, a space.
const GUTTER: u16 = 3;
/// Columns between A's cell and B's: ` │ `.
const SEPARATOR: u16 = 3;

/// One of the two lines of reasoning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Column {
    #[default]
    A,
    B,
}

impl Column {
    pub fn letter(self) -> char {
        match self {
            Column::A => 'A',
            Column::B => 'B',
        }
    }

    pub fn other(self) -> Column {
        match self {
            Column::A => Column::B,
            Column::B => Column::A,
        }
    }
}

/// The pane with the keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Focus {
    #[default]
    Rows,
    Claims,
}

/// The Diff workspace as drawn.
#[derive(Clone, Copy, Debug)]
pub struct DiffView<'a> {
    /// A node marked as A, waiting for a second one.
    pub marked: Option<&'a Picked>,
    /// The two nodes diffed (known before the diff is).
    pub pair: Option<(&'a Picked, &'a Picked)>,
    pub diff: Option<&'a Diff>,
    /// Where the diff is: running, done, failed.
    pub phase: &'a JobPhase,
    /// The model is labelling pair `done + 1` of `total`.
    pub progress: Option<(usize, usize)>,
    /// The selected row and the column `fork_step` takes its step from.
    pub row: usize,
    pub column: Column,
    /// The first row drawn (see [`first_row`]).
    pub top: usize,
    pub focus: Focus,
    /// Where the merge is (`Empty`: none asked for).
    pub merge: &'a JobPhase,
    pub merged: Option<&'a Merged>,
    /// The selected claim.
    pub claim: usize,
}

/// The marker of a label in the gutter and the counts.
pub fn marker(l: Label) -> &'static str {
    match l {
        Label::Same => "=",
        Label::Differs => "~",
        Label::Contradicts => "!",
        Label::OnlyA => "<",
        Label::OnlyB => ">",
    }
}

/// How a label reads in the counts and the status line.
fn label_text(l: Label) -> &'static str {
    match l {
        Label::Same => "same",
        Label::Differs => "differs",
        Label::Contradicts => "contradicts",
        Label::OnlyA => "only A",
        Label::OnlyB => "only B",
    }
}

/// The step of `side` with index `i`.
pub fn step_text(side: &Side, i: Option<u32>) -> Option<&str> {
    let i = i?;
    side.steps
        .iter()
        .find(|s| s.index == i)
        .map(|s| s.text.as_str())
}

/// The steps of A and of B the selected claim came from (when the claims have the focus).
pub fn sources(view: &DiffView<'_>) -> (HashSet<u32>, HashSet<u32>) {
    let (mut a, mut b) = (HashSet::new(), HashSet::new());
    if view.focus != Focus::Claims {
        return (a, b);
    }
    let (Some(d), Some(m)) = (view.diff, view.merged) else {
        return (a, b);
    };
    let Some(c) = m.claims.get(view.claim) else {
        return (a, b);
    };
    for p in &c.provenance {
        if p.node == d.a.node {
            a.extend(&p.steps);
        } else if p.node == d.b.node {
            b.extend(&p.steps);
        }
    }
    (a, b)
}

/// Where the pieces go: the header, the steps pane and the claims pane (after a merge).
struct Areas {
    header: Rect,
    rows: Rect,
    claims: Option<Rect>,
}

fn areas(view: &DiffView<'_>, area: Rect) -> Areas {
    let [header, body] = Layout::vertical([Constraint::Length(3), Constraint::Min(1)]).areas(area);
    if *view.merge == JobPhase::Empty {
        return Areas {
            header,
            rows: body,
            claims: None,
        };
    }
    let width = body.width.saturating_sub(2) as usize;
    let want = view.merged.map_or(1, |m| {
        m.claims
            .iter()
            .enumerate()
            .map(|(i, c)| claims::claim_lines(m, i, c, width).len())
            .sum::<usize>()
    }) as u16
        + 2;
    let most = (body.height * 2 / 5).max(4);
    let [rows, claims] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(want.clamp(3, most))]).areas(body);
    Areas {
        header,
        rows,
        claims: Some(claims),
    }
}

/// Draws the workspace.
pub fn render(f: &mut Frame, area: Rect, view: &DiffView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let Some((pa, pb)) = view.pair else {
        return render_empty(f, area, view, v);
    };
    let ar = areas(view, area);
    render_header(f, ar.header, view, (pa, pb), theme);
    rows::render_rows(f, ar.rows, view, v);
    if let Some(c) = ar.claims {
        claims::render_claims(f, c, view, theme);
    }
}

fn render_empty(f: &mut Frame, area: Rect, view: &DiffView<'_>, v: &ViewCx<'_>) {
    let mark = hints::keys(v.keys, &["diff_mark"]).unwrap_or_else(|| "diff_mark".into());
    let status = match view.marked {
        Some(p) => format!("marked A: {} — mark another node to diff", p.label()),
        None => "nothing to compare yet".into(),
    };
    let keys = hints::line(
        v.keys,
        &[
            (
                &["next_difference", "prev_difference"],
                "jump between differences",
            ),
            (&["merge_diff"], "merges A and B into claims"),
            (&["fork_step"], "forks the selected step"),
        ],
    );
    empty_workspace(
        f,
        area,
        "Diff",
        status,
        &[
            &format!(
                "{mark} marks the selected node as A: a branch in Fork, a layer in Pipeline, a node in the Think graph (also from Sessions)."
            ),
            &format!(
                "{mark} on a second node marks B, opens the diff here and aligns their steps."
            ),
            &format!("Here: {keys}"),
        ],
        v.theme,
    );
}

/// `A fork_branch 1a2b3c4d (conservative) · 5 steps`.
fn side_spans(
    letter: char,
    p: &Picked,
    steps: Option<usize>,
    width: usize,
    theme: &Theme,
) -> Vec<Span<'static>> {
    let mut rest = format!(" {}", p.node.short());
    if let Some(w) = &p.what {
        rest.push_str(&format!(" ({w})"));
    }
    if let Some(n) = steps {
        rest.push_str(&format!(" · {n} steps"));
    }
    let kind = p.kind.as_str();
    // One column is left free before the other side's title.
    let room = width.saturating_sub(3 + kind.chars().count());
    vec![
        Span::styled(format!("{letter} "), theme.style(Role::Title)),
        Span::styled(kind.to_string(), theme.node_style(kind)),
        Span::raw(clip(&rest, room)),
    ]
}

fn render_header(
    f: &mut Frame,
    area: Rect,
    view: &DiffView<'_>,
    (pa, pb): (&Picked, &Picked),
    theme: &Theme,
) {
    // The halves line up with the columns below (the pane's border, then the gutter).
    let (wa, _) = rows::columns(Rect {
        width: area.width.saturating_sub(2),
        ..area
    });
    let left = wa + 1 + GUTTER as usize + 1;
    let steps = |s: Option<&Side>| s.map(|s| s.steps.len());
    let mut first = side_spans('A', pa, steps(view.diff.map(|d| &d.a)), left, theme);
    let used: usize = first.iter().map(|s| s.content.chars().count()).sum();
    first.push(Span::raw(" ".repeat(left.saturating_sub(used))));
    let right = (area.width as usize).saturating_sub(left);
    first.extend(side_spans(
        'B',
        pb,
        steps(view.diff.map(|d| &d.b)),
        right,
        theme,
    ));

    let mut second = Vec::new();
    if let Some(d) = view.diff {
        for (l, n) in d.counts() {
            second.push(Span::styled(
                format!("{} {n} {}  ", marker(l), label_text(l)),
                theme.diff_style(l.as_str()),
            ));
        }
        let judge = d.judge.as_deref().map_or_else(
            || "labels by similarity only".to_string(),
            |m| format!("labels by {}", m.strip_suffix(".gguf").unwrap_or(m)),
        );
        second.push(Span::styled(
            format!("compared by {} · {judge}", d.measure),
            theme.style(Role::Dim),
        ));
    }
    let third = status_line(view, theme);
    let width = area.width as usize;
    let lines = vec![
        Line::from(first),
        Line::from(clip_spans(second, width)),
        Line::from(clip_spans(third, width)),
    ];
    f.render_widget(Paragraph::new(lines), area);
}

/// Spans cut to `width` characters in all.
fn clip_spans(spans: Vec<Span<'static>>, width: usize) -> Vec<Span<'static>> {
    let mut left = width;
    let mut out = Vec::new();
    for s in spans {
        if left == 0 {
            break;
        }
        let n = s.content.chars().count();
        if n <= left {
            left -= n;
            out.push(s);
        } else {
            out.push(Span::styled(clip(&s.content, left), s.style));
            left = 0;
        }
    }
    out
}

/// The third header line: progress, an error, or the selected row's label and reason.
fn status_line(view: &DiffView<'_>, theme: &Theme) -> Vec<Span<'static>> {
    match view.phase {
        JobPhase::Running => {
            let text = match view.progress {
                Some((done, total)) => format!("⟳ labelling pair {} of {total}…", done + 1),
                None => "⟳ aligning steps…".into(),
            };
            vec![Span::styled(text, theme.style(Role::Accent))]
        }
        JobPhase::Failed(e) => vec![Span::styled(
            format!("✗ the diff failed: {}", flat(e)),
            theme.style(Role::Error),
        )],
        JobPhase::Interrupted => vec![Span::styled(
            "diff cancelled — mark two nodes again to diff",
            theme.style(Role::Warning),
        )],
        _ => {
            let Some(d) = view.diff else {
                return Vec::new();
            };
            if let (Focus::Claims, Some(m)) = (view.focus, view.merged)
                && let Some(c) = m.claims.get(view.claim)
            {
                let from = if c.new {
                    "new: it rests on no step".to_string()
                } else {
                    format!("from {}", m.refs(c))
                };
                return vec![
                    Span::styled(
                        format!("claim {} of {} · ", view.claim + 1, m.claims.len()),
                        theme.style(Role::Dim),
                    ),
                    Span::styled(from, theme.style(Role::DiffSource)),
                ];
            }
            let Some(p) = d.pairs.get(view.row) else {
                return vec![Span::styled("no steps to compare", theme.style(Role::Dim))];
            };
            let mut s = vec![
                Span::styled(
                    format!("row {} of {} · ", view.row + 1, d.pairs.len()),
                    theme.style(Role::Dim),
                ),
                Span::styled(label_text(p.label), theme.diff_style(p.label.as_str())),
            ];
            let mut rest = String::new();
            if let Some(sim) = p.similarity {
                rest.push_str(&format!(" · similarity {sim:.2}"));
            }
            rest.push_str(&format!(" · by {}", by_text(p)));
            if let Some(r) = &p.reason {
                rest.push_str(&format!(" — {r}"));
            }
            s.push(Span::styled(rest, theme.style(Role::Dim)));
            s
        }
    }
}

/// `text` on one line, its whitespace collapsed.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn by_text(p: &Pair) -> &'static str {
    use crate::engines::diff::LabelSource;
    match p.by {
        LabelSource::Identical => "identical text",
        LabelSource::Similarity => "similarity",
        LabelSource::Model => "the model",
        LabelSource::Cache => "the model (cached)",
        LabelSource::Alignment => "the alignment",
    }
}

#[cfg(test)]
pub(crate) mod tests;
