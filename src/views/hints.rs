//! Key hints the workspaces show, read from the keymap: a rebound key shows up in them, and
//! an unbound action drops out instead of advertising a key that does something else.

use crate::app::action::Action;
use crate::app::keymap::{Keymap, Mode};

/// One hint: the actions whose keys are shown (joined by "/") and what they do.
pub type Hint<'a> = (&'a [Action], &'a str);

/// The first displayed key of each action in `mode`, joined by "/" (" / " around chords);
/// `None` when one of them has no key there.
pub fn keys(keymap: &Keymap, mode: Mode, actions: &[Action]) -> Option<String> {
    let keys = actions
        .iter()
        .map(|a| keymap.keys_in_mode(mode, a).into_iter().next())
        .collect::<Option<Vec<String>>>()?;
    let sep = if keys.iter().any(|k| k.contains(' ')) {
        " / "
    } else {
        "/"
    };
    Some(keys.join(sep))
}

/// The hints on one line, `keys does · keys does`, leaving out those without keys.
pub fn line(keymap: &Keymap, mode: Mode, hints: &[Hint<'_>]) -> String {
    hints
        .iter()
        .filter_map(|(actions, does)| keys(keymap, mode, actions).map(|k| format!("{k} {does}")))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The hints as a table, one per line, the keys padded to one column.
pub fn table(keymap: &Keymap, mode: Mode, hints: &[Hint<'_>]) -> Vec<String> {
    pad(rows(keymap, mode, hints))
}

/// The (keys, what they do) rows of the hints that have keys in `mode`.
pub fn rows<'a>(keymap: &Keymap, mode: Mode, hints: &[Hint<'a>]) -> Vec<(String, &'a str)> {
    hints
        .iter()
        .filter_map(|(actions, does)| keys(keymap, mode, actions).map(|k| (k, *does)))
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
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::app::keymap::Section;

    #[test]
    fn hints_follow_the_keymap() {
        let builtin = Keymap::builtin();
        let fork = Mode::Workspace(Section::Fork);
        let hints: &[Hint<'_>] = &[
            (&[Action::NewFork], "fork"),
            (&[Action::PrevColumn, Action::NextColumn], "column"),
            (&[Action::NextError, Action::PrevError], "failing step"),
        ];
        // No verify keys in the Fork workspace: that hint is left out.
        assert_eq!(line(&builtin, fork, hints), "N fork · h/l column");
        assert_eq!(
            keys(
                &builtin,
                Mode::Workspace(Section::Verify),
                &[Action::NextError, Action::PrevError]
            )
            .unwrap(),
            "] e / [ e"
        );
        let mut rebound = Keymap::builtin();
        rebound
            .merge(
                std::path::Path::new("keymap.toml"),
                "[fork]\n\"n\" = \"new_fork\"\n\"N\" = \"none\"\n",
            )
            .unwrap();
        assert_eq!(
            table(&rebound, fork, &hints[..2]),
            ["n    fork", "h/l  column"]
        );
    }
}
