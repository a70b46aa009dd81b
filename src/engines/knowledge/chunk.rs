//! Cutting a document's text into overlapping chunks of at most `chunk_chars` characters,
//! ending each at the best boundary in the last fifth of its window: a paragraph break, else
//! a sentence end, else a space.

/// How good a place to end a chunk is; higher is better.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Break {
    Word = 1,
    Sentence = 2,
    Paragraph = 3,
}

/// The chunks of `text` as (start, end, text), with `start` and `end` offsets in characters
/// (not bytes), end exclusive: `text.chars().skip(start).take(end - start)` is the chunk.
///
/// Each chunk holds at most `chunk_chars` characters (at least 1), ends at a paragraph break,
/// sentence end or space found in the last ~20% of its window when there is one, and the
/// next starts `overlap_chars` before it ends (moved forward to a word start inside the
/// overlap when it would cut a word; the overlap is capped below the chunk size). Together
/// the chunks cover every character of the text; chunks of whitespace only are dropped.
pub fn chunk(text: &str, chunk_chars: usize, overlap_chars: usize) -> Vec<(usize, usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let size = chunk_chars.max(1);
    let overlap = overlap_chars.min(size.saturating_sub(1));
    // Where a boundary may end a chunk: the last fifth of the window (at least one char).
    let slack = (size / 5).max(1);
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let hard_end = (start + size).min(n);
        let end = if hard_end == n {
            n
        } else {
            best_end(
                &chars,
                hard_end.saturating_sub(slack).max(start + 1),
                hard_end,
            )
        };
        let piece: String = chars[start..end].iter().collect();
        if !piece.trim().is_empty() {
            out.push((start, end, piece));
        }
        if end == n {
            break;
        }
        start = next_start(&chars, start, end, overlap);
    }
    out
}

/// The best end in `lo..=hi` (exclusive chunk end): the last position right after the
/// strongest boundary, or `hi` when the window has none.
fn best_end(chars: &[char], lo: usize, hi: usize) -> usize {
    let mut best: Option<(Break, usize)> = None;
    for end in lo..=hi {
        let Some(kind) = boundary_before(chars, end) else {
            continue;
        };
        if best.is_none_or(|(b, _)| kind >= b) {
            best = Some((kind, end));
        }
    }
    best.map_or(hi, |(_, e)| e)
}

/// What kind of boundary lies just before position `end` (between `end - 1` and `end`).
fn boundary_before(chars: &[char], end: usize) -> Option<Break> {
    let prev = *chars.get(end.checked_sub(1)?)?;
    if prev == '\n' && end >= 2 && chars[end - 2] == '\n' {
        return Some(Break::Paragraph);
    }
    if prev.is_whitespace() {
        let before = end.checked_sub(2).and_then(|i| chars.get(i));
        if matches!(before, Some('.' | '!' | '?' | ':' | ';')) || prev == '\n' {
            return Some(Break::Sentence);
        }
        return Some(Break::Word);
    }
    if matches!(prev, '.' | '!' | '?') && chars.get(end).is_none_or(|c| c.is_whitespace()) {
        return Some(Break::Sentence);
    }
    None
}

/// Where the chunk after `start..end` begins: `overlap` characters before `end`, moved
/// forward to the start of the next word when that cuts one (while still inside the
/// overlap), and always after `start`.
fn next_start(chars: &[char], start: usize, end: usize, overlap: usize) -> usize {
    let mut s = end.saturating_sub(overlap).max(start + 1);
    if s < end
        && s > 0
        && !chars[s - 1].is_whitespace()
        && !chars[s].is_whitespace()
        && let Some(ws) = (s..end).find(|&i| chars[i].is_whitespace())
    {
        s = ws;
    }
    while s < end && chars[s].is_whitespace() {
        s += 1;
    }
    s.min(end).max(start + 1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use proptest::prelude::*;

    use super::*;

    fn span(text: &str, s: usize, e: usize) -> String {
        text.chars().skip(s).take(e - s).collect()
    }

    fn check(text: &str, size: usize, overlap: usize) {
        let chunks = chunk(text, size, overlap);
        let n = text.chars().count();
        let mut covered = vec![false; n];
        let mut last_start = None;
        for (s, e, t) in &chunks {
            assert!(s < e && *e <= n, "{s}..{e} of {n}");
            assert!(e - s <= size.max(1), "{s}..{e} longer than {size}");
            assert_eq!(&span(text, *s, *e), t);
            assert!(!t.trim().is_empty());
            assert!(last_start < Some(*s), "starts go forward");
            last_start = Some(*s);
            covered[*s..*e].iter_mut().for_each(|c| *c = true);
        }
        for (i, c) in text.chars().enumerate() {
            assert!(
                covered[i] || c.is_whitespace(),
                "char {i} {c:?} not covered"
            );
        }
    }

    #[test]
    fn short_text_is_one_chunk_and_blank_text_none() {
        assert_eq!(
            chunk("hello world", 500, 100),
            vec![(0, 11, "hello world".into())]
        );
        assert!(chunk("", 500, 100).is_empty());
        assert!(chunk("  \n\n\t ", 5, 1).is_empty());
    }

    #[test]
    fn ends_at_a_paragraph_then_a_sentence_then_a_word() {
        let para = format!("{}\n\n{}", "a".repeat(90), "b".repeat(50));
        let c = chunk(&para, 100, 10);
        assert_eq!(c[0].2, format!("{}\n\n", "a".repeat(90)));
        let sent = format!("{}. {}", "a ".repeat(44).trim_end(), "word ".repeat(20));
        let c = chunk(&sent, 100, 10);
        assert!(c[0].2.ends_with(". "), "{:?}", c[0].2);
        let words = "alpha beta gamma delta ".repeat(10);
        for (_, _, t) in chunk(&words, 50, 10) {
            assert!(!t.starts_with(|c: char| c.is_whitespace()), "{t:?}");
            let last = t.split_whitespace().last().unwrap();
            assert!(["alpha", "beta", "gamma", "delta"].contains(&last), "{t:?}");
        }
    }

    #[test]
    fn consecutive_chunks_overlap() {
        let text = "one two three four five six seven eight nine ten ".repeat(20);
        let c = chunk(&text, 100, 30);
        assert!(c.len() > 5);
        for w in c.windows(2) {
            let overlap = w[0].1.saturating_sub(w[1].0);
            assert!((15..=30).contains(&overlap), "overlap {overlap}");
        }
    }

    #[test]
    fn never_splits_a_multibyte_char_and_counts_chars() {
        let text = "日本語のテキスト。".repeat(40) + "😀é";
        check(&text, 50, 10);
        let c = chunk(&text, 50, 10);
        assert!(c.iter().all(|(s, e, _)| e - s <= 50));
        assert!(c.last().unwrap().2.ends_with("😀é"));
    }

    #[test]
    fn degenerate_sizes_still_progress() {
        check("abcdefghij", 1, 5);
        check("abc def ghi", 0, 0);
        check("abcdefghij klmnop", 3, 2);
    }

    proptest! {
        #[test]
        fn chunks_cover_the_text_and_fit(
            text in "[a-zé😀 .\n]{0,400}",
            size in 1usize..120,
            overlap in 0usize..130,
        ) {
            check(&text, size, overlap);
        }
    }
}
