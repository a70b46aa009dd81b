//! Keymap and theme loading, chord resolution, and snapshots of the help overlay, the
//! which-key popup and the command palette.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use glassbox::app::action::{Action, Section};
use glassbox::app::keymap::{
    self, KeyResolver, Keymap, KeymapError, Mode, Resolution, chord_hints, help_sections,
};
use glassbox::views::theme::{ColorDepth, Role, Theme, ThemeError, builtin_names};
use glassbox::views::{help, palette};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

fn press(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

/// A config dir holding `files` (relative path, contents).
fn config_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

// ---------------------------------------------------------------------------------------
// Keymap
// ---------------------------------------------------------------------------------------

#[test]
fn builtin_keymap_parses_and_binds_every_action() {
    let keymap = Keymap::parse_builtin().unwrap();
    for action in Action::all() {
        assert!(
            !keymap.keys_for(&action).is_empty(),
            "{} has no key",
            action.name()
        );
    }
    // builtin() is the same keymap.
    let builtin = Keymap::builtin();
    for section in Section::all() {
        assert_eq!(
            keymap.bindings(section).count(),
            builtin.bindings(section).count()
        );
    }
}

#[test]
fn builtin_keymap_has_the_documented_defaults() {
    let keymap = Keymap::builtin();
    assert_eq!(keymap.keys_for(&Action::Quit), vec!["ctrl-c", "q"]);
    assert_eq!(keymap.keys_for(&Action::Help), vec!["f1", "?"]);
    assert_eq!(keymap.keys_for(&Action::Palette), vec!["ctrl-p", ":"]);
    assert_eq!(keymap.keys_for(&Action::Top), vec!["g g", "home"]);
    assert_eq!(keymap.keys_for(&Action::Bottom), vec!["G", "end"]);
    assert_eq!(keymap.keys_for(&Action::NextDecision), vec!["] d"]);
    assert_eq!(keymap.keys_for(&Action::DeleteSession), vec!["d d"]);
    assert_eq!(
        keymap.keys_for(&Action::Newline),
        vec!["shift-enter", "alt-enter"]
    );
    assert_eq!(keymap.keys_for(&Action::FocusPrev), vec!["backtab"]);
    assert_eq!(
        keymap.keys_for(&Action::Workspace("think")),
        vec!["alt-1", "1"]
    );
    assert_eq!(
        keymap.keys_in(Section::Global, &Action::Quit),
        vec!["ctrl-c"]
    );
}

#[test]
fn a_missing_user_keymap_means_the_builtin_one() {
    let dir = config_dir(&[]);
    let keymap = Keymap::load(dir.path()).unwrap();
    assert_eq!(keymap.keys_for(&Action::MoveDown), vec!["j", "down"]);
}

#[test]
fn user_keymap_overrides_adds_and_unbinds() {
    let dir = config_dir(&[(
        "keymap.toml",
        "[normal]\n\"j\" = \"move_up\"\n\"x\" = \"delete_session\"\n\"d d\" = \"none\"\n\
         \n[global]\n\"ctrl-c\" = \"none\"\n\"ctrl-q\" = \"quit\"\n",
    )]);
    let keymap = Keymap::load(dir.path()).unwrap();
    assert_eq!(keymap.keys_for(&Action::MoveUp), vec!["k", "up", "j"]);
    assert_eq!(keymap.keys_for(&Action::MoveDown), vec!["down"]);
    assert_eq!(keymap.keys_for(&Action::DeleteSession), vec!["x"]);
    assert_eq!(keymap.keys_for(&Action::Quit), vec!["ctrl-q", "q"]);

    let mut resolver = KeyResolver::new();
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, press('d')),
        Resolution::Unbound(press('d'))
    );
    assert_eq!(
        resolver.feed(&keymap, Mode::Input, ctrl('c')),
        Resolution::Unbound(ctrl('c'))
    );
    assert_eq!(
        resolver.feed(&keymap, Mode::Input, ctrl('q')),
        Resolution::Action(Action::Quit)
    );
}

#[test]
fn unknown_action_is_an_error_with_file_and_line() {
    let dir = config_dir(&[(
        "keymap.toml",
        "# mine\n[normal]\n\"j\" = \"move_down\"\n\"z\" = \"fly_away\"\n",
    )]);
    let err = Keymap::load(dir.path()).unwrap_err();
    assert!(
        matches!(&err, KeymapError::UnknownAction { line: 4, name, .. } if name == "fly_away"),
        "{err:?}"
    );
    let message = err.to_string();
    let file = dir.path().join("keymap.toml");
    assert!(
        message.starts_with(&format!("{}:4:", file.display())),
        "{message}"
    );
    assert!(message.contains("fly_away"), "{message}");
}

