//! Colour themes: the embedded `themes/*.toml` map role names to styles; a user file in
//! `<config dir>/themes/` adds or overrides themes; colours degrade to the terminal's depth.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use toml::de::{DeTable, DeValue};

/// The built-in themes: name and embedded file.
const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

/// The theme a user theme with a new name builds on unless it says `inherits = "…"`.
const DEFAULT_BASE: &str = "dark";

/// Top-level key of a theme file naming the built-in theme it builds on.
const INHERITS_KEY: &str = "inherits";

/// Confidence below this is "low".
const CONFIDENCE_MID: f64 = 0.4;
/// Confidence at or above this is "high".
const CONFIDENCE_HIGH: f64 = 0.7;

macro_rules! roles {
    ($($variant:ident => $name:literal, $doc:literal;)*) => {
        /// A named style in a theme: what a piece of the UI is, not what colour it has.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Role {
            $(#[doc = $doc] $variant,)*
        }

        impl Role {
            /// Every role, in theme-file order.
            pub const ALL: &'static [Role] = &[$(Role::$variant,)*];

            /// The role's name in a theme file.
            pub fn name(self) -> &'static str {
                match self {
                    $(Role::$variant => $name,)*
                }
            }
        }
    };
}

roles! {
    Fg => "fg", "Default text.";
    Bg => "bg", "Default background.";
    Dim => "dim", "Secondary text: hints, timestamps, descriptions.";
    Accent => "accent", "Keys, prompts and other things to notice.";
    Border => "border", "Borders of unfocused panes.";
    BorderFocused => "border_focused", "The border of the focused pane.";
    Selection => "selection", "The selected row.";
    StatusFg => "status_fg", "Status bar text.";
    StatusBg => "status_bg", "Status bar background.";
    Title => "title", "Pane and popup titles.";
    Query => "query", "The user's question (also the query node type).";
    Thinking => "thinking", "Reasoning text (also the thinking node type).";
    Response => "response", "Answer text (also the response node type).";
    Error => "error", "Errors.";
    Warning => "warning", "Warnings.";
    Success => "success", "Success.";
    Decision => "decision", "Decision points in reasoning.";
    ConfidenceLow => "confidence_low", "Low confidence.";
    ConfidenceMid => "confidence_mid", "Middling confidence.";
    ConfidenceHigh => "confidence_high", "High confidence.";
    Compaction => "compaction", "Node type: compaction.";
    ForkBranch => "fork_branch", "Node type: fork branch.";
    HumanAnnotation => "human_annotation", "Node type: human annotation.";
    GotThought => "got_thought", "Node type: graph-of-thought thought.";
    VerifyStep => "verify_step", "Node type: verification step.";
    PipelineLayer => "pipeline_layer", "Node type: pipeline layer.";
    Plan => "plan", "Node type: plan.";
    Audit => "audit", "Node type: audit.";
    ToolCall => "tool_call", "Node type: tool call.";
    Synthesis => "synthesis", "Node type: synthesis.";
    LedgerThought => "ledger_thought", "Node type: ledger thought.";
    Imported => "imported", "Node type: imported.";
    Analysis => "analysis", "Reasoning step kind: analysis.";
    Hypothesis => "hypothesis", "Reasoning step kind: hypothesis.";
    Evaluation => "evaluation", "Reasoning step kind: evaluation.";
    Conclusion => "conclusion", "Reasoning step kind: conclusion.";
    Consideration => "consideration", "Reasoning step kind: consideration.";
    DiffSame => "diff_same", "Diff row label: both steps make the same point.";
    DiffDiffers => "diff_differs", "Diff row label: the steps say different things.";
    DiffContradicts => "diff_contradicts", "Diff row label: one step contradicts the other.";
    DiffOnlyA => "diff_only_a", "Diff row label: a step only line A has.";
    DiffOnlyB => "diff_only_b", "Diff row label: a step only line B has.";
    DiffSource => "diff_source", "Diff steps the selected merge claim came from.";
    CodeBg => "code_bg", "Background of code blocks.";
    Heading => "heading", "Markdown headings.";
    Link => "link", "Links.";
    Matched => "matched", "Characters matched by a search or the palette.";
}

