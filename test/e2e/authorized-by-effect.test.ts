/**
 * Requests that once made SAP CAP do what the key may not, judged by what
 * CAP's database did (test-support/cap: its effect oracle; every request is
 * checked with test-support/forwarded.ts, which asserts that each effect is
 * covered by what erplink authorized):
 * - key literals of a form the key's type does not allow, which CAP's V2
 *   adapter reads as an aggregation key and answers with the whole set;
 * - a link removal that deletes a composition child;
 * - a reference inside a composition, which CAP ignores and inserts a child;
 * - bound operations that read and write other entity sets than the one
 *   they are bound to, and an operation named bare in a lambda.
 * Each is refused for a key that may not do what CAP would, and works for
 * one that may, with CAP's effects covered either way.
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
  proxy: RecordingProxy;
  services: ForwardedService[];
  world: World;
  keys: Record<string, string>;
}

const BP4 = "/odata/s4/API_BUSINESS_PARTNER";
const BP2 = "/odata/s4v2/API_BUSINESS_PARTNER";
const NOTES = "/odata/s4/API_NOTES";

const E2E = suite<Ctx>("the back end does only what the key may: CAP's effects");

E2E.before(async (ctx) => {
  try {
    ctx.cap = await startCapBackend();
    ctx.proxy = await startRecordingProxy(ctx.cap.baseUrl);
    const model = async (path: string) => parseMetadata((await direct(ctx, path)).body);
    const service = async (clientRoot: string, upstreamRoot: string, capService: string): Promise<ForwardedService> => ({
      upstreamRoot,
      clientRoot,
      model: await model(`${upstreamRoot}/$metadata`),
      cap: { backend: ctx.cap, service: capService },
    });
    ctx.services = [
      await service(BP4, "/odata/v4/api-business-partner", "API_BUSINESS_PARTNER"),
      await service(BP2, "/odata/v2/api-business-partner", "API_BUSINESS_PARTNER"),
      await service(NOTES, "/odata/v4/api-notes", "API_NOTES"),
    ];
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
    const key = async (name: string, services: Record<string, unknown>) => {
      const res = await post(app, "/admin/api-keys", { name, permissions: { s4: services, s4v2: services } });
      assert.is(res.statusCode, 201, res.body);
      return json(res).data.key as string;
    };
    ctx.keys = {
      getOnly: await key("get-only", { API_BUSINESS_PARTNER: { A_BusinessPartner: ["get"] } }),
      linker: await key("linker", { API_BUSINESS_PARTNER: { A_BusinessPartner: ["get", "update", "delete"], A_BusinessPartnerAddress: ["get", "update"] } }),
      unlinker: await key("unlinker", { API_BUSINESS_PARTNER: { A_BusinessPartner: ["get", "update", "delete"], A_BusinessPartnerAddress: ["get", "update", "delete"] } }),
      referrer: await key("referrer", { API_BUSINESS_PARTNER: { A_BusinessPartner: ["create"], A_BusinessPartnerAddress: ["get"] } }),
      composer: await key("composer", { API_BUSINESS_PARTNER: { A_BusinessPartner: ["create"], A_BusinessPartnerAddress: ["get", "create"] } }),
      notes: await key("notes", { API_NOTES: { Notes: ["list", "get"], Folders: ["list", "get"] } }),
      secrets: await key("secrets", { API_NOTES: { Notes: ["get"], Secrets: ["get"], "API_NOTES.secretOf": ["invoke"] } }),
    };
  } catch (error) {
    console.error("setting up the suite failed:", error);
    throw error;
  }
});

E2E.after(async (ctx) => {
  await ctx.proxy?.close();
  await ctx.world?.close();
  await ctx.cap?.stop();
});

async function direct(ctx: Ctx, path: string): Promise<{ status: number; body: string }> {
  const { username, password } = ctx.cap.credentials;
  const accept = path.endsWith("/$metadata") ? "application/xml" : "application/json";
  const res = await fetch(`${ctx.cap.baseUrl}${path}`, { headers: { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`, accept } });
  return { status: res.status, body: await res.text() };
}

async function call(ctx: Ctx, key: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  const res = await ctx.world.app.inject({
    method: method as "GET",
    url,
    headers: { authorization: `Bearer ${ctx.keys[key]}`, ...(payload !== undefined && typeof body !== "string" ? { "content-type": "application/json" } : {}), ...headers },
    ...(payload !== undefined ? { payload } : {}),
  });
  const service = ctx.services.find((s) => url.startsWith(s.clientRoot))!;
  const logs = { store: ctx.world.store, flush: () => ctx.world.layer.logWriter.flush() };
  await assertForwardedAsAuthorized(logs, ctx.proxy, service, String(res.headers["x-request-id"]), /\$batch/.test(url) ? undefined : payload);
  return res;
}

function assertError(res: LightMyRequestResponse, status: number, code: string, message: string): void {
  assert.is(res.statusCode, status, res.body);
  assert.equal(JSON.parse(res.body), { error: { code, message, requestId: res.headers["x-request-id"] } });
}

/** A multipart `$batch` body with one part. */
function batchOf(requestLine: string, headers: string[] = [], body = ""): string {
  return ["--b", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "", requestLine, ...headers, "", body, "--b--", ""].join("\r\n");
}

