/**
 * The SAP Cloud SDK for JavaScript (4.5.1) through erplink against SAP's
 * Fiori elements mock server (test-support/mockserver) serving SAP's
 * published API_SALES_ORDER_SRV and API_BUSINESS_PARTNER (OData V2): typed
 * clients generated from the `$metadata` erplink serves (which is SAP's EDMX
 * from third_party/sap-edmx/, byte for byte; test-support/sdk/generate.ts,
 * cached under .tmp/sdk-clients/), a real listening erplink provisioned
 * through its /admin REST API, and the SDK reaching it with a destination
 * `{ url: "<erplink>/odata/sap/<service>", headers: { authorization: "Bearer erpl_…" } }`
 * through a recording proxy (test-support/sdk/recording-proxy.ts).
 *
 * After every test, every exchange the SDK had with erplink (its CSRF
 * `HEAD`s included) is judged (test-support/sdk/forwarded.ts): the mock
 * server received exactly what erplink authorized and logged as sent, or
 * nothing when erplink refused, and what its data layer read and wrote is
 * covered by what erplink authorized (the mock server's effect oracle).
 *
 * Covered: reads through the generated client (getAll with filter, top and
 * select; getByKey with a to-many `$expand`; on both services) and erplink's
 * 403 envelope as the SDK error's cause for keys that may not; the function
 * imports `releaseApprovalRequest` and `rejectApprovalRequest` through the
 * generated operations, refused without the `invoke` grant (the order stays
 * as it was) and run with it (the order's approval status changes, read
 * straight from the mock server); a create and an update with the SDK's CSRF
 * fetch before them; a `$batch` with a read and a change set; a function
 * import inside a `$batch` change set as the SDK serializes it; the SDK's
 * CSRF fetches answered by erplink with its own token, which the writes and
 * `$batch`es carry, with no CSRF warning in the SDK's log.
 *
 * The mock server's data lives in its process: every run starts from the
 * rows in test-support/mockserver/data/, and the tests below change them in
 * order (5000001 released, 5000002 rejected, 5000003 updated, 5000100 created).
 */
import { readFile } from "node:fs/promises";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parseMetadata } from "../../src/gateway/odata/metadata.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";
import type { ForwardedService } from "../../test-support/forwarded.js";
import { startMockServer, type MockServer } from "../../test-support/mockserver/index.js";
import * as backend from "../../test-support/recording-proxy.js";
import { assertExchangesForwardedAsAuthorized, logEntryOf } from "../../test-support/sdk/forwarded.js";
import { loadSdkClient, type SdkClient } from "../../test-support/sdk/generate.js";
import { describeExchanges, startRecordingProxy, type Exchange, type RecordingProxy } from "../../test-support/sdk/recording-proxy.js";
import {
  assertErplinkRefusal,
  batchPartLines,
  captureSdkLogs,
  httpCauseOf,
  rejection,
  setSdkLogLevel,
  showBatchResponse,
  type SdkDestination,
} from "../../test-support/sdk/sdk.js";

const SO = "API_SALES_ORDER_SRV";
const BP = "API_BUSINESS_PARTNER";
type Service = typeof SO | typeof BP;
const SERVICES: readonly Service[] = [SO, BP];
/** The erplink instance in front of the mock server's `/sap/opu/odata/sap/`. */
const INSTANCE = "sap";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface Ctx {
  mock: MockServer;
  erplink: RunningErplink;
  /** Between the SDK and erplink: what the SDK sent and got. */
  proxy: RecordingProxy;
  /** Between erplink and the mock server: what the mock server received. */
  backend: backend.RecordingProxy;
  /** How many of the SDK's exchanges have been judged. */
  checked: number;
  services: Record<Service, ForwardedService>;
  clients: Record<Service, SdkClient>;
  keys: {
    /** list and get on orders, items, partners and addresses. */
    reader: string;
    /** get on A_SalesOrder only. */
    orderGetOnly: string;
    /** Orders: list, get, create, update; items: list, get; no operation. */
    clerk: string;
    /** list and get on every entity set of the sales order service (`*`); no operation. */
    browser: string;
    /** Orders: list, get; an entry named releaseApprovalRequest without invoke. */
    namedNoInvoke: string;
    /** Orders: list, get; invoke releaseApprovalRequest. */
    releaser: string;
    /** Orders: list, get; invoke releaseApprovalRequest and rejectApprovalRequest. */
    approver: string;
  };
}

const E2E = suite<Ctx>("SAP Cloud SDK through erplink against SAP's mock server");

