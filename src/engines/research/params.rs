//! `[research]`: the numbers of the DeepTrust loop.

use serde::{Deserialize, Serialize};

/// Sampling and length of one model stage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSettings {
    pub temperature: f64,
    pub max_tokens: u32,
}

/// `[research]`: revisions, trace length, network, budgets, stage settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResearchParams {
    /// Seed 001 `maxPlanRevisions`: after this many rejected plans the run ends.
    pub max_plan_revisions: u32,
    /// Seed 001 `MAX_REASONING_ENTRIES`: the reasoning trace keeps the last 20 entries.
    pub reasoning_entries: usize,
    /// Whether `web_search` and `fetch_url` may run at all; off, a plan using them is
    /// rejected by the auditor.
    pub allow_network: bool,
    /// The most steps a plan may have (a policy budget the auditor enforces).
    pub max_steps: usize,
    /// The largest `estimatedTokenBudget` a plan may ask for (a policy budget).
    pub max_token_budget: u64,
    /// A tool's output is kept on its step up to this many characters.
    pub tool_output_chars: usize,
    /// Results a search tool returns per step (knowledge search uses `[knowledge] top_k`).
    pub max_results: usize,
    /// How long `fetch_url` may take, in milliseconds.
    pub fetch_timeout_ms: u64,
    /// Times a plan or audit that cannot be read is asked for again.
    pub repair_retries: u32,
    pub thinker: StageSettings,
    pub auditor: StageSettings,
    pub synthesizer: StageSettings,
}

impl Default for ResearchParams {
    fn default() -> Self {
        Self {
            max_plan_revisions: 3,
            reasoning_entries: 20,
            allow_network: false,
            max_steps: 6,
            max_token_budget: 32_000,
            tool_output_chars: 4_000,
            max_results: 5,
            fetch_timeout_ms: 15_000,
            repair_retries: 1,
            thinker: StageSettings {
                temperature: 0.0,
                max_tokens: 768,
            },
            auditor: StageSettings {
                temperature: 0.0,
                max_tokens: 512,
            },
            synthesizer: StageSettings {
                temperature: 0.0,
                max_tokens: 1_024,
            },
        }
    }
}
