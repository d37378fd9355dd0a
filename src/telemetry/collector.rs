//! The exporter's connection to the collector: plain HTTP/1.1 over one TCP connection,
//! kept alive from post to post, written for what the exporter does and nothing more.
//!
//! A post is one `writev`: the request's head, the envelope's head and the spans' bytes as
//! the queue holds them (no copy into a request body). Its answer is read when the next
//! post is about to go, or at shutdown ([`Collector::settle`]): by then it has arrived, so
//! the exporter's thread does not sleep once per post waiting for it; it is still read
//! before anything else is sent on the connection (no pipelining), and a collector that is
//! slow to answer holds the next post, as a synchronous client would.
//!
//! Each step (connecting, writing, each read) waits at most the export timeout. The host
//! is resolved when a connection is made, with the system's resolver, on this thread.
//! Answers are read as RFC 9112 frames them (a `Content-Length`, chunked, or to the close)
//! and their bodies discarded, at most [`MAX_ANSWER`] bytes of them; the connection is
//! kept unless the collector closes it or answers with HTTP/1.0 without keep-alive.

use std::io::{self, IoSlice, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The most of an answer's head read before the answer is taken as malformed.
const MAX_HEAD: usize = 64 << 10;

/// The most of an answer's body read and discarded; past that the connection is closed
/// (the answer's status still counts).
const MAX_ANSWER: usize = 1 << 20;

/// How long a connection may have been idle before a post checks that the collector has not
/// closed it meanwhile (one non-blocking peek); a busy exporter posts far more often.
const IDLE_CHECK: Duration = Duration::from_millis(250);

/// Where posts go: an `http://` URL taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The host, as a name or an address (an IPv6 one without its brackets).
    host: String,
    /// The port (80 unless the URL names one).
    port: u16,
    /// The URL's authority, as the `Host` header sends it.
    authority: String,
    /// The path and query (`/` at least).
    target: String,
}

impl Endpoint {
    /// Takes `url` apart: `http://host[:port][/path][?query]` (a fragment is ignored);
    /// `Err` says what is not supported or not well formed.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let rest =
            url.strip_prefix("http://").ok_or_else(|| format!("{url:?} is not a plain http:// URL"))?;
        let rest = rest.split('#').next().unwrap_or("");
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, target) = rest.split_at(split);
        if authority.contains('@') {
            return Err(format!(
                "{url:?}: credentials in the URL are not supported (use OTEL_EXPORTER_OTLP_HEADERS)"
            ));
        }
        let (host, port) = match authority.strip_prefix('[') {
            Some(bracketed) => {
                let (host, after) =
                    bracketed.split_once(']').ok_or_else(|| format!("{url:?}: an unclosed IPv6 address"))?;
                match after {
                    "" => (host, None),
                    _ => (
                        host,
                        Some(
                            after
                                .strip_prefix(':')
                                .ok_or_else(|| format!("{url:?}: no port after the address"))?,
                        ),
                    ),
                }
            }
            None => match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            },
        };
        let port = match port {
            None | Some("") => 80,
            Some(port) => port.parse().map_err(|_| format!("{url:?}: {port:?} is not a port"))?,
        };
        if host.is_empty() || !host.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!("{url:?}: no host, or one that is not well formed"));
        }
        if !target.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!("{url:?}: the path must be printable ASCII without spaces"));
        }
        let target = match target.as_bytes().first() {
            None => "/".to_owned(),
            Some(b'?') => format!("/{target}"),
            Some(_) => target.to_owned(),
        };
        Ok(Endpoint { host: host.to_owned(), port, authority: authority.to_owned(), target })
    }
}

