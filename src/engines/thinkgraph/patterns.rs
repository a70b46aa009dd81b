//! The regexes of ThinkGraph: the 12 decision patterns, the choice, rejection and option
//! patterns, confidence indicators and step-kind indicators. All are case-insensitive, use
//! ASCII word boundaries and only bounded repetitions (`.{1,200}?`), so matching stays
//! linear on any input.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::StepKind;

/// The 12 decision patterns, in priority order (the first that matches names the decision).
pub(super) const DECISION_PATTERNS: [(&str, &str); 12] = [
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
pub(super) const CHOICE_PATTERNS: [&str; 8] = [
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
pub(super) const ALT_TAIL: &str =
    r"(?:,?\s+(?:because|since|as|due\s+to)\s+(?P<r>.{1,300})|[,;:]|\s+(?:so|and\s+so)\b|$)";

/// The 6 rejection patterns; group `alt` is the rejected option, `r` the reason if given.
/// The two without `alt` name their subject before the match ("X won't work", "X is
/// worse"); it is read backwards by `decisions::subject_before`, which keeps the regexes
/// anchored on a literal.
pub(super) static REJECTION_SOURCES: LazyLock<[String; 6]> = LazyLock::new(|| {
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

/// Options named in a sentence; groups `a`/`b` are options (`b` may carry reason `r`),
/// group `list` is a comma/or separated list.
pub(super) static OPTION_SOURCES: LazyLock<[String; 6]> = LazyLock::new(|| {
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
pub(super) const HIGH_CONFIDENCE: &str = r"\b(?:clearly|definitely|certainly|obviously|undoubtedly|confident|certain|sure\s+that|without\s+(?:a\s+)?doubt|must\s+be|it\s+is\s+clear|proven|confirms?|confirmed|guaranteed|always|exactly)\b";
/// Indicators of medium confidence.
pub(super) const MEDIUM_CONFIDENCE: &str = r"\b(?:likely|probably|should|seems|appears|reasonable|suggests?|i\s+think|i\s+believe|generally|mostly|fairly|usually)\b";
/// Indicators of low confidence (hedging).
pub(super) const LOW_CONFIDENCE: &str = r"\b(?:maybe|perhaps|might|possibly|not\s+sure|unsure|unclear|uncertain|could\s+be|guess|i\s+wonder|doubt|hard\s+to\s+say|no\s+idea|confused|not\s+certain)\b";

/// Step-kind indicator phrases, in tie-break priority order (conclusion wins ties);
/// a step with no indicator at all is analysis.
pub(super) const STEP_KIND_INDICATORS: [(StepKind, &str); 5] = [
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
pub(super) const PATH_CUT: &str = r",|;|:|\s+(?:because|since|rather\s+than|instead\s+of|over|due\s+to|so\s+that|which|for\s+now)\b";
/// Filler words dropped from the front of a path for display.
pub(super) const PATH_LEAD: &str = r"^(?:(?:i\s+think|but|so|and|then|that|well|comparing|compare|compared|between|either|also|now|just)\s+)+";
/// Separators of an option list ("A, B, or C").
pub(super) const LIST_SPLIT: &str = r"\s*,\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+";

/// Compiles a pattern case-insensitively with ASCII word boundaries (keeps the fast DFA).
pub(super) fn pattern_source(pattern: &str) -> String {
    format!("(?i){}", pattern.replace(r"\b", r"(?-u:\b)"))
}

pub(super) fn compile(pattern: &str) -> Option<Regex> {
    Regex::new(&pattern_source(pattern)).ok()
}

/// Compiles each pattern, keeping positions aligned with the sources.
pub(super) fn compile_all<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Vec<Option<Regex>> {
    patterns.into_iter().map(compile).collect()
}

pub(super) static DECISION_SET: LazyLock<Option<RegexSet>> =
    LazyLock::new(|| RegexSet::new(DECISION_PATTERNS.iter().map(|(_, p)| pattern_source(p))).ok());
pub(super) static CHOICE_RES: LazyLock<Vec<Option<Regex>>> =
    LazyLock::new(|| compile_all(CHOICE_PATTERNS));
pub(super) static REJECTION_RES: LazyLock<Vec<Option<Regex>>> =
    LazyLock::new(|| compile_all(REJECTION_SOURCES.iter().map(String::as_str)));
pub(super) static OPTION_RES: LazyLock<Vec<Option<Regex>>> =
    LazyLock::new(|| compile_all(OPTION_SOURCES.iter().map(String::as_str)));
pub(super) static HIGH_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(HIGH_CONFIDENCE));
pub(super) static MEDIUM_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(MEDIUM_CONFIDENCE));
pub(super) static LOW_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(LOW_CONFIDENCE));
pub(super) static KIND_RES: LazyLock<Vec<(StepKind, Regex)>> = LazyLock::new(|| {
    STEP_KIND_INDICATORS
        .iter()
        .filter_map(|(kind, p)| compile(p).map(|re| (*kind, re)))
        .collect()
});
/// The confidence indicators (high, medium, low) and then the step-kind indicators in
/// `STEP_KIND_INDICATORS` order, as one set: a step's text is read once to learn which of
/// them occur at all, and only those are counted.
pub(super) static SIGNAL_SET: LazyLock<Option<RegexSet>> = LazyLock::new(|| {
    let sources = [HIGH_CONFIDENCE, MEDIUM_CONFIDENCE, LOW_CONFIDENCE]
        .into_iter()
        .chain(STEP_KIND_INDICATORS.iter().map(|(_, p)| *p))
        .map(pattern_source);
    RegexSet::new(sources).ok()
});
pub(super) static PATH_CUT_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(PATH_CUT));
pub(super) static PATH_LEAD_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(PATH_LEAD));
pub(super) static LIST_SPLIT_RE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(LIST_SPLIT));
