//! The ingest queue (seed 002's durability contract): items move pending → processing →
//! completed, or back to pending with a backoff after a failure, or to dead_letter after
//! `max_attempts` (or an answer that could not be read twice). A worker claims an item with a
//! lease; an item whose worker died (its process is gone, or its lease ran out) is pending
//! again with the attempt counted. Item keys are unique, so enqueuing twice is a no-op and a
//! resumed backfill never learns a session twice.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::LearnParams;
use super::extract::{EXTRACTOR_VERSION, Extractor, LearnError, LearnReport};
use crate::engines::memory::{Memory, project_root};
use crate::store::learning::{EventSource, QueueItem, QueueStatus};
use crate::store::{MemoryScope, Result as StoreResult, SessionId, Store};

/// This process, as a queue worker: `pid:<n>`.
pub fn worker_id() -> String {
    format!("pid:{}", std::process::id())
}

/// Whether the worker that claimed an item is gone (its process no longer runs).
pub(crate) fn worker_gone(claimed_by: Option<&str>) -> bool {
    let Some(pid) = claimed_by.and_then(|c| c.strip_prefix("pid:")) else {
        return false;
    };
    pid.parse::<u32>()
        .is_ok_and(|p| p != std::process::id() && !Path::new(&format!("/proc/{p}")).exists())
}

/// The key of "learn from this session as it is now": a session that grows gets a new one.
pub fn session_item_key(session: SessionId, through: &str) -> String {
    format!("learn:{session}:{through}:{EXTRACTOR_VERSION}")
}

fn item(key: String, source: EventSource, now: DateTime<Utc>) -> QueueItem {
    QueueItem {
        key,
        session: None,
        transcript: None,
        source,
        status: QueueStatus::Pending,
        attempts: 0,
        claimed_by: None,
        lease_expires_at: None,
        next_attempt_at: now,
        last_error: None,
        raw: None,
        enqueued_at: now,
        updated_at: now,
        learnings: 0,
    }
}

/// Queues learning from a stored session as it is now. False when that was queued before.
pub fn enqueue_session(
    store: &Store,
    session: SessionId,
    source: EventSource,
) -> StoreResult<bool> {
    let through = store
        .session_nodes(session)?
        .last()
        .map_or_else(|| "empty".to_string(), |n| n.id.to_string());
    let now = Utc::now();
    let mut it = item(session_item_key(session, &through), source, now);
    it.session = Some(session.to_string());
    store.write(|w| w.enqueue(&it))
}

/// Queues a transcript to import and learn from (the Stop hook): keyed by the transcript
/// and its size, so each stop of a grown session is one item.
pub fn enqueue_transcript(store: &Store, path: &Path, session: &str) -> StoreResult<bool> {
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let now = Utc::now();
    let mut it = item(
        format!("transcript:{}:{size}", path.display()),
        EventSource::FsWatch,
        now,
    );
    it.transcript = Some(path.display().to_string());
    it.session = (!session.is_empty()).then(|| session.to_string());
    store.write(|w| w.enqueue(&it))
}

/// Queue counts by status.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueCounts {
    pub pending: u64,
    pub processing: u64,
    pub completed: u64,
    pub dead_letter: u64,
}

pub fn counts(items: &[QueueItem]) -> QueueCounts {
    let mut c = QueueCounts::default();
    for i in items {
        match i.status {
            QueueStatus::Pending => c.pending += 1,
            QueueStatus::Processing => c.processing += 1,
            QueueStatus::Completed => c.completed += 1,
            QueueStatus::DeadLetter => c.dead_letter += 1,
        }
    }
    c
}

/// Claims the next item that is due (sweeping stale claims back to pending first).
pub fn claim(store: &Store, p: &LearnParams) -> StoreResult<Option<QueueItem>> {
    let now = Utc::now();
    let me = worker_id();
    store.write(|w| {
        let mut items = w.queue_items_in_txn()?;
        for it in items.iter_mut() {
            let stale = it.status == QueueStatus::Processing
                && (it.lease_expires_at.is_some_and(|t| t < now)
                    || worker_gone(it.claimed_by.as_deref()));
            if stale {
                it.status = QueueStatus::Pending;
                it.attempts += 1;
                it.last_error = Some("lease_expired".into());
                it.claimed_by = None;
                it.lease_expires_at = None;
                it.next_attempt_at = now;
                it.updated_at = now;
                if it.attempts >= p.max_attempts {
                    it.status = QueueStatus::DeadLetter;
                }
                w.put_queue_item(it)?;
            }
        }
        let next = items
            .into_iter()
            .filter(|i| i.status == QueueStatus::Pending && i.next_attempt_at <= now)
            .min_by(|a, b| a.enqueued_at.cmp(&b.enqueued_at).then(a.key.cmp(&b.key)));
        let Some(mut it) = next else {
            return Ok(None);
        };
        it.status = QueueStatus::Processing;
        it.claimed_by = Some(me.clone());
        it.lease_expires_at = Some(now + Duration::seconds(p.lease_secs as i64));
        it.updated_at = now;
        w.put_queue_item(&it)?;
        Ok(Some(it))
    })
}

/// Marks an item done.
fn complete(store: &Store, key: &str, learnings: u64) -> StoreResult<()> {
    store.write(|w| {
        if let Some(mut it) = w.queue_item_in_txn(key)? {
            it.status = QueueStatus::Completed;
            it.claimed_by = None;
            it.lease_expires_at = None;
            it.last_error = None;
            it.learnings = learnings;
            it.updated_at = Utc::now();
            w.put_queue_item(&it)?;
        }
        Ok(())
    })
}

