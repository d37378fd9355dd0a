//! OpenTelemetry traces through the OpenTelemetry SDK, exported with OTLP over HTTP
//! (protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set; off otherwise, at the cost of one check per request. The SDK and its exporter
//! read the standard variables (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_TRACES_SAMPLER` and
//! `_ARG`, `OTEL_BSP_*`); this module reads `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER=none`
//! and `OTEL_EXPORTER_OTLP_CERTIFICATE` (a private CA for an `https://` collector:
//! `export::client`).
//!
//! This module is the glue alone: which spans a request makes, and their names and
//! attributes.
//! - One server span named `{method} {route}` (the route template; the method alone for a
//!   request no route matched), with the HTTP semantic conventions' required and
//!   recommended attributes: `http.request.method`, `url.scheme`, `url.path`, `url.query`
//!   (when there is one; the values of credential-like keys redacted), `http.route`,
//!   `http.response.status_code`, `network.protocol.version`, `server.address` and
//!   `server.port` (of the `Host` the client asked for), `client.address` (through trusted
//!   proxies), `network.peer.address` and `network.peer.port`, `user_agent.original`; and
//!   `operationId` for the contract's operations; for a 5xx, status error and `error.type`
//!   (the status code). What comes from the request is bounded: a header's value and the
//!   method to 256 bytes, the path and the query to 2 048, a `tracestate` to 512 (a longer
//!   one is not taken). A method the conventions do not know is `_OTHER` (the request's
//!   own in `http.request.method_original`) and names the span `HTTP`, so a client cannot
//!   make span names of its own. An incoming `X-Request-Id` that is not the trace's id is
//!   `http.request.header.x-request-id`, so a proxy's id finds the trace. An incoming W3C
//!   `traceparent` (with its `tracestate`) is its parent, read by the SDK's propagator.
//! - Events `authentication` and `validation` of the server span, each with how long its
//!   step took ([`as_event`]), and a child span for each database call, made where calls
//!   enter storage (`wpds_storage::engine`'s `in_child_span`); all only inside a sampled
//!   request. A write's database span says how many writes the batch it waited for carried
//!   (`wpds.db.batch.writes`: the SQLite writer's commit, or PostgreSQL's batched time-log
//!   statement): a batch serves many traces, so it has no span of its own.
//!
//! The SDK's batch processor exports on its own thread from a bounded queue: a slow or
//! unreachable collector drops spans, it never holds a request. The spans ended, exported
//! and failed are counted for the metrics ([`span_counts`]); at shutdown the flush takes one
//! export timeout at most.

mod export;
mod sampling;

pub use export::counts as span_counts;
pub use opentelemetry::Context;
pub use opentelemetry::context::FutureExt;

use actix_web::http::Method;
use actix_web::http::header::HeaderMap;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _};
use opentelemetry::{Array, InstrumentationScope, Key, KeyValue, StringValue, Value};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::resource::EnvResourceDetector;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracer, SdkTracerProvider};
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

/// What tracing holds once it is on.
struct Tracing {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    /// The exporter's timeout: what the shutdown's flush may take.
    timeout: Duration,
}

/// Tracing, once it is on.
static TRACING: OnceLock<Tracing> = OnceLock::new();

