/**
 * The /admin REST facade through `app.inject()`: statuses, headers and the
 * exact envelopes of a full create / get / list / patch / delete walk for
 * systems and instances.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AUTH, createWorld, type World } from "../../test-support/world.js";
import { json, post, patch, SYS_ID, INS_ID, REQ_ID } from "../../test-support/http.js";

const Systems = suite<{ world: World }>("admin systems");

Systems.before.each(async (ctx) => {
  ctx.world = await createWorld();
});
Systems.after.each(async (ctx) => {
  await ctx.world.close();
});

Systems("POST /admin/systems creates and returns 201 with the envelope and the new system's Location", async ({ world }) => {
  const res = await post(world.app, "/admin/systems", {
    name: "S/4HANA Finance",
    description: "Group finance",
    labels: { team: "fin", "app.kubernetes.io/name": "s4" },
  });
  assert.is(res.statusCode, 201);
  assert.is(res.headers["content-type"], "application/json; charset=utf-8");
  const body = json(res);
  assert.match(body.data.id, SYS_ID);
  assert.match(res.headers["x-request-id"] as string, REQ_ID);
  assert.is(res.headers.location, `/admin/systems/${body.data.id}`);
  // The Location names the system created.
  const there = await world.app.inject({ method: "GET", url: res.headers.location as string, headers: AUTH });
  assert.equal([there.statusCode, json(there).data.id], [200, body.data.id]);
  assert.equal(body, {
    data: {
      id: body.data.id,
      name: "S/4HANA Finance",
      description: "Group finance",
      labels: { team: "fin", "app.kubernetes.io/name": "s4" },
      created_at: "2026-01-02T03:04:05Z",
      updated_at: "2026-01-02T03:04:05Z",
      etag: '"1"',
    },
    meta: { requestId: res.headers["x-request-id"] },
  });
});

Systems("GET /admin/systems/:id returns the system; unknown ids are 404", async ({ world }) => {
  const created = json(await post(world.app, "/admin/systems", { name: "ECC" })).data;
  const res = await world.app.inject({ method: "GET", url: `/admin/systems/${created.id}`, headers: AUTH });
  assert.is(res.statusCode, 200);
  assert.equal(json(res).data, { ...created, description: "", labels: {} });

  const missing = await world.app.inject({
    method: "GET",
    url: "/admin/systems/sys_00000000000000000000000000",
    headers: AUTH,
  });
  assert.is(missing.statusCode, 404);
  assert.equal(json(missing), {
    error: { code: "NOT_FOUND", message: 'system "sys_00000000000000000000000000" not found', requestId: missing.headers["x-request-id"] },
  });
});

Systems("GET /admin/systems pages with page_size and meta.nextPageToken", async ({ world }) => {
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    world.now = new Date(world.now.getTime() + 1000);
    ids.push(json(await post(world.app, "/admin/systems", { name: `sys-${i}` })).data.id);
  }
  const seen: string[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const url = `/admin/systems?page_size=2${token ? `&page_token=${encodeURIComponent(token)}` : ""}`;
    const res = await world.app.inject({ method: "GET", url, headers: AUTH });
    assert.is(res.statusCode, 200);
    const body = json(res);
    assert.ok(body.data.length <= 2);
    seen.push(...body.data.map((s: { id: string }) => s.id));
    token = body.meta.nextPageToken;
    assert.equal(Object.keys(body.meta).sort(), token ? ["nextPageToken", "requestId"] : ["requestId"]);
    pages++;
  } while (token);
  assert.is(pages, 3);
  assert.equal(seen, ids);

  const all = json(await world.app.inject({ method: "GET", url: "/admin/systems", headers: AUTH }));
  assert.is(all.data.length, 5);
  assert.equal(all.meta, { requestId: all.meta.requestId });
});

Systems("PATCH /admin/systems/:id changes only the fields in the body", async ({ world }) => {
  const created = json(
    await post(world.app, "/admin/systems", { name: "ERP", description: "old", labels: { a: "1" } }),
  ).data;
  world.now = new Date("2026-02-03T04:05:06.789Z");
  const res = await patch(world.app, `/admin/systems/${created.id}`, { description: "new" });
  assert.is(res.statusCode, 200);
  assert.equal(json(res).data, {
    ...created,
    description: "new",
    updated_at: "2026-02-03T04:05:06.789Z",
    etag: '"2"',
  });
  const cleared = await patch(world.app, `/admin/systems/${created.id}`, { labels: {}, description: "" });
  assert.is(cleared.statusCode, 200);
  assert.equal(json(cleared).data.labels, {});
  assert.is(json(cleared).data.description, "");
});

Systems("DELETE /admin/systems/:id returns the deleted system; then it is gone", async ({ world }) => {
  const created = json(await post(world.app, "/admin/systems", { name: "Gone" })).data;
  const res = await world.app.inject({ method: "DELETE", url: `/admin/systems/${created.id}`, headers: AUTH });
  assert.is(res.statusCode, 200);
  assert.equal(json(res).data, { ...created, description: "", labels: {} });
  const again = await world.app.inject({ method: "DELETE", url: `/admin/systems/${created.id}`, headers: AUTH });
  assert.is(again.statusCode, 404);
  assert.is(json(again).error.code, "NOT_FOUND");
});

Systems("a duplicate system name is 409 CONFLICT naming the field", async ({ world }) => {
  await post(world.app, "/admin/systems", { name: "Twin" });
  const res = await post(world.app, "/admin/systems", { name: "Twin" });
  assert.is(res.statusCode, 409);
  assert.equal(json(res), {
    error: {
      code: "CONFLICT",
      message: "another system already has this name",
      requestId: res.headers["x-request-id"],
      details: [{ field: "name", message: "already in use" }],
    },
  });
  const other = json(await post(world.app, "/admin/systems", { name: "Other" })).data;
  const renamed = await patch(world.app, `/admin/systems/${other.id}`, { name: "Twin" });
  assert.is(renamed.statusCode, 409);
  assert.is((await world.store.systems.get(other.id))?.name, "Other");
});

Systems.run();

const Instances = suite<{ world: World; systemId: string }>("admin instances");

Instances.before.each(async (ctx) => {
  ctx.world = await createWorld();
  ctx.systemId = json(await post(ctx.world.app, "/admin/systems", { name: "S4" })).data.id;
});
Instances.after.each(async (ctx) => {
  await ctx.world.close();
});

const PROD = { name: "s4-prod", environment: "production", base_url: "https://s4.example.com/sap/opu/odata4/" };

Instances("create, get, list, patch and delete an instance", async ({ world, systemId }) => {
  const res = await post(world.app, `/admin/systems/${systemId}/instances`, PROD);
  assert.is(res.statusCode, 201);
  const created = json(res).data;
  assert.match(created.id, INS_ID);
  // An instance's own path is under /admin/instances, not under its system.
  assert.is(res.headers.location, `/admin/instances/${created.id}`);
  assert.equal(created, {
    id: created.id,
    system_id: systemId,
    ...PROD,
    services: {},
    // No SAP client: the back end's default.
    sap_client: "",
    // No connection limit of its own: the process default.
    upstream_connections: 0,
    created_at: "2026-01-02T03:04:05Z",
    updated_at: "2026-01-02T03:04:05Z",
    etag: '"1"',
  });

  const got = await world.app.inject({ method: "GET", url: `/admin/instances/${created.id}`, headers: AUTH });
  assert.is(got.statusCode, 200);
  assert.equal(json(got).data, created);

  const list = await world.app.inject({ method: "GET", url: `/admin/systems/${systemId}/instances`, headers: AUTH });
  assert.is(list.statusCode, 200);
  assert.equal(json(list).data, [created]);

  world.now = new Date("2026-03-01T00:00:00Z");
  const changed = await patch(world.app, `/admin/instances/${created.id}`, {
    base_url: "https://s4-new.example.com/odata/",
    environment: "",
  });
  assert.is(changed.statusCode, 200);
  assert.equal(json(changed).data, {
    ...created,
    base_url: "https://s4-new.example.com/odata/",
    environment: "",
    updated_at: "2026-03-01T00:00:00Z",
    etag: '"2"',
  });

  const deleted = await world.app.inject({ method: "DELETE", url: `/admin/instances/${created.id}`, headers: AUTH });
  assert.is(deleted.statusCode, 200);
  assert.equal(json(deleted).data, json(changed).data);
  const after = await world.app.inject({ method: "GET", url: `/admin/instances/${created.id}`, headers: AUTH });
  assert.is(after.statusCode, 404);
  assert.equal(json(after).error, { code: "NOT_FOUND", message: `instance "${created.id}" not found`, requestId: after.headers["x-request-id"] });
});

Instances("GET /admin/instances lists the instances of every system in one call, paged", async ({ world, systemId }) => {
  const other = json(await post(world.app, "/admin/systems", { name: "BW" })).data.id;
  const a = json(await post(world.app, `/admin/systems/${systemId}/instances`, PROD)).data;
  const b = json(await post(world.app, `/admin/systems/${other}/instances`, { ...PROD, name: "bw-prod" })).data;
  const res = await world.app.inject({ method: "GET", url: "/admin/instances", headers: AUTH });
  assert.is(res.statusCode, 200);
  assert.equal(json(res), { data: [a, b], meta: { requestId: res.headers["x-request-id"] } });
  const first = await world.app.inject({ method: "GET", url: "/admin/instances?page_size=1", headers: AUTH });
  const page1 = json(first);
  assert.equal(page1.data, [a]);
  const second = await world.app.inject({ method: "GET", url: `/admin/instances?page_size=1&page_token=${encodeURIComponent(page1.meta.nextPageToken)}`, headers: AUTH });
  assert.equal(json(second).data, [b]);
  assert.is(json(second).meta.nextPageToken, undefined);
  assert.is((await world.app.inject({ method: "GET", url: "/admin/instances" })).statusCode, 401);
});

Instances("instances of an unknown system: 404 NOT_FOUND on list and create", async ({ world }) => {
  const unknown = "sys_00000000000000000000000000";
  const list = await world.app.inject({ method: "GET", url: `/admin/systems/${unknown}/instances`, headers: AUTH });
  assert.is(list.statusCode, 404);
  assert.equal(json(list).error, { code: "NOT_FOUND", message: `system "${unknown}" not found`, requestId: list.headers["x-request-id"] });
  const created = await post(world.app, `/admin/systems/${unknown}/instances`, PROD);
  assert.is(created.statusCode, 404);
  assert.is(json(created).error.message, `system "${unknown}" not found`);
  assert.is(created.headers.location, undefined);
  assert.is((await world.store.instances.getByName("s4-prod")), undefined);
});

Instances("deleting a system that has instances is 409 CONFLICT and deletes nothing", async ({ world, systemId }) => {
  await post(world.app, `/admin/systems/${systemId}/instances`, PROD);
  const res = await world.app.inject({ method: "DELETE", url: `/admin/systems/${systemId}`, headers: AUTH });
  assert.is(res.statusCode, 409);
  assert.equal(json(res).error, {
    code: "CONFLICT",
    message: "system still has 1 instance; delete it first",
    requestId: res.headers["x-request-id"],
  });
  assert.ok(await world.store.systems.get(systemId));
});

Instances("instance names are unique across systems: 409 naming the field", async ({ world, systemId }) => {
  await post(world.app, `/admin/systems/${systemId}/instances`, PROD);
  const other = json(await post(world.app, "/admin/systems", { name: "Other" })).data.id;
  const res = await post(world.app, `/admin/systems/${other}/instances`, { ...PROD, environment: "dev" });
  assert.is(res.statusCode, 409);
  assert.equal(json(res).error.details, [{ field: "name", message: "already in use" }]);
  assert.is(await world.store.instances.countBySystem(other), 0);
});

Instances("system_id in the body is rejected: it comes from the path", async ({ world, systemId }) => {
  const res = await post(world.app, `/admin/systems/${systemId}/instances`, { ...PROD, system_id: systemId });
  assert.is(res.statusCode, 400);
  assert.equal(json(res).error.details, [{ field: "system_id", message: "is set by the server and cannot be written" }]);
  assert.is(await world.store.instances.countBySystem(systemId), 0);
});

Instances("sap_client: set on create, changed by PATCH, cleared with null or \"\"; anything but three digits is 400 naming it", async ({ world, systemId }) => {
  const res = await post(world.app, `/admin/systems/${systemId}/instances`, { ...PROD, sap_client: "100" });
  assert.is(res.statusCode, 201, res.body);
  const created = json(res).data;
  assert.equal(created, {
    id: created.id,
    system_id: systemId,
    ...PROD,
    services: {},
    sap_client: "100",
    upstream_connections: 0,
    created_at: "2026-01-02T03:04:05Z",
    updated_at: "2026-01-02T03:04:05Z",
    etag: '"1"',
  });
  const url = `/admin/instances/${created.id}`;
  assert.equal(json(await world.app.inject({ method: "GET", url, headers: AUTH })).data, created);

  const changes: [unknown, string][] = [
    ["200", "200"],
    [null, ""],
    ["300", "300"],
    ["", ""],
  ];
  const actual = [];
  for (const [i, [value]] of changes.entries()) {
    const changed = await patch(world.app, url, { sap_client: value });
    assert.is(changed.statusCode, 200, changed.body);
    const data = json(changed).data;
    assert.equal(data, { ...created, sap_client: data.sap_client, etag: `"${i + 2}"` }, "only sap_client (and the etag) changes");
    actual.push([value, data.sap_client]);
  }
  assert.equal(actual, changes);
  assert.is((await world.store.instances.get(created.id))?.sapClient, undefined, "cleared: nothing stored");

  const pattern = "must match ^[0-9]{3}$";
  const bad: [unknown, string][] = [
    ["12", pattern],
    ["1234", pattern],
    ["abc", pattern],
    [" 123", pattern],
    [100, "must be a string"],
  ];
  for (const [value, message] of bad) {
    for (const sent of [
      await post(world.app, `/admin/systems/${systemId}/instances`, { ...PROD, name: "s4-dev", sap_client: value }),
      await patch(world.app, url, { sap_client: value }),
    ]) {
      assert.is(sent.statusCode, 400, `${JSON.stringify(value)}: ${sent.body}`);
      assert.equal(json(sent).error, {
        code: "VALIDATION_ERROR",
        message: `sap_client: ${message}`,
        requestId: sent.headers["x-request-id"],
        details: [{ field: "sap_client", message }],
      });
    }
  }
  assert.is(await world.store.instances.getByName("s4-dev"), undefined);
  assert.is(json(await world.app.inject({ method: "GET", url, headers: AUTH })).data.sap_client, "");
});

Instances.run();
