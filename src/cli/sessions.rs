//! `glassbox sessions list|show|rename|rm`.

use std::io::{BufRead, IsTerminal, Write};
use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Subcommand;
use serde_json::json;

use chrono::{DateTime, Utc};

use super::{Ctx, print_json};
use crate::engines::transcript::{
    SessionStats, export, parse_since, session_cwd, session_git_branch, session_project,
};
use crate::store::{Edge, Node, NodeStatus, Session, SessionId, SessionSource, Store, StoreError};

#[derive(Debug, Subcommand)]
pub enum SessionsCmd {
    /// List sessions, newest first, with their project (the git repository or folder they
    /// ran in; `-` when a session has none). A session a killed `import json` left partway
    /// is listed as `[unfinished import] TITLE`.
    List {
        /// Only sessions of this project (case-insensitive; `-` for sessions without one).
        #[arg(long, value_name = "NAME")]
        project: Option<String>,
        /// Only sessions active since DATE: YYYY-MM-DD, an RFC 3339 time or a span like 90d / 12h.
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Only sessions from this source: glassbox, claude_code, mcp or import.
        #[arg(long, value_name = "SOURCE")]
        source: Option<String>,
        /// At most N sessions (the newest).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show one session's nodes and edges.
    Show {
        /// Session id, or a unique prefix or suffix of at least 4 hex digits.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Give a session a title of your own; a re-import of its transcript keeps it.
    Rename {
        /// Session id, or a unique prefix or suffix of at least 4 hex digits.
        id: String,
        /// The new title (its first line, at most 80 characters).
        title: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete a session and everything it owns.
    Rm {
        /// Session id, or a unique prefix or suffix of at least 4 hex digits.
        id: String,
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn session_json(s: &Session, node_count: u64) -> serde_json::Value {
    let mut v = json!({
        "id": s.id,
        "title": s.title,
        "created": s.created_at,
        "updated": s.updated_at,
        "source": s.source.as_str(),
        "provider": s.provider,
        "model": s.model,
        "nodes": node_count,
        "project": session_project(s),
        "cwd": session_cwd(s),
        "git_branch": session_git_branch(s),
    });
    // Only where it holds, so that the common row stays as it was.
    if export::is_unfinished(s) {
        v["unfinished_import"] = json!(true);
    }
    v
}

/// The filters of `sessions list`.
struct ListFilter {
    project: Option<String>,
    since: Option<DateTime<Utc>>,
    source: Option<SessionSource>,
}

impl ListFilter {
    fn new(project: Option<String>, since: Option<&str>, source: Option<&str>) -> Result<Self> {
        let since = since
            .map(|t| parse_since(t).map(DateTime::<Utc>::from))
            .transpose()?;
        let source = match source {
            None => None,
            Some(name) => {
                let want = name.trim().replace('-', "_").to_ascii_lowercase();
                let all = [
                    SessionSource::Glassbox,
                    SessionSource::ClaudeCode,
                    SessionSource::Mcp,
                    SessionSource::Import,
                ];
                match all.into_iter().find(|s| s.as_str() == want) {
                    Some(s) => Some(s),
                    None => {
                        bail!("--source '{name}': expected glassbox, claude_code, mcp or import")
                    }
                }
            }
        };
        Ok(Self {
            project,
            since,
            source,
        })
    }

    fn keeps(&self, s: &Session, project: Option<&str>) -> bool {
        if let Some(src) = self.source
            && s.source != src
        {
            return false;
        }
        if let Some(t) = self.since
            && s.updated_at.max(s.created_at) < t
        {
            return false;
        }
        match self.project.as_deref().map(str::trim) {
            None => true,
            Some("-" | "") => project.is_none(),
            Some(want) => project.is_some_and(|p| p.eq_ignore_ascii_case(want)),
        }
    }
}

pub(crate) use crate::store::excerpt;

/// The details at the top of `sessions show`.
fn print_stats(out: &mut impl Write, st: &SessionStats) -> std::io::Result<()> {
    let or_dash = |v: Option<&str>| v.unwrap_or("-").to_string();
    writeln!(
        out,
        "project {}  cwd {}  branch {}",
        or_dash(st.project.as_deref()),
        or_dash(st.cwd.as_deref()),
        or_dash(st.git_branch.as_deref())
    )?;
    if !st.models.is_empty() || !st.versions.is_empty() {
        writeln!(
            out,
            "models {}  claude code {}",
            if st.models.is_empty() {
                "-".into()
            } else {
                st.models.join(", ")
            },
            if st.versions.is_empty() {
                "-".into()
            } else {
                st.versions.join(", ")
            }
        )?;
    }
    if let Some(active) = st.active_line() {
        writeln!(out, "active {active}")?;
    }
    writeln!(out, "{}", st.counts_line())?;
    if let Some(tools) = st.tools_line() {
        writeln!(out, "tools {tools}")?;
    }
    if let Some(tokens) = st.tokens_line() {
        writeln!(out, "tokens {tokens}")?;
    }
    for f in &st.files {
        writeln!(out, "file {f}")?;
    }
    Ok(())
}

fn status_label(status: &NodeStatus) -> &'static str {
    match status {
        NodeStatus::Complete => "",
        NodeStatus::Streaming => " [streaming]",
        NodeStatus::Interrupted => " [interrupted]",
        NodeStatus::Failed { .. } => " [failed]",
    }
}

pub fn run(ctx: &Ctx, cmd: SessionsCmd) -> Result<ExitCode> {
    let store = ctx.open_store()?;
    match cmd {
        SessionsCmd::List {
            project,
            since,
            source,
            limit,
            json,
        } => {
            let filter = ListFilter::new(project, since.as_deref(), source.as_deref())?;
            let filtering =
                filter.project.is_some() || filter.since.is_some() || filter.source.is_some();
            let sessions = store.sessions()?;
            let mut rows = Vec::with_capacity(sessions.len());
            for s in &sessions {
                if rows.len() >= limit.unwrap_or(usize::MAX) {
                    break;
                }
                let project = session_project(s);
                if !filter.keeps(s, project.as_deref()) {
                    continue;
                }
                rows.push((s, store.session_node_count(s.id)?, project));
            }
            if json {
                let v: Vec<_> = rows.iter().map(|(s, n, _)| session_json(s, *n)).collect();
                print_json(&v)?;
            } else if rows.is_empty() && (filtering || !sessions.is_empty()) {
                println!("no sessions match");
            } else if rows.is_empty() {
                println!("no sessions yet — try: glassbox ask \"Why is the sky blue?\"");
            } else {
                let width = rows
                    .iter()
                    .map(|(_, _, p)| p.as_deref().map_or(1, |p| p.chars().count().min(24)))
                    .max()
                    .unwrap_or(1)
                    .max("PROJECT".len());
                println!(
                    "{:<36}  {:<16}  {:>5}  {:<11}  {:<width$}  TITLE",
                    "ID", "CREATED", "NODES", "SOURCE", "PROJECT"
                );
                for (s, n, p) in rows {
                    println!(
                        "{}  {}  {:>5}  {:<11}  {:<width$}  {}",
                        s.id,
                        s.created_at.format("%Y-%m-%d %H:%M"),
                        n,
                        s.source.as_str(),
                        excerpt(p.as_deref().unwrap_or("-"), 24),
                        excerpt(&export::listed_title(s), 60)
                    );
                }
            }
        }
        SessionsCmd::Show { id, json } => {
            let sid = store.resolve_session(&id)?;
            let Some(s) = store.session(sid)? else {
                bail!("session '{id}' not found")
            };
            // Heads only: no node body is read for the text form, and the JSON form writes
            // each node and edge as it reads it.
            let heads = store.session_heads(sid)?;
            let stats = SessionStats::of(&s, &heads);
            if json {
                let show = ShowJson {
                    edges: Streamed(&store, sid, |st, id, f| st.for_each_session_edge(id, f)),
                    meta: &s.meta,
                    nodes: Streamed(&store, sid, |st, id, f| st.for_each_session_node(id, f)),
                    runs: store.session_runs(sid)?,
                    session: session_json(&s, heads.len() as u64),
                    stats: &stats,
                };
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                serde_json::to_writer_pretty(&mut out, &show)?;
                writeln!(out)?;
                out.flush()?;
            } else {
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                writeln!(out, "{}  {}", s.id, export::listed_title(&s))?;
                if export::is_unfinished(&s) {
                    writeln!(
                        out,
                        "an import of this session was stopped partway: some of its nodes are \
                         missing; `glassbox import json FILE` of the same file replaces it"
                    )?;
                }
                writeln!(
                    out,
                    "source {}  created {}  provider {}  model {}",
                    s.source.as_str(),
                    s.created_at.format("%Y-%m-%d %H:%M:%S"),
                    s.provider.as_deref().unwrap_or("-"),
                    s.model.as_deref().unwrap_or("-")
                )?;
                print_stats(&mut out, &stats)?;
                let edges = store.session_edge_count(sid)?;
                writeln!(out, "{} nodes, {edges} edges", heads.len())?;
                for n in &heads {
                    // A pipeline layer says which layer it is, a tool call which tool, a
                    // user turn Claude Code wrote what it is.
                    let tag = n
                        .tag
                        .as_ref()
                        .map(|l| format!("[{l}] "))
                        .unwrap_or_default();
                    writeln!(
                        out,
                        "  {}  {:<16} {tag}{}{}",
                        n.id.short(),
                        n.kind.as_str(),
                        excerpt(&n.excerpt, 90),
                        status_label(&n.status)
                    )?;
                }
                drop(heads);
                for r in store.session_runs(sid)? {
                    let status = match &r.status {
                        crate::store::RunStatus::Running => "running".to_string(),
                        crate::store::RunStatus::Done => "done".to_string(),
                        crate::store::RunStatus::Interrupted => "interrupted".to_string(),
                        crate::store::RunStatus::Failed { error } => {
                            format!("failed: {}", excerpt(error, 60))
                        }
                    };
                    let kind = serde_json::to_value(r.kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    writeln!(out, "  run {}  {kind:<9} {status}", r.id.short())?;
                }
                let mut failed = None;
                store.for_each_session_edge(sid, |e| {
                    match writeln!(
                        out,
                        "  {} -{}-> {}",
                        e.src.short(),
                        e.kind.as_str(),
                        e.dst.short()
                    ) {
                        Ok(()) => Ok(ControlFlow::Continue(())),
                        Err(err) => {
                            failed = Some(err);
                            Ok(ControlFlow::Break(()))
                        }
                    }
                })?;
                if let Some(e) = failed {
                    return Err(e.into());
                }
                out.flush()?;
            }
        }
        SessionsCmd::Rename { id, title, json } => {
            if title.trim().is_empty() {
                bail!("a title needs at least one character that is not a space");
            }
            let sid = store.resolve_session(&id)?;
            let Some(s) = crate::engines::transcript::title::rename(&store, sid, &title)? else {
                bail!("session '{id}' not found")
            };
            if json {
                print_json(&json!({"id": s.id, "title": s.title}))?;
            } else {
                println!("renamed session {} to \"{}\"", s.id, s.title);
            }
        }
        SessionsCmd::Rm { id, yes, json } => {
            let sid = store.resolve_session(&id)?;
            let Some(s) = store.session(sid)? else {
                bail!("session '{id}' not found")
            };
            if !yes {
                if !std::io::stdin().is_terminal() {
                    bail!(
                        "refusing to delete session {sid} without --yes (stdin is not a terminal)"
                    );
                }
                eprint!(
                    "delete session {} \"{}\" and all its nodes? [y/N] ",
                    s.id,
                    excerpt(&s.title, 40)
                );
                std::io::stderr().flush()?;
                let mut answer = String::new();
                std::io::stdin().lock().read_line(&mut answer)?;
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    eprintln!("not deleted");
                    return Ok(ExitCode::from(1));
                }
            }
            store.write(|w| w.delete_session(sid))?;
            if json {
                print_json(&json!({"deleted": sid}))?;
            } else {
                println!("deleted session {sid}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `sessions show --json`: the fields in the order `json!` gives them (sorted), with the
/// nodes and edges written as they are read.
#[derive(serde::Serialize)]
struct ShowJson<'a> {
    edges: Streamed<'a, Edge>,
    meta: &'a serde_json::Map<String, serde_json::Value>,
    nodes: Streamed<'a, Node>,
    runs: Vec<crate::store::Run>,
    session: serde_json::Value,
    stats: &'a SessionStats,
}

/// A store walk over one session's records, serialised as a JSON array.
type Walk<T> = fn(
    &Store,
    SessionId,
    &mut dyn FnMut(T) -> Result<ControlFlow<()>, StoreError>,
) -> Result<(), StoreError>;

struct Streamed<'a, T>(&'a Store, SessionId, Walk<T>);

impl<T: serde::Serialize> serde::Serialize for Streamed<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = s.serialize_seq(None)?;
        let mut failed = None;
        (self.2)(
            self.0,
            self.1,
            &mut |item| match seq.serialize_element(&item) {
                Ok(()) => Ok(ControlFlow::Continue(())),
                Err(e) => {
                    failed = Some(e);
                    Ok(ControlFlow::Break(()))
                }
            },
        )
        .map_err(S::Error::custom)?;
        if let Some(e) = failed {
            return Err(e);
        }
        seq.end()
    }
}
