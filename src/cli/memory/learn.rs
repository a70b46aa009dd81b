//! `glassbox memory learn|backfill|queue|rebuild|reconcile|feedback|events|hook`: learnings
//! (seed 002) from the command line.

use std::collections::HashSet;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::got::{call_settings, ctrl_c_token};
use super::super::{Ctx, print_json};
use super::{ScopeArgs, open};
use crate::config::providers;
use crate::engines::llm::Effort;
use crate::engines::memory::learn::extract::{Extractor, LearnReport};
use crate::engines::memory::learn::hook::{HookInput, fingerprint, session_start_output};
use crate::engines::memory::learn::queue::{self, counts};
use crate::engines::memory::learn::reconcile::Reconciler;
use crate::engines::memory::learn::{self as nous};
use crate::engines::memory::{Memory, ScopeKind, project_root};
use crate::engines::transcript;
use crate::store::learning::{EventSource, LearningEvent, QueueStatus};
use crate::store::{MemoryScope, SessionId, Store};

/// A time for `--as-of` / `--as-at`: YYYY-MM-DD, RFC 3339, or a span ago like 7d / 12h.
pub fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    transcript::parse_since(s)
        .map(DateTime::<Utc>::from)
        .map_err(|_| {
            format!("'{s}': expected YYYY-MM-DD, an RFC 3339 time or a span like 7d or 12h")
        })
}

pub(crate) fn extractor(ctx: &Ctx, memory: Memory) -> Result<Extractor> {
    let built = providers::build(ctx)?;
    let learn = &ctx.loaded.config.memory.learn;
    Ok(Extractor {
        memory,
        provider: built.provider.clone(),
        call: call_settings(ctx, &built, Effort::Low, learn.max_tokens),
        prompt: ctx.prompts().get("memory/extract").to_string(),
        prompt_nli: ctx.prompts().get("memory/nli").to_string(),
    })
}

