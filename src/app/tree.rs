//! The tree cursor lives with the view models it moves through (`views::tree`); app code
//! reaches it here as before.

pub use crate::views::tree::{TreeCursor, TreeRow};
