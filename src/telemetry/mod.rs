//! OpenTelemetry traces, exported with OTLP over HTTP (protobuf) when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; off
//! otherwise, at the cost of one check per request. The standard variables apply
//! (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_TRACES_SAMPLER` and `_ARG`, `OTEL_BSP_*`,
//! `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER=none`).
//!
//! What a request makes:
//! - one server span named `{method} {route}` (the route template; the method alone for a
//!   request no route matched), per the HTTP semantic conventions: `http.request.method`,
//!   `url.scheme`, `url.path`, `url.query` (when there is one; the values of the keys the
//!   conventions name as signatures redacted), `http.route`, `http.response.status_code`,
//!   `client.address`, `network.protocol.version`, and `operationId` for the contract's
//!   operations; for a 5xx, status error and `error.type` (the status code). A method the
//!   conventions do not know is `_OTHER` (the request's own in
//!   `http.request.method_original`) and names the span `HTTP`, so a client cannot make
//!   span names or attribute values of its own. An incoming W3C `traceparent` (with its
//!   `tracestate`) is its parent;
//! - child spans `authentication`, `validation`, and `database` for each database call
//!   (`db.system.name`), made only inside a sampled request;
//! - on SQLite, the writer thread's batch span `sqlite writer batch`, which links to the
//!   server span of every request whose write it carried (a batch serves many traces, so
//!   it belongs to none of them).
//!
//! Why not the OpenTelemetry SDK: this module did use it, and tracing every request then
//! cost ~17 % of the server's CPU per answer on SQLite (docs/performance.md, "What
//! observability costs"): each span went through the SDK's context stack, span builder,
//! locked span data and channel, and the exporter built the generated protobuf structs (a
//! `String` per attribute) before encoding them. What a request needs is small — ids, two
//! clock readings and a few attributes per span — so a span here is plain data
//! borrowed from the request (`span::SpanRecord`), encoded as it ends into its thread's
//! buffer (`otlp`; no allocation per span), and a thread's encoded spans go onto a
//! bounded queue (`export`) a few dozen at a time, for the exporter to wrap and post.
//! The wire format is the standard one, checked by `scripts/check-tracing` with the
//! published opentelemetry-proto package.
//!
//! Spans are exported on a thread of their own from a bounded queue: a slow or unreachable
//! collector drops spans, it never holds a request.

mod clock;
mod collector;
mod context;
mod export;
mod otlp;
mod sampler;
mod span;

pub use context::{Remote, SpanContext, Within};
pub use span::Attribute;

use actix_web::http::Method;
use actix_web::http::header::HeaderMap;
use sampler::Sampler;
use span::{Kind, SpanRecord, Value};
use std::future::Future;
use std::sync::OnceLock;

/// What tracing needs once it is on.
struct Tracer {
    sampler: Sampler,
    exporter: export::Exporter,
}

/// The tracer, once tracing is on.
static TRACER: OnceLock<Tracer> = OnceLock::new();

/// How many spans a thread holds before it queues them (~16 requests' worth: one lock of
/// the export queue per 16 requests, not one per request). The exporter's thread takes
/// what a thread holds at each of its rounds, so a span waits no longer for this.
const HELD: usize = 64;

thread_local! {
    /// This thread's ended spans, encoded, until it holds [`HELD`] of them.
    static HOLDER: std::cell::OnceCell<std::sync::Arc<export::Held>> = const { std::cell::OnceCell::new() };
    /// This thread's ended child spans, encoded, until their request's server span ends:
    /// the holder's lock is then taken once per request, not once per span. (The children
    /// of a request dropped before it was answered — its client went away — wait for the
    /// next request this thread answers, or for [`HELD`] of them.)
    static CHILDREN: std::cell::RefCell<export::Encoded> = std::cell::RefCell::new(export::Encoded::default());
}

