//! Effort routing: a question is classed simple, standard or complex by patterns and its
//! length, and each class has an effort (seed 000 Orchestrator, dynamic effort routing).

use serde::{Deserialize, Serialize};

use crate::engines::llm::Effort;

/// Size limit of a compiled routing pattern (a class's set gets this much per pattern): far
/// above any sensible pattern, low enough that a pathological one from a config file is
/// refused rather than compiled.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// `[routing]`: classing questions simple / standard / complex and the effort of each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingParams {
    pub enabled: bool,
    /// Shorter questions are simple (seed 000 Orchestrator: standard is 50–500 chars).
    pub simple_max_chars: usize,
    /// Longer questions are complex (seed 000 Orchestrator: standard is 50–500 chars).
    pub complex_min_chars: usize,
    /// Case-insensitive regexes of simple questions (seed 000 Orchestrator: greetings,
    /// "what is", "define", "explain briefly").
    pub simple_patterns: Vec<String>,
    /// Case-insensitive regexes of complex questions (seed 000 Orchestrator: "debug",
    /// "architect", "design", "compare and contrast", "research", "step by step",
    /// "refactor", "optimize").
    pub complex_patterns: Vec<String>,
    /// Seed 000 Orchestrator: simple = low.
    pub simple: Effort,
    /// Seed 000 Orchestrator: standard = medium.
    pub standard: Effort,
    /// Seed 000 Orchestrator: complex = high.
    pub complex: Effort,
}

impl Default for RoutingParams {
    fn default() -> Self {
        let patterns = |list: &[&str]| list.iter().map(|p| p.to_string()).collect();
        Self {
            enabled: true,
            simple_max_chars: 50,
            complex_min_chars: 500,
            simple_patterns: patterns(&[
                r"^\s*(hi|hello|hey|thanks|thank you)\b",
                r"^\s*what is\b",
                r"^\s*define\b",
                "explain briefly",
            ]),
            complex_patterns: patterns(&[
                r"\bdebug",
                r"\barchitect",
                r"\bdesign\b",
                "compare and contrast",
                r"\bresearch\b",
                "step by step",
                r"\brefactor",
                r"\boptimi[sz]",
            ]),
            simple: Effort::Low,
            standard: Effort::Medium,
            complex: Effort::High,
        }
    }
}

/// How demanding a question is; decides the effort when the user did not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    Simple,
    Standard,
    Complex,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Simple => "simple",
            Route::Standard => "standard",
            Route::Complex => "complex",
        }
    }

    /// The effort the routing config assigns to this class.
    pub fn effort(self, cfg: &RoutingParams) -> Effort {
        match self {
            Route::Simple => cfg.simple,
            Route::Standard => cfg.standard,
            Route::Complex => cfg.complex,
        }
    }
}

/// Classes questions by the routing patterns and their length (seed: simple / standard /
/// complex). The patterns are compiled once; invalid ones are skipped.
#[derive(Clone, Debug)]
pub struct Router {
    cfg: RoutingParams,
    simple: Patterns,
    complex: Patterns,
}

/// One class's patterns, compiled together: a set matches where any of its patterns does.
/// Compiling each pattern as a regex of its own built a DFA for each, about 2 ms for the
/// default twelve on every `ask`; the set costs a tenth of that.
#[derive(Clone, Debug)]
struct Patterns(regex::RegexSet);

impl Patterns {
    fn new(patterns: &[String]) -> Self {
        let set = |patterns: &[&String]| {
            regex::RegexSetBuilder::new(patterns)
                .case_insensitive(true)
                .size_limit(PATTERN_SIZE_LIMIT.saturating_mul(patterns.len().max(1)))
                .build()
        };
        let all: Vec<&String> = patterns.iter().collect();
        match set(&all) {
            Ok(s) => Self(s),
            // Some pattern is invalid or too large: the set is made of the others.
            Err(_) => {
                let valid: Vec<&String> = all.into_iter().filter(|p| set(&[*p]).is_ok()).collect();
                Self(set(&valid).unwrap_or_else(|_| regex::RegexSet::empty()))
            }
        }
    }

    fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

impl Router {
    pub fn new(cfg: &RoutingParams) -> Self {
        Self {
            cfg: cfg.clone(),
            simple: Patterns::new(&cfg.simple_patterns),
            complex: Patterns::new(&cfg.complex_patterns),
        }
    }

    pub fn classify(&self, question: &str) -> Route {
        let len = question.trim().chars().count();
        if self.complex.is_match(question) {
            Route::Complex
        } else if self.simple.is_match(question) || len < self.cfg.simple_max_chars {
            Route::Simple
        } else if len > self.cfg.complex_min_chars {
            Route::Complex
        } else {
            Route::Standard
        }
    }

    pub fn config(&self) -> &RoutingParams {
        &self.cfg
    }

    /// The effort for `question`: routed when routing is on, else the configured default.
    pub fn effort(&self, question: &str, default: Effort) -> (Route, Effort) {
        let route = self.classify(question);
        (
            route,
            if self.cfg.enabled {
                route.effort(&self.cfg)
            } else {
                default
            },
        )
    }
}

/// Classes one question (compiles the patterns; use [`Router`] for many).
pub fn classify(question: &str, cfg: &RoutingParams) -> Route {
    Router::new(cfg).classify(question)
}
