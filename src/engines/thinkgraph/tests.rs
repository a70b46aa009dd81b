use super::confidence::{Indicators, Totals, node_confidence};
use super::decisions::first_decision_pattern;
use super::patterns::{
    CHOICE_RES, CHOICE_WORDS, DECISION_PATTERNS, DECISION_RES, DECISION_SET, HIGH_RE, KIND_RES,
    LIST_SPLIT_RE, LOW_RE, MEDIUM_RE, OPTION_RES, OPTION_SOURCES, OPTION_WORDS, PATH_CUT_RE,
    PATH_LEAD_RE, REJECTION_RES, REJECTION_WORDS, decision_candidates, word_candidates,
};
use super::text::{MAX_STEP_BYTES, floor_boundary};
use super::*;
use proptest::prelude::*;

/// Feeds `text` to a builder in pieces cut near `cuts` (moved to char boundaries).
pub(super) fn analyze_chunked(text: &str, cuts: &[usize]) -> Analysis {
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

/// A list compiles a regex the first time it is asked for that one, and no other: a
/// sentence that may match one choice pattern does not wait for the other seven.
#[test]
fn a_lazy_list_compiles_only_the_regexes_asked_for() {
    let list = super::patterns::lazy_all(super::patterns::CHOICE_PATTERNS);
    assert_eq!(list.len(), 8);
    assert!((0..8).all(|i| !list.is_compiled(i)));
    let re = list.get(2).expect("choice pattern 2 compiles");
    assert!(re.is_match("I chose the cache over the index"));
    assert!(list.is_compiled(2));
    assert_eq!((0..8).filter(|&i| list.is_compiled(i)).count(), 1);
    // Asked again, it is the same regex, not a second compilation.
    assert!(std::ptr::eq(re, list.get(2).expect("compiled")));
    assert!(list.get(8).is_none());
}

#[test]
fn all_patterns_compile() {
    assert!(DECISION_SET.is_some());
    assert!(
        CHOICE_RES
            .iter()
            .chain(REJECTION_RES.iter())
            .chain(OPTION_RES.iter())
            .chain(DECISION_RES.iter())
            .all(|re| re.is_some())
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
    let a = analyze("First para.\nstill first.\n\n\n  \nSecond para.\r\n\r\nThird.\n \t\nFourth");
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
    let a = analyze("This is clearly and definitely right.\n\nMaybe, perhaps, it might be wrong.");
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

pub(super) fn fragment() -> impl Strategy<Value = String> {
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

/// The analysis cut the plain way: the whole text split at its blank lines, each paragraph
/// cut into steps at once (no settling of long paragraphs while they stream).
pub(super) fn analyze_by_paragraphs(text: &str) -> Analysis {
    use super::text::{BlankLine, find_blank_line};
    let mut updates = Vec::new();
    let mut totals = Totals::default();
    let mut next_index = 0;
    let mut start = 0;
    loop {
        match find_blank_line(text, start) {
            BlankLine::Found { para_end, next } => {
                analyze_paragraph(
                    &text[start..para_end],
                    start,
                    &mut next_index,
                    &mut totals,
                    &mut updates,
                );
                start = next;
            }
            BlankLine::Undecided(_) | BlankLine::Absent => {
                analyze_paragraph(
                    &text[start..],
                    start,
                    &mut next_index,
                    &mut totals,
                    &mut updates,
                );
                break;
            }
        }
    }
    let (mut steps, mut decisions) = (Vec::new(), Vec::new());
    for u in updates {
        match u {
            GraphUpdate::Step(s) => steps.push(s),
            GraphUpdate::Decision(d) => decisions.push(d),
        }
    }
    Analysis {
        steps,
        decisions,
        confidence: node_confidence(
            &totals,
            text.chars().count(),
            u64::from(crc32fast::hash(text.as_bytes())),
        ),
    }
}

/// Pieces of long paragraphs: sentences of every length (some cut by the hard split),
/// runs of end punctuation, line breaks and the odd blank line.
pub(super) fn long_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,200}",
        "[a-z]{500,900}",
        Just(". ".to_string()),
        Just("?! ".to_string()),
        Just("...".to_string()),
        Just(".\n".to_string()),
        Just("\n".to_string()),
        Just("\n\n".to_string()),
        Just("  ".to_string()),
        Just("I decided to go with B rather than A because it is faster. ".to_string()),
        Just("予算は足りる。 é! ".to_string()),
    ]
}

#[test]
fn a_long_paragraph_settles_as_it_streams_with_the_steps_of_the_whole() {
    let text: String = (0..2000)
        .map(|i| format!("step {i} weighs the option against the budget. "))
        .collect();
    let whole = analyze_by_paragraphs(&text);
    assert!(whole.steps.len() > 100);
    let mut builder = ThinkGraphBuilder::new();
    let mut steps = 0;
    for (i, piece) in text.split_inclusive(". ").enumerate() {
        steps += builder
            .push(piece)
            .iter()
            .filter(|u| matches!(u, GraphUpdate::Step(_)))
            .count();
        if i == 1000 {
            assert!(steps > 30, "steps come while the paragraph streams");
        }
    }
    assert_eq!(in_fixed_deltas(&text, 45), whole);
    assert_eq!(analyze(&text), whole);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn long_paragraphs_cut_as_when_cut_whole(
        parts in prop::collection::vec(long_fragment(), 0..60),
        cuts in prop::collection::vec(0usize..40_000, 0..40),
    ) {
        let text: String = parts.concat();
        let cuts: Vec<usize> = cuts.into_iter().map(|c| c % (text.len() + 1)).collect();
        let whole = analyze_by_paragraphs(&text);
        prop_assert_eq!(analyze_chunked(&text, &cuts), whole.clone());
        prop_assert_eq!(analyze(&text), whole);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn signals_count_as_each_regex_alone(parts in prop::collection::vec(fragment(), 0..12)) {
        let extra = [
            "Therefore it is clearly right, but maybe not; let me consider the options.",
            "I think this probably works; perhaps check it. In summary, we could test it.",
        ];
        let text = parts.concat() + extra[parts.len() % 2];
        for t in [text.as_str(), &parts.concat()] {
            prop_assert_eq!(
                super::confidence::signals(t),
                (Indicators::of(t), classify_step(t))
            );
        }
    }
}

/// Words around the decision patterns' own: each pattern's words in several cases, words that
/// hold them (`overgo`, `pick_up`), the letters case folding reads as `k` and `s`, and
/// separators of every kind.
pub(super) fn decision_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "could",
            "either",
            "Either",
            "decided",
            "DECIDE",
            "deciding",
            "to",
            "selected",
            "Chose",
            "choose",
            "chosen",
            "picked",
            "pick",
            "prefer",
            "favour",
            "favored",
            "over",
            "on",
            "the",
            "one",
            "hand",
            "alternatively",
            "another",
            "option",
            "approach",
            "is",
            "would",
            "be",
            "instead",
            "of",
            "weighing",
            "weigh",
            "trade",
            "trade-offs",
            "tradeoff",
            "between",
            "pros",
            "and",
            "cons",
            "options",
            "choices",
            "are",
            "include",
            "go",
            "Going",
            "went",
            "with",
            "rather",
            "than",
            "picking",
            "opted",
            "for",
            "because",
            "vs",
            "VS",
            "versus",
            "comparing",
            "compare",
            "compared",
            "against",
            "overgo",
            "pick_up",
            "go2",
            "_go",
            "handy",
            "insteadof",
            "cho\u{17f}en",
            "\u{17f}elected",
            "pic\u{212a}",
            "versu\u{17f}",
            "pro\u{17f}",
            "\u{e9}",
            "\u{1d7ec}",
        ])
        .prop_map(str::to_string),
        prop::sample::select(vec![
            " ", "  ", "\t", "\n", "\u{a0}", "\u{2003}", ", ", ". ", "-", "'", "_", "x", "é", "1",
        ])
        .prop_map(str::to_string),
        "[a-zA-Z ]{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn the_word_scan_never_skips_a_decision(parts in prop::collection::vec(decision_fragment(), 0..16)) {
        let text = parts.concat();
        let set = DECISION_SET.as_ref().unwrap();
        let candidates = decision_candidates(&text);
        for i in set.matches(&text).iter() {
            prop_assert!(candidates & (1 << i) != 0, "pattern {i} in {text:?}");
        }
        prop_assert_eq!(first_decision_pattern(&text), set.matches(&text).iter().next());
    }
}

