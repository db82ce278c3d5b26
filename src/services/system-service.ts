/**
 * erplink.admin.v1.SystemService over the systems store.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  CreateSystemResponseSchema,
  DeleteSystemResponseSchema,
  GetSystemResponseSchema,
  ListSystemsResponseSchema,
  SystemSchema,
  UpdateSystemResponseSchema,
  type CreateSystemRequest,
  type DeleteSystemRequest,
  type GetSystemRequest,
  type ListSystemsRequest,
  type System,
  type SystemService,
  type UpdateSystemRequest,
} from "../gen/erplink/admin/v1/system_pb.js";
import { formatEtag } from "../schema/etag.js";
import type { SystemRecord } from "../store/index.js";
import { actorOf, snapshotOf, type AuditSnapshot } from "./audit.js";
import type { ServiceDeps } from "./context.js";
import { translate } from "./errors.js";
import { expectedRevision, notFound, requireId, requireResource, toPatch } from "./resource.js";
import { nextPageToken, readPaging } from "./paging.js";
import { assertValidForCreate, assertValidForUpdate } from "./validation.js";

const names = { singular: "system" };

/**
 * How long a deletion's mark keeps instances out of its system. A mark older
 * than this is of a call that died (a crash, a store that went away between
 * its writes) and is ignored; a live call gives up before its mark is half
 * this old, so processes' clocks may disagree by up to the other half.
 */
export const DELETION_MARK_TTL_MS = 5 * 60_000;

/** The one mapping of a stored system to its message. */
export function systemToMessage(rec: SystemRecord): System {
  return create(SystemSchema, {
    id: rec.id,
    name: rec.name,
    description: rec.description,
    labels: { ...rec.labels },
    createdAt: timestampFromDate(rec.createdAt),
    updatedAt: timestampFromDate(rec.updatedAt),
    etag: formatEtag(rec.revision ?? 0),
  });
}

/** A system as the audit trail shows it. */
export function systemSnapshot(rec: SystemRecord): AuditSnapshot {
  return snapshotOf(SystemSchema, systemToMessage(rec));
}

/** Implements SystemService. */
export class SystemServiceImpl implements ServiceImpl<typeof SystemService> {
  constructor(private readonly deps: ServiceDeps) {}

  getSystem(req: GetSystemRequest) {
    return translate(names, async () => {
      requireId("sys", req.id);
      const rec = await this.deps.store.systems.get(req.id);
      if (rec === undefined) throw notFound("sys", req.id);
      return create(GetSystemResponseSchema, { system: systemToMessage(rec) });
    });
  }

  listSystems(req: ListSystemsRequest) {
    return translate(names, async () => {
      const paging = readPaging(req.pageSize, req.pageToken, "sys");
      const page = await this.deps.store.systems.list(paging);
      return create(ListSystemsResponseSchema, {
        systems: page.items.map(systemToMessage),
        nextPageToken: nextPageToken(page),
      });
    });
  }

  createSystem(req: CreateSystemRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      const system = requireResource(req.system, "system");
      assertValidForCreate(SystemSchema, system);
      const now = this.deps.clock();
      const record: SystemRecord = {
        id: this.deps.newId("sys"),
        name: system.name,
        description: system.description,
        labels: { ...system.labels },
        createdAt: now,
        updatedAt: now,
        revision: 1,
      };
      const rec = await this.deps.audit.record(
        actorOf(ctx),
        { action: "create", resourceType: "system", resourceId: record.id, before: null, after: systemSnapshot(record) },
        () => this.deps.store.systems.create(record),
        systemSnapshot,
      );
      return create(CreateSystemResponseSchema, { system: systemToMessage(rec) });
    });
  }

  updateSystem(req: UpdateSystemRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      const system = requireResource(req.system, "system");
      requireId("sys", system.id);
      const fields = assertValidForUpdate(SystemSchema, system, req.updateMask?.paths ?? []);
      const current = await this.deps.store.systems.get(system.id);
      if (current === undefined) throw notFound("sys", system.id);
      const expected = expectedRevision(names, system.etag, current);
      const patch = { ...toPatch<SystemRecord>(system, fields), updatedAt: this.deps.clock() };
      const rec = await this.deps.audit.record(
        actorOf(ctx),
        {
          action: "update",
          resourceType: "system",
          resourceId: system.id,
          before: systemSnapshot(current),
          after: systemSnapshot({ ...current, ...patch }),
        },
        () => this.deps.store.systems.revise(system.id, patch, expected),
        systemSnapshot,
      );
      return create(UpdateSystemResponseSchema, { system: systemToMessage(rec) });
    });
  }

  deleteSystem(req: DeleteSystemRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      requireId("sys", req.id);
      const { store } = this.deps;
      const current = await store.systems.get(req.id);
      if (current === undefined) throw notFound("sys", req.id);
      const expected = expectedRevision(names, req.etag, current);
      const instances = await store.instances.countBySystem(req.id);
      if (instances > 0) {
        throw new ConnectError(
          `system still has ${instances} instance${instances === 1 ? "" : "s"}; delete ${instances === 1 ? "it" : "them"} first`,
          Code.FailedPrecondition,
        );
      }
      const rec = await this.deps.audit.record(
        actorOf(ctx),
        { action: "delete", resourceType: "system", resourceId: req.id, before: systemSnapshot(current), after: null },
        async () => {
          // Without transactions, an instance may be created between the count
          // above and the delete. So the deletion is marked first (a document of
          // its own: single-document writes are all both stores make atomic),
          // then the instances are counted again, and only then is the system
          // deleted. CreateInstance inserts its instance first and then looks
          // for a mark (and for the system): of two calls that each write and
          // then read what the other wrote, one sees the other's write, so
          // either this count sees the instance (and the delete is refused) or
          // CreateInstance sees the mark or the missing system (and removes
          // its instance). The system is never deleted and put back, so a
          // system created meanwhile with the same name changes nothing.
          const startedAt = this.deps.clock();
          await store.systems.clearStaleDeletions(req.id, new Date(startedAt.getTime() - DELETION_MARK_TTL_MS));
          const mark = await store.systems.beginDeletion(req.id, startedAt);
          try {
            const late = await store.instances.countBySystem(req.id);
            if (late > 0) {
              throw new ConnectError("system gained an instance while being deleted; delete it first", Code.FailedPrecondition);
            }
            if (this.deps.clock().getTime() - startedAt.getTime() > DELETION_MARK_TTL_MS / 2) {
              throw new ConnectError("the store answered too slowly to delete the system safely; try again", Code.Unavailable);
            }
            return await store.systems.delete(req.id, expected);
          } finally {
            // A mark that cannot be removed keeps instances out of the system until it expires.
            await store.systems.endDeletion(mark).catch(() => undefined);
          }
        },
      );
      return create(DeleteSystemResponseSchema, { system: systemToMessage(rec) });
    });
  }
}
