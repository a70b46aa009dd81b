//! `glassbox got`: a headless Graph of Thoughts search, progress on stderr, the answer (or
//! `--json`) on stdout.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Ctx;
use crate::config::ProviderKind;
use crate::config::providers;
use crate::engines::got::{
    CallSettings, GotEngine, GotEvent, GotParams, GotPrompts, GotRequest, Strategy, ThoughtState,
};
use crate::engines::llm::Effort;

#[derive(Debug, Args)]
pub struct GotArgs {
    /// The problem to reason about.
    pub problem: String,
    /// Search strategy (default from [got] strategy).
    #[arg(long, value_enum)]
    pub strategy: Option<Strategy>,
    /// Deepest level to expand, 1–20 (default 5).
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Thoughts generated per expansion, 1–10 (default 3).
    #[arg(long, value_name = "N")]
    pub branching: Option<u32>,
    /// Most thoughts in the graph, 1–100 (default 50).
    #[arg(long, value_name = "N")]
    pub max_thoughts: Option<u32>,
    /// Do not merge thoughts from different branches.
    #[arg(long)]
    pub no_aggregation: bool,
    /// Stop once this many tokens were used.
    #[arg(long, value_name = "N")]
    pub token_budget: Option<u64>,
    /// Effort of each model call (default from [got] effort).
    #[arg(long, value_enum)]
    pub effort: Option<Effort>,
    /// Add the thoughts to this session (id or unique prefix) instead of a new one.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Print the result as JSON (the /api/got data plus sessionId, runId, nodeIds).
    #[arg(long)]
    pub json: bool,
}

/// Call settings for an engine's structured calls at `effort`. The embedded model gets no
/// thinking pass: a reasoning preamble does not help a small model write JSON.
pub(crate) fn call_settings(
    ctx: &Ctx,
    built: &providers::Built,
    effort: Effort,
    max_tokens: u32,
) -> CallSettings {
    let cfg = &ctx.loaded.config;
    let effort = (built.kind != ProviderKind::Local).then_some(effort);
    let plan = providers::plan_turn(cfg, built.kind, effort, Some(max_tokens));
    CallSettings {
        model: built.model.clone(),
        thinking: plan.thinking,
        effort: plan.effort,
        max_tokens: plan.max_tokens,
        temperature: Some(cfg.generation.temperature as f32),
        seed: Some(cfg.generation.seed),
    }
}

/// A token cancelled by Ctrl-C.
pub(crate) fn ctrl_c_token() -> CancellationToken {
    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        }
    });
    cancel
}

pub async fn run(ctx: &Ctx, args: GotArgs) -> Result<ExitCode> {
    if args.problem.trim().is_empty() {
        bail!("the problem is empty");
    }
    let cfg = &ctx.loaded.config;
    let mut params = GotParams::from_config(&cfg.got);
    if let Some(s) = args.strategy {
        params.strategy = s;
    }
    if let Some(n) = args.max_depth {
        params.max_depth = n;
    }
    if let Some(n) = args.branching {
        params.branching_factor = n;
    }
    if let Some(n) = args.max_thoughts {
        params.max_thoughts = n;
    }
    params.enable_aggregation &= !args.no_aggregation;
    params.token_budget = args.token_budget;
    params.validate(&cfg.got)?;
    let store = ctx.open_store()?;
    let session = args
        .session
        .as_deref()
        .map(|s| store.resolve_session(s))
        .transpose()?;
    let built = providers::build(ctx)?;
    let call = call_settings(
        ctx,
        &built,
        args.effort.unwrap_or(cfg.got.effort),
        cfg.got.max_tokens,
    );
    let engine = GotEngine {
        store,
        provider: built.provider.clone(),
        call,
        prompts: GotPrompts::from(&ctx.prompts()),
        config: cfg.got.clone(),
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Nobody steers a headless search: the control channel closes at once.
    let (_, controls) = mpsc::unbounded_channel();
    let cancel = ctrl_c_token();
    let req = GotRequest {
        problem: args.problem.clone(),
        session,
        params,
        start_paused: false,
    };
    let json_out = args.json;
    let printer = tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            if json_out {
                continue;
            }
            if let GotEvent::Thought(t) = ev
                && matches!(t.state, ThoughtState::Verified | ThoughtState::Rejected)
                && t.depth > 0
            {
                eprintln!(
                    "{}[{:.2} {}] {}",
                    "  ".repeat(t.depth as usize),
                    t.score.unwrap_or(0.0),
                    t.state.as_str(),
                    t.content.lines().next().unwrap_or_default()
                );
            }
        }
    });
    let result = engine.run(req, tx, controls, cancel).await;
    printer.await.context("the progress printer failed")?;
    let r = result?;
    if args.json {
        super::print_json(&json!({
            "answer": r.answer,
            "confidence": r.confidence,
            "reasoningSummary": r.reasoning_summary,
            "stats": r.stats,
            "graphState": r.graph_state,
            "sessionId": r.session,
            "runId": r.run,
            "nodeIds": r.thoughts.iter().map(|t| t.id).collect::<Vec<_>>(),
        }))?;
    } else {
        println!("{}", r.answer);
        eprintln!(
            "confidence {:.2} · {}\nsession {} · run {}",
            r.confidence, r.reasoning_summary, r.session, r.run
        );
    }
    Ok(if r.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}
