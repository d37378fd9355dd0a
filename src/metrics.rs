//! Prometheus metrics, served on their own listener (`WPDS_METRICS_BIND`, off by default)
//! so they are never exposed with the API.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `wpds_http_requests_total` | counter | `operation_id`, `status_class`, `code` | answers given |
//! | `wpds_http_request_duration_seconds` | histogram | `operation_id`, `status_class`, `code` | time to the answer's head |
//! | `wpds_http_requests_in_flight` | gauge | | requests being served |
//! | `wpds_db_pool_connections` | gauge | `state` (`idle`, `in_use`) | the pool's open connections |
//! | `wpds_db_pool_max_connections` | gauge | | the pool's size |
//! | `wpds_db_pool_wait_seconds` | histogram | | time to get a pooled connection |
//! | `wpds_db_shared_connections` | gauge | `state` (`idle`, `in_use`) | PostgreSQL's shared, pipelining connections open (single statements) |
//! | `wpds_db_shared_max_connections` | gauge | | the most of them that may open: per worker thread × threads that ran a statement |
//! | `wpds_db_shared_statements_in_flight` | gauge | | statements in flight on them |
//! | `wpds_sqlite_writer_batch_writes` | histogram | | writes per committed batch (SQLite) |
//! | `wpds_postgres_batch_writes` | histogram | | writes per committed batch of the time-log write's one statement (PostgreSQL) |
//! | `wpds_postgres_batch_reads` | histogram | | reads per batch of the authentication's lookups (token, membership) the cache did not answer (PostgreSQL) |
//! | `wpds_sqlite_writer_queue_depth` | gauge | | writes waiting for the writer (SQLite) |
//! | `wpds_auth_cache_lookups_total` | counter | `result` (`hit`, `miss`) | authentication cache lookups |
//! | `wpds_rate_limit_refusals_total` | counter | `subject` (`user`, `address`) | 429 answers |
//! | `wpds_unavailable_responses_total` | counter | `cause` (`database`, `body_memory`, `draining`) | 503 answers |
//! | `wpds_tracing_spans_total` | counter | `outcome` (`ended`, `exported`, `failed`) | spans handed to the exporter's queue, accepted by the collector, and in posts that failed (`ended − exported − failed` were dropped by a full queue, or are still queued) |
//! | `wpds_draining` | gauge | | 1 while the server drains for a shutdown (`/readyz` answers 503), else 0 |
//! | `wpds_build_info` | gauge (1) | `version`, `contract_version`, `engine` | what runs |
//! | `process_*` | | | CPU, memory, descriptors (the client library's process collector) |
//!
//! `operation_id` is the contract's `operationId`, or `other` for the probes, the documents
//! and unknown routes; `status_class` is `2xx` … `5xx`; `code` is the exact status when
//! the document declares it for the operation (for `other`: anywhere in the document), and
//! `other` for any status it does not, so the label's values are bounded by the document.
//! (`status_class` stays: dashboards of 1.0.0 sum by it.) Names and units follow
//! Prometheus's conventions (`promtool check metrics`). The hot path touches only resolved
//! handles: an operation's handles for a status are looked up by label once, at its first
//! answer of that status (so no series of zeros is exported for statuses never answered),
//! and kept; the pool's and the writer's gauges are read at scrape time.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wpds_storage::engine::BatchReport;
use wpds_storage::{Database, Engine};

/// The status classes, indexed by the status's first digit − 1.
const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The label of requests that are not an operation of the contract.
pub const OTHER: &str = "other";

/// Why a request answered 503.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnavailableCause {
    /// The database could not be reached in time.
    Database,
    /// The memory for request bodies was taken.
    BodyMemory,
    /// The server was draining for a shutdown (`/readyz`).
    Draining,
}

/// The `code` label of a status the operation does not declare.
const UNDECLARED: &str = "other";

/// A series' two handles, resolved at its first answer.
type Handles = std::sync::OnceLock<(IntCounter, Histogram)>;

/// One operation's handles: per declared status, and per status class for the statuses it
/// does not declare.
struct PerOperation {
    id: &'static str,
    /// The declared statuses (ascending) with their labels and handles.
    declared: Vec<(u16, String, Handles)>,
    undeclared: [Handles; 5],
}

impl PerOperation {
    /// The operation `id`, declaring `statuses`.
    fn new(id: &'static str, statuses: impl IntoIterator<Item = u16>) -> Self {
        let mut statuses: Vec<u16> = statuses.into_iter().collect();
        statuses.sort_unstable();
        statuses.dedup();
        let declared =
            statuses.into_iter().map(|status| (status, status.to_string(), Handles::new())).collect();
        PerOperation { id, declared, undeclared: Default::default() }
    }
}

