//! The regexes of ThinkGraph: the 12 decision patterns, the choice, rejection and option
//! patterns, confidence indicators and step-kind indicators. All are case-insensitive, use
//! ASCII word boundaries and only bounded repetitions (`.{1,200}?`: compiled without the
//! count and held to it after each match, see `counted.rs`). Also the word scan
//! ([`scan_words`]): one pass over a step's words tells which decision patterns it may
//! match and counts the indicators that are one word, so most regexes need not run.

use std::sync::{LazyLock, OnceLock};

use regex::{Regex, RegexSet};

use super::StepKind;
use super::counted::Counted;

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

/// The words of the decision patterns, each with the patterns (bits, by index in
/// [`DECISION_PATTERNS`]) it may start or end a match of, given lowercase: every match of a
/// pattern holds one of its words (its choice verb, `either`, `hand`, `instead`, `vs` …) as a
/// maximal run of ASCII word characters, which is what the patterns' ASCII word boundaries
/// make of it.
const DECISION_WORDS: &[(&str, u16)] = {
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
    &[
        ("either", COULD_EITHER),
        ("decided", DECIDED_TO),
        ("decide", DECIDED_TO),
        ("deciding", DECIDED_TO),
        ("chose", SELECTED_OVER | CHOSE_BECAUSE),
        ("choose", SELECTED_OVER | CHOSE_BECAUSE),
        ("chosen", SELECTED_OVER | CHOSE_BECAUSE),
        ("picked", SELECTED_OVER | CHOSE_BECAUSE),
        ("pick", SELECTED_OVER | CHOSE_BECAUSE),
        ("selected", SELECTED_OVER),
        ("select", SELECTED_OVER),
        ("prefer", SELECTED_OVER),
        ("preferred", SELECTED_OVER),
        ("favor", SELECTED_OVER),
        ("favour", SELECTED_OVER),
        ("favored", SELECTED_OVER),
        ("favoured", SELECTED_OVER),
        ("hand", ON_ONE_HAND),
        ("alternatively", ALTERNATIVELY),
        ("another", ALTERNATIVELY),
        ("instead", INSTEAD_OF),
        ("weighing", WEIGHING),
        ("weigh", WEIGHING),
        ("trade", WEIGHING),
        ("tradeoff", WEIGHING),
        ("tradeoffs", WEIGHING),
        ("pros", WEIGHING),
        ("options", OPTIONS_ARE),
        ("choices", OPTIONS_ARE),
        ("approaches", OPTIONS_ARE),
        ("alternatives", OPTIONS_ARE),
        ("go", GO_WITH),
        ("going", GO_WITH),
        ("went", GO_WITH),
        ("rather", RATHER_THAN),
        ("picking", CHOSE_BECAUSE),
        ("opted", CHOSE_BECAUSE),
        ("vs", COMPARING_VS),
        ("versus", COMPARING_VS),
        ("comparing", COMPARING_VS),
        ("compare", COMPARING_VS),
        ("compared", COMPARING_VS),
    ]
};

/// The longest word [`DECISION_WORDS`], [`SIGNAL_WORDS`], [`SIGNAL_PHRASES`] and the word
/// lists below hold.
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
/// the words it holds (see [`DECISION_WORDS`]), or all of them where the words cannot tell
/// (see [`scan_words`]). A pattern whose bit is clear does not match.
pub(super) fn decision_candidates(text: &str) -> u16 {
    scan_words(text).decision_candidates()
}

/// How many signal regexes there are: the confidence indicators (high, medium, low) and then
/// the step-kind indicators in [`STEP_KIND_INDICATORS`] order, as in [`SIGNAL_SET`].
pub(super) const SIGNALS: usize = 3 + STEP_KIND_INDICATORS.len();

