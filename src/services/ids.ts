/**
 * Resource ids: a type prefix, `_`, then 26 characters of Crockford base32
 * (48-bit millisecond timestamp + 80 random bits, as in ULID), so ids sort by
 * creation time and reveal nothing else. Within one millisecond, one
 * generator increments the random part, so its ids stay in creation order.
 */
import { randomBytes } from "node:crypto";
import { ID_ALPHABET as ALPHABET, idPattern, type IdPrefix } from "../schema/resource-ids.js";

export type { IdPrefix };

/** The 80 random bits are kept as two 40-bit halves (exact in a double). */
const HALF = 2 ** 40;
/** Random bytes are drawn this many ids at a time (one draw per 10 bytes needed otherwise). */
const POOL_IDS = 256;

/** Creates ids of a given type. */
export type IdGenerator = (prefix: IdPrefix) => string;

/** `value` (a non-negative integer below 2^53) as `length` base32 digits. */
function base32(value: number, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) {
    out = ALPHABET[value % 32] + out;
    value = Math.floor(value / 32);
  }
  return out;
}

/** Creates an id generator reading time from `clock`. */
export function createIdGenerator(clock: () => Date = () => new Date()): IdGenerator {
  let lastTime = -1;
  let high = 0;
  let low = 0;
  let pool = Buffer.alloc(0);
  let used = 0;
  const draw = (): void => {
    if (used + 10 > pool.length) {
      pool = randomBytes(10 * POOL_IDS);
      used = 0;
    }
    high = pool.readUIntBE(used, 5);
    low = pool.readUIntBE(used + 5, 5);
    used += 10;
  };
  return (prefix) => {
    let time = Math.max(clock().getTime(), lastTime);
    if (time === lastTime && !(high === HALF - 1 && low === HALF - 1)) {
      low += 1;
      if (low === HALF) {
        low = 0;
        high += 1;
      }
    } else {
      // A new millisecond, or (never in practice) the random part is spent:
      // move to the next millisecond so ids keep increasing.
      if (time === lastTime) time += 1;
      draw();
    }
    lastTime = time;
    return `${prefix}_${base32(time, 10)}${base32(high, 8)}${base32(low, 8)}`;
  };
}

const PATTERNS = new Map<IdPrefix, RegExp>();

/** Whether `id` is well-formed for the given type. */
export function isId(prefix: IdPrefix, id: string): boolean {
  let re = PATTERNS.get(prefix);
  if (re === undefined) PATTERNS.set(prefix, (re = new RegExp(idPattern(prefix))));
  return re.test(id);
}
