/**
 * The service layer, assembled: dependencies, routes, the admin gate and
 * the interceptors of the public server and of the gateway's in-process
 * transport. `src/app.ts` and the tests build it the same way.
 */
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import type { DiagnosticsPort } from "../schema/diagnostics.js";
import type { ApiKeyRecord, Store } from "../store/index.js";
import {
  createAdminGate,
  createAdminInterceptor,
  createAuthenticator,
  createCallFactsInterceptor,
  masterKeyMatcher,
  principalId,
  type AdminGate,
} from "./auth.js";
import { DataPlane } from "./data-plane.js";
import { createServiceDeps, type ServiceDeps, type ServiceSettings } from "./context.js";
import { createErrorLogInterceptor, type ErrorLog } from "./errors.js";
import { LogWriter } from "./log-writer.js";
import type { Limits } from "./rate-limiter.js";
import { PUBLIC_SERVICES, createRoutes } from "./routes.js";
import { masterFingerprint } from "../schema/session-token.js";

/** A session's admin budget when none is configured (ERPLINK_ADMIN_SESSION_RATE_PER_MINUTE / _PER_DAY's defaults). */
export const DEFAULT_ADMIN_SESSION_LIMITS: Limits = Object.freeze({ perMinute: 600, perDay: 50_000 });

/** Options of {@link createServiceLayer}. */
export interface ServiceLayerOptions extends Omit<ServiceSettings, "onBackgroundError" | "sessionPolicy"> {
  readonly masterKey: string;
  /** Session expiry (ms): idle and absolute; defaults 30 min and 12 h. */
  readonly sessionIdleMs?: number;
  readonly sessionMaxMs?: number;
  /** Budget of each admin token presented as a bearer token. */
  readonly adminLimits: Limits;
  /** Budget of each session, apart from its key's (default: 600 a minute, 50,000 a day). */
  readonly adminSessionLimits?: Limits;
  /** Where masked errors and failed background writes are reported. */
  readonly log: ErrorLog;
  /** How long request-log entries are kept (ms). */
  readonly logRetentionMs: number;
  /** Most request-log entries kept (the oldest beyond go after each batch); undefined: only retention bounds the log. */
  readonly logMaxEntries?: number;
}

/** The assembled service layer. */
export interface ServiceLayer {
  readonly deps: ServiceDeps;
  readonly routes: (router: ConnectRouter) => void;
  readonly gate: AdminGate;
  /** For the public server: admin calls are authenticated and counted. */
  readonly publicInterceptors: readonly Interceptor[];
  /** Writes the request log in batches. */
  readonly logWriter: LogWriter;
  /** Lookups and decisions of the OData data path. */
  readonly dataPlane: DataPlane;
  /** Admits a REST admin request, counted: its rate-limit headers and who it is (`master` or a key id). */
  admitRest(
    authorization: string | undefined,
  ): Promise<{ headers: Readonly<Record<string, string>>; principalId: string; sessionId: string | undefined }>;
  /** Starts the background jobs: usage and log flushes, key sync, purges. */
  start(intervals: BackgroundIntervals): void;
  /** Stops them and writes what is pending (bounded). */
  stop(): Promise<void>;
  /** Binds the gateway's diagnostics (explain, catalog, connection test) into the services. */
  bindDiagnostics(port: DiagnosticsPort<ApiKeyRecord>): void;
  /**
   * For the gateway's in-process transport: admin calls are authenticated
   * only, since the gateway counted them before reading the body.
   */
  readonly inProcessInterceptors: readonly Interceptor[];
}

/** How often the background jobs run (ms). */
export interface BackgroundIntervals {
  readonly usageFlushMs: number;
  readonly keySyncMs: number;
  readonly logFlushMs: number;
  readonly purgeMs: number;
}

