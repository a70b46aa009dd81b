//! Transcripts in and out: Claude Code import (one-shot and watched, with per-file cursors so
//! only appended bytes are read again) and the session export/import formats.
//!
//! `importer.rs` drives an import, `claude_code` maps lines onto nodes, `write.rs` commits
//! the batches, `discover.rs` finds the files; `watch.rs` follows them, `export/` reads and
//! writes whole sessions (streamed for the command line), `drawing.rs` draws their graphs
//! (DOT, Mermaid) and `title.rs` names them.

pub mod claude_code;
mod discover;
pub mod drawing;
pub mod export;
mod importer;
pub mod project;
pub mod stats;
#[cfg(test)]
mod tests;
pub mod title;
pub mod watch;
mod write;

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::store::{SessionId, StoreError};
pub use discover::{default_root, discover, parse_since, sort_transcripts};
pub use importer::Importer;
pub use project::{project_of_cwd, session_cwd, session_git_branch, session_project};
pub use stats::{SessionStats, human_duration};
use write::WritePipe;

/// Lines per batch (one file's lines, committed with its cursor) while importing.
pub const BATCH_LINES: usize = 10000;
/// Bytes per batch while importing (whichever limit comes first).
pub const BATCH_BYTES: u64 = 32 << 20;

/// Transcript import failures (bad lines are never failures: they are counted and skipped).
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    #[error("{0}")]
    Invalid(String),
    /// Stopped from outside (Ctrl-C) before it was done.
    #[error("interrupted")]
    Interrupted,
}

/// A UUIDv7 whose timestamp is `ts` and whose other bits are fixed by `order` (12 bits that
/// sort ids made in the same millisecond) and a hash of `parts`: the same inputs always give
/// the same id, so importing a line twice writes the same record.
pub fn stable_uuid(ts: DateTime<Utc>, order: u32, parts: &[&[u8]]) -> uuid::Uuid {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let digest = h.finalize();
    let order = order.min(0xfff) as u16;
    let mut bytes = [0u8; 10];
    bytes[0] = (order >> 8) as u8;
    bytes[1] = order as u8;
    bytes[2..].copy_from_slice(&digest[..8]);
    let ms = u64::try_from(ts.timestamp_millis()).unwrap_or(0);
    uuid::Builder::from_unix_timestamp_millis(ms, &bytes).into_uuid()
}

/// What an import run did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ImportSummary {
    /// Transcript files looked at.
    pub files: u64,
    /// Files that had new bytes to read.
    pub files_read: u64,
    /// Files read again from the start because they were replaced or truncated.
    pub files_reread: u64,
    pub bytes: u64,
    pub lines: u64,
    /// Sessions that got new or changed records.
    pub sessions: u64,
    pub sessions_created: u64,
    /// New nodes by type.
    pub nodes_by_type: BTreeMap<String, u64>,
    /// Existing nodes whose content changed (a merged message, an attached tool result).
    pub nodes_updated: u64,
    pub edges: u64,
    pub decision_points: u64,
    pub thinking_blocks: u64,
    pub skipped_by_reason: BTreeMap<String, u64>,
    /// References to lines that are not in the file (kept as they are).
    pub dangling_parents: u64,
    /// Files whose last line is still incomplete (read once it is finished).
    pub partial_lines: u64,
    /// `file:line: reason` for every malformed line and unreadable file.
    pub errors: Vec<String>,
    /// The import was stopped before its last file ([`Importer::stop_on`]): the files not
    /// looked at are read by the next run.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    #[serde(skip)]
    touched: HashSet<SessionId>,
}

impl ImportSummary {
    /// The sessions that got new or changed records.
    pub fn touched(&self) -> impl Iterator<Item = SessionId> + '_ {
        self.touched.iter().copied()
    }

    /// New nodes of every type together.
    pub fn new_nodes(&self) -> u64 {
        self.nodes_by_type.values().sum()
    }
}

/// Where an import is, for a progress display.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    pub files_done: u64,
    pub files_total: u64,
    pub lines: u64,
    pub bytes: u64,
}
