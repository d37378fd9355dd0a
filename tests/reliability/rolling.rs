//! Issue 35, point 3: a rolling restart drops nothing. Two instances share a database
//! behind a "balancer" played by the test: each client keeps its connection alive and sends
//! request after request on it, as a load balancer's pooled connection or any keep-alive
//! client does, and opens a new connection only when the server ended the last one; a new
//! connection goes to the old instance while the balancer's health check (`/readyz` every
//! 100 ms) finds it ready, else to the new one. The old instance is told to stop (SIGTERM,
//! a 2 s drain): its answers from then on carry `Connection: close`, so every client moves
//! before the listener closes, and no request fails.

use crate::harness::{CELLS, Seeded, Server, agent, readyz};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one client saw.
#[derive(Default)]
struct Tally {
    /// Whether each answer of the old instance received after it was told to stop carried
    /// `Connection: close`, in order.
    old_after_signal: Vec<bool>,
    /// Answers in all, and those with a status other than the expected 409.
    answered: usize,
    unexpected: Vec<String>,
    /// Requests that got no answer (refused, reset, cut short).
    failed: Vec<String>,
}

/// Sends `request` on `stream` and reads the answer: its status, and whether the server
/// said it closes the connection.
fn exchange(stream: &TcpStream, request: &[u8]) -> std::io::Result<(u16, bool)> {
    let mut writer = stream;
    writer.write_all(request)?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line.split(' ').nth(1).and_then(|s| s.parse().ok());
    let Some(status) = status else {
        return Err(std::io::Error::other(format!("no status line: {line:?}")));
    };
    let (mut length, mut close) = (0usize, false);
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::Error::other("the connection closed within the head"));
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((header, ""));
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap_or(0),
            "connection" => close = value.trim().eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok((status, close))
}

#[test]
fn in_a_rolling_restart_keep_alive_clients_lose_no_request() {
    // Arrange: an old and a new instance on one database; the old one in rotation.
    let seeded = Seeded::new();
    let settings = [("WPDS_DRAIN_SECONDS", "2"), ("WPDS_SHUTDOWN_TIMEOUT", "2"), ("WPDS_LOG", "info")];
    let mut old = Server::start_with(&seeded.database.url, &settings);
    let new = Server::start_with(&seeded.database.url, &settings);
    let (old_port, new_port) = (old.port, new.port);
    let (in_rotation, stop) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(false)));
    let signalled = Arc::new(AtomicBool::new(false));
    // The balancer's health check, from the signal on (before it, a check slowed by a busy
    // machine must not take the old instance out early: every client is on it then).
    let checker = {
        let (in_rotation, signalled, base) =
            (Arc::clone(&in_rotation), Arc::clone(&signalled), old.base.clone());
        std::thread::spawn(move || {
            let agent = agent();
            while !signalled.load(Ordering::SeqCst) || readyz(&agent, &base).ok() == Some(200) {
                std::thread::sleep(Duration::from_millis(100));
            }
            in_rotation.store(false, Ordering::SeqCst);
        })
    };
    // A write no cell ever reaches: answered 409 `version_conflict`, the whole path (body,
    // authentication, the database) without changing anything.
    let body = r#"{"projectId":"7","phase":"general","date":"2024-03-01","hours":"1","note":"x","billable":true,"expectedVersion":1000000000}"#;
    let request = format!(
        "PUT {CELLS} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        seeded.token,
        body.len()
    );
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (in_rotation, stop, request) = (Arc::clone(&in_rotation), Arc::clone(&stop), request.clone());
            let signalled = Arc::clone(&signalled);
            std::thread::spawn(move || {
                let mut tally = Tally::default();
                let mut open: Option<(TcpStream, u16)> = None;
                while !stop.load(Ordering::SeqCst) {
                    let (stream, port) = match open.take() {
                        Some(kept) => kept,
                        None => {
                            let port = if in_rotation.load(Ordering::SeqCst) { old_port } else { new_port };
                            match TcpStream::connect(("127.0.0.1", port)) {
                                Ok(stream) => (stream, port),
                                Err(e) => {
                                    tally.failed.push(format!("connect to {port}: {e}"));
                                    continue;
                                }
                            }
                        }
                    };
                    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("a read timeout");
                    match exchange(&stream, request.as_bytes()) {
                        Ok((status, close)) => {
                            // Whether the answer came after the signal, not the request: a
                            // request in flight at the signal is answered while the old
                            // instance drains (with `Connection: close`), and on a busy machine
                            // the health check may have moved the balancer before its client
                            // reconnects, so that answer can be the old instance's only one.
                            let after_signal = signalled.load(Ordering::SeqCst);
                            tally.answered += 1;
                            if status != 409 {
                                tally.unexpected.push(format!("{port}: {status}"));
                            }
                            if port == old_port && after_signal {
                                tally.old_after_signal.push(close);
                            }
                            if !close {
                                open = Some((stream, port));
                            }
                        }
                        Err(e) => tally.failed.push(format!("on a connection to {port}: {e}")),
                    }
                }
                tally
            })
        })
        .collect();

    // Act: after a second of traffic the old instance is told to stop; the clients go on
    // until it has exited and for half a second more.
    std::thread::sleep(Duration::from_secs(1));
    let signal = Instant::now();
    signalled.store(true, Ordering::SeqCst);
    old.terminate();
    let status = old.wait_for_exit(Duration::from_secs(15));
    let stopped_after = signal.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    checker.join().expect("the health check");
    let tallies: Vec<Tally> = clients.into_iter().map(|c| c.join().expect("a client")).collect();

    // Assert: nothing failed, every answer was the expected one, and each client that the
    // old instance answered after the signal was told to move on by its last answer there.
    let failed: Vec<&String> = tallies.iter().flat_map(|t| &t.failed).collect();
    let unexpected: Vec<&String> = tallies.iter().flat_map(|t| &t.unexpected).collect();
    let answered: usize = tallies.iter().map(|t| t.answered).sum();
    let old_after: usize = tallies.iter().map(|t| t.old_after_signal.len()).sum();
    eprintln!(
        "rolling: {answered} answered, {old_after} by the old instance after its signal, {} failed; \
         it stopped after {stopped_after:?}",
        failed.len()
    );
    assert!(failed.is_empty(), "requests without an answer: {failed:?}");
    assert!(unexpected.is_empty(), "answers other than 409: {unexpected:?}");
    assert!(old_after > 0, "the old instance answered while it drained");
    for tally in &tallies {
        assert_ne!(tally.old_after_signal.last(), Some(&false), "a client left on a kept-alive connection");
    }
    assert!(answered > 20, "traffic flowed: {answered}");
    assert!(status.success(), "exit status {status}; log:\n{}", old.log_text());
    drop(new);
}
