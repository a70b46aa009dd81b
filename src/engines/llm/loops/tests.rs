use super::cycles::*;
use super::*;
use proptest::prelude::*;

fn detect(text: &str) -> Option<LoopReport> {
    let mut d = LoopDetector::new(&LoopParams::default());
    d.push(text);
    d.found()
}

/// Feeds `text` cut at the given character offsets; every report must come once.
fn detect_chunked(text: &str, cuts: &[usize]) -> Option<LoopReport> {
    let chars: Vec<char> = text.chars().collect();
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    cuts.sort_unstable();
    let mut d = LoopDetector::new(&LoopParams::default());
    let mut at = 0;
    let mut reports = 0;
    for cut in cuts.into_iter().chain([chars.len()]) {
        let piece: String = chars[at..cut.max(at)].iter().collect();
        at = cut.max(at);
        reports += usize::from(d.push(&piece).is_some());
    }
    assert!(reports <= 1, "reported {reports} times");
    d.found()
}

fn tea(cycles: usize) -> String {
    let block = [
        "Identify the question: what does the user want to know?",
        "Identify the answer: what would a good answer contain?",
        "Create a step-by-step process to get from one to the other.",
    ];
    let mut s = String::from("Here is how to make tea, step by step:\n\n");
    for i in 0..cycles * 3 {
        s.push_str(&format!("{}. {}\n", i + 1, block[i % 3]));
    }
    s
}

fn spiral(times: usize) -> String {
    let mut s = String::from("The type you want is ");
    for _ in 0..times {
        s.push_str("std::rust::RustType that is a ");
    }
    s
}

fn block(times: usize) -> String {
    let mut s = String::from("Let me think about this.\n\n");
    for _ in 0..times {
        s.push_str(
            "The water must be hot.\nThe tea must steep.\nThen we pour it into the cup.\n\n",
        );
    }
    s
}

const NUMBERED: &str = "To make tea:\n\n1. Boil water in a kettle.\n2. Warm the pot with a splash of hot water.\n3. Add one teaspoon of tea per cup.\n4. Pour the boiling water over the tea.\n5. Let it steep for three to five minutes.\n6. Stir once.\n7. Strain into cups.\n8. Add milk if you like.\n9. Add sugar if you like.\n10. Add lemon if you like.\n11. Serve hot.\n12. Enjoy.\n";

const SIMILAR: &str = "1. Add 1 cup of water to the pot.\n2. Add 2 cups of water to the pot.\n3. Add 3 cups of water to the pot.\n4. Add 4 cups of water to the pot.\n5. Add 5 cups of water to the pot.\n6. Add 6 cups of water to the pot.\n- Check step 1 again.\n- Check step 2 again.\n- Check step 3 again.\n- Check step 4 again.\n- Check step 5 again.\n";

const BULLETS: &str = "## Options\n\n- **Black tea**: strong, good with milk.\n- **Green tea**: lighter, no milk.\n- **Oolong**: between the two.\n- **White tea**: the most delicate.\n- **Herbal**: not tea at all, strictly.\n  - *Mint*: fresh leaves work best.\n  - *Chamomile*: dried flowers.\n  - *Rooibos*: a red bush from South Africa.\n";

const CODE: &str = "fn main() {\n    for i in 0..10 {\n        if i % 2 == 0 {\n            match i {\n                0 => {\n                    println!(\"zero\");\n                }\n                _ => {\n                    println!(\"{i}\");\n                }\n            }\n        }\n    }\n}\n\n(defun f (x)\n  (if (> x 0)\n      (g (h (i x)))\n      (k (l (m x)))))\n\nclass A\n  def b\n    if c\n      d\n    end\n  end\nend\n\nconst v = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];\nconst w = [None, None, None, None, None, None, None];\n}\n}\n}\n}\n)\n)\n)\n)\n\n\n\n\nend\nend\nend\nend\nend\n";

const TABLE: &str = "| Feature | Basic | Pro | Team | Enterprise |\n|---|---|---|---|---|\n| Export | Yes | Yes | Yes | Yes |\n| Import | Yes | Yes | Yes | Yes |\n| Sync | Not available | Not available | Not available | Yes |\n| Audit | Not available | Not available | Not available | Not available |\n| Support | Not available | Not available | Not available | Not available |\n| SSO | Not available | Not available | Not available | Not available |\n|---|---|---|---|---|\n";

