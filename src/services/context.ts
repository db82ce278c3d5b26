/**
 * What every service is built with: injected, never global.
 */
import { NOOP_METRICS, type Metrics } from "../metrics/port.js";
import type { DiagnosticsSlot } from "../schema/diagnostics.js";
import type { ApiKeyRecord, Store } from "../store/index.js";
import { AuditRecorder } from "./audit.js";
import { createIdGenerator, type IdGenerator } from "./ids.js";
import { KeyRegistry } from "./key-registry.js";
import { RateLimiter, type Limits } from "./rate-limiter.js";
import { createSecretBox, type SecretBox } from "./secret-box.js";
import { SessionRegistry } from "./session-registry.js";
import { UsageRecorder } from "./usage.js";

/** Dependencies shared by the services. */
export interface ServiceDeps {
  readonly store: Store;
  /** Where the instance service says which instance names changed, so that the data plane's cache forgets them at once. */
  readonly instanceChanges: InstanceChanges;
  /** How long the data plane serves an instance from memory (ms): other processes' changes arrive within it. */
  readonly instanceTtlMs: number;
  /** The current time; tests inject a fixed or stepping clock. */
  readonly clock: () => Date;
  readonly newId: IdGenerator;
  /** API keys by secret hash (the hot path's cache). */
  readonly keys: KeyRegistry;
  /** Batched `last_used_at`. */
  readonly usage: UsageRecorder;
  readonly limiter: RateLimiter;
  /** Limits of data keys that set none of their own. */
  readonly dataLimits: Limits;
  /** Seals back-end credentials at rest. */
  readonly secrets: SecretBox;
  /** The data path's diagnostics (explain, catalog, connection test), bound by the composition root once the gateway exists. */
  readonly diagnostics: DiagnosticsSlot<ApiKeyRecord>;
  /** Records every administrative change in the audit trail, with the change. */
  readonly audit: AuditRecorder;
  /** Sessions by token hash (the hot path's cache), with batched use times. */
  readonly sessions: SessionRegistry;
  /** How sessions expire, and the master key's fingerprint that master sessions carry. */
  readonly sessionPolicy: SessionPolicy;
  /** Where decisions are counted (`Authorize`'s outcomes); a no-op when metrics are off. */
  readonly metrics: Metrics;
}

/** How sessions expire. */
export interface SessionPolicy {
  /** A session unused this long ends (ms). */
  readonly idleMs: number;
  /** A session ends this long after it was created, however it is used (ms). */
  readonly maxMs: number;
  /** The fingerprint of the master key in force (see src/schema/session-token.ts). */
  readonly masterFingerprint: string;
}

/** Settings of {@link createServiceDeps}. */
export interface ServiceSettings {
  /** Limits of data keys that set none of their own. */
  readonly dataLimits: Limits;
  /** The 32-byte key that seals back-end credentials. */
  readonly encryptionKey: Buffer;
  /** How long an unknown key hash is remembered as unknown (ms). */
  readonly negativeCacheTtlMs?: number;
  /** Most store reads a second for API keys (and, apart, sessions) not in memory (default 200). */
  readonly coldReadsPerSecond?: number;
  /** Reports a failed background write (usage times). */
  readonly onBackgroundError: (err: unknown) => void;
  readonly clock?: () => Date;
  readonly newId?: IdGenerator;
  /** How long audit entries are kept (ms); unset keeps them for ever. */
  readonly auditRetentionMs?: number | undefined;
  /** How sessions expire (default: 30 min idle, 12 h absolute). */
  readonly sessionPolicy?: SessionPolicy;
  /** How long a cached session or instance is trusted before it is re-read (ms; the key-sync interval). */
  readonly sessionRefreshMs?: number;
  /** Where the services report (default: nowhere). */
  readonly metrics?: Metrics;
}

/** Names of instances created, changed or deleted in this process, told to whoever listens. */
export class InstanceChanges {
  private readonly listeners: ((name: string) => void)[] = [];
  /** Calls `listener` with every name changed from now on. */
  listen(listener: (name: string) => void): void {
    this.listeners.push(listener);
  }
  /** Tells the listeners that the instances named `names` changed. */
  changed(...names: string[]): void {
    for (const name of names) for (const listener of this.listeners) listener(name);
  }
}

/** Builds the services' dependencies over a store. */
export function createServiceDeps(store: Store, settings: ServiceSettings): ServiceDeps {
  const clock = settings.clock ?? (() => new Date());
  const newId = settings.newId ?? createIdGenerator(clock);
  return {
    store,
    instanceChanges: new InstanceChanges(),
    instanceTtlMs: settings.sessionRefreshMs ?? 2_000,
    clock,
    newId,
    keys: new KeyRegistry({
      store: store.apiKeys,
      clock,
      negativeTtlMs: settings.negativeCacheTtlMs ?? 30_000,
      maxEntries: 100_000,
      ...(settings.coldReadsPerSecond !== undefined ? { coldReadsPerSecond: settings.coldReadsPerSecond } : {}),
    }),
    usage: new UsageRecorder({ store: store.apiKeys, clock, onError: settings.onBackgroundError }),
    limiter: new RateLimiter(store.rateWindows, clock),
    dataLimits: settings.dataLimits,
    secrets: createSecretBox(settings.encryptionKey),
    diagnostics: { port: undefined },
    audit: new AuditRecorder({
      store: store.audit,
      clock,
      newId,
      retentionMs: settings.auditRetentionMs,
      onError: (err, message) => settings.onBackgroundError(new Error(message, { cause: err })),
    }),
    sessions: new SessionRegistry({
      store: store.sessions,
      clock,
      refreshMs: settings.sessionRefreshMs ?? 2_000,
      negativeTtlMs: settings.negativeCacheTtlMs ?? 30_000,
      maxEntries: 100_000,
      ...(settings.coldReadsPerSecond !== undefined ? { coldReadsPerSecond: settings.coldReadsPerSecond } : {}),
      onError: settings.onBackgroundError,
    }),
    sessionPolicy: settings.sessionPolicy ?? { idleMs: 30 * 60_000, maxMs: 12 * 3_600_000, masterFingerprint: "" },
    metrics: settings.metrics ?? NOOP_METRICS,
  };
}
