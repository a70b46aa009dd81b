//! `glassbox fork`: one question reasoned in several styles at once (optionally debated),
//! printed as text or the `/api/fork` contract's `data` as JSON.

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Ctx;
use crate::config::providers;
use crate::engines::fork::{
    BranchResult, Comparison, DebateResult, ForkEngine, ForkEvent, ForkPrompts, ForkRequest,
    ForkSettings, ForkStyle, Guidance, Lane, Outcome,
};
use crate::engines::llm::Effort;
use crate::store::{NodeId, RunId, Store};

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The question; `-` reads it from stdin.
    #[arg(required_unless_present = "from_node")]
    pub question: Option<String>,
    /// Branch styles, 2 to 6 (default: all four).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "A,B,…")]
    pub styles: Vec<ForkStyle>,
    /// Human guidance for one style's branch (≤ 2,000 chars); repeatable.
    #[arg(long, value_name = "STYLE=TEXT")]
    pub guidance: Vec<String>,
    /// Debate the branches for N rounds after the fork (bare: [fork] debate_rounds, 3).
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "0")]
    pub debate: Option<u32>,
    /// Put the fork in this session (id or unique prefix).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Fork from inside this thinking node (with --step) instead of a new question.
    #[arg(long, value_name = "NODE", requires = "step", conflicts_with_all = ["question", "debate", "session"])]
    pub from_node: Option<String>,
    /// The thinking step to fork at (index into the node's steps).
    #[arg(long, value_name = "I", requires = "from_node")]
    pub step: Option<usize>,
    /// Thinking effort of the branches.
    #[arg(long, value_enum)]
    pub effort: Option<Effort>,
    /// Maximum answer tokens per call.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The engine for the configured provider, its store, and a Ctrl-C cancellation token.
pub(super) fn engine(
    ctx: &Ctx,
    effort: Option<Effort>,
    max_tokens: Option<u32>,
) -> Result<(ForkEngine, Store, CancellationToken)> {
    let cfg = &ctx.loaded.config;
    let store = ctx.open_store()?;
    let built = providers::build(ctx)?;
    let settings =
        ForkSettings::from_config(cfg, built.kind, built.model.clone(), effort, max_tokens);
    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        }
    });
    let engine = ForkEngine::new(
        store.clone(),
        built.provider,
        ForkPrompts::from_prompts(&ctx.prompts()),
        settings,
    )
    .with_cancel(cancel.clone());
    Ok((engine, store, cancel))
}

/// Prints progress to stderr until the engine drops its sender.
pub(super) fn progress(
    quiet: bool,
) -> (
    mpsc::UnboundedSender<ForkEvent>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<ForkEvent>();
    let task = tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            if quiet {
                continue;
            }
            match ev {
                ForkEvent::LaneStarted { lane, round } => {
                    let what = lane_name(lane);
                    if round > 0 {
                        eprintln!("glassbox: {what}: debate round {round}…");
                    } else {
                        eprintln!("glassbox: {what}: started");
                    }
                }
                ForkEvent::Repairing { lane } => {
                    eprintln!(
                        "glassbox: {}: answer was not readable JSON; asking once more",
                        lane_name(lane)
                    )
                }
                ForkEvent::BranchDone(b) => match &b.error {
                    Some(e) => eprintln!("glassbox: {}: failed: {e}", b.style),
                    None => eprintln!(
                        "glassbox: {}: done (confidence {:.2}, {} ms)",
                        b.style, b.body.confidence, b.duration_ms
                    ),
                },
                ForkEvent::DebateEntryDone(e) => match &e.error {
                    Some(err) => {
                        eprintln!("glassbox: {} round {}: failed: {err}", e.style, e.round)
                    }
                    None => eprintln!(
                        "glassbox: {} round {}: confidence {:.2}{}",
                        e.style,
                        e.round,
                        e.confidence,
                        if e.position_changed {
                            ", position changed"
                        } else {
                            ""
                        }
                    ),
                },
                ForkEvent::ComparisonDone(c) => match &c.comparison_error {
                    Some(e) => eprintln!("glassbox: comparison: skipped: {e}"),
                    None => eprintln!("glassbox: comparison: done"),
                },
                ForkEvent::DebateDone {
                    consensus_reached, ..
                } => eprintln!(
                    "glassbox: debate: {}",
                    if consensus_reached {
                        "consensus reached"
                    } else {
                        "no consensus"
                    }
                ),
                ForkEvent::Started { .. } | ForkEvent::Delta { .. } => {}
            }
        }
    });
    (tx, task)
}

fn lane_name(lane: Lane) -> String {
    match lane {
        Lane::Branch(s) => s.to_string(),
        Lane::Comparison => "comparison".into(),
        Lane::Synthesis => "synthesis".into(),
        Lane::Correction => "correction".into(),
    }
}

/// `data` plus `sessionId`, `runId` and `nodeIds`.
pub(super) fn with_ids<T: serde::Serialize>(o: &Outcome<T>) -> Result<Value> {
    let mut v = serde_json::to_value(&o.data)?;
    if let Some(m) = v.as_object_mut() {
        m.insert("sessionId".into(), json!(o.session));
        m.insert("runId".into(), json!(o.run));
        m.insert("nodeIds".into(), json!(o.nodes));
    }
    Ok(v)
}

