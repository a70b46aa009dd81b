//! Regexes with counted spans (`.{1,200}?`), compiled without the counts and held to them
//! after each match, so that they match exactly what the counted regex matches.
//!
//! A span of `.` counted to 200 compiles to 200 copies of the automaton of `.` (a dozen UTF-8
//! states each): the choice, rejection and option patterns took 1–3 ms each to compile, about
//! 35 ms for all of them, paid by every process that meets its first decisions (each import
//! a Claude Code hook runs, and the first 250 files of any import). Here each counted span is
//! lifted into a group of its own with the count dropped (`(?P<gb_count0>.+?)`), which
//! compiles about five times faster, and a match is checked against the counts:
//!
//! - Leftmost-first matching prefers, at each position, the first of its ways to match in
//!   the order a backtracking engine tries them. Dropping the counts only adds ways; it does
//!   not reorder the others. So when the uncounted regex's match keeps every span within
//!   its count, it is the counted regex's match too: the counted one has no match starting
//!   earlier (it would be the uncounted one's), and at that start no way preferred over it.
//! - A greedy span with nothing after it in the pattern (a chosen path, a reason: the rest
//!   of the sentence up to 200 characters) is not checked but cut: the counted regex takes
//!   the same way up to it and then as much of the span as the count allows.
//! - Otherwise (a span ran past its count) the counted regex answers: it is compiled the
//!   first time that happens. Real text seldom needs it.
//!
//! The matches are found one after another from where the last one ended; a pattern that
//! could match the empty string is not taken, so that this is how `captures_iter` goes too.

use std::sync::OnceLock;

use regex::{Captures, Regex};
use regex_syntax::hir::{Capture, Dot, Hir, HirKind, Repetition};

/// A counted span lifted out of the pattern: its group in the uncounted regex and its count.
#[derive(Debug)]
struct Count {
    group: usize,
    max: usize,
    /// Greedy with nothing after it in the pattern: cut to the count rather than checked.
    last: bool,
}

/// A regex whose counted spans are checked after the match (see the module doc).
#[derive(Debug)]
pub(super) struct Counted {
    uncounted: Regex,
    counts: Vec<Count>,
    source: String,
    exact: OnceLock<Option<Regex>>,
}

/// One match of a [`Counted`] regex.
pub(super) struct Found<'t> {
    text: &'t str,
    caps: Captures<'t>,
    /// A last span cut to its count: the end it was matched with and the end after the cut.
    cut: Option<(usize, usize)>,
}

impl<'t> Found<'t> {
    fn at_cut(&self, end: usize) -> usize {
        match self.cut {
            Some((matched, cut)) if end == matched => cut,
            _ => end,
        }
    }

    /// Where the match starts.
    pub(super) fn start(&self) -> usize {
        self.caps.get(0).map_or(0, |m| m.start())
    }

    /// Where the match ends.
    pub(super) fn end(&self) -> usize {
        self.at_cut(self.caps.get(0).map_or(0, |m| m.end()))
    }

    /// The text of the named group, if it took part in the match.
    pub(super) fn name(&self, name: &str) -> Option<&'t str> {
        let m = self.caps.name(name)?;
        self.text.get(m.start()..self.at_cut(m.end()))
    }
}

/// Where the names of lifted groups start (no pattern of ours uses it).
const LIFTED: &str = "gb_count";

/// `hir` with each counted span of `.` lifted into a group of its own without its count,
/// noting (group name, count, whether it is last) in `lifted`. `last`: nothing follows
/// `hir` in the pattern.
fn lift(hir: &Hir, last: bool, lifted: &mut Vec<(String, u32, bool)>) -> Hir {
    match hir.kind() {
        HirKind::Repetition(r) => {
            if let Some(max) = r.max
                && max > r.min
                && *r.sub == Hir::dot(Dot::AnyCharExceptLF)
            {
                let name = format!("{LIFTED}{}", lifted.len());
                lifted.push((name.clone(), max, last && r.greedy));
                return Hir::capture(Capture {
                    index: 0,
                    name: Some(name.into()),
                    sub: Box::new(Hir::repetition(Repetition {
                        max: None,
                        sub: r.sub.clone(),
                        ..*r
                    })),
                });
            }
            // What an optional part holds last is last in the pattern; a repeated part is
            // followed by itself.
            let sub = lift(&r.sub, last && r.max == Some(1), lifted);
            Hir::repetition(Repetition {
                sub: Box::new(sub),
                ..*r
            })
        }
        HirKind::Capture(c) => Hir::capture(Capture {
            index: c.index,
            name: c.name.clone(),
            sub: Box::new(lift(&c.sub, last, lifted)),
        }),
        HirKind::Concat(parts) => {
            let end = parts.len().saturating_sub(1);
            Hir::concat(
                parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| lift(p, last && i == end, lifted))
                    .collect(),
            )
        }
        HirKind::Alternation(branches) => {
            Hir::alternation(branches.iter().map(|b| lift(b, last, lifted)).collect())
        }
        _ => hir.clone(),
    }
}

