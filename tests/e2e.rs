//! Runs the end-to-end TUI script (tests/e2e/tui.sh) against the release binary in tmux.
//! Needs tmux and the local model (scripts/test.sh installs both): in CI their absence
//! fails; elsewhere the test skips with a loud message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn tui_end_to_end_in_tmux() {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let has_tmux = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    let model = glassbox::paths::default_models_dir().map(|d| glassbox::models::smollm2_path(&d));
    let has_model = model.as_ref().is_some_and(|m| m.is_file());
    if !(has_tmux && has_model && cfg!(feature = "local")) {
        assert!(
            !ci,
            "CI needs tmux and the local model for the end-to-end test"
        );
        eprintln!(
            "\n!!! SKIPPING e2e: needs tmux and the local model (run scripts/setup.sh) !!!\n"
        );
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/tui.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_glassbox"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "e2e failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
