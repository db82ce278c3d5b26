/**
 * For the property tests of browser sessions (test/gateway/sessions-
 * properties.test.ts): other readers of a Cookie header, independent of
 * erplink's, and fast-check arbitraries of hostile admin request headers.
 *
 * The readers disagree with one another on purpose, as real ones do: which
 * of two cookies of one name wins, whether a value is percent-decoded or
 * unquoted, whether space around it is part of it, which pairs are valid.
 * erplink may authenticate a cookie only where they all read the same token.
 */
import { createHmac } from "node:crypto";
import { parseCookie } from "cookie";
import fc from "fast-check";
import { Headers, getCookies } from "undici";

/** One reader: the value it takes for cookie `name`, or undefined. */
export type CookieReader = (header: string, name: string) => string | undefined;

/** RFC 6265 §5.2 as most servers do it: pairs at `;`, name and value trimmed, first one wins, nothing decoded. */
const rfc6265First: CookieReader = (header, name) => {
  for (const pair of header.split(";")) {
    const eq = pair.indexOf("=");
    if (eq !== -1 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
};

/** The `cookie` package with its defaults (Express, Fastify's cookie plugin): first wins, percent-decoded. */
const jshttpCookie: CookieReader = (header, name) => parseCookie(header)[name];

/** undici's reader (what `fetch`-style servers use): last wins, the value as sent, space kept. */
const undiciCookie: CookieReader = (header, name) => getCookies(new Headers({ cookie: header }))[name];

/** Go's net/http (`Request.Cookie`): pairs trimmed, names trimmed, pairs with an invalid value skipped, one pair of quotes removed, first wins. */
const goCookie: CookieReader = (header, name) => {
  for (const part of header.split(";")) {
    const pair = part.trim();
    const eq = pair.indexOf("=");
    if (eq === -1 || pair.slice(0, eq).trim() !== name) continue;
    let value = pair.slice(eq + 1);
    if (value.length > 1 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    // Go accepts space and comma in values, and nothing else outside cookie-octets.
    if (/^[\x20\x21\x23-\x2b\x2c-\x3a\x3c-\x5b\x5d-\x7e]*$/.test(value)) return value;
  }
  return undefined;
};

/** The readers the differential test compares, by name. */
export const COOKIE_READERS: Readonly<Record<string, CookieReader>> = {
  rfc6265First,
  jshttpCookie,
  undiciCookie,
  goCookie,
};

/** The CSRF token erplink derives from a session token (spelled out here, not imported). */
export function csrfOf(token: string): string {
  return createHmac("sha256", token).update("erplink csrf v1").digest("base64url");
}

/** The secrets of a test world the arbitraries draw from. */
export interface SessionFixtures {
  /** Session tokens that work, by token: the session id. */
  readonly live: ReadonlyMap<string, string>;
  /** Session tokens that were revoked. */
  readonly revoked: readonly string[];
  /** Well-formed session tokens never issued. */
  readonly forged: readonly string[];
  readonly masterKey: string;
  readonly adminKey: string;
  readonly dataKey: string;
}

/** Every secret of the fixtures (none may appear in an answer or a log line). */
export function secretsOf(f: SessionFixtures): string[] {
  const tokens = [...f.live.keys(), ...f.revoked, ...f.forged];
  return [...tokens, ...tokens.map(csrfOf), f.masterKey, f.adminKey, f.dataKey];
}

/** Values a hostile Cookie pair may carry, for a token `t`. */
function valueVariants(t: string): string[] {
  return [t, `"${t}"`, `%${t.charCodeAt(0).toString(16)}${t.slice(1)}`, ` ${t}`, `${t} `, `${t}\t`, `${t}x`, t.slice(0, -1), `${t},x`, t.toUpperCase()];
}

/** A Cookie header: a few pairs (session cookies and look-alikes among them), joined by more or less standard separators. */
export function cookieHeader(f: SessionFixtures): fc.Arbitrary<string> {
  const tokens = [...f.live.keys(), ...f.revoked, ...f.forged];
  // The session cookie's own name half the time; else near misses and other cookies.
  const lookalike = fc.constantFrom(
    " __Host-erplink_session",
    "__Host-erplink_session ",
    "__host-erplink_session",
    "__HOST-ERPLINK_SESSION",
    "__Host-erplink_csrf",
    "__Secure-erplink_session",
    '"__Host-erplink_session"',
    "__Host-erplink_session2",
    "other",
    "",
  );
  const name = fc.oneof({ weight: 5, arbitrary: fc.constant("__Host-erplink_session") }, { weight: 5, arbitrary: lookalike });
  const value = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...tokens) },
    { weight: 3, arbitrary: fc.constantFrom(...tokens).chain((t) => fc.constantFrom(...valueVariants(t))) },
    { weight: 1, arbitrary: fc.constantFrom("", f.masterKey, f.adminKey, f.dataKey, "erpls_", "deleted") },
    { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(..."aZ09_-=\"%, \t".split("")), maxLength: 12 }) },
  );
  const pair = fc.oneof(
    { weight: 8, arbitrary: fc.tuple(name, value).map(([n, v]) => `${n}=${v}`) },
    // A nameless cookie: browsers send its value alone (the __Host- tossing trick sends `__Host-…=v` this way).
    { weight: 1, arbitrary: value },
  );
  const separator = fc.constantFrom("; ", "; ", "; ", ";", " ; ", ";\t", ";;");
  return fc
    .tuple(fc.array(pair, { minLength: 1, maxLength: 3 }), fc.array(separator, { minLength: 3, maxLength: 3 }))
    .map(([pairs, seps]) => pairs.reduce((acc, p, i) => (i === 0 ? p : `${acc}${seps[(i - 1) % 3]}${p}`), ""))
    // Node trims a header value's ends, and a value is never empty.
    .map((h) => h.trim())
    .filter((h) => h !== "");
}

