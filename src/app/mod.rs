//! The application: configuration, keys, themes, prompts and the TUI runtime.

pub mod action;
pub mod form;
pub mod frame;
pub mod graph;
pub mod highlight;
pub mod input;
pub mod jobs;
pub mod keymap;
pub mod ledger;
pub mod loaded;
pub mod runtime;
pub mod search_ui;
pub mod state;
pub mod themes;
pub mod tree;
pub mod tui;
pub mod update;
pub mod workspaces;

// The config and the prompts live below the app; these paths keep `super::config`,
// `super::prompts` and `crate::app::Ctx` working.
pub use crate::config;
pub use crate::config::Ctx;
pub use crate::engines::prompts;
pub use tui::run;
