//! What goes inside the Pipeline panes: a layer's rows (thinking, text, a structured
//! answer as a key → value table), the one-line summaries of folded layers, and the final
//! answer with the run's notes.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::{LayerPane, LayerStatus, RunView};
use crate::views::theme::{Role, Theme};
use crate::views::verify::wrap;

pub(super) fn millis(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

pub(super) use crate::views::text::{clip, one_line};
/// A layer's one-line summary, for its closed line.
pub(super) fn summary(p: &LayerPane) -> String {
    if let Some(e) = &p.error {
        return one_line(e);
    }
    if let Some(Value::Object(m)) = &p.artifact {
        return m
            .iter()
            .map(|(k, v)| {
                let k = k.replace('_', " ");
                match v {
                    Value::Array(a) => format!("{k} {}", a.len()),
                    other => format!("{k} {}", clip(&scalar(other), 24)),
                }
            })
            .collect::<Vec<_>>()
            .join(" · ");
    }
    match p.status {
        LayerStatus::Pending => "pending".to_string(),
        LayerStatus::Running if p.text.trim().is_empty() => {
            if p.thinking.trim().is_empty() {
                "waiting for the model…".to_string()
            } else {
                "thinking…".to_string()
            }
        }
        LayerStatus::Running => {
            let last = p.text.lines().rev().find(|l| !l.trim().is_empty());
            one_line(last.unwrap_or(""))
        }
        _ => one_line(&p.text),
    }
}

/// An open layer's rows: thinking (dimmed) and text in the order they came while it runs;
/// once done, its answer (a table for a structured layer) and then its thinking.
pub(super) fn layer_lines(p: &LayerPane, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let width = width.max(8);
    let mut error = Vec::new();
    if let Some(e) = &p.error {
        for l in wrap(&format!("✗ {e}"), width) {
            error.push(Line::styled(l, theme.style(Role::Error)));
        }
    }
    let think_style = theme.style(Role::Thinking).add_modifier(Modifier::DIM);
    let thinking: Vec<Line<'static>> = if p.thinking.trim().is_empty() {
        Vec::new()
    } else {
        wrap(p.thinking.trim(), width.saturating_sub(2))
            .into_iter()
            .map(|l| {
                Line::from(vec![
                    Span::styled("┆ ", theme.style(Role::Dim)),
                    Span::styled(l, think_style),
                ])
            })
            .collect()
    };
    let answer: Vec<Line<'static>> = match &p.artifact {
        Some(a) => artifact_lines(a, width, theme),
        None if p.text.trim().is_empty() => Vec::new(),
        None => wrap(p.text.trim(), width)
            .into_iter()
            .map(|l| Line::styled(l, theme.style(Role::Response)))
            .collect(),
    };
    let mut out = error;
    if matches!(p.status, LayerStatus::Running | LayerStatus::Interrupted) {
        out.extend(thinking);
        out.extend(answer);
    } else {
        out.extend(answer);
        out.extend(thinking);
    }
    if out.is_empty() {
        let what = match p.status {
            LayerStatus::Pending => "pending",
            LayerStatus::Running => "⟳ waiting for the model…",
            LayerStatus::Interrupted => "stopped before any text",
            _ => "(no text)",
        };
        out.push(Line::styled(what, theme.style(Role::Dim)));
    }
    out
}

/// A scalar as a table cell.
pub(super) fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "—".to_string(),
        Value::Bool(true) => "yes".to_string(),
        Value::Bool(false) => "no".to_string(),
        Value::String(s) if s.trim().is_empty() => "—".to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Array(a) => a.iter().map(scalar).collect::<Vec<_>>().join(", "),
        Value::Object(m) => match (m.get("title"), m.get("url")) {
            (Some(t), Some(u)) => format!("{} — {}", scalar(t), scalar(u)),
            (Some(t), None) => scalar(t),
            _ => m
                .iter()
                .map(|(k, v)| format!("{k}: {}", scalar(v)))
                .collect::<Vec<_>>()
                .join(", "),
        },
    }
}

