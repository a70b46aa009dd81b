//! ThinkGraph: turns a model's thinking text into classified reasoning steps, decision
//! points (chosen path, rejected alternatives) and a confidence score, incrementally.
//!
//! This file holds the types and the incremental builder; `text` cuts text into
//! paragraphs, sentences and steps, `patterns` holds the regexes and the word scan that
//! spares most of them, `confidence` scores language and classifies steps, `decisions`
//! finds decision points.

mod confidence;
mod counted;
#[cfg(test)]
mod counted_tests;
mod decisions;
mod patterns;
#[cfg(test)]
mod scan_tests;
#[cfg(test)]
mod stored_tests;
#[cfg(test)]
mod tests;
mod text;

use serde::{Deserialize, Serialize};

use crate::store::{Alternative, Node};
use confidence::{
    MAX_CONFIDENCE, MIN_CONFIDENCE, STEP_NEUTRAL, Totals, node_confidence, signals_of,
};
use decisions::decisions_in_step;
use patterns::scan_words;
use text::{
    BlankLine, MAX_STEP_BYTES, SettleScan, TextHash, find_blank_line, step_spans, trimmed_span,
};

pub use confidence::classify_step;
pub use patterns::{DECISION_PATTERN_NAMES, warm_up};

/// The role a reasoning step plays.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    #[default]
    Analysis,
    Hypothesis,
    Evaluation,
    Conclusion,
    Consideration,
}

impl StepKind {
    /// The snake_case name, as stored and displayed.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Analysis => "analysis",
            StepKind::Hypothesis => "hypothesis",
            StepKind::Evaluation => "evaluation",
            StepKind::Conclusion => "conclusion",
            StepKind::Consideration => "consideration",
        }
    }
}

/// One reasoning step: a paragraph (or a sentence group of a very long paragraph). Stored
/// on its thinking node (see [`Step::of`]); a field missing from a stored step (written by
/// an older version or by hand) reads as its default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Step {
    /// Position of the step in the thinking text, from 0.
    pub index: u32,
    pub kind: StepKind,
    /// The step's text, trimmed.
    pub text: String,
    /// Byte offset of `text` in the whole thinking text.
    pub start: usize,
    /// Confidence from the step's own language, in [0.15, 0.95].
    pub confidence: f64,
}

/// The key of a thinking node's meta under which its steps are stored, in order.
const STEPS_KEY: &str = "steps";

impl Step {
    /// The steps stored on a thinking node, in order. An entry that does not read as a step
    /// (written by hand, or by an older version with fewer fields) is left out.
    pub fn of(node: &Node) -> Vec<Step> {
        node.meta
            .get(STEPS_KEY)
            .and_then(serde_json::Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(StoredStep::read)
                    .map(|s| s.into_step(&node.text))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many steps a thinking node holds, without reading them.
    pub fn count(node: &Node) -> usize {
        node.meta
            .get(STEPS_KEY)
            .and_then(serde_json::Value::as_array)
            .map_or(0, Vec::len)
    }

    /// Stores `steps` on the node, replacing what was there.
    pub fn store_all(node: &mut Node, steps: &[Step]) {
        let list = steps.iter().map(|s| s.to_value(&node.text)).collect();
        node.meta
            .insert(STEPS_KEY.into(), serde_json::Value::Array(list));
    }

    /// Appends one step to those stored on the node.
    pub fn append_to(&self, node: &mut Node) {
        let list = node
            .meta
            .entry(STEPS_KEY)
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(list) = list.as_array_mut() {
            list.push(self.to_value(&node.text));
        }
    }

    /// The step as kept on a node whose text is `text`: `[index, kind, start, len,
    /// confidence]`, where `start` and `len` say where the step's text lies in it, and the
    /// text itself as a sixth entry only when it is not there. A row rather than an object:
    /// a long trace has thousands of steps, built as it streams, and a row is one
    /// allocation where an object was a map and its keys.
    fn to_value(&self, text: &str) -> serde_json::Value {
        use serde_json::Value;
        let at = self.start..self.start + self.text.len();
        let mut row = Vec::with_capacity(6);
        row.extend([
            Value::from(self.index),
            Value::from(self.kind.as_str()),
            Value::from(self.start),
            Value::from(self.text.len()),
            Value::from(self.confidence),
        ]);
        if text.get(at) != Some(self.text.as_str()) {
            row.push(Value::from(self.text.as_str()));
        }
        Value::Array(row)
    }
}

/// A [`Step`] as kept in its node's meta: a row (see [`Step::to_value`]), or an object with
/// these fields as earlier versions wrote it. A step's text is a stretch of the node's own
/// text, so only its length is stored beside its offset (a long trace would otherwise hold
/// its text twice). Steps written before that, or whose text is not found at its offset,
/// carry `text`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StoredStep {
    index: u32,
    kind: StepKind,
    start: usize,
    len: Option<usize>,
    text: Option<String>,
    confidence: f64,
}

impl StoredStep {
    /// A stored entry, row or object; `None` when it is neither.
    fn read(v: &serde_json::Value) -> Option<Self> {
        let serde_json::Value::Array(row) = v else {
            return Self::deserialize(v).ok();
        };
        let number = |i: usize| row.get(i).and_then(serde_json::Value::as_u64);
        Some(Self {
            index: u32::try_from(number(0)?).ok()?,
            kind: StepKind::deserialize(row.get(1)?).ok()?,
            start: usize::try_from(number(2)?).ok()?,
            len: Some(usize::try_from(number(3)?).ok()?),
            confidence: row.get(4)?.as_f64()?,
            text: row.get(5).and_then(|t| t.as_str()).map(str::to_owned),
        })
    }

