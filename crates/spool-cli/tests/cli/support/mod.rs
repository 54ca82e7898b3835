//! A real `spool serve` child process for the black-box server tests.
//!
//! [`TestServer::start`] runs the binary Cargo built on port 0 and reads the
//! address it logs; dropping the server SIGKILLs it, so a failing test never
//! leaves one behind.

pub(crate) mod pg;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub(crate) type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

#[derive(Debug)]
pub(crate) struct TestServer {
    child: Child,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub base: String,
}

impl TestServer {
    /// Starts `spool serve` on `data` (created if missing) and waits until
    /// it listens.
    pub(crate) fn start(data: &Path) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let data = data.to_str().ok_or("data path is not UTF-8")?;
        Self::start_with(&["--data", data])
    }

    /// Starts `spool serve` with `store_args` choosing its store (e.g.
    /// `--postgres URL --pg-schema S`) and waits until it listens. When it
    /// exits first, the error carries what it logged.
    pub(crate) fn start_with(
        store_args: &[&str],
    ) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Self::spawn(store_args, false).map(|(server, _)| server)
    }

    /// As [`TestServer::start_with`], and waits for the RESP listener too:
    /// the second value is its `127.0.0.1:PORT`.
    pub(crate) fn start_resp(
        store_args: &[&str],
    ) -> Result<(Self, String), Box<dyn std::error::Error + Send + Sync>> {
        let (server, resp) = Self::spawn(store_args, true)?;
        Ok((server, resp.ok_or("no RESP address")?))
    }

    fn spawn(
        store_args: &[&str],
        resp: bool,
    ) -> Result<(Self, Option<String>), Box<dyn std::error::Error + Send + Sync>> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_spool"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(store_args)
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let mut log = Vec::new();
        // Port 0: the server logs the address the OS gave it.
        let mut wait_for = |marker: &str| loop {
            let Some(line) = lines.next() else {
                let status = child.wait()?;
                return Err(format!(
                    "spool serve exited before listening: {status}; it logged:\n{}",
                    log.join("\n")
                )
                .into());
            };
            let line = line?;
            if let Some(rest) = line.split(marker).nth(1) {
                let addr = rest.split_whitespace().next().ok_or("no address")?;
                return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(addr.to_string());
            }
            log.push(line);
        };
        let addr = wait_for("listening on http://")?;
        let resp = if resp {
            Some(wait_for("RESP listening on ")?)
        } else {
            None
        };
        // Keep draining the log: a full pipe would block the server.
        std::thread::spawn(move || lines.for_each(drop));
        Ok((
            TestServer {
                child,
                base: format!("http://{addr}"),
            },
            resp,
        ))
    }

    /// The server's process id, for readings in /proc.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILLs the server and reaps it.
    pub(crate) fn kill(&mut self) {
        // Already gone is fine: the point is that it is not running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}
