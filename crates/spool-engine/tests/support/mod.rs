//! What the kill -9 loops share: running this test binary again as a
//! child that works on a data directory, killing it at a random moment,
//! and reading the ledger it printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::Rng;

/// Runs test `child_test` of this binary as a child process with `env`
/// set to `dir`, SIGKILLs it after 150–600 ms, and answers the lines it
/// printed in full (one cut by the kill has no newline: it was never
/// complete, and is left out).
pub(crate) fn run_child_until_killed(child_test: &str, env: &str, dir: &str) -> Vec<String> {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", child_test, "--nocapture", "--test-threads=1"])
        .env(env, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 {
            if line.ends_with('\n') {
                lines.push(line.trim_end().to_string());
            }
            line.clear();
        }
        lines
    });
    let wait = rand::thread_rng().gen_range(150..600);
    std::thread::sleep(Duration::from_millis(wait));
    child.kill().unwrap();
    child.wait().unwrap();
    reader.join().unwrap()
}
