//! Serves one fixture stream (or a `*.script.json` script) forever on 127.0.0.1 and prints
//! the URL, so the real client can be pointed at a scripted response by hand.
//!
//! `cargo run --release --example scripted_server -- tests/fixtures/streams/X [port]`

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: scripted_server <fixture file or *.script.json> [port]");
        return ExitCode::from(2);
    };
    if !std::path::Path::new(&path).is_file() {
        eprintln!("scripted_server: no such file: {path}");
        return ExitCode::from(2);
    }
    let port = match args.next().map(|p| p.parse::<u16>()) {
        None => 0,
        Some(Ok(p)) => p,
        Some(Err(e)) => {
            eprintln!("scripted_server: bad port: {e}");
            return ExitCode::from(2);
        }
    };
    let mut script = support::Script::load(&path);
    script.repeat_last = true;
    let server = support::ScriptedServer::start_on(&format!("127.0.0.1:{port}"), script).await;
    println!("serving {path} at {}", server.url());
    println!(
        "  anthropic: --base-url {}   openai: --base-url {}/v1   ollama: --base-url {}",
        server.url(),
        server.url(),
        server.url()
    );
    let _ = tokio::signal::ctrl_c().await;
    let n = server.requests().len();
    println!("served {n} request(s)");
    ExitCode::SUCCESS
}
