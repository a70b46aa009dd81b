//! The question box's text buffer is a view model (`views::input`); app code reaches it here
//! as before.

pub use crate::views::input::InputBox;
