/**
 * Etags on the REST facade, for systems, instances and API keys: `ETag` on
 * every answer holding one of them, `If-Match` and the body's `etag` on
 * PATCH and DELETE (412 `PRECONDITION_FAILED` when stale, and then nothing
 * changes: the resource, its etag and the audit trail stay as they were),
 * unconditional writes without one, and erplink's own writes (a key's last
 * use) leaving the etag as it is.
 */
import type { LightMyRequestResponse } from "fastify";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AUTH, createWorld, type World } from "../../test-support/world.js";
import { json, patch, post } from "../../test-support/http.js";

/** One kind of resource with an etag, as the tests drive it. */
interface Kind {
  readonly name: string;
  /** How messages name it. */
  readonly singular: string;
  /** Creates one; returns its path and the answer. */
  create(w: World): Promise<{ path: string; res: LightMyRequestResponse }>;
  /** A PATCH body that changes it, and the field it changes. */
  readonly change: Record<string, unknown>;
  readonly otherChange: Record<string, unknown>;
}

const KINDS: readonly Kind[] = [
  {
    name: "systems",
    singular: "system",
    async create(w) {
      const res = await post(w.app, "/admin/systems", { name: "erp" });
      return { path: `/admin/systems/${json(res).data.id}`, res };
    },
    change: { description: "changed" },
    otherChange: { description: "changed by someone else" },
  },
  {
    name: "instances",
    singular: "instance",
    async create(w) {
      const system = json(await post(w.app, "/admin/systems", { name: "erp" })).data;
      const res = await post(w.app, `/admin/systems/${system.id}/instances`, { name: "prod", base_url: "https://erp.example.com/odata/" });
      return { path: `/admin/instances/${json(res).data.id}`, res };
    },
    change: { environment: "qa" },
    otherChange: { environment: "dev" },
  },
  {
    name: "API keys",
    singular: "API key",
    async create(w) {
      const res = await post(w.app, "/admin/api-keys", { name: "app" });
      return { path: `/admin/api-keys/${json(res).data.id}`, res };
    },
    change: { name: "renamed" },
    otherChange: { name: "renamed by someone else" },
  },
];

function get(w: World, path: string, headers: Record<string, string> = {}) {
  return w.app.inject({ method: "GET", url: path, headers: { ...AUTH, ...headers } });
}

function del(w: World, path: string, headers: Record<string, string> = {}) {
  return w.app.inject({ method: "DELETE", url: path, headers: { ...AUTH, ...headers } });
}

/** The audit trail, newest first, as ids. */
async function auditIds(w: World): Promise<string[]> {
  const res = await get(w, "/admin/audit?page_size=500");
  assert.is(res.statusCode, 200, res.body);
  return json(res).data.map((e: { id: string }) => e.id);
}

/** Asserts the exact 412 envelope. */
function assertStale(res: LightMyRequestResponse, message: string): void {
  assert.is(res.statusCode, 412, res.body);
  assert.is(res.headers["content-type"], "application/json; charset=utf-8");
  assert.is(res.headers.etag, undefined, "a refusal carries no ETag");
  assert.equal(json(res), { error: { code: "PRECONDITION_FAILED", message, requestId: res.headers["x-request-id"] } });
}

/** The resource as GET answers it, its ETag header checked against its `etag`. */
async function read(w: World, path: string): Promise<Record<string, unknown>> {
  const res = await get(w, path);
  assert.is(res.statusCode, 200, res.body);
  const data = json(res).data;
  assert.is(res.headers.etag, data.etag, "ETag is the resource's etag");
  return data;
}

