/**
 * The worker runtime: claim tasks, run handlers, ack, fail, extend, shut down cleanly.
 *
 * Per queue, one acquisition loop claims batches sized to the free slots (long
 * polling, so an idle worker makes one request per `pollMs` and picks new work
 * up at once); each claimed task starts at once, so no claimed task waits in a
 * buffer while its lease runs.
 *
 * Outcomes: a handler that resolves → ack (the acks of concurrent runs go out
 * together in one batch request); one that resolves to a value other than
 * `undefined` or `null` → ack on its own, with the value as the task's result,
 * handed to the tasks waiting for it (`parentResults`), or fail when the value
 * is not JSON or over 4,096 bytes; one that throws → fail, and the server
 * schedules the retry with its backoff; `Retry`/`Discard`/`Snooze` as in
 * `outcomes`. A run that lives past half its lease has the lease extended in
 * the background. At the deadline the run's `signal` aborts with
 * `DeadlineExceeded`, the task fails with "deadline exceeded" and the slot is
 * freed (JavaScript cannot stop a promise: handlers pass the signal on).
 *
 * Cancellation: one watcher per worker long-polls `waitLeasesLost` over the
 * leases of its runs, so a task cancelled (or otherwise lost: its lease taken
 * over) while it runs is noticed within the server's 100 ms. Its `signal`
 * aborts with `TaskCancelled` and the slot is freed, as at a deadline, but
 * nothing is reported: the server would refuse it. Logged with
 * `NODE_DEBUG=spool`.
 *
 * Shutdown (`stop()`, or SIGINT/SIGTERM while `run()` handles signals): stop
 * claiming, let running handlers finish within `shutdownGraceMs`, then release
 * the rest so no attempt is burned. A second stop skips what is left of the
 * grace period.
 */

import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { debuglog } from "node:util";

import type { Client } from "./client.js";
import { BadRequest, LeaseLost, NotFound, SpoolError } from "./errors.js";
import type { Dependencies, Json, Payload, Task } from "./models.js";
import { DeadlineExceeded, Discard, Retry, Snooze, TaskCancelled, type When } from "./outcomes.js";

/** What a handler sees: its task, its deadline and a cancellation signal. */
export interface TaskContext {
  readonly task: Task;
  readonly id: number;
  readonly queue: string;
  readonly kind: string;
  readonly key: string | null;
  /** The group the task was enqueued in, if any. */
  readonly group: string | null;
  /** The tasks it waited for and how they ended (a batch callback's counts), if any. */
  readonly deps: Dependencies | null;
  /**
   * The results the tasks it waited for left, by parent id: those that completed
   * returning a value (a batch callback reads every member's). Empty when none.
   */
  readonly parentResults: ReadonlyMap<number, Json>;
  /** The result task `parentId` left for this one; `undefined` when it is not a parent or left none. */
  parentResult(parentId: number): Json | undefined;
  /** 1 on the first run, 2 on the first retry, and so on. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly payload: Payload;
  /** On this machine's clock. */
  readonly deadline: Date;
  /** Milliseconds until the deadline; 0 once it has passed. */
  remainingMs(): number;
  /**
   * Aborted when the run is cut off: its deadline (reason `DeadlineExceeded`),
   * a shutdown past its grace, or its lease lost (`TaskCancelled`: the task
   * was cancelled, or another claim holds it now).
   */
  readonly signal: AbortSignal;
  /** True once the run's lease is lost; the worker then reports nothing for it. */
  readonly lost: boolean;
}

/**
 * A handler: what it resolves to, unless `undefined` or `null`, is the task's
 * result (JSON of at most `MAX_RESULT` bytes). Mind an arrow function's
 * expression body: `(t) => seen.push(t.id)` resolves to a number.
 */
export type Handler = (task: TaskContext) => unknown;

/** The most bytes a task's result may take, as compact JSON text (UTF-8). */
export const MAX_RESULT = 4096;

/** `value` as the compact JSON text the server measures a result by; throws a `RangeError` when it cannot be one. */
function resultText(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw new RangeError(`a result must be JSON: ${String(e)}`);
  }
  if (text === undefined) throw new RangeError(`a result must be JSON, not a ${typeof value}`);
  const size = Buffer.byteLength(text, "utf8");
  if (size > MAX_RESULT) {
    throw new RangeError(
      `a result of ${size} bytes of JSON exceeds the limit of ${MAX_RESULT} bytes; pass larger outputs by reference`,
    );
  }
  return text;
}