const POEM: &str = "The kettle sings upon the stove,\nthe morning light is thin.\nOh pour the tea, my love, my love,\nand let the day begin.\nOh pour the tea, my love, my love,\nand let the day begin.\n\nThe cups are warm, the leaves unfold,\nthe steam is curling high.\nOh pour the tea, my love, my love,\nbefore the day goes by.\n";

const PROSE: &str = "Tea is made by steeping cured leaves in hot water. Green tea wants cooler water than black tea, and it turns bitter when it steeps too long. Black tea is forgiving: boiling water and four minutes work for most of it. Some people add milk, some lemon, and some neither; the tea does not mind. Ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha. Very, very, very, very, very good. No, no, no, no, no.";

#[test]
fn ordinary_texts_never_fire() {
    for (name, text) in [
        ("numbered", NUMBERED),
        ("similar", SIMILAR),
        ("bullets", BULLETS),
        ("code", CODE),
        ("table", TABLE),
        ("poem", POEM),
        ("prose", PROSE),
        ("readme", include_str!("../../../../README.md")),
        (
            "architecture",
            include_str!("../../../../docs/ARCHITECTURE.md"),
        ),
        ("config", include_str!("../../../../configs/default.toml")),
        ("keymap", include_str!("../../../../configs/keymap.toml")),
        ("code file", include_str!("../../orchestrator/turn.rs")),
        ("this file", include_str!("cycles.rs")),
    ] {
        assert_eq!(detect(text), None, "{name} fired");
    }
}

#[test]
fn a_numbered_block_repeating_fires_as_a_line_cycle() {
    assert_eq!(detect(&tea(3)), None, "three cycles are not yet a loop");
    assert_eq!(
        detect(&tea(4)),
        Some(LoopReport {
            unit: LoopUnit::Lines,
            period: 3,
            repeats: 4
        })
    );
}

#[test]
fn a_phrase_repeating_in_one_line_fires_as_a_word_cycle() {
    let r = detect(&spiral(30)).unwrap();
    assert_eq!((r.unit, r.period), (LoopUnit::Words, 4));
    assert_eq!(r.repeats, 30, "repeats are counted on after the report");
    let mut d = LoopDetector::new(&LoopParams::default());
    let first = d.push(&spiral(4)).unwrap();
    assert_eq!(first.repeats, 4);
    assert_eq!(
        d.push("std::rust::RustType that is a "),
        None,
        "reported once"
    );
    assert_eq!(d.found().unwrap().repeats, 5);
}

#[test]
fn a_block_of_lines_repeating_fires() {
    let r = detect(&block(6)).unwrap();
    assert_eq!((r.unit, r.period, r.repeats), (LoopUnit::Lines, 3, 6));
}

#[test]
fn an_inline_numbered_cycle_fires_as_words() {
    let mut s = String::new();
    for i in 0..12 {
        let step = [
            "Identify the question",
            "Identify the answer",
            "Create a step-by-step process",
        ][i % 3];
        s.push_str(&format!("{}. {step} ", i + 1));
    }
    let r = detect(&s).unwrap();
    assert_eq!((r.unit, r.period, r.repeats), (LoopUnit::Words, 10, 4));
}

#[test]
fn a_short_unit_needs_enough_characters() {
    assert_eq!(detect(&"I think. ".repeat(50)), None);
    assert_eq!(detect(&"Wait.\n".repeat(50)), None);
    assert!(detect(&"Wait, let me check that again.\n".repeat(4)).is_some());
}

#[test]
fn markers_are_recognised() {
    for m in ["-", "*", "1.", "12)", "3:", "(4)", "a)", "###", ">"] {
        assert!(is_marker(m), "{m}");
    }
    for m in [
        "1", "a", "a.", "12345.", "1.5", "--", "(4", "Step", "#######",
    ] {
        assert!(!is_marker(m), "{m}");
    }
}

#[test]
fn memory_stays_bounded_on_a_long_line() {
    let mut d = LoopDetector::new(&LoopParams::default());
    for _ in 0..10_000 {
        d.push("abcdefghij");
    }
    assert!(d.token.raw.len() <= MARKER_BYTES);
    assert_eq!(d.found(), None);
}