for (const kind of KINDS) {
  const test = suite<{ w: World }>(`REST etags: ${kind.name}`);
  test.before.each(async (ctx) => {
    ctx.w = await createWorld();
  });
  test.after.each(async (ctx) => {
    await ctx.w.close();
  });

  test("POST, GET, PATCH and DELETE answer the resource's etag in ETag and in `etag`; a change makes a new one, a read does not", async ({ w }) => {
    const { path, res } = await kind.create(w);
    assert.is(res.statusCode, 201, res.body);
    assert.is(res.headers.etag, '"1"');
    assert.is(json(res).data.etag, '"1"');
    assert.is((await read(w, path)).etag, '"1"');
    assert.is((await read(w, path)).etag, '"1"');
    const changed = await patch(w.app, path, kind.change);
    assert.is(changed.statusCode, 200, changed.body);
    assert.equal([changed.headers.etag, json(changed).data.etag], ['"2"', '"2"']);
    const deleted = await del(w, path);
    assert.is(deleted.statusCode, 200, deleted.body);
    assert.equal([deleted.headers.etag, json(deleted).data.etag], ['"2"', '"2"'], "the resource as it was deleted");
  });

  test("an invalid PATCH is 400 whatever its If-Match says, and one that holds only its etag changes nothing: 400", async ({ w }) => {
    const { path } = await kind.create(w);
    assert.is((await patch(w.app, path, kind.otherChange)).statusCode, 200);
    const before = await read(w, path);
    const invalid = await w.app.inject({ method: "PATCH", url: path, headers: { ...AUTH, "if-match": 'W/"2", "7"' }, payload: { name: "" } });
    assert.is(invalid.statusCode, 400, invalid.body);
    assert.is(json(invalid).error.code, "VALIDATION_ERROR");
    const onlyEtag = await w.app.inject({ method: "PATCH", url: path, headers: AUTH, payload: { etag: before.etag } });
    assert.is(onlyEtag.statusCode, 400, onlyEtag.body);
    assert.equal(json(onlyEtag).error.details, [{ field: "body", message: "must name at least one field to change besides etag" }]);
    assert.equal(await read(w, path), before);
  });

  test("PATCH with a stale If-Match -> 412 PRECONDITION_FAILED; the resource, its etag and the audit trail stay as they were", async ({ w }) => {
    const { path } = await kind.create(w);
    assert.is((await patch(w.app, path, kind.otherChange)).statusCode, 200);
    const before = await read(w, path);
    const audit = await auditIds(w);
    const res = await patch(w.app, path, kind.change, { "if-match": '"1"' });
    assertStale(res, `the ${kind.singular} changed since it was read (etag "1", now "2"): read it again and retry`);
    assert.equal(await read(w, path), before);
    assert.equal(await auditIds(w), audit);
  });

  test("PATCH with a stale etag in the body -> 412 PRECONDITION_FAILED; nothing changes", async ({ w }) => {
    const { path } = await kind.create(w);
    assert.is((await patch(w.app, path, kind.otherChange)).statusCode, 200);
    const before = await read(w, path);
    const audit = await auditIds(w);
    const res = await patch(w.app, path, { ...kind.change, etag: '"1"' });
    assertStale(res, `the ${kind.singular} changed since it was read (etag "1", now "2"): read it again and retry`);
    assert.equal(await read(w, path), before);
    assert.equal(await auditIds(w), audit);
  });

  test("PATCH with a malformed etag (header or body) -> 412, never 500; nothing changes", async ({ w }) => {
    const { path } = await kind.create(w);
    const before = await read(w, path);
    assertStale(
      await patch(w.app, path, kind.change, { "if-match": "1" }),
      `the ${kind.singular} changed since it was read (If-Match: 1, now "1"): read it again and retry`,
    );
    assertStale(
      await patch(w.app, path, { ...kind.change, etag: "1" }),
      `the ${kind.singular} changed since it was read (etag 1 (not an etag erplink gave), now "1"): read it again and retry`,
    );
    assert.equal(await read(w, path), before);
  });

  test("PATCH with the current etag (If-Match, body, or both) applies and answers a new etag", async ({ w }) => {
    const { path } = await kind.create(w);
    const one = await patch(w.app, path, kind.otherChange, { "if-match": '"1"' });
    assert.equal([one.statusCode, one.headers.etag], [200, '"2"'], one.body);
    const two = await patch(w.app, path, { ...kind.change, etag: '"2"' });
    assert.equal([two.statusCode, two.headers.etag], [200, '"3"'], two.body);
    const three = await patch(w.app, path, { ...kind.otherChange, etag: '"3"' }, { "if-match": '"3"' });
    assert.equal([three.statusCode, three.headers.etag], [200, '"4"'], three.body);
    const data = await read(w, path);
    for (const [field, value] of Object.entries(kind.otherChange)) assert.is(data[field], value);
  });

  test("PATCH without an etag applies (unconditional) and still changes the etag; If-Match: * applies to an existing resource", async ({ w }) => {
    const { path } = await kind.create(w);
    const plain = await patch(w.app, path, kind.change);
    assert.equal([plain.statusCode, plain.headers.etag], [200, '"2"'], plain.body);
    const any = await patch(w.app, path, kind.otherChange, { "if-match": "*" });
    assert.equal([any.statusCode, any.headers.etag], [200, '"3"'], any.body);
    const empty = await patch(w.app, path, { ...kind.change, etag: "" });
    assert.equal([empty.statusCode, empty.headers.etag], [200, '"4"'], empty.body);
  });

  test("If-Match lists compare strongly: a list naming the current etag applies; a weak tag, or a body etag the list does not name, is 412", async ({ w }) => {
    const { path } = await kind.create(w);
    const listed = await patch(w.app, path, kind.change, { "if-match": '"7", "1" , "9"' });
    assert.equal([listed.statusCode, listed.headers.etag], [200, '"2"'], listed.body);
    const before = await read(w, path);
    assertStale(
      await patch(w.app, path, kind.otherChange, { "if-match": 'W/"2"' }),
      `the ${kind.singular} changed since it was read (If-Match: W/"2", now "2"; weak tags never match): read it again and retry`,
    );
    assertStale(
      await patch(w.app, path, { ...kind.otherChange, etag: '"1"' }, { "if-match": '"2"' }),
      `the ${kind.singular} changed since it was read (If-Match: "2" and etag "1", now "2"): read it again and retry`,
    );
    assertStale(
      await patch(w.app, path, kind.otherChange, { "if-match": '"5", "6"' }),
      `the ${kind.singular} changed since it was read (If-Match: "5", "6", now "2"): read it again and retry`,
    );
    assert.equal(await read(w, path), before);
  });

  test("DELETE with a stale If-Match -> 412; the resource is still there, the audit trail unchanged; with the current one it goes", async ({ w }) => {
    const { path } = await kind.create(w);
    assert.is((await patch(w.app, path, kind.otherChange)).statusCode, 200);
    const before = await read(w, path);
    const audit = await auditIds(w);
    assertStale(
      await del(w, path, { "if-match": '"1"' }),
      `the ${kind.singular} changed since it was read (etag "1", now "2"): read it again and retry`,
    );
    assert.equal(await read(w, path), before);
    assert.equal(await auditIds(w), audit);
    const deleted = await del(w, path, { "if-match": '"2"' });
    assert.equal([deleted.statusCode, deleted.headers.etag], [200, '"2"'], deleted.body);
    assert.is((await get(w, path)).statusCode, 404);
  });

  test("DELETE with If-Match: * deletes an existing resource; without If-Match it is unconditional", async ({ w }) => {
    const first = await kind.create(w);
    assert.is((await del(w, first.path, { "if-match": "*" })).statusCode, 200);
    assert.is((await get(w, first.path)).statusCode, 404);
    const again = await del(w, first.path, { "if-match": "*" });
    assert.is(again.statusCode, 404, "no resource: 404, not 412");
  });

  test("a missing resource is 404 whatever If-Match says (a precondition is not evaluated for an answer that would not be 2xx)", async ({ w }) => {
    const { path } = await kind.create(w);
    assert.is((await del(w, path)).statusCode, 200);
    assert.is((await patch(w.app, path, kind.change, { "if-match": '"1"' })).statusCode, 404);
    assert.is((await patch(w.app, path, kind.change, { "if-match": '"1", "2"' })).statusCode, 404);
    assert.is((await del(w, path, { "if-match": 'W/"1"' })).statusCode, 404);
  });

  test.run();
}

