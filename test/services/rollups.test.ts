/**
 * The rollups' view of a request (pure units, table-driven): which entries
 * count (data requests only), each request's one outcome, the latency
 * bucket at and around every bound, the groups a request belongs to (each
 * once; `""` for none; malformed names as `(other)`), and the buffer that
 * folds entries per hour and day, gives failed batches back, and caps the
 * distinct values of a bucket. Property: folding entries in batches (which
 * sums alike entries first) counts exactly what folding them one by one
 * does, hostile names, capping and hour and day boundaries included; and
 * the buffer counts for an entry what countersOf and groupCountersOf say.
 */
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  LATENCY_BOUNDS_MS,
  OTHER,
  RollupBuffer,
  countersOf,
  groupCountersOf,
  groupsOf,
  isDataRequest,
  latencyBucket,
  outcomeOf,
  type RollupEntry,
} from "../../src/services/rollups.js";
import type { RollupDelta } from "../../src/store/index.js";
import { fuzzSeed } from "../../test-support/fuzz/harness.js";

const test = suite("usage rollups (writer side)");

const KEY = "key_01KA0000000000000000000000";

function entry(fields: Partial<RollupEntry> = {}): RollupEntry {
  return {
    timestamp: new Date("2026-01-02T03:04:05.000Z"),
    path: "/odata/prod/API_BP/A_BusinessPartner",
    status: 200,
    apiKeyId: KEY,
    instance: "prod",
    service: "API_BP",
    accesses: [{ entity: "A_BusinessPartner", operation: "list" }],
    denialStep: "",
    upstreamStatus: 200,
    upstreamDurationMs: 42,
    ...fields,
  };
}

test("only data requests roll up: /admin paths and admin RPCs are logged but not counted", () => {
  assert.is(isDataRequest({ path: "/odata/prod/API_BP/A_BusinessPartner?$top=1" }), true);
  assert.is(isDataRequest({ path: "/odata/prod/API_BP" }), true);
  for (const path of ["/admin/systems", "/admin/usage?bucket=day", "/erplink.admin.v1.LogService/QueryLogs", "/odata", "/healthz"]) {
    assert.is(isDataRequest({ path }), false, path);
  }
});

test("every request has exactly one outcome: denial step first, then the back end's status, then erplink's own", () => {
  const cases: [string, Partial<RollupEntry>, string, string][] = [
    ["2xx from the back end", { status: 200, upstreamStatus: 200 }, "allowed", ""],
    ["304 from the back end", { status: 304, upstreamStatus: 304 }, "allowed", ""],
    ["answered by erplink itself", { status: 200, upstreamStatus: 0 }, "allowed", ""],
    ["404 from the back end", { status: 404, upstreamStatus: 404 }, "upstream_client_error", ""],
    ["401 from the back end", { status: 401, upstreamStatus: 401 }, "upstream_client_error", ""],
    ["500 from the back end", { status: 500, upstreamStatus: 500 }, "upstream_server_error", ""],
    ["503 from the back end", { status: 503, upstreamStatus: 503 }, "upstream_server_error", ""],
    ["unknown key", { status: 401, upstreamStatus: 0, denialStep: "KEY_INVALID" }, "denied", "KEY_INVALID"],
    ["entity step", { status: 403, upstreamStatus: 0, denialStep: "ENTITY" }, "denied", "ENTITY"],
    ["never forwarded", { status: 403, upstreamStatus: 0, denialStep: "NOT_ALLOWED" }, "denied", "NOT_ALLOWED"],
    ["an unknown step name", { status: 403, upstreamStatus: 0, denialStep: "weird step" }, "denied", "OTHER"],
    ["rate limited", { status: 429, upstreamStatus: 0, denialStep: "RATE_LIMITED" }, "rate_limited", ""],
    ["malformed request", { status: 400, upstreamStatus: 0 }, "client_error", ""],
    ["unknown instance", { status: 404, upstreamStatus: 0 }, "client_error", ""],
    ["back end unreachable", { status: 502, upstreamStatus: 0 }, "gateway_error", ""],
    ["back end too slow", { status: 504, upstreamStatus: 0 }, "gateway_error", ""],
    ["store unavailable", { status: 503, upstreamStatus: 0 }, "gateway_error", ""],
  ];
  for (const [what, fields, outcome, step] of cases) {
    assert.equal(outcomeOf(entry(fields)), { outcome, step }, what);
  }
});

test("latency buckets: a bound belongs to its own bucket, just above it to the next, beyond the last to the overflow bucket", () => {
  assert.equal(LATENCY_BOUNDS_MS, [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000]);
  assert.is(latencyBucket(0), 0);
  for (const [i, bound] of LATENCY_BOUNDS_MS.entries()) {
    assert.is(latencyBucket(bound), i, `${bound}`);
    assert.is(latencyBucket(bound + 0.001), i + 1, `${bound}+`);
  }
  assert.is(latencyBucket(120_000), LATENCY_BOUNDS_MS.length);
});