/// Turns tracing on, exporting to the collector at `endpoint` (the base URL: traces go to
/// its `/v1/traces`, unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` names another), unless
/// `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Returns whether it is on;
/// `Err` for an exporter that cannot be built (a CA file that cannot be read, say).
pub fn init(endpoint: Option<&str>, engine: &'static str) -> Result<bool, String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    let endpoint =
        match (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), endpoint.filter(|e| !e.trim().is_empty())) {
            _ if disabled => return Ok(false),
            (Some(traces), _) => traces.trim().to_owned(),
            (None, Some(base)) => format!("{}/v1/traces", base.trim().trim_end_matches('/')),
            (None, None) => return Ok(false),
        };
    if let Some(protocol) =
        var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        && protocol.trim() != "http/protobuf"
    {
        log::warn!(
            "tracing: OTEL_EXPORTER_OTLP_PROTOCOL {protocol:?} is not supported: spans go as http/protobuf"
        );
    }
    let timeout = export::timeout(var);
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(export::client(timeout, var)?)
        .with_endpoint(endpoint)
        .with_timeout(timeout)
        .build()
        .map_err(|e| format!("tracing: cannot build the OTLP exporter: {e}"))?;
    let processor = export::Ended(BatchSpanProcessor::builder(export::Counted(exporter)).build());
    let resource = resource(engine, var("OTEL_SERVICE_NAME"));
    let (sampler, ratio) =
        (std::env::var("OTEL_TRACES_SAMPLER").ok(), std::env::var("OTEL_TRACES_SAMPLER_ARG").ok());
    if let Some(warning) = sampling::fallback(sampler.as_deref(), ratio.as_deref()) {
        log::warn!("tracing: {warning}");
    }
    // The SDK's builder reads the environment's sampler itself.
    let provider =
        SdkTracerProvider::builder().with_span_processor(processor).with_resource(resource).build();
    // The storage crate's database spans take their tracer from the global provider.
    opentelemetry::global::set_tracer_provider(provider.clone());
    let scope = InstrumentationScope::builder("wpds").with_version(env!("CARGO_PKG_VERSION")).build();
    let tracer = provider.tracer_with_scope(scope);
    TRACING.set(Tracing { provider, tracer, timeout }).map_err(|_| "tracing: already started".to_owned())?;
    Ok(true)
}

/// The resource every span carries: what the SDK reads of the environment
/// (`OTEL_RESOURCE_ATTRIBUTES`), the service's version, the engine (`db.system.name`), and the
/// service's name: `service_name` (`OTEL_SERVICE_NAME`) when it is set, which the
/// specification says wins over a `service.name` in `OTEL_RESOURCE_ATTRIBUTES`; else that
/// one; else `wpds`. The SDK's builder applies the attributes after `OTEL_SERVICE_NAME`
/// (opentelemetry-rust#1298), so the name is set here, last.
fn resource(engine: &'static str, service_name: Option<String>) -> Resource {
    let attributes = Resource::builder_empty().with_detector(Box::new(EnvResourceDetector::new())).build();
    let name = service_name
        .or_else(|| attributes.get(&Key::from_static_str(SERVICE_NAME)).map(|name| name.to_string()))
        .unwrap_or_else(|| "wpds".to_owned());
    Resource::builder()
        .with_attributes([
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("db.system.name", engine),
        ])
        .with_service_name(name)
        .build()
}

/// The resource attribute that names the service.
const SERVICE_NAME: &str = "service.name";

/// Exports what is left and stops the exporter (at shutdown), within one export timeout:
/// a collector that does not answer costs the shutdown that long, no longer.
pub fn shutdown() {
    if let Some(tracing) = TRACING.get()
        && let Err(e) = tracing.provider.shutdown_with_timeout(tracing.timeout)
    {
        log::warn!("tracing: spans left unexported at shutdown: {e}");
    }
}

/// The longest `tracestate` taken from a caller (W3C Trace Context asks a vendor to pass
/// on at least 512 characters): a longer one is not taken at all, as the SDK would copy its
/// up to 32 entries of 512 bytes into every span of the request.
const TRACESTATE_BYTES: usize = 512;

/// Reads a request's headers for the propagator.
struct Headers<'a>(&'a HeaderMap);

impl opentelemetry::propagation::Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        let value = self.0.get(key).and_then(|v| v.to_str().ok())?;
        (key != "tracestate" || value.len() <= TRACESTATE_BYTES).then_some(value)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The caller's span an incoming W3C `traceparent` (and `tracestate`) names, if it is a
/// valid one.
pub fn incoming(headers: &HeaderMap) -> Option<Context> {
    use opentelemetry::propagation::TextMapPropagator;
    if !headers.contains_key("traceparent") {
        return None;
    }
    static PROPAGATOR: OnceLock<TraceContextPropagator> = OnceLock::new();
    let cx = PROPAGATOR.get_or_init(TraceContextPropagator::new).extract(&Headers(headers));
    cx.span().span_context().is_valid().then_some(cx)
}