export interface WorkerOptions {
  /** Runs at once per queue, unless `handle` sets the queue's own; default 10. */
  concurrency?: number;
  /** How long a claim leases a task (extended while it runs); default 30 s. */
  leaseMs?: number;
  /** How long one claim waits for work (long poll, at most 30 s); default 5 s. */
  pollMs?: number;
  /** A handler's deadline unless `handle` sets its own; default 15 minutes. */
  timeoutMs?: number;
  /** How long running handlers may finish after a stop; default 30 s. */
  shutdownGraceMs?: number;
  workerId?: string;
}

export interface HandleOptions {
  /** Only tasks of this kind (default: every kind without its own handler). */
  kind?: string;
  /** This queue's own concurrency limit. */
  concurrency?: number;
  timeoutMs?: number;
}

// A run's deadline comes this long before its task's own lease ends, so that
// the "deadline exceeded" failure reaches the server while the lease holds.
const LEASE_MARGIN_MS = 500;
const FAILURE_TEXT_LIMIT = 4000;
// How long one lease watch waits on the server; how long new leases wait to be
// watched, so that a run shorter than that costs the server no watch at all.
const WATCH_WAIT_MS = 10_000;
const WATCH_GAP_MS = 50;
const WATCH_MAX = 10_000;

const debug = debuglog("spool");

/** A one-shot signal that can be awaited. */
class Latch {
  done = false;
  readonly promise: Promise<void>;
  private resolve!: () => void;
  constructor() {
    this.promise = new Promise((r) => (this.resolve = r));
  }
  set(): void {
    this.done = true;
    this.resolve();
  }
}

/** Resolves after `ms`, or at once when `until` is set; never rejects. */
function pause(ms: number, until?: Latch): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, ms));
    until?.promise.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

function failureText(error: unknown): string {
  const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  return text.slice(0, FAILURE_TEXT_LIMIT);
}

interface Route {
  fn: Handler;
  timeoutMs: number;
}

interface QueueState {
  name: string;
  concurrency: number;
  routes: Map<string | undefined, Route>;
  running: number;
  freed: Latch;
}

/** Coalesces the acks of concurrent runs: one batch request in flight at a time. */
class Acker {
  private pending: { id: number; token: string; settle: (e?: Error) => void }[] = [];
  private flushing = false;

  constructor(private readonly client: Client) {}

  ack(id: number, token: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ id, token, settle: (e) => (e ? reject(e) : resolve()) });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, 1000);
      try {
        const results = await this.client.ackMany(batch.map(({ id, token }) => ({ id, token })));
        batch.forEach((item, i) => {
          const r = results[i];
          if (r?.status === 204) item.settle();
          else if (r?.code === "lease_lost") item.settle(new LeaseLost(`task ${item.id}`, 409));
          else item.settle(new NotFound(`task ${item.id}`, r?.status));
        });
      } catch (e) {
        for (const item of batch) item.settle(e as Error);
      }
    }
    this.flushing = false;
  }
}

type Watched = { ok: true; lost: number[] } | { ok: false; error: unknown };

/**
 * Long-polls `waitLeasesLost` over the leases of the worker's runs.
 *
 * One poll in flight at a time, covering every lease watched when it was
 * sent. A new one goes out when it answers, or when leases added since are
 * still running `WATCH_GAP_MS` later (then it replaces the one in flight). A
 * lease unwatched needs no new poll: its task was acked, failed or released,
 * so the poll in flight answers it lost, and the next poll leaves it out.
 */
class Watcher {
  private readonly leases = new Map<number, { token: string; onLost: () => void }>();
  private added = new Latch();
  private closed = false;

  constructor(private readonly client: Client) {}

  watch(id: number, token: string, onLost: () => void): void {
    this.leases.set(id, { token, onLost });
    this.added.set();
  }

  unwatch(id: number, token: string): void {
    if (this.leases.get(id)?.token === token) this.leases.delete(id);
  }

