//! `glassbox sessions list|show|rm`.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Subcommand;
use serde_json::json;

use super::{Ctx, print_json};
use crate::store::{Node, NodeStatus, Session};

#[derive(Debug, Subcommand)]
pub enum SessionsCmd {
    /// List sessions, newest first.
    List {
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
    json!({
        "id": s.id,
        "title": s.title,
        "created": s.created_at,
        "updated": s.updated_at,
        "source": s.source.as_str(),
        "provider": s.provider,
        "model": s.model,
        "nodes": node_count,
    })
}

/// The first line of `text`, cut to `max` characters.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

fn status_label(n: &Node) -> &'static str {
    match n.status {
        NodeStatus::Complete => "",
        NodeStatus::Streaming => " [streaming]",
        NodeStatus::Interrupted => " [interrupted]",
        NodeStatus::Failed { .. } => " [failed]",
    }
}

pub fn run(ctx: &Ctx, cmd: SessionsCmd) -> Result<ExitCode> {
    let store = ctx.open_store()?;
    match cmd {
        SessionsCmd::List { json } => {
            let sessions = store.sessions()?;
            let mut rows = Vec::with_capacity(sessions.len());
            for s in &sessions {
                rows.push((s, store.session_node_count(s.id)?));
            }
            if json {
                let v: Vec<_> = rows.iter().map(|(s, n)| session_json(s, *n)).collect();
                print_json(&v)?;
            } else if rows.is_empty() {
                println!("no sessions yet — try: glassbox ask \"Why is the sky blue?\"");
            } else {
                println!(
                    "{:<36}  {:<16}  {:>5}  {:<11}  TITLE",
                    "ID", "CREATED", "NODES", "SOURCE"
                );
                for (s, n) in rows {
                    println!(
                        "{}  {}  {:>5}  {:<11}  {}",
                        s.id,
                        s.created_at.format("%Y-%m-%d %H:%M"),
                        n,
                        s.source.as_str(),
                        excerpt(&s.title, 60)
                    );
                }
            }
        }
        SessionsCmd::Show { id, json } => {
            let sid = store.resolve_session(&id)?;
            let Some(s) = store.session(sid)? else {
                bail!("session '{id}' not found")
            };
            let nodes = store.session_nodes(sid)?;
            let edges = store.session_edges(sid)?;
            if json {
                print_json(&json!({
                    "session": session_json(&s, nodes.len() as u64),
                    "meta": s.meta,
                    "nodes": nodes,
                    "edges": edges,
                    "runs": store.session_runs(sid)?,
                }))?;
            } else {
                println!("{}  {}", s.id, s.title);
                println!(
                    "source {}  created {}  provider {}  model {}",
                    s.source.as_str(),
                    s.created_at.format("%Y-%m-%d %H:%M:%S"),
                    s.provider.as_deref().unwrap_or("-"),
                    s.model.as_deref().unwrap_or("-")
                );
                println!("{} nodes, {} edges", nodes.len(), edges.len());
                for n in &nodes {
                    // A pipeline layer says which layer it is.
                    let layer = n
                        .meta
                        .get("layer")
                        .and_then(|v| v.as_str())
                        .filter(|_| n.kind == crate::store::NodeType::PipelineLayer)
                        .map(|l| format!("[{l}] "))
                        .unwrap_or_default();
                    println!(
                        "  {}  {:<16} {layer}{}{}",
                        n.id.short(),
                        n.kind.as_str(),
                        excerpt(&n.text, 90),
                        status_label(n)
                    );
                }
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
                    println!("  run {}  {kind:<9} {status}", r.id.short());
                }
                for e in &edges {
                    println!(
                        "  {} -{}-> {}",
                        e.src.short(),
                        e.kind.as_str(),
                        e.dst.short()
                    );
                }
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
