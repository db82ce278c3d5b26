/**
 * The forwarding fuzzer end to end against SAP's Fiori elements mock server
 * (test-support/mockserver: API_BUSINESS_PARTNER and API_SALES_ORDER_SRV
 * over OData V2 on instance `sap`, TripPin over V4 on instance `trip`, as
 * test/e2e/odata-mockserver.test.ts provisions them): erplink composed as
 * `src/main.ts` does and listening on a real port, the fuzzer's recording
 * proxy between erplink and the mock server, generated requests over raw
 * HTTP/1.1. The universe is read from the EDMX documents the mock server
 * serves (test-support/fuzz/mockserver-universe.ts).
 *
 * The judge is the mock server's effects: every read and write its data
 * layer recorded for a forwarded request (its `X-Request-Id`) must be
 * covered by the accesses erplink authorized for it, as the request log
 * says (test-support/effects.ts `uncovered`). The in-process property
 * (test-support/fuzz/harness.ts `checkExchange`: every reading of the
 * oracle, the request log against erplink's analyzer run again on what the
 * mock server received) is checked as well, a second opinion.
 *
 * Environment: ERPLINK_FUZZ_SURVEY_EXCLUDE=<regex> (exploration only: skip
 * requests whose method, target or body match, to look past a failure
 * already understood), ERPLINK_FUZZ_SEED, ERPLINK_FUZZ_MOCK_RUNS (1000),
 * ERPLINK_FUZZ_MOCK_TIME_MS (90000; a run that has not done its requests by
 * then fails).
 */
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { describeUncovered, fromMockServer, uncovered } from "../../test-support/effects.js";
import { fuzzCase } from "../../test-support/fuzz/generators.js";
import { ShapeStats, checkExchange, envInt, fuzzSeed, provision, report, runCase, runParameters, type LoggedAccesses, type Problem } from "../../test-support/fuzz/harness.js";
import { mockServerUniverse } from "../../test-support/fuzz/mockserver-universe.js";
import type { Universe } from "../../test-support/fuzz/model.js";
import { RawClient } from "../../test-support/fuzz/raw-client.js";
import { startRecordingUpstream, type RecordingUpstream } from "../../test-support/fuzz/upstream.js";
import { startMockServer, type MockServer } from "../../test-support/mockserver/index.js";

interface Ctx {
  mock: MockServer;
  proxy: RecordingUpstream;
  erplink: RunningErplink;
  client: RawClient;
  key: string;
}

const U: Universe = mockServerUniverse();
const Mock = suite<Ctx>("forwarding fuzzer against SAP's mock server");

Mock.before(async (ctx) => {
  try {
    ctx.mock = await startMockServer();
    ctx.proxy = await startRecordingUpstream({ universe: U, proxyTo: ctx.mock.baseUrl });
    // The fuzzer sends thousands of requests a minute with one key: no rate limit may refuse them.
    ctx.erplink = await startErplink({ ERPLINK_DATA_RATE_PER_MINUTE: "10000000", ERPLINK_DATA_RATE_PER_DAY: "100000000" });
    const admin = async (method: "POST", path: string, body: unknown) => {
      const res = await fetch(`${ctx.erplink.baseUrl}${path}`, {
        method,
        headers: { authorization: ctx.erplink.authorization, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    };
    ctx.key = await provision(admin, U, ctx.proxy.baseUrl, { ...ctx.mock.credentials });
    const url = new URL(ctx.erplink.baseUrl);
    ctx.client = new RawClient(url.hostname, Number(url.port));
  } catch (error) {
    // uvu drops what a hook throws: say it.
    console.error("setting up the mock server fuzz suite failed:", error);
    throw error;
  }
});

/** The request-log entry of a request: the log is written now, then read from the store. */
async function loggedEntry(ctx: Ctx, requestId: string): Promise<LoggedAccesses | undefined> {
  await ctx.erplink.erplink.flushLogs();
  const entry = (await ctx.erplink.erplink.store.logs.query({ requestId, limit: 1 })).items[0];
  if (entry === undefined) return undefined;
  return { instance: entry.instance, service: entry.service, accesses: entry.accesses, status: entry.status, upstreamStatus: entry.upstreamStatus };
}

Mock.after(async (ctx) => {
  ctx.client?.close();
  await ctx.erplink?.close();
  await ctx.proxy?.close();
  await ctx.mock?.stop();
});

Mock("the mock server does nothing the key may not do: every effect of a forwarded request is covered by what erplink authorized", async (ctx) => {
  const seed = fuzzSeed();
  const stats = { runs: 0, forwarded: 0, judged: 0, effects: 0, answered2xx: 0 };
  const shapes = new ShapeStats();
  const started = Date.now();
  // Exploration only (never set in CI): skip requests whose method, target or body match, to look past a failure
  // already understood.
  const exclude = process.env.ERPLINK_FUZZ_SURVEY_EXCLUDE ? new RegExp(process.env.ERPLINK_FUZZ_SURVEY_EXCLUDE, "i") : undefined;
  const property = fc.asyncProperty(fuzzCase(U), async ({ case: c }) => {
    if (exclude !== undefined) fc.pre(!exclude.test(`${c.method} ${c.target} ${c.body?.toString("latin1") ?? ""}`));
    stats.runs++;
    const ex = await runCase(ctx.client, ctx.proxy, ctx.key, c, (id) => loggedEntry(ctx, id));
    const problems: Problem[] = checkExchange(U, ex, { compareLog: true });
    const r = ex.forwarded[0];
    shapes.count(c, r !== undefined);
    let effectsSeen = "";
    if (r !== undefined) {
      stats.forwarded++;
      if (r.answer !== undefined && r.answer.status >= 200 && r.answer.status < 300) stats.answered2xx++;
      // What the mock server really did: every read and write its data layer made for the request must be covered by
      // what erplink authorized.
      if (r.requestId !== undefined) {
        const authorized = ex.entry?.accesses ?? [];
        const effects = await ctx.mock.effects(r.requestId);
        stats.effects += effects.length;
        effectsSeen = effects.map((e) => `${e.operation} ${e.entitySet}${e.detail ? ` (${e.detail})` : ""}`).join("; ");
        const left = uncovered(fromMockServer(effects), authorized);
        if (left.length > 0) problems.push({ kind: "mockserver-effect-unauthorized", message: describeUncovered(left, authorized) });
        stats.judged++;
      }
    }
    if (problems.length > 0) {
      const said = r?.answer ? `\nthe mock server answered ${r.answer.status}: ${r.answer.body.toString("utf8").slice(0, 400)}` : "";
      throw new Error(`\n${report(ex, problems)}${said}\nthe mock server's effects: ${effectsSeen || "(none)"}\n`);
    }
  });
  try {
    const runs = envInt("ERPLINK_FUZZ_MOCK_RUNS", 1000);
    const timeLimit = envInt("ERPLINK_FUZZ_MOCK_TIME_MS", 90_000);
    await fc.assert(property, runParameters(seed, runs, timeLimit));
    // The time limit is a safety net, not a way to pass on fewer requests.
    assert.ok(stats.runs >= runs, `only ${stats.runs} of ${runs} requests ran within ${timeLimit} ms`);
  } finally {
    console.log(
      `forward-fuzz-mockserver: seed ${seed}, ${stats.runs} requests (shrinking included) in ${((Date.now() - started) / 1000).toFixed(1)} s: ` +
        `${stats.forwarded} forwarded to the mock server, ${stats.judged} judged by its effects (${stats.effects} effects), ${stats.answered2xx} answered 2xx; ` +
        `by shape (forwarded/requests): ${shapes}`,
    );
  }
});

Mock.run();
