/**
 * Property-based differential test of the analysis cache
 * (src/gateway/data/analysis-cache.ts): two erplinks over the same recording
 * upstream, one with the cache and one without (`analysisCache: false`),
 * each with the same keys (named entity sets, `*`, sets the service lacks,
 * different operations, another service). A run draws a few bodiless
 * GET/HEAD targets from the forwarding fuzzer's generators
 * (test-support/fuzz/generators.ts: keys, navigations, options in many
 * spellings, adversarial fragments, the generator's extra headers such as
 * `X-HTTP-Method` or `If-Match`) and a schedule that sends them with the
 * keys in a random order, so that most requests meet entries another key
 * made. Every request goes to both erplinks; the property:
 *
 * - the answers are the same: status, headers (but the date and the rate
 *   limit's reset time) and body, the request id aside;
 * - the upstream received the same requests (method, target, headers but
 *   the request id and the client's address) for both;
 * - the request-log entries are the same (status, accesses, denial step,
 *   error code and message, what was sent upstream), the key's id mapped to
 *   the key and timings aside;
 * - and what reached the upstream through the cached erplink passes the
 *   forwarding fuzzer's own property (test-support/fuzz/harness.ts
 *   `checkExchange`: every reading of the oracle touches only what that key
 *   may; the request log's accesses are what erplink's analyzer makes of
 *   the received request).
 *
 * Environment: ERPLINK_FUZZ_SEED, ERPLINK_FUZZ_RUNS (runs of the schedule;
 * default 300, about 1700 requests per erplink, about 10 s), ERPLINK_FUZZ_TIME_MS (20000).
 */
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { AccessLogEntry } from "../../src/gateway/app.js";
import { buildCase, caseSeed, type FuzzCase } from "../../test-support/fuzz/generators.js";
import { checkExchange, envInt, fuzzSeed, provision, report, runCase, runParameters, startFuzzGateway, type Exchange, type FuzzGateway } from "../../test-support/fuzz/harness.js";
import { FUZZ_UNIVERSE, permissionsOf, type Universe } from "../../test-support/fuzz/model.js";
import { AnalysisCache } from "../../src/gateway/data/analysis-cache.js";
import { RawClient } from "../../test-support/fuzz/raw-client.js";
import { startRecordingUpstream, type RecordingUpstream } from "../../test-support/fuzz/upstream.js";

const U = FUZZ_UNIVERSE;

/** The keys' grants (service -> entity set or `*` -> operations), the same on both instances. */
const KEYS: readonly Universe["grants"][] = [
  // The forwarding fuzzer's key: named sets, different operations.
  U.grants,
  // Every entity set of SALES, read only.
  { SALES: { "*": ["list", "get"] } },
  // Other named sets (and Suppliers, which only Courier and Supplier reach), one the service lacks.
  { SALES: { Orders: ["list", "get"], Suppliers: ["list", "get"], Products: ["get"], Nope: ["list"] } },
  // Entity step passes, the operation step refuses: Orders without list, Customers without get.
  { SALES: { Orders: ["get"], Customers: ["list"], OrderItems: ["list", "get"], Products: ["list", "get"] } },
  // Another service wholly, and Orders only.
  { SALES: { Orders: ["list"] }, MASTER: { "*": ["list", "get"] } },
  // A set named in another case than the service's.
  { SALES: { orders: ["list", "get"], Customers: ["list", "get"] } },
];

/** The universe the oracle checks a key against: its grants, `*` written out as every entity set of the service (and kept). */
function universeOf(grants: Universe["grants"]): Universe {
  const expanded = Object.fromEntries(
    Object.entries(grants).map(([service, sets]) => {
      const all = Object.keys(U.services[service]!.sets);
      const out: Record<string, readonly string[]> = {};
      for (const [set, ops] of Object.entries(sets)) {
        for (const name of set === "*" ? all : [set]) out[name] = [...new Set([...(out[name] ?? []), ...ops])];
        // Kept as well: with `*` the key may touch any name, one the service lacks too (a 404, not a 403, for it).
        if (set === "*") out["*"] = ops;
      }
      return [service, out];
    }),
  );
  return { ...U, grants: expanded };
}

interface Side {
  gateway: FuzzGateway;
  client: RawClient;
  /** The secrets of KEYS, in order. */
  keys: string[];
  /** Key id -> index in KEYS. */
  keyIds: Map<string, number>;
}

interface Ctx {
  upstream: RecordingUpstream;
  cached: Side;
  uncached: Side;
}