/// Records a failure: dead-lettered (with the raw answer) when `dead` or out of attempts,
/// else pending again after a backoff that doubles with each attempt. True when dead.
fn fail(
    store: &Store,
    key: &str,
    error: &str,
    raw: Option<String>,
    dead: bool,
    p: &LearnParams,
) -> StoreResult<bool> {
    store.write(|w| {
        let Some(mut it) = w.queue_item_in_txn(key)? else {
            return Ok(false);
        };
        let now = Utc::now();
        it.attempts += 1;
        it.last_error = Some(error.to_string());
        it.raw = raw.or(it.raw.take());
        it.claimed_by = None;
        it.lease_expires_at = None;
        it.updated_at = now;
        let out = dead || it.attempts >= p.max_attempts;
        if out {
            it.status = QueueStatus::DeadLetter;
        } else {
            it.status = QueueStatus::Pending;
            let backoff = p
                .retry_backoff_secs
                .saturating_mul(1 << it.attempts.min(10));
            it.next_attempt_at = now + Duration::seconds(backoff as i64);
        }
        w.put_queue_item(&it)?;
        Ok(out)
    })
}

/// The memory a session's learnings belong to: its project's (from the working directory it
/// ran in), else `base`'s scope.
pub fn scope_of_session(store: &Store, session: SessionId, base: &MemoryScope) -> MemoryScope {
    store
        .session(session)
        .ok()
        .flatten()
        .and_then(|s| {
            s.meta
                .get("cwd")
                .and_then(|v| v.as_str())
                .map(|c| MemoryScope::Project(project_root(Path::new(c)).display().to_string()))
        })
        .unwrap_or_else(|| base.clone())
}

/// Runs queue items until none is due (or `cancel`); `progress(done, report)` after each.
/// Transcript items are imported first, then each session they touched is learned.
pub async fn drain(
    extractor: &Extractor,
    cancel: &CancellationToken,
    mut progress: impl FnMut(u64, &LearnReport),
) -> Result<LearnReport, LearnError> {
    let store = extractor.memory.store().clone();
    let p = extractor.memory.learn_params().clone();
    let mut by_scope: HashMap<MemoryScope, Memory> = HashMap::new();
    let mut report = LearnReport::default();
    let mut done = 0;
    while !cancel.is_cancelled() {
        let st = store.clone();
        let pp = p.clone();
        let Some(it) = store.run_blocking(move |_| claim(&st, &pp)).await? else {
            break;
        };
        let sessions: Vec<SessionId> = match (&it.transcript, &it.session) {
            (Some(path), _) => {
                let path = PathBuf::from(path);
                let st = store.clone();
                let claude = it.session.clone().unwrap_or_default();
                match store
                    .run_blocking(move |_| {
                        Ok::<_, crate::store::StoreError>(import_transcript(&st, &path, &claude))
                    })
                    .await?
                {
                    Ok(s) => s,
                    Err(e) => {
                        let dead = fail(&store, &it.key, &e, None, false, &p)?;
                        report.dead_letters += u64::from(dead);
                        report.failures.push(format!("{}: {e}", it.key));
                        continue;
                    }
                }
            }
            (None, Some(s)) => s.parse().into_iter().collect(),
            (None, None) => Vec::new(),
        };
        let mut item_report = LearnReport::default();
        let mut failed = None;
        for s in sessions {
            let scope = scope_of_session(&store, s, extractor.memory.scope());
            let memory = by_scope
                .entry(scope.clone())
                .or_insert_with(|| extractor.memory.clone().for_scope(scope))
                .clone();
            let ex = Extractor {
                memory,
                ..extractor.clone()
            };
            match ex.learn(s, it.source, cancel).await {
                Ok(mut r) => {
                    if r.learnings > 0 {
                        r.scopes.push(ex.memory.scope().clone());
                    }
                    item_report.add(&r)
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        match failed {
            None => {
                complete(&store, &it.key, item_report.learnings)?;
                report.add(&item_report);
            }
            Some(LearnError::Model(crate::engines::llm::LlmError::Cancelled)) => {
                // Put back as it was: a cancel is no failure.
                store.write(|w| {
                    if let Some(mut i) = w.queue_item_in_txn(&it.key)? {
                        i.status = QueueStatus::Pending;
                        i.claimed_by = None;
                        i.lease_expires_at = None;
                        w.put_queue_item(&i)?;
                    }
                    Ok(())
                })?;
                break;
            }
            Some(LearnError::Malformed { reason, raw }) => {
                report.add(&item_report);
                fail(&store, &it.key, &reason, Some(raw), true, &p)?;
                report.dead_letters += 1;
                report.failures.push(format!("{}: {reason}", it.key));
            }
            Some(e) => {
                report.add(&item_report);
                let dead = fail(&store, &it.key, &e.to_string(), None, false, &p)?;
                report.dead_letters += u64::from(dead);
                report.failures.push(format!("{}: {e}", it.key));
            }
        }
        done += 1;
        progress(done, &report);
    }
    Ok(report)
}

/// Imports one transcript file (what is new in it) and returns the sessions it touched, and
/// the stored session of Claude Code session `claude` (imported before) when there is one.
fn import_transcript(store: &Store, path: &Path, claude: &str) -> Result<Vec<SessionId>, String> {
    let mut importer =
        crate::engines::transcript::Importer::new(store.clone()).map_err(|e| e.to_string())?;
    importer
        .import_files(&[path.to_path_buf()], None)
        .map_err(|e| e.to_string())?;
    let mut out: Vec<SessionId> = importer.take_summary().touched().collect();
    if !claude.is_empty() {
        let known = store.sessions().map_err(|e| e.to_string())?;
        for s in known {
            let same = s.meta.get("claude_session_id").and_then(|v| v.as_str()) == Some(claude);
            if same && !out.contains(&s.id) {
                out.push(s.id);
            }
        }
    }
    Ok(out)
}
