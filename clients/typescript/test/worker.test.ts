// The worker runtime in this process against a real server: outcomes, leases, deadlines.

import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";

import {
  DeadlineExceeded,
  Discard,
  NotFound,
  Retry,
  Snooze,
  TaskCancelled,
  type Task,
  type TaskContext,
  Worker,
  type WorkerOptions,
} from "../src/index.js";
import { STORES, freshQueue, useServer, waitFor } from "./server.js";

for (const store of STORES) {
  describe(`worker (${store})`, () => {
    const env = useServer(store);

    const gone = async (id: number) =>
      env.client.get(id).then(
        () => false,
        (e: unknown) => e instanceof NotFound,
      );
    const state = async (id: number) => (await env.client.get(id)).state;

    /** Run a worker until `done()` holds, then stop it and wait for its shutdown. */
    async function runUntil(
      options: WorkerOptions,
      setup: (w: Worker) => void,
      done: () => boolean | Promise<boolean>,
      limitMs = 20_000,
    ): Promise<void> {
      const worker = new Worker(env.client, { pollMs: 200, ...options });
      setup(worker);
      const running = worker.run({ handleSignals: false });
      try {
        await waitFor(done, limitMs);
      } finally {
        worker.stop();
        await running;
      }
    }

    it("runs a handler that fails twice then succeeds three times", async () => {
      const q = freshQueue();
      await env.client.putQueue(q, { backoffBaseMs: 10, backoffMaxMs: 50 });
      const { id } = await env.client.enqueue(q, { n: 1 });
      const attempts: number[] = [];
      await runUntil(
        {},
        (w) =>
          w.handle(q, async (t) => {
            attempts.push(t.attempt);
            assert.deepEqual(t.payload, { n: 1 });
            if (t.attempt < 3) throw new Error(`failure ${t.attempt}`);
          }),
        () => gone(id),
      );
      assert.deepEqual(attempts, [1, 2, 3]);
    });

    it("honours Retry, Discard and Snooze", async () => {
      const q = freshQueue();
      const retried = (await env.client.enqueue(q, null, { kind: "retry" })).id;
      const discarded = (await env.client.enqueue(q, null, { kind: "discard" })).id;
      const snoozed = (await env.client.enqueue(q, null, { kind: "snooze" })).id;
      const seen = { retry: [] as number[], snooze: [] as number[] };
      await runUntil(
        {},
        (w) =>
          w
            .handle(q, (t) => {
              seen.retry.push(t.attempt);
              if (t.attempt === 1) throw new Retry("later", { delayMs: 50 });
            }, { kind: "retry" })
            .handle(q, () => {
              throw new Discard("not worth it");
            }, { kind: "discard" })
            .handle(q, (t) => {
              seen.snooze.push(t.attempt);
              return seen.snooze.length === 1 ? new Snooze({ delayMs: 50 }) : undefined;
            }, { kind: "snooze" }),
        async () => (await gone(retried)) && (await gone(snoozed)) && (await state(discarded)) === "dead",
      );
      assert.deepEqual(seen.retry, [1, 2]);
      // A snooze gives the attempt back: the second run is attempt 1 again.
      assert.deepEqual(seen.snooze, [1, 1]);
      const dead = await env.client.get(discarded);
      assert.equal(dead.attempt, 1);
      assert.equal(dead.errors.at(-1)?.message, "not worth it");
    });

    it("records a thrown error's message", async () => {
      const q = freshQueue();
      await env.client.putQueue(q, { maxAttempts: 1 });
      const { id } = await env.client.enqueue(q, {});
      await runUntil(
        {},
        (w) =>
          w.handle(q, () => {
            throw new TypeError("the reason");
          }),
        async () => (await state(id)) === "dead",
      );
      assert.match((await env.client.get(id)).errors.at(-1)?.message ?? "", /^TypeError: the reason/);
    });

    it("keeps a slow handler's lease by extension", async () => {
      const q = freshQueue();
      const { id } = await env.client.enqueue(q, {});
      const runs: number[] = [];
      const rivals: Task[] = [];
      await runUntil(
        { leaseMs: 2000 },
        (w) =>
          w.handle(q, async (t) => {
            runs.push(t.attempt);
            // Two and a half leases long: without extension a rival would take it.
            for (let i = 0; i < 5; i++) {
              await sleep(1000);
              rivals.push(...(await env.client.claim(q, "rival")));
            }
          }),
        () => gone(id),
      );
      assert.deepEqual(runs, [1]);
      assert.deepEqual(rivals, []);
    });

    it("aborts a handler at its deadline and fails the task", async () => {
      const q = freshQueue();
      await env.client.putQueue(q, { maxAttempts: 1 });
      const { id } = await env.client.enqueue(q, {});
      let reason: unknown;
      await runUntil(
        {},
        (w) =>
          w.handle(
            q,
            async (t: TaskContext) => {
              assert.ok(t.remainingMs() <= 300);
              await sleep(60_000, undefined, { signal: t.signal }).catch(() => (reason = t.signal.reason));
            },
            { timeoutMs: 300 },
          ),
        async () => (await state(id)) === "dead",
      );
      assert.ok(reason instanceof DeadlineExceeded);
      assert.equal((await env.client.get(id)).errors.at(-1)?.message, "deadline exceeded");
    });

    it("cuts a task with its own lease at that lease", async () => {
      const q = freshQueue();
      await env.client.putQueue(q, { maxAttempts: 1 });
      const { id } = await env.client.enqueue(q, {}, { leaseMs: 1000 });
      const started = Date.now();
      await runUntil(
        { leaseMs: 30_000 },
        (w) => w.handle(q, (t) => sleep(60_000, undefined, { signal: t.signal }).catch(() => undefined)),
        async () => (await state(id)) === "dead",
      );
      assert.ok(Date.now() - started < 5000);
      assert.equal((await env.client.get(id)).errors.at(-1)?.message, "deadline exceeded");
    });

    it("limits concurrency", async () => {
      const q = freshQueue();
      const ids = (await env.client.enqueueMany(q, Array.from({ length: 12 }, (_, i) => ({ payload: i })))).map((e) => e.id);
      let active = 0;
      let peak = 0;
      let done = 0;
      await runUntil(
        { concurrency: 3 },
        (w) =>
          w.handle(q, async () => {
            active += 1;
            peak = Math.max(peak, active);
            await sleep(100);
            active -= 1;
            done += 1;
          }),
        () => done === ids.length,
      );
      assert.equal(peak, 3);
    });

    it("releases a running task when stopped past the grace period", async () => {
      const q = freshQueue();
      const { id } = await env.client.enqueue(q, {});
      let started = false;
      await runUntil(
        { shutdownGraceMs: 300 },
        (w) =>
          w.handle(q, async (t) => {
            started = true;
            await sleep(60_000, undefined, { signal: t.signal }).catch(() => undefined);
          }),
        () => started,
      );
      const task = await env.client.get(id);
      assert.equal(task.state, "ready");
      assert.equal(task.attempt, 0);
    });

    it("releases unrun the tasks that a claim in flight at a stop brings in", async () => {
      const q = freshQueue();
      const ran: number[] = [];
      const worker = new Worker(env.client, { pollMs: 5000 });
      worker.handle(q, async (t) => {
        ran.push(t.id);
      });
      const running = worker.run({ handleSignals: false });
      await sleep(1000); // its first claim now long-polls the empty queue
      worker.stop();
      const { id } = await env.client.enqueue(q, {}); // answers that claim, after the stop
      await running;
      assert.deepEqual(ran, []);
      const task = await env.client.get(id);
      assert.equal(task.state, "ready");
      assert.equal(task.attempt, 0);
    });

    for (const concurrency of [1, 8]) {
      it(`runs every task once at concurrency ${concurrency}`, async () => {
        const q = freshQueue();
        const ids = (await env.client.enqueueMany(q, Array.from({ length: 200 }, (_, i) => ({ payload: i })))).map((e) => e.id);
        const seen: number[] = [];
        await runUntil(
          { concurrency },
          (w) => w.handle(q, (t) => void seen.push(t.id)),
          () => seen.length >= ids.length,
        );
        assert.deepEqual([...seen].sort((a, b) => a - b), ids);
        assert.deepEqual((await env.client.tasks(q)).tasks, []);
      });
    }

    /** Cancel `ref` once `started()` holds and the worker's lease watch polls; when it was sent. */
    async function cancelWhen(started: () => boolean, ref: number | { queue: string; key: string }): Promise<number> {
      await waitFor(started);
      await sleep(300); // the worker's lease watch now long-polls over the run
      const sent = performance.now();
      await env.client.cancel(ref);
      return sent;
    }

    /** Console warnings during `fn`: a report the server refused would show as one. */
    async function warnings(fn: () => Promise<void>): Promise<string[]> {
      const seen: string[] = [];
      const warn = console.warn;
      console.warn = (...args: unknown[]) => void seen.push(args.map(String).join(" "));
      try {
        await fn();
      } finally {
        console.warn = warn;
      }
      return seen;
    }

    it("aborts a running task's signal when it is cancelled, and reports nothing", async () => {
      const q = freshQueue();
      const { id } = await env.client.enqueue(q, {});
      const after = (await env.client.enqueue(q, { after: true }, { delayMs: 1000 })).id;
      const runs: number[] = [];
      let started = false;
      let seen: number | undefined;
      let reason: unknown;
      let lost: boolean | undefined;
      let sent = 0;
      const warned = await warnings(() =>
        runUntil(
          {},
          (w) =>
            w.handle(q, async (t) => {
              runs.push(t.id);
              if (t.id !== id) return;
              started = true;
              await new Promise((resolve) => t.signal.addEventListener("abort", resolve));
              seen = performance.now();
              reason = t.signal.reason;
              lost = t.lost;
              return "finished anyway"; // dropped: the task is gone
            }),
          async () => {
            if (sent === 0) sent = await cancelWhen(() => started, id);
            return seen !== undefined && (await gone(after));
          },
        ),
      );
      const latency = seen! - sent;
      console.log(`# handler saw the cancel after ${latency.toFixed(1)} ms`);
      assert.ok(latency < 100, `${latency} ms`);
      assert.ok(reason instanceof TaskCancelled);
      assert.equal(lost, true);
      assert.deepEqual(runs, [id, after]);
      assert.ok(await gone(id));
      assert.deepEqual(warned, []);
    });

    it("aborts a running task cancelled by its key", async () => {
      const q = freshQueue();
      const { id } = await env.client.enqueue(q, {}, { key: "k1" });
      let started = false;
      let seen: number | undefined;
      let sent = 0;
      const warned = await warnings(() =>
        runUntil(
          {},
          (w) =>
            w.handle(q, async (t) => {
              started = true;
              await sleep(60_000, undefined, { signal: t.signal }).catch(() => (seen = performance.now()));
            }),
          async () => {
            if (sent === 0) sent = await cancelWhen(() => started, { queue: q, key: "k1" });
            return seen !== undefined;
          },
        ),
      );
      const latency = seen! - sent;
      console.log(`# handler saw the cancel after ${latency.toFixed(1)} ms`);
      assert.ok(latency < 100, `${latency} ms`);
      assert.ok(await gone(id));
      assert.deepEqual(warned, []);
    });
  });
}
