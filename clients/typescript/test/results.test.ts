// Task results against a real server: a handler's value reaches the tasks
// waiting for it; a value that cannot be a result fails the task, never lost unseen.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { type Json, NotFound, type TaskContext, Worker } from "../src/index.js";
import { STORES, freshQueue, useServer, waitFor } from "./server.js";

for (const store of STORES) {
  describe(`results (${store})`, () => {
    const env = useServer(store);

    /** The last error of a task that went dead, else undefined. */
    const deadWith = async (id: number): Promise<string | undefined> => {
      try {
        const t = await env.client.get(id);
        return t.state === "dead" ? t.errors.at(-1)?.message : undefined;
      } catch (e) {
        if (e instanceof NotFound) return undefined;
        throw e;
      }
    };

    /** Run a worker until `done()` holds, then stop it and wait for its shutdown. */
    async function runUntil(setup: (w: Worker) => void, done: () => boolean | Promise<boolean>): Promise<void> {
      const worker = new Worker(env.client, { pollMs: 200 });
      setup(worker);
      const running = worker.run({ handleSignals: false });
      try {
        await waitFor(done);
      } finally {
        worker.stop();
        await running;
      }
    }

    it("hands a client ack's result to the waiting task", async () => {
      const q = freshQueue();
      const parent = await env.client.enqueue(q, { step: 1 });
      const child = await env.client.enqueue(q, { step: 2 }, { after: [parent.id] });
      assert.deepEqual((await env.client.get(child.id)).deps?.parentResults, new Map());
      await assert.rejects(
        env.client.ack(parent.id, "0000000000000000", { result: 1, rescheduleAt: new Date() }),
        RangeError,
      );
      const [task] = await env.client.claim(q, "t");
      assert.equal(task?.id, parent.id);
      await env.client.ack(parent.id, task?.lease?.token ?? "", { result: { rows: 3, tag: "ü" } });
      const deps = (await env.client.get(child.id)).deps;
      assert.deepEqual(deps?.parentResults, new Map([[parent.id, { rows: 3, tag: "ü" }]]));
    });

    it("gives a handler's value to the task waiting for it; undefined and null leave none", async (ctx) => {
      const q = freshQueue();
      const ackAlone = ctx.mock.method(env.client, "ack");
      const extract = await env.client.enqueue(q, { file: "a.csv" }, { kind: "extract" });
      const silent = await env.client.enqueue(q, null, { kind: "silent" });
      const blank = await env.client.enqueue(q, null, { kind: "blank" });
      const load = await env.client.enqueue(q, null, { kind: "load", after: [extract.id, silent.id, blank.id] });
      let seen: { results: Map<number, Json>; extract?: Json; silent?: Json; blank?: Json } | undefined;
      await runUntil(
        (w) =>
          w
            .handle(q, (t) => ({ rows: 3, file: (t.payload as { file: string }).file }), { kind: "extract" })
            .handle(q, async () => undefined, { kind: "silent" })
            .handle(q, () => null, { kind: "blank" })
            .handle(
              q,
              (t: TaskContext) => {
                assert.equal(t.id, load.id);
                seen = {
                  results: new Map(t.parentResults),
                  extract: t.parentResult(extract.id),
                  silent: t.parentResult(silent.id),
                  blank: t.parentResult(blank.id),
                };
              },
              { kind: "load" },
            ),
        () => seen !== undefined,
      );
      assert.deepEqual(seen?.results, new Map([[extract.id, { rows: 3, file: "a.csv" }]]));
      assert.deepEqual(seen?.extract, { rows: 3, file: "a.csv" });
      assert.equal(seen?.silent, undefined);
      assert.equal(seen?.blank, undefined);
      // Only a value is acked on its own; the rest go out in batches.
      assert.deepEqual(ackAlone.mock.calls.map((c) => c.arguments[0]), [extract.id]);
    });

    it("fails a task whose value cannot be a result", async () => {
      const q = freshQueue();
      const big = await env.client.enqueue(q, null, { kind: "big", maxAttempts: 1 });
      const odd = await env.client.enqueue(q, null, { kind: "odd", maxAttempts: 1 });
      const child = await env.client.enqueue(q, null, { kind: "child", after: [big.id] });
      const ran: number[] = [];
      await runUntil(
        (w) =>
          w
            .handle(q, () => "x".repeat(5000), { kind: "big" })
            .handle(q, () => 10n, { kind: "odd" })
            .handle(q, (t) => void ran.push(t.id), { kind: "child" }),
        async () => (await deadWith(big.id)) !== undefined && (await deadWith(odd.id)) !== undefined,
      );
      const tooBig = (await deadWith(big.id)) ?? "";
      assert.match(tooBig, /5002 bytes/);
      assert.match(tooBig, /limit of 4096 bytes/);
      assert.match((await deadWith(odd.id)) ?? "", /must be JSON.*BigInt/);
      // The parent died, so its dependent was cancelled with it (the default).
      assert.deepEqual(ran, []);
      await assert.rejects(env.client.get(child.id), NotFound);
    });
  });
}
