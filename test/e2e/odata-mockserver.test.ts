/**
 * The OData data path end to end against SAP's Fiori elements mock server
 * (test-support/mockserver) serving SAP's published API_BUSINESS_PARTNER
 * and API_SALES_ORDER_SRV (OData V2) and TripPin (V4), judged by effect:
 * after every request, what the mock server's data layer read and wrote is
 * covered by what erplink authorized (test-support/effects.ts), and what it
 * received is exactly what erplink logged as sent (nothing on a refusal).
 *
 * The mock server is another reader than SAP CAP, with its own ways: it
 * deletes the entity a link starts from on a link removal, reads every
 * entity of both sets to answer a V2 `$links` read, answers a V2 update with
 * the entity whatever the client prefers. Each case here is what erplink
 * does so that none of it reaches further than the key may.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { LightMyRequestResponse } from "fastify";
import { parseMetadata } from "../../src/gateway/odata/metadata.js";
import { startMockServer, type MockServer } from "../../test-support/mockserver/index.js";
import { assertForwardedAsAuthorized, type ForwardedService } from "../../test-support/forwarded.js";
import { startRecordingProxy, type RecordingProxy } from "../../test-support/recording-proxy.js";
import { createWorld, type World } from "../../test-support/world.js";
import { json, post } from "../../test-support/http.js";

interface Ctx {
  mock: MockServer;
  proxy: RecordingProxy;
  services: Record<"bp" | "so" | "trip", ForwardedService>;
  world: World;
  keys: Record<string, string>;
}

const BP = "/odata/sap/API_BUSINESS_PARTNER";
const SO = "/odata/sap/API_SALES_ORDER_SRV";
const TRIP = "/odata/trip/TripPin";

const E2E = suite<Ctx>("OData data path against SAP's mock server, judged by effect");

E2E.before(async (ctx) => {
  try {
    ctx.mock = await startMockServer();
    ctx.proxy = await startRecordingProxy(ctx.mock.baseUrl);
    const model = async (root: string) => parseMetadata((await direct(ctx, `${root}$metadata`)).body);
    const { roots } = ctx.mock;
    ctx.services = {
      bp: { upstreamRoot: roots.API_BUSINESS_PARTNER.replace(/\/$/, ""), clientRoot: BP, model: await model(roots.API_BUSINESS_PARTNER), mock: ctx.mock },
      so: { upstreamRoot: roots.API_SALES_ORDER_SRV.replace(/\/$/, ""), clientRoot: SO, model: await model(roots.API_SALES_ORDER_SRV), mock: ctx.mock },
      trip: { upstreamRoot: roots.TripPin.replace(/\/$/, ""), clientRoot: TRIP, model: await model(roots.TripPin), mock: ctx.mock },
    };
    ctx.world = await createWorld();
    const app = ctx.world.app;
    const sys = json(await post(app, "/admin/systems", { name: "S4HANA" })).data.id;
    const auth = { type: "basic", ...ctx.mock.credentials };
    const instances: [string, string, Record<string, { path: string }>][] = [
      ["sap", "/sap/opu/odata/sap/", { API_BUSINESS_PARTNER: { path: "API_BUSINESS_PARTNER" }, API_SALES_ORDER_SRV: { path: "API_SALES_ORDER_SRV" } }],
      ["trip", "/odata/", { TripPin: { path: "trippin" } }],
    ];
    for (const [name, root, services] of instances) {
      const res = await post(app, `/admin/systems/${sys}/instances`, { name, base_url: `${ctx.proxy.baseUrl}${root}`, services, auth });
      assert.is(res.statusCode, 201, res.body);
    }
    const key = async (name: string, permissions: Record<string, unknown>) => {
      const res = await post(app, "/admin/api-keys", { name, permissions });
      assert.is(res.statusCode, 201, res.body);
      return json(res).data.key as string;
    };
    ctx.keys = {
      getOnly: await key("get-only", { sap: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["get"] } } }),
      reader: await key("reader", { sap: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["list", "get"], A_BusinessPartnerAddress: ["list", "get"] } } }),
      writer: await key("writer", { sap: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["update"] } }, trip: { TripPin: { People: ["update"] } } }),
      linker: await key("linker", { sap: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["get", "update"], A_BusinessPartnerAddress: ["get", "update"] } } }),
      unlinker: await key("unlinker", { sap: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["get", "update", "delete"], A_BusinessPartnerAddress: ["get", "update"] } } }),
      approver: await key("approver", { sap: { API_SALES_ORDER_SRV: { A_SalesOrder: ["list", "get"], releaseApprovalRequest: ["invoke"] } } }),
      orders: await key("orders", { sap: { API_SALES_ORDER_SRV: { A_SalesOrder: ["list", "get", "update"], "*": ["list", "get"] } } }),
      traveller: await key("traveller", { trip: { TripPin: { People: ["get"], Airlines: ["get"], "Trippin.GetFavoriteAirline": ["invoke"] } } }),
      people: await key("people", { trip: { TripPin: { People: ["get"], Airlines: ["get"] } } }),
    };
  } catch (error) {
    // uvu drops what a hook throws: say it.
    console.error("setting up the mock server suite failed:", error);
    throw error;
  }
});

E2E.after(async (ctx) => {
  await ctx.proxy?.close();
  await ctx.world?.close();
  await ctx.mock?.stop();
});

/** A request straight to the mock server with its credentials. */
async function direct(ctx: Ctx, path: string, init: RequestInit = {}): Promise<{ status: number; body: string }> {
  const { username, password } = ctx.mock.credentials;
  const res = await fetch(`${ctx.mock.baseUrl}${path}`, {
    ...init,
    headers: { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`, accept: "application/json", ...(init.headers as Record<string, string>) },
  });
  return { status: res.status, body: await res.text() };
}

/** A request through erplink with a data key; what the mock server did is judged against what was authorized. */
async function call(ctx: Ctx, key: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const res = await ctx.world.app.inject({
    method: method as "GET",
    url,
    headers: { authorization: `Bearer ${ctx.keys[key]}`, accept: "application/json", ...(payload !== undefined ? { "content-type": "application/json" } : {}), ...headers },
    ...(payload !== undefined ? { payload } : {}),
  });
  const service = url.startsWith(SO) ? ctx.services.so : url.startsWith(TRIP) ? ctx.services.trip : ctx.services.bp;
  const logs = { store: ctx.world.store, flush: () => ctx.world.layer.logWriter.flush() };
  await assertForwardedAsAuthorized(logs, ctx.proxy, service, String(res.headers["x-request-id"]), payload);
  return res;
}

function assertError(res: LightMyRequestResponse, status: number, code: string, message: string): void {
  assert.is(res.statusCode, status, res.body);
  assert.equal(JSON.parse(res.body), { error: { code, message, requestId: res.headers["x-request-id"] } });
}

E2E("a key with get reads one partner by its key, and no list of them", async (ctx) => {
  const one = await call(ctx, "getOnly", "GET", `${BP}/A_BusinessPartner('1000001')`);
  assert.is(one.statusCode, 200, one.body);
  assert.is(JSON.parse(one.body).d.BusinessPartnerFullName, "Acme Corporation");
  assertError(await call(ctx, "getOnly", "GET", `${BP}/A_BusinessPartner?$top=2`), 403, "FORBIDDEN", "API key lacks permission 'list' for entity 'A_BusinessPartner'");
  assertError(await call(ctx, "getOnly", "GET", `${BP}/A_BusinessPartner/$count`), 403, "FORBIDDEN", "API key lacks permission 'list' for entity 'A_BusinessPartner'");
});

E2E("key literals must be literals of the key's type: an aggregation key, a typed prefix, a value longer than the property, another type", async (ctx) => {
  const refused: [string, string][] = [
    [
      `${BP}/A_BusinessPartner('aggregation''%7B%7D''')`,
      "malformed key value for BusinessPartner in the key of A_BusinessPartner: a key string that begins with aggregation' is read by SAP CAP's V2 adapter as an aggregation of the whole set, not as a key",
    ],
    [`${BP}/A_BusinessPartner(aggregation'%7B%7D')`, "'aggregation' is not a literal type of OData V2 (aggregation'…') in path segment 'A_BusinessPartner(aggregation'{}')'"],
    [`${BP}/A_BusinessPartner('10000011234')`, "malformed key value for BusinessPartner in the key of A_BusinessPartner: the value is longer than the 10 characters Edm.String allows here"],
    [`${BP}/A_BusinessPartner(1000001)`, "malformed key value for BusinessPartner in the key of A_BusinessPartner: Edm.String takes a quoted string, not an integer"],
  ];
  for (const [url, message] of refused) assertError(await call(ctx, "getOnly", "GET", url), 400, "VALIDATION_ERROR", message);
});

E2E("a '%' left in a decoded $filter is no character of the grammar (the mock server would read %20 as a space)", async (ctx) => {
  const res = await call(ctx, "reader", "GET", `${BP}/A_BusinessPartner?$filter=BusinessPartner%20eq%20'1000001'%2520or%2520BusinessPartner%20eq%20'1000002'`);
  assertError(res, 400, "VALIDATION_ERROR", "unexpected text in $filter at '%20or%20BusinessPartner eq '10'");
});

E2E("a V2 $links read needs list of both sets: the mock server reads every partner and every address for it", async (ctx) => {
  assertError(await call(ctx, "getOnly", "GET", `${BP}/A_BusinessPartner('1000004')/$links/to_BusinessPartnerAddress`), 403, "FORBIDDEN", "API key lacks permission 'list' for entity 'A_BusinessPartner'");
  const res = await call(ctx, "reader", "GET", `${BP}/A_BusinessPartner('1000004')/$links/to_BusinessPartnerAddress`);
  assert.is(res.statusCode, 200, res.body);
});

E2E("removing a link is a delete of its source: the mock server deletes the partner, so a key without delete on partners is refused", async (ctx) => {
  const url = `${BP}/A_BusinessPartner('1000003')/$links/to_BusinessPartnerAddress(BusinessPartner='1000003',AddressID='2004')`;
  assertError(await call(ctx, "linker", "DELETE", url), 403, "FORBIDDEN", "API key lacks permission 'delete' for entity 'A_BusinessPartner'");
  assert.is((await direct(ctx, `${ctx.mock.roots.API_BUSINESS_PARTNER}A_BusinessPartner('1000003')`)).status, 200, "nothing was deleted");
  const res = await call(ctx, "unlinker", "DELETE", url);
  assert.is(res.statusCode, 204, res.body);
  assert.is((await direct(ctx, `${ctx.mock.roots.API_BUSINESS_PARTNER}A_BusinessPartner('1000003')`)).status, 404, "the mock server deleted the partner, which the key may");
});

E2E("an update's answer is a read: for a key without get the mock server's entity is not passed on (V2), or not read back (V4)", async (ctx) => {
  const merged = await call(ctx, "writer", "MERGE", `${BP}/A_BusinessPartner('1000001')`, { FirstName: "X" });
  assert.is(merged.statusCode, 204, merged.body);
  assert.is(merged.body, "");
  assert.is(merged.headers["preference-applied"], "return=minimal");
  assert.match((await direct(ctx, `${ctx.mock.roots.API_BUSINESS_PARTNER}A_BusinessPartner('1000001')`)).body, /"FirstName":"X"/);
  const patched = await call(ctx, "writer", "PATCH", `${TRIP}/People('javieralfred')`, { FirstName: "J" });
  assert.is(patched.statusCode, 204, patched.body);
  assert.is(patched.body, "");
});

E2E("a V2 function import needs its invoke grant; with it the action runs (its effects are the grant's)", async (ctx) => {
  const url = `${SO}/releaseApprovalRequest?SalesOrder='5000001'`;
  assertError(await call(ctx, "orders", "POST", url), 403, "FORBIDDEN", "API key has no access to operation 'releaseApprovalRequest'");
  assert.match((await direct(ctx, `${ctx.mock.roots.API_SALES_ORDER_SRV}A_SalesOrder('5000001')`)).body, /"SalesDocApprovalStatus":"A"/, "nothing was released");
  assertError(await call(ctx, "approver", "POST", `${SO}/releaseApprovalRequest?SalesOrder=5000001`), 400, "VALIDATION_ERROR", "malformed value of parameter 'SalesOrder' of 'releaseApprovalRequest': Edm.String takes a quoted string, not an integer");
  assertError(await call(ctx, "approver", "GET", url), 403, "FORBIDDEN", "action 'releaseApprovalRequest' must be called with POST, not GET");
  const res = await call(ctx, "approver", "POST", url);
  assert.is(res.statusCode, 200, res.body);
  assert.match((await direct(ctx, `${ctx.mock.roots.API_SALES_ORDER_SRV}A_SalesOrder('5000001')`)).body, /"SalesDocApprovalStatus":"B"/);
});

E2E("a V4 bound function needs its invoke grant and reads of its binding and its result's set", async (ctx) => {
  const url = `${TRIP}/People('russellwhyte')/Trippin.GetFavoriteAirline()`;
  assertError(await call(ctx, "people", "GET", url), 403, "FORBIDDEN", "API key has no access to operation 'Trippin.GetFavoriteAirline'");
  const res = await call(ctx, "traveller", "GET", url);
  assert.is(res.statusCode, 200, res.body);
  assert.is(JSON.parse(res.body).AirlineCode, "AA");
  // The unqualified name is the same operation (OData 4.01), granted by its qualified name.
  const unqualified = await call(ctx, "traveller", "GET", `${TRIP}/People('russellwhyte')/GetFavoriteAirline()`);
  assert.is(unqualified.statusCode, 200, unqualified.body);
});

E2E("a navigation the document binds to no entity set is refused to a key that names its sets (TripPin's Person/Trips needs '*')", async (ctx) => {
  assertError(
    await call(ctx, "traveller", "GET", `${TRIP}/People('russellwhyte')/Trips`),
    403,
    "FORBIDDEN",
    "API key has no access to navigation 'Trips' of 'People': the service metadata does not say which entity set it leads to, so only a grant on every entity set ('*') covers it",
  );
});

E2E.run();