proptest! {
    #[test]
    fn loops_fire_however_the_stream_is_cut(
        cuts in proptest::collection::vec(0usize..5000, 0..40),
        which in 0usize..3,
    ) {
        let text = [tea(5), spiral(8), block(5)][which].clone();
        let whole = detect(&text);
        prop_assert!(whole.is_some());
        prop_assert_eq!(detect_chunked(&text, &cuts), whole);
    }

    #[test]
    fn ordinary_texts_stay_quiet_however_cut(
        cuts in proptest::collection::vec(0usize..5000, 0..40),
        which in 0usize..6,
    ) {
        let text = [NUMBERED, SIMILAR, BULLETS, CODE, TABLE, POEM][which];
        prop_assert_eq!(detect_chunked(text, &cuts), None);
    }

    #[test]
    fn cycles_find_what_a_scan_of_every_period_finds(
        items in proptest::collection::vec((0usize..6, 1u64..30), 0..400),
        max_period in 1usize..20,
        min_repeats in 2usize..5,
        min_unit in 0u64..40,
    ) {
        // Six items, four of them sharing a table slot, so the collision path runs too.
        let hashes = colliding_hashes(max_period);
        let mut cycles = Cycles::new(max_period);
        let mut naive = Naive::new(max_period);
        for (k, chars) in items {
            let h = hashes[k];
            prop_assert_eq!(
                cycles.push(h, chars, min_repeats, min_unit),
                naive.push(h, chars, min_repeats, min_unit)
            );
            for period in 1..=max_period {
                prop_assert_eq!(cycles.repeats(period), naive.repeats(period));
            }
        }
    }
}

/// Six hashes: four with one table slot between them, two others.
fn colliding_hashes(max_period: usize) -> [u64; 6] {
    let probe = Cycles::new(max_period);
    let slot = |h: u64| h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - probe.table_bits);
    let mut same = Vec::new();
    let mut h = 1u64;
    while same.len() < 4 {
        if slot(h) == slot(1) {
            same.push(h);
        }
        h += 1;
    }
    [
        same[0],
        same[1],
        same[2],
        same[3],
        0xdead_beef,
        0x1234_5678_9abc,
    ]
}

/// The cycle finder as first written: every period looked at for every item.
struct Naive {
    recent: Vec<(u64, u64)>,
    count: u64,
    runs: Vec<usize>,
    at: Vec<u64>,
    chars: u64,
}

impl Naive {
    fn new(max_period: usize) -> Self {
        Self {
            recent: vec![(0, 0); max_period.max(1)],
            count: 0,
            runs: vec![0; max_period],
            at: vec![0; max_period],
            chars: 0,
        }
    }

    fn push(
        &mut self,
        hash: u64,
        chars: u64,
        min_repeats: usize,
        min_unit: u64,
    ) -> Option<(usize, usize)> {
        self.chars += chars;
        let n = self.count;
        let slots = self.recent.len() as u64;
        let len = n.min(self.runs.len() as u64) as usize;
        let mut matched_reach = 0;
        let mut hit = None;
        for p in 1..=len {
            let (h, before) = self.recent[((n - p as u64) % slots) as usize];
            if h != hash {
                continue;
            }
            let i = p - 1;
            let run = if self.at[i] == n { self.runs[i] + 1 } else { 1 };
            self.runs[i] = run;
            self.at[i] = n + 1;
            let reach = run + p;
            if hit.is_none()
                && reach > matched_reach.max(p - 1)
                && run >= p * (min_repeats - 1)
                && self.chars - before >= min_unit
            {
                hit = Some((p, 1 + run / p));
            }
            matched_reach = matched_reach.max(reach);
        }
        self.recent[(n % slots) as usize] = (hash, self.chars);
        self.count = n + 1;
        hit
    }

    fn repeats(&self, period: usize) -> usize {
        let i = period - 1;
        if self.at[i] == self.count {
            1 + self.runs[i] / period
        } else {
            1
        }
    }
}

#[test]
fn a_long_sentence_repeating_fires_as_a_long_word_cycle() {
    let sentence = "First we boil the water, then we warm the pot, and then we add \
                    the leaves and wait for them. ";
    let r = detect(&format!("Let me see. {}", sentence.repeat(4))).unwrap();
    assert_eq!((r.unit, r.period, r.repeats), (LoopUnit::Words, 20, 4));
    let numbered: String = (0..2000)
        .map(|i| format!("step {i} weighs the option against the budget. "))
        .collect();
    assert_eq!(detect(&numbered), None);
}

