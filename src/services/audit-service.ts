/**
 * erplink.admin.v1.AuditService: reading the audit trail.
 */
import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type ServiceImpl } from "@connectrpc/connect";
import {
  AuditChangeSchema,
  AuditEntrySchema,
  GetAuditEntryResponseSchema,
  ListAuditEntriesRequestSchema,
  ListAuditEntriesResponseSchema,
  type AuditEntry,
  type AuditService,
  type GetAuditEntryRequest,
  type ListAuditEntriesRequest,
} from "../gen/erplink/admin/v1/audit_pb.js";
import type { AuditJson, AuditQuery, AuditRecord } from "../store/index.js";
import type { ServiceDeps } from "./context.js";
import { translate, validationError, type Violation } from "./errors.js";
import { nextPageToken, readPaging } from "./paging.js";
import { notFound, requireId } from "./resource.js";
import { filterValue, timestampProblem } from "./validation.js";

const names = { singular: "audit entry" };


/**
 * A JSON value as a google.protobuf.Value (null included, so that it is
 * written as `null`). A value missing from a stored entry reads as null:
 * entries written before inherited members were kept out of diffs lost
 * such values when stored, and must still list.
 */
function jsonValue(value: AuditJson | undefined): ReturnType<typeof fromJson<typeof ValueSchema>> {
  return fromJson(ValueSchema, (value ?? null) as JsonValue);
}

/** The one mapping of a stored entry to its message. */
export function auditEntryToMessage(r: AuditRecord): AuditEntry {
  return create(AuditEntrySchema, {
    id: r.id,
    timestamp: timestampFromDate(r.timestamp),
    actor: r.actor,
    sessionId: r.sessionId,
    action: r.action,
    resourceType: r.resourceType,
    resourceId: r.resourceId,
    requestId: r.requestId,
    state: r.state,
    changes: r.changes.map((c) =>
      create(AuditChangeSchema, { path: [...c.path], before: jsonValue(c.before), after: jsonValue(c.after) }),
    ),
    before: jsonValue(r.before),
    after: jsonValue(r.after),
  });
}

/** Implements AuditService. */
export class AuditServiceImpl implements ServiceImpl<typeof AuditService> {
  constructor(private readonly deps: ServiceDeps) {}

  listAuditEntries(req: ListAuditEntriesRequest) {
    return translate(names, async () => {
      const violations: Violation[] = [];
      // Each filter's pattern is its rule in the proto (published in the OpenAPI document).
      const text = (field: string) => filterValue(ListAuditEntriesRequestSchema, req, field, violations);
      for (const [field, ts] of [["from", req.from], ["to", req.to]] as const) {
        const problem = ts === undefined ? undefined : timestampProblem(ts);
        if (problem !== undefined) violations.push({ field, description: problem });
      }
      const from = req.from ? timestampDate(req.from) : undefined;
      const to = req.to ? timestampDate(req.to) : undefined;
      // A session id filters by the session; anything else by the actor.
      const actorId = text("actor");
      const actor: Pick<AuditQuery, "actor" | "sessionId"> =
        actorId === undefined ? {} : actorId.startsWith("ses_") ? { sessionId: actorId } : { actor: actorId };
      const resourceId = text("resource_id");
      const query: Omit<AuditQuery, "limit" | "beforeId"> = {
        from,
        to,
        ...actor,
        resourceType: text("resource_type"),
        resourceId,
        action: text("action"),
      };
      if (violations.length > 0) throw validationError(violations);
      const paging = readPaging(req.pageSize, req.pageToken, "aud");
      // An empty range (`to` not after `from`) matches nothing.
      if (from !== undefined && to !== undefined && from.getTime() >= to.getTime()) {
        return create(ListAuditEntriesResponseSchema, { auditEntries: [], nextPageToken: "" });
      }
      const page = await this.deps.store.audit.query({ ...query, beforeId: paging.afterId, limit: paging.limit });
      return create(ListAuditEntriesResponseSchema, {
        auditEntries: page.items.map(auditEntryToMessage),
        nextPageToken: nextPageToken(page),
      });
    });
  }

  getAuditEntry(req: GetAuditEntryRequest) {
    return translate(names, async () => {
      requireId("aud", req.id);
      const rec = await this.deps.store.audit.get(req.id);
      if (rec === undefined) throw notFound("aud", req.id);
      return create(GetAuditEntryResponseSchema, { auditEntry: auditEntryToMessage(rec) });
    });
  }
}
