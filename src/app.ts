/**
 * The composition root as a function: config -> store -> services -> router
 * -> gateway. `src/main.ts` calls it with the process environment and
 * listens; the end-to-end tests call it with theirs.
 */
import { hkdfSync, randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { getHeapStatistics } from "node:v8";
import { createRouterTransport } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { pino, type Logger } from "pino";
import { parseEncryptionKey, type Config } from "./config.js";
import { createGateway } from "./gateway/app.js";
import { AbuseGuard } from "./gateway/abuse-guard.js";
import { createDualProtocolServer } from "./gateway/server.js";
import { createPrometheusMetrics } from "./metrics/prometheus.js";
import { outcomeOfDataDecision } from "./metrics/port.js";
import { createServiceLayer } from "./services/layer.js";
import { createStore, type Store } from "./store/index.js";
import { ENTRY_HEAP_BYTES } from "./store/memory-request-log.js";

/** A composed erplink, ready to listen. */
export interface Erplink {
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly logger: Logger;
  /** The master key in force (configured, or generated at start). */
  readonly masterKey: string;
  /** Whether the master key was generated because none was configured. */
  readonly generatedMasterKey: boolean;
  /** Writes the queued request-log entries now (they are written every second anyway). */
  flushLogs(): Promise<void>;
  /** Stops accepting, finishes in-flight requests (bounded), closes the store. */
  close(): Promise<void>;
}

/** Options of {@link createErplink}. */
export interface ErplinkOptions {
  /** Where logs go (default: stdout). */
  readonly logDestination?: NodeJS.WritableStream;
}

/**
 * The embedded store's encryption key when ERPLINK_ENCRYPTION_KEY is unset:
 * read from, or generated into, `<data dir>/encryption.key` (mode 0600),
 * with a warning; in memory, a fresh one (the data dies with the process).
 * Refuses to generate a key for a store that already holds sealed
 * credentials: they were sealed with a key that has gone missing.
 */
async function localEncryptionKey(config: Config, store: Store, logger: Logger): Promise<Buffer> {
  if (config.store.kind !== "embedded" || config.store.dataDir === ":memory:") return randomBytes(32);
  const file = join(config.store.dataDir, "encryption.key");
  try {
    const key = parseEncryptionKey(await readFile(file, "utf8"));
    if (key === undefined) throw new Error(`${file} does not hold a 32-byte key`);
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  if (await store.instances.hasSealedCredentials()) {
    throw new Error(
      `${file} is missing but the store holds sealed back-end credentials: restore the file or set ERPLINK_ENCRYPTION_KEY`,
    );
  }
  const key = randomBytes(32);
  await writeFile(file, `${key.toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  logger.warn({ file }, "ERPLINK_ENCRYPTION_KEY is not set: generated a key for back-end credentials; back it up with the data");
  return key;
}

/**
 * The embedded store keeps its request log in this thread's heap (unless
 * ERPLINK_LOG_THREAD moves it to a worker, which it does with a data
 * directory): warns when a full log would take more than
 * half of the heap limit (`npm start` sets 384 MiB; package.json), which
 * would end with the process out of memory.
 */
function warnOfHeap(config: Config, logger: Logger): void {
  if (config.store.kind !== "embedded") return;
  // In a worker thread (with a data directory; src/store/index.ts), the log has a heap of its own.
  if (config.logThread && config.store.dataDir !== ":memory:") return;
  const entries = config.logMaxEntries === undefined || config.logMaxEntries === 0 ? Infinity : config.logMaxEntries;
  const limit = getHeapStatistics().heap_size_limit;
  if (entries * ENTRY_HEAP_BYTES <= limit / 2) return;
  const mib = (n: number) => Math.round(n / 2 ** 20);
  logger.warn(
    { logMaxEntries: config.logMaxEntries, heapLimitMiB: mib(limit) },
    entries === Infinity
      ? "the request log has no cap (ERPLINK_LOG_MAX_ENTRIES=0) and is kept in the heap until the retention purge: set a cap, or ERPLINK_LOG_THREAD=on"
      : `a full request log takes about ${mib(entries * ENTRY_HEAP_BYTES)} MiB of a ${mib(limit)} MiB heap: lower ERPLINK_LOG_MAX_ENTRIES or raise node's --max-old-space-size`,
  );
}

/** Composes erplink from its configuration. */
export async function createErplink(config: Config, options: ErplinkOptions = {}): Promise<Erplink> {
  // Asynchronous writes keep logging off the request path; close() flushes.
  const logger = pino(
    {
      level: config.logLevel,
      // Credentials, should a header ever be logged: bearer tokens, session cookies, CSRF tokens.
      redact: ["req.headers.authorization", "headers.authorization", "req.headers.cookie", "headers.cookie", 'req.headers["x-csrf-token"]', 'headers["x-csrf-token"]'],
    },
    options.logDestination ?? pino.destination({ dest: 1, sync: false }),
  );
  const generatedMasterKey = config.masterKey === undefined;
  const masterKey = config.masterKey ?? `erpl_master_${randomBytes(32).toString("base64url")}`;
  // Metrics off: nothing is recorded (no-op port, store not instrumented) and /metrics is not served.
  const metrics = config.metrics.mode === "off" ? undefined : createPrometheusMetrics();
  // The embedded store's request log caps itself as it is written (no cap configured: none).
  const storeOptions =
    config.store.kind === "embedded"
      ? {
          ...config.store,
          logMaxEntries: config.logMaxEntries ?? Infinity,
          onProblem: (fields: Record<string, unknown>, message: string) => logger.error(fields, message),
          log: logger,
          // Not part of config.store: without it here the log stayed in this thread whatever ERPLINK_LOG_THREAD said.
          logThread: config.logThread,
        }
      : config.store;
  const store = await createStore(storeOptions, metrics?.store);
  warnOfHeap(config, logger);
  let encryptionKey: Buffer;
  try {
    encryptionKey = config.encryptionKey ?? (await localEncryptionKey(config, store, logger));
  } catch (err) {
    await store.close();
    throw err;
  }
  const layer = createServiceLayer(store, {
    masterKey,
    encryptionKey,
    adminLimits: config.adminLimits,
    adminSessionLimits: config.adminSessionLimits,
    dataLimits: config.dataLimits,
    logRetentionMs: config.logRetentionDays * 86_400_000,
    logMaxEntries: config.logMaxEntries,
    auditRetentionMs: config.auditRetentionDays === undefined ? undefined : config.auditRetentionDays * 86_400_000,
    sessionIdleMs: config.sessionIdleMinutes * 60_000,
    sessionMaxMs: config.sessionMaxHours * 3_600_000,
    sessionRefreshMs: config.keySyncMs,
    coldReadsPerSecond: config.coldReadsPerSecond,
    log: logger,
    metrics,
  });
  // Rapid resets, streams at once, reconnecting abusers and pipelining (src/gateway/abuse-guard.ts).
  const guard = new AbuseGuard();
  metrics?.watch({ requestLog: () => layer.logWriter.stats(), apiKeys: () => layer.deps.keys.stats(), connections: () => guard.counts });
  layer.start({ usageFlushMs: config.usageFlushMs, keySyncMs: config.keySyncMs, logFlushMs: 1_000, purgeMs: 5 * 60_000 });

  const app = await createGateway({
    // The gateway counts REST calls itself, before reading the body; its
    // in-process transport only authenticates them again.
    transport: createRouterTransport(layer.routes, { router: { interceptors: [...layer.inProcessInterceptors] } }),
    connect: { routes: layer.routes, interceptors: layer.publicInterceptors },
    admit: (authorization) => layer.admitRest(authorization),
    record: (entry) => layer.logWriter.record(entry),
    health: () => ({ request_log: layer.logWriter.stats() }),
    data: layer.dataPlane,
    upstreamTimeoutMs: config.upstreamTimeoutMs,
    upstreamTotalTimeoutMs: config.upstreamTotalTimeoutMs,
    upstreamConnections: config.upstreamConnections,
    // The same in every process and across restarts (the encryption key is), and no key that seals anything.
    clientCsrfSecret: Buffer.from(hkdfSync("sha256", encryptionKey, Buffer.alloc(0), "erplink data-path client CSRF tokens", 32)),
    // Envoy's ext_authz Check; each decision counts as `api="ext_authz"`.
    extAuthz: {
      injectionToken: config.extAuthzToken,
      onDecision: metrics && ((d) => metrics.authorization.decided("ext_authz", outcomeOfDataDecision(d.denialStep, d.status))),
    },
    // Late-bound: the diagnostics run the gateway's data-path stages for the services' RPCs.
    bindDiagnostics: (port) => layer.bindDiagnostics(port),
    ready: () => store.ping(),
    metrics,
    metricsEndpoint: metrics && {
      token: config.metrics.mode === "token" ? config.metrics.token : undefined,
      scrape: () => metrics.scrape(),
    },
    logger,
    accessLog: config.accessLog,
    bodyLimit: config.bodyLimitBytes,
    publicUrl: config.publicUrl,
    corsOrigins: config.corsOrigins,
    serverFactory: (handler) =>
      createDualProtocolServer(handler, {
        firstByteTimeoutMs: 10_000,
        keepAliveTimeoutMs: 72_000,
        http2SessionTimeoutMs: 72_000,
        guard,
      }),
  });

  return {
    app,
    store,
    logger,
    masterKey,
    generatedMasterKey,
    flushLogs: () => layer.logWriter.flush(),
    async close() {
      const force = setTimeout(() => {
        logger.warn("shutdown timeout: closing open connections");
        (app.server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }, config.shutdownTimeoutMs);
      try {
        await app.close();
      } finally {
        clearTimeout(force);
        // Pending usage times and request-log entries are written before the store closes.
        await layer.stop();
        await store.close();
        logger.flush();
      }
    },
  };
}
