//! The process's log: env_logger filtered by `WPDS_LOG`, written to standard error as text
//! (the default) or as one JSON object per line (`WPDS_LOG_FORMAT=json`), for log shippers.
//!
//! A JSON line holds `timestamp` (RFC 3339, UTC, milliseconds), `level`, `target` and
//! `message`, then every key-value the record carries. The access log
//! ([`crate::http::access_log`]) carries `traceId`, `operationId`, `method`, `route` (the
//! path template, never the path with its ids), `status`, `durationMs`, `clientAddress`
//! and, where known, `userId`. No record carries a token or a body: the request pipeline
//! never logs either.

use std::io::Write;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// `[timestamp level target] message`, for people.
    #[default]
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Installs the logger: `filter` in env_logger syntax, lines in `format`.
pub fn init(filter: &str, format: LogFormat) {
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(filter).format_timestamp_millis();
    if format == LogFormat::Json {
        builder.format(|out, record| {
            let mut line = serde_json::Map::new();
            let now = time::OffsetDateTime::now_utc();
            let timestamp = now
                .replace_nanosecond(now.millisecond() as u32 * 1_000_000)
                .ok()
                .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
                .unwrap_or_default();
            line.insert("timestamp".into(), timestamp.into());
            line.insert("level".into(), record.level().as_str().into());
            line.insert("target".into(), record.target().into());
            line.insert("message".into(), record.args().to_string().into());
            let _ = record.key_values().visit(&mut Fields(&mut line));
            writeln!(out, "{}", serde_json::Value::Object(line))
        });
    }
    builder.init();
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
