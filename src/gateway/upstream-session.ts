/**
 * erplink's side of the conversation with a back end, per instance and
 * credential: the `Authorization` header to send (basic, bearer, or an
 * OAuth 2.0 client-credentials token fetched from the instance's token
 * endpoint and cached until shortly before it expires), and the SAP CSRF
 * session (an `X-CSRF-Token` with the session cookies it belongs to) that
 * modifying requests carry.
 *
 * Everything is keyed by the instance id and a fingerprint of its
 * credentials, so changing an instance's `auth` starts new sessions. Fetches
 * are single-flight: a hundred concurrent first requests cause one token
 * request and one CSRF fetch. Secrets and tokens never appear in errors.
 *
 * Choices (RFC 6749 leaves them open, SAP documents them loosely):
 * - Token requests authenticate the client with HTTP Basic
 *   (`client_secret_basic`, RFC 6749 §2.3.1, URL-encoded id and secret), the
 *   method every authorization server must support, and send
 *   `grant_type=client_credentials` (and `scope` when configured).
 * - A token is used until `expires_in` minus a tenth of its lifetime (at most
 *   60 s) has passed; without `expires_in`, for 5 minutes. A token the back
 *   end answers 401 to is dropped at once ({@link UpstreamSessions.dropToken}).
 * - The CSRF token is fetched with `GET <service root>/` and
 *   `X-CSRF-Token: Fetch`; the `Set-Cookie` cookies of that answer are the
 *   session the token belongs to. A session belongs to one API key (the
 *   `principal`): every key of an instance uses the same back-end user, and
 *   state one key's request leaves in a back-end session (SAP soft state, a
 *   draft, a lock) must never be used by another key's request. It costs a
 *   fetch per key and service root, once per session. A back end that returns no token (not SAP)
 *   is remembered as such, so it is asked once; a later `403` with
 *   `X-CSRF-Token: Required` makes the caller drop the session and fetch
 *   again ({@link UpstreamSessions.dropCsrf}).
 */
import { createHash } from "node:crypto";
import type { DataPathMetrics, FetchResult } from "../metrics/port.js";
import { GatewayError } from "./errors.js";

/** Back-end credentials with their secrets, as the instance holds them. */
export interface UpstreamCredentials {
  readonly type: "none" | "basic" | "bearer" | "oauth2_client_credentials";
  readonly username?: string;
  readonly password?: string;
  readonly token?: string;
  readonly tokenUrl?: string;
  readonly clientId?: string;
  readonly clientSecret?: string;
  readonly scope?: string;
}

/** The instance whose back end is called. */
export interface UpstreamTarget {
  readonly id: string;
  readonly credentials: UpstreamCredentials;
}

/** A service root of a back end, as the CSRF session is kept for it. */
export interface CsrfScope {
  /** Identifies the service root (and the instance's query options). */
  readonly key: string;
  /** The absolute URL of a target relative to the root (`""`: the root itself, `<root>/`), the instance's options included. */
  urlOf(forward: string): string;
}

/** A CSRF token with the session cookies it belongs to. */
export interface CsrfSession {
  /** Undefined when the back end gave no token (it does not use them). */
  readonly token: string | undefined;
  /** The `Cookie` header value of the session, or `""`. */
  readonly cookie: string;
}

/** Options of {@link UpstreamSessions}. */
export interface UpstreamSessionOptions {
  /** Timeout of a token request and of a CSRF fetch (ms). */
  readonly timeoutMs: number;
  /** The clock (ms since the epoch); tests move it. */
  readonly now?: () => number;
  /** Where token requests and CSRF fetches are counted (default: nowhere). */
  readonly metrics?: Pick<DataPathMetrics, "tokenFetch">;
}

interface CachedToken {
  readonly header: string;
  readonly refreshAt: number;
}

/** Lifetime assumed for a token whose answer has no `expires_in` (ms). */
const DEFAULT_TOKEN_LIFETIME_MS = 5 * 60_000;
/** Longest token-endpoint answer read (bytes). */
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;
/** Most cached sessions of each kind; beyond it the oldest are forgotten. */
const MAX_ENTRIES = 10_000;

/** Sessions with back ends: OAuth tokens and CSRF tokens, cached per instance and credential. */
export class UpstreamSessions {
  private readonly tokens = new Map<string, CachedToken>();
  private readonly tokenFlights = new Map<string, Promise<CachedToken>>();
  private readonly csrf = new Map<string, CsrfSession>();
  private readonly csrfFlights = new Map<string, Promise<CsrfSession>>();
  private readonly fingerprints = new WeakMap<UpstreamCredentials, string>();
  private readonly staticHeaders = new WeakMap<UpstreamCredentials, string>();
  private readonly now: () => number;

