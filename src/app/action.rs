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
    /// In the Fork workspace (wins over `[normal]` there).
    Fork,
    /// In the Graph-of-Thoughts workspace.
    Got,
    /// In the Verify workspace.
    Verify,
    /// In the Insights workspace.
    Insights,
    /// In the Replay workspace.
    Replay,
}

impl Section {
    /// Every section, in the order of the keymap file.
    pub const ALL: [Section; 8] = [
        Section::Global,
        Section::Input,
        Section::Normal,
        Section::Fork,
        Section::Got,
        Section::Verify,
        Section::Insights,
        Section::Replay,
    ];

    /// The section's name in keymap.toml (`global`, `input`, `normal`).
    pub fn name(self) -> &'static str {
        match self {
            Section::Global => "global",
            Section::Input => "input",
            Section::Normal => "normal",
            Section::Fork => "fork",
            Section::Got => "got",
            Section::Verify => "verify",
            Section::Insights => "insights",
            Section::Replay => "replay",
        }
    }

    /// A heading for the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Section::Global => "Everywhere",
            Section::Input => "Question box",
            Section::Normal => "Panes",
            Section::Fork => "Fork workspace",
            Section::Got => "Graph of Thoughts workspace",
            Section::Verify => "Verify workspace",
            Section::Insights => "Insights workspace",
            Section::Replay => "Replay workspace",
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
    WorkspaceFork,
    WorkspaceGot,
    WorkspaceVerify,
    WorkspaceInsights,
    WorkspaceReplay,
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
    ForkHere,
    Checkpoint,
    VerifyNode,
    RunInsights,
    ReplaySession,
    NewFork,
    Debate,
    ExpandBranch,
    ToggleMark,
    MergeBranches,
    ChallengeBranch,
    Refork,
    NextColumn,
    PrevColumn,
    NewSearch,
    PauseResume,
    StepSearch,
    PinThought,
    PruneThought,
    BoostThought,
    LowerThought,
    SetBudget,
    ForkAtError,
    NextError,
    PrevError,
    OpenEvidence,
    PlayPause,
    StepForward,
    StepBack,
    SpeedUp,
    SpeedDown,
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
    Action::WorkspaceFork,
    Action::WorkspaceGot,
    Action::WorkspaceVerify,
    Action::WorkspaceInsights,
    Action::WorkspaceReplay,
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
    Action::ForkHere,
    Action::Checkpoint,
    Action::VerifyNode,
    Action::RunInsights,
    Action::ReplaySession,
    Action::NewFork,
    Action::Debate,
    Action::ExpandBranch,
    Action::ToggleMark,
    Action::MergeBranches,
    Action::ChallengeBranch,
    Action::Refork,
    Action::NextColumn,
    Action::PrevColumn,
    Action::NewSearch,
    Action::PauseResume,
    Action::StepSearch,
    Action::PinThought,
    Action::PruneThought,
    Action::BoostThought,
    Action::LowerThought,
    Action::SetBudget,
    Action::ForkAtError,
    Action::NextError,
    Action::PrevError,
    Action::OpenEvidence,
    Action::PlayPause,
    Action::StepForward,
    Action::StepBack,
    Action::SpeedUp,
    Action::SpeedDown,
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
            Action::WorkspaceFork => "workspace_fork",
            Action::WorkspaceGot => "workspace_got",
            Action::WorkspaceVerify => "workspace_verify",
            Action::WorkspaceInsights => "workspace_insights",
            Action::WorkspaceReplay => "workspace_replay",
            Action::SearchText => "search_text",
            Action::ForkHere => "fork_here",
            Action::Checkpoint => "checkpoint",
            Action::VerifyNode => "verify_node",
            Action::RunInsights => "run_insights",
            Action::ReplaySession => "replay_session",
            Action::NewFork => "new_fork",
            Action::Debate => "debate",
            Action::ExpandBranch => "expand_branch",
            Action::ToggleMark => "toggle_mark",
            Action::MergeBranches => "merge_branches",
            Action::ChallengeBranch => "challenge_branch",
            Action::Refork => "refork",
            Action::NextColumn => "next_column",
            Action::PrevColumn => "prev_column",
            Action::NewSearch => "new_search",
            Action::PauseResume => "pause_resume",
            Action::StepSearch => "step_search",
            Action::PinThought => "pin_thought",
            Action::PruneThought => "prune_thought",
            Action::BoostThought => "boost_thought",
            Action::LowerThought => "lower_thought",
            Action::SetBudget => "set_budget",
            Action::ForkAtError => "fork_at_error",
            Action::NextError => "next_error",
            Action::PrevError => "prev_error",
            Action::OpenEvidence => "open_evidence",
            Action::PlayPause => "play_pause",
            Action::StepForward => "step_forward",
            Action::StepBack => "step_back",
            Action::SpeedUp => "speed_up",
            Action::SpeedDown => "speed_down",
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
            Action::WorkspaceFork => "Go to the Fork workspace",
            Action::WorkspaceGot => "Go to the Graph of Thoughts workspace",
            Action::WorkspaceVerify => "Go to the Verify workspace",
            Action::WorkspaceInsights => "Go to the Insights workspace",
            Action::WorkspaceReplay => "Go to the Replay workspace",
            Action::SearchText => "Full-text search of everything",
            Action::ForkHere => "Fork the selected node or step",
            Action::Checkpoint => "Checkpoint: verified, questionable, disagree",
            Action::VerifyNode => "Verify the selected thinking step by step",
            Action::RunInsights => "Metacognitive insights on the session",
            Action::ReplaySession => "Replay the session",
            Action::NewFork => "Fork a new question",
            Action::Debate => "Debate the branches",
            Action::ExpandBranch => "Expand the branch at max effort",
            Action::ToggleMark => "Mark or unmark the branch",
            Action::MergeBranches => "Merge the marked branches",
            Action::ChallengeBranch => "Challenge the branch",
            Action::Refork => "Fork all branches again with new context",
            Action::NextColumn => "Next branch column",
            Action::PrevColumn => "Previous branch column",
            Action::NewSearch => "Start a Graph of Thoughts search",
            Action::PauseResume => "Pause or resume the search",
            Action::StepSearch => "While paused: expand one more thought",
            Action::PinThought => "Pin the thought (never pruned)",
            Action::PruneThought => "Prune the thought by hand",
            Action::BoostThought => "Raise the thought's priority",
            Action::LowerThought => "Lower the thought's priority",
            Action::SetBudget => "Set the search's token budget",
            Action::ForkAtError => "Fork a corrected branch at this step",
            Action::NextError => "Jump to the next failing step",
            Action::PrevError => "Jump to the previous failing step",
            Action::OpenEvidence => "Jump to the evidence's node",
            Action::PlayPause => "Play or pause the replay",
            Action::StepForward => "Step one event forward",
            Action::StepBack => "Step one event back",
            Action::SpeedUp => "Replay faster",
            Action::SpeedDown => "Replay slower",
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
            | Action::WorkspaceLedger
            | Action::WorkspaceFork
            | Action::WorkspaceGot
            | Action::WorkspaceVerify
            | Action::WorkspaceInsights
            | Action::WorkspaceReplay => Section::Global,
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
            | Action::SearchText
            | Action::ForkHere
            | Action::Checkpoint
            | Action::VerifyNode
            | Action::RunInsights
            | Action::ReplaySession => Section::Normal,
            Action::NewFork
            | Action::Debate
            | Action::ExpandBranch
            | Action::ToggleMark
            | Action::MergeBranches
            | Action::ChallengeBranch
            | Action::Refork
            | Action::NextColumn
            | Action::PrevColumn => Section::Fork,
            Action::NewSearch
            | Action::PauseResume
            | Action::StepSearch
            | Action::PinThought
            | Action::PruneThought
            | Action::BoostThought
            | Action::LowerThought
            | Action::SetBudget => Section::Got,
            Action::ForkAtError | Action::NextError | Action::PrevError => Section::Verify,
            Action::OpenEvidence => Section::Insights,
            Action::PlayPause
            | Action::StepForward
            | Action::StepBack
            | Action::SpeedUp
            | Action::SpeedDown => Section::Replay,
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
