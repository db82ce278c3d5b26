/**
 * API key secrets: `erpl_` + 43 base62 characters (256 random bits) + 6
 * base62 characters of CRC-32 checksum. The checksum lets erplink (and
 * secret scanners) reject a mistyped or made-up token without a lookup.
 * Only the SHA-256 hash of a secret is stored.
 */
import { hash } from "node:crypto";
import { secretFormat } from "../schema/secret-format.js";

const API_KEY = secretFormat("erpl_");

/** How many characters of a secret are shown as the key's `prefix`. */
export const SHOWN_PREFIX_LENGTH = "erpl_".length + 7;

/** A new random secret. */
export function generateApiKeySecret(): string {
  return API_KEY.generate();
}

/** Whether a token has the format and checksum of an erplink API key. */
export function isWellFormedApiKey(token: string): boolean {
  return API_KEY.isWellFormed(token);
}

/** The hex SHA-256 hash under which a secret's key is stored. */
export function hashApiKey(secret: string): string {
  // One-shot (no Hash object): runs for every request that presents a key.
  return hash("sha256", secret, "hex");
}
