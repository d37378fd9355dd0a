//! `bench-otlp-sink`: the OTLP/HTTP collector of `scripts/bench`'s tracing rounds.
//!
//! `bench-otlp-sink --bind 127.0.0.1:PORT` answers every request `200` with an empty
//! `application/x-protobuf` body after reading it, decoding nothing, on HTTP/1.1 keep-alive
//! connections (a thread each; the exporter keeps one open). It stands on the machine the
//! server shares with its database and load generator, so it must cost next to nothing:
//! what the tracing rounds measure is the server's own cost of making and exporting spans.
//! (The Python sink it replaces took 0.08 of the two cores at 15 000 requests per second,
//! as much as the 5 % the rounds are there to resolve.) So it copies no body: a request's
//! head is read into a small buffer, and the rest of its body is discarded in the kernel
//! (Linux's `recv` with `MSG_TRUNC` on a TCP socket drops the bytes without copying them
//! out). Copying the bodies out was half of its CPU (`perf record` on it, 2026-11-26:
//! `_copy_to_iter` 35 %, `memmove` 16 %). For the same reason a head is read [`HEAD_READ`]
//! bytes at a time (what comes with it of the body is copied), and the rest of a body is
//! dropped in one call rather than in pieces of the head's room.
//!
//! Its threads run as Linux's `SCHED_BATCH`: a post that
//! arrives then waits for a running thread to reach a switch of its own instead of
//! preempting it. A collector on another machine would not interrupt the server's threads
//! at all; one on this machine, woken ~200 times a second, should not take more from them
//! than its CPU. The real collector of the CI test is `scripts/otlp/receiver.py`, which
//! decodes and checks every span.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use wpds_bench::{Args, fail};

/// The answer to every request.
const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";

/// The room for a request's head (and what arrives with it); a longer head closes the
/// connection.
const HEAD_ROOM: usize = 16 << 10;

/// The most read into the head's room at once: an exporter's head is a few hundred bytes,
/// and whatever of the body comes with it is copied out.
const HEAD_READ: usize = 1 << 10;

/// The most of a body dropped by one call (a post of the exporter's is ~100 KB).
const DISCARD_AT_ONCE: usize = 1 << 20;

/// The largest body taken (the exporter's batches are far smaller); a longer one closes
/// the connection.
const MAX_BODY: usize = 64 << 20;

fn main() {
    let args = Args::parse();
    let bind = args.text("bind");
    let listener = TcpListener::bind(&bind).unwrap_or_else(|e| fail(&format!("cannot bind {bind}: {e}")));
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || {
            run_as_batch_work();
            serve(stream)
        });
    }
}

/// Marks the calling thread as batch work (`SCHED_BATCH`: its wake-ups preempt no running
/// thread); where that is refused it stays as it was, and says so.
fn run_as_batch_work() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler reads the parameter it is given; 0 names this thread.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) } != 0 {
            eprintln!("bench-otlp-sink: SCHED_BATCH refused: {}", std::io::Error::last_os_error());
        }
    }
}

/// Reads requests off one connection until it closes or sends something unreadable.
fn serve(mut stream: TcpStream) {
    let mut buffer = vec![0_u8; HEAD_ROOM];
    // Where a body is dropped: nothing is written to it on Linux (see `discard`), so its
    // zeroed pages, fresh from the allocator, are never touched.
    let mut scratch = vec![0_u8; DISCARD_AT_ONCE];
    // What the buffer holds of the next request.
    let mut held = 0;
    loop {
        // The head, up to its blank line (empty lines before a request line are skipped,
        // as RFC 9112 allows).
        let head_end = loop {
            let start = buffer[..held].iter().position(|b| !matches!(b, b'\r' | b'\n')).unwrap_or(held);
            if start > 0 {
                buffer.copy_within(start..held, 0);
                held -= start;
            }
            if let Some(at) = buffer[..held].windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            if held == buffer.len() {
                return;
            }
            let room = (held + HEAD_READ).min(buffer.len());
            match stream.read(&mut buffer[held..room]) {
                Ok(0) | Err(_) => return,
                Ok(read) => held += read,
            }
        };
        let Some(length) = content_length(&buffer[..head_end]) else { return };
        if length > MAX_BODY {
            return;
        }
        // The body's first bytes came with the head; the rest is dropped unread.
        let with_head = (held - head_end).min(length);
        buffer.copy_within(head_end + with_head..held, 0);
        held -= head_end + with_head;
        if !discard(&stream, length - with_head, &mut scratch) || stream.write_all(OK).is_err() {
            return;
        }
    }
}

