/**
 * The SAP Cloud SDK for JavaScript (4.5.1) through erplink against CAP, for
 * OData V4 and V2: typed clients generated from the `$metadata` erplink
 * serves (test-support/sdk/generate.ts, cached under .tmp/sdk-clients/),
 * a real listening erplink (embedded memory store) provisioned through its
 * /admin REST API, and the SDK reaching it with a destination
 * `{ url: "<erplink>/odata/<instance>/API_BUSINESS_PARTNER", headers: { authorization: "Bearer erpl_…" } }`
 * through a recording proxy (test-support/sdk/recording-proxy.ts), so that
 * what the SDK sends on its own — its CSRF `HEAD`s, the parts of its `$batch`
 * — is asserted and shown when a test fails.
 *
 * Covered for both versions: getAll with filter/orderBy/top/select, count,
 * getByKey with a quote in the key, nested `$expand`, create, deep create,
 * update (PATCH) and replace (PUT), delete, `$batch` with a change set under
 * every sub-request path type, the SDK's CSRF fetch, server-driven paging
 * (the SDK does not follow next links: its own http-client does, through
 * erplink), and a deep create denied by erplink (403 envelope as the SDK
 * error's cause, nothing created).
 *
 * V4 and V2 share one CAP database: ids carry the version (`SDK4…`, `SDK2…`).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { desc as descV2 } from "@sap-cloud-sdk/odata-v2";
import { desc as descV4 } from "@sap-cloud-sdk/odata-v4";
import { startCapBackend, type CapBackend } from "../../test-support/cap/index.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { loadSdkClient, type SdkClient } from "../../test-support/sdk/generate.js";
import { describeExchanges, startRecordingProxy, type Exchange, type RecordingProxy } from "../../test-support/sdk/recording-proxy.js";
import * as backend from "../../test-support/recording-proxy.js";
import { assertForwardedAsAuthorized, type ForwardedService } from "../../test-support/forwarded.js";
import { parseMetadata } from "../../src/gateway/odata/metadata.js";
import { captureSdkLogs, httpCauseOf, rejection, resolveLink, sdkHttpClient, setSdkLogLevel, type SdkDestination } from "../../test-support/sdk/sdk.js";

/** Extra partners (9000000001…): more than CAP's page size of 1000, so that reads are paged. */
const BULK = 1200;
const SERVICE = "API_BUSINESS_PARTNER";
/** CAP's V4 service root: the suite observes the back end there, around erplink. */
const CAP_BP = "/odata/v4/api-business-partner";

interface Flavour {
  readonly name: "V4" | "V2";
  readonly version: "v4" | "v2";
  /** The erplink instance in front of CAP's V4 or V2 root. */
  readonly instance: "s4" | "s4v2";
  /** Keeps the rows this flavour creates apart from the other's. */
  readonly tag: "4" | "2";
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly desc: (field: any) => unknown;
}

const FLAVOURS: readonly Flavour[] = [
  { name: "V4", version: "v4", instance: "s4", tag: "4", desc: descV4 },
  { name: "V2", version: "v2", instance: "s4v2", tag: "2", desc: descV2 },
];

interface Ctx {
  cap: CapBackend;
  erplink: RunningErplink;
  /** Between the SDK and erplink: what the SDK sent and got. */
  proxy: RecordingProxy;
  /** Between erplink and CAP: what CAP received. */
  backend: backend.RecordingProxy;
  /** How many of the SDK's exchanges were checked against what CAP received. */
  checked: number;
  services: Record<"v4" | "v2", ForwardedService>;
  /** Every operation on partners and addresses. */
  full: string;
  /** Every operation on partners; only list and get on addresses. */
  noAddressCreate: string;
  clients: Record<"v4" | "v2", SdkClient>;
}

const E2E = suite<Ctx>("SAP Cloud SDK through erplink against CAP");