/// The alternatives of each signal regex (by index, as in [`SIGNAL_SET`]) that are one word:
/// such an alternative matches where the word is a whole run of ASCII word characters.
pub(super) const SIGNAL_WORDS: [&[&str]; SIGNALS] = [
    &[
        "clearly",
        "definitely",
        "certainly",
        "obviously",
        "undoubtedly",
        "confident",
        "certain",
        "proven",
        "confirm",
        "confirms",
        "confirmed",
        "guaranteed",
        "always",
        "exactly",
    ],
    &[
        "likely",
        "probably",
        "should",
        "seems",
        "appears",
        "reasonable",
        "suggest",
        "suggests",
        "generally",
        "mostly",
        "fairly",
        "usually",
    ],
    &[
        "maybe",
        "perhaps",
        "might",
        "possibly",
        "unsure",
        "unclear",
        "uncertain",
        "guess",
        "doubt",
        "confused",
    ],
    // Conclusion
    &["therefore", "thus", "hence", "ultimately", "overall"],
    // Evaluation
    &[
        "evaluate",
        "evaluating",
        "however",
        "but",
        "compare",
        "comparing",
        "tradeoff",
        "tradeoffs",
        "pros",
        "cons",
        "better",
        "worse",
        "slower",
        "faster",
        "verify",
        "verifying",
        "check",
        "checking",
        "wrong",
        "correct",
        "test",
        "testing",
        "fail",
        "fails",
    ],
    // Hypothesis
    &[
        "hypothesis",
        "hypothesize",
        "suppose",
        "supposing",
        "assume",
        "assuming",
        "perhaps",
        "maybe",
        "possibly",
        "presumably",
    ],
    // Consideration
    &[
        "consider",
        "considering",
        "alternatively",
        "option",
        "options",
    ],
    // Analysis
    &[
        "analyze",
        "analyse",
        "analyzing",
        "analysing",
        "analysis",
        "first",
        "examine",
        "understand",
        "structure",
    ],
];

/// The alternatives of each signal regex that are several words, each as words that every
/// match of it holds as consecutive whole runs of ASCII word characters (two or three of
/// them, in order; `doesn't` is `doesn`, `t`). Where none of these occurs, every match of the
/// regex is one of its [`SIGNAL_WORDS`].
pub(super) const SIGNAL_PHRASES: [&[&[&str]]; SIGNALS] = [
    &[
        &["sure", "that"],
        &["without", "doubt"],
        &["without", "a", "doubt"],
        &["must", "be"],
        &["it", "is", "clear"],
    ],
    &[&["i", "think"], &["i", "believe"]],
    &[
        &["not", "sure"],
        &["could", "be"],
        &["i", "wonder"],
        &["hard", "to", "say"],
        &["no", "idea"],
        &["not", "certain"],
    ],
    // Conclusion
    &[
        &["in", "conclusion"],
        &["to", "conclude"],
        &["to", "summarize"],
        &["in", "summary"],
        &["so", "the", "answer"],
        &["the", "answer", "is"],
        &["final", "answer"],
        &["this", "means"],
        &["i", "conclude"],
        &["in", "the", "end"],
    ],
    // Evaluation
    &[
        &["trade", "off"],
        &["trade", "offs"],
        &["this", "works"],
        &["doesn", "t", "work"],
    ],
    // Hypothesis
    &[
        &["what", "if"],
        &["might", "be"],
        &["could", "be"],
        &["i", "suspect"],
        &["my", "guess"],
        &["it", "s", "possible"],
    ],
    // Consideration
    &[
        &["another", "option"],
        &["another", "approach"],
        &["another", "way"],
        &["we", "could"],
        &["i", "could"],
        &["what", "about"],
        &["keep", "in", "mind"],
        &["note", "that"],
        &["also", "need"],
        &["worth", "noting"],
        &["the", "other", "hand"],
    ],
    // Analysis
    &[
        &["looking", "at"],
        &["let", "me"],
        &["the", "problem"],
        &["break", "down"],
        &["given", "that"],
        &["the", "input"],
        &["we", "have"],
        &["there", "are"],
    ],
];

/// What the words of a text tell of the decision patterns and signal regexes it may match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct WordScan {
    /// False when the text holds a character that case-insensitive matching takes for an
    /// ASCII letter (the Kelvin sign for `k`, the long s for `s`): words cannot be told by
    /// bytes then, and nothing below holds.
    pub(super) told: bool,
    /// The decision patterns of the words held (bits, by index in [`DECISION_PATTERNS`]).
    pub(super) decisions: u16,
    /// Signal regexes (bits, by index as in [`SIGNAL_SET`]) that an alternative of several
    /// words may match (one of its [`SIGNAL_PHRASES`] occurs): their matches are not told.
    pub(super) unsure: u8,
    /// Matches of each signal regex whose bit of `unsure` is clear: its [`SIGNAL_WORDS`] held.
    pub(super) counts: [usize; SIGNALS],
}

