#![allow(clippy::unwrap_used, clippy::expect_used)]

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;

use super::*;
use crate::engines::diff::{Claim, DiffStep, LabelSource, MergeSource, Provenance};
use crate::store::{NodeType, SessionId};
use crate::views::Keys;
use crate::views::markdown::{HighlightCache, MarkdownCache};
use crate::views::theme::ColorDepth;

/// The keys of the built-in `[diff]` section and `[normal]`, as the keymap would answer.
struct DiffKeys;

impl Keys for DiffKeys {
    fn keys(&self, action: &str) -> Vec<String> {
        let k: &[&str] = match action {
            "diff_mark" => &["="],
            "next_difference" => &["n"],
            "prev_difference" => &["N"],
            "merge_diff" => &["m"],
            "fork_step" => &["f"],
            "focus_next" => &["tab"],
            "collapse" => &["h"],
            "expand" => &["l"],
            _ => &[],
        };
        k.iter().map(|s| s.to_string()).collect()
    }
}

fn steps(texts: &[(&str, &str)]) -> Vec<DiffStep> {
    texts
        .iter()
        .enumerate()
        .map(|(i, (kind, text))| DiffStep {
            index: i as u32,
            kind: kind.to_string(),
            text: text.to_string(),
        })
        .collect()
}

fn pair(label: Label, a: Option<u32>, b: Option<u32>, sim: Option<f64>, by: LabelSource) -> Pair {
    Pair {
        label,
        a,
        b,
        similarity: sim,
        by,
        reason: None,
    }
}

/// An id fixed for the snapshots: `…0000000n`.
pub(crate) fn id<T: std::str::FromStr>(n: u32) -> T
where
    T::Err: std::fmt::Debug,
{
    format!("0195a0c0-0000-7000-8000-{n:012x}").parse().unwrap()
}

/// Two fork branches on renting or buying: one row of every label.
pub(crate) fn rent_or_buy() -> Diff {
    let session: SessionId = id(1);
    let side = |node: u32, texts: &[(&str, &str)]| Side {
        node: id(node),
        session,
        kind: NodeType::ForkBranch,
        steps: steps(texts),
    };
    let a = side(
        0xa1,
        &[
            (
                "conclusion",
                "Buy a flat within two years: rents keep rising faster than wages, and a fixed-rate mortgage caps the monthly cost for a decade.",
            ),
            (
                "insight",
                "Mortgage payments build equity while rent builds none.",
            ),
            ("risk", "House prices may fall if interest rates climb."),
            (
                "opportunity",
                "A spare room can be let to cover part of the mortgage.",
            ),
        ],
    );
    let b = side(
        0xb2,
        &[
            (
                "conclusion",
                "Keep renting and invest the deposit in an index fund.",
            ),
            (
                "insight",
                "Mortgage payments build equity while rent builds none.",
            ),
            (
                "risk",
                "House prices may fall further if interest rates keep climbing.",
            ),
            (
                "assumption",
                "Mobility matters more than ownership for the next five years.",
            ),
        ],
    );
    let mut first = pair(
        Label::Contradicts,
        Some(0),
        Some(0),
        Some(0.412),
        LabelSource::Model,
    );
    first.reason = Some("one buys, the other keeps renting".into());
    let mut third = pair(
        Label::Differs,
        Some(2),
        Some(2),
        Some(0.81),
        LabelSource::Model,
    );
    third.reason = Some("B expects prices to keep falling".into());
    Diff {
        a,
        b,
        measure: "lexical".into(),
        judge: Some("test-model".into()),
        pairs: vec![
            first,
            pair(
                Label::Same,
                Some(1),
                Some(1),
                Some(1.0),
                LabelSource::Identical,
            ),
            third,
            pair(Label::OnlyA, Some(3), None, None, LabelSource::Alignment),
            pair(Label::OnlyB, None, Some(3), None, LabelSource::Alignment),
        ],
    }
}

