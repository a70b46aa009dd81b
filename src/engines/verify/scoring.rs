//! The arithmetic of a verified chain (its score, first error and patterns) and the
//! reading of one step's judgement from a model answer.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Issue, IssueKind, Pattern, Severity, StepVerification, Verdict, VerifyParams};
use crate::engines::got::{json_object, number};

/// How much of an unreadable verifier answer its step's explanation quotes (glassbox's own
/// choice: enough to see what came back).
const UNREADABLE_EXCERPT_CHARS: usize = 200;

/// Product of the per-step factors, then its geometric mean over the steps: a correct
/// step multiplies by its confidence, an incorrect one by `(1 − confidence) ·
/// incorrect_factor`, a neutral one by `neutral_factor`, an uncertain one by
/// `uncertain_factor`. An empty chain scores 0.
pub fn chain_score(steps: &[StepVerification], cfg: &VerifyParams) -> f64 {
    if steps.is_empty() {
        return 0.0;
    }
    let product: f64 = steps
        .iter()
        .map(|s| match s.verdict {
            Verdict::Correct => s.confidence,
            Verdict::Incorrect => (1.0 - s.confidence) * cfg.incorrect_factor,
            Verdict::Neutral => cfg.neutral_factor,
            Verdict::Uncertain => cfg.uncertain_factor,
        })
        .product();
    product.powf(1.0 / steps.len() as f64)
}

/// Index of the first incorrect step, −1 when none is.
pub fn first_error(steps: &[StepVerification]) -> i64 {
    steps
        .iter()
        .position(|s| s.verdict == Verdict::Incorrect)
        .map_or(-1, |i| i as i64)
}

/// `declining_confidence`, `recurring_{issue}` and `overconfidence_before_error`.
pub fn detect_patterns(steps: &[StepVerification], cfg: &VerifyParams) -> Vec<Pattern> {
    let mut out = Vec::new();
    let conf: Vec<f64> = steps.iter().map(|s| s.confidence).collect();
    if conf.len() >= cfg.declining_min_steps.max(2)
        && conf.windows(2).all(|w| w[1] <= w[0])
        && conf[0] - conf[conf.len() - 1] > cfg.declining_spread
    {
        out.push(Pattern {
            name: "declining_confidence".into(),
            description: format!(
                "Confidence falls step after step, from {:.2} to {:.2}",
                conf[0],
                conf[conf.len() - 1]
            ),
            affected_steps: (0..conf.len()).collect(),
        });
    }
    let mut by_issue: BTreeMap<IssueKind, Vec<usize>> = BTreeMap::new();
    for s in steps {
        for i in &s.issues {
            let list = by_issue.entry(i.kind).or_default();
            if !list.contains(&s.step_index) {
                list.push(s.step_index);
            }
        }
    }
    for (kind, affected) in by_issue {
        if affected.len() >= cfg.recurring_min_steps {
            out.push(Pattern {
                name: format!("recurring_{}", kind.as_str()),
                description: format!(
                    "{} appears in {} steps",
                    kind.as_str().replace('_', " "),
                    affected.len()
                ),
                affected_steps: affected,
            });
        }
    }
    for w in steps.windows(2) {
        if w[0].verdict == Verdict::Correct
            && w[0].confidence >= cfg.high_confidence
            && w[1].verdict == Verdict::Incorrect
        {
            out.push(Pattern {
                name: "overconfidence_before_error".into(),
                description: format!(
                    "Step {} was judged correct with confidence {:.2}, then step {} was wrong",
                    w[0].step_index, w[0].confidence, w[1].step_index
                ),
                affected_steps: vec![w[0].step_index, w[1].step_index],
            });
        }
    }
    out
}

/// Reads a step judgement from a model answer; an unreadable one is `uncertain` with
/// confidence 0.
pub fn parse_step(index: usize, text: &str) -> StepVerification {
    let Some(obj) = json_object(text) else {
        return StepVerification {
            step_index: index,
            verdict: Verdict::Uncertain,
            confidence: 0.0,
            explanation: format!(
                "the verifier's answer was not readable: {}",
                text.trim()
                    .chars()
                    .take(UNREADABLE_EXCERPT_CHARS)
                    .collect::<String>()
            ),
            issues: Vec::new(),
            suggested_correction: None,
            unreadable: Some(format!(
                "the verifier's answer was not readable: {}",
                text.trim()
                    .chars()
                    .take(UNREADABLE_EXCERPT_CHARS)
                    .collect::<String>()
            )),
        };
    };
    let verdict = obj
        .get("verdict")
        .and_then(Value::as_str)
        .and_then(Verdict::parse);
    let unreadable = verdict.is_none().then(|| {
        format!(
            "the verifier's answer names no verdict: {}",
            Value::Object(obj.clone())
                .to_string()
                .chars()
                .take(UNREADABLE_EXCERPT_CHARS)
                .collect::<String>()
        )
    });
    let verdict = verdict.unwrap_or(Verdict::Uncertain);
    let confidence = number(obj.get("confidence"))
        .filter(|c| c.is_finite())
        .map_or(0.0, |c| if c > 1.0 { c / 100.0 } else { c }.clamp(0.0, 1.0));
    let issues = obj
        .get("issues")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|i| {
                    let kind = IssueKind::parse(i.get("type")?.as_str()?)?;
                    let severity = match i.get("severity").and_then(Value::as_str) {
                        Some(s) if s.eq_ignore_ascii_case("critical") => Severity::Critical,
                        Some(s) if s.eq_ignore_ascii_case("major") => Severity::Major,
                        _ => Severity::Minor,
                    };
                    Some(Issue {
                        kind,
                        description: i
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        severity,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let correction = ["suggestedCorrection", "suggested_correction"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    StepVerification {
        step_index: index,
        verdict,
        confidence,
        explanation: obj
            .get("explanation")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        issues,
        suggested_correction: correction,
        unreadable,
    }
}
