//! The memory tables: every entry of every tier and scope in one table keyed by id, an index
//! by scope, the entries' embedding vectors, and per-scope operation counters. The tiers are
//! a field of the entry, so moving an entry between tiers (evict, promote) rewrites one row.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::kv::ReadableTable;
use super::tables::*;
use super::*;

/// The four memory tiers (MemGPT): core facts and working memory make up the main context;
/// recall holds recent history; archival is long-term storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryTier {
    Core,
    Working,
    Recall,
    Archival,
}

impl MemoryTier {
    pub const ALL: [MemoryTier; 4] = [
        MemoryTier::Core,
        MemoryTier::Working,
        MemoryTier::Recall,
        MemoryTier::Archival,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryTier::Core => "core",
            MemoryTier::Working => "working",
            MemoryTier::Recall => "recall",
            MemoryTier::Archival => "archival",
        }
    }

    /// Whether entries of this tier are part of the main context (always shown to the model).
    pub fn in_main_context(self) -> bool {
        matches!(self, MemoryTier::Core | MemoryTier::Working)
    }
}

impl fmt::Display for MemoryTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MemoryTier {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        MemoryTier::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("unknown memory tier '{s}' (core, working, recall, archival)"))
    }
}

/// The two sections of core memory (seed 000: humanFacts, agentFacts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoreSection {
    Human,
    Agent,
}

impl CoreSection {
    pub fn as_str(self) -> &'static str {
        match self {
            CoreSection::Human => "human",
            CoreSection::Agent => "agent",
        }
    }
}

impl fmt::Display for CoreSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CoreSection {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "human" => Ok(CoreSection::Human),
            "agent" => Ok(CoreSection::Agent),
            other => Err(format!(
                "unknown core memory section '{other}' (human, agent)"
            )),
        }
    }
}

/// Whose memory an entry is: everyone's, one project's (a git root or directory), or one
/// session's. Written as `global`, `project:<path>` or `session:<id>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryScope {
    Global,
    Project(String),
    Session(SessionId),
}

impl MemoryScope {
    /// The scope's key: its text form, which the scope index is sorted by.
    pub fn key(&self) -> String {
        self.to_string()
    }

    /// The kind alone (`global`, `project`, `session`).
    pub fn kind(&self) -> &'static str {
        match self {
            MemoryScope::Global => "global",
            MemoryScope::Project(_) => "project",
            MemoryScope::Session(_) => "session",
        }
    }
}

impl fmt::Display for MemoryScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryScope::Global => f.write_str("global"),
            MemoryScope::Project(p) => write!(f, "project:{p}"),
            MemoryScope::Session(s) => write!(f, "session:{s}"),
        }
    }
}

impl FromStr for MemoryScope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "global" {
            return Ok(MemoryScope::Global);
        }
        if let Some(p) = s.strip_prefix("project:")
            && !p.is_empty()
        {
            return Ok(MemoryScope::Project(p.to_string()));
        }
        if let Some(id) = s.strip_prefix("session:") {
            return id
                .parse::<SessionId>()
                .map(MemoryScope::Session)
                .map_err(|_| format!("memory scope '{s}': '{id}' is not a session id"));
        }
        Err(format!(
            "unknown memory scope '{s}' (global, project:<path>, session:<id>)"
        ))
    }
}

impl Serialize for MemoryScope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MemoryScope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// What produced a memory entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `cli`, `tui`, `think` (a turn's recall), `tool` (the model's own call), `import`.
    pub origin: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeId>,
    /// The step of the node's reasoning, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// For text split into chunks: this chunk's place and the number of chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk: Option<(u32, u32)>,
}

/// One memory entry, in whichever tier it is now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntry {
    pub id: MemoryId,
    pub tier: MemoryTier,
    pub scope: MemoryScope,
    /// Core entries only: the section they belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<CoreSection>,
    pub content: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// 0–1; eviction takes the least important working entries first.
    pub importance: f32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub provenance: Provenance,
    #[serde(default)]
    pub meta: serde_json::Map<String, serde_json::Value>,
}

