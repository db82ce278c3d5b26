/**
 * Resource ids: a type prefix, `_`, then 26 characters of Crockford base32
 * (48-bit millisecond timestamp + 80 random bits, as in ULID), so ids sort by
 * creation time and reveal nothing else.
 */
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** The prefixes of erplink's resource ids. */
export type IdPrefix = "sys" | "ins";

/** Creates ids of a given type. */
export type IdGenerator = (prefix: IdPrefix) => string;

/** Creates an id generator reading time from `clock`. */
export function createIdGenerator(clock: () => Date = () => new Date()): IdGenerator {
  return (prefix) => {
    let time = clock().getTime();
    let timePart = "";
    for (let i = 0; i < 10; i++) {
      timePart = ALPHABET[time % 32] + timePart;
      time = Math.floor(time / 32);
    }
    const random = randomBytes(10);
    let randomPart = "";
    // 80 bits = 16 base32 characters, five bits at a time.
    let buffer = 0;
    let bits = 0;
    for (const byte of random) {
      buffer = (buffer << 8) | byte;
      bits += 8;
      while (bits >= 5) {
        randomPart += ALPHABET[(buffer >> (bits - 5)) & 31];
        bits -= 5;
      }
      buffer &= (1 << bits) - 1;
    }
    return `${prefix}_${timePart}${randomPart}`;
  };
}

const ID_PATTERN = /^(sys|ins)_[0-9A-HJKMNP-TV-Z]{26}$/;

/** Whether `id` is well-formed for the given type. */
export function isId(prefix: IdPrefix, id: string): boolean {
  const m = ID_PATTERN.exec(id);
  return m !== null && m[1] === prefix;
}
