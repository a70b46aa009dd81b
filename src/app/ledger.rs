//! The Ledger workspace's model is a view model (`views::ledger_model`); app code reaches it
//! here as before. Reading it from the store is the workspace's (`workspaces::ledger`).

pub use crate::views::ledger_model::*;
