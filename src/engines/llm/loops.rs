//! Loop detection on a model's stream: spots text that has started repeating itself (the
//! same block of lines, or the same run of words, again and again) while the deltas arrive.
//!
//! A [`LoopDetector`] reads one stream (the thinking or the answer) a character at a time
//! and keeps only a window of hashes: O(1) work per character plus O(max period) per
//! finished line or word, and bounded memory however long the stream runs. Lines are
//! compared after normalising them (list numbering and bullets stripped, whitespace
//! collapsed, lower case) and lines with too few letters or digits (braces, `end`, blank
//! lines, table rules) are skipped, so lists, tables and code do not look like loops: only
//! their content repeating does.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::StopReason;

/// What `StopReason::Other` holds when a turn was stopped because the model was looping.
pub const LOOP_STOP_REASON: &str = "loop";

/// The stop reason of a turn stopped because the model was looping.
pub fn loop_stop() -> StopReason {
    StopReason::Other(LOOP_STOP_REASON.into())
}

/// Whether a turn ended because the model was looping.
pub fn is_loop_stop(stop: &StopReason) -> bool {
    matches!(stop, StopReason::Other(s) if s == LOOP_STOP_REASON)
}

/// What to do when a model loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopAction {
    /// Do not look for loops.
    Off,
    /// Report the loop and let the model go on.
    Warn,
    /// Report the loop and stop the model call, keeping what arrived.
    Stop,
}

impl LoopAction {
    /// The name used in the config and in JSON events.
    pub fn as_str(self) -> &'static str {
        match self {
            LoopAction::Off => "off",
            LoopAction::Warn => "warn",
            LoopAction::Stop => "stop",
        }
    }
}

/// `[loop]`: when a stream counts as looping and what to do then (glassbox's own: no seed
/// describes loop detection; the numbers were chosen against the embedded SmolLM2's loops
/// and ordinary lists, tables and code).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopParams {
    /// Action with the embedded model, which loops often and then runs to the token cap.
    pub action_local: LoopAction,
    /// Action with the remote providers (Anthropic, OpenAI-compatible, Ollama).
    pub action_remote: LoopAction,
    /// Times a unit must occur in a row to count as a loop.
    pub min_repeats: u32,
    /// Longest cycle looked for, in lines.
    pub max_period_lines: u32,
    /// Longest cycle looked for, in words.
    pub max_period_words: u32,
    /// A repeated unit (one cycle) must hold at least this many characters, so short
    /// refrains, `None, None, None` and laughter do not count.
    pub min_unit_chars: u32,
    /// Lines with fewer letters and digits than this (braces, `end`, blank lines) are
    /// skipped.
    pub min_line_chars: u32,
}

impl Default for LoopParams {
    fn default() -> Self {
        Self {
            action_local: LoopAction::Stop,
            action_remote: LoopAction::Warn,
            min_repeats: 4,
            max_period_lines: 12,
            max_period_words: 120,
            min_unit_chars: 16,
            min_line_chars: 4,
        }
    }
}

impl LoopParams {
    /// The action for the embedded model (`local`) or a remote one.
    pub fn action(&self, local: bool) -> LoopAction {
        if local {
            self.action_local
        } else {
            self.action_remote
        }
    }
}

/// What a loop's cycle is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopUnit {
    Lines,
    Words,
}

impl LoopUnit {
    /// The name used in JSON events and node meta.
    pub fn as_str(self) -> &'static str {
        match self {
            LoopUnit::Lines => "lines",
            LoopUnit::Words => "words",
        }
    }
}

/// A loop found in a stream: a cycle of `period` lines or words, seen `repeats` times in a
/// row at the end of the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopReport {
    pub unit: LoopUnit,
    pub period: usize,
    pub repeats: usize,
}

impl fmt::Display for LoopReport {
    /// `3-line cycle ×5`, `4-word cycle ×7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.unit {
            LoopUnit::Lines => "line",
            LoopUnit::Words => "word",
        };
        write!(f, "{}-{unit} cycle ×{}", self.period, self.repeats)
    }
}

/// Finds a loop in one stream, fed delta by delta. Reports it once; after that it keeps
/// counting the repeats of that cycle (see [`LoopDetector::found`]).
#[derive(Clone, Debug)]
pub struct LoopDetector {
    min_repeats: usize,
    min_unit_chars: u64,
    min_line_chars: usize,
    lines: Cycles,
    words: Cycles,
    line: LineState,
    word: WordState,
    found: Option<LoopReport>,
}

