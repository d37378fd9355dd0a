//! The process's log: env_logger filtered by `WPDS_LOG`, written to standard error as text
//! (the default) or as one JSON object per line (`WPDS_LOG_FORMAT=json`), for log shippers.
//!
//! A JSON line holds `timestamp` (RFC 3339, UTC, always three fraction digits), `level`, `target` and
//! `message`, then every key-value the record carries. The access log
//! ([`crate::http::access_log`]) carries `traceId`, `operationId`, `method`, `route` (the
//! path template, never the path with its ids), `status`, `durationMs`, `clientAddress`
//! and, where known, `userId` (a string, as every id of the API). No record carries a token or a body: the request pipeline
//! never logs either, and the query of a URL is written through [`redaction`], so a
//! credential a client put in the URL is not logged either.

pub mod redaction;

use std::io::Write;
use wpds_storage::clock;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// `[timestamp level target] message`, for people.
    #[default]
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Installs the logger: `filter` in env_logger syntax, lines in `format`. With
/// [`LogFormat::Json`] a panic is reported as a JSON line too (level `ERROR`, target
/// `panic`, the location and, when `RUST_BACKTRACE` asks for one, the backtrace as fields),
/// whatever the filter, instead of the standard library's plain text.
pub fn init(filter: &str, format: LogFormat) {
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(filter).format_timestamp_millis();
    if format == LogFormat::Json {
        builder.format(|out, record| writeln!(out, "{}", json_line(record)));
        std::panic::set_hook(Box::new(|info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            let location = info.location().map(ToString::to_string).unwrap_or_default();
            let backtrace = std::backtrace::Backtrace::capture();
            let backtrace = (backtrace.status() == std::backtrace::BacktraceStatus::Captured)
                .then(|| backtrace.to_string());
            let thread = std::thread::current().name().unwrap_or("unnamed").to_owned();
            let line = panic_line(&message, &location, &thread, backtrace.as_deref());
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }));
    }
    builder.init();
}

/// A panic as a JSON log line (target `panic`, level `ERROR`).
fn panic_line(message: &str, location: &str, thread: &str, backtrace: Option<&str>) -> String {
    let fields: [(&str, log::kv::Value<'_>); 3] = [
        ("location", location.into()),
        ("thread", thread.into()),
        ("backtrace", backtrace.map_or_else(log::kv::Value::null, log::kv::Value::from)),
    ];
    line_of(log::Level::Error, "panic", message, &fields)
}

/// A line the process writes itself, not through the logger (the demo's banner, a
/// command's failure, a panic), as `json_line` writes a record.
pub fn line_of(
    level: log::Level,
    target: &str,
    message: &str,
    fields: &[(&str, log::kv::Value<'_>)],
) -> String {
    json_line(
        &log::Record::builder()
            .level(level)
            .target(target)
            .args(format_args!("{message}"))
            .key_values(&fields)
            .build(),
    )
}

/// `record` as one JSON line (without the newline): `timestamp`, `level`, `target`,
/// `message`, then its key-values. The logger writes every line so with
/// [`LogFormat::Json`]; [`line_of`] writes the process's own lines so, so that a process
/// with JSON logs writes nothing but JSON.
fn json_line(record: &log::Record<'_>) -> String {
    let mut line = serde_json::Map::new();
    // The contract's timestamp format: RFC 3339, UTC, always three fraction digits, so every
    // timestamp has the same width and text order is time order.
    line.insert("timestamp".into(), clock::format_millis(clock::now_millis()).into());
    line.insert("level".into(), record.level().as_str().into());
    line.insert("target".into(), record.target().into());
    line.insert("message".into(), record.args().to_string().into());
    let _ = record.key_values().visit(&mut Fields(&mut line));
    serde_json::Value::Object(line).to_string()
}

/// Copies a record's key-values into a JSON line, each as its own JSON type; a key whose
/// value is absent (`None`) is left out.
struct Fields<'a>(&'a mut serde_json::Map<String, serde_json::Value>);

impl<'kvs> log::kv::VisitSource<'kvs> for Fields<'_> {
    fn visit_pair(
        &mut self,
        key: log::kv::Key<'kvs>,
        value: log::kv::Value<'kvs>,
    ) -> Result<(), log::kv::Error> {
        let mut json = Json(None);
        value.visit(&mut json)?;
        if let Some(json) = json.0 {
            self.0.insert(key.as_str().to_owned(), json);
        }
        Ok(())
    }
}

/// One key-value's JSON rendering (`None` for an absent value).
struct Json(Option<serde_json::Value>);

impl<'v> log::kv::VisitValue<'v> for Json {
    fn visit_any(&mut self, value: log::kv::Value<'_>) -> Result<(), log::kv::Error> {
        self.0 = Some(value.to_string().into());
        Ok(())
    }
    fn visit_null(&mut self) -> Result<(), log::kv::Error> {
        self.0 = None;
        Ok(())
    }
    fn visit_u64(&mut self, value: u64) -> Result<(), log::kv::Error> {
        self.0 = Some(value.into());
        Ok(())
    }
    fn visit_i64(&mut self, value: i64) -> Result<(), log::kv::Error> {
        self.0 = Some(value.into());
        Ok(())
    }
    fn visit_f64(&mut self, value: f64) -> Result<(), log::kv::Error> {
        self.0 = Some(
            serde_json::Number::from_f64(value).map_or(serde_json::Value::Null, serde_json::Value::Number),
        );
        Ok(())
    }
    fn visit_bool(&mut self, value: bool) -> Result<(), log::kv::Error> {
        self.0 = Some(value.into());
        Ok(())
    }
    fn visit_str(&mut self, value: &str) -> Result<(), log::kv::Error> {
        self.0 = Some(value.into());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{line_of, panic_line};

    #[test]
    fn a_timestamp_always_has_three_fraction_digits() {
        for _ in 0..50 {
            let line: serde_json::Value =
                serde_json::from_str(&line_of(log::Level::Info, "t", "m", &[])).unwrap();
            let timestamp = line["timestamp"].as_str().expect("a timestamp");
            assert!(
                timestamp.len() == 24 && timestamp.as_bytes()[19] == b'.' && timestamp.ends_with('Z'),
                "{timestamp}"
            );
        }
    }

    #[test]
    fn a_panic_is_one_json_line_with_its_location() {
        let line: serde_json::Value =
            serde_json::from_str(&panic_line("boom", "src/x.rs:1:2", "actix-rt|system:0|arbiter:0", None))
                .expect("JSON");
        assert_eq!((line["level"].as_str(), line["target"].as_str()), (Some("ERROR"), Some("panic")));
        assert_eq!(
            (line["message"].as_str(), line["location"].as_str()),
            (Some("boom"), Some("src/x.rs:1:2"))
        );
        assert!(line.get("backtrace").is_none(), "no backtrace asked for: {line}");
        let with = panic_line("boom", "src/x.rs:1:2", "main", Some("0: main\n1: start"));
        assert!(!with.contains('\n') && with.contains("0: main\\n1: start"), "{with}");
    }
}
