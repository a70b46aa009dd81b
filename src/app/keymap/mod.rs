//! Key bindings: the embedded `configs/keymap.toml` merged key by key with the user's
//! `<config dir>/keymap.toml`, and a resolver turning key presses (and chords) into actions.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use toml::de::{DeTable, DeValue};

use super::action::Action;
pub use super::action::Section;
use crate::views::help::{HelpRow, HelpSection};
use crate::views::palette::PaletteItem;

/// The built-in bindings, embedded from `configs/keymap.toml`.
pub const DEFAULT_KEYMAP: &str = include_str!("../../../configs/keymap.toml");

/// Name of the user keymap inside the config dir.
pub const KEYMAP_FILE_NAME: &str = "keymap.toml";

/// How the embedded keymap is named in error messages.
const BUILTIN_PATH: &str = "<built-in> configs/keymap.toml";

/// The value that removes a binding in a user keymap.
const UNBIND: &str = "none";

/// A problem with a keymap file; every variant names the file, most also the line.
#[derive(Debug, thiserror::Error)]
pub enum KeymapError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}:{line}: unknown section [{name}] (expected one of: {})", path.display(), section_names())]
    UnknownSection {
        path: PathBuf,
        line: usize,
        name: String,
    },
    #[error("{}:{line}: unknown action `{name}` (use \"none\" to unbind)", path.display())]
    UnknownAction {
        path: PathBuf,
        line: usize,
        name: String,
    },
    #[error("{}:{line}: bad key `{text}`: {reason}", path.display())]
    BadKey {
        path: PathBuf,
        line: usize,
        text: String,
        reason: String,
    },
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// Which part of the UI has focus; picks the keymap section used besides `[global]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The question box: printable keys are typed.
    Input,
    /// A pane.
    Normal,
    /// A pane of a workspace with its own section (`[fork]`, `[got]`, …): that section wins,
    /// then `[normal]`, then `[global]`.
    Workspace(Section),
}

