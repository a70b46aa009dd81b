//! Tests of the word scan, the long-paragraph settling and the byte-wise searches: each
//! gives what the plain way (the regexes, the whole-text cut) gives.

use super::confidence::Indicators;
use super::patterns::{HIGH_RE, KIND_RES, LOW_RE, MEDIUM_RE, decision_candidates};
use super::tests::{analyze_by_paragraphs, analyze_chunked, fragment, long_fragment};
use super::text::floor_boundary;
use super::*;
use proptest::prelude::*;

/// The signal regexes by index, as `SIGNAL_SET` holds them: high, medium and low confidence,
/// then the step kinds.
fn signal_regexes() -> Vec<&'static regex::Regex> {
    [&*HIGH_RE, &*MEDIUM_RE, &*LOW_RE]
        .into_iter()
        .map(|re| re.as_ref().unwrap())
        .chain(KIND_RES.iter().map(|(_, re)| re))
        .collect()
}

/// Every word of the signal regexes: the letter runs of their sources (with and without a
/// trailing `s`, whole and cut), the word lists the word scan counts by, in several cases.
fn signal_vocabulary() -> Vec<String> {
    use super::patterns::{
        HIGH_CONFIDENCE, LOW_CONFIDENCE, MEDIUM_CONFIDENCE, SIGNAL_PHRASES, SIGNAL_WORDS,
        STEP_KIND_INDICATORS,
    };
    let mut words: Vec<String> = Vec::new();
    let sources = [HIGH_CONFIDENCE, MEDIUM_CONFIDENCE, LOW_CONFIDENCE]
        .into_iter()
        .chain(STEP_KIND_INDICATORS.iter().map(|(_, p)| *p));
    for source in sources {
        for run in source.split(|c: char| !c.is_ascii_alphabetic()) {
            if run.len() > 1 {
                words.push(run.to_string());
                words.push(run.trim_end_matches('s').to_string());
                words.push(run[..run.len() - 1].to_string());
            }
        }
    }
    for list in SIGNAL_WORDS {
        words.extend(list.iter().map(|w| w.to_string()));
    }
    for phrases in SIGNAL_PHRASES {
        for phrase in phrases {
            words.extend(phrase.iter().map(|w| w.to_string()));
        }
    }
    words.extend(
        [
            "analyze",
            "analyse",
            "analyzing",
            "analysing",
            "trade-off",
            "tradeoffs",
            "doesn't",
            "it's",
        ]
        .map(str::to_string),
    );
    let mut out = Vec::new();
    for w in words {
        out.push(w.to_uppercase());
        let mut chars = w.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_uppercase().chain(chars).collect());
        }
        out.push(w);
    }
    out.sort();
    out.dedup();
    out.retain(|w| !w.is_empty());
    out
}

/// Matches of the signal regexes, in any case and with any whitespace: drawn from the
/// regexes themselves, not from the word scan's lists.
fn signal_match() -> impl Strategy<Value = String> {
    use super::patterns::{
        HIGH_CONFIDENCE, LOW_CONFIDENCE, MEDIUM_CONFIDENCE, STEP_KIND_INDICATORS,
    };
    let sources: Vec<String> = [HIGH_CONFIDENCE, MEDIUM_CONFIDENCE, LOW_CONFIDENCE]
        .into_iter()
        .chain(STEP_KIND_INDICATORS.iter().map(|(_, p)| *p))
        .map(|p| format!("(?i){}", p.replace(r"\b", "")))
        .collect();
    prop::sample::select(sources).prop_flat_map(|source| {
        proptest::string::string_regex(&source).expect("a signal regex generates")
    })
}

/// Texts of the signal regexes' words and matches, words that hold them, separators of every
/// kind and the letters case folding reads as `k` and `s`.
fn signal_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => signal_match(),
        6 => prop::sample::select(signal_vocabulary()),
        4 => prop::sample::select(vec![
            " ", " ", " ", "  ", "\t", "\n", "\u{a0}", "\u{2003}", ", ", ". ", "-", "'", "_", "x",
            "é", "1", "\u{17f}", "\u{212a}", "🚀",
        ])
        .prop_map(str::to_string),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn the_word_scan_counts_signals_as_their_regexes(text in signal_text()) {
        let scan = super::patterns::scan_words(&text);
        let regexes = signal_regexes();
        prop_assert_eq!(regexes.len(), super::patterns::SIGNALS);
        if scan.told {
            for (i, re) in regexes.iter().enumerate() {
                if scan.unsure & (1 << i) == 0 {
                    prop_assert_eq!(scan.counts[i], re.find_iter(&text).count(), "regex {} in {:?}", i, text);
                }
            }
        }
        prop_assert_eq!(scan.decision_candidates(), decision_candidates(&text));
        prop_assert_eq!(
            super::confidence::signals(&text),
            (Indicators::of(&text), classify_step(&text))
        );
    }
}