const Order = suite<{ w: World }>("REST etags: checked after the request itself");
Order.before.each(async (ctx) => {
  ctx.w = await createWorld();
});
Order.after.each(async (ctx) => {
  await ctx.w.close();
});

Order("an API key's invalid permissions with a stale etag: 400 naming the permissions, not 412", async ({ w }) => {
  const created = await post(w.app, "/admin/api-keys", { name: "app", permissions: { prod: { SALES: { Orders: ["list"] } } } });
  const path = `/admin/api-keys/${json(created).data.id}`;
  assert.is((await patch(w.app, path, { name: "renamed" })).statusCode, 200);
  const res = await patch(w.app, path, { etag: '"1"', permissions: { prod: { SALES: { Orders: ["fly"] } } } });
  assert.is(res.statusCode, 400, res.body);
  assert.is(json(res).error.code, "VALIDATION_ERROR");
  assert.match(json(res).error.details[0].field, /^permissions\.prod\.SALES\.Orders/);
});

Order.run();

const Stored = suite<{ w: World }>("REST etags: stored documents");
Stored.before.each(async (ctx) => {
  ctx.w = await createWorld();
});
Stored.after.each(async (ctx) => {
  await ctx.w.close();
});

Stored("a system stored before etags existed (no revision) reads as etag \"0\", takes If-Match: \"0\" and then is at \"1\"", async ({ w }) => {
  const at = new Date("2026-01-01T00:00:00Z");
  const id = "sys_01KAF3AAAAAAAAAAAAAAAAAAAA";
  await w.store.systems.create({ id, name: "legacy", description: "", labels: {}, createdAt: at, updatedAt: at });
  assert.is((await read(w, `/admin/systems/${id}`)).etag, '"0"');
  assertStale(
    await patch(w.app, `/admin/systems/${id}`, { description: "x" }, { "if-match": '"1"' }),
    'the system changed since it was read (etag "1", now "0"): read it again and retry',
  );
  const res = await patch(w.app, `/admin/systems/${id}`, { description: "x" }, { "if-match": '"0"' });
  assert.equal([res.statusCode, res.headers.etag], [200, '"1"'], res.body);
});

Stored("a key's use on the admin API (last_used_at written by erplink) leaves its etag as it was", async ({ w }) => {
  const created = json(await post(w.app, "/admin/api-keys", { name: "ops", type: "admin" })).data;
  const path = `/admin/api-keys/${created.id}`;
  assert.is((await get(w, "/admin/systems", { authorization: `Bearer ${created.key}` })).statusCode, 200);
  await w.layer.deps.usage.flush();
  const stored = await w.store.apiKeys.get(created.id);
  assert.ok(stored?.lastUsedAt !== undefined, "the use was written");
  const after = await read(w, path);
  assert.ok(typeof after.last_used_at === "string", "the use shows");
  assert.is(after.etag, '"1"');
  const res = await patch(w.app, path, { name: "ops 2" }, { "if-match": '"1"' });
  assert.equal([res.statusCode, res.headers.etag], [200, '"2"'], res.body);
});

Stored.run();