/// Whether `name: value` can be sent as a header: a token for a name, a value without
/// control characters (no way to end the header early).
pub fn sendable_header(name: &str, value: &str) -> bool {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    !name.is_empty()
        && name.bytes().all(token)
        && value.bytes().all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// A connection to the collector, made when a post needs one.
struct Connection {
    stream: TcpStream,
    /// What has been read of answers and not yet consumed.
    read: Vec<u8>,
    /// Whether a post has gone on it (a fresh connection's failure is not retried).
    used: bool,
    /// When its last answer was read.
    idle_since: Instant,
}

/// The exporter's client: posts to one endpoint, one at a time.
pub struct Collector {
    endpoint: Endpoint,
    /// The request's head up to the `Content-Length` value: request line, `Host`,
    /// `User-Agent`, `Content-Type`, the configured headers.
    head: Vec<u8>,
    /// The head of the post being written.
    head_buf: Vec<u8>,
    timeout: Duration,
    connection: Option<Connection>,
    /// How many spans the post whose answer has not been read carried.
    pending: Option<usize>,
}

impl Collector {
    /// A client posting to `endpoint` with `headers`, each step waiting at most `timeout`.
    /// Headers that cannot be sent ([`sendable_header`]) must have been left out.
    pub fn new(endpoint: Endpoint, headers: &[(String, String)], timeout: Duration) -> Collector {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: wpds/{}\r\nContent-Type: application/x-protobuf\r\n",
            endpoint.target,
            endpoint.authority,
            env!("CARGO_PKG_VERSION")
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("Content-Length: ");
        Collector {
            endpoint,
            head: head.into_bytes(),
            head_buf: Vec::new(),
            timeout,
            connection: None,
            pending: None,
        }
    }

    /// Reads the answer to the last post, if it has not been read: how many spans that post
    /// carried and whether the collector took them (`Err` says why not). The connection is
    /// closed after a failure.
    pub fn settle(&mut self) -> Option<(usize, Result<(), String>)> {
        let spans = self.pending.take()?;
        let answer = match self.connection.as_mut() {
            None => Err("the connection was lost".to_owned()),
            Some(connection) => read_answer(connection, self.timeout),
        };
        let outcome = match answer {
            Ok(Answer { status, keep }) => {
                match self.connection.as_mut() {
                    Some(connection) if keep => connection.idle_since = Instant::now(),
                    _ => self.connection = None,
                }
                if (200..300).contains(&status) {
                    Ok(())
                } else {
                    Err(format!("the collector answered {status}"))
                }
            }
            Err(e) => {
                self.connection = None;
                Err(e)
            }
        };
        Some((spans, outcome))
    }

    /// Sends a post whose body is `body`'s parts one after the other, carrying `spans`
    /// spans; its answer is read by the next [`Collector::settle`] (which must come first:
    /// a post before the last one's answer was read is refused). A connection that was
    /// kept from an earlier post and turns out closed is replaced once.
    pub fn send(&mut self, body: &[&[u8]], spans: usize) -> Result<(), String> {
        if self.pending.is_some() {
            return Err("the last post's answer was not read".to_owned());
        }
        let length: usize = body.iter().map(|part| part.len()).sum();
        self.head_buf.clear();
        self.head_buf.extend_from_slice(&self.head);
        self.head_buf.extend_from_slice(length.to_string().as_bytes());
        self.head_buf.extend_from_slice(b"\r\n\r\n");
        loop {
            let connection = match self.connection.as_mut() {
                Some(connection)
                    if connection.idle_since.elapsed() < IDLE_CHECK || still_open(&connection.stream) =>
                {
                    connection
                }
                _ => self.connection.insert(connect(&self.endpoint, self.timeout)?),
            };
            let mut parts: Vec<IoSlice<'_>> = Vec::with_capacity(body.len() + 1);
            parts.push(IoSlice::new(&self.head_buf));
            parts.extend(body.iter().filter(|part| !part.is_empty()).map(|part| IoSlice::new(part)));
            match write_all_vectored(&mut connection.stream, &mut parts) {
                Ok(()) => {
                    connection.used = true;
                    self.pending = Some(spans);
                    return Ok(());
                }
                Err(e) => {
                    let retry = connection.used;
                    self.connection = None;
                    if !retry {
                        return Err(format!("sending to {}:{}: {e}", self.endpoint.host, self.endpoint.port));
                    }
                }
            }
        }
    }
}

/// An answer's status and whether its connection can carry the next post.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    keep: bool,
}