impl Tracer {
    /// Adds this thread's ended child spans, and with `write` the span that ends now if
    /// any, to what it holds, and queues all it holds once that is [`HELD`] spans.
    fn hold(&self, children: &mut export::Encoded, write: impl FnOnce(&mut export::Encoded)) {
        HOLDER.with(|holder| {
            let mut held = holder.get_or_init(|| self.exporter.holder()).lock();
            held.append(children);
            write(&mut held);
            if held.count() >= HELD {
                self.exporter.push(&mut held);
            }
        });
        children.clear();
    }

    /// Writes an ended child span of `template`'s kind, to be held with its server span.
    fn hold_child(&self, template: &Template, context: &SpanContext, parent: &[u8; 8], start: u64, end: u64) {
        CHILDREN.with(|children| {
            let mut children = children.borrow_mut();
            children.add_child(template.skeleton(), &context.trace_id, &context.span_id, parent, start, end);
            if children.count() >= HELD {
                self.hold(&mut children, |_| {});
            }
        });
    }

    /// Holds an ended server span, encoded from `skeleton` when it is made from the span's
    /// fixed part, with the child spans this thread has written.
    fn queue(&self, skeleton: Option<&otlp::Skeleton>, span: &SpanRecord<'_>) {
        CHILDREN.with(|children| {
            self.hold(&mut children.borrow_mut(), |held| match skeleton {
                Some(skeleton) => held.add_from(skeleton, span),
                None => held.add(span),
            });
        });
    }
}

/// Turns tracing on, exporting to the collector at `endpoint` (the base URL: traces go to
/// its `/v1/traces`, unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` names another), unless
/// `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Returns whether it is on;
/// `Err` for an endpoint it cannot post to (not plain `http://`).
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
    if let Err(e) = collector::Endpoint::parse(&endpoint) {
        return Err(format!(
            "tracing: the collector's endpoint: {e} (the exporter speaks plain HTTP: run a collector on the \
             node or as a sidecar)"
        ));
    }
    if let Some(protocol) =
        var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        && protocol.trim() != "http/protobuf"
    {
        log::warn!(
            "tracing: OTEL_EXPORTER_OTLP_PROTOCOL {protocol:?} is not supported: spans go as http/protobuf"
        );
    }
    let sampler = Sampler::from_settings(
        var("OTEL_TRACES_SAMPLER").as_deref(),
        var("OTEL_TRACES_SAMPLER_ARG").as_deref(),
    )
    .unwrap_or_else(|e| {
        log::warn!("tracing: {e}: parentbased_always_on is used");
        Sampler::ParentBased(sampler::Root::AlwaysOn)
    });
    let (settings, warnings) = export::Settings::read(endpoint, var);
    for warning in warnings {
        log::warn!("tracing: {warning}");
    }
    let origin = otlp::Origin {
        resource: resource(var("OTEL_SERVICE_NAME"), var("OTEL_RESOURCE_ATTRIBUTES").as_deref(), engine),
        scope: "wpds",
        version: env!("CARGO_PKG_VERSION"),
    };
    let exporter = export::Exporter::start(settings, origin)?;
    if TRACER.set(Tracer { sampler, exporter }).is_err() {
        return Err("tracing: already started".to_owned());
    }
    Ok(true)
}

/// The resource's attributes: `service.name` (`OTEL_SERVICE_NAME`, else the one in
/// `OTEL_RESOURCE_ATTRIBUTES`, else `wpds`), `service.version`, `db.system.name`, the
/// `telemetry.sdk.*` triple, then the rest of `OTEL_RESOURCE_ATTRIBUTES`.
fn resource(service: Option<String>, attributes: Option<&str>, engine: &str) -> Vec<(String, String)> {
    let mut given = attributes.map_or_else(Vec::new, |text| {
        export::key_values(text).unwrap_or_else(|e| {
            log::warn!("tracing: OTEL_RESOURCE_ATTRIBUTES: {e}: ignored");
            Vec::new()
        })
    });
    let named = given.iter().position(|(key, _)| key == "service.name").map(|at| given.remove(at).1);
    let fixed = [
        ("service.name", service.or(named).unwrap_or_else(|| "wpds".to_owned())),
        ("service.version", env!("CARGO_PKG_VERSION").to_owned()),
        ("db.system.name", engine.to_owned()),
        ("telemetry.sdk.name", "wpds".to_owned()),
        ("telemetry.sdk.language", "rust".to_owned()),
        ("telemetry.sdk.version", env!("CARGO_PKG_VERSION").to_owned()),
    ];
    given.retain(|(key, _)| !fixed.iter().any(|(k, _)| k == key));
    fixed.into_iter().map(|(k, v)| (k.to_owned(), v)).chain(given).collect()
}

