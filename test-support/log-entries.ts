/**
 * Request-log entries for tests: one builder for what callers give the log
 * writer ({@link logEntry}) and one for a stored record ({@link logRecord}),
 * so that a test writes only the fields it is about.
 *
 * The defaults are an answered admin request that nothing else happened to:
 * a `GET /admin/systems` by the master key with status 200, and every field
 * of a data request, a denial, an error or a session empty ("", 0 or no
 * accesses). A test that asserts on or filters by a field sets that field
 * itself, even to the default's value, so that its reader sees what matters.
 * Lives outside test/ because uvu runs every file there.
 */
import type { LogEntry } from "../src/services/log-writer.js";
import type { RequestLogRecord } from "../src/store/index.js";

/** When the default entry was made. */
const TIMESTAMP = "2026-01-02T03:04:05.000Z";
/** How long after its timestamp a default record expires. */
const KEPT_MS = 30 * 86_400_000;

/**
 * An entry as callers give it to the log writer (no id, no expiry): the
 * defaults described in this module's comment, with `overrides` on top.
 */
export function logEntry(overrides: Partial<LogEntry> = {}): LogEntry {
  return {
    requestId: "req-0",
    timestamp: new Date(TIMESTAMP),
    apiKeyId: "master",
    sessionId: "",
    method: "GET",
    path: "/admin/systems",
    status: 200,
    durationMs: 1,
    instance: "",
    service: "",
    accesses: [],
    denialStep: "",
    errorCode: "",
    errorMessage: "",
    upstreamStatus: 0,
    upstreamDurationMs: 0,
    clientIp: "127.0.0.1",
    userAgent: "ua",
    upstreamMethod: "",
    upstreamUrl: "",
    responseBytes: 0,
    ...overrides,
  };
}

/**
 * A stored record: {@link logEntry}'s defaults, the id
 * `log_01KA0000000000000000000000` and an expiry 30 days after the
 * record's timestamp (the one in `overrides` when it has one), with
 * `overrides` on top. Records appended together need ids of their own.
 */
export function logRecord(overrides: Partial<RequestLogRecord> = {}): RequestLogRecord {
  const { id = "log_01KA0000000000000000000000", expiresAt, ...entry } = overrides;
  const fields = logEntry(entry);
  return { id, ...fields, expiresAt: expiresAt ?? new Date(fields.timestamp.getTime() + KEPT_MS) };
}
