//! Memory: the MemGPT tiers of seed 000 over the store's memory tables. The main context
//! (core facts about the person and the assistant, and working memory) is what every think
//! turn shows the model; recall keeps recent history in a FIFO window; archival keeps the
//! rest for good. Entries are found by a hybrid search (BM25 + embedding similarity +
//! importance − staleness + the dates a query names) and carry the session, node and step
//! that produced them.
//!
//! Every call blocks its thread (store commits, model inference): async code runs them on
//! the blocking pool.
//!
//! - `index.rs`: the in-memory retrieval index and the hybrid score.
//! - `ops.rs`: the operations (insert, search, core append/replace, evict, promote, stats…)
//!   and auto-eviction.
//! - `context.rs`: what a think turn gets (core facts and the top entries within a budget)
//!   and what it leaves (its query and answer in recall).
//! - `io.rs`: JSON Lines export and import, re-embedding.
//! - `embed/`: the embedders.

pub mod assoc;
mod context;
pub mod embed;
pub mod index;
mod io;
pub mod learn;
mod ops;
mod snapshot;
#[cfg(test)]
mod tests;
mod tools;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

pub use crate::engines::orchestrator::FinishedTurn;
pub use assoc::{Dims, NousParams};
pub use context::ContextBlock;
pub use embed::{EmbedError, Embedder, EmbeddingParams};
pub use index::{Filter, Scored, SearchMode, SearchWeights};
pub use io::{ExportLine, ImportReport};
pub use learn::LearnParams;
pub use ops::{Hit, Inserted, MemoryStats, NewMemory};
pub use tools::memory_tools;

use crate::store::{ChangeKind, MemoryScope, Store, StoreError};
use index::MemoryIndex;

/// The kinds of scope a memory can be kept in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeKind {
    Global,
    /// The git root of the working directory, else the directory.
    #[default]
    Project,
    Session,
}

/// The `[memory]` config section: seed 000's sizes and the retrieval weights.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryParams {
    /// Where new entries go unless a command says otherwise.
    pub default_scope: ScopeKind,
    /// Main-context capacity in tokens (seed 000: 100k).
    pub capacity_tokens: u64,
    /// Auto-eviction empties working memory down to this share of the capacity (seed: 0.8).
    pub evict_to: f64,
    /// Recall storage keeps this many entries per scope (seed: 100), oldest out first.
    pub recall_window: usize,
    /// An entry leaving recall goes to archival when its importance is above this (the
    /// seed's eviction threshold); otherwise it is dropped (its node stays in the session).
    pub recall_archive_importance: f32,
    /// Importance of entries inserted without one, and of a turn's recall entries.
    pub default_importance: f32,
    /// Text longer than this many bytes is split into chunks of `chunk_bytes` that share one
    /// provenance.
    pub max_entry_bytes: usize,
    pub chunk_bytes: usize,
    /// A think turn gets core memory, working memory and the `context_top_k` best archival
    /// or recall entries scoring at least `context_min_score`, within `context_tokens`.
    pub context_top_k: usize,
    pub context_min_score: f32,
    pub context_tokens: usize,
    /// Whether think turns add their query and answer to recall.
    pub record_turns: bool,
    /// Whether models that call tools get the memory operations as tools.
    pub tools: bool,
    /// How many times in one turn the model's tool calls are run before it must answer.
    pub max_tool_rounds: u32,
    /// A scope holding this many entries or more keeps a saved copy of its search index in
    /// the store, so a process reads it instead of every entry (0: never).
    pub index_snapshot_entries: usize,
    pub search: SearchWeights,
    pub nous: NousParams,
    pub learn: LearnParams,
}

impl Default for MemoryParams {
    fn default() -> Self {
        Self {
            default_scope: ScopeKind::Project,
            capacity_tokens: 100_000,
            evict_to: 0.8,
            recall_window: 100,
            recall_archive_importance: 0.3,
            default_importance: 0.5,
            max_entry_bytes: 100_000,
            chunk_bytes: 2_000,
            context_top_k: 5,
            context_min_score: 0.3,
            context_tokens: 1_000,
            record_turns: true,
            tools: true,
            max_tool_rounds: 4,
            index_snapshot_entries: 500,
            search: SearchWeights::default(),
            nous: NousParams::default(),
            learn: LearnParams::default(),
        }
    }
}

/// Memory failures, each fit for one line.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// A value the caller gave is not acceptable; the message names it.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

/// Approximate tokens of a text (four characters each), as the main-context budget counts.
pub fn tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// The project a directory belongs to: the nearest ancestor holding `.git`, else itself.
pub fn project_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir)
        .to_path_buf()
}