/// One stored embedding: which embedder made it and the L2-normalised vector quantised to
/// `i8` (component × 127, rounded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredVector {
    /// The embedder's id (model and dimension), so vectors of another model are recognised.
    pub model: String,
    pub values: Vec<i8>,
}

impl StoredVector {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 + self.model.len() + self.values.len());
        out.push(u8::try_from(self.model.len()).unwrap_or(u8::MAX));
        out.extend_from_slice(&self.model.as_bytes()[..self.model.len().min(255)]);
        out.extend(self.values.iter().map(|v| v.to_le_bytes()[0]));
        out
    }

    fn decode(bytes: &[u8]) -> Result<Self> {
        let corrupt = || StoreError::Corrupt("memory_vectors: value too short".into());
        let (&len, rest) = bytes.split_first().ok_or_else(corrupt)?;
        let len = usize::from(len);
        if rest.len() < len {
            return Err(corrupt());
        }
        let model = String::from_utf8_lossy(&rest[..len]).into_owned();
        let values = rest[len..]
            .iter()
            .map(|b| i8::from_le_bytes([*b]))
            .collect();
        Ok(Self { model, values })
    }
}

/// A scope's operation counters (seed 000's totals).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryCounters {
    pub inserts: u64,
    pub searches: u64,
    pub evictions: u64,
    pub promotions: u64,
}

impl MemoryCounters {
    pub fn inserts(n: usize) -> Self {
        Self {
            inserts: n as u64,
            ..Self::default()
        }
    }

    pub fn searches(n: usize) -> Self {
        Self {
            searches: n as u64,
            ..Self::default()
        }
    }

    pub fn evictions(n: usize) -> Self {
        Self {
            evictions: n as u64,
            ..Self::default()
        }
    }

    pub fn promotions(n: usize) -> Self {
        Self {
            promotions: n as u64,
            ..Self::default()
        }
    }
}

fn scope_key(scope: &MemoryScope, id: MemoryId) -> Vec<u8> {
    let mut k = scope.key().into_bytes();
    k.push(0);
    k.extend_from_slice(&id.to_bytes());
    k
}

fn scope_range(scope: &MemoryScope) -> (Vec<u8>, Vec<u8>) {
    let mut lo = scope.key().into_bytes();
    let mut hi = lo.clone();
    lo.push(0);
    hi.push(1);
    (lo, hi)
}

/// The ids of one scope's entries, oldest first, read from the `memory_scopes` index in
/// `r`.
pub(super) fn scope_ids(r: &kv::ReadTxn, scope: &MemoryScope) -> Result<Vec<[u8; 16]>> {
    let idx = r.open_table(MEMORY_SCOPES)?;
    let (lo, hi) = scope_range(scope);
    let mut ids = Vec::new();
    for row in idx.range(lo.as_slice()..hi.as_slice())? {
        let (k, _) = row?;
        let k = k.value();
        let id: [u8; 16] = k
            .len()
            .checked_sub(16)
            .and_then(|at| k[at..].try_into().ok())
            .ok_or_else(|| StoreError::Corrupt("memory_scopes: short key".into()))?;
        ids.push(id);
    }
    Ok(ids)
}

