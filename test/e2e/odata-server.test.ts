/**
 * The data path over a real port, as clients meet it: erplink composed as
 * `src/main.ts` does, listening on 127.0.0.1, in front of a real OData back
 * end (SAP CAP); reads and writes over HTTP/1.1 and over h2c on the same
 * port, and an instance whose back end is down (502). A recording proxy
 * between erplink and CAP checks after every request that CAP received
 * exactly what erplink authorized and logged as sent.
 */
import http2 from "node:http2";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parseMetadata } from "../../src/gateway/odata/metadata.js";
import { startCapBackend, type CapBackend } from "../../test-support/cap/index.js";
import { freePort, startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { assertForwardedAsAuthorized, type ForwardedService } from "../../test-support/forwarded.js";
import { startRecordingProxy, type RecordingProxy } from "../../test-support/recording-proxy.js";

interface Ctx {
  cap: CapBackend;
  proxy: RecordingProxy;
  service: ForwardedService;
  erplink: RunningErplink;
  key: string;
}

const Server = suite<Ctx>("OData data path over a real port");
const BP = "/odata/s4/API_BUSINESS_PARTNER";

/** CAP received exactly what erplink authorized for the answer with `requestId` (nothing when erplink refused). */
const checked = (ctx: Ctx, requestId: string | null | undefined, clientBody?: string) =>
  assertForwardedAsAuthorized({ store: ctx.erplink.erplink.store }, ctx.proxy, ctx.service, String(requestId), clientBody);

async function admin(ctx: Ctx, path: string, body: unknown): Promise<{ data: Record<string, string> }> {
  const res = await fetch(`${ctx.erplink.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: ctx.erplink.authorization, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { data: Record<string, string> };
  assert.is(res.status, 201, JSON.stringify(json));
  return json;
}

Server.before(async (ctx) => {
  ctx.cap = await startCapBackend();
  ctx.proxy = await startRecordingProxy(ctx.cap.baseUrl);
  const { username, password } = ctx.cap.credentials;
  const metadata = await fetch(`${ctx.cap.baseUrl}/odata/v4/api-business-partner/$metadata`, {
    headers: { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`, accept: "application/xml" },
  });
  ctx.service = {
    upstreamRoot: "/odata/v4/api-business-partner",
    clientRoot: BP,
    model: parseMetadata(await metadata.text()),
    cap: { backend: ctx.cap, service: "API_BUSINESS_PARTNER" },
  };
  ctx.erplink = await startErplink();
  const sys = (await admin(ctx, "/admin/systems", { name: "S4" })).data.id;
  await admin(ctx, `/admin/systems/${sys}/instances`, {
    name: "s4",
    base_url: `${ctx.proxy.baseUrl}/odata/v4/`,
    services: { API_BUSINESS_PARTNER: { path: "api-business-partner" } },
    auth: { type: "basic", ...ctx.cap.credentials },
  });
  await admin(ctx, `/admin/systems/${sys}/instances`, { name: "down", base_url: `http://127.0.0.1:${await freePort()}/odata/` });
  ctx.key = (
    await admin(ctx, "/admin/api-keys", {
      name: "app",
      permissions: {
        s4: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["list", "get", "create"] } },
        down: { "*": { "*": ["list"] } },
      },
    })
  ).data.key!;
});

Server.after(async (ctx) => {
  await ctx.proxy?.close();
  await ctx.erplink?.close();
  await ctx.cap?.stop();
});


Server("HTTP/1.1: a read and a create through erplink", async (ctx) => {
  const res = await fetch(`${ctx.erplink.baseUrl}${BP}/A_BusinessPartner('1000001')?$select=BusinessPartnerFullName`, {
    headers: { authorization: `Bearer ${ctx.key}` },
  });
  assert.is(res.status, 200);
  assert.is(res.headers.get("x-ratelimit-limit"), "600");
  assert.match(res.headers.get("x-request-id") ?? "", /^req_/);
  assert.is(((await res.json()) as { BusinessPartnerFullName: string }).BusinessPartnerFullName, "Acme Industries");
  await checked(ctx, res.headers.get("x-request-id"));
  const body = JSON.stringify({ BusinessPartner: "SRV0001", FirstName: "Http" });
  const created = await fetch(`${ctx.erplink.baseUrl}${BP}/A_BusinessPartner`, {
    method: "POST",
    headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" },
    body,
  });
  assert.is(created.status, 201, await created.clone().text());
  assert.is(((await created.json()) as { FirstName: string }).FirstName, "Http");
  await checked(ctx, created.headers.get("x-request-id"), body);
});

