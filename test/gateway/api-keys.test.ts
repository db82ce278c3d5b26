/**
 * The /admin/api-keys REST facade through `app.inject()`: issuing keys (the
 * secret shown once, only its hash stored), admin keys as bearer tokens,
 * revocation and expiry, PATCH rules and the validation envelopes.
 */
import { createHash } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AuthorizationService, DenialStep, Operation } from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import type { DocumentCollection } from "../../src/store/collection.js";
import { json, patch, post, REQ_ID, SYS_ID } from "../../test-support/http.js";
import { worldTests, type TestWorld } from "../../test-support/rpc.js";
import { AUTH } from "../../test-support/world.js";

type World = TestWorld;

const test = suite("admin api keys");
const it = worldTests(test);

const KEY_ID = /^key_[0-9A-HJKMNP-TV-Z]{26}$/;
const SECRET = /^erpl_[0-9A-Za-z]{49}$/;
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const T0 = "2026-01-02T03:04:05Z";

function sha256(s: string): string {
  return createHash("sha256").update(s, "utf8").digest("hex");
}

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** The raw document of a key, as the backend holds it. */
function rawApiKeys(w: World): DocumentCollection {
  return (w.store.apiKeys as unknown as { collection: DocumentCollection }).collection;
}

/** POSTs a key with the master key, expecting 201; returns `data` (with the secret in `key`). */
async function createKey(w: World, body: object, headers: Record<string, string> = AUTH) {
  const res = await post(w.app, "/admin/api-keys", body, headers);
  assert.is(res.statusCode, 201, res.body);
  return json(res).data as { id: string; key: string; prefix: string; [k: string]: unknown };
}

function get(w: World, url: string, headers: Record<string, string> = AUTH) {
  return w.app.inject({ method: "GET", url, headers });
}

function del(w: World, url: string, headers: Record<string, string> = AUTH) {
  return w.app.inject({ method: "DELETE", url, headers });
}

/** Asserts an error envelope exactly. */
function assertError(
  res: Awaited<ReturnType<typeof get>>,
  status: number,
  code: string,
  message: string,
  details?: { field: string; message: string }[],
): void {
  assert.is(res.statusCode, status, res.body);
  assert.is(res.headers["content-type"], "application/json; charset=utf-8");
  const error: Record<string, unknown> = { code, message, requestId: res.headers["x-request-id"] };
  if (details) error.details = details;
  assert.equal(json(res), { error });
  assert.is(res.headers["www-authenticate"], status === 401 ? "Bearer" : undefined, "WWW-Authenticate");
}

/** A valid-looking token whose checksum is wrong: the last character changed. */
function withWrongChecksum(secret: string): string {
  const last = secret[secret.length - 1]!;
  const other = BASE62[(BASE62.indexOf(last) + 1) % BASE62.length]!;
  return secret.slice(0, -1) + other;
}

// --- create ---------------------------------------------------------------

it("POST /admin/api-keys -> 201 with the secret, its prefix, type data and normalized permissions", async (w) => {
  const res = await post(w.app, "/admin/api-keys", {
    name: "billing app",
    permissions: {
      prod: {
        API_BP: { A_BusinessPartner: ["delete", "get", "list", "get", "create", "list"] },
        "*": { "*": ["update", "list"] },
      },
    },
  });
  assert.is(res.statusCode, 201);
  assert.is(res.headers["content-type"], "application/json; charset=utf-8");
  assert.match(res.headers["x-request-id"] as string, REQ_ID);
  const body = json(res);
  assert.match(body.data.id, KEY_ID);
  assert.is(res.headers.location, `/admin/api-keys/${body.data.id}`);
  assert.match(body.data.key, SECRET);
  assert.is(body.data.prefix, body.data.key.slice(0, 12));
  assert.equal(body, {
    data: {
      id: body.data.id,
      name: "billing app",
      type: "data",
      permissions: {
        prod: {
          API_BP: { A_BusinessPartner: ["list", "get", "create", "delete"] },
          "*": { "*": ["list", "update"] },
        },
      },
      rate_limits: {},
      prefix: body.data.prefix,
      created_at: T0,
      updated_at: T0,
      etag: '"1"',
      key: body.data.key,
    },
    meta: { requestId: res.headers["x-request-id"] },
  });
});

