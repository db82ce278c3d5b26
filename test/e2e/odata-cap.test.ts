/**
 * The OData data path end to end against a real OData back end (SAP CAP,
 * test-support/cap): V4 and V2 reads and writes through erplink with the
 * instance's basic credentials injected, per-entity authorization (nothing
 * reaches the back end on denial), `If-Match: *` for keys without `create`,
 * `$metadata`, deep inserts authorized from the body, multipart and JSON
 * `$batch` (a forbidden part denies the batch, nothing reaches CAP), and a
 * response of several MB streamed intact. A recording proxy sits between
 * erplink and CAP: after every request, what CAP received is checked to be
 * exactly what erplink authorized and logged as sent (nothing on a refusal).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { LightMyRequestResponse } from "fastify";
import { parseMetadata } from "../../src/gateway/odata/metadata.js";
import { startCapBackend, type CapBackend } from "../../test-support/cap/index.js";
import { assertForwardedAsAuthorized, type ForwardedService } from "../../test-support/forwarded.js";
import { startRecordingProxy, type RecordingProxy } from "../../test-support/recording-proxy.js";
import { createWorld, type World } from "../../test-support/world.js";
import { json, post } from "../../test-support/http.js";

interface Ctx {
  cap: CapBackend;
  /** Between erplink and CAP: records what CAP receives. */
  proxy: RecordingProxy;
  /** The services of the two instances, for the differential check. */
  services: { v4: ForwardedService; v2: ForwardedService; notes: ForwardedService; notesV2: ForwardedService };
  world: World;
  /** list/get/create/update/delete on partners, list/get on addresses. */
  full: string;
  /** Partners without create: PUT gets If-Match: *. */
  noCreate: string;
  /** Partners only: no addresses. */
  noAddr: string;
  /** Partners and addresses, create included (deep insert). */
  deep: string;
  /** API_NOTES: Notes, and create on Folders; nothing on Secrets. */
  notes: string;
  /** API_NOTES: Notes and Folders (read), nothing on Secrets. */
  notesReader: string;
}

const BULK = 10_000;
const BP = "/odata/s4/API_BUSINESS_PARTNER";
const BP2 = "/odata/s4v2/API_BUSINESS_PARTNER";

const E2E = suite<Ctx>("OData data path against CAP");

E2E.before(async (ctx) => {
  ctx.cap = await startCapBackend({ bulkBusinessPartners: BULK });
  ctx.proxy = await startRecordingProxy(ctx.cap.baseUrl);
  const model = async (path: string) => parseMetadata((await direct(ctx, path, "application/xml")).body);
  // Against CAP the check also reads the SQL CAP ran (test-support/cap: its ledger).
  const bp = { backend: ctx.cap, service: "API_BUSINESS_PARTNER" };
  const notes = { backend: ctx.cap, service: "API_NOTES" };
  ctx.services = {
    v4: { upstreamRoot: "/odata/v4/api-business-partner", clientRoot: BP, model: await model("/odata/v4/api-business-partner/$metadata"), cap: bp },
    v2: { upstreamRoot: "/odata/v2/api-business-partner", clientRoot: BP2, model: await model("/odata/v2/api-business-partner/$metadata"), cap: bp },
    notes: { upstreamRoot: "/odata/v4/api-notes", clientRoot: "/odata/s4/API_NOTES", model: await model("/odata/v4/api-notes/$metadata"), cap: notes },
    notesV2: { upstreamRoot: "/odata/v2/api-notes", clientRoot: "/odata/s4v2/API_NOTES", model: await model("/odata/v2/api-notes/$metadata"), cap: notes },
  };
  ctx.world = await createWorld();
  const app = ctx.world.app;
  const sys = json(await post(app, "/admin/systems", { name: "S4HANA" })).data.id;
  const auth = { type: "basic", ...ctx.cap.credentials };
  for (const [name, root] of [
    ["s4", "/odata/v4/"],
    ["s4v2", "/odata/v2/"],
  ] as const) {
    const res = await post(app, `/admin/systems/${sys}/instances`, {
      name,
      base_url: `${ctx.proxy.baseUrl}${root}`,
      services: { API_BUSINESS_PARTNER: { path: "api-business-partner" }, API_NOTES: { path: "api-notes" } },
      auth,
    });
    assert.is(res.statusCode, 201, res.body);
  }
  const key = async (name: string, entities: Record<string, string[]>) => {
    const res = await post(app, "/admin/api-keys", {
      name,
      permissions: { s4: { API_BUSINESS_PARTNER: entities }, s4v2: { API_BUSINESS_PARTNER: entities } },
    });
    assert.is(res.statusCode, 201, res.body);
    return json(res).data.key as string;
  };
  ctx.full = await key("full", {
    A_BusinessPartner: ["list", "get", "create", "update", "delete"],
    A_BusinessPartnerAddress: ["list", "get"],
  });
  ctx.noCreate = await key("no-create", { A_BusinessPartner: ["list", "get", "update"] });
  ctx.noAddr = await key("no-addr", { A_BusinessPartner: ["list", "get"] });
  ctx.deep = await key("deep", {
    A_BusinessPartner: ["list", "get", "create", "update"],
    A_BusinessPartnerAddress: ["list", "get", "create"],
  });
  // Notes and creating folders; nothing on Secrets.
  const notesKey = await post(app, "/admin/api-keys", {
    name: "notes",
    permissions: Object.fromEntries(
      ["s4", "s4v2"].map((i) => [i, { API_NOTES: { Notes: ["list", "get", "create", "update", "delete"], Folders: ["create"] } }]),
    ),
  });
  ctx.notes = json(notesKey).data.key as string;
  const readerKey = await post(app, "/admin/api-keys", {
    name: "notes-folders",
    permissions: { s4: { API_NOTES: { Notes: ["list", "get"], Folders: ["list", "get"] } } },
  });
  ctx.notesReader = json(readerKey).data.key as string;
});

E2E.after(async (ctx) => {
  await ctx.proxy?.close();
  await ctx.world?.close();
  await ctx.cap?.stop();
});

type Req = { method?: string; headers?: Record<string, string>; body?: unknown };

/**
 * Asserts that CAP received exactly what erplink authorized for `res`
 * (test-support/forwarded.ts), or nothing when erplink refused it.
 */
async function checked(ctx: Ctx, url: string, res: LightMyRequestResponse, clientBody?: string): Promise<LightMyRequestResponse> {
  const service = [ctx.services.v2, ctx.services.notes, ctx.services.notesV2].find((sv) => url.startsWith(sv.clientRoot)) ?? ctx.services.v4;
  const logs = { store: ctx.world.store, flush: () => ctx.world.layer.logWriter.flush() };
  await assertForwardedAsAuthorized(logs, ctx.proxy, service, String(res.headers["x-request-id"]), clientBody);
  return res;
}

