/**
 * UsageRecorder: uses are noted in memory and written in batches (the latest
 * time per key, once per flush); revoked keys are skipped, failed writes are
 * kept for the next flush and reported. And the API shows a pending use as
 * `last_used_at` before it is written.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { UsageRecorder } from "../../src/services/usage.js";
import { NotFoundError, type ApiKeyRecord, type ApiKeyStore, type Patch } from "../../src/store/index.js";
import { AUTH } from "../../test-support/world.js";
import { json, post } from "../../test-support/http.js";
import { worldTests } from "../../test-support/rpc.js";

const T0 = new Date("2026-01-02T03:04:05.000Z").getTime();

/** A fake store recording every update; `fail` decides per call whether it throws. */
class FakeStore {
  readonly writes: [string, Patch<ApiKeyRecord>][] = [];
  fail: (keyId: string) => unknown = () => undefined;
  /** Runs while a write is in progress (to touch during a flush). */
  during: (keyId: string) => void = () => undefined;

  async update(keyId: string, patch: Patch<ApiKeyRecord>): Promise<ApiKeyRecord> {
    this.during(keyId);
    const err = this.fail(keyId);
    if (err !== undefined) throw err;
    this.writes.push([keyId, patch]);
    return { id: keyId } as ApiKeyRecord;
  }
}

interface Ctx {
  store: FakeStore;
  now: number;
  errors: unknown[];
  usage: UsageRecorder;
}

function setup(): Ctx {
  const ctx = { store: new FakeStore(), now: T0, errors: [] } as unknown as Ctx;
  ctx.usage = new UsageRecorder({
    store: ctx.store as unknown as ApiKeyStore,
    clock: () => new Date(ctx.now),
    onError: (err) => ctx.errors.push(err),
  });
  return ctx;
}

function at(ms: number): { lastUsedAt: Date } {
  return { lastUsedAt: new Date(ms) };
}

const Unit = suite("UsageRecorder");

Unit("touching many times writes nothing until flush", async () => {
  const ctx = setup();
  for (let i = 0; i < 1000; i++) {
    ctx.now = T0 + i;
    ctx.usage.touch(`key_${i % 3}`);
  }
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(ctx.store.writes, []);
  assert.equal(ctx.usage.pendingUse("key_0"), new Date(T0 + 999));
  assert.equal(ctx.usage.pendingUse("key_1"), new Date(T0 + 997));
  assert.is(ctx.usage.pendingUse("key_never"), undefined);
});

Unit("flush writes the latest time of each key once, then nothing is pending", async () => {
  const ctx = setup();
  ctx.usage.touch("key_a");
  ctx.now = T0 + 1000;
  ctx.usage.touch("key_b");
  ctx.now = T0 + 2000;
  ctx.usage.touch("key_a");
  ctx.usage.touch("key_a");
  await ctx.usage.flush();
  assert.equal(ctx.store.writes, [
    ["key_a", at(T0 + 2000)],
    ["key_b", at(T0 + 1000)],
  ]);
  assert.is(ctx.usage.pendingUse("key_a"), undefined);
  assert.is(ctx.usage.pendingUse("key_b"), undefined);
  await ctx.usage.flush();
  assert.is(ctx.store.writes.length, 2, "an empty flush writes nothing");
  assert.equal(ctx.errors, []);
});

Unit("a key revoked meanwhile (NotFoundError) is skipped, not reported, not retried", async () => {
  const ctx = setup();
  ctx.store.fail = (id) => (id === "key_gone" ? new NotFoundError("api_keys", id) : undefined);
  ctx.usage.touch("key_gone");
  ctx.usage.touch("key_live");
  await ctx.usage.flush();
  assert.equal(ctx.store.writes, [["key_live", at(T0)]]);
  assert.equal(ctx.errors, []);
  assert.is(ctx.usage.pendingUse("key_gone"), undefined);
  ctx.store.fail = () => undefined;
  await ctx.usage.flush();
  assert.is(ctx.store.writes.length, 1, "not retried");
});

Unit("a failing write keeps the use for the next flush and reports the error", async () => {
  const ctx = setup();
  const boom = new Error("store unavailable");
  ctx.store.fail = (id) => (id === "key_a" ? boom : undefined);
  ctx.usage.touch("key_a");
  ctx.usage.touch("key_b");
  await ctx.usage.flush();
  assert.equal(ctx.store.writes, [["key_b", at(T0)]], "the other keys are still written");
  assert.equal(ctx.errors, [boom]);
  assert.equal(ctx.usage.pendingUse("key_a"), new Date(T0), "kept");
  assert.is(ctx.usage.pendingUse("key_b"), undefined);

  ctx.store.fail = () => undefined;
  await ctx.usage.flush();
  assert.equal(ctx.store.writes, [
    ["key_b", at(T0)],
    ["key_a", at(T0)],
  ]);
  assert.is(ctx.usage.pendingUse("key_a"), undefined);
  assert.is(ctx.errors.length, 1);
});

