//! What every command and the TUI run with: the resolved paths and the merged config.

use anyhow::Result;

use super::LoadedConfig;
use crate::engines::prompts::Prompts;
use crate::paths::Paths;
use crate::store::Store;

/// What every command and the TUI need: paths and the merged config.
pub struct Ctx {
    pub paths: Paths,
    pub loaded: LoadedConfig,
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
    pub fn prompts(&self) -> Prompts {
        Prompts::load(&self.paths.config_dir)
    }
}
