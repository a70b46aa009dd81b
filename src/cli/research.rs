//! `glassbox research`: a DeepTrust run, headless. It plans and audits, then stops at the
//! approval gate and prints how to continue (unless `--approve` approved in advance); `--resume
//! RUN --approve|--reject|--edit` continues. `--json` prints the engine's events, one per line.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::json;
use tokio::sync::mpsc;

use super::Ctx;
use super::ask::{Sections, read_question};
use super::got::ctrl_c_token;
use crate::config::providers;
use crate::engines::research::{
    Decision, Policy, ResearchError, ResearchEvent, ResearchRequest, ResearchState, Stage, Status,
    StepEdit, Tool, Verdict, load_state, locator,
};

#[derive(Debug, Args)]
#[command(after_help = "\
The loop (seed 001, DeepTrust): the thinker plans → the auditor checks the plan against
the policy (a rejected plan is revised, at most [research] max_plan_revisions times) →
you approve → the tools run one step at a time → the synthesizer writes a report that
cites its sources. No tool runs before you approve. Tools: knowledge_search (the
`glassbox knowledge` base), session_search, memory_search; web_search and fetch_url only
with [research] allow_network = true.

Examples:
  glassbox research \"What does our design say about retries?\"      # stops at the gate
  glassbox research --resume 1a2b3c4d --approve
  glassbox research --resume 1a2b3c4d --reject --note \"search the knowledge base only\"
  glassbox research --resume 1a2b3c4d --edit 2=\"retry budget\" --approve
  glassbox research --approve --json \"…\"                        # the whole loop, as events
  glassbox research --show 1a2b3c4d")]
pub struct ResearchArgs {
    /// The research question; `-` reads it from stdin.
    #[arg(required_unless_present_any = ["resume", "show"])]
    pub question: Option<String>,
    /// Approve the plan in advance: the tools run as soon as the audit passes. With
    /// --resume: approve the plan waiting at the gate.
    #[arg(long, conflicts_with_all = ["reject", "plan_only"])]
    pub approve: bool,
    /// Print only the audited plan (and where the run waits), nothing of the progress.
    #[arg(long)]
    pub plan_only: bool,
    /// The policy the auditor applies (default: the built-in configs/policy.md).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["resume", "show"])]
    pub policy: Option<PathBuf>,
    /// Continue a research run (id or unique prefix): at the gate with --approve, --reject or
    /// --edit; after Ctrl-C, a crash or an error, without them.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["question", "session", "show"])]
    pub resume: Option<String>,
    /// With --resume: reject the plan; the thinker revises it (with --note as feedback).
    #[arg(long, requires = "resume")]
    pub reject: bool,
    /// The reason for --reject, given to the thinker.
    #[arg(long, value_name = "TEXT", requires = "reject")]
    pub note: Option<String>,
    /// With --resume: change step N's input (N=TEXT) or tool (N=tool:NAME); the edited plan
    /// is audited again. Repeatable.
    #[arg(long, value_name = "N=TEXT", requires = "resume")]
    pub edit: Vec<String>,
    /// Print a run's state (plan, audit, trace, report) and exit.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["question", "approve", "reject"])]
    pub show: Option<String>,
    /// Continue this session (id or unique prefix); a new one otherwise.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Print one JSON event per line: start, research {node, state}, delta, error.
    #[arg(long)]
    pub json: bool,
}

/// Reads `N=TEXT` or `N=tool:NAME`.
fn parse_edit(s: &str) -> Result<StepEdit> {
    let (n, rest) = s
        .split_once('=')
        .with_context(|| format!("--edit {s:?}: expected N=TEXT or N=tool:NAME"))?;
    let step: usize = n
        .trim()
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .with_context(|| format!("--edit {s:?}: {n:?} is not a step number (1, 2, …)"))?;
    Ok(match rest.strip_prefix("tool:") {
        Some(name) => StepEdit {
            step,
            tool: Some(name.parse::<Tool>().map_err(anyhow::Error::msg)?),
            input: None,
        },
        None => StepEdit {
            step,
            tool: None,
            input: Some(rest.to_string()),
        },
    })
}

/// Prints events as text.
struct Printer {
    out: Sections,
    plan_only: bool,
    /// The stage whose streamed text is being printed.
    streaming: Option<Stage>,
    /// How much of the report has streamed (the sources list is added after).
    streamed_report: usize,
}

impl Printer {
    fn event(&mut self, ev: &ResearchEvent) {
        if self.plan_only {
            return;
        }
        match ev {
            ResearchEvent::Start { run, resumed, .. } => {
                let what = if *resumed { "resuming" } else { "research run" };
                self.out.write(&self.out.dim(&format!("{what} {run}\n")));
            }
            ResearchEvent::Delta {
                node,
                text,
                thinking,
            } => {
                if *node == Stage::Synthesizer.as_str() && !thinking {
                    if self.streaming != Some(Stage::Synthesizer) {
                        self.out.heading("report");
                        self.streaming = Some(Stage::Synthesizer);
                    }
                    self.streamed_report += text.len();
                    self.out.write(text);
                }
            }
            ResearchEvent::Research { node, state } => self.research(node, state),
        }
    }

