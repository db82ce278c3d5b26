/**
 * Authentication and admission of administrators: who is calling, from the
 * bearer token, and whether their admin rate limit lets the call through.
 * One gate serves every protocol: the Connect interceptor below runs it for
 * gRPC, gRPC-Web and Connect callers, and the REST gateway runs it before it
 * reads a request body.
 */
import { hash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { PRINCIPAL_METADATA, kCallFacts, type CallFacts } from "../schema/call-facts.js";
import { hashApiKey, isWellFormedApiKey } from "./api-key-secret.js";
import { translate } from "./errors.js";
import { isExpired, type KeyRegistry } from "./key-registry.js";
import { rateLimitHeaders, type Limits, type RateLimiter } from "./rate-limiter.js";
import type { SessionPolicy } from "./context.js";
import type { SessionRegistry } from "./session-registry.js";
import { isWellFormedSessionToken } from "../schema/session-token.js";
import type { UsageRecorder } from "./usage.js";

/**
 * An authenticated administrator: the master key or an admin key, and the
 * dashboard session (`ses_…`) it came through, if it came through one.
 */
export type Principal =
  | { readonly kind: "master"; readonly sessionId?: string | undefined }
  | { readonly kind: "admin_key"; readonly keyId: string; readonly sessionId?: string | undefined };

/**
 * Metadata of an admission error naming the recognised caller (`master` or
 * a key id), for the request log: the gateway reads it and does not pass it on.
 */
export const PRINCIPAL_HEADER = PRINCIPAL_METADATA;

/** How logs name a principal: `master` or the key id. */
export function principalId(principal: Principal): string {
  return principal.kind === "master" ? "master" : principal.keyId;
}

/** Decides who a bearer token belongs to. */
export interface Authenticator {
  /**
   * Resolves the administrator of an `Authorization` header value. Throws
   * `unauthenticated` for a missing, malformed, unknown, revoked or expired
   * token, and `permission_denied` for a data key. Counts nothing.
   */
  authenticate(authorization: string | null | undefined): Promise<Principal>;
}

/** Options of {@link createAuthenticator}. */
export interface AuthenticatorOptions {
  /** The master key; compared in constant time. */
  readonly masterKey: string;
  /** Where API keys are looked up; without it only the master key works. */
  readonly keys?: KeyRegistry;
  readonly usage?: UsageRecorder;
  /** Where sessions are looked up; without it session tokens are not accepted. */
  readonly sessions?: SessionRegistry;
  readonly sessionPolicy?: SessionPolicy;
  readonly clock?: () => Date;
}

/** The token of an `Authorization: Bearer <token>` header, if it is one. */
export function bearerToken(authorization: string | null | undefined): string | undefined {
  if (!authorization) return undefined;
  const m = /^Bearer[ \t]+([!-~]+)[ \t]*$/i.exec(authorization);
  return m?.[1];
}

function digest(s: string): Buffer {
  // One-shot (no Hash object): runs for every request that presents a token.
  return hash("sha256", s, "buffer");
}

/** A constant-time test of whether a token is the master key. */
export function masterKeyMatcher(masterKey: string): (token: string) => boolean {
  const masterDigest = digest(masterKey);
  return (token) => timingSafeEqual(digest(token), masterDigest);
}

/** Creates the authenticator of administrators: the master key and admin API keys. */
export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  // Comparing fixed-length digests keeps the comparison constant-time
  // whatever the length of the presented token. API keys are found by the
  // SHA-256 of the secret, which an attacker cannot steer.
  const isMaster = masterKeyMatcher(options.masterKey);
  const clock = options.clock ?? (() => new Date());
  /**
   * A session's principal: the session must be known, within its absolute
   * and idle expiry, and its principal alive (the admin key active and
   * unexpired, or the master key unchanged). Each use moves the idle expiry.
   */
  const authenticateSession = async (token: string, sessions: SessionRegistry, policy: SessionPolicy): Promise<Principal> => {
    let session = await sessions.lookup(token);
    if (session === undefined) throw new ConnectError("invalid session token: it was revoked, has expired or never existed", Code.Unauthenticated);
    const now = clock().getTime();
    if (session.expiresAt.getTime() <= now) throw new ConnectError("session expired: sign in again", Code.Unauthenticated);
    if (sessions.lastUse(session).getTime() + policy.idleMs <= now) {
      // Another process may have kept it alive: ask the store before refusing.
      session = await sessions.lookup(token, true);
      if (session === undefined) throw new ConnectError("invalid session token: it was revoked, has expired or never existed", Code.Unauthenticated);
      if (sessions.lastUse(session).getTime() + policy.idleMs <= now) {
        throw new ConnectError(`session expired after ${Math.round(policy.idleMs / 60_000)} minutes without use: sign in again`, Code.Unauthenticated);
      }
    }
    if (session.actsFor === "master") {
      if (session.principalHash !== policy.masterFingerprint) {
        throw new ConnectError("session ended: the master key has changed; sign in again", Code.Unauthenticated);
      }
      sessions.touch(session);
      return { kind: "master", sessionId: session.id };
    }
    const key = options.keys ? await options.keys.lookupHash(session.principalHash) : undefined;
    if (key === undefined || key.id !== session.actsFor || key.type !== "admin") {
      throw new ConnectError("session ended: its admin key was revoked", Code.Unauthenticated);
    }
    if (isExpired(key, new Date(now))) throw new ConnectError("session ended: its admin key expired", Code.Unauthenticated);
    sessions.touch(session);
    options.usage?.touch(key.id);
    return { kind: "admin_key", keyId: key.id, sessionId: session.id };
  };
  return {
    async authenticate(authorization) {
      const token = bearerToken(authorization);
      if (token === undefined) {
        throw new ConnectError("missing bearer token: send Authorization: Bearer <token>", Code.Unauthenticated);
      }
      if (isMaster(token)) return { kind: "master" };
      if (options.sessions && options.sessionPolicy && isWellFormedSessionToken(token)) {
        return authenticateSession(token, options.sessions, options.sessionPolicy);
      }
      if (options.keys && isWellFormedApiKey(token)) {
        const hash = hashApiKey(token);
        const key = await options.keys.lookupHash(hash);
        if (key === undefined) {
          // A revoked key's secret: refused like any unknown token, and logged as that key.
          const revokedId = options.keys.revokedId(hash);
          if (revokedId !== undefined) throw new ConnectError("invalid bearer token", Code.Unauthenticated, { [PRINCIPAL_HEADER]: revokedId });
        } else {
          if (isExpired(key, clock())) {
            throw new ConnectError("API key expired", Code.Unauthenticated);
          }
          if (key.type !== "admin") {
            throw new ConnectError("API key is not an admin key", Code.PermissionDenied, { [PRINCIPAL_HEADER]: key.id });
          }
          options.usage?.touch(key.id);
          return { kind: "admin_key", keyId: key.id };
        }
      }
      throw new ConnectError("invalid bearer token", Code.Unauthenticated);
    },
  };
}

