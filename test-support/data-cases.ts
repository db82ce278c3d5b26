/**
 * The data path's shared case table and the world it runs in: a recording
 * upstream of our own (basic credentials, a V4 and a V2 `$metadata`, a SAP
 * CSRF handshake), instance `prod` with services `SALES` and `SALES2` and
 * SAP client 100, and the keys of the data path's suites (`app`, `reader`,
 * `writer`, `uploader`, `w2`, `admin`). The table holds the cases of
 * test/gateway/data-path.test.ts and test/gateway/data/forward.test.ts as
 * raw requests; every front of the data path's decision answers them as the
 * data path does: explain (test/gateway/data/diagnostics.test.ts) and
 * Envoy's ext_authz Check (test/gateway/ext-authz.test.ts). Lives outside
 * test/ because uvu runs every file there.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import * as assert from "uvu/assert";
import { V2_METADATA, V4_METADATA } from "./odata/fixtures.js";
import { rawHttp } from "./raw-http.js";
import { AUTH, createWorld, type WorldOptions } from "./world.js";
import { json } from "./http.js";

/** A request the upstream received. */
export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

/** The world the case table runs in (a test suite's context). */
export interface CaseWorld {
  world: Awaited<ReturnType<typeof createWorld>>;
  upstream: http.Server;
  /** Every request the upstream received, `$metadata` and CSRF fetches included. */
  all: Seen[];
  origin: string;
  port: number;
  instanceId: string;
  /** Key name -> { id, secret }. */
  keys: Record<string, { id: string; key: string }>;
}

/** The data path's root of service SALES, its path on the back end, and the back end's credentials as sent. */
export const SALES = "/odata/prod/SALES";
export const UP = "/erp/sap/sales/0001";
export const BASIC = `Basic ${Buffer.from("erp-user:erp-pass").toString("base64")}`;

/** The recording upstream of the case world. */
export interface CaseUpstream {
  readonly server: http.Server;
  /** Every request it received, `$metadata` and CSRF fetches included. */
  readonly all: Seen[];
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  close(): Promise<void>;
}

