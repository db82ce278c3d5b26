/**
 * DataPlane.authenticate, the data path's (and Envoy's check's) key lookup:
 * a key this process holds is found by the token's SHA-256 before the
 * master-key comparison and the checksum. Held or not, a key is
 * answered alike: an admin key 403, an expired one 401, one revoked
 * here or by another process (at the next sync) 401, and the master key 403.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { hashApiKey } from "../../src/services/api-key-secret.js";
import { json, post } from "../../test-support/http.js";
import { MASTER_KEY, createWorld, type World } from "../../test-support/world.js";

const test = suite<{ w: World }>("DataPlane.authenticate: keys held in the registry");
test.before.each(async (ctx) => {
  ctx.w = await createWorld();
});
test.after.each(async (ctx) => {
  await ctx.w.close();
});

const PERMISSIONS = { prod: { SALES: { SalesOrders: ["list"] } } };

/** The answer to a token: the key's id, or the refusal's code and message. */
async function answer(w: World, token: string): Promise<string | [Code, string]> {
  try {
    return (await w.layer.dataPlane.authenticate(`Bearer ${token}`)).id;
  } catch (err) {
    assert.instance(err, ConnectError);
    return [(err as ConnectError).code, (err as ConnectError).rawMessage];
  }
}

async function createKey(w: World, body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const res = await post(w.app, "/admin/api-keys", body);
  assert.is(res.statusCode, 201, res.body);
  return { id: json(res).data.id, key: json(res).data.key };
}

const held = (w: World, key: string) => w.layer.deps.keys.cached(hashApiKey(key)) !== undefined;

const INVALID: [Code, string] = [Code.Unauthenticated, "invalid bearer token"];

test("an admin key held in the registry is still 403 on the data path; the master key 403; an unknown well-formed token 401", async ({ w }) => {
  const admin = await createKey(w, { name: "ops", type: "admin" });
  // Used on /admin first, as an operator would: held in memory since.
  assert.is((await w.app.inject({ method: "GET", url: "/admin/systems", headers: { authorization: `Bearer ${admin.key}` } })).statusCode, 200);
  assert.ok(held(w, admin.key), "precondition: the admin key is held");
  assert.equal(await answer(w, admin.key), [Code.PermissionDenied, "API key is not a data key: data access needs a data key"]);
  assert.equal(await answer(w, MASTER_KEY), [Code.PermissionDenied, "the master key cannot access data: use a data key"]);
  const data = await createKey(w, { name: "app", permissions: PERMISSIONS });
  // The same key with one character changed: well-formed? No (checksum); 401 either way, never another key.
  const other = `${data.key.slice(0, 10)}${data.key[10] === "A" ? "B" : "A"}${data.key.slice(11)}`;
  assert.equal(await answer(w, other), INVALID);
  assert.is(await answer(w, data.key), data.id);
});

test("a held data key that expires is 401 'API key expired' from then on, without leaving the registry", async ({ w }) => {
  const expiresAt = new Date(w.now.getTime() + 60_000).toISOString();
  const data = await createKey(w, { name: "app", permissions: PERMISSIONS, expires_at: expiresAt });
  assert.ok(held(w, data.key), "precondition: held since its creation");
  assert.is(await answer(w, data.key), data.id);
  w.now = new Date(w.now.getTime() + 60_000);
  assert.equal(await answer(w, data.key), [Code.Unauthenticated, "API key expired"]);
  assert.ok(held(w, data.key));
});

test("a held data key revoked here is 401 at once; one revoked by another process is 401 from this process's next sync", async ({ w }) => {
  const here = await createKey(w, { name: "here", permissions: PERMISSIONS });
  const elsewhere = await createKey(w, { name: "elsewhere", permissions: PERMISSIONS });
  assert.ok(held(w, here.key) && held(w, elsewhere.key), "precondition: both held");

  assert.is((await w.app.inject({ method: "DELETE", url: `/admin/api-keys/${here.id}`, headers: { authorization: `Bearer ${MASTER_KEY}` } })).statusCode, 200);
  assert.equal(await answer(w, here.key), INVALID);

  // Another process revokes in the shared store: this one answers from memory until it syncs.
  w.now = new Date(w.now.getTime() + 1000);
  await w.store.apiKeys.revoke(elsewhere.id, w.now);
  assert.is(await answer(w, elsewhere.key), elsewhere.id, "precondition: still held before the sync");
  await w.layer.deps.keys.sync();
  assert.not.ok(held(w, elsewhere.key));
  assert.equal(await answer(w, elsewhere.key), INVALID);
  // And it stays refused (the registry remembers it as unknown, the store has it revoked).
  w.now = new Date(w.now.getTime() + 3_600_000);
  assert.equal(await answer(w, elsewhere.key), INVALID);
});

test.run();
