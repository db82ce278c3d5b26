/**
 * The request log's lines (`requestLogLine`, src/store/memory-request-log.ts,
 * compiled by fast-json-stringify) against `JSON.stringify`, which wrote them
 * before: property based, any text in every string field (lone surrogates,
 * control characters, quotes, backslashes, U+2028, markup), any finite
 * number, any date. Both lines must parse to the same value, and the log
 * must read the line back as the entry.
 *
 * Environment: ERPLINK_FUZZ_SEED (default fixed), ERPLINK_FUZZ_RUNS (2000).
 */
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { openMemoryRequestLog, requestLogLine } from "../../src/store/memory-request-log.js";
import type { RequestLogRecord } from "../../src/store/index.js";
import { envInt, fuzzSeed } from "../../test-support/fuzz/harness.js";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const RUNS = envInt("ERPLINK_FUZZ_RUNS", 2000);

const text = fc.oneof(fc.string({ unit: "binary", maxLength: 40 }), fc.string({ unit: "grapheme", maxLength: 300 }), fc.constantFrom("", "\u2028\u2029", '"}\n{"purge":"2026-01-01"}', "\\", "\ud800", "\udfff</script>"));
const number = fc.oneof(fc.integer({ min: 0, max: 599 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(-0));
const date = fc.date({ min: new Date(0), max: new Date(8.64e15 - 1), noInvalidDate: true });

const recordArb: fc.Arbitrary<RequestLogRecord> = fc.record({
  id: text,
  requestId: text,
  timestamp: date,
  apiKeyId: text,
  sessionId: text,
  method: text,
  path: text,
  status: number,
  durationMs: number,
  instance: text,
  service: text,
  accesses: fc.array(fc.record({ entity: text, operation: text }), { maxLength: 4 }),
  denialStep: text,
  errorCode: text,
  errorMessage: text,
  upstreamStatus: number,
  upstreamDurationMs: number,
  clientIp: text,
  userAgent: text,
  upstreamMethod: text,
  upstreamUrl: text,
  responseBytes: number,
  expiresAt: date,
});

const line = suite("request log lines: the compiled serializer against JSON.stringify");

line("every entry's line parses to what JSON.stringify's does", () => {
  fc.assert(
    fc.property(recordArb, (r) => {
      const ours = requestLogLine(r);
      assert.not.ok(ours.includes("\n"), "a line holds no line break");
      assert.equal(JSON.parse(ours), JSON.parse(JSON.stringify(r)));
    }),
    { seed: fuzzSeed(), numRuns: RUNS },
  );
});

line("a line the log wrote is read back as the entry (dates as dates, -0 as 0)", async () => {
  const dir = await mkdtemp(join(tmpdir(), "erplink-log-line-"));
  try {
    const records = fc.sample(recordArb, { seed: fuzzSeed(), numRuns: 200 }).map((r, i) => ({
      ...r,
      // Ids in order, expiring after the clock below: all are kept.
      id: `log_${String(i).padStart(6, "0")}`,
      expiresAt: new Date(8.64e15 - 1),
    }));
    await writeFile(join(dir, "request_logs.jsonl"), records.map((r) => `${requestLogLine(r)}\n`).join(""));
    const log = await openMemoryRequestLog({ dataDir: dir, maxEntries: 1000, clock: () => new Date(0) });
    const read = (await log.query({ limit: 1000 })).items.reverse();
    assert.equal(read.length, records.length);
    read.forEach((got, i) => assert.equal(got, JSON.parse(JSON.stringify(records[i]), (k, v) => (k === "timestamp" || k === "expiresAt" ? new Date(v) : v))));
    await log.close?.();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

line("an entry the compiled serializer cannot write (NaN, an invalid date) is written as JSON.stringify writes it, not thrown", () => {
  const [r] = fc.sample(recordArb, { seed: fuzzSeed(), numRuns: 1 });
  for (const odd of [{ ...r!, durationMs: Number.NaN }, { ...r!, upstreamDurationMs: Number.POSITIVE_INFINITY }, { ...r!, timestamp: new Date(Number.NaN) }]) {
    assert.is(requestLogLine(odd), JSON.stringify(odd));
  }
});

line.run();
