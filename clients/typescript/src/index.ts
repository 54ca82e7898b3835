/**
 * Spool client and worker runtime for Node: enqueue tasks over HTTP, run them with handlers.
 *
 * ```ts
 * import { Client, Worker } from "spool-queue";
 * const client = new Client({ url: "http://127.0.0.1:7700" });
 * await client.enqueue("emails", { to: "ada@example.com" });
 * ```
 */

export * from "./client.js";
export * from "./errors.js";
export type {
  Counts,
  Dependencies,
  Enqueued,
  Json,
  Lease,
  ParentFailure,
  Payload,
  QueueSettings,
  QueueStats,
  RateLimit,
  Schedule,
  Task,
  TaskError,
  TaskPage,
  TaskState,
} from "./models.js";
export * from "./outcomes.js";
export * from "./worker.js";