it("each key gets its own id and secret; rate_limits and expires_at are kept", async (w) => {
  const a = await createKey(w, {
    name: "a",
    rate_limits: { per_minute: 7, per_day: 700 },
    expires_at: "2026-06-01T00:00:00Z",
  });
  const b = await createKey(w, { name: "b" });
  assert.is.not(a.id, b.id);
  assert.is.not(a.key, b.key);
  assert.is.not(a.prefix, b.prefix);
  assert.equal(a.rate_limits, { per_minute: 7, per_day: 700 });
  assert.is(a.expires_at, "2026-06-01T00:00:00Z");
  assert.equal(b.permissions, {});
  assert.equal(b.rate_limits, {});
  assert.is(b.expires_at, undefined);
});

it("the secret is shown only by POST: GET, list, PATCH and DELETE never contain it", async (w) => {
  const created = await createKey(w, { name: "once", permissions: { prod: { "*": { "*": ["get"] } } } });
  const { key: secret, ...rest } = created;
  const url = `/admin/api-keys/${created.id}`;

  const got = await get(w, url);
  assert.is(got.statusCode, 200);
  assert.equal(json(got).data, rest);
  assert.not.ok(got.body.includes(secret), "GET");

  const list = await get(w, "/admin/api-keys");
  assert.is(list.statusCode, 200);
  assert.equal(json(list).data, [rest]);
  assert.not.ok(list.body.includes(secret), "list");

  const patched = await patch(w.app, url, { name: "renamed" });
  assert.is(patched.statusCode, 200);
  assert.equal(json(patched).data, { ...rest, name: "renamed", etag: '"2"' });
  assert.not.ok(patched.body.includes(secret), "PATCH");

  const deleted = await del(w, url);
  assert.is(deleted.statusCode, 200);
  assert.equal(json(deleted).data, { ...rest, name: "renamed", etag: '"2"' });
  assert.not.ok(deleted.body.includes(secret), "DELETE");
});

it("the store keeps only the SHA-256 of the secret, never the secret", async (w) => {
  const created = await createKey(w, { name: "hashed", permissions: { prod: { API_BP: { "*": ["list"] } } } });
  const secret = created.key;

  const rec = await w.store.apiKeys.get(created.id);
  assert.ok(rec);
  assert.is(rec.keyHash, sha256(secret));
  assert.match(rec.keyHash, /^[0-9a-f]{64}$/);
  assert.is(rec.prefix, secret.slice(0, 12));
  for (const [field, value] of Object.entries(rec)) assert.is.not(value, secret, `record field ${field}`);
  assert.not.ok(JSON.stringify(rec).includes(secret.slice(12)), "record holds no part of the secret past its prefix");

  const doc = await rawApiKeys(w).get(created.id);
  assert.ok(doc);
  assert.is(doc.keyHash, sha256(secret));
  assert.is(doc.prefix, secret.slice(0, 12));
  for (const [field, value] of Object.entries(doc)) assert.is.not(value, secret, `document field ${field}`);
  assert.not.ok(JSON.stringify(doc).includes(secret.slice(12)), "document holds no part of the secret past its prefix");
  assert.equal(
    Object.keys(doc).sort(),
    ["_id", "createdAt", "keyHash", "name", "permissions", "prefix", "rateLimits", "revision", "revoked", "type", "updatedAt"],
  );
});

// --- admin keys -----------------------------------------------------------

