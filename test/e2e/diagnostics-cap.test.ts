/**
 * The diagnostics end to end: erplink composed by its composition root
 * (src/app.ts, which binds the gateway's diagnostics into the services) on
 * a real port, against a real OData back end (SAP CAP, test-support/cap),
 * over REST and gRPC: the catalog of V4 and V2 services, the connection
 * test, explanations of requests that match what the data path then does
 * with them, and a back end that refuses erplink's password or is down.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import * as grpc from "@grpc/grpc-js";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { create } from "@bufbuild/protobuf";
import { GetServiceCatalogRequestSchema, InstanceService } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { startCapBackend, type CapBackend } from "../../test-support/cap/index.js";
import { createGrpcJsClient, grpcError, httpRequest, startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { dropMongoDatabase, freshMongoUrl, testMongoUrl } from "../../test-support/world.js";

interface Ctx {
  cap: CapBackend;
  erplink: RunningErplink;
  /** Instance name -> id. */
  ids: Record<string, string>;
  /** Partners (all operations), no addresses: a cascading delete is denied. */
  key: { id: string; key: string };
  closedPort: number;
  /** The MongoDB database of this run, when the suite runs on MongoDB. */
  mongoUrl: string | undefined;
}

const E2E = suite<Ctx>("diagnostics against CAP");

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

async function call(ctx: Ctx, method: string, path: string, body?: unknown, authorization = ctx.erplink.authorization) {
  const res = await httpRequest(`${ctx.erplink.baseUrl}${path}`, {
    method,
    headers: { authorization, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, text: res.text, body: JSON.parse(res.text) as Json, headers: res.headers };
}

E2E.before(async (ctx) => {
  ctx.cap = await startCapBackend();
  // On MongoDB when the suite runs there (ERPLINK_TEST_MONGODB_URL), else the embedded store.
  const base = testMongoUrl();
  ctx.mongoUrl = base === undefined ? undefined : freshMongoUrl(base);
  ctx.erplink = await startErplink({
    ERPLINK_UPSTREAM_TIMEOUT_MS: "3000",
    ...(ctx.mongoUrl !== undefined ? { MONGODB_URL: ctx.mongoUrl, ERPLINK_ENCRYPTION_KEY: "07".repeat(32) } : {}),
  });
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
  ctx.closedPort = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const sys = (await call(ctx, "POST", "/admin/systems", { name: "S4HANA" })).body.data.id;
  const services = { API_BUSINESS_PARTNER: { path: "api-business-partner" } };
  const auth = { type: "basic", ...ctx.cap.credentials };
  ctx.ids = {};
  for (const [name, body] of [
    ["s4", { base_url: `${ctx.cap.baseUrl}/odata/v4/`, services, auth }],
    ["s4v2", { base_url: `${ctx.cap.baseUrl}/odata/v2/`, services, auth }],
    ["wrong", { base_url: `${ctx.cap.baseUrl}/odata/v4/`, services, auth: { type: "basic", username: "erp-user", password: "not-erp-pass" } }],
    ["down", { base_url: `http://127.0.0.1:${ctx.closedPort}/odata/v4/`, services, auth }],
  ] as const) {
    const res = await call(ctx, "POST", `/admin/systems/${sys}/instances`, { name, ...body });
    assert.is(res.status, 201, res.text);
    ctx.ids[name] = res.body.data.id;
  }
  const key = await call(ctx, "POST", "/admin/api-keys", {
    name: "partners",
    permissions: { s4: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["list", "get", "create", "update", "delete"], A_Currency: ["list"] } } },
  });
  ctx.key = { id: key.body.data.id, key: key.body.data.key };
});

E2E.after(async (ctx) => {
  await ctx.erplink?.close();
  await ctx.cap?.stop();
  if (ctx.mongoUrl !== undefined) await dropMongoDatabase(ctx.mongoUrl);
});

