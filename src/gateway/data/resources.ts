/**
 * What the data path shares with the diagnostics (`./diagnostics.ts`):
 * sessions with back ends (OAuth and CSRF tokens), the `$metadata` models
 * and the upstream connection pools, created once per gateway so that an
 * explanation or a catalog reads the very models the data path authorizes
 * with. Their bounds and TTLs are in their own modules.
 */
import type { DataPathMetrics } from "../../metrics/port.js";
import { UpstreamSessions } from "../upstream-session.js";
import { AnalysisCache } from "./analysis-cache.js";
import { ClientCsrfTokens } from "./client-csrf.js";
import { Forwarder } from "./forwarder.js";
import { MetadataCache } from "./metadata-cache.js";

/** Options of {@link createDataResources}. */
export interface DataResourceOptions {
  /** Upstream answer timeout (ms): slower answers get 504. */
  readonly upstreamTimeoutMs: number;
  /** How long a whole upstream answer may take (ms; the forwarder's default when unset). */
  readonly upstreamTotalTimeoutMs?: number | undefined;
  /** Most requests in flight to one instance's back end (the forwarder's default when unset). */
  readonly upstreamConnections?: number | undefined;
  /** How long a service's `$metadata` is cached (ms). */
  readonly metadataTtlMs: number;
  /** Where the caches count lookups and fetches (default: nowhere). */
  readonly metrics?: DataPathMetrics;
  /** Whether analyses of bodiless reads are cached (`./analysis-cache.ts`; default true; false for differential tests). */
  readonly analysisCache?: boolean;
  /**
   * The secret of the CSRF tokens erplink hands data clients (`./client-csrf.ts`):
   * 32 bytes or more, the same in every process; a random one when unset.
   */
  readonly clientCsrfSecret?: Buffer | undefined;
}

/** The data path's shared resources. */
export interface DataResources {
  readonly sessions: UpstreamSessions;
  readonly metadata: MetadataCache;
  /** Analyses of bodiless reads, by model (the data path's; bounded per model); undefined when disabled. */
  readonly analyses: AnalysisCache | undefined;
  readonly forwarder: Forwarder;
  /** erplink's CSRF tokens for data clients. */
  readonly clientCsrf: ClientCsrfTokens;
  /** The upstream timeout they were built with (ms). */
  readonly upstreamTimeoutMs: number;
  /** Closes the connection pools (at shutdown). */
  close(): Promise<void>;
}

/** Creates the data path's shared resources. */
export function createDataResources(options: DataResourceOptions): DataResources {
  const { metrics } = options;
  const sessions = new UpstreamSessions({ timeoutMs: options.upstreamTimeoutMs, metrics });
  const forwarder = new Forwarder({
    timeoutMs: options.upstreamTimeoutMs,
    ...(options.upstreamTotalTimeoutMs !== undefined ? { totalTimeoutMs: options.upstreamTotalTimeoutMs } : {}),
    ...(options.upstreamConnections !== undefined ? { connections: options.upstreamConnections } : {}),
  });
  // $metadata fetches take the instance's connections as its data requests do.
  const metadata = new MetadataCache({
    sessions,
    ttlMs: options.metadataTtlMs,
    timeoutMs: options.upstreamTimeoutMs,
    metrics,
    gate: (instance) => forwarder.gate(instance.id, instance.upstreamConnections),
  });
  return {
    sessions,
    metadata,
    analyses: options.analysisCache === false ? undefined : new AnalysisCache(),
    forwarder,
    clientCsrf: new ClientCsrfTokens(options.clientCsrfSecret),
    upstreamTimeoutMs: options.upstreamTimeoutMs,
    close: () => forwarder.close(),
  };
}