#[test]
fn the_word_scan_counts_plain_words_and_leaves_phrases_to_the_regexes() {
    use super::patterns::scan_words;
    // "option" twice (consideration), "maybe" (low, hypothesis); "the" without a word of a
    // phrase after it.
    let scan = scan_words("step 1 weighs the option against the budget, maybe. OPTION");
    assert!(scan.told);
    assert_eq!(scan.unsure, 0);
    assert_eq!(scan.counts, [0, 0, 1, 0, 0, 1, 2, 0]);
    // "the problem" may be the analysis phrase, "doesn't work" the evaluation one.
    let scan = scan_words("the problem: it doesn't work");
    assert_eq!(scan.unsure, (1 << 7) | (1 << 4));
    // Kelvin sign: not told.
    assert!(!scan_words("o\u{212a}").told);
}

/// Texts of long paragraphs, blank lines, decision and confidence language and non-ASCII.
fn streaming_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        long_fragment(),
        fragment(),
        Just("I could either buffer it or stream it, I'll go with streaming. ".to_string()),
        Just("On the one hand it is fast; on the other hand it is risky. ".to_string()),
        Just("The options are A, B, or C. I think the answer is B. ".to_string()),
        Just("Maybe it doesn't work; in the end we could try another approach. ".to_string()),
        Just("step 7 weighs the option against the budget. ".to_string()),
        Just("Pic\u{212a} A over B. ".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn streaming_in_any_chunks_gives_one_push_of_the_whole(
        parts in prop::collection::vec(streaming_fragment(), 0..80),
        cuts in prop::collection::vec(0usize..60_000, 0..60),
    ) {
        let text: String = parts.concat();
        let cuts: Vec<usize> = cuts.into_iter().map(|c| c % (text.len() + 1)).collect();
        let whole = analyze(&text);
        prop_assert_eq!(analyze_chunked(&text, &cuts), whole.clone());
        prop_assert_eq!(analyze_by_paragraphs(&text), whole);
    }
}

/// The sentence spans and blank-line search read byte by byte (as they were before they
/// skipped eight bytes at a time).
fn sentence_spans_bytewise(text: &str) -> Vec<(usize, usize)> {
    use super::text::trimmed_span;
    let bytes = text.as_bytes();
    let len = bytes.len();
    let mut spans = Vec::new();
    let (mut start, mut i) = (0, 0);
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

fn blank_line_bytewise(buf: &str, from: usize) -> (u8, usize, usize) {
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
            None => return (1, nl, 0),
            Some(b'\n') => return (2, nl, j + 1),
            Some(_) => i = j,
        }
    }
    (0, 0, 0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    #[test]
    fn cutting_reads_as_byte_by_byte(
        parts in prop::collection::vec(
            prop_oneof![
                long_fragment(),
                prop::sample::select(vec![".", "!", "?", "\n", " ", "\t", "\r", "\n \n", "é", "ab"])
                    .prop_map(str::to_string),
            ],
            0..40,
        ),
        from in 0usize..2000,
    ) {
        use super::text::{BlankLine, TextHash, find_blank_line, sentence_spans};
        let text = parts.concat();
        prop_assert_eq!(sentence_spans(&text), sentence_spans_bytewise(&text));
        let from = floor_boundary(&text, from % (text.len() + 1));
        let found = match find_blank_line(&text, from) {
            BlankLine::Absent => (0, 0, 0),
            BlankLine::Undecided(nl) => (1, nl, 0),
            BlankLine::Found { para_end, next } => (2, para_end, next),
        };
        prop_assert_eq!(found, blank_line_bytewise(&text, from));
        // Read in two pieces cut anywhere, the hash and count are the whole text's.
        let mut hashed = TextHash::default();
        hashed.push(&text[..from]);
        hashed.push(&text[from..]);
        prop_assert_eq!(
            (hashed.hash(), hashed.chars()),
            (u64::from(crc32fast::hash(text.as_bytes())), text.chars().count())
        );
    }
}
