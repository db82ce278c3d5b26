/**
 * The format of erplink's bearer secrets: `<prefix>` + 43 base62 characters
 * (256 random bits) + 6 base62 characters of CRC-32 checksum, so a mistyped
 * or made-up token is refused without a lookup and secret scanners can
 * recognise them. API keys use `erpl_`, sessions `erpls_`. Shared by the
 * services (which issue them) and the gateway (which reads session cookies).
 */
import { randomBytes } from "node:crypto";
import { crc32 } from "node:zlib";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BODY_LENGTH = 43;
const CHECKSUM_LENGTH = 6;

function base62(value: bigint, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) {
    out = BASE62[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}

/**
 * The checksum of a token's body: its CRC-32 in 6 base62 digits, written
 * with plain numbers (a CRC-32 is below 2^32, exact in a double): every
 * token presented is checked, and BigInt division costs a microsecond.
 */
export function checksum(body: string): string {
  let value = crc32(body);
  let out = "";
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

/** A kind of secret: its prefix, a generator and a format check. */
export interface SecretFormat {
  /** A new random secret. */
  generate(): string;
  /** Whether a token has this format and a valid checksum. */
  isWellFormed(token: string): boolean;
}

/** The format `<prefix>` + 43 base62 characters (256 random bits) + 6 of CRC-32 checksum. */
export function secretFormat(prefix: string): SecretFormat {
  const format = new RegExp(`^${prefix}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);
  return {
    generate() {
      const body = base62(BigInt(`0x${randomBytes(32).toString("hex")}`), BODY_LENGTH);
      return `${prefix}${body}${checksum(prefix + body)}`;
    },
    isWellFormed(token) {
      if (!format.test(token)) return false;
      const cut = token.length - CHECKSUM_LENGTH;
      return checksum(token.slice(0, cut)) === token.slice(cut);
    },
  };
}