/** A Cookie header as a browser sends it: one session cookie holding a live token, among other cookies. */
export function cleanCookieHeader(f: SessionFixtures): fc.Arbitrary<{ readonly cookie: string; readonly token: string }> {
  return fc
    .record({
      token: fc.constantFrom(...f.live.keys()),
      before: fc.constantFrom("", "a=b; ", "__host-erplink_session=x; ", "__Host-erplink_csrf=y; ", "=z; "),
      after: fc.constantFrom("", "; a=b", "; __Host-erplink_session2=x", "; erplink_session=x", "; __Host-erplink_csrf="),
    })
    .map(({ token, before, after }) => ({ cookie: `${before}__Host-erplink_session=${token}${after}`, token }));
}

/** A labelled header value: what it is, for the oracle. */
export interface Labelled<L> {
  readonly value: string | undefined;
  readonly label: L;
}

/** `Origin` values: erplink's own (as browsers may serialize it) or foreign, or none. */
export const ORIGINS: readonly Labelled<"own" | "foreign" | "absent">[] = [
  { value: undefined, label: "absent" },
  { value: "http://localhost", label: "own" },
  { value: "http://localhost:80", label: "own" },
  { value: "https://evil.example", label: "foreign" },
  { value: "null", label: "foreign" },
  { value: "", label: "foreign" },
  { value: "http://localhost.", label: "foreign" },
  { value: "https://localhost", label: "foreign" },
  { value: "http://localhost:8080", label: "foreign" },
  { value: "http://localhost/", label: "foreign" },
  { value: "http://evil.example@localhost", label: "foreign" },
  { value: "http://localhost\\@evil.example", label: "foreign" },
  { value: "http://localhost, https://evil.example", label: "foreign" },
  { value: "http://xn--lcalhost-8za", label: "foreign" },
  { value: "http://127.0.0.1", label: "foreign" },
];

/** `Sec-Fetch-Site` values: those allowed to use the cookie, and the rest. */
export const FETCH_SITES: readonly Labelled<"allowed" | "refused">[] = [
  { value: undefined, label: "allowed" },
  { value: "same-origin", label: "allowed" },
  { value: "none", label: "allowed" },
  { value: "same-site", label: "refused" },
  { value: "cross-site", label: "refused" },
  { value: "Cross-Site", label: "refused" },
  { value: "cross-site, same-origin", label: "refused" },
  { value: "same-origin, cross-site", label: "refused" },
  { value: "SAME-ORIGIN", label: "refused" },
  { value: "", label: "refused" },
];