impl LoopDetector {
    pub fn new(params: &LoopParams) -> Self {
        Self {
            min_repeats: (params.min_repeats as usize).max(2),
            min_unit_chars: u64::from(params.min_unit_chars),
            min_line_chars: params.min_line_chars as usize,
            lines: Cycles::new(params.max_period_lines as usize),
            words: Cycles::new(params.max_period_words as usize),
            line: LineState::default(),
            word: WordState::default(),
            found: None,
        }
    }

    /// Reads one delta. Returns the loop the first time one is found, and `None` ever after.
    pub fn push(&mut self, delta: &str) -> Option<LoopReport> {
        let already = self.found.is_some();
        for c in delta.chars() {
            self.push_char(c);
        }
        if already { None } else { self.found }
    }

    /// The loop found so far, its repeats counted up to the text read so far.
    pub fn found(&self) -> Option<LoopReport> {
        self.found
    }

    fn push_char(&mut self, c: char) {
        let (mut line, mut word) = (None, None);
        if c == '\n' {
            // The word ends with the line it is on (a table row's words are left out).
            word = self.word.end(self.line.table);
            line = self.line.end();
        } else {
            self.line.push(c);
            if c.is_whitespace() {
                word = self.word.end(self.line.table);
            } else {
                self.word.push(c);
            }
        }
        // A line is an item when it has enough letters and digits; ties go to lines.
        if let Some((hash, chars, alnum)) = line
            && alnum >= self.min_line_chars
        {
            let hit = self
                .lines
                .push(hash, chars, self.min_repeats, self.min_unit_chars);
            self.note(LoopUnit::Lines, hit);
        }
        if let Some((hash, chars)) = word {
            let hit = self
                .words
                .push(hash, chars, self.min_repeats, self.min_unit_chars);
            self.note(LoopUnit::Words, hit);
        }
    }

    fn note(&mut self, unit: LoopUnit, hit: Option<(usize, usize)>) {
        match &mut self.found {
            None => {
                if let Some((period, repeats)) = hit {
                    self.found = Some(LoopReport {
                        unit,
                        period,
                        repeats,
                    });
                }
            }
            Some(f) if f.unit == unit => {
                let cycles = match unit {
                    LoopUnit::Lines => &self.lines,
                    LoopUnit::Words => &self.words,
                };
                f.repeats = f.repeats.max(cycles.repeats(f.period));
            }
            Some(_) => {}
        }
    }
}

/// The latest items (lines or words) of a stream as hashes, and for each period `p` how
/// long the text has been repeating with that period.
///
/// Only the periods whose item matches the new one do any work: a run that is not extended
/// is over, which `at` records without touching it (a run counts only while `at` names the
/// latest item). The matching periods are found without looking at the others: a table
/// from hash to the latest position of an item with that hash, and for each recent item the
/// position of the one before it with the same hash, chain them. Where the table slot was
/// taken by another item still in the window (a collision), the window is scanned instead.
#[derive(Clone, Debug)]
struct Cycles {
    /// Hashes of the latest items in a ring of `slots` entries written twice (at `i` and
    /// `i + slots`), so that the last `slots` items always lie in one slice: item `n - p` is
    /// at `cur + slots - p`.
    hashes: Vec<u64>,
    /// Per recent item (ring of `slots`): characters up to and including it, and 1 + the
    /// position of the item before it with the same hash (0: none in the window).
    ends: Vec<u64>,
    prev: Vec<u64>,
    slots: usize,
    /// Where the next item goes in the rings.
    cur: usize,
    /// Hash → 1 + position of its latest item (0: empty), indexed by the hash's top bits.
    table: Vec<(u64, u64)>,
    table_bits: u32,
    /// Items read so far.
    count: u64,
    /// `runs[p - 1]`: how many items in a row have equalled the item `p` before them, as of
    /// item `at[p - 1] - 1`.
    runs: Vec<usize>,
    at: Vec<u64>,
    chars: u64,
}

impl Cycles {
    fn new(max_period: usize) -> Self {
        let slots = max_period.max(1);
        // Eight table entries per item in the window keep collisions rare.
        let table_bits = (slots * 8).next_power_of_two().trailing_zeros().max(6);
        Self {
            hashes: vec![0; 2 * slots],
            ends: vec![0; slots],
            prev: vec![0; slots],
            slots,
            cur: 0,
            table: vec![(0, 0); 1 << table_bits],
            table_bits,
            count: 0,
            runs: vec![0; max_period],
            at: vec![0; max_period],
            chars: 0,
        }
    }