/// The rent-or-buy branches merged into three claims (the last one new).
pub(crate) fn merged(d: &Diff) -> Merged {
    let source = |letter, s: &Side| MergeSource {
        letter,
        node: s.node,
        kind: s.kind,
        steps: s.steps.clone(),
    };
    let both = |i: u32| {
        vec![
            Provenance {
                node: d.a.node,
                steps: vec![i],
            },
            Provenance {
                node: d.b.node,
                steps: vec![i],
            },
        ]
    };
    Merged {
        node: id(0x3e),
        session: d.a.session,
        sources: vec![source('A', &d.a), source('B', &d.b)],
        claims: vec![
            Claim {
                text: "Owning builds equity that renting does not.".into(),
                provenance: both(1),
                new: false,
            },
            Claim {
                text: "Rising rates put prices at risk either way.".into(),
                provenance: both(2),
                new: false,
            },
            Claim {
                text: "Decide by how long you will stay.".into(),
                provenance: Vec::new(),
                new: true,
            },
        ],
    }
}

fn picked(s: &Side, what: &str) -> Picked {
    Picked {
        node: s.node,
        kind: s.kind,
        what: Some(what.into()),
    }
}

fn view<'a>(
    d: Option<&'a Diff>,
    pair: (&'a Picked, &'a Picked),
    phase: &'a JobPhase,
) -> DiffView<'a> {
    DiffView {
        marked: None,
        pair: Some(pair),
        diff: d,
        phase,
        progress: None,
        row: 0,
        column: Column::A,
        top: 0,
        focus: Focus::Rows,
        merge: &JobPhase::Empty,
        merged: None,
        claim: 0,
    }
}

fn draw(w: u16, h: u16, view: &DiffView<'_>) -> Buffer {
    let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
    let highlights = HighlightCache::new(4);
    let markdown = MarkdownCache::default();
    let cx = ViewCx {
        theme: &theme,
        keys: &DiffKeys,
        highlights: &highlights,
        markdown: &markdown,
    };
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut v = *view;
    v.top = first_row(view, Rect::new(0, 0, w, h));
    term.draw(|f| render(f, f.area(), &v, &cx)).unwrap();
    term.backend().buffer().clone()
}

fn text(b: &Buffer) -> String {
    let w = b.area.width as usize;
    b.content
        .chunks(w)
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The line of the screen holding `needle`.
fn line_of(b: &Buffer, needle: &str) -> String {
    text(b)
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not on screen"))
        .to_string()
}

#[test]
fn rows_of_every_label_side_by_side_160x45() {
    let d = rent_or_buy();
    let (pa, pb) = (picked(&d.a, "conservative"), picked(&d.b, "aggressive"));
    let b = draw(160, 45, &view(Some(&d), (&pa, &pb), &JobPhase::Done));
    let t = text(&b);
    assert!(
        t.contains(&format!(
            "A fork_branch {} (conservative) · 4 steps",
            d.a.node.short()
        )),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "B fork_branch {} (aggressive) · 4 steps",
            d.b.node.short()
        )),
        "{t}"
    );
    for want in [
        "compared by lexical · labels by test-model",
        "= 1 same",
        "~ 1 differs",
        "! 1 contradicts",
        "< 1 only A",
        "> 1 only B",
        "row 1 of 5 · contradicts · similarity 0.41 · by the model — one buys, the other keeps renting",
        "Steps · 5 rows",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
    // A's step left, B's right, on one row, with the label's marker in the gutter.
    let row = line_of(&b, "A2 Mortgage");
    assert!(row.contains(" = A2 Mortgage"), "{row}");
    assert!(row.contains("│ B2 Mortgage"), "{row}");
    assert!(line_of(&b, "A1 Buy").contains("▶! A1 Buy"));
    assert!(line_of(&b, "A4 A spare").contains(" < A4"));
    let only_b = line_of(&b, "B4 Mobility");
    assert!(only_b.contains(" > "), "{only_b}");
    assert!(!only_b.contains("A4"), "{only_b}");
    // Rows are coloured by label through the theme; the selected cell by the selection.
    let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
    let y = t.lines().position(|l| l.contains("A4 A spare")).unwrap() as u16;
    let x = t
        .lines()
        .nth(y as usize)
        .unwrap()
        .chars()
        .position(|c| c == '<')
        .unwrap() as u16;
    assert_eq!(b[(x + 2, y)].fg, theme.style(Role::DiffOnlyA).fg.unwrap());
    let y = t.lines().position(|l| l.contains("A1 Buy")).unwrap() as u16;
    assert_eq!(b[(5, y)].bg, theme.style(Role::Selection).bg.unwrap());
    insta::assert_snapshot!("diff_rows_160x45", t);
}

