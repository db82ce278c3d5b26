/**
 * Unknown services and methods answered as each RPC protocol expects
 * (gRPC-Web: HTTP 200 with `grpc-status: 12`; Connect: `unimplemented`),
 * while REST 404s stay the envelope, and services on the router are never
 * shadowed. gRPC over HTTP/2 is covered end to end (test/e2e/grpc-conventions).
 */
import { create } from "@bufbuild/protobuf";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { HealthCheckRequestSchema } from "../../../src/gen/grpc/health/v1/health_pb.js";
import { isRpcPath, rpcKindOf, unimplementedMessage } from "../../../src/gateway/rpc/unimplemented.js";
import { decodeTextBody, readFrames, requestBody } from "../../../test-support/grpc-web.js";
import { createWorld, type World } from "../../../test-support/world.js";

const units = suite("unknown RPCs: recognising an RPC call");

const kind = (method: string, url: string, headers: Record<string, string>) => {
  const [path, query = ""] = url.split("?") as [string, string?];
  return rpcKindOf({ method, path, query: new URLSearchParams(query), headers });
};

units("gRPC, gRPC-Web (binary, text) and Connect streaming content types are RPCs on any path", () => {
  assert.equal(kind("POST", "/x", { "content-type": "application/grpc" }), { protocol: "grpc", json: false });
  assert.equal(kind("POST", "/x", { "content-type": "application/grpc+json" }), { protocol: "grpc", json: true });
  assert.equal(kind("POST", "/x", { "content-type": "application/grpc-web+proto" }), { protocol: "grpc-web", json: false, text: false });
  assert.equal(kind("POST", "/x", { "content-type": "Application/GRPC-Web-Text" }), { protocol: "grpc-web", json: false, text: true });
  assert.equal(kind("POST", "/x", { "content-type": "application/connect+json" }), { protocol: "connect", json: true, stream: true });
});

units("Connect unary: JSON or proto with Connect-Protocol-Version, or to a /<package>.<Service>/<Method> path; GET with connect=v1", () => {
  assert.equal(kind("POST", "/a.B/C", { "content-type": "application/json" }), { protocol: "connect", json: true, stream: false });
  assert.equal(kind("POST", "/anything", { "content-type": "application/proto", "connect-protocol-version": "1" }), { protocol: "connect", json: false, stream: false });
  assert.equal(kind("GET", "/a.B/C?connect=v1&encoding=json&message=%7B%7D", {}), { protocol: "connect", json: true, stream: false });
});

units("REST requests are not RPCs: JSON to /admin paths, plain GETs, forms, requests without a body type", () => {
  assert.is(kind("POST", "/admin/nope", { "content-type": "application/json" }), undefined);
  assert.is(kind("POST", "/a.B/C", { "content-type": "application/x-www-form-urlencoded" }), undefined);
  assert.is(kind("GET", "/a.B/C", {}), undefined);
  assert.is(kind("POST", "/odata/prod/API_BP/A_BusinessPartner", { "content-type": "application/json" }), undefined);
  assert.is(isRpcPath("/api-reference/openapi.json"), false);
  assert.is(isRpcPath("/grpc.health.v1.Health/Check"), true);
});

units("messages say what is unknown, as grpc-go words it", () => {
  const known = new Set(["erplink.admin.v1.SystemService"]);
  assert.is(unimplementedMessage("/erplink.admin.v1.SystemService/Nope", known), "unknown method Nope for service erplink.admin.v1.SystemService");
  assert.is(unimplementedMessage("/no.Such/Method", known), "unknown service no.Such");
  assert.is(unimplementedMessage("/a/b/c", known), "malformed method name: /a/b/c");
});

units.run();

const gw = suite<{ world: World }>("unknown RPCs through the gateway");

gw.before.each(async (ctx) => {
  ctx.world = await createWorld();
});
gw.after.each(async (ctx) => {
  await ctx.world.close();
});

const EMPTY_FRAME = Buffer.from([0, 0, 0, 0, 0]);

gw("gRPC-Web, unknown service: HTTP 200, grpc-status 12 in the headers (trailers-only), empty body", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/no.Such/Method",
    headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
    payload: EMPTY_FRAME,
  });
  assert.is(res.statusCode, 200);
  assert.is(res.headers["content-type"], "application/grpc-web+proto");
  assert.is(res.headers["grpc-status"], "12");
  assert.is(res.headers["grpc-message"], "unknown%20service%20no.Such");
  assert.is(res.body, "");
  assert.ok(typeof res.headers["x-request-id"] === "string");
});

