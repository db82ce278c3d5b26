/**
 * Bad input on the REST facade: every case answers a 4xx with a clear
 * message in the envelope, never a 500, and writes nothing.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AUTH, createWorld, type World } from "../../test-support/world.js";
import { json, patch, post } from "../../test-support/http.js";

interface Ctx {
  world: World;
  systemId: string;
}

const Bad = suite<Ctx>("bad input");

Bad.before.each(async (ctx) => {
  ctx.world = await createWorld();
  ctx.systemId = json(await post(ctx.world.app, "/admin/systems", { name: "Keep", description: "as is" })).data.id;
});
Bad.after.each(async (ctx) => {
  await ctx.world.close();
});

/** Asserts that the store still holds exactly the one system the test began with, unchanged. */
async function assertNothingWritten({ world, systemId }: Ctx): Promise<void> {
  const page = await world.store.systems.list({ limit: 10 });
  assert.is(page.items.length, 1);
  assert.is(page.items[0]!.id, systemId);
  assert.is(page.items[0]!.name, "Keep");
  assert.is(page.items[0]!.description, "as is");
  assert.is(await world.store.instances.countBySystem(systemId), 0);
}

function assertError(
  res: { statusCode: number; body: string; headers: Record<string, unknown> },
  status: number,
  code: string,
  message: string,
  details?: { field: string; message: string }[],
): void {
  assert.is(res.statusCode, status);
  const error: Record<string, unknown> = { code, message, requestId: res.headers["x-request-id"] };
  if (details) error.details = details;
  assert.equal(JSON.parse(res.body), { error });
}

const raw = (world: World, method: "POST" | "PATCH", url: string, payload: string, type = "application/json") =>
  world.app.inject({ method, url, headers: { ...AUTH, "content-type": type }, payload });

Bad("malformed JSON is 400", async (ctx) => {
  const res = await raw(ctx.world, "POST", "/admin/systems", '{"name": "x",');
  assertError(res, 400, "VALIDATION_ERROR", "request body is not valid JSON");
  await assertNothingWritten(ctx);
});

Bad("a body with a member named __proto__ (or constructor.prototype) is 400 (Fastify's parser refuses it, with its message for any unparsable body)", async (ctx) => {
  for (const body of ['{"name": "x", "__proto__": {"admin": true}}', '{"name": "x", "constructor": {"prototype": {"admin": true}}}']) {
    const res = await raw(ctx.world, "POST", "/admin/systems", body);
    assertError(res, 400, "VALIDATION_ERROR", "request body is not valid JSON");
  }
  await assertNothingWritten(ctx);
});

Bad("an empty JSON body is 400", async (ctx) => {
  const res = await raw(ctx.world, "POST", "/admin/systems", "");
  assertError(res, 400, "VALIDATION_ERROR", "request body is empty; send a JSON object");
  await assertNothingWritten(ctx);
});

Bad("a JSON array or string where an object belongs is 400", async (ctx) => {
  for (const payload of ['[{"name":"x"}]', '"name"', "42", "null"]) {
    const res = await raw(ctx.world, "POST", "/admin/systems", payload);
    assertError(res, 400, "VALIDATION_ERROR", "body: must be an object", [{ field: "body", message: "must be an object" }]);
  }
  await assertNothingWritten(ctx);
});

Bad("wrong types name each field", async (ctx) => {
  const res = await post(ctx.world.app, "/admin/systems", { name: 5, description: true, labels: ["a"] });
  assertError(res, 400, "VALIDATION_ERROR", "3 fields are invalid", [
    { field: "name", message: "must be a string" },
    { field: "description", message: "must be a string" },
    { field: "labels", message: "must be an object" },
  ]);
  await assertNothingWritten(ctx);
});