    /// Adds one item; returns (period, repeats) of the shortest cycle that has now repeated
    /// `min_repeats` times with a unit of at least `min_unit_chars`.
    ///
    /// A period is only reported when it is primitive: when a shorter period explains as
    /// long a stretch (`ha ha ha …` is a 1-word cycle, not a 6-word one), it is left out,
    /// so a too-short unit cannot sneak in as a multiple of itself.
    fn push(
        &mut self,
        hash: u64,
        chars: u64,
        min_repeats: usize,
        min_unit_chars: u64,
    ) -> Option<(usize, usize)> {
        self.chars += chars;
        let n = self.count;
        let slots = self.slots;
        let cur = self.cur;
        let len = n.min(self.runs.len() as u64) as usize;
        // The earlier items with this hash, nearest first (period p = n - position), are
        // visited as they are found.
        let slot = (hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.table_bits)) as usize;
        let (table_hash, table_pos) = self.table[slot];
        let in_window = |pos: u64| n - pos <= len as u64;
        let mut scan = Scan {
            n,
            chars: self.chars,
            min_repeats,
            min_unit_chars,
            matched_reach: 0,
            hit: None,
            nearest: None,
        };
        if table_pos != 0 && table_hash == hash {
            let mut pos = table_pos - 1;
            while in_window(pos) {
                let p = (n - pos) as usize;
                let at = ring(cur, slots, p);
                scan.visit(p, self.ends[at], &mut self.runs, &mut self.at);
                let before = self.prev[at];
                if before == 0 || before > pos {
                    break;
                }
                pos = before - 1;
            }
        } else if table_pos != 0 && in_window(table_pos - 1) {
            // Another item holds the slot: look at the whole window.
            let window = &self.hashes[cur + slots - len..cur + slots];
            for (i, &h) in window.iter().rev().enumerate() {
                if h == hash {
                    let p = i + 1;
                    let end = self.ends[ring(cur, slots, p)];
                    scan.visit(p, end, &mut self.runs, &mut self.at);
                }
            }
        }
        self.prev[cur] = scan.nearest.map_or(0, |p| n - p as u64 + 1);
        self.table[slot] = (hash, n + 1);
        self.hashes[cur] = hash;
        self.hashes[cur + slots] = hash;
        self.ends[cur] = self.chars;
        self.cur = if cur + 1 == slots { 0 } else { cur + 1 };
        self.count = n + 1;
        scan.hit
    }

    /// Whole cycles of `period` at the end of the items.
    fn repeats(&self, period: usize) -> usize {
        let i = period.wrapping_sub(1);
        match (self.runs.get(i), self.at.get(i)) {
            (Some(run), Some(at)) if *at == self.count => 1 + run / period,
            (Some(_), Some(_)) => 1,
            _ => 0,
        }
    }
}

/// Ring index of the item `back` items before the one at `cur` (1 ..= `slots`).
fn ring(cur: usize, slots: usize, back: usize) -> usize {
    let i = cur + slots - back;
    if i >= slots { i - slots } else { i }
}

/// The periods of one new item of [`Cycles::push`], visited shortest first.
struct Scan {
    n: u64,
    chars: u64,
    min_repeats: usize,
    min_unit_chars: u64,
    /// The longest stretch a shorter period explains: a period whose item differs explains
    /// itself (`p` items), one whose item matches `run + p`.
    matched_reach: usize,
    hit: Option<(usize, usize)>,
    /// The shortest matching period.
    nearest: Option<usize>,
}

impl Scan {
    /// Period `p` matches; `before`: characters up to and including the item `p` back.
    fn visit(&mut self, p: usize, before: u64, runs: &mut [usize], at: &mut [u64]) {
        let i = p - 1;
        let n = self.n;
        let run = if at[i] == n { runs[i] + 1 } else { 1 };
        runs[i] = run;
        at[i] = n + 1;
        self.nearest.get_or_insert(p);
        let reach = run + p;
        if self.hit.is_none()
            && reach > self.matched_reach.max(p - 1)
            && run >= p * (self.min_repeats - 1)
            && self.chars - before >= self.min_unit_chars
        {
            self.hit = Some((p, 1 + run / p));
        }
        self.matched_reach = self.matched_reach.max(reach);
    }
}

/// An FNV-1a style hash fed one character (a whole code point per step): cheap and stable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, c: char) {
        self.0 ^= u64::from(u32::from(c));
        self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// A token this long or longer is never a list marker.
const MARKER_MAX: usize = 8;

/// Whether a whitespace-separated token is list or heading markup rather than content:
/// `-`, `*`, `+`, `•`, `>`, `#`…, `1.`, `12)`, `3:`, `(4)`, `a)`.
fn is_marker(token: &str) -> bool {
    if matches!(
        token,
        "-" | "*" | "+" | "•" | "·" | "‣" | "–" | "—" | ">" | "→"
    ) {
        return true;
    }
    if !token.is_empty() && token.len() <= 6 && token.chars().all(|c| c == '#') {
        return true;
    }
    let inner = token
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(token);
    let body = inner
        .strip_suffix(['.', ')', ':'])
        .filter(|_| inner.len() == token.len())
        .unwrap_or(inner);
    let numbered = !body.is_empty() && body.len() <= 4 && body.chars().all(|c| c.is_ascii_digit());
    let lettered =
        token.len() == 2 && token.ends_with(')') && body.chars().all(|c| c.is_ascii_lowercase());
    (numbered || lettered) && body.len() < token.len()
}

