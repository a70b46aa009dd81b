//! What the streaming benches share: a text cut into deltas the way a provider sends it.

/// Cuts `text` into deltas of about `size` bytes, on char boundaries.
pub fn deltas(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}
