/**
 * erplink.admin.v1.AuditService: reading the audit trail.
 */
import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  AuditChangeSchema,
  AuditEntrySchema,
  GetAuditEntryResponseSchema,
  ListAuditEntriesResponseSchema,
  type AuditEntry,
  type AuditService,
  type GetAuditEntryRequest,
  type ListAuditEntriesRequest,
} from "../gen/erplink/admin/v1/audit_pb.js";
import type { AuditJson, AuditQuery, AuditRecord } from "../store/index.js";
import { INTERNAL_ACTOR, type AuditAction, type AuditResourceType } from "./audit.js";
import type { ServiceDeps } from "./context.js";
import { translate, validationError, type Violation } from "./errors.js";
import { nextPageToken, readPaging } from "./paging.js";
import { requireId } from "./resource.js";
import { timestampProblem } from "./validation.js";

const names = { singular: "audit entry" };

const ACTIONS: readonly AuditAction[] = ["create", "update", "delete", "revoke"];
const RESOURCE_TYPES: readonly AuditResourceType[] = ["system", "instance", "api_key", "session"];

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
      const oneOf = (field: string, value: string, allowed: readonly string[]) => {
        if (value === "") return undefined;
        if (!allowed.includes(value)) violations.push({ field, description: `must be one of ${allowed.join(", ")}` });
        return value;
      };
      for (const [field, ts] of [["from", req.from], ["to", req.to]] as const) {
        const problem = ts === undefined ? undefined : timestampProblem(ts);
        if (problem !== undefined) violations.push({ field, description: problem });
      }
      const from = req.from ? timestampDate(req.from) : undefined;
      const to = req.to ? timestampDate(req.to) : undefined;
      if (from !== undefined && to !== undefined && from.getTime() >= to.getTime()) {
        violations.push({ field: "to", description: "must be after from" });
      }
      // A session id filters by the session; anything else by the actor.
      let actor: Pick<AuditQuery, "actor" | "sessionId"> = {};
      if (req.actor !== "") {
        if (/^ses_[0-9A-Za-z]{1,64}$/.test(req.actor)) actor = { sessionId: req.actor };
        else if (/^(master|key_[0-9A-Z]{26})$/.test(req.actor) || req.actor === INTERNAL_ACTOR) actor = { actor: req.actor };
        else {
          violations.push({
            field: "actor",
            description: "must be master, internal, an API key id (key_…) or a session id (ses_…)",
          });
        }
      }
      if (req.resourceId !== "" && !/^[a-z]{3}_[0-9A-Za-z]{1,64}$/.test(req.resourceId)) {
        violations.push({ field: "resource_id", description: "must be a resource id such as sys_…, ins_…, key_… or ses_…" });
      }
      const query: Omit<AuditQuery, "limit" | "beforeId"> = {
        from,
        to,
        ...actor,
        resourceType: oneOf("resource_type", req.resourceType, RESOURCE_TYPES),
        resourceId: req.resourceId === "" ? undefined : req.resourceId,
        action: oneOf("action", req.action, ACTIONS),
      };
      if (violations.length > 0) throw validationError(violations);
      const paging = readPaging(req.pageSize, req.pageToken, "aud");
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
      if (rec === undefined) throw new ConnectError("audit entry not found", Code.NotFound);
      return create(GetAuditEntryResponseSchema, { auditEntry: auditEntryToMessage(rec) });
    });
  }
}
