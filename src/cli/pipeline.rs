//! `glassbox ask --mode …` / `--resume RUN`: a DeepEx pipeline, headless. Each layer streams
//! under its own heading (the three parallel solvers are printed whole as each finishes, so
//! their text does not interleave); `--json` prints the engine's events, one per line.

use std::collections::HashMap;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Ctx;
use super::ask::{AskArgs, Sections, read_question};
use super::got::ctrl_c_token;
use crate::config::providers;
use crate::engines::pipeline::{
    Layer, LayerState, Mode, PipelineError, PipelineEvent, PipelineRequest,
};

/// Prints pipeline events as text.
struct Printer {
    out: Sections,
    answer_only: bool,
    /// The layer whose text is being streamed, and whether its thinking or its answer.
    current: Option<(Layer, bool)>,
    /// Parallel layers' text, printed when each finishes.
    held: HashMap<Layer, String>,
}

impl Printer {
    fn event(&mut self, ev: &PipelineEvent) {
        if self.answer_only {
            if let PipelineEvent::FinalChunk { content } = ev {
                self.out.write(content);
            }
            return;
        }
        match ev {
            PipelineEvent::ModeSelected { mode } => {
                self.out.write(&self.out.dim(&format!("mode: {mode}\n")));
            }
            PipelineEvent::LayerStart { layer, .. } if layer.parallel_group().is_none() => {
                self.out.heading(layer.label());
                self.current = Some((*layer, false));
            }
            PipelineEvent::LayerChunk {
                layer,
                content,
                thinking,
                parallel_group,
            } => {
                if parallel_group.is_some() {
                    if !thinking {
                        self.held.entry(*layer).or_default().push_str(content);
                    }
                } else if !layer.structured() {
                    if self.current == Some((*layer, false)) && *thinking {
                        self.current = Some((*layer, true));
                        if !self.out.styled {
                            self.out.write("(thinking)\n");
                        }
                    } else if self.current == Some((*layer, true)) && !thinking {
                        self.current = Some((*layer, false));
                        self.out.write(if self.out.styled {
                            "\n"
                        } else {
                            "\n(answer)\n"
                        });
                    }
                    let text = if *thinking {
                        self.out.dim(content)
                    } else {
                        content.clone()
                    };
                    self.out.write(&text);
                }
            }
            PipelineEvent::LayerArtifact { artifact, .. } => {
                self.out.write(&artifact_lines(artifact));
            }
            PipelineEvent::LayerComplete {
                layer,
                state,
                error,
                resumed,
                ..
            } => {
                if layer.parallel_group().is_some() {
                    self.out.heading(layer.label());
                    let text = self.held.remove(layer).unwrap_or_default();
                    self.out.write(text.trim_end());
                    self.out.write("\n");
                } else if !layer.structured() {
                    self.out.write("\n");
                }
                if *resumed {
                    self.out
                        .write(&self.out.dim("(finished before; not run again)\n"));
                }
                if *state == LayerState::Failed {
                    let why = error.as_deref().unwrap_or("unreadable answer");
                    eprintln!("glassbox: warning: layer {} failed: {why}", layer.as_str());
                }
            }
            PipelineEvent::Escalation { content } => {
                eprintln!("glassbox: escalating to ultra-deep: {content}");
            }
            PipelineEvent::FinalChunk { content } => {
                self.out.heading("answer");
                self.out.write(content);
                self.out.write("\n");
            }
            _ => {}
        }
    }
}

/// An artifact as `key: value` lines.
fn artifact_lines(artifact: &Value) -> String {
    let Some(obj) = artifact.as_object() else {
        return format!("{artifact}\n");
    };
    let mut s = String::new();
    for (k, v) in obj {
        let text = match v {
            Value::Array(items) if items.is_empty() => continue,
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join("; "),
            Value::String(t) if t.is_empty() => continue,
            Value::String(t) => t.clone(),
            other => other.to_string(),
        };
        s.push_str(&format!("{k}: {text}\n"));
    }
    s
}

