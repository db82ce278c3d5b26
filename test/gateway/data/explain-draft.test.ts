/**
 * Explaining a draft of a key's permissions (`permissions` beside the
 * explained request in `POST /admin/api-keys/{id}/explain`), through the
 * REST facade against the recording upstream of the data path's case table:
 *
 * - the draft decides instead of the saved permissions, both ways; the
 *   key's type, expiry and limits stay the saved key's;
 * - a bad draft is refused as an update refuses it (400 with the fields
 *   under `permissions`, 409 for an admin key), and unknown fields still are;
 * - nothing is written: the key, its audit trail and the request log stay
 *   as they were;
 * - a differential over the data path's shared case table: explaining key
 *   A with key B's permissions as the draft gives exactly what explaining
 *   key B gives.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  DATA_CASES as CASES,
  JSON_TYPE,
  SALES,
  explainRequestOf,
  startCaseWorld,
  stopCaseWorld,
  type CaseWorld as Ctx,
} from "../../../test-support/data-cases.js";
import { AUTH } from "../../../test-support/world.js";
import { json, patch, post } from "../../../test-support/http.js";

const Draft = suite<Ctx>("explain a draft of a key's permissions");

Draft.before.each(async (ctx) => {
  Object.assign(ctx, await startCaseWorld());
});

Draft.after.each(async (ctx) => {
  await stopCaseWorld(ctx);
});

const explainPath = (ctx: Ctx, key: string) => `/admin/api-keys/${ctx.keys[key]!.id}/explain`;

/** Explains `request` for `key` (with a draft when given); the envelope's `data`, after a 200. */
async function explain(ctx: Ctx, key: string, request: Record<string, unknown>, draft?: unknown) {
  const res = await post(ctx.world.app, explainPath(ctx, key), draft === undefined ? request : { ...request, permissions: draft });
  assert.is(res.statusCode, 200, res.body);
  return json(res).data;
}

/** The saved permissions of a key, as the REST facade returns them. */
async function savedPermissions(ctx: Ctx, key: string) {
  const res = await ctx.world.app.inject({ method: "GET", url: `/admin/api-keys/${ctx.keys[key]!.id}`, headers: AUTH });
  return json(res).data.permissions;
}

const LIST_ORDERS = { instance: "prod", method: "GET", url: `${SALES}/SalesOrders?$top=2` };
const DELETE_ORDER = { instance: "prod", method: "DELETE", url: `${SALES}/SalesOrders(1)` };

Draft("a draft that allows what the saved permissions deny is explained as allowed, and the reverse", async (ctx) => {
  // reader may list SalesOrders but not delete them.
  const saved = await explain(ctx, "reader", DELETE_ORDER);
  assert.equal(
    [saved.allowed, saved.status, saved.code, saved.message, saved.denial_step],
    [false, 403, "FORBIDDEN", "API key lacks permission 'delete' for entity 'SalesOrders'", "OPERATION"],
  );
  const widened = await explain(ctx, "reader", DELETE_ORDER, { prod: { SALES: { SalesOrders: ["delete"] } } });
  assert.equal(
    [widened.key_id, widened.allowed, widened.status, widened.code, widened.message, widened.denial_step],
    [ctx.keys.reader!.id, true, 0, "", "", ""],
  );
  assert.equal(widened.accesses, [{ entity_set: "SalesOrders", operation: "delete", reason: "resource path", allowed: true }]);
  assert.equal([widened.request.method, widened.request.target], ["DELETE", "SalesOrders(1)"]);

  assert.is((await explain(ctx, "reader", LIST_ORDERS)).allowed, true);
  const narrowed = await explain(ctx, "reader", LIST_ORDERS, { prod: { SALES: { SalesOrders: ["get"] } } });
  assert.equal(
    [narrowed.allowed, narrowed.status, narrowed.code, narrowed.message, narrowed.denial_step],
    [false, 403, "FORBIDDEN", "API key lacks permission 'list' for entity 'SalesOrders'", "OPERATION"],
  );
  // An empty draft is a key with no permissions at all (not the saved ones).
  const none = await explain(ctx, "reader", LIST_ORDERS, {});
  assert.equal(
    [none.allowed, none.status, none.message, none.denial_step],
    [false, 403, "API key has no access to instance 'prod'", "INSTANCE"],
  );
  // The same data key: the rate limits looked at are its own.
  assert.equal(Object.keys(narrowed.rate_limit).sort(), Object.keys((await explain(ctx, "reader", LIST_ORDERS)).rate_limit).sort());
  assert.is(narrowed.within_rate_limits, true);
});

