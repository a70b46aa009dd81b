//! The written policy a plan is audited against (configs/policy.md, or `--policy FILE`),
//! the checks the engine makes itself, and the test a model's violation must pass: it
//! quotes a rule the policy has.

use std::collections::HashSet;
use std::path::Path;

use super::params::ResearchParams;
use super::state::{Plan, Tool, Violation};

/// The default policy.
const BUILTIN: &str = include_str!("../../../configs/policy.md");

/// A policy: its text with the `[research]` budgets written in, and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub text: String,
    /// `built-in` or the file's path.
    pub source: String,
}

impl Policy {
    /// The built-in policy.
    pub fn builtin(params: &ResearchParams) -> Self {
        Self::new(BUILTIN, "built-in", params)
    }

    /// The policy in `path`; `Err` says why it cannot be used.
    pub fn from_file(path: &Path, params: &ResearchParams) -> Result<Self, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("policy {}: {e}", path.display()))?;
        if text.trim().is_empty() {
            return Err(format!("policy {}: the file is empty", path.display()));
        }
        Ok(Self::new(&text, &path.display().to_string(), params))
    }

    /// `text` with `[research] max_steps` and `[research] max_token_budget` replaced by the
    /// configured numbers, so the rules read as they apply.
    pub fn new(text: &str, source: &str, params: &ResearchParams) -> Self {
        let text = text
            .replace("[research] max_steps", &params.max_steps.to_string())
            .replace(
                "[research] max_token_budget",
                &params.max_token_budget.to_string(),
            );
        Self {
            text,
            source: source.to_string(),
        }
    }

    /// The policy's rules: its non-empty, non-heading lines, without list markers.
    pub fn rules(&self) -> impl Iterator<Item = &str> {
        self.text
            .lines()
            .map(|l| l.trim().trim_start_matches(['-', '*', '+']).trim_start())
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
    }

    /// The first rule that mentions every one of `words` (case-insensitive).
    fn find(&self, words: &[&str]) -> Option<String> {
        self.rules()
            .find(|r| {
                let r = r.to_lowercase();
                words.iter().all(|w| r.contains(&w.to_lowercase()))
            })
            .map(str::to_string)
    }

    /// The rule a model quoted, as the policy words it: the policy line that contains the
    /// quote, that the quote contains, or that shares most of its words. `None` when the
    /// policy has no such rule.
    pub fn quote(&self, rule: &str) -> Option<String> {
        let want = normalize(rule);
        if want.chars().count() < 8 {
            return None;
        }
        let words: HashSet<&str> = want.split(' ').collect();
        self.rules()
            .find(|r| {
                let have = normalize(r);
                if have.chars().count() < 8 {
                    return false;
                }
                if have.contains(&want) || want.contains(&have) {
                    return true;
                }
                let theirs: HashSet<&str> = have.split(' ').collect();
                let shared = words.intersection(&theirs).count() as f64;
                let union = words.union(&theirs).count() as f64;
                union > 0.0 && shared / union >= 0.6
            })
            .map(str::to_string)
    }

    /// The sources listed under a "Forbidden" heading that look like domains.
    fn forbidden_domains(&self) -> Vec<String> {
        let mut inside = false;
        let mut out = Vec::new();
        for line in self.text.lines() {
            let t = line.trim();
            if t.starts_with('#') {
                inside = t.to_lowercase().contains("forbidden");
                continue;
            }
            let item = t.trim_start_matches(['-', '*', '+']).trim();
            if inside
                && t.len() > item.len()
                && item.contains('.')
                && !item.contains(char::is_whitespace)
            {
                out.push(item.trim_end_matches('.').to_lowercase());
            }
        }
        out
    }

    /// What the engine itself finds wrong with `plan`: tools the network setting forbids,
    /// budgets, empty inputs, bad URLs and forbidden sources, each with the rule quoted from
    /// the policy (or the setting, when the policy has no such rule).
    pub fn check(&self, plan: &Plan, params: &ResearchParams) -> Vec<Violation> {
        let mut out = Vec::new();
        let mut add = |rule: Option<String>, fallback: String, problem: String| {
            out.push(Violation {
                rule: rule.unwrap_or(fallback),
                problem,
            });
        };
        if plan.steps.is_empty() {
            add(
                self.find(&["step"]),
                "a plan has at least one step".into(),
                "the plan has no steps".into(),
            );
        }
        if plan.steps.len() > params.max_steps {
            add(
                self.find(&["at most", "steps"]),
                format!("[research] max_steps = {}", params.max_steps),
                format!(
                    "the plan has {} steps; at most {} are allowed",
                    plan.steps.len(),
                    params.max_steps
                ),
            );
        }
        if plan.estimated_token_budget > params.max_token_budget {
            add(
                self.find(&["estimatedTokenBudget"]),
                format!("[research] max_token_budget = {}", params.max_token_budget),
                format!(
                    "the plan estimates {} tokens; the budget is {}",
                    plan.estimated_token_budget, params.max_token_budget
                ),
            );
        }
        let domains = self.forbidden_domains();
        for (i, step) in plan.steps.iter().enumerate() {
            let n = i + 1;
            if step.tool.network() && !params.allow_network {
                add(
                    self.find(&[step.tool.as_str()]),
                    "[research] allow_network = false".into(),
                    format!(
                        "step {n} uses {} but the network is off ([research] allow_network = false)",
                        step.tool
                    ),
                );
            }
            if step.input.trim().is_empty() {
                add(
                    self.find(&["non-empty input"]),
                    "every step needs an input".into(),
                    format!("step {n} has no input"),
                );
            }
            if step.tool == Tool::FetchUrl && !is_web_url(&step.input) {
                add(
                    self.find(&["fetch_url", "http"]),
                    "fetch_url takes one http or https URL".into(),
                    format!("step {n}: {:?} is not an http(s) URL", step.input.trim()),
                );
            }
            let input = step.input.to_lowercase();
            for d in domains.iter().filter(|d| input.contains(d.as_str())) {
                add(
                    self.find(&[d]),
                    d.clone(),
                    format!("step {n} reaches {d}, a forbidden source"),
                );
            }
        }
        out
    }
}

