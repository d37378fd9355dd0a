//! `bench-otlp-sink`: the OTLP/HTTP collector of `scripts/bench`'s tracing rounds.
//!
//! `bench-otlp-sink --bind 127.0.0.1:PORT` answers every request `200` with an empty
//! `application/x-protobuf` body after reading it, decoding nothing, on HTTP/1.1 keep-alive
//! connections (a thread each; the exporter keeps one open). It stands on the machine the
//! server shares with its database and load generator, so it must cost next to nothing:
//! what the tracing rounds measure is the server's own cost of making and exporting spans.
//! (The Python sink it replaces took 0.08 of the two cores at 15 000 requests per second,
//! as much as the 5 % the rounds are there to resolve.) The real collector of the CI test
//! is `scripts/otlp/receiver.py`, which decodes and checks every span.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use wpds_bench::{Args, fail};

/// The answer to every request.
const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";

/// The largest body read (the exporter's batches are far smaller); a longer one closes
/// the connection.
const MAX_BODY: u64 = 64 << 20;

fn main() {
    let args = Args::parse();
    let bind = args.text("bind");
    let listener = TcpListener::bind(&bind).unwrap_or_else(|e| fail(&format!("cannot bind {bind}: {e}")));
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || serve(stream));
    }
}

/// Reads requests off one connection until it closes or sends something unreadable.
fn serve(stream: TcpStream) {
    let Ok(mut writer) = stream.try_clone() else { return };
    // Room for a whole batch, so that a post's body is read in a call or two.
    let mut reader = BufReader::with_capacity(1 << 20, stream);
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        // The request line, then headers up to the blank line.
        let mut length = 0_u64;
        let mut first = true;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let header = line.trim_end();
            if header.is_empty() {
                if first {
                    continue;
                }
                break;
            }
            first = false;
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                let Ok(value) = value.trim().parse() else { return };
                length = value;
            }
        }
        if length > MAX_BODY {
            return;
        }
        body.resize(usize::try_from(length).unwrap_or(usize::MAX), 0);
        if reader.read_exact(&mut body).is_err() || writer.write_all(OK).is_err() {
            return;
        }
    }
}