/** A request through erplink with a data key; what CAP received is checked against what was authorized. */
async function call(ctx: Ctx, key: string, url: string, req: Req = {}): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...req.headers };
  if (req.body !== undefined) headers["content-type"] ??= "application/json";
  const payload = req.body !== undefined ? JSON.stringify(req.body) : undefined;
  const res = await ctx.world.app.inject({
    method: (req.method ?? "GET") as "GET",
    url,
    headers,
    ...(payload !== undefined ? { payload } : {}),
  });
  return checked(ctx, url, res, payload);
}

/** A request straight to CAP with its credentials (to observe side effects). */
async function direct(ctx: Ctx, path: string, accept = "application/json"): Promise<{ status: number; body: string }> {
  const { username, password } = ctx.cap.credentials;
  const res = await fetch(`${ctx.cap.baseUrl}${path}`, {
    headers: { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`, accept },
  });
  return { status: res.status, body: await res.text() };
}

const v4Partner = (ctx: Ctx, id: string) => direct(ctx, `/odata/v4/api-business-partner/A_BusinessPartner('${encodeURIComponent(id.replace(/'/g, "''"))}')`);

/** How many partners CAP holds now (other tests create some). */
const partnerCount = async (ctx: Ctx) => Number((await direct(ctx, "/odata/v4/api-business-partner/A_BusinessPartner/$count")).body);

function assertEnvelope(res: LightMyRequestResponse, status: number, code: string, message: string) {
  assert.is(res.statusCode, status, res.body);
  assert.equal(JSON.parse(res.body), { error: { code, message, requestId: res.headers["x-request-id"] } });
}

E2E("V4 list with $top and $count=true (CAP answers only with the injected basic credentials)", async (ctx) => {
  const res = await call(ctx, ctx.full, `${BP}/A_BusinessPartner?$top=3&$count=true&$orderby=BusinessPartner&$select=BusinessPartner`);
  assert.is(res.statusCode, 200, res.body);
  assert.match(String(res.headers["content-type"]), /application\/json/);
  assert.is(res.headers["set-cookie"], undefined);
  const body = JSON.parse(res.body);
  assert.is(body["@odata.count"], await partnerCount(ctx));
  assert.ok(body["@odata.count"] >= 5 + BULK);
  assert.equal(
    body.value.map((r: { BusinessPartner: string }) => r.BusinessPartner),
    ["1000001", "1000002", "1000003"],
  );
  // The same request straight to CAP without credentials is refused: the 200 above proves the injection.
  const bare = await fetch(`${ctx.cap.baseUrl}/odata/v4/api-business-partner/A_BusinessPartner?$top=1`);
  await bare.arrayBuffer();
  assert.is(bare.status, 401);
});

E2E("V4 get by a key with a quote, URL-encoded", async (ctx) => {
  const res = await call(ctx, ctx.full, `${BP}/A_BusinessPartner(%27O%27%27Neil%27)`);
  assert.is(res.statusCode, 200, res.body);
  const body = JSON.parse(res.body);
  assert.is(body.BusinessPartner, "O'Neil");
  assert.is(body.BusinessPartnerFullName, "Shaquille O'Neil");
  // Unencoded quotes work as well.
  const plain = await call(ctx, ctx.full, `${BP}/A_BusinessPartner('O''Neil')?$select=LastName`);
  assert.is(plain.statusCode, 200, plain.body);
  assert.is(JSON.parse(plain.body).LastName, "O'Neil");
});

E2E("V4 composite key on addresses, and navigation to them", async (ctx) => {
  const res = await call(ctx, ctx.full, `${BP}/A_BusinessPartnerAddress(BusinessPartner='1000001',AddressID='2')`);
  assert.is(res.statusCode, 200, res.body);
  const body = JSON.parse(res.body);
  assert.is(body.CityName, "Hamburg");
  assert.is(body.StreetName, "Harbour Road");
  const nav = await call(ctx, ctx.full, `${BP}/A_BusinessPartner('1000001')/to_Address?$orderby=AddressID`);
  assert.is(nav.statusCode, 200, nav.body);
  assert.equal(
    JSON.parse(nav.body).value.map((a: { CityName: string }) => a.CityName),
    ["Berlin", "Hamburg"],
  );
});

E2E("V4 $expand=to_Address is permitted with access to the addresses", async (ctx) => {
  const res = await call(ctx, ctx.full, `${BP}/A_BusinessPartner(%27O%27%27Neil%27)?$expand=to_Address`);
  assert.is(res.statusCode, 200, res.body);
  const body = JSON.parse(res.body);
  assert.is(body.to_Address.length, 1);
  assert.is(body.to_Address[0].CityName, "Orlando");
});

E2E("V4 navigation or $expand to a forbidden entity set is 403 and forwards nothing", async (ctx) => {
  const msg = "API key has no access to entity 'A_BusinessPartnerAddress'";
  assertEnvelope(await call(ctx, ctx.noAddr, `${BP}/A_BusinessPartner('1000001')?$expand=to_Address`), 403, "FORBIDDEN", msg);
  assertEnvelope(await call(ctx, ctx.noAddr, `${BP}/A_BusinessPartner('1000001')/to_Address`), 403, "FORBIDDEN", msg);
  assertEnvelope(await call(ctx, ctx.noAddr, `${BP}/A_BusinessPartnerAddress`), 403, "FORBIDDEN", msg);
  // The same key reads partners.
  const ok = await call(ctx, ctx.noAddr, `${BP}/A_BusinessPartner('1000001')`);
  assert.is(ok.statusCode, 200, ok.body);
  assert.is(JSON.parse(ok.body).BusinessPartnerFullName, "Acme Industries");
});

E2E("V4 $metadata is 200 XML", async (ctx) => {
  const res = await call(ctx, ctx.noAddr, `${BP}/$metadata`);
  assert.is(res.statusCode, 200, res.body);
  assert.match(String(res.headers["content-type"]), /application\/xml/);
  assert.match(res.body, /<edmx:Edmx/);
  assert.match(res.body, /EntitySet Name="A_BusinessPartner"/);
  // The service document too.
  const doc = await call(ctx, ctx.noAddr, `${BP}/`);
  assert.is(doc.statusCode, 200, doc.body);
  assert.ok(JSON.parse(doc.body).value.some((s: { name: string }) => s.name === "A_BusinessPartner"));
});

E2E("V4 create (201), PATCH, PUT and DELETE (204)", async (ctx) => {
  const created = await call(ctx, ctx.full, `${BP}/A_BusinessPartner`, {
    method: "POST",
    body: { BusinessPartner: "E2E0001", BusinessPartnerCategory: "1", FirstName: "Ada", LastName: "Lovelace" },
  });
  assert.is(created.statusCode, 201, created.body);
  assert.is(JSON.parse(created.body).BusinessPartner, "E2E0001");
  assert.match(String(created.headers.location ?? ""), /A_BusinessPartner\('E2E0001'\)/);
  assert.is(JSON.parse((await v4Partner(ctx, "E2E0001")).body).FirstName, "Ada");

  const patched = await call(ctx, ctx.full, `${BP}/A_BusinessPartner('E2E0001')`, { method: "PATCH", body: { FirstName: "Augusta" } });
  assert.is(patched.statusCode, 200, patched.body);
  assert.is(JSON.parse(patched.body).FirstName, "Augusta");
  const afterPatch = JSON.parse((await v4Partner(ctx, "E2E0001")).body);
  assert.is(afterPatch.FirstName, "Augusta");
  assert.is(afterPatch.LastName, "Lovelace");

  const put = await call(ctx, ctx.full, `${BP}/A_BusinessPartner('E2E0001')`, {
    method: "PUT",
    body: { BusinessPartner: "E2E0001", BusinessPartnerCategory: "1", FirstName: "Ada", LastName: "King" },
  });
  assert.is(put.statusCode, 200, put.body);
  assert.is(JSON.parse(put.body).LastName, "King");
  assert.is(JSON.parse((await v4Partner(ctx, "E2E0001")).body).LastName, "King");

  // CAP deletes a partner's addresses with it (a composition, OnDelete Cascade in $metadata): a key that may
  // delete partners but not addresses may not delete partners; CAP's SQL ledger shows nothing was deleted.
  const denied = await call(ctx, ctx.full, `${BP}/A_BusinessPartner('E2E0001')`, { method: "DELETE" });
  assertEnvelope(denied, 403, "FORBIDDEN", "API key lacks permission 'delete' for entity 'A_BusinessPartnerAddress'");
  assert.is((await v4Partner(ctx, "E2E0001")).status, 200);
  const deleter = json(
    await post(ctx.world.app, "/admin/api-keys", {
      name: "partner-deleter",
      permissions: { s4: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["delete"], A_BusinessPartnerAddress: ["delete"] } } },
    }),
  ).data.key as string;
  const del = await call(ctx, deleter, `${BP}/A_BusinessPartner('E2E0001')`, { method: "DELETE" });
  assert.is(del.statusCode, 204, del.body);
  assert.is(del.body, "");
  assert.is((await v4Partner(ctx, "E2E0001")).status, 404);
  assert.equal(
    (await ctx.cap.ledger(String(del.headers["x-request-id"]))).flatMap((st) => /^DELETE FROM (\w+)/.exec(st.sql)?.[1] ?? []),
    ["erp_BusinessPartnerAddress", "erp_BusinessPartner"],
  );
});