fn parse_guidance(items: &[String]) -> Result<Vec<Guidance>> {
    items
        .iter()
        .map(|g| {
            let (style, text) = g
                .split_once('=')
                .with_context(|| format!("--guidance '{g}' is not STYLE=TEXT"))?;
            Ok(Guidance {
                style: style.parse()?,
                guidance: text.trim().to_string(),
            })
        })
        .collect()
}

pub(super) fn print_branch(b: &BranchResult) {
    match &b.error {
        Some(e) => println!("## {} — failed\n{e}\n", b.style),
        None => {
            println!(
                "## {} (confidence {:.2})\n{}",
                b.style, b.body.confidence, b.body.conclusion
            );
            for (name, list) in [
                ("Key insights", &b.body.key_insights),
                ("Risks", &b.body.risks),
                ("Opportunities", &b.body.opportunities),
                ("Assumptions", &b.body.assumptions),
            ] {
                if !list.is_empty() {
                    println!("{name}:");
                    for item in list {
                        println!("  - {item}");
                    }
                }
            }
            println!();
        }
    }
}

pub(super) fn print_comparison(c: &Comparison) {
    if let Some(e) = &c.comparison_error {
        println!("## Comparison\n(none: {e})\n");
        return;
    }
    println!("## Comparison");
    for p in &c.convergence_points {
        let styles: Vec<&str> = p.styles.iter().map(|s| s.as_str()).collect();
        println!(
            "  converge: {} ({:?}; {}) {}",
            p.topic,
            p.agreement_level,
            styles.join(", "),
            p.summary
        );
    }
    for p in &c.divergence_points {
        println!("  diverge: {} ({:?})", p.topic, p.significance);
        for pos in &p.positions {
            println!(
                "    {} ({:.2}): {}",
                pos.style, pos.confidence, pos.position
            );
        }
    }
    if !c.meta_insight.is_empty() {
        println!("Meta insight: {}", c.meta_insight);
    }
    if let Some(r) = &c.recommended_approach {
        println!(
            "Recommended: {} ({:.2}): {}",
            r.style, r.confidence, r.rationale
        );
    }
    println!();
}

fn print_debate(d: &DebateResult) {
    for r in &d.rounds {
        println!("## Debate round {}", r.round);
        for e in &r.entries {
            match &e.error {
                Some(err) => println!("  {}: failed: {err}", e.style),
                None => println!(
                    "  {} ({:.2}{}): {}",
                    e.style,
                    e.confidence,
                    if e.position_changed { ", changed" } else { "" },
                    e.response
                ),
            }
        }
        println!();
    }
    match (&d.consensus, &d.consensus_error) {
        (Some(c), _) => println!(
            "## Consensus ({:.2})\n{c}\n",
            d.consensus_confidence.unwrap_or_default()
        ),
        (None, Some(e)) => println!("## Consensus\nreached, but the synthesis failed: {e}\n"),
        (None, None) => println!("## No consensus\n"),
    }
}

pub(super) fn footer(session: impl std::fmt::Display, run: RunId) {
    eprintln!("glassbox: session {session}  ·  run {run}");
}

pub async fn run(ctx: &Ctx, args: ForkArgs) -> Result<ExitCode> {
    let styles = if args.styles.is_empty() {
        ForkStyle::ALL.to_vec()
    } else {
        args.styles.clone()
    };
    let guidance = parse_guidance(&args.guidance)?;
    let (engine, store, _cancel) = engine(ctx, args.effort, args.max_tokens)?;
    let (tx, printer) = progress(false);

    if let Some(node) = &args.from_node {
        let node: NodeId = store.resolve_node(node)?;
        let step = args.step.unwrap_or_default();
        let out = engine
            .fork_from_step(node, step, styles, guidance, &tx)
            .await;
        drop(tx);
        let _ = printer.await;
        return finish_fork(out?, args.json);
    }

    let question = match args.question.as_deref() {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("cannot read the question from stdin")?;
            s
        }
        Some(q) => q.to_string(),
        None => bail!("a question is needed"),
    };
    let session = args
        .session
        .as_deref()
        .map(|s| store.resolve_session(s))
        .transpose()?;
    let req = ForkRequest {
        session,
        query: question,
        styles,
        guidance,
    };
    match args.debate {
        Some(rounds) => {
            let rounds = if rounds == 0 {
                engine.settings().debate_rounds
            } else {
                rounds
            };
            let out = engine.debate(req, rounds, &tx).await;
            drop(tx);
            let _ = printer.await;
            let out = out?;
            if args.json {
                super::print_json(&with_ids(&out)?)?;
            } else {
                for b in &out.data.initial_fork.branches {
                    print_branch(b);
                }
                print_comparison(&out.data.initial_fork.comparison);
                print_debate(&out.data);
                footer(out.session, out.run);
            }
            let ok = out.data.initial_fork.branches.iter().any(BranchResult::ok);
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        None => {
            let out = engine.fork(req, &tx).await;
            drop(tx);
            let _ = printer.await;
            finish_fork(out?, args.json)
        }
    }
}

fn finish_fork(out: Outcome<crate::engines::fork::ForkResult>, json: bool) -> Result<ExitCode> {
    if json {
        super::print_json(&with_ids(&out)?)?;
    } else {
        for b in &out.data.branches {
            print_branch(b);
        }
        print_comparison(&out.data.comparison);
        footer(out.session, out.run);
    }
    let ok = out.data.branches.iter().any(BranchResult::ok);
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