gw("gRPC-Web text, unknown method of a served service: the same, under the text content type", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/erplink.admin.v1.SystemService/Nope",
    headers: { "content-type": "application/grpc-web-text", "x-grpc-web": "1" },
    payload: EMPTY_FRAME.toString("base64"),
  });
  assert.is(res.statusCode, 200);
  assert.is(res.headers["content-type"], "application/grpc-web-text+proto");
  assert.is(res.headers["grpc-status"], "12");
  assert.is(decodeURIComponent(String(res.headers["grpc-message"])), "unknown method Nope for service erplink.admin.v1.SystemService");
});

gw("Connect unary, unknown method: unimplemented error JSON with Connect's HTTP status", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/erplink.admin.v1.SystemService/Nope",
    headers: { "content-type": "application/json", "connect-protocol-version": "1" },
    payload: "{}",
  });
  assert.is(res.statusCode, 501);
  assert.is(res.headers["content-type"], "application/json");
  assert.equal(res.json(), { code: "unimplemented", message: "unknown method Nope for service erplink.admin.v1.SystemService" });
});

gw("Connect GET and Connect streaming, unknown service: unimplemented in each framing", async (ctx) => {
  const get = await ctx.world.app.inject({ method: "GET", url: "/no.Such/Get?connect=v1&encoding=json&message=%7B%7D" });
  assert.is(get.statusCode, 501);
  assert.equal(get.json(), { code: "unimplemented", message: "unknown service no.Such" });

  const stream = await ctx.world.app.inject({
    method: "POST",
    url: "/no.Such/Stream",
    headers: { "content-type": "application/connect+json" },
    payload: Buffer.concat([Buffer.from([0, 0, 0, 0, 2]), Buffer.from("{}")]),
  });
  assert.is(stream.statusCode, 200);
  assert.is(stream.headers["content-type"], "application/connect+json");
  const body = stream.rawPayload;
  assert.is(body.readUInt8(0), 0b10, "end-stream flag");
  assert.is(body.readUInt32BE(1), body.length - 5);
  assert.equal(JSON.parse(body.subarray(5).toString("utf8")), { error: { code: "unimplemented", message: "unknown service no.Such" } });
});

gw("REST 404s and 405s are unchanged: unknown /admin path, a plain unknown path, a JSON POST to a non-RPC path", async (ctx) => {
  for (const [method, url, headers] of [
    ["POST", "/admin/nope", { "content-type": "application/json" }],
    ["GET", "/nope", {}],
    ["POST", "/nope/deeper", { "content-type": "application/json" }],
  ] as const) {
    const res = await ctx.world.app.inject({ method, url, headers, payload: method === "POST" ? "{}" : undefined });
    assert.is(res.statusCode, 404, `${method} ${url}`);
    const body = res.json();
    assert.equal(Object.keys(body.error).sort(), ["code", "message", "requestId"]);
    assert.is(body.error.code, "NOT_FOUND");
    assert.is(body.error.message, `no route for ${method} ${url}`);
  }
  const wrongMethod = await ctx.world.app.inject({ method: "PUT", url: "/admin/systems" });
  assert.is(wrongMethod.statusCode, 405);
  assert.is(wrongMethod.json().error.code, "METHOD_NOT_ALLOWED");
});

gw("served methods are not shadowed: health, reflection's path and an admin method answer as themselves", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/grpc.health.v1.Health/Check",
    headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
    payload: requestBody(HealthCheckRequestSchema, create(HealthCheckRequestSchema, {})),
  });
  assert.is(res.statusCode, 200);
  assert.is(res.headers["grpc-status"], undefined, "not trailers-only");
  assert.equal(readFrames(res.rawPayload).trailer, { "grpc-status": "0" });
  const admin = await ctx.world.app.inject({
    method: "POST",
    url: "/erplink.admin.v1.SystemService/ListSystems",
    headers: { "content-type": "application/json" },
    payload: "{}",
  });
  assert.is(admin.statusCode, 401, "the admin service answered (no token), not unimplemented");
  assert.is(admin.json().code, "unauthenticated");
  // Text answers of served methods are decodable frames too.
  const text = await ctx.world.app.inject({
    method: "POST",
    url: "/grpc.health.v1.Health/Check",
    headers: { "content-type": "application/grpc-web-text" },
    payload: EMPTY_FRAME.toString("base64"),
  });
  assert.equal(readFrames(decodeTextBody(text.body)).trailer, { "grpc-status": "0" });
});

gw.run();