/** An admitted administrator and the rate-limit headers of the call. */
export interface Admission {
  readonly principal: Principal;
  /** Rate-limit response headers (empty when the call was not counted). */
  readonly headers: Readonly<Record<string, string>>;
}

/** Authenticates administrators and counts their calls against their budget. */
export interface AdminGate {
  /**
   * Authenticates; with `count`, also takes one call from the caller's admin
   * budget and throws `resource_exhausted` (with the headers, `Retry-After`
   * among them, in the error's metadata) when it is spent.
   */
  admit(authorization: string | null | undefined, options: { readonly count: boolean }): Promise<Admission>;
}

/** Options of {@link createAdminGate}. */
export interface AdminGateOptions {
  readonly authenticator: Authenticator;
  readonly limiter: RateLimiter;
  /** The budget of each admin token (the master key and every admin key, separately) presented as a bearer token. */
  readonly limits: Limits;
  /**
   * The budget of each session, counted apart from its key's: a script's
   * burst with a key does not lock that key's dashboard sessions out, and a
   * session's page loads do not spend the key's budget.
   */
  readonly sessionLimits: Limits;
  readonly clock: () => Date;
}

/** The rate-limit subject a principal's calls count on, and its limits: its session's, else its token's. */
export function budgetOf(principal: Principal, options: Pick<AdminGateOptions, "limits" | "sessionLimits">): { readonly subject: string; readonly limits: Limits } {
  if (principal.sessionId !== undefined) return { subject: `admin-session:${principal.sessionId}`, limits: options.sessionLimits };
  return { subject: principal.kind === "master" ? "admin:master" : `admin:${principal.keyId}`, limits: options.limits };
}