impl Counted {
    /// Compiles `source` (a regex in `regex`'s syntax); `None` if it does not compile or
    /// could match the empty string.
    pub(super) fn new(source: &str) -> Option<Self> {
        let hir = regex_syntax::parse(source).ok()?;
        if hir.properties().minimum_len().unwrap_or(0) == 0 {
            return None;
        }
        let mut lifted = Vec::new();
        let uncounted = lift(&hir, true, &mut lifted);
        if lifted.is_empty() {
            let exact = Regex::new(source).ok()?;
            return Some(Self {
                uncounted: exact.clone(),
                counts: Vec::new(),
                source: source.to_string(),
                exact: OnceLock::from(Some(exact)),
            });
        }
        let regex = Regex::new(&uncounted.to_string()).ok()?;
        let counts = lifted
            .into_iter()
            .map(|(name, max, last)| {
                let group = regex
                    .capture_names()
                    .position(|n| n == Some(name.as_str()))?;
                Some(Count {
                    group,
                    max: max as usize,
                    last,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            uncounted: regex,
            counts,
            source: source.to_string(),
            exact: OnceLock::new(),
        })
    }

    /// The counted regex, compiled the first time a span runs past its count.
    fn exact(&self) -> Option<&Regex> {
        self.exact
            .get_or_init(|| {
                tracing::debug!(pattern = %self.source, "a span ran past its count: the counted regex is compiled");
                Regex::new(&self.source).ok()
            })
            .as_ref()
    }

    /// Whether the counted regex was compiled.
    #[cfg(test)]
    pub(super) fn exact_compiled(&self) -> bool {
        self.exact.get().is_some()
    }

    /// The first match starting at `at` or later (the text before `at` is still seen by
    /// `\b` and `^`).
    pub(super) fn captures_at<'t>(&self, text: &'t str, at: usize) -> Option<Found<'t>> {
        let caps = self.uncounted.captures_at(text, at)?;
        let mut cut = None;
        for c in &self.counts {
            let Some(m) = caps.get(c.group) else { continue };
            // A span of no more bytes than its count has no more characters.
            if m.len() <= c.max {
                continue;
            }
            let Some((over, _)) = m.as_str().char_indices().nth(c.max) else {
                continue;
            };
            if !c.last {
                let caps = self.exact()?.captures_at(text, at)?;
                return Some(Found {
                    text,
                    caps,
                    cut: None,
                });
            }
            cut = Some((m.end(), m.start() + over));
        }
        Some(Found { text, caps, cut })
    }

    /// The first match.
    pub(super) fn captures<'t>(&self, text: &'t str) -> Option<Found<'t>> {
        self.captures_at(text, 0)
    }

    /// Whether the regex matches `text`.
    pub(super) fn is_match(&self, text: &str) -> bool {
        if !self.uncounted.is_match(text) {
            return false;
        }
        // Cutting a last span never undoes a match; a checked span may.
        self.counts.iter().all(|c| c.last) || self.captures(text).is_some()
    }

    /// The matches one after another, each from where the last one ended.
    pub(super) fn captures_iter<'r, 't>(
        &'r self,
        text: &'t str,
    ) -> impl Iterator<Item = Found<'t>> + use<'r, 't> {
        let mut at = Some(0);
        std::iter::from_fn(move || {
            let found = self.captures_at(text, at?)?;
            // Never empty (see `new`), so each search starts past the last.
            at = Some(found.end()).filter(|&end| end > found.start());
            Some(found)
        })
    }
}
