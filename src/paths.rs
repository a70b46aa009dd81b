//! Where glassbox keeps its files: data dir (store, models, logs) and config dir.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// File name of the store inside the data dir.
pub const STORE_FILE: &str = "glassbox.redb";

/// Resolved locations for one run.
#[derive(Clone, Debug)]
pub struct Paths {
    pub data_dir: PathBuf,
    pub config_dir: PathBuf,
    pub models_dir: PathBuf,
}

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "glassbox")
}

/// The default data dir (`$XDG_DATA_HOME/glassbox` on Linux), ignoring overrides.
pub fn default_data_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.data_dir().to_path_buf())
}

/// The models dir: `GLASSBOX_MODELS_DIR`, else `<default data dir>/models`.
///
/// Models are shared by every data dir on the machine, so a `--data-dir` used for a
/// scratch store still finds the models the setup script fetched.
pub fn default_models_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("GLASSBOX_MODELS_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    default_data_dir().map(|d| d.join("models"))
}

impl Paths {
    /// Resolves the paths from an explicit data dir (flag or `GLASSBOX_DATA_DIR`) or the
    /// platform defaults. `GLASSBOX_CONFIG_DIR` overrides the config dir.
    pub fn resolve(data_dir: Option<&Path>) -> Result<Self> {
        let dirs = project_dirs();
        let data_dir = match data_dir {
            Some(d) => d.to_path_buf(),
            None => dirs.as_ref().map(|d| d.data_dir().to_path_buf()).context(
                "cannot determine a data directory: set --data-dir or GLASSBOX_DATA_DIR",
            )?,
        };
        let config_dir = match std::env::var_os("GLASSBOX_CONFIG_DIR").filter(|v| !v.is_empty()) {
            Some(d) => PathBuf::from(d),
            None => dirs
                .as_ref()
                .map(|d| d.config_dir().to_path_buf())
                .unwrap_or_else(|| data_dir.join("config")),
        };
        let models_dir = default_models_dir().unwrap_or_else(|| data_dir.join("models"));
        Ok(Self {
            data_dir,
            config_dir,
            models_dir,
        })
    }

    pub fn store_file(&self) -> PathBuf {
        self.data_dir.join(STORE_FILE)
    }

    pub fn log_file(&self) -> PathBuf {
        self.data_dir.join("glassbox.log")
    }

    /// Creates the data dir with mode 0700 if it is missing, and tightens it if it exists.
    pub fn ensure_data_dir(&self) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&self.data_dir)
            .with_context(|| format!("cannot create data dir {}", self.data_dir.display()))?;
        std::fs::set_permissions(&self.data_dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot set permissions on {}", self.data_dir.display()))?;
        Ok(())
    }
}
