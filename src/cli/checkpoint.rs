//! `glassbox checkpoint`: a human verdict on any node, with an alternative branch reasoned
//! from a correction when the verdict is `disagree`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::Ctx;
use super::fork::{engine, progress};
use crate::engines::fork::{ForkSettings, Verdict, record_verdict};

#[derive(Debug, Args)]
pub struct CheckpointArgs {
    /// The node to judge (id or unique prefix).
    pub node: String,
    /// The verdict.
    #[arg(long, value_enum)]
    pub verdict: Verdict,
    /// A correction (≤ 5,000 chars); with `disagree` it reasons an alternative branch.
    #[arg(long, value_name = "T")]
    pub correction: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Ctx, args: CheckpointArgs) -> Result<ExitCode> {
    let correction = args.correction.clone().filter(|c| !c.trim().is_empty());
    // Only a disagreement with a correction needs the model.
    let result = if args.verdict == Verdict::Disagree && correction.is_some() {
        let (engine, store, _cancel) = engine(ctx, None, None)?;
        let node = store.resolve_node(&args.node)?;
        let (tx, printer) = progress(false);
        let out = engine.checkpoint(node, args.verdict, correction, &tx).await;
        drop(tx);
        let _ = printer.await;
        out?
    } else {
        let store = ctx.open_store()?;
        let node = store.resolve_node(&args.node)?;
        let max = ForkSettings::new("").correction_max_chars;
        record_verdict(
            &store,
            node,
            args.verdict,
            correction,
            max,
            &ctx.loaded.config.memory.learn,
        )?
        .0
    };
    if args.json {
        let mut v = serde_json::to_value(&result)?;
        let mut ids = vec![result.annotation.id];
        ids.extend(result.alternative_branch.as_ref().map(|a| a.node_id));
        if let Some(m) = v.as_object_mut() {
            m.insert("nodeIds".into(), json!(ids));
        }
        super::print_json(&v)?;
    } else {
        println!(
            "annotation {} ({})",
            result.annotation.id,
            result.annotation.verdict.as_str()
        );
        if !result.disputed_nodes.is_empty() {
            println!(
                "{} downstream node(s) marked disputed",
                result.disputed_nodes.len()
            );
        }
        if !result.cleared_nodes.is_empty() {
            println!("{} node(s) no longer disputed", result.cleared_nodes.len());
        }
        if let Some(alt) = &result.alternative_branch {
            println!(
                "\n## alternative branch {} (confidence {:.2})\n{}",
                alt.node_id, alt.confidence, alt.reasoning
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
