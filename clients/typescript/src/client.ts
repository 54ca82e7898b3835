/**
 * The producer and admin side of Spool: one method per API call, over `fetch`.
 *
 * A task is addressed by its id, or by `{ queue, key }` for a live task
 * enqueued with that idempotency key. Durations are milliseconds (`...Ms`),
 * times are `Date`s. Every error answer throws the class of its stable code.
 */

import { ConnectionFailed, errorFor } from "./errors.js";
import {
  type Enqueued,
  type Json,
  type ParentFailure,
  type Payload,
  type QueueSettings,
  type QueueStats,
  type RateLimit,
  type Schedule,
  type Task,
  type TaskPage,
  type TaskState,
  type Wire,
  formatTime,
  payloadFields,
  rateLimitFields,
  scheduleOf,
  settingsOf,
  statsOf,
  taskOf,
} from "./models.js";

export const DEFAULT_URL = "http://127.0.0.1:7700";

export interface ClientOptions {
  /** Default `http://127.0.0.1:7700`. */
  url?: string;
  /** Bearer token, when the server was started with one. */
  token?: string;
  /** How long a request may take (a claim adds its wait); default 30 s. */
  timeoutMs?: number;
}

/** A task id, or the queue and idempotency key of a live task. */
export type TaskRef = number | { queue: string; key: string };

export interface TaskOptions {
  kind?: string;
  key?: string;
  delayMs?: number;
  runAt?: Date;
  priority?: number;
  maxAttempts?: number;
  /** The task's own lease (its time-to-run): a claim leases it this long. */
  leaseMs?: number;
  /** The producer's W3C trace context, which the task's runs join. */
  traceparent?: string;
  /**
   * The task's group in its queue (a customer, an API host; 1-128 bytes):
   * claims take from the groups in turn, and the queue's `groupConcurrency`
   * caps each group's tasks leased at once.
   */
  group?: string;
  /**
   * Ids of tasks (in any queue) this one waits for: it is `pending` until
   * each has ended (completed, dead or cancelled).
   */
  after?: number[];
  /**
   * What a parent ending dead or cancelled does: `cancel` (the default)
   * cancels this task too; `run` runs it once every parent has ended.
   */
  ifParentFails?: ParentFailure;
}

/** One task of a batch for `enqueueMany`. */
export interface TaskSpec extends TaskOptions {
  payload?: Payload;
  /**
   * Positions in the same batch of tasks this one waits for, each before
   * its own: a workflow created whole or not at all.
   */
  afterBatch?: number[];
}

export interface ClaimOptions {
  max?: number;
  leaseMs?: number;
  waitMs?: number;
}

export interface AckResult {
  id: number;
  /** 204 done, 404 gone, 409 lease lost. */
  status: number;
  code: string | null;
}

/**
 * A change of a queue's settings: an absent (`undefined`) option keeps its
 * value; `null` removes a claim limit. The claim limits bind every worker on
 * the server's store.
 */
export interface QueueOptions {
  leaseMs?: number;
  maxAttempts?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  dedupWindowMs?: number;
  maxPayload?: number;
  /** Pauses (`true`) or resumes (`false`) the queue, as `pause` and `resume` do. */
  paused?: boolean;
  /** The tasks handed out per period (a token bucket); `null` removes the limit. */
  rateLimit?: RateLimit | null;
  /** The queue's tasks leased at once, at least 1; `null` removes the cap. */
  maxLeased?: number | null;
  /** Tasks of one group leased at once, at least 1; `null` removes the cap. */
  groupConcurrency?: number | null;
  /** A rate limit for each group, a bucket of its own; `null` removes it. */
  groupRateLimit?: RateLimit | null;
}

export interface ScheduleOptions {
  queue: string;
  everyMs?: number;
  cron?: string;
  tz?: string;
  payload?: Payload;
  kind?: string;
  deadlineMs?: number;
}

function seg(s: string): string {
  return encodeURIComponent(s);
}

function taskPath(ref: TaskRef): string {
  return typeof ref === "number"
    ? `/v1/tasks/${ref}`
    : `/v1/queues/${seg(ref.queue)}/keys/${seg(ref.key)}`;
}

function compact(obj: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));
}

function taskBody(spec: TaskSpec): Record<string, unknown> {
  return compact({
    ...payloadFields(spec.payload),
    kind: spec.kind,
    key: spec.key,
    delay_ms: spec.delayMs,
    run_at: spec.runAt && formatTime(spec.runAt),
    priority: spec.priority,
    max_attempts: spec.maxAttempts,
    lease_ms: spec.leaseMs,
    traceparent: spec.traceparent,
    group: spec.group,
    after: spec.after?.length ? spec.after : undefined,
    after_batch: spec.afterBatch?.length ? spec.afterBatch : undefined,
    if_parent_fails: spec.ifParentFails,
  });
}

function withTimeout(ms: number, signal?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(ms);
  return signal === undefined ? timeout : AbortSignal.any([timeout, signal]);
}

