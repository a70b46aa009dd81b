use std::sync::LazyLock;

use proptest::prelude::*;
use regex::Regex;

use super::counted::Counted;
use super::patterns::{
    CHOICE_PATTERNS, DECISION_PATTERNS, OPTION_SOURCES, REJECTION_SOURCES, pattern_source,
};
use super::tests::decision_fragment;

/// Every pattern of the lazy lists as `regex` compiles it and as a [`Counted`] regex.
static BOTH: LazyLock<Vec<(Regex, Counted)>> = LazyLock::new(|| {
    DECISION_PATTERNS
        .iter()
        .map(|(_, p)| *p)
        .chain(CHOICE_PATTERNS)
        .chain(REJECTION_SOURCES.iter().map(String::as_str))
        .chain(OPTION_SOURCES.iter().map(String::as_str))
        .map(|p| {
            let source = pattern_source(p);
            let exact = Regex::new(&source).expect("the pattern compiles");
            let counted = Counted::new(&source).expect("the pattern compiles counted");
            (exact, counted)
        })
        .collect()
});

/// Each match as (start, end, the text of every named group).
type Seen = Vec<(usize, usize, Vec<Option<String>>)>;

fn by_regex(re: &Regex, text: &str) -> Seen {
    let names: Vec<&str> = re.capture_names().flatten().collect();
    re.captures_iter(text)
        .map(|c| {
            let m = c.get(0).expect("group 0");
            let groups = names
                .iter()
                .map(|n| c.name(n).map(|g| g.as_str().to_string()))
                .collect();
            (m.start(), m.end(), groups)
        })
        .collect()
}

fn by_counted(re: &Counted, names_of: &Regex, text: &str) -> Seen {
    let names: Vec<&str> = names_of.capture_names().flatten().collect();
    re.captures_iter(text)
        .map(|f| {
            let groups = names
                .iter()
                .map(|n| f.name(n).map(str::to_string))
                .collect();
            (f.start(), f.end(), groups)
        })
        .collect()
}

/// Text that runs past the counts: a long stretch of words (some not ASCII), a phrase that
/// starts a counted span, or a piece of decision language.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => decision_fragment(),
        2 => prop::sample::select(vec![
            "decided to ",
            "going with ",
            "I'll use ",
            "opted for ",
            "the best option is ",
            "instead of a, ",
            "ruled out ",
            "rejected it because ",
            " won't work because ",
            "not that since ",
            " is worse because ",
            "either a or b because ",
            "the options are: ",
            "chose ",
            " over ",
        ])
        .prop_map(str::to_string),
        1 => "[a-zé ]{90,330}",
        1 => "[a-z]{1,9}( [a-z]{1,9}){20,70}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]
    /// Whatever the text, a counted regex finds the same matches, with the same groups, as
    /// the regex with its counts compiled in.
    #[test]
    fn a_counted_regex_matches_what_the_regex_with_its_counts_matches(
        parts in prop::collection::vec(fragment(), 0..14),
    ) {
        let text = parts.concat();
        for (exact, counted) in BOTH.iter() {
            prop_assert_eq!(counted.is_match(&text), exact.is_match(&text), "{}", exact.as_str());
            prop_assert_eq!(
                by_counted(counted, exact, &text),
                by_regex(exact, &text),
                "{}",
                exact.as_str()
            );
        }
    }
}

fn counted(pattern: &str) -> (Regex, Counted) {
    let source = pattern_source(pattern);
    (
        Regex::new(&source).expect("compiles"),
        Counted::new(&source).expect("compiles counted"),
    )
}

/// A last greedy span is cut to its count and the next match is looked for after the cut,
/// where the counted regex looks: the second rejection sits inside the first one's reason,
/// past its 300 characters.
#[test]
fn a_last_span_is_cut_to_its_count_and_the_search_goes_on_after_it() {
    let (exact, re) = counted(&REJECTION_SOURCES[1]);
    let filler = "the old cache was slow and ".repeat(12);
    let text = format!("We rejected the cache because {filler}so we also dropped the index.");
    let found: Vec<_> = re.captures_iter(&text).collect();
    assert_eq!(found.len(), 2, "{text}");
    assert_eq!(found[0].name("alt"), Some("the cache"));
    assert_eq!(found[0].name("r").map(|r| r.chars().count()), Some(300));
    assert_eq!(found[1].name("alt"), Some("the index."));
    assert_eq!(by_counted(&re, &exact, &text), by_regex(&exact, &text));
    // Cutting never needed the regex with its counts.
    assert!(!re.exact_compiled());
}

/// A span checked against its count that runs past it: the regex with its counts answers,
/// compiled then and not before.
#[test]
fn a_span_past_its_count_asks_the_regex_with_its_counts() {
    let (exact, re) = counted(CHOICE_PATTERNS[2]);
    let short = "I chose the cache over the index.";
    assert_eq!(
        re.captures(short).and_then(|f| f.name("c")),
        Some("the cache")
    );
    assert!(!re.exact_compiled());
    // 'over' 260 characters after 'chose': the uncounted regex takes all of that as the
    // path; the counted one finds the path of the next choice.
    let far = format!("I chose {}over it", "x ".repeat(130));
    let long = format!("{far}, and I picked the map over the list");
    let found = re.captures(&long).expect("a match");
    assert!(re.exact_compiled());
    assert_eq!(found.name("c"), Some("the map"));
    assert_eq!(by_counted(&re, &exact, &long), by_regex(&exact, &long));
    // No decision pattern counts that far: alone, the far choice is no 'selected_over'.
    let (exact, re) = counted(DECISION_PATTERNS[2].1);
    assert!(!exact.is_match(&far));
    assert!(!re.is_match(&far));
    assert!(re.is_match(&long));
    assert!(re.is_match(short));
}

/// A pattern without counted spans is its own regex; one that could match the empty string
/// is not taken (its matches could not be found one after another as `regex` does).
#[test]
fn only_patterns_that_cannot_match_nothing_are_taken() {
    let (_, re) = counted(DECISION_PATTERNS[1].1);
    assert!(re.exact_compiled());
    assert!(re.is_match("I decided to wait"));
    assert!(Counted::new(r"a.{0,200}").is_some());
    assert!(Counted::new(r"(?:a.{0,200})?").is_none());
    assert!(Counted::new(r"(").is_none());
}
