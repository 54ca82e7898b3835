// The READMEs' ten-line examples, compiled and run as written against a real server.
//
// The package README's producer and worker and the top README's "From Node"
// snippet are read from the Markdown itself and put in a fresh ESM project that
// depends on this package as `npm install ./clients/typescript` leaves it (a
// link in node_modules, used through dist/). There tsc checks them, strict and
// without Node's types (the declarations must not need them), and node runs
// them. Only the server's address is replaced: the suite's server listens on a
// free port, not on 7700.

import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { STORES, exited, useServer, waitFor } from "./server.js";

// build/test/ -> the package -> the repository
const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const repo = resolve(pkg, "..", "..");
const DEFAULT_URL = "http://127.0.0.1:7700";

function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
}

function snippets(): Record<string, string> {
  const [produce = "", consume = ""] = tsBlocks(readFileSync(join(pkg, "README.md"), "utf8"));
  const top = readFileSync(join(repo, "README.md"), "utf8");
  const section = top.slice(top.indexOf("## From Python / From Node"));
  const [fromNode = ""] = tsBlocks(section.slice(0, section.indexOf("\n## ", 1)));
  return { produce, consume, top: fromNode };
}

for (const store of STORES) {
  describe(`README examples (${store})`, () => {
    const env = useServer(store);
    let dir: string;
    const procs: ChildProcess[] = [];

    before(() => {
      dir = mkdtempSync(join(tmpdir(), "spool-ts-readme-"));
      mkdirSync(join(dir, "node_modules"));
      symlinkSync(pkg, join(dir, "node_modules", "spool-queue"), "dir");
      writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
      const files = Object.entries(snippets()).map(([name, code]) => {
        assert.ok(code.includes(DEFAULT_URL), `the ${name} example names ${DEFAULT_URL}`);
        writeFileSync(join(dir, `${name}.ts`), code.replaceAll(DEFAULT_URL, env.server.url));
        return `${name}.ts`;
      });
      const tsc = join(pkg, "node_modules", "typescript", "bin", "tsc");
      const args = ["--strict", "--target", "es2022", "--module", "nodenext", ...files];
      execFileSync(process.execPath, [tsc, ...args], { cwd: dir, stdio: "inherit" });
    });
    after(() => {
      for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    });

    const node = (name: string) => execFileSync(process.execPath, [`${name}.js`], { cwd: dir, encoding: "utf8" });

    function start(name: string): [ChildProcess, () => string] {
      const out = join(dir, `${name}.out`);
      const fd = openSync(out, "w");
      const p = spawn(process.execPath, [`${name}.js`], { cwd: dir, stdio: ["ignore", fd, fd] });
      closeSync(fd);
      procs.push(p);
      return [p, () => (existsSync(out) ? readFileSync(out, "utf8") : "")];
    }

    it("runs the ten-line producer and worker", async () => {
      const [id, duplicate] = node("produce").split(/\s+/);
      assert.match(id ?? "", /^\d+$/);
      assert.equal(duplicate, "false");
      // The idempotency key: the same task, reported as a duplicate.
      assert.deepEqual(node("produce").split(/\s+/).slice(0, 2), [id, "true"]);
      const [worker, output] = start("consume");
      await waitFor(() => output().includes("sending to ada@example.com, attempt 1"));
      worker.kill("SIGTERM");
      assert.equal(await exited(worker), 0, output());
    });

    it("runs the top README's snippet", async () => {
      const [p, output] = start("top");
      await waitFor(() => output().includes("ada@example.com"));
      p.kill("SIGTERM");
      assert.equal(await exited(p), 0, output());
    });
  });
}
