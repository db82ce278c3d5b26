/**
 * What the OData gateway needs from the services for a data request, on
 * the hot path: the data key (from the key registry), the instance (cached
 * by name), the permission decision (the same pure evaluator as Authorize),
 * the key's rate limit, and the instance's back-end credentials (opened
 * once and cached). The gateway receives it as a port from the composition
 * root; nothing here is reachable over the network.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { InstanceRecord } from "../store/index.js";
import { hashApiKey, isWellFormedApiKey } from "./api-key-secret.js";
import { PRINCIPAL_METADATA } from "../schema/call-facts.js";
import { bearerToken } from "./auth.js";
import { openBackendAuth, type BackendCredentials } from "./backend-auth.js";
import type { ServiceDeps } from "./context.js";
import { dataKeyLimits, isExpired } from "./key-registry.js";
import { toConnectError } from "./errors.js";
import { evaluate, type Decision, type Operation } from "./permissions.js";
import { rateLimitHeaders, type RateLimitResult } from "./rate-limiter.js";
import type { SecretBox } from "./secret-box.js";
import type { ApiKeyRecord } from "../store/index.js";

/** An instance as the gateway reaches it. */
export interface UpstreamInstance {
  readonly id: string;
  readonly name: string;
  /** The back end's OData root, without a trailing `/`. */
  readonly baseUrl: string;
  /** Path of a service under `baseUrl` (its name unless the instance maps it); a function property, callable unbound. */
  readonly servicePath: (service: string) => string;
  /** The back-end credentials, secrets opened. */
  readonly credentials: BackendCredentials;
  /**
   * The SAP client (three digits) to select on every upstream request, or
   * undefined for none (the back end's default). Only the instance sets it,
   * never the client of erplink.
   */
  readonly sapClient: string | undefined;
  /** Most requests in flight to the back end, or undefined for the process default. */
  readonly upstreamConnections: number | undefined;
}

/** An instance record as the gateway reaches it, its credentials opened. */
export function upstreamInstance(rec: InstanceRecord, secrets: SecretBox): UpstreamInstance {
  const services = rec.services;
  return {
    id: rec.id,
    name: rec.name,
    baseUrl: rec.baseUrl.replace(/\/+$/, ""),
    servicePath: (service) => (Object.hasOwn(services, service) ? services[service]!.path : service),
    credentials: rec.auth ? openBackendAuth(rec.auth, rec.id, secrets) : { type: "none" },
    sapClient: rec.sapClient,
    upstreamConnections: rec.upstreamConnections,
  };
}

/** The data plane's decisions and lookups. */
export class DataPlane {
  private readonly instances = new Map<string, { at: number; value: UpstreamInstance | undefined }>();
  /** Store reads in flight by name; a change meanwhile marks them stale, and they are not kept. */
  private readonly loading = new Map<string, { promise: Promise<UpstreamInstance | undefined>; stale: boolean }>();

  constructor(
    private readonly deps: ServiceDeps,
    /** Whether a token is the master key (compared in constant time). */
    private readonly isMasterKey: (token: string) => boolean,
  ) {
    deps.instanceChanges.listen((name) => {
      this.instances.delete(name);
      const load = this.loading.get(name);
      if (load !== undefined) load.stale = true;
    });
  }