E2E("catalog of a V4 service from CAP's $metadata: sets, keys, navigations with targets, imports", async (ctx) => {
  const res = await call(ctx, "GET", `/admin/instances/${ctx.ids.s4}/services/API_BUSINESS_PARTNER/catalog`);
  assert.is(res.status, 200, res.text);
  const catalog = res.body.data;
  assert.equal([catalog.service, catalog.odata_version], ["API_BUSINESS_PARTNER", "4.0"]);
  const byName = Object.fromEntries(catalog.entity_sets.map((s: Json) => [s.name, s]));
  assert.equal(Object.keys(byName).sort(), ["A_BusinessPartner", "A_BusinessPartnerAddress", "A_Currency"]);
  assert.equal(byName.A_BusinessPartner.key_properties, ["BusinessPartner"]);
  assert.equal(byName.A_BusinessPartnerAddress.key_properties, ["BusinessPartner", "AddressID"]);
  assert.equal(byName.A_Currency.key_properties, ["Currency"]);
  assert.equal(
    byName.A_BusinessPartner.navigation_properties.find((n: Json) => n.name === "to_Address"),
    { name: "to_Address", target_entity_set: "A_BusinessPartnerAddress", collection: true },
  );
  assert.equal(
    byName.A_BusinessPartnerAddress.navigation_properties.find((n: Json) => n.name === "to_BusinessPartner"),
    { name: "to_BusinessPartner", target_entity_set: "A_BusinessPartner", collection: false },
  );
  assert.not.ok(res.text.includes("erp-pass"));
});

E2E("catalog of the same service over OData V2 (CAP's V2 adapter), and over gRPC", async (ctx) => {
  const res = await call(ctx, "GET", `/admin/instances/${ctx.ids.s4v2}/services/API_BUSINESS_PARTNER/catalog`);
  assert.is(res.status, 200, res.text);
  assert.is(res.body.data.odata_version, "2.0");
  const v2 = Object.fromEntries(res.body.data.entity_sets.map((s: Json) => [s.name, s]));
  assert.equal(v2.A_BusinessPartner.navigation_properties.find((n: Json) => n.name === "to_Address")?.target_entity_set, "A_BusinessPartnerAddress");
  const client = createGrpcJsClient(InstanceService, ctx.erplink.address);
  try {
    const request = (id: string) => create(GetServiceCatalogRequestSchema, { id, service: "API_BUSINESS_PARTNER" });
    const { catalog } = await client.call.getServiceCatalog(request(ctx.ids.s4!), { authorization: ctx.erplink.authorization });
    assert.equal(catalog!.entitySets.map((s) => s.name).sort(), ["A_BusinessPartner", "A_BusinessPartnerAddress", "A_Currency"]);
    const err = await grpcError(client.call.getServiceCatalog(request(ctx.ids.wrong!), { authorization: ctx.erplink.authorization }));
    assert.is(err.code, grpc.status.UNAVAILABLE);
    assert.is(decodeURIComponent(err.details), "cannot read the service's catalog: the back end answered HTTP 401 to $metadata");
  } finally {
    client.close();
  }
});

E2E("connection test against CAP: every step passes with the service; CAP issues no CSRF token; no secret in the answer", async (ctx) => {
  const res = await call(ctx, "POST", `/admin/instances/${ctx.ids.s4}/test`, { service: "API_BUSINESS_PARTNER" });
  assert.is(res.status, 200, res.text);
  const t = res.body.data;
  assert.equal(
    [t.ok, t.error, t.url, t.http_status, t.odata_version, t.csrf_token],
    [true, "", `${ctx.cap.baseUrl}/odata/v4/api-business-partner/$metadata`, 200, "4.0", false],
  );
  assert.equal(t.steps.map((s: Json) => [s.name, s.ok]), [["dns", true], ["tcp", true], ["http", true], ["odata_version", true], ["csrf", true]]);
  assert.ok(t.duration_ms > 0 && t.duration_ms < 3000);
  const v2 = (await call(ctx, "POST", `/admin/instances/${ctx.ids.s4v2}/test`, { service: "API_BUSINESS_PARTNER" })).body.data;
  assert.equal([v2.ok, v2.odata_version], [true, "2.0"]);
  for (const text of [res.text, JSON.stringify(v2)]) {
    assert.not.ok(text.includes("erp-pass"));
    assert.not.ok(text.includes(Buffer.from("erp-user:erp-pass").toString("base64")));
  }
});

