/**
 * The port through which the services reach the data path's diagnostics:
 * explaining a request for a key (ApiKeyService.ExplainApiKey), a service's
 * catalog from its `$metadata` (InstanceService.GetServiceCatalog) and the
 * connection test (InstanceService.TestInstanceConnection). The gateway
 * implements it (`src/gateway/data/diagnostics.ts`) over the data path's own
 * stages and caches; the composition root binds it into the services late,
 * since the services are built before the gateway. Types only, plus the
 * error metadata by which the services mark a bad gateway. Shared by both
 * layers, owned by neither.
 */
import type { ConnectionTest, Explanation, ServiceCatalog } from "../gen/erplink/admin/v1/diagnostics_pb.js";

/** Back-end credentials with their secrets opened (never returned by any diagnostic). */
export interface DiagnosedCredentials {
  readonly type: "none" | "basic" | "bearer" | "oauth2_client_credentials";
  readonly username?: string;
  readonly password?: string;
  readonly token?: string;
  readonly tokenUrl?: string;
  readonly clientId?: string;
  readonly clientSecret?: string;
  readonly scope?: string;
}

/** An instance as the diagnostics reach its back end. */
export interface DiagnosedInstance {
  readonly id: string;
  readonly name: string;
  /** The back end's OData root, without a trailing `/`. */
  readonly baseUrl: string;
  /** Path of a service under `baseUrl` (its name unless the instance maps it). */
  servicePath(service: string): string;
  readonly credentials: DiagnosedCredentials;
  /** The SAP client selected on every upstream request, if any. */
  readonly sapClient?: string | undefined;
}

/** A request to explain, as ApiKeyService.ExplainApiKey received it (validated for presence). */
export interface ExplainInput<K> {
  /**
   * The key, as the services hold it (the data port's key type); when a
   * draft of its permissions is explained, the same key holding the draft.
   */
  readonly key: K;
  readonly instance: string;
  /** "" when `url` names the service. */
  readonly service: string;
  /** Upper case. */
  readonly method: string;
  readonly url: string;
  /** Names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  /** "" for none. */
  readonly body: string;
  /** Whether the key's rate limits allow one more request now (looked at, not counted, by the services). */
  readonly withinRateLimits: boolean;
}

/**
 * The diagnostics. Each method throws only ConnectErrors: `invalid_argument`
 * for a request it cannot read, `unavailable` (with {@link BAD_GATEWAY_METADATA},
 * HTTP 502) or `deadline_exceeded` (HTTP 504) when the back end fails the catalog.
 */
export interface DiagnosticsPort<K> {
  /** What the data path would decide for the request (the rate-limit fields are the services' to fill). */
  explain(input: ExplainInput<K>): Promise<Explanation>;
  /** The entity sets and operations of `service`, from its (cached) `$metadata`. */
  catalog(instance: DiagnosedInstance, service: string): Promise<ServiceCatalog>;
  /** The connection test; `service` "" for the base URL only. Never throws for a failing back end. */
  testConnection(instance: DiagnosedInstance, service: string): Promise<ConnectionTest>;
}

/**
 * Where the services find the diagnostics: empty until the composition root
 * binds the gateway's (services built without a gateway answer `unavailable`).
 */
export interface DiagnosticsSlot<K> {
  port: DiagnosticsPort<K> | undefined;
}

/**
 * Error metadata on an `unavailable` error meaning "the back end failed"
 * (a bad gateway), which the REST facade answers as 502 `BAD_GATEWAY`
 * rather than 503; gRPC callers see `unavailable`, as gRPC maps HTTP 502.
 */
export const BAD_GATEWAY_METADATA = "erplink-bad-gateway";
