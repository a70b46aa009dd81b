//! The `glassbox` binary: parses the command line, then opens the TUI (no command, or
//! `replay` without `--print`) or runs the command headless through the cli.

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use glassbox::app;
use glassbox::cli::{self, Cli, Command};

/// mimalloc rather than the system allocator: an import allocates and frees millions of
/// small strings across three threads, where glibc's allocator spent an eighth of the time.
/// Built without transparent huge pages (Cargo.toml's `no_thp`): zeroing a fresh 2 MiB page
/// on first touch was a third of an import's kernel time.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit status of a process whose output pipe closed (128 + SIGPIPE), as Unix tools give.
const CLOSED_PIPE: i32 = 141;

/// `print!` panics when stdout is a closed pipe (`glassbox … | head -1`): that is no bug,
/// just the reader leaving, so the process ends quietly the way other Unix tools do.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to std") && msg.contains("Broken pipe") {
            std::process::exit(CLOSED_PIPE);
        }
        default(info);
    }));
}

/// Whether `err` is a write to a closed pipe (output written with `write!` rather than
/// `print!`).
fn closed_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| c.downcast_ref::<serde_json::Error>()?.io_error_kind())
            == Some(std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(err) if closed_pipe(&err) => ExitCode::from(CLOSED_PIPE as u8),
        Err(err) => {
            // One line for the cause chain; details are in the log file.
            let mut msg = format!("{err}");
            for cause in err.chain().skip(1) {
                let c = cause.to_string();
                if !msg.contains(&c) {
                    msg.push_str(": ");
                    msg.push_str(&c);
                }
            }
            eprintln!("glassbox: error: {msg}");
            ExitCode::from(1)
        }
    }
}

/// Completions need no config; everything else loads it, sets up logging and the async
/// runtime, and then goes to the TUI or to the command.
fn run(parsed: Cli) -> Result<ExitCode> {
    let Cli { global, command } = parsed;
    if let Some(Command::Completions { shell }) = command {
        return Ok(cli::print_completions(shell));
    }
    let ctx = match cli::load_ctx(&global) {
        Ok(ctx) => ctx,
        // A Claude Code hook never fails the session: it says why on stderr and goes on.
        Err(e) if cli::is_hook(command.as_ref()) => {
            return Ok(cli::hook_fail_open(command.as_ref(), &e));
        }
        Err(e) => return Err(e),
    };
    cli::init_logging(&ctx, global.verbose);
    let runtime = cli::runtime()?;
    match command {
        None => runtime.block_on(app::run(ctx)),
        Some(Command::Replay(args)) if !args.print => {
            let open = cli::replay::tui_replay(&ctx, &args)?;
            runtime.block_on(app::tui::run_replay(
                &ctx,
                open.session,
                open.speed,
                open.from,
                open.max_gap,
            ))
        }
        Some(command) => cli::run(&ctx, &runtime, command),
    }
}
