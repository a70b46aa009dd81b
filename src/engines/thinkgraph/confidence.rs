//! Confidence from language (high, medium and low indicators), the node confidence with
//! its depth, density and jitter terms, and the classification of steps.

use regex::Regex;

use super::StepKind;
use super::patterns::{
    HIGH_RE, KIND_RES, LOW_RE, MEDIUM_RE, SIGNAL_SET, SIGNALS, STEP_KIND_INDICATORS, WordScan,
};

/// Lowest confidence of a node, step or decision (seed 000 ThinkGraph, "Calculate
/// confidence scores": range 0.15–0.95).
pub(super) const MIN_CONFIDENCE: f64 = 0.15;
/// Highest confidence of a node, step or decision (seed 000 ThinkGraph: range 0.15–0.95).
pub(super) const MAX_CONFIDENCE: f64 = 0.95;
/// The value a node's confidence never takes (seed 000 ThinkGraph: "never returns exactly
/// 0.5"), and how close to it counts as taking it.
const NEVER: f64 = 0.5;
const NEVER_BAND: f64 = 0.005;
/// Where a score that fell in the band goes instead, below or above by the hash's parity.
const NEVER_BELOW: f64 = 0.49;
const NEVER_ABOVE: f64 = 0.51;

// Seed 000 ThinkGraph aggregates high / medium / low indicators; these weights, the neutral
// scores and the bonuses below are glassbox's reading of it.
/// Weight of a high-confidence indicator ("clearly", "definitely").
const HIGH_WEIGHT: f64 = 0.9;
/// Weight of a medium-confidence indicator ("likely", "seems").
const MEDIUM_WEIGHT: f64 = 0.6;
/// Weight of a low-confidence indicator ("maybe", "not sure").
const LOW_WEIGHT: f64 = 0.3;
/// Language score of a whole text without indicators, before depth, density and jitter.
const NODE_NEUTRAL: f64 = 0.55;
/// Language score of a step without indicators.
pub(super) const STEP_NEUTRAL: f64 = 0.5;
/// Language score around a decision without indicators.
pub(super) const DECISION_NEUTRAL: f64 = 0.6;
/// What a decision that states its choice outright earns.
pub(super) const EXPLICIT_CHOICE_BONUS: f64 = 0.05;
/// Seed 000 ThinkGraph factors in reasoning depth: the most it adds, and the length (chars)
/// at which it is all earned.
const DEPTH_BONUS: f64 = 0.08;
const DEPTH_FULL_CHARS: f64 = 8000.0;
/// Seed 000 ThinkGraph factors in decision density: the most decisions per step add.
const DENSITY_BONUS: f64 = 0.05;
/// Seed 000 ThinkGraph's deterministic jitter "for visual variety": its whole span (±half)
/// and how finely the text hash spreads over it.
const JITTER_SPAN: f64 = 0.06;
const JITTER_STEPS: u64 = 1000;

/// Counts of confidence indicators.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Indicators {
    pub(super) high: usize,
    pub(super) medium: usize,
    pub(super) low: usize,
}

impl Indicators {
    pub(super) fn of(text: &str) -> Self {
        let count = |re: &Option<Regex>| re.as_ref().map_or(0, |re| re.find_iter(text).count());
        Self {
            high: count(&HIGH_RE),
            medium: count(&MEDIUM_RE),
            low: count(&LOW_RE),
        }
    }

    pub(super) fn add(&mut self, other: Indicators) {
        self.high += other.high;
        self.medium += other.medium;
        self.low += other.low;
    }

    /// Weighted mean of the indicators, or `neutral` when there are none.
    pub(super) fn score(self, neutral: f64) -> f64 {
        let n = self.high + self.medium + self.low;
        if n == 0 {
            return neutral;
        }
        (HIGH_WEIGHT * self.high as f64
            + MEDIUM_WEIGHT * self.medium as f64
            + LOW_WEIGHT * self.low as f64)
            / n as f64
    }
}

/// Classifies a step by its indicator phrases (see `STEP_KIND_INDICATORS`); the kind with
/// most hits wins, ties go to the earlier kind, no hits means analysis.
pub fn classify_step(text: &str) -> StepKind {
    let mut best = (StepKind::Analysis, 0);
    for (kind, re) in KIND_RES.iter() {
        let hits = re.find_iter(text).count();
        if hits > best.1 {
            best = (*kind, hits);
        }
    }
    best.0
}

