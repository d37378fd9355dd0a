//! Prometheus metrics on their own listener (`WPDS_METRICS_BIND`): never on the API's
//! port, clean for `promtool check metrics`, counting what happened, and scraped by a real
//! Prometheus (Debian's package, started by the test as a plain process) whose HTTP API
//! then answers a rate over them.
//!
//! Prometheus is not part of a fresh machine: a check that needs `prometheus` or
//! `promtool` skips, saying so, when the binary is missing, unless
//! `WPDS_TEST_REQUIRE_PROMETHEUS=1` (as `.ci/run` sets after installing it) makes that a
//! failure.

use crate::harness::{Seeded, Server, agent, cell, free_port, put_cell, wait_until};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A server with metrics on a port of their own; returns it and the metrics' address.
fn server_with_metrics(seeded: &Seeded) -> (Server, String) {
    let metrics = format!("127.0.0.1:{}", free_port());
    let server = Server::start_with(&seeded.database.url, &[("WPDS_METRICS_BIND", metrics.as_str())]);
    (server, metrics)
}

fn scrape(metrics: &str) -> String {
    let mut response = agent().get(format!("http://{metrics}/metrics")).call().expect("the metrics answer");
    assert_eq!(response.status(), 200);
    response.body_mut().read_to_string().expect("text")
}

/// The value of the sample `series` (name and labels exactly as exposed), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The binary `name` on `PATH`; `None`, saying the check is skipped, when there is none
/// (a failure when `WPDS_TEST_REQUIRE_PROMETHEUS` is set).
fn binary(name: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file()));
    if found.is_none() {
        assert!(
            std::env::var_os("WPDS_TEST_REQUIRE_PROMETHEUS").is_none(),
            "WPDS_TEST_REQUIRE_PROMETHEUS is set, but no {name} binary is on PATH"
        );
        eprintln!("skipped: no `{name}` on PATH (Debian's prometheus package has it; CI installs it)");
    }
    found
}

