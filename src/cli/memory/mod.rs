//! `glassbox memory …`: the MemGPT tiers and the learnings from the command line.
//!
//! - this file: the commands, and the tier operations (insert, search, list, core…).
//! - `learn.rs`: learnings: learn, backfill, queue, rebuild, reconcile, feedback, events,
//!   and the Claude Code hooks.

pub(crate) mod learn;

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use super::sessions::excerpt;
use super::{Ctx, print_json};
use crate::engines::memory::{Filter, Hit, Inserted, Memory, NewMemory, ScopeKind, SearchMode};
use crate::store::{CoreSection, MemoryEntry, MemoryId, MemoryTier, Provenance, Store};

#[derive(Debug, Subcommand)]
pub enum MemoryCmd {
    /// Store a memory (archival unless --working). TEXT "-" reads standard input.
    Insert {
        /// The text to remember ("-" reads standard input).
        text: String,
        /// Comma-separated tags.
        #[arg(long, value_delimiter = ',')]
        tags: Vec<String>,
        /// 0–1 (default from [memory] default_importance); eviction takes the least important first.
        #[arg(long, value_parser = importance)]
        importance: Option<f32>,
        /// Into working memory (the main context) instead of archival.
        #[arg(long)]
        working: bool,
        /// Record this node (id or prefix) as what produced it; its session comes along.
        #[arg(long)]
        node: Option<String>,
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Search memory: text, concepts, embedding similarity, graph, reinforcement, validity
    /// and recency (or the hybrid score of keywords, similarity, importance and dates).
    #[command(
        after_help = "Examples:\n  glassbox memory search \"staging database\" --explain\n  glassbox memory search redb --as-of 2026-03-01      (what glassbox knew then)\n  glassbox memory search redb --as-at 2025-12-24      (what was true then)"
    )]
    Search {
        /// What to look for, in words; a date in it (2026-03-14, March 14) counts too.
        query: String,
        /// Which tier to search: core, working, recall, archival or all.
        #[arg(long, default_value = "all", value_parser = tier_filter)]
        tier: TierFilter,
        /// Most results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// What ranks the results.
        #[arg(long, default_value = "associative")]
        mode: SearchMode,
        /// Print every score dimension of each hit.
        #[arg(long)]
        explain: bool,
        /// Only what glassbox had learned by then (transaction time): YYYY-MM-DD, RFC 3339,
        /// or a span ago like 7d.
        #[arg(long, value_name = "TIME", value_parser = learn::parse_time)]
        as_of: Option<chrono::DateTime<chrono::Utc>>,
        /// Only what was true then (valid time): YYYY-MM-DD, RFC 3339, or a span ago.
        #[arg(long, value_name = "TIME", value_parser = learn::parse_time)]
        as_at: Option<chrono::DateTime<chrono::Utc>>,
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the entries of a tier, newest first.
    List {
        #[arg(long, default_value = "all", value_parser = tier_filter)]
        tier: TierFilter,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Core memory: facts about the person (human) and the assistant (agent).
    #[command(subcommand)]
    Core(CoreCmd),
    /// Move working-memory entries to archival.
    Evict {
        /// Entry ids, each in full or a unique prefix or suffix of at least 4 hex digits.
        #[arg(required = true)]
        ids: Vec<String>,
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Move archival or recall entries into working memory.
    Promote {
        /// Entry ids, each in full or a unique prefix or suffix of at least 4 hex digits.
        #[arg(required = true)]
        ids: Vec<String>,
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Counts, main-context use and the operation totals.
    Stats {
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One entry in full, with where it came from.
    Show {
        /// Entry id, in full or a unique prefix or suffix of at least 4 hex digits.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove entries: learnings are archived (their events stay), core facts deleted.
    Rm {
        /// Entry ids, each in full or a unique prefix or suffix of at least 4 hex digits.
        #[arg(required = true)]
        ids: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write memory as JSON Lines (ids, tiers, scopes, times, provenance and vectors).
    Export {
        /// File to write (standard output when absent).
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Every scope, not just the working directory's and global.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Read memory written by `memory export` ("-" for standard input).
    Import {
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Learn from a stored session: one extraction of learnings (concepts, edges, validity),
    /// merged with what memory holds.
    #[command(after_help = "Example:\n  glassbox memory learn 0193a2f4")]
    Learn {
        /// Session id or prefix.
        session: String,
        /// Extract again even when the session was learned from as it is now.
        #[arg(long)]
        again: bool,
        /// Print JSON (sessions, learnings, eventsAppended, duplicates…).
        #[arg(long)]
        json: bool,
    },
    /// Learn from many sessions: transcripts under PATHS (imported first), else every stored
    /// session. Each session is learned from once; a second run adds nothing.
    #[command(
        after_help = "Examples:\n  glassbox memory backfill ~/.claude/projects --since 90d\n  glassbox memory backfill --project ~/src/app --json"
    )]
    Backfill {
        /// Claude Code transcript files or folders to import and learn from.
        paths: Vec<PathBuf>,
        /// Only sessions active since DATE (YYYY-MM-DD, RFC 3339, or a span like 90d).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Only sessions of this project (its git root).
        #[arg(long, value_name = "PATH")]
        project: Option<PathBuf>,
        /// Print JSON (sessions, learnings, eventsAppended, duplicates…).
        #[arg(long)]
        json: bool,
    },
    /// The ingest queue: what waits, runs, failed or was dead-lettered (with the raw answer).
    Queue {
        /// Run the items that are due now.
        #[arg(long)]
        run: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Replay every learning event from the first and rebuild the read models from it.
    Rebuild {
        /// Only compare the replay with the read models and print the differences.
        #[arg(long)]
        check: bool,
        /// Print JSON: events, learnings, live, differences, details, repaired.
        #[arg(long)]
        json: bool,
    },
    /// Archive decayed learnings and look for contradictions (NLI by the configured model).
    Reconcile {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Tell memory a learning helped (--useful) or was wrong (--wrong).
    #[command(group(clap::ArgGroup::new("verdict").required(true).args(["useful", "wrong"])))]
    Feedback {
        /// Learning ids, each in full or a unique prefix or suffix of at least 4 hex digits.
        #[arg(required = true)]
        ids: Vec<String>,
        /// It helped: reinforce it ([memory.learn] useful_delta).
        #[arg(long)]
        useful: bool,
        /// It was wrong: weaken it ([memory.learn] wrong_delta).
        #[arg(long)]
        wrong: bool,
        /// The session the feedback comes from.
        #[arg(long)]
        session: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The learning event log: one learning's events, or the newest of all.
    Events {
        /// A learning id (or prefix); all learnings when absent.
        id: Option<String>,
        /// Newest events shown when no id is given.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Claude Code hooks (see the README for the settings.json lines).
    #[command(subcommand)]
    Hook(HookCmd),
    /// Embed entries that have no vector of the configured embedder (--all: every entry).
    Reembed {
        /// Embed every entry again, not only those without a vector of this embedder.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// The Claude Code hooks: each reads the hook's JSON on standard input.
#[derive(Debug, Subcommand)]
pub enum HookCmd {
    /// SessionStart: prints the project's best learnings as additionalContext (within
    /// [memory.learn] hook_timeout_ms; on any problem, empty context and exit 0).
    SessionStart {
        /// Rank now instead of serving the cached context.
        #[arg(long)]
        fresh: bool,
    },
    /// Computes a project's SessionStart context again (SessionStart starts it in the
    /// background when its cache is stale).
    #[command(hide = true)]
    Refresh {
        /// The project's folder.
        cwd: PathBuf,
    },
    /// Stop: queues the session's transcript for learning (run the queue with `memory queue
    /// --run` or `import claude-code --watch --learn`).
    Stop,
}

#[derive(Debug, Subcommand)]
pub enum CoreCmd {
    /// Add a fact to a section.
    Append {
        /// Whose fact it is.
        #[arg(long)]
        section: CoreSection,
        /// The fact ("-" reads standard input).
        text: String,
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Replace the fact given by id (or prefix) or by text it contains.
    Replace {
        /// Whose fact it is.
        #[arg(long)]
        section: CoreSection,
        /// The fact to replace: its id (or a prefix or suffix of it), or text it contains.
        old: String,
        /// The fact that takes its place.
        new: String,
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show the core facts.
    Show {
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Which memory a command works on.
#[derive(Debug, Args, Clone, Default)]
pub struct ScopeArgs {
    /// Scope to write to and read (with global): global, project or session (default from
    /// [memory] default_scope). Given with search, list or stats, only that scope is read.
    #[arg(long)]
    scope: Option<ScopeKind>,
    /// The session of the session scope (id or prefix).
    #[arg(long)]
    session: Option<String>,
}

/// A tier or all of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TierFilter(Option<MemoryTier>);

impl TierFilter {
    fn tiers(self) -> Vec<MemoryTier> {
        self.0.into_iter().collect()
    }
}

fn tier_filter(s: &str) -> Result<TierFilter, String> {
    if s == "all" {
        return Ok(TierFilter(None));
    }
    s.parse::<MemoryTier>()
        .map(|t| TierFilter(Some(t)))
        .map_err(|_| format!("unknown tier '{s}' (core, working, recall, archival, all)"))
}

fn importance(s: &str) -> Result<f32, String> {
    let x: f32 = s
        .parse()
        .map_err(|_| format!("importance '{s}' is not a number"))?;
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(format!("importance {s} is outside 0–1"))
    }
}

fn open(ctx: &Ctx, store: &Store, scope: &ScopeArgs, only: bool) -> Result<Memory> {
    let session = scope
        .session
        .as_deref()
        .map(|s| store.resolve_session(s))
        .transpose()?;
    let kind = match (scope.scope, session) {
        (None, Some(_)) => Some(ScopeKind::Session),
        (k, _) => k,
    };
    let m = ctx.memory(store.clone(), kind, session)?;
    Ok(if only && kind.is_some() {
        let s = m.scope().clone();
        m.only(s)
    } else {
        m
    })
}

/// Prints the memory's warnings (a missing embedding model) on stderr, once each.
fn warn(m: &Memory) {
    for w in m.take_warnings() {
        eprintln!("warning: {w}");
    }
}

fn resolve(store: &Store, ids: &[String]) -> Result<Vec<MemoryId>> {
    ids.iter().map(|i| Ok(store.resolve_memory(i)?)).collect()
}

/// A progress bar of entries on stderr, unless the output is JSON or stderr is not a
/// terminal.
fn entries_bar(json: bool) -> Option<indicatif::ProgressBar> {
    (!json && std::io::stderr().is_terminal()).then(|| super::progress_bar("entries embedded", 0))
}

fn show(bar: &Option<indicatif::ProgressBar>, done: usize, total: usize) {
    if let Some(bar) = bar {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    }
}

fn read_text(text: String) -> Result<String> {
    if text != "-" {
        return Ok(text);
    }
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .context("cannot read standard input")?;
    Ok(s)
}

fn entry_json(e: &MemoryEntry) -> serde_json::Value {
    serde_json::to_value(e).unwrap_or_default()
}

fn row(e: &MemoryEntry) -> String {
    format!(
        "{}  {:<8}  {}  {:.2}  {}{}",
        e.id.short(),
        e.tier.as_str(),
        e.created_at.format("%Y-%m-%d"),
        e.importance,
        excerpt(&e.content, 80),
        if e.tags.is_empty() {
            String::new()
        } else {
            format!("  [{}]", e.tags.join(", "))
        }
    )
}

fn print_inserted(what: &str, out: &Inserted, json: bool) -> Result<()> {
    if json {
        return print_json(out);
    }
    for id in &out.ids {
        println!("{what} {id}");
    }
    announce_evictions(&out.evicted);
    Ok(())
}

fn announce_evictions(ids: &[MemoryId]) {
    if !ids.is_empty() {
        let list: Vec<String> = ids.iter().map(MemoryId::short).collect();
        println!(
            "evicted {} working entr{} to archival to make room: {}",
            ids.len(),
            if ids.len() == 1 { "y" } else { "ies" },
            list.join(" ")
        );
    }
}

pub fn run(ctx: &Ctx, runtime: &tokio::runtime::Runtime, cmd: MemoryCmd) -> Result<ExitCode> {
    if let MemoryCmd::Hook(h) = &cmd {
        return Ok(match h {
            HookCmd::SessionStart { fresh } => learn::hook_session_start(ctx, *fresh),
            HookCmd::Stop => learn::hook_stop(ctx),
            HookCmd::Refresh { cwd } => learn::hook_refresh(ctx, cwd),
        });
    }
    let store = ctx.open_store()?;
    match cmd {
        MemoryCmd::Hook(_) => unreachable!("handled above"),
        MemoryCmd::Learn {
            session,
            again,
            json,
        } => return runtime.block_on(learn::learn(ctx, &store, &session, again, json)),
        MemoryCmd::Backfill {
            paths,
            since,
            project,
            json,
        } => return runtime.block_on(learn::backfill(ctx, &store, paths, since, project, json)),
        MemoryCmd::Queue { run, json } => {
            return runtime.block_on(learn::queue_cmd(ctx, &store, run, json));
        }
        MemoryCmd::Rebuild { check, json } => return learn::rebuild(&store, check, json),
        MemoryCmd::Reconcile { json } => {
            return runtime.block_on(learn::reconcile(ctx, &store, json));
        }
        MemoryCmd::Feedback {
            ids,
            useful,
            wrong: _,
            session,
            json,
        } => return learn::feedback(ctx, &store, &ids, useful, session, json),
        MemoryCmd::Events { id, limit, json } => return learn::events(&store, id, limit, json),
        MemoryCmd::Insert {
            text,
            tags,
            importance,
            working,
            node,
            scope,
            json,
        } => {
            let m = open(ctx, &store, &scope, false)?;
            let content = read_text(text)?;
            let mut provenance = Provenance {
                origin: "cli".into(),
                ..Default::default()
            };
            if let Some(n) = node {
                let id = store.resolve_node(&n)?;
                let Some(node) = store.node(id)? else {
                    bail!("node '{n}' not found")
                };
                provenance.node = Some(id);
                provenance.session = Some(node.session);
            }
            let out = m.insert(NewMemory {
                content,
                tags: tags.into_iter().filter(|t| !t.trim().is_empty()).collect(),
                importance,
                tier: if working {
                    MemoryTier::Working
                } else {
                    MemoryTier::Archival
                },
                provenance,
                created_at: None,
            })?;
            warn(&m);
            print_inserted("stored", &out, json)?;
        }
        MemoryCmd::Search {
            query,
            tier,
            limit,
            mode,
            explain,
            as_of,
            as_at,
            scope,
            json,
        } => {
            let m = open(ctx, &store, &scope, true)?;
            let filter = Filter {
                as_of,
                as_at,
                ..Filter::default()
            };
            let hits = m.search(&query, &tier.tiers(), limit, mode, filter)?;
            warn(&m);
            print_hits(&hits, json, explain)?;
        }
        MemoryCmd::List {
            tier,
            limit,
            scope,
            json,
        } => {
            let m = open(ctx, &store, &scope, true)?;
            let tiers = match tier.0 {
                Some(t) => vec![t],
                None => MemoryTier::ALL.to_vec(),
            };
            let mut entries = Vec::new();
            for t in tiers {
                entries.extend(m.entries(t)?);
            }
            entries.sort_by_key(|e| std::cmp::Reverse(e.created_at));
            entries.truncate(limit);
            if json {
                print_json(&entries)?;
            } else if entries.is_empty() {
                println!(
                    "no memories in {} — try: glassbox memory insert \"…\"",
                    m.scope()
                );
            } else {
                for e in &entries {
                    println!("{}", row(e));
                }
            }
        }
        MemoryCmd::Core(cmd) => core(ctx, &store, cmd)?,
        MemoryCmd::Evict { ids, scope, json } => {
            let m = open(ctx, &store, &scope, false)?;
            let ids = resolve(&store, &ids)?;
            let done = m.evict(&ids)?;
            if json {
                print_json(&json!({ "evicted": done }))?;
            } else {
                for id in done {
                    println!("evicted {id} to archival");
                }
            }
        }
        MemoryCmd::Promote { ids, scope, json } => {
            let m = open(ctx, &store, &scope, false)?;
            let ids = resolve(&store, &ids)?;
            let out = m.promote(&ids)?;
            print_inserted("promoted", &out, json)?;
        }
        MemoryCmd::Stats { scope, json } => {
            let m = open(ctx, &store, &scope, true)?;
            let s = m.stats()?;
            if json {
                print_json(&s)?;
            } else {
                let scopes: Vec<String> = m.visible().iter().map(ToString::to_string).collect();
                println!("scopes:         {}", scopes.join(", "));
                println!(
                    "main context:   {} entries, {} of {} tokens ({:.1}%)",
                    s.main_context_entries,
                    s.main_context_tokens,
                    s.main_context_capacity,
                    s.main_context_utilization * 100.0
                );
                println!("recall:         {} entries", s.recall_storage_entries);
                println!("archival:       {} entries", s.archival_storage_entries);
                println!(
                    "totals:         {} inserts, {} searches, {} evictions, {} promotions",
                    s.total_inserts, s.total_searches, s.total_evictions, s.total_promotions
                );
            }
        }
        MemoryCmd::Show { id, json } => {
            let mid = learn::resolve_learning(&store, &id)?;
            let learning =
                crate::engines::memory::learn::view(&store, mid, &ctx.loaded.config.memory.learn)?;
            let Some(e) = store
                .memory(mid)?
                .or_else(|| learning.as_ref().map(|v| v.learning.entry(None)))
            else {
                bail!("memory '{id}' not found")
            };
            let vector = store.memory_vectors(&[mid])?.pop().flatten();
            let node = match e.provenance.node {
                Some(n) => store.node(n)?,
                None => None,
            };
            let session = match e.provenance.session {
                Some(s) => store.session(s)?,
                None => None,
            };
            if json {
                print_json(&json!({
                    "entry": entry_json(&e),
                    "learning": learning.as_ref().map(|v| json!({
                        "state": v.learning,
                        "score": v.score,
                        "accesses": v.accesses,
                        "contradictions": v.contradictions.iter().map(|(id, r)| json!({"with": id, "nli": r})).collect::<Vec<_>>(),
                    })),
                    "events": learning.as_ref().map(|v| v.events.clone()).unwrap_or_default(),
                    "vector": vector.as_ref().map(|v| json!({"model": v.model, "dim": v.values.len()})),
                    "source": {
                        "session_title": session.as_ref().map(|s| s.title.clone()),
                        "node_kind": node.as_ref().map(|n| n.kind),
                        "node_excerpt": node.as_ref().map(|n| excerpt(&n.text, 120)),
                    },
                }))?;
            } else {
                print_entry(&e, vector.as_ref().map(|v| v.model.as_str()));
                let p = &e.provenance;
                println!("origin:     {}", p.origin);
                match (p.session, &session) {
                    (Some(id), Some(s)) => println!("session:    {id}  {}", excerpt(&s.title, 60)),
                    (Some(id), None) => println!("session:    {id}  (deleted)"),
                    (None, _) => {}
                }
                match (p.node, &node) {
                    (Some(id), Some(n)) => println!(
                        "node:       {id}  {} — {}",
                        n.kind.as_str(),
                        excerpt(&n.text, 60)
                    ),
                    (Some(id), None) => println!("node:       {id}  (deleted)"),
                    (None, _) => {}
                }
                if let Some(step) = p.step {
                    println!("step:       {step}");
                }
                if let Some((i, n)) = p.chunk {
                    println!("chunk:      {} of {n}", i + 1);
                }
                if let Some(v) = &learning {
                    learn::print_learning(v);
                }
                println!();
                println!("{}", e.content);
            }
        }
        MemoryCmd::Rm { ids, json } => {
            let ids = resolve(&store, &ids)?;
            let m = open(ctx, &store, &ScopeArgs::default(), false)?;
            let n = m.retract(&ids, "deleted")?;
            if json {
                print_json(&json!({ "deleted": n }))?;
            } else {
                println!("removed {n} entr{}", if n == 1 { "y" } else { "ies" });
            }
        }
        MemoryCmd::Export { output, all, scope } => {
            let m = open(ctx, &store, &scope, true)?;
            let m = if all {
                let scopes = store.memory_scopes()?;
                let first = scopes
                    .first()
                    .cloned()
                    .unwrap_or(crate::store::MemoryScope::Global);
                Memory::new(
                    store.clone(),
                    ctx.loaded.config.memory.clone(),
                    None,
                    first,
                    scopes,
                )
            } else {
                m
            };
            match output {
                Some(path) => {
                    let f = std::fs::File::create(&path)
                        .with_context(|| format!("cannot create {}", path.display()))?;
                    let mut w = std::io::BufWriter::new(f);
                    let n = m.export(&mut w)?;
                    w.flush()
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    eprintln!("exported {n} entries to {}", path.display());
                }
                None => {
                    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
                    m.export(&mut w)?;
                    w.flush()?;
                }
            }
        }
        MemoryCmd::Import { file, json } => {
            let m = open(ctx, &store, &ScopeArgs::default(), false)?;
            let mut input: Box<dyn BufRead> = if file.as_os_str() == "-" {
                Box::new(std::io::BufReader::new(std::io::stdin()))
            } else {
                Box::new(std::io::BufReader::new(
                    std::fs::File::open(&file)
                        .with_context(|| format!("cannot open {}", file.display()))?,
                ))
            };
            let bar = entries_bar(json);
            let report = m
                .import(&mut input, &mut |done, total| show(&bar, done, total))
                .with_context(|| format!("import of {}", file.display()))?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            warn(&m);
            if json {
                print_json(&report)?;
            } else {
                println!(
                    "imported {} entries ({} unchanged, {} replaced, {} embedded now)",
                    report.imported, report.unchanged, report.replaced, report.embedded
                );
            }
        }
        MemoryCmd::Reembed { all, scope, json } => {
            let m = open(ctx, &store, &scope, false)?;
            if m.embedder().is_none() {
                warn(&m);
                bail!("no embedder is available; see the warning above");
            }
            let bar = entries_bar(json);
            let n = m.reembed(all, &mut |done, total| show(&bar, done, total))?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            if json {
                print_json(&json!({ "embedded": n }))?;
            } else {
                println!("embedded {n} entries");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn core(ctx: &Ctx, store: &Store, cmd: CoreCmd) -> Result<()> {
    match cmd {
        CoreCmd::Append {
            section,
            text,
            scope,
            json,
        } => {
            let m = open(ctx, store, &scope, false)?;
            let out = m.core_append(
                section,
                &read_text(text)?,
                Provenance {
                    origin: "cli".into(),
                    ..Default::default()
                },
            )?;
            warn(&m);
            print_inserted("stored", &out, json)?;
        }
        CoreCmd::Replace {
            section,
            old,
            new,
            scope,
            json,
        } => {
            let m = open(ctx, store, &scope, false)?;
            let id = m.core_replace(section, &old, &new)?;
            warn(&m);
            if json {
                print_json(&json!({ "replaced": id }))?;
            } else {
                println!("replaced {id}");
            }
        }
        CoreCmd::Show { scope, json } => {
            let m = open(ctx, store, &scope, true)?;
            let facts = m.entries(MemoryTier::Core)?;
            if json {
                print_json(&facts)?;
            } else if facts.is_empty() {
                println!("no core facts — try: glassbox memory core append --section human \"…\"");
            } else {
                for section in [CoreSection::Human, CoreSection::Agent] {
                    let of: Vec<&MemoryEntry> = facts
                        .iter()
                        .filter(|e| e.section == Some(section))
                        .collect();
                    if of.is_empty() {
                        continue;
                    }
                    println!("{section}:");
                    for e in of.iter().rev() {
                        println!("  {}  {}", e.id.short(), excerpt(&e.content, 100));
                    }
                }
            }
        }
    }
    Ok(())
}

fn print_entry(e: &MemoryEntry, vector: Option<&str>) {
    println!("id:         {}", e.id);
    println!(
        "tier:       {}{}",
        e.tier,
        e.section.map(|s| format!(" ({s})")).unwrap_or_default()
    );
    println!("scope:      {}", e.scope);
    println!("importance: {:.2}", e.importance);
    if !e.tags.is_empty() {
        println!("tags:       {}", e.tags.join(", "));
    }
    println!(
        "created:    {}",
        e.created_at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    println!(
        "vector:     {}",
        vector.unwrap_or("none (keyword search only)")
    );
}

fn print_hits(hits: &[Hit], json: bool, explain: bool) -> Result<()> {
    if json {
        let rows: Vec<serde_json::Value> = hits
            .iter()
            .map(|h| {
                let mut v = serde_json::to_value(h).unwrap_or_default();
                if let (Some(m), Some(d)) = (v.as_object_mut(), &h.dims) {
                    m.remove("dims");
                    m.insert("scores".into(), serde_json::to_value(d).unwrap_or_default());
                }
                v
            })
            .collect();
        return print_json(&rows);
    }
    if hits.is_empty() {
        println!("no matching memories");
        return Ok(());
    }
    for h in hits {
        println!("{:.3}  {}", h.score, row(&h.entry));
        if explain {
            match &h.dims {
                Some(d) => println!(
                    "       text {:.3} · concept {:.3} · vector {:.3} · graph {:.3} · reinforcement {:.3} · temporal {:.3} · recency {:.3} = {:.3}",
                    d.text,
                    d.concept,
                    d.vector,
                    d.graph,
                    d.reinforcement,
                    d.temporal,
                    d.recency,
                    d.total
                ),
                None => println!(
                    "       keyword {:.3} · cosine {:.3}{}",
                    h.keyword,
                    h.cosine,
                    if h.date_match { " · date match" } else { "" }
                ),
            }
        }
    }
    Ok(())
}
