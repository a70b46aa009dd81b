//! A labelled data set for measuring memory retrieval: 26 conversations over six months
//! (sessions.rs), filler turns mixed in by a seeded generator, and questions that name the
//! turns answering them (questions.rs). `examples/eval_memory.rs` loads it; see README.md.
//!
//! Everything is deterministic: the same shift gives the same turns, ids, times and texts.

#![allow(dead_code)]

#[path = "questions.rs"]
mod questions;
#[path = "sessions.rs"]
mod sessions;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, TimeZone, Utc};

/// One conversation as written: its day, when it started (UTC) and its turns.
pub struct SessionSpec {
    pub id: &'static str,
    pub date: &'static str,
    pub start: &'static str,
    /// (who, text): who is "u" or "a", optionally followed by "#key".
    pub turns: &'static [(&'static str, &'static str)],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Lexical,
    Paraphrase,
    Date,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Lexical, Kind::Paraphrase, Kind::Date];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Lexical => "lexical",
            Kind::Paraphrase => "paraphrase",
            Kind::Date => "date",
        }
    }
}

pub struct QuestionSpec {
    pub id: &'static str,
    pub kind: Kind,
    pub text: &'static str,
    pub evidence: &'static [&'static str],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaker {
    User,
    Assistant,
}

/// One turn, ready to store.
#[derive(Clone, Debug)]
pub struct Turn {
    /// `s07.t03`: session and place in it (filler turns counted).
    pub id: String,
    pub session: &'static str,
    pub speaker: Speaker,
    pub key: Option<&'static str>,
    pub at: DateTime<Utc>,
    pub text: String,
    /// Made by the generator (never evidence).
    pub filler: bool,
}

#[derive(Clone, Debug)]
pub struct Question {
    pub id: &'static str,
    pub kind: Kind,
    pub text: String,
    /// Ids of the turns that answer it.
    pub evidence: Vec<String>,
}

pub struct Dataset {
    pub turns: Vec<Turn>,
    pub questions: Vec<Question>,
    /// Days every date was moved by (0: as written).
    pub shift_days: i64,
}

/// The days to move the timeline by so that it lies in the year before `now`: 0 while the
/// data as written does (until May 2027), else whole weeks (weekdays stay right) that put
/// the last session twelve days before `now`, as it was when the data was written.
///
/// Why move it at all: a question like "what did we decide on May 14?" means the most recent
/// May 14, so a timeline more than a year old would stop answering date questions.
pub fn natural_shift(now: DateTime<Utc>) -> i64 {
    let (first, last) = span();
    let today = now.date_naive();
    if last <= today && (today - first).num_days() < 365 {
        return 0;
    }
    let target = today - Duration::days(12);
    (target - last).num_days().div_euclid(7) * 7
}

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap_or_else(|e| panic!("bad date {s}: {e}"))
}

fn span() -> (NaiveDate, NaiveDate) {
    let days: Vec<NaiveDate> = sessions::SESSIONS.iter().map(|s| day(s.date)).collect();
    let first = days.iter().min().copied().unwrap_or_default();
    let last = days.iter().max().copied().unwrap_or_default();
    (first, last)
}

/// Writes out `{2026-07-09}` and `{2026-07-09|fmt}` dates, moved by `shift` days. Formats:
/// none "July 9", `ord` "July 9th", `dord` "9th of July", `the` "the 9th", `dm` "9 July",
/// `dmy` "9 July 2026", `mdy` "July 9, 2026", `iso` "2026-07-09", else a chrono format.
pub fn render_dates(text: &str, shift: i64) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..]
            .find('}')
            .map(|i| open + i)
            .unwrap_or_else(|| panic!("unclosed date in {text:?}"));
        let inner = &rest[open + 1..close];
        let (date, fmt) = inner.split_once('|').unwrap_or((inner, ""));
        let d = day(date) + Duration::days(shift);
        out.push_str(&format_day(d, fmt));
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn format_day(d: NaiveDate, fmt: &str) -> String {
    use chrono::Datelike;
    let month = d.format("%B");
    match fmt {
        "" => format!("{month} {}", d.day()),
        "ord" => format!("{month} {}", ordinal(d.day())),
        "dord" => format!("{} of {month}", ordinal(d.day())),
        "the" => format!("the {}", ordinal(d.day())),
        "dm" => format!("{} {month}", d.day()),
        "dmy" => format!("{} {month} {}", d.day(), d.year()),
        "mdy" => format!("{month} {}, {}", d.day(), d.year()),
        "iso" => d.format("%Y-%m-%d").to_string(),
        other => d.format(other).to_string(),
    }
}