  /**
   * The data key of an `Authorization` header. Throws `unauthenticated`
   * (missing, malformed, unknown, revoked, expired) or `permission_denied`
   * (an admin key or the master key: data access needs a data key).
   */
  async authenticate(authorization: string | undefined): Promise<ApiKeyRecord> {
    const token = bearerToken(authorization);
    if (token === undefined) {
      throw new ConnectError("missing bearer token: send Authorization: Bearer <data key>", Code.Unauthenticated);
    }
    // A key this process holds is found by the SHA-256 of the token, which
    // a caller cannot steer, and needs no other test: the master key is never
    // a key's secret (the configuration refuses one shaped like a key). Only
    // a miss pays for the master-key comparison and the checksum (bench/README.md).
    const hash = hashApiKey(token);
    let key = this.deps.keys.cached(hash);
    if (key === undefined) {
      if (this.isMasterKey(token)) {
        throw new ConnectError("the master key cannot access data: use a data key", Code.PermissionDenied);
      }
      try {
        key = isWellFormedApiKey(token) ? await this.deps.keys.lookupHash(hash) : undefined;
      } catch (err) {
        throw toConnectError(err, { singular: "API key" });
      }
    }
    if (key === undefined) {
      // A revoked key's secret is refused like any unknown token; its id only names the refusal in the log.
      const revokedId = this.deps.keys.revokedId(hash);
      throw new ConnectError("invalid bearer token", Code.Unauthenticated, revokedId === undefined ? undefined : { [PRINCIPAL_METADATA]: revokedId });
    }
    this.checkKey(key);
    this.deps.usage.touch(key.id);
    return key;
  }

  /**
   * Throws what {@link authenticate} throws for a key it found: `unauthenticated`
   * when it has expired, `permission_denied` when it is not a data key.
   * Counts no use (explanations name keys by id).
   */
  checkKey(key: ApiKeyRecord): void {
    if (isExpired(key, this.deps.clock())) {
      throw new ConnectError("API key expired", Code.Unauthenticated);
    }
    if (key.type !== "data") {
      throw new ConnectError("API key is not a data key: data access needs a data key", Code.PermissionDenied);
    }
  }

  /**
   * The instance named `name`, or undefined. Served from memory for the
   * key-sync interval: a change made in this process is in force at once
   * (the instance service tells this cache), one made by another process
   * within the interval. Concurrent misses share one store read.
   */
  async instance(name: string): Promise<UpstreamInstance | undefined> {
    const now = this.deps.clock().getTime();
    const hit = this.instances.get(name);
    if (hit !== undefined && now - hit.at < this.deps.instanceTtlMs) return hit.value;
    const inFlight = this.loading.get(name);
    if (inFlight !== undefined && !inFlight.stale) return inFlight.promise;
    const load = {
      stale: false,
      promise: this.deps.store.instances.getByName(name).then(
        (rec: InstanceRecord | undefined) => {
          if (this.loading.get(name) === load) this.loading.delete(name);
          const value = rec === undefined ? undefined : upstreamInstance(rec, this.deps.secrets);
          // A change while the read was in flight: this read may predate it, so it is not kept.
          if (!load.stale) {
            if (this.instances.size > 10_000) this.instances.clear();
            this.instances.set(name, { at: now, value });
          }
          return value;
        },
        (err: unknown) => {
          if (this.loading.get(name) === load) this.loading.delete(name);
          throw toConnectError(err, { singular: "instance" });
        },
      ),
    };
    this.loading.set(name, load);
    return load.promise;
  }

  /** Whether the key may see the service at all (for `$metadata` and the service document). */
  serviceDecision(key: ApiKeyRecord, instance: string, service: string): Decision {
    // The entity step is not asked: any entity under the service will do.
    const decision = evaluate(key.permissions, { instance, service, entity: "*", operation: "list" });
    return decision.allowed || decision.step === "entity" || decision.step === "operation"
      ? { allowed: true }
      : decision;
  }

  /** The decision on one access. */
  decide(key: ApiKeyRecord, access: { instance: string; service: string; entity: string; operation: Operation }): Decision {
    return evaluate(key.permissions, access);
  }

  /** Counts one request against the key's limits (or the defaults); whether it may pass, and the headers. */
  async admit(key: ApiKeyRecord): Promise<{ allowed: boolean; headers: Record<string, string> }> {
    let result: RateLimitResult;
    try {
      result = await this.deps.limiter.consume(`data:${key.id}`, dataKeyLimits(key, this.deps.dataLimits));
    } catch (err) {
      throw toConnectError(err, { singular: "API key" });
    }
    return { allowed: result.allowed, headers: rateLimitHeaders(result, this.deps.clock()) };
  }
}