#[test]
fn bad_key_is_an_error_with_file_and_line() {
    let dir = config_dir(&[("keymap.toml", "[normal]\n\n\"ctrl-banana\" = \"quit\"\n")]);
    let err = Keymap::load(dir.path()).unwrap_err();
    assert!(
        matches!(&err, KeymapError::BadKey { line: 3, text, .. } if text == "ctrl-banana"),
        "{err:?}"
    );
    assert!(err.to_string().contains("keymap.toml:3:"), "{err}");
}

#[test]
fn unknown_section_and_bad_syntax_are_errors() {
    let dir = config_dir(&[("keymap.toml", "[normal]\n\"j\" = \"move_down\"\n[visual]\n")]);
    let err = Keymap::load(dir.path()).unwrap_err();
    assert!(
        matches!(&err, KeymapError::UnknownSection { line: 3, .. }),
        "{err:?}"
    );
    let dir = config_dir(&[("keymap.toml", "[normal]\n\"j\" = \n")]);
    let err = Keymap::load(dir.path()).unwrap_err();
    assert!(
        matches!(&err, KeymapError::Syntax { line: 2, .. }),
        "{err:?}"
    );
    let dir = config_dir(&[("keymap.toml", "[normal]\n\"j\" = 3\n")]);
    let err = Keymap::load(dir.path()).unwrap_err();
    assert!(
        matches!(&err, KeymapError::Invalid { line: 2, .. }),
        "{err:?}"
    );
}

#[test]
fn chord_resolves_after_a_pending_hint() {
    let keymap = Keymap::builtin();
    let mut resolver = KeyResolver::new();
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, press('g')),
        Resolution::Pending {
            prefix: "g".to_string(),
            hints: vec![("g".to_string(), Action::Top)],
        }
    );
    assert!(resolver.is_pending());
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, press('g')),
        Resolution::Action(Action::Top)
    );
    assert!(!resolver.is_pending());

    // `]` then `d`.
    assert!(matches!(
        resolver.feed(&keymap, Mode::Normal, press(']')),
        Resolution::Pending { .. }
    ));
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, press('d')),
        Resolution::Action(Action::NextDecision)
    );
}

#[test]
fn an_unknown_second_key_resets_the_chord() {
    let keymap = Keymap::builtin();
    let mut resolver = KeyResolver::new();
    resolver.feed(&keymap, Mode::Normal, press('g'));
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, press('x')),
        Resolution::Unbound(press('x'))
    );
    assert!(!resolver.is_pending());
    // The next key starts afresh.
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, press('j')),
        Resolution::Action(Action::MoveDown)
    );

    resolver.feed(&keymap, Mode::Normal, press('d'));
    resolver.reset();
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, press('d')),
        Resolution::Pending {
            prefix: "d".to_string(),
            hints: vec![("d".to_string(), Action::DeleteSession)],
        }
    );
}

#[test]
fn input_mode_types_printable_keys_but_obeys_global_ones() {
    let keymap = Keymap::builtin();
    let mut resolver = KeyResolver::new();
    for c in ['q', 'g', 'j', '?', ':', 'G'] {
        assert_eq!(
            resolver.feed(&keymap, Mode::Input, press(c)),
            Resolution::Unbound(press(c)),
            "{c}"
        );
    }
    assert_eq!(
        resolver.feed(&keymap, Mode::Input, ctrl('c')),
        Resolution::Action(Action::Quit)
    );
    let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(
        resolver.feed(&keymap, Mode::Input, enter),
        Resolution::Action(Action::Submit)
    );
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, enter),
        Resolution::Action(Action::Select)
    );
    let alt_enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT);
    assert_eq!(
        resolver.feed(&keymap, Mode::Input, alt_enter),
        Resolution::Action(Action::Newline)
    );
    let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(
        resolver.feed(&keymap, Mode::Input, esc),
        Resolution::Action(Action::CancelRun)
    );
}

#[test]
fn shifted_keys_from_crossterm_match() {
    let keymap = Keymap::builtin();
    let mut resolver = KeyResolver::new();
    let shift_g = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT);
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, shift_g),
        Resolution::Action(Action::Bottom)
    );
    let shift_r = KeyEvent::new(KeyCode::Char('R'), KeyModifiers::SHIFT);
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, shift_r),
        Resolution::Action(Action::RenameSession)
    );
    let question = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::SHIFT);
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, question),
        Resolution::Action(Action::Help)
    );
    let backtab = KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT);
    assert_eq!(
        resolver.feed(&keymap, Mode::Input, backtab),
        Resolution::Action(Action::FocusPrev)
    );
    let shift_tab = KeyEvent::new(KeyCode::Tab, KeyModifiers::SHIFT);
    assert_eq!(
        resolver.feed(&keymap, Mode::Normal, shift_tab),
        Resolution::Action(Action::FocusPrev)
    );
}

