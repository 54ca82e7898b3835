//! Black-box tests of the `spool` binary: its help, a small benchmark run,
//! `spool check` on healthy, missing, torn and corrupted directories, and
//! `spool serve` starting and stopping.

use std::fs::{self, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn spool(args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_spool"))
        .args(args)
        .output();
    match output {
        Ok(output) => output,
        Err(e) => panic!("cannot run spool {args:?}: {e}"),
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs the bench into `dir`, small and quick; `extra` adds options.
fn bench_into(dir: &Path, extra: &[&str]) -> TestResult {
    let dir = dir.to_str().ok_or("non-UTF-8 temp path")?;
    let mut args = vec!["bench", "--data", dir, "--pickup-samples", "50"];
    args.extend_from_slice(extra);
    let out = spool(&args);
    assert!(out.status.success(), "bench failed: {}", stderr(&out));
    Ok(())
}

/// The log segments of a data directory, oldest first.
fn segments(dir: &Path) -> Result<Vec<PathBuf>, std::io::Error> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir.join("wal"))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|p| p.extension().is_some_and(|e| e == "wal"));
    files.sort();
    Ok(files)
}

#[test]
fn every_command_explains_itself() {
    let top = spool(&["--help"]);
    assert!(top.status.success());
    for command in ["serve", "check", "bench"] {
        assert!(
            stdout(&top).contains(command),
            "{command} missing from --help"
        );
    }
    let serve = spool(&["serve", "--help"]);
    assert!(serve.status.success());
    for option in [
        "--data",
        "--listen",
        "--token",
        "--insecure-no-auth",
        "SIGTERM",
    ] {
        assert!(
            stdout(&serve).contains(option),
            "{option} missing from serve help"
        );
    }
    let check = spool(&["check", "--help"]);
    assert!(check.status.success());
    assert!(stdout(&check).contains("--data"));
    assert!(stdout(&check).contains("Exit status"));
    let bench = spool(&["help", "bench"]);
    assert!(bench.status.success());
    for option in [
        "--workload",
        "--tasks",
        "--payload-bytes",
        "--producers",
        "--batch",
        "--concurrency",
        "--consumers",
        "--claim-batch",
        "--max-seconds",
        "--json",
        "enqueue-batch",
        "enqueue-single",
        "cycle",
        "pickup",
    ] {
        assert!(
            stdout(&bench).contains(option),
            "{option} missing from bench help"
        );
    }
    // Test-only knobs stay out of the user's way.
    assert!(!stdout(&bench).contains("--segment-size"));
}

#[test]
fn unknown_options_are_refused() {
    let out = spool(&["bench", "--workload", "nope"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nope"));
}

#[test]
fn a_small_benchmark_writes_valid_json() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let json = tmp.path().join("bench.json");
    let out = spool(&[
        "bench",
        "--workload",
        "all",
        "--tasks",
        "20000",
        "--pickup-samples",
        "100",
        "--json",
        json.to_str().ok_or("non-UTF-8 temp path")?,
    ]);
    assert!(out.status.success(), "bench failed: {}", stderr(&out));
    let table = stdout(&out);
    let report: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json)?)?;
    assert_eq!(report["parameters"]["tasks"], 20000);
    assert_eq!(report["parameters"]["payload_bytes"], 100);
    assert_eq!(
        report["machine"]["nproc"].as_u64().map(|n| n > 0),
        Some(true)
    );
    assert!(report["machine"]["kernel"].is_string());
    let results = report["results"].as_array().ok_or("no results")?;
    let names: Vec<&str> = results
        .iter()
        .filter_map(|r| r["workload"].as_str())
        .collect();
    assert_eq!(
        names,
        ["enqueue-batch", "enqueue-single", "cycle", "pickup"]
    );
    for r in results {
        let name = r["workload"].as_str().unwrap_or_default();
        assert!(table.contains(name), "{name} missing from the table");
        let expected = if name == "pickup" { 100 } else { 20000 };
        assert_eq!(r["completed"], expected, "{name}");
        assert_eq!(r["stopped_early"], false, "{name}");
        assert!(
            r["tasks_per_sec"].as_f64().is_some_and(|t| t > 0.0),
            "{name}"
        );
        assert!(
            r["cpu"]["process_cores"].as_f64().is_some_and(|c| c > 0.0),
            "{name}"
        );
        for l in r["latencies"].as_array().ok_or("no latencies")? {
            let (p50, p999) = (l["p50_us"].as_f64(), l["p999_us"].as_f64());
            assert!(l["count"].as_u64().is_some_and(|c| c > 0), "{name}");
            assert!(p50.zip(p999).is_some_and(|(a, b)| a <= b), "{name}: {l}");
        }
    }
    Ok(())
}

#[test]
fn a_time_limit_stops_a_workload_and_says_so() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let json = tmp.path().join("bench.json");
    let out = spool(&[
        "bench",
        "--workload",
        "enqueue-single",
        "--tasks",
        "100000000",
        "--max-seconds",
        "1",
        "--json",
        json.to_str().ok_or("non-UTF-8 temp path")?,
    ]);
    assert!(out.status.success(), "bench failed: {}", stderr(&out));
    assert!(stdout(&out).contains("stopped at --max-seconds 1"));
    let report: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json)?)?;
    let result = &report["results"][0];
    assert_eq!(result["stopped_early"], true);
    assert!(result["seconds"].as_f64().is_some_and(|s| s < 5.0));
    Ok(())
}

