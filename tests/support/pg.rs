//! A throwaway PostgreSQL server for tests: `initdb` into a temporary directory, `pg_ctl
//! start` on a Unix socket in that directory and a free loopback port, and on drop
//! `pg_ctl stop -m immediate` and the directory removed. [`TempPostgres::shared`] starts one
//! per test binary; each test takes a fresh database from it with
//! [`TempPostgres::create_database`].
//!
//! The server refuses to run as root, so as root the server binaries run as the `postgres`
//! user (`runuser -u postgres --`) in a directory owned by it. Unix socket connections are
//! trusted; TCP connections authenticate with a password (SCRAM), as role [`ROLE`] with
//! [`TempPostgres::password`]. The server has TLS on when `openssl` could make it a
//! certificate.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// The environment variable that chooses the backend of every store a test opens:
/// `postgres` runs the suite with each store in a database of the test binary's server
/// ([`stand_in_url`]); unset, empty or `redb` keeps the redb files.
pub const SUITE_STORE_VAR: &str = "STORE_UNDER_TEST";

/// How a test cuts a running glassbox off part way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// SIGKILL: no cleanup runs.
    Kill,
    /// Its PostgreSQL server stops ([`TempPostgres::stop`]): the run fails on its next store
    /// call.
    StoreLost,
}

/// Whether this test run keeps its stores on PostgreSQL ([`SUITE_STORE_VAR`]). Panics on
/// a value it does not know, so a typo never runs the suite on the wrong backend.
pub fn suite_on_postgres() -> bool {
    match std::env::var(SUITE_STORE_VAR).as_deref() {
        Err(_) | Ok("" | "redb") => false,
        Ok("postgres") => true,
        Ok(other) => panic!("{SUITE_STORE_VAR}={other:?}: expected postgres or redb"),
    }
}

/// On a PostgreSQL run ([`suite_on_postgres`]), the URL of the database that stands in for
/// the redb file at `path`: one database per path on [`TempPostgres::shared`], created on
/// first use, so opening the same path again (in this process or in a glassbox process it
/// starts) opens the same data. `None` on a redb run.
pub fn stand_in_url(path: &Path) -> Option<String> {
    use std::collections::HashSet;
    use std::hash::{DefaultHasher, Hash, Hasher};
    use std::sync::Mutex;

    static CREATED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    if !suite_on_postgres() {
        return None;
    }
    // Made absolute without touching the file system: the file need not exist yet.
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut hasher = DefaultHasher::new();
    path.hash(&mut hasher);
    let name = format!("s{:016x}", hasher.finish());
    let server = TempPostgres::shared();
    let mut created = CREATED.lock().unwrap_or_else(|e| e.into_inner());
    if created
        .get_or_insert_with(HashSet::new)
        .insert(name.clone())
    {
        server.admin(&format!("CREATE DATABASE {name} OWNER {ROLE}"));
    }
    Some(server.socket_url(&name))
}

/// The role test databases belong to.
pub const ROLE: &str = "glassbox";

/// The superuser `initdb` creates.
const SUPERUSER: &str = "postgres";

/// A running throwaway server.
pub struct TempPostgres {
    /// Holds the data directory, the socket and the log; removed on drop.
    root: PathBuf,
    bin: PathBuf,
    port: u16,
    password: String,
    tls: bool,
    as_postgres: bool,
    /// Stops the server and removes `root` once this process has gone, for a server that
    /// is never dropped (the shared one lives in a static).
    watchdog: Option<Child>,
}

