/**
 * A Connect handler that fails (a bug: Connect's handlers answer errors
 * themselves) on the Fastify route of src/gateway/rpc/plugin.ts: logged, and
 * the call answered `internal` in its protocol's answer (Connect JSON, gRPC-Web
 * trailers), not an empty 200. The h2c shortcut's side:
 * test/gateway/rpc/direct.test.ts.
 */
import { createConnectRouter, type ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import Fastify from "fastify";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AuthorizationService } from "../../../src/gen/erplink/authz/v1/authorization_pb.js";
import { registerRpc } from "../../../src/gateway/rpc/plugin.js";

const AUTHORIZE = `/${AuthorizationService.typeName}/${AuthorizationService.method.authorize.name}`;

/** Authorize's handler, failing before it answers. */
function failingHandler(): UniversalHandler {
  const other = createConnectRouter();
  other.service(AuthorizationService, { authorize: () => ({}) });
  const real = other.handlers[0]!;
  return Object.assign(
    async () => {
      throw new Error("handler bug");
    },
    {
      service: real.service,
      method: real.method,
      requestPath: real.requestPath,
      protocolNames: real.protocolNames,
      supportedContentType: real.supportedContentType,
      allowedMethods: real.allowedMethods,
    },
  ) as unknown as UniversalHandler;
}

const test = suite("RPC route: a failing handler");

test("is logged, and the call answered internal in its protocol (Connect, gRPC-Web), never an empty 200", async () => {
  const logged: string[] = [];
  const app = Fastify({
    logger: { level: "error", stream: { write: (line: string) => void logged.push(JSON.parse(line).msg as string) } },
  });
  await registerRpc(app, {
    routes: (router: ConnectRouter) => void (router.handlers as UniversalHandler[]).push(failingHandler()),
    interceptors: [],
    readMaxBytes: 1 << 20,
    ready: async () => {},
    corsOrigins: [],
    sendError: (reply, _req, e) => reply.code(e.status).send({ error: { code: e.code, message: e.message } }),
  });
  try {
    const connect = await app.inject({ method: "POST", url: AUTHORIZE, headers: { "content-type": "application/json" }, payload: "{}" });
    assert.is(connect.statusCode, 500);
    assert.equal(JSON.parse(connect.body), { code: "internal", message: "internal error" });
    const web = await app.inject({ method: "POST", url: AUTHORIZE, headers: { "content-type": "application/grpc-web+proto" }, payload: Buffer.alloc(5) });
    assert.is(web.statusCode, 200);
    assert.is(web.headers["grpc-status"], "13");
    assert.is(web.headers["grpc-message"], "internal%20error");
    assert.is(web.body, "");
  } finally {
    await app.close();
  }
  assert.equal(logged, ["RPC handler failed", "RPC handler failed"]);
});

test("its internal answer carries the headers hooks set (request id, CORS), as every other RPC answer does", async () => {
  const app = Fastify({ logger: false, genReqId: () => "req_failing" });
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id);
    done();
  });
  await registerRpc(app, {
    routes: (router: ConnectRouter) => void (router.handlers as UniversalHandler[]).push(failingHandler()),
    interceptors: [],
    readMaxBytes: 1 << 20,
    ready: async () => {},
    corsOrigins: ["https://app.example"],
    sendError: (reply, _req, e) => reply.code(e.status).send({ error: { code: e.code, message: e.message } }),
  });
  try {
    const web = await app.inject({
      method: "POST",
      url: AUTHORIZE,
      headers: { "content-type": "application/grpc-web+proto", origin: "https://app.example" },
      payload: Buffer.alloc(5),
    });
    assert.is(web.headers["grpc-status"], "13");
    assert.is(web.headers["x-request-id"], "req_failing");
    assert.is(web.headers["access-control-allow-origin"], "https://app.example");
    const connect = await app.inject({ method: "POST", url: AUTHORIZE, headers: { "content-type": "application/json" }, payload: "{}" });
    assert.is(connect.statusCode, 500);
    assert.is(connect.headers["x-request-id"], "req_failing");
  } finally {
    await app.close();
  }
});

test.run();
