/**
 * Explain as a differential of the data path, property-based (fast-check,
 * bounded): requests drawn by the forwarding fuzzer's generators
 * (test-support/fuzz/generators.ts: well-formed OData against the fuzz
 * universe's two services, mixed with adversarial bytes in paths, queries,
 * literals, bodies and `$batch` parts) are sent to the data path over a raw
 * socket with a data key, and explained for the same key through the REST
 * facade. Explain must give the data path's decision exactly: allowed when
 * and only when the request was forwarded, then the same upstream method,
 * URL and accesses; otherwise the same status, envelope code, message and
 * request-log denial step. Nothing a client can put in a request makes
 * explain itself fail (never a 500).
 *
 * Environment: ERPLINK_FUZZ_SEED (default fixed), ERPLINK_EXPLAIN_RUNS (400),
 * ERPLINK_EXPLAIN_TIME_MS (6000; fewer than 40 cases in that time fails).
 */
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { buildCase, caseSeed, fuzzCase, type CaseSeed, type FuzzCase } from "../../../test-support/fuzz/generators.js";
import { envInt, fuzzSeed, provision, runParameters } from "../../../test-support/fuzz/harness.js";
import { FUZZ_UNIVERSE } from "../../../test-support/fuzz/model.js";
import { RawClient, type RawResponse } from "../../../test-support/fuzz/raw-client.js";
import { startRecordingUpstream, type RecordingUpstream } from "../../../test-support/fuzz/upstream.js";
import { json } from "../../../test-support/http.js";
import { AUTH, createWorld, type World } from "../../../test-support/world.js";

interface Ctx {
  world: World & { readonly errors: unknown[] };
  upstream: RecordingUpstream;
  client: RawClient;
  key: string;
  keyId: string;
}

const U = FUZZ_UNIVERSE;
const PUBLIC_URL = "http://gw.example";
const Explain = suite<Ctx>("explain: a differential of the data path (property-based)");

Explain.before(async (ctx) => {
  ctx.upstream = await startRecordingUpstream({ universe: U });
  ctx.world = await createWorld({
    publicUrl: PUBLIC_URL,
    dataLimits: { perMinute: 1_000_000, perDay: 10_000_000 },
    adminLimits: { perMinute: 1_000_000, perDay: 10_000_000 },
  });
  const app = ctx.world.app;
  const admin = async (method: "POST" | "GET", path: string, body?: unknown) => {
    const res = await app.inject({ method, url: path, headers: AUTH, ...(body !== undefined ? { payload: body as object } : {}) });
    return { status: res.statusCode, body: json(res) };
  };
  ctx.key = await provision(admin, U, ctx.upstream.baseUrl);
  ctx.keyId = (await admin("GET", "/admin/api-keys")).body.data[0].id;
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("no address");
  ctx.client = new RawClient("127.0.0.1", address.port);
});

Explain.after(async (ctx) => {
  ctx.client?.close();
  await ctx.world?.close();
  await ctx.upstream?.close();
});

/** The request-log entry of a data request, once written (undefined: the router answered before the data path). */
async function logged(ctx: Ctx, requestId: string) {
  for (let i = 0; i < 20; i++) {
    await ctx.world.layer.logWriter.flush();
    const hit = (await ctx.world.store.logs.query({ requestId, limit: 1 })).items[0];
    if (hit !== undefined) return hit;
    await new Promise((r) => setTimeout(r, 5));
  }
  return undefined;
}

/** The error of an erplink refusal ({} for a HEAD answer, which has no body). */
function refusal(res: RawResponse, method: string): { code?: string; message?: string } {
  if (method === "HEAD") return {};
  try {
    return JSON.parse(res.body.toString("utf8")).error ?? {};
  } catch {
    return {};
  }
}

/** The instance a target names (segment 2, decoded), else the case's. */
function instanceOf(c: FuzzCase): string {
  const raw = c.target.split("?")[0]!.split("/")[2] ?? "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return c.instance;
  }
}

/** Whether a case can be described to explain at all: a text body and one value per header. */
function describable(c: FuzzCase): boolean {
  const names = c.headers.map(([n]) => n.toLowerCase());
  if (new Set(names).size !== names.length) return false;
  return c.body === undefined || Buffer.from(c.body.toString("utf8"), "utf8").equals(c.body);
}

/** A seed without its raw mutations: mostly well-formed OData, so that many requests are forwarded. */
function plain(seed: CaseSeed): CaseSeed {
  const request = { ...seed.request, mutations: [] };
  return { ...seed, request, batch: seed.batch === null ? null : { ...seed.batch, outer: [], parts: seed.batch.parts.map((p) => ({ ...p, mutations: [] })) } };
}

