//! `glassbox ask`: one headless think turn, streamed to stdout.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Ctx;
use crate::config::providers;
use crate::engines::llm::loops::{LoopAction, LoopReport, is_loop_stop};
use crate::engines::llm::{Effort, StopReason};
use crate::engines::orchestrator::{TurnEvent, TurnRequest, classify};

#[derive(Debug, Args)]
#[command(
    after_help = "Modes (--mode, or [pipeline] default_mode):\n  plain       one think turn (the default)\n  auto        the cortex classifies the question and picks instant, deep or ultra-deep\n  instant     one pass with thinking\n  deep        decomposition → solver → critic → refiner → confidence gate; escalates to\n              ultra-deep below [pipeline] escalation_confidence or on missing angles\n  ultra-deep  three solvers at once → skeptic → verifier → synthesizer → meta-critic →\n              (re-synthesis) → final confidence\n\nEvery pipeline layer is kept as a node; a run stopped by Ctrl-C, a crash or a provider\nerror continues with --resume RUN.\n\nExamples:\n  glassbox ask \"Why is the sky blue?\"\n  glassbox ask --mode deep \"Rent or buy if I may move in 3 years?\"\n  glassbox ask --mode ultra-deep --json \"Should we rewrite the service in Rust?\"\n  glassbox ask --resume 1a2b3c4d"
)]
pub struct AskArgs {
    /// The question; `-` reads it from stdin.
    #[arg(required_unless_present = "resume")]
    pub question: Option<String>,
    /// Reasoning mode: plain (one think turn) or a DeepEx pipeline (auto, instant, deep,
    /// ultra-deep). Default from [pipeline] default_mode.
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<crate::engines::pipeline::DefaultMode>,
    /// Continue a pipeline run (id or unique prefix) stopped by Ctrl-C, a crash or an error,
    /// from its first unfinished layer.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["question", "mode", "session", "from"])]
    pub resume: Option<String>,
    /// Never escalate deep to ultra-deep (overrides [pipeline] escalate).
    #[arg(long)]
    pub no_escalate: bool,
    /// Continue this session (id or unique prefix), sending its history.
    #[arg(long, value_name = "ID", conflicts_with = "from")]
    pub session: Option<String>,
    /// Branch from this node (id or unique prefix): its session's history up to it is sent
    /// and the new question branches from it.
    #[arg(long, value_name = "NODE")]
    pub from: Option<String>,
    /// Thinking effort (budget from [effort] in the config).
    #[arg(long, value_enum)]
    pub effort: Option<Effort>,
    /// Do not ask the model to think first.
    #[arg(long)]
    pub no_thinking: bool,
    /// Maximum answer tokens.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature (0 = greedy).
    #[arg(long, value_name = "T")]
    pub temperature: Option<f32>,
    /// Sampling seed.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Print only the answer, not the thinking.
    #[arg(long)]
    pub answer_only: bool,
    /// Print one JSON event per line (thinking, text, usage, loop, done, error).
    #[arg(long)]
    pub json: bool,
}

/// How the streamed turn is written to stdout: gathered in a buffer and written once per
/// batch of events. A closed stdout (`| head`) cancels the run instead of panicking; what
/// streamed so far is kept, marked interrupted.
struct Printer {
    json: bool,
    answer_only: bool,
    styled: bool,
    /// Which section is being printed: 0 none, 1 thinking, 2 answer.
    section: u8,
    cancel: CancellationToken,
    buf: Vec<u8>,
}

/// Streamed output with section headings: styled (bold headings, dim asides) on a terminal,
/// plain `[heading]` lines otherwise. Writes stop quietly when stdout closes.
pub(crate) struct Sections {
    pub styled: bool,
    pub cancel: CancellationToken,
}

impl Sections {
    /// Styled when stdout is a terminal and `NO_COLOR` is not set.
    pub fn new(cancel: CancellationToken) -> Self {
        Self {
            styled: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
            cancel,
        }
    }

    pub fn write(&self, s: &str) {
        write_out(s, &self.cancel);
    }

