//! A TCP proxy the test can cut or silence: between a server process and PostgreSQL, it
//! stands in for the network or the database going away and coming back. A cut closes
//! every connection (the peer sees a reset at once); a black hole keeps every connection
//! open but forwards nothing (the peer waits, and no error ever comes), until restored.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
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
    /// Black-holed: bytes are held, not forwarded.
    silent: AtomicBool,
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
            silent: AtomicBool::new(false),
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

    /// Stops forwarding without closing anything: every byte sent either way is held
    /// back, as a network that drops packets would, and new connections are accepted but
    /// hear nothing.
    pub fn black_hole(&self) {
        self.shared.silent.store(true, Ordering::SeqCst);
    }

    /// Proxies again: new connections, and (after a black hole) the bytes held back.
    pub fn restore(&self) {
        self.shared.open.store(true, Ordering::SeqCst);
        self.shared.silent.store(false, Ordering::SeqCst);
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
fn relay(client: TcpStream, upstream: SocketAddr, shared: &Arc<Shared>) -> io::Result<()> {
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
        let shared = Arc::clone(shared);
        std::thread::spawn(move || {
            let _ = forward(&mut from, &mut to, &shared);
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        });
    }
    Ok(())
}

/// Copies `from` to `to` until either closes, holding each chunk back while the proxy is
/// black-holed.
fn forward(from: &mut TcpStream, to: &mut TcpStream, shared: &Shared) -> io::Result<()> {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let n = from.read(&mut buffer)?;
        if n == 0 {
            return Ok(());
        }
        while shared.silent.load(Ordering::SeqCst) {
            if shared.stopping.load(Ordering::SeqCst) {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        to.write_all(&buffer[..n])?;
    }
}

/// `postgres://USER@HOST:PORT/DB` → (`HOST:PORT` resolved, the URL with `127.0.0.1:port`).
pub fn through_proxy(url: &str, proxy_port: u16) -> (SocketAddr, String) {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (credentials, rest) = rest.rsplit_once('@').map_or(("", rest), |(c, r)| (c, r));
    let (host_port, database) = rest.split_once('/').expect("a database name");
    let host_port = if host_port.contains(':') { host_port.to_owned() } else { format!("{host_port}:5432") };
    let upstream = host_port.to_socket_addrs().expect("a resolvable host").next().expect("an address");
    let at = if credentials.is_empty() { String::new() } else { format!("{credentials}@") };
    (upstream, format!("{scheme}://{at}127.0.0.1:{proxy_port}/{database}"))
}
