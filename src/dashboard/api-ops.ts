/**
 * The admin calls of the Logs, Audit and Sessions screens (built on
 * {@link call}), and the small helpers they share: a view's filters kept in
 * the page URL's query, so a view can be shared and survives a reload.
 */
import { call, type ApiResult } from "./api.js";

/** An (entity set, operation) pair a data request was authorized for. */
export interface EntityAccess {
  readonly entity: string;
  readonly operation: string;
}

/** One request-log entry (`GET /admin/logs`). */
export interface RequestLog {
  readonly id: string;
  readonly request_id: string;
  readonly timestamp: string;
  readonly api_key_id?: string;
  readonly session_id?: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly duration_ms?: number;
  readonly instance?: string;
  readonly service?: string;
  readonly accesses?: readonly EntityAccess[];
  readonly denial_step?: string;
  readonly error_code?: string;
  readonly error_message?: string;
  readonly upstream_status?: number;
  readonly upstream_duration_ms?: number;
  readonly upstream_method?: string;
  readonly upstream_url?: string;
  /** Bytes of the answer's body sent (int64: a string in JSON). */
  readonly response_bytes?: string;
  readonly client_ip?: string;
  readonly user_agent?: string;
}

/** One field change of an audit entry: `before`/`after` are JSON values (null where absent). */
export interface AuditChange {
  readonly path: readonly string[];
  readonly before?: unknown;
  readonly after?: unknown;
}

/** One audit entry (`GET /admin/audit`). */
export interface AuditEntry {
  readonly id: string;
  readonly timestamp: string;
  readonly actor: string;
  readonly session_id?: string;
  readonly action: string;
  readonly resource_type: string;
  readonly resource_id: string;
  readonly request_id?: string;
  readonly state?: string;
  readonly changes?: readonly AuditChange[];
}

/** A live session as listed (`GET /admin/sessions`; never its token). */
export interface SessionInfo {
  readonly id: string;
  readonly label?: string;
  readonly acts_for?: string;
  readonly cookie?: boolean;
  readonly created_at?: string;
  readonly last_used_at?: string;
  readonly idle_expires_at?: string;
  readonly expires_at?: string;
  /** Whether this is the session the page itself uses. */
  readonly current?: boolean;
}

/** The request-log filters, by their query parameter names. */
export const LOG_FILTERS = [
  "from",
  "to",
  "api_key_id",
  "instance",
  "service",
  "entity",
  "operation",
  "method",
  "status",
  "request_id",
] as const;

/** The audit filters, by their query parameter names. */
export const AUDIT_FILTERS = ["from", "to", "actor", "resource_type", "resource_id", "action"] as const;

/** A view's filters: parameter name → value (empty values are left out of queries). */
export type Filters = Readonly<Record<string, string>>;

/** The query string of the non-empty filters (and page token), with a leading `?`, or "". */
export function queryOf(filters: Filters): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value !== "") params.set(name, value);
  const s = params.toString();
  return s === "" ? "" : `?${s}`;
}

/** Reads the named parameters from the page URL's query. */
export function filtersFromUrl(names: readonly string[]): Record<string, string> {
  const params = new URLSearchParams(location.search);
  const out: Record<string, string> = {};
  for (const name of names) out[name] = params.get(name) ?? "";
  return out;
}

/** Puts a view's state into the page URL (a history entry, so Back returns to the previous view). */
export function pushUrlState(filters: Filters): void {
  const next = `${location.pathname}${queryOf(filters)}`;
  if (next !== `${location.pathname}${location.search}`) history.pushState(null, "", next);
}

export const opsApi = {
  queryLogs: (filters: Filters, pageSize: number): Promise<ApiResult<RequestLog[]>> =>
    call<RequestLog[]>("GET", `/admin/logs${queryOf({ ...filters, page_size: String(pageSize) })}`),
  getLog: (id: string) => call<RequestLog>("GET", `/admin/logs/${encodeURIComponent(id)}`),
  listAudit: (filters: Filters, pageSize: number): Promise<ApiResult<AuditEntry[]>> =>
    call<AuditEntry[]>("GET", `/admin/audit${queryOf({ ...filters, page_size: String(pageSize) })}`),
  listSessions: (pageToken = "") =>
    call<SessionInfo[]>("GET", `/admin/sessions${queryOf({ page_size: "100", page_token: pageToken })}`),
  revokeSession: (id: string) => call<SessionInfo>("DELETE", `/admin/sessions/${encodeURIComponent(id)}`),
};

/** `2026-11-21T10:00:00Z` → the value of a `datetime-local` input in local time, or "". */
export function toLocalInput(rfc3339: string): string {
  if (rfc3339 === "") return "";
  const d = new Date(rfc3339);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A `datetime-local` value (local time) → RFC 3339 UTC, or "". */
export function fromLocalInput(local: string): string {
  if (local === "") return "";
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString().replace(/\.000Z$/, "Z");
}

/** A timestamp for people: local date and time. */
export function when(rfc3339: string | undefined): string {
  if (rfc3339 === undefined || rfc3339 === "") return "";
  const d = new Date(rfc3339);
  return Number.isNaN(d.getTime()) ? rfc3339 : d.toLocaleString();
}

/**
 * An audit value for people: lists (a grant's operations) as `list, get`,
 * an absent value as `(none)`, an object (a map present on one side only)
 * as `{key: value; …}`; `"[redacted]"` stays as it is.
 */
export function formatValue(value: unknown): string {
  if (value === null || value === undefined) return "(none)";
  if (Array.isArray(value)) return value.length === 0 ? "(empty list)" : value.map((v) => formatValue(v)).join(", ");
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return "{}";
    return `{${entries.map(([k, v]) => `${k}: ${Array.isArray(v) && v.length > 1 ? `[${formatValue(v)}]` : formatValue(v)}`).join("; ")}}`;
  }
  if (typeof value === "string") return value === "" ? '""' : value;
  return String(value);
}

/** One change as a line: `permissions › prod › API_BP › A_BusinessPartner: list → list, get`. */
export function formatChange(change: AuditChange): string {
  return `${change.path.join(" › ")}: ${formatValue(change.before)} → ${formatValue(change.after)}`;
}
