/**
 * The catalogs of many services in one call (InstanceService.
 * BatchGetServiceCatalogs, `POST /admin/catalogs:batchGet`), end to end over
 * a real port against real loopback OData back ends: each pair is answered
 * with exactly what GetServiceCatalog answers for it, its catalog or its own
 * error, in the order asked, so one failing back end does not fail the
 * rest; over REST and Connect alike; the whole call counts as one admin
 * call; more than 100 pairs are refused with 400 and the field's details.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { InstanceService } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { BadRequestSchema } from "../../src/gen/erplink/errors/v1/bad_request_pb.js";
import { startBasicODataBackend, type BasicODataBackend } from "../../test-support/basic-odata-backend.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Ctx {
  erplink: RunningErplink;
  backend: BasicODataBackend;
  client: Client<typeof InstanceService>;
  /** Instance name -> id: `good` (right password), `wrong` (refused: 401), `down` (a closed port). */
  ids: Record<string, string>;
}

const E2E = suite<Ctx>("e2e: catalogs of many services in one call");

/** An id of the instance form that names no instance. */
const NO_INSTANCE = "ins_01KA0000000000000000000000";

/** Waits until at least 3 s remain in the current UTC minute (two calls then count in one window). */
async function awayFromMinuteBoundary(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 3_000) await new Promise((r) => setTimeout(r, left + 50));
}