/// [`Indicators::of`] and [`classify_step`] of one step.
#[cfg(test)]
pub(super) fn signals(text: &str) -> (Indicators, StepKind) {
    signals_of(text, &super::patterns::scan_words(text))
}

/// [`signals`] of a step whose words `scan` has read: a regex whose matches the words tell
/// (see [`WordScan`]) is not run; of the others, only those the signal set finds in the text
/// are counted (the same results, for less work on the common step that holds few or none).
pub(super) fn signals_of(text: &str, scan: &WordScan) -> (Indicators, StepKind) {
    // Words that tell every count need no regex at all (nor their compilation, which
    // costs milliseconds on the first step of a turn).
    let counts = if scan.told && scan.unsure == 0 {
        Some(scan.counts)
    } else {
        counted_by_regex(text, scan)
    };
    let Some(counts) = counts else {
        return (Indicators::of(text), classify_step(text));
    };
    let indicators = Indicators {
        high: counts[0],
        medium: counts[1],
        low: counts[2],
    };
    let mut best = (StepKind::Analysis, 0);
    for ((kind, _), &hits) in STEP_KIND_INDICATORS.iter().zip(&counts[3..]) {
        if hits > best.1 {
            best = (*kind, hits);
        }
    }
    (indicators, best.0)
}

/// The signal counts of a step whose words left some untold; `None` when a pattern did
/// not compile (the set would not line up with the regexes; a test checks they do).
fn counted_by_regex(text: &str, scan: &WordScan) -> Option<[usize; SIGNALS]> {
    let (Some(set), Some(high), Some(medium), Some(low)) = (
        SIGNAL_SET
            .as_ref()
            .filter(|set| set.len() == SIGNALS && KIND_RES.len() == STEP_KIND_INDICATORS.len()),
        HIGH_RE.as_ref(),
        MEDIUM_RE.as_ref(),
        LOW_RE.as_ref(),
    ) else {
        return None;
    };
    let regex = |i: usize| match i {
        0 => Some(high),
        1 => Some(medium),
        2 => Some(low),
        _ => KIND_RES.get(i - 3).map(|(_, re)| re),
    };
    let mut counts = [0usize; SIGNALS];
    if scan.told {
        counts = scan.counts;
        let unsure = scan.unsure;
        let count = |i: usize| regex(i).map_or(0, |re| re.find_iter(text).count());
        if unsure.count_ones() == 1 {
            let i = unsure.trailing_zeros() as usize;
            counts[i] = count(i);
        } else {
            let found = set.matches(text);
            for (i, n) in counts.iter_mut().enumerate() {
                if unsure & (1 << i) != 0 {
                    *n = if found.matched(i) { count(i) } else { 0 };
                }
            }
        }
    } else {
        let found = set.matches(text);
        for i in found.iter() {
            counts[i] = regex(i).map_or(0, |re| re.find_iter(text).count());
        }
    }
    Some(counts)
}

/// Running totals behind the node confidence.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Totals {
    pub(super) indicators: Indicators,
    pub(super) steps: usize,
    pub(super) decisions: usize,
}

/// Node confidence: indicator mix, reasoning depth, decision density and a deterministic
/// jitter from the text hash; in [0.15, 0.95] and never exactly 0.5.
pub(super) fn node_confidence(totals: &Totals, chars: usize, hash: u64) -> f64 {
    let base = totals.indicators.score(NODE_NEUTRAL);
    // Longer reasoning earns more, up to the depth bonus.
    let depth = (chars as f64 / DEPTH_FULL_CHARS).min(1.0) * DEPTH_BONUS;
    // So do more decisions per step, up to the density bonus.
    let density = if totals.steps == 0 {
        0.0
    } else {
        (totals.decisions as f64 / totals.steps as f64).min(1.0) * DENSITY_BONUS
    };
    // Visual variety, stable for the same text: a hash-picked point of the span around 0.
    let jitter = ((hash % (JITTER_STEPS + 1)) as f64 / JITTER_STEPS as f64 - 0.5) * JITTER_SPAN;
    let score = (base + depth + density + jitter).clamp(MIN_CONFIDENCE, MAX_CONFIDENCE);
    if (score - NEVER).abs() < NEVER_BAND {
        if hash & 1 == 0 {
            NEVER_ABOVE
        } else {
            NEVER_BELOW
        }
    } else {
        score
    }
}
