//! The application: configuration, keys, themes, prompts and the TUI runtime.

pub mod action;
pub mod config;
pub mod fork_ws;
pub mod form;
pub mod got_ws;
pub mod graph;
pub mod highlight;
pub mod input;
pub mod insights_ws;
pub mod keymap;
pub mod ledger;
pub mod replay_ws;
pub mod runtime;
pub mod search_ui;
pub mod state;
pub mod theme;
pub mod tree;
pub mod tui;
pub mod update;
pub mod verify_ws;

use anyhow::Result;

pub use crate::engines::prompts;
use crate::paths::Paths;
use crate::store::Store;
pub use tui::run;

/// What every command and the TUI need: paths and the merged config.
pub struct Ctx {
    pub paths: Paths,
    pub loaded: config::LoadedConfig,
    /// The environment snapshot the config was loaded from (key variables only as "set").
    pub env: Vec<(String, String)>,
}

impl Ctx {
    /// Opens (creating if needed) the store in the data dir.
    pub fn open_store(&self) -> Result<Store> {
        self.paths.ensure_data_dir()?;
        Ok(Store::open(&self.paths.store_file())?)
    }

    /// The prompts: embedded defaults overridden by files in `<config dir>/prompts/`.
    pub fn prompts(&self) -> prompts::Prompts {
        prompts::Prompts::load(&self.paths.config_dir)
    }
}