  /** The lease is lost (found so here or by a refused extension): tell its run once. */
  lost(id: number, token: string): void {
    const entry = this.leases.get(id);
    if (entry?.token !== token) return;
    this.leases.delete(id);
    entry.onLost();
  }

  /** Ends `run`, abandoning the poll in flight. */
  close(): void {
    this.closed = true;
    this.added.set();
  }

  async run(): Promise<void> {
    let backoff = 100;
    while (!this.closed) {
      const added = (this.added = new Latch());
      if (this.leases.size === 0) {
        await added.promise;
        await pause(WATCH_GAP_MS);
        continue;
      }
      const sentTokens = new Map([...this.leases].slice(0, WATCH_MAX).map(([id, e]) => [id, e.token]));
      const abort = new AbortController();
      const poll: Promise<Watched> = this.client
        .waitLeasesLost(
          [...sentTokens].map(([id, token]) => ({ id, token })),
          { waitMs: WATCH_WAIT_MS, signal: abort.signal },
        )
        .then(
          (lost): Watched => ({ ok: true, lost }),
          (error: unknown): Watched => ({ ok: false, error }),
        );
      let answer: Watched | void = undefined;
      for (let added = this.added; !this.closed; added = this.added) {
        answer = await Promise.race([poll, added.promise]);
        if (answer !== undefined || this.closed) break;
        // New leases: those still running after the gap get a poll that replaces this one.
        this.added = new Latch();
        answer = await Promise.race([poll, pause(WATCH_GAP_MS)]);
        if (answer !== undefined || [...this.leases.keys()].some((id) => !sentTokens.has(id))) break;
      }
      if (answer === undefined) {
        abort.abort();
        await poll;
        continue;
      }
      if (!answer.ok) {
        console.warn(`spool worker: watching leases failed (${String(answer.error)}); again in ${backoff} ms`);
        await pause(backoff, added);
        backoff = Math.min(backoff * 2, 10_000);
        continue;
      }
      backoff = 100;
      for (const id of answer.lost) {
        const token = sentTokens.get(id);
        if (token !== undefined) this.lost(id, token);
      }
    }
  }
}

export class Worker {
  readonly id: string;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly timeoutMs: number;
  private readonly shutdownGraceMs: number;
  private readonly queues = new Map<string, QueueState>();
  private readonly acker: Acker;
  private watcher: Watcher;
  private clockOffsetMs = 0;
  private stopping = new Latch();
  private cut = new Latch();

  constructor(
    private readonly client: Client,
    options: WorkerOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 10;
    if (this.concurrency < 1) throw new RangeError("concurrency must be at least 1");
    this.leaseMs = options.leaseMs ?? 30_000;
    this.pollMs = Math.min(options.pollMs ?? 5_000, 30_000);
    this.timeoutMs = options.timeoutMs ?? 15 * 60_000;
    this.shutdownGraceMs = options.shutdownGraceMs ?? 30_000;
    this.id = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.acker = new Acker(client);
    this.watcher = new Watcher(client);
  }

  /** Register `fn` for a queue's tasks (only those of `options.kind`, if given). */
  handle(queue: string, fn: Handler, options: HandleOptions = {}): this {
    let q = this.queues.get(queue);
    if (!q) {
      q = { name: queue, concurrency: this.concurrency, routes: new Map(), running: 0, freed: new Latch() };
      this.queues.set(queue, q);
    }
    if (options.concurrency !== undefined) q.concurrency = options.concurrency;
    q.routes.set(options.kind, { fn, timeoutMs: options.timeoutMs ?? this.timeoutMs });
    return this;
  }

  /** Stop claiming and shut down; a second call releases running tasks at once. */
  stop(): void {
    if (this.stopping.done) this.cut.set();
    this.stopping.set();
  }