/// Rows of a key → value table: each key once, lists one bullet per item, long values
/// wrapped under their column.
pub(super) fn table(
    rows: &[(String, Vec<String>, Style)],
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let key_w = rows
        .iter()
        .map(|(k, _, _)| k.chars().count())
        .max()
        .unwrap_or(0)
        .min(width / 3);
    let val_w = width.saturating_sub(key_w + 2).max(8);
    let key_style = theme.style(Role::Accent);
    let mut out = Vec::new();
    for (key, items, style) in rows {
        let mut first = true;
        for item in items {
            let bullet = items.len() > 1 || item.starts_with("• ");
            let body = item.strip_prefix("• ").unwrap_or(item);
            let (lead, rest) = if bullet { ("• ", "  ") } else { ("", "") };
            for (i, l) in wrap(body, val_w.saturating_sub(lead.len()))
                .into_iter()
                .enumerate()
            {
                let k = if first {
                    clip(key, key_w)
                } else {
                    String::new()
                };
                first = false;
                out.push(Line::from(vec![
                    Span::styled(format!("{k:<key_w$}  "), key_style),
                    Span::styled(format!("{}{l}", if i == 0 { lead } else { rest }), *style),
                ]));
            }
        }
    }
    out
}

pub(super) fn artifact_lines(a: &Value, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let fg = theme.style(Role::Fg);
    let Value::Object(m) = a else {
        return wrap(&scalar(a), width)
            .into_iter()
            .map(|l| Line::styled(l, fg))
            .collect();
    };
    let rows: Vec<(String, Vec<String>, Style)> = m
        .iter()
        .map(|(k, v)| {
            let key = k.replace('_', " ");
            match v {
                Value::Array(items) if items.is_empty() => {
                    (key, vec!["none".to_string()], theme.style(Role::Dim))
                }
                Value::Array(items) => (
                    key,
                    items.iter().map(|i| format!("• {}", scalar(i))).collect(),
                    fg,
                ),
                other => (key, vec![scalar(other)], fg),
            }
        })
        .collect();
    table(&rows, width, theme)
}

/// The final pane: the run's mode and escalation, failed layers and notes, assumptions,
/// uncertainty and sources, then the answer.
pub(super) fn final_lines(run: &RunView, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let fg = theme.style(Role::Fg);
    let mut rows: Vec<(String, Vec<String>, Style)> = Vec::new();
    if let Some(m) = run.mode.or(run.fin.as_ref().and_then(|f| f.mode)) {
        rows.push(("mode".into(), vec![m.as_str().to_string()], fg));
    }
    if run.escalated() {
        let why = run
            .escalation
            .clone()
            .unwrap_or_else(|| "deep was not confident enough".to_string());
        rows.push((
            "escalated".into(),
            vec![format!("deep → ultra_deep: {why}")],
            theme.style(Role::Warning),
        ));
    }
    if let Some(fin) = &run.fin {
        let list = |items: &[String]| -> Vec<String> {
            items.iter().map(|i| format!("• {i}")).collect()
        };
        if !fin.failed_layers.is_empty() {
            let names = fin
                .failed_layers
                .iter()
                .map(|l| l.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            rows.push(("failed".into(), vec![names], theme.style(Role::Error)));
        }
        if !fin.notes.is_empty() {
            rows.push(("notes".into(), list(&fin.notes), theme.style(Role::Warning)));
        }
        if !fin.assumptions.is_empty() {
            rows.push(("assumes".into(), list(&fin.assumptions), fg));
        }
        if !fin.uncertainty_notes.is_empty() {
            rows.push(("uncertain".into(), list(&fin.uncertainty_notes), fg));
        }
        if !fin.sources.is_empty() {
            let sources = fin
                .sources
                .iter()
                .enumerate()
                .map(|(i, s)| format!("• [{}] {} — {}", i + 1, s.title, s.url))
                .collect();
            rows.push(("sources".into(), sources, theme.style(Role::Link)));
        }
    }
    let mut out = table(&rows, width, theme);
    match &run.answer {
        Some(a) => {
            if !out.is_empty() {
                out.push(Line::raw(""));
            }
            out.extend(
                wrap(a.trim(), width.max(8))
                    .into_iter()
                    .map(|l| Line::styled(l, theme.style(Role::Response))),
            );
        }
        None => out.push(Line::styled(
            "waiting for the last layer…",
            theme.style(Role::Dim),
        )),
    }
    out
}
