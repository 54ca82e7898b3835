/**
 * The producer and admin side of Spool: one method per API call, over `fetch`.
 *
 * A task is addressed by its id, or by `{ queue, key }` for a live task
 * enqueued with that idempotency key. Durations are milliseconds (`...Ms`),
 * times are `Date`s. Every error answer throws the class of its stable code.
 */
import { type Enqueued, type Json, type ParentFailure, type Payload, type QueueSettings, type QueueStats, type RateLimit, type Schedule, type Task, type TaskPage, type TaskState, type Wire } from "./models.js";
export declare const DEFAULT_URL = "http://127.0.0.1:7700";
export interface ClientOptions {
    /** Default `http://127.0.0.1:7700`. */
    url?: string;
    /** Bearer token, when the server was started with one. */
    token?: string;
    /** How long a request may take (a claim adds its wait); default 30 s. */
    timeoutMs?: number;
}
/** A task id, or the queue and idempotency key of a live task. */
export type TaskRef = number | {
    queue: string;
    key: string;
};
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
export declare class Client {
    readonly url: string;
    readonly token: string | undefined;
    readonly timeoutMs: number;
    constructor(options?: ClientOptions);
    /** One request; answers the decoded JSON body (undefined when empty). */
    request(method: string, path: string, body?: unknown, extraTimeoutMs?: number, signal?: AbortSignal): Promise<Wire>;
    /** Create one task; with `key`, a live (or recently done) task with it wins. */
    enqueue(queue: string, payload?: Payload, options?: TaskOptions): Promise<Enqueued>;
    /** Create a batch atomically (at most 10,000); results in request order. */
    enqueueMany(queue: string, tasks: TaskSpec[]): Promise<Enqueued[]>;
    claim(queue: string, worker: string, options?: ClaimOptions): Promise<Task[]>;
    /**
     * Complete a task (it is deleted), or re-arm it at `rescheduleAt`.
     *
     * `result` (any JSON of at most 4,096 bytes written compactly) is handed to
     * every task still waiting for this one, which reads it in its
     * `deps.parentResults`; not with `rescheduleAt`. `null` leaves no result: the
     * API does not tell JSON null from none. A result the server refuses (not
     * JSON, too large) throws `BadRequest` and the task stays leased.
     */
    ack(id: number, token: string, options?: {
        rescheduleAt?: Date;
        result?: Json;
    }): Promise<void>;
    ackMany(acks: {
        id: number;
        token: string;
    }[]): Promise<AckResult[]>;
    fail(id: number, token: string, message: string, options?: {
        retryAt?: Date;
        discard?: boolean;
    }): Promise<Task>;
    release(id: number, token: string): Promise<void>;
    extend(id: number, token: string, leaseMs: number): Promise<Task>;
    /**
     * Which of these leases (1 to 10,000, each the id and token of a claim) are
     * no longer held: the task is gone (cancelled, completed), its lease
     * expired, or another claim holds it now. Answers their ids in request
     * order at once when there are some; otherwise waits up to `waitMs` (at
     * most 30 s) for one to be lost, and answers `[]` if none was. `signal`
     * abandons the wait (the promise rejects with its reason).
     */
    waitLeasesLost(leases: {
        id: number;
        token: string;
    }[], options?: {
        waitMs?: number;
        signal?: AbortSignal;
    }): Promise<number[]>;
    snooze(id: number, token: string, runAt: Date): Promise<Task>;
    get(ref: TaskRef): Promise<Task>;
    update(ref: TaskRef, changes: {
        payload?: Payload;
        runAt?: Date;
        priority?: number;
    }): Promise<Task>;
    cancel(ref: TaskRef): Promise<void>;
    /** A dead task back to ready, with its attempts reset. */
    retry(id: number): Promise<Task>;
    /** Every dead task of a queue back to ready; answers how many. */
    retryDead(queue: string): Promise<number>;
    tasks(queue: string, options?: {
        state?: TaskState;
        order?: "id" | "attempts_desc";
        limit?: number;
        cursor?: string;
    }): Promise<TaskPage>;
    stats(): Promise<QueueStats[]>;
    pause(queue: string): Promise<void>;
    resume(queue: string): Promise<void>;
    /** A queue's settings, its claim limits among them; `NotFound` for a queue nobody created. */
    settings(queue: string): Promise<QueueSettings>;
    /**
     * Create a queue or change its settings; absent ones keep their values, `null` removes a limit.
     *
     * Each change applies live: the next claim obeys it, and a setting it
     * does not name keeps its value. A value the server refuses (a limit of
     * 0, a `backoffBaseMs` over the `backoffMaxMs`) throws `BadRequest` and
     * changes nothing. Resolves to the settings now in force.
     */
    putQueue(queue: string, options: QueueOptions): Promise<QueueSettings>;
    /** Create or replace a schedule: one task per tick, `everyMs` or `cron`. */
    putSchedule(name: string, options: ScheduleOptions): Promise<Schedule>;
    deleteSchedule(name: string): Promise<void>;
    schedules(): Promise<Schedule[]>;
    /** The server's clock, the only clock tasks are judged by. */
    time(): Promise<Date>;
}
