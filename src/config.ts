/**
 * Configuration: environment variables -> a validated, frozen object. Fails
 * fast, naming every bad variable. `src/main.ts` is the only caller that
 * passes `process.env`; tests pass their own.
 */
import { isWellFormedApiKey } from "./services/api-key-secret.js";
import { DEFAULT_MAX_ENTRIES } from "./store/memory-request-log.js";

/** erplink's configuration. */
export interface Config {
  readonly host: string;
  readonly port: number;
  /** Set when `ERPLINK_MASTER_KEY` is; otherwise main generates one at start. */
  readonly masterKey: string | undefined;
  readonly store:
    | { readonly kind: "embedded"; readonly dataDir: string }
    | { readonly kind: "mongodb"; readonly url: string; readonly serverSelectionTimeoutMs: number };
  readonly logLevel: string;
  /** One `request` line per request at `info` (ERPLINK_ACCESS_LOG=on); off by default, when the line is written at `debug`. */
  readonly accessLog: boolean;
  /**
   * The embedded store's request log in a worker thread of its own
   * (`ERPLINK_LOG_THREAD=on`; see src/store/request-log-worker.ts); off, the
   * default: in the thread that serves requests (on this 2-core bench machine
   * the thread's core is not spare, and the data path measured no faster
   * with it: bench/README.md, the run of commit f1681d7).
   */
  readonly logThread: boolean;
  readonly bodyLimitBytes: number;
  readonly shutdownTimeoutMs: number;
  readonly publicUrl: string | undefined;
  /** Origins whose browser pages may call the RPC endpoints (CORS; `ERPLINK_CORS_ORIGINS`); empty: none. */
  readonly corsOrigins: readonly string[];
  /** Budget of each admin token (the master key and every admin key) when it is presented as a bearer token. */
  readonly adminLimits: { readonly perMinute: number; readonly perDay: number };
  /** Budget of each session (`ses_…`), apart from the budget of the key it acts for. */
  readonly adminSessionLimits: { readonly perMinute: number; readonly perDay: number };
  /** Limits of data keys that set none of their own. */
  readonly dataLimits: { readonly perMinute: number; readonly perDay: number };
  /** How often batched `last_used_at` times are written (ms). */
  readonly usageFlushMs: number;
  /** How often each process reads the API keys other processes changed (ms). */
  readonly keySyncMs: number;
  /** Most store reads a second for API keys (and, apart, sessions) this process does not hold yet. */
  readonly coldReadsPerSecond: number;
  /** The key that seals back-end credentials; when unset, main makes or reads one in the data dir. */
  readonly encryptionKey: Buffer | undefined;
  /** How long request-log entries are kept (days). */
  readonly logRetentionDays: number;
  /**
   * Most request-log entries kept, the oldest beyond removed after each batch
   * (`ERPLINK_LOG_MAX_ENTRIES`; default 50,000 on the embedded store, none on
   * MongoDB); undefined: no cap, only retention.
   */
  readonly logMaxEntries: number | undefined;
  /** How long audit entries are kept (days); undefined keeps them for ever. */
  readonly auditRetentionDays: number | undefined;
  /** A session unused this long ends (minutes). */
  readonly sessionIdleMinutes: number;
  /** A session ends this long after it was created (hours). */
  readonly sessionMaxHours: number;
  /** How long the data path waits for a back end's answer (ms) before 504, waiting for a connection included. */
  readonly upstreamTimeoutMs: number;
  /** How long a whole answer of a back end may take, its body included (ms). */
  readonly upstreamTotalTimeoutMs: number;
  /** Most requests in flight to one instance's back end at once. */
  readonly upstreamConnections: number;
  /** `ERPLINK_EXT_AUTHZ_TOKEN`: the bearer token Envoy sends to get back-end credentials from Check; unset: never. */
  readonly extAuthzToken?: string | undefined;
  /** `GET /metrics`: off (not served, nothing recorded), on (no credential), or token (a bearer token). */
  readonly metrics: { readonly mode: "off" | "on" } | { readonly mode: "token"; readonly token: string };
}

/** Thrown when the environment is invalid; its message lists every problem. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Minimum length of a configured master key. */
export const MIN_MASTER_KEY_LENGTH = 32;

/** The request log's cap on the embedded store when `ERPLINK_LOG_MAX_ENTRIES` is unset (the log's own default). */
export const DEFAULT_EMBEDDED_LOG_MAX_ENTRIES = DEFAULT_MAX_ENTRIES;
/** The smallest cap accepted (a batch is up to 500 entries). */
const MIN_LOG_MAX_ENTRIES = 1_000;
const MAX_LOG_MAX_ENTRIES = 1_000_000_000;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** Reads a 32-byte key given as 64 hex characters or as base64; undefined if malformed. */
export function parseEncryptionKey(text: string): Buffer | undefined {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, "hex");
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) {
    const b = Buffer.from(t.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    return b.length === 32 ? b : undefined;
  }
  return undefined;
}

