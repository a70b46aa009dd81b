//! Decision points: sentences that match a decision pattern, the path chosen there, the
//! alternatives named or rejected around it, and the confidence of the language near it.

use super::Decision;
use super::confidence::{
    DECISION_NEUTRAL, EXPLICIT_CHOICE_BONUS, Indicators, MAX_CONFIDENCE, MIN_CONFIDENCE,
};
use super::counted::Counted;
use super::patterns::{
    CHOICE_RES, CHOICE_WORDS, DECISION_PATTERN_NAMES, DECISION_RES, DECISION_SET, LIST_SPLIT_RE,
    LazyRegexes, OPTION_RES, OPTION_WORDS, PATH_CUT_RE, PATH_LEAD_RE, REJECTION_RES,
    REJECTION_WORDS, decision_candidates, word_candidates,
};
use super::text::{sentence_spans, truncate_chars};
use crate::store::Alternative;

// Seed 000 ThinkGraph, decision point extraction: alternatives come from the 2 sentences
// before a decision and the 3 after it, at most 5 per decision point; descriptions are cut to
// 200 chars and reasoning excerpts to 500.
/// Sentences before a decision sentence searched for alternatives.
pub(super) const CONTEXT_BEFORE: usize = 2;
/// Sentences after a decision sentence searched for the chosen path and alternatives.
pub(super) const CONTEXT_AFTER: usize = 3;
/// At most this many alternatives are kept per decision point.
pub(super) const MAX_ALTERNATIVES: usize = 5;
/// Decision descriptions and chosen/alternative paths are cut to this many chars.
pub(super) const MAX_DESCRIPTION_CHARS: usize = 200;
/// Reasoning excerpts (rejection reasons) are cut to this many chars.
pub(super) const MAX_EXCERPT_CHARS: usize = 500;

/// Cleans a captured path: cut at the first clause break, drop leading filler and trailing
/// punctuation, cap at 200 chars.
pub(super) fn clean_path(raw: &str) -> Option<String> {
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
pub(super) fn clean_reason(raw: &str) -> Option<String> {
    let s = raw.trim_matches(|c: char| c.is_whitespace() || ".,;:!?\"'".contains(c));
    (!s.is_empty()).then(|| truncate_chars(s, MAX_EXCERPT_CHARS))
}

/// Key for comparing paths: lowercase words without articles and filler verbs.
pub(super) fn path_key(path: &str) -> String {
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
pub(super) struct Sentence<'a> {
    text: &'a str,
    /// Offset in the step.
    start: usize,
}

/// The regexes of `list` (in order) whose bits `candidates` has set, each compiled when it
/// is first reached: the others cannot match (see [`word_candidates`]).
fn candidates_of(list: &LazyRegexes, candidates: u64) -> impl Iterator<Item = &Counted> {
    (0..list.len())
        .filter(move |i| candidates & (1 << i) != 0)
        .filter_map(|i| list.get(i))
}

/// The chosen path from the decision sentence or the sentences after it.
pub(super) fn chosen_path(sentences: &[Sentence], i: usize) -> Option<String> {
    sentences
        .iter()
        .skip(i)
        .take(1 + CONTEXT_AFTER)
        .find_map(|s| {
            let candidates = word_candidates(s.text, &CHOICE_WORDS);
            candidates_of(&CHOICE_RES, candidates).find_map(|re| {
                re.captures(s.text)
                    .and_then(|found| found.name("c"))
                    .and_then(clean_path)
            })
        })
}

/// Subjects that name nothing on their own ("That seems slower").
pub(super) const PRONOUNS: [&str; 10] = [
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
pub(super) struct AlternativeList {
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
pub(super) fn alternatives(context: &[Sentence], chosen: &str) -> Vec<Alternative> {
    let mut list = AlternativeList {
        chosen_key: path_key(chosen),
        keys: Vec::new(),
        items: Vec::new(),
    };
    for s in context {
        let candidates = word_candidates(s.text, &REJECTION_WORDS);
        for re in candidates_of(&REJECTION_RES, candidates) {
            for caps in re.captures_iter(s.text) {
                let alt = match caps.name("alt") {
                    Some(alt) => Some(alt),
                    None => subject_before(s.text, caps.start()),
                };
                if let Some(alt) = alt {
                    list.add(alt, caps.name("r"));
                }
            }
        }
    }
    for s in context {
        let candidates = word_candidates(s.text, &OPTION_WORDS);
        for re in candidates_of(&OPTION_RES, candidates) {
            for caps in re.captures_iter(s.text) {
                if let Some(a) = caps.name("a") {
                    list.add(a, None);
                }
                if let Some(b) = caps.name("b") {
                    list.add(b, caps.name("r"));
                }
                if let (Some(items), Some(split)) = (caps.name("list"), LIST_SPLIT_RE.as_ref()) {
                    for item in split.split(items) {
                        list.add(item, None);
                    }
                }
            }
        }
    }
    list.items.truncate(MAX_ALTERNATIVES);
    list.items
}

/// The first decision pattern (in priority order) that matches `sentence`: what the set's
/// first match would be, trying only the patterns the sentence's words allow.
pub(super) fn first_decision_pattern(sentence: &str) -> Option<usize> {
    let candidates = decision_candidates(sentence);
    if candidates == 0 {
        return None;
    }
    for i in (0..DECISION_RES.len()).filter(|i| candidates & (1 << i) != 0) {
        match DECISION_RES.get(i) {
            Some(re) if re.is_match(sentence) => return Some(i),
            Some(_) => {}
            // A pattern that does not compile alone (a test checks that none fails): the
            // set answers for all of them.
            None => return DECISION_SET.as_ref()?.matches(sentence).iter().next(),
        }
    }
    None
}

/// Decision points of one step; `base` is the step's offset in the whole text, `candidates`
/// its [`decision_candidates`].
pub(super) fn decisions_in_step(
    text: &str,
    base: usize,
    step_index: u32,
    candidates: u16,
) -> Vec<Decision> {
    // A sentence holds no word the step does not, so this skips most steps.
    if candidates == 0 {
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
        let Some(pattern) = first_decision_pattern(sentence.text) else {
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
        let bonus = if explicit.is_some() {
            EXPLICIT_CHOICE_BONUS
        } else {
            0.0
        };
        let confidence =
            (indicators.score(DECISION_NEUTRAL) + bonus).clamp(MIN_CONFIDENCE, MAX_CONFIDENCE);
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

/// Longest subject (chars) read before "won't work" / "is worse".
pub(super) const MAX_SUBJECT_CHARS: usize = 100;

/// The phrase of word chars, spaces, `'` and `-` that ends right before byte `end`:
/// at most 100 chars, starting at a word char.
pub(super) fn subject_before(sentence: &str, end: usize) -> Option<&str> {
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
