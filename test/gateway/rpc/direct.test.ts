/**
 * The h2c shortcut (src/gateway/rpc/direct.ts) on a bare node:http2 server:
 * which calls it takes, what it adds, and that a failing `answered` callback
 * (metrics, access log) is reported, not thrown out of the response's
 * `finish` event (which would end the process). Against the gateway, with
 * and without it: test/e2e/rpc-direct.test.ts.
 */
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createConnectRouter, createContextValues, type ConnectRouter } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Health, HealthCheckRequestSchema, HealthCheckResponse_ServingStatus } from "../../../src/gen/grpc/health/v1/health_pb.js";
import { ServerReflection, ServerReflectionRequestSchema, ServerReflectionResponseSchema } from "../../../src/gen/grpc/reflection/v1/reflection_pb.js";
import { createDirectRpc, type DirectCall, type DirectRpcOptions } from "../../../src/gateway/rpc/direct.js";

const CHECK = `/${Health.typeName}/${Health.method.check.name}`;
const REFLECT = `/${ServerReflection.typeName}/${ServerReflection.method.serverReflectionInfo.name}`;

interface Served {
  readonly port: number;
  /** Requests the shortcut left (answered 404 by the server). */
  readonly left: string[];
  close(): Promise<void>;
}

async function serve(options: Partial<DirectRpcOptions>, routes?: (router: ConnectRouter) => void): Promise<Served> {
  const router = createConnectRouter();
  router.service(Health, { check: async () => ({ status: HealthCheckResponse_ServingStatus.SERVING }) } as never);
  routes?.(router);
  const shortcut = createDirectRpc({
    handlers: router.handlers,
    varyOrigin: false,
    takes: () => true,
    requestId: () => "req_fixed",
    contextValues: createContextValues,
    answered: () => {},
    failed: () => {},
    ...options,
  });
  const left: string[] = [];
  const server = http2.createServer();
  server.on("stream", (stream, headers) => {
    if (shortcut(stream, headers)) return;
    left.push(headers[":path"]!);
    stream.respond({ ":status": 404 }, { endStream: true });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    left,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** One gRPC Check; resolves with the status, grpc-status and x-request-id. */
function check(port: number, path = CHECK): Promise<{ status: number; grpcStatus: string | undefined; id: string | undefined }> {
  const message = toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, {}));
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", reject);
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
    let status = 0;
    let id: string | undefined;
    let grpcStatus: string | undefined;
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      id = h["x-request-id"] as string | undefined;
      grpcStatus ??= h["grpc-status"] as string | undefined;
    });
    stream.on("trailers", (t) => (grpcStatus = t["grpc-status"] as string | undefined));
    stream.resume();
    stream.on("error", reject);
    // A call left open fails the test rather than hanging it.
    stream.setTimeout(5000, () => {
      session.destroy();
      reject(new Error("no answer within 5 s"));
    });
    stream.on("close", () => {
      session.close();
      resolve({ status, grpcStatus, id });
    });
    stream.end(Buffer.concat([prefix, message]));
  });
}

const test = suite("createDirectRpc: the h2c shortcut");

test("takes a gRPC call of a service `takes` accepts, with the request id; leaves the others", async () => {
  const calls: DirectCall[] = [];
  const s = await serve({ answered: (c) => calls.push(c) });
  try {
    assert.equal(await check(s.port), { status: 200, grpcStatus: "0", id: "req_fixed" });
    assert.equal(await check(s.port, `${CHECK}?x`), { status: 404, grpcStatus: undefined, id: undefined });
    assert.equal(s.left, [`${CHECK}?x`]);
    assert.equal(
      calls.map((c) => [c.id, c.method, c.url, c.route, c.status]),
      [["req_fixed", "POST", CHECK, CHECK, 200]],
    );
  } finally {
    await s.close();
  }
  const none = await serve({ takes: () => false });
  try {
    assert.is((await check(none.port)).status, 404);
  } finally {
    await none.close();
  }
});

test("an `answered` callback that throws is reported through `failed`; the process and the server go on", async () => {
  const failures: [string, string, string][] = [];
  let uncaught: unknown;
  const onUncaught = (err: unknown) => (uncaught = err);
  // Without the guard the throw escapes the response's `finish` event: uvu's process would end.
  const listeners = process.listeners("uncaughtException");
  process.removeAllListeners("uncaughtException");
  process.on("uncaughtException", onUncaught);
  const s = await serve({
    answered: () => {
      throw new Error("metrics broke");
    },
    failed: (id, rpc, err) => failures.push([id, rpc, (err as Error).message]),
  });
  try {
    assert.equal(await check(s.port), { status: 200, grpcStatus: "0", id: "req_fixed" });
    assert.equal(await check(s.port), { status: 200, grpcStatus: "0", id: "req_fixed" });
    await new Promise((r) => setTimeout(r, 20));
  } finally {
    await s.close();
    process.off("uncaughtException", onUncaught);
    for (const l of listeners) process.on("uncaughtException", l);
  }
  assert.is(uncaught, undefined, "nothing thrown out of an event");
  assert.equal(failures, [
    ["req_fixed", "grpc.health.v1.Health/Check", "metrics broke"],
    ["req_fixed", "grpc.health.v1.Health/Check", "metrics broke"],
  ]);
});

