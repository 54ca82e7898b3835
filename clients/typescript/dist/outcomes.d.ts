/**
 * What a handler can say besides "done": retry at a time, discard, or snooze.
 *
 * Throw one (or return it) from a handler. `Retry` and `Snooze` take an
 * absolute `at` or a `delayMs`; a delay counts on the server's clock (the
 * worker learns its offset when it starts), the only clock tasks are judged by.
 */
export interface When {
    at?: Date;
    delayMs?: number;
}
/** Base of the explicit outcomes. */
export declare class Outcome extends Error {
}
/** Fail this attempt and run again at `at` (or after `delayMs`) instead of the backoff. */
export declare class Retry extends Outcome {
    readonly when: When;
    constructor(message?: string, when?: When);
}
/** A permanent failure: the task goes dead at once, whatever attempts remain. */
export declare class Discard extends Outcome {
    constructor(message?: string);
}
/** Not now: run again at `at` (or after `delayMs`) without counting the attempt. */
export declare class Snooze extends Outcome {
    readonly when: When;
    constructor(when: When);
}
/** The error a run's AbortSignal carries when its deadline passes. */
export declare class DeadlineExceeded extends Error {
    constructor();
}
/**
 * The error a run's AbortSignal carries when its lease is lost: the task was
 * cancelled (or completed, or its lease ran out and another claim holds it).
 */
export declare class TaskCancelled extends Error {
    constructor();
}
