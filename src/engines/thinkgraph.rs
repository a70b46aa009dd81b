//! ThinkGraph: turns a model's thinking text into classified reasoning steps, decision
//! points (chosen path, rejected alternatives) and a confidence score, incrementally.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use serde::{Deserialize, Serialize};

use crate::store::{Alternative, Node};

/// Paragraphs longer than this (bytes) are split into sentence groups of at most this size.
const MAX_STEP_BYTES: usize = 600;
/// Decision descriptions and chosen/alternative paths are cut to this many chars.
const MAX_DESCRIPTION_CHARS: usize = 200;
/// Reasoning excerpts (rejection reasons) are cut to this many chars.
const MAX_EXCERPT_CHARS: usize = 500;
/// At most this many alternatives are kept per decision point.
const MAX_ALTERNATIVES: usize = 5;
/// Sentences before a decision sentence searched for alternatives.
const CONTEXT_BEFORE: usize = 2;
/// Sentences after a decision sentence searched for the chosen path and alternatives.
const CONTEXT_AFTER: usize = 3;
/// Bounds of the node confidence.
const MIN_CONFIDENCE: f64 = 0.15;
const MAX_CONFIDENCE: f64 = 0.95;

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
                    .filter_map(|v| Step::deserialize(v).ok())
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
        node.meta.insert(
            STEPS_KEY.into(),
            serde_json::Value::Array(steps.iter().map(Step::to_value).collect()),
        );
    }

    /// Appends one step to those stored on the node.
    pub fn append_to(&self, node: &mut Node) {
        let list = node
            .meta
            .entry(STEPS_KEY)
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(list) = list.as_array_mut() {
            list.push(self.to_value());
        }
    }

    fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
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

// ---------------------------------------------------------------------------------------
// Patterns. All are case-insensitive, use ASCII word boundaries and only bounded
// repetitions (`.{1,200}?`), so matching stays linear on any input.
// ---------------------------------------------------------------------------------------

/// The 12 decision patterns, in priority order (the first that matches names the decision).
const DECISION_PATTERNS: [(&str, &str); 12] = [
    (
        "could_either",
        r"\b(?:could|can|might|may|should)\s+either\b",
    ),
    ("decided_to", r"\b(?:decided|decide|deciding)\s+to\b"),
    (
        "selected_over",
        r"\b(?:selected|select|chose|choose|chosen|picked|pick|prefer|preferred|favou?r|favou?red)\s+.{1,200}?\s+over\b",
    ),
    ("on_one_hand", r"\bon\s+(?:the\s+)?one\s+hand\b"),
    (
        "alternatively",
        r"\balternatively\b|\banother\s+(?:option|approach|alternative|way)\s+(?:is|would\s+be)\b",
    ),
    ("instead_of", r"\binstead\s+of\b"),
    (
        "weighing",
        r"\b(?:weighing|weigh|trade-?offs?\s+between|pros\s+and\s+cons)\b",
    ),
    (
        "options_are",
        r"\b(?:options|choices|approaches|alternatives)\s+(?:are|include|would\s+be)\b",
    ),
    ("go_with", r"\b(?:go|going|went)\s+with\b"),
    ("rather_than", r"\brather\s+than\b"),
    (
        "chose_because",
        r"\b(?:chose|choose|chosen|picked|pick|picking|opted\s+for)\s+.{1,200}?\s+because\b",
    ),
    (
        "comparing_vs",
        r"\b(?:vs|versus)\b|\b(?:comparing|compare|compared)\s+.{1,200}?\s+(?:to|with|against|and)\b",
    ),
];

/// Names of the 12 decision patterns, in priority order.
pub const DECISION_PATTERN_NAMES: [&str; 12] = [
    "could_either",
    "decided_to",
    "selected_over",
    "on_one_hand",
    "alternatively",
    "instead_of",
    "weighing",
    "options_are",
    "go_with",
    "rather_than",
    "chose_because",
    "comparing_vs",
];

/// The 8 choice patterns; group `c` is the chosen path. Tried in order on the decision
/// sentence, then on the sentences after it.
const CHOICE_PATTERNS: [&str; 8] = [
    // "I'll go with X"
    r"\b(?:go|going|went)\s+with\s+(?P<c>.{1,200})",
    // "Decided to X"
    r"\b(?:decided|decide|deciding)\s+to\s+(?P<c>.{1,200})",
    // "Selected X over Y", "chose X because"
    r"\b(?:selected|select|chose|choose|chosen|picked|pick|prefer|preferred|favou?r|favou?red)\s+(?P<c>.{1,200}?)(?:\s+(?:over|instead\s+of|rather\s+than|because|since)\b|[,;:]|$)",
    // "I'll use X", "let's try X"
    r"\b(?:i'll|i\s+will|we'll|we\s+will|let's|let\s+me|i\s+should|we\s+should)\s+(?:use|try|take|pick)\s+(?P<c>.{1,200})",
    // "opted for X", "settled on X"
    r"\b(?:opt|opted|opting|settle|settled|settling|landed)\s+(?:for|on)\s+(?P<c>.{1,200})",
    // "the best option is X"
    r"\bthe\s+(?:best|better|right|correct|simplest|safest)\s+(?:option|approach|choice|path|bet|way)\s+(?:is|would\s+be|seems\s+to\s+be)\s+(?P<c>.{1,200})",
    // "X rather than Y"
    r"^(?P<c>.{1,200}?),?\s+(?:rather\s+than|instead\s+of)\b",
    // "Instead of Y, X"
    r"\binstead\s+of\s+.{1,200}?,\s*(?P<c>.{1,200})",
];

/// End of an alternative: a reason clause, punctuation or the end of the sentence.
const ALT_TAIL: &str =
    r"(?:,?\s+(?:because|since|as|due\s+to)\s+(?P<r>.{1,300})|[,;:]|\s+(?:so|and\s+so)\b|$)";