/** A POST to erplink's /admin REST API with the master key; expects 201. */
async function admin(ctx: Ctx, path: string, body: unknown): Promise<Json> {
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
  try {
    setSdkLogLevel("error");
    [ctx.mock, ctx.erplink, ctx.proxy] = await Promise.all([
      startMockServer(),
      startErplink({ ERPLINK_DATA_RATE_PER_MINUTE: "100000" }),
      startRecordingProxy(),
    ]);
    ctx.backend = await backend.startRecordingProxy(ctx.mock.baseUrl);
    ctx.checked = 0;
    const system = await admin(ctx, "/admin/systems", { name: "S4HANA" });
    await admin(ctx, `/admin/systems/${system.id}/instances`, {
      name: INSTANCE,
      base_url: `${ctx.backend.baseUrl}/sap/opu/odata/sap/`,
      services: { [SO]: { path: SO }, [BP]: { path: BP } },
      auth: { type: "basic", ...ctx.mock.credentials },
    });
    const key = async (name: string, permissions: Partial<Record<Service, Record<string, string[]>>>) =>
      (await admin(ctx, "/admin/api-keys", { name, permissions: { [INSTANCE]: permissions } })).key as string;
    const read = ["list", "get"];
    ctx.keys = {
      reader: await key("sdk-reader", { [SO]: { A_SalesOrder: read, A_SalesOrderItem: read }, [BP]: { A_BusinessPartner: read, A_BusinessPartnerAddress: read } }),
      orderGetOnly: await key("sdk-order-get-only", { [SO]: { A_SalesOrder: ["get"] } }),
      clerk: await key("sdk-clerk", { [SO]: { A_SalesOrder: ["list", "get", "create", "update"], A_SalesOrderItem: read } }),
      browser: await key("sdk-browser", { [SO]: { "*": read } }),
      namedNoInvoke: await key("sdk-named-no-invoke", { [SO]: { A_SalesOrder: read, releaseApprovalRequest: read } }),
      releaser: await key("sdk-releaser", { [SO]: { A_SalesOrder: read, releaseApprovalRequest: ["invoke"] } }),
      approver: await key("sdk-approver", { [SO]: { A_SalesOrder: read, releaseApprovalRequest: ["invoke"], rejectApprovalRequest: ["invoke"] } }),
    };
    // The clients are generated from the $metadata erplink serves, as an SDK user would.
    ctx.services = {} as Ctx["services"];
    ctx.clients = {} as Ctx["clients"];
    for (const service of SERVICES) {
      const res = await fetch(`${serviceUrl(ctx, service)}/$metadata`, { headers: { authorization: `Bearer ${ctx.keys.reader}` } });
      const metadata = await res.text();
      assert.is(res.status, 200, metadata);
      assert.ok(metadata === (await readFile(new URL(`../../third_party/sap-edmx/${service}.edmx`, import.meta.url), "utf8")), `${service}: erplink's $metadata is not SAP's EDMX`);
      ctx.clients[service] = await loadSdkClient({ metadata, serviceName: service });
      assert.is(ctx.clients[service].odataVersion, "v2");
      ctx.services[service] = {
        upstreamRoot: ctx.mock.roots[service].replace(/\/$/, ""),
        clientRoot: servicePath(service),
        model: parseMetadata(metadata),
        mock: ctx.mock,
      };
    }
  } catch (error) {
    // uvu drops what a hook throws: say it.
    console.error("setting up the SAP Cloud SDK mock server suite failed:", error);
    throw error;
  }
});

E2E.after(async (ctx) => {
  await ctx.backend?.close();
  await ctx.proxy?.close();
  await ctx.erplink?.close();
  await ctx.mock?.stop();
});

E2E.before.each((ctx) => {
  ctx.proxy?.take();
});

// After every test: every request the SDK sent (its CSRF fetches included)
// reached the mock server exactly as erplink authorized and logged it, or
// not at all when erplink refused it, and the mock server's data layer did
// nothing erplink did not authorize (test-support/sdk/forwarded.ts).
E2E.after.each(async (ctx) => {
  try {
    const fresh = ctx.proxy.exchanges.slice(ctx.checked);
    const judged = await assertExchangesForwardedAsAuthorized(fresh, {
      logs: { store: ctx.erplink.erplink.store, flush: () => ctx.erplink.erplink.flushLogs() },
      backend: ctx.backend,
      serviceOf: (path) => SERVICES.map((s) => ctx.services[s]).find((s) => path === s.clientRoot || path.startsWith(`${s.clientRoot}/`)),
    });
    assert.is(judged, fresh.length, `every exchange goes to a service: ${describeExchanges(fresh, 300)}`);
    ctx.checked = ctx.proxy.exchanges.length;
  } catch (error) {
    // uvu drops what a hook throws: say it, then fail the run.
    console.error("after each test, the differential check failed:", error);
    throw error;
  }
});

