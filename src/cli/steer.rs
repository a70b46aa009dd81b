//! `glassbox steer`: expand, merge, challenge or refork a finished fork run.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{ArgGroup, Args};

use super::Ctx;
use super::fork::{engine, footer, print_branch, print_comparison, progress, with_ids};
use crate::engines::fork::{ForkStyle, SteerAction, SteerResult};
use crate::store::{RunId, Store};

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("action").required(true).args(["expand", "merge", "challenge", "refork"])))]
pub struct SteerArgs {
    /// The fork, debate or steer run to steer (id or unique prefix).
    pub run: String,
    /// Expand this branch in depth at max effort (--text: a direction).
    #[arg(long, value_enum, value_name = "STYLE")]
    pub expand: Option<ForkStyle>,
    /// Merge these branches into one approach (--text: a focus area).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "A,B")]
    pub merge: Option<Vec<ForkStyle>>,
    /// Challenge this branch with the counter-argument in --text.
    #[arg(long, value_enum, value_name = "STYLE")]
    pub challenge: Option<ForkStyle>,
    /// Run every branch again with the new context in --text.
    #[arg(long)]
    pub refork: bool,
    /// Direction, focus area, counter-argument or new context.
    #[arg(long, value_name = "T")]
    pub text: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A full run id, or a unique prefix or suffix of one in any session.
fn resolve_run(store: &Store, text: &str) -> Result<RunId> {
    if let Ok(id) = text.parse::<RunId>() {
        return Ok(id);
    }
    let want: String = text
        .chars()
        .filter(|c| *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    if want.len() < 4 || !want.chars().all(|c| c.is_ascii_hexdigit()) {
        bail!("run '{text}' not found (give a full id or at least 4 hex digits)");
    }
    let mut found = None;
    for s in store.sessions()? {
        for r in store.session_runs(s.id)? {
            let hex = r.id.0.simple().to_string();
            if hex.starts_with(&want) || hex.ends_with(&want) {
                if found.is_some() {
                    bail!("'{text}' matches more than one run; give more characters");
                }
                found = Some(r.id);
            }
        }
    }
    found.ok_or_else(|| anyhow::anyhow!("run '{text}' not found"))
}

pub async fn run(ctx: &Ctx, args: SteerArgs) -> Result<ExitCode> {
    let text = args.text.clone().filter(|t| !t.trim().is_empty());
    let action = if let Some(style) = args.expand {
        SteerAction::Expand {
            style,
            direction: text,
        }
    } else if let Some(styles) = args.merge.clone() {
        SteerAction::Merge {
            styles,
            focus_area: text,
        }
    } else if let Some(style) = args.challenge {
        let Some(challenge) = text else {
            bail!("--challenge needs the counter-argument in --text");
        };
        SteerAction::Challenge { style, challenge }
    } else {
        let Some(new_context) = text else {
            bail!("--refork needs the new context in --text");
        };
        SteerAction::Refork { new_context }
    };
    let (engine, store, _cancel) = engine(ctx, None, None)?;
    let source = resolve_run(&store, &args.run)?;
    let (tx, printer) = progress(false);
    let out = engine.steer(source, action, &tx).await;
    drop(tx);
    let _ = printer.await;
    let out = out?;
    if args.json {
        super::print_json(&with_ids(&out)?)?;
    } else {
        match &out.data {
            SteerResult::Expand { branch } | SteerResult::Challenge { branch, .. } => {
                print_branch(branch)
            }
            SteerResult::Merge { styles, merged, .. } => {
                let names: Vec<&str> = styles.iter().map(|s| s.as_str()).collect();
                println!("## merged {}", names.join(" + "));
                for (s, name) in merged.sources.iter().zip(&names) {
                    println!("  {} = {name} ({})", s.letter, s.node.short());
                }
                for c in &merged.claims {
                    println!("  - {}  [{}]", c.text, merged.refs(c));
                }
            }
            SteerResult::Refork { result, .. } => {
                for b in &result.branches {
                    print_branch(b);
                }
                print_comparison(&result.comparison);
            }
        }
        footer(out.session, out.run);
    }
    let ok = match &out.data {
        SteerResult::Expand { branch } | SteerResult::Challenge { branch, .. } => branch.ok(),
        SteerResult::Merge { .. } => true,
        SteerResult::Refork { result, .. } => result.branches.iter().any(|b| b.ok()),
    };
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
