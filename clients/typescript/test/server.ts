/**
 * A real `spool serve` for the tests: embedded (temp data dir) or PostgreSQL.
 *
 * The binary is `$SPOOL_BIN`, else the workspace's debug build (`cargo build
 * -p spool-cli`). PostgreSQL comes from `$DATABASE_URL` (default
 * postgres://postgres@127.0.0.1:5432/test); each server gets its own schema,
 * dropped when it stops. A missing binary or an unreachable database fails the
 * suite with a clear message; nothing is skipped.
 */

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, openSync, closeSync } from "node:fs";
import { after, before } from "node:test";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "../src/index.js";

export const STORES = ["embedded", "postgres"] as const;
export type Store = (typeof STORES)[number];

const here = dirname(fileURLToPath(import.meta.url));
// build/test/ -> clients/typescript -> repository root
const repo = resolve(here, "..", "..", "..", "..");
const databaseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

function spoolBin(): string {
  if (process.env.SPOOL_BIN) return process.env.SPOOL_BIN;
  const target = process.env.CARGO_TARGET_DIR ?? join(repo, "target");
  const path = join(target, "debug", "spool");
  if (!existsSync(path)) {
    throw new Error(`no spool binary at ${path}: run \`cargo build -p spool-cli\` or set SPOOL_BIN`);
  }
  return path;
}

export class Server {
  readonly url: string;
  private constructor(
    readonly store: Store,
    url: string,
    private readonly proc: ChildProcess,
    private readonly dir: string,
    private readonly schema: string | undefined,
  ) {
    this.url = url;
  }

  static async start(store: Store): Promise<Server> {
    const dir = mkdtempSync(join(tmpdir(), "spool-ts-"));
    const args = ["serve", "--listen", "127.0.0.1:0"];
    let schema: string | undefined;
    if (store === "postgres") {
      schema = `sdk_ts_${randomBytes(4).toString("hex")}`;
      args.push("--postgres", databaseUrl, "--pg-schema", schema);
    } else {
      args.push("--data", join(dir, "data"));
    }
    const logPath = join(dir, "serve.log");
    const log = openSync(logPath, "w");
    const proc = spawn(spoolBin(), args, { stdio: ["ignore", log, log] });
    closeSync(log);
    const started = Date.now();
    for (;;) {
      const text = readFileSync(logPath, "utf8");
      const m = /listening on (http:\/\/[0-9.:]+)/.exec(text);
      if (m?.[1]) return new Server(store, m[1], proc, dir, schema);
      if (proc.exitCode !== null || Date.now() - started > 30_000) {
        proc.kill("SIGKILL");
        const hint = store === "postgres" ? ` (is PostgreSQL up at ${databaseUrl}?)` : "";
        throw new Error(`spool serve did not start${hint}:\n${text}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    const exited = new Promise((r) => this.proc.once("exit", r));
    this.proc.kill("SIGTERM");
    await exited;
    if (this.schema) {
      spawnSync("psql", [databaseUrl, "-qc", `DROP SCHEMA IF EXISTS ${this.schema} CASCADE`]);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Start a server for the enclosing suite (stopped after it) and a client of it. */
export function useServer(store: Store): { readonly server: Server; readonly client: Client } {
  const env = {} as { server: Server; client: Client };
  before(async () => {
    env.server = await Server.start(store);
    env.client = new Client({ url: env.server.url });
  });
  after(() => env.server.stop());
  return env;
}

/** A queue of the calling test's own, so tests share a server without seeing each other. */
export function freshQueue(): string {
  return `q-${randomBytes(6).toString("hex")}`;
}

/** Poll `cond` until it holds; fail after `limitMs`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, limitMs = 20_000): Promise<void> {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > limitMs) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resolves with a child process's exit code once it has exited. */
export function exited(p: ChildProcess): Promise<number | null> {
  return p.exitCode !== null ? Promise.resolve(p.exitCode) : new Promise((r) => p.once("exit", (code) => r(code)));
}
