//! The model's judgement of an aligned pair: the same point, a different one, or one that
//! contradicts the other. One structured answer type ([`PairAnswer`]) is both the remote
//! schema and the local grammar; judgements are cached in the store per model and pair.

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::{DiffError, Label};
use crate::engines::got::{CallSettings, call_model};
use crate::engines::llm::Provider;
use crate::engines::structured::{self, Artifact};
use crate::store::{PairJudgement, Store};

/// What the model says of two steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PairVerdict {
    /// Both steps make the same point.
    Same,
    /// They are about the same thing but say different things.
    #[default]
    Differs,
    /// One step says the other is wrong.
    Contradicts,
}

impl PairVerdict {
    pub fn label(self) -> Label {
        match self {
            PairVerdict::Same => Label::Same,
            PairVerdict::Differs => Label::Differs,
            PairVerdict::Contradicts => Label::Contradicts,
        }
    }
}

/// The structured answer of one pair judgement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairAnswer {
    pub label: PairVerdict,
    /// One short sentence: why.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub reason: String,
}

impl Artifact for PairAnswer {
    const TOOL: &'static str = "record_pair_label";
    const DESCRIPTION: &'static str =
        "Record whether two reasoning steps say the same, differ, or contradict each other.";
}

/// Who asks the model: its provider, call settings and system prompt.
#[derive(Clone)]
pub struct Judge {
    pub provider: std::sync::Arc<dyn Provider>,
    pub call: CallSettings,
    pub prompt: String,
}

/// The cache key of a pair: the model and both texts, in either order.
pub fn cache_key(model: &str, a: &str, b: &str) -> [u8; 32] {
    let (a, b) = (super::align::normalized(a), super::align::normalized(b));
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let mut h = Sha256::new();
    for part in [model, lo.as_str(), hi.as_str()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

impl Judge {
    /// The cached judgement of the pair, else the model's (then cached). `Ok(None)` when the
    /// model's answer could not be read twice over.
    pub async fn judge(
        &self,
        store: &Store,
        a: &str,
        b: &str,
        cancel: &CancellationToken,
    ) -> Result<(PairJudgement, bool), DiffError> {
        let key = cache_key(&self.call.model, a, b);
        if let Some(hit) = store.run_blocking(move |s| s.pair_judgement(key)).await? {
            return Ok((hit, true));
        }
        let user = format!("Step A: {}\n\nStep B: {}", a.trim(), b.trim());
        let mut last = String::new();
        for _ in 0..2 {
            let reply = call_model(
                self.provider.as_ref(),
                &self.call,
                &self.prompt,
                user.clone(),
                PairAnswer::schema(),
                cancel,
            )
            .await
            .map_err(DiffError::Model)?;
            match structured::read::<PairAnswer>(&reply.text) {
                Ok(ans) => {
                    let j = PairJudgement {
                        label: ans.label.label().as_str().to_string(),
                        reason: ans.reason.trim().to_string(),
                        model: self.call.model.clone(),
                        judged_at: Utc::now(),
                    };
                    let row = j.clone();
                    store
                        .write_async(move |w| w.put_pair_judgement(key, &row))
                        .await?;
                    return Ok((j, false));
                }
                Err(e) => last = e,
            }
        }
        Err(DiffError::Malformed(last))
    }
}