E2E("a bad password: the catalog is 502 naming the 401, the connection test fails the http step in words", async (ctx) => {
  const catalog = await call(ctx, "GET", `/admin/instances/${ctx.ids.wrong}/services/API_BUSINESS_PARTNER/catalog`);
  assert.is(catalog.status, 502, catalog.text);
  assert.equal(catalog.body.error, {
    code: "BAD_GATEWAY",
    message: "cannot read the service's catalog: the back end answered HTTP 401 to $metadata",
    requestId: catalog.headers["x-request-id"],
  });
  const res = await call(ctx, "POST", `/admin/instances/${ctx.ids.wrong}/test`, { service: "API_BUSINESS_PARTNER" });
  const t = res.body.data;
  assert.equal([t.ok, t.http_status, t.steps.map((s: Json) => s.name)], [false, 401, ["dns", "tcp", "http"]]);
  assert.match(t.error, /^http: the back end refused the credentials: HTTP 401 from GET http:\/\/127\.0\.0\.1:\d+\/odata\/v4\/api-business-partner\/\$metadata in \d+ ms \(it asks for Basic\)$/);
  assert.not.ok(res.text.includes("not-erp-pass"));
});

E2E("a down back end (closed port): the catalog is 502, the connection test fails the tcp step", async (ctx) => {
  const catalog = await call(ctx, "GET", `/admin/instances/${ctx.ids.down}/services/API_BUSINESS_PARTNER/catalog`);
  assert.is(catalog.status, 502, catalog.text);
  assert.is(catalog.body.error.message, "cannot read the service's catalog: the back end could not be reached for the service's $metadata");
  const t = (await call(ctx, "POST", `/admin/instances/${ctx.ids.down}/test`)).body.data;
  assert.equal([t.ok, t.error, t.steps.map((s: Json) => s.name)], [
    false,
    `tcp: cannot connect to 127.0.0.1:${ctx.closedPort}: connection refused (ECONNREFUSED)`,
    ["dns", "tcp"],
  ]);
});

E2E("explain against CAP gives what the data path then does: a cascading delete denied, a read allowed and sent where explained", async (ctx) => {
  const BP = "/odata/s4/API_BUSINESS_PARTNER";
  const explain = async (method: string, url: string) => {
    const res = await call(ctx, "POST", `/admin/api-keys/${ctx.key.id}/explain`, { instance: "s4", method, url });
    assert.is(res.status, 200, res.text);
    return res.body.data;
  };
  const del = await explain("DELETE", `${BP}/A_BusinessPartner('1000004')`);
  const delData = await call(ctx, "DELETE", `${BP}/A_BusinessPartner('1000004')`, undefined, `Bearer ${ctx.key.key}`);
  assert.equal([del.allowed, del.status, del.message, del.denial_step], [false, delData.status, delData.body.error.message, "ENTITY"]);
  assert.is(del.message, "API key has no access to entity 'A_BusinessPartnerAddress'");
  assert.equal(del.accesses.map((a: Json) => [a.entity_set, a.operation, a.allowed]), [
    ["A_BusinessPartner", "delete", true],
    ["A_BusinessPartnerAddress", "delete", false],
  ]);
  const read = await explain("GET", `${BP}/A_BusinessPartner('1000001')?$select=LastName`);
  assert.equal([read.allowed, read.request.upstream_url], [true, `${ctx.cap.baseUrl}/odata/v4/api-business-partner/A_BusinessPartner('1000001')?$select=LastName`]);
  const data = await call(ctx, "GET", `${BP}/A_BusinessPartner('1000001')?$select=LastName`, undefined, `Bearer ${ctx.key.key}`);
  assert.is(data.status, 200, data.text);
  assert.ok("LastName" in data.body);
  await ctx.erplink.erplink.flushLogs();
  const logs = await call(ctx, "GET", `/admin/logs?request_id=${data.headers["x-request-id"]}`);
  assert.is(logs.body.data[0].upstream_url, read.request.upstream_url);
});

E2E.run();
