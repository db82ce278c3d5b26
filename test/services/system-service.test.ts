/**
 * SystemService through a typed Connect client over the in-process router
 * transport: create, get, list paging, update with a field mask, delete,
 * uniqueness and authentication.
 */
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { InstanceService } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { SystemSchema, SystemService, type System } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { ms, rejects, tick, violations, worldTests, type TestWorld } from "../../test-support/rpc.js";
import { MASTER_KEY } from "../../test-support/world.js";

type World = TestWorld;

const test = suite("SystemService");
const it = worldTests(test);

function json(s: System | undefined): unknown {
  assert.ok(s, "system is set");
  return toJson(SystemSchema, s);
}

async function createSystem(w: World, name: string, extra: Partial<Pick<System, "description" | "labels">> = {}) {
  const res = await w.client(SystemService).createSystem({ system: { name, ...extra } });
  assert.ok(res.system);
  return res.system;
}

// --- create / get ---------------------------------------------------------

it("CreateSystem sets a sys_ id and created_at == updated_at == the clock", async (w) => {
  const sys = await createSystem(w, "S/4HANA Europe", {
    description: "Main landscape",
    labels: { owner: "finance", "app.kubernetes.io/name": "erp" },
  });
  assert.match(sys.id, /^sys_[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.is(sys.name, "S/4HANA Europe");
  assert.is(sys.description, "Main landscape");
  assert.equal(sys.labels, { owner: "finance", "app.kubernetes.io/name": "erp" });
  assert.is(ms(sys.createdAt), w.now.getTime());
  assert.is(ms(sys.updatedAt), w.now.getTime());
});

it("CreateSystem gives each system a distinct id", async (w) => {
  const a = await createSystem(w, "a");
  const b = await createSystem(w, "b");
  assert.is.not(a.id, b.id);
});

it("CreateSystem without a system -> InvalidArgument field system", async (w) => {
  const err = await rejects(w.client(SystemService).createSystem({}), Code.InvalidArgument, "system: is required");
  assert.equal(violations(err), [{ field: "system", description: "is required" }]);
});

it("CreateSystem with an output-only id -> InvalidArgument, nothing stored", async (w) => {
  const err = await rejects(
    w.client(SystemService).createSystem({ system: { id: "sys_01J00000000000000000000000", name: "x" } }),
    Code.InvalidArgument,
    "id: is set by the server and cannot be written",
  );
  assert.equal(violations(err), [{ field: "id", description: "is set by the server and cannot be written" }]);
  const list = await w.client(SystemService).listSystems({});
  assert.is(list.systems.length, 0);
});

it("GetSystem returns the system as created", async (w) => {
  const sys = await createSystem(w, "erp", { description: "d", labels: { k: "v" } });
  tick(w);
  const got = await w.client(SystemService).getSystem({ id: sys.id });
  assert.equal(json(got.system), json(sys));
});

it("GetSystem of an unknown id -> NotFound naming it", async (w) => {
  await rejects(
    w.client(SystemService).getSystem({ id: "sys_01J00000000000000000000000" }),
    Code.NotFound,
    'system "sys_01J00000000000000000000000" not found',
  );
});

it("GetSystem with a malformed or instance id -> NotFound naming it (no such system can exist); empty -> InvalidArgument field id", async (w) => {
  const c = w.client(SystemService);
  for (const id of ["nope", "ins_01J00000000000000000000000", "sys_01j00000000000000000000000", "sys_doesnotexist"]) {
    await rejects(c.getSystem({ id }), Code.NotFound, `system "${id}" not found`);
  }
  const err = await rejects(c.getSystem({ id: "" }), Code.InvalidArgument, "id: is required");
  assert.equal(violations(err), [{ field: "id", description: "is required" }]);
});

// --- list -----------------------------------------------------------------

it("ListSystems page_size 2 over 5 systems: tokens chain, creation order, last token empty", async (w) => {
  const c = w.client(SystemService);
  const created: string[] = [];
  // Same-millisecond creations too: order must still be creation order.
  for (const name of ["e", "d", "c", "b", "a"]) {
    created.push((await createSystem(w, name)).id);
    if (name === "c") tick(w, 1);
  }
  const pages: string[][] = [];
  let token = "";
  for (let i = 0; i < 10; i++) {
    const res = await c.listSystems({ pageSize: 2, pageToken: token });
    pages.push(res.systems.map((s) => s.id));
    token = res.nextPageToken;
    if (token === "") break;
  }
  assert.equal(pages, [created.slice(0, 2), created.slice(2, 4), created.slice(4)]);
  const names = (await c.listSystems({})).systems.map((s) => s.name);
  assert.equal(names, ["e", "d", "c", "b", "a"]);
});

it("ListSystems: a page that exactly ends the list has an empty next_page_token", async (w) => {
  const c = w.client(SystemService);
  for (const name of ["a", "b", "c", "d"]) await createSystem(w, name);
  const first = await c.listSystems({ pageSize: 2 });
  assert.is.not(first.nextPageToken, "");
  const second = await c.listSystems({ pageSize: 2, pageToken: first.nextPageToken });
  assert.equal(
    second.systems.map((s) => s.name),
    ["c", "d"],
  );
  assert.is(second.nextPageToken, "");
});

it("ListSystems on an empty store: no systems, no token", async (w) => {
  const res = await w.client(SystemService).listSystems({});
  assert.equal(res.systems, []);
  assert.is(res.nextPageToken, "");
});

it("ListSystems page_size 0 -> default 50; 500 is allowed", async (w) => {
  const c = w.client(SystemService);
  for (let i = 0; i < 51; i++) await createSystem(w, `sys-${String(i).padStart(2, "0")}`);
  const first = await c.listSystems({ pageSize: 0 });
  assert.is(first.systems.length, 50);
  assert.is.not(first.nextPageToken, "");
  const rest = await c.listSystems({ pageSize: 0, pageToken: first.nextPageToken });
  assert.equal(
    rest.systems.map((s) => s.name),
    ["sys-50"],
  );
  assert.is(rest.nextPageToken, "");
  const max = await c.listSystems({ pageSize: 500 });
  assert.is(max.systems.length, 51);
  assert.is(max.nextPageToken, "");
});

it("ListSystems page_size 501 and -1 -> InvalidArgument field page_size", async (w) => {
  for (const pageSize of [501, -1]) {
    const err = await rejects(
      w.client(SystemService).listSystems({ pageSize }),
      Code.InvalidArgument,
      "page_size: must be between 1 and 500",
    );
    assert.equal(violations(err), [{ field: "page_size", description: "must be between 1 and 500" }], String(pageSize));
  }
});

it("ListSystems with a garbage page_token -> InvalidArgument field page_token", async (w) => {
  for (const pageToken of ["garbage!!", "djE6bm9wZQ", "sys_01J00000000000000000000000"]) {
    const err = await rejects(
      w.client(SystemService).listSystems({ pageToken }),
      Code.InvalidArgument,
      "page_token: is not a token this list returned",
    );
    assert.equal(violations(err), [{ field: "page_token", description: "is not a token this list returned" }]);
  }
});

it("ListSystems with an instances-list token -> InvalidArgument field page_token", async (w) => {
  const sys = await createSystem(w, "erp");
  const ins = w.client(InstanceService);
  for (const name of ["prd", "dev"]) {
    await ins.createInstance({ systemId: sys.id, instance: { name, baseUrl: "https://erp.example.com/odata" } });
  }
  const page = await ins.listInstances({ pageSize: 1 });
  assert.is.not(page.nextPageToken, "", "the instances list returned a token");
  const err = await rejects(
    w.client(SystemService).listSystems({ pageToken: page.nextPageToken }),
    Code.InvalidArgument,
    "page_token: is not a token this list returned",
  );
  assert.equal(violations(err), [{ field: "page_token", description: "is not a token this list returned" }]);
});

it("ListSystems reports a bad page_size and a bad page_token together", async (w) => {
  const err = await rejects(
    w.client(SystemService).listSystems({ pageSize: 501, pageToken: "x" }),
    Code.InvalidArgument,
    "2 fields are invalid",
  );
  assert.equal(
    violations(err).map((v) => v.field),
    ["page_size", "page_token"],
  );
});

// --- update ---------------------------------------------------------------

it("UpdateSystem changes only the masked fields; updated_at follows the clock, created_at stays", async (w) => {
  const c = w.client(SystemService);
  const sys = await createSystem(w, "old", { description: "keep me", labels: { team: "a" } });
  const createdAt = w.now.getTime();
  tick(w, 1500);
  const res = await c.updateSystem({
    system: { id: sys.id, name: "new", description: "ignored", labels: { other: "ignored" } },
    updateMask: { paths: ["name"] },
  });
  assert.ok(res.system);
  assert.is(res.system.id, sys.id);
  assert.is(res.system.name, "new");
  assert.is(res.system.description, "keep me");
  assert.equal(res.system.labels, { team: "a" });
  assert.is(ms(res.system.createdAt), createdAt);
  assert.is(ms(res.system.updatedAt), createdAt + 1500);
  const got = await c.getSystem({ id: sys.id });
  assert.equal(json(got.system), json(res.system));
});

it("UpdateSystem of labels replaces the whole map", async (w) => {
  const c = w.client(SystemService);
  const sys = await createSystem(w, "erp", { labels: { team: "a", env: "x" } });
  const res = await c.updateSystem({
    system: { id: sys.id, labels: { team: "b", "app.kubernetes.io/name": "erp" } },
    updateMask: { paths: ["labels"] },
  });
  assert.equal(res.system?.labels, { team: "b", "app.kubernetes.io/name": "erp" });
  const got = await c.getSystem({ id: sys.id });
  assert.equal(got.system?.labels, { team: "b", "app.kubernetes.io/name": "erp" });
  assert.is(got.system?.name, "erp");
});

it("UpdateSystem with an unknown mask path `nope` -> InvalidArgument naming it", async (w) => {
  const sys = await createSystem(w, "erp");
  const err = await rejects(
    w.client(SystemService).updateSystem({ system: { id: sys.id, name: "x" }, updateMask: { paths: ["nope"] } }),
    Code.InvalidArgument,
    "nope: is not a field of this resource",
  );
  assert.equal(violations(err), [{ field: "nope", description: "is not a field of this resource" }]);
});

it("UpdateSystem with a mask naming id or created_at -> InvalidArgument 'set by the server'", async (w) => {
  const c = w.client(SystemService);
  const sys = await createSystem(w, "erp");
  for (const path of ["id", "created_at", "updated_at"]) {
    const err = await rejects(
      c.updateSystem({ system: { id: sys.id }, updateMask: { paths: [path] } }),
      Code.InvalidArgument,
      `${path}: is set by the server and cannot be written`,
    );
    assert.equal(violations(err), [{ field: path, description: "is set by the server and cannot be written" }]);
  }
  const err = await rejects(
    c.updateSystem({ system: { id: sys.id }, updateMask: { paths: ["id", "created_at"] } }),
    Code.InvalidArgument,
    "2 fields are invalid",
  );
  assert.equal(violations(err), [
    { field: "id", description: "is set by the server and cannot be written" },
    { field: "created_at", description: "is set by the server and cannot be written" },
  ]);
});

it("UpdateSystem with an empty or missing mask -> InvalidArgument field update_mask", async (w) => {
  const c = w.client(SystemService);
  const sys = await createSystem(w, "erp");
  for (const updateMask of [{ paths: [] }, undefined]) {
    const err = await rejects(
      c.updateSystem({ system: { id: sys.id, name: "x" }, updateMask }),
      Code.InvalidArgument,
      "update_mask: must name at least one field to change",
    );
    assert.equal(violations(err), [{ field: "update_mask", description: "must name at least one field to change" }]);
  }
  assert.is((await c.getSystem({ id: sys.id })).system?.name, "erp");
});

it("UpdateSystem clearing name -> InvalidArgument 'is required', nothing changed", async (w) => {
  const c = w.client(SystemService);
  const sys = await createSystem(w, "erp");
  tick(w);
  const err = await rejects(
    c.updateSystem({ system: { id: sys.id }, updateMask: { paths: ["name"] } }),
    Code.InvalidArgument,
    "name: is required",
  );
  assert.equal(violations(err), [{ field: "name", description: "is required" }]);
  const got = await c.getSystem({ id: sys.id });
  assert.equal(json(got.system), json(sys));
});

it("UpdateSystem with a too long name -> InvalidArgument, nothing changed", async (w) => {
  const c = w.client(SystemService);
  const sys = await createSystem(w, "erp");
  await rejects(
    c.updateSystem({ system: { id: sys.id, name: "x".repeat(101) }, updateMask: { paths: ["name"] } }),
    Code.InvalidArgument,
    "name: must be at most 100 characters (got 101)",
  );
  assert.is((await c.getSystem({ id: sys.id })).system?.name, "erp");
});

it("UpdateSystem clearing description works", async (w) => {
  const c = w.client(SystemService);
  const sys = await createSystem(w, "erp", { description: "something" });
  tick(w);
  const res = await c.updateSystem({ system: { id: sys.id }, updateMask: { paths: ["description"] } });
  assert.is(res.system?.description, "");
  assert.is(res.system?.name, "erp");
  assert.is(ms(res.system?.updatedAt), w.now.getTime());
  const got = await c.getSystem({ id: sys.id });
  assert.is(got.system?.description, "");
});

it("UpdateSystem of an unknown or malformed id -> NotFound naming it", async (w) => {
  const c = w.client(SystemService);
  await rejects(
    c.updateSystem({ system: { id: "sys_01J00000000000000000000000", name: "x" }, updateMask: { paths: ["name"] } }),
    Code.NotFound,
    'system "sys_01J00000000000000000000000" not found',
  );
  await rejects(c.updateSystem({ system: { id: "bad", name: "x" }, updateMask: { paths: ["name"] } }), Code.NotFound, 'system "bad" not found');
  await rejects(c.updateSystem({ updateMask: { paths: ["name"] } }), Code.InvalidArgument, "system: is required");
});

// --- delete ---------------------------------------------------------------

it("DeleteSystem returns the system as it was; afterwards NotFound", async (w) => {
  const c = w.client(SystemService);
  const sys = await createSystem(w, "erp", { description: "d", labels: { k: "v" } });
  tick(w);
  await c.updateSystem({ system: { id: sys.id, description: "changed" }, updateMask: { paths: ["description"] } });
  const before = await c.getSystem({ id: sys.id });
  tick(w);
  const res = await c.deleteSystem({ id: sys.id });
  assert.equal(json(res.system), json(before.system));
  await rejects(c.getSystem({ id: sys.id }), Code.NotFound, `system "${sys.id}" not found`);
  await rejects(c.deleteSystem({ id: sys.id }), Code.NotFound, `system "${sys.id}" not found`);
  assert.equal((await c.listSystems({})).systems, []);
});

it("DeleteSystem with a malformed id -> NotFound naming it; without one -> InvalidArgument field id", async (w) => {
  await rejects(w.client(SystemService).deleteSystem({ id: "sys_x" }), Code.NotFound, 'system "sys_x" not found');
  const err = await rejects(
    w.client(SystemService).deleteSystem({ id: "" }),
    Code.InvalidArgument,
    "id: is required",
  );
  assert.equal(violations(err), [{ field: "id", description: "is required" }]);
});

it("DeleteSystem of a system with an instance -> FailedPrecondition, system kept", async (w) => {
  const c = w.client(SystemService);
  const ins = w.client(InstanceService);
  const sys = await createSystem(w, "erp");
  const other = await createSystem(w, "other");
  const created = await ins.createInstance({
    systemId: sys.id,
    instance: { name: "prd", baseUrl: "https://erp.example.com/odata" },
  });
  // An instance of another system does not count.
  await ins.createInstance({ systemId: other.id, instance: { name: "x1", baseUrl: "https://x.example.com/" } });
  await rejects(
    c.deleteSystem({ id: sys.id }),
    Code.FailedPrecondition,
    "system still has 1 instance; delete it first",
  );
  assert.equal(json((await c.getSystem({ id: sys.id })).system), json(sys));
  await ins.createInstance({ systemId: sys.id, instance: { name: "dev", baseUrl: "https://erp.example.com/odata" } });
  await rejects(
    c.deleteSystem({ id: sys.id }),
    Code.FailedPrecondition,
    "system still has 2 instances; delete them first",
  );
  assert.ok((await c.getSystem({ id: sys.id })).system);
  // Once its instances are gone, the system can be deleted.
  await ins.deleteInstance({ id: created.instance?.id ?? "" });
  const [dev] = (await ins.listInstances({ systemId: sys.id })).instances;
  await ins.deleteInstance({ id: dev?.id ?? "" });
  const res = await c.deleteSystem({ id: sys.id });
  assert.is(res.system?.id, sys.id);
});

it("DeleteSystem racing CreateInstance on it leaves no orphan instance", async (w) => {
  const sys = await createSystem(w, "erp");
  // Delete starts first; the instance is created while it runs.
  const deleting = w.client(SystemService).deleteSystem({ id: sys.id });
  const creating = w.client(InstanceService).createInstance({
    systemId: sys.id,
    instance: { name: "prd", baseUrl: "https://erp.example.com/odata" },
  });
  const [deleted, created] = await Promise.allSettled([deleting, creating]);
  assert.ok(
    deleted.status === "rejected" || created.status === "rejected",
    "deleting a system and adding an instance to it cannot both succeed",
  );
  // Whatever won, every instance belongs to an existing system.
  const { instances } = await w.client(InstanceService).listInstances({});
  for (const i of instances) {
    const got = await w.client(SystemService).getSystem({ id: i.systemId }).catch((e: unknown) => e);
    assert.not.instance(got, ConnectError, `system of instance ${i.name} exists`);
  }
});

// --- uniqueness -----------------------------------------------------------

it("CreateSystem with a duplicate name -> AlreadyExists with a BadRequest detail on name", async (w) => {
  const c = w.client(SystemService);
  const first = await createSystem(w, "erp", { description: "first" });
  const err = await rejects(
    c.createSystem({ system: { name: "erp", description: "second" } }),
    Code.AlreadyExists,
    "another system already has this name",
  );
  assert.equal(violations(err), [{ field: "name", description: "already in use" }]);
  const all = await c.listSystems({});
  assert.equal(
    all.systems.map((s) => json(s)),
    [json(first)],
  );
});

it("UpdateSystem to another system's name -> AlreadyExists with a BadRequest detail on name, unchanged", async (w) => {
  const c = w.client(SystemService);
  await createSystem(w, "erp");
  const b = await createSystem(w, "other");
  tick(w);
  const err = await rejects(
    c.updateSystem({ system: { id: b.id, name: "erp" }, updateMask: { paths: ["name"] } }),
    Code.AlreadyExists,
    "another system already has this name",
  );
  assert.equal(violations(err), [{ field: "name", description: "already in use" }]);
  assert.equal(json((await c.getSystem({ id: b.id })).system), json(b));
});

it("UpdateSystem keeping its own name is not a duplicate", async (w) => {
  const sys = await createSystem(w, "erp");
  const res = await w.client(SystemService).updateSystem({
    system: { id: sys.id, name: "erp", description: "d" },
    updateMask: { paths: ["name", "description"] },
  });
  assert.is(res.system?.name, "erp");
  assert.is(res.system?.description, "d");
});

it("a deleted system's name can be reused", async (w) => {
  const c = w.client(SystemService);
  const sys = await createSystem(w, "erp");
  await c.deleteSystem({ id: sys.id });
  const again = await createSystem(w, "erp");
  assert.is.not(again.id, sys.id);
});

// --- authentication -------------------------------------------------------

const badHeaders: [string, Record<string, string>, string][] = [
  ["no header", {}, "missing bearer token: send Authorization: Bearer <token>"],
  ["wrong token", { authorization: "Bearer wrong-token" }, "invalid bearer token"],
  ["master key with a suffix", { authorization: `Bearer ${MASTER_KEY}x` }, "invalid bearer token"],
  ["Basic scheme", { authorization: "Basic xyz" }, "missing bearer token: send Authorization: Bearer <token>"],
  ["Bearer without a token", { authorization: "Bearer" }, "missing bearer token: send Authorization: Bearer <token>"],
  ["Bearer and a space", { authorization: "Bearer " }, "missing bearer token: send Authorization: Bearer <token>"],
  ["bare master key", { authorization: MASTER_KEY }, "missing bearer token: send Authorization: Bearer <token>"],
];

it("every SystemService RPC rejects unauthenticated callers and changes nothing", async (w) => {
  const sys = await createSystem(w, "erp");
  const anon = createClient(SystemService, w.transport);
  const requests: Record<string, (h: Record<string, string>) => Promise<unknown>> = {
    GetSystem: (headers) => anon.getSystem({ id: sys.id }, { headers }),
    ListSystems: (headers) => anon.listSystems({}, { headers }),
    CreateSystem: (headers) => anon.createSystem({ system: { name: "intruder" } }, { headers }),
    UpdateSystem: (headers) =>
      anon.updateSystem({ system: { id: sys.id, name: "pwned" }, updateMask: { paths: ["name"] } }, { headers }),
    DeleteSystem: (headers) => anon.deleteSystem({ id: sys.id }, { headers }),
  };
  assert.equal(
    Object.keys(requests).sort(),
    SystemService.methods.map((m) => m.name).sort(),
    "every RPC of the service is covered",
  );
  for (const method of SystemService.methods) {
    const call = requests[method.name];
    assert.ok(call, method.name);
    for (const [label, headers, message] of badHeaders) {
      const err = await rejects(call(headers), Code.Unauthenticated);
      assert.is(err.rawMessage, message, `${method.name} with ${label}`);
    }
  }
  const all = await w.client(SystemService).listSystems({});
  assert.equal(
    all.systems.map((s) => json(s)),
    [json(sys)],
  );
});

it("the master key with a lower-case bearer scheme is accepted", async (w) => {
  const anon = createClient(SystemService, w.transport);
  const res = await anon.listSystems({}, { headers: { authorization: `bearer ${MASTER_KEY}` } });
  assert.equal(res.systems, []);
});

test.run();