/// Exports what is left and stops the exporter (at shutdown).
pub fn shutdown() {
    if let Some(tracer) = TRACER.get() {
        tracer.exporter.shutdown();
    }
}

/// Whether tracing is on.
pub fn enabled() -> bool {
    TRACER.get().is_some()
}

/// The caller's span an incoming W3C `traceparent` (and `tracestate`) names, if it is a
/// valid one.
pub fn incoming(headers: &HeaderMap) -> Option<Remote> {
    let context = context::parse_traceparent(headers.get("traceparent")?.to_str().ok()?)?;
    let mut states = headers.get_all("tracestate").filter_map(|v| v.to_str().ok());
    let trace_state = match (states.next(), states.next()) {
        (None, _) => None,
        (Some(one), None) => context::parse_trace_state(one),
        (Some(first), Some(second)) => {
            let joined = [first, second].into_iter().chain(states).collect::<Vec<_>>().join(",");
            context::parse_trace_state(&joined)
        }
    };
    Some(Remote { context, trace_state })
}

/// A request's server span, started but not yet ended.
#[derive(Debug)]
pub struct ServerSpan {
    context: SpanContext,
    parent: Option<[u8; 8]>,
    trace_state: Option<String>,
    start: u64,
}

impl ServerSpan {
    /// The span's identity, for [`Within`].
    pub fn context(&self) -> SpanContext {
        self.context
    }
}

fn new_trace_id() -> [u8; 16] {
    loop {
        let id = fastrand::u128(..);
        if id != 0 {
            return id.to_be_bytes();
        }
    }
}

fn new_span_id() -> [u8; 8] {
    loop {
        let id = fastrand::u64(..);
        if id != 0 {
            return id.to_be_bytes();
        }
    }
}

