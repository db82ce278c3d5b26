/**
 * The second real OData back end (test-support/mockserver: SAP's Fiori
 * elements mock server serving SAP's published API_BUSINESS_PARTNER and
 * API_SALES_ORDER_SRV over V2 and TripPin over V4), checked on its own: basic
 * authentication, and for each kind of request the exact status and the
 * exact effects its data layer records (`get` by full key, else `list`;
 * `create`, `update`, `delete`), including what it really does with URLs a
 * gateway in front of it must know about ($links, unknown segments, quoted
 * keys, percent leftovers in $filter). One server for reads, a fresh one for
 * writes.
 */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startMockServer, type Effect, type MockServer } from "../../test-support/mockserver/index.js";

interface Ctx {
  /** Reads only: its data stays as shipped (test-support/mockserver/data). */
  ro: MockServer;
  /** Writes. */
  rw: MockServer;
}

const BP = "/sap/opu/odata/sap/API_BUSINESS_PARTNER";
const SO = "/sap/opu/odata/sap/API_SALES_ORDER_SRV";
const TRIP = "/odata/trippin";

const E2E = suite<Ctx>("mock server (fe-mockserver-core): statuses and data-layer effects");

E2E.before(async (ctx) => {
  [ctx.ro, ctx.rw] = await Promise.all([startMockServer(), startMockServer()]);
});

E2E.after(async (ctx) => {
  await Promise.all([ctx.ro?.stop(), ctx.rw?.stop()]);
});

interface Res {
  readonly id: string;
  readonly status: number;
  readonly text: string;
  readonly headers: Headers;
  json(): any;
}