Bad("an operator object where a string belongs is rejected, not executed", async (ctx) => {
  const res = await post(ctx.world.app, "/admin/systems", { name: { $ne: 1 } });
  assertError(res, 400, "VALIDATION_ERROR", "name: must be a string", [{ field: "name", message: "must be a string" }]);
  const nested = await post(ctx.world.app, "/admin/systems", { name: "n", labels: { team: { $gt: "" } } });
  assertError(nested, 400, "VALIDATION_ERROR", "labels.team: must be a string", [
    { field: "labels.team", message: "must be a string" },
  ]);
  const key = await post(ctx.world.app, "/admin/systems", { name: "n", labels: { $where: "1" } });
  assertError(key, 400, "VALIDATION_ERROR", "labels.$where: key must match ^[A-Za-z0-9][A-Za-z0-9_./-]{0,62}$", [
    { field: "labels.$where", message: "key must match ^[A-Za-z0-9][A-Za-z0-9_./-]{0,62}$" },
  ]);
  const patched = await patch(ctx.world.app, `/admin/systems/${ctx.systemId}`, { description: { $set: "x" } });
  assertError(patched, 400, "VALIDATION_ERROR", "description: must be a string", [
    { field: "description", message: "must be a string" },
  ]);
  await assertNothingWritten(ctx);
});

Bad("a 10,000-character name is 400", async (ctx) => {
  const res = await post(ctx.world.app, "/admin/systems", { name: "x".repeat(10_000) });
  assertError(res, 400, "VALIDATION_ERROR", "name: must be at most 100 characters (got 10000)", [
    { field: "name", message: "must be at most 100 characters (got 10000)" },
  ]);
  await assertNothingWritten(ctx);
});

Bad("a missing or empty required field is 400", async (ctx) => {
  const res = await post(ctx.world.app, "/admin/systems", { description: "no name" });
  assertError(res, 400, "VALIDATION_ERROR", "name: is required", [{ field: "name", message: "is required" }]);
  const cleared = await patch(ctx.world.app, `/admin/systems/${ctx.systemId}`, { name: "" });
  assertError(cleared, 400, "VALIDATION_ERROR", "name: is required", [{ field: "name", message: "is required" }]);
  const nulled = await patch(ctx.world.app, `/admin/systems/${ctx.systemId}`, { name: null });
  assertError(nulled, 400, "VALIDATION_ERROR", "name: must be a string", [{ field: "name", message: "must be a string" }]);
  await assertNothingWritten(ctx);
});

Bad("unknown fields are 400", async (ctx) => {
  const res = await post(ctx.world.app, "/admin/systems", { name: "n", nmae: "typo" });
  assertError(res, 400, "VALIDATION_ERROR", "nmae: is not a known field", [{ field: "nmae", message: "is not a known field" }]);
  const camel = await post(ctx.world.app, `/admin/systems/${ctx.systemId}/instances`, {
    name: "i",
    baseUrl: "https://x.example.com/",
  });
  assertError(camel, 400, "VALIDATION_ERROR", "baseUrl: is not a known field", [
    { field: "baseUrl", message: "is not a known field" },
  ]);
  await assertNothingWritten(ctx);
});

Bad("server-set fields in a body are 400", async (ctx) => {
  const res = await post(ctx.world.app, "/admin/systems", {
    id: "sys_00000000000000000000000000",
    name: "n",
    created_at: "2020-01-01T00:00:00Z",
  });
  assertError(res, 400, "VALIDATION_ERROR", "2 fields are invalid", [
    { field: "id", message: "is set by the server and cannot be written" },
    { field: "created_at", message: "is set by the server and cannot be written" },
  ]);
  const patched = await patch(ctx.world.app, `/admin/systems/${ctx.systemId}`, { updated_at: "2020-01-01T00:00:00Z" });
  assertError(patched, 400, "VALIDATION_ERROR", "updated_at: is set by the server and cannot be written", [
    { field: "updated_at", message: "is set by the server and cannot be written" },
  ]);
  const bogusTime = await post(ctx.world.app, "/admin/systems", { name: "n", created_at: "yesterday" });
  assert.is(bogusTime.statusCode, 400);
  assert.is(json(bogusTime).error.code, "VALIDATION_ERROR");
  await assertNothingWritten(ctx);
});

Bad("an empty PATCH body is 400", async (ctx) => {
  const res = await patch(ctx.world.app, `/admin/systems/${ctx.systemId}`, {});
  assertError(res, 400, "VALIDATION_ERROR", "body: must name at least one field to change", [
    { field: "body", message: "must name at least one field to change" },
  ]);
  await assertNothingWritten(ctx);
});