/// Node type names (as stored) that have a role of their own.
const NODE_ROLES: &[(&str, Role)] = &[
    ("query", Role::Query),
    ("thinking", Role::Thinking),
    ("response", Role::Response),
    ("compaction", Role::Compaction),
    ("fork_branch", Role::ForkBranch),
    ("human_annotation", Role::HumanAnnotation),
    ("got_thought", Role::GotThought),
    ("verify_step", Role::VerifyStep),
    ("pipeline_layer", Role::PipelineLayer),
    ("plan", Role::Plan),
    ("audit", Role::Audit),
    ("tool_call", Role::ToolCall),
    ("synthesis", Role::Synthesis),
    ("ledger_thought", Role::LedgerThought),
    ("imported", Role::Imported),
];

/// Reasoning step kinds that have a role of their own.
const STEP_ROLES: &[(&str, Role)] = &[
    ("analysis", Role::Analysis),
    ("hypothesis", Role::Hypothesis),
    ("evaluation", Role::Evaluation),
    ("conclusion", Role::Conclusion),
    ("consideration", Role::Consideration),
];

/// Diff row labels (`engines::diff::Label::as_str`) and their roles.
const DIFF_ROLES: &[(&str, Role)] = &[
    ("same", Role::DiffSame),
    ("differs", Role::DiffDiffers),
    ("contradicts", Role::DiffContradicts),
    ("only_a", Role::DiffOnlyA),
    ("only_b", Role::DiffOnlyB),
];

const ROLE_COUNT: usize = Role::ALL.len();

impl Role {
    /// The role called `name` in a theme file, if any.
    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.iter().copied().find(|r| r.name() == name)
    }

    /// Whether a plain colour for this role is a background rather than a foreground.
    pub fn is_background(self) -> bool {
        matches!(self, Role::Bg | Role::StatusBg | Role::CodeBg)
    }
}

/// A problem loading a theme; file errors name the file and line.
#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    #[error("unknown theme `{name}` (built-in: {}; or create {})", builtin_names().join(", "), path.display())]
    Unknown { name: String, path: PathBuf },
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
    #[error("{}:{line}: unknown role `{name}`", path.display())]
    UnknownRole {
        path: PathBuf,
        line: usize,
        name: String,
    },
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// The names of the built-in themes.
pub fn builtin_names() -> &'static [&'static str] {
    &["dark", "light", "high-contrast"]
}

// ---------------------------------------------------------------------------------------
// Colour depth
// ---------------------------------------------------------------------------------------

/// How many colours the terminal can show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColorDepth {
    /// 24-bit colour.
    TrueColor,
    /// The xterm 256-colour palette.
    Ansi256,
    /// The 16 ANSI colours.
    Ansi16,
    /// No colour at all (NO_COLOR): modifiers only.
    NoColor,
}

impl ColorDepth {
    /// The depth the environment asks for: NO_COLOR (non-empty) or TERM=dumb → none,
    /// COLORTERM truecolor/24bit → true colour, TERM containing 256color → 256, else 16.
    pub fn detect() -> ColorDepth {
        ColorDepth::from_env(|name| std::env::var(name).ok())
    }

    /// [`ColorDepth::detect`] over any source of environment variables.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> ColorDepth {
        if var("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            return ColorDepth::NoColor;
        }
        let term = var("TERM").unwrap_or_default();
        if term == "dumb" {
            return ColorDepth::NoColor;
        }
        let colorterm = var("COLORTERM").unwrap_or_default().to_ascii_lowercase();
        if colorterm == "truecolor" || colorterm == "24bit" {
            ColorDepth::TrueColor
        } else if term.contains("256color") {
            ColorDepth::Ansi256
        } else {
            ColorDepth::Ansi16
        }
    }
}

