//! `glassbox diff A B`: where two lines of reasoning part, step by step; `glassbox merge A B
//! …`: one synthesis whose every claim names the steps it came from.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use super::ask::Sections;
use super::got::ctrl_c_token;
use super::{Ctx, print_json, working};
use crate::config::providers;
use crate::engines::diff::{Diff, DiffProgress, Label, MergeRequest, Merged, Side};
use crate::engines::memory::embed::Embedder;
use crate::store::{NodeId, Store};

#[derive(Debug, Args)]
#[command(after_help = "\
A and B are nodes (id or unique prefix): thinking, fork branches, pipeline layers, imported
assistant turns. Their steps are aligned in order by similarity (embeddings when
[embeddings] loads, else word overlap); identical steps are `same`, and the model labels
each other pair `same`, `differs` or `contradicts` (cached, so a second diff asks nothing).
Steps one side alone has are `only_a` / `only_b`. Thresholds: [diff] in the config.

Examples:
  glassbox diff 1a2b3c4d 5e6f7a8b
  glassbox diff 1a2b3c4d 5e6f7a8b --json | jq '.pairs[] | select(.label != \"same\")'
  glassbox diff 1a2b3c4d 5e6f7a8b --no-model       # labels from similarity alone")]
pub struct DiffArgs {
    /// The first line of reasoning (node id or unique prefix).
    pub a: String,
    /// The second line of reasoning.
    pub b: String,
    /// Label pairs by similarity alone: no model call.
    #[arg(long)]
    pub no_model: bool,
    /// Print the diff as JSON: both sides' steps and the aligned pairs with their labels,
    /// similarity and step indices.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "\
The merge is a `synthesis` node in the first node's session that `aggregates` every source;
each claim names the steps it came from (A2 = line A, step 2) or says `new`. The claims
and their provenance are in the node's meta; `export -f markdown` shows them as footnotes.
`steer RUN --merge A,B` merges fork branches the same way.

Examples:
  glassbox merge 1a2b3c4d 5e6f7a8b
  glassbox merge 1a2b3c4d 5e6f7a8b 9c0d1e2f --focus \"cost over five years\" --json")]
pub struct MergeArgs {
    /// Two or more nodes to merge (id or unique prefix).
    #[arg(required = true, num_args = 2..)]
    pub nodes: Vec<String>,
    /// What the merge should focus on.
    #[arg(long, value_name = "TEXT")]
    pub focus: Option<String>,
    /// Print the merge as JSON: the node, its sources with their steps, the claims with
    /// their provenance.
    #[arg(long)]
    pub json: bool,
}

fn resolve(store: &Store, texts: &[&str]) -> Result<Vec<NodeId>> {
    texts.iter().map(|t| Ok(store.resolve_node(t)?)).collect()
}

fn embedder(ctx: &Ctx) -> Option<std::sync::Arc<dyn Embedder>> {
    match ctx.embedder() {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!("steps are compared by word overlap: {e}");
            None
        }
    }
}