/** A request straight to the mock server, with its credentials and a fresh X-Request-Id. */
async function send(
  ms: MockServer,
  method: string,
  path: string,
  init: { body?: string | object; headers?: Record<string, string>; auth?: boolean; id?: string } = {},
): Promise<Res> {
  const id = init.id ?? randomUUID();
  const headers: Record<string, string> = { accept: "application/json", "x-request-id": id, ...init.headers };
  if (init.auth !== false) {
    headers.authorization = `Basic ${Buffer.from(`${ms.credentials.username}:${ms.credentials.password}`).toString("base64")}`;
  }
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === "string" ? init.body : JSON.stringify(init.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(ms.baseUrl + path, { method, headers, body, signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  return { id, status: res.status, text, headers: res.headers, json: () => JSON.parse(text) };
}

const get = (ms: MockServer, path: string, headers?: Record<string, string>) => send(ms, "GET", path, { headers });

async function assertEffects(ms: MockServer, id: string, expected: Effect[]): Promise<void> {
  assert.equal(await ms.effects(id), expected);
}

const bpUri = (key: string) => `${BP}/A_BusinessPartner('${key}')`;

// ---------------------------------------------------------------------------
// Authentication

E2E("401 with WWW-Authenticate without or with wrong credentials, $metadata included; nothing reaches the data", async ({ ro }) => {
  for (const path of [`${BP}/$metadata`, `${BP}/A_BusinessPartner('1000001')`, `${TRIP}/People`, `${SO}/`]) {
    const res = await send(ro, "GET", path, { auth: false });
    assert.is(res.status, 401, path);
    assert.is(res.headers.get("www-authenticate"), 'Basic realm="Users"');
    await assertEffects(ro, res.id, []);
  }
  const wrong = await send(ro, "GET", `${BP}/A_BusinessPartner`, {
    auth: false,
    headers: { authorization: `Basic ${Buffer.from("erp-user:nope").toString("base64")}` },
  });
  assert.is(wrong.status, 401);
  const metadata = await send(ro, "GET", `${BP}/$metadata`, { headers: { accept: "application/xml" } });
  assert.is(metadata.status, 200);
  assert.match(metadata.text, /EntitySet Name="A_BusinessPartner"/);
  await assertEffects(ro, metadata.id, []);
  // The effects endpoint itself needs no credentials; an unknown id has none.
  assert.equal(await ro.effects("never-sent"), []);
});

// ---------------------------------------------------------------------------
// V2 reads (API_BUSINESS_PARTNER)

E2E("V2 GET by key: get; __metadata.uri is the mock server's own path, no host, X-Forwarded-* ignored", async ({ ro }) => {
  const res = await get(ro, `${bpUri("1000001")}?$select=BusinessPartner,BusinessPartnerFullName`, {
    "x-forwarded-host": "gateway.example.com",
    "x-forwarded-proto": "https",
  });
  assert.is(res.status, 200, res.text);
  assert.equal(res.json(), {
    d: {
      BusinessPartner: "1000001",
      BusinessPartnerFullName: "Acme Corporation",
      __metadata: { id: bpUri("1000001"), uri: bpUri("1000001"), type: "API_BUSINESS_PARTNER.A_BusinessPartnerType" },
    },
  });
  await assertEffects(ro, res.id, [{ operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000001'" }]);
});

E2E("V2 $top=2: list of the whole set (and __count is always there)", async ({ ro }) => {
  const res = await get(ro, `${BP}/A_BusinessPartner?$top=2&$select=BusinessPartner`);
  assert.is(res.status, 200, res.text);
  const d = res.json().d;
  assert.is(d.__count, 5);
  assert.equal(d.results.map((r: any) => r.BusinessPartner), ["1000001", "1000002"]);
  await assertEffects(ro, res.id, [{ operation: "list", entitySet: "A_BusinessPartner", detail: "all" }]);
});

E2E("V2 $count: list", async ({ ro }) => {
  const res = await get(ro, `${BP}/A_BusinessPartner/$count`);
  assert.is(res.status, 200);
  assert.is(res.text, "5");
  assert.match(String(res.headers.get("content-type")), /text\/plain/);
  await assertEffects(ro, res.id, [{ operation: "list", entitySet: "A_BusinessPartner", detail: "all" }]);
});

E2E("V2 $filter: list", async ({ ro }) => {
  const res = await get(ro, `${BP}/A_BusinessPartner?$filter=BusinessPartnerCategory%20eq%20'1'&$select=BusinessPartner,LastName`);
  assert.is(res.status, 200, res.text);
  assert.equal(res.json().d.results.map((r: any) => [r.BusinessPartner, r.LastName]), [["1000004", "Doe"]]);
  await assertEffects(ro, res.id, [{ operation: "list", entitySet: "A_BusinessPartner", detail: "all" }]);
});

E2E("V2 $expand=to_BusinessPartnerAddress: get of the partner, list of its addresses (by partial key)", async ({ ro }) => {
  const res = await get(ro, `${bpUri("1000001")}?$expand=to_BusinessPartnerAddress`);
  assert.is(res.status, 200, res.text);
  const d = res.json().d;
  assert.equal(d.to_BusinessPartnerAddress.results.map((a: any) => [a.AddressID, a.CityName]), [
    ["2001", "Springfield"],
    ["2002", "Portsmouth"],
  ]);
  await assertEffects(ro, res.id, [
    { operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000001'" },
    { operation: "list", entitySet: "A_BusinessPartnerAddress", detail: "BusinessPartner='1000001'" },
  ]);
  // On a collection: one address lookup per partner, for all five rows although $top=2 (expanded before paging).
  const many = await get(ro, `${BP}/A_BusinessPartner?$top=2&$expand=to_BusinessPartnerAddress&$select=BusinessPartner`);
  assert.is(many.status, 200, many.text);
  assert.is(many.json().d.results.length, 2);
  await assertEffects(ro, many.id, [
    { operation: "list", entitySet: "A_BusinessPartner", detail: "all" },
    {
      operation: "list",
      entitySet: "A_BusinessPartnerAddress",
      detail: ["1000001", "1000002", "1000003", "1000004", "1000005"].map((k) => `BusinessPartner='${k}'`).join(" | "),
    },
  ]);
});

E2E("V2 navigation paths: to many is list, to one by key is get", async ({ ro }) => {
  const many = await get(ro, `${bpUri("1000001")}/to_BusinessPartnerAddress?$select=AddressID`);
  assert.is(many.status, 200, many.text);
  assert.equal(many.json().d.results.map((a: any) => a.AddressID), ["2001", "2002"]);
  await assertEffects(ro, many.id, [
    { operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000001'" },
    { operation: "list", entitySet: "A_BusinessPartnerAddress", detail: "BusinessPartner='1000001'" },
  ]);
  const one = await get(ro, `${bpUri("1000001")}/to_BusinessPartnerAddress(BusinessPartner='1000001',AddressID='2002')?$select=CityName`);
  assert.is(one.status, 200, one.text);
  assert.is(one.json().d.CityName, "Portsmouth");
  await assertEffects(ro, one.id, [
    { operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000001'" },
    { operation: "get", entitySet: "A_BusinessPartnerAddress", detail: "BusinessPartner='1000001',AddressID='2002'" },
  ]);
});

E2E("quirk: an unknown path segment with a key re-keys the entity set (…('1000001')/Foo('1000002') answers 1000002)", async ({ ro }) => {
  const res = await get(ro, `${bpUri("1000001")}/Foo('1000002')?$select=BusinessPartner`);
  assert.is(res.status, 200, res.text);
  assert.is(res.json().d.BusinessPartner, "1000002");
  await assertEffects(ro, res.id, [
    { operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000001' | BusinessPartner='1000002'" },
  ]);
});

E2E("quirk: GET …/$links/to_BusinessPartnerAddress reads every partner and answers every address of every partner", async ({ ro }) => {
  const res = await get(ro, `${bpUri("1000001")}/$links/to_BusinessPartnerAddress`);
  assert.is(res.status, 200, res.text);
  const d = res.json().d;
  assert.is(d.__count, 5);
  assert.equal(d.results.map((a: any) => a.AddressID), ["2001", "2002", "2003", "2004", "2005"]);
  await assertEffects(ro, res.id, [
    { operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000001'" },
    { operation: "list", entitySet: "A_BusinessPartner", detail: "all" },
    { operation: "list", entitySet: "A_BusinessPartnerAddress", detail: "all" },
  ]);
});

E2E("observed: A_BusinessPartner('aggregation''x''') is a plain key lookup, '' not unescaped, 404", async ({ ro }) => {
  const res = await get(ro, `${BP}/A_BusinessPartner('aggregation''x''')`);
  assert.is(res.status, 404, res.text);
  assert.is(res.text, "");
  // The data layer looked up the key `aggregation''x''` (doubled quotes kept), rendered here as an OData literal.
  await assertEffects(ro, res.id, [{ operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='aggregation''''x'''''" }]);
});

E2E("observed: percent sequences left in a decoded $filter are read as space and punctuation (%2520or%2520 ORs)", async ({ ro }) => {
  // Decoded once, the value is `BusinessPartner eq '1000001'%20or%20BusinessPartner%20eq%20'1000002'`.
  const res = await get(
    ro,
    `${BP}/A_BusinessPartner?$filter=BusinessPartner%20eq%20'1000001'%2520or%2520BusinessPartner%2520eq%2520'1000002'&$select=BusinessPartner`,
  );
  assert.is(res.status, 200, res.text);
  assert.equal(res.json().d.results.map((r: any) => r.BusinessPartner), ["1000001", "1000002"]);
  await assertEffects(ro, res.id, [{ operation: "list", entitySet: "A_BusinessPartner", detail: "all" }]);
  // A %27 leftover is not a quote: it stays inside the string literal, nothing matches.
  const quote = await get(ro, `${BP}/A_BusinessPartner?$filter=BusinessPartner%20eq%20'1000001%2527%2520or%2520true%2520or%2520''&$select=BusinessPartner`);
  assert.is(quote.status, 200, quote.text);
  assert.equal(quote.json().d.results, []);
});

E2E("V2 $batch with two GET parts: effects under the batch id, and per part", async ({ ro }) => {
  const part = (path: string, extra = "") =>
    `--b1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nGET ${path} HTTP/1.1\r\nAccept: application/json\r\n${extra}\r\n\r\n`;
  const partId = `part-${randomUUID()}`;
  const body = `${part("A_BusinessPartner('1000002')?$select=BusinessPartner", `X-Request-Id: ${partId}\r\n`)}${part("A_BusinessPartnerAddress?$top=1&$select=AddressID")}--b1--\r\n`;
  const res = await send(ro, "POST", `${BP}/$batch`, { body, headers: { "content-type": "multipart/mixed; boundary=b1" } });
  assert.is(res.status, 200, res.text);
  assert.match(String(res.headers.get("content-type")), /^multipart\/mixed; boundary=b1/);
  assert.is(res.text.match(/HTTP\/1\.1 200 OK/g)?.length, 2);
  const first = { operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000002'" } as const;
  const second = { operation: "list", entitySet: "A_BusinessPartnerAddress", detail: "all" } as const;
  await assertEffects(ro, res.id, [first, second]);
  await assertEffects(ro, `${res.id}#1`, [first]);
  await assertEffects(ro, `${res.id}#2`, [second]);
  await assertEffects(ro, partId, [first]);
});

// ---------------------------------------------------------------------------
// V4 reads (TripPin)

E2E("V4 $expand=Trips: Trips come inline from the People row (no entity set); only People is read", async ({ ro }) => {
  const res = await get(ro, `${TRIP}/People('russellwhyte')?$expand=Trips($select=TripId,Name)&$select=UserName`);
  assert.is(res.status, 200, res.text);
  const body = res.json();
  assert.is(body.UserName, "russellwhyte");
  assert.equal(body.Trips, [
    { TripId: 0, Name: "Trip in US" },
    { TripId: 1, Name: "Trip in Beijing" },
  ]);
  await assertEffects(ro, res.id, [{ operation: "get", entitySet: "People", detail: "UserName='russellwhyte'" }]);
  // The path to the trips reads the same row; a trip by key is a 500 (no entity set to look it up in).
  const path = await get(ro, `${TRIP}/People('russellwhyte')/Trips?$select=TripId`);
  assert.is(path.status, 200, path.text);
  assert.equal(path.json().value, [{ TripId: 0 }, { TripId: 1 }]);
  await assertEffects(ro, path.id, [{ operation: "get", entitySet: "People", detail: "UserName='russellwhyte'" }]);
  const byKey = await get(ro, `${TRIP}/People('russellwhyte')/Trips(0)`);
  assert.is(byKey.status, 500, byKey.text);
});

E2E("V4 lambda in $filter reads the target set (Friends, no referential constraint: each person's own key)", async ({ ro }) => {
  const res = await get(ro, `${TRIP}/People?$filter=Friends/any(f:f/UserName%20eq%20'nobody')&$select=UserName`);
  assert.is(res.status, 200, res.text);
  assert.equal(res.json().value, []);
  await assertEffects(ro, res.id, [
    { operation: "list", entitySet: "People", detail: "all" },
    {
      operation: "get",
      entitySet: "People",
      detail: ["russellwhyte", "scottketchum", "ronaldmundy", "javieralfred", "willieashmore"].map((u) => `UserName='${u}'`).join(" | "),
    },
  ]);
});

E2E("V4 singleton Me: get", async ({ ro }) => {
  const res = await get(ro, `${TRIP}/Me?$select=UserName`);
  assert.is(res.status, 200, res.text);
  assert.is(res.json().UserName, "aprilcline");
  await assertEffects(ro, res.id, [{ operation: "get", entitySet: "Me" }]);
});

E2E("V4 bound function GetFavoriteAirline (qualified name): get People, get Airlines", async ({ ro }) => {
  const res = await get(ro, `${TRIP}/People('russellwhyte')/Trippin.GetFavoriteAirline()`);
  assert.is(res.status, 200, res.text);
  const body = res.json();
  assert.is(body.AirlineCode, "AA");
  assert.is(body.Name, "American Airlines");
  await assertEffects(ro, res.id, [
    { operation: "get", entitySet: "People", detail: "UserName='russellwhyte'" },
    { operation: "get", entitySet: "Airlines", detail: "AirlineCode='AA'" },
  ]);
  // Unqualified, the segment is no operation: it is read as a key `()` -> 0 on People, and answers an empty 200.
  const bare = await get(ro, `${TRIP}/People('russellwhyte')/GetFavoriteAirline()`);
  assert.is(bare.status, 200, bare.text);
  assert.equal(Object.keys(bare.json()).sort(), ["@odata.context", "@odata.metadataEtag"]);
  await assertEffects(ro, bare.id, [{ operation: "get", entitySet: "People", detail: "UserName='russellwhyte' | UserName=0" }]);
});

E2E("V4 unbound function GetNearestAirport: list Airports", async ({ ro }) => {
  const res = await get(ro, `${TRIP}/GetNearestAirport(lat=40.6,lon=-73.8)`);
  assert.is(res.status, 200, res.text);
  assert.is(res.json().IcaoCode, "KJFK");
  await assertEffects(ro, res.id, [{ operation: "list", entitySet: "Airports", detail: "all" }]);
});

// ---------------------------------------------------------------------------
// Writes (on the second server)

E2E("V2 POST create: 201 and create; a duplicate key is created again (201)", async ({ rw }) => {
  const res = await send(rw, "POST", `${BP}/A_BusinessPartner`, {
    body: { BusinessPartner: "1000100", BusinessPartnerCategory: "2", OrganizationBPName1: "New Co" },
  });
  assert.is(res.status, 201, res.text);
  assert.is(res.headers.get("location"), "A_BusinessPartner('1000100')");
  assert.is(res.json().d.__metadata.uri, bpUri("1000100"));
  await assertEffects(rw, res.id, [{ operation: "create", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000100'" }]);
  const again = await send(rw, "POST", `${BP}/A_BusinessPartner`, { body: { BusinessPartner: "1000100", OrganizationBPName1: "Twin" } });
  assert.is(again.status, 201, again.text);
  await assertEffects(rw, again.id, [{ operation: "create", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000100'" }]);
  const count = await get(rw, `${BP}/A_BusinessPartner?$filter=BusinessPartner%20eq%20'1000100'&$select=OrganizationBPName1`);
  assert.equal(count.json().d.results.map((r: any) => r.OrganizationBPName1), ["New Co", "Twin"]);
  // A key with a quote: found with the quote percent-encoded (key values are decoded twice), not with it doubled.
  assert.is((await send(rw, "POST", `${BP}/A_BusinessPartner`, { body: { BusinessPartner: "O'Neil" } })).status, 201);
  const encoded = await get(rw, `${BP}/A_BusinessPartner('O%27Neil')?$select=BusinessPartner`);
  assert.is(encoded.status, 200, encoded.text);
  assert.is(encoded.json().d.__metadata.uri, `${BP}/A_BusinessPartner('O'Neil')`);
  const doubled = await get(rw, `${BP}/A_BusinessPartner('O''Neil')`);
  assert.is(doubled.status, 404);
  await assertEffects(rw, doubled.id, [{ operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='O''''Neil'" }]);
});

E2E("V2 MERGE and PATCH update: 200 with the entity, get + update; PUT merges too", async ({ rw }) => {
  const expected: Effect[] = [
    { operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000002'" },
    { operation: "update", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000002'" },
  ];
  const merge = await send(rw, "MERGE", bpUri("1000002"), { body: { OrganizationBPName1: "Globex Renamed" } });
  assert.is(merge.status, 200, merge.text);
  assert.is(merge.json().d.OrganizationBPName1, "Globex Renamed");
  await assertEffects(rw, merge.id, expected);
  const patch = await send(rw, "PATCH", bpUri("1000002"), { body: { SearchTerm1: "GLX" } });
  assert.is(patch.status, 200, patch.text);
  await assertEffects(rw, patch.id, expected);
  const tunnelled = await send(rw, "POST", bpUri("1000002"), { body: { SearchTerm2: "T" }, headers: { "x-http-method": "MERGE" } });
  assert.is(tunnelled.status, 200, tunnelled.text);
  await assertEffects(rw, tunnelled.id, expected);
  const put = await send(rw, "PUT", bpUri("1000002"), { body: { FirstName: "Put" } });
  assert.is(put.status, 200, put.text);
  await assertEffects(rw, put.id, expected);
  const after = (await get(rw, `${bpUri("1000002")}?$select=OrganizationBPName1,SearchTerm1,SearchTerm2,FirstName,BusinessPartnerFullName`)).json().d;
  assert.equal(
    [after.OrganizationBPName1, after.SearchTerm1, after.SearchTerm2, after.FirstName, after.BusinessPartnerFullName],
    ["Globex Renamed", "GLX", "T", "Put", "Globex GmbH"],
  );
  const missing = await send(rw, "MERGE", bpUri("9999999"), { body: { FirstName: "x" } });
  assert.is(missing.status, 404);
  await assertEffects(rw, missing.id, [{ operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='9999999'" }]);
});

E2E("V2 DELETE: 204, get + delete (also 204 for a key that does not exist)", async ({ rw }) => {
  const res = await send(rw, "DELETE", bpUri("1000005"));
  assert.is(res.status, 204, res.text);
  await assertEffects(rw, res.id, [
    { operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000005'" },
    { operation: "delete", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000005'" },
  ]);
  assert.is((await get(rw, bpUri("1000005"))).status, 404);
  const missing = await send(rw, "DELETE", bpUri("9999999"));
  assert.is(missing.status, 204);
});

E2E("quirk: DELETE …/$links/to_BusinessPartnerAddress(…) deletes the partner, not the link; the address stays", async ({ rw }) => {
  const res = await send(rw, "DELETE", `${bpUri("1000003")}/$links/to_BusinessPartnerAddress(BusinessPartner='1000003',AddressID='2004')`);
  assert.is(res.status, 204, res.text);
  await assertEffects(rw, res.id, [
    { operation: "get", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000003'" },
    { operation: "delete", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000003'" },
  ]);
  assert.is((await get(rw, bpUri("1000003"))).status, 404);
  const address = await get(rw, `${BP}/A_BusinessPartnerAddress(BusinessPartner='1000003',AddressID='2004')?$select=CityName`);
  assert.is(address.status, 200, address.text);
  assert.is(address.json().d.CityName, "Paris");
});

E2E("quirk: V2 deep insert keeps the nested addresses inside the partner row, not in A_BusinessPartnerAddress", async ({ rw }) => {
  const res = await send(rw, "POST", `${BP}/A_BusinessPartner`, {
    body: { BusinessPartner: "1000200", to_BusinessPartnerAddress: { results: [{ AddressID: "2200", CityName: "Deep" }] } },
  });
  assert.is(res.status, 201, res.text);
  await assertEffects(rw, res.id, [{ operation: "create", entitySet: "A_BusinessPartner", detail: "BusinessPartner='1000200'" }]);
  const addresses = await get(rw, `${BP}/A_BusinessPartnerAddress?$filter=BusinessPartner%20eq%20'1000200'`);
  assert.equal(addresses.json().d.results, []);
});

E2E("V2 function import releaseApprovalRequest (POST, SalesOrder in the query): get + update of A_SalesOrder", async ({ rw }) => {
  const res = await send(rw, "POST", `${SO}/releaseApprovalRequest?SalesOrder='5000001'`);
  assert.is(res.status, 200, res.text);
  assert.equal(res.json(), {
    d: { releaseApprovalRequest: { __metadata: { type: "API_SALES_ORDER_SRV.FunctionResult" }, Boolean: true } },
  });
  await assertEffects(rw, res.id, [
    { operation: "get", entitySet: "A_SalesOrder", detail: "SalesOrder='5000001'" },
    { operation: "update", entitySet: "A_SalesOrder", detail: "SalesOrder='5000001'" },
  ]);
  const order = await get(rw, `${SO}/A_SalesOrder('5000001')?$select=SalesDocApprovalStatus`);
  assert.is(order.json().d.SalesDocApprovalStatus, "B");
  // Not awaiting approval any more: 400, nothing written.
  const again = await send(rw, "POST", `${SO}/releaseApprovalRequest?SalesOrder='5000001'`);
  assert.is(again.status, 400, again.text);
  await assertEffects(rw, again.id, [{ operation: "get", entitySet: "A_SalesOrder", detail: "SalesOrder='5000001'" }]);
  // rejectApprovalRequest sets "C"; the mock server ignores m:HttpMethod, GET runs it too.
  const reject = await get(rw, `${SO}/rejectApprovalRequest?SalesOrder='5000002'`);
  assert.is(reject.status, 200, reject.text);
  assert.is((await get(rw, `${SO}/A_SalesOrder('5000002')?$select=SalesDocApprovalStatus`)).json().d.SalesDocApprovalStatus, "C");
  const unknown = await send(rw, "POST", `${SO}/releaseApprovalRequest?SalesOrder='4711'`);
  assert.is(unknown.status, 404, unknown.text);
});

E2E("V4 bound actions UpdateLastName (get + update) and ShareTrip (204, update of the other person)", async ({ rw }) => {
  const res = await send(rw, "POST", `${TRIP}/People('scottketchum')/Trippin.UpdateLastName`, { body: { lastName: "Ketchup" } });
  assert.is(res.status, 200, res.text);
  assert.is(res.json().value, true);
  await assertEffects(rw, res.id, [
    { operation: "get", entitySet: "People", detail: "UserName='scottketchum'" },
    { operation: "update", entitySet: "People", detail: "UserName='scottketchum'" },
  ]);
  assert.is((await get(rw, `${TRIP}/People('scottketchum')?$select=LastName`)).json().LastName, "Ketchup");

  const share = await send(rw, "POST", `${TRIP}/People('russellwhyte')/Trippin.ShareTrip`, { body: { userName: "javieralfred", tripId: 1 } });
  assert.is(share.status, 204, share.text);
  await assertEffects(rw, share.id, [
    { operation: "get", entitySet: "People", detail: "UserName='russellwhyte' | UserName='javieralfred'" },
    { operation: "update", entitySet: "People", detail: "UserName='javieralfred'" },
  ]);
  const trips = await get(rw, `${TRIP}/People('javieralfred')?$expand=Trips($select=TripId)&$select=UserName`);
  assert.equal(trips.json().Trips, [{ TripId: 1 }]);
});

E2E.run();
