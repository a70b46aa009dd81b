//! Pure render functions: view models in, widgets out. No I/O, no awaits, no store access,
//! and nothing from `crate::app`: the app builds the view models (the plain data types here,
//! such as [`graph_model::GraphModel`] or [`think::ThinkView`]) and calls the views.

pub mod chrome;
pub mod diff;
pub mod fork;
pub mod form;
pub mod got;
pub mod graph;
pub mod graph_model;
pub mod help;
pub mod highlight_cache;
pub mod hints;
pub mod input;
pub mod insights;
pub mod ledger;
pub mod ledger_model;
pub mod markdown;
pub mod memory;
pub mod overlay;
pub mod palette;
pub mod pipeline;
pub mod replay;
pub mod research;
pub mod search;
pub mod sessions;
pub mod text;
pub mod theme;
pub mod think;
pub mod tree;
pub mod verify;

use ratatui::layout::{Constraint, Layout, Rect};

use self::markdown::HighlightCache;
use self::theme::Theme;

/// The keys bound to actions in the mode the screen is in, as the views ask for them: by
/// action name (`"new_fork"`), displayed (`"N"`, `"g g"`), most specific binding first. The
/// app's keymap answers; a view never sees the keymap itself.
pub trait Keys {
    fn keys(&self, action: &str) -> Vec<String>;
}

/// What every view draws with besides its own view model.
pub struct ViewCx<'a> {
    pub theme: &'a Theme,
    /// The keys of the mode the screen is in.
    pub keys: &'a dyn Keys,
    /// Highlighted code blocks, filled off the render path.
    pub highlights: &'a HighlightCache,
    /// Answers rendered in earlier frames.
    pub markdown: &'a markdown::MarkdownCache,
}

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

/// Where an engine run a workspace shows is (GoT, Pipeline).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum JobPhase {
    /// Nothing to show.
    #[default]
    Empty,
    /// A store read is under way.
    Loading,
    /// Running in this TUI.
    Running,
    Done,
    Interrupted,
    Failed(String),
    /// Stored as running, but not by this TUI (another process, or one that stopped
    /// without saying so).
    Elsewhere,
}

/// A node picked in a workspace (the selected branch, layer or graph node), for the actions
/// that take "the selected node" from anywhere (marking a diff): its id, its kind and what
/// that workspace calls it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picked {
    pub node: crate::store::NodeId,
    pub kind: crate::store::NodeType,
    /// A name besides the kind (`conservative`, `Critic`), when the workspace has one.
    pub what: Option<String>,
}

impl Picked {
    /// `fork_branch 1a2b3c4d (conservative)`.
    pub fn label(&self) -> String {
        let mut s = format!("{} {}", self.kind.as_str(), self.node.short());
        if let Some(w) = &self.what {
            s.push_str(&format!(" ({w})"));
        }
        s
    }
}
