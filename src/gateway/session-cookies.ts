/**
 * Browser sessions on the REST facade: which credential an `/admin` request
 * presents, and the session cookies.
 *
 * A request with an `Authorization` header is authenticated by it alone
 * (cookies are ignored, and need no CSRF defence: a browser never adds that
 * header on its own). Without one, the `__Host-erplink_session` cookie is
 * the credential, and then the request must prove it comes from erplink's
 * own pages: a `Sec-Fetch-Site` other than `same-origin` or `none` is
 * refused, an `Origin` (when sent) must be erplink's own, and
 * `X-CSRF-Token` must carry the session's
 * CSRF token (an HMAC keyed by the session token; double submit bound to
 * the session). `SameSite=Strict` on the cookie is the first line of
 * defence; these checks hold even where it does not (older browsers, a
 * same-site but cross-origin page).
 *
 * The cookie is read as a browser sent it and as any other reader would:
 * its bytes (not percent-decoded, unquoted or trimmed), and only when it
 * is the one cookie of that name and holds a well-formed session token.
 * Anything else (two session cookies, a quoted, encoded or padded value, an
 * API key or the master key put in the cookie) is a 401, never a different
 * credential.
 */
import { stringifySetCookie } from "cookie";
import type { FastifyRequest } from "fastify";
import { CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE, isCsrfTokenOf, isWellFormedSessionToken } from "../schema/session-token.js";
import { GatewayError } from "./errors.js";

/** The credential of an admin request, as an `Authorization` value, and whether it came from the cookie. */
export interface AdminCredential {
  readonly authorization: string | undefined;
  readonly viaCookie: boolean;
}

/** Most bytes of a Cookie header erplink reads (browsers cap one cookie at 4 KiB). */
const MAX_COOKIE_HEADER = 16 * 1024;

/**
 * The credential of an admin request. Throws a 401 {@link GatewayError}
 * for a session cookie that holds no session token, and a 403 for a cookie
 * request that fails the cross-site checks.
 *
 * @param ownOrigin erplink's own origin as browsers name it (`ERPLINK_PUBLIC_URL`'s, or this request's scheme and host).
 */
export function adminCredential(req: FastifyRequest, ownOrigin: string): AdminCredential {
  const authorization = req.headers.authorization;
  if (authorization !== undefined) return { authorization, viaCookie: false };
  const token = sessionCookieOf(req);
  if (token === undefined) return { authorization: undefined, viaCookie: false };
  const site = header(req, "sec-fetch-site");
  if (site === "cross-site") throw new GatewayError(403, "a cross-site request cannot use the session cookie");
  // Fetch Metadata: only erplink's own pages (or the user, typing a URL) may
  // use the cookie; a same-site page is another origin, and a value a
  // browser never sends (a case or list variant) proves nothing.
  if (site !== undefined && site !== "same-origin" && site !== "none") {
    throw new GatewayError(403, `a request that is not same-origin cannot use the session cookie (Sec-Fetch-Site ${JSON.stringify(site.slice(0, 100))})`);
  }
  const origin = header(req, "origin");
  if (origin !== undefined && (!SERIALIZED_ORIGIN.test(origin) || originOf(origin) === "" || originOf(origin) !== ownOrigin)) {
    throw new GatewayError(403, `a request from another origin cannot use the session cookie (Origin ${JSON.stringify(origin.slice(0, 100))} is not erplink's ${ownOrigin})`);
  }
  const csrf = header(req, CSRF_HEADER);
  if (csrf === undefined) {
    throw new GatewayError(403, "missing X-CSRF-Token header: a request authenticated by the session cookie must echo the session's CSRF token");
  }
  if (!isCsrfTokenOf(token, csrf)) throw new GatewayError(403, "the X-CSRF-Token header does not match the session");
  return { authorization: `Bearer ${token}`, viaCookie: true };
}

/**
 * The session token of the request's cookie, if it sends one. Throws a 401
 * when the cookie is there but is not exactly one well-formed session token.
 */