pub async fn diff(ctx: &Ctx, args: DiffArgs) -> Result<ExitCode> {
    let store = ctx.open_store()?;
    let ids = resolve(&store, &[&args.a, &args.b])?;
    let cfg = &ctx.loaded.config;
    let built = if args.no_model {
        None
    } else {
        Some(providers::build(ctx)?)
    };
    let engine = providers::diff_engine(cfg, &ctx.prompts(), built.as_ref(), store, embedder(ctx));
    let cancel = ctrl_c_token();
    let spinner = working("aligning steps", args.json);
    let progress = {
        let spinner = spinner.clone();
        move |p: DiffProgress| {
            if let (Some(s), DiffProgress::Judging { done, total }) = (&spinner, p) {
                s.set_message(format!("labelling pair {} of {total}…", done + 1));
            }
        }
    };
    let out = engine.diff(ids[0], ids[1], &progress, &cancel).await;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let diff = out?;
    if args.json {
        print_json(&diff)?;
    } else {
        let out = Sections::new(cancel);
        out.write(&render_diff(&diff, width(), out.styled));
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn merge(ctx: &Ctx, args: MergeArgs) -> Result<ExitCode> {
    let store = ctx.open_store()?;
    let texts: Vec<&str> = args.nodes.iter().map(String::as_str).collect();
    let nodes = resolve(&store, &texts)?;
    if nodes.len() < 2 {
        bail!("merge needs two or more nodes");
    }
    let built = providers::build(ctx)?;
    let merger = providers::merger(&ctx.loaded.config, &ctx.prompts(), &built, store);
    let cancel = ctrl_c_token();
    let spinner = working("merging", args.json);
    let req = MergeRequest {
        nodes,
        focus: args.focus,
        meta: Default::default(),
    };
    let out = merger.merge(req, &cancel).await;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let merged = out?;
    if args.json {
        print_json(&merged)?;
    } else {
        let out = Sections::new(cancel);
        out.write(&render_merge(&merged, &out));
    }
    Ok(ExitCode::SUCCESS)
}

/// The terminal's width, or 100 columns when stdout is not a terminal.
fn width() -> usize {
    let cols = std::io::stdout()
        .is_terminal()
        .then(|| crossterm::terminal::size().ok())
        .flatten()
        .map_or(100, |(c, _)| usize::from(c));
    cols.clamp(60, 200)
}

fn marker(l: Label) -> (&'static str, &'static str) {
    match l {
        Label::Same => ("=", "32"),
        Label::Differs => ("~", "33"),
        Label::Contradicts => ("!", "31"),
        Label::OnlyA => ("<", "36"),
        Label::OnlyB => (">", "36"),
    }
}

/// Words of `text` in lines of at most `width` characters (a longer word is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: String = word.to_string();
        while word.chars().count() > width {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            let head: String = word.chars().take(width).collect();
            word = word.chars().skip(width).collect();
            lines.push(head);
        }
        let need = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
        if need > width && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

fn side_title(s: &Side) -> String {
    format!(
        "{} {} · {} steps",
        s.kind.as_str(),
        s.node.short(),
        s.steps.len()
    )
}

/// The two-column view: per row its label, then A's step on the left and B's on the right.
pub fn render_diff(d: &Diff, width: usize, styled: bool) -> String {
    let col = (width.saturating_sub(5)) / 2;
    let paint = |code: &str, s: &str| {
        if styled {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    out.push_str(&format!(
        "A: {:<col$} │ B: {}\n",
        side_title(&d.a),
        side_title(&d.b),
        col = col.saturating_sub(3)
    ));
    let judged = d.judge.as_deref().unwrap_or("similarity only");
    out.push_str(&paint(
        "2",
        &format!("compared by {} · labels: {judged}\n", d.measure),
    ));
    for p in &d.pairs {
        let (m, code) = marker(p.label);
        let mut head = format!("{m} {}", p.label.as_str());
        if let Some(s) = p.similarity {
            head.push_str(&format!(" ({s:.2})"));
        }
        if let Some(r) = &p.reason {
            head.push_str(&format!(" — {r}"));
        }
        out.push('\n');
        out.push_str(&paint(code, &head));
        out.push('\n');
        let cell = |side: &Side, i: Option<u32>, prefix: char| -> Vec<String> {
            i.and_then(|i| side.steps.iter().find(|s| s.index == i))
                .map(|s| wrap(&format!("{prefix}{} {}", s.index + 1, s.text), col))
                .unwrap_or_default()
        };
        let (left, right) = (cell(&d.a, p.a, 'A'), cell(&d.b, p.b, 'B'));
        for k in 0..left.len().max(right.len()) {
            let l = left.get(k).map_or("", String::as_str);
            let r = right.get(k).map_or("", String::as_str);
            let pad = col.saturating_sub(l.chars().count());
            let row = format!("  {l}{} │ {r}", " ".repeat(pad));
            out.push_str(row.trim_end());
            out.push('\n');
        }
    }
    out.push_str(&format!("\n{}\n", d.summary()));
    out
}

fn render_merge(m: &Merged, out: &Sections) -> String {
    let mut s = format!(
        "merged into synthesis {} (session {})\n",
        m.node.short(),
        m.session.short()
    );
    for src in &m.sources {
        s.push_str(&out.dim(&format!(
            "  {} = {} {} · {} steps\n",
            src.letter,
            src.kind.as_str(),
            src.node.short(),
            src.steps.len()
        )));
    }
    s.push('\n');
    for (i, c) in m.claims.iter().enumerate() {
        s.push_str(&format!("{}. {}\n", i + 1, c.text));
        s.push_str(&out.dim(&format!("   ← {}\n", m.refs(c))));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_keeps_words_whole_and_cuts_only_overlong_ones() {
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
        assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
        assert_eq!(wrap("", 5), [""]);
    }
}