/// The W3C ids (hexadecimal) of the span in `cx`: its trace's and its own.
pub fn ids(cx: &Context) -> (String, String) {
    let span = cx.span();
    let context = span.span_context();
    (context.trace_id().to_string(), context.span_id().to_string())
}

/// Whether the span in `cx` is sampled (recorded and exported).
pub fn is_sampled(cx: &Context) -> bool {
    cx.span().span_context().is_sampled()
}

/// A request's server span, started now (when tracing is on), as the child of `parent`
/// (an incoming `traceparent`) or the root of a new trace; the sampler decides whether it
/// is recorded (an unrecorded span still gives the request its trace id). Named after the
/// method until the route is known ([`end_server_span`]).
pub fn server_span(method: &Method, parent: Option<&Context>) -> Option<Context> {
    let tracing = TRACING.get()?;
    let parent = parent.cloned().unwrap_or_default();
    let span = tracing
        .tracer
        .span_builder(method_name(method))
        .with_kind(SpanKind::Server)
        .start_with_context(&tracing.tracer, &parent);
    Some(parent.with_span(span))
}

/// The method as the HTTP conventions name it: `_OTHER` for one they do not know.
fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::PATCH => "PATCH",
        _ => "_OTHER",
    }
}

/// The route a request took, as its server span names it.
pub enum Route {
    /// One of the contract's operations: its span name (`{method} {route}`), route
    /// template and `operationId`, all made once from the document.
    Operation {
        /// `{method} {route}`.
        span_name: &'static str,
        /// The route template.
        route: &'static str,
        /// The `operationId`.
        operation_id: &'static str,
    },
    /// Another route (documents, probes): its template as the router matched it.
    Other(String),
    /// No route matched: the span keeps the method as its name.
    Unmatched,
}

/// What the server span learns once the request is answered.
pub struct Answered<'a> {
    /// The route the request took.
    pub route: Route,
    /// The path as requested.
    pub path: &'a str,
    /// The query as requested (without its `?`; empty for none).
    pub query: &'a str,
    /// The status answered.
    pub status: u16,
    /// The client's address (through trusted proxies).
    pub client: Option<std::net::IpAddr>,
    /// The connection's peer.
    pub peer: Option<std::net::SocketAddr>,
    /// The request's headers (`Host`, `User-Agent`).
    pub headers: Option<&'a HeaderMap>,
    /// The request's `X-Request-Id`, when it is not the trace's id.
    pub request_id: Option<&'a str>,
    /// The HTTP version (`1.1`).
    pub protocol_version: &'static str,
}

/// The most of a value from the request (a header's, the method's) a span records: the
/// rest is cut, so a client cannot make spans of any size (a request's head may hold
/// 128 KiB), which the export queue, bounded in spans, not bytes, would hold.
const HEADER_BYTES: usize = 256;

/// The most of the path, and of the query, a span records (the rest is cut).
const URL_BYTES: usize = 2048;

/// At most `max` bytes of `value`, cut at a character boundary.
fn bounded(value: &str, max: usize) -> String {
    let cut = (0..=value.len().min(max)).rev().find(|&at| value.is_char_boundary(at)).unwrap_or(0);
    value[..cut].to_owned()
}

