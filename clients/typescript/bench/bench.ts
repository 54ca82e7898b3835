// Throughput of the TypeScript client against a running server.
//
//   npm run build:test && node build/bench/bench.js --url http://127.0.0.1:7700 --tasks 20000
//
// Enqueue: 100-byte payloads in batches of --batch (and, for scale, single
// enqueues). Worker: a queue pre-filled with --tasks tasks drained by one
// Worker with a no-op handler at each --concurrency; the time runs from the
// worker's start until it has shut down, every task acked. The shutdown waits
// for the claim in flight, which long-polls an empty queue for --poll-ms: that
// short default keeps the wait out of the figure. Prints one line per figure.

import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";

import { Client, Worker } from "../src/index.js";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:7700" },
    tasks: { type: "string", default: "20000" },
    batch: { type: "string", default: "1000" },
    concurrency: { type: "string", default: "1,16,64" },
    "poll-ms": { type: "string", default: "50" },
  },
});
const url = values.url!;
const tasks = Number(values.tasks);
const batch = Number(values.batch);
const pollMs = Number(values["poll-ms"]);
const payload = { data: "x".repeat(88) }; // 100 bytes of JSON
const run = randomBytes(4).toString("hex");
const client = new Client({ url });
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

async function enqueueSingle(queue: string, n: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) await client.enqueue(queue, payload);
  return n / ((performance.now() - start) / 1000);
}

async function enqueueBatched(queue: string): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < tasks; i += batch) {
    await client.enqueueMany(queue, Array.from({ length: Math.min(batch, tasks - i) }, () => ({ payload })));
  }
  return tasks / ((performance.now() - start) / 1000);
}

async function drain(queue: string, concurrency: number): Promise<number> {
  const worker = new Worker(client, { concurrency, pollMs });
  let done = 0;
  worker.handle(queue, () => {
    done += 1;
    if (done === tasks) worker.stop();
  });
  const start = performance.now();
  await worker.run({ handleSignals: false });
  return tasks / ((performance.now() - start) / 1000);
}

const single = await enqueueSingle(`bench-ts-${run}-single`, Math.min(tasks, 2000));
console.log(`typescript enqueue, single, 1 client: ${fmt(single)} tasks/s`);
for (const c of values.concurrency!.split(",").map(Number)) {
  const queue = `bench-ts-${run}-c${c}`;
  console.log(`typescript enqueue, batches of ${batch}: ${fmt(await enqueueBatched(queue))} tasks/s`);
  console.log(`typescript worker, no-op handler, concurrency ${c}: ${fmt(await drain(queue, c))} tasks/s`);
}
