//! PostgreSQL's network timeouts, set in code so that a URL means the same to every
//! driver (libpq for the blocking pool, tokio-postgres for the shared connections).

use std::time::Duration;

/// `url` with libpq's network timeouts added, so that a silent network (packets dropped,
/// no reset) cannot hold a connection's thread without bound, whatever the URL says
/// (settings the URL already names are kept): `connect_timeout` (at least libpq's minimum,
/// 2 s), keepalives after 5 s idle every 2 s (dead after 3 unanswered), and
/// `tcp_user_timeout` (data unacknowledged that long closes the connection) at the request
/// budget plus 1 s. A request still answers at its deadline without them (the server keeps
/// it); these free the thread and the connection behind it.
pub fn with_network_timeouts(url: &str, timeout: Duration) -> String {
    let mut out = url.to_owned();
    for (name, value) in network_settings(url, timeout) {
        out.push(if out.contains('?') { '&' } else { '?' });
        out.push_str(&format!("{name}={value}"));
    }
    out
}

/// The network settings a PostgreSQL connection to `url` gets: each of the table below
/// that the URL does not name itself, in libpq's names and units (seconds;
/// `tcp_user_timeout` in milliseconds).
pub(crate) fn network_settings(url: &str, timeout: Duration) -> Vec<(&'static str, String)> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let named = |name: &str| query.split('&').any(|pair| pair.split('=').next() == Some(name));
    [
        ("connect_timeout", timeout.as_secs().max(2).to_string()),
        ("keepalives", "1".to_owned()),
        ("keepalives_idle", "5".to_owned()),
        ("keepalives_interval", "2".to_owned()),
        ("keepalives_count", "3".to_owned()),
        ("tcp_user_timeout", (timeout.as_millis() + 1000).to_string()),
    ]
    .into_iter()
    .filter(|(name, _)| !named(name))
    .collect()
}
