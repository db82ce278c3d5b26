/**
 * Every answer of erplink's own is in the envelope with a request id,
 * whichever layer produced it, over a real port (the one-port HTTP/1.1 +
 * h2c server): requests Node's HTTP/1.1 parser refuses (Fastify's
 * clientErrorHandler, which the dual-protocol server passes them to),
 * methods the route table does not declare (405 with `Allow`, before
 * authentication), path parameters longer than the router takes (414),
 * paths no route matches (404), and `Location` on a 201.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { rawHttp, type RawResponse } from "../../test-support/raw-http.js";

const REQ_ID = /^req_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const errors = suite<{ server: RunningErplink }>("e2e: protocol-level answers in the envelope");

errors.before(async (ctx) => {
  ctx.server = await startErplink({ ERPLINK_PUBLIC_URL: "https://api.example.com/erp" });
});
errors.after(async (ctx) => {
  await ctx.server?.close();
});

/** Asserts an answer in the envelope: status, code, message, and the request id in both the header and the body. */
function assertEnvelope(res: RawResponse, status: number, code: string, message: string): void {
  assert.is(res.status, status, res.body);
  assert.is(res.headers["content-type"], "application/json; charset=utf-8");
  assert.match(res.headers["x-request-id"]!, REQ_ID);
  assert.equal(JSON.parse(res.body), { error: { code, message, requestId: res.headers["x-request-id"] } });
}

errors("a request line Node's parser refuses: 400 VALIDATION_ERROR in the envelope, then the connection closes", async ({ server }) => {
  for (const head of ["GARBAGE", "GET /admin/systems HTTP/9.9", "GET /admin systems HTTP/1.1\r\nHost: x"]) {
    const res = await rawHttp(server.port, head);
    assertEnvelope(res, 400, "VALIDATION_ERROR", "the request is not well-formed HTTP/1.1");
    assert.is(res.headers.connection, "close");
    assert.is(res.headers["cache-control"], "no-store");
  }
  const length = await rawHttp(server.port, "POST /admin/systems HTTP/1.1\r\nHost: x\r\nContent-Length: abc");
  assertEnvelope(length, 400, "VALIDATION_ERROR", "the request is not well-formed HTTP/1.1");
});

errors("a well-formed request line with a method token Node does not know: 501 NOT_IMPLEMENTED", async ({ server }) => {
  const res = await rawHttp(server.port, "FROB /admin/systems HTTP/1.1\r\nHost: x");
  assertEnvelope(res, 501, "NOT_IMPLEMENTED", "the request method is not one erplink implements");
});

errors("headers larger than Node takes: 431 HEADERS_TOO_LARGE", async ({ server }) => {
  const res = await rawHttp(server.port, `GET /admin/systems HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}`);
  assertEnvelope(res, 431, "HEADERS_TOO_LARGE", "the request's headers are too large");
});

errors("a method the path does not declare (QUERY, TRACE, …): 405 with Allow, before authentication, with or without a body", async ({ server }) => {
  const cases: [string, string][] = [
    ["QUERY /admin/systems HTTP/1.1\r\nHost: x", "GET, POST, HEAD"],
    ["QUERY /admin/systems HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2", "GET, POST, HEAD"],
    ["TRACE /admin/systems/sys_00000000000000000000000000 HTTP/1.1\r\nHost: x", "GET, PATCH, DELETE, HEAD"],
    ["PUT /admin/api-keys/key_00000000000000000000000000 HTTP/1.1\r\nHost: x", "GET, PATCH, DELETE, HEAD"],
    ["OPTIONS /admin/logs HTTP/1.1\r\nHost: x", "GET, HEAD"],
  ];
  for (const [head, allow] of cases) {
    const method = head.slice(0, head.indexOf(" "));
    const res = await rawHttp(server.port, head, head.includes("Content-Length: 2") ? "{}" : "");
    assertEnvelope(res, 405, "METHOD_NOT_ALLOWED", `method ${method} is not allowed on this path`);
    assert.is(res.headers.allow, allow, head);
  }
});

errors("a path parameter longer than any id or name: 414 URI_TOO_LONG in the envelope; one within the limit names nothing: 404", async ({ server }) => {
  const auth = `Authorization: ${server.authorization}`;
  const long = await rawHttp(server.port, `GET /admin/systems/${"x".repeat(257)} HTTP/1.1\r\nHost: x\r\n${auth}`);
  assertEnvelope(long, 414, "URI_TOO_LONG", "a path segment is longer than 256 characters, more than any id or name");
  assert.is(long.headers["cache-control"], "no-store");
  const within = await rawHttp(server.port, `GET /admin/systems/${"x".repeat(256)} HTTP/1.1\r\nHost: x\r\n${auth}`);
  assertEnvelope(within, 404, "NOT_FOUND", `system "${"x".repeat(100)}…" not found`);
});

errors("a path no route matches: 404 in the envelope (no token needed)", async ({ server }) => {
  const res = await rawHttp(server.port, "GET /admin/nothing-here HTTP/1.1\r\nHost: x");
  assertEnvelope(res, 404, "NOT_FOUND", "no route for GET /admin/nothing-here");
});

errors("a Connect call over HTTP/1.1 whose Host makes no URL: 400 invalid_argument in Connect's error JSON, not an empty 200", async ({ server }) => {
  const body = JSON.stringify({ apiKey: "erpl_x" });
  for (const host of ["x:99999", "["]) {
    const res = await rawHttp(
      server.port,
      `POST /erplink.authz.v1.AuthorizationService/Authorize HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}`,
      body,
    );
    assert.is(res.status, 400, host);
    assert.is(res.headers["content-type"], "application/json", host);
    assert.match(res.headers["x-request-id"]!, REQ_ID);
    assert.equal(JSON.parse(res.body), { code: "invalid_argument", message: "the request's authority (:authority or Host) is missing or not a valid host" }, host);
  }
});

errors("201 Created carries Location under ERPLINK_PUBLIC_URL (its path prefix included)", async ({ server }) => {
  const auth = { authorization: server.authorization, "content-type": "application/json" };
  const created = await fetch(`${server.baseUrl}/admin/systems`, { method: "POST", headers: auth, body: JSON.stringify({ name: "located" }) });
  const body = (await created.json()) as { data: { id: string } };
  assert.is(created.status, 201);
  assert.is(created.headers.get("location"), `https://api.example.com/erp/admin/systems/${body.data.id}`);
  const session = await fetch(`${server.baseUrl}/admin/sessions`, { method: "POST", headers: { authorization: server.authorization } });
  const s = (await session.json()) as { data: { id: string } };
  assert.is(session.status, 201);
  assert.is(session.headers.get("location"), `https://api.example.com/erp/admin/sessions/${s.data.id}`);
});

errors.run();
