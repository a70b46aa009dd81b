//! All reasoning work. Engines are async, talk to the app only through typed events,
//! and never touch terminal or widget types.

pub mod llm;
pub mod mcp;
pub mod orchestrator;
pub mod thinkgraph;
pub mod transcript;