/// Makes a connection to `endpoint`: each of its addresses in turn, each connect waiting at
/// most `timeout`, as every read and write on it will.
fn connect(endpoint: &Endpoint, timeout: Duration) -> Result<Connection, String> {
    let place = || format!("{}:{}", endpoint.host, endpoint.port);
    let addresses = (endpoint.host.as_str(), endpoint.port)
        .to_socket_addrs()
        .map_err(|e| format!("resolving {}: {e}", place()))?;
    let mut last = None;
    for address in addresses {
        match TcpStream::connect_timeout(&address, timeout) {
            Ok(stream) => {
                let set = stream
                    .set_nodelay(true)
                    .and_then(|()| stream.set_read_timeout(Some(timeout)))
                    .and_then(|()| stream.set_write_timeout(Some(timeout)));
                if let Err(e) = set {
                    last = Some(e);
                    continue;
                }
                return Ok(Connection { stream, read: Vec::new(), used: false, idle_since: Instant::now() });
            }
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => format!("connecting to {}: {e}", place()),
        None => format!("{} resolves to no address", place()),
    })
}

/// Whether a kept connection is still open: nothing to read and no end of stream, seen
/// without waiting (the collector may have closed it while it was idle).
fn still_open(stream: &TcpStream) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let mut byte = 0_u8;
        // SAFETY: a non-blocking peek of at most one byte into `byte`, which outlives the call.
        let read = unsafe {
            libc::recv(stream.as_raw_fd(), (&raw mut byte).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT)
        };
        read < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
    }
    #[cfg(not(unix))]
    {
        let _ = stream;
        true
    }
}