impl Writer<'_> {
    /// Inserts or replaces a memory entry (its scope index follows a change of scope).
    pub fn put_memory(&mut self, m: &MemoryEntry) -> Result<()> {
        let bytes = codec::encode(m)?;
        let old = self
            .txn
            .open_table(MEMORIES)?
            .insert(m.id.to_bytes(), bytes.as_slice())?
            .map(|v| codec::decode::<MemoryEntry>("memories", v.value()))
            .transpose()?;
        let mut idx = self.txn.open_table(MEMORY_SCOPES)?;
        if let Some(old) = old
            && old.scope != m.scope
        {
            idx.remove(scope_key(&old.scope, m.id).as_slice())?;
        }
        idx.insert(scope_key(&m.scope, m.id).as_slice(), ())?;
        drop(idx);
        self.journal(ChangeKind::MemoryPut, m.provenance.session, Some(m.id.0))
    }

    /// Deletes a memory entry and its vector. False when there was none.
    pub fn delete_memory(&mut self, id: MemoryId) -> Result<bool> {
        let Some(old) = self
            .txn
            .open_table(MEMORIES)?
            .remove(id.to_bytes())?
            .map(|v| codec::decode::<MemoryEntry>("memories", v.value()))
            .transpose()?
        else {
            return Ok(false);
        };
        self.txn
            .open_table(MEMORY_SCOPES)?
            .remove(scope_key(&old.scope, id).as_slice())?;
        self.txn.open_table(MEMORY_VECTORS)?.remove(id.to_bytes())?;
        self.journal(
            ChangeKind::MemoryDeleted,
            old.provenance.session,
            Some(id.0),
        )?;
        Ok(true)
    }

    /// Stores an entry's embedding.
    pub fn put_memory_vector(&mut self, id: MemoryId, v: &StoredVector) -> Result<()> {
        self.txn
            .open_table(MEMORY_VECTORS)?
            .insert(id.to_bytes(), v.encode().as_slice())?;
        self.journal(ChangeKind::MemoryPut, None, Some(id.0))
    }

    /// Adds to a scope's counters.
    pub fn bump_memory_counters(&mut self, scope: &MemoryScope, add: MemoryCounters) -> Result<()> {
        let key = scope.key();
        let mut t = self.txn.open_table(MEMORY_COUNTERS)?;
        let mut c: MemoryCounters = match t.get(key.as_str())? {
            Some(v) => codec::decode("memory_counters", v.value())?,
            None => MemoryCounters::default(),
        };
        c.inserts += add.inserts;
        c.searches += add.searches;
        c.evictions += add.evictions;
        c.promotions += add.promotions;
        t.insert(key.as_str(), codec::encode(&c)?.as_slice())?;
        Ok(())
    }

    /// Saves the memory index of one scope (`engines/memory/snapshot.rs` says what it holds).
    pub fn put_memory_index<T: Serialize>(&mut self, scope: &MemoryScope, index: &T) -> Result<()> {
        self.txn
            .open_table(MEMORY_INDEX)?
            .insert(scope.key().as_str(), codec::encode(index)?.as_slice())?;
        Ok(())
    }

    /// Drops every saved memory index: for what rewrites memory without the journal.
    pub fn clear_memory_indexes(&mut self) -> Result<()> {
        self.txn.open_table(MEMORY_INDEX)?.retain(|_, _| false)
    }

    /// Records that an entry was evicted from working memory, so followers (the TUI) can
    /// announce it.
    pub fn journal_memory_evicted(&mut self, id: MemoryId) -> Result<()> {
        self.journal(ChangeKind::MemoryEvicted, None, Some(id.0))
    }

    /// Deletes the memory entries of one scope (a deleted session's).
    pub(super) fn delete_scope_memories(&mut self, scope: &MemoryScope) -> Result<()> {
        let (lo, hi) = scope_range(scope);
        let mut ids = Vec::new();
        for row in self
            .txn
            .open_table(MEMORY_SCOPES)?
            .range(lo.as_slice()..hi.as_slice())?
        {
            let (k, _) = row?;
            let k = k.value();
            let id: [u8; 16] = k[k.len() - 16..]
                .try_into()
                .map_err(|_| StoreError::Corrupt("memory_scopes: short key".into()))?;
            ids.push(MemoryId::from_bytes(id));
        }
        for id in ids {
            // A learning leaves through an event, so a replay agrees; anything else goes.
            if !self.archive_learning(id, "session deleted", &format!("session-deleted:{id}"))? {
                self.delete_memory(id)?;
            }
        }
        self.txn
            .open_table(MEMORY_COUNTERS)?
            .remove(scope.key().as_str())?;
        self.txn
            .open_table(MEMORY_INDEX)?
            .remove(scope.key().as_str())?;
        Ok(())
    }
}