// ---------------------------------------------------------------------------------------
// Themes
// ---------------------------------------------------------------------------------------

#[test]
fn all_builtin_themes_load_at_every_depth() {
    let dir = config_dir(&[]);
    assert_eq!(builtin_names(), ["dark", "light", "high-contrast"]);
    for name in builtin_names() {
        for depth in [
            ColorDepth::TrueColor,
            ColorDepth::Ansi256,
            ColorDepth::Ansi16,
            ColorDepth::NoColor,
        ] {
            let theme = glassbox::app::themes::load(name, dir.path(), depth).unwrap();
            assert_eq!(theme.name(), *name);
            assert_eq!(theme.depth(), depth);
        }
    }
    assert!(matches!(
        glassbox::app::themes::load("solarized", dir.path(), ColorDepth::TrueColor),
        Err(ThemeError::Unknown { .. })
    ));
    assert!(matches!(
        glassbox::app::themes::load("../dark", dir.path(), ColorDepth::TrueColor),
        Err(ThemeError::Unknown { .. })
    ));
}

#[test]
fn degrading_to_16_colours_gives_named_ansi_colours() {
    let dir = config_dir(&[(
        "themes/dark.toml",
        "accent = \"#d00000\"\nselection = { fg = \"#fafafa\", bg = \"#0000e0\" }\nlink = 196\n",
    )]);
    let theme = glassbox::app::themes::load("dark", dir.path(), ColorDepth::Ansi16).unwrap();
    assert_eq!(theme.style(Role::Accent).fg, Some(Color::Red));
    assert_eq!(theme.style(Role::Selection).fg, Some(Color::White));
    assert_eq!(theme.style(Role::Selection).bg, Some(Color::Blue));
    assert_eq!(theme.style(Role::Link).fg, Some(Color::LightRed));
    let ansi = [
        Color::Reset,
        Color::Black,
        Color::Red,
        Color::Green,
        Color::Yellow,
        Color::Blue,
        Color::Magenta,
        Color::Cyan,
        Color::Gray,
        Color::DarkGray,
        Color::LightRed,
        Color::LightGreen,
        Color::LightYellow,
        Color::LightBlue,
        Color::LightMagenta,
        Color::LightCyan,
        Color::White,
    ];
    for role in Role::ALL {
        let style = theme.style(*role);
        for color in [style.fg, style.bg].into_iter().flatten() {
            assert!(ansi.contains(&color), "{} is {color:?}", role.name());
        }
    }

    let theme256 = glassbox::app::themes::load("dark", dir.path(), ColorDepth::Ansi256).unwrap();
    assert!(matches!(
        theme256.style(Role::Accent).fg,
        Some(Color::Indexed(_))
    ));
}

#[test]
fn no_color_keeps_only_modifiers_and_a_reversed_selection() {
    let theme = Theme::builtin("dark", ColorDepth::NoColor).unwrap();
    for role in Role::ALL {
        let style = theme.style(*role);
        assert_eq!(style.fg, None, "{}", role.name());
        assert_eq!(style.bg, None, "{}", role.name());
    }
    assert!(
        theme
            .style(Role::Selection)
            .add_modifier
            .contains(Modifier::REVERSED)
    );
    assert!(
        theme
            .style(Role::Title)
            .add_modifier
            .contains(Modifier::BOLD)
    );
}

#[test]
fn user_theme_overrides_a_builtin_and_can_define_a_new_one() {
    let dir = config_dir(&[
        ("themes/light.toml", "# tweak\naccent = \"#123456\"\n"),
        (
            "themes/mine.toml",
            "inherits = \"high-contrast\"\nerror = { fg = \"magenta\", modifiers = [\"bold\"] }\n",
        ),
        ("themes/plain.toml", "fg = \"white\"\n"),
    ]);
    let builtin = Theme::builtin("light", ColorDepth::TrueColor).unwrap();
    let light = glassbox::app::themes::load("light", dir.path(), ColorDepth::TrueColor).unwrap();
    assert_eq!(
        light.style(Role::Accent).fg,
        Some(Color::Rgb(0x12, 0x34, 0x56))
    );
    assert_eq!(light.style(Role::Fg), builtin.style(Role::Fg));

    let mine = glassbox::app::themes::load("mine", dir.path(), ColorDepth::TrueColor).unwrap();
    let contrast = Theme::builtin("high-contrast", ColorDepth::TrueColor).unwrap();
    assert_eq!(mine.name(), "mine");
    assert_eq!(mine.style(Role::Error).fg, Some(Color::Magenta));
    assert_eq!(mine.style(Role::Accent), contrast.style(Role::Accent));

    // Without `inherits`, a new theme builds on dark.
    let plain = glassbox::app::themes::load("plain", dir.path(), ColorDepth::TrueColor).unwrap();
    let dark = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
    assert_eq!(plain.style(Role::Fg).fg, Some(Color::White));
    assert_eq!(plain.style(Role::Title), dark.style(Role::Title));
}