test("a handler that fails (a bug: Connect's answer errors themselves) is reported, and the call answered internal, not left open", async () => {
  const router = createConnectRouter();
  router.service(Health, { check: async () => ({ status: HealthCheckResponse_ServingStatus.SERVING }) } as never);
  const real = router.handlers.find((h) => h.requestPath === CHECK)!;
  const failing = Object.assign(
    async () => {
      throw new Error("handler bug");
    },
    { service: real.service, method: real.method, requestPath: real.requestPath, protocolNames: real.protocolNames, supportedContentType: real.supportedContentType, allowedMethods: real.allowedMethods },
  ) as unknown as typeof real;
  const failures: string[] = [];
  const s = await serve({ handlers: [failing], failed: (_id, rpc, err) => failures.push(`${rpc}: ${(err as Error).message}`) });
  try {
    assert.equal(await check(s.port), { status: 200, grpcStatus: "13", id: "req_fixed" });
  } finally {
    await s.close();
  }
  assert.equal(failures, ["grpc.health.v1.Health/Check: handler bug"]);
});

/** A gRPC message frame. */
function frame(message: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** A reflection service whose every answer carries `size` bytes, and what its handler saw of its signal. */
function bigAnswers(size: number, seen: { reason?: unknown; answered: number }) {
  return (router: ConnectRouter) =>
    router.service(ServerReflection, {
      async *serverReflectionInfo(requests, ctx) {
        ctx.signal.addEventListener("abort", () => (seen.reason = ctx.signal.reason));
        for await (const _ of requests) {
          seen.answered++;
          yield create(ServerReflectionResponseSchema, {
            messageResponse: { case: "fileDescriptorResponse", value: { fileDescriptorProto: [new Uint8Array(size).fill(7)] } },
          });
        }
      },
    });
}

/**
 * A shortcut whose reflection answers carry 256 KiB, four times HTTP/2's
 * initial window of 64 KiB (a write waits for drain), recording what it
 * reports; and a client session to it.
 */
async function bigAnswerServer() {
  const seen = { answered: 0 } as { reason?: unknown; answered: number };
  const calls: DirectCall[] = [];
  const failures: string[] = [];
  const s = await serve({ answered: (c) => calls.push(c), failed: (_i, _r, e) => failures.push(String(e)) }, bigAnswers(256 * 1024, seen));
  return { seen, calls, failures, s, session: http2.connect(`http://127.0.0.1:${s.port}`) };
}

const REQUEST = frame(toBinary(ServerReflectionRequestSchema, create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } })));

test("an answer larger than the client's window waits for it to read, then arrives whole with its trailers", async () => {
  const { seen, calls, failures, s, session } = await bigAnswerServer();
  try {
    const result = await new Promise<{ bytes: number; grpcStatus?: string }>((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ":path": REFLECT, "content-type": "application/grpc", te: "trailers" });
      let bytes = 0;
      let grpcStatus: string | undefined;
      stream.pause();
      // Read nothing for a while: the server's write is held by flow control meanwhile.
      setTimeout(() => stream.resume(), 150);
      stream.on("data", (d: Buffer) => {
        bytes += d.length;
        // The whole first answer read: the client ends its side, and the server its stream.
        if (bytes === 5 + 256 * 1024 + 8) stream.end();
      });
      stream.on("trailers", (t) => (grpcStatus = t["grpc-status"] as string));
      stream.on("error", reject);
      stream.on("close", () => resolve({ bytes, grpcStatus }));
      stream.write(REQUEST);
    });
    // The answer: a 5-byte prefix and the message (field 4, its length, field 1 with the 256 KiB).
    assert.is(result.grpcStatus, "0");
    assert.ok(result.bytes > 256 * 1024, `read ${result.bytes} bytes`);
  } finally {
    session.close();
    await s.close();
  }
  assert.is(seen.answered, 1);
  assert.equal(failures, []);
  assert.equal(calls.map((c) => [c.url, c.status]), [[REFLECT, 200]]);
});

test("a client that resets its stream while the answer waits for its window: the handler's signal says canceled, nothing is reported failed, the call is reported once", async () => {
  const { seen, calls, failures, s, session } = await bigAnswerServer();
  try {
    await new Promise<void>((resolve) => {
      const stream = session.request({ ":method": "POST", ":path": REFLECT, "content-type": "application/grpc", te: "trailers" });
      stream.pause();
      stream.on("response", () => setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), 50));
      stream.on("error", () => {});
      stream.on("close", () => resolve());
      stream.write(REQUEST);
    });
    for (let i = 0; i < 50 && calls.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  } finally {
    session.close();
    await s.close();
  }
  assert.instance(seen.reason, ConnectError);
  assert.is((seen.reason as ConnectError).code, Code.Canceled);
  assert.equal(failures, []);
  assert.is(calls.length, 1);
});

test("a handler that stops reading early (a malformed message) still answers on the stream: not destroyed with the body", async () => {
  const s = await serve({});
  const session = http2.connect(`http://127.0.0.1:${s.port}`);
  try {
    const answer = await new Promise<{ status?: string; message?: string; rst: number }>((resolve) => {
      const stream = session.request({ ":method": "POST", ":path": CHECK, "content-type": "application/grpc", te: "trailers" });
      let status: string | undefined;
      let message: string | undefined;
      stream.on("trailers", (t) => {
        status = t["grpc-status"] as string;
        message = t["grpc-message"] as string;
      });
      stream.resume();
      stream.on("error", () => {});
      stream.on("close", () => resolve({ status, message, rst: stream.rstCode ?? 0 }));
      // Field 3 with wire type 7: no such wire type. The rest of the body is never read.
      stream.end(Buffer.concat([frame(Uint8Array.of(0x1f)), Buffer.alloc(1000)]));
    });
    assert.equal(answer, { status: "13", message: "parse%20binary%3A%20illegal%20tag%3A%20field%20no%203%20wire%20type%207", rst: 0 });
  } finally {
    session.close();
    await s.close();
  }
});

test.run();