    /// The step, its text read from `node_text` when it was not stored (empty when the
    /// offsets do not fall in it).
    fn into_step(self, node_text: &str) -> Step {
        let text = match (self.text, self.len) {
            (Some(text), _) => text,
            (None, Some(len)) => node_text
                .get(self.start..self.start.saturating_add(len))
                .unwrap_or_default()
                .to_string(),
            (None, None) => String::new(),
        };
        Step {
            index: self.index,
            kind: self.kind,
            text,
            start: self.start,
            confidence: self.confidence,
        }
    }
}

/// A point where the model weighed alternatives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Index of the step that holds the decision sentence.
    pub step_index: u32,
    /// Name of the matching entry of [`DECISION_PATTERN_NAMES`].
    pub pattern: String,
    /// The decision sentence, at most 200 chars.
    pub description: String,
    /// What the model went with (at most 200 chars); the sentence when no choice is stated.
    pub chosen_path: String,
    /// Options not taken, rejected ones with their reason; at most 5.
    pub alternatives: Vec<Alternative>,
    /// Confidence from the language around the decision, in [0.15, 0.95].
    pub confidence: f64,
    /// Byte offset of the decision sentence in the whole thinking text.
    pub offset: usize,
}

/// Something that became final while thinking text streamed in.
#[derive(Clone, Debug, PartialEq)]
pub enum GraphUpdate {
    Step(Step),
    Decision(Decision),
}

/// The whole result of analysing one thinking text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub steps: Vec<Step>,
    pub decisions: Vec<Decision>,
    /// Node confidence, in [0.15, 0.95] and never exactly 0.5.
    pub confidence: f64,
}

/// Turns one paragraph (at byte `start` of the whole text) into steps and decisions.
fn analyze_paragraph(
    para: &str,
    start: usize,
    next_index: &mut u32,
    totals: &mut Totals,
    out: &mut Vec<GraphUpdate>,
) {
    let Some((a, b)) = trimmed_span(para, 0, para.len()) else {
        return;
    };
    let trimmed = para.get(a..b).unwrap_or("");
    for (s, e) in step_spans(trimmed) {
        let text = trimmed.get(s..e).unwrap_or("");
        analyze_step(text, start + a + s, next_index, totals, out);
    }
}

/// Turns one step's text (at byte `start` of the whole text) into a step and its decisions.
fn analyze_step(
    text: &str,
    start: usize,
    next_index: &mut u32,
    totals: &mut Totals,
    out: &mut Vec<GraphUpdate>,
) {
    let index = *next_index;
    *next_index = next_index.saturating_add(1);
    let words = scan_words(text);
    let (indicators, kind) = signals_of(text, &words);
    totals.indicators.add(indicators);
    totals.steps += 1;
    out.push(GraphUpdate::Step(Step {
        index,
        kind,
        text: text.to_string(),
        start,
        confidence: indicators
            .score(STEP_NEUTRAL)
            .clamp(MIN_CONFIDENCE, MAX_CONFIDENCE),
    }));
    let decisions = decisions_in_step(text, start, index, words.decision_candidates());
    totals.decisions += decisions.len();
    out.extend(decisions.into_iter().map(GraphUpdate::Decision));
}

/// An unfinished paragraph this long (bytes) has its settled steps cut off as it streams,
/// rather than all at its end.
const LONG_PARAGRAPH: usize = 4 * MAX_STEP_BYTES;

