/**
 * Differential property tests of erplink's strict JSON parser
 * (src/gateway/odata/json.ts, `parseJson` + `jsonValue`) against
 * `JSON.parse`, the parser a back end most likely uses on the same bytes:
 * on hostile JSON (duplicate members, `__proto__`, deep nesting, BOM, lone
 * surrogates, big numbers, odd white space and trailing text) erplink either
 * refuses, or both yield the same value: same types, same numbers (`-0`
 * included), same strings, same own members in the same order, plain
 * prototypes. Once on text, and once on bytes as the data path reads a body
 * (a fatal UTF-8 decoder) against a back end that decodes leniently.
 *
 * Environment: ERPLINK_FUZZ_SEED (default fixed), ERPLINK_FUZZ_JSON_RUNS (5000).
 */
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { jsonValue, parseJson } from "../../../src/gateway/odata/json.js";
import { UTF8 } from "../../../src/gateway/odata/media-type.js";
import { hostileJson } from "../../../test-support/fuzz/generators.js";
import { envInt, fuzzSeed } from "../../../test-support/fuzz/harness.js";

const Json = suite("JSON parser differential (erplink vs JSON.parse)");

/** erplink's reading, or undefined when it refuses. */
function erplink(text: string): { value: unknown } | undefined {
  try {
    return { value: jsonValue(parseJson(text, "fuzz")) };
  } catch {
    return undefined;
  }
}

/** JSON.parse's reading, or undefined when it throws. */
function native(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/** Where two values differ (undefined when they do not): types, Object.is on numbers, own members in order, prototypes. */
function difference(a: unknown, b: unknown, at = "$"): string | undefined {
  if (typeof a !== typeof b) return `${at}: ${typeof a} vs ${typeof b}`;
  if (a === null || b === null) return a === b ? undefined : `${at}: null vs ${JSON.stringify(b)}`;
  if (typeof a === "number") return Object.is(a, b) ? undefined : `${at}: ${String(a)} vs ${String(b)}`;
  if (typeof a !== "object") return a === b ? undefined : `${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  if (Array.isArray(a) !== Array.isArray(b)) return `${at}: array vs object`;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return `${at}: different prototypes`;
  const ka = Reflect.ownKeys(a as object);
  const kb = Reflect.ownKeys(b as object);
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return `${at}: members ${JSON.stringify(ka.map(String))} vs ${JSON.stringify(kb.map(String))}`;
  for (const k of ka) {
    if (k === "length" && Array.isArray(a)) continue;
    const da = Object.getOwnPropertyDescriptor(a, k)!;
    const db = Object.getOwnPropertyDescriptor(b, k)!;
    if (da.enumerable !== db.enumerable) return `${at}.${String(k)}: enumerable ${da.enumerable} vs ${db.enumerable}`;
    const d = difference(da.value, db.value, `${at}.${String(k)}`);
    if (d !== undefined) return d;
  }
  return undefined;
}

const params = (offset: number): fc.Parameters<unknown> => ({ seed: fuzzSeed() + offset, numRuns: envInt("ERPLINK_FUZZ_JSON_RUNS", 5_000), includeErrorInReport: true });

Json("on hostile text, erplink refuses or reads exactly what JSON.parse reads", () => {
  fc.assert(
    fc.property(hostileJson(), (text) => {
      const ours = erplink(text);
      if (ours === undefined) return;
      const theirs = native(text);
      if (theirs === undefined) throw new Error(`erplink accepts ${JSON.stringify(text.slice(0, 200))} but JSON.parse refuses it`);
      const d = difference(ours.value, theirs.value);
      if (d !== undefined) throw new Error(`erplink and JSON.parse read ${JSON.stringify(text.slice(0, 200))} differently: ${d}`);
    }),
    params(0),
  );
});

// The data path's own decoder: fatal, byte order mark kept.
const FATAL = UTF8;

Json("on hostile bytes, the data path's reading (fatal UTF-8, then erplink) refuses or equals a lenient back end's (UTF-8 with replacement, then JSON.parse)", () => {
  const bytes = fc
    .tuple(
      hostileJson(),
      fc.array(fc.tuple(fc.nat(), fc.constantFrom([0xef, 0xbb, 0xbf], [0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x00])), { maxLength: 2 }),
    )
    .map(([text, inserts]) => {
      let buf = Buffer.from(text, "utf8");
      for (const [at, b] of inserts) {
        const i = at % (buf.length + 1);
        buf = Buffer.concat([buf.subarray(0, i), Buffer.from(b), buf.subarray(i)]);
      }
      return buf;
    });
  fc.assert(
    fc.property(bytes, (buf) => {
      let decoded: string;
      try {
        decoded = FATAL.decode(buf);
      } catch {
        return;
      }
      const ours = erplink(decoded);
      if (ours === undefined) return;
      const theirs = native(buf.toString("utf8"));
      if (theirs === undefined) throw new Error(`the data path accepts bytes ${buf.toString("hex").slice(0, 200)} that JSON.parse refuses`);
      const d = difference(ours.value, theirs.value);
      if (d !== undefined) throw new Error(`the data path and JSON.parse read bytes ${buf.toString("hex").slice(0, 200)} differently: ${d}`);
    }),
    params(1),
  );
});

Json("what JSON.stringify writes (no duplicates, within the depth limit) erplink reads back as JSON.parse does", () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
      const text = JSON.stringify(value);
      const ours = erplink(text);
      assert.ok(ours !== undefined, `erplink refuses ${text.slice(0, 200)}`);
      const d = difference(ours.value, JSON.parse(text));
      assert.is(d, undefined, `erplink reads ${text.slice(0, 200)} differently: ${d}`);
    }),
    params(2),
  );
});

Json("known hostile cases: refused, or read as JSON.parse reads them", () => {
  const cases = [
    '{"a":1,"a":2}',
    '{"__proto__":{"x":1}}',
    '{"__proto__":1,"__proto__":2}',
    '{"a":1,"\\u0061":2}',
    '\ufeff{"a":1}',
    '{"a":"\\ud800"}',
    '{"a":1e999}',
    '{"a":-0}',
    '{"a":9007199254740993}',
    `${"[".repeat(65)}${"]".repeat(65)}`,
    '{"a":1}\u00a0',
    '{"a":1}\u2028',
    '{"a"\u00a0:1}',
    "[1,]",
    '{"a":1,}',
    "01",
    '"\t"',
  ];
  for (const text of cases) {
    const ours = erplink(text);
    if (ours === undefined) continue;
    const theirs = native(text);
    assert.ok(theirs !== undefined, `erplink accepts ${JSON.stringify(text)} but JSON.parse refuses it`);
    assert.is(difference(ours.value, theirs.value), undefined, JSON.stringify(text));
  }
});

Json.run();
