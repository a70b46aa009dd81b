//! `glassbox search QUERY`: full-text search over every node, ranked, with snippets.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use serde_json::json;

use super::{Ctx, print_json};
use crate::store::{SearchHit, SessionId};

#[derive(Debug, Args)]
#[command(
    after_help = "A node matches when it holds any of the words; more and rarer words rank higher.\nExit status is 1 when nothing matches.\n\nExamples:\n  glassbox search \"race condition\"\n  glassbox search tokenizer --session 3f2a --json"
)]
pub struct SearchArgs {
    /// Words to look for (case-insensitive; words shorter than 2 characters are ignored).
    #[arg(required = true, num_args = 1..)]
    pub query: Vec<String>,
    /// Only this session (id, or a unique prefix or suffix of at least 4 hex digits).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// At most this many results.
    #[arg(long, short = 'n', default_value_t = 20, value_name = "N")]
    pub limit: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn highlighted(hit: &SearchHit, styled: bool) -> String {
    if !styled {
        return hit.snippet.clone();
    }
    let mut out = String::with_capacity(hit.snippet.len() + 16);
    let mut at = 0;
    for &(s, e) in &hit.highlights {
        if s < at
            || e > hit.snippet.len()
            || !hit.snippet.is_char_boundary(s)
            || !hit.snippet.is_char_boundary(e)
        {
            continue;
        }
        out.push_str(&hit.snippet[at..s]);
        out.push_str("\x1b[1;33m");
        out.push_str(&hit.snippet[s..e]);
        out.push_str("\x1b[0m");
        at = e;
    }
    out.push_str(&hit.snippet[at..]);
    out
}

pub fn run(ctx: &Ctx, args: SearchArgs) -> Result<ExitCode> {
    let query = args.query.join(" ");
    if crate::store::search::tokenize(&query).next().is_none() {
        bail!(
            "the query '{query}' has no searchable word (words need at least 2 letters or digits)"
        );
    }
    let store = ctx.open_store()?;
    let session = args
        .session
        .as_deref()
        .map(|s| store.resolve_session(s))
        .transpose()?;
    let hits = store.search(&query, session, args.limit)?;
    let mut titles: HashMap<SessionId, String> = HashMap::new();
    for h in &hits {
        if let std::collections::hash_map::Entry::Vacant(slot) = titles.entry(h.session) {
            slot.insert(
                store
                    .session(h.session)?
                    .map(|s| s.title)
                    .unwrap_or_default(),
            );
        }
    }
    if args.json {
        let rows: Vec<_> = hits
            .iter()
            .map(|h| {
                json!({
                    "node": h.node,
                    "session": h.session,
                    "session_title": titles.get(&h.session),
                    "kind": h.kind.as_str(),
                    "score": h.score,
                    "snippet": h.snippet,
                    "highlights": h.highlights,
                })
            })
            .collect();
        print_json(&rows)?;
    } else if hits.is_empty() {
        eprintln!("no matches for '{query}'");
    } else {
        let styled = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        for h in &hits {
            let title = titles
                .get(&h.session)
                .map(|t| super::sessions::excerpt(t, 50))
                .unwrap_or_default();
            println!(
                "{:>6.2}  {:<10} node {}  session {}  {}",
                h.score,
                h.kind.as_str(),
                h.node,
                h.session.short(),
                title
            );
            println!("        {}", highlighted(h, styled));
        }
    }
    Ok(if hits.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