/// The 6 rejection patterns; group `alt` is the rejected option, `r` the reason if given.
/// The two without `alt` name their subject before the match ("X won't work", "X is
/// worse"); it is read backwards by [`subject_before`], which keeps the regexes anchored
/// on a literal.
static REJECTION_SOURCES: LazyLock<[String; 6]> = LazyLock::new(|| {
    [
        // "ruled out X because Y"
        format!(r"\brul(?:ed|e|ing)\s+out\s+(?P<alt>.{{1,200}}?){ALT_TAIL}"),
        // "rejected X"
        format!(
            r"\b(?:rejected|reject|rejecting|discarded|discard|dismissed|dropped)\s+(?P<alt>.{{1,200}}?){ALT_TAIL}"
        ),
        // "X won't work because Y"
        r"\s+(?:won't|will\s+not|wouldn't|would\s+not|doesn't|does\s+not|can't|cannot)\s+work\b(?:,?\s+(?:because|since|as|due\s+to)\s+(?P<r>.{1,300}))?".to_string(),
        // "decided against X"
        format!(r"\bdecided\s+against\s+(?P<alt>.{{1,200}}?){ALT_TAIL}"),
        // "not X because Y"
        r"\bnot\s+(?P<alt>.{1,200}?),?\s+(?:because|since)\s+(?P<r>.{1,300})".to_string(),
        // "X is worse"
        r"\s+(?:is|seems|would\s+be|looks)\s+(?:worse|inferior|slower|weaker|too\s+slow|too\s+complex|riskier)\b(?:.{0,100}?\s+(?:because|since|as|due\s+to)\s+(?P<r>.{1,300}))?".to_string(),
    ]
});

/// Longest subject (chars) read before "won't work" / "is worse".
const MAX_SUBJECT_CHARS: usize = 100;

/// The phrase of word chars, spaces, `'` and `-` that ends right before byte `end`:
/// at most 100 chars, starting at a word char.
fn subject_before(sentence: &str, end: usize) -> Option<&str> {
    let before = sentence.get(..end)?;
    let mut start = before.len();
    for (taken, (i, c)) in before.char_indices().rev().enumerate() {
        if taken > MAX_SUBJECT_CHARS
            || !(c.is_alphanumeric() || c == '_' || c.is_whitespace() || c == '\'' || c == '-')
        {
            break;
        }
        start = i;
    }
    let phrase = before.get(start..)?;
    let word = phrase.find(|c: char| c.is_alphanumeric() || c == '_')?;
    phrase.get(word..)
}

/// Options named in a sentence; groups `a`/`b` are options (`b` may carry reason `r`),
/// group `list` is a comma/or separated list.
static OPTION_SOURCES: LazyLock<[String; 6]> = LazyLock::new(|| {
    [
        format!(r"\beither\s+(?P<a>.{{1,200}}?),?\s+or\s+(?P<b>.{{1,200}}?){ALT_TAIL}"),
        format!(
            r"\b(?:selected|select|chose|choose|chosen|picked|pick|prefer|preferred|favou?r|favou?red)\s+(?P<a>.{{1,200}}?)\s+over\s+(?P<b>.{{1,200}}?){ALT_TAIL}"
        ),
        format!(r"\b(?:rather\s+than|instead\s+of)\s+(?P<b>.{{1,200}}?){ALT_TAIL}"),
        r"(?P<a>\b[\w-]+(?:\s+[\w-]+){0,3})\s+(?:vs|versus)\.?\s+(?P<b>[\w-]+(?:\s+[\w-]+){0,3})"
            .to_string(),
        format!(
            r"\b(?:alternatively|on\s+the\s+other\s+hand|on\s+(?:the\s+)?one\s+hand),?\s+(?P<b>.{{1,200}}?){ALT_TAIL}"
        ),
        r"\b(?:options|choices|approaches|alternatives)\s+(?:are|include|would\s+be)\s*:?\s+(?P<list>.{1,300})"
            .to_string(),
    ]
});

/// Indicators of high confidence (counted for step, decision and node confidence).
const HIGH_CONFIDENCE: &str = r"\b(?:clearly|definitely|certainly|obviously|undoubtedly|confident|certain|sure\s+that|without\s+(?:a\s+)?doubt|must\s+be|it\s+is\s+clear|proven|confirms?|confirmed|guaranteed|always|exactly)\b";
/// Indicators of medium confidence.
const MEDIUM_CONFIDENCE: &str = r"\b(?:likely|probably|should|seems|appears|reasonable|suggests?|i\s+think|i\s+believe|generally|mostly|fairly|usually)\b";
/// Indicators of low confidence (hedging).
const LOW_CONFIDENCE: &str = r"\b(?:maybe|perhaps|might|possibly|not\s+sure|unsure|unclear|uncertain|could\s+be|guess|i\s+wonder|doubt|hard\s+to\s+say|no\s+idea|confused|not\s+certain)\b";

/// Step-kind indicator phrases, in tie-break priority order (conclusion wins ties);
/// a step with no indicator at all is analysis.
const STEP_KIND_INDICATORS: [(StepKind, &str); 5] = [
    (
        StepKind::Conclusion,
        r"\b(?:therefore|thus|hence|in\s+conclusion|to\s+conclude|to\s+summarize|in\s+summary|so\s+the\s+answer|the\s+answer\s+is|final\s+answer|ultimately|overall|this\s+means|i\s+conclude|in\s+the\s+end)\b",
    ),
    (
        StepKind::Evaluation,
        r"\b(?:evaluate|evaluating|however|but|compare|comparing|trade-?offs?|pros|cons|better|worse|slower|faster|verify|verifying|check|checking|this\s+works|doesn't\s+work|wrong|correct|test|testing|fails?)\b",
    ),
    (
        StepKind::Hypothesis,
        r"\b(?:hypothesis|hypothesize|suppose|supposing|what\s+if|assume|assuming|perhaps|maybe|might\s+be|could\s+be|possibly|i\s+suspect|my\s+guess|it's\s+possible|presumably)\b",
    ),
    (
        StepKind::Consideration,
        r"\b(?:consider|considering|alternatively|another\s+(?:option|approach|way)|we\s+could|i\s+could|options?|what\s+about|keep\s+in\s+mind|note\s+that|also\s+need|worth\s+noting|on\s+the\s+other\s+hand)\b",
    ),
    (
        StepKind::Analysis,
        r"\b(?:analy[sz]e|analy[sz]ing|analysis|looking\s+at|let\s+me|first|the\s+problem|break\s+down|examine|understand|given\s+that|the\s+input|structure|we\s+have|there\s+are)\b",
    ),
];