/// xterm's default RGB values of the 16 ANSI colours, with their ratatui names.
const ANSI16: [(Color, (u8, u8, u8)); 16] = [
    (Color::Black, (0, 0, 0)),
    (Color::Red, (205, 0, 0)),
    (Color::Green, (0, 205, 0)),
    (Color::Yellow, (205, 205, 0)),
    (Color::Blue, (0, 0, 238)),
    (Color::Magenta, (205, 0, 205)),
    (Color::Cyan, (0, 205, 205)),
    (Color::Gray, (229, 229, 229)),
    (Color::DarkGray, (127, 127, 127)),
    (Color::LightRed, (255, 0, 0)),
    (Color::LightGreen, (0, 255, 0)),
    (Color::LightYellow, (255, 255, 0)),
    (Color::LightBlue, (92, 92, 255)),
    (Color::LightMagenta, (255, 0, 255)),
    (Color::LightCyan, (0, 255, 255)),
    (Color::White, (255, 255, 255)),
];

/// Channel values of the 6×6×6 cube of the 256-colour palette.
const CUBE_LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];

/// Perceptual-ish distance between two colours ("redmean").
fn distance(a: (u8, u8, u8), b: (u8, u8, u8)) -> u32 {
    let mean = (u32::from(a.0) + u32::from(b.0)) / 2;
    let dr = u32::from(a.0.abs_diff(b.0));
    let dg = u32::from(a.1.abs_diff(b.1));
    let db = u32::from(a.2.abs_diff(b.2));
    (((512 + mean) * dr * dr) >> 8) + 4 * dg * dg + (((767 - mean) * db * db) >> 8)
}

/// The RGB value of a 256-palette index.
fn indexed_rgb(index: u8) -> (u8, u8, u8) {
    match index {
        0..=15 => ANSI16[usize::from(index)].1,
        16..=231 => {
            let i = index - 16;
            let level = |n: u8| CUBE_LEVELS[usize::from(n)];
            (level(i / 36), level((i / 6) % 6), level(i % 6))
        }
        _ => {
            let grey = 8 + (index - 232) * 10;
            (grey, grey, grey)
        }
    }
}

/// The nearest colour of the cube or grey ramp of the 256-colour palette.
fn nearest_256(rgb: (u8, u8, u8)) -> u8 {
    let level = |c: u8| {
        (0..6u8)
            .min_by_key(|&i| CUBE_LEVELS[usize::from(i)].abs_diff(c))
            .unwrap_or(0)
    };
    let cube = 16 + 36 * level(rgb.0) + 6 * level(rgb.1) + level(rgb.2);
    let average = (u16::from(rgb.0) + u16::from(rgb.1) + u16::from(rgb.2)) / 3;
    let grey_step = u8::try_from(average.saturating_sub(3) / 10)
        .unwrap_or(23)
        .min(23);
    let grey = 232 + grey_step;
    if distance(rgb, indexed_rgb(grey)) < distance(rgb, indexed_rgb(cube)) {
        grey
    } else {
        cube
    }
}

/// The nearest of the 16 ANSI colours.
fn nearest_16(rgb: (u8, u8, u8)) -> Color {
    ANSI16
        .iter()
        .min_by_key(|(_, value)| distance(rgb, *value))
        .map_or(Color::Reset, |(color, _)| *color)
}

/// `color` as the terminal of `depth` can show it (`None` without colour).
fn degrade_color(color: Color, depth: ColorDepth) -> Option<Color> {
    match (depth, color) {
        (ColorDepth::NoColor, _) => None,
        (ColorDepth::Ansi256, Color::Rgb(r, g, b)) => Some(Color::Indexed(nearest_256((r, g, b)))),
        (ColorDepth::Ansi16, Color::Rgb(r, g, b)) => Some(nearest_16((r, g, b))),
        (ColorDepth::Ansi16, Color::Indexed(i)) => Some(nearest_16(indexed_rgb(i))),
        (_, other) => Some(other),
    }
}

// ---------------------------------------------------------------------------------------
// Theme
// ---------------------------------------------------------------------------------------

/// A resolved theme: a style per role, already degraded to the terminal's colour depth.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    name: String,
    depth: ColorDepth,
    styles: [Style; ROLE_COUNT],
}

impl Default for Theme {
    /// A colourless theme (as with NO_COLOR), for when no theme could be loaded.
    fn default() -> Theme {
        Theme {
            name: "plain".to_string(),
            depth: ColorDepth::TrueColor,
            styles: [Style::default(); ROLE_COUNT],
        }
        .degraded(ColorDepth::NoColor)
    }
}

