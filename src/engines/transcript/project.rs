//! The project a session belongs to: the name of the git repository its working directory is
//! in (found on this machine, worktrees included), else the directory's last path component.
//! Imported sessions carry their `cwd` in `Session.meta`; sessions without one have no
//! project.

use std::path::{Path, PathBuf};

use crate::store::Session;

/// The session's working directory (`meta.cwd`), if it has one.
pub fn session_cwd(s: &Session) -> Option<&str> {
    s.meta
        .get("cwd")
        .and_then(|v| v.as_str())
        .filter(|c| !c.trim().is_empty())
}

/// The session's git branch (`meta.git_branch`), if it has one.
pub fn session_git_branch(s: &Session) -> Option<&str> {
    s.meta
        .get("git_branch")
        .and_then(|v| v.as_str())
        .filter(|c| !c.trim().is_empty())
}

/// The session's project: see [`project_of_cwd`]. `None` for a session without a cwd.
pub fn session_project(s: &Session) -> Option<String> {
    session_cwd(s).and_then(project_of_cwd)
}

/// The project of a working directory: the name of the git repository that holds it when
/// that repository is on this machine (a worktree's main repository; a subdirectory's
/// repository), else the directory's last path component.
pub fn project_of_cwd(cwd: &str) -> Option<String> {
    let path = Path::new(cwd);
    if let Some(root) = git_repo_root(path)
        && let Some(name) = last_component(&root)
    {
        return Some(name);
    }
    last_component(path)
}

fn last_component(p: &Path) -> Option<String> {
    p.components()
        .rev()
        .find_map(|c| match c {
            std::path::Component::Normal(s) => s.to_str().map(str::to_string),
            _ => None,
        })
        .filter(|s| !s.is_empty())
}

/// The folder of the repository that holds `dir`: the nearest ancestor with a `.git`; for a
/// worktree (`.git` is a file `gitdir: REPO/.git/worktrees/NAME`), the main repository.
fn git_repo_root(dir: &Path) -> Option<PathBuf> {
    for d in dir.ancestors() {
        let git = d.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&git) else {
            continue;
        };
        if meta.is_dir() {
            return Some(d.to_path_buf());
        }
        if meta.is_file()
            && let Ok(text) = std::fs::read_to_string(&git)
            && let Some(gitdir) = text.trim().strip_prefix("gitdir:")
        {
            let gitdir = Path::new(gitdir.trim());
            // REPO/.git/worktrees/NAME → REPO
            let main = gitdir
                .ancestors()
                .find(|a| a.file_name().is_some_and(|n| n == ".git"))
                .and_then(Path::parent);
            return Some(main.map_or_else(|| d.to_path_buf(), Path::to_path_buf));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_missing_folder_is_named_by_its_last_component() {
        assert_eq!(
            project_of_cwd("/nowhere/at/all/glassbox-x1").as_deref(),
            Some("glassbox-x1")
        );
        assert_eq!(project_of_cwd("/nowhere/web/").as_deref(), Some("web"));
        assert_eq!(project_of_cwd("/"), None);
    }

    #[test]
    fn a_subfolder_of_a_repository_is_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("shop");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/cart")).unwrap();
        let cwd = repo.join("src/cart");
        assert_eq!(
            project_of_cwd(cwd.to_str().unwrap()).as_deref(),
            Some("shop")
        );
        // A worktree names its main repository.
        let wt = dir.path().join("shop-feature");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}/.git/worktrees/shop-feature\n", repo.display()),
        )
        .unwrap();
        assert_eq!(
            project_of_cwd(wt.to_str().unwrap()).as_deref(),
            Some("shop")
        );
    }
}
