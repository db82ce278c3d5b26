/**
 * ApiKeyService through typed Connect clients over the in-process router
 * transport: issuing (secret once, hash stored), get, list paging, update
 * with a field mask, revoke, validation details, and who may call it.
 */
import { createHash } from "node:crypto";
import { toJson, type DescService } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, createClient, createRouterTransport, type Client } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  ApiKeySchema,
  ApiKeyService,
  ApiKeyType,
  type ApiKey,
} from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { ms, rejects, tick, violations, worldTests, type TestWorld } from "../../test-support/rpc.js";

type World = TestWorld;

const test = suite("ApiKeyService");
const it = worldTests(test);

const KEY_ID = /^key_[0-9A-HJKMNP-TV-Z]{26}$/;
const SECRET = /^erpl_[0-9A-Za-z]{49}$/;
const UNKNOWN_ID = "key_01J00000000000000000000000";
const MISSING_TOKEN = "missing bearer token: send Authorization: Bearer <token>";
const ADMIN_PERMS = "admin keys have no permissions: they manage erplink, not data";

function sha256(s: string): string {
  return createHash("sha256").update(s, "utf8").digest("hex");
}

function asJson(k: ApiKey | undefined): unknown {
  assert.ok(k, "api key is set");
  return toJson(ApiKeySchema, k);
}