  /**
   * Run until `stop()` (or SIGINT/SIGTERM, unless `handleSignals` is false),
   * then shut down gracefully; resolves once every task is settled.
   */
  async run(options: { handleSignals?: boolean } = {}): Promise<void> {
    if (this.queues.size === 0) throw new Error("no handlers registered");
    this.stopping = new Latch();
    this.cut = new Latch();
    const onSignal = () => this.stop();
    const signals = options.handleSignals === false ? [] : (["SIGINT", "SIGTERM"] as const);
    for (const s of signals) process.on(s, onSignal);
    const watcher = (this.watcher = new Watcher(this.client));
    const watching = watcher.run();
    try {
      await this.learnClock();
      const runs = new Set<Promise<void>>();
      const loops = [...this.queues.values()].map((q) => this.acquire(q, runs));
      await this.stopping.promise;
      await Promise.all(loops);
      if (runs.size > 0) {
        await Promise.race([Promise.all(runs), this.cut.promise, pause(this.shutdownGraceMs)]);
      }
      this.cut.set();
      await Promise.all(runs);
    } finally {
      watcher.close();
      await watching;
      for (const s of signals) process.off(s, onSignal);
    }
  }

  /** How far the server's clock is from ours: Retry/Snooze delays count on its clock. */
  private async learnClock(): Promise<void> {
    const before = Date.now();
    const now = await this.client.time();
    this.clockOffsetMs = now.getTime() - (before + Date.now()) / 2;
  }

  private serverTime(when: When): Date {
    return when.at ?? new Date(Date.now() + this.clockOffsetMs + (when.delayMs ?? 0));
  }

  private async acquire(q: QueueState, runs: Set<Promise<void>>): Promise<void> {
    let backoff = 100;
    while (!this.stopping.done) {
      const free = q.concurrency - q.running;
      if (free <= 0) {
        q.freed = new Latch();
        await Promise.race([this.stopping.promise, q.freed.promise]);
        continue;
      }
      const sent = Date.now();
      let tasks: Task[];
      try {
        tasks = await this.client.claim(q.name, this.id, {
          max: Math.min(free, 1000),
          leaseMs: this.leaseMs,
          waitMs: this.pollMs,
        });
      } catch (e) {
        console.warn(`spool worker: claim from ${q.name} failed (${String(e)}); again in ${backoff} ms`);
        await pause(backoff, this.stopping);
        backoff = Math.min(backoff * 2, 10_000);
        continue;
      }
      backoff = 100;
      for (const task of tasks) {
        q.running += 1;
        let held = true;
        const free = () => {
          if (!held) return;
          held = false;
          q.running -= 1;
          q.freed.set();
        };
        const run: Promise<void> = this.runOne(q, task, sent, free).finally(() => {
          free();
          runs.delete(run);
        });
        runs.add(run);
      }
    }
  }

  /** `free` gives the run's slot back; it may be called more than once. */
  private async runOne(q: QueueState, task: Task, sent: number, free: () => void): Promise<void> {
    const token = task.lease?.token;
    if (token === undefined) {
      console.error(`spool worker: task ${task.id} was claimed without a lease token`);
      return;
    }
    if (this.stopping.done) {
      return this.report(this.client.release(task.id, token));
    }
    const route = q.routes.get(task.kind) ?? q.routes.get(undefined);
    if (!route) {
      return this.report(this.client.fail(task.id, token, `no handler for kind ${JSON.stringify(task.kind)}`));
    }
    return this.execute(route, task, token, sent, free);
  }