/** A POST to erplink's /admin REST API with the master key; expects 201. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function admin(ctx: Ctx, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${ctx.erplink.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: ctx.erplink.authorization, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.is(res.status, 201, `POST ${path}: ${text}`);
  return JSON.parse(text).data;
}

E2E.before(async (ctx) => {
  setSdkLogLevel("error");
  [ctx.cap, ctx.erplink, ctx.proxy] = await Promise.all([
    startCapBackend({ bulkBusinessPartners: BULK }),
    startErplink({ ERPLINK_DATA_RATE_PER_MINUTE: "100000" }),
    startRecordingProxy(),
  ]);
  ctx.backend = await backend.startRecordingProxy(ctx.cap.baseUrl);
  ctx.checked = 0;
  ctx.services = {} as Ctx["services"];
  const system = await admin(ctx, "/admin/systems", { name: "S4HANA" });
  for (const f of FLAVOURS) {
    await admin(ctx, `/admin/systems/${system.id}/instances`, {
      name: f.instance,
      base_url: `${ctx.backend.baseUrl}/odata/${f.version}/`,
      services: { [SERVICE]: { path: "api-business-partner" } },
      auth: { type: "basic", ...ctx.cap.credentials },
    });
  }
  const key = async (name: string, entities: Record<string, string[]>) =>
    (
      await admin(ctx, "/admin/api-keys", {
        name,
        permissions: Object.fromEntries(FLAVOURS.map((f) => [f.instance, { [SERVICE]: entities }])),
      })
    ).key as string;
  const all = ["list", "get", "create", "update", "delete"];
  ctx.full = await key("sdk-full", { A_BusinessPartner: all, A_BusinessPartnerAddress: all });
  ctx.noAddressCreate = await key("sdk-no-address-create", { A_BusinessPartner: all, A_BusinessPartnerAddress: ["list", "get"] });
  // The clients are generated from the $metadata erplink serves, as an SDK user would.
  const clients: Partial<Ctx["clients"]> = {};
  for (const f of FLAVOURS) {
    const res = await fetch(`${serviceUrl(ctx, f)}/$metadata`, { headers: { authorization: `Bearer ${ctx.full}` } });
    const metadata = await res.text();
    assert.is(res.status, 200, metadata);
    clients[f.version] = await loadSdkClient({ metadata, serviceName: SERVICE });
    assert.is(clients[f.version]!.odataVersion, f.version);
    ctx.services[f.version] = {
      upstreamRoot: `/odata/${f.version}/api-business-partner`,
      clientRoot: servicePath(f),
      model: parseMetadata(metadata),
      cap: { backend: ctx.cap, service: "API_BUSINESS_PARTNER" },
    };
  }
  ctx.clients = clients as Ctx["clients"];
});

E2E.after(async (ctx) => {
  await ctx.backend?.close();
  await ctx.proxy?.close();
  await ctx.erplink?.close();
  await ctx.cap?.stop();
});

E2E.before.each((ctx) => {
  ctx.proxy?.take();
});

// After every test: for every request the SDK sent (its CSRF fetches
// included), CAP received exactly what erplink authorized and logged as sent,
// or nothing when erplink refused it (test-support/forwarded.ts).
E2E.after.each(async (ctx) => {
  try {
    const logs = { store: ctx.erplink.erplink.store, flush: () => ctx.erplink.erplink.flushLogs() };
    for (const ex of ctx.proxy.exchanges.slice(ctx.checked)) {
      const requestId = ex.responseHeaders["x-request-id"];
      if (typeof requestId !== "string" || !ex.path.startsWith("/odata/")) continue;
      const service = ex.path.startsWith(`${servicePath(FLAVOURS[1]!)}/`) ? ctx.services.v2 : ctx.services.v4;
      const batchOrBodiless = /\/\$batch$/.test(ex.path) || ["GET", "HEAD", "DELETE"].includes(ex.method);
      await assertForwardedAsAuthorized(logs, ctx.backend, service, requestId, batchOrBodiless ? undefined : ex.requestBody);
    }
    ctx.checked = ctx.proxy.exchanges.length;
  } catch (error) {
    // uvu drops what a hook throws: say it, then fail the run.
    console.error("after each test, the differential check failed:", error);
    throw error;
  }
});

// ------------------------------------------------------------------ helpers

/** erplink's URL of the service for a flavour, no trailing slash. */
function serviceUrl(ctx: Ctx, f: Flavour): string {
  return `${ctx.erplink.baseUrl}/odata/${f.instance}/${SERVICE}`;
}

/** The path part of {@link serviceUrl}. */
function servicePath(f: Flavour): string {
  return `/odata/${f.instance}/${SERVICE}`;
}