/// The line being read: its leading markup is dropped, the rest normalised into a hash.
#[derive(Clone, Debug, Default)]
struct LineState {
    /// Past the leading markers: the content has started.
    content: bool,
    /// The token at the start of the line while it may still be a marker.
    lead: String,
    /// The line's first non-blank character is `|`: a table row.
    table: bool,
    started: bool,
    /// Whitespace seen since the last content character.
    space: bool,
    hash: Fnv,
    chars: u64,
    alnum: usize,
}

impl LineState {
    fn push(&mut self, c: char) {
        if !self.content {
            if c.is_whitespace() {
                if self.lead.is_empty() {
                    return;
                }
                if is_marker(&self.lead) {
                    self.lead.clear();
                    return;
                }
                self.start_content();
                self.space = true;
                return;
            }
            if !self.started {
                self.started = true;
                self.table = c == '|';
            }
            self.lead.push(c);
            if self.lead.chars().count() > MARKER_MAX {
                self.start_content();
            }
            return;
        }
        if c.is_whitespace() {
            self.space = true;
            return;
        }
        if self.space {
            self.space = false;
            self.feed(' ');
        }
        self.feed(c);
    }

    fn start_content(&mut self) {
        self.content = true;
        let lead = std::mem::take(&mut self.lead);
        for c in lead.chars() {
            self.feed(c);
        }
    }

    fn feed(&mut self, c: char) {
        if c.is_ascii() {
            let l = c.to_ascii_lowercase();
            self.hash.write(l);
            self.chars += 1;
            self.alnum += usize::from(l.is_ascii_alphanumeric());
            return;
        }
        for l in c.to_lowercase() {
            self.hash.write(l);
            self.chars += 1;
            if l.is_alphanumeric() {
                self.alnum += 1;
            }
        }
    }

    /// Ends the line: (hash, characters, letters and digits) of its normalised content.
    fn end(&mut self) -> Option<(u64, u64, usize)> {
        if !self.content && !self.lead.is_empty() && !is_marker(&self.lead) {
            self.start_content();
        }
        let done = std::mem::take(self);
        (done.chars > 0).then_some((done.hash.0, done.chars, done.alnum))
    }
}

/// The word being read, lower-cased with its leading and trailing punctuation trimmed.
#[derive(Clone, Debug, Default)]
struct WordState {
    /// The token as written while it is short enough to be a marker.
    raw: String,
    raw_len: usize,
    /// Hash of the token from its first letter or digit on, and the same up to the last
    /// letter or digit (the trailing punctuation trimmed).
    hash: Fnv,
    trimmed: Fnv,
    chars: u64,
    trimmed_chars: u64,
}

impl WordState {
    fn push(&mut self, c: char) {
        self.raw_len += 1;
        if self.raw_len <= MARKER_MAX {
            self.raw.push(c);
        }
        if c.is_ascii() {
            self.take(c.to_ascii_lowercase());
        } else {
            for l in c.to_lowercase() {
                self.take(l);
            }
        }
    }

    fn take(&mut self, l: char) {
        let alnum = l.is_alphanumeric();
        if self.chars == 0 && !alnum {
            return;
        }
        self.hash.write(l);
        self.chars += 1;
        if alnum {
            self.trimmed = self.hash;
            self.trimmed_chars = self.chars;
        }
    }

    /// Ends the word: (hash, characters with the space after it), unless it has no letters
    /// or digits, is list markup, or sits in a table row.
    fn end(&mut self, table: bool) -> Option<(u64, u64)> {
        let done = std::mem::take(self);
        let marker = done.raw_len <= MARKER_MAX && is_marker(&done.raw);
        (done.trimmed_chars > 0 && !marker && !table)
            .then_some((done.trimmed.0, done.trimmed_chars + 1))
    }
}

#[cfg(test)]
mod tests {
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
            ("readme", include_str!("../../../README.md")),
            (
                "architecture",
                include_str!("../../../docs/ARCHITECTURE.md"),
            ),
            ("config", include_str!("../../../configs/default.toml")),
            ("keymap", include_str!("../../../configs/keymap.toml")),
            ("code file", include_str!("../orchestrator/turn.rs")),
            ("this file", include_str!("loops.rs")),
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
        assert!(d.line.lead.len() <= MARKER_MAX * 4);
        assert!(d.word.raw.len() <= MARKER_MAX * 4);
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
}
