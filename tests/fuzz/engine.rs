//! The fuzz loop every harness shares: inputs made from seeds by a deterministic generator,
//! each run under `catch_unwind` and timed, a watchdog for inputs that never return, and one
//! report row per harness.
//!
//! Budget: `FUZZ_SECONDS` (per harness, wall clock) or `FUZZ_CASES` (per harness); with
//! neither, each harness runs its own small default so the normal test suite stays quick.
//! `FUZZ_SEED` picks the base seed (input `i` of a harness is always made from
//! `(seed, harness, i)`, so a failure can be replayed), `FUZZ_REPORT` names a file the rows
//! are appended to. Inputs that panic or run longer than [`SLOW`] are saved under
//! `target/fuzz-crashes/`.

use std::cell::RefCell;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

/// An input slower than this fails the harness.
pub const SLOW: Duration = Duration::from_secs(1);
/// An input still running after this long is a hang: the watchdog saves it and aborts.
const HANG: Duration = Duration::from_secs(20);

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    static FUZZING: RefCell<bool> = const { RefCell::new(false) };
}

/// Installs (once) a panic hook that keeps the message of a panic inside a fuzz target for
/// the report instead of printing a backtrace per input; other panics print as usual.
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if FUZZING.with(|f| *f.borrow()) {
                let msg = match info.payload().downcast_ref::<&str>() {
                    Some(s) => s.to_string(),
                    None => info
                        .payload()
                        .downcast_ref::<String>()
                        .cloned()
                        .unwrap_or_else(|| "(non-string panic)".into()),
                };
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{at}")));
            } else {
                default(info);
            }
        }));
    });
}

/// How many inputs a harness runs, or for how long.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub cases: Option<u64>,
    pub until: Option<Instant>,
}

impl Budget {
    /// The budget from the environment, else `default_cases`.
    pub fn from_env(default_cases: u64) -> Self {
        let secs = std::env::var("FUZZ_SECONDS")
            .ok()
            .and_then(|s| s.parse::<f64>().ok());
        let cases = std::env::var("FUZZ_CASES")
            .ok()
            .and_then(|s| s.parse::<u64>().ok());
        match (secs, cases) {
            (None, None) => Self {
                cases: Some(default_cases),
                until: None,
            },
            (secs, cases) => Self {
                cases,
                until: secs.map(|s| Instant::now() + Duration::from_secs_f64(s)),
            },
        }
    }

    fn more(&self, done: u64) -> bool {
        self.cases.is_none_or(|c| done < c) && self.until.is_none_or(|t| Instant::now() < t)
    }
}

/// What one harness saw.
#[derive(Debug, Default)]
pub struct Outcome {
    pub inputs: u64,
    /// Inputs the decoder took as valid (got past parsing into real work).
    pub accepted: u64,
    pub panics: Vec<String>,
    pub slow: Vec<String>,
    pub slowest: Duration,
    pub slowest_len: usize,
}

fn base_seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15)
}

fn crash_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-crashes")
}

fn save(name: &str, i: u64, kind: &str, input: &[u8]) -> String {
    let dir = crash_dir();
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}-{kind}-{i}.bin"));
    let _ = std::fs::write(&path, input);
    path.display().to_string()
}

fn hash_name(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs `target` on inputs made by `make` until the budget is spent, then prints (and
/// appends to `FUZZ_REPORT`) the row `FUZZ-ROW name inputs accepted panics slow slowest_ms
/// bytes` and fails when any input panicked or took longer than [`SLOW`]. `target` returns
/// whether the input was accepted as valid, which only feeds the report.
pub fn run(
    name: &str,
    default_cases: u64,
    make: impl FnMut(&mut fastrand::Rng) -> Vec<u8>,
    target: impl FnMut(&[u8]) -> bool,
) {
    let out = fuzz(name, Budget::from_env(default_cases), make, target);
    report(name, &out);
    assert!(
        out.panics.is_empty(),
        "{name}: {} panic(s):\n{}",
        out.panics.len(),
        out.panics.join("\n")
    );
    assert!(
        out.slow.is_empty(),
        "{name}: {} input(s) over {SLOW:?}:\n{}",
        out.slow.len(),
        out.slow.join("\n")
    );
    assert!(out.inputs > 0, "{name}: no inputs ran");
}

/// The loop of [`run`], without the report and the verdict.
pub fn fuzz(
    name: &str,
    budget: Budget,
    mut make: impl FnMut(&mut fastrand::Rng) -> Vec<u8>,
    mut target: impl FnMut(&[u8]) -> bool,
) -> Outcome {
    install_hook();
    let seed = base_seed() ^ hash_name(name);
    let mut out = Outcome::default();

    // Watchdog: the start of the input in flight (ms since `t0`, 0 when idle) and its bytes.
    let t0 = Instant::now();
    let started = Arc::new(AtomicU64::new(0));
    let current: Arc<Mutex<Vec<u8>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let dog = {
        let (started, current, stop, name) = (
            started.clone(),
            current.clone(),
            stop.clone(),
            name.to_string(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let s = started.load(Ordering::Relaxed);
                if s != 0 && t0.elapsed().as_millis() as u64 > s + HANG.as_millis() as u64 {
                    let input = current.lock().map(|c| c.clone()).unwrap_or_default();
                    let path = save(&name, 0, "hang", &input);
                    eprintln!("FUZZ-HANG {name}: an input ran over {HANG:?}; saved to {path}");
                    std::process::abort();
                }
            }
        })
    };

    FUZZING.with(|f| *f.borrow_mut() = true);
    let mut i = 0u64;
    while budget.more(i) {
        let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(i.wrapping_mul(0x2545_f491)));
        let input = make(&mut rng);
        if let Ok(mut c) = current.lock() {
            c.clear();
            c.extend_from_slice(&input);
        }
        started.store((t0.elapsed().as_millis() as u64).max(1), Ordering::Relaxed);
        let t = Instant::now();
        let result = panic::catch_unwind(AssertUnwindSafe(|| target(&input)));
        let took = t.elapsed();
        started.store(0, Ordering::Relaxed);
        if took > out.slowest {
            out.slowest = took;
            out.slowest_len = input.len();
        }
        if matches!(result, Ok(true)) {
            out.accepted += 1;
        }
        if result.is_err() {
            let msg = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_default();
            let path = save(name, i, "panic", &input);
            out.panics.push(format!("input {i} ({path}): {msg}"));
        }
        if took > SLOW {
            let path = save(name, i, "slow", &input);
            out.slow.push(format!("input {i} ({path}) took {took:?}"));
        }
        i += 1;
    }
    FUZZING.with(|f| *f.borrow_mut() = false);
    stop.store(true, Ordering::Relaxed);
    let _ = dog.join();
    out.inputs = i;
    out
}

fn report(name: &str, out: &Outcome) {
    let row = format!(
        "FUZZ-ROW {name} {} {} {} {} {:.3} {}",
        out.inputs,
        out.accepted,
        out.panics.len(),
        out.slow.len(),
        out.slowest.as_secs_f64() * 1000.0,
        out.slowest_len
    );
    println!("{row}");
    if let Ok(path) = std::env::var("FUZZ_REPORT")
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        // One write per row: harnesses on other threads append to the same file.
        let _ = f.write_all(format!("{row}\n").as_bytes());
    }
}
