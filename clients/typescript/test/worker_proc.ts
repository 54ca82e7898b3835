// A worker process for the process tests: `worker_proc.js URL QUEUE MODE OUT [CONCURRENCY LEASE_MS GRACE_MS]`.
// MODE `record` appends each task's id to OUT; `sleep` appends "start <id>", sleeps
// for the payload's `ms` and appends "done <id>". SIGINT/SIGTERM shut it down as in
// production.

import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

import { Client, Worker } from "../src/index.js";

const [url, queue, mode, out, concurrency = "4", leaseMs = "30000", graceMs = "30000"] =
  process.argv.slice(2);
if (!url || !queue || !out || (mode !== "record" && mode !== "sleep")) {
  throw new Error("usage: worker_proc.js URL QUEUE record|sleep OUT [CONCURRENCY LEASE_MS GRACE_MS]");
}
const write = (line: string) => appendFileSync(out, `${line}\n`);

const worker = new Worker(new Client({ url }), {
  concurrency: Number(concurrency),
  leaseMs: Number(leaseMs),
  shutdownGraceMs: Number(graceMs),
  pollMs: 500,
});
worker.handle(queue, async (t) => {
  if (mode === "record") return write(String(t.id));
  write(`start ${t.id}`);
  // The signal aborts the sleep when a shutdown past its grace period cuts the run.
  await sleep((t.payload as { ms: number }).ms, undefined, { signal: t.signal });
  write(`done ${t.id}`);
});
write("ready");
await worker.run();
write("exited");
