//! PostgreSQL servers a test makes itself, from Debian's server binaries (`initdb`, `pg_ctl`,
//! `pg_basebackup`, under `/usr/lib/postgresql/*/bin`), on free loopback ports in a
//! directory of the test's own, run as an unprivileged user when the tests run as root
//! (`initdb` refuses root): for the failover (`failover.rs`) and the restore to a point in
//! time (`point_in_time.rs`), which need a server of their own, not `TEST_DATABASE_URL`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The unprivileged user the PostgreSQL servers run as when the tests run as root
/// (`initdb` refuses root).
pub const UNPRIVILEGED: u32 = 65534;

/// PostgreSQL's server binaries: the highest version under `/usr/lib/postgresql`.
pub fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| {
            dirs.flatten().map(|d| d.path().join("bin")).filter(|b| b.join("initdb").exists()).collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().expect(
        "this test needs PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup) under \
         /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)",
    )
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid only reads the process's credentials.
    unsafe { libc::geteuid() == 0 }
}

/// One of PostgreSQL's binaries with `args`, run as [`UNPRIVILEGED`] when this process is
/// root.
pub fn pg_command(program: &str, args: &[&str]) -> Command {
    let binary = bin_dir().join(program);
    let mut command = if is_root() {
        let id = UNPRIVILEGED.to_string();
        let mut command = Command::new("setpriv");
        command
            .args([&format!("--reuid={id}"), &format!("--regid={id}"), "--clear-groups", "--"])
            .arg(binary);
        command
    } else {
        Command::new(binary)
    };
    command.args(args);
    command
}

/// Runs one of PostgreSQL's binaries; fails the test if it fails.
pub fn pg(program: &str, args: &[&str]) {
    let output = pg_command(program, args).output().unwrap_or_else(|e| panic!("{program} runs: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// One PostgreSQL server of the test's cluster.
pub struct Node {
    /// Its data directory.
    pub data: PathBuf,
    /// The loopback port it listens on.
    pub port: u16,
}

impl Node {
    /// `initdb`s a server in `dir/name`, listening on a free loopback port (its socket in
    /// `dir`), with `settings` appended to its configuration, and starts it.
    pub fn initdb(dir: &Path, name: &str, settings: &str) -> Self {
        let node = Node { data: dir.join(name), port: crate::harness::free_port() };
        pg("initdb", &["-D", path(&node.data), "-U", "postgres", "--auth=trust", "--no-sync"]);
        let listen = format!(
            "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\n",
            node.port,
            path(dir)
        );
        append(&node.data.join("postgresql.conf"), &format!("{listen}{settings}"));
        node.start();
        node
    }

    /// Stops it at once if it runs; never panics (for a `Drop` while a failed test unwinds).
    pub fn stop_if_running(&self) {
        if self.data.join("postmaster.pid").exists() {
            let _ = pg_command("pg_ctl", &["-D", path(&self.data), "-m", "immediate", "-w", "stop"]).output();
        }
    }

    /// Starts it (`pg_ctl start`), its log beside its data directory.
    pub fn start(&self) {
        let log = self.data.with_extension("log");
        pg("pg_ctl", &["-D", path(&self.data), "-l", path(&log), "-w", "-t", "30", "start"]);
    }

    /// Stops it (`pg_ctl stop -m MODE`).
    pub fn stop(&self, mode: &str) {
        pg("pg_ctl", &["-D", path(&self.data), "-m", mode, "-w", "-t", "30", "stop"]);
    }

    /// Promotes it (`pg_ctl promote`).
    pub fn promote(&self) {
        pg("pg_ctl", &["-D", path(&self.data), "-w", "-t", "30", "promote"]);
    }

    /// A URL of this node alone.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Runs `sql` on this node's database `postgres` and returns what it printed (unaligned,
    /// tuples only).
    pub fn psql(&self, sql: &str) -> String {
        psql_on(&self.url("postgres"), sql)
    }
}

/// A new directory under the system's temporary one, named `prefix-…`, for a test's servers
/// (owned by [`UNPRIVILEGED`] when the tests run as root, so that its servers can write it).
pub fn directory(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", uuid::Uuid::new_v4().simple()));
    servers_dir(&dir);
    dir
}

/// Creates `dir` for the servers to write (owned by [`UNPRIVILEGED`] when the tests run as
/// root).
pub fn servers_dir(dir: &Path) {
    std::fs::create_dir(dir).expect("a directory for the servers");
    if is_root() {
        std::os::unix::fs::chown(dir, Some(UNPRIVILEGED), Some(UNPRIVILEGED)).expect("chown the directory");
    }
}

/// `p` as a command's argument.
pub fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// Appends `text` to `file` (a server's configuration).
pub fn append(file: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(file).expect("a configuration file");
    f.write_all(text.as_bytes()).expect("the configuration is written");
}

/// Runs `sql` on the database at `url` and returns what it printed.
pub fn psql_on(url: &str, sql: &str) -> String {
    let output = Command::new(bin_dir().join("psql")).args([url, "-tAc", sql]).output().expect("psql runs");
    assert!(output.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}