pub(crate) fn print_report(r: &LearnReport, json: bool) -> Result<()> {
    if json {
        return print_json(r);
    }
    println!(
        "{} session{}: {} new learning{}, {} event{} appended, {} already known, {} re-learning near miss{}, {} skipped",
        r.sessions,
        plural(r.sessions),
        r.learnings,
        plural(r.learnings),
        r.events_appended,
        plural(r.events_appended),
        r.duplicates,
        r.relearnings,
        if r.relearnings == 1 { "" } else { "es" },
        r.skipped
    );
    if r.dead_letters > 0 {
        println!(
            "{} item{} dead-lettered (see `glassbox memory queue`)",
            r.dead_letters,
            plural(r.dead_letters)
        );
    }
    for f in &r.failures {
        eprintln!("glassbox: {f}");
    }
    Ok(())
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Runs the queue until nothing is due, with a spinner naming the count; when learnings
/// came in, reconciles (decay, contradictions) and computes the SessionStart context of each
/// project they went to, out of band as seed 002 has it.
pub(crate) async fn drain(
    ex: &Extractor,
    json: bool,
    cancel: &CancellationToken,
) -> Result<LearnReport> {
    let mut report = drain_queue(ex, json, cancel).await?;
    if report.learnings == 0 {
        return Ok(report);
    }
    let learn = ex.memory.learn_params().clone();
    let r = Reconciler {
        store: ex.memory.store().clone(),
        provider: ex.provider.clone(),
        call: ex.call.clone(),
        prompt: ex.prompt_nli.clone(),
        params: learn.clone(),
    };
    let spinner = super::super::working("looking for contradictions", json);
    let rec = r.reconcile(cancel).await;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    match rec {
        Ok(rec) => {
            report.contradictions = rec.contradictions;
            report.events_appended += rec.events_appended;
            for f in rec.failures {
                eprintln!("glassbox: reconcile: {f}");
            }
        }
        Err(e) => eprintln!("glassbox: reconcile after learning: {e}"),
    }
    for scope in &report.scopes {
        if let MemoryScope::Project(p) = scope {
            let m = ex.memory.clone().for_scope(scope.clone());
            if let Err(e) = m.refresh_injection(&fingerprint(Path::new(p)), &learn) {
                eprintln!("glassbox: SessionStart context of {p}: {e}");
            }
        }
    }
    Ok(report)
}

async fn drain_queue(
    ex: &Extractor,
    json: bool,
    cancel: &CancellationToken,
) -> Result<LearnReport> {
    let spinner = super::super::working("learning from sessions", json);
    let s2 = spinner.clone();
    let report = queue::drain(ex, cancel, move |done, r| {
        if let Some(s) = &s2 {
            s.set_message(format!(
                "learning from sessions: {done} done, {} learnings",
                r.learnings
            ));
        }
    })
    .await;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    Ok(report?)
}

/// The memory of the working directory's default scope, for learning.
pub(crate) fn base_memory(ctx: &Ctx, store: &Store) -> Result<Memory> {
    open(ctx, store, &ScopeArgs::default(), false)
}

/// `memory learn SESSION`.
pub async fn learn(
    ctx: &Ctx,
    store: &Store,
    session: &str,
    again: bool,
    json: bool,
) -> Result<ExitCode> {
    let id = store.resolve_session(session)?;
    let base = open(ctx, store, &ScopeArgs::default(), false)?;
    let scope = queue::scope_of_session(store, id, base.scope());
    let ex = extractor(ctx, base.for_scope(scope))?;
    if again {
        let spinner = super::super::working("learning from the session", json);
        let r = ex.learn(id, EventSource::UserReview, &ctrl_c_token()).await;
        if let Some(s) = spinner {
            s.finish_and_clear();
        }
        print_report(&r?, json)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !queue::enqueue_session(store, id, EventSource::UserReview)? {
        let mut r = LearnReport {
            sessions: 1,
            skipped: 1,
            ..Default::default()
        };
        // A learned-from item is done; a pending one runs below.
        let pending = store.queue_items()?.into_iter().any(|i| {
            i.session.as_deref() == Some(&id.to_string()) && i.status == QueueStatus::Pending
        });
        if !pending {
            if !json {
                eprintln!(
                    "glassbox: session {} was learned from as it is now (--again extracts anyway)",
                    id.short()
                );
            }
            r.sessions = 1;
            print_report(&r, json)?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    let r = drain(&ex, json, &ctrl_c_token()).await?;
    print_report(&r, json)?;
    Ok(if r.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The sessions of the transcript files under `paths` (their file names are Claude Code
/// session ids).
fn sessions_of_files(store: &Store, paths: &[PathBuf]) -> Result<HashSet<SessionId>> {
    let mut errors = Vec::new();
    let files = transcript::discover(paths, &mut errors)?;
    let stems: HashSet<String> = files
        .iter()
        .filter_map(|f| f.file_stem().and_then(|s| s.to_str()).map(str::to_string))
        .collect();
    Ok(store
        .sessions()?
        .into_iter()
        .filter(|s| {
            s.meta
                .get("claude_session_id")
                .and_then(|v| v.as_str())
                .is_some_and(|c| stems.contains(c))
        })
        .map(|s| s.id)
        .collect())
}

/// `memory backfill [PATHS] [--since] [--project]`.
pub async fn backfill(
    ctx: &Ctx,
    store: &Store,
    paths: Vec<PathBuf>,
    since: Option<String>,
    project: Option<PathBuf>,
    json: bool,
) -> Result<ExitCode> {
    let since = since
        .as_deref()
        .map(transcript::parse_since)
        .transpose()?
        .map(DateTime::<Utc>::from);
    let only: Option<HashSet<SessionId>> = if paths.is_empty() {
        None
    } else {
        let st = store.clone();
        let p2 = paths.clone();
        let spinner = super::super::working("importing transcripts", json);
        let summary = tokio::task::spawn_blocking(move || -> Result<_> {
            let mut errors = Vec::new();
            let files = transcript::discover(&p2, &mut errors)?;
            let mut importer = transcript::Importer::new(st)?;
            importer.import_files(&files, None)?;
            let mut s = importer.take_summary();
            s.errors.splice(0..0, errors);
            Ok(s)
        })
        .await
        .context("the import task failed")??;
        if let Some(s) = spinner {
            s.finish_and_clear();
        }
        for e in &summary.errors {
            eprintln!("glassbox: {e}");
        }
        Some(sessions_of_files(store, &paths)?)
    };
    let base = open(ctx, store, &ScopeArgs::default(), false)?;
    let want = project.map(|p| {
        let p = std::fs::canonicalize(&p).unwrap_or(p);
        MemoryScope::Project(project_root(&p).display().to_string())
    });
    let mut considered = 0u64;
    for s in store.sessions()? {
        if only.as_ref().is_some_and(|o| !o.contains(&s.id)) {
            continue;
        }
        if since.is_some_and(|t| s.updated_at < t) {
            continue;
        }
        if let Some(w) = &want
            && queue::scope_of_session(store, s.id, base.scope()) != *w
        {
            continue;
        }
        considered += 1;
        queue::enqueue_session(store, s.id, EventSource::HistoricalBackfill)?;
    }
    let ex = extractor(ctx, base)?;
    let mut r = drain(&ex, json, &ctrl_c_token()).await?;
    // Sessions not learned from now were learned from before, as they are.
    r.skipped += considered.saturating_sub(r.sessions);
    r.sessions = r.sessions.max(considered);
    print_report(&r, json)?;
    Ok(if r.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `memory queue [--run]`.
pub async fn queue_cmd(ctx: &Ctx, store: &Store, run: bool, json: bool) -> Result<ExitCode> {
    if run {
        let base = open(ctx, store, &ScopeArgs::default(), false)?;
        let ex = extractor(ctx, base)?;
        let r = drain(&ex, json, &ctrl_c_token()).await?;
        print_report(&r, json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let items = store.queue_items()?;
    let c = counts(&items);
    if json {
        print_json(&json!({ "counts": c, "items": items }))?;
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} pending, {} processing, {} completed, {} dead-lettered",
        c.pending, c.processing, c.completed, c.dead_letter
    );
    for i in items.iter().filter(|i| i.status != QueueStatus::Completed) {
        println!(
            "{:<11} {} attempt{} {}{}",
            i.status.as_str(),
            i.attempts,
            plural(u64::from(i.attempts)),
            i.key,
            i.last_error
                .as_deref()
                .map(|e| format!("\n            last error: {e}"))
                .unwrap_or_default()
        );
        if let Some(raw) = &i.raw {
            println!(
                "            raw answer: {}",
                crate::engines::llm::wire::one_line(raw, 200)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `memory rebuild [--check]`.
pub fn rebuild(store: &Store, check: bool, json: bool) -> Result<ExitCode> {
    let r = store.rebuild_learnings(!check)?;
    if json {
        print_json(&r)?;
    } else {
        println!(
            "{} events replayed: {} learnings ({} live), {} difference{}{}",
            r.events,
            r.learnings,
            r.live,
            r.differences,
            plural(r.differences),
            if r.repaired { " (repaired)" } else { "" }
        );
        for d in &r.details {
            println!("  {d}");
        }
        if r.adopted > 0 {
            println!("  {} entries without events became learnings", r.adopted);
        }
    }
    Ok(if check && r.differences > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `memory reconcile`.
pub async fn reconcile(ctx: &Ctx, store: &Store, json: bool) -> Result<ExitCode> {
    let built = providers::build(ctx)?;
    let learn = ctx.loaded.config.memory.learn.clone();
    let r = Reconciler {
        store: store.clone(),
        provider: built.provider.clone(),
        call: call_settings(ctx, &built, Effort::Low, learn.max_tokens),
        prompt: ctx.prompts().get("memory/nli").to_string(),
        params: learn,
    };
    let spinner = super::super::working("reconciling learnings", json);
    let out = r.reconcile(&ctrl_c_token()).await;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let out = out?;
    if json {
        print_json(&out)?;
    } else {
        println!(
            "{} live learnings: {} candidate pairs ({} judged now, {} cached, {} deferred, {} sequential), {} contradiction{}, {} archived by decay, {} events appended",
            out.learnings,
            out.candidate_pairs,
            out.judged,
            out.cached,
            out.deferred,
            out.sequential_pairs,
            out.contradictions,
            plural(out.contradictions),
            out.archived,
            out.events_appended
        );
        for f in &out.failures {
            eprintln!("glassbox: {f}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `memory feedback ID --useful|--wrong`.
pub fn feedback(
    ctx: &Ctx,
    store: &Store,
    ids: &[String],
    useful: bool,
    session: Option<String>,
    json: bool,
) -> Result<ExitCode> {
    let ids = super::resolve(store, ids)?;
    for id in &ids {
        if store.learning(*id)?.is_none() {
            bail!(
                "memory {} is a core fact, not a learning; feedback applies to learnings",
                id.short()
            );
        }
    }
    let key = format!("cli:{}", uuid::Uuid::now_v7());
    let session = session.unwrap_or_else(|| "cli".to_string());
    let n = nous::feedback(
        store,
        &ids,
        useful,
        &key,
        &session,
        &ctx.loaded.config.memory.learn,
    )?;
    if json {
        print_json(&json!({ "events": n }))?;
    } else {
        println!(
            "{} {n} learning{}",
            if useful { "reinforced" } else { "weakened" },
            plural(n as u64)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn event_line(e: &LearningEvent) -> String {
    let detail = match e.event_type.as_str() {
        "LearningExtracted" => e
            .payload
            .get("extractor_version")
            .and_then(|v| v.as_str())
            .map(|v| format!("by {v}")),
        "LearningReinforced" | "LearningWeakened" => e
            .payload
            .get("reinforcement_delta")
            .map(|d| format!("{d:+}")),
        "LearningContradicted" => e
            .payload
            .get("contradicted_with")
            .and_then(|v| v.as_str())
            .map(|v| format!("with {}", &v[v.len().saturating_sub(8)..])),
        "LearningSuperseded" => e
            .payload
            .get("superseded_by")
            .and_then(|v| v.as_str())
            .map(|v| format!("by {}", &v[v.len().saturating_sub(8)..])),
        "LearningArchived" => e
            .payload
            .get("reason")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        _ => e
            .payload
            .get("relearning_of")
            .map(|_| "re-learned".to_string()),
    };
    format!(
        "#{:<6} {}  {:<20} {} {}",
        e.event_id,
        e.transaction_time.format("%Y-%m-%d %H:%M:%S"),
        e.event_type.as_str(),
        e.source.as_str(),
        detail.unwrap_or_default()
    )
}

/// `memory events [ID]`.
pub fn events(store: &Store, id: Option<String>, limit: usize, json: bool) -> Result<ExitCode> {
    let evs = match id {
        Some(i) => store.learning_events_of(resolve_learning(store, &i)?)?,
        None => {
            let all = store.learning_events(0)?;
            let skip = all.len().saturating_sub(limit);
            all.into_iter().skip(skip).collect()
        }
    };
    if json {
        print_json(&evs)?;
    } else if evs.is_empty() {
        println!("no learning events");
    } else {
        for e in &evs {
            println!("{}  {}", e.learning_id.short(), event_line(e));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A learning id: a memory id or a unique prefix or suffix of one, archived learnings
/// included.
pub fn resolve_learning(store: &Store, text: &str) -> Result<crate::store::MemoryId> {
    if let Ok(id) = text.parse() {
        return Ok(id);
    }
    match store.resolve_memory(text) {
        Ok(id) => Ok(id),
        Err(e) => {
            let want = text.trim().to_lowercase().replace('-', "");
            let found: Vec<_> = store
                .learnings()?
                .into_iter()
                .filter(|l| {
                    let hex = l.id.0.simple().to_string();
                    want.len() >= 4 && (hex.starts_with(&want) || hex.ends_with(&want))
                })
                .map(|l| l.id)
                .collect();
            match found.as_slice() {
                [one] => Ok(*one),
                _ => Err(e.into()),
            }
        }
    }
}

/// `memory show ID` for a learning: its state and events (text).
pub fn print_learning(view: &nous::LearningView) {
    let l = &view.learning;
    println!(
        "learning:   {}, score {:.3} ({:.3} before decay), {} event{}, {} access{}",
        l.status.as_str(),
        view.score,
        l.reinforcement,
        l.events,
        plural(u64::from(l.events)),
        view.accesses,
        if view.accesses == 1 { "" } else { "es" }
    );
    if !l.concepts.is_empty() {
        println!("concepts:   {}", l.concepts.join(", "));
    }
    let when = |t: Option<DateTime<Utc>>| {
        t.map_or("open".to_string(), |t| t.format("%Y-%m-%d").to_string())
    };
    println!(
        "valid:      {} → {} ({} confidence); learned {}",
        when(l.valid_from),
        when(l.valid_until),
        l.temporal_confidence.as_str(),
        l.extracted_at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    println!("session:    {} ({})", l.session_id, l.source.as_str());
    for e in &l.edges {
        println!("edge:       {} → {}", e.rel.as_str(), e.target);
    }
    for (other, r) in &view.contradictions {
        println!(
            "contradicts {} ({}, {:.2}, {})",
            other, r.label, r.confidence, r.model_version
        );
    }
    println!("events:");
    for e in &view.events {
        println!("  {}", event_line(e));
    }
}

/// The hook's context, computed on a thread and abandoned after `timeout`.
fn with_timeout<T: Send + 'static>(
    timeout: Duration,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(timeout) {
        Ok(r) => r,
        Err(_) => bail!("no answer within {} ms", timeout.as_millis()),
    }
}

fn read_hook_input() -> Result<HookInput> {
    let mut s = String::new();
    if !std::io::stdin().is_terminal() {
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read the hook's input")?;
    }
    serde_json::from_str(&s).map_err(|e| anyhow::anyhow!("the hook's input is not JSON: {e}"))
}

/// `memory hook session-start`: always prints hook JSON and exits 0 (fail-open): problems go
/// to stderr as one line and the context is empty.
pub fn hook_session_start(ctx: &Ctx, fresh: bool) -> ExitCode {
    let params = ctx.loaded.config.memory.clone();
    let timeout = Duration::from_millis(params.learn.hook_timeout_ms);
    let target = ctx.store_target();
    let data_dir_ok = ctx.paths.ensure_data_dir().is_ok();
    let work = move || -> Result<String> {
        let input = read_hook_input()?;
        if !data_dir_ok {
            bail!("the data folder is not writable");
        }
        let cwd = match input.cwd.as_deref().filter(|c| !c.is_empty()) {
            Some(c) => PathBuf::from(c),
            None => std::env::current_dir()?,
        };
        let store = target?.open(crate::store::CACHE_BYTES)?;
        let scope = crate::engines::memory::scope_for(ScopeKind::Project, &cwd, None)?;
        // No embedder: nothing inside a hook loads a model.
        let m = Memory::new(store, params.clone(), None, scope, Vec::new());
        let (out, stale) =
            m.session_start(&input.session_id, &fingerprint(&cwd), fresh, &params.learn)?;
        if stale {
            refresh_in_background(&cwd);
        }
        Ok(out.text)
    };
    let context = match with_timeout(timeout, work) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("glassbox: memory hook session-start: {e}; no context given");
            String::new()
        }
    };
    println!("{}", session_start_output(&context));
    ExitCode::SUCCESS
}

/// Starts `glassbox memory hook refresh CWD` detached: the stale context is served now and
/// the next session start gets a fresh one.
fn refresh_in_background(cwd: &Path) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let spawned = std::process::Command::new(exe)
        .args(["memory", "hook", "refresh"])
        .arg(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        eprintln!("glassbox: cannot refresh the SessionStart context: {e}");
    }
}

/// `memory hook refresh CWD`: ranks the project's learnings and caches the context.
pub fn hook_refresh(ctx: &Ctx, cwd: &Path) -> ExitCode {
    let params = ctx.loaded.config.memory.clone();
    let run = || -> Result<()> {
        let store = ctx.open_store()?;
        let scope = crate::engines::memory::scope_for(ScopeKind::Project, cwd, None)?;
        let m = Memory::new(store, params.clone(), None, scope, Vec::new());
        m.refresh_injection(&fingerprint(cwd), &params.learn)?;
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("glassbox: memory hook refresh: {e}");
            ExitCode::from(1)
        }
    }
}

/// `memory hook stop`: queues the transcript for ingestion and returns (exit 0 whatever
/// happens; problems go to stderr).
pub fn hook_stop(ctx: &Ctx) -> ExitCode {
    let run = || -> Result<bool> {
        let input = read_hook_input()?;
        let Some(path) = input.transcript_path.filter(|p| !p.is_empty()) else {
            bail!("the hook's input has no transcript_path");
        };
        let store = ctx.open_store()?;
        Ok(queue::enqueue_transcript(
            &store,
            Path::new(&path),
            &input.session_id,
        )?)
    };
    if let Err(e) = run() {
        eprintln!("glassbox: memory hook stop: {e}");
    }
    ExitCode::SUCCESS
}
