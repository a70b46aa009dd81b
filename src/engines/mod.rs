//! All reasoning work. Engines are async, talk to the app only through typed events,
//! and never touch terminal or widget types.

pub mod diff;
pub mod fork;
pub mod got;
pub mod json_extract;
pub mod knowledge;
pub mod llm;
pub mod mcp;
pub mod memory;
pub mod metacog;
pub mod orchestrator;
pub mod pipeline;
pub mod prompts;
pub mod replay;
pub mod research;
pub mod streamed;
pub mod structured;
pub mod thinkgraph;
pub mod transcript;
pub mod verify;

#[cfg(test)]
pub(crate) mod testing;
