//! Markdown rendering of a large answer (with and without cached highlights) and syntect
//! highlighting of a long Rust block.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use glassbox::app::highlight::highlight_now;
use glassbox::views::markdown::{CodeBlock, HighlightCache, MarkdownStyles, render};

/// A ~20 KB answer mixing every construct the renderer handles.
fn answer() -> String {
    let section = r#"## Step {n}: looking at the *hot path*

The **allocator** shows up in `perf` output, so we check [the docs](https://doc.rust-lang.org/std/)
before changing anything. A second sentence wraps
over a soft break.

- first point with `inline code`
- second point
  1. nested ordered
  2. another one
- [x] a finished task

> Quoted reasoning that the model
> pasted from elsewhere.

```rust
fn step(values: &mut Vec<u64>) -> u64 {
    values.sort_unstable();
    values.iter().copied().sum()
}
```

| metric | before | after |
|--------|-------:|------:|
| p50    | 12 ms  | 9 ms  |
| p99    | 40 ms  | 22 ms |

---

"#;
    let mut text = String::from("# Answer\n\n");
    let mut n = 0;
    while text.len() < 20 * 1024 {
        n += 1;
        text.push_str(&section.replace("{n}", &n.to_string()));
    }
    text
}

fn rust_block(lines: usize) -> CodeBlock {
    let snippet = [
        "/// Sums the squares of the even values.",
        "pub fn sum_even_squares(values: &[i64]) -> i64 {",
        "    let mut total = 0_i64;",
        "    for &v in values.iter().filter(|v| *v % 2 == 0) {",
        "        total = total.saturating_add(v * v); // squares",
        "    }",
        "    println!(\"total = {total}\");",
        "    total",
        "}",
        "",
    ];
    let code: String = snippet
        .iter()
        .cycle()
        .take(lines)
        .flat_map(|line| [*line, "\n"])
        .collect();
    CodeBlock::new("rust", code)
}

fn bench_render(c: &mut Criterion) {
    let text = answer();
    let styles = MarkdownStyles::default();
    let empty = HighlightCache::default();
    let mut cached = HighlightCache::default();
    for block in render(&text, &styles, &empty).code_blocks {
        cached.insert(block.key, highlight_now(&block));
    }

    let mut group = c.benchmark_group("markdown_render_20k");
    group.bench_function("plain_code", |b| {
        b.iter(|| render(black_box(&text), &styles, &empty))
    });
    group.bench_function("cached_highlights", |b| {
        b.iter(|| render(black_box(&text), &styles, &cached))
    });
    group.finish();
}

fn bench_highlight(c: &mut Criterion) {
    let block = rust_block(200);
    // The first call loads syntect's syntaxes and theme; keep that out of the measurement.
    highlight_now(&block);
    c.bench_function("highlight_now_rust_200_lines", |b| {
        b.iter(|| highlight_now(black_box(&block)))
    });
}

/// One frame of a 2,000-line answer in the answer pane (200×50), after the first frame has
/// rendered and wrapped it: what scrolling or a redraw with nothing new costs. Also the
/// same frame rendering the whole answer again, as every frame did before the cache.
fn bench_frame(c: &mut Criterion) {
    use glassbox::views::markdown::MarkdownCache;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::widgets::{Paragraph, Wrap};

    let mut text = answer();
    while text.lines().count() < 2_000 {
        text.push_str(&answer());
    }
    let styles = MarkdownStyles::default();
    let highlights = HighlightCache::default();
    let cache = MarkdownCache::default();
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap_or_else(|e| panic!("{e}"));
    let mut up = 0u16;
    // The first frame parses and wraps.
    let _ = term.draw(|f| cache.draw(f, f.area(), &text, &styles, &highlights, up));

    let mut group = c.benchmark_group("markdown_frame_2000_lines");
    group.bench_function("cached", |b| {
        b.iter(|| {
            up = (up + 7) % 1_500;
            let _ = term.draw(|f| cache.draw(f, f.area(), &text, &styles, &highlights, up));
        })
    });
    group.bench_function("uncached", |b| {
        b.iter(|| {
            let _ = term.draw(|f| {
                let rendered = render(&text, &styles, &highlights);
                let para = Paragraph::new(rendered.lines).wrap(Wrap { trim: false });
                let total = para.line_count(f.area().width) as u16;
                let top = total.saturating_sub(f.area().height);
                f.render_widget(para.scroll((top, 0)), f.area());
            });
        })
    });
    group.finish();
}

criterion_group!(benches, bench_render, bench_highlight, bench_frame);
criterion_main!(benches);