/** A string literal as a client writes it in a URL: quotes doubled, then percent-encoded. */
const literal = fc.string({ maxLength: 6 }).map((t) => encodeURIComponent(`'${t.replaceAll("'", "''")}'`));

/**
 * Requests the fuzz key may make (reads of Orders and Customers, updates of
 * OrderItems, media creations of Products), with a little variety, so that
 * what would be sent is compared often: the fuzzer's own draws are mostly refused.
 */
const granted: fc.Arbitrary<FuzzCase> = fc
  .record({
    instance: fc.constantFrom("prod", "prodv2"),
    kind: fc.nat(3),
    id: fc.nat(99_999),
    literal,
    top: fc.option(fc.nat(50), { nil: undefined }),
    select: fc.subarray(["ID", "Note", "Amount", "Status"]),
    filter: fc.option(literal, { nil: undefined }),
    quantity: fc.double({ noNaN: true, noDefaultInfinity: true }),
    bytes: fc.string({ maxLength: 20 }),
  })
  .map(({ instance, kind, id, literal: lit, top, select, filter, quantity, bytes }): FuzzCase => {
    const root = `/odata/${instance}/SALES`;
    const base = { kind: "plain" as const, instance, service: "SALES" };
    const query = [
      ...(top !== undefined ? [`$top=${top}`] : []),
      ...(select.length > 0 ? [`$select=${select.join(",")}`] : []),
      ...(filter !== undefined ? [`$filter=Note%20eq%20${filter}`] : []),
    ];
    const q = query.length > 0 ? `?${query.join("&")}` : "";
    switch (kind) {
      case 0:
        return { ...base, method: "GET", target: `${root}/Orders${id % 2 === 0 ? `(${id})` : ""}${q}`, headers: [] };
      case 1:
        return { ...base, method: "GET", target: `${root}/Customers(${lit})`, headers: [["Accept", "application/json"]] };
      case 2:
        return {
          ...base,
          method: instance === "prodv2" && id % 2 === 0 ? "MERGE" : "PATCH",
          target: `${root}/OrderItems(OrderID=${id},ItemNo=${id % 7})`,
          headers: [["Content-Type", "application/json"], ["If-Match", "*"]],
          body: Buffer.from(JSON.stringify({ Quantity: quantity }), "utf8"),
        };
      default:
        return { ...base, method: "POST", target: `${root}/Products`, headers: [["Content-Type", "text/plain"], ["Slug", "manual.txt"]], body: Buffer.from(`%PDF ${bytes}`, "utf8") };
    }
  });

/** Generated requests: as the fuzzer draws them, the same without raw mutations, and requests the key may make. */
const cases = fc.oneof(
  fuzzCase(U).map(({ case: c }) => c),
  caseSeed(U).map((seed) => buildCase(U, plain(seed))),
  granted,
);

let counter = 0;

