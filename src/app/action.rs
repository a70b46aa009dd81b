//! Everything the user can ask the TUI to do. Bindable variants are named in
//! `configs/keymap.toml`; each has a one-line description the help overlay and palette list.

use serde::{Deserialize, Serialize};

/// A section of the keymap: where a binding applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// Works whatever has focus (modifier keys, Esc, F-keys, Tab).
    Global,
    /// While the multi-line question box has focus; printable keys are typed there.
    Input,
    /// While a pane has focus.
    Normal,
}

impl Section {
    /// Every section, in the order of the keymap file.
    pub const ALL: [Section; 3] = [Section::Global, Section::Input, Section::Normal];

    /// The section's name in keymap.toml (`global`, `input`, `normal`).
    pub fn name(self) -> &'static str {
        match self {
            Section::Global => "global",
            Section::Input => "input",
            Section::Normal => "normal",
        }
    }

    /// A heading for the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Section::Global => "Everywhere",
            Section::Input => "Question box",
            Section::Normal => "Panes",
        }
    }

    /// The section named `name` in keymap.toml, if any.
    pub fn from_name(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// A user action. Variants added later for runtime use carry data and are `#[serde(skip)]`;
/// only the unit variants listed by [`Action::all`] can be bound.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
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
    WorkspaceThink,
    WorkspaceSessions,
    WorkspaceLedger,
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
}

/// The bindable actions, grouped by section, in a stable order.
const BINDABLE: &[Action] = &[
    Action::Quit,
    Action::Help,
    Action::Palette,
    Action::SearchSessions,
    Action::CancelRun,
    Action::FocusNext,
    Action::FocusPrev,
    Action::NextWorkspace,
    Action::PrevWorkspace,
    Action::WorkspaceThink,
    Action::WorkspaceSessions,
    Action::WorkspaceLedger,
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
];

impl Action {
    /// Every user-bindable action, in a stable order (grouped by [`Action::context`]).
    pub fn all() -> &'static [Action] {
        BINDABLE
    }

    /// The bindable action called `name` in keymap.toml (`"search_sessions"`), if any.
    pub fn from_name(name: &str) -> Option<Action> {
        BINDABLE.iter().find(|a| a.name() == name).cloned()
    }

    /// The action's name in keymap.toml (its serde name).
    pub fn name(&self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::Help => "help",
            Action::Palette => "palette",
            Action::SearchSessions => "search_sessions",
            Action::CancelRun => "cancel_run",
            Action::FocusNext => "focus_next",
            Action::FocusPrev => "focus_prev",
            Action::NextWorkspace => "next_workspace",
            Action::PrevWorkspace => "prev_workspace",
            Action::WorkspaceThink => "workspace_think",
            Action::WorkspaceSessions => "workspace_sessions",
            Action::WorkspaceLedger => "workspace_ledger",
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
        }
    }

    /// One short line saying what the action does.
    pub fn description(&self) -> &'static str {
        match self {
            Action::Quit => "Quit glassbox",
            Action::Help => "Show the key bindings",
            Action::Palette => "Open the command palette",
            Action::SearchSessions => "Search sessions",
            Action::CancelRun => "Cancel the run (or leave the question box)",
            Action::FocusNext => "Focus the next pane",
            Action::FocusPrev => "Focus the previous pane",
            Action::NextWorkspace => "Next workspace",
            Action::PrevWorkspace => "Previous workspace",
            Action::WorkspaceThink => "Go to the Think workspace",
            Action::WorkspaceSessions => "Go to the Sessions workspace",
            Action::WorkspaceLedger => "Go to the Ledger workspace (MCP thoughts)",
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
        }
    }

    /// The keymap section the action belongs to (where its default bindings live). Some
    /// global actions also have a plain-key binding in [`Section::Normal`] (`q`, `?`, `:`).
    pub fn context(&self) -> Section {
        match self {
            Action::Quit
            | Action::Help
            | Action::Palette
            | Action::SearchSessions
            | Action::CancelRun
            | Action::FocusNext
            | Action::FocusPrev
            | Action::NextWorkspace
            | Action::PrevWorkspace
            | Action::WorkspaceThink
            | Action::WorkspaceSessions
            | Action::WorkspaceLedger => Section::Global,
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
            | Action::ContinueFromHere => Section::Normal,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::de::IntoDeserializer;
    use serde::de::value::{Error as ValueError, StrDeserializer};

    use super::*;

    #[test]
    fn names_agree_with_serde() {
        for action in Action::all() {
            let de: StrDeserializer<'_, ValueError> = action.name().into_deserializer();
            assert_eq!(&Action::deserialize(de).unwrap(), action);
            let json = serde_json::to_string(action).unwrap();
            assert_eq!(json, format!("\"{}\"", action.name()));
        }
    }

    #[test]
    fn names_and_descriptions_are_unique_and_short() {
        let all = Action::all();
        for (i, a) in all.iter().enumerate() {
            assert!(!a.description().is_empty());
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
        let mut sorted = contexts.clone();
        sorted.sort();
        assert_eq!(contexts, sorted);
        assert_eq!(Action::from_name("top"), Some(Action::Top));
        assert_eq!(Action::from_name("nope"), None);
    }

    #[test]
    fn section_names_round_trip() {
        for s in Section::ALL {
            assert_eq!(Section::from_name(s.name()), Some(s));
        }
        assert_eq!(Section::from_name("visual"), None);
    }
}
