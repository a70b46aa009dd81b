//! The Think graph's model is a view model (`views::graph_model`): the rows the graph pane
//! draws, with folding and selection. App code reaches it here as before.

pub use crate::views::graph_model::*;
