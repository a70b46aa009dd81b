//! The Steps pane: one row per aligned pair, A's step left and B's right, both wrapped to
//! the row's height; the selected row (or the selected claim's first source) kept in view.

use std::collections::HashSet;

use ratatui::Frame;
use ratatui::layout::{Margin, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{
    Column, DiffView, Focus, GUTTER, ROW_LINES, SEPARATOR, areas, marker, sources, step_text,
};
use crate::engines::diff::{Diff, Pair, Side};
use crate::views::theme::Role;
use crate::views::think::pane;
use crate::views::verify::wrap;
use crate::views::{ViewCx, hints};

/// A pane's inside, within its border.
fn inside(r: Rect) -> Rect {
    r.inner(Margin::new(1, 1))
}

/// The widths of A's and B's cells inside the steps pane.
pub(super) fn columns(inner: Rect) -> (usize, usize) {
    let cells = inner.width.saturating_sub(GUTTER + SEPARATOR) as usize;
    let a = cells / 2;
    (a, cells - a)
}

/// A cell's lines: `A3 ` then the step, wrapped to `width` (`◆A3 ` for a claim's source).
fn cell(side: &Side, i: Option<u32>, letter: char, source: bool, width: usize) -> Vec<String> {
    match (i, step_text(side, i)) {
        (Some(i), Some(text)) => {
            let mark = if source { "◆" } else { "" };
            wrap(&format!("{mark}{letter}{} {text}", i + 1), width)
        }
        _ => Vec::new(),
    }
}

/// Both cells of a row and the lines the row takes.
struct RowCells {
    a: Vec<String>,
    b: Vec<String>,
    height: usize,
    /// Lines were left out: the last one shown ends in `…`.
    cut: bool,
}

fn row_cells(
    d: &Diff,
    p: &Pair,
    widths: (usize, usize),
    src: &(HashSet<u32>, HashSet<u32>),
    most: usize,
) -> RowCells {
    let in_a = p.a.is_some_and(|i| src.0.contains(&i));
    let in_b = p.b.is_some_and(|i| src.1.contains(&i));
    let a = cell(&d.a, p.a, 'A', in_a, widths.0);
    let b = cell(&d.b, p.b, 'B', in_b, widths.1);
    let full = a.len().max(b.len()).max(1);
    let height = full.min(most.max(1));
    RowCells {
        a,
        b,
        height,
        cut: height < full,
    }
}

/// The row the steps pane keeps in view: the selected one, or with the claims focused the
/// first row holding a source of the selected claim.
fn anchor(view: &DiffView<'_>, d: &Diff) -> Option<usize> {
    if view.focus == Focus::Rows {
        return Some(view.row);
    }
    let (a, b) = sources(view);
    d.pairs
        .iter()
        .position(|p| p.a.is_some_and(|i| a.contains(&i)) || p.b.is_some_and(|i| b.contains(&i)))
}

/// The first row to draw so the anchor row is in view, moving `view.top` no more than
/// needed. The workspace calls it before drawing and keeps the answer.
pub fn first_row(view: &DiffView<'_>, area: Rect) -> usize {
    let Some(d) = view.diff else {
        return 0;
    };
    let inner = inside(areas(view, area).rows);
    let height = inner.height as usize;
    let n = d.pairs.len();
    let mut top = view.top.min(n.saturating_sub(1));
    let Some(at) = anchor(view, d).filter(|a| *a < n) else {
        return top;
    };
    if at < top {
        return at;
    }
    let widths = columns(inner);
    let src = sources(view);
    let heights: Vec<usize> = d.pairs[top..=at]
        .iter()
        .enumerate()
        .map(|(k, p)| row_cells(d, p, widths, &src, most_lines(view, top + k, height)).height)
        .collect();
    let mut used: usize = heights.iter().sum();
    let mut k = 0;
    while used > height && top < at {
        used -= heights[k];
        k += 1;
        top += 1;
    }
    top
}

/// The lines row `i` may take: all the pane has for the selected row, else [`ROW_LINES`].
fn most_lines(view: &DiffView<'_>, i: usize, pane_height: usize) -> usize {
    if view.focus == Focus::Rows && i == view.row {
        pane_height
    } else {
        ROW_LINES
    }
}

pub(super) fn render_rows(f: &mut Frame, area: Rect, view: &DiffView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let n = view.diff.map_or(0, |d| d.pairs.len());
    let title = if n == 0 {
        " Steps ".to_string()
    } else {
        format!(" Steps · {n} rows ")
    };
    let fork = format!("forks {}'s step", view.column.letter());
    let mut shown: Vec<hints::Hint<'_>> = vec![
        (&["next_difference", "prev_difference"], "differences"),
        (&["collapse", "expand"], "A/B"),
        (&["fork_step"], &fork),
        (&["merge_diff"], "merges"),
    ];
    // Tab moves between the rows and the claims once there are some.
    if view.merged.is_some_and(|m| !m.claims.is_empty()) {
        let to = match view.focus {
            Focus::Rows => "claims",
            Focus::Claims => "steps",
        };
        shown.push((&["focus_next"], to));
    }
    let keys = hints::line(v.keys, &shown);
    let block = pane(title, view.focus == Focus::Rows, theme)
        .title_bottom(Line::styled(format!(" {keys} "), theme.style(Role::Dim)));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(d) = view.diff else {
        return;
    };
    let widths = columns(inner);
    let src = sources(view);
    let height = inner.height as usize;
    let sep = Span::styled(" │ ", theme.style(Role::Border));
    let mut lines: Vec<Line<'static>> = Vec::new();
    for (i, p) in d.pairs.iter().enumerate().skip(view.top) {
        if lines.len() >= height {
            break;
        }
        let rc = row_cells(d, p, widths, &src, most_lines(view, i, height));
        let selected = view.focus == Focus::Rows && i == view.row;
        let base = theme.diff_style(p.label.as_str());
        let cell_style = |col: Column, source: bool| -> Style {
            if source {
                theme.style(Role::DiffSource)
            } else if selected && col == view.column {
                theme.style(Role::Selection)
            } else if selected {
                base.add_modifier(Modifier::BOLD)
            } else {
                base
            }
        };
        let in_a = p.a.is_some_and(|x| src.0.contains(&x));
        let in_b = p.b.is_some_and(|x| src.1.contains(&x));
        for k in 0..rc.height {
            let last = k + 1 == rc.height && rc.cut;
            let gutter = if k == 0 {
                format!("{}{} ", if selected { "▶" } else { " " }, marker(p.label))
            } else {
                "   ".into()
            };
            let gutter_style = if selected {
                theme.style(Role::Selection)
            } else {
                base
            };
            lines.push(Line::from(vec![
                Span::styled(gutter, gutter_style),
                Span::styled(
                    fit(rc.a.get(k), widths.0, last && k < rc.a.len()),
                    cell_style(Column::A, in_a),
                ),
                sep.clone(),
                Span::styled(
                    fit(rc.b.get(k), widths.1, last && k < rc.b.len()),
                    cell_style(Column::B, in_b),
                ),
            ]));
        }
    }
    lines.truncate(height);
    f.render_widget(Paragraph::new(lines), inner);
}

/// A cell's line padded to `width`; `cut` ends it in `…` (more lines were left out).
fn fit(line: Option<&String>, width: usize, cut: bool) -> String {
    let mut s = line.cloned().unwrap_or_default();
    if cut {
        if s.chars().count() >= width {
            s = s.chars().take(width.saturating_sub(1)).collect();
        }
        s.push('…');
    }
    let pad = width.saturating_sub(s.chars().count());
    s + &" ".repeat(pad)
}
