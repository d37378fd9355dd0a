//! OpenTelemetry traces, exported with OTLP over HTTP (protobuf) when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; off
//! otherwise, at the cost of one check per request. The SDK reads the other standard
//! variables itself (`OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, …).
//!
//! What a request makes:
//! - one server span named `{method} {route}` (the route template; the method alone for a
//!   request no route matched), per the HTTP semantic conventions: `http.request.method`,
//!   `url.path`, `http.route`, `http.response.status_code`, `client.address`,
//!   `network.protocol.version`, and `operationId` for the contract's operations; status
//!   error for a 5xx. An incoming W3C `traceparent` (with its `tracestate`) is its parent;
//! - child spans `authentication`, `validation`, and `database` for each database call
//!   (`db.system.name`);
//! - on SQLite, the writer thread's batch span `sqlite writer batch`, which links to the
//!   server span of every request whose write it carried (a batch serves many traces, so
//!   it belongs to none of them).
//!
//! Spans are exported by the SDK's batch processor, on its own thread, from a bounded
//! queue: a slow or unreachable collector drops spans, it never holds a request.

use actix_web::http::Method;
use actix_web::http::header::HeaderMap;
use opentelemetry::trace::{
    Link, Span, SpanContext, SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::borrow::Cow;
use std::future::Future;
use std::sync::OnceLock;
use std::time::SystemTime;

pub use opentelemetry::context::FutureExt;

/// The tracer, once tracing is on.
static TRACER: OnceLock<(SdkTracerProvider, SdkTracer)> = OnceLock::new();

/// The standard variable naming the collector (`http://collector:4318`).
pub const ENDPOINT_VARIABLE: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// Turns tracing on, exporting to the collector at `endpoint` (the base URL: traces go to
/// its `/v1/traces`, unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` names another), unless
/// `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Returns whether it is on.
pub fn init(endpoint: Option<&str>, engine: &'static str) -> Result<bool, String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
    let traces_endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    if disabled || (endpoint.is_none() && traces_endpoint.is_none()) {
        return Ok(false);
    }
    let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http();
    if let (None, Some(base)) = (&traces_endpoint, endpoint) {
        exporter = exporter.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
    }
    let exporter = exporter.build().map_err(|e| format!("cannot build the OTLP exporter: {e}"))?;
    let service = var("OTEL_SERVICE_NAME").unwrap_or_else(|| "wpds".to_owned());
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service)
        .with_attributes([
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("db.system.name", engine),
        ])
        .build();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    let tracer = provider.tracer("wpds");
    let _ = TRACER.set((provider, tracer));
    Ok(true)
}

/// Exports what is left and stops the exporter (at shutdown).
pub fn shutdown() {
    if let Some((provider, _)) = TRACER.get()
        && let Err(e) = provider.shutdown()
    {
        log::warn!("tracing: the exporter did not shut down cleanly: {e}");
    }
}

/// Whether tracing is on.
pub fn enabled() -> bool {
    TRACER.get().is_some()
}

fn tracer() -> Option<&'static SdkTracer> {
    TRACER.get().map(|(_, tracer)| tracer)
}

/// Reads a request's headers for the propagator.
struct Headers<'a>(&'a HeaderMap);

impl opentelemetry::propagation::Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The trace an incoming W3C `traceparent` (and `tracestate`) continues, if it holds a
/// valid one.
pub fn incoming(headers: &HeaderMap) -> Option<Context> {
    if !headers.contains_key("traceparent") {
        return None;
    }
    use opentelemetry::propagation::TextMapPropagator;
    let cx = TraceContextPropagator::new().extract(&Headers(headers));
    cx.span().span_context().is_valid().then_some(cx)
}

/// The hexadecimal trace id of `cx`'s span.
pub fn trace_id(cx: &Context) -> String {
    cx.span().span_context().trace_id().to_string()
}

/// A request's server span, started now (when tracing is on), as the child of `parent`
/// (an incoming `traceparent`) or the root of a new trace. Named after the method until
/// the route is known ([`end_server_span`]).
pub fn server_span(method: &Method, parent: Option<&Context>) -> Option<Context> {
    let tracer = tracer()?;
    let parent = parent.cloned().unwrap_or_else(Context::new);
    let method = method_name(method);
    let span = tracer
        .span_builder(method.clone())
        .with_kind(SpanKind::Server)
        .with_attributes([KeyValue::new("http.request.method", method)])
        .start_with_context(tracer, &parent);
    Some(parent.with_span(span))
}

