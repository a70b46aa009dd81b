//! The convergence / divergence analysis over a fork's successful branches.

use serde_json::{Map, Value};

use super::branches::describe_branch;
use super::json::{Shape, UNSTATED_CONFIDENCE, confidence_of, field, list_of, text_of};
use super::{
    Agreement, BranchResult, Comparison, ConvergencePoint, DivergencePoint, Events, ForkEngine,
    ForkEvent, ForkStyle, Lane, MIN_BRANCHES, Position, RecommendedApproach, Significance,
};

impl ForkEngine {
    /// The comparison over the successful branches; never fails (the reason is kept).
    pub(super) async fn compare(
        &self,
        query: &str,
        branches: &[BranchResult],
        events: &Events,
    ) -> Comparison {
        let ok: Vec<&BranchResult> = branches.iter().filter(|b| b.ok()).collect();
        if ok.len() < MIN_BRANCHES {
            return Comparison {
                comparison_error: Some(format!(
                    "{} of {} branches succeeded; a comparison needs two",
                    ok.len(),
                    branches.len()
                )),
                ..Comparison::default()
            };
        }
        let mut user = format!("Question: {query}\n\nBranches:\n");
        for b in &ok {
            user.push_str(&describe_branch(b));
        }
        let lane = Lane::Comparison;
        let _ = events.send(ForkEvent::LaneStarted { lane, round: 0 });
        let out = self
            .structured(
                lane,
                self.prompts.get("comparison").to_string(),
                user,
                Shape::Comparison,
                self.settings.plan,
                events,
            )
            .await;
        match out {
            Ok((m, _)) => parse_comparison(&m),
            Err((e, _)) => Comparison {
                comparison_error: Some(e),
                ..Comparison::default()
            },
        }
    }
}

fn styles_of(v: Option<&Value>) -> Vec<ForkStyle> {
    list_of(v).iter().filter_map(|s| s.parse().ok()).collect()
}

pub(super) fn parse_comparison(m: &Map<String, Value>) -> Comparison {
    let objects = |names: &[&str]| -> Vec<Map<String, Value>> {
        match field(m, names) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|i| i.as_object().cloned())
                .collect(),
            _ => Vec::new(),
        }
    };
    let convergence_points = objects(&["convergencePoints", "convergence_points", "convergence"])
        .iter()
        .map(|p| ConvergencePoint {
            topic: text_of(field(p, &["topic"])),
            agreement_level: match text_of(field(p, &["agreementLevel", "agreement"]))
                .to_ascii_lowercase()
                .as_str()
            {
                "full" => Agreement::Full,
                "none" => Agreement::None,
                _ => Agreement::Partial,
            },
            styles: styles_of(field(p, &["styles"])),
            summary: text_of(field(p, &["summary"])),
        })
        .filter(|p| !p.topic.is_empty())
        .collect();
    let divergence_points = objects(&["divergencePoints", "divergence_points", "divergence"])
        .iter()
        .map(|p| DivergencePoint {
            topic: text_of(field(p, &["topic"])),
            positions: match field(p, &["positions"]) {
                Some(Value::Array(items)) => items
                    .iter()
                    .filter_map(Value::as_object)
                    .filter_map(|o| {
                        Some(Position {
                            style: text_of(field(o, &["style"])).parse().ok()?,
                            position: text_of(field(o, &["position"])),
                            confidence: confidence_of(field(o, &["confidence"]))
                                .unwrap_or(UNSTATED_CONFIDENCE),
                        })
                    })
                    .collect(),
                _ => Vec::new(),
            },
            significance: match text_of(field(p, &["significance"]))
                .to_ascii_lowercase()
                .as_str()
            {
                "high" => Significance::High,
                "low" => Significance::Low,
                _ => Significance::Medium,
            },
            recommendation: Some(text_of(field(p, &["recommendation"]))).filter(|r| !r.is_empty()),
        })
        .filter(|p| !p.topic.is_empty())
        .collect();
    let recommended_approach = field(m, &["recommendedApproach", "recommended_approach"])
        .and_then(Value::as_object)
        .and_then(|o| {
            Some(RecommendedApproach {
                style: text_of(field(o, &["style"])).parse().ok()?,
                rationale: text_of(field(o, &["rationale"])),
                confidence: confidence_of(field(o, &["confidence"])).unwrap_or(UNSTATED_CONFIDENCE),
            })
        });
    Comparison {
        convergence_points,
        divergence_points,
        meta_insight: text_of(field(m, &["metaInsight", "meta_insight"])),
        recommended_approach,
        comparison_error: None,
    }
}
