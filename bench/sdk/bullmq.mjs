// BullMQ on Redis, the same workload as bench/sdk's Spool runs.
//
//   node bullmq.mjs --redis redis://127.0.0.1:6390 --tasks 10000 --concurrency 1,16,64
//
// Enqueue: addBulk of 1000, 100-byte payloads, removeOnComplete (a done job is
// deleted, as in Spool). Drain: one Worker with a no-op processor at each
// concurrency over a pre-filled queue, timed from its start until every job
// completed.

import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";

import { Queue, Worker } from "bullmq";

const { values } = parseArgs({
  options: {
    redis: { type: "string", default: "redis://127.0.0.1:6390" },
    tasks: { type: "string", default: "10000" },
    concurrency: { type: "string", default: "1,16,64" },
  },
});
const url = new URL(values.redis);
const connection = { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
const tasks = Number(values.tasks);
const data = { data: "x".repeat(88) };
const fmt = (n) => Math.round(n).toLocaleString("en-US");

for (const concurrency of values.concurrency.split(",").map(Number)) {
  const name = `bench-${randomBytes(4).toString("hex")}`;
  const queue = new Queue(name, { connection });
  let start = performance.now();
  for (let i = 0; i < tasks; i += 1000) {
    const n = Math.min(1000, tasks - i);
    await queue.addBulk(Array.from({ length: n }, () => ({ name: "noop", data, opts: { removeOnComplete: true } })));
  }
  console.log(`bullmq enqueue, addBulk of 1000: ${fmt(tasks / ((performance.now() - start) / 1000))} tasks/s`);
  let done = 0;
  let finish;
  const finished = new Promise((r) => (finish = r));
  start = performance.now();
  const worker = new Worker(name, async () => {}, { connection, concurrency });
  worker.on("completed", () => {
    done += 1;
    if (done === tasks) finish();
  });
  await finished;
  const rate = tasks / ((performance.now() - start) / 1000);
  console.log(`bullmq worker, no-op, concurrency ${concurrency}: ${fmt(rate)} tasks/s`);
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
}
