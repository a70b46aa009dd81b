//! Which memory pages a process takes. mimalloc asks for transparent huge pages, so that a
//! command going through tens of megabytes takes one page fault per 2 MiB rather than per
//! 4 KiB; a process that stays up, and a Claude Code import, turn them off for themselves
//! ([`wants_small_pages`], [`small_pages`]).

use super::{Command, import::ImportCmd};

/// Whether the process keeps to small pages: one that stays up (the TUI, the MCP server),
/// so that its memory stays close to what it uses and no fault waits on the kernel
/// gathering a huge page; and a Claude Code import, whose threads make many small
/// allocations, where huge pages cost more zeroing than the faults they saved (2,500
/// session files: 2.87 s with them, 2.74 s without, medians of 7).
pub fn wants_small_pages(command: Option<&Command>) -> bool {
    match command {
        None => true,
        Some(Command::Replay(args)) => !args.print,
        Some(Command::Mcp(args)) => !args.print_token,
        Some(Command::Import(ImportCmd::ClaudeCode(_))) => true,
        Some(_) => false,
    }
}

/// Turns transparent huge pages off for this process, so that its memory stays close to
/// what it uses and no fault waits while the kernel gathers a huge page (see
/// [`wants_small_pages`]). Called first thing, before other threads start.
pub fn small_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_thp_disable(true) {
        // Huge pages are no fault: they only cost more memory.
        eprintln!("glassbox: could not turn transparent huge pages off ({e}); going on");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use clap::Parser;

    use super::*;
    use crate::cli::Cli;

    fn small(args: &[&str]) -> bool {
        let cli =
            Cli::try_parse_from(std::iter::once("glassbox").chain(args.iter().copied())).unwrap();
        wants_small_pages(cli.command.as_ref())
    }

    #[test]
    fn the_tui_the_mcp_server_and_a_claude_code_import_keep_to_small_pages() {
        assert!(small(&[]));
        assert!(small(&["mcp"]));
        assert!(small(&["mcp", "--http"]));
        assert!(small(&["import", "claude-code", "--watch"]));
        assert!(small(&["import", "claude-code"]));
        assert!(small(&["replay", "0198a0c6-0000-7000-8000-000000000000"]));
    }

    #[test]
    fn other_commands_take_huge_pages() {
        assert!(!small(&["ask", "why"]));
        assert!(!small(&["mcp", "--print-token"]));
        assert!(!small(&["import", "json", "x.json"]));
        assert!(!small(&[
            "replay",
            "0198a0c6-0000-7000-8000-000000000000",
            "--print"
        ]));
        assert!(!small(&["export", "0198a0c6-0000-7000-8000-000000000000"]));
        assert!(!small(&["sessions", "list"]));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn small_pages_turns_huge_pages_off_for_the_process() {
        small_pages();
        assert!(nix::sys::prctl::get_thp_disable().unwrap());
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        assert!(
            status
                .lines()
                .any(|l| l.split_whitespace().eq(["THP_enabled:", "0"])),
            "{status}"
        );
    }
}