    fn research(&mut self, node: &str, st: &ResearchState) {
        match node {
            "thinker" => {
                if let Some(p) = &st.plan {
                    self.out.heading(&format!("plan (revision {})", p.revision));
                    self.out.write(&plan_text(st));
                }
            }
            "auditor" => {
                self.out.heading("audit");
                self.out.write(&audit_text(st));
            }
            "tool_executor" => {
                let Some(plan) = &st.plan else { return };
                let Some((i, s)) = plan
                    .steps
                    .iter()
                    .enumerate()
                    .rev()
                    .find(|(_, s)| s.output.is_some() || s.error.is_some())
                else {
                    return;
                };
                self.out
                    .heading(&format!("step {} · {} {:?}", i + 1, s.tool, s.input));
                match (&s.output, &s.error) {
                    (_, Some(e)) => self.out.write(&format!("error: {e}\n")),
                    (Some(o), _) => {
                        let lines: Vec<&str> = o.lines().collect();
                        let shown = lines.iter().take(8).copied().collect::<Vec<_>>().join("\n");
                        self.out.write(&format!("{shown}\n"));
                        if lines.len() > 8 {
                            self.out.write(
                                &self.out.dim(&format!("… {} more lines\n", lines.len() - 8)),
                            );
                        }
                    }
                    _ => {}
                }
            }
            "synthesizer" => {
                let report = st.final_report.as_deref().unwrap_or("");
                if self.streaming != Some(Stage::Synthesizer) {
                    self.out.heading("report");
                    self.out.write(report);
                } else if let Some(rest) = report.get(self.streamed_report..) {
                    self.out.write(rest);
                }
                self.out.write("\n");
                self.streaming = None;
            }
            _ => {}
        }
    }
}

/// The plan as numbered lines.
fn plan_text(st: &ResearchState) -> String {
    let Some(p) = &st.plan else {
        return "no plan\n".into();
    };
    let mut s = format!("objective: {}\n", p.objective);
    for (i, step) in p.steps.iter().enumerate() {
        s.push_str(&format!("{}. {} {:?}", i + 1, step.tool, step.input));
        if !step.rationale.is_empty() {
            s.push_str(&format!(" — {}", step.rationale));
        }
        s.push('\n');
    }
    s.push_str(&format!(
        "estimated token budget: {}\n",
        p.estimated_token_budget
    ));
    s
}

