//! How the engines' and the config's enums read on the command line: each value under the
//! name it has in config files and JSON, with its aliases and the one-line help `--help`
//! lists. The enums themselves know nothing of clap.

use clap::ValueEnum;
use clap::builder::PossibleValue;

use crate::config::ProviderKind;
use crate::engines::fork::{ForkStyle, Verdict};
use crate::engines::got::Strategy;
use crate::engines::llm::Effort;
use crate::engines::metacog::FocusArea;

impl ValueEnum for ProviderKind {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            ProviderKind::Auto => {
                "Anthropic if an Anthropic key is configured, else OpenAI if an OpenAI key is, else local"
            }
            ProviderKind::Anthropic => "Anthropic Messages API",
            ProviderKind::OpenAi => "Any OpenAI-compatible chat completions endpoint",
            ProviderKind::Ollama => "Ollama's native `/api/chat`",
            ProviderKind::Local => "The embedded GGUF model",
        };
        Some(PossibleValue::new(self.as_str()).help(help))
    }
}

impl ValueEnum for Effort {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.as_str()))
    }
}

impl ValueEnum for Strategy {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let value = PossibleValue::new(self.as_str());
        Some(match self {
            Strategy::Bfs => value.help("Level by level, keeping the top k of each level"),
            Strategy::Dfs => {
                value.help("Deepest first, best child first, backtracking when a branch dies")
            }
            Strategy::BestFirst => value
                .help("Always the highest-priority open thought")
                .alias("best-first"),
        })
    }
}

impl ValueEnum for ForkStyle {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.as_str()))
    }
}

impl ValueEnum for Verdict {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.as_str()))
    }
}

impl ValueEnum for FocusArea {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.as_str()))
    }
}

impl ValueEnum for crate::engines::memory::ScopeKind {
    fn value_variants<'a>() -> &'a [Self] {
        use crate::engines::memory::ScopeKind;
        &[ScopeKind::Global, ScopeKind::Project, ScopeKind::Session]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        use crate::engines::memory::ScopeKind;
        Some(match self {
            ScopeKind::Global => {
                PossibleValue::new("global").help("Everyone's: every project sees it")
            }
            ScopeKind::Project => PossibleValue::new("project")
                .help("The git root of the working directory (else the directory)"),
            ScopeKind::Session => {
                PossibleValue::new("session").help("One session (give --session)")
            }
        })
    }
}

impl ValueEnum for crate::engines::memory::SearchMode {
    fn value_variants<'a>() -> &'a [Self] {
        use crate::engines::memory::SearchMode;
        &[
            SearchMode::Associative,
            SearchMode::Hybrid,
            SearchMode::Keyword,
            SearchMode::Vector,
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        use crate::engines::memory::SearchMode;
        Some(match self {
            SearchMode::Hybrid => PossibleValue::new("hybrid")
                .help("Keywords, embedding similarity, importance, recency and dates"),
            SearchMode::Keyword => PossibleValue::new("keyword").help("BM25 over the words only"),
            SearchMode::Vector => PossibleValue::new("vector").help("Embedding similarity only"),
            SearchMode::Associative => PossibleValue::new("associative").help(
                "Seven dimensions: text, concepts, vector, graph, reinforcement, validity, recency",
            ),
        })
    }
}

impl ValueEnum for crate::store::CoreSection {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            crate::store::CoreSection::Human,
            crate::store::CoreSection::Agent,
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            crate::store::CoreSection::Human => {
                PossibleValue::new("human").help("Facts about the person")
            }
            crate::store::CoreSection::Agent => {
                PossibleValue::new("agent").help("Facts about the assistant itself")
            }
        })
    }
}

impl ValueEnum for crate::engines::pipeline::DefaultMode {
    fn value_variants<'a>() -> &'a [Self] {
        use crate::engines::pipeline::DefaultMode as M;
        &[M::Plain, M::Auto, M::Instant, M::Deep, M::UltraDeep]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        use crate::engines::pipeline::DefaultMode as M;
        Some(match self {
            M::Plain => PossibleValue::new("plain").help("One think turn (no pipeline)"),
            M::Auto => PossibleValue::new("auto").help("The cortex classifies and picks the mode"),
            M::Instant => PossibleValue::new("instant").help("One pass with thinking"),
            M::Deep => PossibleValue::new("deep").help(
                "Decompose, solve, critique, refine, gauge confidence; escalates when unsure",
            ),
            M::UltraDeep => PossibleValue::new("ultra-deep")
                .alias("ultra_deep")
                .help("Three solvers at once, then skeptic, verifier, synthesis, meta-critic"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value parses from its command-line name, which is its config/JSON name.
    fn names_agree<T>(as_str: impl Fn(&T) -> &'static str)
    where
        T: ValueEnum + serde::Serialize + PartialEq + std::fmt::Debug,
    {
        assert!(!T::value_variants().is_empty());
        for value in T::value_variants() {
            let Some(possible) = value.to_possible_value() else {
                panic!("{value:?} has no command-line name");
            };
            let name = possible.get_name();
            assert_eq!(name, as_str(value));
            assert_eq!(
                serde_json::to_value(value).ok(),
                Some(serde_json::Value::String(name.to_string()))
            );
            assert_eq!(T::from_str(name, false).as_ref(), Ok(value));
        }
    }

    #[test]
    fn command_line_names_are_the_config_and_json_names() {
        names_agree::<ProviderKind>(|k| k.as_str());
        names_agree::<Effort>(|e| e.as_str());
        names_agree::<Strategy>(|s| s.as_str());
        names_agree::<ForkStyle>(|s| s.as_str());
        names_agree::<Verdict>(|v| v.as_str());
        names_agree::<FocusArea>(|f| f.as_str());
        assert_eq!(ProviderKind::OpenAi.as_str(), "openai");
    }

    #[test]
    fn best_first_also_reads_with_a_dash() {
        assert_eq!(
            Strategy::from_str("best-first", false),
            Ok(Strategy::BestFirst)
        );
        assert!(Strategy::from_str("best first", false).is_err());
    }
}
