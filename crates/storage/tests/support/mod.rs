//! What the storage crate's test files share.

use std::path::Path;

/// Removes a SQLite database file and its WAL and shared-memory files, whichever exist.
pub fn remove_sqlite_files(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
}
