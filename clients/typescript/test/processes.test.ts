// Worker processes against a real server: SIGKILL mid-task, SIGTERM, many processes.

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, afterEach, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { Client, NotFound } from "../src/index.js";
import { STORES, Server, exited, freshQueue, waitFor } from "./server.js";

const proc = join(dirname(fileURLToPath(import.meta.url)), "worker_proc.js");

function lines(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
}

for (const store of STORES) {
  describe(`worker processes (${store})`, () => {
    let server: Server;
    let client: Client;
    let dir: string;
    const procs: ChildProcess[] = [];
    before(async () => {
      server = await Server.start(store);
      client = new Client({ url: server.url });
      dir = mkdtempSync(join(tmpdir(), "spool-ts-procs-"));
    });
    afterEach(() => {
      for (const p of procs.splice(0)) if (p.exitCode === null) p.kill("SIGKILL");
    });
    after(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    async function start(queue: string, mode: string, ...args: string[]): Promise<[ChildProcess, string]> {
      const out = join(dir, `out-${queue}-${procs.length}`);
      const p = spawn(process.execPath, [proc, server.url, queue, mode, out, ...args], { stdio: "inherit" });
      procs.push(p);
      await waitFor(() => lines(out).includes("ready"));
      return [p, out];
    }

    it("runs a task again after its lease when its worker was killed", async () => {
      const q = freshQueue();
      const { id } = await client.enqueue(q, { ms: 60_000 });
      const [first, out1] = await start(q, "sleep", "4", "1000");
      await waitFor(() => lines(out1).includes(`start ${id}`));
      first.kill("SIGKILL");
      await exited(first);
      const [, out2] = await start(q, "sleep", "4", "1000");
      await waitFor(() => lines(out2).includes(`start ${id}`), 10_000);
      const task = await client.get(id);
      assert.equal(task.attempt, 2);
      assert.equal(task.errors.at(-1)?.message, "lease expired");
    });

    it("on SIGTERM lets running tasks finish and releases the rest", async () => {
      const q = freshQueue();
      const quick = (await client.enqueue(q, { ms: 1000 }, { priority: -2 })).id;
      const stuck = (await client.enqueue(q, { ms: 60_000 }, { priority: -1 })).id;
      const unstarted = (await client.enqueueMany(q, [{ payload: { ms: 0 } }, { payload: { ms: 0 } }])).map((e) => e.id);
      const [p, out] = await start(q, "sleep", "2", "30000", "2000");
      await waitFor(() => lines(out).includes(`start ${quick}`) && lines(out).includes(`start ${stuck}`));
      p.kill("SIGTERM");
      assert.equal(await exited(p), 0);
      assert.ok(lines(out).includes(`done ${quick}`));
      assert.ok(lines(out).includes("exited"));
      await assert.rejects(client.get(quick), NotFound);
      for (const id of [stuck, ...unstarted]) {
        const t = await client.get(id);
        assert.equal(t.state, "ready");
        assert.equal(t.attempt, 0);
      }
    });

    it("runs 10,000 tasks through four processes, each once", async () => {
      const q = freshQueue();
      const ids: number[] = [];
      for (let i = 0; i < 10_000; i += 2000) {
        const batch = Array.from({ length: 2000 }, (_, j) => ({ payload: { i: i + j } }));
        ids.push(...(await client.enqueueMany(q, batch)).map((e) => e.id));
      }
      const workers = await Promise.all([0, 1, 2, 3].map(() => start(q, "record", "16")));
      const ran = () => workers.flatMap(([, out]) => lines(out).filter((l) => /^\d+$/.test(l)).map(Number));
      await waitFor(() => ran().length >= ids.length, 240_000);
      for (const [p] of workers) p.kill("SIGTERM");
      for (const [p] of workers) assert.equal(await exited(p), 0);
      assert.deepEqual(ran().sort((a, b) => a - b), ids);
      assert.deepEqual((await client.tasks(q)).tasks, []);
    });
  });
}