test("counters (short names as stored): one request, its outcome, its denial step, and latency only when the back end answered", () => {
  // n requests, ok allowed, u5 upstream 5xx, dn denied, d_<step>, g5 gateway errors, lc/ls latency count/sum, l<i> buckets.
  assert.equal(countersOf(entry({ upstreamDurationMs: 42.5 })), { n: 1, ok: 1, lc: 1, ls: 42.5, l3: 1 });
  assert.equal(countersOf(entry({ status: 403, upstreamStatus: 0, upstreamDurationMs: 0, denialStep: "OPERATION" })), {
    n: 1,
    dn: 1,
    d_OPERATION: 1,
  });
  assert.equal(countersOf(entry({ status: 502, upstreamStatus: 502, upstreamDurationMs: 3 })), { n: 1, u5: 1, lc: 1, ls: 3, l0: 1 });
  assert.equal(countersOf(entry({ status: 504, upstreamStatus: 0, upstreamDurationMs: 0 })), { n: 1, g5: 1 });
  assert.equal(countersOf(entry({ status: 429, upstreamStatus: 0, upstreamDurationMs: 0, denialStep: "RATE_LIMITED" })), { n: 1, rl: 1 });
  assert.equal(countersOf(entry({ status: 400, upstreamStatus: 0, upstreamDurationMs: 0 })), { n: 1, c4: 1 });
  assert.equal(countersOf(entry({ status: 404, upstreamStatus: 404, upstreamDurationMs: 30_000.5 })), { n: 1, u4: 1, lc: 1, ls: 30_000.5, l12: 1 });
  // Groups keep the count and sum of answer times, not the histogram.
  assert.equal(groupCountersOf(entry({ upstreamDurationMs: 42.5 })), { n: 1, ok: 1, lc: 1, ls: 42.5 });
});

test("groups: a $batch counts once per distinct entity set and operation; a call counts under its operation's name and invoke; none is \"\"; malformed names are (other)", () => {
  const batch = entry({
    accesses: [
      { entity: "A_BusinessPartner", operation: "list" },
      { entity: "A_BusinessPartner", operation: "get" },
      { entity: "A_Address", operation: "list" },
    ],
  });
  assert.equal(groupsOf(batch), {
    api_key: [KEY],
    instance: ["prod"],
    service: ["API_BP"],
    entity: ["A_BusinessPartner", "A_Address"],
    operation: ["list", "get"],
    outcome: ["allowed"],
  });
  assert.equal(groupsOf(entry({ apiKeyId: "", accesses: [], status: 401, upstreamStatus: 0, denialStep: "KEY_INVALID" })), {
    api_key: [""],
    instance: ["prod"],
    service: ["API_BP"],
    entity: [""],
    operation: [""],
    outcome: ["denied"],
  });
  // A call of a function or action: the operation's name (a bound one's qualified) under entity, invoke under operation.
  const call = entry({
    accesses: [
      { entity: "A_SalesOrder", operation: "get" },
      { entity: "Sales.Approve", operation: "invoke" },
      { entity: "GetNearestAirport", operation: "invoke" },
    ],
  });
  assert.equal([groupsOf(call).entity, groupsOf(call).operation], [["A_SalesOrder", "Sales.Approve", "GetNearestAirport"], ["get", "invoke"]]);
  // Refused requests still carry whatever the client wrote.
  assert.equal(groupsOf(entry({ instance: "pr od", service: "x/y", accesses: [{ entity: "E$1", operation: "merge" }], status: 400, upstreamStatus: 0 })), {
    api_key: [KEY],
    instance: [OTHER],
    service: [OTHER],
    entity: [OTHER],
    operation: [OTHER],
    outcome: ["client_error"],
  });
});

/** A batch's deltas as plain data. */
function plain(deltas: readonly RollupDelta[]) {
  return deltas.map((d) => ({
    start: d.start.toISOString(),
    writer: d.writer,
    totals: d.totals,
    groups: Object.fromEntries([...d.groups].map(([k, v]) => [k, Object.fromEntries(v)])),
  }));
}