export class Client {
  readonly url: string;
  readonly token: string | undefined;
  readonly timeoutMs: number;

  constructor(options: ClientOptions = {}) {
    this.url = (options.url ?? DEFAULT_URL).replace(/\/+$/, "");
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** One request; answers the decoded JSON body (undefined when empty). */
  async request(
    method: string,
    path: string,
    body?: unknown,
    extraTimeoutMs = 0,
    signal?: AbortSignal,
  ): Promise<Wire> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
    let response: Response;
    try {
      response = await fetch(this.url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: withTimeout(this.timeoutMs + extraTimeoutMs, signal),
      });
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      throw new ConnectionFailed(`${this.url}: ${String(e)}`);
    }
    const text = await response.text();
    let parsed: Wire = undefined;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (response.status >= 400) {
      const detail = parsed?.error;
      if (detail && typeof detail.code === "string") {
        throw errorFor(detail.code, String(detail.message), response.status);
      }
      throw errorFor("unknown", text || response.statusText, response.status);
    }
    return parsed;
  }

  /** Create one task; with `key`, a live (or recently done) task with it wins. */
  async enqueue(queue: string, payload?: Payload, options: TaskOptions = {}): Promise<Enqueued> {
    const body = await this.request("POST", `/v1/queues/${seg(queue)}/tasks`, taskBody({ ...options, payload }));
    return body.tasks[0] as Enqueued;
  }

  /** Create a batch atomically (at most 10,000); results in request order. */
  async enqueueMany(queue: string, tasks: TaskSpec[]): Promise<Enqueued[]> {
    const body = await this.request("POST", `/v1/queues/${seg(queue)}/tasks`, {
      tasks: tasks.map(taskBody),
    });
    return body.tasks as Enqueued[];
  }

  async claim(queue: string, worker: string, options: ClaimOptions = {}): Promise<Task[]> {
    const waitMs = options.waitMs ?? 0;
    const body = await this.request(
      "POST",
      `/v1/queues/${seg(queue)}/claim`,
      compact({ worker, max: options.max ?? 1, lease_ms: options.leaseMs, wait_ms: waitMs }),
      waitMs,
    );
    return (body.tasks as Wire[]).map(taskOf);
  }

  /**
   * Complete a task (it is deleted), or re-arm it at `rescheduleAt`.
   *
   * `result` (any JSON of at most 4,096 bytes written compactly) is handed to
   * every task still waiting for this one, which reads it in its
   * `deps.parentResults`; not with `rescheduleAt`. `null` leaves no result: the
   * API does not tell JSON null from none. A result the server refuses (not
   * JSON, too large) throws `BadRequest` and the task stays leased.
   */
  async ack(id: number, token: string, options: { rescheduleAt?: Date; result?: Json } = {}): Promise<void> {
    const at = options.rescheduleAt;
    if (at !== undefined && options.result !== undefined) {
      throw new RangeError("give result or rescheduleAt, not both");
    }
    await this.request(
      "POST",
      `/v1/tasks/${id}/ack`,
      compact({ token, reschedule_at: at && formatTime(at), result: options.result }),
    );
  }

  async ackMany(acks: { id: number; token: string }[]): Promise<AckResult[]> {
    const body = await this.request("POST", "/v1/ack", { acks });
    return (body.results as Wire[]).map((r) => ({
      id: r.id,
      status: r.status,
      code: r.error?.code ?? null,
    }));
  }

  async fail(
    id: number,
    token: string,
    message: string,
    options: { retryAt?: Date; discard?: boolean } = {},
  ): Promise<Task> {
    const at = options.retryAt;
    const body = compact({
      token,
      message,
      retry_at: at && formatTime(at),
      discard: options.discard || undefined,
    });
    return taskOf(await this.request("POST", `/v1/tasks/${id}/fail`, body));
  }

  async release(id: number, token: string): Promise<void> {
    await this.request("POST", `/v1/tasks/${id}/release`, { token });
  }

  async extend(id: number, token: string, leaseMs: number): Promise<Task> {
    return taskOf(await this.request("POST", `/v1/tasks/${id}/extend`, { token, lease_ms: leaseMs }));
  }

  /**
   * Which of these leases (1 to 10,000, each the id and token of a claim) are
   * no longer held: the task is gone (cancelled, completed), its lease
   * expired, or another claim holds it now. Answers their ids in request
   * order at once when there are some; otherwise waits up to `waitMs` (at
   * most 30 s) for one to be lost, and answers `[]` if none was. `signal`
   * abandons the wait (the promise rejects with its reason).
   */
  async waitLeasesLost(
    leases: { id: number; token: string }[],
    options: { waitMs?: number; signal?: AbortSignal } = {},
  ): Promise<number[]> {
    const waitMs = options.waitMs ?? 0;
    const body = await this.request(
      "POST",
      "/v1/leases/wait",
      { leases: leases.map(({ id, token }) => ({ id, token })), wait_ms: waitMs },
      waitMs,
      options.signal,
    );
    return body.lost as number[];
  }

  async snooze(id: number, token: string, runAt: Date): Promise<Task> {
    const body = { token, run_at: formatTime(runAt) };
    return taskOf(await this.request("POST", `/v1/tasks/${id}/snooze`, body));
  }

  async get(ref: TaskRef): Promise<Task> {
    return taskOf(await this.request("GET", taskPath(ref)));
  }

  async update(
    ref: TaskRef,
    changes: { payload?: Payload; runAt?: Date; priority?: number },
  ): Promise<Task> {
    const body = compact({
      ...payloadFields(changes.payload),
      run_at: changes.runAt && formatTime(changes.runAt),
      priority: changes.priority,
    });
    return taskOf(await this.request("PATCH", taskPath(ref), body));
  }

  async cancel(ref: TaskRef): Promise<void> {
    await this.request("DELETE", taskPath(ref));
  }

  /** A dead task back to ready, with its attempts reset. */
  async retry(id: number): Promise<Task> {
    return taskOf(await this.request("POST", `/v1/tasks/${id}/retry`, {}));
  }

  /** Every dead task of a queue back to ready; answers how many. */
  async retryDead(queue: string): Promise<number> {
    return (await this.request("POST", `/v1/queues/${seg(queue)}/retry`, {})).retried as number;
  }

  async tasks(
    queue: string,
    options: { state?: TaskState; order?: "id" | "attempts_desc"; limit?: number; cursor?: string } = {},
  ): Promise<TaskPage> {
    const params = new URLSearchParams(
      Object.entries(compact(options)).map(([k, v]): [string, string] => [k, String(v)]),
    ).toString();
    const body = await this.request("GET", `/v1/queues/${seg(queue)}/tasks${params ? `?${params}` : ""}`);
    return { tasks: (body.tasks as Wire[]).map(taskOf), nextCursor: body.next_cursor ?? null };
  }

  async stats(): Promise<QueueStats[]> {
    return ((await this.request("GET", "/v1/queues")).queues as Wire[]).map(statsOf);
  }

  async pause(queue: string): Promise<void> {
    await this.request("POST", `/v1/queues/${seg(queue)}/pause`, {});
  }

  async resume(queue: string): Promise<void> {
    await this.request("POST", `/v1/queues/${seg(queue)}/resume`, {});
  }

  /** A queue's settings, its claim limits among them; `NotFound` for a queue nobody created. */
  async settings(queue: string): Promise<QueueSettings> {
    return settingsOf(await this.request("GET", `/v1/queues/${seg(queue)}`));
  }

  /**
   * Create a queue or change its settings; absent ones keep their values, `null` removes a limit.
   *
   * Each change applies live: the next claim obeys it, and a setting it
   * does not name keeps its value. A value the server refuses (a limit of
   * 0, a `backoffBaseMs` over the `backoffMaxMs`) throws `BadRequest` and
   * changes nothing. Resolves to the settings now in force.
   */
  async putQueue(queue: string, options: QueueOptions): Promise<QueueSettings> {
    const body = compact({
      lease_ms: options.leaseMs,
      max_attempts: options.maxAttempts,
      backoff_base_ms: options.backoffBaseMs,
      backoff_max_ms: options.backoffMaxMs,
      dedup_window_ms: options.dedupWindowMs,
      max_payload: options.maxPayload,
      paused: options.paused,
      // compact drops what is undefined (kept); null stays, and removes.
      rate_limit: rateLimitFields(options.rateLimit),
      max_leased: options.maxLeased,
      group_concurrency: options.groupConcurrency,
      group_rate_limit: rateLimitFields(options.groupRateLimit),
    });
    return settingsOf(await this.request("PUT", `/v1/queues/${seg(queue)}`, body));
  }

  /** Create or replace a schedule: one task per tick, `everyMs` or `cron`. */
  async putSchedule(name: string, options: ScheduleOptions): Promise<Schedule> {
    if ((options.everyMs === undefined) === (options.cron === undefined)) {
      throw new TypeError("a schedule needs exactly one of everyMs and cron");
    }
    const body = compact({
      queue: options.queue,
      ...payloadFields(options.payload),
      every_ms: options.everyMs,
      cron: options.cron,
      tz: options.tz,
      kind: options.kind,
      deadline_ms: options.deadlineMs,
    });
    return scheduleOf(await this.request("PUT", `/v1/schedules/${seg(name)}`, body));
  }

  async deleteSchedule(name: string): Promise<void> {
    await this.request("DELETE", `/v1/schedules/${seg(name)}`);
  }

  async schedules(): Promise<Schedule[]> {
    return ((await this.request("GET", "/v1/schedules")).schedules as Wire[]).map(scheduleOf);
  }

  /** The server's clock, the only clock tasks are judged by. */
  async time(): Promise<Date> {
    return new Date((await this.request("GET", "/v1/time")).now as string);
  }
}
