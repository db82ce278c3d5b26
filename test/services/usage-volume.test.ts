/**
 * GetUsage at volume, on the store tests run on: 100,000 synthetic
 * request-log entries over 30 days, rolled up as the log writer of one
 * process rolls them up, then the dashboard's Overview calls (24 hours, 7
 * days and 30 days, with the busiest keys and entity sets): each answer
 * equals the entries, and each is well under a second, through the
 * Connect client and through REST. Only the queries are timed, never the
 * set-up, against a generous bound: on a shared 2-core machine they take
 * 10 to 60 ms on the embedded store and 150 to 300 ms on FerretDB 1.24
 * (which scans a collection for every query; a MongoDB server answers from
 * its indexes). Several writers (processes) are covered by
 * usage-service.test.ts; on FerretDB each adds about as much again.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { GetUsageRequestSchema, UsageService } from "../../src/gen/erplink/admin/v1/usage_pb.js";
import type { RollupEntry } from "../../src/services/rollups.js";
import { AUTH, createWorld, testMongoUrl, type World } from "../../test-support/world.js";
import { expectedUsage, plainUsage, syntheticEntries, writeRollups } from "../../test-support/usage.js";

const HOUR = 3_600_000;
const DAY = 86_400_000;
const ENTRIES = 100_000;
/** Generous: see above; a loaded machine must not fail the test. */
const BOUND_MS = 1000;

const test = suite<{ world: World; entries: RollupEntry[] }>(`usage at volume (${testMongoUrl() === undefined ? "embedded (memory)" : "mongodb"})`);

test.before(async (ctx) => {
  ctx.world = await createWorld();
  // The world's clock reads 2026-01-02T03:04:05Z: 30 days of traffic up to it.
  const now = ctx.world.now.getTime();
  ctx.entries = syntheticEntries(ENTRIES, { from: now - 30 * DAY, spanMs: 30 * DAY, seed: 42 });
  await writeRollups(ctx.world.store.usageRollups, ctx.entries, 1);
});
test.after(async (ctx) => {
  await ctx.world.close();
});

/** The Overview's calls: 24 h and 7 d by hour, 30 d by day, with the busiest keys and entity sets. */
const CALLS: { what: string; span: number; bucket: "hour" | "day"; groupBy: "api_key" | "entity" }[] = [
  { what: "24 h by hour, top keys", span: DAY, bucket: "hour", groupBy: "api_key" },
  { what: "24 h by hour, top entity sets", span: DAY, bucket: "hour", groupBy: "entity" },
  { what: "7 d by hour, top keys", span: 7 * DAY, bucket: "hour", groupBy: "api_key" },
  { what: "30 d by day, top keys", span: 30 * DAY, bucket: "day", groupBy: "api_key" },
  { what: "30 d by day, top entity sets", span: 30 * DAY, bucket: "day", groupBy: "entity" },
];

test(`the Overview's calls over ${ENTRIES} entries equal the entries and answer in well under a second`, async ({ world, entries }) => {
  const now = world.now.getTime();
  const client = world.client(UsageService);
  const timings: string[] = [];
  for (const call of CALLS) {
    const req: MessageInitShape<typeof GetUsageRequestSchema> = {
      from: timestampFromDate(new Date(now - call.span)),
      to: timestampFromDate(new Date(now)),
      bucket: call.bucket,
      groupBy: call.groupBy,
    };
    const started = performance.now();
    const res = await client.getUsage(req);
    const rpcMs = performance.now() - started;

    const unit = call.bucket === "hour" ? HOUR : DAY;
    const from = Math.floor((now - call.span) / unit) * unit;
    const to = Math.ceil(now / unit) * unit;
    const expected = expectedUsage(entries, { from, to, bucket: call.bucket, groupBy: call.groupBy });
    assert.equal(plainUsage(res.usage!), expected, call.what);
    assert.ok(expected.total.requests > 0.8 * ENTRIES * Math.min(1, call.span / (30 * DAY)), `${call.what}: the range holds the traffic`);

    const query = `from=${new Date(now - call.span).toISOString()}&to=${new Date(now).toISOString()}&bucket=${call.bucket}&group_by=${call.groupBy}`;
    const restStarted = performance.now();
    const rest = await world.app.inject({ method: "GET", url: `/admin/usage?${query}`, headers: AUTH });
    const restMs = performance.now() - restStarted;
    assert.is(rest.statusCode, 200, rest.body);
    assert.is(JSON.parse(rest.body).data.total.requests, String(expected.total.requests));

    timings.push(`${call.what}: ${rpcMs.toFixed(0)} ms (RPC), ${restMs.toFixed(0)} ms (REST)`);
    assert.ok(rpcMs < BOUND_MS, `${call.what}: ${rpcMs.toFixed(0)} ms through the RPC`);
    assert.ok(restMs < BOUND_MS, `${call.what}: ${restMs.toFixed(0)} ms through REST`);
  }
  if (process.env.ERPLINK_TEST_VERBOSE) console.log(timings.join("\n"));
});

test.run();