Draft("the draft replaces only the permissions: an expired key is still 401 and a spent budget still 429", async (ctx) => {
  const app = ctx.world.app;
  const limited = json(
    await post(app, "/admin/api-keys", {
      name: "limited",
      permissions: { prod: { SALES: { SalesOrders: ["list"] } } },
      rate_limits: { per_minute: 1 },
      expires_at: new Date(ctx.world.now.getTime() + 60_000).toISOString(),
    }),
  ).data;
  const draft = { prod: { SALES: { SalesOrders: ["list", "delete"] } } };
  const url = `/admin/api-keys/${limited.id}/explain`;
  assert.is((await app.inject({ method: "GET", url: `${SALES}/SalesOrders`, headers: { authorization: `Bearer ${limited.key}` } })).statusCode, 201);
  const spent = json(await post(app, url, { ...DELETE_ORDER, permissions: draft })).data;
  assert.equal(
    [spent.allowed, spent.status, spent.code, spent.denial_step, spent.within_rate_limits, spent.rate_limit.remaining],
    [false, 429, "RATE_LIMITED", "RATE_LIMITED", false, "0"],
  );
  ctx.world.now = new Date(ctx.world.now.getTime() + 61_000);
  const expired = json(await post(app, url, { ...DELETE_ORDER, permissions: draft })).data;
  assert.equal([expired.allowed, expired.status, expired.code, expired.message, expired.denial_step], [false, 401, "UNAUTHORIZED", "API key expired", "KEY_INVALID"]);
});

Draft("a bad draft is refused as an update refuses it: 400 with the fields under permissions; '__proto__' is refused by the JSON parser", async (ctx) => {
  const app = ctx.world.app;
  const url = explainPath(ctx, "reader");
  const res = await post(app, url, { ...LIST_ORDERS, permissions: { "*": { SALES: { X: ["get"] } }, prod: { SALES: { SalesOrders: ["read", "get"], Customers: [] } } } });
  const star = "instances must be named: '*' is not allowed at the instance level, so that a key never gains future instances";
  const expected = [
    { field: "permissions.*", message: star },
    { field: "permissions.prod.SALES.SalesOrders[0]", message: "must be one of list, get, create, update, delete, invoke" },
    { field: "permissions.prod.SALES.Customers", message: "must list at least one operation" },
  ];
  assert.equal([res.statusCode, json(res).error.code, json(res).error.message, json(res).error.details], [400, "VALIDATION_ERROR", "3 fields are invalid", expected]);
  // PATCH gives the same details for the same permissions.
  const same = await patch(app, `/admin/api-keys/${ctx.keys.reader!.id}`, { permissions: { "*": { SALES: { X: ["get"] } }, prod: { SALES: { SalesOrders: ["read", "get"], Customers: [] } } } });
  assert.equal([same.statusCode, json(same).error.details], [400, expected]);
  // Not an object: the body's shape check, as for PATCH.
  const notObject = await post(app, url, { ...LIST_ORDERS, permissions: ["prod"] });
  assert.equal([notObject.statusCode, json(notObject).error.message], [400, "permissions: must be an object"]);
  const proto = await app.inject({
    method: "POST",
    url,
    headers: { ...AUTH, ...JSON_TYPE },
    payload: JSON.stringify(LIST_ORDERS).replace(/}$/, ',"permissions":{"prod":{"__proto__":{"SalesOrders":["list"]}}}}'),
  });
  assert.equal([proto.statusCode, json(proto).error.code, json(proto).error.message], [400, "VALIDATION_ERROR", "request body is not valid JSON"]);
  // An unknown field beside the draft is still refused.
  const unknown = await post(app, url, { ...LIST_ORDERS, permissions: {}, permission: {} });
  assert.equal(
    [unknown.statusCode, json(unknown).error.message, json(unknown).error.details],
    [400, "permission: is not a known field", [{ field: "permission", message: "is not a known field" }]],
  );
  // The saved permissions are untouched.
  assert.equal(await savedPermissions(ctx, "reader"), { prod: { SALES: { SalesOrders: ["list", "get"], Customers: ["get"] } }, ghost: { "*": { "*": ["list"] } } });
});

