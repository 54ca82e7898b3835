/**
 * What the API answers, as typed values, and the conversions to and from the wire.
 *
 * Timestamps are `Date`s (the wire carries RFC 3339 with milliseconds). A
 * payload is the JSON value it was enqueued as, or a `Uint8Array` when it was
 * enqueued as bytes (the wire's `payload_base64`). JSON integers beyond 2^53
 * lose precision in JavaScript: carry such numbers as strings or bytes.
 */
export type Json = null | boolean | number | string | Json[] | {
    [key: string]: Json;
};
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
export type Wire = any;
/** A Date for the wire: RFC 3339, UTC, milliseconds (what `toISOString` gives). */
export declare function formatTime(at: Date): string;
/** The wire fields for a payload: bytes go as base64, anything else as JSON. */
export declare function payloadFields(payload: Payload | undefined): Record<string, unknown>;
export declare function payloadOf(obj: Wire): Payload;
export declare function taskOf(obj: Wire): Task;
export declare function statsOf(obj: Wire): QueueStats;
/** A rate limit for the wire: `undefined` stays absent (keep), `null` removes. */
export declare function rateLimitFields(limit: RateLimit | null | undefined): {
    limit: number;
    period_ms: number;
    burst: number;
} | null | undefined;
export declare function settingsOf(obj: Wire): QueueSettings;
export declare function scheduleOf(obj: Wire): Schedule;
