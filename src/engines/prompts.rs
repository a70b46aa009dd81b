//! Prompts are data: embedded defaults from configs/prompts, each overridable by a file of
//! the same relative path under `<config dir>/prompts/`.

use std::collections::BTreeMap;
use std::path::Path;

/// Every prompt glassbox ships, by name (its path under configs/prompts without `.md`).
const DEFAULTS: &[(&str, &str)] = &[
    (
        "local/thinking",
        include_str!("../../configs/prompts/local/thinking.md"),
    ),
    (
        "local/answer",
        include_str!("../../configs/prompts/local/answer.md"),
    ),
    (
        "orchestrator/compaction",
        include_str!("../../configs/prompts/orchestrator/compaction.md"),
    ),
    (
        "diff/judge",
        include_str!("../../configs/prompts/diff/judge.md"),
    ),
    (
        "diff/merge",
        include_str!("../../configs/prompts/diff/merge.md"),
    ),
    (
        "got/generate",
        include_str!("../../configs/prompts/got/generate.md"),
    ),
    (
        "got/evaluate",
        include_str!("../../configs/prompts/got/evaluate.md"),
    ),
    (
        "got/aggregate",
        include_str!("../../configs/prompts/got/aggregate.md"),
    ),
    (
        "verify/step",
        include_str!("../../configs/prompts/verify/step.md"),
    ),
    (
        "mcp/critique",
        include_str!("../../configs/prompts/mcp/critique.md"),
    ),
    (
        "metacog/analyze",
        include_str!("../../configs/prompts/metacog/analyze.md"),
    ),
    (
        "thinkfork/conservative",
        include_str!("../../configs/prompts/thinkfork/conservative.md"),
    ),
    (
        "thinkfork/aggressive",
        include_str!("../../configs/prompts/thinkfork/aggressive.md"),
    ),
    (
        "thinkfork/balanced",
        include_str!("../../configs/prompts/thinkfork/balanced.md"),
    ),
    (
        "thinkfork/contrarian",
        include_str!("../../configs/prompts/thinkfork/contrarian.md"),
    ),
    (
        "thinkfork/comparison",
        include_str!("../../configs/prompts/thinkfork/comparison.md"),
    ),
    (
        "thinkfork/debate",
        include_str!("../../configs/prompts/thinkfork/debate.md"),
    ),
    (
        "thinkfork/expand",
        include_str!("../../configs/prompts/thinkfork/expand.md"),
    ),
    (
        "thinkfork/merge",
        include_str!("../../configs/prompts/thinkfork/merge.md"),
    ),
    (
        "thinkfork/challenge",
        include_str!("../../configs/prompts/thinkfork/challenge.md"),
    ),
    (
        "thinkfork/repair",
        include_str!("../../configs/prompts/thinkfork/repair.md"),
    ),
    (
        "memory/extract",
        include_str!("../../configs/prompts/memory/extract.md"),
    ),
    (
        "memory/nli",
        include_str!("../../configs/prompts/memory/nli.md"),
    ),
    (
        "thinkfork/correction",
        include_str!("../../configs/prompts/thinkfork/correction.md"),
    ),
    (
        "pipeline/cortex",
        include_str!("../../configs/prompts/pipeline/cortex.md"),
    ),
    (
        "pipeline/instant",
        include_str!("../../configs/prompts/pipeline/instant.md"),
    ),
    (
        "pipeline/decomposition",
        include_str!("../../configs/prompts/pipeline/decomposition.md"),
    ),
    (
        "pipeline/primary_solver",
        include_str!("../../configs/prompts/pipeline/primary_solver.md"),
    ),
    (
        "pipeline/fast_critic",
        include_str!("../../configs/prompts/pipeline/fast_critic.md"),
    ),
    (
        "pipeline/refiner",
        include_str!("../../configs/prompts/pipeline/refiner.md"),
    ),
    (
        "pipeline/confidence_gate",
        include_str!("../../configs/prompts/pipeline/confidence_gate.md"),
    ),
    (
        "pipeline/deep_decomposition",
        include_str!("../../configs/prompts/pipeline/deep_decomposition.md"),
    ),
    (
        "pipeline/solver_a",
        include_str!("../../configs/prompts/pipeline/solver_a.md"),
    ),
    (
        "pipeline/solver_b",
        include_str!("../../configs/prompts/pipeline/solver_b.md"),
    ),
    (
        "pipeline/solver_c",
        include_str!("../../configs/prompts/pipeline/solver_c.md"),
    ),
    (
        "pipeline/skeptic",
        include_str!("../../configs/prompts/pipeline/skeptic.md"),
    ),
    (
        "pipeline/verifier",
        include_str!("../../configs/prompts/pipeline/verifier.md"),
    ),
    (
        "pipeline/synthesizer",
        include_str!("../../configs/prompts/pipeline/synthesizer.md"),
    ),
    (
        "pipeline/meta_critic",
        include_str!("../../configs/prompts/pipeline/meta_critic.md"),
    ),
    (
        "pipeline/re_synthesis",
        include_str!("../../configs/prompts/pipeline/re_synthesis.md"),
    ),
    (
        "pipeline/final_confidence",
        include_str!("../../configs/prompts/pipeline/final_confidence.md"),
    ),
    (
        "pipeline/repair",
        include_str!("../../configs/prompts/pipeline/repair.md"),
    ),
    (
        "research/thinker",
        include_str!("../../configs/prompts/research/thinker.md"),
    ),
    (
        "research/auditor",
        include_str!("../../configs/prompts/research/auditor.md"),
    ),
    (
        "research/synthesizer",
        include_str!("../../configs/prompts/research/synthesizer.md"),
    ),
    (
        "research/repair",
        include_str!("../../configs/prompts/research/repair.md"),
    ),
];

/// The loaded prompt set.
#[derive(Clone, Debug)]
pub struct Prompts {
    by_name: BTreeMap<&'static str, String>,
}

impl Prompts {
    /// Embedded defaults, each replaced by `<config_dir>/prompts/<name>.md` when that exists.
    pub fn load(config_dir: &Path) -> Self {
        let by_name = DEFAULTS
            .iter()
            .map(|(name, text)| {
                let file = config_dir.join("prompts").join(format!("{name}.md"));
                let text = std::fs::read_to_string(&file).unwrap_or_else(|_| (*text).to_string());
                (*name, text.trim().to_string())
            })
            .collect();
        Self { by_name }
    }

    /// The embedded defaults alone.
    pub fn builtin() -> Self {
        let by_name = DEFAULTS
            .iter()
            .map(|(name, text)| (*name, text.trim().to_string()))
            .collect();
        Self { by_name }
    }

    /// The prompt called `name`; empty for an unknown name.
    pub fn get(&self, name: &str) -> &str {
        self.by_name.get(name).map(String::as_str).unwrap_or("")
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_in_the_config_dir_override_defaults() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let d = Prompts::load(dir.path());
        assert!(d.get("local/thinking").starts_with("Think step by step"));
        std::fs::create_dir_all(dir.path().join("prompts/local")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.path().join("prompts/local/thinking.md"),
            "Reason briefly.\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            Prompts::load(dir.path()).get("local/thinking"),
            "Reason briefly."
        );
        assert_eq!(d.get("nope"), "");
    }
}