/// Writes all of `parts`, in as few system calls as the socket takes them.
fn write_all_vectored(stream: &mut TcpStream, mut parts: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !parts.is_empty() {
        match stream.write_vectored(parts) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => IoSlice::advance_slices(&mut parts, written),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads more of the connection's stream after what it holds: `Err` at its end.
fn read_more(connection: &mut Connection, timeout: Duration) -> Result<(), String> {
    let mut chunk = [0_u8; 8 << 10];
    loop {
        return match connection.stream.read(&mut chunk) {
            Ok(0) => Err("the collector closed the connection before it answered".to_owned()),
            Ok(read) => {
                connection.read.extend_from_slice(&chunk[..read]);
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                Err(format!("no answer within {} ms", timeout.as_millis()))
            }
            Err(e) => Err(format!("reading the answer: {e}")),
        };
    }
}

/// Reads a line (up to CRLF) of what the connection holds or will: returned without its
/// end, and consumed.
fn read_line(connection: &mut Connection, timeout: Duration) -> Result<String, String> {
    loop {
        if let Some(at) = connection.read.windows(2).position(|w| w == b"\r\n") {
            let line = String::from_utf8_lossy(&connection.read[..at]).into_owned();
            connection.read.drain(..at + 2);
            return Ok(line);
        }
        if connection.read.len() > MAX_HEAD {
            return Err("the answer has a line too long".to_owned());
        }
        read_more(connection, timeout)?;
    }
}

/// Reads and discards `length` bytes of the body; `Ok(false)` when that is more than
/// [`MAX_ANSWER`] (nothing read: the connection is to be closed).
fn discard(connection: &mut Connection, mut length: usize, timeout: Duration) -> Result<bool, String> {
    if length > MAX_ANSWER {
        return Ok(false);
    }
    while length > 0 {
        if connection.read.is_empty() {
            read_more(connection, timeout)?;
        }
        let taken = length.min(connection.read.len());
        connection.read.drain(..taken);
        length -= taken;
    }
    Ok(true)
}

/// Reads one answer off the connection (skipping interim 1xx ones) and discards its body.
fn read_answer(connection: &mut Connection, timeout: Duration) -> Result<Answer, String> {
    loop {
        let status_line = read_line(connection, timeout)?;
        let mut words = status_line.splitn(3, ' ');
        let version = words.next().unwrap_or("");
        let status: u16 = words
            .next()
            .filter(|code| code.len() == 3)
            .and_then(|code| code.parse().ok())
            .filter(|_| version == "HTTP/1.1" || version == "HTTP/1.0")
            .ok_or_else(|| {
                format!("not an HTTP/1.x answer: {:?}", status_line.chars().take(40).collect::<String>())
            })?;
        let (mut length, mut chunked, mut framed_by_close) = (None, false, false);
        let (mut close, mut keep_alive) = (false, false);
        let mut head = status_line.len();
        loop {
            let line = read_line(connection, timeout)?;
            if line.is_empty() {
                break;
            }
            head += line.len();
            if head > MAX_HEAD {
                return Err("the answer's head is too long".to_owned());
            }
            let Some((name, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>().map_err(|_| format!("a Content-Length of {value:?}"))?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                // The last coding says how the body ends: chunked, or at the close.
                let last = value.rsplit(',').next().unwrap_or("").trim();
                chunked = last.eq_ignore_ascii_case("chunked");
                framed_by_close = !chunked;
            } else if name.eq_ignore_ascii_case("connection") {
                for token in value.split(',').map(str::trim) {
                    close |= token.eq_ignore_ascii_case("close");
                    keep_alive |= token.eq_ignore_ascii_case("keep-alive");
                }
            }
        }
        if (100..200).contains(&status) {
            continue;
        }
        let mut keep = if version == "HTTP/1.1" { !close } else { keep_alive && !close };
        if status == 204 || status == 304 {
            // No body, whatever the headers say.
        } else if chunked {
            keep &= discard_chunked(connection, timeout)?;
        } else if framed_by_close || length.is_none() {
            // The body ends when the collector closes: read no more of it, and close.
            keep = false;
        } else if let Some(length) = length {
            keep &= discard(connection, length, timeout)?;
        }
        // Bytes after the answer are none we asked for: the connection is not reused.
        keep &= connection.read.is_empty();
        return Ok(Answer { status, keep });
    }
}

/// Reads and discards a chunked body and its trailers; `Ok(false)` when it runs past
/// [`MAX_ANSWER`] (the connection is to be closed).
fn discard_chunked(connection: &mut Connection, timeout: Duration) -> Result<bool, String> {
    let mut total = 0_usize;
    loop {
        let line = read_line(connection, timeout)?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| format!("a chunk size of {size:?}"))?;
        if size == 0 {
            // Trailer fields, up to the blank line.
            while !read_line(connection, timeout)?.is_empty() {}
            return Ok(true);
        }
        total = total.saturating_add(size);
        if total > MAX_ANSWER || !discard(connection, size, timeout)? {
            return Ok(false);
        }
        if !read_line(connection, timeout)?.is_empty() {
            return Err("a chunk longer than its size".to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::net::TcpListener;
    use std::sync::mpsc;

    #[test]
    fn endpoints_are_taken_apart_as_urls_name_them() {
        let parsed = |url: &str| Endpoint::parse(url).map(|e| (e.host, e.port, e.authority, e.target));
        let owned = |h: &str, p: u16, a: &str, t: &str| Ok((h.to_owned(), p, a.to_owned(), t.to_owned()));
        assert_eq!(
            parsed("http://collector:4318/v1/traces"),
            owned("collector", 4318, "collector:4318", "/v1/traces")
        );
        assert_eq!(parsed("http://collector"), owned("collector", 80, "collector", "/"));
        assert_eq!(parsed("http://10.0.0.1?tenant=a#part"), owned("10.0.0.1", 80, "10.0.0.1", "/?tenant=a"));
        assert_eq!(parsed("http://[::1]:4318/v1/traces"), owned("::1", 4318, "[::1]:4318", "/v1/traces"));
        assert_eq!(parsed("http://[::1]/x"), owned("::1", 80, "[::1]", "/x"));
        for bad in [
            "https://collector/v1/traces",
            "collector:4318",
            "http://user:secret@collector/",
            "http://collector:99999/",
            "http://collector:port/",
            "http:///v1/traces",
            "http://[::1/",
            "http://[::1]x/",
            "http://collector/a path",
            "http://collector/\r\nX-Injected: 1",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad:?} was taken");
        }
    }

    #[test]
    fn headers_that_could_end_the_head_early_are_not_sendable() {
        assert!(sendable_header("api-key", "a b\tc"));
        assert!(!sendable_header("api key", "v"));
        assert!(!sendable_header("", "v"));
        assert!(!sendable_header("x", "a\r\nX-Injected: 1"));
        assert!(!sendable_header("x", "nul\0"));
    }

    /// A request as the scripted collector read it: its head and its body.
    type Received = (String, Vec<u8>);

    /// A collector on a loopback port that reads each request and writes the next of
    /// `answers` (`None`: closes the connection instead; a connection is also closed after
    /// an answer that says `Connection: close`, is HTTP/1.0 or ends with a NUL, which is
    /// not sent), sending what it read and on
    /// which connection (numbered from 0) down the returned channel.
    fn scripted(answers: Vec<Option<&'static str>>) -> (Endpoint, mpsc::Receiver<(usize, Received)>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let endpoint =
            Endpoint::parse(&format!("http://{}/v1/traces", listener.local_addr().expect("bound")))
                .expect("an endpoint");
        let (sender, received) = mpsc::channel();
        std::thread::spawn(move || {
            let mut answers = answers.into_iter();
            for (number, stream) in listener.incoming().flatten().enumerate() {
                let mut reader = io::BufReader::new(stream.try_clone().expect("a second handle"));
                let mut writer = stream;
                loop {
                    let (mut head, mut line, mut length) = (String::new(), String::new(), 0);
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = value.trim().parse().expect("a length");
                        }
                        head.push_str(&line);
                        line.clear();
                    }
                    if head.is_empty() {
                        break;
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).expect("the body");
                    let _ = sender.send((number, (head, body)));
                    match answers.next().flatten() {
                        None => break,
                        Some(answer) => {
                            writer.write_all(answer.trim_end_matches('\0').as_bytes()).expect("the answer");
                            if answer.starts_with("HTTP/1.0")
                                || answer.contains("Connection: close")
                                || answer.ends_with('\0')
                            {
                                break;
                            }
                        }
                    }
                }
            }
        });
        (endpoint, received)
    }

    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 2\r\n\r\nok";

    fn client(endpoint: Endpoint) -> Collector {
        Collector::new(endpoint, &[("api-key".to_owned(), "k1".to_owned())], Duration::from_secs(5))
    }

    #[test]
    fn posts_go_on_one_kept_connection_each_answer_read_before_the_next() {
        // Arrange
        let (endpoint, received) = scripted(vec![Some(OK), Some(OK)]);
        let mut collector = client(endpoint);

        // Act
        collector.send(&[b"head", b"", b"spans"], 3).expect("sent");
        let refused = collector.send(&[b"again"], 1);
        let first = collector.settle();
        collector.send(&[b"second"], 2).expect("sent");
        let second = collector.settle();

        // Assert
        assert!(refused.is_err(), "a post before the last one's answer was read");
        assert_eq!(first, Some((3, Ok(()))));
        assert_eq!(second, Some((2, Ok(()))));
        assert_eq!(collector.settle(), None, "nothing left to read");
        let (number, (head, body)) = received.recv().expect("the first post");
        assert_eq!((number, body.as_slice()), (0, &b"headspans"[..]));
        assert!(head.starts_with("POST /v1/traces HTTP/1.1\r\n"), "{head}");
        for header in
            ["Content-Type: application/x-protobuf", "Content-Length: 9", "api-key: k1", "Host: 127.0.0.1:"]
        {
            assert!(head.contains(header), "{header} not in {head}");
        }
        assert_eq!(
            received.recv().expect("the second post"),
            (0, (head.replace("Length: 9", "Length: 6"), b"second".to_vec()))
        );
    }

    /// Two posts to a collector answering `answers`, each answer read and taken: the
    /// number of the connection each post went on.
    fn two_posts(answers: Vec<Option<&'static str>>) -> Vec<usize> {
        let (endpoint, received) = scripted(answers);
        let mut collector = client(endpoint);
        for spans in [1, 2] {
            collector.send(&[b"x"], spans).expect("sent");
            assert_eq!(collector.settle(), Some((spans, Ok(()))));
        }
        received.try_iter().map(|(number, _)| number).collect()
    }

    #[test]
    fn chunked_and_interim_answers_are_read_to_their_end() {
        let chunked = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                       5;note=x\r\nhello\r\n0\r\nTrailer: t\r\n\r\n";
        assert_eq!(two_posts(vec![Some(chunked), Some(OK)]), [0, 0], "the connection was kept");
    }

    #[test]
    fn an_http_1_0_collector_gets_a_connection_a_post() {
        // Python's http.server answers so, and closes.
        let answer = "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(two_posts(vec![Some(answer), Some(answer)]), [0, 1]);
    }

    #[test]
    fn a_refusing_or_vanishing_collector_is_a_failure_of_that_post() {
        let refused = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy";
        let (endpoint, _received) = scripted(vec![Some(refused), None, Some(OK)]);
        let mut collector = client(endpoint);
        collector.send(&[b"x"], 4).expect("sent");
        assert_eq!(collector.settle(), Some((4, Err("the collector answered 503".to_owned()))));
        collector.send(&[b"x"], 5).expect("sent");
        let (spans, vanished) = collector.settle().expect("a post");
        assert_eq!(spans, 5);
        assert!(vanished.is_err(), "a connection closed without an answer");
        collector.send(&[b"x"], 6).expect("sent on a new connection");
        assert_eq!(collector.settle(), Some((6, Ok(()))));
    }

    #[test]
    fn a_silent_collector_fails_the_post_after_the_timeout() {
        // A listener that never accepts: the connection completes in the kernel's backlog.
        let silent = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let endpoint =
            Endpoint::parse(&format!("http://{}/", silent.local_addr().expect("bound"))).expect("parsed");
        let mut collector = Collector::new(endpoint, &[], Duration::from_millis(200));
        collector.send(&[b"x"], 1).expect("sent into the backlog");
        let started = Instant::now();
        let (_, outcome) = collector.settle().expect("a post");
        assert_eq!(outcome, Err("no answer within 200 ms".to_owned()));
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }

    #[test]
    fn a_kept_connection_the_collector_closed_while_idle_is_replaced() {
        // Arrange: the first answer keeps the connection by its headers, then the
        // collector closes it (a trailing NUL: close after writing).
        let closing: &'static str = Box::leak(format!("{OK}\0").into_boxed_str());
        let (endpoint, received) = scripted(vec![Some(closing), Some(OK)]);
        let mut collector = client(endpoint);
        collector.send(&[b"1"], 1).expect("sent");
        assert_eq!(collector.settle(), Some((1, Ok(()))));

        // Act: a post after the idle check's interval.
        std::thread::sleep(IDLE_CHECK + Duration::from_millis(100));
        collector.send(&[b"2"], 2).expect("sent");

        // Assert: it saw the close and went on a new connection.
        assert_eq!(collector.settle(), Some((2, Ok(()))));
        let connections: Vec<usize> = received.try_iter().map(|(number, _)| number).collect();
        assert_eq!(connections, [0, 1]);
    }
}
