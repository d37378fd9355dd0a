//! `wpds` run as a real process, as an operator runs it: a command ([`wpds`]) or a server
//! ([`Served`]) on a free port with its log in a file.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `wpds ARGS` with `settings` in its environment (and no `WPDS_LOG` of the test's).
pub fn wpds(args: &[&str], settings: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wpds"))
        .args(args)
        .env_remove("WPDS_LOG")
        .envs(settings.iter().copied())
        .output()
        .expect("wpds runs")
}

/// Bytes of an output, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A `wpds serve` process on a free port, its log in a file; killed on drop.
pub struct Served {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    log: std::path::PathBuf,
}

impl Served {
    /// Starts `wpds serve` with `settings` on a free port.
    pub fn start(settings: &[(&str, &str)]) -> Served {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = std::env::temp_dir().join(format!("wpds-served-{}.log", uuid::Uuid::new_v4().simple()));
        let child = Command::new(env!("CARGO_BIN_EXE_wpds"))
            .arg("serve")
            .env("WPDS_BIND", format!("127.0.0.1:{port}"))
            .env("WPDS_LOG", "info")
            .envs(settings.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("wpds serve starts");
        Served { child, base: format!("http://127.0.0.1:{port}"), log }
    }

    /// `/readyz`'s status, 0 while nothing answers.
    pub fn readiness(&self) -> u16 {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        agent.get(format!("{}/readyz", self.base)).call().map_or(0, |r| r.status().as_u16())
    }

    /// Waits up to `within` for `/readyz` to answer `status`.
    pub fn wait_for(&self, status: u16, within: Duration) {
        let deadline = Instant::now() + within;
        while self.readiness() != status {
            assert!(
                Instant::now() < deadline,
                "/readyz never answered {status}; the log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What it logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits up to `within` for the process to exit, and returns its exit code.
    pub fn exit_code(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the server did not exit; the log:\n{}", self.log_text());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}