impl TempPostgres {
    /// The server of this test binary, started by the first call. Panics with the server's
    /// log when it cannot start.
    pub fn shared() -> &'static TempPostgres {
        static SHARED: OnceLock<TempPostgres> = OnceLock::new();
        SHARED.get_or_init(|| match TempPostgres::start() {
            Ok(server) => server,
            Err(e) => panic!("cannot start a test PostgreSQL server: {e}"),
        })
    }

    /// Starts a new server.
    pub fn start() -> io::Result<TempPostgres> {
        let bin = find_bin_dir()?;
        let as_postgres = effective_uid()? == 0;
        let root = std::env::temp_dir().join(format!(
            "glassbox-pg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // A directory a killed run of a process with the same id left behind.
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root)?;
        let mut server = TempPostgres {
            root,
            bin,
            port: 0,
            password: format!("pw-{:016x}", random_u64()),
            tls: false,
            as_postgres,
            watchdog: None,
        };
        if as_postgres {
            run(Command::new("chown")
                .arg(format!("{SUPERUSER}:"))
                .arg(&server.root))?;
        }
        server.watchdog = Some(server.spawn_watchdog()?);
        server.init()?;
        let mut last = None;
        for _ in 0..3 {
            server.port = free_port()?;
            match server.pg_ctl_start() {
                Ok(()) => {
                    last = None;
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        if let Some(e) = last {
            return Err(e);
        }
        server.create_role()?;
        Ok(server)
    }

    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    /// The directory holding the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.root
    }

    /// The loopback TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The password of [`ROLE`] over TCP.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// Whether the server accepts TLS connections.
    pub fn tls(&self) -> bool {
        self.tls
    }

    /// A new empty database owned by [`ROLE`]; its name.
    pub fn create_database(&self) -> String {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let name = format!("t{}", COUNT.fetch_add(1, Ordering::Relaxed));
        self.admin(&format!("CREATE DATABASE {name} OWNER {ROLE}"));
        name
    }

    /// A URL for `db` over the Unix socket as [`ROLE`] (no password needed).
    pub fn socket_url(&self, db: &str) -> String {
        format!(
            "postgresql://{ROLE}@/{db}?host={}&port={}",
            self.root.display(),
            self.port
        )
    }

    /// A URL for `db` over TCP as [`ROLE`], with `password` in it when given.
    pub fn tcp_url(&self, db: &str, password: Option<&str>) -> String {
        let creds = match password {
            Some(password) => format!("{ROLE}:{password}"),
            None => ROLE.to_owned(),
        };
        format!("postgresql://{creds}@127.0.0.1:{}/{db}", self.port)
    }

    /// Stops the server (`-m fast`): every connection is cut, as a lost network would, and
    /// what was committed is kept — an immediate stop could lose the last commits, since
    /// these servers run with `synchronous_commit=off`. [`TempPostgres::start_again`]
    /// brings it back with its data.
    pub fn stop(&self) {
        let out = self
            .server_cmd("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["stop", "-m", "fast", "-w"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl stop: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts a server [`TempPostgres::stop`] stopped, on the same port and socket.
    pub fn start_again(&self) {
        self.pg_ctl_start().unwrap();
    }

    /// Runs `sql` as the superuser over the socket, in database `postgres`.
    pub fn admin(&self, sql: &str) {
        self.admin_in("postgres", sql);
    }

    /// Runs `sql` as the superuser over the socket, in database `db`.
    pub fn admin_in(&self, db: &str, sql: &str) {
        let url = format!(
            "postgresql://{SUPERUSER}@/{db}?host={}&port={}",
            self.root.display(),
            self.port
        );
        // On a thread of its own: the synchronous client cannot run on the thread of an
        // async runtime, where a test may call this from.
        let run = || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls)
                .unwrap_or_else(|e| panic!("admin connection to {db}: {e}"));
            client
                .batch_execute(sql)
                .unwrap_or_else(|e| panic!("admin SQL {sql:?}: {e}"));
        };
        std::thread::scope(|s| {
            if let Err(panic) = s.spawn(run).join() {
                std::panic::resume_unwind(panic);
            }
        });
    }

    /// A command running `program` from the server's bin directory, as `postgres` when we
    /// are root.
    fn server_cmd(&self, program: &str) -> Command {
        self.user_cmd(self.bin.join(program).as_os_str())
    }

    /// A command running `program`, as `postgres` when we are root.
    fn user_cmd(&self, program: &std::ffi::OsStr) -> Command {
        if self.as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", SUPERUSER, "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
        }
    }

    fn init(&mut self) -> io::Result<()> {
        let data = self.data();
        run(self
            .server_cmd("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", SUPERUSER, "-E", "UTF8", "--locale=C", "--auth=trust"])
            .arg("--no-sync"))?;
        fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\n\
             host all all 127.0.0.1/32 scram-sha-256\n",
        )?;
        self.tls = self
            .user_cmd("openssl".as_ref())
            .current_dir(&data)
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.crt",
                "-days",
                "2",
                "-subj",
                "/CN=localhost",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        Ok(())
    }

    fn pg_ctl_start(&self) -> io::Result<()> {
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=200 -c shared_buffers=32MB",
            self.port,
            self.root.display()
        );
        if self.tls {
            options.push_str(" -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key");
        }
        let log = self.root.join("server.log");
        let out = self
            .server_cmd("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", "60", "-o", &options, "start"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()?;
        if out.status.success() {
            return Ok(());
        }
        let log = fs::read_to_string(&log).unwrap_or_default();
        Err(io::Error::other(format!(
            "pg_ctl start failed: {}\n{log}",
            String::from_utf8_lossy(&out.stderr)
        )))
    }

    fn create_role(&self) -> io::Result<()> {
        self.admin(&format!(
            "CREATE ROLE {ROLE} LOGIN PASSWORD '{}'",
            self.password
        ));
        Ok(())
    }

    /// `sh` that waits for this process to end, then stops the server and removes the
    /// directory. In its own process group, so a Ctrl-C of the test run does not stop it
    /// before it has cleaned up.
    fn spawn_watchdog(&self) -> io::Result<Child> {
        use std::os::unix::process::CommandExt;
        let stop = self.stop_command_line();
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; {stop} >/dev/null 2>&1; rm -rf '{root}'",
            pid = std::process::id(),
            root = self.root.display(),
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
    }

    fn stop_command_line(&self) -> String {
        let pg_ctl = self.bin.join("pg_ctl");
        let runuser = if self.as_postgres {
            format!("runuser -u {SUPERUSER} -- ")
        } else {
            String::new()
        };
        format!(
            "{runuser}'{}' -D '{}' stop -m immediate -w",
            pg_ctl.display(),
            self.data().display()
        )
    }
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        let _ = self
            .server_cmd("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["stop", "-m", "immediate", "-w"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = fs::remove_dir_all(&self.root);
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
    }
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The directory with `initdb`, `pg_ctl` and `postgres`: the one `initdb` on `PATH` is in
/// (following symlinks), else the newest `/usr/lib/postgresql/*/bin`.
fn find_bin_dir() -> io::Result<PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let initdb = dir.join("initdb");
            if initdb.is_file()
                && let Ok(real) = fs::canonicalize(&initdb)
                && let Some(bin) = real.parent()
                && bin.join("pg_ctl").is_file()
            {
                return Ok(bin.to_path_buf());
            }
        }
    }
    let mut found: Vec<PathBuf> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    found.sort_by_key(|bin| {
        bin.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "no initdb on PATH or in /usr/lib/postgresql/*/bin (run scripts/setup.sh)",
        )
    })
}

/// The effective user id: the owner of `/proc/self`.
fn effective_uid() -> io::Result<u32> {
    use std::os::unix::fs::MetadataExt;
    Ok(fs::metadata("/proc/self")?.uid())
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn random_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// Runs `cmd` to completion; its stderr in the error when it fails.
fn run(cmd: &mut Command) -> io::Result<()> {
    let out = cmd.stdin(Stdio::null()).stdout(Stdio::null()).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{:?} failed: {}",
            cmd,
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}
