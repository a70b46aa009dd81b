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

/// The decision patterns (bits, by index in [`DECISION_PATTERNS`]) a whole ASCII word may
/// start or end a match of, given lowercase: every match of a pattern holds one of its words
/// (its choice verb, `either`, `hand`, `instead`, `vs` …) as a maximal run of ASCII word
/// characters, which is what the patterns' ASCII word boundaries make of it.
fn decision_word_mask(word: &[u8]) -> u16 {
    const COULD_EITHER: u16 = 1 << 0;
    const DECIDED_TO: u16 = 1 << 1;
    const SELECTED_OVER: u16 = 1 << 2;
    const ON_ONE_HAND: u16 = 1 << 3;
    const ALTERNATIVELY: u16 = 1 << 4;
    const INSTEAD_OF: u16 = 1 << 5;
    const WEIGHING: u16 = 1 << 6;
    const OPTIONS_ARE: u16 = 1 << 7;
    const GO_WITH: u16 = 1 << 8;
    const RATHER_THAN: u16 = 1 << 9;
    const CHOSE_BECAUSE: u16 = 1 << 10;
    const COMPARING_VS: u16 = 1 << 11;
    match word {
        b"either" => COULD_EITHER,
        b"decided" | b"decide" | b"deciding" => DECIDED_TO,
        b"chose" | b"choose" | b"chosen" | b"picked" | b"pick" => SELECTED_OVER | CHOSE_BECAUSE,
        b"selected" | b"select" | b"prefer" | b"preferred" | b"favor" | b"favour" | b"favored"
        | b"favoured" => SELECTED_OVER,
        b"hand" => ON_ONE_HAND,
        b"alternatively" | b"another" => ALTERNATIVELY,
        b"instead" => INSTEAD_OF,
        b"weighing" | b"weigh" | b"trade" | b"tradeoff" | b"tradeoffs" | b"pros" => WEIGHING,
        b"options" | b"choices" | b"approaches" | b"alternatives" => OPTIONS_ARE,
        b"go" | b"going" | b"went" => GO_WITH,
        b"rather" => RATHER_THAN,
        b"picking" | b"opted" => CHOSE_BECAUSE,
        b"vs" | b"versus" | b"comparing" | b"compare" | b"compared" => COMPARING_VS,
        _ => 0,
    }
}

/// The longest word [`decision_word_mask`] and the word lists below hold.
const MAX_PATTERN_WORD: usize = 13;

/// Calls `f` with each maximal run of ASCII word characters of `text` (what the patterns'
/// ASCII word boundaries delimit) that is 2 to [`MAX_PATTERN_WORD`] bytes long, lowercased.
/// Returns `false`, at once, when `text` holds a character that case-insensitive matching
/// takes for an ASCII letter (the Kelvin sign for `k`, the long s for `s`): words cannot be
/// told by bytes then.
fn ascii_words(text: &str, mut f: impl FnMut(&[u8])) -> bool {
    let bytes = text.as_bytes();
    let word_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !word_byte(b) {
            // U+017F is C5 BF and U+212A is E2 84 AA in UTF-8.
            if (b == 0xC5 && bytes.get(i + 1) == Some(&0xBF))
                || (b == 0xE2 && bytes.get(i + 1..i + 3) == Some(&[0x84, 0xAA][..]))
            {
                return false;
            }
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && word_byte(bytes[i]) {
            i += 1;
        }
        let word = &bytes[start..i];
        if (2..=MAX_PATTERN_WORD).contains(&word.len()) {
            let mut lower = [0u8; MAX_PATTERN_WORD];
            let lower = &mut lower[..word.len()];
            lower.copy_from_slice(word);
            lower.make_ascii_lowercase();
            f(lower);
        }
    }
    true
}

/// The decision patterns `text` may match (bits, by index in [`DECISION_PATTERNS`]): those of
/// the words it holds (see [`decision_word_mask`]), or all of them where [`ascii_words`]
/// cannot tell. A pattern whose bit is clear does not match.
pub(super) fn decision_candidates(text: &str) -> u16 {
    let mut mask = 0u16;
    if ascii_words(text, |w| mask |= decision_word_mask(w)) {
        mask
    } else {
        (1 << DECISION_PATTERNS.len()) - 1
    }
}

/// The regexes of a list `text` may match (bits, by index), given for each regex the words
/// one of which every match of it holds as a whole ASCII word (as [`decision_word_mask`]
/// gives them for the decision patterns); all of them where [`ascii_words`] cannot tell.
pub(super) fn word_candidates(text: &str, words: &[&[&str]]) -> u64 {
    let mut mask = 0u64;
    let told = ascii_words(text, |w| {
        for (i, list) in words.iter().enumerate() {
            if list.iter().any(|l| l.as_bytes() == w) {
                mask |= 1 << i;
            }
        }
    });
    if told { mask } else { u64::MAX }
}

/// The choice verbs of "selected X over Y" and "chose X because".
const CHOICE_VERBS: &[&str] = &[
    "selected",
    "select",
    "chose",
    "choose",
    "chosen",
    "picked",
    "pick",
    "prefer",
    "preferred",
    "favor",
    "favour",
    "favored",
    "favoured",
];

/// The words of each of [`CHOICE_PATTERNS`] (see [`word_candidates`]): the verb or noun the
/// chosen path follows.
pub(super) const CHOICE_WORDS: [&[&str]; 8] = [
    &["go", "going", "went"],
    &["decided", "decide", "deciding"],
    CHOICE_VERBS,
    &["use", "try", "take", "pick"],
    &[
        "opt", "opted", "opting", "settle", "settled", "settling", "landed",
    ],
    &["option", "approach", "choice", "path", "bet", "way"],
    &["rather", "instead"],
    &["instead"],
];

/// The words of each of [`REJECTION_SOURCES`] (see [`word_candidates`]).
pub(super) const REJECTION_WORDS: [&[&str]; 6] = [
    &["ruled", "rule", "ruling"],
    &[
        "rejected",
        "reject",
        "rejecting",
        "discarded",
        "discard",
        "dismissed",
        "dropped",
    ],
    &["work"],
    &["decided"],
    &["not"],
    &["worse", "inferior", "slower", "weaker", "too", "riskier"],
];

/// The words of each of [`OPTION_SOURCES`] (see [`word_candidates`]).
pub(super) const OPTION_WORDS: [&[&str]; 6] = [
    &["either"],
    CHOICE_VERBS,
    &["rather", "instead"],
    &["vs", "versus"],
    &["alternatively", "hand"],
    &["options", "choices", "approaches", "alternatives"],
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
/// The decision patterns one by one: a sentence is tried only on those its words allow (see
/// [`decision_candidates`]), each a much smaller automaton than the whole set's (three of the
/// patterns count up to 200 characters, which multiplies the set's states).
pub(super) static DECISION_RES: LazyLock<Vec<Option<Regex>>> =
    LazyLock::new(|| compile_all(DECISION_PATTERNS.iter().map(|(_, p)| *p)));
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
