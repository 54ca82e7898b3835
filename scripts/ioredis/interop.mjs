// ioredis against a real `spool serve` over RESP: it connects with its
// defaults (RESP3 through HELLO 3 with AUTH, then the ready check's INFO)
// and with RESP2, pipelines ENQUEUEs, claims and acks them, and sees
// Spool's error codes. Usage: node interop.mjs PORT TOKEN
import assert from "node:assert/strict";
import Redis from "ioredis";

const [port, token] = [Number(process.argv[2]), process.argv[3]];

/** A flat [k1, v1, k2, v2, ...] reply (a RESP3 map as ioredis gives it) as an object. */
const fields = (flat) => {
  const o = {};
  for (let i = 0; i < flat.length; i += 2) o[flat[i].toString()] = flat[i + 1];
  return o;
};

// protocol 3 (ioredis's default): HELLO 3 AUTH default <token>; protocol 2:
// AUTH <token>. Either way the ready check's INFO before the first command.
async function exercise(protocol) {
  const errors = [];
  const r = new Redis({ port, password: token, protocol, maxRetriesPerRequest: 0 });
  r.on("error", (e) => errors.push(e));
  await new Promise((ready, fail) => {
    r.once("ready", ready);
    r.once("end", () => fail(new Error("connection ended before ready")));
  });
  const queue = `node${protocol}`;
  const pipe = r.pipeline();
  for (let i = 0; i < 100; i++) pipe.call("ENQUEUE", queue, JSON.stringify({ n: i }));
  const ids = (await pipe.exec()).map(([err, answer]) => {
    assert.equal(err, null);
    // RESP2 answers the id; RESP3 {id, duplicate}.
    return protocol === 2 ? answer : Number(fields(answer).id);
  });
  assert.equal(ids.length, 100);
  assert.deepEqual([...ids].sort((a, b) => a - b), ids);

  let done = 0;
  while (done < 100) {
    const tasks = await r.callBuffer("CLAIM", queue, "MAX", "40", "WORKER", "node");
    assert.ok(tasks.length > 0, "claim found nothing");
    const acks = [];
    for (const flat of tasks) {
      const t = fields(flat);
      const id = Number(t.id.toString());
      assert.equal(t.payload.toString(), JSON.stringify({ n: ids.indexOf(id) }));
      acks.push(String(id), t.token.toString());
    }
    const results = await r.call("ACKMANY", ...acks);
    assert.ok(results.every((x) => x === "OK"), String(results));
    done += tasks.length;
  }
  await assert.rejects(r.call("ACK", String(ids[0]), "0000000000000000"), (e) =>
    e.message.startsWith("NOT_FOUND"),
  );
  assert.deepEqual(errors, []);
  r.disconnect();
}

await exercise(3);
await exercise(2);

const wrong = new Redis({ port, password: "not-the-token", maxRetriesPerRequest: 0, retryStrategy: () => null });
const refused = await new Promise((resolve) => wrong.once("error", resolve));
assert.match(refused.message, /UNAUTHORIZED/);
wrong.disconnect();
console.log("ioredis: ok (RESP3 and RESP2, ready check, 100 pipelined ENQUEUEs, CLAIM + ACKMANY, error codes)");
