/**
 * Revoked API keys over a real listening erplink: ListApiKeys hides them
 * unless asked (`show_revoked`, REST and Connect alike), a revoked key
 * stays refused with 401 exactly as an unknown token, and its refused uses
 * (a data request, an admin call) are logged under its id.
 */
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ApiKeyService, ApiKeyType, ListApiKeysRequestSchema } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { httpRequest, startErplink, type RunningErplink } from "../../test-support/e2e.js";

const E2e = suite<{ running: RunningErplink }>("revoked API keys");

E2e.before.each(async (ctx) => {
  try {
    ctx.running = await startErplink();
  } catch (err) {
    console.error(err);
    throw err;
  }
});
E2e.after.each(async (ctx) => {
  await ctx.running?.close();
});

type Json = Record<string, any>;

async function admin(r: RunningErplink, method: string, path: string, body?: unknown, authorization = r.authorization) {
  const headers: Record<string, string> = { authorization };
  if (body !== undefined) headers["content-type"] = "application/json";
  return httpRequest(`${r.baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

/** Creates a key with the master key; returns `data` (its secret in `key`). */
async function createKey(r: RunningErplink, body: object): Promise<Json> {
  const res = await admin(r, "POST", "/admin/api-keys", body);
  assert.is(res.status, 201, res.text);
  return (res.json() as Json).data;
}

/** The request-log entry of a request id, once the writer has flushed it (about a second). */
async function logEntryOf(r: RunningErplink, requestId: string): Promise<Json> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await admin(r, "GET", `/admin/logs?request_id=${encodeURIComponent(requestId)}`);
    assert.is(res.status, 200, res.text);
    const entries = (res.json() as Json).data as Json[];
    if (entries.length > 0) {
      assert.is(entries.length, 1);
      return entries[0]!;
    }
    if (Date.now() > deadline) assert.unreachable(`no log entry for ${requestId}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

E2e("GET /admin/api-keys lists keys in force; with show_revoked=true also the revoked ones, each with its revoked_at", async ({ running: r }) => {
  const kept = await createKey(r, { name: "kept", permissions: { prod: { API_BP: { A_BusinessPartner: ["list"] } } } });
  const gone = await createKey(r, { name: "gone", type: "admin" });
  const revoke = await admin(r, "DELETE", `/admin/api-keys/${gone.id}`);
  assert.is(revoke.status, 200, revoke.text);
  const { key: _k1, ...keptShown } = kept;
  const { key: _k2, ...goneBefore } = gone;

  const plain = await admin(r, "GET", "/admin/api-keys");
  assert.is(plain.status, 200);
  assert.equal(plain.json(), { data: [keptShown], meta: { requestId: plain.headers["x-request-id"] } });
  const explicitFalse = await admin(r, "GET", "/admin/api-keys?show_revoked=false");
  assert.equal((explicitFalse.json() as Json).data, [keptShown]);

  const all = await admin(r, "GET", "/admin/api-keys?show_revoked=true");
  assert.is(all.status, 200);
  const body = all.json() as Json;
  const revokedAt = body.data[1].revoked_at as string;
  assert.match(revokedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  assert.ok(Math.abs(Date.parse(revokedAt) - Date.now()) < 60_000, revokedAt);
  assert.equal(body, {
    data: [keptShown, { ...goneBefore, updated_at: revokedAt, etag: '"2"', revoked_at: revokedAt }],
    meta: { requestId: all.headers["x-request-id"] },
  });

  const bad = await admin(r, "GET", "/admin/api-keys?show_revoked=maybe");
  assert.is(bad.status, 400);
  assert.equal((bad.json() as Json).error.code, "VALIDATION_ERROR");
  // The revoked key is not one to read, change or revoke again.
  assert.is((await admin(r, "GET", `/admin/api-keys/${gone.id}`)).status, 404);
});

E2e("ListApiKeys over Connect: show_revoked lists the revoked key with its revoked_at; without it, only keys in force", async ({ running: r }) => {
  const kept = await createKey(r, { name: "kept", permissions: {} });
  const gone = await createKey(r, { name: "gone", permissions: {} });
  assert.is((await admin(r, "DELETE", `/admin/api-keys/${gone.id}`)).status, 200);
  const client = createClient(ApiKeyService, createConnectTransport({ baseUrl: r.baseUrl, httpVersion: "1.1" }));
  const headers = { authorization: r.authorization };
  const plain = await client.listApiKeys(create(ListApiKeysRequestSchema, {}), { headers });
  assert.equal(plain.apiKeys.map((k) => [k.id, k.name, k.revokedAt === undefined]), [[kept.id, "kept", true]]);
  assert.is(plain.nextPageToken, "");
  const all = await client.listApiKeys(create(ListApiKeysRequestSchema, { showRevoked: true }), { headers });
  assert.equal(all.apiKeys.map((k) => [k.id, k.name, k.type, k.revokedAt === undefined]), [
    [kept.id, "kept", ApiKeyType.DATA, true],
    [gone.id, "gone", ApiKeyType.DATA, false],
  ]);
  assert.equal(all.apiKeys[1]!.revokedAt, all.apiKeys[1]!.updatedAt);
  // Paging runs over revoked keys too.
  const first = await client.listApiKeys(create(ListApiKeysRequestSchema, { showRevoked: true, pageSize: 1 }), { headers });
  assert.equal(first.apiKeys.map((k) => k.id), [kept.id]);
  const second = await client.listApiKeys(create(ListApiKeysRequestSchema, { showRevoked: true, pageSize: 1, pageToken: first.nextPageToken }), { headers });
  assert.equal(second.apiKeys.map((k) => k.id), [gone.id]);
  assert.is(second.nextPageToken, "");
});

E2e("a revoked data key's data request is 401 as an unknown token, and its log entry names the key", async ({ running: r }) => {
  const data = await createKey(r, { name: "app", permissions: { prod: { API_BP: { A_BusinessPartner: ["list"] } } } });
  assert.is((await admin(r, "DELETE", `/admin/api-keys/${data.id}`)).status, 200);
  for (const attempt of ["cold", "remembered"]) {
    const res = await httpRequest(`${r.baseUrl}/odata/prod/API_BP/A_BusinessPartner`, { headers: { authorization: `Bearer ${data.key}` } });
    assert.is(res.status, 401, attempt);
    assert.is(res.headers["www-authenticate"], "Bearer");
    assert.is(res.headers["erplink-principal"], undefined, "the id is for the log only");
    const requestId = res.headers["x-request-id"] as string;
    assert.equal(res.json(), { error: { code: "UNAUTHORIZED", message: "invalid bearer token", requestId } });
    const entry = await logEntryOf(r, requestId);
    assert.is(entry.api_key_id, data.id, attempt);
    assert.is(entry.status, 401);
    assert.is(entry.denial_step, "KEY_INVALID");
    assert.is(entry.upstream_status, 0, "nothing forwarded");
  }
  // A token no key ever had is logged with no key.
  const unknown = await httpRequest(`${r.baseUrl}/odata/prod/API_BP/A_BusinessPartner`, {
    headers: { authorization: `Bearer ${data.key.slice(0, 12)}${"x".repeat(data.key.length - 12)}` },
  });
  assert.is(unknown.status, 401);
  assert.is((await logEntryOf(r, unknown.headers["x-request-id"] as string)).api_key_id, "");
});

E2e("a revoked admin key's admin call is 401 'invalid bearer token', and its log entry names the key", async ({ running: r }) => {
  const ops = await createKey(r, { name: "ops", type: "admin" });
  assert.is((await admin(r, "GET", "/admin/systems", undefined, `Bearer ${ops.key}`)).status, 200, "works (and is cached) before");
  assert.is((await admin(r, "DELETE", `/admin/api-keys/${ops.id}`)).status, 200);
  const res = await admin(r, "GET", "/admin/systems", undefined, `Bearer ${ops.key}`);
  assert.is(res.status, 401);
  const requestId = res.headers["x-request-id"] as string;
  assert.equal(res.json(), { error: { code: "UNAUTHORIZED", message: "invalid bearer token", requestId } });
  assert.is(res.headers["erplink-principal"], undefined);
  const entry = await logEntryOf(r, requestId);
  assert.is(entry.api_key_id, ops.id);
  assert.is(entry.status, 401);
  assert.is(entry.error_code, "UNAUTHORIZED");
  // Still refused afterwards: attribution never makes the key usable.
  assert.is((await admin(r, "POST", "/admin/api-keys", { name: "escalate", type: "admin" }, `Bearer ${ops.key}`)).status, 401);
  const listed = (await admin(r, "GET", "/admin/api-keys?show_revoked=true")).json() as Json;
  assert.equal(listed.data.map((k: Json) => k.name), ["ops"], "nothing was created");
});

E2e.run();