/** Starts the upstream: basic credentials, V4 and V2 `$metadata`, a SAP CSRF handshake, 201 `{}` for the rest. */
export async function startCaseUpstream(): Promise<CaseUpstream> {
  const all: Seen[] = [];
  const server = http.createServer(async (req, res) => {
    all.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    for await (const _ of req);
    if (req.headers.authorization !== BASIC) {
      res.writeHead(401, { "www-authenticate": 'Basic realm="erp"' }).end("no credentials");
      return;
    }
    const path = (req.url ?? "").split("?")[0]!;
    if (path.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml", "odata-version": "4.0" }).end(path.includes("/v2/") ? V2_METADATA : V4_METADATA);
      return;
    }
    if (req.headers["x-csrf-token"] === "Fetch") {
      res.writeHead(200, { "x-csrf-token": "tok-secret-1", "set-cookie": "SAP_SESSIONID=cookie-secret; path=/" }).end("{}");
      return;
    }
    res.writeHead(201, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    server,
    all,
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** An admin call: method, path, JSON body; resolves to the status and the parsed body. */
export type AdminCall = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Creates system `S4`, instance `prod` (services `SALES`, `SALES2`, SAP
 * client 100, basic credentials) on `origin`, and the keys of the data
 * path's suites; resolves to the instance id and the keys by name.
 */
export async function provisionCases(admin: AdminCall, origin: string): Promise<{ instanceId: string; keys: Record<string, { id: string; key: string }> }> {
  const sys = await admin("POST", "/admin/systems", { name: "S4" });
  assert.is(sys.status, 201, JSON.stringify(sys.body));
  const ins = await admin("POST", `/admin/systems/${sys.body.data.id}/instances`, {
    name: "prod",
    base_url: `${origin}/erp/`,
    services: { SALES: { path: "sap/sales/0001" }, SALES2: { path: "v2/ZSALES_SRV" } },
    sap_client: "100",
    auth: { type: "basic", username: "erp-user", password: "erp-pass" },
  });
  assert.is(ins.status, 201, JSON.stringify(ins.body));
  const keys: Record<string, { id: string; key: string }> = {};
  const key = async (name: string, body: Record<string, unknown>) => {
    const res = await admin("POST", "/admin/api-keys", { name, ...body });
    assert.is(res.status, 201, JSON.stringify(res.body));
    keys[name] = { id: res.body.data.id, key: res.body.data.key };
  };
  // The keys of the data path's suites.
  await key("app", {
    permissions: {
      prod: {
        SALES: { SalesOrders: ["list", "get", "update", "delete"], Customers: ["get"] },
        SALES2: { SalesOrderSet: ["list", "get", "update"] },
      },
    },
  });
  await key("reader", { permissions: { prod: { SALES: { SalesOrders: ["list", "get"], Customers: ["get"] } }, ghost: { "*": { "*": ["list"] } } } });
  await key("writer", { permissions: { prod: { SALES: { SalesOrders: ["create"], Customers: ["get"] } } } });
  await key("uploader", { permissions: { prod: { SALES: { Products: ["create"] } } } });
  await key("w2", { permissions: { prod: { "*": { "*": ["list", "create"] } } } });
  await key("admin", { type: "admin" });
  return { instanceId: ins.body.data.id, keys };
}

/** Starts the upstream and a world with the instance and the keys, listening on 127.0.0.1. */
export async function startCaseWorld(options: WorldOptions = {}): Promise<CaseWorld> {
  const upstream = await startCaseUpstream();
  const world = await createWorld(options);
  const admin: AdminCall = async (method, path, body) => {
    const res = await world.app.inject({ method: method as "POST", url: path, headers: AUTH, ...(body !== undefined ? { payload: body as object } : {}) });
    return { status: res.statusCode, body: json(res) };
  };
  const { instanceId, keys } = await provisionCases(admin, upstream.origin);
  await world.app.listen({ port: 0, host: "127.0.0.1" });
  return { world, upstream: upstream.server, all: upstream.all, origin: upstream.origin, port: (world.app.server.address() as AddressInfo).port, instanceId, keys };
}

/** Closes the world and the upstream; fails on any masked internal error. */
export async function stopCaseWorld(ctx: CaseWorld): Promise<void> {
  assert.equal(ctx.world.errors, [], "no masked internal errors");
  await ctx.world.close();
  ctx.upstream.closeAllConnections();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
}

/** One request of the data path's tables. */
export interface DataCase {
  readonly key?: string;
  readonly method: string;
  /** The request target exactly as sent. */
  readonly url: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

/** A multipart `$batch` body of one GET part. */
export const part = (url: string) => ["--b", "Content-Type: application/http", "", `GET ${url} HTTP/1.1`, "", "", "--b--", ""].join("\r\n");

export const BATCH = [
  "--batch_1",
  "Content-Type: application/http",
  "Content-Transfer-Encoding: binary",
  "",
  "GET SalesOrders?$top=1 HTTP/1.1",
  "Accept: application/json",
  "",
  "",
  "--batch_1",
  "Content-Type: application/http",
  "Content-Transfer-Encoding: binary",
  "",
  "GET /odata/prod/SALES/Customers('C1') HTTP/1.1",
  "",
  "",
  "--batch_1--",
  "",
].join("\r\n");

export const JSON_TYPE = { "content-type": "application/json" };
export const MULTIPART = { "content-type": "multipart/mixed; boundary=batch_1" };

/** The cases of test/gateway/data-path.test.ts and test/gateway/data/forward.test.ts, as requests. */
export const DATA_CASES: readonly DataCase[] = [
  // data-path.test.ts
  { key: "reader", method: "GET", url: `${SALES}/SalesOrders?$top=2&$select=ID` },
  { key: "reader", method: "GET", url: "/odata/qa/SALES/SalesOrders" },
  { key: "reader", method: "GET", url: "/odata/ghost/SALES/SalesOrders" },
  { key: "reader", method: "GET", url: "/odata/prod/OTHER/SalesOrders" },
  { key: "reader", method: "GET", url: `${SALES}/Products` },
  { key: "reader", method: "DELETE", url: `${SALES}/SalesOrders(1)` },
  { key: "reader", method: "GET", url: `${SALES}/SalesOrders(1)?$expand=Items($expand=Product)` },
  { key: "reader", method: "GET", url: `${SALES}/SalesOrders(1)?$expand=Customer` },
  { key: "reader", method: "GET", url: `${SALES}/$metadata` },
  { key: "reader", method: "POST", url: `${SALES}/$batch`, headers: MULTIPART, body: BATCH },
  { key: "reader", method: "POST", url: `${SALES}/$batch`, headers: MULTIPART, body: BATCH.replace("Customers('C1')", "Products('P1')") },
  { key: "reader", method: "POST", url: `${SALES}/$batch`, headers: { "content-type": "multipart/mixed; boundary=b" }, body: "--b--" },
  { key: "writer", method: "POST", url: `${SALES}/SalesOrders`, headers: JSON_TYPE, body: '{"ID":1,"Customer":{"ID":"C9","Name":"New"}}' },
  { key: "writer", method: "POST", url: `${SALES}/SalesOrders`, headers: JSON_TYPE, body: '{"ID":1,"Note":"a","ID":2}' },
  { key: "writer", method: "POST", url: `${SALES}/SalesOrders`, headers: JSON_TYPE, body: '{"ID":1,' },
  { key: "writer", method: "POST", url: `${SALES}/SalesOrders`, headers: { "content-type": "application/atom+xml" }, body: "<entry/>" },
  { key: "writer", method: "POST", url: `${SALES}/SalesOrders`, headers: JSON_TYPE, body: '{"ID":1, "Customer@odata.bind":"Customers(\'C1\')"}' },
  { key: "uploader", method: "POST", url: `${SALES}/Products`, headers: { "content-type": "text/plain", slug: "manual.txt" }, body: "%PDF-1.7 manual" },
  { key: "uploader", method: "POST", url: `${SALES}/Products`, headers: { "content-type": "text/plain" }, body: '{"ID":"P9","Category":{"ID":9}}' },
  { key: "uploader", method: "POST", url: `${SALES}/SalesOrders`, headers: { "content-type": "application/pdf" }, body: "%PDF-1.7 manual" },
  {
    key: "w2",
    method: "POST",
    url: `${SALES}/SalesOrders`,
    headers: { "content-type": "application/json; charset=utf-7" },
    body: '{"Note":"a+ACI-,+ACI-Items+ACI-:[{+ACI-ItemNo+ACI-:1}],+ACI-x+ACI-:+ACI-y"}',
  },
  { key: "w2", method: "POST", url: `${SALES}/SalesOrders`, headers: { "content-type": "application/json;charset=UTF-8;odata.metadata=minimal;charset=utf-7" }, body: '{"Note":"a"}' },
  { key: "w2", method: "POST", url: `${SALES}/SalesOrders`, headers: { "content-type": 'application/json; x="; charset=utf-8"; charset=utf-7' }, body: '{"Note":"a"}' },
  { key: "w2", method: "POST", url: "/odata/prod/x%3Fy=1/SalesOrders", headers: JSON_TYPE, body: "{}" },
  { key: "w2", method: "GET", url: `${SALES}/SalesOrders?sap-client=200` },
  { key: "w2", method: "POST", url: `${SALES}/SalesOrders`, headers: { "content-type": "application/json;charset=UTF-8", "sap-client": "200", "sap-contextid-accept": "header" }, body: '{"Note":"ü"}' },
  { key: "admin", method: "GET", url: `${SALES}/SalesOrders` },
  // data/forward.test.ts
  { method: "GET", url: `${SALES}/Customers('\\..\\..\\Customers%23')` },
  { method: "GET", url: `${SALES}/Customers('a%2F..%2F..%2FCustomers')` },
  { method: "GET", url: `${SALES}/Customers('x%23')` },
  { method: "GET", url: `${SALES}/Customers('x%3F$expand=Customer')` },
  { method: "GET", url: `${SALES}/Customers('%255C..%255CCustomers')` },
  { method: "GET", url: `${SALES}/Customers('a%20b;c&e+f..g')` },
  { method: "GET", url: `${SALES}/Customers('1')\\..\\Customers` },
  { method: "GET", url: `${SALES}/SalesOrders%5C..%5CCustomers` },
  { method: "GET", url: `${SALES}/Customers('1')%23/Customer` },
  { method: "GET", url: `${SALES}/SalesOrders/../Customers` },
  { method: "GET", url: `${SALES}/SalesOrders/%2e%2E/Customers` },
  { method: "GET", url: `${SALES}/SalesOrders/./Customers` },
  { method: "GET", url: `${SALES}/Customers('1')/..` },
  { method: "GET", url: `${SALES}/Customers('1')%2F..%2F..%2FCustomers` },
  { method: "GET", url: `${SALES}/Customers/%20$entity` },
  { method: "GET", url: `${SALES}/SalesOrders?%20$expand=Customer` },
  { method: "GET", url: `${SALES}/SalesOrders?+$expand=Customer` },
  { method: "GET", url: `${SALES}/SalesOrders?$expand%00=Customer` },
  { method: "GET", url: `${SALES}/SalesOrders?%E3%80%80$expand=Customer` },
  { method: "GET", url: `${SALES}/SalesOrders?EXPAND=Items($expand=Product)` },
  { method: "GET", url: `${SALES}/SalesOrders(1)?$EXPAND=Customer&expand-me=1` },
  { method: "GET", url: `${SALES}/SalesOrders?$expand=Customer&Expand=Items` },
  { method: "POST", url: `${SALES}/$batch`, headers: { "content-type": "multipart/mixed; boundary=b" }, body: part("SalesOrders?%20$expand=Items($expand=Product)") },
  { method: "POST", url: `${SALES}/$batch`, headers: JSON_TYPE, body: JSON.stringify({ requests: [{ id: "1", method: "GET", url: "SalesOrders?EXPAND=Items($expand=Product)" }] }) },
  { method: "GET", url: `${SALES}/SalesOrders(1)?foo=x%26$expand%3DItems` },
  { method: "GET", url: `${SALES}/SalesOrders?$filter=Note%20eq%20'a'%26$expand%3DItems` },
  { method: "GET", url: `${SALES}/SalesOrders?$filter=Note%20eq%20'AT%26T'` },
  { method: "GET", url: `${SALES}/SalesOrders(1)`, headers: JSON_TYPE, body: '{"Note":"x"}' },
  { method: "DELETE", url: `${SALES}/SalesOrders(1)`, headers: JSON_TYPE, body: '{"Note":"x"}' },
  { method: "HEAD", url: `${SALES}/SalesOrders(1)`, headers: JSON_TYPE, body: '{"Note":"x"}' },
  { method: "POST", url: `${SALES}/SalesOrders(1)`, headers: { ...JSON_TYPE, "x-http-method": "DELETE" }, body: '{"Note":"x"}' },
  { method: "POST", url: `${SALES}/SalesOrders(1)`, headers: { "x-http-method": "DELETE" } },
  { method: "PATCH", url: `${SALES}/SalesOrders(1)`, headers: { ...JSON_TYPE, "if-match": "*" }, body: '\ufeff{"Customer":{"ID":"C9"}}' },
  { method: "PATCH", url: `${SALES}/SalesOrders(1)`, headers: { "content-type": "text/plain", "if-match": "*" }, body: '\ufeff{"Customer":{"ID":"C9"}}' },
  { method: "PATCH", url: `${SALES}/SalesOrders(1)`, headers: { "content-type": "text/plain", "if-match": "*" }, body: '\u00a0{"Customer":{"ID":"C9"}}' },
  { method: "PATCH", url: `${SALES}/SalesOrders(1)`, headers: { "content-type": "text/plain", "if-match": "*" }, body: '\u3000{"Customer":{"ID":"C9"}}' },
  {
    method: "PATCH",
    url: `${SALES}/SalesOrders(1)`,
    headers: { "content-type": "text/plain", "if-match": "*" },
    body: '<?xml version="1.0"?><entry xmlns="http://www.w3.org/2005/Atom"><content/></entry>',
  },
  { method: "POST", url: `${SALES}/$batch?$expand=Customer`, headers: JSON_TYPE, body: JSON.stringify({ requests: [{ id: "1", method: "GET", url: "SalesOrders(1)" }] }) },
  { method: "GET", url: `${SALES}/$metadata?$filter=x` },
  { method: "GET", url: `${SALES}/?$expand=Customer` },
  { method: "GET", url: `${SALES}/?$format=json&sap-language=EN` },
  {
    method: "POST",
    url: `${SALES}/SalesOrders(1)`,
    headers: {
      "x-http-method": "MERGE",
      "x-http-method-override": "MERGE",
      "x-original-url": "/erp/sap/other/Customers",
      cookie: "SAP_SESSIONID=client",
      "sap-client": "200",
      accept: "application/json",
      prefer: "return=minimal",
      "odata-version": "4.0",
      "if-match": 'W/"1"',
      ...JSON_TYPE,
    },
    body: '{"Note":"m"}',
  },
  { method: "PATCH", url: `${SALES}/SalesOrders(1)`, headers: { ...JSON_TYPE, "content-encoding": "gzip" }, body: "{}" },
  { method: "PATCH", url: `${SALES}/SalesOrders(1)?sap-client=100`, headers: { ...JSON_TYPE, "if-match": "*" }, body: "{}" },
  { method: "PATCH", url: `${SALES}/SalesOrders(1)`, headers: JSON_TYPE, body: '{"Note":"upsert"}' },
  { method: "GET", url: `${SALES}/SalesOrders?sap-client=200` },
  { method: "POST", url: `${SALES}/$batch`, headers: JSON_TYPE, body: JSON.stringify({ requests: [{ id: "1", method: "GET", url: "SalesOrders(1)?sap-client=100" }] }) },
  { method: "GET", url: "/odata/prod/../$metadata" },
  { method: "GET", url: "/odata/prod/%2e%2E/" },
  { method: "GET", url: "/odata/prod/./$metadata" },
  { method: "GET", url: `${SALES}/SalesOrders%ZZ` },
  { method: "GET", url: "/odata/prod/API%ZZ/x" },
  { method: "GET", url: `${SALES}/SalesOrders(%C0%AF)` },
  { method: "GET", url: `${SALES}/SalesOrders?x=%ZZ` },
  { method: "GET", url: `${SALES}/SalesOrders?sap-user=x` },
  { method: "GET", url: `${SALES}/SalesOrders?saml2=x` },
  { method: "GET", url: `${SALES}/SalesOrders?sap-language=DE&sap-statistics=true` },
  { method: "PATCH", url: `${SALES}/SalesOrders(1)`, headers: { "content-type": "text/plain", "if-match": "*" }, body: `${" ".repeat(5000)}\n{"Customer":{"ID":"C9","Name":"new"}}` },
  { method: "HEAD", url: `${SALES}/SalesOrders/`, headers: { "x-csrf-token": "fetch" } },
  { method: "GET", url: `${SALES}/SalesOrders?$filter=Note+eq+'a;b%2Bc'&sap-language=EN&flag&$top=2` },
  { method: "GET", url: "/odata/prod/SALES2" },
  { method: "GET", url: "/odata/prod/SALES2/SalesOrderSet?search=abc&$inlinecount=allpages" },
  { method: "MERGE", url: "/odata/prod/SALES2/SalesOrderSet('1')", headers: JSON_TYPE, body: '{"Note":"v2"}' },
  { method: "DELETE", url: "/odata/prod/SALES2/SalesOrderSet('1')" },
];

/**
 * The data path's answer to a case, over a raw socket, with its request-log
 * entry (a path the router refuses, not valid percent-encoding, is answered
 * before the data path and logs nothing).
 */
export async function sendToDataPath(ctx: CaseWorld, c: DataCase, requestId: string) {
  const body = c.body ?? "";
  const head = [
    `${c.method} ${c.url} HTTP/1.1`,
    `Host: 127.0.0.1:${ctx.port}`,
    `Authorization: Bearer ${ctx.keys[c.key ?? "app"]!.key}`,
    `X-Request-Id: ${requestId}`,
    ...Object.entries(c.headers ?? {}).map(([n, v]) => `${n}: ${v}`),
    ...(body !== "" || c.method === "POST" ? [`Content-Length: ${Buffer.byteLength(body)}`] : []),
  ];
  const res = await rawHttp(ctx.port, head.join("\r\n"), body);
  await ctx.world.layer.logWriter.flush();
  const logged = (await ctx.world.store.logs.query({ limit: 1000 })).items.find((e) => e.requestId === requestId);
  const entry = logged ?? { accesses: [], upstreamMethod: "", upstreamUrl: "", denialStep: "", errorCode: JSON.parse(res.body).error.code as string };
  if (logged === undefined) assert.is(JSON.parse(res.body).error.message, "the request path is not valid percent-encoding", `only router refusals log nothing: ${c.url}`);
  return { res, entry };
}

/** The instance a data path URL names, decoded. */
export function instanceOf(url: string): string {
  return decodeURIComponent(url.split("/")[2]!);
}

/** The body of `POST /admin/api-keys/{id}/explain` for a case: the request as the client sends it (a body's length declared). */
export function explainRequestOf(c: DataCase): Record<string, unknown> {
  const body = c.body ?? "";
  const headers: Record<string, string> = { ...c.headers };
  if (body !== "" || c.method === "POST") headers["content-length"] = String(Buffer.byteLength(body));
  return { instance: instanceOf(c.url), method: c.method, url: c.url, headers, ...(body !== "" ? { body } : {}) };
}