/// Tokens for random texts: words, markers, table cells, punctuation, and letters whose
/// lower case is longer than they are or differs inside a word.
const TOKENS: &[&str] = &[
    "the",
    "The",
    "tea",
    "water",
    "hot.",
    "Wait,",
    "let",
    "me",
    "check",
    "1.",
    "12)",
    "(4)",
    "a)",
    "-",
    "*",
    "•",
    "—",
    "##",
    ">",
    "|",
    "|---|",
    "é",
    "École",
    "ß",
    "STRASSE",
    "İstanbul",
    "🚀",
    "x🚀y",
    "(hot),",
    "...",
    "42",
    "Σίσυφος",
    "ΣΑΣ",
    "ﬁne",
    "abcdefghij",
    "Configuration-Manager,",
    "CONFIGURATION-manager",
    "(configuration-MANAGER).",
    "#######",
    "######",
    "(1234)",
    "(12345)",
    "1234.",
    "→",
    "\u{1}",
];
const GAPS: &[&str] = &[
    " ", " ", " ", "\n", "\n\n", "  ", "\t", "\r\n", " \n ", "\u{b}", "\u{c}", "\u{85}", "\u{a0}",
    "\u{2028}", "\u{3000}",
];

/// Texts made of a few units (runs of tokens and gaps), each written out some times in
/// a row, so that loops of lines and of words, long and short, come up often.
fn texts() -> impl Strategy<Value = String> {
    let unit = proptest::collection::vec((0..TOKENS.len(), 0..GAPS.len()), 1..14);
    let plan = proptest::collection::vec((0usize..4, 1usize..7), 0..24);
    (proptest::collection::vec(unit, 1..4), plan).prop_map(|(units, plan)| {
        let mut text = String::new();
        for (u, times) in plan {
            for _ in 0..times {
                for &(t, g) in &units[u % units.len()] {
                    text.push_str(TOKENS[t]);
                    text.push_str(GAPS[g]);
                }
            }
        }
        text
    })
}

fn params() -> impl Strategy<Value = LoopParams> {
    (0u32..6, 0u32..14, 0u32..30, 0u32..40, 0u32..7).prop_map(
        |(min_repeats, max_period_lines, max_period_words, min_unit_chars, min_line_chars)| {
            LoopParams {
                min_repeats,
                max_period_lines,
                max_period_words,
                min_unit_chars,
                min_line_chars,
                ..LoopParams::default()
            }
        },
    )
}

/// The detector as a plain reading of its rules: the text cut into lines and words as
/// strings (a word at every whitespace, a line at every line feed, the line first), each
/// item numbered by its normalised text and handed to [`Naive`]. Returns, for each item,
/// the byte offset of the character that ended it and the loop found as of that item.
fn plain(text: &str, params: &LoopParams) -> Vec<(usize, Option<LoopReport>)> {
    let lower = |s: &str| -> String { s.chars().flat_map(char::to_lowercase).collect() };
    let min_repeats = (params.min_repeats as usize).max(2);
    let min_unit = u64::from(params.min_unit_chars);
    let mut ids = std::collections::HashMap::new();
    let mut id = |s: String| {
        let next = ids.len() as u64;
        *ids.entry(s).or_insert(next)
    };
    let mut lines = Naive::new(params.max_period_lines as usize);
    let mut words = Naive::new(params.max_period_words as usize);
    let mut found: Option<LoopReport> = None;
    let note = |found: &mut Option<LoopReport>,
                naive: &Naive,
                unit: LoopUnit,
                hit: Option<(usize, usize)>| match found {
        None => {
            *found = hit.map(|(period, repeats)| LoopReport {
                unit,
                period,
                repeats,
            })
        }
        Some(f) if f.unit == unit => f.repeats = f.repeats.max(naive.repeats(f.period)),
        Some(_) => {}
    };
    let mut events = Vec::new();
    let (mut line_start, mut token_start) = (0, 0);
    for (at, c) in text.char_indices() {
        if !c.is_whitespace() {
            continue;
        }
        let line = &text[line_start..at];
        let table = line.trim_start().starts_with('|');
        let token = &text[token_start..at];
        token_start = at + c.len_utf8();
        let mut word = None;
        if !token.is_empty() && !is_marker(token) && !table {
            let l = lower(token);
            let trimmed = l.trim_matches(|c: char| !c.is_alphanumeric());
            if !trimmed.is_empty() {
                word = Some((trimmed.to_string(), trimmed.chars().count() as u64 + 1));
            }
        }
        if c == '\n' {
            line_start = at + 1;
            let content: Vec<&str> = line
                .split_whitespace()
                .skip_while(|t| is_marker(t))
                .collect();
            let content = lower(&content.join(" "));
            let alnum = content.chars().filter(|c| c.is_alphanumeric()).count();
            if !content.is_empty() && alnum >= params.min_line_chars as usize {
                let chars = content.chars().count() as u64;
                let hit = lines.push(id(format!("line {content}")), chars, min_repeats, min_unit);
                note(&mut found, &lines, LoopUnit::Lines, hit);
            }
        }
        if let Some((word, chars)) = word {
            let hit = words.push(id(format!("word {word}")), chars, min_repeats, min_unit);
            note(&mut found, &words, LoopUnit::Words, hit);
        }
        events.push((at, found));
    }
    events
}

