/**
 * CORS for browser clients of the RPC endpoints: off by default (no header
 * at all, preflights refused in the envelope), preflights of listed origins
 * answered with what connect-web and grpc-web send, exposed status and
 * rate-limit headers, and never anything cross-origin on `/admin` (the
 * dashboard's cookie must stay same-origin). Browser-level checks are in
 * test/e2e/grpc-web-browser.test.ts.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { loadConfig, parseCorsOrigins } from "../../../src/config.js";
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS } from "../../../src/gateway/rpc/cors.js";
import { AUTH, createWorld, type World } from "../../../test-support/world.js";

const APP = "https://app.example.com";
const AUTHORIZE = "/erplink.authz.v1.AuthorizationService/Authorize";
const LIST_SYSTEMS = "/erplink.admin.v1.SystemService/ListSystems";

function preflight(world: World, url: string, origin: string, requestHeaders = "content-type,x-grpc-web,x-user-agent,authorization") {
  return world.app.inject({
    method: "OPTIONS",
    url,
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": requestHeaders },
  });
}

const config = suite("ERPLINK_CORS_ORIGINS");

config("comma-separated origins, normalized as browsers send them; unset or empty is none", () => {
  const problems: string[] = [];
  assert.equal(parseCorsOrigins(" https://App.Example.com:443 , http://localhost:5173/,http://127.0.0.1:8081", problems), [
    "https://app.example.com",
    "http://localhost:5173",
    "http://127.0.0.1:8081",
  ]);
  assert.equal(problems, []);
  assert.equal(loadConfig({}).corsOrigins, []);
  assert.equal(loadConfig({ ERPLINK_CORS_ORIGINS: "" }).corsOrigins, []);
});

config("anything but a bare http(s) origin is a configuration error naming it: wildcard, path, null, other schemes, credentials", () => {
  for (const bad of ["*", "https://app.example.com/path", "null", "ftp://x.example", "https://user@app.example.com", "app.example.com"]) {
    assert.throws(() => loadConfig({ ERPLINK_CORS_ORIGINS: bad }), (err: Error) => err.message.includes(`ERPLINK_CORS_ORIGINS: "${bad}" is not an origin`), bad);
  }
});

config.run();

const off = suite<{ world: World }>("CORS off (the default)");
off.before.each(async (ctx) => {
  ctx.world = await createWorld();
});
off.after.each(async (ctx) => {
  await ctx.world.close();
});

off("a preflight is refused: 405 METHOD_NOT_ALLOWED in the envelope, Allow: POST, no CORS header", async (ctx) => {
  const res = await preflight(ctx.world, AUTHORIZE, APP);
  assert.is(res.statusCode, 405);
  assert.is(res.headers.allow, "POST");
  assert.is(res.headers["access-control-allow-origin"], undefined);
  assert.is(res.headers["access-control-allow-headers"], undefined);
  const body = res.json();
  assert.equal(Object.keys(body.error).sort(), ["code", "message", "requestId"]);
  assert.is(body.error.code, "METHOD_NOT_ALLOWED");
  assert.is(body.error.message, `method OPTIONS is not allowed on this path: cross-origin calls from ${APP} are not allowed (ERPLINK_CORS_ORIGINS)`);
  assert.is(body.error.requestId, res.headers["x-request-id"]);
});

off("an RPC call with an Origin gets no CORS header (and no Vary)", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: LIST_SYSTEMS,
    headers: { ...AUTH, origin: APP, "content-type": "application/json" },
    payload: "{}",
  });
  assert.is(res.statusCode, 200);
  for (const h of Object.keys(res.headers)) assert.not.match(h, /^access-control-/);
  assert.is(res.headers.vary, undefined);
});

off.run();

const on = suite<{ world: World }>("CORS for listed origins");
on.before.each(async (ctx) => {
  ctx.world = await createWorld({ corsOrigins: [APP] });
});
on.after.each(async (ctx) => {
  await ctx.world.close();
});

on("a preflight of a listed origin: 204 with the methods, the protocols' headers plus Authorization, a max age", async (ctx) => {
  const res = await preflight(ctx.world, AUTHORIZE, APP);
  assert.is(res.statusCode, 204, res.body);
  assert.is(res.body, "");
  assert.is(res.headers["access-control-allow-origin"], APP);
  assert.is(res.headers["access-control-allow-methods"], "POST, GET");
  const allowed = String(res.headers["access-control-allow-headers"]).toLowerCase().split(", ");
  for (const h of ["content-type", "connect-protocol-version", "connect-timeout-ms", "x-grpc-web", "x-user-agent", "grpc-timeout", "authorization", "x-request-id"]) {
    assert.ok(allowed.includes(h), `${h} allowed: ${allowed.join(",")}`);
  }
  assert.is(res.headers["access-control-max-age"], "7200");
  assert.is(res.headers["access-control-allow-credentials"], undefined, "never credentials");
  assert.is(res.headers.vary, "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
});

on("a preflight to an unknown RPC path of a listed origin is answered too, so the browser can read the UNIMPLEMENTED", async (ctx) => {
  const res = await preflight(ctx.world, "/no.Such/Method", APP);
  assert.is(res.statusCode, 204);
  assert.is(res.headers["access-control-allow-origin"], APP);
  const call = await ctx.world.app.inject({
    method: "POST",
    url: "/no.Such/Method",
    headers: { origin: APP, "content-type": "application/grpc-web+proto" },
    payload: Buffer.from([0, 0, 0, 0, 0]),
  });
  assert.is(call.headers["grpc-status"], "12");
  assert.is(call.headers["access-control-allow-origin"], APP);
});

on("a preflight of another origin (another scheme, port or host) is refused in the envelope", async (ctx) => {
  for (const origin of ["http://app.example.com", "https://app.example.com:8443", "https://evil.example", "null"]) {
    const res = await preflight(ctx.world, AUTHORIZE, origin);
    assert.is(res.statusCode, 405, origin);
    assert.is(res.headers["access-control-allow-origin"], undefined, origin);
    assert.is(res.json().error.code, "METHOD_NOT_ALLOWED");
  }
});

on("the answer to a listed origin exposes grpc-status, grpc-message and the rate-limit headers; Vary: Origin", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: LIST_SYSTEMS,
    headers: { ...AUTH, origin: APP, "content-type": "application/json" },
    payload: "{}",
  });
  assert.is(res.statusCode, 200);
  assert.is(res.headers["access-control-allow-origin"], APP);
  assert.is(res.headers.vary, "Origin");
  assert.is(res.headers["access-control-allow-credentials"], undefined);
  const exposed = String(res.headers["access-control-expose-headers"]).toLowerCase().split(", ");
  for (const h of ["grpc-status", "grpc-message", "grpc-status-details-bin", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit", "ratelimit-policy", "retry-after", "x-request-id"]) {
    assert.ok(exposed.includes(h), `${h} exposed`);
  }
  // The headers exposed are ones the answer really carries.
  assert.ok(typeof res.headers["x-ratelimit-remaining"] === "string");
  assert.equal(CORS_EXPOSED_HEADERS.length, new Set(CORS_EXPOSED_HEADERS.map((h) => h.toLowerCase())).size, "no duplicates");
  assert.equal(CORS_ALLOWED_HEADERS.length, new Set(CORS_ALLOWED_HEADERS.map((h) => h.toLowerCase())).size, "no duplicates");
});

on("another origin's call is served (CORS is the browser's check) but gets no allow-origin; Vary: Origin", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: LIST_SYSTEMS,
    headers: { ...AUTH, origin: "https://evil.example", "content-type": "application/json" },
    payload: "{}",
  });
  assert.is(res.statusCode, 200);
  assert.is(res.headers["access-control-allow-origin"], undefined);
  assert.is(res.headers.vary, "Origin");
});

on("never on /admin, the dashboard, the API reference or /healthz, even for a listed origin", async (ctx) => {
  for (const url of ["/admin/systems", "/admin/sessions", "/dashboard/", "/api-reference/openapi.json", "/healthz"]) {
    const pre = await preflight(ctx.world, url, APP);
    assert.is(pre.headers["access-control-allow-origin"], undefined, `preflight ${url}`);
    assert.ok(pre.statusCode === 404 || pre.statusCode === 405, `preflight ${url}: ${pre.statusCode}`);
    const get = await ctx.world.app.inject({ method: "GET", url, headers: { ...AUTH, origin: APP } });
    for (const h of Object.keys(get.headers)) assert.not.match(h, /^access-control-/, `GET ${url}`);
  }
});

on.run();
