//! The help overlay (`?`) and the which-key popup of a pending chord, both generated from
//! the keymap and the actions' descriptions.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};

use crate::app::action::{Action, Section};
use crate::app::keymap::Keymap;
use crate::app::theme::{Role, Theme};

/// Widest the key column gets; longer key lists are cut with "…".
const MAX_KEYS_WIDTH: usize = 24;
/// Space between columns.
const GAP: usize = 2;
/// Indent of a row under its section heading.
const INDENT: usize = 2;

/// One row of the help: the keys of an action in a section.
struct Row {
    keys: String,
    action: &'static Action,
}

/// The sections that have bindings, each with its rows in [`Action::all`] order.
fn sections(keymap: &Keymap) -> Vec<(Section, Vec<Row>)> {
    Section::ALL
        .into_iter()
        .map(|section| {
            let rows = Action::all()
                .iter()
                .filter_map(|action| {
                    let keys = keymap.keys_in(section, action);
                    (!keys.is_empty()).then(|| Row {
                        keys: keys.join(", "),
                        action,
                    })
                })
                .collect::<Vec<_>>();
            (section, rows)
        })
        .filter(|(_, rows)| !rows.is_empty())
        .collect()
}

/// `text` cut to `width` characters, ending in "…" when cut, padded to `width`.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        format!("{text:<width$}")
    } else {
        let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// A rectangle of at most `width`×`height` centred in `area`.
fn centred(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

fn to_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// Draws the help overlay: every bound action grouped by keymap section with its keys and
/// description (and its keymap.toml name when there is room), scrolled down `scroll` lines
/// (clamped to the last page).
pub fn render(frame: &mut Frame, area: Rect, keymap: &Keymap, theme: &Theme, scroll: u16) {
    let sections = sections(keymap);
    let rows = || sections.iter().flat_map(|(_, rows)| rows);
    let keys_width = rows()
        .map(|r| r.keys.chars().count())
        .max()
        .unwrap_or(0)
        .min(MAX_KEYS_WIDTH);
    let description_width = rows()
        .map(|r| r.action.description().chars().count())
        .max()
        .unwrap_or(0);
    let name_width = rows().map(|r| r.action.name().len()).max().unwrap_or(0);

    // Content, plus two borders and a space of padding each side.
    let chrome = 4;
    let narrow = INDENT + keys_width + GAP + description_width;
    let wide = narrow + GAP + name_width;
    let max_width = usize::from(area.width.saturating_sub(2));
    let show_names = wide + chrome <= max_width;
    let content_width = if show_names { wide } else { narrow };
    let description_room = if show_names {
        description_width
    } else {
        description_width.min(
            max_width
                .saturating_sub(chrome + INDENT + keys_width + GAP)
                .max(1),
        )
    };

    let mut lines: Vec<Line> = Vec::new();
    for (i, (section, rows)) in sections.iter().enumerate() {
        if i > 0 {
            lines.push(Line::default());
        }
        lines.push(Line::from(vec![
            Span::styled(section.title(), theme.style(Role::Heading)),
            Span::styled(format!("  [{}]", section.name()), theme.style(Role::Dim)),
        ]));
        for row in rows {
            let mut spans = vec![
                Span::raw(" ".repeat(INDENT)),
                Span::styled(fit(&row.keys, keys_width), theme.style(Role::Accent)),
                Span::raw(" ".repeat(GAP)),
                Span::styled(
                    fit(row.action.description(), description_room),
                    theme.style(Role::Fg),
                ),
            ];
            if show_names {
                spans.push(Span::raw(" ".repeat(GAP)));
                spans.push(Span::styled(row.action.name(), theme.style(Role::Dim)));
            }
            lines.push(Line::from(spans));
        }
    }

    let popup = centred(
        area,
        to_u16(content_width + chrome),
        to_u16(lines.len() + 2).min(area.height.saturating_sub(2)),
    );
    let visible = usize::from(popup.height.saturating_sub(2));
    let max_scroll = lines.len().saturating_sub(visible);
    let top = usize::from(scroll).min(max_scroll);
    let bottom = (top + visible).min(lines.len());

    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(theme.style(Role::BorderFocused))
        .style(theme.base())
        .title(Span::styled(" Keys ", theme.style(Role::Title)));
    if max_scroll > 0 {
        block = block.title_bottom(
            Line::styled(
                format!(" {}–{} of {} ", top + 1, bottom, lines.len()),
                theme.style(Role::Dim),
            )
            .alignment(Alignment::Right),
        );
    }
    let inner = block.inner(popup);
    let text_area = Rect {
        x: inner.x.saturating_add(1),
        width: inner.width.saturating_sub(2),
        ..inner
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    frame.render_widget(Paragraph::new(lines).scroll((to_u16(top), 0)), text_area);
}

/// Draws the which-key popup at the bottom right of `area`: the keys that may follow the
/// pending `prefix` and what each does.
pub fn which_key(
    frame: &mut Frame,
    area: Rect,
    prefix: &str,
    hints: &[(String, Action)],
    theme: &Theme,
) {
    let keys_width = hints
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let lines: Vec<Line> = hints
        .iter()
        .map(|(keys, action)| {
            Line::from(vec![
                Span::styled(format!("{keys:<keys_width$}"), theme.style(Role::Accent)),
                Span::raw(" ".repeat(GAP)),
                Span::styled(action.description(), theme.style(Role::Fg)),
            ])
        })
        .collect();
    let title = format!(" {prefix} … ");
    let content_width = lines
        .iter()
        .map(Line::width)
        .max()
        .unwrap_or(0)
        .max(title.chars().count());
    let width = to_u16(content_width + 4).min(area.width);
    let height = to_u16(lines.len() + 2).min(area.height);
    let margin_x = u16::from(area.width > width);
    let margin_y = u16::from(area.height > height);
    let popup = Rect {
        x: area.x + area.width - width - margin_x,
        y: area.y + area.height - height - margin_y,
        width,
        height,
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(theme.style(Role::BorderFocused))
        .style(theme.base())
        .title(Span::styled(title, theme.style(Role::Title)));
    let inner = block.inner(popup);
    let text_area = Rect {
        x: inner.x.saturating_add(1),
        width: inner.width.saturating_sub(1),
        ..inner
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    frame.render_widget(Paragraph::new(lines), text_area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_pads_and_cuts() {
        assert_eq!(fit("ab", 4), "ab  ");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abcd", 4), "abcd");
    }

    #[test]
    fn every_binding_has_a_row() {
        let keymap = Keymap::builtin();
        let sections = sections(&keymap);
        let rows: usize = sections.iter().map(|(_, rows)| rows.len()).sum();
        let mut distinct = 0;
        for section in Section::ALL {
            let mut seen: Vec<&Action> = Vec::new();
            for (_, a) in keymap.bindings(section) {
                if !seen.contains(&a) {
                    seen.push(a);
                }
            }
            distinct += seen.len();
        }
        assert_eq!(rows, distinct);
    }
}
