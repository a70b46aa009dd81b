//! Key hints the workspaces show, read from the keymap in use (through [`Keys`]): a rebound
//! key shows up in them, and an unbound action drops out instead of advertising a key that
//! does something else.

use super::Keys;

/// One hint: the actions (by keymap name) whose keys are shown, joined by "/", and what
/// they do.
pub type Hint<'a> = (&'a [&'a str], &'a str);

/// The first displayed key of each action, joined by "/" (" / " around chords); `None` when
/// one of them has no key.
pub fn keys(keys: &dyn Keys, actions: &[&str]) -> Option<String> {
    let found = actions
        .iter()
        .map(|a| keys.keys(a).into_iter().next())
        .collect::<Option<Vec<String>>>()?;
    let sep = if found.iter().any(|k| k.contains(' ')) {
        " / "
    } else {
        "/"
    };
    Some(found.join(sep))
}

/// The hints on one line, `keys does · keys does`, leaving out those without keys.
pub fn line(k: &dyn Keys, hints: &[Hint<'_>]) -> String {
    hints
        .iter()
        .filter_map(|(actions, does)| keys(k, actions).map(|k| format!("{k} {does}")))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The hints as a table, one per line, the keys padded to one column.
pub fn table(k: &dyn Keys, hints: &[Hint<'_>]) -> Vec<String> {
    pad(rows(k, hints))
}

/// The (keys, what they do) rows of the hints that have keys.
pub fn rows<'a>(k: &dyn Keys, hints: &[Hint<'a>]) -> Vec<(String, &'a str)> {
    hints
        .iter()
        .filter_map(|(actions, does)| keys(k, actions).map(|k| (k, *does)))
        .collect()
}

/// Rows as table lines, the keys padded to one column.
pub fn pad(rows: Vec<(String, &str)>) -> Vec<String> {
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    rows.into_iter()
        .map(|(k, does)| format!("{k:width$}  {does}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(&'static [(&'static str, &'static str)]);

    impl Keys for Fixed {
        fn keys(&self, action: &str) -> Vec<String> {
            self.0
                .iter()
                .filter(|(a, _)| *a == action)
                .map(|(_, k)| k.to_string())
                .collect()
        }
    }

    #[test]
    fn hints_leave_out_actions_without_keys() {
        let keys_in_use = Fixed(&[
            ("new_fork", "N"),
            ("prev_column", "h"),
            ("next_column", "l"),
            ("next_error", "] e"),
            ("prev_error", "[ e"),
        ]);
        let hints: &[Hint<'_>] = &[
            (&["new_fork"], "fork"),
            (&["prev_column", "next_column"], "column"),
            (&["debate"], "debate"),
        ];
        assert_eq!(line(&keys_in_use, hints), "N fork · h/l column");
        assert_eq!(
            keys(&keys_in_use, &["next_error", "prev_error"]).as_deref(),
            Some("] e / [ e")
        );
        assert_eq!(
            table(&keys_in_use, &hints[..2]),
            ["N    fork", "h/l  column"]
        );
    }
}
