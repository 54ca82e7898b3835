/**
 * What the API answers, as typed values, and the conversions to and from the wire.
 *
 * Timestamps are `Date`s (the wire carries RFC 3339 with milliseconds). A
 * payload is the JSON value it was enqueued as, or a `Uint8Array` when it was
 * enqueued as bytes (the wire's `payload_base64`). JSON integers beyond 2^53
 * lose precision in JavaScript: carry such numbers as strings or bytes.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Payload = Json | Uint8Array;

export interface Enqueued {
  id: number;
  /** True when the key matched a live or recently completed task: nothing was created. */
  duplicate: boolean;
}

export interface Lease {
  owner: string;
  expiresAt: Date;
  /** Only in a claim's answer. */
  token?: string;
}

export interface TaskError {
  attempt: number;
  at: Date;
  message: string;
}

/** `pending`: waits for the tasks named in its `after` to end. */
export type TaskState = "scheduled" | "ready" | "leased" | "dead" | "pending";

/** What `ifParentFails` may say: cancel the task too (the default), or run it anyway. */
export type ParentFailure = "cancel" | "run";

/** The tasks a task waits for and how they ended so far. */
export interface Dependencies {
  /** The ids named at enqueue, each once, in the order named. */
  after: number[];
  /** Those that have not ended yet, ascending: the task is `pending` while any is left. */
  waitingOn: number[];
  /** How many ended dead or cancelled. */
  parentsFailed: number;
  /** How many ended completed: what a batch's callback reads. */
  parentsCompleted: number;
  ifParentFails: ParentFailure;
  /** The results the parents that completed with one left, by parent id (ascending). */
  parentResults: Map<number, Json>;
}

export interface Task {
  id: number;
  queue: string;
  kind: string;
  payload: Payload;
  priority: number;
  runAt: Date;
  key: string | null;
  attempt: number;
  maxAttempts: number;
  leaseMs: number | null;
  state: TaskState;
  lease: Lease | null;
  errors: TaskError[];
  createdAt: Date;
  updatedAt: Date;
  /** The W3C trace context given at enqueue, if any. */
  traceparent: string | null;
  /** The task's group in its queue, if any. */
  group: string | null;
  /** What the task waits for, when it was enqueued with `after`. */
  deps: Dependencies | null;
}

export interface Counts {
  scheduled: number;
  ready: number;
  leased: number;
  dead: number;
  /** Tasks waiting for others to end. */
  pending: number;
}

export interface QueueStats {
  name: string;
  paused: boolean;
  counts: Counts;
  kinds: Record<string, Counts>;
  oldestReadyAgeMs: number | null;
  /** Whole tokens left in the rate limit's bucket; null without one. */
  rateTokens: number | null;
}

/**
 * A rate limit, a token bucket: at most `limit` tasks per `periodMs`, at most
 * `burst` at once after a quiet spell; each at least 1. The bucket refills
 * continuously: `{ limit: 10, periodMs: 1000, burst: 5 }` hands out a task
 * every 100 ms.
 */
export interface RateLimit {
  limit: number;
  periodMs: number;
  burst: number;
}

export interface QueueSettings {
  leaseMs: number;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  dedupWindowMs: number;
  maxPayload: number;
  paused: boolean;
  /** The queue's rate limit at claim; `null`: no limit. */
  rateLimit: RateLimit | null;
  /** The queue's tasks leased at once, across every worker; `null`: no cap. */
  maxLeased: number | null;
  /** Tasks of one group leased at once; `null`: no cap. */
  groupConcurrency: number | null;
  /** A rate limit for each group, with a bucket of its own; `null`: no limit. */
  groupRateLimit: RateLimit | null;
}

export interface Schedule {
  name: string;
  queue: string;
  kind: string | null;
  payload: Payload;
  everyMs: number | null;
  cron: string | null;
  tz: string | null;
  deadlineMs: number | null;
  lastFireAt: Date | null;
  nextFireAt: Date | null;
}

export interface TaskPage {
  tasks: Task[];
  nextCursor: string | null;
}

// The wire's shapes are read leniently: the server's OpenAPI document is the contract.
export type Wire = any;

/** A Date for the wire: RFC 3339, UTC, milliseconds (what `toISOString` gives). */
export function formatTime(at: Date): string {
  return at.toISOString();
}

function time(text: string): Date {
  return new Date(text);
}

function optTime(text: string | null | undefined): Date | null {
  return text == null ? null : new Date(text);
}