Bad("malformed ids in the path, or ids of another type, are 404 NOT_FOUND naming the id (no such resource can exist)", async (ctx) => {
  const cases: [string, string][] = [
    ["/admin/systems/nope", 'system "nope" not found'],
    ["/admin/systems/sys_doesnotexist", 'system "sys_doesnotexist" not found'],
    ["/admin/systems/%24ne", 'system "$ne" not found'],
    ["/admin/systems/%7B%22%24ne%22%3A1%7D", 'system "{\\"$ne\\":1}" not found'],
    ["/admin/systems/ins_00000000000000000000000000", 'system "ins_00000000000000000000000000" not found'],
    ["/admin/instances/sys_00000000000000000000000000", 'instance "sys_00000000000000000000000000" not found'],
    ["/admin/instances/ins_0000000000000000000000000I", 'instance "ins_0000000000000000000000000I" not found'],
    ["/admin/systems/foo/instances", 'system "foo" not found'],
    ["/admin/logs/log_x", 'log entry "log_x" not found'],
    ["/admin/audit/aud_x", 'audit entry "aud_x" not found'],
    ["/admin/api-keys/sys_00000000000000000000000000", 'API key "sys_00000000000000000000000000" not found'],
    ["/admin/instances/x/services/SALES/catalog", 'instance "x" not found'],
  ];
  for (const [url, message] of cases) {
    const res = await ctx.world.app.inject({ method: "GET", url, headers: AUTH });
    assertError(res, 404, "NOT_FOUND", message);
  }
  const del = await ctx.world.app.inject({ method: "DELETE", url: "/admin/systems/..%2F..%2Fetc", headers: AUTH });
  assertError(del, 404, "NOT_FOUND", 'system "../../etc" not found');
  const session = await ctx.world.app.inject({ method: "DELETE", url: "/admin/sessions/ses_x", headers: AUTH });
  assertError(session, 404, "NOT_FOUND", 'session "ses_x" not found');
  const underBad = await post(ctx.world.app, "/admin/systems/nope/instances", { name: "i", base_url: "https://e.example/" });
  assertError(underBad, 404, "NOT_FOUND", 'system "nope" not found');
  const renamed = await patch(ctx.world.app, "/admin/systems/nope", { name: "n" });
  assertError(renamed, 404, "NOT_FOUND", 'system "nope" not found');
  const explained = await post(ctx.world.app, "/admin/api-keys/nope/explain", { instance: "i", method: "GET", url: "S/E" });
  assertError(explained, 404, "NOT_FOUND", 'API key "nope" not found');
  const tested = await post(ctx.world.app, "/admin/instances/nope/test", {});
  assertError(tested, 404, "NOT_FOUND", 'instance "nope" not found');
  await assertNothingWritten(ctx);
});

Bad("ids in bodies and filters keep their 400 VALIDATION_ERROR", async (ctx) => {
  const logs = await ctx.world.app.inject({ method: "GET", url: "/admin/logs?api_key_id=nope", headers: AUTH });
  assertError(logs, 400, "VALIDATION_ERROR", "api_key_id: must be an API key id (key_…) or master", [
    { field: "api_key_id", message: "must be an API key id (key_…) or master" },
  ]);
  const audit = await ctx.world.app.inject({ method: "GET", url: "/admin/audit?resource_id=nope", headers: AUTH });
  assertError(audit, 400, "VALIDATION_ERROR", "resource_id: must be a resource id such as sys_…, ins_…, key_… or ses_…", [
    { field: "resource_id", message: "must be a resource id such as sys_…, ins_…, key_… or ses_…" },
  ]);
  // An id in a body is a field like any other (here: one the server sets).
  const created = await post(ctx.world.app, "/admin/systems", { name: "n", id: "nope" });
  assertError(created, 400, "VALIDATION_ERROR", "id: is set by the server and cannot be written", [
    { field: "id", message: "is set by the server and cannot be written" },
  ]);
  await assertNothingWritten(ctx);
});

Bad("bodies over 1 MiB are 413", async (ctx) => {
  const res = await raw(ctx.world, "POST", "/admin/systems", JSON.stringify({ name: "n", description: "x".repeat(1024 * 1024) }));
  assertError(res, 413, "PAYLOAD_TOO_LARGE", "request body is larger than the limit");
  await assertNothingWritten(ctx);
});