#[test]
fn a_claim_lights_up_its_steps_in_both_columns_80x24() {
    let d = rent_or_buy();
    let m = merged(&d);
    let (pa, pb) = (picked(&d.a, "conservative"), picked(&d.b, "aggressive"));
    let mut v = view(Some(&d), (&pa, &pb), &JobPhase::Done);
    v.merge = &JobPhase::Done;
    v.merged = Some(&m);
    v.focus = Focus::Claims;
    v.claim = 1;
    let b = draw(80, 24, &v);
    let t = text(&b);
    assert!(
        t.contains(&format!("Merge · synthesis {} · 3 claims", m.node.short())),
        "{t}"
    );
    assert!(
        t.contains("▶ 2. Rising rates put prices at risk either way."),
        "{t}"
    );
    assert!(t.contains("← A3 B3"), "{t}");
    assert!(t.contains("← new"), "{t}");
    assert!(t.contains("claim 2 of 3 · from A3 B3"), "{t}");
    let row = line_of(&b, "◆A3");
    assert!(row.contains("◆B3"), "{row}");
    assert!(!t.contains("◆A2"), "only the selected claim's steps: {t}");
    let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
    let y = t.lines().position(|l| l.contains("◆A3")).unwrap() as u16;
    assert_eq!(b[(5, y)].bg, theme.style(Role::DiffSource).bg.unwrap());
    insta::assert_snapshot!("diff_claim_sources_80x24", t);
}

#[test]
fn the_progress_line_while_the_model_labels_80x24() {
    let d = rent_or_buy();
    let (pa, pb) = (picked(&d.a, "conservative"), picked(&d.b, "aggressive"));
    let mut v = view(None, (&pa, &pb), &JobPhase::Running);
    v.progress = Some((1, 3));
    let t = text(&draw(80, 24, &v));
    assert!(t.contains("⟳ labelling pair 2 of 3…"), "{t}");
    assert!(
        t.contains(&format!(
            "A fork_branch {} (conservative)",
            d.a.node.short()
        )),
        "{t}"
    );
    insta::assert_snapshot!("diff_progress_80x24", t);
}

#[test]
fn an_error_is_one_line_80x24() {
    let d = rent_or_buy();
    let (pa, pb) = (picked(&d.a, "conservative"), picked(&d.b, "aggressive"));
    let failed = JobPhase::Failed(format!("node {} holds no text\nto compare", d.b.node));
    let t = text(&draw(80, 24, &view(None, (&pa, &pb), &failed)));
    let line = line_of_text(&t, "✗ the diff failed");
    assert!(line.contains("holds no text to"), "{line}");
    insta::assert_snapshot!("diff_error_80x24", t);
}

fn line_of_text<'a>(t: &'a str, needle: &str) -> &'a str {
    t.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle}: {t}"))
}

#[test]
fn the_empty_workspace_says_how_to_mark_80x24() {
    let d = rent_or_buy();
    let pa = picked(&d.a, "conservative");
    let v = DiffView {
        marked: Some(&pa),
        pair: None,
        ..view(None, (&pa, &pa), &JobPhase::Empty)
    };
    let t = text(&draw(80, 24, &v));
    assert!(t.contains("marked A: fork_branch"), "{t}");
    assert!(t.contains("= marks the selected node as A"), "{t}");
    assert!(t.contains("n/N jump between differences"), "{t}");
    insta::assert_snapshot!("diff_empty_80x24", t);
}

#[test]
fn the_selected_row_is_kept_in_view_and_shown_whole() {
    let mut d = rent_or_buy();
    let long = "a long step that wraps over many lines of the narrow column ".repeat(6);
    for s in d.a.steps.iter_mut().chain(d.b.steps.iter_mut()) {
        s.text = long.clone();
    }
    let (pa, pb) = (picked(&d.a, "x"), picked(&d.b, "y"));
    let mut v = view(Some(&d), (&pa, &pb), &JobPhase::Done);
    let area = Rect::new(0, 0, 80, 24);
    // Every row is cut to four lines but the selected one; row 5 is below the fold.
    v.row = 4;
    let top = first_row(&v, area);
    assert!(top > 0 && top <= 4, "{top}");
    v.top = top;
    let t = text(&draw(80, 24, &v));
    assert!(t.contains("▶> "), "{t}");
    assert!(t.contains('…'), "the unselected rows are cut: {t}");
    // Moving back up scrolls back.
    v.row = 0;
    assert_eq!(first_row(&v, area), 0);
}
