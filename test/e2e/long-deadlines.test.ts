/**
 * A client's deadline longer than a Node timer can hold (2³¹ − 1 ms, about
 * 24.8 days) is honoured as that bound, not as 1 ms: Connect sets its
 * deadline timer with the timeout as sent, and Node fires a timer set beyond
 * the bound at once, so a health Watch with a month's deadline (grpc-go sends
 * `720H`) ended DEADLINE_EXCEEDED within a millisecond. Both ways a call is
 * served: gRPC over h2c (from the stream, src/gateway/rpc/direct.ts) and
 * gRPC-Web over HTTP/1.1 (the Fastify route). Raw clients send the header:
 * connect-node's own client has the same timer bug on its side. The clamp
 * itself: test/gateway/rpc/node-request.test.ts.
 */
import http from "node:http";
import http2 from "node:http2";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Health } from "../../src/gen/grpc/health/v1/health_pb.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const WATCH = `/${Health.typeName}/${Health.method.watch.name}`;
/** An empty HealthCheckRequest in a gRPC frame. */
const EMPTY_FRAME = Buffer.alloc(5);

/** What a Watch had received after a while: its first frame's flag (0: a message), and whether the answer had ended. */
interface Seen {
  readonly firstFlag: number | undefined;
  readonly ended: boolean;
  readonly grpcStatus: string | undefined;
}

const test = suite<{ server: RunningErplink }>("e2e: deadlines longer than a Node timer holds");

test.before(async (ctx) => {
  ctx.server = await startErplink();
});

test.after(async (ctx) => {
  await ctx.server?.close();
});

/** A gRPC Watch over h2c with `timeout` (its message sent after `sendAfterMs`); what it saw after `waitMs`. */
function grpcWatch(baseUrl: string, timeout: string, waitMs: number, sendAfterMs = 0): Promise<Seen> {
  return new Promise((resolve) => {
    const session = http2.connect(baseUrl);
    session.on("error", () => {});
    const stream = session.request({ ":method": "POST", ":path": WATCH, "content-type": "application/grpc", te: "trailers", "grpc-timeout": timeout });
    let firstFlag: number | undefined;
    let ended = false;
    let grpcStatus: string | undefined;
    stream.on("data", (d: Buffer) => (firstFlag ??= d[0]));
    stream.on("trailers", (t) => (grpcStatus = t["grpc-status"] as string));
    stream.on("error", () => {});
    stream.on("end", () => (ended = true));
    stream.resume();
    if (sendAfterMs === 0) stream.end(EMPTY_FRAME);
    else setTimeout(() => stream.end(EMPTY_FRAME), sendAfterMs);
    setTimeout(() => {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      session.close();
      resolve({ firstFlag, ended, grpcStatus });
    }, waitMs);
  });
}

/** A gRPC-Web Watch over HTTP/1.1 with `timeout`; what it saw after `waitMs` (the status is in the trailer frame). */
function grpcWebWatch(port: number, timeout: string, waitMs: number): Promise<Seen> {
  return new Promise((resolve) => {
    let firstFlag: number | undefined;
    let ended = false;
    let body = Buffer.alloc(0);
    const req = http.request({ host: "127.0.0.1", port, method: "POST", path: WATCH, headers: { "content-type": "application/grpc-web+proto", "grpc-timeout": timeout } }, (res) => {
      res.on("data", (d: Buffer) => {
        firstFlag ??= d[0];
        body = Buffer.concat([body, d]);
      });
      res.on("end", () => (ended = true));
    });
    req.on("error", () => {});
    req.end(EMPTY_FRAME);
    setTimeout(() => {
      req.destroy();
      const status = /grpc-status:\s*(\d+)/.exec(body.toString("latin1"))?.[1];
      resolve({ firstFlag, ended, grpcStatus: status });
    }, waitMs);
  });
}

test("gRPC over h2c (served from the stream): a health Watch with a month's deadline (720H) stays open", async (ctx) => {
  assert.equal(await grpcWatch(ctx.server.baseUrl, "720H", 200), { firstFlag: 0, ended: false, grpcStatus: undefined });
});

test("gRPC-Web over HTTP/1.1 (the Fastify route): a health Watch with a month's deadline stays open", async (ctx) => {
  assert.equal(await grpcWebWatch(ctx.server.port, "720H", 200), { firstFlag: 0, ended: false, grpcStatus: undefined });
});

test("a short deadline still ends the Watch DEADLINE_EXCEEDED, both ways", async (ctx) => {
  assert.equal(await grpcWatch(ctx.server.baseUrl, "50m", 300), { firstFlag: 0, ended: true, grpcStatus: "4" });
  assert.equal(await grpcWebWatch(ctx.server.port, "50m", 300), { firstFlag: 0, ended: true, grpcStatus: "4" });
});

test("a Watch whose deadline passed before its message came ends DEADLINE_EXCEEDED at once (its call's signal was already aborted)", async (ctx) => {
  // An abort listener added to an aborted signal never runs: the Watch must look at the signal itself, or stay open for good.
  // The current status first (the Watch answers before it looks at its stream), then the deadline.
  assert.equal(await grpcWatch(ctx.server.baseUrl, "100m", 600, 250), { firstFlag: 0, ended: true, grpcStatus: "4" });
});

test.run();
