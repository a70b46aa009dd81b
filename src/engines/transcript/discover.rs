//! Finding transcripts: the default root, the `*.jsonl` files under the given paths oldest
//! first, a session's main file before its subagents, and `--since`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};

use super::TranscriptError;

/// The default transcript root: `${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects`.
pub fn default_root() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir).join("projects"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".claude").join("projects"))
}

/// The transcript files under `paths` (files are taken as given; folders are searched for
/// `*.jsonl`, subagent folders included), oldest first, a session's main file before its
/// subagents (see [`sort_transcripts`]). A missing path is an error; unreadable folders are
/// reported in `errors`.
pub fn discover(
    paths: &[PathBuf],
    errors: &mut Vec<String>,
) -> Result<Vec<PathBuf>, TranscriptError> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| TranscriptError::Io {
            path: p.display().to_string(),
            reason: if e.kind() == std::io::ErrorKind::NotFound {
                "does not exist".into()
            } else {
                e.to_string()
            },
        })?;
        if meta.is_file() {
            out.push(std::path::absolute(p).unwrap_or_else(|_| p.clone()));
        } else {
            let root = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            walk(&root, &mut out, errors);
        }
    }
    sort_transcripts(&mut out);
    out.dedup();
    Ok(out)
}

/// Sorts transcripts oldest first: by when their session's main file was last written (a
/// subagent's `<session>/subagents/…` file goes with `<session>.jsonl`, when that is in the
/// list), then by path bytes, which puts `<session>.jsonl` before `<session>/subagents/…`
/// (component order would not), so a subagent's Task call is in the store before its thread.
///
/// Node ids start with their line's time, so a history read in time order adds to the end of
/// the store's tables instead of all over them: each commit then rewrites few pages, and the
/// pages stay full (2,500 generated session files stored in 0.73× their size rather than
/// 0.95×, and read faster). A file whose time cannot be read goes first.
pub fn sort_transcripts(paths: &mut [PathBuf]) {
    let listed: std::collections::HashSet<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let written = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut keyed: Vec<(Option<SystemTime>, PathBuf)> = paths
        .iter()
        .map(|p| {
            let main = p.ancestors().skip(1).find_map(|dir| {
                let mut file = dir.as_os_str().to_owned();
                file.push(".jsonl");
                let file = PathBuf::from(file);
                listed.contains(file.as_path()).then_some(file)
            });
            (written(main.as_deref().unwrap_or(p)), p.clone())
        })
        .collect();
    keyed.sort_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| {
            a.1.as_os_str()
                .as_encoded_bytes()
                .cmp(b.1.as_os_str().as_encoded_bytes())
        })
    });
    for (slot, (_, p)) in paths.iter_mut().zip(keyed) {
        *slot = p;
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<String>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(format!("{}: {e}", dir.display()));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        // Symlinked folders are not followed (no cycles); symlinked files are read.
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            walk(&path, out, errors);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

/// Parses `--since`: `YYYY-MM-DD`, an RFC 3339 time, or a span back from now (`90d`, `12h`).
pub fn parse_since(text: &str) -> Result<SystemTime, TranscriptError> {
    let t = text.trim();
    let bad = || {
        TranscriptError::Invalid(format!(
            "--since '{text}': expected YYYY-MM-DD, an RFC 3339 time or a span like 90d / 12h"
        ))
    };
    if let Some(n) = t.strip_suffix('d').or_else(|| t.strip_suffix('h')) {
        let n: u64 = n.parse().map_err(|_| bad())?;
        let secs = if t.ends_with('d') {
            n * 86_400
        } else {
            n * 3_600
        };
        return Ok(SystemTime::now() - std::time::Duration::from_secs(secs));
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(SystemTime::from(dt.with_timezone(&Utc)));
    }
    let date = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").map_err(|_| bad())?;
    let dt = date.and_hms_opt(0, 0, 0).ok_or_else(bad)?.and_utc();
    Ok(SystemTime::from(dt))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    use super::discover;

    fn file_written(path: &Path, secs_ago: u64) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let f = std::fs::File::create(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
            .unwrap();
    }

    /// Sessions come oldest first, whatever their names; a subagent's file comes right
    /// after its session's main file even when it was last written before it (or after a
    /// later session), and a subagent whose main file is not there goes by its own time.
    #[test]
    fn transcripts_come_oldest_first_with_subagents_after_their_session() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("-home-dev-app");
        file_written(&p.join("aaa.jsonl"), 10);
        file_written(&p.join("zzz.jsonl"), 300);
        file_written(&p.join("zzz/subagents/agent-1.jsonl"), 400);
        file_written(&p.join("mmm.jsonl"), 200);
        file_written(&p.join("mmm/subagents/agent-2.jsonl"), 5);
        file_written(&p.join("gone/subagents/agent-3.jsonl"), 100);
        let mut errors = Vec::new();
        let files = discover(&[dir.path().to_path_buf()], &mut errors).unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        let names: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(&p).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "zzz.jsonl",
                "zzz/subagents/agent-1.jsonl",
                "mmm.jsonl",
                "mmm/subagents/agent-2.jsonl",
                "gone/subagents/agent-3.jsonl",
                "aaa.jsonl",
            ]
        );
    }
}
