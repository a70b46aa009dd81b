//! What a connection needs besides the URL: the URL with its password removed (the only form
//! that appears in messages), the password from `PGPASSWORD` or a pgpass file when the URL
//! has none (as libpq finds it), and the TLS connector for `sslmode=prefer|require`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use postgres::config::Host;
use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The Unix socket directories libpq treats as `localhost` when it looks up a pgpass file.
const DEFAULT_SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

/// `url` with every password taken out: the `user:password@` of a `postgres://` URL becomes
/// `user@`, and a `password=` query parameter or key-value pair is dropped.
pub fn redact_url(url: &str) -> String {
    let trimmed = url.trim();
    for scheme in ["postgresql://", "postgres://"] {
        if let Some(rest) = trimmed.strip_prefix(scheme) {
            return format!("{scheme}{}", redact_uri_rest(rest));
        }
    }
    redact_key_values(trimmed)
}

/// The part of a URI after its scheme, without password. Credentials end at the first `@`,
/// as the `postgres` crate reads them.
fn redact_uri_rest(rest: &str) -> String {
    let (creds, after) = match rest.find('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let mut out = String::with_capacity(rest.len());
    if let Some(creds) = creds {
        out.push_str(creds.split(':').next().unwrap_or(""));
        out.push('@');
    }
    match after.split_once('?') {
        Some((base, query)) => {
            out.push_str(base);
            let kept: Vec<&str> = query
                .split('&')
                .filter(|pair| {
                    let key = pair.split('=').next().unwrap_or("");
                    !key.eq_ignore_ascii_case("password") && !pair.is_empty()
                })
                .collect();
            if !kept.is_empty() {
                out.push('?');
                out.push_str(&kept.join("&"));
            }
        }
        None => out.push_str(after),
    }
    out
}

/// A libpq key-value string (`host=db user=me password='x y'`) without its `password` pair.
fn redact_key_values(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut kept = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == bytes.len() {
            break;
        }
        let start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &s[start..i];
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == b'=' {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < bytes.len() && bytes[i] == b'\'' {
                i += 1;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(bytes.len());
            } else {
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i = i.min(bytes.len());
            }
        }
        if !key.eq_ignore_ascii_case("password") {
            kept.push(&s[start..i]);
        }
    }
    kept.join(" ")
}

/// Where a password comes from when the URL has none, in libpq's order: `PGPASSWORD`, then
/// the pgpass file (`PGPASSFILE`, else `~/.pgpass`).
#[derive(Clone, Debug, Default)]
pub struct PasswordSources {
    pub pgpassword: Option<String>,
    pub pgpassfile: Option<PathBuf>,
    /// The user name a URL without one connects as (the login name).
    pub login: Option<String>,
}

impl PasswordSources {
    /// The sources this process's environment names.
    pub fn from_env() -> PasswordSources {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let pgpassfile = var("PGPASSFILE")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|home| Path::new(&home).join(".pgpass")));
        PasswordSources {
            pgpassword: var("PGPASSWORD"),
            pgpassfile,
            login: var("USER").or_else(|| var("LOGNAME")),
        }
    }

    /// Sets the password of `config` from these sources when the URL gave none.
    pub fn apply(&self, config: &mut postgres::Config) {
        if config.get_password().is_some() {
            return;
        }
        if let Some(password) = &self.pgpassword {
            config.password(password);
            return;
        }
        let Some(path) = &self.pgpassfile else {
            return;
        };
        let Some(text) = read_pgpass(path) else {
            return;
        };
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(host)) => host.clone(),
            Some(Host::Unix(dir)) => {
                let dir = dir.to_string_lossy();
                if DEFAULT_SOCKET_DIRS.contains(&dir.as_ref()) {
                    "localhost".to_owned()
                } else {
                    dir.into_owned()
                }
            }
            None => "localhost".to_owned(),
        };
        let port = config
            .get_ports()
            .first()
            .copied()
            .unwrap_or(5432)
            .to_string();
        let user = config
            .get_user()
            .map(str::to_owned)
            .or_else(|| self.login.clone());
        let dbname = config
            .get_dbname()
            .map(str::to_owned)
            .or_else(|| user.clone());
        if let Some(password) = pgpass_lookup(
            &text,
            [Some(host), Some(port), dbname, user]
                .each_ref()
                .map(Option::as_deref),
        ) {
            config.password(password);
        }
    }
}

/// The pgpass file's text, or `None` when it is missing, unreadable, or readable by group or
/// others (libpq ignores such a file too).
fn read_pgpass(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                path = %path.display(),
                "password file has group or world access; ignored (chmod 0600 to use it)"
            );
            return None;
        }
    }
    if !meta.is_file() {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The password of the first pgpass line whose host, port, database and user fields match
/// `want` (`*` matches anything; a field we do not know matches only `*`).
pub fn pgpass_lookup(text: &str, want: [Option<&str>; 4]) -> Option<String> {
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let fields = split_pgpass_line(line);
        if fields.len() < 5 {
            continue;
        }
        let matches = fields
            .iter()
            .zip(want)
            .all(|(field, want)| field == "*" || Some(field.as_str()) == want);
        if matches {
            return Some(fields[4..].join(":"));
        }
    }
    None
}

/// A pgpass line's `:`-separated fields, with `\:` and `\\` unescaped.
fn split_pgpass_line(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(field)) = (chars.next(), fields.last_mut()) {
                    field.push(next);
                }
            }
            ':' => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields
}

/// The TLS connector for `sslmode=prefer` and `sslmode=require`: the connection is encrypted
/// and the handshake's signatures are checked, but, as libpq does in these modes, the
/// server's certificate is not checked against a certificate authority.
pub fn tls_connector() -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = EncryptOnly {
        algorithms: provider.signature_verification_algorithms,
    };
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// Accepts any server certificate and checks that the server holds its key.
#[derive(Debug)]
struct EncryptOnly {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
