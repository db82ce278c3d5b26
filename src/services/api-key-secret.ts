/**
 * API key secrets: `erpl_` + 43 base62 characters (256 random bits) + 6
 * base62 characters of CRC-32 checksum. The checksum lets erplink (and
 * secret scanners) reject a mistyped or made-up token without a lookup.
 * Only the SHA-256 hash of a secret is stored.
 */
import { createHash, randomBytes } from "node:crypto";
import { crc32 } from "node:zlib";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const PREFIX = "erpl_";
const BODY_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
const FORMAT = new RegExp(`^${PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);

/** How many characters of a secret are shown as the key's `prefix`. */
export const SHOWN_PREFIX_LENGTH = PREFIX.length + 7;

function base62(value: bigint, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) {
    out = BASE62[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}

function checksum(body: string): string {
  return base62(BigInt(crc32(body)), CHECKSUM_LENGTH);
}

/** A new random secret. */
export function generateApiKeySecret(): string {
  const body = base62(BigInt(`0x${randomBytes(32).toString("hex")}`), BODY_LENGTH);
  return `${PREFIX}${body}${checksum(PREFIX + body)}`;
}

/** Whether a token has the format and checksum of an erplink API key. */
export function isWellFormedApiKey(token: string): boolean {
  if (!FORMAT.test(token)) return false;
  const cut = token.length - CHECKSUM_LENGTH;
  return checksum(token.slice(0, cut)) === token.slice(cut);
}

/** The hex SHA-256 hash under which a secret's key is stored. */
export function hashApiKey(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}