/** Creates the admin gate. */
export function createAdminGate(options: AdminGateOptions): AdminGate {
  const admit = async (authorization: string | null | undefined, count: boolean): Promise<Admission> => {
    const principal = await options.authenticator.authenticate(authorization);
    if (!count) return { principal, headers: {} };
    const { subject, limits } = budgetOf(principal, options);
    const result = await options.limiter.consume(subject, limits);
    const headers = rateLimitHeaders(result, options.clock());
    if (!result.allowed) {
      // Which budget is spent, in words: a session's own, or its token's.
      const which = principal.sessionId !== undefined ? "session" : "admin";
      throw new ConnectError(
        `${which} rate limit exceeded; retry in ${result.retryAfterSeconds} s`,
        Code.ResourceExhausted,
        { ...headers, [PRINCIPAL_HEADER]: principalId(principal) },
      );
    }
    return { principal, headers };
  };
  return {
    // Store failures (a cold key lookup, the rate-limit windows) become
    // `unavailable`, as in any service call.
    admit: (authorization, { count }) => translate({ singular: "API key" }, () => admit(authorization, count)),
  };
}

/** The authenticated caller of the current call, set by the admin interceptor. */
export const kPrincipal = createContextKey<Principal | undefined>(undefined, { description: "erplink principal" });

/** Options of {@link createAdminInterceptor}. */
export interface AdminInterceptorOptions {
  /** Count calls against admin budgets (the public server), or only authenticate (in process). */
  readonly count: boolean;
  /** Services whose callers need no admin credential (their requests carry their own). */
  readonly publicServices: ReadonlySet<string>;
}

/** What an interceptor calls on, and the request it passes. */
type Next = Parameters<Interceptor>[0];
type InterceptedRequest = Parameters<Next>[0];

/**
 * A server-side interceptor that admits every call to an admin service from
 * its `authorization` header, stores the caller under {@link kPrincipal} and
 * returns the rate-limit headers with the response (or the error).
 */
export function createAdminInterceptor(gate: AdminGate, options: AdminInterceptorOptions): Interceptor {
  // A call of a public service is passed on as it is (no async frame of ours on Authorize's path).
  return (next) => (req) => (options.publicServices.has(req.service.typeName) ? next(req) : admitted(next, req));
  async function admitted(next: Next, req: InterceptedRequest) {
    const admission = await gate.admit(req.header.get("authorization"), { count: options.count });
    req.contextValues.set(kPrincipal, admission.principal);
    try {
      const res = await next(req);
      for (const [name, value] of Object.entries(admission.headers)) res.header.set(name, value);
      return res;
    } catch (err) {
      const ce = ConnectError.from(err);
      for (const [name, value] of Object.entries(admission.headers)) ce.metadata.set(name, value);
      throw ce;
    }
  }
}

/**
 * A server-side interceptor (outermost) that reports each call's caller and
 * outcome to the gateway through {@link kCallFacts}, for the request log.
 */
export function createCallFactsInterceptor(): Interceptor {
  // A call without facts (the calls the gateway does not log: Authorize, Check) is passed on as it is.
  return (next) => (req) => {
    const facts = req.contextValues.get(kCallFacts);
    return facts === undefined ? next(req) : reported(next, req, facts);
  };
  async function reported(next: Next, req: InterceptedRequest, facts: CallFacts) {
    try {
      return await next(req);
    } catch (err) {
      const ce = ConnectError.from(err);
      facts.code = ce.code;
      facts.message = ce.rawMessage;
      facts.principalId ||= ce.metadata.get(PRINCIPAL_HEADER) ?? "";
      throw ce;
    } finally {
      const principal = req.contextValues.get(kPrincipal);
      if (principal !== undefined) {
        facts.principalId = principalId(principal);
        if (principal.sessionId !== undefined) facts.sessionId = principal.sessionId;
      }
    }
  }
}
