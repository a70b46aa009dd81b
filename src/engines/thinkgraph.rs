//! ThinkGraph (interim interface while the engine lands).
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind { Analysis, Hypothesis, Evaluation, Conclusion, Consideration }
impl StepKind { pub fn as_str(self) -> &'static str { match self { StepKind::Analysis => "analysis", StepKind::Hypothesis => "hypothesis", StepKind::Evaluation => "evaluation", StepKind::Conclusion => "conclusion", StepKind::Consideration => "consideration" } } }
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step { pub index: u32, pub kind: StepKind, pub text: String, pub start: usize, pub confidence: f64 }
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision { pub step_index: u32, pub pattern: String, pub description: String, pub chosen_path: String, pub alternatives: Vec<crate::store::Alternative>, pub confidence: f64, pub offset: usize }
#[derive(Clone, Debug, PartialEq)]
pub enum GraphUpdate { Step(Step), Decision(Decision) }
#[derive(Debug, Default)]
pub struct ThinkGraphBuilder;
impl ThinkGraphBuilder { pub fn new() -> Self { Self } pub fn push(&mut self, _d: &str) -> Vec<GraphUpdate> { Vec::new() } pub fn finish(&mut self) -> Vec<GraphUpdate> { Vec::new() } pub fn confidence(&self) -> f64 { 0.5 } }
