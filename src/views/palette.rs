//! The command palette (`:`): every bindable action, fuzzy-matched on its name and
//! description, with its keys. The app matches the query against the keymap's actions; this
//! draws the matches.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};

use super::theme::{Role, Theme};

/// Widest the palette gets.
const MAX_WIDTH: u16 = 80;
/// Most rows of actions shown at once.
const MAX_ROWS: usize = 16;
/// Marker of the selected row, and the blank of the same width for the others.
const MARKER: &str = "▶ ";
const NO_MARKER: &str = "  ";

/// What the user typed and which match is selected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaletteState {
    /// The filter text.
    pub query: String,
    /// Index into the current matches (clamped when drawn).
    pub selected: usize,
}

/// One action matching the query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaletteItem {
    /// Its name in keymap.toml.
    pub name: String,
    /// Match quality, higher is better (0 for an empty query).
    pub score: u32,
    /// Its keys, as displayed (`"g g, home"`); empty when unbound.
    pub keys: String,
    /// Its one-line description.
    pub description: String,
    /// Matched character positions in `"<name> <description>"`, sorted.
    pub indices: Vec<u32>,
}

/// Spans of `text` (whose first character is number `offset` of the haystack), with the
/// matched characters in `matched` style.
fn highlighted<'a>(
    text: &str,
    offset: usize,
    indices: &[u32],
    plain: Style,
    matched: Style,
) -> Vec<Span<'a>> {
    let mut spans: Vec<Span<'a>> = Vec::new();
    let mut run = String::new();
    let mut run_matched = false;
    for (i, c) in text.chars().enumerate() {
        let is_matched = u32::try_from(offset + i).is_ok_and(|n| indices.binary_search(&n).is_ok());
        if is_matched != run_matched && !run.is_empty() {
            let style = if run_matched { matched } else { plain };
            spans.push(Span::styled(std::mem::take(&mut run), style));
        }
        run_matched = is_matched;
        run.push(c);
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, if run_matched { matched } else { plain }));
    }
    spans
}

/// `text` cut to at most `width` characters, ending in "…" when cut.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    if width > 0 {
        out.push('…');
    }
    out
}

fn to_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// Draws the palette centred in `area`: the query line, then the matches with the matched
/// characters highlighted and the selected one marked; the footer counts them out of `total`
/// actions.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &PaletteState,
    items: &[PaletteItem],
    total: usize,
    theme: &Theme,
) {
    let width = area.width.saturating_sub(4).min(MAX_WIDTH);
    let rows_room = usize::from(area.height.saturating_sub(4 + 2));
    let rows = items.len().clamp(1, MAX_ROWS).min(rows_room.max(1));
    let height = to_u16(rows + 4).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let selected = state.selected.min(items.len().saturating_sub(1));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(theme.style(Role::BorderFocused))
        .style(theme.base())
        .title(Span::styled(" Commands ", theme.style(Role::Title)))
        .title_bottom(
            Line::styled(
                format!(" {}/{} ", items.len(), total),
                theme.style(Role::Dim),
            )
            .alignment(Alignment::Right),
        );
    let inner = block.inner(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    if inner.height == 0 || inner.width < 2 {
        return;
    }
    let content = Rect {
        x: inner.x + 1,
        width: inner.width - 2,
        ..inner
    };
    let content_width = usize::from(content.width);

    // Query line, with the cursor after the text.
    let prompt = "> ";
    let query_line = Line::from(vec![
        Span::styled(prompt, theme.style(Role::Accent)),
        Span::styled(state.query.as_str(), theme.style(Role::Fg)),
    ]);
    frame.render_widget(
        Paragraph::new(query_line),
        Rect {
            height: 1,
            ..content
        },
    );
    let cursor_x = content
        .x
        .saturating_add(to_u16(prompt.len() + state.query.chars().count()));
    frame.set_cursor_position((cursor_x.min(content.right().saturating_sub(1)), content.y));
    if content.height < 2 {
        return;
    }
    let rule = Line::styled("─".repeat(content_width), theme.style(Role::Border));
    frame.render_widget(
        Paragraph::new(rule),
        Rect {
            y: content.y + 1,
            height: 1,
            ..content
        },
    );
    let list_area = Rect {
        y: content.y + 2,
        height: content.height.saturating_sub(2),
        ..content
    };
    let visible = usize::from(list_area.height);
    if items.is_empty() {
        let none = Line::styled("no matching command", theme.style(Role::Dim));
        frame.render_widget(Paragraph::new(none), list_area);
        return;
    }

    let first = selected.saturating_sub(visible.saturating_sub(1));
    let shown = &items[first..items.len().min(first + visible)];
    let name_width = shown.iter().map(|i| i.name.len()).max().unwrap_or(0);
    let matched = theme.style(Role::Matched);
    let lines: Vec<Line> = shown
        .iter()
        .enumerate()
        .map(|(row, item)| {
            let is_selected = first + row == selected;
            let name = item.name.as_str();
            let mut spans = vec![Span::styled(
                if is_selected { MARKER } else { NO_MARKER },
                theme.style(Role::Accent),
            )];
            spans.extend(highlighted(
                name,
                0,
                &item.indices,
                theme.style(Role::Accent),
                matched,
            ));
            spans.push(Span::raw(" ".repeat(name_width - name.len() + 2)));
            let keys_width = item.keys.chars().count();
            let used = NO_MARKER.chars().count() + name_width + 2;
            let room = content_width.saturating_sub(used + keys_width + 2);
            let description = cut(&item.description, room);
            spans.extend(highlighted(
                &description,
                name.chars().count() + 1,
                &item.indices,
                theme.style(Role::Fg),
                matched,
            ));
            let written = used + description.chars().count();
            let pad = content_width.saturating_sub(written + keys_width);
            spans.push(Span::raw(" ".repeat(pad)));
            spans.push(Span::styled(item.keys.clone(), theme.style(Role::Dim)));
            let line = Line::from(spans);
            if is_selected {
                line.style(theme.style(Role::Selection))
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), list_area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlighted_splits_runs() {
        let plain = Style::default();
        let strong = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let spans = highlighted("abcd", 2, &[3, 4], plain, strong);
        let parts: Vec<(&str, Style)> = spans
            .iter()
            .map(|s| (s.content.as_ref(), s.style))
            .collect();
        assert_eq!(parts, vec![("a", plain), ("bc", strong), ("d", plain)]);
    }

    #[test]
    fn cut_keeps_whole_characters() {
        assert_eq!(cut("abcdef", 3), "ab…");
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("é€x", 2), "é…");
        assert_eq!(cut("abc", 0), "");
    }
}