impl WordScan {
    /// See [`decision_candidates`].
    pub(super) fn decision_candidates(&self) -> u16 {
        if self.told {
            self.decisions
        } else {
            (1 << DECISION_PATTERNS.len()) - 1
        }
    }
}

/// Where a word of [`WORD_TABLE`] ends a phrase of [`SIGNAL_PHRASES`]: the words before it
/// (ids, the nearer first; [`ANY_WORD`] where the phrase is shorter), and the signal regexes
/// (bits) of the phrase.
#[derive(Debug)]
struct PhraseEnd {
    before: [u16; 2],
    signals: u8,
}

/// One word of [`WORD_TABLE`].
#[derive(Debug, Default)]
struct WordEntry {
    decisions: u16,
    signals: u8,
    ends: Vec<PhraseEnd>,
}

/// A word that is not in [`WORD_TABLE`].
const NO_WORD: u16 = u16::MAX;
/// In [`PhraseEnd::before`], a place the phrase does not reach.
const ANY_WORD: u16 = u16::MAX - 1;

/// A word of at most 16 bytes as two numbers (see [`word_key`]).
type WordKey = (u64, u64);

/// Every word of [`DECISION_WORDS`], [`SIGNAL_WORDS`] and [`SIGNAL_PHRASES`], found by its
/// key (see [`word_key`]) in an open-addressing table.
#[derive(Debug)]
struct WordTable {
    /// Keys; a zero key is an empty slot.
    keys: Vec<WordKey>,
    /// The id (index in `entries`) of each slot's word.
    ids: Vec<u16>,
    entries: Vec<WordEntry>,
}

/// The table has `1 << WORD_SLOTS_BITS` slots, about twice its words.
const WORD_SLOTS_BITS: u32 = 9;

/// The slot a key's search starts at.
fn word_slot((lo, hi): WordKey) -> usize {
    ((lo ^ hi.rotate_left(7)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - WORD_SLOTS_BITS))
        as usize
}

/// `0x20` in every byte: `| 0x20` lowercases an ASCII letter, keeps a digit and makes `_` a
/// byte (`0x7f`) no word of the table holds.
const LOWER: u64 = u64::from_ne_bytes([0x20; 8]);

/// The low `n` bytes (at most 8) of a little-endian word.
fn low_bytes(n: usize) -> u64 {
    if n >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * n)) - 1
    }
}

/// The 8 bytes of `bytes` from `at` as a little-endian number, zeros past its end.
#[inline]
fn load8(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    match bytes.get(at..at + 8) {
        Some(eight) => word.copy_from_slice(eight),
        None => {
            for (w, &b) in word.iter_mut().zip(bytes.get(at..).unwrap_or(&[])) {
                *w = b;
            }
        }
    }
    u64::from_le_bytes(word)
}

/// The key of the word `bytes[start..end]` (at most 16 bytes): its bytes, lowercased if
/// letters, from the low end of the first number on. Word bytes are never zero, so no two
/// words share a key and none has key zero.
#[inline]
fn word_key(bytes: &[u8], start: usize, end: usize) -> WordKey {
    let len = end - start;
    let lo = (load8(bytes, start) | LOWER) & low_bytes(len);
    let hi = if len > 8 {
        (load8(bytes, start + 8) | LOWER) & low_bytes(len - 8)
    } else {
        0
    };
    (lo, hi)
}

