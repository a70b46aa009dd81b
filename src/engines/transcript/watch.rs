//! `import claude-code --watch`: follows transcript folders with file notifications, plus a
//! periodic reconcile scan that catches whatever a notification missed (new folders, lost
//! events, replaced files).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher};

use super::{ImportSummary, Importer, TranscriptError, discover};
use crate::store::StoreError;

/// How long to wait for more notifications before reading, so a burst of appends is read once.
const SETTLE: Duration = Duration::from_millis(40);
/// How often the stop flag is checked while idle.
const POLL: Duration = Duration::from_millis(200);
/// How long a watch waits before trying the store again after it failed (a lost connection
/// to a shared store, a full disk), doubled after each failure in a row up to
/// [`RETRY_AT_MOST`].
const RETRY_AFTER: Duration = Duration::from_secs(1);
const RETRY_AT_MOST: Duration = Duration::from_secs(30);

/// Settings of a watch.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// Time between reconcile scans of every root.
    pub reconcile_every: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            reconcile_every: Duration::from_secs(3),
        }
    }
}

fn is_transcript(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "jsonl")
}

/// Imports everything under `roots`, then follows them until `stop` is set. After every round
/// that read something, `on_round` gets that round's summary.
pub fn watch(
    importer: &mut Importer,
    roots: &[PathBuf],
    opts: &WatchOptions,
    stop: &AtomicBool,
    mut on_round: impl FnMut(ImportSummary),
) -> Result<(), TranscriptError> {
    let roots: Vec<PathBuf> = roots
        .iter()
        .map(|r| std::path::absolute(r).unwrap_or_else(|_| r.clone()))
        .collect();
    let roots = roots.as_slice();
    let mut errors = Vec::new();
    let files = discover(roots, &mut errors)?;
    importer.import_files(&files, None)?;
    let mut first = importer.take_summary();
    first.errors.extend(errors);
    on_round(first);

    let (tx, rx) = mpsc::channel();
    let mut watcher = match notify::recommended_watcher(move |res| {
        let _ = tx.send(res);
    }) {
        Ok(w) => Some(w),
        Err(e) => {
            on_round(warning(format!(
                "file notifications unavailable ({e}); scanning every {} s instead",
                opts.reconcile_every.as_secs_f64()
            )));
            None
        }
    };
    if let Some(w) = watcher.as_mut() {
        for root in roots {
            let mode = if root.is_dir() {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            if let Err(e) = w.watch(root, mode) {
                on_round(warning(format!(
                    "{}: cannot watch ({e}); relying on the periodic scan",
                    root.display()
                )));
            }
        }
    }

    let mut last_scan = Instant::now();
    // Set when the store failed: the next round waits, reads the importer's state again
    // and rescans every file.
    let mut failed = false;
    let mut retry_after = RETRY_AFTER;
    while !stop.load(Ordering::Relaxed) {
        if failed {
            sleep_unless_stopped(retry_after, stop);
            retry_after = (retry_after * 2).min(RETRY_AT_MOST);
            match importer.resync() {
                Ok(()) => failed = false,
                Err(e) if retryable(&e) => continue,
                Err(e) => return Err(e),
            }
            last_scan = Instant::now()
                .checked_sub(opts.reconcile_every)
                .unwrap_or(last_scan);
        }
        let mut pending = BTreeSet::new();
        match rx.recv_timeout(POLL) {
            Ok(ev) => {
                collect(ev, &mut pending);
                let settle_until = Instant::now() + SETTLE;
                while let Some(left) = settle_until.checked_duration_since(Instant::now()) {
                    match rx.recv_timeout(left) {
                        Ok(ev) => collect(ev, &mut pending),
                        Err(_) => break,
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => watcher = None,
        }
        let mut pending: Vec<PathBuf> = pending.into_iter().collect();
        super::sort_transcripts(&mut pending);
        let synced = sync_round(
            importer,
            roots,
            &pending,
            opts,
            &mut last_scan,
            watcher.is_none(),
        );
        match synced {
            Ok(()) => retry_after = RETRY_AFTER,
            Err(e) if retryable(&e) => {
                on_round(warning(format!(
                    "{e}; trying again in {} s",
                    retry_after.as_secs_f64()
                )));
                failed = true;
                continue;
            }
            Err(e) => return Err(e),
        }
        let round = importer.take_summary();
        if round.lines > 0 || !round.errors.is_empty() {
            on_round(round);
        }
    }
    Ok(())
}

/// Reads the files notifications named, and every file when a reconcile scan is due.
fn sync_round(
    importer: &mut Importer,
    roots: &[PathBuf],
    pending: &[PathBuf],
    opts: &WatchOptions,
    last_scan: &mut Instant,
    no_notifications: bool,
) -> Result<(), TranscriptError> {
    for p in pending {
        if p.is_file() {
            importer.sync_file(p)?;
        }
    }
    if last_scan.elapsed() >= opts.reconcile_every || (no_notifications && pending.is_empty()) {
        if no_notifications {
            std::thread::sleep(opts.reconcile_every.saturating_sub(last_scan.elapsed()));
        }
        let mut errors = Vec::new();
        let files = discover(roots, &mut errors)?;
        for f in &files {
            importer.sync_file(f)?;
        }
        *last_scan = Instant::now();
    }
    Ok(())
}

/// Whether the watch should wait and try again after `e`: the store could not be reached
/// or written (a lost connection, a full disk), which may pass. Anything else ends it.
fn retryable(e: &TranscriptError) -> bool {
    matches!(e, TranscriptError::Store(StoreError::Io(_)))
}

fn sleep_unless_stopped(time: Duration, stop: &AtomicBool) {
    let until = Instant::now() + time;
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(left.min(POLL));
    }
}

fn warning(text: String) -> ImportSummary {
    ImportSummary {
        errors: vec![text],
        ..Default::default()
    }
}

fn collect(ev: notify::Result<notify::Event>, pending: &mut BTreeSet<PathBuf>) {
    let Ok(ev) = ev else { return };
    if matches!(ev.kind, notify::EventKind::Access(_)) {
        return;
    }
    for p in ev.paths {
        if is_transcript(&p) {
            pending.insert(p);
        }
    }
}
