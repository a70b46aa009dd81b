//! How a run reads to a person and to the model: the plan and the audit as text, the plan
//! as the thinker writes it, and the report's citations.

use super::answers::{PlanDraft, StepDraft};
use super::state::{AuditResult, Citation, Plan, Verdict};
use super::tools::locator;

/// The plan as the model writes it (no ids, outputs or revision).
pub(super) fn draft_of(p: &Plan) -> PlanDraft {
    PlanDraft {
        objective: p.objective.clone(),
        steps: p
            .steps
            .iter()
            .map(|s| StepDraft {
                tool: s.tool,
                input: s.input.clone(),
                rationale: s.rationale.clone(),
            })
            .collect(),
        estimated_token_budget: p.estimated_token_budget,
    }
}

/// The plan as a person reads it.
pub fn plan_markdown(p: &Plan) -> String {
    let mut out = format!("Plan (revision {}): {}\n\n", p.revision, p.objective);
    for (i, s) in p.steps.iter().enumerate() {
        out.push_str(&format!("{}. {} {:?}", i + 1, s.tool, s.input));
        if !s.rationale.is_empty() {
            out.push_str(&format!(" — {}", s.rationale));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "\nEstimated token budget: {}",
        p.estimated_token_budget
    ));
    out
}

/// The audit as a person reads it.
pub fn audit_markdown(a: &AuditResult) -> String {
    let mut out = match a.verdict {
        Verdict::Approved => "Audit: approved".to_string(),
        Verdict::Rejected => "Audit: rejected".to_string(),
    };
    for v in &a.policy_violations {
        out.push_str(&format!("\n- violation: {v}"));
    }
    for s in &a.suggestions {
        out.push_str(&format!("\n- suggestion: {s}"));
    }
    for n in &a.notes {
        out.push_str(&format!("\n- note: {n}"));
    }
    out
}

/// The report with its sources listed under it, and the citations marked cited where the
/// text names them (`[n]`).
pub(super) fn cite(text: &str, mut sources: Vec<Citation>) -> (String, Vec<Citation>) {
    let cited: std::collections::HashSet<usize> = citation_numbers(text).into_iter().collect();
    for c in &mut sources {
        c.cited = cited.contains(&c.n);
    }
    let mut report = text.to_string();
    if !sources.is_empty() {
        report.push_str("\n\n## Sources\n");
        for c in &sources {
            report.push_str(&format!("\n[{}] {} — {}", c.n, c.label, locator(c)));
            if !c.cited {
                report.push_str(" (not cited)");
            }
        }
    }
    (report, sources)
}

/// The numbers cited as `[n]` (or `[n, m]`) in `text`.
fn citation_numbers(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find(']') else { break };
        let inside = &rest[..close];
        if inside
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',' || c == ' ')
        {
            out.extend(
                inside
                    .split(',')
                    .filter_map(|n| n.trim().parse::<usize>().ok()),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::research::CitationKind;

    #[test]
    fn citations_are_read_from_the_report_and_listed_under_it() {
        assert_eq!(citation_numbers("a [1] b [2, 3][x] [4"), vec![1, 2, 3]);
        let src = |n: usize| Citation {
            n,
            kind: CitationKind::Knowledge,
            source: format!("/k/{n}.md"),
            span: Some([0, 10]),
            label: format!("doc {n}"),
            text: "t".into(),
            step: None,
            cited: false,
        };
        let (report, c) = cite("It is so [2].", vec![src(1), src(2)]);
        assert!(!c[0].cited && c[1].cited);
        assert!(report.contains("[2] doc 2 — /k/2.md:0-10"), "{report}");
        assert!(report.contains("[1] doc 1 — /k/1.md:0-10 (not cited)"));
    }
}
