//! A TCP proxy the test can cut: between a server process and PostgreSQL, it stands in
//! for the network or the database going away and coming back.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A loopback proxy to one upstream address; stops its threads when dropped.
pub struct Proxy {
    /// The port it listens on.
    pub port: u16,
    shared: Arc<Shared>,
}

struct Shared {
    open: AtomicBool,
    stopping: AtomicBool,
    /// Both ends of every proxied connection, to cut them.
    streams: Mutex<Vec<TcpStream>>,
}

impl Shared {
    fn close_all(&self) {
        for stream in self.streams.lock().expect("the stream list").drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

impl Proxy {
    /// Starts proxying `127.0.0.1:PORT` to `upstream`.
    pub fn to(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a random port");
        let port = listener.local_addr().expect("a bound address").port();
        let shared = Arc::new(Shared {
            open: AtomicBool::new(true),
            stopping: AtomicBool::new(false),
            streams: Mutex::new(Vec::new()),
        });
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                if !accepting.open.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both); // refused: closed at once
                    continue;
                }
                let _ = relay(client, upstream, &accepting);
            }
        });
        Proxy { port, shared }
    }

    /// Drops every proxied connection and closes each new one at once.
    pub fn cut(&self) {
        self.shared.open.store(false, Ordering::SeqCst);
        self.shared.close_all();
    }

    /// Proxies new connections again.
    pub fn restore(&self) {
        self.shared.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.open.store(false, Ordering::SeqCst);
        self.shared.close_all();
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wakes the accept loop
    }
}

/// Copies bytes both ways between `client` and a new connection to `upstream`, each
/// direction in its own thread.
fn relay(client: TcpStream, upstream: SocketAddr, shared: &Shared) -> io::Result<()> {
    let server = TcpStream::connect(upstream)?;
    {
        let mut streams = shared.streams.lock().expect("the stream list");
        streams.push(client.try_clone()?);
        streams.push(server.try_clone()?);
    }
    if !shared.open.load(Ordering::SeqCst) {
        // Cut while this connection was being set up: `cut` may have missed it.
        let _ = client.shutdown(Shutdown::Both);
        let _ = server.shutdown(Shutdown::Both);
        return Ok(());
    }
    for (mut from, mut to) in [(client.try_clone()?, server.try_clone()?), (server, client)] {
        std::thread::spawn(move || {
            let _ = io::copy(&mut from, &mut to);
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        });
    }
    Ok(())
}