/// The parsed roles of one theme file.
struct ThemeFile {
    inherits: Option<(String, usize)>,
    roles: Vec<(Role, Style)>,
}

impl Theme {
    /// The theme `name`, given the text of `<config_dir>/themes/<name>.toml` when that file
    /// exists (`path`, for errors): the file overrides the built-in theme of that name, or
    /// builds on `inherits = "…"` (by default dark); without a file, the built-in one.
    /// Degraded to `depth`. Reading the file is the caller's (see `app::themes`).
    pub fn resolve(
        name: &str,
        path: &Path,
        text: Option<String>,
        depth: ColorDepth,
    ) -> Result<Theme, ThemeError> {
        let path = path.to_path_buf();
        if !Self::valid_name(name) {
            return Err(ThemeError::Unknown {
                name: name.to_string(),
                path,
            });
        }
        let Some(text) = text else {
            return match builtin_text(name) {
                Some(builtin) => Ok(parse_builtin(name, builtin)?.degraded(depth)),
                None => Err(ThemeError::Unknown {
                    name: name.to_string(),
                    path,
                }),
            };
        };
        let file = parse_file(&path, &text)?;
        let base_name = match &file.inherits {
            Some((base, _)) => base.as_str(),
            None if builtin_text(name).is_some() => name,
            None => DEFAULT_BASE,
        };
        let Some(base_text) = builtin_text(base_name) else {
            let line = file.inherits.as_ref().map_or(1, |(_, line)| *line);
            return Err(ThemeError::Invalid {
                path,
                line,
                message: format!(
                    "`inherits` must name a built-in theme ({}), not `{base_name}`",
                    builtin_names().join(", ")
                ),
            });
        };
        let mut theme = parse_builtin(base_name, base_text)?;
        theme.name = name.to_string();
        for (role, style) in file.roles {
            theme.styles[role as usize] = style;
        }
        Ok(theme.degraded(depth))
    }

    /// Whether `name` can name a theme file (letters, digits, `-`, `_`; no paths).
    pub fn valid_name(name: &str) -> bool {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    }

    /// The built-in theme `name` degraded to `depth`, if there is one.
    pub fn builtin(name: &str, depth: ColorDepth) -> Option<Theme> {
        let text = builtin_text(name)?;
        parse_builtin(name, text).ok().map(|t| t.degraded(depth))
    }

    /// The theme's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The colour depth the theme was degraded to.
    pub fn depth(&self) -> ColorDepth {
        self.depth
    }

    /// The style of a role.
    pub fn style(&self, role: Role) -> Style {
        self.styles[role as usize]
    }

    /// Default text on the default background: the base to patch other roles onto.
    pub fn base(&self) -> Style {
        self.style(Role::Fg).patch(self.style(Role::Bg))
    }

    /// The style of a node type by its stored name (`"fork_branch"`); plain text if unknown.
    pub fn node_style(&self, node_type_name: &str) -> Style {
        role_for(NODE_ROLES, node_type_name).map_or(self.style(Role::Fg), |r| self.style(r))
    }

    /// The style of a reasoning step kind (`"hypothesis"`); plain text if unknown.
    pub fn step_style(&self, kind: &str) -> Style {
        role_for(STEP_ROLES, kind).map_or(self.style(Role::Fg), |r| self.style(r))
    }

    /// The style of a diff row label by its name (`"contradicts"`); plain text if unknown.
    pub fn diff_style(&self, label: &str) -> Style {
        role_for(DIFF_ROLES, label).map_or(self.style(Role::Fg), |r| self.style(r))
    }

    /// The style of a confidence in 0.0–1.0: low below 0.4, high from 0.7, mid between.
    pub fn confidence_style(&self, c: f64) -> Style {
        let role = if c >= CONFIDENCE_HIGH {
            Role::ConfidenceHigh
        } else if c >= CONFIDENCE_MID {
            Role::ConfidenceMid
        } else {
            Role::ConfidenceLow
        };
        self.style(role)
    }