/// A small seeded generator (SplitMix64), so the filler is the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Things people bring up in passing; they share words with the real topics.
const THINGS: &[&str] = &[
    "the staging database",
    "the CI runner",
    "the Lisbon trip",
    "the flaky test",
    "the dashboard mockups",
    "the retention policy",
    "the movers",
    "the knee exercises",
    "the API docs",
    "the certificate renewal",
    "the Postgres upgrade",
    "the on-call rota",
    "the budget spreadsheet",
    "the backup bucket",
    "the migration scripts",
    "the wedding plans",
    "the running plan",
    "the sensor firmware",
    "the Halvorsen contract",
    "the passport forms",
    "the build server",
    "the conference slides",
    "the release notes",
    "the export feature",
    "the ingest worker",
    "the query API",
    "the time zone handling",
    "the JetStream config",
];

const PEOPLE: &[&str] = &[
    "Priya", "Tomasz", "Ines", "Dolores", "Marcus", "Hannah", "Sofia",
];

const USER_FILLER: &[&str] = &[
    "Can you remind me to look at {thing} later this week?",
    "{person} pinged me about {thing} again; I'll answer tomorrow.",
    "Not now — let's come back to {thing} after lunch.",
    "I pushed a small change related to {thing}, nothing to review yet.",
    "Is anything still open on {thing}?",
    "Note to self: check {thing} before Friday.",
    "Sorry, got pulled into a meeting about {thing}. Where were we?",
    "{person} asked whether we have a decision on {thing}. Not yet, I said.",
    "I keep forgetting about {thing}.",
    "Let's park {thing} for now.",
];

const ASSISTANT_FILLER: &[&str] = &[
    "Sure, I'll keep {thing} on the list.",
    "Noted — {thing} is still open from last time.",
    "Happy to help with {thing} whenever you're ready.",
    "No problem, ping me when you want to go through {thing}.",
    "I have nothing new on {thing} since we last talked.",
    "Okay. Want a short summary of {thing} next time?",
    "Sounds good.",
    "Got it.",
];

fn fill(rng: &mut Rng, template: &str) -> String {
    template
        .replace("{thing}", rng.pick(THINGS))
        .replace("{person}", rng.pick(PEOPLE))
}

