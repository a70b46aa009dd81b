//! `glassbox verify`: judge a reasoning chain step by step (from a JSON file or a thinking
//! node's steps) and print the verdicts, the chain score and the patterns.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use super::Ctx;
use super::got::{call_settings, ctrl_c_token};
use crate::config::providers;
use crate::engines::llm::Effort;
use crate::engines::verify::{StepInput, Verdict, Verifier, VerifyRequest, node_steps};
use crate::store::NodeType;

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("source").required(true).args(["steps_file", "node"]))]
pub struct VerifyArgs {
    /// A JSON array of steps: [{"content": "...", "type": "analysis"}, ...].
    #[arg(long, value_name = "FILE")]
    pub steps_file: Option<std::path::PathBuf>,
    /// A thinking node (id or unique prefix) whose ThinkGraph steps to verify.
    #[arg(long, value_name = "ID")]
    pub node: Option<String>,
    /// The question the chain answers (for --node: its session's query by default).
    #[arg(long, value_name = "TEXT")]
    pub question: Option<String>,
    /// Score a valid chain must reach, 0–1 (default from [verify]).
    #[arg(long, value_name = "X")]
    pub threshold: Option<f64>,
    /// Effort of each step's verification (default from [verify] effort).
    #[arg(long, value_enum)]
    pub effort: Option<Effort>,
    /// Print the result as JSON (the /api/verify data plus sessionId, runId, nodeIds).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Ctx, args: VerifyArgs) -> Result<ExitCode> {
    let cfg = &ctx.loaded.config;
    let store = ctx.open_store()?;
    let mut question = args.question.clone();
    let (steps, source) = match (&args.steps_file, &args.node) {
        (Some(file), _) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let steps: Vec<StepInput> = serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not a JSON array of {{content, type?}} steps",
                    file.display()
                )
            })?;
            (steps, None)
        }
        (None, Some(node)) => {
            let id = store.resolve_node(node)?;
            let (n, steps) = node_steps(&store, id)?;
            if question.is_none() {
                let nodes = store.session_nodes(n.session)?;
                question = nodes
                    .iter()
                    .take_while(|m| m.id != n.id)
                    .filter(|m| m.kind == NodeType::Query)
                    .last()
                    .map(|q| q.text.clone());
            }
            (steps, Some(id))
        }
        (None, None) => anyhow::bail!("give --steps-file FILE or --node ID"),
    };
    let built = providers::build(ctx)?;
    let verifier = Verifier {
        store,
        provider: built.provider.clone(),
        call: call_settings(
            ctx,
            &built,
            args.effort.unwrap_or(cfg.verify.effort),
            cfg.verify.max_tokens,
        ),
        prompt: ctx.prompts().get("verify/step").to_string(),
        config: cfg.verify.clone(),
    };
    let req = VerifyRequest {
        steps: steps.clone(),
        source,
        original_query: question,
        threshold: args.threshold,
        session: None,
    };
    let spinner = super::working(
        &format!("verifying {} steps with {}", steps.len(), built.model),
        args.json,
    );
    let out = verifier.verify(req, &ctrl_c_token()).await;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let out = out?;
    let c = &out.chain;
    if args.json {
        super::print_json(&json!({
            "overallScore": c.overall_score,
            "isValid": c.is_valid,
            "firstErrorAt": c.first_error_at,
            "summary": c.summary,
            "steps": c.steps,
            "patterns": c.patterns,
            "metadata": c.metadata,
            "sessionId": out.session,
            "runId": out.run,
            "nodeIds": out.nodes,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    for (s, input) in c.steps.iter().zip(&steps) {
        let mark = match s.verdict {
            Verdict::Correct => "✓",
            Verdict::Incorrect => "✗",
            Verdict::Neutral => "~",
            Verdict::Uncertain => "?",
        };
        println!(
            "{mark} {:>2} [{:.2}] {}",
            s.step_index,
            s.confidence,
            input.content.lines().next().unwrap_or_default()
        );
        if !s.explanation.is_empty() {
            println!("       {}", s.explanation);
        }
        for i in &s.issues {
            println!(
                "       {} ({:?}): {}",
                i.kind.as_str(),
                i.severity,
                i.description
            );
        }
        if let Some(fix) = &s.suggested_correction {
            println!("       suggested: {fix}");
        }
    }
    for p in &c.patterns {
        println!("pattern {}: {}", p.name, p.description);
    }
    println!(
        "{} — {}",
        if c.is_valid { "valid" } else { "not valid" },
        c.summary
    );
    eprintln!("session {} · run {}", out.session, out.run);
    Ok(ExitCode::SUCCESS)
}
