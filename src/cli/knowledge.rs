//! `glassbox knowledge …`: the local knowledge base (seed 001) from the command line: add
//! files, folders, notes and URLs, list, remove, search.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use super::sessions::excerpt;
use super::{Ctx, print_json};
use crate::engines::knowledge::{AddEvent, AddReport, Knowledge, KnowledgeDoc, KnowledgeHit};

#[derive(Debug, Subcommand)]
pub enum KnowledgeCmd {
    /// Add files, folders (every text, Markdown and PDF file in them) or URLs; or a note.
    #[command(
        long_about = "Add files, folders or URLs to the knowledge base, or a note with --note.\n\n\
            A folder is read recursively, in path order, leaving out hidden files and folders. \
            Text and Markdown files are read as UTF-8, PDFs for their text; a file that cannot \
            be read (binary, not UTF-8, a broken or encrypted PDF, larger than [knowledge] \
            max_file_bytes) is skipped with its reason and the others are added. Each document \
            is cut into chunks of about [knowledge] chunk_chars characters and embedded with \
            the [embeddings] embedder (without one, search ranks by words).\n\n\
            Adding a file again does nothing when it has not changed; a changed file replaces \
            its older version. A URL is kept as a reference: its page is not fetched.",
        after_help = "Examples:\n  glassbox knowledge add ~/papers\n  glassbox knowledge add notes.md --label \"Meeting notes\"\n  glassbox knowledge add https://arxiv.org/abs/1706.03762 --label \"Attention paper\"\n  glassbox knowledge add --note \"The staging database listens on port 6432\""
    )]
    Add(AddArgs),
    /// List the documents, oldest first.
    #[command(
        after_help = "Examples:\n  glassbox knowledge list\n  glassbox knowledge list --json"
    )]
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove a document and its chunks.
    #[command(
        after_help = "KEY is the document's id (in full, or at least 4 hex digits of its start or end, as `list` shows), its exact source (a file's path, a URL) or its label.\n\nExamples:\n  glassbox knowledge rm 3f2a9c1d\n  glassbox knowledge rm ~/papers/attention.pdf\n  glassbox knowledge rm \"Meeting notes\""
    )]
    Rm {
        /// Id, unique part of the id, source or label.
        key: String,
        /// Print the removed document as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Find the chunks that best answer a question.
    #[command(
        long_about = "Find the chunks that best answer a question: by cosine similarity of the \
            embeddings, or, without an embedder (or for chunks embedded by another one), by \
            the question's words (BM25). Exit status is 1 when nothing matches.",
        after_help = "Examples:\n  glassbox knowledge search \"what causes spring tides?\"\n  glassbox knowledge search \"staging database port\" -k 3 --json"
    )]
    Search {
        /// The question or words to look for.
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        /// How many chunks (default: [knowledge] top_k).
        #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
        k: Option<u32>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// Files, folders, or http(s) URLs.
    #[arg(
        value_name = "PATH|URL",
        required_unless_present = "note",
        conflicts_with = "note"
    )]
    pub targets: Vec<String>,
    /// Add this text as a note instead.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// What the document is called in lists and citations (one file, URL or note only).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Print the report as JSON (added, unchanged, replaced, skipped, warnings).
    #[arg(long)]
    pub json: bool,
}

fn is_url(target: &str) -> bool {
    let t = target.to_ascii_lowercase();
    t.starts_with("http://") || t.starts_with("https://")
}

/// The knowledge base over the store, with the embedder when it loads (else a warning on
/// stderr, and search by words).
fn open(ctx: &Ctx) -> Result<Knowledge> {
    let (k, warning) = ctx.knowledge(ctx.open_store()?);
    if let Some(msg) = warning {
        eprintln!("glassbox: warning: {msg}");
    }
    Ok(k)
}

