//! The database's spans of a distributed trace, made where every call enters storage
//! ([`Database::read`](crate::Database::read) and [`Database::write`](crate::Database::write)),
//! through the OpenTelemetry API: the server installs the SDK as the global tracer provider;
//! without it (tests, the commands) nothing is made.
//!
//! A span is made only inside a sampled span (the request's): a child of an unsampled one
//! would never be exported, so for the requests a sampler drops, this costs one look at
//! the current context. Each span is named by what its work does, the
//! [`db.query.summary`](https://opentelemetry.io/docs/specs/semconv/database/database-spans/)
//! its repository function gives (`UPDATE time_log_entries`), and carries `db.system.name`,
//! `db.operation.name` (when the summary has one verb), which connection served it
//! (`wpds.db.connection`: `pool`, `shared` or `writer`) and, on PostgreSQL, `server.address`,
//! `server.port` and `db.namespace` of the server the service connects to (a pooler's,
//! behind one); a write the SQLite writer committed says with how many others
//! ([`BATCH_WRITES`]: its span's time includes the wait for that commit). A call that
//! failed for want of the database has status error and its `error.type`; a refusal (not
//! found, a version conflict) is an answer, not an error.

use crate::error::StoreError;
use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use std::borrow::Cow;
use std::future::Future;
use std::sync::OnceLock;

/// The tracer of this crate's spans, taken from the global provider at the first sampled
/// span (so after the server installed the SDK: there is no sampled span before).
fn tracer() -> &'static BoxedTracer {
    static TRACER: OnceLock<BoxedTracer> = OnceLock::new();
    TRACER.get_or_init(|| opentelemetry::global::tracer("wpds"))
}

/// Whether the current span is sampled (so its children are recorded).
pub fn current_is_sampled() -> bool {
    Context::map_current(|cx| cx.span().span_context().is_sampled())
}

/// `work` in an internal child span `name` of the current span, with the `attributes` it
/// makes, when the current span is sampled; otherwise `work` alone (the attributes not even
/// made). `failure` names the `error.type` of an output
/// that is a failure: the span then has status error.
pub(crate) async fn in_child_span<F: Future>(
    name: impl Into<Cow<'static, str>>,
    attributes: impl FnOnce() -> Vec<KeyValue>,
    failure: impl FnOnce(&F::Output) -> Option<&'static str>,
    work: F,
) -> F::Output {
    use opentelemetry::context::FutureExt;
    if !current_is_sampled() {
        return work.await;
    }
    let tracer = tracer();
    let parent = Context::current();
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Internal)
        .with_attributes(attributes())
        .start_with_context(tracer, &parent);
    let cx = parent.with_span(span);
    let output = work.with_context(cx.clone()).await;
    let span = cx.span();
    if let Some(kind) = failure(&output) {
        span.set_attribute(KeyValue::new("error.type", kind));
        span.set_status(Status::error(kind));
    }
    span.end();
    output
}

/// The attribute of a write's span that says how many writes its batch carried (the SQLite
/// writer commits queued writes together, and PostgreSQL's batcher runs a batched
/// statement's waiting writes as one: `engine/batch.rs`), so a trace shows what the
/// time it waited for its commit was shared with.
pub const BATCH_WRITES: &str = "wpds.db.batch.writes";

/// Records on the current span, when it is sampled (a write's database span), that its
/// commit carried `writes` writes ([`BATCH_WRITES`]).
pub fn batch_writes(writes: usize) {
    Context::map_current(|cx| {
        let span = cx.span();
        if span.span_context().is_sampled() {
            span.set_attribute(KeyValue::new(BATCH_WRITES, i64::try_from(writes).unwrap_or(i64::MAX)));
        }
    });
}

/// What a database span says of the server, fixed for a [`crate::Database`]: its system
/// and, on PostgreSQL, where it is.
#[derive(Debug, Clone)]
pub struct DbAttributes(Vec<KeyValue>);

impl DbAttributes {
    /// Of SQLite.
    pub fn sqlite() -> Self {
        DbAttributes(vec![KeyValue::new("db.system.name", "sqlite")])
    }

    /// Of the PostgreSQL server `url` names: its first host (a socket directory is
    /// `server.address` too) and port, and the database.
    pub fn postgres(url: &str) -> Self {
        let mut attributes = vec![KeyValue::new("db.system.name", "postgresql")];
        if let Ok(config) = url.parse::<tokio_postgres::Config>() {
            let address = config.get_hosts().first().map(|host| match host {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            });
            attributes.extend(address.map(|a| KeyValue::new("server.address", a)));
            let port = config.get_ports().first().copied().unwrap_or(5432);
            attributes.push(KeyValue::new("server.port", i64::from(port)));
            attributes.extend(config.get_dbname().map(|db| KeyValue::new("db.namespace", db.to_owned())));
        }
        DbAttributes(attributes)
    }

    /// A span's attributes: these, the `summary` and its operation, and the `connection`
    /// that served it.
    pub fn of(&self, summary: &'static str, connection: &'static str) -> Vec<KeyValue> {
        // Tables are lower case, verbs upper case: one verb names the operation.
        let mut verbs = summary.split(' ').filter(|word| word.bytes().all(|b| b.is_ascii_uppercase()));
        let operation = match (verbs.next(), verbs.next()) {
            (Some(verb), None) => Some(verb),
            _ => None,
        };
        let mut attributes = Vec::with_capacity(self.0.len() + 3);
        attributes.extend(self.0.iter().cloned());
        attributes.push(KeyValue::new("db.query.summary", summary));
        attributes.extend(operation.map(|op| KeyValue::new("db.operation.name", op)));
        attributes.push(KeyValue::new("wpds.db.connection", connection));
        attributes
    }
}

/// The `error.type` of a failed call: only a failure of the database itself.
pub fn failure<T>(outcome: &Result<T, StoreError>) -> Option<&'static str> {
    match outcome {
        Err(StoreError::Unavailable(_)) => Some("unavailable"),
        Err(StoreError::Internal(_)) => Some("internal"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a opentelemetry::Value> {
        attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
    }

    #[test]
    fn a_postgres_span_names_the_server_the_service_connects_to() {
        let made = DbAttributes::postgres("postgres://app@db.internal:6432/wpds?sslmode=require")
            .of("UPDATE time_log_entries", "shared");
        assert_eq!(get(&made, "db.system.name"), Some(&"postgresql".into()));
        assert_eq!(get(&made, "server.address"), Some(&"db.internal".into()));
        assert_eq!(get(&made, "server.port"), Some(&6432_i64.into()));
        assert_eq!(get(&made, "db.namespace"), Some(&"wpds".into()));
        assert_eq!(get(&made, "db.operation.name"), Some(&"UPDATE".into()));
        assert_eq!(get(&made, "wpds.db.connection"), Some(&"shared".into()));
    }

    #[test]
    fn a_summary_of_several_kinds_of_statement_names_no_one_operation() {
        let made = DbAttributes::sqlite().of("SELECT documents document_types UPDATE documents", "writer");
        assert_eq!(
            get(&made, "db.query.summary"),
            Some(&"SELECT documents document_types UPDATE documents".into())
        );
        assert_eq!(get(&made, "db.operation.name"), None);
        assert_eq!(get(&made, "server.address"), None, "SQLite is a file, not a server");
        let one = DbAttributes::sqlite().of("SELECT tokens logins users", "pool");
        assert_eq!(get(&one, "db.operation.name"), Some(&"SELECT".into()));
    }
}
