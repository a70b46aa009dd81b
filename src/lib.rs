//! glassbox: a terminal workbench for watching, steering and keeping an AI model's reasoning.
//!
//! The binary is a thin clap front end over this library; tests and benches use it directly.

pub mod app;
pub mod cli;
pub mod config;
pub mod engines;
pub mod models;
pub mod paths;
pub mod store;
pub mod toml_text;
pub mod views;