E2E("V4 PUT on a missing entity: a key with create upserts, a key without gets If-Match: * and creates nothing", async (ctx) => {
  const upsert = await call(ctx, ctx.full, `${BP}/A_BusinessPartner('E2E0002')`, {
    method: "PUT",
    body: { BusinessPartner: "E2E0002", FirstName: "Grace" },
  });
  assert.ok([200, 201].includes(upsert.statusCode), `${upsert.statusCode} ${upsert.body}`);
  assert.is(JSON.parse((await v4Partner(ctx, "E2E0002")).body).FirstName, "Grace");

  const refused = await call(ctx, ctx.noCreate, `${BP}/A_BusinessPartner('E2E0003')`, {
    method: "PUT",
    body: { BusinessPartner: "E2E0003", FirstName: "Hopper" },
  });
  // CAP answers 412 Precondition Failed: If-Match: * matches no entity.
  assert.is(refused.statusCode, 412, refused.body);
  assert.is((await v4Partner(ctx, "E2E0003")).status, 404, "the PUT must not have created the entity");
  // A blank If-Match is no precondition to CAP: erplink replaces it.
  const blank = await call(ctx, ctx.noCreate, `${BP}/A_BusinessPartner('E2E0003')`, {
    method: "PUT",
    headers: { "if-match": "" },
    body: { BusinessPartner: "E2E0003", FirstName: "Hopper" },
  });
  assert.is(blank.statusCode, 412, blank.body);
  assert.is((await v4Partner(ctx, "E2E0003")).status, 404, "a blank If-Match must not let the PUT create");
  // If-None-Match: * is ignored by CAP (no ETags), which then updates: it needs update as well as create.
  const createOnly = json(
    await post(ctx.world.app, "/admin/api-keys", { name: "create-only", permissions: { s4: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["create"] } } } }),
  ).data.key as string;
  assertEnvelope(
    await call(ctx, createOnly, `${BP}/A_BusinessPartner('E2E0002')`, {
      method: "PUT",
      headers: { "if-none-match": "*" },
      body: { BusinessPartner: "E2E0002", FirstName: "Overwritten" },
    }),
    403,
    "FORBIDDEN",
    "API key lacks permission 'update' for entity 'A_BusinessPartner'",
  );

  // CAP does not upsert on PATCH (404 even for a key with create), so this only shows no side effect.
  const patchMissing = await call(ctx, ctx.noCreate, `${BP}/A_BusinessPartner('E2E0004')`, { method: "PATCH", body: { FirstName: "X" } });
  assert.is(patchMissing.statusCode, 404, patchMissing.body);
  assert.is((await v4Partner(ctx, "E2E0004")).status, 404, "the PATCH must not have created the entity");

  // If-Match: * still lets the same key update an existing entity.
  const existing = await call(ctx, ctx.noCreate, `${BP}/A_BusinessPartner('E2E0002')`, {
    method: "PUT",
    body: { BusinessPartner: "E2E0002", FirstName: "Grace", LastName: "Hopper" },
  });
  assert.is(existing.statusCode, 200, existing.body);
  assert.is(JSON.parse((await v4Partner(ctx, "E2E0002")).body).LastName, "Hopper");
  // And that key cannot create with POST.
  assertEnvelope(
    await call(ctx, ctx.noCreate, `${BP}/A_BusinessPartner`, { method: "POST", body: { BusinessPartner: "E2E0005" } }),
    403,
    "FORBIDDEN",
    "API key lacks permission 'create' for entity 'A_BusinessPartner'",
  );
  assert.is((await v4Partner(ctx, "E2E0005")).status, 404);
});

