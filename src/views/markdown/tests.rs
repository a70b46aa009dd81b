use super::*;
use proptest::prelude::*;

#[allow(clippy::unwrap_used)]
/// The cache draws exactly what the whole answer as one scrolled paragraph draws, at
/// every scroll position and after a resize.
#[test]
fn the_cache_draws_what_the_whole_paragraph_draws() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::widgets::{Paragraph, Wrap};
    let text = "# Title\n\nA paragraph long enough to wrap over several rows of a narrow pane, \
                with `code` and **bold** words.\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n\n"
        .repeat(6);
    let styles = MarkdownStyles::default();
    let highlights = HighlightCache::default();
    let cache = MarkdownCache::default();
    for (w, h) in [(30u16, 8u16), (57, 13), (30, 8)] {
        for up in [0u16, 1, 5, 17, 40, 500] {
            let mut a = Terminal::new(TestBackend::new(w, h)).unwrap();
            a.draw(|f| cache.draw(f, f.area(), &text, &styles, &highlights, up))
                .unwrap();
            let mut b = Terminal::new(TestBackend::new(w, h)).unwrap();
            b.draw(|f| {
                let para = Paragraph::new(render(&text, &styles, &highlights).lines)
                    .wrap(Wrap { trim: false });
                let total = para.line_count(w) as u16;
                let up = up.min(total.saturating_sub(h));
                let top = total.saturating_sub(h).saturating_sub(up);
                f.render_widget(para.scroll((top, 0)), f.area());
            })
            .unwrap();
            assert_eq!(
                a.backend().buffer(),
                b.backend().buffer(),
                "{w}x{h} up {up}"
            );
        }
    }
}

fn md(text: &str) -> Rendered {
    render(text, &MarkdownStyles::default(), &HighlightCache::default())
}

fn line_text(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

fn texts(rendered: &Rendered) -> Vec<String> {
    rendered.lines.iter().map(line_text).collect()
}

fn span_with<'a>(rendered: &'a Rendered, content: &str) -> &'a Span<'static> {
    rendered
        .lines
        .iter()
        .flat_map(|l| l.spans.iter())
        .find(|s| s.content == content)
        .unwrap_or_else(|| panic!("no span {content:?} in {:?}", texts(rendered)))
}

#[test]
fn headings_are_bold_with_level_markers() {
    let r = md("# Title\n\n### Third *level*\n\nbody");
    assert_eq!(texts(&r), ["# Title", "", "### Third level", "", "body"]);
    for span in r.lines[0].spans.iter().chain(&r.lines[2].spans) {
        assert!(span.style.add_modifier.contains(Modifier::BOLD), "{span:?}");
    }
    assert!(
        span_with(&r, "level")
            .style
            .add_modifier
            .contains(Modifier::ITALIC)
    );
    assert!(
        !span_with(&r, "body")
            .style
            .add_modifier
            .contains(Modifier::BOLD)
    );
}

#[test]
fn inline_styles() {
    let r = md("plain *em* **strong** ~~gone~~ `code` ***both***");
    assert_eq!(texts(&r), ["plain em strong gone code both"]);
    let styles = MarkdownStyles::default();
    assert_eq!(span_with(&r, "plain ").style, styles.text);
    assert!(
        span_with(&r, "em")
            .style
            .add_modifier
            .contains(Modifier::ITALIC)
    );
    assert!(
        span_with(&r, "strong")
            .style
            .add_modifier
            .contains(Modifier::BOLD)
    );
    assert!(
        span_with(&r, "gone")
            .style
            .add_modifier
            .contains(Modifier::CROSSED_OUT)
    );
    assert_eq!(span_with(&r, "code").style.fg, styles.code_inline.fg);
    let both = span_with(&r, "both").style.add_modifier;
    assert!(both.contains(Modifier::BOLD) && both.contains(Modifier::ITALIC));
}

#[test]
fn soft_breaks_join_and_hard_breaks_split() {
    let r = md("one\ntwo  \nthree\\\nfour");
    assert_eq!(texts(&r), ["one two", "three", "four"]);
}

#[test]
fn paragraphs_are_separated_by_one_blank_line() {
    let r = md("first\n\n\n\nsecond");
    assert_eq!(texts(&r), ["first", "", "second"]);
}

#[test]
fn unordered_list_has_styled_markers() {
    let r = md("- one\n- two\n\nafter");
    assert_eq!(texts(&r), ["• one", "• two", "", "after"]);
    assert_eq!(r.lines[0].spans[0].content, "• ");
    assert_eq!(
        r.lines[0].spans[0].style,
        MarkdownStyles::default().list_marker
    );
}

#[test]
fn nested_lists_indent() {
    let r = md("- a\n  - b\n    - c\n  - b2\n- d");
    assert_eq!(texts(&r), ["• a", "  ◦ b", "    ▪ c", "  ◦ b2", "• d"]);
}