test("buffer: folds data requests per hour and per UTC day, each group once, admin entries left out; take empties it", () => {
  const buffer = new RollupBuffer("w1");
  assert.is(buffer.pending, false);
  buffer.fold([
    entry({ timestamp: new Date("2026-01-02T03:59:59.999Z") }),
    entry({ path: "/admin/systems", timestamp: new Date("2026-01-02T03:10:00.000Z") }),
    entry({ timestamp: new Date("2026-01-02T04:00:00.000Z"), status: 403, upstreamStatus: 0, upstreamDurationMs: 0, denialStep: "ENTITY", accesses: [] }),
  ]);
  assert.is(buffer.pending, true);
  const batch = buffer.take();
  assert.is(buffer.pending, false);
  const allowed = { n: 1, ok: 1, lc: 1, ls: 42, l3: 1 };
  const denied = { n: 1, dn: 1, d_ENTITY: 1 };
  const both = { n: 2, ok: 1, lc: 1, ls: 42, l3: 1, dn: 1, d_ENTITY: 1 };
  // Groups without the histogram.
  const allowedG = { n: 1, ok: 1, lc: 1, ls: 42 };
  const bothG = { n: 2, ok: 1, lc: 1, ls: 42, dn: 1, d_ENTITY: 1 };
  const groupsOfOne = (c: object, entity: string, operation: string, outcome: string) => ({
    api_key: { [KEY]: c },
    instance: { prod: c },
    service: { API_BP: c },
    entity: { [entity]: c },
    operation: { [operation]: c },
    outcome: { [outcome]: c },
  });
  assert.equal(plain(batch.hours), [
    { start: "2026-01-02T03:00:00.000Z", writer: "w1", totals: allowed, groups: groupsOfOne(allowedG, "A_BusinessPartner", "list", "allowed") },
    { start: "2026-01-02T04:00:00.000Z", writer: "w1", totals: denied, groups: groupsOfOne(denied, "", "", "denied") },
  ]);
  assert.equal(plain(batch.days), [
    {
      start: "2026-01-02T00:00:00.000Z",
      writer: "w1",
      totals: both,
      groups: {
        api_key: { [KEY]: bothG },
        instance: { prod: bothG },
        service: { API_BP: bothG },
        entity: { A_BusinessPartner: allowedG, "": denied },
        operation: { list: allowedG, "": denied },
        outcome: { allowed: allowedG, denied },
      },
    },
  ]);
  assert.equal(buffer.take(), { hours: [], days: [] });
});

test("buffer: a batch given back is added to what was folded meanwhile, counted once", () => {
  const buffer = new RollupBuffer("w1");
  buffer.fold([entry()]);
  const failed = buffer.take();
  buffer.fold([entry(), entry({ timestamp: new Date("2026-01-03T00:00:00.000Z") })]);
  buffer.restore(failed);
  const batch = buffer.take();
  assert.equal(
    batch.hours.map((d) => [d.start.toISOString(), d.totals.n, d.groups.get("entity")?.get("A_BusinessPartner")?.n]),
    [
      ["2026-01-02T03:00:00.000Z", 2, 2],
      ["2026-01-03T00:00:00.000Z", 1, 1],
    ],
  );
  assert.equal(batch.days.map((d) => [d.start.toISOString(), d.totals.n]), [
    ["2026-01-02T00:00:00.000Z", 2],
    ["2026-01-03T00:00:00.000Z", 1],
  ]);
});

test("buffer: beyond the cap of distinct values per kind in one hour or day, new values count as (other), across flushes", () => {
  const buffer = new RollupBuffer("w1", 3);
  const at = (i: number, instance: string) => entry({ instance, timestamp: new Date(Date.parse("2026-01-02T03:00:00.000Z") + i * 1000) });
  buffer.fold([at(0, "a"), at(1, "b"), at(2, "c"), at(3, "d"), at(4, "a")]);
  const first = buffer.take();
  assert.equal(Object.fromEntries([...first.hours[0]!.groups.get("instance")!].map(([v, c]) => [v, c.n])), { a: 2, b: 1, c: 1, [OTHER]: 1 });
  // A later flush to the same hour keeps the same cap: its document already holds three values.
  buffer.fold([at(5, "e"), at(6, "b")]);
  const second = buffer.take();
  assert.equal(Object.fromEntries([...second.hours[0]!.groups.get("instance")!].map(([v, c]) => [v, c.n])), { [OTHER]: 1, b: 1 });
  // A new hour has room again; the day document does not.
  buffer.fold([entry({ instance: "e", timestamp: new Date("2026-01-02T05:00:00.000Z") })]);
  const third = buffer.take();
  assert.equal([...third.hours[0]!.groups.get("instance")!.keys()], ["e"]);
  assert.equal([...third.days[0]!.groups.get("instance")!.keys()], [OTHER]);
  // Totals never lose a request.
  assert.is(first.hours[0]!.totals.n! + second.hours[0]!.totals.n!, 7);
});