/** An `X-CSRF-Token`: absent, the CSRF token of some token of the fixtures, or a near miss. */
export function csrfHeader(f: SessionFixtures): fc.Arbitrary<string | undefined> {
  const tokens = [...f.live.keys(), ...f.revoked, ...f.forged, f.masterKey];
  const exact = fc.constantFrom(...tokens).map(csrfOf);
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 6, arbitrary: exact },
    {
      weight: 2,
      arbitrary: exact.chain((c) =>
        fc.constantFrom(`${c}, ${c}`, c.toUpperCase(), c.slice(0, -1), `${c}=`, Buffer.from(c, "base64url").toString("hex"), `"${c}"`),
      ),
    },
  );
}

/** An `Authorization` header and what the oracle expects of it alone. */
export interface AuthCase {
  readonly value: string | undefined;
  /** The status the header alone decides (it always wins over a cookie). */
  readonly status: 200 | 401 | 403 | undefined;
  /** The session it authenticates as, if it is a session token. */
  readonly sessionId: string;
}

/** `Authorization` headers: mostly none (so the cookie decides), else valid and invalid bearer tokens. */
export function authorizationHeader(f: SessionFixtures): fc.Arbitrary<AuthCase> {
  const live = [...f.live.entries()];
  const cases: AuthCase[] = [
    { value: "", status: 401, sessionId: "" },
    { value: "Basic Zm9vOmJhcg==", status: 401, sessionId: "" },
    { value: `Bearer ${f.masterKey}`, status: 200, sessionId: "" },
    { value: `Bearer ${f.adminKey}`, status: 200, sessionId: "" },
    { value: `Bearer ${f.dataKey}`, status: 403, sessionId: "" },
    ...live.map(([t, id]) => ({ value: `bearer \t${t}`, status: 200 as const, sessionId: id })),
    ...live.map(([t]) => ({ value: `Bearer ${t}x`, status: 401 as const, sessionId: "" })),
    ...f.revoked.map((t) => ({ value: `Bearer ${t}`, status: 401 as const, sessionId: "" })),
    ...f.forged.map((t) => ({ value: `Bearer ${t}`, status: 401 as const, sessionId: "" })),
  ];
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant<AuthCase>({ value: undefined, status: undefined, sessionId: "" }) },
    { weight: 1, arbitrary: fc.constantFrom(...cases) },
  );
}

/** Strings that are not live session tokens: anything printable, and near misses of a live token. */
export function notASessionToken(f: SessionFixtures): fc.Arbitrary<string> {
  const live = [...f.live.keys()];
  const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  // Printable Latin-1 (what a header value may carry), with the odd control character a header allows (tab).
  const unit = fc.oneof(
    { weight: 8, arbitrary: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)) },
    { weight: 1, arbitrary: fc.constantFrom(" ", "\t", "é", "\u00ff", "\u0080") },
  );
  const mutated = fc.tuple(fc.constantFrom(...live), fc.nat(), fc.constantFrom(...base62.split(""))).map(([t, i, c]) => {
    const at = i % t.length;
    return t.slice(0, at) + c + t.slice(at + 1);
  });
  return fc
    .oneof(
      { weight: 2, arbitrary: fc.string({ unit, maxLength: 80 }) },
      { weight: 2, arbitrary: mutated },
      { weight: 1, arbitrary: fc.constantFrom(...live).chain((t) => fc.constantFrom(...valueVariants(t), t.replace("erpls_", "erpl_"), t.replace("erpls_", "ERPLS_"), `${t}${t}`, "erpls_")) },
      { weight: 1, arbitrary: fc.constantFrom(...f.forged, ...f.revoked, f.masterKey, f.adminKey, f.dataKey) },
      { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...base62.split("")), minLength: 49, maxLength: 49 }).map((s) => `erpls_${s}`) },
    )
    .filter((s) => !f.live.has(s) && !f.live.has(s.trim()));
}
