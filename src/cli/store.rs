//! `glassbox store copy`: copies a whole store (every table, row by row) into an empty one,
//! from the redb file to PostgreSQL, back, or between two of either.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use super::{Ctx, print_json};
use crate::config::StoreTarget;

#[derive(Debug, Subcommand)]
pub enum StoreCmd {
    /// Copy every session, node, memory and index of a store into an empty store: the
    /// configured store (or --from) into --to, a PostgreSQL URL or a redb file path.
    #[command(
        after_help = "Examples:\n  glassbox store copy --to postgres://me@db.example/glassbox\n  glassbox store copy --from postgres://me@db.example/glassbox --to ~/backup.redb"
    )]
    Copy(CopyArgs),
}

#[derive(Debug, Args)]
pub struct CopyArgs {
    /// Where to copy to: postgres://USER@HOST/DATABASE (the database must exist) or the path
    /// of a redb file (created when missing). It must hold no session and no node.
    #[arg(long, value_name = "URL|PATH")]
    pub to: String,
    /// Where to copy from (default: the configured store, see --store).
    #[arg(long, value_name = "URL|PATH")]
    pub from: Option<String>,
    /// Print JSON ({from, to, tables: {NAME: rows}, rows, seconds}) instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(ctx: &Ctx, cmd: StoreCmd) -> Result<ExitCode> {
    match cmd {
        StoreCmd::Copy(args) => copy(ctx, args),
    }
}

/// Whether two targets are the same store (the same file, or the same URL).
fn same_store(a: &StoreTarget, b: &StoreTarget) -> bool {
    match (a, b) {
        (StoreTarget::File(x), StoreTarget::File(y)) => {
            let canon = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or(p.to_path_buf());
            canon(x) == canon(y)
        }
        (StoreTarget::Postgres(x), StoreTarget::Postgres(y)) => x.trim() == y.trim(),
        _ => false,
    }
}

fn copy(ctx: &Ctx, args: CopyArgs) -> Result<ExitCode> {
    let from = match &args.from {
        Some(value) => StoreTarget::parse_arg(value)?,
        None => ctx.store_target()?,
    };
    let to = StoreTarget::parse_arg(&args.to)?;
    if same_store(&from, &to) {
        bail!("cannot copy {} into itself", from.label());
    }
    if let StoreTarget::File(path) = &from
        && !path.exists()
    {
        bail!("there is no store to copy at {}", path.display());
    }
    let source = match &args.from {
        Some(_) => from.open(crate::store::CACHE_BYTES)?,
        None => ctx.open_store()?,
    };
    if let StoreTarget::File(path) = &to
        && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    // A new redb file that a failed copy leaves half-written is removed; a database or a
    // file that was there keeps what it had (the copy refuses a target that is not empty).
    let new_file = match &to {
        StoreTarget::File(path) if !path.exists() => Some(path.clone()),
        _ => None,
    };
    let target = to.open(crate::store::CACHE_BYTES)?;

    let started = Instant::now();
    let tty = std::io::stderr().is_terminal();
    let spinner = tty.then(|| {
        let s = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            s.set_style(style);
        }
        s.enable_steady_tick(std::time::Duration::from_millis(120));
        s
    });
    let mut current = String::new();
    let counts: BTreeMap<String, u64> = source
        .copy_into(&target, |table, rows| {
            if let Some(s) = &spinner {
                s.set_message(format!("copying {table}: {rows} rows"));
            } else if table != current {
                eprintln!("copying {table}");
            }
            if table != current {
                current = table.to_string();
            }
        })
        .map_err(|e| {
            drop(target);
            let removed = new_file
                .as_ref()
                .is_some_and(|path| std::fs::remove_file(path).is_ok());
            let note = if removed {
                " (the partial copy was removed)"
            } else {
                ""
            };
            anyhow::anyhow!("copying {} into {}: {e}{note}", from.label(), to.label())
        })?;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let seconds = started.elapsed().as_secs_f64();
    let rows: u64 = counts.values().sum();
    if args.json {
        print_json(&json!({
            "from": from.label(),
            "from_backend": from.backend_name(),
            "to": to.label(),
            "to_backend": to.backend_name(),
            "tables": counts,
            "rows": rows,
            "seconds": seconds,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("copied {} -> {}", from.label(), to.label());
    let width = counts.keys().map(|k| k.chars().count()).max().unwrap_or(0);
    for (table, n) in &counts {
        println!("  {table:<width$}  {n}");
    }
    println!("{rows} rows in {} tables in {seconds:.1} s", counts.len());
    Ok(ExitCode::SUCCESS)
}