E2E("a forbidden entity set (A_Currency) is 403 and nothing reaches the back end", async (ctx) => {
  const msg = "API key has no access to entity 'A_Currency'";
  assertEnvelope(await call(ctx, ctx.full, `${BP}/A_Currency`), 403, "FORBIDDEN", msg);
  assertEnvelope(
    await call(ctx, ctx.full, `${BP}/A_Currency`, { method: "POST", body: { Currency: "XTS", CurrencyName: "Test", Decimals: 2 } }),
    403,
    "FORBIDDEN",
    msg,
  );
  assertEnvelope(await call(ctx, ctx.full, `${BP}/A_Currency('EUR')`, { method: "DELETE" }), 403, "FORBIDDEN", msg);
  assertEnvelope(await call(ctx, ctx.full, `${BP2}/A_Currency('USD')`, { method: "MERGE", body: { Decimals: 7 } }), 403, "FORBIDDEN", msg);
  assert.is((await direct(ctx, "/odata/v4/api-business-partner/A_Currency('XTS')")).status, 404);
  const eur = await direct(ctx, "/odata/v4/api-business-partner/A_Currency('EUR')");
  assert.is(eur.status, 200);
  assert.is(JSON.parse((await direct(ctx, "/odata/v4/api-business-partner/A_Currency('USD')")).body).Decimals, 2);
});

E2E("without erplink credentials: 401 envelope and the back end never sees the request", async (ctx) => {
  const res = await checked(ctx, BP, await ctx.world.app.inject({ method: "DELETE", url: `${BP}/A_BusinessPartner('1000004')` }));
  assertEnvelope(res, 401, "UNAUTHORIZED", "missing bearer token: send Authorization: Bearer <data key>");
  const basic = await checked(
    ctx,
    BP,
    await ctx.world.app.inject({
      method: "DELETE",
      url: `${BP}/A_BusinessPartner('1000004')`,
      headers: { authorization: `Basic ${Buffer.from("erp-user:erp-pass").toString("base64")}` },
    }),
  );
  assert.is(basic.statusCode, 401, basic.body);
  assert.is((await v4Partner(ctx, "1000004")).status, 200, "the partner still exists");
});

E2E("V2 list with $inlinecount=allpages", async (ctx) => {
  const res = await call(ctx, ctx.full, `${BP2}/A_BusinessPartner?$inlinecount=allpages&$top=2&$orderby=BusinessPartner&$format=json`);
  assert.is(res.statusCode, 200, res.body);
  const d = JSON.parse(res.body).d;
  assert.is(Number(d.__count), await partnerCount(ctx));
  assert.ok(Number(d.__count) >= 5 + BULK);
  assert.equal(
    d.results.map((r: { BusinessPartner: string }) => r.BusinessPartner),
    ["1000001", "1000002"],
  );
  const one = await call(ctx, ctx.full, `${BP2}/A_BusinessPartner('O''Neil')?$expand=to_Address&$format=json`);
  assert.is(one.statusCode, 200, one.body);
  assert.is(JSON.parse(one.body).d.to_Address.results[0].CityName, "Orlando");
  assertEnvelope(
    await call(ctx, ctx.noAddr, `${BP2}/A_BusinessPartner('1000001')?$expand=to_Address`),
    403,
    "FORBIDDEN",
    "API key has no access to entity 'A_BusinessPartnerAddress'",
  );
  const meta = await call(ctx, ctx.noAddr, `${BP2}/$metadata`);
  assert.is(meta.statusCode, 200, meta.body);
  assert.match(meta.body, /Version="1\.0"/);
});

/** Follows a URL the back end wrote in an answer, through erplink, as a client would: its path and query on erplink's host. */
function follow(ctx: Ctx, key: string, url: string): Promise<LightMyRequestResponse> {
  const u = new URL(url);
  assert.is(u.origin, "http://localhost", `${url} names erplink's host (as the client addressed it: localhost:80)`);
  assert.ok(u.pathname.startsWith(`${BP2}/`), `${url} lies under erplink's V2 service root`);
  return call(ctx, key, `${u.pathname}${u.search}`);
}

E2E("V2 absolute URLs in answers (__metadata.uri, __deferred.uri, __next, Location) lead back through erplink to the same data", async (ctx) => {
  const one = await call(ctx, ctx.full, `${BP2}/A_BusinessPartner('1000001')?$format=json`);
  assert.is(one.statusCode, 200, one.body);
  const d = JSON.parse(one.body).d;
  const self = await follow(ctx, ctx.full, d.__metadata.uri);
  assert.is(self.statusCode, 200, self.body);
  assert.is(JSON.parse(self.body).d.BusinessPartnerFullName, d.BusinessPartnerFullName);
  const addresses = await follow(ctx, ctx.full, d.to_Address.__deferred.uri);
  assert.is(addresses.statusCode, 200, addresses.body);
  assert.equal(JSON.parse(addresses.body).d.results.map((a: { BusinessPartner: string }) => a.BusinessPartner).filter((b: string) => b !== "1000001"), []);
  // A key without the addresses follows the same link into a 403, as it should.
  assertEnvelope(await follow(ctx, ctx.noAddr, d.to_Address.__deferred.uri), 403, "FORBIDDEN", "API key has no access to entity 'A_BusinessPartnerAddress'");

  // Server-driven paging: CAP pages at 1000; the next link continues where the first page ended.
  const page = await call(ctx, ctx.full, `${BP2}/A_BusinessPartner?$select=BusinessPartner&$orderby=BusinessPartner&$format=json`);
  assert.is(page.statusCode, 200, page.body);
  const first = JSON.parse(page.body).d;
  assert.is(first.results.length, 1000);
  const next = await follow(ctx, ctx.full, first.__next);
  assert.is(next.statusCode, 200, next.body);
  const second = JSON.parse(next.body).d.results.map((r: { BusinessPartner: string }) => r.BusinessPartner);
  assert.ok(second.length > 0 && second[0] > first.results[999].BusinessPartner, `${second[0]} follows ${first.results[999].BusinessPartner}`);

  // A create's Location names the new entity on erplink.
  const created = await call(ctx, ctx.full, `${BP2}/A_BusinessPartner`, { method: "POST", body: { BusinessPartner: "E2EV2L", FirstName: "Loc" } });
  assert.is(created.statusCode, 201, created.body);
  const location = String(created.headers.location);
  assert.is(location, `http://localhost:80${BP2}/A_BusinessPartner('E2EV2L')`);
  const there = await follow(ctx, ctx.full, `${location}?$format=json`);
  assert.is(JSON.parse(there.body).d.FirstName, "Loc");
  assert.is(JSON.parse(created.body).d.__metadata.uri, location);
});

