/**
 * Authentication of administrators: who is calling, from the bearer token.
 * One authenticator serves every protocol: the Connect interceptor below runs
 * it for gRPC, gRPC-Web and Connect callers and for the REST gateway's
 * in-process calls alike. API keys (admin and data) plug in here.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";

/** An authenticated caller. */
export type Principal = { readonly kind: "master" };

/** Decides who a bearer token belongs to. */
export interface Authenticator {
  /**
   * Resolves the caller of an `Authorization` header value, or throws
   * `unauthenticated` (missing, malformed or unknown token). Has no side
   * effects, so it may run more than once per request.
   */
  authenticate(authorization: string | null | undefined): Promise<Principal>;
}

/** Options of {@link createAuthenticator}. */
export interface AuthenticatorOptions {
  /** The master key; compared in constant time. */
  readonly masterKey: string;
}

/** The token of an `Authorization: Bearer <token>` header, if it is one. */
export function bearerToken(authorization: string | null | undefined): string | undefined {
  if (!authorization) return undefined;
  const m = /^Bearer[ \t]+([!-~]+)[ \t]*$/i.exec(authorization);
  return m?.[1];
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}

/** Creates the authenticator: the master key is, for now, the only credential. */
export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  // Comparing fixed-length digests keeps the comparison constant-time
  // whatever the length of the presented token.
  const masterDigest = digest(options.masterKey);
  return {
    async authenticate(authorization) {
      const token = bearerToken(authorization);
      if (token === undefined) {
        throw new ConnectError("missing bearer token: send Authorization: Bearer <token>", Code.Unauthenticated);
      }
      if (timingSafeEqual(digest(token), masterDigest)) return { kind: "master" };
      throw new ConnectError("invalid bearer token", Code.Unauthenticated);
    },
  };
}

/** The authenticated caller of the current call, set by the auth interceptor. */
export const kPrincipal = createContextKey<Principal | undefined>(undefined, { description: "erplink principal" });

/**
 * A server-side interceptor that authenticates every call from its
 * `authorization` header and stores the caller under {@link kPrincipal}.
 */
export function createAuthInterceptor(authenticator: Authenticator): Interceptor {
  return (next) => async (req) => {
    const principal = await authenticator.authenticate(req.header.get("authorization"));
    req.contextValues.set(kPrincipal, principal);
    return next(req);
  };
}
