/**
 * The audit trail over the REST facade through `app.inject()`: GET
 * /admin/audit (envelope, REST JSON, filters, paging, 400s) and GET
 * /admin/audit/{id}; entries carry the X-Request-Id of the write, over REST
 * and over Connect; nothing secret in any answer; a write whose entry cannot
 * be written is 503 and changes nothing; the OpenAPI document describes it.
 */
import type { LightMyRequestResponse } from "fastify";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { pageTokenPattern } from "../../src/schema/resource-ids.js";
import { StoreUnavailableError } from "../../src/store/index.js";
import { json, patch, post, REQ_ID } from "../../test-support/http.js";
import type { TestWorld } from "../../test-support/rpc.js";
import { tick } from "../../test-support/rpc.js";
import { AUTH, createWorld } from "../../test-support/world.js";

type World = TestWorld;

const test = suite("audit trail over REST");

/** A test in a fresh world that fails on any masked internal error. */
function it(name: string, fn: (w: World) => Promise<void>): void {
  test(name, async () => {
    const w = await createWorld();
    try {
      await fn(w);
      assert.equal(w.errors, [], "no masked internal errors");
    } finally {
      await w.close();
    }
  });
}

const AUD_ID = /^aud_[0-9A-HJKMNP-TV-Z]{26}$/;

function get(w: World, url: string, headers: Record<string, string> = AUTH) {
  return w.app.inject({ method: "GET", url, headers });
}

function del(w: World, url: string) {
  return w.app.inject({ method: "DELETE", url, headers: AUTH });
}

/** Asserts a 400 envelope with exactly these details. */
function assertBadRequest(res: LightMyRequestResponse, message: string, details: { field: string; message: string }[]): void {
  assert.is(res.statusCode, 400, res.body);
  assert.equal(json(res), {
    error: { code: "VALIDATION_ERROR", message, requestId: res.headers["x-request-id"], details },
  });
}

it("GET /admin/audit answers the entries newest first in the envelope, in REST JSON, each with the X-Request-Id of its write", async (w) => {
  const created = await post(w.app, "/admin/systems", { name: "erp", labels: { team: "fin" } }, { "x-request-id": "rid-create" });
  assert.is(created.statusCode, 201);
  const sys = json(created).data;
  tick(w);
  const changed = await patch(w.app, `/admin/systems/${sys.id}`, { description: "Finance" });
  assert.is(changed.statusCode, 200);

  const res = await get(w, "/admin/audit");
  assert.is(res.statusCode, 200, res.body);
  assert.match(res.headers["x-request-id"] as string, REQ_ID);
  const body = json(res);
  assert.equal(Object.keys(body), ["data", "meta"]);
  assert.equal(body.meta, { requestId: res.headers["x-request-id"] });
  const [update, create] = body.data;
  assert.match(update.id, AUD_ID);
  assert.equal(update, {
    id: update.id,
    timestamp: "2026-01-02T03:04:06Z",
    actor: "master",
    session_id: "",
    action: "update",
    resource_type: "system",
    resource_id: sys.id,
    request_id: changed.headers["x-request-id"],
    state: "applied",
    changes: [{ path: ["description"], before: "", after: "Finance" }],
    before: { id: sys.id, name: "erp", description: "", labels: { team: "fin" }, created_at: "2026-01-02T03:04:05Z", updated_at: "2026-01-02T03:04:05Z" },
    after: { id: sys.id, name: "erp", description: "Finance", labels: { team: "fin" }, created_at: "2026-01-02T03:04:05Z", updated_at: "2026-01-02T03:04:06Z" },
  });
  assert.equal(
    { action: create.action, request_id: create.request_id, before: create.before, after_name: create.after.name },
    { action: "create", request_id: "rid-create", before: null, after_name: "erp" },
  );

  const one = await get(w, `/admin/audit/${update.id}`);
  assert.is(one.statusCode, 200);
  assert.equal(json(one), { data: update, meta: { requestId: one.headers["x-request-id"] } });
});

it("a Connect call's entry carries the request id the gateway gave the call (also without X-Request-Id), as the request log does", async (w) => {
  const res = await w.app.inject({
    method: "POST",
    url: "/erplink.admin.v1.SystemService/CreateSystem",
    headers: { ...AUTH, "content-type": "application/json" },
    payload: JSON.stringify({ system: { name: "over-connect" } }),
  });
  assert.is(res.statusCode, 200, res.body);
  const rid = res.headers["x-request-id"] as string;
  assert.match(rid, REQ_ID);
  const [entry] = json(await get(w, "/admin/audit")).data;
  assert.is(entry.request_id, rid);
  await w.layer.logWriter.flush();
  const logged = (await w.store.logs.query({ limit: 10 })).items.filter((e) => e.path === "/erplink.admin.v1.SystemService/CreateSystem");
  assert.equal(logged.map((e) => e.requestId), [rid]);
});