E2E("an aggregation key, quoted or typed, is no key literal: CAP's V2 adapter would answer the whole set to a key that may get one partner", async (ctx) => {
  const aggregation = `A_BusinessPartner('aggregation''${encodeURIComponent('{"key":{}}')}''')`;
  assertError(
    await call(ctx, "getOnly", "GET", `${BP2}/${aggregation}`),
    400,
    "VALIDATION_ERROR",
    "malformed key value for BusinessPartner in the key of A_BusinessPartner: a key string that begins with aggregation' is read by SAP CAP's V2 adapter as an aggregation of the whole set, not as a key",
  );
  assertError(
    await call(ctx, "getOnly", "GET", `${BP2}/A_BusinessPartner(aggregation'%7B%7D')?$filter=BusinessPartner%20eq%20'1000001'`),
    400,
    "VALIDATION_ERROR",
    "'aggregation' is not a literal type of OData V2 (aggregation'…') in path segment 'A_BusinessPartner(aggregation'{}')'",
  );
  const inBatch = await call(ctx, "getOnly", "POST", `${BP2}/$batch`, batchOf(`GET ${decodeURIComponent(aggregation)} HTTP/1.1`), { "content-type": "multipart/mixed; boundary=b" });
  assert.is(inBatch.statusCode, 400, inBatch.body);
  // The partner itself, by its key, is what the key may get.
  const one = await call(ctx, "getOnly", "GET", `${BP2}/A_BusinessPartner('1000001')`);
  assert.is(one.statusCode, 200, one.body);
});

E2E("removing the link to a composition child deletes the child: it needs delete of the child (V2 $links, tunnelled, in a change set; V4 $ref)", async (ctx) => {
  const v2 = `${BP2}/A_BusinessPartner('1000001')/$links/to_Address(BusinessPartner='1000001',AddressID='1')`;
  const noDelete = "API key lacks permission 'delete' for entity 'A_BusinessPartnerAddress'";
  assertError(await call(ctx, "linker", "DELETE", v2), 403, "FORBIDDEN", noDelete);
  assertError(await call(ctx, "linker", "POST", v2, undefined, { "x-http-method": "DELETE" }), 403, "FORBIDDEN", noDelete);
  const changeSet = [
    "--b",
    "Content-Type: multipart/mixed; boundary=c",
    "",
    "--c",
    "Content-Type: application/http",
    "Content-Transfer-Encoding: binary",
    "",
    `DELETE A_BusinessPartner('1000001')/$links/to_Address(BusinessPartner='1000001',AddressID='1') HTTP/1.1`,
    "",
    "",
    "--c--",
    "--b--",
    "",
  ].join("\r\n");
  assertError(await call(ctx, "linker", "POST", `${BP2}/$batch`, changeSet, { "content-type": "multipart/mixed; boundary=b" }), 403, "FORBIDDEN", `${noDelete} (batch part 1: link removal from a composition)`);
  assertError(await call(ctx, "linker", "DELETE", `${BP4}/A_BusinessPartner('1000001')/to_Address(BusinessPartner='1000001',AddressID='1')/$ref`), 403, "FORBIDDEN", noDelete);
  assert.is((await direct(ctx, "/odata/v4/api-business-partner/A_BusinessPartnerAddress(BusinessPartner='1000001',AddressID='1')")).status, 200, "the address is still there");
  // A key that may delete addresses removes it, and CAP deletes it.
  const removed = await call(ctx, "unlinker", "DELETE", v2);
  assert.is(removed.statusCode, 204, removed.body);
  assert.is((await direct(ctx, "/odata/v4/api-business-partner/A_BusinessPartnerAddress(BusinessPartner='1000001',AddressID='1')")).status, 404);
});