#[test]
fn ordered_lists_count_from_their_start() {
    let r = md("3. x\n4. y\n   1. inner\n5. z");
    assert_eq!(texts(&r), ["3. x", "4. y", "   1. inner", "5. z"]);
}

#[test]
fn loose_list_item_continuation_is_indented() {
    let r = md("1. first para\n\n   second para\n2. next");
    assert_eq!(
        texts(&r),
        ["1. first para", "", "   second para", "", "2. next"]
    );
}

#[test]
fn task_list_and_empty_item() {
    let r = md("- [x] done\n- [ ] open\n-");
    assert_eq!(texts(&r), ["• [x] done", "• [ ] open", "• "]);
}

#[test]
fn block_quotes_have_a_bar() {
    let r = md("> quoted\n> more\n>\n> second\n>> deeper");
    assert_eq!(
        texts(&r),
        ["│ quoted more", "│ ", "│ second", "│ ", "│ │ deeper"]
    );
    let styles = MarkdownStyles::default();
    assert_eq!(r.lines[0].spans[0].style, styles.quote);
    assert!(
        span_with(&r, "quoted more")
            .style
            .add_modifier
            .contains(Modifier::ITALIC)
    );
}

#[test]
fn links_show_text_then_dim_url() {
    let r = md("see [the site](https://example.com/a) and <https://auto.link>");
    assert_eq!(
        texts(&r),
        ["see the site (https://example.com/a) and https://auto.link"]
    );
    let styles = MarkdownStyles::default();
    assert_eq!(span_with(&r, "the site").style, styles.link);
    let url = span_with(&r, " (https://example.com/a)");
    assert!(url.style.add_modifier.contains(Modifier::DIM));
    assert_eq!(span_with(&r, "https://auto.link").style, styles.link);
}

#[test]
fn images_show_alt_text_and_url() {
    let r = md("![a cat](cat.png)");
    assert_eq!(texts(&r), ["[image: a cat] (cat.png)"]);
}

#[test]
fn horizontal_rule() {
    let r = md("above\n\n---\n\nbelow");
    assert_eq!(texts(&r), ["above", "", RULE, "", "below"]);
    assert_eq!(r.lines[2].spans[0].style, MarkdownStyles::default().rule);
}

#[test]
fn tables_are_aligned() {
    let r = md("| a | bb | c |\n|---|--:|:-:|\n| ccc | d | eee |\n| `x` |");
    assert_eq!(
        texts(&r),
        [
            "a   │ bb │  c ",
            "────┼────┼────",
            "ccc │  d │ eee",
            "x   │    │    ",
        ]
    );
    assert!(
        span_with(&r, "bb")
            .style
            .add_modifier
            .contains(Modifier::BOLD)
    );
    assert!(
        !span_with(&r, "ccc")
            .style
            .add_modifier
            .contains(Modifier::BOLD)
    );
    assert_eq!(
        span_with(&r, "x").style.fg,
        MarkdownStyles::default().code_inline.fg
    );
}

#[test]
fn fenced_code_without_cache_is_plain_code_lines() {
    let r = md("intro\n\n```rust,ignore\nfn main() {}\n\tlet x;\n\n```\nafter");
    assert_eq!(
        texts(&r),
        ["intro", "", "fn main() {}", "    let x;", "", "", "after"]
    );
    let style = MarkdownStyles::default().code_block;
    for line in &r.lines[2..5] {
        assert_eq!(line.spans.len(), 1);
        assert_eq!(line.spans[0].style, style);
    }
    assert_eq!(r.code_blocks.len(), 1);
    let block = &r.code_blocks[0];
    assert_eq!(block.lang, "rust");
    assert_eq!(block.code, "fn main() {}\n\tlet x;\n\n");
    assert!(block.complete);
    assert_eq!(block.key, CodeBlock::new("rust", block.code.clone()).key);
}

#[test]
fn cached_highlights_replace_plain_lines() {
    let text = "```py\nprint(1)\nx = 2\n```\n";
    let key = CodeBlock::key_for("py", "print(1)\nx = 2\n");
    let mut cache = HighlightCache::default();
    let red = Style::new().fg(Color::Red);
    let green = Style::new().fg(Color::Green).add_modifier(Modifier::BOLD);
    cache.insert(
        key,
        vec![
            Line::from(vec![Span::styled("print", red), Span::raw("(1)")]),
            Line::from(vec![Span::styled("x = 2", green)]),
        ],
    );
    let styles = MarkdownStyles::default();
    let r = render(text, &styles, &cache);
    assert_eq!(texts(&r), ["print(1)", "x = 2"]);
    assert_eq!(r.lines[0].spans[0].style.fg, Some(Color::Red));
    // Unstyled cached spans fall back to the code block style.
    assert_eq!(r.lines[0].spans[1].style, styles.code_block);
    assert_eq!(r.lines[1].spans[0].style.fg, Some(Color::Green));
    assert!(
        r.lines[1].spans[0]
            .style
            .add_modifier
            .contains(Modifier::BOLD)
    );
    assert_eq!(r.code_blocks[0].key, key);
}

