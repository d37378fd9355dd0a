//! `wpds serve --demo` as a person trying the README's first hour meets it, run as a real
//! process on either engine: the banner's tokens, a refresh token that never revokes them,
//! `--demo --reset` for a second go, its refusal on a database holding other data, a
//! banner of JSON lines when the log is JSON, and the tokens a client team's CI takes from
//! `POST /demo/tokens` when the image runs as a service container (`WPDS_DEMO=true`).

use crate::database::TestDatabase;
use serde_json::{Value, json};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `wpds serve --demo …`, killed on drop.
struct Demo {
    child: Child,
    base: String,
    /// What it printed on standard output up to the banner's last line.
    banner: Vec<String>,
}

impl Demo {
    /// Starts `wpds serve` with `args` on `database_url` and a free port, reads its banner
    /// (up to the line holding `last`) and waits until it is ready.
    fn start(database_url: &str, args: &[&str], settings: &[(&str, &str)], last: &str) -> Demo {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_wpds"))
            .arg("serve")
            .args(args)
            .env("DATABASE_URL", database_url)
            .env("WPDS_BIND", format!("127.0.0.1:{port}"))
            .env("WPDS_LOG", "info")
            .envs(settings.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wpds serve starts");
        let stdout = child.stdout.take().expect("its output");
        let mut banner = Vec::new();
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let done = line.contains(last);
            banner.push(line);
            if done {
                break;
            }
        }
        let demo = Demo { child, base: format!("http://127.0.0.1:{port}"), banner };
        let deadline = Instant::now() + Duration::from_secs(30);
        while agent().get(format!("{}/readyz", demo.base)).call().map(|r| r.status() != 200).unwrap_or(true) {
            assert!(
                Instant::now() < deadline,
                "the demo server did not come up; it printed {:?}",
                demo.banner
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        demo
    }

    /// The text after `prefix` on the banner line that starts with it.
    fn printed(&self, prefix: &str) -> String {
        self.banner
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in {:?}", self.banner))
            .to_owned()
    }

    /// Stops it with SIGTERM and returns what it wrote on standard error.
    fn stop(mut self) -> String {
        use std::io::Read;
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let mut log = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = stderr.read_to_string(&mut log);
        }
        let _ = self.child.wait();
        log
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).max_redirects(0).build().into()
}

/// The README's first write: `setOwnTimeLogCell`'s `firstWrite` example.
fn first_write(base: &str, token: &str) -> u16 {
    agent()
        .put(format!("{base}/v1/workspaces/1/time-log/cells"))
        .header("authorization", format!("Bearer {token}"))
        .send_json(json!({"projectId": "7", "date": "2026-11-20", "hours": "7.5", "expectedVersion": 1}))
        .expect("an answer")
        .status()
        .as_u16()
}

fn refresh(base: &str, refresh_token: &str) -> u16 {
    agent()
        .post(format!("{base}/v1/auth/refresh"))
        .send_json(json!({"refreshToken": refresh_token}))
        .expect("an answer")
        .status()
        .as_u16()
}

const LAST_TEXT_LINE: &str = "POST /v1/auth/refresh";

#[test]
fn the_demo_can_be_tried_twice_with_a_reset_between_and_its_refresh_token_never_revokes_the_pasted_token() {
    // Arrange: the demo on a fresh database, as the README starts it.
    let database = TestDatabase::fresh();
    let first = Demo::start(&database.url, &["--demo"], &[], LAST_TEXT_LINE);
    let member = first.printed("Access token of user 5 (member of workspace 1): ");
    let refresh_token = first.printed("Refresh token of user 5: ");

    // Act: the first write; the refresh token tried twice (the second is a reuse).
    assert_eq!(first_write(&first.base, &member), 200);
    assert_eq!(refresh(&first.base, &refresh_token), 200);
    assert_eq!(refresh(&first.base, &refresh_token), 401);

    // Assert: the reuse revoked the refresh token's own login, not the member's token; the
    // same example a second time is the contract's 409.
    assert_eq!(first_write(&first.base, &member), 409, "the member's token still works");
    first.stop();

    // Act: a second `--demo` keeps the data and says how to start afresh; `--reset` does.
    let again = Demo::start(&database.url, &["--demo"], &[], LAST_TEXT_LINE);
    assert!(
        again.banner.iter().any(|l| l.contains("not loaded again") && l.contains("--demo --reset")),
        "{:?}",
        again.banner
    );
    assert_eq!(
        first_write(&again.base, &again.printed("Access token of user 5 (member of workspace 1): ")),
        409
    );
    again.stop();
    let reset = Demo::start(&database.url, &["--demo", "--reset"], &[], LAST_TEXT_LINE);

    // Assert: the demo is as new: the first write works again, the old tokens are gone.
    assert!(
        reset.banner.iter().any(|l| l.starts_with("Reloaded the demo workspace") && l.contains("--reset")),
        "{:?}",
        reset.banner
    );
    assert_eq!(
        first_write(&reset.base, &reset.printed("Access token of user 5 (member of workspace 1): ")),
        200
    );
    assert_eq!(first_write(&reset.base, &member), 401, "the first run's token went with the reset");
}

#[test]
fn a_reset_refuses_a_database_holding_data_the_demo_does_not_have_and_changes_nothing() {
    // Arrange: the demo's records and one user more.
    let database = TestDatabase::fresh();
    let mut fixture: Value =
        serde_json::from_str(include_str!("../../fixtures/demo.json")).expect("the demo fixture");
    let mut extra = fixture["users"][0].clone();
    extra["id"] = json!("99");
    if let Some(email) = extra.get_mut("email") {
        *email = json!("someone.else@example.com");
    }
    fixture["users"].as_array_mut().expect("users").push(extra);
    let file = std::env::temp_dir().join(format!("wpds-demo-extra-{}.json", uuid::Uuid::new_v4().simple()));
    std::fs::write(&file, fixture.to_string()).expect("the fixture is written");
    let wpds = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_wpds"))
            .args(args)
            .env("DATABASE_URL", &database.url)
            .env("WPDS_BIND", "127.0.0.1:0")
            .output()
            .expect("wpds runs")
    };
    let seeded = wpds(&["seed", file.to_str().expect("a UTF-8 path")]);
    let _ = std::fs::remove_file(&file);
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));

    // Act
    let refused = wpds(&["serve", "--demo", "--reset"]);

    // Assert: it stops before serving, naming why; user 99 is still there.
    assert_eq!(refused.status.code(), Some(1));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("user(s) the file does not have (user 99 among them)"), "{said}");
    let issued = wpds(&["token", "issue", "--user", "99"]);
    assert!(issued.status.success(), "user 99 survived: {}", String::from_utf8_lossy(&issued.stderr));
}