  private async execute(
    route: Route,
    task: Task,
    token: string,
    sent: number,
    free: () => void,
  ): Promise<void> {
    let deadline = sent + route.timeoutMs;
    if (task.leaseMs !== null) deadline = Math.min(deadline, sent + task.leaseMs - LEASE_MARGIN_MS);
    const abort = new AbortController();
    const lost = new Latch();
    const parentResults: ReadonlyMap<number, Json> = task.deps?.parentResults ?? new Map<number, Json>();
    const ctx: TaskContext = {
      task,
      id: task.id,
      queue: task.queue,
      kind: task.kind,
      key: task.key,
      group: task.group,
      deps: task.deps,
      parentResults,
      parentResult: (parentId) => parentResults.get(parentId),
      attempt: task.attempt,
      maxAttempts: task.maxAttempts,
      payload: task.payload,
      deadline: new Date(deadline),
      remainingMs: () => Math.max(0, deadline - Date.now()),
      signal: abort.signal,
      get lost() {
        return lost.done;
      },
    };
    this.watcher.watch(task.id, token, () => {
      lost.set();
      abort.abort(new TaskCancelled());
    });
    const finished = new Latch();
    const handler: Promise<Settled> = Promise.resolve()
      .then(() => route.fn(ctx))
      .then(
        (value): Settled => ({ ok: true, value }),
        (error: unknown): Settled => ({ ok: false, error }),
      )
      .finally(() => finished.set());
    // A task with its own lease (a schedule's deadline) is never extended past it.
    const keeper = task.leaseMs === null ? this.keepLease(task, token, sent, finished) : undefined;
    const timeUp = new Latch();
    const timer = setTimeout(() => timeUp.set(), Math.max(0, deadline - Date.now()));
    await Promise.race([finished.promise, this.cut.promise, timeUp.promise, lost.promise]);
    clearTimeout(timer);
    this.watcher.unwatch(task.id, token);
    // The slot frees before the run is reported, so the next claim and this ack
    // travel together (and share the server's group commit).
    free();
    if (lost.done) {
      finished.set();
      await keeper;
      debug("task %d: lease lost (cancelled, or claimed by another); run dropped", task.id);
      void handler.then((s) => debug("task %d: outcome of a lost run dropped: %o", task.id, s));
      return;
    }
    if (finished.done) {
      await keeper;
      return this.report(this.finish(task, token, await handler));
    }
    finished.set();
    await keeper;
    abort.abort(new DeadlineExceeded());
    if (this.cut.done) return this.report(this.client.release(task.id, token));
    console.warn(`spool worker: task ${task.id}: deadline exceeded`);
    return this.report(this.client.fail(task.id, token, "deadline exceeded"));
  }

  /** Extend the lease each time half of it has passed, until the run ends. */
  private async keepLease(task: Task, token: string, sent: number, finished: Latch): Promise<void> {
    let expires = sent + this.leaseMs;
    for (;;) {
      await pause((expires - Date.now()) / 2, finished);
      if (finished.done) return;
      const asked = Date.now();
      try {
        await this.client.extend(task.id, token, this.leaseMs);
        expires = asked + this.leaseMs;
      } catch (e) {
        if (e instanceof LeaseLost || e instanceof NotFound) {
          console.warn(`spool worker: task ${task.id}: lease lost while running (${String(e)})`);
          this.watcher.lost(task.id, token);
          return;
        }
        console.warn(`spool worker: task ${task.id}: extending the lease failed: ${String(e)}`);
      }
    }
  }

  private async finish(task: Task, token: string, settled: Settled): Promise<void> {
    const outcome = settled.ok ? settled.value : settled.error;
    if (outcome instanceof Retry) {
      await this.client.fail(task.id, token, outcome.message, { retryAt: this.serverTime(outcome.when) });
    } else if (outcome instanceof Discard) {
      await this.client.fail(task.id, token, outcome.message, { discard: true });
    } else if (outcome instanceof Snooze) {
      await this.client.snooze(task.id, token, this.serverTime(outcome.when));
    } else if (!settled.ok) {
      await this.client.fail(task.id, token, failureText(settled.error));
    } else if (settled.value === undefined || settled.value === null) {
      await this.acker.ack(task.id, token);
    } else {
      await this.ackResult(task.id, token, settled.value);
    }
  }

  /**
   * Ack on its own with the handler's value as the task's result. A value that
   * is not JSON or too large, or that the server refuses, fails the task with
   * the reason, as a throw would: never dropped unseen.
   */
  private async ackResult(id: number, token: string, value: unknown): Promise<void> {
    let text: string;
    try {
      text = resultText(value);
    } catch (e) {
      debug("task %d: result refused: %s", id, String(e));
      await this.client.fail(id, token, `the handler's return value: ${(e as Error).message}`);
      return;
    }
    try {
      await this.client.ack(id, token, { result: JSON.parse(text) as Json });
    } catch (e) {
      if (!(e instanceof BadRequest)) throw e;
      debug("task %d: the server refused its result: %s", id, String(e));
      await this.client.fail(id, token, `the server refused the handler's return value: ${e.message}`);
    }
  }

  /** Tell the server how a run ended; if that fails, the lease expires and it runs again. */
  private async report(call: Promise<unknown>): Promise<void> {
    try {
      await call;
    } catch (e) {
      if (!(e instanceof SpoolError)) throw e;
      console.warn(`spool worker: reporting a run's end failed: ${String(e)}`);
    }
  }
}
