//! `glassbox insights`: metacognitive analysis of a session's recent reasoning.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::Ctx;
use super::got::{call_settings, ctrl_c_token};
use crate::config::providers;
use crate::engines::metacog::{FocusArea, Metacog};

#[derive(Debug, Args)]
pub struct InsightsArgs {
    /// The session to analyse (id or unique prefix).
    pub session: String,
    /// What to concentrate on.
    #[arg(long, value_enum, value_name = "AREA")]
    pub focus: Option<FocusArea>,
    /// Print the result as JSON (the /api/insights data plus sessionId, runId, nodeIds).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Ctx, args: InsightsArgs) -> Result<ExitCode> {
    let cfg = &ctx.loaded.config;
    let store = ctx.open_store()?;
    let session = store.resolve_session(&args.session)?;
    let built = providers::build(ctx)?;
    let engine = Metacog {
        store,
        provider: built.provider.clone(),
        call: call_settings(ctx, &built, cfg.metacog.effort, cfg.metacog.max_tokens),
        prompt: ctx.prompts().get("metacog/analyze").to_string(),
        config: cfg.metacog.clone(),
    };
    let spinner = super::working(
        &format!("analysing the session with {}", built.model),
        args.json,
    );
    let r = engine.analyze(session, args.focus, &ctrl_c_token()).await;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let r = r?;
    if args.json {
        super::print_json(&json!({
            "insights": r.insights,
            "summary": r.summary,
            "nodesAnalyzed": r.nodes_analyzed.len(),
            "invalidNodeRefs": r.invalid_node_refs,
            "validationErrors": r.validation_errors,
            "sessionId": session,
            "runId": r.run,
            "nodeIds": r.nodes_analyzed,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if r.insights.is_empty() {
        println!("no insights");
    }
    for e in &r.validation_errors {
        eprintln!("glassbox: dropped from the model's answer: {e}");
    }
    for i in &r.insights {
        println!(
            "[{}] ({:.2}) {}",
            i.insight_type.as_str(),
            i.confidence,
            i.insight
        );
        for e in &i.evidence {
            println!(
                "    {} ({:.2}): {}",
                e.node_id.short(),
                e.relevance,
                e.excerpt
            );
        }
    }
    if let Some(s) = &r.summary {
        println!("\n{s}");
    }
    eprintln!(
        "analysed {} nodes · {} evidence references to unknown nodes dropped · run {}",
        r.nodes_analyzed.len(),
        r.invalid_node_refs.len(),
        r.run
    );
    Ok(ExitCode::SUCCESS)
}
