//! The command tree. Every engine is also a headless subcommand that prints plain text or
//! `--json`; with no subcommand the binary opens the TUI.
// The doc comments of the command tree are its `--help`: `<config dir>` and `[store] url`
// there are words for a person, not HTML or links.
#![allow(rustdoc::invalid_html_tags, rustdoc::private_intra_doc_links)]

mod ask;
mod checkpoint;
mod diff;
mod doctor;
mod export;
mod fork;
mod got;
mod import;
mod insights;
mod knowledge;
mod mcp;
mod memory;
mod pipeline;
pub mod replay;
mod research;
mod search;
mod sessions;
mod steer;
mod store;
mod values;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory, Parser, Subcommand};

pub use crate::config::Ctx;
use crate::config::{self, ConfigSources, FlagOverride, ProviderKind};
use crate::paths::Paths;

#[derive(Debug, Parser)]
#[command(
    name = "glassbox",
    version,
    about = "A terminal workbench for watching, steering and keeping an AI model's reasoning",
    long_about = "A terminal workbench for watching, steering and keeping an AI model's reasoning.\n\n\
        With no command, glassbox opens the TUI. Every engine is also a command that runs \
        headless and prints plain text, or NDJSON/JSON with --json. With no API key \
        configured, glassbox answers with the embedded local model (run scripts/setup.sh once \
        to fetch it).",
    after_help = "Examples:\n  glassbox ask \"Why is the sky blue?\"\n  glassbox ask --provider anthropic --effort high \"Prove it\"\n  glassbox sessions list\n  glassbox doctor"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Where the store, logs and (by default) models live.
    #[arg(long, global = true, env = "GLASSBOX_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Use this config file instead of <config dir>/config.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Apply a named profile from the config ([profiles.NAME]).
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// Model provider (auto picks anthropic or openai when a key is set, else local).
    #[arg(long, global = true, value_enum)]
    pub provider: Option<ProviderKind>,
    /// Model name for the provider (for local: a path to a GGUF file).
    #[arg(long, global = true, value_name = "MODEL")]
    pub model: Option<String>,
    /// Base URL of the provider's API.
    #[arg(long, global = true, value_name = "URL")]
    pub base_url: Option<String>,
    /// The store: a PostgreSQL URL (postgres://USER@HOST/DATABASE, shared by every instance
    /// given it; password from PGPASSWORD or ~/.pgpass) instead of the redb file in the data
    /// dir. Overrides GLASSBOX_STORE_URL and [store] url.
    #[arg(long = "store", global = true, value_name = "URL")]
    pub store_url: Option<String>,
    /// Colour theme: dark, light, high-contrast, or a theme file's name in <config dir>/themes.
    #[arg(long, global = true, value_name = "NAME")]
    pub theme: Option<String>,
    /// More detail in the log file (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Ask a question headless: stream thinking and answer to stdout, persist the session.
    Ask(ask::AskArgs),
    /// Fork a question into reasoning styles run side by side, compared (and --debate N).
    Fork(fork::ForkArgs),
    /// Steer a fork run: --expand, --merge, --challenge or --refork.
    Steer(steer::SteerArgs),
    /// Where two lines of reasoning part: their steps aligned and labelled side by side.
    Diff(diff::DiffArgs),
    /// Merge two or more lines of reasoning into claims that name the steps they came from.
    Merge(diff::MergeArgs),
    /// A human verdict on a node: verified, questionable or disagree (with --correction).
    Checkpoint(checkpoint::CheckpointArgs),
    /// List, show or delete sessions.
    #[command(subcommand)]
    Sessions(sessions::SessionsCmd),
    /// Serve the reasoning ledger over MCP (stdio, or streamable HTTP with --http).
    Mcp(mcp::McpArgs),
    /// Import Claude Code transcripts (once or --watch) or a JSON session export.
    #[command(subcommand)]
    Import(import::ImportCmd),
    /// Export a session (Markdown, JSON, DOT, Mermaid) or its step labels (PRM800K, ProcessBench).
    Export(export::ExportArgs),
    /// Memory: core facts, working memory, recall and archival (insert, search, evict, promote…).
    #[command(subcommand)]
    Memory(memory::MemoryCmd),
    /// Full-text search over every session's thinking, answers and tool calls.
    Search(search::SearchArgs),
    /// The local knowledge base: add files, folders, notes and URLs; list, rm, search.
    #[command(subcommand)]
    Knowledge(knowledge::KnowledgeCmd),
    /// Research a question: plan → policy audit → your approval → tools → cited report.
    Research(research::ResearchArgs),
    /// Replay a session (--print: to stdout, at recorded pace).
    Replay(replay::ReplayArgs),
    /// Graph of Thoughts: search a problem with scored, pruned and aggregated thoughts.
    Got(got::GotArgs),
    /// Verify a reasoning chain step by step (process reward model).
    Verify(verify::VerifyArgs),
    /// Metacognitive insights on a session's recent reasoning, with evidence.
    Insights(insights::InsightsArgs),
    /// Show the merged configuration and where each value came from.
    #[command(subcommand)]
    Config(ConfigCmd),
    /// The store itself: copy it into an empty store (a PostgreSQL database or a redb file).
    #[command(subcommand)]
    Store(store::StoreCmd),
    /// Check the data dir, store (redb file or PostgreSQL), config, providers, model files
    /// and terminal.
    Doctor {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// First compress the node records written before the store had a dictionary with
        /// it (training one on them when there is none), merge the full-text index into one
        /// run (the fastest to search), then give a redb file's free pages back to the file
        /// system (needs a moment when no other glassbox is reading or writing the store; a
        /// PostgreSQL database does that itself).
        #[arg(long)]
        compact: bool,
    },
    /// Print shell completions.
    Completions {
        /// The shell to generate completions for.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCmd {
    /// Print every setting with its origin (default, file:line, env, flag, profile).
    Show {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn flag_overrides(g: &GlobalArgs) -> Vec<FlagOverride> {
    let mut flags = Vec::new();
    if let Some(p) = g.provider {
        flags.push(FlagOverride::new(
            "general.provider",
            p.as_str(),
            "--provider",
        ));
    }
    if let Some(m) = &g.model {
        flags.push(FlagOverride::new(config::MODEL_KEY, m.as_str(), "--model"));
    }
    if let Some(t) = &g.theme {
        flags.push(FlagOverride::new("general.theme", t.as_str(), "--theme"));
    }
    if let Some(u) = &g.store_url {
        flags.push(FlagOverride::new(
            config::STORE_URL_KEY,
            u.as_str(),
            "--store",
        ));
    }
    if let Some(u) = &g.base_url {
        flags.push(FlagOverride::new(
            config::BASE_URL_KEY,
            u.as_str(),
            "--base-url",
        ));
    }
    flags
}

/// Loads paths and config from the global options.
pub fn load_ctx(g: &GlobalArgs) -> Result<Ctx> {
    let paths = Paths::resolve(g.data_dir.as_deref())?;
    let sources = ConfigSources::from_process_env(
        g.config.clone(),
        paths.config_dir.clone(),
        flag_overrides(g),
        g.profile.clone(),
    );
    let loaded = config::load(&sources)?;
    for w in &loaded.warnings {
        eprintln!("glassbox: warning: {w}");
    }
    Ok(Ctx {
        paths,
        loaded,
        env: sources.env,
        embedder: Default::default(),
    })
}

/// Sets up the log file in the data dir at the config's level (`-v` debug, `-vv` trace).
pub fn init_logging(ctx: &Ctx, verbose: u8) {
    let level = match verbose {
        0 => ctx.loaded.config.general.log_level.clone(),
        1 => "debug".into(),
        _ => "trace".into(),
    };
    if ctx.paths.ensure_data_dir().is_err() {
        return;
    }
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let path = ctx.paths.log_file();
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
    else {
        return;
    };
    // The log is the user's own, like the store: a log written by an older version with a
    // looser mode is tightened.
    let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    let filter = tracing_subscriber::EnvFilter::try_new(format!("glassbox={level}"))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("glassbox=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
}

/// Prints the shell completion script for `shell`; needs no config.
pub fn print_completions(shell: clap_complete::Shell) -> ExitCode {
    clap_complete::generate(
        shell,
        &mut Cli::command(),
        "glassbox",
        &mut std::io::stdout(),
    );
    ExitCode::SUCCESS
}

/// The multi-threaded async runtime commands and the TUI run on.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Whether the command is one of the Claude Code hooks, which must never fail.
pub fn is_hook(command: Option<&Command>) -> bool {
    matches!(command, Some(Command::Memory(memory::MemoryCmd::Hook(_))))
}

/// A hook's answer when glassbox cannot even load its config: one line on stderr, the empty
/// answer (SessionStart: hook JSON with no context), exit 0.
pub fn hook_fail_open(command: Option<&Command>, e: &anyhow::Error) -> ExitCode {
    eprintln!("glassbox: memory hook: {e}; no context given");
    if let Some(Command::Memory(memory::MemoryCmd::Hook(memory::HookCmd::SessionStart {
        ..
    }))) = command
    {
        println!(
            "{}",
            crate::engines::memory::learn::hook::session_start_output("")
        );
    }
    ExitCode::SUCCESS
}

/// Runs one command headless. The binary opens the TUI itself for no command and for
/// `replay` without `--print` (see [`replay::tui_replay`]), so `replay` here prints.
pub fn run(ctx: &Ctx, runtime: &tokio::runtime::Runtime, command: Command) -> Result<ExitCode> {
    match command {
        Command::Ask(args) => runtime.block_on(ask::run(ctx, args)),
        Command::Fork(args) => runtime.block_on(fork::run(ctx, args)),
        Command::Steer(args) => runtime.block_on(steer::run(ctx, args)),
        Command::Diff(args) => runtime.block_on(diff::diff(ctx, args)),
        Command::Merge(args) => runtime.block_on(diff::merge(ctx, args)),
        Command::Checkpoint(args) => runtime.block_on(checkpoint::run(ctx, args)),
        Command::Sessions(cmd) => sessions::run(ctx, cmd),
        Command::Mcp(args) => runtime.block_on(mcp::run(ctx, args)),
        Command::Import(cmd) => runtime.block_on(import::run(ctx, cmd)),
        Command::Export(args) => {
            // Ctrl-C is heard on the runtime while the export writes to a file.
            let _runtime = runtime.enter();
            export::run(ctx, args)
        }
        Command::Search(args) => search::run(ctx, args),
        Command::Memory(cmd) => memory::run(ctx, runtime, cmd),
        Command::Knowledge(cmd) => knowledge::run(ctx, cmd),
        Command::Research(args) => runtime.block_on(research::run(ctx, args)),
        Command::Replay(args) => runtime.block_on(replay::print(ctx, args)),
        Command::Got(args) => runtime.block_on(got::run(ctx, args)),
        Command::Verify(args) => runtime.block_on(verify::run(ctx, args)),
        Command::Insights(args) => runtime.block_on(insights::run(ctx, args)),
        Command::Config(ConfigCmd::Show { json }) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&ctx.loaded.to_json())?);
            } else {
                print!("{}", ctx.loaded.render_text());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Store(cmd) => store::run(ctx, cmd),
        Command::Doctor { json, compact } => doctor::run(ctx, json, compact),
        Command::Completions { shell } => Ok(print_completions(shell)),
    }
}

/// A progress bar of `len` `unit` on stderr.
/// Exit status of a command stopped by Ctrl-C (128 + SIGINT).
pub(crate) const INTERRUPTED: i32 = 130;

/// Runs `each` on every Ctrl-C (SIGINT) with how many there have been (1 for the first),
/// heard from the moment this returns: the handler is in place before the work it guards
/// starts (a Ctrl-C before it would kill the process where it stands). Needs the runtime
/// entered; abort the task once the work is over.
pub(crate) fn on_ctrl_c(
    mut each: impl FnMut(u32) + Send + 'static,
) -> Result<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupts = signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C")?;
    Ok(tokio::spawn(async move {
        let mut n = 0;
        while interrupts.recv().await.is_some() {
            n += 1;
            each(n);
        }
    }))
}

