//! Small helpers for the TOML files glassbox reads (config, keymap, themes), shared by the
//! layers that parse them.

/// The 1-based line of a byte offset in `text` (for `file:line` errors).
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::line_of;

    #[test]
    fn offsets_map_to_lines() {
        let text = "a = 1\nb = 2\n\nc = 3";
        assert_eq!(line_of(text, 0), 1);
        assert_eq!(line_of(text, 6), 2);
        assert_eq!(line_of(text, 13), 4);
        assert_eq!(line_of(text, 1_000), 4);
        assert_eq!(line_of("a = 1\n\nb = 2\n", 999), 4);
    }
}
