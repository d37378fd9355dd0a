//! The one middleware every request and response passes through: the request id is
//! assigned and the response encoding negotiated on the way in; on the way out a bare
//! error answer becomes a problem, the `X-Request-Id` and security headers are set, the
//! access line is written ([`access_log`]), the body is compressed when it is worth it
//! (see [`compress`]), and while the server drains the connection is closed after the
//! answer.
//!
//! One middleware, not five: each actix-web middleware costs every request a boxed future
//! and a service call, and these always run together, in this order.

use crate::http::operation::Operation;
use crate::http::{access_log, compress, problem, request_id, security};
use crate::telemetry;
use actix_web::HttpMessage;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::ConnectionType;
use actix_web::middleware::Next;

/// What the edge does beyond what it always does.
#[derive(Clone)]
pub struct Edge {
    /// Whether response bodies are compressed (`WPDS_COMPRESSION`).
    pub compress: bool,
    /// Whether access lines are written (the log filter lets them through).
    pub access_log: bool,
    /// The request metrics.
    pub metrics: std::sync::Arc<crate::metrics::Metrics>,
    /// Set once the server was told to stop ([`crate::state::AppState::draining`]): from
    /// then on every answer carries `Connection: close` and ends its connection, so a
    /// keep-alive client (a load balancer's pooled connection) opens its next one, which the
    /// balancer sends to an instance still in rotation, instead of keeping this one until
    /// the listener closes.
    pub draining: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Edge {
    /// Middleware: request id in, problem shaping, request id, security headers and
    /// compression out.
    pub async fn handle(
        self,
        req: ServiceRequest,
        next: Next<impl MessageBody + 'static>,
    ) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
        let started = std::time::Instant::now();
        self.metrics.started();
        let incoming = telemetry::incoming(req.headers());
        let method = req.method().clone();
        let span = telemetry::server_span(&method, incoming.as_ref());
        let trace = span.as_ref().or(incoming.as_ref()).map(telemetry::ids);
        let id = request_id::assign(&req, trace.as_ref().map(|(trace_id, _)| trace_id.clone()));
        let docs = security::is_docs(req.path());
        let encoding = if self.compress { compress::negotiate(req.request()) } else { None };
        // Only a sampled span is made current: an unsampled one has no children to parent.
        let answered = match span.as_ref().filter(|span| telemetry::is_sampled(span)) {
            Some(span) => {
                use telemetry::FutureExt;
                next.call(req).with_context(span.clone()).await
            }
            None => next.call(req).await,
        };
        let answer = Answer::of(&answered);
        if let Some(span) = &span {
            let foreign = trace.as_ref().is_some_and(|(trace_id, _)| *trace_id != id);
            answer.end_span(span, &method, foreign.then_some(id.as_str()));
        }
        self.metrics.answered(answer.operation.map(|op| op.index), answer.status, started.elapsed());
        let mut response = problem::shape_bare_error(answered?.map_into_boxed_body());
        let headers = response.headers_mut();
        request_id::set_header(headers, &id);
        security::add_headers(headers, docs);
        if self.access_log {
            // The server span's id, or none: an incoming traceparent's is the caller's span.
            let span_id = span.as_ref().and(trace.as_ref()).map(|(_, span_id)| span_id.as_str());
            let trace_id = trace.as_ref().map(|(trace_id, _)| trace_id.as_str());
            access_log::write(
                &response,
                started.elapsed(),
                access_log::Ids { request_id: &id, trace_id, span_id },
            );
        }
        let mut response = if self.compress { compress::encode(response, encoding) } else { response };
        if self.draining.load(std::sync::atomic::Ordering::Relaxed) {
            response.response_mut().head_mut().set_connection_type(ConnectionType::Close);
        }
        Ok(response)
    }
}

/// What the metrics and the server span read of an answer, worked out once.
struct Answer<'a> {
    /// The request, unless the pipeline failed before a response was made.
    request: Option<&'a actix_web::HttpRequest>,
    /// The status answered.
    status: u16,
    /// The contract's operation the request was routed to, if any.
    operation: Option<&'static Operation>,
}

impl<'a> Answer<'a> {
    fn of(answered: &'a Result<ServiceResponse<impl MessageBody>, actix_web::Error>) -> Self {
        let (request, status) = match answered {
            Ok(response) => (Some(response.request()), response.status().as_u16()),
            Err(e) => (None, e.as_response_error().status_code().as_u16()),
        };
        let operation =
            request.and_then(|r| r.extensions().get::<access_log::Routed>().map(|routed| routed.0));
        Answer { request, status, operation }
    }

    /// Ends the request's server span with what the answer tells (`request_id`: the
    /// request's id, when it is not the trace's).
    fn end_span(
        &self,
        span: &telemetry::Context,
        method: &actix_web::http::Method,
        request_id: Option<&str>,
    ) {
        let route = match (self.operation, self.request) {
            (Some(op), _) => {
                telemetry::Route::Operation { span_name: op.span_name, route: op.path, operation_id: op.id }
            }
            (None, Some(request)) => {
                request.match_pattern().map_or(telemetry::Route::Unmatched, telemetry::Route::Other)
            }
            (None, None) => telemetry::Route::Unmatched,
        };
        let protocol_version = match self.request.map(|r| r.version()) {
            Some(actix_web::http::Version::HTTP_2) => "2",
            Some(actix_web::http::Version::HTTP_10) => "1.0",
            _ => "1.1",
        };
        telemetry::end_server_span(
            span,
            method,
            telemetry::Answered {
                route,
                path: self.request.map_or("", |r| r.path()),
                query: self.request.map_or("", |r| r.query_string()),
                status: self.status,
                client: self.request.and_then(access_log::client_address),
                peer: self.request.and_then(|r| r.peer_addr()),
                headers: self.request.map(|r| r.headers()),
                request_id,
                protocol_version,
            },
        );
    }
}
