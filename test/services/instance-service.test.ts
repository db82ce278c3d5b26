/**
 * InstanceService through a typed Connect client over the in-process router
 * transport: create under a system, field rules (name pattern, base URL,
 * SAP client), uniqueness across systems, listing by system, update and
 * delete.
 */
import { toJson, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { InstanceSchema, InstanceService, type Instance } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { ms, rejects, tick, violations, worldTests, type TestWorld } from "../../test-support/rpc.js";

type World = TestWorld;

const test = suite("InstanceService");
const it = worldTests(test);

const URL_OK = "https://erp.example.com/sap/opu/odata4/";
const NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$";
const SAP_CLIENT_PATTERN = "^[0-9]{3}$";
const UNKNOWN_SYS = "sys_01J00000000000000000000000";
const UNKNOWN_INS = "ins_01J00000000000000000000000";

function json(i: Instance | undefined): unknown {
  assert.ok(i, "instance is set");
  return toJson(InstanceSchema, i);
}

async function createSystem(w: World, name: string): Promise<string> {
  const res = await w.client(SystemService).createSystem({ system: { name } });
  assert.ok(res.system);
  return res.system.id;
}

async function createInstance(
  w: World,
  systemId: string,
  name: string,
  extra: Partial<Pick<Instance, "environment" | "baseUrl" | "sapClient">> = {},
): Promise<Instance> {
  const res = await w.client(InstanceService).createInstance({
    systemId,
    instance: { name, baseUrl: URL_OK, ...extra },
  });
  assert.ok(res.instance);
  return res.instance;
}

async function allInstances(w: World): Promise<Instance[]> {
  return (await w.client(InstanceService).listInstances({ pageSize: 500 })).instances;
}

// --- create ---------------------------------------------------------------

it("CreateInstance under a system: system_id from the request, fields kept, server-set id and times", async (w) => {
  const sysId = await createSystem(w, "erp");
  const ins = await createInstance(w, sysId, "prd", {
    environment: "production",
    baseUrl: "http://10.0.0.1:8000/odata",
  });
  assert.match(ins.id, /^ins_[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.is(ins.systemId, sysId);
  assert.is(ins.name, "prd");
  assert.is(ins.environment, "production");
  assert.is(ins.baseUrl, "http://10.0.0.1:8000/odata");
  assert.is(ms(ins.createdAt), w.now.getTime());
  assert.is(ms(ins.updatedAt), w.now.getTime());
  tick(w);
  const got = await w.client(InstanceService).getInstance({ id: ins.id });
  assert.equal(json(got.instance), json(ins));
});

it("CreateInstance under an unknown system -> NotFound naming the system, nothing stored", async (w) => {
  await rejects(
    w.client(InstanceService).createInstance({ systemId: UNKNOWN_SYS, instance: { name: "prd", baseUrl: URL_OK } }),
    Code.NotFound,
    `system "${UNKNOWN_SYS}" not found`,
  );
  assert.equal(await allInstances(w), []);
});

it("CreateInstance under a malformed system id (or another type's) -> NotFound naming it; a missing one -> InvalidArgument field system_id", async (w) => {
  // The parent names a system that cannot exist: as any system that does not.
  for (const systemId of ["nope", UNKNOWN_INS]) {
    await rejects(
      w.client(InstanceService).createInstance({ systemId, instance: { name: "prd", baseUrl: URL_OK } }),
      Code.NotFound,
      `system "${systemId}" not found`,
    );
  }
  const err = await rejects(
    w.client(InstanceService).createInstance({ systemId: "", instance: { name: "prd", baseUrl: URL_OK } }),
    Code.InvalidArgument,
    "system_id: is required",
  );
  assert.equal(violations(err), [{ field: "system_id", description: "is required" }]);
  assert.equal(await allInstances(w), []);
});

it("CreateInstance without an instance -> InvalidArgument field instance", async (w) => {
  const sysId = await createSystem(w, "erp");
  const err = await rejects(
    w.client(InstanceService).createInstance({ systemId: sysId }),
    Code.InvalidArgument,
    "instance: is required",
  );
  assert.equal(violations(err), [{ field: "instance", description: "is required" }]);
});

it("CreateInstance accepts valid names", async (w) => {
  const sysId = await createSystem(w, "erp");
  for (const name of ["prod", "PRD-100", "a", "x".repeat(64), "s4.hana_dev", "0_0", "A.b-C_9"]) {
    const ins = await createInstance(w, sysId, name);
    assert.is(ins.name, name);
  }
});

it("CreateInstance rejects invalid names with a violation on name", async (w) => {
  const sysId = await createSystem(w, "erp");
  const cases: [string, string][] = [
    ["", "is required"],
    ["-x", `must match ${NAME_PATTERN}`],
    [".x", `must match ${NAME_PATTERN}`],
    ["_x", `must match ${NAME_PATTERN}`],
    ["with space", `must match ${NAME_PATTERN}`],
    ["ü", `must match ${NAME_PATTERN}`],
    ["x".repeat(65), "must be at most 64 characters (got 65)"],
    ["a/b", `must match ${NAME_PATTERN}`],
    ["prd\n", `must match ${NAME_PATTERN}`],
  ];
  for (const [name, description] of cases) {
    const err = await rejects(
      w.client(InstanceService).createInstance({ systemId: sysId, instance: { name, baseUrl: URL_OK } }),
      Code.InvalidArgument,
      `name: ${description}`,
    );
    assert.equal(violations(err), [{ field: "name", description }], JSON.stringify(name));
  }
  assert.equal(await allInstances(w), []);
});

it("CreateInstance accepts valid base URLs and keeps them as given", async (w) => {
  const sysId = await createSystem(w, "erp");
  const long = "https://erp.example.com/" + "a".repeat(2048 - "https://erp.example.com/".length);
  assert.is(long.length, 2048);
  const urls = [URL_OK, "http://10.0.0.1:8000/odata", "HTTPS://ERP.example.com/odata?sap-client=100", long];
  for (const [i, baseUrl] of urls.entries()) {
    const ins = await createInstance(w, sysId, `i${i}`, { baseUrl });
    assert.is(ins.baseUrl, baseUrl);
  }
});

it("CreateInstance rejects invalid base URLs with a violation on base_url", async (w) => {
  const sysId = await createSystem(w, "erp");
  const absolute = "must be an absolute http or https URL";
  const tooLong = "https://erp.example.com/" + "a".repeat(2049 - "https://erp.example.com/".length);
  assert.is(tooLong.length, 2049);
  const cases: [string, string][] = [
    ["ftp://x", absolute],
    ["erp.example.com", absolute],
    ["https://user:pw@erp.example.com", "must not contain credentials; configure back-end credentials separately"],
    ["https://user@erp.example.com", "must not contain credentials; configure back-end credentials separately"],
    ["https://erp.example.com/#frag", "must not contain a fragment"],
    ["https://erp.example.com/#", "must not contain a fragment"],
    ["", "is required"],
    ["javascript:alert(1)", absolute],
    ["file:///etc/passwd", absolute],
    [tooLong, "must be at most 2048 characters (got 2049)"],
  ];
  for (const [baseUrl, description] of cases) {
    const err = await rejects(
      w.client(InstanceService).createInstance({ systemId: sysId, instance: { name: "prd", baseUrl } }),
      Code.InvalidArgument,
      `base_url: ${description}`,
    );
    assert.equal(violations(err), [{ field: "base_url", description }], baseUrl.slice(0, 60));
  }
  assert.equal(await allInstances(w), []);
});

it("CreateInstance reports every violation at once", async (w) => {
  const sysId = await createSystem(w, "erp");
  const c = w.client(InstanceService);
  let err = await rejects(
    c.createInstance({ systemId: sysId, instance: { name: "-x", baseUrl: "ftp://x" } }),
    Code.InvalidArgument,
    "2 fields are invalid",
  );
  assert.equal(violations(err), [
    { field: "name", description: `must match ${NAME_PATTERN}` },
    { field: "base_url", description: "must be an absolute http or https URL" },
  ]);
  err = await rejects(
    c.createInstance({ systemId: sysId, instance: { name: "", environment: "e".repeat(65), baseUrl: "" } }),
    Code.InvalidArgument,
    "3 fields are invalid",
  );
  assert.equal(violations(err), [
    { field: "name", description: "is required" },
    { field: "environment", description: "must be at most 64 characters (got 65)" },
    { field: "base_url", description: "is required" },
  ]);
});

it("CreateInstance with output-only fields set -> InvalidArgument 'is set by the server'", async (w) => {
  const sysId = await createSystem(w, "erp");
  const c = w.client(InstanceService);
  const set = "is set by the server and cannot be written";
  const cases: [string, MessageInitShape<typeof InstanceSchema>][] = [
    ["system_id", { systemId: sysId }],
    ["id", { id: UNKNOWN_INS }],
    ["created_at", { createdAt: timestampFromDate(w.now) }],
    ["updated_at", { updatedAt: timestampFromDate(w.now) }],
  ];
  for (const [field, extra] of cases) {
    const err = await rejects(
      c.createInstance({ systemId: sysId, instance: { name: "prd", baseUrl: URL_OK, ...extra } }),
      Code.InvalidArgument,
      `${field}: ${set}`,
    );
    assert.equal(violations(err), [{ field, description: set }]);
  }
  const err = await rejects(
    c.createInstance({
      systemId: sysId,
      instance: { id: UNKNOWN_INS, systemId: sysId, name: "prd", baseUrl: URL_OK, createdAt: timestampFromDate(w.now) },
    }),
    Code.InvalidArgument,
    "3 fields are invalid",
  );
  assert.equal(violations(err), [
    { field: "id", description: set },
    { field: "system_id", description: set },
    { field: "created_at", description: set },
  ]);
  assert.equal(await allInstances(w), []);
});

it("instance names are unique across systems (case-sensitive)", async (w) => {
  const a = await createSystem(w, "a");
  const b = await createSystem(w, "b");
  const first = await createInstance(w, a, "prd");
  const c = w.client(InstanceService);
  for (const systemId of [a, b]) {
    const err = await rejects(
      c.createInstance({ systemId, instance: { name: "prd", baseUrl: URL_OK } }),
      Code.AlreadyExists,
      "another instance already has this name",
    );
    assert.equal(violations(err), [{ field: "name", description: "already in use" }]);
  }
  const upper = await createInstance(w, b, "PRD");
  assert.is(upper.systemId, b);
  assert.equal(
    (await allInstances(w)).map((i) => i.name),
    ["prd", "PRD"],
  );
  // Renaming onto a taken name fails too, and changes nothing.
  const err = await rejects(
    c.updateInstance({ instance: { id: upper.id, name: "prd" }, updateMask: { paths: ["name"] } }),
    Code.AlreadyExists,
    "another instance already has this name",
  );
  assert.equal(violations(err), [{ field: "name", description: "already in use" }]);
  assert.equal(json((await c.getInstance({ id: upper.id })).instance), json(upper));
  assert.equal(json((await c.getInstance({ id: first.id })).instance), json(first));
});

// --- get / list -------------------------------------------------------------

it("GetInstance: unknown, malformed or another type's id -> NotFound naming it; empty -> InvalidArgument field id", async (w) => {
  const c = w.client(InstanceService);
  for (const id of [UNKNOWN_INS, "x", UNKNOWN_SYS, 'ins_"quoted"\n']) {
    await rejects(c.getInstance({ id }), Code.NotFound, `instance ${JSON.stringify(id)} not found`);
  }
  const err = await rejects(c.getInstance({ id: "" }), Code.InvalidArgument, "id: is required");
  assert.equal(violations(err), [{ field: "id", description: "is required" }]);
});

it("ListInstances by system lists only its instances; empty system_id lists all, in creation order", async (w) => {
  const a = await createSystem(w, "a");
  const b = await createSystem(w, "b");
  const a1 = await createInstance(w, a, "a1");
  const b1 = await createInstance(w, b, "b1");
  tick(w, 1);
  const a2 = await createInstance(w, a, "a2");
  const c = w.client(InstanceService);
  assert.equal(
    (await c.listInstances({ systemId: a })).instances.map((i) => i.id),
    [a1.id, a2.id],
  );
  assert.equal(
    (await c.listInstances({ systemId: b })).instances.map((i) => i.id),
    [b1.id],
  );
  const all = await c.listInstances({});
  assert.equal(
    all.instances.map((i) => json(i)),
    [a1, b1, a2].map((i) => json(i)),
  );
  assert.is(all.nextPageToken, "");
  const empty = await createSystem(w, "empty");
  assert.equal((await c.listInstances({ systemId: empty })).instances, []);
});

it("ListInstances pages through one system's instances", async (w) => {
  const a = await createSystem(w, "a");
  const b = await createSystem(w, "b");
  const ids: string[] = [];
  for (const name of ["a1", "a2", "a3"]) {
    ids.push((await createInstance(w, a, name)).id);
    await createInstance(w, b, `b-${name}`);
  }
  const c = w.client(InstanceService);
  const seen: string[][] = [];
  let token = "";
  for (let i = 0; i < 5; i++) {
    const res = await c.listInstances({ systemId: a, pageSize: 2, pageToken: token });
    seen.push(res.instances.map((x) => x.id));
    token = res.nextPageToken;
    if (token === "") break;
  }
  assert.equal(seen, [ids.slice(0, 2), ids.slice(2)]);
});

it("ListInstances: unknown or malformed system -> NotFound; bad page_size or token -> InvalidArgument", async (w) => {
  const c = w.client(InstanceService);
  await rejects(c.listInstances({ systemId: UNKNOWN_SYS }), Code.NotFound, `system "${UNKNOWN_SYS}" not found`);
  await rejects(c.listInstances({ systemId: "sys_" }), Code.NotFound, 'system "sys_" not found');
  let err = await rejects(c.listInstances({ pageSize: 501 }), Code.InvalidArgument, "page_size: must be between 1 and 500");
  assert.equal(violations(err), [{ field: "page_size", description: "must be between 1 and 500" }]);
  // A systems-list token is not an instances-list token.
  const sys = w.client(SystemService);
  await createSystem(w, "s1");
  await createSystem(w, "s2");
  const { nextPageToken } = await sys.listSystems({ pageSize: 1 });
  assert.is.not(nextPageToken, "");
  err = await rejects(
    c.listInstances({ pageToken: nextPageToken }),
    Code.InvalidArgument,
    "page_token: is not a token this list returned",
  );
  assert.equal(violations(err), [{ field: "page_token", description: "is not a token this list returned" }]);
});

// --- update ---------------------------------------------------------------

it("UpdateInstance changes only the masked fields; updated_at follows the clock", async (w) => {
  const sysId = await createSystem(w, "erp");
  const ins = await createInstance(w, sysId, "prd", { environment: "production" });
  tick(w, 2500);
  const c = w.client(InstanceService);
  const res = await c.updateInstance({
    instance: { id: ins.id, name: "ignored", environment: "ignored", baseUrl: "http://10.0.0.1:8000/odata" },
    updateMask: { paths: ["base_url"] },
  });
  assert.ok(res.instance);
  assert.is(res.instance.baseUrl, "http://10.0.0.1:8000/odata");
  assert.is(res.instance.name, "prd");
  assert.is(res.instance.environment, "production");
  assert.is(res.instance.systemId, sysId);
  assert.is(ms(res.instance.createdAt), ms(ins.createdAt));
  assert.is(ms(res.instance.updatedAt), ms(ins.createdAt) + 2500);
  assert.equal(json((await c.getInstance({ id: ins.id })).instance), json(res.instance));
});

it("UpdateInstance clearing environment works; clearing base_url or name is rejected", async (w) => {
  const sysId = await createSystem(w, "erp");
  const ins = await createInstance(w, sysId, "prd", { environment: "production" });
  const c = w.client(InstanceService);
  const res = await c.updateInstance({ instance: { id: ins.id }, updateMask: { paths: ["environment"] } });
  assert.is(res.instance?.environment, "");
  assert.is(res.instance?.baseUrl, URL_OK);
  const err = await rejects(
    c.updateInstance({ instance: { id: ins.id }, updateMask: { paths: ["name", "base_url"] } }),
    Code.InvalidArgument,
    "2 fields are invalid",
  );
  assert.equal(violations(err), [
    { field: "name", description: "is required" },
    { field: "base_url", description: "is required" },
  ]);
  const got = await c.getInstance({ id: ins.id });
  assert.is(got.instance?.name, "prd");
  assert.is(got.instance?.baseUrl, URL_OK);
});

it("UpdateInstance of base_url with an invalid URL -> InvalidArgument, nothing changed", async (w) => {
  const sysId = await createSystem(w, "erp");
  const ins = await createInstance(w, sysId, "prd");
  tick(w);
  const c = w.client(InstanceService);
  const cases: [string, string][] = [
    ["https://user:pw@erp.example.com", "must not contain credentials; configure back-end credentials separately"],
    ["ftp://x", "must be an absolute http or https URL"],
    ["https://erp.example.com/#frag", "must not contain a fragment"],
  ];
  for (const [baseUrl, description] of cases) {
    const err = await rejects(
      c.updateInstance({ instance: { id: ins.id, baseUrl }, updateMask: { paths: ["base_url"] } }),
      Code.InvalidArgument,
      `base_url: ${description}`,
    );
    assert.equal(violations(err), [{ field: "base_url", description }]);
  }
  assert.equal(json((await c.getInstance({ id: ins.id })).instance), json(ins));
});

it("UpdateInstance mask errors: system_id/id are set by the server, unknown path, empty mask", async (w) => {
  const sysId = await createSystem(w, "erp");
  const other = await createSystem(w, "other");
  const ins = await createInstance(w, sysId, "prd");
  const c = w.client(InstanceService);
  const set = "is set by the server and cannot be written";
  for (const path of ["system_id", "id", "created_at"]) {
    const err = await rejects(
      c.updateInstance({ instance: { id: ins.id, systemId: other }, updateMask: { paths: [path] } }),
      Code.InvalidArgument,
      `${path}: ${set}`,
    );
    assert.equal(violations(err), [{ field: path, description: set }]);
  }
  let err = await rejects(
    c.updateInstance({ instance: { id: ins.id }, updateMask: { paths: ["baseUrl"] } }),
    Code.InvalidArgument,
    "baseUrl: is not a field of this resource",
  );
  assert.equal(violations(err), [{ field: "baseUrl", description: "is not a field of this resource" }]);
  err = await rejects(
    c.updateInstance({ instance: { id: ins.id, name: "x" }, updateMask: { paths: [] } }),
    Code.InvalidArgument,
    "update_mask: must name at least one field to change",
  );
  assert.equal(violations(err), [{ field: "update_mask", description: "must name at least one field to change" }]);
  assert.equal(json((await c.getInstance({ id: ins.id })).instance), json(ins));
});

it("UpdateInstance of an unknown id -> NotFound naming it", async (w) => {
  await rejects(
    w.client(InstanceService).updateInstance({
      instance: { id: UNKNOWN_INS, environment: "x" },
      updateMask: { paths: ["environment"] },
    }),
    Code.NotFound,
    `instance "${UNKNOWN_INS}" not found`,
  );
});

// --- sap_client -------------------------------------------------------------

it("CreateInstance with sap_client: returned, read back, stored, and handed to the data plane; without it: empty, nothing stored", async (w) => {
  const sysId = await createSystem(w, "erp");
  const ins = await createInstance(w, sysId, "prd", { sapClient: "100" });
  assert.is(ins.sapClient, "100");
  assert.equal(json((await w.client(InstanceService).getInstance({ id: ins.id })).instance), json(ins));
  assert.is((await w.store.instances.get(ins.id))?.sapClient, "100");
  assert.is((await w.layer.dataPlane.instance("prd"))?.sapClient, "100");

  const none = await createInstance(w, sysId, "dev");
  assert.is(none.sapClient, "");
  assert.not.ok("sap_client" in (json(none) as object), "proto JSON leaves the empty field out");
  const rec = await w.store.instances.get(none.id);
  assert.ok(rec);
  assert.not.ok("sapClient" in rec, "no SAP client is stored as absent, not as \"\"");
  const upstream = await w.layer.dataPlane.instance("dev");
  assert.ok(upstream);
  assert.is(upstream.sapClient, undefined);
  // "000" is a real client (SAP's own), not "none".
  assert.is((await createInstance(w, sysId, "zero", { sapClient: "000" })).sapClient, "000");
});

it("CreateInstance rejects sap_client values that are not exactly three digits, naming sap_client; nothing stored", async (w) => {
  const sysId = await createSystem(w, "erp");
  const c = w.client(InstanceService);
  const description = `must match ${SAP_CLIENT_PATTERN}`;
  for (const sapClient of ["12", "1234", "abc", " 123", "123 ", "12a", "1_0", "\uff11\uff12\uff13", "100\n"]) {
    const err = await rejects(
      c.createInstance({ systemId: sysId, instance: { name: "prd", baseUrl: URL_OK, sapClient } }),
      Code.InvalidArgument,
      `sap_client: ${description}`,
    );
    assert.equal(violations(err), [{ field: "sap_client", description }], JSON.stringify(sapClient));
  }
  assert.equal(await allInstances(w), []);
});

it("UpdateInstance sets, changes and clears sap_client by the mask; an invalid value changes nothing", async (w) => {
  const sysId = await createSystem(w, "erp");
  const ins = await createInstance(w, sysId, "prd", { environment: "production" });
  const c = w.client(InstanceService);
  const update = (sapClient: string | undefined) =>
    c.updateInstance({ instance: { id: ins.id, ...(sapClient === undefined ? {} : { sapClient }) }, updateMask: { paths: ["sap_client"] } });

  tick(w);
  let res = await update("100");
  assert.is(res.instance?.sapClient, "100");
  assert.is(res.instance?.environment, "production", "other fields unchanged");
  assert.is(ms(res.instance?.updatedAt), w.now.getTime());
  assert.is((await w.store.instances.get(ins.id))?.sapClient, "100");

  res = await update("200");
  assert.is(res.instance?.sapClient, "200");
  // Not in the mask: left alone.
  res = await c.updateInstance({ instance: { id: ins.id, environment: "prod", sapClient: "300" }, updateMask: { paths: ["environment"] } });
  assert.equal([res.instance?.environment, res.instance?.sapClient], ["prod", "200"]);

  const err = await rejects(update("1234"), Code.InvalidArgument, `sap_client: must match ${SAP_CLIENT_PATTERN}`);
  assert.equal(violations(err), [{ field: "sap_client", description: `must match ${SAP_CLIENT_PATTERN}` }]);
  assert.is((await c.getInstance({ id: ins.id })).instance?.sapClient, "200");

  // Unset (or "", the same in proto3) in the mask clears it: stored as absent.
  for (const cleared of [undefined, ""]) {
    await update("400");
    res = await update(cleared);
    assert.is(res.instance?.sapClient, "", String(cleared));
    const rec = await w.store.instances.get(ins.id);
    assert.ok(rec);
    assert.not.ok("sapClient" in rec, `cleared with ${JSON.stringify(cleared)}: stored as absent`);
  }
  // The data plane reads the instance again once its cache entry has expired.
  assert.is((await w.layer.dataPlane.instance("prd"))?.sapClient, undefined);
  await update("500");
  tick(w, 5_000);
  assert.is((await w.layer.dataPlane.instance("prd"))?.sapClient, "500");
});

// --- delete ---------------------------------------------------------------

it("DeleteInstance returns the instance as it was; afterwards NotFound", async (w) => {
  const sysId = await createSystem(w, "erp");
  const keep = await createInstance(w, sysId, "dev");
  const ins = await createInstance(w, sysId, "prd", { environment: "production" });
  tick(w);
  const c = w.client(InstanceService);
  const res = await c.deleteInstance({ id: ins.id });
  assert.equal(json(res.instance), json(ins));
  await rejects(c.getInstance({ id: ins.id }), Code.NotFound, `instance "${ins.id}" not found`);
  await rejects(c.deleteInstance({ id: ins.id }), Code.NotFound, `instance "${ins.id}" not found`);
  assert.equal(
    (await allInstances(w)).map((i) => i.id),
    [keep.id],
  );
  // The name is free again.
  const again = await createInstance(w, sysId, "prd");
  assert.is.not(again.id, ins.id);
});

it("DeleteInstance with a malformed id -> NotFound naming it, nothing deleted", async (w) => {
  const sysId = await createSystem(w, "erp");
  await createInstance(w, sysId, "prd");
  await rejects(w.client(InstanceService).deleteInstance({ id: UNKNOWN_SYS }), Code.NotFound, `instance "${UNKNOWN_SYS}" not found`);
  assert.is((await allInstances(w)).length, 1);
});

// --- authentication -------------------------------------------------------

it("every InstanceService RPC rejects a caller without a valid bearer token", async (w) => {
  const sysId = await createSystem(w, "erp");
  const ins = await createInstance(w, sysId, "prd");
  const anon = createClient(InstanceService, w.transport);
  const calls: Record<string, (h: Record<string, string>) => Promise<unknown>> = {
    GetInstance: (headers) => anon.getInstance({ id: ins.id }, { headers }),
    ListInstances: (headers) => anon.listInstances({}, { headers }),
    CreateInstance: (headers) =>
      anon.createInstance({ systemId: sysId, instance: { name: "evil", baseUrl: URL_OK } }, { headers }),
    UpdateInstance: (headers) =>
      anon.updateInstance({ instance: { id: ins.id, baseUrl: "https://evil.example.com/" }, updateMask: { paths: ["base_url"] } }, { headers }),
    DeleteInstance: (headers) => anon.deleteInstance({ id: ins.id }, { headers }),
    GetServiceCatalog: (headers) => anon.getServiceCatalog({ id: ins.id, service: "S" }, { headers }),
    BatchGetServiceCatalogs: (headers) => anon.batchGetServiceCatalogs({ services: [{ instanceId: ins.id, service: "S" }] }, { headers }),
    TestInstanceConnection: (headers) => anon.testInstanceConnection({ id: ins.id }, { headers }),
  };
  assert.equal(
    Object.keys(calls).sort(),
    InstanceService.methods.map((m) => m.name).sort(),
  );
  for (const call of Object.values(calls)) {
    const headerSets: Record<string, string>[] = [{}, { authorization: "Bearer wrong" }, { authorization: "Basic xyz" }];
    for (const headers of headerSets) {
      await rejects(call(headers), Code.Unauthenticated);
    }
  }
  assert.equal(
    (await allInstances(w)).map((i) => json(i)),
    [json(ins)],
  );
});

// --- upstream_connections -------------------------------------------------

it("upstream_connections: set at creation, changed and cleared (0: the process default) by the mask, handed to the data plane; above 4096 refused, naming it", async (w) => {
  const sysId = await createSystem(w, "erp");
  const c = w.client(InstanceService);
  const made = await c.createInstance({ systemId: sysId, instance: { name: "prd", baseUrl: URL_OK, upstreamConnections: 8 } });
  assert.is(made.instance?.upstreamConnections, 8);
  assert.is((await w.layer.dataPlane.instance("prd"))?.upstreamConnections, 8);
  const id = made.instance!.id;
  const update = (upstreamConnections: number) => c.updateInstance({ instance: { id, upstreamConnections }, updateMask: { paths: ["upstream_connections"] } });
  tick(w);
  assert.is((await update(16)).instance?.upstreamConnections, 16);
  assert.is((await w.store.instances.get(id))?.upstreamConnections, 16);
  tick(w);
  assert.is((await update(0)).instance?.upstreamConnections, 0);
  const rec = await w.store.instances.get(id);
  assert.ok(rec);
  assert.not.ok("upstreamConnections" in rec, "the default is stored as absent, not as 0");
  assert.is((await w.layer.dataPlane.instance("prd"))?.upstreamConnections, undefined);
  const err = await rejects(update(4097), Code.InvalidArgument, "upstream_connections: must be at most 4096");
  assert.equal(violations(err), [{ field: "upstream_connections", description: "must be at most 4096" }]);
  await rejects(
    c.createInstance({ systemId: sysId, instance: { name: "dev", baseUrl: URL_OK, upstreamConnections: 5000 } }),
    Code.InvalidArgument,
    "upstream_connections: must be at most 4096",
  );
  assert.equal((await allInstances(w)).map((i) => [i.name, i.upstreamConnections]), [["prd", 0]]);
});

test.run();