impl Mode {
    /// The keymap section of this mode.
    pub fn section(self) -> Section {
        match self {
            Mode::Input => Section::Input,
            Mode::Normal => Section::Normal,
            Mode::Workspace(section) => section,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------

/// One key press, normalised so that a parsed `G` equals crossterm's `Shift+G` and a parsed
/// `backtab` equals `Shift+BackTab`: characters never carry SHIFT (it is in the character).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    code: KeyCode,
    modifiers: KeyModifiers,
}

/// Modifier prefixes in key syntax, in display order.
const MODIFIER_NAMES: &[(&str, KeyModifiers)] = &[
    ("ctrl", KeyModifiers::CONTROL),
    ("alt", KeyModifiers::ALT),
    ("shift", KeyModifiers::SHIFT),
    ("super", KeyModifiers::SUPER),
    ("hyper", KeyModifiers::HYPER),
    ("meta", KeyModifiers::META),
];

/// Named keys in key syntax; the first name of a code is the one displayed.
const KEY_NAMES: &[(&str, KeyCode)] = &[
    ("esc", KeyCode::Esc),
    ("escape", KeyCode::Esc),
    ("enter", KeyCode::Enter),
    ("return", KeyCode::Enter),
    ("tab", KeyCode::Tab),
    ("backtab", KeyCode::BackTab),
    ("space", KeyCode::Char(' ')),
    ("backspace", KeyCode::Backspace),
    ("delete", KeyCode::Delete),
    ("del", KeyCode::Delete),
    ("insert", KeyCode::Insert),
    ("ins", KeyCode::Insert),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
    ("pgup", KeyCode::PageUp),
    ("pageup", KeyCode::PageUp),
    ("pgdn", KeyCode::PageDown),
    ("pagedown", KeyCode::PageDown),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
];

impl Key {
    /// A key from a code and modifiers, normalised (see [`Key`]).
    pub fn new(code: KeyCode, modifiers: KeyModifiers) -> Key {
        let shift = modifiers.contains(KeyModifiers::SHIFT);
        let mut modifiers = modifiers;
        let code = match code {
            KeyCode::Char(c) => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::Char(if shift { single_uppercase(c) } else { c })
            }
            KeyCode::BackTab => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            KeyCode::Tab if shift => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        Key { code, modifiers }
    }

    /// The key of a crossterm key event (its kind and state are ignored).
    pub fn from_event(event: &KeyEvent) -> Key {
        Key::new(event.code, event.modifiers)
    }

    /// The key code.
    pub fn code(&self) -> KeyCode {
        self.code
    }

    /// The modifiers (never SHIFT for a character).
    pub fn modifiers(&self) -> KeyModifiers {
        self.modifiers
    }

    /// Whether the key types a character into a text box (a character without ctrl/alt/…).
    pub fn is_printable(&self) -> bool {
        matches!(self.code, KeyCode::Char(_)) && self.modifiers.is_empty()
    }
}

/// `c` upper-cased when that is a single character, else `c`.
fn single_uppercase(c: char) -> char {
    let mut upper = c.to_uppercase();
    match (upper.next(), upper.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

impl FromStr for Key {
    type Err = String;

    /// Parses `ctrl-c`, `alt-enter`, `shift-enter`, `f1`, `G`, `?`, `space`, ….
    fn from_str(text: &str) -> Result<Key, String> {
        let mut rest = text;
        let mut modifiers = KeyModifiers::NONE;
        'prefixes: while rest.chars().count() > 1 {
            for (name, modifier) in MODIFIER_NAMES {
                let Some(head) = rest.get(..name.len() + 1) else {
                    continue;
                };
                if head.eq_ignore_ascii_case(&format!("{name}-")) {
                    if modifiers.contains(*modifier) {
                        return Err(format!("`{name}` is given twice"));
                    }
                    modifiers |= *modifier;
                    rest = &rest[name.len() + 1..];
                    continue 'prefixes;
                }
            }
            break;
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (None, _) => return Err("no key after the modifiers".to_string()),
            (Some(c), None) if c.is_whitespace() || c.is_control() => {
                return Err("write whitespace and control keys by name (`space`)".to_string());
            }
            (Some(c), None) => {
                if modifiers.contains(KeyModifiers::SHIFT) && !c.is_alphabetic() {
                    return Err(format!(
                        "`shift-` only goes with letters and named keys; write the character itself instead of shift-{c}"
                    ));
                }
                KeyCode::Char(c)
            }
            _ => named_key(rest).ok_or_else(|| {
                "expected a single character, a named key (esc, enter, tab, backtab, space, up, \
                 pgup, home, f1, …) and optional ctrl-/alt-/shift- prefixes"
                    .to_string()
            })?,
        };
        Ok(Key::new(code, modifiers))
    }
}

/// The code of a named key (case-insensitive), including `f1` … `f12`.
fn named_key(name: &str) -> Option<KeyCode> {
    let lower = name.to_ascii_lowercase();
    if let Some(code) = KEY_NAMES.iter().find(|(n, _)| *n == lower).map(|(_, c)| *c) {
        return Some(code);
    }
    let number: u8 = lower.strip_prefix('f')?.parse().ok()?;
    (1..=12).contains(&number).then_some(KeyCode::F(number))
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, modifier) in MODIFIER_NAMES {
            if self.modifiers.contains(*modifier) {
                write!(f, "{name}-")?;
            }
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::F(n) => write!(f, "f{n}"),
            code => match KEY_NAMES.iter().find(|(_, c)| *c == code) {
                Some((name, _)) => f.write_str(name),
                None => write!(f, "{}", format!("{code:?}").to_lowercase()),
            },
        }
    }
}

/// A key or a chord: keys pressed one after the other (`g g`, `] d`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeySeq(Vec<Key>);

impl KeySeq {
    /// The keys, in order; never empty.
    pub fn keys(&self) -> &[Key] {
        &self.0
    }
}

impl FromStr for KeySeq {
    type Err = String;

