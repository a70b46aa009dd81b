//! The sessions list as the Sessions workspace and the Think sidebar draw it: sessions grouped
//! by project under a header that folds, the filter matching project names and titles.

use std::collections::HashSet;

use crate::app::update::fuzzy_scores;
use crate::views::sessions::{ListRow, SessionRow};

/// The name a session's group goes by (`""` for sessions without a project).
pub fn group_key(r: &SessionRow) -> &str {
    r.project.as_deref().unwrap_or("")
}

/// The rows for `sessions` (newest first) under `query`: every session when the query is
/// empty, else those whose project or title match, best first. Groups come in the order of
/// their first session; a folded group (in `collapsed`) shows its header only, with the
/// number of its sessions that match. A list of one group has no headers.
pub fn rows(sessions: &[SessionRow], query: &str, collapsed: &HashSet<String>) -> Vec<ListRow> {
    let query = query.trim();
    let order: Vec<usize> = if query.is_empty() {
        (0..sessions.len()).collect()
    } else {
        let texts: Vec<String> = sessions
            .iter()
            .map(|s| format!("{} {}", group_key(s), s.title))
            .collect();
        let mut scored: Vec<(u32, usize)> =
            fuzzy_scores(query, texts.iter().map(String::as_str)).collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().map(|(_, i)| i).collect()
    };
    let all_groups: HashSet<&str> = sessions.iter().map(group_key).collect();
    if all_groups.len() <= 1 {
        return order.into_iter().map(ListRow::Session).collect();
    }
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for i in order {
        let key = group_key(&sessions[i]);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    let mut out = Vec::with_capacity(sessions.len() + groups.len());
    for (key, members) in groups {
        let folded = collapsed.contains(key);
        out.push(ListRow::Group {
            project: (!key.is_empty()).then(|| key.to_string()),
            sessions: members.len(),
            collapsed: folded,
        });
        if !folded {
            out.extend(members.into_iter().map(ListRow::Session));
        }
    }
    out
}

/// The group of the row at `at`: a header's own, or the session's.
pub fn group_at(rows: &[ListRow], sessions: &[SessionRow], at: usize) -> Option<String> {
    match rows.get(at)? {
        ListRow::Group { project, .. } => Some(project.clone().unwrap_or_default()),
        ListRow::Session(i) => sessions.get(*i).map(|s| group_key(s).to_string()),
    }
}

/// Where the header of group `key` is in `rows`.
pub fn header_of(rows: &[ListRow], key: &str) -> Option<usize> {
    rows.iter().position(|r| match r {
        ListRow::Group { project, .. } => project.as_deref().unwrap_or("") == key,
        ListRow::Session(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SessionId;

    fn row(title: &str, project: Option<&str>) -> SessionRow {
        SessionRow {
            id: SessionId::new(),
            title: title.into(),
            unfinished: false,
            created: "06-01 10:00".into(),
            source: "claude_code",
            project: project.map(str::to_string),
        }
    }

    fn sessions() -> Vec<SessionRow> {
        vec![
            row("login form", Some("web")),
            row("float rounding", Some("calc")),
            row("signup page", Some("web")),
            row("a question", None),
        ]
    }

    #[test]
    fn sessions_group_by_project_in_the_order_of_their_newest() {
        let s = sessions();
        let r = rows(&s, "", &HashSet::new());
        let group = |p: Option<&str>, n| ListRow::Group {
            project: p.map(str::to_string),
            sessions: n,
            collapsed: false,
        };
        assert_eq!(
            r,
            vec![
                group(Some("web"), 2),
                ListRow::Session(0),
                ListRow::Session(2),
                group(Some("calc"), 1),
                ListRow::Session(1),
                group(None, 1),
                ListRow::Session(3),
            ]
        );
        assert_eq!(group_at(&r, &s, 2).as_deref(), Some("web"));
        assert_eq!(group_at(&r, &s, 5).as_deref(), Some(""));
        assert_eq!(header_of(&r, "calc"), Some(3));
    }

    #[test]
    fn a_folded_group_shows_its_header_only() {
        let s = sessions();
        let folded: HashSet<String> = ["web".to_string()].into();
        let r = rows(&s, "", &folded);
        assert_eq!(r.len(), 5);
        assert!(matches!(
            r[0],
            ListRow::Group {
                sessions: 2,
                collapsed: true,
                ..
            }
        ));
        // The filter matches the project name too.
        let r = rows(&s, "web", &HashSet::new());
        assert_eq!(r.len(), 3, "{r:?}");
        assert!(r.contains(&ListRow::Session(0)) && r.contains(&ListRow::Session(2)));
        // A folded group stays folded under a query, counting its matches.
        let r = rows(&s, "signup", &folded);
        assert_eq!(
            r,
            vec![ListRow::Group {
                project: Some("web".into()),
                sessions: 1,
                collapsed: true
            }]
        );
        let r = rows(&s, "rounding", &folded);
        assert!(r.contains(&ListRow::Session(1)) && !r.contains(&ListRow::Session(0)));
    }

    #[test]
    fn one_group_needs_no_header() {
        let s = vec![row("a", None), row("b", None)];
        assert_eq!(
            rows(&s, "", &HashSet::new()),
            vec![ListRow::Session(0), ListRow::Session(1)]
        );
    }
}
