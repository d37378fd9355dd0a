//! The exporter: finished spans, already encoded ([`super::otlp::span`]), wait in a bounded
//! queue, and one thread of its own posts them to the collector ([`super::collector`]) a
//! batch at a time, behind the envelope's head ([`super::otlp::Envelope`]).
//!
//! A request thread writes its spans into a buffer of its own ([`Held`]) and appends them
//! to the queue a few dozen at a time (one lock, held for a copy): when the queue is full,
//! because the collector is slow, unreachable or black-holed, they are dropped and counted,
//! never waited for. The thread wakes when a batch is full or the schedule delay has
//! passed, takes the whole queue at once with what each request thread holds, and posts it
//! in batches; each step of a post (connecting, sending, receiving) waits at most the
//! export timeout.
//!
//! Why a buffer per thread: appending a request's spans to the shared queue, one lock per
//! request, cost the request threads ~0.5 % of the server's CPU at the lock's release
//! alone (`perf record`, 2026-11-27): releasing a lock waits for the stores before it, and
//! the queue's bytes and the lock's word were last written on another core. A thread's own
//! buffer stays in its core's cache, and its lock is taken by the exporter only once a
//! round.

use super::collector::{Collector, Endpoint, sendable_header};
use super::otlp::{self, Origin};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How spans are exported: the standard `OTEL_EXPORTER_OTLP_*` and `OTEL_BSP_*` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Where batches are posted (the collector's `/v1/traces`); plain `http://`.
    pub endpoint: String,
    /// Headers sent with every post (`OTEL_EXPORTER_OTLP_HEADERS`).
    pub headers: Vec<(String, String)>,
    /// How long a post may take (`OTEL_EXPORTER_OTLP_TIMEOUT`, and no longer than
    /// `OTEL_BSP_EXPORT_TIMEOUT`; 10 s).
    pub timeout: Duration,
    /// How long a span waits for a batch to fill (`OTEL_BSP_SCHEDULE_DELAY`, 5 s).
    pub schedule_delay: Duration,
    /// How many spans wait at most (`OTEL_BSP_MAX_QUEUE_SIZE`, 2048); more are dropped.
    pub max_queue: usize,
    /// How many spans a post carries at most (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, 512).
    pub max_batch: usize,
}

impl Settings {
    /// The settings for posting to `endpoint`, read with `var` (the environment); what is
    /// malformed keeps its default and is described in the returned warnings.
    pub fn read(endpoint: String, var: impl Fn(&str) -> Option<String>) -> (Settings, Vec<String>) {
        let mut warnings = Vec::new();
        let mut number = |names: &[&str], default: u64| -> u64 {
            let Some((name, value)) = names.iter().find_map(|n| var(n).map(|v| (*n, v))) else {
                return default;
            };
            match value.trim().parse::<u64>() {
                Ok(n) if n > 0 => n,
                _ => {
                    warnings.push(format!("{name} {value:?} is not a positive integer: {default} is kept"));
                    default
                }
            }
        };
        let timeout = number(&["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"], 10_000);
        let export_timeout = number(&["OTEL_BSP_EXPORT_TIMEOUT"], 30_000);
        let schedule_delay = number(&["OTEL_BSP_SCHEDULE_DELAY"], 5_000);
        let max_queue = number(&["OTEL_BSP_MAX_QUEUE_SIZE"], 2_048);
        let max_batch = number(&["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"], 512).min(max_queue);
        let headers = match ["OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"]
            .iter()
            .find_map(|n| var(n).map(|v| (*n, v)))
        {
            None => Vec::new(),
            Some((name, value)) => match key_values(&value) {
                Err(e) => {
                    warnings.push(format!("{name}: {e}: no headers are sent"));
                    Vec::new()
                }
                Ok(mut headers) => {
                    headers.retain(|(key, value)| {
                        let sendable = sendable_header(key, value);
                        if !sendable {
                            warnings.push(format!(
                                "{name}: {key:?} is not a header name, or its value holds a control \
                                 character: it is not sent"
                            ));
                        }
                        sendable
                    });
                    headers
                }
            },
        };
        let settings = Settings {
            endpoint,
            headers,
            timeout: Duration::from_millis(timeout.min(export_timeout)),
            schedule_delay: Duration::from_millis(schedule_delay),
            max_queue: usize::try_from(max_queue).unwrap_or(usize::MAX),
            max_batch: usize::try_from(max_batch).unwrap_or(usize::MAX),
        };
        (settings, warnings)
    }
}