/**
 * Reads `ERPLINK_CORS_ORIGINS`: comma-separated origins (`scheme://host[:port]`,
 * http or https, nothing after the port; no wildcard). Returns them
 * normalized as browsers send them (lower-case host, default port dropped),
 * and reports each malformed one in `problems`.
 */
export function parseCorsOrigins(text: string | undefined, problems: string[]): readonly string[] {
  const origins = new Set<string>();
  for (const raw of (text ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    let url: URL | undefined;
    try {
      url = new URL(raw);
    } catch {
      url = undefined;
    }
    // Nothing but scheme, host and port (a trailing "/" is tolerated): no path, query, fragment or user.
    const bare = /^https?:\/\/[^/?#@\s]+\/?$/i.test(raw);
    if (url === undefined || !bare || (url.protocol !== "http:" && url.protocol !== "https:")) {
      problems.push(`ERPLINK_CORS_ORIGINS: "${raw}" is not an origin such as https://app.example.com or http://localhost:5173`);
      continue;
    }
    origins.add(url.origin);
  }
  return Object.freeze([...origins]);
}

/** Reads the configuration from an environment. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): Config {
  const problems: string[] = [];
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < min || n > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return n;
  };

  const masterKey = env.ERPLINK_MASTER_KEY || undefined;
  if (masterKey !== undefined && (masterKey.length < MIN_MASTER_KEY_LENGTH || !/^[!-~]+$/.test(masterKey))) {
    problems.push(
      `ERPLINK_MASTER_KEY must be at least ${MIN_MASTER_KEY_LENGTH} printable characters without spaces`,
    );
  }
  // An API key's secret as the master key would make one token both (the data path finds keys before it compares the master key).
  if (masterKey !== undefined && isWellFormedApiKey(masterKey)) {
    problems.push("ERPLINK_MASTER_KEY must not be an API key: choose another value (openssl rand -base64 32)");
  }
  const mongoUrl = env.MONGODB_URL || undefined;
  if (mongoUrl !== undefined && !/^mongodb(\+srv)?:\/\//.test(mongoUrl)) {
    problems.push("MONGODB_URL must start with mongodb:// or mongodb+srv://");
  }
  const logLevel = env.LOG_LEVEL || "info";
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}`);
  const accessLog = env.ERPLINK_ACCESS_LOG || "off";
  if (accessLog !== "on" && accessLog !== "off") problems.push(`ERPLINK_ACCESS_LOG must be on or off (got "${accessLog}")`);
  const logThread = env.ERPLINK_LOG_THREAD || "off";
  if (logThread !== "on" && logThread !== "off") problems.push(`ERPLINK_LOG_THREAD must be on or off (got "${logThread}")`);
  const publicUrl = env.ERPLINK_PUBLIC_URL || undefined;
  if (publicUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(publicUrl)) {
    problems.push("ERPLINK_PUBLIC_URL must be an http(s) URL");
  }
  const corsOrigins = parseCorsOrigins(env.ERPLINK_CORS_ORIGINS, problems);

  const encryptionKeyText = env.ERPLINK_ENCRYPTION_KEY || undefined;
  const encryptionKey = encryptionKeyText === undefined ? undefined : parseEncryptionKey(encryptionKeyText);
  if (encryptionKeyText !== undefined && encryptionKey === undefined) {
    problems.push("ERPLINK_ENCRYPTION_KEY must be 32 bytes: 64 hex characters or 44 base64 characters");
  }
  if (mongoUrl !== undefined && encryptionKeyText === undefined) {
    problems.push("ERPLINK_ENCRYPTION_KEY is required with MONGODB_URL: every process must seal credentials with the same key");
  }

  const extAuthzToken = env.ERPLINK_EXT_AUTHZ_TOKEN || undefined;
  if (extAuthzToken !== undefined && (extAuthzToken.length < MIN_MASTER_KEY_LENGTH || !/^[!-~]+$/.test(extAuthzToken))) {
    problems.push(`ERPLINK_EXT_AUTHZ_TOKEN must be at least ${MIN_MASTER_KEY_LENGTH} printable characters without spaces`);
  }
  const metricsMode = env.ERPLINK_METRICS || "on";
  const metricsToken = env.ERPLINK_METRICS_TOKEN || undefined;
  if (metricsMode !== "off" && metricsMode !== "on" && metricsMode !== "token") {
    problems.push(`ERPLINK_METRICS must be off, on or token (got "${metricsMode}")`);
  } else if (metricsMode === "token" && metricsToken === undefined) {
    problems.push("ERPLINK_METRICS=token needs ERPLINK_METRICS_TOKEN, the bearer token scrapers send");
  } else if (metricsMode !== "token" && metricsToken !== undefined) {
    // Someone who set a token believes /metrics is protected: say that it is not.
    problems.push(`ERPLINK_METRICS_TOKEN is set but ERPLINK_METRICS is ${metricsMode}: set ERPLINK_METRICS=token to require it`);
  }
  if (metricsToken !== undefined && (metricsToken.length < MIN_MASTER_KEY_LENGTH || !/^[!-~]+$/.test(metricsToken))) {
    problems.push(`ERPLINK_METRICS_TOKEN must be at least ${MIN_MASTER_KEY_LENGTH} printable characters without spaces`);
  }

  // The embedded store holds the log in the JS heap (some 1.1-1.3 KB an
  // entry, and under load V8 lets the heap grow to a few times what is
  // live), so it has a cap by default; MongoDB keeps the log on disk. 0: no cap.
  let logMaxEntries = mongoUrl ? 0 : DEFAULT_EMBEDDED_LOG_MAX_ENTRIES;
  const logMaxEntriesText = env.ERPLINK_LOG_MAX_ENTRIES;
  if (logMaxEntriesText !== undefined && logMaxEntriesText !== "") {
    const n = Number(logMaxEntriesText);
    if (/^\d+$/.test(logMaxEntriesText) && (n === 0 || (n >= MIN_LOG_MAX_ENTRIES && n <= MAX_LOG_MAX_ENTRIES))) {
      logMaxEntries = n;
    } else {
      problems.push(
        `ERPLINK_LOG_MAX_ENTRIES must be 0 (no cap) or an integer from ${MIN_LOG_MAX_ENTRIES} to ${MAX_LOG_MAX_ENTRIES} (got "${logMaxEntriesText}")`,
      );
    }
  }

  const config: Config = {
    host: env.HOST || "localhost",
    port: int("PORT", 8080, 0, 65535),
    masterKey,
    store: mongoUrl
      ? {
          kind: "mongodb",
          url: mongoUrl,
          serverSelectionTimeoutMs: int("ERPLINK_MONGODB_TIMEOUT_MS", 5000, 100, 120_000),
        }
      : { kind: "embedded", dataDir: env.ERPLINK_DATA_DIR || "./data" },
    logLevel,
    accessLog: accessLog === "on",
    logThread: logThread === "on",
    bodyLimitBytes: int("ERPLINK_BODY_LIMIT_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
    shutdownTimeoutMs: int("ERPLINK_SHUTDOWN_TIMEOUT_MS", 10_000, 0, 600_000),
    publicUrl,
    corsOrigins,
    adminLimits: {
      perMinute: int("ERPLINK_ADMIN_RATE_PER_MINUTE", 100, 1, 1_000_000_000),
      perDay: int("ERPLINK_ADMIN_RATE_PER_DAY", 10_000, 1, 1_000_000_000),
    },
    // A dashboard page makes a burst of reads when it opens: its session has a larger budget of its
    // own, so that a script spending its key's budget does not lock the dashboard out (nor the reverse).
    adminSessionLimits: {
      perMinute: int("ERPLINK_ADMIN_SESSION_RATE_PER_MINUTE", 600, 1, 1_000_000_000),
      perDay: int("ERPLINK_ADMIN_SESSION_RATE_PER_DAY", 50_000, 1, 1_000_000_000),
    },
    dataLimits: {
      perMinute: int("ERPLINK_DATA_RATE_PER_MINUTE", 600, 1, 1_000_000_000),
      perDay: int("ERPLINK_DATA_RATE_PER_DAY", 100_000, 1, 1_000_000_000),
    },
    usageFlushMs: int("ERPLINK_USAGE_FLUSH_MS", 30_000, 100, 3_600_000),
    keySyncMs: int("ERPLINK_KEY_SYNC_MS", 2_000, 100, 60_000),
    coldReadsPerSecond: int("ERPLINK_COLD_READS_PER_SECOND", 200, 1, 100_000),
    encryptionKey,
    logRetentionDays: int("ERPLINK_LOG_RETENTION_DAYS", 30, 1, 3650),
    logMaxEntries: logMaxEntries === 0 ? undefined : logMaxEntries,
    // Unset or empty: unlimited. The audit trail is never purged by the request log's retention.
    auditRetentionDays: env.ERPLINK_AUDIT_RETENTION_DAYS ? int("ERPLINK_AUDIT_RETENTION_DAYS", 0, 1, 36_500) : undefined,
    sessionIdleMinutes: int("ERPLINK_SESSION_IDLE_MINUTES", 30, 1, 7 * 24 * 60),
    sessionMaxHours: int("ERPLINK_SESSION_MAX_HOURS", 12, 1, 30 * 24),
    upstreamTimeoutMs: int("ERPLINK_UPSTREAM_TIMEOUT_MS", 30_000, 100, 600_000),
    upstreamTotalTimeoutMs: int("ERPLINK_UPSTREAM_TOTAL_TIMEOUT_MS", 600_000, 1_000, 86_400_000),
    upstreamConnections: int("ERPLINK_UPSTREAM_CONNECTIONS", 64, 1, 4_096),
    extAuthzToken,
    metrics: metricsMode === "token" ? { mode: "token", token: metricsToken ?? "" } : { mode: metricsMode === "off" ? "off" : "on" },
  };
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
  return Object.freeze(config);
}