E2E("a reference inside a composition is a child CAP creates: it needs create of the child's set (V4 @odata.id, V2 __metadata.uri)", async (ctx) => {
  const reference = { BusinessPartner: "RF1", to_Address: [{ "@odata.id": "A_BusinessPartnerAddress(BusinessPartner='1000002',AddressID='1')" }] };
  assertError(await call(ctx, "referrer", "POST", `${BP4}/A_BusinessPartner`, reference), 403, "FORBIDDEN", "API key lacks permission 'create' for entity 'A_BusinessPartnerAddress'");
  const v2 = { BusinessPartner: "RF2", to_Address: [{ __metadata: { uri: "A_BusinessPartnerAddress(BusinessPartner='1000002',AddressID='1')" } }] };
  assertError(await call(ctx, "referrer", "POST", `${BP2}/A_BusinessPartner`, v2), 403, "FORBIDDEN", "API key lacks permission 'create' for entity 'A_BusinessPartnerAddress'");
  assert.is((await direct(ctx, "/odata/v4/api-business-partner/A_BusinessPartner('RF1')")).status, 404, "nothing was created");
  // With create on addresses it reaches CAP, which tries to insert a child from the reference (here without the
  // key part the reference does not give: its own error); whatever it did is covered by what was authorized.
  const before = ctx.proxy.received.length;
  await call(ctx, "composer", "POST", `${BP4}/A_BusinessPartner`, reference);
  assert.is(ctx.proxy.received.filter((r, i) => i >= before && r.method === "POST").length, 1, "the create reached CAP");
});

E2E("a bound operation reaches other sets than its binding: without its invoke grant it is refused, with it its result's set is read too", async (ctx) => {
  const note = `${NOTES}/Notes(folder_ID='F1',ID='N1')`;
  assertError(await call(ctx, "notes", "GET", `${note}/API_NOTES.secretOf()`), 403, "FORBIDDEN", "API key has no access to operation 'API_NOTES.secretOf'");
  assertError(await call(ctx, "notes", "POST", `${note}/API_NOTES.setSecret`, { value: "leaked" }), 403, "FORBIDDEN", "API key has no access to operation 'API_NOTES.setSecret'");
  assert.match((await direct(ctx, "/odata/v4/api-notes/Secrets('S1')")).body, /TOP SECRET/, "the secret is unchanged");
  // An operation named bare inside a lambda's body is a call too.
  assertError(
    await call(ctx, "notes", "GET", `${NOTES}/Folders?$filter=notes/any(n:n/API_NOTES.labelText%20eq%20'x')`),
    403,
    "FORBIDDEN",
    "'API_NOTES.labelText' in $filter calls a function erplink cannot authorize: only OData's built-in functions may be called in an expression",
  );
  const secret = await call(ctx, "secrets", "GET", `${note}/API_NOTES.secretOf()`);
  assert.is(secret.statusCode, 200, secret.body);
  assert.is(JSON.parse(secret.body).value, "TOP SECRET");
});

E2E.run();