// ------------------------------------------------------------------ helpers

/** erplink's URL of a service, no trailing slash. */
function serviceUrl(ctx: Ctx, service: Service): string {
  return `${ctx.erplink.baseUrl}${servicePath(service)}`;
}

/** The path part of {@link serviceUrl}. */
function servicePath(service: Service): string {
  return `/odata/${INSTANCE}/${service}`;
}

/** The SDK destination: erplink's service URL, a data key, through the recording proxy. */
function destination(ctx: Ctx, service: Service, key: string): SdkDestination {
  return { url: serviceUrl(ctx, service), headers: { authorization: `Bearer ${key}` }, proxyConfiguration: ctx.proxy.proxyConfiguration };
}

/** The generated APIs. */
function sdk(ctx: Ctx) {
  const so = ctx.clients[SO].module;
  const soApi = so.apiSalesOrderSrv();
  const bpApi = ctx.clients[BP].module.apiBusinessPartner();
  return {
    order: soApi.salesOrderApi,
    item: soApi.salesOrderItemApi,
    partner: bpApi.businessPartnerApi,
    address: bpApi.businessPartnerAddressApi,
    /** The function imports, as the generated `operations` object holds them. */
    operations: so.operations as Record<"releaseApprovalRequest" | "rejectApprovalRequest", (p: { salesOrder: string }) => Json>,
    batch: so.batch,
    changeset: so.changeset,
  };
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

/** A request straight to the mock server with its credentials (no request id: it leaves no effects). */
async function mock(ctx: Ctx, service: Service, path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: Json }> {
  const { username, password } = ctx.mock.credentials;
  const res = await fetch(`${ctx.mock.baseUrl}${ctx.mock.roots[service]}${path}`, {
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

/** A sales order as the mock server holds it. */
async function mockOrder(ctx: Ctx, id: string): Promise<Json> {
  const res = await mock(ctx, SO, `A_SalesOrder('${id}')`);
  assert.is(res.status, 200, `A_SalesOrder('${id}') straight from the mock server: ${JSON.stringify(res.body)}`);
  return res.body.d;
}

/** `SalesDocApprovalStatus` of an order, straight from the mock server. */
const approvalStatus = async (ctx: Ctx, id: string): Promise<string> => (await mockOrder(ctx, id)).SalesDocApprovalStatus;

/** What the mock server received for a request erplink answered with `requestId`. */
function receivedFor(ctx: Ctx, requestId: unknown): backend.Received[] {
  return ctx.backend.received.filter((r) => r.headers["x-request-id"] === requestId);
}

/** The modifying exchanges (not the CSRF HEADs, not reads) of a list. */
const writes = (list: readonly Exchange[]) => list.filter((e) => e.method !== "HEAD" && e.method !== "GET");

/** erplink's error message for an exchange, from its request log ("" when it succeeded). */
async function loggedError(ctx: Ctx, e: Exchange): Promise<string> {
  const entry = await logEntryOf({ store: ctx.erplink.erplink.store, flush: () => ctx.erplink.erplink.flushLogs() }, String(e.responseHeaders["x-request-id"]));
  return entry.errorMessage;
}

// ------------------------------------------------------------------ reads

E2E("getAll with filter, top and select: exactly the expected orders, unselected properties absent", async (ctx) => {
  const { order } = sdk(ctx);
  const S = order.schema;
  const rows = await run(
    ctx,
    order
      .requestBuilder()
      .getAll()
      .select(S.SALES_ORDER, S.SOLD_TO_PARTY, S.SALES_DOC_APPROVAL_STATUS, S.TOTAL_NET_AMOUNT)
      // All three orders are in sales organization 1010.
      .filter(S.SALES_ORGANIZATION.equals("1010"))
      .top(2)
      .execute(destination(ctx, SO, ctx.keys.reader)),
  );
  assert.equal(
    rows.map((r: Json) => [r.salesOrder, r.soldToParty, r.salesDocApprovalStatus, r.totalNetAmount?.toString(), r.purchaseOrderByCustomer]),
    [
      ["5000001", "1000001", "A", "1250", undefined],
      ["5000002", "1000002", "A", "99.9", undefined],
    ],
  );
  const [get] = ctx.proxy.take();
  assert.is(
    `${get?.method} ${get?.path}`,
    `GET ${servicePath(SO)}/A_SalesOrder?$select=SalesOrder,SoldToParty,SalesDocApprovalStatus,TotalNetAmount&$filter=(SalesOrganization%20eq%20'1010')&$top=2`,
  );
});

E2E("getByKey with a to-many $expand (to_Item) and select", async (ctx) => {
  const { order, item } = sdk(ctx);
  const S = order.schema;
  const I = item.schema;
  const o = await run(
    ctx,
    order
      .requestBuilder()
      .getByKey("5000001")
      .select(S.SALES_ORDER, S.PURCHASE_ORDER_BY_CUSTOMER, S.TO_ITEM.select(I.SALES_ORDER_ITEM, I.MATERIAL, I.NET_AMOUNT))
      .execute(destination(ctx, SO, ctx.keys.reader)),
  );
  assert.equal([o.salesOrder, o.purchaseOrderByCustomer], ["5000001", "PO-5000001"]);
  assert.equal(
    o.toItem.map((i: Json) => [i.salesOrderItem, i.material, i.netAmount.toString()]),
    [
      ["10", "TG11", "1000"],
      ["20", "TG12", "250"],
    ],
  );
});

E2E("API_BUSINESS_PARTNER: getAll with filter, top and select; getByKey expanding the addresses", async (ctx) => {
  const { partner, address } = sdk(ctx);
  const S = partner.schema;
  const A = address.schema;
  const d = destination(ctx, BP, ctx.keys.reader);
  const orgs = await run(
    ctx,
    partner.requestBuilder().getAll().select(S.BUSINESS_PARTNER, S.BUSINESS_PARTNER_FULL_NAME).filter(S.BUSINESS_PARTNER_CATEGORY.equals("2")).top(3).execute(d),
  );
  assert.equal(
    orgs.map((p: Json) => [p.businessPartner, p.businessPartnerFullName, p.searchTerm1]),
    [
      ["1000001", "Acme Corporation", undefined],
      ["1000002", "Globex GmbH", undefined],
      ["1000003", "Initech AG", undefined],
    ],
  );
  const p = await run(
    ctx,
    partner
      .requestBuilder()
      .getByKey("1000001")
      .select(S.BUSINESS_PARTNER_FULL_NAME, S.TO_BUSINESS_PARTNER_ADDRESS.select(A.ADDRESS_ID, A.CITY_NAME, A.COUNTRY))
      .execute(d),
  );
  assert.is(p.businessPartnerFullName, "Acme Corporation");
  assert.equal(
    p.toBusinessPartnerAddress.map((a: Json) => [a.addressId, a.cityName, a.country]),
    [
      ["2001", "Springfield", "US"],
      ["2002", "Portsmouth", "GB"],
    ],
  );
});

E2E("reads a key may not do fail with erplink's 403 envelope as the SDK error's cause; what it may do works", async (ctx) => {
  const { order, partner } = sdk(ctx);
  const S = order.schema;
  const d = destination(ctx, SO, ctx.keys.orderGetOnly);
  // One after another: each is started only when the previous one has been answered.
  const refused: [() => Promise<Json>, string][] = [
    [() => order.requestBuilder().getAll().top(1).execute(d), "API key lacks permission 'list' for entity 'A_SalesOrder'"],
    [() => order.requestBuilder().getByKey("5000001").select(S.SALES_ORDER, S.TO_ITEM).execute(d), "API key has no access to entity 'A_SalesOrderItem'"],
    [() => partner.requestBuilder().getByKey("1000001").execute(destination(ctx, BP, ctx.keys.orderGetOnly)), "API key has no access to service 'API_BUSINESS_PARTNER'"],
  ];
  for (const [call, message] of refused) {
    const err = await rejection(call());
    assertErplinkRefusal(err, { status: 403, code: "FORBIDDEN", message }, describeExchanges(ctx.proxy.exchanges.slice(-1)));
  }
  const sent = ctx.proxy.take();
  assert.equal(
    sent.map((e) => [e.method, e.status]),
    [
      ["GET", 403],
      ["GET", 403],
      ["GET", 403],
    ],
    describeExchanges(sent, 300),
  );
  const one = await run(ctx, order.requestBuilder().getByKey("5000002").select(S.SALES_ORDER, S.SOLD_TO_PARTY).execute(d));
  assert.equal([one.salesOrder, one.soldToParty], ["5000002", "1000002"]);
});

// ------------------------------------------------------------------ function imports

// The SDK sends a V2 function import as: HEAD <root>/<name>/ with
// X-CSRF-Token: Fetch (its CSRF fetch, answered by erplink with its token:
// a fetch reads nothing), then POST <root>/<name>?SalesOrder='<id>' with
// that token, Content-Type: application/json, Content-Length: 0 and no body.

/** Checks the SDK's exchanges for one function import call: the CSRF HEAD, answered by erplink, then the POST with its token. */
async function checkOperationExchanges(ctx: Ctx, sent: Exchange[], name: string, order: string, postStatus: number): Promise<Exchange> {
  const shown = describeExchanges(sent, 600);
  const base = `${servicePath(SO)}/${name}`;
  assert.equal(
    sent.map((e) => [e.method, e.path, e.status]),
    [
      ["HEAD", `${base}/`, 200],
      ["POST", `${base}?SalesOrder='${order}'`, postStatus],
    ],
    shown,
  );
  const head = sent[0]!;
  assert.is(head.requestHeaders["x-csrf-token"], "Fetch", shown);
  assert.is(await loggedError(ctx, head), "", `erplink's answer to ${head.method} ${head.path}`);
  assert.equal(receivedFor(ctx, head.responseHeaders["x-request-id"]), [], "the fetch reached the mock server");
  const token = head.responseHeaders["x-csrf-token"];
  assert.match(String(token), /^[A-Za-z0-9_-]{43}$/);
  const post = sent[1]!;
  assert.equal(
    [post.requestHeaders["content-type"], post.requestHeaders["content-length"], post.requestHeaders["x-csrf-token"], post.requestBody],
    ["application/json", "0", token, ""],
    shown,
  );
  return post;
}

// How a key without the grant is refused depends on what it holds (README,
// "Functions and actions"): a key that names only entity sets is refused the
// name before erplink looks at what it names (as an unknown entity set
// would be); one with a `*` entity entry, which never includes operations,
// gets "no access to operation"; one naming the import without `invoke`
// lacks that permission.
E2E("function imports without the invoke grant: erplink's 403 as the SDK error's cause, nothing reaches the mock server, the orders stay awaiting approval", async (ctx) => {
  const { operations } = sdk(ctx);
  // [key, import, order, erplink's message for the POST]
  const cases = [
    ["browser", "releaseApprovalRequest", "5000001", "API key has no access to operation 'releaseApprovalRequest'"],
    ["browser", "rejectApprovalRequest", "5000002", "API key has no access to operation 'rejectApprovalRequest'"],
    ["namedNoInvoke", "releaseApprovalRequest", "5000001", "API key lacks permission 'invoke' for operation 'releaseApprovalRequest'"],
    ["clerk", "releaseApprovalRequest", "5000001", "API key has no access to entity 'releaseApprovalRequest'"],
  ] as const;
  for (const [key, name, order, message] of cases) {
    const err = await rejection(operations[name]({ salesOrder: order }).execute(destination(ctx, SO, ctx.keys[key])));
    const sent = ctx.proxy.take();
    assertErplinkRefusal(err, { status: 403, code: "FORBIDDEN", message }, `${key}: ${describeExchanges(sent, 600)}`);
    await checkOperationExchanges(ctx, sent, name, order, 403);
    for (const e of sent) assert.equal(receivedFor(ctx, e.responseHeaders["x-request-id"]), [], `${e.method} ${e.path} reached the mock server`);
    assert.is(await approvalStatus(ctx, order), "A", `${order} must still await approval`);
  }
});

E2E("releaseApprovalRequest with the invoke grant: 200 with the mock server's answer, and 5000001 goes from A to B", async (ctx) => {
  const { operations } = sdk(ctx);
  assert.is(await approvalStatus(ctx, "5000001"), "A");
  const result = await run(ctx, operations.releaseApprovalRequest({ salesOrder: "5000001" }).execute(destination(ctx, SO, ctx.keys.releaser)));
  const sent = ctx.proxy.take();
  const post = await checkOperationExchanges(ctx, sent, "releaseApprovalRequest", "5000001", 200);
  assert.equal(JSON.parse(post.responseBody), { d: { releaseApprovalRequest: { __metadata: { type: "API_SALES_ORDER_SRV.FunctionResult" }, Boolean: true } } });
  // The SDK reads a V2 complex result from `d` itself, not from under the
  // import's name as SAP Gateway (and the mock server) write it, so the
  // typed result has no `boolean` (SAP/cloud-sdk-js#682): {} here.
  assert.equal({ ...result }, {});
  const [received] = receivedFor(ctx, post.responseHeaders["x-request-id"]);
  assert.equal(
    [received?.method, received?.target, received?.body.length],
    ["POST", `${ctx.mock.roots[SO]}releaseApprovalRequest?SalesOrder=%275000001%27`, 0],
    "what the mock server received (erplink writes the parameter in its strict encoding)",
  );
  assert.is(await approvalStatus(ctx, "5000001"), "B");

  // A second release: the mock server's own 400 reaches the SDK.
  const again = httpCauseOf(await rejection(operations.releaseApprovalRequest({ salesOrder: "5000001" }).execute(destination(ctx, SO, ctx.keys.releaser))));
  assert.equal([again?.status, again?.data], [400, { error: { code: "V1/400", message: { lang: "en", value: "Sales order 5000001 is not awaiting approval" } } }]);
  assert.is(await approvalStatus(ctx, "5000001"), "B");
});

E2E("rejectApprovalRequest: refused for a key that names only releaseApprovalRequest; with its own grant 5000002 goes from A to C", async (ctx) => {
  const { operations } = sdk(ctx);
  const message = "API key has no access to entity 'rejectApprovalRequest'";
  const err = await rejection(operations.rejectApprovalRequest({ salesOrder: "5000002" }).execute(destination(ctx, SO, ctx.keys.releaser)));
  const refusedExchanges = ctx.proxy.take();
  assertErplinkRefusal(err, { status: 403, code: "FORBIDDEN", message }, describeExchanges(refusedExchanges, 600));
  await checkOperationExchanges(ctx, refusedExchanges, "rejectApprovalRequest", "5000002", 403);
  assert.is(await approvalStatus(ctx, "5000002"), "A", "nothing was rejected");

  await run(ctx, operations.rejectApprovalRequest({ salesOrder: "5000002" }).execute(destination(ctx, SO, ctx.keys.approver)));
  const post = await checkOperationExchanges(ctx, ctx.proxy.take(), "rejectApprovalRequest", "5000002", 200);
  assert.equal(JSON.parse(post.responseBody), { d: { rejectApprovalRequest: { __metadata: { type: "API_SALES_ORDER_SRV.FunctionResult" }, Boolean: true } } });
  assert.is(await approvalStatus(ctx, "5000002"), "C");
  assert.is(await approvalStatus(ctx, "5000001"), "B", "the other order is as the release left it");
});

// ------------------------------------------------------------------ writes

/**
 * The SDK's CSRF fetch before a write: HEAD <resource>/ with
 * X-CSRF-Token: Fetch, answered by erplink (200, its token; nothing reaches
 * the mock server), and the write that follows carries that token.
 */
function checkCsrfFetch(ctx: Ctx, sent: Exchange[], resource: string): void {
  const shown = describeExchanges(sent, 600);
  const base = `${servicePath(SO)}/${resource}`;
  const [head] = sent;
  assert.equal([head?.method, head?.path, head?.requestHeaders["x-csrf-token"], head?.status], ["HEAD", `${base}/`, "Fetch", 200], shown);
  const token = head!.responseHeaders["x-csrf-token"];
  assert.match(String(token), /^[A-Za-z0-9_-]{43}$/);
  assert.equal(receivedFor(ctx, head!.responseHeaders["x-request-id"]), [], "the fetch reached the mock server");
  assert.equal(writes(sent).map((e) => e.requestHeaders["x-csrf-token"]), [token], `the write carries erplink's token: ${shown}`);
}

E2E("create: the CSRF fetch passes, 201 with the entity, the mock server holds the order; a key without create is refused", async (ctx) => {
  const { order } = sdk(ctx);
  const build = (id: string) => order.entityBuilder().salesOrder(id).salesOrderType("OR").soldToParty("1000005").purchaseOrderByCustomer("PO-SDK").build();
  const created = await run(ctx, order.requestBuilder().create(build("5000100")).execute(destination(ctx, SO, ctx.keys.clerk)));
  assert.equal([created.salesOrder, created.salesOrderType, created.soldToParty, created.purchaseOrderByCustomer], ["5000100", "OR", "1000005", "PO-SDK"]);
  const sent = ctx.proxy.take();
  checkCsrfFetch(ctx, sent, "A_SalesOrder");
  assert.equal(
    writes(sent).map((e) => [e.method, e.path, e.status, JSON.parse(e.requestBody)]),
    [["POST", `${servicePath(SO)}/A_SalesOrder`, 201, { SalesOrder: "5000100", SalesOrderType: "OR", SoldToParty: "1000005", PurchaseOrderByCustomer: "PO-SDK" }]],
    describeExchanges(sent, 600),
  );
  const row = await mockOrder(ctx, "5000100");
  assert.equal([row.SoldToParty, row.PurchaseOrderByCustomer], ["1000005", "PO-SDK"]);

  const err = await rejection(order.requestBuilder().create(build("5000101")).execute(destination(ctx, SO, ctx.keys.reader)));
  assertErplinkRefusal(err, { status: 403, code: "FORBIDDEN", message: "API key lacks permission 'create' for entity 'A_SalesOrder'" }, describeExchanges(ctx.proxy.exchanges.slice(-1)));
  assert.is((await mock(ctx, SO, "A_SalesOrder('5000101')")).status, 404, "5000101 must not exist");
});

E2E("update: the CSRF fetch passes, PATCH with the changed property only, the mock server holds the change", async (ctx) => {
  const { order } = sdk(ctx);
  const d = destination(ctx, SO, ctx.keys.clerk);
  const entity = await run(ctx, order.requestBuilder().getByKey("5000003").execute(d));
  assert.is(entity.purchaseOrderByCustomer, "PO-5000003");
  entity.purchaseOrderByCustomer = "PO-SDK-UPDATED";
  ctx.proxy.take();
  const updated = await run(ctx, order.requestBuilder().update(entity).execute(d));
  assert.is(updated.purchaseOrderByCustomer, "PO-SDK-UPDATED");
  const sent = ctx.proxy.take();
  checkCsrfFetch(ctx, sent, "A_SalesOrder(SalesOrder='5000003')");
  assert.equal(
    writes(sent).map((e) => [e.method, e.path, e.status, e.requestHeaders["if-match"], JSON.parse(e.requestBody)]),
    [["PATCH", `${servicePath(SO)}/A_SalesOrder(SalesOrder='5000003')`, 200, undefined, { PurchaseOrderByCustomer: "PO-SDK-UPDATED" }]],
    describeExchanges(sent, 600),
  );
  const row = await mockOrder(ctx, "5000003");
  assert.equal([row.PurchaseOrderByCustomer, row.SoldToParty], ["PO-SDK-UPDATED", "1000004"]);
});

// ------------------------------------------------------------------ $batch

E2E("$batch with a read and a change set (update): both parts succeed, the mock server holds the change", async (ctx) => {
  const { order, batch, changeset } = sdk(ctx);
  const d = destination(ctx, SO, ctx.keys.clerk);
  const target = await run(ctx, order.requestBuilder().getByKey("5000002").execute(d));
  target.purchaseOrderByCustomer = "PO-BATCHED";
  ctx.proxy.take();
  const responses = await run(ctx, batch(order.requestBuilder().getByKey("5000001"), changeset(order.requestBuilder().update(target))).execute(d));
  const sent = ctx.proxy.take();
  const post = writes(sent);
  assert.equal(post.map((e) => `${e.method} ${e.path} ${e.status}`), [`POST ${servicePath(SO)}/$batch 200`], describeExchanges(sent, 600));
  assert.equal(batchPartLines(post[0]!.requestBody), ["GET /A_SalesOrder(SalesOrder='5000001')", "PATCH /A_SalesOrder(SalesOrder='5000002')"], post[0]!.requestBody);
  assert.is(responses.length, 2);
  assert.ok(responses[0].isReadResponse(), showBatchResponse(responses[0]));
  assert.equal(
    responses[0].as(order).map((o: Json) => [o.salesOrder, o.salesDocApprovalStatus]),
    [["5000001", "B"]],
  );
  assert.ok(responses[1].isWriteResponses(), showBatchResponse(responses[1]));
  assert.equal(
    responses[1].responses.map((r: Json) => r.httpCode),
    [200],
  );
  assert.is((await mockOrder(ctx, "5000002")).PurchaseOrderByCustomer, "PO-BATCHED");
});

// The SDK writes a function import in a change set with
// `Content-Type: application/json` and a body that is one empty line (it
// joins an undefined payload as an empty line): erplink reads it as no body.
E2E("$batch with a read and releaseApprovalRequest in a change set: both parts succeed, the order goes from A to B", async (ctx) => {
  const { order, operations, batch, changeset } = sdk(ctx);
  // An order awaiting approval, put straight into the mock server (the fixed ones are released, rejected or not relevant by now).
  const seeded = await mock(ctx, SO, "A_SalesOrder", { method: "POST", body: { SalesOrder: "5000200", SoldToParty: "1000001", SalesDocApprovalStatus: "A" } });
  assert.is(seeded.status, 201, JSON.stringify(seeded.body));
  const responses = await run(
    ctx,
    batch(order.requestBuilder().getByKey("5000200"), changeset(operations.releaseApprovalRequest({ salesOrder: "5000200" }))).execute(destination(ctx, SO, ctx.keys.approver)),
  );
  const sent = ctx.proxy.take();
  const post = writes(sent);
  assert.equal(post.map((e) => `${e.method} ${e.path} ${e.status}`), [`POST ${servicePath(SO)}/$batch 200`], describeExchanges(sent, 2000));
  assert.equal(batchPartLines(post[0]!.requestBody), ["GET /A_SalesOrder(SalesOrder='5000200')", "POST /releaseApprovalRequest?SalesOrder='5000200'"], post[0]!.requestBody);
  assert.is(responses.length, 2);
  assert.ok(responses[0].isReadResponse(), showBatchResponse(responses[0]));
  assert.equal(
    responses[0].as(order).map((o: Json) => [o.salesOrder, o.salesDocApprovalStatus]),
    [["5000200", "A"]],
  );
  assert.ok(responses[1].isWriteResponses(), showBatchResponse(responses[1]));
  assert.equal(
    responses[1].responses.map((r: Json) => [r.httpCode, r.body]),
    [[200, { d: { releaseApprovalRequest: { __metadata: { type: "API_SALES_ORDER_SRV.FunctionResult" }, Boolean: true } } }]],
  );
  assert.is(await approvalStatus(ctx, "5000200"), "B");
});

// ------------------------------------------------------------------ the SDK's CSRF handshake

E2E("the SDK's CSRF fetches get erplink's token: a create and a $batch log no CSRF warning, and each write carries the token", async (ctx) => {
  const { order, batch, changeset } = sdk(ctx);
  const d = destination(ctx, SO, ctx.keys.clerk);
  const target = await run(ctx, order.requestBuilder().getByKey("5000001").execute(d));
  target.purchaseOrderByCustomer = "PO-CSRF";
  ctx.proxy.take();
  const logs = captureSdkLogs();
  let lines;
  try {
    const build = order.entityBuilder().salesOrder("5000110").salesOrderType("OR").soldToParty("1000005").purchaseOrderByCustomer("PO-CSRF").build();
    const created = await run(ctx, order.requestBuilder().create(build).execute(d));
    assert.is(created.salesOrder, "5000110");
    const responses = await run(ctx, batch(order.requestBuilder().getByKey("5000002"), changeset(order.requestBuilder().update(target))).execute(d));
    assert.equal(responses[1].responses.map((r: Json) => r.httpCode), [200], showBatchResponse(responses[1]));
  } finally {
    lines = logs.stop();
  }
  assert.equal(lines.filter((l) => /csrf/i.test(`${l.context} ${l.message}`)), [], "the SDK logged no CSRF warning or error");
  const sent = ctx.proxy.take();
  const shown = describeExchanges(sent, 1000);
  assert.equal(
    sent.map((e) => [e.method, e.path, e.status, e.requestHeaders["x-csrf-token"] === "Fetch" ? "Fetch" : typeof e.requestHeaders["x-csrf-token"]]),
    [
      ["HEAD", `${servicePath(SO)}/A_SalesOrder/`, 200, "Fetch"],
      ["POST", `${servicePath(SO)}/A_SalesOrder`, 201, "string"],
      ["HEAD", `${servicePath(SO)}/$batch/`, 200, "Fetch"],
      ["POST", `${servicePath(SO)}/$batch`, 200, "string"],
    ],
    shown,
  );
  const token = sent[0]!.responseHeaders["x-csrf-token"];
  assert.match(String(token), /^[A-Za-z0-9_-]{43}$/);
  assert.equal(sent.map((e) => e.responseHeaders["x-csrf-token"] ?? e.requestHeaders["x-csrf-token"]), [token, token, token, token], shown);
  // The mock server received the writes only, never erplink's token.
  for (const e of sent) {
    const received = receivedFor(ctx, e.responseHeaders["x-request-id"]);
    assert.equal(received.map((r) => r.method), e.method === "HEAD" ? [] : ["POST"], `${e.method} ${e.path}`);
    for (const r of received) assert.is.not(r.headers["x-csrf-token"], token);
  }
  assert.is((await mockOrder(ctx, "5000001")).PurchaseOrderByCustomer, "PO-CSRF");
});

E2E.run();