it("filters and paging: meta.nextPageToken while more follow; filters hold across pages", async (w) => {
  const ids: string[] = [];
  for (const name of ["a", "b", "c"]) {
    ids.push(json(await post(w.app, "/admin/systems", { name })).data.id);
    tick(w, 60_000);
  }
  await del(w, `/admin/systems/${ids[1]}`);
  const p1 = json(await get(w, "/admin/audit?page_size=2"));
  assert.equal(p1.data.map((e: { action: string; resource_id: string }) => [e.action, ids.indexOf(e.resource_id)]), [["delete", 1], ["create", 2]]);
  assert.type(p1.meta.nextPageToken, "string");
  const p2 = json(await get(w, `/admin/audit?page_size=2&page_token=${p1.meta.nextPageToken}`));
  assert.equal(p2.data.map((e: { resource_id: string }) => ids.indexOf(e.resource_id)), [1, 0]);
  assert.equal(Object.keys(p2.meta), ["requestId"]);

  const q = async (query: string) => json(await get(w, `/admin/audit?${query}`)).data.map((e: { resource_id: string; action: string }) => `${e.action}:${ids.indexOf(e.resource_id)}`);
  assert.equal(await q(`resource_id=${ids[1]}`), ["delete:1", "create:1"]);
  assert.equal(await q("action=create&resource_type=system"), ["create:2", "create:1", "create:0"]);
  assert.equal(await q("actor=master&action=delete"), ["delete:1"]);
  assert.equal(await q("actor=internal"), []);
  assert.equal(await q("resource_type=api_key"), []);
  assert.equal(await q("from=2026-01-02T03:05:05Z&to=2026-01-02T03:07:05Z"), ["create:2", "create:1"]);
  assert.equal(await q("from=2026-01-02T03:07:05Z"), ["delete:1"]);
});

it("bad filters are 400 VALIDATION_ERROR naming each parameter; never a 500", async (w) => {
  assertBadRequest(await get(w, "/admin/audit?actor=root&action=drop&resource_type=user&resource_id=%24ne"), "4 fields are invalid", [
    { field: "actor", message: "must be master, internal, an API key id (key_…) or a session id (ses_…)" },
    { field: "resource_id", message: "must be a resource id such as sys_…, ins_…, key_… or ses_…" },
    { field: "resource_type", message: "must be one of system, instance, api_key, session" },
    { field: "action", message: "must be one of create, update, delete, revoke" },
  ]);
  assertBadRequest(await get(w, "/admin/audit?from=yesterday"), "from: must be an RFC 3339 date-time between 0001 and 9999, such as 2026-01-02T03:04:05Z", [
    { field: "from", message: "must be an RFC 3339 date-time between 0001 and 9999, such as 2026-01-02T03:04:05Z" },
  ]);
  // `to` before `from`: an empty range, not an error.
  const empty = await get(w, "/admin/audit?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z");
  assert.equal([empty.statusCode, json(empty).data], [200, []]);
  assertBadRequest(await get(w, "/admin/audit?page_size=501"), "page_size: must be between 1 and 500", [
    { field: "page_size", message: "must be between 1 and 500" },
  ]);
  assertBadRequest(await get(w, "/admin/audit?page_token=garbage"), "page_token: is not a token this list returned", [
    { field: "page_token", message: "is not a token this list returned" },
  ]);
  assertBadRequest(await get(w, "/admin/audit?actor=master&actor=internal"), "actor: must be given once", [
    { field: "actor", message: "must be given once" },
  ]);
  const other = await get(w, "/admin/audit/sys_01J00000000000000000000000");
  assert.is(other.statusCode, 404);
  assert.equal(json(other), { error: { code: "NOT_FOUND", message: 'audit entry "sys_01J00000000000000000000000" not found', requestId: other.headers["x-request-id"] } });
  const missing = await get(w, "/admin/audit/aud_01J00000000000000000000000");
  assert.is(missing.statusCode, 404);
  assert.equal(json(missing), { error: { code: "NOT_FOUND", message: 'audit entry "aud_01J00000000000000000000000" not found', requestId: missing.headers["x-request-id"] } });
  const wrongMethod = await w.app.inject({ method: "POST", url: "/admin/audit", headers: AUTH });
  assert.is(wrongMethod.statusCode, 405);
});