    /// Parses space-separated keys.
    fn from_str(text: &str) -> Result<KeySeq, String> {
        let keys = text
            .split_whitespace()
            .map(|part| part.parse::<Key>().map_err(|e| format!("`{part}`: {e}")))
            .collect::<Result<Vec<Key>, String>>()?;
        if keys.is_empty() {
            return Err("no key given".to_string());
        }
        Ok(KeySeq(keys))
    }
}

impl fmt::Display for KeySeq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&join_keys(&self.0))
    }
}

/// Keys as displayed in a chord: separated by spaces.
fn join_keys(keys: &[Key]) -> String {
    keys.iter()
        .map(Key::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------------------
// Keymap
// ---------------------------------------------------------------------------------------

/// Where a binding was defined, for error messages.
#[derive(Clone, Debug)]
struct Origin {
    path: PathBuf,
    line: usize,
}

#[derive(Clone, Debug)]
struct Binding {
    keys: KeySeq,
    action: Action,
    origin: Origin,
}

/// One entry of a keymap file: a key bound to an action, or unbound (`None`).
struct Entry {
    section: Section,
    keys: KeySeq,
    action: Option<Action>,
    origin: Origin,
}

/// The bindings of each section, in file order (built-in first, then the user's additions).
#[derive(Clone, Debug)]
pub struct Keymap {
    sections: Vec<(Section, Vec<Binding>)>,
}

/// The section names a keymap file may use, for error messages.
fn section_names() -> String {
    Section::all()
        .into_iter()
        .map(Section::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every mode, for checks over all of them.
fn all_modes() -> impl Iterator<Item = Mode> {
    [Mode::Input, Mode::Normal].into_iter().chain(
        Section::all()
            .into_iter()
            .filter(|s| matches!(s, Section::Workspace(_)))
            .map(Mode::Workspace),
    )
}

impl Default for Keymap {
    fn default() -> Self {
        Self {
            sections: Section::all()
                .into_iter()
                .map(|s| (s, Vec::new()))
                .collect(),
        }
    }
}

impl Keymap {
    /// The built-in bindings merged with `<config_dir>/keymap.toml` if that file exists.
    pub fn load(config_dir: &Path) -> Result<Keymap, KeymapError> {
        let mut keymap = Keymap::parse_builtin()?;
        let path = config_dir.join(KEYMAP_FILE_NAME);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(keymap),
            Err(source) => return Err(KeymapError::Read { path, source }),
        };
        keymap.merge(&path, &text)?;
        Ok(keymap)
    }

    /// The built-in bindings. The embedded file is checked by the tests; were it ever
    /// broken, this would be an empty keymap rather than a crash.
    pub fn builtin() -> Keymap {
        Keymap::parse_builtin().unwrap_or_default()
    }

    /// The built-in bindings, or the error in the embedded file.
    pub fn parse_builtin() -> Result<Keymap, KeymapError> {
        let mut keymap = Keymap::default();
        keymap.merge(Path::new(BUILTIN_PATH), DEFAULT_KEYMAP)?;
        Ok(keymap)
    }

    /// Merges the keymap file `text` (read from `path`, used in errors) over these bindings,
    /// key by key; `"none"` removes a binding. On error the keymap is unchanged.
    pub fn merge(&mut self, path: &Path, text: &str) -> Result<(), KeymapError> {
        let entries = parse_entries(path, text)?;
        let mut merged = self.clone();
        for entry in entries {
            let list = merged.section_mut(entry.section);
            match entry.action {
                None => list.retain(|b| b.keys != entry.keys),
                Some(action) => match list.iter_mut().find(|b| b.keys == entry.keys) {
                    Some(existing) => {
                        existing.action = action;
                        existing.origin = entry.origin;
                    }
                    None => list.push(Binding {
                        keys: entry.keys,
                        action,
                        origin: entry.origin,
                    }),
                },
            }
        }
        merged.check_chords(path)?;
        *self = merged;
        Ok(())
    }

    /// Rejects a key that is bound on its own and also starts a chord: without a timeout
    /// the chord could never be reached.
    fn check_chords(&self, newest: &Path) -> Result<(), KeymapError> {
        for mode in all_modes() {
            let effective: Vec<&Binding> = self.effective(mode).collect();
            for short in &effective {
                for long in &effective {
                    let (s, l) = (short.keys.keys(), long.keys.keys());
                    if l.len() > s.len() && l.starts_with(s) {
                        let at = if long.origin.path == newest {
                            &long.origin
                        } else {
                            &short.origin
                        };
                        return Err(KeymapError::Invalid {
                            path: at.path.clone(),
                            line: at.line,
                            message: format!(
                                "`{}` is bound and also starts the chord `{}`; unbind one with \"none\"",
                                short.keys, long.keys
                            ),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    fn section(&self, section: Section) -> &[Binding] {
        self.sections
            .iter()
            .find(|(s, _)| *s == section)
            .map_or(&[], |(_, list)| list.as_slice())
    }

    fn section_mut(&mut self, section: Section) -> &mut Vec<Binding> {
        let at = match self.sections.iter().position(|(s, _)| *s == section) {
            Some(at) => at,
            None => {
                self.sections.push((section, Vec::new()));
                self.sections.len() - 1
            }
        };
        &mut self.sections[at].1
    }

    /// The bindings of one section, in order.
    pub fn bindings(&self, section: Section) -> impl Iterator<Item = (&KeySeq, &Action)> {
        self.section(section).iter().map(|b| (&b.keys, &b.action))
    }

    /// The keys bound to `action` in any section, as displayed (`"g g"`, `"ctrl-c"`):
    /// `[global]` first, then `[input]`, then `[normal]`.
    pub fn keys_for(&self, action: &Action) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for section in Section::all() {
            for key in self.keys_in(section, action) {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
        keys
    }

    /// The keys bound to `action` in one section, as displayed.
    pub fn keys_in(&self, section: Section, action: &Action) -> Vec<String> {
        self.bindings(section)
            .filter(|(_, a)| *a == action)
            .map(|(keys, _)| keys.to_string())
            .collect()
    }

    /// The keys that run `action` in `mode`, as displayed, most specific section first;
    /// keys hidden by another binding in a more specific section are left out.
    pub fn keys_in_mode(&self, mode: Mode, action: &Action) -> Vec<String> {
        self.effective(mode)
            .filter(|b| b.action == *action)
            .map(|b| b.keys.to_string())
            .collect()
    }

    /// The bindings that apply in `mode`, most specific first: a workspace's own section,
    /// then `[normal]` (for workspace modes), then `[global]`; a key bound in a more specific
    /// section hides the same key below it.
    fn effective(&self, mode: Mode) -> impl Iterator<Item = &Binding> {
        let mut layers: Vec<&[Binding]> = vec![self.section(mode.section())];
        if matches!(mode, Mode::Workspace(_)) {
            layers.push(self.section(Section::Normal));
        }
        layers.push(self.section(Section::Global));
        let mut out: Vec<&Binding> = Vec::new();
        for layer in layers {
            for b in layer {
                if out.iter().all(|o| o.keys != b.keys) {
                    out.push(b);
                }
            }
        }
        out.into_iter()
    }
}

/// The entries of a keymap file in file order, each checked.
fn parse_entries(path: &Path, text: &str) -> Result<Vec<Entry>, KeymapError> {
    let line = |offset: usize| crate::toml_text::line_of(text, offset);
    let root = DeTable::parse(text).map_err(|e| KeymapError::Syntax {
        path: path.to_path_buf(),
        line: e.span().map_or(1, |s| line(s.start)),
        message: e.message().trim().to_string(),
    })?;
    let invalid = |offset: usize, message: String| KeymapError::Invalid {
        path: path.to_path_buf(),
        line: line(offset),
        message,
    };

    let mut sections: Vec<_> = root.get_ref().iter().collect();
    sections.sort_by_key(|(name, _)| name.span().start);
    let mut entries = Vec::new();
    for (name, table) in sections {
        let Some(section) = Section::from_name(name.get_ref()) else {
            return Err(KeymapError::UnknownSection {
                path: path.to_path_buf(),
                line: line(name.span().start),
                name: name.get_ref().to_string(),
            });
        };
        let DeValue::Table(table) = table.get_ref() else {
            return Err(invalid(
                name.span().start,
                format!(
                    "`{}` must be a table of \"key\" = \"action\"",
                    name.get_ref()
                ),
            ));
        };
        let mut rows: Vec<_> = table.iter().collect();
        rows.sort_by_key(|(key, _)| key.span().start);
        for (key_text, value) in rows {
            let key_line = line(key_text.span().start);
            let keys: KeySeq =
                key_text
                    .get_ref()
                    .parse()
                    .map_err(|reason| KeymapError::BadKey {
                        path: path.to_path_buf(),
                        line: key_line,
                        text: key_text.get_ref().to_string(),
                        reason,
                    })?;
            if matches!(section, Section::Global | Section::Input) && keys.keys()[0].is_printable()
            {
                return Err(KeymapError::BadKey {
                    path: path.to_path_buf(),
                    line: key_line,
                    text: key_text.get_ref().to_string(),
                    reason: format!(
                        "a plain character in [{}] could no longer be typed in the question box; \
                         bind it in [normal] or a workspace section, or add ctrl- or alt-",
                        section.name()
                    ),
                });
            }
            let DeValue::String(name) = value.get_ref() else {
                return Err(invalid(
                    value.span().start,
                    format!(
                        "the value of \"{}\" must be an action name or \"none\"",
                        key_text.get_ref()
                    ),
                ));
            };
            let action = if name.as_ref() == UNBIND {
                None
            } else {
                Some(
                    Action::from_name(name).ok_or_else(|| KeymapError::UnknownAction {
                        path: path.to_path_buf(),
                        line: line(value.span().start),
                        name: name.to_string(),
                    })?,
                )
            };
            entries.push(Entry {
                section,
                keys,
                action,
                origin: Origin {
                    path: path.to_path_buf(),
                    line: key_line,
                },
            });
        }
    }
    Ok(entries)
}

// ---------------------------------------------------------------------------------------
// Resolving key presses
// ---------------------------------------------------------------------------------------

/// What a key press means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// The keys pressed so far are bound to this action.
    Action(Action),
    /// The keys pressed so far start one or more chords; `hints` are the remaining keys of
    /// each and its action (for a which-key popup).
    Pending {
        prefix: String,
        hints: Vec<(String, Action)>,
    },
    /// Not bound: in the question box a character to type. A key that does not continue a
    /// pending chord also ends up here (and the chord is dropped).
    Unbound(KeyEvent),
}

/// Turns key presses into actions, keeping the keys of a chord in progress.
#[derive(Clone, Debug, Default)]
pub struct KeyResolver {
    pending: Vec<Key>,
}

impl KeyResolver {
    /// A resolver with no chord in progress.
    pub fn new() -> KeyResolver {
        KeyResolver::default()
    }

    /// Resolves one key press in `mode` (`[global]` bindings apply in both modes; the
    /// mode's own section wins). Feed only press and repeat events, not releases.
    pub fn feed(&mut self, keymap: &Keymap, mode: Mode, key: KeyEvent) -> Resolution {
        self.pending.push(Key::from_event(&key));
        let mut exact = None;
        let mut hints = Vec::new();
        for binding in keymap.effective(mode) {
            let keys = binding.keys.keys();
            if keys == self.pending.as_slice() {
                exact.get_or_insert_with(|| binding.action.clone());
            } else if keys.len() > self.pending.len() && keys.starts_with(&self.pending) {
                hints.push((
                    join_keys(&keys[self.pending.len()..]),
                    binding.action.clone(),
                ));
            }
        }
        if let Some(action) = exact {
            self.pending.clear();
            return Resolution::Action(action);
        }
        if !hints.is_empty() {
            return Resolution::Pending {
                prefix: join_keys(&self.pending),
                hints,
            };
        }
        self.pending.clear();
        Resolution::Unbound(key)
    }

    /// Drops a chord in progress.
    pub fn reset(&mut self) {
        self.pending.clear();
    }

    /// Whether a chord is in progress.
    pub fn is_pending(&self) -> bool {
        !self.pending.is_empty()
    }
}

// ---------------------------------------------------------------------------------------
// What the views are shown of the keymap
// ---------------------------------------------------------------------------------------

/// The keys of one mode, as the views ask for them (by action name): the hints a workspace
/// shows follow the keymap in use without the view seeing it.
#[derive(Clone, Copy, Debug)]
pub struct ModeKeys<'a> {
    pub keymap: &'a Keymap,
    pub mode: Mode,
}

impl crate::views::Keys for ModeKeys<'_> {
    fn keys(&self, action: &str) -> Vec<String> {
        Action::from_name(action)
            .map(|a| self.keymap.keys_in_mode(self.mode, &a))
            .unwrap_or_default()
    }
}

/// Every section with the actions bound in it (in [`Action::all`] order) and their keys, for
/// the help overlay; sections without bindings are left out.
pub fn help_sections(keymap: &Keymap) -> Vec<HelpSection> {
    let actions = Action::all();
    Section::all()
        .into_iter()
        .map(|section| HelpSection {
            title: section.title().to_string(),
            name: section.name().to_string(),
            rows: actions
                .iter()
                .filter_map(|action| {
                    let keys = keymap.keys_in(section, action);
                    (!keys.is_empty()).then(|| HelpRow {
                        keys: keys.join(", "),
                        description: action.description().into_owned(),
                        name: action.name().into_owned(),
                    })
                })
                .collect(),
        })
        .filter(|s| !s.rows.is_empty())
        .collect()
}

/// The keys that may follow a pending chord, with what each does, for the which-key popup.
pub fn chord_hints(hints: &[(String, Action)]) -> Vec<(String, String)> {
    hints
        .iter()
        .map(|(keys, action)| (keys.clone(), action.description().into_owned()))
        .collect()
}

/// An action offered by the command palette: the action to run and how it is drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaletteMatch {
    pub action: Action,
    pub item: PaletteItem,
}

/// The actions matching the palette's `query` (fuzzy, on "`name` `description`"), best
/// first; ties, and every action for an empty query, keep the order of [`Action::all`].
pub fn palette_matches(query: &str, keymap: &Keymap) -> Vec<PaletteMatch> {
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let mut matcher = Matcher::new(Config::DEFAULT);
    let mut buf = Vec::new();
    let mut found: Vec<PaletteMatch> = Action::all()
        .into_iter()
        .filter_map(|action| {
            let name = action.name().into_owned();
            let description = action.description().into_owned();
            let text = format!("{name} {description}");
            let mut indices = Vec::new();
            let score =
                pattern.indices(Utf32Str::new(&text, &mut buf), &mut matcher, &mut indices)?;
            indices.sort_unstable();
            indices.dedup();
            let keys = keymap.keys_for(&action).join(", ");
            Some(PaletteMatch {
                action,
                item: PaletteItem {
                    name,
                    score,
                    keys,
                    description,
                    indices,
                },
            })
        })
        .collect();
    // A stable sort, so equal scores stay in `Action::all` order.
    found.sort_by_key(|m| std::cmp::Reverse(m.item.score));
    found
}

#[cfg(test)]
mod tests;