/// Where a path or alternative phrase ends.
const PATH_CUT: &str = r",|;|:|\s+(?:because|since|rather\s+than|instead\s+of|over|due\s+to|so\s+that|which|for\s+now)\b";
/// Filler words dropped from the front of a path for display.
const PATH_LEAD: &str = r"^(?:(?:i\s+think|but|so|and|then|that|well|comparing|compare|compared|between|either|also|now|just)\s+)+";
/// Separators of an option list ("A, B, or C").
const LIST_SPLIT: &str = r"\s*,\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+";

/// Compiles a pattern case-insensitively with ASCII word boundaries (keeps the fast DFA).
fn pattern_source(pattern: &str) -> String {
    format!("(?i){}", pattern.replace(r"\b", r"(?-u:\b)"))
}

fn compile(pattern: &str) -> Option<Regex> {
    Regex::new(&pattern_source(pattern)).ok()
}

/// Compiles each pattern, keeping positions aligned with the sources.
fn compile_all<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Vec<Option<Regex>> {
    patterns.into_iter().map(compile).collect()
}

static DECISION_SET: LazyLock<Option<RegexSet>> =
    LazyLock::new(|| RegexSet::new(DECISION_PATTERNS.iter().map(|(_, p)| pattern_source(p))).ok());
static CHOICE_RES: LazyLock<Vec<Option<Regex>>> = LazyLock::new(|| compile_all(CHOICE_PATTERNS));
static REJECTION_RES: LazyLock<Vec<Option<Regex>>> =
    LazyLock::new(|| compile_all(REJECTION_SOURCES.iter().map(String::as_str)));
static OPTION_RES: LazyLock<Vec<Option<Regex>>> =
    LazyLock::new(|| compile_all(OPTION_SOURCES.iter().map(String::as_str)));
static HIGH_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(HIGH_CONFIDENCE));
static MEDIUM_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(MEDIUM_CONFIDENCE));
static LOW_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(LOW_CONFIDENCE));
static KIND_RES: LazyLock<Vec<(StepKind, Regex)>> = LazyLock::new(|| {
    STEP_KIND_INDICATORS
        .iter()
        .filter_map(|(kind, p)| compile(p).map(|re| (*kind, re)))
        .collect()
});
static PATH_CUT_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(PATH_CUT));
static PATH_LEAD_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(PATH_LEAD));
static LIST_SPLIT_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(LIST_SPLIT));

// ---------------------------------------------------------------------------------------
// Text helpers (all slicing is on char boundaries).
// ---------------------------------------------------------------------------------------

/// The largest char boundary `<= i`.
fn floor_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// At most `max` chars of `s`.
fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s.get(..i).unwrap_or(s).to_string(),
        None => s.to_string(),
    }
}

/// The span `a..b` of `text` without surrounding whitespace, or None if blank.
fn trimmed_span(text: &str, a: usize, b: usize) -> Option<(usize, usize)> {
    let s = text.get(a..b)?;
    let lead = s.len() - s.trim_start().len();
    let t = s.trim();
    (!t.is_empty()).then_some((a + lead, a + lead + t.len()))
}