#[test]
fn metrics_count_what_happened_on_their_own_listener_and_pass_promtool() {
    // Arrange: a server with metrics; three writes, one refusal.
    let seeded = Seeded::new();
    let (server, metrics) = server_with_metrics(&seeded);
    for (i, date) in ["2026-11-03", "2026-11-04", "2026-11-05"].into_iter().enumerate() {
        let written =
            put_cell(&agent(), &server.base, &seeded.token, &cell(date, "1", &format!("w{i}"), 1)).unwrap();
        assert_eq!(written.status, 200);
    }
    let refused = put_cell(&agent(), &server.base, "not-a-token", &cell("2026-11-06", "1", "x", 1)).unwrap();
    assert_eq!(refused.status, 401);
    // A status the document declares nowhere: a method the path does not have.
    let wrong_method = agent().delete(format!("{}/v1/workspaces/1/time-log/cells", server.base)).call();
    assert_eq!(wrong_method.expect("an answer").status(), 405);

    // Act: scrape, once the batches are counted (the SQLite writer, and PostgreSQL's batcher,
    // report a batch right after answering its writes).
    let batches =
        if seeded.is_postgres() { "wpds_postgres_batch_writes" } else { "wpds_sqlite_writer_batch_writes" };
    wait_until("the batches are counted", Duration::from_secs(5), || {
        sample(&scrape(&metrics), &format!("{batches}_sum")).is_some_and(|n| n >= 3.0)
    });
    let text = scrape(&metrics);

    // Assert: what happened is counted, labelled by operationId, status class and the exact
    // status where the document declares it ("other" where it does not).
    let writes =
        r#"wpds_http_requests_total{code="200",operation_id="setOwnTimeLogCell",status_class="2xx"}"#;
    assert_eq!(sample(&text, writes), Some(3.0), "{text}");
    let refusals =
        r#"wpds_http_requests_total{code="401",operation_id="setOwnTimeLogCell",status_class="4xx"}"#;
    assert_eq!(sample(&text, refusals), Some(1.0), "{text}");
    let timed = r#"wpds_http_request_duration_seconds_count{code="200",operation_id="setOwnTimeLogCell",status_class="2xx"}"#;
    assert_eq!(sample(&text, timed), Some(3.0), "{text}");
    let undeclared = r#"wpds_http_requests_total{code="other",operation_id="other",status_class="4xx"}"#;
    assert_eq!(sample(&text, undeclared), Some(1.0), "{text}");
    let engine = if seeded.is_postgres() { "postgres" } else { "sqlite" };
    let info = format!(
        r#"wpds_build_info{{contract_version="1.0.0",engine="{engine}",version="{}"}}"#,
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(sample(&text, &info), Some(1.0), "{text}");
    assert!(
        sample(&text, "wpds_auth_cache_lookups_total{result=\"miss\"}").is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(sample(&text, "wpds_db_pool_max_connections").is_some_and(|n| n >= 1.0), "{text}");
    assert!(sample(&text, "wpds_http_requests_in_flight").is_some(), "{text}");
    if seeded.is_postgres() {
        // The writes' statements ran on the shared connections, now idle.
        let idle = sample(&text, r#"wpds_db_shared_connections{state="idle"}"#);
        assert!(idle.is_some_and(|n| n >= 1.0), "{text}");
        assert_eq!(sample(&text, r#"wpds_db_shared_connections{state="in_use"}"#), Some(0.0), "{text}");
        assert_eq!(sample(&text, "wpds_db_shared_statements_in_flight"), Some(0.0), "{text}");
        let most = sample(&text, "wpds_db_shared_max_connections");
        assert!(most.is_some_and(|n| n >= idle.unwrap_or(0.0)), "{text}");
    } else {
        assert!(!text.contains("wpds_db_shared_"), "no shared connections on SQLite: {text}");
        assert_eq!(sample(&text, "wpds_sqlite_writer_queue_depth"), Some(0.0), "{text}");
    }
    assert!(sample(&text, "process_resident_memory_bytes").is_some_and(|n| n > 0.0), "{text}");
    // ... never on the API's port ...
    let api = agent().get(format!("{}/metrics", server.base)).call().expect("an answer");
    assert_eq!(api.status(), 404);
    // ... answering HEAD as GET, and another method with 405 ...
    let head = agent().head(format!("http://{metrics}/metrics")).call().expect("an answer");
    assert_eq!(head.status(), 200);
    let posted = agent().post(format!("http://{metrics}/metrics")).send_empty().expect("an answer");
    assert_eq!(posted.status(), 405);
    assert_eq!(posted.headers().get("allow").and_then(|v| v.to_str().ok()), Some("GET, HEAD"));
    // ... and clean for promtool, where Debian's prometheus package ships it.
    if let Some(promtool) = binary("promtool") {
        let mut check = Command::new(promtool)
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("promtool runs");
        std::io::Write::write_all(&mut check.stdin.take().expect("stdin"), text.as_bytes()).expect("fed");
        let out = check.wait_with_output().expect("promtool ends");
        assert!(
            out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
            "promtool check metrics: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A Prometheus process; killed when dropped.
struct Prometheus {
    child: Child,
    base: String,
    _data: TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Prometheus {
    /// Starts Prometheus scraping `target` every second, its storage in a temporary folder.
    fn scraping(binary: &std::path::Path, target: &str) -> Self {
        let data =
            TempDir(std::env::temp_dir().join(format!("wpds-prometheus-{}", uuid::Uuid::new_v4().simple())));
        std::fs::create_dir_all(&data.0).expect("a data folder");
        let config = data.0.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: wpds\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("the configuration");
        let listen = format!("127.0.0.1:{}", free_port());
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", data.0.join("tsdb").display()))
            .arg(format!("--web.listen-address={listen}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(data.0.join("prometheus.log")).expect("a log"))
            .spawn()
            .expect("prometheus starts");
        Prometheus { child, base: format!("http://{listen}"), _data: data }
    }

    /// A JSON answer of its HTTP API (`None` until it answers).
    fn api(&self, path_and_query: &str) -> Option<serde_json::Value> {
        let mut response = agent().get(format!("{}{path_and_query}", self.base)).call().ok()?;
        response.body_mut().read_json().ok()
    }
}

#[test]
fn prometheus_scrapes_the_metrics_and_answers_a_rate() {
    let Some(binary) = binary("prometheus") else { return };
    // Arrange: a server with metrics, and Prometheus scraping them every second.
    let seeded = Seeded::new();
    let (server, metrics) = server_with_metrics(&seeded);
    let prometheus = Prometheus::scraping(&binary, &metrics);
    wait_until("Prometheus reports the target up", Duration::from_secs(30), || {
        prometheus.api("/api/v1/targets").is_some_and(|t| t["data"]["activeTargets"][0]["health"] == "up")
    });

    // Act: writes, spread over a few scrapes.
    let query = "/api/v1/query?query=sum(rate(wpds_http_requests_total%7Boperation_id%3D%22setOwnTimeLogCell%22%7D%5B10s%5D))";
    let mut version = 1;
    let mut rate = 0.0;
    wait_until("Prometheus answers a positive request rate", Duration::from_secs(30), || {
        let written =
            put_cell(&agent(), &server.base, &seeded.token, &cell("2026-11-07", "1", "rate", version))
                .unwrap();
        assert_eq!(written.status, 200, "{}", written.body);
        version += 1;
        std::thread::sleep(Duration::from_millis(200));
        rate = prometheus
            .api(query)
            .and_then(|answer| answer["data"]["result"][0]["value"][1].as_str().and_then(|v| v.parse().ok()))
            .unwrap_or(0.0);
        rate > 0.0
    });

    // Assert: the rate is about what was sent (one write per ~0.2 s; bounded loosely).
    assert!(rate > 0.0 && rate < 50.0, "rate {rate}/s");
}

#[test]
fn the_suggested_alerts_of_the_operations_guide_pass_promtool_check_rules() {
    // Arrange: the guide's table of suggested alerts, as a Prometheus rules file.
    let Some(promtool) = binary("promtool") else { return };
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operations.md")).unwrap();
    let table =
        guide.split("### Suggested alerts").nth(1).expect("the section").split("\n\n").nth(1).unwrap();
    let mut rules = String::from("groups:\n  - name: wpds\n    rules:\n");
    let mut count = 0;
    for row in table.lines().skip(2) {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        let [alert, expr, wait, _why] = cells[..] else { panic!("a row of four cells: {row}") };
        let expr = expr.trim_matches('`').replace('\'', "''");
        rules.push_str(&format!("      - alert: '{alert}'\n        expr: '{expr}'\n        for: {wait}\n"));
        count += 1;
    }
    let file = std::env::temp_dir().join(format!("wpds-alerts-{}.yml", std::process::id()));
    std::fs::write(&file, &rules).unwrap();

    // Act
    let checked = Command::new(promtool).args(["check", "rules"]).arg(&file).output().expect("promtool runs");
    let _ = std::fs::remove_file(&file);

    // Assert: every row is a rule promtool accepts.
    let report = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{report}{}\n{rules}", String::from_utf8_lossy(&checked.stderr));
    assert!(count >= 9 && report.contains(&format!("SUCCESS: {count} rules found")), "{report}");
}