Draft("a draft for an admin key is 409 CONFLICT, as PATCH answers; an empty one explains the admin key (403 KEY_INVALID)", async (ctx) => {
  const app = ctx.world.app;
  const message = "permissions: admin keys have no permissions: they manage erplink, not data";
  const draft = { prod: { SALES: { SalesOrders: ["list"] } } };
  const explained = await post(app, explainPath(ctx, "admin"), { ...LIST_ORDERS, permissions: draft });
  const patched = await patch(app, `/admin/api-keys/${ctx.keys.admin!.id}`, { permissions: draft });
  for (const res of [explained, patched]) {
    assert.equal([res.statusCode, json(res).error.code, json(res).error.message, json(res).error.details], [409, "CONFLICT", message, undefined]);
  }
  const empty = await explain(ctx, "admin", LIST_ORDERS, {});
  assert.equal([empty.allowed, empty.status, empty.code, empty.denial_step], [false, 403, "FORBIDDEN", "KEY_INVALID"]);
  // An unknown key is 404 with or without a draft.
  const unknown = await post(app, "/admin/api-keys/key_00000000000000000000000000/explain", { ...LIST_ORDERS, permissions: draft });
  assert.equal([unknown.statusCode, json(unknown).error.message], [404, 'API key "key_00000000000000000000000000" not found']);
});

Draft("explaining a draft writes nothing: the key, its audit trail and the request log are unchanged", async (ctx) => {
  const app = ctx.world.app;
  const id = ctx.keys.reader!.id;
  const before = await app.inject({ method: "GET", url: `/admin/api-keys/${id}`, headers: AUTH });
  const trail = async () => json(await app.inject({ method: "GET", url: `/admin/audit?resource_id=${id}`, headers: AUTH })).data;
  const auditBefore = await trail();
  assert.is(auditBefore.length, 1, "its creation");
  await explain(ctx, "reader", DELETE_ORDER, { prod: { SALES: { SalesOrders: ["delete"] } } });
  const after = await app.inject({ method: "GET", url: `/admin/api-keys/${id}`, headers: AUTH });
  assert.equal(json(after).data, json(before).data);
  assert.equal(await trail(), auditBefore);
  // Stored as null-prototype objects: compared as JSON.
  assert.equal(JSON.parse(JSON.stringify((await ctx.world.store.apiKeys.get(id))!.permissions)), { prod: { SALES: { SalesOrders: ["list", "get"], Customers: ["get"] } }, ghost: { "*": { "*": ["list"] } } });
  await ctx.world.layer.logWriter.flush();
  const logged = (await ctx.world.store.logs.query({ limit: 100 })).items;
  assert.equal(logged.filter((e) => e.instance !== "").length, 0, "no data request was logged");
});

Draft("differential: explaining key A with key B's permissions as the draft gives exactly what explaining key B gives, on every case of the data path's table", async (ctx) => {
  const permissions: Record<string, unknown> = {};
  for (const name of ["app", "reader", "writer", "uploader", "w2"]) permissions[name] = await savedPermissions(ctx, name);
  let compared = 0;
  let differed = 0;
  for (const [i, c] of CASES.entries()) {
    const b = c.key ?? "app";
    // An admin key holds no permissions (the 409 above).
    if (b === "admin") continue;
    const a = b === "w2" ? "reader" : "w2";
    const label = `case ${i + 1}: ${c.method} ${c.url} (${b}'s permissions on ${a})`;
    const request = explainRequestOf(c);
    const asB = await explain(ctx, b, request);
    const asA = await explain(ctx, a, request);
    const drafted = await explain(ctx, a, request, permissions[b]);
    assert.is(drafted.key_id, ctx.keys[a]!.id, label);
    assert.equal({ ...drafted, key_id: "" }, { ...asB, key_id: "" }, label);
    if (JSON.stringify({ ...asA, key_id: "" }) !== JSON.stringify({ ...asB, key_id: "" })) differed++;
    compared++;
  }
  assert.ok(compared >= 60, `${compared} cases compared`);
  // The draft made the difference: on most cases, key A's saved permissions decide otherwise.
  assert.ok(differed >= 20, `${differed} cases where the saved permissions of A and B differ`);
});

Draft.run();
