use super::*;

fn key(s: &str) -> Key {
    s.parse().unwrap()
}

#[test]
fn keys_display_as_parsed() {
    for text in [
        "ctrl-c",
        "alt-enter",
        "shift-enter",
        "esc",
        "enter",
        "tab",
        "backtab",
        "up",
        "pgup",
        "pgdn",
        "home",
        "end",
        "f1",
        "f12",
        "?",
        ":",
        "/",
        "[",
        "]",
        "G",
        "g",
        "space",
        "ctrl--",
        "-",
        "alt-1",
        "ctrl-right",
    ] {
        assert_eq!(key(text).to_string(), text);
    }
    assert_eq!(key("shift-g"), key("G"));
    assert_eq!(key("shift-tab"), key("backtab"));
    assert_eq!(key("Ctrl-Escape").to_string(), "ctrl-esc");
    assert_eq!(key("PageDown").to_string(), "pgdn");
}

#[test]
fn bad_keys_are_rejected() {
    for text in [
        "",
        "ctrl-",
        "f13",
        "f0",
        "bogus",
        "ctrl-ctrl-c",
        "shift-?",
        "hyper",
    ] {
        assert!(text.parse::<Key>().is_err(), "{text:?} parsed");
    }
    assert!("  ".parse::<KeySeq>().is_err());
    assert!("g nope".parse::<KeySeq>().is_err());
}

#[test]
fn crossterm_shift_is_normalised() {
    let shifted = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT);
    assert_eq!(Key::from_event(&shifted), key("G"));
    let lower_shifted = KeyEvent::new(KeyCode::Char('g'), KeyModifiers::SHIFT);
    assert_eq!(Key::from_event(&lower_shifted), key("G"));
    let question = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::SHIFT);
    assert_eq!(Key::from_event(&question), key("?"));
    let backtab = KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT);
    assert_eq!(Key::from_event(&backtab), key("backtab"));
    let shift_enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT);
    assert_eq!(Key::from_event(&shift_enter), key("shift-enter"));
}

#[test]
fn line_numbers_are_one_based() {
    assert_eq!(crate::toml_text::line_of("a\nb\nc", 0), 1);
    assert_eq!(crate::toml_text::line_of("a\nb\nc", 2), 2);
    assert_eq!(crate::toml_text::line_of("a\nb\nc", 99), 3);
}

#[test]
fn a_key_that_starts_a_chord_cannot_be_bound_alone() {
    let mut keymap = Keymap::builtin();
    let err = keymap
        .merge(Path::new("user.toml"), "[normal]\n\"g\" = \"top\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("user.toml:2:"), "{err}");
    assert!(err.contains("g g"), "{err}");
    // Unchanged after the error.
    assert_eq!(keymap.keys_for(&Action::Top), vec!["g g", "home"]);
}

#[test]
fn printable_keys_are_refused_outside_normal() {
    let mut keymap = Keymap::builtin();
    let err = keymap
        .merge(Path::new("k.toml"), "[input]\n\"x\" = \"submit\"\n")
        .unwrap_err();
    assert!(matches!(err, KeymapError::BadKey { line: 2, .. }), "{err}");
    assert!(
        keymap
            .merge(Path::new("k.toml"), "[input]\n\"ctrl-x\" = \"submit\"\n")
            .is_ok()
    );
}

#[test]
fn mode_section_wins_over_global() {
    let mut keymap = Keymap::builtin();
    keymap
        .merge(Path::new("k.toml"), "[input]\n\"esc\" = \"leave_input\"\n")
        .unwrap();
    let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
    let mut resolver = KeyResolver::new();
    assert_eq!(
        resolver.feed(&keymap, Mode::Input, esc),
        Resolution::Action(Action::LeaveInput)
    );
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, esc),
        Resolution::Action(Action::CancelRun)
    );
}

#[test]
fn workspace_section_wins_then_normal_then_global() {
    let keymap = Keymap::builtin();
    let press = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
    let mut r = KeyResolver::new();
    let fork = Mode::Workspace(Section::Workspace("fork"));
    let replay = Mode::Workspace(Section::Workspace("replay"));
    let named = |name: &str| Resolution::Action(Action::from_name(name).unwrap());
    // The same key means different things in different workspaces…
    assert_eq!(r.feed(&keymap, fork, press(' ')), named("toggle_mark"));
    assert_eq!(r.feed(&keymap, replay, press(' ')), named("play_pause"));
    assert_eq!(r.feed(&keymap, fork, press('l')), named("next_column"));
    assert_eq!(
        r.feed(&keymap, Mode::Normal, press('l')),
        Resolution::Action(Action::Expand)
    );
    // …[normal] still applies where the workspace does not bind the key, then [global].
    assert_eq!(
        r.feed(&keymap, fork, press('j')),
        Resolution::Action(Action::MoveDown)
    );
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(
        r.feed(&keymap, replay, ctrl_c),
        Resolution::Action(Action::Quit)
    );
    // A workspace's keys do not leak into the others.
    assert_eq!(
        r.feed(&keymap, Mode::Normal, press(' ')),
        Resolution::Unbound(press(' '))
    );
}

#[test]
fn an_unknown_section_names_the_real_ones() {
    let err = Keymap::builtin()
        .merge(Path::new("k.toml"), "[forkk]\n\"z\" = \"debate\"\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "k.toml:1: unknown section [forkk] (expected one of: global, input, normal, fork, \
         got, verify, insights, replay, memory, pipeline, research, diff)"
    );
}

#[test]
fn plain_keys_are_allowed_in_workspace_sections() {
    let mut keymap = Keymap::builtin();
    keymap
        .merge(Path::new("k.toml"), "[got]\n\"z\" = \"pin_thought\"\n")
        .unwrap();
    let mut r = KeyResolver::new();
    assert_eq!(
        r.feed(
            &keymap,
            Mode::Workspace(Section::Workspace("got")),
            KeyEvent::new(KeyCode::Char('z'), KeyModifiers::NONE)
        ),
        Resolution::Action(Action::from_name("pin_thought").unwrap())
    );
    let err = keymap
        .merge(Path::new("k.toml"), "[fork]\n\"g\" = \"debate\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("g g"), "{err}");
}

#[test]
fn every_binding_has_a_help_row() {
    let keymap = Keymap::builtin();
    let rows: usize = help_sections(&keymap).iter().map(|s| s.rows.len()).sum();
    let mut distinct = 0;
    for section in Section::all() {
        let mut seen: Vec<&Action> = Vec::new();
        for (_, a) in keymap.bindings(section) {
            if !seen.contains(&a) {
                seen.push(a);
            }
        }
        distinct += seen.len();
    }
    assert_eq!(rows, distinct);
}

#[test]
fn mode_keys_answer_by_action_name() {
    use crate::views::Keys;
    let keymap = Keymap::builtin();
    let normal = ModeKeys {
        keymap: &keymap,
        mode: Mode::Normal,
    };
    assert_eq!(normal.keys("top"), vec!["g g", "home"]);
    assert!(normal.keys("no_such_action").is_empty());
    let fork = ModeKeys {
        keymap: &keymap,
        mode: Mode::Workspace(Section::Workspace("fork")),
    };
    assert_eq!(fork.keys("toggle_mark"), vec!["space"]);
    assert!(normal.keys("toggle_mark").is_empty());
}
