/**
 * The producer and admin side of Spool: one method per API call, over `fetch`.
 *
 * A task is addressed by its id, or by `{ queue, key }` for a live task
 * enqueued with that idempotency key. Durations are milliseconds (`...Ms`),
 * times are `Date`s. Every error answer throws the class of its stable code.
 */
import { ConnectionFailed, errorFor } from "./errors.js";
import { formatTime, payloadFields, rateLimitFields, scheduleOf, settingsOf, statsOf, taskOf, } from "./models.js";
export const DEFAULT_URL = "http://127.0.0.1:7700";
function seg(s) {
    return encodeURIComponent(s);
}
function taskPath(ref) {
    return typeof ref === "number"
        ? `/v1/tasks/${ref}`
        : `/v1/queues/${seg(ref.queue)}/keys/${seg(ref.key)}`;
}
function compact(obj) {
    return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));
}
function taskBody(spec) {
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
function withTimeout(ms, signal) {
    const timeout = AbortSignal.timeout(ms);
    return signal === undefined ? timeout : AbortSignal.any([timeout, signal]);
}
export class Client {
    url;
    token;
    timeoutMs;
    constructor(options = {}) {
        this.url = (options.url ?? DEFAULT_URL).replace(/\/+$/, "");
        this.token = options.token;
        this.timeoutMs = options.timeoutMs ?? 30_000;
    }
    /** One request; answers the decoded JSON body (undefined when empty). */
    async request(method, path, body, extraTimeoutMs = 0, signal) {
        const headers = {};
        if (body !== undefined)
            headers["content-type"] = "application/json";
        if (this.token !== undefined)
            headers.authorization = `Bearer ${this.token}`;
        let response;
        try {
            response = await fetch(this.url + path, {
                method,
                headers,
                body: body === undefined ? undefined : JSON.stringify(body),
                signal: withTimeout(this.timeoutMs + extraTimeoutMs, signal),
            });
        }
        catch (e) {
            if (signal?.aborted)
                throw signal.reason;
            throw new ConnectionFailed(`${this.url}: ${String(e)}`);
        }
        const text = await response.text();
        let parsed = undefined;
        if (text) {
            try {
                parsed = JSON.parse(text);
            }
            catch {
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
    async enqueue(queue, payload, options = {}) {
        const body = await this.request("POST", `/v1/queues/${seg(queue)}/tasks`, taskBody({ ...options, payload }));
        return body.tasks[0];
    }
    /** Create a batch atomically (at most 10,000); results in request order. */
    async enqueueMany(queue, tasks) {
        const body = await this.request("POST", `/v1/queues/${seg(queue)}/tasks`, {
            tasks: tasks.map(taskBody),
        });
        return body.tasks;
    }
    async claim(queue, worker, options = {}) {
        const waitMs = options.waitMs ?? 0;
        const body = await this.request("POST", `/v1/queues/${seg(queue)}/claim`, compact({ worker, max: options.max ?? 1, lease_ms: options.leaseMs, wait_ms: waitMs }), waitMs);
        return body.tasks.map(taskOf);
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
    async ack(id, token, options = {}) {
        const at = options.rescheduleAt;
        if (at !== undefined && options.result !== undefined) {
            throw new RangeError("give result or rescheduleAt, not both");
        }
        await this.request("POST", `/v1/tasks/${id}/ack`, compact({ token, reschedule_at: at && formatTime(at), result: options.result }));
    }
    async ackMany(acks) {
        const body = await this.request("POST", "/v1/ack", { acks });
        return body.results.map((r) => ({
            id: r.id,
            status: r.status,
            code: r.error?.code ?? null,
        }));
    }
    async fail(id, token, message, options = {}) {
        const at = options.retryAt;
        const body = compact({
            token,
            message,
            retry_at: at && formatTime(at),
            discard: options.discard || undefined,
        });
        return taskOf(await this.request("POST", `/v1/tasks/${id}/fail`, body));
    }
    async release(id, token) {
        await this.request("POST", `/v1/tasks/${id}/release`, { token });
    }
    async extend(id, token, leaseMs) {
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
    async waitLeasesLost(leases, options = {}) {
        const waitMs = options.waitMs ?? 0;
        const body = await this.request("POST", "/v1/leases/wait", { leases: leases.map(({ id, token }) => ({ id, token })), wait_ms: waitMs }, waitMs, options.signal);
        return body.lost;
    }
    async snooze(id, token, runAt) {
        const body = { token, run_at: formatTime(runAt) };
        return taskOf(await this.request("POST", `/v1/tasks/${id}/snooze`, body));
    }
    async get(ref) {
        return taskOf(await this.request("GET", taskPath(ref)));
    }
    async update(ref, changes) {
        const body = compact({
            ...payloadFields(changes.payload),
            run_at: changes.runAt && formatTime(changes.runAt),
            priority: changes.priority,
        });
        return taskOf(await this.request("PATCH", taskPath(ref), body));
    }
    async cancel(ref) {
        await this.request("DELETE", taskPath(ref));
    }
    /** A dead task back to ready, with its attempts reset. */
    async retry(id) {
        return taskOf(await this.request("POST", `/v1/tasks/${id}/retry`, {}));
    }
    /** Every dead task of a queue back to ready; answers how many. */
    async retryDead(queue) {
        return (await this.request("POST", `/v1/queues/${seg(queue)}/retry`, {})).retried;
    }
    async tasks(queue, options = {}) {
        const params = new URLSearchParams(Object.entries(compact(options)).map(([k, v]) => [k, String(v)])).toString();
        const body = await this.request("GET", `/v1/queues/${seg(queue)}/tasks${params ? `?${params}` : ""}`);
        return { tasks: body.tasks.map(taskOf), nextCursor: body.next_cursor ?? null };
    }
    async stats() {
        return (await this.request("GET", "/v1/queues")).queues.map(statsOf);
    }
    async pause(queue) {
        await this.request("POST", `/v1/queues/${seg(queue)}/pause`, {});
    }
    async resume(queue) {
        await this.request("POST", `/v1/queues/${seg(queue)}/resume`, {});
    }
    /** A queue's settings, its claim limits among them; `NotFound` for a queue nobody created. */
    async settings(queue) {
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
    async putQueue(queue, options) {
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
    async putSchedule(name, options) {
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
    async deleteSchedule(name) {
        await this.request("DELETE", `/v1/schedules/${seg(name)}`);
    }
    async schedules() {
        return (await this.request("GET", "/v1/schedules")).schedules.map(scheduleOf);
    }
    /** The server's clock, the only clock tasks are judged by. */
    async time() {
        return new Date((await this.request("GET", "/v1/time")).now);
    }
}