#[test]
fn the_word_scan_finds_each_pattern_and_passes_over_plain_text() {
    let set = DECISION_SET.as_ref().unwrap();
    let samples = [
        "We could either add it",
        "I decided to wait",
        "She chose the map over the list",
        "On the one hand it is fast",
        "Alternatively, keep it",
        "another way would be this",
        "use A instead of B",
        "weighing it",
        "the trade-offs between them",
        "pros and cons",
        "the options are few",
        "let's go with it",
        "A rather than B",
        "picked it because",
        "opted for it because",
        "A vs B",
        "comparing A to B",
        "Choſen by me over you",
        "weigh ſomething",
        "pic\u{212a} X over Y",
    ];
    let mut seen = 0u16;
    for s in samples {
        let first = set.matches(s).iter().next();
        assert!(first.is_some(), "{s}");
        assert_eq!(first_decision_pattern(s), first, "{s}");
        seen |= 1 << first.unwrap_or(0);
    }
    assert_eq!(seen, (1 << 12) - 1, "every pattern is among the samples");
    for plain in [
        "let x = foo.bar(); // overgoing handy insteadof",
        "fn decide_later() { pick_up(); }",
        "The parser reads the whole line first.",
        "",
    ] {
        assert!(!set.is_match(plain), "{plain}");
        assert_eq!(decision_candidates(plain), 0, "{plain}");
        assert_eq!(first_decision_pattern(plain), None, "{plain}");
    }
}

#[test]
fn only_the_kelvin_sign_and_the_long_s_fold_to_ascii_letters() {
    // What `decision_candidates` assumes of case-insensitive matching: no other character
    // outside ASCII matches an ASCII letter.
    let letter = regex::Regex::new("(?i)^[a-z]$").unwrap();
    let folding: Vec<char> = (0x80..=0x10FFFFu32)
        .filter_map(char::from_u32)
        .filter(|c| letter.is_match(c.encode_utf8(&mut [0; 4])))
        .collect();
    assert_eq!(folding, ['\u{17f}', '\u{212a}']);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn the_word_scan_never_skips_a_choice_rejection_or_option(
        parts in prop::collection::vec(decision_fragment(), 0..16),
    ) {
        let text = parts.concat();
        for (res, words) in [
            (&*CHOICE_RES, &CHOICE_WORDS[..]),
            (&*REJECTION_RES, &REJECTION_WORDS[..]),
            (&*OPTION_RES, &OPTION_WORDS[..]),
        ] {
            prop_assert_eq!(res.len(), words.len());
            let candidates = word_candidates(&text, words);
            for (i, re) in res.iter().enumerate() {
                if re.unwrap().is_match(&text) {
                    prop_assert!(candidates & (1 << i) != 0, "regex {} of {:?} in {:?}", i, words[i], text);
                }
            }
        }
    }
}