impl WordTable {
    fn build() -> Self {
        let mut table = WordTable {
            keys: vec![(0, 0); 1 << WORD_SLOTS_BITS],
            ids: vec![NO_WORD; 1 << WORD_SLOTS_BITS],
            entries: Vec::new(),
        };
        for &(word, mask) in DECISION_WORDS {
            let id = table.insert(word);
            table.entries[usize::from(id)].decisions |= mask;
        }
        for (i, words) in SIGNAL_WORDS.iter().enumerate() {
            for word in *words {
                let id = table.insert(word);
                table.entries[usize::from(id)].signals |= 1 << i;
            }
        }
        for (i, phrases) in SIGNAL_PHRASES.iter().enumerate() {
            for phrase in *phrases {
                let ids: Vec<u16> = phrase.iter().map(|w| table.insert(w)).collect();
                let Some((&last, before)) = ids.split_last() else {
                    continue;
                };
                let mut end = PhraseEnd {
                    before: [ANY_WORD; 2],
                    signals: 1 << i,
                };
                for (slot, &id) in end.before.iter_mut().zip(before.iter().rev()) {
                    *slot = id;
                }
                table.entries[usize::from(last)].ends.push(end);
            }
        }
        table
    }

    /// The id of `word` (lowercase, at most [`MAX_PATTERN_WORD`] bytes), added if new.
    fn insert(&mut self, word: &str) -> u16 {
        let key = word_key(word.as_bytes(), 0, word.len());
        let mut slot = word_slot(key);
        loop {
            if self.keys[slot] == key {
                return self.ids[slot];
            }
            if self.keys[slot] == (0, 0) {
                let id = u16::try_from(self.entries.len()).unwrap_or(ANY_WORD - 1);
                self.keys[slot] = key;
                self.ids[slot] = id;
                self.entries.push(WordEntry::default());
                return id;
            }
            slot = (slot + 1) & ((1 << WORD_SLOTS_BITS) - 1);
        }
    }

    /// The entry of the word with `key`, and its id; the id is [`NO_WORD`] if it has none.
    fn find(&self, key: WordKey) -> (Option<&WordEntry>, u16) {
        let mut slot = word_slot(key);
        loop {
            let k = self.keys[slot];
            if k == key {
                let id = self.ids[slot];
                return (self.entries.get(usize::from(id)), id);
            }
            if k == (0, 0) {
                return (None, NO_WORD);
            }
            slot = (slot + 1) & ((1 << WORD_SLOTS_BITS) - 1);
        }
    }
}

static WORD_TABLE: LazyLock<WordTable> = LazyLock::new(WordTable::build);

/// Bytes of an ASCII word character (`[0-9A-Za-z_]`) are 1, the lead bytes of the long s and
/// the Kelvin sign (C5, E2) are 2, all others 0.
static BYTE_CLASS: [u8; 256] = {
    let mut class = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() || c == b'_' {
            class[b] = 1;
        }
        b += 1;
    }
    class[0xC5] = 2;
    class[0xE2] = 2;
    class
};

