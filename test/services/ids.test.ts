/**
 * Unit tests of src/services/ids.ts: type-prefixed, time-sortable ids.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createIdGenerator, isId } from "../../src/services/ids.js";

const test = suite("ids");

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const T0 = Date.parse("2026-01-02T03:04:05.000Z");

/** Decodes Crockford base32 (the id alphabet) to a number. */
function decode(s: string): bigint {
  let n = 0n;
  for (const ch of s) {
    const v = ALPHABET.indexOf(ch);
    assert.ok(v >= 0, `${ch} is in the alphabet`);
    n = n * 32n + BigInt(v);
  }
  return n;
}

/** The millisecond time encoded in an id. */
function timeOf(id: string): number {
  return Number(decode(id.slice(4, 14)));
}

function assertStrictlyIncreasing(ids: readonly string[]): void {
  for (let i = 1; i < ids.length; i++) {
    const [a, b] = [ids[i - 1] ?? "", ids[i] ?? ""];
    assert.ok(a < b, `id ${i} (${b}) sorts after id ${i - 1} (${a})`);
  }
}

test("a fixed clock: 1000 ids are well-formed, distinct and strictly increasing", () => {
  const fixed = new Date(T0);
  const next = createIdGenerator(() => fixed);
  const ids = Array.from({ length: 1000 }, () => next("sys"));
  for (const id of ids) {
    assert.ok(isId("sys", id), id);
    assert.is(id.length, 4 + 26);
    assert.is(timeOf(id), T0, `${id} encodes the clock`);
  }
  assert.is(new Set(ids).size, 1000);
  assertStrictlyIncreasing(ids);
  // Plain string sort (what the stores' id order is) gives creation order.
  assert.equal([...ids].sort(), ids);
});

test("ids carry their type prefix; isId checks it", () => {
  const next = createIdGenerator(() => new Date(T0));
  const sys = next("sys");
  const ins = next("ins");
  assert.match(sys, /^sys_/);
  assert.match(ins, /^ins_/);
  assert.ok(isId("sys", sys));
  assert.ok(isId("ins", ins));
  assert.not.ok(isId("sys", ins));
  assert.not.ok(isId("ins", sys));
});

test("isId rejects malformed ids", () => {
  const good = createIdGenerator(() => new Date(T0))("sys");
  const suffix = good.slice(4);
  const bad = [
    "",
    "sys_",
    "sys",
    suffix,
    `sys_${suffix.slice(1)}`,
    `sys_${suffix}0`,
    `sys_${suffix.toLowerCase()}`,
    `SYS_${suffix}`,
    `sys-${suffix}`,
    `key_${suffix}`,
    ` sys_${suffix}`,
    `sys_${suffix}\n`,
    `sys_${suffix.slice(0, 25)}I`,
    `sys_${suffix.slice(0, 25)}L`,
    `sys_${suffix.slice(0, 25)}O`,
    `sys_${suffix.slice(0, 25)}U`,
  ];
  for (const id of bad) assert.not.ok(isId("sys", id), JSON.stringify(id));
});

test("the time prefix sorts across clock steps and encodes the clock", () => {
  let now = T0;
  const next = createIdGenerator(() => new Date(now));
  const steps = [0, 1, 1, 31, 32, 1000, 1023, 1024, 60_000, 86_400_000, 1, 0, 0];
  const ids: string[] = [];
  const times: number[] = [];
  for (const step of steps) {
    now += step;
    times.push(now);
    ids.push(next("ins"));
  }
  assert.equal(ids.map(timeOf), times);
  const prefixes = ids.map((id) => id.slice(4, 14));
  assert.equal([...prefixes].sort(), prefixes);
  assertStrictlyIncreasing(ids);
});

test("a later millisecond sorts after every id of an earlier one", () => {
  let now = T0;
  const next = createIdGenerator(() => new Date(now));
  const early = Array.from({ length: 50 }, () => next("sys"));
  now += 1;
  const late = next("sys");
  for (const id of early) assert.ok(id < late, `${id} < ${late}`);
});

test("a clock that steps back does not break the order", () => {
  let now = T0 + 5000;
  const next = createIdGenerator(() => new Date(now));
  const a = next("sys");
  now = T0;
  const b = next("sys");
  const c = next("sys");
  assertStrictlyIncreasing([a, b, c]);
});

test("separate generators at the same millisecond give distinct ids", () => {
  const clock = () => new Date(T0);
  const ids = new Set(Array.from({ length: 100 }, () => createIdGenerator(clock)("sys")));
  assert.is(ids.size, 100);
});

test("timestamps up to the 48-bit range encode in 10 characters", () => {
  for (const t of [0, 1, T0, 2 ** 48 - 1]) {
    const id = createIdGenerator(() => new Date(t))("sys");
    assert.ok(isId("sys", id), id);
    assert.is(timeOf(id), t);
  }
});

test.run();