async function side(upstream: RecordingUpstream, analysisCache: boolean): Promise<Side> {
  const gateway = await startFuzzGateway({ analysisCache });
  const admin = (m: "POST" | "GET", p: string, b?: unknown) => gateway.admin(m, p, b);
  // The system, both instances and the first key.
  const keys = [await provision(admin, { ...U, grants: KEYS[0]! }, upstream.baseUrl)];
  for (const [i, grants] of KEYS.entries()) {
    if (i === 0) continue;
    const res = await admin("POST", "/admin/api-keys", { name: `cache fuzz key ${i}`, permissions: permissionsOf({ ...U, grants }) });
    if (res.status !== 201) throw new Error(`cannot create a key: ${JSON.stringify(res.body)}`);
    keys.push(res.body.data.key as string);
  }
  // Key ids by key (provision names its key "fuzz data key").
  const list = await admin("GET", "/admin/api-keys?page_size=100");
  const keyIds = new Map<string, number>();
  for (const k of list.body.data as { id: string; name: string }[]) {
    const m = /^cache fuzz key (\d+)$/.exec(k.name);
    keyIds.set(k.id, m ? Number(m[1]) : 0);
  }
  return { gateway, client: new RawClient(gateway.host, gateway.port), keys, keyIds };
}

const Cache = suite<Ctx>("analysis cache: a differential against erplink without it");

/** Cache lookups that found an entry (only the cached erplink has a cache): the runs must reuse analyses, or they test nothing. */
let hits = 0;
const get = AnalysisCache.prototype.get;
AnalysisCache.prototype.get = function (this: AnalysisCache, ...args: Parameters<typeof get>) {
  const found = get.apply(this, args);
  if (found !== undefined) hits++;
  return found;
};

Cache.before(async (ctx) => {
  ctx.upstream = await startRecordingUpstream({ universe: U });
  ctx.cached = await side(ctx.upstream, true);
  ctx.uncached = await side(ctx.upstream, false);
});

Cache.after(async (ctx) => {
  for (const s of [ctx.cached, ctx.uncached]) {
    s?.client.close();
    await s?.gateway.close();
  }
  await ctx.upstream?.close();
});

/** A bodiless GET or HEAD of a generated target (a plain request: batches are never cached). */
const target = fc.tuple(caseSeed(U), fc.boolean(), fc.nat(7), fc.nat(3)).map(([seed, head, extra, clean]): FuzzCase => {
  // Mostly without the adversarial fragments, which make most targets refused (and refusals are not cached).
  const request = clean === 0 ? seed.request : { ...seed.request, mutations: [] };
  const built = buildCase(U, { ...seed, request, batch: null });
  // The generator's headers stay (X-HTTP-Method, If-Match, …), but for what declares a body.
  const headers: [string, string][] = built.headers.filter(([n]) => !/^(content-type|content-length|transfer-encoding)$/i.test(n)).map(([n, v]) => [n, v]);
  // Now and then a precondition the analysis reads.
  if (extra === 1) headers.push(["If-None-Match", "*"]);
  if (extra === 2) headers.push(["If-Match", '"x"']);
  return { ...built, method: head ? "HEAD" : "GET", headers, body: undefined } as FuzzCase;
});

/** A run: up to four targets and a schedule of (key, target) over them. */
const run = fc.record({
  targets: fc.array(target, { minLength: 1, maxLength: 4 }),
  schedule: fc.array(fc.tuple(fc.nat(KEYS.length - 1), fc.nat(3)), { minLength: 2, maxLength: 10 }),
});

/** A request log entry as comparable between the two erplinks. */
function comparableEntry(e: AccessLogEntry | undefined, ex: Exchange, s: Side): unknown {
  if (e === undefined) return undefined;
  const { timestamp: _t, durationMs: _d, upstreamDurationMs: _u, requestId: _r, apiKeyId, ...rest } = e;
  return { ...rest, apiKey: s.keyIds.get(apiKeyId) ?? apiKeyId, errorMessage: alike(rest.errorMessage, ex, s) };
}

