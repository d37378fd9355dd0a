//! How spans leave: the HTTP client the OTLP exporter posts with (its timeout, and the
//! private CA of `OTEL_EXPORTER_OTLP_CERTIFICATE`, which opentelemetry-otlp does not read
//! itself), and the counts of spans ended, exported and failed that the metrics serve.
//!
//! What the counts can and cannot see: the SDK's batch processor drops a span when its
//! queue (`OTEL_BSP_MAX_QUEUE_SIZE`) is full and keeps that count to itself (its internal
//! logs, which would report it at shutdown, are not compiled in). So a span is counted
//! `ended` as it is handed to the processor, and `exported` or `failed` as its batch's
//! post returns; what the queue dropped is `ended − exported − failed`, less the few still
//! queued. A failed post is logged too, as a warning at most once a minute
//! ([`FAILURE_LOG_EVERY`]): a collector that is gone fails every post, and the counter has
//! the rest.

use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Spans handed to the batch processor (sampled and ended).
static ENDED: AtomicU64 = AtomicU64::new(0);
/// Spans in batches the collector accepted.
static EXPORTED: AtomicU64 = AtomicU64::new(0);
/// Spans in batches whose post failed (unreachable, refused, or past the timeout).
static FAILED: AtomicU64 = AtomicU64::new(0);

/// When a failed post was last logged, in seconds since the Unix epoch (0: never).
static FAILURE_LOGGED: AtomicU64 = AtomicU64::new(0);

/// How often a failed post is logged at most.
pub const FAILURE_LOG_EVERY: Duration = Duration::from_secs(60);

/// Spans so far: ended, exported, failed (see the module documentation).
pub fn counts() -> [u64; 3] {
    [ENDED.load(Ordering::Relaxed), EXPORTED.load(Ordering::Relaxed), FAILED.load(Ordering::Relaxed)]
}

/// The exporter's time for one export: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else the specification's 10 s.
pub fn timeout(var: impl Fn(&str) -> Option<String>) -> Duration {
    ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"]
        .iter()
        .find_map(|name| var(name)?.trim().parse().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// The blocking client the exporter posts with: `timeout` for each post, and the system's
/// trust store plus, from `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE` or
/// `OTEL_EXPORTER_OTLP_CERTIFICATE`, the PEM certificates of a private CA. Built on a
/// thread of its own, as opentelemetry-otlp builds its own: a blocking client must not be
/// made (nor dropped) on an async runtime's thread. It follows no redirect: the exporter's
/// headers (`OTEL_EXPORTER_OTLP_HEADERS`, often a backend's API key) go to the collector
/// configured, never to a host it redirects to.
pub fn client(
    timeout: Duration,
    var: impl Fn(&str) -> Option<String>,
) -> Result<reqwest::blocking::Client, String> {
    let mut authorities = Vec::new();
    let file = ["OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE"]
        .iter()
        .find_map(|name| var(name).map(|path| (*name, path)));
    if let Some((name, path)) = file {
        let pem = std::fs::read(path.trim()).map_err(|e| format!("tracing: {name} {path}: {e}"))?;
        authorities = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| format!("tracing: {name} {path}: not PEM certificates: {e}"))?;
        if authorities.is_empty() {
            return Err(format!("tracing: {name} {path}: no certificate in it"));
        }
    }
    std::thread::spawn(move || {
        let builder = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none());
        authorities
            .into_iter()
            .fold(builder, |builder, authority| builder.add_root_certificate(authority))
            .build()
            .map_err(|e| format!("tracing: cannot build the HTTP client: {e}"))
    })
    .join()
    .map_err(|_| "tracing: building the HTTP client failed".to_owned())?
}

/// Whether a failed post is to be logged now: none was in the last [`FAILURE_LOG_EVERY`].
fn failure_to_log() -> bool {
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_secs());
    let last = FAILURE_LOGGED.load(Ordering::Relaxed);
    (last == 0 || now >= last.saturating_add(FAILURE_LOG_EVERY.as_secs()))
        && FAILURE_LOGGED.compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed).is_ok()
}

/// An exporter that counts what its `inner` exporter exported and failed to.
#[derive(Debug)]
pub struct Counted<E>(pub E);

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = u64::try_from(batch.len()).unwrap_or(u64::MAX);
        let outcome = self.0.export(batch).await;
        match &outcome {
            Ok(()) => EXPORTED.fetch_add(spans, Ordering::Relaxed),
            Err(e) => {
                if failure_to_log() {
                    log::warn!(
                        "tracing: {spans} spans not exported: {e} (failures are counted in \
                         wpds_tracing_spans_total{{outcome=\"failed\"}}; logged at most once a minute)"
                    );
                }
                FAILED.fetch_add(spans, Ordering::Relaxed)
            }
        };
        outcome
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource);
    }
}

/// A span processor that counts the spans handed to its `inner` one.
#[derive(Debug)]
pub struct Ended<P>(pub P);

impl<P: SpanProcessor> SpanProcessor for Ended<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.0.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        ENDED.fetch_add(1, Ordering::Relaxed);
        self.0.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource);
    }
}
