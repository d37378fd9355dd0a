//! The operator command line, run as a real process: migrate, seed, token issue, and
//! connection failures reported with their real cause.

use serde_json::Value;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn wpds(args: &[&str], database_url: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wpds"))
        .args(args)
        .env("DATABASE_URL", database_url)
        .env_remove("WPDS_LOG")
        .output()
        .expect("wpds runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct ScratchFile(std::path::PathBuf);

impl ScratchFile {
    fn new(name: &str) -> Self {
        ScratchFile(std::env::temp_dir().join(format!("wpds-cli-{}-{name}", uuid::Uuid::new_v4().simple())))
    }
    fn url(&self) -> String {
        format!("sqlite://{}", self.0.display())
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/demo.json");

#[test]
fn migrate_applies_the_migrations_once() {
    let db = ScratchFile::new("migrate.sqlite3");
    let first = wpds(&["migrate"], &db.url());
    assert!(first.status.success(), "{}", text(&first.stderr));
    let migrations =
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/crates/storage/migrations/sqlite"))
            .unwrap()
            .filter(|entry| entry.as_ref().is_ok_and(|e| e.path().join("up.sql").exists()))
            .count();
    let expected = format!("applied {migrations} migration(s)");
    assert!(text(&first.stdout).starts_with(&expected), "{}", text(&first.stdout));
    let second = wpds(&["migrate"], &db.url());
    assert_eq!(text(&second.stdout).trim(), "the database is up to date");
}

#[test]
fn seeding_the_same_file_twice_changes_nothing() {
    let db = ScratchFile::new("seed.sqlite3");
    let first = wpds(&["seed", DEMO], &db.url());
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout).contains("total: 110 inserted, 0 already present"),
        "{}",
        text(&first.stdout)
    );
    let second = wpds(&["seed", DEMO], &db.url());
    assert!(
        text(&second.stdout).contains("total: 0 inserted, 110 already present"),
        "{}",
        text(&second.stdout)
    );
}

#[test]
fn a_bad_fixture_is_refused_naming_the_record_and_field_and_loads_nothing() {
    let db = ScratchFile::new("bad.sqlite3");
    let fixture = ScratchFile::new("bad.json");
    let mut demo: Value = serde_json::from_str(&std::fs::read_to_string(DEMO).unwrap()).unwrap();
    demo["documents"][2]["scope"] = Value::from("memo");
    std::fs::write(&fixture.0, demo.to_string()).unwrap();
    let output = wpds(&["seed", fixture.0.to_str().unwrap()], &db.url());
    assert!(!output.status.success());
    let message = text(&output.stderr);
    assert!(message.contains("documents[2]") && message.contains("/documents/2/scope"), "{message}");
    let fine = wpds(&["seed", DEMO], &db.url());
    assert!(
        text(&fine.stdout).contains("total: 110 inserted"),
        "nothing was loaded before: {}",
        text(&fine.stdout)
    );
}

#[test]
fn token_issue_prints_a_pair_as_json() {
    let db = ScratchFile::new("token.sqlite3");
    assert!(wpds(&["seed", DEMO], &db.url()).status.success());
    let output = wpds(&["token", "issue", "--user", "5"], &db.url());
    assert!(output.status.success(), "{}", text(&output.stderr));
    let pair: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert!(pair["accessToken"].as_str().is_some_and(|t| t.starts_with("at_") && t.len() >= 46), "{pair}");
    assert!(pair["refreshToken"].as_str().is_some_and(|t| t.starts_with("rt_")));
    assert_eq!((pair["tokenType"].as_str(), pair["expiresIn"].as_i64()), (Some("Bearer"), Some(900)));
    let unknown = wpds(&["token", "issue", "--user", "404"], &db.url());
    assert!(!unknown.status.success());
    assert!(text(&unknown.stderr).contains("user 404"), "{}", text(&unknown.stderr));
}

#[test]
fn an_unreachable_postgresql_is_reported_with_its_cause_at_once() {
    let started = Instant::now();
    let output = wpds(&["migrate"], "postgres://postgres@127.0.0.1:1/wpds");
    assert!(!output.status.success());
    assert!(started.elapsed() < Duration::from_secs(5), "no 30 s of pool retries: {:?}", started.elapsed());
    let message = text(&output.stderr);
    assert!(message.contains("cannot connect to PostgreSQL") && message.contains("refused"), "{message}");
}

#[test]
fn serve_help_lists_every_setting_with_its_environment_variable() {
    let output = wpds(&["serve", "--help"], "sqlite://unused");
    let help = text(&output.stdout);
    for variable in [
        "WPDS_BIND",
        "DATABASE_URL",
        "WPDS_DB_POOL_SIZE",
        "WPDS_DB_TIMEOUT_MS",
        "WPDS_ACCESS_TOKEN_TTL",
        "WPDS_REFRESH_TOKEN_TTL",
        "WPDS_LOG",
        "WPDS_WORKERS",
        "WPDS_SHUTDOWN_TIMEOUT",
        "WPDS_RATE_LIMIT_PER_MINUTE",
    ] {
        assert!(help.contains(&format!("env: {variable}=")), "{variable} missing from:\n{help}");
    }
}
