/**
 * erplink.admin.v1.LogService: reading the request log.
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  GetLogResponseSchema,
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
import { isOperation } from "./permissions.js";
import { requireId } from "./resource.js";
import { timestampProblem } from "./validation.js";

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
  });
}

/** A status filter: `404` or a class such as `4xx`. */
function statusRange(value: string): { gte: number; lt: number } | undefined {
  if (/^[1-5][0-9]{2}$/.test(value)) return { gte: Number(value), lt: Number(value) + 1 };
  const m = /^([1-5])xx$/i.exec(value);
  return m ? { gte: Number(m[1]) * 100, lt: Number(m[1]) * 100 + 100 } : undefined;
}

/** Implements LogService. */
export class LogServiceImpl implements ServiceImpl<typeof LogService> {
  constructor(private readonly deps: ServiceDeps) {}

  queryLogs(req: QueryLogsRequest) {
    return translate(names, async () => {
      const violations: Violation[] = [];
      const text = (field: string, value: string, pattern: RegExp, description: string) => {
        if (value === "") return undefined;
        if (!pattern.test(value)) violations.push({ field, description });
        return value;
      };
      const status = req.status === "" ? undefined : statusRange(req.status);
      if (req.status !== "" && status === undefined) {
        violations.push({ field: "status", description: "must be a status such as 404 or a class such as 4xx" });
      }
      if (req.operation !== "" && !isOperation(req.operation)) {
        violations.push({ field: "operation", description: "must be one of list, get, create, update, delete" });
      }
      for (const [field, ts] of [["from", req.from], ["to", req.to]] as const) {
        const problem = ts === undefined ? undefined : timestampProblem(ts);
        if (problem !== undefined) violations.push({ field, description: problem });
      }
      const from = req.from ? timestampDate(req.from) : undefined;
      const to = req.to ? timestampDate(req.to) : undefined;
      if (from !== undefined && to !== undefined && from.getTime() >= to.getTime()) {
        violations.push({ field: "to", description: "must be after from" });
      }
      const query: Omit<LogQuery, "limit" | "beforeId"> = {
        from,
        to,
        apiKeyId: text("api_key_id", req.apiKeyId, /^(master|key_[0-9A-Z]{26})$/, "must be an API key id (key_…) or master"),
        instance: text("instance", req.instance, /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be an instance name"),
        service: text("service", req.service, /^[A-Za-z0-9_][A-Za-z0-9_.;=-]{0,127}$/, "must be a service name"),
        entity: text("entity", req.entity, /^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "must be an entity set name"),
        operation: req.operation === "" ? undefined : req.operation,
        method: text("method", req.method, /^[A-Z]{1,16}$/, "must be an HTTP method in capitals, such as GET"),
        status,
        requestId: text("request_id", req.requestId, /^[A-Za-z0-9._:-]{1,128}$/, "must be a request id"),
      };
      if (violations.length > 0) throw validationError(violations);
      const paging = readPaging(req.pageSize, req.pageToken, "log", { default: 100, max: 1000 });
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
      if (rec === undefined) throw new ConnectError("log entry not found", Code.NotFound);
      return create(GetLogResponseSchema, { log: requestLogToMessage(rec) });
    });
  }
}