/** Assembles the service layer over a store. */
export function createServiceLayer(store: Store, options: ServiceLayerOptions): ServiceLayer {
  const deps = createServiceDeps(store, {
    ...options,
    sessionPolicy: {
      idleMs: options.sessionIdleMs ?? 30 * 60_000,
      maxMs: options.sessionMaxMs ?? 12 * 3_600_000,
      masterFingerprint: masterFingerprint(options.masterKey),
    },
    onBackgroundError: (err) => options.log.error({ err }, "background write failed"),
  });
  const gate = createAdminGate({
    authenticator: createAuthenticator({
      masterKey: options.masterKey,
      keys: deps.keys,
      usage: deps.usage,
      sessions: deps.sessions,
      sessionPolicy: deps.sessionPolicy,
      clock: deps.clock,
    }),
    limiter: deps.limiter,
    limits: options.adminLimits,
    sessionLimits: options.adminSessionLimits ?? DEFAULT_ADMIN_SESSION_LIMITS,
    clock: deps.clock,
  });
  const errorLog = createErrorLogInterceptor(options.log);
  const logWriter = new LogWriter({
    store: store.logs,
    newId: deps.newId,
    retentionMs: options.logRetentionMs,
    maxEntries: options.logMaxEntries,
    // Some ten seconds of a busy process: a store that is slower than the
    // requests for a while (a failover, a MongoDB sharing the host's cores)
    // loses nothing; about 75 MB at most, as the embedded log's cap.
    maxQueued: 50_000,
    batchSize: 500,
    onProblem: (fields, message) => options.log.error(fields, message),
    rollups: { store: store.usageRollups },
  });
  let purge: NodeJS.Timeout | undefined;
  return {
    deps,
    logWriter,
    dataPlane: new DataPlane(deps, masterKeyMatcher(options.masterKey)),
    async admitRest(authorization) {
      const admission = await gate.admit(authorization, { count: true });
      return { headers: admission.headers, principalId: principalId(admission.principal), sessionId: admission.principal.sessionId };
    },
    start(intervals) {
      deps.usage.start(intervals.usageFlushMs);
      deps.sessions.start(intervals.usageFlushMs);
      deps.keys.start(intervals.keySyncMs, (err) => options.log.error({ err }, "API key sync failed"));
      logWriter.start(intervals.logFlushMs);
      // Rate-limit places leased and left unspent go back to the shared windows.
      deps.limiter.start(1000, (err) => options.log.error({ err }, "rate-limit give-back failed"));
      purge = setInterval(() => {
        const now = deps.clock();
        Promise.all([
          store.rateWindows.purge(now),
          store.logs.purge(now),
          store.sessions.purge(now),
          deps.audit.purge(now),
          // Revoked keys are kept as long as the audit trail of their time, so that later uses are attributed.
          purgeRevokedKeys(deps, now),
          // Rollups go with the last entries they count.
          store.usageRollups.purge(new Date(now.getTime() - options.logRetentionMs)),
        ]).catch((err: unknown) =>
          options.log.error({ err }, "purge failed"),
        );
      }, intervals.purgeMs);
      purge.unref();
    },
    bindDiagnostics(port) {
      deps.diagnostics.port = port;
    },
    async stop() {
      clearInterval(purge);
      deps.keys.stop();
      await Promise.all([
        deps.usage.stop(),
        deps.sessions.stop(),
        logWriter.stop(),
        deps.limiter.stop().catch((err: unknown) => options.log.error({ err }, "rate-limit give-back failed")),
      ]);
    },
    routes: createRoutes(deps),
    gate,
    publicInterceptors: [
      createCallFactsInterceptor(),
      errorLog,
      createAdminInterceptor(gate, { count: true, publicServices: PUBLIC_SERVICES }),
    ],
    inProcessInterceptors: [errorLog, createAdminInterceptor(gate, { count: false, publicServices: PUBLIC_SERVICES })],
  };
}

/**
 * Removes the API keys revoked before the audit retention's cutoff (none
 * while the audit trail is kept for ever): a revoked key is listed, and its
 * later uses attributed to it, as long as the trail of its time is kept.
 */
export function purgeRevokedKeys(deps: ServiceDeps, now: Date): Promise<number> {
  const cutoff = deps.audit.cutoff(now);
  return cutoff === undefined ? Promise.resolve(0) : deps.store.apiKeys.purgeRevoked(cutoff);
}
