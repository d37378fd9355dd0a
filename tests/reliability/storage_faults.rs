//! Issue 11, "the SQLite writer heals": when SQLite cannot write its file, writes answer
//! 503 `unavailable` with `Retry-After` and `/readyz` answers 503; once the fault is
//! lifted, readiness and writes come back in the same process, without a restart.
//!
//! Two faults an operator meets, made for real:
//! - The database file made read-only (a restored backup, a volume remounted read-only)
//!   before the server's first write, then writable again. A connection SQLite opened on
//!   a read-only file stays read-only for its life, so only a writer that reopens its
//!   connection recovers. File modes do not bind root: when the tests run as root, the
//!   server runs as the unprivileged user 65534 (`setpriv`), which owns the files.
//! - A full disk: the database lives on a small tmpfs mounted in a mount namespace of the
//!   server's own (`unshare --mount`, so nothing outside sees it, and it goes with the
//!   process); the test fills it through `/proc/PID/root` and then frees the space. This
//!   needs the right to mount (root): the test is ignored unless asked for (`.ci/run`, as
//!   root, does), and fails saying why where it cannot mount.
//!
//! SQLite only: PostgreSQL's files are the database server's business, and its outage is
//! `outage.rs`.

use crate::harness::{Answer, Seeded, Server, agent, cell, put_cell, readyz};
use diesel::Connection;
use diesel::connection::SimpleConnection;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The unprivileged user (and group) the server runs as when the tests run as root.
const UNPRIVILEGED: u32 = 65534;
const DATE: &str = "2024-03-01";

/// The database file and the files SQLite keeps beside it, whichever exist.
fn sqlite_files(path: &Path) -> Vec<PathBuf> {
    ["", "-wal", "-shm"]
        .iter()
        .map(|suffix| PathBuf::from(format!("{}{suffix}", path.display())))
        .filter(|file| file.exists())
        .collect()
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod the database file");
}

/// How to start a server for which file modes bind: directly, unless this process is
/// root; then through `setpriv` as [`UNPRIVILEGED`], after giving it the database files.
/// `Err` (with the reason) when neither is possible.
fn unprivileged_launch(database: &Path) -> Result<Vec<String>, String> {
    let root = std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false);
    if !root {
        return Ok(Vec::new());
    }
    let setpriv = Command::new("setpriv").arg("--version").output();
    if !setpriv.is_ok_and(|o| o.status.success()) {
        return Err("the tests run as root and setpriv (util-linux) is not installed".to_owned());
    }
    for file in sqlite_files(database) {
        std::os::unix::fs::chown(&file, Some(UNPRIVILEGED), Some(UNPRIVILEGED)).expect("chown the database");
    }
    let id = UNPRIVILEGED.to_string();
    Ok(["setpriv", &format!("--reuid={id}"), &format!("--regid={id}"), "--clear-groups", "--"]
        .map(str::to_owned)
        .to_vec())
}

/// A 503 `unavailable` with a `Retry-After` of at least 1 s.
fn assert_unavailable(answer: &Answer) {
    assert_eq!((answer.status, answer.body["code"].as_str()), (503, Some("unavailable")), "{}", answer.body);
    let retry_after: u64 = answer.retry_after.as_deref().and_then(|v| v.parse().ok()).expect("Retry-After");
    assert!(retry_after >= 1, "Retry-After: {retry_after}");
}

#[test]
fn a_read_only_database_file_answers_503_and_writes_recover_without_a_restart_sqlite_only() {
    // Arrange: a server that has not written yet, for which the file's mode binds.
    let seeded = Seeded::sqlite();
    let path = PathBuf::from(seeded.database.url.trim_start_matches("sqlite://"));
    let launch = unprivileged_launch(&path).unwrap_or_else(|why| panic!("{why}"));
    let launch: Vec<&str> = launch.iter().map(String::as_str).collect();
    let server = Server::start_wrapped(&seeded.database.url, &[], &launch);
    let agent = agent();
    let write = |note: &str| {
        put_cell(&agent, &server.base, &seeded.token, &cell(DATE, "1", note, 1)).expect("an answer")
    };

    // Act: the file turns read-only before the first write.
    set_mode(&path, 0o444);
    let refused = write("while read-only");
    let unready = readyz(&agent, &server.base).expect("an answer");

    // Assert: 503 unavailable with Retry-After, and not ready.
    assert_unavailable(&refused);
    assert_eq!(unready, 503, "/readyz while the writer cannot write");

    // Act: the file is writable again; nothing restarts the server.
    set_mode(&path, 0o644);
    let mut ready = 0;
    crate::harness::wait_until("/readyz answers 200 again", Duration::from_secs(10), || {
        ready = readyz(&agent, &server.base).expect("an answer");
        ready == 200
    });
    let written = write("after the fault");

    // Assert: ready again without any write (its own probe reopened the writer's
    // connection), and the write lands.
    assert_eq!(written.status, 200, "{}", written.body);
    assert_eq!(written.body["entry"]["note"], "after the fault");
}

