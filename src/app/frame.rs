//! One frame of the whole TUI: the tab line, the workspace on screen, the status bar, then
//! the popup or the which-key hints over them. The app builds each view's model here from
//! its state and keymap; the views only draw.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::widgets::Block;

use super::action::Action;
use super::form::Form;
use super::keymap::{self, Keymap, Mode, ModeKeys};
use super::state::{Overlay, State};
use super::workspaces::{self, Workspaces};
use crate::views::chrome::{self, StatusView, TabsView};
use crate::views::form::FormView;
use crate::views::markdown::HighlightCache;
use crate::views::theme::Theme;
use crate::views::{ViewCx, help, overlay, palette, search};

/// What a frame is drawn from besides the state and the workspaces.
pub struct Look<'a> {
    pub theme: &'a Theme,
    pub keymap: &'a Keymap,
    /// The keymap mode keys are read in now (the hints show its keys).
    pub mode: Mode,
    pub highlights: &'a HighlightCache,
    pub markdown: &'a crate::views::markdown::MarkdownCache,
}

/// Draws one frame. The workspace on screen draws its body (and may keep its selection in
/// view, hence `&mut`).
pub fn draw(f: &mut Frame, state: &mut State, workspaces: &mut Workspaces, look: &Look<'_>) {
    let theme = look.theme;
    let area = f.area();
    f.render_widget(Block::default().style(theme.base()), area);
    let [tabs, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);

    let titles: Vec<(&str, String)> = workspaces::REGISTRY
        .iter()
        .map(|e| (e.spec.id, e.spec.title.to_string()))
        .collect();
    let own = workspaces.session_title(state.workspace);
    let title = own
        .as_deref()
        .or_else(|| state.loaded.session.as_ref().map(|s| s.title.as_str()));
    chrome::render_tabs(
        f,
        tabs,
        &TabsView {
            tabs: &titles,
            selected: state.workspace,
            title,
        },
        theme,
    );

    let keys = ModeKeys {
        keymap: look.keymap,
        mode: look.mode,
    };
    let vcx = ViewCx {
        theme,
        keys: &keys,
        highlights: look.highlights,
        markdown: look.markdown,
    };
    workspaces.draw(f, body, state, &vcx);

    chrome::render_status(f, status, &status_view(state), theme);

    match &state.overlay {
        Some(Overlay::Help { scroll }) => {
            help::render(f, area, &keymap::help_sections(look.keymap), theme, *scroll)
        }
        Some(Overlay::Palette(p)) => {
            let items: Vec<palette::PaletteItem> = keymap::palette_matches(&p.query, look.keymap)
                .into_iter()
                .map(|m| m.item)
                .collect();
            palette::render(f, area, p, &items, Action::all().len(), theme);
        }
        Some(Overlay::NodeDetail { node, scroll }) => {
            overlay::node_detail(f, area, state.loaded.node(*node), *scroll, theme)
        }
        Some(Overlay::ConfirmDelete { title, .. }) => {
            overlay::confirm_delete(f, area, title, theme)
        }
        Some(Overlay::Rename { input, .. }) => overlay::rename(f, area, input.text(), theme),
        Some(Overlay::Form(form)) => crate::views::form::render(f, area, &form_view(form), theme),
        Some(Overlay::Search(s)) => search::render(f, area, s, theme),
        None => {
            if let Some((prefix, hints)) = &state.pending_chord {
                help::which_key(f, area, prefix, &keymap::chord_hints(hints), theme);
            }
        }
    }
}

/// The title the workspace on screen gives its tab (Replay names the session it plays), if
/// it gives one: shown after the tabs in place of the open session's.
/// The status bar's view of the state.
fn status_view(state: &State) -> StatusView<'_> {
    StatusView {
        phase: &state.phase,
        jobs: &state.jobs,
        provider: &state.provider,
        model: &state.model,
        effort_override: state.effort_override,
        route_override: state.route_override,
        route_preview: state.route_preview,
        tokens_used: state.session_tokens + state.run.as_ref().map_or(0, |r| r.usage.output_tokens),
        token_budget: state.token_budget,
        chord: state
            .pending_chord
            .as_ref()
            .map(|(prefix, _)| prefix.as_str()),
        notice: state
            .notice
            .as_ref()
            .map(|(text, level)| (text.as_str(), *level)),
    }
}

/// An open form as the form popup draws it.
fn form_view(form: &Form) -> FormView<'_> {
    FormView {
        title: &form.title,
        choices: &form.choices,
        checked: &form.checked,
        multi: form.multi,
        cursor: form.cursor,
        text_label: form.text_label.as_deref(),
        text_required: form.text_required,
        text: form.input.text(),
        on_text: form.on_text,
        error: form.error.as_deref(),
    }
}