E2E("V2 MERGE and POST with X-HTTP-Method: MERGE are 204 and update the entity", async (ctx) => {
  const merge = await call(ctx, ctx.full, `${BP2}/A_BusinessPartner('1000002')`, { method: "MERGE", body: { SearchTerm1: "MERGED" } });
  assert.is(merge.statusCode, 204, merge.body);
  let row = JSON.parse((await v4Partner(ctx, "1000002")).body);
  assert.is(row.SearchTerm1, "MERGED");
  assert.is(row.BusinessPartnerFullName, "Globex Corporation", "MERGE keeps the other properties");

  const tunnelled = await call(ctx, ctx.full, `${BP2}/A_BusinessPartner('1000002')`, {
    method: "POST",
    headers: { "x-http-method": "MERGE" },
    body: { SearchTerm1: "TUNNELLED" },
  });
  assert.is(tunnelled.statusCode, 204, tunnelled.body);
  row = JSON.parse((await v4Partner(ctx, "1000002")).body);
  assert.is(row.SearchTerm1, "TUNNELLED");
  assert.is(row.BusinessPartnerFullName, "Globex Corporation");

  // A tunnelled MERGE is authorized as an update, not as the POST it travels in.
  assertEnvelope(
    await call(ctx, ctx.noAddr, `${BP2}/A_BusinessPartner('1000002')`, {
      method: "POST",
      headers: { "x-http-method": "MERGE" },
      body: { SearchTerm1: "NOPE" },
    }),
    403,
    "FORBIDDEN",
    "API key lacks permission 'update' for entity 'A_BusinessPartner'",
  );
  assert.is(JSON.parse((await v4Partner(ctx, "1000002")).body).SearchTerm1, "TUNNELLED");
});

E2E("V4 deep insert: the nested entity set needs create; without it nothing is created", async (ctx) => {
  const body = {
    BusinessPartner: "E2ED01",
    FirstName: "Deep",
    to_Address: [{ AddressID: "1", CityName: "Lisbon" }],
  };
  assertEnvelope(
    await call(ctx, ctx.full, `${BP}/A_BusinessPartner`, { method: "POST", body }),
    403,
    "FORBIDDEN",
    "API key lacks permission 'create' for entity 'A_BusinessPartnerAddress'",
  );
  assert.is((await v4Partner(ctx, "E2ED01")).status, 404, "nothing was created");
  const created = await call(ctx, ctx.deep, `${BP}/A_BusinessPartner`, { method: "POST", body });
  assert.is(created.statusCode, 201, created.body);
  const address = await direct(ctx, "/odata/v4/api-business-partner/A_BusinessPartnerAddress(BusinessPartner='E2ED01',AddressID='1')");
  assert.is(address.status, 200, address.body);
  assert.is(JSON.parse(address.body).CityName, "Lisbon");
});

/** A multipart batch body: each entry a request, or an array of requests (a change set). */
function multipart(parts: (string | string[])[], mimeIds = true): string {
  const http = (req: string, id?: number) =>
    ["Content-Type: application/http", "Content-Transfer-Encoding: binary", ...(id ? [`Content-ID: ${id}`] : []), "", req].join("\r\n");
  let n = 0;
  const out: string[] = [];
  for (const p of parts) {
    out.push("--batch_e2e");
    if (typeof p === "string") {
      out.push(http(p));
    } else {
      out.push("Content-Type: multipart/mixed; boundary=changeset_e2e", "");
      for (const req of p) out.push("--changeset_e2e", http(req, mimeIds ? ++n : undefined));
      out.push("--changeset_e2e--");
    }
  }
  out.push("--batch_e2e--", "");
  return out.join("\r\n");
}

const postPartner = (id: string, name: string) =>
  `POST A_BusinessPartner HTTP/1.1\r\nContent-Type: application/json\r\n\r\n${JSON.stringify({ BusinessPartner: id, FirstName: name })}`;

async function batch(ctx: Ctx, key: string, root: string, body: string, contentType = "multipart/mixed; boundary=batch_e2e") {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: `${root}/$batch`,
    headers: { authorization: `Bearer ${key}`, "content-type": contentType },
    payload: body,
  });
  return checked(ctx, root, res);
}

E2E("V4 multipart $batch: a change set and a read go through; one forbidden part denies the whole batch", async (ctx) => {
  const ok = await batch(ctx, ctx.full, BP, multipart([[postPartner("E2EB01", "Batch")], "GET A_BusinessPartner('1000001')?$select=BusinessPartnerFullName HTTP/1.1\r\nAccept: application/json\r\n\r\n"]));
  assert.is(ok.statusCode, 200, ok.body);
  assert.match(String(ok.headers["content-type"]), /^multipart\/mixed; ?boundary=/);
  assert.match(ok.body, /HTTP\/1\.1 201 Created/);
  assert.match(ok.body, /Acme Industries/);
  assert.is(JSON.parse((await v4Partner(ctx, "E2EB01")).body).FirstName, "Batch");

  const denied = await batch(
    ctx,
    ctx.full,
    BP,
    multipart([[postPartner("E2EB02", "Never"), "DELETE A_Currency('EUR') HTTP/1.1\r\n\r\n"]]),
  );
  assertEnvelope(denied, 403, "FORBIDDEN", "API key has no access to entity 'A_Currency' (batch part 2: resource path)");
  assert.is((await v4Partner(ctx, "E2EB02")).status, 404, "no part reached the back end");
  assert.is((await direct(ctx, "/odata/v4/api-business-partner/A_Currency('EUR')")).status, 200);
});

E2E("V4 JSON $batch: allowed requests go through; a forbidden one denies the batch", async (ctx) => {
  const requests = [
    { id: "1", method: "POST", url: "A_BusinessPartner", headers: { "content-type": "application/json" }, body: { BusinessPartner: "E2EJ01", FirstName: "Jason" } },
    { id: "2", method: "GET", url: "A_BusinessPartner('1000002')?$select=BusinessPartnerFullName" },
  ];
  const ok = await batch(ctx, ctx.full, BP, JSON.stringify({ requests }), "application/json");
  assert.is(ok.statusCode, 200, ok.body);
  const answers = JSON.parse(ok.body).responses as { id: string; status: number; body: Record<string, unknown> }[];
  assert.equal(
    answers.map((r) => [r.id, r.status]).sort(),
    [
      ["1", 201],
      ["2", 200],
    ],
  );
  assert.is(answers.find((r) => r.id === "2")!.body.BusinessPartnerFullName, "Globex Corporation");
  assert.is(JSON.parse((await v4Partner(ctx, "E2EJ01")).body).FirstName, "Jason");

  const denied = await batch(
    ctx,
    ctx.full,
    BP,
    JSON.stringify({ requests: [{ ...requests[0], body: { BusinessPartner: "E2EJ02" } }, { id: "2", method: "GET", url: "A_Currency" }] }),
    "application/json",
  );
  assertEnvelope(denied, 403, "FORBIDDEN", "API key has no access to entity 'A_Currency' (batch part 2: resource path)");
  assert.is((await v4Partner(ctx, "E2EJ02")).status, 404);
});