#[test]
fn indented_code_block() {
    let r = md("para\n\n    indented code\n    more\n\nafter");
    assert_eq!(
        texts(&r),
        ["para", "", "indented code", "more", "", "after"]
    );
    assert_eq!(r.code_blocks[0].lang, "");
    assert!(r.code_blocks[0].complete);
    assert_eq!(
        span_with(&r, "more").style,
        MarkdownStyles::default().code_block
    );
}

#[test]
fn code_inside_list_and_quote_keeps_prefix() {
    let r = md("- item\n\n  ```\n  code\n  ```\n\n> ```sh\n> ls -l\n> ```");
    assert_eq!(texts(&r), ["• item", "", "  code", "", "│ ls -l"]);
    assert_eq!(r.code_blocks.len(), 2);
    assert_eq!(r.code_blocks[1].lang, "sh");
    assert!(r.code_blocks.iter().all(|b| b.complete));
}

#[test]
fn unterminated_fence_renders_code_so_far() {
    let partial = "Here:\n\n```python\nprint(1)\nx = ";
    let r = md(partial);
    assert_eq!(texts(&r), ["Here:", "", "print(1)", "x = "]);
    assert_eq!(r.code_blocks.len(), 1);
    assert_eq!(r.code_blocks[0].lang, "python");
    assert!(!r.code_blocks[0].complete);
    assert_eq!(
        span_with(&r, "x = ").style,
        MarkdownStyles::default().code_block
    );

    let just_opened = md("Here:\n\n```rust");
    assert_eq!(texts(&just_opened), ["Here:", ""]);
    assert!(!just_opened.code_blocks[0].complete);

    let closed = md(&format!("{partial}3\n```"));
    assert!(closed.code_blocks[0].complete);
    assert_eq!(closed.code_blocks[0].code, "print(1)\nx = 3\n");
    let followed = md(&format!("{partial}3\n```\nmore text"));
    assert!(followed.code_blocks[0].complete);
}

#[test]
fn unterminated_indented_code_at_end_is_incomplete() {
    assert!(!md("para\n\n    code").code_blocks[0].complete);
}

#[test]
fn every_prefix_of_a_rich_document_renders() {
    let doc = "# Título ✓\n\n- a *b*\n  1. c `d`\n> q [l](u)\n\n| x | y |\n|--|--|\n| 1 | 2 |\n\n```rust\nfn f() {}\n```\n---\n![i](p) ~~s~~";
    for (at, _) in doc.char_indices() {
        let r = md(&doc[..at]);
        for block in &r.code_blocks {
            assert_eq!(block.key, CodeBlock::key_for(&block.lang, &block.code));
        }
    }
    assert_eq!(md(doc).code_blocks.len(), 1);
}

#[test]
fn long_and_deeply_nested_input_does_not_panic() {
    let deep_quote = ">".repeat(20_000) + " x";
    let deep_list: String = (0..300)
        .map(|i| format!("{}- x\n", "  ".repeat(i)))
        .collect();
    let brackets = "[".repeat(50_000) + &"]".repeat(50_000);
    let big = "word **bold** `c` [l](u)\n".repeat(20_000);
    for text in [deep_quote, deep_list, brackets, big] {
        let r = md(&text);
        assert!(!r.lines.is_empty());
        assert!(r.lines.iter().all(|l| !line_text(l).contains('\n')));
    }
}

#[test]
fn fnv_key_is_stable_and_separates_fields() {
    // Pinned values: the key must not change between runs or builds.
    assert_eq!(CodeBlock::key_for("", ""), 0xaf64_724c_8602_eb6e);
    assert_eq!(
        CodeBlock::key_for("rust", "fn main() {}"),
        0x30f7_c139_5bd7_13c2
    );
    assert_ne!(CodeBlock::key_for("ab", "c"), CodeBlock::key_for("a", "bc"));
    assert_eq!(
        CodeBlock::key_for("rust", "x"),
        CodeBlock::key_for("rust", "x")
    );
}

proptest! {
    #[test]
    fn render_never_panics_on_arbitrary_text(text in any::<String>()) {
        let r = md(&text);
        for block in &r.code_blocks {
            prop_assert_eq!(block.key, CodeBlock::key_for(&block.lang, &block.code));
        }
    }

    #[test]
    fn render_never_panics_on_markdown_soup(
        text in "[-#*_`~>|\\[\\]()!:0-9. \n\ta-z\\\\<]{0,300}"
    ) {
        let r = md(&text);
        for line in &r.lines {
            prop_assert!(line.spans.iter().all(|s| !s.content.contains('\n')));
        }
    }
}
