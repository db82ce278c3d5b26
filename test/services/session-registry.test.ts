/**
 * The session registry under a flood of forged tokens: cold store reads are
 * budgeted, and a live session that this process has not cached yet (its
 * first use here: sessions are never synced ahead) is answered "retry",
 * not refused as revoked, while the budget is spent.
 */
import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { SessionService } from "../../src/gen/erplink/admin/v1/session_pb.js";
import { createServiceLayer } from "../../src/services/layer.js";
import { SessionRegistry } from "../../src/services/session-registry.js";
import { generateSessionToken } from "../../src/schema/session-token.js";
import type { SessionStore } from "../../src/store/index.js";
import { json } from "../../test-support/http.js";
import { rejects } from "../../test-support/rpc.js";
import { AUTH, ENCRYPTION_KEY, MASTER_KEY, createWorld } from "../../test-support/world.js";

const Registry = suite("session registry");

function countingStore(store: SessionStore): SessionStore & { reads: number } {
  const counted = Object.create(store) as SessionStore & { reads: number };
  counted.reads = 0;
  counted.getByHash = async (hash: string) => {
    counted.reads++;
    return store.getByHash(hash);
  };
  return counted;
}

Registry("forged well-formed tokens cost at most coldReadsPerSecond store reads; beyond them a token not cached is 'unavailable, retry in 1 s', not unknown", async () => {
  const w = await createWorld();
  try {
    const created = await w.app.inject({ method: "POST", url: "/admin/sessions", headers: AUTH });
    const token = json(created).data.token as string;
    const store = countingStore(w.store.sessions);
    let now = w.now.getTime();
    const registry = new SessionRegistry({
      store,
      clock: () => new Date(now),
      refreshMs: 2_000,
      negativeTtlMs: 30_000,
      maxEntries: 100,
      coldReadsPerSecond: 5,
      onError: (err) => assert.unreachable(String(err)),
    });
    const forged = Array.from({ length: 5 }, () => generateSessionToken());
    for (const t of forged) assert.is(await registry.lookup(t), undefined);
    assert.is(store.reads, 5);
    // Remembered as unknown: no read, no budget.
    for (const t of forged) assert.is(await registry.lookup(t), undefined);
    const err = await rejects(registry.lookup(generateSessionToken()), Code.Unavailable, "too many unknown session tokens at once: retry in a second");
    assert.is(err.metadata.get("retry-after"), "1");
    // The live session's first use here, during the flood: retry, not "revoked".
    await rejects(registry.lookup(token), Code.Unavailable, "too many unknown session tokens at once: retry in a second");
    assert.is(store.reads, 5);
    now += 1000;
    assert.is((await registry.lookup(token))?.id, json(created).data.id);
    assert.is(store.reads, 6);
  } finally {
    await w.close();
  }
});

Registry("over REST, another process's session used during a flood of forged tokens is a 503 with Retry-After, then works (not a 401 that would sign the dashboard out)", async () => {
  const w = await createWorld();
  const other = createServiceLayer(w.store, {
    masterKey: MASTER_KEY,
    encryptionKey: ENCRYPTION_KEY,
    adminLimits: { perMinute: 1000, perDay: 1000 },
    dataLimits: { perMinute: 1000, perDay: 1000 },
    logRetentionMs: 86_400_000,
    clock: w.layer.deps.clock,
    log: { error: () => undefined },
  });
  try {
    // Made by the other process: not in this one's cache.
    const sessions = createClient(
      SessionService,
      createRouterTransport(other.routes, {
        router: { interceptors: [...other.publicInterceptors] },
        transport: { interceptors: [(next) => (req) => (req.header.set("authorization", AUTH.authorization), next(req))] },
      }),
    );
    const res = await sessions.createSession({});
    const get = (token: string) => w.app.inject({ method: "GET", url: "/admin/systems", headers: { authorization: `Bearer ${token}` } });
    // The default budget is 200 cold reads a second; the test clock stands still.
    for (let i = 0; i < 200; i++) assert.is((await get(generateSessionToken())).statusCode, 401);
    const during = await get(res.token);
    assert.is(during.statusCode, 503, during.body);
    assert.is(during.headers["retry-after"], "1");
    assert.equal(json(during), {
      error: { code: "UNAVAILABLE", message: "too many unknown session tokens at once: retry in a second", requestId: during.headers["x-request-id"] },
    });
    w.now = new Date(w.now.getTime() + 1000);
    const after = await get(res.token);
    assert.is(after.statusCode, 200, after.body);
  } finally {
    await other.stop();
    await w.close();
  }
});

Registry.run();