/// Builds the data set with every date moved by `shift` days.
pub fn build(shift: i64) -> Dataset {
    let mut turns = Vec::new();
    let mut by_key: HashMap<&'static str, String> = HashMap::new();
    let mut rng = Rng(0x6c61_726b_7370_7572);
    for s in sessions::SESSIONS {
        // The written turns with filler pairs (a remark and a reply) slipped in between
        // exchanges: two to four pairs per session.
        let mut items: Vec<(Option<&'static str>, Speaker, String, bool)> = Vec::new();
        for &(who, text) in s.turns {
            let (speaker, key) = match who.split_once('#') {
                Some((w, k)) => (w, Some(k)),
                None => (who, None),
            };
            let speaker = match speaker {
                "u" => Speaker::User,
                "a" => Speaker::Assistant,
                other => panic!("{}: unknown speaker {other:?}", s.id),
            };
            items.push((key, speaker, render_dates(text, shift), false));
        }
        let pairs = 2 + rng.below(3);
        for _ in 0..pairs {
            // Only at an even place, so remarks still follow replies.
            let at = 2 * rng.below(items.len() / 2 + 1);
            let user = rng.pick(USER_FILLER);
            let user = fill(&mut rng, user);
            let reply = rng.pick(ASSISTANT_FILLER);
            let reply = fill(&mut rng, reply);
            items.insert(at, (None, Speaker::Assistant, reply, true));
            items.insert(at, (None, Speaker::User, user, true));
        }
        let start = day(s.date).and_time(
            NaiveTime::parse_from_str(s.start, "%H:%M")
                .unwrap_or_else(|e| panic!("{}: bad start {}: {e}", s.id, s.start)),
        ) + Duration::days(shift);
        let mut at = Utc.from_utc_datetime(&start);
        for (i, (key, speaker, text, filler)) in items.into_iter().enumerate() {
            let id = format!("{}.t{:02}", s.id, i + 1);
            if let Some(k) = key
                && by_key.insert(k, id.clone()).is_some()
            {
                panic!("turn key {k} is used twice");
            }
            turns.push(Turn {
                id,
                session: s.id,
                speaker,
                key,
                at,
                filler,
                text,
            });
            at += Duration::seconds(40 + rng.below(200) as i64);
        }
    }
    let questions = questions::QUESTIONS
        .iter()
        .map(|q| Question {
            id: q.id,
            kind: q.kind,
            text: render_dates(q.text, shift),
            evidence: q
                .evidence
                .iter()
                .map(|k| {
                    by_key
                        .get(k)
                        .cloned()
                        .unwrap_or_else(|| panic!("{}: no turn has the key {k}", q.id))
                })
                .collect(),
        })
        .collect();
    Dataset {
        turns,
        questions,
        shift_days: shift,
    }
}

/// Words that carry no topic: they may appear in a paraphrase and its evidence alike.
const STOP_WORDS: &str = "a about above after again against all am an and any are as at be because been before \
being below between both but by can could did do does doing don down during each else few for from further \
get gets got had has have having he her here hers herself him himself his how i if in into is it its itself \
just let me more most my myself no nor not now of off on once only or other our ours ourselves out over own \
re same she should so some such than that the their theirs them themselves then there these they this those \
through to too under until up very was we were what when where which while who whom why will with would you \
your yours yourself yourselves s t ll ve d m also one two new old like way well";

/// A crude stem: lowercase, without a common ending, so "compiles" meets "compiling".
fn stem(word: &str) -> String {
    let w = word.to_lowercase();
    for suffix in [
        "ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "er", "s",
    ] {
        if let Some(base) = w.strip_suffix(suffix)
            && base.chars().count() >= 3
        {
            return base.trim_end_matches('e').to_string();
        }
    }
    w.trim_end_matches('e').to_string()
}

/// The content words of a text, stemmed.
pub fn content_words(text: &str) -> BTreeSet<String> {
    let stop: BTreeSet<&str> = STOP_WORDS.split_whitespace().collect();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !stop.contains(w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

/// What is wrong with the data set (nothing, normally): evidence that is filler or missing,
/// paraphrases sharing a content word with their evidence, date questions naming no date.
pub fn check(d: &Dataset) -> Vec<String> {
    let mut problems = Vec::new();
    let turns: BTreeMap<&str, &Turn> = d.turns.iter().map(|t| (t.id.as_str(), t)).collect();
    let mut ids = BTreeSet::new();
    for q in &d.questions {
        if !ids.insert(q.id) {
            problems.push(format!("{}: question id used twice", q.id));
        }
        if q.evidence.is_empty() {
            problems.push(format!("{}: no evidence", q.id));
        }
        for e in &q.evidence {
            match turns.get(e.as_str()) {
                None => problems.push(format!("{}: evidence {e} is not a turn", q.id)),
                Some(t) if t.filler => problems.push(format!("{}: evidence {e} is filler", q.id)),
                Some(t) => {
                    if q.kind == Kind::Paraphrase {
                        let shared: Vec<String> = content_words(&q.text)
                            .intersection(&content_words(&t.text))
                            .cloned()
                            .collect();
                        if !shared.is_empty() {
                            problems
                                .push(format!("{}: paraphrase shares {shared:?} with {e}", q.id));
                        }
                    }
                }
            }
        }
        if q.kind == Kind::Date && !q.text.chars().any(|c| c.is_ascii_digit()) {
            problems.push(format!("{}: date question names no day", q.id));
        }
    }
    problems
}