test("buffer: an entry without a valid time does not carry the entries after it out of their hour, batched as one by one", () => {
  // None is made so (the gateway stamps entries from its clock): the batch's hour must still be each entry's own.
  const entries = [entry({ timestamp: new Date(Number.NaN) }), entry(), entry({ timestamp: new Date("2026-01-02T05:00:00.000Z") })];
  const batched = new RollupBuffer("w1");
  batched.fold(entries);
  const single = new RollupBuffer("w1");
  for (const e of entries) single.fold([e]);
  const counts = (deltas: readonly RollupDelta[]) => deltas.map((d) => [String(d.start.getTime()), d.totals.n]);
  const a = batched.take();
  const b = single.take();
  assert.equal(counts(a.hours), counts(b.hours));
  assert.equal(counts(a.days), counts(b.days));
  assert.equal(counts(a.hours).slice(1), [
    [String(Date.parse("2026-01-02T03:00:00.000Z")), 1],
    [String(Date.parse("2026-01-02T05:00:00.000Z")), 1],
  ]);
});

test("property: the buffer counts for one entry what countersOf and groupCountersOf say (fold counts in place, apart from them)", () => {
  const anEntry = fc.record({
    status: fc.constantFrom(200, 304, 400, 401, 403, 404, 429, 500, 502, 504),
    upstreamStatus: fc.constantFrom(0, 200, 304, 404, 500, 503),
    denialStep: fc.constantFrom("", "ENTITY", "KEY_INVALID", "RATE_LIMITED", "bad step"),
    upstreamDurationMs: fc.oneof(fc.constantFrom(...LATENCY_BOUNDS_MS), fc.integer({ min: 0, max: 40_000_000 }).map((n) => n / 1000)),
  });
  fc.assert(
    fc.property(anEntry, (fields) => {
      const e = entry(fields);
      const buffer = new RollupBuffer("w1");
      buffer.fold([e]);
      const { hours, days } = buffer.take();
      for (const d of [hours[0]!, days[0]!]) {
        assert.equal(d.totals, countersOf(e));
        for (const [kind, values] of d.groups) for (const [value, c] of values) assert.equal(c, groupCountersOf(e), `${kind} ${value}`);
      }
    }),
    { seed: fuzzSeed(), numRuns: 200 },
  );
});

test("property: batches fold to what the same entries folded one by one do (hostile names, caps, hours and days)", () => {
  // Few values each, so that batches hold entries alike in all but one field; names that run into each other when joined.
  const text = fc.constantFrom("a", "a|b", "b|c", "c", "a\nb", "", "x".repeat(70));
  const access = fc.record({ entity: fc.constantFrom("A_BusinessPartner", "B", "B|list"), operation: fc.constantFrom("list", "get", "bogus|") });
  const anEntry: fc.Arbitrary<RollupEntry> = fc.record({
    // Mostly one hour; sometimes the hours around a UTC midnight.
    timestamp: fc
      .oneof(
        { weight: 4, arbitrary: fc.integer({ min: Date.parse("2026-01-01T23:00:00Z"), max: Date.parse("2026-01-01T23:59:59Z") }) },
        fc.integer({ min: Date.parse("2026-01-01T22:30:00Z"), max: Date.parse("2026-01-02T01:30:00Z") }),
      )
      .map((t) => new Date(t)),
    path: fc.oneof({ weight: 5, arbitrary: fc.constant("/odata/prod/API_BP/A") }, fc.constant("/admin/systems")),
    status: fc.constantFrom(200, 403, 502),
    apiKeyId: fc.constantFrom(KEY, "key_x|1:y"),
    instance: text,
    service: text,
    accesses: fc.array(access, { maxLength: 2 }),
    denialStep: fc.constantFrom("", "ENTITY", "RATE_LIMITED", "bad step"),
    upstreamStatus: fc.constantFrom(0, 200, 503),
    upstreamDurationMs: fc.integer({ min: 0, max: 40_000_000 }).map((n) => n / 1000),
  });
  fc.assert(
    fc.property(fc.array(fc.array(anEntry, { maxLength: 60 }), { maxLength: 4 }), fc.integer({ min: 1, max: 4 }), (batches, maxValues) => {
      const batched = new RollupBuffer("w1", maxValues);
      const single = new RollupBuffer("w1", maxValues);
      for (const batch of batches) {
        batched.fold(batch);
        for (const e of batch) single.fold([e]);
      }
      const a = batched.take();
      const b = single.take();
      // Latency sums may differ in their last bits: alike entries are summed first.
      const rounded = (deltas: readonly RollupDelta[]) =>
        JSON.parse(JSON.stringify(plain(deltas), (k, v: unknown) => (k === "ls" && typeof v === "number" ? Math.round(v * 1000) / 1000 : v)));
      assert.equal(rounded(a.hours), rounded(b.hours));
      assert.equal(rounded(a.days), rounded(b.days));
    }),
    {
      seed: fuzzSeed(),
      numRuns: 300,
      // Always tried: names that join to the same text, and entries alike but for their accesses.
      examples: [
        [[[entry({ instance: "a|b", service: "c" }), entry({ instance: "a", service: "b|c" }), entry({ accesses: [{ entity: "B", operation: "get" }] })]], 4],
      ],
    },
  );
});

test.run();