E2E("$batch references are never resolved by CAP from stored data; an address reference is written by erplink", async (ctx) => {
  // An address reference: erplink writes A_BusinessPartner('1000002') for $1, CAP applies both parts.
  const ok = await batch(
    ctx,
    ctx.full,
    BP,
    multipart([
      [
        `PATCH A_BusinessPartner('1000002') HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"FirstName":"RefA"}`,
        `PATCH $1 HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"LastName":"RefB"}`,
      ],
    ]),
  );
  assert.is(ok.statusCode, 200, ok.body);
  const partner = JSON.parse((await v4Partner(ctx, "1000002")).body);
  assert.equal([partner.FirstName, partner.LastName], ["RefA", "RefB"]);
  const sent = ctx.proxy.received.find((r) => r.headers["x-request-id"] === ok.headers["x-request-id"])!;
  assert.ok(sent.body.toString("utf8").includes("PATCH A_BusinessPartner('1000002') HTTP/1.1\r\n"), "part 2 went out with the address");
  assert.not.ok(sent.body.toString("utf8").includes("$1"), "no reference left for CAP to resolve");

  // A created entity whose key would make CAP's Location another URL: refused before CAP sees anything.
  const attack = await batch(
    ctx,
    ctx.deep,
    BP,
    JSON.stringify({
      requests: [
        { id: "1", method: "POST", url: "A_BusinessPartner", headers: { "content-type": "application/json" }, body: { BusinessPartner: "X')/to_Address(BusinessPartner='1000001',AddressID='1", FirstName: "x" } },
        { id: "2", method: "GET", url: "$1", dependsOn: ["1"] },
      ],
    }),
    "application/json",
  );
  assert.is(attack.statusCode, 400, attack.body);
  assert.match(JSON.parse(attack.body).error.message, /^batch part 2 \(GET \$1\): \$1 cannot be referred to: /);
});

E2E("a created entity whose key a nested object feeds cannot be referred to; CAP's Secrets stay untouched", async (ctx) => {
  const secret = async () => JSON.parse((await direct(ctx, "/odata/v4/api-notes/Secrets('S1')")).body).value;
  const NOTES = "/odata/s4/API_NOTES";
  // CAP fills Notes' key folder_ID from the nested folder, then resolves $1 by writing that key, unescaped, into the URL.
  const multipartAttack = await batch(
    ctx,
    ctx.notes,
    NOTES,
    multipart([
      [
        `POST Notes HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"ID":"N2","folder":{"ID":"F1',ID='N1')/folder/owner?x=("}}`,
        `PATCH $1 HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"value":"overwritten"}`,
      ],
    ]),
  );
  assert.is(multipartAttack.statusCode, 400, multipartAttack.body);
  assert.match(JSON.parse(multipartAttack.body).error.message, /^batch part 2 \(PATCH \$1\): \$1 cannot be referred to: /);
  const jsonAttack = await batch(
    ctx,
    ctx.notes,
    "/odata/s4v2/API_NOTES",
    JSON.stringify({
      requests: [
        { id: "1", method: "POST", url: "Notes", headers: { "content-type": "application/json" }, body: { ID: "N3", folder: { ID: "F1',ID='N1')/folder?$expand=owner&x=(" } } },
        { id: "2", method: "GET", url: "$1", dependsOn: ["1"] },
      ],
    }),
    "application/json",
  );
  assert.is(jsonAttack.statusCode, 400, jsonAttack.body);
  assert.is(await secret(), "TOP SECRET");
  // Third pass: a bind whose key, decoded by CAP, holds `$'` (String.replace re-inserts the rest of the referring URL).
  const reader = json(
    await post(ctx.world.app, "/admin/api-keys", {
      name: "notes-reader",
      permissions: { s4: { API_NOTES: { Notes: ["list", "get", "create", "update", "delete"], Folders: ["get"] } } },
    }),
  ).data.key as string;
  const bindAttack = await batch(
    ctx,
    reader,
    NOTES,
    JSON.stringify({
      requests: [
        { id: "1", method: "POST", url: "Notes", headers: { "content-type": "application/json" }, body: { ID: "B1", "folder@odata.bind": "Folders('F1'',ID=''N1'')%24''%26%24expand=owner%26y=')" } },
        { id: "2", method: "GET", url: "$1/folder?$select=name", dependsOn: ["1"] },
      ],
    }),
    "application/json",
  );
  assert.is(bindAttack.statusCode, 400, bindAttack.body);
  assert.not.match(bindAttack.body, /TOP SECRET/);
  // A create with plain keys can still be referred to: CAP resolves $1 to the new note.
  const ok = await batch(
    ctx,
    ctx.notes,
    NOTES,
    multipart([
      [
        `POST Notes HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"ID":"N4","folder_ID":"F1","text":"created"}`,
        `PATCH $1 HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"text":"through $1"}`,
      ],
    ]),
  );
  assert.is(ok.statusCode, 200, ok.body);
  assert.is(JSON.parse((await direct(ctx, "/odata/v4/api-notes/Notes(folder_ID='F1',ID='N4')")).body).text, "through $1");
});