    pub fn dim(&self, s: &str) -> String {
        if self.styled {
            format!("\x1b[2m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// One JSON value on its own line (`--json` output).
    pub fn json_line<T: serde::Serialize>(&self, v: &T) {
        match serde_json::to_string(v) {
            Ok(line) => self.write(&format!("{line}\n")),
            Err(e) => tracing::warn!("cannot print an event: {e}"),
        }
    }

    pub fn heading(&self, s: &str) {
        self.write(&if self.styled {
            format!("\n\x1b[1m── {s} ──\x1b[0m\n")
        } else {
            format!("\n[{s}]\n")
        });
    }
}

/// Writes to stdout; a closed stdout (`| head`) cancels the run instead of panicking.
pub(crate) fn write_out(s: &str, cancel: &CancellationToken) {
    write_bytes(s.as_bytes(), cancel);
}

/// [`write_out`] for bytes.
fn write_bytes(s: &[u8], cancel: &CancellationToken) {
    let mut out = std::io::stdout().lock();
    if out.write_all(s).and_then(|_| out.flush()).is_err() {
        cancel.cancel();
    }
}

impl Printer {
    fn write(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    fn line(&mut self, v: serde_json::Value) {
        // Writing into a Vec cannot fail.
        let _ = writeln!(self.buf, "{v}");
    }

    /// Writes out what was gathered.
    fn flush(&mut self) {
        if !self.buf.is_empty() {
            write_bytes(&self.buf, &self.cancel);
            self.buf.clear();
        }
    }

    /// A `{"text": …, "type": …}` line, written without building a JSON value (one per
    /// delta: the common line), the text escaped straight into the buffer.
    fn text_line(&mut self, kind: &str, text: &str) {
        self.buf.extend_from_slice(b"{\"text\":");
        json_escape_simd::escape_into(text, &mut self.buf);
        self.buf.extend_from_slice(b",\"type\":\"");
        self.buf.extend_from_slice(kind.as_bytes());
        self.buf.extend_from_slice(b"\"}\n");
    }

    fn thinking(&mut self, text: &str) {
        if self.json {
            return self.text_line("thinking", text);
        }
        if self.answer_only {
            return;
        }
        if self.section != 1 {
            self.write(if self.styled {
                "\x1b[2;3m── thinking ──\x1b[0m\n"
            } else {
                "[thinking]\n"
            });
            self.section = 1;
        }
        if self.styled {
            self.write(&format!("\x1b[2m{text}\x1b[0m"));
        } else {
            self.write(text);
        }
    }

    fn text(&mut self, text: &str) {
        if self.json {
            return self.text_line("text", text);
        }
        if self.section != 2 && !self.answer_only {
            self.write(if self.styled {
                "\n\n\x1b[1m── answer ──\x1b[0m\n"
            } else {
                "\n\n[answer]\n"
            });
        }
        self.section = 2;
        self.write(text);
    }
}

/// The question argument, read from stdin for `-`.
pub(crate) fn read_question(arg: &str) -> Result<String> {
    let question = if arg == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read the question from stdin")?;
        s
    } else {
        arg.to_string()
    };
    if question.trim().is_empty() {
        bail!("the question is empty");
    }
    Ok(question)
}

/// Whether a flag only a plain turn takes was given.
fn plain_flags(args: &AskArgs) -> bool {
    args.from.is_some()
        || args.effort.is_some()
        || args.no_thinking
        || args.max_tokens.is_some()
        || args.temperature.is_some()
}

pub async fn run(ctx: &Ctx, args: AskArgs) -> Result<ExitCode> {
    let cfg = &ctx.loaded.config;
    let mode = match args.mode {
        Some(m) => m.mode(),
        // A plain-turn flag keeps a configured pipeline default out of the way.
        None if plain_flags(&args) => None,
        None => cfg.pipeline.default_mode.mode(),
    };
    if args.resume.is_some() || mode.is_some() {
        if args.mode.is_some() && plain_flags(&args) {
            bail!(
                "--from, --effort, --no-thinking, --max-tokens and --temperature apply to a plain turn; a pipeline's layers take theirs from [pipeline.layers]"
            );
        }
        return super::pipeline::run(ctx, &args, mode).await;
    }
    let question = read_question(args.question.as_deref().unwrap_or_default())?;
    // Compiling the routing patterns takes milliseconds: it is done while the store opens.
    let routing = {
        let (q, cfg) = (question.clone(), cfg.routing.clone());
        std::thread::Builder::new()
            .name("glassbox-route".into())
            .spawn(move || classify(&q, &cfg))
            .ok()
    };
    let store = ctx.open_store()?;
    let mut session = args
        .session
        .as_deref()
        .map(|s| store.resolve_session(s))
        .transpose()?;
    let branch_from = match args.from.as_deref() {
        Some(text) => {
            let id = store.resolve_node(text)?;
            let node = store
                .node(id)?
                .with_context(|| format!("node '{text}' not found"))?;
            session = Some(node.session);
            Some(id)
        }
        None => None,
    };
    let built = providers::build(ctx)?;
    let route = routing
        .and_then(|t| t.join().ok())
        .unwrap_or_else(|| classify(&question, &cfg.routing));
    let effort = match args.effort {
        Some(e) => e,
        None if cfg.routing.enabled => route.effort(&cfg.routing),
        None => cfg.effort.default,
    };
    let plan = providers::plan_turn(
        cfg,
        built.kind,
        (!args.no_thinking).then_some(effort),
        args.max_tokens,
    );
    let orch = providers::orchestrator(ctx, &built, store);
    match ctx.embedder() {
        Err(why) => eprintln!("warning: {why}"),
        // The answered turn goes to recall, embedded: the local model reads its weights
        // while the model answers rather than after.
        Ok(Some(embedder)) if cfg.memory.record_turns => embedder.warm(),
        Ok(_) => {}
    }
    let req = TurnRequest {
        session,
        question,
        system: None,
        thinking: plan.thinking,
        effort: plan.effort,
        max_tokens: plan.max_tokens,
        temperature: Some(
            args.temperature
                .unwrap_or(cfg.generation.temperature as f32),
        ),
        top_p: Some(cfg.generation.top_p as f32),
        seed: Some(args.seed.unwrap_or(cfg.generation.seed)),
        branch_from,
    };

    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        }
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    // The turn and the printing share this task: an event wakes no other thread, and the
    // printer takes whatever the turn produced since it last ran, in one write.
    let turn = orch.run_turn(req, tx, cancel.clone());
    let styled = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut p = Printer {
        json: args.json,
        answer_only: args.answer_only,
        styled,
        section: 0,
        cancel: cancel.clone(),
        buf: Vec::new(),
    };
    let print = async {
        while let Some(first) = rx.recv().await {
            // Whatever else has arrived is printed with it, in one write.
            let mut next = Some(first);
            while let Some(ev) = next.take().or_else(|| rx.try_recv().ok()) {
                match ev {
                    TurnEvent::Thinking(t) => p.thinking(&t),
                    TurnEvent::Text(t) => p.text(&t),
                    TurnEvent::Usage(u) if args.json => {
                        p.line(json!({"type": "usage", "usage": u}))
                    }
                    TurnEvent::ToolUse { name, input } if args.json => {
                        p.line(json!({"type": "tool_use", "name": name, "input": input}))
                    }
                    TurnEvent::BudgetWarning { used, limit } => {
                        if args.json {
                            p.line(json!({"type": "budget_warning", "used": used, "limit": limit}));
                        } else {
                            p.flush();
                            eprintln!(
                                "glassbox: warning: this session has used {used} of {limit} output tokens"
                            );
                        }
                    }
                    TurnEvent::Compacted { node, superseded } if args.json => {
                        p.line(json!({"type": "compacted", "node": node, "superseded": superseded}))
                    }
                    TurnEvent::Loop {
                        node,
                        period,
                        repeats,
                        unit,
                        in_thinking,
                        action,
                    } => {
                        if args.json {
                            p.line(json!({
                                "type": "loop",
                                "node": node,
                                "period": period,
                                "repeats": repeats,
                                "unit": unit,
                                "in": if in_thinking { "thinking" } else { "text" },
                                "action": action,
                            }));
                        } else {
                            let report = LoopReport {
                                unit,
                                period,
                                repeats,
                            };
                            let place = if in_thinking { "thinking" } else { "answer" };
                            p.flush();
                            // Off the line the stream is on, when both go to the terminal.
                            let nl = if std::io::stdout().is_terminal() {
                                "\n"
                            } else {
                                ""
                            };
                            if action == LoopAction::Stop {
                                eprintln!(
                                    "{nl}glassbox: stopped: the model was looping in its {place} ({report}); what arrived is kept"
                                );
                            } else {
                                eprintln!(
                                    "{nl}glassbox: warning: the model is looping in its {place} ({report}); Ctrl-C stops it"
                                );
                            }
                        }
                    }
                    _ => {}
                }
            }
            p.flush();
        }
    };
    let (outcome, ()) = tokio::join!(turn, print);
    let outcome = outcome?;
    let node = outcome
        .response
        .or(outcome.thinking)
        .unwrap_or(outcome.query);
    if args.json {
        if let Some(e) = &outcome.error {
            p.line(json!({"type": "error", "message": e.to_string()}));
        }
        p.line(json!({
            "type": "done",
            "session": outcome.session,
            "node": node,
            "stop_reason": outcome.stop,
            "usage": outcome.usage,
            "route": route.as_str(),
            "effort": effort.as_str(),
        }));
        p.flush();
    } else {
        p.write("\n");
        p.flush();
        let u = outcome.usage;
        eprintln!(
            "{}session {}  ·  {} in / {} out tokens{}{}",
            if styled { "\x1b[2m" } else { "" },
            outcome.session,
            u.input_tokens,
            u.output_tokens,
            if outcome.stop == StopReason::Cancelled {
                "  ·  interrupted"
            } else if is_loop_stop(&outcome.stop) {
                "  ·  stopped: looping"
            } else {
                ""
            },
            if styled { "\x1b[0m" } else { "" },
        );
    }
    if let Some(e) = outcome.error {
        if !args.json {
            eprintln!(
                "glassbox: error: {e} (what arrived was kept in session {})",
                outcome.session
            );
        }
        return Ok(ExitCode::from(1));
    }
    if outcome.stop == StopReason::Cancelled {
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