it("an admin key manages systems and issues keys like the master key", async (w) => {
  const admin = await createKey(w, { name: "ops", type: "admin" });
  assert.is(admin.type, "admin");
  assert.is(admin.permissions, undefined, "admin keys carry no permissions");
  const auth = bearer(admin.key);

  const created = await post(w.app, "/admin/systems", { name: "S4" }, auth);
  assert.is(created.statusCode, 201, created.body);
  const sys = json(created).data;
  assert.match(sys.id, SYS_ID);
  assert.is(created.headers["x-ratelimit-limit"], "100000", "counted against the admin budget");

  const list = await get(w, "/admin/systems", auth);
  assert.is(list.statusCode, 200);
  assert.equal(json(list).data.map((s: { id: string }) => s.id), [sys.id]);

  const removed = await del(w, `/admin/systems/${sys.id}`, auth);
  assert.is(removed.statusCode, 200);
  assert.is(json(removed).data.id, sys.id);
  assert.is(await w.store.systems.get(sys.id), undefined);

  const other = await createKey(w, { name: "issued by an admin key", permissions: { prod: { "*": { "*": ["get"] } } } }, auth);
  assert.match(other.key, SECRET);
  const keys = await get(w, "/admin/api-keys", auth);
  assert.is(keys.statusCode, 200);
  assert.equal(json(keys).data.map((k: { id: string }) => k.id), [admin.id, other.id]);
  // The new key is itself usable, as a data key.
  assertError(await get(w, "/admin/systems", bearer(other.key)), 403, "FORBIDDEN", "API key is not an admin key");
});

it("a data key on /admin routes -> 403 FORBIDDEN 'API key is not an admin key'", async (w) => {
  const data = await createKey(w, { name: "app", permissions: { prod: { "*": { "*": ["list"] } } } });
  const auth = bearer(data.key);
  assertError(await get(w, "/admin/systems", auth), 403, "FORBIDDEN", "API key is not an admin key");
  assertError(await get(w, "/admin/api-keys", auth), 403, "FORBIDDEN", "API key is not an admin key");
  assertError(await get(w, `/admin/api-keys/${data.id}`, auth), 403, "FORBIDDEN", "API key is not an admin key");
  assertError(await post(w.app, "/admin/api-keys", { name: "escalate", type: "admin" }, auth), 403, "FORBIDDEN", "API key is not an admin key");
  assertError(await patch(w.app, `/admin/api-keys/${data.id}`, { name: "x" }, auth), 403, "FORBIDDEN", "API key is not an admin key");
  assertError(await del(w, `/admin/api-keys/${data.id}`, auth), 403, "FORBIDDEN", "API key is not an admin key");
  const keys = json(await get(w, "/admin/api-keys")).data;
  assert.equal(keys.map((k: { name: string }) => k.name), ["app"], "nothing was created, changed or deleted");
});

it("a revoked admin key gets 401 'invalid bearer token' on the very next request", async (w) => {
  const admin = await createKey(w, { name: "ops", type: "admin" });
  assert.is((await get(w, "/admin/systems", bearer(admin.key))).statusCode, 200, "works (and is cached) before");
  const revoked = await del(w, `/admin/api-keys/${admin.id}`);
  assert.is(revoked.statusCode, 200);
  assert.is(json(revoked).data.id, admin.id);
  assertError(await get(w, "/admin/systems", bearer(admin.key)), 401, "UNAUTHORIZED", "invalid bearer token");
  assertError(await get(w, `/admin/api-keys/${admin.id}`), 404, "NOT_FOUND", `API key "${admin.id}" not found`);
});

it("an admin key that revokes itself is refused on its next request", async (w) => {
  const admin = await createKey(w, { name: "ops", type: "admin" });
  const res = await del(w, `/admin/api-keys/${admin.id}`, bearer(admin.key));
  assert.is(res.statusCode, 200);
  assertError(await get(w, "/admin/api-keys", bearer(admin.key)), 401, "UNAUTHORIZED", "invalid bearer token");
});