Bad("POST and PATCH without a JSON media type are 415", async (ctx) => {
  const none = await ctx.world.app.inject({ method: "POST", url: "/admin/systems", headers: AUTH });
  assertError(none, 415, "UNSUPPORTED_MEDIA_TYPE", "request body must be application/json");
  const text = await raw(ctx.world, "POST", "/admin/systems", '{"name":"n"}', "text/plain");
  assertError(text, 415, "UNSUPPORTED_MEDIA_TYPE", "request body must be application/json");
  const form = await raw(ctx.world, "PATCH", `/admin/systems/${ctx.systemId}`, "name=n", "application/x-www-form-urlencoded");
  assertError(form, 415, "UNSUPPORTED_MEDIA_TYPE", "request body must be application/json");
  const withCharset = await raw(ctx.world, "POST", "/admin/systems", '{"name":"ok"}', "application/json; charset=utf-8");
  assert.is(withCharset.statusCode, 201);
});

Bad("bad paging parameters are 400", async (ctx) => {
  const cases: [string, string, string][] = [
    ["page_size=abc", "page_size", "must be a non-negative integer"],
    ["page_size=-1", "page_size", "must be a non-negative integer"],
    ["page_size=1.5", "page_size", "must be a non-negative integer"],
    ["page_size=501", "page_size", "must be between 1 and 500"],
    ["page_token=garbage", "page_token", "is not a token this list returned"],
    ["page_size=1&page_size=2", "page_size", "must be given once"],
  ];
  for (const [query, field, message] of cases) {
    const res = await ctx.world.app.inject({ method: "GET", url: `/admin/systems?${query}`, headers: AUTH });
    assertError(res, 400, "VALIDATION_ERROR", `${field}: ${message}`, [{ field, message }]);
  }
  const max = await ctx.world.app.inject({ method: "GET", url: "/admin/systems?page_size=500", headers: AUTH });
  assert.is(max.statusCode, 200);
});

Bad("instance fields are validated, every violation at once", async (ctx) => {
  const res = await post(ctx.world.app, `/admin/systems/${ctx.systemId}/instances`, {
    name: "-bad name",
    base_url: "https://user:secret@erp.example.com/odata",
  });
  assertError(res, 400, "VALIDATION_ERROR", "2 fields are invalid", [
    { field: "name", message: "must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$" },
    { field: "base_url", message: "must not contain credentials; configure back-end credentials separately" },
  ]);
  assert.not.match(res.body, /secret/);
  await assertNothingWritten(ctx);
});

Bad("timestamps outside 0001..9999 are 400, not a stored value that breaks later reads", async (ctx) => {
  const late = await post(ctx.world.app, "/admin/api-keys", { name: "k", expires_at: "9999-12-31T23:59:59.999999999Z" });
  assert.is(late.statusCode, 400);
  assert.equal(json(late).error.details, [{ field: "expires_at", message: "must be between 0001-01-01 and 9999-12-31" }]);
  const early = await post(ctx.world.app, "/admin/api-keys", { name: "k", expires_at: "0000-01-01T00:00:00Z" });
  assert.is(early.statusCode, 400);
  assert.is(json(early).error.code, "VALIDATION_ERROR");
  assert.is((await ctx.world.store.apiKeys.list({ limit: 10 })).items.length, 0);
  const list = await ctx.world.app.inject({ method: "GET", url: "/admin/api-keys", headers: AUTH });
  assert.is(list.statusCode, 200);
});

Bad.run();

const Routing = suite<{ world: World }>("routing and request ids");

Routing.before.each(async (ctx) => {
  ctx.world = await createWorld();
});
Routing.after.each(async (ctx) => {
  await ctx.world.close();
});

Routing("unknown routes are 404 NOT_FOUND in the envelope", async ({ world }) => {
  for (const url of ["/admin/nope", "/nope", "/admin/systems/x/y/z", "/odata/x"]) {
    const res = await world.app.inject({ method: "GET", url, headers: AUTH });
    assertError(res, 404, "NOT_FOUND", `no route for GET ${url}`);
  }
});