/** The wire fields for a payload: bytes go as base64, anything else as JSON. */
export function payloadFields(payload: Payload | undefined): Record<string, unknown> {
  if (payload instanceof Uint8Array) {
    return { payload_base64: Buffer.from(payload).toString("base64") };
  }
  return payload === undefined ? {} : { payload };
}

export function payloadOf(obj: Wire): Payload {
  if (obj.payload_base64 != null) {
    return new Uint8Array(Buffer.from(obj.payload_base64 as string, "base64"));
  }
  return (obj.payload ?? null) as Json;
}

export function taskOf(obj: Wire): Task {
  const lease = obj.lease as Wire;
  return {
    id: obj.id,
    queue: obj.queue,
    kind: obj.kind,
    payload: payloadOf(obj),
    priority: obj.priority,
    runAt: time(obj.run_at),
    key: obj.key ?? null,
    attempt: obj.attempt,
    maxAttempts: obj.max_attempts,
    leaseMs: obj.lease_ms ?? null,
    state: obj.state,
    lease:
      lease == null
        ? null
        : { owner: lease.owner, expiresAt: time(lease.expires_at), token: lease.token ?? undefined },
    errors: ((obj.errors ?? []) as Wire[]).map((e) => ({
      attempt: e.attempt,
      at: time(e.at),
      message: e.message,
    })),
    createdAt: time(obj.created_at),
    updatedAt: time(obj.updated_at),
    traceparent: obj.traceparent ?? null,
    group: obj.group ?? null,
    deps: depsOf(obj),
  };
}

/** A task's dependency fields; `null` for a task that waits for nothing. */
function depsOf(obj: Wire): Dependencies | null {
  if (obj.after === undefined) return null;
  return {
    after: obj.after,
    waitingOn: obj.waiting_on,
    parentsFailed: obj.parents_failed,
    parentsCompleted: obj.parents_completed,
    ifParentFails: obj.if_parent_fails,
    parentResults: new Map(((obj.parent_results ?? []) as Wire[]).map((r) => [r.id as number, r.result as Json])),
  };
}

/** Servers older than dependencies send no `pending`: none then. */
function countsOf(obj: Wire): Counts {
  return { ...obj, pending: obj.pending ?? 0 } as Counts;
}

export function statsOf(obj: Wire): QueueStats {
  const kinds = (obj.kinds ?? {}) as Record<string, Wire>;
  return {
    name: obj.name,
    paused: obj.paused,
    counts: countsOf(obj.counts),
    kinds: Object.fromEntries(Object.entries(kinds).map(([k, c]) => [k, countsOf(c)])),
    oldestReadyAgeMs: obj.oldest_ready_age_ms ?? null,
    rateTokens: obj.rate_tokens ?? null,
  };
}

/** A rate limit for the wire: `undefined` stays absent (keep), `null` removes. */
export function rateLimitFields(
  limit: RateLimit | null | undefined,
): { limit: number; period_ms: number; burst: number } | null | undefined {
  return limit == null ? limit : { limit: limit.limit, period_ms: limit.periodMs, burst: limit.burst };
}

function rateLimitOf(obj: Wire): RateLimit | null {
  return obj == null ? null : { limit: obj.limit, periodMs: obj.period_ms, burst: obj.burst };
}

export function settingsOf(obj: Wire): QueueSettings {
  return {
    leaseMs: obj.lease_ms,
    maxAttempts: obj.max_attempts,
    backoffBaseMs: obj.backoff_base_ms,
    backoffMaxMs: obj.backoff_max_ms,
    dedupWindowMs: obj.dedup_window_ms,
    maxPayload: obj.max_payload,
    paused: obj.paused,
    rateLimit: rateLimitOf(obj.rate_limit),
    maxLeased: obj.max_leased ?? null,
    groupConcurrency: obj.group_concurrency ?? null,
    groupRateLimit: rateLimitOf(obj.group_rate_limit),
  };
}

export function scheduleOf(obj: Wire): Schedule {
  return {
    name: obj.name,
    queue: obj.queue,
    kind: obj.kind ?? null,
    payload: payloadOf(obj),
    everyMs: obj.every_ms ?? null,
    cron: obj.cron ?? null,
    tz: obj.tz ?? null,
    deadlineMs: obj.deadline_ms ?? null,
    lastFireAt: optTime(obj.last_fire_at),
    nextFireAt: optTime(obj.next_fire_at),
  };
}
