/**
 * The SAP CSRF handshake as OData clients make it with erplink (the SAP
 * Cloud SDK, UI5, pyodata): before a write or a `$batch` they fetch a token
 * (`X-CSRF-Token: Fetch` on a `HEAD` or `GET` of any path of the service),
 * then send it back on the write. erplink keeps the back end's own token and
 * session to itself (`../upstream-session.ts`) and hands clients a token of
 * its own, checked between resolving the instance and analyzing the request:
 *
 * - The token is an HMAC-SHA256 of the key's id and the instance's id with a
 *   server secret (derived from the encryption key, so every process and
 *   every restart computes the same one): per key and instance, stateless
 *   (no store round trip, one HMAC), meaningless to the back end, and
 *   nothing of the key's secret goes into it.
 * - A `HEAD` fetch reads nothing, so erplink answers it itself, whatever the
 *   path and whatever the key may read there: 200, no body, the token; it is
 *   counted against the key's rate limit and forwards nothing.
 * - A `GET` fetch is the read it names: analyzed, authorized and forwarded as
 *   any `GET`, and its answer, erplink's refusal included, carries the token.
 * - A write (anything but `GET` and `HEAD`, `$batch` included) that sends a
 *   token must send this one (compared in constant time), or it is refused
 *   with 403 `FORBIDDEN`, `CSRF token validation failed` and
 *   `X-CSRF-Token: Required`, as SAP Gateway answers, before anything else
 *   is done; a write that sends none passes as before. The token is never
 *   forwarded (the header is not on the forwarded allowlist): erplink sends
 *   the back end's own.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { GatewayError } from "../errors.js";
import type { HeaderSink } from "./admit.js";
import type { Resolved } from "./exchange.js";
import type { DataKey } from "./ports.js";

/** Methods that only read: they may fetch a token, and never need one. */
const READS: ReadonlySet<string> = new Set(["GET", "HEAD"]);

/** The request log's denial step of a write with a token that is not erplink's. */
export const CSRF_DENIAL_STEP = "CSRF_TOKEN";

/** Headers of erplink's own answer to a `HEAD` fetch, beside the token. */
export const FETCH_ANSWER_HEADERS = {
  // A token is per key: no shared cache may keep it.
  "cache-control": "no-store",
  "content-security-policy": "sandbox; default-src 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
} as const;

/** erplink's CSRF tokens for data clients, from one server secret. */
export class ClientCsrfTokens {
  private readonly secret: Buffer;

  /** `secret`: at least 32 bytes, the same in every process (a random one when omitted: then valid in this process only). */
  constructor(secret?: Buffer) {
    if (secret !== undefined && secret.length < 32) throw new Error("the CSRF secret must be at least 32 bytes");
    this.secret = secret ?? randomBytes(32);
  }

  /** The token of a key for an instance (base64url, 43 characters). */
  token(keyId: string, instanceId: string): string {
    return this.mac(keyId, instanceId).toString("base64url");
  }

  /** Whether `sent` is the token of the key for the instance, compared in constant time. */
  matches(sent: string, keyId: string, instanceId: string): boolean {
    // The text itself is compared (a base64url decoder would skip stray characters); its length is no secret.
    const given = Buffer.from(sent, "utf8");
    const expected = Buffer.from(this.token(keyId, instanceId), "utf8");
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private mac(keyId: string, instanceId: string): Buffer {
    return createHmac("sha256", this.secret).update(`erplink data csrf\u0000${keyId}\u0000${instanceId}`).digest();
  }
}

/** The client's `X-CSRF-Token`, one value (Node joins a repeated one with `, `, which no token holds). */
function sentToken(headers: Readonly<Record<string, string | string[] | undefined>>): string | undefined {
  const value = headers["x-csrf-token"];
  if (value === undefined) return undefined;
  return (Array.isArray(value) ? value.join(", ") : value).trim();
}

/**
 * The client CSRF stage, after `resolve instance`: a write's token is checked
 * (403 when it is not erplink's), a fetch gets the token on its answer
 * (`sink`). Returns true for a `HEAD` fetch, which the caller answers itself
 * (200, no body, {@link FETCH_ANSWER_HEADERS}) once the request is counted.
 */
export function clientCsrf<K extends DataKey>(a: Resolved<K>, tokens: ClientCsrfTokens, sink: HeaderSink): boolean {
  const sent = sentToken(a.req.headers);
  if (sent === undefined || sent === "") return false;
  const { method } = a.req;
  if (READS.has(method)) {
    if (sent.toLowerCase() !== "fetch") return false;
    sink.headers({ "x-csrf-token": tokens.token(a.key.id, a.instance.id) });
    return method === "HEAD";
  }
  if (!tokens.matches(sent, a.key.id, a.instance.id)) {
    a.fact.denialStep = CSRF_DENIAL_STEP;
    throw new GatewayError(403, "CSRF token validation failed: send the token erplink answers to X-CSRF-Token: Fetch, or no X-CSRF-Token at all", {
      headers: { "x-csrf-token": "Required" },
    });
  }
  return false;
}
