//! The help overlay (`?`) and the which-key popup of a pending chord. The app lists the
//! keymap's sections and bindings for them; these only lay the lists out.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};

use super::theme::{Role, Theme};

/// Widest the key column gets; longer key lists are cut with "…".
const MAX_KEYS_WIDTH: usize = 24;
/// Space between columns.
const GAP: usize = 2;
/// Indent of a row under its section heading.
const INDENT: usize = 2;

/// One section of the keymap as the help lists it: its heading, its name in keymap.toml and
/// a row for each bound action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelpSection {
    pub title: String,
    /// The section's name in keymap.toml (`normal`, `fork`).
    pub name: String,
    pub rows: Vec<HelpRow>,
}

/// One action bound in a section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelpRow {
    /// Its keys there, as displayed (`"g g, home"`).
    pub keys: String,
    pub description: String,
    /// Its name in keymap.toml.
    pub name: String,
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
/// (clamped to the last page). Sections without rows are left out.
pub fn render(frame: &mut Frame, area: Rect, sections: &[HelpSection], theme: &Theme, scroll: u16) {
    let sections: Vec<&HelpSection> = sections.iter().filter(|s| !s.rows.is_empty()).collect();
    let rows = || sections.iter().flat_map(|s| &s.rows);
    let keys_width = rows()
        .map(|r| r.keys.chars().count())
        .max()
        .unwrap_or(0)
        .min(MAX_KEYS_WIDTH);
    let description_width = rows()
        .map(|r| r.description.chars().count())
        .max()
        .unwrap_or(0);
    let name_width = rows().map(|r| r.name.len()).max().unwrap_or(0);

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
    for (i, section) in sections.iter().enumerate() {
        if i > 0 {
            lines.push(Line::default());
        }
        lines.push(Line::from(vec![
            Span::styled(section.title.as_str(), theme.style(Role::Heading)),
            Span::styled(format!("  [{}]", section.name), theme.style(Role::Dim)),
        ]));
        for row in &section.rows {
            let mut spans = vec![
                Span::raw(" ".repeat(INDENT)),
                Span::styled(fit(&row.keys, keys_width), theme.style(Role::Accent)),
                Span::raw(" ".repeat(GAP)),
                Span::styled(
                    fit(&row.description, description_room),
                    theme.style(Role::Fg),
                ),
            ];
            if show_names {
                spans.push(Span::raw(" ".repeat(GAP)));
                spans.push(Span::styled(row.name.as_str(), theme.style(Role::Dim)));
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
/// pending `prefix` and what each does, as (keys, description).
pub fn which_key(
    frame: &mut Frame,
    area: Rect,
    prefix: &str,
    hints: &[(String, String)],
    theme: &Theme,
) {
    let keys_width = hints
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let lines: Vec<Line> = hints
        .iter()
        .map(|(keys, description)| {
            Line::from(vec![
                Span::styled(format!("{keys:<keys_width$}"), theme.style(Role::Accent)),
                Span::raw(" ".repeat(GAP)),
                Span::styled(description.as_str(), theme.style(Role::Fg)),
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
}