/// The scope of `kind` for a working directory and (for `session`) a session.
pub fn scope_for(
    kind: ScopeKind,
    cwd: &Path,
    session: Option<crate::store::SessionId>,
) -> Result<MemoryScope> {
    Ok(match kind {
        ScopeKind::Global => MemoryScope::Global,
        ScopeKind::Project => MemoryScope::Project(project_root(cwd).display().to_string()),
        ScopeKind::Session => MemoryScope::Session(session.ok_or_else(|| {
            MemoryError::Invalid("the session scope needs a session (--session ID)".into())
        })?),
    })
}

struct Loaded {
    index: MemoryIndex,
    /// The journal sequence the index is current to.
    seq: u64,
    /// For each visible scope, the journal sequence its saved index is current to (none:
    /// it has none, or it was too small to save).
    saved: Vec<Option<u64>>,
}

/// A saved index is saved again once the journal has gone this many changes past it, so a
/// process that loads it has at most that many to read.
const RESAVE_AFTER_CHANGES: u64 = 2_000;

/// One view of memory: where new entries go and which scopes are searched. Cheap to clone.
#[derive(Clone)]
pub struct Memory {
    store: Store,
    params: Arc<MemoryParams>,
    embedder: Option<Arc<dyn Embedder>>,
    /// Where new entries go.
    scope: MemoryScope,
    /// The scopes read (the write scope and, usually, global).
    visible: Arc<Vec<MemoryScope>>,
    /// Tokens of the system prompt, counted in the main context.
    system_tokens: u64,
    loaded: Arc<Mutex<Option<Loaded>>>,
    warnings: Arc<Mutex<Vec<String>>>,
}