/// The process's metrics: recorded and served when they are on (`WPDS_METRICS_BIND`), and a
/// registry that records nothing when they are off, so every place that records calls it
/// the same way either way.
pub struct Metrics {
    /// The handles and the registry, when the metrics are on.
    on: Option<Box<Recorders>>,
}

/// Every metric of the process, and the registry that serves them.
struct Recorders {
    registry: Registry,
    /// Per operation (in the order of the operation table), then `other` last.
    operations: Vec<PerOperation>,
    requests: IntCounterVec,
    durations: HistogramVec,
    in_flight: IntGauge,
    pool_connections: IntGaugeVec,
    pool_max: IntGauge,
    /// PostgreSQL's shared connections, when the database has them.
    shared: Option<SharedGauges>,
    /// Time to get a pooled connection.
    pool_wait: Histogram,
    writer_queue: IntGauge,
    /// `wpds_sqlite_writer_batch_writes` on SQLite, `wpds_postgres_batch_writes` on
    /// PostgreSQL: the engine's batches.
    batch_writes: Histogram,
    /// `wpds_postgres_batch_reads`, on PostgreSQL: its batched reads.
    batch_reads: Option<Histogram>,
    auth_cache: [IntCounter; 2],
    refusals: [IntCounter; 2],
    unavailable: [IntCounter; 3],
    /// `wpds_tracing_spans_total` by outcome, caught up with the tracer's counts at each
    /// scrape (locked: two scrapes at once must not both add the same spans).
    spans: std::sync::Mutex<[IntCounter; 3]>,
    /// `wpds_draining`, read from the server's flag at each scrape.
    draining: (IntGauge, Arc<AtomicBool>),
    db: Arc<Database>,
}

/// The gauges of PostgreSQL's shared connections ([`wpds_storage::engine::SharedPg`]).
struct SharedGauges {
    connections: IntGaugeVec,
    most: IntGauge,
    statements: IntGauge,
}

fn registered<T: prometheus::core::Collector + Clone + 'static>(registry: &Registry, metric: T) -> T {
    registry.register(Box::new(metric.clone())).expect("every metric name is registered once");
    metric
}

impl Metrics {
    /// Metrics that record nothing and serve nothing (`WPDS_METRICS_BIND` unset).
    pub fn off() -> Self {
        Metrics { on: None }
    }

    /// The metrics of a server over `db` answering `operations` (their `operationId` and
    /// the statuses the document declares for each, in the order of the operation table);
    /// registers the build info and the process collector (the SQLite writer's batches are
    /// reported through [`Metrics::batch_committed`], the pool's waits through
    /// [`Metrics::pool_waited`]); `draining` is the server's flag of a drain for a shutdown.
    pub fn new(
        db: Arc<Database>,
        operations: &[(&'static str, &'static [u16])],
        draining: Arc<AtomicBool>,
    ) -> Self {
        Metrics { on: Some(Box::new(Recorders::new(db, operations, draining))) }
    }

    /// Whether the metrics are recorded (and served).
    pub fn is_on(&self) -> bool {
        self.on.is_some()
    }

    /// Calls `record` with the recorders, when the metrics are on.
    fn record(&self, record: impl FnOnce(&Recorders)) {
        if let Some(on) = &self.on {
            record(on);
        }
    }

    /// A batch committed (the SQLite writer's, or one of PostgreSQL's batched statements:
    /// of writes or of reads).
    pub fn batch_committed(&self, batch: BatchReport) {
        self.record(|on| {
            if batch.writes > 0 {
                on.batch_writes.observe(batch.writes as f64);
            }
            if let (Some(reads), 1..) = (&on.batch_reads, batch.reads) {
                reads.observe(batch.reads as f64);
            }
        });
    }

    /// A connection came from the pool after `wait`.
    pub fn pool_waited(&self, wait: Duration) {
        self.record(|on| on.pool_wait.observe(wait.as_secs_f64()));
    }

    /// A request began.
    pub fn started(&self) {
        self.record(|on| on.in_flight.inc());
    }

    /// A request of operation `index` (its place in the operation table; `None` for one
    /// that is not an operation) answered `status` after `elapsed`.
    pub fn answered(&self, index: Option<usize>, status: u16, elapsed: Duration) {
        self.record(|on| on.answered(index, status, elapsed));
    }

    /// An authentication cache lookup found its answer (`hit`) or not.
    pub fn auth_cache_lookup(&self, hit: bool) {
        self.record(|on| on.auth_cache[usize::from(!hit)].inc());
    }