it("an admin key with expires_at works until then, and is 401 'API key expired' from then on", async (w) => {
  const expiresAt = new Date(w.now.getTime() + 60_000);
  const admin = await createKey(w, { name: "temp", type: "admin", expires_at: expiresAt.toISOString() });
  assert.is(admin.expires_at, "2026-01-02T03:05:05Z");
  assert.is((await get(w, "/admin/systems", bearer(admin.key))).statusCode, 200);
  w.now = new Date(expiresAt.getTime() - 1);
  assert.is((await get(w, "/admin/systems", bearer(admin.key))).statusCode, 200, "1 ms before expiry");
  w.now = expiresAt;
  assertError(await get(w, "/admin/systems", bearer(admin.key)), 401, "UNAUTHORIZED", "API key expired");
  w.now = new Date(expiresAt.getTime() + 3_600_000);
  assertError(await get(w, "/admin/api-keys", bearer(admin.key)), 401, "UNAUTHORIZED", "API key expired");
  // The master key still sees it, unchanged.
  const got = await get(w, `/admin/api-keys/${admin.id}`);
  assert.is(got.statusCode, 200);
  assert.is(json(got).data.expires_at, "2026-01-02T03:05:05Z");
});

it("a token with a wrong checksum -> 401 'invalid bearer token' without a store read", async (w) => {
  const admin = await createKey(w, { name: "ops", type: "admin" });
  const forged = withWrongChecksum(admin.key);
  assert.match(forged, SECRET);
  assert.is.not(forged, admin.key);
  const store = w.store.apiKeys;
  const original = store.getByHash.bind(store);
  let reads = 0;
  store.getByHash = (hash) => {
    reads++;
    return original(hash);
  };
  try {
    assertError(await get(w, "/admin/systems", bearer(forged)), 401, "UNAUTHORIZED", "invalid bearer token");
    assertError(await post(w.app, "/admin/api-keys", { name: "x" }, bearer(forged)), 401, "UNAUTHORIZED", "invalid bearer token");
    assert.is(reads, 0, "a token failing its checksum is refused without a lookup");
  } finally {
    store.getByHash = original;
  }
  assert.is((await get(w, "/admin/systems", bearer(admin.key))).statusCode, 200, "the real key still works");
});

// --- PATCH ----------------------------------------------------------------

it("PATCH changes name, permissions, rate_limits and expires_at, and sets updated_at", async (w) => {
  const created = await createKey(w, {
    name: "app",
    permissions: { prod: { API_BP: { A_BusinessPartner: ["list"] } } },
    rate_limits: { per_minute: 10 },
  });
  const { key: _secret, ...before } = created;
  w.now = new Date("2026-02-03T04:05:06.789Z");
  const res = await patch(w.app, `/admin/api-keys/${created.id}`, {
    name: "app v2",
    permissions: { dev: { "*": { A_Product: ["update", "get", "update"] } } },
    rate_limits: { per_day: 1000 },
    expires_at: "2026-12-31T23:59:59Z",
  });
  assert.is(res.statusCode, 200, res.body);
  const after = {
    ...before,
    name: "app v2",
    permissions: { dev: { "*": { A_Product: ["get", "update"] } } },
    rate_limits: { per_day: 1000 },
    expires_at: "2026-12-31T23:59:59Z",
    updated_at: "2026-02-03T04:05:06.789Z",
    etag: '"2"',
  };
  assert.equal(json(res), { data: after, meta: { requestId: res.headers["x-request-id"] } });
  assert.equal(json(await get(w, `/admin/api-keys/${created.id}`)).data, after);

  // Only the fields in the body change.
  w.now = new Date("2026-02-04T00:00:00Z");
  const renamed = await patch(w.app, `/admin/api-keys/${created.id}`, { name: "app v3" });
  assert.is(renamed.statusCode, 200);
  assert.equal(json(renamed).data, { ...after, name: "app v3", updated_at: "2026-02-04T00:00:00Z", etag: '"3"' });

});

it("PATCH of type -> 400 'cannot be changed after creation'; nothing changes", async (w) => {
  const created = await createKey(w, { name: "app" });
  const res = await patch(w.app, `/admin/api-keys/${created.id}`, { type: "admin", name: "sneaky" });
  assertError(res, 400, "VALIDATION_ERROR", "type: cannot be changed after creation", [
    { field: "type", message: "cannot be changed after creation" },
  ]);
  const rec = await w.store.apiKeys.get(created.id);
  assert.is(rec?.type, "data");
  assert.is(rec?.name, "app");
});

