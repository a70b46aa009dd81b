//! Pure render functions: state in, widgets out. No I/O, no awaits, no store access.

pub mod help;
pub mod palette;
