/**
 * gRPC-Web text (`application/grpc-web-text`): the base64 codec on its own
 * (any chunking, padded chunks one after another, strict alphabet), and
 * calls through the gateway at the wire level: requests framed and encoded
 * as the grpc-web client does, answers decoded frame by frame.
 */
import { create } from "@bufbuild/protobuf";
import * as fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AuthorizeRequestSchema, AuthorizeResponseSchema, Operation } from "../../../src/gen/erplink/authz/v1/authorization_pb.js";
import { HealthCheckRequestSchema, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus } from "../../../src/gen/grpc/health/v1/health_pb.js";
import { decodeBase64Stream, decodeQuanta, encodeBase64Stream } from "../../../src/gateway/rpc/grpc-web-text.js";
import { decodeTextBody, firstMessage, readFrames, requestBody } from "../../../test-support/grpc-web.js";
import { json, post } from "../../../test-support/http.js";
import { createWorld, type World } from "../../../test-support/world.js";

async function* chunks(parts: readonly Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield p;
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of it) out.push(Buffer.from(c));
  return Buffer.concat(out);
}

/** Cuts `text` at the given (sorted, in-range) offsets. */
function cut(text: string, at: readonly number[]): Uint8Array[] {
  const parts: Uint8Array[] = [];
  let from = 0;
  for (const i of [...at, text.length]) {
    parts.push(Buffer.from(text.slice(from, i), "latin1"));
    from = i;
  }
  return parts;
}

const codec = suite("gRPC-Web text: base64 codec");

codec("decodes padded chunks one after another, as a client flushing padded chunks sends them", () => {
  const a = Buffer.from([0, 0, 0, 0, 2]);
  const b = Buffer.from([8, 1]);
  assert.equal(Buffer.from(decodeQuanta(a.toString("base64") + b.toString("base64"))), Buffer.concat([a, b]));
});

codec("refuses what is not strict base64: wrong alphabet, whitespace, padding inside a quantum, a torn quantum", async () => {
  for (const bad of ["AA-_", "AA AA", "A=AA", "AAA=A===", "AAAA\n"]) {
    assert.throws(() => decodeQuanta(bad), /not base64/, bad);
  }
  let caught: unknown;
  try {
    await collect(decodeBase64Stream(chunks([Buffer.from("AAAAA")])));
  } catch (err) {
    caught = err;
  }
  assert.match(String(caught), /not base64/);
});

codec("property: any bytes, encoded in padded chunks and delivered cut anywhere, decode to the same bytes", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 6 }),
      fc.array(fc.nat(), { maxLength: 8 }),
      async (pieces, cuts) => {
        const text = pieces.map((p) => Buffer.from(p).toString("base64")).join("");
        const at = [...new Set(cuts.map((c) => (text.length === 0 ? 0 : c % (text.length + 1))))].sort((x, y) => x - y);
        const decoded = await collect(decodeBase64Stream(chunks(cut(text, at))));
        assert.equal(decoded, Buffer.concat(pieces.map((p) => Buffer.from(p))));
      },
    ),
    { numRuns: 300, seed: 12 },
  );
});

codec("encodes each chunk padded on its own, so each decodes at once", async () => {
  const out = await collect(encodeBase64Stream(chunks([Buffer.from([1]), Buffer.alloc(0), Buffer.from([2, 3, 4, 5])])));
  assert.is(out.toString("latin1"), "AQ==AgMEBQ==");
});

codec.run();

const wire = suite<{ world: World }>("gRPC-Web text through the gateway");

wire.before.each(async (ctx) => {
  ctx.world = await createWorld();
});
wire.after.each(async (ctx) => {
  await ctx.world.close();
});

const TEXT_HEADERS = { "content-type": "application/grpc-web-text", accept: "application/grpc-web-text", "x-grpc-web": "1", "x-user-agent": "grpc-web-javascript/0.1" };

wire("Authorize over grpc-web-text: allowed, with the rate-limit headers; the answer is base64 frames under application/grpc-web-text+proto", async (ctx) => {
  const key = json(await post(ctx.world.app, "/admin/api-keys", { name: "web", permissions: { prod: { API_BP: { A_BusinessPartner: ["get"] } } } })).data;
  const body = requestBody(
    AuthorizeRequestSchema,
    create(AuthorizeRequestSchema, { apiKey: key.key, instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: Operation.GET }),
  );
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/erplink.authz.v1.AuthorizationService/Authorize",
    headers: TEXT_HEADERS,
    payload: body.toString("base64"),
  });
  assert.is(res.statusCode, 200, res.body);
  assert.is(res.headers["content-type"], "application/grpc-web-text+proto");
  const answer = readFrames(decodeTextBody(res.body));
  assert.equal(answer.trailer["grpc-status"], "0");
  const out = firstMessage(AuthorizeResponseSchema, answer);
  assert.is(out.allowed, true, out.message);
  assert.is(out.keyId, key.id);
});

wire("a request sent as two padded chunks (frame header, then message) is read whole", async (ctx) => {
  const body = requestBody(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service: "erplink.admin.v1.SystemService" }));
  const payload = body.subarray(0, 5).toString("base64") + body.subarray(5).toString("base64");
  assert.match(payload.slice(0, 8), /=$/, "the first chunk is padded");
  const res = await ctx.world.app.inject({ method: "POST", url: "/grpc.health.v1.Health/Check", headers: TEXT_HEADERS, payload });
  assert.is(res.statusCode, 200);
  const answer = readFrames(decodeTextBody(res.body));
  assert.equal(answer.trailer, { "grpc-status": "0" });
  assert.is(firstMessage(HealthCheckResponseSchema, answer).status, HealthCheckResponse_ServingStatus.SERVING);
});

wire("a body that is not base64 is INVALID_ARGUMENT in the text trailer, not a 500 or a hang", async (ctx) => {
  const res = await ctx.world.app.inject({ method: "POST", url: "/grpc.health.v1.Health/Check", headers: TEXT_HEADERS, payload: "AAAA AAA" });
  assert.is(res.statusCode, 200);
  assert.is(res.headers["content-type"], "application/grpc-web-text+proto");
  const answer = readFrames(decodeTextBody(res.body));
  assert.equal(answer.messages, []);
  assert.equal(answer.trailer, { "grpc-status": "3", "grpc-message": "the%20grpc-web-text%20request%20body%20is%20not%20base64" });
});

wire("errors keep their metadata and details: an admin call without a token is unauthenticated in the text trailer", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/erplink.admin.v1.SystemService/ListSystems",
    headers: TEXT_HEADERS,
    payload: Buffer.from([0, 0, 0, 0, 0]).toString("base64"),
  });
  assert.is(res.statusCode, 200);
  const answer = readFrames(decodeTextBody(res.body));
  assert.is(answer.trailer["grpc-status"], "16");
});

wire("binary gRPC-Web is unchanged (no base64 on either side)", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/grpc.health.v1.Health/Check",
    headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
    payload: requestBody(HealthCheckRequestSchema, create(HealthCheckRequestSchema, {})),
  });
  assert.is(res.statusCode, 200);
  assert.is(res.headers["content-type"], "application/grpc-web+proto");
  const answer = readFrames(res.rawPayload);
  assert.is(firstMessage(HealthCheckResponseSchema, answer).status, HealthCheckResponse_ServingStatus.SERVING);
});

wire.run();