/// A request's server span, started now (when tracing is on), as the child of `parent`
/// (an incoming `traceparent`) or the root of a new trace; the sampler decides whether it
/// is recorded (an unrecorded span still gives the request its trace id).
pub fn server_span(parent: Option<&Remote>) -> Option<ServerSpan> {
    let tracer = TRACER.get()?;
    let trace_id = parent.map_or_else(new_trace_id, |p| p.context.trace_id);
    let sampled = tracer.sampler.sample(parent.map(|p| p.context.sampled), &trace_id);
    Some(ServerSpan {
        context: SpanContext { trace_id, span_id: new_span_id(), sampled },
        parent: parent.map(|p| p.context.span_id),
        trace_state: parent.filter(|_| sampled).and_then(|p| p.trace_state.clone()),
        start: if sampled { clock::now() } else { 0 },
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
    /// The query as requested (without its `?`; empty for none).
    pub query: &'a str,
    /// The status answered.
    pub status: u16,
    /// The client's address.
    pub client: Option<std::net::IpAddr>,
    /// The HTTP version (`1.1`).
    pub protocol_version: &'static str,
}

/// Names the server span `{method} {route}`, records what the answer tells and ends it
/// (queues it for export, when it is sampled).
pub fn end_server_span(span: ServerSpan, method: &Method, answered: Answered<'_>) {
    let Some(tracer) = TRACER.get() else { return };
    if !span.context.sampled {
        return;
    }
    // Never before the start: see `clock` on readings going back.
    let end = clock::now().max(span.start);
    let original = method.as_str();
    let known = KNOWN_METHODS.contains(method);
    let method = if known { original } else { "_OTHER" };
    let version = answered.protocol_version;
    let mut address = [0; 45];
    let failed = answered.status >= 500;
    let status_text = if failed { answered.status.to_string() } else { String::new() };
    let query = crate::logging::redaction::redacted_query(answered.query);
    let mut attributes = [Attribute::new("url.path", Value::Str(answered.path)); 5];
    let mut count = 1;
    let mut add = |attribute| {
        attributes[count] = attribute;
        count += 1;
    };
    if let Some(client) = answered.client {
        add(Attribute::new("client.address", Value::Str(span::address_text(client, &mut address))));
    }
    if !query.is_empty() {
        add(Attribute::new("url.query", Value::Str(&query)));
    }
    if !known {
        add(Attribute::new("http.request.method_original", Value::Str(original)));
    }
    if failed {
        add(Attribute::new("error.type", Value::Str(&status_text)));
    }
    let error = failed.then(|| format!("answered {}", answered.status));
    let queue = |skeleton: Option<&otlp::Skeleton>, fixed: &[u8]| {
        tracer.queue(
            skeleton,
            &SpanRecord {
                context: span.context,
                parent: span.parent.map(|id| (id, true)),
                trace_state: span.trace_state.as_deref(),
                fixed,
                start: span.start,
                end,
                attributes: &attributes[..count],
                links: &[],
                error: error.as_deref(),
            },
        );
    };
    let method_attribute = Attribute::new("http.request.method", Value::Str(method));
    let version_attribute = Attribute::new("network.protocol.version", Value::Str(version));
    let scheme_attribute = Attribute::new("url.scheme", Value::Str("http"));
    // The status is in the fixed part: an operation answers with a few statuses, so its
    // spans of one status share the encoding of all but their path and client.
    let status_attribute =
        Attribute::new("http.response.status_code", Value::Int(i64::from(answered.status)));
    // `{method} {route}`, where an unknown method is `HTTP`.
    let named = if known { method } else { "HTTP" };
    let operation_fixed = |name: &str, route: &str, operation_id: &str| {
        otlp::fixed(
            name,
            Kind::Server,
            &[
                method_attribute,
                scheme_attribute,
                Attribute::new("http.route", Value::Str(route)),
                Attribute::new("operationId", Value::Str(operation_id)),
                version_attribute,
                status_attribute,
            ],
        )
    };
    match &answered.route {
        Route::Operation { span_name, route, operation_id } if known => SERVER_SPANS.with(|cached| {
            let mut cached = cached.borrow_mut();
            let found = cached.iter().find(|template| {
                std::ptr::eq(template.span_name, *span_name)
                    && *template.method == *method
                    && template.version == version
                    && template.status == answered.status
            });
            match found {
                Some(template) => queue(Some(&template.skeleton), template.skeleton.fixed()),
                None => {
                    let skeleton = otlp::Skeleton::new(&operation_fixed(span_name, route, operation_id));
                    queue(Some(&skeleton), skeleton.fixed());
                    if cached.len() < CACHED_SERVER_SPANS {
                        cached.push(ServerTemplate {
                            span_name,
                            method: method.into(),
                            version,
                            status: answered.status,
                            skeleton,
                        });
                    }
                }
            }
        }),
        Route::Operation { route, operation_id, .. } => {
            queue(None, &operation_fixed(&format!("{named} {route}"), route, operation_id))
        }
        Route::Other(route) => queue(
            None,
            &otlp::fixed(
                &format!("{named} {route}"),
                Kind::Server,
                &[
                    method_attribute,
                    scheme_attribute,
                    Attribute::new("http.route", Value::Str(route)),
                    version_attribute,
                    status_attribute,
                ],
            ),
        ),
        Route::Unmatched => queue(
            None,
            &otlp::fixed(
                named,
                Kind::Server,
                &[method_attribute, scheme_attribute, version_attribute, status_attribute],
            ),
        ),
    }
}

/// The methods the HTTP semantic conventions know (RFC 9110's and PATCH): a server span
/// records any other as `_OTHER`.
const KNOWN_METHODS: [Method; 9] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::CONNECT,
    Method::OPTIONS,
    Method::TRACE,
    Method::PATCH,
];

/// How many (operation, method, HTTP version, status) server-span templates a thread
/// keeps: the contract's operations and the statuses they answer with, with room to spare
/// (past it, a span is encoded in full).
const CACHED_SERVER_SPANS: usize = 128;

/// The server spans of one operation, method, HTTP version and status: their fixed part
/// ([`otlp::fixed`]: the span's name, kind, `http.request.method`, `url.scheme`,
/// `http.route`, `operationId`, `network.protocol.version` and
/// `http.response.status_code`) encoded once, in the skeleton that each such span is
/// written from.
struct ServerTemplate {
    /// The operation's span name (one `&'static str` per operation, compared by address).
    span_name: &'static str,
    method: Box<str>,
    version: &'static str,
    status: u16,
    skeleton: otlp::Skeleton,
}

thread_local! {
    /// The server-span templates of what this thread has answered.
    static SERVER_SPANS: std::cell::RefCell<Vec<ServerTemplate>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A kind of work inside the service that it makes (internal) spans of: their name and
/// constant attributes, encoded with their kind the first time one ends (`otlp::fixed`).
/// A child span of the kind ([`in_span`]) is then the whole span encoded once and copied
/// with its ids and times written in (`otlp::Skeleton`); the SQLite writer's batch span,
/// which has attributes and links of its own, copies the fixed part alone.
pub struct Template {
    name: &'static str,
    attributes: &'static [Attribute<'static>],
    fixed: OnceLock<Vec<u8>>,
    skeleton: OnceLock<otlp::Skeleton>,
}

impl Template {
    /// Spans named `name` with the constant `attributes`, internal to the service.
    pub const fn internal(name: &'static str, attributes: &'static [Attribute<'static>]) -> Template {
        Template { name, attributes, fixed: OnceLock::new(), skeleton: OnceLock::new() }
    }

    fn fixed(&self) -> &[u8] {
        self.fixed.get_or_init(|| otlp::fixed(self.name, Kind::Internal, self.attributes))
    }

    /// The whole encoding of a child span of this kind, for [`in_span`]'s spans.
    fn skeleton(&self) -> &otlp::Skeleton {
        self.skeleton.get_or_init(|| otlp::Skeleton::new(self.fixed()))
    }
}

/// The `authentication` child span: the token and membership checks.
pub static AUTHENTICATION: Template = Template::internal("authentication", &[]);

/// The `validation` child span: the request checked against the document.
pub static VALIDATION: Template = Template::internal("validation", &[]);

/// The SQLite writer's span for each committed batch.
static WRITER_BATCH: Template =
    Template::internal("sqlite writer batch", &[Attribute::new("db.system.name", Value::Str("sqlite"))]);

/// `work` in a child span of the current span, of the kind `template` names, when tracing
/// is on and the current span is sampled; otherwise `work` itself, untouched (no wrapper
/// future).
pub fn in_span<F: Future>(
    template: &'static Template,
    work: F,
) -> futures_util::future::Either<InSpan<F>, F> {
    use futures_util::future::Either;
    let Some(tracer) = TRACER.get() else { return Either::Right(work) };
    let Some(parent) = context::current().filter(|p| p.sampled) else { return Either::Right(work) };
    let context = SpanContext { trace_id: parent.trace_id, span_id: new_span_id(), sampled: true };
    Either::Left(InSpan { tracer, template, context, parent: parent.span_id, start: clock::now(), work })
}

pin_project_lite::pin_project! {
    /// Work in a child span ([`in_span`]): the span is current while the work is polled,
    /// and ends when the work is done (a span whose work is dropped unfinished is not
    /// recorded).
    pub struct InSpan<F> {
        tracer: &'static Tracer,
        template: &'static Template,
        context: SpanContext,
        parent: [u8; 8],
        start: u64,
        #[pin]
        work: F,
    }
}

impl<F: Future> Future for InSpan<F> {
    type Output = F::Output;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let this = self.project();
        let output = std::task::ready!(context::poll_within(*this.context, this.work, cx));
        let end = clock::now().max(*this.start);
        this.tracer.hold_child(this.template, this.context, this.parent, *this.start, end);
        std::task::Poll::Ready(output)
    }
}

/// The `database` span of a database call: its attributes name the engine, and whether
/// the SQLite writer ran it.
pub fn database(engine: wpds_storage::Engine, writer: bool) -> &'static Template {
    const fn attributes(system: &'static str, writer: bool) -> [Attribute<'static>; 2] {
        [
            Attribute::new("db.system.name", Value::Str(system)),
            Attribute::new("wpds.db.sqlite_writer", Value::Bool(writer)),
        ]
    }
    static SQLITE_ATTRIBUTES: [Attribute<'static>; 2] = attributes("sqlite", false);
    static SQLITE_WRITER_ATTRIBUTES: [Attribute<'static>; 2] = attributes("sqlite", true);
    static POSTGRES_ATTRIBUTES: [Attribute<'static>; 2] = attributes("postgresql", false);
    static POSTGRES_WRITER_ATTRIBUTES: [Attribute<'static>; 2] = attributes("postgresql", true);
    static SQLITE: Template = Template::internal("database", &SQLITE_ATTRIBUTES);
    static SQLITE_WRITER: Template = Template::internal("database", &SQLITE_WRITER_ATTRIBUTES);
    static POSTGRES: Template = Template::internal("database", &POSTGRES_ATTRIBUTES);
    static POSTGRES_WRITER: Template = Template::internal("database", &POSTGRES_WRITER_ATTRIBUTES);
    match (engine, writer) {
        (wpds_storage::Engine::Sqlite, false) => &SQLITE,
        (wpds_storage::Engine::Sqlite, true) => &SQLITE_WRITER,
        (wpds_storage::Engine::Postgres, false) => &POSTGRES,
        (wpds_storage::Engine::Postgres, true) => &POSTGRES_WRITER,
    }
}

/// The current span, as a link the SQLite writer's batch span can point back to (when it
/// is sampled: a link to an unsampled span would point at nothing any backend holds).
pub fn current_link() -> Option<wpds_storage::writer::TraceLink> {
    TRACER.get()?;
    context::current()
        .filter(|c| c.sampled)
        .map(|c| wpds_storage::writer::TraceLink { trace_id: c.trace_id, span_id: c.span_id })
}

/// Records one committed batch of the SQLite writer as a span of its own trace (when the
/// sampler keeps it) linking to the requests it carried. The span is encoded on the
/// exporter's thread, not here: the writer's thread is the one every write waits for, so
/// it only hands the report over (its links move, uncopied).
pub fn record_batch(batch: wpds_storage::writer::BatchReport) {
    let Some(tracer) = TRACER.get() else { return };
    let trace_id = new_trace_id();
    if !tracer.sampler.sample(None, &trace_id) {
        return;
    }
    let context = SpanContext { trace_id, span_id: new_span_id(), sampled: true };
    tracer.exporter.defer(Box::new(move |spans: &mut export::Encoded| {
        spans.add(&SpanRecord {
            context,
            parent: None,
            trace_state: None,
            fixed: WRITER_BATCH.fixed(),
            start: span::unix_nanos(batch.started),
            end: span::unix_nanos(batch.finished),
            attributes: &[Attribute::new(
                "db.operation.batch.size",
                Value::Int(i64::try_from(batch.writes).unwrap_or(i64::MAX)),
            )],
            links: &batch.links,
            error: None,
        });
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_names_the_service_once_with_the_environments_attributes() {
        let made = resource(
            None,
            Some("service.name=billing,deployment.environment.name=prod,service.version=9"),
            "sqlite",
        );
        let get =
            |key: &str| made.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect::<Vec<_>>();
        assert_eq!(get("service.name"), ["billing"]);
        assert_eq!(get("service.version"), [env!("CARGO_PKG_VERSION")]);
        assert_eq!(get("deployment.environment.name"), ["prod"]);
        let named = resource(Some("wpds-eu".to_owned()), Some("service.name=billing"), "postgres");
        assert_eq!(named[0], ("service.name".to_owned(), "wpds-eu".to_owned()));
    }
}
