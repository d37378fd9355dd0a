//! Tracing's start-up: an `https://` collector is a collector like any other, a private CA
//! that cannot be read stops `wpds serve` with a message instead of failing every export
//! once it runs, and a sampler setting the SDK cannot take is named in the log. (What the
//! spans carry, TLS to a receiver of a private CA included, is checked by
//! `scripts/check-tracing`, against a real OTLP receiver.)

use crate::harness::{Seeded, Server, free_port};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_server_exporting_to_an_https_collector_starts_and_answers() {
    // Arrange: a seeded database and a collector on https:// (none listens there: spans
    // are dropped, requests are not held).
    let seeded = Seeded::new();

    // Act: start the server with it.
    let server = Server::start_with(
        &seeded.database.url,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &format!("https://localhost:{}", free_port()))],
    );

    // Assert: it serves (start_with waited for /readyz).
    let answer = crate::harness::agent().get(format!("{}/healthz", server.base)).call().expect("an answer");
    assert_eq!(answer.status(), 200);
}

#[test]
fn a_private_ca_that_cannot_be_read_stops_start_up_with_a_message() {
    // Arrange: a seeded database and a CA file that is not there.
    let seeded = Seeded::new();
    let missing = std::env::temp_dir().join(format!("wpds-no-such-ca-{}.pem", uuid::Uuid::new_v4().simple()));

    // Act: start the server with it; give it 30 s to exit by itself.
    let mut child = Command::new(env!("CARGO_BIN_EXE_wpds"))
        .arg("serve")
        .env("DATABASE_URL", &seeded.database.url)
        .env("WPDS_BIND", format!("127.0.0.1:{}", free_port()))
        .env("WPDS_LOG", "warn")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.invalid:4318")
        .env("OTEL_EXPORTER_OTLP_CERTIFICATE", &missing)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wpds runs");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("its status").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("wpds serve still runs with an unreadable CA after 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("its output");

    // Assert: it refused, naming the variable and the file.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "it started: {stderr}");
    assert!(
        stderr.contains("OTEL_EXPORTER_OTLP_CERTIFICATE") && stderr.contains(&*missing.to_string_lossy()),
        "{stderr}"
    );
}

#[test]
fn a_sampler_ratio_the_sdk_cannot_take_is_logged_at_start_up_with_what_it_does_instead() {
    // Arrange: a seeded database, and a ratio written as an operator might ("10%", where
    // the SDK reads only a number: it falls back to sampling every trace).
    let seeded = Seeded::new();

    // Act: start the server with it.
    let server = Server::start_with(
        &seeded.database.url,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &format!("http://127.0.0.1:{}", free_port())),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "10%"),
            ("WPDS_LOG", "warn"),
        ],
    );

    // Assert: it serves, and its log says why every trace is sampled.
    let log = server.log_text();
    assert!(
        log.contains("OTEL_TRACES_SAMPLER_ARG")
            && log.contains("\"10%\"")
            && log.contains("every trace is sampled"),
        "{log}"
    );
}