  constructor(private readonly options: UpstreamSessionOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * The `Authorization` header for `target`'s back end, or undefined for
   * `none`. For OAuth 2.0 this may call the token endpoint; it throws a
   * {@link GatewayError} (502, or 504 on timeout) when no token can be had.
   */
  async authorization(target: UpstreamTarget): Promise<string | undefined> {
    const c = target.credentials;
    switch (c.type) {
      case "none":
        return undefined;
      case "basic":
      case "bearer": {
        // Once per credentials object (the data plane keeps it while the instance is cached).
        let header = this.staticHeaders.get(c);
        if (header === undefined) {
          header =
            c.type === "basic"
              ? `Basic ${Buffer.from(`${c.username ?? ""}:${c.password ?? ""}`, "utf8").toString("base64")}`
              : `Bearer ${c.token ?? ""}`;
          this.staticHeaders.set(c, header);
        }
        return header;
      }
      case "oauth2_client_credentials":
        return (await this.token(target)).header;
    }
  }

  /** Forgets the OAuth token sent as `header` (the back end refused it), so the next call fetches another. */
  dropToken(target: UpstreamTarget, header: string | undefined): void {
    const key = this.keyOf(target);
    if (this.tokens.get(key)?.header === header) this.tokens.delete(key);
  }

  /**
   * The CSRF session for modifying requests of `principal` (an API key's id)
   * to the service at `serviceRoot`, fetched once per instance, credential,
   * service and key. Throws a {@link GatewayError} when the back end cannot
   * be reached.
   */
  async csrfSession(target: UpstreamTarget, serviceRoot: CsrfScope, authorization: string | undefined, principal: string): Promise<CsrfSession> {
    const key = `${this.keyOf(target)}|${serviceRoot.key}|${principal}`;
    const hit = this.csrf.get(key);
    if (hit !== undefined) return hit;
    let flight = this.csrfFlights.get(key);
    if (flight === undefined) {
      flight = this.fetchCsrf(serviceRoot.urlOf(""), authorization)
        .then((session) => {
          if (session !== undefined) remember(this.csrf, key, session);
          return session ?? { token: undefined, cookie: "" };
        })
        .finally(() => this.csrfFlights.delete(key));
      this.csrfFlights.set(key, flight);
    }
    return flight;
  }

  /** Forgets `principal`'s CSRF session `session` (the back end asked for a new token). */
  dropCsrf(target: UpstreamTarget, serviceRoot: CsrfScope, session: CsrfSession, principal: string): void {
    const key = `${this.keyOf(target)}|${serviceRoot.key}|${principal}`;
    if (this.csrf.get(key) === session) this.csrf.delete(key);
  }

  /** Counts a token request's or CSRF fetch's result. */
  private counted(kind: "oauth" | "csrf", result: FetchResult): void {
    this.options.metrics?.tokenFetch(kind, result);
  }

  /** Instance id and a digest of the credentials (never the secrets themselves). */
  private keyOf(target: UpstreamTarget): string {
    let fp = this.fingerprints.get(target.credentials);
    if (fp === undefined) {
      fp = createHash("sha256").update(JSON.stringify(target.credentials)).digest("base64url");
      this.fingerprints.set(target.credentials, fp);
    }
    return `${target.id}|${fp}`;
  }

  private async token(target: UpstreamTarget): Promise<CachedToken> {
    const key = this.keyOf(target);
    const hit = this.tokens.get(key);
    if (hit !== undefined && this.now() < hit.refreshAt) return hit;
    let flight = this.tokenFlights.get(key);
    if (flight === undefined) {
      flight = this.fetchToken(target.credentials)
        .then((token) => {
          remember(this.tokens, key, token);
          return token;
        })
        .finally(() => this.tokenFlights.delete(key));
      this.tokenFlights.set(key, flight);
    }
    return flight;
  }

  private async fetchToken(c: UpstreamCredentials): Promise<CachedToken> {
    const form = new URLSearchParams({ grant_type: "client_credentials" });
    if (c.scope) form.set("scope", c.scope);
    const client = `${formEncode(c.clientId ?? "")}:${formEncode(c.clientSecret ?? "")}`;
    const started = this.now();
    let res: Response;
    try {
      res = await fetch(c.tokenUrl ?? "", {
        method: "POST",
        headers: {
          authorization: `Basic ${Buffer.from(client, "utf8").toString("base64")}`,
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
        },
        body: form.toString(),
        redirect: "manual",
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (err) {
      this.counted("oauth", failure(err));
      throw unreachable(err, "the back end's token endpoint");
    }
    let body: unknown;
    try {
      const text = await readLimited(res, MAX_TOKEN_RESPONSE_BYTES);
      body = text === undefined ? undefined : JSON.parse(text);
    } catch (err) {
      if (isTimeout(err)) {
        this.counted("oauth", "timeout");
        throw unreachable(err, "the back end's token endpoint");
      }
      body = undefined;
    }
    // Every answer below that is not a token is a refusal.
    const refused = (message: string): GatewayError => {
      this.counted("oauth", "refused");
      return new GatewayError(502, message);
    };
    if (!res.ok) {
      // The error code helps (`invalid_client`); anything else the endpoint says is not repeated,
      // and a code holding the client secret (an endpoint echoing it) is not either.
      const code = isRecord(body) && typeof body.error === "string" && isOAuthErrorCode(body.error, c) ? ` (${body.error})` : "";
      throw refused(`the back end's token endpoint refused the client credentials: HTTP ${res.status}${code}`);
    }
    if (!isRecord(body) || typeof body.access_token !== "string" || body.access_token === "" || /[\s\x00-\x1f\x7f]/.test(body.access_token)) {
      throw refused("the back end's token endpoint did not answer with an access token");
    }
    const type = body.token_type;
    if (type !== undefined && (typeof type !== "string" || type.toLowerCase() !== "bearer")) {
      throw refused("the back end's token endpoint answered with a token type other than Bearer");
    }
    this.counted("oauth", "ok");
    const seconds = typeof body.expires_in === "string" ? Number(body.expires_in) : body.expires_in;
    const lifetime =
      typeof seconds === "number" && Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_TOKEN_LIFETIME_MS;
    return { header: `Bearer ${body.access_token}`, refreshAt: started + lifetime - Math.min(60_000, lifetime / 10) };
  }

  /** The back end's CSRF token and session, or undefined when it could not say (not cached then). */
  private async fetchCsrf(url: string, authorization: string | undefined): Promise<CsrfSession | undefined> {
    const headers: Record<string, string> = { "x-csrf-token": "Fetch", accept: "application/json" };
    if (authorization !== undefined) headers.authorization = authorization;
    let res: Response;
    try {
      res = await fetch(url, {
        headers,
        redirect: "manual",
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      await res.body?.cancel();
    } catch (err) {
      this.counted("csrf", failure(err));
      throw unreachable(err, "the back end");
    }
    // A refusal (say 401) is left to the request itself, which will meet it too.
    if (!res.ok) {
      this.counted("csrf", "refused");
      return undefined;
    }
    const token = res.headers.get("x-csrf-token") ?? undefined;
    if (token === undefined || token.toLowerCase() === "required" || /[\x00-\x1f\x7f]/.test(token)) {
      this.counted("csrf", "none");
      return { token: undefined, cookie: "" };
    }
    this.counted("csrf", "ok");
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(";")[0]!.trim())
      .filter((c) => c.includes("=") && !/[\x00-\x1f\x7f]/.test(c))
      .join("; ");
    return { token, cookie };
  }
}

/** How a fetch that threw counts: timed out, or could not reach the back end. */
function failure(err: unknown): FetchResult {
  return isTimeout(err) ? "timeout" : "unreachable";
}

/** Whether an upstream answer asks for a (new) CSRF token. */
export function csrfRequired(status: number, headers: Readonly<Record<string, unknown>>): boolean {
  const v = headers["x-csrf-token"];
  return status === 403 && typeof v === "string" && v.trim().toLowerCase() === "required";
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= MAX_ENTRIES && !map.has(key)) map.delete(map.keys().next().value!);
  map.set(key, value);
}

/** `application/x-www-form-urlencoded` encoding of a client id or secret (RFC 6749 §2.3.1, Appendix B). */
function formEncode(s: string): string {
  return encodeURIComponent(s).replace(/%20/g, "+").replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * Whether an OAuth error value is an error code as RFC 6749 §5.2 registers
 * them (`invalid_client`, `unauthorized_client`: lower case, digits, `_`,
 * `.`, `-`) that does not hold the client secret.
 */
function isOAuthErrorCode(error: string, c: UpstreamCredentials): boolean {
  const secret = c.clientSecret?.toLowerCase() ?? "";
  return /^[a-z][a-z0-9_.-]{0,63}$/.test(error) && (secret === "" || !error.includes(secret));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Whether a `fetch` failed because its `AbortSignal.timeout` fired. */
export function isTimeout(err: unknown): boolean {
  return err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError");
}

function unreachable(err: unknown, what: string): GatewayError {
  return isTimeout(err)
    ? new GatewayError(504, `${what} did not answer in time`)
    : new GatewayError(502, `${what} could not be reached`);
}

/** The body as text, or undefined when it is larger than `limit` bytes. */
async function readLimited(res: Response, limit: number): Promise<string | undefined> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > limit) {
    await res.body?.cancel();
    return undefined;
  }
  const reader = res.body?.getReader();
  if (reader === undefined) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
