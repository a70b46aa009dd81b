//! `glassbox export SESSION --format md|json|dot|mermaid [-o FILE]`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use super::Ctx;
use crate::engines::transcript::export;

/// Output formats of `export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// A readable Markdown transcript.
    Md,
    /// Everything the session owns; `glassbox import json` reads it back.
    Json,
    /// The node graph for Graphviz.
    Dot,
    /// The node graph as a Mermaid flowchart.
    Mermaid,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  glassbox export 3f2a --format json -o session.json\n  glassbox export 3f2a --format dot | dot -Tsvg > graph.svg"
)]
pub struct ExportArgs {
    /// Session id, or a unique prefix or suffix of at least 4 hex digits.
    pub session: String,
    /// Output format.
    #[arg(long, short, value_enum, default_value = "md")]
    pub format: ExportFormat,
    /// Write to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(ctx: &Ctx, args: ExportArgs) -> Result<ExitCode> {
    let store = ctx.open_store()?;
    let sid = store.resolve_session(&args.session)?;
    let data = export::collect(&store, sid)?;
    let text = match args.format {
        ExportFormat::Md => export::to_markdown(&data),
        ExportFormat::Json => export::to_json(&data)?,
        ExportFormat::Dot => export::to_dot(&data),
        ExportFormat::Mermaid => export::to_mermaid(&data),
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!(
                "wrote {} ({} nodes, {} edges)",
                path.display(),
                data.nodes.len(),
                data.edges.len()
            );
        }
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error.
            let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
        }
    }
    Ok(ExitCode::SUCCESS)
}