#[test]
fn user_theme_with_an_unknown_role_is_an_error_with_line() {
    let dir = config_dir(&[(
        "themes/dark.toml",
        "accent = \"red\"\n\n# oops\nsparkle = \"gold\"\n",
    )]);
    let err = glassbox::app::themes::load("dark", dir.path(), ColorDepth::TrueColor).unwrap_err();
    assert!(
        matches!(&err, ThemeError::UnknownRole { line: 4, name, .. } if name == "sparkle"),
        "{err:?}"
    );
    let path = dir.path().join("themes").join("dark.toml");
    assert!(
        err.to_string()
            .starts_with(&format!("{}:4:", path.display())),
        "{err}"
    );

    let dir = config_dir(&[("themes/dark.toml", "accent = \"gold\"\n")]);
    let err = glassbox::app::themes::load("dark", dir.path(), ColorDepth::TrueColor).unwrap_err();
    assert!(
        matches!(&err, ThemeError::Invalid { line: 1, .. }),
        "{err:?}"
    );

    let dir = config_dir(&[("themes/x.toml", "\ninherits = \"x\"\n")]);
    let err = glassbox::app::themes::load("x", dir.path(), ColorDepth::TrueColor).unwrap_err();
    assert!(
        matches!(&err, ThemeError::Invalid { line: 2, .. }),
        "{err:?}"
    );
}

#[test]
fn node_and_confidence_styles_come_from_roles() {
    let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
    assert_eq!(
        theme.node_style("fork_branch"),
        theme.style(Role::ForkBranch)
    );
    assert_eq!(theme.node_style("query"), theme.style(Role::Query));
    assert_eq!(theme.node_style("no_such_type"), theme.style(Role::Fg));
    assert_eq!(
        theme.step_style("hypothesis"),
        theme.style(Role::Hypothesis)
    );
    assert_eq!(
        theme.confidence_style(0.95),
        theme.style(Role::ConfidenceHigh)
    );
    assert_eq!(
        theme.confidence_style(0.5),
        theme.style(Role::ConfidenceMid)
    );
    assert_eq!(
        theme.confidence_style(0.05),
        theme.style(Role::ConfidenceLow)
    );
    assert_ne!(
        theme.style(Role::ConfidenceHigh),
        theme.style(Role::ConfidenceLow)
    );
}

// ---------------------------------------------------------------------------------------
// Palette matching
// ---------------------------------------------------------------------------------------

#[test]
fn empty_palette_query_lists_every_action_in_order() {
    let keymap = Keymap::builtin();
    let found = keymap::palette_matches("", &keymap);
    let actions: Vec<Action> = found.iter().map(|m| m.action.clone()).collect();
    assert_eq!(actions, Action::all());
    let top = found.iter().find(|m| m.action == Action::Top).unwrap();
    assert_eq!(top.item.keys, "g g, home");
    assert_eq!(top.item.name, "top");
    assert_eq!(top.item.description, Action::Top.description());
}

#[test]
fn palette_query_filters_and_ranks() {
    let keymap = Keymap::builtin();
    let found = keymap::palette_matches("ses", &keymap);
    assert!(!found.is_empty());
    assert!(found.len() < Action::all().len());
    for m in &found {
        assert_eq!(m.item.indices.len(), 3, "{:?}", m.action);
    }
    assert!(found.windows(2).all(|w| w[0].item.score >= w[1].item.score));
    let names: Vec<&str> = found.iter().map(|m| m.item.name.as_str()).collect();
    for expected in [
        "search_sessions",
        "new_session",
        "rename_session",
        "delete_session",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    assert!(!names.contains(&"move_up"), "{names:?}");

    let found = keymap::palette_matches("delete sess", &keymap);
    assert_eq!(found[0].action, Action::DeleteSession);
    assert!(keymap::palette_matches("zzqx", &keymap).is_empty());
}

// ---------------------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------------------

fn draw(width: u16, height: u16, render: impl FnOnce(&mut ratatui::Frame, Rect)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            render(frame, area);
        })
        .unwrap();
    terminal.backend().to_string()
}

