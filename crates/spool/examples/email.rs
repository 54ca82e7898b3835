//! An email sender with retries and an `on_dead` step.
//!
//! Shows a handler type with state that overrides the defaults: a retry
//! policy (exponential backoff, at most 4 attempts), a timeout, and
//! `on_dead`, the "emergency completion" that runs when a message failed
//! for good (here: mark the address undeliverable). A flaky fake SMTP
//! server fails now and then; one address bounces (a permanent error, dead
//! at once) and one never answers (retried until the attempts run out).
//!
//! Run: `cargo run -p spool --example email`

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};
use spool::{Client, Context, Handler, Job, RetryPolicy, Store, Task, TaskError, Worker};

#[derive(Serialize, Deserialize, Debug)]
struct Email {
    to: String,
    subject: String,
}

impl Job for Email {
    const KIND: &'static str = "email";
    const QUEUE: &'static str = "mail";
}

/// Why the fake SMTP server refused a message.
#[derive(Debug)]
enum SmtpError {
    Busy,
    NoSuchMailbox,
    Timeout,
}

impl std::fmt::Display for SmtpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SmtpError::Busy => "421 service busy, try again",
            SmtpError::NoSuchMailbox => "550 no such mailbox",
            SmtpError::Timeout => "connection timed out",
        })
    }
}

impl std::error::Error for SmtpError {}

/// A mail server that is busy a third of the time.
async fn smtp_send(email: &Email) -> Result<(), SmtpError> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    if email.to.starts_with("nobody@") {
        return Err(SmtpError::NoSuchMailbox);
    }
    if email.to.starts_with("void@") {
        return Err(SmtpError::Timeout);
    }
    if rand::thread_rng().gen_bool(0.33) {
        return Err(SmtpError::Busy);
    }
    Ok(())
}

/// The handler: sends, and remembers which addresses are undeliverable.
#[derive(Clone, Default)]
struct Mailer {
    undeliverable: Arc<Mutex<HashSet<String>>>,
}

impl Handler<Email> for Mailer {
    async fn run(&self, ctx: Context, email: Email) -> Result<(), TaskError> {
        match smtp_send(&email).await {
            Ok(()) => {
                println!(
                    "sent {:?} to {} (attempt {})",
                    email.subject,
                    email.to,
                    ctx.attempt()
                );
                Ok(())
            }
            // Retrying cannot help: dead at once.
            Err(e @ SmtpError::NoSuchMailbox) => Err(TaskError::permanent(e)),
            // Anything else is retried with the policy's backoff.
            Err(e) => {
                println!("{} failed on attempt {}: {e}", email.to, ctx.attempt());
                Err(e.into())
            }
        }
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(10))
    }

    fn retry(&self) -> RetryPolicy {
        RetryPolicy::default()
            .exponential(Duration::from_millis(100), Duration::from_secs(2))
            .max_attempts(4)
    }

    async fn on_dead(&self, task: Task, email: Email) {
        let reason = task.errors.last().map_or("?", |e| e.message.as_str());
        println!(
            "giving up on {} after {} attempts ({reason}): marked undeliverable",
            email.to, task.attempt
        );
        self.undeliverable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(email.to);
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = spool::embedded::open(dir.path())?;
    let client = Client::new(store.clone());
    let mailer = Mailer::default();
    let worker = Worker::builder(store.clone())
        .register(mailer.clone())
        .start()?;

    let to = [
        "ada@example.com",
        "alan@example.com",
        "grace@example.com",
        "nobody@example.com",
        "void@example.com",
    ];
    for address in to {
        client
            .enqueue(Email {
                to: address.into(),
                subject: "Welcome".into(),
            })
            .await?;
    }
    // Wait until every message was sent or given up on.
    loop {
        let stats = store.stats().await?;
        let live = stats
            .iter()
            .map(|q| q.counts.total() - q.counts.dead)
            .sum::<u64>();
        if live == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.shutdown(Duration::from_secs(5)).await;
    let undeliverable = mailer
        .undeliverable
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    println!("undeliverable: {undeliverable:?}");
    Ok(())
}
