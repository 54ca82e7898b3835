//! A Spool server for trying the admin page and for its browser tests
//! (`e2e/`): the real engine in `--data DIR` behind `spool_server::run`.
//!
//! ```text
//! cargo run -p spool-server --example admin_demo -- \
//!     --data /tmp/spool-demo [--listen 127.0.0.1:7700] [--token T] [--demo-schedules]
//! ```
//!
//! Prints `listening on http://ADDR` once it accepts connections (with
//! `--listen 127.0.0.1:0` the port is chosen by the system), and stops on
//! Ctrl-C or SIGTERM. `--demo-schedules` puts two schedules straight into
//! the store and fires their ticks, so the schedules page has something to
//! show.

use std::error::Error;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spool_core::{Cadence, Kind, Payload, QueueName, ScheduleSpec, Store};
use spool_engine::{Engine, EngineConfig};
use spool_server::{AppState, ServerConfig};
use tokio::net::TcpListener;

struct Args {
    listen: String,
    data: PathBuf,
    token: Option<String>,
    demo_schedules: bool,
}

const USAGE: &str =
    "usage: admin_demo --data DIR [--listen ADDR] [--token TOKEN] [--demo-schedules]";

fn args() -> Result<Args, String> {
    let mut listen = "127.0.0.1:7700".to_string();
    let mut data = None;
    let mut token = None;
    let mut demo_schedules = false;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--listen" => listen = value("--listen")?,
            "--data" => data = Some(PathBuf::from(value("--data")?)),
            "--token" => token = Some(value("--token")?),
            "--demo-schedules" => demo_schedules = true,
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let data = data.ok_or(format!("--data is required\n{USAGE}"))?;
    Ok(Args {
        listen,
        data,
        token,
        demo_schedules,
    })
}

async fn put_demo_schedules(store: &dyn Store) -> Result<(), Box<dyn Error>> {
    let specs = [
        ScheduleSpec {
            name: Kind::new("nightly-report")?,
            queue: QueueName::new("reports")?,
            kind: Some(Kind::new("build-report")?),
            payload: Payload::json(&br#"{"report":"daily"}"#[..]),
            cadence: Cadence::Cron {
                expr: "0 0 2 * * *".into(),
                tz: Some("Europe/Paris".into()),
            },
            deadline: Some(Duration::from_secs(1800)),
        },
        ScheduleSpec {
            name: Kind::new("heartbeat")?,
            queue: QueueName::new("health")?,
            kind: None,
            payload: Payload::default(),
            cadence: Cadence::Every(Duration::from_secs(10)),
            deadline: None,
        },
    ];
    for spec in specs {
        store.put_schedule(spec).await?;
    }
    Ok(())
}

/// Fires the schedules' due ticks every quarter second: a stand-in for the
/// scheduler, so the demo's schedules have a last fire to show.
fn fire_schedules(store: Arc<dyn Store>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            let (Ok(now), Ok(schedules)) = (store.now().await, store.list_schedules().await) else {
                continue;
            };
            for s in schedules {
                if let Some(due) = s.due(now) {
                    if let Err(e) = store.fire_schedule(&s.spec.name, due).await {
                        tracing::warn!(error = %e, schedule = %s.spec.name, "firing failed");
                    }
                }
            }
        }
    });
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = match args() {
        Ok(a) => a,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let store: Arc<dyn Store> = Arc::new(Engine::open(EngineConfig::new(&args.data))?);
    if args.demo_schedules {
        put_demo_schedules(store.as_ref()).await?;
        fire_schedules(store.clone());
    }
    let listener = TcpListener::bind(&args.listen).await?;
    // The browser tests read this line to learn the port.
    println!("listening on http://{}", listener.local_addr()?);
    let config = ServerConfig {
        token: args.token,
        ..ServerConfig::default()
    };
    spool_server::run(listener, AppState::new(store), config, shutdown_signal()).await?;
    Ok(())
}