pub async fn run(ctx: &Ctx, args: &AskArgs, mode: Option<Mode>) -> Result<ExitCode> {
    let cfg = &ctx.loaded.config;
    let store = ctx.open_store()?;
    let resume = args
        .resume
        .as_deref()
        .map(|r| store.resolve_run(r))
        .transpose()?;
    let request = match resume {
        Some(_) => None,
        None => Some(PipelineRequest {
            question: read_question(args.question.as_deref().unwrap_or_default())?,
            mode: mode.unwrap_or_default(),
            session: args
                .session
                .as_deref()
                .map(|s| store.resolve_session(s))
                .transpose()?,
            escalate: cfg.pipeline.escalate && !args.no_escalate,
        }),
    };
    let built = providers::build(ctx)?;
    let memory = match ctx.memory(store.clone(), None, None) {
        Ok(m) => Some(m),
        Err(e) => {
            tracing::warn!("memory is off for this run: {e}");
            None
        }
    };
    let mut engine = providers::pipeline_engine(
        cfg,
        &ctx.prompts(),
        built.kind,
        built.provider.clone(),
        built.model.clone(),
        store,
        memory,
    );
    if args.no_escalate {
        engine.params.escalate = false;
    }
    let cancel = ctrl_c_token();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            match (resume, request) {
                (Some(run), _) => engine.resume(run, tx, cancel).await,
                (None, Some(req)) => engine.run(req, tx, cancel).await,
                (None, None) => Err(PipelineError::EmptyQuestion),
            }
        }
    });
    let mut p = Printer {
        out: Sections::new(cancel.clone()),
        answer_only: args.answer_only,
        current: None,
        held: HashMap::new(),
    };
    let mut started: Option<(String, String)> = None;
    while let Some(ev) = rx.recv().await {
        if let PipelineEvent::Start { run, session, .. } = &ev {
            started = Some((run.to_string(), session.to_string()));
        }
        if args.json {
            p.out.json_line(&ev);
        } else {
            p.event(&ev);
        }
    }
    let outcome = task.await.context("the pipeline task failed")?;
    match outcome {
        Ok(o) => {
            if args.json {
                let line = json!({
                    "type": "done",
                    "runId": o.run,
                    "sessionId": o.session,
                    "node": o.response,
                    "mode": o.fin.mode,
                    "was_escalated": o.fin.was_escalated,
                    "confidence": o.fin.confidence,
                    "layers": o.layers.len(),
                });
                p.out.json_line(&line);
            } else {
                let f = &o.fin;
                let mut parts = vec![
                    format!("run {}", o.run),
                    format!("session {}", o.session),
                    format!(
                        "{}{}",
                        f.mode.unwrap_or_default(),
                        if f.was_escalated { " (escalated)" } else { "" }
                    ),
                ];
                if let Some(c) = f.confidence {
                    parts.push(format!("confidence {c}"));
                }
                eprintln!("{}", p.out.dim(&parts.join("  ·  ")));
                if !args.answer_only {
                    for a in &f.assumptions {
                        eprintln!("{}", p.out.dim(&format!("assumes: {a}")));
                    }
                    for n in &f.uncertainty_notes {
                        eprintln!("{}", p.out.dim(&format!("uncertain: {n}")));
                    }
                    for s in &f.sources {
                        eprintln!("{}", p.out.dim(&format!("source: {} ({})", s.title, s.url)));
                    }
                }
                for n in &f.notes {
                    eprintln!("glassbox: note: {n}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if args.json {
                let mut line = json!({"type": "error", "message": e.to_string()});
                if let PipelineError::Layer { layer, .. } = &e {
                    line["layer"] = json!(layer);
                }
                if let Some(run) = e.resumable() {
                    line["runId"] = json!(run);
                }
                p.out.json_line(&line);
            } else {
                let kept = started
                    .map(|(_, s)| format!(" (what ran is kept in session {s})"))
                    .unwrap_or_default();
                eprintln!("\nglassbox: error: {e}{kept}");
            }
            Ok(ExitCode::from(match e {
                PipelineError::Cancelled(_) => 130,
                _ => 1,
            }))
        }
    }
}
