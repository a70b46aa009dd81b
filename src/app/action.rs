//! Everything the user can ask the TUI to do. Bindable variants are named in
//! `configs/keymap.toml`; each has a one-line description the help overlay and palette list.

use std::borrow::Cow;

use super::workspaces::{self, ActionSpec, Place, WorkspaceId};

/// A section of the keymap: where a binding applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// Works whatever has focus (modifier keys, Esc, F-keys, Tab).
    Global,
    /// While the multi-line question box has focus; printable keys are typed there.
    Input,
    /// While a pane has focus.
    Normal,
    /// In one workspace (`[fork]`, `[got]`, …; wins over `[normal]` there).
    Workspace(WorkspaceId),
}

impl Section {
    /// Every section, in the order of the keymap file: the three shared ones, then each
    /// workspace with a section of its own, in registry order.
    pub fn all() -> Vec<Section> {
        let mut all = vec![Section::Global, Section::Input, Section::Normal];
        all.extend(
            workspaces::REGISTRY
                .iter()
                .filter(|e| e.spec.section)
                .map(|e| Section::Workspace(e.spec.id)),
        );
        all
    }

    /// The section's name in keymap.toml (`global`, `input`, `normal`, `fork`).
    pub fn name(self) -> &'static str {
        match self {
            Section::Global => "global",
            Section::Input => "input",
            Section::Normal => "normal",
            Section::Workspace(id) => id,
        }
    }

    /// A heading for the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Section::Global => "Everywhere",
            Section::Input => "Question box",
            Section::Normal => "Panes",
            Section::Workspace(id) => workspaces::spec(id).map_or(id, |s| s.help_title),
        }
    }

    /// The section named `name` in keymap.toml, if any.
    pub fn from_name(name: &str) -> Option<Section> {
        Section::all().into_iter().find(|s| s.name() == name)
    }
}

/// An action a workspace declares (see [`workspaces::ActionSpec`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WsAction {
    pub ws: WorkspaceId,
    pub name: &'static str,
}

impl WsAction {
    fn spec(&self) -> Option<&'static ActionSpec> {
        workspaces::spec(self.ws)?
            .actions
            .iter()
            .find(|a| a.name == self.name)
    }
}

/// A user action: the shared ones here, plus showing a workspace and the actions each
/// workspace declares in its folder. Every one is bindable by [`Action::name`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Show the workspace (`workspace_<id>`).
    Workspace(WorkspaceId),
    /// An action a workspace declares.
    Ws(WsAction),
    // Global.
    Quit,
    Help,
    Palette,
    SearchSessions,
    CancelRun,
    FocusNext,
    FocusPrev,
    NextWorkspace,
    PrevWorkspace,
    // Question box.
    Submit,
    Newline,
    HistoryPrev,
    HistoryNext,
    LeaveInput,
    // Panes.
    FocusInput,
    MoveUp,
    MoveDown,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Expand,
    Collapse,
    Select,
    ToggleThinkingMode,
    ToggleSidebar,
    NextDecision,
    PrevDecision,
    CycleEffort,
    CycleRoute,
    NewSession,
    RenameSession,
    DeleteSession,
    ContinueFromHere,
    SearchText,
}

/// The bindable actions, grouped by section, in a stable order.
const SHARED: &[Action] = &[
    Action::Quit,
    Action::Help,
    Action::Palette,
    Action::SearchSessions,
    Action::CancelRun,
    Action::FocusNext,
    Action::FocusPrev,
    Action::NextWorkspace,
    Action::PrevWorkspace,
    Action::Submit,
    Action::Newline,
    Action::HistoryPrev,
    Action::HistoryNext,
    Action::LeaveInput,
    Action::FocusInput,
    Action::MoveUp,
    Action::MoveDown,
    Action::PageUp,
    Action::PageDown,
    Action::Top,
    Action::Bottom,
    Action::Expand,
    Action::Collapse,
    Action::Select,
    Action::ToggleThinkingMode,
    Action::ToggleSidebar,
    Action::NextDecision,
    Action::PrevDecision,
    Action::CycleEffort,
    Action::CycleRoute,
    Action::NewSession,
    Action::RenameSession,
    Action::DeleteSession,
    Action::ContinueFromHere,
    Action::SearchText,
];