#[test]
fn check_passes_a_healthy_directory() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let data = tmp.path().join("data");
    bench_into(&data, &["--workload", "cycle", "--tasks", "5000"])?;
    let out = spool(&["check", "--data", data.to_str().ok_or("non-UTF-8")?]);
    assert!(out.status.success(), "check failed: {}", stderr(&out));
    let report = stdout(&out);
    assert!(report.contains("verdict: healthy"), "{report}");
    assert!(report.contains("torn tail    none"), "{report}");
    // The bench drains its queues: the queue is counted, and empty.
    assert!(
        report.contains("queues       1, with 0 live tasks"),
        "{report}"
    );
    assert!(report.contains(".cycle "), "{report}");
    Ok(())
}

#[test]
fn check_refuses_a_missing_directory() {
    let out = spool(&["check", "--data", "/nonexistent/spool-data"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("/nonexistent/spool-data"), "{err}");
    assert!(err.contains("No such file or directory"), "{err}");
}

#[test]
fn check_refuses_a_directory_that_is_not_spools() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let out = spool(&["check", "--data", tmp.path().to_str().ok_or("non-UTF-8")?]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not a Spool data directory"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

#[test]
fn check_warns_about_a_torn_tail_but_passes() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let data = tmp.path().join("data");
    bench_into(&data, &["--workload", "enqueue-batch", "--tasks", "3000"])?;
    // Garbage just after the newest segment's data looks like a batch whose
    // write a crash cut short. The last record may end in zero bytes, so
    // the garbage goes a little further than the last non-zero byte.
    let newest = segments(&data)?.pop().ok_or("no segment")?;
    let mut file = OpenOptions::new().read(true).write(true).open(&newest)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let end = bytes.iter().rposition(|&b| b != 0).ok_or("empty segment")? + 256;
    file.seek(SeekFrom::Start(end as u64))?;
    file.write_all(&[0xA5; 64])?;
    drop(file);

    let out = spool(&["check", "--data", data.to_str().ok_or("non-UTF-8")?]);
    assert!(out.status.success(), "check failed: {}", stderr(&out));
    let report = stdout(&out);
    assert!(report.contains("healthy, with a warning"), "{report}");
    assert!(report.contains("torn tail at byte"), "{report}");
    assert!(stderr(&out).contains("warning:"), "{}", stderr(&out));
    Ok(())
}

#[test]
fn check_names_the_file_and_offset_of_a_corrupted_old_segment() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let data = tmp.path().join("data");
    // 1 MiB segments: 20,000 tasks of 100 bytes fill several.
    bench_into(
        &data,
        &[
            "--workload",
            "enqueue-batch",
            "--tasks",
            "20000",
            "--segment-size",
            "1048576",
        ],
    )?;
    let all = segments(&data)?;
    assert!(all.len() >= 3, "expected several segments, got {all:?}");
    let first = &all[0];
    let middle = fs::metadata(first)?.len() / 2;
    let mut file = OpenOptions::new().read(true).write(true).open(first)?;
    let mut byte = [0u8];
    file.seek(SeekFrom::Start(middle))?;
    file.read_exact(&mut byte)?;
    file.seek(SeekFrom::Start(middle))?;
    file.write_all(&[byte[0] ^ 0xFF])?;
    drop(file);

    let out = spool(&["check", "--data", data.to_str().ok_or("non-UTF-8")?]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    let name = first
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("bad name")?;
    assert!(err.contains(name), "the file is not named: {err}");
    assert!(err.contains("at byte"), "no offset: {err}");
    assert!(stdout(&out).contains("DAMAGED"), "{}", stdout(&out));
    Ok(())
}

#[test]
fn serve_answers_and_stops_cleanly_on_sigterm() -> TestResult {
    use std::io::BufRead;
    use std::net::TcpStream;
    use std::process::Stdio;

    let tmp = tempfile::tempdir()?;
    let data = tmp.path().join("data");
    let mut server = Command::new(env!("CARGO_BIN_EXE_spool"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(&data)
        .stderr(Stdio::piped())
        .spawn()?;
    // Port 0: the server logs the address it got.
    let mut lines = std::io::BufReader::new(server.stderr.take().ok_or("no stderr")?).lines();
    let addr = loop {
        let line = lines.next().ok_or("server exited before listening")??;
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest
                .split_whitespace()
                .next()
                .ok_or("no address")?
                .to_string();
        }
    };
    let mut conn = TcpStream::connect(&addr)?;
    conn.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")?;
    let mut answer = String::new();
    conn.read_to_string(&mut answer)?;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()?;
    assert!(killed.success());
    assert!(server.wait()?.success());
    let check = spool(&["check", "--data", data.to_str().ok_or("non-UTF-8")?]);
    assert!(check.status.success(), "{}", stderr(&check));
    Ok(())
}

#[test]
fn serve_refuses_an_open_address_without_a_token() {
    let out = spool(&["serve", "--listen", "0.0.0.0:0", "--data", "/nonexistent/x"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("without a token"), "{}", stderr(&out));
}
