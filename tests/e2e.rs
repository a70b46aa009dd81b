//! Runs the end-to-end TUI scripts (tests/e2e/*.sh) against the release binary in tmux.
//! They need tmux, and the first the local model (scripts/test.sh installs both): in CI
//! their absence fails; elsewhere a test skips with a loud message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn has_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `tests/e2e/<name>` with the binary's path; fails with its output.
fn run_script(name: &str) {
    let script = format!("{}/tests/e2e/{name}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_glassbox"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn tui_end_to_end_in_tmux() {
    let ci = in_ci();
    let has_tmux = has_tmux();
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
    run_script("tui.sh");
}

#[test]
fn a_signal_from_outside_quits_the_tui_and_gives_the_terminal_back() {
    if !has_tmux() {
        assert!(!in_ci(), "CI needs tmux for the end-to-end tests");
        eprintln!("\n!!! SKIPPING signals: needs tmux (run scripts/test.sh) !!!\n");
        return;
    }
    run_script("signals.sh");
}

#[test]
fn ctrl_c_stops_a_long_import_between_files_and_the_next_run_reads_the_rest() {
    if !has_tmux() {
        assert!(!in_ci(), "CI needs tmux for the end-to-end tests");
        eprintln!("\n!!! SKIPPING import-interrupt: needs tmux (run scripts/test.sh) !!!\n");
        return;
    }
    run_script("import_interrupt.sh");
}