    /// This theme as a terminal of `depth` can show it. Without colour only modifiers stay,
    /// and the selection is reversed so it is still visible.
    fn degraded(mut self, depth: ColorDepth) -> Theme {
        for style in &mut self.styles {
            *style = match depth {
                ColorDepth::NoColor => Style::default()
                    .add_modifier(style.add_modifier)
                    .remove_modifier(style.sub_modifier),
                _ => Style {
                    fg: style.fg.and_then(|c| degrade_color(c, depth)),
                    bg: style.bg.and_then(|c| degrade_color(c, depth)),
                    ..*style
                },
            };
        }
        // A selection whose background vanished into the default one would be invisible.
        let selection = self.styles[Role::Selection as usize];
        let background = self.styles[Role::Bg as usize].bg;
        let blends = selection.bg.is_none()
            || selection.bg == Some(Color::Reset)
            || selection.bg == background;
        if blends && !selection.add_modifier.contains(Modifier::REVERSED) {
            self.styles[Role::Selection as usize] = selection.add_modifier(Modifier::REVERSED);
        }
        if depth == ColorDepth::NoColor {
            let focused = &mut self.styles[Role::BorderFocused as usize];
            *focused = focused.add_modifier(Modifier::BOLD);
        }
        self.depth = depth;
        self
    }
}

fn role_for(table: &[(&str, Role)], name: &str) -> Option<Role> {
    table.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

fn builtin_text(name: &str) -> Option<&'static str> {
    BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// A built-in theme at full colour.
fn parse_builtin(name: &str, text: &str) -> Result<Theme, ThemeError> {
    let path = PathBuf::from(format!("<built-in> themes/{name}.toml"));
    let file = parse_file(&path, text)?;
    let mut styles = [Style::default(); ROLE_COUNT];
    for (role, style) in file.roles {
        styles[role as usize] = style;
    }
    Ok(Theme {
        name: name.to_string(),
        depth: ColorDepth::TrueColor,
        styles,
    })
}

/// Parses a theme file: `role = "colour"` or `role = { fg, bg, modifiers }`.
fn parse_file(path: &Path, text: &str) -> Result<ThemeFile, ThemeError> {
    let line = |offset: usize| crate::toml_text::line_of(text, offset);
    let root = DeTable::parse(text).map_err(|e| ThemeError::Syntax {
        path: path.to_path_buf(),
        line: e.span().map_or(1, |s| line(s.start)),
        message: e.message().trim().to_string(),
    })?;
    let invalid = |offset: usize, message: String| ThemeError::Invalid {
        path: path.to_path_buf(),
        line: line(offset),
        message,
    };
    let mut rows: Vec<_> = root.get_ref().iter().collect();
    rows.sort_by_key(|(key, _)| key.span().start);
    let mut file = ThemeFile {
        inherits: None,
        roles: Vec::new(),
    };
    for (key, value) in rows {
        let name = key.get_ref().as_ref();
        let at = value.span().start;
        if name == INHERITS_KEY {
            let DeValue::String(base) = value.get_ref() else {
                return Err(invalid(at, "`inherits` must be a theme name".to_string()));
            };
            file.inherits = Some((base.to_string(), line(at)));
            continue;
        }
        let Some(role) = Role::from_name(name) else {
            return Err(ThemeError::UnknownRole {
                path: path.to_path_buf(),
                line: line(key.span().start),
                name: name.to_string(),
            });
        };
        let style = match value.get_ref() {
            DeValue::Table(table) => {
                let mut style = Style::default();
                let mut fields: Vec<_> = table.iter().collect();
                fields.sort_by_key(|(k, _)| k.span().start);
                for (field, v) in fields {
                    let at = v.span().start;
                    match field.get_ref().as_ref() {
                        "fg" => {
                            style.fg = Some(parse_color(v.get_ref()).map_err(|m| invalid(at, m))?)
                        }
                        "bg" => {
                            style.bg = Some(parse_color(v.get_ref()).map_err(|m| invalid(at, m))?)
                        }
                        "modifiers" => {
                            style.add_modifier =
                                parse_modifiers(v.get_ref()).map_err(|m| invalid(at, m))?;
                        }
                        other => {
                            return Err(invalid(
                                field.span().start,
                                format!(
                                    "unknown field `{other}` of `{name}` (expected fg, bg, modifiers)"
                                ),
                            ));
                        }
                    }
                }
                style
            }
            plain => {
                let color = parse_color(plain).map_err(|m| invalid(at, m))?;
                if role.is_background() {
                    Style::default().bg(color)
                } else {
                    Style::default().fg(color)
                }
            }
        };
        file.roles.push((role, style));
    }
    Ok(file)
}

/// A colour: `"#rrggbb"`, an ANSI name, `"reset"`, or an index 0–255 (number or string).
fn parse_color(value: &DeValue<'_>) -> Result<Color, String> {
    const EXPECTED: &str = "expected \"#rrggbb\", an ANSI colour name, \"reset\" or 0-255";
    match value {
        DeValue::String(text) => {
            Color::from_str(text).map_err(|_| format!("bad colour `{text}`: {EXPECTED}"))
        }
        DeValue::Integer(n) => i64::from_str_radix(n.as_str(), n.radix())
            .ok()
            .and_then(|n| u8::try_from(n).ok())
            .map(Color::Indexed)
            .ok_or_else(|| format!("bad colour {}: {EXPECTED}", n.as_str())),
        other => Err(format!(
            "a {} is not a colour: {EXPECTED}",
            other.type_str()
        )),
    }
}

/// Modifiers: an array of names (or one name).
fn parse_modifiers(value: &DeValue<'_>) -> Result<Modifier, String> {
    let one = |v: &DeValue<'_>| -> Result<Modifier, String> {
        let DeValue::String(name) = v else {
            return Err("modifiers must be names".to_string());
        };
        match name.as_ref() {
            "bold" => Ok(Modifier::BOLD),
            "dim" => Ok(Modifier::DIM),
            "italic" => Ok(Modifier::ITALIC),
            "underlined" | "underline" => Ok(Modifier::UNDERLINED),
            "reversed" | "reverse" => Ok(Modifier::REVERSED),
            "crossed_out" => Ok(Modifier::CROSSED_OUT),
            other => Err(format!(
                "unknown modifier `{other}` (expected bold, dim, italic, underlined, reversed, crossed_out)"
            )),
        }
    };
    match value {
        DeValue::Array(items) => items
            .into_iter()
            .try_fold(Modifier::empty(), |acc, v| Ok(acc | one(v.get_ref())?)),
        single => one(single),
    }
}