/// A directory removed when dropped (after the server, whose tmpfs was mounted on it).
struct MountPoint(PathBuf);

impl Drop for MountPoint {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Whether this process may mount a tmpfs in a mount namespace of its own; `Err` says why
/// not.
fn can_mount_tmpfs(at: &Path) -> Result<(), String> {
    let tried = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "--",
            "mount",
            "-t",
            "tmpfs",
            "-o",
            "size=1m",
            "wpds-probe",
        ])
        .arg(at)
        .output()
        .map_err(|e| format!("unshare (util-linux) cannot run: {e}"))?;
    if tried.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cannot mount a tmpfs in a mount namespace: {}",
            String::from_utf8_lossy(&tried.stderr).trim()
        ))
    }
}

/// Writes zeros to `path` until the file system has no byte left.
fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).expect("create the filler");
    for chunk in [65536, 4096, 1] {
        let zeros = vec![0u8; chunk];
        while file.write_all(&zeros).is_ok() {}
    }
    let error = file.write_all(&[0]).expect_err("the disk is full");
    assert_eq!(error.raw_os_error(), Some(28), "ENOSPC: {error}");
}

#[test]
#[ignore = "needs root (it mounts a tmpfs): run as root with `--ignored full_disk`"]
fn a_full_disk_answers_503_and_writes_recover_once_space_is_freed_without_a_restart_sqlite_only() {
    // Arrange: the seeded database, checkpointed into its one file, copied onto an 8 MiB
    // tmpfs that only the server's mount namespace has.
    let seeded = Seeded::sqlite();
    let source = PathBuf::from(seeded.database.url.trim_start_matches("sqlite://"));
    let mount =
        MountPoint(std::env::temp_dir().join(format!("wpds-full-disk-{}", uuid::Uuid::new_v4().simple())));
    std::fs::create_dir(&mount.0).expect("a mount point");
    if let Err(why) = can_mount_tmpfs(&mount.0) {
        panic!("this test needs root, to mount a tmpfs: {why}");
    }
    diesel::sqlite::SqliteConnection::establish(source.to_str().expect("a UTF-8 path"))
        .expect("open the seeded database")
        .batch_execute("PRAGMA wal_checkpoint(TRUNCATE)")
        .expect("checkpoint the seeded database");
    let name = source.file_name().expect("a file name").to_str().expect("UTF-8");
    let url = format!("sqlite://{}/{name}", mount.0.display());
    let script = r#"mount -t tmpfs -o size=8m wpds-disk "$0" && cp "$1" "$0/" && shift && exec "$@""#;
    let (at, from) = (mount.0.to_str().expect("UTF-8"), source.to_str().expect("UTF-8"));
    let server = Server::start_wrapped(
        &url,
        &[],
        &["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, at, from],
    );
    let agent = agent();
    let write = |note: &str, expected: i64| {
        put_cell(&agent, &server.base, &seeded.token, &cell(DATE, "1", note, expected)).expect("an answer")
    };
    let before = write("before the disk fills", 1);
    assert_eq!(before.status, 200, "{}", before.body);

    // Act: the disk fills up.
    let filler = PathBuf::from(format!("/proc/{}/root{}/filler", server.pid(), mount.0.display()));
    fill(&filler);
    let refused = write("while the disk is full", 2);
    let unready = readyz(&agent, &server.base).expect("an answer");

    // Assert
    assert_unavailable(&refused);
    assert_eq!(unready, 503, "/readyz while the disk is full");

    // Act: space is freed; nothing restarts the server.
    std::fs::remove_file(&filler).expect("free the space");
    let mut ready = 0;
    crate::harness::wait_until("/readyz answers 200 again", Duration::from_secs(10), || {
        ready = readyz(&agent, &server.base).expect("an answer");
        ready == 200
    });
    let written = write("after the disk had room again", 2);

    // Assert: the write that failed changed nothing; this one lands on version 3.
    assert_eq!(written.status, 200, "{}", written.body);
    assert_eq!(written.body["entry"]["version"], 3);
}