/// Reads the words of `text` (its maximal runs of ASCII word characters, what the patterns'
/// ASCII word boundaries delimit) once: the decision patterns they allow, and how often each
/// signal regex matches where its words tell it.
pub(super) fn scan_words(text: &str) -> WordScan {
    let table = &*WORD_TABLE;
    let bytes = text.as_bytes();
    let mut scan = WordScan {
        told: true,
        ..WordScan::default()
    };
    // The ids of the two words before, the nearer first.
    let mut before = [NO_WORD; 2];
    let mut i = 0;
    while i < bytes.len() {
        match BYTE_CLASS[usize::from(bytes[i])] {
            0 => {
                i += 1;
                continue;
            }
            2 => {
                // U+017F is C5 BF and U+212A is E2 84 AA in UTF-8.
                if bytes.get(i + 1..i + 2) == Some(&[0xBF][..]) && bytes[i] == 0xC5
                    || bytes.get(i + 1..i + 3) == Some(&[0x84, 0xAA][..]) && bytes[i] == 0xE2
                {
                    return WordScan {
                        told: false,
                        ..WordScan::default()
                    };
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        let start = i;
        while i < bytes.len() && BYTE_CLASS[usize::from(bytes[i])] == 1 {
            i += 1;
        }
        let (entry, id) = if i - start <= MAX_PATTERN_WORD {
            table.find(word_key(bytes, start, i))
        } else {
            (None, NO_WORD)
        };
        if let Some(entry) = entry {
            scan.decisions |= entry.decisions;
            let mut signals = entry.signals;
            while signals != 0 {
                scan.counts[signals.trailing_zeros() as usize] += 1;
                signals &= signals - 1;
            }
            for end in &entry.ends {
                let [near, far] = end.before;
                if near == before[0] && (far == ANY_WORD || far == before[1]) {
                    scan.unsure |= end.signals;
                }
            }
        }
        before = [id, before[0]];
    }
    scan
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

/// A list of regexes each compiled on its first use, keeping positions aligned with the
/// sources. Most texts need a few of a list or none (the word scan tells which may match),
/// and the choice, rejection and option lists, with their counted spans of 200 characters,
/// took three quarters of the 50 ms all of ThinkGraph's regexes cost to compile: compiled
/// as a whole, the first decision a process met waited for every one of them. Each is a
/// [`Counted`] regex, its spans' counts checked after the match rather than compiled.
pub(super) struct LazyRegexes {
    sources: Vec<String>,
    compiled: Vec<OnceLock<Option<Counted>>>,
}

impl LazyRegexes {
    fn new(sources: Vec<String>) -> Self {
        let compiled = sources.iter().map(|_| OnceLock::new()).collect();
        Self { sources, compiled }
    }

    pub(super) fn len(&self) -> usize {
        self.sources.len()
    }

    /// The regex at `i`, compiled now if it was not yet (`None` if it does not compile).
    pub(super) fn get(&self, i: usize) -> Option<&Counted> {
        let cell = self.compiled.get(i)?;
        cell.get_or_init(|| Counted::new(&pattern_source(&self.sources[i])))
            .as_ref()
    }

    /// Whether the regex at `i` was compiled yet.
    #[cfg(test)]
    pub(super) fn is_compiled(&self, i: usize) -> bool {
        self.compiled.get(i).is_some_and(|c| c.get().is_some())
    }

    /// Every regex of the list, in order, each compiled.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = Option<&Counted>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// A `LazyRegexes` of `patterns`, none compiled yet.
pub(super) fn lazy_all<'a>(patterns: impl IntoIterator<Item = &'a str>) -> LazyRegexes {
    LazyRegexes::new(patterns.into_iter().map(str::to_string).collect())
}

pub(super) static DECISION_SET: LazyLock<Option<RegexSet>> =
    LazyLock::new(|| RegexSet::new(DECISION_PATTERNS.iter().map(|(_, p)| pattern_source(p))).ok());
/// The decision patterns one by one: a sentence is tried only on those its words allow (see
/// [`decision_candidates`]), each a much smaller automaton than the whole set's (three of the
/// patterns count up to 200 characters, which multiplies the set's states).
pub(super) static DECISION_RES: LazyLock<LazyRegexes> =
    LazyLock::new(|| lazy_all(DECISION_PATTERNS.iter().map(|(_, p)| *p)));
pub(super) static CHOICE_RES: LazyLock<LazyRegexes> = LazyLock::new(|| lazy_all(CHOICE_PATTERNS));
pub(super) static REJECTION_RES: LazyLock<LazyRegexes> =
    LazyLock::new(|| lazy_all(REJECTION_SOURCES.iter().map(String::as_str)));
pub(super) static OPTION_RES: LazyLock<LazyRegexes> =
    LazyLock::new(|| lazy_all(OPTION_SOURCES.iter().map(String::as_str)));
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
/// `STEP_KIND_INDICATORS` order, as one set: where the words of a step leave more than one
/// of them untold (see [`WordScan`]), its text is read once to learn which occur at all, and
/// only those are counted.
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

/// Builds the word table and compiles now the regexes nearly every text needs (the
/// confidence and step-kind indicators, the path cutters), rather than on the first step
/// that needs each: for a caller about to analyse many texts, on a thread that would
/// otherwise wait. The decision, choice, rejection and option regexes are left to be
/// compiled one by one by the first sentence that may match each (see `LazyRegexes`).
pub fn warm_up() {
    LazyLock::force(&WORD_TABLE);
    LazyLock::force(&SIGNAL_SET);
    LazyLock::force(&KIND_RES);
    for re in [
        &HIGH_RE,
        &MEDIUM_RE,
        &LOW_RE,
        &PATH_CUT_RE,
        &PATH_LEAD_RE,
        &LIST_SPLIT_RE,
    ] {
        LazyLock::force(re);
    }
}
