/**
 * Resource ids: a type prefix, `_`, then 26 characters of Crockford base32
 * (48-bit millisecond timestamp + 80 random bits, as in ULID), so ids sort by
 * creation time and reveal nothing else. Within one millisecond, one
 * generator increments the random part, so its ids stay in creation order.
 */
import { randomBytes } from "node:crypto";
import { ID_ALPHABET as ALPHABET, idPattern, type IdPrefix } from "../schema/resource-ids.js";

export type { IdPrefix };

const RANDOM_BITS = 80n;

/** Creates ids of a given type. */
export type IdGenerator = (prefix: IdPrefix) => string;

function base32(value: bigint, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) {
    out = ALPHABET[Number(value & 31n)] + out;
    value >>= 5n;
  }
  return out;
}

/** Creates an id generator reading time from `clock`. */
export function createIdGenerator(clock: () => Date = () => new Date()): IdGenerator {
  let lastTime = -1;
  let lastRandom = 0n;
  return (prefix) => {
    let time = Math.max(clock().getTime(), lastTime);
    if (time === lastTime && lastRandom < (1n << RANDOM_BITS) - 1n) {
      lastRandom += 1n;
    } else {
      // A new millisecond, or (never in practice) the random part is spent:
      // move to the next millisecond so ids keep increasing.
      if (time === lastTime) time += 1;
      lastRandom = BigInt(`0x${randomBytes(10).toString("hex")}`);
    }
    lastTime = time;
    return `${prefix}_${base32(BigInt(time), 10)}${base32(lastRandom, 16)}`;
  };
}

const PATTERNS = new Map<IdPrefix, RegExp>();

/** Whether `id` is well-formed for the given type. */
export function isId(prefix: IdPrefix, id: string): boolean {
  let re = PATTERNS.get(prefix);
  if (re === undefined) PATTERNS.set(prefix, (re = new RegExp(idPattern(prefix))));
  return re.test(id);
}