/** The SDK destination: erplink's service URL, the data key, through the recording proxy. */
function destination(ctx: Ctx, f: Flavour, key = ctx.full): SdkDestination {
  return { url: serviceUrl(ctx, f), headers: { authorization: `Bearer ${key}` }, proxyConfiguration: ctx.proxy.proxyConfiguration };
}

/** The generated APIs of a flavour. */
function sdk(ctx: Ctx, f: Flavour) {
  const module = ctx.clients[f.version].module;
  const api = module.apiBusinessPartner();
  return { bp: api.businessPartnerApi, addr: api.businessPartnerAddressApi, batch: module.batch, changeset: module.changeset };
}

/**
 * Awaits an SDK call; on failure, throws with the SDK's error chain (which
 * carries erplink's answer) and the last exchanges the SDK had through erplink.
 */
async function run(ctx: Ctx, promise: Promise<Json>): Promise<Json> {
  try {
    return await promise;
  } catch (err) {
    const cause = httpCauseOf(err);
    const chain = cause ? cause.messages.join(" <- ") : String((err as Error)?.stack ?? err);
    throw new Error(`SDK call failed: ${chain}\n--- the SDK's last exchanges through erplink ---\n${describeExchanges(ctx.proxy.exchanges.slice(-4), 2500)}`, {
      cause: err,
    });
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** A request straight to CAP with its credentials, to observe or prepare the back end's state (paths under {@link CAP_BP} use V4). */
async function cap(ctx: Ctx, path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: Json }> {
  const { username, password } = ctx.cap.credentials;
  const res = await fetch(`${ctx.cap.baseUrl}${path}`, {
    method: init.method ?? "GET",
    headers: {
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`,
      accept: "application/json",
      ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text && /json/.test(res.headers.get("content-type") ?? "") ? JSON.parse(text) : text };
}

const keyLiteral = (id: string) => `'${encodeURIComponent(id.replace(/'/g, "''"))}'`;

/** A partner as CAP holds it (status 404 when it does not exist). */
const capPartner = (ctx: Ctx, id: string) => cap(ctx, `${CAP_BP}/A_BusinessPartner(${keyLiteral(id)})`);

/** The addresses of a partner as CAP holds them, by AddressID: [AddressID, CityName]. */
async function capAddresses(ctx: Ctx, id: string): Promise<[string, string][]> {
  const res = await cap(ctx, `${CAP_BP}/A_BusinessPartnerAddress?$filter=BusinessPartner%20eq%20${keyLiteral(id)}&$orderby=AddressID`);
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.value.map((a: Json) => [a.AddressID, a.CityName]);
}

/** Creates a partner straight in CAP (the starting point of update, delete and batch tests). */
async function seedPartner(ctx: Ctx, entity: Record<string, unknown>): Promise<void> {
  const res = await cap(ctx, `${CAP_BP}/A_BusinessPartner`, { method: "POST", body: entity });
  assert.is(res.status, 201, JSON.stringify(res.body));
}

/** The request lines of the parts of a multipart `$batch` body, in order: `GET /A_BusinessPartner(…)`. */
function batchPartLines(body: string): string[] {
  return [...body.matchAll(/^(GET|POST|PUT|PATCH|MERGE|DELETE) (\S+) HTTP\/1\.1\r?$/gm)].map((m) => `${m[1]} ${m[2]}`);
}

/** A batch response as text, for messages (the SDK's objects are circular). */
function showResponse(r: Json): string {
  const one = (x: Json) => ({ responseType: x?.responseType, httpCode: x?.httpCode, body: x?.body });
  return JSON.stringify(r?.responses ? { responses: r.responses.map(one) } : one(r));
}

/** The modifying exchanges (not the CSRF HEADs, not reads) of a list. */
const writes = (list: readonly Exchange[]) => list.filter((e) => e.method !== "HEAD" && e.method !== "GET");

/**
 * Checks the SDK's CSRF fetch, the first of `exchanges`: `HEAD <service>/<resource>/`
 * with `X-CSRF-Token: Fetch` and the data key, answered by erplink (200, its
 * token; nothing reaches CAP), and every write after it carries that token.
 */
function checkCsrfFetch(ctx: Ctx, f: Flavour, exchanges: Exchange[], resource: string): void {
  const head = exchanges[0];
  const shown = describeExchanges(exchanges, 600);
  assert.ok(head !== undefined, "the SDK sent nothing");
  assert.equal(
    [`${head.method} ${head.path}`, head.requestHeaders["x-csrf-token"], head.requestHeaders.authorization, head.status],
    [`HEAD ${servicePath(f)}/${resource}/`, "Fetch", `Bearer ${ctx.full}`, 200],
    shown,
  );
  const token = head.responseHeaders["x-csrf-token"];
  assert.match(String(token), /^[A-Za-z0-9_-]{43}$/, shown);
  assert.equal(ctx.backend.received.filter((r) => r.headers["x-request-id"] === head.responseHeaders["x-request-id"]), [], "the fetch reached CAP");
  const after = writes(exchanges);
  assert.ok(after.length > 0, shown);
  assert.equal(after.map((e) => e.requestHeaders["x-csrf-token"]), after.map(() => token), `the writes carry erplink's token: ${shown}`);
}

/** Runs `act` with the SDK's log captured; asserts it logged no CSRF warning or error. */
async function withoutCsrfWarnings<T>(act: () => Promise<T>): Promise<T> {
  const logs = captureSdkLogs();
  try {
    return await act();
  } finally {
    const lines = logs.stop();
    assert.equal(lines.filter((l) => /csrf/i.test(`${l.context} ${l.message}`)), [], "the SDK logged no CSRF warning or error");
  }
}

// ------------------------------------------------------------------ tests

for (const f of FLAVOURS) {
  const N = f.name;

  E2E(`${N} getAll with filter, orderBy (desc), top and select returns exactly the expected partners`, async (ctx) => {
    const { bp } = sdk(ctx, f);
    const S = bp.schema;
    const rows = await run(
      ctx,
      bp
        .requestBuilder()
        .getAll()
        .select(S.BUSINESS_PARTNER, S.BUSINESS_PARTNER_FULL_NAME)
        // Organizations among the seeded partners (the bulk rows, 9…, sort after '9').
        .filter(S.BUSINESS_PARTNER_CATEGORY.equals("2"), S.BUSINESS_PARTNER.lessThan("9"))
        .orderBy(f.desc(S.BUSINESS_PARTNER_FULL_NAME))
        .top(2)
        .execute(destination(ctx, f)),
    );
    assert.equal(
      rows.map((r: Json) => [r.businessPartner, r.businessPartnerFullName, r.searchTerm1]),
      [
        ["1000004", "Initech GmbH", undefined],
        ["1000002", "Globex Corporation", undefined],
      ],
    );
  });

  E2E(`${N} count: all partners (as CAP counts them) and a filtered count`, async (ctx) => {
    const { bp } = sdk(ctx, f);
    const total = await run(ctx, bp.requestBuilder().getAll().count().execute(destination(ctx, f)));
    const direct = await cap(ctx, `${CAP_BP}/A_BusinessPartner/$count`);
    assert.is(total, Number(direct.body));
    assert.ok(total >= 5 + BULK, `${total}`);
    const persons = await run(
      ctx,
      bp.requestBuilder().getAll().filter(bp.schema.BUSINESS_PARTNER_CATEGORY.equals("1")).count().execute(destination(ctx, f)),
    );
    assert.is(persons, 2, "1000003 and O'Neil");
  });

  E2E(`${N} getByKey with a quote in the key (O'Neil)`, async (ctx) => {
    const { bp } = sdk(ctx, f);
    const p = await run(ctx, bp.requestBuilder().getByKey("O'Neil").execute(destination(ctx, f)));
    assert.equal(
      [p.businessPartner, p.businessPartnerFullName, p.firstName, p.lastName, p.searchTerm1, p.businessPartnerIsBlocked],
      ["O'Neil", "Shaquille O'Neil", "Shaquille", "O'Neil", "ONEIL", false],
    );
  });

  E2E(`${N} nested $expand: partner -> to_Address -> to_BusinessPartner, with select`, async (ctx) => {
    const { bp, addr } = sdk(ctx, f);
    const S = bp.schema;
    const A = addr.schema;
    const request =
      f.version === "v4"
        ? bp
            .requestBuilder()
            .getByKey("1000001")
            .select(S.BUSINESS_PARTNER_FULL_NAME)
            .expand(S.TO_ADDRESS.select(A.ADDRESS_ID, A.CITY_NAME).orderBy(A.ADDRESS_ID).expand(A.TO_BUSINESS_PARTNER.select(S.SEARCH_TERM_1)))
        : bp
            .requestBuilder()
            .getByKey("1000001")
            .select(S.BUSINESS_PARTNER_FULL_NAME, S.TO_ADDRESS.select(A.ADDRESS_ID, A.CITY_NAME, A.TO_BUSINESS_PARTNER.select(S.SEARCH_TERM_1)));
    const p = await run(ctx, request.execute(destination(ctx, f)));
    assert.is(p.businessPartnerFullName, "Acme Industries");
    assert.equal(
      p.toAddress.map((a: Json) => [a.addressId, a.cityName, a.toBusinessPartner?.searchTerm1]).sort(),
      [
        ["1", "Berlin", "ACME"],
        ["2", "Hamburg", "ACME"],
      ],
    );
  });

  E2E(`${N} create: 201, the entity comes back, CAP holds it`, async (ctx) => {
    const { bp } = sdk(ctx, f);
    const id = `SDK${f.tag}C1`;
    const created = await run(
      ctx,
      bp.requestBuilder().create(bp.entityBuilder().businessPartner(id).firstName("Ada").lastName("Lovelace").build()).execute(destination(ctx, f)),
    );
    assert.equal([created.businessPartner, created.firstName, created.lastName], [id, "Ada", "Lovelace"]);
    const post = writes(ctx.proxy.take());
    assert.equal(
      post.map((e) => [e.method, e.path, e.status]),
      [["POST", `${servicePath(f)}/A_BusinessPartner`, 201]],
      describeExchanges(post),
    );
    const row = await capPartner(ctx, id);
    assert.is(row.status, 200);
    assert.equal([row.body.FirstName, row.body.LastName], ["Ada", "Lovelace"]);
  });

  E2E(`${N} deep create: a partner with two addresses (key allowed to create both)`, async (ctx) => {
    const { bp, addr } = sdk(ctx, f);
    const id = `SDK${f.tag}D1`;
    const entity = bp
      .entityBuilder()
      .businessPartner(id)
      .firstName("Deep")
      .toAddress([addr.entityBuilder().addressId("1").cityName("Lisbon").build(), addr.entityBuilder().addressId("2").cityName("Porto").build()])
      .build();
    const created = await run(ctx, bp.requestBuilder().create(entity).execute(destination(ctx, f)));
    assert.is(created.businessPartner, id);
    assert.equal(
      created.toAddress.map((a: Json) => [a.businessPartner, a.addressId, a.cityName]),
      [
        [id, "1", "Lisbon"],
        [id, "2", "Porto"],
      ],
    );
    assert.is((await capPartner(ctx, id)).body.FirstName, "Deep");
    assert.equal(await capAddresses(ctx, id), [
      ["1", "Lisbon"],
      ["2", "Porto"],
    ]);
  });

  E2E(`${N} update() sends PATCH with the changed property only (no If-Match: CAP has no ETags)`, async (ctx) => {
    const { bp } = sdk(ctx, f);
    const id = `SDK${f.tag}U1`;
    await seedPartner(ctx, { BusinessPartner: id, FirstName: "Ada", LastName: "Lovelace", SearchTerm1: "ADA" });
    const entity = await run(ctx, bp.requestBuilder().getByKey(id).execute(destination(ctx, f)));
    entity.firstName = "Augusta";
    ctx.proxy.take();
    const updated = await run(ctx, bp.requestBuilder().update(entity).execute(destination(ctx, f)));
    assert.is(updated.firstName, "Augusta");
    const sent = writes(ctx.proxy.take());
    assert.equal(
      sent.map((e) => [e.method, e.path, e.requestHeaders["if-match"], JSON.parse(e.requestBody)]),
      [["PATCH", `${servicePath(f)}/A_BusinessPartner(BusinessPartner='${id}')`, undefined, { FirstName: "Augusta" }]],
      describeExchanges(sent),
    );
    // CAP answers a V4 PATCH with the entity (200), a V2 one with 204, as SAP Gateway does.
    assert.is(sent[0].status, f.version === "v4" ? 200 : 204, describeExchanges(sent));
    const row = (await capPartner(ctx, id)).body;
    assert.equal([row.FirstName, row.LastName, row.SearchTerm1], ["Augusta", "Lovelace", "ADA"]);
  });

  E2E(`${N} update().replaceWholeEntityWithPut() sends PUT with the whole entity`, async (ctx) => {
    const { bp } = sdk(ctx, f);
    const id = `SDK${f.tag}P1`;
    await seedPartner(ctx, { BusinessPartner: id, FirstName: "Ada", LastName: "Lovelace", SearchTerm1: "ADA" });
    const entity = await run(ctx, bp.requestBuilder().getByKey(id).execute(destination(ctx, f)));
    entity.lastName = "King";
    entity.searchTerm1 = null;
    ctx.proxy.take();
    await run(ctx, bp.requestBuilder().update(entity).replaceWholeEntityWithPut().execute(destination(ctx, f)));
    const sent = writes(ctx.proxy.take());
    assert.equal(
      sent.map((e) => [e.method, e.path, e.status]),
      [["PUT", `${servicePath(f)}/A_BusinessPartner(BusinessPartner='${id}')`, f.version === "v4" ? 200 : 204]],
      describeExchanges(sent),
    );
    const body = JSON.parse(sent[0].requestBody);
    assert.equal([body.BusinessPartner, body.FirstName, body.LastName, body.SearchTerm1], [id, "Ada", "King", null]);
    const row = (await capPartner(ctx, id)).body;
    assert.equal([row.FirstName, row.LastName, row.SearchTerm1], ["Ada", "King", null]);
  });

  E2E(`${N} delete: 204 and CAP no longer holds the partner`, async (ctx) => {
    const { bp } = sdk(ctx, f);
    const id = `SDK${f.tag}X1`;
    await seedPartner(ctx, { BusinessPartner: id, FirstName: "Gone" });
    await run(ctx, bp.requestBuilder().delete(id).execute(destination(ctx, f)));
    const sent = writes(ctx.proxy.take());
    assert.equal(
      sent.map((e) => [e.method, e.path, e.status]),
      [["DELETE", `${servicePath(f)}/A_BusinessPartner(BusinessPartner='${id}')`, 204]],
      describeExchanges(sent),
    );
    assert.is((await capPartner(ctx, id)).status, 404);
  });

  // $batch: a read plus a change set (create + update), under each sub-request path type.
  // With the destination at the service root (generated base path "/"), the default,
  // relativeToService and relativeToEntity all write `/A_BusinessPartner(…)`, an
  // absolute path that SAP Gateway reads as relative to the service root; `absolute`
  // writes the full URL. `origin` cases put erplink's origin in the destination and
  // the service path in the requests' base path, as SAP's own clients carry it
  // (`/sap/opu/odata/sap/API_BUSINESS_PARTNER`): the default then writes
  // `/odata/<instance>/API_BUSINESS_PARTNER/A_BusinessPartner(…)`, relativeToEntity
  // still `/A_BusinessPartner(…)`.
  const batchCases = [
    { label: "default path type", pathType: undefined, origin: false, prefix: "/" },
    { label: "relativeToService", pathType: "relativeToService", origin: false, prefix: "/" },
    { label: "relativeToEntity", pathType: "relativeToEntity", origin: false, prefix: "/" },
    { label: "absolute", pathType: "absolute", origin: false, prefix: "absolute" },
    { label: "default path type, service path as base path", pathType: undefined, origin: true, prefix: "service" },
    { label: "relativeToEntity, service path as base path", pathType: "relativeToEntity", origin: true, prefix: "/" },
  ] as const;
  batchCases.forEach((c, i) => {
    E2E(`${N} $batch with a read and a change set (create + update), sub-request paths ${c.label}`, async (ctx) => {
      const { bp, batch, changeset } = sdk(ctx, f);
      const created = `SDK${f.tag}B${i}N`;
      const updated = `SDK${f.tag}B${i}U`;
      await seedPartner(ctx, { BusinessPartner: updated, FirstName: "Before", SearchTerm1: "BEFORE" });
      const target = await run(ctx, bp.requestBuilder().getByKey(updated).execute(destination(ctx, f)));
      target.searchTerm1 = "BATCHED";
      ctx.proxy.take();

      const base = servicePath(f);
      const dest = c.origin ? { ...destination(ctx, f), url: ctx.erplink.baseUrl } : destination(ctx, f);
      const at = <T extends { setBasePath(p: string): T }>(rb: T): T => (c.origin ? rb.setBasePath(base) : rb);
      const request = at(
        batch(
          at(bp.requestBuilder().getByKey("1000001")),
          changeset(at(bp.requestBuilder().create(bp.entityBuilder().businessPartner(created).firstName("Batch").build())), at(bp.requestBuilder().update(target))),
        ),
      );
      if (c.pathType) request.withSubRequestPathType(c.pathType);
      const responses = await run(ctx, request.execute(dest));

      // What the SDK wrote: the parts' request lines.
      const post = writes(ctx.proxy.take());
      assert.equal(post.map((e) => `${e.method} ${e.path}`), [`POST ${base}/$batch`], describeExchanges(post));
      const prefix = c.prefix === "absolute" ? `${serviceUrl(ctx, f)}/` : c.prefix === "service" ? `${base}/` : "/";
      assert.equal(
        batchPartLines(post[0].requestBody),
        [`GET ${prefix}A_BusinessPartner(BusinessPartner='1000001')`, `POST ${prefix}A_BusinessPartner`, `PATCH ${prefix}A_BusinessPartner(BusinessPartner='${updated}')`],
        post[0].requestBody,
      );
      // What came back: V4 answers 200, V2 202; inside, the read and both writes succeeded.
      assert.is(post[0].status, f.version === "v4" ? 200 : 202, describeExchanges(post));
      assert.is(responses.length, 2);
      assert.ok(responses[0].isReadResponse(), showResponse(responses[0]));
      assert.equal(
        responses[0].as(bp).map((p: Json) => [p.businessPartner, p.businessPartnerFullName]),
        [["1000001", "Acme Industries"]],
      );
      assert.ok(responses[1].isWriteResponses(), showResponse(responses[1]));
      assert.equal(
        responses[1].responses.map((r: Json) => r.httpCode),
        [201, 200],
      );
      assert.is(responses[1].responses[0].as(bp).businessPartner, created);
      // And CAP holds the result.
      assert.is((await capPartner(ctx, created)).body.FirstName, "Batch");
      assert.is((await capPartner(ctx, updated)).body.SearchTerm1, "BATCHED");
    });
  });

  // The SDK fetches a CSRF token before every modifying request: HEAD on the
  // request's URL plus "/" with X-CSRF-Token: Fetch. erplink answers it with a
  // token of its own, which the SDK sends back on the write, so its log holds
  // no "Failed to get CSRF token".
  E2E(`${N} CSRF fetch before a create: HEAD <entity set>/ gets erplink's token, the POST carries it, no CSRF warning`, async (ctx) => {
    const { bp } = sdk(ctx, f);
    const id = `SDK${f.tag}T1`;
    await withoutCsrfWarnings(() => run(ctx, bp.requestBuilder().create(bp.entityBuilder().businessPartner(id).firstName("Csrf").build()).execute(destination(ctx, f))));
    const sent = ctx.proxy.take();
    assert.equal([sent.at(-1)?.method, sent.at(-1)?.status], ["POST", 201], describeExchanges(sent, 600));
    checkCsrfFetch(ctx, f, sent, "A_BusinessPartner");
  });

  E2E(`${N} CSRF fetch before an update: HEAD <entity>/ gets erplink's token, the PATCH carries it, no CSRF warning`, async (ctx) => {
    const { bp } = sdk(ctx, f);
    const id = `SDK${f.tag}T2`;
    await seedPartner(ctx, { BusinessPartner: id, FirstName: "Csrf" });
    const entity = await run(ctx, bp.requestBuilder().getByKey(id).execute(destination(ctx, f)));
    entity.lastName = "Token";
    ctx.proxy.take();
    await withoutCsrfWarnings(() => run(ctx, bp.requestBuilder().update(entity).execute(destination(ctx, f))));
    const sent = ctx.proxy.take();
    assert.equal([sent.at(-1)?.method, sent.at(-1)?.status], ["PATCH", f.version === "v4" ? 200 : 204], describeExchanges(sent, 600));
    checkCsrfFetch(ctx, f, sent, `A_BusinessPartner(BusinessPartner='${id}')`);
  });

  E2E(`${N} CSRF fetch before a $batch: HEAD $batch/ gets erplink's token, the $batch carries it, no CSRF warning`, async (ctx) => {
    const { bp, batch } = sdk(ctx, f);
    await withoutCsrfWarnings(() => run(ctx, batch(bp.requestBuilder().getByKey("1000001")).execute(destination(ctx, f))));
    const sent = ctx.proxy.take();
    // CAP's V2 adapter answers a $batch 202.
    assert.equal([sent.at(-1)?.method, sent.at(-1)?.status], ["POST", f.version === "v4" ? 200 : 202], describeExchanges(sent, 600));
    checkCsrfFetch(ctx, f, sent, "$batch");
  });

  E2E(`${N} server-driven paging: the SDK's http-client follows the next link through erplink`, async (ctx) => {
    const { bp } = sdk(ctx, f);
    const S = bp.schema;
    const d = destination(ctx, f);
    // The bulk rows only (9000000001…9000001200): CAP pages them by 1000.
    const first = await run(
      ctx,
      bp
        .requestBuilder()
        .getAll()
        .select(S.BUSINESS_PARTNER)
        .filter(S.BUSINESS_PARTNER.greaterOrEqual("9"), S.BUSINESS_PARTNER.lessThan("A"))
        .orderBy(S.BUSINESS_PARTNER)
        .executeRaw(d),
    );
    const requestUrl = ctx.proxy.take().at(-1)!.url;
    const page1 = f.version === "v4" ? first.data.value : first.data.d.results;
    const link: string = f.version === "v4" ? first.data["@odata.nextLink"] : first.data.d.__next;
    assert.is(page1.length, 1000);
    assert.type(link, "string", `no next link in ${JSON.stringify(Object.keys(f.version === "v4" ? first.data : first.data.d))}`);

    // The next link must lead back into erplink's service root (CAP writes 127.0.0.1 as localhost).
    const next = resolveLink(requestUrl, link);
    const u = new URL(next);
    assert.equal(
      [u.protocol, ["127.0.0.1", "localhost"].includes(u.hostname), u.port, u.pathname],
      ["http:", true, String(ctx.erplink.port), `${servicePath(f)}/A_BusinessPartner`],
      `next link ${link} (resolved: ${next}) does not point at erplink's service root ${serviceUrl(ctx, f)}/`,
    );
    const second = await run(ctx, sdkHttpClient(f.version)(d, { method: "get", url: next, headers: { accept: "application/json" } }));
    assert.is(second.status, 200);
    const page2 = f.version === "v4" ? second.data.value : second.data.d.results;
    assert.is(f.version === "v4" ? second.data["@odata.nextLink"] : second.data.d.__next, undefined, "only two pages");
    const ids = [...page1, ...page2].map((r: Json) => r.BusinessPartner);
    assert.equal(
      ids,
      Array.from({ length: BULK }, (_, i) => `9${String(i + 1).padStart(9, "0")}`),
    );
  });

  E2E(`${N} a deep create by a key without create on A_BusinessPartnerAddress fails with erplink's 403 envelope as the cause; nothing is created`, async (ctx) => {
    const { bp, addr } = sdk(ctx, f);
    const id = `SDK${f.tag}N1`;
    const d = destination(ctx, f, ctx.noAddressCreate);
    const entity = bp
      .entityBuilder()
      .businessPartner(id)
      .firstName("Denied")
      .toAddress([addr.entityBuilder().addressId("1").cityName("Nowhere").build()])
      .build();
    const err = await rejection(bp.requestBuilder().create(entity).execute(d));
    const message = "API key lacks permission 'create' for entity 'A_BusinessPartnerAddress'";
    const cause = httpCauseOf(err);
    const shown = describeExchanges(ctx.proxy.exchanges.slice(-1));
    assert.ok(cause !== undefined, `no HTTP answer in the error chain: ${String((err as Error)?.stack ?? err)}`);
    assert.is(cause.status, 403, shown);
    assert.equal(cause.data, { error: { code: "FORBIDDEN", message, requestId: cause.headers["x-request-id"] } }, shown);
    assert.ok(
      cause.messages.some((m) => m.includes(message)),
      `the SDK's error messages do not name the denial: ${cause.messages.join(" <- ")}`,
    );
    assert.is((await capPartner(ctx, id)).status, 404, "the partner must not exist");
    assert.equal(await capAddresses(ctx, id), [], "no address must exist");
    // The same key creates the partner alone.
    const alone = await run(ctx, bp.requestBuilder().create(bp.entityBuilder().businessPartner(id).firstName("Alone").build()).execute(d));
    assert.is(alone.firstName, "Alone");
    assert.equal(await capAddresses(ctx, id), []);
  });
}

E2E.run();