/// Standard error as indicatif draws on it, two columns narrower than it is. indicatif pads
/// a bar's line with spaces to the terminal's width, which leaves the cursor in the last
/// column waiting to wrap; the `^C` the terminal echoes for a Ctrl-C then starts a row of its
/// own, and the clear that follows (one row up from where the bar thinks it is) leaves the
/// bar's last frame on screen above the command's last words. Two columns short, the two
/// characters of the echo land on the bar's own row and are cleared with it.
#[derive(Debug)]
struct Narrow(console::Term);

/// Columns the terminal's echo of a Ctrl-C takes (`^C`).
const ECHO_COLUMNS: u16 = 2;

impl indicatif::TermLike for Narrow {
    fn width(&self) -> u16 {
        self.0.size().1.saturating_sub(ECHO_COLUMNS).max(1)
    }
    fn height(&self) -> u16 {
        self.0.size().0
    }
    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_up(n)
    }
    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_down(n)
    }
    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_right(n)
    }
    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_left(n)
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.0.write_line(s)
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.0.write_str(s)
    }
    fn clear_line(&self) -> std::io::Result<()> {
        self.0.clear_line()
    }
    fn flush(&self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Where progress is drawn: standard error two columns short of its width (see [`Narrow`]),
/// or nowhere when it is not a terminal.
fn progress_target() -> indicatif::ProgressDrawTarget {
    let term = console::Term::buffered_stderr();
    if term.is_term() {
        indicatif::ProgressDrawTarget::term_like_with_hz(Box::new(Narrow(term)), 20)
    } else {
        indicatif::ProgressDrawTarget::hidden()
    }
}

pub(crate) fn progress_bar(unit: &str, len: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(Some(len), progress_target());
    let template = format!("{{spinner}} {{pos}}/{{len}} {unit} [{{bar:30}}] {{msg}}");
    if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// A spinner with the elapsed time on stderr while `what` runs, for work that prints nothing
/// until it ends; `None` (nothing drawn) when stderr is not a terminal or `quiet` is set.
pub(crate) fn working(what: &str, quiet: bool) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let spinner = indicatif::ProgressBar::with_draw_target(None, progress_target());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
        spinner.set_style(style);
    }
    spinner.set_message(format!("{what}…"));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(spinner)
}

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
