/**
 * A burst of valid keys not yet in memory (right after a restart) is more
 * than one process reads from its store in a second
 * (`ERPLINK_COLD_READS_PER_SECOND`): the keys it cannot
 * read now are answered 503 `UNAVAILABLE` with `Retry-After`, never 401 (a
 * client that rotates keys on 401 would do it for nothing), and every one of
 * them works when retried after the wait.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Agent, request } from "undici";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

/** The cold-read budget (`ERPLINK_COLD_READS_PER_SECOND`), low so that the burst exceeds it however slow the machine. */
const BUDGET = 20;
/** Five times the budget in distinct keys. */
const KEYS = 100;

const Burst = suite("cold keys in a burst");

interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: { error?: { code?: string } };
}

async function dataRequest(erplink: RunningErplink, agent: Agent, key: string): Promise<Answer> {
  const res = await request(`${erplink.baseUrl}/odata/nowhere/SERVICE/Things`, { dispatcher: agent, headers: { authorization: `Bearer ${key}` } });
  const body = (await res.body.json()) as Answer["body"];
  const retryAfter = res.headers["retry-after"];
  return { status: res.statusCode, retryAfter: typeof retryAfter === "string" ? retryAfter : undefined, body };
}

Burst("valid keys beyond the cold-read budget get 503 with Retry-After, never 401, and all work after the wait", async () => {
  const dir = await mkdtemp(join(tmpdir(), "erplink-cold-"));
  const env = {
    ERPLINK_DATA_DIR: dir,
    ERPLINK_ADMIN_RATE_PER_MINUTE: "100000",
    ERPLINK_ADMIN_RATE_PER_DAY: "1000000",
    ERPLINK_COLD_READS_PER_SECOND: String(BUDGET),
  };
  const agent = new Agent({ connections: 64 });
  let erplink = await startErplink(env);
  try {
    const keys: string[] = [];
    for (let i = 0; i < KEYS; i++) {
      const res = await request(`${erplink.baseUrl}/admin/api-keys`, {
        method: "POST",
        dispatcher: agent,
        headers: { authorization: erplink.authorization, "content-type": "application/json" },
        body: JSON.stringify({ name: `client ${i}`, permissions: { prod: { SERVICE: { Things: ["list"] } } } }),
      });
      assert.is(res.statusCode, 201);
      keys.push(((await res.body.json()) as { data: { key: string } }).data.key);
    }
    // What an authenticated key gets for this request (no such instance), from a key this process holds.
    const known = await dataRequest(erplink, agent, keys[0]!);
    assert.is.not(known.status, 401, JSON.stringify(known));
    assert.is.not(known.status, 503);
    await erplink.close();

    // Restarted over the same store: every key is cold.
    erplink = await startErplink(env);
    const first = await Promise.all(keys.map((key) => dataRequest(erplink, agent, key)));
    const counts = new Map<number, number>();
    for (const a of first) counts.set(a.status, (counts.get(a.status) ?? 0) + 1);
    assert.is(counts.get(401), undefined, `no valid key is refused as invalid: ${JSON.stringify([...counts])}`);
    const waiting = first.flatMap((a, i) => (a.status === 503 ? [i] : []));
    assert.ok(waiting.length > 0, `the burst went beyond the cold-read budget: ${JSON.stringify([...counts])}`);
    for (const i of waiting) assert.equal([first[i]!.retryAfter, first[i]!.body.error?.code], ["1", "UNAVAILABLE"]);
    for (const a of first) if (a.status !== 503) assert.equal([a.status, a.body.error?.code], [known.status, known.body.error?.code]);

    // After the wait each key refused for now works, a second's budget at a time.
    let left = waiting;
    for (let round = 0; left.length > 0 && round < KEYS / BUDGET + 3; round++) {
      await new Promise((r) => setTimeout(r, 1000));
      const again = await Promise.all(left.map((i) => dataRequest(erplink, agent, keys[i]!)));
      for (const a of again) assert.ok(a.status === known.status || a.status === 503, `retried: ${a.status}`);
      left = left.filter((_, n) => again[n]!.status === 503);
    }
    assert.is(left.length, 0, "every key refused for now works after its wait");
  } finally {
    await erplink.close();
    await agent.close();
    await rm(dir, { recursive: true, force: true });
  }
});

Burst.run();