#[test]
fn with_json_logs_the_demo_writes_nothing_but_json_lines_and_its_tokens_as_fields() {
    // Arrange, act: the demo with JSON logs.
    let database = TestDatabase::fresh();
    let demo = Demo::start(&database.url, &["--demo"], &[("WPDS_LOG_FORMAT", "json")], "\"expiresIn\"");
    let banner: Vec<Value> = demo
        .banner
        .iter()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("a plain line on standard output ({e}): {l}"))
        })
        .collect();
    let member = banner
        .iter()
        .find(|l| l["userId"] == "5" && l["accessToken"].is_string())
        .unwrap_or_else(|| panic!("no member token in {banner:?}"));
    assert_eq!(first_write(&demo.base, member["accessToken"].as_str().unwrap()), 200);
    let base = demo.base.clone();
    let log = demo.stop();

    // Assert: every line of both streams is a JSON object with the log's fields; the
    // start-up line names the address actually bound.
    for line in banner.iter().chain(
        log.lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("a plain line on standard error ({e}): {l}"))
            })
            .collect::<Vec<Value>>()
            .iter(),
    ) {
        for field in ["timestamp", "level", "target", "message"] {
            assert!(line.get(field).is_some(), "{field} missing: {line}");
        }
    }
    assert!(banner.iter().all(|l| l["target"] == "wpds::demo"), "{banner:?}");
    assert!(banner.iter().any(|l| l["refreshToken"].is_string()), "{banner:?}");
    let bound = base.trim_start_matches("http://");
    assert!(log.contains(&format!("\"listening on {bound} ")), "{log}");
}

