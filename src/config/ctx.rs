//! What every command and the TUI run with: the resolved paths and the merged config.

use std::sync::{Arc, OnceLock};

use anyhow::Result;

use super::{LoadedConfig, StoreTarget};
use crate::engines::knowledge::Knowledge;
use crate::engines::memory::{self, Embedder, Memory, ScopeKind};
use crate::engines::prompts::Prompts;
use crate::paths::Paths;
use crate::store::Store;

/// What every command and the TUI need: paths and the merged config.
pub struct Ctx {
    pub paths: Paths,
    pub loaded: LoadedConfig,
    /// The environment snapshot the config was loaded from (key variables only as "set").
    pub env: Vec<(String, String)>,
    /// The configured embedder, loaded on first use (or why it could not be).
    pub embedder: OnceLock<Result<Option<Arc<dyn Embedder>>, String>>,
}

impl Ctx {
    /// The configured store: `[store] url` (`--store`, `GLASSBOX_STORE_URL`) when set, else
    /// the redb file in the data dir.
    pub fn store_target(&self) -> Result<StoreTarget> {
        StoreTarget::from_url(&self.loaded.config.store.url, &self.paths.store_file())
    }

    /// The redb file in the data dir when that is the configured store; `None` for a
    /// PostgreSQL store (nothing is kept in the data dir's file then).
    pub fn store_file(&self) -> Option<std::path::PathBuf> {
        match self.store_target() {
            Ok(StoreTarget::File(path)) => Some(path),
            _ => None,
        }
    }

    /// Opens (creating if needed) the configured store.
    pub fn open_store(&self) -> Result<Store> {
        self.open_store_with_cache(crate::store::CACHE_BYTES)
    }

    /// [`Ctx::open_store`] with a page cache of `cache_bytes` (for a redb file).
    pub fn open_store_with_cache(&self, cache_bytes: usize) -> Result<Store> {
        let target = self.store_target()?;
        if matches!(target, StoreTarget::File(_)) {
            self.paths.ensure_data_dir()?;
        }
        target.open(cache_bytes)
    }

    /// The `[embeddings]` embedder, made once (the local model reads its weights on its
    /// first use). `Err` says why there is none (a missing model file): memory then searches
    /// by keywords only, as it does when a damaged file fails that first use.
    pub fn embedder(&self) -> Result<Option<Arc<dyn Embedder>>, String> {
        self.embedder
            .get_or_init(|| {
                memory::embed::build(
                    &self.loaded.config.embeddings,
                    crate::models::minilm_dir(&self.paths.models_dir),
                )
                .map_err(|e| {
                    format!("{e}; memory search uses keywords only (run scripts/setup.sh, then `glassbox memory reembed`)")
                })
            })
            .clone()
    }

    /// Memory for this working directory: writes go to the scope of `kind` (the config's
    /// `default_scope` when `None`), reads see it and global. A missing embedder becomes a
    /// warning in the memory's [`Memory::take_warnings`].
    pub fn memory(
        &self,
        store: Store,
        kind: Option<ScopeKind>,
        session: Option<crate::store::SessionId>,
    ) -> Result<Memory> {
        let cfg = &self.loaded.config;
        let cwd = std::env::current_dir()?;
        let scope = memory::scope_for(kind.unwrap_or(cfg.memory.default_scope), &cwd, session)?;
        let (embedder, warning) = match self.embedder() {
            Ok(e) => (e, None),
            Err(w) => (None, Some(w)),
        };
        let m = Memory::new(store, cfg.memory.clone(), embedder, scope, Vec::new());
        if let Some(w) = warning {
            m.warn_once(w);
        }
        Ok(m)
    }

    /// The knowledge base over `store`, with the embedder when it loads; the second value
    /// says why there is none (search then goes by words).
    pub fn knowledge(&self, store: Store) -> (Knowledge, Option<String>) {
        let cfg = &self.loaded.config;
        let (embedder, warning) = match self.embedder() {
            Ok(e) => (e, None),
            Err(w) => (None, Some(w)),
        };
        let k = Knowledge::new(store, embedder, cfg.knowledge.clone())
            .with_batch_size(cfg.embeddings.batch_size);
        (k, warning)
    }

    /// The prompts: embedded defaults overridden by files in `<config dir>/prompts/`.
    pub fn prompts(&self) -> Prompts {
        Prompts::load(&self.paths.config_dir)
    }
}
