//! `glassbox import claude-code|json`: brings Claude Code transcripts (once, or followed with
//! `--watch`) or a JSON session export into the store.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use super::{Ctx, INTERRUPTED, print_json};
use crate::engines::memory::learn::extract::LearnReport;
use crate::engines::memory::learn::queue;
use crate::engines::transcript::{self, ImportSummary, Importer, export, watch};
use crate::store::Store;
use crate::store::learning::EventSource;

#[derive(Debug, Subcommand)]
pub enum ImportCmd {
    /// Import Claude Code transcripts; re-running reads only what was appended since.
    #[command(
        name = "claude-code",
        after_help = "Ctrl-C stops an import after the file being read (exit 130): what was read is \
                      stored, and running the same command again goes on from there.\n\nExamples:\n  glassbox import claude-code\n  glassbox import claude-code ~/.claude/projects/-home-me-repo --since 30d\n  glassbox import claude-code --watch"
    )]
    ClaudeCode(ClaudeCodeArgs),
    /// Import a session written by `glassbox export --format json`.
    #[command(
        after_help = "The whole file is checked before anything is stored. Ctrl-C stops the import and \
                      takes out what it stored (exit 130); a session an import killed partway left \
                      behind (`glassbox doctor` names it) is replaced by the next import of its file.\n\n\
                      Example:\n  glassbox export 01949e6b --format json -o s.json && glassbox import json s.json"
    )]
    Json {
        /// The export file.
        file: PathBuf,
        /// Replace a session with the same id that is already in the store.
        #[arg(long)]
        replace: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct ClaudeCodeArgs {
    /// Transcript files or folders [default: ${CLAUDE_CONFIG_DIR:-~/.claude}/projects].
    pub paths: Vec<PathBuf>,
    /// Keep running: import lines as they are appended, until Ctrl-C.
    #[arg(long)]
    pub watch: bool,
    /// Only files modified since DATE (YYYY-MM-DD, RFC 3339, or a span like 90d or 12h).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Seconds between full rescans while watching (catches missed notifications).
    #[arg(long, value_name = "SECS", default_value_t = 3.0)]
    pub reconcile_secs: f64,
    /// Print a JSON summary instead of text (one per round with --watch).
    #[arg(long)]
    pub json: bool,
    /// Learn from the sessions that grew (memory's ingest queue, run as they come in).
    #[arg(long)]
    pub learn: bool,
}

pub async fn run(ctx: &Ctx, cmd: ImportCmd) -> Result<ExitCode> {
    match cmd {
        ImportCmd::ClaudeCode(args) => claude_code(ctx, args).await,
        ImportCmd::Json {
            file,
            replace,
            json,
        } => import_json(ctx, &file, replace, json),
    }
}

/// A flag the first Ctrl-C sets, for an import to stop at its next safe point; a second
/// Ctrl-C quits at once (what is committed stays, and the next run goes on from it). Abort
/// the task once the import is over.
fn stop_on_ctrl_c() -> Result<(Arc<AtomicBool>, tokio::task::JoinHandle<()>)> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let listener = super::on_ctrl_c(move |n| {
        if n == 1 {
            flag.store(true, Ordering::Relaxed);
        } else {
            std::process::exit(INTERRUPTED);
        }
    })?;
    Ok((stop, listener))
}