pub fn run(ctx: &Ctx, cmd: KnowledgeCmd) -> Result<ExitCode> {
    match cmd {
        KnowledgeCmd::Add(args) => add(ctx, args),
        KnowledgeCmd::List { json } => list(ctx, json),
        KnowledgeCmd::Rm { key, json } => {
            let doc = open_plain(ctx)?.remove(&key)?;
            if json {
                print_json(&doc)?;
            } else {
                println!(
                    "removed {} {} ({})",
                    doc.id.short(),
                    doc.label,
                    plural(u64::from(doc.chunks), "chunk")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        KnowledgeCmd::Search { query, k, json } => search(ctx, &query.join(" "), k, json),
    }
}

/// The knowledge base without loading the embedder (listing, removing).
fn open_plain(ctx: &Ctx) -> Result<Knowledge> {
    Ok(Knowledge::new(
        ctx.open_store()?,
        None,
        ctx.loaded.config.knowledge.clone(),
    ))
}

fn add(ctx: &Ctx, args: AddArgs) -> Result<ExitCode> {
    let single = args.note.is_some() || args.targets.len() == 1;
    if args.label.is_some() && !single {
        bail!("--label names one document; give one file, URL or --note");
    }
    // Every path first, so a typo does not leave half the list added.
    for t in args.targets.iter().filter(|t| !is_url(t)) {
        if let Err(e) = std::fs::metadata(t) {
            bail!("cannot read {t}: {e}");
        }
    }
    let kb = open(ctx)?;
    let label = args.label.as_deref();
    let quiet = args.json;
    let mut report = AddReport::default();
    if let Some(note) = &args.note {
        report = kb.add_note(note, label)?;
    }
    for target in &args.targets {
        let one = if is_url(target) {
            kb.add_url(target, label)?
        } else {
            kb.add_path_labeled(Path::new(target), label, &mut |e| {
                if !quiet {
                    progress(e);
                }
            })?
        };
        report.merge(one);
    }
    if args.json {
        print_json(&report)?;
    } else {
        for w in &report.warnings {
            eprintln!("glassbox: warning: {w}");
        }
        for s in &report.skipped {
            eprintln!("skipped {s}");
        }
        println!("{}", summary(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// One progress line on stderr per file.
fn progress(e: &AddEvent) {
    match e {
        AddEvent::Found { .. } | AddEvent::Reading { .. } => {}
        AddEvent::Skipped { path, .. } => eprintln!("  {:<7} {}", "skip", path.display()),
        AddEvent::Unchanged { path } => eprintln!("  {:<7} {}", "same", path.display()),
        AddEvent::Added {
            path,
            chunks,
            embedded,
            replaced,
        } => eprintln!(
            "  {:<7} {}  ({}{})",
            if *replaced { "update" } else { "add" },
            path.display(),
            plural(u64::from(*chunks), "chunk"),
            if *embedded { ", embedded" } else { "" }
        ),
    }
}

fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `added 3 documents (12 chunks), 1 replaced, 1 unchanged, 1 skipped`.
fn summary(r: &AddReport) -> String {
    let mut s = format!(
        "added {} ({})",
        plural(r.added.len() as u64, "document"),
        plural(r.added_chunks(), "chunk")
    );
    if r.replaced > 0 {
        s.push_str(&format!(", {} replaced", r.replaced));
    }
    s.push_str(&format!(
        ", {} unchanged, {} skipped",
        r.unchanged.len(),
        r.skipped.len()
    ));
    s
}

fn list(ctx: &Ctx, json: bool) -> Result<ExitCode> {
    let docs = open_plain(ctx)?.list()?;
    if json {
        print_json(&docs)?;
        return Ok(ExitCode::SUCCESS);
    }
    if docs.is_empty() {
        eprintln!("the knowledge base is empty (add documents with `glassbox knowledge add PATH`)");
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", row("ID", "KIND", "CHUNKS", "ADDED", "LABEL / SOURCE"));
    for d in &docs {
        println!(
            "{}",
            row(
                &d.id.short(),
                d.kind.as_str(),
                &d.chunks.to_string(),
                &d.added_at.format("%Y-%m-%d %H:%M").to_string(),
                &label_and_source(d),
            )
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn row(id: &str, kind: &str, chunks: &str, added: &str, what: &str) -> String {
    format!("{id:<8}  {kind:<4}  {chunks:>6}  {added:<16}  {what}")
}

fn label_and_source(d: &KnowledgeDoc) -> String {
    if d.label == d.source || d.source == "note" {
        excerpt(&d.label, 70)
    } else {
        format!("{}  ({})", excerpt(&d.label, 50), d.source)
    }
}

fn search(ctx: &Ctx, query: &str, k: Option<u32>, json: bool) -> Result<ExitCode> {
    let kb = open(ctx)?;
    let k = k.map_or(kb.params().top_k, |k| k as usize);
    let hits = kb.search(query, k)?;
    for w in kb.take_warnings() {
        eprintln!("glassbox: warning: {w}");
    }
    if json {
        let rows: Vec<Ranked> = hits
            .iter()
            .enumerate()
            .map(|(i, hit)| Ranked { rank: i + 1, hit })
            .collect();
        print_json(&rows)?;
    } else if hits.is_empty() {
        eprintln!("no chunk matches '{query}'");
    } else {
        for (i, h) in hits.iter().enumerate() {
            print_hit(i + 1, h);
        }
    }
    Ok(if hits.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A hit with its rank, for `--json`.
#[derive(serde::Serialize)]
struct Ranked<'a> {
    rank: usize,
    #[serde(flatten)]
    hit: &'a KnowledgeHit,
}

fn print_hit(rank: usize, h: &KnowledgeHit) {
    println!(
        "{rank:>2}. {:.3}  {}:{}-{}",
        h.score, h.doc.label, h.start, h.end
    );
    let text = h.text.split_whitespace().collect::<Vec<_>>().join(" ");
    println!("    {text}");
}