    /// A request was refused with 429; `per_user` when it counted against its user.
    pub fn rate_limited(&self, per_user: bool) {
        self.record(|on| on.refusals[usize::from(!per_user)].inc());
    }

    /// A request answered 503 for `cause`.
    pub fn unavailable(&self, cause: UnavailableCause) {
        self.record(|on| on.unavailable[cause as usize].inc());
    }

    /// Every metric in Prometheus's text format, the gauges read now; empty when the
    /// metrics are off.
    pub fn render(&self) -> String {
        self.on.as_ref().map(|on| on.render()).unwrap_or_default()
    }
}

impl Recorders {
    fn new(
        db: Arc<Database>,
        operations: &[(&'static str, &'static [u16])],
        draining: Arc<AtomicBool>,
    ) -> Self {
        let registry = Registry::new();
        let requests = registered(
            &registry,
            IntCounterVec::new(
                Opts::new("wpds_http_requests_total", "HTTP answers given, by operation and status."),
                &["operation_id", "status_class", "code"],
            )
            .expect("a valid metric"),
        );
        let durations = registered(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "wpds_http_request_duration_seconds",
                    "Time from a request's arrival to its answer's head, by operation and status.",
                )
                .buckets(vec![
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                ]),
                &["operation_id", "status_class", "code"],
            )
            .expect("a valid metric"),
        );
        let anywhere = operations.iter().flat_map(|(_, statuses)| statuses.iter().copied());
        let operations = operations
            .iter()
            .map(|(id, statuses)| PerOperation::new(id, statuses.iter().copied()))
            .chain([PerOperation::new(OTHER, anywhere)])
            .collect();
        let in_flight = registered(
            &registry,
            IntGauge::new("wpds_http_requests_in_flight", "Requests being served now.")
                .expect("a valid metric"),
        );
        let pool_connections = registered(
            &registry,
            IntGaugeVec::new(
                Opts::new("wpds_db_pool_connections", "The database pool's open connections, by state."),
                &["state"],
            )
            .expect("a valid metric"),
        );
        let pool_max = registered(
            &registry,
            IntGauge::new("wpds_db_pool_max_connections", "The database pool's size.")
                .expect("a valid metric"),
        );
        let pool_wait = registered(
            &registry,
            Histogram::with_opts(
                HistogramOpts::new(
                    "wpds_db_pool_wait_seconds",
                    "Time to get a connection from the database pool.",
                )
                .buckets(vec![0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5]),
            )
            .expect("a valid metric"),
        );
        let shared = db.shares_statements().then(|| SharedGauges {
            connections: registered(
                &registry,
                IntGaugeVec::new(
                    Opts::new(
                        "wpds_db_shared_connections",
                        "PostgreSQL's shared connections for single statements, by state (in_use: a statement in flight).",
                    ),
                    &["state"],
                )
                .expect("a valid metric"),
            ),
            most: registered(
                &registry,
                IntGauge::new(
                    "wpds_db_shared_max_connections",
                    "The most shared connections that may open: the limit per worker thread times the threads that ran a statement.",
                )
                .expect("a valid metric"),
            ),
            statements: registered(
                &registry,
                IntGauge::new("wpds_db_shared_statements_in_flight", "Statements in flight on the shared connections.")
                    .expect("a valid metric"),
            ),
        });
        let writer_queue = registered(
            &registry,
            IntGauge::new("wpds_sqlite_writer_queue_depth", "Writes waiting for the SQLite writer thread.")
                .expect("a valid metric"),
        );
        let (name, help) = match db.engine() {
            Engine::Sqlite => {
                ("wpds_sqlite_writer_batch_writes", "Writes per batch the SQLite writer committed.")
            }
            Engine::Postgres => (
                "wpds_postgres_batch_writes",
                "Writes per committed batch of the time-log write's one statement over arrays.",
            ),
        };
        let sizes = |name: &str, help: &str| {
            registered(
                &registry,
                Histogram::with_opts(
                    HistogramOpts::new(name, help).buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]),
                )
                .expect("a valid metric"),
            )
        };
        let batch_writes = sizes(name, help);
        let batch_reads = (db.engine() == Engine::Postgres).then(|| {
            sizes(
                "wpds_postgres_batch_reads",
                "Reads per batch of the authentication's one-statement lookups (token, membership) the cache did not answer.",
            )
        });
        let counters = |name: &str, help: &str, label: &str, values: &[&str]| -> Vec<IntCounter> {
            let vec = registered(
                &registry,
                IntCounterVec::new(Opts::new(name, help), &[label]).expect("a valid metric"),
            );
            values.iter().map(|v| vec.with_label_values(&[v])).collect()
        };
        let auth_cache = counters(
            "wpds_auth_cache_lookups_total",
            "Lookups of the authentication cache (tokens and memberships), by result.",
            "result",
            &["hit", "miss"],
        );
        let refusals = counters(
            "wpds_rate_limit_refusals_total",
            "Requests refused with 429, by what the limit counts.",
            "subject",
            &["user", "address"],
        );
        let unavailable = counters(
            "wpds_unavailable_responses_total",
            "Answers 503 unavailable, by cause.",
            "cause",
            &["database", "body_memory", "draining"],
        );
        let spans = counters(
            "wpds_tracing_spans_total",
            "Spans handed to the exporter's queue (ended), accepted by the collector (exported), and in posts that failed (failed).",
            "outcome",
            &["ended", "exported", "failed"],
        );
        let build_info = registered(
            &registry,
            IntGaugeVec::new(
                Opts::new(
                    "wpds_build_info",
                    "Always 1: the version, the contract's version and the engine running.",
                ),
                &["version", "contract_version", "engine"],
            )
            .expect("a valid metric"),
        );
        let engine = match db.engine() {
            wpds_storage::Engine::Sqlite => "sqlite",
            wpds_storage::Engine::Postgres => "postgres",
        };
        let contract = wpds_contract::document::parsed()["info"]["version"].as_str().unwrap_or("unknown");
        build_info.with_label_values(&[env!("CARGO_PKG_VERSION"), contract, engine]).set(1);
        let drain_gauge = registered(
            &registry,
            IntGauge::new(
                "wpds_draining",
                "1 while the server drains for a shutdown (its readiness answers 503), else 0.",
            )
            .expect("a valid metric"),
        );
        let _ = registry.register(Box::new(prometheus::process_collector::ProcessCollector::for_self()));
        let pair = |v: Vec<IntCounter>| -> [IntCounter; 2] { v.try_into().expect("two values") };
        Recorders {
            registry,
            operations,
            requests,
            durations,
            in_flight,
            pool_connections,
            pool_max,
            shared,
            pool_wait,
            writer_queue,
            batch_writes,
            batch_reads,
            auth_cache: pair(auth_cache),
            refusals: pair(refusals),
            unavailable: unavailable.try_into().expect("three values"),
            spans: std::sync::Mutex::new(spans.try_into().expect("three values")),
            draining: (drain_gauge, draining),
            db,
        }
    }

    fn answered(&self, index: Option<usize>, status: u16, elapsed: Duration) {
        self.in_flight.dec();
        let per = index.and_then(|i| self.operations.get(i)).or_else(|| self.operations.last());
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        if let Some(per) = per {
            let (handles, code) = match per.declared.iter().find(|(declared, ..)| *declared == status) {
                Some((_, code, handles)) => (handles, code.as_str()),
                None => (&per.undeclared[class], UNDECLARED),
            };
            let (requests, duration) = handles.get_or_init(|| {
                let labels = [per.id, CLASSES[class], code];
                (self.requests.with_label_values(&labels), self.durations.with_label_values(&labels))
            });
            requests.inc();
            duration.observe(elapsed.as_secs_f64());
        }
    }

    fn render(&self) -> String {
        let (open, idle, most) = self.db.pool_state();
        self.pool_connections.with_label_values(&["idle"]).set(i64::from(idle));
        self.pool_connections.with_label_values(&["in_use"]).set(i64::from(open.saturating_sub(idle)));
        self.pool_max.set(i64::from(most));
        self.draining.0.set(i64::from(self.draining.1.load(Ordering::Relaxed)));
        if let (Some(gauges), Some(shared)) = (&self.shared, self.db.shared()) {
            let state = shared.state();
            let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            gauges.connections.with_label_values(&["idle"]).set(count(state.idle));
            gauges.connections.with_label_values(&["in_use"]).set(count(state.open - state.idle));
            gauges.most.set(count(state.most));
            gauges.statements.set(count(state.statements));
        }
        let spans = self.spans.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (counter, now) in spans.iter().zip(crate::telemetry::span_counts()) {
            // The tracer's counts only grow: the counter catches up with them.
            counter.inc_by(now.saturating_sub(counter.get()));
        }
        drop(spans);
        if let Some(writer) = self.db.writer() {
            self.writer_queue.set(i64::try_from(writer.queue_depth()).unwrap_or(i64::MAX));
        }
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            log::error!("metrics: cannot encode: {e}");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}