Unit("a failed write does not overwrite a newer use noted during the flush", async () => {
  const ctx = setup();
  ctx.usage.touch("key_a");
  ctx.store.during = () => {
    ctx.now = T0 + 5000;
    ctx.usage.touch("key_a");
  };
  ctx.store.fail = () => new Error("timeout");
  await ctx.usage.flush();
  assert.equal(ctx.usage.pendingUse("key_a"), new Date(T0 + 5000), "the newer use wins");
  ctx.store.during = () => undefined;
  ctx.store.fail = () => undefined;
  await ctx.usage.flush();
  assert.equal(ctx.store.writes, [["key_a", at(T0 + 5000)]]);
});

Unit("a use noted during a successful flush is written by the next one", async () => {
  const ctx = setup();
  ctx.usage.touch("key_a");
  let once = true;
  ctx.store.during = () => {
    if (!once) return;
    once = false;
    ctx.now = T0 + 7000;
    ctx.usage.touch("key_a");
  };
  await ctx.usage.flush();
  assert.equal(ctx.store.writes, [["key_a", at(T0)]]);
  assert.equal(ctx.usage.pendingUse("key_a"), new Date(T0 + 7000));
  await ctx.usage.flush();
  assert.equal(ctx.store.writes, [
    ["key_a", at(T0)],
    ["key_a", at(T0 + 7000)],
  ]);
});

Unit("start flushes on an interval; stop writes what is pending", async () => {
  const ctx = setup();
  ctx.usage.start(5);
  try {
    ctx.usage.touch("key_a");
    const deadline = Date.now() + 2000;
    while (ctx.store.writes.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    assert.equal(ctx.store.writes, [["key_a", at(T0)]]);
  } finally {
    ctx.now = T0 + 1;
    ctx.usage.touch("key_b");
    await ctx.usage.stop();
  }
  assert.equal(ctx.store.writes.at(-1), ["key_b", at(T0 + 1)]);
  const count = ctx.store.writes.length;
  ctx.usage.touch("key_c");
  await new Promise((r) => setTimeout(r, 30));
  assert.is(ctx.store.writes.length, count, "no timer after stop");
});

Unit.run();

// --- through the API -----------------------------------------------------------

const Api = suite("last_used_at through the API");
const it = worldTests(Api);

it("GET /admin/api-keys/:id shows last_used_at from the pending use before any flush", async (w) => {
  const created = await post(w.app, "/admin/api-keys", { name: "ops", type: "admin" });
  assert.is(created.statusCode, 201);
  const { id, key } = json(created).data as { id: string; key: string };
  const show = async () => {
    const res = await w.app.inject({ method: "GET", url: `/admin/api-keys/${id}`, headers: AUTH });
    assert.is(res.statusCode, 200);
    return json(res).data;
  };
  assert.is((await show()).last_used_at, undefined, "never used");

  w.now = new Date("2026-01-02T04:00:00.250Z");
  const used = await w.app.inject({ method: "GET", url: "/admin/systems", headers: { authorization: `Bearer ${key}` } });
  assert.is(used.statusCode, 200);
  w.now = new Date("2026-01-02T05:00:00Z");
  assert.is((await show()).last_used_at, "2026-01-02T04:00:00.250Z", "pending use shown");
  assert.is((await w.store.apiKeys.get(id))?.lastUsedAt, undefined, "not yet written");
  const listed = json(await w.app.inject({ method: "GET", url: "/admin/api-keys", headers: AUTH })).data;
  assert.is(listed[0].last_used_at, "2026-01-02T04:00:00.250Z", "in lists too");

  await w.layer.deps.usage.flush();
  assert.equal((await w.store.apiKeys.get(id))?.lastUsedAt, new Date("2026-01-02T04:00:00.250Z"), "written by flush");
  assert.is((await show()).last_used_at, "2026-01-02T04:00:00.250Z");

  // A newer pending use wins over the written one.
  w.now = new Date("2026-01-02T06:00:00Z");
  await w.app.inject({ method: "GET", url: "/admin/systems", headers: { authorization: `Bearer ${key}` } });
  assert.is((await show()).last_used_at, "2026-01-02T06:00:00Z");
});

it("a revoked key's pending use is dropped by the next flush without an error", async (w) => {
  const created = json(await post(w.app, "/admin/api-keys", { name: "ops", type: "admin" })).data as { id: string; key: string };
  await w.app.inject({ method: "GET", url: "/admin/systems", headers: { authorization: `Bearer ${created.key}` } });
  assert.ok(w.layer.deps.usage.pendingUse(created.id));
  const del = await w.app.inject({ method: "DELETE", url: `/admin/api-keys/${created.id}`, headers: AUTH });
  assert.is(del.statusCode, 200);
  await w.layer.deps.usage.flush();
  assert.is(w.layer.deps.usage.pendingUse(created.id), undefined);
  assert.is(await w.store.apiKeys.get(created.id), undefined, "the flush did not recreate it");
  // worldTests asserts that nothing was reported as an error.
});

Api.run();