for (const [field, value] of [
  ["prefix", "erpl_chosen1"],
  ["id", "key_01J00000000000000000000000"],
  ["last_used_at", "2026-01-01T00:00:00Z"],
] as const) {
  it(`PATCH of ${field} -> 400 'is set by the server and cannot be written'`, async (w) => {
    const created = await createKey(w, { name: "app" });
    const res = await patch(w.app, `/admin/api-keys/${created.id}`, { [field]: value });
    assertError(res, 400, "VALIDATION_ERROR", `${field}: is set by the server and cannot be written`, [
      { field, message: "is set by the server and cannot be written" },
    ]);
    const rec = await w.store.apiKeys.get(created.id);
    assert.is(rec?.prefix, created.prefix);
    assert.is(rec?.lastUsedAt, undefined);
  });
}

it("PATCH of expires_at to now (or the past) -> 200: the key is expired at once, and still listed", async (w) => {
  const created = await createKey(w, { name: "app", type: "admin" });
  assert.is((await get(w, "/admin/systems", bearer(created.key))).statusCode, 200, "works before");
  const res = await patch(w.app, `/admin/api-keys/${created.id}`, { expires_at: "2026-01-02T03:04:05Z" });
  assert.is(res.statusCode, 200, res.body);
  assert.is(json(res).data.expires_at, "2026-01-02T03:04:05Z");
  assertError(await get(w, "/admin/systems", bearer(created.key)), 401, "UNAUTHORIZED", "API key expired");
  assert.equal(json(await get(w, "/admin/api-keys")).data.map((k: { id: string }) => k.id), [created.id]);
});

it("PATCH of an unknown key or of a malformed id -> 404 naming it", async (w) => {
  assertError(
    await patch(w.app, "/admin/api-keys/key_00000000000000000000000000", { name: "x" }),
    404,
    "NOT_FOUND",
    'API key "key_00000000000000000000000000" not found',
  );
  assertError(
    await patch(w.app, "/admin/api-keys/sys_00000000000000000000000000", { name: "x" }),
    404,
    "NOT_FOUND",
    'API key "sys_00000000000000000000000000" not found',
  );
});

it("PATCH of permissions takes effect at once for Authorize", async (w) => {
  const created = await createKey(w, { name: "app", permissions: { prod: { API_BP: { A_BusinessPartner: ["list"] } } } });
  const authz = createClient(AuthorizationService, w.transport);
  const ask = (operation: Operation) =>
    authz.authorize({ apiKey: created.key, instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation });

  assert.is((await ask(Operation.LIST)).allowed, true);
  const before = await ask(Operation.GET);
  assert.is(before.allowed, false);
  assert.is(before.denialStep, DenialStep.OPERATION);
  assert.is(before.message, "API key lacks permission 'get' for entity 'A_BusinessPartner'");

  const res = await patch(w.app, `/admin/api-keys/${created.id}`, {
    permissions: { prod: { API_BP: { A_BusinessPartner: ["get"] } } },
  });
  assert.is(res.statusCode, 200, res.body);
  assert.is((await ask(Operation.GET)).allowed, true, "get granted at once");
  const list = await ask(Operation.LIST);
  assert.is(list.allowed, false, "list withdrawn at once");
  assert.is(list.denialStep, DenialStep.OPERATION);

  assert.is((await patch(w.app, `/admin/api-keys/${created.id}`, { permissions: { dev: { "*": { "*": ["get"] } } } })).statusCode, 200);
  const gone = await ask(Operation.GET);
  assert.is(gone.allowed, false);
  assert.is(gone.denialStep, DenialStep.INSTANCE);
  assert.is(gone.message, "API key has no access to instance 'prod'");
});

it("PATCH of expires_at takes effect at once for an admin key", async (w) => {
  const admin = await createKey(w, { name: "ops", type: "admin" });
  assert.is((await get(w, "/admin/systems", bearer(admin.key))).statusCode, 200);
  const soon = new Date(w.now.getTime() + 1000).toISOString();
  assert.is((await patch(w.app, `/admin/api-keys/${admin.id}`, { expires_at: soon })).statusCode, 200);
  assert.is((await get(w, "/admin/systems", bearer(admin.key))).statusCode, 200);
  w.now = new Date(w.now.getTime() + 1000);
  assertError(await get(w, "/admin/systems", bearer(admin.key)), 401, "UNAUTHORIZED", "API key expired");
});