Routing("a known path with another method is 405 with Allow", async ({ world }) => {
  const cases: [string, string, string][] = [
    ["PUT", "/admin/systems", "GET, POST, HEAD"],
    ["DELETE", "/admin/systems", "GET, POST, HEAD"],
    ["POST", "/admin/systems/sys_00000000000000000000000000", "GET, PATCH, DELETE, HEAD"],
    ["PUT", "/admin/instances/ins_00000000000000000000000000", "GET, PATCH, DELETE, HEAD"],
    ["PATCH", "/admin/systems/sys_00000000000000000000000000/instances", "GET, POST, HEAD"],
  ];
  for (const [method, url, allow] of cases) {
    const res = await world.app.inject({ method: method as "PUT", url, headers: AUTH });
    assert.is(res.headers.allow, allow, `${method} ${url}`);
    assertError(res, 405, "METHOD_NOT_ALLOWED", `method ${method} is not allowed on this path`);
  }
});

Routing("empty path segments and trailing slashes are 404, not a wider list or a 405", async ({ world }) => {
  for (const url of ["/admin/systems//instances", "/admin/systems/", "/admin/instances/", "/admin/systems/sys_00000000000000000000000000/"]) {
    const res = await world.app.inject({ method: "GET", url, headers: AUTH });
    assertError(res, 404, "NOT_FOUND", `no route for GET ${url}`);
  }
});

Routing("GET and DELETE ignore a JSON Content-Type without a body", async ({ world }) => {
  const created = json(await post(world.app, "/admin/systems", { name: "n" })).data;
  const headers = { ...AUTH, "content-type": "application/json" };
  const got = await world.app.inject({ method: "GET", url: `/admin/systems/${created.id}`, headers });
  assert.is(got.statusCode, 200);
  const del = await world.app.inject({ method: "DELETE", url: `/admin/systems/${created.id}`, headers });
  assert.is(del.statusCode, 200);
});

Routing("a body with thousands of bad fields lists at most 100 of them", async ({ world }) => {
  const labels: Record<string, number> = {};
  for (let i = 0; i < 500; i++) labels[`k${i}`] = i;
  const res = await post(world.app, "/admin/systems", { name: "n", labels });
  assert.is(res.statusCode, 400);
  const error = json(res).error;
  assert.is(error.message, "500 fields are invalid (the first 100 are listed)");
  assert.is(error.details.length, 100);
  assert.equal(error.details[0], { field: "labels.k0", message: "must be a string" });
});

Routing("a well-formed X-Request-Id is reused; others are replaced", async ({ world }) => {
  const ok = await world.app.inject({ method: "GET", url: "/admin/systems", headers: { ...AUTH, "x-request-id": "trace-42.a:b_c" } });
  assert.is(ok.headers["x-request-id"], "trace-42.a:b_c");
  assert.is(json(ok).meta.requestId, "trace-42.a:b_c");
  for (const bad of ["has space", "x".repeat(129), "<script>", "a\u00e9"]) {
    const res = await world.app.inject({ method: "GET", url: "/admin/systems", headers: { ...AUTH, "x-request-id": bad } });
    assert.match(res.headers["x-request-id"] as string, /^req_[0-9a-f-]{36}$/);
    assert.is(json(res).meta.requestId, res.headers["x-request-id"]);
  }
  const notFound = await world.app.inject({ method: "GET", url: "/nope", headers: { "x-request-id": "rid-1" } });
  assert.is(notFound.headers["x-request-id"], "rid-1");
  assert.is(json(notFound).error.requestId, "rid-1");
});

Routing("health endpoints need no token", async ({ world }) => {
  const health = await world.app.inject({ method: "GET", url: "/healthz" });
  assert.is(health.statusCode, 200);
  assert.equal(json(health), { data: { status: "ok" }, meta: { requestId: health.headers["x-request-id"] } });
  const ready = await world.app.inject({ method: "GET", url: "/readyz" });
  assert.is(ready.statusCode, 200);
  assert.equal(json(ready), { data: { status: "ready" }, meta: { requestId: ready.headers["x-request-id"] } });
});

Routing.run();
