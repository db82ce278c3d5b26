/**
 * The admin calls of the Overview screen: `GET /admin/usage` (counts are
 * int64, so JSON strings: read them with {@link count}) and the recent
 * denials from `GET /admin/logs`.
 */
import { call } from "./api.js";

/** A count as the API sends it (a string for int64), or absent when zero. */
type Int64 = string | number | undefined;

/** Reads an int64 count (a JSON string, absent when zero) as a number. */
export function count(value: Int64): number {
  return value === undefined ? 0 : Number(value);
}

/** The back ends' answer times. */
export interface UpstreamLatency {
  readonly count?: Int64;
  readonly sum_ms?: number;
  readonly bucket_counts?: readonly Int64[];
  readonly p50_ms?: number;
  readonly p95_ms?: number;
  readonly p99_ms?: number;
}

/** Counts of data requests by outcome (fields at zero may be left out). */
export interface UsageCounts {
  readonly requests?: Int64;
  readonly allowed?: Int64;
  readonly upstream_client_errors?: Int64;
  readonly upstream_server_errors?: Int64;
  readonly denied?: Int64;
  readonly denied_by_step?: Readonly<Record<string, Int64>>;
  readonly rate_limited?: Int64;
  readonly client_errors?: Int64;
  readonly gateway_errors?: Int64;
  readonly upstream_latency?: UpstreamLatency;
}

/** The usage of the data path over a range. */
export interface Usage {
  readonly from: string;
  readonly to: string;
  readonly bucket: "hour" | "day";
  readonly group_by?: string;
  readonly latency_bounds_ms?: readonly number[];
  readonly total?: UsageCounts;
  readonly series?: readonly { readonly start: string; readonly counts?: UsageCounts }[];
  readonly groups?: readonly { readonly key?: string; readonly counts?: UsageCounts }[];
  readonly more_groups?: number;
}

/** One entry of the request log (the fields the Overview shows). */
export interface LogEntry {
  readonly id: string;
  readonly request_id?: string;
  readonly timestamp: string;
  readonly api_key_id?: string;
  readonly method?: string;
  readonly path?: string;
  readonly status?: number;
  readonly instance?: string;
  readonly service?: string;
  readonly accesses?: readonly { readonly entity?: string; readonly operation?: string }[];
  readonly denial_step?: string;
  readonly error_code?: string;
  readonly error_message?: string;
}

/** The Overview's ranges: how far back, and the bucket of the series. */
export const RANGES = {
  "24h": { label: "Last 24 hours", hours: 24, bucket: "hour" },
  "7d": { label: "Last 7 days", hours: 7 * 24, bucket: "hour" },
  "30d": { label: "Last 30 days", hours: 30 * 24, bucket: "day" },
} as const;
export type RangeName = keyof typeof RANGES;

export const overviewApi = {
  /** Usage over the range ending now, grouped by `api_key` or `entity`. */
  usage: (range: RangeName, groupBy: "api_key" | "entity", now = new Date()) => {
    const r = RANGES[range];
    const from = new Date(now.getTime() - r.hours * 3_600_000).toISOString();
    const query = new URLSearchParams({ from, bucket: r.bucket, group_by: groupBy, group_limit: "10" });
    return call<Usage>("GET", `/admin/usage?${query}`);
  },
  /** The newest refused requests (4xx) of the range, data requests and admin calls alike. */
  recentDenials: (range: RangeName, now = new Date()) => {
    const from = new Date(now.getTime() - RANGES[range].hours * 3_600_000).toISOString();
    const query = new URLSearchParams({ status: "4xx", from, page_size: "20" });
    return call<LogEntry[]>("GET", `/admin/logs?${query}`);
  },
};
