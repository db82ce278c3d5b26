/**
 * erplink.admin.v1.LogService: reading the request log.
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type ServiceImpl } from "@connectrpc/connect";
import {
  GetLogResponseSchema,
  QueryLogsRequestSchema,
  QueryLogsResponseSchema,
  RequestLogSchema,
  type GetLogRequest,
  type LogService,
  type QueryLogsRequest,
  type RequestLog,
} from "../gen/erplink/admin/v1/request_log_pb.js";
import type { LogQuery, RequestLogRecord } from "../store/index.js";
import type { ServiceDeps } from "./context.js";
import { translate, validationError, type Violation } from "./errors.js";
import { nextPageToken, readPaging } from "./paging.js";
import { notFound, requireId } from "./resource.js";
import { filterValue, timestampProblem } from "./validation.js";

const names = { singular: "log entry" };

/** The one mapping of a stored entry to its message. */
export function requestLogToMessage(r: RequestLogRecord): RequestLog {
  return create(RequestLogSchema, {
    id: r.id,
    requestId: r.requestId,
    timestamp: timestampFromDate(r.timestamp),
    apiKeyId: r.apiKeyId,
    method: r.method,
    path: r.path,
    status: r.status,
    durationMs: r.durationMs,
    instance: r.instance,
    service: r.service,
    accesses: r.accesses.map((a) => ({ entity: a.entity, operation: a.operation })),
    denialStep: r.denialStep,
    errorCode: r.errorCode,
    errorMessage: r.errorMessage,
    upstreamStatus: r.upstreamStatus,
    upstreamDurationMs: r.upstreamDurationMs,
    clientIp: r.clientIp,
    userAgent: r.userAgent,
    upstreamMethod: r.upstreamMethod,
    upstreamUrl: r.upstreamUrl,
    sessionId: r.sessionId,
    // Never anything but a count; a stored value that is not one (a hand-edited line) is read as none.
    responseBytes: Number.isSafeInteger(r.responseBytes) && r.responseBytes > 0 ? BigInt(r.responseBytes) : 0n,
  });
}

/** A status filter (already checked against its pattern): `404` or a class such as `4xx`. */
function statusRange(value: string): { gte: number; lt: number } {
  const digit = Number(value[0]);
  return /^[0-9]{3}$/.test(value) ? { gte: Number(value), lt: Number(value) + 1 } : { gte: digit * 100, lt: digit * 100 + 100 };
}

/** Implements LogService. */
export class LogServiceImpl implements ServiceImpl<typeof LogService> {
  constructor(private readonly deps: ServiceDeps) {}

  queryLogs(req: QueryLogsRequest) {
    return translate(names, async () => {
      const violations: Violation[] = [];
      // Each filter's pattern is its rule in the proto (published in the OpenAPI document).
      const text = (field: string) => filterValue(QueryLogsRequestSchema, req, field, violations);
      const status = text("status");
      const operation = text("operation");
      for (const [field, ts] of [["from", req.from], ["to", req.to]] as const) {
        const problem = ts === undefined ? undefined : timestampProblem(ts);
        if (problem !== undefined) violations.push({ field, description: problem });
      }
      const from = req.from ? timestampDate(req.from) : undefined;
      const to = req.to ? timestampDate(req.to) : undefined;
      const query: Omit<LogQuery, "limit" | "beforeId"> = {
        from,
        to,
        apiKeyId: text("api_key_id"),
        instance: text("instance"),
        service: text("service"),
        entity: text("entity"),
        operation,
        method: text("method"),
        status: status === undefined ? undefined : statusRange(status),
        requestId: text("request_id"),
      };
      if (violations.length > 0) throw validationError(violations);
      const paging = readPaging(req.pageSize, req.pageToken, "log", { default: 100, max: 1000 });
      // An empty range (`to` not after `from`) matches nothing.
      if (from !== undefined && to !== undefined && from.getTime() >= to.getTime()) {
        return create(QueryLogsResponseSchema, { logs: [], nextPageToken: "" });
      }
      const page = await this.deps.store.logs.query({ ...query, beforeId: paging.afterId, limit: paging.limit });
      return create(QueryLogsResponseSchema, {
        logs: page.items.map(requestLogToMessage),
        nextPageToken: nextPageToken(page),
      });
    });
  }

  getLog(req: GetLogRequest) {
    return translate(names, async () => {
      requireId("log", req.id);
      const rec = await this.deps.store.logs.get(req.id);
      if (rec === undefined) throw notFound("log", req.id);
      return create(GetLogResponseSchema, { log: requestLogToMessage(rec) });
    });
  }
}