// The length holds the request id (HEAD answers show only it; bodies are compared); what remains of the rate limit depends on the
// history, which differs once an earlier (failed, shrunk) run answered differently (each answer's admission is compared by its status).
const UNCOMPARED_HEADERS = new Set(["content-length", "date", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-reset", "ratelimit", "keep-alive", "connection"]);

/** `text` with what differs between the two erplinks by construction written alike: the request id and erplink's own address. */
function alike(text: string, ex: Exchange, s: Side): string {
  // erplink's own id where the request could not carry one (not well-formed HTTP).
  return text.replaceAll(ex.requestId, "<id>").replace(/req_[0-9a-f-]{36}/g, "<id>").replaceAll(`${s.gateway.host}:${s.gateway.port}`, "<erplink>");
}

function comparableResponse(ex: Exchange, s: Side): unknown {
  const headers = Object.fromEntries(
    Object.entries(ex.response.headers)
      .filter(([n]) => !UNCOMPARED_HEADERS.has(n.toLowerCase()))
      .map(([n, v]) => [n.toLowerCase(), alike(v, ex, s)]),
  );
  return { status: ex.response.status, headers, body: alike(ex.response.body.toString("latin1"), ex, s) };
}

const UNCOMPARED_UPSTREAM_HEADERS = new Set(["x-request-id", "host", "connection"]);

function comparableForwarded(ex: Exchange, s: Side): unknown {
  return ex.forwarded.map((r) => ({
    method: r.method,
    target: r.target,
    headers: Object.fromEntries(Object.entries(r.headers).filter(([n]) => !UNCOMPARED_UPSTREAM_HEADERS.has(n)).map(([n, v]) => [n, alike(String(v), ex, s)])),
    body: r.body.toString("latin1"),
  }));
}

/** Throws, showing both, when the cached erplink's `a` is not the uncached one's `b`. */
function same(a: unknown, b: unknown, what: string): void {
  const ja = JSON.stringify(a);
  const jb = JSON.stringify(b);
  if (ja !== jb) throw new Error(`${what}\n  with the cache:    ${ja}\n  without the cache: ${jb}`);
}

/** The request-log entry of a request, when it has one (most have; requests routed elsewhere none). */
async function entryOf(s: Side, requestId: string, waitMs: number): Promise<AccessLogEntry | undefined> {
  return (await s.gateway.entry(requestId, waitMs))?.full;
}

Cache("every answer, forwarded request and log entry is what erplink without the cache gives the same key", async (ctx) => {
  const seed = fuzzSeed(20260612);
  const numRuns = envInt("ERPLINK_FUZZ_RUNS", 300);
  const timeLimit = envInt("ERPLINK_FUZZ_TIME_MS", 20_000);
  const stats = { runs: 0, requests: 0, forwarded: 0 };
  const started = Date.now();
  const property = fc.asyncProperty(run, async ({ targets, schedule }) => {
    stats.runs++;
    for (const [k, t] of schedule) {
      const c = targets[t % targets.length]!;
      stats.requests++;
      const a = await runCase(ctx.cached.client, ctx.upstream, ctx.cached.keys[k]!, c, undefined);
      const b = await runCase(ctx.uncached.client, ctx.upstream, ctx.uncached.keys[k]!, c, undefined);
      const [ea, eb] = await Promise.all([entryOf(ctx.cached, a.requestId, 50), entryOf(ctx.uncached, b.requestId, 50)]);
      // One recorded, the other not yet: give it time (a loaded machine) before calling it a difference.
      const la = ea ?? (eb !== undefined ? await entryOf(ctx.cached, a.requestId, 2_000) : undefined);
      const lb = eb ?? (ea !== undefined ? await entryOf(ctx.uncached, b.requestId, 2_000) : undefined);
      if (a.forwarded.length > 0) stats.forwarded++;
      const where = `key ${k} (${JSON.stringify(KEYS[k])}), step ${stats.requests}: ${c.method} ${JSON.stringify(c.target)} [${c.headers.map(([n, v]) => `${n}: ${v}`).join("; ")}]`;
      same(comparableResponse(a, ctx.cached), comparableResponse(b, ctx.uncached), `the answer differs with the cache, ${where}`);
      same(comparableForwarded(a, ctx.cached), comparableForwarded(b, ctx.uncached), `the upstream received another request with the cache, ${where}`);
      same(comparableEntry(la, a, ctx.cached), comparableEntry(lb, b, ctx.uncached), `the request log differs with the cache, ${where}`);
      const logged = la === undefined ? undefined : { instance: la.instance, service: la.service, accesses: la.accesses, status: la.status, upstreamStatus: la.upstreamStatus };
      const problems = checkExchange(universeOf(KEYS[k]!), { ...a, ...(logged ? { entry: logged } : {}) }, { compareLog: true });
      if (problems.length > 0) throw new Error(`\n${where}\n${report(a, problems)}\n`);
    }
  });
  try {
    await fc.assert(property, runParameters(seed, numRuns, timeLimit));
    assert.ok(stats.runs >= numRuns, `only ${stats.runs} of ${numRuns} runs within ${timeLimit} ms`);
    assert.ok(hits * 10 >= stats.requests, `only ${hits} cache hits in ${stats.requests} requests`);
  } finally {
    console.log(
      `analysis-cache-fuzz: seed ${seed}, ${stats.runs} runs, ${stats.requests} requests per erplink (shrinking included) in ${((Date.now() - started) / 1000).toFixed(1)} s: ${stats.forwarded} forwarded, ${hits} cache hits`,
    );
  }
});

Cache.run();