/// Sentence spans of `text`: split after runs of `.`, `!`, `?` followed by whitespace, and
/// at line breaks. Spans are trimmed and non-empty.
fn sentence_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let mut spans = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < len {
        match bytes[i] {
            b'\n' => {
                spans.extend(trimmed_span(text, start, i));
                start = i + 1;
                i += 1;
            }
            b'.' | b'!' | b'?' => {
                let mut j = i + 1;
                while j < len && matches!(bytes[j], b'.' | b'!' | b'?') {
                    j += 1;
                }
                if j == len || bytes[j].is_ascii_whitespace() {
                    spans.extend(trimmed_span(text, start, j));
                    start = j;
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    spans.extend(trimmed_span(text, start, len));
    spans
}

/// Splits one over-long sentence `a..b` into pieces of at most `MAX_STEP_BYTES`,
/// preferring to cut at whitespace.
fn hard_split(text: &str, a: usize, b: usize, out: &mut Vec<(usize, usize)>) {
    let mut pos = a;
    while b - pos > MAX_STEP_BYTES {
        let limit = floor_boundary(text, pos + MAX_STEP_BYTES);
        let window = text.get(pos..limit).unwrap_or("");
        let cut = match window.rfind(char::is_whitespace) {
            Some(ws) if ws >= MAX_STEP_BYTES / 2 => pos + ws,
            _ => limit,
        };
        // A char is at most 4 bytes, so `limit > pos`; guard anyway.
        let cut = if cut <= pos { b } else { cut };
        out.extend(trimmed_span(text, pos, cut));
        pos = cut;
    }
    out.extend(trimmed_span(text, pos, b));
}

/// Step spans of a trimmed paragraph: the paragraph itself, or greedy sentence groups of at
/// most `MAX_STEP_BYTES` when it is longer.
fn step_spans(para: &str) -> Vec<(usize, usize)> {
    if para.len() <= MAX_STEP_BYTES {
        return trimmed_span(para, 0, para.len()).into_iter().collect();
    }
    let mut spans = Vec::new();
    let mut group: Option<(usize, usize)> = None;
    for (s, e) in sentence_spans(para) {
        if e - s > MAX_STEP_BYTES {
            spans.extend(group.take());
            hard_split(para, s, e, &mut spans);
            continue;
        }
        group = match group {
            Some((gs, _)) if e - gs <= MAX_STEP_BYTES => Some((gs, e)),
            Some(g) => {
                spans.push(g);
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    spans.extend(group);
    spans
}

/// 64-bit FNV-1a, continued from `hash`.
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

// ---------------------------------------------------------------------------------------
// Confidence and classification.
// ---------------------------------------------------------------------------------------

/// Counts of confidence indicators.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Indicators {
    high: usize,
    medium: usize,
    low: usize,
}

impl Indicators {
    fn of(text: &str) -> Self {
        let count = |re: &Option<Regex>| re.as_ref().map_or(0, |re| re.find_iter(text).count());
        Self {
            high: count(&HIGH_RE),
            medium: count(&MEDIUM_RE),
            low: count(&LOW_RE),
        }
    }

    fn add(&mut self, other: Indicators) {
        self.high += other.high;
        self.medium += other.medium;
        self.low += other.low;
    }

    /// Weighted mean of the indicators (high 0.9, medium 0.6, low 0.3), or `neutral`.
    fn score(self, neutral: f64) -> f64 {
        let n = self.high + self.medium + self.low;
        if n == 0 {
            return neutral;
        }
        (0.9 * self.high as f64 + 0.6 * self.medium as f64 + 0.3 * self.low as f64) / n as f64
    }
}

/// Classifies a step by its indicator phrases (see `STEP_KIND_INDICATORS`); the kind with
/// most hits wins, ties go to the earlier kind, no hits means analysis.
pub fn classify_step(text: &str) -> StepKind {
    let mut best = (StepKind::Analysis, 0);
    for (kind, re) in KIND_RES.iter() {
        let hits = re.find_iter(text).count();
        if hits > best.1 {
            best = (*kind, hits);
        }
    }
    best.0
}

/// Running totals behind the node confidence.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Totals {
    indicators: Indicators,
    steps: usize,
    decisions: usize,
}

/// Node confidence: indicator mix, reasoning depth, decision density and a deterministic
/// jitter from the text hash; in [0.15, 0.95] and never exactly 0.5.
fn node_confidence(totals: &Totals, chars: usize, hash: u64) -> f64 {
    let base = totals.indicators.score(0.55);
    // Longer reasoning earns up to +0.08, saturating at 8000 chars.
    let depth = (chars as f64 / 8000.0).min(1.0) * 0.08;
    // Decisions per step earn up to +0.05.
    let density = if totals.steps == 0 {
        0.0
    } else {
        (totals.decisions as f64 / totals.steps as f64).min(1.0) * 0.05
    };
    // ±0.03 of visual variety, stable for the same text.
    let jitter = ((hash % 1001) as f64 / 1000.0 - 0.5) * 0.06;
    let score = (base + depth + density + jitter).clamp(MIN_CONFIDENCE, MAX_CONFIDENCE);
    if (score - 0.5).abs() < 0.005 {
        if hash & 1 == 0 { 0.51 } else { 0.49 }
    } else {
        score
    }
}

// ---------------------------------------------------------------------------------------
// Decision points.
// ---------------------------------------------------------------------------------------

/// Cleans a captured path: cut at the first clause break, drop leading filler and trailing
/// punctuation, cap at 200 chars.
fn clean_path(raw: &str) -> Option<String> {
    let mut s = raw.trim();
    if let Some(m) = PATH_CUT_RE.as_ref().and_then(|re| re.find(s)) {
        s = s.get(..m.start()).unwrap_or(s);
    }
    if let Some(m) = PATH_LEAD_RE.as_ref().and_then(|re| re.find(s)) {
        s = s.get(m.end()..).unwrap_or(s);
    }
    let s = s.trim_matches(|c: char| c.is_whitespace() || ".,;:!?\"'()[]`*".contains(c));
    (!s.is_empty()).then(|| truncate_chars(s, MAX_DESCRIPTION_CHARS))
}

/// Cleans a captured reason, capped at 500 chars.
fn clean_reason(raw: &str) -> Option<String> {
    let s = raw.trim_matches(|c: char| c.is_whitespace() || ".,;:!?\"'".contains(c));
    (!s.is_empty()).then(|| truncate_chars(s, MAX_EXCERPT_CHARS))
}

/// Key for comparing paths: lowercase words without articles and filler verbs.
fn path_key(path: &str) -> String {
    const FILLER: [&str; 14] = [
        "a", "an", "the", "use", "using", "to", "with", "we", "i", "could", "would", "should",
        "just", "maybe",
    ];
    let lower = path.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let skip = words.iter().take_while(|w| FILLER.contains(w)).count();
    words.get(skip..).unwrap_or(&[]).join(" ")
}

/// A sentence of a step.
struct Sentence<'a> {
    text: &'a str,
    /// Offset in the step.
    start: usize,
}

/// The chosen path from the decision sentence or the sentences after it.
fn chosen_path(sentences: &[Sentence], i: usize) -> Option<String> {
    sentences
        .iter()
        .skip(i)
        .take(1 + CONTEXT_AFTER)
        .find_map(|s| {
            CHOICE_RES.iter().flatten().find_map(|re| {
                re.captures(s.text)
                    .and_then(|caps| caps.name("c"))
                    .and_then(|c| clean_path(c.as_str()))
            })
        })
}

/// Subjects that name nothing on their own ("That seems slower").
const PRONOUNS: [&str; 10] = [
    "that",
    "this",
    "it",
    "which",
    "they",
    "these",
    "those",
    "there",
    "what",
    "something",
];

/// Collects alternatives, skipping the chosen path, bare pronouns and duplicates.
struct AlternativeList {
    chosen_key: String,
    keys: Vec<String>,
    items: Vec<Alternative>,
}

impl AlternativeList {
    fn add(&mut self, raw: &str, reason: Option<&str>) {
        let Some(path) = clean_path(raw) else { return };
        let key = path_key(&path);
        if key.is_empty() || key == self.chosen_key || PRONOUNS.contains(&key.as_str()) {
            return;
        }
        let reason = reason.and_then(clean_reason);
        if let Some(at) = self.keys.iter().position(|k| *k == key) {
            if let Some(item) = self.items.get_mut(at)
                && item.reason_rejected.is_none()
            {
                item.reason_rejected = reason;
            }
            return;
        }
        self.keys.push(key);
        self.items.push(Alternative {
            path,
            reason_rejected: reason,
        });
    }
}

/// Alternatives in the context sentences: rejected options first (with reasons), then
/// options named by either/or, over, rather than, versus, alternatively and option lists.
fn alternatives(context: &[Sentence], chosen: &str) -> Vec<Alternative> {
    let mut list = AlternativeList {
        chosen_key: path_key(chosen),
        keys: Vec::new(),
        items: Vec::new(),
    };
    for s in context {
        for re in REJECTION_RES.iter().flatten() {
            for caps in re.captures_iter(s.text) {
                let alt = match caps.name("alt") {
                    Some(alt) => Some(alt.as_str()),
                    None => caps.get(0).and_then(|m| subject_before(s.text, m.start())),
                };
                if let Some(alt) = alt {
                    list.add(alt, caps.name("r").map(|r| r.as_str()));
                }
            }
        }
    }
    for s in context {
        for re in OPTION_RES.iter().flatten() {
            for caps in re.captures_iter(s.text) {
                if let Some(a) = caps.name("a") {
                    list.add(a.as_str(), None);
                }
                if let Some(b) = caps.name("b") {
                    list.add(b.as_str(), caps.name("r").map(|r| r.as_str()));
                }
                if let (Some(items), Some(split)) = (caps.name("list"), LIST_SPLIT_RE.as_ref()) {
                    for item in split.split(items.as_str()) {
                        list.add(item, None);
                    }
                }
            }
        }
    }
    list.items.truncate(MAX_ALTERNATIVES);
    list.items
}

/// Decision points of one step; `base` is the step's offset in the whole text.
fn decisions_in_step(text: &str, base: usize, step_index: u32) -> Vec<Decision> {
    let Some(set) = DECISION_SET.as_ref() else {
        return Vec::new();
    };
    // Any sentence match is also a match in the whole step, so this skips most steps.
    if !set.is_match(text) {
        return Vec::new();
    }
    let sentences: Vec<Sentence> = sentence_spans(text)
        .into_iter()
        .map(|(a, b)| Sentence {
            text: text.get(a..b).unwrap_or(""),
            start: a,
        })
        .collect();
    let mut out = Vec::new();
    for (i, sentence) in sentences.iter().enumerate() {
        let Some(pattern) = set.matches(sentence.text).iter().next() else {
            continue;
        };
        let sentence_start = sentence.start;
        let sentence = sentence.text;
        let explicit = chosen_path(&sentences, i);
        let chosen = explicit
            .clone()
            .unwrap_or_else(|| truncate_chars(sentence, MAX_DESCRIPTION_CHARS));
        let from = i.saturating_sub(CONTEXT_BEFORE);
        let to = (i + CONTEXT_AFTER + 1).min(sentences.len());
        let context = sentences.get(from..to).unwrap_or(&[]);
        let mut indicators = Indicators::default();
        for s in context {
            indicators.add(Indicators::of(s.text));
        }
        let bonus = if explicit.is_some() { 0.05 } else { 0.0 };
        let confidence = (indicators.score(0.6) + bonus).clamp(MIN_CONFIDENCE, MAX_CONFIDENCE);
        out.push(Decision {
            step_index,
            pattern: DECISION_PATTERN_NAMES
                .get(pattern)
                .copied()
                .unwrap_or("unknown")
                .to_string(),
            description: truncate_chars(sentence, MAX_DESCRIPTION_CHARS),
            alternatives: alternatives(context, &chosen),
            chosen_path: chosen,
            confidence,
            offset: base + sentence_start,
        });
    }
    out
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
        let step_start = start + a + s;
        let index = *next_index;
        *next_index = next_index.saturating_add(1);
        let indicators = Indicators::of(text);
        totals.indicators.add(indicators);
        totals.steps += 1;
        out.push(GraphUpdate::Step(Step {
            index,
            kind: classify_step(text),
            text: text.to_string(),
            start: step_start,
            confidence: indicators.score(0.5).clamp(MIN_CONFIDENCE, MAX_CONFIDENCE),
        }));
        let decisions = decisions_in_step(text, step_start, index);
        totals.decisions += decisions.len();
        out.extend(decisions.into_iter().map(GraphUpdate::Decision));
    }
}

/// Result of looking for a blank line.
enum BlankLine {
    /// The paragraph ends at `para_end`; the next one starts at `next`.
    Found { para_end: usize, next: usize },
    /// A line break at this offset may start a blank line; more text is needed.
    Undecided(usize),
    /// No blank line after the scan start.
    Absent,
}

/// Finds the first blank line (a line of only spaces, tabs or `\r`) at or after `from`.
fn find_blank_line(buf: &str, from: usize) -> BlankLine {
    let bytes = buf.as_bytes();
    let mut i = from;
    while let Some(off) = bytes
        .get(i..)
        .and_then(|rest| rest.iter().position(|&c| c == b'\n'))
    {
        let nl = i + off;
        let mut j = nl + 1;
        while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'\r') {
            j += 1;
        }
        match bytes.get(j) {
            None => return BlankLine::Undecided(nl),
            Some(b'\n') => {
                return BlankLine::Found {
                    para_end: nl,
                    next: j + 1,
                };
            }
            Some(_) => i = j,
        }
    }
    BlankLine::Absent
}

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
    next_index: u32,
    totals: Totals,
    hash: u64,
    chars: usize,
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
            next_index: 0,
            totals: Totals::default(),
            hash: FNV_OFFSET,
            chars: 0,
        }
    }

    /// Adds a delta of thinking text; returns the steps and decisions it made final.
    pub fn push(&mut self, delta: &str) -> Vec<GraphUpdate> {
        self.hash = fnv1a(self.hash, delta.as_bytes());
        self.chars += delta.chars().count();
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
        }
        self.scan_from = pos - para_start;
        out
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
        out
    }

    /// Node confidence of the text so far, in [0.15, 0.95] and never exactly 0.5.
    pub fn confidence(&self) -> f64 {
        node_confidence(&self.totals, self.chars, self.hash)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feeds `text` to a builder in pieces cut near `cuts` (moved to char boundaries).
    fn analyze_chunked(text: &str, cuts: &[usize]) -> Analysis {
        let mut points: Vec<usize> = cuts.iter().map(|&c| floor_boundary(text, c)).collect();
        points.push(text.len());
        points.sort_unstable();
        let mut builder = ThinkGraphBuilder::new();
        let mut updates = Vec::new();
        let mut prev = 0;
        for p in points {
            updates.extend(builder.push(&text[prev..p]));
            prev = p;
        }
        updates.extend(builder.finish());
        let mut steps = Vec::new();
        let mut decisions = Vec::new();
        for u in updates {
            match u {
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

    fn in_fixed_deltas(text: &str, size: usize) -> Analysis {
        let cuts: Vec<usize> = (1..=text.len() / size).map(|k| k * size).collect();
        analyze_chunked(text, &cuts)
    }

    fn first_decision(text: &str) -> Decision {
        let a = analyze(text);
        a.decisions.into_iter().next().expect("a decision point")
    }

    fn alt<'a>(d: &'a Decision, path: &str) -> &'a Alternative {
        d.alternatives
            .iter()
            .find(|a| a.path == path)
            .unwrap_or_else(|| panic!("alternative {path:?} in {:?}", d.alternatives))
    }

    #[test]
    fn all_patterns_compile() {
        assert!(DECISION_SET.is_some());
        assert!(
            CHOICE_RES
                .iter()
                .chain(REJECTION_RES.iter())
                .chain(OPTION_RES.iter())
                .all(Option::is_some)
        );
        assert_eq!(DECISION_SET.as_ref().map(|s| s.len()), Some(12));
        assert_eq!(CHOICE_RES.len(), 8);
        assert_eq!(REJECTION_RES.len(), 6);
        assert_eq!(OPTION_RES.len(), OPTION_SOURCES.len());
        assert_eq!(KIND_RES.len(), 5);
        assert!(HIGH_RE.is_some() && MEDIUM_RE.is_some() && LOW_RE.is_some());
        assert!(PATH_CUT_RE.is_some() && PATH_LEAD_RE.is_some() && LIST_SPLIT_RE.is_some());
        let names: Vec<&str> = DECISION_PATTERNS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, DECISION_PATTERN_NAMES);
    }

    #[test]
    fn pattern_could_either() {
        let d = first_decision(
            "I could either use a hash map or a B-tree. I'll go with the B-tree because ordered iteration matters.",
        );
        assert_eq!(d.pattern, "could_either");
        assert_eq!(d.chosen_path, "the B-tree");
        assert_eq!(alt(&d, "use a hash map").reason_rejected, None);
        assert!(
            d.alternatives.iter().all(|a| !a.path.contains("B-tree")),
            "{d:?}"
        );
    }

    #[test]
    fn pattern_decided_to_with_ruled_out() {
        let d = first_decision(
            "After profiling, I decided to cache the parsed AST. I ruled out re-parsing on every request because it doubles latency.",
        );
        assert_eq!(d.pattern, "decided_to");
        assert_eq!(d.chosen_path, "cache the parsed AST");
        assert_eq!(
            alt(&d, "re-parsing on every request")
                .reason_rejected
                .as_deref(),
            Some("it doubles latency")
        );
    }

    #[test]
    fn pattern_selected_over() {
        let d = first_decision(
            "I selected the streaming parser over the DOM parser because memory is tight.",
        );
        assert_eq!(d.pattern, "selected_over");
        assert_eq!(d.chosen_path, "the streaming parser");
        assert_eq!(
            alt(&d, "the DOM parser").reason_rejected.as_deref(),
            Some("memory is tight")
        );
    }

    #[test]
    fn pattern_on_one_hand() {
        let d = first_decision(
            "On one hand, a monolith is easier to deploy. On the other hand, microservices scale independently. I'll go with the monolith.",
        );
        assert_eq!(d.pattern, "on_one_hand");
        assert_eq!(d.chosen_path, "the monolith");
        assert!(
            d.alternatives
                .iter()
                .any(|a| a.path.contains("microservices")),
            "{d:?}"
        );
    }

    #[test]
    fn pattern_alternatively() {
        let d = first_decision(
            "Sharding by date is simple. Alternatively, we could shard the table by tenant. I'll use tenant sharding since queries are per tenant.",
        );
        assert_eq!(d.pattern, "alternatively");
        assert_eq!(d.chosen_path, "tenant sharding");
        assert!(
            d.alternatives
                .iter()
                .any(|a| a.path.contains("shard the table by tenant"))
        );
    }

    #[test]
    fn pattern_instead_of() {
        let d = first_decision("Instead of polling the API, subscribe to the webhook.");
        assert_eq!(d.pattern, "instead_of");
        assert_eq!(d.chosen_path, "subscribe to the webhook");
        assert_eq!(alt(&d, "polling the API").reason_rejected, None);
    }

    #[test]
    fn pattern_weighing_with_is_worse() {
        let d = first_decision(
            "I am weighing latency against cost here. Redis is worse because it adds another service to operate. I'll use the in-process cache.",
        );
        assert_eq!(d.pattern, "weighing");
        assert_eq!(d.chosen_path, "the in-process cache");
        assert_eq!(
            alt(&d, "Redis").reason_rejected.as_deref(),
            Some("it adds another service to operate")
        );
    }

    #[test]
    fn pattern_options_are_with_wont_work() {
        let d = first_decision(
            "The options are Kafka, NATS, or Redis streams. Kafka won't work because the ops team cannot run it. I'll go with NATS.",
        );
        assert_eq!(d.pattern, "options_are");
        assert_eq!(d.chosen_path, "NATS");
        assert_eq!(
            alt(&d, "Kafka").reason_rejected.as_deref(),
            Some("the ops team cannot run it")
        );
        assert_eq!(alt(&d, "Redis streams").reason_rejected, None);
        assert!(d.alternatives.iter().all(|a| a.path != "NATS"));
    }

    #[test]
    fn pattern_go_with_and_decided_against() {
        let d = first_decision(
            "I'll go with SQLite for storage. I decided against Postgres because it needs a server.",
        );
        assert_eq!(d.pattern, "go_with");
        assert_eq!(d.chosen_path, "SQLite for storage");
        assert_eq!(
            alt(&d, "Postgres").reason_rejected.as_deref(),
            Some("it needs a server")
        );
    }

    #[test]
    fn pattern_rather_than() {
        let d = first_decision("Use a B-tree rather than a hash map, since we need range scans.");
        assert_eq!(d.pattern, "rather_than");
        assert_eq!(d.chosen_path, "Use a B-tree");
        assert_eq!(
            alt(&d, "a hash map").reason_rejected.as_deref(),
            Some("we need range scans")
        );
    }

    #[test]
    fn pattern_chose_because_with_rejected() {
        let d = first_decision(
            "I chose Rust because it is memory safe. I rejected Go since its GC pauses hurt tail latency.",
        );
        assert_eq!(d.pattern, "chose_because");
        assert_eq!(d.chosen_path, "Rust");
        assert_eq!(
            alt(&d, "Go").reason_rejected.as_deref(),
            Some("its GC pauses hurt tail latency")
        );
    }

    #[test]
    fn pattern_comparing_vs_with_not_because() {
        let d = first_decision(
            "Comparing Postgres versus SQLite for this tool. Not Postgres because it needs a server. So I'll use SQLite.",
        );
        assert_eq!(d.pattern, "comparing_vs");
        assert_eq!(d.chosen_path, "SQLite");
        assert_eq!(
            alt(&d, "Postgres").reason_rejected.as_deref(),
            Some("it needs a server")
        );
    }

    #[test]
    fn decision_fields_are_bounded() {
        let long_option = "x".repeat(1000);
        let text = format!(
            "I could either {long_option} or b1 or b2. Rejected c1. Rejected c2. Rejected c3. Rejected c4. Rejected c5. Rejected c6."
        );
        let a = analyze(&text);
        for d in &a.decisions {
            assert!(d.description.chars().count() <= 200);
            assert!(d.chosen_path.chars().count() <= 200);
            assert!(d.alternatives.len() <= 5);
            for alt in &d.alternatives {
                assert!(alt.path.chars().count() <= 200);
                assert!(
                    alt.reason_rejected
                        .as_ref()
                        .is_none_or(|r| r.chars().count() <= 500)
                );
            }
            assert!((0.15..=0.95).contains(&d.confidence));
            assert!(text.get(d.offset..).is_some());
        }
        let many = "Rejected a1; rejected a2. I decided to go. Rejected a3; rejected a4. Rejected a5; rejected a6. Rejected a7.";
        assert_eq!(first_decision(many).alternatives.len(), 5);
    }

    #[test]
    fn pronoun_subjects_are_not_alternatives() {
        let d = first_decision(
            "Alternatively, we could precompute at startup. That seems slower since startup time matters. I'll go with the LRU.",
        );
        assert_eq!(d.chosen_path, "the LRU");
        assert!(d.alternatives.iter().all(|a| a.path != "That"), "{d:?}");
        assert!(
            d.alternatives
                .iter()
                .any(|a| a.path == "we could precompute at startup")
        );
    }

    #[test]
    fn no_decision_in_plain_text() {
        assert!(
            analyze("The function reads a file. It returns the bytes.")
                .decisions
                .is_empty()
        );
    }

    #[test]
    fn step_kinds() {
        let cases = [
            (
                "Let me look at the structure of the input first. The parser reads tokens.",
                StepKind::Analysis,
            ),
            (
                "Suppose the cache is stale. Maybe the bug is a race between writer and reader.",
                StepKind::Hypothesis,
            ),
            (
                "However, this approach is slower. I need to verify it: the check fails for empty input.",
                StepKind::Evaluation,
            ),
            ("Therefore the answer is 42.", StepKind::Conclusion),
            (
                "Consider the case where the list is empty. Also keep in mind the memory budget.",
                StepKind::Consideration,
            ),
            ("Plain words without any marker at all", StepKind::Analysis),
        ];
        for (text, kind) in cases {
            assert_eq!(classify_step(text), kind, "{text}");
        }
        let text: String = cases
            .iter()
            .map(|(t, _)| *t)
            .collect::<Vec<_>>()
            .join("\n\n");
        let a = analyze(&text);
        let kinds: Vec<StepKind> = a.steps.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, cases.iter().map(|(_, k)| *k).collect::<Vec<_>>());
        let idx: Vec<u32> = a.steps.iter().map(|s| s.index).collect();
        assert_eq!(idx, (0..6).collect::<Vec<u32>>());
        for s in &a.steps {
            assert_eq!(&text[s.start..s.start + s.text.len()], s.text);
        }
        assert_eq!(
            serde_json::to_string(&StepKind::Consideration)
                .ok()
                .as_deref(),
            Some("\"consideration\"")
        );
        assert_eq!(StepKind::Hypothesis.as_str(), "hypothesis");
    }

    #[test]
    fn paragraphs_split_on_blank_lines() {
        let a =
            analyze("First para.\nstill first.\n\n\n  \nSecond para.\r\n\r\nThird.\n \t\nFourth");
        let texts: Vec<&str> = a.steps.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "First para.\nstill first.",
                "Second para.",
                "Third.",
                "Fourth"
            ]
        );
    }

    #[test]
    fn long_paragraph_becomes_sentence_groups() {
        let sentence = "The parser reads one token and checks the next one carefully. ";
        let para = sentence.repeat(40);
        let a = analyze(&para);
        assert!(a.steps.len() >= 4, "{}", a.steps.len());
        for s in &a.steps {
            assert!(s.text.len() <= MAX_STEP_BYTES);
            assert!(s.text.ends_with('.'));
            assert_eq!(&para[s.start..s.start + s.text.len()], s.text);
        }
    }

    #[test]
    fn step_confidence_follows_language() {
        let a =
            analyze("This is clearly and definitely right.\n\nMaybe, perhaps, it might be wrong.");
        assert!(a.steps[0].confidence > a.steps[1].confidence);
    }

    fn hedging() -> &'static str {
        "Maybe this works, perhaps not. I'm not sure; it might possibly be wrong.\n\nI guess it could be the cache, hard to say."
    }

    fn confident() -> &'static str {
        "This is clearly correct. I am certain the cache is definitely the cause.\n\nIt is clear and the log confirms it."
    }

    #[test]
    fn confidence_bounds_and_determinism() {
        let samples = [
            String::new(),
            " ".into(),
            hedging().into(),
            confident().into(),
            "maybe ".repeat(500),
            "clearly ".repeat(500),
            "plain text ".repeat(3000),
        ];
        for s in &samples {
            let c = analyze(s).confidence;
            assert!((0.15..=0.95).contains(&c), "{c}");
            assert_ne!(c, 0.5);
            assert_eq!(c, analyze(s).confidence);
        }
        for n in 0..2000 {
            let c = analyze(&format!("step {n}")).confidence;
            assert!((0.15..=0.95).contains(&c) && c != 0.5, "{n}: {c}");
        }
        assert!(analyze(hedging()).confidence < analyze(confident()).confidence);
        assert!(analyze(hedging()).confidence < 0.5);
        assert!(analyze(confident()).confidence > 0.8);
    }

    #[test]
    fn node_confidence_never_half() {
        let totals = Totals {
            indicators: Indicators {
                high: 0,
                medium: 1,
                low: 1,
            },
            steps: 1,
            decisions: 0,
        };
        for hash in 0..5000u64 {
            let c = node_confidence(&totals, 0, hash);
            assert!(c != 0.5 && (0.15..=0.95).contains(&c));
        }
    }

    #[test]
    fn builder_confidence_matches_analyze() {
        let text = format!("{}\n\n{}", hedging(), confident());
        let chunked = in_fixed_deltas(&text, 7);
        assert_eq!(chunked, analyze(&text));
    }

    fn generated_text(target: usize) -> String {
        let paragraphs = [
            "Let me look at the structure of the request first. The handler parses headers, then the body.",
            "I could either buffer the whole body or stream it. I'll go with streaming because bodies can be large. I ruled out buffering because it costs memory.",
            "Maybe the timeout is too short; perhaps the upstream is slow. I'm not sure yet.",
            "However, the check fails for chunked encoding, so this approach is wrong as written.",
            "Therefore the fix is to stream the body and raise the timeout. This is clearly better.",
            "Consider also the retry budget — 予算 matters 🚀 and keep in mind the p99 latency.",
        ];
        let mut out = String::with_capacity(target + 512);
        let mut n = 0usize;
        while out.len() < target {
            out.push_str(paragraphs[n % paragraphs.len()]);
            out.push_str(if n % 7 == 3 { " " } else { "\n\n" });
            n += 1;
        }
        out
    }

    #[test]
    fn one_megabyte_whole_and_incremental() {
        let text = generated_text(1 << 20);
        let whole = analyze(&text);
        assert!(whole.steps.len() > 5000, "{}", whole.steps.len());
        assert!(whole.decisions.len() > 1000, "{}", whole.decisions.len());
        let chunked = in_fixed_deltas(&text, 100);
        assert_eq!(chunked.steps.len(), whole.steps.len());
        assert_eq!(chunked, whole);
    }

    #[test]
    fn push_emits_paragraph_when_blank_line_arrives() {
        let mut b = ThinkGraphBuilder::new();
        assert!(b.push("I decided to cache it.").is_empty());
        assert!(b.push("\n").is_empty());
        let ups = b.push("\nNext");
        assert_eq!(ups.len(), 2);
        assert!(matches!(&ups[0], GraphUpdate::Step(s) if s.text == "I decided to cache it."));
        assert!(
            matches!(&ups[1], GraphUpdate::Decision(d) if d.pattern == "decided_to" && d.step_index == 0)
        );
        let rest = b.finish();
        assert!(
            matches!(&rest[..], [GraphUpdate::Step(s)] if s.text == "Next" && s.index == 1 && s.start == 24)
        );
        assert!(b.finish().is_empty());
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let big_sentence = "word ".repeat(20_000) + "I could either go with 甲 or 乙";
        let inputs = [
            String::new(),
            "   \n\n \t \n ".into(),
            "\n\n\n\n".into(),
            "我们可以选择方案甲或者方案乙。我决定用方案甲，因为它更快。\n\n😀😀 I could either 🚀 or 🛸. I'll go with 🚀.".into(),
            "É".repeat(700),
            "é".repeat(50_000) + "🎉",
            big_sentence,
            "....!!!???\n\n.\n.".into(),
            "rather than instead of vs versus over either or because".into(),
        ];
        for text in &inputs {
            let a = analyze(text);
            for s in &a.steps {
                assert!(!s.text.is_empty());
                assert_eq!(
                    text.get(s.start..s.start + s.text.len()),
                    Some(s.text.as_str())
                );
            }
            assert_eq!(in_fixed_deltas(text, 3), a);
        }
        let single = "x".repeat(100 * 1024);
        let a = analyze(&single);
        assert!(a.steps.len() >= 100 * 1024 / MAX_STEP_BYTES);
        assert_eq!(
            a.steps.iter().map(|s| s.text.len()).sum::<usize>(),
            single.len()
        );
    }

    fn fragment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("\n\n".to_string()),
            Just("\n \n".to_string()),
            Just("\n".to_string()),
            Just("\r\n".to_string()),
            Just(". ".to_string()),
            Just("I could either use A or B".to_string()),
            Just("I'll go with B because it is faster".to_string()),
            Just("ruled out A because it is slow".to_string()),
            Just("maybe clearly probably".to_string()),
            Just("Therefore ".to_string()),
            Just("予算 😀 é".to_string()),
            "[a-z ]{0,30}",
            any::<String>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn chunking_never_changes_result(
            parts in prop::collection::vec(fragment(), 0..40),
            cuts in prop::collection::vec(0usize..2000, 0..30),
        ) {
            let text: String = parts.concat();
            let cuts: Vec<usize> = cuts.into_iter().map(|c| c % (text.len() + 1)).collect();
            prop_assert_eq!(analyze_chunked(&text, &cuts), analyze(&text));
        }
    }
}
