//! Migrations as a step of their own, as a deployment runs them (a Kubernetes Job, a compose
//! service the instances wait for), with real processes on either engine: `wpds migrate
//! --check` as the gate, `serve` with `WPDS_MIGRATE=false` refusing a schema that lacks a
//! migration (on PostgreSQL waiting for the step, within `WPDS_DB_WAIT_SECONDS`), a build
//! older than the schema (a rollback) serving on it, and the database URL read from a file
//! as container platforms mount secrets.

use crate::database::TestDatabase;
use crate::process::{Served, text, wpds};
use diesel::Connection;
use diesel::connection::SimpleConnection;
use std::time::{Duration, Instant};

/// This build's migrations of the engine of `url`, as `VERSION_NAME`, oldest first.
fn migrations_of(url: &str) -> Vec<String> {
    let engine = if url.starts_with("sqlite://") { "sqlite" } else { "postgres" };
    let dir = format!("{}/crates/storage/migrations/{engine}", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the migrations directory")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("up.sql").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Runs `sql` on the database at `url`, as an operator's client would.
fn execute(url: &str, sql: &str) {
    match url.strip_prefix("sqlite://") {
        Some(path) => diesel::SqliteConnection::establish(path).unwrap().batch_execute(sql).unwrap(),
        None => diesel::PgConnection::establish(url).unwrap().batch_execute(sql).unwrap(),
    }
}

#[test]
fn migrate_check_lists_the_pending_migrations_and_fails_until_migrate_has_run() {
    // Arrange: an empty database.
    let database = TestDatabase::fresh();
    let url = [("DATABASE_URL", database.url.as_str())];

    // Act
    let before = wpds(&["migrate", "--check"], &url);
    let migrated = wpds(&["migrate"], &url);
    let after = wpds(&["migrate", "--check"], &url);

    // Assert: every migration listed by name, exit 1; then nothing pending, exit 0.
    assert_eq!(before.status.code(), Some(1), "{}", text(&before.stderr));
    let expected: Vec<String> =
        migrations_of(&database.url).iter().map(|m| format!("pending: {m}")).collect();
    assert_eq!(text(&before.stdout).lines().collect::<Vec<_>>(), expected);
    assert!(text(&before.stderr).contains(&format!("{} migration(s) pending", expected.len())));
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
    assert_eq!(after.status.code(), Some(0), "{}", text(&after.stderr));
    assert_eq!(text(&after.stdout).trim(), "the database is up to date");
}

#[test]
fn a_server_that_does_not_migrate_refuses_a_schema_lacking_migrations_naming_them() {
    // Arrange: an empty database; no wait for PostgreSQL, so the refusal is at once.
    let database = TestDatabase::fresh();

    // Act
    let mut served = Served::start(&[
        ("DATABASE_URL", &database.url),
        ("WPDS_MIGRATE", "false"),
        ("WPDS_DB_WAIT_SECONDS", "0"),
    ]);

    // Assert: exit 1, the log naming every migration and the command that applies them;
    // nothing was applied.
    assert_eq!(served.exit_code(Duration::from_secs(30)), Some(1));
    let log = served.log_text();
    let migrations = migrations_of(&database.url);
    assert!(
        log.contains(&format!("the schema lacks {} migration(s) this build needs", migrations.len())),
        "{log}"
    );
    assert!(
        migrations.iter().all(|m| log.contains(m.as_str())) && log.contains("run `wpds migrate`"),
        "{log}"
    );
    let check = wpds(&["migrate", "--check"], &[("DATABASE_URL", &database.url)]);
    assert_eq!(check.status.code(), Some(1), "still pending: {}", text(&check.stdout));
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn on_postgresql_a_server_that_does_not_migrate_waits_for_the_migration_step_then_serves() {
    // Arrange: an empty database, a server that does not migrate and waits for it.
    let database = TestDatabase::postgres();
    let served = Served::start(&[
        ("DATABASE_URL", &database.url),
        ("WPDS_MIGRATE", "false"),
        ("WPDS_DB_WAIT_SECONDS", "60"),
    ]);
    served.wait_for(503, Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !served.log_text().contains("the schema lacks") {
        assert!(Instant::now() < deadline, "it never said why it waits:\n{}", served.log_text());
        std::thread::sleep(Duration::from_millis(50));
    }

    // Act: the migration step, as a Job or a one-shot service runs it.
    let migrated = wpds(&["migrate"], &[("DATABASE_URL", &database.url)]);

    // Assert: ready within its back-off (at most 5 s between tries), having applied nothing.
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
    served.wait_for(200, Duration::from_secs(15));
    assert!(
        served.log_text().contains("the database is reached; migrations applied: 0"),
        "{}",
        served.log_text()
    );
}

#[test]
fn a_build_older_than_the_schema_serves_on_it_and_says_so() {
    // Arrange: the demo's database, migrated by a later release (a migration this build
    // does not know, as after an upgrade that is rolled back).
    let database = TestDatabase::demo();
    execute(&database.url, "INSERT INTO __diesel_schema_migrations (version) VALUES ('29991231000000')");

    // Act: this build starts on it, migrating and not; the gate is asked.
    let check = wpds(&["migrate", "--check"], &[("DATABASE_URL", &database.url)]);
    let migrating = Served::start(&[("DATABASE_URL", &database.url)]);
    migrating.wait_for(200, Duration::from_secs(30));
    let not_migrating = Served::start(&[("DATABASE_URL", &database.url), ("WPDS_MIGRATE", "false")]);
    not_migrating.wait_for(200, Duration::from_secs(30));

    // Assert: both serve, saying the schema is newer; the gate passes and says so too.
    for served in [&migrating, &not_migrating] {
        let log = served.log_text();
        assert!(
            log.contains("the schema is newer than this build: it holds 1 migration(s) this build does not know (29991231000000)"),
            "{log}"
        );
    }
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    assert_eq!(
        text(&check.stdout).lines().collect::<Vec<_>>(),
        [
            "applied, unknown to this build (the schema is newer): 29991231000000",
            "the database is up to date"
        ]
    );
}

#[test]
fn the_database_url_is_read_from_the_file_its_file_variable_names_and_not_given_twice() {
    // Arrange: the URL in a file, as a container platform mounts a secret (a final line
    // break, as editors and `echo` leave one).
    let database = TestDatabase::demo();
    let file = std::env::temp_dir().join(format!("wpds-database-url-{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&file, format!("{}\n", database.url)).unwrap();
    let path = file.to_str().expect("a UTF-8 path");

    // Act
    let served = Served::start(&[("DATABASE_URL_FILE", path)]);
    served.wait_for(200, Duration::from_secs(30));
    let twice = wpds(&["migrate"], &[("DATABASE_URL_FILE", path), ("DATABASE_URL", &database.url)]);
    let flag_too = wpds(&["migrate", "--database-url", &database.url], &[("DATABASE_URL_FILE", path)]);
    let _ = std::fs::remove_file(&file);

    // Assert: the server reached the database the file names (it is ready, and says which
    // setting it took, not the secret); given both ways, a command refuses to start.
    assert!(served.log_text().contains("DATABASE_URL="), "{}", served.log_text());
    assert_eq!(twice.status.code(), Some(1));
    assert_eq!(
        text(&twice.stderr).trim(),
        "wpds: DATABASE_URL and DATABASE_URL_FILE are both set: give the setting one way"
    );
    assert_eq!(flag_too.status.code(), Some(1));
    assert!(text(&flag_too.stderr).contains("--database-url and DATABASE_URL_FILE are both given"));
}