// --- validation -------------------------------------------------------------

it("expires_at in the past (or now) on create -> 201: an expired key, refused with 401 'API key expired'", async (w) => {
  for (const [name, at] of [["old", "2020-01-01T00:00:00Z"], ["now", T0]]) {
    const res = await post(w.app, "/admin/api-keys", { name, type: "admin", expires_at: at });
    assert.is(res.statusCode, 201, res.body);
    assert.is(json(res).data.expires_at, at);
    assertError(await get(w, "/admin/systems", bearer(json(res).data.key)), 401, "UNAUTHORIZED", "API key expired");
  }
  assert.equal(json(await get(w, "/admin/api-keys")).data.map((k: { name: string }) => k.name), ["old", "now"]);
});

it("rate_limits.per_minute 0 -> 400 'must be greater than zero'; '5' -> 400 type error", async (w) => {
  assertError(
    await post(w.app, "/admin/api-keys", { name: "x", rate_limits: { per_minute: 0 } }),
    400,
    "VALIDATION_ERROR",
    "rate_limits.per_minute: must be greater than zero",
    [{ field: "rate_limits.per_minute", message: "must be greater than zero" }],
  );
  assertError(
    await post(w.app, "/admin/api-keys", { name: "x", rate_limits: { per_minute: "5" } }),
    400,
    "VALIDATION_ERROR",
    "rate_limits.per_minute: must be an integer",
    [{ field: "rate_limits.per_minute", message: "must be an integer" }],
  );
  assertError(
    await post(w.app, "/admin/api-keys", { name: "x", rate_limits: { per_minute: -1, per_day: 0 } }),
    400,
    "VALIDATION_ERROR",
    "2 fields are invalid",
    [
      { field: "rate_limits.per_minute", message: "must be greater than zero" },
      { field: "rate_limits.per_day", message: "must be greater than zero" },
    ],
  );
  const created = await createKey(w, { name: "ok" });
  assertError(
    await patch(w.app, `/admin/api-keys/${created.id}`, { rate_limits: { per_day: 0 } }),
    400,
    "VALIDATION_ERROR",
    "rate_limits.per_day: must be greater than zero",
    [{ field: "rate_limits.per_day", message: "must be greater than zero" }],
  );
  assert.equal(json(await get(w, "/admin/api-keys")).data.map((k: { name: string }) => k.name), ["ok"]);
});

it("permission errors arrive as details with their paths", async (w) => {
  const res = await post(w.app, "/admin/api-keys", {
    name: "x",
    permissions: {
      "*": { "*": { "*": ["list"] } },
      prod: { API_BP: { A_BusinessPartner: ["list", "get", "drop"], A_Supplier: [] } },
    },
  });
  assertError(res, 400, "VALIDATION_ERROR", "3 fields are invalid", [
    {
      field: "permissions.*",
      message:
        "instances must be named: '*' is not allowed at the instance level, so that a key never gains future instances",
    },
    { field: "permissions.prod.API_BP.A_BusinessPartner[2]", message: "must be one of list, get, create, update, delete, invoke" },
    { field: "permissions.prod.API_BP.A_Supplier", message: "must list at least one operation" },
  ]);

  const one = await post(w.app, "/admin/api-keys", { name: "x", permissions: { prod: { API_BP: "all" } } });
  assertError(one, 400, "VALIDATION_ERROR", "permissions.prod.API_BP: must be an object of entity name or '*' -> operations", [
    { field: "permissions.prod.API_BP", message: "must be an object of entity name or '*' -> operations" },
  ]);

  const created = await createKey(w, { name: "ok" });
  const patched = await patch(w.app, `/admin/api-keys/${created.id}`, { permissions: { "*": { "*": { "*": ["get"] } } } });
  assertError(
    patched,
    400,
    "VALIDATION_ERROR",
    "permissions.*: instances must be named: '*' is not allowed at the instance level, so that a key never gains future instances",
    [
      {
        field: "permissions.*",
        message:
          "instances must be named: '*' is not allowed at the instance level, so that a key never gains future instances",
      },
    ],
  );
  assert.equal(Object.keys((await w.store.apiKeys.get(created.id))!.permissions), [], "unchanged");
});