/** One request over an h2c session; the answer's status, headers and body. */
function h2(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string) {
  return new Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let text = "";
    let head: http2.IncomingHttpHeaders = {};
    stream.setEncoding("utf8");
    stream.on("response", (h) => (head = h));
    stream.on("data", (c: string) => (text += c));
    stream.on("end", () => resolve({ status: Number(head[":status"]), headers: head, body: text }));
    stream.on("error", reject);
    if (body !== undefined) stream.end(body);
  });
}

Server("h2c on the same port: a read, a create and a denial", async (ctx) => {
  const session = http2.connect(ctx.erplink.baseUrl);
  try {
    const auth = `Bearer ${ctx.key}`;
    const read = await h2(session, { ":method": "GET", ":path": `${BP}/A_BusinessPartner?$top=2&$orderby=BusinessPartner&$select=BusinessPartner`, authorization: auth });
    assert.is(read.status, 200, read.body);
    assert.equal(
      (JSON.parse(read.body) as { value: { BusinessPartner: string }[] }).value.map((r) => r.BusinessPartner),
      ["1000001", "1000002"],
    );
    assert.is(read.headers["x-ratelimit-limit"], "600");
    assert.is(read.headers["set-cookie"], undefined);
    await checked(ctx, read.headers["x-request-id"] as string);
    // HTTP/2 names the host in :authority, not Host: the back end still learns where the client was.
    const forwarded = ctx.proxy.received.find((r) => r.headers["x-request-id"] === read.headers["x-request-id"])!;
    assert.is(forwarded.headers["x-forwarded-host"], ctx.erplink.address);
    const body = JSON.stringify({ BusinessPartner: "SRV0002", FirstName: "H2" });
    const created = await h2(session, { ":method": "POST", ":path": `${BP}/A_BusinessPartner`, authorization: auth, "content-type": "application/json" }, body);
    assert.is(created.status, 201, created.body);
    assert.is((JSON.parse(created.body) as { FirstName: string }).FirstName, "H2");
    await checked(ctx, created.headers["x-request-id"] as string, body);
    const denied = await h2(session, { ":method": "DELETE", ":path": `${BP}/A_BusinessPartner('SRV0002')`, authorization: auth });
    assert.is(denied.status, 403);
    assert.equal(JSON.parse(denied.body), {
      error: {
        code: "FORBIDDEN",
        message: "API key lacks permission 'delete' for entity 'A_BusinessPartner'",
        requestId: denied.headers["x-request-id"],
      },
    });
    await checked(ctx, denied.headers["x-request-id"] as string);
  } finally {
    session.close();
  }
});

Server("a back end that is down: 502 in the envelope", async (ctx) => {
  const res = await fetch(`${ctx.erplink.baseUrl}/odata/down/SRV/Things`, { headers: { authorization: `Bearer ${ctx.key}` } });
  assert.is(res.status, 502);
  assert.equal(await res.json(), {
    error: {
      code: "BAD_GATEWAY",
      message: "cannot authorize the request: the back end could not be reached for the service's $metadata",
      requestId: res.headers.get("x-request-id"),
    },
  });
  // The service document needs no $metadata: the forwarded request itself finds nobody.
  const doc = await fetch(`${ctx.erplink.baseUrl}/odata/down/SRV/`, { headers: { authorization: `Bearer ${ctx.key}` } });
  assert.is(doc.status, 502);
  assert.equal(await doc.json(), {
    error: { code: "BAD_GATEWAY", message: "the back end could not be reached", requestId: doc.headers.get("x-request-id") },
  });
});

Server.run();