it("no secret in any answer: instance credentials and API key secrets read [redacted] in the trail", async (w) => {
  const sys = json(await post(w.app, "/admin/systems", { name: "erp" })).data;
  const ins = json(
    await post(w.app, `/admin/systems/${sys.id}/instances`, {
      name: "s4-prod",
      base_url: "https://s4.example.com/odata/",
      auth: { type: "oauth2_client_credentials", token_url: "https://idp.example.com/t", client_id: "cid", client_secret: "cs-hunter2" },
    }),
  ).data;
  await patch(w.app, `/admin/instances/${ins.id}`, { auth: { type: "bearer", token: "tok-hunter2" } });
  await patch(w.app, `/admin/instances/${ins.id}`, { auth: { type: "basic", username: "u", password: "pw-hunter2" } });
  const key = json(await post(w.app, "/admin/api-keys", { name: "k", permissions: { prod: { "*": { "*": ["list"] } } } })).data;
  await del(w, `/admin/api-keys/${key.id}`);

  const list = await get(w, "/admin/audit");
  const bodies = [list.body];
  for (const e of json(list).data) bodies.push((await get(w, `/admin/audit/${e.id}`)).body);
  const text = bodies.join("\n");
  assert.not.match(text, /hunter2/);
  assert.not.ok(text.includes(key.key), "the API key secret");
  assert.not.ok(text.includes(key.key.slice(12)), "any part of it beyond the prefix");
  const rec = (await w.store.apiKeys.changedSince(new Date(0), 10))[0]!;
  assert.not.ok(text.includes(rec.keyHash), "the secret's hash");
  const [revoke, createKey, toBasic, toBearer, createIns] = json(list).data;
  assert.is(createKey.after.key, "[redacted]");
  assert.is(revoke.after.key, "[redacted]");
  assert.equal(createIns.after.auth, { type: "oauth2_client_credentials", token_url: "https://idp.example.com/t", client_id: "cid", client_secret: "[redacted]" });
  assert.equal(toBearer.after.auth, { type: "bearer", token: "[redacted]" });
  assert.equal(toBasic.changes, [
    { path: ["auth", "type"], before: "bearer", after: "basic" },
    { path: ["auth", "token"], before: "[redacted]", after: null },
    { path: ["auth", "username"], before: null, after: "u" },
    { path: ["auth", "password"], before: null, after: "[redacted]" },
  ]);
});

it("when the audit entry cannot be written a write is 503 UNAVAILABLE and nothing changes", async (w) => {
  const sys = json(await post(w.app, "/admin/systems", { name: "erp", description: "before" })).data;
  const key = json(await post(w.app, "/admin/api-keys", { name: "k", permissions: { prod: { "*": { "*": ["list"] } } } })).data;
  const entries = json(await get(w, "/admin/audit")).data;
  w.store.audit.append = async () => {
    throw new StoreUnavailableError({ cause: new Error("connect ECONNREFUSED mongodb://admin:hunter2@db:27017") });
  };
  const attempts = [
    await post(w.app, "/admin/systems", { name: "new" }),
    await patch(w.app, `/admin/systems/${sys.id}`, { description: "after" }),
    await del(w, `/admin/systems/${sys.id}`),
    await patch(w.app, `/admin/api-keys/${key.id}`, { permissions: { prod: { "*": { "*": ["delete"] } } } }),
    await del(w, `/admin/api-keys/${key.id}`),
  ];
  for (const res of attempts) {
    assert.is(res.statusCode, 503, res.body);
    assert.equal(json(res), {
      error: { code: "UNAVAILABLE", message: "the store is unavailable; try again later", requestId: res.headers["x-request-id"] },
    });
    assert.not.match(res.body, /hunter2|ECONNREFUSED/);
  }
  assert.equal(json(await get(w, "/admin/systems")).data, [sys]);
  const { key: _secret, ...keyBefore } = key;
  assert.equal(json(await get(w, `/admin/api-keys/${key.id}`)).data, keyBefore);
  assert.equal(json(await get(w, "/admin/audit")).data, entries);
});

it("the OpenAPI document describes GET /admin/audit (its filters) and the entry's shape", async (w) => {
  const doc = json(await w.app.inject({ method: "GET", url: "/api-reference/openapi.json" }));
  const list = doc.paths["/admin/audit"].get;
  assert.is(list.operationId, "ListAuditEntries");
  assert.equal(list.parameters.map((p: { name: string }) => p.name), [
    "from",
    "to",
    "actor",
    "resource_type",
    "resource_id",
    "action",
    "page_size",
    "page_token",
  ]);
  // Zero (as absent) means the default.
  assert.equal(list.parameters[6].schema, { type: "integer", minimum: 0, maximum: 500, default: 50 });
  // The filters' patterns are the rules the service checks (empty: no filter).
  assert.equal(list.parameters[5].schema, { type: "string", pattern: "^$|^(create|update|delete|revoke)$" });
  assert.equal(list.parameters[7].schema, { type: "string", pattern: `^$|${pageTokenPattern("aud")}` });
  assert.match(list.parameters[2].description, /ses_/);
  assert.is(doc.paths["/admin/audit/{id}"].get.operationId, "GetAuditEntry");
  const entry = doc.components.schemas.AuditEntry;
  assert.equal(Object.keys(entry.properties), [
    "id",
    "timestamp",
    "actor",
    "session_id",
    "action",
    "resource_type",
    "resource_id",
    "request_id",
    "state",
    "changes",
    "before",
    "after",
  ]);
  // Any JSON value, null included.
  assert.equal(Object.keys(entry.properties.before), ["description"]);
  assert.match(entry.properties.before.description, /null for a creation/);
  const change = entry.properties.changes.items;
  assert.equal(change.properties.path, { type: "array", items: { type: "string" }, description: change.properties.path.description });
  assert.match(change.properties.path.description, /permissions/);
  assert.match(doc.paths["/admin/audit"].get.description, /Returns audit entries, newest first/);
});

test.run();