/// Names the server span in `cx` `{method} {route}`, records what the answer tells and
/// ends it, when it is recorded (sampled).
pub fn end_server_span(cx: &Context, method: &Method, answered: Answered<'_>) {
    let span = cx.span();
    if !span.is_recording() {
        return;
    }
    let known = method_name(method);
    let named = if known == "_OTHER" { "HTTP" } else { known };
    let mut attributes = Vec::with_capacity(18);
    match answered.route {
        Route::Operation { span_name, route, operation_id } => {
            let name: std::borrow::Cow<'static, str> =
                if known == "_OTHER" { format!("HTTP {route}").into() } else { span_name.into() };
            span.update_name(name);
            attributes.push(KeyValue::new("http.route", route));
            attributes.push(KeyValue::new("operationId", operation_id));
        }
        Route::Other(route) => {
            span.update_name(format!("{named} {route}"));
            attributes.push(KeyValue::new("http.route", route));
        }
        Route::Unmatched => span.update_name(named),
    }
    attributes.extend([
        KeyValue::new("http.request.method", known),
        KeyValue::new("url.scheme", "http"),
        KeyValue::new("url.path", bounded(answered.path, URL_BYTES)),
        KeyValue::new("http.response.status_code", i64::from(answered.status)),
        KeyValue::new("network.protocol.version", answered.protocol_version),
    ]);
    if known == "_OTHER" {
        attributes
            .push(KeyValue::new("http.request.method_original", bounded(method.as_str(), HEADER_BYTES)));
    }
    let query = crate::logging::redaction::redacted_query(answered.query);
    if !query.is_empty() {
        attributes.push(KeyValue::new("url.query", bounded(&query, URL_BYTES)));
    }
    if let Some(client) = answered.client {
        attributes.push(KeyValue::new("client.address", client.to_string()));
    }
    if let Some(peer) = answered.peer {
        attributes.push(KeyValue::new("network.peer.address", peer.ip().to_string()));
        attributes.push(KeyValue::new("network.peer.port", i64::from(peer.port())));
    }
    let header = |name| answered.headers.and_then(|h| h.get(name)).and_then(|v| v.to_str().ok());
    if let Some(authority) =
        header("host").and_then(|host| host.parse::<actix_web::http::uri::Authority>().ok())
    {
        // An IPv6 address without the brackets a URL's authority puts around it.
        let host = authority.host().trim_start_matches('[').trim_end_matches(']');
        attributes.push(KeyValue::new("server.address", bounded(host, HEADER_BYTES)));
        attributes.push(KeyValue::new("server.port", i64::from(authority.port_u16().unwrap_or(80))));
    }
    if let Some(agent) = header("user-agent") {
        attributes.push(KeyValue::new("user_agent.original", bounded(agent, HEADER_BYTES)));
    }
    if let Some(id) = answered.request_id {
        let ids = Array::String(vec![StringValue::from(id.to_owned())]);
        attributes.push(KeyValue::new("http.request.header.x-request-id", Value::Array(ids)));
    }
    if answered.status >= 500 {
        attributes.push(KeyValue::new("error.type", answered.status.to_string()));
        span.set_status(Status::error(format!("answered {}", answered.status)));
    }
    span.set_attributes(attributes);
    span.end();
}

/// `work`, recorded as the event `name` of the current span when tracing is on and that
/// span is sampled (otherwise `work` alone): stamped when the work ended, with how long it
/// took (`wpds.duration_ms`). A step of the request's own, not a call to another system:
/// the conventions ask no span of it, and an event costs a fraction of one (no ids, no
/// export of its own). The database calls made during it are children of the server span.
pub async fn as_event<F: Future>(name: &'static str, work: F) -> F::Output {
    if !Context::map_current(|cx| cx.span().span_context().is_sampled()) {
        return work.await;
    }
    let started = std::time::Instant::now();
    let output = work.await;
    let took = started.elapsed().as_secs_f64() * 1000.0;
    Context::map_current(|cx| cx.span().add_event(name, vec![KeyValue::new(DURATION_MS, took)]));
    output
}

