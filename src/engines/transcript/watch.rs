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

/// How long to wait for more notifications before reading, so a burst of appends is read once.
const SETTLE: Duration = Duration::from_millis(40);
/// How often the stop flag is checked while idle.
const POLL: Duration = Duration::from_millis(200);

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
    while !stop.load(Ordering::Relaxed) {
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
        for p in &pending {
            if p.is_file() {
                importer.sync_file(p)?;
            }
        }
        if last_scan.elapsed() >= opts.reconcile_every || (watcher.is_none() && pending.is_empty())
        {
            if watcher.is_none() {
                std::thread::sleep(opts.reconcile_every.saturating_sub(last_scan.elapsed()));
            }
            let mut errors = Vec::new();
            let files = discover(roots, &mut errors)?;
            for f in &files {
                importer.sync_file(f)?;
            }
            last_scan = Instant::now();
        }
        let round = importer.take_summary();
        if round.lines > 0 || !round.errors.is_empty() {
            on_round(round);
        }
    }
    Ok(())
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
