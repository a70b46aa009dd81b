//! Session titles: where an imported session's title comes from (a custom title, a summary,
//! the first real prompt, the slug), and renaming, which no later import undoes.

use serde_json::json;

use super::TranscriptError;
use crate::store::{Session, SessionId, Store};

/// Gives session `id` the title `title` (trimmed to one line) as the person's own: a
/// re-import of its transcript keeps it. The renamed session, or `None` when there is none.
pub fn rename(
    store: &Store,
    id: SessionId,
    title: &str,
) -> Result<Option<Session>, TranscriptError> {
    let title = title_excerpt(title);
    Ok(store.write(|w| {
        let Some(mut s) = w.session(id)? else {
            return Ok(None);
        };
        s.title = title.clone();
        s.meta.insert("title_source".into(), json!(USER));
        s.updated_at = chrono::Utc::now();
        w.put_session(&s)?;
        Ok(Some(s))
    })?)
}

/// The first line of `text`, at most 80 characters.
fn title_excerpt(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("untitled");
    let mut t: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        t.push('…');
    }
    t
}

/// Where an imported session's title came from, weakest first: a title from a stronger
/// source is never replaced by one from a weaker.
const TITLE_SOURCES: [&str; 6] = ["none", "slug", "prompt", "summary", "custom_title", USER];

/// `meta.title_source` of a title the person set (`sessions rename`, the TUI's rename): no
/// import replaces it.
pub const USER: &str = "user";

fn title_rank(source: &str) -> usize {
    TITLE_SOURCES.iter().position(|s| *s == source).unwrap_or(0)
}

/// Sets the title from the best source known (a title the person set stays): a `custom-title` line, else the newest
/// `summary` line, else the first prompt the person typed (a slash command as Claude Code
/// shows it; never a system payload), else the session's slug, else its Claude session id.
/// `meta.title_source` records which; a title that predates it counts as a prompt's.
pub(super) fn set_title(
    s: &mut Session,
    custom: Option<String>,
    summary: Option<String>,
    first_query: Option<&str>,
    slug: Option<String>,
) {
    let current = match s.meta.get("title_source").and_then(|v| v.as_str()) {
        Some(src) => title_rank(src),
        None if s.title.trim().is_empty() => 0,
        None => title_rank("prompt"),
    };
    let offered = [
        ("custom_title", custom),
        ("summary", summary),
        ("prompt", first_query.map(str::to_string)),
        ("slug", slug),
    ];
    for (source, text) in offered {
        let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        let rank = title_rank(source);
        // The same rank replaces for custom titles and summaries (the newest wins) but not
        // for prompts (the first wins).
        if rank > current || (rank == current && rank >= title_rank("summary")) {
            s.title = title_excerpt(&text);
            s.meta.insert("title_source".into(), json!(source));
        }
        break;
    }
    if s.title.trim().is_empty() {
        let claude = s
            .meta
            .get("claude_session_id")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        s.title = if claude.is_empty() {
            "untitled Claude Code session".into()
        } else {
            format!(
                "Claude Code session {}",
                claude.chars().take(8).collect::<String>()
            )
        };
        s.meta.insert("title_source".into(), json!("none"));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::store::SessionSource;

    #[test]
    fn a_title_the_person_set_outranks_every_imported_one() {
        let mut s = Session::new("", SessionSource::ClaudeCode);
        set_title(
            &mut s,
            None,
            None,
            Some("first prompt"),
            Some("slug".into()),
        );
        assert_eq!(s.title, "first prompt");
        set_title(&mut s, None, Some("a summary".into()), None, None);
        assert_eq!(s.title, "a summary");
        s.title = "mine".into();
        s.meta.insert("title_source".into(), json!(USER));
        set_title(
            &mut s,
            Some("custom".into()),
            Some("newer summary".into()),
            None,
            None,
        );
        assert_eq!(s.title, "mine");
        assert_eq!(s.meta["title_source"], USER);
    }

    #[test]
    fn rename_keeps_one_line_and_marks_the_title_as_the_users() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
        let s = Session::new("old", SessionSource::ClaudeCode);
        store.write(|w| w.put_session(&s)).unwrap();
        let renamed = rename(&store, s.id, "  new name\nsecond line")
            .unwrap()
            .unwrap();
        assert_eq!(renamed.title, "new name");
        let stored = store.session(s.id).unwrap().unwrap();
        assert_eq!(stored.title, "new name");
        assert_eq!(stored.meta["title_source"], USER);
        assert!(rename(&store, SessionId::new(), "x").unwrap().is_none());
    }
}
