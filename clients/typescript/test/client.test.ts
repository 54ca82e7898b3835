// The client against a real server: round trips, keys, errors, admin calls, schedules.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { BadRequest, LeaseHeld, LeaseLost, NotFound, type QueueOptions } from "../src/index.js";
import { STORES, freshQueue, useServer, waitFor } from "./server.js";

for (const store of STORES) {
  describe(`client (${store})`, () => {
    const env = useServer(store);

    it("round-trips JSON and binary payloads exactly", async () => {
      const q = freshQueue();
      const json = { n: 2 ** 52, f: 1.5, s: "héllo", l: [null, true, {}] };
      const bytes = new Uint8Array(256).map((_, i) => i);
      const a = await env.client.enqueue(q, json);
      const b = await env.client.enqueue(q, bytes);
      const c = await env.client.enqueue(q);
      const tasks = new Map((await env.client.claim(q, "t", { max: 10 })).map((t) => [t.id, t]));
      assert.deepEqual(tasks.get(a.id)?.payload, json);
      assert.deepEqual(tasks.get(b.id)?.payload, bytes);
      assert.equal(tasks.get(c.id)?.payload, null);
      for (const t of tasks.values()) await env.client.ack(t.id, t.lease?.token ?? "");
      await assert.rejects(env.client.get(a.id), NotFound);
    });

    it("keeps a traceparent and refuses a malformed one", async () => {
      const q = freshQueue();
      const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
      const traced = await env.client.enqueue(q, { n: 1 }, { traceparent: tp });
      const plain = await env.client.enqueue(q, { n: 2 });
      assert.equal((await env.client.get(traced.id)).traceparent, tp);
      assert.equal((await env.client.get(plain.id)).traceparent, null);
      await assert.rejects(env.client.enqueue(q, null, { traceparent: "00-nope-01" }), BadRequest);
    });

    it("holds a dependent pending until its parent is acked", async () => {
      const q = freshQueue();
      const parent = await env.client.enqueue(q, { step: 1 });
      const child = await env.client.enqueue(q, { step: 2 }, { after: [parent.id], ifParentFails: "run" });
      const waiting = await env.client.get(child.id);
      assert.equal(waiting.state, "pending");
      assert.deepEqual(waiting.deps, {
        after: [parent.id],
        waitingOn: [parent.id],
        parentsFailed: 0,
        parentsCompleted: 0,
        ifParentFails: "run",
        parentResults: new Map(),
      });
      assert.equal((await env.client.get(parent.id)).deps, null);
      const stats = (await env.client.stats()).find((s) => s.name === q);
      assert.equal(stats?.counts.pending, 1);

      const [task] = await env.client.claim(q, "t", { max: 10 });
      assert.equal(task?.id, parent.id);
      await env.client.ack(parent.id, task?.lease?.token ?? "");
      const released = await env.client.get(child.id);
      assert.equal(released.state, "ready");
      assert.equal(released.deps?.parentsCompleted, 1);

      const batch = await env.client.enqueueMany(q, [{ payload: 1 }, { payload: 2, afterBatch: [0] }]);
      assert.deepEqual((await env.client.get(batch[1]!.id)).deps?.after, [batch[0]!.id]);
      await assert.rejects(env.client.enqueueMany(q, [{ afterBatch: [1] }, {}]), BadRequest);
    });

    it("keeps a task's group and refuses a malformed one", async () => {
      const q = freshQueue();
      const grouped = await env.client.enqueue(q, { n: 1 }, { group: "customer 42 ü" });
      const [acme, plain] = await env.client.enqueueMany(q, [
        { payload: 2, group: "acme" },
        { payload: 3 },
      ]);
      assert.equal((await env.client.get(grouped.id)).group, "customer 42 ü");
      assert.equal((await env.client.get(acme!.id)).group, "acme");
      assert.equal((await env.client.get(plain!.id)).group, null);
      await assert.rejects(env.client.enqueue(q, null, { group: "" }), BadRequest);
    });

    it("sets, keeps and removes a queue's group concurrency", async () => {
      const q = freshQueue();
      assert.equal((await env.client.putQueue(q, { groupConcurrency: 3 })).groupConcurrency, 3);
      assert.equal((await env.client.settings(q)).groupConcurrency, 3);
      assert.equal((await env.client.putQueue(q, { maxAttempts: 4 })).groupConcurrency, 3);
      await assert.rejects(env.client.putQueue(q, { groupConcurrency: 0 }), BadRequest);
      assert.equal((await env.client.putQueue(q, { groupConcurrency: null })).groupConcurrency, null);
    });

    it("sets, reads, changes and removes a queue's claim limits", async () => {
      const q = freshQueue();
      const set = await env.client.putQueue(q, {
        rateLimit: { limit: 100, periodMs: 1000, burst: 10 },
        maxLeased: 5,
        groupRateLimit: { limit: 2, periodMs: 500, burst: 1 },
      });
      assert.deepEqual(set.rateLimit, { limit: 100, periodMs: 1000, burst: 10 });
      assert.equal(set.maxLeased, 5);
      assert.deepEqual(set.groupRateLimit, { limit: 2, periodMs: 500, burst: 1 });
      assert.deepEqual(await env.client.settings(q), set);
      // A change that names none of them (or leaves them undefined) keeps them all.
      const other = await env.client.putQueue(q, { maxAttempts: 4, rateLimit: undefined });
      assert.deepEqual(other, { ...set, maxAttempts: 4 });

      const changed = await env.client.putQueue(q, { rateLimit: { limit: 50, periodMs: 60_000, burst: 5 } });
      assert.deepEqual(changed.rateLimit, { limit: 50, periodMs: 60_000, burst: 5 });
      assert.equal(changed.maxLeased, 5);
      assert.deepEqual(changed.groupRateLimit, set.groupRateLimit);
      assert.equal((await env.client.putQueue(q, { maxLeased: 7 })).maxLeased, 7);

      assert.equal((await env.client.putQueue(q, { rateLimit: null })).rateLimit, null);
      const kept = await env.client.settings(q);
      assert.equal(kept.maxLeased, 7);
      assert.deepEqual(kept.groupRateLimit, set.groupRateLimit);
      assert.equal((await env.client.putQueue(q, { maxLeased: null })).maxLeased, null);
      const cleared = await env.client.putQueue(q, { groupRateLimit: null });
      assert.deepEqual([cleared.rateLimit, cleared.maxLeased, cleared.groupRateLimit], [null, null, null]);
      assert.deepEqual(await env.client.settings(q), cleared);
    });

    it("refuses a bad setting with BadRequest and changes nothing", async () => {
      const q = freshQueue();
      const before = await env.client.putQueue(q, { rateLimit: { limit: 3, periodMs: 1000, burst: 3 }, maxLeased: 2 });
      const bad: QueueOptions[] = [
        { rateLimit: { limit: 0, periodMs: 1000, burst: 1 } },
        { rateLimit: { limit: 1, periodMs: 0, burst: 1 } },
        { rateLimit: { limit: 1, periodMs: 1000, burst: 0 } },
        { groupRateLimit: { limit: 0, periodMs: 1000, burst: 1 } },
        { maxLeased: 0 },
        { groupConcurrency: 0 },
        { leaseMs: 0 },
        { maxAttempts: 0 },
        { backoffBaseMs: 2 * 3_600_000 },
        { maxPayload: 64 * 1024 * 1024 + 1 },
      ];
      for (const options of bad) {
        await assert.rejects(env.client.putQueue(q, options), (e: unknown) => {
          assert.ok(e instanceof BadRequest, String(e));
          assert.equal(e.status, 400);
          assert.equal(e.code, "bad_request");
          return true;
        });
      }
      assert.deepEqual(await env.client.settings(q), before);
    });

    it("holds claims to a queue's rate limit", async () => {
      const q = freshQueue();
      await env.client.putQueue(q, { rateLimit: { limit: 2, periodMs: 60_000, burst: 2 } });
      await env.client.enqueueMany(q, [0, 1, 2, 3, 4].map((n) => ({ payload: { n } })));
      assert.equal((await env.client.claim(q, "t", { max: 5 })).length, 2);
      const stats = (await env.client.stats()).find((s) => s.name === q);
      assert.equal(stats?.rateTokens, 0);
      assert.equal(stats?.counts.ready, 3);
      assert.equal(stats?.counts.leased, 2);
      // The bucket refills at one token per 30 s: nothing more for now.
      assert.deepEqual(await env.client.claim(q, "t", { max: 5 }), []);
      // Removing the limit lets the rest through.
      assert.equal((await env.client.putQueue(q, { rateLimit: null })).rateLimit, null);
      assert.equal((await env.client.claim(q, "t", { max: 5 })).length, 3);
    });

    it("holds claims to a queue's max leased", async () => {
      const q = freshQueue();
      assert.equal((await env.client.putQueue(q, { maxLeased: 1 })).maxLeased, 1);
      await env.client.enqueueMany(q, [0, 1, 2].map((n) => ({ payload: { n } })));
      const [first, ...more] = await env.client.claim(q, "t", { max: 10 });
      assert.deepEqual(more, []);
      // One task leased of one allowed: the next claim gets nothing, not an error.
      assert.deepEqual(await env.client.claim(q, "t", { max: 10 }), []);
      const stats = (await env.client.stats()).find((s) => s.name === q);
      assert.equal(stats?.counts.leased, 1);
      assert.equal(stats?.counts.ready, 2);
      // An ack frees the slot.
      await env.client.ack(first!.id, first!.lease!.token!);
      assert.equal((await env.client.claim(q, "t", { max: 10 })).length, 1);
      assert.deepEqual(await env.client.claim(q, "t", { max: 10 }), []);
      // Removing the cap lets the rest through.
      assert.equal((await env.client.putQueue(q, { maxLeased: null })).maxLeased, null);
      assert.equal((await env.client.claim(q, "t", { max: 10 })).length, 1);
    });

    it("holds claims to a queue's group concurrency", async () => {
      const q = freshQueue();
      await env.client.putQueue(q, { groupConcurrency: 1 });
      await env.client.enqueueMany(q, [
        { payload: { n: 1 }, group: "acme" },
        { payload: { n: 2 }, group: "acme" },
        { payload: { n: 3 }, group: "globex" },
        { payload: { n: 4 } },
      ]);
      // One task per group; tasks without a group are not bound by it.
      const claimed = await env.client.claim(q, "t", { max: 10 });
      assert.deepEqual(
        new Map(claimed.map((t) => [t.group, t.payload])),
        new Map([
          [null, { n: 4 }],
          ["acme", { n: 1 }],
          ["globex", { n: 3 }],
        ]),
      );
      assert.deepEqual(await env.client.claim(q, "t", { max: 10 }), []);
      const acme = claimed.find((t) => t.group === "acme")!;
      await env.client.ack(acme.id, acme.lease!.token!);
      assert.deepEqual((await env.client.claim(q, "t", { max: 10 })).map((t) => t.payload), [{ n: 2 }]);
    });

    it("pauses and resumes through putQueue", async () => {
      const q = freshQueue();
      await env.client.enqueue(q, {});
      assert.equal((await env.client.putQueue(q, { paused: true })).paused, true);
      assert.deepEqual(await env.client.claim(q, "t"), []);
      // A change that does not name paused keeps the pause.
      assert.equal((await env.client.putQueue(q, { maxLeased: 3 })).paused, true);
      assert.equal((await env.client.settings(q)).paused, true);
      assert.equal((await env.client.putQueue(q, { paused: false })).paused, false);
      assert.equal((await env.client.claim(q, "t")).length, 1);
    });

    it("answers NotFound for the settings of a queue nobody created", async () => {
      const q = freshQueue();
      const missing = await env.client.settings(q).catch((e: unknown) => e);
      assert.ok(missing instanceof NotFound, String(missing));
      assert.equal(missing.code, "not_found");
      assert.equal(missing.status, 404);
      // putQueue creates the queue, with the defaults for what it does not name.
      const created = await env.client.putQueue(q, { maxLeased: 2 });
      assert.equal(created.maxLeased, 2);
      assert.equal(created.maxAttempts, 20);
      assert.equal(created.paused, false);
      assert.deepEqual(await env.client.settings(q), created);
    });

    it("returns the first task for a repeated idempotency key", async () => {
      const q = freshQueue();
      const first = await env.client.enqueue(q, { v: 1 }, { key: "order-7" });
      const second = await env.client.enqueue(q, { v: 2 }, { key: "order-7" });
      assert.equal(first.duplicate, false);
      assert.equal(second.duplicate, true);
      assert.equal(second.id, first.id);
      assert.deepEqual((await env.client.get({ queue: q, key: "order-7" })).payload, { v: 1 });
      await env.client.cancel({ queue: q, key: "order-7" });
      await assert.rejects(env.client.get(first.id), NotFound);
    });

    it("enqueues a batch in request order, with delay and priority", async () => {
      const q = freshQueue();
      const results = await env.client.enqueueMany(q, [
        { payload: 1, key: "a" },
        { payload: 2, key: "a" },
        { payload: 3, priority: -5 },
        { payload: 4, delayMs: 3_600_000 },
      ]);
      assert.deepEqual(results.map((r) => r.duplicate), [false, true, false, false]);
      assert.equal((await env.client.get(results[3]!.id)).state, "scheduled");
      const claimed = await env.client.claim(q, "t", { max: 10 });
      assert.deepEqual(claimed.map((t) => t.payload), [3, 1]);
    });

    it("throws the class of each stable error code", async () => {
      const q = freshQueue();
      const missing = await env.client.get(10 ** 15).catch((e: unknown) => e);
      assert.ok(missing instanceof NotFound);
      assert.equal(missing.code, "not_found");
      assert.equal(missing.status, 404);
      // Refused after the body is read: a request refused by its path closes
      // the connection without saying so, which could cost the next request.
      await assert.rejects(env.client.claim(q, "t", { max: 5000 }), BadRequest);
      await env.client.enqueue(q, {});
      const [task] = await env.client.claim(q, "t");
      await assert.rejects(env.client.ack(task!.id, "not-the-token"), LeaseLost);
      await assert.rejects(env.client.update(task!.id, { priority: 3 }), LeaseHeld);
    });

    it("fails to dead, lists and retries", async () => {
      const q = freshQueue();
      await env.client.putQueue(q, { maxAttempts: 1 });
      const { id } = await env.client.enqueue(q, {});
      const [task] = await env.client.claim(q, "t");
      const dead = await env.client.fail(id, task!.lease!.token!, "boom");
      assert.equal(dead.state, "dead");
      assert.equal(dead.errors.at(-1)?.message, "boom");
      assert.deepEqual((await env.client.tasks(q, { state: "dead" })).tasks.map((t) => t.id), [id]);
      assert.equal((await env.client.retry(id)).state, "ready");
    });

    it("pauses, resumes, reports stats and settings", async () => {
      const q = freshQueue();
      const settings = await env.client.putQueue(q, { leaseMs: 2000, maxAttempts: 3 });
      assert.equal(settings.leaseMs, 2000);
      assert.deepEqual(await env.client.settings(q), settings);
      await env.client.enqueue(q, {});
      await env.client.pause(q);
      assert.deepEqual(await env.client.claim(q, "t"), []);
      const stats = (await env.client.stats()).find((s) => s.name === q);
      assert.equal(stats?.paused, true);
      assert.equal(stats?.counts.ready, 1);
      await env.client.resume(q);
      assert.equal((await env.client.claim(q, "t")).length, 1);
    });

    it("release restores the attempt", async () => {
      const q = freshQueue();
      const { id } = await env.client.enqueue(q, {});
      const [task] = await env.client.claim(q, "t");
      assert.equal(task!.attempt, 1);
      await env.client.release(id, task!.lease!.token!);
      const again = await env.client.get(id);
      assert.equal(again.state, "ready");
      assert.equal(again.attempt, 0);
    });

    it("answers the leases no longer held, long-polling until one is lost", async () => {
      const q = freshQueue();
      const first = (await env.client.enqueue(q, { i: 1 })).id;
      const second = (await env.client.enqueue(q, { i: 2 })).id;
      const leases = (await env.client.claim(q, "t", { max: 10 })).map((t) => ({ id: t.id, token: t.lease?.token ?? "" }));
      assert.deepEqual(leases.map((l) => l.id).sort((a, b) => a - b), [first, second]);
      assert.deepEqual(await env.client.waitLeasesLost(leases), []);
      assert.deepEqual(await env.client.waitLeasesLost(leases, { waitMs: 200 }), []);
      // A token the server never issued is a lease nobody holds.
      const forged = leases.map((l) => (l.id === first ? { id: first, token: "not-a-token" } : l));
      assert.deepEqual(await env.client.waitLeasesLost(forged), [first]);
      const waiting = env.client.waitLeasesLost(leases, { waitMs: 10_000 });
      await new Promise((r) => setTimeout(r, 200));
      const sent = performance.now();
      await env.client.cancel(second);
      assert.deepEqual(await waiting, [second]);
      assert.ok(performance.now() - sent < 1000);
      await assert.rejects(env.client.waitLeasesLost([]), BadRequest);
      // An abandoned wait rejects with its signal's reason.
      const abort = new AbortController();
      const abandoned = env.client.waitLeasesLost([leases.find((l) => l.id === first)!], {
        waitMs: 10_000,
        signal: abort.signal,
      });
      abort.abort(new Error("gone"));
      await assert.rejects(abandoned, /gone/);
    });

    it("manages schedules, which the server fires", async () => {
      const q = freshQueue();
      const name = `s-${q}`;
      const made = await env.client.putSchedule(name, { queue: q, everyMs: 1000, payload: { tick: true } });
      assert.equal(made.everyMs, 1000);
      assert.ok((await env.client.schedules()).some((s) => s.name === name));
      await waitFor(async () => (await env.client.claim(q, "t")).length > 0, 5000);
      await env.client.deleteSchedule(name);
      assert.ok(!(await env.client.schedules()).some((s) => s.name === name));
      const nightly = await env.client.putSchedule(name, {
        queue: q,
        cron: "0 0 2 * * *",
        tz: "Europe/Paris",
        deadlineMs: 600_000,
      });
      assert.deepEqual([nightly.cron, nightly.tz, nightly.everyMs, nightly.deadlineMs], ["0 0 2 * * *", "Europe/Paris", null, 600_000]);
      // 02:00 in Paris is 00:00 or 01:00 UTC, depending on summer time.
      const fire = nightly.nextFireAt;
      assert.ok(fire !== null && fire.getTime() > Date.now());
      assert.ok([0, 1].includes(fire.getUTCHours()) && fire.getUTCMinutes() === 0 && fire.getUTCSeconds() === 0);
      await env.client.deleteSchedule(name);
      await assert.rejects(env.client.putSchedule(name, { queue: q, everyMs: 10 }), BadRequest);
      await assert.rejects(env.client.putSchedule(name, { queue: q }), TypeError);
    });
  });
}