impl Action {
    /// Every user-bindable action, in a stable order (grouped by [`Action::context`]).
    pub fn all() -> Vec<Action> {
        let mut all: Vec<Action> = SHARED
            .iter()
            .filter(|a| a.context() == Section::Global)
            .cloned()
            .collect();
        all.extend(
            workspaces::REGISTRY
                .iter()
                .map(|e| Action::Workspace(e.spec.id)),
        );
        all.extend(
            SHARED
                .iter()
                .filter(|a| a.context() != Section::Global)
                .cloned(),
        );
        let declared = |place: Place| {
            workspaces::REGISTRY.iter().flat_map(move |e| {
                e.spec
                    .actions
                    .iter()
                    .filter(move |a| a.place == place)
                    .map(|a| {
                        Action::Ws(WsAction {
                            ws: e.spec.id,
                            name: a.name,
                        })
                    })
            })
        };
        all.extend(declared(Place::Anywhere));
        all.extend(declared(Place::Own));
        all
    }

    /// The bindable action called `name` in keymap.toml (`"search_sessions"`), if any.
    pub fn from_name(name: &str) -> Option<Action> {
        Action::all().into_iter().find(|a| a.name() == name)
    }

    /// The action's name in keymap.toml (its serde name).
    pub fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Action::Workspace(id) => return Cow::Owned(format!("workspace_{id}")),
            Action::Ws(a) => a.name,
            Action::Quit => "quit",
            Action::Help => "help",
            Action::Palette => "palette",
            Action::SearchSessions => "search_sessions",
            Action::CancelRun => "cancel_run",
            Action::FocusNext => "focus_next",
            Action::FocusPrev => "focus_prev",
            Action::NextWorkspace => "next_workspace",
            Action::PrevWorkspace => "prev_workspace",
            Action::Submit => "submit",
            Action::Newline => "newline",
            Action::HistoryPrev => "history_prev",
            Action::HistoryNext => "history_next",
            Action::LeaveInput => "leave_input",
            Action::FocusInput => "focus_input",
            Action::MoveUp => "move_up",
            Action::MoveDown => "move_down",
            Action::PageUp => "page_up",
            Action::PageDown => "page_down",
            Action::Top => "top",
            Action::Bottom => "bottom",
            Action::Expand => "expand",
            Action::Collapse => "collapse",
            Action::Select => "select",
            Action::ToggleThinkingMode => "toggle_thinking_mode",
            Action::ToggleSidebar => "toggle_sidebar",
            Action::NextDecision => "next_decision",
            Action::PrevDecision => "prev_decision",
            Action::CycleEffort => "cycle_effort",
            Action::CycleRoute => "cycle_route",
            Action::NewSession => "new_session",
            Action::RenameSession => "rename_session",
            Action::DeleteSession => "delete_session",
            Action::ContinueFromHere => "continue_from_here",
            Action::SearchText => "search_text",
        })
    }

    /// One short line saying what the action does.
    pub fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Action::Workspace(id) => match workspaces::spec(id) {
                Some(spec) => spec.go,
                None => return Cow::Owned(format!("Go to the {id} workspace")),
            },
            Action::Ws(a) => a.spec().map_or("", |s| s.description),
            Action::Quit => "Quit glassbox",
            Action::Help => "Show the key bindings",
            Action::Palette => "Open the command palette",
            Action::SearchSessions => "Search sessions",
            Action::CancelRun => "Cancel the run (or leave the question box)",
            Action::FocusNext => "Focus the next pane",
            Action::FocusPrev => "Focus the previous pane",
            Action::NextWorkspace => "Next workspace",
            Action::PrevWorkspace => "Previous workspace",
            Action::Submit => "Send the question",
            Action::Newline => "Insert a line break",
            Action::HistoryPrev => "Previous question from history",
            Action::HistoryNext => "Next question from history",
            Action::LeaveInput => "Leave the question box",
            Action::FocusInput => "Focus the question box",
            Action::MoveUp => "Move up",
            Action::MoveDown => "Move down",
            Action::PageUp => "Scroll up a page",
            Action::PageDown => "Scroll down a page",
            Action::Top => "Go to the top",
            Action::Bottom => "Go to the bottom",
            Action::Expand => "Expand the node",
            Action::Collapse => "Collapse the node",
            Action::Select => "Open the selected item",
            Action::ToggleThinkingMode => "Thinking: streaming, summary or hidden",
            Action::ToggleSidebar => "Show or hide the sidebar",
            Action::NextDecision => "Jump to the next decision point",
            Action::PrevDecision => "Jump to the previous decision point",
            Action::CycleEffort => "Cycle the reasoning effort",
            Action::CycleRoute => "Cycle the route: auto, simple, standard, complex",
            Action::NewSession => "Start a new session",
            Action::RenameSession => "Rename the session",
            Action::DeleteSession => "Delete the session",
            Action::ContinueFromHere => "Ask on from the selected node (a branch)",
            Action::SearchText => "Full-text search of everything",
        })
    }

    /// The keymap section the action belongs to (where its default bindings live). Some
    /// global actions also have a plain-key binding in [`Section::Normal`] (`q`, `?`, `:`).
    pub fn context(&self) -> Section {
        match self {
            Action::Workspace(_) => Section::Global,
            Action::Ws(a) => match a.spec().map(|s| s.place) {
                Some(Place::Anywhere) => Section::Normal,
                _ => Section::Workspace(a.ws),
            },
            Action::Quit
            | Action::Help
            | Action::Palette
            | Action::SearchSessions
            | Action::CancelRun
            | Action::FocusNext
            | Action::FocusPrev
            | Action::NextWorkspace
            | Action::PrevWorkspace => Section::Global,
            Action::Submit
            | Action::Newline
            | Action::HistoryPrev
            | Action::HistoryNext
            | Action::LeaveInput => Section::Input,
            Action::FocusInput
            | Action::MoveUp
            | Action::MoveDown
            | Action::PageUp
            | Action::PageDown
            | Action::Top
            | Action::Bottom
            | Action::Expand
            | Action::Collapse
            | Action::Select
            | Action::ToggleThinkingMode
            | Action::ToggleSidebar
            | Action::NextDecision
            | Action::PrevDecision
            | Action::CycleEffort
            | Action::CycleRoute
            | Action::NewSession
            | Action::RenameSession
            | Action::DeleteSession
            | Action::ContinueFromHere
            | Action::SearchText => Section::Normal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for action in Action::all() {
            assert_eq!(Action::from_name(&action.name()), Some(action.clone()));
        }
        assert_eq!(
            Action::from_name("workspace_fork"),
            Some(Action::Workspace("fork"))
        );
    }

    #[test]
    fn names_and_descriptions_are_unique_and_short() {
        let all = Action::all();
        for (i, a) in all.iter().enumerate() {
            assert!(!a.description().is_empty(), "{a:?}");
            assert!(a.description().chars().count() <= 50, "{a:?}");
            for b in &all[i + 1..] {
                assert_ne!(a.name(), b.name());
                assert_ne!(a.description(), b.description());
            }
        }
    }

    #[test]
    fn all_is_grouped_by_context() {
        let contexts: Vec<Section> = Action::all().iter().map(Action::context).collect();
        let order = Section::all();
        let rank = |s: &Section| order.iter().position(|o| o == s);
        let ranks: Vec<_> = contexts.iter().map(rank).collect();
        let mut sorted = ranks.clone();
        sorted.sort();
        assert_eq!(ranks, sorted);
        assert_eq!(Action::from_name("top"), Some(Action::Top));
        assert_eq!(Action::from_name("nope"), None);
    }

    #[test]
    fn section_names_round_trip() {
        for s in Section::all() {
            assert_eq!(Section::from_name(s.name()), Some(s));
        }
        assert_eq!(Section::from_name("visual"), None);
    }
}
