//! `glassbox export SESSION --format md|json|dot|mermaid|prm800k|processbench [-o FILE]`.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use serde_json::Value;

use super::{Ctx, INTERRUPTED};
use crate::engines::transcript::drawing::{self, Edges};
use crate::engines::transcript::export::{self, ExportError, SessionExport, Written};
use crate::engines::verify;
use crate::store::{SessionId, Store};

/// Bytes buffered before a streamed export writes to its output.
const OUT_BUFFER: usize = 1 << 20;

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
    /// Step labels of the session's verifications, PRM800K-style JSON Lines: one chain
    /// per line, each step rated -1/0/1 (a human checkpoint overrules the model).
    Prm800k,
    /// Step labels of the session's verifications, a ProcessBench-style JSON array:
    /// {id, generator, problem, steps, label}, label = first wrong step or -1.
    Processbench,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Step labels (prm800k, processbench) come from `glassbox verify` runs in the \
session, with human verdicts from `glassbox checkpoint` on the verified steps taking \
precedence over the model's.\n\n\
Examples:\n  glassbox export 3f2a --format json -o session.json\n  glassbox export 3f2a --format dot | dot -Tsvg > graph.svg\n  glassbox export 3f2a --format mermaid --edges tree > graph.mmd\n  glassbox export 3f2a --format prm800k -o labels.jsonl\n  glassbox export 3f2a --format processbench -o labels.json"
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
    /// The edges a graph (dot, mermaid) draws: `all` lays out the reading order and draws
    /// the other edges over it, a compaction's as one range; `tree` only the reading order.
    #[arg(long, value_enum, default_value = "all")]
    pub edges: EdgeChoice,
}

/// `--edges` of `export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EdgeChoice {
    /// Parent → child edges only.
    Tree,
    /// Every edge (the non-tree ones do not move the layout).
    All,
}

impl From<EdgeChoice> for Edges {
    fn from(c: EdgeChoice) -> Self {
        match c {
            EdgeChoice::Tree => Edges::Tree,
            EdgeChoice::All => Edges::All,
        }
    }
}

/// The shapes step labels are exported in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Labels {
    Prm800k,
    ProcessBench,
}

/// The step labels of a session and a note on what they hold.
fn step_labels(store: &Store, sid: SessionId, shape: Labels) -> Result<(String, String)> {
    let records = match shape {
        Labels::Prm800k => verify::prm800k(store, sid)?,
        Labels::ProcessBench => verify::processbench(store, sid)?,
    };
    let records = match records {
        Value::Array(a) => a,
        other => vec![other],
    };
    if records.is_empty() {
        bail!(
            "session {sid} has no verified steps; run `glassbox verify --node ID` (or \
             `--steps-file FILE`) on it first"
        );
    }
    let steps: usize = records
        .iter()
        .map(|r| {
            let steps = match shape {
                Labels::Prm800k => &r["label"]["steps"],
                Labels::ProcessBench => &r["steps"],
            };
            steps.as_array().map_or(0, Vec::len)
        })
        .sum();
    let note = format!("{} chain(s), {steps} step(s)", records.len());
    let text = match shape {
        // PRM800K ships as JSON Lines: one labelled chain per line.
        Labels::Prm800k => {
            let mut text = String::new();
            for r in &records {
                text.push_str(&serde_json::to_string(r)?);
                text.push('\n');
            }
            text
        }
        // ProcessBench ships as one JSON array per file.
        Labels::ProcessBench => {
            let mut text = serde_json::to_string_pretty(&Value::Array(records))?;
            text.push('\n');
            text
        }
    };
    Ok((text, note))
}

/// The session rendered by `render`, and a note on its size.
fn graph(
    store: &Store,
    sid: SessionId,
    render: impl Fn(&SessionExport) -> Result<String>,
) -> Result<(String, String)> {
    let data = export::collect(store, sid)?;
    let note = format!("{} nodes, {} edges", data.nodes.len(), data.edges.len());
    Ok((render(&data)?, note))
}

