//! The `glassbox` binary: parses the command line and hands off to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = glassbox::cli::Cli::parse();
    match glassbox::cli::run(cli) {
        Ok(code) => code,
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
