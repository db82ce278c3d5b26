/**
 * The store: every aggregate's port over one backend, chosen by configuration.
 */
import type { StoreMetrics } from "../metrics/port.js";
import { openApiKeyStore, type ApiKeyStore } from "./api-keys.js";
import { openAuditStore, type AuditStore } from "./audit-entries.js";
import type { StoreBackend } from "./collection.js";
import { createEmbeddedBackend, type StoreLog } from "./embedded.js";
import { openInstanceStore, type InstanceStore } from "./instances.js";
import { instrumentBackend, instrumentRequestLog } from "./instrumented.js";
import { createMongoBackend } from "./mongodb.js";
import { openRateWindowStore, type RateWindowStore } from "./rate-windows.js";
import { openMemoryRequestLog } from "./memory-request-log.js";
import { openRequestLogWorker } from "./request-log-worker.js";
import { openRequestLogStore, type RequestLogPort } from "./request-logs.js";
import { openSessionStore, type SessionStore } from "./sessions.js";
import { openSystemStore, type SystemStore } from "./systems.js";
import { openUsageRollupStore, type UsageRollupStore } from "./usage-rollups.js";

export { DuplicateKeyError, NotFoundError, RevisionMismatchError, StoreUnavailableError } from "./errors.js";
export type { StoreLog } from "./embedded.js";
export type { Page, PageRequest, Patch } from "./aggregate.js";
export type { SystemRecord, SystemStore } from "./systems.js";
export type { InstanceRecord, InstanceStore, StoredBackendAuth } from "./instances.js";
export type { ApiKeyRecord, ApiKeyStore, StoredOperation, StoredPermissions } from "./api-keys.js";
export type { Lease, RateWindowStore } from "./rate-windows.js";
export type { LogQuery, RequestLogPort, RequestLogRecord, RequestLogStore } from "./request-logs.js";
export type { MemoryRequestLog, MemoryRequestLogStats } from "./memory-request-log.js";
export type { AuditChangeRecord, AuditJson, AuditQuery, AuditRecord, AuditState, AuditStore } from "./audit-entries.js";
export type { SessionRecord, SessionStore } from "./sessions.js";
export type {
  Counters,
  GroupCounts,
  RollupBatch,
  RollupDelta,
  StoredHourGroups,
  StoredRollup,
  UsageRollupStore,
} from "./usage-rollups.js";

/** Every aggregate's storage port, plus the backend's health and lifecycle. */
export interface Store {
  readonly kind: StoreBackend["kind"];
  readonly systems: SystemStore;
  readonly instances: InstanceStore;
  readonly apiKeys: ApiKeyStore;
  readonly rateWindows: RateWindowStore;
  /** The request log: a capped log in memory (and a file) on the embedded store, a collection on MongoDB. */
  readonly logs: RequestLogPort;
  /** The audit trail of administrative changes. */
  readonly audit: AuditStore;
  readonly sessions: SessionStore;
  /** Counts of data requests per hour and day, kept by the request-log writer. */
  readonly usageRollups: UsageRollupStore;
  /** Resolves when the database answers; throws StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Which backend to open. */
export type StoreOptions =
  | {
      readonly kind: "embedded";
      readonly dataDir: string;
      /** Most request-log entries kept (default: DEFAULT_MAX_ENTRIES of ./memory-request-log.ts; `Infinity`: no cap). */
      readonly logMaxEntries?: number;
      /** Where the request log's file problems are reported (see MemoryRequestLogOptions.onProblem). */
      readonly onProblem?: (fields: Record<string, unknown>, message: string) => void;
      /** The request log in a worker thread of its own (./request-log-worker.ts); not for a `:memory:` store. Default: off. */
      readonly logThread?: boolean;
      /** Where the collections' files report a tail cut at open, a write the disk refused, a rewrite that failed. */
      readonly log?: StoreLog;
    }
  | { readonly kind: "mongodb"; readonly url: string; readonly serverSelectionTimeoutMs: number };

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /** Embedded: most request-log entries kept (default: DEFAULT_MAX_ENTRIES of ./memory-request-log.ts; `Infinity`: no cap). */
  readonly logMaxEntries?: number;
  /** Embedded: where the request log's file problems are reported. */
  readonly onProblem?: (fields: Record<string, unknown>, message: string) => void;
  /** Embedded: the request log in a worker thread of its own (./request-log-worker.ts); a `:memory:` store keeps it in this thread. */
  readonly logThread?: boolean;
  /** Embedded: the request log (not a collection) reports its operations here, as the instrumented collections do. */
  readonly metrics?: StoreMetrics | undefined;
}

/**
 * The request log on a backend: on the embedded store a capped log of its
 * own (in memory, persisted to a file in the data directory: nedb would
 * copy, index and keep every entry at a cost the data path pays), on
 * MongoDB a collection.
 */
function openLogs(backend: StoreBackend, options: OpenStoreOptions): Promise<RequestLogPort & { close?(): Promise<void> }> {
  if (backend.kind !== "embedded") return openRequestLogStore(backend);
  const logOptions = { dataDir: backend.dataDir, maxEntries: options.logMaxEntries, onProblem: options.onProblem };
  // In memory only (no data directory), a worker started again after a failure would have lost the log: kept in this thread.
  const dir = backend.dataDir;
  const opened: Promise<RequestLogPort & { close?(): Promise<void> }> =
    options.logThread === true && dir !== undefined && dir !== ":memory:" ? openRequestLogWorker({ ...logOptions, dataDir: dir }) : openMemoryRequestLog(logOptions);
  return opened.then((log) => (options.metrics === undefined ? log : instrumentRequestLog(log, options.metrics)));
}

/** Opens every aggregate on a backend. */
export async function openStore(backend: StoreBackend, options: OpenStoreOptions = {}): Promise<Store> {
  const [systems, instances, apiKeys, rateWindows, logs, sessions, audit, usageRollups] = await Promise.all([
    openSystemStore(backend),
    openInstanceStore(backend),
    openApiKeyStore(backend),
    openRateWindowStore(backend),
    openLogs(backend, options),
    openSessionStore(backend),
    openAuditStore(backend),
    openUsageRollupStore(backend),
  ]);
  return {
    kind: backend.kind,
    systems,
    instances,
    apiKeys,
    rateWindows,
    logs,
    audit,
    sessions,
    usageRollups,
    ping: () => backend.ping(),
    async close() {
      try {
        await logs.close?.();
      } finally {
        await backend.close();
      }
    },
  };
}

/**
 * Opens the configured backend and every aggregate on it; with `metrics`,
 * every collection operation reports its time and failures there.
 */
export async function createStore(options: StoreOptions, metrics?: StoreMetrics): Promise<Store> {
  const backend =
    options.kind === "mongodb"
      ? await createMongoBackend(options)
      : await createEmbeddedBackend({ dataDir: options.dataDir, compactionIntervalMs: 10 * 60_000, log: options.log });
  try {
    return await openStore(metrics === undefined ? backend : instrumentBackend(backend, metrics), {
      ...(options.kind === "embedded" ? { logMaxEntries: options.logMaxEntries, onProblem: options.onProblem, logThread: options.logThread } : {}),
      metrics,
    });
  } catch (err) {
    // Do not leave a connected client (and its timers) behind.
    await backend.close().catch(() => undefined);
    throw err;
  }
}
