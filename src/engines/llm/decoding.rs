//! How the embedded model picks its tokens and how long each kind of pass may run:
//! `[providers.local.decoding]`.
//!
//! A small model decoded greedily falls into loops ("1. Identify the question… 2. Identify
//! the answer…" eighty times over). A repetition penalty over the recent tokens and DRY
//! ("don't repeat yourself": a penalty that grows with the length of a sequence the model
//! is about to repeat) break those loops without sampling at random, so a run stays
//! reproducible: greedy when the temperature is 0, else seeded. Structured answers get a
//! cap of their own, large enough for the grammar-bounded answer, so every structured call
//! ends with a whole object.

use serde::{Deserialize, Serialize};

/// The local model's sampling and per-role token caps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalDecoding {
    /// Temperature when the request names none; 0 decodes greedily.
    pub temperature: f64,
    /// Nucleus cut-off when sampling, in (0, 1].
    pub top_p: f64,
    /// Drop tokens less likely than this fraction of the likeliest one, in [0, 1).
    pub min_p: f64,
    /// Seed when the request names none, so sampled runs repeat.
    pub seed: u32,
    /// Penalty on tokens seen in the last `repeat_last_n` tokens; 1 turns it off.
    pub repeat_penalty: f64,
    /// How many recent tokens the repetition penalty looks at.
    pub repeat_last_n: i32,
    /// DRY penalty strength; 0 turns it off.
    pub dry_multiplier: f64,
    /// DRY growth: the penalty is multiplier × base^(length − allowed length).
    pub dry_base: f64,
    /// Longest repeated sequence DRY lets pass without penalty.
    pub dry_allowed_length: i32,
    /// How many recent tokens DRY looks at; -1 for the whole context.
    pub dry_last_n: i32,
    /// Most tokens of a thinking pass.
    pub thinking_tokens: u32,
    /// Most tokens of a structured (grammar-constrained) answer.
    pub structured_tokens: u32,
}

/// The sequences DRY never carries a repeat across: line ends, the JSON punctuation every
/// structured answer repeats, and markdown emphasis.
pub const DRY_BREAKERS: [&str; 4] = ["\n", ":", "\"", "*"];

impl Default for LocalDecoding {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_p: 0.95,
            min_p: 0.05,
            seed: 42,
            repeat_penalty: 1.15,
            repeat_last_n: 128,
            dry_multiplier: 0.8,
            dry_base: 1.75,
            dry_allowed_length: 2,
            dry_last_n: -1,
            thinking_tokens: 512,
            structured_tokens: 768,
        }
    }
}
