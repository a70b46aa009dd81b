//! The cache of pair judgements: what the model said of two reasoning steps (same, differs,
//! contradicts), keyed by a hash of the model and the two texts, so a diff shown again asks
//! the model nothing new.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::tables::*;
use super::*;

/// One cached judgement of a pair of steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairJudgement {
    /// `same`, `differs` or `contradicts`.
    pub label: String,
    /// The model's one-line reason.
    #[serde(default)]
    pub reason: String,
    /// The model that judged.
    pub model: String,
    pub judged_at: DateTime<Utc>,
}

impl Writer<'_> {
    /// Caches the judgement of the pair with `key` (the caller's hash of model and texts).
    pub fn put_pair_judgement(&mut self, key: [u8; 32], j: &PairJudgement) -> Result<()> {
        self.txn
            .open_table(PAIR_JUDGEMENTS)?
            .insert(key, codec::encode(j)?.as_slice())?;
        Ok(())
    }
}

impl Store {
    pub fn pair_judgement(&self, key: [u8; 32]) -> Result<Option<PairJudgement>> {
        let r = self.read()?;
        r.open_table(PAIR_JUDGEMENTS)?
            .get(key)?
            .map(|v| codec::decode("pair_judgements", v.value()))
            .transpose()
    }

    /// How many pair judgements are cached.
    pub fn pair_judgement_count(&self) -> Result<u64> {
        self.read()?.open_table(PAIR_JUDGEMENTS)?.len()
    }
}
