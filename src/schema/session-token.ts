/**
 * Session tokens and what is derived from them. A token is `erpls_` + 43
 * base62 characters (256 random bits) + a 6-character CRC-32 checksum (the
 * API key format under its own prefix); only its SHA-256 hash is stored.
 *
 * The CSRF token of a session is an HMAC keyed by the session token, so it
 * is bound to the session, needs no server-side secret or state shared
 * between processes, and cannot be computed by anyone who lacks the token
 * (which a browser keeps in an HttpOnly cookie). Pure functions: the
 * gateway checks cookie requests with them.
 */
import { createHash, createHmac, hash, timingSafeEqual } from "node:crypto";
import { secretFormat } from "./secret-format.js";

const SESSION = secretFormat("erpls_");

/** The name of the HttpOnly cookie that carries a browser session's token. */
export const SESSION_COOKIE = "__Host-erplink_session";
/** The name of the readable cookie that carries a browser session's CSRF token. */
export const CSRF_COOKIE = "__Host-erplink_csrf";
/** The header a cookie-authenticated request echoes the CSRF token in. */
export const CSRF_HEADER = "x-csrf-token";

/** A new session token. */
export function generateSessionToken(): string {
  return SESSION.generate();
}

/** Whether a token has the format and checksum of a session token. */
export function isWellFormedSessionToken(token: string): boolean {
  return SESSION.isWellFormed(token);
}

/** The hex SHA-256 hash under which a session is stored. */
export function hashSessionToken(token: string): string {
  return hash("sha256", token, "hex");
}

/** The CSRF token of a session: base64url of HMAC-SHA256(key = session token, "erplink csrf v1"). */
export function csrfTokenOf(sessionToken: string): string {
  return createHmac("sha256", sessionToken).update("erplink csrf v1").digest("base64url");
}

/** Whether `presented` is the CSRF token of `sessionToken`, compared in constant time. */
export function isCsrfTokenOf(sessionToken: string, presented: string): boolean {
  const expected = createHash("sha256").update(csrfTokenOf(sessionToken)).digest();
  const got = createHash("sha256").update(presented, "utf8").digest();
  return timingSafeEqual(expected, got);
}

/**
 * The fingerprint of the master key stored with master sessions: an HMAC
 * keyed by the master key, which reveals nothing about it and changes when
 * it changes.
 */
export function masterFingerprint(masterKey: string): string {
  return createHmac("sha256", masterKey).update("erplink master session v1").digest("hex");
}
