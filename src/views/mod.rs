//! Pure render functions: state in, widgets out. No I/O, no awaits, no store access.

pub mod chrome;
pub mod fork;
pub mod form;
pub mod got;
pub mod graph;
pub mod help;
pub mod hints;
pub mod insights;
pub mod ledger;
pub mod markdown;
pub mod overlay;
pub mod palette;
pub mod replay;
pub mod search;
pub mod sessions;
pub mod think;
pub mod verify;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

use crate::app::highlight::HighlightCache;
use crate::app::keymap::Keymap;
use crate::app::state::{Overlay, State, Workspace};
use crate::app::theme::Theme;

/// The workspace body: the whole frame but the tab line and the status bar.
pub fn body_area(area: Rect) -> Rect {
    let [_, body, _] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    body
}

/// Draws one frame of the whole TUI.
pub fn render(
    f: &mut Frame,
    state: &State,
    theme: &Theme,
    keymap: &Keymap,
    highlights: &HighlightCache,
) {
    let area = f.area();
    f.render_widget(ratatui::widgets::Block::default().style(theme.base()), area);
    let [tabs, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    chrome::render_tabs(f, tabs, state, theme);
    match state.workspace {
        Workspace::Think => think::render(f, body, state, theme, highlights),
        Workspace::Sessions => sessions::render(f, body, state, theme, keymap),
        Workspace::Ledger => {
            if state.ledger.session().is_none() {
                let hint = "No MCP thoughts yet. Connect a client — `claude mcp add glassbox -- glassbox mcp` — and its thoughts appear here as they arrive.";
                f.render_widget(
                    ratatui::widgets::Paragraph::new(hint)
                        .wrap(ratatui::widgets::Wrap { trim: true })
                        .style(theme.style(crate::app::theme::Role::Dim))
                        .block(think::pane(" Ledger ", true, theme)),
                    body,
                );
            } else {
                ledger::render(f, body, &state.ledger, theme, true);
            }
        }
        Workspace::Fork => fork::render(f, body, state, theme, keymap),
        Workspace::Got => got::render(f, body, state, theme, keymap),
        Workspace::Verify => verify::render(f, body, state, theme, keymap),
        Workspace::Insights => insights::render(f, body, state, theme, keymap),
        Workspace::Replay => replay::render(f, body, state, theme, keymap),
    }
    chrome::render_status(f, status, state, theme);
    match &state.overlay {
        Some(Overlay::Help { scroll }) => help::render(f, area, keymap, theme, *scroll),
        Some(Overlay::Palette(p)) => {
            let items = palette::matches(&p.query, keymap);
            palette::render(f, area, p, &items, theme);
        }
        Some(Overlay::NodeDetail { node, scroll }) => {
            overlay::node_detail(f, area, state, *node, *scroll, theme)
        }
        Some(Overlay::ConfirmDelete { title, .. }) => {
            overlay::confirm_delete(f, area, title, theme)
        }
        Some(Overlay::Rename { input, .. }) => overlay::rename(f, area, input.text(), theme),
        Some(Overlay::Form(form)) => form::render(f, area, form, theme),
        Some(Overlay::Search(search)) => search::render(f, area, search, theme),
        None => {
            if let Some((prefix, hints)) = &state.pending_chord {
                help::which_key(f, area, prefix, hints, theme);
            }
        }
    }
}