/// The attribute of an event ([`as_event`]) that says how long its step took.
const DURATION_MS: &str = "wpds.duration_ms";

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(HeaderName::from_static(name), HeaderValue::from_str(value).expect("a header value"));
        }
        map
    }

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    /// The resource's value for `key`, as text.
    fn attribute(resource: &Resource, key: &'static str) -> Option<String> {
        resource.get(&Key::from_static_str(key)).map(|value| value.to_string())
    }

    /// The SDK reads `OTEL_RESOURCE_ATTRIBUTES` from the process's environment: the test runs
    /// itself again in a child process given `env` (`None` removes a variable), where
    /// `WPDS_TEST_RESOURCE_CHILD` is set and the assertions run; no other test's environment
    /// changes.
    fn in_child(test: &str, env: &[(&str, Option<&str>)]) -> bool {
        if std::env::var_os("WPDS_TEST_RESOURCE_CHILD").is_some() {
            return true;
        }
        let mut child = std::process::Command::new(std::env::current_exe().expect("the test binary"));
        child.args(["--exact", &format!("telemetry::tests::{test}"), "--test-threads=1"]);
        child.env("WPDS_TEST_RESOURCE_CHILD", "1");
        for (name, value) in env {
            match value {
                Some(value) => child.env(name, value),
                None => child.env_remove(name),
            };
        }
        let output = child.output().expect("the test binary runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{test} failed in its child process:\n{stdout}");
        assert!(stdout.contains("1 passed"), "{test} did not run in its child process:\n{stdout}");
        false
    }

    #[test]
    fn otel_service_name_wins_over_a_service_name_in_otel_resource_attributes() {
        let env = [("OTEL_RESOURCE_ATTRIBUTES", Some("service.name=b,deployment.environment.name=test"))];
        if in_child("otel_service_name_wins_over_a_service_name_in_otel_resource_attributes", &env) {
            let named = resource("sqlite", Some("a".to_owned()));
            assert_eq!(attribute(&named, "service.name").as_deref(), Some("a"));
            // The rest of the environment's attributes stay, beside the service's own.
            assert_eq!(attribute(&named, "deployment.environment.name").as_deref(), Some("test"));
            assert_eq!(attribute(&named, "service.version").as_deref(), Some(env!("CARGO_PKG_VERSION")));
            assert_eq!(attribute(&named, "db.system.name").as_deref(), Some("sqlite"));
            // Without OTEL_SERVICE_NAME, the attributes' name.
            assert_eq!(attribute(&resource("sqlite", None), "service.name").as_deref(), Some("b"));
        }
    }

    #[test]
    fn the_service_is_named_wpds_when_the_environment_names_none() {
        let env = [
            ("OTEL_RESOURCE_ATTRIBUTES", Some("deployment.environment.name=test")),
            ("OTEL_SERVICE_NAME", None),
        ];
        if in_child("the_service_is_named_wpds_when_the_environment_names_none", &env) {
            assert_eq!(attribute(&resource("postgresql", None), "service.name").as_deref(), Some("wpds"));
        }
    }

    /// A `tracestate` of `count` entries of 104 bytes each (a value may be 256 at most).
    fn entries(count: usize) -> String {
        (0..count).map(|i| format!("v{i}={}", "x".repeat(100))).collect::<Vec<_>>().join(",")
    }

    #[test]
    fn a_value_is_cut_to_its_bound_at_a_character_boundary() {
        assert_eq!(bounded("short", 256), "short");
        assert_eq!(bounded(&"a".repeat(5000), URL_BYTES).len(), URL_BYTES);
        // "é" is two bytes: a cut at 3 would split the second one.
        assert_eq!(bounded("éé", 3), "é");
    }

    #[test]
    fn a_tracestate_within_512_bytes_is_taken_with_its_parent() {
        let state = entries(4);
        assert!(state.len() <= TRACESTATE_BYTES);
        let cx = incoming(&headers(&[("traceparent", PARENT.to_owned()), ("tracestate", state.clone())]))
            .expect("a parent");
        assert_eq!(cx.span().span_context().trace_state().header(), state);
    }

    #[test]
    fn a_longer_tracestate_is_dropped_and_the_parent_kept() {
        let state = entries(5);
        assert!(state.len() > TRACESTATE_BYTES);
        let cx = incoming(&headers(&[("traceparent", PARENT.to_owned()), ("tracestate", state)]))
            .expect("a parent");
        let span = cx.span();
        assert_eq!(span.span_context().trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(span.span_context().trace_state().header(), "");
    }
}
