/**
 * What a handler can say besides "done": retry at a time, discard, or snooze.
 *
 * Throw one (or return it) from a handler. `Retry` and `Snooze` take an
 * absolute `at` or a `delayMs`; a delay counts on the server's clock (the
 * worker learns its offset when it starts), the only clock tasks are judged by.
 */
/** Base of the explicit outcomes. */
export class Outcome extends Error {
}
/** Fail this attempt and run again at `at` (or after `delayMs`) instead of the backoff. */
export class Retry extends Outcome {
    when;
    constructor(message = "retry requested", when = {}) {
        super(message);
        this.name = "Retry";
        this.when = when;
    }
}
/** A permanent failure: the task goes dead at once, whatever attempts remain. */
export class Discard extends Outcome {
    constructor(message = "discarded") {
        super(message);
        this.name = "Discard";
    }
}
/** Not now: run again at `at` (or after `delayMs`) without counting the attempt. */
export class Snooze extends Outcome {
    when;
    constructor(when) {
        super("snoozed");
        if (when.at === undefined && when.delayMs === undefined) {
            throw new TypeError("Snooze needs at or delayMs");
        }
        this.name = "Snooze";
        this.when = when;
    }
}
/** The error a run's AbortSignal carries when its deadline passes. */
export class DeadlineExceeded extends Error {
    constructor() {
        super("deadline exceeded");
        this.name = "DeadlineExceeded";
    }
}
/**
 * The error a run's AbortSignal carries when its lease is lost: the task was
 * cancelled (or completed, or its lease ran out and another claim holds it).
 */
export class TaskCancelled extends Error {
    constructor() {
        super("task cancelled or its lease lost");
        this.name = "TaskCancelled";
    }
}
