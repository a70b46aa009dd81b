//! The glassbox binary as a user runs it: a data dir of its own, no provider settings from
//! the caller's environment, nothing on stdin.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary with `data` as its data dir (and its config dir inside it).
pub fn glassbox(data: &Path) -> Command {
    // `option_env!`: examples and benches share this folder, and cargo names the binary to
    // integration tests only, which are the only callers.
    #[allow(clippy::option_env_unwrap)]
    let exe = option_env!("CARGO_BIN_EXE_glassbox").expect("integration tests only");
    let mut c = Command::new(exe);
    c.env("GLASSBOX_DATA_DIR", data)
        .env("GLASSBOX_CONFIG_DIR", data.join("config"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OLLAMA_HOST")
        .env_remove("GLASSBOX_PROVIDER")
        .env_remove("GLASSBOX_MODEL")
        .env_remove("GLASSBOX_STORE_URL")
        .envs(store_env(data))
        .stdin(Stdio::null());
    c
}

/// [`glassbox`] on the data dir's redb file, whichever backend the suite runs on: for tests
/// of the file itself (or of copies between the two backends).
pub fn on_file(data: &Path) -> Command {
    let mut c = glassbox(data);
    c.env_remove("GLASSBOX_STORE_URL");
    c
}

/// The store setting of a glassbox process with `data` as its data dir: on a PostgreSQL
/// run of the suite, `GLASSBOX_STORE_URL` naming the database that stands in for the data
/// dir's redb file (the one `support::store::open` opens for that path); else nothing.
pub fn store_env(data: &Path) -> Option<(&'static str, String)> {
    super::pg::stand_in_url(&data.join("glassbox.redb")).map(|url| ("GLASSBOX_STORE_URL", url))
}

/// Runs `cmd` with `input` on its standard input; returns its output whatever the exit.
pub fn with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Runs `cmd`, failing the test with its stderr when it does not succeed.
pub fn ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A data dir and a project dir (with `.git`, so it is the memory's project scope) of their
/// own; commands run from the project dir.
pub struct Project {
    _dir: tempfile::TempDir,
    pub data: PathBuf,
    pub project: PathBuf,
}

impl Project {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        Self {
            _dir: dir,
            data,
            project,
        }
    }

    /// Another data dir for the same project dir.
    pub fn same_project(&self) -> Self {
        Self {
            project: self.project.clone(),
            ..Self::new()
        }
    }

    pub fn cmd(&self) -> Command {
        let mut c = glassbox(&self.data);
        c.current_dir(&self.project);
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        ok(self.cmd().args(args))
    }

    /// Runs `args` and reads its standard output as JSON.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_slice(&self.run(args).stdout).unwrap()
    }
}

/// A `--json` run started by [`run_until`]: the process, what is left of its stdout, and
/// the run id its `start` event named.
pub struct JsonRun {
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
    pub run: String,
}

/// Starts `cmd` (a `--json` run; stdout and stderr piped) and reads its events until `stop`
/// holds for one.
// The child is handed back and waited for by `JsonRun::kill` or `fails_on_lost_store`; only
// a failed test leaves it, and the test process ends then.
#[allow(clippy::zombie_processes)]
pub fn run_until(mut cmd: Command, stop: impl Fn(&serde_json::Value) -> bool) -> JsonRun {
    use std::io::BufRead;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut run = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            let status = child.wait().unwrap();
            panic!("the run ended ({status}) before the event waited for");
        }
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "start" {
            run = v["runId"].as_str().unwrap().to_string();
        }
        if stop(&v) {
            return JsonRun { child, out, run };
        }
    }
}

impl JsonRun {
    /// SIGKILL: no cleanup runs.
    pub fn kill(mut self) -> String {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.run
    }

    /// Waits for a run whose store went away: it fails, its last event is one error line
    /// naming the store, and stderr is empty.
    pub fn fails_on_lost_store(mut self) -> String {
        use std::io::Read;
        let mut rest = String::new();
        self.out.read_to_string(&mut rest).unwrap();
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        let mut stderr = self.child.stderr.take().unwrap();
        stderr.read_to_string(&mut err).unwrap();
        assert!(!status.success(), "the run fails without its store");
        let last: serde_json::Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "error", "{rest}");
        assert!(
            last["message"].as_str().unwrap().starts_with("store I/O"),
            "{last}"
        );
        assert!(err.is_empty(), "{err}");
        self.run
    }
}
