/**
 * What the API answers, as typed values, and the conversions to and from the wire.
 *
 * Timestamps are `Date`s (the wire carries RFC 3339 with milliseconds). A
 * payload is the JSON value it was enqueued as, or a `Uint8Array` when it was
 * enqueued as bytes (the wire's `payload_base64`). JSON integers beyond 2^53
 * lose precision in JavaScript: carry such numbers as strings or bytes.
 */
/** A Date for the wire: RFC 3339, UTC, milliseconds (what `toISOString` gives). */
export function formatTime(at) {
    return at.toISOString();
}
function time(text) {
    return new Date(text);
}
function optTime(text) {
    return text == null ? null : new Date(text);
}
/** The wire fields for a payload: bytes go as base64, anything else as JSON. */
export function payloadFields(payload) {
    if (payload instanceof Uint8Array) {
        return { payload_base64: Buffer.from(payload).toString("base64") };
    }
    return payload === undefined ? {} : { payload };
}
export function payloadOf(obj) {
    if (obj.payload_base64 != null) {
        return new Uint8Array(Buffer.from(obj.payload_base64, "base64"));
    }
    return (obj.payload ?? null);
}
export function taskOf(obj) {
    const lease = obj.lease;
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
        lease: lease == null
            ? null
            : { owner: lease.owner, expiresAt: time(lease.expires_at), token: lease.token ?? undefined },
        errors: (obj.errors ?? []).map((e) => ({
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
function depsOf(obj) {
    if (obj.after === undefined)
        return null;
    return {
        after: obj.after,
        waitingOn: obj.waiting_on,
        parentsFailed: obj.parents_failed,
        parentsCompleted: obj.parents_completed,
        ifParentFails: obj.if_parent_fails,
        parentResults: new Map((obj.parent_results ?? []).map((r) => [r.id, r.result])),
    };
}
/** Servers older than dependencies send no `pending`: none then. */
function countsOf(obj) {
    return { ...obj, pending: obj.pending ?? 0 };
}
export function statsOf(obj) {
    const kinds = (obj.kinds ?? {});
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
export function rateLimitFields(limit) {
    return limit == null ? limit : { limit: limit.limit, period_ms: limit.periodMs, burst: limit.burst };
}
function rateLimitOf(obj) {
    return obj == null ? null : { limit: obj.limit, periodMs: obj.period_ms, burst: obj.burst };
}
export function settingsOf(obj) {
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
export function scheduleOf(obj) {
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
