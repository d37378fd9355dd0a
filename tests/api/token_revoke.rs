//! `wpds token revoke`, as an operator runs it in the first hour of an incident: a leaked
//! token's login revoked from the command line while three instances serve it from their
//! authentication caches, each refusing it within the cache's bound; its refresh token
//! refused as `invalid_grant`; every login of a user at once; the command saying what it
//! revoked and logging it.

use crate::database::TestDatabase;
use crate::process::{Served, text, wpds};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The authentication cache's bound the instances run with.
const CACHE: Duration = Duration::from_millis(1000);

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).build().into()
}

/// A read every member may make: the status it answers with `token`.
fn read_status(base: &str, token: &str) -> u16 {
    agent()
        .get(format!("{base}/v1/workspaces/1/projects/7/sync-updates/commercial-receipts"))
        .header("authorization", format!("Bearer {token}"))
        .call()
        .expect("an answer")
        .status()
        .as_u16()
}

fn issue(url: &str, user: &str) -> Value {
    let issued = wpds(&["token", "issue", "--user", user], &[("DATABASE_URL", url)]);
    assert!(issued.status.success(), "{}", text(&issued.stderr));
    serde_json::from_slice(&issued.stdout).expect("a pair as JSON")
}

#[test]
fn a_revoked_login_is_refused_by_every_instance_within_the_cache_bound() {
    // Arrange: three instances on one database, each having answered the token (so each
    // caches its caller).
    let database = TestDatabase::demo();
    let ttl = CACHE.as_millis().to_string();
    let settings = [("DATABASE_URL", database.url.as_str()), ("WPDS_AUTH_CACHE_TTL_MS", ttl.as_str())];
    let instances: Vec<Served> = (0..3).map(|_| Served::start(&settings)).collect();
    for served in &instances {
        served.wait_for(200, Duration::from_secs(30));
    }
    let leaked = issue(&database.url, "5");
    let other = issue(&database.url, "5");
    let access = leaked["accessToken"].as_str().unwrap();
    for served in &instances {
        assert_eq!(read_status(&served.base, access), 200);
    }

    // Act: the leaked access token's login revoked, the token read from standard input.
    let revoked_at = Instant::now();
    let mut revoke = std::process::Command::new(env!("CARGO_BIN_EXE_wpds"))
        .args(["token", "revoke", "--token", "-"])
        .env("DATABASE_URL", &database.url)
        .env_remove("WPDS_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("wpds token revoke runs");
    std::io::Write::write_all(&mut revoke.stdin.take().unwrap(), format!("{access}\n").as_bytes()).unwrap();
    let output = revoke.wait_with_output().unwrap();

    // Assert: it says what it revoked (one login of user 5) and logs it; every instance
    // refuses the token within the cache's bound (and a margin for a loaded machine);
    // the login's refresh token is refused as invalid_grant; another login of the same
    // user still works.
    assert!(output.status.success(), "{}", text(&output.stderr));
    let said: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let logins = said["revoked"].as_array().expect("a list");
    assert_eq!(logins.len(), 1, "{said}");
    assert_eq!(logins[0]["userId"], 5);
    assert!(
        text(&output.stderr).contains("revoked 1 login(s), the login of the token given"),
        "{}",
        text(&output.stderr)
    );
    for served in &instances {
        while read_status(&served.base, access) != 401 {
            assert!(
                revoked_at.elapsed() < CACHE + Duration::from_secs(2),
                "{} still took the token {:?} after the revocation",
                served.base,
                revoked_at.elapsed()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let refreshed = agent()
        .post(format!("{}/v1/auth/refresh", instances[1].base))
        .send_json(json!({"refreshToken": leaked["refreshToken"]}))
        .expect("an answer");
    assert_eq!(refreshed.status(), 401);
    let mut refreshed = refreshed;
    let problem: Value = refreshed.body_mut().read_json().unwrap();
    assert_eq!(problem["code"], "invalid_grant", "{problem}");
    assert_eq!(read_status(&instances[2].base, other["accessToken"].as_str().unwrap()), 200);
}

#[test]
fn every_login_of_a_user_is_revoked_at_once_and_the_command_names_what_it_did() {
    // Arrange: two logins of user 9, one of user 5.
    let database = TestDatabase::demo();
    let url = [("DATABASE_URL", database.url.as_str())];
    let (first, second, bystander) =
        (issue(&database.url, "9"), issue(&database.url, "9"), issue(&database.url, "5"));
    let served = Served::start(&[url[0], ("WPDS_AUTH_CACHE_TTL_MS", "0")]);
    served.wait_for(200, Duration::from_secs(30));

    // Act
    let revoked = wpds(&["token", "revoke", "--user", "9"], &url);
    let again = wpds(&["token", "revoke", "--user", "9"], &url);
    let unknown_token = wpds(&["token", "revoke", "--token", "at_never-issued"], &url);
    let unknown_user = wpds(&["token", "revoke", "--user", "4242"], &url);
    let neither = wpds(&["token", "revoke"], &url);

    // Assert: both of user 9's logins, and only they, end; a second run finds none live;
    // a token or user nobody has is refused, naming it; the command needs one of the two.
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    let said: Value = serde_json::from_slice(&revoked.stdout).unwrap();
    assert_eq!(said["revoked"].as_array().map(Vec::len), Some(2), "{said}");
    assert!(
        text(&revoked.stderr).contains("revoked 2 login(s), every login of user 9"),
        "{}",
        text(&revoked.stderr)
    );
    for token in [&first, &second] {
        assert_eq!(read_status(&served.base, token["accessToken"].as_str().unwrap()), 401);
    }
    assert_eq!(read_status(&served.base, bystander["accessToken"].as_str().unwrap()), 200);
    assert_eq!(serde_json::from_slice::<Value>(&again.stdout).unwrap()["revoked"], json!([]));
    assert!(text(&again.stderr).contains("(none was live)"), "{}", text(&again.stderr));
    assert_eq!(unknown_token.status.code(), Some(1));
    assert!(text(&unknown_token.stderr).contains("not found: a login with this token"));
    assert_eq!(unknown_user.status.code(), Some(1));
    assert!(text(&unknown_user.stderr).contains("not found: user 4242"));
    assert_eq!(neither.status.code(), Some(2), "clap's usage error");
}
