//! Tracing's start-up checks: a collector the exporter cannot post to stops `wpds serve`
//! with a message, instead of failing every export once it runs. (What the spans carry is
//! checked by `scripts/check-tracing`, against a real OTLP receiver.)

use crate::harness::{Seeded, free_port};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn an_https_collector_endpoint_stops_start_up_with_a_message() {
    // Arrange: a seeded database and an endpoint the plain-HTTP exporter cannot reach.
    let seeded = Seeded::new();

    // Act: start the server with it; give it 30 s to exit by itself.
    let mut child = Command::new(env!("CARGO_BIN_EXE_wpds"))
        .arg("serve")
        .env("DATABASE_URL", &seeded.database.url)
        .env("WPDS_BIND", format!("127.0.0.1:{}", free_port()))
        .env("WPDS_LOG", "warn")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.invalid:4318")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wpds runs");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("its status").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("wpds serve still runs with an https:// collector after 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("its output");

    // Assert: it refused, naming the endpoint and why.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "it started: {stderr}");
    assert!(
        stderr.contains("https://collector.invalid:4318/v1/traces") && stderr.contains("plain http:// URL"),
        "{stderr}"
    );
}
