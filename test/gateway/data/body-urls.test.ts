/**
 * URLs in request bodies outside `$batch` (`Nav@odata.bind`,
 * `@odata.id`) are forwarded as the client wrote them, so they must be
 * authorized as written. An absolute URL must not be read through the
 * WHATWG URL parser's normalization (dot segments, `%2e`, a fragment cut
 * off, any scheme) before the checks that `walkReference` and the body
 * analyzer make on it: what was authorized is then not what the back end
 * receives. The `$batch` module's resolver (`resolveTarget`) refuses all of
 * these; the data path's (`relativeToRoot` in `src/gateway/data/analyze.ts`)
 * must too (README, "Bind URLs in bodies": "a fragment … anywhere in them
 * is refused (400)").
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { V4_METADATA } from "../../../test-support/odata/fixtures.js";
import { createWorld, type World } from "../../../test-support/world.js";
import { json, post } from "../../../test-support/http.js";

interface Ctx {
  world: World;
  upstream: http.Server;
  /** Bodies of the data requests that reached the back end. */
  seen: { method: string; url: string; body: string }[];
  key: string;
}

const BodyUrls = suite<Ctx>("data path: URLs in request bodies");

BodyUrls.before.each(async (ctx) => {
  ctx.seen = [];
  ctx.upstream = http.createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += String(chunk);
    if (req.url?.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
      return;
    }
    // erplink's CSRF token fetch before a write is not a data request.
    if (req.headers["x-csrf-token"] === "Fetch") {
      res.writeHead(200, { "x-csrf-token": "t" }).end();
      return;
    }
    ctx.seen.push({ method: req.method ?? "", url: req.url ?? "", body });
    res.writeHead(201, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}/odata`;
  ctx.world = await createWorld();
  const sys = json(await post(ctx.world.app, "/admin/systems", { name: "S4" })).data.id;
  const ins = await post(ctx.world.app, `/admin/systems/${sys}/instances`, {
    name: "prod",
    base_url: `${base}/`,
    services: { SALES: { path: "sap/sales/0001" } },
  });
  assert.is(ins.statusCode, 201);
  // The key may create orders and read customers; employees are not its business.
  ctx.key = json(
    await post(ctx.world.app, "/admin/api-keys", {
      name: "app",
      permissions: { prod: { SALES: { SalesOrders: ["create", "get"], Customers: ["get"] } } },
    }),
  ).data.key;
});

BodyUrls.after.each(async (ctx) => {
  await ctx.world.close();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
});

const create = (ctx: Ctx, body: unknown) =>
  ctx.world.app.inject({
    method: "POST",
    url: "/odata/prod/SALES/SalesOrders",
    headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" },
    payload: JSON.stringify(body),
  });

BodyUrls("control: a bind by an absolute URL below the service root is authorized and forwarded as written", async (ctx) => {
  const body = { ID: 1, "Customer@odata.bind": "http://localhost:80/odata/prod/SALES/Customers('C1')" };
  const res = await create(ctx, body);
  assert.is(res.statusCode, 201, res.body);
  assert.equal(ctx.seen, [{ method: "POST", url: "/odata/sap/sales/0001/SalesOrders", body: JSON.stringify(body) }]);
});

// Each URL reads, once the WHATWG parser has normalized it, as Customers('C1') (which the key may read); as
// written (what the back end receives) it names something else: an entity set the key may not touch, a
// fragment, a scheme that is not HTTP. The batch module refuses every one of them in a part's body.
/** [what, URL, status, error code, message]: the refusal of each. */
const NORMALIZED_AWAY: readonly [string, string, number, string, string][] = [
  ["a dot segment after a set the key may not touch", "http://localhost/odata/prod/SALES/Employees('E1')/../Customers('C1')", 403, "FORBIDDEN", "'http://localhost/odata/prod/SALES/Employees('E1')/../Cust...' in 'Customer@odata.bind' leaves the service root"],
  ["an encoded dot segment (%2e%2e)", "http://localhost/odata/prod/SALES/Employees('E1')/%2e%2e/Customers('C1')", 403, "FORBIDDEN", "'http://localhost/odata/prod/SALES/Employees('E1')/%2e%2e/...' in 'Customer@odata.bind' leaves the service root"],
  ["a fragment (README: refused)", "http://localhost/odata/prod/SALES/Customers('C1')#/../Employees('E1')", 400, "VALIDATION_ERROR", "'http://localhost/odata/prod/SALES/Customers('C1')#/../Emp...' in the body: the URL has a fragment"],
  ["a '.' segment", "http://localhost/odata/prod/SALES/./Customers('C1')", 403, "FORBIDDEN", "'http://localhost/odata/prod/SALES/./Customers('C1')' in 'Customer@odata.bind' leaves the service root"],
  ["another service's path, dotted back", "http://localhost/odata/prod/OTHER/../SALES/Customers('C1')", 403, "FORBIDDEN", "'http://localhost/odata/prod/OTHER/../SALES/Customers('C1')' in 'Customer@odata.bind' leaves the service root"],
  ["another scheme (not http or https), as in a $batch part's body", "ftp://localhost/odata/prod/SALES/Customers('C1')", 403, "FORBIDDEN", "'ftp://localhost/odata/prod/SALES/Customers('C1')' in 'Customer@odata.bind' leaves the service root"],
];

for (const [what, url, status, code, message] of NORMALIZED_AWAY) {
  BodyUrls(`a bind URL with ${what} is refused, not authorized as its normalized form and forwarded as written: ${url}`, async (ctx) => {
    const res = await create(ctx, { ID: 1, "Customer@odata.bind": url });
    assert.is(res.statusCode, status, `${res.body}; the back end received ${JSON.stringify(ctx.seen)}`);
    assert.equal(JSON.parse(res.body), { error: { code, message, requestId: res.headers["x-request-id"] } });
    assert.equal(ctx.seen, [], "nothing reaches the back end");
  });
}

// The authority of an absolute URL was not checked: encoded delimiters there (README: "an encoded `/`, `\`, `#`, `?`
// or `%` anywhere in them is refused") reach a back end that decodes the URL before parsing it, which then reads the
// path inside the authority (`http://..\Employees('E1')#…`: host `..`, path /Employees('E1')), not the one authorized.
const ENCODED_AUTHORITIES: readonly [string, string][] = [
  ["http://..%5CEmployees('E1')%23localhost/odata/prod/SALES/Customers('C1')", "'http://..%5CEmployees('E1')%23localhost/odata/prod/SALES/...' in the body: the URL's authority is percent-encoded"],
  ["http://h%2F..%2F..%2FEmployees('E1')%3F/odata/prod/SALES/Customers('C1')", "'http://h%2F..%2F..%2FEmployees('E1')%3F/odata/prod/SALES/...' in the body: the URL's authority is percent-encoded"],
];

for (const [url, message] of ENCODED_AUTHORITIES) {
  BodyUrls(`a bind URL with encoded delimiters in its authority is refused (a decoding back end reads another path there): ${url}`, async (ctx) => {
    const res = await create(ctx, { ID: 1, "Customer@odata.bind": url });
    assert.is(res.statusCode, 400, `${res.body}; the back end received ${JSON.stringify(ctx.seen)}`);
    assert.equal(JSON.parse(res.body), { error: { code: "VALIDATION_ERROR", message, requestId: res.headers["x-request-id"] } });
    assert.equal(ctx.seen, [], "nothing reaches the back end");
  });
}

// Relative URLs in a body are read against its context URL (OData JSON Format §4.6), so an `@odata.context` that a
// resolving back end reads as another service's root sends the relative bind there: `Customers('C1')`, authorized in
// this service, is read as an entity of /odata/sap/sales/0002. A relative context was accepted for starting with
// `$metadata`, dot segments after it or not (forwarded as written, like every URL in a body).
BodyUrls("control: a relative @odata.context naming this service's $metadata is accepted and forwarded as written", async (ctx) => {
  const body = { "@odata.context": "$metadata#SalesOrders/$entity", ID: 1, "Customer@odata.bind": "Customers('C1')" };
  const res = await create(ctx, body);
  assert.is(res.statusCode, 201, res.body);
  assert.equal(ctx.seen, [{ method: "POST", url: "/odata/sap/sales/0001/SalesOrders", body: JSON.stringify(body) }]);
});

const CONTEXTS_OUT: readonly string[] = [
  "$metadata/../../0002/$metadata#SalesOrders/$entity",
  "$metadata/%2e%2e/%2E%2e/0002/$metadata#SalesOrders/$entity",
  "$metadata%2F..%2F..%2F0002%2F$metadata#SalesOrders/$entity",
  "$metadata/../../0002/$metadata",
];

for (const context of CONTEXTS_OUT) {
  BodyUrls(`a relative @odata.context that walks out of the service root after '$metadata' is refused: ${context}`, async (ctx) => {
    const res = await create(ctx, { "@odata.context": context, ID: 1, "Customer@odata.bind": "Customers('C1')" });
    assert.is(res.statusCode, 400, `${res.body}; the back end received ${JSON.stringify(ctx.seen)}`);
    assert.equal(JSON.parse(res.body), {
      error: { code: "VALIDATION_ERROR", message: "'@odata.context' must point to this service's $metadata", requestId: res.headers["x-request-id"] },
    });
    assert.equal(ctx.seen, [], "nothing reaches the back end");
  });
}

BodyUrls.run();