function sessionCookieOf(req: FastifyRequest): string | undefined {
  const raw = req.headers.cookie;
  if (raw === undefined || raw.length > MAX_COOKIE_HEADER || !raw.includes(SESSION_COOKIE)) return undefined;
  const values = cookieValues(raw, SESSION_COOKIE);
  if (values.length === 0) return undefined;
  // Readers disagree on a repeated cookie (first or last wins) and on
  // quoted or percent-encoded values; a browser sends neither for a
  // __Host- cookie, so erplink takes no side and refuses.
  if (values.length > 1) {
    throw new GatewayError(401, `the request carries ${values.length} ${SESSION_COOKIE} cookies: sign in again`, { headers: { "www-authenticate": "Bearer" } });
  }
  if (!isWellFormedSessionToken(values[0]!)) {
    throw new GatewayError(401, `the ${SESSION_COOKIE} cookie does not hold a session token: sign in again`, { headers: { "www-authenticate": "Bearer" } });
  }
  return values[0];
}

/**
 * The values of every cookie named exactly `name` in a Cookie header, in
 * order, as sent: pairs split at `;` and their first `=`, the name trimmed
 * of space and tab (the `; ` between pairs), the value taken as is (readers
 * differ on trimming it, so a session token with space around it is none).
 */
function cookieValues(header: string, name: string): string[] {
  const values: string[] = [];
  for (const pair of header.split(";")) {
    const eq = pair.indexOf("=");
    if (eq !== -1 && trimWsp(pair.slice(0, eq)) === name) values.push(pair.slice(eq + 1));
  }
  return values;
}

function trimWsp(s: string): string {
  return s.replace(/^[ \t]+|[ \t]+$/g, "");
}

/**
 * The form of an `Origin` header (RFC 6454 §7): scheme, host and optional
 * port, nothing else. A path, user info or backslash is never sent by a
 * browser, and URL parsers disagree on where such a host ends.
 */
const SERIALIZED_ORIGIN = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#@\\\s]+$/;

/**
 * One header's value. A repeated header is all its values joined, as Node
 * joins them (`a, b`), which no check accepts: a second value is never
 * ignored.
 */
function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(", ") : v;
}

/** erplink's origin as a browser names it for this request (scheme and host, no default port). */
export function ownOriginOf(req: FastifyRequest, publicOrigin: string | undefined): string {
  return publicOrigin ?? originOf(`${req.protocol}://${req.host}`);
}

/** The serialized origin of a URL (`http://localhost:80` -> `http://localhost`), or "" when it is none. */
function originOf(url: string): string {
  try {
    const origin = new URL(url).origin;
    return origin === "null" ? "" : origin;
  } catch {
    return "";
  }
}

/** The `Set-Cookie` values of a new browser session, valid until `expiresAt`. */
export function sessionCookies(token: string, csrfToken: string, expiresAt: Date, now: Date): string[] {
  // Whole seconds, rounded: the expiry was set a moment ago from the same clock.
  const maxAge = Math.max(0, Math.round((expiresAt.getTime() - now.getTime()) / 1000));
  // `__Host-`: Secure, Path=/ and no Domain, so no other host can set or read it.
  const common = { path: "/", secure: true, sameSite: "strict" as const, maxAge };
  return [
    stringifySetCookie({ name: SESSION_COOKIE, value: token, httpOnly: true, ...common }),
    stringifySetCookie({ name: CSRF_COOKIE, value: csrfToken, ...common }),
  ];
}

/** The `Set-Cookie` values that remove the session cookies (log out). */
export function clearedSessionCookies(): string[] {
  const common = { path: "/", secure: true, sameSite: "strict" as const, maxAge: 0 };
  return [
    stringifySetCookie({ name: SESSION_COOKIE, value: "", httpOnly: true, ...common }),
    stringifySetCookie({ name: CSRF_COOKIE, value: "", ...common }),
  ];
}