/** A client of the public router (authenticated and counted) presenting `token`. */
function clientAs<S extends DescService>(w: World, service: S, token: string): Client<S> {
  const transport = createRouterTransport(w.layer.routes, {
    router: { interceptors: [...w.layer.publicInterceptors] },
    transport: {
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${token}`);
          return next(req);
        },
      ],
    },
  });
  return createClient(service, transport);
}

async function createKey(w: World, apiKey: Parameters<Client<typeof ApiKeyService>["createApiKey"]>[0]["apiKey"]) {
  const res = await w.client(ApiKeyService).createApiKey({ apiKey });
  assert.ok(res.apiKey);
  return { apiKey: res.apiKey, secret: res.key };
}

// --- create -----------------------------------------------------------------

it("CreateApiKey issues a data key by default with a secret, its prefix and normalized permissions", async (w) => {
  const { apiKey, secret } = await createKey(w, {
    name: "billing",
    permissions: { prod: { API_BP: { A_BusinessPartner: ["delete", "list", "get", "list"] } } },
    rateLimits: { perMinute: 5 },
  });
  assert.match(secret, SECRET);
  assert.match(apiKey.id, KEY_ID);
  assert.is(apiKey.prefix, secret.slice(0, 12));
  assert.is(apiKey.type, ApiKeyType.DATA);
  assert.equal(apiKey.permissions, { prod: { API_BP: { A_BusinessPartner: ["list", "get", "delete"] } } });
  assert.is(apiKey.rateLimits?.perMinute, 5);
  assert.is(apiKey.rateLimits?.perDay, undefined);
  assert.is(apiKey.expiresAt, undefined);
  assert.is(apiKey.lastUsedAt, undefined);
  assert.is(ms(apiKey.createdAt), w.now.getTime());
  assert.is(ms(apiKey.updatedAt), w.now.getTime());

  const rec = await w.store.apiKeys.get(apiKey.id);
  assert.ok(rec);
  assert.is(rec.keyHash, sha256(secret));
  assert.is(rec.type, "data");
  for (const [field, value] of Object.entries(rec)) assert.is.not(value, secret, field);
});

it("CreateApiKey of an admin key has no permissions", async (w) => {
  const { apiKey, secret } = await createKey(w, { name: "ops", type: ApiKeyType.ADMIN });
  assert.match(secret, SECRET);
  assert.is(apiKey.type, ApiKeyType.ADMIN);
  assert.is(apiKey.permissions, undefined);
  assert.is((await w.store.apiKeys.get(apiKey.id))?.type, "admin");
});

it("the secret is only in CreateApiKey's response", async (w) => {
  const { apiKey, secret } = await createKey(w, { name: "once" });
  const c = w.client(ApiKeyService);
  const responses = [
    await c.getApiKey({ id: apiKey.id }),
    await c.listApiKeys({}),
    await c.updateApiKey({ apiKey: { id: apiKey.id, name: "renamed" }, updateMask: { paths: ["name"] } }),
    await c.deleteApiKey({ id: apiKey.id }),
  ];
  for (const res of responses) {
    const text = JSON.stringify(res, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
    assert.ok(text.includes(apiKey.prefix), `${res.$typeName} shows the key`);
    assert.not.ok(text.includes(secret), `${res.$typeName} holds the secret`);
  }
});

it("CreateApiKey without api_key -> InvalidArgument api_key", async (w) => {
  const err = await rejects(w.client(ApiKeyService).createApiKey({}), Code.InvalidArgument, "api_key: is required");
  assert.equal(violations(err), [{ field: "api_key", description: "is required" }]);
});

it("CreateApiKey checks name, output-only fields and rate limits, listing every violation", async (w) => {
  const c = w.client(ApiKeyService);
  const err = await rejects(
    c.createApiKey({
      apiKey: {
        id: UNKNOWN_ID,
        name: "",
        prefix: "erpl_chosen1",
        rateLimits: { perMinute: 0, perDay: -3 },
        expiresAt: timestampFromDate(w.now),
        lastUsedAt: timestampFromDate(w.now),
      },
    }),
    Code.InvalidArgument,
    "6 fields are invalid",
  );
  // An expiry that is not in the future is no violation (see below).
  assert.equal(violations(err), [
    { field: "id", description: "is set by the server and cannot be written" },
    { field: "name", description: "is required" },
    { field: "rate_limits.per_minute", description: "must be greater than zero" },
    { field: "rate_limits.per_day", description: "must be greater than zero" },
    { field: "prefix", description: "is set by the server and cannot be written" },
    { field: "last_used_at", description: "is set by the server and cannot be written" },
  ]);
  await rejects(
    c.createApiKey({ apiKey: { name: "x".repeat(101) } }),
    Code.InvalidArgument,
    "name: must be at most 100 characters (got 101)",
  );
  assert.is((await c.listApiKeys({})).apiKeys.length, 0, "nothing stored");
  // The bounds themselves are fine.
  const ok = await createKey(w, {
    name: "x".repeat(100),
    rateLimits: { perMinute: 1, perDay: 1 },
    expiresAt: timestampFromDate(new Date(w.now.getTime() + 1)),
  });
  assert.is(ms(ok.apiKey.expiresAt), w.now.getTime() + 1);
});

it("an expiry in the past is accepted on create and update: the key is stored expired, and stops working at once", async (w) => {
  const c = w.client(ApiKeyService);
  const past = timestampFromDate(new Date(w.now.getTime() - 60_000));
  const created = await createKey(w, { name: "dead on arrival", expiresAt: past });
  assert.is(ms(created.apiKey.expiresAt), w.now.getTime() - 60_000);
  await rejects(clientAs(w, SystemService, created.secret).listSystems({}), Code.Unauthenticated, "API key expired");
  const { apiKey: live, secret } = await createKey(w, { name: "ops", type: ApiKeyType.ADMIN });
  assert.is((await clientAs(w, SystemService, secret).listSystems({})).systems.length, 0, "works before");
  const expired = await c.updateApiKey({ apiKey: { id: live.id, expiresAt: timestampFromDate(w.now) }, updateMask: { paths: ["expires_at"] } });
  assert.is(ms(expired.apiKey?.expiresAt), w.now.getTime());
  await rejects(clientAs(w, SystemService, secret).listSystems({}), Code.Unauthenticated, "API key expired");
  // Still listed (unlike a revoked key), and an expiry moved on revives it.
  assert.ok((await c.listApiKeys({})).apiKeys.some((k) => k.id === live.id));
  await c.updateApiKey({ apiKey: { id: live.id, expiresAt: timestampFromDate(new Date(w.now.getTime() + 60_000)) }, updateMask: { paths: ["expires_at"] } });
  assert.is((await clientAs(w, SystemService, secret).listSystems({})).systems.length, 0, "works again");
});

it("CreateApiKey reports permission violations with their paths", async (w) => {
  const err = await rejects(
    w.client(ApiKeyService).createApiKey({
      apiKey: {
        name: "x",
        permissions: {
          "*": { "*": { "*": ["list"] } },
          prod: { API_BP: { A_BusinessPartner: ["list", "get", "drop"] }, "bad name": { "*": ["get"] } },
        },
      },
    }),
    Code.InvalidArgument,
    "3 fields are invalid",
  );
  assert.equal(violations(err), [
    {
      field: "permissions.*",
      description:
        "instances must be named: '*' is not allowed at the instance level, so that a key never gains future instances",
    },
    { field: "permissions.prod.API_BP.A_BusinessPartner[2]", description: "must be one of list, get, create, update, delete, invoke" },
    { field: "permissions.prod.bad name", description: "must be a service name or '*'" },
  ]);
});

it("CreateApiKey of an admin key with permissions -> InvalidArgument", async (w) => {
  const err = await rejects(
    w.client(ApiKeyService).createApiKey({
      apiKey: { name: "ops", type: ApiKeyType.ADMIN, permissions: { prod: { "*": { "*": ["get"] } } } },
    }),
    Code.InvalidArgument,
    `permissions: ${ADMIN_PERMS}`,
  );
  assert.equal(violations(err), [{ field: "permissions", description: ADMIN_PERMS }]);
});

// --- get / list ---------------------------------------------------------------

it("GetApiKey returns the key as created; unknown or malformed -> NotFound naming the id; empty -> InvalidArgument", async (w) => {
  const { apiKey } = await createKey(w, { name: "k", permissions: { prod: { "*": { "*": ["get"] } } } });
  tick(w);
  const c = w.client(ApiKeyService);
  assert.equal(asJson((await c.getApiKey({ id: apiKey.id })).apiKey), asJson(apiKey));
  await rejects(c.getApiKey({ id: UNKNOWN_ID }), Code.NotFound, `API key "${UNKNOWN_ID}" not found`);
  // Another type's id, or no id at all, names no API key either.
  await rejects(c.getApiKey({ id: "sys_01J00000000000000000000000" }), Code.NotFound, 'API key "sys_01J00000000000000000000000" not found');
  await rejects(c.getApiKey({ id: `key_${"x".repeat(200)}` }), Code.NotFound, `API key "key_${"x".repeat(96)}…" not found`);
  await rejects(c.getApiKey({ id: "" }), Code.InvalidArgument, "id: is required");
});

it("ListApiKeys pages over keys oldest first", async (w) => {
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    tick(w);
    ids.push((await createKey(w, { name: `k${i}`, type: i % 2 ? ApiKeyType.ADMIN : ApiKeyType.DATA })).apiKey.id);
  }
  const c = w.client(ApiKeyService);
  const seen: string[] = [];
  let token = "";
  let pages = 0;
  do {
    const res = await c.listApiKeys({ pageSize: 2, pageToken: token });
    assert.ok(res.apiKeys.length <= 2);
    seen.push(...res.apiKeys.map((k) => k.id));
    token = res.nextPageToken;
    pages++;
  } while (token !== "");
  assert.is(pages, 3);
  assert.equal(seen, ids);

  const all = await c.listApiKeys({});
  assert.equal(all.apiKeys.map((k) => k.id), ids);
  assert.is(all.nextPageToken, "");
  const exact = await c.listApiKeys({ pageSize: 5 });
  assert.is(exact.apiKeys.length, 5);
  assert.is(exact.nextPageToken, "", "no token when nothing follows");

  const bad = await rejects(c.listApiKeys({ pageSize: 501, pageToken: "nope" }), Code.InvalidArgument, "2 fields are invalid");
  assert.equal(violations(bad), [
    { field: "page_size", description: "must be between 1 and 500" },
    { field: "page_token", description: "is not a token this list returned" },
  ]);
  const sysToken = Buffer.from("v1:sys_01J00000000000000000000000").toString("hex");
  await rejects(c.listApiKeys({ pageToken: sysToken }), Code.InvalidArgument, "page_token: is not a token this list returned");
});

// --- update -------------------------------------------------------------------

it("UpdateApiKey changes only the masked fields and sets updated_at", async (w) => {
  const { apiKey } = await createKey(w, {
    name: "k",
    permissions: { prod: { API_BP: { "*": ["list"] } } },
    rateLimits: { perMinute: 10, perDay: 100 },
    expiresAt: timestampFromDate(new Date(w.now.getTime() + 86_400_000)),
  });
  tick(w, 5000);
  const c = w.client(ApiKeyService);
  const res = await c.updateApiKey({
    apiKey: {
      id: apiKey.id,
      name: "ignored, not in the mask",
      permissions: { dev: { "*": { A_Product: ["update", "get", "get"] } } },
      rateLimits: { perDay: 50 },
    },
    updateMask: { paths: ["permissions", "rate_limits"] },
  });
  assert.ok(res.apiKey);
  assert.is(res.apiKey.name, "k");
  assert.equal(res.apiKey.permissions, { dev: { "*": { A_Product: ["get", "update"] } } });
  assert.is(res.apiKey.rateLimits?.perMinute, undefined);
  assert.is(res.apiKey.rateLimits?.perDay, 50);
  assert.is(ms(res.apiKey.expiresAt), ms(apiKey.expiresAt));
  assert.is(ms(res.apiKey.createdAt), ms(apiKey.createdAt));
  assert.is(ms(res.apiKey.updatedAt), w.now.getTime());
  assert.is(res.apiKey.prefix, apiKey.prefix);
  assert.equal(asJson((await c.getApiKey({ id: apiKey.id })).apiKey), asJson(res.apiKey));

  const renamed = await c.updateApiKey({ apiKey: { id: apiKey.id, name: "k2" }, updateMask: { paths: ["name"] } });
  assert.is(renamed.apiKey?.name, "k2");
  assert.equal(renamed.apiKey?.permissions, { dev: { "*": { A_Product: ["get", "update"] } } });

  // expires_at in the mask without a value clears it.
  const cleared = await c.updateApiKey({ apiKey: { id: apiKey.id }, updateMask: { paths: ["expires_at"] } });
  assert.is(cleared.apiKey?.expiresAt, undefined);
  assert.is((await w.store.apiKeys.get(apiKey.id))?.expiresAt, undefined);
});

it("UpdateApiKey refuses type, output-only, unknown and empty masks", async (w) => {
  const { apiKey } = await createKey(w, { name: "k" });
  const c = w.client(ApiKeyService);
  const err = await rejects(
    c.updateApiKey({
      apiKey: { id: apiKey.id, type: ApiKeyType.ADMIN, prefix: "erpl_x", name: "n" },
      updateMask: { paths: ["type", "prefix", "id", "last_used_at", "created_at", "secret", "name"] },
    }),
    Code.InvalidArgument,
    "6 fields are invalid",
  );
  assert.equal(violations(err), [
    { field: "type", description: "cannot be changed after creation" },
    { field: "prefix", description: "is set by the server and cannot be written" },
    { field: "id", description: "is set by the server and cannot be written" },
    { field: "last_used_at", description: "is set by the server and cannot be written" },
    { field: "created_at", description: "is set by the server and cannot be written" },
    { field: "secret", description: "is not a field of this resource" },
  ]);
  await rejects(
    c.updateApiKey({ apiKey: { id: apiKey.id, type: ApiKeyType.ADMIN }, updateMask: { paths: ["type"] } }),
    Code.InvalidArgument,
    "type: cannot be changed after creation",
  );
  await rejects(
    c.updateApiKey({ apiKey: { id: apiKey.id, name: "n" }, updateMask: { paths: [] } }),
    Code.InvalidArgument,
    "update_mask: must name at least one field to change",
  );
  await rejects(c.updateApiKey({ apiKey: { id: apiKey.id, name: "n" } }), Code.InvalidArgument, "update_mask: must name at least one field to change");
  const rec = await w.store.apiKeys.get(apiKey.id);
  assert.is(rec?.type, "data");
  assert.is(rec?.name, "k");
});

it("UpdateApiKey validates the new values", async (w) => {
  const { apiKey } = await createKey(w, { name: "k" });
  const { apiKey: admin } = await createKey(w, { name: "ops", type: ApiKeyType.ADMIN });
  const c = w.client(ApiKeyService);
  const err = await rejects(
    c.updateApiKey({
      apiKey: { id: apiKey.id, name: "", rateLimits: { perMinute: 0 }, expiresAt: timestampFromDate(new Date(w.now.getTime() - 1)) },
      updateMask: { paths: ["name", "rate_limits", "expires_at"] },
    }),
    Code.InvalidArgument,
    "2 fields are invalid",
  );
  assert.equal(violations(err), [
    { field: "name", description: "is required" },
    { field: "rate_limits.per_minute", description: "must be greater than zero" },
  ]);
  const perms = await rejects(
    c.updateApiKey({ apiKey: { id: apiKey.id, permissions: { prod: { API_BP: { X: ["get", 3] } } } }, updateMask: { paths: ["permissions"] } }),
    Code.InvalidArgument,
    "permissions.prod.API_BP.X[1]: must be one of list, get, create, update, delete, invoke",
  );
  assert.equal(violations(perms), [{ field: "permissions.prod.API_BP.X[1]", description: "must be one of list, get, create, update, delete, invoke" }]);
  // Permissions for an existing admin key: a well-formed request that the key's type (which it
  // cannot change) refuses: failed_precondition (409 CONFLICT on REST), with no field violation.
  const adminErr = await rejects(
    c.updateApiKey({ apiKey: { id: admin.id, permissions: { prod: { "*": { "*": ["get"] } } } }, updateMask: { paths: ["permissions"] } }),
    Code.FailedPrecondition,
    `permissions: ${ADMIN_PERMS}`,
  );
  assert.equal(violations(adminErr), []);
  // Empty permissions are fine for an admin key.
  const ok = await c.updateApiKey({ apiKey: { id: admin.id, permissions: {} }, updateMask: { paths: ["permissions"] } });
  assert.is(ok.apiKey?.permissions, undefined);
});

it("UpdateApiKey of an unknown key -> NotFound; without an id -> InvalidArgument", async (w) => {
  const c = w.client(ApiKeyService);
  await rejects(
    c.updateApiKey({ apiKey: { id: UNKNOWN_ID, name: "n" }, updateMask: { paths: ["name"] } }),
    Code.NotFound,
    `API key "${UNKNOWN_ID}" not found`,
  );
  await rejects(c.updateApiKey({ apiKey: { name: "n" }, updateMask: { paths: ["name"] } }), Code.InvalidArgument, "id: is required");
  await rejects(c.updateApiKey({ updateMask: { paths: ["name"] } }), Code.InvalidArgument, "api_key: is required");
});

// --- delete ---------------------------------------------------------------------

it("DeleteApiKey returns the key as it was; then it is gone", async (w) => {
  const { apiKey } = await createKey(w, { name: "k", permissions: { prod: { "*": { "*": ["get"] } } } });
  const c = w.client(ApiKeyService);
  const res = await c.deleteApiKey({ id: apiKey.id });
  assert.equal(asJson(res.apiKey), asJson(apiKey));
  await rejects(c.getApiKey({ id: apiKey.id }), Code.NotFound, `API key "${apiKey.id}" not found`);
  await rejects(c.deleteApiKey({ id: apiKey.id }), Code.NotFound, `API key "${apiKey.id}" not found`);
  await rejects(c.deleteApiKey({ id: "nope" }), Code.NotFound, 'API key "nope" not found');
  assert.is(await w.store.apiKeys.get(apiKey.id), undefined);
});

// --- who may call -----------------------------------------------------------------

it("every ApiKeyService RPC without a token -> Unauthenticated", async (w) => {
  const { apiKey } = await createKey(w, { name: "k" });
  const anon = createClient(ApiKeyService, w.transport);
  const calls: [string, Promise<unknown>][] = [
    ["GetApiKey", anon.getApiKey({ id: apiKey.id })],
    ["ListApiKeys", anon.listApiKeys({})],
    ["CreateApiKey", anon.createApiKey({ apiKey: { name: "x", type: ApiKeyType.ADMIN } })],
    ["UpdateApiKey", anon.updateApiKey({ apiKey: { id: apiKey.id, name: "x" }, updateMask: { paths: ["name"] } })],
    ["DeleteApiKey", anon.deleteApiKey({ id: apiKey.id })],
    ["ExplainApiKey", anon.explainApiKey({ id: apiKey.id, dataRequest: { instance: "prod", method: "GET", url: "S/E" } })],
  ];
  assert.equal(
    calls.map(([name]) => name).sort(),
    ApiKeyService.methods.map((m) => m.name).sort(),
    "every RPC of the service is covered",
  );
  for (const [, call] of calls) await rejects(call, Code.Unauthenticated, MISSING_TOKEN);
  const list = await w.client(ApiKeyService).listApiKeys({});
  assert.equal(list.apiKeys.map((k) => [k.id, k.name]), [[apiKey.id, "k"]], "nothing created, changed or deleted");
});

it("an admin key is a bearer token for ApiKeyService over the public router", async (w) => {
  const { apiKey: admin, secret } = await createKey(w, { name: "ops", type: ApiKeyType.ADMIN });
  const c = clientAs(w, ApiKeyService, secret);
  const issued = await c.createApiKey({ apiKey: { name: "app", permissions: { prod: { "*": { "*": ["get"] } } } } });
  assert.match(issued.key, SECRET);
  assert.ok(issued.apiKey);
  assert.equal((await c.listApiKeys({})).apiKeys.map((k) => k.id), [admin.id, issued.apiKey.id]);
  assert.is((await c.getApiKey({ id: issued.apiKey.id })).apiKey?.name, "app");
  const renamed = await c.updateApiKey({ apiKey: { id: issued.apiKey.id, name: "app2" }, updateMask: { paths: ["name"] } });
  assert.is(renamed.apiKey?.name, "app2");
  await c.deleteApiKey({ id: issued.apiKey.id });
  await rejects(c.getApiKey({ id: issued.apiKey.id }), Code.NotFound, `API key "${issued.apiKey.id}" not found`);
  // Other admin services too.
  assert.is((await clientAs(w, SystemService, secret).listSystems({})).systems.length, 0);

  // Its use is recorded (pending until the next flush).
  const seen = await w.client(ApiKeyService).getApiKey({ id: admin.id });
  assert.is(ms(seen.apiKey?.lastUsedAt), w.now.getTime());
});

it("a data key on ApiKeyService -> PermissionDenied 'API key is not an admin key'", async (w) => {
  const { apiKey, secret } = await createKey(w, { name: "app", permissions: { prod: { "*": { "*": ["get"] } } } });
  const c = clientAs(w, ApiKeyService, secret);
  await rejects(c.listApiKeys({}), Code.PermissionDenied, "API key is not an admin key");
  await rejects(c.getApiKey({ id: apiKey.id }), Code.PermissionDenied, "API key is not an admin key");
  await rejects(c.createApiKey({ apiKey: { name: "escalate", type: ApiKeyType.ADMIN } }), Code.PermissionDenied, "API key is not an admin key");
  await rejects(
    c.updateApiKey({ apiKey: { id: apiKey.id, name: "x" }, updateMask: { paths: ["name"] } }),
    Code.PermissionDenied,
    "API key is not an admin key",
  );
  await rejects(c.deleteApiKey({ id: apiKey.id }), Code.PermissionDenied, "API key is not an admin key");
  const list = await w.client(ApiKeyService).listApiKeys({});
  assert.equal(list.apiKeys.map((k) => k.name), ["app"]);
  assert.is(list.apiKeys[0]?.lastUsedAt, undefined, "a refused key is not recorded as used");
});

it("a revoked or expired admin key -> Unauthenticated over the public router", async (w) => {
  const revoked = await createKey(w, { name: "old", type: ApiKeyType.ADMIN });
  const expiring = await createKey(w, {
    name: "temp",
    type: ApiKeyType.ADMIN,
    expiresAt: timestampFromDate(new Date(w.now.getTime() + 10_000)),
  });
  const r = clientAs(w, ApiKeyService, revoked.secret);
  const e = clientAs(w, ApiKeyService, expiring.secret);
  await r.listApiKeys({});
  await e.listApiKeys({});
  await w.client(ApiKeyService).deleteApiKey({ id: revoked.apiKey.id });
  await rejects(r.listApiKeys({}), Code.Unauthenticated, "invalid bearer token");
  tick(w, 10_000);
  await rejects(e.listApiKeys({}), Code.Unauthenticated, "API key expired");
  const wrong = `${expiring.secret.slice(0, -1)}${expiring.secret.endsWith("0") ? "1" : "0"}`;
  await rejects(clientAs(w, ApiKeyService, wrong).listApiKeys({}), Code.Unauthenticated, "invalid bearer token");
});

test.run();
