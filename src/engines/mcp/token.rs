//! The bearer token that guards `glassbox mcp --http`: 32 random bytes, hex, generated on
//! first use and kept in `<config dir>/mcp-token` with mode 0600.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::LedgerError;

/// File name of the token inside the config dir.
pub const TOKEN_FILE: &str = "mcp-token";

/// Random bytes in a token.
const TOKEN_BYTES: usize = 32;

/// The token and where it lives.
#[derive(Clone, Debug)]
pub struct Token {
    pub value: String,
    pub path: PathBuf,
    /// Whether this call generated it.
    pub created: bool,
}

fn file_err(
    action: &'static str,
    path: &Path,
) -> impl FnOnce(std::io::Error) -> LedgerError + use<> {
    let path = path.to_path_buf();
    move |source| LedgerError::File {
        action,
        path,
        source,
    }
}

/// Reads the token from `<config_dir>/mcp-token`, generating it (mode 0600, in a config dir
/// created with mode 0700) when the file does not exist. A token file others can read is
/// tightened to 0600.
pub fn load_or_create(config_dir: &Path) -> Result<Token, LedgerError> {
    let path = config_dir.join(TOKEN_FILE);
    if !path.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(config_dir)
            .map_err(file_err("create", config_dir))?;
        let value = generate(&path)?;
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(format!("{value}\n").as_bytes())
                    .map_err(file_err("write", &path))?;
                f.sync_all().map_err(file_err("write", &path))?;
                return Ok(Token {
                    value,
                    path,
                    created: true,
                });
            }
            // Another process created it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(file_err("create", &path)(e)),
        }
    }
    let meta = std::fs::metadata(&path).map_err(file_err("read", &path))?;
    if meta.permissions().mode() & 0o077 != 0 {
        tracing::warn!(path = %path.display(), "token file was readable by others; setting mode 0600");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(file_err("protect", &path))?;
    }
    let text = std::fs::read_to_string(&path).map_err(file_err("read", &path))?;
    let value = text.trim().to_string();
    if value.len() < 32
        || !value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(LedgerError::BadToken { path });
    }
    Ok(Token {
        value,
        path,
        created: false,
    })
}

/// A new token: `TOKEN_BYTES` bytes from the kernel's CSPRNG, hex-encoded.
fn generate(path: &Path) -> Result<String, LedgerError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(file_err("generate a token for", path))?;
    Ok(hex::encode(bytes))
}

/// Whether `presented` equals `expected`, in time that does not depend on where they differ.
pub fn matches(expected: &str, presented: &str) -> bool {
    let (a, b) = (expected.as_bytes(), presented.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_once_private_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("cfg");
        let a = load_or_create(&cfg).unwrap();
        assert!(a.created);
        assert_eq!(a.value.len(), 64);
        let mode = std::fs::metadata(&a.path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let b = load_or_create(&cfg).unwrap();
        assert!(!b.created);
        assert_eq!(a.value, b.value);
        std::fs::set_permissions(&a.path, std::fs::Permissions::from_mode(0o644)).unwrap();
        load_or_create(&cfg).unwrap();
        assert_eq!(
            std::fs::metadata(&a.path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::write(&a.path, "short\n").unwrap();
        assert!(matches!(
            load_or_create(&cfg),
            Err(LedgerError::BadToken { .. })
        ));
    }

    #[test]
    fn comparison() {
        assert!(matches("abc", "abc"));
        assert!(!matches("abc", "abd"));
        assert!(!matches("abc", "abcd"));
        assert!(!matches("abc", ""));
    }
}