/// Whether `s` is one http(s) URL.
pub fn is_web_url(s: &str) -> bool {
    reqwest::Url::parse(s.trim())
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

/// Lowercase words separated by single spaces, without quotes or trailing punctuation.
fn normalize(s: &str) -> String {
    s.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '[' || c == ']'))
        .map(|w| w.trim_matches('.'))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::research::state::Step;

    fn step(tool: Tool, input: &str) -> Step {
        Step {
            id: "1".into(),
            tool,
            input: input.into(),
            rationale: "r".into(),
            output: None,
            error: None,
            node: None,
        }
    }

    #[test]
    fn the_builtin_policy_reads_with_the_configured_budgets() {
        let p = Policy::builtin(&ResearchParams::default());
        assert!(p.text.contains("at most 6 steps"), "{}", p.text);
        assert!(p.text.contains("must not exceed 32000"));
        assert_eq!(p.forbidden_domains(), vec!["pastebin.com".to_string()]);
    }

    #[test]
    fn a_quote_must_be_a_rule_the_policy_has() {
        let p = Policy::builtin(&ResearchParams::default());
        let q = p.quote("\"A plan has at most 6 steps\"").unwrap();
        assert_eq!(q, "A plan has at most 6 steps.");
        assert!(
            p.quote("Plans must use at least three web sources.")
                .is_none()
        );
        assert!(p.quote("ok").is_none());
        // Most of the words, in a slightly different form, still name the rule.
        assert!(
            p.quote("Every step needs a non-empty input and a rationale saying what it adds")
                .is_some()
        );
    }

    #[test]
    fn the_engine_rejects_network_tools_budgets_and_forbidden_sources() {
        let params = ResearchParams::default();
        let p = Policy::builtin(&params);
        let plan = Plan {
            objective: "o".into(),
            steps: vec![
                step(Tool::WebSearch, "rust news"),
                step(Tool::FetchUrl, "not a url"),
                step(Tool::KnowledgeSearch, "see pastebin.com/abc"),
                step(Tool::SessionSearch, " "),
            ],
            estimated_token_budget: 99_999,
            revision: 1,
        };
        let v = p.check(&plan, &params);
        let problems: Vec<&str> = v.iter().map(|v| v.problem.as_str()).collect();
        assert!(
            problems
                .iter()
                .any(|p| p.contains("step 1 uses web_search but the network is off")),
            "{problems:?}"
        );
        assert!(problems.iter().any(|p| p.contains("not an http(s) URL")));
        assert!(
            problems
                .iter()
                .any(|p| p.contains("pastebin.com, a forbidden source"))
        );
        assert!(problems.iter().any(|p| p.contains("step 4 has no input")));
        assert!(problems.iter().any(|p| p.contains("99999 tokens")));
        let network = v.iter().find(|v| v.problem.contains("web_search")).unwrap();
        assert!(
            network.rule.starts_with(
                "web_search and fetch_url may be used only when the network is allowed"
            )
        );
        let mut open = params.clone();
        open.allow_network = true;
        let ok = Plan {
            steps: vec![
                step(Tool::WebSearch, "rust news"),
                step(Tool::FetchUrl, "https://example.org/a"),
            ],
            estimated_token_budget: 1000,
            ..plan
        };
        assert!(p.check(&ok, &open).is_empty());
    }
}