/// `POST /demo/tokens` on `base`: its status, `Cache-Control` and body.
fn demo_tokens(base: &str) -> (u16, Option<String>, Value) {
    let mut answer = agent().post(format!("{base}/demo/tokens")).send_empty().expect("an answer");
    let cache = answer.headers().get("cache-control").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = answer.body_mut().read_json().unwrap_or(Value::Null);
    (answer.status().as_u16(), cache, body)
}

#[test]
fn a_ci_service_container_takes_fresh_tokens_from_post_demo_tokens_each_working_as_named() {
    // Arrange: the demo as a CI system's service container runs it: a variable, no argument.
    let database = TestDatabase::fresh();
    let demo = Demo::start(&database.url, &[], &[("WPDS_DEMO", "true")], LAST_TEXT_LINE);

    // Act: the recipe's one request, twice.
    let (status, cache, tokens) = demo_tokens(&demo.base);
    let (_, _, again) = demo_tokens(&demo.base);
    let token =
        |name: &str| tokens[name].as_str().unwrap_or_else(|| panic!("no {name} in {tokens}")).to_owned();
    let credit_reset = |token: &str| {
        agent()
            .post(format!("{}/admin/api/assistant/workspaces/1/credit-resets", demo.base))
            .header("authorization", format!("Bearer {token}"))
            .send_json(json!({"userId": "5", "cycle": "current", "reason": "CI"}))
            .expect("an answer")
            .status()
            .as_u16()
    };

    // Assert: a fresh set each time, never cached, each token the user its name says.
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(cache.as_deref(), Some("no-store"));
    assert_eq!(tokens["expiresIn"], 86_400);
    assert_ne!(tokens["memberToken"], again["memberToken"], "each call issues new logins");
    assert_eq!(first_write(&demo.base, &token("outsiderToken")), 403, "user 7 is outside workspace 1");
    assert_eq!(first_write(&demo.base, &token("memberToken")), 200);
    assert_eq!(credit_reset(&token("memberToken")), 403, "the member is no administrator");
    assert_eq!(credit_reset(&token("adminToken")), 200);
    // The refresh token is a login of its own: its reuse revokes no token beside it.
    assert_eq!(refresh(&demo.base, &token("refreshToken")), 200);
    assert_eq!(refresh(&demo.base, &token("refreshToken")), 401);
    assert_eq!(first_write(&demo.base, &token("memberToken")), 409, "the member's token still works");
}

#[test]
fn outside_the_demo_there_is_no_route_to_tokens_and_in_it_only_post() {
    // Arrange: a server without the demo, and the demo.
    let app = crate::support::spawn_app();
    let database = TestDatabase::fresh();
    let demo = Demo::start(&database.url, &["--demo"], &[], LAST_TEXT_LINE);

    // Act
    let (outside, _, problem) = demo_tokens(&app.base);
    let get = agent().get(format!("{}/demo/tokens", demo.base)).call().expect("an answer");

    // Assert: 404 without the demo; 405 naming POST for another method in it.
    assert_eq!(outside, 404, "{problem}");
    assert_eq!(problem["code"], "not_found");
    assert_eq!(get.status(), 405);
    assert_eq!(get.headers().get("allow").and_then(|v| v.to_str().ok()), Some("POST"));
}