/// The method's name, without an allocation for the standard methods (a span is made per
/// request, so what it costs is paid at the request rate).
fn method_name(method: &Method) -> Cow<'static, str> {
    Cow::Borrowed(match *method {
        Method::GET => "GET",
        Method::PUT => "PUT",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => return Cow::Owned(method.as_str().to_owned()),
    })
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
    /// The status answered.
    pub status: u16,
    /// The client's address.
    pub client: Option<std::net::IpAddr>,
    /// The HTTP version (`1.1`).
    pub protocol_version: &'static str,
}

/// Names the server span `{method} {route}`, records what the answer tells and ends it.
pub fn end_server_span(cx: &Context, method: &Method, answered: Answered<'_>) {
    let span = cx.span();
    match answered.route {
        Route::Operation { span_name, route, operation_id } => {
            span.update_name(span_name);
            span.set_attribute(KeyValue::new("http.route", route));
            span.set_attribute(KeyValue::new("operationId", operation_id));
        }
        Route::Other(route) => {
            span.update_name(format!("{} {route}", method.as_str()));
            span.set_attribute(KeyValue::new("http.route", route));
        }
        Route::Unmatched => {}
    }
    span.set_attribute(KeyValue::new("url.path", answered.path.to_owned()));
    span.set_attribute(KeyValue::new("http.response.status_code", i64::from(answered.status)));
    span.set_attribute(KeyValue::new("network.protocol.version", answered.protocol_version));
    if let Some(client) = answered.client {
        span.set_attribute(KeyValue::new("client.address", client.to_string()));
    }
    if answered.status >= 500 {
        span.set_status(Status::error(format!("answered {}", answered.status)));
    }
    span.end();
}

/// `work` in a child span `name` of the current span (with the `attributes` it makes),
/// when tracing is on and the current span (if any) is sampled; otherwise `work` itself,
/// untouched (no wrapper future, and the attributes are not even made).
pub fn in_span<F: Future>(
    name: &'static str,
    attributes: impl FnOnce() -> Vec<KeyValue>,
    work: F,
) -> futures_util::future::Either<impl Future<Output = F::Output>, F> {
    let Some(tracer) = tracer() else { return futures_util::future::Either::Right(work) };
    let parent = Context::current();
    // A child of a span that is not sampled would not be sampled either (the samplers are
    // parent-based) and would never be exported: not even made.
    let unsampled = {
        let span = parent.span();
        let context = span.span_context();
        context.is_valid() && !context.is_sampled()
    };
    if unsampled {
        return futures_util::future::Either::Right(work);
    }
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Internal)
        .with_attributes(attributes())
        .start_with_context(tracer, &parent);
    let cx = parent.with_span(span);
    futures_util::future::Either::Left(async move {
        let output = work.with_context(cx.clone()).await;
        cx.span().end();
        output
    })
}

/// The attributes of a `database` span: the engine, and whether the SQLite writer ran it.
pub fn database_attributes(engine: wpds_storage::Engine, writer: bool) -> Vec<KeyValue> {
    let system = match engine {
        wpds_storage::Engine::Sqlite => "sqlite",
        wpds_storage::Engine::Postgres => "postgresql",
    };
    vec![KeyValue::new("db.system.name", system), KeyValue::new("wpds.db.sqlite_writer", writer)]
}

/// The current span, as a link the SQLite writer's batch span can point back to (when it
/// is sampled).
pub fn current_link() -> Option<wpds_storage::writer::TraceLink> {
    tracer()?;
    let cx = Context::current();
    let span = cx.span();
    let context = span.span_context();
    // A link to a span that is not sampled would point at nothing any backend holds.
    (context.is_valid() && context.is_sampled()).then(|| wpds_storage::writer::TraceLink {
        trace_id: context.trace_id().to_bytes(),
        span_id: context.span_id().to_bytes(),
    })
}

/// Records one committed batch of the SQLite writer as a span linking to the requests it
/// carried.
pub fn record_batch(
    writes: usize,
    started: SystemTime,
    finished: SystemTime,
    links: &[wpds_storage::writer::TraceLink],
) {
    let Some(tracer) = tracer() else { return };
    let links = links
        .iter()
        .map(|link| {
            let context = SpanContext::new(
                opentelemetry::trace::TraceId::from_bytes(link.trace_id),
                opentelemetry::trace::SpanId::from_bytes(link.span_id),
                opentelemetry::trace::TraceFlags::SAMPLED,
                false,
                Default::default(),
            );
            Link::with_context(context)
        })
        .collect();
    let mut span = tracer
        .span_builder("sqlite writer batch")
        .with_kind(SpanKind::Internal)
        .with_start_time(started)
        .with_links(links)
        .with_attributes([
            KeyValue::new("db.system.name", "sqlite"),
            KeyValue::new("db.operation.batch.size", i64::try_from(writes).unwrap_or(i64::MAX)),
        ])
        .start_with_context(tracer, &Context::new());
    span.end_with_timestamp(finished);
}