/// 1-based line of a byte offset.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_themes_define_every_role() {
        for (name, text) in BUILTIN {
            let file = parse_file(Path::new(name), text).unwrap();
            assert!(file.inherits.is_none());
            for role in Role::ALL {
                assert!(
                    file.roles.iter().any(|(r, _)| r == role),
                    "{name} lacks {}",
                    role.name()
                );
            }
        }
        assert_eq!(
            builtin_names(),
            BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>()
        );
    }

    #[test]
    fn role_names_round_trip() {
        for role in Role::ALL {
            assert_eq!(Role::from_name(role.name()), Some(*role));
        }
        for (name, role) in NODE_ROLES.iter().chain(STEP_ROLES) {
            assert_eq!(role.name(), *name);
        }
    }

    #[test]
    fn diff_labels_all_have_roles() {
        use crate::engines::diff::Label;
        let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
        for l in [
            Label::Same,
            Label::Differs,
            Label::Contradicts,
            Label::OnlyA,
            Label::OnlyB,
        ] {
            let role = role_for(DIFF_ROLES, l.as_str()).unwrap();
            assert_eq!(role.name(), format!("diff_{}", l.as_str()));
            assert_eq!(theme.diff_style(l.as_str()), theme.style(role));
        }
        assert_eq!(theme.diff_style("nonsense"), theme.style(Role::Fg));
    }

    #[test]
    fn node_type_names_all_have_roles() {
        let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
        for node_type in crate::store::NodeType::ALL {
            let name = node_type.as_str();
            assert!(role_for(NODE_ROLES, name).is_some(), "{name}");
            assert_eq!(
                theme.node_style(name),
                theme.style(Role::from_name(name).unwrap())
            );
        }
    }

    #[test]
    fn colour_cube_and_grey_ramp() {
        assert_eq!(nearest_256((255, 0, 0)), 196);
        assert_eq!(nearest_256((0, 0, 0)), 16);
        assert_eq!(nearest_256((128, 128, 128)), 244);
        assert_eq!(indexed_rgb(196), (255, 0, 0));
        assert_eq!(nearest_16((250, 250, 250)), Color::White);
        assert_eq!(nearest_16((20, 20, 30)), Color::Black);
        assert_eq!(nearest_16(indexed_rgb(196)), Color::LightRed);
    }

    #[test]
    fn colours_parse_in_every_form() {
        let text = "fg = \"#ff8000\"\nbg = 236\ndim = \"lightblue\"\naccent = \"reset\"\n\
                    title = { fg = \"red\", modifiers = [\"bold\", \"italic\"] }\n";
        let file = parse_file(Path::new("t.toml"), text).unwrap();
        assert_eq!(
            file.roles[0],
            (Role::Fg, Style::default().fg(Color::Rgb(255, 128, 0)))
        );
        assert_eq!(
            file.roles[1],
            (Role::Bg, Style::default().bg(Color::Indexed(236)))
        );
        assert_eq!(file.roles[2].1.fg, Some(Color::LightBlue));
        assert_eq!(file.roles[3].1.fg, Some(Color::Reset));
        assert_eq!(
            file.roles[4].1,
            Style::default()
                .fg(Color::Red)
                .add_modifier(Modifier::BOLD | Modifier::ITALIC)
        );
        for bad in [
            "fg = \"#12345\"",
            "fg = 300",
            "fg = true",
            "title = { fg = \"red\", x = 1 }",
            "title = { modifiers = [\"blink\"] }",
        ] {
            let err = parse_file(Path::new("t.toml"), bad)
                .err()
                .unwrap()
                .to_string();
            assert!(err.starts_with("t.toml:1:"), "{bad}: {err}");
        }
    }

    #[test]
    fn confidence_thresholds() {
        let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
        assert_eq!(
            theme.confidence_style(0.1),
            theme.style(Role::ConfidenceLow)
        );
        assert_eq!(
            theme.confidence_style(0.4),
            theme.style(Role::ConfidenceMid)
        );
        assert_eq!(
            theme.confidence_style(0.7),
            theme.style(Role::ConfidenceHigh)
        );
        assert_eq!(
            theme.confidence_style(f64::NAN),
            theme.style(Role::ConfidenceLow)
        );
    }

    #[test]
    fn detect_reads_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            ColorDepth::from_env(env(&[("NO_COLOR", "1"), ("COLORTERM", "truecolor")])),
            ColorDepth::NoColor
        );
        assert_eq!(
            ColorDepth::from_env(env(&[("NO_COLOR", ""), ("COLORTERM", "24bit")])),
            ColorDepth::TrueColor
        );
        assert_eq!(
            ColorDepth::from_env(env(&[("TERM", "xterm-256color")])),
            ColorDepth::Ansi256
        );
        assert_eq!(
            ColorDepth::from_env(env(&[("TERM", "xterm")])),
            ColorDepth::Ansi16
        );
        assert_eq!(
            ColorDepth::from_env(env(&[("TERM", "dumb")])),
            ColorDepth::NoColor
        );
    }

    #[test]
    fn every_degraded_theme_keeps_the_selection_visible() {
        for name in builtin_names() {
            for depth in [
                ColorDepth::TrueColor,
                ColorDepth::Ansi256,
                ColorDepth::Ansi16,
                ColorDepth::NoColor,
            ] {
                let theme = Theme::builtin(name, depth).unwrap();
                let selection = theme.style(Role::Selection);
                let visible = selection.add_modifier.contains(Modifier::REVERSED)
                    || (selection.bg.is_some() && selection.bg != theme.style(Role::Bg).bg);
                assert!(visible, "{name} at {depth:?}");
            }
        }
        assert!(
            Theme::default()
                .style(Role::Selection)
                .add_modifier
                .contains(Modifier::REVERSED)
        );
    }
}