/// The audit as lines.
fn audit_text(st: &ResearchState) -> String {
    let Some(a) = &st.audit_result else {
        return "not audited\n".into();
    };
    let mut s = match a.verdict {
        Verdict::Approved => "approved\n".to_string(),
        Verdict::Rejected => format!(
            "rejected ({} of {} revisions)\n",
            st.revision, st.max_plan_revisions
        ),
    };
    for v in &a.policy_violations {
        s.push_str(&format!(
            "violation: {}\n  rule: \"{}\"\n",
            v.problem, v.rule
        ));
    }
    for x in &a.suggestions {
        s.push_str(&format!("suggestion: {x}\n"));
    }
    for n in &a.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

/// A stored run's state, in full, as text.
fn show_text(st: &ResearchState) -> String {
    let mut s = format!(
        "run {}  ·  session {}  ·  {}\nquestion: {}\n",
        st.thread_id,
        st.session_id,
        st.status.as_str(),
        st.user_query
    );
    s.push_str("\n[plan]\n");
    s.push_str(&plan_text(st));
    s.push_str("\n[audit]\n");
    s.push_str(&audit_text(st));
    s.push_str("\n[trace]\n");
    for r in &st.reasoning {
        s.push_str(&format!(
            "{} {:<13} {}\n",
            r.timestamp.format("%H:%M:%S"),
            r.node.as_str(),
            r.summary
        ));
    }
    if let Some(report) = &st.final_report {
        s.push_str("\n[report]\n");
        s.push_str(report);
        s.push('\n');
    }
    if let Some(why) = &st.end_reason {
        s.push_str(&format!("\nended: {why}\n"));
    }
    s
}

pub async fn run(ctx: &Ctx, args: ResearchArgs) -> Result<ExitCode> {
    let cfg = &ctx.loaded.config;
    let store = ctx.open_store()?;
    if let Some(r) = &args.show {
        let id = store.resolve_run(r)?;
        let st = load_state(&store, id)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&st)?);
        } else {
            print!("{}", show_text(&st));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.resume.is_none() && (args.reject || !args.edit.is_empty()) {
        // clap does not hold `requires` against an argument that conflicts with the question.
        bail!("--reject and --edit answer a run waiting for approval: add --resume RUN");
    }
    let resume = args
        .resume
        .as_deref()
        .map(|r| store.resolve_run(r))
        .transpose()?;
    let decision = Decision {
        approve: args.approve && resume.is_some(),
        reject: args.reject.then(|| args.note.clone().unwrap_or_default()),
        edits: args
            .edit
            .iter()
            .map(|e| parse_edit(e))
            .collect::<Result<_>>()?,
    };
    if let Some(id) = resume {
        // Refuse early, before any model is loaded.
        let st = load_state(&store, id)?;
        if st.status.finished() {
            bail!(ResearchError::Finished {
                run: id,
                status: st.status.as_str()
            });
        }
    }
    let request = match resume {
        Some(_) => None,
        None => {
            let policy = match &args.policy {
                Some(p) => Policy::from_file(p, &cfg.research).map_err(anyhow::Error::msg)?,
                None => Policy::builtin(&cfg.research),
            };
            Some(ResearchRequest {
                question: read_question(args.question.as_deref().unwrap_or_default())?,
                policy,
                session: args
                    .session
                    .as_deref()
                    .map(|s| store.resolve_session(s))
                    .transpose()?,
                approve: args.approve,
            })
        }
    };
    let built = providers::build(ctx)?;
    let memory = match ctx.memory(store.clone(), None, None) {
        Ok(m) => Some(m),
        Err(e) => {
            tracing::warn!("memory is off for this run: {e}");
            None
        }
    };
    let (knowledge, warning) = ctx.knowledge(store.clone());
    if let Some(w) = warning {
        tracing::warn!("knowledge search goes by words: {w}");
    }
    let engine = providers::research_engine(
        cfg,
        &ctx.prompts(),
        built.provider.clone(),
        built.model.clone(),
        store,
        Some(knowledge),
        memory,
    );
    let cancel = ctrl_c_token();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            match (resume, request) {
                (Some(run), _) => engine.resume(run, decision, tx, cancel).await,
                (None, Some(req)) => engine.start(req, tx, cancel).await,
                (None, None) => Err(ResearchError::EmptyQuestion),
            }
        }
    });
    let mut p = Printer {
        out: Sections::new(cancel.clone()),
        plan_only: args.plan_only,
        streaming: None,
        streamed_report: 0,
    };
    let mut session = None;
    while let Some(ev) = rx.recv().await {
        if let ResearchEvent::Start { session: s, .. } = &ev {
            session = Some(*s);
        }
        if args.json {
            p.out.json_line(&ev);
        } else {
            p.event(&ev);
        }
    }
    let outcome = task.await.context("the research task failed")?;
    let st = match outcome {
        Ok(st) => st,
        Err(e) => {
            if args.json {
                let mut line = json!({"type": "error", "message": e.to_string()});
                if let Some(run) = e.resumable() {
                    line["runId"] = json!(run);
                }
                p.out.json_line(&line);
            } else {
                let kept = session
                    .map(|s| format!(" (what ran is kept in session {s})"))
                    .unwrap_or_default();
                eprintln!("\nglassbox: error: {e}{kept}");
            }
            return Ok(ExitCode::from(match e {
                ResearchError::Cancelled(_) => 130,
                _ => 1,
            }));
        }
    };
    let run = st.thread_id;
    match st.status {
        Status::AwaitingApproval => {
            if args.plan_only && !args.json {
                print!("{}", plan_text(&st));
                print!("\naudit: {}", audit_text(&st));
            }
            if !args.json {
                eprintln!(
                    "\nwaiting for your approval (run {run}):\n  glassbox research --resume {run} --approve\n  glassbox research --resume {run} --reject --note \"…\"\n  glassbox research --resume {run} --edit N=\"new input\""
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Status::Complete => {
            if !args.json {
                let cited = st.citations.iter().filter(|c| c.cited).count();
                eprintln!(
                    "{}",
                    p.out.dim(&format!(
                        "run {run}  ·  session {}  ·  {cited} of {} sources cited",
                        st.session_id,
                        st.citations.len()
                    ))
                );
                for c in st.citations.iter().filter(|c| c.cited) {
                    eprintln!("{}", p.out.dim(&format!("[{}] {}", c.n, locator(c))));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            let why = st
                .end_reason
                .clone()
                .or(st.error_message.clone())
                .unwrap_or_else(|| format!("the run ended {}", st.status.as_str()));
            if args.json {
                let line = json!({"type": "error", "message": why, "runId": run});
                p.out.json_line(&line);
            } else {
                eprintln!("glassbox: research ended: {why}");
            }
            Ok(ExitCode::from(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_read_inputs_and_tools() {
        let e = parse_edit("2=retry budget").unwrap();
        assert_eq!(
            (e.step, e.input.as_deref(), e.tool),
            (2, Some("retry budget"), None)
        );
        let e = parse_edit("1=tool:session_search").unwrap();
        assert_eq!(e.tool, Some(Tool::SessionSearch));
        assert!(parse_edit("0=x").is_err());
        assert!(parse_edit("x").is_err());
        assert!(
            parse_edit("1=tool:shell")
                .unwrap_err()
                .to_string()
                .contains("unknown tool")
        );
    }
}