impl Memory {
    /// Memory writing to `scope` and reading `scope` plus global (plus `extra` scopes).
    pub fn new(
        store: Store,
        params: MemoryParams,
        embedder: Option<Arc<dyn Embedder>>,
        scope: MemoryScope,
        extra: Vec<MemoryScope>,
    ) -> Self {
        let mut visible = vec![scope.clone()];
        if scope != MemoryScope::Global {
            visible.push(MemoryScope::Global);
        }
        for s in extra {
            if !visible.contains(&s) {
                visible.push(s);
            }
        }
        Self {
            store,
            params: Arc::new(params),
            embedder,
            scope,
            visible: Arc::new(visible),
            system_tokens: 0,
            loaded: Arc::new(Mutex::new(None)),
            warnings: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Reads only `scope` (no global entries): for `--scope` on a search.
    pub fn only(mut self, scope: MemoryScope) -> Self {
        self.visible = Arc::new(vec![scope.clone()]);
        self.scope = scope;
        self.loaded = Arc::new(Mutex::new(None));
        self
    }

    /// The same memory writing to and reading `scope` (plus global), with its own index.
    pub fn for_scope(self, scope: MemoryScope) -> Self {
        let mut m = Memory::new(
            self.store.clone(),
            (*self.params).clone(),
            self.embedder.clone(),
            scope,
            Vec::new(),
        );
        m.system_tokens = self.system_tokens;
        m
    }

    /// Counts a system prompt of this many tokens in the main context.
    pub fn with_system_tokens(mut self, tokens: u64) -> Self {
        self.system_tokens = tokens;
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn params(&self) -> &MemoryParams {
        &self.params
    }

    pub fn scope(&self) -> &MemoryScope {
        &self.scope
    }

    pub fn visible(&self) -> &[MemoryScope] {
        &self.visible
    }

    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// Problems met along the way that did not stop the work (an embedding that failed and
    /// left an entry to keyword search), each once, oldest first; taking them clears them.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Records a warning for [`Memory::take_warnings`] (once per text).
    pub fn warn_once(&self, text: String) {
        self.warn(text);
    }

    fn warn(&self, text: String) {
        let mut w = self.warnings.lock().unwrap_or_else(PoisonError::into_inner);
        if !w.contains(&text) {
            tracing::warn!("{text}");
            w.push(text);
        }
    }

    fn is_visible(&self, scope: &MemoryScope) -> bool {
        self.visible.contains(scope)
    }

    /// Runs `f` on the index, brought up to date with the store first.
    fn with_index<T>(&self, f: impl FnOnce(&MemoryIndex) -> T) -> Result<T> {
        let mut g = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        self.refresh(&mut g)?;
        match g.as_ref() {
            Some(l) => Ok(f(&l.index)),
            None => Err(MemoryError::Store(StoreError::Io(
                "the memory index did not load".into(),
            ))),
        }
    }

    fn refresh(&self, slot: &mut Option<Loaded>) -> Result<()> {
        let loaded = match slot {
            Some(l) => l,
            None => slot.insert(self.load_index()?),
        };
        let mut changed = std::collections::BTreeSet::new();
        loop {
            let batch = self.store.follow(loaded.seq, 10_000)?;
            let Some((last, _)) = batch.last() else { break };
            loaded.seq = *last;
            for (_, c) in batch {
                match c.kind {
                    ChangeKind::MemoryPut
                    | ChangeKind::MemoryDeleted
                    | ChangeKind::MemoryEvicted
                    | ChangeKind::LearningEvent => {
                        if let Some(id) = c.id {
                            changed.insert(crate::store::MemoryId(id));
                        }
                    }
                    // A deleted session takes its session-scoped entries with it; their own
                    // journal entries say so too.
                    _ => {}
                }
            }
        }
        for id in changed {
            match self.store.memory(id)? {
                Some(e) if self.is_visible(&e.scope) => {
                    let v = self.store.memory_vectors(&[id])?.pop().flatten();
                    let l = self.store.learning(id)?;
                    loaded.index.upsert(&e, v.as_ref(), l.as_ref());
                }
                _ => loaded.index.remove(id),
            }
        }
        self.save_indexes(loaded);
        Ok(())
    }

    /// The index over the visible scopes: each scope from its saved index when it has a
    /// usable one, else from its entries. Current to the oldest saved index's sequence (or
    /// the journal's end): [`Memory::refresh`] reads the journal on from there.
    fn load_index(&self) -> Result<Loaded> {
        let last = self.store.last_seq()?;
        let model = self
            .embedder
            .as_ref()
            .map(|e| (e.id().to_string(), e.dim()));
        let mut index = MemoryIndex::new(model);
        let (mut seq, mut saved) = (last, Vec::with_capacity(self.visible.len()));
        for scope in self.visible.iter() {
            if let Some((at, docs)) = self.saved_index(scope, last) {
                let ids: Vec<_> = docs.iter().map(|d| d.id).collect();
                let vectors = self.vectors_of(&index, &ids)?;
                for (d, v) in docs.into_iter().zip(vectors) {
                    index.insert(d, v.as_ref());
                }
                seq = seq.min(at);
                saved.push(Some(at));
                continue;
            }
            let rows = self.store.scope_memories_with_learnings(scope)?;
            let ids: Vec<_> = rows.iter().map(|(e, _)| e.id).collect();
            let vectors = self.vectors_of(&index, &ids)?;
            for ((e, l), v) in rows.iter().zip(vectors) {
                index.upsert(e, v.as_ref(), l.as_ref());
            }
            saved.push(None);
        }
        Ok(Loaded { index, seq, saved })
    }

    /// The vectors of `ids` for `index`'s model; without an embedder the index keeps no
    /// vectors, and none are read.
    fn vectors_of(
        &self,
        index: &MemoryIndex,
        ids: &[crate::store::MemoryId],
    ) -> Result<Vec<Option<crate::store::StoredVector>>> {
        Ok(match index.model_dim() {
            Some(_) => self.store.memory_vectors(ids)?,
            None => vec![None; ids.len()],
        })
    }

    /// The saved index of `scope` and its sequence, when there is one this glassbox can use.
    fn saved_index(&self, scope: &MemoryScope, last_seq: u64) -> Option<(u64, Vec<index::Doc>)> {
        match self.store.memory_index::<snapshot::ScopeIndex>(scope) {
            Ok(Some(s)) if s.usable(last_seq) => {
                let at = s.seq;
                s.into_docs(scope).map(|docs| (at, docs))
            }
            Ok(_) => None,
            Err(e) => {
                tracing::debug!(%scope, "memory: the saved index is not read: {e}");
                None
            }
        }
    }

    /// Saves the index of each visible scope that holds `index_snapshot_entries` entries or
    /// more and has no saved index, or one the journal has gone far past. A store that cannot
    /// take the write (read-only, full) only costs the next process the build.
    fn save_indexes(&self, loaded: &mut Loaded) {
        let least = self.params.index_snapshot_entries;
        if least == 0 {
            return;
        }
        for (scope, saved) in self.visible.iter().zip(loaded.saved.iter_mut()) {
            let due = saved.is_none_or(|at| loaded.seq.saturating_sub(at) >= RESAVE_AFTER_CHANGES);
            if !due || loaded.index.scope_docs(scope).nth(least - 1).is_none() {
                continue;
            }
            let s = snapshot::ScopeIndex::of(loaded.seq, loaded.index.scope_docs(scope));
            if let Err(e) = self.store.write(|w| w.put_memory_index(scope, &s)) {
                tracing::debug!(%scope, "memory: the index is not saved: {e}");
            }
            *saved = Some(loaded.seq);
        }
    }
}
