/**
 * The diagnostic RPCs through Connect clients (ApiKeyService.ExplainApiKey,
 * InstanceService.GetServiceCatalog and TestInstanceConnection): the same
 * answers as the REST facade, the validation of what they are asked, the
 * bad gateway marker of a failed catalog, and `unavailable` in a process
 * whose services run without the gateway's diagnostics.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ApiKeyService } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { InstanceService } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { BAD_GATEWAY_METADATA } from "../../src/schema/diagnostics.js";
import { createServiceLayer } from "../../src/services/layer.js";
import { V4_METADATA } from "../../test-support/odata/fixtures.js";
import { rejects, violations } from "../../test-support/rpc.js";
import { AUTH, ENCRYPTION_KEY, MASTER_KEY, createWorld, openTestStore } from "../../test-support/world.js";
import { json, post } from "../../test-support/http.js";

interface Ctx {
  world: Awaited<ReturnType<typeof createWorld>>;
  upstream: http.Server;
  origin: string;
  instanceId: string;
  keyId: string;
  /** Whether the upstream answers `$metadata` (else 500). */
  healthy: boolean;
}

const Diag = suite<Ctx>("diagnostic RPCs");

Diag.before.each(async (ctx) => {
  ctx.healthy = true;
  ctx.upstream = http.createServer((req, res) => {
    if (!ctx.healthy) return void res.writeHead(500).end();
    if (req.url?.includes("$metadata")) return void res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  ctx.origin = `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}`;
  ctx.world = await createWorld();
  const sys = json(await post(ctx.world.app, "/admin/systems", { name: "S4" })).data.id;
  ctx.instanceId = json(await post(ctx.world.app, `/admin/systems/${sys}/instances`, { name: "prod", base_url: `${ctx.origin}/odata/` })).data.id;
  ctx.keyId = json(await post(ctx.world.app, "/admin/api-keys", { name: "app", permissions: { prod: { SALES: { SalesOrders: ["list", "get"] } } } })).data.id;
});

Diag.after.each(async (ctx) => {
  assert.equal(ctx.world.errors, [], "no masked internal errors");
  await ctx.world.close();
  ctx.upstream.closeAllConnections();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
});

Diag("ExplainApiKey over Connect answers what the REST facade answers", async (ctx) => {
  const keys = ctx.world.client(ApiKeyService);
  const dataRequest = { instance: "prod", method: "GET", url: "/odata/prod/SALES/SalesOrders(1)?$expand=Customer" };
  const { explanation } = await keys.explainApiKey({ id: ctx.keyId, dataRequest });
  assert.ok(explanation);
  assert.equal(
    [explanation.allowed, explanation.status, explanation.code, explanation.message, explanation.denialStep],
    [false, 403, "FORBIDDEN", "API key has no access to entity 'Customers'", "ENTITY"],
  );
  assert.equal(explanation.accesses.map((a) => [a.entitySet, a.operation, a.reason, a.allowed]), [
    ["SalesOrders", "get", "resource path", true],
    ["Customers", "get", "$expand Customer", false],
  ]);
  const rest = json(await post(ctx.world.app, `/admin/api-keys/${ctx.keyId}/explain`, dataRequest)).data;
  assert.equal([rest.allowed, rest.status, rest.message, rest.denial_step, rest.accesses.length], [false, 403, explanation.message, "ENTITY", 2]);
  assert.is(explanation.rateLimit?.remaining, 100_000n);
});

Diag("ExplainApiKey: every missing field is listed, a bad method or header is invalid_argument, a repeated header is joined, an unknown key not_found", async (ctx) => {
  const keys = ctx.world.client(ApiKeyService);
  const missing = await rejects(keys.explainApiKey({ id: ctx.keyId }), Code.InvalidArgument, "data_request: is required");
  assert.equal(violations(missing), [{ field: "data_request", description: "is required" }]);
  const empty = await rejects(keys.explainApiKey({ id: ctx.keyId, dataRequest: {} }), Code.InvalidArgument, "3 fields are invalid");
  assert.equal(violations(empty).map((v) => v.field), ["instance", "method", "url"]);
  const bad = await rejects(
    keys.explainApiKey({ id: ctx.keyId, dataRequest: { instance: "prod", method: "TRACE", url: "SALES/X", headers: { "x-a": "1\n2", "X-A": "1", "bad name": "x" } } }),
    Code.InvalidArgument,
  );
  // The field rules of DataRequest (published in the OpenAPI document), with their messages.
  assert.equal(violations(bad), [
    { field: "method", description: "must be GET, HEAD, POST, PUT, PATCH, DELETE or MERGE" },
    { field: "headers.x-a", description: "must not contain control characters" },
    { field: "headers.bad name", description: "is not a valid header name" },
  ]);
  // Any case of a method is one.
  const lower = await keys.explainApiKey({ id: ctx.keyId, dataRequest: { instance: "prod", method: "gEt", url: "SALES/SalesOrders" } });
  assert.is(lower.explanation?.request?.method, "GET");
  // A header given twice (in different cases) is one header, its values joined as HTTP joins repeated fields.
  const twice = await keys.explainApiKey({
    id: ctx.keyId,
    dataRequest: { instance: "prod", method: "GET", url: "SALES/SalesOrders", headers: { accept: "application/json", Accept: "text/plain" } },
  });
  assert.equal(twice.explanation?.request?.headers.accept, "application/json, text/plain");
  await rejects(
    keys.explainApiKey({ id: "key_00000000000000000000000000", dataRequest: { instance: "prod", method: "GET", url: "SALES/X" } }),
    Code.NotFound,
    'API key "key_00000000000000000000000000" not found',
  );
  // A revoked key is gone.
  await keys.deleteApiKey({ id: ctx.keyId });
  await rejects(keys.explainApiKey({ id: ctx.keyId, dataRequest: { instance: "prod", method: "GET", url: "SALES/X" } }), Code.NotFound, `API key "${ctx.keyId}" not found`);
});

Diag("ExplainApiKey with draft permissions: the draft decides; a bad draft is invalid_argument with its fields ('__proto__' included), an admin key's failed_precondition as in UpdateApiKey; nothing is stored or audited", async (ctx) => {
  const keys = ctx.world.client(ApiKeyService);
  const dataRequest = { instance: "prod", method: "GET", url: "/odata/prod/SALES/SalesOrders(1)?$expand=Customer" };
  const drafted = await keys.explainApiKey({ id: ctx.keyId, dataRequest, permissions: { prod: { SALES: { SalesOrders: ["get"], Customers: ["get"] } } } });
  assert.equal([drafted.explanation?.keyId, drafted.explanation?.allowed, drafted.explanation?.denialStep], [ctx.keyId, true, ""]);
  assert.equal(drafted.explanation?.accesses.map((a) => [a.entitySet, a.operation, a.allowed]), [
    ["SalesOrders", "get", true],
    ["Customers", "get", true],
  ]);
  const denied = await keys.explainApiKey({ id: ctx.keyId, dataRequest: { ...dataRequest, url: "SALES/SalesOrders" }, permissions: { prod: { SALES: { SalesOrders: ["get"] } } } });
  assert.equal(
    [denied.explanation?.allowed, denied.explanation?.status, denied.explanation?.message, denied.explanation?.denialStep],
    [false, 403, "API key lacks permission 'list' for entity 'SalesOrders'", "OPERATION"],
  );
  // Over gRPC a Struct may hold '__proto__' (REST's JSON parser refuses it first): reserved, as in UpdateApiKey.
  const poisoned = JSON.parse('{"prod": {"SALES": {"__proto__": ["get"]}, "__proto__": {"X": ["get"]}}, "qa": {"S": {"E": ["read"]}}}');
  const reserved = "'__proto__' is reserved (JSON parsers refuse it as a key)";
  const expected = [
    { field: "permissions.prod.SALES.__proto__", description: reserved },
    { field: "permissions.prod.__proto__", description: reserved },
    { field: "permissions.qa.S.E[0]", description: "must be one of list, get, create, update, delete, invoke" },
  ];
  const bad = await rejects(keys.explainApiKey({ id: ctx.keyId, dataRequest, permissions: poisoned }), Code.InvalidArgument, "3 fields are invalid");
  assert.equal(violations(bad), expected);
  const update = await rejects(keys.updateApiKey({ apiKey: { id: ctx.keyId, permissions: poisoned }, updateMask: { paths: ["permissions"] } }), Code.InvalidArgument, "3 fields are invalid");
  assert.equal(violations(update), expected, "the same violations as an update");
  const admin = (await keys.createApiKey({ apiKey: { name: "ops", type: 2 } })).apiKey!;
  const message = "permissions: admin keys have no permissions: they manage erplink, not data";
  await rejects(keys.explainApiKey({ id: admin.id, dataRequest, permissions: { prod: {} } }), Code.FailedPrecondition, message);
  await rejects(keys.updateApiKey({ apiKey: { id: admin.id, permissions: { prod: {} } }, updateMask: { paths: ["permissions"] } }), Code.FailedPrecondition, message);
  const key = (await keys.getApiKey({ id: ctx.keyId })).apiKey!;
  assert.equal(key.permissions, { prod: { SALES: { SalesOrders: ["list", "get"] } } });
  assert.is(key.updatedAt?.seconds, key.createdAt?.seconds);
  const trail = await ctx.world.store.audit.query({ resourceId: ctx.keyId, limit: 10 });
  assert.equal(trail.items.map((e) => e.action), ["create"]);
});

Diag("GetServiceCatalog over Connect, its functions and actions included; a failing back end is unavailable marked as a bad gateway (502 on REST); a dot service name is invalid", async (ctx) => {
  const instances = ctx.world.client(InstanceService);
  const { catalog } = await instances.getServiceCatalog({ id: ctx.instanceId, service: "SALES" });
  assert.equal([catalog?.odataVersion, catalog?.entitySets.length, catalog?.functionImports], ["4.0", 9, ["Search"]]);
  assert.equal(
    catalog?.operations.map((o) => [o.name, o.kind, o.bound, o.bindingEntitySets, o.resultEntitySets, o.httpMethod, o.resultUnknown]),
    [
      ["Search", "function", false, [], ["Products"], "", false],
      ["ResetAll", "action", false, [], [], "", false],
      ["Sales.GetTotal", "function", true, ["SalesOrders"], [], "", false],
      ["Sales.TopOrders", "function", true, ["SalesOrders"], ["SalesOrders"], "", false],
      ["Sales.Approve", "action", true, ["SalesOrders"], [], "", false],
    ],
  );
  ctx.healthy = false;
  const err = await rejects(
    instances.getServiceCatalog({ id: ctx.instanceId, service: "OTHER" }),
    Code.Unavailable,
    "cannot read the service's catalog: the back end answered HTTP 500 to $metadata",
  );
  assert.is(err.metadata.get(BAD_GATEWAY_METADATA), "1");
  const rest = await ctx.world.app.inject({ method: "GET", url: `/admin/instances/${ctx.instanceId}/services/OTHER/catalog`, headers: AUTH });
  assert.equal([rest.statusCode, json(rest).error.code], [502, "BAD_GATEWAY"]);
  for (const name of ["..", "."]) {
    const dots = await rejects(instances.getServiceCatalog({ id: ctx.instanceId, service: name }), Code.InvalidArgument, "service: the service name may not be '.' or '..'");
    assert.equal(violations(dots), [{ field: "service", description: "the service name may not be '.' or '..'" }]);
  }
  await rejects(instances.getServiceCatalog({ id: ctx.instanceId, service: "" }), Code.InvalidArgument, "service: is required");
  await rejects(instances.getServiceCatalog({ id: "ins_00000000000000000000000000", service: "SALES" }), Code.NotFound, 'instance "ins_00000000000000000000000000" not found');
});

Diag("TestInstanceConnection over Connect; options are optional and checked", async (ctx) => {
  const instances = ctx.world.client(InstanceService);
  const { connectionTest } = await instances.testInstanceConnection({ id: ctx.instanceId, options: { service: "SALES" } });
  assert.equal([connectionTest?.ok, connectionTest?.steps.map((s) => s.name)], [true, ["dns", "tcp", "http", "odata_version", "csrf"]]);
  const bare = await instances.testInstanceConnection({ id: ctx.instanceId });
  assert.equal(bare.connectionTest?.steps.map((s) => s.name), ["dns", "tcp", "http", "odata_version"]);
  await rejects(instances.testInstanceConnection({ id: ctx.instanceId, options: { service: "x".repeat(201) } }), Code.InvalidArgument, "service: must be at most 200 characters (got 201)");
  // The service names the data path takes (the rule's pattern, as the OpenAPI document publishes it).
  const SERVICE_CHARS = "service: the service name may only contain letters, digits and the characters _ . ~ ! $ & ' ( ) * + , ; = : @ -, and may not be '.' or '..'";
  for (const name of [".", "..", "a/b", "a b", "ä", "%41"]) {
    await rejects(instances.testInstanceConnection({ id: ctx.instanceId, options: { service: name } }), Code.InvalidArgument, SERVICE_CHARS);
  }
  await rejects(instances.testInstanceConnection({ id: "ins_00000000000000000000000000" }), Code.NotFound, 'instance "ins_00000000000000000000000000" not found');
});

Diag("services built without a gateway answer unavailable for every diagnostic, clearly", async (ctx) => {
  const store = await openTestStore();
  const layer = createServiceLayer(store, {
    masterKey: MASTER_KEY,
    encryptionKey: ENCRYPTION_KEY,
    adminLimits: { perMinute: 1000 },
    dataLimits: { perMinute: 1000 },
    logRetentionMs: 86_400_000,
    log: { error: () => undefined },
  });
  try {
    const transport = createRouterTransport(layer.routes, {
      router: { interceptors: [...layer.publicInterceptors] },
      transport: { interceptors: [(next) => (req) => (req.header.set("authorization", AUTH.authorization), next(req))] },
    });
    const keys = createClient(ApiKeyService, transport);
    const instances = createClient(InstanceService, transport);
    const key = await keys.createApiKey({ apiKey: { name: "k", permissions: { prod: { "*": { "*": ["list"] } } } } });
    const sys = await createClient(SystemService, transport).createSystem({ system: { name: "S" } });
    const ins = await instances.createInstance({ systemId: sys.system!.id, instance: { name: "prod", baseUrl: `${ctx.origin}/odata/` } });
    const message = "diagnostics need the OData gateway, which this process does not run";
    await rejects(keys.explainApiKey({ id: key.apiKey!.id, dataRequest: { instance: "prod", method: "GET", url: "S/E" } }), Code.Unavailable, message);
    await rejects(instances.getServiceCatalog({ id: ins.instance!.id, service: "S" }), Code.Unavailable, message);
    await rejects(instances.testInstanceConnection({ id: ins.instance!.id }), Code.Unavailable, message);
  } finally {
    await layer.stop();
    await store.dispose();
  }
});

Diag.run();