it("an admin key with permissions -> 400 on create (a contradictory request), 409 on PATCH (the key's type refuses it)", async (w) => {
  const message = "admin keys have no permissions: they manage erplink, not data";
  assertError(
    await post(w.app, "/admin/api-keys", { name: "ops", type: "admin", permissions: { prod: { "*": { "*": ["get"] } } } }),
    400,
    "VALIDATION_ERROR",
    `permissions: ${message}`,
    [{ field: "permissions", message }],
  );
  const admin = await createKey(w, { name: "ops", type: "admin", permissions: {} });
  assertError(
    await patch(w.app, `/admin/api-keys/${admin.id}`, { permissions: { prod: { "*": { "*": ["get"] } } } }),
    409,
    "CONFLICT",
    `permissions: ${message}`,
  );
  assert.is((await patch(w.app, `/admin/api-keys/${admin.id}`, { permissions: {} })).statusCode, 200, "no permissions is fine");
});

for (const type of ["superuser", "API_KEY_TYPE_ADMIN", "ADMIN", "unspecified"]) {
  it(`type ${JSON.stringify(type)} -> 400 (REST spells types "data" and "admin")`, async (w) => {
    const res = await post(w.app, "/admin/api-keys", { name: "x", type });
    assertError(res, 400, "VALIDATION_ERROR", "type: must be equal to one of the allowed values", [
      { field: "type", message: "must be equal to one of the allowed values" },
    ]);
    assert.equal(json(await get(w, "/admin/api-keys")).data, [], "nothing stored");
  });
}

it('type "data" and "admin" are accepted and echoed', async (w) => {
  assert.is((await createKey(w, { name: "d", type: "data" })).type, "data");
  assert.is((await createKey(w, { name: "a", type: "admin" })).type, "admin");
  assert.equal((await w.store.apiKeys.list({ limit: 10 })).items.map((k) => k.type), ["data", "admin"]);
});

it("output-only fields on create -> 400 listing each", async (w) => {
  const res = await post(w.app, "/admin/api-keys", {
    name: "x",
    id: "key_01J00000000000000000000000",
    prefix: "erpl_chosen1",
    created_at: "2026-01-01T00:00:00Z",
  });
  assertError(res, 400, "VALIDATION_ERROR", "3 fields are invalid", [
    { field: "id", message: "is set by the server and cannot be written" },
    { field: "prefix", message: "is set by the server and cannot be written" },
    { field: "created_at", message: "is set by the server and cannot be written" },
  ]);
});

it("GET and DELETE of unknown keys -> 404; list pages through keys", async (w) => {
  assertError(await get(w, "/admin/api-keys/key_00000000000000000000000000"), 404, "NOT_FOUND", 'API key "key_00000000000000000000000000" not found');
  assertError(await del(w, "/admin/api-keys/key_00000000000000000000000000"), 404, "NOT_FOUND", 'API key "key_00000000000000000000000000" not found');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    w.now = new Date(w.now.getTime() + 1000);
    ids.push((await createKey(w, { name: `k${i}` })).id);
  }
  const first = json(await get(w, "/admin/api-keys?page_size=2"));
  assert.equal(first.data.map((k: { id: string }) => k.id), ids.slice(0, 2));
  assert.type(first.meta.nextPageToken, "string");
  const second = json(await get(w, `/admin/api-keys?page_size=2&page_token=${encodeURIComponent(first.meta.nextPageToken)}`));
  assert.equal(second.data.map((k: { id: string }) => k.id), ids.slice(2));
  assert.equal(Object.keys(second.meta), ["requestId"]);
});

test.run();