E2E("CAP decodes the whole URL before splitting the query: an encoded '&' is refused outside $filter literals, kept inside them", async (ctx) => {
  const sep = "a back end that decodes the query before splitting it (SAP CAP does) would read another option there";
  // CAP answered this with the partner's to_Address, for a key without addresses.
  assertEnvelope(
    await call(ctx, ctx.noAddr, `${BP}/A_BusinessPartner('1000001')?foo=x%26$expand%3Dto_Address`),
    400,
    "VALIDATION_ERROR",
    `query option 'foo' holds '&' in its value: ${sep}`,
  );
  assertEnvelope(
    await call(ctx, ctx.noAddr, `${BP2}/A_BusinessPartner('1000001')?foo=x%26$expand%3Dto_Address&$format=json`),
    400,
    "VALIDATION_ERROR",
    `query option 'foo' holds '&' in its value: ${sep}`,
  );
  // Inside a quoted literal CAP's grammar keeps it as data: AT&T is searched for, nothing expanded.
  const literal = await call(ctx, ctx.noAddr, `${BP}/A_BusinessPartner?$filter=LastName%20eq%20'a%26$expand%3Dto_Address'`);
  assert.is(literal.statusCode, 200, literal.body);
  assert.equal(JSON.parse(literal.body).value, []);
  // CAP's tokens for JSON objects and lists end without regard to quotes: the '&' erplink saw inside a literal split the query.
  for (const filter of ["BusinessPartner%20ne%20{'}%26$expand%3Dto_Address%26x%3D'}", "BusinessPartner%20ne%20[']%26$expand%3Dto_Address%26x%3D']"]) {
    const res = await call(ctx, ctx.noAddr, `${BP}/A_BusinessPartner?$filter=${filter}`);
    assert.is(res.statusCode, 400, res.body);
    assert.not.match(res.body, /to_Address"/);
  }
  // Its nested $search ends at the first ';', quotes or not.
  const nested = await call(ctx, ctx.notesReader, `/odata/s4/API_NOTES/Notes?$expand=folder($search=x';$expand=owner;$search=')`);
  assert.is(nested.statusCode, 400, nested.body);
  assert.not.match(nested.body, /TOP SECRET/);
  // A request id that is an entity set's name: CAP took `Notes/...` for a reference and wrote a stored key into `$Notes`.
  const idAttack = await batch(
    ctx,
    ctx.notes,
    "/odata/s4/API_NOTES",
    JSON.stringify({
      requests: [
        { id: "Notes", method: "POST", url: "Notes", headers: { "content-type": "application/json" }, body: { folder_ID: "F1", ID: "q", text: "t" } },
        { id: "n2", method: "GET", url: "Notes/$count?foo=$Notes", dependsOn: ["Notes"] },
      ],
    }),
    "application/json",
  );
  assert.is(idAttack.statusCode, 400, idAttack.body);
  assert.match(JSON.parse(idAttack.body).error.message, /its URL starts with 'Notes', the id of a request of this batch/);
});

E2E("CAP's grammar for JSON, lists, names with '\"', nested $search and lambdas: none reads Secrets through CAP", async (ctx) => {
  const NOTES = "/odata/s4/API_NOTES";
  const opaque = (ch: string, what: string) =>
    `'${ch}' is not allowed in ${what} outside a single-quoted literal: back ends disagree on where a JSON value, a list or a double-quoted string ends`;
  const refused = async (url: string, message: string, key = ctx.notesReader) => {
    const res = await call(ctx, key, url);
    assertEnvelope(res, 400, "VALIDATION_ERROR", message);
  };
  // CAP's names may hold '"' (`@a"` is one alias to it, an alias and a string to erplink): it expanded owner, a Secret.
  await refused(`${NOTES}/Folders?$expand=notes($filter=ID%20eq%20@a%22),owner($filter=ID%20ne%20@b%22)`, opaque('"', "$expand"));
  // ... and filtered on a Secret's value, and on V2, and on partners' addresses for a key without them.
  await refused(`${NOTES}/Folders?$filter=ID%20eq%20@a%22%20or%20owner/value%20eq%20'TOP%20SECRET'%20or%20ID%20eq%20@b%22`, opaque('"', "$filter"));
  await refused(
    `${BP}/A_BusinessPartner?$filter=BusinessPartner%20eq%20@a%22%20or%20to_Address/any(d:d/CityName%20eq%20'Berlin')%20or%20BusinessPartner%20eq%20@b%22`,
    opaque('"', "$filter"),
    ctx.noAddr,
  );
  // CAP ends a JSON object at the first '}', a list at the first ']', quotes or not.
  await refused(`${NOTES}/Folders?$filter=ID%20eq%20{%22x%22:%22}%20or%20owner/value%20eq%20'TOP%20SECRET'%20or%20ID%20eq%20{%22}`, opaque("{", "$filter"));
  await refused(`${NOTES}/Folders?$filter=contains(ID,[%22a])%20or%20owner/value%20eq%20'TOP%20SECRET'%20or%20contains(ID,[%22])`, opaque("[", "$filter"));
  // ... and a nested $search at the first ')': it expanded owner.
  await refused(`${NOTES}/Folders?$expand=notes($search=%22x),owner($search=%22)`, opaque('"', "$expand"));
  await refused(
    `${NOTES}/Folders?$expand=notes($search=(x),owner($search=y))`,
    "a nested $search may not hold quotes, brackets or parentheses in $expand notes: back ends disagree on where it ends",
  );
  // Inside a lambda CAP reads a path without the variable from the lambda's collection: a note's label is a Secret,
  // a folder's a Label. A key that may read labels, not secrets, filtered on the Secret's value.
  const labels = json(
    await post(ctx.world.app, "/admin/api-keys", {
      name: "notes-labels",
      permissions: { s4: { API_NOTES: { Notes: ["list", "get"], Folders: ["list", "get"], Labels: ["list", "get"] } } },
    }),
  ).data.key as string;
  assert.is((await direct(ctx, "/odata/v4/api-notes/Folders?$filter=notes/any(d:label/value%20eq%20'TOP%20SECRET')")).body.includes('"F1"'), true);
  await refused(
    `${NOTES}/Folders?$select=ID&$filter=notes/any(d:label/value%20eq%20'TOP%20SECRET')`,
    "inside a lambda, a path must start with its variable 'd' or $it in $filter: back ends disagree on where 'label/value' starts",
    labels,
  );
  // With the variable, or from $it, both readings agree.
  const own = await call(ctx, labels, `${NOTES}/Folders?$select=ID&$filter=notes/any(d:d/text%20eq%20'a%20note')`);
  assert.is(own.statusCode, 200, own.body);
  assert.equal(JSON.parse(own.body).value, [{ ID: "F1" }]);
  // A lone name is read from the notes too: a note's label (a Secret) needs Secrets.
  const lone = await call(ctx, labels, `${NOTES}/Folders?$select=ID&$filter=notes/any(d:label_ID%20eq%20'S1'%20and%20label%20ne%20null)`);
  assert.is(lone.statusCode, 403, lone.body);
  assert.match(JSON.parse(lone.body).error.message, /Secrets/);
  assert.is(JSON.parse((await direct(ctx, "/odata/v4/api-notes/Secrets('S1')")).body).value, "TOP SECRET");
});

E2E("nested options without ';', lambdas CAP reads one level up, V2 typed literals: none reads Secrets through CAP", async (ctx) => {
  const NOTES = "/odata/s4/API_NOTES";
  const grants = { Notes: ["list", "get"], Folders: ["list", "get"], Labels: ["list", "get"] };
  const key = json(
    await post(ctx.world.app, "/admin/api-keys", { name: "notes-labels-v2", permissions: { s4: { API_NOTES: grants }, s4v2: { API_NOTES: grants } } }),
  ).data.key as string;
  const refused = async (url: string, message: string) => assertEnvelope(await call(ctx, key, url), 400, "VALIDATION_ERROR", message);
  // CAP needs no ';' between nested options: the notes came back with their labels, Secrets.
  const secretLabels = await direct(ctx, "/odata/v4/api-notes/Folders?$expand=notes($top=1$expand=label)");
  assert.match(secretLabels.body, /TOP SECRET/);
  await refused(`${NOTES}/Folders?$expand=notes($top=1$expand=label)`, "malformed $top '1$expand=label' in $expand notes");
  await refused(`${NOTES}/Folders?$expand=notes($count=true$expand=label)`, "malformed $count 'true$expand=label' in $expand notes");
  await refused(
    `${NOTES}/Folders?$expand=notes($select=ID$expand=label)`,
    "malformed path 'ID$expand=label' in $select in $expand notes",
  );
  // With the ';' it is what erplink authorizes: the key has no Secrets.
  const plain = await call(ctx, key, `${NOTES}/Folders?$expand=notes($top=1;$expand=label)`);
  assert.is(plain.statusCode, 403, plain.body);
  // A lambda over a single entity whose body compares the variable: CAP rewrote it to contains() and read
  // d/label/value on the note (a Secret), where erplink authorized the folder's label.
  const lambda = "$filter=folder/any(d:d%20eq%20'zzz'%20or%20d/label/value%20eq%20'TOP%20SECRET')";
  assert.match((await direct(ctx, `/odata/v4/api-notes/Notes?${lambda}`)).body, /"N1"/);
  await refused(`${NOTES}/Notes?${lambda}`, "any needs a collection, 'folder' is a single entity in $filter");
  // CAP's V2 adapter ends time'…' at its first quote: the rest of erplink's literal was read as expression.
  const typed = (n: number) => `$filter=${encodeURIComponent(`changedAt eq time'00:00:00 or length(owner/value) eq ${n} or ID eq ''x'`)}`;
  assert.match((await direct(ctx, `/odata/v2/api-notes/Folders?${typed(10)}&$format=json`)).body, /"F1"/);
  assert.not.match((await direct(ctx, `/odata/v2/api-notes/Folders?${typed(11)}&$format=json`)).body, /"F1"/);
  await refused(`/odata/s4v2/API_NOTES/Folders?${typed(10)}&$format=json`, "a typed literal may not hold a quote (time'…') in $filter at 'time'00:00:00 or length(owner/'");
  // The adapter marks function arguments with '§§…§§' and rewrites substringof(a,b) to contains(b,a) by a pattern
  // that also matches marks inside literals: the swap moved text out of erplink's literal.
  const marked = (n: number) =>
    `$filter=${encodeURIComponent(`substringof('§§,1§§true,name) or length(owner/value) eq ${n} or startswith(name,', name)`)}`;
  assert.match((await direct(ctx, `/odata/v2/api-notes/Folders?${marked(10)}&$format=json`)).body, /"F1"/);
  assert.not.match((await direct(ctx, `/odata/v2/api-notes/Folders?${marked(11)}&$format=json`)).body, /"F1"/);
  await refused(`/odata/s4v2/API_NOTES/Folders?${marked(10)}&$format=json`, "'§§' is not allowed in $filter: a back end (SAP CAP's V2 adapter) marks function arguments with it");
});

E2E("V2 multipart $batch with a MERGE change set", async (ctx) => {
  const res = await batch(
    ctx,
    ctx.full,
    BP2,
    multipart([
      ["MERGE A_BusinessPartner('1000003') HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"SearchTerm1\":\"V2BATCH\"}"],
      "GET A_BusinessPartner('1000003')?$format=json HTTP/1.1\r\n\r\n",
    ]),
  );
  // V2 batches answer 202 Accepted; inside, CAP answers the MERGE with the entity (200).
  assert.is(res.statusCode, 202, res.body);
  assert.is(res.body.match(/HTTP\/1\.1 200 OK/g)?.length, 2);
  assert.match(res.body, /"SearchTerm1":"V2BATCH"/);
  assert.is(JSON.parse((await v4Partner(ctx, "1000003")).body).SearchTerm1, "V2BATCH");
  // As SAPUI5's V2 model writes it: the Content-ID in the request's headers, a later part navigating from it.
  const deep = await batch(
    ctx,
    ctx.deep,
    BP2,
    multipart([
      [
        "POST A_BusinessPartner HTTP/1.1\r\nContent-ID: id-1700000000000-12\r\nContent-Type: application/json\r\n\r\n{\"BusinessPartner\":\"E2EV2B\",\"FirstName\":\"Ui5\"}",
        "POST $id-1700000000000-12/to_Address HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"AddressID\":\"1\",\"CityName\":\"Porto\"}",
      ],
    ], false),
  );
  assert.is(deep.statusCode, 202, deep.body);
  assert.is(deep.body.match(/HTTP\/1\.1 201 Created/g)?.length, 2, deep.body);
  const address = await direct(ctx, "/odata/v4/api-business-partner/A_BusinessPartnerAddress(BusinessPartner='E2EV2B',AddressID='1')");
  assert.is(JSON.parse(address.body).CityName, "Porto");
  const denied = await batch(ctx, ctx.noAddr, BP2, multipart([["MERGE A_BusinessPartner('1000003') HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"SearchTerm1\":\"NO\"}"]]));
  assertEnvelope(denied, 403, "FORBIDDEN", "API key lacks permission 'update' for entity 'A_BusinessPartner' (batch part 1: resource path)");
  assert.is(JSON.parse((await v4Partner(ctx, "1000003")).body).SearchTerm1, "V2BATCH");
});

E2E("a response of several MB streams through intact", async (ctx) => {
  const path = "A_BusinessPartner?$top=10000&$orderby=BusinessPartner";
  const res = await call(ctx, ctx.full, `${BP}/${path}`);
  assert.is(res.statusCode, 200);
  const expected = await direct(ctx, `/odata/v4/api-business-partner/${path}`);
  assert.is(expected.status, 200);
  assert.ok(res.rawPayload.length > 4_000_000, `only ${res.rawPayload.length} bytes`);
  assert.is(res.rawPayload.length, Buffer.byteLength(expected.body));
  assert.ok(res.body === expected.body, "the body passes unchanged");
  const body = JSON.parse(res.body);
  assert.is(body.value.length, 10_000);
  assert.is(body.value[0].BusinessPartner, "1000001");
  // Sorted: 1000001…1000004, then the bulk rows 9000000001….
  assert.is(body.value[9_999].BusinessPartner, "9000009996");
});

E2E.run();
