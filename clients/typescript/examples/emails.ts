// An example app: a producer and a worker for sending emails, with a daily digest.
//
// Start a server (`spool serve`), build (`npm run build:test`), then in one shell
// `node build/examples/emails.js worker` and in another `node build/examples/emails.js send 20`.
// Set SPOOL_URL (and SPOOL_TOKEN) to use another server.

import { setTimeout as sleep } from "node:timers/promises";

import { Client, Discard, Retry, type TaskContext, Worker } from "../src/index.js";

const client = new Client({
  url: process.env.SPOOL_URL ?? "http://127.0.0.1:7700",
  token: process.env.SPOOL_TOKEN,
});

// Handlers must be idempotent: a task can run again after a crash or a lost ack.
async function sendEmail(task: TaskContext): Promise<void> {
  const { to } = task.payload as { to?: string };
  if (!to?.includes("@")) throw new Discard(`no valid address in ${JSON.stringify(task.payload)}`);
  if (Math.random() < 0.2) throw new Error("SMTP server busy"); // the server retries with backoff
  if (Math.random() < 0.1) throw new Retry("rate limited by the provider", { delayMs: 5000 });
  await sleep(50, undefined, { signal: task.signal }); // pass the signal on to your own I/O
  console.log(`sent email ${task.id} to ${to} (attempt ${task.attempt})`);
}

const [command, count = "10"] = process.argv.slice(2);
if (command === "send") {
  for (let i = 0; i < Number(count); i++) {
    // The key makes a retried request (after a timeout, say) safe.
    await client.enqueue("emails", { to: `user${i}@example.com` }, { key: `welcome-${i}` });
  }
  await client.enqueue("emails", { to: "nobody" });
  console.log(`enqueued ${Number(count) + 1} emails`);
} else if (command === "worker") {
  await client.putSchedule("digest", { queue: "digests", cron: "0 0 7 * * *", deadlineMs: 600_000 });
  const worker = new Worker(client, { concurrency: 8, shutdownGraceMs: 10_000 });
  worker.handle("emails", sendEmail, { timeoutMs: 30_000 });
  worker.handle("digests", (task) => console.log(`daily digest run ${task.id}`));
  await worker.run(); // Ctrl-C: running emails finish, the rest go back to the queue
} else {
  console.error("usage: emails.js send [N] | worker");
  process.exitCode = 2;
}