/// Six items, the first with hash 0, for sequences fed to [`Cycles`] directly.
const ITEMS: [u64; 6] = [
    0,
    0x1111,
    0x2222_0000_0000,
    0x3333,
    0xdead_beef,
    0x0123_4567_89ab,
];

/// Sequences of items that repeat with periods short and long, each copy of a unit
/// possibly with one item changed.
fn periodic() -> impl Strategy<Value = Vec<(usize, u64)>> {
    let unit = proptest::collection::vec(0usize..5, 1..24);
    let plan = proptest::collection::vec((0usize..4, 1usize..7, 0usize..40), 0..24);
    (proptest::collection::vec(unit, 1..4), plan).prop_map(|(units, plan)| {
        let mut items = Vec::new();
        for (u, times, change) in plan {
            let unit = &units[u % units.len()];
            for _ in 0..times {
                for (i, &k) in unit.iter().enumerate() {
                    let k = if i == change { 5 } else { k };
                    items.push((k, 1 + (k as u64 * 7 + i as u64) % 11));
                }
            }
        }
        items
    })
}

proptest! {
    #[test]
    fn the_detector_finds_what_a_plain_reading_finds_however_cut(
        text in texts(),
        params in params(),
        cuts in proptest::collection::vec(0usize..4000, 0..30),
    ) {
        let events = plain(&text, &params);
        let mut bounds: Vec<usize> = cuts
            .iter()
            .map(|c| c % (text.len() + 1))
            .filter(|&c| text.is_char_boundary(c))
            .chain([text.len()])
            .collect();
        bounds.sort_unstable();
        let mut d = LoopDetector::new(&params);
        let mut at = 0;
        for end in bounds {
            let before = d.found();
            let reported = d.push(&text[at..end]);
            at = end;
            let expected = events
                .iter()
                .take_while(|(offset, _)| *offset < end)
                .last()
                .and_then(|(_, found)| *found);
            prop_assert_eq!(d.found(), expected);
            prop_assert_eq!(reported, expected.filter(|_| before.is_none()));
        }
    }

    #[test]
    fn cycles_of_any_gram_and_table_find_what_a_scan_of_every_period_finds(
        items in periodic(),
        max_period in 0usize..30,
        gram in 1usize..11,
        table_bits in 1u32..5,
        base in 0usize..3,
        min_repeats in 2usize..5,
        min_unit in 0u64..40,
    ) {
        // Tiny tables put most grams in one slot, weak gram hashes make equal hashes of
        // different grams, gram 1 chains every period.
        let base = [0, 1, GRAM_BASE][base];
        let mut cycles = Cycles::with_gram(max_period, gram, table_bits, base);
        let mut usual = Cycles::new(max_period);
        let mut naive = Naive::new(max_period);
        for (k, chars) in items {
            let h = ITEMS[k];
            let expected = naive.push(h, chars, min_repeats, min_unit);
            prop_assert_eq!(cycles.push(h, chars, min_repeats, min_unit), expected);
            prop_assert_eq!(usual.push(h, chars, min_repeats, min_unit), expected);
            for period in 1..=max_period {
                prop_assert_eq!(cycles.repeats(period), naive.repeats(period));
                prop_assert_eq!(usual.repeats(period), naive.repeats(period));
            }
        }
    }

    #[test]
    fn markers_are_short_and_end_in_markup(token in "[-*+>#().:ab0-9•·‣–—→é]{1,9}") {
        // What `Head::is_marker` relies on to look at few tokens.
        if is_marker(&token) {
            prop_assert!(token.len() <= MARKER_BYTES, "{}", token);
            prop_assert!(
                matches!(
                    token.as_bytes().last(),
                    Some(b'-' | b'*' | b'+' | b'>' | b'#' | b'.' | b')' | b':' | 0x80..)
                ),
                "{}",
                token
            );
        }
    }
}
