//! Loading the colour theme: reads `<config dir>/themes/<name>.toml` when it exists and
//! hands the text to [`Theme::resolve`] (the views parse; the app reads files).

use std::path::Path;

use crate::views::theme::{ColorDepth, Theme, ThemeError};

/// The theme `name`: the user's file in `<config_dir>/themes/` if there is one (over the
/// built-in theme of that name, or the one it `inherits`), else the built-in theme;
/// degraded to `depth`.
pub fn load(name: &str, config_dir: &Path, depth: ColorDepth) -> Result<Theme, ThemeError> {
    let path = config_dir.join("themes").join(format!("{name}.toml"));
    // A name that is not a plain file name never reaches the file system.
    let text = if Theme::valid_name(name) {
        match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(ThemeError::Read { path, source }),
        }
    } else {
        None
    };
    Theme::resolve(name, &path, text, depth)
}