/// Reads the W3C Baggage-like lists of `OTEL_EXPORTER_OTLP_HEADERS` and
/// `OTEL_RESOURCE_ATTRIBUTES`: `key=value` pairs separated by commas, values
/// percent-encoded.
pub fn key_values(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').ok_or_else(|| format!("{pair:?} is not key=value"))?;
            let key = key.trim();
            if key.is_empty() {
                return Err(format!("{pair:?} has no key"));
            }
            Ok((
                key.to_owned(),
                percent_decode(value.trim()).ok_or_else(|| format!("{pair:?}: bad percent-encoding"))?,
            ))
        })
        .collect()
}

fn percent_decode(text: &str) -> Option<String> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let high = char::from(bytes.next()?).to_digit(16)?;
            let low = char::from(bytes.next()?).to_digit(16)?;
            out.push(u8::try_from(high << 4 | low).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

/// Spans encoded by [`super::otlp::span`], one after the other, and where each ends.
#[derive(Debug, Default)]
pub struct Encoded {
    /// The spans' bytes.
    pub bytes: Vec<u8>,
    /// The offset in `bytes` after each span, in order: how many spans there are, and
    /// where a batch of them can be cut without reading their bytes (which another core
    /// wrote: following each span's length to the next costs a cache miss a span).
    pub ends: Vec<usize>,
}

impl Encoded {
    /// Encodes `span` after the others.
    pub fn add(&mut self, span: &super::span::SpanRecord<'_>) {
        otlp::span(&mut self.bytes, span);
        self.ends.push(self.bytes.len());
    }

    /// Encodes `span` after the others from `skeleton`, which holds its fixed part
    /// ([`otlp::Skeleton::write`]).
    pub fn add_from(&mut self, skeleton: &otlp::Skeleton, span: &super::span::SpanRecord<'_>) {
        skeleton.write(&mut self.bytes, span);
        self.ends.push(self.bytes.len());
    }

    /// Appends a child span written from `skeleton` ([`otlp::Skeleton::write_child`]).
    pub fn add_child(
        &mut self,
        skeleton: &otlp::Skeleton,
        trace_id: &[u8; 16],
        span_id: &[u8; 8],
        parent: &[u8; 8],
        start: u64,
        end: u64,
    ) {
        skeleton.write_child(&mut self.bytes, trace_id, span_id, parent, start, end);
        self.ends.push(self.bytes.len());
    }

    /// How many spans it holds.
    pub fn count(&self) -> usize {
        self.ends.len()
    }

    /// Appends `other`'s spans after its own.
    pub fn append(&mut self, other: &Encoded) {
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.ends.extend(other.ends.iter().map(|end| base + end));
    }

    /// Empties it, keeping its room.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
}

/// A span whose encoding is left to the exporter's thread: it appends the span to the
/// spans given.
pub type Deferred = Box<dyn FnOnce(&mut Encoded) + Send>;

/// What the request threads and the exporter thread share.
struct Queue {
    state: Mutex<State>,
    /// Signalled when a batch is full and at shutdown.
    wake: Condvar,
    /// Every request thread's buffer ([`Exporter::holder`]), taken from at each round.
    holders: Mutex<Vec<Arc<Held>>>,
    max_queue: usize,
    max_batch: usize,
}

/// One request thread's spans, written there and queued a few dozen at a time
/// ([`Exporter::push`]); what it still holds when the exporter's thread starts a round is
/// taken then, so a span waits no longer than it would in the queue. Each thread holds
/// fewer spans than its own bound (its caller's), on top of the queue's. A thread holds
/// its lock while it queues them, so the exporter's thread takes it with no other lock
/// held (and only to swap the buffer for an empty one).
#[derive(Debug, Default)]
pub struct Held(Mutex<Encoded>);

impl Held {
    /// The spans it holds, locked (by its thread, and by the exporter's at each round).
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Encoded> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct State {
    spans: Encoded,
    /// Spans to be encoded on the exporter's thread ([`Exporter::defer`]).
    deferred: Vec<Deferred>,
    /// Spans dropped since the exporter last looked (the queue was full).
    dropped: u64,
    /// How many spans the exporter carries over from its last round: with the queue's,
    /// they make the batch that wakes it.
    carried: usize,
    stopping: bool,
}

impl State {
    /// How many spans wait in the queue, encoded or deferred: what the queue's bound
    /// (`max_queue`) counts.
    fn waiting(&self) -> usize {
        self.spans.count() + self.deferred.len()
    }
}

/// The running exporter.
pub struct Exporter {
    queue: Arc<Queue>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Exporter {
    /// Starts the exporter thread, posting to `settings.endpoint` as `origin`.
    pub fn start(settings: Settings, origin: Origin) -> Result<Exporter, String> {
        let queue = Arc::new(Queue {
            state: Mutex::new(State {
                spans: preallocated(&settings),
                deferred: Vec::new(),
                dropped: 0,
                carried: 0,
                stopping: false,
            }),
            wake: Condvar::new(),
            holders: Mutex::new(Vec::new()),
            max_queue: settings.max_queue,
            max_batch: settings.max_batch,
        });
        let collector =
            Collector::new(Endpoint::parse(&settings.endpoint)?, &settings.headers, settings.timeout);
        let shared = Arc::clone(&queue);
        let thread = std::thread::Builder::new()
            .name("wpds-otlp-export".to_owned())
            .spawn(move || {
                run_as_batch_work();
                run(&shared, &settings, &origin, collector)
            })
            .map_err(|e| format!("cannot start the span exporter's thread: {e}"))?;
        Ok(Exporter { queue, thread: Mutex::new(Some(thread)) })
    }

    /// A buffer for the calling thread's spans, which the exporter's thread takes from at
    /// each round (and forgets at the first round after its thread has dropped it).
    pub fn holder(&self) -> Arc<Held> {
        let held = Arc::new(Held::default());
        self.queue.holders.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::clone(&held));
        held
    }

    /// Queues finished spans (emptying `spans`), or drops them all when the queue has no
    /// room for them.
    pub fn push(&self, spans: &mut Encoded) {
        let mut state = self.queue.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.waiting() + spans.count() > self.queue.max_queue {
            state.dropped += spans.count() as u64;
        } else {
            let before = state.carried + state.spans.count();
            state.spans.append(spans);
            if before < self.queue.max_batch && before + spans.count() >= self.queue.max_batch {
                self.queue.wake.notify_one();
            }
        }
        drop(state);
        spans.clear();
    }

    /// Queues a span that the exporter's thread encodes (into the spans it takes next), or
    /// drops it when the queue is full: for a thread that must not spend the time.
    pub fn defer(&self, span: Deferred) {
        let mut state = self.queue.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.waiting() >= self.queue.max_queue {
            state.dropped += 1;
        } else {
            state.deferred.push(span);
        }
    }

    /// Exports what is queued and stops the thread (at shutdown; when the collector does
    /// not answer, this waits for one post's timeouts, then drops the rest).
    pub fn shutdown(&self) {
        self.queue.state.lock().unwrap_or_else(PoisonError::into_inner).stopping = true;
        self.queue.wake.notify_one();
        let thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            log::warn!("tracing: the span exporter's thread panicked");
        }
    }
}

impl Queue {
    /// Takes what each request thread holds into `spans` (what the exporter's thread took
    /// from the queue), and forgets the buffers of threads that are gone. A thread's lock
    /// is held only to swap its buffer for an empty one of `spares` (the buffers taken in
    /// earlier rounds), never for a copy: this thread is batch work, and a request thread
    /// must not wait for it to be scheduled again. Nor is the queue's lock held, which
    /// the SQLite writer's thread takes for each batch it records.
    fn gather(&self, spans: &mut Encoded, spares: &mut Vec<Encoded>) {
        let mut holders = self.holders.lock().unwrap_or_else(PoisonError::into_inner);
        for held in holders.iter() {
            let mut taken = spares.pop().unwrap_or_default();
            std::mem::swap(&mut *held.lock(), &mut taken);
            spans.append(&taken);
            taken.clear();
            spares.push(taken);
        }
        holders.retain(|held| Arc::strong_count(held) > 1);
        spares.truncate(holders.len());
    }
}

/// Marks the calling thread (the exporter's) as batch work: Linux's `SCHED_BATCH`, which
/// keeps the thread's share of the CPU (so it keeps up with the queue as before) but has
/// its wake-ups never preempt a running thread. A full batch then waits for a request
/// thread or the SQLite writer to reach a switch of its own, instead of interrupting it
/// mid-work for the ~60 µs a post takes; on a busy machine every write waits for the
/// writer. Measured in alternated loads, tracing every request, against the same build
/// without it: write throughput +1.3 % (mean of twelve rounds of eight loads,
/// 97.6–103.7 %, nine above 100 %), no span dropped. Where the call is refused, or off
/// Linux, the thread stays as it was.
fn run_as_batch_work() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid `sched_param` for the call, which only reads it; pid 0
        // names the calling thread.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) } != 0 {
            log::debug!(
                "tracing: the exporter's thread stays a normal one (SCHED_BATCH: {})",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// The queue, or the exporter's spare for it (the two are swapped at each export), with
/// room made up front for a full queue of ~200-byte spans, up to 4 096 of them (~0.8 MiB),
/// so that appending to the queue never moves what it holds to grow it. A larger queue
/// grows past that as it fills.
fn preallocated(settings: &Settings) -> Encoded {
    let spans = settings.max_queue.min(4_096);
    Encoded { bytes: Vec::with_capacity(spans * 200), ends: Vec::with_capacity(spans) }
}

/// How often a failing collector or a full queue is logged at most.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// The exporter thread: waits for a full batch or the schedule delay, takes the queue,
/// posts it; until shutdown, after one last round.
///
/// Woken by a full batch, it posts whole batches only and carries the spans of the last,
/// partial one over to the next round (posted first then): the queue has grown a little
/// past the batch size by the time the thread runs, and posting that remainder at once
/// would make every other post a small one (a post costs the same system calls whatever
/// its size). At the schedule delay and at shutdown everything goes. The spans carried
/// are fewer than a batch, so at most `max_queue + max_batch` spans wait at any time.
///
/// A post's answer is read just before the next post goes ([`Collector::settle`]), and at
/// shutdown. Once a post has failed (its answer said so, or never came), the rest of the
/// round is dropped, not posted: a collector that timed out once would likely time out
/// again, and at shutdown that would hold the process for a timeout per batch.
fn run(queue: &Queue, settings: &Settings, origin: &Origin, mut collector: Collector) {
    let mut spare = preallocated(settings);
    let mut held_spares = Vec::new();
    let envelope = otlp::Envelope::new(origin);
    let mut head = Vec::new();
    let mut carried = Carried::default();
    let mut deferred = Vec::new();
    let mut dropped = 0_u64;
    let mut failure: Option<String> = None;
    let mut warned: Option<Instant> = None;
    loop {
        let (mut spans, stopping) = {
            let mut state = queue.state.lock().unwrap_or_else(PoisonError::into_inner);
            let deadline = Instant::now() + settings.schedule_delay;
            state.carried = carried.count;
            while !state.stopping && carried.count + state.spans.count() < settings.max_batch {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                state = queue.wake.wait_timeout(state, left).unwrap_or_else(PoisonError::into_inner).0;
            }
            dropped += std::mem::take(&mut state.dropped);
            std::mem::swap(&mut state.deferred, &mut deferred);
            (std::mem::replace(&mut state.spans, spare), state.stopping)
        };
        queue.gather(&mut spans, &mut held_spares);
        for span in deferred.drain(..) {
            span(&mut spans);
        }
        let full = !stopping && carried.count + spans.count() >= settings.max_batch;
        // Batches of at most `max_batch` spans, the carried ones first, cut where the
        // queue's spans end (`spans.ends`).
        let (mut taken, mut start, mut failed) = (0, 0, false);
        loop {
            let left = spans.count() - taken;
            let room = settings.max_batch - carried.count;
            let (count, last) = if left >= room { (room, false) } else { (left, true) };
            if last && full {
                // A full round's partial batch: carried over (behind what is carried
                // already, when no batch was cut; after a failure, dropped instead).
                if failed {
                    dropped += (carried.count + left) as u64;
                    carried.clear();
                } else {
                    carried.bytes.extend_from_slice(&spans.bytes[start..]);
                    carried.count += left;
                }
                break;
            }
            if carried.count + count == 0 {
                break;
            }
            let cut = if count == 0 { start } else { spans.ends[taken + count - 1] };
            if !failed && let Some((posted, Err(e))) = collector.settle() {
                dropped += posted as u64;
                failure = Some(e);
                failed = true;
            }
            if failed {
                dropped += (carried.count + count) as u64;
            } else {
                envelope.head(&mut head, carried.bytes.len() + cut - start);
                let body = [&head[..], &carried.bytes, &spans.bytes[start..cut]];
                if let Err(e) = collector.send(&body, carried.count + count) {
                    dropped += (carried.count + count) as u64;
                    failure = Some(e);
                    failed = true;
                }
            }
            carried.clear();
            (taken, start) = (taken + count, cut);
            if last {
                break;
            }
        }
        if stopping && let Some((posted, Err(e))) = collector.settle() {
            dropped += posted as u64;
            failure = Some(e);
        }
        spans.clear();
        spare = spans;
        if (dropped > 0 || failure.is_some()) && warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
            let why = failure
                .take()
                .map_or_else(|| "the queue was full".to_owned(), |e| format!("last failure: {e}"));
            log::warn!("tracing: {dropped} spans not exported to {} ({why})", settings.endpoint);
            dropped = 0;
            warned = Some(Instant::now());
        }
        if stopping {
            return;
        }
    }
}

/// The spans of a full round's last, partial batch, posted first in the next round.
#[derive(Default)]
struct Carried {
    bytes: Vec<u8>,
    count: usize,
}

impl Carried {
    fn clear(&mut self) {
        self.bytes.clear();
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> (Settings, Vec<String>) {
        let vars: Vec<(String, String)> =
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Settings::read("http://collector:4318/v1/traces".to_owned(), |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn the_defaults_are_the_batch_processors() {
        let (settings, warnings) = read(&[]);
        assert!(warnings.is_empty());
        assert_eq!((settings.max_queue, settings.max_batch), (2048, 512));
        assert_eq!(
            (settings.schedule_delay, settings.timeout),
            (Duration::from_secs(5), Duration::from_secs(10))
        );
    }

    #[test]
    fn the_standard_variables_are_read_and_bad_ones_warned_of() {
        let (settings, warnings) = read(&[
            ("OTEL_BSP_MAX_QUEUE_SIZE", "100"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "512"),
            ("OTEL_BSP_SCHEDULE_DELAY", "soon"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x-tenant = t1"),
        ]);
        assert_eq!((settings.max_queue, settings.max_batch), (100, 100));
        assert_eq!(settings.schedule_delay, Duration::from_secs(5));
        assert_eq!(settings.timeout, Duration::from_millis(2500));
        assert_eq!(
            settings.headers,
            [("api-key".to_owned(), "a b".to_owned()), ("x-tenant".to_owned(), "t1".to_owned())]
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_exporters_thread_runs_as_batch_work() {
        let unheard = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let (settings, _) =
            Settings::read(format!("http://{}/v1/traces", unheard.local_addr().expect("bound")), |_| None);
        let exporter =
            Exporter::start(settings, Origin { resource: Vec::new(), scope: "test", version: "0" })
                .expect("started");
        // Its thread is found by name among this process's threads; it sets its policy
        // first thing, so wait for that (other tests' exporters, batch work too, may be
        // found as well).
        let deadline = Instant::now() + Duration::from_secs(5);
        let policies = loop {
            let policies: Vec<i32> = std::fs::read_dir("/proc/self/task")
                .expect("/proc/self/task")
                .filter_map(|task| {
                    let path = task.ok()?.path();
                    let name = std::fs::read_to_string(path.join("comm")).ok()?;
                    let tid: i32 = path.file_name()?.to_str()?.parse().ok()?;
                    // SAFETY: a read of a thread's policy by its id; no memory is passed.
                    (name.trim() == "wpds-otlp-expor").then(|| unsafe { libc::sched_getscheduler(tid) })
                })
                .collect();
            if (!policies.is_empty() && policies.iter().all(|p| *p == libc::SCHED_BATCH))
                || Instant::now() > deadline
            {
                break policies;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        exporter.shutdown();
        assert!(!policies.is_empty(), "no exporter thread found");
        assert!(policies.iter().all(|p| *p == libc::SCHED_BATCH), "policies {policies:?}");
    }

    #[test]
    fn a_silent_collector_holds_shutdown_for_one_post_not_one_per_batch() {
        // A listener that never accepts: connections complete in the kernel's backlog, the
        // request is sent, no answer ever comes.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let (settings, _) =
            Settings::read(format!("http://{}/v1/traces", silent.local_addr().expect("bound")), |name| {
                match name {
                    "OTEL_EXPORTER_OTLP_TIMEOUT" => Some("300".to_owned()),
                    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE" => Some("2".to_owned()),
                    "OTEL_BSP_SCHEDULE_DELAY" => Some("60000".to_owned()),
                    _ => None,
                }
            });
        let origin = Origin { resource: Vec::new(), scope: "test", version: "0" };
        let exporter = Exporter::start(settings, origin).expect("started");
        let mut spans = Encoded::default();
        for _ in 0..40 {
            spans.add(&otlp::test_span("work"));
        }
        exporter.push(&mut spans);
        assert_eq!(spans.count(), 0, "the spans were taken");
        let started = Instant::now();
        exporter.shutdown();
        // 20 batches: one post's timeouts (~0.3 s), not twenty (~6 s).
        assert!(started.elapsed() < Duration::from_secs(3), "shutdown took {:?}", started.elapsed());
    }

    /// The length-delimited fields of a protobuf message, as (field number, content); the
    /// others skipped.
    fn len_fields(mut message: &[u8]) -> Vec<(u64, &[u8])> {
        fn varint(buf: &mut &[u8]) -> u64 {
            let (mut value, mut shift) = (0, 0);
            loop {
                let byte = buf[0];
                *buf = &buf[1..];
                value |= u64::from(byte & 0x7f) << shift;
                shift += 7;
                if byte < 0x80 {
                    return value;
                }
            }
        }
        let mut fields = Vec::new();
        while !message.is_empty() {
            let tag = varint(&mut message);
            match tag & 7 {
                0 => drop(varint(&mut message)),
                1 => message = &message[8..],
                5 => message = &message[4..],
                2 => {
                    let length = usize::try_from(varint(&mut message)).expect("a length");
                    fields.push((tag >> 3, &message[..length]));
                    message = &message[length..];
                }
                wire => panic!("wire type {wire}"),
            }
        }
        fields
    }

    /// A collector on a loopback port that answers every post 200 and sends the names of
    /// the spans each post carried down `posts`.
    fn recording_collector(posts: std::sync::mpsc::Sender<Vec<String>>) -> String {
        use std::io::{BufRead, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let endpoint = format!("http://{}/v1/traces", listener.local_addr().expect("bound"));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = std::io::BufReader::new(stream.try_clone().expect("a second handle"));
                let mut writer = stream;
                loop {
                    let (mut line, mut length) = (String::new(), 0);
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = value.trim().parse().expect("a length");
                        }
                        line.clear();
                    }
                    if line.is_empty() {
                        break;
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).expect("the body");
                    let mut names = Vec::new();
                    for (_, resource_spans) in len_fields(&body).into_iter().filter(|(f, _)| *f == 1) {
                        for (_, scope_spans) in
                            len_fields(resource_spans).into_iter().filter(|(f, _)| *f == 2)
                        {
                            for (_, span) in len_fields(scope_spans).into_iter().filter(|(f, _)| *f == 2) {
                                let name =
                                    len_fields(span).into_iter().find(|(f, _)| *f == 5).expect("a name").1;
                                names.push(String::from_utf8(name.to_vec()).expect("text"));
                            }
                        }
                    }
                    let _ = posts.send(names);
                    writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").expect("the answer");
                }
            }
        });
        endpoint
    }

    #[test]
    fn a_full_round_posts_whole_batches_and_carries_the_rest_over_in_order() {
        // Arrange: batches of 4, a schedule delay that never comes.
        let (sender, posts) = std::sync::mpsc::channel();
        let (settings, _) = Settings::read(recording_collector(sender), |name| match name {
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE" => Some("4".to_owned()),
            "OTEL_BSP_SCHEDULE_DELAY" => Some("60000".to_owned()),
            _ => None,
        });
        let origin = Origin { resource: Vec::new(), scope: "test", version: "0" };
        let exporter = Exporter::start(settings, origin).expect("started");
        let push = |names: std::ops::Range<usize>| {
            let mut spans = Encoded::default();
            for i in names {
                spans.add(&otlp::test_span(&format!("s{i}")));
            }
            exporter.push(&mut spans);
        };
        let next = || posts.recv_timeout(Duration::from_secs(10)).expect("a post");
        let names = |range: std::ops::Range<usize>| range.map(|i| format!("s{i}")).collect::<Vec<_>>();

        // Act and assert: 10 spans make two posts of 4 and carry 2; 3 more make a third
        // post (the 2 carried first) and carry 1, which goes at shutdown.
        push(0..10);
        assert_eq!(next(), names(0..4));
        assert_eq!(next(), names(4..8));
        assert!(posts.recv_timeout(Duration::from_millis(300)).is_err(), "the partial batch waits");
        push(10..13);
        assert_eq!(next(), names(8..12));
        exporter.shutdown();
        assert_eq!(next(), names(12..13));
        assert!(posts.try_recv().is_err(), "no other post");
    }

    #[test]
    fn what_a_thread_holds_is_posted_at_the_schedule_delay_and_its_holder_forgotten_once_it_is_gone() {
        // Arrange: a schedule delay of 100 ms, batches far larger than what is held.
        let (sender, posts) = std::sync::mpsc::channel();
        let (settings, _) = Settings::read(recording_collector(sender), |name| {
            (name == "OTEL_BSP_SCHEDULE_DELAY").then(|| "100".to_owned())
        });
        let origin = Origin { resource: Vec::new(), scope: "test", version: "0" };
        let exporter = Exporter::start(settings, origin).expect("started");
        let next = || posts.recv_timeout(Duration::from_secs(10)).expect("a post");
        let holders = || exporter.queue.holders.lock().expect("not poisoned").len();

        // Act: a thread holds a span, never queues it, and ends.
        std::thread::scope(|scope| {
            scope.spawn(|| exporter.holder().lock().add(&otlp::test_span("held by a thread now gone")));
        });

        // Assert: the span is posted all the same, and the thread's holder forgotten.
        assert_eq!(next(), ["held by a thread now gone"]);
        assert_eq!(holders(), 0, "the gone thread's holder is forgotten");

        // Act and assert: a live thread's holder stays, and what it holds goes at each round.
        let held = exporter.holder();
        held.lock().add(&otlp::test_span("first"));
        assert_eq!(next(), ["first"]);
        held.lock().add(&otlp::test_span("second"));
        assert_eq!(next(), ["second"]);
        assert_eq!(holders(), 1, "the live thread's holder is kept");
        held.lock().add(&otlp::test_span("at shutdown"));
        exporter.shutdown();
        assert_eq!(next(), ["at shutdown"]);
    }

    #[test]
    fn a_deferred_span_is_encoded_on_the_exporters_thread_and_posted() {
        // Arrange
        let (sender, posts) = std::sync::mpsc::channel();
        let (settings, _) = Settings::read(recording_collector(sender), |_| None);
        let origin = Origin { resource: Vec::new(), scope: "test", version: "0" };
        let exporter = Exporter::start(settings, origin).expect("started");
        let (thread_tx, thread) = std::sync::mpsc::channel();

        // Act
        exporter.defer(Box::new(move |spans: &mut Encoded| {
            let _ = thread_tx.send(std::thread::current().name().map(str::to_owned));
            spans.add(&otlp::test_span("deferred"));
        }));
        exporter.shutdown();

        // Assert
        assert_eq!(
            thread.recv_timeout(Duration::from_secs(10)).expect("encoded"),
            Some("wpds-otlp-export".to_owned())
        );
        assert_eq!(posts.recv_timeout(Duration::from_secs(10)).expect("a post"), ["deferred"]);
    }

    #[test]
    fn malformed_key_value_lists_are_refused() {
        assert!(key_values("novalue").is_err());
        assert!(key_values("=v").is_err());
        assert!(key_values("k=%zz").is_err());
        assert_eq!(key_values(" ").expect("empty"), []);
    }
}