/// The `Content-Length` of a request head (0 when it has none); `None` for one that is not
/// a number.
fn content_length(head: &[u8]) -> Option<usize> {
    let head = std::str::from_utf8(head).ok()?;
    for line in head.split("\r\n").skip(1) {
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            return value.trim().parse().ok();
        }
    }
    Some(0)
}

/// Drops the next `length` bytes of `stream` without copying them out of the kernel
/// (`MSG_TRUNC`); `scratch` is only the address the call names (a TCP socket writes
/// nothing to it; on a kernel that did, it would only ever be overwritten). False when the
/// connection ended first.
fn discard(stream: &TcpStream, mut length: usize, scratch: &mut [u8]) -> bool {
    use std::os::fd::AsRawFd;
    while length > 0 {
        let asked = length.min(scratch.len());
        // SAFETY: `scratch` is a live, writable buffer of at least `asked` bytes; with
        // MSG_TRUNC a TCP socket writes nothing to it, and without (another kernel) it
        // writes at most `asked` bytes, which is still within it.
        let got =
            unsafe { libc::recv(stream.as_raw_fd(), scratch.as_mut_ptr().cast(), asked, libc::MSG_TRUNC) };
        let Ok(got) = usize::try_from(got) else {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        };
        if got == 0 {
            return false;
        }
        length -= got.min(length);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    /// A sink on a loopback port, serving one connection at a time.
    fn sink() -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let address = listener.local_addr().expect("bound");
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                serve(stream);
            }
        });
        address
    }

    fn post(body_length: usize) -> Vec<u8> {
        let mut request =
            format!("POST /v1/traces HTTP/1.1\r\nHost: sink\r\ncontent-length: {body_length}\r\n\r\n")
                .into_bytes();
        request.extend((0..body_length).map(|i| (i % 251) as u8));
        request
    }

    #[test]
    fn every_post_is_answered_whatever_its_size_and_however_it_arrives() {
        // Arrange: a body far larger than the head's room, then two small posts sent in
        // one write (pipelined), then one cut into pieces.
        let mut stream = TcpStream::connect(sink()).expect("connected");
        stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).expect("a timeout");
        let mut reader = std::io::BufReader::new(stream.try_clone().expect("a second handle"));
        let mut answers = 0;
        let mut read_answer = || {
            let mut line = String::new();
            reader.read_line(&mut line).expect("an answer");
            assert_eq!(line, "HTTP/1.1 200 OK\r\n");
            while line != "\r\n" {
                line.clear();
                reader.read_line(&mut line).expect("a header");
            }
            answers += 1;
        };

        // Act and assert
        stream.write_all(&post(3 * HEAD_ROOM + 17)).expect("sent");
        read_answer();
        stream.write_all(&[post(10), post(0)].concat()).expect("sent");
        read_answer();
        read_answer();
        let cut = post(HEAD_ROOM / 2);
        for piece in cut.chunks(1000) {
            stream.write_all(piece).expect("sent");
            stream.flush().expect("flushed");
        }
        read_answer();
        assert_eq!(answers, 4);
    }

    #[test]
    fn a_content_length_is_read_whatever_its_case() {
        assert_eq!(content_length(b"POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n"), Some(12));
        assert_eq!(content_length(b"POST / HTTP/1.1\r\nhost: x\r\n\r\n"), Some(0));
        assert_eq!(content_length(b"POST / HTTP/1.1\r\ncontent-length: x\r\n\r\n"), None);
    }
}