/// Checks the whole file first (nothing is stored for a bad one), then reads it again and
/// stores its nodes in batches as they are read.
/// Ctrl-C while it checks quits at once (nothing is stored yet); while it stores, it stops
/// between nodes and takes out what it stored.
fn import_json(ctx: &Ctx, file: &std::path::Path, replace: bool, json: bool) -> Result<ExitCode> {
    let checked = export::check_file(file)?;
    let before = file_size(ctx.store_file().as_deref());
    let store = ctx.open_store()?;
    let (stop, listener) = stop_on_ctrl_c()?;
    let imported = export::import_checked(&store, &checked, replace, Some(&stop));
    listener.abort();
    let done = match imported {
        Err(transcript::TranscriptError::Interrupted) => {
            // With --replace, the stored session went out in the import's first transaction.
            let replaced = if replace {
                " (nor the stored session it was to replace)"
            } else {
                ""
            };
            eprintln!(
                "glassbox: interrupted; nothing of {} was kept{replaced}, and running the same command again imports it",
                file.display()
            );
            return Ok(ExitCode::from(INTERRUPTED as u8));
        }
        done => done?,
    };
    drop(store);
    if done.replaced_unfinished {
        eprintln!(
            "glassbox: replaced what an interrupted import of session {} had stored",
            done.session.id
        );
    }
    if let Some(file) = ctx.store_file() {
        give_back_free_pages(&file, before, None);
    }
    if json {
        print_json(&json!({
            "session": done.session.id,
            "nodes": done.nodes,
            "edges": done.edges,
            "decision_points": done.decision_points,
            "insights": done.insights,
            "runs": done.runs,
            "raw_streams": done.raw_streams,
            "replaced_unfinished": done.replaced_unfinished,
        }))?;
    } else {
        println!(
            "imported session {} \"{}\": {} nodes, {} edges, {} decision points, {} raw streams",
            done.session.id,
            done.session.title,
            done.nodes,
            done.edges,
            done.decision_points,
            done.raw_streams
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn claude_code(ctx: &Ctx, args: ClaudeCodeArgs) -> Result<ExitCode> {
    let since = args
        .since
        .as_deref()
        .map(transcript::parse_since)
        .transpose()?;
    if args.watch && since.is_some() {
        bail!("--since cannot be combined with --watch");
    }
    if !(args.reconcile_secs.is_finite() && args.reconcile_secs > 0.0) {
        bail!("--reconcile-secs must be a number of seconds greater than 0");
    }
    let default = args.paths.is_empty();
    let paths = if default {
        let root = transcript::default_root().context(
            "cannot find the Claude Code folder: set CLAUDE_CONFIG_DIR or HOME, or pass a path",
        )?;
        if !root.exists() {
            bail!(
                "no Claude Code transcripts at {} (set CLAUDE_CONFIG_DIR or pass a path)",
                root.display()
            );
        }
        vec![root]
    } else {
        args.paths.clone()
    };
    // Nothing to import says where it looked and how to look elsewhere (a watch waits for
    // files to appear). What is found here is what the import reads: the folders are walked
    // once.
    let mut errors = Vec::new();
    let found = if args.watch {
        Vec::new()
    } else {
        transcript::discover(&paths, &mut errors)?
    };
    if !args.watch && found.is_empty() && errors.is_empty() {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let hint = if default {
            "looked for *.jsonl in its project folders; set CLAUDE_CONFIG_DIR or pass a path"
        } else {
            "looked for *.jsonl files; pass the folder that holds them, such as \
             ~/.claude/projects, or no path to read CLAUDE_CONFIG_DIR's"
        };
        let line = format!(
            "{} {} no Claude Code transcripts ({hint})",
            shown.join(", "),
            if shown.len() == 1 { "holds" } else { "hold" }
        );
        if args.json {
            eprintln!("{line}");
            print_json(&ImportSummary::default())?;
        } else {
            println!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let store = ctx.open_store()?;
    let json = args.json;
    let show_progress = !json && !args.watch && std::io::stderr().is_terminal();

    if args.watch {
        let stop = Arc::new(AtomicBool::new(false));
        // Ctrl-C stops the watch and the learning under way.
        let cancel = tokio_util::sync::CancellationToken::new();
        tokio::spawn({
            let stop = stop.clone();
            let cancel = cancel.clone();
            async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    stop.store(true, Ordering::Relaxed);
                    cancel.cancel();
                }
            }
        });
        let opts = watch::WatchOptions {
            reconcile_every: Duration::from_secs_f64(args.reconcile_secs),
        };
        if !json {
            let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            eprintln!("watching {} (Ctrl-C to stop)", shown.join(", "));
        }
        let learner = if args.learn {
            let ex = super::memory::learn::extractor(
                ctx,
                super::memory::learn::base_memory(ctx, &store)?,
            )?;
            let stop = stop.clone();
            let cancel = cancel.clone();
            Some(tokio::spawn(async move {
                let mut total = LearnReport::default();
                while !stop.load(Ordering::Relaxed) {
                    match super::memory::learn::drain(&ex, true, &cancel).await {
                        Ok(r) if r.sessions > 0 || !r.failures.is_empty() => {
                            if !json {
                                eprint!("learned: ");
                                let _ = super::memory::learn::print_report(&r, false);
                            }
                            total.add(&r);
                        }
                        Ok(_) => {}
                        Err(e) => eprintln!("glassbox: learning: {e}"),
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                total
            }))
        } else {
            None
        };
        let learn = args.learn;
        let queue_store = store.clone();
        tokio::task::spawn_blocking(move || -> Result<()> {
            let mut importer = Importer::new(store)?.keep_state();
            let mut first = true;
            watch::watch(&mut importer, &paths, &opts, &stop, |round| {
                if learn {
                    for s in round.touched() {
                        if let Err(e) =
                            queue::enqueue_session(&queue_store, s, EventSource::FsWatch)
                        {
                            eprintln!("glassbox: cannot queue session {s} for learning: {e}");
                        }
                    }
                }
                if json {
                    let _ = print_json_line(&round);
                } else if first {
                    print_summary(&round);
                } else {
                    print_round(&round);
                }
                first = false;
            })?;
            Ok(())
        })
        .await
        .context("the watch task failed")??;
        if let Some(l) = learner {
            let _ = l.await;
        }
        return Ok(ExitCode::SUCCESS);
    }

    let store_file = ctx.store_file();
    let before = file_size(store_file.as_deref());
    // Ctrl-C ends the import after the file being read (every file read is committed whole).
    let (stop, listener) = stop_on_ctrl_c()?;
    let (summary, total) =
        tokio::task::spawn_blocking(move || -> Result<(ImportSummary, usize)> {
            let files = found;
            let mut importer = Importer::new(store)?;
            importer.stop_on(stop);
            let bar = show_progress.then(|| super::progress_bar("files", files.len() as u64));
            if let Some(bar) = bar.clone() {
                let started = Instant::now();
                importer.on_progress(move |p| {
                    bar.set_position(p.files_done);
                    let mb = p.bytes as f64 / 1e6;
                    let rate = mb / started.elapsed().as_secs_f64().max(1e-3);
                    bar.set_message(format!("{} lines · {mb:.1} MB · {rate:.1} MB/s", p.lines));
                });
            }
            let imported = importer.import_files(&files, since);
            if let Some(bar) = &bar {
                bar.finish_and_clear();
            }
            imported.context(
            "the import stopped; what it stored is kept, and running it again goes on from there",
        )?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            let mut summary = importer.take_summary();
            summary.errors.splice(0..0, errors);
            let store = importer.into_store();
            // Someone who stopped the import wants the prompt back, not a compaction.
            if summary.bytes > 0
                && !summary.interrupted
                && let Some(file) = &store_file
            {
                give_back_free_pages(file, before, Some(store));
            }
            Ok((summary, files.len()))
        })
        .await
        .context("the import task failed")??;
    listener.abort();
    if json && (!args.learn || summary.interrupted) {
        print_json(&summary)?;
    } else if !json {
        print_summary(&summary);
    }
    if summary.interrupted {
        eprintln!(
            "glassbox: interrupted after {} of {total} files; what was read is stored, and running the same command again goes on from there",
            summary.files
        );
        return Ok(ExitCode::from(INTERRUPTED as u8));
    }
    if args.learn {
        let store = ctx.open_store()?;
        for s in summary.touched() {
            queue::enqueue_session(&store, s, EventSource::HistoricalBackfill)?;
        }
        let ex =
            super::memory::learn::extractor(ctx, super::memory::learn::base_memory(ctx, &store)?)?;
        let r = super::memory::learn::drain(&ex, json, &super::got::ctrl_c_token()).await?;
        if json {
            print_json(&json!({ "import": summary, "learn": r }))?;
        } else {
            super::memory::learn::print_report(&r, false)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An import that grew the store file by less than this is not worth compacting after.
const COMPACT_MIN_GROWTH: u64 = 32 << 20;

/// The store file's size now (0 when there is none yet).
fn file_size(path: Option<&std::path::Path>) -> u64 {
    path.and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len())
}

/// After an import into a redb file that grew it by [`COMPACT_MIN_GROWTH`] or more (from
/// `before` bytes): gives the file's free pages back. Such an import leaves about a third of
/// what it added free (pages its commits and index merges replaced); measuring that exactly
/// reads every table, which costs nearly as much as compacting. Skipped while another
/// process is reading or writing the store; a failure is reported and leaves the store as
/// it was (what was imported is committed already). `store`: the import's own handle on
/// it, if it is the only one (its page cache holds what was just written), else it is
/// opened again.
fn give_back_free_pages(path: &std::path::Path, before: u64, store: Option<Store>) {
    let attempt = || -> crate::store::Result<Option<crate::store::Compacted>> {
        if file_size(Some(path)).saturating_sub(before) < COMPACT_MIN_GROWTH {
            return Ok(None);
        }
        let mut store = match store {
            Some(s) if s.is_only_handle() => s,
            other => {
                // Not held open beside the handle that compacts.
                drop(other);
                crate::store::Store::open(path)?
            }
        };
        store.compact().map(Some)
    };
    match attempt() {
        Ok(Some(crate::store::Compacted::Done { before, after })) => {
            tracing::info!(before, after, "compacted the store after the import");
        }
        Ok(Some(crate::store::Compacted::Busy)) => {
            tracing::info!("the store is in use by another process: not compacted");
        }
        Ok(None) => {}
        Err(e) => eprintln!("glassbox: the import is stored, but compacting the store failed: {e}"),
    }
}

fn print_json_line(s: &ImportSummary) -> Result<()> {
    println!("{}", serde_json::to_string(s)?);
    Ok(())
}

fn nodes_text(s: &ImportSummary) -> String {
    if s.nodes_by_type.is_empty() {
        return "0 new nodes".into();
    }
    let parts: Vec<String> = s
        .nodes_by_type
        .iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect();
    format!("{} new nodes ({})", s.new_nodes(), parts.join(", "))
}

fn print_errors(s: &ImportSummary) {
    const SHOWN: usize = 20;
    for e in s.errors.iter().take(SHOWN) {
        eprintln!("warning: {e}");
    }
    if s.errors.len() > SHOWN {
        eprintln!(
            "… and {} more (use --json for the full list)",
            s.errors.len() - SHOWN
        );
    }
}

fn print_summary(s: &ImportSummary) {
    println!(
        "{} files ({} read, {} re-read), {} lines, {:.1} MB → {} sessions ({} new), {}, {} thinking blocks, {} decision points",
        s.files,
        s.files_read,
        s.files_reread,
        s.lines,
        s.bytes as f64 / 1e6,
        s.sessions,
        s.sessions_created,
        nodes_text(s),
        s.thinking_blocks,
        s.decision_points
    );
    if !s.skipped_by_reason.is_empty() {
        let parts: Vec<String> = s
            .skipped_by_reason
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        println!("skipped: {}", parts.join(", "));
    }
    if s.dangling_parents > 0 {
        println!(
            "{} references to lines not in their file (kept as they are)",
            s.dangling_parents
        );
    }
    if s.partial_lines > 0 {
        println!(
            "{} files end in an incomplete line (read once it is finished)",
            s.partial_lines
        );
    }
    print_errors(s);
}

fn print_round(s: &ImportSummary) {
    println!(
        "{}  +{} lines → {}, {} updated",
        chrono::Local::now().format("%H:%M:%S"),
        s.lines,
        nodes_text(s),
        s.nodes_updated
    );
    print_errors(s);
}