impl Store {
    pub fn memory(&self, id: MemoryId) -> Result<Option<MemoryEntry>> {
        let r = self.read()?;
        let t = r.open_table(MEMORIES)?;
        t.get(id.to_bytes())?
            .map(|v| codec::decode("memories", v.value()))
            .transpose()
    }

    /// The saved memory index of one scope, if any; a store written before there were
    /// saved indexes has none.
    pub fn memory_index<T: serde::de::DeserializeOwned>(
        &self,
        scope: &MemoryScope,
    ) -> Result<Option<T>> {
        let r = self.read()?;
        let Some(t) = r.open_table_if_exists(MEMORY_INDEX)? else {
            return Ok(None);
        };
        t.get(scope.key().as_str())?
            .map(|v| codec::decode("memory_index", v.value()))
            .transpose()
    }

    /// How many entries one scope holds, read from its index without decoding them.
    pub fn scope_memory_count(&self, scope: &MemoryScope) -> Result<usize> {
        Ok(scope_ids(&self.read()?, scope)?.len())
    }

    /// The entries of one scope, oldest first.
    pub fn scope_memories(&self, scope: &MemoryScope) -> Result<Vec<MemoryEntry>> {
        let r = self.read()?;
        let ids = scope_ids(&r, scope)?;
        let t = r.open_table(MEMORIES)?;
        t.get_many(ids.iter())?
            .into_iter()
            .flatten()
            .map(|v| codec::decode("memories", v.value()))
            .collect()
    }

    /// Every memory entry of every scope, oldest first.
    pub fn all_memories(&self) -> Result<Vec<MemoryEntry>> {
        let r = self.read()?;
        let t = r.open_table(MEMORIES)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (_, v) = row?;
            out.push(codec::decode("memories", v.value())?);
        }
        Ok(out)
    }

    /// The scopes that hold at least one entry.
    pub fn memory_scopes(&self) -> Result<Vec<MemoryScope>> {
        let r = self.read()?;
        let idx = r.open_table(MEMORY_SCOPES)?;
        let mut out: Vec<MemoryScope> = Vec::new();
        for row in idx.iter()? {
            let (k, _) = row?;
            let k = k.value();
            let text = String::from_utf8_lossy(&k[..k.len().saturating_sub(17)]).into_owned();
            if out.last().map(|s| s.key()) != Some(text.clone())
                && let Ok(s) = text.parse()
            {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// The stored vectors of these entries (`None` where an entry has none).
    pub fn memory_vectors(&self, ids: &[MemoryId]) -> Result<Vec<Option<StoredVector>>> {
        let r = self.read()?;
        let t = r.open_table(MEMORY_VECTORS)?;
        t.get_many(ids.iter().map(|id| id.to_bytes()))?
            .into_iter()
            .map(|v| v.map(|v| StoredVector::decode(v.value())).transpose())
            .collect()
    }

    pub fn memory_counters(&self, scope: &MemoryScope) -> Result<MemoryCounters> {
        let r = self.read()?;
        let t = r.open_table(MEMORY_COUNTERS)?;
        t.get(scope.key().as_str())?
            .map(|v| codec::decode("memory_counters", v.value()))
            .transpose()
            .map(Option::unwrap_or_default)
    }

    /// Resolves a full memory id or a unique prefix or suffix of its hex form.
    pub fn resolve_memory(&self, text: &str) -> Result<MemoryId> {
        if let Ok(id) = text.parse::<MemoryId>() {
            return Ok(id);
        }
        let want = read::normalise_prefix(text);
        let r = self.read()?;
        let t = r.open_table(MEMORIES)?;
        read::resolve_prefix(
            t.iter()?.map(|row| row.map(|(k, _)| k.value())),
            &want,
            text,
            "memory",
        )
        .map(MemoryId::from_bytes)
    }

    /// Number of memory entries (all tiers and scopes).
    pub fn memory_count(&self) -> Result<u64> {
        self.read()?.open_table(MEMORIES)?.len()
    }
}