fn dark() -> Theme {
    Theme::builtin("dark", ColorDepth::TrueColor).unwrap()
}

/// The palette's items for `query` with the built-in keys.
fn palette_items(query: &str) -> Vec<palette::PaletteItem> {
    keymap::palette_matches(query, &Keymap::builtin())
        .into_iter()
        .map(|m| m.item)
        .collect()
}

#[test]
fn help_overlay_80x24() {
    let sections = help_sections(&Keymap::builtin());
    let theme = dark();
    insta::assert_snapshot!(draw(80, 24, |f, area| help::render(
        f, area, &sections, &theme, 0
    )));
}

#[test]
fn help_overlay_80x24_scrolled_past_the_end() {
    let sections = help_sections(&Keymap::builtin());
    let theme = dark();
    let end = draw(80, 24, |f, area| {
        help::render(f, area, &sections, &theme, 999)
    });
    insta::assert_snapshot!(end);
    // Scrolling further than the last page shows the last page, however far.
    let further = draw(80, 24, |f, area| {
        help::render(f, area, &sections, &theme, 500)
    });
    assert_eq!(end, further);
    let first = draw(80, 24, |f, area| {
        help::render(f, area, &sections, &theme, 0)
    });
    assert_ne!(end, first);
    assert!(end.contains(" of "), "the footer shows the position");
}

#[test]
fn help_overlay_120x40() {
    let sections = help_sections(&Keymap::builtin());
    let theme = dark();
    insta::assert_snapshot!(draw(120, 40, |f, area| help::render(
        f, area, &sections, &theme, 0
    )));
}

#[test]
fn which_key_popup() {
    let keymap = Keymap::builtin();
    let theme = dark();
    let mut resolver = KeyResolver::new();
    let Resolution::Pending { prefix, hints } = resolver.feed(&keymap, Mode::Normal, press('['))
    else {
        panic!("`[` should start a chord");
    };
    let mut hints = hints;
    hints.push(("x".to_string(), Action::CycleRoute));
    let hints = chord_hints(&hints);
    insta::assert_snapshot!(draw(60, 12, |f, area| help::which_key(
        f, area, &prefix, &hints, &theme
    )));
}

#[test]
fn palette_with_an_empty_query() {
    let theme = dark();
    let state = palette::PaletteState::default();
    let items = palette_items(&state.query);
    let total = Action::all().len();
    insta::assert_snapshot!(draw(80, 24, |f, area| palette::render(
        f, area, &state, &items, total, &theme
    )));
}

#[test]
fn palette_with_query_ses() {
    let theme = dark();
    let state = palette::PaletteState {
        query: "ses".to_string(),
        selected: 1,
    };
    let items = palette_items(&state.query);
    let total = Action::all().len();
    let screen = draw(80, 24, |f, area| {
        palette::render(f, area, &state, &items, total, &theme)
    });
    insta::assert_snapshot!(screen);
}

#[test]
fn palette_highlights_matched_characters() {
    let theme = dark();
    let state = palette::PaletteState {
        query: "ses".to_string(),
        selected: 0,
    };
    let items = palette_items(&state.query);
    let total = Action::all().len();
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal
        .draw(|f| {
            let area = f.area();
            palette::render(f, area, &state, &items, total, &theme);
        })
        .unwrap();
    let buffer = terminal.backend().buffer();
    let matched = theme.style(Role::Matched).fg;
    let highlighted = buffer
        .content()
        .iter()
        .filter(|cell| Some(cell.fg) == matched)
        .count();
    // Three matched characters per shown item.
    assert_eq!(highlighted, 3 * items.len().min(16));
}

#[test]
fn views_fit_a_tiny_terminal_without_panicking() {
    let sections = help_sections(&Keymap::builtin());
    let theme = dark();
    let items = palette_items("");
    let state = palette::PaletteState {
        query: "a long query that does not fit".to_string(),
        selected: 99,
    };
    let hints = chord_hints(&[("g".to_string(), Action::Top)]);
    for (w, h) in [(1, 1), (5, 3), (12, 4), (20, 6)] {
        draw(w, h, |f, area| {
            help::render(f, area, &sections, &theme, 3);
            help::which_key(f, area, "g", &hints, &theme);
            palette::render(f, area, &state, &items, items.len(), &theme);
        });
    }
}