async function rest(ctx: Ctx, method: string, path: string, body?: unknown) {
  const res = await fetch(`${ctx.erplink.baseUrl}${path}`, {
    method,
    headers: { authorization: ctx.erplink.authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
}

/** What GetServiceCatalog answers for one pair: its catalog as REST shows it, or its error (over Connect) as the batch names it. */
async function single(ctx: Ctx, id: string, service: string): Promise<Json> {
  try {
    await ctx.client.getServiceCatalog({ id, service }, { headers: { authorization: ctx.erplink.authorization } });
    // The REST form of the same catalog (its JSON as the facade writes it).
    const res = await rest(ctx, "GET", `/admin/instances/${id}/services/${encodeURIComponent(service)}/catalog`);
    assert.is(res.status, 200);
    return { catalog: res.body.data };
  } catch (err) {
    const ce = ConnectError.from(err);
    return { error: { code: codeToString(ce.code), message: ce.rawMessage } };
  }
}

E2E.before(async (ctx) => {
  try {
    ctx.backend = await startBasicODataBackend("erp-user", "erp-pass");
    ctx.erplink = await startErplink({ ERPLINK_ADMIN_RATE_PER_MINUTE: "500", ERPLINK_UPSTREAM_TIMEOUT_MS: "3000" });
    ctx.client = createClient(InstanceService, createConnectTransport({ baseUrl: ctx.erplink.baseUrl, httpVersion: "1.1" }));
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const sys = (await rest(ctx, "POST", "/admin/systems", { name: "S4" })).body.data.id;
    const services = { SALES: { path: "sales" }, ORDERS: { path: "orders" } };
    ctx.ids = {};
    for (const [name, base_url, password] of [
      ["good", ctx.backend.baseUrl, "erp-pass"],
      ["wrong", ctx.backend.baseUrl, "not-erp-pass"],
      ["down", `http://127.0.0.1:${closedPort}/`, "erp-pass"],
    ] as const) {
      const res = await rest(ctx, "POST", `/admin/systems/${sys}/instances`, { name, base_url, services, auth: { type: "basic", username: "erp-user", password } });
      assert.is(res.status, 201, JSON.stringify(res.body));
      ctx.ids[name] = res.body.data.id;
    }
  } catch (err) {
    console.error(err);
    throw err;
  }
});
E2E.after(async (ctx) => {
  await ctx.erplink?.close();
  await ctx.backend?.close();
});

E2E("REST: each pair answered in order with its catalog or its own error, exactly as GetServiceCatalog answers it; one admin call", async (ctx) => {
  const pairs: [string, string][] = [
    [ctx.ids.good!, "SALES"],
    [ctx.ids.wrong!, "SALES"],
    [ctx.ids.good!, "ORDERS"],
    [NO_INSTANCE, "SALES"],
    [ctx.ids.down!, "SALES"],
    [ctx.ids.good!, ".."],
    ["", "SALES"],
  ];
  await awayFromMinuteBoundary();
  const res = await rest(ctx, "POST", "/admin/catalogs:batchGet", { services: pairs.map(([instance_id, service]) => ({ instance_id, service })) });
  assert.is(res.status, 200, JSON.stringify(res.body));
  // One admin call for the whole batch: the next call finds one place fewer.
  const next = await rest(ctx, "GET", "/admin/systems");
  assert.is(Number(next.headers.get("x-ratelimit-remaining")), Number(res.headers.get("x-ratelimit-remaining")) - 1);
  assert.equal(Object.keys(res.body), ["data", "meta"]);
  assert.equal(res.body.meta, { requestId: res.headers.get("x-request-id") });
  const expected = [];
  for (const [id, service] of pairs) expected.push({ instance_id: id, service, ...(await single(ctx, id, service)) });
  // GetServiceCatalog's field is `id`; the batch names the pair's own field.
  expected[6] = { instance_id: "", service: "SALES", error: { code: "invalid_argument", message: "instance_id: is required" } };
  assert.equal(res.body.data, expected);
  // What those answers are, in words (a catalog read from the back end's $metadata, and each failure's reason).
  assert.equal(res.body.data[0].catalog.entity_sets.map((s: Json) => s.name).slice(0, 2), ["SalesOrders", "Customers"]);
  assert.equal(
    res.body.data.slice(1).filter((r: Json) => r.error !== undefined).map((r: Json) => [r.error.code, r.error.message]),
    [
      ["unavailable", "cannot read the service's catalog: the back end answered HTTP 401 to $metadata"],
      ["not_found", `instance "${NO_INSTANCE}" not found`],
      ["unavailable", "cannot read the service's catalog: the back end could not be reached for the service's $metadata"],
      ["invalid_argument", res.body.data[5].error.message],
      ["invalid_argument", "instance_id: is required"],
    ],
  );
  assert.ok(res.body.data[2].catalog !== undefined, "the good back end's second service, after a failing one");
  assert.match(res.body.data[5].error.message, /^service: /);
});

E2E("Connect: the same answers as typed messages, each result either a catalog or an error", async (ctx) => {
  const { results } = await ctx.client.batchGetServiceCatalogs(
    { services: [{ instanceId: ctx.ids.wrong!, service: "SALES" }, { instanceId: ctx.ids.good!, service: "SALES" }] },
    { headers: { authorization: ctx.erplink.authorization } },
  );
  assert.equal(
    results.map((r) => [r.instanceId, r.service, r.result.case]),
    [
      [ctx.ids.wrong, "SALES", "error"],
      [ctx.ids.good, "SALES", "catalog"],
    ],
  );
  assert.equal(results[0]!.result.value, {
    $typeName: "erplink.admin.v1.ServiceCatalogError",
    code: "unavailable",
    message: "cannot read the service's catalog: the back end answered HTTP 401 to $metadata",
  });
  const { catalog } = await ctx.client.getServiceCatalog({ id: ctx.ids.good!, service: "SALES" }, { headers: { authorization: ctx.erplink.authorization } });
  assert.equal(results[1]!.result.value, catalog);
});

E2E("an empty list is an empty answer; 100 pairs pass; 101 are refused: 400 VALIDATION_ERROR with the field's details, invalid_argument over Connect", async (ctx) => {
  const empty = await rest(ctx, "POST", "/admin/catalogs:batchGet", { services: [] });
  assert.equal([empty.status, empty.body.data], [200, []]);
  const pair = { instance_id: NO_INSTANCE, service: "SALES" };
  const hundred = await rest(ctx, "POST", "/admin/catalogs:batchGet", { services: Array.from({ length: 100 }, () => pair) });
  assert.is(hundred.status, 200);
  assert.is(hundred.body.data.length, 100);

  const tooMany = await rest(ctx, "POST", "/admin/catalogs:batchGet", { services: Array.from({ length: 101 }, () => pair) });
  assert.is(tooMany.status, 400);
  assert.equal(tooMany.body, {
    error: {
      code: "VALIDATION_ERROR",
      message: "services: must have at most 100 entries (got 101)",
      requestId: tooMany.headers.get("x-request-id"),
      details: [{ field: "services", message: "must have at most 100 entries (got 101)" }],
    },
  });
  let err: ConnectError | undefined;
  try {
    await ctx.client.batchGetServiceCatalogs(
      { services: Array.from({ length: 101 }, () => ({ instanceId: NO_INSTANCE, service: "SALES" })) },
      { headers: { authorization: ctx.erplink.authorization } },
    );
  } catch (e) {
    err = ConnectError.from(e);
  }
  assert.is(err?.code, Code.InvalidArgument);
  assert.is(err?.rawMessage, "services: must have at most 100 entries (got 101)");
  assert.equal(
    err?.findDetails(BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => [v.field, v.description])),
    [["services", "must have at most 100 entries (got 101)"]],
  );
});

E2E("a body that is not the request: an unknown field, or services not a list, is 400", async (ctx) => {
  const unknown = await rest(ctx, "POST", "/admin/catalogs:batchGet", { services: [], pairs: [] });
  assert.is(unknown.status, 400);
  assert.is(unknown.body.error.code, "VALIDATION_ERROR");
  const notList = await rest(ctx, "POST", "/admin/catalogs:batchGet", { services: { instance_id: NO_INSTANCE } });
  assert.is(notList.status, 400);
  assert.is(notList.body.error.code, "VALIDATION_ERROR");
});

E2E.run();