/// Builds the graph of a streaming thinking text: paragraphs become steps (and their
/// decisions) as soon as a blank line closes them.
#[derive(Debug)]
pub struct ThinkGraphBuilder {
    /// Text of the unfinished paragraph.
    pending: String,
    /// Byte offset of `pending` in the whole text.
    pending_start: usize,
    /// Offset in `pending` where the blank-line search resumes.
    scan_from: usize,
    /// How far the unfinished paragraph is cut into settled steps.
    settle: SettleScan,
    next_index: u32,
    totals: Totals,
    /// The whole text's hash and length, for the node's confidence.
    hashed: TextHash,
}

impl Default for ThinkGraphBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ThinkGraphBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self {
            pending: String::new(),
            pending_start: 0,
            scan_from: 0,
            settle: SettleScan::default(),
            next_index: 0,
            totals: Totals::default(),
            hashed: TextHash::default(),
        }
    }

    /// Adds a delta of thinking text; returns the steps and decisions it made final.
    pub fn push(&mut self, delta: &str) -> Vec<GraphUpdate> {
        self.hashed.push(delta);
        self.pending.push_str(delta);
        let mut out = Vec::new();
        let mut para_start = 0;
        let mut pos = self.scan_from;
        loop {
            match find_blank_line(&self.pending, pos) {
                BlankLine::Found { para_end, next } => {
                    let para = self.pending.get(para_start..para_end).unwrap_or("");
                    analyze_paragraph(
                        para,
                        self.pending_start + para_start,
                        &mut self.next_index,
                        &mut self.totals,
                        &mut out,
                    );
                    para_start = next;
                    pos = next;
                }
                BlankLine::Undecided(at) => {
                    pos = at;
                    break;
                }
                BlankLine::Absent => {
                    pos = self.pending.len();
                    break;
                }
            }
        }
        if para_start > 0 {
            self.pending.drain(..para_start);
            self.pending_start += para_start;
            // A new paragraph is the unfinished one.
            self.settle = SettleScan::default();
        }
        self.scan_from = pos - para_start;
        if self.pending.len() >= LONG_PARAGRAPH {
            self.settle_long_paragraph(&mut out);
        }
        out
    }

    /// Makes final the steps of the unfinished paragraph that can no longer change. The
    /// text before `scan_from` is surely in it; the steps are the same as those the whole
    /// paragraph gives once it ends. The text is read on from where the last call stopped.
    fn settle_long_paragraph(&mut self, out: &mut Vec<GraphUpdate>) {
        let known = self.pending.get(..self.scan_from).unwrap_or("");
        let mut spans = Vec::new();
        let rest = self.settle.advance(known, &mut spans);
        for (s, e) in spans {
            let text = known.get(s..e).unwrap_or("");
            analyze_step(
                text,
                self.pending_start + s,
                &mut self.next_index,
                &mut self.totals,
                out,
            );
        }
        if rest > 0 {
            self.pending.drain(..rest);
            self.pending_start += rest;
            self.scan_from -= rest;
            self.settle.shift(rest);
        }
    }

    /// Ends the text: the last paragraph becomes final.
    pub fn finish(&mut self) -> Vec<GraphUpdate> {
        let mut out = Vec::new();
        analyze_paragraph(
            &self.pending,
            self.pending_start,
            &mut self.next_index,
            &mut self.totals,
            &mut out,
        );
        self.pending_start += self.pending.len();
        self.pending.clear();
        self.scan_from = 0;
        self.settle = SettleScan::default();
        out
    }

    /// Node confidence of the text so far, in [0.15, 0.95] and never exactly 0.5.
    pub fn confidence(&self) -> f64 {
        node_confidence(&self.totals, self.hashed.chars(), self.hashed.hash())
    }
}

/// Analyses a whole thinking text; same steps, decisions and confidence as a
/// [`ThinkGraphBuilder`] fed the text in any chunks and then finished.
pub fn analyze(text: &str) -> Analysis {
    let mut builder = ThinkGraphBuilder::new();
    let mut updates = builder.push(text);
    updates.extend(builder.finish());
    let mut steps = Vec::new();
    let mut decisions = Vec::new();
    for update in updates {
        match update {
            GraphUpdate::Step(s) => steps.push(s),
            GraphUpdate::Decision(d) => decisions.push(d),
        }
    }
    Analysis {
        steps,
        decisions,
        confidence: builder.confidence(),
    }
}

/// The decision points of a whole thinking text.
pub fn extract_decision_points(text: &str) -> Vec<Decision> {
    analyze(text).decisions
}