/** Sends a case to the data path and explains it; throws when they differ. */
async function compare(ctx: Ctx, c: FuzzCase, stats: Record<string, number>): Promise<void> {
  const requestId = `xd-${process.pid}-${++counter}`;
  let res: RawResponse;
  try {
    res = await ctx.client.send({
      method: c.method,
      target: c.target,
      headers: [["Authorization", `Bearer ${ctx.key}`], ["X-Request-Id", requestId], ...c.headers],
      ...(c.body ? { body: c.body } : {}),
    });
  } catch {
    ctx.client.close();
    res = { status: 0, headers: {}, body: Buffer.alloc(0), closed: true };
  }
  const headers: Record<string, string> = Object.fromEntries(c.headers.map(([n, v]) => [n, v]));
  // The raw client adds Content-Length as it does on the wire.
  const body = c.body ?? Buffer.alloc(0);
  if (body.length > 0 || !["GET", "HEAD", "DELETE"].includes(c.method)) headers["Content-Length"] = String(body.length);
  const mark = ctx.upstream.received.length;
  const call = await ctx.world.app.inject({
    method: "POST",
    url: `/admin/api-keys/${ctx.keyId}/explain`,
    headers: AUTH,
    payload: { instance: instanceOf(c), method: c.method, url: c.target, headers, ...(body.length > 0 ? { body: body.toString("utf8") } : {}) },
  });
  const label = `${c.method} ${JSON.stringify(c.target)} ${JSON.stringify(c.headers)} ${JSON.stringify(c.body?.toString("utf8") ?? "")}`;
  if (call.statusCode >= 500) throw new Error(`explain answered ${call.statusCode} ${call.body}\n${label}`);
  // Explaining sends the back end nothing but a $metadata fetch into the shared cache, and never shows the key's secret.
  for (const r of ctx.upstream.received.slice(mark)) {
    assert.ok(r.method === "GET" && r.target.includes("/$metadata") && ctx.upstream.isInternal(r), `explain reached the back end: ${r.method} ${r.target}\n${label}`);
  }
  assert.not.ok(call.body.includes(ctx.key), "the key's secret");

  if (c.headers.some(([n]) => n === "__proto__")) {
    // The admin API's JSON parser (Fastify's, secure-json-parse) refuses a member named __proto__ (a header
    // name here), with its message for any unparsable body: explain cannot be asked about such a request.
    assert.equal([call.statusCode, json(call).error.message], [400, "request body is not valid JSON"], label);
    stats.protoHeader = (stats.protoHeader ?? 0) + 1;
    return;
  }
  if (res.headers["x-request-id"] !== requestId) {
    // The HTTP parser refused the bytes (a space or a control character in the request line) and
    // Node or Fastify's client-error handler answered: nothing of erplink ran. Explain may refuse or decide, never fail.
    stats.parser = (stats.parser ?? 0) + 1;
    return;
  }
  const entry = await logged(ctx, requestId);
  if (call.statusCode !== 200) {
    // Only a URL that names no service or another instance, or a method the data path does not
    // route, is the call's own 400; the data path had no route for it either.
    assert.is(call.statusCode, 400, `${label}\n${call.body}`);
    assert.ok(["url", "method"].includes(json(call).error.details[0].field), `${label}\n${call.body}`);
    assert.is(entry, undefined, `${label}: the data path ran (${res.status} ${res.body.toString("utf8")}) but explain refused the call: ${call.body}`);
    stats.unrouted = (stats.unrouted ?? 0) + 1;
    return;
  }
  const ex = json(call).data;
  const what = `${label}\n  data path: ${res.status} ${res.body.toString("utf8").slice(0, 300)}\n  explain: ${JSON.stringify(ex).slice(0, 600)}`;
  if (entry === undefined) {
    // The router refused the path before the data path (not valid percent-encoding).
    const error = refusal(res, c.method);
    assert.equal([ex.allowed, ex.status, ex.code, ex.message], [false, res.status, error.code, error.message], what);
    stats.router = (stats.router ?? 0) + 1;
    return;
  }
  const sent = entry.upstreamMethod !== "";
  assert.is(ex.allowed, sent, `allowed: ${what}`);
  const accesses = (ex.accesses as { entity_set: string; operation: string }[]).map((a) => ({ entity: a.entity_set, operation: a.operation }));
  if (sent) {
    stats.forwarded = (stats.forwarded ?? 0) + 1;
    assert.equal(accesses, entry.accesses, `accesses: ${what}`);
    assert.equal([ex.request.method, ex.request.upstream_url], [entry.upstreamMethod, entry.upstreamUrl], `what would be sent: ${what}`);
    return;
  }
  stats.refused = (stats.refused ?? 0) + 1;
  assert.equal(accesses.slice(0, entry.accesses.length), entry.accesses, `accesses: ${what}`);
  assert.equal([ex.status, ex.code, ex.denial_step], [res.status, entry.errorCode, entry.denialStep], `refusal: ${what}`);
  if (c.method !== "HEAD") assert.is(ex.message, refusal(res, c.method).message, `message: ${what}`);
}

Explain("explain decides every generated request exactly as the data path does (allowed, upstream URL, accesses; or status, code, message, denial step)", async (ctx) => {
  const seed = fuzzSeed();
  const numRuns = envInt("ERPLINK_EXPLAIN_RUNS", 400);
  const timeLimit = envInt("ERPLINK_EXPLAIN_TIME_MS", 6_000);
  const stats: Record<string, number> = { runs: 0 };
  const started = Date.now();
  const property = fc.asyncProperty(cases, async (c) => {
    fc.pre(describable(c));
    stats.runs!++;
    await compare(ctx, c, stats);
  });
  try {
    await fc.assert(property, runParameters(seed, numRuns, timeLimit));
    assert.ok(stats.runs! >= Math.min(40, numRuns), `only ${stats.runs} cases ran within ${timeLimit} ms`);
    assert.ok((stats.forwarded ?? 0) > 0 && (stats.refused ?? 0) > 0, `both outcomes are covered: ${JSON.stringify(stats)}`);
  } finally {
    console.log(`explain-differential: seed ${seed}, ${JSON.stringify(stats)} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  assert.equal(ctx.world.errors, [], "no masked internal errors");
});

Explain.run();