pub fn run(ctx: &Ctx, args: ExportArgs) -> Result<ExitCode> {
    let store = ctx.open_store()?;
    let sid = store.resolve_session(&args.session)?;
    let edges = Edges::from(args.edges);
    let (text, note) = match args.format {
        ExportFormat::Md => return stream(&args, |out| export::write_markdown(&store, sid, out)),
        ExportFormat::Json => return stream(&args, |out| export::write_json(&store, sid, out)),
        ExportFormat::Dot => graph(&store, sid, |d| Ok(drawing::to_dot(d, edges)))?,
        ExportFormat::Mermaid => graph(&store, sid, |d| Ok(drawing::to_mermaid(d, edges)))?,
        ExportFormat::Prm800k => step_labels(&store, sid, Labels::Prm800k)?,
        ExportFormat::Processbench => step_labels(&store, sid, Labels::ProcessBench)?,
    };
    match &args.output {
        Some(path) => {
            let out = Output::start(path)?;
            let written = out.file().write_all(text.as_bytes());
            out.finish(written.map_err(ExportError::Write))?;
            eprintln!("wrote {} ({note})", path.display());
        }
        None => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error.
            let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An export's output file (`-o`) while it is written: the export goes to a hidden file
/// beside it (`.NAME.partial`), renamed over it once whole, so a failed, stopped or killed
/// export never leaves a cut file under the name asked for, nor costs the file that was
/// there. Ctrl-C meanwhile removes the partial file and exits 130.
struct Output<'a> {
    path: &'a Path,
    partial: PathBuf,
    file: std::fs::File,
    listener: tokio::task::JoinHandle<()>,
}

impl<'a> Output<'a> {
    fn start(path: &'a Path) -> Result<Self> {
        let shown = path.display();
        if path.is_dir() || path.as_os_str().as_encoded_bytes().ends_with(b"/") {
            bail!("cannot write {shown}: it names a folder; give a file name");
        }
        let name = path
            .file_name()
            .with_context(|| format!("cannot write {shown}: give a file name"))?;
        let partial = path.with_file_name(format!(".{}.partial", name.to_string_lossy()));
        let listener = super::on_ctrl_c({
            let (partial, shown) = (partial.clone(), path.display().to_string());
            move |_| {
                let _ = std::fs::remove_file(&partial);
                eprintln!("glassbox: interrupted; {shown} was not written");
                std::process::exit(INTERRUPTED);
            }
        })?;
        let file = match std::fs::File::create(&partial) {
            Ok(file) => file,
            Err(e) => {
                listener.abort();
                return Err(anyhow::Error::new(e).context(format!("cannot write {shown}")));
            }
        };
        Ok(Self {
            path,
            partial,
            file,
            listener,
        })
    }

    fn file(&self) -> &std::fs::File {
        &self.file
    }

    /// Puts the export in place if it was `written` whole; else removes it and returns the
    /// error.
    fn finish<T>(self, written: Result<T, ExportError>) -> Result<T> {
        self.listener.abort();
        // Not synced first: this guards against the process stopping, not the machine (the
        // store holds the session either way), and a sync would cost an export of hundreds
        // of megabytes a good part of its time.
        let placed = written.and_then(|w| {
            std::fs::rename(&self.partial, self.path)?;
            Ok(w)
        });
        placed.map_err(|e| {
            let _ = std::fs::remove_file(&self.partial);
            match e {
                ExportError::Write(e) => {
                    anyhow::Error::new(e).context(format!("cannot write {}", self.path.display()))
                }
                ExportError::Read(e) => e.into(),
            }
        })
    }
}

/// Runs an export that writes as it reads the store into the output file ([`Output`]) or
/// stdout; a closed stdout pipe (`| head`) is not an error.
fn stream(
    args: &ExportArgs,
    write: impl FnOnce(&mut BufWriter<Box<dyn Write + '_>>) -> Result<Written, ExportError>,
) -> Result<ExitCode> {
    match &args.output {
        Some(path) => {
            let target = Output::start(path)?;
            let mut out = BufWriter::with_capacity(
                OUT_BUFFER,
                Box::new(target.file()) as Box<dyn Write + '_>,
            );
            let written = write(&mut out).and_then(|w| {
                out.flush()?;
                Ok(w)
            });
            drop(out);
            let w = target.finish(written)?;
            eprintln!(
                "wrote {} ({} nodes, {} edges)",
                path.display(),
                w.nodes,
                w.edges
            );
        }
        None => {
            let stdout = std::io::stdout().lock();
            let mut out = BufWriter::with_capacity(OUT_BUFFER, Box::new(stdout) as Box<dyn Write>);
            let written = write(&mut out).and_then(|w| {
                out.flush()?;
                Ok(w)
            });
            match written {
                Ok(_) => {}
                Err(ExportError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(ExportError::Write(e)) => {
                    return Err(anyhow::Error::new(e).context("cannot write to stdout"));
                }
                Err(ExportError::Read(e)) => return Err(e.into()),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
