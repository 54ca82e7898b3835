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
import type { Client } from "./client.js";
import type { Dependencies, Json, Payload, Task } from "./models.js";
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
export declare const MAX_RESULT = 4096;
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
export declare class Worker {
    private readonly client;
    readonly id: string;
    private readonly concurrency;
    private readonly leaseMs;
    private readonly pollMs;
    private readonly timeoutMs;
    private readonly shutdownGraceMs;
    private readonly queues;
    private readonly acker;
    private watcher;
    private clockOffsetMs;
    private stopping;
    private cut;
    constructor(client: Client, options?: WorkerOptions);
    /** Register `fn` for a queue's tasks (only those of `options.kind`, if given). */
    handle(queue: string, fn: Handler, options?: HandleOptions): this;
    /** Stop claiming and shut down; a second call releases running tasks at once. */
    stop(): void;
    /**
     * Run until `stop()` (or SIGINT/SIGTERM, unless `handleSignals` is false),
     * then shut down gracefully; resolves once every task is settled.
     */
    run(options?: {
        handleSignals?: boolean;
    }): Promise<void>;
    /** How far the server's clock is from ours: Retry/Snooze delays count on its clock. */
    private learnClock;
    private serverTime;
    private acquire;
    /** `free` gives the run's slot back; it may be called more than once. */
    private runOne;
    private execute;
    /** Extend the lease each time half of it has passed, until the run ends. */
    private keepLease;
    private finish;
    /**
     * Ack on its own with the handler's value as the task's result. A value that
     * is not JSON or too large, or that the server refuses, fails the task with
     * the reason, as a throw would: never dropped unseen.
     */
    private ackResult;
    /** Tell the server how a run ended; if that fails, the lease expires and it runs again. */
    private report;
}
