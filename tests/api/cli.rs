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
    assert!(!text(&unknown.stderr).contains("no records yet"), "the database is not empty");
}

#[test]
fn token_issue_on_an_empty_database_says_how_to_load_data() {
    let db = ScratchFile::new("empty.sqlite3");
    let output = wpds(&["token", "issue", "--user", "5"], &db.url());
    assert!(!output.status.success());
    let message = text(&output.stderr);
    assert!(message.contains("user 5") && message.contains("no records yet"), "{message}");
    assert!(message.contains("wpds seed FILE.json") && message.contains("wpds serve --demo"), "{message}");
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
fn serve_help_and_the_readme_list_the_same_settings() {
    let output = wpds(&["serve", "--help"], "sqlite://unused");
    let help = text(&output.stdout);
    let in_help: std::collections::BTreeSet<String> = help
        .split("[env: ")
        .skip(1)
        .filter_map(|rest| rest.split(['=', ']']).next())
        .map(str::to_owned)
        .collect();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let table =
        readme.split("### Settings").nth(1).expect("a Settings section").split("\n\n").nth(2).unwrap_or("");
    let in_readme: std::collections::BTreeSet<String> = table
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_owned)
        .collect();
    assert!(in_help.len() >= 15, "{in_help:?} from:\n{help}");
    assert_eq!(in_help, in_readme, "serve --help (left) and the README's settings table (right) differ");
}

#[test]
fn healthcheck_exits_0_for_a_ready_server_and_1_naming_the_cause_otherwise() {
    let app = crate::support::spawn_app();
    let bind = app.base.trim_start_matches("http://").to_owned();
    let check = |args: &[&str], bind: &str| {
        Command::new(env!("CARGO_BIN_EXE_wpds"))
            .arg("healthcheck")
            .args(args)
            .env("WPDS_BIND", bind)
            .output()
            .expect("runs")
    };
    assert!(check(&[], &bind).status.success(), "ready");
    assert!(check(&["--live"], &bind).status.success(), "live");
    let port = bind.rsplit(':').next().unwrap();
    assert!(
        check(&[], &format!("0.0.0.0:{port}")).status.success(),
        "an unspecified bind is asked on loopback"
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let refused = check(&[], &closed);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains(&format!("/readyz at {closed}")), "{}", text(&refused.stderr));
}

#[test]
fn a_seeded_defect_the_build_does_not_know_stops_serve_naming_the_ones_it_does() {
    // Arrange: a test build (the defects of crates/storage/src/defects.rs exist only there).
    let db = ScratchFile::new("defect.sqlite3");

    // Act
    let refused = Command::new(env!("CARGO_BIN_EXE_wpds"))
        .arg("serve")
        .env("DATABASE_URL", db.url())
        .env("WPDS_BIND", "127.0.0.1:0")
        .env("WPDS_SEEDED_DEFECT", "no-such-defect")
        .output()
        .expect("wpds runs");

    // Assert
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    let said = text(&refused.stderr);
    assert!(
        said.contains("\"no-such-defect\" names no seeded defect (known: lost-update, duplicate-export, wrong-409-version)"),
        "{said}"
    );
}

#[test]
fn serve_demo_hands_out_tokens_that_live_a_day_and_the_root_leads_to_the_docs() {
    use std::io::BufRead;
    // Arrange: `wpds serve --demo` on a fresh file and a free port.
    let db = ScratchFile::new("demo.sqlite3");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wpds"))
        .args(["serve", "--demo"])
        .env("DATABASE_URL", db.url())
        .env("WPDS_BIND", format!("127.0.0.1:{port}"))
        .env("WPDS_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("wpds serve --demo starts");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = child.stdout.take().expect("its output");
    let _child = Kill(child);
    let printed: Vec<String> = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .take_while(|l| !l.contains("POST /v1/auth/refresh"))
        .collect();
    let refresh = printed
        .iter()
        .find_map(|l| l.strip_prefix("Refresh token of user 5: "))
        .unwrap_or_else(|| panic!("no refresh token printed: {printed:?}"))
        .to_owned();
    assert!(printed.iter().any(|l| l.contains("live 86400 s")), "it says how long tokens live: {printed:?}");
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).max_redirects(0).build().into();
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while agent.get(format!("{base}/healthz")).call().map(|r| r.status() != 200).unwrap_or(true) {
        assert!(Instant::now() < deadline, "the demo server did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }

    // Act: refresh the printed token; open the server's address.
    let mut refreshed = agent
        .post(format!("{base}/v1/auth/refresh"))
        .send_json(serde_json::json!({"refreshToken": refresh}))
        .unwrap();
    let root = agent.get(format!("{base}/")).call().unwrap();

    // Assert: a refreshed access token lives a day too; the root redirects to Swagger UI.
    assert_eq!(refreshed.status(), 200);
    let pair: Value = refreshed.body_mut().read_json().unwrap();
    assert_eq!(pair["expiresIn"], 86_400);
    assert_eq!(root.status(), 308);
    assert_eq!(root.headers().get("location").and_then(|v| v.to_str().ok()), Some("/docs/"));
}
